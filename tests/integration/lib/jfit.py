"""jfit - helpers for the jobfs integration tests.

Everything here drives the real mounted filesystem with real programs and
real processes.  Python 3.11 standard library only.

A test is a function `test_*(env)` in a tests/integration/test_*.py module,
optionally decorated with @case(timeout=..., long=...).  The harness
(run.py) gives it an Env whose daemon is already mounted; the test may stop,
kill and restart the daemon through the Env.  Every daemon the Env started
is checked when it ends: exit code 0 (unless the test killed it on purpose)
and no sanitizer report on its stderr.
"""
import errno
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time

SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error:")


class Skip(Exception):
    """Raised by a test that cannot run here; the message says why."""


class TestFailure(AssertionError):
    pass


def case(timeout=60, long=False):
    """Mark a test: its hard timeout, and whether only --long runs it."""
    def deco(fn):
        fn.jfit_timeout = timeout
        fn.jfit_long = long
        return fn
    return deco


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


def repo_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))


def jobfs_bin():
    b = os.environ.get("JOBFS_BIN")
    if b:
        return os.path.abspath(b)
    return os.path.join(repo_root(), "build", "tools", "jobfs")


def sanitized():
    """True for a sanitizer build of the daemon (slower at everything)."""
    try:
        with open(jobfs_bin(), "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def have(prog):
    return shutil.which(prog) is not None


# ---------------------------------------------------------------- daemons

class Daemon:
    """One `jobfs --foreground` process on a state dir and mount point."""

    def __init__(self, env, state, mnt, user=None, args=()):
        self.env = env
        self.state = state
        self.mnt = mnt
        self.user = user
        self.args = list(args)       # more options, e.g. ["--cluster", FILE]
        env.ndaemons += 1
        self.n = env.ndaemons
        self.stderr_path = os.path.join(env.tmp, "daemon-%d.stderr" % self.n)
        self.proc = None
        self.killed = False          # killed on purpose: exit code not checked
        self.checked = False

    def start(self, timeout=10.0):
        argv = [jobfs_bin(), "--state", self.state, "--foreground"] + self.args + [self.mnt]
        if self.user:
            argv = ["runuser", "-u", self.user, "--"] + argv
        errf = open(self.stderr_path, "wb")
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=errf, stderr=errf,
                                         start_new_session=True)
        finally:
            errf.close()
        self.env.register_daemon(self)
        deadline = time.monotonic() + timeout
        readme = os.path.join(self.mnt, "README")
        while True:
            if self.proc.poll() is not None:
                raise TestFailure("daemon exited with %s before the tree was ready"
                                  % self.proc.returncode)
            # the daemon records its mount once mounted (STATE/mount); before
            # that, README may still be the kernel's cached entry of a dead
            # mount at the same place
            if not self.recorded():
                pass
            elif self.user:
                # without allow_other only the mounting user sees the tree
                if subprocess.run(["runuser", "-u", self.user, "--", "test", "-e", readme],
                                  capture_output=True).returncode == 0:
                    return self
            elif os.path.exists(readme):
                return self
            if time.monotonic() > deadline:
                raise TestFailure("mount not ready: %s/README missing after %.0f s"
                                  % (self.mnt, timeout))
            time.sleep(0.02)

    def recorded(self):
        """Has this daemon recorded its mount (STATE/mount names its pid, or
        that of its child when it runs under runuser)?"""
        try:
            with open(os.path.join(self.state, "mount")) as f:
                m = re.search(r"^pid (\d+)$", f.read(), re.M)
        except OSError:
            return False
        if not m:
            return False
        pid = int(m.group(1))
        if pid == self.proc.pid:
            return True
        try:
            with open("/proc/%d/stat" % pid) as f:
                return int(f.read().rsplit(")", 1)[1].split()[1]) == self.proc.pid
        except (OSError, IndexError, ValueError):
            return False

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def stderr_text(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def unmount(self, timeout=10.0, lazy=False):
        """fusermount3 -u, then wait for the daemon to exit and check it."""
        argv = ["fusermount3", "-u"] + (["-z"] if lazy else []) + [self.mnt]
        if self.user:
            argv = ["runuser", "-u", self.user, "--"] + argv
        deadline = time.monotonic() + timeout
        while True:
            r = subprocess.run(argv, capture_output=True, text=True)
            if r.returncode == 0 or self.proc.poll() is not None:
                break
            if time.monotonic() > deadline:
                raise TestFailure("fusermount3 -u %s failed: %s"
                                  % (self.mnt, r.stderr.strip()))
            time.sleep(0.1)           # "device busy" while a reader finishes
        try:
            self.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.check()
            raise TestFailure("daemon did not exit within %.0f s of unmount"
                              % timeout)
        self.check()

    def kill9(self, detach=False, timeout=10.0):
        """SIGKILL the daemon and reap it.  A daemon that cannot be reaped
        within `timeout` (one of its threads stuck in a request on its own
        mount) fails the test with the stacks of every thread of every
        daemon of the test.  The dead mount stays, as it would for a user:
        the next daemon clears it (fs/mountrec.h); detach=True detaches it
        here instead."""
        self.killed = True
        self.proc.send_signal(signal.SIGKILL)
        self.reap(timeout)
        if detach:
            # the kernel keeps the dead mount: detach it
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], capture_output=True)
        self.check()

    def reap(self, timeout=10.0):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TestFailure("daemon %d (pid %d) not reaped %.0f s after SIGKILL:\n%s"
                              % (self.n, self.pid, timeout, self.env.all_stacks()))

    def check(self):
        if self.checked:
            return
        self.checked = True
        err = self.stderr_text()
        for mark in SANITIZER_MARKS:
            if mark in err:
                raise TestFailure("daemon %d stderr has %r" % (self.n, mark))
        if not self.killed and self.proc.returncode != 0:
            raise TestFailure("daemon %d exited with %s" % (self.n, self.proc.returncode))


class Env:
    """What a test gets: a mounted tree plus helpers."""

    def __init__(self, tmp, long=False):
        self.tmp = tmp
        self.long = long
        self.state = os.path.join(tmp, "state")
        self.mnt = os.path.join(tmp, "mnt")
        self.work = os.path.join(tmp, "work")    # scratch outside the mount
        for d in (self.state, self.mnt, self.work):
            os.makedirs(d, exist_ok=True)
        self.ndaemons = 0
        self.daemons = []
        self.daemon = None
        self.bg = []                              # background processes to reap
        self.daemon_args = []                     # passed to every daemon start()
        self.slurm = False                        # use_slurm() was called
        self.cleanups = []                        # at_end(): run by finish()

    # -- daemon lifecycle
    def all_stacks(self):
        """The stacks of every thread of every daemon this test started
        (and of the processes they forked), for a hang."""
        return all_stacks([d.pid for d in self.daemons if d.pid])

    def register_daemon(self, d):
        self.daemons.append(d)
        with open(os.path.join(self.tmp, "daemons.json"), "w") as f:
            json.dump([{"pid": x.pid, "mnt": x.mnt, "stderr": x.stderr_path}
                       for x in self.daemons], f)

    def start(self):
        self.daemon = Daemon(self, self.state, self.mnt, args=self.daemon_args).start()
        return self.daemon

    def start_with_fault(self, point):
        """Remount with JOBFS_FAULT=point (backends/fault.h) in the new
        daemon's environment only."""
        self.stop()
        os.environ["JOBFS_FAULT"] = point
        try:
            return self.start()
        finally:
            del os.environ["JOBFS_FAULT"]

    def use_cluster(self, text):
        """Write `text` as a cluster file and remount on it (`--cluster
        FILE`) with a fresh state dir; later remounts keep the file."""
        path = os.path.join(self.tmp, "cluster-%d.yaml" % (self.ndaemons + 1))
        with open(path, "w") as f:
            f.write(text)
        self.stop()
        self.state = os.path.join(self.tmp, "state-%d" % (self.ndaemons + 1))
        os.makedirs(self.state, exist_ok=True)
        self.daemon_args = ["--cluster", path]
        return self.start()

    def use_runtime(self, which, *args):
        """Remount (same state) with `--runtime which` (host, oci) and args.
        Tests of Kubernetes' and the host's semantics whose specs name
        images from the internet (busybox, perl) run them on the host;
        container tests use "oci" with the test registry
        (use_containers)."""
        self.stop()
        kept, a = [], self.daemon_args
        i = 0
        while i < len(a):
            if a[i] in ("--runtime", "--insecure-registry"):
                i += 2
                continue
            kept.append(a[i])
            i += 1
        self.daemon_args = kept + ["--runtime", which] + list(args)
        return self.start()

    def use_containers(self):
        """Remount with --runtime oci and the test registry
        (scripts/registry.sh: $JOBFS_REGISTRY) as an insecure registry;
        returns the registry's host:port.  Skips without root, crun or the
        registry, unless $JOBFS_OCI_REQUIRED or $JOBFS_REGISTRY_REQUIRED is
        set (the README's test command sets both)."""
        reg = self.container_registry()
        self.use_runtime("oci", "--insecure-registry", reg)
        return reg

    def container_registry(self):
        """The test registry's host:port when containers can run here;
        else skips (or fails, as use_containers says)."""
        reg = os.environ.get("JOBFS_REGISTRY")
        why = None
        if os.geteuid() != 0:
            why = "containers: jobfs must run as root"
        elif not have("crun"):
            why = "containers: crun is not installed"
        elif not reg:
            why = "containers: no test registry (scripts/registry.sh start DIR)"
        if why:
            if os.environ.get("JOBFS_OCI_REQUIRED") or os.environ.get("JOBFS_REGISTRY_REQUIRED"):
                raise TestFailure(why)
            raise Skip(why)
        return reg

    def use_slurm(self, *args, url=None):
        """Remount with --backend slurm on the cluster scripts/slurm-cluster.sh
        started ($JOBFS_SLURM_URL, $SLURM_CONF), with a fresh state dir; at
        the end of the test every Slurm job of this state dir is cancelled.
        Skips when no cluster is up, unless $JOBFS_SLURM_REQUIRED is set (the
        README's test command sets it: CI must not skip these)."""
        url = url or os.environ.get("JOBFS_SLURM_URL")
        if not url or not os.environ.get("SLURM_CONF"):
            why = ("slurm: no cluster (JOBFS_SLURM_URL, SLURM_CONF unset; "
                   "scripts/slurm-cluster.sh start DIR starts one)")
            if os.environ.get("JOBFS_SLURM_REQUIRED"):
                raise TestFailure(why)
            raise Skip(why)
        self.stop()
        self.state = os.path.join(self.tmp, "state-%d" % (self.ndaemons + 1))
        os.makedirs(self.state, exist_ok=True)
        self.daemon_args = ["--backend", "slurm", "--slurm", url,
                            "--slurm-ondemand", "ondemand", "--slurm-spot", "spot",
                            "--slurm-poll", "200"]
        jobcomp = os.path.join(os.path.dirname(os.environ["SLURM_CONF"]), "log", "jobcomp.txt")
        if os.path.exists(jobcomp):
            self.daemon_args += ["--slurm-jobcomp", jobcomp]
        if os.environ.get("JOBFS_SLURM_GRES") == "untyped" and "--cluster" not in args:
            # untyped "gpu:8" GRES: the cluster file says which model they are
            path = os.path.join(self.tmp, "cluster-untyped.yaml")
            with open(path, "w") as f:
                f.write(UNTYPED_CLUSTER)
            self.daemon_args += ["--cluster", path]
        self.daemon_args += list(args)
        self.slurm = True
        return self.start()

    def slurm_jobs(self):
        """This state dir's Slurm jobs: [(job id, state, name, comment)] from
        squeue (element ids as Slurm prints them, 12_3)."""
        r = subprocess.run(["squeue", "-h", "-a", "-t", "all", "-o", "%i|%T|%j|%k"],
                           capture_output=True, text=True)
        uuid = self.slurm_uuid()
        out = []
        for line in r.stdout.splitlines():
            f = line.split("|", 3)
            if len(f) == 4 and uuid and f[3].startswith("jobfs:%s:" % uuid):
                out.append(tuple(f))
        return out

    def slurm_uuid(self):
        import sqlite3
        try:
            db = sqlite3.connect("file:%s?mode=ro" % os.path.join(self.state, "jobfs.db"),
                                 uri=True, timeout=5)
            row = db.execute("SELECT value FROM meta WHERE key = 'uuid'").fetchone()
            db.close()
            return row[0] if row else None
        except Exception:
            return None

    def slurm_cancel_all(self):
        ids = sorted({j[0].split("_")[0] for j in self.slurm_jobs()
                      if j[1] in ("PENDING", "RUNNING", "SUSPENDED", "REQUEUED",
                                  "COMPLETING")})
        if ids:
            subprocess.run(["scancel"] + ids, capture_output=True)

    def stop(self):
        if self.daemon and self.daemon.proc.poll() is None:
            self.daemon.unmount()
        elif self.daemon:
            self.daemon.check()
        self.daemon = None

    def remount(self):
        self.stop()
        return self.start()

    def at_end(self, fn):
        """fn() when the test ends, passed or not (after the unmount)."""
        self.cleanups.append(fn)

    def finish(self):
        """End of test: kill background helpers, unmount, check daemons."""
        if self.slurm:
            self.slurm_cancel_all()
        for p in self.bg:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    p.kill()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self.stop()
        for fn in self.cleanups:
            try:
                fn()
            except Exception as e:  # a cleanup's failure is not the test's
                print("cleanup: %s" % e, file=sys.stderr)
        for d in self.daemons:
            if d.proc.poll() is None:
                d.unmount()
            d.check()

    # -- paths and programs
    def p(self, *parts):
        return os.path.join(self.mnt, *parts)

    def sh(self, cmd, timeout=20, check=True, input=None, cwd=None, env=None):
        """Run a shell command line; return CompletedProcess (text)."""
        p = subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.PIPE if input else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=cwd or self.mnt, env=env, start_new_session=True)
        try:
            out, err = p.communicate(input=input, timeout=timeout)
        except subprocess.TimeoutExpired:
            # the whole command line, not just sh: nothing may keep the mount busy
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.communicate()
            raise TestFailure("`%s` did not finish within %s s" % (cmd, timeout))
        r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        if check and r.returncode != 0:
            raise TestFailure("`%s` exited %d: %s" % (cmd, r.returncode,
                                                     (r.stderr or r.stdout).strip()[-500:]))
        return r

    def popen(self, argv, **kw):
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("start_new_session", True)
        p = subprocess.Popen(argv, **kw)
        self.bg.append(p)
        return p

    # -- the tree
    def read(self, path):
        with open(self.p(path), "rb") as f:
            return f.read().decode("utf-8", "replace")

    def status(self, path):
        """status.json of an object directory, parsed."""
        text = self.read(os.path.join(path, "status.json"))
        try:
            return json.loads(text)
        except ValueError as e:
            raise TestFailure("%s/status.json is not JSON (%s): %r" % (path, e, text[:300]))

    def status_yaml(self, path):
        """`status` as key: value pairs (top-level scalars only)."""
        return parse_status(self.read(os.path.join(path, "status")))

    def wait(self, path, states=None, pred=None, timeout=20.0, what=None):
        """Poll status.json until its state is in `states` (or pred(st))."""
        if isinstance(states, str):
            states = (states,)
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                last = self.status(path)
                if states is not None and last.get("state") in states:
                    return last
                if pred is not None and pred(last):
                    return last
            except FileNotFoundError:
                last = {"state": "<missing>"}
            if time.monotonic() > deadline:
                raise TestFailure("%s: waited %.0f s for %s; last status: %s"
                                  % (path, timeout, what or states or "condition",
                                     json.dumps(last)[:600]))
            time.sleep(0.05)

    def poll_until(self, fn, timeout=20.0, what="condition", interval=0.05):
        deadline = time.monotonic() + timeout
        while True:
            v = fn()
            if v:
                return v
            if time.monotonic() > deadline:
                raise TestFailure("timed out after %.0f s waiting for %s" % (timeout, what))
            time.sleep(interval)

    def mkdir(self, path):
        os.mkdir(self.p(path))

    def write(self, path, text):
        """open/write/close; return 0 or the errno of the first failing call."""
        data = text.encode() if isinstance(text, str) else text
        try:
            fd = os.open(self.p(path), os.O_WRONLY | os.O_TRUNC)
        except OSError as e:
            return e.errno
        err = 0
        try:
            off = 0
            while off < len(data):
                off += os.write(fd, data[off:off + 131072])
        except OSError as e:
            err = e.errno
        try:
            os.close(fd)
        except OSError as e:
            err = err or e.errno
        return err

    def submit(self, path, text):
        """Write a spec and require it to be accepted."""
        rc = self.write(os.path.join(path, "spec.yaml"), text)
        if rc:
            msg = ""
            try:
                msg = self.status(path).get("message", "")
            except Exception:
                pass
            raise TestFailure("spec for %s refused: %s (%s)" % (path, errno.errorcode.get(rc, rc), msg))

    def ctl(self, path, verb):
        return self.write(os.path.join(path, "ctl"), verb + "\n")

    def queue(self, name="q"):
        if not os.path.isdir(self.p("queues", name)):
            self.mkdir(os.path.join("queues", name))
        return os.path.join("queues", name)

    def group(self, spec, name="g", queue="q"):
        """mkdir a group in a queue and submit its spec; returns its path."""
        q = self.queue(queue)
        g = os.path.join(q, "groups", name)
        self.mkdir(g)
        self.submit(g, spec)
        return g

    def ledger(self):
        import csv
        import io
        rows = list(csv.DictReader(io.StringIO(self.read("billing/ledger.csv"))))
        return rows


# The built-in cluster's 4090 (prices and sizes), and Slurm's untyped GPUs
# are 4090s: what a site whose nodes say Gres=gpu:8 writes.
UNTYPED_CLUSTER = """\
name: untyped
slurm_untyped_gpu: "4090"
models:
  - name: "4090"
    vram: 24Gi
    cpu_per_gpu: 20
    memory_per_gpu: 101Gi
    price: {on-demand: "3.60", spot: "1.08"}
machines:
  - {name: unused, model: "4090", gpus: 8}
"""


def parse_status(text):
    """Parse the flat `key: value` YAML of a status file."""
    out = {}
    for line in text.splitlines():
        if not line or line[0] in " -#":
            continue
        k, sep, v = line.partition(":")
        if not sep:
            raise TestFailure("status line without a colon: %r" % line)
        v = v.strip()
        if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
            v = json.loads(v)
        elif len(v) >= 2 and v[0] == "'" and v[-1] == "'":
            v = v[1:-1].replace("''", "'")
        out[k.strip()] = v
    return out


def rfc3339(text):
    """Seconds since the epoch of a status time ("2026-12-02T07:29:16Z")."""
    import calendar
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


def money(text):
    """'0.003 CNY' -> (micro-units int, currency)."""
    m = re.fullmatch(r"\s*(-?\d+)(?:\.(\d{1,6}))?\s+([A-Z]{3})\s*", text)
    if not m:
        raise TestFailure("not a cost: %r" % text)
    frac = (m.group(2) or "").ljust(6, "0")
    v = int(m.group(1)) * 1000000 + (int(frac) if frac else 0)
    return v, m.group(3)


def _children(pid):
    out = []
    for t in _listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    return out


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _proc_state(pid, tid=None):
    path = "/proc/%d/task/%s/stat" % (pid, tid) if tid else "/proc/%d/stat" % pid
    try:
        with open(path) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


def all_stacks(pids):
    """For a hang: every thread of every process in pids and of the
    processes they forked that are still jobfs (the touch helper):
    its state, what it waits in (wchan), its kernel stack, its open
    descriptors of /dev/fuse, and gdb's backtrace of all threads when gdb
    is installed (bounded: gdb cannot attach to a thread stuck in D)."""
    out = []
    seen = set()
    todo = list(pids)
    while todo:
        pid = todo.pop(0)
        if pid in seen or not os.path.isdir("/proc/%d" % pid):
            continue
        seen.add(pid)
        try:
            with open("/proc/%d/comm" % pid) as f:
                comm = f.read().strip()
        except OSError:
            comm = "?"
        if comm.startswith("jobfs") and comm != "jobfs-shim":
            todo += _children(pid)
        elif pid not in pids:
            continue
        fuse = fds_to(pid, "/dev/fuse")
        out.append("== pid %d (%s) state %s, /dev/fuse fds %s"
                   % (pid, comm, _proc_state(pid), fuse or "none"))
        for t in _listdir("/proc/%d/task" % pid):
            wchan = _readtext("/proc/%d/task/%s/wchan" % (pid, t))
            tfuse = fds_to(pid, "/dev/fuse", task=t)
            out.append("-- thread %s state %s wchan %s /dev/fuse fds %s\n%s"
                       % (t, _proc_state(pid, t), wchan, tfuse or "none",
                          _readtext("/proc/%d/task/%s/stack" % (pid, t))))
        if shutil.which("gdb") and _proc_state(pid) not in ("Z", "X"):
            try:
                r = subprocess.run(["gdb", "-batch", "-p", str(pid), "-ex", "thread apply all bt"],
                                   capture_output=True, text=True, timeout=20)
                out.append(r.stdout[-6000:])
            except subprocess.TimeoutExpired:
                out.append("(gdb could not attach within 20 s)")
    return "\n".join(out)


def fds_to(pid, target, task=None):
    """The fds of process pid (or of its thread task) open on target, a
    path as /proc/PID/fd's links name it; [] when it has gone."""
    base = "/proc/%d/task/%s/fd" % (pid, task) if task else "/proc/%d/fd" % pid
    return [fd for fd in _listdir(base) if _readlink("%s/%s" % (base, fd)) == target]


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:
        return ""


def _readtext(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def pid_alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("State:"):
                    return line.split()[1] not in ("Z", "X")
    except OSError:
        return False
    return False


class LineReader:
    """Read lines from a subprocess's stdout with a deadline."""

    def __init__(self, proc):
        self.proc = proc
        self.fd = proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.buf = b""
        self.lines = []
        self.eof = False

    def pump(self, timeout):
        r, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not r:
            return
        try:
            chunk = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            self.eof = True
            return
        self.buf += chunk
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            self.lines.append(line.decode("utf-8", "replace"))

    def wait_for(self, pred, timeout, what="a line"):
        """Pump until pred(lines) is truthy; return it, or fail."""
        deadline = time.monotonic() + timeout
        while True:
            v = pred(self.lines)
            if v:
                return v
            left = deadline - time.monotonic()
            if left <= 0 or self.eof:
                raise TestFailure("timed out after %.1f s waiting for %s; got %r"
                                  % (timeout, what, self.lines[-10:]))
            self.pump(min(left, 0.2))
