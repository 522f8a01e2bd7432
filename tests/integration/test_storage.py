"""Storage (reference 8.3) on a real mount: /volumes and /objects made with
mkdir, their spec.yaml, status, events and `data`; a spec's `storage:`
checked when it is written; emptydirs, volumes and object caches inside
real containers (crun, the test registry's busybox image); object sources
synced from a real S3 (Ceph's radosgw, scripts/s3.sh) with jobfs-sync.

Tests that need containers remount with --runtime oci (env.use_containers)
and fail rather than skip under the README's test command
($JOBFS_OCI_REQUIRED); tests that need S3 read $JOBFS_S3_* and fail
rather than skip when $JOBFS_S3_REQUIRED is set.
"""
import errno
import json
import os
import stat
import subprocess
import time

import jfit
from jfit import Skip, TestFailure, case, check

HERE = os.path.dirname(os.path.abspath(__file__))
S3UTIL = os.path.join(HERE, "..", "fixtures", "s3util.py")


def reasons(env, path):
    out = []
    for line in env.read(os.path.join(path, "events")).splitlines():
        parts = line.split(" ", 4)
        if len(parts) >= 4:
            out.append(parts[2])
    return out


def s3_env():
    """The test S3 endpoint (scripts/s3.sh env), or skip/fail."""
    need = ("JOBFS_S3_ENDPOINT", "JOBFS_S3_ACCESS_KEY", "JOBFS_S3_SECRET_KEY",
            "JOBFS_S3_CREDENTIALS")
    missing = [k for k in need if not os.environ.get(k)]
    if missing:
        why = "s3: no test endpoint (%s unset; scripts/s3.sh start DIR)" % ", ".join(missing)
        if os.environ.get("JOBFS_S3_REQUIRED"):
            raise TestFailure(why)
        raise Skip(why)
    return {k: os.environ[k] for k in os.environ if k.startswith("JOBFS_S3_")}


def s3(*args, check_rc=True):
    r = subprocess.run(["python3", S3UTIL] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=120)
    if check_rc and r.returncode != 0:
        raise TestFailure("s3util %s: %s %s" % (" ".join(map(str, args)), r.stdout, r.stderr))
    return r


# ---- volumes: the tree ----

@case()
def test_volume_tree(env):
    check("volumes" in os.listdir(env.p()) and "objects" in os.listdir(env.p()),
          "root lists %s" % os.listdir(env.p()))
    env.mkdir("volumes/ckpt")
    check(os.listdir(env.p("volumes")) == ["ckpt"], "volumes lists %s" % os.listdir(env.p("volumes")))
    v = "volumes/ckpt"
    st = env.status(v)
    check(st["state"] == "Ready" and st["name"] == "ckpt", "status %s" % st)
    check(st["used_by"] == [] and st["size"] == 0, "status %s" % st)
    # data: a symlink to the volume's directory in the state dir
    data = env.p(v, "data")
    check(stat.S_ISLNK(os.lstat(data).st_mode), "data is not a symlink")
    target = os.readlink(data)
    check(target == os.path.join(env.state, "volumes", "ckpt"), "data -> %s" % target)
    check(os.lstat(data).st_size == len(target), "the link's size is not its target's length")
    check(stat.S_IMODE(os.stat(target).st_mode) == 0o1777, "mode %o" % os.stat(target).st_mode)
    # cp -r puts files in without the daemon
    src = os.path.join(env.tmp, "code")
    os.makedirs(os.path.join(src, "pkg"))
    with open(os.path.join(src, "pkg", "train.py"), "w") as f:
        f.write("print('hi')\n")
    env.sh("cp -r %s %s/" % (src, data))
    check(os.path.exists(os.path.join(target, "code", "pkg", "train.py")), "cp -r through data/")
    check(env.status(v)["used_bytes"] >= 4096, "used_bytes %s" % env.status(v)["used_bytes"])
    # a spec: size and private; the status says when used passes size
    check(env.write(os.path.join(v, "spec.yaml"), "size: 8Ki\nprivate: true\n") == 0, "spec refused")
    with open(os.path.join(target, "big"), "wb") as f:
        f.write(os.urandom(64 * 1024))
    st = env.status(v)
    check(st["size"] == 8192 and st["private"] is True, "status %s" % st)
    check("past its size" in st["message"], "message %r" % st["message"])
    check(stat.S_IMODE(os.stat(target).st_mode) == 0o700, "private mode %o" % os.stat(target).st_mode)
    yml = jfit.parse_status(env.read(os.path.join(v, "status")))
    check(yml["private"] == "true", "status says private: %r" % yml["private"])
    check(env.read(os.path.join(v, "spec.yaml")) == "size: 8Ki\nprivate: true\n", "spec.yaml reads back")
    # a bad spec: refused, named, the last one kept
    check(env.write(os.path.join(v, "spec.yaml"), "size: lots\n") == errno.EINVAL, "bad size accepted")
    check(env.write(os.path.join(v, "spec.yaml"), "sise: 1Gi\n") == errno.EINVAL, "unknown key accepted")
    st = env.status(v)
    check(st["size"] == 8192 and "unknown key 'sise'" in st["message"], "status %s" % st)
    ev = reasons(env, v)
    check(ev[:2] == ["Created", "Updated"] and ev.count("Invalid") == 2, "events %s" % ev)
    # names: the tree's rule
    for bad in ("-x", "a b", ".hidden", "x" * 64):
        try:
            os.mkdir(env.p("volumes", bad))
            raise TestFailure("volume %r made" % bad)
        except OSError as e:
            check(e.errno == errno.EINVAL, "mkdir %r: %s" % (bad, e))
    try:
        os.mkdir(env.p("volumes", "ckpt"))
        raise TestFailure("a second ckpt made")
    except OSError as e:
        check(e.errno == errno.EEXIST, "mkdir twice: %s" % e)
    # rmdir: gone with its files (to the trash)
    os.rmdir(env.p(v))
    check(os.listdir(env.p("volumes")) == [], "volumes lists %s" % os.listdir(env.p("volumes")))
    env.poll_until(lambda: not os.path.exists(target), what="the volume's files to go")
    # kept across a restart
    env.mkdir("volumes/kept")
    env.write("volumes/kept/spec.yaml", "size: 1Gi\n")
    env.remount()
    st = env.status("volumes/kept")
    check(st["size"] == 1 << 30, "after a remount: %s" % st)


@case()
def test_volume_size_warning(env):
    """A volume measured past its size: a Warning in its events (once), and
    a Normal one when it is back under."""
    env.use_runtime("host", "--evict-check-ms", "200")
    env.mkdir("volumes/small")
    check(env.write("volumes/small/spec.yaml", "size: 64Ki\n") == 0, "spec refused")
    target = os.readlink(env.p("volumes/small/data"))
    with open(os.path.join(target, "big"), "wb") as f:
        f.write(os.urandom(256 * 1024))
    env.poll_until(lambda: "SizeExceeded" in reasons(env, "volumes/small"),
                   what="a SizeExceeded event", timeout=20)
    text = env.read("volumes/small/events")
    check(" Warning SizeExceeded volume used is past its size 64Ki" in text, text)
    time.sleep(0.6)  # a few more rounds: said once, not each round
    check(reasons(env, "volumes/small").count("SizeExceeded") == 1, env.read("volumes/small/events"))
    os.unlink(os.path.join(target, "big"))
    env.poll_until(lambda: "SizeOK" in reasons(env, "volumes/small"),
                   what="a SizeOK event", timeout=20)


@case()
def test_spec_names_storage(env):
    """A spec naming a volume or source that does not exist is refused when
    written, naming it; storage on the host runtime is refused too."""
    env.use_runtime("host")
    q = env.queue()
    g = os.path.join(q, "groups", "g")
    env.mkdir(g)
    rc = env.write(os.path.join(g, "spec.yaml"),
                   "command: [\"true\"]\nstorage:\n- {type: emptydir, path: /s}\n")
    check(rc == errno.ENOTSUP or rc == errno.EOPNOTSUPP or rc == errno.EINVAL,
          "host runtime accepted storage: %s" % rc)
    st = env.status(g)
    check(st["state"] == "Invalid" and "runtime host" in st["message"], "status %s" % st)


@case(timeout=60)
def test_spec_unknown_volume(env):
    env.container_registry()
    reg = env.use_containers()
    q = env.queue()
    g = os.path.join(q, "groups", "g")
    env.mkdir(g)
    spec = ("image: %s/jobfs/busybox:latest\nargs: [\"true\"]\nstorage:\n"
            "- {type: volume, name: nope, path: /v}\n" % reg)
    check(env.write(os.path.join(g, "spec.yaml"), spec) == errno.EINVAL, "unknown volume accepted")
    st = env.status(g)
    check("no volume nope" in st["message"] and "mkdir /volumes/nope" in st["message"],
          "message %r" % st["message"])
    spec = spec.replace("type: volume, name: nope", "type: object, name: models")
    check(env.write(os.path.join(g, "spec.yaml"), spec) == errno.EINVAL, "unknown source accepted")
    check("no object source models" in env.status(g)["message"], env.status(g)["message"])


# ---- storage inside real containers ----

def image(reg):
    return "%s/jobfs/busybox:latest" % reg


def run_dirs(env):
    """Every emptydir directory left under the state's run directories."""
    left = []
    for root, dirs, _ in os.walk(os.path.join(env.state, "runs")):
        for d in dirs:
            if d == "emptydir":
                left.append(os.path.join(root, d))
    return left


@case(timeout=120)
def test_containers_storage(env):
    """Two containers of a node share an emptydir on disk and a tmpfs one
    (medium: Memory, its size), and write a volume read-write; the
    volume's events say who mounted it; the emptydirs go with the node."""
    reg = env.use_containers()
    env.mkdir("volumes/ckpt")
    vdir = os.readlink(env.p("volumes/ckpt/data"))
    with open(os.path.join(vdir, "input.txt"), "w") as f:
        f.write("from the host\n")
    spec = """containers:
- name: writer
  image: %(img)s
  args: ["sh", "-c", "echo shared > /scratch/x; cat /ckpt/input.txt > /ckpt/seen; echo $JOB_TASK_INDEX > /ckpt/by-writer; sleep 1"]
- name: reader
  image: %(img)s
  args: ["sh", "-c", "for i in $(seq 100); do [ -f /scratch/x ] && break; sleep 0.1; done; cat /scratch/x; grep ' /fast ' /proc/mounts; df -k /fast | tail -1"]
storage:
- {type: emptydir, path: /scratch, size: 64Mi}
- {type: emptydir, path: /fast, medium: Memory, size: 16Mi}
- {type: volume, name: ckpt, path: /ckpt}
""" % {"img": image(reg)}
    g = env.group(spec)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=90)
    n = os.path.join(g, "tasks/0/nodes/0")
    logs = env.read(os.path.join(n, "logs"))
    check(st["state"] == "Succeeded", "ended %s: %s\n%s" % (st["state"], st["message"], logs))
    check("shared\n" in logs, "the reader did not see the writer's file: %r" % logs)
    check(" /fast tmpfs " in logs, "/fast is no tmpfs: %r" % logs)
    # df -k: 16 MiB = 16384 1K-blocks
    check(" 16384 " in logs, "/fast is not 16Mi: %r" % logs)
    with open(os.path.join(vdir, "seen")) as f:
        check(f.read() == "from the host\n", "the volume's file through the container")
    check(os.path.exists(os.path.join(vdir, "by-writer")), "written in the volume")
    ev = reasons(env, "volumes/ckpt")
    check("Mounted" in ev and "Unmounted" in ev, "volume events %s" % ev)
    text = env.read("volumes/ckpt/events")
    check("%s/tasks/0/nodes/0" % g in text, "events name the node:\n%s" % text)
    check(env.status("volumes/ckpt")["used_by"] == [], "still used_by after the end")
    env.poll_until(lambda: not run_dirs(env), what="the emptydirs to go", timeout=20)


@case(timeout=120)
def test_volume_busy_and_read_only(env):
    reg = env.use_containers()
    env.mkdir("volumes/code")
    vdir = os.readlink(env.p("volumes/code/data"))
    spec = ("image: %s\nargs: [\"sh\", \"-c\", \"ls /code; touch /code/x || echo refused; sleep 30\"]\n"
            "storage:\n- {type: volume, name: code, path: /code, read_only: true}\n" % image(reg))
    g = env.group(spec)
    n = os.path.join(g, "tasks/0/nodes/0")
    env.wait(n, "Running", timeout=60)
    env.poll_until(lambda: env.status("volumes/code")["used_by"], what="used_by")
    check(env.status("volumes/code")["used_by"] == ["%s/tasks/0/nodes/0" % g],
          "used_by %s" % env.status("volumes/code")["used_by"])
    try:
        os.rmdir(env.p("volumes/code"))
        raise TestFailure("rmdir of a volume in use")
    except OSError as e:
        check(e.errno == errno.EBUSY, "rmdir: %s" % e)
    check("in use by" in env.read("volumes/code/events"), env.read("volumes/code/events"))
    env.poll_until(lambda: "refused" in env.read(os.path.join(n, "logs")), what="touch refused")
    check(not os.path.exists(os.path.join(vdir, "x")), "a read-only volume was written")
    check(env.ctl(g, "stop") == 0, "stop")
    env.wait(g, "Stopped", timeout=30)
    env.poll_until(lambda: env.status("volumes/code")["used_by"] == [], what="used_by empty")
    # a stopped group is not live: the volume can go now
    os.rmdir(env.p("volumes/code"))


@case(timeout=120)
def test_emptydir_evicted(env):
    """An on-disk emptydir past its size: the node is evicted as the kubelet
    does it (reason Evicted, a Warning Evicted event, a failed attempt)."""
    reg = env.container_registry()
    env.use_runtime("oci", "--insecure-registry", reg, "--evict-check-ms", "200")
    spec = ("image: %s\nretries: 0\nargs: [\"sh\", \"-c\", \"dd if=/dev/zero of=/scratch/big bs=1M count=4; "
            "sleep 60\"]\nstorage:\n- {type: emptydir, path: /scratch, size: 1Mi, name: scratch}\n"
            % image(reg))
    g = env.group(spec)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=90)
    check(st["state"] == "Failed", "ended %s" % st["state"])
    n = os.path.join(g, "tasks/0/nodes/0")
    ns = env.status(n)
    check(ns["reason"] == "Evicted", "reason %r (%s)" % (ns["reason"], ns["message"]))
    text = env.read(os.path.join(n, "events"))
    check(" Warning Evicted " in text and 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi"'
          in text, "events:\n%s" % text)
    env.poll_until(lambda: not run_dirs(env), what="the emptydir to go", timeout=20)


@case(timeout=150)
def test_volume_shared_by_gang(env):
    """A 4-node gang writes one volume: every node sees the others' files."""
    reg = env.use_containers()
    env.mkdir("volumes/shared")
    vdir = os.readlink(env.p("volumes/shared/data"))
    spec = ("image: %s\nnodes: 4\nargs: [\"sh\", \"-c\", \"echo $JOB_NODE_INDEX > /shared/rank-$JOB_NODE_INDEX; "
            "for i in $(seq 200); do [ $(ls /shared | wc -l) -ge 4 ] && break; sleep 0.1; done; ls /shared\"]\n"
            "storage:\n- {type: volume, name: shared, path: /shared}\n" % image(reg))
    g = env.group(spec)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=120)
    check(st["state"] == "Succeeded", "ended %s: %s" % (st["state"], st["message"]))
    check(sorted(os.listdir(vdir)) == ["rank-0", "rank-1", "rank-2", "rank-3"], os.listdir(vdir))
    for i in range(4):
        logs = env.read(os.path.join(g, "tasks/0/nodes/%d/logs" % i))
        check(logs.split() == ["rank-0", "rank-1", "rank-2", "rank-3"],
              "node %d saw %r" % (i, logs))
    ev = reasons(env, "volumes/shared")
    check(ev.count("Mounted") == 4 and ev.count("Unmounted") == 4, "events %s" % ev)


# ---- object sources against a real S3 ----

def bucket_for(env, s3e, name):
    """A fresh bucket for this test (name unique per run), removed with
    its objects when the test ends, passed or not: radosgw keeps them in
    memory (scripts/s3.sh), and a full store refuses every write."""
    b = ("jobfs-%s-%d" % (name, os.getpid() % 100000)).lower()
    s3("rb", b, check_rc=False)
    s3("mb", b)
    env.at_end(lambda: s3("rb", b, check_rc=False))
    return b


def source_spec(s3e, bucket, prefix, profile=None, endpoint=None):
    text = ("endpoint: %s\nbucket: %s\nprefix: %s\nregion: %s\ncredentials: %s\n"
            % (endpoint or s3e["JOBFS_S3_ENDPOINT"], bucket, prefix,
               s3e.get("JOBFS_S3_REGION", "us-east-1"), s3e["JOBFS_S3_CREDENTIALS"]))
    if profile:
        text += "profile: %s\n" % profile
    return text


def tree_files(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


@case(timeout=180)
def test_object_source(env):
    """Synced from S3: status, events, the cache; a container sees it
    read-only; resync after an upstream change fetches only the change."""
    s3e = s3_env()
    b = bucket_for(env, s3e, "src")
    src = os.path.join(env.tmp, "up")
    os.makedirs(os.path.join(src, "sub"))
    files = {"a.txt": b"alpha\n", "sub/b.bin": os.urandom(300000), "sub/c.txt": b"gamma\n"}
    for k, v in files.items():
        with open(os.path.join(src, k), "wb") as f:
            f.write(v)
        s3("put", b, "models/" + k, os.path.join(src, k))
    s3("put", b, "other/not-this.txt", os.path.join(src, "a.txt"))
    env.mkdir("objects/models")
    check(env.status("objects/models")["state"] == "Pending", env.status("objects/models"))
    check(env.write("objects/models/spec.yaml", source_spec(s3e, b, "models")) == 0, "spec refused")
    st = env.wait("objects/models", ("Ready", "Failed"), timeout=60)
    check(st["state"] == "Ready", "sync: %s" % st)
    check(st["objects"] == 3 and st["bytes"] == sum(len(v) for v in files.values()), "status %s" % st)
    check(st["synced"] and st["last_sync"]["fetched"] == 3, "status %s" % st)
    ev = reasons(env, "objects/models")
    check(ev[-2:] == ["Syncing", "Synced"], "events %s" % ev)
    cache = st["path"]
    check(tree_files(cache) == files, "the cache holds %s" % sorted(tree_files(cache)))
    # a container mounts it read-only
    reg = env.use_containers()
    spec = ("image: %s\nargs: [\"sh\", \"-c\", \"cat /models/a.txt; wc -c < /models/sub/b.bin; "
            "touch /models/x 2>/dev/null || echo read-only\"]\n"
            "storage:\n- {type: object, name: models, path: /models}\n" % image(reg))
    g = env.group(spec)
    gs = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    logs = env.read(os.path.join(g, "tasks/0/nodes/0/logs"))
    check(gs["state"] == "Succeeded", "%s: %s\n%s" % (gs["state"], gs["message"], logs))
    check(logs == "alpha\n300000\nread-only\n", "logs %r" % logs)
    # the group's start synced again: one listing, nothing fetched, begun
    # in the step that accepted the group (not in the pass after it)
    st = env.status("objects/models")
    check(st["last_sync"]["fetched"] == 0 and st["last_sync"]["listing_pages"] == 1,
          "the second sync: %s" % st["last_sync"])
    ev = env.read("objects/models/events")
    check("a group that mounts it was accepted" in ev, "events:\n%s" % ev)
    # upstream: one changed, one removed, one added; resync
    with open(os.path.join(src, "a.txt"), "wb") as f:
        f.write(b"alpha two\n")
    s3("put", b, "models/a.txt", os.path.join(src, "a.txt"))
    s3("rm", b, "models/sub/c.txt")
    s3("put", b, "models/sub/d.txt", os.path.join(src, "a.txt"))
    check(env.ctl("objects/models", "resync") == 0, "resync refused")
    env.poll_until(lambda: reasons(env, "objects/models").count("Synced") >= 3, what="resync")
    st = env.wait("objects/models", ("Ready", "Failed"), timeout=60)
    check(st["state"] == "Ready", "resync: %s" % st)
    last = st["last_sync"]
    check(last["fetched"] == 2 and last["removed"] == 1, "resync fetched %s" % last)
    got = tree_files(cache)
    check(got.get("a.txt") == b"alpha two\n" and "sub/c.txt" not in got and
          got.get("sub/d.txt") == b"alpha two\n", "after resync: %s" % sorted(got))
    # an unknown verb, a second source with the same name
    check(env.ctl("objects/models", "sync") == errno.EINVAL, "unknown verb accepted")
    # credentials never shown
    secret = s3e["JOBFS_S3_SECRET_KEY"]
    r = subprocess.run(["grep", "-rl", secret, env.p()], capture_output=True, text=True)
    check(r.stdout == "", "the secret is in %s" % r.stdout)
    r = subprocess.run(["grep", "-rl", secret, env.state], capture_output=True, text=True)
    check(r.stdout == "", "the secret is in the state dir: %s" % r.stdout)
    # in use: rmdir is EBUSY only while a live group names it
    os.rmdir(env.p("objects/models"))
    check(os.listdir(env.p("objects")) == [], os.listdir(env.p("objects")))


@case(timeout=120)
def test_object_source_failures(env):
    """Wrong credentials, a bucket that does not exist, an endpoint that is
    down: each a Failed state with the reason; a group that mounts the
    source waits, saying why."""
    s3e = s3_env()
    b = bucket_for(env, s3e, "fail")
    env.mkdir("objects/wrong")
    env.write("objects/wrong/spec.yaml", source_spec(s3e, b, "p", profile="wrong"))
    st = env.wait("objects/wrong", ("Ready", "Failed"), timeout=60)
    check(st["state"] == "Failed" and "SignatureDoesNotMatch" in st["message"], "status %s" % st)
    check(s3e["JOBFS_S3_SECRET_KEY"] not in json.dumps(st), "the secret in the status")
    env.mkdir("objects/nobucket")
    env.write("objects/nobucket/spec.yaml", source_spec(s3e, "no-such-bucket-here", "p"))
    st = env.wait("objects/nobucket", ("Ready", "Failed"), timeout=60)
    check(st["state"] == "Failed" and "NoSuchBucket" in st["message"], "status %s" % st)
    env.mkdir("objects/down")
    env.write("objects/down/spec.yaml", source_spec(s3e, b, "p", endpoint="http://127.0.0.1:9"))
    st = env.wait("objects/down", ("Ready", "Failed"), timeout=90)
    check(st["state"] == "Failed" and "127.0.0.1:9" in st["message"], "status %s" % st)
    # an empty prefix is Ready with nothing in it
    env.mkdir("objects/empty")
    env.write("objects/empty/spec.yaml", source_spec(s3e, b, "nothing-here"))
    st = env.wait("objects/empty", ("Ready", "Failed"), timeout=60)
    check(st["state"] == "Ready" and st["objects"] == 0, "status %s" % st)
    # a group that mounts a failing source waits with the reason
    reg = env.use_containers()
    spec = ("image: %s\nargs: [\"true\"]\nstorage:\n- {type: object, name: wrong, path: /m}\n"
            % image(reg))
    g = env.group(spec)
    # its start syncs the source again, which fails again: the group says so
    gs = env.wait(g, pred=lambda s: s["message"].startswith("Syncing:") and
                  "SignatureDoesNotMatch" in s["message"], timeout=30,
                  what="a Syncing message with the reason")
    check(gs["state"] == "Waiting" and "trying again in" in gs["message"] and
          gs.get("reason") == "Syncing", "group %s" % gs)
    try:
        os.rmdir(env.p("objects/wrong"))
        raise TestFailure("rmdir of a source a waiting group names")
    except OSError as e:
        check(e.errno == errno.EBUSY, "rmdir: %s" % e)
    # fixed: the right profile; the group starts
    check(env.write("objects/wrong/spec.yaml", source_spec(s3e, b, "p")) == 0, "spec refused")
    gs = env.wait(g, ("Succeeded", "Failed"), timeout=90)
    check(gs["state"] == "Succeeded", "group %s" % gs)


@case(timeout=240)
def test_object_sync_killed_daemon(env):
    """kill -9 of the daemon during a sync: the next daemon resumes it, and
    the cache is byte-exact."""
    s3e = s3_env()
    b = bucket_for(env, s3e, "kill")
    s3("fill", b, "big", 6, 48 * 1024 * 1024)
    env.mkdir("objects/big")
    env.write("objects/big/spec.yaml", source_spec(s3e, b, "big"))
    cache = os.path.join(env.state, "objects", "big")
    env.poll_until(lambda: os.path.isdir(os.path.join(cache, "partial")) and
                   any(os.path.getsize(os.path.join(cache, "partial", f)) > 0
                       for f in os.listdir(os.path.join(cache, "partial"))
                       if f.endswith(".part")), what="a partial download", timeout=60,
                   interval=0.01)
    env.daemon.kill9()

    def syncs_of_cache():
        found = []
        for d in os.listdir("/proc"):
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if cache.encode() in argv and any(a.endswith(b"jobfs-sync") for a in argv[:1]):
                found.append(d)
        return found

    # the killed daemon's sync ends with it (jobfs-sync --parent: SIGTERM
    # when its parent dies), before the next daemon starts another
    env.poll_until(lambda: not syncs_of_cache(), what="the sync to end with its daemon",
                   timeout=30, interval=0.05)
    env.start()
    st = env.wait("objects/big", ("Ready", "Failed"), timeout=180)
    check(st["state"] == "Ready" and st["objects"] == 6, "status %s" % st)
    ev = env.read("objects/big/events")
    check("restarted during a sync" in ev, "events:\n%s" % ev)
    # resumed, not begun again: what the first daemon's sync had written
    # (at least one partial download) was not fetched twice
    total = 6 * 48 * 1024 * 1024
    check(0 < st["last_sync"]["fetched_bytes"] < total, "fetched %s of %d bytes"
          % (st["last_sync"]["fetched_bytes"], total))
    # byte-exact: every object's MD5 is its (single-part) ETag
    import hashlib
    listed = {}
    for line in s3("ls", b, "big/").stdout.splitlines():
        size, etag, key = line.split(" ", 2)
        listed[key[len("big/"):]] = (int(size), etag.strip('"'))
    check(sorted(listed) == sorted(os.listdir(os.path.join(cache, "data"))),
          "cache %s, bucket %s" % (os.listdir(os.path.join(cache, "data")), sorted(listed)))
    for k, (size, etag) in listed.items():
        with open(os.path.join(cache, "data", k), "rb") as f:
            body = f.read()
        check(len(body) == size and hashlib.md5(body).hexdigest() == etag, "%s differs" % k)
