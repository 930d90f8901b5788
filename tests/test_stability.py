"""Unstable time steps: refused by the deck check (dt at the Courant limit, omega_p dt at
the densest load position) or stopped by the energy guard during the run, with the last
good checkpoint kept; the decks of decks/ pass the check."""
import glob
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")
ENV = dict(os.environ, OMP_NUM_THREADS="2")

WARM = """simulation = { name = "warm"; backend = "cpu"; seed = 2; };
grid = { cells = [64, 64]; dx = [0.1, 0.1]; cluster = [8, 8]; };
time = { dt = %(dt)s; steps = %(steps)d; };
species = ( { name = "e"; charge = -1.0; ppc = [4, 4]; density = %(density)s;
              momentum = { thermal = [%(uth)s, %(uth)s, %(uth)s]; }; } );
diagnostics = { energy = { every = %(every)d;%(growth)s }; checkpoint = { every = 75; }; };
"""


def deck(tmp_path, name="d", dt="0.05", steps=100, density="{ n = 1.0; }", uth="0.05",
         every=10, growth=""):
    path = tmp_path / (name + ".cfg")
    path.write_text(WARM % dict(dt=dt, steps=steps, density=density, uth=uth, every=every,
                                growth=growth))
    return str(path)


def empic(*args):
    return subprocess.run([EMPIC, *args], capture_output=True, text=True, env=ENV,
                          timeout=300)


def test_dt_at_the_courant_limit_is_refused(tmp_path):
    """dt = 0.07071 is below the limit 0.0707107 of dx = dy = 0.1 by 1e-5 only."""
    res = empic("--check", deck(tmp_path, dt="0.07071"))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "time.dt: 0.07071 is within 0.1 % of the Courant limit 0.0707106781" in res.stderr
    assert empic("--check", deck(tmp_path, dt="0.0706")).returncode == 0


def test_dense_spot_refused_with_omega_p_dt(tmp_path):
    """n = 1e4 in a few cells: omega_p = 100, omega_p dt = 5 at dt = 0.05."""
    dense = '{ profile = "expr"; expr = "x > 3 && x < 3.3 && y > 3 && y < 3.3 ? 1e4 : 1"; }'
    res = empic("--check", deck(tmp_path, density=dense))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "time.dt: omega_p dt = 5 (omega_p = 100" in res.stderr
    assert "n = 10000 at (x, y) = (3.0" in res.stderr
    assert "expected dt < 0.019" in res.stderr


def test_omega_p_dt_warning_and_grid_heating(tmp_path):
    res = empic("--check", deck(tmp_path, density="{ n = 900.0; }", uth="0.02",
                                dt="0.0616"))
    assert res.returncode == 0, res.stderr
    assert "warning: time.dt: omega_p dt = 1.848" in res.stderr
    assert "150 Debye lengths" in res.stderr


def test_energy_guard_stops_and_keeps_the_good_checkpoint(tmp_path):
    """omega_p dt = 1.85 and dx = 150 lambda_D pass the check (warnings) but heat the
    plasma 27-fold by step 150: energy rows every 100 steps do not see it, the check before
    the checkpoint of step 150 does; the checkpoint of step 75 stays."""
    path = deck(tmp_path, density="{ n = 900.0; }", uth="0.02", dt="0.0616", steps=400,
                every=100)
    out = tmp_path / "out"
    res = empic("--quiet", "--output", str(out), path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "step 150: the total energy" in res.stderr
    assert "above diagnostics.energy.growth_limit = 10" in res.stderr
    assert "the last checkpoint is intact: %s/checkpoint/ckpt00000075.h5" % out in res.stderr
    assert sorted(os.listdir(out / "checkpoint")) == ["ckpt00000075.h5"]
    # the guard off: the run goes to its end
    off = deck(tmp_path, name="off", density="{ n = 900.0; }", uth="0.02", dt="0.0616",
               steps=200, every=100, growth=" growth_limit = 0.0;")
    res = empic("--quiet", "--output", str(tmp_path / "off"), off)
    assert res.returncode == 0, res.stderr


def test_decks_pass_the_check():
    for path in sorted(glob.glob(os.path.join(ROOT, "decks", "*.cfg")) +
                       glob.glob(os.path.join(ROOT, "decks", "bench", "*.cfg"))):
        res = empic("--check", path)
        assert res.returncode == 0, path + ": " + res.stderr


def test_energy_guard_on_two_ranks(tmp_path):
    """Both ranks reach the checkpoint's energy check and stop together, as one rank does."""
    import shutil
    mpirun = shutil.which("mpirun")
    built = subprocess.run([EMPIC, "--version"], capture_output=True, text=True).stdout
    if not mpirun or ", no MPI" in built:
        import pytest
        pytest.skip("no mpirun, or bin/empic built with MPI=0")
    path = deck(tmp_path, density="{ n = 900.0; }", uth="0.02", dt="0.0616", steps=400,
                every=100)
    out = tmp_path / "out"
    env = dict(ENV, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    res = subprocess.run([mpirun, "-np", "2", EMPIC, "--quiet", "--output", str(out), path],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "step 150: the total energy" in res.stderr
    assert sorted(os.listdir(out / "checkpoint")) == ["ckpt00000075.h5"]
    assert (out / "energy.csv").exists() and (out / "timing.json").exists()
