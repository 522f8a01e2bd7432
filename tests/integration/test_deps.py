"""Dependencies between groups (reference 10, `after:`) on a real mount.

A chain a -> b -> c and a fan-in, each waiting with reason Dependency
until what it names has succeeded; `when: failed` (a cleanup that runs
after a failure, and one Stopped with DependencyNeverSatisfied when its
target succeeds); `each: true` (task 0 of b runs before task 2 of a has
ended); entries across queues and /tasks; names that do not exist and
cycles refused with EINVAL where spec errors show; a removed target; the
jobfs/after annotation of a Kubernetes Job; a daemon restart with a group
waiting; and the chain and a never-satisfied entry on a real Slurm
cluster, where a group that waits is not submitted at all.

The targets' tasks hold until the test creates their GO file (outside the
mount), so the order is the test's, not a sleep's.
"""
import errno
import json
import os

from jfit import case, check

HOLD = "while [ ! -e %s ]; do sleep 0.1; done"


def go(env, name):
    return os.path.join(env.work, "go-" + name)


def release(path):
    open(path, "w").close()


def held(env, name, extra="", code=0):
    """A spec whose tasks hold until GO file `name` exists (per task:
    name-<index> when name ends in '-'), then exit with code."""
    path = go(env, name) + ("$JOB_TASK_INDEX" if name.endswith("-") else "")
    cmd = HOLD % path + "; exit %d" % code
    return extra + "command: [\"/bin/sh\", \"-c\", %s]\n" % json.dumps(cmd)


TRUE = 'command: ["true"]\n'


def mkgroup(env, name, queue="q"):
    g = os.path.join(env.queue(queue), "groups", name)
    env.mkdir(g)
    return g


def waits(env, g, words):
    """g waits for its entries: Waiting, reason Dependency, message with words."""
    st = env.status(g)
    check(st["state"] == "Waiting" and st.get("reason") == "Dependency" and
          words in st["message"], "%s: want Waiting for %r, got %s"
          % (g, words, json.dumps(st)[:600]))
    return st


def t_of(env, g, key):
    from jfit import rfc3339
    return rfc3339(env.status(g)[key])


@case(timeout=60)
def test_chain(env):
    a = env.group(held(env, "a"), name="a")
    b = env.group("after: [a]\n" + TRUE, name="b")
    c = env.group("after: [{group: queues/q/groups/b}]\n" + TRUE, name="c")
    env.wait(a, "Running")
    st = waits(env, b, "waiting for queues/q/groups/a to succeed")
    check(st["after"] == [{"group": "queues/q/groups/a", "when": "succeeded",
                           "each": False, "state": "waits"}], "b after: %s" % st["after"])
    waits(env, c, "waiting for queues/q/groups/b to succeed")
    # the YAML status shows the same, one line per entry
    text = env.read(b + "/status")
    check("reason: Dependency\n" in text and
          "after:\n- {group: queues/q/groups/a, when: succeeded, each: false, state: waits}\n"
          in text, "b status:\n%s" % text)
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:  # the same object as status.json
        check(yaml.safe_load(text)["after"] == st["after"], "YAML after: %s" % text)
    ev = env.read(b + "/events")
    check("Normal WaitingForDependency group waiting for queues/q/groups/a" in ev,
          "b events: %s" % ev)
    # nothing of b has run while a runs
    check(env.status(b + "/tasks/0")["state"] == "Waiting", "b task 0 ran")
    release(go(env, "a"))
    for g in (a, b, c):
        env.wait(g, "Succeeded", timeout=20)
    check(t_of(env, b, "started") >= t_of(env, a, "finished"), "b started before a ended")
    check(t_of(env, c, "started") >= t_of(env, b, "finished"), "c started before b ended")
    st = env.status(c)
    check(st["after"][0]["state"] == "holds" and st.get("reason", "") == "", "c: %s" % st)
    check("DependencySatisfied" in env.read(c + "/events"), "c events")


@case(timeout=60)
def test_fan_in(env):
    a = env.group(held(env, "fa"), name="a")
    b = env.group(held(env, "fb"), name="b")
    c = env.group("after: [a, b]\n" + TRUE, name="c")
    waits(env, c, "queues/q/groups/a to succeed, queues/q/groups/b to succeed")
    release(go(env, "fa"))
    env.wait(a, "Succeeded")
    # one holds, one waits: the message names what is left
    env.wait(c, pred=lambda s: s["after"][0]["state"] == "holds",
             what="after[0] to hold")
    st = waits(env, c, "waiting for queues/q/groups/b to succeed")
    check(st["after"][1]["state"] == "waits" and "groups/a" not in st["message"],
          "c: %s" % st)
    check(env.status(c + "/tasks/0")["state"] == "Waiting", "c ran before b ended")
    release(go(env, "fb"))
    env.wait(c, "Succeeded", timeout=20)
    check(t_of(env, c, "started") >= t_of(env, b, "finished"), "c started before b ended")


@case(timeout=60)
def test_when_failed(env):
    bad = env.group(held(env, "bad", "retries: 0\n", code=3), name="bad")
    good = env.group(held(env, "good"), name="good")
    cleanup = env.group("after: [{group: bad, when: failed}]\n" + TRUE, name="cleanup")
    never = env.group("after:\n  - {group: good, when: failed}\n" + TRUE, name="never")
    anyway = env.group("after: [{group: bad, when: finished}]\n" + TRUE, name="anyway")
    waits(env, cleanup, "waiting for queues/q/groups/bad to fail")
    waits(env, never, "waiting for queues/q/groups/good to fail")
    waits(env, anyway, "waiting for queues/q/groups/bad to finish")
    release(go(env, "bad"))
    env.wait(bad, "Failed")
    env.wait(cleanup, "Succeeded", timeout=20)
    env.wait(anyway, "Succeeded", timeout=20)
    # its target succeeds: the cleanup that waits for a failure never runs
    release(go(env, "good"))
    env.wait(good, "Succeeded")
    st = env.wait(never, "Stopped", timeout=20)
    check(st["message"] == "dependency never satisfied: after[0] needs "
          "queues/q/groups/good to have failed, and it ended Succeeded", "never: %s" % st)
    check(st["after"][0]["state"] == "never" and st["started"] == "", "never: %s" % st)
    check(env.status(never + "/tasks/0")["state"] == "Stopped", "never's task")
    ev = env.read(never + "/events")
    check("Warning DependencyNeverSatisfied group dependency never satisfied" in ev,
          "never events: %s" % ev)
    check("Warning DependencyNeverSatisfied group never: dependency never satisfied"
          in env.read("queues/q/events"), "queue events")


@case(timeout=60)
def test_each(env):
    a = env.group(held(env, "e-", "completions: 3\nparallelism: 1\n"), name="a")
    b = env.group("completions: 3\nafter: [{group: a, each: true}]\n" + TRUE, name="b")
    st = waits(env, b, "the paired tasks of queues/q/groups/a to succeed")
    check(st["after"][0]["each"] is True, "b: %s" % st)
    env.wait(a + "/tasks/0", "Running")
    release(go(env, "e-0"))
    # task 0 of b runs once task 0 of a has succeeded, while a's task 2
    # has not even started (parallelism 1)
    env.wait(b + "/tasks/0", "Succeeded", timeout=20)
    check(env.status(a + "/tasks/2")["state"] == "Waiting", "a's task 2 ran")
    check(env.status(b + "/tasks/1")["state"] == "Waiting" and
          env.status(b + "/tasks/2")["state"] == "Waiting", "b's tasks 1, 2 ran")
    # its task 1's pair is stopped: it can never run
    env.wait(a + "/tasks/1", "Running")
    check(env.ctl(a + "/tasks/1", "stop") == 0, "ctl stop")
    st = env.wait(b + "/tasks/1", "Stopped", timeout=20)
    check("pairs this task with task 1 of queues/q/groups/a, which ended Stopped" in
          st["message"], "b task 1: %s" % st)
    check("Warning DependencyNeverSatisfied tasks/1" in env.read(b + "/events"), "events")
    env.wait(a + "/tasks/2", "Running")
    check(env.status(b + "/tasks/2")["state"] == "Waiting", "b's task 2 ran early")
    release(go(env, "e-2"))
    st = env.wait(b, "Stopped", timeout=20)
    check(st["message"] == "2/3 tasks succeeded, 1 stopped" and st["succeeded"] == 2,
          "b: %s" % st)
    check(t_of(env, b + "/tasks/2", "started") >= t_of(env, a + "/tasks/2", "finished"),
          "b's task 2 started before its pair ended")


@case(timeout=60)
def test_across_queues_and_tasks(env):
    a = env.group(held(env, "x"), name="a")
    env.mkdir("tasks/x")
    env.submit("tasks/x", "count: 2\n" + held(env, "x"))
    env.queue("q2")
    b = mkgroup(env, "b", queue="q2")
    env.submit(b, "after: [queues/q/groups/a, tasks/x]\n" + TRUE)
    env.mkdir("tasks/y")
    # a bare name in a batch is a batch of /tasks
    env.submit("tasks/y", "count: 2\nafter: [x, {group: queues/q2/groups/b}]\n" + TRUE)
    waits(env, b, "queues/q/groups/a to succeed, tasks/x to succeed")
    waits(env, "tasks/y", "tasks/x to succeed, queues/q2/groups/b to succeed")
    release(go(env, "x"))
    env.wait(b, "Succeeded", timeout=20)
    env.wait("tasks/y", "Succeeded", timeout=20)
    check(t_of(env, "tasks/y", "started") >= t_of(env, b, "finished"), "y before b")
    check(env.status(a)["state"] == "Succeeded", "a")


@case(timeout=60)
def test_refused(env):
    g = mkgroup(env, "g")
    # a name that does not exist: EINVAL at close, and status and events say so
    rc = env.write(g + "/spec.yaml", TRUE + "after: [nope]\n")
    check(rc == errno.EINVAL, "unknown name: %s" % rc)
    st = env.status(g)
    check(st["state"] == "Invalid" and st["message"] ==
          "line 2: key 'after[0]': no group nope in queue q (make it first: mkdir "
          "queues/q/groups/nope)", "g: %s" % st)
    check("Warning Invalid group spec refused: line 2: key 'after[0]': no group nope" in
          env.read(g + "/events"), "events")
    rc = env.write(g + "/spec.yaml", TRUE + "after: [tasks/nope]\n")
    check(rc == errno.EINVAL and "no batch nope in /tasks" in env.status(g)["message"],
          "tasks/nope")
    # a bad shape: the line of the entry
    rc = env.write(g + "/spec.yaml", TRUE + "after:\n  - {group: a, when: later}\n")
    check(rc == errno.EINVAL and env.status(g)["message"].startswith(
        "line 3: key 'after[0].when': must be succeeded, failed or finished"),
        "when: %s" % env.status(g))
    # a cycle: x after y (a draft), then y after x
    y = mkgroup(env, "y")
    env.group("after: [y]\n" + TRUE, name="x")
    rc = env.write(y + "/spec.yaml", TRUE + "after: [x]\n")
    check(rc == errno.EINVAL, "cycle: %s" % rc)
    st = env.status(y)
    check(st["message"] == "line 2: key 'after[0]': waiting for queues/q/groups/x would make "
          "a cycle: queues/q/groups/y -> queues/q/groups/x -> queues/q/groups/y", "y: %s" % st)
    # itself
    rc = env.write(y + "/spec.yaml", TRUE + "after: [y]\n")
    check(rc == errno.EINVAL and "queues/q/groups/y is this group itself" in
          env.status(y)["message"], "self: %s" % env.status(y))
    # each: the task counts must match
    rc = env.write(y + "/spec.yaml", "completions: 2\n" + TRUE +
                   "after: [{group: x, each: true}]\n")
    check(rc == errno.EINVAL and "this group has 2 tasks and that one 1" in
          env.status(y)["message"], "each: %s" % env.status(y))
    # the write that fixes it is accepted
    env.submit(y, TRUE)


@case(timeout=60)
def test_target_removed(env):
    a = mkgroup(env, "a")  # a draft: it has not run
    b = env.group("after: [a]\n" + TRUE, name="b")
    c = env.group("after: [{group: b, when: finished}]\n" + TRUE, name="c")
    waits(env, b, "queues/q/groups/a to succeed")
    os.rename(env.p(a), env.p("queues/q/groups/a2"))
    waits(env, b, "queues/q/groups/a2 to succeed")
    os.rmdir(env.p("queues/q/groups/a2"))
    st = env.wait(b, "Stopped", timeout=20)
    check(st["message"] == "dependency never satisfied: after[0] queues/q/groups/a2 (when: "
          "succeeded) was removed before it ended", "b: %s" % st)
    check(st["after"] == [{"group": "queues/q/groups/a2", "when": "succeeded",
                           "each": False, "state": "never"}], "b after: %s" % st["after"])
    check("DependencyNeverSatisfied" in env.read(b + "/events"), "events")
    env.wait(c, "Succeeded", timeout=20)


JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: report
  annotations:
    jobfs/after: "[prep, {group: tasks/fetch, when: finished}]"
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["true"]
"""


@case(timeout=60)
def test_k8s_annotation(env):
    env.stop()
    env.daemon_args = ["--runtime", "host"]
    env.start()
    prep = env.group(held(env, "prep"), name="prep")
    env.mkdir("tasks/fetch")
    env.submit("tasks/fetch", held(env, "fetch", code=1) + "retries: 0\n")
    r = env.group(JOB, name="report")
    st = waits(env, r, "queues/q/groups/prep to succeed, tasks/fetch to finish")
    check(not any("after" in i for i in st["ignored"]), "ignored: %s" % st["ignored"])
    release(go(env, "fetch"))
    env.wait("tasks/fetch", "Failed")
    waits(env, r, "waiting for queues/q/groups/prep to succeed")
    release(go(env, "prep"))
    env.wait(r, "Succeeded", timeout=20)
    check(t_of(env, r, "started") >= t_of(env, prep, "finished"), "report before prep")
    # a bad annotation names its key and line
    bad = mkgroup(env, "bad")
    rc = env.write(bad + "/spec.yaml", JOB.replace("{group: tasks/fetch, when: finished}",
                                                   "{group: tasks/fetch, when: soon}"))
    check(rc == errno.EINVAL and env.status(bad)["message"].startswith(
        "line 6: key 'metadata.annotations.jobfs/after[1].when'"), "bad: %s" % env.status(bad))


@case(timeout=90)
def test_daemon_restart(env):
    a = env.group(held(env, "ra"), name="a")
    b = env.group("after: [a]\n" + TRUE, name="b")
    env.wait(a, "Running")
    waits(env, b, "waiting for queues/q/groups/a to succeed")
    env.remount()
    # a's node ran on; b still waits, and says why
    env.wait(a, "Running")
    waits(env, b, "waiting for queues/q/groups/a to succeed")
    check(env.status(b + "/tasks/0")["state"] == "Waiting", "b ran")
    release(go(env, "ra"))
    env.wait(a, "Succeeded", timeout=20)
    env.wait(b, "Succeeded", timeout=20)
    # and a dependent whose target is a draft across a restart
    d = mkgroup(env, "d")
    e = env.group("after: [d]\n" + TRUE, name="e")
    env.remount()
    waits(env, e, "waiting for queues/q/groups/d to succeed")
    env.submit(d, TRUE)
    env.wait(e, "Succeeded", timeout=20)


# ---- the Slurm backend ----

def submissions(env, name):
    """Batches jobfs handed Slurm for group `name` (from the store)."""
    import sqlite3
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(env.state, "jobfs.db"), uri=True,
                         timeout=5)
    n = db.execute("SELECT count(*) FROM submissions WHERE group_id IN "
                   "(SELECT id FROM groups WHERE dirname = ?)", (name,)).fetchone()[0]
    db.close()
    return n


@case(timeout=120)
def test_slurm_chain(env):
    env.use_slurm()
    a = env.group(held(env, "sa"), name="a")
    b = env.group("after: [a]\n" + TRUE, name="b")
    c = env.group("after: [b]\n" + TRUE, name="c")
    env.wait(a, "Running", timeout=60)
    waits(env, b, "waiting for queues/q/groups/a to succeed")
    waits(env, c, "waiting for queues/q/groups/b to succeed")
    # held in jobfs: nothing of b or c went to Slurm
    check(submissions(env, "a") == 1 and submissions(env, "b") == 0 and
          submissions(env, "c") == 0, "submissions: a %d b %d c %d"
          % (submissions(env, "a"), submissions(env, "b"), submissions(env, "c")))
    release(go(env, "sa"))
    env.wait(b, "Succeeded", timeout=60)
    env.wait(c, "Succeeded", timeout=60)
    check(t_of(env, b, "started") >= t_of(env, a, "finished"), "b started before a ended")
    check(t_of(env, c, "started") >= t_of(env, b, "finished"), "c started before b ended")


@case(timeout=120)
def test_slurm_never(env):
    env.use_slurm()
    a = env.group(held(env, "sn", "retries: 0\n", code=2), name="a")
    b = env.group("after: [a]\n" + TRUE, name="b")
    cleanup = env.group("after: [{group: a, when: failed}]\n" + TRUE, name="cleanup")
    env.wait(a, "Running", timeout=60)
    waits(env, b, "queues/q/groups/a")
    release(go(env, "sn"))
    env.wait(a, "Failed", timeout=60)
    st = env.wait(b, "Stopped", timeout=30)
    check("dependency never satisfied: after[0] needs queues/q/groups/a to have succeeded, "
          "and it ended Failed" == st["message"], "b: %s" % st)
    check("DependencyNeverSatisfied" in env.read(b + "/events"), "b events")
    env.wait(cleanup, "Succeeded", timeout=60)
    check(submissions(env, "b") == 0, "b was submitted to Slurm")
