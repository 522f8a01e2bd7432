"""jobfs as an ordinary user: mounted through fusermount3, tasks run as that user."""
import json
import os
import pwd
import stat
import subprocess
import time

import jfit
from jfit import Daemon, Skip, TestFailure, case, check

USER = "jobfs-it-user"


def as_user(argv, timeout=10, input=None):
    return subprocess.run(["runuser", "-u", USER, "--"] + argv, capture_output=True, text=True,
                          timeout=timeout, input=input)


def user_ready():
    if os.geteuid() != 0:
        raise Skip("not running as root: cannot create or switch to a test user")
    if not jfit.have("runuser"):
        raise Skip("runuser not found")
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        r = subprocess.run(["useradd", "-m", USER], capture_output=True, text=True)
        if r.returncode != 0:
            raise Skip("useradd -m %s failed: %s" % (USER, r.stderr.strip()))
        pw = pwd.getpwnam(USER)
    fm = subprocess.run(["sh", "-c", "command -v fusermount3"], capture_output=True, text=True)
    path = fm.stdout.strip()
    if not path or not os.stat(path).st_mode & stat.S_ISUID:
        raise Skip("fusermount3 is not setuid root: an ordinary user cannot mount")
    r = as_user(["sh", "-c", "test -r /dev/fuse && test -w /dev/fuse"])
    if r.returncode != 0:
        mode = oct(os.stat("/dev/fuse").st_mode & 0o777) if os.path.exists("/dev/fuse") else "absent"
        raise Skip("/dev/fuse is not usable by an ordinary user here (mode %s; usually 0666): "
                   "libfuse opens it before it falls back to fusermount3" % mode)
    for prog in (jfit.jobfs_bin(), os.path.join(os.path.dirname(jfit.jobfs_bin()), "jobfs-shim")):
        r = as_user(["test", "-x", prog])
        if r.returncode != 0:
            raise Skip("%s is not executable by %s (build dir not readable by that user)"
                       % (prog, USER))
    return pw


@case(timeout=60)
def test_non_root_user(env):
    pw = user_ready()
    state = os.path.join(env.tmp, "ustate")
    mnt = os.path.join(env.tmp, "umnt")
    for d in (state, mnt):
        os.makedirs(d)
        os.chown(d, pw.pw_uid, pw.pw_gid)
    d = Daemon(env, state, mnt, user=USER)
    try:
        d.start()
    except TestFailure as e:
        raise TestFailure("%s; daemon stderr: %s" % (e, d.stderr_text()[-500:]))
    # the daemon runs as the user
    jobfs_pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % p) as f:
                if f.read().strip() != "jobfs":
                    continue
            with open("/proc/%s/cmdline" % p, "rb") as f:
                if state.encode() not in f.read():
                    continue
            with open("/proc/%s/status" % p) as f:
                uid = [l.split()[1] for l in f if l.startswith("Uid:")][0]
        except (OSError, IndexError):
            continue
        jobfs_pids.append((int(p), int(uid)))
    check(jobfs_pids, "no jobfs process found for %s" % state)
    check(all(u == pw.pw_uid for _, u in jobfs_pids), "daemon uids %r, want %d"
          % (jobfs_pids, pw.pw_uid))
    b = os.path.join(mnt, "tasks", "idtest")
    r = as_user(["mkdir", b])
    check(r.returncode == 0, "mkdir as %s: %s" % (USER, r.stderr))
    spec = 'command: ["/bin/sh", "-c", "id -u; id -g; echo $HOME"]\n'
    r = as_user(["sh", "-c", "cat > %s/spec.yaml" % b], input=spec)
    check(r.returncode == 0, "writing the spec as %s: %s" % (USER, r.stderr))
    deadline = time.monotonic() + 20
    st = {}
    while time.monotonic() < deadline:
        r = as_user(["cat", os.path.join(b, "status.json")])
        check(r.returncode == 0, "cat status.json as user: %s" % r.stderr)
        st = json.loads(r.stdout)
        if st["state"] in ("Succeeded", "Failed"):
            break
        time.sleep(0.1)
    check(st.get("state") == "Succeeded", "user's task ended %s: %s"
          % (st.get("state"), st.get("message")))
    r = as_user(["cat", os.path.join(b, "1-idtest", "nodes", "0", "logs")])
    lines = r.stdout.splitlines()
    check(lines[:2] == [str(pw.pw_uid), str(pw.pw_gid)],
          "task ran as %r, want uid %d gid %d" % (lines[:2], pw.pw_uid, pw.pw_gid))
    check(lines[2:3] == [pw.pw_dir], "HOME %r, want %r" % (lines[2:3], pw.pw_dir))
    # the tree belongs to the user
    r = as_user(["stat", "-c", "%u", b])
    check(r.stdout.strip() == str(pw.pw_uid), "owner of the batch dir: %r" % r.stdout)
    d.unmount()
