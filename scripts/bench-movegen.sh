#!/usr/bin/env bash
# Prints the move-generation figures recorded in BENCHMARKS.md (perft 5/6 from the start,
# perft 4 from "matsuri", one thread, bulk-counted leaves).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p keima
./target/release/keima bench movegen "$@"
