"""jobfsctl (reference 11) on a real mount: every subcommand and exit code.

- `--help` lists the exit codes; usage errors are 64; an unknown mount 4.
- `submit` of a misspelt key exits 1 and names the key and its line on
  stderr; into a missing queue 4; a bad directory name 1.
- `submit --wait` on a good group exits 0 (its progress bar ends full), on
  a failing one 2; `wait` on a group stopped by `ctl` exits 3; on a
  missing one 4; `wait --timeout` on one that runs on exits 5.
- `get` and `describe`: kubectl-like tables (STATE PROGRESS AGE COST), and
  `-o json` / `-o yaml` parsed back to the states the tree says.
- `cost`: a table with a TOTAL equal to the ledger's sum and the running.
- `logs`: a task's output; `-f` follows a running node line by line (the
  task waits on files the test creates) and ends when it does;
  `--previous` and `--attempt N` on a task that failed twice and then
  succeeded; `-f` started before such a task's first attempt prints every
  line of each of its attempts once, in order, with a separator line
  between attempts, and exits 0 (a task that fails for good: 2).
- The mount point: without --mount and $JOBFS_MOUNT the only jobfs mount
  (in a private mount namespace where it is the only one); two mounts are
  exit 4 naming both; a $JOBFS_MOUNT or --mount that is no jobfs mount
  point, exit 4.
- `top` in tmux, at 100 and 200 columns: the group's name, a progress bar
  that advances between two captures, down+enter opens the group's tasks,
  `l` a node's logs, `q` quits and the pane's process exits; with stdout
  not a terminal, one plain snapshot.  With JOBFS_SCREENSHOTS=DIR the 100-
  and 200-column views are rendered to DIR/jobfsctl-top.png and
  DIR/jobfsctl-top-200.png (lib/termshot.py).

Every task that must still be running when the test looks waits on a file
the test creates: nothing depends on the machine's speed.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

from jfit import SANITIZER_MARKS, Daemon, LineReader, TestFailure, case, check, have, jobfs_bin

GATED = """\
completions: %(n)d
parallelism: %(n)d
command: ["/bin/sh", "-c"]
args: ["echo start $JOB_TASK_INDEX; while [ ! -e %(dir)s/go.$JOB_TASK_INDEX ]; do sleep 0.05; done; echo done $JOB_TASK_INDEX"]
"""


def ctl_bin():
    return os.path.join(os.path.dirname(jobfs_bin()), "jobfsctl")


def ctl(env, *args, check_rc=None, timeout=30, mount=True, input=None):
    argv = [ctl_bin()] + (["--mount", env.mnt] if mount else []) + list(args)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=input,
                       cwd=env.work)
    if check_rc is not None:
        check(r.returncode == check_rc, "jobfsctl %s: exit %d, not %d; stdout %r stderr %r"
              % (" ".join(args), r.returncode, check_rc, r.stdout[-800:], r.stderr[-800:]))
    return r


def gate_dir(env):
    d = os.path.join(env.work, "gates")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    return d


def spec_file(env, name, text):
    os.makedirs(env.work, exist_ok=True)
    p = os.path.join(env.work, name)
    with open(p, "w") as f:
        f.write(text)
    return p


def table(text):
    """A jobfsctl table as a list of dicts keyed by its header."""
    lines = [l for l in text.splitlines() if l.strip()]
    head = lines[0]
    starts = [m.start() for m in re.finditer(r"\S+", head)]
    names = head.split()
    rows = []
    for l in lines[1:]:
        cells = [l[s:(starts[i + 1] if i + 1 < len(starts) else None)].strip()
                 for i, s in enumerate(starts)]
        rows.append(dict(zip(names, cells)))
    return rows


@case(timeout=120)
def test_jobfsctl_commands(env):
    os.makedirs(env.work, exist_ok=True)
    # usage and the exit codes it documents
    r = ctl(env, "--help", check_rc=0, mount=False)
    for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "64 "):
        check(re.search(r"^\s+%s" % code, r.stdout, re.M), "--help lists no exit code %s" % code)
    ctl(env, check_rc=64)
    r = ctl(env, "frobnicate", check_rc=64)
    check("frobnicate" in r.stderr, "unknown command not named: %r" % r.stderr)
    ctl(env, "get", "-o", "xml", check_rc=64)
    ctl(env, "wait", check_rc=64)
    ctl(env, "submit", "queues/q/groups/x", check_rc=64)
    r = subprocess.run([ctl_bin(), "--mount", os.path.join(env.tmp, "nowhere"), "get"],
                       capture_output=True, text=True)
    check(r.returncode == 4, "an absent mount: exit %d" % r.returncode)
    # $JOBFS_MOUNT names the mount as --mount does
    r = subprocess.run([ctl_bin(), "get"], capture_output=True, text=True,
                       env=dict(os.environ, JOBFS_MOUNT=env.mnt))
    check(r.returncode == 0 and r.stdout.startswith("NAME"), "JOBFS_MOUNT: %r" % (r,))
    ctl(env, "get", "/etc", check_rc=4)

    env.queue("q")
    # a misspelt key: refused, the key and its line on stderr, the draft kept
    bad = spec_file(env, "bad.yaml", "completions: 2\ncomand: [\"/bin/true\"]\n")
    r = ctl(env, "submit", "queues/q/groups/bad", bad, check_rc=1)
    check("comand" in r.stderr and "line 2" in r.stderr, "refusal not explained: %r" % r.stderr)
    check(env.status("queues/q/groups/bad")["state"] == "Invalid", "not Invalid")
    ctl(env, "wait", "queues/q/groups/bad", check_rc=1)
    ctl(env, "submit", "queues/nope/groups/g", bad, check_rc=4)
    ctl(env, "submit", "queues/q/groups/bad name", bad, check_rc=1)
    ctl(env, "submit", "queues/q/groups/x", os.path.join(env.work, "absent.yaml"), check_rc=4)

    # --wait on a good group: 0, the bar drawn to the end
    good = spec_file(env, "good.yaml", 'completions: 3\nparallelism: 1\ncommand: ["/bin/sh", "-c"]\n'
                     'args: ["echo hello $JOB_TASK_INDEX"]\n')
    r = ctl(env, "submit", "queues/q/groups/good", good, "--wait", check_rc=0, timeout=60)
    check("queues/q/groups/good submitted" in r.stdout, "stdout: %r" % r.stdout)
    check(re.search(r"\[#+\] 3/3 Succeeded", r.stderr), "no full bar: %r" % r.stderr)
    check(env.status("queues/q/groups/good")["state"] == "Succeeded", "not Succeeded")
    # its spec is read-only once accepted: submitting again is refused
    r = ctl(env, "submit", "queues/q/groups/good", good, check_rc=1)
    check("refused" in r.stderr, "resubmit: %r" % r.stderr)
    # the spec from stdin (-), and an absolute PATH under the mount
    r = subprocess.run([ctl_bin(), "--mount", env.mnt, "submit",
                        env.p("queues/q/groups/stdin"), "-", "--wait"],
                       input=open(good).read(), capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "submit - --wait: %r" % (r,))

    # --wait on a failing group: 2
    fail = spec_file(env, "fail.yaml", 'retries: 0\ncommand: ["/bin/sh", "-c"]\nargs: ["exit 3"]\n')
    r = ctl(env, "submit", "queues/q/groups/fail", fail, "--wait", check_rc=2, timeout=60)
    check("Failed" in r.stderr, "stderr: %r" % r.stderr)
    ctl(env, "wait", "queues/q/groups/fail", check_rc=2)

    # a group that runs until the test stops it: --timeout 5, then stop: 3
    gates = gate_dir(env)
    held = spec_file(env, "held.yaml", GATED % {"n": 1, "dir": gates})
    ctl(env, "submit", "queues/q/groups/held", held, check_rc=0)
    env.wait("queues/q/groups/held", "Running")
    ctl(env, "wait", "queues/q/groups/held", "--timeout", "0.3", check_rc=5)
    w = env.popen([ctl_bin(), "--mount", env.mnt, "wait", "queues/q/groups/held"])
    check(env.ctl("queues/q/groups/held", "stop") == 0, "stop refused")
    try:
        rc = w.wait(30)
    except subprocess.TimeoutExpired:
        rc = None
    check(rc == 3, "wait on a stopped group: %s" % rc)
    ctl(env, "wait", "queues/q/groups/nope", check_rc=4)

    # get: the tree at the top, one object, a collection; json and yaml
    r = ctl(env, "get", check_rc=0)
    rows = {row["NAME"]: row for row in table(r.stdout)}
    head = r.stdout.splitlines()[0].split()
    for col in ("NAME", "STATE", "PROGRESS", "AGE", "COST"):
        check(col in head, "get: no %s column: %r" % (col, head))
    check(rows["queues/q/groups/good"]["STATE"] == "Succeeded"
          and rows["queues/q/groups/good"]["PROGRESS"] == "3/3"
          and rows["queues/q/groups/good"]["COST"].endswith("CNY"), "get good: %r" % rows)
    check(rows["queues/q/groups/fail"]["STATE"] == "Failed", "get fail: %r" % rows)
    check(rows["queues/q/groups/held"]["STATE"] == "Stopped", "get held: %r" % rows)
    check(rows["queues/q/groups/bad"]["STATE"] == "Invalid", "get bad: %r" % rows)
    check("queues/q" in rows, "no queue row: %r" % rows)
    r = ctl(env, "get", "queues/q/groups/good/tasks", check_rc=0)
    got = [row["NAME"] for row in table(r.stdout)]
    check(got == ["queues/q/groups/good/tasks/%d" % i for i in range(3)], "tasks: %r" % got)
    r = ctl(env, "get", "queues/q/groups/good", "-o", "json", check_rc=0)
    objs = json.loads(r.stdout)
    check(len(objs) == 1 and objs[0]["path"] == "queues/q/groups/good"
          and objs[0]["state"] == "Succeeded" and objs[0]["succeeded"] == 3, "json: %r" % objs)
    import yaml
    r = ctl(env, "get", "-o", "yaml", check_rc=0)
    objs = {o["path"]: o for o in yaml.safe_load(r.stdout)}
    want = {p: env.status(p)["state"] for p in objs}
    check(all(objs[p]["state"] == want[p] for p in objs) and "queues/q/groups/fail" in objs,
          "yaml: %r" % objs)
    ctl(env, "get", "queues/q/groups/nope", check_rc=4)

    # describe: the status, the children, the events; json and yaml
    r = ctl(env, "describe", "queues/q/groups/good", check_rc=0)
    check("Path: queues/q/groups/good" in r.stdout and "state: Succeeded" in r.stdout,
          "describe: %r" % r.stdout[:500])
    check("Children:" in r.stdout and "queues/q/groups/good/tasks/2" in r.stdout,
          "describe: no tasks: %r" % r.stdout)
    check(re.search(r"^Events:\n(  \S+ Normal .*\n)+", r.stdout, re.M)
          and "Completed group 3/3" in r.stdout, "describe: no events: %r" % r.stdout)
    d = json.loads(ctl(env, "describe", "-o", "json", "queues/q/groups/fail", check_rc=0).stdout)
    check(d["state"] == "Failed" and any("Failed" in e for e in d["events"]), "json: %r" % d)
    d = yaml.safe_load(ctl(env, "describe", "queues/q/groups/bad", "-o", "yaml",
                           check_rc=0).stdout)
    check(d["state"] == "Invalid" and "comand" in d["message"], "yaml: %r" % d)
    ctl(env, "describe", "queues/q/groups/nope", check_rc=4)

    # cost: the queue's cost is the sum of the ledger's rows
    r = ctl(env, "cost", check_rc=0)
    rows = {row["NAME"]: row for row in table(r.stdout)}
    q = env.status("queues/q")
    check(rows["queues/q"]["COST"] == q["cost"], "cost: %r vs %r" % (rows, q["cost"]))
    total = sum(int(round(float(x["amount"]) * 1e6)) for x in env.ledger())
    check(rows["TOTAL"]["COST"] == "%d.%06d CNY" % (total // 10**6, total % 10**6),
          "TOTAL %r, ledger %d" % (rows["TOTAL"], total))
    r = ctl(env, "cost", "queues/q/groups/good", check_rc=0)
    names = [row["NAME"] for row in table(r.stdout)]
    check(names[:2] == ["queues/q/groups/good", "queues/q/groups/good/tasks/0"]
          and names[-1] == "TOTAL", "cost of a group: %r" % names)
    ctl(env, "cost", "queues/q/groups/nope", check_rc=4)

    # logs: a task (its node 0), a node; a group is not a task
    r = ctl(env, "logs", "queues/q/groups/good/tasks/1", check_rc=0)
    check(r.stdout == "hello 1\n", "logs: %r" % r.stdout)
    r = ctl(env, "logs", "queues/q/groups/good/tasks/2/nodes/0", check_rc=0)
    check(r.stdout == "hello 2\n", "logs of a node: %r" % r.stdout)
    ctl(env, "logs", "queues/q/groups/good", check_rc=1)
    ctl(env, "logs", "queues/q/groups/good/tasks/7", check_rc=4)
    ctl(env, "logs", "queues/q/groups/good/tasks/0", "--attempt", "5", check_rc=4)
    ctl(env, "logs", "queues/q/groups/good/tasks/0", "--attempt", "x", check_rc=64)


@case(timeout=90)
def test_jobfsctl_logs_attempts(env):
    """--previous and --attempt N on a task that failed twice, then succeeded."""
    d = gate_dir(env)
    ctr = os.path.join(d, "ctr")
    env.group("retries: 2\ncommand: [\"/bin/sh\", \"-c\"]\n"
              "args: [\"n=$(( $(cat %s 2>/dev/null || echo 0) + 1 )); echo $n > %s; "
              "echo try $n; [ $n -ge 3 ]\"]\n" % (ctr, ctr))
    ctl(env, "wait", "queues/q/groups/g", check_rc=0, timeout=60)
    t = "queues/q/groups/g/tasks/0"
    check(ctl(env, "logs", t, check_rc=0).stdout == "try 3\n", "logs")
    check(ctl(env, "logs", t, "--previous", check_rc=0).stdout == "try 2\n", "--previous")
    for a in (1, 2, 3):
        r = ctl(env, "logs", t, "--attempt", str(a), check_rc=0)
        check(r.stdout == "try %d\n" % a, "--attempt %d: %r" % (a, r.stdout))
    ctl(env, "logs", t, "--attempt", "4", check_rc=4)
    ctl(env, "logs", t, "--previous", "--attempt", "1", check_rc=64)


@case(timeout=90)
def test_jobfsctl_logs_follow(env):
    """logs -f follows a running node line by line and ends with it."""
    d = gate_dir(env)
    env.group('command: ["/bin/sh", "-c"]\n'
              'args: ["echo line 1; while [ ! -e %s/a ]; do sleep 0.05; done; echo line 2; '
              'while [ ! -e %s/b ]; do sleep 0.05; done; echo line 3"]\n' % (d, d))
    env.wait("queues/q/groups/g", "Running")
    p = env.popen([ctl_bin(), "--mount", env.mnt, "logs", "-f", "queues/q/groups/g/tasks/0"])
    lr = LineReader(p)
    lr.wait_for(lambda ls: "line 1" in ls, 20, "line 1")
    check("line 2" not in lr.lines, "line 2 before its gate: %r" % lr.lines)
    check(p.poll() is None, "logs -f ended while the node runs")
    open(os.path.join(d, "a"), "w").close()
    lr.wait_for(lambda ls: "line 2" in ls, 20, "line 2")
    check(p.poll() is None, "logs -f ended while the node runs")
    open(os.path.join(d, "b"), "w").close()
    lr.wait_for(lambda ls: "line 3" in ls, 20, "line 3")
    try:
        rc = p.wait(20)
    except subprocess.TimeoutExpired:
        rc = None
    check(rc == 0, "logs -f did not end with its node: %s" % rc)
    lr.pump(0.1)
    check(lr.lines == ["line 1", "line 2", "line 3"], "lines: %r" % lr.lines)


# the command of a task whose attempts 1 and 2 fail and 3 succeeds: each
# prints three numbered lines, waits for its gate go.<attempt>, then prints
# a fourth line and a last one without a newline (which `logs`, a stream of
# lines, ends with one: stdout keeps it as written)
ATTEMPTS = ('retries: 2\nafter: [blk]\ncommand: ["/bin/sh", "-c"]\n'
            'args: ["n=$(( $(cat %(d)s/ctr 2>/dev/null || echo 0) + 1 )); echo $n > %(d)s/ctr; '
            'for i in 1 2 3; do echo attempt $n line $i; done; '
            'while [ ! -e %(d)s/go.$n ]; do sleep 0.05; done; '
            'echo attempt $n line 4; printf \'attempt %%s tail\' $n; [ $n -ge 3 ]"]\n')


def attempt_lines(n):
    return ["attempt %d line %d" % (n, i) for i in (1, 2, 3, 4)] + ["attempt %d tail" % n]


SEP = re.compile(r"^==> attempt (\d+) \(attempt (\d+) (\w+): (.*)\) <==$")


def check_follow_output(text, first, last, what):
    """text is attempts first..last, each whole and once, in order, with
    the separator before each but the first."""
    check(text.endswith("\n"), "%s: no newline at the end: %r" % (what, text[-40:]))
    lines = text.split("\n")[:-1]
    want = []
    for n in range(first, last + 1):
        if n > first:
            want.append("SEP %d" % n)
        want += attempt_lines(n)
    got = []
    for l in lines:
        m = SEP.match(l)
        if m:
            check(int(m.group(1)) == int(m.group(2)) + 1 and m.group(3) == "Failed"
                  and "exit code 1" in m.group(4), "%s: separator %r" % (what, l))
            got.append("SEP %s" % m.group(1))
        else:
            got.append(l)
    check(got == want, "%s: lines %r, not %r" % (what, got, want))


@case(timeout=120)
def test_jobfsctl_logs_follow_attempts(env):
    """logs -f across attempts: a task fails twice and then succeeds
    (retries: 2); a follower started before its first attempt prints every
    line of each attempt once, in order, with a separator line between
    attempts, and exits 0 when the task has Succeeded.

    The task waits (`after:`) for a group that waits on a gate file, so the
    follower is started while the node has no attempt yet; each attempt
    prints three lines, then waits for its own gate before its last two, so
    the test sees the follower hold at each point (and the node's `logs`
    switch to the next attempt under it) whatever the machine's speed.
    Then: `--attempt N` and `--previous` give each attempt's own lines,
    `-f --attempt 1` on the ended task replays all three at once, `-f
    --attempt 4` is exit 4, `-f --previous` 64; a task that fails for good
    is exit 2 from `-f`."""
    d = gate_dir(env)
    env.group('command: ["/bin/sh", "-c"]\nargs: ["while [ ! -e %s/blk ]; do sleep 0.05; done"]\n'
              % d, name="blk")
    env.group(ATTEMPTS % {"d": d})
    t = "queues/q/groups/g/tasks/0"
    node = env.p(t, "nodes", "0")
    env.poll_until(lambda: os.path.isdir(node), 20, "the task's node")
    check(env.status(t + "/nodes/0").get("attempt") in (0, "0", ""),
          "the node ran before its gate: %r" % env.status(t + "/nodes/0"))
    p = env.popen([ctl_bin(), "--mount", env.mnt, "logs", "-f", t])
    lr = LineReader(p)
    open(os.path.join(d, "blk"), "w").close()
    for n in (1, 2, 3):
        lr.wait_for(lambda ls: "attempt %d line 3" % n in ls, 30, "attempt %d's line 3" % n)
        check(p.poll() is None, "logs -f ended in attempt %d" % n)
        check("attempt %d line 4" % n not in lr.lines, "line 4 before its gate")
        open(os.path.join(d, "go.%d" % n), "w").close()
    try:
        rc = p.wait(30)
    except subprocess.TimeoutExpired:
        rc = None
    check(rc == 0, "logs -f did not end 0 with its Succeeded task: %s" % rc)
    while not lr.eof:
        lr.pump(1)
    check(lr.buf == b"", "a line cut short: %r" % lr.buf)
    text = "".join(l + "\n" for l in lr.lines)
    check_follow_output(text, 1, 3, "logs -f from before the first attempt")
    check(env.status(t)["state"] == "Succeeded", "task %r" % env.status(t))

    # each attempt on its own, as before
    for a in (1, 2, 3):
        r = ctl(env, "logs", t, "--attempt", str(a), check_rc=0)
        check(r.stdout == "".join(l + "\n" for l in attempt_lines(a)), "--attempt %d: %r" % (a, r.stdout))
    check(ctl(env, "logs", t, check_rc=0).stdout == "".join(l + "\n" for l in attempt_lines(3)), "logs")
    check(ctl(env, "logs", t, "--previous", check_rc=0).stdout == "".join(l + "\n" for l in attempt_lines(2)),
          "--previous")
    # -f on the ended task: from the current attempt, or from --attempt N on
    r = ctl(env, "logs", t, "-f", check_rc=0)
    check(r.stdout == "".join(l + "\n" for l in attempt_lines(3)), "-f after the end: %r" % r.stdout)
    r = ctl(env, "logs", "-f", "--attempt", "1", t, check_rc=0)
    check_follow_output(r.stdout, 1, 3, "-f --attempt 1")
    r = ctl(env, "logs", "-f", "--attempt", "2", t + "/nodes/0", check_rc=0)
    check_follow_output(r.stdout, 2, 3, "-f --attempt 2 of the node")
    r = ctl(env, "logs", "-f", "--attempt", "4", t, check_rc=4)
    check("no attempt 4" in r.stderr, "-f --attempt 4: %r" % r.stderr)
    ctl(env, "logs", "-f", "--previous", t, check_rc=64)
    ctl(env, "logs", "-f", t + "/nodes/0/attempts/1", check_rc=1)

    # a task that fails for good: -f exits 2, after both attempts
    env.group('retries: 1\ncommand: ["/bin/sh", "-c"]\nargs: ["echo try; exit 3"]\n', name="bad")
    ctl(env, "wait", "queues/q/groups/bad", check_rc=2, timeout=60)
    r = ctl(env, "logs", "-f", "--attempt", "1", "queues/q/groups/bad/tasks/0", check_rc=2)
    lines = r.stdout.splitlines()
    check(len(lines) == 3 and lines[0] == "try" and lines[2] == "try"
          and re.match(r"^==> attempt 2 \(attempt 1 Failed: .*exit code 3.*\) <==$", lines[1]),
          "-f of a failed task: %r" % r.stdout)


# ------------------------------------------------------------ the mount point

NS_SCRIPT = r"""
import os, subprocess, sys
keep = sys.argv[1].split(":")
argv = sys.argv[2:]
def unescape(s):
    out, i = "", 0
    while i < len(s):
        if s[i] == "\\" and s[i + 1:i + 4].isdigit():
            out += chr(int(s[i + 1:i + 4], 8)); i += 4
        else:
            out += s[i]; i += 1
    return out
def jobfs():
    with open("/proc/self/mounts") as f:
        for line in f:
            src, mp, typ = line.split()[:3]
            if typ == "fuse.jobfs" or src == "jobfs":
                yield unescape(mp)
for mp in list(jobfs()):
    if mp not in keep:
        subprocess.run(["umount", "-l", mp], check=True)
left = sorted(jobfs())
if left != sorted(keep):
    sys.exit("namespace: jobfs mounts %r, not %r" % (left, keep))
os.execvp(argv[0], argv)
"""


def ctl_alone(env, keep, *args):
    """jobfsctl ARGS (no --mount, $JOBFS_MOUNT unset) in a private mount
    namespace where the only jobfs mounts are the ones in keep."""
    e = dict(os.environ)
    e.pop("JOBFS_MOUNT", None)
    argv = ["unshare", "-m", "--propagation", "private", sys.executable, "-c", NS_SCRIPT,
            ":".join(keep), ctl_bin()] + list(args)
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, env=e, cwd="/")


@case(timeout=90)
def test_jobfsctl_mount_discovery(env):
    """Without --mount and $JOBFS_MOUNT jobfsctl uses the only jobfs mount
    in /proc/self/mounts; with two it names both and says to use --mount
    (exit 4); a $JOBFS_MOUNT or --mount that is no jobfs mount point is a
    clear error (exit 4).

    Other tests (and other users' daemons) may have jobfs mounted on this
    machine while this one runs, so "the only mount" cannot be arranged in
    the machine's own mount namespace.  jobfsctl runs instead in a private
    mount namespace of its own (`unshare -m --propagation private`: a copy
    of the machine's mount table whose changes propagate nowhere), where a
    helper lazily unmounts every jobfs mount but this test's before it
    execs jobfsctl, and fails if the table then holds any other.  An
    unmount there only drops that namespace's copy: the other mounts, and
    their daemons, are untouched (the FUSE connection lives on in the
    machine's namespace), and the copy goes when jobfsctl exits."""
    if not have("unshare") or os.geteuid() != 0:
        raise AssertionError("the test needs unshare(1) and root for a mount namespace")
    env.queue("q")
    # one jobfs mount: found
    r = ctl_alone(env, [env.mnt], "get", "queues")
    check(r.returncode == 0, "the only mount: exit %d, %r" % (r.returncode, r.stderr))
    rows = table(r.stdout)
    check([x["NAME"] for x in rows] == ["queues/q"], "the only mount: %r" % r.stdout)

    # two: exit 4, both named, --mount suggested
    state2, mnt2 = os.path.join(env.tmp, "state2"), os.path.join(env.tmp, "second")
    os.makedirs(state2)
    os.makedirs(mnt2)
    d2 = Daemon(env, state2, mnt2).start()
    r = ctl_alone(env, [env.mnt, mnt2], "get", "queues")
    check(r.returncode == 4, "two mounts: exit %d, %r" % (r.returncode, r.stderr))
    check("2 jobfs mounts (%s, %s)" % (env.mnt, mnt2) in r.stderr and "--mount" in r.stderr,
          "two mounts: the message %r" % r.stderr)
    # either named is used, and only it
    r = ctl_alone(env, [env.mnt, mnt2], "--mount", mnt2, "get", "queues")
    check(r.returncode == 0 and "queues/q" not in r.stdout, "--mount the second: %r" % (r,))
    r = subprocess.run([ctl_bin(), "get", "queues"], capture_output=True, text=True,
                       env=dict(os.environ, JOBFS_MOUNT=env.mnt))
    check(r.returncode == 0 and "queues/q" in r.stdout, "$JOBFS_MOUNT: %r" % (r,))
    d2.unmount()

    # a named mount point that is no jobfs mount: a plain directory, a
    # directory inside the tree
    for bad in (env.work, env.p("queues")):
        r = subprocess.run([ctl_bin(), "get"], capture_output=True, text=True,
                           env=dict(os.environ, JOBFS_MOUNT=bad))
        check(r.returncode == 4 and "$JOBFS_MOUNT %s: not a jobfs mount point" % bad in r.stderr,
              "JOBFS_MOUNT=%s: exit %d, %r" % (bad, r.returncode, r.stderr))
        r = subprocess.run([ctl_bin(), "--mount", bad, "get"], capture_output=True, text=True)
        check(r.returncode == 4 and "--mount %s: not a jobfs mount point" % bad in r.stderr,
              "--mount %s: exit %d, %r" % (bad, r.returncode, r.stderr))


# ------------------------------------------------------------ top in tmux

class Tmux:
    def __init__(self, env, cols, rows=40):
        if not have("tmux"):
            raise AssertionError("tmux is missing (scripts/deps.sh installs it)")
        self.sock = os.path.join(env.tmp, "tmux-%d.sock" % cols)
        self.cols = cols
        env.at_end(lambda: subprocess.run(["tmux", "-S", self.sock, "kill-server"],
                                          capture_output=True))
        # top's stderr and exit status, checked when it has quit
        self.err = os.path.join(env.tmp, "top-%d.err" % cols)
        self.rc = os.path.join(env.tmp, "top-%d.rc" % cols)
        self.tmux("new-session", "-d", "-x", str(cols), "-y", str(rows), "-s", "top",
                  "env", "TERM=xterm-256color", "JOBFS_MOUNT=" + env.mnt, "sh", "-c",
                  '"$0" top 2>"$1"; echo $? >"$2"', ctl_bin(), self.err, self.rc)

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.sock] + list(args), capture_output=True,
                              text=True, timeout=10)

    def capture(self, colours=False):
        r = self.tmux("capture-pane", "-p", "-t", "top", *(["-e", "-N"] if colours else []))
        return r.stdout if r.returncode == 0 else ""

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "top", *keys)

    def alive(self):
        return self.tmux("has-session", "-t", "top").returncode == 0


def bar_of(screen, name):
    """The done/total and the bar of the row whose first cell is name."""
    for line in screen.splitlines():
        cells = line.split()
        if cells and cells[0] == name:
            m = re.search(r"\[([#.]+)\]\s+(\d+)/(\d+)", line)
            if m:
                return m.group(1), int(m.group(2)), int(m.group(3))
    return None


def poll_screen(env, tm, pred, what, timeout=20):
    """The first capture for which pred holds; on time-out the last one is
    in the failure."""
    last = [""]

    def once():
        last[0] = tm.capture()
        return last[0] if pred(last[0]) else None
    try:
        return env.poll_until(once, timeout, what)
    except TestFailure as e:
        raise TestFailure("%s; last screen: %r" % (e, last[0])) from None


def drive_top(env, cols, gates, shots):
    tm = Tmux(env, cols)
    g = "queues/q/groups/g"
    scr = env.poll_until(lambda: (lambda s: s if bar_of(s, "g") else None)(tm.capture()),
                         20, "top showing group g")
    bar, done0, total = bar_of(scr, "g")
    check(total == 4, "group g's total: %r" % (scr,))
    check("jobfsctl top" in scr and "STATE" in scr and "PROGRESS" in scr, "header: %r" % scr)
    check(len(bar) == (40 if cols >= 160 else 20), "bar width at %d columns: %r" % (cols, bar))
    if cols >= 160:
        check("REASON / MESSAGE" in scr, "200 columns: no message column: %r" % scr)
    # open a gate: the bar advances (inotify, not a keypress)
    n = done0
    open(os.path.join(gates, "go.%d" % n), "w").close()
    scr = env.poll_until(lambda: (lambda s: s if (bar_of(s, "g") or (0, 0))[1] > n else None)(
        tm.capture()), 20, "the bar to advance past %d" % n)
    bar2, done1, _ = bar_of(scr, "g")
    check(bar2.count("#") > bar.count("#"), "bar did not grow: %r -> %r" % (bar, bar2))
    if shots:
        with open(os.path.join(env.work, "top-%d.ans" % cols), "w") as f:
            f.write(tm.capture(colours=True))
    # down to the group, enter: its tasks
    tm.keys("Down")
    tm.keys("Enter")
    # tmux may capture a screen that curses is still painting: wait for
    # the whole of what is checked, not for its first line
    def group_view(s):
        return ("TASK" in s and g in s and re.search(r"^%d\s+Succeeded\s+1\s" % n, s, re.M)
                and (n == 3 or re.search(r"^3\s+Running\s", s, re.M)))
    scr = poll_screen(env, tm, group_view, "the group's view with task %d done, 3 running" % n)
    # down to a running task, l: its node's logs
    tm.keys("Down")
    tm.keys("l")
    poll_screen(env, tm, lambda s: "logs  %s/tasks/1/nodes/0/logs" % g in s and "start 1" in s,
                "the logs view of task 1 with its first line")
    tm.keys("Escape")
    env.poll_until(lambda: "TASK" in tm.capture(), 20, "back to the group")
    tm.keys("q")
    env.poll_until(lambda: not tm.alive(), 20, "top to exit on q")
    rc = open(tm.rc).read().strip()
    err = open(tm.err).read()
    check(rc == "0" and not any(m in err for m in SANITIZER_MARKS),
          "top exited %s: %s" % (rc, err[-2000:]))
    return done1


@case(timeout=120)
def test_jobfsctl_top_tmux(env):
    gates = gate_dir(env)
    shots = os.environ.get("JOBFS_SCREENSHOTS")
    env.group(GATED % {"n": 4, "dir": gates})
    env.wait("queues/q/groups/g", pred=lambda st: st["running"] == 4)
    # another queue, below q on screen: a finished, a failed, a running and
    # a waiting group (its queue holds one node), so more states show
    env.mkdir("queues/train")
    check(env.write("queues/train/spec.yaml", "capacity: 1\n") == 0, "queue spec refused")
    env.group('command: ["/bin/true"]\n', name="prep", queue="train")
    env.group('retries: 0\ncommand: ["/bin/false"]\n', name="smoke", queue="train")
    ctl(env, "wait", "queues/train/groups/smoke", check_rc=2)
    ctl(env, "wait", "queues/train/groups/prep", check_rc=0)
    env.group(GATED.replace("$JOB_TASK_INDEX", "sweep$JOB_TASK_INDEX")
              % {"n": 8, "dir": gates}, name="sweep", queue="train")
    env.group(GATED.replace("$JOB_TASK_INDEX", "eval$JOB_TASK_INDEX")
              % {"n": 2, "dir": gates}, name="eval", queue="train")
    env.wait("queues/train/groups/eval", pred=lambda st: st["reason"] != "")
    done = drive_top(env, 100, gates, shots)
    check(done == 1, "done after the first gate: %d" % done)
    done = drive_top(env, 200, gates, shots)
    check(done == 2, "done after the second gate: %d" % done)
    # plain lines when stdout is not a terminal: one snapshot, exit 0
    r = ctl(env, "top", check_rc=0)
    rows = {row["NAME"]: row for row in table(r.stdout)}
    check(rows["queues/q/groups/g"]["STATE"] == "Running"
          and rows["queues/q/groups/g"]["DONE"] == "2/4", "plain top: %r" % r.stdout)
    r = subprocess.run([ctl_bin(), "top", env.mnt], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and "queues/q/groups/g" in r.stdout, "top MNT: %r" % (r,))
    if shots:
        os.makedirs(shots, exist_ok=True)
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "termshot.py")
        for cols, name in ((100, "jobfsctl-top.png"), (200, "jobfsctl-top-200.png")):
            subprocess.run(["/usr/bin/python3", here, os.path.join(env.work, "top-%d.ans" % cols),
                            os.path.join(shots, name), str(cols)], check=True, timeout=60)
    for i in range(4):
        open(os.path.join(gates, "go.%d" % i), "w").close()
    ctl(env, "wait", "queues/q/groups/g", check_rc=0, timeout=60)
    for g in ("sweep", "eval"):
        check(env.ctl("queues/train/groups/" + g, "stop") == 0, "stop %s" % g)
