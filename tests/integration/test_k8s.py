"""Kubernetes batch/v1 Jobs: the import, and every fixture in
tests/fixtures/k8s ending as its README says Kubernetes ends it."""
import os
import subprocess

import jfit
from jfit import Skip, TestFailure, case, check, pid_alive

# The examples are Kubernetes' own, with images from the internet (busybox,
# perl) that this machine cannot pull: they test Kubernetes' semantics, so
# their commands run on the host (reference 8.1, --runtime host).
DAEMON_ARGS = ["--runtime", "host"]


def examples_dir():
    return os.path.join(jfit.repo_root(), "tests", "fixtures", "k8s")


def example(name):
    """A fixture's text; a missing one fails the test, never skips it."""
    path = os.path.join(examples_dir(), name)
    if not os.path.isfile(path):
        raise TestFailure("fixture %s is missing" % path)
    with open(path) as f:
        return f.read()


def task_states(env, g, n):
    return [env.status(os.path.join(g, "tasks/%d" % i)) for i in range(n)]


def attempts_by_task(env, group):
    """ledger rows per task index, for one group (one row per attempt)."""
    out = {}
    for r in env.ledger():
        if r["group"] == group:
            out.setdefault(int(r["task"]), []).append(int(r["attempt"]))
    return out


def wait_all_ended(env, g, n, keep=()):
    """The group's verdict comes first; its running nodes are then killed.
    Wait for every task (but `keep`) to leave Waiting/Running; return states."""
    def ended():
        sts = task_states(env, g, n)
        if all(i in keep or t["state"] not in ("Running", "Initializing", "Waiting")
               for i, t in enumerate(sts)):
            return sts
        return None
    return env.poll_until(ended, 15, "the other tasks to be terminated")


def no_live_pids(env, g, n):
    for i in range(n):
        ns = env.status(os.path.join(g, "tasks/%d/nodes/0" % i))
        pid = ns.get("pid")
        if isinstance(pid, int) and pid > 0 and ns["state"] not in ("Running", "Initializing"):
            check(not pid_alive(pid), "task %d node pid %d still alive in state %s"
                  % (i, pid, ns["state"]))


JOB_WITH_EXTRAS = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: ${JOB_NAME}
  labels:
    team: research
spec:
  ttlSecondsAfterFinished: 100
  completions: 2
  parallelism: 2
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["/bin/sh", "-c", "echo k8s $JOB_COMPLETION_INDEX of $JOB_NAME"]
"""


@case(timeout=60)
def test_job_import_ignored_fields(env):
    g = env.group(JOB_WITH_EXTRAS, name="k8s-job")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=30)
    check(st["state"] == "Succeeded", "job ended %s: %s" % (st["state"], st["message"]))
    check(st["name"] == "k8s-job", "display name %r, want 'k8s-job'" % st["name"])
    check(st["completions"] == 2 and st["progress"] == "2/2", "counts: %s" % st)
    ign = st.get("ignored")
    check(isinstance(ign, list), "status.json ignored is not a list: %r" % ign)
    check(any("ttlSecondsAfterFinished" in x for x in ign),
          "spec.ttlSecondsAfterFinished not under ignored: %r" % ign)
    check(any("labels" in x for x in ign), "metadata.labels not under ignored: %r" % ign)
    # the YAML status lists them too, under `ignored:`
    text = env.read(os.path.join(g, "status"))
    lines = text.splitlines()
    check("ignored:" in lines, "no `ignored:` line in status:\n%s" % text)
    after = lines[lines.index("ignored:") + 1:]
    items = [l[2:] for l in after if l.startswith("- ")]
    check(any("ttlSecondsAfterFinished" in x for x in items), "status ignored: %r" % items)
    for i in (0, 1):
        logs = env.read(os.path.join(g, "tasks/%d/nodes/0/logs" % i))
        check(logs == "k8s %d of k8s-job\n" % i, "task %d logs: %r" % (i, logs))


@case(timeout=60)
def test_job_unknown_variable_refused(env):
    env.queue()
    g = "queues/q/groups/badvar"
    env.mkdir(g)
    rc = env.write(os.path.join(g, "spec.yaml"), JOB_WITH_EXTRAS.replace("${JOB_NAME}", "${NOPE}"))
    check(rc == 22, "unknown ${NOPE} should be EINVAL, got %s" % rc)
    st = env.status(g)
    check(st["state"] == "Invalid" and "NOPE" in st["message"], "status: %s" % st)


@case(timeout=60)
def test_example_pi(env):
    spec = example("job.yaml")
    r = subprocess.run(["perl", "-Mbignum=bpi", "-wle", "print bpi(1000)"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip("host perl cannot run the pi example: %s" % r.stderr.strip())
    g = env.group(spec, name="pi")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=40)
    check(st["state"] == "Succeeded", "pi ended %s: %s" % (st["state"], st["message"]))
    check(st["name"] == "pi", "display name %r" % st["name"])
    logs = env.read(os.path.join(g, "tasks/0/nodes/0/logs"))
    check(logs.startswith("3.14159265358979323846"), "pi logs: %r" % logs[:80])
    check(logs == r.stdout, "pi logs differ from perl's own (%d vs %d bytes)"
          % (len(logs), len(r.stdout)))
    digits = logs.strip().split(".")[1]
    check(len(digits) >= 999, "only %d decimals" % len(digits))


@case(timeout=60)
def test_example_backoff_limit_per_index(env):
    g = env.group(example("job-backoff-limit-per-index-example.yaml"), name="bli")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=45)
    check(st["state"] == "Failed", "job ended %s: %s" % (st["state"], st["message"]))
    ts = task_states(env, g, 10)
    failed = [i for i, t in enumerate(ts) if t["state"] == "Failed"]
    ok = [i for i, t in enumerate(ts) if t["state"] == "Succeeded"]
    check(failed == [0, 2, 4, 6, 8], "failed indexes %r, want 0,2,4,6,8" % failed)
    check(ok == [1, 3, 5, 7, 9], "succeeded indexes %r, want odd ones" % ok)
    att = attempts_by_task(env, "bli")
    for i in range(10):
        want = [1, 2] if i % 2 == 0 else [1]
        check(sorted(att.get(i, [])) == want, "index %d ran attempts %r, want %r"
              % (i, sorted(att.get(i, [])), want))
        logs = env.read(os.path.join(g, "tasks/%d/nodes/0/logs" % i))
        check(logs == "Hello world\n", "index %d logs %r" % (i, logs))
    for i in (0, 2):
        prev = env.read(os.path.join(g, "tasks/%d/nodes/0/logs.prev" % i))
        check(prev == "Hello world\n", "index %d logs.prev %r" % (i, prev))
    check(st["succeeded"] == 5 and st["failed"] == 5, "counts: %s" % st)


@case(timeout=60)
def test_example_backoff_limit_per_index_failindex(env):
    g = env.group(example("job-backoff-limit-per-index-failindex.yaml"), name="fi")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=45)
    check(st["state"] == "Failed", "job ended %s: %s" % (st["state"], st["message"]))
    ts = task_states(env, g, 4)
    states = [t["state"] for t in ts]
    check(states == ["Failed", "Failed", "Succeeded", "Succeeded"],
          "task states %r, want Failed,Failed,Succeeded,Succeeded" % states)
    att = attempts_by_task(env, "fi")
    check(sorted(att.get(0, [])) == [1, 2], "index 0 attempts %r, want 2" % att.get(0))
    check(sorted(att.get(1, [])) == [1], "index 1 attempts %r, want 1 (FailIndex)" % att.get(1))
    check(sorted(att.get(2, [])) == [1] and sorted(att.get(3, [])) == [1],
          "indexes 2,3 attempts %r %r" % (att.get(2), att.get(3)))
    n1 = env.status(os.path.join(g, "tasks/1/nodes/0"))
    check(n1["exit_code"] == 42, "index 1 exit code %r" % n1["exit_code"])


@case(timeout=60)
def test_example_pod_failure_policy(env):
    g = env.group(example("job-pod-failure-policy-example.yaml"), name="pfp")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=40)
    check(st["state"] == "Failed", "job ended %s: %s" % (st["state"], st["message"]))
    # FailJob ends it at the first 42: of 12 completions at 3 at a time,
    # only the first three ever ran (the attempts below)
    check(st["succeeded"] == 0, "succeeded %s" % st["succeeded"])
    att = attempts_by_task(env, "pfp")
    nruns = sum(len(v) for v in att.values())
    check(nruns <= 3, "%d attempts ran; FailJob allows no retries, 3 at once: %r" % (nruns, att))
    check(all(v == [1] for v in att.values()), "a task was retried: %r" % att)
    ts = wait_all_ended(env, g, 12)
    for i, t in enumerate(ts):
        check(t["state"] not in ("Running", "Initializing", "Waiting", "Succeeded"),
              "task %d still %s after FailJob" % (i, t["state"]))
    no_live_pids(env, g, 12)
    logs = env.read(os.path.join(g, "tasks/0/nodes/0/logs"))
    check("Hello world!" in logs, "task 0 logs %r" % logs)


@case(timeout=60)
def test_example_success_policy(env):
    # The policy is met only if index 2's success is seen before
    # backoffLimit + 1 = 7 failures (Kubernetes' controller checks the
    # policy first among the pods one sync sees); processes that all exit
    # at once end in no set order, so the failing indexes fail 3 s late
    # (as in test_slurm's run of the examples).
    text = example("job-success-policy.yaml")
    late = text.replace("          exit 1\n", "          sleep 3; exit 1\n")
    check(late != text, "the success-policy example changed: %r" % text)
    g = env.group(late, name="sp")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=40)
    check(st["state"] == "Succeeded", "job ended %s: %s" % (st["state"], st["message"]))
    check(st["name"] == "job-success" or st["name"] == "sp",
          "display name %r" % st["name"])
    ts = wait_all_ended(env, g, 10)
    check(ts[2]["state"] == "Succeeded", "index 2 is %s" % ts[2]["state"])
    for i, t in enumerate(ts):
        if i == 2:
            continue
        check(t["state"] not in ("Running", "Initializing", "Waiting", "Succeeded"),
              "index %d is %s; it should be stopped/terminated" % (i, t["state"]))
    no_live_pids(env, g, 10)
