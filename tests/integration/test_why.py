"""Why it waits, when it starts, what it costs as it goes (reference 9.1, 9.3).

On a cluster of two 8-GPU H800 machines: a 2-node gang holds them all, and
waiting work behind it says why, with the numbers, where it stands and
when it will start; a task that runs to a known time lets the simulation
predict the next start to within 2 s; the costs of running work show their
rate, an estimate and what spot saved.  Tasks wait on files the test
creates, so nothing depends on how fast this machine is.
"""
import os
import time

from jfit import case, check, money, rfc3339

H800_PAIR = """\
name: h800-pair
currency: CNY
models:
  - name: H800
    vram: 80Gi
    cpu_per_gpu: 4
    memory_per_gpu: 32Gi
    price: {on-demand: "7.20", spot: "2.00"}
machines:
  - {name: h, model: H800, gpus: 8, count: 2}
"""


def waiter(go):
    """A command that runs until the file go exists."""
    return '[sh, -c, "while [ ! -e %s ]; do sleep 0.05; done"]' % go


@case(timeout=120)
def test_reasons_positions_behind_a_gang(env):
    env.use_cluster(H800_PAIR)
    go = os.path.join(env.tmp, "go")
    env.mkdir("queues/q")
    env.write("queues/q/spec.yaml", "capacity: 8\n")
    gang = env.group("command: %s\nnodes: 2\ngpu: H800\ngpus: 8\ntimeout: 60s\n" % waiter(go),
                     name="gang")
    # the gang's bound is its nodes' start + 60 s: each node's start is
    # recorded after the group is Running (placed), and a node's status
    # says when the step that recorded it ran, never before its start
    nodes = [gang + "/tasks/0/nodes/%d" % n for n in (0, 1)]
    started = max(rfc3339(env.wait(n, ["Running"])["started"]) for n in nodes)
    b = env.group("command: [true]\nnodes: 2\ngpu: H800\ngpus: 8\ntimeout: 20s\n", name="b")
    c = env.group("command: [true]\ngpu: H800\ngpus: 8\ncompletions: 3\nparallelism: 1\n"
                  "timeout: 10s\n", name="c")
    d = env.group("command: [true]\ngpu: H800\ngpus: 4\ntimeout: 30s\n", name="d")
    # a batch outside the queues counts every waiting group before it
    env.mkdir("tasks/solo")
    env.submit("tasks/solo", "command: [true]\ngpu: H800\ngpus: 1\ntimeout: 30s\n")

    def told(path, pos):
        st = env.status(path)
        return st if st.get("reason") and st.get("position") == pos else None

    sb = env.poll_until(lambda: told(b, 1), 10, "b to say why it waits")
    sc = env.poll_until(lambda: told(c, 2), 10, "c to say why it waits")
    sd = env.poll_until(lambda: told(d, 3), 10, "d to say why it waits")
    ss = env.poll_until(lambda: told("tasks/solo", 4), 10, "the batch to say where it stands")
    for name, st in (("b", sb), ("c", sc), ("d", sd), ("solo", ss)):
        check(st["state"] == "Waiting" and st["reason"] == "Resources",
              "%s: %s %s" % (name, st["state"], st["reason"]))
        check(st["eta_basis"] in ("reservation", "simulation") and st["eta"],
              "%s has an eta: %r %r" % (name, st["eta"], st["eta_basis"]))
    check(sb["message"] == "needs 2 nodes x 8 H800 GPUs; 0 of 16 free; held by "
          "queues/q/groups/gang (1 task, 16 GPUs); queue q holds 2 of 8 nodes",
          "b's message: %r" % sb["message"])
    check(sd["message"].startswith("needs 1 node x 4 H800 GPUs; 0 of 16 free"),
          "d's message: %r" % sd["message"])
    # the planner's shadow time: the gang's bound is its start + 60 s;
    # b reserves both machines from then, until + 20 s: c starts after b
    eb, ec = rfc3339(sb["eta"]), rfc3339(sc["eta"])
    check(abs(eb - (started + 60)) <= 1, "b's eta %s, the gang started %s" % (sb["eta"], started))
    check(ec >= eb + 20 - 1, "c's eta %s after b's %s + its 20 s" % (sc["eta"], sb["eta"]))
    # a waiting task says its group's reason and its own eta: the second
    # of c's tasks after the first
    t0 = env.status(os.path.join(c, "tasks/0"))
    t1 = env.status(os.path.join(c, "tasks/1"))
    check(t0["reason"] == "Resources" and t0["position"] == 2, "c's task 0: %r" % t0)
    if t1["eta"] and t0["eta"]:
        check(rfc3339(t1["eta"]) >= rfc3339(t0["eta"]), "task 1 before task 0: %r %r"
              % (t1["eta"], t0["eta"]))
    # the running gang: what it costs now, and when it ends at the latest
    sg = env.status(gang)
    check(sg["reason"] == "" and sg["position"] == "" and sg["eta"] == "", "gang: %r" % sg)
    check(money(sg["cost_rate"][:-2]) == (115200000, "CNY") and sg["cost_rate"].endswith("/h"),
          "2 x 8 H800 at 7.20: %r" % sg["cost_rate"])
    check(sg["eta_finish"] and rfc3339(sg["eta_finish"]) <= started + 60,
          "gang ends by its bound: %r" % sg["eta_finish"])
    # nothing finished: the estimate is its bound, 60 s of 115.20 CNY/h
    check(money(sg["cost_estimate"]) == (1920000, "CNY"), "estimate %r" % sg["cost_estimate"])
    check(money(sg["spot_savings"]) == (0, "CNY"), "no spot: %r" % sg["spot_savings"])
    # status.json carries the same, positions as numbers
    import json
    js = json.loads(env.read(os.path.join(b, "status.json")))
    check(js["position"] == 1 and js["reason"] == "Resources", "status.json: %r" % js)
    # the gang ends: b starts no later than its eta, and says nothing more
    open(go, "w").close()
    env.wait(b, ["Running", "Succeeded"])
    st = env.status(b)
    check(rfc3339(st["started"]) <= eb, "b started %s, its eta %s" % (st["started"], sb["eta"]))
    check(st["reason"] == "" and st["position"] == "", "b after its start: %r" % st)


@case(timeout=120)
def test_capacity_parallelism_reasons(env):
    env.use_cluster(H800_PAIR)
    go = os.path.join(env.tmp, "go")
    env.mkdir("queues/small")
    env.write("queues/small/spec.yaml", "capacity: 1\n")
    a = env.group("command: %s\ngpu: H800\ngpus: 1\ntimeout: 60s\n" % waiter(go), name="a",
                  queue="small")
    env.wait(a, ["Running"])
    b = env.group("command: [true]\ngpu: H800\ngpus: 1\ntimeout: 60s\n", name="b", queue="small")
    st = env.poll_until(lambda: env.status(b) if env.status(b)["reason"] else None, 10,
                        "b's reason")
    check(st["reason"] == "QueueCapacity", "b waits for the queue: %r" % st["reason"])
    check("queue small holds 1 of 1 node" in st["message"], "b's message: %r" % st["message"])
    # parallelism 1: the running group's other tasks wait for it
    p = env.group("command: %s\ngpu: H800\ngpus: 1\ncompletions: 3\nparallelism: 1\n"
                  "timeout: 60s\n" % waiter(go), name="p")
    env.wait(p, ["Running"])
    st = env.poll_until(lambda: env.status(p) if env.status(p)["reason"] else None, 10,
                        "p's reason")
    check(st["state"] == "Running" and st["reason"] == "Parallelism",
          "p: %s %s" % (st["state"], st["reason"]))
    check(st["message"] == "" or "parallelism" in st["message"], "p's message %r" % st["message"])
    t1 = env.status(os.path.join(p, "tasks/1"))
    check(t1["reason"] == "Parallelism" and t1["position"] == 1, "p's task 1: %r" % t1)
    # paused work says so, and a group that can never run says why
    env.ctl(b, "pause")
    never = env.group("command: [true]\nnodes: 3\ngpu: H800\ngpus: 8\n", name="never")
    st = env.poll_until(lambda: env.status(never) if env.status(never)["reason"] else None, 10,
                        "never's reason")
    check(st["reason"] == "Unschedulable" and "cannot run" in st["message"], "never: %r" % st)
    open(go, "w").close()
    env.wait(p, ["Succeeded"], timeout=30)


@case(timeout=120)
def test_eta_within_two_seconds(env):
    """Tasks that run exactly 4 s: once two have finished, the simulation
    predicts the next group's start from them, within 2 s of the start."""
    env.use_cluster(H800_PAIR)
    a = env.group("command: [sleep, '4']\ngpu: H800\ngpus: 8\ncompletions: 4\nparallelism: 2\n"
                  "timeout: 60s\n", name="a")
    env.poll_until(lambda: int(env.status(a)["succeeded"]) >= 2, 30, "a's first two tasks")
    b = env.group("command: [true]\ngpu: H800\ngpus: 8\ntimeout: 60s\n", name="b")
    # the reservation says 60 s (a's bound); the simulation knows better
    st = env.poll_until(lambda: (lambda s: s if s["eta_basis"] == "simulation" else None)(
        env.status(b)), 15, "b's simulated eta")
    eta = rfc3339(st["eta"])
    sa = env.status(a)
    check(sa["eta_finish_basis"] in ("simulation", "reservation") and sa["eta_finish"],
          "a's eta_finish: %r" % sa)
    env.wait(b, ["Running", "Succeeded"], timeout=30)
    real = rfc3339(env.status(b)["started"])
    check(abs(real - eta) <= 2, "b's eta %s, its start %s" % (st["eta"], env.status(b)["started"]))
    # what finished tasks cost predicts the rest: 4 tasks of the first two's
    env.wait(a, ["Succeeded"], timeout=30)


@case(timeout=90)
def test_spot_savings_and_estimate(env):
    env.use_cluster(H800_PAIR)
    s = env.group("command: [sleep, '1']\ngpu: H800\ngpus: 1\ncompletions: 4\nparallelism: 2\n"
                  "timeout: 30s\nbilling: spot\n", name="s")
    env.wait(s, ["Succeeded"], timeout=30)
    st = env.status(s)
    cost, _ = money(st["cost"])
    saved, _ = money(st["spot_savings"])
    est, _ = money(st["cost_estimate"])
    # every segment's seconds at the on-demand 7.20 per GPU-hour, less what
    # they cost at 2.00 (each rounded half up to the micro-unit, as billed)
    rows = [r for r in env.ledger() if r["group"] == "s"]
    od = sum((int(r["seconds"]) * 7200000 * int(r["gpus"]) + 1800) // 3600 for r in rows)
    check(cost > 0 and len(rows) == 4 and saved == od - cost,
          "spot cost %d saved %d, on-demand %d (%d rows)" % (cost, saved, od, len(rows)))
    check(est == cost, "an ended group's estimate is its cost: %d %d" % (est, cost))
    check(money(st["cost_rate"][:-2])[0] == 0, "nothing runs: %r" % st["cost_rate"])
    q = env.status("queues/q")
    check(money(q["spot_savings"])[0] == saved and money(q["cost_estimate"])[0] == cost,
          "the queue's: %r" % q)
