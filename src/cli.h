/* cli.h - GNU-style options for main.c, driven by the usage text: an option is known when
 * the usage text has a line "  --name ..." and takes a value when that line reads
 * "  --name VALUE" (one space between them). */
#ifndef CLI_H
#define CLI_H

/* argv with every "--name=value" of an option taking a value split into "--name" "value"
 * (*argc updated; a new array, the strings are argv's). NULL after reporting "--name=value"
 * for an option that takes none, or an unknown option (exit status 2). */
char **cli_expand(int *argc, char **argv, const char *usage);
/* Report a command-line argument main.c did not accept: an unknown option (with the
 * nearest known one), an option missing its value, or an extra argument. */
void cli_reject(const char *arg, const char *usage);

#endif
