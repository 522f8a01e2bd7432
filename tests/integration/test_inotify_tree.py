"""Recursive watchers see the directories the daemon makes.

A task's directory appears when the daemon makes its row, not through a
mkdir the kernel saw, so the kernel would raise no IN_CREATE and a
recursive watcher (inotifywait -r, Python watchdog) would never add a
watch under tasks/.  The daemon raises it through its toucher (fs/toucher.h:
a mkdir the daemon answers with the directory that is there), for every
tasks/ directory the kernel holds.  Checked with the real tools:

- inotifywait -m -r on a queue, set up before the group's spec is written,
  reports CREATE,ISDIR for each task directory, and then events from
  inside tasks/N/nodes/0 (it watched them because it saw them made);
- a watchdog recursive observer (the Debian python3-watchdog, under the
  system's python3) gets a DirCreatedEvent for each task and a
  FileModifiedEvent under each task's nodes/0;
- a 10,000-task group: inotifywait -m on its tasks/ reports each of the
  10,000 directories once.  How long that takes is for the benchmarks.
"""
import os
import re
import subprocess
import sys

from jfit import LineReader, Skip, case, check, have


def spec(n, par, cmd):
    return 'completions: %d\nparallelism: %d\ncommand: %s\n' % (n, par, cmd)


def created(lines):
    """Task indexes reported made (CREATE,ISDIR in a tasks/ directory)."""
    got = []
    for l in lines:
        m = re.search(r"/tasks/ CREATE,ISDIR (\d+)$", l)
        if m:
            got.append(int(m.group(1)))
    return got


@case(timeout=90)
def test_inotifywait_recursive_sees_tasks(env):
    if not have("inotifywait"):
        raise Skip("inotifywait not installed (apt package inotify-tools)")
    q = env.queue("w")
    g = os.path.join(q, "groups", "p")
    env.mkdir(g)
    iw = env.popen(["inotifywait", "-m", "-r", env.p(q)], stderr=subprocess.STDOUT)
    rd = LineReader(iw)
    rd.wait_for(lambda ls: any("Watches established" in l for l in ls), 10,
                "inotifywait -r to be ready")
    env.submit(g, spec(4, 2, '["sh", "-c", "sleep 1; echo hi"]'))
    rd.wait_for(lambda ls: sorted(created(ls)) == [0, 1, 2, 3], 20,
                "CREATE,ISDIR for tasks 0..3")
    # it watches what it saw made: the nodes' files report their changes
    rd.wait_for(lambda ls: all(any(("/tasks/%d/nodes/0/ " % i) in l and "MODIFY" in l
                                   for l in ls) for i in range(4)), 30,
                "MODIFY events from inside every tasks/N/nodes/0")
    env.wait(g, "Succeeded", timeout=30)
    check(sorted(created(rd.lines)) == [0, 1, 2, 3],
          "each task made once: %s" % created(rd.lines))


OBSERVER = r'''
import sys, time
from watchdog.observers import Observer
from watchdog.events import FileSystemEventHandler

class H(FileSystemEventHandler):
    def on_any_event(self, ev):
        print("%s %s %s" % (ev.event_type, "dir" if ev.is_directory else "file",
                            ev.src_path), flush=True)

o = Observer()
o.schedule(H(), sys.argv[1], recursive=True)
o.start()
print("ready", flush=True)
try:
    while True:
        time.sleep(0.2)
finally:
    o.stop()
'''


@case(timeout=90)
def test_watchdog_recursive_observer_sees_tasks(env):
    py = "/usr/bin/python3"
    if not os.path.exists(py) or subprocess.run([py, "-c", "import watchdog.observers"],
                                                capture_output=True).returncode:
        raise Skip("python3-watchdog not installed for %s" % py)
    q = env.queue("w")
    g = os.path.join(q, "groups", "p")
    env.mkdir(g)
    script = os.path.join(env.tmp, "observe.py")
    with open(script, "w") as f:
        f.write(OBSERVER)
    ob = env.popen([py, script, env.p(q)], stderr=subprocess.STDOUT)
    rd = LineReader(ob)
    rd.wait_for(lambda ls: "ready" in ls, 20, "the watchdog observer to start")
    env.submit(g, spec(3, 3, '["sh", "-c", "sleep 1; echo hi"]'))
    tasks = os.path.join(env.p(g), "tasks")

    def made(ls):
        return {l.split()[-1] for l in ls if l.startswith("created dir ")}

    want = {os.path.join(tasks, str(i)) for i in range(3)}
    rd.wait_for(lambda ls: want <= made(ls), 20, "DirCreatedEvent for tasks 0..2")
    rd.wait_for(lambda ls: all(any(l.startswith("modified file %s/nodes/0/" % t)
                                   for l in ls) for t in want), 30,
                "FileModifiedEvent under every task's nodes/0")
    env.wait(g, "Succeeded", timeout=30)


@case(timeout=120)
def test_ten_thousand_task_dirs_each_reported_once(env):
    if not have("inotifywait"):
        raise Skip("inotifywait not installed (apt package inotify-tools)")
    n = 10000
    q = env.queue("w")
    g = os.path.join(q, "groups", "p")
    env.mkdir(g)
    iw = env.popen(["inotifywait", "-m", "-e", "create", env.p(g, "tasks")],
                   stderr=subprocess.STDOUT)
    rd = LineReader(iw)
    rd.wait_for(lambda ls: any("Watches established" in l for l in ls), 10,
                "inotifywait to be ready")
    env.submit(g, spec(n, 1, '["sleep", "600"]'))
    rd.wait_for(lambda ls: len(created(ls)) >= n, 90, "CREATE,ISDIR for %d tasks" % n)
    got = created(rd.lines)
    check(sorted(got) == list(range(n)), "each of 0..%d once: %d reports, %d distinct"
          % (n - 1, len(got), len(set(got))))
    listed = env.sh("ls %s | wc -l" % env.p(g, "tasks")).stdout.strip()
    check(listed == str(n), "ls tasks: %s" % listed)
    check(env.ctl(g, "stop") == 0, "ctl stop refused")
    env.wait(g, "Stopped", timeout=60)
