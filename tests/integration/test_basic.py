"""The product demo, parallelism, retries: end-to-end runs of real processes."""
import json
import os

from jfit import case, check, money

DEMO = """\
gpu: "4090"
count: 3
command: ["/bin/sh", "-c"]
args: ["echo hello from $JOB_NAME index $JOB_COMPLETION_INDEX; sleep $RUN_SECONDS; exit $EXIT_CODE"]
env:
  RUN_SECONDS: "1"
  EXIT_CODE: "0"
"""


@case(timeout=60)
def test_product_demo(env):
    b = "tasks/best-practice-batch-demo"
    env.mkdir(b)
    st = env.status(b)
    check(st["state"] == "Draft", "a fresh batch should be Draft, is %s" % st["state"])
    env.submit(b, DEMO)
    kids = sorted(n for n in os.listdir(env.p(b)) if os.path.isdir(env.p(b, n)))
    want = ["%d-best-practice-batch-demo" % i for i in (1, 2, 3)]
    check(kids == want, "children %r, want %r" % (kids, want))
    env.wait(b, "Succeeded", timeout=30)
    total = 0
    for k in kids:
        t = os.path.join(b, k)
        st = env.status(t)
        check(st["state"] == "Succeeded", "%s is %s" % (k, st["state"]))
        logs = env.read(os.path.join(t, "nodes/0/logs"))
        check("hello from best-practice-batch-demo" in logs, "%s logs: %r" % (k, logs))
        node = env.status(os.path.join(t, "nodes/0"))
        check(node["state"] == "Succeeded" and int(node["exit_code"]) == 0,
              "%s node: %s" % (k, node))
        # one rule for names: a node's is its task's followed by /nodes/<n>;
        # it exists, and says so in `created`, from the submission on
        check(node["name"] == st["name"] + "/nodes/0" and node["created"] == st["created"]
              and node["created"], "%s node name %r created %r, task %r %r"
              % (k, node["name"], node.get("created"), st["name"], st["created"]))
        c, cur = money(env.read(os.path.join(t, "cost")))
        check(c > 0, "%s cost is %r, want > 0" % (k, env.read(os.path.join(t, "cost"))))
        check(money(st["cost"])[0] == c, "%s: status cost %s != cost file" % (k, st["cost"]))
        total += c
    bc, _ = money(env.read(os.path.join(b, "cost")))
    check(bc == total, "batch cost %d != sum of children %d" % (bc, total))
    # ledger agrees to the micro-unit
    rows = [r for r in env.ledger() if r["group"] == "best-practice-batch-demo"]
    check(len(rows) == 3, "ledger rows for the batch: %d, want 3" % len(rows))
    lsum = sum(money(r["amount"] + " CNY")[0] for r in rows)
    check(lsum == bc, "ledger sum %d != batch cost %d" % (lsum, bc))
    # status.json: Python's json and jq
    js = json.loads(env.read(os.path.join(b, "status.json")))
    check(js["state"] == "Succeeded" and js["progress"] == "3/3", "status.json: %s" % js)
    r = env.sh("jq -r .state %s/status.json" % b)
    check(r.stdout == "Succeeded\n", "jq -r .state gave %r" % r.stdout)
    r = env.sh("jq -e '.succeeded == 3 and .count == 3' %s/status.json" % b)
    # status parses as YAML (when PyYAML is here) and matches status.json
    text = env.read(os.path.join(b, "status"))
    check(text.endswith("\n"), "status does not end with a newline")
    try:
        import yaml  # noqa: F401 - optional
    except ImportError:
        yaml = None
    if yaml is not None:
        y = yaml.safe_load(text)
        check(isinstance(y, dict), "status is not a YAML mapping: %r" % text[:200])
        for k in ("state", "name", "progress", "cost", "created", "succeeded"):
            check(y.get(k) == js.get(k), "status %s=%r but status.json %s=%r"
                  % (k, y.get(k), k, js.get(k)))
    for k in ("state", "name", "message", "created", "started", "finished", "cost",
              "duration", "node_seconds", "completions", "parallelism", "succeeded",
              "failed", "running", "waiting", "preempted", "progress"):
        check(k in js, "status.json lacks %r" % k)
    # the cost for programs: integer micro-units and the currency, the same
    # amount as the string
    amount, cur = money(js["cost"])
    check(js.get("cost_micro") == amount and isinstance(js["cost_micro"], int)
          and js.get("currency") == cur,
          "cost %r but cost_micro %r currency %r" % (js["cost"], js.get("cost_micro"),
                                                    js.get("currency")))


@case(timeout=90)
def test_parallelism(env):
    n, par = (100, 10)
    rec = os.path.join(env.work, "rec")
    os.makedirs(rec)
    os.chmod(rec, 0o777)
    spec = """\
completions: %d
parallelism: %d
command: ["/bin/sh", "-c"]
args: ["echo start $(date +%%s.%%N) >> $REC/$JOB_TASK_INDEX; sleep 0.5; echo end $(date +%%s.%%N) >> $REC/$JOB_TASK_INDEX"]
env:
  REC: "%s"
""" % (n, par, rec)
    g = env.group(spec)
    seen_running = 0

    def done(st):
        nonlocal seen_running
        check(st["running"] <= par, "status shows %d running > parallelism %d"
              % (st["running"], par))
        seen_running = max(seen_running, st["running"])
        return st["state"] in ("Succeeded", "Failed", "Stopped")

    st = env.wait(g, pred=done, timeout=70, what="the group to finish")
    check(st["state"] == "Succeeded", "group ended %s: %s" % (st["state"], st["message"]))
    check(st["progress"] == "%d/%d" % (n, n), "progress %s" % st["progress"])
    check(st["succeeded"] == n, "succeeded %s" % st["succeeded"])
    # what the processes themselves saw
    marks = []
    files = os.listdir(rec)
    check(len(files) == n, "%d tasks recorded, want %d" % (len(files), n))
    for fn in files:
        with open(os.path.join(rec, fn)) as f:
            lines = f.read().split()
        check(len(lines) == 4, "task %s ran %d times: %r" % (fn, len(lines) // 2, lines))
        marks.append((float(lines[1]), 1))
        marks.append((float(lines[3]), -1))
    marks.sort(key=lambda m: (m[0], m[1]))   # an end before a start at the same instant
    cur = peak = 0
    for _, d in marks:
        cur += d
        peak = max(peak, cur)
    check(peak <= par, "%d ran at once, parallelism is %d" % (peak, par))
    check(peak == par or seen_running == par,
          "at most %d ran at once (status showed at most %d running); parallelism %d was "
          "never reached" % (peak, seen_running, par))
    tasks = os.listdir(env.p(g, "tasks"))
    check(len(tasks) == n, "tasks/ lists %d entries, want %d" % (len(tasks), n))


@case(timeout=300, long=True)
def test_parallelism_long(env):
    """5000 tasks, 100 at once: scheduling churn and a long listing."""
    n = 5000
    spec = """\
completions: %d
parallelism: 100
command: ["/bin/true"]
""" % n

    def watch(s):
        check(s["running"] <= 100, "%d running > parallelism 100" % s["running"])
        return s["state"] in ("Succeeded", "Failed")

    g = env.group(spec)
    st = env.wait(g, pred=watch, timeout=280)
    check(st["state"] == "Succeeded" and st["progress"] == "%d/%d" % (n, n), "group: %s" % st)
    check(len(os.listdir(env.p(g, "tasks"))) == n, "tasks/ listing")
    r = env.sh("ls %s/tasks | wc -l" % g)
    check(r.stdout.strip() == str(n), "ls | wc -l = %r" % r.stdout)
    rows = [r for r in env.ledger() if r["group"] == "g"]
    check(len(rows) == n, "%d ledger rows, want %d" % (len(rows), n))


@case(timeout=60)
def test_retries(env):
    spec = """\
retries: 2
command: ["/bin/sh", "-c"]
args: ["echo attempt $JOB_ATTEMPT; echo oops $JOB_ATTEMPT >&2; exit $EXIT_CODE"]
env:
  EXIT_CODE: "1"
"""
    g = env.group(spec)
    st = env.wait(g, ("Failed", "Succeeded"), timeout=40)
    check(st["state"] == "Failed", "group ended %s" % st["state"])
    t = os.path.join(g, "tasks/0")
    ts = env.status(t)
    check(ts["state"] == "Failed", "task is %s" % ts["state"])
    check(int(ts["attempt"]) == 3, "task attempt %s, want 3" % ts["attempt"])
    check(int(ts["retries_left"]) == 0, "retries_left %s" % ts["retries_left"])
    node = os.path.join(t, "nodes/0")
    ns = env.status(node)
    check(int(ns["exit_code"]) == 1, "node exit_code %s" % ns["exit_code"])
    logs = env.read(os.path.join(node, "logs"))
    prev = env.read(os.path.join(node, "logs.prev"))
    out = env.read(os.path.join(node, "stdout"))
    err = env.read(os.path.join(node, "stderr"))
    check("attempt 3" in logs and "oops 3" in logs, "logs of the last attempt: %r" % logs)
    check("attempt 2" not in logs, "logs holds an older attempt: %r" % logs)
    check("attempt 2" in prev and "attempt 3" not in prev, "logs.prev: %r" % prev)
    check(out == "attempt 3\n", "stdout: %r" % out)
    check(err == "oops 3\n", "stderr: %r" % err)
    ev = env.read(os.path.join(g, "events"))
    reasons = [l.split()[2] for l in ev.splitlines() if len(l.split()) > 2]
    check("BackOff" in reasons, "no BackOff event:\n%s" % ev)
    check("Failed" in reasons, "no Failed event:\n%s" % ev)
    check(reasons.count("Started") == 3, "%d Started events, want 3:\n%s"
          % (reasons.count("Started"), ev))
    tev = env.read(os.path.join(t, "events"))
    check(" BackOff " in tev and " Failed " in tev, "task events:\n%s" % tev)
    for line in ev.splitlines():
        parts = line.split(" ", 4)
        check(len(parts) >= 4 and parts[1] in ("Normal", "Warning"),
              "event line not TIME TYPE REASON OBJECT MESSAGE: %r" % line)
    rows = [r for r in env.ledger() if r["group"] == "g"]
    check(sorted(int(r["attempt"]) for r in rows) == [1, 2, 3],
          "ledger attempts %r, want one row each for 1,2,3" % [r["attempt"] for r in rows])


@case(timeout=60)
def test_env_and_checkpoint(env):
    """The environment reference 3 promises reaches the process."""
    spec = """\
completions: 2
gpu: "4090"
gpus: 2
command: ["/bin/sh", "-c"]
args: ["env | grep -E '^(JOB_|CUDA_VISIBLE_DEVICES|MYVAR)' | sort; test -d \\"$JOB_CHECKPOINT_DIR\\" && echo ckpt-ok"]
env:
  MYVAR: "x y"
"""
    g = env.group(spec, name="envg")
    env.wait(g, "Succeeded", timeout=30)
    for i in (0, 1):
        logs = env.read(os.path.join(g, "tasks/%d/nodes/0/logs" % i))
        kv = dict(l.split("=", 1) for l in logs.splitlines() if "=" in l)
        check(kv.get("JOB_TASK_INDEX") == str(i), "JOB_TASK_INDEX: %s" % logs)
        check(kv.get("JOB_COMPLETION_INDEX") == str(i), "JOB_COMPLETION_INDEX: %s" % logs)
        check(kv.get("JOB_TASK_COUNT") == "2", "JOB_TASK_COUNT: %s" % logs)
        check(kv.get("JOB_NODE_INDEX") == "0" and kv.get("JOB_NODE_COUNT") == "1",
              "node index/count: %s" % logs)
        check(kv.get("JOB_QUEUE") == "q" and kv.get("JOB_GROUP") == "envg",
              "JOB_QUEUE/JOB_GROUP: %s" % logs)
        check(kv.get("JOB_NAME") == "envg", "JOB_NAME: %s" % logs)
        check(kv.get("JOB_ATTEMPT") == "1", "JOB_ATTEMPT: %s" % logs)
        check(kv.get("MYVAR") == "x y", "spec env: %s" % logs)
        cuda = kv.get("CUDA_VISIBLE_DEVICES", "")
        check(len(cuda.split(",")) == 2, "CUDA_VISIBLE_DEVICES for 2 GPUs: %r" % cuda)
        check("ckpt-ok" in logs, "JOB_CHECKPOINT_DIR missing: %s" % logs)
