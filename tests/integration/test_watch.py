"""watch streams and inotify: readers wake on changes made inside the daemon."""
import os
import select
import signal
import subprocess
import time

from jfit import LineReader, Skip, TestFailure, case, check, have


def blocked_in_fuse(pid):
    """True once pid sleeps in a FUSE request (a read waiting for a change)."""
    try:
        with open("/proc/%d/wchan" % pid) as f:
            w = f.read()
    except OSError:
        return False
    return "fuse" in w or "request_wait_answer" in w


@case(timeout=60)
def test_cat_watch_yields_lines(env):
    env.queue()
    g = "queues/q/groups/w"
    env.mkdir(g)
    cat = env.popen(["cat", env.p(g, "watch")])
    rd = LineReader(cat)
    env.poll_until(lambda: blocked_in_fuse(cat.pid), 5, "cat watch to block")
    rd.pump(0.2)
    check(rd.lines == [], "watch yielded %r before anything changed" % rd.lines)
    # task 0 runs until the test has seen its Started line
    go = os.path.join(env.tmp, "go")
    env.submit(g, """\
completions: 2
parallelism: 1
command: ["/bin/sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done; sleep 0.6"]
""" % go)
    first = rd.wait_for(lambda ls: [l for l in ls if " Started " in l], 10, "a Started line")
    check(not any(" Completed " in l for l in rd.lines),
          "Completed arrived together with the first Started: %r" % rd.lines)
    open(go, "w").close()
    rd.wait_for(lambda ls: any(" Completed " in l and "tasks/1" in l for l in ls), 10,
                "task 1's Completed line")
    for l in rd.lines:
        parts = l.split(" ", 4)
        check(len(parts) >= 4 and parts[1] in ("Normal", "Warning"), "watch line %r" % l)
    env.wait(g, "Succeeded", timeout=10)
    # every event line of the group reached the watcher, once, in order
    rd.wait_for(lambda ls: ls == env.read(os.path.join(g, "events")).splitlines(), 5,
                "watch lines to equal the group's events")
    # the group is finished: the stream ends and cat returns
    try:
        cat.wait(3)
    except subprocess.TimeoutExpired:
        raise TestFailure("cat watch did not end after the group finished")
    check(cat.returncode == 0, "cat watch exited %s" % cat.returncode)


@case(timeout=60)
def test_watch_poll_wakes(env):
    g = env.group("""\
completions: 1
command: ["/bin/sh", "-c", "sleep 1.5"]
""")
    env.wait(os.path.join(g, "tasks/0"), "Running", timeout=10)
    # what the submission did is seen: the watch starts after it
    env.read(os.path.join(g, "events"))
    fd = os.open(env.p(g, "watch"), os.O_RDONLY | os.O_NONBLOCK)
    try:
        p = select.poll()
        p.register(fd, select.POLLIN)
        check(p.poll(300) == [], "poll() reported watch readable with nothing new")
        ev = p.poll(10000)
        check(ev and ev[0][1] & select.POLLIN, "poll() did not wake when the task finished")
        data = os.read(fd, 65536)
        check(b" Completed " in data, "after poll(): %r" % data)
        # finished: select() says readable (end-of-file) at once
        env.wait(g, "Succeeded", timeout=10)
        r, _, _ = select.select([fd], [], [], 5)
        check(r == [fd], "select() on a finished group's watch: %r" % r)
    finally:
        os.close(fd)
    env.wait(g, "Succeeded", timeout=10)


@case(timeout=60)
def test_select_on_two_watches(env):
    """select() over two groups' watch files wakes for the one that changed."""
    a = env.group('command: ["/bin/sh", "-c", "sleep 0.3"]\n', name="a")
    b = env.group('command: ["/bin/sh", "-c", "sleep 30"]\n', name="b")
    env.wait(os.path.join(b, "tasks/0"), "Running", timeout=10)
    # both submissions' events are seen: the watches start after them
    env.read(os.path.join(b, "events"))
    fa = os.open(env.p(a, "watch"), os.O_RDONLY)
    fb = os.open(env.p(b, "watch"), os.O_RDONLY)
    try:
        r, _, _ = select.select([fa, fb], [], [], 10)
        check(fa in r, "select() did not wake for group a (got %r)" % r)
        check(fb not in r, "select() woke for group b, which did not change")
    finally:
        os.close(fa)
        os.close(fb)
    check(env.ctl(b, "stop") == 0, "stop b")
    env.wait(b, "Stopped", timeout=10)


@case(timeout=60)
def test_sigint_ends_blocked_cat_watch(env):
    g = env.group('command: ["/bin/sh", "-c", "sleep 30"]\n')
    env.wait(os.path.join(g, "tasks/0"), "Running", timeout=10)
    cat = env.popen(["cat", env.p(g, "watch")])
    env.poll_until(lambda: blocked_in_fuse(cat.pid), 5, "cat watch to block")
    cat.send_signal(signal.SIGINT)
    try:
        rc = cat.wait(10)
    except subprocess.TimeoutExpired:
        raise TestFailure("cat watch still blocked 10 s after SIGINT")
    check(rc == -signal.SIGINT or rc != 0, "cat exit status %r" % rc)
    # the daemon still serves, and a new watcher works
    check("jobfs" in env.read("README"), "README after SIGINT")
    cat2 = env.popen(["cat", env.p(g, "watch")])
    rd = LineReader(cat2)
    env.poll_until(lambda: blocked_in_fuse(cat2.pid), 5, "second cat watch to block")
    check(env.ctl(g, "stop") == 0, "stop")
    rd.wait_for(lambda ls: ls, 5, "a line after stop")
    env.wait(g, "Stopped", timeout=10)


@case(timeout=60)
def test_watch_of_finished_object_ends(env):
    """A finished group changes no more: its watch reaches end-of-file, so
    `cat watch` returns and `grep -r` over the directory does not hang."""
    g = env.group('completions: 2\ncommand: ["/bin/true"]\n')
    env.wait(g, "Succeeded", timeout=10)
    r = env.sh("cat %s/watch" % g, timeout=5, check=False)
    check(r.returncode == 0, "cat watch of a finished group: %s" % r.stderr)
    r = env.sh("grep -r -l Completed %s" % g, timeout=10, check=False)
    check("events" in r.stdout, "grep -r: %r" % r.stdout)


@case(timeout=60)
def test_inotify_status(env):
    if not have("inotifywait"):
        raise Skip("inotifywait not installed (apt package inotify-tools)")
    g = env.group('command: ["/bin/sh", "-c", "sleep 1.5"]\n')
    t = os.path.join(g, "tasks/0")
    env.wait(t, "Running", timeout=10)
    iw = env.popen(["inotifywait", "-m", "-e", "modify,attrib,close_write",
                    env.p(t, "status")], stderr=subprocess.STDOUT)
    rd = LineReader(iw)
    rd.wait_for(lambda ls: any("Watches established" in l for l in ls), 5,
                "inotifywait to be ready")
    n0 = len(rd.lines)
    st = env.wait(t, ("Succeeded", "Failed"), timeout=10)
    # (how soon it comes is measured by scripts/bench.sh, not asserted here)
    rd.wait_for(lambda ls: len(ls) > n0, 10, "an inotify event after the change")
    ev = rd.lines[n0]
    check("MODIFY" in ev or "ATTRIB" in ev or "CLOSE_WRITE" in ev, "inotify line %r" % ev)
    check(st["state"] == "Succeeded", "task ended %s" % st["state"])


@case(timeout=60)
def test_inotify_logs_and_events(env):
    if not have("inotifywait"):
        raise Skip("inotifywait not installed (apt package inotify-tools)")
    # the node prints once the watches are up (the test's go), then ends
    go = os.path.join(env.tmp, "go")
    g = env.group('command: ["/bin/sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done; '
                  'echo one; sleep 1; echo two; sleep 0.5"]\n' % go)
    node = os.path.join(g, "tasks/0/nodes/0")
    env.wait(node, "Running", timeout=10)
    os.stat(env.p(node, "logs"))      # looked up: its growth is announced
    iw = env.popen(["inotifywait", "-m", "-e", "modify,close_write",
                    env.p(node, "logs"), env.p(g, "events")], stderr=subprocess.STDOUT)
    rd = LineReader(iw)
    rd.wait_for(lambda ls: any("Watches established" in l for l in ls), 10,
                "inotifywait to be ready")
    open(go, "w").close()
    rd.wait_for(lambda ls: any("logs" in l and "MODIFY" in l for l in ls), 10,
                "an inotify MODIFY on logs while the node prints")
    env.wait(g, "Succeeded", timeout=10)
    rd.wait_for(lambda ls: any("events" in l and "MODIFY" in l for l in ls), 10,
                "an inotify MODIFY on the group's events")


@case(timeout=60)
def test_inotify_directory(env):
    """A watch on a directory reports its files changing, also files nobody
    looked up (the daemon touches only what the kernel holds: here the
    directory, not its status)."""
    if not have("inotifywait"):
        raise Skip("inotifywait not installed (apt package inotify-tools)")
    g = env.group('command: ["/bin/sh", "-c", "sleep 1.5"]\n')
    t = os.path.join(g, "tasks/0")
    env.poll_until(lambda: os.path.isdir(env.p(t)), 10, "task 0 to exist")
    iw = env.popen(["inotifywait", "-m", "-e", "modify,attrib,close_write", env.p(t)],
                   stderr=subprocess.STDOUT)
    rd = LineReader(iw)
    rd.wait_for(lambda ls: any("Watches established" in l for l in ls), 5,
                "inotifywait to be ready")
    n0 = len(rd.lines)
    # no one reads tasks/0/status through the mount: the watch is all there is
    st = env.status(g)
    t_end = time.monotonic() + 10
    while st["state"] not in ("Succeeded", "Failed") and time.monotonic() < t_end:
        time.sleep(0.1)
        st = env.status(g)
    rd.wait_for(lambda ls: any(" status" in l and ("MODIFY" in l or "CLOSE_WRITE" in l)
                               for l in ls[n0:]), 10,
                "an inotify event on tasks/0/status, through the directory")
    check(st["state"] == "Succeeded", "group ended %s" % st["state"])


@case(timeout=60)
def test_watch_after_submission_misses_nothing(env):
    """A watch starts after what its opener has seen: the writer of a spec
    has seen the events up to its write, so `echo spec > spec.yaml; cat
    watch` shows Accepted and everything after, once."""
    env.queue()
    g = "queues/q/groups/w"
    env.mkdir(g)
    env.submit(g, 'completions: 2\nparallelism: 1\ncommand: ["/bin/sh", "-c", "sleep 0.3"]\n')
    out = env.sh("cat %s" % env.p(g, "watch"), timeout=20).stdout.splitlines()
    check(out and " Accepted " in out[0], "the watch's first line: %r" % out[:2])
    check(out == env.read(os.path.join(g, "events")).splitlines(),
          "the watch is not the group's events: %r" % out)


@case(timeout=60)
def test_events_then_watch_is_gapless(env):
    """`cat events; cat watch`: the watch goes on where the reader's read
    of events ended, no line lost between the two and none twice."""
    g = env.group('completions: 3\nparallelism: 1\ncommand: ["/bin/sh", "-c", "sleep 0.4"]\n')
    env.wait(os.path.join(g, "tasks/0"), "Running", timeout=10)
    before = env.read(os.path.join(g, "events")).splitlines()
    out = env.sh("cat %s" % env.p(g, "watch"), timeout=20).stdout.splitlines()
    env.wait(g, "Succeeded", timeout=10)
    every = env.read(os.path.join(g, "events")).splitlines()
    check(before + out == every, "events (%d lines) + watch (%d lines) != events (%d lines):"
          " %r" % (len(before), len(out), len(every), out[:3]))
