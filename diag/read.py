"""Readers for empic output (design.md §9): openPMD dumps, energy.csv and timing.json.

Everything is returned in empic's normalised units (lengths in c/ω_p, time in 1/ω_p,
fields in m_e c ω_p / e, momenta u = γv/c, weights in n0 (c/ω_p)^2 per unit length in z).
The dumps store mesh and particle data in these units already, with openPMD ``unitSI``
factors for SI; only the particle ``weighting`` (real particles per metre in z, openPMD
requires unitSI = 1) and the per-real-particle momentum p = m u are converted back.
"""

import json
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field

import h5py
import numpy as np

# CODATA 2018
E_CHARGE = 1.602176634e-19
M_E = 9.1093837015e-31
C_LIGHT = 299792458.0
EPS0 = 8.8541878128e-12
# n0 (c/ω_p)^2 = ε0 m_e c^2 / e^2, whatever n0: real particles per metre in z per unit
# normalised weight w dx dy.
WEIGHT_SI = EPS0 * M_E * C_LIGHT**2 / E_CHARGE**2

_DUMP_RE = re.compile(r"^data(\d+)\.h5$")


def data_dir(outdir):
    """The folder holding the dumps: OUTDIR/data, or OUTDIR itself if it holds them."""
    d = os.path.join(outdir, "data")
    return d if os.path.isdir(d) else outdir


def note(msg):
    """One line on stderr about something skipped."""
    print("diag: %s" % msg, file=sys.stderr)


class Damaged(OSError):
    """A file that HDF5 cannot read: truncated, or a byte that its checksum (empic writes
    every dataset with HDF5's Fletcher-32 filter) finds changed. The message names the file."""


def _why(e):
    why = "%s" % (e.args[0] if e.args else type(e).__name__)
    if "filter returned failure" in why:  # the Fletcher-32 filter: a checksum differs
        why = "a checksum does not match: bytes changed after it was written"
    return why


@contextmanager
def _open(path):
    """h5py.File(path, "r"), a read failure inside turned into Damaged naming the file."""
    try:
        with h5py.File(path, "r") as f:
            yield f
    except (Damaged, KeyError):
        raise
    except (OSError, RuntimeError, ValueError) as e:
        raise Damaged("%s is damaged (%s)" % (path, _why(e))) from e


_checked = {}   # (path, size, mtime, full) -> None or why the dump cannot be read
_noted = set()  # damaged files already named on stderr


def _probe(path, full):
    """None if every group and dataset of the dump opens and a first element (full: every
    element, which checks every checksum) reads."""
    def touch(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.size:
            if full:
                obj[()]
            else:
                obj[(0,) * obj.ndim] if obj.ndim else obj[()]
        dict(obj.attrs)
    try:
        with h5py.File(path, "r") as f:
            for it in f["data"]:
                f["data"][it].visititems(touch)
        return None
    except Exception as e:  # h5py raises OSError, KeyError, RuntimeError, ValueError...
        return _why(e)


def dump_problem(path, full=False):
    """Why the dump at path cannot be read (truncated, corrupt), or None. Without `full`,
    only its structure and first elements are read (a changed byte further in shows when
    the data is read: Damaged)."""
    try:
        st = os.stat(path)
    except OSError as e:
        return str(e)
    key = (path, st.st_size, st.st_mtime_ns, full)
    if key not in _checked:
        _checked[key] = _probe(path, full)
    return _checked[key]


def skip(e, what="skipped"):
    """Name a damaged file once on stderr (Damaged e) with what is left out."""
    if str(e) not in _noted:
        _noted.add(str(e))
        note("%s: %s" % (e, what))


def list_dumps(outdir):
    """Sorted steps of every dump file (data%08d.h5; temporary files are ignored)."""
    d = data_dir(outdir)
    if not os.path.isdir(d):
        return []
    return sorted(int(m.group(1)) for m in map(_DUMP_RE.match, os.listdir(d)) if m)


def list_iterations(outdir):
    """Sorted steps of the readable dumps; a damaged one is named once on stderr and left
    out."""
    its = []
    for it in list_dumps(outdir):
        path = dump_path(outdir, it)
        why = dump_problem(path)
        if why is None:
            its.append(it)
        elif path not in _noted:
            _noted.add(path)
            note("%s is damaged (%s): skipped" % (path, why))
    return its


def dump_contents(outdir, it):
    """(time, {record: [components]}, {species: particle count}) of one dump."""
    with _open(dump_path(outdir, it)) as f:
        g = f["data/%d" % it]
        t = float(g.attrs.get("time", np.nan))
        meshes, species = {}, {}
        if _has(f, it, "meshes"):
            m = _group(f, it, "meshes")
            meshes = {k: (sorted(m[k].keys()) if isinstance(m[k], h5py.Group) else [])
                      for k in m.keys()}
        if _has(f, it, "particles"):
            p = _group(f, it, "particles")
            for s in p.keys():
                w = p[s].get("weighting")
                species[s] = int(w.shape[0]) if isinstance(w, h5py.Dataset) else \
                    int(w.attrs.get("shape", [0])[0]) if w is not None else 0
        return t, meshes, species


def dump_path(outdir, it):
    return os.path.join(data_dir(outdir), "data%08d.h5" % it)


def _resolve_it(outdir, it, want=None):
    """`it` itself, or the last dump (holding `want`: 'meshes' or 'particles')."""
    its = list_iterations(outdir)
    if not its:
        raise FileNotFoundError("no dumps in %s" % data_dir(outdir))
    if it is not None:
        if it not in its:
            raise FileNotFoundError("no dump for step %d in %s (have %s)"
                                    % (it, data_dir(outdir), its))
        return it
    for cand in reversed(its):
        if want is None:
            return cand
        with _open(dump_path(outdir, cand)) as f:
            g = f["data/%d" % cand]
            if want in g and len(g[want]) > 0:
                return cand
    raise FileNotFoundError("no dump with %s in %s" % (want, data_dir(outdir)))


def _str(v):
    return v.decode() if isinstance(v, (bytes, np.bytes_)) else str(v)


def _group(f, it, what):
    base = f["data/%d" % it]
    path = _str(f.attrs.get(what + "Path", what + "/")).strip("/")
    if path not in base:
        raise KeyError("dump %d has no %s" % (it, what))
    return base[path]


def _has(f, it, what):
    base = f["data/%d" % it]
    return _str(f.attrs.get(what + "Path", what + "/")).strip("/") in base


def list_fields(outdir, it=None):
    """{record: [components]} of a dump's meshes ([] for scalar records; {} for a dump
    without meshes)."""
    it = _resolve_it(outdir, it, "meshes")
    with _open(dump_path(outdir, it)) as f:
        if not _has(f, it, "meshes"):
            return {}
        m = _group(f, it, "meshes")
        return {k: (sorted(m[k].keys()) if isinstance(m[k], h5py.Group) else [])
                for k in m.keys()}


def derived_mesh(name):
    """Whether mesh record `name` is no field of the grid: an averaged record (E_avg, E2_avg,
    rho_avg, ...: the mean over the steps of its attribute averageSteps) or the external
    fields (E_ext, B_ext)."""
    return name.endswith("_avg") or name.endswith("_ext")


def list_species(outdir, it=None):
    """Species names of a dump's particles (the last dump with particles by default)."""
    try:
        it = _resolve_it(outdir, it, "particles")
    except FileNotFoundError:
        return []
    with _open(dump_path(outdir, it)) as f:
        return sorted(_group(f, it, "particles").keys())


@dataclass
class Field:
    """One mesh component: data[j, i] at (x[i], y[j])."""
    name: str
    step: int
    t: float
    data: np.ndarray
    x: np.ndarray
    y: np.ndarray
    unit_si: float = 1.0
    attrs: dict = field(default_factory=dict)

    @property
    def extent(self):
        """imshow extent with cells centred on the sample points."""
        dx = self.x[1] - self.x[0] if len(self.x) > 1 else 1.0
        dy = self.y[1] - self.y[0] if len(self.y) > 1 else 1.0
        return [self.x[0] - dx / 2, self.x[-1] + dx / 2, self.y[0] - dy / 2, self.y[-1] + dy / 2]


def read_field(outdir, q, c=None, it=None):
    """Mesh record `q` (E, B, J, rho, rho_<species>), component `c` (x, y, z) of dump `it`
    (default: the last dump with meshes), with its staggered axes."""
    it = _resolve_it(outdir, it, "meshes")
    with _open(dump_path(outdir, it)) as f:
        meshes = _group(f, it, "meshes")
        if q not in meshes:
            raise KeyError("dump %d has no mesh %r (have %s)" % (it, q, sorted(meshes.keys())))
        rec = meshes[q]
        if isinstance(rec, h5py.Group):
            if c is None or c not in rec:
                raise KeyError("mesh %s needs a component, one of %s" % (q, sorted(rec.keys())))
            comp, name = rec[c], q + c
        else:
            comp, name = rec, q
        labels = [_str(a) for a in rec.attrs["axisLabels"]]
        if _str(rec.attrs.get("dataOrder", "C")) == "F":
            labels = labels[::-1]
        spacing = np.asarray(rec.attrs["gridSpacing"], dtype=float)
        offset = np.asarray(rec.attrs["gridGlobalOffset"], dtype=float)
        pos = np.asarray(comp.attrs.get("position", np.zeros(len(labels))), dtype=float)
        data = np.asarray(comp[()], dtype=np.float64)
        axes = {}
        for k, lab in enumerate(labels):
            axes[lab] = offset[k] + (np.arange(data.shape[k]) + pos[k]) * spacing[k]
        if labels == ["x", "y"]:
            data = data.T
        t = float(f["data/%d" % it].attrs["time"])
        attrs = {k: v for k, v in rec.attrs.items()}
        return Field(name, it, t, data, axes["x"], axes["y"],
                     float(comp.attrs.get("unitSI", 1.0)), attrs)


def _component(rec, n=None):
    """Values of a record component, constant (value + shape) or dataset."""
    if "value" in rec.attrs:
        shape = tuple(int(s) for s in rec.attrs["shape"])
        return np.full(shape if n is None else (n,), float(rec.attrs["value"]))
    return np.asarray(rec[()], dtype=np.float64)


@dataclass
class Particles:
    """A particle sample in normalised units; arrays of one length."""
    species: str
    step: int
    t: float
    q: float
    m: float
    x: np.ndarray
    y: np.ndarray
    ux: np.ndarray
    uy: np.ndarray
    uz: np.ndarray
    w: np.ndarray

    @property
    def gamma(self):
        return np.sqrt(1.0 + self.ux**2 + self.uy**2 + self.uz**2)

    @property
    def ekin(self):
        """Kinetic energy (γ - 1) m per real particle, in m_e c^2."""
        u2 = self.ux**2 + self.uy**2 + self.uz**2
        return self.m * u2 / (self.gamma + 1.0)  # (γ-1) without cancellation

    def __len__(self):
        return len(self.x)


def read_particles(outdir, species, it=None):
    """The dumped sample of `species` at dump `it` (default: the last with particles)."""
    it = _resolve_it(outdir, it, "particles")
    return read_particles_file(dump_path(outdir, it), it, species)


def read_particles_file(path, it, species):
    """The particles of `species` in openPMD file `path` (iteration `it`)."""
    with _open(path) as f:
        parts = _group(f, it, "particles")
        if species not in parts:
            raise KeyError("dump %d has no species %r (have %s)"
                           % (it, species, sorted(parts.keys())))
        sp = parts[species]
        w = _component(sp["weighting"])
        n = len(w)

        def per_particle(rec_name, comp):
            rec = sp[rec_name]
            c = rec[comp] if comp else rec
            v = _component(c, n) * float(c.attrs.get("unitSI", 1.0))
            if int(rec.attrs.get("macroWeighted", 0)) == 1:
                v = v / w ** float(rec.attrs.get("weightingPower", 0.0))
            return v

        m_si = per_particle("mass", None)
        q_si = per_particle("charge", None)
        length = float(sp["position/x"].attrs["unitSI"])
        pos = [(_component(sp["position/" + a]) * float(sp["position/" + a].attrs["unitSI"])
                + _component(sp["positionOffset/" + a], n)
                * float(sp["positionOffset/" + a].attrs["unitSI"])) / length for a in "xy"]
        u = [per_particle("momentum", a) / (m_si * C_LIGHT) if n else np.zeros(0)
             for a in "xyz"]
        t = float(f["data/%d" % it].attrs["time"])
        m = float(m_si[0] / M_E) if n else float(sp["mass"].attrs.get("value", 1.0))
        q = float(q_si[0] / E_CHARGE) if n else float(sp["charge"].attrs.get("value", -1.0))
        return Particles(species, it, t, q, m, pos[0], pos[1], u[0], u[1], u[2],
                         w / WEIGHT_SI)


def read_charge_states(outdir, it=None):
    """{species: (states, weights)} of the ionizing species (those whose dumps carry
    charge_state) in dump `it` (default: the last with particles): each particle's charge
    state and its weighting."""
    it = _resolve_it(outdir, it, "particles")
    out = {}
    with h5py.File(dump_path(outdir, it), "r") as f:
        parts = _group(f, it, "particles")
        for name in sorted(parts.keys()):
            if "charge_state" in parts[name]:
                out[name] = (parts[name]["charge_state"][()].astype(int),
                             _component(parts[name]["weighting"]))
    return it, out


def read_energy(outdir):
    """energy.csv (or its temporary name while a run is going) as {column: array}."""
    for name in ("energy.csv", "energy.csv.tmp"):
        path = os.path.join(outdir, name)
        if os.path.isfile(path):
            break
    else:
        raise FileNotFoundError("no energy.csv in %s" % outdir)
    with open(path) as fh:
        header = fh.readline().strip().split(",")
        rows = [line.strip().split(",") for line in fh if line.strip()]
    table = np.array([[float(v) for v in r] for r in rows if len(r) == len(header)],
                     dtype=np.float64).reshape(-1, len(header))
    return {h: table[:, k] for k, h in enumerate(header)}


def read_timing(outdir):
    """timing.json as a dict."""
    with open(os.path.join(outdir, "timing.json")) as fh:
        return json.load(fh)


# ---- in-code diagnostics: phase-space histograms (OUTDIR/phasespace) and tracks -----------

_PS_RE = re.compile(r"^ps(\d+)\.h5$")
_TRACK_RE = re.compile(r"^tracks(\d+)\.h5$")


def _series_steps(folder, pattern):
    if not os.path.isdir(folder):
        return []
    return sorted(int(m.group(1)) for m in map(pattern.match, os.listdir(folder)) if m)


def phasespace_path(outdir, it):
    return os.path.join(outdir, "phasespace", "ps%08d.h5" % it)


def list_phasespace(outdir):
    """{histogram name: [steps]} of the in-code phase-space files."""
    out = {}
    for it in _series_steps(os.path.join(outdir, "phasespace"), _PS_RE):
        try:
            with _open(phasespace_path(outdir, it)) as f:
                for name in _group(f, it, "meshes").keys():
                    out.setdefault(name, []).append(it)
        except Damaged as e:
            skip(e)
    return out


@dataclass
class Histogram:
    """An in-code phase-space histogram: data[j, i] (2D) or data[i] (1D) over the axes in
    `labels` (axis 0 first, e.g. ["x", "ux"]); edges[k] are the bin edges of axis k (of
    log10 of the value for a "log10_" axis). Values are charge densities in phase space:
    (data * bin volume).sum() is the species' charge q sum(w dx dy) within the range."""
    name: str
    species: str
    step: int
    t: float
    data: np.ndarray
    labels: list
    edges: list

    @property
    def bin_volume(self):
        return float(np.prod([e[1] - e[0] for e in self.edges]))

    @property
    def total(self):
        """Charge in the histogram's range: sum(data) times the bin volume."""
        return float(self.data.sum()) * self.bin_volume

    def centres(self, k=0):
        e = self.edges[k]
        return 0.5 * (e[1:] + e[:-1])


def read_phasespace(outdir, name, it=None):
    """Histogram `name` (e.g. "electrons_x_ux") at step `it` (default: its last)."""
    steps = list_phasespace(outdir).get(name)
    if not steps:
        raise KeyError("no phase-space histogram %r in %s (have %s)"
                       % (name, outdir, sorted(list_phasespace(outdir))))
    if it is None:
        it = steps[-1]
    elif it not in steps:
        raise FileNotFoundError("histogram %s has no step %d (have %s)" % (name, it, steps))
    with _open(phasespace_path(outdir, it)) as f:
        d = _group(f, it, "meshes")[name]
        data = np.asarray(d[()], dtype=np.float64)
        labels = [_str(a) for a in d.attrs["axisLabels"]][::-1]   # C order: last axis first
        spacing = np.asarray(d.attrs["gridSpacing"], dtype=float)[::-1]
        offset = np.asarray(d.attrs["gridGlobalOffset"], dtype=float)[::-1]
        shape = data.shape[::-1]
        edges = [offset[k] + spacing[k] * np.arange(shape[k] + 1) for k in range(len(shape))]
        t = float(f["data/%d" % it].attrs["time"])
        return Histogram(name, _str(d.attrs.get("species", "")), it, t, data, labels, edges)


def tracks_file(outdir):
    """OUTDIR/tracks/tracks.h5, the run's tracks: one openPMD group-based file, a group
    /data/<step> per tracks step."""
    return os.path.join(outdir, "tracks", "tracks.h5")


def tracks_path(outdir, it):
    """The file holding tracks step `it`: tracks.h5, or for a run of an empic that wrote one
    file per tracks step, tracks/tracksNNNNNNNN.h5."""
    if os.path.exists(tracks_file(outdir)):
        return tracks_file(outdir)
    return os.path.join(outdir, "tracks", "tracks%08d.h5" % it)


def list_tracks(outdir):
    """Steps of the tracks (the groups of tracks.h5, or the older per-step files)."""
    path = tracks_file(outdir)
    if os.path.exists(path):
        try:
            with _open(path) as f:
                return sorted(int(k) for k in f.get("data", {}).keys() if k.isdigit())
        except Damaged as e:
            skip(e)
            return []
    return _series_steps(os.path.join(outdir, "tracks"), _TRACK_RE)


def tracked_species(outdir):
    """Species of the newest readable tracks file."""
    for it in reversed(list_tracks(outdir)):
        try:
            with _open(tracks_path(outdir, it)) as f:
                return sorted(_group(f, it, "particles").keys())
        except Damaged as e:
            skip(e)
    return []


@dataclass
class Tracks:
    """Trajectories of the tracked particles of one species: arrays [particle, dump] (NaN
    where a particle is missing from a dump, e.g. absorbed); ids sorted."""
    species: str
    ids: np.ndarray
    steps: np.ndarray
    t: np.ndarray
    x: np.ndarray
    y: np.ndarray
    ux: np.ndarray
    uy: np.ndarray
    uz: np.ndarray


def read_tracks(outdir, species):
    """Every tracks dump of `species` joined by id into Tracks."""
    steps = list_tracks(outdir)
    if not steps:
        raise FileNotFoundError("no tracks in %s" % os.path.join(outdir, "tracks"))
    samples, ids, kept = [], set(), []
    for it in steps:
        try:
            with _open(tracks_path(outdir, it)) as f:
                parts = _group(f, it, "particles")
                if species not in parts:
                    raise KeyError("tracks dump %d has no species %r (have %s)"
                                   % (it, species, sorted(parts.keys())))
                pid = np.asarray(parts[species]["id"][()], dtype=np.uint64)
            p = read_particles_file(tracks_path(outdir, it), it, species)
        except Damaged as e:
            skip(e, "not in the tracks")
            continue
        samples.append((pid, p))
        ids.update(pid.tolist())
        kept.append(it)
    steps = kept
    if not steps:
        raise FileNotFoundError("no readable tracks in %s" % os.path.join(outdir, "tracks"))
    ids = np.array(sorted(ids), dtype=np.uint64)
    shape = (len(ids), len(steps))
    arr = {k: np.full(shape, np.nan) for k in ("x", "y", "ux", "uy", "uz")}
    t = np.zeros(len(steps))
    for k, (pid, p) in enumerate(samples):
        rows = np.searchsorted(ids, pid)
        for a in arr:
            arr[a][rows, k] = getattr(p, a)
        t[k] = p.t
    return Tracks(species, ids, np.array(steps), t, **arr)


# ---- field probes (OUTDIR/probes/probes.h5) -------------------------------------------------

def probes_path(outdir):
    return os.path.join(outdir, "probes", "probes.h5")


@dataclass
class Probe:
    """One field probe: steps and times [samples], its points x, y [n] and values[q] per
    quantity q ("Ex" ... "rho"), [samples] for a point probe, [samples, n] for a line, in
    the normalised units of the dumps (unit_si[q] their SI factor)."""
    name: str
    kind: str
    steps: np.ndarray
    t: np.ndarray
    x: np.ndarray
    y: np.ndarray
    values: dict
    unit_si: dict


def list_probes(outdir):
    """Names of the probes in probes.h5 (empty without the file)."""
    path = probes_path(outdir)
    if not os.path.exists(path):
        return []
    with _open(path) as f:
        return sorted(k for k in f.keys() if isinstance(f[k], h5py.Group))


def read_probe(outdir, name):
    """Probe `name` of OUTDIR/probes/probes.h5 (every sample; checksums checked)."""
    path = probes_path(outdir)
    if not os.path.exists(path):
        raise FileNotFoundError("no probes in %s (no %s)" % (outdir, path))
    with _open(path) as f:
        if name not in f:
            raise KeyError("no probe %r in %s (have %s)" % (name, path, sorted(f.keys())))
        g = f[name]
        fields = [_str(q) for q in g.attrs["fields"]]
        vals = {q: np.asarray(g[q][()], dtype=np.float64) for q in fields if q in g}
        usi = {q: float(g[q].attrs.get("unitSI", 1.0)) for q in vals}
        return Probe(name, _str(g.attrs["kind"]), np.asarray(g["step"][()]),
                     np.asarray(g["time"][()], dtype=np.float64), np.asarray(g["x"][()]),
                     np.asarray(g["y"][()]), vals, usi)


def probe_spectrum(t, v, pad=16):
    """(omega, |FFT|) of the samples v at even times t (mean removed, Hann window, zero
    padded `pad` times), omega in 1/(the unit of t) (2 pi f)."""
    t = np.asarray(t, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if len(t) < 2:
        raise ValueError("a spectrum needs at least 2 samples (have %d)" % len(t))
    dt = float(np.median(np.diff(t)))
    n = len(v) * pad
    a = np.abs(np.fft.rfft((v - v.mean()) * np.hanning(len(v)), n))
    return 2 * np.pi * np.fft.rfftfreq(n, dt), a
