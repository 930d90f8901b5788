"""PNG plots of empic output (matplotlib, Agg backend). Each function writes one file and
returns its path."""

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .units import Units  # noqa: E402

NORMALISED = Units(False)


def _save(fig, path):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def colour_scale(data, vmin=None, vmax=None, log=False, cmap=None):
    """(cmap, norm) for a map of `data`: a diverging map centred on 0 for two-signed data, a
    sequential one from 0 for one-signed data (a density; its magnitude brighter); log: a
    log scale of |data| (symmetric-log for two-signed data). vmin/vmax override the range."""
    d = np.asarray(data, dtype=float)
    finite = d[np.isfinite(d)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    two_signed = lo < 0 < hi
    if two_signed:
        m = max(abs(lo), abs(hi)) or 1.0
        lo_, hi_ = (-m if vmin is None else vmin), (m if vmax is None else vmax)
        cmap = cmap or "RdBu_r"
        if log:
            tiny = np.abs(finite[finite != 0])
            thresh = max(float(np.percentile(tiny, 5)) if tiny.size else 1e-12, m * 1e-6)
            return cmap, mcolors.SymLogNorm(thresh, vmin=lo_, vmax=hi_, base=10)
        return cmap, mcolors.Normalize(lo_, hi_)
    negative = hi <= 0 and lo < 0
    cmap = cmap or ("viridis_r" if negative else "viridis")
    if log:
        mag = np.abs(finite[finite != 0])
        top = float(mag.max()) if mag.size else 1.0
        lo_ = vmin if vmin is not None else max(float(mag.min()) if mag.size else 1e-12,
                                                top * 1e-8)
        hi_ = vmax if vmax is not None else top
        return cmap, mcolors.LogNorm(abs(lo_), abs(hi_))
    if negative:
        return cmap, mcolors.Normalize(lo if vmin is None else vmin, 0.0 if vmax is None else vmax)
    return cmap, mcolors.Normalize(0.0 if vmin is None else vmin,
                                   (hi or 1.0) if vmax is None else vmax)


def _map_figure(extent, width=7.5):
    """Figure for an equal-aspect map of the box `extent`, sized to the box's shape."""
    lx, ly = extent[1] - extent[0], extent[3] - extent[2]
    h = float(np.clip(width * ly / lx if lx > 0 else width, 2.0, 9.0))
    return plt.subplots(figsize=(width + 1.5, h + 1.2))


def field_map(fld, path, units=NORMALISED, vmin=None, vmax=None, log=False, cmap=None,
              ax=None):
    """2D colour map of a diag.read.Field at equal aspect (1 c/ω_p is as long in x as in y);
    colour_scale picks the map and range. vmin/vmax are in the units shown."""
    fu, flab = units.field(fld.name)
    lu, llab = units.length()
    tu, tlab = units.time()
    data = fld.data * fu
    c, norm = colour_scale(data, vmin, vmax, log, cmap)
    ext = [e * lu for e in fld.extent]
    own = ax is None
    fig, ax = _map_figure(ext) if own else (ax.figure, ax)
    im = ax.imshow(data, origin="lower", extent=ext, aspect="equal", cmap=c, norm=norm,
                   interpolation="nearest")
    fig.colorbar(im, ax=ax, label="%s [%s]" % (fld.name, flab), shrink=0.9)
    ax.set_xlabel(r"$x$ [%s]" % llab)
    ax.set_ylabel(r"$y$ [%s]" % llab)
    ax.set_title("%s  step %d  t = %.4g %s  (max |%s| = %.3g)"
                 % (fld.name, fld.step, fld.t * tu, tlab, fld.name, np.max(np.abs(data))),
                 fontsize=10)
    if not own:
        return ax
    fig.tight_layout()
    return _save(fig, path)


def lineout(fld, path, axis="x", at=None, units=NORMALISED):
    """Profile of a Field along `axis` ('x' or 'y') at the other coordinate `at` (in the
    normalised units; default: the middle of the box)."""
    if axis == "x":
        other, coords = fld.y, fld.x
        j = len(other) // 2 if at is None else int(np.argmin(np.abs(other - at)))
        values, pos = fld.data[j, :], other[j]
    else:
        other, coords = fld.x, fld.y
        i = len(other) // 2 if at is None else int(np.argmin(np.abs(other - at)))
        values, pos = fld.data[:, i], other[i]
    fu, flab = units.field(fld.name)
    lu, llab = units.length()
    tu, tlab = units.time()
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(coords * lu, values * fu, lw=1.2,
            label="%s = %.4g %s" % ("y" if axis == "x" else "x", pos * lu, llab))
    ax.set_xlabel(r"$%s$ [%s]" % (axis, llab))
    ax.set_ylabel("%s [%s]" % (fld.name, flab))
    ax.set_title("%s lineout  step %d  t = %.4g %s" % (fld.name, fld.step, fld.t * tu, tlab))
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def _hist2d(ax, a, b, w, bins):
    if len(a) == 0:
        ax.text(0.5, 0.5, "no particles", ha="center", va="center", transform=ax.transAxes)
        return
    bins = int(np.clip(np.sqrt(len(a) / 4.0), 16, bins))  # a few particles per bin
    h, xe, ye = np.histogram2d(a, b, bins=bins, weights=w)
    h = np.ma.masked_where(h <= 0, h)
    im = ax.pcolormesh(xe, ye, h.T, cmap="viridis", shading="auto")
    plt.colorbar(im, ax=ax, label="weight")


PHASE_AXES = ("x", "y", "ux", "uy", "uz")


def phase_axis(p, name, units=NORMALISED):
    """Values and label of axis `name` (x, y, ux, uy, uz) of a Particles sample; with SI
    units momenta are p = m u c in MeV/c."""
    if name in ("x", "y"):
        f, lab = units.length()
        return getattr(p, name) * f, r"$%s$ [%s]" % (name, lab)
    if name not in PHASE_AXES:
        raise ValueError("phase-space axis %r: expected one of %s" % (name, ", ".join(PHASE_AXES)))
    f, lab = units.momentum()
    if units.si:
        return getattr(p, name) * f * p.m, r"$p_%s$ [%s]" % (name[1], lab)
    return getattr(p, name), r"$u_%s$ [%s]" % (name[1], lab)


def default_pairs(p):
    """x and y against the momentum component with the largest spread (u_z for the Weibel
    deck, u_x for a laser-driven wake)."""
    spread = {a: float(np.std(getattr(p, a))) if len(p) else 0.0 for a in ("ux", "uy", "uz")}
    u = max(spread, key=spread.get)
    return [("x", u), ("y", u)]


def phase_space(p, path, bins=128, pairs=None, units=NORMALISED):
    """Phase spaces of a diag.read.Particles sample, one panel per (axis, axis) pair from x,
    y, ux, uy, uz (default: default_pairs)."""
    pairs = pairs or default_pairs(p)
    fig, axs = plt.subplots(1, len(pairs), figsize=(5.5 * len(pairs), 4.5), squeeze=False)
    tu, tlab = units.time()
    for ax, (a, b) in zip(axs[0], pairs):
        va, la = phase_axis(p, a, units)
        vb, lb = phase_axis(p, b, units)
        _hist2d(ax, va, vb, p.w, bins)
        ax.set_xlabel(la)
        ax.set_ylabel(lb)
    fig.suptitle("%s  step %d  t = %.4g %s  (%d macro-particles)"
                 % (p.species, p.step, p.t * tu, tlab, len(p)))
    fig.tight_layout()
    return _save(fig, path)


def spectrum(samples, path, bins=100, units=NORMALISED, labels=None, title="energy spectrum"):
    """Kinetic energy spectra dN/dE of one or more Particles samples (weighted), labelled
    `labels` (default: species and step)."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    eu, elab = units.energy()
    labels = labels or ["%s (step %d)" % (p.species, p.step) for p in samples]
    for p, label in zip(samples, labels):
        e = p.ekin * eu
        if len(e) == 0:
            continue
        emax = float(e.max()) or 1.0
        h, edges = np.histogram(e, bins=bins, range=(0.0, emax), weights=p.w)
        de = edges[1] - edges[0]
        centres = 0.5 * (edges[1:] + edges[:-1])
        ax.step(centres, np.where(h > 0, h / de, np.nan), where="mid", label=label)
    ax.set_yscale("log")
    ax.set_xlabel(r"$(\gamma-1)\,m c^2$ [%s]" % elab)
    ax.set_ylabel(r"$dN/dE$ [arb.]")
    ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


BALANCE_TERMS = ("in", "out_xmin", "out_xmax", "out_ymin", "out_ymax", "field_layers",
                 "field_stagger")


def open_box(en):
    """Whether energy.csv's balance columns show energy crossing the box's edges (a laser, a
    field leaving, particles leaving or brought in): then `balance`, not `total`, is what
    stays constant."""
    if "balance" not in en:
        return False
    keys = [k for k in en if k in ("in",) or k.startswith("out_") or k.startswith("lost_")]
    return any(np.any(np.asarray(en[k], float) != 0) for k in keys)


def balance_drift(en):
    """The energy balance's drift: (balance - balance at the first row) at the last row and
    its largest magnitude, relative to the laser energy put in (when a laser put some in,
    else to the first row's total), and what it is relative to ("in" or "total")."""
    b = np.asarray(en["balance"], float)
    ein = float(np.asarray(en.get("in", [0.0]), float)[-1])
    ref, what = (ein, "in") if ein > 0 else (abs(float(en["total"][0])), "total")
    if not len(b) or ref == 0:
        return 0.0, 0.0, what
    d = (b - b[0]) / ref
    return float(d[-1]), float(np.max(np.abs(d))), what


def energy_history(en, path, log=None, growth=None, units=NORMALISED):
    """Field, kinetic and total energies against t (log axis when log, or by default when
    the field energies span more than 3 decades), a fitted exponential growth (a
    diag.analysis.Growth) drawn over its window, and gauss_max on a log axis. An open box
    (open_box: lasers, absorbing sides, walls, a moving window) gets a panel of the energy
    balance's terms (laser energy in, field energy out per side, particle energy lost per
    species) with the balance's drift relative to the laser energy in, which the title
    gives instead of the total's drift."""
    opened = open_box(en)
    if opened:
        fig, (ax, ab, ag) = plt.subplots(3, 1, figsize=(8, 10), sharex=True,
                                         gridspec_kw={"height_ratios": [2, 1.5, 1]})
    else:
        fig, (ax, ag) = plt.subplots(2, 1, figsize=(8, 7), sharex=True,
                                     gridspec_kw={"height_ratios": [2, 1]})
    tu, tlab = units.time()
    t = np.asarray(en.get("t", en.get("step")), dtype=float)
    keys = [k for k in en if k in ("field_E", "field_B", "total") or k.startswith("kinetic_")]
    if log is None:
        f = np.concatenate([np.asarray(en[k], float) for k in ("field_E", "field_B") if k in en]
                           or [np.zeros(1)])
        f = f[f > 0]
        log = bool(f.size and f.max() / f.min() > 1e3)
    for k in keys:
        v = np.asarray(en[k], dtype=float)
        ax.plot(t * tu, np.where(v > 0, v, np.nan) if log else v,
                lw=2.0 if k == "total" else 1.2, ls="--" if k == "total" else "-", label=k)
    if growth is not None:
        tt = np.linspace(growth.t0, growth.t1, 50)
        ru, rlab = units.rate()
        ax.plot(tt * tu, growth.line(tt), "k:", lw=2.5,
                label=r"fit of %s over t = %.3g..%.3g: $W \propto e^{2\gamma t}$, "
                r"$\gamma$ = %.4g %s" % (growth.column, growth.t0 * tu, growth.t1 * tu,
                                         growth.gamma * ru, rlab))
        for x in (growth.t0, growth.t1):
            ax.axvline(x * tu, color="0.6", lw=0.8, ls=":")
    if log:
        ax.set_yscale("log")
        top = max(float(np.nanmax(np.asarray(en[k], float))) for k in keys) if keys else 1.0
        if top > 0:  # round-off at t = 0 (a field starting from 0) would squash the plot
            lows = [v for k in keys for v in np.asarray(en[k], float) if v > 0]
            ax.set_ylim(bottom=max(min(lows), 1e-12 * top), top=top * 3)
    ax.set_ylabel(r"energy [$m_e c^2 n_0 (c/\omega_p)^2$]")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both" if log else "major")
    if opened:
        last, worst, what = balance_drift(en)
        ax.set_title("energy history (balance drift %.3g, at most %.3g, of the %s)"
                     % (last, worst, "laser energy in" if what == "in" else "initial total"))
        for k in [k for k in en if k in BALANCE_TERMS or k.startswith("lost_")]:
            v = np.asarray(en[k], dtype=float)
            if np.any(v != 0):
                ab.plot(t * tu, v, lw=1.2, label=k)
        ab.set_ylabel("balance terms")
        ab.grid(alpha=0.3)
        b = np.asarray(en["balance"], dtype=float)
        ein = float(np.asarray(en.get("in", [0.0]), float)[-1])
        ref = ein if ein > 0 else abs(float(en["total"][0])) or 1.0
        ad = ab.twinx()
        ad.plot(t * tu, (b - b[0]) / ref, "k--", lw=1.5,
                label="(balance - balance$_0$) / %s" % ("in" if ein > 0 else "total$_0$"))
        ad.set_ylabel("balance drift")
        h1, l1 = ab.get_legend_handles_labels()
        h2, l2 = ad.get_legend_handles_labels()
        ab.legend(h1 + h2, l1 + l2, fontsize=7, loc="best")
    elif "total" in en and len(en["total"]) and en["total"][0] != 0:
        drift = (en["total"][-1] - en["total"][0]) / abs(en["total"][0])
        ax.set_title("energy history (total drift %.3g)" % drift)
    if "gauss_max" in en:
        g = np.asarray(en["gauss_max"], dtype=float)
        pos = g > 0
        if pos.any():
            ag.semilogy(t[pos] * tu, g[pos], "k.-", lw=1)
        else:
            ag.text(0.5, 0.5, "gauss_max = 0", ha="center", va="center",
                    transform=ag.transAxes)
            ag.set_yscale("log")
    ag.set_ylabel(r"max $|\nabla\cdot E - \rho|$")
    ag.set_xlabel(r"$t$ [%s]" % tlab)
    ag.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return _save(fig, path)


PHASES = ("push", "deposit", "sort", "field", "exchange", "other")


def timing_bars(tm, path):
    """Per-phase ns per particle-step from timing.json; per cell-step for a particle-free
    run (no particle-steps to divide by)."""
    per_cell = tm.get("per") == "cell-step" or not tm.get("ns_per_particle_step")
    ns = (tm.get("ns_per_cell_step") if per_cell else tm.get("ns_per_particle_step")) or {}
    phases = [p for p in PHASES if p in ns] + [p for p in ns if p not in PHASES + ("total",)]
    vals = [float(ns[p]) for p in phases]
    fig, ax = plt.subplots(figsize=(7, 4))
    bars = ax.bar(phases, vals, color="tab:blue")
    total = float(ns.get("total", sum(vals)))
    for b, v in zip(bars, vals):
        ax.annotate("%.3g (%.0f%%)" % (v, 100 * v / total if total else 0),
                    (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("ns / cell / step" if per_cell else "ns / particle / step")
    title = "%s on %s: %.3g ns total" % (tm.get("backend", "?"), tm.get("device", "?"), total)
    if "bandwidth_fraction" in tm:
        title += ", %.3g%% of bandwidth" % (100 * float(tm["bandwidth_fraction"]))
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def charge_states(it, dists, path):
    """Bars of the charge-state fractions of each ionizing species at dump `it`:
    dists = {species: fractions by state}."""
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / max(len(dists), 1)
    for k, (name, frac) in enumerate(dists.items()):
        ax.bar(np.arange(len(frac)) + (k - (len(dists) - 1) / 2) * width, frac, width,
               label=name)
    ax.set_xlabel("charge state")
    ax.set_ylabel("fraction of the macro-ions' weight")
    ax.set_title("charge states at step %d" % it, fontsize=10)
    ax.legend()
    fig.tight_layout()
    return _save(fig, path)


_AXIS_TEX = {"x": r"$x$ [$c/\omega_p$]", "y": r"$y$ [$c/\omega_p$]", "ux": r"$u_x$ [$m c$]",
             "uy": r"$u_y$ [$m c$]", "uz": r"$u_z$ [$m c$]",
             "energy": r"$(\gamma-1)\,m c^2$ [$m_e c^2$]",
             "log10_energy": r"$\log_{10}$ $(\gamma-1)\,m c^2$ [$m_e c^2$]"}


def histogram(h, path, log=False):
    """An in-code phase-space histogram (diag.read.Histogram): a colour map of |charge
    density| for 2D (log: a log colour scale, for a faint bunch beside a dense background),
    a spectrum dQ/dE (log scale) for 1D."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    a = np.abs(h.data)
    if len(h.labels) == 2:
        m = np.ma.masked_where(a <= 0, a)
        cmap, norm = colour_scale(m.compressed(), log=log)
        im = ax.pcolormesh(h.edges[0], h.edges[1], m, cmap=cmap, norm=norm, shading="flat")
        fig.colorbar(im, ax=ax, label="|charge density| in phase space [norm.]")
        ax.set_ylabel(_AXIS_TEX.get(h.labels[1], h.labels[1]))
    else:
        ax.step(h.centres(0), np.where(a > 0, a, np.nan), where="mid")
        if np.any(a > 0):
            ax.set_yscale("log")
        ax.set_ylabel("|dQ/d%s| [norm.]" % h.labels[0])
        ax.grid(alpha=0.3)
    ax.set_xlabel(_AXIS_TEX.get(h.labels[0], h.labels[0]))
    ax.set_title("%s  step %d  t = %.4g  (in-code)" % (h.name, h.step, h.t))
    fig.tight_layout()
    return _save(fig, path)


def trajectories(tr, path, max_tracks=200):
    """x-y trajectories of tracked particles (diag.read.Tracks), broken where a particle
    crosses a periodic boundary, with ux against t below."""
    fig, (ax, au) = plt.subplots(2, 1, figsize=(7, 8), gridspec_kw={"height_ratios": [2, 1]})
    n = min(len(tr.ids), max_tracks)
    for k in np.unique(np.linspace(0, len(tr.ids) - 1, n).astype(int)):  # spread over ids
        x, y = tr.x[k].copy(), tr.y[k].copy()
        if len(x) > 1:  # a jump of more than a quarter of the extent: break the line there
            span = max(np.nanmax(tr.x) - np.nanmin(tr.x), np.nanmax(tr.y) - np.nanmin(tr.y))
            jump = np.hypot(np.diff(x), np.diff(y)) > 0.25 * span
            x = np.insert(x, np.nonzero(jump)[0] + 1, np.nan)
            y = np.insert(y, np.nonzero(jump)[0] + 1, np.nan)
        ax.plot(x, y, lw=0.8)
        au.plot(tr.t, tr.ux[k], lw=0.8)
    ax.set_xlabel(_AXIS_TEX["x"])
    ax.set_ylabel(_AXIS_TEX["y"])
    ax.set_title("%s: %d of %d tracked particles, %d dumps" % (tr.species, n, len(tr.ids),
                                                              len(tr.steps)))
    au.set_xlabel(r"$t$ [$\omega_p^{-1}$]")
    au.set_ylabel(_AXIS_TEX["ux"])
    au.grid(alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def probe_series(pr, path, quantities=None, units=NORMALISED):
    """Time series of a field probe (diag.read.Probe): one panel per quantity; a line probe
    as a map over time and position along the line."""
    qs = quantities or list(pr.values)
    fig, axes = plt.subplots(len(qs), 1, figsize=(7.5, 1.0 + 2.0 * len(qs)), squeeze=False,
                             sharex=True)
    for ax, q in zip(axes[:, 0], qs):
        v = pr.values[q]
        if pr.kind == "point":
            ax.plot(pr.t, v, lw=0.8)
            ax.set_ylabel(q)
        else:
            s = np.hypot(pr.x - pr.x[0], pr.y - pr.y[0])
            lim = float(np.max(np.abs(v))) or 1.0
            m = ax.pcolormesh(pr.t, s, v.T, cmap="RdBu_r", vmin=-lim, vmax=lim,
                              shading="nearest")
            fig.colorbar(m, ax=ax, label=q)
            ax.set_ylabel("along the line")
    axes[-1, 0].set_xlabel("t [1/omega_p]")
    axes[0, 0].set_title("probe %s (%s)" % (pr.name, pr.kind))
    fig.tight_layout()
    return _save(fig, path)


def probe_spectrum(pr, q, omega, amp, path, point=0):
    """Spectrum |FFT| of quantity q of a probe against omega (in omega_p), its peak marked."""
    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    ax.semilogy(omega, amp + 1e-300, lw=0.8)
    k = int(np.argmax(amp))
    ax.axvline(omega[k], color="C3", ls="--", lw=0.8, label="peak %.4g" % omega[k])
    ax.set_xlabel("omega [omega_p]")
    ax.set_ylabel("|FFT(%s)|" % q)
    ax.set_title("probe %s, %s%s" % (pr.name, q, "" if pr.kind == "point" else
                                     " at point %d" % point))
    ax.legend()
    fig.tight_layout()
    return _save(fig, path)
