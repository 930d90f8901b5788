"""MPI domain decomposition (docs/design.md §12): the same deck on 1, 2 and 4 CPU ranks, split
along x, along y and both, gives bitwise-identical energy.csv and dumps (fields, particles
with their counts per cluster, tracks, phase spaces, field probes), for a periodic warm
plasma, a laser deck with PML, filter, walls and the moving window (also with PML layers
that span two ranks, on 8 ranks), a laser from ymin with Mur sides, a converging flow, and
a laser that ionizes a nitrogen gas (its electrons, charge states and their draws); a checkpoint written by
2 ranks continues on 4 ranks and on 1 exactly as the straight run. Several ranks share the two
cores of the test machine (oversubscribed, one OpenMP thread each).

On the GPU machine (tools/gpu-test --on-device) the same tests run the CUDA backend on ranks
that share its GPU: EMPIC_TEST_BACKEND=cuda, EMPIC_TEST_EMPIC (the command that runs the
bundled binary) and EMPIC_TEST_MPIRUN (the bundled mpirun)."""

import os
import re
import shutil
import subprocess

import pytest

from runs import contents

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")
DECKS = os.path.join(ROOT, "tests", "mpi")
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
SPLITS = [(1, 1), (2, 1), (1, 2), (2, 2), (4, 1)]
BACKEND = os.environ.get("EMPIC_TEST_BACKEND", "cpu")
EMPIC_CMD = os.environ.get("EMPIC_TEST_EMPIC", EMPIC).split()


def mpirun():
    path = os.environ.get("EMPIC_TEST_MPIRUN") or shutil.which("mpirun")
    assert path, "mpirun is missing: tools/install-deps installs OpenMPI (make does)"
    built = subprocess.run(EMPIC_CMD + ["--version"], capture_output=True, text=True).stdout
    if ", no MPI" in built:
        pytest.skip("bin/empic was built with MPI=0")
    return path


def run(deck, out, ranks=None, args=(), more=""):
    """bin/empic on deck (with parallel.ranks = ranks, and the deck text `more` added to its
    diagnostics) into out; returns the output folder."""
    text = open(os.path.join(DECKS, deck)).read().replace("diagnostics = {",
                                                          "diagnostics = {\n" + more)
    if ranks:
        text = re.sub(r"^(simulation = .*)$", r"\1\nparallel = { ranks = [%d, %d]; };" % ranks,
                      text, count=1, flags=re.M)
    path = out.parent / (out.name + ".cfg")
    path.write_text(text)
    n = ranks[0] * ranks[1] if ranks else 1
    cmd = ([mpirun(), "-np", str(n)] if n > 1 else []) + EMPIC_CMD + [
        "--backend", BACKEND, "--quiet", "--overwrite", "--output", str(out), *args, str(path)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return out


def assert_same(a, b, folders=("data", "tracks", "phasespace", "probes"), more_ok=False):
    """Run folder b holds exactly what a holds: energy.csv and every dump, bit for bit (and
    no other dump unless more_ok: a run stopped early writes its final dumps there)."""
    assert (a / "energy.csv").read_bytes() == (b / "energy.csv").read_bytes()
    n = 0
    for sub in folders:
        if not (a / sub).is_dir():
            continue
        names = sorted(os.listdir(a / sub))
        assert set(names) <= set(os.listdir(b / sub)), sub
        assert more_ok or len(names) == len(os.listdir(b / sub)), sub
        for name in names:
            if not name.endswith(".h5"):  # XDMF descriptions
                assert (a / sub / name).read_bytes() == (b / sub / name).read_bytes(), name
                continue
            ca, cb = contents(a / sub / name), contents(b / sub / name)
            bad = [k for k in set(ca) | set(cb) if ca.get(k) != cb.get(k)]
            assert not bad, "%s/%s differs in %s" % (sub, name, sorted(bad)[:6])
            n += 1
    assert n > 0


@pytest.mark.parametrize("deck,splits", [
    ("warm.cfg", SPLITS[1:]), ("laser.cfg", SPLITS[1:]), ("converge.cfg", SPLITS[1:]),
    ("pml-thick.cfg", [(8, 1)]), ("mur-ylaser.cfg", [(2, 2), (1, 4)]),
    ("collide.cfg", [(2, 1), (2, 2)]), ("ionize.cfg", [(2, 1), (2, 2)]),
    ("window-nofilter.cfg", [(4, 1)])])
def test_ranks_bitwise(tmp_path, deck, splits):
    one = run(deck, tmp_path / "r1")
    for split in splits:
        assert_same(one, run(deck, tmp_path / ("r%dx%d" % split), split))


# (deck, its steps, the checkpoint): the laser deck, with PML memories spanning ranks and the
# window, and with ionization; on GPU ranks the converging flow too. Each rank reads its own
# share.
RESTARTS = [("laser.cfg", 300, 150), ("pml-thick.cfg", 300, 150), ("ionize.cfg", 300, 150)] + (
    [("converge.cfg", 120, 60)] if BACKEND != "cpu" else [])


@pytest.mark.parametrize("deck,steps,every", RESTARTS)
def test_restart_on_other_rank_counts(tmp_path, deck, steps, every):
    more = "checkpoint = { every = %d; };" % every if "checkpoint" not in open(
        os.path.join(DECKS, deck)).read() else ""
    straight = run(deck, tmp_path / "straight", more=more)
    for n, split in ((4, (4, 1)), (1, None)):
        half = run(deck, tmp_path / ("half%d" % n), (2, 1), ("--steps", str(every)), more)
        assert (half / "checkpoint" / ("ckpt%08d.h5" % every)).is_file()
        cmd = ([mpirun(), "-np", str(n)] if n > 1 else []) + EMPIC_CMD + [
            "--backend", BACKEND, "--quiet", "--restart", str(half), "--steps", str(steps)]
        res = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
        assert_same(straight, half, more_ok=True)  # + the dumps at the stop


def test_impossible_split_is_a_deck_error(tmp_path):
    deck = tmp_path / "bad.cfg"
    deck.write_text(open(os.path.join(DECKS, "warm.cfg")).read().replace(
        'simulation = {', 'parallel = { ranks = [3, 1]; };\nsimulation = {'))
    res = subprocess.run([mpirun(), "-np", "2", *EMPIC_CMD, "--quiet", "--output",
                          str(tmp_path / "o"), str(deck)], capture_output=True, text=True,
                         env=ENV, timeout=120)
    assert res.returncode != 0
    assert "parallel.ranks = [3, 1] needs 3 MPI ranks; the run has 2" in res.stderr
    assert res.stderr.count("needs 3 MPI ranks") == 1  # said once, by rank 0
    deck.write_text(deck.read_text().replace("ranks = [3, 1]", "ranks = [5, 1]"))
    res = subprocess.run([mpirun(), "-np", "5", *EMPIC_CMD, "--quiet", "--output",
                          str(tmp_path / "o"), str(deck)], capture_output=True, text=True,
                         env=ENV, timeout=120)
    assert res.returncode != 0 and "5 x 1 ranks cannot split 8 x 6 clusters" in res.stderr
