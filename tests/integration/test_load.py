"""Load (issue 5 item 4): many shells submitting groups at once, thousands
of short tasks through one queue, readers doing `tail -f` and status reads
all the while; then the same again, to see the daemon's memory stay flat.

Per round:
  - N submitters, real `sh` processes, all started first and held at a
    barrier (`flock -s` on a file the test holds exclusively), then let go
    together; each does `mkdir queues/q/groups/rR-sI && cat SPEC >
    .../spec.yaml` and records when it was done.  The groups' completions
    add up to T tasks (a few big groups, many small ones); every task is
    `sh -c` appending "GROUP INDEX ATTEMPT" to one file outside the mount
    and echoing a line to its log.  One queue, capacity 64; CPU-only nodes
    of 100m, so capacity, not cores, is what bounds them.
  - M readers, real processes, started before the submitters: half `tail -f`
    (on the logs of long-running "ticker" nodes, an independent batch that
    prints a numbered line every 0.1 s until told to stop, and on the logs
    of the round's big groups' first task), half Python loops that time
    every open+read+close of the queue's status or of a group's `status` /
    `status.json` (listing `groups/` twice a second) and check what they read.
Checks: every submitter exited 0; every group was accepted and ends
Succeeded with completions/completions; every task ran exactly once (the
record file); no reader saw an error (no EIO, ENOTCONN, empty or cut
content; tail prints nothing on stderr and its output is the ticker's lines
in order, ending with the last one); the daemon's file descriptors are the
same after each round; and, in a build without sanitizers, the daemon's RSS
after the last round (idle) is at most RSS after the first round + 10 % +
2 MiB (ASan's quarantine and shadow make its RSS meaningless: reported only).

Reported (printed; run.py -v shows it; also JSON in $JOBFS_LOAD_REPORT,
keyed by variant): submit latency from the release, tasks/s through the
queue, p50/p99/max of the status reads under load beside the same read on
the idle daemon, RSS before/peak/after each round, daemon CPU per task, and
the longest turn of the daemon's loop (what it says on stderr).

Sizes: the default variant is N=40, T=500, M=10 per round (two rounds, well
under a minute in a plain build); `--long` adds load_long: N=200, T=10,000,
M=50 per round, two rounds (about ten minutes on 2 cores).
JOBFS_LOAD_SUBMITTERS, JOBFS_LOAD_TASKS, JOBFS_LOAD_READERS,
JOBFS_LOAD_ROUNDS override the sizes of whichever variant runs.
"""
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

from jfit import TestFailure, case, check, sanitized

CAPACITY = 64

SIZES = {
    "default": dict(submitters=40, tasks=1000, readers=10, rounds=2),
    "long": dict(submitters=200, tasks=10000, readers=50, rounds=2),
}

TASK_CMD = 'echo "$JOB_GROUP $JOB_TASK_INDEX $JOB_ATTEMPT" >> "$REC"; echo "task $JOB_TASK_INDEX"'

TICK_CMD = ('i=0; while [ ! -e "$STOP" ]; do echo "tick $i"; i=$((i+1)); sleep 0.1; done; '
            'echo "last $i"')

# a submitter: ready, wait for the release, submit, record when done
SUBMIT_SH = ('touch "$READY/$I" && flock -s "$LOCK" true && mkdir "$G" && '
             'cat "$SPEC" > "$G/spec.yaml" && date +%s.%N > "$DONE/$I"')

# a tail reader: wait for the file to exist, then follow it
TAIL_SH = 'while [ ! -e "$F" ]; do sleep 0.2; done; exec tail -f "$F"'

# a status reader: time each open+read+close of the queue's status or of a
# submitted group's status / status.json until $STOP exists; the groups it
# reads are those whose submitter is done (the files in DONE, local).  With
# mode "ls" it times `os.listdir(groups/)` instead (a directory that 200
# mkdirs are changing at once).
STATUS_PY = r"""
import json, os, random, sys, time
mode, qdir, done, stop, out, seed, pause, prefix = sys.argv[1:9]
pause = float(pause)
rnd = random.Random(int(seed))
lat, errs, names, n, slow = [], [], [], 0, []
t_begin = last_names = time.monotonic()
while not os.path.exists(stop):
    t = time.perf_counter()
    if mode == "ls":
        p = os.path.join(qdir, "groups")
        try:
            got = os.listdir(p)
        except OSError as e:
            errs.append("listdir %s: %r" % (p, e))
            continue
        dt = time.perf_counter() - t
        if not all(x.startswith("r") for x in got):
            errs.append("listdir %s: odd names %r" % (p, got[:5]))
    else:
        if time.monotonic() - last_names > 0.2 or not names:
            names = [prefix + x for x in os.listdir(done)]
            last_names = time.monotonic()
        r = rnd.random()
        if r < 0.3 or not names:
            p = os.path.join(qdir, "status")
        else:
            p = os.path.join(qdir, "groups", rnd.choice(names),
                             "status" if r < 0.8 else "status.json")
        t = time.perf_counter()
        try:
            with open(p, "rb") as f:
                data = f.read()
        except OSError as e:
            errs.append("%s: %r" % (p, e))
            continue
        dt = time.perf_counter() - t
        if p.endswith(".json"):
            try:
                ok = "state" in json.loads(data)
            except ValueError:
                ok = False
        else:
            ok = data.startswith(b"state: ") and data.endswith(b"\n")
        if not ok:
            errs.append("%s: bad content %r" % (p, data[:200]))
    lat.append(dt)
    n += 1
    if dt > 0.1:
        slow.append([time.time() - dt, round(dt, 4), p])
    if len(errs) > 50:
        break
    if pause:
        time.sleep(pause)
with open(out, "w") as f:
    json.dump({"mode": mode, "n": n, "lat": lat, "errors": errs, "slow": slow,
               "secs": time.monotonic() - t_begin}, f)
"""




def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def ms(secs):
    return None if secs != secs else round(secs * 1000, 3)


def proc_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise TestFailure("no %s in /proc/%d/status" % (key, pid))


def proc_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


class RssSampler(threading.Thread):
    """VmRSS of the daemon every 0.2 s; peak() over a time span."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.samples = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.samples.append((time.monotonic(), proc_kib(self.pid, "VmRSS")))
            except (OSError, TestFailure):
                return
            self.stop.wait(0.2)

    def peak(self, t0, t1):
        xs = [r for t, r in self.samples if t0 <= t <= t1]
        return max(xs) if xs else 0


def sizes(variant):
    s = dict(SIZES[variant])
    for k in s:
        v = os.environ.get("JOBFS_LOAD_" + k.upper())
        if v:
            s[k] = int(v)
    return s


def split_tasks(n_groups, total):
    """Completions per group: one group in 20 is big (half the tasks
    between them), the rest share the other half; sums to total."""
    big = [i for i in range(n_groups) if i % 20 == 0]
    small = [i for i in range(n_groups) if i % 20 != 0]
    if not small:
        big, small = [], big
    out = [0] * n_groups
    for part, idx in ((total // 2 if big else 0, big), (total - (total // 2 if big else 0), small)):
        for k, i in enumerate(idx):
            out[i] = part // len(idx) + (1 if k < part % len(idx) else 0)
    check(sum(out) == total and min(out) >= 1,
          "split of %d tasks over %d groups: %r" % (total, n_groups, out))
    return out, big


def group_spec(completions, rec):
    return ("completions: %d\n"
            'command: ["/bin/sh", "-c"]\n'
            "args: %s\n"
            "env: %s\n"
            "resources: {limits: {cpu: 100m, memory: 64Mi}}\n"
            % (completions, json.dumps([TASK_CMD]), json.dumps({"REC": rec})))


def settle(pid, secs=3.0):
    """The load is over (nothing running, readers gone): let the daemon
    settle for `secs`, then its RSS, the anonymous part of it (its heap and
    stacks; the rest is shared libraries' pages), fds, and CPU use over 2 s
    (ms/s)."""
    time.sleep(secs)
    rss, anon, fds = proc_kib(pid, "VmRSS"), proc_kib(pid, "RssAnon"), nfds(pid)
    c0 = proc_cpu_s(pid)
    time.sleep(2.0)
    return rss, anon, fds, round((proc_cpu_s(pid) - c0) * 1000 / 2.0, 1)


def status_baseline(env, q, n=300):
    lat = []
    p = env.p(q, "status")
    for _ in range(n):
        t = time.perf_counter()
        with open(p, "rb") as f:
            f.read()
        lat.append(time.perf_counter() - t)
    return lat


def one_round(env, r, sz, q, sampler, asan):
    pid = env.daemon.pid
    t_setup = time.monotonic()
    w = os.path.join(env.work, "r%d" % r)
    for d in ("ready", "done", "spec", "tail", "stat"):
        os.makedirs(os.path.join(w, d))
    rec = os.path.join(w, "rec")
    open(rec, "w").close()
    os.chmod(w, 0o777)
    os.chmod(rec, 0o666)
    stop = os.path.join(w, "STOP")
    lock = os.path.join(w, "lock")
    n, total, m = sz["submitters"], sz["tasks"], sz["readers"]
    comps, big = split_tasks(n, total)
    names = ["r%d-s%03d" % (r, i) for i in range(n)]
    gdir = lambda i: os.path.join(q, "groups", names[i])  # noqa: E731

    # the tickers: an independent batch, outside the queue
    ntick = max(1, m // 10)
    tick = "tasks/tick-r%d" % r
    env.mkdir(tick)
    env.submit(tick, "count: %d\n"
                     'command: ["/bin/sh", "-c"]\n'
                     "args: %s\n"
                     "env: %s\n"
                     "resources: {limits: {cpu: 100m, memory: 64Mi}}\n"
               % (ntick, json.dumps([TICK_CMD]), json.dumps({"STOP": stop})))
    tick_logs = ["%s/%d-tick-r%d/nodes/0/logs" % (tick, i + 1, r) for i in range(ntick)]
    for t in range(ntick):
        env.wait(os.path.dirname(os.path.dirname(os.path.dirname(tick_logs[t]))),
                 "Running", timeout=30)

    # readers: half tail -f, half status loops
    ntail = m // 2
    nstat = m - ntail
    tails = []
    for k in range(ntail):
        if k % 2 == 0 or not big:
            f, kind = tick_logs[(k // 2) % ntick], "tick"
        else:
            f, kind = os.path.join(gdir(big[(k // 2) % len(big)]), "tasks/0/nodes/0/logs"), "task"
        out = open(os.path.join(w, "tail", "%d.out" % k), "wb")
        err = open(os.path.join(w, "tail", "%d.err" % k), "wb")
        p = env.popen(["sh", "-c", TAIL_SH], stdout=out, stderr=err,
                      env=dict(os.environ, F=env.p(f)), cwd=env.work)
        out.close()
        err.close()
        tails.append((p, kind, k))
    stats = []
    for k in range(nstat):
        mode = "ls" if k % 5 == 4 else "status"
        out = os.path.join(w, "stat", "%d.json" % k)
        p = env.popen([sys.executable, "-c", STATUS_PY, mode, env.p(q), os.path.join(w, "done"),
                       stop, out, str(r * 1000 + k), "0.01", "r%d-s" % r],
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=env.work)
        stats.append((p, out))

    # the submitters, held at the barrier
    lockf = open(lock, "w")
    fcntl.flock(lockf, fcntl.LOCK_EX)
    subs = []
    for i in range(n):
        spec = os.path.join(w, "spec", "%d.yaml" % i)
        with open(spec, "w") as f:
            f.write(group_spec(comps[i], rec))
        e = dict(os.environ, READY=os.path.join(w, "ready"), DONE=os.path.join(w, "done"),
                 LOCK=lock, G=env.p(gdir(i)), SPEC=spec, I="%03d" % i)
        subs.append(env.popen(["sh", "-c", SUBMIT_SH], env=e, cwd=env.work,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    env.poll_until(lambda: len(os.listdir(os.path.join(w, "ready"))) == n, 60,
                   "all %d submitters at the barrier" % n)
    time.sleep(0.3)                     # let the last ones block in flock
    cpu0 = proc_cpu_s(pid)
    t_rel_wall, t_rel = time.time(), time.monotonic()
    fcntl.flock(lockf, fcntl.LOCK_UN)
    lockf.close()

    errs = []
    sub_limit = max(120.0, 2.0 * n)
    for i, p in enumerate(subs):
        try:
            _, e = p.communicate(timeout=max(5.0, sub_limit - (time.monotonic() - t_rel)))
        except subprocess.TimeoutExpired:
            raise TestFailure("submitter %d (%s) still running %.0f s after the release"
                              % (i, names[i], sub_limit))
        if p.returncode != 0:
            errs.append("submitter %d (%s) exited %d: %s"
                        % (i, names[i], p.returncode, e.decode(errors="replace").strip()[-300:]))
    t_subs = time.monotonic() - t_rel
    check(not errs, "%d of %d submitters failed: %s" % (len(errs), n, "; ".join(errs[:5])))
    sub_lat = []
    for i in range(n):
        with open(os.path.join(w, "done", "%03d" % i)) as f:
            sub_lat.append(float(f.read()) - t_rel_wall)
    # every submission accepted (a refused one would be Invalid / Draft)
    for i in range(n):
        st = env.status(gdir(i))
        check(st["state"] not in ("Draft", "Invalid") and st["completions"] == comps[i],
              "group %s after its submitter exited: %s" % (names[i], json.dumps(st)[:400]))

    # all tasks through the queue
    done_before = sum(r0["tasks"] for r0 in env.load_rounds)
    want = done_before + total
    limit = max(60.0, total / (3.0 if asan else 6.0))

    def queue_done(s):
        check(s["failed"] == 0, "the queue shows failed tasks: %s" % json.dumps(s)[:400])
        return s["succeeded"] >= want and s["running"] == 0 and s["waiting"] == 0
    qs = env.wait(q, pred=queue_done, timeout=limit, what="%d tasks to succeed" % want)
    t_run = time.monotonic() - t_rel
    cpu1 = proc_cpu_s(pid)
    check(qs["succeeded"] == want, "queue succeeded %s, want %d" % (qs["succeeded"], want))
    for i in range(n):
        st = env.wait(gdir(i), ("Succeeded", "Failed", "Stopped"), timeout=10)
        check(st["state"] == "Succeeded" and st["succeeded"] == comps[i]
              and st["progress"] == "%d/%d" % (comps[i], comps[i]) and st["failed"] == 0,
              "group %s: %s" % (names[i], json.dumps(st)[:400]))
    # every task ran exactly once
    with open(rec) as f:
        lines = f.read().splitlines()
    seen = {}
    for line in lines:
        g, idx, att = line.split()
        seen[(g, int(idx))] = seen.get((g, int(idx)), 0) + 1
    want_keys = {(names[i], t) for i in range(n) for t in range(comps[i])}
    check(set(seen) == want_keys,
          "tasks that ran differ from those submitted: missing %r, extra %r"
          % (sorted(want_keys - set(seen))[:5], sorted(set(seen) - want_keys)[:5]))
    twice = [k for k, c in seen.items() if c != 1]
    check(not twice, "%d tasks ran more than once: %r" % (len(twice), twice[:5]))

    # stop the readers and the tickers
    open(stop, "w").close()
    env.wait(tick, ("Succeeded", "Failed", "Stopped"), timeout=30)
    check(env.status(tick)["state"] == "Succeeded", "tickers: %s" % env.status(tick))
    lat = {"status": [], "ls": []}
    nreads = {"status": 0, "ls": 0}
    rsecs = {"status": 0.0, "ls": 0.0}
    slow = []
    for p, out in stats:
        try:
            _, e = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            raise TestFailure("a status reader did not stop")
        check(p.returncode == 0, "status reader exited %d: %s"
              % (p.returncode, e.decode(errors="replace")[-500:]))
        with open(out) as f:
            res = json.load(f)
        check(not res["errors"], "a status reader (%s) saw %d errors: %s"
              % (res["mode"], len(res["errors"]), res["errors"][:5]))
        lat[res["mode"]] += res["lat"]
        nreads[res["mode"]] += res["n"]
        rsecs[res["mode"]] += res["secs"]
        slow += res["slow"]
    with open(os.path.join(w, "slow.json"), "w") as f:
        json.dump(sorted(slow), f)
    # tail -f: the ticker's lines in order up to its last; a task's line
    expect = {}
    for t in range(ntick):
        text = env.read(tick_logs[t])
        check(text.endswith("\n") and text.splitlines()[-1].startswith("last "),
              "ticker %d log ends %r" % (t, text[-80:]))
        expect[tick_logs[t]] = text.splitlines()[-1]

    def tail_out(k):
        with open(os.path.join(w, "tail", "%d.out" % k)) as f:
            return f.read()
    for p, kind, k in tails:
        f = tick_logs[(k // 2) % ntick] if kind == "tick" else None
        last = expect[f] if f else "task 0"
        try:
            env.poll_until(lambda: last in tail_out(k).splitlines(), 10,
                           "tail -f %d (%s) to show %r" % (k, kind, last))
        finally:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
            p.wait(5)
        with open(os.path.join(w, "tail", "%d.err" % k)) as fe:
            err = fe.read()
        check(err == "", "tail -f %d (%s) wrote on stderr: %r" % (k, kind, err[:300]))
        if kind == "tick":
            got = tail_out(k).splitlines()
            nums = [int(x.split()[1]) for x in got]
            check(got and all(x.startswith("tick ") for x in got[:-1]) and got[-1] == last
                  and nums == list(range(nums[0], nums[0] + len(nums))),
                  "tail -f of a ticker: not its lines in order: %r ... %r"
                  % (got[:3], got[-3:]))

    t_end = time.monotonic()
    rss_after, anon_after, fds_after, idle_cpu = settle(pid)
    print("round %d phases: setup %.1f s, release..done %.1f s, readers stopped %.1f s, "
          "settle %.1f s" % (r, t_rel - t_setup, t_run, t_end - t_rel - t_run,
                             time.monotonic() - t_end), flush=True)
    res = {
        "round": r, "submitters": n, "tasks": total, "readers": m,
        "tail_readers": ntail, "status_readers": nstat,
        "submit_all_s": round(t_subs, 3),
        "submit_p50_s": round(pct(sub_lat, 50), 3), "submit_p99_s": round(pct(sub_lat, 99), 3),
        "submit_max_s": round(max(sub_lat), 3),
        "run_s": round(t_run, 2), "tasks_per_s": round(total / t_run, 1),
        "daemon_cpu_s": round(cpu1 - cpu0, 2),
        "daemon_cpu_ms_per_task": round((cpu1 - cpu0) * 1000 / total, 2),
        "status_reads": nreads["status"],
        "status_reads_per_s": round(nreads["status"] / t_run, 1),
        "status_p50_ms": ms(pct(lat["status"], 50)),
        "status_p99_ms": ms(pct(lat["status"], 99)),
        "status_max_ms": ms(max(lat["status"], default=float("nan"))),
        "readdirs": nreads["ls"],
        "readdir_p50_ms": ms(pct(lat["ls"], 50)),
        "readdir_p99_ms": ms(pct(lat["ls"], 99)),
        "readdir_max_ms": ms(max(lat["ls"], default=float("nan"))),
        "rss_peak_kib": sampler.peak(t_rel, t_end),
        "rss_after_kib": rss_after, "anon_after_kib": anon_after, "fds_after": fds_after,
        "idle_cpu_ms_per_s": idle_cpu,
    }
    return res


def run_load(env, variant):
    t_start = time.monotonic()
    sz = sizes(variant)
    asan = sanitized()
    q = env.queue("q")
    check(env.write(os.path.join(q, "spec.yaml"), "capacity: %d\n" % CAPACITY) == 0,
          "queue spec refused")
    pid = env.daemon.pid
    base = status_baseline(env, q)
    rss0, anon0, fds0, cpu_idle0 = settle(pid, 0.5)
    sampler = RssSampler(pid)
    sampler.start()
    env.load_rounds = []
    try:
        for r in range(1, sz["rounds"] + 1):
            res = one_round(env, r, sz, q, sampler, asan)
            env.load_rounds.append(res)
            print("round %d: %s" % (r, json.dumps(res)), flush=True)
    finally:
        sampler.stop.set()
    rounds = env.load_rounds
    waits = re.findall(r"longest wait so far: a read ([0-9.]+) ms, a write ([0-9.]+) ms "
                       r"\(the loop's longest turn ([0-9.]+) ms\)", env.daemon.stderr_text())
    report = {
        "variant": variant, "build": "asan" if asan else "plain",
        "capacity": CAPACITY, "sizes": sz,
        "idle_status_p50_ms": round(pct(base, 50) * 1000, 3),
        "idle_status_p99_ms": round(pct(base, 99) * 1000, 3),
        "idle_status_max_ms": round(max(base) * 1000, 3),
        "rss_before_kib": rss0, "anon_before_kib": anon0, "fds_before": fds0, "idle_cpu_ms_per_s": cpu_idle0,
        "rounds": rounds, "wall_s": round(time.monotonic() - t_start, 1),
        # the daemon says each new longest wait of a request past 10 ms
        "longest_read_wait_ms": float(waits[-1][0]) if waits else "< 10",
        "longest_write_wait_ms": float(waits[-1][1]) if waits else "< 10",
        "longest_loop_turn_ms": float(waits[-1][2]) if waits else "< 10",
    }
    print_report(report)
    path = os.environ.get("JOBFS_LOAD_REPORT")
    if path:
        try:
            with open(path) as f:
                allr = json.load(f)
        except (OSError, ValueError):
            allr = {}
        allr[variant] = report
        with open(path, "w") as f:
            json.dump(allr, f, indent=1)
            f.write("\n")

    # no fd leaks: idle after each round, the same descriptors
    for res in rounds[1:]:
        check(res["fds_after"] <= rounds[0]["fds_after"] + 2,
              "daemon fds after round %d: %d, after round 1: %d"
              % (res["round"], res["fds_after"], rounds[0]["fds_after"]))
    # memory flat after the load
    first, last = rounds[0]["rss_after_kib"], rounds[-1]["rss_after_kib"]
    bound = first * 1.10 + 2048
    if asan:
        print("RSS check skipped under ASan (quarantine and shadow): after round 1 %d KiB, "
              "after round %d %d KiB" % (first, len(rounds), last))
    elif len(rounds) > 1:
        check(last <= bound, "daemon RSS kept growing: %d KiB after round 1, %d KiB after "
              "round %d (bound %d KiB)" % (first, last, len(rounds), bound))


def print_report(rep):
    rs = rep["rounds"]
    print("load %s (%s build): %d submitters, %d tasks, %d readers per round; "
          "queue capacity %d; %.1f s in all"
          % (rep["variant"], rep["build"], rep["sizes"]["submitters"], rep["sizes"]["tasks"],
             rep["sizes"]["readers"], rep["capacity"], rep["wall_s"]))
    print("  %-34s %s" % ("", "".join("%20s" % ("round %d" % r["round"]) for r in rs)))

    def row(label, *keys):
        print("  %-34s %s" % (label, "".join(
            "%20s" % " / ".join(str(r[k]) for k in keys) for r in rs)))
    row("all submitted after (s)", "submit_all_s")
    row("submit latency p50 / p99 (s)", "submit_p50_s", "submit_p99_s")
    row("tasks through the queue (s)", "run_s")
    row("tasks / s", "tasks_per_s")
    row("daemon CPU per task (ms)", "daemon_cpu_ms_per_task")
    row("status reads under load (/s)", "status_reads_per_s")
    row("status read p50 (ms)", "status_p50_ms")
    row("status read p99 (ms)", "status_p99_ms")
    row("status read max (ms)", "status_max_ms")
    row("readdir of groups/ p50 (ms)", "readdir_p50_ms")
    row("readdir of groups/ p99 / max (ms)", "readdir_p99_ms", "readdir_max_ms")
    row("daemon RSS peak (KiB)", "rss_peak_kib")
    row("daemon RSS after, idle (KiB)", "rss_after_kib")
    row("  of it anonymous (heap, stacks)", "anon_after_kib")
    row("daemon fds after", "fds_after")
    row("daemon CPU after, idle (ms/s)", "idle_cpu_ms_per_s")
    print("  before the load (idle daemon): status read p50 %.3f ms, p99 %.3f ms, max %.3f ms; "
          "RSS %d KiB (%d anonymous), %d fds, CPU %.1f ms/s"
          % (rep["idle_status_p50_ms"], rep["idle_status_p99_ms"], rep["idle_status_max_ms"],
             rep["rss_before_kib"], rep["anon_before_kib"], rep["fds_before"],
             rep["idle_cpu_ms_per_s"]))
    print("  the longest any request waited: a read %s ms (for a reader thread), a write %s ms "
          "(for the loop, whose longest turn was %s ms)"
          % (rep["longest_read_wait_ms"], rep["longest_write_wait_ms"],
             rep["longest_loop_turn_ms"]))


@case(timeout=300)
def test_load(env):
    """40 shells submit at once, 500 tasks through one queue of capacity 64,
    10 readers (tail -f, status loops) meanwhile; twice."""
    run_load(env, "default")


@case(timeout=1800, long=True)
def test_load_long(env):
    """200 shells submit at once, 10,000 tasks through one queue, 50 readers
    meanwhile; twice (issue 5's figures)."""
    run_load(env, "long")
