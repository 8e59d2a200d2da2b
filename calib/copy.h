/* copy: measure what one GPU's copies cost -- within its memory (device to device) and
 * between it and pinned host memory (host to device, device to host) -- and fit each a law
 * t = c0 + c1 * bytes ("copy.d2d", "copy.h2d", "copy.d2h": a latency and 1 / bandwidth).
 *
 * cp_measure() times sizes from 4 KiB to max_bytes (powers of two) in each direction through a
 * timer callback -- cudaMemcpyAsync timed by CUDA events in calib/copy_gpu.cu, a fake in the
 * tests --, takes the median of the repeats, fits the law with fit_law() and puts it into the
 * profile (replacing an older one).  Pure C; the caller owns the profile.
 * What it does not measure: a copy between two GPUs (NVLink, PCIe peer to peer, NCCL send/recv
 * or a NIXL transfer over the network) -- that needs a machine with several GPUs; the
 * disaggregated KV transfer is priced by link presets (docs/scenarios.md). */
#ifndef PACESIM_COPY_H
#define PACESIM_COPY_H

#include "profile.h"

typedef enum { CP_D2D = 0, CP_H2D, CP_D2H, CP__N } cp_dir_t;

#define CP_MIN_BYTES 4096.0
#define CP_REPS 9

/* Time one copy of `bytes` bytes in direction dir: reps timings (seconds) into sec[0..reps).
 * 0 or -1. */
typedef int (*cp_timer_fn)(void *ctx, cp_dir_t dir, double bytes, int reps, double *sec);

/* The law's name of direction dir ("copy.d2d", ...). */
const char *cp_law_name(cp_dir_t dir);

/* Measure sizes 4 KiB .. max_bytes (powers of two, max_bytes >= 4 KiB) in every direction, fit
 * and put laws copy.d2d, copy.h2d and copy.d2h into p.  what (the device's name) goes into the
 * provenance.  0, or -1 with err filled (p keeps the laws put before the failure). */
int cp_measure(profile_t *p, const char *what, double max_bytes, cp_timer_fn timer, void *ctx, char err[256]);

#endif
