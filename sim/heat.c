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

double duty_phi(double d, const double (*tab)[2], int n)
{
    if (n < 1 || !(d > 0)) return 0;
    double d0 = 0, p0 = 0;
    for (int i = 0; i < n; i++) {
        double d1 = tab[i][0], p1 = tab[i][1];
        if (d <= d1) return d1 > d0 ? p0 + (p1 - p0) * (d - d0) / (d1 - d0) : p1;
        d0 = d1, p0 = p1;
    }
    return p0;
}

double duty_hot_at(const double (*pr)[2], int n, double u)
{
    int ord[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, k = n < 1 ? 1 : n < 8 ? n : 8;
    for (int a = 1; a < k; a++)
        for (int b = a; b > 0 && pr[ord[b]][0] < pr[ord[b - 1]][0]; b--) {
            int x = ord[b];
            ord[b] = ord[b - 1];
            ord[b - 1] = x;
        }
    double u0 = pr[ord[0]][0], u1 = pr[ord[k - 1]][0];
    if (!(u1 > u0)) {                     /* one rate: the mean */
        double h = 0;
        for (int i = 0; i < k; i++) h += pr[i][1];
        return h / k;
    }
    if (u <= u0) return pr[ord[0]][1];
    if (u >= u1) return pr[ord[k - 1]][1];
    int lo = 0;
    while (lo < k - 2 && pr[ord[lo + 1]][0] <= u) lo++;
    const double *a = pr[ord[lo]], *b = pr[ord[lo + 1]];
    return b[0] > a[0] ? a[1] + (b[1] - a[1]) * (u - a[0]) / (b[0] - a[0]) : a[1];
}
