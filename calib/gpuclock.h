/* gpuclock.h -- the GPU's SM clock, board power and clock-event (throttle) reasons
 * through NVML, for calib's sustained-load probes and the GPU replay.  NVML is dlopen'ed:
 * no link dependency, and a driver without it just yields no readings (open returns -1).
 * Header-only (static functions) so both CUDA translation units take it as it is. */
#ifndef PACESIM_GPUCLOCK_H
#define PACESIM_GPUCLOCK_H

#include <dlfcn.h>
#include <string.h>

typedef struct gpuclock {
    void *lib, *dev;
    int (*clock)(void *dev, int type, unsigned *mhz);
    int (*power)(void *dev, unsigned *mw);
    int (*why)(void *dev, unsigned long long *reasons);
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
    g->why = (int (*)(void *, unsigned long long *))dlsym(g->lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!g->why)
        g->why = (int (*)(void *, unsigned long long *))dlsym(g->lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!init || !handle || !g->clock || init() != 0 || handle((unsigned)device, &g->dev) != 0) {
        dlclose(g->lib);
        memset(g, 0, sizeof *g);
        return -1;
    }
    return 0;
}

/* The SM clock now (MHz); power (W) and reasons when asked for and known.  0 / -1. */
static int gpuclock_read(const gpuclock_t *g, double *mhz, double *watts, unsigned long long *why)
{
    unsigned c = 0, mw = 0;
    if (!g->lib || g->clock(g->dev, 1 /* NVML_CLOCK_SM */, &c) != 0) return -1;
    *mhz = c;
    if (watts) *watts = g->power && g->power(g->dev, &mw) == 0 ? mw * 1e-3 : 0;
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
