#!/bin/sh
# A real S3 endpoint on this machine, for jobfs's S3 tests and benchmarks:
# Ceph's radosgw (Debian 12's Ceph 16, "pacific"), which checks AWS
# Signature V4, on a one-OSD Ceph cluster whose OSD keeps its objects in
# memory (memstore).  Everything is on 127.0.0.1 and under DIR: the config
# (DIR/ceph.conf), the mon's and OSD's data, sockets, logs (DIR/log) and
# PIDs (DIR/run/NAME.pid); Ceph runs with auth none between its daemons.
# Nothing is installed as a service and nothing starts by itself.
#
#   scripts/s3.sh start DIR   write DIR/ceph.conf, start ceph-mon, ceph-osd
#                             and radosgw, wait until radosgw answers HTTP,
#                             create the users and the buckets jobfs-test
#                             and jobfs-bench; prints what env prints
#   scripts/s3.sh stop DIR    stop what start started (by PID) and remove
#                             the cluster's data (DIR/mon, DIR/osd)
#   scripts/s3.sh env DIR     print the variables the tests read:
#     JOBFS_S3_ENDPOINT          http://127.0.0.1:PORT (path-style buckets)
#     JOBFS_S3_REGION            us-east-1: radosgw checks the signature with
#                                whatever region its credential scope names;
#                                a CreateBucket body's LocationConstraint, if
#                                any, must be "default" (the zonegroup)
#     JOBFS_S3_ACCESS_KEY, JOBFS_S3_SECRET_KEY              the user "jobfs"
#     JOBFS_S3_OTHER_ACCESS_KEY, JOBFS_S3_OTHER_SECRET_KEY  the user "other"
#     JOBFS_S3_CREDENTIALS       DIR/credentials (0600), AWS shared-credentials
#                                format: [default] is jobfs, [other] is
#                                other, [wrong] is jobfs's key with a wrong
#                                secret (403 SignatureDoesNotMatch)
#
# Ports: JOBFS_S3_PORT (default 17480) for radosgw; JOBFS_S3_MON_PORT
# (default JOBFS_S3_PORT - 691, i.e. 16789) for the mon (msgr v1 only); the
# OSD binds its four ports in JOBFS_S3_PORT+20 .. JOBFS_S3_PORT+59 (17500 to
# 17539): clear of the test Slurm cluster (16817 on) and the registries
# (15000 on), and of another instance whose JOBFS_S3_PORT is 100 away.
# JOBFS_S3_STORE_MB (default 2048) is the OSD's size: objects live in RAM
# (about twice their size), and writes fail once it is 95% full.  A deleted
# object is freed only after radosgw's GC delay, so an instance kept for
# many test runs fills up (about four integration suites at 2048): restart
# it, or give it more.  scripts/test.sh starts one with 4096 per run.
# Test buckets and objects: tests/fixtures/s3util.py (standard library only).
#
# Needs radosgw, ceph-mon, ceph-osd, ceph-common (scripts/deps.sh) and
# python3; starts in about 3 s and takes about 150 MB (RSS) while empty.
# Exit codes: 0 ok, 1 usage, 2 a daemon did not come up, a port is in use,
# it is already running, or a setup step failed (the logs are printed).
set -eu

cmd=${1:-}
dir=${2:-}
port=${JOBFS_S3_PORT:-17480}
mon_port=${JOBFS_S3_MON_PORT:-$((port - 691))}
osd_port_min=$((port + 20))
osd_port_max=$((port + 59))
store_mb=${JOBFS_S3_STORE_MB:-2048}
region=us-east-1
access_key=JOBFSTESTACCESSKEY00
secret_key=jobfsTestSecretKey0000000000000000000000
other_access_key=JOBFSOTHERACCESSKEY0
other_secret_key=otherTestSecretKey0000000000000000000000
wrong_secret_key=wrongTestSecretKey0000000000000000000000
buckets="jobfs-test jobfs-bench"
daemons="rgw osd mon"
here=$(cd "$(dirname "$0")/.." && pwd)
started=0

usage() {
	echo "usage: $0 start DIR | stop DIR | env DIR" >&2
	exit 1
}

die() {
	echo "s3: $*" >&2
	if [ "$started" != 0 ]; then
		for f in "$dir"/log/*; do
			[ -f "$f" ] || continue
			echo "--- $f" >&2
			tail -n 30 "$f" >&2 || true
		done
		stop
	fi
	exit 2
}

ceph_() { # the ceph CLI on this cluster, bounded
	ceph -c "$dir/ceph.conf" --connect-timeout 10 "$@"
}

write_config() {
	for t in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool python3; do
		command -v "$t" >/dev/null 2>&1 || die "$t is not installed (scripts/deps.sh)"
	done
	fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
	mkdir -p "$dir/log" "$dir/run" "$dir/mon" "$dir/osd" "$dir/rgw" "$dir/crash"
	cat > "$dir/ceph.conf" <<EOF
# written by scripts/s3.sh: a throwaway one-OSD cluster under $dir
[global]
fsid = $fsid
mon initial members = a
mon host = v1:127.0.0.1:$mon_port
public network = 127.0.0.0/8
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr2 = false
ms bind ipv6 = false
ms bind port min = $osd_port_min
ms bind port max = $osd_port_max
auth cluster required = none
auth service required = none
auth client required = none
auth supported = none
run dir = $dir/run
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
keyring = $dir/keyring
crash dir = $dir/crash
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
# commit map changes every 0.1 s, not every second: radosgw's pools come
# up in 2 s, not 10
paxos propose interval = 0.1

[mon]
mon data = $dir/mon
mon cluster log file = $dir/log/cluster.log

[osd]
osd data = $dir/osd
osd objectstore = memstore
memstore device bytes = $((store_mb * 1048576))
# start stays out of the CRUSH map (start places osd.0): with auth none the
# OSD may send these commands before it knows the fsid, and then exits
osd crush update on start = false
osd class update on start = false

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$port
rgw data = $dir/rgw
EOF
	cat > "$dir/credentials" <<EOF
[default]
aws_access_key_id = $access_key
aws_secret_access_key = $secret_key

[other]
aws_access_key_id = $other_access_key
aws_secret_access_key = $other_secret_key

[wrong]
aws_access_key_id = $access_key
aws_secret_access_key = $wrong_secret_key
EOF
	chmod 0600 "$dir/credentials"
}

spawn() { # spawn NAME COMMAND...: start in the background, remember the PID
	name=$1
	shift
	"$@" > "$dir/log/$name.out" 2>&1 &
	echo $! > "$dir/run/$name.pid"
}

alive() { # alive NAME: its PID file names a live process
	[ -f "$dir/run/$1.pid" ] && kill -0 "$(cat "$dir/run/$1.pid")" 2>/dev/null
}

# port_free PORT: nothing accepts connections on 127.0.0.1:PORT
port_free() {
	python3 - "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.settimeout(1)
sys.exit(1 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 0)
EOF
}

# answers URL: a GET on URL gets an HTTP answer, whatever its status
answers() {
	python3 - "$1" <<'EOF'
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=2)
except urllib.error.HTTPError:
    pass
except Exception:
    sys.exit(1)
EOF
}

# wait_for "NAME..." WHAT SECONDS COMMAND...: poll until COMMAND succeeds,
# while every NAME (spawned) is alive
wait_for() {
	names=$1
	what=$2
	secs=$3
	shift 3
	i=0
	while ! "$@" >/dev/null 2>&1; do
		for n in $names; do
			alive "$n" || die "$n exited while waiting for $what"
		done
		i=$((i + 1))
		[ "$i" -le $((secs * 5)) ] || die "$what did not come up in ${secs}s"
		sleep 0.2
	done
}

start() {
	if [ "$port" -le 700 ] || [ "$port" -ge 65400 ]; then
		die "JOBFS_S3_PORT=$port is out of range"
	fi
	mkdir -p "$dir/run"
	for n in $daemons; do
		if alive "$n"; then
			die "$n is already running (pid $(cat "$dir/run/$n.pid")); stop it first ($0 stop $dir)"
		fi
	done
	port_free "$port" || die "port $port on 127.0.0.1 is in use (set JOBFS_S3_PORT)"
	port_free "$mon_port" || die "port $mon_port on 127.0.0.1 is in use (set JOBFS_S3_MON_PORT)"
	rm -rf "$dir/mon" "$dir/osd" "$dir/rgw" "$dir/run" "$dir/log" "$dir/crash"
	write_config
	monmaptool --create --clobber --fsid "$fsid" --addv a "[v1:127.0.0.1:$mon_port]" \
		"$dir/run/monmap" > "$dir/log/mkfs.out" 2>&1 || die "monmaptool failed"
	ceph-mon -c "$dir/ceph.conf" -i a --mkfs --monmap "$dir/run/monmap" \
		>> "$dir/log/mkfs.out" 2>&1 || die "ceph-mon --mkfs failed"
	started=1
	spawn mon ceph-mon -c "$dir/ceph.conf" -i a -f
	wait_for mon "the mon on 127.0.0.1:$mon_port" 30 ceph_ mon stat
	osd_uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
	ceph_ osd new "$osd_uuid" 0 >> "$dir/log/mkfs.out" 2>&1 || die "ceph osd new failed"
	ceph_ osd crush add osd.0 1.0 root=default host=localhost \
		>> "$dir/log/mkfs.out" 2>&1 || die "ceph osd crush add failed"
	ceph-osd -c "$dir/ceph.conf" -i 0 --mkfs --osd-uuid "$osd_uuid" \
		>> "$dir/log/mkfs.out" 2>&1 || die "ceph-osd --mkfs failed"
	spawn osd ceph-osd -c "$dir/ceph.conf" -i 0 -f
	# radosgw creates its pools on its first start and waits for the OSD
	spawn rgw radosgw -c "$dir/ceph.conf" -n client.rgw -f
	wait_for "$daemons" "radosgw on 127.0.0.1:$port" 90 answers "http://127.0.0.1:$port/"
	radosgw-admin -c "$dir/ceph.conf" user create --uid=jobfs --display-name=jobfs \
		--access-key="$access_key" --secret-key="$secret_key" \
		>> "$dir/log/users.out" 2>&1 || die "radosgw-admin user create jobfs failed"
	radosgw-admin -c "$dir/ceph.conf" user create --uid=other --display-name=other \
		--access-key="$other_access_key" --secret-key="$other_secret_key" \
		>> "$dir/log/users.out" 2>&1 || die "radosgw-admin user create other failed"
	for b in $buckets; do
		python3 "$here/tests/fixtures/s3util.py" --endpoint "http://127.0.0.1:$port" \
			--access-key "$access_key" --secret-key "$secret_key" --region "$region" \
			mb "$b" >> "$dir/log/buckets.out" 2>&1 || die "could not create the bucket $b"
	done
	env_out
}

# halt NAME...: SIGTERM to each at once, then wait for each, SIGKILL after 10 s
halt() {
	for n in "$@"; do
		f=$dir/run/$n.pid
		if [ -f "$f" ]; then kill "$(cat "$f")" 2>/dev/null || true; fi
	done
	for n in "$@"; do
		f=$dir/run/$n.pid
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$pid" 2>/dev/null || true
		rm -f "$f"
	done
}

# stop: one at a time, radosgw, the OSD, the mon (radosgw hangs on its way
# out once the OSD is gone); about 6 s; then remove the cluster's data
stop() {
	halt rgw
	halt osd
	halt mon
	rm -rf "$dir/osd" "$dir/mon" "$dir/rgw"
	rm -f "$dir"/run/*.asok
}

env_out() {
	echo "JOBFS_S3_ENDPOINT=http://127.0.0.1:$port"
	echo "JOBFS_S3_REGION=$region"
	echo "JOBFS_S3_ACCESS_KEY=$access_key"
	echo "JOBFS_S3_SECRET_KEY=$secret_key"
	echo "JOBFS_S3_CREDENTIALS=$dir/credentials"
	echo "JOBFS_S3_OTHER_ACCESS_KEY=$other_access_key"
	echo "JOBFS_S3_OTHER_SECRET_KEY=$other_secret_key"
}

case "$cmd" in
start) [ -n "$dir" ] || usage; dir=$(realpath -m "$dir"); start ;;
stop) [ -n "$dir" ] || usage; dir=$(realpath -m "$dir"); stop ;;
env) [ -n "$dir" ] || usage; dir=$(realpath -m "$dir"); env_out ;;
*) usage ;;
esac
