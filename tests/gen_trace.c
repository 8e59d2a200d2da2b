/* gen_trace: write a synthetic request trace for pacesim's `workload: trace:` key, so the
 * scale bench never needs a big committed file.
 *
 *   gen_trace COUNT RATE_PER_S [SEED] [--prefix GROUPS,TOKENS,SHARE] > trace.csv
 *
 * Rows: arrival_s,prompt_tokens,output_tokens,cached_tokens; with --prefix two more
 * columns, prefix_group,prefix_tokens: a SHARE of the rows (drawn) starts with the first
 * min(TOKENS, prompt) tokens of one of GROUPS prefixes drawn uniformly, the others have
 * group -1 (for engine.prefix_cache_model: pool; the draws of the other columns are
 * the same with and without it).  Poisson arrivals at RATE;
 * prompts ~ lognormal(mu 7, sigma 1) clamped to [16, 16384]; outputs ~ lognormal(5, 0.8)
 * clamped to [1, 2048]; cached ~ uniform(0, 0.6) of the prompt -- the same shapes as
 * scenarios/bench-poisson-100k.yaml.  xorshift64* and Box-Muller: the same file for the
 * same arguments on every machine. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t st = 88172645463325252ULL;

static double uni(void)   /* (0, 1) */
{
    st ^= st >> 12;
    st ^= st << 25;
    st ^= st >> 27;
    return ((double)((st * 2685821657736338717ULL) >> 11) + 0.5) / 9007199254740992.0;
}

static double gauss(void)
{
    return sqrt(-2.0 * log(uni())) * cos(6.283185307179586 * uni());
}

static long clampl(double x, long lo, long hi)
{
    long v = x < (double)hi ? lround(x) : hi;
    return v < lo ? lo : v;
}

/* The whole of s is a decimal integer in [lo, hi]; 0 or -1. */
static int arg_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    long n, seed = 0, groups = 0, ptok = 0;
    double share = 0;
    char *end;
    if (argc >= 3 && !strcmp(argv[argc - 2], "--prefix")) {
        int used = 0;
        if (sscanf(argv[argc - 1], "%ld,%ld,%lf%n", &groups, &ptok, &share, &used) != 3 || argv[argc - 1][used] ||
            groups < 1 || ptok < 1 || !(share >= 0 && share <= 1)) {
            fprintf(stderr, "gen_trace: --prefix GROUPS,TOKENS,SHARE: GROUPS and TOKENS integers >= 1, SHARE in [0, 1]\n");
            return 2;
        }
        argc -= 2;
    }
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: gen_trace COUNT RATE_PER_S [SEED] [--prefix GROUPS,TOKENS,SHARE] > trace.csv\n");
        return 2;
    }
    errno = 0;
    double rate = strtod(argv[2], &end);
    if (arg_long(argv[1], 1, LONG_MAX, &n) < 0 || !*argv[2] || *end || errno || !(rate > 0) || !isfinite(rate) ||
        (argc > 3 && arg_long(argv[3], 0, LONG_MAX, &seed) < 0)) {
        fprintf(stderr, "gen_trace: COUNT an integer >= 1, RATE a finite number > 0, SEED an integer >= 0\n");
        return 2;
    }
    st ^= (uint64_t)seed * 0x9E3779B97F4A7C15ULL;
    if (!st) st = 88172645463325252ULL;   /* xorshift must not start at 0 */
    double t = 0;
    /* the prefix draws come from a stream of their own, so the other columns do not change */
    uint64_t pst = ((uint64_t)seed + 1) * 0xD1B54A32D192ED03ULL;
    printf("arrival_s,prompt_tokens,output_tokens,cached_tokens%s\n", groups ? ",prefix_group,prefix_tokens" : "");
    for (long i = 0; i < n && !ferror(stdout); i++) {
        t += -log(uni()) / rate;
        long p = clampl(exp(7.0 + 1.0 * gauss()), 16, 16384);
        long o = clampl(exp(5.0 + 0.8 * gauss()), 1, 2048);
        long c = (long)(0.6 * uni() * (double)p);
        if (!groups) {
            printf("%.6f,%ld,%ld,%ld\n", t, p, o, c);
            continue;
        }
        uint64_t keep = st;
        st = pst;
        long g = uni() < share ? (long)(uni() * (double)groups) : -1;
        pst = st;
        st = keep;
        printf("%.6f,%ld,%ld,%ld,%ld,%ld\n", t, p, o, c, g, g < 0 ? 0 : ptok < p ? ptok : p);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "gen_trace: writing the trace: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}
