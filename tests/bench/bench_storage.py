#!/usr/bin/env python3
"""Storage's start-time benchmark (reference 8.3), figures side by side in
one run: what mounting a warm object source adds to a node's start.

  plain        spec close -> the container's first output (inotify on the
               state directory, as tests/bench/bench_images.py measures a
               warm start), no storage
  volume+tmp   the same with a volume, an on-disk emptydir and a Memory one
  object       the same with a warm object source of OBJECTS objects
               mounted: each group syncs it before its first node (one
               listing, nothing fetched)
  listing      `jobfs-sync` of the same warm cache from the command line:
               the listing alone, the floor of what `object` may add

Target: object - plain <= listing (no added start time beyond the listing).

The four are measured interleaved: N rounds, each one run of every case,
in an order that turns by one each round (a burst of load on the machine
falls on all of them alike, and no case always follows the same one).
Besides each case's p50 and p99 it prints the rounds' paired figure,
object - plain - listing per round, its p50 and a 95% confidence interval
of that p50 (order statistics): what the object source adds beyond its
listing, with the load of each round taken out.  The target is met when
that p50 is 0 or below (the interval says how far the runs' spread
leaves it from 0).

Usage: python3 tests/bench/bench_storage.py BUILD_DIR [--n N] [--objects K]
As root, with crun, docker-registry, skopeo, umoci and Ceph's radosgw
installed; it starts a registry (scripts/registry.sh, port
JOBFS_REGISTRY_PORT, default 15400) and an S3 endpoint (scripts/s3.sh,
port JOBFS_S3_PORT, default 17880) and stops both by PID at the end.
"""
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_images import Inotify, first_output, idle, ms, pct, registry, wait_text  # noqa: E402

REG_PORT = int(os.environ.get("JOBFS_REGISTRY_PORT", "15400"))
S3_PORT = int(os.environ.get("JOBFS_S3_PORT", "17880"))


def s3_start(tmp):
    d = os.path.join(tmp, "s3")
    os.makedirs(d)
    env = dict(os.environ, JOBFS_S3_PORT=str(S3_PORT))
    out = subprocess.run([os.path.join(ROOT, "scripts/s3.sh"), "start", d], env=env,
                         capture_output=True, text=True, check=True).stdout
    return d, dict(l.split("=", 1) for l in out.split() if "=" in l)


def start_one(mnt, state, tag, spec, i):
    """Group TAG-I: spec close -> its container's first output, in s (I 0:
    a warm-up, not timed, which also makes STATE/runs)."""
    g = os.path.join(mnt, "queues", "bench", "groups", "%s-%d" % (tag, i))
    os.mkdir(g)
    if i == 0:
        with open(os.path.join(g, "spec.yaml"), "w") as f:
            f.write(spec)
        wait_text(os.path.join(g, "tasks/0/nodes/0/logs"), "go", timeout=120)
        idle()
        return None
    runs = os.path.join(state, "runs")
    fd = os.open(os.path.join(g, "spec.yaml"), os.O_WRONLY | os.O_TRUNC)
    os.write(fd, spec.encode())
    ino = Inotify()
    ino.watch(runs, Inotify.IN_CREATE)
    t0 = time.monotonic()
    os.close(fd)
    t1 = first_output(ino, runs, "go")
    ino.close()
    wait_text(os.path.join(g, "tasks/0/nodes/0/logs"), "go", timeout=120)
    idle()
    return t1 - t0


def median_ci(xs):
    """A distribution-free 95% confidence interval of the median of the
    sorted xs: xs[k] and xs[n-1-k], k the largest with
    P(Binomial(n, 1/2) <= k) <= 2.5% (the whole range when n < 6)."""
    n = len(xs)
    k, below = 0, math.comb(n, 0) / 2 ** n
    while k + 1 < n // 2 and below + math.comb(n, k + 1) / 2 ** n <= 0.025:
        k += 1
        below += math.comb(n, k) / 2 ** n
    if below > 0.025:
        k = 0
    return xs[k], xs[n - 1 - k]


def main():
    args = sys.argv[1:]
    if not args:
        raise SystemExit(__doc__)
    build = os.path.abspath(args[0])
    n = int(args[args.index("--n") + 1]) if "--n" in args else 31
    objects = int(args[args.index("--objects") + 1]) if "--objects" in args else 1000
    tmp = tempfile.mkdtemp(prefix="bench-storage-")
    reg_dir = s3_dir = mnt = None
    try:
        reg_dir, reg, _ = registry(tmp, REG_PORT, 0)
        s3_dir, s3 = s3_start(tmp)
        env = dict(os.environ, **s3)
        util = [sys.executable, os.path.join(ROOT, "tests/fixtures/s3util.py")]
        subprocess.run(util + ["mb", "bench-warm"], env=env, check=True, capture_output=True)
        subprocess.run(util + ["fill", "bench-warm", "w", str(objects), "1024"], env=env,
                       check=True, capture_output=True)
        state, mnt = os.path.join(tmp, "state"), os.path.join(tmp, "mnt")
        os.makedirs(state)
        os.makedirs(mnt)
        subprocess.run([os.path.join(build, "tools/jobfs"), "--state", state, "--runtime", "oci",
                        "--insecure-registry", reg, mnt], check=True)
        os.mkdir(os.path.join(mnt, "volumes", "v"))
        os.mkdir(os.path.join(mnt, "objects", "w"))
        with open(os.path.join(mnt, "objects/w/spec.yaml"), "w") as f:
            f.write("endpoint: %s\nbucket: bench-warm\nprefix: w\ncredentials: %s\n"
                    % (s3["JOBFS_S3_ENDPOINT"], s3["JOBFS_S3_CREDENTIALS"]))
        deadline = time.monotonic() + 300
        while "Synced" not in open(os.path.join(mnt, "objects/w/events")).read():
            if time.monotonic() > deadline:
                raise SystemExit("the source did not sync")
            time.sleep(0.1)
        image = "%s/jobfs/busybox:latest" % reg
        base = "image: %s\nimage_pull_policy: IfNotPresent\nargs: [\"echo\", \"go\"]\n" % image
        storage = {
            "plain": "",
            "vol": "storage:\n- {type: volume, name: v, path: /v}\n"
                   "- {type: emptydir, path: /s, size: 1Gi}\n"
                   "- {type: emptydir, path: /m, medium: Memory, size: 64Mi}\n",
            "obj": "storage:\n- {type: object, name: w, path: /w}\n",
        }
        os.makedirs(os.path.join(mnt, "queues", "bench"))
        for tag in storage:
            start_one(mnt, state, tag, base + storage[tag], 0)
        # the listing alone: jobfs-sync of a copy of the warm cache
        cache = os.path.join(state, "objects", "w")
        copy = os.path.join(tmp, "cache-copy")
        subprocess.run(["cp", "-a", cache, copy], check=True)
        sync = [os.path.join(build, "tools/jobfs-sync"), "--endpoint", s3["JOBFS_S3_ENDPOINT"],
                "--bucket", "bench-warm", "--prefix", "w", "--credentials",
                s3["JOBFS_S3_CREDENTIALS"], copy]
        subprocess.run(sync, check=True, capture_output=True)

        def listing():
            t0 = time.monotonic()
            subprocess.run(sync, check=True, capture_output=True)
            return time.monotonic() - t0

        cases = ["plain", "vol", "obj", "lst"]
        got = {c: [] for c in cases}
        for r in range(n):
            for c in cases[r % 4:] + cases[:r % 4]:
                got[c].append(listing() if c == "lst" else
                              start_one(mnt, state, c, base + storage[c], r + 1))
        plain, vol, obj, lst = got["plain"], got["vol"], got["obj"], got["lst"]
        rows = [("plain", plain), ("volume+2 emptydirs", vol),
                ("object (%d, warm)" % objects, obj), ("listing alone", lst)]
        print("storage start times (ms), %d runs each, interleaved, one machine, one run" % n)
        print("%-24s %8s %8s" % ("", "p50", "p99"))
        for name, xs in rows:
            print("%-24s %8s %8s" % (name, ms(statistics.median(xs)), ms(pct(xs, 99))))
        added, floor = statistics.median(obj) - statistics.median(plain), statistics.median(lst)
        print("object - plain (p50) %s ms; listing alone %s ms" % (ms(added), ms(floor)))
        paired = sorted(o - p - l for o, p, l in zip(obj, plain, lst))
        lo, hi = median_ci(paired)
        mid = statistics.median(paired)
        print("object - plain - listing, per round: p50 %s ms (95%% CI [%s, %s]): %s" % (
            ms(mid), ms(lo), ms(hi), "met" if mid <= 0 else
            "NOT met (%.0f%% of the listing)" % (100 * mid / floor)))
        print("volume+emptydirs - plain (p50) %s ms" % ms(statistics.median(vol) -
                                                         statistics.median(plain)))
    finally:
        if mnt:  # busy while the last node's shim ends: a few tries
            for _ in range(100):
                if subprocess.run(["fusermount3", "-u", mnt],
                                  capture_output=True).returncode == 0 or not os.path.ismount(mnt):
                    break
                time.sleep(0.1)
        if s3_dir:
            subprocess.run([os.path.join(ROOT, "scripts/s3.sh"), "stop", s3_dir],
                           env=dict(os.environ, JOBFS_S3_PORT=str(S3_PORT)), capture_output=True)
        if reg_dir:
            subprocess.run([os.path.join(ROOT, "scripts/registry.sh"), "stop", reg_dir],
                           env=dict(os.environ, JOBFS_REGISTRY_PORT=str(REG_PORT)),
                           capture_output=True)


if __name__ == "__main__":
    main()
