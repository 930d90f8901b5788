"""PNG plots of empic output (matplotlib, Agg backend). Each function writes one file and
returns its path."""

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

UNITS = {"E": r"$m_e c\,\omega_p/e$", "B": r"$m_e \omega_p/e$", "J": r"$e n_0 c$",
         "rho": r"$e n_0$"}


def _unit(name):
    return UNITS.get("rho" if name.startswith("rho") else name[:1], "")


def _save(fig, path):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def field_map(fld, path, cmap="RdBu_r"):
    """2D colour map of a diag.read.Field, symmetric colour range."""
    fig, ax = plt.subplots(figsize=(7, 5))
    vmax = float(np.max(np.abs(fld.data))) or 1.0
    im = ax.imshow(fld.data, origin="lower", extent=fld.extent, aspect="auto", cmap=cmap,
                   vmin=-vmax, vmax=vmax, interpolation="nearest")
    fig.colorbar(im, ax=ax, label="%s [%s]" % (fld.name, _unit(fld.name)))
    ax.set_xlabel(r"$x$ [$c/\omega_p$]")
    ax.set_ylabel(r"$y$ [$c/\omega_p$]")
    ax.set_title("%s  step %d  t = %.4g $\\omega_p^{-1}$" % (fld.name, fld.step, fld.t))
    fig.tight_layout()
    return _save(fig, path)


def lineout(fld, path, axis="x", at=None):
    """Profile of a Field along `axis` ('x' or 'y') at the other coordinate `at`
    (default: the middle of the box)."""
    if axis == "x":
        other, coords = fld.y, fld.x
        j = len(other) // 2 if at is None else int(np.argmin(np.abs(other - at)))
        values, label = fld.data[j, :], "y = %.4g" % other[j]
    else:
        other, coords = fld.x, fld.y
        i = len(other) // 2 if at is None else int(np.argmin(np.abs(other - at)))
        values, label = fld.data[:, i], "x = %.4g" % other[i]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(coords, values, lw=1.2, label=label)
    ax.set_xlabel(r"$%s$ [$c/\omega_p$]" % axis)
    ax.set_ylabel("%s [%s]" % (fld.name, _unit(fld.name)))
    ax.set_title("%s lineout  step %d  t = %.4g" % (fld.name, fld.step, fld.t))
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


def phase_space(p, path, bins=128):
    """x-ux and ux-uy phase spaces of a diag.read.Particles sample."""
    fig, axs = plt.subplots(1, 2, figsize=(11, 4.5))
    _hist2d(axs[0], p.x, p.ux, p.w, bins)
    axs[0].set_xlabel(r"$x$ [$c/\omega_p$]")
    axs[0].set_ylabel(r"$u_x$ [$m c$]")
    _hist2d(axs[1], p.ux, p.uy, p.w, bins)
    axs[1].set_xlabel(r"$u_x$ [$m c$]")
    axs[1].set_ylabel(r"$u_y$ [$m c$]")
    fig.suptitle("%s  step %d  t = %.4g  (%d macro-particles)"
                 % (p.species, p.step, p.t, len(p)))
    fig.tight_layout()
    return _save(fig, path)


def spectrum(samples, path, bins=100):
    """Kinetic energy spectra dN/dE of one or more Particles samples (weighted)."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for p in samples:
        e = p.ekin
        if len(e) == 0:
            continue
        emax = float(e.max()) or 1.0
        h, edges = np.histogram(e, bins=bins, range=(0.0, emax), weights=p.w)
        de = edges[1] - edges[0]
        centres = 0.5 * (edges[1:] + edges[:-1])
        ax.step(centres, np.where(h > 0, h / de, np.nan), where="mid",
                label="%s (step %d)" % (p.species, p.step))
    ax.set_yscale("log")
    ax.set_xlabel(r"$(\gamma-1)\,m c^2$ [$m_e c^2$]")
    ax.set_ylabel(r"$dN/dE$ [arb.]")
    ax.set_title("energy spectrum")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def energy_history(en, path):
    """Field, kinetic and total energies against t, and gauss_max on a log axis."""
    fig, (ax, ag) = plt.subplots(2, 1, figsize=(8, 7), sharex=True,
                                 gridspec_kw={"height_ratios": [2, 1]})
    t = en.get("t", en.get("step"))
    for k, v in en.items():
        if k in ("field_E", "field_B", "total") or k.startswith("kinetic_"):
            ax.plot(t, v, lw=2.0 if k == "total" else 1.2,
                    ls="--" if k == "total" else "-", label=k)
    ax.set_ylabel(r"energy [$m_e c^2 n_0 (c/\omega_p)^2$]")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    if "total" in en and len(en["total"]) and en["total"][0] != 0:
        drift = (en["total"][-1] - en["total"][0]) / abs(en["total"][0])
        ax.set_title("energy history (total drift %.3g)" % drift)
    if "gauss_max" in en:
        g = np.asarray(en["gauss_max"], dtype=float)
        pos = g > 0
        if pos.any():
            ag.semilogy(t[pos], g[pos], "k.-", lw=1)
        else:
            ag.text(0.5, 0.5, "gauss_max = 0", ha="center", va="center",
                    transform=ag.transAxes)
            ag.set_yscale("log")
    ag.set_ylabel(r"max $|\nabla\cdot E - \rho|$")
    ag.set_xlabel(r"$t$ [$\omega_p^{-1}$]")
    ag.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return _save(fig, path)


PHASES = ("push", "deposit", "sort", "field", "other")


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


_AXIS_TEX = {"x": r"$x$ [$c/\omega_p$]", "y": r"$y$ [$c/\omega_p$]", "ux": r"$u_x$ [$m c$]",
             "uy": r"$u_y$ [$m c$]", "uz": r"$u_z$ [$m c$]",
             "energy": r"$(\gamma-1)\,m c^2$ [$m_e c^2$]",
             "log10_energy": r"$\log_{10}$ $(\gamma-1)\,m c^2$ [$m_e c^2$]"}


def histogram(h, path):
    """An in-code phase-space histogram (diag.read.Histogram): a colour map of |charge
    density| for 2D, a spectrum dQ/dE (log scale) for 1D."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    a = np.abs(h.data)
    if len(h.labels) == 2:
        m = np.ma.masked_where(a <= 0, a)
        im = ax.pcolormesh(h.edges[0], h.edges[1], m, cmap="viridis", shading="flat")
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
