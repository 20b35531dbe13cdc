#!/usr/bin/env python3
"""Compare the search speed of two keima binaries, run in turn.

    scripts/speedup.py NEW OLD [--runs 20] [--cpu 1] -- bench depth --eval runs/x/eval --nodes 100000

Runs `NEW ARGS...` and `OLD ARGS...` alternately (new, old, new, old, ...) after one
warm-up run of each, reads the nodes/s figure each run prints (`keima bench` prints
"nodes/second N", `keima bench depth` "... N nodes/s"), and prints the ratio new/old of
each pair, then their mean with a 95% interval and their median. Pairing keeps the ratio
meaningful when the machine's speed drifts; a wide interval says the machine was noisy
and more runs (or a quieter machine) are needed. The figure is the program's own
(table loading is not in it), not the process's wall time.

Only the standard library: runs wherever Python 3 does.
"""

import argparse
import math
import os
import re
import statistics
import subprocess
import sys

NODES_PER_SECOND = [
    re.compile(r"nodes/second\s+(\d+)"),  # keima bench
    re.compile(r"(\d+) nodes/s\b"),  # keima bench depth
]


def nodes_per_second(binary, args):
    out = subprocess.run([binary, *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{binary} {' '.join(args)} exited with {out.returncode}:\n{out.stderr.strip()}")
    text = out.stdout + out.stderr
    for pattern in NODES_PER_SECOND:
        found = pattern.findall(text)
        if found:
            return int(found[-1])
    sys.exit(f"no nodes/s figure in the output of {binary} {' '.join(args)}:\n{text.strip()[-500:]}")


def t_quantile_975(dof):
    """Two-sided 95% quantile of Student's t (table for small samples, normal beyond)."""
    table = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
             10: 2.23, 12: 2.18, 15: 2.13, 20: 2.09, 25: 2.06, 30: 2.04, 40: 2.02, 60: 2.00}
    for d in sorted(table):
        if dof <= d:
            return table[d]
    return 1.96


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit("usage: speedup.py NEW OLD [--runs N] [--cpu C] -- KEIMA-ARGS...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("new", help="the binary under test")
    parser.add_argument("old", help="the binary to compare with")
    parser.add_argument("--runs", type=int, default=20, help="pairs counted (after one warm-up pair)")
    parser.add_argument("--cpu", type=int, help="run both on this processor only (Linux)")
    opts = parser.parse_args(argv[:split])
    args = argv[split + 1:]
    if opts.runs < 2:
        sys.exit("--runs must be at least 2")
    if opts.cpu is not None:
        os.sched_setaffinity(0, {opts.cpu})
    nodes_per_second(opts.new, args)
    nodes_per_second(opts.old, args)
    ratios, news, olds = [], [], []
    for i in range(opts.runs):
        new = nodes_per_second(opts.new, args)
        old = nodes_per_second(opts.old, args)
        news.append(new)
        olds.append(old)
        ratios.append(new / old)
        print(f"pair {i + 1:3}: new {new:9} old {old:9} nodes/s  new/old {new / old:.3f}", flush=True)
    mean = statistics.fmean(ratios)
    half = t_quantile_975(len(ratios) - 1) * statistics.stdev(ratios) / math.sqrt(len(ratios))
    try:
        load = " load average {:.2f} {:.2f} {:.2f};".format(*os.getloadavg())
    except OSError:
        load = ""
    print(
        f"new/old nodes/s over {len(ratios)} pairs: mean {mean:.3f} [{mean - half:.3f}, {mean + half:.3f}] (95%),"
        f" median {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f});"
        f" mean nodes/s new {statistics.fmean(news):.0f}, old {statistics.fmean(olds):.0f};{load}"
    )


if __name__ == "__main__":
    main()
