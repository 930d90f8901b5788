"""empic-diag on a run whose fields and particles are dumped on different cadences (fields
every 10 steps, particles every 25: fields-only, particle-only and full dumps), and on a
copy with damaged files: every sub-command returns 0 and draws, notes what it skips in one
line, names a damaged dump or timing.json; `info` lists every dump and fails on damage."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")

DECK = """
simulation = {{ name = "cadence"; backend = "cpu"; seed = 5; n0 = 1.0e18; }};
grid = {{ cells = [32, 16]; dx = [0.2, 0.2]; cluster = [8, 8]; }};
time = {{ dt = 0.1; steps = 50; }};
species = (
  {{ name = "electrons"; charge = -1.0; ppc = [2, 2];
     momentum = {{ thermal = [0.05, 0.05, 0.05]; drift = [0.0, 0.0, 0.3]; }}; }}
);
diagnostics = {{
  output = "{out}";
  energy = {{ every = 5; }};
  fields = {{ every = 10; }};
  particles = {{ every = 25; }};
  phasespace = ( {{ species = "electrons"; axes = ["x", "ux"]; bins = [16, 16]; every = 25; }} );
  tracks = {{ every = 25; fraction = 0.2; species = ["electrons"]; }};
}};
"""

COMMANDS = [["summary"], ["info"], ["field", "--q", "E", "--c", "z"],
            ["lineout", "--q", "E", "--c", "z"], ["movie", "--q", "E", "--c", "z"],
            ["energy"], ["timing"], ["phase"], ["spectrum"], ["phasespace"], ["tracks"]]


def diag(*args):
    return subprocess.run([sys.executable, "-m", "diag"] + list(args), capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    tmp = tmp_path_factory.mktemp("cadence")
    o = tmp / "out"
    deck = tmp / "cadence.cfg"
    deck.write_text(DECK.format(out=o))
    res = subprocess.run([EMPIC, "--quiet", str(deck)], capture_output=True, text=True,
                         env=dict(os.environ, OMP_NUM_THREADS="2"), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return o


def test_every_command_draws_with_mixed_dumps(out):
    assert diag("--help").returncode == 0
    for cmd in COMMANDS:
        res = diag(*(cmd[:1] + [str(out)] + cmd[1:]))
        assert res.returncode == 0, (cmd, res.stderr)
        if cmd[0] != "info":
            files = [f for f in res.stdout.split() if f.endswith((".png", ".mp4", ".gif"))]
            assert files and all(os.path.isfile(f) for f in files), (cmd, res.stdout)
    res = diag("movie", str(out), "--q", "E", "--c", "z")
    assert "dump 25 has no meshes" in res.stderr, res.stderr
    summary = diag("summary", str(out)).stdout
    assert "field_" in summary and "phase_" in summary, summary


def test_info_lists_every_dump(out):
    res = diag("info", str(out))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split()[1:] == ["0", "10", "20", "25", "30", "40", "50"], lines[0]
    by = {int(l.split()[1]): l for l in lines if l.startswith("dump ")}
    assert "particles: none" in by[10] and "E(x,y,z)" in by[10]
    assert "meshes: none" in by[25] and "electrons(" in by[25] and "t=2.5" in by[25]


def test_damaged_dump_and_timing_are_named_and_skipped(out, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    h5 = bad / "data" / "data00000020.h5"
    size = os.path.getsize(h5)
    with open(h5, "r+b") as fh:
        fh.truncate(size // 2)
    (bad / "timing.json").write_text('{"steps": 5, "ns_per')
    res = diag("info", str(bad))
    assert res.returncode != 0
    assert "dump 20 DAMAGED" in res.stdout and "data00000020.h5" in res.stdout, res.stdout
    res = diag("summary", str(bad))
    assert res.returncode == 0, res.stderr
    assert "data00000020.h5 is damaged" in res.stderr and "timing.json is damaged" in res.stderr
    res = diag("movie", str(bad), "--q", "E", "--c", "z")
    assert res.returncode == 0, res.stderr
    assert "data00000020.h5 is damaged" in res.stderr
    assert len([f for f in os.listdir(bad / "plots" / "movie_Ez") if f.startswith("frame_")]) == 5


def _flip(path, dataset):
    """Change one bit in the middle of the stored data of `dataset` (its first chunk)."""
    import h5py
    with h5py.File(path, "r") as f:
        chunk = f[dataset].id.get_chunk_info(0)
    at = chunk.byte_offset + chunk.size // 2
    with open(path, "r+b") as fh:
        fh.seek(at)
        b = fh.read(1)
        fh.seek(at)
        fh.write(bytes([b[0] ^ 4]))


def test_changed_bytes_are_detected_by_the_checksums(out, tmp_path):
    """Every dataset carries HDF5's Fletcher-32 checksum: one changed bit in a field, a
    particle record, a histogram or a tracks file is found, named and left out."""
    bad = tmp_path / "flipped"
    shutil.copytree(out, bad)
    _flip(bad / "data" / "data00000050.h5", "data/50/meshes/E/z")
    _flip(bad / "data" / "data00000025.h5", "data/25/particles/electrons/momentum/x")
    _flip(bad / "phasespace" / "ps00000050.h5", "data/50/meshes/electrons_x_ux")
    _flip(bad / "tracks" / "tracks.h5", "data/25/particles/electrons/momentum/x")
    res = diag("info", str(bad))
    assert res.returncode == 1
    assert "dump 50 DAMAGED" in res.stdout and "dump 25 DAMAGED" in res.stdout, res.stdout
    assert "checksum does not match" in res.stdout
    res = diag("summary", str(bad))
    assert res.returncode == 0, res.stderr
    for name in ("data00000050.h5", "data00000025.h5", "ps00000050.h5", "tracks.h5"):
        assert name + " is damaged" in res.stderr, (name, res.stderr)
    drawn = res.stdout.split()
    assert any("field_" in f for f in drawn) and any("tracks_" in f for f in drawn), drawn
    assert not any("_00000050.png" in f and "field_" in f for f in drawn), drawn


def test_checkout_diag_beside_the_binary(out, tmp_path):
    """bin/empic-diag runs the diag/ of its own checkout, from any folder, whatever other
    `diag` package comes first on the Python path (another checkout's install)."""
    fake = tmp_path / "other" / "diag"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('the other checkout')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "other"))
    res = subprocess.run([os.path.join(ROOT, "bin", "empic-diag"), "info", str(out)],
                         capture_output=True, text=True, cwd="/", env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("dumps: 0 10 20 25 30 40 50"), res.stdout
