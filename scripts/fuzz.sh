#!/bin/sh
# Fuzz every parser for a bounded time with libFuzzer (clang, ASan, UBSan).
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      default 60
# Configures build-fuzz (CC=clang, -Dfuzz=true) once, builds the targets of
# tests/fuzz/, and runs each from a copy of its seed corpus and its past
# crashes (tests/fuzz/corpus/<t>, tests/fuzz/crashes/<t>; the checked-in
# files are never written), with its dictionary (tests/fuzz/<t>.dict) and a
# fixed seed, so a run explores a prefix of
# what a longer run with the same seed explores: CI finds nothing by chance
# that a local run would not have found first.
# Targets run side by side, one per core (JOBFS_FUZZ_JOBS=N to change).
# Prints per target executions, exec/s, corpus size and crashes, writes
# "PASS name" / "FAIL name" lines to build-fuzz/fuzz-results, leaves any
# crashing input in build-fuzz/crashes/<t>/ and exits 1 if anything crashed,
# leaked, hung or broke an invariant.
#   JOBFS_FUZZ_TARGETS="spec ctl"   only these targets
#   JOBFS_FUZZ_SEED=N               another seed (default 1)
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
seed=${JOBFS_FUZZ_SEED:-1}
targets=${JOBFS_FUZZ_TARGETS:-"spec k8s queue_spec ctl cluster yamljson s3"}
dir=build-fuzz
case $secs in
'' | *[!0-9]*)
	echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]" >&2
	exit 2
	;;
esac

# the most bytes of one input: past every size limit a target checks
max_len() {
	case $1 in
	ctl) echo 1024 ;;
	*) echo 16384 ;;
	esac
}

if ! grep -q 'fuzz_spec' "$dir/build.ninja" 2>/dev/null; then
	rm -rf "$dir"
	# meson and ninja print their errors on stdout: shown when they fail
	mkdir -p "$dir"
	if ! CC=clang meson setup "$dir" --buildtype=debugoptimized -Dfuzz=true >"$dir/setup.log" 2>&1; then
		cat "$dir/setup.log" >&2
		echo "fuzz: meson setup of $dir failed" >&2
		exit 1
	fi
fi
if ! ninja -C "$dir" $(for t in $targets; do printf ' tests/fuzz/fuzz_%s' "$t"; done) >"$dir/build.log" 2>&1; then
	grep -E -A3 'FAILED|error' "$dir/build.log" | head -n 40 >&2
	echo "fuzz: building the targets failed (whole log: $dir/build.log)" >&2
	for t in $targets; do echo "FAIL $t"; done >"$dir/fuzz-results"
	exit 1
fi

ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS
symbolizer=$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)
[ -n "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$symbolizer"

# one target: its table line in $work/line, PASS/FAIL in $work/verdict
fuzz_one() {
	t=$1
	work=$dir/fuzz-work/$t
	out=$dir/crashes/$t
	rc=0
	"$dir/tests/fuzz/fuzz_$t" "$work/corpus" -seed="$seed" -max_total_time="$secs" \
		-max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
		-dict="tests/fuzz/$t.dict" -print_final_stats=1 -artifact_prefix="$out/" \
		>"$work/log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -n 1)
	ncorpus=$(find "$work/corpus" -type f | wc -l)
	ncrash=$(find "$out" -type f ! -name 'slow-unit-*' | wc -l)
	if [ "$rc" -ne 0 ] && [ "$ncrash" -eq 0 ]; then
		ncrash=1  # died without an artifact (e.g. the build or a signal)
	fi
	printf '%-11s %10s %8s %7s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "$ncorpus" "$ncrash" \
		>"$work/line"
	if [ "$rc" -ne 0 ] || [ "$ncrash" -ne 0 ]; then
		echo "FAIL $t" >"$work/verdict"
		{
			echo "fuzz_$t failed (exit $rc); input in $out/, log $work/log:"
			grep -E 'ERROR|SUMMARY|invariant|runtime error|==[0-9]+==' "$work/log" | head -n 20
		} >"$work/why" || true
	else
		echo "PASS $t" >"$work/verdict"
	fi
}

# as many targets at once as there are cores (JOBFS_FUZZ_JOBS): each runs
# its own seeded sequence, so running them side by side changes nothing
jobs=${JOBFS_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
for t in $targets; do
	work=$dir/fuzz-work/$t
	out=$dir/crashes/$t
	rm -rf "$work" "$out"
	mkdir -p "$work/corpus" "$out"
	cp tests/fuzz/corpus/"$t"/* "$work/corpus/"
	if [ -d "tests/fuzz/crashes/$t" ] && [ -n "$(ls -A "tests/fuzz/crashes/$t")" ]; then
		cp tests/fuzz/crashes/"$t"/* "$work/corpus/"
	fi
done
running=0
for t in $targets; do
	fuzz_one "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait
		running=0
	fi
done
wait

status=0
: >"$dir/fuzz-results"
printf '%-11s %10s %8s %7s %8s\n' target execs exec/s corpus crashes
for t in $targets; do
	work=$dir/fuzz-work/$t
	cat "$work/line" 2>/dev/null || printf '%-11s did not run\n' "$t"
	verdict=$(cat "$work/verdict" 2>/dev/null || echo "FAIL $t")
	echo "$verdict" >>"$dir/fuzz-results"
	case $verdict in
	FAIL*)
		status=1
		cat "$work/why" >&2 2>/dev/null || true
		;;
	esac
done
exit $status
