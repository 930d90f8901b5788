"""Lasers at an angle of incidence (the laser key `angle`, degrees from the launching side's
normal): the deck's checks, angle 0 bitwise the run without the key, and a tilted pulse in
lab units travelling at its angle in the field dumps. The physics of the tilted beam (its
direction from xmin, ymin and xmax, its energy against normal incidence, the specular
reflection off an overdense slab) is tested in tests/test_laser.c."""

import glob
import math
import os
import re
import subprocess

import h5py
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")

# a small laser-plasma deck (normalised units, lambda = 1): the pulse reaches the plasma
SMALL = """
simulation = {{ name = "small"; backend = "cpu"; seed = 3; }};
grid = {{ cells = [96, 64]; dx = [0.05, 0.05]; cluster = [16, 16]; }};
time = {{ dt = 0.025; steps = 120; }};
fields = {{ boundary = {{ xmin = "pml"; xmax = "pml"; ymin = "pml"; ymax = "pml"; }};
           pml = {{ cells = 8; }}; }};
lasers = ( {{ a0 = 0.5; omega0 = 6.283185307179586; w0 = 0.6; duration = 1.0; focus = 2.5;
             center = 1.6; {angle} }} );
species = (
  {{ name = "e"; charge = -1.0; ppc = [2, 2]; momentum = {{ thermal = [0.05, 0.05, 0.05]; }};
    density = {{ profile = "piecewise"; n = 40.0; x = [2.5, 2.6, 3.9, 4.0]; fx = [0.0, 1.0, 1.0, 0.0];
                y = [0.5, 0.6, 2.6, 2.7]; fy = [0.0, 1.0, 1.0, 0.0]; }};
    boundary = {{ xmin = "absorbing"; xmax = "absorbing"; ymin = "absorbing"; ymax = "absorbing"; }}; }},
  {{ name = "i"; charge = 1.0; mass = 1836.0; ppc = [2, 2]; immobile = true;
    density = {{ profile = "piecewise"; n = 40.0; x = [2.5, 2.6, 3.9, 4.0]; fx = [0.0, 1.0, 1.0, 0.0];
                y = [0.5, 0.6, 2.6, 2.7]; fy = [0.0, 1.0, 1.0, 0.0]; }}; }} );
diagnostics = {{ output = "{out}"; energy = {{ every = 5; }}; fields = {{ every = 60; }}; }};
"""

# a tilted pulse in vacuum in lab units: 0.8 um, 1e18 W/cm^2, 5 fs, waist 2 um, 30 degrees
LAB = """
grid = {{ cells = [240, 350]; dx_um = [0.04, 0.04]; cluster = [16, 25]; }};
time = {{ dt_fs = 0.06; tmax_fs = 66.0; }};
fields = {{ boundary = {{ xmin = "pml"; xmax = "pml"; ymin = "pml"; ymax = "pml"; }};
           pml = {{ cells = 8; }}; }};
lasers = ( {{ lambda0 = 0.8; intensity = 1.0e18; w0_um = 2.0; duration_fs = 5.0;
             envelope = "sin2"; focus_um = 4.0; center_um = 7.5; angle = {angle}; }} );
diagnostics = {{ output = "{out}"; energy = {{ every = 50; }};
                fields = {{ every = 50; quantities = ["E", "B"]; }}; }};
"""


def empic(*args):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    env = dict(os.environ, OMP_NUM_THREADS="2")
    return subprocess.run([EMPIC] + list(args), capture_output=True, text=True, env=env,
                          timeout=300)


def write(tmp_path, name, text, **kw):
    p = tmp_path / (name + ".cfg")
    out = tmp_path / ("out-" + name)
    p.write_text(text.format(out=out, **kw))
    return str(p), out


def test_angle_zero_is_the_run_without_the_key(tmp_path):
    runs = {}
    for name, angle in (("none", ""), ("zero", "angle = 0.0;"), ("tilted", "angle = 20.0;")):
        path, out = write(tmp_path, name, SMALL, angle=angle)
        res = empic("--quiet", path)
        assert res.returncode == 0, res.stderr
        runs[name] = out
    a, b, c = (open(runs[k] / "energy.csv").read() for k in ("none", "zero", "tilted"))
    assert a == b and len(a.splitlines()) == 25  # steps 0, 5, .., 115
    assert float(a.splitlines()[-1].split(",")[2]) > 1.0  # the pulse is in
    assert a != c  # the tilt changes the run
    with h5py.File(runs["none"] / "data" / "data00000120.h5") as fa, \
            h5py.File(runs["zero"] / "data" / "data00000120.h5") as fb:
        for c in "xyz":
            key = "/data/120/meshes/E/" + c
            assert np.array_equal(fa[key][()], fb[key][()]), key
    # the resolved deck of the tilted run keeps its angle (restarts read it)
    assert "angle = 20.0;" in open(runs["tilted"] / "run.cfg").read()
    assert " angle = " not in open(runs["zero"] / "run.cfg").read()


def test_check_prints_the_angle(tmp_path):
    path, _ = write(tmp_path, "lab", LAB, angle=30.0)
    res = empic("--check", path)
    assert res.returncode == 0, res.stderr
    assert "angle = 30.0;" in res.stdout
    assert re.search(r"angle of incidence 30 degrees from the xmin normal \(toward \+y\), "
                     r"transverse wavelength on the boundary lambda0/\|sin\| = 1.6 um",
                     res.stdout), res.stdout
    assert "footprint" not in res.stderr, res.stderr
    # intensity, a0 and the rest are those of the beam without the tilt
    ref = empic("--check", write(tmp_path, "lab0", LAB, angle=0.0)[0])
    pick = lambda t: re.search(r"\{ a0 = ([0-9.e+-]+); omega0 = ([0-9.e+-]+);", t).groups()
    assert pick(res.stdout) == pick(ref.stdout)


@pytest.mark.parametrize("angle", [90.0, -90.0, 120.0])
def test_angle_of_90_degrees_or_more_is_refused(tmp_path, angle):
    res = empic("--check", write(tmp_path, "bad", LAB, angle=angle)[0])
    assert res.returncode != 0
    assert "lasers[0].angle: got %g; expected an angle of incidence in degrees from the " \
           "side's normal, -90 < angle < 90 (toward +y when positive)" % angle in res.stderr, \
        res.stderr


def test_unresolved_transverse_phase_is_refused(tmp_path):
    # lambda0 = 0.8 um, dy = 0.25 um: at 60 degrees lambda0/sin = 0.924 um = 3.7 cells,
    # refused; at 50 degrees 1.04 um = 4.2 cells, kept
    text = LAB.replace("dx_um = [0.04, 0.04]", "dx_um = [0.04, 0.25]")
    res = empic("--check", write(tmp_path, "coarse", text, angle=60.0)[0])
    assert res.returncode != 0
    m = re.search(r"60 degrees: the phase along the source plane has the wavelength "
                  r"lambda0/\|sin angle\| = ([0-9.]+) = ([0-9.]+) cells of dy = ([0-9.]+); "
                  r"expected at least 4 cells: dy <= ([0-9.]+) \(normalised\), or \|angle\| "
                  r"<= ([0-9.]+) degrees", res.stderr)
    assert m, res.stderr
    assert float(m.group(2)) == pytest.approx(0.8 / math.sin(math.radians(60)) / 0.25, abs=0.01)
    assert float(m.group(5)) == pytest.approx(math.degrees(math.asin(0.8 / 1.0)), abs=0.1)
    res = empic("--check", write(tmp_path, "fine", text, angle=50.0)[0])
    assert "phase along the source plane" not in res.stderr, res.stderr


def test_a_cut_footprint_is_warned(tmp_path):
    text = LAB.replace("center_um = 7.5", "center_um = 4.0")
    res = empic("--check", write(tmp_path, "cut", text, angle=30.0)[0])
    assert res.returncode == 0, res.stderr  # a warning
    assert re.search(r"laser 0 at 30 degrees: its footprint on the source plane .* spans y = "
                     r"-[0-9.]+ to [0-9.]+, beyond the plane clear of the PMLs, [0-9.]+ to "
                     r"[0-9.]+; the beam is cut there", res.stderr), res.stderr


def centroids(out):
    """(t, field energy, x, y) of each field dump, x and y in the dump's units."""
    rows = []
    for f in sorted(glob.glob(str(out / "data" / "data*.h5"))):
        with h5py.File(f) as h:
            it = list(h["data"].keys())[0]
            g = h["data"][it]
            m = g["meshes"]
            u = sum(m["E"][c][()].astype(float) ** 2 + m["B"][c][()].astype(float) ** 2
                    for c in "xyz")
            dy, dx = m["E"].attrs["gridSpacing"]
            y, x = np.mgrid[0:u.shape[0], 0:u.shape[1]]
            w = u.sum()
            if w > 0:
                rows.append((g.attrs["time"], w, (u * x).sum() / w * dx, (u * y).sum() / w * dy))
    return rows


def test_lab_units_pulse_travels_at_its_angle(tmp_path):
    path, out = write(tmp_path, "lab", LAB, angle=30.0)
    res = empic("--quiet", path)
    assert res.returncode == 0, res.stderr
    rows = centroids(out)
    wmax = max(r[1] for r in rows)
    inside = [r for r in rows if r[1] > wmax * (1 - 1e-3)]  # the whole pulse in the box
    assert len(inside) >= 3, rows
    (t1, _, x1, y1), (t2, _, x2, y2) = inside[0], inside[-1]
    angle = math.degrees(math.atan2(y2 - y1, x2 - x1))
    speed = math.hypot(x2 - x1, y2 - y1) / (t2 - t1)
    print("angle %.2f deg, speed %.4f over %d dumps" % (angle, speed, len(inside)))
    assert angle == pytest.approx(30.0, abs=1.0)
    assert speed == pytest.approx(1.0, abs=0.02)
