"""External fields given as formulas in x, y, t (fields.external, docs/deck.md; extfield.h):
a cold beam in B_z = B0 gyrates at the cyclotron frequency (Boris' rotation angle per step),
with B0 a number, a constant formula, a formula in t and one in x (an array); E_y =
E0 sin(k y) across B_z gives each particle the E x B drift E0 sin(k y)/B0 of its guiding
centre; E_x = E0 cos(w t) gives the leapfrog's exact quiver u = (q E0/w) (theta/2)/sin(theta/2)
sin(w t), theta = w dt, both as a uniform formula in t and as an array re-evaluated every
step; a number and the same constant as a formula run bitwise alike; the dumps hold E_ext
and B_ext with the attributes of E and B (openPMD validator), at lab positions with the
moving window; 1 and 2 MPI ranks and a restart give the same run bitwise; bad formulas are
refused with the key path; a B_ext varying in space does no work (the energies drift as
without it). On the GPU machine the same tests run the CUDA backend with
EMPIC_TEST_BACKEND=cuda (and EMPIC_TEST_EMPIC, EMPIC_TEST_MPIRUN), as tests/test_mpi.py."""

import csv
import math
import os
import subprocess

import h5py
import numpy as np
import pytest

from runs import (EMPIC_CMD, ENV, assert_same_dumps, empic, has_mpi, need_empic,
                  validate)

# a cold electron beam of negligible density (its own fields ~1e-8 of the external ones)
BEAM = """
simulation = {{ name = "ext"; seed = 3; }};
constants = {{ B0 = 2.0; E0 = 0.01; w = 1.3; }};
{parallel}
grid = {{ cells = [{nx}, {ny}]; dx = [0.1, 0.1]; cluster = [8, 8]; }};
time = {{ dt = {dt}; steps = {steps}; }};
fields = {{ external = {{ {external} }}; }};
species = ( {{ name = "e"; charge = -1.0; ppc = [1, 1]; density = {{ n = 1.0e-8; }};
              momentum = {{ drift = [{ux}, 0.0, 0.0]; }}; }} );
diagnostics = {{ output = "{out}"; energy = {{ every = 20; }};
  fields = {{ every = {fevery}; }};
  particles = {{ every = {pevery}; fraction = 1.0; }}; {more} }};
"""


def run(tmp_path, name, args=(), ranks=1, **kw):
    """bin/empic on BEAM with kw into tmp_path/name; returns the output folder."""
    p = dict(parallel="", nx=16, ny=16, dt=0.01, steps=200, ux=0.0, fevery=100, pevery=10,
             more="", external="")
    p.update(kw)
    out = tmp_path / name
    p["out"] = out
    deck = tmp_path / (name + ".cfg")
    deck.write_text(BEAM.format(**p))
    empic("--overwrite", *args, str(deck), ranks=ranks)
    return out


def steps_of(out):
    return sorted(int(f[4:12]) for f in os.listdir(out / "data") if f.endswith(".h5"))


def particles(out, step):
    """x, y (absolute), ux, uy of species e at a dump (in the order of their ids when the
    run tracks them)."""
    with h5py.File(out / "data" / ("data%08d.h5" % step), "r") as f:
        g = f["data/%d/particles/e" % step]
        order = np.argsort(g["id"][()]) if "id" in g else slice(None)
        return {k: np.asarray(g[p])[order] for k, p in (
            ("x", "position/x"), ("y", "position/y"), ("ux", "momentum/x"),
            ("uy", "momentum/y"))}


def gyration_rate(out, dt):
    """Rotation of the beam's (ux, uy) per unit time, fitted over the particle dumps
    (u at t - dt/2)."""
    ts, ang = [], []
    for s in steps_of(out):
        p = particles(out, s)
        ang.append(math.atan2(float(np.mean(p["uy"])), float(np.mean(p["ux"]))))
        ts.append((s - 0.5) * dt)
    return np.polyfit(ts, np.unwrap(ang), 1)[0]


@pytest.mark.parametrize("bz", ["2.0", '"B0"', '"B0 + 0*t"', '"B0 + 0*x"'])
def test_cyclotron(tmp_path, bz):
    """A beam with u = 0.1 along x in B_z = 2 turns at Boris' rate 2 atan(w_c dt/2)/dt,
    w_c = |q| B0/(m gamma), within float rounding (the array form: within 1e-6)."""
    u0, dt = 0.1, 0.01
    out = run(tmp_path, "cyc", ux=u0, dt=dt, steps=400, pevery=20,
              external="B = (0.0, 0.0, %s);" % bz)
    wc = 2.0 / math.sqrt(1 + u0 * u0)
    boris = 2 * math.atan(wc * dt / 2) / dt
    rate = gyration_rate(out, dt)
    # an electron (q < 0) in +B_z turns counter-clockwise in (ux, uy)
    assert rate == pytest.approx(boris, rel=1e-6 if "x" in bz else 2e-7)
    assert rate == pytest.approx(wc, rel=5e-5)
    p = particles(out, 400)  # |u| kept by the rotation
    assert np.allclose(np.hypot(p["ux"], p["uy"]), u0, rtol=1e-6)


def test_number_and_formula_bitwise(tmp_path):
    """B0 as a number, as a constant formula and as a formula in t that does not change it:
    the same run, bit for bit (energy.csv, fields, B_ext, particles)."""
    ext = 'E = [0.0, 0.0, 0.001]; B = (0.0, 0.0, %s);'
    runs = [run(tmp_path, "b%d" % k, ux=0.1, external=ext % bz)
            for k, bz in enumerate(["2.0", '"B0"', '"B0*cos(0*t)"'])]
    for other in runs[1:]:
        assert_same_dumps(runs[0], other, steps_of(runs[0]))


def test_exb_drift_in_sin_ky(tmp_path):
    """E_y = E0 sin(k y) across B_z = B0 (both arrays: a formula in y): a particle starting
    at rest drifts along x at E0 sin(k y_c)/B0, y_c its guiding centre (the mean of its y),
    after six gyrations (dt = pi/300: a gyration in 300 steps)."""
    ly = 6.4
    k = 2 * math.pi / ly
    dt = math.pi / 300
    ext = 'E = (0.0, "E0*sin(%.17g*y)", 0.0); B = (0.0, 0.0, "B0 + 0*y");' % k
    out = run(tmp_path, "exb", nx=8, ny=64, dt=dt, steps=1800, pevery=20, fevery=1800,
              external=ext, more="tracks = { every = 1800; fraction = 1.0; };")
    steps = steps_of(out)
    ys = np.array([particles(out, s)["y"] for s in steps])
    p0, p1 = particles(out, 0), particles(out, 1800)
    lx = 0.8
    dx = (p1["x"] - p0["x"] + lx / 2) % lx - lx / 2  # the drift is less than half the box
    v = dx / (1800 * dt)
    yc = ys.mean(axis=0)
    want = 0.01 * np.sin(k * yc) / 2.0
    assert np.abs(v - want).max() < 2e-3 * 0.005  # 0.2 % of the largest drift
    assert np.abs(v).max() > 0.0049
    assert np.abs(ys - ys[0]).max() < 0.01  # y stays within the gyration (r = v_d/w_c)


@pytest.mark.parametrize("ex", ['"E0*cos(w*t)"', '"E0*cos(w*t) + 0*x"'])
def test_quiver(tmp_path, ex):
    """E_x = E0 cos(w t) (uniform, and as an array evaluated each step): the leapfrog gives
    u(t) = -(E0/w) (theta/2)/sin(theta/2) sin(w t) at t = (n + 1/2) dt, theta = w dt (u
    from 0 at t = 0); the measured amplitude matches it to float rounding and E0/w to
    theta^2/24."""
    e0, w, dt = 0.01, 1.3, 0.05
    out = run(tmp_path, "q", dt=dt, steps=400, pevery=5, external="E = (%s, 0.0, 0.0);" % ex)
    th = w * dt
    amp = -(e0 / w) * (th / 2) / math.sin(th / 2)
    got, want = [], []
    for s in steps_of(out):
        got.append(float(np.mean(particles(out, s)["ux"])))
        want.append(amp * math.sin(w * (s - 0.5) * dt))
    got, want = np.array(got), np.array(want)
    assert np.abs(got - want).max() < 1e-5 * abs(amp)
    assert np.abs(got).max() == pytest.approx(e0 / w, rel=2e-3)


def test_dump_records(tmp_path):
    """E_ext, B_ext beside E and B with the same record attributes, the formula's values at
    each component's Yee point, and in the XDMF; the openPMD validator passes."""
    ext = 'E = (0.0, "E0*sin(2*pi*y/1.6)*cos(t)", 0.0); B = (0.0, 0.0, "B0 + 0.1*x");'
    out = run(tmp_path, "rec", steps=100, fevery=50, external=ext)
    path = out / "data" / "data00000050.h5"
    with h5py.File(path, "r") as f:
        m = f["data/50/meshes"]
        for rec, ext_rec in (("E", "E_ext"), ("B", "B_ext")):
            a, b = dict(m[rec].attrs), dict(m[ext_rec].attrs)
            assert a.keys() == b.keys()
            assert all(np.array_equal(a[k], b[k]) for k in a), rec
            for c in "xyz":
                assert np.array_equal(m[rec][c].attrs["position"],
                                      m[ext_rec][c].attrs["position"])
                assert m[rec][c].attrs["unitSI"] == m[ext_rec][c].attrs["unitSI"]
        ny, nx = m["E_ext/y"].shape
        y = (np.arange(ny) + 0.5) * 0.1  # Ey at (i, j + 1/2)
        ey = 0.01 * np.sin(2 * np.pi * y / 1.6) * math.cos(50 * 0.01)
        assert np.allclose(m["E_ext/y"][:, 3], ey, rtol=1e-6, atol=1e-9)
        assert not np.any(m["E_ext/x"][()]) and not np.any(m["B_ext/x"][()])
        x = (np.arange(nx) + 0.5) * 0.1  # Bz at (i + 1/2, j + 1/2)
        assert np.allclose(m["B_ext/z"][5, :], 2.0 + 0.1 * x, rtol=1e-7)
    xmf = (out / "data" / "data00000050.xmf").read_text()
    assert 'Name="Ey_ext"' in xmf and 'Name="Bz_ext"' in xmf
    with h5py.File(out / "data" / "data00000000.h5", "r") as f:  # only where the deck has them
        assert "E_ext" in f["data/0/meshes"]
    validate(path)


def test_no_records_without_external(tmp_path):
    out = run(tmp_path, "none", steps=20, fevery=10, external='B = [0.0, 0.0, 0.0];')
    with h5py.File(out / "data" / "data00000010.h5", "r") as f:
        assert "E_ext" not in f["data/10/meshes"] and "B_ext" not in f["data/10/meshes"]


WINDOW = """
simulation = {{ name = "ext-window"; seed = 5; }};
grid = {{ cells = [64, 16]; dx = [0.1, 0.1]; cluster = [8, 8]; }};
time = {{ dt = 0.05; steps = 120; }};
fields = {{ boundary = {{ xmin = "pml"; xmax = "pml"; ymin = "periodic"; ymax = "periodic"; }};
           pml = {{ cells = 8; }};
           external = {{ B = (0.0, 0.0, "0.5*sin(2*pi*x/3.3)"); }};
           moving_window = {{ enabled = true; t_start = 1.0; }}; }};
species = ( {{ name = "e"; charge = -1.0; ppc = [1, 1];
              density = {{ profile = "expr"; expr = "x > 1.5 ? 1e-6 : 0"; }};
              momentum = {{ thermal = [0.01, 0.01, 0.01]; }}; }} );
diagnostics = {{ output = "{out}"; fields = {{ every = 40; }}; }};
"""


def test_moving_window_lab_frame(tmp_path):
    """With the moving window, an x-dependent field stays at its lab position: the box's
    B_ext at every dump is the formula at x0 + (i + 1/2) dx, x0 the window's origin (the
    arrays moved a cell at each shift, the new column evaluated)."""
    out = tmp_path / "w"
    deck = tmp_path / "w.cfg"
    deck.write_text(WINDOW.format(out=out))
    empic("--overwrite", str(deck))
    moved = 0
    for s in steps_of(out):
        with h5py.File(out / "data" / ("data%08d.h5" % s), "r") as f:
            rec = f["data/%d/meshes/B_ext" % s]
            x0 = rec.attrs["gridGlobalOffset"][1]
            bz = rec["z"][0, :]
        x = x0 + (np.arange(bz.size) + 0.5) * 0.1
        assert np.allclose(bz, 0.5 * np.sin(2 * np.pi * x / 3.3), rtol=1e-6, atol=1e-7)
        moved = max(moved, x0)
    assert moved > 4.0


def test_ranks_and_restart_bitwise(tmp_path):
    """Fields varying in x, y and t: 2 ranks and a run stopped at step 100 and restarted
    give the straight one-rank run bitwise."""
    ext = ('E = ("E0*cos(w*t)*sin(2*pi*y/1.6)", "E0*x", 0.0); '
           'B = ("0.1*sin(2*pi*x/3.2)", 0.0, "B0 + 0.2*cos(2*pi*(x - 0.3*t)/3.2)");')
    kw = dict(nx=32, ny=16, ux=0.05, steps=200, pevery=50, fevery=50, external=ext,
              more="checkpoint = { every = 100; };")
    one = run(tmp_path, "one", **kw)
    if has_mpi():
        two = run(tmp_path, "two", ranks=2, parallel="parallel = { ranks = [2, 1]; };", **kw)
        assert_same_dumps(one, two, steps_of(one))
    cut = run(tmp_path, "cut", args=("--steps", "100"), **kw)
    empic("--restart", str(cut), "--steps", "200")
    assert_same_dumps(one, cut, steps_of(one))


WARM = """
simulation = {{ name = "ext-energy"; seed = 7; }};
grid = {{ cells = [64, 48]; dx = [0.1, 0.1]; cluster = [8, 8]; }};
time = {{ dt = 0.05; steps = 400; }};
fields = {{ external = {{ {external} }}; }};
species = ( {{ name = "e"; charge = -1.0; ppc = [3, 3];
              momentum = {{ thermal = [0.2, 0.2, 0.2]; }}; }},
            {{ name = "p"; charge = 1.0; ppc = [3, 3];
              momentum = {{ thermal = [0.2, 0.2, 0.2]; }}; }} );
diagnostics = {{ output = "{out}"; energy = {{ every = 50; }}; }};
"""


def test_magnetic_field_does_no_work(tmp_path):
    """A warm plasma in a B_ext varying in x and y: the total energy of energy.csv (which
    leaves the external field out) and the balance drift as much as without it (the
    scheme's grid heating: 0.26 % without, 0.24 % with): a magnetic field does no work."""
    drift = []
    for k, ext in enumerate(['B = [0.0, 0.0, 0.0];', 'B = ("0.3*sin(2*pi*y/4.8)", 0.0, '
                                                     '"1.0 + 0.5*cos(2*pi*x/6.4)");']):
        out = tmp_path / ("w%d" % k)
        deck = tmp_path / ("w%d.cfg" % k)
        deck.write_text(WARM.format(external=ext, out=out))
        empic("--overwrite", str(deck))
        rows = list(csv.DictReader(open(out / "energy.csv")))
        total = [float(r["total"]) for r in rows]
        bal = [float(r["balance"]) for r in rows]
        drift.append((abs(total[-1] / total[0] - 1), abs(bal[-1] / bal[0] - 1)))
    assert drift[1][0] < 1.5 * drift[0][0] and drift[1][1] < 1.5 * drift[0][1]
    assert drift[1][0] < 5e-3


@pytest.mark.parametrize("external,message", [
    ('B = (0.0, 0.0, "B0*(1 + z)");', "fields.external.B[2]: cannot parse formula"),
    ('B = (0.0, 0.0, "1/(x - x)");', "fields.external.B[2]: external Bz at (x, y, t) = "),
    ('E = (0.0, "sqrt(-1 - t)", 0.0);', "fields.external.E[1]: external Ey at (x, y, t)"),
    ('E = [0.0, 1e40, 0.0];', "external Ey = 1e+40 overflows"),
    ('E = [0.0, 0.0];', "fields.external.E: has 2 elements; expected 3 components"),
    ('E = [0.0, 0.0, 1.0]; E_Vm = [0.0, 0.0, 1.0];', "given together with E"),
    ('B_T = [0.0, 0.0, 1.0];', "B_T: is in T and needs the reference density"),
    ('C = [0.0, 0.0, 1.0];', "did you mean"),
])
def test_deck_errors(tmp_path, external, message):
    need_empic()
    deck = tmp_path / "bad.cfg"
    deck.write_text(BEAM.format(parallel="", nx=16, ny=16, dt=0.01, steps=10, ux=0.0,
                                fevery=0, pevery=0, more="", out=tmp_path / "o",
                                external=external).replace('simulation = { name = "ext"; ',
                                                           'simulation = { name = "ext"; '))
    res = subprocess.run(EMPIC_CMD + ["--check", str(deck)], capture_output=True, text=True,
                         env=ENV, timeout=60)
    assert res.returncode != 0
    assert message in res.stderr, res.stderr
    assert "bad.cfg:" in res.stderr


def test_check_prints_and_lab_units(tmp_path):
    """--check writes the formulas back resolved (constants replaced by their values), and
    B_T converts tesla with n0: 1 T is e/(m_e w_p) in units of m_e w_p/e."""
    need_empic()
    deck = tmp_path / "lab.cfg"
    deck.write_text(BEAM.format(parallel="", nx=16, ny=16, dt=0.01, steps=10, ux=0.0,
                                fevery=0, pevery=0, more="", out=tmp_path / "o",
                                external='E = (0.0, "E0*cos(w*t)", 0.0); B_T = [0.0, 0.0, 1.5];')
                    .replace('name = "ext";', 'name = "ext"; n0 = 1.0e19;'))
    res = subprocess.run(EMPIC_CMD + ["--check", str(deck)], capture_output=True, text=True,
                         env=ENV, timeout=60)
    assert res.returncode == 0, res.stderr
    line = [l for l in res.stdout.splitlines() if "external" in l][0]
    assert '"(0.01)*cos((1.3)*t)"' in line
    assert "# external Ey = (0.01)*cos((1.3)*t): uniform, evaluated at every step" in res.stdout
    wp = math.sqrt(1e25 * 1.602176634e-19 ** 2 / (8.8541878128e-12 * 9.1093837015e-31))
    b = 1.5 / (9.1093837015e-31 * wp / 1.602176634e-19)
    got = float(line.split("B = [")[1].split("]")[0].split(",")[2])
    assert got == pytest.approx(b, rel=1e-12)
