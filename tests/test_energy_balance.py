"""The energy balance of energy.csv (docs/output.md): field + kinetic - field_layers -
field_stagger + out + lost - in stays constant to the scheme's accuracy in open boxes: a laser
pulse that crosses a vacuum box and leaves through the PML (in = out at the end), a laser on an
overdense slab with absorbing particle walls and Mur sides, and a laser in a plasma followed by
the moving window. The balance's columns are the same for 1 and 2 OpenMP threads, for 1 and 2
MPI ranks, and after a restart from a checkpoint.

EMPIC_TEST_BACKEND=cuda (tools/gpu-test) runs the same decks on the GPU."""

import csv
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")
DECKS = os.path.join(ROOT, "tests", "balance")
BACKEND = os.environ.get("EMPIC_TEST_BACKEND", "cpu")
EMPIC_CMD = os.environ.get("EMPIC_TEST_EMPIC", EMPIC).split()
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")


def run(deck, out, args=(), threads=1, ranks=None, more="", edits=()):
    """bin/empic on tests/balance/deck into out (the deck text `more` added to its
    diagnostics, each (old, new) of edits replaced, parallel.ranks = ranks); returns the rows
    of energy.csv."""
    text = open(os.path.join(DECKS, deck)).read().replace("diagnostics = {",
                                                          "diagnostics = {\n" + more)
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    n = 1
    if ranks:
        text = re.sub(r"^(simulation = .*)$", r"\1\nparallel = { ranks = [%d, %d]; };" % ranks,
                      text, count=1, flags=re.M)
        n = ranks[0] * ranks[1]
    path = out.parent / (out.name + ".cfg")
    path.write_text(text)
    launch = []
    if n > 1:
        mpirun = os.environ.get("EMPIC_TEST_MPIRUN") or shutil.which("mpirun")
        built = subprocess.run(EMPIC_CMD + ["--version"], capture_output=True, text=True).stdout
        if not mpirun or ", no MPI" in built:
            pytest.skip("no MPI")
        launch = [mpirun, "-np", str(n)]
    res = subprocess.run(launch + EMPIC_CMD + ["--backend", BACKEND, "--quiet", "--overwrite",
                                               "--output", str(out), *args, str(path)],
                         capture_output=True, text=True, timeout=600,
                         env=dict(ENV, OMP_NUM_THREADS=str(threads)))
    assert res.returncode == 0, res.stdout + res.stderr
    return rows(out)


def rows(out):
    with open(out / "energy.csv") as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


def closure(r):
    """The largest |balance - balance at step 0| over the rows, relative to the laser energy
    put in by the end."""
    b0, ein = r[0]["balance"], r[-1]["in"]
    assert ein > 0
    return max(abs(x["balance"] - b0) for x in r) / ein


def check_sum(r):
    """balance is the sum the header names."""
    for x in r:
        kin = sum(v for k, v in x.items() if k.startswith("kinetic_"))
        out = sum(v for k, v in x.items() if k.startswith("out_"))
        lost = sum(v for k, v in x.items() if k.startswith("lost_"))
        want = (x["field_E"] + x["field_B"] + kin - x["field_layers"] - x["field_stagger"] +
                out + lost - x["in"])
        assert x["balance"] == pytest.approx(want, rel=1e-9, abs=1e-9 * max(1.0, x["in"]))


def test_vacuum(tmp_path):
    r = run("laser-vacuum.cfg", tmp_path / "vacuum")
    check_sum(r)
    assert closure(r) < 1e-5
    last = r[-1]
    # the pulse has left through xmax: what came in went out
    assert last["field_E"] + last["field_B"] < 1e-6 * last["in"]
    assert last["out_xmax"] == pytest.approx(last["in"], rel=1e-3)
    assert abs(last["out_xmin"]) < 1e-3 * last["in"]


@pytest.mark.parametrize("side", ["ymin", "ymax"])
def test_vacuum_y(tmp_path, side):
    """The same with the beam along y (from ymin or ymax), Mur sides along y, a square box."""
    r = run("laser-vacuum.cfg", tmp_path / side, edits=[
        ("cells = [400, 128]; dx = [0.05, 0.1]", "cells = [128, 256]; dx = [0.05, 0.05]"),
        ("dt = 0.04; tmax = 36.0", "dt = 0.03; tmax = 24.0"),
        ('ymin = "pml"; ymax = "pml"', 'ymin = "mur"; ymax = "mur"'),
        ("focus = 10.0; center = 6.4", "focus = 5.0; center = 3.2"),
        ('boundary = "xmin"', 'boundary = "%s"' % side)])
    check_sum(r)
    assert closure(r) < 1e-5
    last = r[-1]
    far = "out_ymax" if side == "ymin" else "out_ymin"
    assert last[far] > 0.9 * last["in"]


def test_slab(tmp_path):
    r = run("laser-slab.cfg", tmp_path / "slab")
    check_sum(r)
    assert closure(r) < 1e-3
    last = r[-1]
    assert last["out_xmin"] > 0.3 * last["in"]   # reflected back out through the PML
    assert last["lost_electrons"] > 0.01 * last["in"]  # hot electrons through the walls
    assert last["out_ymin"] > 0 and last["out_ymax"] > 0  # through the Mur sides


CKPT = "checkpoint = { every = 200; };"


@pytest.fixture(scope="module")
def window(tmp_path_factory):
    """The window deck on one thread: its output folder."""
    out = tmp_path_factory.mktemp("window") / "one"
    run("window.cfg", out, more=CKPT)
    return out


def test_window(window):
    r = rows(window)
    check_sum(r)
    assert closure(r) < 1e-3
    assert r[-1]["lost_electrons"] != 0


def test_window_threads(window, tmp_path):
    run("window.cfg", tmp_path / "two", threads=2, more=CKPT)
    assert (window / "energy.csv").read_bytes() == (tmp_path / "two" / "energy.csv").read_bytes()


def test_window_ranks(window, tmp_path):
    run("window.cfg", tmp_path / "ranks", ranks=(2, 1), more=CKPT)
    assert (window / "energy.csv").read_bytes() == (tmp_path / "ranks" / "energy.csv").read_bytes()


def test_window_restart(window, tmp_path):
    """A run stopped at step 400 (its checkpoint) and restarted gives the straight run's
    energy.csv, the cumulative sums included."""
    out = tmp_path / "cut"
    run("window.cfg", out, args=("--steps", "400"), more=CKPT)
    res = subprocess.run(EMPIC_CMD + ["--backend", BACKEND, "--quiet", "--restart", str(out),
                                      "--steps", "750"],
                         capture_output=True, text=True, timeout=600, env=ENV)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (window / "energy.csv").read_bytes() == (out / "energy.csv").read_bytes()
