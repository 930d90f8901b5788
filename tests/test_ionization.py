"""Field ionization (design.md §14, docs/physics.md "Field ionization"): hydrogen, helium and
nitrogen in a uniform static field (fields.external.E) at a density too low for their own
fields to matter end with the charge-state populations of the ADK rate equations, the rates
worked out here independently of the code (formula, NIST energies and SI units typed below);
electrons are conserved (one per ionization, at the ion's weight), Gauss's law holds to
rounding through ionization at a density where the electrons' fields matter, and the runs
are bitwise the same on 1 and 2 threads and across a restart. On the GPU machine the same
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
    ip, e = ip_ev / HARTREE, e_si / E_AU
    ns, k3 = z / math.sqrt(2 * ip), (2 * ip) ** 1.5
    c2 = 2 ** (2 * ns) / (ns * math.gamma(2 * ns))
    return c2 * ip * (2 * k3 / e) ** (2 * ns - 1) * math.exp(-2 * k3 / (3 * e)) / T_AU


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
