"""Field ionization (design.md §14, docs/physics.md "Field ionization"): hydrogen, helium and
nitrogen in a uniform static field (fields.external.E) at a density too low for their own
fields to matter end with the charge-state populations of the ADK rate equations, the rates
worked out here independently of the code (formula, NIST energies and SI units typed below);
electrons are conserved (one per ionization, at the ion's weight), Gauss's law holds to
rounding through ionization at a density where the electrons' fields matter, and the runs
are bitwise the same on 1 and 2 threads and across a restart. A laser through a thin H and N
gas leaves the charge states of the ADK rate equations integrated along the field each ion
saw (a probe at the ions' positions), and its ionization front where the vacuum pulse puts
it. On the GPU machine the same
tests run the CUDA backend with EMPIC_TEST_BACKEND=cuda (and EMPIC_TEST_EMPIC, the command
that runs the bundled binary), as tests/test_mpi.py."""

import math
import os
import subprocess

import h5py
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")
BACKEND = os.environ.get("EMPIC_TEST_BACKEND", "cpu")
EMPIC_CMD = os.environ.get("EMPIC_TEST_EMPIC", EMPIC).split()

# NIST ASD ground-state ionization energies (eV) of the levels the tests reach
IP = {"H": [13.598434005136], "He": [24.587387936, 54.41776311],
      "N": [14.53413, 29.60125, 47.4453, 77.4735, 97.89013, 552.06731, 667.04609]}
QE, ME, C, EPS0 = 1.602176634e-19, 9.1093837015e-31, 299792458.0, 8.8541878128e-12
E_AU, T_AU, HARTREE = 5.14220674763e11, 2.4188843265857e-17, 27.211386245988
N0 = 1.0e18          # simulation.n0 (cm^-3)
DT, STEPS = 0.07, 140
PPC = 4              # per axis: 16 per cell, 64 x 64 cells: 65536 ions per species


def units(n0):
    """The code's field unit m c omega_p / e (V/m) and time unit 1/omega_p (s)."""
    wp = math.sqrt(n0 * 1e6 * QE * QE / (EPS0 * ME))
    return ME * C * wp / QE, 1.0 / wp


def adk_rate(ip_ev, z, e_si):
    """Quasi-static ADK rate (1/s) of the level of energy ip_ev that leaves charge z, in a DC
    field of e_si V/m: w = C^2 I (2 (2I)^(3/2) / E)^(2n*-1) exp(-2 (2I)^(3/2) / (3E)) in
    atomic units, n* = z / sqrt(2I), C^2 = 2^(2n*) / (n* Gamma(2n*))."""
    ip, e = ip_ev / HARTREE, np.asarray(e_si, dtype=float) / E_AU
    ns, k3 = z / math.sqrt(2 * ip), (2 * ip) ** 1.5
    c2 = 2 ** (2 * ns) / (ns * math.gamma(2 * ns))
    return c2 * ip * (2 * k3 / e) ** (2 * ns - 1) * np.exp(-2 * k3 / (3 * e)) / T_AU


def populations(element, e_code, t_code):
    """Charge-state fractions after t_code in a field e_code (code units): the sequential rate
    equations dN_k/dt = w_{k-1} N_{k-1} - w_k N_k from the neutral atom, solved exactly."""
    eu, tu = units(N0)
    w = [adk_rate(ip, k + 1, e_code * eu) * tu for k, ip in enumerate(IP[element])] + [0.0]
    n = len(w)
    a = np.diag(-np.array(w)) + np.diag(w[:-1], -1)
    lam, v = np.linalg.eig(a)
    start = np.zeros(n)
    start[0] = 1.0
    return (v @ np.diag(np.exp(lam * t_code)) @ np.linalg.solve(v, start)).real


def deck(tmp_path, name, e, n=1e-6, axis=2, steps=STEPS, more="", cells=64, immobile=True):
    """H, He and N (neutral, ionizing into one electron species) in a uniform field e along
    `axis`, periodic box; immobile ions (at rest in the field: they are not pushed, and ionize
    all the same) unless told otherwise."""
    ext = [0.0, 0.0, 0.0]
    ext[axis] = e
    ions = "".join(
        '{ name = "%s"; element = "%s"; charge = 0.0; mass = %s; ppc = [%d, %d];\n'
        '  immobile = %s; ionization = { model = "adk"; electrons = "e"; };\n'
        '  density = { profile = "uniform"; n = %g; }; },\n'
        % (el, el, m, PPC, PPC, "true" if immobile else "false", n)
        for el, m in (("H", 1836.15), ("He", 7294.3), ("N", 25532.0)))
    text = """simulation = { name = "%s"; backend = "%s"; seed = 3; n0 = %g; };
grid = { cells = [%d, %d]; dx = [0.1, 0.1]; cluster = [8, 8]; };
time = { dt = %g; steps = %d; };
fields = {
  boundary = { xmin = "periodic"; xmax = "periodic"; ymin = "periodic"; ymax = "periodic"; };
  external = { E = [%r, %r, %r]; };
};
species = (
%s{ name = "e"; charge = -1.0; mass = 1.0; ppc = [0, 0]; }
);
diagnostics = { output = "%s"; energy = { every = 1; }; %s
  particles = { every = %d; fraction = 1.0; }; };
""" % (name, BACKEND, N0, cells, cells, DT, steps, ext[0], ext[1], ext[2], ions,
       tmp_path / name, more, steps)
    path = tmp_path / (name + ".cfg")
    path.write_text(text)
    return path


def run(path, threads=2, args=()):
    if not os.path.isfile(EMPIC_CMD[0]) and "EMPIC_TEST_EMPIC" not in os.environ:
        pytest.skip("bin/empic is missing: build it with `make` first")
    res = subprocess.run(EMPIC_CMD + ["--quiet", "--overwrite", *args, str(path)],
                         capture_output=True, text=True,
                         env=dict(os.environ, OMP_NUM_THREADS=str(threads)), timeout=1200)
    assert res.returncode == 0, res.stdout + res.stderr


def energy(out):
    return np.genfromtxt(out / "energy.csv", delimiter=",", names=True)


def final(out, steps=STEPS):
    """Charge states of each ion species and the electron count in the last dump."""
    with h5py.File(out / "data" / ("data%08d.h5" % steps), "r") as f:
        p = f["data/%d/particles" % steps]
        z = {s: p[s]["charge_state"][()] for s in ("H", "He", "N")}
        q = {s: p[s]["charge"][()] for s in ("H", "He", "N")}
        return z, q, len(p["e"]["weighting"])


# (field in code units, the levels it tests): H's one level and N's first at 0.27; He's
# first at 0.75; N's second and third at 1.2 (the first in the first step); He's second at
# 1.9, where the first goes within the first step: several levels in one step
FIELDS = [0.27, 0.75, 1.2, 1.9]


@pytest.mark.parametrize("e", FIELDS)
def test_static_field_populations(tmp_path, e):
    path = deck(tmp_path, "static", e)
    run(path)
    out = tmp_path / "static"
    z, q, electrons = final(out)
    checked = 0
    for el in ("H", "He", "N"):
        want = populations(el, e, STEPS * DT)
        n = len(z[el])
        assert n == 64 * 64 * PPC * PPC
        got = np.bincount(z[el], minlength=len(want)) / n
        for k, (g, w) in enumerate(zip(got, want)):
            sigma = math.sqrt(max(w * (1 - w), 1.0 / n) / n)
            tol = max(0.02 * w, 4 * sigma)
            print("E = %g %s%d+: measured %.4f ADK %.4f (tolerance %.4f)" % (e, el, k, g, w, tol))
            assert abs(g - w) <= tol, (el, k, g, w)
            checked += 0.05 < w < 0.95
        assert np.array_equal(q[el], z[el].astype(float))  # charge record = state (in e)
        # energy.csv's mean charge state after the last step
        assert energy(out)["zmean_" + el][-1] == pytest.approx(z[el].mean(), rel=1e-6)
    assert checked >= 1  # some level of some element only partly ionized
    # one electron per ionization: the electron count, the charge states, the events
    en = energy(out)
    total = sum(int(z[el].sum()) for el in ("H", "He", "N"))
    assert electrons == total
    assert sum(en["ionized_" + el].sum() for el in ("H", "He", "N")) == total


def test_gauss_and_repeatability(tmp_path):
    """At n = 0.01 the electrons, pulled along x, separate from their ions and make fields of
    their own: Gauss's law still holds to float rounding through ionization, and the run is
    bitwise the same on 1 and 2 threads and when stopped and restarted."""
    steps = 120
    path = deck(tmp_path, "gauss", 0.5, n=0.01, axis=0, steps=steps, cells=32, immobile=False,
                more="fields = { every = 60; }; checkpoint = { every = 60; };")
    run(path, threads=2)
    out = tmp_path / "gauss"
    en = energy(out)
    z, _, electrons = final(out, steps)
    assert electrons > 5000  # H and N ionized
    assert en["field_E"][-1] > 1e-4  # the electrons' own field
    # max |div E - rho|: one macro-particle's charge gone astray would leave up to its q w
    # = 0.01 / 16 at a node; float rounding of E leaves ~1e-6 after 120 steps
    one = 0.01 / PPC ** 2
    assert en["gauss_max"].max() < 0.01 * one, en["gauss_max"].max()
    ref = (out / "energy.csv").read_bytes(), (out / "data" / ("data%08d.h5" % steps)).read_bytes()

    def same(folder):
        assert (folder / "energy.csv").read_bytes() == ref[0]
        with h5py.File(out / "data" / ("data%08d.h5" % steps), "r") as a, \
                h5py.File(folder / "data" / ("data%08d.h5" % steps), "r") as b:
            def visit(name, obj):
                if isinstance(obj, h5py.Dataset):
                    assert np.array_equal(obj[()], b[name][()]), name
            a.visititems(visit)

    one = tmp_path / "one"
    path1 = tmp_path / "one.cfg"
    path1.write_text(path.read_text().replace(str(out), str(one)))
    run(path1, threads=1)
    same(one)
    half = tmp_path / "half"
    path2 = tmp_path / "half.cfg"
    path2.write_text(path.read_text().replace(str(out), str(half)))
    run(path2, args=("--steps", str(steps // 2)))
    res = subprocess.run(EMPIC_CMD + ["--quiet", "--restart", str(half), "--steps", str(steps)],
                         capture_output=True, text=True,
                         env=dict(os.environ, OMP_NUM_THREADS="2"), timeout=1200)
    assert res.returncode == 0, res.stderr
    same(half)


# omega0, duration, cell, step; particle dumps at steps LASER_HALF and 2 LASER_HALF (t = 5,
# 10); the gas from x = LASER_X0 to 6, the probe at its ions' LASER_NP positions
LASER_W0, LASER_D, LASER_DX, LASER_DT, LASER_HALF = 10.0, 1.5, 0.025, 0.02, 250
LASER_X0, LASER_NP = 1.0, 1600


def laser_deck(tmp_path, name, a0):
    """A few-cycle laser (sin2 envelope, omega0 = 10, flat across the periodic y) through a
    thin hydrogen and nitrogen gas (n = 1e-6: no plasma effect on the pulse) between x = 1
    and 6, immobile ions 8 x 8 a cell; a line probe records E every step at every x an ion
    sits at (the 8 offsets in each cell); particle dumps while the pulse is in the gas
    (t = 5) and after it left (t = 10)."""
    ions = "".join(
        '{ name = "%s"; element = "%s"; charge = 0.0; mass = %s; ppc = [8, 8]; immobile = true;\n'
        '  ionization = { model = "adk"; electrons = "e"; max_charge = %d; };\n'
        '  density = { profile = "piecewise"; n = 1e-6; x = [1.0, 1.0001, 6.0, 6.0001];\n'
        '              fx = [0.0, 1.0, 1.0, 0.0]; }; },\n' % (el, el, m, zmax)
        for el, m, zmax in (("H", 1836.15, 1), ("N", 25532.0, 3)))
    first, last = LASER_X0 + LASER_DX / 16, 6.0 - LASER_DX / 16
    text = """simulation = { name = "%s"; backend = "%s"; seed = 5; n0 = %g; };
grid = { cells = [320, 4]; dx = [%r, 0.1]; cluster = [16, 4]; };
time = { dt = %g; steps = %d; };
fields = {
  boundary = { xmin = "pml"; xmax = "pml"; ymin = "periodic"; ymax = "periodic"; };
  pml = { cells = 16; };
};
lasers = ( { a0 = %r; omega0 = %r; w0 = 4.0; profile = "flattop"; focus = 3.0;
             duration = %r; envelope = "sin2"; boundary = "xmin"; } );
species = (
%s{ name = "e"; charge = -1.0; mass = 1.0; ppc = [0, 0];
  boundary = { xmin = "absorbing"; xmax = "absorbing"; }; }
);
diagnostics = { output = "%s"; energy = { every = 50; };
  particles = { every = %d; fraction = 1.0; species = ["H", "N"]; };
  probes = ( { name = "gas"; from = [%r, 0.2]; to = [%r, 0.2]; n = %d;
               fields = ["Ex", "Ey", "Ez"]; } ); };
""" % (name, BACKEND, N0, LASER_DX, LASER_DT, 2 * LASER_HALF, a0, LASER_W0, LASER_D, ions,
       tmp_path / name, LASER_HALF, first, last, LASER_NP)
    path = tmp_path / (name + ".cfg")
    path.write_text(text)
    return path


def chain_after(rates, dt):
    """Charge-state fractions (columns) at each point (rows) after steps of constant rates:
    rates[n][p][k], level k at point p in step n; the sequential rate equations
    dN_k/dt = w_{k-1} N_{k-1} - w_k N_k from the neutral atom, by RK4 in substeps of
    w h <= 0.05 (at least 4 a step: a relative error below 1e-6)."""
    steps, points, levels = rates.shape
    n = np.zeros((points, levels + 1))
    n[:, 0] = 1.0

    def deriv(n, w):
        flow = w * n[:, :-1]  # k -> k + 1
        d = np.zeros_like(n)
        d[:, :-1] -= flow
        d[:, 1:] += flow
        return d

    for w in rates:
        m = max(4, int(math.ceil(w.max() * dt / 0.05)))
        h = dt / m
        for _ in range(m):
            k1 = deriv(n, w)
            k2 = deriv(n + 0.5 * h * k1, w)
            k3 = deriv(n + 0.5 * h * k2, w)
            k4 = deriv(n + h * k3, w)
            n = n + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return n


def level_rates(element, e_code, levels):
    """ADK rates (per 1/omega_p) of an element's first `levels` levels in fields e_code
    (any shape): an array of that shape plus the levels."""
    eu, tu = units(N0)
    e = np.maximum(np.asarray(e_code, dtype=float), 1e-30) * eu  # no field: a zero rate
    return np.stack([adk_rate(IP[element][k], k + 1, e) * tu for k in range(levels)], axis=-1)


# a0 0.04: hydrogen and nitrogen's first level partly ionized; 0.1: hydrogen stripped,
# nitrogen's second level reached through the first within the pulse
@pytest.mark.parametrize("a0", [0.04, 0.1])
def test_laser_through_gas(tmp_path, a0):
    """Charge states a laser leaves in a thin H and N gas, against the ADK rate equations
    integrated along the field each ion saw (the probe's record at its position: ionization
    in step n sees E(n+1)), over the gas and bin by bin; and the ionization front, where
    half the hydrogen that the pulse ionizes is ionized, at t - tau_half, where a pulse of the
    laser's vacuum form E = a0 omega0 env(t - x) cos(omega0 (t - x)) leaves half its final
    ionization (it moves at c from the launching side, x = 0)."""
    path = laser_deck(tmp_path, "laser", a0)
    run(path)
    out = tmp_path / "laser"
    with h5py.File(out / "probes" / "probes.h5", "r") as f:
        g = f["gas"]
        xp, steps = g["x"][()], g["step"][()]
        emag = np.sqrt(sum(g[c][()].astype(float) ** 2 for c in ("Ex", "Ey", "Ez")))
    assert list(steps) == list(range(2 * LASER_HALF + 1))
    dumps = {}
    for step in (LASER_HALF, 2 * LASER_HALF):
        with h5py.File(out / "data" / ("data%08d.h5" % step), "r") as f:
            p = f["data/%d/particles" % step]
            dumps[step] = {s: (p[s]["position/x"][()], p[s]["charge_state"][()])
                           for s in ("H", "N")}
    bins = np.linspace(LASER_X0, 6.0, 11)
    checked = 0
    for el, levels in (("H", 1), ("N", 3)):
        x, z = dumps[2 * LASER_HALF][el]
        assert abs(len(x) - 200 * 4 * 64) <= 2 * 4 * 64  # the gas's 200 cells of 64 ions
        at = np.rint((x - xp[0]) / (xp[1] - xp[0])).astype(int)  # each ion's probe point
        assert np.abs(xp[at] - x).max() < 1e-4
        want_p = chain_after(level_rates(el, emag[1:], levels), LASER_DT)
        for b0, b1 in list(zip(bins[:-1], bins[1:])) + [(LASER_X0, 6.0)]:
            inb = (x >= b0) & (x < b1)
            n = inb.sum()
            want = want_p[at[inb]].mean(axis=0)
            got = np.bincount(z[inb], minlength=levels + 1) / n
            for k in range(levels + 1):
                sigma = math.sqrt(max(want[k] * (1 - want[k]), 1.0 / n) / n)
                if b1 - b0 > 1.0:
                    print("laser %s%d+: measured %.4f, ADK along the ions' field %.4f"
                          % (el, k, got[k], want[k]))
                    checked += 0.05 < want[k] < 0.95
                assert abs(got[k] - want[k]) <= max(0.02 * want[k], 4 * sigma), \
                    (el, b0, k, got[k], want[k])
    assert checked >= 2  # two charge states of some element partly populated
    # the front at t = 5: the vacuum pulse's cumulative ionization of H, normalised
    t = LASER_HALF * LASER_DT
    tau = np.arange(0.0, 2 * LASER_D, LASER_DT / 4)
    env = np.sin(0.5 * math.pi * tau / LASER_D) ** 2
    w = level_rates("H", np.abs(a0 * LASER_W0 * env * np.cos(LASER_W0 * tau)), 1)[:, 0]
    frac = 1.0 - np.exp(-np.cumsum(w) * LASER_DT / 4)
    tau_half = tau[np.searchsorted(frac / frac[-1], 0.5)]
    x, z = dumps[LASER_HALF]["H"]
    final = dumps[2 * LASER_HALF]["H"][1].mean()
    fine = np.arange(LASER_X0, 6.0 + 1e-9, 0.05)
    now = np.array([z[(x >= a) & (x < b)].mean() for a, b in zip(fine[:-1], fine[1:])])
    centre = 0.5 * (fine[:-1] + fine[1:])
    # ionized behind the front (small x), not ahead of it; the half point by interpolation
    assert now[0] > 0.8 * final and now[-1] < 0.05 * final
    k = np.nonzero(now < 0.5 * final)[0][0]
    x_half = np.interp(0.5 * final, [now[k], now[k - 1]], [centre[k], centre[k - 1]])
    print("front at t = %g: x = %.3f, vacuum pulse %.3f" % (t, x_half, t - tau_half))
    assert abs(x_half - (t - tau_half)) < 2 * LASER_DX
