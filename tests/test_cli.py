"""The command line a user meets: --version, --name=value, "did you mean", --check's SI
scales, the timing of particle-free and restarted runs, the version in every output."""

import json
import math
import os
import re
import subprocess

import h5py
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")

VACUUM = """
simulation = {{ name = "vac"; backend = "cpu"; n0 = 1.1e19; }};
grid = {{ cells = [64, 32]; dx = [0.05, 0.05]; }};
time = {{ dt = 0.02; steps = 40; }};
fields = {{ boundary = {{ xmin = "pml"; xmax = "pml"; ymin = "pml"; ymax = "pml"; }};
           pml = {{ cells = 8; }}; }};
lasers = ( {{ a0 = 2.0; omega0 = 10.0; w0 = 0.5; duration = 0.5; }} );
diagnostics = {{ output = "{out}"; energy = {{ every = 10; }};
                fields = {{ every = 20; quantities = ["E", "B"]; }}; }};
"""

PLASMA = """
simulation = {{ name = "plasma"; backend = "cpu"; }};
grid = {{ cells = [32, 32]; dx = [0.2, 0.2]; }};
time = {{ dt = 0.1; steps = 40; }};
species = ( {{ name = "electrons"; charge = -1.0; ppc = [2, 2];
               momentum = {{ thermal = [0.05, 0.05, 0.05]; }}; }} );
diagnostics = {{ output = "{out}"; energy = {{ every = 10; }};
                fields = {{ every = 20; }}; checkpoint = {{ every = 30; }}; }};
"""


def empic(*args, **kw):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    env = dict(os.environ, **dict({"OMP_NUM_THREADS": "2"}, **kw.pop("env", {})))
    return subprocess.run([EMPIC] + list(args), capture_output=True, text=True, env=env,
                          timeout=120, **kw)


def deck(tmp_path, text, name):
    p = tmp_path / (name + ".cfg")
    p.write_text(text.format(out=tmp_path / ("out-" + name)))
    return str(p), tmp_path / ("out-" + name)


def test_version():
    res = empic("--version")
    assert res.returncode == 0
    first, built = res.stdout.strip().split("\n")
    assert re.match(r"empic \d+\.\d+\.\d+ \(git \S+\)$", first), res.stdout
    assert re.match(r"built with: CPU backend, (no )?CUDA backend, (no )?MPI$", built), built


def test_gnu_equals_syntax(tmp_path):
    path, out = deck(tmp_path, VACUUM, "vac")
    res = empic("--steps=10", "--output=%s" % (tmp_path / "eq"), "--quiet", path)
    assert res.returncode == 0, res.stderr
    tm = json.load(open(tmp_path / "eq" / "timing.json"))
    assert tm["steps"] == 10


DEFAULT = os.path.join(ROOT, "decks", "default.cfg")


@pytest.mark.parametrize("args, message", [
    (["--stpes", "3", DEFAULT], "did you mean '--steps'"),
    (["--outptu=x", DEFAULT], "did you mean '--output'"),
    (["--bakend", "cpu", DEFAULT], "did you mean '--backend'"),
    (["--check=yes", DEFAULT], "'--check' takes no value"),
    (["--quiet", DEFAULT, "--steps"], "'--steps' needs a value"),
    ([DEFAULT, DEFAULT], "unexpected argument"),
])
def test_mistyped_options_are_explained(args, message):
    res = empic(*args)
    assert res.returncode == 2
    assert message in res.stderr, res.stderr


def test_check_prints_si_scales(tmp_path):
    path, _ = deck(tmp_path, VACUUM, "vac")
    res = empic("--check", path)
    assert res.returncode == 0, res.stderr
    text = res.stdout
    # n0 = 1.1e19 cm^-3: omega_p = sqrt(n0 e^2 / (eps0 m_e)), c/omega_p in um
    wp = math.sqrt(1.1e25 * 1.602176634e-19**2 / (8.8541878128e-12 * 9.1093837015e-31))
    m = re.search(r"omega_p = ([0-9.e+]+) rad/s", text)
    assert m and abs(float(m.group(1)) / wp - 1) < 1e-3, text
    m = re.search(r"c/omega_p = ([0-9.e+]+) um", text)
    assert m and abs(float(m.group(1)) / (299792458.0 / wp * 1e6) - 1) < 1e-3
    m = re.search(r"lambda0 = ([0-9.e+]+) um", text)  # 2 pi c / (10 omega_p)
    assert m and abs(float(m.group(1)) / (2 * math.pi * 299792458.0 / (10 * wp) * 1e6) - 1) < 1e-3
    assert "n_c = 100 n0" in text
    m = re.search(r"E0 = m_e c omega_p/e = ([0-9.e+]+) V/m", text)
    e0 = 9.1093837015e-31 * 299792458.0 * wp / 1.602176634e-19
    assert m and abs(float(m.group(1)) / e0 - 1) < 1e-3
    m = re.search(r"peak E = a0 omega0 E0 = ([0-9.e+]+) V/m", text)
    assert m and abs(float(m.group(1)) / (20 * e0) - 1) < 1e-3


def test_particle_free_run_is_timed_per_cell_step(tmp_path):
    path, out = deck(tmp_path, VACUUM, "vac")
    res = empic(path, env={"OMP_NUM_THREADS": "1"})
    assert res.returncode == 0, res.stderr
    assert "ns/cell-step" in res.stdout and "ns/part-step" not in res.stdout, res.stdout
    total = float(re.search(r"^total\s+([0-9.]+)", res.stdout, re.M).group(1))
    # a Yee update of a cell takes nanoseconds (dividing by zero particles gave 2e11); the
    # bound leaves room for a machine shared with other jobs
    assert 0 < total < 1e5, res.stdout
    tm = json.load(open(out / "timing.json"))
    assert tm["per"] == "cell-step" and tm["particles"] == 0
    assert tm["ns_per_particle_step"] is None
    assert tm["ns_per_cell_step"]["total"] == pytest.approx(total, rel=1e-3)
    assert abs(tm["ns_per_cell_step"]["total"] * 1e-9 * tm["cells"] * tm["steps"]
               - tm["wall_s"]) < 1e-6 * max(1.0, tm["wall_s"]) + 1e-6


def test_restart_is_timed_over_the_steps_it_ran(tmp_path):
    path, out = deck(tmp_path, PLASMA, "plasma")
    assert empic("--quiet", "--steps", "30", path).returncode == 0  # ends with a checkpoint
    res = empic("--restart", str(out), "--steps", "40", "--output", str(tmp_path / "again"))
    assert res.returncode == 0, res.stderr
    assert "wall" in res.stdout and "for 10 steps (30 to 40, after the restart)" in res.stdout
    tm = json.load(open(tmp_path / "again" / "timing.json"))
    assert (tm["steps"], tm["first_step"], tm["last_step"]) == (10, 30, 40)
    ps = tm["ns_per_particle_step"]["total"] * 1e-9 * tm["particles"] * tm["steps"]
    assert abs(ps - tm["wall_s"]) < 1e-3 * tm["wall_s"] + 1e-6


def test_version_and_author_in_every_output(tmp_path):
    path, out = deck(tmp_path, VACUUM, "vac")
    res = empic("--quiet", path, env={"EMPIC_AUTHOR": "A. Physicist <ap@example.org>"})
    assert res.returncode == 0, res.stderr
    version = empic("--version").stdout.split("\n")[0].split(" ", 1)[1].strip()
    assert open(out / "run.cfg").readline().strip() == "# written by empic " + version
    tm = json.load(open(out / "timing.json"))
    assert version == "%s (git %s)" % (tm["version"], tm["commit"])
    with h5py.File(out / "data" / "data00000020.h5", "r") as f:
        assert f.attrs["softwareVersion"].decode() == version
        assert f.attrs["author"].decode() == "A. Physicist <ap@example.org>"
    env = {k: v for k, v in os.environ.items() if k not in ("USER", "LOGNAME", "EMPIC_AUTHOR")}
    res = subprocess.run([EMPIC, "--quiet", "--output", str(tmp_path / "anon"), path],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    with h5py.File(tmp_path / "anon" / "data" / "data00000020.h5", "r") as f:
        assert f.attrs["author"].decode() == "empic user"
