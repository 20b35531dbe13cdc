#!/usr/bin/env python3
"""Depth and nodes/s of any USI engine at a fixed time per move, or nodes/s at a fixed depth.

Usage: scripts/usi-depth.py --engine "CMD ..." --positions FILE [--movetime 1000 | --depth D]
       [--option Name=Value ...]

FILE has one USI position a line (`startpos moves ...` or `sfen ... moves ...`); the
middle-game suite of `keima bench depth` is written by `keima bench depth --print-usi >
FILE`. Each is searched once after `usinewgame` with `go movetime MS` (or `go depth D`). The
last `info` line with a depth before `bestmove` is taken. Prints the mean depth, mean nodes/s,
all positions' nodes over all their time (the `nodes` and `time` of those lines) and the number
of positions, so that Keima and another engine can be compared on the same positions
(`keima bench depth` does the same inside Keima).
"""
import argparse
import shlex
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True)
    ap.add_argument("--positions", required=True)
    ap.add_argument("--movetime", type=int, default=1000)
    ap.add_argument("--depth", type=int, help="search each position to this depth instead of for a time")
    ap.add_argument("--option", action="append", default=[])
    a = ap.parse_args()
    p = subprocess.Popen(shlex.split(a.engine), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def send(s):
        p.stdin.write(s + "\n")
        p.stdin.flush()

    def wait(prefix):
        lines = []
        for line in p.stdout:
            lines.append(line.strip())
            if line.startswith(prefix):
                return lines
        sys.exit(f"engine ended before {prefix!r}")

    send("usi")
    wait("usiok")
    for o in a.option:
        name, _, value = o.partition("=")
        send(f"setoption name {name} value {value}")
    send("isready")
    wait("readyok")
    depths, nps, nodes, times = [], [], 0, 0
    with open(a.positions) as f:
        positions = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    for pos in positions:
        send("usinewgame")
        send("isready")
        wait("readyok")
        send("position " + pos)
        send(f"go depth {a.depth}" if a.depth else f"go movetime {a.movetime}")
        last = None
        for line in wait("bestmove"):
            w = line.split()
            if w[:1] == ["info"] and "depth" in w and "nodes" in w:
                last = w
        if last is None:
            sys.exit(f"no info line for {pos}")
        depths.append(int(last[last.index("depth") + 1]))
        if "nps" in last:
            nps.append(int(last[last.index("nps") + 1]))
        if "time" in last:
            nodes += int(last[last.index("nodes") + 1])
            times += int(last[last.index("time") + 1])
    send("quit")
    limit = f"depth {a.depth}" if a.depth else f"{a.movetime} ms"
    total = f", {nodes} nodes in {times} ms ({nodes * 1000 // max(times, 1)} nodes/s)" if times else ""
    print(f"{len(depths)} positions, {limit}: mean depth {sum(depths)/len(depths):.1f} "
          f"(min {min(depths)}, max {max(depths)}), mean nps {sum(nps)/max(len(nps),1):.0f}{total}")


if __name__ == "__main__":
    main()
