/* deck_lab.c - keys in lab units (um, fs, W/cm^2, cm^-3, eV) beside their normalised twins,
 * converted when the deck is read (include/units.h), so that the resolved deck and the run
 * see normalised values only.
 *
 * The reference density n0 is simulation.n0 when given; otherwise, when a laser gives its
 * wavelength lambda0, n0 is the critical density of the first such laser (its omega0 is 1:
 * lengths in c/omega0, times in 1/omega0, densities in n_c, as Smilei normalises); otherwise
 * the default 1e18 cm^-3 labels the output only, and the lab keys that need n0 are refused. */
#include "deck_read.h"
#include "empic.h"
#include "units.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Wavelengths in um outside this range are a unit mistake (metres or nm given). */
#define LAMBDA_UM_MIN 1e-4
#define LAMBDA_UM_MAX 1e5

static const char NEED_N0[] = "the reference density: add simulation.n0 (cm^-3), or lambda0 "
                              "(um) to a laser (n0 is then its critical density)";

void dk_lab_reference(dk_ctx *c, const cs *root)
{
    const cs *l = dk_member(root, "lasers");
    c->n0_known = dk_member(dk_member(root, "simulation"), "n0") != NULL;
    for (int i = 0; !c->n0_known && l && config_setting_is_list(l) &&
                    i < config_setting_length(l); i++) {
        const cs *s = dk_member(config_setting_get_elem(l, (unsigned)i), "lambda0");
        double lam;
        if (!s || (config_setting_type(s) != CONFIG_TYPE_FLOAT &&
                   config_setting_type(s) != CONFIG_TYPE_INT))
            continue;
        lam = config_setting_type(s) == CONFIG_TYPE_INT ? config_setting_get_int(s)
                                                        : config_setting_get_float(s);
        if (!(lam >= LAMBDA_UM_MIN && lam <= LAMBDA_UM_MAX))
            return; /* reported by parse_laser */
        c->d->n0 = units_nc_cm3(lam);
        c->n0_known = c->d->n0_given = 1; /* a physical scale, as simulation.n0 gives */
    }
}

cs *dk_given(const cs *g, const char *key, const char *lab)
{
    cs *s = dk_member(g, key);
    return s ? s : dk_member(g, lab);
}

double dk_lab_um(const dk_ctx *c) { return c->n0_known ? 1.0 / units_length_um(c->d->n0) : 0.0; }
double dk_lab_fs(const dk_ctx *c) { return c->n0_known ? 1.0 / units_time_fs(c->d->n0) : 0.0; }
double dk_lab_vm(const dk_ctx *c) { return c->n0_known ? 1.0 / units_field_Vm(c->d->n0) : 0.0; }
double dk_lab_tesla(const dk_ctx *c) { return c->n0_known ? 1.0 / units_field_T(c->d->n0) : 0.0; }

/* "k0 (u0), k1 (u1) or k2 (u2)" */
static const char *alt_list(const dk_alt *alt, int n, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k < len; i++) {
        int w = snprintf(buf + k, len - k, "%s%s (%s)", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                         alt[i].key, alt[i].unit);
        k += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

int dk_alt_which(dk_ctx *c, const cs *g, const dk_alt *alt, int n, int req)
{
    char all[256];
    int k = -1;
    for (int i = 0; i < n; i++) {
        if (!dk_member(g, alt[i].key))
            continue;
        if (k >= 0) {
            dk_report(c, dk_member(g, alt[i].key), NULL, "given together with %s; expected one "
                      "of %s", alt[k].key, alt_list(alt, n, all, sizeof all));
            return -2;
        }
        k = i;
    }
    if (k < 0 && req)
        dk_report(c, g, alt[0].key, "missing; expected one of %s", alt_list(alt, n, all,
                  sizeof all));
    if (k > 0 && !(alt[k].scale > 0)) {
        dk_report(c, dk_member(g, alt[k].key), NULL, "is in %s and needs %s; or give %s (%s)",
                  alt[k].unit, alt[k].need ? alt[k].need : NEED_N0, alt[0].key, alt[0].unit);
        return -2;
    }
    return k;
}

int dk_num_alt(dk_ctx *c, const cs *g, const dk_alt *alt, int n, double *v, int kind, int req)
{
    double t;
    int k = dk_alt_which(c, g, alt, n, req);
    if (k < 0)
        return k == -1 && !req ? 0 : -1;
    if (dk_num(c, g, alt[k].key, &t, kind, 1) < 0)
        return -1;
    *v = k ? t * alt[k].scale : t;
    return k + 1;
}

int dk_vec_alt(dk_ctx *c, const cs *g, const dk_alt *alt, int n, double *v, int dim, int kind,
               int req)
{
    double t[4];
    int k = dk_alt_which(c, g, alt, n, req);
    if (k < 0)
        return k == -1 && !req ? 0 : -1;
    if (dk_vec(c, g, alt[k].key, t, dim, kind, 1) < 0)
        return -1;
    for (int i = 0; i < dim; i++)
        v[i] = k ? t[i] * alt[k].scale : t[i];
    return k + 1;
}

/* omega0 or lambda0; then (after the polarisation) a0 or intensity, and the lengths and
 * times of the beam. */
void dk_laser_omega(dk_ctx *c, const cs *g, deck_laser *L)
{
    const deck *d = c->d;
    const dk_alt w[] = {{"omega0", "omega_p", 1, NULL}, {"lambda0", "um", 1, NULL}};
    if (dk_num_alt(c, g, w, 2, &L->omega0, DK_POS, 1) != 2)
        return;
    const double lam = L->omega0;
    if (!(lam >= LAMBDA_UM_MIN && lam <= LAMBDA_UM_MAX)) {
        dk_report(c, dk_member(g, "lambda0"), NULL, "got %g; expected a wavelength in um from "
                  "%g to %g (0.8 for Ti:sapphire, 1.057 for Nd:glass)", lam, LAMBDA_UM_MIN,
                  LAMBDA_UM_MAX);
        return;
    }
    if (!c->n0_known) { /* dk_lab_reference found no usable lambda0 */
        dk_report(c, dk_member(g, "lambda0"), NULL, "needs %s", NEED_N0);
        return;
    }
    L->omega0 = units_omega0(lam, d->n0);
}

void dk_laser_lab(dk_ctx *c, const cs *g, deck_laser *L)
{
    const deck *d = c->d;
    double lam = 0; /* the wavelength in um, 0 when unknown */
    double t;
    const cs *l = dk_member(g, "lambda0");
    if (l && dk_num_of(c, l, &t) == 0 && t > 0)
        lam = t;
    else if (!l && c->n0_known && L->omega0 > 0)
        lam = units_lambda_um(L->omega0, d->n0);
    const dk_alt a[] = {{"a0", "normalised", 1, NULL},
                        {"intensity", "W/cm^2", lam > 0, "the wavelength: add lambda0 (um), "
                         "or simulation.n0 (cm^-3) to give omega0 a wavelength"}};
    if (dk_num_alt(c, g, a, 2, &L->a0, DK_POS, 1) == 2)
        L->a0 = units_a0(L->a0, lam, L->circular);
    const double um = dk_lab_um(c), fs = dk_lab_fs(c);
    const dk_alt w0[] = {{"w0", "c/omega_p", 1, NULL}, {"w0_um", "um", um, NULL}};
    const dk_alt dur[] = {{"duration", "1/omega_p", 1, NULL}, {"duration_fs", "fs", fs, NULL}};
    dk_num_alt(c, g, w0, 2, &L->w0, DK_POS, 1);
    dk_num_alt(c, g, dur, 2, &L->duration, DK_POS, 1);
}

/* Optional ramp, focus and center of a laser (defaults already in L). */
int dk_laser_ramp(dk_ctx *c, const cs *g, deck_laser *L)
{
    const dk_alt r[] = {{"ramp", "1/omega_p", 1, NULL}, {"ramp_fs", "fs", dk_lab_fs(c), NULL}};
    return dk_num_alt(c, g, r, 2, &L->ramp, DK_POS, 0);
}

void dk_laser_place(dk_ctx *c, const cs *g, deck_laser *L)
{
    const double um = dk_lab_um(c);
    const dk_alt f[] = {{"focus", "c/omega_p", 1, NULL}, {"focus_um", "um", um, NULL}};
    const dk_alt m[] = {{"center", "c/omega_p", 1, NULL}, {"center_um", "um", um, NULL}};
    dk_num_alt(c, g, f, 2, &L->focus, DK_ANY, 0);
    dk_num_alt(c, g, m, 2, &L->center, DK_ANY, 0);
}

void dk_density_lab(dk_ctx *c, const cs *g, deck_species *sp)
{
    const deck *d = c->d;
    const double nc = d->nlasers > 0 ? d->lasers[0].omega0 * d->lasers[0].omega0 : 0;
    const dk_alt n[] = {{"n", "n0", 1, NULL},
                        {"n_cm3", "cm^-3", c->n0_known ? 1.0 / d->n0 : 0, NULL},
                        {"n_nc", "critical densities of lasers[0]", nc,
                         "a laser: n_c is the critical density of lasers[0] (n_c/n0 = "
                         "omega0^2); add one"}};
    dk_num_alt(c, g, n, 3, &sp->n, DK_NONNEG, 0);
}

/* thermal, or temperature_eV / temperature_keV (a number, or one per axis): u_th =
 * sqrt(T / (m c^2)), the spread of the load's Gaussian in u and, hot and isotropic, the
 * Maxwell-Juttner temperature uth^2 m c^2 (species.c). */
void dk_temperature(dk_ctx *c, const cs *g, deck_species *sp)
{
    const dk_alt t[] = {{"thermal", "u_th in m c", 1, NULL}, {"temperature_eV", "eV", 1, NULL},
                        {"temperature_keV", "keV", 1e3, NULL}};
    const int k = dk_alt_which(c, g, t, 3, 0);
    if (k <= 0) {
        if (k == 0)
            dk_vec(c, g, "thermal", sp->uth, 3, DK_NONNEG, 0);
        return;
    }
    const cs *s = dk_member(g, t[k].key);
    double T[3];
    if (config_setting_is_array(s) || config_setting_is_list(s)) {
        if (dk_vec(c, g, t[k].key, T, 3, DK_NONNEG, 1) < 0)
            return;
    } else if (dk_num(c, g, t[k].key, &T[0], DK_NONNEG, 1) < 0) {
        return;
    } else {
        T[1] = T[2] = T[0];
    }
    for (int i = 0; i < 3 && sp->mass > 0; i++)
        sp->uth[i] = sqrt(T[i] * t[k].scale / (sp->mass * units_mc2_eV()));
}
