"""What a ParaView user sees: data/series.xmf opened with OpenDataFile (the default reader,
Xdmf3ReaderS in Debian's ParaView 5.11), coloured by Ey while a laser pulse crosses the box,
rendered offscreen (tests/paraview_render.py) to a PNG whose colours must follow Ey from the
openPMD file (not a uniform grey box); and a particle quantity drawn at a particle-only dump.

Fields are dumped every 20 steps and particles every 50, so the series mixes fields-only,
particle-only and full dumps. Rendering needs an X display: without one, xvfb-run (Debian's
xvfb) provides it; without either the test is skipped."""

import json
import os
import shutil
import subprocess

import h5py
import numpy as np
import pytest
from matplotlib import image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")
RENDER = os.path.join(ROOT, "tests", "paraview_render.py")
NX, NY, DX, DY, DT = 160, 64, 0.1, 0.2, 0.05

DECK = """
simulation = {{ name = "pv_render"; backend = "cpu"; seed = 1; n0 = 1.1e19; }};
grid = {{ cells = [{nx}, {ny}]; dx = [{dx}, {dy}]; cluster = [16, 16]; }};
time = {{ dt = {dt}; steps = 100; }};
fields = {{
  boundary = {{ xmin = "pml"; xmax = "pml"; ymin = "pml"; ymax = "pml"; }};
  pml = {{ cells = 8; }};
}};
lasers = (
  {{ a0 = 1.0; omega0 = 5.0; w0 = 2.0; focus = 6.0; center = 3.0;
     duration = 3.0; envelope = "sin2"; polarization = 0.0; boundary = "xmin"; }}
);
species = (
  {{ name = "electrons"; charge = -1.0; ppc = [1, 1];
     density = {{ profile = "expr"; expr = "0.01*(x > 10)"; }};
     momentum = {{ thermal = [0.01, 0.01, 0.01]; }}; }}
);
diagnostics = {{
  output = "{out}";
  energy = {{ every = 10; }};
  fields = {{ every = 20; }};
  particles = {{ every = 50; }};
}};
"""


def pvpython_cmd():
    pv = shutil.which("pvpython")
    if not pv:
        pytest.skip("pvpython is missing: tools/install-deps installs python3-paraview")
    if os.environ.get("DISPLAY"):
        return [pv, "--force-offscreen-rendering"]
    if shutil.which("xvfb-run"):
        return ["xvfb-run", "-a", "-s", "-screen 0 1024x768x24", pv,
                "--force-offscreen-rendering"]
    pytest.skip("no X display and no xvfb-run (apt-get install xvfb) to render with")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    cmd = pvpython_cmd()
    tmp = tmp_path_factory.mktemp("pvrender")
    out = tmp / "out"
    deck = tmp / "render.cfg"
    deck.write_text(DECK.format(nx=NX, ny=NY, dx=DX, dy=DY, dt=DT, out=out))
    res = subprocess.run([EMPIC, "--quiet", str(deck)], capture_output=True, text=True,
                         env=dict(os.environ, OMP_NUM_THREADS="2"), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr

    def render(time, array):
        png = tmp / ("%s_%g.png" % (array, time))
        r = subprocess.run(cmd + [RENDER, str(out / "data" / "series.xmf"), str(time), array,
                                  str(png)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        view = json.loads(r.stdout.strip().splitlines()[-1])
        return view, image.imread(str(png))[:, :, :3]
    return out, render


def test_ey_colours_follow_the_field(run):
    out, render = run
    step = 80  # t = 4: the pulse is in the box
    view, img = render(step * DT, "Ey")
    assert view["reader"] == "Xdmf3ReaderS", view
    with h5py.File(out / "data" / ("data%08d.h5" % step), "r") as f:
        ey = f["data/%d/meshes/E/y" % step][()]
    # pixel centres inside the box, mapped back to the node grid the fields block is drawn on
    (c0, c1), (r0, r1) = view["columns"], view["rows"]
    cols = np.arange(int(np.ceil(c0)) + 2, int(c1) - 2)
    rows = np.arange(int(np.ceil(r0)) + 2, int(r1) - 2)
    i = np.rint((cols - c0) / (c1 - c0) * (NX - 1)).astype(int)
    j = np.rint((rows - r0) / (r1 - r0) * (NY - 1)).astype(int)
    h = img.shape[0]
    pix = img[h - 1 - rows][:, cols]           # PNG rows run downwards
    warm = pix[..., 0] - pix[..., 2]            # Cool to Warm: red for Ey > 0, blue below
    field = ey[np.ix_(j, i)]
    assert warm.std() > 0.05, "a uniform picture: Ey is not drawn"
    assert np.mean(np.abs(warm) > 0.2) > 0.01, "hardly any coloured pixel"
    corr = np.corrcoef(warm.ravel(), field.ravel())[0, 1]
    assert corr > 0.8, "the picture does not follow Ey (correlation %.3f)" % corr


def test_particle_quantity_at_a_particle_only_dump(run):
    out, render = run
    view, img = render(2.5, "px")  # step 50: particles, no fields
    with h5py.File(out / "data" / "data00000050.h5", "r") as f:
        assert "meshes" not in f["data/50"] or not len(f["data/50/meshes"])
        px = f["data/50/particles/electrons/momentum/x"][()]
    assert px.size > 10
    coloured = np.abs(img[..., 0] - img[..., 2]) > 0.1   # neither white nor grey
    assert coloured.sum() > 5 * px.size, "the particles are not drawn in colour"
    assert view["bounds"][0] >= 10.0 - DX, "only the particles (x > 10) may be drawn"
