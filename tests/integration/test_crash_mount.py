"""What happens to the mount when the daemon dies (README: Reliability).

A FUSE connection is aborted by the kernel when the last descriptor of its
/dev/fuse is closed.  So as long as no process that holds /dev/fuse ever
waits on the mount itself, a killed daemon takes its connection with it:
every request in flight fails (ENOTCONN), the daemon is reaped, and the
next daemon mounts again.  These tests kill the daemon at the worst moment
for that rule - its notifier inside an open() on the mount that only the
dead loop could answer (fault point touch-hold) - and check that nothing
but the daemon ever holds /dev/fuse.  And for a connection the kernel
cannot abort (some process still holds the device), the next daemon's
watchdog aborts it through fusectl."""
import os
import signal
import subprocess
import time

from jfit import TestFailure, case, check, fds_to


def fuse_holders(env):
    """Processes of this test (command line or working directory under its
    temporary directory) with /dev/fuse open: {pid: comm}."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        pid = int(d)
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read()
            cwd = os.readlink("/proc/%d/cwd" % pid)
        except OSError:
            continue
        if env.tmp.encode() not in cmd and not cwd.startswith(env.tmp):
            continue
        if fds_to(pid, "/dev/fuse"):
            try:
                with open("/proc/%d/comm" % pid) as f:
                    out[pid] = f.read().strip()
            except OSError:
                pass
    return out


def stat_mount(env, timeout=5):
    """stat(2) of the mount point in a child with a deadline: (rc, stderr).
    A wedged mount would keep the child in an uninterruptible wait, so the
    child is only waited for, never relied on to die."""
    p = subprocess.Popen(["stat", "-c", "%i", env.mnt], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TestFailure("stat %s still blocked after %d s: the mount is wedged\n%s"
                          % (env.mnt, timeout, env.all_stacks()))
    return p.returncode, err


def held_touch(env, timeout=10):
    """Make a change the notifier must touch, and wait until the fault point
    holds its open."""
    q = env.queue("q")
    env.read(os.path.join(q, "status"))        # the kernel now holds it
    env.mkdir(os.path.join(q, "groups/g"))
    env.submit(os.path.join(q, "groups/g"), 'command: ["sleep", "3"]\n')
    env.poll_until(lambda: "fault touch-hold" in env.daemon.stderr_text(), timeout,
                   "the fault point to hold the notifier's open")


@case(timeout=90)
def test_kill_while_notifier_in_open(env):
    """kill -9 while the notifier waits inside an open() on the mount: the
    daemon is reaped at once, the mount answers ENOTCONN (or is gone), no
    process is left in the mount's requests, and a new daemon mounts and
    finishes the work."""
    env.start_with_fault("touch-hold:1")
    held_touch(env)
    d = env.daemon
    t0 = time.monotonic()
    d.kill9(detach=False, timeout=10)
    reaped = time.monotonic() - t0
    rc, err = stat_mount(env)
    check(rc != 0 and "Transport endpoint is not connected" in err or rc == 0,
          "stat of the dead mount: rc %d %r" % (rc, err))
    holders = fuse_holders(env)
    check(not holders, "processes still hold /dev/fuse after the daemon died: %r" % holders)
    # the next daemon clears the dead mount itself
    env.start()
    g = "queues/q/groups/g"
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "group ended %s: %s" % (st["state"], st["message"]))
    print("reaped %.2f s after SIGKILL; stat of the dead mount: %s"
          % (reaped, err.strip() or "ok (gone)"))


@case(timeout=60)
def test_only_the_daemon_holds_the_device(env):
    """While tasks run, the daemon is the only process with /dev/fuse open:
    not its touch helper, not a supervisor, not a task; none of them works
    in a directory on the mount."""
    g = env.group('command: ["sleep", "5"]\ncompletions: 2\n')
    env.wait(g, pred=lambda s: s["running"] == 2, timeout=10, what="2 running")
    env.read(os.path.join(g, "status"))
    holders = fuse_holders(env)
    check(list(holders) == [env.daemon.pid],
          "/dev/fuse held by %r; only the daemon (%d) may" % (holders, env.daemon.pid))
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cwd = os.readlink("/proc/%s/cwd" % d)
        except OSError:
            continue
        check(not (cwd == env.mnt or cwd.startswith(env.mnt + "/")),
              "pid %s works on the mount (%s)" % (d, cwd))
    env.ctl(g, "stop")


def abort_files():
    base = "/sys/fs/fuse/connections"
    try:
        return {c: os.path.join(base, c) for c in os.listdir(base)}
    except OSError:
        return {}


@case(timeout=90)
def test_watchdog_aborts_a_wedged_mount(env):
    """A connection the kernel cannot abort because some other process still
    holds /dev/fuse (fault point keep-device: a child that keeps the device
    and nothing else), its daemon dead: a reader of the mount waits for
    ever; the next daemon aborts the connection through fusectl before it
    mounts, says so in its log, and the stuck reader is freed."""
    if os.geteuid() != 0:
        from jfit import Skip
        raise Skip("aborting a connection through fusectl needs root")
    env.start_with_fault("keep-device:1")
    g = env.group('command: ["sleep", "3"]\n')
    keeper = env.daemon.stderr_text()
    check("keeps /dev/fuse" in keeper, "no device keeper was started:\n" + keeper[-2000:])
    d = env.daemon
    d.kill9(detach=False, timeout=10)
    # a reader stuck in the mount, as a user's shell would be (open always
    # asks the daemon, whatever the kernel has cached)
    stuck = subprocess.Popen(["cat", env.p("queues/q/status")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(0.5)
    check(stuck.poll() is None, "the reader was not stuck: the connection died by itself")
    # the next daemon finds the connection alive and its daemon dead
    env.start()
    log = env.daemon.stderr_text()
    check("aborted FUSE connection" in log, "the watchdog said nothing:\n" + log[-2000:])
    try:
        stuck.wait(10)
    except subprocess.TimeoutExpired:
        raise TestFailure("the reader stuck in the dead mount was not freed")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "group ended %s" % st["state"])
    print("watchdog: " + [x for x in log.splitlines() if "aborted FUSE connection" in x][0])


@case(timeout=30)
def test_state_inside_the_mount_refused(env):
    """A state directory under the mount point would have the daemon read
    its own database through itself: refused before anything is touched."""
    mnt = os.path.join(env.tmp, "m2")
    os.makedirs(mnt)
    from jfit import jobfs_bin
    r = subprocess.run([jobfs_bin(), "--state", os.path.join(mnt, "state"), mnt],
                       capture_output=True, text=True, timeout=10)
    check(r.returncode == 2, "exit %d: %s" % (r.returncode, r.stderr))
    check("is inside the mount point" in r.stderr, r.stderr)
    check(not os.path.exists(os.path.join(mnt, "state")), "the state directory was made")
