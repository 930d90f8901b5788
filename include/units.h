/* units.h - SI constants and the conversions between the lab units of a deck and empic's
 * normalised units (design.md §2: time 1/omega_p, length c/omega_p, density n0, momentum
 * m c, field m_e c omega_p/e), omega_p being the plasma frequency of the reference density
 * n0 in cm^-3. One place for them: the deck converts its lab keys at read time, --check
 * prints the scales and the output writes the SI factors. Host code only. */
#ifndef UNITS_H
#define UNITS_H

#include <math.h>

/* CODATA 2018 */
#define UNITS_E 1.602176634e-19      /* C */
#define UNITS_ME 9.1093837015e-31    /* kg */
#define UNITS_C 299792458.0          /* m/s */
#define UNITS_EPS0 8.8541878128e-12  /* F/m */
#define UNITS_PI 3.14159265358979323846

/* Plasma frequency of n0 (cm^-3), rad/s. */
static inline double units_wp(double n0_cm3)
{
    return sqrt(n0_cm3 * 1e6 * UNITS_E * UNITS_E / (UNITS_EPS0 * UNITS_ME));
}

/* One c/omega_p in um, one 1/omega_p in fs. */
static inline double units_length_um(double n0_cm3) { return UNITS_C / units_wp(n0_cm3) * 1e6; }
static inline double units_time_fs(double n0_cm3) { return 1e15 / units_wp(n0_cm3); }

/* The unit of E, m_e c omega_p / e, in V/m and of B, m_e omega_p / e, in T. */
static inline double units_field_Vm(double n0_cm3)
{
    return UNITS_ME * UNITS_C * units_wp(n0_cm3) / UNITS_E;
}
static inline double units_field_T(double n0_cm3) { return UNITS_ME * units_wp(n0_cm3) / UNITS_E; }

/* m_e c^2 in eV (510998.95). */
static inline double units_mc2_eV(void) { return UNITS_ME * UNITS_C * UNITS_C / UNITS_E; }

/* Critical density of the wavelength lambda (um) in cm^-3: eps0 m_e omega^2 / e^2
 * (1.1148e21 / lambda^2). */
static inline double units_nc_cm3(double lambda_um)
{
    const double w = 2.0 * UNITS_PI * UNITS_C / (lambda_um * 1e-6);
    return UNITS_EPS0 * UNITS_ME * w * w / (UNITS_E * UNITS_E) * 1e-6;
}

/* omega0 / omega_p of the wavelength lambda (um): sqrt(n_c / n0). */
static inline double units_omega0(double lambda_um, double n0_cm3)
{
    return sqrt(units_nc_cm3(lambda_um) / n0_cm3);
}

/* Wavelength (um) of the normalised frequency omega0 (in omega_p of n0). */
static inline double units_lambda_um(double omega0, double n0_cm3)
{
    return 2.0 * UNITS_PI / omega0 * units_length_um(n0_cm3);
}

/* a0 = e E / (m_e c omega) of the peak intensity I (W/cm^2) at the wavelength lambda (um),
 * E the peak of the field |E| (laser.h: a0 omega0 for both polarisations). Linear: the
 * cycle-averaged I = c eps0 E^2 / 2 (a0 = 0.855 lambda sqrt(I / 1e18)); circular: |E| is
 * constant, I = c eps0 E^2, so a0 is smaller by sqrt(2). */
static inline double units_a0(double intensity_Wcm2, double lambda_um, int circular)
{
    const double E = sqrt((circular ? 1.0 : 2.0) * intensity_Wcm2 * 1e4 / (UNITS_C * UNITS_EPS0));
    return UNITS_E * E * lambda_um * 1e-6 / (2.0 * UNITS_PI * UNITS_ME * UNITS_C * UNITS_C);
}

/* The peak intensity (W/cm^2) of a0 at lambda (um): the inverse of units_a0. */
static inline double units_intensity(double a0, double lambda_um, int circular)
{
    const double a1 = units_a0(1.0, lambda_um, circular); /* a0 of 1 W/cm^2 */
    return a0 * a0 / (a1 * a1);
}

#endif
