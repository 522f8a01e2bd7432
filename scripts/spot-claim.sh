#!/bin/sh
# The product's claim about unit_runtime and the preemption forecast
# (document 000, reference 5.4), in simulated time: replays
# tests/sim/spot-week.yaml on the real engine twice, with the forecast (the
# cluster's default spot_risk_threshold, 0.2) and without it
# (--spot-risk-threshold 1), and prints one markdown table of the spot
# tasks of each unit_runtime: time from submission to first start, time to
# done, preemptions and the GPU time they wasted.
#
#   scripts/spot-claim.sh [BUILD_DIR [JOBFS-SIM OPTIONS...]]
#
# BUILD_DIR (default build) is configured and built if needed
# (scripts/build.sh); options such as --seed 3 go to both runs.  The same
# input prints the same table.  Exit: 0 the table was printed, 1 a build
# or a replay failed.
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
[ $# -gt 0 ] && shift
workload=tests/sim/spot-week.yaml

scripts/build.sh "$dir"
sim="$dir/tools/jobfs-sim"
if [ ! -x "$sim" ]; then
	echo "spot-claim: $sim was not built" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/spot-claim.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

run() {   # OUT [OPTIONS...]: one replay's report into OUT
	out=$1
	shift
	if ! "$sim" "$@" "$workload" >"$out" 2>"$out.err"; then
		echo "spot-claim: $sim $* $workload failed:" >&2
		cat "$out.err" >&2
		exit 1
	fi
	grep '^jobfs-sim:' "$out.err" | sed 's/^/  /' >&2 || true
}

echo "spot-claim: replaying $workload twice (wall time on stderr)" >&2
run "$tmp/on" "$@"
run "$tmp/off" --spot-risk-threshold 1 "$@"

# The spot report's lines (tools/jobfs_sim.c, SPOT REPORT): series
# unit_runtime groups tasks started start-mean start-p50 start-p90 done-p50
# preempted per-task per-run-h wasted-GPU-h.
awk -v on="$tmp/on" -v off="$tmp/off" -v workload="$workload" '
function dur(t,    d, p, n, h, m, s) {   # 1d02:03:04 -> 26h03m, 00:03:59 -> 3m59s
	if (t == "-")
		return "-"
	d = 0
	if (index(t, "d")) {
		d = substr(t, 1, index(t, "d") - 1) + 0
		t = substr(t, index(t, "d") + 1)
	}
	n = split(t, p, ":")
	if (n != 3)
		return t
	h = d * 24 + p[1]
	m = p[2] + 0
	s = int(p[3])
	if (h > 0)
		return m ? sprintf("%dh%02dm", h, m) : sprintf("%dh", h)
	if (m > 0)
		return s ? sprintf("%dm%02ds", m, s) : sprintf("%dm", m)
	return s ? sprintf("%ds", s) : "0"
}
function load(file, tag,    line, f, in_spot) {
	in_spot = 0
	while ((getline line < file) > 0) {
		if (line ~ /^spot: risk threshold/) {
			split(line, f, /[ \t]+/)
			thr[tag] = f[4]
			in_spot = 1
			continue
		}
		if (!in_spot || line ~ /^series / || line == "")
			continue
		split(line, f, /[ \t]+/)
		if (!(f[1] in seen)) {
			seen[f[1]] = 1
			order[++nunits] = f[1]
		}
		row[f[1], tag] = sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |",
			f[2], tag, f[4], dur(f[7]), dur(f[8]), dur(f[9]), f[10], f[11], f[12],
			f[13])
	}
	close(file)
}
BEGIN {
	load(on, "on")
	load(off, "off")
	if (nunits == 0 || !("on" in thr) || !("off" in thr)) {
		print "spot-claim: no spot report in the replays" | "cat 1>&2"
		exit 1
	}
	printf "Spot tasks of %s; forecast on: spot_risk_threshold %s (the cluster'"'"'s), " \
		"off: %s (every window accepted).\n\n", workload, thr["on"], thr["off"]
	print "| unit_runtime | forecast | tasks | start, median | start, p90 | done, median | preemptions | per task | per run-hour | wasted GPU-h |"
	print "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"
	for (i = 1; i <= nunits; i++)
		for (j = 1; j <= 2; j++) {
			tag = j == 1 ? "on" : "off"
			if ((order[i], tag) in row)
				print row[order[i], tag]
		}
	print ""
	print "start: from submission to the first attempt; done: to success; per run-hour:"
	print "preemptions per hour of completed run; wasted: GPU time of attempts cut short."
}'
