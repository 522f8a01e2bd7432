#!/usr/bin/env python3
"""1,000 trivial tasks at parallelism 10, three ways, in one run (issue 6):

  (a) `sbatch --array=0-999%10 -c 1 --mem 1024 --wrap true` straight on the
      Slurm cluster (the same request per task as (b) makes)
  (b) the same as a jobfs group with --backend slurm on that cluster
  (c) the same as a jobfs group with --backend local

Each is timed from the submission (sbatch returning / the spec's close())
to the end of the last task as its submitter sees it (the array gone from
squeue / the group's status Succeeded).  Printed side by side with the
ratios the issue sets: (b)/(a) should be under 1.10, (a)/(c) 20 or more.

Usage: bench_slurm.py BUILD_DIR [--tasks 1000] [--parallelism 10]
Needs a cluster from scripts/slurm-cluster.sh (SLURM_CONF, JOBFS_SLURM_URL).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def wait_for(pred, timeout, what, every=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(every)
    raise SystemExit("bench_slurm: timed out waiting for " + what)


def slurm_direct(n, par, work):
    t0 = time.monotonic()
    r = subprocess.run(["sbatch", "--parsable", "--array=0-%d%%%d" % (n - 1, par),
                        "-p", "ondemand", "-c", "1", "--mem", "1024", "-o", "/dev/null", "-D", work,
                        "--wrap", "true"],
                       capture_output=True, text=True, check=True)
    job = r.stdout.strip().split(";")[0]

    def gone():
        q = subprocess.run(["squeue", "-h", "-j", job, "-o", "%i"], capture_output=True,
                           text=True)
        return q.returncode == 0 and not q.stdout.strip()
    wait_for(gone, 1800, "the array to finish", every=0.1)
    return time.monotonic() - t0


def jobfs_run(jobfs, args, n, par, tmp, tag):
    state = os.path.join(tmp, "state-" + tag)
    mnt = os.path.join(tmp, "mnt-" + tag)
    os.makedirs(state)
    os.makedirs(mnt)
    errf = open(os.path.join(tmp, "daemon-%s.stderr" % tag), "wb")
    proc = subprocess.Popen([jobfs, "--state", state, "--foreground"] + args + [mnt],
                            stdout=subprocess.DEVNULL, stderr=errf)
    errf.close()
    try:
        wait_for(lambda: os.path.exists(os.path.join(mnt, "README")), 20, "the mount")
        g = os.path.join(mnt, "queues", "bench", "groups", "g")
        os.makedirs(g)
        spec = 'completions: %d\nparallelism: %d\ncommand: ["true"]\n' % (n, par)
        t0 = time.monotonic()
        with open(os.path.join(g, "spec.yaml"), "w") as f:
            f.write(spec)

        def done():
            with open(os.path.join(g, "status.json")) as f:
                st = json.load(f)
            if st["state"] in ("Failed", "Stopped"):
                raise SystemExit("bench_slurm: the %s group ended %s: %s"
                                 % (tag, st["state"], st["message"]))
            return st["state"] == "Succeeded"
        wait_for(done, 1800, "the %s group to succeed" % tag, every=0.05)
        return time.monotonic() - t0
    finally:
        subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
        if proc.returncode != 0:
            with open(os.path.join(tmp, "daemon-%s.stderr" % tag), "rb") as f:
                sys.stderr.write(f.read().decode("utf-8", "replace")[-3000:])
            raise SystemExit("bench_slurm: the %s daemon exited %s" % (tag, proc.returncode))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--parallelism", type=int, default=10)
    a = ap.parse_args()
    url = os.environ.get("JOBFS_SLURM_URL")
    conf = os.environ.get("SLURM_CONF")
    if not url or not conf:
        raise SystemExit("bench_slurm: no cluster (start one with scripts/slurm-cluster.sh "
                         "start DIR and export SLURM_CONF and JOBFS_SLURM_URL)")
    jobfs = os.path.join(os.path.abspath(a.build), "tools", "jobfs")
    jobcomp = os.path.join(os.path.dirname(conf), "log", "jobcomp.txt")
    n, par = a.tasks, a.parallelism
    with tempfile.TemporaryDirectory(prefix="jobfs-bench-slurm-") as tmp:
        os.chmod(tmp, 0o755)
        ta = slurm_direct(n, par, tmp)
        sargs = ["--backend", "slurm", "--slurm", url, "--slurm-ondemand", "ondemand"]
        if os.path.exists(jobcomp):
            sargs += ["--slurm-jobcomp", jobcomp]
        tb = jobfs_run(jobfs, sargs, n, par, tmp, "slurm")
        tc = jobfs_run(jobfs, [], n, par, tmp, "local")
    print("%d trivial tasks (true) at parallelism %d, submission to the last end"
          % (n, par))
    print("  %-44s %9s %9s" % ("", "seconds", "tasks/s"))
    print("  %-44s %9.1f %9.1f" % ("(a) sbatch --array=0-%d%%%d, straight" % (n - 1, par),
                                   ta, n / ta))
    print("  %-44s %9.1f %9.1f" % ("(b) jobfs --backend slurm (same cluster)", tb, n / tb))
    print("  %-44s %9.1f %9.1f" % ("(c) jobfs --backend local", tc, n / tc))
    print("  (b)/(a) = %.3f  (target < 1.10: %s)" % (tb / ta, "met" if tb / ta < 1.10 else "NOT met"))
    print("  (a)/(c) = %.1f   (target >= 20: %s)" % (ta / tc, "met" if ta / tc >= 20 else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
