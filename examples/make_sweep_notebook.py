#!/usr/bin/env python3
"""Write examples/sweep.ipynb from the cells below (nbformat 4 JSON).

    python3 examples/make_sweep_notebook.py           # (re)write sweep.ipynb
    python3 examples/make_sweep_notebook.py --check   # exit 1 if it differs

The notebook is generated so that its code stays readable here, as plain
Python, and so that what is committed carries no outputs.  Each cell has a
tag (its metadata) that tests/integration/test_notebook.py finds it by.
"""
import json
import os
import sys

INTRO = """\
# A parameter sweep on jobfs

jobfs is a batch-job platform driven by files: `mkdir` makes a queue and a
group, writing `spec.yaml` submits it, and the group's `status.json`,
`watch`, the tasks' `logs`, `timeline.svg` and `/billing` say what happened
and what it cost. This notebook uses nothing else: the Python standard
library and `IPython.display`, on the tree alone.

It

1. finds the mount: `$JOBFS_MOUNT` when set, else starts `jobfs` itself
   (`$JOBFS_BIN`, else `build/tools/jobfs` of this repository) on a
   temporary state directory, and unmounts it at the end;
2. submits a sweep of 8 tasks to a queue `notebook`: task *i* takes
   *n* = 10 (*i* + 1) and prints `result:` the sum of the squares 1..*n*;
3. waits for it with a progress bar, woken by the group's `watch` file;
4. gathers each task's result from its `logs` into a table;
5. shows the group's `timeline.svg` and what the sweep cost.
"""

MOUNT = '''\
import atexit
import csv
import decimal
import html
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

from IPython.display import SVG, display


def find_jobfs():
    """$JOBFS_BIN, else build/tools/jobfs of this repository, else jobfs on $PATH."""
    if os.environ.get("JOBFS_BIN"):
        return os.environ["JOBFS_BIN"]
    for top in (os.getcwd(), os.path.dirname(os.getcwd())):
        path = os.path.join(top, "build", "tools", "jobfs")
        if os.access(path, os.X_OK):
            return path
    return shutil.which("jobfs")


def unmount():
    """Unmount the jobfs this notebook started (fusermount3 -u; the daemon exits)."""
    if daemon is None or daemon.poll() is not None:
        return
    deadline = time.monotonic() + 15
    while subprocess.run(["fusermount3", "-u", mount], capture_output=True).returncode != 0:
        if daemon.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.2)  # "device busy" while a reader finishes
    daemon.wait(30)


mount = os.environ.get("JOBFS_MOUNT")
daemon = None  # the jobfs process this notebook started, if it started one
if mount:
    print("mount: %s (from $JOBFS_MOUNT)" % mount)
else:
    jobfs = find_jobfs()
    if not jobfs:
        raise RuntimeError("no jobfs: set JOBFS_MOUNT to a mounted tree, or JOBFS_BIN to the "
                           "daemon (meson setup build && ninja -C build builds build/tools/jobfs)")
    scratch = tempfile.mkdtemp(prefix="jobfs-notebook-")
    mount, state = os.path.join(scratch, "mnt"), os.path.join(scratch, "state")
    os.mkdir(mount)
    os.mkdir(state)
    daemon_log = os.path.join(scratch, "jobfs.log")
    with open(daemon_log, "wb") as log:
        daemon = subprocess.Popen([jobfs, "--state", state, "--foreground", mount],
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                  start_new_session=True)
    atexit.register(unmount)  # also when the kernel stops half-way
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(mount, "README")):
        if daemon.poll() is not None:
            with open(daemon_log) as f:
                raise RuntimeError("jobfs exited %d: %s" % (daemon.returncode, f.read()[-2000:]))
        if time.monotonic() > deadline:
            raise RuntimeError("jobfs did not mount %s within 30 s" % mount)
        time.sleep(0.05)
    print("mount: %s (started %s --state %s --foreground)" % (mount, jobfs, state))
'''

SWEEP_MD = """\
## The sweep

`mkdir queues/notebook` makes the queue, `mkdir queues/notebook/groups/sweep`
a draft group (`sweep-2`, `sweep-3`, ... when that name is taken), and
closing its `spec.yaml` submits it. Every task gets `JOB_TASK_INDEX`; what it
prints to stdout lands in its node's `logs`.
"""

SUBMIT = '''\
TASKS = 8
SCRIPT = ('n=$((10 * (JOB_TASK_INDEX + 1))); s=0; k=1; '
          'while [ $k -le $n ]; do s=$((s + k * k)); k=$((k + 1)); done; '
          'sleep 2; echo "n: $n"; echo "result: $s"')
SPEC = "\\n".join([
    "completions: %d" % TASKS,
    "parallelism: 4",
    'command: ["/bin/sh", "-c"]',
    "args: %s" % json.dumps([SCRIPT]),  # JSON is YAML
]) + "\\n"


def status(path):
    with open(os.path.join(path, "status.json")) as f:
        return json.load(f)


def read(path):
    with open(path) as f:
        return f.read()


queue = os.path.join(mount, "queues", "notebook")
if not os.path.isdir(queue):
    os.mkdir(queue)
name, k = "sweep", 1
while os.path.exists(os.path.join(queue, "groups", name)):
    k += 1
    name = "sweep-%d" % k
group = os.path.join(queue, "groups", name)
os.mkdir(group)
try:
    with open(os.path.join(group, "spec.yaml"), "w") as f:
        f.write(SPEC)
except OSError as e:  # refused: status says why, with the line
    raise RuntimeError("spec.yaml refused (%s): %s" % (e.strerror, status(group)["message"])) from None
print(SPEC)
print("submitted %s: %s" % (os.path.relpath(group, mount), status(group)["state"]))
'''

WAIT = '''\
FINAL = ("Succeeded", "Failed", "Stopped")


class Progress:
    """The group's progress: a bar in HTML, a line of text elsewhere."""

    def __init__(self, st):
        self.st = st
        self.done, self.total = (int(x) for x in st["progress"].split("/"))

    def __repr__(self):
        pct = 100 * self.done // self.total if self.total else 100
        bar = "#" * (30 * pct // 100)
        return "progress: [%-30s] %d/%d %3d%% %s (running %d, waiting %d, failed %d)" % (
            bar, self.done, self.total, pct, self.st["state"], self.st["running"],
            self.st["waiting"], self.st["failed"])

    def _repr_html_(self):
        return '<progress value="%d" max="%d" style="width: 30em"></progress> <code>%s</code>' % (
            self.done, self.total, html.escape(repr(self)))


bar = display(Progress(status(group)), display_id=True)
# watch yields a line per change of the group: block on it (select) rather
# than poll; the 2 s timeout is only a fallback
watch = os.open(os.path.join(group, "watch"), os.O_RDONLY | os.O_NONBLOCK)
deadline = time.monotonic() + 600
try:
    while True:
        st = status(group)
        bar.update(Progress(st))
        if st["state"] in FINAL:
            break
        if time.monotonic() > deadline:
            raise TimeoutError("the sweep did not end within 600 s: %s" % st["message"])
        if select.select([watch], [], [], 2.0)[0] and not os.read(watch, 65536):
            time.sleep(0.5)  # end of the stream: status says why next
finally:
    os.close(watch)
print("%s %s after %s: %s" % (name, st["state"], st["duration"], st["message"]))
'''

RESULTS = '''\
class Table:
    """Rows of dicts: an HTML table in a notebook, aligned text elsewhere."""

    def __init__(self, rows):
        self.rows = rows
        self.cols = list(rows[0]) if rows else []

    def __repr__(self):
        cells = [self.cols] + [[str(r[c]) for c in self.cols] for r in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.cols))]
        return "\\n".join("  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells)

    def _repr_html_(self):
        head = "".join("<th>%s</th>" % html.escape(c) for c in self.cols)
        body = "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % html.escape(str(r[c]))
                                               for c in self.cols) for r in self.rows)
        return "<table><thead><tr>%s</tr></thead><tbody>%s</tbody></table>" % (head, body)


rows = []
for i in range(st["completions"]):
    task = os.path.join(group, "tasks", str(i))
    tst = status(task)
    # the task's output: its node's logs (stdout and stderr of its last attempt)
    found = dict(line.split(": ", 1) for line in read(os.path.join(task, "nodes", "0", "logs")).splitlines()
                 if line.startswith(("n: ", "result: ")))
    rows.append({"task": i, "n": found.get("n", "-"), "result": found.get("result", "-"),
                 "state": tst["state"], "attempt": tst["attempt"], "duration": tst["duration"],
                 "cost": tst["cost"]})
display(Table(rows))
'''

TIMELINE = '''\
timeline = os.path.join(group, "timeline.svg")
if os.path.exists(timeline):
    display(SVG(filename=timeline))
else:
    print("timeline.svg: missing: this jobfs draws no %s" % os.path.relpath(timeline, mount))
'''

COST = '''\
st = status(group)
print("cost: %s (the group's cost file)" % read(os.path.join(group, "cost")).strip())
print("cost_rate: %s now; cost_estimate: %s; node_seconds: %d; duration: %s"
      % (st["cost_rate"], st["cost_estimate"], st["node_seconds"], st["duration"]))
with open(os.path.join(mount, "billing", "ledger.csv"), newline="") as f:
    billed = [r for r in csv.DictReader(f) if r["queue"] == "notebook" and r["group"] == st["name"]]
print("ledger.csv: %d rows for notebook/%s, summing to %s %s"
      % (len(billed), st["name"], sum(decimal.Decimal(r["amount"]) for r in billed), st["currency"]))
print("/billing/summary, this group's line:")
for line in read(os.path.join(mount, "billing", "summary")).splitlines():
    if line.split()[:1] == ["notebook/" + st["name"]]:
        print(line)
'''

UNMOUNT = '''\
if daemon is not None:
    unmount()
    with open(daemon_log) as f:
        tail = f.read()[-2000:]
    print("unmounted %s; jobfs exited %s" % (mount, daemon.returncode))
    if tail:  # a clean run logs nothing
        print("jobfs's log (%s), its end:\\n%s" % (daemon_log, tail))
    shutil.rmtree(scratch, ignore_errors=True)
else:
    print("left %s mounted: it was mounted before this notebook" % mount)
'''

CELLS = [
    ("markdown", "intro", INTRO),
    ("code", "mount", MOUNT),
    ("markdown", "sweep-intro", SWEEP_MD),
    ("code", "submit", SUBMIT),
    ("markdown", "wait-intro", "## Waiting, with a progress bar\n"),
    ("code", "wait", WAIT),
    ("markdown", "results-intro", "## Each task's result, from its logs\n"),
    ("code", "results", RESULTS),
    ("markdown", "timeline-intro", "## The group's timeline (`timeline.svg`)\n"),
    ("code", "timeline", TIMELINE),
    ("markdown", "cost-intro", "## What it cost (`cost`, `status.json`, `/billing`)\n"),
    ("code", "cost", COST),
    ("code", "unmount", UNMOUNT),
]


def lines(text):
    """nbformat's multi-line string: a list of lines, each but the last with its newline."""
    out = text.rstrip("\n").splitlines(True)
    return out


def notebook():
    cells = []
    for kind, tag, text in CELLS:
        cell = {"cell_type": kind, "id": tag, "metadata": {"tags": [tag]}, "source": lines(text)}
        if kind == "code":
            cell["execution_count"] = None
            cell["outputs"] = []
        cells.append(cell)
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def text():
    return json.dumps(notebook(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sweep.ipynb")
    want = text()
    if sys.argv[1:] == ["--check"]:
        try:
            with open(path, encoding="utf-8") as f:
                have = f.read()
        except OSError:
            have = None
        if have != want:
            print("%s is not what %s writes: run it" % (path, sys.argv[0]), file=sys.stderr)
            return 1
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(want)
    return 0


if __name__ == "__main__":
    sys.exit(main())
