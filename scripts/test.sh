#!/bin/sh
# Build jobfs and run every test: cmocka unit tests and the integration
# suite on a real mount, first in a normal build, then in a build with
# AddressSanitizer and UndefinedBehaviorSanitizer.  Ends with one line
# "N passed, N failed" over everything that ran.
#   scripts/test.sh            everything
#   JOBFS_TEST_SUITES=unit scripts/test.sh   only the unit suite
#   JOBFS_FUZZ_SECONDS=N scripts/test.sh      fuzz each parser N s (default 60, 0 = off)
#   JOBFS_SLURM_PORT=N scripts/test.sh        the test Slurm cluster's first port
#                                             (default 16817; see scripts/slurm-cluster.sh)
# A Slurm cluster (scripts/slurm-cluster.sh) and the test registries
# (scripts/registry.sh) run while the suites do; then the slurm suite runs
# again on a cluster with untyped GPUs and on one of CPU-only nodes.
#   JOBFS_REGISTRY_PORT=N scripts/test.sh     the test registries' first port
#                                             (default 15000)
# A real S3 endpoint (Ceph's radosgw, scripts/s3.sh) runs while the suites
# do, for the object sources' tests; stopped by PID at the end.
#   JOBFS_S3_PORT=N scripts/test.sh           its port (default 17480)
set -eu
cd "$(dirname "$0")/.."
t0=$(date +%s)
# a phase's line, with the minutes and seconds since the start
say() {
	t=$(($(date +%s) - t0))
	printf '== [%d:%02d] %s\n' $((t / 60)) $((t % 60)) "$*"
}
scripts/deps.sh
status=0
# the layout .clang-format describes, on every C file
say "format: scripts/format.sh --check"
scripts/format.sh --check || status=1
suites=${JOBFS_TEST_SUITES:-"unit integration"}
run() {
	dir=$1
	for s in $suites; do
		say "$dir: $s"
		meson test -C "$dir" --suite "$s" --print-errorlogs --no-rebuild \
			--logbase "testlog-$s" || status=1
	done
}
# a real Slurm cluster on this machine for the slurm backend's tests: they
# must run, not skip (JOBFS_SLURM_REQUIRED); stopped by PID at the end
slurm_dir=$(mktemp -d /tmp/jobfs-slurm.XXXXXX)
slurm_dirs=$slurm_dir
reg_dir=$(mktemp -d /tmp/jobfs-registry.XXXXXX)
s3_dir=$(mktemp -d /tmp/jobfs-s3.XXXXXX)
fuzz_pid=
stop_clusters() {
	[ -z "$fuzz_pid" ] || kill "$fuzz_pid" 2>/dev/null || true
	for d in $slurm_dirs; do scripts/slurm-cluster.sh stop "$d" >/dev/null 2>&1 || true; done
	scripts/registry.sh stop "$reg_dir" >/dev/null 2>&1 || true
	scripts/s3.sh stop "$s3_dir" >/dev/null 2>&1 || true
}
trap stop_clusters EXIT
# the image tests' registries (open, Basic, Bearer) with the test image
# pushed: they must run, not skip (JOBFS_REGISTRY_REQUIRED); crun's too
if scripts/registry.sh start "$reg_dir" > "$reg_dir/env"; then
	# KEY=value lines of paths and host:ports (scripts/registry.sh env)
	set -a
	. "$reg_dir/env"
	set +a
	say "registry: up at $JOBFS_REGISTRY"
else
	echo "== registry: the test registries did not start; their tests will fail" >&2
	status=1
fi
export JOBFS_REGISTRY_REQUIRED=1 JOBFS_OCI_REQUIRED=1 JOBFS_CGROUP_REQUIRED=1 JOBFS_NETNS_REQUIRED=1
# the object sources' S3 (radosgw on loopback): its tests must run, not skip
if JOBFS_S3_STORE_MB=${JOBFS_S3_STORE_MB:-4096} scripts/s3.sh start "$s3_dir" > "$s3_dir/env.out"; then
	set -a
	. "$s3_dir/env.out"
	set +a
	say "s3: radosgw up at $JOBFS_S3_ENDPOINT"
else
	echo "== s3: radosgw did not start; the object sources' tests will fail" >&2
	status=1
fi
export JOBFS_S3_REQUIRED=1
# the plots' test renders each SVG with headless chromium (scripts/deps.sh)
export JOBFS_CHROMIUM_REQUIRED=1
if JOBFS_SLURM_JWT=1 scripts/slurm-cluster.sh start "$slurm_dir" > "$slurm_dir/env"; then
	SLURM_CONF=$(sed -n 's/^SLURM_CONF=//p' "$slurm_dir/env")
	JOBFS_SLURM_URL=$(sed -n 's/^JOBFS_SLURM_URL=//p' "$slurm_dir/env")
	JOBFS_SLURM_JWT_URL=$(sed -n 's/^JOBFS_SLURM_JWT_URL=//p' "$slurm_dir/env")
	export SLURM_CONF JOBFS_SLURM_URL JOBFS_SLURM_JWT_URL
	say "slurm: a cluster of 4 nodes is up ($SLURM_CONF)"
else
	echo "== slurm: the test cluster did not start; its tests will fail" >&2
	status=1
fi
export JOBFS_SLURM_REQUIRED=1
scripts/build.sh build
run build
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS
scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false
run build-asan
# bounded fuzzing of every parser, fixed seed (JOBFS_FUZZ_SECONDS=0: skip),
# beside the slurm suites that follow: they mostly wait for Slurm, the
# fuzzers compute (a fuzzer's run is time-bounded, so sharing the cores
# costs it executions, never a result it would not have found alone)
fuzz_seconds=${JOBFS_FUZZ_SECONDS:-60}
rm -f build-fuzz/fuzz-results
if [ "$fuzz_seconds" != 0 ]; then
	say "build-fuzz: fuzz ($fuzz_seconds s per target), beside the slurm suites"
	scripts/fuzz.sh "$fuzz_seconds" >build/fuzz.log 2>&1 &
	fuzz_pid=$!
fi
# the slurm suite again (plain build) on clusters as many sites configure
# them: untyped GPUs (Gres=gpu:8, mapped onto a model by the cluster file)
# and CPU-only nodes, one at a time on the same ports; without the tests
# of slurmrestd or slurmctld down, a lost reply, the daemon killed and the
# two ways to authenticate, which do not depend on how GPUs are typed
# (they ran on the first cluster)
scripts/slurm-cluster.sh stop "$slurm_dir" >/dev/null 2>&1 || true
case " $suites " in *" integration "*)
for kind in untyped none; do
	kdir=$(mktemp -d /tmp/jobfs-slurm-$kind.XXXXXX)
	slurm_dirs="$slurm_dirs $kdir"
	log=build/slurm-$kind.log
	if JOBFS_SLURM_GRES=$kind JOBFS_SLURM_JWT=1 scripts/slurm-cluster.sh start "$kdir" > "$kdir/env"; then
		say "slurm ($kind GRES): the slurm suite"
		# shellcheck disable=SC2046
		(export $(cat "$kdir/env"); JOBFS_BIN=build/tools/jobfs \
			python3 tests/integration/run.py -k slurm -x restd_down -x ctld_down \
				-x lost_reply -x daemon_killed -x user_local_auth -x user_jwt) \
			> "$log" 2>&1 || status=1
		grep -E '^(FAIL|[0-9]+ passed)' "$log" || true
	else
		echo "== slurm ($kind GRES): the test cluster did not start" >&2
		echo "0 passed, 1 failed" > "$log"
		status=1
	fi
	scripts/slurm-cluster.sh stop "$kdir" >/dev/null 2>&1 || true
done ;;
esac
if [ -n "$fuzz_pid" ]; then
	fuzz_status=0
	wait "$fuzz_pid" || fuzz_status=$?
	fuzz_pid=
	say "build-fuzz: fuzz results"
	cat build/fuzz.log
	[ "$fuzz_status" = 0 ] || status=1
fi
python3 - "$suites" "$fuzz_seconds" <<'PY'
import json, os, re, sys
passed = failed = skipped = 0
# scripts/fuzz.sh: one PASS or FAIL line per target
if sys.argv[2] != "0":
    p = os.path.join("build-fuzz", "fuzz-results")
    lines = open(p).read().split() if os.path.exists(p) else []
    passed += lines[0::2].count("PASS")
    failed += lines[0::2].count("FAIL")
    if not lines:
        failed += 1
        print("missing results:", p)
# the slurm suite on the untyped and CPU-only clusters: run.py's own line
for kind in ("untyped", "none"):
    p = os.path.join("build", "slurm-%s.log" % kind)
    if "integration" not in sys.argv[1].split():
        continue
    text = open(p).read() if os.path.exists(p) else ""
    m = re.search(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$", text, re.M)
    if not m:
        failed += 1
        print("missing results:", p)
        continue
    passed += int(m.group(1))
    failed += int(m.group(2))
    skipped += int(m.group(3) or 0)
for d in ("build", "build-asan"):
    for s in sys.argv[1].split():
        p = os.path.join(d, "meson-logs", "testlog-%s.json" % s)
        if not os.path.exists(p):
            failed += 1
            print("missing results:", p)
            continue
        for line in open(p):
            r = json.loads(line)
            res = r.get("result")
            # a program that runs many cases (the integration suite) reports
            # its own "N passed, N failed[, N skipped]": count those
            m = re.search(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$",
                          r.get("stdout") or "", re.M)
            if m and res in ("OK", "FAIL"):
                passed += int(m.group(1))
                failed += int(m.group(2))
                skipped += int(m.group(3) or 0)
                if res != "OK" and int(m.group(2)) == 0:
                    failed += 1
                    print("failed:", d, r.get("name"), res)
                continue
            if res == "OK":
                passed += 1
            elif res == "SKIP":
                skipped += 1
            else:
                failed += 1
                print("failed:", d, r.get("name"), res)
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
PY
exit $status
