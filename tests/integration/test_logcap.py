"""The per-node log cap (--log-cap): a task that prints far more than the cap
leaves at most about 2 x cap per file on disk, the tree shows the latest
output whole (X.1 followed by X), tools keep working, and the node's events
say what happened."""
import glob
import json
import os
import subprocess
import time

from jfit import TestFailure, case, check, jobfs_bin

LINE = "line %07d " + "x" * 60 + "\n"
LINE_LEN = len(LINE % 1)                        # 74 bytes
MI = 1024 * 1024

# python3 flood.py N START BURSTS END: a line on stderr, then (once the
# file START exists, "-": at once; for tail -f to begin) N numbered lines
# on stdout in BURSTS bursts 0.3 s apart (so that a reader polling every
# second sees the file between rotations), then it exits once the file END
# exists ("-": at once): the test holds it running while it looks
FLOOD = """\
import os, sys, time
n, bursts = int(sys.argv[1]), int(sys.argv[3])
start, end = sys.argv[2], sys.argv[4]
def gate(path):
    while path != "-" and not os.path.exists(path):
        time.sleep(0.05)
sys.stderr.write("start\\n")
sys.stderr.flush()
gate(start)
w = sys.stdout.write
for i in range(1, n + 1):
    w("line %07d " % i + "x" * 60 + "\\n")
    if i % (n // bursts) == 0 and i < n:
        sys.stdout.flush()
        time.sleep(0.3)
sys.stdout.flush()
gate(end)
"""


def flood_group(env, n, bursts=1, start=False, end=False):
    """The flood's group and node; start, end: gate it on files that
    go(env, "start") and go(env, "end") create."""
    script = os.path.join(env.work, "flood.py")
    with open(script, "w") as f:
        f.write(FLOOD)
    gates = [os.path.join(env.work, w) if on else "-"
             for w, on in (("start", start), ("end", end))]
    spec = 'command: ["python3", "%s", "%d", "%s", "%d", "%s"]\n' % (script, n, gates[0], bursts,
                                                                     gates[1])
    g = env.group(spec)
    return g, os.path.join(g, "tasks/0/nodes/0")


def go(env, which):
    open(os.path.join(env.work, which), "w").close()


def run_dir(env):
    """The only run directory of this test's state."""
    dirs = glob.glob(os.path.join(env.state, "runs", "*", "*"))
    check(len(dirs) == 1, "run directories: %r" % dirs)
    return dirs[0]


def on_disk(d):
    """Bytes and disk blocks of the log files in a run directory."""
    size = used = 0
    for name in ("stdout", "stderr", "logs"):
        for f in (name, name + ".1"):
            try:
                st = os.stat(os.path.join(d, f))
            except FileNotFoundError:
                continue
            size += st.st_size
            used += st.st_blocks * 512
    return size, used


def check_numbered(data, last, what):
    """data is the tail of the numbered lines up to `last`: every line after
    the first (which may be cut) whole and in order, the last one `last`."""
    lines = data.decode().split("\n")
    check(lines[-1] == "", "%s does not end with a newline: %r" % (what, lines[-1][-80:]))
    lines = lines[1:-1]
    check(len(lines) > 10, "%s: %d lines" % (what, len(lines)))
    first = int(lines[0].split()[1])
    for k, line in enumerate(lines):
        want = (LINE % (first + k))[:-1]
        if line != want:
            raise TestFailure("%s line %d is %r, want %r" % (what, k + 1, line[:90], want[:90]))
    check(first + len(lines) - 1 == last, "%s ends at line %d, want %d"
          % (what, first + len(lines) - 1, last))


@case(timeout=120)
def test_logcap_flood(env):
    """--log-cap 1Mi and a task printing ~50 MiB."""
    env.daemon_args = ["--log-cap", "1Mi"]
    env.remount()
    n = 700000                                   # 51.8 MB
    g, node = flood_group(env, n, bursts=12, start=True, end=True)
    env.wait(node, "Running", timeout=10)
    # tail -f begun before the flood; its output to a file (tens of MB at most)
    tout = os.path.join(env.work, "tail.out")
    terr = os.path.join(env.work, "tail.err")
    with open(tout, "wb") as o, open(terr, "wb") as e:
        tail = env.popen(["tail", "-n", "+1", "-f", env.p(node, "logs")], stdout=o, stderr=e)
    env.poll_until(lambda: open(tout, "rb").read(6) == b"start\n", 20, "tail -f to show start")
    go(env, "start")
    # the event comes while the node still runs (the engine looks every 5 s)
    env.poll_until(lambda: " LogRotated " in env.read(os.path.join(node, "events")), 30,
                   "a LogRotated event", interval=0.2)
    check(env.status(node)["state"] == "Running", "LogRotated came only once the node ended")
    go(env, "end")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    check(st["state"] == "Succeeded", "group ended %s: %s" % (st["state"], st.get("message")))
    last = LINE % n

    # disk: at most 2 x cap per file, and the rotation really happened
    d = run_dir(env)
    size, used = on_disk(d)
    check(size <= 6 * MI and used <= 6 * MI + 64 * 1024,
          "run directory holds %d bytes (%d on disk) of logs, want <= 6Mi" % (size, used))
    for name in ("stdout", "logs"):
        check(os.path.exists(os.path.join(d, name + ".1")), "no %s.1 in %s" % (name, d))
        check(os.stat(os.path.join(d, name)).st_size <= MI, "%s over the cap" % name)
    # the supervisor's rotation record was told as events, then tidied
    # away with the other records once the end was stored
    env.poll_until(lambda: not os.path.exists(os.path.join(d, "rotation")), 10,
                   "the rotation record to go")
    ev = env.read(os.path.join(node, "events"))
    check(" LogRotated " in ev and "stdout" in ev, "no LogRotated for stdout:\n%s" % ev[-800:])

    # the tree: the tail, whole; stat agrees with what cat reads
    for name in ("logs", "stdout", "stderr"):
        path = env.p(node, name)
        data = subprocess.run(["cat", path], capture_output=True, timeout=10).stdout
        size = os.stat(path).st_size
        check(size == len(data), "%s: stat size %d != %d bytes cat read" % (name, size, len(data)))
        if name == "stderr":
            check(data == b"start\n", "stderr %r" % data[:80])
            continue
        check(MI <= len(data) <= 2 * MI, "%s shows %d bytes, want 1Mi..2Mi" % (name, len(data)))
        check(data.endswith(last.encode()), "%s ends with %r" % (name, data[-80:]))
        check_numbered(data, n, name)
        with open(path, "rb") as f:
            py = f.read()
        check(py == data, "%s: open().read() differs from cat" % name)
        # small reads at offsets across the X.1 / X boundary
        with open(path, "rb", buffering=0) as f:
            parts = []
            while True:
                b = f.read(65536 - 7)
                if not b:
                    break
                parts.append(b)
        check(b"".join(parts) == data, "%s: odd-sized reads differ from one read" % name)
    r = env.sh("tail -n 3 %s/logs" % node)
    want = "".join(LINE % i for i in range(n - 2, n + 1))
    check(r.stdout == want, "tail -n 3 logs: %r" % r.stdout[-240:])
    r = env.sh("tail -c 100 %s/stdout" % node)
    check(r.stdout == (LINE % (n - 1) + LINE % n)[-100:], "tail -c 100 stdout: %r" % r.stdout)

    # the event
    ev = env.read(os.path.join(node, "events"))
    rot = [l for l in ev.splitlines() if " LogRotated " in l]
    check(any(l.split()[1] == "Warning" and "stdout over the 1Mi cap" in l and "are gone" in l
              for l in rot), "no LogRotated Warning for stdout in the node's events:\n%s" % ev)
    check(any("logs over the 1Mi cap" in l for l in rot), "no LogRotated for logs:\n%s" % ev)
    check(not any("stderr" in l for l in rot), "stderr did not rotate:\n%s" % ev)
    check(len(rot) <= 4, "one event per file per burst, got %d:\n%s" % (len(rot), ev))

    # tail -f begun before the flood sees its last line (it may say "file
    # truncated" on the way: the file shrinks at each rotation)
    deadline = time.monotonic() + 15
    while True:
        with open(tout, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            end = f.read()
        if end.endswith(last.encode()):
            break
        if time.monotonic() > deadline:
            raise TestFailure("tail -f did not show the last line within 15 s; its output "
                              "ends %r; stderr %r" % (end[-160:], open(terr).read()[-300:]))
        time.sleep(0.2)
    with open(tout, "rb") as f:
        check(f.read(6) == b"start\n", "tail -f did not begin at the start")
    tail.kill()
    tail.wait()


@case(timeout=60)
def test_logcap_zero_keeps_all(env):
    """--log-cap 0: nothing rotates, every byte stays."""
    env.daemon_args = ["--log-cap", "0"]
    env.remount()
    n = 70000                                    # 5.2 MB
    g, node = flood_group(env, n, end=True)
    # launch.json is read while the node runs: its end tidies it away
    env.wait(node, "Running", timeout=30)
    d = run_dir(env)
    check(json.load(open(os.path.join(d, "launch.json")))["log_cap"] == 0, "launch.json log_cap")
    go(env, "end")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=30)
    check(st["state"] == "Succeeded", "group ended %s" % st["state"])
    check(not glob.glob(os.path.join(d, "*.1")) and not os.path.exists(os.path.join(d, "rotation")),
          "something rotated without a cap: %r" % os.listdir(d))
    data = open(env.p(node, "stdout"), "rb").read()
    check(len(data) == n * LINE_LEN, "stdout %d bytes, want %d" % (len(data), n * LINE_LEN))
    check(data.startswith((LINE % 1).encode()) and data.endswith((LINE % n).encode()),
          "stdout is not the whole output")
    check(os.stat(env.p(node, "logs")).st_size == n * LINE_LEN + len("start\n"), "logs size")
    check(" LogRotated " not in env.read(os.path.join(node, "events")), "LogRotated without a cap")


@case(timeout=60)
def test_logcap_default(env):
    """Without the option each node's files are capped at 1Gi."""
    g, node = flood_group(env, 10, end=True)
    env.wait(node, "Running", timeout=20)
    launch = json.load(open(os.path.join(run_dir(env), "launch.json")))
    go(env, "end")
    env.wait(g, "Succeeded", timeout=20)
    check(launch["log_cap"] == 1024 * MI, "default log_cap %r, want 1Gi" % launch["log_cap"])


@case(timeout=30)
def test_logcap_bad_value(env):
    """A bad --log-cap is a usage error that names it; nothing is mounted."""
    mnt = os.path.join(env.work, "mnt2")
    os.makedirs(mnt)
    for arg, words in (("x", "not a size"), ("1k", "below"), ("-1Mi", "not a size")):
        r = subprocess.run([jobfs_bin(), "--state", os.path.join(env.work, "st"),
                            "--foreground", "--log-cap", arg, mnt],
                           capture_output=True, text=True, timeout=10)
        check(r.returncode == 1, "--log-cap %s: exit %d, want 1 (usage)" % (arg, r.returncode))
        check('--log-cap "%s"' % arg in r.stderr and words in r.stderr,
              "--log-cap %s: message %r" % (arg, r.stderr))
        check(not os.path.ismount(mnt), "mounted despite a bad --log-cap")
