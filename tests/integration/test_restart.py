"""Remount and crash: the tree comes back from the state dir; running nodes
outlive a killed daemon and are found again, billed once, to the second."""
import os

from jfit import case, check, money, pid_alive

RECORDER = """\
completions: %(n)d
parallelism: %(n)d
gpu: "4090"
command: ["/bin/sh", "-c"]
args: ["date +%%s.%%N > $REC/$JOB_TASK_INDEX.start; echo up $JOB_TASK_INDEX; sleep %(secs)s; date +%%s.%%N > $REC/$JOB_TASK_INDEX.end"]
env:
  REC: "%(rec)s"
"""


def walk(env, top):
    """Every path below top in the tree (dirs and files), watch excluded."""
    out = []
    for root, dirs, files in os.walk(env.p(top)):
        rel = os.path.relpath(root, env.mnt)
        out += [os.path.join(rel, d) + "/" for d in dirs]
        out += [os.path.join(rel, f) for f in files if f != "watch"]
    return sorted(out)


def snapshot(env, paths):
    return {p: env.read(p) for p in paths if not p.endswith("/")}


@case(timeout=60)
def test_remount_same_tree(env):
    g = env.group("""\
completions: 3
gpu: "4090"
command: ["/bin/sh", "-c", "echo task $JOB_TASK_INDEX; echo warn >&2; sleep 1"]
""", name="done")
    b = "tasks/batch"
    env.mkdir(b)
    env.submit(b, 'count: 2\ncommand: ["/bin/sh", "-c", "echo clone; exit 3"]\nretries: 0\n')
    env.mkdir("queues/q/groups/draft")
    env.mkdir("queues/q/groups/invalid")
    rc = env.write("queues/q/groups/invalid/spec.yaml", "completions: x\n")
    check(rc == 22, "invalid spec: %s" % rc)
    env.wait(g, "Succeeded", timeout=20)
    env.wait(b, ("Failed",), timeout=20)
    before_paths = walk(env, "queues") + walk(env, "tasks") + walk(env, "billing")
    before = snapshot(env, before_paths)
    check(money(before[g + "/cost"])[0] > 0, "cost before remount is 0")
    env.remount()
    after_paths = walk(env, "queues") + walk(env, "tasks") + walk(env, "billing")
    check(before_paths == after_paths, "tree differs after remount: only before %r, only after %r"
          % (sorted(set(before_paths) - set(after_paths))[:10],
             sorted(set(after_paths) - set(before_paths))[:10]))
    after = snapshot(env, after_paths)
    # the queue's status has no fixed end; everything finished must be identical
    for p in before:
        if p == "queues/q/status" or p == "queues/q/status.json":
            continue
        check(before[p] == after[p], "%s changed across remount:\n--- before\n%s--- after\n%s"
              % (p, before[p], after[p]))
    st = env.status("queues/q/groups/draft")
    check(st["state"] == "Draft", "draft is %s" % st["state"])
    st = env.status("queues/q/groups/invalid")
    check(st["state"] == "Invalid" and "completions" in st["message"], "invalid: %s" % st)
    # and it still works: the draft can be submitted now
    env.submit("queues/q/groups/draft", 'command: ["/bin/true"]\n')
    env.wait("queues/q/groups/draft", "Succeeded", timeout=20)


def crash_run(env, finish_while_down):
    rec = os.path.join(env.work, "rec")
    os.makedirs(rec)
    n, secs = 3, 3
    g = env.group(RECORDER % {"n": n, "secs": secs, "rec": rec}, name="crash")
    st = env.wait(g, pred=lambda s: s["running"] == n, timeout=10, what="all tasks running")
    # a task counts as running from its start on; its node has a pid once
    # its supervisor reported (starts do not wait for that)
    pids = [env.wait(os.path.join(g, "tasks/%d/nodes/0" % i), "Running", timeout=10)["pid"]
            for i in range(n)]
    env.poll_until(lambda: all(os.path.exists(os.path.join(rec, "%d.start" % i))
                               for i in range(n)), 5, "the commands to start")
    env.daemon.kill9()
    # the nodes outlive the daemon
    check(all(pid_alive(p) for p in pids), "a node died with the daemon: %r"
          % [p for p in pids if not pid_alive(p)])
    if finish_while_down:
        env.poll_until(lambda: all(os.path.exists(os.path.join(rec, "%d.end" % i))
                                   for i in range(n)), secs + 5, "the commands to finish")
        env.poll_until(lambda: not any(pid_alive(p) for p in pids), 5, "the processes to exit")
    env.start()
    st = env.wait(g, ("Succeeded", "Failed"), timeout=secs + 15)
    check(st["state"] == "Succeeded", "after the crash the group ended %s: %s"
          % (st["state"], st["message"]))
    rows = [r for r in env.ledger() if r["group"] == "crash"]
    keys = sorted((int(r["task"]), int(r["node"]), int(r["attempt"])) for r in rows)
    check(keys == [(i, 0, 1) for i in range(n)],
          "ledger rows (task,node,attempt) %r, want one per attempt" % keys)
    for r in rows:
        i = int(r["task"])
        with open(os.path.join(rec, "%d.start" % i)) as f:
            t0 = float(f.read())
        with open(os.path.join(rec, "%d.end" % i)) as f:
            t1 = float(f.read())
        real = t1 - t0
        billed = int(r["seconds"])
        check(abs(billed - real) <= 1.0, "task %d billed %d s, ran %.2f s" % (i, billed, real))
        ts = env.status(os.path.join(g, "tasks/%d" % i))
        check(ts["state"] == "Succeeded" and ts["attempt"] == 1, "task %d: %s attempt %s"
              % (i, ts["state"], ts["attempt"]))
        logs = env.read(os.path.join(g, "tasks/%d/nodes/0/logs" % i))
        check(logs == "up %d\n" % i, "task %d logs %r" % (i, logs))
    total = sum(money(r["amount"] + " CNY")[0] for r in rows)
    check(money(env.read(os.path.join(g, "cost")))[0] == total, "cost != ledger sum")
    # events: each node started once
    ev = env.read(os.path.join(g, "events"))
    check(ev.count(" Started ") == n, "%d Started events after the crash, want %d:\n%s"
          % (ev.count(" Started "), n, ev))
    # and the restarted daemon said it took each over
    check(ev.count(" Adopted ") == n, "%d Adopted events after the crash, want %d:\n%s"
          % (ev.count(" Adopted "), n, ev))


@case(timeout=60)
def test_crash_while_running(env):
    crash_run(env, finish_while_down=False)


@case(timeout=60)
def test_crash_nodes_finish_while_down(env):
    crash_run(env, finish_while_down=True)


@case(timeout=60)
def test_state_in_use(env):
    """A second daemon on the same state dir is refused, the first keeps serving."""
    import subprocess
    import jfit
    other = os.path.join(env.tmp, "mnt2")
    os.makedirs(other)
    r = subprocess.run([jfit.jobfs_bin(), "--state", env.state, "--foreground", other],
                       capture_output=True, text=True, timeout=10)
    check(r.returncode != 0, "a second daemon on the same state started")
    check("in use" in r.stderr, "second daemon's message: %r" % r.stderr)
    check(not os.path.ismount(other), "the second daemon left a mount")
    check("jobfs" in env.read("README"), "first daemon stopped serving")


@case(timeout=60)
def test_unmount_right_after_reads(env):
    """close() sends its release in the background; an unmount right after
    may drop it.  The daemon must still exit 0 with nothing leaked (the ASan
    build's LeakSanitizer checks), and mount again cleanly."""
    g = env.group('completions: 3\ncommand: ["/bin/sh", "-c", "echo hi"]\n')
    env.wait(g, "Succeeded", timeout=20)
    files = [os.path.join(g, f) for f in ("status", "status.json", "cost", "events", "spec.yaml")]
    for t in range(3):
        files += [os.path.join(g, "tasks/%d/nodes/0" % t, f) for f in ("logs", "stdout", "status")]
    for _ in range(3):
        for _ in range(20):
            for f in files:
                with open(env.p(f), "rb") as fh:
                    fh.read()
        fds = [os.open(env.p(g, "watch"), os.O_RDONLY | os.O_NONBLOCK) for _ in range(3)]
        for fd in fds:
            os.close(fd)
        env.remount()
        check(env.status(g)["state"] == "Succeeded", "after remount")
