"""ctl verbs, rename and rmdir."""
import errno
import os
import time

from jfit import TestFailure, case, check, money, pid_alive

SLEEPER = """\
completions: %d
parallelism: %d
command: ["/bin/sh", "-c", "echo run >> %s/runs.$JOB_TASK_INDEX; sleep %s"]
"""


def running_pids(env, g, n, timeout=5):
    """The pids of tasks 0..n-1's nodes once all of them run (a task counts
    as running while its node is still Initializing: its supervisor has not
    reported the start yet)."""
    def pids():
        out = []
        for i in range(n):
            ns = env.status(os.path.join(g, "tasks/%d/nodes/0" % i))
            if ns["state"] == "Running" and isinstance(ns.get("pid"), int):
                out.append(ns["pid"])
        return out
    end = time.monotonic() + timeout
    got = pids()
    while len(got) < n and time.monotonic() < end:
        time.sleep(0.02)
        got = pids()
    return got


def wait_gone(env, pids, what):
    env.poll_until(lambda: not [p for p in pids if pid_alive(p)], 5,
                   "%s: processes %r to end" % (what, [p for p in pids if pid_alive(p)]))


def errname(rc):
    return errno.errorcode.get(rc, str(rc))


@case(timeout=60)
def test_stop_running_group(env):
    g = env.group(SLEEPER % (3, 3, env.work, "30"))
    st = env.wait(g, pred=lambda s: s["running"] == 3, timeout=10, what="3 running")
    pids = running_pids(env, g, 3)
    check(len(pids) == 3 and all(pid_alive(p) for p in pids), "pids %r" % pids)
    r = env.sh("echo stop > %s/ctl" % g)
    st = env.wait(g, "Stopped", timeout=10)
    wait_gone(env, pids, "stop")
    for i in range(3):
        # the group says Stopped at once; each task once its node is reaped
        env.wait(os.path.join(g, "tasks/%d" % i), "Stopped", timeout=10)
    check(env.status(g)["state"] == "Stopped", "the group left Stopped")
    ev = env.read(os.path.join(g, "events"))
    check(" Killing " in ev, "no Killing event on stop:\n%s" % ev)
    # billing stopped with the processes
    env.poll_until(lambda: all(r["end"] for r in env.ledger()), 5, "ledger segments to close")
    c1 = money(env.read(os.path.join(g, "cost")))[0]
    rows = [r for r in env.ledger() if r["group"] == "g"]
    check(len(rows) == 3 and all(r["end"] for r in rows), "ledger rows after stop: %r" % rows)
    check(sum(money(r["amount"] + " CNY")[0] for r in rows) == c1, "cost != ledger sum")
    # a stopped group stays stopped; stop again is EBUSY
    rc = env.ctl(g, "stop")
    check(rc == errno.EBUSY, "stop of a Stopped group gave %s" % errname(rc))


@case(timeout=60)
def test_verb_that_does_not_apply(env):
    g = env.group(SLEEPER % (1, 1, env.work, "30"))
    env.wait(g, "Running", timeout=10)
    rc = env.ctl(g, "resume")
    check(rc == errno.EBUSY, "resume of a Running group gave %s, want EBUSY" % errname(rc))
    st = env.status(g)
    ev = env.read(os.path.join(g, "events"))
    check("resume" in st["message"].lower() or
          any(" Warning " in l and "resume" in l for l in ev.splitlines()),
          "neither status nor events say why resume was refused: %r\n%s" % (st["message"], ev))
    check(st["state"] == "Running", "the refused verb changed the state to %s" % st["state"])
    # an unknown verb is EINVAL
    rc = env.ctl(g, "explode")
    check(rc == errno.EINVAL, "unknown verb gave %s, want EINVAL" % errname(rc))
    # the shell sees the error too (dash reports the failed close? no: write of `echo`)
    check(env.ctl(g, "stop") == 0, "stop")
    env.wait(g, "Stopped", timeout=10)
    # restart applies to a stopped group, pause does not
    rc = env.ctl(g, "pause")
    check(rc == errno.EBUSY, "pause of a Stopped group gave %s" % errname(rc))


@case(timeout=60)
def test_shell_sees_refusals(env):
    """A verb is acted on when its line is written, so the shell, which
    drops close()'s error, still reports a refusal; several lines in one
    open are several verbs, in order; a verb without a newline is acted on
    at close."""
    import subprocess
    g = env.group(SLEEPER % (1, 1, env.work, "30"))
    env.wait(g, "Running", timeout=10)
    ctl = env.p(g, "ctl")
    for sh in ("sh", "bash"):
        # bash names the errno; dash says "I/O error" for any
        busy = "Device or resource busy" if sh == "bash" else "error"
        inval = "Invalid argument" if sh == "bash" else "error"
        r = subprocess.run([sh, "-c", 'echo resume > "$1"', sh, ctl], capture_output=True,
                           text=True)
        check(r.returncode != 0 and busy in r.stderr,
              "%s: echo resume > ctl of a Running group: rc %d, stderr %r"
              % (sh, r.returncode, r.stderr))
        r = subprocess.run([sh, "-c", 'echo explode > "$1"', sh, ctl], capture_output=True,
                           text=True)
        check(r.returncode != 0 and inval in r.stderr,
              "%s: echo explode > ctl: rc %d, stderr %r" % (sh, r.returncode, r.stderr))
    check(env.status(g)["state"] == "Running", "a refused verb changed the group")
    # two verbs through one open: pause, then resume
    r = subprocess.run(["sh", "-c", '{ echo pause; echo resume; } > "$1"', "sh", ctl],
                       capture_output=True, text=True)
    check(r.returncode == 0, "pause then resume: rc %d, %r" % (r.returncode, r.stderr))
    ev = env.read(os.path.join(g, "events"))
    check(ev.find(" Paused ") >= 0 and ev.find(" Resumed ") > ev.find(" Paused "),
          "events: %s" % ev)
    env.wait(g, "Running", timeout=10)
    # no newline: acted on at close (its error there, for whoever checks it)
    r = subprocess.run(["sh", "-c", 'printf stop > "$1"', "sh", ctl], capture_output=True,
                       text=True)
    check(r.returncode == 0, "printf stop: rc %d, %r" % (r.returncode, r.stderr))
    env.wait(g, "Stopped", timeout=10)
    check(env.write(os.path.join(g, "ctl"), "pause") == errno.EBUSY,
          "pause of a Stopped group without a newline: not EBUSY at close")


# the first run of each task lasts until pause kills it; the second 1 s
PAUSED = """\
completions: 2
parallelism: 2
command: ["/bin/sh", "-c", "echo run >> %(w)s/runs.$JOB_TASK_INDEX; if [ $(wc -l < %(w)s/runs.$JOB_TASK_INDEX) -ge 2 ]; then sleep 1; else sleep 30; fi"]
"""


@case(timeout=60)
def test_pause_resume(env):
    g = env.group(PAUSED % {"w": env.work})
    env.wait(g, pred=lambda s: s["running"] == 2, timeout=10, what="2 running")
    pids = running_pids(env, g, 2)
    check(env.ctl(g, "pause") == 0, "pause refused")
    env.wait(g, "Paused", timeout=10)
    wait_gone(env, pids, "pause")
    # the group says Paused at once; its nodes are being killed meanwhile
    st = env.wait(g, pred=lambda s: s["running"] == 0, timeout=10, what="no node running")
    check(st["state"] == "Paused", "state %s after the nodes ended" % st["state"])
    # billing stopped: cost and node_seconds do not move while paused
    c0 = env.status(g)
    env.poll_until(lambda: all(r["end"] for r in env.ledger()), 5, "ledger segments to close")
    c1 = env.status(g)
    t_end = time.monotonic() + 1.2
    while time.monotonic() < t_end:
        c2 = env.status(g)
        check(c2["state"] == "Paused", "left Paused by itself: %s" % c2["state"])
        check(c2["cost"] == c1["cost"] and c2["node_seconds"] == c1["node_seconds"],
              "billing went on while paused: %s/%s -> %s/%s"
              % (c1["cost"], c1["node_seconds"], c2["cost"], c2["node_seconds"]))
        time.sleep(0.1)
    ev = env.read(os.path.join(g, "events"))
    check(" Paused " in ev, "no Paused event:\n%s" % ev)
    check(env.ctl(g, "resume") == 0, "resume refused")
    env.wait(g, ("Running", "Succeeded"), timeout=10)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "after resume: %s" % st["state"])
    ev = env.read(os.path.join(g, "events"))
    check(" Resumed " in ev, "no Resumed event:\n%s" % ev)
    # each task ran twice (killed by pause, then again)
    for i in range(2):
        with open(os.path.join(env.work, "runs.%d" % i)) as f:
            check(f.read().count("run") == 2, "task %d runs" % i)


@case(timeout=60)
def test_restart_finished_group(env):
    g = env.group(SLEEPER % (2, 2, env.work, "0"))
    env.wait(g, "Succeeded", timeout=10)
    rows0 = len(env.ledger())
    rc = env.sh("echo restart > %s/ctl" % g, check=False)
    check(rc.returncode == 0, "echo restart: %s" % rc.stderr)

    def runs(i):
        with open(os.path.join(env.work, "runs.%d" % i)) as f:
            return f.read().count("run")

    env.poll_until(lambda: runs(0) == 2 and runs(1) == 2, 10, "both tasks to run again")
    st = env.wait(g, pred=lambda s: s["state"] in ("Succeeded", "Failed") and
                  len(env.ledger()) == rows0 + 2, timeout=20, what="the second run to end")
    check(st["state"] == "Succeeded" and st["progress"] == "2/2", "after restart: %s" % st)
    check(runs(0) == 2 and runs(1) == 2, "a task ran more than twice")
    ev = env.read(os.path.join(g, "events"))
    check(ev.count(" Started ") == 4, "%d Started events, want 4:\n%s" % (ev.count(" Started "), ev))
    check(len(env.ledger()) == rows0 + 2, "ledger rows %d -> %d" % (rows0, len(env.ledger())))


@case(timeout=60)
def test_task_and_batch_ctl(env):
    b = "tasks/bt"
    env.mkdir(b)
    env.submit(b, "count: 3\ncommand: [\"/bin/sh\", \"-c\", \"sleep 30\"]\n")
    for i in (1, 2, 3):
        env.wait("%s/%d-bt" % (b, i), "Running", timeout=10)
    # stop one task of the batch
    check(env.ctl("%s/2-bt" % b, "stop") == 0, "stop 2-bt")
    env.wait("%s/2-bt" % b, "Stopped", timeout=10)
    check(env.status("%s/1-bt" % b)["state"] == "Running", "1-bt stopped too")
    # stop the batch: the rest stop
    check(env.ctl(b, "stop") == 0, "stop batch")
    env.wait(b, "Stopped", timeout=10)
    for i in (1, 3):
        env.wait("%s/%d-bt" % (b, i), "Stopped", timeout=10)
    check(env.status(b)["state"] == "Stopped", "batch left Stopped")


@case(timeout=60)
def test_rename_task(env):
    """A task directory renamed with mv changes its display name and answers to
    the new name only; renaming it back to its index restores it."""
    g = env.group(SLEEPER % (3, 3, env.work, "0"), name="tg")
    env.wait(g, "Succeeded", timeout=10)
    env.sh("mv queues/q/groups/tg/tasks/1 queues/q/groups/tg/tasks/warmup")
    names = sorted(os.listdir(env.p("queues/q/groups/tg/tasks")))
    check(names == ["0", "2", "warmup"], "tasks after mv: %r" % names)
    st = env.status("queues/q/groups/tg/tasks/warmup")
    check(st["name"] == "warmup" and st["index"] == 1, "renamed task status: %r" % st)
    check(not os.path.exists(env.p("queues/q/groups/tg/tasks/1")), "old name still resolves")
    try:
        os.rename(env.p("queues/q/groups/tg/tasks/warmup"), env.p("queues/q/groups/tg/tasks/2"))
    except OSError as e:
        check(e.errno in (errno.EEXIST, errno.ENOTEMPTY), "rename onto task 2: %s" % e)
    else:
        raise TestFailure("rename onto another task succeeded")
    env.sh("mv queues/q/groups/tg/tasks/warmup queues/q/groups/tg/tasks/1")
    names = sorted(os.listdir(env.p("queues/q/groups/tg/tasks")))
    check(names == ["0", "1", "2"], "tasks after renaming back: %r" % names)
    ev = env.read("queues/q/groups/tg/events")
    check(" Renamed tasks/1 warmup" in ev, "no Renamed event: %s" % ev[-400:])


@case(timeout=60)
def test_rename_group(env):
    g = env.group(SLEEPER % (1, 1, env.work, "0"), name="old-name")
    env.wait(g, "Succeeded", timeout=10)
    env.sh("mv queues/q/groups/old-name queues/q/groups/new-name")
    names = os.listdir(env.p("queues/q/groups"))
    check(names == ["new-name"], "groups after mv: %r" % names)
    st = env.status("queues/q/groups/new-name")
    check(st["state"] == "Succeeded", "status after rename: %s" % st["state"])
    check(st["name"] == "new-name", "display name after rename: %r" % st["name"])
    check(not os.path.exists(env.p("queues/q/groups/old-name")), "old name still resolves")
    logs = env.read("queues/q/groups/new-name/tasks/0/nodes/0/logs")
    check(logs == "", "logs after rename %r" % logs)
    # rename onto an existing group is refused, and across queues too
    env.mkdir("queues/q/groups/other")
    try:
        os.rename(env.p("queues/q/groups/new-name"), env.p("queues/q/groups/other"))
    except OSError as e:
        check(e.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.EBUSY), "rename onto existing: %s" % e)
    else:
        raise TestFailure("rename onto an existing group succeeded")
    for bad in ("bad name", ".x", "x" * 100):
        try:
            os.rename(env.p("queues/q/groups/new-name"), env.p("queues/q/groups", bad))
        except OSError as e:
            check(e.errno == errno.EINVAL, "rename to %r: %s" % (bad, e))
        else:
            raise TestFailure("rename to %r succeeded" % bad)
    # a running batch can be renamed too
    b = "tasks/runner"
    env.mkdir(b)
    env.submit(b, "count: 2\ncommand: [\"/bin/sh\", \"-c\", \"sleep 0.5\"]\n")
    os.rename(env.p(b), env.p("tasks/renamed"))
    check(sorted(os.listdir(env.p("tasks/renamed"))) ==
          ["1-renamed", "2-renamed", "cost", "ctl", "events", "spec.yaml", "status",
           "status.json", "timeline.svg"],
          "renamed batch: %r" % sorted(os.listdir(env.p("tasks/renamed"))))
    env.wait("tasks/renamed", "Succeeded", timeout=10)


@case(timeout=60)
def test_rmdir(env):
    run = env.group(SLEEPER % (1, 1, env.work, "30"), name="running")
    done = env.group(SLEEPER % (2, 2, env.work, "0"), name="done")
    env.wait(run, "Running", timeout=10)
    env.wait(done, "Succeeded", timeout=10)
    try:
        os.rmdir(env.p(run))
    except OSError as e:
        check(e.errno == errno.EBUSY, "rmdir of a running group: %s, want EBUSY" % e)
    else:
        raise TestFailure("rmdir of a running group succeeded")
    check(env.status(run)["state"] == "Running", "the refused rmdir disturbed the group")
    ev = env.read(os.path.join(run, "events"))
    check(" Warning " in ev and "rmdir" in ev, "the events do not say why rmdir was refused:\n%s" % ev)
    cost = money(env.read(os.path.join(done, "cost")))[0]
    rows = [r for r in env.ledger() if r["group"] == "done"]
    check(len(rows) == 2, "ledger rows of done: %d" % len(rows))
    r = env.sh("rmdir %s" % done, check=False)
    check(r.returncode == 0, "rmdir of a finished group: %s" % r.stderr)
    check(sorted(os.listdir(env.p("queues/q/groups"))) == ["running"],
          "groups after rmdir: %r" % os.listdir(env.p("queues/q/groups")))
    check(not os.path.exists(env.p(done)), "removed group still resolves")
    after = [r for r in env.ledger() if r["group"] == "done"]
    check(after == rows, "ledger rows changed by rmdir: %r -> %r" % (rows, after))
    summary = env.read("billing/summary")
    check(summary.endswith("\n"), "billing/summary")
    # a queue with a group in it is not idle
    try:
        os.rmdir(env.p("queues/q"))
    except OSError as e:
        check(e.errno in (errno.EBUSY, errno.ENOTEMPTY), "rmdir of a busy queue: %s" % e)
    else:
        raise TestFailure("rmdir of a queue with a running group succeeded")
    check(env.ctl(run, "stop") == 0, "stop")
    env.wait(run, "Stopped", timeout=10)
    # Stopped at once; rmdir waits (EBUSY) until its nodes are really gone
    def rmdir_ok():
        try:
            os.rmdir(env.p(run))
            return True
        except OSError as e:
            check(e.errno == errno.EBUSY, "rmdir of a stopped group: %s" % e)
            return False
    env.poll_until(rmdir_ok, 10, "rmdir of the stopped group to succeed")
    os.rmdir(env.p("queues/q"))
    check(os.listdir(env.p("queues")) == [], "queues after rmdir")
    # a live group's files cannot be removed; a draft's unlink is rm -rf's
    # way to its rmdir: it succeeds and removes nothing by itself
    live = env.group(SLEEPER % (1, 1, env.work, "30"), name="live", queue="q3")
    env.wait(live, "Running", timeout=10)
    env.mkdir("tasks/keep")
    for f in ("status", "spec.yaml", "ctl"):
        try:
            os.unlink(env.p(live, f))
        except OSError as e:
            check(e.errno == errno.EBUSY, "unlink %s of a live group: %s" % (f, e))
        else:
            raise TestFailure("unlink %s succeeded" % f)
        os.unlink(env.p("tasks/keep", f))
        check(os.path.exists(env.p("tasks/keep", f)), "unlink removed %s by itself" % f)
    check(env.ctl(live, "stop") == 0, "stop")
    # a draft can be removed
    os.rmdir(env.p("tasks/keep"))


def test_queue_events(env):
    """A queue's events tell what happened to its groups, in plain words:
    created, each group accepted (task or tasks), ended, stopped by ctl and
    removed."""
    a = env.group('command: ["true"]\n', name="a")
    b = env.group(SLEEPER % (2, 2, env.work, "30"), name="b")
    env.wait(a, "Succeeded", timeout=20)
    env.wait(b, pred=lambda s: s["running"] == 2, timeout=20, what="2 running")
    check(env.ctl(b, "stop") == 0, "stop of b refused")
    env.wait(b, "Stopped", timeout=20)
    os.rmdir(env.p(a))
    ev = env.read("queues/q/events")
    lines = [" ".join(ln.split(" ")[1:]) for ln in ev.splitlines()]
    for want in ("Normal Created queue capacity unlimited until spec.yaml says otherwise",
                 "Normal Accepted group a: 1 task",
                 "Normal Accepted group b: 2 tasks",
                 "Normal Completed group a: 1/1 tasks succeeded",
                 "Normal Stopped group b: stopped by ctl",
                 "Normal Removed group a (Succeeded), 2 directories of its runs and "
                 "checkpoints freed"):
        check(want in lines, "queue events lack %r:\n%s" % (want, ev))
    check(" group group " not in ev and "queue queue" not in ev,
          "a word said twice in the queue's events:\n%s" % ev)
