#!/usr/bin/env python3
"""Containers' benchmark (reference 8.1), figures side by side in one run:

  warm start   spec close -> the container's first output written by its
               node's supervisor (inotify on the state directory, nothing
               polls: a poller would take a core from what it measures),
               p50/p99 over N groups, each on an idle machine (the last
               node's supervisor gone, as crun's last run is), for a 1 MB
               and a 200 MB image (both cached), and back to back (each
               start while the last node's teardown still runs), beside `crun run` of the same image's
               bundle from the command line (exec -> first byte on its
               stdout; in a private mount namespace without the cgroup2
               mount, as jobfs-shim runs it on a hybrid host), and beside
               `podman run --rm` of the image (runc, cgroupfs, file events,
               the nofile and nproc ulimits this machine kind needs; its
               storage in a temporary directory), when podman is installed
  cold pull    a ~100 MB image in 5 layers from the loopback registry into
               an empty cache (jobfs-image pull), beside `skopeo copy` +
               `umoci unpack` of the same image

Usage: python3 tests/bench/bench_images.py BUILD_DIR [--n N]
As root, with crun, docker-registry, skopeo and umoci installed; it starts
three registries (scripts/registry.sh, ports 15300, 15310, 15320: the
1 MB, 100 MB and 200 MB images) and stops them by PID at the end.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pct(xs, p):
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def ms(x):
    return "%.1f" % (x * 1000)


def registry(tmp, port, extra_mb):
    d = os.path.join(tmp, "reg-%d" % port)
    os.makedirs(d)
    env = dict(os.environ, JOBFS_REGISTRY_PORT=str(port), JOBFS_REGISTRY_EXTRA_MB=str(extra_mb))
    out = subprocess.run([os.path.join(ROOT, "scripts/registry.sh"), "start", d], env=env,
                         capture_output=True, text=True, check=True).stdout
    kv = dict(l.split("=", 1) for l in out.split() if "=" in l)
    return d, kv["JOBFS_REGISTRY"], kv["JOBFS_REGISTRY_LAYOUT"]


def wait_text(path, needle, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                if needle in f.read():
                    return time.monotonic()
        except OSError:
            pass
        time.sleep(0.0005)
    raise SystemExit("timed out waiting for %r in %s" % (needle, path))


class Inotify:
    """Linux inotify through ctypes: blocking waits, no polling (a poller
    would take a core from what it measures on this 2-core machine)."""
    IN_MODIFY, IN_CREATE, IN_ISDIR = 0x2, 0x100, 0x40000000

    def __init__(self):
        import ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.paths = {}

    def watch(self, path, mask):
        wd = self.libc.inotify_add_watch(self.fd, path.encode(), mask)
        if wd >= 0:
            self.paths[wd] = path
        return wd >= 0

    def events(self):
        import struct
        buf = os.read(self.fd, 65536)
        off = 0
        while off + 16 <= len(buf):
            wd, mask, _, ln = struct.unpack_from("iIII", buf, off)
            name = buf[off + 16:off + 16 + ln].rstrip(b"\0").decode()
            off += 16 + ln
            yield self.paths.get(wd, ""), mask, name

    def close(self):
        os.close(self.fd)


def first_output(ino, runs, needle):
    """When needle first appears in the stdout of a run directory made
    under runs (STATE/runs/<node>/<attempt>/stdout, the file the node's
    supervisor writes): inotify on each level as it is made, each level
    checked once its watch is in place (it may have come first)."""
    def has(path):
        try:
            with open(os.path.join(path, "stdout")) as f:
                return needle in f.read()
        except OSError:
            return False

    while True:
        for path, mask, name in ino.events():
            full = os.path.join(path, name)
            if path == runs and mask & Inotify.IN_ISDIR:
                ino.watch(full, Inotify.IN_CREATE)
                for a in os.listdir(full):
                    ino.watch(os.path.join(full, a), Inotify.IN_CREATE | Inotify.IN_MODIFY)
                    if has(os.path.join(full, a)):
                        return time.monotonic()
            elif os.path.dirname(path) == runs and mask & Inotify.IN_ISDIR:
                ino.watch(full, Inotify.IN_CREATE | Inotify.IN_MODIFY)
                if has(full):
                    return time.monotonic()
            elif name == "stdout" and has(path):
                return time.monotonic()


def jobfs_warm(mnt, image, n, tag, state, wait_idle=True):
    """Spec close -> the container's first output written by its node's
    supervisor (seen by inotify in the state directory: nothing polls)."""
    q = os.path.join(mnt, "queues", "bench")
    os.makedirs(q, exist_ok=True)
    spec = ("image: %s\nimage_pull_policy: IfNotPresent\nargs: [\"echo\", \"go\"]\n" % image)
    # once to have it cached (not timed)
    g = os.path.join(q, "groups", "%s-warmup" % tag)
    os.mkdir(g)
    with open(os.path.join(g, "spec.yaml"), "w") as f:
        f.write(spec)
    wait_text(os.path.join(g, "tasks/0/nodes/0/logs"), "go", timeout=300)
    out = []
    runs = os.path.join(state, "runs")
    for i in range(n):
        g = os.path.join(q, "groups", "%s-%d" % (tag, i))
        os.mkdir(g)
        fd = os.open(os.path.join(g, "spec.yaml"), os.O_WRONLY | os.O_TRUNC)
        os.write(fd, spec.encode())
        ino = Inotify()
        ino.watch(runs, Inotify.IN_CREATE)
        t0 = time.monotonic()
        os.close(fd)
        t1 = first_output(ino, runs, "go")
        ino.close()
        out.append(t1 - t0)
        # what a user sees: the same output in the node's logs on the mount
        wait_text(os.path.join(g, "tasks/0/nodes/0/logs"), "go")
        # the next start on an idle machine, as crun's: this node's
        # supervisor gone (the runtime's delete, the unmounts), untimed
        if wait_idle:
            idle()
    return out


def idle(timeout=30.0):
    """Until no jobfs-shim runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if subprocess.run(["pgrep", "-x", "jobfs-shim"], capture_output=True).returncode != 0:
            return
        time.sleep(0.005)


def crun_warm(tmp, layout, n):
    b = os.path.join(tmp, "crun-bundle")
    subprocess.run(["umoci", "unpack", "--image", layout + ":latest", b], check=True,
                   capture_output=True)
    with open(os.path.join(b, "config.json")) as f:
        cfg = json.load(f)
    cfg["process"]["terminal"] = False
    cfg["process"]["args"] = ["echo", "go"]
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(cfg, f)
    out = []
    for i in range(n):
        cmd = ("umount /sys/fs/cgroup/unified 2>/dev/null; exec crun run --bundle %s bench-%d-%d"
               % (b, os.getpid(), i))
        t0 = time.monotonic()
        p = subprocess.Popen(["unshare", "-m", "--propagation", "slave", "sh", "-c", cmd],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        p.stdout.read(2)
        t1 = time.monotonic()
        p.wait()
        out.append(t1 - t0)
    return out


PODMAN_CONF = """[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"

[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
"""

STORAGE_CONF = """[storage]
driver = "overlay"
graphroot = "%s/graph"
runroot = "%s/run"
"""


def podman_warm(tmp, reg, n):
    """`podman run --rm` of the same image (runc, cgroupfs, file events and
    the ulimits this machine kind needs), its storage in tmp; None and why
    when podman is not there or cannot run here."""
    if not shutil.which("podman"):
        return None, "podman is not installed (apt-get install podman)"
    d = os.path.join(tmp, "podman")
    os.makedirs(d)
    with open(os.path.join(d, "containers.conf"), "w") as f:
        f.write(PODMAN_CONF)
    with open(os.path.join(d, "storage.conf"), "w") as f:
        f.write(STORAGE_CONF % (d, d))
    env = dict(os.environ, CONTAINERS_CONF=os.path.join(d, "containers.conf"),
               CONTAINERS_STORAGE_CONF=os.path.join(d, "storage.conf"))
    image = "%s/jobfs/busybox:latest" % reg
    r = subprocess.run(["podman", "pull", "--tls-verify=false", image], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, "podman pull: " + r.stderr.strip()[-200:]
    out = []
    for i in range(n):
        t0 = time.monotonic()
        p = subprocess.Popen(["podman", "run", "--rm", "--network", "host", image, "echo", "go"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        got = p.stdout.read(2)
        t1 = time.monotonic()
        err = p.stderr.read().decode(errors="replace")
        p.wait()
        if got != b"go":
            return None, "podman run: " + err.strip()[-200:]
        out.append(t1 - t0)
    return out, ""


def cold_pulls(tmp, build, reg, rounds):
    tool = os.path.join(build, "tools", "jobfs-image")
    ref = "%s/jobfs/busybox:latest" % reg
    ours, theirs = [], []
    for r in range(rounds):
        cache = os.path.join(tmp, "cold-cache-%d" % r)
        t0 = time.monotonic()
        subprocess.run([tool, "pull", "--cache", cache, "--insecure", reg, ref], check=True,
                       capture_output=True)
        ours.append(time.monotonic() - t0)
        shutil.rmtree(cache)
        lay = os.path.join(tmp, "cold-oci-%d" % r)
        bun = os.path.join(tmp, "cold-bundle-%d" % r)
        t0 = time.monotonic()
        subprocess.run(["skopeo", "copy", "--src-tls-verify=false", "docker://" + ref,
                        "oci:%s:latest" % lay], check=True, capture_output=True)
        subprocess.run(["umoci", "unpack", "--image", lay + ":latest", bun], check=True,
                       capture_output=True)
        theirs.append(time.monotonic() - t0)
        shutil.rmtree(lay)
        shutil.rmtree(bun)
    return ours, theirs


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    build = os.path.abspath(sys.argv[1])
    n = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 15
    if os.geteuid() != 0:
        raise SystemExit("bench_images: run it as root")
    tmp = tempfile.mkdtemp(prefix="jobfs-bench-images-", dir=os.environ.get("TMPDIR", "/tmp"))
    regs = []
    daemon = None
    mnt = os.path.join(tmp, "mnt")
    try:
        small = registry(tmp, 15300, 0)
        mid = registry(tmp, 15310, 100)
        big = registry(tmp, 15320, 200)
        regs = [small, mid, big]
        os.makedirs(mnt)
        state = os.path.join(tmp, "state")
        os.makedirs(state)
        argv = [os.path.join(build, "tools", "jobfs"), "--state", state, "--foreground",
                "--runtime", "oci"]
        for _, reg, _ in regs:
            argv += ["--insecure-registry", reg]
        daemon = subprocess.Popen(argv + [mnt], stderr=open(os.path.join(tmp, "d.log"), "w"))
        deadline = time.monotonic() + 10
        while not os.path.exists(os.path.join(mnt, "README")):
            if time.monotonic() > deadline:
                raise SystemExit("jobfs did not mount")
            time.sleep(0.05)
        w1 = jobfs_warm(mnt, small[1] + "/jobfs/busybox:latest", n, "small", state)
        w200 = jobfs_warm(mnt, big[1] + "/jobfs/busybox:latest", n, "big", state)
        # starts back to back: each while the last one's teardown runs
        wb2b = jobfs_warm(mnt, small[1] + "/jobfs/busybox:latest", n, "b2b", state, False)
        cr = crun_warm(tmp, small[2], n)
        pm, pm_why = podman_warm(tmp, small[1], n)
        cold, theirs = cold_pulls(tmp, build, mid[1], 3)
        print("containers (reference 8.1), %d starts each, one run:" % n)
        print("  %-46s %10s %10s" % ("", "p50 ms", "p99 ms"))
        print("  %-46s %10s %10s" % ("jobfs warm start, 1 MB image", ms(pct(w1, 50)),
                                     ms(pct(w1, 99))))
        print("  %-46s %10s %10s" % ("jobfs warm start, 200 MB image", ms(pct(w200, 50)),
                                     ms(pct(w200, 99))))
        print("  %-46s %10s %10s" % ("jobfs, 1 MB, back to back (teardowns overlap)",
                                     ms(pct(wb2b, 50)), ms(pct(wb2b, 99))))
        print("  %-46s %10s %10s" % ("crun run of the 1 MB image's bundle", ms(pct(cr, 50)),
                                     ms(pct(cr, 99))))
        if pm:
            print("  %-46s %10s %10s" % ("podman run --rm of the 1 MB image (runc)",
                                         ms(pct(pm, 50)), ms(pct(pm, 99))))
        else:
            print("  podman run --rm: not measured: %s" % pm_why)
        print("  ratio jobfs / crun run (p50): %.2f   200 MB / 1 MB (p50): %.2f"
              % (pct(w1, 50) / pct(cr, 50), pct(w200, 50) / pct(w1, 50)))
        print("  cold pull, ~100 MB in 5 layers (s, best of 3 / median):")
        print("    jobfs-image pull              %.2f / %.2f" % (min(cold), statistics.median(cold)))
        print("    skopeo copy + umoci unpack    %.2f / %.2f" % (min(theirs),
                                                                   statistics.median(theirs)))
        print("    ratio (median): %.2f" % (statistics.median(cold) / statistics.median(theirs)))
    finally:
        if daemon:
            subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
            try:
                daemon.wait(10)
            except subprocess.TimeoutExpired:
                daemon.kill()
        for d, _, _ in regs:
            subprocess.run([os.path.join(ROOT, "scripts/registry.sh"), "stop", d],
                           capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
