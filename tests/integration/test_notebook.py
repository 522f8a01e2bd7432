"""examples/sweep.ipynb, executed headless by Debian's jupyter-nbconvert
(python3-nbclient, python3-ipykernel; scripts/deps.sh installs them), on the
test's mount ($JOBFS_MOUNT) and on a jobfs the notebook starts itself; then
its outputs are checked: no error, the progress bar at 100%, one result per
task with the values the sweep's formula gives, the cost, the timeline."""
import json
import os
import re
import shutil
import subprocess
import sys

from jfit import SANITIZER_MARKS, TestFailure, case, check, money, repo_root

TASKS = 8
GROUP = "queues/notebook/groups/sweep"


def expected(i):
    """Task i's result: the sum of the squares 1..n, n = 10 (i + 1)."""
    n = 10 * (i + 1)
    return n, sum(k * k for k in range(1, n + 1))


def execute(env, extra_env):
    """Run a copy of the notebook with jupyter-nbconvert --execute in the
    test's work dir; return the executed notebook, parsed."""
    nbconvert = shutil.which("jupyter-nbconvert")
    check(nbconvert, "jupyter-nbconvert is not installed (scripts/deps.sh installs it)")
    src = os.path.join(repo_root(), "examples", "sweep.ipynb")
    shutil.copy(src, os.path.join(env.work, "sweep.ipynb"))
    e = dict(os.environ)
    e.pop("JOBFS_MOUNT", None)
    e.update({
        # the notebook's temporary files (and a jobfs it starts) under the
        # test's tmp dir, where the harness finds what is left
        "TMPDIR": env.work,
        "IPYTHONDIR": os.path.join(env.work, "ipython"),
        "JUPYTER_RUNTIME_DIR": os.path.join(env.work, "jupyter-runtime"),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    })
    e.update(extra_env)
    # --allow-errors: a cell's exception lands in the executed notebook,
    # where cell_outputs() names the cell
    r = env.sh("%s --to notebook --execute --allow-errors --ExecutePreprocessor.timeout=150 "
               "--output executed.ipynb sweep.ipynb" % nbconvert,
               timeout=170, cwd=env.work, env=e, check=False)
    path = os.path.join(env.work, "executed.ipynb")
    if r.returncode != 0 or not os.path.exists(path):
        raise TestFailure("jupyter-nbconvert exited %d: %s" % (r.returncode, (r.stderr or r.stdout)[-3000:]))
    with open(path) as f:
        return json.load(f)


def cell_outputs(nb):
    """{tag: [output, ...]} for every code cell, after checking that no cell
    raised."""
    out = {}
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        tag = c["metadata"]["tags"][0]
        for o in c["outputs"]:
            if o["output_type"] == "error":
                raise TestFailure("cell %s raised %s: %s\n%s" % (
                    tag, o["ename"], o["evalue"], "\n".join(o.get("traceback", []))[-2000:]))
        out[tag] = c["outputs"]
    return out


def text(outputs, stream="stdout"):
    return "".join("".join(o["text"]) for o in outputs
                   if o["output_type"] == "stream" and o["name"] == stream)


def data(outputs, mime):
    return ["".join(o["data"][mime]) if isinstance(o["data"][mime], list) else o["data"][mime]
            for o in outputs if o["output_type"] in ("display_data", "execute_result")
            and mime in o["data"]]


def check_sweep(outs, group_cost=None):
    """What every run of the notebook shows, wherever it mounted."""
    # the progress bar, updated in place to its last state
    bars = data(outs["wait"], "text/plain")
    check(len(bars) == 1 and re.search(r"\] %d/%d 100%% Succeeded" % (TASKS, TASKS), bars[0]),
          "progress bar output: %r" % bars)
    html = data(outs["wait"], "text/html")
    check(len(html) == 1 and '<progress value="%d" max="%d"' % (TASKS, TASKS) in html[0],
          "progress bar HTML: %r" % html)
    check("sweep Succeeded" in text(outs["wait"]), "wait cell printed %r" % text(outs["wait"]))
    # the results table: one row per task, the formula's values, from the logs
    tables = data(outs["results"], "text/plain")
    check(len(tables) == 1, "results outputs: %r" % tables)
    lines = tables[0].splitlines()
    check(lines[0].split()[:4] == ["task", "n", "result", "state"], "table header %r" % lines[0])
    rows = [l.split() for l in lines[1:]]
    check(len(rows) == TASKS, "table has %d rows, want %d: %r" % (len(rows), TASKS, tables[0]))
    for i, row in enumerate(rows):
        n, result = expected(i)
        check(row[:4] == [str(i), str(n), str(result), "Succeeded"],
              "row %d: %r, want task %d n %d result %d Succeeded" % (i, row, i, n, result))
    html = data(outs["results"], "text/html")
    check(len(html) == 1 and html[0].count("<tr>") == TASKS + 1
          and "<td>%d</td>" % expected(TASKS - 1)[1] in html[0], "results HTML: %r" % html)
    # the cost: the group's cost file, its rate, the ledger's rows and sum
    ct = text(outs["cost"])
    m = re.search(r"^cost: (.*) \(the group's cost file\)$", ct, re.M)
    check(m, "no cost line in %r" % ct)
    cost, _ = money(m.group(1))
    check(cost > 0, "the sweep cost %r" % m.group(1))
    if group_cost is not None:
        check(m.group(1) == group_cost, "notebook says cost %r, the group's cost file %r"
              % (m.group(1), group_cost))
    check(re.search(r"^cost_rate: \S+ \S+/h now", ct, re.M), "no cost_rate in %r" % ct)
    m = re.search(r"^ledger.csv: (\d+) rows for notebook/sweep, summing to (\S+ \S+)$", ct, re.M)
    check(m and int(m.group(1)) >= TASKS and money(m.group(2))[0] == cost,
          "ledger line in %r (want >= %d rows summing to the cost)" % (ct, TASKS))
    check(re.search(r"^\s+notebook/sweep\s", ct, re.M), "no /billing/summary line in %r" % ct)


def check_timeline(outs, present):
    """present: whether the group's timeline.svg exists.  With it the cell
    shows it as SVG; without it, it says that it is missing."""
    svgs = data(outs["timeline"], "image/svg+xml")
    if present:
        check(len(svgs) == 1 and svgs[0].lstrip().startswith("<svg"),
              "timeline.svg exists but the notebook shows no SVG: %r, printed %r"
              % (svgs, text(outs["timeline"])))
    else:
        check(not svgs and "timeline.svg: missing" in text(outs["timeline"]),
              "timeline cell without timeline.svg: %r" % outs["timeline"])


@case(timeout=200)
def test_notebook_on_mount(env):
    """$JOBFS_MOUNT: the notebook uses the test's mount and leaves it mounted."""
    nb = execute(env, {"JOBFS_MOUNT": env.mnt})
    outs = cell_outputs(nb)
    check("(from $JOBFS_MOUNT)" in text(outs["mount"]), "mount cell: %r" % text(outs["mount"]))
    # what the notebook showed is what the tree holds
    st = env.status(GROUP)
    check(st["state"] == "Succeeded" and st["progress"] == "%d/%d" % (TASKS, TASKS),
          "the group after the notebook: %s" % st)
    check_sweep(outs, group_cost=env.read(os.path.join(GROUP, "cost")).strip())
    # THE timeline assertion: it requires the SVG output once the tree has
    # the group's timeline.svg
    check_timeline(outs, os.path.exists(env.p(GROUP, "timeline.svg")))
    check("left %s mounted" % env.mnt in text(outs["unmount"]), "unmount cell: %r" % outs["unmount"])
    # a second run takes the next free name
    nb = execute(env, {"JOBFS_MOUNT": env.mnt})
    cell_outputs(nb)
    check(env.status(GROUP + "-2")["state"] == "Succeeded", "second run: %s" % env.status(GROUP + "-2"))


@case(timeout=200)
def test_notebook_mounts_itself(env):
    """Without $JOBFS_MOUNT the notebook starts $JOBFS_BIN on a temporary
    state dir, runs the sweep there and unmounts it: jobfs exits 0."""
    nb = execute(env, {"JOBFS_BIN": os.environ.get("JOBFS_BIN", "")})
    outs = cell_outputs(nb)
    mt = text(outs["mount"])
    m = re.search(r"^mount: (\S+) \(started (\S+) --state", mt, re.M)
    check(m and m.group(1).startswith(env.work + "/"), "mount cell: %r" % mt)
    check_sweep(outs)
    check_timeline(outs, bool(data(outs["timeline"], "image/svg+xml")))
    ut = text(outs["unmount"])
    check("unmounted %s; jobfs exited 0" % m.group(1) in ut, "unmount cell: %r" % ut)
    # its daemon's log, as run.py checks the harness's daemons
    check(not any(mark in ut for mark in SANITIZER_MARKS), "the notebook's jobfs: %s" % ut)
    with open("/proc/self/mountinfo") as f:
        left = [l.split()[4] for l in f if l.split()[4].startswith(env.work + "/")]
    check(not left, "still mounted after the notebook: %r" % left)
    check(not os.path.exists(os.path.dirname(m.group(1))), "scratch dir left: %s" % m.group(1))


def test_notebook_is_generated(env):
    """examples/sweep.ipynb is what examples/make_sweep_notebook.py writes
    (readable code there, no outputs committed)."""
    r = subprocess.run([sys.executable, os.path.join(repo_root(), "examples", "make_sweep_notebook.py"),
                        "--check"], capture_output=True, text=True)
    check(r.returncode == 0, "make_sweep_notebook.py --check: %s" % r.stderr.strip())
    with open(os.path.join(repo_root(), "examples", "sweep.ipynb")) as f:
        nb = json.load(f)
    check(nb["nbformat"] == 4 and all(not c.get("outputs") for c in nb["cells"]),
          "the committed notebook has outputs")
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            try:
                compile("".join(c["source"]), c["metadata"]["tags"][0], "exec")
            except SyntaxError as e:
                raise TestFailure("cell %s: %s" % (c["metadata"]["tags"][0], e))
