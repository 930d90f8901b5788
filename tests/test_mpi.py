"""MPI domain decomposition (docs/design.md §12): the same deck on 1, 2 and 4 CPU ranks, split
along x, along y and both, gives bitwise-identical energy.csv and dumps (fields, particles
with their counts per cluster, tracks, phase spaces, field probes), for a periodic warm
plasma, a laser deck with PML, filter, walls and the moving window (also with PML layers
that span two ranks, on 8 ranks), a laser from ymin with Mur sides, a converging flow, and
a laser that ionizes a nitrogen gas (its electrons, charge states and their draws); a checkpoint written by
2 ranks continues on 4 ranks and on 1 exactly as the straight run. Several ranks share the two
cores of the test machine (oversubscribed, one OpenMP thread each).

The ranks write every dump and checkpoint together, each its share (h5par.h): 1, 2 and 4 ranks
write the same checkpoints too (but their timers and segment layouts), the dumps pass the
openPMD validator, each rank count's checkpoint continues on 1, 2 and 4 ranks bitwise; rank 0
peaks within 25 % of the other ranks' memory on a run of 2.6 M particles with full dumps and
checkpoints; a checkpoint with a flipped byte is refused by the ranks reading it together,
which continue from the one before.

On the GPU machine (tools/gpu-test --on-device) the same tests run the CUDA backend on ranks
that share its GPU: EMPIC_TEST_BACKEND=cuda, EMPIC_TEST_EMPIC (the command that runs the
bundled binary) and EMPIC_TEST_MPIRUN (the bundled mpirun)."""

import json
import os
import re
import shutil
import subprocess

import pytest

from runs import contents, empic, validate

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


# checkpoint datasets that are not the run's state: rank 0's timers, and the segment layout
# of the ranks that wrote it (one rank keeps its own; several, the layout a one-rank restart
# makes for the counts)
CKPT_LOCAL = {"wall_s", "phase_s", "alloc", "start", "cap", "peak", "rearrangements"}


def state(path):
    """runs.contents of a file, a checkpoint's without its CKPT_LOCAL datasets."""
    out = contents(path)
    if os.path.basename(os.path.dirname(path)) == "checkpoint":
        out = {k: v for k, v in out.items() if k.split("/")[-1] not in CKPT_LOCAL}
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
            ca, cb = state(a / sub / name), state(b / sub / name)
            bad = [k for k in set(ca) | set(cb) if ca.get(k) != cb.get(k)]
            assert not bad, "%s/%s differs in %s" % (sub, name, sorted(bad)[:6])
            n += 1
    assert n > 0


@pytest.mark.parametrize("deck,splits", [
    ("warm.cfg", SPLITS[1:]), ("laser.cfg", SPLITS[1:]), ("converge.cfg", SPLITS[1:]),
    ("pml-thick.cfg", [(8, 1)]), ("mur-ylaser.cfg", [(2, 2), (1, 4)]),
    ("mur-yedges.cfg", [(2, 1), (4, 1)]),
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


# ---- every rank writes its share of each file (docs/design.md §12) ----

FILES = ("data", "tracks", "phasespace", "probes", "checkpoint")
SHARED_MORE = """checkpoint = { every = 30; };
  tracks = { every = 15; fraction = 0.2; species = ["electrons", "positrons"]; };
  phasespace = ( { species = "positrons"; axes = ["x", "ux"]; bins = [16, 12]; every = 20; } );
  probes = ( { name = "p"; at = [3.2, 2.4]; fields = ["Ey", "Bz", "rho"]; every = 4; } );
  fields_avg = { every = 40; steps = 20; quantities = ["E", "B", "J", "rho", "E2", "B2"]; };"""


def cut_after(run_dir, step):
    """A run folder as a run stopped at `step` left it, less its checkpoints after step (the
    files a restart appends to it trims itself)."""
    pat = re.compile(r"^(data|ps|ckpt)(\d{8})\.(h5|xmf)$")
    for sub in ("data", "phasespace", "checkpoint"):
        for name in os.listdir(run_dir / sub):
            m = pat.match(name)
            if m and int(m.group(2)) > step:
                os.remove(run_dir / sub / name)


def test_shared_files_bitwise_and_restarts(tmp_path):
    """1, 2 and 4 ranks (split as empic chooses, the output folder named alike so that the stored
    decks match) write bitwise the same files; the 4-rank dumps pass the openPMD validator; each
    run's checkpoint at step 30 (inside the window of the averaged dump at 40: it holds the
    sums) continues on 1, 2 and 4 ranks as the straight one-rank run."""
    mpirun()
    text = open(os.path.join(DECKS, "warm.cfg")).read().replace(
        "diagnostics = {", "diagnostics = {\n" + SHARED_MORE)
    deck = tmp_path / "deck.cfg"
    deck.write_text(text)
    runs = {}
    for n in (1, 2, 4):
        (tmp_path / ("n%d" % n)).mkdir()
        empic("--overwrite", "--output", "run", str(deck), ranks=n, cwd=tmp_path / ("n%d" % n))
        runs[n] = tmp_path / ("n%d" % n) / "run"
    for n in (2, 4):
        assert_same(runs[1], runs[n], FILES)
    for sub in ("data", "tracks", "phasespace"):
        for name in sorted(os.listdir(runs[4] / sub)):
            if name.endswith(".h5"):
                validate(runs[4] / sub / name)
    for n in (1, 2, 4):      # the ranks that wrote the checkpoint
        for m in (1, 2, 4):  # those that continue it
            d = tmp_path / ("r%d_%d" % (n, m))
            shutil.copytree(runs[n], d / "run")
            cut_after(d / "run", 30)
            empic("--restart", "run", ranks=m, cwd=d)
            assert_same(runs[1], d / "run", FILES)


BIG = """
simulation = { name = "big"; backend = "cpu"; seed = 5; };
grid = { cells = [512, 256]; dx = [0.1, 0.1]; cluster = [16, 16]; };
time = { dt = 0.05; steps = 6; };
species = ( { name = "e"; charge = -1.0; ppc = [4, 4]; momentum = { thermal = [0.1, 0.1, 0.1]; }; },
            { name = "p"; charge = 1.0; ppc = [2, 2]; momentum = { thermal = [0.05, 0.05, 0.05]; }; } );
diagnostics = { energy = { every = 3; }; checkpoint = { every = 3; }; fields = { every = 3; };
                particles = { every = 3; fraction = 1.0; }; };
"""


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """4 ranks, 2.6 M particles, a full dump and a checkpoint every 3 steps: the run folder."""
    mpirun()
    tmp = tmp_path_factory.mktemp("big")
    (tmp / "big.cfg").write_text(BIG)
    empic("--output", "run", "big.cfg", ranks=4, cwd=tmp)
    return tmp / "run"


def test_rank0_holds_its_share_only(big):
    """Rank 0 writes its share of each dump and checkpoint like the others, gathering none:
    its peak resident memory (timing.json, before the end-of-run bandwidth probe) is within
    25 % of the other ranks' (gathered, the run's 2.6 M particles alone would double it)."""
    with open(big / "timing.json") as fh:
        rss = json.load(fh)["peak_rss_bytes"]
    print("peak RSS: rank 0 %.1f MiB, others %.1f-%.1f MiB" % (
        rss["rank0"] / 2**20, rss["others_min"] / 2**20, rss["others_max"] / 2**20))
    assert abs(rss["rank0"] / rss["others_max"] - 1) < 0.25, rss


def test_damaged_checkpoint_falls_back(big, tmp_path):
    """A byte flipped three quarters into the newest checkpoint (a block that rank 3 of 4
    hashes): the 4 ranks refuse it together and continue from the one before, to the same
    end."""
    d = tmp_path / "run"
    shutil.copytree(big, d)
    newest = d / "checkpoint" / "ckpt00000006.h5"
    with open(newest, "r+b") as fh:
        fh.seek(os.path.getsize(newest) * 3 // 4)
        b = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([b[0] ^ 0x10]))
    res = empic("--restart", "run", "--steps", "6", ranks=4, cwd=tmp_path)
    assert "ckpt00000006.h5: --restart: skipping this file" in res.stderr, res.stderr
    assert res.stderr.count("skipping this file") == 1  # said once, by rank 0
    assert (d / "energy.csv").read_bytes() == (big / "energy.csv").read_bytes()
    a, b = contents(big / "data" / "data00000006.h5"), contents(d / "data" / "data00000006.h5")
    assert a == b
