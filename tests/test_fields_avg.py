"""Time-averaged field dumps (diagnostics.fields_avg, docs/output.md; fieldavg.h): every
mean is the double sum of the instantaneous dumps of its window over the steps, rounded
once (squares for E2, B2), bit for bit, and in a static field (an immobile, non-uniform
charge) the field itself to rounding (rho_avg = rho, J_avg = 0); a plane wave in
vacuum averaged over two periods gives <Ey^2> = <Bz^2> = E0^2/2 and <Ey> = 0; the records
have the openPMD attributes of E and B with averageSteps and the window's mid time in
timeOffset (openPMD validator), and the XDMF lists them; a run stopped inside an averaging
window (its checkpoint keeps the partial sums) and restarted, and runs on 2 MPI ranks, give
the straight one-rank dumps bitwise; bad keys are refused. On the GPU machine the same tests
run the CUDA backend with EMPIC_TEST_BACKEND=cuda (and EMPIC_TEST_EMPIC, EMPIC_TEST_MPIRUN)."""

import math
import os
import subprocess

import h5py
import numpy as np
import pytest

from runs import EMPIC_CMD, ENV, assert_same_dumps, empic, has_mpi, need_empic, validate

ALL = '["E", "B", "J", "rho", "E2", "B2"]'

STATIC = """
simulation = {{ name = "avg-static"; seed = 2; }};
grid = {{ cells = [32, 8]; dx = [0.1, 0.1]; cluster = [8, 4]; }};
time = {{ dt = 0.05; steps = 20; }};
species = ( {{ name = "e"; charge = -1.0; ppc = [2, 2]; immobile = true;
              density = {{ profile = "expr"; expr = "1 + 0.5*sin(2*pi*x/3.2)"; }}; }} );
diagnostics = {{ output = "{out}"; fields = {{ every = 1; }};
  fields_avg = {{ every = 10; steps = 7; quantities = {q}; }}; }};
"""

# a plane wave from xmin (a flat-top beam wider than the periodic y side), lambda = 1
# (omega0 = 2 pi), 20 cells per wavelength, 40 steps per period; optionally a thin plasma
WAVE = """
simulation = {{ name = "avg-wave"; seed = 4; }};
{parallel}
grid = {{ cells = [200, 32]; dx = [0.05, 0.05]; cluster = [10, 8]; }};
time = {{ dt = 0.025; steps = {steps}; }};
fields = {{ boundary = {{ xmin = "pml"; xmax = "pml"; ymin = "periodic"; ymax = "periodic"; }}; }};
lasers = ( {{ a0 = 0.01; omega0 = 6.283185307179586; w0 = 10.0; profile = "flattop";
             edge = 0.0; focus = 1.0; center = 0.8; duration = 30.0; envelope = "flattop";
             ramp = 1.0; boundary = "xmin"; }} );
{species}
diagnostics = {{ output = "{out}"; energy = {{ every = 20; }}; fields = {{ every = 200; }};
  fields_avg = {{ every = {every}; steps = {avg}; quantities = {q}; }}; {more} }};
"""
PLASMA = """species = (
  { name = "e"; charge = -1.0; ppc = [2, 2];
    density = { profile = "expr"; expr = "x > 3 && x < 7 ? 0.05 : 0"; };
    momentum = { thermal = [0.01, 0.01, 0.01]; }; },
  { name = "i"; charge = 1.0; mass = 1836.0; ppc = [2, 2]; immobile = true;
    density = { profile = "expr"; expr = "x > 3 && x < 7 ? 0.05 : 0"; }; } );"""


def run(tmp_path, name, text, args=(), ranks=1):
    out = tmp_path / name
    deck = tmp_path / (name + ".cfg")
    deck.write_text(text.replace("{out}", str(out)))
    empic("--overwrite", *args, str(deck), ranks=ranks)
    return out


def wave(steps=400, every=400, avg=80, q='["E", "B", "E2", "B2"]', species="", more="",
         parallel=""):
    return WAVE.format(steps=steps, every=every, avg=avg, q=q, species=species, more=more,
                       parallel=parallel, out="{out}")


def meshes(out, step):
    with h5py.File(out / "data" / ("data%08d.h5" % step), "r") as f:
        m = f["data/%d/meshes" % step]
        got = {}
        for name, rec in m.items():
            if isinstance(rec, h5py.Dataset):
                got[name] = rec[()]
            else:
                got.update({name + "/" + c: rec[c][()] for c in rec})
        return got


def test_static_field_means_are_the_field(tmp_path):
    """Each mean is the double sum of the instantaneous dumps of its 7 steps, in step order,
    over 7, rounded once (squares of the float values for E2, B2), bit for bit; the field
    being static, the means are the field to rounding."""
    out = run(tmp_path, "static", STATIC.format(q=ALL, out="{out}"))
    names = sorted(f for f in os.listdir(out / "data") if f.endswith(".h5"))
    assert len(names) == 21
    for n in (10, 20):
        m = meshes(out, n)
        assert "E_avg" not in meshes(out, n - 1) and np.any(m["E/x"] != 0)
        inst = [meshes(out, k) for k in range(n - 6, n + 1)]
        pairs = [("rho_avg", "rho", 1)] + [(q + "_avg/" + c, q + "/" + c, 1)
                                           for q in "EBJ" for c in "xyz"]
        pairs += [(q + "2_avg/" + c, q + "/" + c, 2) for q in "EB" for c in "xyz"]
        for avg, name, power in pairs:
            total = np.zeros(m[avg].shape)
            for d in inst:
                total += d[name].astype(np.float64) ** power
            assert np.array_equal(m[avg], (total / 7).astype(np.float32)), avg
        assert np.allclose(m["E_avg/x"], m["E/x"], rtol=1e-6, atol=1e-7)
        assert np.array_equal(m["rho_avg"], m["rho"]) and not np.any(m["J_avg/x"])
    assert "E_avg" not in meshes(out, 0)  # no averaged dump at step 0


def test_plane_wave_means(tmp_path):
    """Two periods (80 steps) averaged where the flat top of the wave has arrived (x from 2
    to 5 at t = 10): <Ey^2> = E0^2/2 within 0.1 % (<Bz^2> within 1 %), <Ey> below 1e-4 E0."""
    out = run(tmp_path, "wave", wave())
    e0 = 0.01 * 2 * math.pi
    m = meshes(out, 400)
    x = slice(40, 100)
    ey2, bz2, ey = m["E2_avg/y"][:, x], m["B2_avg/z"][:, x], m["E_avg/y"][:, x]
    assert np.allclose(ey2, e0 * e0 / 2, rtol=1e-3)
    assert np.allclose(bz2, e0 * e0 / 2, rtol=1e-2)  # B(n): the mean of its half steps
    assert np.abs(ey).max() < 1e-4 * e0
    assert np.abs(m["E_avg/z"]).max() == 0 and np.abs(m["E2_avg/x"][:, x]).max() < 1e-6 * e0 ** 2
    with h5py.File(out / "data" / "data00000400.h5", "r") as f:
        mm = f["data/400/meshes"]
        for rec, base in (("E_avg", "E"), ("B_avg", "B"), ("E2_avg", "E"), ("B2_avg", "B")):
            a = mm[rec].attrs
            assert a["averageSteps"] == 80
            assert a["timeOffset"] == pytest.approx(-39.5 * 0.025)
            dim = mm[base].attrs["unitDimension"] * (2 if "2" in rec else 1)
            assert np.array_equal(a["unitDimension"], dim)
            for c in "xyz":
                assert np.array_equal(mm[rec][c].attrs["position"], mm[base][c].attrs["position"])
                u = mm[base][c].attrs["unitSI"]
                assert mm[rec][c].attrs["unitSI"] == pytest.approx(u * u if "2" in rec else u)
    xmf = (out / "data" / "data00000400.xmf").read_text()
    for name in ("Ey_avg", "E2y_avg", "Bz_avg", "B2z_avg"):
        assert 'Name="%s"' % name in xmf
    for s in (200, 400):
        validate(out / "data" / ("data%08d.h5" % s))


def test_restart_inside_window_and_ranks(tmp_path):
    """A laser in a thin plasma, every quantity averaged over 60 steps before each of the
    dumps at 150 and 300: stopped at step 120 (inside the window 91 .. 150: the checkpoint
    keeps the sums of 29 steps) and restarted, and on 2 ranks along x and along y, the
    dumps and energy.csv are bitwise the straight run's."""
    text = wave(steps=300, every=150, avg=60, q=ALL, species=PLASMA,
                more="checkpoint = { every = 1000; };")
    one = run(tmp_path, "one", text)
    cut = run(tmp_path, "cut", text, args=("--steps", "120"))
    with h5py.File(sorted((cut / "checkpoint").glob("ckpt*.h5"))[-1], "r") as f:
        assert f["step"][()] == 120 and f["fields/avg_held"][()] == 29
    empic("--restart", str(cut), "--steps", "300")
    assert_same_dumps(one, cut, (150, 200, 300))
    m = meshes(one, 300)
    assert np.any(m["J_avg/y"] != 0) and np.any(m["rho_avg"] != 0)
    if not has_mpi():
        pytest.skip("bin/empic was built with MPI=0")
    for split in ((2, 1), (1, 2)):
        par = "parallel = { ranks = [%d, %d]; };" % split
        two = run(tmp_path, "r%dx%d" % split, wave(steps=300, every=150, avg=60, q=ALL,
                                                   species=PLASMA, parallel=par), ranks=2)
        assert_same_dumps(one, two, (150, 200, 300))


@pytest.mark.parametrize("group,message", [
    ("{ every = 10; steps = 11; }", "fields_avg.steps: 11 steps averaged before dumps 10"),
    ("{ every = 10; quantities = []; }", "fields_avg.quantities: is empty"),
    ('{ every = 10; quantities = ["E", "E3"]; }', "did you mean"),
    ("{ steps = 4; }", "fields_avg.every: missing"),
    ("{ every = 10; average = 4; }", "unknown key 'average'"),
])
def test_deck_errors(tmp_path, group, message):
    need_empic()
    deck = tmp_path / "bad.cfg"
    deck.write_text(STATIC.format(q=ALL, out=tmp_path / "o").replace(
        "fields_avg = { every = 10; steps = 7; quantities = %s; }" % ALL, "fields_avg = " + group))
    res = subprocess.run(EMPIC_CMD + ["--check", str(deck)], capture_output=True, text=True,
                         env=ENV, timeout=60)
    assert res.returncode != 0
    assert message in res.stderr, res.stderr
    assert "bad.cfg:" in res.stderr
