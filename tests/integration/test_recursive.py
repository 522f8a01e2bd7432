"""Recursive readers of the tree end: `watch` is served by name but not listed.

`grep -r`, `rg`, `cp -r`, `tar` and `find | xargs cat` open every file they
list and read it to end-of-file.  A `watch` never ends while its object is
unfinished (a queue's, never), so it is left out of every listing while
lookup, getattr, open and read of it by name work as before (reference 1).
The tree here holds a queue, a finished group, a group whose task runs
(`sleep 60`, stopped at the end) and a finished batch of independent tasks.
The subprocess timeouts are safety nets so that a regression fails rather
than hangs the run; what is asserted is the exit status and the output.
"""
import os
import stat
import subprocess

from jfit import LineReader, TestFailure, case, check, have
from test_watch import blocked_in_fuse

SAFETY = 60     # seconds; a recursive reader that blocks fails here


def tree(env):
    """Queue q with groups done (Succeeded) and run (its task sleeping),
    batch tasks/b (Succeeded).  Returns (done, run, batch)."""
    env.queue()
    done = env.group('completions: 2\ncommand: ["/bin/sh", "-c", "echo hello"]\n', name="done")
    run = env.group('command: ["/bin/sh", "-c", "sleep 60"]\n', name="run")
    batch = "tasks/b"
    env.mkdir(batch)
    env.submit(batch, 'count: 1\ncommand: ["/bin/true"]\n')
    env.wait(done, "Succeeded", timeout=20)
    env.wait(batch, "Succeeded", timeout=20)
    env.wait(os.path.join(run, "tasks/0/nodes/0"), "Running", timeout=20)
    return done, run, batch


def stop(env, run):
    check(env.ctl(run, "stop") == 0, "stop %s" % run)
    env.wait(run, "Stopped", timeout=20)


def event_dirs(env):
    """Every directory of the tree that has `events` (found by listing only:
    os.walk opens no file), as paths relative to the mount."""
    out = []
    for root, _dirs, files in os.walk(env.mnt):
        if "events" in files:
            out.append(os.path.relpath(root, env.mnt))
    return sorted(out)


def expected_event_dirs(done, run, batch):
    want = ["queues/q", done, run, batch, batch + "/1-b", batch + "/1-b/nodes/0",
            run + "/tasks/0", run + "/tasks/0/nodes/0"]
    for t in ("0", "1"):
        want += [done + "/tasks/" + t, done + "/tasks/" + t + "/nodes/0"]
    return sorted(want)


def ls_a(env, d):
    return env.sh("ls -a %s" % d, timeout=SAFETY).stdout.split()


@case(timeout=120)
def test_watch_served_by_name_not_listed(env):
    done, run, batch = tree(env)
    dirs = event_dirs(env)
    check(dirs == expected_event_dirs(done, run, batch),
          "directories with events: %r" % dirs)
    for d in dirs:
        names = ls_a(env, d)
        check("events" in names and "status" in names, "ls -a %s: %r" % (d, names))
        check("watch" not in names, "ls -a %s lists watch: %r" % (d, names))
        # by name it is there: lookup, getattr, open
        w = env.p(d, "watch")
        st = os.stat(w)
        check(stat.S_ISREG(st.st_mode), "stat %s/watch: mode %o" % (d, st.st_mode))
        fd = os.open(w, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
        # a lookup does not bring it into the next listing
        names = ls_a(env, d)
        check("watch" not in names, "ls -a %s after stat lists watch: %r" % (d, names))
        check("watch" not in os.listdir(env.p(d)), "listdir %s lists watch" % d)
    # a shell's file-name completion reads the same listing
    comp = env.sh("bash -c 'compgen -f queues/q/; compgen -f %s/w'" % run,
                  timeout=SAFETY, check=False).stdout.split()
    check("queues/q/events" in comp, "compgen -f queues/q/: %r" % comp)
    check(not [c for c in comp if c.endswith("/watch")], "completion offers watch: %r" % comp)
    # a finished object's watch says nothing more and ends
    r = env.sh("cat %s/watch" % done, timeout=SAFETY)
    check(r.returncode == 0, "cat watch of a finished group exited %d" % r.returncode)
    # a running group's watch, opened by name, still delivers and then ends
    cat = env.popen(["cat", env.p(run, "watch")])
    rd = LineReader(cat)
    env.poll_until(lambda: blocked_in_fuse(cat.pid), SAFETY, "cat %s/watch to block" % run)
    stop(env, run)
    rd.wait_for(lambda ls: any(" Stopped " in l for l in ls), 20,
                "a line on %s/watch after stop" % run)
    try:
        cat.wait(SAFETY)
    except subprocess.TimeoutExpired:
        raise TestFailure("cat %s/watch did not end after the group stopped" % run)
    check(cat.returncode == 0, "cat watch exited %s" % cat.returncode)


def matching(env, top, text):
    """Listed files under top that contain text, read here (every listed
    file ends), relative to the mount."""
    out = set()
    for root, _dirs, files in os.walk(env.p(top)):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                if text.encode() in fh.read():
                    out.add(os.path.relpath(p, env.mnt))
    return out


@case(timeout=180)
def test_recursive_readers_end(env):
    done, run, batch = tree(env)
    want = {done + "/status", done + "/tasks/0/status", done + "/tasks/1/status",
            done + "/tasks/0/nodes/0/status", done + "/tasks/1/nodes/0/status"}
    # grep -r: exits 0 and names exactly the files that match
    r = env.sh('grep -r -l "state: Succeeded" queues', timeout=SAFETY, check=False)
    check(r.returncode == 0, "grep -r exited %d: %s" % (r.returncode, r.stderr.strip()))
    got = set(r.stdout.split())
    found = matching(env, "queues", "state: Succeeded")
    check(want <= found, "files with state: Succeeded, read one by one: %r" % sorted(found))
    check(got == found, "grep -r -l listed %r, want %r" % (sorted(got), sorted(found)))
    r = env.sh('grep -r "state: Succeeded" queues', timeout=SAFETY, check=False)
    check(r.returncode == 0, "grep -r exited %d: %s" % (r.returncode, r.stderr.strip()))
    lines = r.stdout.splitlines()
    check(sorted(lines) == sorted("%s:state: Succeeded" % f for f in found),
          "grep -r printed %r" % lines)
    # grep -r over the whole mount as well (README, cluster, billing, tasks/)
    r = env.sh('grep -r -l "state: Succeeded" .', timeout=SAFETY, check=False)
    check(r.returncode == 0, "grep -r . exited %d: %s" % (r.returncode, r.stderr.strip()))
    check("./" + batch + "/status" in r.stdout.split(), "grep -r . : %r" % r.stdout)

    # rg (scripts/deps.sh installs ripgrep)
    check(have("rg"), "rg not installed (apt package ripgrep; scripts/deps.sh installs it)")
    r = env.sh('rg -l "state: Succeeded" queues', timeout=SAFETY, check=False)
    check(r.returncode == 0, "rg exited %d: %s" % (r.returncode, r.stderr.strip()))
    got = set(r.stdout.split())
    check(got == found, "rg -l listed %r, want %r" % (sorted(got), sorted(found)))

    # cp -r of the queue: completes, the copy has the status files, no watch
    copy = os.path.join(env.work, "qcopy")
    r = env.sh("cp -r queues/q %s" % copy, timeout=SAFETY, check=False)
    check(r.returncode == 0, "cp -r exited %d: %s" % (r.returncode, r.stderr.strip()))
    for f in ("status", "events", "groups/done/status", "groups/done/tasks/1/status",
              "groups/done/tasks/0/nodes/0/logs", "groups/run/tasks/0/nodes/0/status"):
        check(os.path.isfile(os.path.join(copy, f)), "copy lacks %s" % f)
    with open(os.path.join(copy, "groups/done/status")) as fh:
        check("state: Succeeded" in fh.read(), "copied groups/done/status")
    with open(os.path.join(copy, "groups/done/tasks/0/nodes/0/logs")) as fh:
        check(fh.read() == "hello\n", "copied logs of done/tasks/0")
    copied = [os.path.join(root, f) for root, _d, files in os.walk(copy) for f in files]
    check(not [p for p in copied if os.path.basename(p) == "watch"], "the copy has a watch")

    # every file of the mount, read to its end
    r = env.sh("find . -type f -print0 | xargs -0 cat > /dev/null", timeout=SAFETY, check=False)
    check(r.returncode == 0, "find | xargs cat exited %d: %s" % (r.returncode, r.stderr.strip()))
    r = env.sh("find . -name watch", timeout=SAFETY)
    check(r.stdout == "", "find lists %r" % r.stdout)

    # tar of a batch and of the queue
    r = env.sh("tar -cf /dev/null queues tasks", timeout=SAFETY, check=False)
    check(r.returncode in (0, 1), "tar exited %d: %s" % (r.returncode, r.stderr.strip()))
    stop(env, run)
