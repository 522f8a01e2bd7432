#!/usr/bin/env python3
"""The object-store cache's benchmark (reference 8.3), side by side in one
run against a loopback radosgw (scripts/s3.sh):

  cold, small   1,000 objects of 1 MiB into an empty cache
  cold, large   10 objects of 100 MiB into an empty cache
  warm          the same 1,000 objects again with nothing changed (one
                listing, no GET for jobfs-sync)

each by build/tools/jobfs-sync (16 downloads at once, its default) and by
`rclone copy s3:BUCKET/PREFIX DIR` (rclone's defaults: 4 transfers, and
again with --transfers 16 --checkers 16), the median of N runs (default 3)
and jobfs-sync's time as a ratio of each rclone's (below 1: faster).
Every cold run starts from an empty directory, after one untimed run that
reads every object once (the endpoint's first read of objects just put is
slower); runs alternate between the tools, and `sync` runs (untimed) before each, so that no run writes back
the one before it.  jobfs-sync's time includes its syncfs() before the
commit (the downloads on disk before the manifest names them); rclone
does not sync, so its time with a `sync` after it is shown too ("+sync":
the same durability).

Usage: python3 tests/bench/bench_objsync.py [BUILD_DIR] [--n N] [--dir DIR]
With JOBFS_S3_ENDPOINT (and the other variables of `scripts/s3.sh env`)
set, that endpoint is used; else an endpoint is started on port 17680
(JOBFS_S3_STORE_MB=4096, objects in RAM) and stopped by PID at the end.
The objects are put once into the bucket jobfs-bench (bench-small/,
bench-large/) and kept there.  --dir: where the caches go (default a
directory under /tmp; both tools write to the same disk).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))
import s3util  # noqa: E402

BUCKET = "jobfs-bench"
CASES = [("small", "bench-small", 1000, 1 << 20), ("large", "bench-large", 10, 100 << 20)]


def endpoint(tmp):
    """The S3 variables: from the environment, or a fresh scripts/s3.sh."""
    if os.environ.get("JOBFS_S3_ENDPOINT"):
        return None
    d = os.path.join(tmp, "s3")
    os.makedirs(d)
    env = dict(os.environ, JOBFS_S3_PORT="17680", JOBFS_S3_STORE_MB="4096")
    out = subprocess.run([os.path.join(ROOT, "scripts/s3.sh"), "start", d], env=env,
                         capture_output=True, text=True, check=True).stdout
    for line in out.split():
        if "=" in line:
            k, v = line.split("=", 1)
            os.environ[k] = v
    return d


def fill(c):
    """Put the objects once (kept in the bucket for later runs)."""
    c.make_bucket(BUCKET, exist_ok=True)
    have = {}
    for o in c.list(BUCKET, "bench-"):
        have[o["key"]] = o["size"]
    for _, prefix, count, size in CASES:
        keys = ["%s/obj-%05d.bin" % (prefix, i) for i in range(count)]
        if all(have.get(k) == size for k in keys):
            continue
        print("putting %d objects of %d MiB under %s/ ..." % (count, size >> 20, prefix),
              flush=True)
        c.fill(BUCKET, prefix, count, size, jobs=16 if size <= (8 << 20) else 4)


def timed(argv, env=None):
    """(seconds of argv, seconds of a sync after it); a sync before, untimed"""
    os.sync()
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("%s failed (%d): %s" % (argv[0], p.returncode, p.stderr[-2000:]))
    os.sync()
    return dt, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    sync = os.path.join(a.build, "tools", "jobfs-sync")
    if not os.access(sync, os.X_OK):
        sys.exit("%s is not built" % sync)
    if not shutil.which("rclone"):
        sys.exit("rclone is not installed (scripts/deps.sh bench)")
    tmp = tempfile.mkdtemp(prefix="bench-objsync-", dir=a.dir)
    s3dir = None
    try:
        s3dir = endpoint(tmp)
        c = s3util.S3.from_env()
        fill(c)
        ep = os.environ["JOBFS_S3_ENDPOINT"]
        creds = os.environ["JOBFS_S3_CREDENTIALS"]
        renv = dict(os.environ, RCLONE_CONFIG_S3_TYPE="s3", RCLONE_CONFIG_S3_PROVIDER="Ceph",
                    RCLONE_CONFIG_S3_ENDPOINT=ep,
                    RCLONE_CONFIG_S3_ACCESS_KEY_ID=os.environ["JOBFS_S3_ACCESS_KEY"],
                    RCLONE_CONFIG_S3_SECRET_ACCESS_KEY=os.environ["JOBFS_S3_SECRET_KEY"],
                    RCLONE_CONFIG=os.path.join(tmp, "rclone.conf"))
        renv.pop("AWS_CA_BUNDLE", None)  # rclone 1.60 cannot load one for plain http
        rclone_variants = [("rclone", []),
                           ("rclone -t16", ["--transfers", "16", "--checkers", "16"])]

        def jobfs(d, prefix):
            return timed([sync, "--endpoint", ep, "--bucket", BUCKET, "--prefix", prefix,
                          "--credentials", creds, d])[0]

        def rclone(d, prefix, extra, synced=None):
            t, ts = timed(["rclone", "copy"] + extra + ["s3:%s/%s" % (BUCKET, prefix), d],
                          env=renv)
            if synced is not None:
                synced.append(ts)
            return t

        rows = []
        for name, prefix, count, size in CASES:
            # untimed: the endpoint's first read of what was just put is slower
            d = os.path.join(tmp, "warm-up")
            jobfs(d, prefix)
            shutil.rmtree(d)
            times = {"jobfs-sync": []}
            times.update({v: [] for v, _ in rclone_variants})
            times.update({v + " +sync": [] for v, _ in rclone_variants})
            for i in range(a.n):
                d = os.path.join(tmp, "j-%s-%d" % (name, i))
                times["jobfs-sync"].append(jobfs(d, prefix))
                for v, extra in rclone_variants:
                    rd = os.path.join(tmp, "r-%s-%s-%d" % (name, v.replace(" ", ""), i))
                    times[v].append(rclone(rd, prefix, extra, times[v + " +sync"]))
                    shutil.rmtree(rd)
                if not (name == "small" and i == a.n - 1):
                    shutil.rmtree(d)
            rows.append(("cold %d x %d MiB" % (count, size >> 20), count * size, times))
        # warm: the last small cache again, nothing changed
        d = os.path.join(tmp, "j-small-%d" % (a.n - 1))
        times = {"jobfs-sync": [jobfs(d, "bench-small") for _ in range(a.n)]}
        for v, extra in rclone_variants:
            rd = os.path.join(tmp, "r-warm-%s" % v.replace(" ", ""))
            rclone(rd, "bench-small", extra)
            times[v] = [rclone(rd, "bench-small", extra) for _ in range(a.n)]
        rows.append(("warm 1000 x 1 MiB, unchanged", 0, times))

        cols = ["rclone", "rclone -t16", "rclone +sync", "rclone -t16 +sync"]
        print("\n%-30s %11s" % ("median of %d" % a.n, "jobfs-sync")
              + "".join(" %18s" % c for c in cols))
        for what, nbytes, t in rows:
            j = statistics.median(t["jobfs-sync"])
            line = "%-30s %10.2fs" % (what, j)
            rate = "%-30s %9.0fMB/s" % ("", nbytes / j / 1e6) if nbytes else ""
            for c in cols:
                if not t.get(c):
                    line += " %18s" % "-"
                    continue
                r = statistics.median(t[c])
                line += " %8.2fs (x%5.2f)" % (r, j / r)
                if nbytes:
                    rate += " %14.0fMB/s" % (nbytes / r / 1e6)
            print(line)
            if rate:
                print(rate)
        print("(xN: jobfs-sync's time over that one's; below 1, jobfs-sync is faster)")
        print("\nall runs (s):")
        for what, _, t in rows:
            print("  %s: %s" % (what, ", ".join("%s %s" % (k, " ".join("%.2f" % x for x in v))
                                                for k, v in t.items())))
    finally:
        if s3dir:
            subprocess.run([os.path.join(ROOT, "scripts/s3.sh"), "stop", s3dir],
                           capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
