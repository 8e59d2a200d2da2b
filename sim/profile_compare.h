/* profile_compare: `pacesim profile A.yaml --compare B.yaml [--scenario FILE]` -- where two
 * profiles differ: their metadata, law by law their coefficients (and the laws only one has),
 * the price each gives the same items (every item of every step of the reference experiment,
 * scenarios/default.yaml, or FILE's, as the simulator runs it with the scenario's own profile),
 * and their measured envelopes.  A profile against itself prints "no difference".
 * Exit 0, or 2 on bad input (one line "file:line:col: message" on stderr), 1 on a failed run. */
#ifndef PACESIM_PROFILE_COMPARE_H
#define PACESIM_PROFILE_COMPARE_H

#include <stdio.h>

/* The default scenario whose items are priced (from the repository's root). */
#define PROFILE_COMPARE_SCENARIO "scenarios/default.yaml"

/* argv: A.yaml --compare B.yaml [--scenario FILE] (in any order).  Output on out. */
int profile_compare_cmd(int argc, char **argv, FILE *out);

#endif
