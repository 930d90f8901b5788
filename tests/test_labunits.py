"""A deck in lab units (um, fs, W/cm^2, critical densities, eV) runs bitwise like its
normalised twin: the lab keys are converted when the deck is read, and the values they give
are those computed here from the textbook formulas."""

import math
import os
import re
import subprocess

import h5py
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")

# CODATA 2018
E, ME, C, EPS0 = 1.602176634e-19, 9.1093837015e-31, 299792458.0, 8.8541878128e-12

HEAD = """
fields = {{ boundary = {{ xmin = "pml"; xmax = "pml"; ymin = "periodic"; ymax = "periodic"; }};
           pml = {{ cells = 8; }}; }};
diagnostics = {{ output = "{out}"; energy = {{ every = 5; }};
                fields = {{ every = 30; }}; }};
"""

LAB = HEAD + """
simulation = {{ name = "lab"; backend = "cpu"; seed = 3; }};
grid = {{ cells = [96, 32]; dx_um = [0.02, 0.04]; }};
time = {{ dt_fs = 0.04; tmax_fs = 1.2; }};
lasers = ( {{ lambda0 = 0.8; intensity = 3.0e18; w0_um = 0.5; duration_fs = 0.6;
             focus_um = 0.8; center_um = 0.64; envelope = "gaussian"; }} );
species = (
  {{ name = "e"; charge = -1.0; ppc = [2, 2]; momentum = {{ temperature_eV = 500.0; }};
    density = {{ profile = "piecewise"; n_nc = 0.5; x_um = [0.32, 0.33]; fx = [0.0, 1.0]; }}; }},
  {{ name = "p"; charge = 1.0; mass = 1836.0; ppc = [2, 2];
    momentum = {{ temperature_keV = [0.1, 0.1, 0.0]; }};
    density = {{ profile = "piecewise"; n_cm3 = 8.7097985e20; x_um = [0.32, 0.33]; fx = [0.0, 1.0]; }}; }} );
"""

NORM = HEAD + """
simulation = {{ name = "lab"; backend = "cpu"; seed = 3; n0 = {n0!r}; }};
grid = {{ cells = [96, 32]; dx = [{dx!r}, {dy!r}]; }};
time = {{ dt = {dt!r}; steps = {steps}; }};
lasers = ( {{ omega0 = {omega0!r}; a0 = {a0!r}; w0 = {w0!r}; duration = {duration!r};
             focus = {focus!r}; center = {center!r}; envelope = "gaussian"; }} );
species = (
  {{ name = "e"; charge = -1.0; ppc = [2, 2]; momentum = {{ thermal = [{ue!r}, {ue!r}, {ue!r}]; }};
    density = {{ profile = "piecewise"; n = {ne!r}; x = [{x0!r}, {x1!r}]; fx = [0.0, 1.0]; }}; }},
  {{ name = "p"; charge = 1.0; mass = 1836.0; ppc = [2, 2];
    momentum = {{ thermal = [{up!r}, {up!r}, 0.0]; }};
    density = {{ profile = "piecewise"; n = {np!r}; x = [{x0!r}, {x1!r}]; fx = [0.0, 1.0]; }}; }} );
"""


def by_hand():
    """The normalised values of LAB, from the formulas: n0 is the critical density of
    lambda0 (the deck gives no n0), so omega0 = 1 and lengths are in c/omega0 = lambda/2pi."""
    lam = 0.8e-6
    w = 2 * math.pi * C / lam
    n0 = EPS0 * ME * w * w / E**2 * 1e-6  # cm^-3, 1.742e21
    um, fs = C / w * 1e6, 1e15 / w  # c/omega_p in um, 1/omega_p in fs
    a0 = E * math.sqrt(2 * 3.0e22 / (C * EPS0)) / (ME * C * w)  # linear, I = c eps0 E^2 / 2
    mc2 = ME * C * C / E  # eV
    return dict(n0=n0, dx=0.02 / um, dy=0.04 / um, dt=0.04 / fs, steps=30, omega0=1.0, a0=a0,
                w0=0.5 / um, duration=0.6 / fs, focus=0.8 / um, center=0.64 / um,
                ue=math.sqrt(500 / mc2), ne=0.5, up=math.sqrt(100 / (1836 * mc2)),
                np=8.7097985e20 / n0, x0=0.32 / um, x1=0.33 / um)


def empic(*args):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    env = dict(os.environ, OMP_NUM_THREADS="2")
    return subprocess.run([EMPIC] + list(args), capture_output=True, text=True, env=env,
                          timeout=120)


def resolved(text):
    """The normalised values of a deck as --check resolves them."""
    num = r"([-0-9.e+]+)"
    get = lambda pat: float(re.search(pat, text).group(1))
    dx = re.search(r"dx = \[" + num + ", " + num + r"\]", text)
    th = re.findall(r"thermal = \[" + num + ", " + num, text)
    dens = re.findall(r"profile = \"piecewise\"; n = " + num, text)
    xs = re.search(r" x = \[" + num + ", " + num + r"\]", text)
    return dict(n0=get(r"n0 = " + num), dx=float(dx.group(1)), dy=float(dx.group(2)),
                dt=get(r"dt = " + num), steps=int(get(r"steps = " + num)),
                omega0=get(r"omega0 = " + num), a0=get(r"a0 = " + num), w0=get(r"w0 = " + num),
                duration=get(r"duration = " + num), focus=get(r"focus = " + num),
                center=get(r"center = " + num), ue=float(th[0][0]), up=float(th[1][0]),
                ne=float(dens[0]), np=float(dens[1]), x0=float(xs.group(1)),
                x1=float(xs.group(2)))


def write(tmp_path, name, text, **kw):
    p = tmp_path / (name + ".cfg")
    p.write_text(text.format(out=tmp_path / ("out-" + name), **kw))
    return str(p), tmp_path / ("out-" + name)


def test_lab_values_are_the_formulas(tmp_path):
    path, _ = write(tmp_path, "lab", LAB)
    res = empic("--check", path)
    assert res.returncode == 0, res.stderr
    got, want = resolved(res.stdout), by_hand()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-13), k
    assert abs(want["a0"] - 0.855 * 0.8 * math.sqrt(3.0)) < 2e-3  # the rule of thumb
    # --check prints the lab values back
    assert "lambda0 = 0.8 um, omega0 = 1 omega_p" in res.stdout
    assert "I = 3e+18 W/cm^2 (linear)" in res.stdout
    assert re.search(r"duration \(FWHM of the field\) = [0-9.]+/omega_p = 0.6 fs", res.stdout)
    assert "species e: n = 0.5 n0 = 8.71e+20 cm^-3 = 0.5 n_c" in res.stdout
    assert "temperature m c^2 u_th^2 = [0.1, 0.1, 0] keV" in res.stdout


def test_lab_deck_runs_like_its_normalised_twin(tmp_path):
    lab, out_lab = write(tmp_path, "lab", LAB)
    res = empic("--check", lab)
    assert res.returncode == 0, res.stderr
    # the twin holds the values the lab deck resolves to (within 1e-13 of by_hand(): above)
    twin, out_twin = write(tmp_path, "twin", NORM, **resolved(res.stdout))
    for path in (lab, twin):
        res = empic("--quiet", path)
        assert res.returncode == 0, res.stderr
    a, b = (open(o / "energy.csv").read() for o in (out_lab, out_twin))
    assert a == b and len(a.splitlines()) == 7  # steps 0, 5, .., 25
    assert float(a.splitlines()[-1].split(",")[2]) > 0  # the laser is in
    with h5py.File(out_lab / "data" / "data00000030.h5") as fa, \
            h5py.File(out_twin / "data" / "data00000030.h5") as fb:
        for q in ("E", "B", "J"):
            for c in "xyz":
                key = f"/data/30/meshes/{q}/{c}"
                assert np.array_equal(fa[key][()], fb[key][()]), key
        key = "/data/30/meshes/rho_e"
        assert np.array_equal(fa[key][()], fb[key][()]) and fa[key][()].min() < 0


def test_the_documented_lab_deck_checks_clean(tmp_path):
    """docs/deck.md's example in lab units: accepted, its plasma clear of the layers and the
    source plane, with the a0 of 5e18 W/cm^2 at 0.8 um and 5e19 cm^-3 in n_c (a 10 eV plasma
    on this grid is warned of grid heating, as it should be)."""
    text = open(os.path.join(ROOT, "docs", "deck.md")).read()
    block = re.search(r"```\n(grid = \{ cells = \[1024.*?)```", text, re.S).group(1)
    p = tmp_path / "doc.cfg"
    p.write_text(block)
    res = empic("--check", str(p))
    assert res.returncode == 0 and "has density" not in res.stderr, res.stderr
    w = 2 * math.pi * C / 0.8e-6
    a0 = E * math.sqrt(2 * 5.0e22 / (C * EPS0)) / (ME * C * w)
    assert float(re.search(r"\{ a0 = ([0-9.e+-]+);", res.stdout).group(1)) == \
        pytest.approx(a0, rel=1e-13)
    assert "a0 = %.4g, I = 5e+18 W/cm^2 (linear)" % a0 in res.stdout
    nc = EPS0 * ME * w * w / E**2 * 1e-6
    assert "= %.4g n_c" % (5e19 / nc) in res.stdout
