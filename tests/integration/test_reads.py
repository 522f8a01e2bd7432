"""Reads never wait for the engine (issue 20).

On a real mount with real programs:
- while the daemon's loop is held (fault point hold-loop: a write of
  "hold-the-loop" to a ctl file holds the loop's thread as a long step
  would; a mkdir would hold its directory's lock in the kernel too), `cat`,
  `ls -l`, `stat`, `grep`, `tail` of events and logs, and python reads
  of the tree all complete; the writes issued meanwhile (the mkdir
  itself, a ctl verb, a spec) complete only once the loop goes on, and
  then do what they say;
- `ls -l` of a tasks/ directory costs one READDIRPLUS a page of entries,
  not a LOOKUP per entry besides (counted with --debug);
- while a group runs, every finished task's status reads as it stats
  (the same bytes as its size), from several readers at once.
No assertion is on a duration: a read that waited for the held loop
would hang until its timeout, and the writes are checked to be still
pending after the reads.
"""
import os
import re
import subprocess
import threading

from jfit import case, check, jobfs_bin

DONE = 'completions: 40\nparallelism: 10\ncommand: ["/bin/sh", "-c", "echo out-$JOB_COMPLETION_INDEX"]\n'


class Bg(threading.Thread):
    """A write through the mount, in the background."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn = fn
        self.error = None
        self.done = threading.Event()

    def run(self):
        try:
            self.fn()
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e
        self.done.set()


@case(timeout=180)
def test_reads_while_the_loop_is_held(env):
    q = env.queue("q")
    g = env.group(DONE, name="done")
    env.wait(g, "Succeeded", timeout=60)
    env.start_with_fault("hold-loop:1")
    env.mkdir(os.path.join(q, "groups", "made-before"))
    tasks = os.path.join(g, "tasks")
    holder = env.group('command: ["true"]\n', name="holder")
    env.wait(holder, "Succeeded", timeout=30)

    # the writes come from processes of their own: a descriptor open for
    # writing in this one would be closed (FLUSHed, a write) in every
    # child it forks, each of which would then wait for the loop
    held = Bg(lambda: env.sh("echo hold-the-loop > %s/ctl" % holder, timeout=120))
    held.start()
    env.poll_until(lambda: "the loop is held" in env.daemon.stderr_text(), 30,
                   "the loop to be held")
    # a ctl verb and a new group's spec: writes, which wait for the loop
    other = os.path.join(q, "groups", "later")
    ctl = Bg(lambda: env.sh("echo restart > %s/ctl" % g, timeout=120))
    ctl.start()
    # reads, by real programs: none waits for the loop
    listing = env.sh("ls -l %s" % tasks, timeout=30).stdout
    check(len(listing.strip().splitlines()) == 41, "ls -l: %r" % listing[:200])
    st = env.sh("cat %s/status" % g, timeout=30).stdout
    check("state: Succeeded" in st, "status: %r" % st)
    found = env.sh("grep -l Succeeded %s/*/status | wc -l" % tasks, timeout=30).stdout
    check(found.strip() == "40", "grep found %r" % found)
    env.sh("stat %s/7/status %s/events" % (tasks, g), timeout=30)
    logs = env.sh("cat %s/7/nodes/0/logs" % tasks, timeout=30).stdout
    check(logs == "out-7\n", "logs: %r" % logs)
    ev = env.sh("tail -n 2 %s/events" % g, timeout=30).stdout
    check("Succeeded" in ev or "Completed" in ev or ev.strip(), "events: %r" % ev)
    jq = env.sh("jq -r .state %s/status.json" % g, timeout=30).stdout
    check(jq.strip() == "Succeeded", "status.json: %r" % jq)
    with open(env.p(os.path.join(tasks, "3", "status"))) as f:
        check("state: Succeeded" in f.read(), "python read of a task status")
    env.sh("cat cluster/gpus billing/summary > /dev/null", timeout=30)
    # the writes are still waiting: the loop really was held all along
    check(not held.done.is_set(), "the held write was answered while the loop was held")
    check(not ctl.done.is_set(), "the ctl write was answered while the loop was held")
    with open(os.path.join(env.state, "release-loop"), "w"):
        pass
    # the held write was a verb no ctl knows: refused, once the loop went on
    check(held.done.wait(30) and held.error is not None, "hold: %r" % held.error)
    print("the held write, once the loop went on: %s" % held.error)
    check(ctl.done.wait(30) and ctl.error is None, "ctl: %r" % ctl.error)
    # and they did what they say
    env.wait(g, "Succeeded", timeout=60)
    env.mkdir(other)
    env.submit(other, 'command: ["true"]\n')
    env.wait(other, "Succeeded", timeout=30)


@case(timeout=120)
def test_ls_l_round_trips(env):
    g = env.group('completions: 300\nparallelism: 50\ncommand: ["true"]\n', name="many")
    env.wait(g, "Succeeded", timeout=90)
    env.stop()
    env.daemon_args = list(env.daemon_args) + ["--debug"]
    env.start()
    err = env.daemon.stderr_path

    def requests():
        with open(err, errors="replace") as f:
            return re.findall(r"^unique: \d+, opcode: (\w+)", f.read(), re.M)
    tasks = os.path.join(g, "tasks")
    env.sh("stat %s > /dev/null" % tasks)  # the path's lookups before the count
    before = len(requests())
    out = env.sh("ls -l %s" % tasks, timeout=60).stdout
    check(len(out.strip().splitlines()) == 301, "ls -l listed %d lines" % len(out.splitlines()))
    env.poll_until(lambda: "RELEASEDIR" in requests()[before:], 10, "the listing's release")
    ops = requests()[before:]
    lookups = ops.count("LOOKUP")
    pages = ops.count("READDIRPLUS")
    print("ls -l of 300 tasks: %d requests (%d READDIRPLUS, %d LOOKUP, %d READDIR)"
          % (len(ops), pages, lookups, ops.count("READDIR")))
    check(pages >= 1 and ops.count("READDIR") == 0, "listing requests: %r" % sorted(set(ops)))
    check(lookups <= 10, "%d LOOKUPs for an ls -l of 300 entries" % lookups)
    check(len(ops) <= 40, "%d requests for an ls -l of 300 entries" % len(ops))


@case(timeout=180)
def test_stat_and_read_agree_under_load(env):
    done = env.group(DONE, name="done")
    env.wait(done, "Succeeded", timeout=60)
    env.group('completions: 400\nparallelism: 20\ncommand: ["true"]\n', name="busy")
    tasks = os.path.join(done, "tasks")
    errors = []

    def reader(k):
        for r in range(30):
            for i in range(k, 40, 4):
                p = env.p(os.path.join(tasks, str(i), "status"))
                try:
                    size = os.stat(p).st_size
                    with open(p, "rb") as f:
                        data = f.read()
                    if len(data) != size or b"state: Succeeded" not in data:
                        errors.append("%s: stat %d, read %d: %r" % (p, size, len(data), data[:80]))
                except OSError as e:
                    errors.append("%s: %s" % (p, e))
    ts = [threading.Thread(target=reader, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    check(not errors, "%d mismatches, first: %s" % (len(errors), errors[:3]))


def threads(pid):
    """(name, nice) of each thread of pid."""
    out = []
    for tid in sorted(os.listdir("/proc/%d/task" % pid)):
        with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
            st = f.read()
        name = st[st.index("(") + 1:st.rindex(")")]
        fields = st[st.rindex(")") + 2:].split()
        out.append((name, int(fields[16])))  # field 19 of stat(5): nice
    return out


@case(timeout=120)
def test_reader_nice(env):
    """The reader threads run at --reader-nice (default -10 for a root
    daemon); the loop's thread and the tasks it starts keep the daemon's."""
    env.queue("q")
    ts = threads(env.daemon.pid)
    readers = [n for name, n in ts if name == "jobfs-reader"]
    others = [n for name, n in ts if name != "jobfs-reader"]
    want = -10 if os.geteuid() == 0 else 0
    check(readers == [want, want], "reader threads (name, nice): %r" % ts)
    check(others and all(n == 0 for n in others), "the daemon's other threads: %r" % ts)
    g = env.group('command: ["/bin/sh", "-c", "cut -d\\" \\" -f19 /proc/self/stat"]\n',
                  name="nice")
    env.wait(g, "Succeeded", timeout=30)
    out = env.read(os.path.join(g, "tasks", "0", "nodes", "0", "logs")).split()
    check(out == ["0"], "a task's nice value: %r" % out)

    env.stop()
    env.daemon_args = ["--reader-nice", "5"]
    env.start()
    ts = threads(env.daemon.pid)
    check([n for name, n in ts if name == "jobfs-reader"] == [5, 5],
          "--reader-nice 5: %r" % ts)

    for bad in ("99", "-21", "x", ""):
        r = subprocess.run([jobfs_bin(), "--state", os.path.join(env.work, "st"), "--foreground",
                            "--reader-nice", bad, os.path.join(env.work, "m")],
                           capture_output=True, text=True, timeout=20)
        check(r.returncode != 0 and ('--reader-nice "%s"' % bad) in r.stderr
              and "-20 to 19" in r.stderr,
              "--reader-nice %r: rc %d, stderr %r" % (bad, r.returncode, r.stderr))
