#!/bin/sh
# trace_check: --trace writes valid Chrome Trace Event JSON with one engine slice per
# step, the request phases of the reference experiment, chunks nested in their prefill,
# and strings escaped.  Run from the repository root; needs python3 (skips without it).
set -u
PACESIM=${PACESIM:-./bin/pacesim}
S=scenarios/v100-fp16-nomtp-b16k-baseline.yaml
tmp=$(mktemp -d /tmp/trace_check.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
if ! command -v python3 >/dev/null 2>&1; then echo "  SKIP python3 not found"; exit 0; fi
fail=0
for pace in 0 4; do
  $PACESIM run $S --set env.VLLM_1CAT_PREFILL_PACE_STEPS=$pace --set 'name=a "quoted"\name' \
    --trace "$tmp/t$pace.json" --csv "$tmp/r$pace.csv" --quiet || { echo "  FAIL run exit $?"; fail=1; continue; }
  python3 -m json.tool "$tmp/t$pace.json" > /dev/null || { echo "  FAIL pace $pace: invalid JSON"; fail=1; continue; }
  python3 - "$tmp/t$pace.json" "$tmp/r$pace.csv" "$pace" <<'PY' || fail=1
import csv, json, math, sys
tr = json.load(open(sys.argv[1]))
row = list(csv.DictReader(open(sys.argv[2])))[0]
pace = sys.argv[3]
ev = tr["traceEvents"]
bad = []
def check(cond, what):
    print(("  ok   " if cond else "  FAIL ") + "pace %s: %s" % (pace, what))
    if not cond: bad.append(what)
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
proc = [e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
check(proc == ['a "quoted"\\name'], "process name escaped and read back")
steps = [e for e in ev if e["ph"] == "X" and e["tid"] == 0]
check(len(steps) == int(row["steps"]), "%d engine slices == steps %s" % (len(steps), row["steps"]))
check(sum(e["name"] == "mixed" for e in steps) == int(row["mixed_steps"]), "mixed slices == mixed steps")
check(all(e["args"]["rows"] == len(e["args"]["detail"]) for e in steps), "rows == len(detail) in every step")
check(all(abs(e["dur"] - 1e6 * e["args"]["cost"]["total_s"]) < 1e-2 for e in steps), "step dur == cost total")
check(sum(e["ph"] == "C" for e in ev) == len(steps), "one counter per step")
b = [t for t, n in names.items() if n == "B"]
check(len(b) == 1, "one track named B")
tid = b[0] if b else -1
sl = lambda n: [e for e in ev if e["ph"] == "X" and e["tid"] == tid and e["name"] == n]
chunks, pre = sl("chunk"), sl("prefill")
check(len(sl("queued")) == 1 and len(pre) == 1 and len(sl("decode")) == 1, "B: queued, prefill, decode once each")
check(len(chunks) == math.ceil(16384 / 784), "B: %d chunks == ceil(16384/784)" % len(chunks))
check(sum(c["args"]["q"] for c in chunks) == 16384, "B: chunk q sum to the prompt")
if pre:
    p = pre[0]
    check(all(p["ts"] <= c["ts"] and c["ts"] + c["dur"] <= p["ts"] + p["dur"] + 1e-6 for c in chunks), "chunks nest in prefill")  # 1e-6 us: float sums of ns-exact decimals
    check(abs(p["dur"] / 1e6 - float(row["b_prefill_s"])) < 1e-3, "prefill slice == b_prefill_s")
sys.exit(1 if bad else 0)
PY
done
# a cluster of two replicas: valid JSON, a process per replica, each with its steps (as many as
# the replicas CSV counts) and the tracks of the requests it ran (the requests CSV's replica)
$PACESIM run scenarios/lib/h200-llama8b-poisson.yaml --set workload.poisson.count=80 --set cluster.pools.main.count=2 \
  --set engine.prefix_cache_model=pool --no-summary --trace "$tmp/cl.json" --replicas "$tmp/cl-rep.csv" \
  --requests "$tmp/cl-req.csv" --quiet || { echo "  FAIL cluster run exit $?"; fail=1; }
python3 -m json.tool "$tmp/cl.json" > /dev/null || { echo "  FAIL cluster: invalid JSON"; fail=1; }
python3 - "$tmp/cl.json" "$tmp/cl-rep.csv" "$tmp/cl-req.csv" <<'PY' || fail=1
import csv, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
reps = list(csv.DictReader(open(sys.argv[2])))
reqs = list(csv.DictReader(open(sys.argv[3])))
bad = []
def check(cond, what):
    print(("  ok   " if cond else "  FAIL ") + "cluster: " + what)
    if not cond: bad.append(what)
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
check(sorted(procs) == [1, 2] and procs[2].endswith("replica 1 (pool main)"), "two processes, one per replica: %s" % procs)
for k, r in enumerate(reps):
    steps = [e for e in ev if e["ph"] == "X" and e["pid"] == 1 + k and e["tid"] == 0]
    check(len(steps) == int(r["steps"]) > 0, "replica %d: %d step slices == steps %s" % (k, len(steps), r["steps"]))
    check(sum(e["ph"] == "C" and e["pid"] == 1 + k and e["name"] == "engine" for e in ev) == len(steps),
          "replica %d: one counter per step" % k)
    check(sum(e["ph"] == "C" and e["pid"] == 1 + k and e["name"] == "prefix cache" for e in ev) == len(steps),
          "replica %d: one block pool counter per step" % k)
named = {(e["pid"], e["args"]["name"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name" and e["tid"] > 0}
check(len(named) == len(reqs) and all((1 + int(q["replica"]), q["id"]) in named for q in reqs),
      "every request's track in its replica's process")
tids = {e["pid"]: set() for e in ev}
for e in ev:
    if e["ph"] == "X" and e["tid"] > 0: tids[e["pid"]].add(e["tid"])
check(all(tids.get(p) for p in (1, 2)), "request slices in both processes")
sys.exit(1 if bad else 0)
PY
# disaggregated: a request's track in its prefill replica's process (its prefill) and in its decode
# replica's (queued for the hand-off, then its decode)
$PACESIM run scenarios/cluster/h200-llama8b-disagg.yaml --set workload.poisson.count=60 --no-summary \
  --trace "$tmp/dg.json" --requests "$tmp/dg-req.csv" --quiet || { echo "  FAIL disaggregated run exit $?"; fail=1; }
python3 - "$tmp/dg.json" "$tmp/dg-req.csv" <<'PY' || fail=1
import csv, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
reqs = list(csv.DictReader(open(sys.argv[2])))
tid = {q["id"]: None for q in reqs}
for e in ev:
    if e["ph"] == "M" and e["name"] == "thread_name" and e["args"]["name"] in tid: tid[e["args"]["name"]] = e["tid"]
ok = True
for q in reqs:
    t, p, d = tid[q["id"]], 1 + int(q["prefill_replica"]), 1 + int(q["replica"])
    sl = lambda pid, name: [e for e in ev if e["ph"] == "X" and e["pid"] == pid and e["tid"] == t and e["name"] == name]
    hand = [e for e in sl(d, "queued") if e["args"]["reason"] == "handoff"]
    if not (sl(p, "prefill") and len(hand) == 1 and sl(d, "decode") and not sl(p, "decode")):
        ok = False
        print("  FAIL disaggregated: request %s's tracks (prefill in %d, handoff and decode in %d)" % (q["id"], p, d))
        break
if ok: print("  ok   disaggregated: every request prefills in its prefill replica's process, queues (handoff) and decodes in its decode replica's")
sys.exit(0 if ok else 1)
PY
# a trace of a failing run is still valid JSON
$PACESIM run $S --set stop.max_time_s=5 --trace "$tmp/short.json" --quiet >/dev/null 2>&1
python3 -m json.tool "$tmp/short.json" > /dev/null && echo "  ok   trace of a run stopped early is valid JSON" \
  || { echo "  FAIL trace of a stopped run"; fail=1; }
# a FIFO nobody reads is refused at once (exit 2), not waited on; a full disk is exit 1
mkfifo "$tmp/fifo"
timeout 20 $PACESIM run $S --trace "$tmp/fifo" --quiet >/dev/null 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && echo "  ok   --trace to a FIFO without a reader: exit 2, one line" \
  || { echo "  FAIL --trace to a FIFO without a reader: exit $rc"; fail=1; }
if [ -w /dev/full ]; then
  $PACESIM run $S --trace /dev/full --quiet >/dev/null 2>&1; rc=$?
  [ $rc = 1 ] && echo "  ok   --trace /dev/full: exit 1" || { echo "  FAIL --trace /dev/full: exit $rc"; fail=1; }
fi
exit $fail
