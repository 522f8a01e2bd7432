#!/bin/sh
# Build jobfs and run its benchmarks beside their baselines: the mount
# (tests/bench/bench.py, which takes this script's arguments), then the
# scheduler in simulated time beside its reference (tests/bench/bench_sched.c),
# then a preemption decision and a forecast query (tests/bench/bench_spot.c).
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh build
python3 tests/bench/bench.py build "$@"
echo
build/tests/bench/bench_sched
echo
build/tests/bench/bench_spot
