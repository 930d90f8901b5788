"""Numbers drawn from a run: the exponential growth rate of an energy history."""

from dataclasses import dataclass

import numpy as np


@dataclass
class Growth:
    """W(t) ~ exp(2 gamma t) over [t0, t1]: `rate` is the energy's rate 2 gamma, `gamma`
    the amplitude's (the field's) rate, both in 1/time of t."""
    column: str
    t0: float
    t1: float
    rate: float
    gamma: float
    log_w0: float   # ln W at t = 0 of the fitted line

    def line(self, t):
        return np.exp(self.log_w0 + self.rate * np.asarray(t, dtype=float))


def auto_window(t, w):
    """The linear phase of a growing energy W(t): between where ln W has risen by 20 % and by
    80 % of its rise, from its minimum (after the first 5 % of the time, which a start-up
    transient may fill) to where it first comes within a factor e of its maximum (the
    saturation)."""
    t, w = np.asarray(t, float), np.asarray(w, float)
    pos = w > 0
    if pos.sum() < 3:
        raise ValueError("fewer than 3 positive values to fit")
    lw = np.where(pos, np.log(np.where(pos, w, 1.0)), -np.inf)
    sat = int(np.argmax(lw >= lw.max() - 1.0))
    skip = int(np.searchsorted(t, t[0] + 0.05 * (t[-1] - t[0])))
    seg = np.arange(min(skip, sat), sat + 1)
    seg = seg[pos[seg]]
    if len(seg) < 3:
        raise ValueError("no growth to fit: the energy does not rise")
    lo = seg[int(np.argmin(lw[seg]))]
    rise = lw[sat] - lw[lo]
    seg = np.arange(lo, sat + 1)
    if len(seg) < 3 or rise <= 0:
        raise ValueError("no growth to fit: the energy does not rise")
    i0 = seg[np.argmax(lw[seg] >= lw[lo] + 0.2 * rise)]
    i1 = seg[np.argmax(lw[seg] >= lw[lo] + 0.8 * rise)]
    if i1 - i0 < 2:
        i0, i1 = lo, sat
    return float(t[i0]), float(t[i1])


def growth_rate(t, w, window=None, column="energy"):
    """Least-squares fit of ln W against t over window (t0, t1), or auto_window's."""
    t, w = np.asarray(t, float), np.asarray(w, float)
    t0, t1 = window if window is not None else auto_window(t, w)
    sel = (t >= t0) & (t <= t1) & (w > 0)
    if sel.sum() < 2:
        raise ValueError("fewer than 2 positive values of %s in [%g, %g]" % (column, t0, t1))
    rate, log_w0 = np.polyfit(t[sel], np.log(w[sel]), 1)
    return Growth(column, float(t0), float(t1), float(rate), float(rate) / 2, float(log_w0))


def growing_column(en):
    """The field energy column (field_E or field_B) that grows by 10x or more from its first
    positive value to its peak and reaches the larger peak (a field that stays at round-off
    level may grow by a larger factor); None when neither grows."""
    best, peak = None, 0.0
    for k in ("field_E", "field_B"):
        if k in en and len(en[k]):
            v = np.asarray(en[k], float)
            pos = v[v > 0]
            if pos.size and v.max() >= 10 * pos[0] and v.max() > peak:
                best, peak = k, float(v.max())
    return best
