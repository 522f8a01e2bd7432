"""The object-store cache's sync (reference 8.3): build/tools/jobfs-sync run
directly against a real S3 endpoint, Ceph's radosgw (scripts/s3.sh), with
real objects put through tests/fixtures/s3util.py.

- a cold sync of a few hundred objects in nested prefixes, every byte
  checked (and the mode, the mtime, that "data" does not take "data-old/");
  a resync with nothing changed makes no GET (fetched 0, one listing page);
  an upstream change (one rewritten, one deleted, one added, a directory
  emptied) fetches and removes exactly those and prunes the directory;
- more than 1000 objects: continuation tokens holding '+', '=', ' ' and
  '/', which libcurl 7.88 signs as the URL has them;
- refusals: wrong credentials (403 SignatureDoesNotMatch; neither secret in
  any file of the cache, on stdout or on stderr), a missing bucket, an
  endpoint that is down (a closed port: fails within its retries, naming
  the endpoint), an empty prefix (ok, 0 objects, said so), a second sync of
  the same cache (exit 3), a credentials file that --as-uid's user cannot
  read (root's own is read as root), --parent that is not the parent,
  --done-fd (the exit code as a line once the result is written; nothing
  on an early exit);
- hostile keys: "../", "a/../../b", a control character, "a//b", and "f"
  beside "f/x" are skipped and named; nothing is written outside the cache;
- kill -9 in the middle of large objects: the rerun continues the .part
  with a Range (bytes fetched < bytes of the objects) and ends byte-exact;
  SIGTERM ends a sync cleanly, keeping what it downloaded;
- a full disk (a 2 MiB tmpfs as the cache) fails cleanly, naming the disk,
  with the old mirror and manifest intact; a read-only one fails too.

The endpoint comes from scripts/s3.sh env (JOBFS_S3_ENDPOINT, ...); without
it these tests skip, or fail when JOBFS_S3_REQUIRED=1.  Each test works in a
bucket of its own, deleted at its end.
"""
import fcntl
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import jfit
from jfit import Skip, TestFailure, case, check

sys.path.insert(0, os.path.join(jfit.repo_root(), "tests", "fixtures"))
import s3util  # noqa: E402


# ------------------------------------------------------------ helpers

def s3env():
    """The endpoint's variables, or skip (fail with JOBFS_S3_REQUIRED=1)."""
    names = ("JOBFS_S3_ENDPOINT", "JOBFS_S3_ACCESS_KEY", "JOBFS_S3_SECRET_KEY",
             "JOBFS_S3_CREDENTIALS")
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        why = "s3: %s not set (scripts/s3.sh start DIR; export its env)" % ", ".join(missing)
        if os.environ.get("JOBFS_S3_REQUIRED") == "1":
            raise TestFailure(why)
        raise Skip(why)
    return {n: os.environ[n] for n in names}


def sync_bin():
    b = os.path.join(os.path.dirname(jfit.jobfs_bin()), "jobfs-sync")
    check(os.access(b, os.X_OK), "%s is not built" % b)
    return b


class Bucket:
    """A fresh bucket for one test; `with` deletes it and what is in it."""

    def __init__(self):
        self.e = s3env()
        self.c = s3util.S3.from_env()
        self.name = "objsync-%s" % uuid.uuid4().hex[:12]
        self.keys = set()

    def __enter__(self):
        self.c.make_bucket(self.name)
        return self

    def __exit__(self, *exc):
        # delete by the keys we put: s3util's listing cannot parse keys
        # with control characters (XML 1.0), which one test puts
        with ThreadPoolExecutor(16) as ex:
            list(ex.map(self._rm, list(self.keys)))
        try:
            self.c.request("DELETE", self.name)
        except s3util.S3Error:
            pass
        return False

    def _rm(self, k):
        try:
            self.c.delete(self.name, k)
        except s3util.S3Error:
            pass

    def put(self, key, data):
        self.keys.add(key)
        return self.c.put(self.name, key, data)

    def put_many(self, objs, jobs=16):
        with ThreadPoolExecutor(jobs) as ex:
            list(ex.map(lambda kv: self.put(*kv), objs.items()))

    def rm(self, key):
        self.c.delete(self.name, key)
        self.keys.discard(key)


def run_sync(env, b, cache, prefix=None, profile=None, extra=(), timeout=300,
             endpoint=None, creds=True):
    """Run jobfs-sync; (exit code, result.json or None, stdout, stderr)."""
    argv = [sync_bin(), "--endpoint", endpoint or b.e["JOBFS_S3_ENDPOINT"], "--bucket", b.name]
    if prefix is not None:
        argv += ["--prefix", prefix]
    if creds:
        argv += ["--credentials", b.e["JOBFS_S3_CREDENTIALS"]]
    if profile:
        argv += ["--profile", profile]
    argv += list(extra) + [cache]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    for mark in jfit.SANITIZER_MARKS:
        check(mark not in p.stderr, "jobfs-sync stderr has %r:\n%s" % (mark, p.stderr[-3000:]))
    res = None
    try:
        with open(os.path.join(cache, "result.json")) as f:
            res = json.load(f)
    except (OSError, ValueError):
        pass
    return p.returncode, res, p.stdout, p.stderr


def synced(env, b, cache, prefix=None, **kw):
    rc, res, out, err = run_sync(env, b, cache, prefix, **kw)
    check(rc == 0, "jobfs-sync exited %d: %s" % (rc, err.strip()[-800:]))
    check(res and res["ok"], "result not ok: %s" % res)
    check(json.loads(out) == res, "stdout is not result.json")
    return res


def mirror(cache):
    """{relative path: bytes} of cache/data."""
    out = {}
    root = os.path.join(cache, "data")
    for d, _, files in os.walk(root):
        for fn in files:
            p = os.path.join(d, fn)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def check_mirror(cache, want):
    have = mirror(cache)
    extra = sorted(set(have) - set(want))[:5]
    missing = sorted(set(want) - set(have))[:5]
    check(not extra and not missing, "mirror: extra %s, missing %s" % (extra, missing))
    bad = [k for k in want if have[k] != want[k]][:5]
    check(not bad, "mirror: wrong bytes in %s" % bad)


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rnd(n, seed):
    return random.Random(seed).randbytes(n)


def cache_dir(env, name="cache"):
    return os.path.join(env.work, name)


def files_hold(root, needles):
    """The files under root whose bytes hold any of needles."""
    hits = []
    for d, _, files in os.walk(root):
        for fn in files:
            p = os.path.join(d, fn)
            try:
                with open(p, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if any(n.encode() in data for n in needles):
                hits.append(p)
    return hits


def secrets():
    return [os.environ["JOBFS_S3_SECRET_KEY"], "wrongTestSecretKey0000000000000000000000"]


# ------------------------------------------------------------ tests

@case(timeout=300)
def test_cold_resync_change(env):
    with Bucket() as b:
        want = {}
        objs = {}
        for i in range(300):
            depth = i % 4
            rel = "/".join("d%d" % ((i // 7 + k) % 5) for k in range(depth))
            rel = (rel + "/" if rel else "") + "obj-%03d.bin" % i
            data = rnd(i * 61 % 20000, i)
            objs["data/" + rel] = data
            want[rel] = data
        # names that need encoding, an empty object, a marker, a neighbour prefix
        odd = {"sp ace+plus=eq&amp.txt": b"odd", "caf\u00e9/\u20ac.txt": b"unicode",
               "empty": b"", "tilde~_-.x": b"t"}
        for k, v in odd.items():
            objs["data/" + k] = v
            want[k] = v
        objs["data/marker/"] = b""
        objs["data-old/not-mine.bin"] = b"no"
        objs["outside.bin"] = b"no"
        b.put_many(objs)
        cache = cache_dir(env)
        res = synced(env, b, cache, "data")
        n = len(want)
        print("cold:", res["message"], "%.2fs" % res["seconds"])
        check(res["objects"] == n and res["fetched"] == n, "cold: %s" % res)
        check(res["bytes"] == sum(map(len, want.values())), "bytes: %s" % res)
        check(res["fetched_bytes"] == res["bytes"], "fetched_bytes: %s" % res)
        check(res["listing_pages"] == 1 and res["skipped"] == 0, "cold: %s" % res)
        check_mirror(cache, want)
        st = os.stat(os.path.join(cache, "data", "d0", "obj-001.bin"))
        check(st.st_mode & 0o777 == 0o444, "file mode %o" % st.st_mode)
        listed = {o["key"]: o for o in b.c.list(b.name, "data/")}
        lm = listed["data/d0/obj-001.bin"]["last_modified"]
        t = int(time.mktime(time.strptime(lm[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone)
        check(int(st.st_mtime) == t, "mtime %d, LastModified %s" % (st.st_mtime, lm))
        check(os.listdir(os.path.join(cache, "partial")) == [], "partial/ not empty")
        with open(os.path.join(cache, "manifest")) as f:
            manifest = f.read()
        check(len(manifest.splitlines()) == n + 1, "manifest lines")
        prog = json.load(open(os.path.join(cache, "progress")))
        check(prog["objects_done"] == n and prog["bytes_total_so_far"] == res["bytes"],
              "progress %s" % prog)

        # nothing changed: no GET
        res = synced(env, b, cache, "data")
        check(res["fetched"] == 0 and res["fetched_bytes"] == 0 and res["kept"] == n,
              "resync: %s" % res)
        check(res["listing_pages"] == 1 and res["removed"] == 0, "resync: %s" % res)
        check(open(os.path.join(cache, "manifest")).read() == manifest, "manifest changed")

        # upstream: two rewritten (one to the same size), one deleted, one
        # added, d4/ emptied
        b.put("data/obj-000.bin", b"rewritten")
        want["obj-000.bin"] = b"rewritten"
        same_size = rnd(len(want["d0/obj-001.bin"]), 999)
        b.put("data/d0/obj-001.bin", same_size)
        want["d0/obj-001.bin"] = same_size
        b.rm("data/empty")
        del want["empty"]
        b.put("data/new/deep/er.bin", b"new")
        want["new/deep/er.bin"] = b"new"
        d4 = [k for k in want if k.startswith("d4/")]
        for k in d4:
            b.rm("data/" + k)
            del want[k]
        res = synced(env, b, cache, "data")
        print("change:", res["message"])
        check(res["fetched"] == 3, "fetched %s" % res)
        check(res["removed"] == 1 + len(d4), "removed %s" % res)
        check(res["fetched_bytes"] == len(same_size) + 9 + 3, "fetched_bytes %s" % res)
        check_mirror(cache, want)
        check(not os.path.exists(os.path.join(cache, "data", "d4")), "d4/ not pruned")


@case(timeout=600)
def test_continuation(env):
    with Bucket() as b:
        n = 2100
        # each page ends on a key holding '+', '=', ' ' and '/' (radosgw's
        # continuation token is the last key)
        objs = {"c/d%d/k+%04d=x y.bin" % (i % 3, i): ("%d" % i).encode() for i in range(n)}
        b.put_many(objs, jobs=32)
        cache = cache_dir(env)
        res = synced(env, b, cache, "c/")
        print(res["message"], "%.2fs" % res["seconds"])
        check(res["objects"] == n and res["fetched"] == n, "%s" % res)
        check(res["listing_pages"] == 3, "listing_pages %s" % res["listing_pages"])
        check_mirror(cache, {k[2:]: v for k, v in objs.items()})
        res = synced(env, b, cache, "c/")
        check(res["fetched"] == 0 and res["listing_pages"] == 3, "resync %s" % res)


@case(timeout=120)
def test_wrong_credentials(env):
    with Bucket() as b:
        b.put("p/a", b"a")
        cache = cache_dir(env)
        rc, res, out, err = run_sync(env, b, cache, "p", profile="wrong")
        check(rc == 2, "exit %d" % rc)
        check("SignatureDoesNotMatch" in err and "SignatureDoesNotMatch" in res["message"],
              "message: %s" % err)
        check(not res["ok"], "ok")
        hits = files_hold(cache, secrets())
        check(not hits, "a secret in %s" % hits)
        check(not any(s in out or s in err for s in secrets()), "a secret on stdout/stderr")
        check(mirror(cache) == {}, "something was written")
        # and on success neither is anywhere either
        synced(env, b, cache, "p")
        check(not files_hold(cache, secrets()), "a secret in the cache")
        # no credentials: anonymous, refused by this bucket
        rc, res, out, err = run_sync(env, b, cache, "p", creds=False)
        check(rc == 2 and "403 AccessDenied" in err, "anonymous: %d %s" % (rc, err))
        check(mirror(cache) == {"a": b"a"}, "the mirror changed after a refusal")


@case(timeout=120)
def test_refusals(env):
    with Bucket() as b:
        cache = cache_dir(env)
        # a bucket that does not exist
        b2 = Bucket()
        b2.name = "objsync-nosuch-%s" % uuid.uuid4().hex[:8]
        rc, res, out, err = run_sync(env, b2, cache)
        check(rc == 2, "exit %d" % rc)
        check('404 NoSuchBucket: bucket "%s" does not exist' % b2.name in err, err)
        # nothing under the prefix: ok, and said so
        b.put("elsewhere/x", b"x")
        res = synced(env, b, cache, "nothing/here")
        check(res["objects"] == 0 and "no objects" in res["message"], "%s" % res)
        # an endpoint that is down: fails within its retries, naming it
        ep = "http://127.0.0.1:%d" % closed_port()
        rc, res, out, err = run_sync(env, b, cache, "p", endpoint=ep, extra=["--timeout", "5"])
        check(rc == 2 and ep in err and "not reachable" in err, "down: %d %s" % (rc, err))
        check(re.search(r"\(tried 4 times\)", err), "down: not its tries: %s" % err)
        check(ep in res["message"], "result: %s" % res)
        # another sync holds the lock: exit 3, result.json untouched
        before = open(os.path.join(cache, "result.json")).read()
        with open(os.path.join(cache, "lock"), "a") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            rc, res, out, err = run_sync(env, b, cache, "elsewhere")
        check(rc == 3 and "another sync" in err, "locked: %d %s" % (rc, err))
        check(open(os.path.join(cache, "result.json")).read() == before, "result.json changed")
        # bad usage
        p = subprocess.run([sync_bin(), "--bucket", "x", cache], capture_output=True, text=True)
        check(p.returncode == 1 and "usage" in p.stderr, "usage: %d" % p.returncode)
        rc, res, out, err = run_sync(env, b, cache, "elsewhere", extra=["--parent", "x"])
        check(rc == 1 and "--parent needs a pid" in err, "--parent x: %d %s" % (rc, err))
        # --parent: a parent that is not (any more) this process's: exit 2 at
        # once; its own parent: synced
        rc, res, out, err = run_sync(env, b, cache, "elsewhere", extra=["--parent", "1"])
        check(rc == 2 and "the parent process 1 has ended" in err, "--parent 1: %d %s" % (rc, err))
        res = synced(env, b, cache, "elsewhere", extra=["--parent", str(os.getpid())])
        check(res["objects"] == 1, "%s" % res)
        # --done-fd: the exit code as a line once the result is written (0
        # synced, 2 failed); an early exit (the lock held) writes nothing
        for ep, want in ((None, 0), ("http://127.0.0.1:%d" % closed_port(), 2)):
            r, w = os.pipe()
            argv = [sync_bin(), "--endpoint", ep or b.e["JOBFS_S3_ENDPOINT"], "--bucket", b.name,
                    "--prefix", "elsewhere", "--credentials", b.e["JOBFS_S3_CREDENTIALS"],
                    "--timeout", "5", "--done-fd", str(w), cache]
            p = subprocess.run(argv, capture_output=True, text=True, pass_fds=(w,), timeout=60)
            os.close(w)
            line = os.read(r, 64)
            os.close(r)
            check(p.returncode == want and line == b"%d\n" % want,
                  "--done-fd (%s): exit %d, line %r: %s" % (ep, p.returncode, line, p.stderr))
        with open(os.path.join(cache, "lock"), "a") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            r, w = os.pipe()
            p = subprocess.run([sync_bin(), "--endpoint", b.e["JOBFS_S3_ENDPOINT"], "--bucket",
                                b.name, "--done-fd", str(w), cache], capture_output=True,
                               text=True, pass_fds=(w,), timeout=60)
            os.close(w)
            line = os.read(r, 64)
            os.close(r)
        check(p.returncode == 3 and line == b"", "--done-fd, locked: %d %r" % (p.returncode, line))
        rc, res, out, err = run_sync(env, b, cache, "elsewhere", extra=["--done-fd", "1"])
        check(rc == 1 and "--done-fd needs an open fd from 3 on" in err, "--done-fd 1: %d %s"
              % (rc, err))


@case(timeout=120)
def test_credentials_as_user(env):
    if os.geteuid() != 0:
        raise Skip("--as-uid needs root")
    with Bucket() as b:
        b.put("p/a", b"a")
        cache = cache_dir(env)
        creds = os.path.join(env.work, "creds")
        with open(b.e["JOBFS_S3_CREDENTIALS"]) as f:
            text = f.read()
        with open(creds, "w") as f:
            f.write(text)
        os.chmod(creds, 0o600)          # root's, unreadable by nobody
        os.chmod(env.work, 0o755)
        e = dict(b.e, JOBFS_S3_CREDENTIALS=creds)
        b.e = e
        as_nobody = ["--as-uid", "65534", "--as-gid", "65534"]
        # as root for root: read with root's rights (no child), a root-only file
        res = synced(env, b, os.path.join(env.work, "cache-root"), "p",
                     extra=["--as-uid", "0", "--as-gid", "0"])
        check(res["fetched"] == 1, "%s" % res)
        rc, res, out, err = run_sync(env, b, cache, "p", extra=as_nobody)
        check(rc == 2 and "cannot be read as uid 65534" in err and "Permission denied" in err,
              "as nobody: %d %s" % (rc, err))
        check(not files_hold(cache, secrets()), "a secret in the cache")
        os.chown(creds, 65534, 65534)
        res = synced(env, b, cache, "p", extra=as_nobody)
        check(res["fetched"] == 1, "%s" % res)
        # a FIFO or a directory is not a credentials file (and does not hang)
        fifo = os.path.join(env.work, "fifo")
        os.mkfifo(fifo)
        b.e = dict(b.e, JOBFS_S3_CREDENTIALS=fifo)
        rc, res, out, err = run_sync(env, b, cache, "p", extra=as_nobody, timeout=20)
        check(rc == 2 and "not a regular file" in err, "fifo: %d %s" % (rc, err))


@case(timeout=120)
def test_hostile_keys(env):
    with Bucket() as b:
        bad = ["p/../escape", "p/a/../../b", "p/ctl\x01x", "p//dbl", "p/./dot"]
        good = {"p/ok": b"ok", "p/f": b"file", "p/f/x": b"under a file", "p/f.txt": b"f"}
        for k in bad:
            b.put(k, b"evil")
        b.put_many(good)
        cache = cache_dir(env)
        res = synced(env, b, cache, "p")
        print(res["message"], res["skipped_keys"])
        check(res["skipped"] == len(bad) + 1, "skipped %s" % res)
        named = res["skipped_keys"]
        for k in ["p/../escape", "p/a/../../b", "p/ctl\\x01x", "p//dbl", "p/./dot", "p/f/x"]:
            check(k in named, "%r not named in %s" % (k, named))
        check(any("..\" component" in w for w in res["warnings"]), "%s" % res["warnings"])
        check_mirror(cache, {"ok": b"ok", "f": b"file", "f.txt": b"f"})
        for p in ("escape", "b", os.path.join("data", "b")):
            check(not os.path.exists(os.path.join(env.work, p)), "%s written" % p)
        check(not files_hold(env.work, ["evil"]), "evil bytes written: %s"
              % files_hold(env.work, ["evil"]))
        # a symlink planted in the mirror does not redirect a write
        os.makedirs(os.path.join(env.work, "outside"))
        data = os.path.join(cache, "data")
        os.symlink(os.path.join(env.work, "outside"), os.path.join(data, "sub"))
        b.put("p/sub/x", b"through the link?")
        res = synced(env, b, cache, "p")
        check(os.listdir(os.path.join(env.work, "outside")) == [], "written through a symlink")
        check(res["skipped"] == len(bad) + 2 and "p/sub/x" in res["skipped_keys"], "%s" % res)


@case(timeout=600)
def test_kill_and_resume(env):
    with Bucket() as b:
        size = 48 << 20
        objs = {"big/%d.bin" % i: rnd(size, i) for i in range(4)}
        b.put_many(objs, jobs=4)
        cache = cache_dir(env)
        partial = os.path.join(cache, "partial")
        argv = [sync_bin(), "--endpoint", b.e["JOBFS_S3_ENDPOINT"], "--bucket", b.name,
                "--prefix", "big", "--credentials", b.e["JOBFS_S3_CREDENTIALS"],
                "--parallel", "1", cache]

        def parts():
            try:
                return {f: os.path.getsize(os.path.join(partial, f)) for f in os.listdir(partial)
                        if f.endswith(".part")}
            except OSError:
                return {}

        def kill_midway(sig):
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                ps = parts()
                # one download whole (checked again, not fetched again), one cut
                if any(0 < n < size for n in ps.values()) and \
                        any(n == size for n in ps.values()):
                    break
                if p.poll() is not None:
                    break
                time.sleep(0.002)
            p.send_signal(sig)
            out, err = p.communicate(timeout=60)
            return p.returncode, ps, err.decode()

        rc, ps, err = kill_midway(signal.SIGKILL)
        check(rc == -signal.SIGKILL, "sync ended before the kill (%s): %s" % (rc, err))
        check(not os.path.exists(os.path.join(cache, "manifest")), "a manifest after the kill")
        check(mirror(cache) == {}, "data/ changed before the commit")
        print("killed with", sorted(parts().values()))
        res = synced(env, b, cache, "big")
        print("resumed:", res["message"], "resumed", res["resumed"])
        total = size * len(objs)
        check(res["resumed"] >= 1, "nothing resumed: %s" % res)
        check(res["fetched_bytes"] < total, "fetched %d of %d" % (res["fetched_bytes"], total))
        check(res["fetched"] == len(objs), "%s" % res)
        check_mirror(cache, {k[4:]: v for k, v in objs.items()})
        check(os.listdir(partial) == [], "partial/ not empty")

        # SIGTERM: a clean stop that keeps the download for the next sync
        b.put("big/4.bin", rnd(size, 4))
        objs["big/4.bin"] = rnd(size, 4)
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(n > 0 for n in parts().values()):
            time.sleep(0.002)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
        err = err.decode()
        if p.returncode == 0:
            print("SIGTERM came too late: the sync had finished")
        else:
            check(p.returncode == 2 and "stopped by a signal" in err, "SIGTERM: %d %s"
                  % (p.returncode, err))
            check(parts(), "the download was not kept")
            res = synced(env, b, cache, "big")
            check(res["fetched_bytes"] < size, "after SIGTERM: %s" % res)
        check_mirror(cache, {k[4:]: v for k, v in objs.items()})


@case(timeout=180)
def test_full_disk(env):
    if os.geteuid() != 0:
        raise Skip("mounting a tmpfs needs root")
    with Bucket() as b:
        small = {"s/%d.bin" % i: rnd(20000, i) for i in range(10)}
        b.put_many(small)
        cache = cache_dir(env)
        os.makedirs(cache)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", cache], check=True)
        try:
            res = synced(env, b, cache, "s")
            want = {k[2:]: v for k, v in small.items()}
            check_mirror(cache, want)
            manifest = open(os.path.join(cache, "manifest")).read()
            # one object changed, one big one added: it cannot fit
            b.put("s/0.bin", b"changed")
            b.put("s/zz-big.bin", rnd(3 << 20, 7))
            rc, res, out, err = run_sync(env, b, cache, "s")
            check(rc == 2, "exit %d: %s" % (rc, err))
            check("no space left on the disk of %s" % cache in err, "message: %s" % err)
            check("tmpfs mounted on %s" % cache in err, "the disk not named: %s" % err)
            check(not res["ok"] and "no space left" in res["message"], "result %s" % res)
            check_mirror(cache, want)
            check(open(os.path.join(cache, "manifest")).read() == manifest, "manifest changed")
            check(os.listdir(os.path.join(cache, "partial")) == [], "partial/ kept files")
            # read-only: fails, says why
            subprocess.run(["mount", "-o", "remount,ro", cache], check=True)
            rc, res, out, err = run_sync(env, b, cache, "s")
            check(rc == 2 and "Read-only file system" in err, "ro: %d %s" % (rc, err))
            check_mirror(cache, want)
        finally:
            subprocess.run(["umount", "-l", cache])


@case(timeout=120)
def test_prefix_change(env):
    with Bucket() as b:
        b.put_many({"a/x/1": b"1", "a/2": b"2", "b/3": b"3", "b/y/4": b"4"})
        cache = cache_dir(env)
        synced(env, b, cache, "a")
        check_mirror(cache, {"x/1": b"1", "2": b"2"})
        res = synced(env, b, cache, "b/")
        check(res["removed"] == 2 and res["fetched"] == 2, "%s" % res)
        check_mirror(cache, {"3": b"3", "y/4": b"4"})
        check(not os.path.exists(os.path.join(cache, "data", "x")), "x/ not pruned")
        # the whole bucket
        res = synced(env, b, cache, "")
        check_mirror(cache, {"a/x/1": b"1", "a/2": b"2", "b/3": b"3", "b/y/4": b"4"})
