/* heat.c: the sustained-load clock state (see heat.h). */
#include <math.h>
#include "heat.h"

double heat_step(double *h, double c, double dt, double tau_up, double tau_down)
{
    double h0 = *h, tau = c > h0 ? tau_up : tau_down;
    if (!(dt > 0)) return h0;
    if (!(tau > 0)) {
        *h = c;
        return c;
    }
    /* h(t) = c + (h0 - c) e^(-t/tau): its end value and its mean over [0, dt] */
    double x = dt / tau, a = exp(-x);
    *h = c + (h0 - c) * a;
    return c + (h0 - c) * (x > 1e-9 ? (1 - a) / x : 1.0);
}

double heat_tau(const double *t, const double *tr, int n, double from, double to)
{
    if (n < 1 || from == to || !isfinite(from) || !isfinite(to)) return NAN;
    double goal = (1 - exp(-1.0)) * (to - from);      /* signed distance to cover */
    double prev_t = 0, prev_d = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(tr[i])) continue;
        double d = tr[i] - from;
        if ((goal > 0 && d >= goal) || (goal < 0 && d <= goal)) {
            if (i == 0 || d == prev_d) return t[i];
            return prev_t + (t[i] - prev_t) * (goal - prev_d) / (d - prev_d);
        }
        prev_t = t[i];
        prev_d = d;
    }
    return NAN;
}

double heat_factor_at(double hot, double f, double f_cold, double f_hot)
{
    if (!(f_hot > 0) || !(f_cold > f_hot) || !(hot > 0)) return 1.0;
    double s = log(hot) / log(f_cold / f_hot);
    return f > 0 ? pow(f_cold / f, s) : 1.0;
}

double heat_factor(double hot, double h, double f_cold, double f_hot)
{
    return heat_factor_at(hot, heat_clock(h, f_cold, f_hot), f_cold, f_hot);
}

double heat_clock(double h, double f_cold, double f_hot)
{
    return f_cold - h * (f_cold - f_hot);
}
