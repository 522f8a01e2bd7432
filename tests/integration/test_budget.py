"""Queue budgets (reference 10) on a real mount: once a queue's cost in its
budget period reaches its `budget`, nothing new starts in it (`reason:
Budget`, one `BudgetExhausted` event); running work runs on, or with
`budget_action: stop` is stopped; a rolling period frees the money as old
costs leave it (moved a day ahead with `--test-clock`), and so does a
raised budget (`BudgetAvailable`).  The cluster file prices a CPU core at
3600 CNY an hour, so a running task costs 1.00 CNY a second and a budget
of a few CNY is reached while it runs.

Tasks wait for a file of their own (GO_<index>) before they end, so the
test decides when each one ends; nothing here waits a fixed time for
something to happen, only (briefly) to see that something does not."""
import os
import subprocess
import time
from decimal import Decimal

from jfit import case, check, money

PRICY = """\
name: pricy
currency: CNY
cpu_price: {on-demand: "3600", spot: "1000"}
models:
  - name: "4090"
    vram: 24Gi
    cpu_per_gpu: 20
    memory_per_gpu: 101Gi
    price: {on-demand: "3.60", spot: "1.08"}
machines:
  - {name: m0, model: "4090", gpus: 8}
"""

# a task that runs until its GO file appears
GATED = """\
completions: %(n)d
parallelism: 1
command: ["/bin/sh", "-c", "while [ ! -e %(dir)s/GO_$JOB_TASK_INDEX ]; do sleep 0.05; done"]
"""


def mount(env, *extra):
    """Remount on the pricy cluster with a test clock at +0 s; returns the
    clock file's path."""
    clock = os.path.join(env.tmp, "clock")
    with open(clock, "w") as f:
        f.write("0\n")
    path = os.path.join(env.tmp, "pricy.yaml")
    with open(path, "w") as f:
        f.write(PRICY)
    env.stop()
    env.state = os.path.join(env.tmp, "state-b%d" % (env.ndaemons + 1))
    os.makedirs(env.state, exist_ok=True)
    env.daemon_args = ["--cluster", path, "--test-clock", clock] + list(extra)
    env.start()
    return clock


def set_clock(path, seconds):
    # a new file renamed over the old one: the daemon never reads half of it
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write("%d\n" % seconds)
    os.rename(tmp, path)


def gate_dir(env, name):
    d = os.path.join(env.work, name)
    os.makedirs(d, exist_ok=True)
    return d


def go(d, i):
    with open(os.path.join(d, "GO_%d" % i), "w"):
        pass


def queue_spec(env, q, text):
    rc = env.write(os.path.join(q, "spec.yaml"), text)
    check(rc == 0, "queue spec refused (%s): %s" % (rc, env.status_yaml(q).get("message")))


def events(env, path, reason):
    """The lines of path's events with this reason."""
    return [l for l in env.read(os.path.join(path, "events")).splitlines()
            if l.split(" ")[2:3] == [reason]]


def gone(pid):
    """The process has ended (or is a zombie left for its parent)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def micro(text):
    return money(text)[0]


def check_costs(env, q):
    """The queue's cost is the sum of its ledger rows, to the micro-unit."""
    rows = [r for r in env.ledger() if r["queue"] == os.path.basename(q)]
    total = sum((Decimal(r["amount"]) for r in rows), Decimal(0))
    cost = Decimal(env.read(os.path.join(q, "cost")).split()[0])
    check(cost == total, "queue cost %s, ledger %s" % (cost, total))
    return rows


@case(timeout=90)
def test_budget_reached_mid_group(env):
    """Budget 2.00, no period, hold: reached while task 0 runs (nothing
    ended); the rest of the group waits with reason Budget, one
    BudgetExhausted, budget_left 0.00, task 0 runs on and finishes; the
    next task does not start until the queue spec raises the budget."""
    mount(env)
    q = env.queue("q")
    queue_spec(env, q, 'budget: "2.00"\n')
    st = env.status_yaml(q)
    check(st["budget"] == "2.00 CNY" and st["budget_left"] == "2.00 CNY" and
          st["budget_period"] == "lifetime" and st["budget_action"] == "hold",
          "queue status: %s" % st)
    d = gate_dir(env, "g")
    g = env.group(GATED % {"n": 3, "dir": d}, name="g", queue="q")
    env.wait(g + "/tasks/0", "Running", timeout=20)
    # 1.00 a second: the engine notices the budget reached while it runs
    env.poll_until(lambda: events(env, q, "BudgetExhausted"), 20, "BudgetExhausted")
    ev = events(env, q, "BudgetExhausted")
    check(len(ev) == 1 and " Warning BudgetExhausted queue " in ev[0] and
          "of its budget of 2.00 CNY" in ev[0] and "budget_action: hold" in ev[0],
          "events: %s" % ev)
    st = env.status_yaml(q)
    check(st["budget_left"] == "0.00 CNY" and micro(st["budget_spent"]) >= 2000000,
          "queue status: %s" % st)
    gs = env.wait(g, pred=lambda s: s.get("reason") == "Budget", timeout=10,
                  what="reason Budget")
    check(gs["state"] == "Running" and gs["running"] == 1 and gs["waiting"] == 2,
          "group: %s" % gs)
    check(env.status(g + "/tasks/0")["state"] == "Running", "task 0 was stopped (hold)")
    # task 0 ends by itself; nothing new starts
    go(d, 0)
    env.wait(g + "/tasks/0", "Succeeded", timeout=20)
    gs = env.wait(g, "Waiting", timeout=10)
    check(gs.get("reason") == "Budget" and gs["message"].startswith("Budget: queue q has spent"),
          "group: %s" % gs)
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        check(env.status(g + "/tasks/1")["state"] == "Waiting", "task 1 started")
        time.sleep(0.1)
    check(len(events(env, q, "BudgetExhausted")) == 1, "BudgetExhausted twice")
    check(env.status_yaml(q)["budget_left"] == "0.00 CNY", "budget_left after the end")
    # a bad budget is refused with its message; the last accepted one stays
    rc = env.write(os.path.join(q, "spec.yaml"), 'budget: "-5"\n')
    check(rc != 0, "a negative budget was accepted")
    st = env.status_yaml(q)
    check("key 'budget'" in st["message"] and "negative" in st["message"] and
          st["budget"] == "2.00 CNY", "queue status: %s" % st)
    # raised: available again at once, the work starts
    queue_spec(env, q, 'budget: "1000.00"\n')
    env.poll_until(lambda: events(env, q, "BudgetAvailable"), 10, "BudgetAvailable")
    ev = events(env, q, "BudgetAvailable")
    check(len(ev) == 1 and " Normal BudgetAvailable queue " in ev[0], "events: %s" % ev)
    env.wait(g + "/tasks/1", "Running", timeout=20)
    check(env.status(g).get("reason", "") != "Budget", "still reason Budget")
    go(d, 1)
    go(d, 2)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=30)
    check(st["state"] == "Succeeded", "group: %s" % st)
    check_costs(env, q)


@case(timeout=90)
def test_budget_action_stop(env):
    """budget_action: stop: the running task is stopped when the budget is
    reached (Stopped, its process gone, billed to its end); the group's
    other task waits with reason Budget."""
    mount(env)
    q = env.queue("s")
    queue_spec(env, q, 'budget: "2.00"\nbudget_action: stop\n')
    d = gate_dir(env, "s")
    g = env.group(GATED % {"n": 2, "dir": d}, name="g", queue="s")
    env.wait(g + "/tasks/0", "Running", timeout=20)
    pid = int(env.status(g + "/tasks/0/nodes/0")["pid"])
    t0 = env.wait(g + "/tasks/0", ("Stopped", "Succeeded", "Failed"), timeout=30)
    check(t0["state"] == "Stopped", "task 0: %s" % t0)
    ev = env.read(g + "/tasks/0/events")
    check("budget_action: stop" in ev, "task 0 events: %s" % ev)
    check(gone(pid), "task 0's process runs on")
    gs = env.wait(g, pred=lambda s: s.get("reason") == "Budget" and s["running"] == 0,
                  timeout=10, what="reason Budget, nothing running")
    check(gs["waiting"] == 1, "group: %s" % gs)
    check(len(events(env, q, "BudgetExhausted")) == 1, "events: %s"
          % env.read(os.path.join(q, "events")))
    rows = check_costs(env, q)
    check(len(rows) == 1 and int(rows[0]["seconds"]) >= 2, "ledger: %s" % rows)
    check(env.status_yaml(q)["budget_left"] == "0.00 CNY", "budget_left")
    env.ctl(g, "stop")
    env.wait(g, "Stopped", timeout=20)


@case(timeout=90)
def test_budget_period_rolls_over(env):
    """budget_period: 1d with --test-clock: a jump of 10 s bills the running
    task up to the new now and spends the budget; a jump of a day empties
    the window: budget_left back, a Normal BudgetAvailable, the waiting
    task starts; billing stays the ledger's sum."""
    clock = mount(env)
    q = env.queue("p")
    queue_spec(env, q, 'budget: "5.00"\nbudget_period: 1d\n')
    check(env.status_yaml(q)["budget_period"] == "1d", "status: %s" % env.status_yaml(q))
    d = gate_dir(env, "p")
    g = env.group(GATED % {"n": 2, "dir": d}, name="g", queue="p")
    env.wait(g + "/tasks/0", "Running", timeout=20)
    set_clock(clock, 10)
    env.poll_until(lambda: events(env, q, "BudgetExhausted"), 10, "BudgetExhausted")
    check(micro(env.read(g + "/tasks/0/cost")) >= 10000000,
          "task 0 not billed for the jump: %s" % env.read(g + "/tasks/0/cost"))
    go(d, 0)
    env.wait(g + "/tasks/0", "Succeeded", timeout=20)
    gs = env.wait(g, pred=lambda s: s["state"] == "Waiting" and s.get("reason") == "Budget",
                  timeout=10, what="waiting for the budget")
    check("1d window" in gs["message"], "group: %s" % gs)
    rows = check_costs(env, q)
    check(len(rows) == 1 and int(rows[0]["seconds"]) >= 10, "ledger: %s" % rows)
    # a day later the window holds nothing of it
    set_clock(clock, 86400 + 60)
    env.poll_until(lambda: events(env, q, "BudgetAvailable"), 10, "BudgetAvailable")
    ev = events(env, q, "BudgetAvailable")
    # the whole budget is back: the window holds nothing of task 0
    check(len(ev) == 1 and " Normal " in ev[0] and
          "5.00 CNY of its budget of 5.00 CNY left (spent 0.00 CNY in the last 1d)" in ev[0],
          "events: %s" % ev)
    env.wait(g + "/tasks/1", "Running", timeout=20)
    st = env.status_yaml(q)
    check(micro(st["budget_left"]) > 0 and micro(st["cost"]) >= 10000000,
          "queue status: %s" % st)
    go(d, 1)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=30)
    check(st["state"] == "Succeeded", "group: %s" % st)
    rows = check_costs(env, q)
    check(len(rows) == 2, "ledger: %s" % rows)
    check(len(events(env, q, "BudgetExhausted")) == 1, "exhausted twice")


@case(timeout=60)
def test_budget_bad_values(env):
    """Every bad form of a budget is refused with a message naming the key
    and the line (close() EINVAL, the queue's status and events say why)."""
    q = env.queue("bad")
    for text, line, key, words in [
        ('budget: "-5"\n', 1, "budget", "is negative"),
        ('budget: "1.1234567"\n', 1, "budget", "has 7 decimals"),
        ("capacity: 2\nbudget: lots\n", 2, "budget", "is not an amount"),
        ('budget: "1000000000000"\n', 1, "budget", "out of range"),
        ("budget: 1\nbudget_period: 2x\n", 2, "budget_period", "bad duration"),
        ("budget_action: stop\n", 1, "budget_action", "needs a budget"),
    ]:
        rc = env.write(os.path.join(q, "spec.yaml"), text)
        check(rc != 0, "accepted: %r" % text)
        msg = env.status_yaml(q)["message"]
        check(words in msg and "line %d: key '%s'" % (line, key) in msg,
              "%r: %s" % (text, msg))
    ev = env.read(os.path.join(q, "events"))
    check(ev.count(" Warning Invalid queue ") == 6, "events: %s" % ev)
    check(env.status_yaml(q)["budget"] == "unlimited", "status: %s" % env.status_yaml(q))


def wait_slurm_quiet(env, timeout=60):
    env.poll_until(lambda: not [j for j in env.slurm_jobs() if j[1] in
                                ("RUNNING", "COMPLETING")], timeout, "Slurm to run nothing")


@case(timeout=240)
def test_budget_slurm(env):
    """On Slurm: the budget reached while an element runs holds the rest of
    the batch in Slurm (nothing more starts there); with budget_action: stop
    the running element is cancelled; a raised budget releases the hold."""
    path = os.path.join(env.tmp, "pricy.yaml")
    with open(path, "w") as f:
        f.write(PRICY)
    env.use_slurm("--cluster", path)
    q = env.queue("sq")
    queue_spec(env, q, 'budget: "2.00"\n')
    d = gate_dir(env, "sq")
    g = env.group(GATED % {"n": 3, "dir": d}, name="g", queue="sq")
    env.wait(g + "/tasks/0", "Running", timeout=60)
    env.poll_until(lambda: events(env, q, "BudgetExhausted"), 30, "BudgetExhausted")
    env.wait(g, pred=lambda s: s.get("reason") == "Budget", timeout=20, what="reason Budget")
    # the rest of the batch is held in Slurm
    def held():
        pend = [j for j in env.slurm_jobs() if j[1] == "PENDING"]
        if not pend:
            return None
        r = subprocess.run(["squeue", "-h", "-o", "%i %r", "-j", pend[0][0].split("_")[0]],
                           capture_output=True, text=True)
        return "JobHeld" in r.stdout
    env.poll_until(held, 20, "the pending elements held in Slurm")
    go(d, 0)
    env.wait(g + "/tasks/0", "Succeeded", timeout=60)
    wait_slurm_quiet(env)
    end = time.monotonic() + 3
    while time.monotonic() < end:
        check(not [j for j in env.slurm_jobs() if j[1] == "RUNNING"],
              "Slurm started more: %s" % env.slurm_jobs())
        check(env.status(g + "/tasks/1")["state"] == "Waiting", "task 1 started")
        time.sleep(0.2)
    check(len(events(env, q, "BudgetExhausted")) == 1, "BudgetExhausted twice")
    # raised: released in Slurm, the rest runs
    queue_spec(env, q, 'budget: "1000.00"\n')
    env.wait(g + "/tasks/1", "Running", timeout=60)
    go(d, 1)
    go(d, 2)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=90)
    check(st["state"] == "Succeeded", "group: %s" % st)
    check_costs(env, q)

    # budget_action: stop cancels the running element
    s = env.queue("ss")
    queue_spec(env, s, 'budget: "2.00"\nbudget_action: stop\n')
    d2 = gate_dir(env, "ss")
    g2 = env.group(GATED % {"n": 2, "dir": d2}, name="g", queue="ss")
    env.wait(g2 + "/tasks/0", "Running", timeout=60)
    t0 = env.wait(g2 + "/tasks/0", ("Stopped", "Succeeded", "Failed"), timeout=60)
    check(t0["state"] == "Stopped", "task 0: %s" % t0)
    wait_slurm_quiet(env)
    gs = env.wait(g2, pred=lambda s: s.get("reason") == "Budget" and s["running"] == 0,
                  timeout=20, what="reason Budget")
    check(env.status(g2 + "/tasks/1")["state"] == "Waiting", "task 1: %s"
          % env.status(g2 + "/tasks/1"))
    rows = check_costs(env, s)
    check(len(rows) == 1, "ledger: %s" % rows)
    env.ctl(g2, "stop")
    env.wait(g2, "Stopped", timeout=30)
