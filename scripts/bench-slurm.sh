#!/bin/sh
# The Slurm benchmark (tests/bench/bench_slurm.py): start the test cluster
# (scripts/slurm-cluster.sh; installs Slurm from Debian's packages when
# missing, so run as root), build jobfs, run 1,000 trivial tasks at
# parallelism 10 straight through sbatch, through jobfs --backend slurm and
# through jobfs --backend local, print them side by side, stop the cluster.
# Arguments go to bench_slurm.py (--tasks N, --parallelism P).
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh build
dir=$(mktemp -d /tmp/jobfs-bench-slurm.XXXXXX)
trap 'scripts/slurm-cluster.sh stop "$dir" >/dev/null 2>&1 || true' EXIT
scripts/slurm-cluster.sh start "$dir" > "$dir/env"
SLURM_CONF=$(sed -n 's/^SLURM_CONF=//p' "$dir/env")
JOBFS_SLURM_URL=$(sed -n 's/^JOBFS_SLURM_URL=//p' "$dir/env")
export SLURM_CONF JOBFS_SLURM_URL
python3 tests/bench/bench_slurm.py build "$@"
