/* simclock: the latest time the simulated clock takes.
 *
 * The clock is a double counting seconds from the first arrival.  At 1e7 s (116 days) it
 * resolves 2e-9 s, a millisecond step to 1e-6 of itself; past that a step's duration starts to
 * round away.  Every place that refuses an arrival the clock could not hold (a scenario's keys,
 * an imported trace, the engine's own arrivals, capacity's rate search) refuses it past this
 * one limit, or earlier where the engine's shortest step is under a millisecond
 * (workload_hooks_t.clock_max). */
#ifndef PACESIM_SIMCLOCK_H
#define PACESIM_SIMCLOCK_H

#define SIM_CLOCK_MAX_S 1e7

#endif
