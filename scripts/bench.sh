#!/bin/sh
# Build jobfs and run its benchmarks beside their baselines.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh build
exec python3 tests/bench/bench.py build "$@"
