"""Command line: empic-diag (or python3 -m diag) {summary,info,field,lineout,movie,energy,
phase,spectrum,timing,phasespace,tracks,charge-states,probes} OUTDIR.

Plots go to OUTDIR/plots/ (or --out DIR); every file written is printed. --si draws lengths
in µm, times in fs, fields in V/m and T, energies in MeV (from the run's n0)."""

import argparse
import dataclasses
import os
import re
import sys

import numpy as np

from . import analysis, movie, plot, read, units


def _outdir(args):
    return args.out or os.path.join(args.outdir, "plots")


def _png(args, name):
    return os.path.join(_outdir(args), name + ".png")


def cmd_info(args):
    """Every dump with its time and contents; damaged ones marked (and rc 1)."""
    d = args.outdir
    its = read.list_dumps(d)
    print("dumps: %s" % (" ".join(map(str, its)) or "none"))
    for it in its:  # every byte read: the checksums of every dataset checked
        why = read.dump_problem(read.dump_path(d, it), full=True)
        if why is not None:
            print("dump %d DAMAGED: %s (%s)" % (it, read.dump_path(d, it), why))
            args.rc = 1
            continue
        t, meshes, species = read.dump_contents(d, it)
        m = " ".join(k + ("(%s)" % ",".join(c) if c else "") for k, c in sorted(meshes.items()))
        p = " ".join("%s(%d)" % kv for kv in sorted(species.items()))
        print("dump %d t=%.6g meshes: %s; particles: %s" % (it, t, m or "none", p or "none"))
    if read.list_iterations(d):
        try:
            for k, comps in read.list_fields(d).items():
                print("mesh %s %s" % (k, " ".join(comps)))
        except FileNotFoundError:
            pass
        for s in read.list_species(d):
            print("species %s" % s)
    steps = read.list_tracks(d)
    if steps:
        print("tracks: %d steps (%d to %d) of %s" % (len(steps), steps[0], steps[-1],
                                                     " ".join(read.tracked_species(d)) or "none"))
    for name in read.list_probes(d):
        p = read.read_probe(d, name)
        t = "t=%.6g to %.6g" % (p.t[0], p.t[-1]) if len(p.t) else "no samples"
        print("probe %s (%s, %d point%s): %s; %d samples, %s" % (
            name, p.kind, len(p.x), "" if len(p.x) == 1 else "s", " ".join(p.values),
            len(p.steps), t))
    for name in ("energy.csv", "timing.json"):
        if os.path.isfile(os.path.join(d, name)):
            print("found %s" % name)
    return []


def _units(args):
    return units.for_run(args.outdir, getattr(args, "si", False))


def _map_style(args):
    return dict(vmin=args.vmin, vmax=args.vmax, log=args.log, cmap=args.cmap)


def cmd_field(args):
    fld = read.read_field(args.outdir, args.q, args.c, args.it)
    u = _units(args)
    out = [plot.field_map(fld, _png(args, "field_%s_%08d" % (fld.name, fld.step)), u,
                          **_map_style(args))]
    if getattr(args, "lineout", None):
        out.append(plot.lineout(fld, _png(args, "lineout_%s_%s_%08d"
                                          % (fld.name, args.lineout, fld.step)),
                                args.lineout, args.at, u))
    return out


def cmd_lineout(args):
    fld = read.read_field(args.outdir, args.q, args.c, args.it)
    return [plot.lineout(fld, _png(args, "lineout_%s_%s_%08d" % (fld.name, args.axis, fld.step)),
                         args.axis, args.at, _units(args))]


def cmd_movie(args):
    return movie.field_movie(args.outdir, args.q, args.c, _outdir(args), _units(args),
                             fps=args.fps, **_map_style(args))


def _growth(en, args):
    """The growth fit asked for (--fit [T0,T1]), or None."""
    if args.fit is None:
        return None
    column = args.fit_q or analysis.growing_column(en) or \
        max(("field_E", "field_B"), key=lambda k: float(np.max(en.get(k, [0.0]))))
    if column not in en:
        raise KeyError("energy.csv has no column %r (have %s)" % (column, ", ".join(en)))
    window = None
    if args.fit != "auto":
        try:
            window = tuple(float(v) for v in args.fit.split(","))
            assert len(window) == 2 and window[0] < window[1]
        except (ValueError, AssertionError):
            raise ValueError("--fit: expected T0,T1 (normalised times) or auto, got %r"
                             % args.fit) from None
    g = analysis.growth_rate(en["t"], en[column], window, column)
    print("growth of %s over t = %.4g .. %.4g: energy rate %.5g, field rate gamma = %.5g "
          "(in omega_p)" % (column, g.t0, g.t1, g.rate, g.gamma))
    return g


def cmd_energy(args):
    en = read.read_energy(args.outdir)
    log = True if args.log else (False if args.linear else None)
    return [plot.energy_history(en, _png(args, "energy"), log, _growth(en, args),
                                _units(args))]


def cmd_timing(args):
    return [plot.timing_bars(read.read_timing(args.outdir), _png(args, "timing"))]


def _species(args):
    sp = args.species or read.list_species(args.outdir, args.it)
    if not sp:
        raise FileNotFoundError("no particle dumps in %s" % read.data_dir(args.outdir))
    return sp


def _pairs(args):
    pairs = []
    for a in args.axes or []:
        pair = tuple(a.replace(":", ",").split(","))
        if len(pair) != 2 or any(x not in plot.PHASE_AXES for x in pair):
            raise ValueError("--axes: expected two of %s as A,B, got %r"
                             % (", ".join(plot.PHASE_AXES), a))
        pairs.append(pair)
    return pairs or None


def cmd_phase(args):
    out = []
    pairs = _pairs(args)
    for s in _species(args)[:1] if not args.species else args.species:
        p = read.read_particles(args.outdir, s, args.it)
        tag = "_".join("%s%s" % ab for ab in pairs) if pairs else "auto"
        out.append(plot.phase_space(p, _png(args, "phase_%s_%s_%08d" % (s, tag, p.step)),
                                    args.bins, pairs, _units(args)))
    return out


def cmd_spectrum(args):
    """The spectra of the species, of this run and of the --compare runs (the same species,
    at --it or each run's last dump), of the particles with x in --xrange alone."""
    runs = [args.outdir] + (args.compare or [])
    samples, labels, title = [], [], "energy spectrum"
    if args.xrange:
        x0, x1 = (float(v) for v in args.xrange.split(","))
        title += ", %g <= x < %g" % (x0, x1)
    for d in runs:
        for s in _species(args):
            p = read.read_particles(d, s, args.it)
            if args.xrange:
                keep = (p.x >= x0) & (p.x < x1)
                p = dataclasses.replace(p, x=p.x[keep], y=p.y[keep], ux=p.ux[keep],
                                        uy=p.uy[keep], uz=p.uz[keep], w=p.w[keep])
            samples.append(p)
            run = os.path.basename(os.path.normpath(d))
            labels.append("%s%s (step %d)" % (run + ": " if len(runs) > 1 else "", s, p.step))
    name = "spectrum_%s_%08d" % ("_".join(_species(args)), samples[0].step)
    return [plot.spectrum(samples, _png(args, name), args.bins, _units(args), labels, title)]


def cmd_phasespace(args):
    """In-code histograms (OUTDIR/phasespace): the named ones, or every one, at --it."""
    names = args.name or sorted(read.list_phasespace(args.outdir))
    if not names:
        raise FileNotFoundError("no in-code phase-space histograms in %s"
                                % os.path.join(args.outdir, "phasespace"))
    out = []
    for n in names:
        h = read.read_phasespace(args.outdir, n, args.it)
        out.append(plot.histogram(h, _png(args, "ps_%s_%08d" % (n, h.step)), args.log))
    return out


def cmd_tracks(args):
    species = args.species or read.tracked_species(args.outdir)
    if not species:
        raise FileNotFoundError("no tracks in %s" % os.path.join(args.outdir, "tracks"))
    return [plot.trajectories(read.read_tracks(args.outdir, s), _png(args, "tracks_%s" % s))
            for s in species]


def cmd_probes(args):
    """Time series of the field probes; with --spectrum Q, the spectrum of one quantity
    (of point --point of a line probe), whose peak frequency is printed on stderr."""
    names = args.name or read.list_probes(args.outdir)
    if not names:
        raise FileNotFoundError("no probes in %s" % read.probes_path(args.outdir))
    out = []
    for n in names:
        pr = read.read_probe(args.outdir, n)
        for q in args.q or []:
            if q not in pr.values:
                raise KeyError("probe %s has no %s (has %s)" % (n, q, ", ".join(pr.values)))
        out.append(plot.probe_series(pr, _png(args, "probe_%s" % n), args.q))
        if args.spectrum:
            q = args.spectrum
            if q not in pr.values:
                raise KeyError("probe %s has no %s (has %s)" % (n, q, ", ".join(pr.values)))
            v = pr.values[q]
            if pr.kind != "point":
                if not 0 <= args.point < v.shape[1]:
                    raise ValueError("--point %d: probe %s has points 0..%d"
                                     % (args.point, n, v.shape[1] - 1))
                v = v[:, args.point]
            if len(pr.t) < 2:
                print("probe %s has %d sample: no spectrum" % (n, len(pr.t)), file=sys.stderr)
                continue
            omega, amp = read.probe_spectrum(pr.t, v)
            print("probe %s: %s spectrum peaks at omega = %.6g omega_p"
                  % (n, q, omega[int(np.argmax(amp))]), file=sys.stderr)
            out.append(plot.probe_spectrum(pr, q, omega, amp,
                                           _png(args, "probe_%s_%s_spectrum" % (n, q)),
                                           args.point))
    return out


def _largest_field(outdir, it=None):
    """(record, component) of the E/B component with the largest rms in dump `it`."""
    best, best_rms = None, -1.0
    for q, comps in read.list_fields(outdir, it).items():
        if q not in ("E", "B"):
            continue
        for c in comps:
            rms = float(np.sqrt(np.mean(read.read_field(outdir, q, c, it).data ** 2)))
            if rms > best_rms:
                best, best_rms = (q, c), rms
    return best


def meaningful_dump(outdir):
    """The field dump to show: the one where the field energy (field_E + field_B of
    energy.csv, at the nearest row) is largest, so that a pulse that has left the box or a
    field that has not grown yet is not what the summary draws; the last dump without an
    energy.csv."""
    its = [it for it in read.list_iterations(outdir)
           if any(not read.derived_mesh(q) for q in read.list_fields(outdir, it))]
    if not its:  # averaged dumps alone
        its = [it for it in read.list_iterations(outdir) if read.list_fields(outdir, it)]
    if not its:
        return None
    try:
        en = read.read_energy(outdir)
        steps = np.asarray(en["step"], dtype=float)
        w = np.asarray(en["field_E"], float) + np.asarray(en["field_B"], float)
    except (FileNotFoundError, KeyError):
        return its[-1]
    if not len(steps):
        return its[-1]
    at = [w[int(np.argmin(np.abs(steps - it)))] for it in its]
    return its[int(np.argmax(at))]


def _has_lasers(outdir):
    """Whether the run (its run.cfg) launches lasers: their field energy rises as they enter,
    which is no instability to fit."""
    try:
        text = open(os.path.join(outdir, "run.cfg")).read()
    except OSError:
        return False
    return re.search(r"^lasers\s*=\s*\(\s*\{", text, re.M) is not None


def cmd_charge_states(args):
    """The charge-state distribution of each ionizing species in a particle dump (fractions
    of the sample's weight), printed and drawn."""
    it, states = read.read_charge_states(args.outdir, args.it)
    if not states:
        raise KeyError("dump %d has no ionizing species (no charge_state record)" % it)
    dists = {}
    for name, (z, w) in states.items():
        total = w.sum()
        dists[name] = np.bincount(z, weights=w) / total if total > 0 else np.zeros(1)
        print("step %d %s: mean charge state %.4f; %s" % (
            it, name, float((z * w).sum() / total) if total > 0 else 0.0,
            " ".join("%d+ %.4f" % (k, v) for k, v in enumerate(dists[name]))))
    return [plot.charge_states(it, dists, _png(args, "charge_states_%08d" % it))]


def _summary_energy(args, d, u):
    if not (os.path.isfile(os.path.join(d, "energy.csv")) or
            os.path.isfile(os.path.join(d, "energy.csv.tmp"))):
        return []
    en = read.read_energy(d)
    g = None
    col = analysis.growing_column(en)
    if col and len(en[col]) > 3 and not _has_lasers(d):
        try:  # a field energy that grows by 100x (no laser): fit its linear phase
            v = np.asarray(en[col], float)
            if v.max() > 100 * v[v > 0][0]:
                g = analysis.growth_rate(en["t"], v, None, col)
        except (ValueError, IndexError):
            g = None
    out = [plot.energy_history(en, _png(args, "energy"), None, g, u)]
    if os.path.isfile(os.path.join(d, "timing.json")):
        try:
            out += cmd_timing(args)
        except (ValueError, KeyError, TypeError) as e:
            read.note("%s is damaged (%s): skipped" % (os.path.join(d, "timing.json"), e))
    return out


def _summary_maps(args, d, u):
    try:
        it = meaningful_dump(d)
        fields = read.list_fields(d, it) if it is not None else {}
    except (FileNotFoundError, KeyError):
        fields, it = {}, None
    if not fields:
        read.note("no dump with meshes: no field maps")
        return []
    maps = []
    if "z" in fields.get("E", []) and np.any(read.read_field(d, "E", "z", it).data != 0):
        maps.append(("E", "z"))
    big = _largest_field(d, it)
    if big and big not in maps:
        maps.append(big)
    for q in sorted(fields):  # the densities of the species, one-signed maps
        if q.startswith("rho_") and not read.derived_mesh(q):
            maps.append((q, None))
    if not maps:
        q = sorted(fields)[0]
        maps.append((q, fields[q][-1] if fields[q] else None))
    out = []
    for q, c in maps:
        fld = read.read_field(d, q, c, it)
        out.append(plot.field_map(fld, _png(args, "field_%s_%08d" % (fld.name, fld.step)), u))
    return out


def _summary_particles(args, d, u):
    species = read.list_species(d)
    if not species:
        read.note("no dump with particles: no phase space or spectrum")
        return []
    p = read.read_particles(d, species[0])
    out = [plot.phase_space(p, _png(args, "phase_%s_%08d" % (p.species, p.step)), units=u)]
    samples = [read.read_particles(d, s) for s in species]
    samples = [s for s in samples if np.any(s.ekin > 0)] or samples[:1]
    out.append(plot.spectrum(samples, _png(args, "spectrum_%08d" % p.step), units=u))
    return out


def _summary_insitu(args, d, u):
    out = []
    for n in sorted(read.list_phasespace(d)):
        try:
            h = read.read_phasespace(d, n)
            out.append(plot.histogram(h, _png(args, "ps_%s_%08d" % (n, h.step))))
        except read.Damaged as e:
            read.skip(e, "histogram %s skipped" % n)
    for s in read.tracked_species(d):
        out.append(plot.trajectories(read.read_tracks(d, s), _png(args, "tracks_%s" % s)))
    try:  # the field probes' time series (a damaged probes.h5 named and left out)
        for n in read.list_probes(d):
            out.append(plot.probe_series(read.read_probe(d, n), _png(args, "probe_%s" % n)))
    except read.Damaged as e:
        read.skip(e, "the probes skipped")
    return out


def cmd_summary(args):
    """Every plot the run's files allow; a part whose file is damaged is named and left out,
    the others drawn."""
    out = []
    d = args.outdir
    u = _units(args)
    for part in (_summary_energy, _summary_maps, _summary_particles, _summary_insitu):
        try:
            out += part(args, d, u)
        except read.Damaged as e:
            read.skip(e, "its %s skipped" % part.__name__[len("_summary_"):])
    if not out:
        raise FileNotFoundError("nothing to plot in %s" % d)
    return out


def build_parser(prog=None):
    ap = argparse.ArgumentParser(prog=prog or "empic-diag", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def add(name, fn, helptext, si=True):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("outdir", help="the run's diagnostics.output folder")
        p.add_argument("--out", help="folder for the PNG files (default OUTDIR/plots)")
        if si:
            p.add_argument("--si", action="store_true",
                           help="SI units from the run's n0: um, fs, V/m, T, MeV")
        p.set_defaults(fn=fn)
        return p

    def map_style(p):
        p.add_argument("--vmin", type=float, help="lower end of the colour scale (units shown)")
        p.add_argument("--vmax", type=float, help="upper end of the colour scale")
        p.add_argument("--log", action="store_true",
                       help="log colour scale of |value| (symmetric log for signed fields)")
        p.add_argument("--cmap", help="matplotlib colour map (default: RdBu_r for signed "
                       "fields, viridis for one-signed ones such as densities)")

    add("summary", cmd_summary, "energy history (with a growth fit when a field energy "
        "grows), field maps of the dump with the most field energy, phase space, spectrum, "
        "timing, in-code histograms and tracks when present")
    add("info", cmd_info, "list the dumps, meshes and species", si=False)
    for name, fn, h in (("field", cmd_field, "2D map of one mesh component"),
                        ("lineout", cmd_lineout, "1D profile of one mesh component"),
                        ("movie", cmd_movie, "maps of one mesh component at every dump "
                         "(common colour scale) as PNG frames, and an MP4 (ffmpeg) or GIF")):
        p = add(name, fn, h)
        p.add_argument("--q", default="E", help="mesh record: E, B, J, rho, rho_<species>")
        p.add_argument("--c", default="z", help="component x, y or z (ignored for rho)")
        if name != "movie":
            p.add_argument("--it", type=int, help="step of the dump (default: last)")
            p.add_argument("--at", type=float,
                           help="coordinate of the lineout, normalised (default: middle)")
        if name == "field":
            p.add_argument("--lineout", choices=("x", "y"), help="also draw a lineout along")
        elif name == "lineout":
            p.add_argument("--axis", choices=("x", "y"), default="x")
        if name != "lineout":
            map_style(p)
        if name == "movie":
            p.add_argument("--fps", type=float, default=5.0, help="frames per second")
    p = add("energy", cmd_energy, "energy history from energy.csv, with a growth-rate fit")
    p.add_argument("--log", action="store_true", help="log energy axis (default: log when "
                   "the field energies span more than 3 decades)")
    p.add_argument("--linear", action="store_true", help="linear energy axis")
    p.add_argument("--fit", nargs="?", const="auto", metavar="T0,T1",
                   help="fit W ~ exp(2 gamma t) over T0..T1 (normalised times; 'auto' or no "
                   "value: the middle of the rise of ln W)")
    p.add_argument("--fit-q", help="energy.csv column to fit (default: field_E or field_B, "
                   "whichever grows more)")
    add("timing", cmd_timing, "per-phase ns per particle-step (per cell-step without "
        "particles) from timing.json", si=False)
    for name, fn, h in (("phase", cmd_phase, "phase spaces of the particle sample: any pairs "
                         "of x, y, ux, uy, uz"),
                        ("spectrum", cmd_spectrum, "kinetic energy spectrum")):
        p = add(name, fn, h)
        p.add_argument("--species", action="append",
                       help="species name (repeatable; default: all/first)")
        p.add_argument("--it", type=int, help="step of the dump (default: last with particles)")
        p.add_argument("--bins", type=int, default=128 if name == "phase" else 100)
        if name == "spectrum":
            p.add_argument("--compare", action="append", metavar="OUTDIR",
                           help="another run's folder: its spectra on the same axes "
                           "(repeatable)")
            p.add_argument("--xrange", metavar="X0,X1",
                           help="only the particles with X0 <= x < X1 (the deck's length "
                           "unit), e.g. a target's thickness")
        if name == "phase":
            p.add_argument("--axes", action="append", metavar="A,B",
                           help="a pair of x, y, ux, uy, uz, e.g. y,uz (repeatable; default: "
                           "x and y against the momentum with the largest spread)")
    p = add("phasespace", cmd_phasespace, "in-code phase-space histograms and spectra",
            si=False)
    p.add_argument("--name", action="append",
                   help="histogram, e.g. electrons_x_ux (repeatable; default: all)")
    p.add_argument("--it", type=int, help="step (default: the histogram's last)")
    p.add_argument("--log", action="store_true",
                   help="a log colour scale for the 2D ones (a faint bunch beside a dense "
                   "background)")
    p = add("charge-states", cmd_charge_states, "charge-state distribution of the ionizing "
            "species in a particle dump", si=False)
    p.add_argument("--it", type=int, help="step of the dump (default: last with particles)")
    p = add("tracks", cmd_tracks, "trajectories of the tracked particles", si=False)
    p.add_argument("--species", action="append", help="species (default: all tracked)")
    p = add("probes", cmd_probes, "time series of the field probes (diagnostics.probes) "
            "and the spectrum of one quantity", si=False)
    p.add_argument("--name", action="append", help="probe (repeatable; default: all)")
    p.add_argument("--q", action="append", help="quantity to draw, e.g. Ey (repeatable; "
                   "default: all the probe recorded)")
    p.add_argument("--spectrum", metavar="Q", help="also the spectrum |FFT| of quantity Q "
                   "(e.g. Ey), its peak frequency printed")
    p.add_argument("--point", type=int, default=0,
                   help="point of a line probe for --spectrum (default 0, its start)")
    return ap


def main(argv=None, prog=None):
    args = build_parser(prog).parse_args(argv)
    if args.cmd in ("field", "lineout", "movie") and args.q.startswith("rho"):
        args.c = None
    try:
        files = args.fn(args)
        rc = getattr(args, "rc", 0)
    except (FileNotFoundError, KeyError, OSError, ValueError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print("diag: %s" % msg, file=sys.stderr)
        return 1
    for f in files:
        print(f)
    return rc


if __name__ == "__main__":
    sys.exit(main(prog="python3 -m diag"))
