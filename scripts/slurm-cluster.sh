#!/bin/sh
# A real Slurm cluster on this machine, for jobfs's tests and benchmarks:
# munged, slurmctld, four slurmd nodes (n1..n4, all on localhost, each its
# own port) and slurmrestd on a unix socket with local auth; optionally a
# second slurmrestd on loopback TCP with JWT auth.  Everything lives in DIR
# and binds to loopback; nothing is installed as a service and nothing
# starts by itself.
#
#   scripts/slurm-cluster.sh install          apt-get the packages if missing
#   scripts/slurm-cluster.sh start DIR        write the config, start it all, wait
#                                             until the four nodes are idle
#   scripts/slurm-cluster.sh stop DIR         stop what start started (by PID)
#   scripts/slurm-cluster.sh env DIR          print SLURM_CONF=... and the socket
#   scripts/slurm-cluster.sh kill DIR NAME    stop one daemon (slurmrestd, slurmctld)
#   scripts/slurm-cluster.sh revive DIR NAME  start it again
#
# Nodes: 8 CPUs, 16000 MB and 8 fake GPUs each (gres.conf names files that
# are symlinks to /dev/null), as JOBFS_SLURM_GRES says: "typed" (the
# default: Gres=gpu:4090:8), "untyped" (Gres=gpu:8, as many sites configure
# them) or "none" (CPU-only nodes, no GRES at all).  Partitions over the same four
# nodes: "ondemand" (PriorityTier 10, the default) and "spot" (PriorityTier
# 1, PreemptMode=REQUEUE, GraceTime JOBFS_SLURM_GRACE, default 5 s), with
# preempt/partition_prio: on-demand work requeues spot work.
# Ports: JOBFS_SLURM_PORT (default 16817) for slurmctld, the next four for
# the slurmd's, JOBFS_SLURM_JWT_PORT (default 16830) for the JWT slurmrestd
# when JOBFS_SLURM_JWT=1.
#
# Exit codes: 0 ok, 1 usage, 2 a daemon did not come up (its log is printed).
set -eu

cmd=${1:-}
dir=${2:-}
port=${JOBFS_SLURM_PORT:-16817}
jwt_port=${JOBFS_SLURM_JWT_PORT:-16830}
grace=${JOBFS_SLURM_GRACE:-5}
gres_kind=${JOBFS_SLURM_GRES:-typed}
case "$gres_kind" in
typed) node_gres=" Gres=gpu:4090:8"; gres_line="NodeName=n[1-4] Name=gpu Type=4090 File=DIR/dev/gpu[0-7]" ;;
untyped) node_gres=" Gres=gpu:8"; gres_line="NodeName=n[1-4] Name=gpu File=DIR/dev/gpu[0-7]" ;;
none) node_gres=""; gres_line="" ;;
*) echo "slurm-cluster: JOBFS_SLURM_GRES=$gres_kind: want typed, untyped or none" >&2; exit 1 ;;
esac
PKGS="munge slurmctld slurmd slurm-client slurmrestd slurm-wlm-jwt-plugin"

usage() {
	echo "usage: $0 install | start DIR | stop DIR | env DIR | kill DIR NAME | revive DIR NAME" >&2
	exit 1
}

install() {
	missing=""
	for p in $PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "slurm-cluster: missing packages:$missing (run as root to install them)" >&2
		exit 2
	fi
	echo "slurm-cluster: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	# wait for the dpkg lock (a fresh machine may be upgrading itself) rather than fail
	apt-get -o DPkg::Lock::Timeout=900 update -qq
	# shellcheck disable=SC2086
	apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends $missing >/dev/null
}

write_config() {
	mkdir -p "$dir/state" "$dir/log" "$dir/run" "$dir/dev" "$dir/munge"
	# other users reach the munge socket in run/ (jobs run as them); the key stays private
	chmod 0755 "$dir" "$dir/run"
	for n in 1 2 3 4; do mkdir -p "$dir/spool/n$n"; done
	for g in 0 1 2 3 4 5 6 7; do ln -sf /dev/null "$dir/dev/gpu$g"; done
	[ -f "$dir/munge/munge.key" ] ||
		dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
	chmod 0700 "$dir/munge"
	chmod 0400 "$dir/munge/munge.key"
	[ -f "$dir/jwt.key" ] || dd if=/dev/urandom of="$dir/jwt.key" bs=32 count=1 2>/dev/null
	chmod 0600 "$dir/jwt.key"
	p1=$((port + 1)); p2=$((port + 2)); p3=$((port + 3)); p4=$((port + 4))
	cat > "$dir/slurm.conf" <<EOF
ClusterName=jobfs-test
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/run/munge.socket,cred_expire=5
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$dir/jwt.key
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=1,bf_interval=1,default_queue_depth=1000
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
MaxArraySize=1000001
MaxJobCount=200000
KillWait=5
MessageTimeout=5
InactiveLimit=0
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
RequeueExit=143
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$p1 CPUs=8 RealMemory=16000${node_gres} State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$p2 CPUs=8 RealMemory=16000${node_gres} State=UNKNOWN
NodeName=n3 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$p3 CPUs=8 RealMemory=16000${node_gres} State=UNKNOWN
NodeName=n4 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$p4 CPUs=8 RealMemory=16000${node_gres} State=UNKNOWN
PartitionName=ondemand Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP PriorityTier=10 PreemptMode=OFF OverSubscribe=NO
PartitionName=spot Nodes=n[1-4] MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE GraceTime=$grace OverSubscribe=NO
EOF
	echo "$gres_line" | sed "s|DIR|$dir|" > "$dir/gres.conf"
	printf 'include /etc/slurm/plugstack.conf.d/*\n' > "$dir/plugstack.conf"
}

# wait_for WHAT SECONDS COMMAND...: poll until COMMAND succeeds
wait_for() {
	what=$1; secs=$2; shift 2
	i=0
	while ! "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -gt $((secs * 10)) ]; then
			echo "slurm-cluster: $what did not come up in ${secs}s" >&2
			for f in "$dir"/log/*.log; do
				echo "--- $f"; tail -n 30 "$f" >&2 || true
			done
			exit 2
		fi
		sleep 0.1
	done
}

spawn() {   # spawn NAME COMMAND...: start in the background, remember the PID
	name=$1; shift
	"$@" > "$dir/log/$name.out" 2>&1 &
	echo $! > "$dir/run/$name.pid"
}

nodes_idle() {
	[ "$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -c ' idle$')" -ge 4 ]
}

start() {
	install
	write_config
	export SLURM_CONF="$dir/slurm.conf"
	spawn munged munged -F -f -S "$dir/run/munge.socket" --key-file="$dir/munge/munge.key" \
		--pid-file="$dir/run/munged.pid.own" --seed-file="$dir/munge/seed" \
		--log-file="$dir/log/munged.log"
	wait_for munged 10 test -S "$dir/run/munge.socket"
	spawn slurmctld slurmctld -D -i -f "$dir/slurm.conf"
	wait_for slurmctld 20 scontrol ping
	for n in 1 2 3 4; do
		spawn "slurmd-n$n" slurmd -D -N "n$n" -f "$dir/slurm.conf"
	done
	wait_for "four idle nodes" 30 nodes_idle
	SLURMRESTD_SECURITY=disable_user_check spawn slurmrestd \
		slurmrestd -f "$dir/slurm.conf" -a rest_auth/local -s openapi/v0.0.38 \
		"unix:$dir/slurmrestd.socket"
	wait_for slurmrestd 10 test -S "$dir/slurmrestd.socket"
	if [ "${JOBFS_SLURM_JWT:-0}" = 1 ]; then
		SLURMRESTD_SECURITY=disable_user_check SLURM_JWT=daemon spawn slurmrestd-jwt \
			slurmrestd -f "$dir/slurm.conf" -a rest_auth/jwt -s openapi/v0.0.38 \
			"127.0.0.1:$jwt_port"
	fi
	env_out
}

stop_one() {
	f=$dir/run/$1.pid
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if kill "$pid" 2>/dev/null; then
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

stop() {
	stop_one slurmrestd-jwt
	stop_one slurmrestd
	for n in 1 2 3 4; do stop_one "slurmd-n$n"; done
	stop_one slurmctld
	stop_one munged
}

env_out() {
	echo "SLURM_CONF=$dir/slurm.conf"
	echo "JOBFS_SLURM_URL=unix:$dir/slurmrestd.socket"
	echo "JOBFS_SLURM_GRES=$gres_kind"
	[ "${JOBFS_SLURM_JWT:-0}" = 1 ] && echo "JOBFS_SLURM_JWT_URL=http://127.0.0.1:$jwt_port"
	return 0
}

# kill DIR NAME / revive DIR NAME: stop one daemon by PID, start it again
# as start does (the fault tests: slurmrestd, slurmctld)
revive() {
	export SLURM_CONF="$dir/slurm.conf"
	case "$1" in
	slurmctld)
		spawn slurmctld slurmctld -D -i -f "$dir/slurm.conf"
		wait_for slurmctld 20 scontrol ping ;;
	slurmrestd)
		rm -f "$dir/slurmrestd.socket"
		SLURMRESTD_SECURITY=disable_user_check spawn slurmrestd \
			slurmrestd -f "$dir/slurm.conf" -a rest_auth/local -s openapi/v0.0.38 \
			"unix:$dir/slurmrestd.socket"
		wait_for slurmrestd 10 test -S "$dir/slurmrestd.socket" ;;
	*) usage ;;
	esac
}

case "$cmd" in
install) install ;;
kill) [ -n "$dir" ] && [ -n "${3:-}" ] || usage; dir=$(realpath -m "$dir"); stop_one "$3" ;;
revive) [ -n "$dir" ] && [ -n "${3:-}" ] || usage; dir=$(realpath -m "$dir"); revive "$3" ;;
start) [ -n "$dir" ] || usage; dir=$(realpath -m "$dir"); start ;;
stop) [ -n "$dir" ] || usage; dir=$(realpath -m "$dir"); stop ;;
env) [ -n "$dir" ] || usage; dir=$(realpath -m "$dir"); env_out ;;
*) usage ;;
esac
