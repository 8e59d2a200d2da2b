/* fnv: 64-bit FNV-1a, a deterministic digest of bytes (no seed, the same on every run): the
 * scenario digests of a run's cache (runner.c), a step's work (replay_step_shape), a name's
 * content key (workload.c) and the sweep's name table (sweep.c). */
#ifndef PACESIM_FNV_H
#define PACESIM_FNV_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A_BASIS 14695981039346656037ULL

/* h extended by the n bytes at p. */
static inline uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* h extended by the bytes of s, up to its terminating NUL (not included). */
static inline uint64_t fnv1a_str(uint64_t h, const char *s)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

#endif
