"""More behaviour end to end: deadlines, start failures, gangs, containers,
spot billing, the cluster and billing files, errors of the tree, readers in
parallel, the group failure budget, queue order."""
import csv
import errno
import io
import os
import re
import threading
import time

from jfit import TestFailure, case, check, money, parse_status, pid_alive


@case(timeout=60)
def test_deadline_exceeded(env):
    g = env.group('timeout: 1s\nretries: 0\ncommand: ["/bin/sh", "-c", "echo go; sleep 30"]\n')
    node = os.path.join(g, "tasks/0/nodes/0")
    # Running lasts its 1 s timeout: a slow look may find it ended (its pid
    # stays in its status)
    env.wait(node, ("Running", "Failed"), timeout=10)
    pid = env.status(node)["pid"]
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Failed", "a timed-out task ended %s" % st["state"])
    # killed at its timeout, by its own billed segment: 1 s, plus at most the
    # kill grace (10 s) had it ignored SIGTERM - far from the 30 s it asked
    rows = [r for r in env.ledger() if r["group"] == "g"]
    check(len(rows) == 1 and 1 <= int(rows[0]["seconds"]) <= 11,
          "the 1 s timeout: billed %r" % [r["seconds"] for r in rows])
    ev = env.read(os.path.join(g, "events"))
    check(" DeadlineExceeded " in ev, "no DeadlineExceeded event:\n%s" % ev)
    env.poll_until(lambda: not pid_alive(pid), 5, "the timed-out process to be gone")
    check(env.read(os.path.join(node, "logs")) == "go\n", "logs of the timed-out node")


@case(timeout=60)
def test_command_not_found(env):
    g = env.group('retries: 1\ncommand: ["/nonexistent/jobfs-it-cmd", "x"]\n')
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Failed", "ended %s" % st["state"])
    ns = env.status(os.path.join(g, "tasks/0/nodes/0"))
    check(ns["exit_code"] == 127, "exit code %r, want 127" % ns["exit_code"])
    check("/nonexistent/jobfs-it-cmd" in ns["message"], "node message %r" % ns["message"])
    ts = env.status(os.path.join(g, "tasks/0"))
    check(ts["attempt"] == 2, "attempts %s, want 2 (retries: 1)" % ts["attempt"])
    ev = env.read(os.path.join(g, "events"))
    check("/nonexistent/jobfs-it-cmd" in ev, "events do not name the command:\n%s" % ev)


@case(timeout=60)
def test_command_not_found_said(env):
    """A command that cannot start says why where a user looks: the node's
    stderr and logs (a line of the supervisor's), the task's and the
    group's status message, the BackOff event."""
    g = env.group('retries: 1\ncommand: ["nosuchcmd"]\n')
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Failed", "ended %s" % st["state"])
    why = "exec nosuchcmd: No such file or directory"
    node = os.path.join(g, "tasks/0/nodes/0")
    for f in ("stderr", "logs", "logs.prev"):  # logs.prev: the first attempt's
        text = env.read(os.path.join(node, f))
        check(text == "jobfs: %s\n" % why, "node %s: %r" % (f, text))
    check(env.read(os.path.join(node, "stdout")) == "", "node stdout not empty")
    ts = env.status(os.path.join(g, "tasks/0"))
    check(ts["state"] == "Failed" and ts["attempt"] == 2, "task: %s" % ts)
    check(ts["message"] == "RetriesExhausted: attempt 2 failed with exit code 127: " + why,
          "task message %r" % ts["message"])
    check(st["message"] == "FailedIndexes: 1 of 1 tasks failed; task 0: %s (exit 127)" % why,
          "group message %r" % st["message"])
    ev = env.read(os.path.join(g, "events"))
    check("attempt 1 failed (exit code 127: %s); retrying" % why in ev,
          "the BackOff event does not say why:\n%s" % ev)
    check(not any(c < " " and c != "\n" for c in st["message"] + ts["message"]),
          "a control byte in a message")
    # a Kubernetes Job: its backoffLimit fails the group, whose message names
    # the task; its image (busybox, from the internet) is only named: the
    # command runs on the host (--runtime host)
    env.use_runtime("host")
    k = env.group("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: k\nspec:\n"
                  "  backoffLimit: 0\n  template:\n    spec:\n      containers:\n"
                  "      - name: c\n        image: busybox\n        command: [\"nosuchcmd\"]\n"
                  "      restartPolicy: Never\n", name="k")
    st = env.wait(k, ("Succeeded", "Failed"), timeout=20)
    ts = env.status(os.path.join(k, "tasks/0"))
    check(st["state"] == "Failed" and ts["state"] == "Failed", "job %s, task %s" % (st, ts))
    check(ts["message"] == "BackoffLimitExceeded: attempt 1 failed with exit code 127: " + why,
          "job task message %r" % ts["message"])
    check(st["message"] == "BackoffLimitExceeded: task 0 attempt 1 failed with exit code 127: "
          + why, "job message %r" % st["message"])
    logs = env.read(os.path.join(k, "tasks/0/nodes/0/logs"))
    check(logs == "jobfs: %s\n" % why, "job logs %r" % logs)  # one container: no "[c] "


@case(timeout=60)
def test_gang_two_nodes(env):
    g = env.group("""\
nodes: 2
gpu: "H800"
gpus: 8
command: ["/bin/sh", "-c", "env | grep -E '^(JOB_|CUDA_VISIBLE_DEVICES)' | sort"]
""")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "gang ended %s: %s" % (st["state"], st["message"]))
    envs, machines = [], []
    for n in (0, 1):
        node = os.path.join(g, "tasks/0/nodes/%d" % n)
        logs = env.read(os.path.join(node, "logs"))
        envs.append(dict(l.split("=", 1) for l in logs.splitlines() if "=" in l))
        machines.append(env.status(node)["machine"])
    check(machines[0] != machines[1], "both nodes on %s" % machines[0])
    for n, e in enumerate(envs):
        check(e.get("JOB_NODE_INDEX") == str(n) and e.get("JOB_NODE_COUNT") == "2",
              "node %d: %r" % (n, e))
        check(e.get("JOB_COMPLETION_INDEX") == str(n),
              "multi-node JOB_COMPLETION_INDEX should be the node rank: %r" % e)
        check(len(e.get("CUDA_VISIBLE_DEVICES", "").split(",")) == 8, "GPUs of node %d" % n)
    check(envs[0].get("JOB_MASTER_ADDR") and
          envs[0].get("JOB_MASTER_ADDR") == envs[1].get("JOB_MASTER_ADDR") and
          envs[0].get("JOB_MASTER_PORT") == envs[1].get("JOB_MASTER_PORT"),
          "master addr/port differ: %r" % envs)
    rows = [r for r in env.ledger() if r["group"] == "g"]
    check(sorted(int(r["node"]) for r in rows) == [0, 1], "ledger rows per node %r" % rows)


@case(timeout=60)
def test_gang_all_or_nothing(env):
    """A 2-node gang needs both H800 machines: while one is busy, no node of
    it starts (nothing held while waiting); when freed, both start."""
    blocker = env.group('gpu: "H800"\ngpus: 8\ncommand: ["/bin/sh", "-c", "sleep 30"]\n',
                        name="blocker", queue="qa")
    env.wait(blocker, "Running", timeout=10)
    gang = env.group('nodes: 2\ngpu: "H800"\ngpus: 8\ncommand: ["/bin/sh", "-c", "sleep 0.5"]\n',
                     name="gang", queue="qb")
    t_end = time.monotonic() + 1.0
    while time.monotonic() < t_end:
        st = env.status(gang)
        check(st["running"] == 0 and st["state"] in ("Waiting",),
              "the gang started (or held) part of itself while it cannot fit: %s" % st)
        for n in (0, 1):
            ns = env.status(os.path.join(gang, "tasks/0/nodes/%d" % n))
            check(ns["state"] == "Waiting", "gang node %d is %s while waiting" % (n, ns["state"]))
        time.sleep(0.1)
    free = [parse_status(env.read("cluster/machines/%s/status" % m)) for m in ("h800-0", "h800-1")]
    check(sorted(int(f["gpus_free"]) for f in free) == [0, 8],
          "H800 GPUs free while one machine is busy: %r" % [f["gpus_free"] for f in free])
    check(env.ctl(blocker, "stop") == 0, "stop blocker")
    st = env.wait(gang, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "gang ended %s" % st["state"])


@case(timeout=60)
def test_multi_container_logs(env):
    g = env.group("""\
gpu: "4090"
containers:
  - name: main
    command: ["/bin/sh", "-c", "echo from main"]
  - name: side
    command: ["/bin/sh", "-c", "echo from side; echo side err >&2"]
""")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "ended %s: %s" % (st["state"], st["message"]))
    logs = env.read(os.path.join(g, "tasks/0/nodes/0/logs")).splitlines()
    check(sorted(logs) == ["[main] from main", "[side] from side", "[side] side err"],
          "multi-container logs: %r" % logs)


@case(timeout=60)
def test_multi_container_allocation(env):
    """reference 5.3: the product document's example must come out exactly."""
    g = env.group("""\
gpu: "4090"
gpus: 1
containers:
  - name: main
    command: ["/bin/sh", "-c", "echo gpu=$CUDA_VISIBLE_DEVICES"]
    resources: {limits: {cpu: 14000m, memory: 51200Mi}}
  - name: side
    command: ["/bin/sh", "-c", "echo gpu=$CUDA_VISIBLE_DEVICES"]
    resources: {limits: {cpu: 9333m, memory: 4200Mi}}
""")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "ended %s: %s" % (st["state"], st["message"]))
    node = os.path.join(g, "tasks/0/nodes/0")
    logs = env.read(os.path.join(node, "logs")).splitlines()
    alloc = env.read(os.path.join(node, "allocation"))
    problems = []
    if "[main] gpu=0" not in logs:
        problems.append("the first container did not get the GPU (%r)" % logs)
    if "[side] gpu=" not in logs:
        problems.append("with one GPU only the first container gets it, side saw %r"
                        % [l for l in logs if l.startswith("[side]")])
    # per container: 12 and 8 cores, about 93G and 8G
    blocks = alloc.split("- name: ")[1:]
    if len(blocks) != 2:
        problems.append("allocation lists %d containers" % len(blocks))
    else:
        main, side = blocks
        if not ('"12"' in main or "cpu: 12" in main):
            problems.append("allocation of main lacks its 12 cores")
        if not ('"8"' in side or "cpu: 8" in side):
            problems.append("allocation of side lacks its 8 cores")
        if not ("93" in main and "8G" in side):
            problems.append("allocation lacks the memory split (about 93G / 8G)")
    check(not problems, "reference 5.3 per-container split not honoured: %s; allocation:\n%s"
          % ("; ".join(problems), alloc))


@case(timeout=60)
def test_spot_billing(env):
    g = env.group('billing: spot\ngpu: "4090"\ncommand: ["/bin/sh", "-c", "sleep 1"]\n', name="sp")
    od = env.group('gpu: "4090"\ncommand: ["/bin/sh", "-c", "sleep 1"]\n', name="od")
    env.wait(g, "Succeeded", timeout=20)
    env.wait(od, "Succeeded", timeout=20)
    rows = {r["group"]: r for r in env.ledger()}
    check(rows["sp"]["billing"] == "spot" and rows["od"]["billing"] == "on-demand",
          "billing columns %r / %r" % (rows["sp"]["billing"], rows["od"]["billing"]))
    gpus = env.read("cluster/gpus").splitlines()
    hdr = gpus[0].split()
    line = [l.split() for l in gpus[1:] if l.split() and l.split()[0] == "4090"][0]
    price = dict(zip(hdr, line))
    check(rows["sp"]["rate_per_hour"] == price.get("spot"),
          "spot rate %s, cluster/gpus says %s" % (rows["sp"]["rate_per_hour"], price.get("spot")))
    check(rows["od"]["rate_per_hour"] == price.get("on-demand"),
          "on-demand rate %s vs %s" % (rows["od"]["rate_per_hour"], price.get("on-demand")))
    for r in rows.values():
        secs = int(r["seconds"])
        rate_micro = money(r["rate_per_hour"] + " CNY")[0] * int(r["gpus"] or 1)
        want = secs * rate_micro // 3600
        got = money(r["amount"] + " CNY")[0]
        check(abs(got - want) <= 1, "row %s: amount %s for %d s at %s/h x %s GPUs"
              % (r["segment_id"], r["amount"], secs, r["rate_per_hour"], r["gpus"]))
    check(money(env.read(g + "/cost"))[0] < money(env.read(od + "/cost"))[0] or
          int(rows["sp"]["seconds"]) < int(rows["od"]["seconds"]), "spot is not cheaper")


@case(timeout=60)
def test_cluster_files(env):
    gpus = env.read("cluster/gpus")
    models = [l.split()[0] for l in gpus.splitlines()[1:] if l.strip()]
    check(sorted(models) == ["4090", "A800", "H800", "L40S"], "models %r" % models)
    machines = sorted(os.listdir(env.p("cluster/machines")))
    by_model = {}
    for m in machines:
        st = parse_status(env.read("cluster/machines/%s/status" % m))
        by_model.setdefault(st["model"], []).append(int(st["gpus"]))
    check(by_model == {"4090": [8] * 4, "H800": [8] * 2, "L40S": [8], "A800": [8]},
          "built-in cluster: %r" % by_model)
    fc = env.read("cluster/forecast")
    check(fc.endswith("\n"), "forecast")
    rows = [l for l in fc.splitlines() if l and not l.startswith("#")]
    # a header, then the next 24 hours of each of the 4 models
    check(len(rows) == 1 + 4 * 24, "forecast has %d rows:\n%s" % (len(rows), fc[:600]))
    check(sorted({r.split()[0] for r in rows[1:]}) == ["4090", "A800", "H800", "L40S"],
          "forecast models: %r" % rows[:3])
    # a running node shows on its machine
    g = env.group('gpu: "A800"\ngpus: 4\ncommand: ["/bin/sh", "-c", "sleep 30"]\n')
    env.wait(g, "Running", timeout=10)
    st = parse_status(env.read("cluster/machines/a800-0/status"))
    check(int(st["gpus_free"]) == 4 and int(st["running_nodes"]) == 1, "a800-0 while busy: %r" % st)
    check(env.ctl(g, "stop") == 0, "stop")
    env.wait(os.path.join(g, "tasks/0"), "Stopped", timeout=10)
    env.poll_until(lambda: int(parse_status(env.read("cluster/machines/a800-0/status"))["gpus_free"]) == 8,
                   5, "the GPUs to be free again")


@case(timeout=60)
def test_billing_summary_matches_ledger(env):
    env.group('completions: 3\ngpu: "4090"\ncommand: ["/bin/sh", "-c", "sleep 1"]\n', name="a")
    b = "tasks/b"
    env.mkdir(b)
    env.submit(b, 'count: 2\ngpu: "L40S"\nbilling: spot\ncommand: ["/bin/sh", "-c", "sleep 1"]\n')
    env.wait("queues/q/groups/a", "Succeeded", timeout=20)
    env.wait(b, "Succeeded", timeout=20)
    text = env.read("billing/ledger.csv")
    check(text.splitlines()[0] == "segment_id,queue,group,task,node,attempt,billing,gpu,gpus,"
          "start,end,seconds,rate_per_hour,amount", "ledger header %r" % text.splitlines()[0])
    rows = list(csv.DictReader(io.StringIO(text)))
    check(len(rows) == 5, "%d ledger rows, want 5" % len(rows))
    check(len({r["segment_id"] for r in rows}) == 5, "segment ids not unique")
    total = sum(money(r["amount"] + " CNY")[0] for r in rows)
    summary = env.read("billing/summary")
    first = summary.splitlines()[0]
    check(money(first.split(":", 1)[1].split(",")[0])[0] == total,
          "summary total %r != ledger sum %d micro" % (first, total))
    qa = money(env.read("queues/q/groups/a/cost"))[0]
    bb = money(env.read(b + "/cost"))[0]
    check(qa + bb == total, "group costs %d + %d != ledger %d" % (qa, bb, total))
    check(money(env.read("queues/q/cost"))[0] == qa, "queue cost != its group's")


@case(timeout=60)
def test_tree_errors(env):
    env.mkdir("tasks/t")

    def expect(fn, codes, what):
        try:
            fn()
        except OSError as e:
            check(e.errno in codes, "%s: %s, want %s" % (what, errno.errorcode.get(e.errno),
                                                         [errno.errorcode[c] for c in codes]))
        else:
            raise TestFailure("%s succeeded" % what)

    for f in ("status", "status.json", "cost", "events", "watch"):
        expect(lambda: open(env.p("tasks/t", f), "w"), (errno.EACCES, errno.EPERM, errno.EROFS),
               "open %s for writing" % f)
    expect(lambda: open(env.p("README"), "a"), (errno.EACCES, errno.EPERM, errno.EROFS),
           "append to README")
    expect(lambda: open(env.p("tasks/nope/status")), (errno.ENOENT,), "open a missing object")
    expect(lambda: open(env.p("tasks/t/nope")), (errno.ENOENT,), "open a missing file")
    expect(lambda: os.listdir(env.p("tasks/t/1-t")), (errno.ENOENT,), "list a task of a draft")
    expect(lambda: os.truncate(env.p("tasks/t/status"), 0), (errno.EACCES, errno.EPERM, errno.EROFS),
           "truncate status")
    expect(lambda: os.symlink("/tmp", env.p("tasks/t/link")),
           (errno.EACCES, errno.EPERM, errno.ENOSYS, errno.EROFS), "symlink")
    expect(lambda: os.link(env.p("tasks/t/status"), env.p("tasks/t/hard")),
           (errno.EACCES, errno.EPERM, errno.ENOSYS, errno.EROFS), "hard link")
    rc = env.ctl("tasks/t", "stop")
    check(rc == errno.EBUSY, "ctl stop on a draft: %s, want EBUSY" % errno.errorcode.get(rc, rc))
    # a spec of a queue group is not the place for `count`
    env.queue()
    env.mkdir("queues/q/groups/g")
    rc = env.write("queues/q/groups/g/spec.yaml", 'count: 3\ncommand: ["/bin/true"]\n')
    check(rc == errno.EINVAL, "count in a queue group: %s" % errno.errorcode.get(rc, rc))
    check("jobfs" in env.read("README"), "README after errors")


@case(timeout=90)
def test_parallel_readers(env):
    """Eight threads read status, events, logs and the ledger while 30 tasks
    run: every read is whole and the daemon keeps up."""
    g = env.group("""\
completions: 30
parallelism: 6
command: ["/bin/sh", "-c", "for i in 1 2 3; do echo $JOB_TASK_INDEX $i; sleep 0.05; done"]
""")
    stop = threading.Event()
    errors = []
    counts = [0] * 8

    def reader(k):
        import json
        files = ["status.json", "events", "cost", "status", "tasks/%d/nodes/0/logs" % k,
                 "tasks/%d/status.json" % k]
        try:
            while not stop.is_set():
                for f in files:
                    with open(env.p(g, f), "rb") as fh:
                        data = fh.read()
                    if f.endswith(".json"):
                        json.loads(data)
                    elif data:
                        check(data.endswith(b"\n"), "%s without a newline" % f)
                    counts[k] += 1
                with open(env.p("billing/ledger.csv"), "rb") as fh:
                    fh.read()
                os.listdir(env.p(g, "tasks"))
        except Exception as e:  # noqa: BLE001
            errors.append("reader %d: %s: %s" % (k, type(e).__name__, e))

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    try:
        st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    check(not errors, "; ".join(errors[:3]))
    check(st["state"] == "Succeeded" and st["progress"] == "30/30", "group: %s" % st)
    check(min(counts) > 5, "readers made too little progress: %r" % counts)


@case(timeout=60)
def test_max_failures(env):
    g = env.group("""\
completions: 4
parallelism: 4
retries: 10
max_failures: 2
command: ["/bin/sh", "-c", "if [ $JOB_TASK_INDEX = 3 ]; then sleep 30; fi; exit 1"]
""")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Failed", "ended %s" % st["state"])
    check(st["failures"] == 3, "group failures %s, want 3 (fails past max_failures 2)"
          % st["failures"])
    node3 = os.path.join(g, "tasks/3/nodes/0")
    env.wait(os.path.join(g, "tasks/3"), ("Stopped", "Failed"), timeout=15)
    pid = env.status(node3)["pid"]
    if isinstance(pid, int):
        env.poll_until(lambda: not pid_alive(pid), 5, "task 3's process to be stopped")


@case(timeout=60)
def test_restart_policy_on_failure(env):
    g = env.group("""\
restart_policy: OnFailure
retries: 2
command: ["/bin/sh", "-c", "echo attempt $JOB_ATTEMPT; exit 3"]
""")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Failed", "ended %s" % st["state"])
    ts = env.status(os.path.join(g, "tasks/0"))
    check(ts["attempt"] == 3 and ts["failures"] == 3, "task: %s" % ts)
    ev = env.read(os.path.join(g, "events"))
    check(ev.count(" BackOff ") == 2, "BackOff events:\n%s" % ev)
    node = os.path.join(g, "tasks/0/nodes/0")
    check(env.read(os.path.join(node, "logs")) == "attempt 3\n", "logs")
    check(env.read(os.path.join(node, "logs.prev")) == "attempt 2\n", "logs.prev")


@case(timeout=60)
def test_queue_submission_order(env):
    rec = os.path.join(env.work, "order")
    q = env.queue("ord")
    rc = env.write(os.path.join(q, "spec.yaml"), "capacity: 1\n")
    check(rc == 0, "queue spec: %s" % rc)
    cmd = 'command: ["/bin/sh", "-c", "echo $JOB_GROUP $JOB_TASK_INDEX $(date +%%s.%%N) >> %s; sleep 0.3"]\n' % rec
    a = env.group("completions: 3\n" + cmd, name="a", queue="ord")
    b = env.group("completions: 2\n" + cmd, name="b", queue="ord")
    env.wait(b, ("Succeeded", "Failed"), timeout=20)
    env.wait(a, ("Succeeded", "Failed"), timeout=20)
    with open(rec) as f:
        runs = [l.split() for l in f.read().splitlines()]
    order = ["%s%s" % (r[0], r[1]) for r in sorted(runs, key=lambda r: float(r[2]))]
    check(order == ["a0", "a1", "a2", "b0", "b1"], "start order with capacity 1: %r" % order)


@case(timeout=60)
def test_spot_preemption(env):
    """On-demand work that cannot fit preempts a spot node: SIGTERM, billed to
    that second, requeued, no retry used up."""
    spot = env.group("""\
billing: spot
completions: 4
parallelism: 4
gpu: "4090"
gpus: 8
retries: 0
command: ["/bin/sh", "-c", "echo spot $JOB_TASK_INDEX attempt $JOB_ATTEMPT; sleep 30"]
""", name="spot", queue="qs")
    env.wait(spot, pred=lambda s: s["running"] == 4, timeout=10, what="4 spot tasks running")
    # a node has its pid once its supervisor reported (starts do not wait)
    pids = {i: env.wait(os.path.join(spot, "tasks/%d/nodes/0" % i), "Running", timeout=10)["pid"]
            for i in range(4)}
    od = env.group('gpu: "4090"\ngpus: 8\ncommand: ["/bin/sh", "-c", "echo on-demand"]\n',
                   name="od", queue="qo")
    try:
        st = env.wait(od, ("Succeeded", "Failed"), timeout=8)
    except TestFailure:
        check(env.ctl(spot, "stop") == 0, "stop spot")
        raise TestFailure("no preemption: on-demand work that cannot fit still waits behind "
                          "running spot nodes after 8 s (reference 5.4)")
    check(st["state"] == "Succeeded", "the on-demand task ended %s: %s" % (st["state"], st["message"]))
    ev = env.read(os.path.join(spot, "events"))
    check(" Preempted " in ev, "no Preempted event on the spot group:\n%s" % ev)
    victims = [i for i, p in pids.items() if not pid_alive(p)]
    check(len(victims) >= 1, "no spot process was ended")
    v = victims[0]
    ts = env.status(os.path.join(spot, "tasks/%d" % v))
    check(ts["state"] in ("Waiting", "Running", "Initializing"),
          "the preempted task is %s; it should wait (or run) again" % ts["state"])
    check(ts["retries_left"] == 0 and ts["failures"] == 0,
          "preemption used up a retry: %s" % ts)
    rows = [r for r in env.ledger() if r["group"] == "spot" and int(r["task"]) == v]
    check(rows and rows[0]["end"], "the preempted segment was not closed: %r" % rows)
    check(env.status(spot)["state"] not in ("Failed",), "the spot group failed")
    check(env.ctl(spot, "stop") == 0, "stop spot")
    env.wait(spot, "Stopped", timeout=10)
    for i in range(4):
        env.wait(os.path.join(spot, "tasks/%d" % i), ("Stopped",), timeout=15)


@case(timeout=60)
def test_queue_group_timeout(env):
    q = env.queue("gt")
    rc = env.write(os.path.join(q, "spec.yaml"), "capacity: 1\ngroup_timeout: 1s\n")
    check(rc == 0, "queue spec with group_timeout 1s: %s" % errno.errorcode.get(rc, rc))
    a = env.group('command: ["/bin/sh", "-c", "sleep 30"]\n', name="a", queue="gt")
    env.wait(a, "Running", timeout=10)
    b = env.group('command: ["/bin/true"]\n', name="b", queue="gt")
    try:
        st = env.wait(b, ("Stopped", "Failed", "Succeeded"), timeout=5)
    except TestFailure:
        env.ctl(a, "stop")
        raise TestFailure("group_timeout 1s was accepted but the group still waits after 5 s "
                          "(reference 2.2: never accept a key and then ignore it)")
    check(st["state"] in ("Stopped", "Failed"), "the waiting group ended %s" % st["state"])
    ev = env.read(os.path.join(b, "events"))
    check(" GroupTimeout " in ev, "no GroupTimeout event:\n%s" % ev)
    check(env.status(a)["state"] == "Running", "the running group was disturbed")
    check(env.ctl(a, "stop") == 0, "stop a")
    env.wait(os.path.join(a, "tasks/0"), "Stopped", timeout=10)


def _cores(spec):
    out = set()
    for part in spec.split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


@case(timeout=60)
def test_cpu_exclusive(env):
    """cpu_exclusive: each node gets its own cores, one block per GPU (the 4090's
    20 per GPU), shared with no other node on the machine; released at the end."""
    g = env.group("""\
gpu: "4090"
gpus: 2
completions: 4
parallelism: 4
cpu_exclusive: true
command: ["/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status; cat /proc/self/cpuset; sleep 1"]
""")
    env.wait(g, "Running", timeout=10)
    seen = {}
    deadline = time.time() + 10
    while len(seen) < 4 and time.time() < deadline:
        for t in range(4):
            alloc = env.read(os.path.join(g, "tasks/%d/nodes/0/allocation" % t))
            m = dict(l.split(": ", 1) for l in alloc.splitlines() if l.startswith(("machine:", "cpuset:")))
            cs = m.get("cpuset", '""').strip('"')
            if cs:
                seen[t] = (m["machine"], _cores(cs))
        time.sleep(0.05)
    check(len(seen) == 4, "cpusets seen for %d of 4 tasks: %r" % (len(seen), seen))
    for t, (mach, cores) in seen.items():
        check(len(cores) == 40, "task %d got %d cores, want 40 (2 GPUs x 20)" % (t, len(cores)))
    items = list(seen.values())
    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            if items[i][0] == items[j][0]:
                check(not (items[i][1] & items[j][1]), "two nodes on %s share cores" % items[i][0])
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "ended %s: %s" % (st["state"], st["message"]))
    # where the machine allows (a writable cgroup v1 cpuset here), each node
    # ran in a cpuset cgroup of its own, removed when it ended
    v1 = "/sys/fs/cgroup/cpuset"
    if os.geteuid() == 0 and os.access(os.path.join(v1, "cpuset.cpus"), os.W_OK):
        host = set(range(os.cpu_count() or 1))
        pinned = [t for t, (_, cores) in seen.items() if cores & host]
        check(pinned, "no node's cores exist on this host: nothing to check")
        for t in pinned:   # the cluster is logical: ids this host lacks are dropped
            logs = env.read(os.path.join(g, "tasks/%d/nodes/0/logs" % t))
            check("/jobfs/node-" in logs, "task %d not in a jobfs cpuset: %r" % (t, logs))
        left = [d for d in os.listdir(os.path.join(v1, "jobfs")) if d.startswith("node-")] \
            if os.path.isdir(os.path.join(v1, "jobfs")) else []
        check(not left, "cpuset cgroups left behind: %r" % left)
    # without GPUs it is refused, with a message
    bad = os.path.join(env.queue("q"), "groups", "nogpu")
    env.mkdir(bad)
    try:
        with open(env.p(bad, "spec.yaml"), "w") as f:
            f.write('cpu_exclusive: true\ncommand: ["true"]\n')
    except OSError as e:
        check(e.errno == errno.EINVAL, "refusal errno %s" % e)
    st = env.status(bad)
    check(st["state"] == "Invalid" and "cpu_exclusive" in st["message"],
          "cpu_exclusive without GPUs: %r" % st)


def test_version_and_help(env):
    """jobfs --version says its version and --help its usage, both on
    stdout with status 0; an unknown option is a usage error (1)."""
    import subprocess
    from jfit import jobfs_bin
    v = subprocess.run([jobfs_bin(), "--version"], capture_output=True, text=True, timeout=10)
    check(v.returncode == 0 and re.fullmatch(r"jobfs \d+\.\d+\.\d+\n", v.stdout),
          "--version: %d %r %r" % (v.returncode, v.stdout, v.stderr))
    h = subprocess.run([jobfs_bin(), "--help"], capture_output=True, text=True, timeout=10)
    check(h.returncode == 0 and "jobfs --version | --help" in h.stdout and "--state DIR" in h.stdout,
          "--help: %d %r" % (h.returncode, h.stdout[:200]))
    u = subprocess.run([jobfs_bin(), "--no-such-option"], capture_output=True, text=True,
                       timeout=10)
    check(u.returncode == 1 and "usage: jobfs" in u.stderr, "bad option: %d %r" % (u.returncode, u.stderr[:200]))
