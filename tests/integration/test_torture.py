"""Crash torture (issue 5): kill -9 the daemon at random moments (seeded,
reproducible) while a mixed workload runs, at the two moments a start is
hardest to recover from (fault injection), kill supervisors and tasks, and
cut the power (a point-in-time copy of the state directory, everything else
gone).  Afterwards every task ends as it would have without the crashes, no
process ran twice where it should have run once, the database is intact, no
ledger second is lost or billed twice, and the logs are complete.

Every node appends "START group task node attempt epoch" and "END ..." lines
to a file outside the mount (O_APPEND: whole lines), so what really ran is
known whatever happens to the daemon.

JOBFS_TORTURE_SEED=N picks the seed (default 1); --long makes 50 kills."""
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import time
from decimal import Decimal

from jfit import TestFailure, case, check, pid_alive, sanitized

RUNLOG = r"""echo "START $JOB_GROUP $JOB_TASK_INDEX $JOB_NODE_INDEX $JOB_ATTEMPT $(date +%%s.%%N)" >> %(log)s
echo "hello $JOB_GROUP $JOB_TASK_INDEX $JOB_NODE_INDEX"
%(body)s
echo "END $JOB_GROUP $JOB_TASK_INDEX $JOB_NODE_INDEX $JOB_ATTEMPT $(date +%%s.%%N)" >> %(log)s
exit $rc"""


def spec(log, head, body="sleep 1; rc=0"):
    script = RUNLOG % {"log": log, "body": body}
    lines = ["  " + x for x in script.split("\n")]
    return head + 'command: ["/bin/sh", "-c"]\nargs:\n  - |\n' + "\n".join("  " + x for x in lines) + "\n"


def runs(log):
    """{(group, task, node, attempt): {"start": t, "end": t or None, "n": starts}}"""
    out = {}
    if not os.path.exists(log):
        return out
    with open(log) as f:
        for line in f:
            p = line.split()
            if len(p) != 6:
                continue
            key = (p[1], int(p[2]), int(p[3]), int(p[4]))
            r = out.setdefault(key, {"start": None, "end": None, "n": 0})
            if p[0] == "START":
                r["n"] += 1
                r["start"] = float(p[5])
            else:
                r["end"] = float(p[5])
    return out


def workload(env, log, k=1):
    """The mix, k times over: a plain group, one with a retry per task, a
    gang, spot work, independent tasks.  Returns {group path: (name, tasks,
    nodes per task, runs per node)}."""
    groups = {}
    g = env.group(spec(log, "completions: %d\nparallelism: 3\ngpu: \"4090\"\n" % (6 * k),
                       "sleep 2; rc=0"), name="plain", queue="q1")
    groups[g] = ("plain", 6 * k, 1, 1)
    # fails its first attempt, then succeeds: exactly two runs per task
    g = env.group(spec(log, "completions: %d\nparallelism: 3\nretries: 2\n" % (3 * k),
                       'ck=$JOB_CHECKPOINT_DIR/failed-once\n'
                       'if [ -e $ck ]; then sleep 1; rc=0; else touch $ck; sleep 1; rc=1; fi'),
                  name="retry", queue="q1")
    groups[g] = ("retry", 3 * k, 1, 2)
    g = env.group(spec(log, "completions: %d\nnodes: 2\ngpu: \"4090\"\ngpus: 8\n" % (2 * k),
                       "sleep 2; rc=0"), name="gang", queue="q2")
    groups[g] = ("gang", 2 * k, 2, 1)
    g = env.group(spec(log, "billing: spot\ncompletions: %d\nparallelism: 4\ngpu: L40S\n"
                       "gpus: 2\n" % (4 * k), "sleep 2; rc=0"), name="spot", queue="q2")
    groups[g] = ("spot", 4 * k, 1, 1)
    env.mkdir("tasks/ind")
    env.submit("tasks/ind", spec(log, "count: %d\n" % (3 * k), "sleep 2; rc=0"))
    groups["tasks/ind"] = ("ind", 3 * k, 1, 1)
    return groups


def task_path(g, t):
    if g.startswith("tasks/"):
        return "%s/%d-%s" % (g, t + 1, os.path.basename(g))
    return os.path.join(g, "tasks/%d" % t)


def guarded(env, fn, timeout=20):
    """fn() in a thread; if it blocks (a hung daemon), fail with its stacks."""
    import threading
    box = {}

    def run():
        try:
            box["v"] = fn()
        except BaseException as e:  # noqa: B902 - carried to the caller
            box["e"] = e
    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(timeout)
    if th.is_alive():
        raise TestFailure("the daemon did not answer for %d s:\n%s"
                          % (timeout, env.all_stacks()))
    if "e" in box:
        raise box["e"]
    return box.get("v")


def final(env, groups):
    def done():
        for g in groups:
            if env.status(g)["state"] not in ("Succeeded", "Failed", "Stopped"):
                return False
        return True
    return done


def verify(env, groups, log, allow_lost=False):
    """The end state: every group Succeeded, each (task, node) ran as often as
    it should (attempts that never ran do not count), nothing open, every
    cost its ledger rows, segments = what ran (+-1 s each), logs complete."""
    seen = runs(log)
    for g, (name, tasks, nodes, want) in groups.items():
        st = env.status(g)
        check(st["state"] == "Succeeded", "%s ended %s: %s" % (g, st["state"], st["message"]))
        for t in range(tasks):
            for n in range(nodes):
                mine = {k: v for k, v in seen.items()
                        if k[0] == name and k[1] == t and k[2] == n}
                if allow_lost:
                    # after a power cut, what ran before it ran on the old
                    # side and died there: running it again is right
                    continue
                starts = sum(v["n"] for v in mine.values())
                check(starts == want, "%s task %d node %d ran %d times, want %d: %r"
                      % (g, t, n, starts, want, sorted(mine)))
                check(all(v["n"] == 1 for v in mine.values()),
                      "%s task %d node %d: an attempt ran twice: %r" % (g, t, n, mine))
            tpath = task_path(g, t)
            logs = env.read(os.path.join(tpath, "nodes/0/logs"))
            check(("hello %s %d 0" % (name, t)) in logs,
                  "%s logs incomplete: %r" % (tpath, logs))
    # the store
    db = sqlite3.connect(os.path.join(env.state, "jobfs.db"))
    try:
        check(db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "integrity_check")
        check(db.execute("PRAGMA foreign_key_check").fetchall() == [], "foreign_key_check")
        check(db.execute("SELECT count(*) FROM ledger WHERE end_ms = 0").fetchone()[0] == 0,
              "open ledger segments left")
    finally:
        db.close()
    # billing: each run's ledger seconds match what it ran, +-1 s per segment
    rows = env.ledger()
    segs = {}
    for r in rows:
        segs.setdefault((r["group"], int(r["task"]), int(r["node"]), int(r["attempt"])),
                        []).append(r)
    for (grp, t, n, a), v in seen.items():
        if v["start"] is None or v["end"] is None:
            continue
        mine = segs.get((grp, t, n, a), [])
        billed = sum(int(r["seconds"]) for r in mine)
        real = v["end"] - v["start"]
        check(mine and abs(billed - real) <= len(mine) + 0.5,
              "%s/%d/%d attempt %d billed %d s in %d segments, ran %.2f s"
              % (grp, t, n, a, billed, len(mine), real))
    total = sum((Decimal(r["amount"]) for r in rows), Decimal(0))
    check(Decimal(env.read("billing/cost").split()[0]) == total, "billing/cost != ledger")
    for g in groups:
        name = os.path.basename(g)
        mine = sum((Decimal(r["amount"]) for r in rows if r["group"] == name), Decimal(0))
        check(Decimal(env.read(os.path.join(g, "cost")).split()[0]) == mine, "%s cost" % g)


def crashed(env, timeout=15):
    """The daemon killed itself (fault injection): reap it; the next daemon
    clears its mount."""
    d = env.daemon
    try:
        d.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        raise TestFailure("the fault point was never reached")
    check(d.proc.returncode == -signal.SIGKILL, "daemon exit %s" % d.proc.returncode)
    d.killed = True
    d.check()
    env.daemon = None


def fault_window(env, point):
    log = os.path.join(env.work, "runs.log")
    env.queue("q1")
    env.start_with_fault(point + ":2")
    g = os.path.join("queues/q1/groups/w")
    env.mkdir(g)
    # the daemon dies inside the submission's scheduling: the writer sees an error
    subprocess.run(["sh", "-c", "cat > %s" % env.p(g, "spec.yaml")],
                   input=spec(log, "completions: 3\nparallelism: 3\nretries: 0\n"),
                   text=True, capture_output=True, timeout=15)
    crashed(env)
    env.start()
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "group ended %s: %s" % (st["state"], st["message"]))
    seen = runs(log)
    for t in range(3):
        n = sum(v["n"] for k, v in seen.items() if k[1] == t)
        check(n == 1, "task %d ran %d times after a crash at %s" % (t, n, point))
        ts = env.status(os.path.join(g, "tasks/%d" % t))
        check(ts["retries_left"] == 0 and ts["state"] == "Succeeded",
              "task %d: %s" % (t, ts))
    verify(env, {g: ("w", 3, 1, 1)}, log)
    return [env.read(os.path.join(g, "tasks/%d/events" % t)) for t in range(3)]


@case(timeout=60)
def test_crash_before_supervisor(env):
    """kill -9 after an attempt is recorded, before its supervisor starts:
    the restarted daemon cancels the attempt (it never runs) and the task
    runs once, with no retry used."""
    fault_window(env, "prestart")


@case(timeout=60)
def test_crash_before_start_recorded(env):
    """kill -9 after the supervisor started the process, before the start
    was recorded: the restarted daemon finds the run by its claim, adopts
    it and bills it; it is not started a second time.  (Starts are
    confirmed in the order the supervisors report them, so the one the
    daemon died on may be any of the three.)"""
    ev = fault_window(env, "start")
    check(any("recorded after a daemon restart" in e for e in ev),
          "no task's start was recorded after the restart:\n" + "\n".join(ev))


@case(timeout=600)
def test_torture(env):
    seed = int(os.environ.get("JOBFS_TORTURE_SEED", "1"))
    kills = 50 if env.long else 12
    rnd = random.Random(seed)
    log = os.path.join(env.work, "runs.log")
    # a sanitizer build restarts slower, so more of the work ends between
    # kills: more work, so that all the kills fall inside it
    # (sized with half again of margin over the kills' own time: a faster
    # daemon restart once made the workload end after 46 of 50 kills)
    groups = workload(env, log, (16 if sanitized() else 12) if env.long else
                      (4 if sanitized() else 3))
    # and one task that runs until the kills are over, whatever the speed
    # of the machine and of the restarts
    go = os.path.join(env.work, "kills-done")
    g = env.group(spec(log, "completions: 1\n", "while [ ! -e %s ]; do sleep 0.1; done; rc=0" % go),
                  name="holder", queue="q1")
    groups[g] = ("holder", 1, 1, 1)
    done = final(env, groups)
    n = 0
    t0 = time.monotonic()
    while n < kills and not guarded(env, done):
        time.sleep(rnd.uniform(0.05, 0.8))
        env.daemon.kill9()
        n += 1
        env.start()
    check(n == kills, "the workload ended after %d of %d kills" % (n, kills))
    open(go, "w").close()
    env.poll_until(done, 120, "every group to end", interval=0.2)
    verify(env, groups, log)
    print("torture: seed %d, %d kills survived in %.1f s" % (seed, n, time.monotonic() - t0))


@case(timeout=120)
def test_supervisor_and_task_kills(env):
    """kill -9 a task's process (a failure: retried by its policy) and its
    supervisor (the node is lost: retried) - while the daemon runs and while
    it is down; the ledger bills what ran (a supervisor killed while no
    daemon watches is billed up to its last heartbeat)."""
    log = os.path.join(env.work, "runs.log")
    # first attempts run 6 s, long enough for the kills on a loaded
    # machine; the retries 1 s
    g = env.group(spec(log, "completions: 3\nparallelism: 3\nretries: 2\n",
                       'if [ "$JOB_ATTEMPT" -gt 1 ]; then sleep 1; else sleep 6; fi; rc=0'),
                  name="k", queue="q1")
    # a node's pid and its attempt's handle are written by the step that
    # records its start, which may come after the process's first line
    for t in range(3):
        env.wait(os.path.join(g, "tasks/%d/nodes/0" % t), "Running", timeout=20)
    env.poll_until(lambda: len(runs(log)) == 3, 10, "3 starts")

    def shim_of(task):
        st = env.status(os.path.join(g, "tasks/%d/nodes/0" % task))
        db = sqlite3.connect(os.path.join(env.state, "jobfs.db"))
        h = db.execute("SELECT a.handle FROM attempts a JOIN nodes n ON n.attempt_id = a.id "
                       "JOIN tasks t ON t.id = n.task_id JOIN groups g ON g.id = t.group_id "
                       "WHERE g.dirname = 'k' AND t.idx = ?", (task,)).fetchone()[0]
        db.close()
        return st["pid"], int(h.split(":")[1])

    # task 0: its process is killed (daemon up)
    pid, _ = shim_of(0)
    os.kill(pid, signal.SIGKILL)
    # task 1: its supervisor is killed (daemon up)
    _, shim = shim_of(1)
    os.kill(shim, signal.SIGKILL)
    # task 2: its supervisor is killed while the daemon is down
    _, shim2 = shim_of(2)
    env.daemon.kill9()
    time.sleep(0.3)
    os.kill(shim2, signal.SIGKILL)
    env.poll_until(lambda: not pid_alive(shim2), 5, "the shim to die")
    time.sleep(1.5)      # down for a while: this time must not be billed
    env.start()
    st = env.wait(g, ("Succeeded", "Failed"), timeout=30)
    check(st["state"] == "Succeeded", "group: %s" % st)
    for t in range(3):
        ts = env.status(os.path.join(g, "tasks/%d" % t))
        check(ts["attempt"] == 2 and ts["retries_left"] == 1,
              "task %d: attempt %s retries_left %s" % (t, ts["attempt"], ts["retries_left"]))
    rows = env.ledger()
    seen = runs(log)
    for (grp, t, n, a), v in seen.items():
        mine = [r for r in rows if int(r["task"]) == t and int(r["attempt"]) == a]
        billed = sum(int(r["seconds"]) for r in mine)
        end = v["end"]
        if end is None:
            # killed: it ran until the kill; its first run lasted < 6 s
            check(billed <= 6, "task %d attempt %d (killed) billed %d s" % (t, a, billed))
        else:
            check(abs(billed - (end - v["start"])) <= 1.5, "task %d attempt %d billed %d s, ran %.2f"
                  % (t, a, billed, end - v["start"]))
    ev = env.read(os.path.join(g, "tasks/1/nodes/0/events"))
    check("supervisor" in ev, "lost supervisor not reported:\n" + ev)


@case(timeout=120)
def test_power_cut(env):
    """A point-in-time copy of the state directory (the daemon frozen while
    it is copied, as a crash snapshot would be), then everything on the old
    side is gone; mounting the copy recovers: intact database, every group
    ends, nothing open, costs = ledger."""
    log = os.path.join(env.work, "runs.log")
    groups = workload(env, log)
    time.sleep(1.5)
    d = env.daemon
    os.kill(d.pid, signal.SIGSTOP)
    copy = os.path.join(env.tmp, "state-copy")
    try:
        shutil.copytree(env.state, copy, symlinks=True)
    finally:
        os.kill(d.pid, signal.SIGCONT)
    # the power cut: the daemon and every supervisor and task die
    db = sqlite3.connect(os.path.join(copy, "jobfs.db"))
    handles = [h for (h,) in db.execute("SELECT handle FROM attempts WHERE handle != ''")]
    db.close()
    d.kill9()
    for h in handles:
        try:
            os.killpg(int(h.split(":")[1]), signal.SIGKILL)
        except (OSError, ValueError):
            pass
        try:
            os.kill(int(h.split(":")[1]), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    subprocess.run(["pkill", "-KILL", "-f", env.state + "/runs/"], capture_output=True)
    time.sleep(0.3)
    env.state = copy
    os.rename(log, log + ".before")   # runs before the cut ran on the old side
    env.start()
    env.poll_until(final(env, groups), 90, "every group to end", interval=0.2)
    verify(env, groups, log, allow_lost=True)
