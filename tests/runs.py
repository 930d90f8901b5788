"""What the Python tests that run bin/empic share: the command (on the GPU machine
EMPIC_TEST_BACKEND=cuda, EMPIC_TEST_EMPIC the command that runs the bundled binary,
EMPIC_TEST_MPIRUN its mpirun, as tools/gpu-test sets them), a run's HDF5 files compared bit
for bit, and the openPMD validator."""

import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")
BACKEND = os.environ.get("EMPIC_TEST_BACKEND", "cpu")
EMPIC_CMD = os.environ.get("EMPIC_TEST_EMPIC", EMPIC).split()
# one OpenMP thread per process: ranks share the two cores of the test machine
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")


def need_empic():
    if not os.path.isfile(EMPIC_CMD[0]):
        pytest.skip("bin/empic is missing")


def has_mpi():
    return "no MPI" not in subprocess.run(EMPIC_CMD + ["--version"], capture_output=True,
                                          text=True).stdout


def empic(*args, ranks=1, cwd=None):
    """bin/empic with args on the test's backend (under mpirun with ranks > 1; in folder cwd
    when given); its result, asserted to succeed."""
    need_empic()
    cmd = EMPIC_CMD + ["--backend", BACKEND, "--quiet", *args]
    if ranks > 1:
        mpirun = os.environ.get("EMPIC_TEST_MPIRUN") or shutil.which("mpirun")
        assert mpirun, "mpirun is missing: tools/install-deps installs OpenMPI (make does)"
        cmd = [mpirun, "-np", str(ranks)] + cmd
    res = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300, cwd=cwd)
    assert res.returncode == 0, res.stdout + res.stderr
    return res


def contents(path):
    """Every dataset and attribute of an HDF5 file as bytes, but the file's creation date."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            for k, v in obj.attrs.items():
                out[name + "@" + k] = np.asarray(v).tobytes()
            if isinstance(obj, h5py.Dataset):
                out[name] = np.asarray(obj[()]).tobytes()
        f.visititems(visit)
        out.update({"@" + k: np.asarray(v).tobytes() for k, v in f.attrs.items() if k != "date"})
    return out


def assert_same_dumps(a, b, steps):
    """Run folder b holds a's energy.csv and a's data dumps at `steps`, bit for bit."""
    assert (a / "energy.csv").read_bytes() == (b / "energy.csv").read_bytes()
    for s in steps:
        name = "data%08d.h5" % s
        ca, cb = contents(a / "data" / name), contents(b / "data" / name)
        bad = [k for k in set(ca) | set(cb) if ca.get(k) != cb.get(k)]
        assert not bad, "%s differs in %s" % (name, sorted(bad)[:6])


def validate(path):
    """The openPMD validator passes on a dump (left out where a GPU machine's bundle lacks
    the validator; tools/install-deps installs it here)."""
    exe = shutil.which("openPMD_check_h5")
    cmd = [exe] if exe else [sys.executable, "-m", "openpmd_validator.check_h5"]
    if not exe and subprocess.run([sys.executable, "-c", "import openpmd_validator"],
                                  capture_output=True).returncode != 0:
        assert BACKEND != "cpu", "the openPMD validator is missing"
        return
    res = subprocess.run(cmd + ["-i", str(path)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "Result: 0 Errors" in res.stdout, res.stdout + res.stderr
