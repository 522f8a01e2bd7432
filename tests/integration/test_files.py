"""The tree as files: cp, tar, cat vs open().read(), stat sizes, tail."""
import json
import os
import subprocess
import time

from jfit import LineReader, TestFailure, case, check, fds_to, money, parse_status

FINISHED = """\
completions: 2
command: ["/bin/sh", "-c"]
args: ["echo out $JOB_TASK_INDEX; echo err $JOB_TASK_INDEX >&2; echo more"]
"""

FILES = ("status", "status.json", "cost", "events")
NODE_FILES = ("status", "status.json", "events", "logs", "stdout", "stderr", "logs.prev",
              "allocation")


def finished_group(env, name="g"):
    g = env.group(FINISHED, name=name)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "group ended %s" % st["state"])
    return g


def all_files(env, g):
    out = [os.path.join(g, f) for f in FILES]
    for t in ("0", "1"):
        out += [os.path.join(g, "tasks", t, f) for f in FILES]
        out += [os.path.join(g, "tasks", t, "nodes/0", f) for f in NODE_FILES]
    return out


@case(timeout=60)
def test_cp_r_finished_group(env):
    g = finished_group(env)
    dst = os.path.join(env.work, "copy")
    r = env.sh("cp -r %s %s" % (g, dst), timeout=20, check=False)
    check(r.returncode == 0, "cp -r exited %d: %s" % (r.returncode, r.stderr.strip()))
    for rel in ("tasks/0/nodes/0/logs", "tasks/1/nodes/0/stderr", "spec.yaml", "status.json"):
        with open(os.path.join(dst, rel), "rb") as f:
            got = f.read()
        want = open(env.p(g, rel), "rb").read()
        check(got == want, "copy of %s differs: %r vs %r" % (rel, got[:120], want[:120]))
    check(open(os.path.join(dst, "tasks/1/nodes/0/logs")).read() == "out 1\nerr 1\nmore\n"
          or sorted(open(os.path.join(dst, "tasks/1/nodes/0/logs")).read().splitlines())
          == ["err 1", "more", "out 1"], "copied logs content")
    # cp -r of the whole tree's billing dir and a queue's files too
    r = env.sh("cp -r billing %s/billing" % env.work, timeout=20, check=False)
    check(r.returncode == 0, "cp -r billing: %s" % r.stderr)


@case(timeout=60)
def test_tar_finished_group(env):
    g = finished_group(env)
    # tar compares ctime/size before and after reading each file and
    # directory: a finished group must not seem to change when the clock ticks
    paths = [g, g + "/tasks", g + "/tasks/0", g + "/tasks/0/nodes/0", g + "/status",
             g + "/tasks/0/nodes/0/logs", g + "/events"]
    before = {p: os.stat(env.p(p)) for p in paths}
    sec = int(time.time())
    # two ticks: past the kernel's attribute cache (1 s) as well
    env.poll_until(lambda: int(time.time()) > sec + 1, 3, "the clock to tick")
    for p in paths:
        a, b = before[p], os.stat(env.p(p))
        check((a.st_mtime, a.st_ctime, a.st_size) == (b.st_mtime, b.st_ctime, b.st_size),
              "%s of a finished group changed over a second: mtime %s->%s ctime %s->%s size %d->%d"
              % (p, a.st_mtime, b.st_mtime, a.st_ctime, b.st_ctime, a.st_size, b.st_size))
    tarf = os.path.join(env.work, "g.tar")
    r = env.sh("tar cf %s -C queues/q/groups g" % tarf, timeout=20, check=False)
    check(r.returncode == 0, "tar exited %d: %s" % (r.returncode, r.stderr.strip()))
    for bad in ("shrank", "changed as we read it", "file changed", "Read error"):
        check(bad not in r.stderr, "tar warned %r: %s" % (bad, r.stderr.strip()))
    out = os.path.join(env.work, "x")
    os.makedirs(out)
    subprocess.run(["tar", "xf", tarf, "-C", out], check=True)
    for rel in ("g/tasks/0/nodes/0/logs", "g/status", "g/events", "g/cost"):
        with open(os.path.join(out, rel), "rb") as f:
            got = f.read()
        want = open(env.p("queues/q/groups", rel), "rb").read()
        check(got == want, "tar'd %s differs from the tree: %r vs %r" % (rel, got[:100], want[:100]))


@case(timeout=60)
def test_read_equals_cat_and_stat(env):
    g = finished_group(env)
    for rel in all_files(env, g) + ["billing/ledger.csv", "billing/summary", "README",
                                    "cluster/gpus", "queues/q/status"]:
        path = env.p(rel)
        with open(path, "rb") as f:
            py = f.read()
        cat = subprocess.run(["cat", path], capture_output=True, timeout=10)
        check(cat.returncode == 0, "cat %s: %s" % (rel, cat.stderr))
        check(py == cat.stdout, "%s: open().read() (%d bytes) != cat (%d bytes)"
              % (rel, len(py), len(cat.stdout)))
        size = os.stat(path).st_size
        with open(path, "rb") as f:
            again = f.read()
        check(size == len(again), "%s: stat size %d != %d bytes read" % (rel, size, len(again)))
        if again:
            check(again.endswith(b"\n"), "%s does not end with a newline" % rel)
    # jq reads status.json whole
    r = env.sh("jq -r .progress %s/status.json" % g)
    check(r.stdout == "2/2\n", "jq .progress: %r" % r.stdout)
    # reads at an offset, small reads
    path = env.p(g, "status")
    whole = open(path, "rb").read()
    with open(path, "rb", buffering=0) as f:
        parts = []
        while True:
            b = f.read(7)
            if not b:
                break
            parts.append(b)
    check(b"".join(parts) == whole, "7-byte reads of status differ from one read")
    # `tail -n 2 events`
    ev = env.read(os.path.join(g, "events")).splitlines()
    r = env.sh("tail -n 2 %s/events" % g)
    check(r.stdout.splitlines() == ev[-2:], "tail -n 2 events: %r vs %r" % (r.stdout, ev[-2:]))
    r = env.sh("tail -c 20 %s/tasks/0/nodes/0/logs" % g)
    logs = env.read(os.path.join(g, "tasks/0/nodes/0/logs"))
    check(r.stdout == logs[-20:], "tail -c 20 logs: %r vs %r" % (r.stdout, logs[-20:]))
    r = env.sh("wc -l < %s/events" % g)
    check(int(r.stdout) == len(ev), "wc -l events")


@case(timeout=60)
def test_reads_whole_while_running(env):
    """While things change, every read is a whole, parseable file.  stat and
    read may straddle a change (reads are fresh), so stat == len(read) is only
    required most of the time: a systematic mismatch is a bug, a race is not."""
    spec = """\
completions: 6
parallelism: 3
gpu: "4090"
command: ["/bin/sh", "-c", "for i in 1 2 3 4 5; do echo tick $i; sleep 0.1; done"]
"""
    g = env.group(spec)
    deadline = time.monotonic() + 20
    n = same = 0
    while time.monotonic() < deadline:
        for rel in ("status", "status.json", "cost", "tasks/0/status", "tasks/0/nodes/0/status.json"):
            path = env.p(g, rel)
            size = os.stat(path).st_size
            with open(path, "rb") as f:
                data = f.read()
            n += 1
            same += size == len(data)
            text = data.decode()
            check(text.endswith("\n"), "%s read without its last newline: %r" % (rel, text[-40:]))
            if rel.endswith(".json"):
                try:
                    json.loads(text)
                except ValueError as e:
                    raise TestFailure("%s read cut or broken (%s): %r" % (rel, e, text[-80:]))
            elif rel == "cost":
                money(text)
            else:
                keys = parse_status(text)
                check("state" in keys and "cost" in keys, "%s incomplete: %r" % (rel, text))
        if env.status(g)["state"] in ("Succeeded", "Failed"):
            break
    check(n > 10, "too few samples")
    check(same >= 0.8 * n, "stat size matched the read only %d of %d times" % (same, n))
    check(env.status(g)["state"] == "Succeeded", "group did not succeed")


@case(timeout=60)
def test_tail_f_logs(env):
    spec = """\
command: ["/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do echo line $i; sleep 0.2; done"]
"""
    g = env.group(spec)
    node = os.path.join(g, "tasks/0/nodes/0")
    env.wait(node, "Running", timeout=10)
    tail = env.popen(["tail", "-n", "+1", "-f", env.p(node, "logs")])
    rd = LineReader(tail)
    t0 = time.monotonic()
    rd.wait_for(lambda ls: "line 1" in ls, 5, "line 1 from tail -f")
    # the task is still running when lines arrive: they appear as written
    mid = env.status(node)["state"]
    rd.wait_for(lambda ls: "line 10" in ls, 10, "line 10 from tail -f")
    check(mid == "Running", "tail -f saw line 1 only after the node finished (%s)" % mid)
    check(rd.lines[:10] == ["line %d" % i for i in range(1, 11)],
          "tail -f lines: %r" % rd.lines)
    tail.kill()
    tail.wait()
    env.wait(g, "Succeeded", timeout=10)


@case(timeout=60)
def test_tail_f_logs_of_waiting_task(env):
    """tail -f on the logs of a task that has not run yet follows them once it
    runs (the file has no attempt behind it at open)."""
    # task 0 (and with it task 1) waits for the test's go
    go = os.path.join(env.tmp, "go")
    spec = """\
completions: 2
parallelism: 1
command: ["/bin/sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done; echo task $JOB_TASK_INDEX"]
""" % go
    g = env.group(spec)
    node = os.path.join(g, "tasks/1/nodes/0")
    check(env.status(os.path.join(g, "tasks/1"))["state"] == "Waiting", "task 1 not waiting")
    tail = env.popen(["tail", "-n", "+1", "-f", env.p(node, "logs")])
    rd = LineReader(tail)
    env.poll_until(lambda: fds_to(tail.pid, env.p(node, "logs")), 10, "tail to open the logs")
    open(go, "w").close()
    rd.wait_for(lambda ls: "task 1" in ls, 10, "task 1's line from tail -f")
    check(rd.lines == ["task 1"], "tail -f lines: %r" % rd.lines)
    tail.kill()
    tail.wait()
    env.wait(g, "Succeeded", timeout=10)


@case(timeout=60)
def test_tail_f_events(env):
    # task 0 (and with it the others) waits for the test's go, given once
    # tail has the events open
    go = os.path.join(env.tmp, "go")
    spec = """\
completions: 3
parallelism: 1
command: ["/bin/sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done; sleep 0.5"]
""" % go
    g = env.group(spec)
    env.wait(os.path.join(g, "tasks/0"), "Running", timeout=10)
    tail = env.popen(["tail", "-n", "0", "-f", env.p(g, "events")])
    rd = LineReader(tail)
    env.poll_until(lambda: fds_to(tail.pid, env.p(g, "events")), 10, "tail to open the events")
    open(go, "w").close()
    # new events after tail started: the next tasks start and finish
    rd.wait_for(lambda ls: any(" Started " in l and "tasks/1" in l for l in ls), 10,
                "a Started event for task 1")
    rd.wait_for(lambda ls: any(" Completed " in l and "tasks/2" in l for l in ls), 10,
                "a Completed event for task 2")
    tail.kill()
    tail.wait()
    for l in rd.lines:
        check(len(l.split(" ", 4)) >= 4, "event line %r" % l)
    env.wait(g, "Succeeded", timeout=10)


@case(timeout=60)
def test_large_logs(env):
    """A node printing 5 MB: logs size grows with content, reads whole."""
    spec = """\
command: ["python3", "-c", "import sys\\nfor i in range(100000): sys.stdout.write('%06d ' % i + 'x' * 43 + '\\\\n')"]
"""
    g = env.group(spec)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=30)
    check(st["state"] == "Succeeded", "group ended %s: %s" % (st["state"], st["message"]))
    path = env.p(g, "tasks/0/nodes/0/logs")
    size = os.stat(path).st_size
    with open(path, "rb") as f:
        data = f.read()
    check(size == len(data), "stat %d vs read %d" % (size, len(data)))
    lines = data.split(b"\n")
    check(len(data) == 100000 * 51 or b"log capped" in data,
          "logs are %d bytes, want %d" % (len(data), 100000 * 51))
    if b"log capped" not in data:
        check(lines[99999].startswith(b"099999 "), "last line %r" % lines[99999][:20])
    r = env.sh("tail -n 1 %s/tasks/0/nodes/0/stdout" % g)
    check(r.stdout.startswith("099999 ") or "capped" in r.stdout, "tail of stdout %r" % r.stdout[:40])
