"""Output checks (design.md §9): openPMD validity, openPMD-viewer, XDMF references, diag CLI.

The end-to-end tests run bin/empic (built by `make`) on a tiny deck; the reader tests at
the bottom use an openPMD file synthesised with h5py and need no binary."""

import json
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

NX, NY, DX, STEPS = 32, 32, 0.2, 20

DECK = """
simulation = {{ name = "output_test"; backend = "cpu"; seed = 11; n0 = 1.0e18; }};
grid = {{ cells = [{nx}, {ny}]; dx = [{dx}, {dx}]; }};
time = {{ dt = 0.1; steps = {steps}; }};
species = (
  {{ name = "electrons"; charge = -1.0; mass = 1.0; ppc = [2, 2];
     density = {{ profile = "uniform"; n = 1.0; }};
     momentum = {{ thermal = [0.05, 0.05, 0.05]; }}; }},
  {{ name = "ions"; charge = 1.0; mass = 1836.0; ppc = [2, 2]; immobile = true;
     density = {{ profile = "uniform"; n = 1.0; }}; }}
);
diagnostics = {{
  output = "{out}";
  energy = {{ every = 5; }};
  fields = {{ every = 10; quantities = ["E", "B", "J", "rho"]; }};
  particles = {{ every = 10; fraction = 0.5; species = ["electrons"]; }};
}};
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Output folder of one tiny bin/empic run."""
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    tmp = tmp_path_factory.mktemp("output")
    out = tmp / "out"
    deck = tmp / "tiny.cfg"
    deck.write_text(DECK.format(nx=NX, ny=NY, dx=DX, steps=STEPS, out=out))
    env = dict(os.environ, OMP_NUM_THREADS="2")
    res = subprocess.run([EMPIC, "--quiet", str(deck)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, "empic failed:\n%s\n%s" % (res.stdout, res.stderr)
    return str(out)


def dumps(out):
    d = os.path.join(out, "data")
    files = sorted(f for f in os.listdir(d) if f.startswith("data") and f.endswith(".h5"))
    assert files, "no dumps written in %s" % d
    return [os.path.join(d, f) for f in files]


def test_no_temporary_files_left(run):
    for root, _, files in os.walk(run):
        assert not [f for f in files if f.endswith(".tmp")], root


def test_openpmd_validator(run):
    exe = shutil.which("openPMD_check_h5")
    cmd = [exe] if exe else [sys.executable, "-m", "openpmd_validator.check_h5"]
    for f in dumps(run):
        res = subprocess.run(cmd + ["-i", f], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, "%s:\n%s" % (f, res.stdout + res.stderr)
        assert "Result: 0 Errors" in res.stdout, res.stdout


def test_layout_and_units(run):
    for path in dumps(run):
        with h5py.File(path, "r") as f:
            assert f.attrs["openPMD"] == b"1.1.0"
            assert f.attrs["iterationFormat"] == b"data%08T.h5"
            (it,) = list(f["data"].keys())
            assert os.path.basename(path) == "data%08d.h5" % int(it)
            g = f["data/%s" % it]
            assert g.attrs["time"] == pytest.approx(int(it) * 0.1)
            m = g["meshes"]
            assert set(m.keys()) >= {"E", "B", "J", "rho", "rho_electrons", "rho_ions"}
            for rec in ("E", "B", "J"):
                assert [a.decode() for a in m[rec].attrs["axisLabels"]] == ["y", "x"]
                assert np.allclose(m[rec].attrs["gridSpacing"], [DX, DX])
                for c in "xyz":
                    assert m[rec][c].shape == (NY, NX) and m[rec][c].dtype == np.float32
            pos = {r + c: list(m[r][c].attrs["position"]) for r in "EBJ" for c in "xyz"}
            assert pos["Ex"] == [0, 0.5] and pos["Ey"] == [0.5, 0] and pos["Ez"] == [0, 0]
            assert pos["Bx"] == [0.5, 0] and pos["By"] == [0, 0.5] and pos["Bz"] == [0.5, 0.5]
            assert pos["Jx"] == pos["Ex"] and pos["Jy"] == pos["Ey"]
            # n0 = 1e18 cm^-3: c/omega_p = 5.314 um, E0 = 9.616e10 V/m
            assert m["E"].attrs["gridUnitSI"] == pytest.approx(5.3141e-6, rel=1e-4)
            assert m["E/x"].attrs["unitSI"] == pytest.approx(9.6159e10, rel=1e-4)
            assert list(m["E"].attrs["unitDimension"]) == [1, 1, -3, -1, 0, 0, 0]
            # uniform electrons + ions: total charge density ~ 0, electrons ~ -1
            assert np.mean(m["rho_electrons"][()]) == pytest.approx(-1.0, abs=1e-3)
            assert np.mean(m["rho"][()]) == pytest.approx(0.0, abs=1e-3)


def test_openpmd_viewer(run):
    viewer = pytest.importorskip("openpmd_viewer")
    ts = viewer.OpenPMDTimeSeries(os.path.join(run, "data"), check_all_files=False)
    assert len(ts.iterations) >= 2
    it = int(ts.iterations[-1])
    for c in ("z", "x"):
        field, info = ts.get_field("E", coord=c, iteration=it)
        assert field.shape == (NY, NX)
    ez, info = ts.get_field("E", coord="z", iteration=it)
    length = 5.3141e-6
    assert info.x[0] == pytest.approx(0.0) and info.dx == pytest.approx(DX * length, rel=1e-4)
    assert "electrons" in ts.avail_species
    x, ux, w = ts.get_particle(["x", "ux", "w"], species="electrons", iteration=it)
    n_all = NX * NY * 4
    assert 0.35 * n_all < len(x) < 0.65 * n_all  # fraction 0.5 of the electrons
    assert np.all((x >= 0) & (x <= NX * DX * length * (1 + 1e-6)))
    assert 0.03 < np.std(ux) < 0.08  # u_th = 0.05
    assert np.all(w > 0)
    # weights add up to n0 * area (per metre in z) over the sampled fraction
    assert np.sum(w) / 0.5 == pytest.approx(1e24 * (NX * DX * length) ** 2, rel=0.1)


def test_xdmf_references(run):
    d = os.path.join(run, "data")
    xmfs = sorted(f for f in os.listdir(d) if f.endswith(".xmf"))
    assert "series.xmf" in xmfs
    assert len([f for f in xmfs if f.startswith("data")]) == len(dumps(run))
    assert sorted(f for f in xmfs if f.startswith("series_")) == [
        "series_fields.xmf", "series_fields_node.xmf", "series_fields_xhalf.xmf", "series_fields_xyhalf.xmf",
        "series_fields_yhalf.xmf", "series_particles_electrons.xmf"]
    for name in xmfs:
        root = ET.parse(os.path.join(d, name)).getroot()
        items = [di for di in root.iter("DataItem") if di.get("Format") == "HDF"]
        assert items, name
        for di in items:
            fname, path = di.text.strip().split(":", 1)
            dims = tuple(int(v) for v in di.get("Dimensions").split())
            with h5py.File(os.path.join(d, fname), "r") as f:
                assert path in f, "%s: %s:%s missing" % (name, fname, path)
                ds = f[path]
                assert ds.shape == dims, "%s: %s shape %s != %s" % (name, path, ds.shape, dims)
                assert ds.dtype.itemsize == int(di.get("Precision")), path
        for di in root.iter("DataItem"):
            if di.get("Format") == "XML":
                dims = [int(v) for v in di.get("Dimensions").split()]
                assert len(di.text.split()) == int(np.prod(dims)), name
        for grid in root.iter("Grid"):
            topo = grid.find("Topology")
            if topo is not None and topo.get("TopologyType") == "Polyvertex":
                n = int(topo.get("NumberOfElements"))
                assert all(int(di.get("Dimensions").split()[0]) == n
                           for di in grid.iter("DataItem"))
    # one temporal collection per block (the fields, each species), every dump in time order
    series = ET.parse(os.path.join(d, "series.xmf")).getroot()
    temporal = [g for g in series.iter("Grid") if g.get("CollectionType") == "Temporal"]
    names = [g.get("Name") for g in temporal]
    assert names == ["fields", "particles_electrons"]
    for g in temporal:
        steps = [c for c in g if c.tag == "Grid"]
        assert all(c.get("Name") == g.get("Name") for c in steps)
        assert len(steps) == len(dumps(run))
        times = [float(c.find("Time").get("Value")) for c in steps]
        assert times == sorted(times)


def test_energy_and_timing(run):
    en = read.read_energy(run)
    cols = list(en)
    assert cols[:2] == ["step", "t"] and cols[cols.index("total"):][:2] == ["total", "gauss_max"]
    assert {"field_E", "field_B", "kinetic_electrons", "kinetic_ions"} <= set(en)
    # the energy balance's columns close the header (docs/output.md)
    assert cols[cols.index("gauss_max") + 1:] == [
        "field_layers", "field_stagger", "in", "out_xmin", "out_xmax", "out_ymin", "out_ymax",
        "lost_electrons", "lost_ions", "balance"]
    assert len(en["step"]) >= 4
    tm = read.read_timing(run)
    for key in ("backend", "device", "steps", "particles", "wall_s", "ns_per_particle_step",
                "bytes_per_particle_step", "bandwidth_fraction"):
        assert key in tm
    assert set(tm["ns_per_particle_step"]) >= {"total", "push", "deposit", "sort", "field",
                                               "exchange", "other"}


def _cli(*args):
    res = subprocess.run([sys.executable, "-m", "diag", *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    files = res.stdout.split()
    assert files
    for f in files:
        with open(f, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n", f
    return files


def test_diag_cli(run):
    files = _cli("summary", run)
    names = [os.path.basename(f) for f in files]
    assert "energy.png" in names
    assert any(n.startswith("field_") for n in names)
    assert any(n.startswith("phase_electrons") for n in names)
    assert all(os.path.dirname(f) == os.path.join(run, "plots") for f in files)
    it = read.list_iterations(run)[-1]
    assert _cli("field", run, "--q", "E", "--c", "z", "--it", str(it))
    assert _cli("field", run, "--q", "rho", "--lineout", "x")
    assert _cli("phase", run, "--species", "electrons")
    assert _cli("spectrum", run, "--species", "electrons")
    assert _cli("energy", run)
    assert _cli("timing", run)


def test_diag_cli_reports_missing(run):
    res = subprocess.run([sys.executable, "-m", "diag", "field", run, "--q", "nope"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1 and "no mesh" in res.stderr


# ---- readers on a synthetic openPMD file (no binary needed) ----

def _synthetic(tmp_path, step=7):
    d = tmp_path / "data"
    d.mkdir()
    length = 5.0e-6
    with h5py.File(d / ("data%08d.h5" % step), "w") as f:
        f.attrs["openPMD"] = np.bytes_("1.1.0")
        f.attrs["meshesPath"] = np.bytes_("meshes/")
        f.attrs["particlesPath"] = np.bytes_("particles/")
        g = f.create_group("data/%d" % step)
        g.attrs["time"] = 0.7
        e = g.create_group("meshes/E")
        e.attrs["axisLabels"] = np.array([b"y", b"x"])
        e.attrs["dataOrder"] = np.bytes_("C")
        e.attrs["gridSpacing"] = np.array([0.5, 0.25])
        e.attrs["gridGlobalOffset"] = np.array([1.0, 2.0])
        for c, pos in (("x", [0, 0.5]), ("y", [0.5, 0]), ("z", [0, 0])):
            ds = e.create_dataset(c, data=np.arange(12, dtype=np.float32).reshape(3, 4))
            ds.attrs["position"] = np.array(pos, dtype=float)
            ds.attrs["unitSI"] = 1.0
        sp = g.create_group("particles/ions")
        n = 5
        for a, v in (("x", np.linspace(2, 3, n)), ("y", np.full(n, 1.5))):
            ds = sp.create_dataset("position/" + a, data=v)
            ds.attrs["unitSI"] = length
            o = sp.create_group("positionOffset/" + a)
            o.attrs["value"], o.attrs["shape"], o.attrs["unitSI"] = 0.0, np.uint64([n]), length
        u = np.array([0.0, 0.1, -0.2, 1.0, 3.0])
        for a, k in zip("xyz", (1.0, 0.0, 0.0)):
            ds = sp.create_dataset("momentum/" + a, data=(1836.0 * k * u).astype(np.float32))
            ds.attrs["unitSI"] = read.M_E * read.C_LIGHT
        sp["momentum"].attrs["macroWeighted"] = np.uint32(0)
        w = sp.create_dataset("weighting", data=np.full(n, 0.01 * read.WEIGHT_SI))
        w.attrs["unitSI"] = 1.0
        for rec, val, unit in (("charge", 1.0, read.E_CHARGE), ("mass", 1836.0, read.M_E)):
            c = sp.create_group(rec)
            c.attrs["value"], c.attrs["shape"], c.attrs["unitSI"] = val, np.uint64([n]), unit
    return str(tmp_path)


def test_readers_synthetic(tmp_path):
    out = _synthetic(tmp_path)
    (tmp_path / "data" / "data00000009.h5.tmp").write_bytes(b"")
    assert read.list_iterations(out) == [7]
    assert read.list_fields(out) == {"E": ["x", "y", "z"]}
    ex = read.read_field(out, "E", "x")
    assert ex.data.shape == (3, 4) and ex.step == 7 and ex.t == pytest.approx(0.7)
    assert np.allclose(ex.x, 2.0 + (np.arange(4) + 0.5) * 0.25)
    assert np.allclose(ex.y, 1.0 + np.arange(3) * 0.5)
    ey = read.read_field(out, "E", "y")
    assert np.allclose(ey.y, 1.0 + (np.arange(3) + 0.5) * 0.5)
    with pytest.raises(KeyError):
        read.read_field(out, "E")
    p = read.read_particles(out, "ions")
    assert p.m == pytest.approx(1836.0) and p.q == pytest.approx(1.0)
    assert np.allclose(p.x, np.linspace(2, 3, 5)) and np.allclose(p.y, 1.5)
    assert np.allclose(p.ux, [0.0, 0.1, -0.2, 1.0, 3.0], rtol=1e-6)
    assert np.allclose(p.w, 0.01)
    assert np.allclose(p.ekin, 1836.0 * (np.sqrt(1 + p.ux**2) - 1), rtol=1e-6)
    assert read.list_species(out) == ["ions"]


def test_energy_timing_readers_and_plots(tmp_path):
    (tmp_path / "energy.csv").write_text(
        "step,t,field_E,field_B,kinetic_electrons,total,gauss_max\n"
        "0,0,0,0,1.5,1.5,0\n10,1,0.1,0.01,1.39,1.5,1e-7\n")
    timing = {"backend": "cpu", "device": "test", "steps": 10, "particles": 100,
              "wall_s": 0.01, "ns_per_particle_step": {"total": 10, "push": 4, "deposit": 3,
                                                       "sort": 1, "field": 1, "other": 1},
              "bytes_per_particle_step": 60, "bandwidth_fraction": 0.2}
    (tmp_path / "timing.json").write_text(json.dumps(timing))
    en = read.read_energy(str(tmp_path))
    assert np.allclose(en["kinetic_electrons"], [1.5, 1.39]) and np.allclose(en["step"], [0, 10])
    assert read.read_timing(str(tmp_path))["ns_per_particle_step"]["push"] == 4
    from diag import plot
    for f in (plot.energy_history(en, str(tmp_path / "e.png")),
              plot.timing_bars(timing, str(tmp_path / "t.png"))):
        assert os.path.getsize(f) > 1000
