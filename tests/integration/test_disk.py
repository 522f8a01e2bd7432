"""The state directory does not fill (issue 19, point 6).

On a real mount with real processes:
- 10,000 trivial tasks (2,000 under a sanitizer, which runs them 3-4 times
  slower) leave at most 4 KiB per task in the state directory (the
  database, its WAL, runs/ and ckpt/, measured with `du` as the disk
  counts blocks): an ended attempt keeps only its non-empty output and
  work files, a finished task's empty checkpoint directory goes;
- a task with output keeps it: `cat logs` still reads it, also after a
  remount;
- `rmdir` of a finished group frees its run directories (rm -rf of the
  group through the mount), its ledger rows and billing stay.
The retention setting (--keep-logs, a queue's keep_logs) is time-based:
tests/unit/test_engine.c covers it with the injected clock.
"""
import os

from jfit import case, check, sanitized

TRIVIAL = 'completions: %d\nparallelism: 200\ncommand: ["true"]\n'
LOUD = ('completions: 3\ncommand: ["/bin/sh", "-c", '
        '"echo out-$JOB_COMPLETION_INDEX; echo result > out.txt"]\n')


def du_bytes(env, *parts):
    """Disk use (blocks, as du counts) of paths under the state directory."""
    total = 0
    for p in parts:
        path = os.path.join(env.state, p)
        if not os.path.exists(path):
            continue
        out = env.sh("du -s -B1 %s" % path, timeout=120).stdout
        total += int(out.split()[0])
    return total


def run_dirs(env):
    return sorted(os.listdir(os.path.join(env.state, "runs")))


@case(timeout=900)
def test_state_dir_per_task(env):
    # per task, with the fixed part spread over thousands (ASan: fewer, same bound)
    n = 2000 if sanitized() else 4000
    before = du_bytes(env, "jobfs.db", "jobfs.db-wal", "runs", "ckpt")
    g = env.group(TRIVIAL % n, name="many")
    env.wait(g, "Succeeded", timeout=840)
    # the last ends are tidied a tick after their commit
    env.poll_until(lambda: run_dirs(env) == [], 30, "runs/ to empty: %r" % run_dirs(env)[:5])
    env.poll_until(lambda: os.listdir(os.path.join(env.state, "ckpt")) == [], 30,
                   "ckpt/ to empty")
    used = du_bytes(env, "jobfs.db", "jobfs.db-wal", "runs", "ckpt") - before
    per = used / n
    print("state directory: %d bytes for %d tasks, %.0f bytes a task" % (used, n, per))
    check(per <= 4096, "%.0f bytes a task, want at most 4096" % per)
    # rm -rf of the group: gone, nothing left behind, the database grows no more
    env.sh("rm -rf %s" % g, timeout=120)
    check(not os.path.exists(env.p(g)), "the group is still there")
    check(run_dirs(env) == [], "run directories after rm -rf")
    after = du_bytes(env, "jobfs.db", "jobfs.db-wal", "runs", "ckpt") - before
    print("after rm -rf: %d bytes" % after)
    check(after <= used + 8 * 1024 * 1024, "rm -rf grew the state by %d bytes" % (after - used))


@case(timeout=120)
def test_output_kept_records_gone(env):
    g = env.group(LOUD, name="loud")
    env.wait(g, "Succeeded", timeout=30)
    logs = os.path.join(g, "tasks", "1", "nodes", "0", "logs")
    # the tidying unlinks a run's records one by one: wait for all of them
    env.poll_until(lambda: all(
        sorted(os.listdir(os.path.join(env.state, "runs", d, "1"))) == ["logs", "stdout", "work"]
        for d in run_dirs(env)), 20, "the records to go")
    for d in run_dirs(env):
        have = sorted(os.listdir(os.path.join(env.state, "runs", d, "1")))
        check(have == ["logs", "stdout", "work"], "runs/%s/1 holds %r" % (d, have))
        check(os.listdir(os.path.join(env.state, "runs", d, "1", "work")) == ["out.txt"],
              "work files")
    check(env.read(logs) == "out-1\n", "logs: %r" % env.read(logs))
    check(env.read(os.path.join(g, "tasks", "1", "nodes", "0", "stderr")) == "", "stderr")
    env.sh("tail -n 1 %s" % logs)
    env.remount()
    check(env.read(logs) == "out-1\n", "logs after remount: %r" % env.read(logs))


@case(timeout=120)
def test_rmdir_frees(env):
    g = env.group(LOUD, name="loud")
    env.wait(g, "Succeeded", timeout=30)
    keep = env.group('command: ["/bin/sh", "-c", "echo other"]\n', name="other", queue="o")
    env.wait(keep, "Succeeded", timeout=30)
    env.poll_until(lambda: len(run_dirs(env)) == 4, 20, "4 run directories: %r" % run_dirs(env))
    rows = [r for r in env.ledger() if r["group"] == "loud"]
    check(len(rows) == 3, "ledger rows: %d" % len(rows))
    summary = env.read("billing/summary")
    env.sh("rm -rf %s" % g)
    env.poll_until(lambda: len(run_dirs(env)) == 1, 20,
                   "rm -rf to free the run directories: %r" % run_dirs(env))
    check(env.read(os.path.join(keep, "tasks", "0", "nodes", "0", "logs")) == "other\n",
          "another group's logs")
    check([r for r in env.ledger() if r["group"] == "loud"] == rows, "ledger rows changed")
    check(env.read("billing/summary") == summary, "billing/summary changed")
    ev = env.read("queues/q/events")
    check(" Normal Removed group loud (Succeeded), 6 directories of its runs and checkpoints "
          "freed" in ev,
          "queue events:\n%s" % ev)
