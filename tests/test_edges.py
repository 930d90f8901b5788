"""Plasma where the open boundaries mishandle it is warned about by `empic --check`: inside a
PML, or between a laser's side and its total-field/scattered-field source plane (2 cells
inside the PML, or 3 cells inside a Mur edge). The warning names the species, its density,
the first such cell and where the plasma should start."""

import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")

DECK = """
simulation = {{ backend = "cpu"; }};
grid = {{ cells = [128, 64]; dx = [0.1, 0.1]; }};
time = {{ dt = 0.05; steps = 10; }};
fields = {{ boundary = {{ xmin = "{xmin}"; xmax = "pml"; ymin = "{y}"; ymax = "{y}"; }};
           pml = {{ cells = 16; }}; {window} }};
lasers = ( {{ a0 = 0.1; omega0 = 5.0; w0 = 1.0; duration = 2.0; }} );
species = (
  {{ name = "e"; charge = -1.0; ppc = [2, 2];
    density = {{ profile = "piecewise"; x = [{x0}, {x1}, {x2}, {x3}]; fx = [0.0, 1.0, 1.0, 0.0]; }}; }},
  {{ name = "ions"; charge = 1.0; mass = 1836.0; ppc = [2, 2]; immobile = true;
    density = {{ profile = "piecewise"; x = [{x0}, {x1}, {x2}, {x3}]; fx = [0.0, 1.0, 1.0, 0.0]; }}; }} );
"""


def check(tmp_path, xmin="pml", y="periodic", x0=3.0, x1=4.0, x2=9.0, x3=9.5, window=""):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    p = tmp_path / "edge.cfg"
    p.write_text(DECK.format(xmin=xmin, y=y, x0=x0, x1=x1, x2=x2, x3=x3, window=window))
    res = subprocess.run([EMPIC, "--check", str(p)], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert res.returncode == 0, res.stderr  # warnings, not errors
    return [l for l in res.stderr.splitlines() if "has density" in l]


def test_plasma_beyond_the_source_plane_is_quiet(tmp_path):
    # PML cells 0-15, the source plane at node 18: x = 1.8; the ramp starts at x = 3
    assert check(tmp_path) == []


def test_plasma_inside_the_pml(tmp_path):
    # the ramp from x = 1.0: the first load position with n > 0 is x = 1.025 (cell 10)
    (w,) = check(tmp_path, x0=1.0, x1=2.0)
    assert "species 'e' has density 0.025 at (x, y) = (1.025, 0.025), cell 10 inside the " \
           "xmin PML (cells 0-15 along x)" in w, w
    assert w.endswith("start the plasma at x >= 1.8 (laser 0's source plane)"), w
    assert "ions" not in w  # immobile: no current in the layer


def test_plasma_behind_the_source_plane(tmp_path):
    # cells 16 and 17 lie between the PML and the plane at node 18
    (w,) = check(tmp_path, x0=1.65, x1=2.0)
    m = re.search(r"at \(x, y\) = \(([0-9.]+), [0-9.]+\), cell (\d+) behind laser 0's source "
                  r"plane \(cells 0-17 along x\)", w)
    assert m and float(m.group(1)) == pytest.approx(1.675) and m.group(2) == "16", w
    assert "start the plasma at x >= 1.8" in w


def test_behind_the_plane_of_a_mur_side(tmp_path):
    # Mur: no layer, the plane 3 cells inside the edge
    (w,) = check(tmp_path, xmin="mur", x0=0.0, x1=0.1)
    assert "cell 0 behind laser 0's source plane (cells 0-2 along x)" in w, w
    assert "start the plasma at x >= 0.3" in w


def test_uniform_in_y_reaches_the_y_layers(tmp_path):
    ws = check(tmp_path, y="pml")
    assert len(ws) == 2, ws
    assert "cell 0 inside the ymin PML (cells 0-15 along y)" in ws[0]
    assert ws[0].endswith("start the plasma at y >= 1.6")
    assert "cell 48 inside the ymax PML (cells 48-63 along y)" in ws[1]
    assert ws[1].endswith("start the plasma at y <= 4.8")


def test_moving_window_brings_plasma_in_through_xmax(tmp_path):
    # the plasma reaches the xmax layer, where the window injects it anyway
    on = "moving_window = { enabled = true; t_start = 10.0; };"
    assert check(tmp_path, x2=20.0, x3=30.0, window=on) == []
    (w,) = check(tmp_path, x2=20.0, x3=30.0)
    assert "cell 112 inside the xmax PML (cells 112-127 along x)" in w, w
    assert w.endswith("start the plasma at x <= 11.2"), w
