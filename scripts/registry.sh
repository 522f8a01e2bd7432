#!/bin/sh
# Real OCI registries on this machine, for jobfs's image tests and
# benchmarks: Debian's docker-registry (the CNCF distribution registry,
# 2.8) with filesystem storage, three ways, all under DIR and on loopback
# only; nothing is installed as a service and nothing starts by itself.
#
#   scripts/registry.sh start DIR   write the configs, start the three,
#                                   wait until they answer, build the test
#                                   image (tests/fixtures/mkimage.sh) and
#                                   push it to each; prints what env prints
#   scripts/registry.sh stop DIR    stop what start started (by PID)
#   scripts/registry.sh env DIR     print the variables the tests read
#
# The three, on JOBFS_REGISTRY_PORT (default 15000) and the next two:
#   PORT    open: no auth                             JOBFS_REGISTRY
#   PORT+1  Basic auth (htpasswd, bcrypt)             JOBFS_REGISTRY_AUTH
#   PORT+2  Bearer tokens: tests/fixtures/token_registry.py, a stand-in
#           token server in front of the open registry (Debian has no
#           token server); it redirects blobs to http://localhost:PORT+2
#           as registries redirect to their storage   JOBFS_REGISTRY_TOKEN
# Each holds jobfs/busybox:latest, :nocmd and :baduser (the layout is
# DIR/layout, JOBFS_REGISTRY_LAYOUT).  The test user is "jobfs" with the
# password below; DIR/auth.json (JOBFS_REGISTRY_AUTHFILE) holds it for
# PORT+1 and PORT+2 in containers' auth.json format.  JOBFS_REGISTRY_EXTRA_MB
# (default 0) adds that many MiB of incompressible layers (benchmarks).
#
# Needs docker-registry, skopeo, umoci, busybox-static, python3 and perl
# (bcrypt for the htpasswd file comes from perl's crypt(), i.e. libxcrypt).
# Exit codes: 0 ok, 1 usage, 2 a registry did not come up or a push failed
# (its log is printed).
set -eu

cmd=${1:-}
dir=${2:-}
port=${JOBFS_REGISTRY_PORT:-15000}
auth_port=$((port + 1))
token_port=$((port + 2))
extra_mb=${JOBFS_REGISTRY_EXTRA_MB:-0}
user=jobfs
password=jobfs-test-password
here=$(cd "$(dirname "$0")/.." && pwd)
image=jobfs/busybox
started=0

usage() {
	echo "usage: $0 start DIR | stop DIR | env DIR" >&2
	exit 1
}

die() {
	echo "registry: $*" >&2
	for f in "$dir"/log/*; do
		[ -f "$f" ] || continue
		echo "--- $f" >&2
		tail -n 30 "$f" >&2 || true
	done
	[ "$started" = 0 ] || stop
	exit 2
}

write_config() {
	mkdir -p "$dir/log" "$dir/run" "$dir/storage-open" "$dir/storage-auth"
	for t in docker-registry skopeo umoci busybox python3 perl; do
		command -v "$t" >/dev/null 2>&1 || die "$t is not installed (scripts/deps.sh)"
	done
	# bcrypt, cost 10, a fixed salt: the htpasswd entry the registry checks
	hash=$(perl -e 'print crypt($ARGV[0], q{$2b$10$} . "jobfsjobfsjobfsjobfsjo")' "$password")
	# shellcheck disable=SC2016 # a literal "$2b$10$"
	case "$hash" in
	'$2b$10$'*) ;;
	*) die "perl's crypt() made no bcrypt hash (libxcrypt without bcrypt?)" ;;
	esac
	printf '%s:%s\n' "$user" "$hash" > "$dir/htpasswd"
	for which in open auth; do
		p=$port
		[ "$which" = open ] || p=$auth_port
		cat > "$dir/config-$which.yml" <<EOF
version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $dir/storage-$which
  delete:
    enabled: true
  redirect:
    disable: true
http:
  addr: 127.0.0.1:$p
  headers:
    X-Content-Type-Options: [nosniff]
EOF
		if [ "$which" = auth ]; then
			cat >> "$dir/config-$which.yml" <<EOF
auth:
  htpasswd:
    realm: jobfs-test
    path: $dir/htpasswd
EOF
		fi
	done
	b64=$(printf '%s:%s' "$user" "$password" | base64 -w0)
	cat > "$dir/auth.json" <<EOF
{
	"auths": {
		"127.0.0.1:$auth_port": { "auth": "$b64" },
		"127.0.0.1:$token_port": { "auth": "$b64" }
	}
}
EOF
	chmod 0600 "$dir/auth.json" "$dir/htpasswd"
	cat > "$dir/policy.json" <<'EOF'
{ "default": [ { "type": "insecureAcceptAnything" } ] }
EOF
}

spawn() { # spawn NAME COMMAND...: start in the background, remember the PID
	name=$1
	shift
	"$@" > "$dir/log/$name.log" 2>&1 &
	echo $! > "$dir/run/$name.pid"
}

# answers URL CODE [USER:PASSWORD]: GET URL answers CODE
answers() {
	python3 - "$@" <<'EOF'
import base64, sys, urllib.request, urllib.error
url, want = sys.argv[1], int(sys.argv[2])
req = urllib.request.Request(url)
if len(sys.argv) > 3:
    req.add_header("Authorization", "Basic " + base64.b64encode(sys.argv[3].encode()).decode())
try:
    code = urllib.request.urlopen(req, timeout=2).status
except urllib.error.HTTPError as e:
    code = e.code
except Exception:
    sys.exit(1)
sys.exit(0 if code == want else 1)
EOF
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

# wait_for NAME WHAT SECONDS COMMAND...: poll until COMMAND succeeds, while
# NAME (spawned) is alive
wait_for() {
	name=$1
	what=$2
	secs=$3
	shift 3
	i=0
	while ! "$@" >/dev/null 2>&1; do
		kill -0 "$(cat "$dir/run/$name.pid")" 2>/dev/null || die "$what exited"
		i=$((i + 1))
		[ "$i" -le $((secs * 10)) ] || die "$what did not come up in ${secs}s"
		sleep 0.1
	done
}

push() { # push TAG PORT [CREDS]
	set -- "$1" "$2" "${3:-}"
	if [ -n "$3" ]; then
		skopeo --policy "$dir/policy.json" copy -q --dest-tls-verify=false --dest-creds "$3" \
			"oci:$dir/layout:$1" "docker://127.0.0.1:$2/$image:$1" \
			>> "$dir/log/skopeo.log" 2>&1 || die "skopeo could not push $image:$1 to port $2"
	else
		skopeo --policy "$dir/policy.json" copy -q --dest-tls-verify=false \
			"oci:$dir/layout:$1" "docker://127.0.0.1:$2/$image:$1" \
			>> "$dir/log/skopeo.log" 2>&1 || die "skopeo could not push $image:$1 to port $2"
	fi
}

start() {
	write_config
	for n in open auth token; do
		f=$dir/run/$n.pid
		if [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then
			die "$n is already running (pid $(cat "$f")); stop it first"
		fi
	done
	for p in "$port" "$auth_port" "$token_port"; do
		port_free "$p" || die "port $p on 127.0.0.1 is in use (set JOBFS_REGISTRY_PORT)"
	done
	started=1
	spawn open docker-registry serve "$dir/config-open.yml"
	spawn auth docker-registry serve "$dir/config-auth.yml"
	spawn token python3 "$here/tests/fixtures/token_registry.py" \
		--listen "127.0.0.1:$token_port" --upstream "127.0.0.1:$port" \
		--user "$user" --password "$password"
	wait_for open "the registry on 127.0.0.1:$port" 20 answers "http://127.0.0.1:$port/v2/" 200
	wait_for auth "the Basic registry on 127.0.0.1:$auth_port" 20 \
		answers "http://127.0.0.1:$auth_port/v2/" 200 "$user:$password"
	wait_for token "the token front on 127.0.0.1:$token_port" 20 \
		answers "http://127.0.0.1:$token_port/v2/" 401
	if [ ! -f "$dir/layout/index.json" ]; then
		rm -rf "$dir/layout"
		"$here/tests/fixtures/mkimage.sh" "$dir/layout" latest "$extra_mb" \
			> "$dir/log/mkimage.log" 2>&1 || die "tests/fixtures/mkimage.sh failed"
	fi
	for tag in latest nocmd baduser; do
		push "$tag" "$port"
		push "$tag" "$auth_port" "$user:$password"
	done
	env_out
}

# stop: SIGTERM to all three at once (the registry drains for about 2 s),
# then wait for each, SIGKILL after 10 s
stop() {
	for n in token auth open; do
		f=$dir/run/$n.pid
		if [ -f "$f" ]; then kill "$(cat "$f")" 2>/dev/null || true; fi
	done
	for n in token auth open; do
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

env_out() {
	echo "JOBFS_REGISTRY=127.0.0.1:$port"
	echo "JOBFS_REGISTRY_AUTH=127.0.0.1:$auth_port"
	echo "JOBFS_REGISTRY_TOKEN=127.0.0.1:$token_port"
	echo "JOBFS_REGISTRY_AUTHFILE=$dir/auth.json"
	echo "JOBFS_REGISTRY_LAYOUT=$dir/layout"
}

case "$cmd" in
start) [ -n "$dir" ] || usage; dir=$(realpath -m "$dir"); start ;;
stop) [ -n "$dir" ] || usage; dir=$(realpath -m "$dir"); stop ;;
env) [ -n "$dir" ] || usage; dir=$(realpath -m "$dir"); env_out ;;
*) usage ;;
esac
