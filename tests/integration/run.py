#!/usr/bin/env python3
"""Integration tests for jobfs: mount the real filesystem, drive it with real
programs and real processes, and check what comes out.  No mocks.

    python3 tests/integration/run.py [-k SUBSTRING]... [-x SUBSTRING]... [--long] [-v] [--keep]

Each test runs in its own child process with a fresh state directory and
mount point (mkdtemp under /tmp) and a hard timeout.  The daemon is
JOBFS_BIN (default build/tools/jobfs beside this repository) started as
`jobfs --state S --foreground M`; after the test it is unmounted with
`fusermount3 -u M` and must exit 0 within 10 s with no sanitizer report
(AddressSanitizer, LeakSanitizer, UBSan "runtime error:") on its stderr.

Output: one line per test, `PASS name (1.2s)`, `SKIP name: why` or
`FAIL name: why` followed by the daemon's stderr tail; then
`N passed, N failed[, N skipped]` and, after it, `failed: name: why` for
each failed test again.  Exit status 1 if anything failed.
"""
import argparse
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))

import jfit  # noqa: E402

DEFAULT_TIMEOUT = 60


def discover():
    tests = []
    for fn in sorted(os.listdir(HERE)):
        if not (fn.startswith("test_") and fn.endswith(".py")):
            continue
        modname = fn[:-3]
        mod = importlib.import_module(modname)
        funcs = [(getattr(mod, n).__code__.co_firstlineno, n) for n in dir(mod)
                 if n.startswith("test_") and callable(getattr(mod, n))]
        for _, n in sorted(funcs):
            f = getattr(mod, n)
            tests.append({
                "id": "%s:%s" % (modname, n),
                "name": "%s.%s" % (modname[len("test_"):], n[len("test_"):]),
                "timeout": getattr(f, "jfit_timeout", DEFAULT_TIMEOUT),
                "long": getattr(f, "jfit_long", False),
            })
    return tests


# ------------------------------------------------------------ child side

def child_main(test_id, tmp, long):
    """Run one test in this process; write tmp/result.json."""
    sys.path.insert(0, HERE)
    modname, fname = test_id.split(":")
    mod = importlib.import_module(modname)
    fn = getattr(mod, fname)
    env = jfit.Env(tmp, long=long)
    # a module may pin options of every daemon it mounts (DAEMON_ARGS)
    env.daemon_args = list(getattr(mod, "DAEMON_ARGS", []))
    result = run_guarded(lambda: (env.start(), fn(env)))
    # always unmount and check the daemons; the test's own failure comes first
    after = run_guarded(env.finish)
    if result["status"] != "FAIL" and after["status"] == "FAIL":
        result = after
    elif result["status"] == "FAIL" and after["status"] == "FAIL":
        result["why"] += "; then at unmount: " + after["why"]
    with open(os.path.join(tmp, "result.json"), "w") as f:
        json.dump(result, f)
    return 0


def run_guarded(fn):
    try:
        fn()
        return {"status": "PASS"}
    except jfit.Skip as e:
        return {"status": "SKIP", "why": str(e)}
    except jfit.TestFailure as e:
        return {"status": "FAIL", "why": str(e), "where": tb_where(e)}
    except Exception as e:  # noqa: BLE001 - any error fails the test
        return {"status": "FAIL", "why": "%s: %s" % (type(e).__name__, e), "where": tb_where(e)}


def tb_where(e):
    frames = traceback.extract_tb(e.__traceback__)
    frames = [f for f in frames if os.path.basename(f.filename).startswith("test_")]
    if not frames:
        frames = traceback.extract_tb(e.__traceback__)[-1:]
    return "; ".join("%s:%d" % (os.path.basename(f.filename), f.lineno) for f in frames)


# ----------------------------------------------------------- parent side

def proc_cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def kill_leftovers(tmp):
    """SIGKILL every process whose command line names this test's tmp dir
    (daemons, jobfs-shim supervisors; their children die with the shim)."""
    mine = tmp.encode()
    me = os.getpid()
    for _ in range(3):
        found = False
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == me:
                continue
            try:
                with open("/proc/%s/comm" % d) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if not (comm.startswith("jobfs") or comm == "runuser"):
                continue
            argv = proc_cmdline(int(d))
            if any(mine in a for a in argv):
                found = True
                try:
                    os.kill(int(d), signal.SIGKILL)
                except OSError:
                    pass
        if not found:
            return
        time.sleep(0.1)


def mounts_under(tmp, with_dev=False):
    """Mount points at or below tmp (from /proc/self/mountinfo)."""
    out = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                mp = fields[4].replace("\\040", " ")
                if mp == tmp or mp.startswith(tmp + "/"):
                    major, minor = fields[2].split(":")
                    # fusectl's name: the kernel's dev_t, major << 20 | minor
                    out.append((mp, int(major) << 20 | int(minor)) if with_dev else mp)
    except OSError:
        pass
    return out


def abort_connections(tmp):
    """Abort the FUSE connections under tmp (fusectl): a daemon deadlocked
    with a process stuck in an uninterruptible FUSE request (FLUSH waits
    even through SIGKILL) is cut loose this way and nothing else."""
    ctl = "/sys/fs/fuse/connections"
    for mp, dev in mounts_under(tmp, with_dev=True):
        if not os.listdir(ctl) and os.geteuid() == 0:
            subprocess.run(["mount", "-t", "fusectl", "none", ctl], capture_output=True)
        try:
            with open(os.path.join(ctl, str(dev), "abort"), "w") as f:
                f.write("1")
        except OSError:
            pass


def cleanup(tmp, keep):
    """Detach mounts, kill leftovers, then remove tmp - never through a mount."""
    if mounts_under(tmp):
        abort_connections(tmp)
    for mp in mounts_under(tmp):
        subprocess.run(["fusermount3", "-u", "-z", mp], capture_output=True)
        subprocess.run(["umount", "-l", mp], capture_output=True)
    kill_leftovers(tmp)
    if mounts_under(tmp):
        return "still mounted: %s" % mounts_under(tmp)
    if not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return None


def daemon_pids(tmp):
    try:
        with open(os.path.join(tmp, "daemons.json")) as f:
            return [d["pid"] for d in json.load(f) if d.get("pid")]
    except (OSError, ValueError):
        return []


def daemon_tails(tmp, n=25):
    out = []
    try:
        with open(os.path.join(tmp, "daemons.json")) as f:
            ds = json.load(f)
    except (OSError, ValueError):
        return ""
    for i, d in enumerate(ds, 1):
        try:
            with open(d["stderr"], "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            continue
        if lines:
            out.append("    --- daemon %d stderr (last %d lines):" % (i, min(n, len(lines))))
            out.extend("    " + l for l in lines[-n:])
    return "\n".join(out)


def run_one(t, args):
    tmp = tempfile.mkdtemp(prefix="jobfs-it-")
    os.chmod(tmp, 0o755)
    t0 = time.monotonic()
    cmd = [sys.executable, os.path.abspath(__file__), "--child", t["id"], tmp]
    if args.long:
        cmd.append("--long")
    proc = subprocess.Popen(cmd, start_new_session=True, cwd=HERE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        out, _ = proc.communicate(timeout=t["timeout"])
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        # a hang: what every daemon's threads wait in, before anything is killed
        hang_stacks = jfit.all_stacks(daemon_pids(tmp))
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            out, _ = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            # stuck in a FUSE request that even SIGKILL cannot end
            abort_connections(tmp)
            try:
                out, _ = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                out = b"test process would not die (uninterruptible FUSE wait)"
    dt = time.monotonic() - t0
    result = None
    try:
        with open(os.path.join(tmp, "result.json")) as f:
            result = json.load(f)
    except (OSError, ValueError):
        pass
    if timed_out:
        result = {"status": "FAIL", "why": "timed out after %d s; the daemons' threads:\n%s"
                  % (t["timeout"], hang_stacks)}
    elif result is None:
        result = {"status": "FAIL", "why": "test process exited %s without a result"
                  % proc.returncode}
    tails = daemon_tails(tmp)
    stuck = cleanup(tmp, args.keep or (result["status"] == "FAIL" and args.keep_failed))
    if stuck and result["status"] == "PASS":
        result = {"status": "FAIL", "why": stuck}
    result["secs"] = dt
    result["output"] = (out or b"").decode("utf-8", "replace")
    result["tails"] = tails
    result["tmp"] = tmp
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", action="append", default=[], metavar="SUBSTRING",
                    help="run only tests whose name contains SUBSTRING (repeatable)")
    ap.add_argument("-x", action="append", default=[], metavar="SUBSTRING",
                    help="skip tests whose name contains SUBSTRING (repeatable; after -k)")
    ap.add_argument("--long", action="store_true", help="also run the long variants")
    ap.add_argument("-v", action="store_true", help="print test output even on PASS")
    ap.add_argument("--keep", action="store_true", help="keep every test's temp dir")
    ap.add_argument("--keep-failed", action="store_true", help="keep failed tests' temp dirs")
    ap.add_argument("--list", action="store_true", help="list the tests and exit")
    ap.add_argument("--child", nargs=2, metavar=("TEST", "TMP"), help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        sys.path.insert(0, HERE)
        return child_main(args.child[0], args.child[1], args.long)

    sys.path.insert(0, HERE)
    tests = discover()
    if args.k:
        tests = [t for t in tests if any(k in t["name"] or k in t["id"] for k in args.k)]
    if args.x:
        tests = [t for t in tests if not any(x in t["name"] or x in t["id"] for x in args.x)]
    if not args.long:
        tests = [t for t in tests if not t["long"]]
    if args.list:
        for t in tests:
            print(t["name"])
        return 0

    binpath = jfit.jobfs_bin()
    os.environ["JOBFS_BIN"] = binpath        # absolute, for the per-test children
    if not os.access(binpath, os.X_OK):
        print("FAIL setup: %s is not an executable (set JOBFS_BIN)" % binpath)
        print("0 passed, 1 failed")
        return 1
    for prog in ("fusermount3",):
        if not shutil.which(prog):
            print("FAIL setup: %s not found" % prog)
            print("0 passed, 1 failed")
            return 1
    print("jobfs: %s" % binpath, flush=True)

    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    failed = []
    t_start = time.monotonic()
    for t in tests:
        r = run_one(t, args)
        counts[r["status"]] += 1
        if r["status"] == "PASS":
            print("PASS %s (%.1fs)" % (t["name"], r["secs"]), flush=True)
        elif r["status"] == "SKIP":
            print("SKIP %s: %s" % (t["name"], r["why"]), flush=True)
        else:
            where = (" [%s]" % r["where"]) if r.get("where") else ""
            failed.append("%s: %s%s" % (t["name"], r["why"][:200], where))
            print("FAIL %s: %s%s (%.1fs)" % (t["name"], r["why"], where, r["secs"]), flush=True)
            if r["tails"]:
                print(r["tails"])
            if args.keep_failed or args.keep:
                print("    kept: %s" % r["tmp"])
        if r["output"].strip() and (args.v or r["status"] == "FAIL"):
            for line in r["output"].rstrip().splitlines()[-40:]:
                print("    | " + line)
        sys.stdout.flush()
    total = time.monotonic() - t_start
    print("# %d tests in %.1fs" % (len(tests), total))
    line = "%d passed, %d failed" % (counts["PASS"], counts["FAIL"])
    if counts["SKIP"]:
        line += ", %d skipped" % counts["SKIP"]
    print(line)
    # the names again after the count, where a log's last lines (all that
    # a CI report may show) still hold them
    for f in failed:
        print("failed: " + f)
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
