"""Every attempt kept (reference 9.2): nodes/<n>/attempts/<a>/.

A node's attempts/ holds one directory per attempt, 1 .. the node's
attempt, each with its own status, status.json, logs, stdout and stderr,
kept after the task ends and across daemon restarts for as long as the
group exists.  Checked with a task that fails twice and then succeeds (a
counter file outside the mount says which try it is; each try writes its
own line to stdout and to stderr):

- `ls attempts` is 1 2 3; each status says Failed, Failed, Succeeded with
  its exit code and reason; each attempt's logs, stdout and stderr hold
  that attempt's lines alone; logs.prev is attempts/2/logs and logs is
  attempts/3/logs;
- all of it again after an unmount and a fresh daemon, and after SIGKILL
  and a fresh daemon;
- attempts/0, attempts/4 and names that are no number are ENOENT;
- find, ls -R, du and cat over the group list, stat and read every
  attempt file (what stat says is what a read returns);
- a node that never ran has an empty attempts/;
- the same under a batch of /tasks (<i>-<name>/nodes/<n>/attempts);
- after a queue's keep_logs removed the run directories, the attempts'
  logs read empty, as the node's do, and their status stays;
- tail -f of the running attempt's logs sees its lines as they come, and
  an inotify watch of that attempt's directory sees its logs and status
  change.

The same on Slurm is test_slurm.py's test_slurm_attempts.
"""
import os
import subprocess
import time

from jfit import LineReader, TestFailure, case, check, have

NODE = "tasks/0/nodes/0"


def counter(env, name):
    """A counter file outside the mount that any user's task may write."""
    d = os.path.join(env.work, "ctr")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)
    return os.path.join(d, name)


def retry_spec(ctr, extra=""):
    """Fails unless the counter says it is the 3rd try; a line per try on
    stdout and on stderr."""
    return extra + """\
retries: 2
command: ["/bin/sh", "-c"]
args: ["n=$(( $(cat %s 2>/dev/null || echo 0) + 1 )); echo $n > %s; echo out try $n; echo err try $n >&2; [ $n -ge 3 ]"]
""" % (ctr, ctr)


def stat_read(env, path):
    """Read a file of the tree whole; its stat size must be what was read."""
    size = os.stat(env.p(path)).st_size
    data = env.read(path)
    check(size == len(data.encode()), "%s: stat says %d bytes, read %d: %r"
          % (path, size, len(data.encode()), data[:200]))
    return data


def check_attempts(env, g, when):
    """The three attempts of g's task 0 node 0, as they ended."""
    node = os.path.join(g, NODE)
    got = sorted(os.listdir(env.p(node, "attempts")), key=int)
    check(got == ["1", "2", "3"], "%s: ls attempts is %s" % (when, got))
    want = {1: ("Failed", 1, "Error"), 2: ("Failed", 1, "Error"), 3: ("Succeeded", 0, "Completed")}
    for a, (state, code, reason) in want.items():
        ap = os.path.join(node, "attempts", str(a))
        st = env.status(ap)
        check(st["state"] == state and st["attempt"] == a and st["exit_code"] == code
              and st["reason"] == reason,
              "%s: attempts/%d/status.json: %s" % (when, a, st))
        check(st["name"] == "g/tasks/0/nodes/0/attempts/%d" % a, "%s: name %s" % (when, st))
        check(st["started"] and st["finished"] and st["machine"] and st["runtime"] == "host",
              "%s: attempts/%d times and place: %s" % (when, a, st))
        check((st["message"] == "") == (state == "Succeeded"),
              "%s: attempts/%d message %r" % (when, a, st["message"]))
        if state == "Failed":
            check("exit code 1" in st["message"], "%s: attempts/%d: %s" % (when, a, st))
        y = env.status_yaml(ap)
        check(y["state"] == state and y["exit_code"] == str(code) and y["attempt"] == str(a),
              "%s: attempts/%d/status: %s" % (when, a, y))
        out = stat_read(env, ap + "/stdout")
        err = stat_read(env, ap + "/stderr")
        logs = stat_read(env, ap + "/logs")
        check(out == "out try %d\n" % a, "%s: attempts/%d/stdout %r" % (when, a, out))
        check(err == "err try %d\n" % a, "%s: attempts/%d/stderr %r" % (when, a, err))
        check(sorted(logs.splitlines()) == ["err try %d" % a, "out try %d" % a],
              "%s: attempts/%d/logs %r" % (when, a, logs))
    # the node's own files are those of its last attempt and the one before
    check(stat_read(env, node + "/logs.prev") == stat_read(env, node + "/attempts/2/logs"),
          "%s: logs.prev is not attempts/2/logs" % when)
    check(stat_read(env, node + "/logs") == stat_read(env, node + "/attempts/3/logs"),
          "%s: logs is not attempts/3/logs" % when)
    # the node says it ran 3 times; there is no 0th and no 4th
    check(env.status(node)["attempt"] == 3, "%s: node status %s" % (when, env.status(node)))
    for bad in ("0", "4", "01", "x", "-1", "3.0"):
        p = env.p(node, "attempts", bad)
        try:
            os.stat(p)
            raise TestFailure("%s: attempts/%s exists" % (when, bad))
        except FileNotFoundError:
            pass
    try:
        os.stat(env.p(node, "attempts/1/logs.prev"))
        raise TestFailure("%s: an attempt has a logs.prev" % when)
    except FileNotFoundError:
        pass


def check_walks(env, g):
    """find, ls -R, du and cat over the group: every listed name resolves
    and reads whole."""
    r = env.sh("find %s" % g, timeout=30)
    listed = r.stdout.split()
    for a in (1, 2, 3):
        for f in ("", "/status", "/status.json", "/logs", "/stdout", "/stderr"):
            p = "%s/%s/attempts/%d%s" % (g, NODE, a, f)
            check(p in listed, "find does not list %s" % p)
    for p in listed:
        try:
            os.lstat(env.p(p))
        except OSError as e:
            raise TestFailure("find listed %s, which stat refuses: %s" % (p, e))
    r = env.sh("find %s -type f -path '*/attempts/*' -exec cat {} + | wc -c" % g, timeout=30)
    check(int(r.stdout.split()[0]) > 0, "cat of every attempt file read nothing")
    r = env.sh("ls -lR %s" % g, timeout=30, check=False)
    check(r.returncode == 0 and "attempts:" in r.stdout and r.stderr == "",
          "ls -R exited %d: %s" % (r.returncode, r.stderr))
    r = env.sh("du -a %s" % g, timeout=30, check=False)
    check(r.returncode == 0 and "attempts/3/stdout" in r.stdout,
          "du -a exited %d: %s" % (r.returncode, r.stderr))
    # each file's size is what a read of it returns
    for a in (1, 2, 3):
        for f in ("status", "status.json", "logs", "stdout", "stderr"):
            stat_read(env, "%s/%s/attempts/%d/%s" % (g, NODE, a, f))


@case(timeout=120)
def test_attempts_kept(env):
    g = env.group(retry_spec(counter(env, "g")))
    st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    check(st["state"] == "Succeeded", "group: %s" % st)
    check_attempts(env, g, "after the group ended")
    check_walks(env, g)
    # a fresh daemon on the same state: the attempts are the store's
    env.remount()
    check_attempts(env, g, "after a remount")
    # and one killed without a word
    env.daemon.kill9()
    env.start()
    check_attempts(env, g, "after SIGKILL and a restart")
    check_walks(env, g)
    # a restart of the group runs it again: a 4th attempt (the counter says
    # 4: it succeeds at once) beside the three before it
    node = os.path.join(g, NODE)
    check(env.ctl(g, "restart") == 0, "restart refused: %s" % env.status(g))
    env.poll_until(lambda: os.path.exists(env.p(node, "attempts/4")) and
                   env.status(node + "/attempts/4")["state"] == "Succeeded", 30,
                   "a 4th attempt to succeed")
    env.wait(g, "Succeeded", timeout=30)
    got = sorted(os.listdir(env.p(node, "attempts")), key=int)
    check(got == ["1", "2", "3", "4"], "after a restart: ls attempts is %s" % got)
    check(env.read(node + "/attempts/4/stdout") == "out try 4\n" and
          env.read(node + "/attempts/2/stdout") == "out try 2\n" and
          env.status(node + "/attempts/1")["state"] == "Failed",
          "after a restart: %r, %r, %s" % (env.read(node + "/attempts/4/stdout"),
                                           env.read(node + "/attempts/2/stdout"),
                                           env.status(node + "/attempts/1")))
    check(env.read(node + "/logs.prev") == env.read(node + "/attempts/3/logs"),
          "after a restart: logs.prev is not attempts/3/logs")
    # removing the group removes its attempts with it
    env.sh("rm -rf %s" % g, timeout=30)
    check(not os.path.exists(env.p(g)), "the group is still there after rm -rf")


@case(timeout=90)
def test_attempts_after_retention(env):
    """A queue's keep_logs removes a finished group's run directories: the
    attempts' logs then read empty, as the node's do; their status stays."""
    q = env.queue("short")
    check(env.write(q + "/spec.yaml", "keep_logs: 1s\n") == 0, "queue spec refused")
    g = env.group(retry_spec(counter(env, "r")), queue="short")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    check(st["state"] == "Succeeded", "group: %s" % st)
    node = os.path.join(g, NODE)
    check(env.read(node + "/attempts/1/stdout") == "out try 1\n", "before: attempts/1/stdout")
    # past its keep_logs; a fresh daemon looks at the retention first thing
    end = time.time() + 1.5
    env.poll_until(lambda: time.time() > end, 5, "keep_logs to pass")
    env.remount()
    env.poll_until(lambda: env.read(node + "/logs") == "", 30, "the node's logs to go")
    for a in (1, 2, 3):
        ap = "%s/attempts/%d" % (node, a)
        for f in ("logs", "stdout", "stderr"):
            check(stat_read(env, ap + "/" + f) == "", "%s/%s after retention" % (ap, f))
        check(env.status(ap)["state"] == ("Succeeded" if a == 3 else "Failed"),
              "%s/status after retention: %s" % (ap, env.status(ap)))
    check(stat_read(env, node + "/logs.prev") == "", "logs.prev after retention")
    r = env.sh("find %s -path '*/attempts/*' -type f -exec cat {} + | wc -l" % g)
    check(int(r.stdout.split()[0]) > 0, "the statuses are gone with the logs")


@case(timeout=90)
def test_attempts_batch(env):
    """The same in an independent task of /tasks: <i>-<name>/nodes/<n>/attempts."""
    b = "tasks/b"
    env.mkdir(b)
    env.submit(b, retry_spec(counter(env, "b"), "count: 1\n"))
    st = env.wait(b, ("Succeeded", "Failed"), timeout=60)
    check(st["state"] == "Succeeded", "batch: %s" % st)
    node = b + "/1-b/nodes/0"
    got = sorted(os.listdir(env.p(node, "attempts")), key=int)
    check(got == ["1", "2", "3"], "ls attempts is %s" % got)
    for a, state in ((1, "Failed"), (2, "Failed"), (3, "Succeeded")):
        s = env.status("%s/attempts/%d" % (node, a))
        check(s["state"] == state and s["name"] == "1-b/nodes/0/attempts/%d" % a,
              "attempts/%d: %s" % (a, s))
        check(stat_read(env, "%s/attempts/%d/stdout" % (node, a)) == "out try %d\n" % a,
              "attempts/%d/stdout" % a)
    r = env.sh("find %s -path '*/attempts/*' | wc -l" % b)
    check(int(r.stdout.split()[0]) == 3 * 6, "find under the batch: %s" % r.stdout)


@case(timeout=90)
def test_attempts_never_ran(env):
    """A node that never ran: an empty attempts/ (its first attempt comes
    into it when it starts)."""
    go = counter(env, "go")
    g = env.group("completions: 2\nparallelism: 1\n"
                  "command: [\"/bin/sh\", \"-c\"]\n"
                  "args: [\"while [ ! -e %s ]; do sleep 0.1; done\"]\n" % go)
    env.wait(g + "/tasks/0", "Running", timeout=30)
    idle = g + "/tasks/1/nodes/0"
    check(os.listdir(env.p(idle, "attempts")) == [], "attempts of a node that never ran: %s"
          % os.listdir(env.p(idle, "attempts")))
    check(os.path.isdir(env.p(idle, "attempts")), "attempts/ is not a directory")
    check(not os.path.exists(env.p(idle, "attempts/1")), "attempts/1 of a node that never ran")
    check(os.listdir(env.p(g, NODE, "attempts")) == ["1"],
          "the running node's attempts: %s" % os.listdir(env.p(g, NODE, "attempts")))
    check(env.status(g + "/" + NODE + "/attempts/1")["state"] == "Running",
          "the running attempt: %s" % env.status(g + "/" + NODE + "/attempts/1"))
    with open(go, "w"):
        pass
    env.wait(g, "Succeeded", timeout=30)
    check(os.listdir(env.p(idle, "attempts")) == ["1"],
          "after it ran: %s" % os.listdir(env.p(idle, "attempts")))
    check(env.status(idle + "/attempts/1")["state"] == "Succeeded",
          "its attempt: %s" % env.status(idle + "/attempts/1"))


FOLLOW = """\
retries: 1
command: ["/bin/sh", "-c"]
args: ["n=$(( $(cat {ctr} 2>/dev/null || echo 0) + 1 )); echo $n > {ctr}; echo try $n begins; [ $n -ge 2 ] || exit 4; while [ ! -e {go} ]; do sleep 0.1; done; echo try $n goes on; i=0; while [ ! -e {go}.2 ]; do i=$((i+1)); echo tick $i; sleep 0.2; done; echo try $n ends"]
"""


@case(timeout=90)
def test_attempts_follow(env):
    """tail -f, a read loop and an inotify watch on the running attempt."""
    ctr, go = counter(env, "f"), counter(env, "go")
    g = env.group(FOLLOW.format(ctr=ctr, go=go))
    ap = os.path.join(g, NODE, "attempts/2")
    env.poll_until(lambda: os.path.exists(env.p(ap, "logs")) and
                   "try 2 begins" in env.read(ap + "/logs"), 30, "attempt 2 to begin")
    # its first line can come before the step that records its start
    st = env.wait(ap, ["Running"], timeout=20)
    check(st["exit_code"] == "" and st["finished"] == "", "the running attempt: %s" % st)
    check(env.status(os.path.join(g, NODE, "attempts/1"))["exit_code"] == 4,
          "attempt 1: %s" % env.status(os.path.join(g, NODE, "attempts/1")))
    tail = env.popen(["tail", "-n", "+1", "-f", env.p(ap, "logs")])
    rd = LineReader(tail)
    rd.wait_for(lambda ls: "try 2 begins" in ls, 10, "tail -f to show what is there")
    watch = None
    if have("inotifywait"):
        watch = env.popen(["inotifywait", "-m", env.p(ap)], stderr=subprocess.STDOUT)
        wr = LineReader(watch)
        wr.wait_for(lambda ls: any("Watches established" in l for l in ls), 10,
                    "inotifywait to be ready")
    # a reader that opened the file before the growth reads on from where it was
    with open(env.p(ap, "logs"), "rb") as f:
        first = f.read()
        with open(go, "w"):
            pass
        rd.wait_for(lambda ls: "try 2 goes on" in ls, 15, "tail -f to see the new line")
        env.poll_until(lambda: b"try 2 goes on" in first + f.read(), 15,
                       "a read loop on the open file to see the new line")
    if watch:
        # it writes a line every moment until told to end: the daemon's
        # look at the log's size sees it grow
        wr.wait_for(lambda ls: any(l.endswith(" MODIFY logs") for l in ls), 15,
                    "inotify to report the attempt's logs growing")
    with open(go + ".2", "w"):
        pass
    rd.wait_for(lambda ls: "try 2 ends" in ls, 15, "tail -f to see the last line")
    env.wait(g, "Succeeded", timeout=30)
    if watch:
        env.status(ap)
        wr.wait_for(lambda ls: any(l.endswith(" MODIFY status") or
                                   l.endswith(" MODIFY status.json") for l in ls), 15,
                    "inotify to report the attempt's status changing at its end")
    logs = env.read(ap + "/logs").splitlines()
    check(logs[:2] == ["try 2 begins", "try 2 goes on"] and logs[-1] == "try 2 ends" and
          all(l.startswith("tick ") for l in logs[2:-1]), "attempt 2 logs: %r" % logs)
    check(rd.lines == logs, "tail -f saw %r, the file holds %r" % (rd.lines, logs))
    check(env.read(os.path.join(g, NODE, "attempts/1/logs")) == "try 1 begins\n",
          "attempt 1 logs: %r" % env.read(os.path.join(g, NODE, "attempts/1/logs")))
