#!/usr/bin/env python3
"""ncu_summary.py -- condense Nsight Compute's per-SASS-line export of one attention kernel launch.

  ncu_summary.py SRC.csv [TILES]

SRC.csv is `ncu -i R.ncu-rep --page source --csv --print-source sass` (kernels/device_run.sh step
ncu writes it). Prints the warp-stall reasons, the shared-memory wavefronts and executed
instructions by opcode per CTA-tile (TILES = CTAs x KV tiles each; the default is q=784/104K on
the fast path: 300 CTAs x 812 tiles of 128 keys), the stall samples per section between two
barriers, and the 12 instructions with the most samples. Offline analysis only (not built, not
in CI); Python 3 standard library.
"""
import csv
import sys
from collections import defaultdict


def main():
    fn = sys.argv[1]
    tiles = float(sys.argv[2]) if len(sys.argv) > 2 else 300 * 812
    rows = list(csv.reader(open(fn)))
    hdr, data = rows[1], rows[2:]
    ix = {h: i for i, h in enumerate(hdr)}

    def f(r, k):
        try:
            return float(r[ix[k]].replace(",", ""))
        except (KeyError, ValueError):
            return 0.0

    def opcode(r):
        t = r[ix["Source"]].split()
        if not t:
            return ""
        return t[1] if t[0].startswith("@") else t[0]

    samples = "Warp Stall Sampling (All Samples)"
    stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    tot = sum(f(r, samples) for r in data) or 1.0
    print("stall reasons (% of samples):")
    agg = {s: sum(f(r, s) for r in data) for s in stalls}
    for s, v in sorted(agg.items(), key=lambda x: -x[1])[:9]:
        print(f"  {s[6:]:16s} {100 * v / tot:5.1f}%")
    wf, ins = defaultdict(float), defaultdict(float)
    for r in data:
        wf[opcode(r)] += f(r, "L1 Wavefronts Shared")
        ins[opcode(r)] += f(r, "Instructions Executed")
    print(f"shared wavefronts per CTA-tile: {sum(wf.values()) / tiles:.0f}; instructions: {sum(ins.values()) / tiles:.0f}")
    for op in sorted(wf, key=lambda o: -wf[o]):
        if wf[op] / tiles >= 1:
            print(f"  {op:18s} {wf[op] / tiles:6.0f} wavefronts {ins[op] / tiles:6.0f} instructions")
    print("sections between barriers (% of samples; top reasons):")
    sec, start = defaultdict(float), None
    for r in data + [None]:
        if r is not None:
            start = start or r[ix["Address"]][-5:]
            for s in stalls:
                sec[s] += f(r, s)
        if r is None or opcode(r).startswith("BAR"):
            t = sum(sec.values())
            if t / tot >= 0.005:
                top = sorted(sec.items(), key=lambda x: -x[1])[:3]
                print(f"  from {start}: {100 * t / tot:5.1f}%  " + " ".join(f"{k[6:]} {100 * v / tot:.1f}" for k, v in top))
            sec, start = defaultdict(float), None
    print("instructions with the most samples:")
    for r in sorted(data, key=lambda r: -f(r, samples))[:12]:
        top = max(stalls, key=lambda s: f(r, s))
        print(f"  {r[ix['Address']][-5:]} {r[ix['Source']].strip()[:52]:52s} {100 * f(r, samples) / tot:5.1f}% ({top[6:]})")


if __name__ == "__main__":
    main()
