#!/bin/sh
# Build jobfs and run its benchmarks beside their baselines: the mount
# (tests/bench/bench.py, which takes this script's arguments), then the
# scheduler in simulated time beside its reference (tests/bench/bench_sched.c),
# then a preemption decision and a forecast query (tests/bench/bench_spot.c),
# then, as root, the containers' starts and pulls beside crun, podman and
# skopeo + umoci (tests/bench/bench_images.py; its own registries on
# 15300-15320).
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh bench
scripts/build.sh build
python3 tests/bench/bench.py build "$@"
echo
build/tests/bench/bench_sched
echo
build/tests/bench/bench_spot
if [ "$(id -u)" = 0 ]; then
	echo
	python3 tests/bench/bench_images.py build
fi
