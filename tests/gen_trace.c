/* gen_trace: write a synthetic request trace for pacesim's `workload: trace:` key, so the
 * scale bench never needs a big committed file.
 *
 *   gen_trace COUNT RATE_PER_S [SEED] > trace.csv
 *
 * Rows: arrival_s,prompt_tokens,output_tokens,cached_tokens.  Poisson arrivals at RATE;
 * prompts ~ lognormal(mu 7, sigma 1) clamped to [16, 16384]; outputs ~ lognormal(5, 0.8)
 * clamped to [1, 2048]; cached ~ uniform(0, 0.6) of the prompt -- the same shapes as
 * scenarios/bench-poisson-100k.yaml.  xorshift64* and Box-Muller: the same file for the
 * same arguments on every machine. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gen_trace COUNT RATE_PER_S [SEED] > trace.csv\n");
        return 2;
    }
    long n = atol(argv[1]);
    double rate = atof(argv[2]);
    if (argc > 3) st ^= (uint64_t)atoll(argv[3]) * 0x9E3779B97F4A7C15ULL;
    if (n < 1 || !(rate > 0)) {
        fprintf(stderr, "gen_trace: COUNT >= 1 and RATE > 0\n");
        return 2;
    }
    double t = 0;
    printf("arrival_s,prompt_tokens,output_tokens,cached_tokens\n");
    for (long i = 0; i < n; i++) {
        t += -log(uni()) / rate;
        long p = clampl(exp(7.0 + 1.0 * gauss()), 16, 16384);
        long o = clampl(exp(5.0 + 0.8 * gauss()), 1, 2048);
        long c = (long)(0.6 * uni() * (double)p);
        printf("%.6f,%ld,%ld,%ld\n", t, p, o, c);
    }
    return ferror(stdout) ? 1 : 0;
}
