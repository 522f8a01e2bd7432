#!/bin/sh
# Configure (once) and build jobfs into DIR (default build); extra
# arguments go to meson setup, e.g. -Db_sanitize=address,undefined.
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
[ $# -gt 0 ] && shift
if [ ! -f "$dir/build.ninja" ]; then
	meson setup "$dir" --buildtype=debugoptimized --werror "$@" >/dev/null
fi
ninja -C "$dir" >/dev/null
