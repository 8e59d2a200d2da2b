/* gpuclock.h -- the GPU's SM clock, board power and clock-event (throttle) reasons
 * through NVML, for calib's sustained-load probes and the GPU replay.  NVML is dlopen'ed:
 * no link dependency, and a driver without it just yields no readings (open returns -1).
 * Header-only (static functions) so both CUDA translation units take it as it is. */
#ifndef PACESIM_GPUCLOCK_H
#define PACESIM_GPUCLOCK_H

#include <dlfcn.h>
#include <string.h>

/* NVML's nvmlFieldValue_t (nvml.h), for the instantaneous board power: NVML's plain power
 * reading is a one-second average on Ampere and later, too slow for a step or a probe. */
typedef struct gpuclock_field {
    unsigned field, scope;
    long long timestamp, latency_us;
    int value_type, ret;
    union { double d; unsigned ui; unsigned long ul; unsigned long long ull; long long sll; int si; } value;
} gpuclock_field_t;
#define GPUCLOCK_FI_POWER_INSTANT 186   /* NVML_FI_DEV_POWER_INSTANT, milliwatts */

typedef struct gpuclock {
    void *lib, *dev;
    int (*clock)(void *dev, int type, unsigned *mhz);
    int (*power)(void *dev, unsigned *mw);
    int (*fields)(void *dev, int n, gpuclock_field_t *v);
    int (*why)(void *dev, unsigned long long *reasons);
    int instant;                  /* 1: the power reading is instantaneous (the field works) */
} gpuclock_t;

/* 0, or -1 (no NVML, or no such device); on -1 the struct is left zeroed. */
static int gpuclock_open(gpuclock_t *g, int device)
{
    memset(g, 0, sizeof *g);
    g->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g->lib) return -1;
    int (*init)(void) = (int (*)(void))dlsym(g->lib, "nvmlInit_v2");
    int (*handle)(unsigned, void **) = (int (*)(unsigned, void **))dlsym(g->lib, "nvmlDeviceGetHandleByIndex_v2");
    g->clock = (int (*)(void *, int, unsigned *))dlsym(g->lib, "nvmlDeviceGetClockInfo");
    g->power = (int (*)(void *, unsigned *))dlsym(g->lib, "nvmlDeviceGetPowerUsage");
    g->fields = (int (*)(void *, int, gpuclock_field_t *))dlsym(g->lib, "nvmlDeviceGetFieldValues");
    g->why = (int (*)(void *, unsigned long long *))dlsym(g->lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!g->why)
        g->why = (int (*)(void *, unsigned long long *))dlsym(g->lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!init || !handle || !g->clock || init() != 0 || handle((unsigned)device, &g->dev) != 0) {
        dlclose(g->lib);
        memset(g, 0, sizeof *g);
        return -1;
    }
    gpuclock_field_t fv;
    memset(&fv, 0, sizeof fv);
    fv.field = GPUCLOCK_FI_POWER_INSTANT;
    g->instant = g->fields && g->fields(g->dev, 1, &fv) == 0 && fv.ret == 0 && fv.value.ui > 0;
    return 0;
}

/* The board power now (W): the instantaneous reading where the driver has it, else NVML's
 * average.  0 / -1. */
static int gpuclock_power(const gpuclock_t *g, double *watts)
{
    unsigned mw = 0;
    if (!g->lib) return -1;
    if (g->instant) {
        gpuclock_field_t fv;
        memset(&fv, 0, sizeof fv);
        fv.field = GPUCLOCK_FI_POWER_INSTANT;
        if (g->fields(g->dev, 1, &fv) == 0 && fv.ret == 0) {
            *watts = fv.value.ui * 1e-3;
            return 0;
        }
    }
    if (!g->power || g->power(g->dev, &mw) != 0) return -1;
    *watts = mw * 1e-3;
    return 0;
}

/* The SM clock now (MHz); power (W) and reasons when asked for and known.  0 / -1. */
static int gpuclock_read(const gpuclock_t *g, double *mhz, double *watts, unsigned long long *why)
{
    unsigned c = 0;
    if (!g->lib || g->clock(g->dev, 1 /* NVML_CLOCK_SM */, &c) != 0) return -1;
    *mhz = c;
    if (watts && gpuclock_power(g, watts) != 0) *watts = 0;
    if (why) {
        *why = 0;
        if (g->why) g->why(g->dev, why);
    }
    return 0;
}

static void gpuclock_close(gpuclock_t *g)
{
    if (g->lib) dlclose(g->lib);
    memset(g, 0, sizeof *g);
}

#endif
