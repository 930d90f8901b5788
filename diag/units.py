"""Normalised units and their SI values for a run's reference density n0 (simulation.n0 in
run.cfg): what `--si` plots show (µm, fs, V/m, T, MeV)."""

import math
import os
import re
from dataclasses import dataclass

# CODATA 2018
E_CHARGE = 1.602176634e-19
M_E = 9.1093837015e-31
C_LIGHT = 299792458.0
EPS0 = 8.8541878128e-12
MEC2_MEV = M_E * C_LIGHT**2 / E_CHARGE / 1e6  # 0.511 MeV


@dataclass
class Units:
    """Axis labels and factors: value_shown = value_normalised * factor."""
    si: bool
    n0_cm3: float = 1e18

    @property
    def omega_p(self):
        return math.sqrt(self.n0_cm3 * 1e6 * E_CHARGE**2 / (EPS0 * M_E))

    # (factor, label) per kind of quantity
    def length(self):
        return (C_LIGHT / self.omega_p * 1e6, r"µm") if self.si else (1.0, r"$c/\omega_p$")

    def time(self):
        return (1e15 / self.omega_p, "fs") if self.si else (1.0, r"$\omega_p^{-1}$")

    def rate(self):
        """Unit of a rate (1/time): omega_p, or 1/fs."""
        return (self.omega_p / 1e15, r"fs$^{-1}$") if self.si else (1.0, r"$\omega_p$")

    def momentum(self):
        """u = γv/c per unit mass; in SI, p = m u c in MeV/c (m in m_e)."""
        return (MEC2_MEV, "MeV/c") if self.si else (1.0, r"$m c$")

    def energy(self):
        return (MEC2_MEV, "MeV") if self.si else (1.0, r"$m_e c^2$")

    def field(self, name):
        """Factor and unit of a mesh record E, B, J, rho, rho_<species>."""
        wp, n0 = self.omega_p, self.n0_cm3 * 1e6
        kind = "rho" if name.startswith("rho") else name[:1]
        si = {"E": (M_E * C_LIGHT * wp / E_CHARGE, "V/m"), "B": (M_E * wp / E_CHARGE, "T"),
              "J": (E_CHARGE * n0 * C_LIGHT, r"A/m$^2$"), "rho": (E_CHARGE * n0, r"C/m$^3$")}
        norm = {"E": r"$m_e c\,\omega_p/e$", "B": r"$m_e \omega_p/e$", "J": r"$e n_0 c$",
                "rho": r"$e n_0$"}
        if self.si:
            return si.get(kind, (1.0, ""))
        return 1.0, norm.get(kind, "")


def read_n0(outdir):
    """simulation.n0 of the run (cm^-3) from OUTDIR/run.cfg; 1e18 (empic's default) if the
    file is missing."""
    try:
        text = open(os.path.join(outdir, "run.cfg")).read()
    except OSError:
        return 1e18
    m = re.search(r"\bn0\s*=\s*([0-9.eE+-]+)", text)
    return float(m.group(1)) if m else 1e18


def for_run(outdir, si=False):
    return Units(si, read_n0(outdir))
