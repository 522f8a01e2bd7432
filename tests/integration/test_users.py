"""Other users: owners, --allow-other, private queues, tasks run as their owners.

Two real local users are made for each test (useradd, removed at the end);
every operation of theirs runs in a process of that user (runuser), so the
kernel hands jobfs their real uid.  Root is needed; without it the tests
skip.
"""
import errno
import grp
import json
import os
import pwd
import re
import stat
import subprocess
import time

import jfit
from jfit import Daemon, Skip, TestFailure, case, check, money

PYTHON = "/usr/bin/python3"

# Run as a test user: one file-system operation, the outcome as JSON.
PROBE = r"""
import errno, json, os, sys
op, path = sys.argv[1], sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else None
out = {"ok": True}
try:
    if op == "read":
        with open(path, "rb") as f:
            out["data"] = f.read().decode("utf-8", "replace")
    elif op == "write":
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, arg.encode())
        finally:
            os.close(fd)
    elif op == "ls":
        out["data"] = sorted(os.listdir(path))
    elif op == "stat":
        st = os.stat(path)
        out["data"] = [st.st_uid, st.st_gid, st.st_mode]
    elif op == "mkdir":
        os.mkdir(path)
    elif op == "rmdir":
        os.rmdir(path)
    elif op == "rename":
        os.rename(path, arg)
    elif op == "chdir":
        os.chdir(path)
    elif op == "access":
        out["data"] = os.access(path, {"r": os.R_OK, "w": os.W_OK, "x": os.X_OK}[arg])
    elif op == "chmod":
        os.chmod(path, int(arg, 8))
    elif op == "truncate":
        os.truncate(path, 0)
    elif op == "create":
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    else:
        raise SystemExit("unknown op " + op)
except OSError as e:
    out = {"ok": False, "errno": errno.errorcode.get(e.errno, str(e.errno))}
print(json.dumps(out))
"""

IDSPEC = 'command: ["/bin/sh", "-c", "id -u; id -g; id -G"]\n'


class Users:
    """Two users a and b (b not in a's extra group), removed by remove()."""

    def __init__(self):
        self.tag = "%d" % (os.getpid() % 100000)
        self.group = "jfit-g%s" % self.tag
        self.a = "jfit-a%s" % self.tag
        self.b = "jfit-b%s" % self.tag
        self.made = []

    def make(self):
        if os.geteuid() != 0:
            raise Skip("not running as root: cannot create two test users (useradd) "
                       "or run as them")
        for prog in ("useradd", "userdel", "groupadd", "groupdel", "runuser"):
            if not jfit.have(prog):
                raise Skip("%s not found" % prog)
        if not os.access(PYTHON, os.X_OK):
            raise Skip("%s not found: the per-user probe needs it" % PYTHON)
        self.remove()
        run(["groupadd", self.group])
        self.made.append(("group", self.group))
        run(["useradd", "-m", "-G", self.group, self.a])
        self.made.append(("user", self.a))
        run(["useradd", "-m", self.b])
        self.made.append(("user", self.b))
        self.pa = pwd.getpwnam(self.a)
        self.pb = pwd.getpwnam(self.b)
        self.gid_extra = grp.getgrnam(self.group).gr_gid
        return self

    def remove(self):
        for u in (self.a, self.b):
            try:
                pwd.getpwnam(u)
            except KeyError:
                continue
            subprocess.run(["userdel", "-f", "-r", u], capture_output=True)
        try:
            grp.getgrnam(self.group)
            subprocess.run(["groupdel", self.group], capture_output=True)
        except KeyError:
            pass


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise TestFailure("%s: %s" % (" ".join(argv), r.stderr.strip()))
    return r


def probe(user, op, path, arg=None):
    """One operation as user: {"ok": True, "data": ...} or {"ok": False, "errno": NAME}."""
    argv = ["runuser", "-u", user, "--", PYTHON, "-c", PROBE, op, path]
    if arg is not None:
        argv.append(arg)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=20, cwd="/")
    try:
        return json.loads(r.stdout)
    except ValueError:
        raise TestFailure("probe %s %s as %s: %r %r" % (op, path, user, r.stdout, r.stderr))


def ok(user, op, path, arg=None):
    """The operation as user must succeed; returns what it read."""
    out = probe(user, op, path, arg)
    check(out["ok"], "%s %s as %s: %s" % (op, path, user, out.get("errno")))
    return out.get("data", True)


def refused(user, op, path, arg=None, want="EACCES"):
    out = probe(user, op, path, arg)
    check(not out["ok"] and out["errno"] == want, "%s %s as %s: got %r, want %s"
          % (op, path, user, out, want))


def wait_done(env, path, timeout=20):
    st = env.wait(path, ("Succeeded", "Failed", "Invalid"), timeout=timeout)
    check(st["state"] == "Succeeded", "%s ended %s: %s" % (path, st["state"], st["message"]))
    return st


def ids_from_logs(env, group):
    lines = env.read(os.path.join(group, "tasks/0/nodes/0/logs")).split("\n")
    check(len(lines) >= 3, "logs of %s: %r" % (group, lines))
    return int(lines[0]), int(lines[1]), sorted(int(x) for x in lines[2].split())


def user_groups(pw):
    return sorted(set([pw.pw_gid] + os.getgrouplist(pw.pw_name, pw.pw_gid)))


def allow_other(env):
    """Remount the test's tree as root with --allow-other."""
    env.stop()
    env.daemon_args = ["--allow-other"]
    return env.start()


def mode(env, path):
    return stat.S_IMODE(os.stat(env.p(path)).st_mode)


@case(timeout=120)
def test_owners_and_other_users(env):
    u = Users().make()
    try:
        owners(env, u)
    finally:
        u.remove()


def owners(env, u):
    allow_other(env)
    A, B = u.a, u.b
    p = env.p
    check(mode(env, "queues") == 0o1777 and mode(env, "tasks") == 0o1777,
          "queues/tasks modes %o %o" % (mode(env, "queues"), mode(env, "tasks")))
    # A makes a queue and a group; the task runs as A, with A's groups only
    ok(A, "mkdir", p("queues/qa"))
    ok(A, "mkdir", p("queues/qa/groups/ga"))
    st = ok(B, "stat", p("queues/qa/groups/ga"))
    check(st[0] == u.pa.pw_uid and st[1] == u.pa.pw_gid,
          "group dir owner %r, want %d:%d" % (st, u.pa.pw_uid, u.pa.pw_gid))
    check(stat.S_IMODE(st[2]) == 0o755, "group dir mode %o" % st[2])
    check(ok(A, "access", p("queues/qa/groups/ga/spec.yaml"), "w") is True,
          "A: test -w on A's draft spec says no")
    check(ok(B, "access", p("queues/qa/groups/ga/spec.yaml"), "w") is False,
          "B: test -w on A's spec says yes")
    check(ok(B, "access", p("queues/qa/groups/ga/spec.yaml"), "r") is True,
          "B: test -r on A's spec says no")
    refused(B, "write", p("queues/qa/groups/ga/spec.yaml"), IDSPEC)
    check(env.status("queues/qa/groups/ga")["state"] == "Draft",
          "B's refused write changed A's draft: %r" % env.status("queues/qa/groups/ga"))
    ok(A, "write", p("queues/qa/groups/ga/spec.yaml"), IDSPEC)
    wait_done(env, "queues/qa/groups/ga")
    uid, gid, groups = ids_from_logs(env, "queues/qa/groups/ga")
    check((uid, gid) == (u.pa.pw_uid, u.pa.pw_gid),
          "A's task ran as %d:%d, want %d:%d" % (uid, gid, u.pa.pw_uid, u.pa.pw_gid))
    check(groups == user_groups(u.pa) and u.gid_extra in groups and 0 not in groups,
          "A's task groups %r, want %r" % (groups, user_groups(u.pa)))
    logs = ok(B, "read", p("queues/qa/groups/ga/tasks/0/nodes/0/logs"))
    check(logs.split("\n")[0] == str(u.pa.pw_uid), "B reads A's logs: %r" % logs)
    # the modes say what the rules allow
    g = "queues/qa/groups/ga"
    for f, want in (("spec.yaml", 0o444), ("ctl", 0o644), ("status", 0o444),
                    ("tasks", 0o755), ("tasks/0", 0o555), ("tasks/0/ctl", 0o644)):
        check(mode(env, os.path.join(g, f)) == want,
              "%s/%s mode %o, want %o" % (g, f, mode(env, os.path.join(g, f)), want))
    check(os.stat(p(g, "tasks/0/nodes/0/logs")).st_uid == u.pa.pw_uid, "logs owner")
    check(ok(A, "access", p(g, "spec.yaml"), "w") is False, "accepted spec writable by test -w")
    # B reads A's status and cannot change anything of A's
    st = json.loads(ok(B, "read", p(g, "status.json")))
    check(st["state"] == "Succeeded", "B reads A's status: %r" % st)
    check(sorted(ok(B, "ls", p("queues/qa/groups"))) == ["ga"], "B lists A's groups")
    refused(B, "write", p(g, "spec.yaml"), IDSPEC)
    refused(B, "write", p(g, "ctl"), "restart\n")
    refused(B, "write", p(g, "tasks/0/ctl"), "restart\n")
    refused(B, "rename", p(g), p("queues/qa/groups/gb"))
    refused(B, "rename", p(g, "tasks/0"), p(g, "tasks/zero"))
    refused(B, "rmdir", p(g))
    refused(B, "write", p("queues/qa/spec.yaml"), "capacity: 1\n")
    refused(B, "rmdir", p("queues/qa"))
    refused(B, "chmod", p(g, "ctl"), "666", want="EPERM")
    refused(B, "truncate", p(g, "ctl"))
    refused(B, "create", p(g, ".spec.yaml.swp"))     # an editor's temp file
    refused(B, "create", p("queues/qa/.spec.yaml.swp"))
    check(env.status(g)["state"] == "Succeeded", "B changed A's group")
    # a draft: an fd that root opened and B writes through is refused at write()
    ok(A, "mkdir", p("queues/qa/groups/gd"))
    code = ("import os,sys\n"
            "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)\n"
            "os.setgroups([]); os.setresgid(%d, %d, %d); os.setresuid(%d, %d, %d)\n"
            "try:\n    os.write(fd, b'command: [true]\\n'); print('written')\n"
            "except OSError as e:\n    print(e.errno)\n"
            "os.close(fd)\n" % ((u.pb.pw_gid,) * 3 + (u.pb.pw_uid,) * 3))
    r = subprocess.run([PYTHON, "-c", code, p("queues/qa/groups/gd/spec.yaml")],
                       capture_output=True, text=True, timeout=20)
    check(r.stdout.strip() == str(errno.EACCES),
          "B writing through root's fd: %r %r" % (r.stdout, r.stderr))
    check(env.status("queues/qa/groups/gd")["state"] == "Draft",
          "B's write through a passed fd submitted: %r" % env.status("queues/qa/groups/gd"))
    # root may do everything; A's task still runs as A
    env.submit("queues/qa/groups/gd", IDSPEC)
    wait_done(env, "queues/qa/groups/gd")
    uid, gid, _ = ids_from_logs(env, "queues/qa/groups/gd")
    check((uid, gid) == (u.pa.pw_uid, u.pa.pw_gid),
          "root's spec for A's group ran as %d:%d, want A" % (uid, gid))
    os.rename(p("queues/qa/groups/gd"), p("queues/qa/groups/gd2"))
    os.rmdir(p("queues/qa/groups/gd2"))
    # B makes its own group in A's shared queue: it is B's, and runs as B
    ok(B, "mkdir", p("queues/qa/groups/gb"))
    st = ok(A, "stat", p("queues/qa/groups/gb"))
    check(st[0] == u.pb.pw_uid, "B's group in A's queue is owned by %d" % st[0])
    refused(A, "write", p("queues/qa/groups/gb/spec.yaml"), IDSPEC)
    ok(B, "write", p("queues/qa/groups/gb/spec.yaml"), IDSPEC)
    wait_done(env, "queues/qa/groups/gb")
    uid, gid, groups = ids_from_logs(env, "queues/qa/groups/gb")
    check((uid, gid) == (u.pb.pw_uid, u.pb.pw_gid), "B's task ran as %d:%d" % (uid, gid))
    check(u.gid_extra not in groups and 0 not in groups, "B's task groups %r" % groups)
    refused(A, "write", p("queues/qa/groups/gb/ctl"), "restart\n")
    refused(A, "rmdir", p("queues/qa/groups/gb"))
    ok(B, "rename", p("queues/qa/groups/gb"), p("queues/qa/groups/gb2"))
    ok(B, "rmdir", p("queues/qa/groups/gb2"))
    # and its own batch in /tasks
    ok(B, "mkdir", p("tasks/bb"))
    check(ok(A, "stat", p("tasks/bb"))[0] == u.pb.pw_uid, "B's batch owner")
    refused(A, "write", p("tasks/bb/spec.yaml"), IDSPEC)
    ok(A, "rename", p(g), p("queues/qa/groups/ga2"))
    ok(A, "rmdir", p("queues/qa/groups/ga2"))
    ok(B, "rmdir", p("tasks/bb"))
    ok(A, "rmdir", p("queues/qa"))


@case(timeout=120)
def test_private_queue(env):
    u = Users().make()
    try:
        private(env, u)
    finally:
        u.remove()


def private(env, u):
    allow_other(env)
    A, B = u.a, u.b
    p = env.p
    ok(A, "mkdir", p("queues/pq"))
    ok(A, "write", p("queues/pq/spec.yaml"), "capacity: 4\nprivate: true\n")
    check("private" in env.read("queues/pq/events"), "no private in the queue's events")
    check(mode(env, "queues/pq") == 0o700, "private queue mode %o" % mode(env, "queues/pq"))
    # the directory shows; nothing in it does
    check("pq" in ok(B, "ls", p("queues")), "B does not see the queue's name")
    refused(B, "ls", p("queues/pq"))
    refused(B, "read", p("queues/pq/status"))
    refused(B, "stat", p("queues/pq/status"))
    refused(B, "chdir", p("queues/pq"))
    refused(B, "mkdir", p("queues/pq/groups/bg"))
    refused(B, "write", p("queues/pq/spec.yaml"), "capacity: 1\n")
    check(ok(B, "access", p("queues/pq"), "r") is False, "B: test -r on the private queue")
    # its owner and root use it as any queue
    ok(A, "mkdir", p("queues/pq/groups/g1"))
    ok(A, "write", p("queues/pq/groups/g1/spec.yaml"), IDSPEC)
    wait_done(env, "queues/pq/groups/g1")
    check(ok(A, "ls", p("queues/pq/groups")) == ["g1"], "A lists its private queue")
    check(ids_from_logs(env, "queues/pq/groups/g1")[0] == u.pa.pw_uid, "ran as A")
    # B right after A: no entry the kernel cached for A lets B in
    for _ in range(3):
        ok(A, "read", p("queues/pq/groups/g1/status"))
        refused(B, "read", p("queues/pq/groups/g1/status"))
        refused(B, "stat", p("queues/pq/groups/g1"))
    # a node's attempts are its node's (reference 9.2)
    att = "queues/pq/groups/g1/tasks/0/nodes/0/attempts"
    check(ok(A, "ls", p(att)) == ["1"], "A lists its node's attempts")
    ok(A, "read", p(att + "/1/status"))
    ok(A, "read", p(att + "/1/logs"))
    refused(B, "ls", p(att))
    refused(B, "read", p(att + "/1/logs"))
    refused(B, "stat", p(att + "/1/status"))
    node = "queues/pq/groups/g1/tasks/0/nodes/0"
    check(mode(env, att) == mode(env, node) and mode(env, att + "/1") == mode(env, node) and
          mode(env, att + "/1/logs") == mode(env, node + "/logs") and
          mode(env, att + "/1/status") == mode(env, node + "/status"),
          "attempts modes %o %o %o, the node's %o %o" %
          (mode(env, att), mode(env, att + "/1"), mode(env, att + "/1/logs"),
           mode(env, node), mode(env, node + "/logs")))
    check(os.stat(env.p(att, "1/logs")).st_uid == u.pa.pw_uid, "an attempt's owner")
    env.mkdir("queues/pq/groups/rootg")
    env.submit("queues/pq/groups/rootg", IDSPEC)
    wait_done(env, "queues/pq/groups/rootg")
    ok(A, "read", p("queues/pq/groups/rootg/status"))
    # a queue with another user's group cannot turn private
    ok(A, "mkdir", p("queues/q2"))
    ok(B, "mkdir", p("queues/q2/groups/bg"))
    refused(A, "write", p("queues/q2/spec.yaml"), "private: true\n", want="EBUSY")
    check(ok(B, "ls", p("queues/q2/groups")) == ["bg"], "B lost sight of its group")
    ok(B, "rmdir", p("queues/q2/groups/bg"))
    ok(A, "write", p("queues/q2/spec.yaml"), "private: true\n")
    refused(B, "ls", p("queues/q2"))
    # made shared again, it opens up
    ok(A, "write", p("queues/q2/spec.yaml"), "private: false\n")
    env.poll_until(lambda: probe(B, "ls", p("queues/q2")).get("data"), 5,
                   "B to see into q2 once shared again")
    # and the state survives a restart
    env.remount()
    refused(B, "read", p("queues/pq/groups/g1/status"))
    ok(A, "read", p("queues/pq/groups/g1/status"))


@case(timeout=120)
def test_private_billing(env):
    """/billing/ledger.csv, summary and cost show a reader only the rows of
    queues they may look into: a private queue's rows to its owner and root,
    not to another user (who sees the shared queue's and the batches'), and
    each reader's totals are the sums of the rows it is shown.  A reading
    cached for one user is never handed to another."""
    u = Users().make()
    try:
        private_billing(env, u)
    finally:
        u.remove()


def ledger_of(text):
    import csv
    import io
    return list(csv.DictReader(io.StringIO(text)))


def private_billing(env, u):
    allow_other(env)
    A, B = u.a, u.b
    p = env.p
    spec = 'command: ["/bin/sh", "-c", "sleep 1.2"]\n'
    ok(A, "mkdir", p("queues/pq"))
    ok(A, "write", p("queues/pq/spec.yaml"), "capacity: 4\nprivate: true\n")
    ok(A, "mkdir", p("queues/pq/groups/secret"))
    ok(A, "write", p("queues/pq/groups/secret/spec.yaml"), spec)
    ok(B, "mkdir", p("queues/qb"))
    ok(B, "mkdir", p("queues/qb/groups/open"))
    ok(B, "write", p("queues/qb/groups/open/spec.yaml"), spec)
    ok(B, "mkdir", p("tasks/bb"))
    ok(B, "write", p("tasks/bb/spec.yaml"), spec)
    for g in ("queues/pq/groups/secret", "queues/qb/groups/open", "tasks/bb"):
        wait_done(env, g)
    env.poll_until(lambda: len(env.ledger()) == 3, 5, "three closed ledger rows")

    def view(user):
        led = ok(user, "read", p("billing/ledger.csv"))
        summ = ok(user, "read", p("billing/summary"))
        cost = ok(user, "read", p("billing/cost"))
        return ledger_of(led), led, summ, cost

    # read as A, then at once as B and root: nobody gets another's rendering
    for _ in range(2):
        ra, la, sa, ca = view(A)
        rb, lb, sb, cb = view(B)
        rr = env.ledger()
        check(sorted(r["queue"] for r in ra) == ["", "pq", "qb"],
              "A's ledger rows: %r" % [(r["queue"], r["group"]) for r in ra])
        check(sorted(r["queue"] for r in rb) == ["", "qb"],
              "B's ledger rows: %r" % [(r["queue"], r["group"]) for r in rb])
        check(len(rr) == 3, "root's ledger rows: %r" % rr)
        check("pq" not in lb and "secret" not in lb, "B's ledger.csv names the private queue")
        check("pq" not in sb and "secret" not in sb, "B's summary names the private queue:\n" + sb)
        check("pq" in sa and "secret" in sa, "A's summary lacks its own queue:\n" + sa)
        # cost.svg (reference 11) draws the same rows: a line per queue shown
        svg_a = ok(A, "read", p("billing/cost.svg"))
        svg_b = ok(B, "read", p("billing/cost.svg"))
        check("<title>pq</title>" in svg_a, "A's cost.svg lacks its own queue")
        check("pq" not in svg_b and "<title>qb</title>" in svg_b,
              "B's cost.svg: %s" % re.findall(r"<title>[^<]*</title>", svg_b))
        # each reader's totals are the sums of the rows it is shown
        for rows, summ, cost, who in ((ra, sa, ca, "A"), (rb, sb, cb, "B")):
            total = sum(money(r["amount"] + " CNY")[0] for r in rows)
            secs = sum(int(r["seconds"]) for r in rows)
            check(money(cost)[0] == total, "%s: billing/cost %r, rows %d" % (who, cost, total))
            first = summ.splitlines()[0]
            check(first.startswith("total (ledger.csv): ") and
                  first.endswith(", %d node-seconds" % secs),
                  "%s: summary %r, rows %d s" % (who, first, secs))
        # stat tells each reader the size of what it reads (the kernel
        # keeps one copy of an inode's attributes for every user)
        os.stat(p("billing/ledger.csv"))
        b_size = json.loads(subprocess.run(
            ["runuser", "-u", B, "--", PYTHON, "-c",
             "import os,sys,json; p=sys.argv[1]; s=os.stat(p).st_size; "
             "print(json.dumps([s, len(open(p,'rb').read())]))", p("billing/ledger.csv")],
            capture_output=True, text=True, timeout=20).stdout)
        check(b_size[0] == b_size[1], "B: stat says %d bytes, read gives %d" % tuple(b_size))
    # the queue's owner after a restart still sees its rows, B still does not
    env.remount()
    check(sorted(r["queue"] for r in ledger_of(ok(B, "read", p("billing/ledger.csv")))) ==
          ["", "qb"], "B after a restart")
    check(len(ledger_of(ok(A, "read", p("billing/ledger.csv")))) == 3, "A after a restart")


@case(timeout=60)
def test_mount_is_the_mounting_users(env):
    u = Users().make()
    try:
        # a root daemon without --allow-other: FUSE lets no one else in
        refused(u.a, "stat", env.mnt)
        refused(u.b, "ls", env.mnt)
        check(os.path.exists(env.p("README")), "root lost its own mount")
    finally:
        u.remove()


@case(timeout=90)
def test_daemon_as_ordinary_user(env):
    u = Users().make()
    try:
        ordinary(env, u)
    finally:
        u.remove()


def ordinary(env, u):
    fm = subprocess.run(["sh", "-c", "command -v fusermount3"], capture_output=True, text=True)
    path = fm.stdout.strip()
    if not path or not os.stat(path).st_mode & stat.S_ISUID:
        raise Skip("fusermount3 is not setuid root: an ordinary user cannot mount")
    for prog in (jfit.jobfs_bin(), os.path.join(os.path.dirname(jfit.jobfs_bin()), "jobfs-shim")):
        if subprocess.run(["runuser", "-u", u.a, "--", "test", "-x", prog]).returncode:
            raise Skip("%s is not executable by an ordinary user" % prog)
    state = os.path.join(env.tmp, "astate")
    mnt = os.path.join(env.tmp, "amnt")
    for d in (state, mnt):
        os.makedirs(d)
        os.chown(d, u.pa.pw_uid, u.pa.pw_gid)
    d = Daemon(env, state, mnt, user=u.a)
    try:
        d.start()
    except TestFailure as e:
        raise TestFailure("%s; daemon stderr: %s" % (e, d.stderr_text()[-500:]))
    ok(u.a, "mkdir", os.path.join(mnt, "tasks/ida"))
    ok(u.a, "write", os.path.join(mnt, "tasks/ida/spec.yaml"), IDSPEC)
    deadline = time.monotonic() + 20
    while True:
        st = json.loads(ok(u.a, "read", os.path.join(mnt, "tasks/ida/status.json")))
        if st["state"] in ("Succeeded", "Failed"):
            break
        check(time.monotonic() < deadline, "A's batch still %s" % st["state"])
        time.sleep(0.1)
    check(st["state"] == "Succeeded", "A's batch: %r" % st)
    logs = ok(u.a, "read", os.path.join(mnt, "tasks/ida/1-ida/nodes/0/logs")).split("\n")
    check(logs[:2] == [str(u.pa.pw_uid), str(u.pa.pw_gid)],
          "task of a daemon run by A ran as %r" % logs[:2])
    # the mountpoint is A's alone: not B's, not even root's
    refused(u.b, "stat", mnt)
    try:
        os.stat(os.path.join(mnt, "README"))
        raise TestFailure("root sees a mount made without allow_other")
    except PermissionError:
        pass
    check(mode_of(u.a, os.path.join(mnt, "queues")) == 0o755,
          "queues of a daemon that is not root: others cannot mkdir")
    d.unmount()
    # with allow_other (only where /etc/fuse.conf lets users ask for it):
    # others look, but make nothing that would run with A's rights
    if not user_allow_other():
        return
    d = Daemon(env, state, mnt, user=u.a, args=["--allow-other"])
    d.start()
    ok(u.b, "read", os.path.join(mnt, "tasks/ida/status"))
    refused(u.b, "mkdir", os.path.join(mnt, "tasks/idb"))
    refused(u.b, "mkdir", os.path.join(mnt, "queues/qb"))
    refused(u.b, "write", os.path.join(mnt, "tasks/ida/ctl"), "restart\n")
    d.unmount()


def mode_of(user, path):
    return stat.S_IMODE(ok(user, "stat", path)[2])


def user_allow_other():
    try:
        with open("/etc/fuse.conf") as f:
            return any(l.strip() == "user_allow_other" for l in f)
    except OSError:
        return False
