#!/bin/sh
# Build jobfs and run its benchmarks beside their baselines: the mount
# (tests/bench/bench.py, which takes this script's arguments), then the
# scheduler in simulated time beside its reference (tests/bench/bench_sched.c),
# then a preemption decision and a forecast query (tests/bench/bench_spot.c),
# then the pending reasons and one ETA simulation beside a planning pass
# (tests/bench/bench_eta.c), then the plots' renderers beside
# /cluster/forecast's text (tests/bench/bench_plots.c), then what
# `jobfsctl top` costs the daemon while it watches 1,000 running tasks
# (tests/bench/bench_top.py),
# then, as root, the containers' starts and pulls beside crun, podman and
# skopeo + umoci (tests/bench/bench_images.py; its own registries on
# 15300-15320), and storage: object syncs beside rclone
# (tests/bench/bench_objsync.py; its own radosgw on 17680) and the start of
# a node with a warm object source beside the listing alone
# (tests/bench/bench_storage.py; a registry on 15400, radosgw on 17880).
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh bench
scripts/build.sh build
python3 tests/bench/bench.py build "$@"
echo
build/tests/bench/bench_sched
echo
build/tests/bench/bench_spot
echo
build/tests/bench/bench_eta
echo
build/tests/bench/bench_plots
echo
python3 tests/bench/bench_top.py build
if [ "$(id -u)" = 0 ]; then
	echo
	python3 tests/bench/bench_images.py build
	echo
	python3 tests/bench/bench_objsync.py build
	echo
	python3 tests/bench/bench_storage.py build
fi
