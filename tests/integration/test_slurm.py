"""The same tree on a real Slurm cluster (--backend slurm).

The cluster is the one scripts/slurm-cluster.sh starts (the README's test
command starts it and exports SLURM_CONF and JOBFS_SLURM_URL): munged,
slurmctld, four slurmd nodes n1..n4 on this host (8 CPUs, 8 fake 4090 GPUs
each) and slurmrestd on a unix socket; partitions ondemand and spot (spot
is preempted by on-demand work and requeued).  Every test mounts jobfs with
`--backend slurm` on a fresh state dir, drives the tree with sh and cat as
usual, and checks it against what Slurm itself says: squeue, and the
jobcomp/filetxt record Slurm writes for every run segment (DIR/log/jobcomp.txt).
Without a cluster the tests skip; with JOBFS_SLURM_REQUIRED set they fail.
"""
import os
import re
import subprocess
import time

from jfit import TestFailure, case, check, money
from test_attempts import counter, retry_spec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The test cluster's GRES (scripts/slurm-cluster.sh): "typed" gpu:4090:8,
# "untyped" gpu:8 (mapped onto the 4090 by the cluster file jfit gives the
# daemon), "none": CPU-only nodes.  The README's test command runs this
# suite on all three; GPU work runs where the nodes have GPUs, and the same
# work asks for whole nodes by their CPUs where they have none.
FLAVOR = os.environ.get("JOBFS_SLURM_GRES", "typed")
GPUS = FLAVOR != "none"


def gpu(n=1):
    """The spec lines for n 4090s a node, or nothing on a CPU-only cluster."""
    return ('gpu: "4090"\ngpus: %d\n' % n) if GPUS else ""


def whole_node():
    """A node's worth: its 8 GPUs, or on CPU-only nodes its 8 CPUs."""
    return gpu(8) if GPUS else 'resources: {limits: {cpu: "8", memory: 4Gi}}\n'

CLUSTER_SH = os.path.join(ROOT, "scripts", "slurm-cluster.sh")
# a request to slurmrestd gives up after this long (backends/slurm/rest.h:
# JF_SLURM_TIMEOUT_MS_DEFAULT): a read of the tree that waited on Slurm would
# take at least that
HTTP_TIMEOUT_S = 10.0


def cluster_dir():
    return os.path.dirname(os.environ.get("SLURM_CONF", "/nonexistent/x"))


def jobcomp():
    """Slurm's own record of every run segment: [{JobId, JobState, StartTime,
    EndTime, ArrayJobId, ArrayTaskId, ...}] (jobcomp/filetxt)."""
    path = os.path.join(cluster_dir(), "log", "jobcomp.txt")
    out = []
    try:
        with open(path) as f:
            for line in f:
                rec = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
                out.append(rec)
    except OSError:
        pass
    return out


def epoch(t):
    return int(time.mktime(time.strptime(t, "%Y-%m-%dT%H:%M:%S")))


def rfc(t):
    """2026-12-01T18:14:18Z -> epoch seconds."""
    return int(time.mktime(time.strptime(t, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone)


def job_ids(env):
    """The array job ids of this state dir's batches, from the store."""
    import sqlite3
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(env.state, "jobfs.db"), uri=True)
    ids = [r[0] for r in db.execute("SELECT job_id FROM submissions WHERE job_id != 0")]
    db.close()
    return ids


def segments(env):
    """jobcomp records of this state dir's arrays."""
    ids = {str(i) for i in job_ids(env)}
    return [r for r in jobcomp() if r.get("ArrayJobId") in ids]


def check_costs(env, group, want_rows=None):
    """Every cost is the sum of its ledger rows, and every ledger row's
    seconds are its Slurm segment's, to the second."""
    rows = [r for r in env.ledger() if r["group"] == os.path.basename(group)]
    if want_rows is not None:
        check(len(rows) == want_rows, "%s: %d ledger rows, want %d" % (group, len(rows), want_rows))
    gsum = sum(money(r["amount"] + " CNY")[0] for r in rows)
    gcost, _ = money(env.read(os.path.join(group, "cost")))
    check(gcost == gsum, "%s: cost %d != ledger sum %d" % (group, gcost, gsum))
    for r in rows:
        check(int(r["seconds"]) == rfc(r["end"]) - rfc(r["start"]),
              "ledger row %s: %s s between %s and %s" % (r["segment_id"], r["seconds"],
                                                      r["start"], r["end"]))
    # each row matches one Slurm segment (start and end to the second)
    segs = {(epoch(s["StartTime"]), epoch(s["EndTime"])) for s in segments(env)
            if s.get("StartTime") and s["StartTime"] != "Unknown"}
    for r in rows:
        check((rfc(r["start"]), rfc(r["end"])) in segs,
              "ledger row %s (%s .. %s) is no Slurm run segment; Slurm's: %s"
              % (r["segment_id"], r["start"], r["end"], sorted(segs)[:20]))
    return rows


def refused(env, name, spec):
    """Write spec into a new group `name` of queue q: it must be refused
    when written (Invalid); returns its status."""
    g = os.path.join(env.queue("q"), "groups", name)
    env.mkdir(g)
    rc = env.write(g + "/spec.yaml", spec)
    st = env.status(g)
    check(rc != 0 and st["state"] == "Invalid", "%s: rc %s, status %s" % (name, rc, st))
    return st


def wait_slurm_idle(env, timeout=30):
    """Nothing of this state dir pending or running in Slurm."""
    def idle():
        return not [j for j in env.slurm_jobs() if j[1] in ("PENDING", "RUNNING",
                                                           "COMPLETING", "REQUEUED")]
    env.poll_until(idle, timeout=timeout, what="Slurm to run nothing of ours",
                   interval=0.2)


DEMO = gpu(1) + """\
count: 3
command: ["/bin/sh", "-c"]
args: ["echo hello from $JOB_NAME index $JOB_COMPLETION_INDEX on $(hostname) gpus $CUDA_VISIBLE_DEVICES; sleep $RUN_SECONDS; exit $EXIT_CODE"]
env:
  RUN_SECONDS: "2"
  EXIT_CODE: "0"
"""


@case(timeout=90)
def test_slurm_demo(env):
    env.use_slurm()
    check(sorted(os.listdir(env.p("cluster/machines"))) == ["n1", "n2", "n3", "n4"],
          "machines: %s" % os.listdir(env.p("cluster/machines")))
    m = env.status_yaml("cluster/machines/n1")
    check(m["gpus"] == ("8" if GPUS else "0") and m["backend"] == "slurm" and
          "spot" in m["partitions"] and m["cpu"] == "8", "n1: %s" % m)
    check(m["model"] == ("4090" if GPUS else "") and
          m["slurm_gpu_type"] == {"typed": "4090", "untyped": "(untyped)", "none": ""}[FLAVOR],
          "n1: %s" % m)
    # a GPU request no node can meet is refused when written, naming what they have
    st = refused(env, "h800", 'gpu: "H800"\ncommand: ["true"]\n')
    want = {"typed": "4090 on 4 nodes (up to 8 each)",
            "untyped": "untyped gpu (model 4090) on 4 nodes (up to 8 each)",
            "none": "none: its nodes have no GPUs"}[FLAVOR]
    check("no node with 1 \"H800\" GPU" in st["message"] and want in st["message"],
          "H800 request: %s" % st)
    b = "tasks/demo"
    env.mkdir(b)
    env.submit(b, DEMO)
    env.wait(b, "Succeeded", timeout=60)
    for i in (1, 2, 3):
        t = "%s/%d-demo" % (b, i)
        logs = env.read(t + "/nodes/0/logs")
        check("hello from demo index %d" % (i - 1) in logs, "%s logs: %r" % (t, logs))
        n = env.status(t + "/nodes/0")
        check(n["state"] == "Succeeded" and n["machine"] in ("n1", "n2", "n3", "n4"),
              "%s node: %s" % (t, n))
        if GPUS:
            check(str(n["gpus"]) == "1" and
                  logs.split("gpus ")[1].split()[0] == n["cuda_visible_devices"],
                  "%s node: %s, logs %r" % (t, n, logs))
        else:
            check(str(n["gpus"]) == "0" and n["cuda_visible_devices"] == "",
                  "%s node: %s" % (t, n))
    ev = env.read(b + "/events")
    check(re.search(r"Submitted batch batch \d+ is slurm job \d+", ev), "events: %s" % ev)
    rows = check_costs(env, b, want_rows=3)
    check(all(int(r["seconds"]) >= 2 for r in rows), "rows: %s" % rows)
    total, _ = money(env.read("billing/cost"))
    check(total == sum(money(r["amount"] + " CNY")[0] for r in env.ledger()),
          "root cost != ledger")
    # Slurm ran it as one array of three elements, each COMPLETED
    segs = segments(env)
    check(len(segs) == 3 and all(s["JobState"] == "COMPLETED" for s in segs),
          "Slurm's records: %s" % segs)
    check(len({s["ArrayJobId"] for s in segs}) == 1, "more than one array: %s" % segs)
    # what Slurm cannot run is refused with Slurm's words, not left waiting
    g = env.group("nodes: 5\ncommand: [\"true\"]\n", name="five")
    st = env.wait(g, "Failed", timeout=30)
    check("slurm refused the work" in st["message"], "status: %s" % st)
    check("Unschedulable" in env.read(g + "/events"), "events: %s" % env.read(g + "/events"))
    wait_slurm_idle(env)


@case(timeout=120)
def test_slurm_parallelism(env):
    env.use_slurm()
    rec = os.path.join(env.work, "rec")
    os.makedirs(rec)
    g = env.group("completions: 12\nparallelism: 3\n"
                  "command: [\"/bin/sh\", \"-c\"]\n"
                  "args: ['echo \"$(date +%%s.%%N) start $JOB_TASK_INDEX\" >> %s/$JOB_TASK_INDEX;"
                  " sleep 2; echo \"$(date +%%s.%%N) end\" >> %s/$JOB_TASK_INDEX']\n" % (rec, rec))
    seen_throttle = []
    said = []

    def look():
        for j in env.slurm_jobs():
            if "%3]" in j[0]:
                seen_throttle.append(j[0])
        st = env.status(g)
        if "Parallelism" in st["message"]:
            said.append(st["message"])
        return st["state"] == "Succeeded"
    env.poll_until(look, timeout=100, what="the group to succeed", interval=0.2)
    ev = []
    for i in range(12):
        lines = open(os.path.join(rec, str(i))).read().split()
        ev.append((float(lines[0]), 1))
        ev.append((float(lines[3]), -1))
    ev.sort()
    cur = peak = 0
    for _, d in ev:
        cur += d
        peak = max(peak, cur)
    check(peak == 3, "peak concurrency %d, want exactly 3" % peak)
    check(seen_throttle, "Slurm never showed the array with %3")
    # while the rest waited behind the throttle, the group said so in Slurm's words too
    check(said and re.match(r"waiting in slurm \(job \d+\): Parallelism, .*; Slurm's reason: "
                            r"JobArrayTaskLimit$", said[0]), "messages: %s" % said[:3])
    st = env.status(g)
    check(st["progress"] == "12/12" and st["parallelism"] == 3, "status: %s" % st)
    check_costs(env, g, want_rows=12)


@case(timeout=120)
def test_slurm_pending_reason(env):
    """A group Slurm cannot start yet says why, in jobfs's words and Slurm's
    (Resources: the nodes are taken); the message goes once it runs."""
    env.use_slurm()
    go = os.path.join(env.tmp, "go")
    big = env.group("completions: 4\n" + whole_node() +
                    "command: [sh, -c, \"while [ ! -e %s ]; do sleep 0.1; done\"]\n" % go,
                    name="big")
    env.wait(big, pred=lambda s: s["running"] == 4, timeout=40, what="4 running")
    w = env.group(whole_node() + "command: [\"true\"]\n", name="w")
    st = env.wait(w, pred=lambda s: "Resources" in s["message"], timeout=20,
                  what="the waiting group to say why")
    check(st["state"] == "Waiting" and
          re.match(r"waiting in slurm \(job \d+\): Resources, the nodes, CPUs, memory or "
                   r"GPUs it asks for are in use$", st["message"]), "status: %s" % st)
    # reference 9.1 on Slurm: the reason in jobfs's words, the place among
    # what waits, and Slurm's own expected start when its backfill has one
    w2 = env.group(whole_node() + "command: [\"true\"]\n", name="w2")
    st2 = env.wait(w2, pred=lambda s: s["reason"] != "", timeout=20,
                   what="the second waiting group's reason")
    st = env.status(w)
    check(st["reason"] == "Resources" and st["position"] == 1, "first: %s" % st)
    check(st2["position"] == 2, "second: %s" % st2)
    for x in (st, st2):
        check((x["eta"] == "" and x["eta_basis"] == "") or x["eta_basis"] == "reservation",
              "Slurm's expected start: %r %r" % (x["eta"], x["eta_basis"]))
    # reference 9.3: what the running work costs now and will have cost
    sb = env.status(big)
    rate, _ = money(sb["cost_rate"][:-2])
    check(sb["cost_rate"].endswith("/h") and rate > 0, "cost_rate %r" % sb["cost_rate"])
    check(money(sb["cost_estimate"])[0] >= money(sb["cost"])[0], "estimate %r" % sb)
    check(money(sb["spot_savings"])[0] == 0, "on-demand: %r" % sb["spot_savings"])
    open(go, "w").close()
    env.wait(w2, "Succeeded", timeout=90)
    st = env.wait(w, "Succeeded", timeout=60)
    check("waiting" not in st["message"], "status after: %s" % st)
    env.wait(big, "Succeeded", timeout=60)


@case(timeout=120)
def test_slurm_retries(env):
    env.use_slurm()
    g = env.group("completions: 4\nretries: 2\n"
                  "command: [\"/bin/sh\", \"-c\"]\n"
                  "args: ['echo attempt $JOB_ATTEMPT; [ $JOB_ATTEMPT -ge 2 ]']\n")
    bad = env.group("retries: 1\ncommand: [\"/bin/sh\", \"-c\", \"echo no; exit 3\"]\n",
                    name="bad")
    env.wait(g, "Succeeded", timeout=90)
    env.wait(bad, "Failed", timeout=60)
    for i in range(4):
        t = "%s/tasks/%d" % (g, i)
        st = env.status(t)
        check(int(st["attempt"]) == 2 and int(st["retries_left"]) == 1, "%s: %s" % (t, st))
        check("attempt 2" in env.read(t + "/nodes/0/logs"), "%s logs" % t)
        check("attempt 1" in env.read(t + "/nodes/0/logs.prev"), "%s logs.prev" % t)
        check("BackOff" in env.read(t + "/events"), "%s events" % t)
    st = env.status(bad + "/tasks/0")
    check(int(st["attempt"]) == 2 and st["state"] == "Failed", "bad task: %s" % st)
    check("exit code 3" in st["message"], "bad task: %s" % st)
    # jobfs resubmitted the failed indexes: Slurm saw 4 + 4 + 2 runs, each once
    segs = segments(env)
    check(len(segs) == 10, "Slurm ran %d segments, want 10: %s" % (len(segs), segs))
    check_costs(env, g, want_rows=8)


@case(timeout=150)
def test_slurm_attempts(env):
    """Every attempt kept (reference 9.2) where the Slurm backend's jobs
    write the logs: a task that fails twice, then succeeds, keeps three
    attempts with their own status and output, after its end and a
    restart of the daemon."""
    env.use_slurm()
    g = env.group(retry_spec(counter(env, "s")))
    st = env.wait(g, ("Succeeded", "Failed"), timeout=120)
    check(st["state"] == "Succeeded", "group: %s" % st)
    node = g + "/tasks/0/nodes/0"
    for when in ("after its end", "after a remount"):
        got = sorted(os.listdir(env.p(node, "attempts")), key=int)
        check(got == ["1", "2", "3"], "%s: ls attempts is %s" % (when, got))
        for a, (state, code) in enumerate((("Failed", 1), ("Failed", 1), ("Succeeded", 0)), 1):
            ap = "%s/attempts/%d" % (node, a)
            s = env.status(ap)
            check(s["state"] == state and s["exit_code"] == code and s["attempt"] == a and
                  s["machine"] in ("n1", "n2", "n3", "n4") and s["pid"] != "",
                  "%s: attempts/%d: %s" % (when, a, s))
            check(env.read(ap + "/stdout") == "out try %d\n" % a and
                  env.read(ap + "/stderr") == "err try %d\n" % a,
                  "%s: attempts/%d output: %r %r" % (when, a, env.read(ap + "/stdout"),
                                                     env.read(ap + "/stderr")))
            check(sorted(env.read(ap + "/logs").splitlines()) ==
                  ["err try %d" % a, "out try %d" % a],
                  "%s: attempts/%d/logs: %r" % (when, a, env.read(ap + "/logs")))
        check(env.read(node + "/logs.prev") == env.read(node + "/attempts/2/logs"),
              "%s: logs.prev is not attempts/2/logs" % when)
        for bad in ("0", "4"):
            check(not os.path.exists(env.p(node, "attempts", bad)),
                  "%s: attempts/%s exists" % (when, bad))
        r = env.sh("find %s -path '*/attempts/*' -type f -exec cat {} + | wc -l" % g)
        check(int(r.stdout.split()[0]) > 0, "find | cat of the attempts read nothing")
        env.remount()
    wait_slurm_idle(env)


@case(timeout=90)
def test_slurm_gang(env):
    env.use_slurm()
    rec, seen = os.path.join(env.work, "gang"), os.path.join(env.work, "gang-seen")
    os.makedirs(rec)
    os.makedirs(seen)
    # the gang property, whatever the machine's speed: each node writes its
    # line, then waits (up to 60 s) until all four have, and says how many
    # it saw; nodes not started together would see fewer than four
    g = env.group("nodes: 4\n" + gpu(2) +
                  "command: [\"/bin/sh\", \"-c\"]\n"
                  "args: ['echo $(date +%%s.%%N) $JOB_NODE_INDEX $JOB_COMPLETION_INDEX "
                  "$JOB_NODE_COUNT $JOB_MASTER_ADDR $JOB_MASTER_PORT $CUDA_VISIBLE_DEVICES > %s/$JOB_NODE_INDEX; "
                  "n=0; while [ $(ls %s | wc -l) -lt 4 ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done; "
                  "ls %s | wc -l > %s/$JOB_NODE_INDEX; sleep 1']\n"
                  % (rec, rec, rec, seen))
    env.wait(g, "Succeeded", timeout=90)
    lines = [open(os.path.join(rec, str(i))).read().split() for i in range(4)]
    saw = [open(os.path.join(seen, str(i))).read().strip() for i in range(4)]
    check(saw == ["4"] * 4, "nodes saw %s of the 4 started (not a gang)" % saw)
    for i, l in enumerate(lines):
        check(l[1] == str(i) and l[2] == str(i) and l[3] == "4", "node %d: %s" % (i, l))
    check(len({(l[4], l[5]) for l in lines}) == 1, "master differs: %s" % lines)
    hosts = sorted(env.status("%s/tasks/0/nodes/%d" % (g, i))["machine"] for i in range(4))
    check(hosts == ["n1", "n2", "n3", "n4"], "hosts: %s" % hosts)
    # each node's status names the GPUs Slurm gave it, as the node saw them
    for i, l in enumerate(lines):
        n = env.status("%s/tasks/0/nodes/%d" % (g, i))
        if GPUS:
            check(str(n["gpus"]) == "2" and len(l) == 7 and n["cuda_visible_devices"] == l[6],
                  "node %d: status %s, saw %s" % (i, n, l))
        else:
            check(str(n["gpus"]) == "0" and len(l) == 6 and n["cuda_visible_devices"] == "",
                  "node %d: status %s, saw %s" % (i, n, l))
    rows = check_costs(env, g, want_rows=4)
    check(len({(r["start"], r["end"]) for r in rows}) == 1, "nodes billed apart: %s" % rows)
    check(all(r["gpus"] == ("2" if GPUS else "0") for r in rows), "rows: %s" % rows)



def slurm_containers(env, *extra):
    """The test registry ($JOBFS_REGISTRY) and jobfs remounted on the
    cluster with --runtime oci (root's jobs run in containers on the
    nodes); skips as the container tests do (jfit.container_registry)."""
    reg = env.container_registry()
    env.use_slurm("--runtime", "oci", "--insecure-registry", reg, *extra)
    return reg


@case(timeout=180)
def test_slurm_containers(env):
    """A 4-node gang in the test image on the Slurm nodes: each node runs
    in the image's root with its own JOB_* variables, the image is pulled
    once for the whole cluster (the others find its layers in the shared
    cache), the nodes' events say so in Kubernetes' words, and a pull that
    fails ends the node with ErrImagePull and its message."""
    reg = slurm_containers(env)
    image = "%s/jobfs/busybox:latest" % reg
    g = env.group("nodes: 4\nimage: %s\n" % image +
                  "args: [\"sh\", \"-c\", \"echo node $JOB_NODE_INDEX of $JOB_NODE_COUNT "
                  "task $JOB_TASK_INDEX; wc -l < /etc/passwd; ls /bin/busybox\"]\n")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=120)
    check(st["state"] == "Succeeded", "ended %s: %s" % (st["state"], st["message"]))
    fresh = 0
    digests = set()
    for i in range(4):
        n = "%s/tasks/0/nodes/%d" % (g, i)
        logs = env.read(n + "/logs")
        # the image's own root (its two-line /etc/passwd), this node's index
        check(logs == "node %d of 4 task 0\n2\n/bin/busybox\n" % i,
              "node %d logs %r" % (i, logs))
        ns = env.status(n)
        check(ns["runtime"] == "oci" and ns["image"] == image, "node %d status %s" % (i, ns))
        check(re.fullmatch(r"sha256:[0-9a-f]{64}", ns["image_digest"]),
              "node %d image_digest %r" % (i, ns["image_digest"]))
        digests.add(ns["image_digest"])
        text = env.read(n + "/events")
        reasons = [l.split(" ", 4)[2] for l in text.splitlines() if len(l.split(" ")) > 3]
        check("Pulled" in reasons and "Created" in reasons and "Completed" in reasons,
              "node %d events:\n%s" % (i, text))
        # a pull that fetched the layers says their size; one that found
        # them in the cache says so
        for l in text.splitlines():
            if " Pulled " in l and "Successfully pulled" in l and \
                    "every layer was already on this machine" not in l:
                fresh += 1
    check(fresh == 1, "the image was fetched by %d nodes, not once" % fresh)
    check(len(digests) == 1, "digests differ: %s" % digests)

    # a tag the registry does not have: as locally no attempt of the task,
    # which waits while its group backs off, the node's end says why
    g2 = env.group("image: %s/jobfs/busybox:nosuchtag\nargs: [\"true\"]\n" % reg,
                   name="nosuch")
    st = env.wait(g2, pred=lambda s: s.get("reason") == "ImagePull", timeout=120,
                  what="reason ImagePull")
    check(st["state"] == "Waiting" and "trying again in 10s" in st["message"],
          "group %s: %s" % (st["state"], st["message"]))
    ts = env.status(g2 + "/tasks/0")
    check(ts["state"] == "Waiting" and ts["retries_left"] == 3,
          "a pull failure used a retry: %s" % ts)
    n = "%s/tasks/0/nodes/0" % g2
    text = env.read(n + "/events")
    check(re.search(r"Warning Failed \S+ Failed to pull image \"[^\"]*nosuchtag\": registry "
                    r"\S+ has no manifest nosuchtag", text), "events:\n%s" % text)
    gev = env.read(g2 + "/events")
    check(re.search(r"Warning BackOff tasks/0 Back-off pulling image .*nosuchtag.*trying again "
                    r"in 10s; no retry used", gev), "group events:\n%s" % gev)
    env.ctl(g2, "stop")
    env.wait(g2, ("Stopped",), timeout=60)


@case(timeout=150)
def test_slurm_container_limits(env):
    """DESIGN 8.2 on the Slurm nodes: a container over its memory limit is
    OOM-killed (exit 137, reason OOMKilled, the Warning event, from its
    cgroup's own counter) and shm_size is the container's /dev/shm."""
    reg = slurm_containers(env)
    image = "%s/jobfs/busybox:latest" % reg
    hog = "awk 'BEGIN{s=sprintf(\\\"%200000000s\\\",\\\"\\\"); print length(s)}'"
    g = env.group("image: %s\nretries: 0\nresources: {limits: {memory: 64Mi}}\n"
                  "command: [\"sh\", \"-c\", \"exec %s\"]\n" % (image, hog), name="oom")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=120)
    check(st["state"] == "Failed", "oom group ended %s" % st["state"])
    n = "%s/tasks/0/nodes/0" % g
    ns = env.status(n)
    check(ns["exit_code"] == 137 and ns["reason"] == "OOMKilled",
          "OOM node: exit %s reason %s (%s)" % (ns["exit_code"], ns["reason"], ns["message"]))
    text = env.read(n + "/events")
    check(re.search(r"Warning OOMKilled tasks/0/nodes/0 main was killed: it used more memory "
                    r"than its limit", text), "events:\n%s" % text)
    g = env.group("image: %s\nshm_size: 48Mi\n"
                  "args: [\"sh\", \"-c\", \"df -k /dev/shm | tail -1\"]\n" % image, name="shm")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=120)
    check(st["state"] == "Succeeded", "shm group ended %s: %s" % (st["state"], st["message"]))
    fields = env.read("%s/tasks/0/nodes/0/logs" % g).split()
    check(fields[1] == "49152", "/dev/shm is %s KiB, want 49152" % fields[1])


@case(timeout=240)
def test_slurm_storage(env):
    """Reference 8.3 on the Slurm nodes: a 4-node gang shares a volume that
    lives under --volumes, each node has its own emptydir, and an object
    source synced by the daemon into the shared state directory is mounted
    read-only on every node; the volume's events name every node."""
    vols = os.path.join(env.tmp, "shared-volumes")
    os.makedirs(vols)
    reg = slurm_containers(env, "--volumes", vols)
    image = "%s/jobfs/busybox:latest" % reg
    env.mkdir("volumes/ckpt")
    target = os.readlink(env.p("volumes/ckpt/data"))
    check(target == os.path.join(vols, "ckpt"), "data -> %s" % target)
    have_s3 = bool(os.environ.get("JOBFS_S3_ENDPOINT"))
    if not have_s3 and os.environ.get("JOBFS_S3_REQUIRED"):
        raise TestFailure("s3: JOBFS_S3_ENDPOINT unset")
    storage = "- {type: volume, name: ckpt, path: /ckpt}\n- {type: emptydir, path: /scratch}\n"
    script = ("echo $JOB_NODE_INDEX > /scratch/mine; echo $JOB_NODE_INDEX > /ckpt/rank-$JOB_NODE_INDEX; "
              "ls /scratch | wc -l")
    if have_s3:
        util = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                            "s3util.py")
        bucket = "jobfs-slurm-%d" % (os.getpid() % 100000)
        subprocess.run(["python3", util, "rb", bucket], capture_output=True)
        subprocess.run(["python3", util, "mb", bucket], check=True, capture_output=True)
        env.at_end(lambda: subprocess.run(["python3", util, "rb", bucket], capture_output=True))
        src = os.path.join(env.tmp, "w.txt")
        with open(src, "w") as f:
            f.write("weights\n")
        subprocess.run(["python3", util, "put", bucket, "m/w.txt", src], check=True, capture_output=True)
        env.mkdir("objects/m")
        env.write("objects/m/spec.yaml",
                  "endpoint: %s\nbucket: %s\nprefix: m\ncredentials: %s\n"
                  % (os.environ["JOBFS_S3_ENDPOINT"], bucket, os.environ["JOBFS_S3_CREDENTIALS"]))
        storage += "- {type: object, name: m, path: /models}\n"
        script += "; cat /models/w.txt"
    g = env.group("nodes: 4\nimage: %s\nargs: [\"sh\", \"-c\", \"%s\"]\nstorage:\n%s"
                  % (image, script, storage))
    st = env.wait(g, ("Succeeded", "Failed"), timeout=180)
    check(st["state"] == "Succeeded", "ended %s: %s" % (st["state"], st["message"]))
    check(sorted(os.listdir(target)) == ["rank-%d" % i for i in range(4)], os.listdir(target))
    for i in range(4):
        logs = env.read("%s/tasks/0/nodes/%d/logs" % (g, i))
        want = "1\n" + ("weights\n" if have_s3 else "")
        check(logs == want, "node %d logs %r" % (i, logs))
    text = env.read("volumes/ckpt/events")
    for i in range(4):
        check("by %s/tasks/0/nodes/%d" % (g, i) in text, "volume events:\n%s" % text)
    check(text.count(" Unmounted ") == 4, "volume events:\n%s" % text)
    check(env.status("volumes/ckpt")["used_by"] == [], "used_by after the end")


@case(timeout=90)
def test_slurm_containers_root_only(env):
    """On Slurm a job runs as its writer, and containers run as root only:
    another user's spec with an image is refused when written, saying what
    to do instead; nothing reaches Slurm."""
    import pwd
    reg = slurm_containers(env, "--allow-other")
    user = "jobfssc%d" % (os.getpid() % 10000)
    if subprocess.run(["useradd", "-M", "-N", "-g", "users", user],
                      capture_output=True).returncode != 0:
        raise TestFailure("useradd %s failed" % user)
    try:
        uid = pwd.getpwnam(user).pw_uid
        g = "queues/theirs/groups/mine"
        spec = "image: %s/jobfs/busybox:latest\nargs: [\"true\"]\n" % reg
        r = subprocess.run(["runuser", "-u", user, "--", "sh", "-c",
                            "mkdir %s && mkdir %s && cat > %s/spec.yaml"
                            % (env.p("queues/theirs"), env.p(g), env.p(g))],
                           input=spec, capture_output=True, text=True, timeout=20)
        check(r.returncode != 0, "the user's spec with an image was accepted")
        msg = env.status(g)["message"]
        check("runs this group's jobs as uid %d" % uid in msg and "rootless" in msg
              and "--runtime host" in msg, "message %r" % msg)
        check(env.status(g)["state"] in ("Draft", "Invalid"), "state %s" % env.status(g))
        check(job_ids(env) == [], "something reached Slurm: %s" % job_ids(env))
    finally:
        subprocess.run(["userdel", user], capture_output=True)


NAMED = """\
name: named
slurm_untyped_gpu: RTX4090
models:
  - name: RTX4090
    slurm_names: ["4090", rtx-4090]
    vram: 24Gi
    cpu_per_gpu: 2
    memory_per_gpu: 2Gi
    price: {on-demand: "3.60", spot: "1.08"}
machines:
  - {name: unused, model: RTX4090, gpus: 8}
"""

UNPRICED = """\
name: unpriced
models:
  - name: H100
    vram: 80Gi
    cpu_per_gpu: 2
    memory_per_gpu: 2Gi
    price: {on-demand: "20.00", spot: "6.00"}
machines:
  - {name: unused, model: H100, gpus: 8}
"""


@case(timeout=120)
def test_slurm_gpu_names(env):
    """The cluster file names Slurm's GPUs: a model whose slurm_names list
    the nodes' GRES type (and slurm_untyped_gpu for untyped GRES) is what
    the nodes have - a spec asks for it by the model's name and Slurm gets
    its own; GPUs nothing prices are shown by Slurm's name, CPU-only work
    still runs, and a request for a model no node has is refused."""
    path = os.path.join(env.tmp, "named.yaml")
    with open(path, "w") as f:
        f.write(NAMED)
    env.use_slurm("--cluster", path)
    m = env.status_yaml("cluster/machines/n2")
    g = env.group('gpu: RTX4090\ngpus: 2\ncommand: ["/bin/sh", "-c", '
                  '"echo gpus $CUDA_VISIBLE_DEVICES; sleep 2"]\n', name="named") if GPUS else None
    if GPUS:
        check(m["model"] == "RTX4090" and m["gpus"] == "8", "n2: %s" % m)
        st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
        check(st["state"] == "Succeeded", "group: %s" % st)
        n = env.status(g + "/tasks/0/nodes/0")
        logs = env.read(g + "/tasks/0/nodes/0/logs")
        check(n["gpus"] == 2 and len(n["cuda_visible_devices"].split(",")) == 2 and
              "gpus " + n["cuda_visible_devices"] in logs, "node %s, logs %r" % (n, logs))
        rows = check_costs(env, g, want_rows=1)
        check(rows[0]["gpu"] == "RTX4090" and rows[0]["gpus"] == "2", "ledger: %s" % rows)
    else:
        check(m["model"] == "" and m["gpus"] == "0", "n2: %s" % m)
        st = refused(env, "named", 'gpu: RTX4090\ncommand: ["true"]\n')
        check("none: its nodes have no GPUs" in st["message"], "named: %s" % st)
    # unpriced GPUs: shown with Slurm's name, not schedulable, CPU work runs
    path = os.path.join(env.tmp, "unpriced.yaml")
    with open(path, "w") as f:
        f.write(UNPRICED)
    env.use_slurm("--cluster", path)
    m = env.status_yaml("cluster/machines/n3")
    check(m["model"] == "" and m["gpus"] == "0" and m["cpu"] == "8" and
          m["slurm_gpus"] == ("8" if GPUS else "0"), "n3: %s" % m)
    cpu = env.group('command: ["true"]\n', name="cpu")
    check(env.wait(cpu, ("Succeeded", "Failed"), timeout=60)["state"] == "Succeeded", "cpu")
    st = refused(env, "h100", 'gpu: H100\ncommand: ["true"]\n')
    want = {"typed": "4090 (not priced: no model of the cluster file names it) on 4 nodes",
            "untyped": "untyped gpu (not priced: no model of the cluster file names it) on 4 nodes",
            "none": "none: its nodes have no GPUs"}[FLAVOR]
    check(want in st["message"], "H100: %s" % st)


K8S = {
    # file: (group state, message part, {task: (state, attempt)} or None)
    "job.yaml": ("Succeeded", "1/1", {0: ("Succeeded", 1)}),
    "job-backoff-limit-per-index-example.yaml":
        ("Failed", "5 of 10",
         {i: ("Failed", 2) if i % 2 == 0 else ("Succeeded", 1) for i in range(10)}),
    "job-backoff-limit-per-index-failindex.yaml":
        ("Failed", "2 of 4", {0: ("Failed", 2), 1: ("Failed", 1), 2: ("Succeeded", 1),
                              3: ("Succeeded", 1)}),
    "job-pod-failure-policy-example.yaml": ("Failed", "exit code 42", None),
    "job-success-policy.yaml": ("Succeeded", "success policy met", {2: ("Succeeded", 1)}),
}


@case(timeout=180)
def test_slurm_k8s_examples(env):
    """The Kubernetes documentation's Job examples end on Slurm as Kubernetes
    ends them (as they do locally: test_k8s.py), all five at once; the
    success-policy one with its failures 3 s late (see below)."""
    from test_k8s import example
    texts = {f: example(f) for f in K8S}
    # The success policy is met only if index 2's success is seen before
    # backoffLimit + 1 = 7 failures (as in Kubernetes, whose controller
    # checks the policy first among the pods one sync sees).  Slurm reports
    # ends in its own order, so here the failing indexes fail 3 s later.
    sp = "job-success-policy.yaml"
    late = texts[sp].replace("          exit 1\n", "          sleep 3; exit 1\n")
    check(late != texts[sp], "the success-policy example changed: %r" % texts[sp])
    texts[sp] = late
    env.use_slurm()
    q = env.queue("k8s")
    groups = {}
    for f, text in texts.items():
        g = os.path.join(q, "groups", f[:-5])
        env.mkdir(g)
        env.submit(g, text)
        groups[f] = g
    for f, (state, msg, tasks) in K8S.items():
        g = groups[f]
        st = env.wait(g, ("Succeeded", "Failed"), timeout=150)
        check(st["state"] == state and msg in st["message"],
              "%s: %s %r, want %s with %r" % (f, st["state"], st["message"], state, msg))
        for i, (ts, att) in (tasks or {}).items():
            t = env.status(os.path.join(g, "tasks/%d" % i))
            check((t["state"], t["attempt"]) == (ts, att),
                  "%s task %d: %s attempt %s, want %s attempt %d"
                  % (f, i, t["state"], t["attempt"], ts, att))
    # FailJob: no task ran twice, and not all 12 completions were reached
    g = groups["job-pod-failure-policy-example.yaml"]
    st = env.status(g)
    check(int(st["succeeded"]) < 12 and int(st["failures"]) >= 1, "FailJob: %s" % st)
    wait_slurm_idle(env, timeout=60)
    # the group's verdict comes first, the ends of what it stopped after it
    env.poll_until(lambda: all(int(env.status(g)["running"]) == 0 for g in groups.values())
                   and " 0 node-seconds" in [l for l in env.read("billing/summary").splitlines()
                                             if l.startswith("running now")][0],
                   30, "every task to have ended and its segment to be closed")
    for g in groups.values():
        check_costs(env, g)


SPOT = """\
billing: spot
completions: 4
""" + whole_node() + """\
command: ["/bin/sh", "-c"]
args: ["n=$(cat $JOB_CHECKPOINT_DIR/n 2>/dev/null || echo 0); echo start attempt $JOB_ATTEMPT from $n; trap 'echo $n > $JOB_CHECKPOINT_DIR/n; echo saved $n; exit 143' TERM; while [ $n -lt 12 ]; do sleep 1 & wait $!; n=$((n+1)); echo at $n; done; echo done $n"]
"""


@case(timeout=180)
def test_slurm_spot_preempted(env):
    env.use_slurm()
    spot = env.group(SPOT, name="spot")
    env.wait(spot, pred=lambda s: s["running"] == 4, timeout=60, what="4 spot tasks running")
    # each has something to lose (its own count, not a wall-clock wait)
    env.poll_until(lambda: all("at 2\n" in env.read("%s/tasks/%d/nodes/0/logs" % (spot, i))
                               for i in range(4)), 60, "every spot task to count to 2",
                   interval=0.2)
    od = env.group(whole_node() + "command: [\"/bin/sh\", \"-c\", \"echo od; sleep 2\"]\n",
                   name="od")
    env.wait(od, "Succeeded", timeout=60)
    env.wait(spot, "Succeeded", timeout=120)
    pre = []
    for i in range(4):
        t = "%s/tasks/%d" % (spot, i)
        st = env.status(t)
        if int(st["attempt"]) > 1:
            pre.append(i)
            check(int(st["retries_left"]) == 3, "%s used a retry: %s" % (t, st))
            ev = env.read(t + "/events")
            check("Preempted" in ev, "%s events: %s" % (t, ev))
            logs = env.read(t + "/nodes/0/logs")
            m = re.search(r"start attempt 2 from (\d+)", logs)
            check(m and int(m.group(1)) > 0, "%s did not resume from its checkpoint: %r"
                  % (t, logs))
            check("saved" in env.read(t + "/nodes/0/logs.prev"), "%s logs.prev" % t)
    check(len(pre) == 1, "preempted tasks: %s, want exactly one" % pre)
    # Slurm requeued it (same job, second run) rather than jobfs submitting it again
    segs = [s for s in segments(env) if s.get("Partition") == "spot"]
    check(len(segs) == 5, "spot segments in Slurm: %d, want 5: %s" % (len(segs), segs))
    check(len({s["ArrayJobId"] for s in segs}) == 1, "spot work in several arrays: %s" % segs)
    rows = check_costs(env, spot, want_rows=5)
    spot_rate = {r["rate_per_hour"] for r in rows}
    od_rate = {r["rate_per_hour"] for r in env.ledger() if r["group"] == "od"}
    check(len(spot_rate) == 1 and len(od_rate) == 1 and float(spot_rate.pop()) < float(od_rate.pop()),
          "spot must be cheaper: %s" % env.ledger())
    check_costs(env, od, want_rows=1)
    qcost, _ = money(env.read("queues/q/cost"))
    check(qcost == sum(money(r["amount"] + " CNY")[0] for r in env.ledger()), "queue cost")


@case(timeout=120)
def test_slurm_stop_and_timeout(env):
    env.use_slurm()
    g = env.group("completions: 6\nparallelism: 2\ncommand: [\"sleep\", \"60\"]\n")
    env.wait(g, pred=lambda s: s["running"] == 2, timeout=40, what="2 running")
    time.sleep(1)
    check(env.ctl(g, "stop") == 0, "ctl stop refused")
    env.wait(g, "Stopped", timeout=30)
    wait_slurm_idle(env)
    # every task ends Stopped once Slurm told jobfs its elements ended
    st = env.wait(g, pred=lambda s: s["stopped"] == 6 and s["running"] == 0, timeout=30,
                  what="all 6 tasks stopped")
    rows = check_costs(env, g, want_rows=2)
    check(all(int(r["seconds"]) < 30 for r in rows), "billed past the stop: %s" % rows)
    # a timeout is enforced to the second by jobfs's supervisor, not Slurm's minutes
    t = env.group("timeout: 3s\nretries: 0\ncommand: [\"sleep\", \"60\"]\n", name="slow")
    env.wait(t, "Failed", timeout=60)
    st = env.status(t + "/tasks/0")
    check("DeadlineExceeded" in env.read(t + "/tasks/0/nodes/0/events") or
          "timed out" in st["message"], "task: %s" % st)
    rows = check_costs(env, t, want_rows=1)
    # billed from Slurm's start to its end: the 3 s and Slurm's own launch
    # and teardown (seconds on a loaded machine), far from its minute
    check(3 <= int(rows[0]["seconds"]) <= 15, "billed %s s for a 3 s timeout" % rows[0]["seconds"])


@case(timeout=90)
def test_slurm_gpus_of_a_short_job(env):
    """A job that ends at once, most likely before a poll sees it run
    (when Slurm has forgotten its gres_detail): each node's status still
    names the GPUs Slurm gave it, as the node saw them, from what its
    supervisor wrote (RUN_DIR/gpus, the step's SLURM_STEP_GPUS)."""
    env.use_slurm()
    rec = os.path.join(env.work, "short")
    os.makedirs(rec)
    g = env.group("nodes: 2\n" + gpu(2) + "command: [\"/bin/sh\", \"-c\"]\n"
                  "args: ['echo \"$CUDA_VISIBLE_DEVICES\" > %s/$JOB_NODE_INDEX']\n" % rec,
                  name="short")
    env.wait(g, "Succeeded", timeout=60)
    for i in range(2):
        n = env.status("%s/tasks/0/nodes/%d" % (g, i))
        saw = open(os.path.join(rec, str(i))).read().strip()
        if GPUS:
            check(str(n["gpus"]) == "2" and len(n["cuda_visible_devices"].split(",")) == 2,
                  "node %d: status gpus %s %r (it saw %r)"
                  % (i, n["gpus"], n["cuda_visible_devices"], saw))
        else:
            check(str(n["gpus"]) == "0" and n["cuda_visible_devices"] == "",
                  "node %d: %s %r on a CPU-only cluster" % (i, n["gpus"], n["cuda_visible_devices"]))
    check_costs(env, g, want_rows=2)


@case(timeout=120)
def test_slurm_pause_resume(env):
    env.use_slurm()
    g = env.group("completions: 6\nparallelism: 2\n"
                  "command: [\"/bin/sh\", \"-c\", \"echo a $JOB_ATTEMPT; sleep 3\"]\n")
    env.wait(g, pred=lambda s: s["running"] == 2, timeout=40, what="2 running")
    check(env.ctl(g, "pause") == 0, "pause refused")
    env.wait(g, pred=lambda s: s["state"] == "Paused" and s["running"] == 0, timeout=30,
             what="paused with nothing running")
    held = env.poll_until(lambda: [j for j in env.slurm_jobs() if j[1] == "PENDING"],
                          timeout=10, what="the pending part in Slurm")
    r = subprocess.run(["squeue", "-h", "-o", "%i %r", "-j", held[0][0].split("_")[0]],
                       capture_output=True, text=True)
    check("JobHeld" in r.stdout, "not held in Slurm: %r" % r.stdout)
    time.sleep(2)
    check(env.status(g)["running"] == 0, "something runs while paused")
    check(env.ctl(g, "resume") == 0, "resume refused")
    env.wait(g, "Succeeded", timeout=90)
    attempts = {i: int(env.status("%s/tasks/%d" % (g, i))["attempt"]) for i in range(6)}
    # the two that ran when the pause came run again; so does one that
    # Slurm started (its throttle let the next element in) or saw end
    # while the hold was on its way to slurmctld: each of those says its
    # first run was stopped
    again = [i for i, a in attempts.items() if a == 2]
    check(set(attempts.values()) <= {1, 2} and 2 <= len(again) <= 4, "attempts: %s" % attempts)
    for i in again:
        ev = env.read("%s/tasks/%d/nodes/0/events" % (g, i))
        check("Stopped" in ev, "task %d ran twice without a stop: %s" % (i, ev))


@case(timeout=150)
def test_slurm_restd_down(env):
    env.use_slurm()
    d = cluster_dir()
    subprocess.run([CLUSTER_SH, "kill", d, "slurmrestd"], check=True, capture_output=True)
    try:
        g = env.group("completions: 3\ncommand: [\"/bin/sh\", \"-c\", \"echo once >> %s/ran\"]\n"
                      % env.work)
        st = env.wait(g, pred=lambda s: "cannot be reached" in s["message"], timeout=20,
                      what="the status to say slurm cannot be reached")
        check(st["state"] == "Waiting", "status: %s" % st)
        check("BackendUnreachable" in env.read(g + "/events"), "events")
        check("backend_state: unreachable" in env.read("cluster/settings"), "settings")
        # the tree keeps serving: a read that waited on Slurm would wait for
        # a request's timeout (HTTP_TIMEOUT_S); none of these does
        for _ in range(20):
            t0 = time.monotonic()
            env.read(g + "/status")
            os.listdir(env.p("queues/q/groups"))
            check(time.monotonic() - t0 < HTTP_TIMEOUT_S,
                  "a read waited %.1f s: on Slurm?" % (time.monotonic() - t0))
        time.sleep(2)
    finally:
        subprocess.run([CLUSTER_SH, "revive", d, "slurmrestd"], check=True, capture_output=True)
    env.wait(g, "Succeeded", timeout=90)
    check(open(os.path.join(env.work, "ran")).read() == "once\n" * 3, "ran: %r"
          % open(os.path.join(env.work, "ran")).read())
    check("BackendReachable" in env.read(g + "/events"), "no BackendReachable")
    check(len(job_ids(env)) == 1 and len({s["ArrayJobId"] for s in segments(env)}) == 1,
          "submitted more than once: %s" % segments(env))


@case(timeout=180)
def test_slurm_ctld_down(env):
    env.use_slurm()
    d = cluster_dir()
    g = env.group("completions: 2\ncommand: [\"/bin/sh\", \"-c\", \"sleep 6; echo $JOB_TASK_INDEX >> %s/ran\"]\n"
                  % env.work)
    env.wait(g, pred=lambda s: s["running"] == 2, timeout=40, what="2 running")
    subprocess.run([CLUSTER_SH, "kill", d, "slurmctld"], check=True, capture_output=True)
    try:
        env.wait(g, pred=lambda s: "cannot be reached" in s["message"], timeout=40,
                 what="the status to say slurm cannot be reached")
        g2 = env.group("command: [\"/bin/sh\", \"-c\", \"echo second >> %s/ran2\"]\n" % env.work,
                       name="g2")
        t0 = time.monotonic()
        env.read(g2 + "/status")
        check(time.monotonic() - t0 < HTTP_TIMEOUT_S,
              "a read waited %.1f s: on Slurm?" % (time.monotonic() - t0))
        time.sleep(8)   # the tasks end while slurmctld is away
    finally:
        subprocess.run([CLUSTER_SH, "revive", d, "slurmctld"], check=True, capture_output=True)
    env.wait(g, "Succeeded", timeout=120)
    env.wait(g2, "Succeeded", timeout=120)
    ran = sorted(open(os.path.join(env.work, "ran")).read().split())
    check(ran == ["0", "1"], "ran: %s" % ran)
    check(open(os.path.join(env.work, "ran2")).read() == "second\n", "g2 ran more than once")
    check_costs(env, g, want_rows=2)


@case(timeout=120)
def test_slurm_lost_reply(env):
    """The daemon dies after Slurm accepted a batch and before it recorded
    that: the next daemon finds the job by the key it carries, and does not
    submit it again."""
    env.use_slurm()
    env.daemon_args_saved = list(env.daemon_args)
    env.stop()
    os.environ["JOBFS_FAULT"] = "slurm-accepted:1"
    try:
        env.start()
        g = "queues/q/groups/g"
        env.mkdir("queues/q")
        env.mkdir(g)
        env.write(g + "/spec.yaml", "completions: 2\ncommand: [\"/bin/sh\", \"-c\", "
                  "\"echo $JOB_TASK_INDEX >> %s/ran; sleep 1\"]\n" % env.work)
        env.poll_until(lambda: env.daemon.proc.poll() is not None, timeout=20,
                       what="the daemon to die at the fault")
        env.daemon.killed = True
        subprocess.run(["fusermount3", "-u", "-z", env.mnt], capture_output=True)
    finally:
        del os.environ["JOBFS_FAULT"]
    env.daemon = None
    env.start()
    env.wait(g, "Succeeded", timeout=60)
    check("found in Slurm by its comment" in env.read(g + "/events"), "events: %s"
          % env.read(g + "/events"))
    ran = sorted(open(os.path.join(env.work, "ran")).read().split())
    check(ran == ["0", "1"], "ran: %s" % ran)
    check(len({s["ArrayJobId"] for s in segments(env)}) == 1, "two arrays: %s" % segments(env))


@case(timeout=120)
def test_slurm_daemon_killed(env):
    env.use_slurm()
    g = env.group("completions: 3\ncommand: [\"/bin/sh\", \"-c\", \"sleep 4; echo $JOB_TASK_INDEX >> %s/ran\"]\n"
                  % env.work)
    env.wait(g, pred=lambda s: s["running"] == 3, timeout=40, what="3 running")
    env.daemon.kill9()
    time.sleep(6)   # they end while no daemon watches
    env.daemon = None
    env.start()
    env.wait(g, "Succeeded", timeout=60)
    ran = sorted(open(os.path.join(env.work, "ran")).read().split())
    check(ran == ["0", "1", "2"], "ran: %s" % ran)
    for i in range(3):
        st = env.status("%s/tasks/%d" % (g, i))
        check(int(st["attempt"]) == 1, "task %d ran again: %s" % (i, st))
        ev = env.read("%s/tasks/%d/nodes/0/events" % (g, i))
        check(ev.count(" Adopted ") == 1 and "slurm job" in ev, "task %d events: %s" % (i, ev))
    # one row per node segment, from Slurm's times, not split at the crash
    check_costs(env, g, want_rows=3)


def user_tasks(env, url_var, want_slurm_user):
    """A group written by an ordinary user runs as that user; Slurm's record
    names want_slurm_user(the user) as the job's owner."""
    from test_users import Users, ok
    url = os.environ.get(url_var)
    if not url:
        env.use_slurm()      # skips or fails as the other slurm tests do
        raise TestFailure("%s is not set" % url_var)
    u = Users().make()
    try:
        env.use_slurm("--allow-other", url=url)
        env.mkdir("queues/q")
        os.chmod(env.work, 0o777)
        ok(u.a, "mkdir", env.p("queues/q/groups/mine"))
        ok(u.a, "write", env.p("queues/q/groups/mine/spec.yaml"),
           "command: [\"/bin/sh\", \"-c\", \"id -u; id -g; touch %s/by-$(id -un)\"]\n" % env.work)
        g = "queues/q/groups/mine"
        env.wait(g, "Succeeded", timeout=60)
        logs = env.read(g + "/tasks/0/nodes/0/logs").split()
        check(logs[:2] == [str(u.pa.pw_uid), str(u.pa.pw_gid)], "ran as %s, want uid %d"
              % (logs, u.pa.pw_uid))
        check(os.stat(os.path.join(env.work, "by-" + u.a)).st_uid == u.pa.pw_uid, "file owner")
        segs = segments(env)
        check(len(segs) == 1, "segments: %s" % segs)
        owner = want_slurm_user(u)
        check(segs[0]["UserId"].startswith(owner + "("), "Slurm's job is %s's, want %s's"
              % (segs[0]["UserId"], owner))
    finally:
        env.stop()
        u.remove()


@case(timeout=120)
def test_slurm_user_local_auth(env):
    """Over the unix socket (local auth) the job is the daemon's in Slurm, and
    jobfs-shim drops to the spec's writer before it runs anything."""
    user_tasks(env, "JOBFS_SLURM_URL", lambda u: "root")


@case(timeout=120)
def test_slurm_user_jwt(env):
    """Over http with an admin's JWT the job is submitted as the spec's writer
    (X-SLURM-USER-NAME): Slurm runs it as them, accounts it to them."""
    r = subprocess.run(["scontrol", "token", "username=root", "lifespan=900"],
                       capture_output=True, text=True)
    tok = r.stdout.strip().split("=", 1)[-1]
    check(r.returncode == 0 and tok, "scontrol token: %s" % r.stderr)
    os.environ["SLURM_JWT"] = tok
    user_tasks(env, "JOBFS_SLURM_JWT_URL", lambda u: u.a)
