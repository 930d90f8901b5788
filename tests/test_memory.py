"""The memory estimate of `empic --check` against the peak resident memory of the run.

A run of 2.6 M particles with a field dump and a checkpoint (the two largest passing needs)
must peak within 20 % of the host memory `--check` announces, on one rank and, per rank, on
four; `--check` must also show the memory available and refuse a deck that needs more
(EMPIC_MEMORY_LIMIT), naming the ranks of the node.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")

DECK = """
simulation = {{ name = "mem"; backend = "cpu"; seed = 4; }};
grid = {{ cells = [512, 512]; dx = [0.1, 0.1]; cluster = [16, 16]; }};
time = {{ dt = 0.05; steps = 10; }};
species = ( {{ name = "e"; charge = -1.0; ppc = [3, 3];
               momentum = {{ thermal = [0.1, 0.1, 0.1]; }}; }},
            {{ name = "i"; charge = 1.0; ppc = [1, 1]; immobile = true; }} );
diagnostics = {{ output = "{out}"; energy = {{ every = 5; }}; checkpoint = {{ every = 10; }};
                fields = {{ every = 10; }}; }};
"""

# peak RSS (KiB) of the command, measured in a fresh interpreter so that no other child counts
PEAK = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]).returncode; "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r)")


def host_mib(check_stdout):
    m = re.search(r"# memory: .*host ([0-9.]+) MiB .*, ([0-9.]+) MiB available", check_stdout)
    assert m, check_stdout
    return float(m.group(1)), float(m.group(2))


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    tmp = tmp_path_factory.mktemp("memory")
    path = tmp / "mem.cfg"
    path.write_text(DECK.format(out=tmp / "out"))
    return path


def test_estimate_matches_peak_rss(deck):
    chk = subprocess.run([EMPIC, "--check", str(deck)], capture_output=True, text=True)
    assert chk.returncode == 0, chk.stderr
    need, avail = host_mib(chk.stdout)
    assert avail > 0
    env = dict(os.environ, OMP_NUM_THREADS="2")
    res = subprocess.run([sys.executable, "-c", PEAK, EMPIC, "--quiet", str(deck)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr
    peak = int(res.stdout.split()[-1]) / 1024.0
    print("estimate %.1f MiB, peak RSS %.1f MiB (%+.1f %%)" % (need, peak, 100 * (need / peak - 1)))
    assert abs(need / peak - 1) < 0.2


def test_check_refuses_what_does_not_fit(deck):
    env = dict(os.environ, EMPIC_MEMORY_LIMIT="1e8")
    chk = subprocess.run([EMPIC, "--check", str(deck)], capture_output=True, text=True, env=env)
    assert chk.returncode == 1
    assert re.search(r"needs about [0-9.]+ GiB of host memory .* but 0.09 GiB are available "
                     r"\(EMPIC_MEMORY_LIMIT\)", chk.stderr), chk.stderr


def test_ranks_on_one_node_add_up(deck):
    """Four ranks on one node: each holds its share of the fields and particles and writes its
    share of each dump and checkpoint, so `--check` gives a rank's figure (well below the
    one-rank run's) and the node's: four of them, with rank 0's end-of-run bandwidth probe; a
    rank's peak RSS matches its figure within 20 %; a limit under the node's figure refuses
    the four ranks and names them."""
    mpirun = shutil.which("mpirun")
    built = subprocess.run([EMPIC, "--version"], capture_output=True, text=True).stdout
    if not mpirun or ", no MPI" in built:
        pytest.skip("no MPI")
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    one, _ = host_mib(subprocess.run([EMPIC, "--check", str(deck)], capture_output=True,
                                     text=True).stdout)
    chk = subprocess.run([mpirun, "-np", "4", EMPIC, "--check", str(deck)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert chk.returncode == 0, chk.stderr
    m = re.search(r"on rank 0's node \(4 of 4 ranks, ([0-9.]+) MiB each\)", chk.stdout)
    assert m, chk.stdout
    each = float(m.group(1))
    node, _ = host_mib(chk.stdout)
    probe = re.search(r"([0-9.]+) MiB of the host figure are the bandwidth probe", chk.stdout)
    probe = float(probe.group(1)) if probe else 0.0
    assert each < one / 2 and abs(node - probe - 4 * each) < 1.0, (one, each, node, probe)
    res = subprocess.run([mpirun, "-np", "4", EMPIC, "--quiet", "--overwrite", str(deck)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr
    with open(os.path.join(os.path.dirname(str(deck)), "out", "timing.json")) as fh:
        rss = json.load(fh)["peak_rss_bytes"]
    for peak in (rss["rank0"], rss["others_min"], rss["others_max"]):
        print("estimate %.1f MiB a rank, peak RSS %.1f MiB" % (each, peak / 2**20))
        assert abs(each / (peak / 2**20) - 1) < 0.2
    env["EMPIC_MEMORY_LIMIT"] = "%d" % ((node - probe - each / 2) * 1048576)
    chk = subprocess.run([mpirun, "-np", "4", EMPIC, "--check", str(deck)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert chk.returncode == 1 and "on the node of rank 0 (4 of the 4 ranks" in chk.stderr, \
        chk.stdout + chk.stderr


def test_bandwidth_probe_skipped_when_memory_is_short(tmp_path):
    """The end-of-run bandwidth probe (two buffers of 32-128 MiB) is not made when the memory
    available would not hold it: a small run under a 150 MB limit runs, and the table and
    timing.json say the bandwidth was not measured."""
    deck = tmp_path / "small.cfg"
    deck.write_text(DECK.format(out=tmp_path / "out").replace("[512, 512]", "[32, 32]"))
    env = dict(os.environ, OMP_NUM_THREADS="2", EMPIC_MEMORY_LIMIT="150000000")
    res = subprocess.run([EMPIC, str(deck)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "bandwidth not measured: too little free memory for the probe" in res.stdout
    with open(tmp_path / "out" / "timing.json") as fh:
        assert json.load(fh)["bandwidth_bytes_per_s"] is None
