#!/usr/bin/env python3
"""bench_top - does `jobfsctl top` load the daemon it watches? (reference 11)

    python3 tests/bench/bench_top.py [BUILD_DIR] [--tasks 1000] [--seconds 10] [--rounds 4]
                                        [--scenarios steady,churn]

Mounts a fresh jobfs (BUILD_DIR/tools/jobfs, default build) on a cluster of
ten 160-core machines and runs a group of --tasks tasks at once, in two
scenarios, each on its own fresh mount:

  steady:  every task sleeps an hour: 1,000 running, nothing ends;
  churn:   each sleeps 10-190 s and the next takes its place (about five
           tasks end and start a second: the group's status changes all
           the time, so top refreshes as often as it may).

In each it measures, from /proc/PID/stat (utime + stime of the daemon's
threads and its jobfs-touch helper) and /proc/PID/io (top's read calls),
in --rounds rounds of three phases of --seconds each, interleaved so that a
drift of the load falls on all three alike:

  (a) the daemon with nobody watching;
  (b) the daemon while `jobfsctl top` runs in tmux (200x50) on the main
      view, and top's own CPU and reads;
  (c) the same with top in the group's view (its tasks on screen).

Everything it starts it stops (the group, tmux, the mount).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CLUSTER = """\
name: bench
models:
  - name: "4090"
    vram: 24Gi
    cpu_per_gpu: 20
    memory_per_gpu: 101Gi
    price: {on-demand: "3.60", spot: "1.08"}
machines:
  - {name: big, model: "4090", gpus: 8, count: 10}
"""

SPEC = """\
completions: %d
parallelism: %d
resources: {limits: {cpu: 100m, memory: 64Mi}}
command: ["/bin/sh", "-c"]
args: ["exec sleep %s"]
"""
SLEEP = {"steady": "3600", "churn": "$(( 10 + (JOB_TASK_INDEX * 7919) % 181 ))"}

TICK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime
    except (OSError, IndexError, ValueError):
        return 0


def syscr(pid):
    """read(2) calls the process has made (/proc/PID/io)."""
    try:
        with open("/proc/%d/io" % pid) as f:
            return int(dict(l.split(": ") for l in f.read().splitlines())["syscr"])
    except (OSError, KeyError, ValueError):
        return 0


def children(pid):
    out = []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def daemon_ticks(pid):
    return cpu_ticks(pid) + sum(cpu_ticks(c) for c in children(pid))


def status(mnt, path):
    with open(os.path.join(mnt, path, "status.json")) as f:
        return json.load(f)


def measure(seconds, pids):
    """CPU of each pid group over seconds, as a fraction of one core."""
    t0 = time.monotonic()
    a = [f() for f in pids]
    time.sleep(seconds)
    b = [f() for f in pids]
    dt = time.monotonic() - t0
    return [(y - x) / TICK / dt for x, y in zip(a, b)]


def scenario(args, kind):
    jobfs = os.path.abspath(os.path.join(args.build, "tools", "jobfs"))
    ctl = os.path.abspath(os.path.join(args.build, "tools", "jobfsctl"))
    tmp = tempfile.mkdtemp(prefix="jobfs-bench-top.")
    state, mnt = os.path.join(tmp, "state"), os.path.join(tmp, "mnt")
    os.makedirs(state)
    os.makedirs(mnt)
    cluster = os.path.join(tmp, "cluster.yaml")
    with open(cluster, "w") as f:
        f.write(CLUSTER)
    sock = os.path.join(tmp, "tmux.sock")
    log = open(os.path.join(tmp, "daemon.log"), "wb")
    d = subprocess.Popen([jobfs, "--state", state, "--foreground", "--cluster", cluster, mnt],
                         stdout=log, stderr=log, start_new_session=True)
    g = "queues/q/groups/g"
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(os.path.join(mnt, "README")):
            if d.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("bench_top: the daemon did not mount (%s)" % tmp)
            time.sleep(0.05)
        os.mkdir(os.path.join(mnt, "queues/q"))
        os.mkdir(os.path.join(mnt, g))
        with open(os.path.join(mnt, g, "spec.yaml"), "w") as f:
            f.write(SPEC % (args.tasks * 1000, args.tasks, SLEEP[kind]))
        deadline = time.monotonic() + 300
        while status(mnt, g)["running"] < args.tasks:
            if time.monotonic() > deadline:
                raise SystemExit("bench_top: %d of %d running after 300 s"
                                 % (status(mnt, g)["running"], args.tasks))
            time.sleep(1)
        if kind == "churn":
            while status(mnt, g)["succeeded"] < 20:   # the first ends: churn
                time.sleep(1)
        else:
            time.sleep(5)
        dpid = d.pid
        r = dict(a=0.0, b=0.0, bt=0.0, br=0.0, c=0.0, ct=0.0, cr=0.0)
        n = args.rounds
        for _ in range(n):
            (x,) = measure(args.seconds, [lambda: daemon_ticks(dpid)])
            r["a"] += x / n
            subprocess.run(["tmux", "-S", sock, "new-session", "-d", "-x", "200", "-y", "50",
                            "-s", "top", "env", "TERM=xterm-256color", "JOBFS_MOUNT=" + mnt,
                            ctl, "top"], check=True)
            tpid = int(subprocess.run(["tmux", "-S", sock, "list-panes", "-t", "top", "-F",
                                       "#{pane_pid}"], capture_output=True, text=True,
                                      check=True).stdout.split()[0])
            time.sleep(1)
            for phase in ("b", "c"):
                x, y, z = measure(args.seconds, [lambda: daemon_ticks(dpid),
                                                 lambda: cpu_ticks(tpid),
                                                 lambda: syscr(tpid) * TICK])
                r[phase] += x / n
                r[phase + "t"] += y / n
                r[phase + "r"] += z / n
                if phase == "b":
                    subprocess.run(["tmux", "-S", sock, "send-keys", "-t", "top", "Down",
                                    "Enter"], check=True)
                    time.sleep(1)
            shot = subprocess.run(["tmux", "-S", sock, "capture-pane", "-p", "-t", "top"],
                                  capture_output=True, text=True).stdout
            if "TASK" not in shot:
                print("bench_top: the group's view was not on screen:\n" + shot,
                      file=sys.stderr)
            subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
            time.sleep(0.5)
        r["progress"] = status(mnt, g)["progress"]
        return r
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
        try:
            with open(os.path.join(mnt, g, "ctl"), "w") as f:
                f.write("stop\n")
            deadline = time.monotonic() + 120
            while status(mnt, g)["running"] > 0 and time.monotonic() < deadline:
                time.sleep(0.5)
        except OSError:
            pass
        subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
        try:
            d.wait(30)
        except subprocess.TimeoutExpired:
            d.send_signal(signal.SIGKILL)
            d.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--scenarios", default="steady,churn")
    args = ap.parse_args()
    res = {k: scenario(args, k) for k in args.scenarios.split(",")}
    print("jobfsctl top watching %d running tasks, %d x %.0f s per phase, CPU in %% of one core"
          % (args.tasks, args.rounds, args.seconds))
    print("  %-38s %9s %9s %9s %12s" % ("", "scenario", "daemon", "top", "top reads/s"))
    for k, r in res.items():
        print("  %-38s %9s %8.1f%% %9s %12s" % ("(a) nobody watching", k, r["a"] * 100, "-", "-"))
        print("  %-38s %9s %8.1f%% %8.1f%% %12.0f" % ("(b) jobfsctl top, main view", k,
                                                       r["b"] * 100, r["bt"] * 100, r["br"]))
        print("  %-38s %9s %8.1f%% %8.1f%% %12.0f" % ("(c) jobfsctl top, the group's tasks", k,
                                                       r["c"] * 100, r["ct"] * 100, r["cr"]))
    for k, r in res.items():
        print("  %s (%s done by the end): the daemon's CPU with top %+.1f (main view), "
              "%+.1f (group view) points of a core" % (k, r["progress"], (r["b"] - r["a"]) * 100,
                                                      (r["c"] - r["a"]) * 100))


if __name__ == "__main__":
    main()
