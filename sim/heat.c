/* heat.c: the sustained-load clock state (see heat.h). */
#include <math.h>
#include <stddef.h>
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

double heat_factor(double hot, double h, double f_cold, double f_hot)
{
    if (!(f_hot > 0) || !(f_cold > f_hot) || !(hot > 0)) return 1.0;
    double s = log(hot) / log(f_cold / f_hot), f = f_cold - h * (f_cold - f_hot);
    return f > 0 ? pow(f_cold / f, s) : 1.0;
}

double power_demand(double watts, double idle_w)
{
    return watts > idle_w ? watts - idle_w : 0;
}

double power_clock(double d, const double (*tab)[2], int n, double top_mhz)
{
    if (n < 1 || !(d > 0)) return top_mhz;
    double d0 = 0, f0 = top_mhz;
    for (int i = 0; i < n; i++) {
        double d1 = tab[i][0], f1 = tab[i][1];
        if (d <= d1) return d1 > d0 ? f0 + (f1 - f0) * (d - d0) / (d1 - d0) : f1;
        d0 = d1, f0 = f1;
    }
    return f0;
}

double power_sens(double t_cold, double f_cold, double t_hot, double f_hot)
{
    if (!(t_cold > 0) || !(t_hot > 0) || !(f_cold > 0) || !(f_hot > 0) || fabs(f_cold / f_hot - 1) < 0.02) return NAN;
    double s = log(t_hot / t_cold) / log(f_cold / f_hot);
    return s < 0 ? 0 : s > 1.5 ? 1.5 : s;
}

void power_probe_at(const double (*pr)[4], int n, double u, double idle_w, double *sens, double *demand)
{
    int ord[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, k = n < 1 ? 1 : n < 8 ? n : 8;
    for (int a = 1; a < k; a++)
        for (int b = a; b > 0 && pr[ord[b]][0] < pr[ord[b - 1]][0]; b--) {
            int x = ord[b];
            ord[b] = ord[b - 1];
            ord[b - 1] = x;
        }
    double u0 = pr[ord[0]][0], u1 = pr[ord[k - 1]][0];
    if (!(u1 > u0)) {                     /* one rate: the means */
        double s = 0, d = 0;
        for (int i = 0; i < k; i++) {
            s += pr[i][1];
            d += power_demand(pr[i][2], idle_w);
        }
        *sens = s / k;
        *demand = d / k;
        return;
    }
    int lo = 0;
    if (u <= u0) lo = 0;
    else if (u >= u1) lo = k - 2;
    else
        while (lo < k - 2 && pr[ord[lo + 1]][0] <= u) lo++;
    const double *a = pr[ord[lo]], *b = pr[ord[lo + 1]];
    double w = b[0] > a[0] ? (u - a[0]) / (b[0] - a[0]) : 0;
    if (w < 0) w = 0;
    if (w > 1) w = 1;
    double da = power_demand(a[2], idle_w), db = power_demand(b[2], idle_w);
    *sens = a[1] + w * (b[1] - a[1]);
    *demand = da + w * (db - da);
}
