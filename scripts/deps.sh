#!/bin/sh
# Install what jobfs needs to build, run and test, from Debian's packages.
# Quiet and quick when everything is already there.  clang, libclang-rt-14-dev
# (libFuzzer and the sanitizer runtimes) and llvm-14 (llvm-symbolizer) are
# for scripts/fuzz.sh; clang-format for scripts/format.sh; ripgrep for
# tests/integration/test_recursive.py (rg over the mount must end); rsync
# and python3-watchdog for tests/integration/test_fs_times.py and
# test_inotify_tree.py (rsync sends nothing twice; a recursive observer).
# The runtime (reference 8): libarchive (image layers) and libssl (sha256);
# crun and runc (the OCI runtimes); docker-registry, skopeo, umoci and
# busybox-static to build, serve and check the test images; slirp4netns and
# passt for the network namespaces of nodes with ports.
# libexpat1-dev: objstore/'s streaming parser of S3's XML listings.
# radosgw, ceph-mon, ceph-osd and ceph-common: the test S3 endpoint
# (scripts/s3.sh).
# jupyter-nbconvert, python3-nbclient, python3-nbformat and python3-ipykernel:
# tests/integration/test_notebook.py executes examples/sweep.ipynb headless.
# chromium: tests/integration/test_plots.py renders each SVG plot headless to
# a PNG (and the README's screenshots under docs/img/).
# libncurses-dev and tmux: tools/jobfsctl's `top` (ncursesw) and its tests
# (driven in tmux); python3-pil and fonts-dejavu-core: the screenshot of
# `jobfsctl top` rendered to PNG from tmux's capture-pane.
set -eu
PKGS="gcc meson ninja-build pkg-config libfuse3-dev fuse3 libyaml-dev libjansson-dev
libsqlite3-dev libcurl4-openssl-dev libcmocka-dev python3 python3-yaml jq inotify-tools
perl tar procps util-linux passwd sqlite3 psmisc gdb ripgrep rsync python3-watchdog
clang clang-format libclang-rt-14-dev llvm-14
libarchive-dev libssl-dev crun runc docker-registry skopeo umoci busybox-static slirp4netns passt
libexpat1-dev radosgw ceph-mon ceph-osd ceph-common chromium
jupyter-nbconvert python3-nbclient python3-nbformat python3-ipykernel
libncurses-dev tmux python3-pil fonts-dejavu-core"
# scripts/deps.sh bench: also what the benchmarks compare against (podman
# for tests/bench/bench_images.py's `podman run --rm`; rclone to copy from
# the test S3 endpoint)
if [ "${1:-}" = bench ]; then
	PKGS="$PKGS podman rclone"
fi
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing packages:$missing (run as root to install them)" >&2
		exit 1
	fi
	echo "deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	# wait for the dpkg lock (a fresh machine may be upgrading itself) rather than fail
	apt-get -o DPkg::Lock::Timeout=900 update -qq
	# shellcheck disable=SC2086
	apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends $missing >/dev/null
fi
# FUSE needs its device; containers sometimes lack the node, or run without
# udev, whose Debian rule makes it 0666 so that ordinary users can mount
if [ "$(id -u)" = 0 ]; then
	[ -e /dev/fuse ] || mknod -m 666 /dev/fuse c 10 229 || true
	[ -e /dev/fuse ] && chmod 0666 /dev/fuse || true
fi
