"""Dynamic load balancing (parallel.balance, docs/design.md §12): the rank borders move by
whole cluster pairs when the ranks' particle loads drift apart, and the state moves to its
new owners, so results stay bitwise those of one rank (docs/design.md §13).

- A laser on a thin foil (tests/mpi/foil.cfg) that lies in one quarter of the 2 x 2 split for
  the grid: balanced and not, on 4 ranks, the same energy.csv, dumps, tracks, phase spaces,
  probes and checkpoints as one rank; the first rebalance, at the start (on the host, before
  the backend opens), leaves the busiest rank at most 1 + threshold times the least loaded
  one's particles (timing.json, the run log).
- A checkpoint written after a rebalance continues on 4 and on 2 ranks as the straight run.
- The moving window (tests/mpi/laser.cfg, with averaged fields added) shifts the plasma
  across the ranks, which rebalance several times during the run, some inside an averaging
  window: bitwise the one-rank run, on 2 x 2 and 4 x 1 ranks.
- A rebalance that a rank lacks the memory for is refused with a warning, the run going on
  with the old split (three ranks of four given a tiny EMPIC_MEMORY_LIMIT).
- Bad keys are deck errors that name them; --check says how the run balances.
Several ranks share the two cores of the test machine (oversubscribed, one OpenMP thread
each)."""

import json
import os
import re
import shutil
import subprocess

import pytest

from runs import ENV, EMPIC_CMD, BACKEND, contents, has_mpi, need_empic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DECKS = os.path.join(ROOT, "tests", "mpi")
BALANCE = "balance = { every = %d; threshold = %g; };"
# checkpoint datasets that are not the run's state (test_mpi.py's CKPT_LOCAL), and the deck
# text, which holds the parallel group the runs differ in
CKPT_LOCAL = {"wall_s", "phase_s", "alloc", "start", "cap", "peak", "rearrangements", "deck"}


def mpirun():
    need_empic()
    path = os.environ.get("EMPIC_TEST_MPIRUN") or shutil.which("mpirun")
    assert path, "mpirun is missing: tools/install-deps installs OpenMPI (make does)"
    if not has_mpi():
        pytest.skip("bin/empic was built with MPI=0")
    return path


def deck(tmp, name, src, ranks=None, balance=None):
    """tests/mpi/src with parallel.ranks and parallel.balance = (every, threshold) when given,
    written as tmp/name.cfg."""
    text = open(os.path.join(DECKS, src)).read()
    par = ("ranks = [%d, %d]; " % ranks if ranks else "") + (BALANCE % balance if balance
                                                             else "")
    if par:
        text = re.sub(r"^(simulation = .*)$", r"\1\nparallel = { %s };" % par, text, count=1,
                      flags=re.M)
    path = tmp / (name + ".cfg")
    path.write_text(text)
    return path


def run(path, out, ranks=1, args=(), quiet=True, env=None):
    """bin/empic on a deck into folder out on `ranks` ranks (a list of (ranks, environment)
    pairs runs one program per group); returns the result."""
    base = EMPIC_CMD + ["--backend", BACKEND] + (["--quiet"] if quiet else []) + [*args]
    if "--restart" not in args:
        base += ["--overwrite", "--output", str(out), str(path)]
    if isinstance(ranks, list):
        cmd = [mpirun()]
        for k, (n, extra) in enumerate(ranks):
            cmd += ([":"] if k else []) + ["-np", str(n), "env"] + [
                "%s=%s" % kv for kv in extra.items()] + base
    else:
        cmd = ([mpirun(), "-np", str(ranks)] if ranks > 1 else []) + base
    res = subprocess.run(cmd, capture_output=True, text=True, env=env or ENV, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return res


def state(path):
    out = contents(path)
    if os.path.basename(os.path.dirname(path)) == "checkpoint":
        out = {k: v for k, v in out.items() if k.split("/")[-1] not in CKPT_LOCAL}
    return out


def assert_same(a, b, more_ok=False):
    """Run folder b holds a's energy.csv and every file of its dumps, probes and
    checkpoints, bit for bit (b may hold more when more_ok: a restart's stop)."""
    assert (a / "energy.csv").read_bytes() == (b / "energy.csv").read_bytes()
    n = 0
    for sub in ("data", "tracks", "phasespace", "probes", "checkpoint"):
        if not (a / sub).is_dir():
            continue
        names = sorted(x for x in os.listdir(a / sub) if x.endswith(".h5"))
        assert more_ok or names == sorted(x for x in os.listdir(b / sub) if x.endswith(".h5"))
        for name in names:
            ca, cb = state(a / sub / name), state(b / sub / name)
            bad = [k for k in set(ca) | set(cb) if ca.get(k) != cb.get(k)]
            assert not bad, "%s/%s differs in %s" % (sub, name, sorted(bad)[:6])
            n += 1
    assert n > 0


def timing(out):
    with open(out / "timing.json") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def foil(tmp_path_factory):
    """The foil deck on one rank, and on 2 x 2 ranks balanced (every 50 steps, threshold 0.1,
    its log kept) and not: the three run folders and the balanced run's stdout."""
    mpirun()
    tmp = tmp_path_factory.mktemp("foil")
    one = tmp / "one"
    run(deck(tmp, "one", "foil.cfg"), one)
    fixed = tmp / "fixed"
    run(deck(tmp, "fixed", "foil.cfg", (2, 2)), fixed, 4)
    bal = tmp / "bal"
    log = run(deck(tmp, "bal", "foil.cfg", (2, 2), (50, 0.1)), bal, 4, quiet=False).stdout
    return one, fixed, bal, log


def test_foil_balanced_bitwise_and_even(foil):
    one, fixed, bal, log = foil
    assert_same(one, fixed)
    assert_same(one, bal)
    t, f = timing(bal), timing(fixed)
    assert t["balance"] == {"every": 50, "threshold": 0.1} and f["balance"] is None
    assert t["rebalances_refused"] == 0 and f["rebalances"] == []
    first = t["rebalances"][0]
    print("rebalances:", t["rebalances"], "fixed split:", f["rank_particles"])
    # balanced from the start (on the host, before the backend opens): the foil lies on one
    # rank of the split for the grid; then on all four, evenly
    assert first["step"] == 0
    assert first["before"]["max"] > 3 * first["after"]["max"]
    assert first["after"]["max"] <= 1.1 * first["after"]["min"]
    assert first["x"] == [0, 80, 128] and first["y"] == [0, 48, 64]
    assert f["rank_particles"]["max"] > 3 * t["rank_particles"]["max"]
    assert re.search(r"step 0: ranks rebalanced: mobile particles per rank \d+ to %d, now "
                     r"%d to %d; borders at cells x = 0 80 128, y = 0 48 64" % (
                         first["before"]["max"], first["after"]["min"],
                         first["after"]["max"]), log), log


def test_restart_after_rebalance(foil, tmp_path):
    """The balanced run's checkpoint at step 100 (after the rebalance at 0) continued on 4
    ranks (balanced again at once) and on 2 ranks: the straight run, bit for bit."""
    one, _, bal, _ = foil
    for n in (4, 2):
        d = tmp_path / ("r%d" % n)
        shutil.copytree(bal, d)
        for sub in ("data", "phasespace", "checkpoint"):  # what a stop at step 100 leaves
            for name in os.listdir(d / sub):
                m = re.match(r"^(data|ps|ckpt)(\d{8})\.(h5|xmf)$", name)
                if m and int(m.group(2)) > 100:
                    os.remove(d / sub / name)
        res = run(None, d, n, ("--restart", str(d)), quiet=False)
        assert "restarting from" in res.stdout
        if n == 4:
            assert "step 100: ranks rebalanced" in res.stdout, res.stdout
            assert timing(d)["rebalances"][0]["step"] == 100
        assert_same(one, d)


@pytest.mark.parametrize("split", [(2, 2), (4, 1)])
def test_moving_window_balanced(tmp_path, split):
    """The laser deck with the moving window and averaged fields over steps 41-100 and
    141-200: the plasma moves through the ranks, which rebalance every few tens of steps,
    during the averaging windows too; bitwise the one-rank run."""
    mpirun()
    avg = 'fields_avg = { every = 100; steps = 60; quantities = ["E", "J", "rho", "E2"]; };'
    paths = []
    for name, args in (("one", ()), ("bal", (split, (20, 0.05)))):
        path = deck(tmp_path, name, "laser.cfg", *args)
        path.write_text(re.sub(r"^(  checkpoint = .*)$", r"\1\n  " + avg, path.read_text(),
                               count=1, flags=re.M))
        paths.append(path)
    one, bal = tmp_path / "one", tmp_path / "bal"
    run(paths[0], one)
    run(paths[1], bal, 4)
    steps = [e["step"] for e in timing(bal)["rebalances"]]
    print("rebalanced after steps", steps)
    assert len(steps) >= 2 and steps[-1] > 100
    assert any(41 <= k < 100 or 141 <= k < 200 for k in steps), steps
    assert sorted(os.listdir(one / "data")) == sorted(os.listdir(bal / "data"))
    assert "E_avg" in str(contents(one / "data" / "data00000200.h5").keys())
    assert_same(one, bal)


def test_refused_for_memory(foil, tmp_path):
    """Ranks 1-3 told that 100 kB are available: the rebalance is refused with a warning that
    names rank 1, the borders stay, and the run is the same."""
    one, _, _, _ = foil
    out = tmp_path / "run"
    path = deck(tmp_path, "bal", "foil.cfg", (2, 2), (50, 0.1))
    res = run(path, out, [(1, {}), (3, {"EMPIC_MEMORY_LIMIT": "100000"})])
    assert res.stderr.count("the ranks keep their borders") == 1, res.stderr
    assert "step 0: the ranks keep their borders: rank 1 would need" in res.stderr
    t = timing(out)
    assert t["rebalances"] == [] and t["rebalances_refused"] == 4
    assert_same(one, out)


def test_bad_keys_and_check(tmp_path):
    need_empic()
    bad = {"every = 0;": "parallel.balance.every: got 0; expected the steps between two "
                         "load checks, an integer >= 1",
           "threshold = 0.1;": "parallel.balance.every: missing",
           "every = 10; threshold = 0;": "parallel.balance.threshold: got 0; expected the "
                                         "imbalance allowed, a number > 0",
           "every = 10; treshold = 0.2;": "did you mean 'threshold'?"}
    src = open(os.path.join(DECKS, "foil.cfg")).read()
    for keys, want in bad.items():
        path = tmp_path / "bad.cfg"
        path.write_text("parallel = { balance = { %s }; };\n" % keys + src)
        res = subprocess.run(EMPIC_CMD + ["--check", str(path)], capture_output=True,
                             text=True, env=ENV, timeout=60)
        assert res.returncode != 0 and want in res.stderr, res.stderr
    path = deck(tmp_path, "good", "foil.cfg", balance=(100, 0.2))
    res = subprocess.run(EMPIC_CMD + ["--check", str(path)], capture_output=True, text=True,
                         env=ENV, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "parallel = { balance = { every = 100; threshold = 0.2; }; };" in res.stdout
    assert "# load balancing: every 100 steps, when the busiest rank holds more than 1.2 " \
           "times the mean" in res.stdout
    res = subprocess.run(EMPIC_CMD + ["--check", os.path.join(DECKS, "foil.cfg")],
                         capture_output=True, text=True, env=ENV, timeout=60)
    assert "# load balancing: off (parallel.balance)" in res.stdout
