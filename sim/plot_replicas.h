/* plot_replicas: `pacesim plot replicas [SCENARIO.yaml | DATA.csv] [options]`: p99 TTFT against
 * the request rate for 1, 2, 4, 8 replicas behind each router, by simulating them.
 *
 * For every number of replicas N (--replicas, default 1,2,4,8), router (--routers, default every
 * router the scenario accepts; one replica is run once, it routes nothing) and rate per replica r
 * (--rates, default 4..14:2), the scenario runs with its first pool (`main` without `cluster:`)
 * at N replicas, workload.poisson.rate_per_s = r x N and workload.poisson.count = its count x N
 * (so every replica sees about the load and the requests of one under r); the runs go on -j
 * threads and are reported in a fixed order, so the data are the same for every -j.  The data
 * CSV (--data FILE, else a temporary file) has one row per run:
 *   router,replicas,rate_per_replica,rate_per_s,completed,duration_s,request_throughput,
 *   p99_ttft_s,median_ttft_s,p99_tpot_s,prefix_hit,busy
 * (the serving summary's figures over the finished requests; prefix_hit the share of admitted
 * prompt tokens from the prefix cache; busy the replicas' mean share of time in steps), then
 * plots/plot.sh draws it (gnuplot, plots/replicas.gp) into -o OUT.png|OUT.svg.  Given a DATA.csv
 * instead of a scenario, it only draws.  The default scenario is scenarios/cluster/
 * h200-llama8b-chat.yaml.  Exit status: plot.sh's (1 without gnuplot: the data are written
 * first), 2 on bad input, 1 when a run failed. */
#ifndef PACESIM_PLOT_REPLICAS_H
#define PACESIM_PLOT_REPLICAS_H

/* argv: the arguments after `replicas`; plot_sh: the path of plots/plot.sh. */
int plot_replicas_main(int argc, char **argv, const char *plot_sh);

#endif
