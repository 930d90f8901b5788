"""openPMD-viewer on a run with fields every 10 steps and particles every 25: the openPMD
root attributes are the same in every dump (meshesPath and particlesPath in all of them,
with an empty group where a dump has none), so OpenPMDTimeSeries opens the series without
warnings and reads a field and a particle quantity, and asking for particles at a
fields-only step gives an empty answer or a clear error, not a KeyError 'particlesPath'.
openPMD-viewer's check_all_files (on by default) also compares the fields and species each
file holds, which differ between dumps of different cadences: it still prints "different
openPMD parameters" for such a series, so the check is off here."""

import os
import subprocess
import warnings

import h5py
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")

DECK = """
simulation = {{ name = "viewer"; backend = "cpu"; seed = 5; n0 = 1.0e18; }};
grid = {{ cells = [32, 16]; dx = [0.2, 0.2]; cluster = [8, 8]; }};
time = {{ dt = 0.1; steps = 50; }};
species = (
  {{ name = "electrons"; charge = -1.0; ppc = [2, 2];
     momentum = {{ thermal = [0.05, 0.05, 0.05]; }}; }}
);
diagnostics = {{ output = "{out}"; fields = {{ every = 10; }}; particles = {{ every = 25; }}; }};
"""


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    tmp = tmp_path_factory.mktemp("viewer")
    o = tmp / "out"
    (tmp / "v.cfg").write_text(DECK.format(out=o))
    res = subprocess.run([EMPIC, "--quiet", str(tmp / "v.cfg")], capture_output=True,
                         text=True, env=dict(os.environ, OMP_NUM_THREADS="2"), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return o


def test_root_attributes_are_the_same_in_every_dump(out):
    seen = set()
    for name in sorted(os.listdir(out / "data")):
        if name.endswith(".h5"):
            with h5py.File(out / "data" / name, "r") as f:
                attrs = {k: f.attrs[k] for k in ("meshesPath", "particlesPath")}
                it = f["data"][list(f["data"])[0]]
                assert "meshes" in it and "particles" in it, name  # the groups behind them
                seen.add(tuple(sorted((k, bytes(v)) for k, v in attrs.items())))
    assert len(seen) == 1, seen


def test_openpmd_viewer_reads_without_warnings(out, capsys):
    ts_mod = pytest.importorskip("openpmd_viewer")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ts = ts_mod.OpenPMDTimeSeries(str(out / "data"), check_all_files=False)
    printed = capsys.readouterr()
    assert "different openPMD parameters" not in printed.out + printed.err, printed
    assert list(ts.iterations) == [0, 10, 20, 25, 30, 40, 50]
    ey, info = ts.get_field("E", "y", iteration=20)
    with h5py.File(out / "data" / "data00000020.h5", "r") as f:  # the viewer gives SI
        ds = f["data/20/meshes/E/y"]
        want = ds[()] * f["data/20/meshes/E"].attrs["unitSI"] if "unitSI" not in ds.attrs \
            else ds[()] * ds.attrs["unitSI"]
    np.testing.assert_allclose(ey, want if ey.shape == want.shape else want.T, rtol=1e-6)
    (ux,) = ts.get_particle(["ux"], species="electrons", iteration=25)
    with h5py.File(out / "data" / "data00000025.h5", "r") as f:
        assert ux.size == f["data/25/particles/electrons/momentum/x"].shape[0] > 0
    try:
        ts.get_particle(["ux"], species="electrons", iteration=20)
    except KeyError as e:
        assert "particlesPath" not in str(e), e
    except (ValueError, OSError):
        pass
