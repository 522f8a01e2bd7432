"""A submission of 200,000 tasks on a real mount.

A group's task rows are made 4,096 at a time between requests (store.h:
JF_TASKS_CHUNK), no longer all in the write of spec.yaml.  Checked with
real programs: the write returns accepted; `cat` of the queue's and the
group's status answers while the rows are being made, and at every look
waiting + running + succeeded is the whole group (tasks not made yet count
as waiting); `ls tasks` grows to every index, 0 .. 199999; then a stop
ends every task, made before it or after.  A daemon killed (-9) right
after the write leaves rows to make: the next daemon makes them.

Nothing here is timed: how long a request waits is the loop's longest turn
on the daemon's stderr (reported with -v), not a pass condition, since this
VM's speed varies too much.
"""
import os
import re
import sqlite3

from jfit import case, check, parse_status

N = 200000


def unmade(env):
    """groups.unmade of the one group, read beside the daemon (WAL)."""
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(env.state, "jobfs.db"),
                         uri=True, timeout=10)
    try:
        return db.execute("SELECT unmade FROM groups WHERE dirname = 'g'").fetchone()[0]
    finally:
        db.close()


def counts(env, path):
    """`cat PATH/status` with a real cat: its counts, checked to add up."""
    st = parse_status(env.sh("cat %s/status" % path).stdout)
    for k in ("waiting", "running", "succeeded", "failed", "stopped"):
        check(k in st, "%s/status has no %s: %s" % (path, k, st))
    c = {k: int(st[k]) for k in ("waiting", "running", "succeeded", "failed", "stopped")}
    check(c["failed"] == 0 and c["stopped"] == 0, "%s: %s" % (path, c))
    check(c["waiting"] + c["running"] + c["succeeded"] == N,
          "%s: waiting + running + succeeded = %d, want %d (%s)"
          % (path, c["waiting"] + c["running"] + c["succeeded"], N, c))
    return c


@case(timeout=120)
def test_big_submission(env):
    q = env.queue("big")
    g = os.path.join(q, "groups", "g")
    env.mkdir(g)
    env.submit(g, 'completions: %d\nparallelism: 1\ncommand: ["true"]\n' % N)
    st = env.status(g)
    check(st["completions"] == N, "completions %s" % st["completions"])
    # look while the rows are being made: every look answers and adds up
    during = samples = 0
    while True:
        before = unmade(env)
        counts(env, q)
        counts(env, g)
        samples += 1
        if before > 0 and unmade(env) > 0:
            during += 1           # both reads of the status were mid-way
        if before == 0:
            break
    listed = env.sh("ls %s/tasks | wc -l" % g, timeout=60).stdout.strip()
    check(listed == str(N), "ls tasks: %s entries, want %d" % (listed, N))
    names = env.sh("ls %s/tasks | sort -n | sed -n '1p;$p'" % g, timeout=60).stdout.split()
    check(names == ["0", str(N - 1)], "tasks/ runs from %s" % names)
    counts(env, q)
    # the stop ends them all, those not started included
    check(env.ctl(g, "stop") == 0, "ctl stop refused")
    env.wait(g, "Stopped", timeout=60)
    # the group says Stopped at once; a node still running is being stopped
    # (billed to its end), and its task ends Stopped or Succeeded after
    env.poll_until(lambda: env.status(g)["running"] == 0, timeout=60,
                   what="the last running node ended")
    st = env.status(g)
    check(st["state"] == "Stopped" and st["stopped"] + st["succeeded"] == N and st["waiting"] == 0 and st["failed"] == 0,
          "after the stop: %s" % st)
    waits = re.findall(r"longest wait so far: a read ([0-9.]+) ms, a write ([0-9.]+) ms",
                       env.daemon.stderr_text())
    print("%d looks, %d while rows were being made; longest wait so far: a read %s ms, "
          "a write %s ms" % ((samples, during) + (waits[-1] if waits else ("< 10", "< 10"))))


@case(timeout=120)
def test_big_submission_daemon_killed(env):
    """The daemon killed (-9) while it makes the rows: the next one makes
    the rest, each index once."""
    q = env.queue("big")
    g = os.path.join(q, "groups", "g")
    env.mkdir(g)
    env.submit(g, 'completions: %d\nparallelism: 1\ncommand: ["true"]\n' % N)
    env.daemon.kill9(detach=True)
    left = unmade(env)
    env.start()
    counts(env, q)
    env.poll_until(lambda: unmade(env) == 0, timeout=60, what="every task row made")
    listed = env.sh("ls %s/tasks | sort -u | wc -l" % g, timeout=60).stdout.strip()
    check(listed == str(N), "ls tasks: %s entries, want %d" % (listed, N))
    counts(env, g)
    check(env.ctl(g, "stop") == 0, "ctl stop refused")
    env.wait(g, "Stopped", timeout=60)
    print("%d rows were left to make when the daemon was killed" % left)
