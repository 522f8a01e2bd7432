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
  succeeded.
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
import time

from jfit import SANITIZER_MARKS, LineReader, case, check, have, jobfs_bin

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
    scr = env.poll_until(lambda: (lambda s: s if "TASK" in s and g in s else None)(tm.capture()),
                         20, "the group's view")
    check(re.search(r"^%d\s+Succeeded\s+1\s" % n, scr, re.M), "task %d row: %r" % (n, scr))
    check(re.search(r"^3\s+Running\s", scr, re.M) or n == 3, "task 3 row: %r" % scr)
    # down to a running task, l: its node's logs
    tm.keys("Down")
    tm.keys("l")
    scr = env.poll_until(lambda: (lambda s: s if "logs  " + g in s else None)(tm.capture()),
                         20, "the logs view")
    check("%s/tasks/1/nodes/0/logs" % g in scr and "start 1" in scr, "logs view: %r" % scr)
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
