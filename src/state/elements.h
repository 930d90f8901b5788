/* elements.h - the chemical elements field ionization knows (H to Kr) and the ionization
 * energies of each of their charge states. */
#ifndef ELEMENTS_H
#define ELEMENTS_H

#define ELEMENTS_ZMAX 36

/* The atomic number of the element with symbol `sym` ("N", "Ar": case as written), or 0. */
int elements_z(const char *sym);
/* The symbol of element z (1..ELEMENTS_ZMAX). */
const char *elements_symbol(int z);
/* The energy in eV to take the ion of element z from charge state k to k + 1 (0 <= k < z). */
double elements_ip(int z, int k);

#endif
