"""A run with checkpoints on ends with one after its last step, also when the last step is
not a multiple of checkpoint.every, so that `--restart DIR --steps M` extends any finished
run: the continuation is bitwise the straight run of M steps (energy.csv and every dump
after the first run's end). Without --steps a finished run has nothing to do."""

import filecmp
import glob
import os
import shutil
import subprocess

import h5py
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")

DECK = """
simulation = {{ name = "ext"; backend = "cpu"; seed = 5; }};
grid = {{ cells = [32, 32]; dx = [0.1, 0.1]; cluster = [8, 8]; }};
time = {{ dt = 0.05; steps = 50; }};
species = (
  {{ name = "e"; charge = -1.0; ppc = [2, 2];
    momentum = {{ thermal = [0.05, 0.05, 0.05]; drift = [0.0, 0.0, 0.3]; }}; }},
  {{ name = "ions"; charge = 1.0; mass = 1836.0; ppc = [1, 1]; immobile = true; }} );
diagnostics = {{ output = "{out}"; energy = {{ every = 5; }}; fields = {{ every = 30; }};
                particles = {{ every = 30; fraction = 0.5; }}; checkpoint = {{ every = 20; }}; }};
"""


def empic(*args):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    env = dict(os.environ, OMP_NUM_THREADS="2")
    res = subprocess.run([EMPIC, "--quiet"] + list(args), capture_output=True, text=True,
                         env=env, timeout=120)
    return res


def datasets(path):
    out = {}
    with h5py.File(path) as f:
        f.visititems(lambda k, o: out.__setitem__(k, o[()].tobytes())
                     if isinstance(o, h5py.Dataset) else None)
    return out


def test_restart_with_more_steps_extends_a_finished_run(tmp_path):
    deck = tmp_path / "ext.cfg"
    deck.write_text(DECK.format(out=tmp_path / "unused"))
    run, straight = tmp_path / "run", tmp_path / "straight"
    assert empic("--output", str(run), str(deck)).returncode == 0
    # checkpoints at 40 (every 20) and 50 (the last step)
    ckpts = sorted(os.path.basename(p) for p in glob.glob(str(run / "checkpoint" / "*.h5")))
    assert ckpts == ["ckpt00000040.h5", "ckpt00000050.h5"], ckpts

    # a finished run restarted as it is: nothing to do, nothing rewritten
    shutil.copytree(run, tmp_path / "run0")
    res = empic("--restart", str(run))
    assert res.returncode == 0 and "nothing to do: the checkpoint" in res.stdout, res.stdout
    assert "is at step 50, the run's last step is 50" in res.stdout
    cmp = filecmp.dircmp(run, tmp_path / "run0")
    assert not cmp.diff_files and not cmp.left_only and not cmp.right_only

    # extended to 75 steps: as the straight run of 75
    res = empic("--restart", str(run), "--steps", "75")
    assert res.returncode == 0, res.stderr
    assert empic("--steps", "75", "--output", str(straight), str(deck)).returncode == 0
    a, b = (open(d / "energy.csv").read() for d in (run, straight))
    assert a == b and a.splitlines()[-1].startswith("70,")
    for sub in ("data/data00000060.h5", "data/data00000075.h5"):
        da, db = datasets(run / sub), datasets(straight / sub)
        assert da.keys() == db.keys() and len(da) > 10, sub
        assert [k for k in da if da[k] != db[k]] == [], sub
    ckpts = sorted(os.path.basename(p) for p in glob.glob(str(run / "checkpoint" / "*.h5")))
    assert ckpts == ["ckpt00000060.h5", "ckpt00000075.h5"], ckpts
