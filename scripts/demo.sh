#!/bin/sh
# Build jobfs, mount it with the built-in cluster and run the product's
# demo in it: three independent tasks (count: 3) on a 4090, RUN_SECONDS=60,
# EXIT_CODE=0, in the demonstration image.  DEMO_SECONDS shortens the run;
# JOBFS_MNT and JOBFS_STATE choose where (defaults /tmp/jobfs-demo and a
# fresh temporary state).
#
# The image: a registry on loopback (Debian's docker-registry, started by
# scripts/registry.sh on JOBFS_DEMO_REGISTRY_PORT, default 15100) holding
# the demonstration image built from Debian's busybox-static
# (tests/fixtures/mkimage.sh); the tasks pull it (their events say so) and
# run under crun.  It stays up with the mount (the script says how to stop
# it).  As an ordinary user jobfs runs the commands on the host instead
# (--runtime auto).
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh build
mnt=${JOBFS_MNT:-/tmp/jobfs-demo}
state=${JOBFS_STATE:-$(mktemp -d /tmp/jobfs-demo-state.XXXXXX)}
secs=${DEMO_SECONDS:-60}
mkdir -p "$mnt"
if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u "$mnt" || fusermount3 -u -z "$mnt"; fi
# the demonstration image, in a registry on loopback
regport=${JOBFS_DEMO_REGISTRY_PORT:-15100}
regdir=$state/registry
mkdir -p "$regdir"
echo "\$ scripts/registry.sh start $regdir   # the demonstration image, on 127.0.0.1:$regport"
JOBFS_REGISTRY_PORT=$regport scripts/registry.sh start "$regdir" > "$regdir/env"
reg=127.0.0.1:$regport
image=$reg/jobfs/busybox:latest
build/tools/jobfs --state "$state" --insecure-registry "$reg" "$mnt"
echo "\$ ls $mnt"; ls "$mnt"
cd "$mnt"
say() { printf '\n$ %s\n' "$*"; sh -c "$*"; }
say "cat cluster/gpus"
say "mkdir tasks/best-practice-batch-demo"
cat > tasks/best-practice-batch-demo/spec.yaml <<YAML
name: best-practice-batch-demo
billing: on-demand
gpu: "4090"
count: 3
image: $image
command: ["/bin/sh", "-c"]
args: ["echo \"task \$JOB_TASK_INDEX on GPU \$CUDA_VISIBLE_DEVICES\"; sleep \$RUN_SECONDS; echo finished; exit \$EXIT_CODE"]
env:
  RUN_SECONDS: "$secs"
  EXIT_CODE: "0"
YAML
say "cat tasks/best-practice-batch-demo/spec.yaml"
say "ls tasks/best-practice-batch-demo"
say "cat tasks/best-practice-batch-demo/status"
printf '\n(waiting %ss for the tasks to run)\n' "$secs"
i=0
while ! grep -q '^state: Succeeded' tasks/best-practice-batch-demo/status; do
	i=$((i + 1))
	[ $i -gt $((secs * 2 + 60)) ] && { echo "demo: timed out" >&2; exit 1; }
	sleep 1
done
say "cat tasks/best-practice-batch-demo/events"
say "cat tasks/best-practice-batch-demo/1-best-practice-batch-demo/status"
say "cat tasks/best-practice-batch-demo/1-best-practice-batch-demo/nodes/0/events"
say "grep -E '^(image|image_digest|runtime|reason):' tasks/best-practice-batch-demo/1-best-practice-batch-demo/nodes/0/status"
say "cat tasks/best-practice-batch-demo/1-best-practice-batch-demo/nodes/0/logs"
say "for t in 1 2 3; do cat tasks/best-practice-batch-demo/\$t-best-practice-batch-demo/cost; done"
say "cat tasks/best-practice-batch-demo/cost"
say "cat billing/ledger.csv"
say "cat billing/summary"
printf '\njobfs is mounted at %s (state in %s); unmount with: fusermount3 -u %s\n' \
	"$mnt" "$state" "$mnt"
printf 'the demonstration registry is at %s; stop it with: scripts/registry.sh stop %s\n' \
	"$reg" "$regdir"
