/* plot_replicas.c: `pacesim plot replicas`: simulate replicas x routers x rates, write the data
 * CSV, draw it with plots/plot.sh.  See plot_replicas.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "plot_replicas.h"
#include "runner.h"
#include "outfile.h"
#include "setup.h"
#include "sweep.h"

#define PR_DEFAULT_SCENARIO "scenarios/cluster/h200-llama8b-chat.yaml"
#define PR_MAX_SETS 256

/* the routers in scenario.c's order (router_kind_t) */
static const char *const all_routers[] = { "round_robin", "random", "least_outstanding", "least_kv",
                                           "prefix_affinity", "session" };
#define NROUTERS ((int)(sizeof all_routers / sizeof all_routers[0]))

typedef struct pr_job {
    const char *router;           /* NULL: one replica (no routing) */
    int n;                        /* replicas */
    double rate;                  /* per replica */
    run_result_t *res;
} pr_job_t;

typedef struct pr {
    const char *file;
    const char *const *sets;      /* the user's --set */
    int nsets;
    char pool[SCN_ID_MAX];        /* the pool scaled */
    long count;                   /* the scenario's workload.poisson.count */
    pr_job_t *jobs;
    long njobs;
    FILE *data;
    int rc;
} pr_t;

static void pr_run(void *ctx, long j, void *prog)
{
    pr_t *P = ctx;
    pr_job_t *J = &P->jobs[j];
    (void)prog;
    char own[4][SCN_ID_MAX + 96];
    const char *sets[PR_MAX_SETS + 4];
    int ns = 0;
    for (int i = 0; i < P->nsets; i++) sets[ns++] = P->sets[i];
    snprintf(own[0], sizeof own[0], "cluster.pools.%s.count=%d", P->pool, J->n);
    snprintf(own[1], sizeof own[1], "workload.poisson.rate_per_s=%.9g", J->rate * J->n);
    snprintf(own[2], sizeof own[2], "workload.poisson.count=%ld", P->count * J->n);
    snprintf(own[3], sizeof own[3], "cluster.router=%s", J->router ? J->router : "round_robin");
    for (int i = 0; i < (J->router ? 4 : 3); i++) sets[ns++] = own[i];
    runner_hooks_t h = { .summary = 1 };
    if (!(J->res = malloc(sizeof *J->res))) return;
    runner_run_ex(P->file, sets, ns, &h, J->res);
}

static void num(FILE *f, double v)
{
    fputc(',', f);
    if (isfinite(v)) fprintf(f, "%.6g", v);
}

static void pr_emit(void *ctx, long j)
{
    pr_t *P = ctx;
    pr_job_t *J = &P->jobs[j];
    const run_result_t *r = J->res;
    if (!r || r->rc) {
        fprintf(stderr, "pacesim plot replicas: %d replica%s, %s, %g/s per replica: ", J->n, J->n == 1 ? "" : "s",
                J->router ? J->router : "no router", J->rate);
        if (r) setup_msg(stderr, "%s", r->err);
        else fputs("out of memory\n", stderr);
        int rc = r && r->rc == 2 ? 2 : 1;
        if (rc > P->rc) P->rc = rc;
    } else {
        const serve_summary_t *v = &r->serve;
        double busy = 0, makespan = r->sum.makespan;
        for (int i = 0; i < r->npools; i++) busy += r->pools[i].busy_s;
        if (v->completed == 0 && !P->rc) {       /* a point with nothing to draw: the plot would be empty there */
            setup_msg(stderr, "pacesim plot replicas: %d replica%s, %s, %g/s per replica: no request finished (the run "
                      "stopped at %s): give higher --rates", J->n, J->n == 1 ? "" : "s", J->router ? J->router : "no router",
                      J->rate, r->sum.stopped_by_time ? "stop.max_time_s" : r->sum.stopped_by_steps ? "stop.max_steps"
                      : "its end");
            P->rc = 2;
        }
        fprintf(P->data, "%s,%d,%.9g,%.9g,%ld", J->router ? J->router : "", J->n, J->rate, J->rate * J->n, v->completed);
        num(P->data, v->duration_s);
        num(P->data, v->req_s);
        num(P->data, v->lat[SERVE_TTFT].p99);
        num(P->data, v->lat[SERVE_TTFT].median);
        num(P->data, v->lat[SERVE_TPOT].p99);
        num(P->data, r->sum.adm_tokens > 0 ? (double)r->sum.adm_hit_tokens / (double)r->sum.adm_tokens : NAN);
        num(P->data, makespan > 0 && r->nreps > 0 ? busy / (makespan * r->nreps) : NAN);
        fputc('\n', P->data);
    }
    free(J->res);
    J->res = NULL;
}

/* the highest rate a replica is given: capacity's saturation probe (every request at once) */
#define PR_MAX_RATE 1e6
/* the most runs one plot simulates (the default plot's 114 take ~30 s on two cores) */
#define PR_MAX_RUNS 10000
/* the most requests one plot simulates, workload.poisson.count x replicas summed over the runs (the
 * default plot's 85,200 take ~30 s on two cores; one run of 256 replicas x 200 requests ~1 min on
 * one core, a request dearer the more replicas there are: 4096 x 200 in one run would take hours) */
#define PR_MAX_REQUESTS 200000L

/* A list of positive numbers (sweep_values' syntax) into *out (malloc'd), each given once:
 * rates up to PR_MAX_RATE, replicas integers in [1, SCN_MAX_REPLICAS] (a cluster's own limit).  0, or -1
 * with a message. */
static int parse_list(const char *opt, const char *list, int integer, double **out, int *n)
{
    char **vals = NULL, err[SWEEP_ERR_MAX];
    if (sweep_values(list, &vals, n, err, sizeof err) < 0) {
        setup_msg(stderr, "pacesim plot replicas: %s %s: %s", opt, list, err);
        return -1;
    }
    *out = malloc((size_t)*n * sizeof **out);
    int rc = *out ? 0 : -1;
    for (int i = 0; i < *n && rc == 0; i++) {
        char *end;
        double v = strtod(vals[i], &end);
        if (end == vals[i] || *end || !(v > 0) || !isfinite(v) || (integer && (v != floor(v) || v > SCN_MAX_REPLICAS))
            || (!integer && v > PR_MAX_RATE)) {
            if (integer)
                setup_msg(stderr, "pacesim plot replicas: %s %s: %s is not an integer in [1, %d] (a cluster's replicas)",
                          opt, list, vals[i], SCN_MAX_REPLICAS);
            else
                setup_msg(stderr, "pacesim plot replicas: %s %s: %s is not a rate in (0, 1e6] requests/s per replica",
                          opt, list, vals[i]);
            rc = -1;
        }
        if (rc == 0) (*out)[i] = v;
    }
    int k, i;
    if (rc == 0 && sweep_find_dup(vals, *n, NULL, NULL, &k, &i) > 0) {
        if (!strcmp(vals[k], vals[i]))
            setup_msg(stderr, "pacesim plot replicas: %s %s: %s is given twice (each point runs once: give it once)",
                      opt, list, vals[i]);
        else
            setup_msg(stderr, "pacesim plot replicas: %s %s: %s and %s are the same %s (each point runs once: give it "
                      "once)", opt, list, vals[k], vals[i], integer ? "count" : "rate");
        rc = -1;
    }
    sweep_free_values(vals, *n);
    if (rc < 0) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

/* Run plot.sh replicas DATA -o OUT [--title T]; its exit status. */
static int draw(const char *plot_sh, const char *data, const char *out, const char *title)
{
    const char *av[8] = { plot_sh, "replicas", data, "-o", out };
    int n = 5;
    if (title) {
        av[n++] = "--title";
        av[n++] = title;
    }
    av[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        setup_msg(stderr, "pacesim plot replicas: %s", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        execv(plot_sh, (char *const *)av);
        setup_msg(stderr, "pacesim plot: %s: %s", plot_sh, strerror(errno));
        _exit(1);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return 1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

int plot_replicas_main(int argc, char **argv, const char *plot_sh)
{
    const char *file = NULL, *out = NULL, *data = NULL, *title = NULL;
    const char *rates_s = "4..14:2", *reps_s = "1,2,4,8", *routers_s = NULL;
    const char *sets[PR_MAX_SETS];
    int nsets = 0, rc = 2;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    double *rates = NULL, *reps = NULL;
    int nrates = 0, nreps = 0, nrouters = 0;
    const char *routers[NROUTERS];
    char **rnames = NULL;
    int nrnames = 0;
    unsigned given = 0;                   /* the options of one value seen (setup_opt_twice) */
    pr_t P = { 0 };
    char tmpdata[64] = "", defout[600], defscn[4096];
    if (jobs < 1) jobs = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        static const char *const valued[] = { "-o", "--out", "--rates", "--replicas", "--routers", "--set", "--data",
                                              "-j", "--jobs", "--title", NULL };
        int k = 0;
        while (valued[k] && strcmp(a, valued[k])) k++;
        if (valued[k]) {
            if (i + 1 >= argc) {
                fprintf(stderr, "pacesim plot replicas: %s needs a value\n", a);
                goto out;
            }
            static const char *const once[] = { "-o|--out", "--rates", "--replicas", "--routers", "--data",
                                                "-j|--jobs", "--title", NULL };   /* all but --set */
            if (setup_opt_twice(&given, once, a)) {   /* which one is meant? */
                fprintf(stderr, "pacesim plot replicas: %s given twice\n", a);
                goto out;
            }
            const char *v = argv[++i];
            if (!strcmp(a, "-o") || !strcmp(a, "--out")) out = v;
            else if (!strcmp(a, "--rates")) rates_s = v;
            else if (!strcmp(a, "--replicas")) reps_s = v;
            else if (!strcmp(a, "--routers")) routers_s = v;
            else if (!strcmp(a, "--data")) data = v;
            else if (!strcmp(a, "--title")) title = v;
            else if (!strcmp(a, "-j") || !strcmp(a, "--jobs")) {
                if (setup_opt_long("pacesim plot replicas", a, v, 1, &jobs) < 0) goto out;
                if (jobs > 1024) jobs = 1024;
            } else {
                if (!strchr(v, '=') || nsets >= PR_MAX_SETS) {
                    setup_msg(stderr, "pacesim plot replicas: --set %s: expected key.path=value (at most %d)", v,
                              PR_MAX_SETS);
                    goto out;
                }
                sets[nsets++] = v;
            }
        } else if (a[0] == '-' && a[1]) {
            setup_msg(stderr, "pacesim plot replicas: unknown option %s (see pacesim plot --help)", a);
            goto out;
        } else if (file) {
            setup_msg(stderr, "pacesim plot replicas: one scenario or data CSV (%s is a second)", a);
            goto out;
        } else {
            file = a;
        }
    }
    if (out && !ends_with(out, ".png") && !ends_with(out, ".svg")) {
        setup_msg(stderr, "pacesim plot replicas: -o %s: the name must end in .png or .svg", out);
        goto out;
    }
    if (file && ends_with(file, ".csv")) {         /* data written before: draw it */
        if (data) {
            fprintf(stderr, "pacesim plot replicas: --data names where simulated data go; %s is data already\n", file);
            goto out;
        }
        rc = draw(plot_sh, file, out ? out : "plots/out/replicas.png", title);
        goto out;
    }
    if (!file) {                                   /* the shipped scenario, beside plot.sh's tree */
        const char *slash = strrchr(plot_sh, '/');
        snprintf(defscn, sizeof defscn, "%.*s/../" PR_DEFAULT_SCENARIO, slash ? (int)(slash - plot_sh) : 1,
                 slash ? plot_sh : ".");
        file = access(defscn, R_OK) == 0 ? defscn : PR_DEFAULT_SCENARIO;
    }
    if (parse_list("--rates", rates_s, 0, &rates, &nrates) < 0 || parse_list("--replicas", reps_s, 1, &reps, &nreps) < 0)
        goto out;
    {
        char cerr[SWEEP_ERR_MAX];
        if (sweep_set_clash(sets, nsets, NULL, "--sweep", cerr, sizeof cerr)) {
            setup_msg(stderr, "pacesim plot replicas: %s", cerr);
            goto out;
        }
    }
    /* the scenario as given: a Poisson workload, the pool to scale */
    scenario_t s;
    char err[SCN_ERR_MAX];
    if (scn_load(file, sets, nsets, &s, err) < 0) {
        setup_msg(stderr, "%s", err);
        goto out;
    }
    int poisson = s.poisson.enabled, npools = s.cluster.enabled ? s.cluster.n_pools : 1;
    snprintf(P.pool, sizeof P.pool, "%s", s.cluster.enabled ? s.cluster.pools[0].name : "main");
    char pool2[SCN_ID_MAX];
    snprintf(pool2, sizeof pool2, "%s", npools > 1 ? s.cluster.pools[1].name : "");
    P.count = s.poisson.count;
    scn_free(&s);
    if (npools > 1) {     /* the x axis, the rate per replica, would count the first pool's replicas alone */
        setup_msg(stderr, "%s: plot replicas scales one pool's replicas, this cluster has %d (%s, %s%s): a "
                  "disaggregated or mixed cluster's pools are scaled by pacesim run --sweep cluster.pools.NAME.count=...",
                  file, npools, P.pool, pool2, npools > 2 ? ", ..." : "");
        goto out;
    }
    if (!poisson) {
        setup_msg(stderr, "%s: plot replicas: the scenario has no workload.poisson (its rate is what is swept)", file);
        goto out;
    }
    /* the routers: those named, else every one the scenario accepts */
    if (routers_s) {
        char serr[SWEEP_ERR_MAX];
        if (sweep_values(routers_s, &rnames, &nrnames, serr, sizeof serr) < 0 || nrnames > NROUTERS) {
            setup_msg(stderr, "pacesim plot replicas: --routers %s: %s", routers_s,
                      nrnames > NROUTERS ? "more routers than there are" : serr);
            goto out;
        }
        int d1, d2;
        if (sweep_find_dup(rnames, nrnames, NULL, NULL, &d1, &d2) > 0) {
            setup_msg(stderr, "pacesim plot replicas: --routers %s: %s is given twice (each router runs once: give it"
                      " once)", routers_s, rnames[d2]);
            goto out;
        }
    }
    for (int i = 0; i < (routers_s ? nrnames : NROUTERS); i++) {
        const char *name = routers_s ? rnames[i] : all_routers[i];
        char set[SCN_ID_MAX + 64], set2[SCN_ID_MAX + 64];
        const char *all[PR_MAX_SETS + 2];
        int n = 0;
        for (int k = 0; k < nsets; k++) all[n++] = sets[k];
        snprintf(set, sizeof set, "cluster.router=%s", name);
        snprintf(set2, sizeof set2, "cluster.pools.%s.count=2", P.pool);
        all[n++] = set;
        all[n++] = set2;
        if (scn_load(file, all, n, &s, err) < 0) {
            if (!routers_s) continue;              /* not for this scenario (session without conversations...) */
            if (!strncmp(err, "--set cluster.router:", 21))   /* the router is the user's --routers */
                setup_msg(stderr, "pacesim plot replicas: --routers %s:%s", routers_s, err + 21);
            else setup_msg(stderr, "%s", err);
            goto out;
        }
        scn_free(&s);
        routers[nrouters++] = name;
    }
    /* the runs: one replica once, then per router and number of replicas, every rate */
    long nruns = 0;
    for (int k = 0; k < nreps; k++) nruns += (long)(reps[k] == 1 ? 1 : nrouters) * nrates;
    if (nruns > PR_MAX_RUNS) {
        setup_msg(stderr, "pacesim plot replicas: %ld runs (--replicas x routers x --rates), more than %d in one plot: give"
                  " fewer", nruns, PR_MAX_RUNS);
        goto out;
    }
    /* and the requests they simulate: count x replicas a run */
    double nreq = 0;
    for (int k = 0; k < nreps; k++) nreq += (double)(reps[k] == 1 ? 1 : nrouters) * nrates * (double)P.count * reps[k];
    if (nreq > PR_MAX_REQUESTS) {
        setup_msg(stderr, "pacesim plot replicas: %.0f requests to simulate (workload.poisson.count %ld x replicas, "
                  "summed over %ld runs), more than %ld in one plot: give fewer or smaller --replicas, fewer --rates or "
                  "--routers, or a lower workload.poisson.count", nreq, P.count, nruns, PR_MAX_REQUESTS);
        goto out;
    }
    P.jobs = calloc((size_t)(nreps * (nrouters + 1)) * (size_t)nrates, sizeof *P.jobs);
    if (!P.jobs) {
        fprintf(stderr, "pacesim: out of memory\n");
        rc = 1;
        goto out;
    }
    for (int k = 0; k < nreps; k++)
        for (int i = 0; i < (reps[k] == 1 ? 1 : nrouters); i++)
            for (int r = 0; r < nrates; r++)
                P.jobs[P.njobs++] = (pr_job_t){ reps[k] == 1 ? NULL : routers[i], (int)reps[k], rates[r], NULL };
    P.file = file;
    P.sets = sets;
    P.nsets = nsets;
    if (!out) {
        const char *b = strrchr(file, '/');
        b = b ? b + 1 : file;
        size_t bl = strlen(b);
        if (ends_with(b, ".yaml")) bl -= 5;
        snprintf(defout, sizeof defout, "plots/out/replicas-%.*s.png", (int)(bl < 200 ? bl : 200), b);
        out = defout;
    }
    if (data && (outfile_same(data, file) || outfile_same(data, out) || !strcmp(data, "-"))) {
        setup_msg(stderr, "pacesim plot replicas: --data %s: %s", data,
                  !strcmp(data, "-") ? "a file, not stdout (the plot reads it back)"
                  : outfile_same(data, file) ? "that is the scenario (it would be overwritten)"
                                             : "that is the plot's file too (-o)");
        goto out;
    }
    if (out == defout) {
        mkdir("plots", 0777);
        mkdir("plots/out", 0777);
    }
    if (!data) {
        snprintf(tmpdata, sizeof tmpdata, "/tmp/pacesim-replicas-XXXXXX");
        int fd = mkstemp(tmpdata);
        if (fd < 0 || !(P.data = fdopen(fd, "w"))) {
            setup_msg(stderr, "pacesim plot replicas: a temporary file: %s", strerror(errno));
            tmpdata[0] = 0;
            rc = 1;
            goto out;
        }
    } else if (!(P.data = outfile_open(data))) {
        goto out;
    }
    fputs("router,replicas,rate_per_replica,rate_per_s,completed,duration_s,request_throughput,p99_ttft_s,"
          "median_ttft_s,p99_tpot_s,prefix_hit,busy\n", P.data);
    sweep_pool_t pc = { .njobs = P.njobs, .threads = (int)(jobs < P.njobs ? jobs : P.njobs), .progress = isatty(2),
                        .run = pr_run, .emit = pr_emit, .ctx = &P };
    if (sweep_pool(&pc) < 0) {
        fprintf(stderr, "pacesim: out of memory\n");
        rc = 1;
        goto out;
    }
    int werr = fflush(P.data) != 0 || ferror(P.data);
    werr |= fclose(P.data) != 0;
    P.data = NULL;
    if (werr) {
        setup_msg(stderr, "pacesim plot replicas: writing %s: %s", data ? data : tmpdata, strerror(errno));
        rc = 1;
        goto out;
    }
    if (P.rc) {
        rc = P.rc;
        goto out;
    }
    if (data) printf("data: %s (%ld runs)\n", data, P.njobs);
    rc = draw(plot_sh, data ? data : tmpdata, out, title);
out:
    if (P.data) fclose(P.data);
    if (tmpdata[0]) unlink(tmpdata);
    for (long j = 0; P.jobs && j < P.njobs; j++) free(P.jobs[j].res);
    free(P.jobs);
    free(rates);
    free(reps);
    if (rnames) sweep_free_values(rnames, nrnames);
    return rc;
}
