"""Command line: python3 -m diag {summary,info,field,lineout,energy,phase,spectrum,timing,
phasespace,tracks} OUTDIR.

Plots go to OUTDIR/plots/ (or --out DIR); every file written is printed."""

import argparse
import os
import sys

import numpy as np

from . import plot, read


def _outdir(args):
    return args.out or os.path.join(args.outdir, "plots")


def _png(args, name):
    return os.path.join(_outdir(args), name + ".png")


def cmd_info(args):
    its = read.list_iterations(args.outdir)
    print("dumps: %s" % (" ".join(map(str, its)) or "none"))
    if its:
        try:
            for k, comps in read.list_fields(args.outdir).items():
                print("mesh %s %s" % (k, " ".join(comps)))
        except FileNotFoundError:
            pass
        for s in read.list_species(args.outdir):
            print("species %s" % s)
    for name in ("energy.csv", "timing.json"):
        if os.path.isfile(os.path.join(args.outdir, name)):
            print("found %s" % name)
    return []


def cmd_field(args):
    fld = read.read_field(args.outdir, args.q, args.c, args.it)
    out = [plot.field_map(fld, _png(args, "field_%s_%08d" % (fld.name, fld.step)))]
    if getattr(args, "lineout", None):
        out.append(plot.lineout(fld, _png(args, "lineout_%s_%s_%08d"
                                          % (fld.name, args.lineout, fld.step)),
                                args.lineout, args.at))
    return out


def cmd_lineout(args):
    fld = read.read_field(args.outdir, args.q, args.c, args.it)
    return [plot.lineout(fld, _png(args, "lineout_%s_%s_%08d" % (fld.name, args.axis, fld.step)),
                         args.axis, args.at)]


def cmd_energy(args):
    return [plot.energy_history(read.read_energy(args.outdir), _png(args, "energy"))]


def cmd_timing(args):
    return [plot.timing_bars(read.read_timing(args.outdir), _png(args, "timing"))]


def _species(args):
    sp = args.species or read.list_species(args.outdir, args.it)
    if not sp:
        raise FileNotFoundError("no particle dumps in %s" % read.data_dir(args.outdir))
    return sp


def cmd_phase(args):
    out = []
    for s in _species(args)[:1] if not args.species else args.species:
        p = read.read_particles(args.outdir, s, args.it)
        out.append(plot.phase_space(p, _png(args, "phase_%s_%08d" % (s, p.step)), args.bins))
    return out


def cmd_spectrum(args):
    samples = [read.read_particles(args.outdir, s, args.it) for s in _species(args)]
    name = "spectrum_%s_%08d" % ("_".join(p.species for p in samples), samples[0].step)
    return [plot.spectrum(samples, _png(args, name), args.bins)]


def cmd_phasespace(args):
    """In-code histograms (OUTDIR/phasespace): the named ones, or every one, at --it."""
    names = args.name or sorted(read.list_phasespace(args.outdir))
    if not names:
        raise FileNotFoundError("no in-code phase-space histograms in %s"
                                % os.path.join(args.outdir, "phasespace"))
    out = []
    for n in names:
        h = read.read_phasespace(args.outdir, n, args.it)
        out.append(plot.histogram(h, _png(args, "ps_%s_%08d" % (n, h.step))))
    return out


def _tracked_species(outdir):
    its = read.list_tracks(outdir)
    if not its:
        return []
    import h5py
    with h5py.File(read.tracks_path(outdir, its[-1]), "r") as f:
        return sorted(f["data/%d/particles" % its[-1]].keys())


def cmd_tracks(args):
    species = args.species or _tracked_species(args.outdir)
    if not species:
        raise FileNotFoundError("no tracks in %s" % os.path.join(args.outdir, "tracks"))
    return [plot.trajectories(read.read_tracks(args.outdir, s), _png(args, "tracks_%s" % s))
            for s in species]


def _largest_field(outdir):
    """(record, component) of the E/B component with the largest rms in the last dump."""
    best, best_rms = None, -1.0
    for q, comps in read.list_fields(outdir).items():
        if q not in ("E", "B"):
            continue
        for c in comps:
            rms = float(np.sqrt(np.mean(read.read_field(outdir, q, c).data ** 2)))
            if rms > best_rms:
                best, best_rms = (q, c), rms
    return best


def cmd_summary(args):
    out = []
    d = args.outdir
    if os.path.isfile(os.path.join(d, "energy.csv")) or \
            os.path.isfile(os.path.join(d, "energy.csv.tmp")):
        out += cmd_energy(args)
    if os.path.isfile(os.path.join(d, "timing.json")):
        out += cmd_timing(args)
    try:
        fields = read.list_fields(d)
    except (FileNotFoundError, KeyError):
        fields = {}
    if fields:
        maps = []
        if "z" in fields.get("E", []) and np.any(read.read_field(d, "E", "z").data != 0):
            maps.append(("E", "z"))
        big = _largest_field(d)
        if big and big not in maps:
            maps.append(big)
        if not maps:
            q = sorted(fields)[0]
            maps.append((q, fields[q][-1] if fields[q] else None))
        for q, c in maps:
            fld = read.read_field(d, q, c)
            out.append(plot.field_map(fld, _png(args, "field_%s_%08d" % (fld.name, fld.step))))
    species = read.list_species(d)
    if species:
        p = read.read_particles(d, species[0])
        out.append(plot.phase_space(p, _png(args, "phase_%s_%08d" % (p.species, p.step))))
        samples = [read.read_particles(d, s) for s in species]
        samples = [s for s in samples if np.any(s.ekin > 0)] or samples[:1]
        out.append(plot.spectrum(samples, _png(args, "spectrum_%08d" % p.step)))
    hists = read.list_phasespace(d)
    for n in sorted(hists):
        h = read.read_phasespace(d, n)
        out.append(plot.histogram(h, _png(args, "ps_%s_%08d" % (n, h.step))))
    for s in _tracked_species(d):
        out.append(plot.trajectories(read.read_tracks(d, s), _png(args, "tracks_%s" % s)))
    if not out:
        raise FileNotFoundError("nothing to plot in %s" % d)
    return out


def build_parser():
    ap = argparse.ArgumentParser(prog="python3 -m diag", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def add(name, fn, helptext):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("outdir", help="the run's diagnostics.output folder")
        p.add_argument("--out", help="folder for the PNG files (default OUTDIR/plots)")
        p.set_defaults(fn=fn)
        return p

    add("summary", cmd_summary, "energy history, field maps, phase space, spectrum, timing, "
        "in-code histograms and tracks when present")
    add("info", cmd_info, "list the dumps, meshes and species")
    for name, fn, h in (("field", cmd_field, "2D map of one mesh component"),
                        ("lineout", cmd_lineout, "1D profile of one mesh component")):
        p = add(name, fn, h)
        p.add_argument("--q", default="E", help="mesh record: E, B, J, rho, rho_<species>")
        p.add_argument("--c", default="z", help="component x, y or z (ignored for rho)")
        p.add_argument("--it", type=int, help="step of the dump (default: last)")
        p.add_argument("--at", type=float, help="coordinate of the lineout (default: middle)")
        if name == "field":
            p.add_argument("--lineout", choices=("x", "y"), help="also draw a lineout along")
        else:
            p.add_argument("--axis", choices=("x", "y"), default="x")
    add("energy", cmd_energy, "energy history from energy.csv")
    add("timing", cmd_timing, "per-phase ns/particle-step from timing.json")
    for name, fn, h in (("phase", cmd_phase, "x-ux and ux-uy phase spaces"),
                        ("spectrum", cmd_spectrum, "kinetic energy spectrum")):
        p = add(name, fn, h)
        p.add_argument("--species", action="append",
                       help="species name (repeatable; default: all/first)")
        p.add_argument("--it", type=int, help="step of the dump (default: last with particles)")
        p.add_argument("--bins", type=int, default=128 if name == "phase" else 100)
    p = add("phasespace", cmd_phasespace, "in-code phase-space histograms and spectra")
    p.add_argument("--name", action="append",
                   help="histogram, e.g. electrons_x_ux (repeatable; default: all)")
    p.add_argument("--it", type=int, help="step (default: the histogram's last)")
    p = add("tracks", cmd_tracks, "trajectories of the tracked particles")
    p.add_argument("--species", action="append", help="species (default: all tracked)")
    return ap


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.cmd in ("field", "lineout") and args.q.startswith("rho"):
        args.c = None
    try:
        files = args.fn(args)
    except (FileNotFoundError, KeyError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print("diag: %s" % msg, file=sys.stderr)
        return 1
    for f in files:
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
