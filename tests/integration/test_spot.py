"""Spot work yields to on-demand work (reference 5.4): preemption with SIGTERM and
a grace period, checkpoints that survive it, billing to the second, and spot
tasks that wait for a low-risk window by the recorded on-demand demand."""
import os
import sqlite3
import time
from decimal import Decimal

from jfit import case, check, money, pid_alive, rfc3339

# one A800 machine of 8 GPUs; a short grace so the tests are quick
A800 = """\
name: spot-test
currency: CNY
preempt_grace: %(grace)s
models:
  - {name: A800, vram: 80Gi, cpu_per_gpu: 2, memory_per_gpu: 8Gi,
     price: {on-demand: "9.60", spot: "2.88"}}
machines:
  - {name: a800-0, model: A800, gpus: 8}
"""

# counts steps of 0.1 s to 40; SIGTERM saves the step in the checkpoint
# directory and exits; a later attempt resumes from it
STEPPER = r"""
billing: spot
gpu: A800
completions: 8
parallelism: 8
retries: 2
command: ["/bin/sh", "-c"]
args:
  - |
    ck=$JOB_CHECKPOINT_DIR/step; i=0
    if [ -f $ck ]; then i=$(cat $ck); echo "resumed at $i attempt $JOB_ATTEMPT"; fi
    trap 'echo $i > $ck; echo "SIGTERM at $i"; exit 143' TERM
    while [ $i -lt 40 ]; do sleep 0.1 & wait $!; i=$((i+1)); done
    while [ ! -e @GO@ ]; do sleep 0.1 & wait $!; done
    echo "done $i attempt $JOB_ATTEMPT"
"""


def amount(text):
    return Decimal(text.split()[0])


def rows_sum(rows):
    return sum((Decimal(r["amount"]) for r in rows), Decimal(0))


@case(timeout=90)
def test_preempt_a800(env):
    """All A800 GPUs full of spot work; an on-demand group asks for 4: spot
    nodes are preempted within grace + 1 s, the on-demand group runs, the
    spot group ends Succeeded later with no retry used, its preempted tasks
    resume from their checkpoints, and every cost equals its ledger rows."""
    env.use_cluster(A800 % {"grace": "3s"})
    check("preempt_grace: 3s" in env.read("cluster/settings"),
          "cluster/settings: %r" % env.read("cluster/settings"))
    # the spot tasks end once the test is done with them (spot-go), the
    # on-demand one once it has looked at them (od-go)
    spot_go, od_go = os.path.join(env.tmp, "spot-go"), os.path.join(env.tmp, "od-go")
    spot = env.group(STEPPER.replace("@GO@", spot_go), name="spot", queue="qs")
    env.wait(spot, pred=lambda s: s["running"] == 8, timeout=15, what="8 spot tasks running")
    # a node has its pid once its supervisor reported (starts do not wait)
    pids = {i: env.wait(os.path.join(spot, "tasks/%d/nodes/0" % i), "Running", timeout=10)["pid"]
            for i in range(8)}
    time.sleep(0.5)   # let the steppers count a little, so a checkpoint is > 0
    od = env.group('gpu: A800\ngpus: 4\ncommand: ["/bin/sh", "-c", "echo on-demand; '
                   'while [ ! -e %s ]; do sleep 0.05; done"]\n' % od_go, name="od", queue="qo")
    env.wait(od, "Running", timeout=30)
    # the victims wait again while the on-demand task holds their GPUs
    st = env.status(spot)
    check(st["preempted"] == 4 and st["waiting"] == 4 and st["running"] == 4,
          "spot group while the on-demand task runs: %s" % st)
    check(env.status("queues/qs")["preempted"] == 4, "queue: %s" % env.status("queues/qs"))
    open(od_go, "w").close()
    st = env.wait(od, ("Succeeded", "Failed"), timeout=15)
    # by the daemon's own records: it started within the grace of its creation
    # (3 s, plus a second: the times are whole seconds)
    took = rfc3339(st["started"]) - rfc3339(st["created"])
    check(took <= 3 + 1, "the on-demand group started %d s after it was made (grace 3 s)"
          % took)
    check(st["state"] == "Succeeded", "on-demand ended %s: %s" % (st["state"], st["message"]))
    ev = env.read(os.path.join(od, "events"))
    check(" Preempting group " in ev, "no Preempting event on the on-demand group:\n" + ev)

    open(spot_go, "w").close()
    st = env.wait(spot, ("Succeeded", "Failed"), timeout=30)
    check(st["state"] == "Succeeded", "spot ended %s: %s" % (st["state"], st["message"]))
    victims = []
    for i in range(8):
        ts = env.status(os.path.join(spot, "tasks/%d" % i))
        check(ts["retries_left"] == 2, "task %d used a retry: %s" % (i, ts))
        check(not pid_alive(pids[i]), "task %d's first process still runs" % i)
        if ts["attempt"] > 1:
            victims.append(i)
    check(len(victims) == 4, "%d tasks were preempted, want exactly 4 (4 GPUs asked)"
          % len(victims))
    for i in victims:
        node = os.path.join(spot, "tasks/%d/nodes/0" % i)
        prev = env.read(os.path.join(node, "logs.prev"))
        logs = env.read(os.path.join(node, "logs"))
        check("SIGTERM at " in prev, "task %d: SIGTERM did not reach it: %r" % (i, prev))
        saved = int(prev.split("SIGTERM at ")[1].split()[0])
        check(saved > 0 and ("resumed at %d attempt 2" % saved) in logs,
              "task %d did not resume from its checkpoint %d: %r" % (i, saved, logs))
        check("done 40 attempt 2" in logs, "task %d: %r" % (i, logs))
        nev = env.read(os.path.join(node, "events"))
        check(" Warning Preempted " in nev and " Preempting " in nev,
              "task %d node events:\n%s" % (i, nev))

    # billing: segments closed at the preemption, spot cheaper, every cost = its rows
    rows = env.ledger()
    for i in victims:
        mine = [r for r in rows if r["group"] == "spot" and int(r["task"]) == i]
        check(sorted(int(r["attempt"]) for r in mine) == [1, 2],
              "task %d ledger attempts %r" % (i, [r["attempt"] for r in mine]))
    spot_rate = {Decimal(r["rate_per_hour"]) / int(r["gpus"]) for r in rows if r["group"] == "spot"}
    od_rate = {Decimal(r["rate_per_hour"]) / int(r["gpus"]) for r in rows if r["group"] == "od"}
    check(spot_rate == {Decimal("2.88")} and od_rate == {Decimal("9.60")},
          "rates per GPU-hour: spot %r on-demand %r" % (spot_rate, od_rate))
    for i in range(8):
        t = os.path.join(spot, "tasks/%d" % i)
        mine = [r for r in rows if r["group"] == "spot" and int(r["task"]) == i]
        check(amount(env.read(os.path.join(t, "cost"))) == rows_sum(mine), "task %d cost" % i)
        check(amount(env.read(os.path.join(t, "nodes/0/cost"))) == rows_sum(mine),
              "task %d node cost" % i)
    for g, q in ((spot, "qs"), (od, "qo")):
        name = os.path.basename(g)
        mine = [r for r in rows if r["group"] == name]
        check(amount(env.read(os.path.join(g, "cost"))) == rows_sum(mine), "%s cost" % name)
        check(amount(env.read("queues/%s/cost" % q)) == rows_sum(mine), "queue %s cost" % q)
    check(amount(env.read("billing/cost")) == rows_sum(rows), "billing/cost")
    summary = env.read("billing/summary")
    check("spot" in summary and "on-demand" in summary and "A800" in summary,
          "summary:\n" + summary)


@case(timeout=60)
def test_no_preemption_when_free(env):
    """No preemption while capacity is free, and none for spot against spot."""
    env.use_cluster(A800 % {"grace": "3s"})
    spot = env.group('billing: spot\ngpu: A800\ngpus: 4\ncommand: ["/bin/sh", "-c", "sleep 20"]\n',
                     name="spot", queue="qs")
    env.wait(spot, "Running", timeout=10)
    od = env.group('gpu: A800\ngpus: 4\ncommand: ["/bin/sh", "-c", "sleep 1"]\n',
                   name="od", queue="qo")
    env.wait(od, ("Succeeded", "Failed"), timeout=15)
    # the machine is half spot, half free: a second spot group of 8 waits, preempting nothing
    other = env.group('billing: spot\ngpu: A800\ngpus: 8\ncommand: ["/bin/true"]\n',
                      name="other", queue="qs")
    time.sleep(1)
    check(env.status(other)["state"] == "Waiting", "other: %s" % env.status(other))
    check(env.status(spot)["state"] == "Running", "the first spot group was disturbed")
    ev = env.read(os.path.join(spot, "events"))
    check(" Preempt" not in ev, "spot was preempted although it need not be:\n" + ev)
    check(env.ctl(spot, "stop") == 0, "stop")
    st = env.wait(other, ("Succeeded", "Failed"), timeout=15)
    check(st["state"] == "Succeeded", "other: %s" % st)


@case(timeout=60)
def test_low_risk_window(env):
    """Spot tasks with a unit_runtime start only in a low-risk window.  The
    recorded history (written into the state before mounting) has the A800s
    fully used by on-demand work from 2 h to 12 h after this moment of the
    day, every day for three weeks: a 12 h task waits with the message, a
    10 m task starts at once."""
    env.use_cluster(A800 % {"grace": "3s"})
    env.stop()
    db = sqlite3.connect(os.path.join(env.state, "jobfs.db"))
    now = int(time.time() * 1000)
    day = 86400 * 1000
    for d in range(1, 22):
        db.execute("INSERT INTO demand(model, t_ms, gpus) VALUES('A800', ?, 8)",
                   (now - d * day + 2 * 3600 * 1000,))
        db.execute("INSERT INTO demand(model, t_ms, gpus) VALUES('A800', ?, 0)",
                   (now - d * day + 12 * 3600 * 1000,))
    db.commit()
    db.close()
    env.start()
    fc = env.read("cluster/forecast")
    check("A800" in fc, "forecast:\n" + fc)
    long = env.group('billing: spot\ngpu: A800\nunit_runtime: 12h\ncommand: ["/bin/true"]\n',
                     name="long", queue="qs")
    st = env.wait(long, pred=lambda s: s["message"] != "", timeout=5, what="a message")
    check(st["state"] == "Waiting" and st["message"] == "waiting for a low-risk window",
          "12h spot group: %s" % st)
    ev = env.read(os.path.join(long, "events"))
    check(" WaitingForWindow " in ev, "events:\n" + ev)
    short = env.group('billing: spot\ngpu: A800\nunit_runtime: 10m\ncommand: ["/bin/true"]\n',
                      name="short", queue="qs")
    st = env.wait(short, ("Succeeded", "Failed"), timeout=10)
    check(st["state"] == "Succeeded", "10m spot group: %s" % st)
    check(env.status(long)["state"] == "Waiting", "the 12h group started")
    # an on-demand group may not ask for a window
    env.mkdir("queues/qs/groups/bad")
    rc = env.write("queues/qs/groups/bad/spec.yaml",
                   'gpu: A800\nunit_runtime: 1h\ncommand: ["/bin/true"]\n')
    check(rc != 0, "on-demand with unit_runtime accepted")
    check("only spot" in env.status("queues/qs/groups/bad")["message"],
          "message: %s" % env.status("queues/qs/groups/bad")["message"])
    check(env.ctl(long, "stop") == 0, "stop")
