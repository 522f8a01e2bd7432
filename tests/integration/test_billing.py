"""Billing to the second through daemon stops and crashes (reference 5.5): a clean
stop closes every open segment and the next daemon opens the next one where
it ended; a crash (kill -9) leaves it open and the next daemon closes it at
the process's real end.  Either way the ledger's seconds match what the
processes ran, within 1 s per segment, and every cost is the sum of the rows
beneath it."""
import os
import time
from decimal import Decimal

from jfit import case, check

RECORDER = """\
completions: %(n)d
parallelism: %(n)d
gpu: "4090"
%(billing)s
command: ["/bin/sh", "-c"]
args: ["date +%%s.%%N > $REC/$JOB_TASK_INDEX.start; sleep %(secs)s; while [ ! -e $REC/go ]; do sleep 0.05; done; date +%%s.%%N > $REC/$JOB_TASK_INDEX.end"]
env:
  REC: "%(rec)s"
"""


def ran(rec, i):
    with open(os.path.join(rec, "%d.start" % i)) as f:
        t0 = float(f.read())
    with open(os.path.join(rec, "%d.end" % i)) as f:
        t1 = float(f.read())
    return t1 - t0


def check_costs(env, g, queue, rows, n):
    """Every cost file equals its ledger rows, to the micro-unit."""
    def total(rs):
        return sum((Decimal(r["amount"]) for r in rs), Decimal(0))

    def cost(path):
        return Decimal(env.read(path).split()[0])

    mine = [r for r in rows if r["group"] == os.path.basename(g)]
    for i in range(n):
        ti = [r for r in mine if int(r["task"]) == i]
        check(cost(os.path.join(g, "tasks/%d/cost" % i)) == total(ti), "task %d cost" % i)
        check(cost(os.path.join(g, "tasks/%d/nodes/0/cost" % i)) == total(ti),
              "node %d cost" % i)
    check(cost(os.path.join(g, "cost")) == total(mine), "group cost")
    check(cost("queues/%s/cost" % queue) == total(mine), "queue cost")
    check(cost("billing/cost") == total(rows), "billing/cost %s != %s"
          % (cost("billing/cost"), total(rows)))


def run_through(env, stops, kind):
    rec = os.path.join(env.work, "rec")
    os.makedirs(rec)
    # the tasks run at least 2 s, and on until the stops are over ($REC/go)
    n, secs = 2, 2
    g = env.group(RECORDER % {"n": n, "secs": secs, "rec": rec, "billing": ""}, name="bill")
    env.wait(g, pred=lambda s: s["running"] == n, timeout=10, what="tasks running")
    env.poll_until(lambda: all(os.path.exists(os.path.join(rec, "%d.start" % i))
                               for i in range(n)), 5, "the commands to start")
    for _ in range(stops):
        time.sleep(0.7)
        if kind == "clean":
            env.remount()
        else:
            env.daemon.kill9()
            env.start()
    open(os.path.join(rec, "go"), "w").close()
    st = env.wait(g, ("Succeeded", "Failed"), timeout=secs + 30)
    check(st["state"] == "Succeeded", "group ended %s: %s" % (st["state"], st["message"]))
    rows = env.ledger()
    for i in range(n):
        mine = sorted((r for r in rows if int(r["task"]) == i), key=lambda r: r["start"])
        check(all(int(r["attempt"]) == 1 for r in mine), "task %d attempts %r"
              % (i, [r["attempt"] for r in mine]))
        # segments meet: each starts where the one before ended
        for a, b in zip(mine, mine[1:]):
            check(a["end"] == b["start"], "task %d: gap or overlap %s .. %s"
                  % (i, a["end"], b["start"]))
        billed = sum(int(r["seconds"]) for r in mine)
        real = ran(rec, i)
        check(abs(billed - real) <= len(mine),
              "task %d billed %d s in %d segments, ran %.2f s" % (i, billed, len(mine), real))
        if kind == "clean":
            check(len(mine) == stops + 1, "task %d: %d segments after %d clean stops"
                  % (i, len(mine), stops))
        else:
            check(len(mine) == 1, "task %d: %d segments after crashes" % (i, len(mine)))
    check_costs(env, g, "q", rows, n)
    return rows


@case(timeout=90)
def test_clean_stops_split_segments(env):
    run_through(env, 2, "clean")


@case(timeout=90)
def test_crashes_bill_once(env):
    run_through(env, 3, "kill9")
