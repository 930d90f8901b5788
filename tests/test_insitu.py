"""In-code diagnostics (README "In-situ diagnostics"): phase-space histograms and spectra in
OUTDIR/phasespace, particle tracks by id in OUTDIR/tracks, the region/energy selection of the
particle dumps, and diag/ reading and plotting them.

One bin/empic run on a small warm plasma with every diagnostic on; each dump kind must pass
the openPMD validator, openPMD-viewer must read the data and tracks series, every .xmf
reference must resolve, and the histograms must carry the physics: totals equal to the
species' charge, a thermal spectrum with the right mean energy, tracked ids unique and
persistent along continuous trajectories."""

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")
sys.path.insert(0, ROOT)

from diag import read  # noqa: E402

NX, NY, DX, DT, STEPS, UTH, PPC = 32, 24, 0.2, 0.1, 20, 0.05, 3
LX, LY = NX * DX, NY * DX
TRACK_EVERY = 2
REGION = [1.0, 4.0, 0.5, 3.5]
ERANGE = [0.0, 0.004]

DECK = """
simulation = {{ name = "insitu_test"; backend = "cpu"; seed = 5; n0 = 1.0e18; }};
grid = {{ cells = [{nx}, {ny}]; dx = [{dx}, {dx}]; cluster = [8, 8]; }};
time = {{ dt = {dt}; steps = {steps}; }};
species = (
  {{ name = "electrons"; charge = -1.0; mass = 1.0; ppc = [{ppc}, {ppc}];
     density = {{ profile = "uniform"; n = 1.0; }};
     momentum = {{ thermal = [{uth}, {uth}, {uth}]; drift = [0.02, 0.0, 0.0]; }}; }},
  {{ name = "ions"; charge = 1.0; mass = 1836.0; ppc = [2, 2]; immobile = true;
     density = {{ profile = "uniform"; n = 1.0; }}; }}
);
diagnostics = {{
  output = "{out}";
  energy = {{ every = 5; }};
  fields = {{ every = 10; }};
  particles = {{ every = 10; fraction = 1.0; species = ["electrons"];
                region = [{region}]; energy = [{erange}]; }};
  phasespace = (
    {{ species = "electrons"; axes = ["x", "ux"]; bins = [32, 40]; every = 5; }},
    {{ species = "electrons"; axes = ["ux", "uy"]; bins = [40, 40];
       range = ([-0.1, 0.1], [-0.1, 0.1]); every = 10; }},
    {{ species = "electrons"; axes = ["energy"]; bins = [400]; every = 10; }},
    {{ species = "electrons"; axes = ["energy"]; bins = [60]; log = true;
       range = [1.0e-6, 0.1]; every = 10; }},
    {{ species = "ions"; axes = ["y", "uz"]; bins = [24, 8]; every = 10; }}
  );
  tracks = {{ every = {tevery}; fraction = 0.2; species = ["electrons"]; }};
}};
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    tmp = tmp_path_factory.mktemp("insitu")
    out = tmp / "out"
    deck = tmp / "insitu.cfg"
    deck.write_text(DECK.format(nx=NX, ny=NY, dx=DX, dt=DT, steps=STEPS, ppc=PPC, uth=UTH,
                                out=out, region=", ".join(map(str, REGION)),
                                erange=", ".join(map(str, ERANGE)), tevery=TRACK_EVERY))
    env = dict(os.environ, OMP_NUM_THREADS="2")
    res = subprocess.run([EMPIC, "--quiet", str(deck)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, "empic failed:\n%s\n%s" % (res.stdout, res.stderr)
    return str(out)


def h5files(run, sub):
    d = os.path.join(run, sub)
    files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".h5"))
    assert files, "nothing in %s" % d
    return files


def test_files_and_no_temporaries(run):
    assert [os.path.basename(f) for f in h5files(run, "phasespace")] == \
        ["ps%08d.h5" % s for s in range(0, STEPS + 1, 5)]
    # the tracks: one group-based openPMD file for the run, a group per tracks step
    assert [os.path.basename(f) for f in h5files(run, "tracks")] == ["tracks.h5"]
    with h5py.File(h5files(run, "tracks")[0], "r") as f:
        assert f.attrs["iterationEncoding"] == b"groupBased"
        assert f.attrs["iterationFormat"] == b"/data/%T/"
        assert sorted(int(k) for k in f["data"]) == list(range(0, STEPS + 1, TRACK_EVERY))
        for k in f["data"]:
            assert float(f["data"][k].attrs["time"]) == pytest.approx(int(k) * DT)
    assert read.list_tracks(run) == list(range(0, STEPS + 1, TRACK_EVERY))
    for root, _, files in os.walk(run):
        assert not [f for f in files if f.endswith(".tmp")], root


@pytest.mark.parametrize("sub", ["data", "phasespace", "tracks"])
def test_openpmd_validator(run, sub):
    exe = shutil.which("openPMD_check_h5")
    cmd = [exe] if exe else [sys.executable, "-m", "openpmd_validator.check_h5"]
    for f in h5files(run, sub):
        res = subprocess.run(cmd + ["-i", f], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, "%s:\n%s" % (f, res.stdout + res.stderr)
        assert "Result: 0 Errors" in res.stdout, res.stdout


@pytest.mark.parametrize("sub", ["data", "tracks"])
def test_xdmf_references(run, sub):
    d = os.path.join(run, sub)
    xmfs = sorted(f for f in os.listdir(d) if f.endswith(".xmf"))
    assert "series.xmf" in xmfs
    # a .xmf per data dump; none per tracks step (the series point into tracks.h5)
    dumps = len(h5files(run, sub)) if sub == "data" else 0
    assert len([f for f in xmfs if not f.startswith("series")]) == dumps
    if sub == "tracks":
        root = ET.parse(os.path.join(d, "series.xmf")).getroot()
        times = {t.get("Value") for t in root.iter("Time")}
        assert len(times) == len(read.list_tracks(run))
    for name in xmfs:
        root = ET.parse(os.path.join(d, name)).getroot()
        for di in root.iter("DataItem"):
            if di.get("Format") != "HDF":
                continue
            fname, path = di.text.strip().split(":", 1)
            dims = tuple(int(v) for v in di.get("Dimensions").split())
            with h5py.File(os.path.join(d, fname), "r") as f:
                assert path in f, "%s: %s:%s missing" % (name, fname, path)
                assert f[path].shape == dims, (name, path, f[path].shape, dims)


def test_openpmd_viewer(run):
    viewer = pytest.importorskip("openpmd_viewer")
    ts = viewer.OpenPMDTimeSeries(os.path.join(run, "data"), check_all_files=False)
    it = int(ts.iterations[-1])
    ez, info = ts.get_field("E", coord="z", iteration=it)
    assert ez.shape == (NY, NX)
    x, ux, pid = ts.get_particle(["x", "ux", "id"], species="electrons", iteration=it)
    assert len(x) == len(ux) == len(pid) > 0
    tr = viewer.OpenPMDTimeSeries(os.path.join(run, "tracks"), check_all_files=False)
    assert list(tr.iterations) == list(range(0, STEPS + 1, TRACK_EVERY))
    # the file itself opens as a series too (openPMD-viewer takes a group-based file's path)
    one = viewer.OpenPMDTimeSeries(os.path.join(run, "tracks", "tracks.h5"))
    assert list(one.iterations) == list(range(0, STEPS + 1, TRACK_EVERY))
    ida, = one.get_particle(["id"], species="electrons", iteration=TRACK_EVERY)
    idb, = tr.get_particle(["id"], species="electrons", iteration=TRACK_EVERY)
    assert np.array_equal(ida, idb) and len(ida) > 0
    pid, y = tr.get_particle(["id", "y"], species="electrons", iteration=STEPS)
    assert len(pid) > 0 and np.all(pid > 0)
    assert np.all((y >= 0) & (y <= LY * 5.3141e-6 * (1 + 1e-6)))


def test_histogram_layout(run):
    with h5py.File(os.path.join(run, "phasespace", "ps%08d.h5" % 10), "r") as f:
        m = f["data/10/meshes"]
        assert set(m) == {"electrons_x_ux", "electrons_ux_uy", "electrons_energy",
                          "electrons_log10_energy", "ions_y_uz"}
        xu = m["electrons_x_ux"]
        assert xu.shape == (40, 32)
        assert [a.decode() for a in xu.attrs["axisLabels"]] == ["ux", "x"]
        assert np.allclose(xu.attrs["gridSpacing"][1], DX)      # 32 bins over the box
        assert np.allclose(xu.attrs["gridGlobalOffset"][1], 0.0)
        assert xu.attrs["axisUnitSI"][1] == pytest.approx(5.3141e-6, rel=1e-4)
    with h5py.File(os.path.join(run, "phasespace", "ps%08d.h5" % 5), "r") as f:
        assert set(f["data/5/meshes"]) == {"electrons_x_ux"}    # only the one due at 5


def test_histogram_totals_are_the_charge(run):
    """Sum of the charge density times the bin volume = q n Lx Ly (all particles in the
    auto ranges; the box for x and y)."""
    for it in range(0, STEPS + 1, 5):
        h = read.read_phasespace(run, "electrons_x_ux", it)
        assert h.total == pytest.approx(-1.0 * LX * LY, rel=1e-6)  # float weights
        # the x marginal is the line charge density -n Ly per unit x: exact at the regular
        # load, within the thermal noise of ~200 particles per bin later
        assert np.allclose(h.data.sum(axis=0) * (h.edges[1][1] - h.edges[1][0]), -LY,
                           rtol=1e-6 if it == 0 else 0.25)
    assert read.read_phasespace(run, "electrons_energy").total == \
        pytest.approx(-LX * LY, rel=1e-6)  # float weights
    assert read.read_phasespace(run, "ions_y_uz").total == pytest.approx(LX * LY, rel=1e-6)
    # a fixed range keeps only what falls inside it: |ux|, |uy| < 2 u_th, about 0.954^2
    uu = read.read_phasespace(run, "electrons_ux_uy", 0)
    assert uu.total / (-LX * LY) == pytest.approx(0.954**2, abs=0.03)


def test_thermal_spectrum(run):
    """A warm plasma: the mean kinetic energy per electron is 3/2 u_th^2 plus the drift's
    1/2 u_d^2 at the load; the drift then oscillates at w_p into the field (t = 2: almost
    all of it in the field), the thermal part stays."""
    thermal, drift = 1.5 * UTH**2, 0.5 * 0.02**2
    for it, expect in ((0, thermal + drift), (STEPS, thermal)):
        h = read.read_phasespace(run, "electrons_energy", it)
        e = h.centres(0)
        mean = float(np.sum(h.data * e) / np.sum(h.data))
        assert mean == pytest.approx(expect, rel=0.04), (it, mean, expect)
        assert h.edges[0][0] >= 0.0
    expect = thermal
    lg = read.read_phasespace(run, "electrons_log10_energy", STEPS)
    assert lg.labels == ["log10_energy"]
    assert np.allclose(lg.edges[0][[0, -1]], [-6.0, -1.0])
    e = 10 ** lg.centres(0)
    assert float(np.sum(lg.data * e) / np.sum(lg.data)) == pytest.approx(expect, rel=0.1)


def test_spectrum_matches_particles(run):
    """The in-code spectrum of the final step against the full particle dump (fraction 1,
    but region and energy selected): the selected particles' share of the histogram."""
    p = read.read_particles(run, "electrons", STEPS)
    h = read.read_phasespace(run, "electrons_energy", STEPS)
    assert len(p) > 0
    assert np.all((p.x >= REGION[0]) & (p.x < REGION[1]))
    assert np.all((p.y >= REGION[2]) & (p.y < REGION[3]))
    assert np.all((p.ekin >= ERANGE[0]) & (p.ekin < ERANGE[1] * (1 + 1e-6)))
    # the particles' energy histogram on the same bins, scaled to the region's area
    counts, _ = np.histogram(p.ekin, bins=h.edges[0], weights=p.w)
    area = (REGION[1] - REGION[0]) * (REGION[3] - REGION[2])
    inside = h.edges[0][1:] <= ERANGE[1]
    q_hist = -np.sum(h.data[inside]) * (h.edges[0][1] - h.edges[0][0])
    q_dump = np.sum(counts[inside]) * (LX * LY / area)  # p.w is w dx dy
    assert q_dump == pytest.approx(q_hist, rel=0.15)


def test_tracks(run):
    tr = read.read_tracks(run, "electrons")
    n_all = NX * NY * PPC * PPC
    assert 0.15 * n_all < len(tr.ids) < 0.25 * n_all      # fraction 0.2
    assert len(np.unique(tr.ids)) == len(tr.ids) and np.all(tr.ids > 0)
    assert not np.any(np.isnan(tr.x))                      # every id in every dump
    for it in read.list_tracks(run):
        with h5py.File(read.tracks_path(run, it), "r") as f:
            ids = f["data/%d/particles/electrons/id" % it][()]
            assert len(np.unique(ids)) == len(ids) == len(tr.ids)
    # continuous: a step moves less than c dt per step (periodic wrap taken out)
    for a, L in ((tr.x, LX), (tr.y, LY)):
        d = np.diff(a, axis=1)
        d = (d + L / 2) % L - L / 2
        assert np.max(np.abs(d)) <= TRACK_EVERY * DT * (1 + 1e-6)
    # and consistent with the momenta: dx ~ u/gamma dt per step (warm: a few % of a cell)
    d = (np.diff(tr.x, axis=1) + LX / 2) % LX - LX / 2
    v = tr.ux[:, 1:] / np.sqrt(1 + tr.ux[:, 1:]**2 + tr.uy[:, 1:]**2 + tr.uz[:, 1:]**2)
    assert np.max(np.abs(d - v * TRACK_EVERY * DT)) < 0.01 * DX
    # the raw dumps carry the same ids where tracked (0 elsewhere)
    p10 = h5py.File(os.path.join(run, "data", "data%08d.h5" % 10), "r")
    ids = p10["data/10/particles/electrons/id"][()]
    assert set(ids[ids > 0].tolist()) <= set(tr.ids.tolist())
    p10.close()


def _cli(*args):
    res = subprocess.run([sys.executable, "-m", "diag", *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    files = res.stdout.split()
    for f in files:
        with open(f, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n", f
    return [os.path.basename(f) for f in files]


def test_diag_cli(run):
    names = _cli("summary", run)
    for n in ("electrons_x_ux", "electrons_energy", "electrons_log10_energy", "ions_y_uz"):
        assert "ps_%s_%08d.png" % (n, STEPS) in names
    assert "tracks_electrons.png" in names
    assert _cli("phasespace", run, "--name", "electrons_x_ux", "--it", "5") == \
        ["ps_electrons_x_ux_00000005.png"]
    assert _cli("tracks", run) == ["tracks_electrons.png"]


def test_resolved_deck_reads_back(run):
    res = subprocess.run([EMPIC, "--check", os.path.join(run, "run.cfg")], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert 'axes = ["energy"]' in res.stdout and "tracks = { every = 2;" in res.stdout


@pytest.mark.parametrize("entry, message", [
    ('{ species = "electrons"; axes = ["x", "ux"]; every = 5; bogus = 1; }', "bogus"),
    ('{ species = "electrons"; axes = ["x", "uxx"]; every = 5; }', "ux"),
    ('{ species = "electrons"; axes = ["x", "ux"]; every = 5; log = true; }', "log"),
    ('{ species = "electrons"; axes = ["energy"]; range = [1.0, 0.5]; every = 5; }', "min < max"),
    ('{ species = "nobody"; axes = ["x"]; every = 5; }', "nobody"),
])
def test_deck_errors(tmp_path, entry, message):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing")
    deck = tmp_path / "bad.cfg"
    deck.write_text(DECK.format(nx=NX, ny=NY, dx=DX, dt=DT, steps=STEPS, ppc=PPC, uth=UTH,
                                out=tmp_path / "o", region="0, 1, 0, 1", erange="0, 1",
                                tevery=1).replace(
        'phasespace = (', 'phasespace = ( %s,' % entry))
    res = subprocess.run([EMPIC, "--check", str(deck)], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode != 0 and message in res.stderr, res.stderr


WINDOW_DECK = """
simulation = {{ name = "window_tracks"; backend = "cpu"; seed = 3; }};
grid = {{ cells = [64, 16]; dx = [0.2, 0.2]; cluster = [8, 8]; }};
time = {{ dt = 0.1; steps = 100; }};
fields = {{ boundary = {{ xmin = "mur"; xmax = "mur"; ymin = "periodic"; ymax = "periodic"; }};
           moving_window = {{ enabled = true; t_start = 0.0; }}; }};
species = (
  {{ name = "electrons"; charge = -1.0; ppc = [2, 2];
    density = {{ profile = "uniform"; n = 1.0; }};
    momentum = {{ thermal = [0.02, 0.02, 0.02]; }}; }},
  {{ name = "ions"; charge = 1.0; mass = 1836.0; ppc = [2, 2]; immobile = true; }}
);
diagnostics = {{ output = "{out}"; energy = {{ every = 10; }};
  phasespace = ( {{ species = "electrons"; axes = ["x", "ux"]; bins = [64, 16]; every = 50; }} );
  tracks = {{ every = 10; fraction = 0.2; species = ["electrons"]; }}; }};
"""


def test_tracks_with_moving_window(tmp_path):
    """The window moves 50 cells in 100 steps: particles leaving at xmin lose their track,
    injected columns bring new unique ids; the x-u_x histogram follows the window."""
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing")
    out = tmp_path / "out"
    deck = tmp_path / "window.cfg"
    deck.write_text(WINDOW_DECK.format(out=out))
    res = subprocess.run([EMPIC, "--quiet", str(deck)], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, env=dict(os.environ, OMP_NUM_THREADS="2"))
    assert res.returncode == 0, res.stderr
    out = str(out)
    tr = read.read_tracks(out, "electrons")
    present = ~np.isnan(tr.x)
    n_box = 64 * 16 * 4
    assert np.all(np.abs(present.sum(axis=0) - 0.2 * n_box) < 0.05 * n_box)
    assert len(tr.ids) > 1.5 * 0.2 * n_box              # new ids from the injected plasma
    first = present[:, 0]
    assert np.all(tr.ids[~first] > tr.ids[first].max())   # injected ids are new
    for it in read.list_tracks(out):
        with h5py.File(read.tracks_path(out, it), "r") as f:
            ids = f["data/%d/particles/electrons/id" % it][()]
            assert len(np.unique(ids)) == len(ids)
    assert np.nanmax(np.abs(np.diff(tr.x, axis=1))) <= 10 * 0.1
    h = read.read_phasespace(out, "electrons_x_ux")
    assert np.allclose(h.edges[0][[0, -1]], [10.0, 10.0 + 64 * 0.2])
    assert h.total == pytest.approx(-64 * 16 * 0.04, rel=0.01)
    exe = shutil.which("openPMD_check_h5")
    cmd = [exe] if exe else [sys.executable, "-m", "openpmd_validator.check_h5"]
    for sub in ("tracks", "phasespace"):
        for f in h5files(out, sub)[-1:]:
            res = subprocess.run(cmd + ["-i", f], capture_output=True, text=True, timeout=120)
            assert "Result: 0 Errors" in res.stdout, res.stdout
