"""The memory estimate of `empic --check` against the peak resident memory of the run.

A run of 2.6 M particles with a field dump and a checkpoint (the two largest passing needs)
must peak within 20 % of the host memory `--check` announces; `--check` must also show the
memory available and refuse a deck that needs more (EMPIC_MEMORY_LIMIT).
"""
import os
import re
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
