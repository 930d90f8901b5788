"""Field probes (diagnostics.probes, docs/output.md): a point probe in a vacuum laser run
records the laser's frequency (the peak of its spectrum at omega0); probes in a box with
uniform external fields and no plasma return those fields exactly; a warm plasma's probes
(points and a line across the ranks' border, E, B, J and rho) are bitwise the same on 1 and
2 MPI ranks and after a restart; probes/probes.h5 has its growing, checksummed datasets;
`empic-diag probes` draws them; the deck checks name what is wrong."""

import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")
sys.path.insert(0, ROOT)
from diag import read  # noqa: E402
from runs import contents  # noqa: E402

ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")

VACUUM = """
simulation = {{ name = "probe-vacuum"; backend = "cpu"; seed = 1; }};
grid = {{ cells = [200, 64]; dx = [0.05, 0.1]; cluster = [20, 16]; }};
time = {{ dt = 0.04; tmax = 16.0; }};
fields = {{ boundary = {{ xmin = "pml"; xmax = "pml"; ymin = "pml"; ymax = "pml"; }};
           pml = {{ cells = 12; }}; }};
lasers = (
  {{ a0 = 0.1; omega0 = {omega0}; w0 = 2.0; focus = 4.0; center = 3.2;
    duration = 5.0; envelope = "sin2"; polarization = 0.0; boundary = "xmin"; }}
);
diagnostics = {{
  output = "{out}";
  energy = {{ every = 20; }};
  probes = (
    {{ name = "centre"; at = [4.0, 3.2]; }},
    {{ name = "axis"; from = [1.0, 3.2]; to = [9.0, 3.2]; n = 9; fields = ["Ey", "Bz"];
       every = 2; }}
  );
}};
"""

EXTERNAL = """
simulation = {{ name = "probe-external"; backend = "cpu"; seed = 1; }};
grid = {{ cells = [32, 32]; dx = [0.1, 0.1]; cluster = [8, 8]; }};
time = {{ dt = 0.05; steps = 20; }};
fields = {{ external = {{ E = [0.01, -0.02, 0.03]; B = [0.5, 0.25, -0.125]; }}; }};
diagnostics = {{
  output = "{out}";
  probes = ( {{ name = "p"; at = [1.23, 2.71]; }},
             {{ name = "l"; from = [0.0, 0.0]; to = [3.1, 3.1]; n = 17; every = 3; }} );
}};
"""

# a warm plasma in a periodic box; the line crosses the border of a [2, 1] split (x = 3.2)
WARM = """
simulation = {{ name = "probe-warm"; backend = "cpu"; seed = 7; }};
{parallel}
grid = {{ cells = [64, 48]; dx = [0.1, 0.1]; cluster = [8, 8]; }};
time = {{ dt = 0.05; steps = 60; }};
species = (
  {{ name = "electrons"; charge = -1.0; ppc = [3, 3];
    density = {{ profile = "uniform"; n = 1.0; }};
    momentum = {{ thermal = [0.2, 0.2, 0.2]; drift = (0.3, -0.1, 0.0); }}; }},
  {{ name = "positrons"; charge = 1.0; ppc = [2, 2];
    density = {{ profile = "uniform"; n = 1.0; }};
    momentum = {{ thermal = [0.1, 0.1, 0.1]; drift = (-0.2, 0.2, 0.0); }}; }}
);
diagnostics = {{
  output = "{out}";
  energy = {{ every = 5; }};
  checkpoint = {{ every = 25; }};
  probes = (
    {{ name = "a"; at = [3.17, 2.0]; fields = ["Ex", "Ey", "Ez", "Bx", "By", "Bz", "Jx", "Jy",
                                          "Jz", "rho"]; }},
    {{ name = "b"; at = [0.0, 4.75]; every = 4; }},
    {{ name = "cut"; from = [0.05, 1.0]; to = [6.35, 3.9]; n = 40;
       fields = ["Ex", "Bz", "Jy", "rho"]; every = 3; }}
  );
}};
"""


def empic(deck_text, tmp_path, name, args=(), ranks=1, check=True):
    deck = tmp_path / (name + ".cfg")
    deck.write_text(deck_text)
    cmd = [EMPIC, "--quiet", "--overwrite", *args, str(deck)]
    if ranks > 1:
        mpirun = shutil.which("mpirun")
        built = subprocess.run([EMPIC, "--version"], capture_output=True, text=True).stdout
        if not mpirun or ", no MPI" in built:
            pytest.skip("no MPI build or mpirun")
        cmd = [mpirun, "-np", str(ranks)] + cmd
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=ENV, timeout=300)
    if check:
        assert res.returncode == 0, res.stdout + res.stderr
    return res


@pytest.fixture(scope="module")
def vacuum(tmp_path_factory):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing")
    tmp = tmp_path_factory.mktemp("vacuum")
    out = tmp / "out"
    empic(VACUUM.format(omega0=10.0, out=out), tmp, "vacuum")
    return str(out)


def test_vacuum_laser_frequency(vacuum):
    pr = read.read_probe(vacuum, "centre")
    assert pr.kind == "point" and list(pr.values) == ["Ex", "Ey", "Ez", "Bx", "By", "Bz"]
    assert np.array_equal(pr.steps, np.arange(401)) and np.allclose(pr.t, pr.steps * 0.04)
    ey = pr.values["Ey"]
    assert 0.8 < np.max(np.abs(ey)) < 1.1               # a0 omega0 = 1 near the focus
    omega, amp = read.probe_spectrum(pr.t, ey)
    assert omega[np.argmax(amp)] == pytest.approx(10.0, rel=0.03)
    # a plane-ish wave along +x: Bz follows Ey
    omega_b, amp_b = read.probe_spectrum(pr.t, pr.values["Bz"])
    assert omega_b[np.argmax(amp_b)] == pytest.approx(10.0, rel=0.03)
    line = read.read_probe(vacuum, "axis")
    assert line.kind == "line" and line.values["Ey"].shape == (201, 9)
    assert np.allclose(line.x, np.linspace(1.0, 9.0, 9)) and np.allclose(line.y, 3.2)
    assert np.array_equal(line.steps, np.arange(0, 401, 2))
    # the pulse reaches the far points later
    first = [np.argmax(np.abs(line.values["Ey"][:, q]) > 0.1) for q in range(9)]
    assert all(a < b for a, b in zip(first, first[1:])), first


def test_file_layout(vacuum):
    path = os.path.join(vacuum, "probes", "probes.h5")
    with h5py.File(path, "r") as f:
        assert f.attrs["software"] == b"empic"
        d = f["centre/Ey"]
        assert d.maxshape == (None,) and d.chunks is not None and d.fletcher32
        assert f["axis/Ey"].maxshape == (None, 9) and f["axis/Ey"].fletcher32
        assert f["centre/step"].maxshape == (None,)
        assert f["centre/Ey"].attrs["unitSI"] > 0 and b"V/m" in f["centre/Ey"].attrs["unit"]
        assert [s.decode() for s in f["axis"].attrs["fields"]] == ["Ey", "Bz"]
        assert f["axis"].attrs["kind"] == b"line" and f["axis"].attrs["n"] == 9


def test_empic_diag_probes(vacuum, tmp_path):
    res = subprocess.run([sys.executable, "-m", "diag", "probes", vacuum, "--out",
                          str(tmp_path), "--spectrum", "Ey"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    names = sorted(os.path.basename(p) for p in res.stdout.split())
    assert names == ["probe_axis.png", "probe_axis_Ey_spectrum.png", "probe_centre.png",
                     "probe_centre_Ey_spectrum.png"], names
    assert "probe centre: Ey spectrum peaks at omega = 9.9" in res.stderr, res.stderr
    res = subprocess.run([sys.executable, "-m", "diag", "probes", vacuum, "--name", "axis",
                          "--q", "Ex"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 1 and "probe axis has no Ex" in res.stderr, res.stderr
    res = subprocess.run([sys.executable, "-m", "diag", "summary", vacuum, "--out",
                          str(tmp_path / "s")], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert {"probe_centre.png", "probe_axis.png"} <= {os.path.basename(p)
                                                      for p in res.stdout.split()}
    res = subprocess.run([sys.executable, "-m", "diag", "info", vacuum], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "probe axis (line, 9 points): Ey Bz;" in res.stdout, res.stdout
    assert "probe centre (point, 1 point):" in res.stdout, res.stdout


def test_damaged_probes_file_is_named(vacuum, tmp_path):
    """A byte changed in a probe's data: the checksum names the file instead of a plot."""
    bad = tmp_path / "bad"
    shutil.copytree(vacuum, bad)
    path = bad / "probes" / "probes.h5"
    with h5py.File(path, "r") as f:
        chunk = f["centre/Ey"].id.get_chunk_info(0)
    with open(path, "r+b") as fh:
        fh.seek(chunk.byte_offset + chunk.size // 2)
        b = fh.read(1)
        fh.seek(chunk.byte_offset + chunk.size // 2)
        fh.write(bytes([b[0] ^ 4]))
    res = subprocess.run([sys.executable, "-m", "diag", "probes", str(bad), "--name",
                          "centre"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 1 and "probes.h5 is damaged" in res.stderr, res.stderr


def test_uniform_external_field(tmp_path):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing")
    out = tmp_path / "out"
    empic(EXTERNAL.format(out=out), tmp_path, "ext")
    want = dict(Ex=0.01, Ey=-0.02, Ez=0.03, Bx=0.5, By=0.25, Bz=-0.125)
    p = read.read_probe(str(out), "p")
    assert np.array_equal(p.steps, np.arange(21))
    for q, v in want.items():
        assert np.all(p.values[q] == np.float32(v)), (q, p.values[q][:3])
    line = read.read_probe(str(out), "l")
    assert np.array_equal(line.steps, np.arange(0, 21, 3))
    for q, v in want.items():
        assert line.values[q].shape == (7, 17) and np.all(line.values[q] == np.float32(v))


def test_one_and_two_ranks_bitwise_and_restart(tmp_path):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing")
    one, two, cut = tmp_path / "one", tmp_path / "two", tmp_path / "cut"
    empic(WARM.format(parallel="", out=one), tmp_path, "one")
    empic(WARM.format(parallel="parallel = { ranks = [2, 1]; };", out=two), tmp_path, "two",
          ranks=2)
    a = contents(one / "probes" / "probes.h5")
    b = contents(two / "probes" / "probes.h5")
    assert sorted(a) == sorted(b)
    bad = [k for k in a if a[k] != b[k]]
    assert not bad, bad[:6]
    pa = read.read_probe(str(one), "a")
    assert np.array_equal(pa.steps, np.arange(61))
    assert np.all(pa.values["rho"] != 0) and np.any(pa.values["Jy"] != 0)
    cutp = read.read_probe(str(one), "cut")
    assert cutp.values["rho"].shape == (21, 40)
    # stopped at step 30 (its last samples and a checkpoint there), restarted to the end
    empic(WARM.format(parallel="", out=cut), tmp_path, "cut", args=("--steps", "30"))
    with h5py.File(cut / "probes" / "probes.h5", "r") as f:
        assert f["a/step"][-1] == 30 and f["cut/step"][-1] == 30
    res = subprocess.run([EMPIC, "--quiet", "--restart", str(cut), "--steps", "60"], cwd=ROOT,
                         capture_output=True, text=True, env=ENV, timeout=300)
    assert res.returncode == 0, res.stderr
    c = contents(cut / "probes" / "probes.h5")
    assert sorted(a) == sorted(c)
    bad = [k for k in a if a[k] != c[k]]
    assert not bad, bad[:6]


@pytest.mark.parametrize("probe,message", [
    ('{ at = [7.0, 1.0]; }', "[7, 1] is outside the box; expected 0 <= x < 6.4"),
    ('{ from = [0.0, 1.0]; to = [1.0, -0.5]; n = 4; }', "[1, -0.5] is outside the box"),
    ('{ at = [1.0, 1.0]; fields = ["Ey", "Bq"]; }', "did you mean"),
    ('{ at = [1.0, 1.0]; fields = ["Ey", "Ey"]; }', 'names "Ey" twice'),
    ('{ from = [0.0, 1.0]; to = [1.0, 1.0]; }', "n"),
    ('{ from = [0.0, 1.0]; to = [1.0, 1.0]; n = 1; }', "n"),
    ('{ at = [1.0, 1.0]; from = [0.0, 0.0]; }', "has both `at` and `from`"),
    ('{ fields = ["Ey"]; }', "has no position"),
    ('{ at = [1.0, 1.0]; every = 0; }', "every"),
    ('{ at = [1.0, 1.0]; colour = 1; }', "colour"),
])
def test_deck_errors(tmp_path, probe, message):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing")
    text = WARM.format(parallel="", out=tmp_path / "o").replace(
        "probes = (", "probes = (\n    %s," % probe)
    deck = tmp_path / "bad.cfg"
    deck.write_text(text)
    res = subprocess.run([EMPIC, "--check", str(deck)], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode != 0
    assert "probes" in res.stderr and message in res.stderr, res.stderr


def test_deck_round_trip(tmp_path):
    """run.cfg (the resolved deck, which checkpoints keep) holds the probes as given."""
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing")
    deck = tmp_path / "w.cfg"
    deck.write_text(WARM.format(parallel="", out=tmp_path / "o"))
    res = subprocess.run([EMPIC, "--check", str(deck)], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert 'name = "cut"; from = [0.05, 1.0]; to = [6.35, 3.9]; n = 40; fields = ["Ex", "Bz", ' \
           '"Jy", "rho"]; every = 3;' in res.stdout, res.stdout
    assert 'name = "b"; at = [0.0, 4.75]; fields = ["Ex", "Ey", "Ez", "Bx", "By", "Bz"]; ' \
           'every = 4;' in res.stdout
