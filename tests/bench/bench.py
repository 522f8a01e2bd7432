#!/usr/bin/env python3
"""jobfs benchmarks, each printed beside a baseline measured in the same run.

1. spec close() -> first process started, p50/p99 over N submissions, beside
   the same command started directly by this script (fork+exec baseline).
2. stat()+read() of a `status` file per second, beside the same on a trivial
   FUSE file (tests/bench/hellofs, same timeouts, same loop) and on tmpfs.

Usage: bench.py BUILD_DIR [--n 50] [--seconds 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def wait_for(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.005)
    raise SystemExit("bench: timed out waiting for " + what)


def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def mount(cmd, mnt, probe):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(lambda: os.path.exists(os.path.join(mnt, probe)), 10, "mount of " + cmd[0])
    return proc


def unmount(proc, mnt):
    subprocess.run(["fusermount3", "-u", mnt], check=False)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def stat_read_rate(path, seconds):
    n = 0
    lat = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.perf_counter()
        os.stat(path)
        with open(path, "rb") as f:
            f.read()
        lat.append(time.perf_counter() - t)
        n += 1
    return n / seconds, pct(lat, 50) * 1e6, pct(lat, 99) * 1e6


def marker_cmd(out):
    # the first thing the started process does is record the time
    return ["/bin/sh", "-c", 'date +%s.%N > "$OUT"']


def bench_submit(mnt, tmp, n):
    lat, base = [], []
    for i in range(n):
        out = os.path.join(tmp, "m%d" % i)
        d = os.path.join(mnt, "tasks", "b%d" % i)
        os.mkdir(d)
        spec = ('command: ["/bin/sh", "-c"]\nargs: [\'date +%%s.%%N > "$OUT"\']\n'
                'env: {OUT: "%s"}\n' % out)
        f = open(os.path.join(d, "spec.yaml"), "w")
        f.write(spec)
        t0 = time.time()
        f.close()
        wait_for(lambda: os.path.exists(out) and os.path.getsize(out) > 0, 10, "task start")
        lat.append(float(open(out).read()) - t0)
        # baseline: the same command started directly
        out2 = out + ".direct"
        t0 = time.time()
        subprocess.Popen(marker_cmd(out2), env={"OUT": out2, "PATH": os.environ["PATH"]}).wait()
        base.append(float(open(out2).read()) - t0)
    return lat, base


def group_state(g):
    for line in open(os.path.join(g, "status")):
        if line.startswith("state:"):
            return line.split(":", 1)[1].strip()
    return ""


def bench_throughput(mnt, tasks, par):
    """tasks trivial tasks (/bin/true) at parallelism par through the mount:
    seconds from the spec's close() to the group's Succeeded."""
    q = os.path.join(mnt, "queues", "bench")
    os.mkdir(q)
    g = os.path.join(q, "groups", "t%d" % tasks)
    os.mkdir(g)
    f = open(os.path.join(g, "spec.yaml"), "w")
    f.write('completions: %d\nparallelism: %d\ncommand: ["/bin/true"]\n' % (tasks, par))
    t0 = time.time()
    f.close()
    while True:
        st = group_state(g)
        if st in ("Succeeded", "Failed", "Stopped"):
            break
        time.sleep(0.02)
    took = time.time() - t0
    if st != "Succeeded":
        raise SystemExit("throughput group ended %s" % st)
    return took


def bench_notify(mnt, tmp, n):
    """From a task's own last act (its clock, written to a file) to the
    inotify event on its status file that says it changed: the tree's
    promise is within a second.  Needs inotifywait (inotify-tools)."""
    lat = []
    q = os.path.join(mnt, "queues", "notify")
    os.mkdir(q)
    for i in range(n):
        g = os.path.join(q, "groups", "n%d" % i)
        os.mkdir(g)
        out = os.path.join(tmp, "end%d" % i)
        with open(os.path.join(g, "spec.yaml"), "w") as f:
            f.write('command: ["/bin/sh", "-c", \'sleep 0.3; date +%%s.%%N > %s\']\n' % out)
        t = os.path.join(g, "tasks", "0")
        wait_for(lambda: os.path.exists(os.path.join(t, "status")) and
                 group_state(g) in ("Running", "Succeeded"), 10, "task to run")
        iw = subprocess.Popen(["inotifywait", "-m", "-q", "--format", "%e",
                               "-e", "modify,attrib,close_write", os.path.join(t, "status")],
                              stdout=subprocess.PIPE, text=True)
        time.sleep(0.1)   # its watch is set before the task ends (0.3 s)
        got = None
        # the first event after which its status says it ended (others say
        # it started, or that its logs grew)
        for line in iw.stdout:
            t_ev = time.time()
            if "Succeeded" in open(os.path.join(t, "status")).read():
                got = t_ev
                break
        iw.kill()
        iw.wait()
        wait_for(lambda: os.path.exists(out) and os.path.getsize(out) > 0, 10, "task end")
        if got is not None:
            lat.append(got - float(open(out).read()))
    return lat


def floor_seconds(build, tasks, par):
    out = subprocess.run([os.path.join(build, "tests", "bench", "spawn_floor"), str(tasks),
                          str(par), "/bin/true"], check=True, capture_output=True, text=True)
    return float(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--parallelism", type=int, default=10)
    ap.add_argument("--only-throughput", action="store_true")
    a = ap.parse_args()
    jobfs = os.path.join(a.build, "tools", "jobfs")
    hello = os.path.join(a.build, "tests", "bench", "hellofs")
    tmp = tempfile.mkdtemp(prefix="jobfs-bench.")
    mnt, hmnt, state = (os.path.join(tmp, x) for x in ("mnt", "hmnt", "state"))
    for d in (mnt, hmnt):
        os.mkdir(d)
    shm = tempfile.mkdtemp(prefix="jobfs-bench.", dir="/dev/shm")
    j = mount([jobfs, "--state", state, "--foreground", mnt], mnt, "README")
    h = mount([hello, "-f", hmnt], hmnt, "status")
    try:
        floor = floor_seconds(a.build, a.tasks, a.parallelism)
        took = bench_throughput(mnt, a.tasks, a.parallelism)
        print("%d trivial tasks (/bin/true) at parallelism %d" % (a.tasks, a.parallelism))
        print("  %-28s %10s %10s %10s" % ("", "seconds", "tasks/s", "x floor"))
        print("  %-28s %10.2f %10.0f %10.2f" % ("jobfs (close -> Succeeded)", took,
                                                 a.tasks / took, took / floor))
        print("  %-28s %10.2f %10.0f %10.2f" % ("floor: posix_spawn+wait", floor,
                                                 a.tasks / floor, 1.0))
        sys.stdout.flush()
        if a.only_throughput:
            return 0
        notify = bench_notify(mnt, tmp, 10)
        lat, base = bench_submit(mnt, tmp, a.n)
        # a finished independent task's status, and a live queue's
        status = os.path.join(mnt, "tasks", "b0", "status")
        with open(os.path.join(shm, "status"), "wb") as f:
            f.write(open(status, "rb").read())
        rates = [
            ("jobfs status", stat_read_rate(status, a.seconds)),
            ("hellofs (trivial FUSE)", stat_read_rate(os.path.join(hmnt, "status"), a.seconds)),
            ("tmpfs", stat_read_rate(os.path.join(shm, "status"), a.seconds)),
        ]
    finally:
        unmount(j, mnt)
        unmount(h, hmnt)
    print("spec close() -> first process started (%d submissions)" % a.n)
    print("  %-28s %10s %10s" % ("", "p50 ms", "p99 ms"))
    print("  %-28s %10.2f %10.2f" % ("jobfs", pct(lat, 50) * 1e3, pct(lat, 99) * 1e3))
    print("  %-28s %10.2f %10.2f" % ("baseline: fork+exec here", pct(base, 50) * 1e3,
                                      pct(base, 99) * 1e3))
    print("a task's end -> inotify event on its status (%d tasks)" % len(notify))
    print("  %-28s %10s %10s" % ("", "p50 ms", "max ms"))
    print("  %-28s %10.1f %10.1f" % ("jobfs (promise: 1000)", pct(notify, 50) * 1e3,
                                      max(notify) * 1e3))
    print("stat()+read() of a status file (%.0f s each)" % a.seconds)
    print("  %-28s %10s %10s %10s" % ("", "per s", "p50 us", "p99 us"))
    for name, (rate, p50, p99) in rates:
        print("  %-28s %10.0f %10.1f %10.1f" % (name, rate, p50, p99))
    return 0


if __name__ == "__main__":
    sys.exit(main())
