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

Usage: python3 tests/bench/bench_storage.py BUILD_DIR [--n N] [--objects K]
As root, with crun, docker-registry, skopeo, umoci and Ceph's radosgw
installed; it starts a registry (scripts/registry.sh, port 15400) and an
S3 endpoint (scripts/s3.sh, port 17880) and stops both by PID at the end.
"""
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

REG_PORT = 15400
S3_PORT = 17880


def s3_start(tmp):
    d = os.path.join(tmp, "s3")
    os.makedirs(d)
    env = dict(os.environ, JOBFS_S3_PORT=str(S3_PORT))
    out = subprocess.run([os.path.join(ROOT, "scripts/s3.sh"), "start", d], env=env,
                         capture_output=True, text=True, check=True).stdout
    return d, dict(l.split("=", 1) for l in out.split() if "=" in l)


def starts(mnt, state, tag, spec, n):
    q = os.path.join(mnt, "queues", "bench")
    os.makedirs(q, exist_ok=True)
    out = []
    runs = os.path.join(state, "runs")
    for i in range(-1, n):  # -1: a warm-up, not timed (it makes STATE/runs)
        g = os.path.join(q, "groups", "%s-%d" % (tag, i + 1))
        os.mkdir(g)
        if i < 0:
            with open(os.path.join(g, "spec.yaml"), "w") as f:
                f.write(spec)
            wait_text(os.path.join(g, "tasks/0/nodes/0/logs"), "go", timeout=120)
            idle()
            continue
        fd = os.open(os.path.join(g, "spec.yaml"), os.O_WRONLY | os.O_TRUNC)
        os.write(fd, spec.encode())
        ino = Inotify()
        ino.watch(runs, Inotify.IN_CREATE)
        t0 = time.monotonic()
        os.close(fd)
        t1 = first_output(ino, runs, "go")
        ino.close()
        out.append(t1 - t0)
        wait_text(os.path.join(g, "tasks/0/nodes/0/logs"), "go", timeout=120)
        idle()
    return out


def main():
    args = sys.argv[1:]
    if not args:
        raise SystemExit(__doc__)
    build = os.path.abspath(args[0])
    n = int(args[args.index("--n") + 1]) if "--n" in args else 15
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
        rows = []
        plain = starts(mnt, state, "plain", base, n)
        vol = starts(mnt, state, "vol", base + "storage:\n- {type: volume, name: v, path: /v}\n"
                     "- {type: emptydir, path: /s, size: 1Gi}\n"
                     "- {type: emptydir, path: /m, medium: Memory, size: 64Mi}\n", n)
        obj = starts(mnt, state, "obj", base + "storage:\n- {type: object, name: w, path: /w}\n", n)
        # the listing alone: jobfs-sync of a copy of the warm cache
        cache = os.path.join(state, "objects", "w")
        copy = os.path.join(tmp, "cache-copy")
        subprocess.run(["cp", "-a", cache, copy], check=True)
        lst = []
        for _ in range(n):
            t0 = time.monotonic()
            subprocess.run([os.path.join(build, "tools/jobfs-sync"), "--endpoint",
                            s3["JOBFS_S3_ENDPOINT"], "--bucket", "bench-warm", "--prefix", "w",
                            "--credentials", s3["JOBFS_S3_CREDENTIALS"], copy],
                           check=True, capture_output=True)
            lst.append(time.monotonic() - t0)
        rows = [("plain", plain), ("volume+2 emptydirs", vol),
                ("object (%d, warm)" % objects, obj), ("listing alone", lst)]
        print("storage start times (ms), %d runs each, one machine, one run" % n)
        print("%-24s %8s %8s" % ("", "p50", "p99"))
        for name, xs in rows:
            print("%-24s %8s %8s" % (name, ms(statistics.median(xs)), ms(pct(xs, 99))))
        added = statistics.median(obj) - statistics.median(plain)
        print("object - plain (p50) %s ms; listing alone %s ms: %s" % (
            ms(added), ms(statistics.median(lst)),
            "met" if added <= statistics.median(lst) * 1.1 else "NOT met"))
        print("volume+emptydirs - plain (p50) %s ms" % ms(statistics.median(vol) -
                                                         statistics.median(plain)))
    finally:
        if mnt:
            subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
        if s3_dir:
            subprocess.run([os.path.join(ROOT, "scripts/s3.sh"), "stop", s3_dir],
                           env=dict(os.environ, JOBFS_S3_PORT=str(S3_PORT)), capture_output=True)
        if reg_dir:
            subprocess.run([os.path.join(ROOT, "scripts/registry.sh"), "stop", reg_dir],
                           env=dict(os.environ, JOBFS_REGISTRY_PORT=str(REG_PORT)),
                           capture_output=True)


if __name__ == "__main__":
    main()
