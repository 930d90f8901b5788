"""diag from a user's seat: `empic-diag` run from an unrelated folder, every sub-command
writing its PNG; colour scales that follow the sign of the data; the energy history's
growth-rate fit; SI units; phase spaces of any pair of axes; movies; a summary that draws a
dump worth looking at."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")
sys.path.insert(0, ROOT)

from diag import analysis, plot, read, units  # noqa: E402

PLASMA = """
simulation = {{ name = "diag_test"; backend = "cpu"; seed = 5; n0 = 1.0e18; }};
grid = {{ cells = [32, 16]; dx = [0.2, 0.2]; cluster = [8, 8]; }};
time = {{ dt = 0.1; steps = 20; }};
species = (
  {{ name = "electrons"; charge = -1.0; ppc = [2, 2];
     momentum = {{ thermal = [0.05, 0.05, 0.05]; drift = [0.0, 0.0, 0.3]; }}; }},
  {{ name = "ions"; charge = 1.0; mass = 1836.0; ppc = [2, 2]; immobile = true; }}
);
diagnostics = {{
  output = "{out}";
  energy = {{ every = 5; }};
  fields = {{ every = 10; }};
  particles = {{ every = 10; fraction = 0.5; species = ["electrons"]; }};
  phasespace = ( {{ species = "electrons"; axes = ["x", "ux"]; bins = [32, 32]; every = 10; }} );
  tracks = {{ every = 5; fraction = 0.1; species = ["electrons"]; }};
}};
"""

# a short pulse that crosses the box and leaves it through the PML before the end
PULSE = """
simulation = {{ name = "pulse"; backend = "cpu"; n0 = 1.1e19; }};
grid = {{ cells = [96, 32]; dx = [0.05, 0.1]; }};
time = {{ dt = 0.04; steps = 260; }};
fields = {{ boundary = {{ xmin = "pml"; xmax = "pml"; ymin = "pml"; ymax = "pml"; }};
           pml = {{ cells = 8; }}; }};
lasers = ( {{ a0 = 1.0; omega0 = 10.0; w0 = 1.0; duration = 1.0; }} );
diagnostics = {{ output = "{out}"; energy = {{ every = 10; }};
                fields = {{ every = 40; quantities = ["E", "B"]; }}; }};
"""


def run_deck(tmp, text, name):
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    out = tmp / ("out-" + name)
    deck = tmp / (name + ".cfg")
    deck.write_text(text.format(out=out))
    res = subprocess.run([EMPIC, "--quiet", str(deck)], capture_output=True, text=True,
                         env=dict(os.environ, OMP_NUM_THREADS="2"), timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return str(out)


@pytest.fixture(scope="module")
def plasma(tmp_path_factory):
    return run_deck(tmp_path_factory.mktemp("diag"), PLASMA, "plasma")


@pytest.fixture(scope="module")
def pulse(tmp_path_factory):
    return run_deck(tmp_path_factory.mktemp("pulse"), PULSE, "pulse")


def diag_cli(args, cwd):
    """empic-diag as a user runs it: the installed command, from another folder."""
    exe = shutil.which("empic-diag")
    assert exe, "empic-diag is not on PATH: `make` installs it (tools/install-diag)"
    return subprocess.run([exe] + args, cwd=cwd, capture_output=True, text=True, timeout=300)


SUBCOMMANDS = [
    ["summary"], ["field", "--q", "B", "--c", "z", "--lineout", "x"],
    ["field", "--q", "rho_electrons", "--si"], ["lineout", "--q", "E", "--c", "x"],
    ["movie", "--q", "E", "--c", "x"], ["energy", "--log", "--fit", "0,2"], ["timing"],
    ["phase", "--axes", "y,uz", "--axes", "ux,uy"], ["spectrum", "--si"], ["phasespace"],
    ["phasespace", "--log"],
    ["tracks"],
]


@pytest.mark.parametrize("args", SUBCOMMANDS, ids=lambda a: "-".join(a[:1] + a[1:3]))
def test_every_subcommand_from_another_folder(plasma, tmp_path, args):
    res = diag_cli([args[0], plasma] + args[1:] + ["--out", "plots"], cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    written = [l for l in res.stdout.splitlines() if l.endswith((".png", ".mp4", ".gif"))]
    assert any(w.endswith(".png") for w in written), res.stdout
    for w in written:
        path = os.path.join(tmp_path, w)
        assert os.path.getsize(path) > 1000, path
        assert os.path.abspath(path).startswith(str(tmp_path)), path


def test_spectrum_compares_runs_within_a_range(plasma, tmp_path):
    """--compare draws another run's spectra beside this one's; --xrange keeps the particles
    of a slab alone (the box is 6.4 long: half of it holds about half of the sample)."""
    res = diag_cli(["spectrum", plasma, "--compare", plasma, "--xrange", "0,3.2", "--out",
                    "plots"], cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert any(l.endswith(".png") for l in res.stdout.splitlines()), res.stdout
    p = read.read_particles(plasma, "electrons")
    half = np.sum(p.w[p.x < 3.2]) / np.sum(p.w)
    assert 0.35 < half < 0.65


def test_python_m_diag_from_another_folder(plasma, tmp_path):
    res = subprocess.run([sys.executable, "-m", "diag", "info", plasma], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "species electrons" in res.stdout


def test_bad_phase_axis_is_explained(plasma, tmp_path):
    res = diag_cli(["phase", plasma, "--axes", "x,pz"], cwd=tmp_path)
    assert res.returncode == 1 and "expected two of x, y, ux, uy, uz" in res.stderr


def test_colour_scale_follows_the_sign():
    cmap, norm = plot.colour_scale(np.array([-2.0, 1.0]))
    assert cmap == "RdBu_r" and (norm.vmin, norm.vmax) == (-2.0, 2.0)
    cmap, norm = plot.colour_scale(np.array([0.5, 3.0]))  # a density: sequential, from 0
    assert cmap == "viridis" and (norm.vmin, norm.vmax) == (0.0, 3.0)
    cmap, norm = plot.colour_scale(np.array([-3.0, -0.5]))  # electron charge density
    assert cmap == "viridis_r" and (norm.vmin, norm.vmax) == (-3.0, 0.0)
    cmap, norm = plot.colour_scale(np.array([1e-3, 10.0]), log=True, cmap="magma")
    assert cmap == "magma" and isinstance(norm, plot.mcolors.LogNorm)
    assert (norm.vmin, norm.vmax) == pytest.approx((1e-3, 10.0))
    _, norm = plot.colour_scale(np.array([-1.0, 1.0]), log=True)
    assert isinstance(norm, plot.mcolors.SymLogNorm)
    _, norm = plot.colour_scale(np.array([-1.0, 1.0]), vmin=-0.1, vmax=0.2)
    assert (norm.vmin, norm.vmax) == (-0.1, 0.2)


def test_growth_rate_fit_recovers_the_rate():
    """Noise floor, exponential growth of the energy at 2 gamma = 0.8, saturation."""
    t = np.linspace(0, 40, 401)
    w = 1e-8 * np.exp(0.8 * np.minimum(np.maximum(t - 5, 0), 20)) + 1e-8
    rng = np.random.default_rng(1)
    w *= 1 + 0.02 * rng.standard_normal(t.size)
    g = analysis.growth_rate(t, w, column="field_B")
    assert 5 < g.t0 < g.t1 < 25
    assert g.rate == pytest.approx(0.8, rel=0.02) and g.gamma == pytest.approx(0.4, rel=0.02)
    g = analysis.growth_rate(t, w, (10, 20))
    assert g.rate == pytest.approx(0.8, rel=0.01)
    assert analysis.growing_column({"field_E": np.ones(5), "field_B": w[:5] * [1, 2, 9, 50, 99]}) \
        == "field_B"
    # a field at round-off level that grows by a larger factor is not the one that matters
    assert analysis.growing_column({"field_E": [1e-8, 1e-4, 1e-2],
                                    "field_B": [1e-30, 1e-20, 1e-16]}) == "field_E"
    with pytest.raises(ValueError):
        analysis.growth_rate(t, np.exp(-t))
    # a field from round-off at t = 0 that jumps to a noise level first (the Weibel deck): the
    # window starts after the jump and ends at saturation
    w2 = w.copy()
    w2[0] = 1e-31
    g = analysis.growth_rate(t, w2)
    assert g.t0 >= 5 and g.t1 <= 25 and g.rate == pytest.approx(0.8, rel=0.02)


def test_energy_fit_on_the_command_line(tmp_path):
    t = np.linspace(0, 30, 61)
    fe = 1e-6 * np.exp(0.5 * np.minimum(t, 20))
    rows = ["step,t,field_E,field_B,kinetic_e,total,gauss_max"]
    rows += ["%d,%g,%g,%g,%g,%g,0" % (k, tk, a, 1e-9, 1.0, 1.0 + a) for k, (tk, a)
             in enumerate(zip(t, fe))]
    (tmp_path / "energy.csv").write_text("\n".join(rows) + "\n")
    res = diag_cli(["energy", str(tmp_path), "--fit", "2,18"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "growth of field_E over t = 2 .. 18: energy rate 0.5" in res.stdout
    assert "gamma = 0.25" in res.stdout
    assert os.path.isfile(tmp_path / "plots" / "energy.png")
    res = diag_cli(["energy", str(tmp_path), "--fit", "18,2"], cwd=tmp_path)
    assert res.returncode == 1 and "--fit: expected T0,T1" in res.stderr


def test_energy_balance_panel(tmp_path):
    """A laser run's energy.csv: the title gives the balance's drift relative to the laser
    energy in, not the total's drift (the total rises as the pulse enters)."""
    t = np.linspace(0, 40, 41)
    ein = 50.0 * np.minimum(t, 10) / 10
    out = 50.0 * np.clip(t - 25, 0, 10) / 10
    field = ein - out
    rows = ["step,t,field_E,field_B,total,gauss_max,field_layers,field_stagger,in,out_xmin,"
            "out_xmax,out_ymin,out_ymax,balance"]
    rows += ["%d,%g,%g,%g,%g,0,0,0,%g,0,%g,0,0,%g" % (k, tk, f / 2, f / 2, f, a, b,
                                                      f + b - a + 1e-4 * k / 40)
             for k, (tk, f, a, b) in enumerate(zip(t, field, ein, out))]
    (tmp_path / "energy.csv").write_text("\n".join(rows) + "\n")
    en = read.read_energy(str(tmp_path))
    assert plot.open_box(en)
    last, worst, what = plot.balance_drift(en)
    assert what == "in" and last == pytest.approx(2e-6) and worst == pytest.approx(2e-6)
    res = diag_cli(["energy", str(tmp_path)], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert os.path.isfile(tmp_path / "plots" / "energy.png")
    closed = {k: v for k, v in en.items() if k not in ("in", "out_xmax")}
    assert not plot.open_box(closed)


def test_si_units():
    u = units.Units(True, 1e18)
    assert u.length()[0] == pytest.approx(5.3141, rel=1e-4)          # c/omega_p in um
    assert u.time()[0] == pytest.approx(17.725, rel=1e-4)            # 1/omega_p in fs
    assert u.field("Ey") == (pytest.approx(9.6159e10, rel=1e-4), "V/m")
    assert u.energy()[0] == pytest.approx(0.51099895, rel=1e-6)      # MeV
    assert units.Units(False).field("Bz")[0] == 1.0


def test_read_n0_from_run_cfg(plasma, pulse):
    assert units.read_n0(plasma) == 1.0e18 and units.read_n0(pulse) == 1.1e19


def test_summary_draws_the_dump_with_the_pulse(pulse, tmp_path):
    """The pulse has left the box at the last dump (only PML leftovers): the summary draws
    the dump with the most field energy instead."""
    its = read.list_iterations(pulse)
    last = read.read_field(pulse, "E", "y", its[-1])
    chosen = __import__("diag.__main__", fromlist=["meaningful_dump"]).meaningful_dump(pulse)
    best = read.read_field(pulse, "E", "y", chosen)
    assert chosen != its[-1]
    assert np.max(np.abs(best.data)) > 100 * np.max(np.abs(last.data))
    res = diag_cli(["summary", pulse, "--out", "plots"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "field_Ey_%08d.png" % chosen in res.stdout


def test_movie_has_a_frame_per_dump(pulse, tmp_path):
    res = diag_cli(["movie", pulse, "--q", "E", "--c", "y", "--out", "m"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    frames = sorted(os.listdir(tmp_path / "m" / "movie_Ey"))
    assert len(frames) == len(read.list_iterations(pulse))
    movie = [l for l in res.stdout.splitlines() if l.endswith((".mp4", ".gif"))]
    assert len(movie) == 1 and os.path.getsize(tmp_path / movie[0]) > 1000
    if shutil.which("ffmpeg"):
        assert movie[0].endswith(".mp4")


def test_phase_space_axes(plasma, tmp_path):
    p = read.read_particles(plasma, "electrons")
    assert plot.default_pairs(p) == [("x", "uz"), ("y", "uz")]  # the drift is along z
    v, label = plot.phase_axis(p, "uz", units.Units(True, 1e18))
    np.testing.assert_allclose(v, p.uz * p.m * 0.51099895, rtol=1e-6)
    assert "MeV/c" in label
    with pytest.raises(ValueError):
        plot.phase_axis(p, "pz")
