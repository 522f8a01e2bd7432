"""/images (reference 8.1): the host's image cache as directories.

Records are made the way the shims make them, by the real jobfs-image
(next to JOBFS_BIN) pulling an OCI layout that tests/fixtures/mkimage.sh
builds (umoci, busybox-static) into STATE/images: no registry needed.
Without umoci or busybox the tests skip, unless $JOBFS_OCI_REQUIRED is set.
The test of EBUSY while a node's container uses the image also needs root
and crun (it runs the container under --runtime oci).
"""
import errno
import json
import os
import subprocess
import time

import jfit
from jfit import Skip, TestFailure, case, check, parse_status, rfc3339

MKIMAGE = os.path.join(jfit.repo_root(), "tests", "fixtures", "mkimage.sh")
KEYS = ["name", "reference", "digest", "size_bytes", "layers", "pulled", "last_used", "used_by"]


def skip_or_fail(why):
    if os.environ.get("JOBFS_OCI_REQUIRED"):
        raise TestFailure(why)
    raise Skip(why)


def tool():
    t = os.path.join(os.path.dirname(jfit.jobfs_bin()), "jobfs-image")
    check(os.access(t, os.X_OK), "%s is not there (built with jobfs)" % t)
    return t


def layout(env):
    """An OCI layout with the tags latest and nocmd (one file system: the
    same layers, two configs)."""
    for prog in ("umoci", "busybox"):
        if not jfit.have(prog):
            skip_or_fail("images: %s is not installed (tests/fixtures/mkimage.sh needs it)"
                         % prog)
    out = os.path.join(env.work, "layout")
    r = subprocess.run(["sh", MKIMAGE, out], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "mkimage.sh exited %d: %s" % (r.returncode, r.stderr.strip()))
    return out


def cache(env):
    return os.path.join(env.state, "images")


def pull(env, ref):
    """jobfs-image pull into the daemon's cache; its JSON answer."""
    r = subprocess.run([tool(), "pull", "--cache", cache(env), ref], capture_output=True,
                       text=True, timeout=120)
    check(r.returncode == 0, "jobfs-image pull %s exited %d: %s"
          % (ref, r.returncode, r.stderr.strip()))
    return json.loads(r.stdout)


def status_yaml(text):
    """The status file: its scalars (parse_status) and its one list, used_by
    ("used_by: []" or "used_by:" then "- item" lines)."""
    st = parse_status(text)
    lines = text.splitlines()
    items = None
    for i, line in enumerate(lines):
        if line == "used_by: []":
            items = []
        elif line == "used_by:":
            items = []
            for item in lines[i + 1:]:
                if not item.startswith("- "):
                    break
                v = item[2:]
                items.append(json.loads(v) if v.startswith('"') else v)
    check(items is not None, "no used_by list in:\n%s" % text)
    st["used_by"] = items
    return st


def read_whole(env, path):
    """The bytes read and the size stat gave just before."""
    size = os.stat(env.p(path)).st_size
    with open(env.p(path), "rb") as f:
        data = f.read()
    return size, data


def check_status(env, name, pulled, since):
    """status and status.json of /images/<name> against jobfs-image's
    answer `pulled`; returns status.json parsed."""
    d = os.path.join("images", name)
    size, data = read_whole(env, os.path.join(d, "status"))
    check(size == len(data), "stat says %d bytes, read gave %d" % (size, len(data)))
    text = data.decode()
    check(text.endswith("\n"), "status does not end with a newline: %r" % text)
    keys = [line.split(":", 1)[0] for line in text.splitlines() if not line.startswith("- ")]
    check(keys == KEYS, "status keys %s, want %s" % (keys, KEYS))
    st = status_yaml(text)
    size, data = read_whole(env, os.path.join(d, "status.json"))
    check(size == len(data), "status.json: stat %d bytes, read %d" % (size, len(data)))
    js = json.loads(data)
    check(list(js) == KEYS, "status.json keys %s" % list(js))
    check(js["name"] == name == pulled["name"], "name %r, want %r" % (js["name"], name))
    check(js["reference"] == pulled["reference"], "reference %r, want %r"
          % (js["reference"], pulled["reference"]))
    check(js["digest"] == pulled["digest"], "digest %r, want %r"
          % (js["digest"], pulled["digest"]))
    check(js["size_bytes"] == pulled["size_bytes"] and js["size_bytes"] > 0,
          "size_bytes %r, jobfs-image said %r" % (js["size_bytes"], pulled["size_bytes"]))
    check(js["layers"] == len(pulled["layers"]) and js["layers"] >= 1,
          "layers %r, want %d" % (js["layers"], len(pulled["layers"])))
    t = rfc3339(js["pulled"])
    check(since - 2 <= t <= time.time() + 1, "pulled %s is not the pull's time" % js["pulled"])
    check(js["last_used"] == "", "last_used %r of an image no container used" % js["last_used"])
    check(js["used_by"] == [], "used_by %r of an unused image" % js["used_by"])
    # the YAML says the same
    for k in KEYS:
        want = js[k] if k == "used_by" else str(js[k])
        check(st[k] == want, "status %s: %r, status.json %r" % (k, st[k], js[k]))
    return js


@case(timeout=120)
def test_list_and_status(env):
    check(os.listdir(env.p("images")) == [],
          "a fresh /images lists %s" % os.listdir(env.p("images")))
    check("images" in os.listdir(env.p("")), "/ does not list images")
    check("images/" in env.read("README"), "README does not mention images/")
    lay = layout(env)
    since = time.time()
    img = pull(env, "oci:%s:latest" % lay)
    name = img["name"]
    # the tree shows the cache as it is on disk: no remount, no wait
    check(os.listdir(env.p("images")) == [name], "ls /images: %s, want [%s]"
          % (os.listdir(env.p("images")), name))
    check(sorted(os.listdir(env.p("images", name))) == ["status", "status.json"],
          "ls /images/%s: %s" % (name, os.listdir(env.p("images", name))))
    check_status(env, name, img, since)
    # times: the record's (README "Times")
    rec = os.path.join(cache(env), "refs", name + ".json")
    want = int(os.stat(rec).st_mtime)
    for f in ("", "status", "status.json"):
        got = int(os.stat(env.p("images", name, f)).st_mtime)
        check(got == want, "mtime of /images/%s/%s: %d, the record's %d" % (name, f, got, want))
    # read-only, and the admins' (we are one)
    st = os.stat(env.p("images", name, "status"))
    check(st.st_mode & 0o777 == 0o444, "status mode %o" % (st.st_mode & 0o777))
    check(os.stat(env.p("images")).st_mode & 0o777 == 0o755, "/images mode")
    # a second image: listed in the order they came
    img2 = pull(env, "oci:%s:nocmd" % lay)
    check(os.listdir(env.p("images")) == [name, img2["name"]], "ls /images: %s"
          % os.listdir(env.p("images")))
    check_status(env, img2["name"], img2, since)
    # a record jobfs-image removes is gone from the tree (within the
    # kernel's one-second attribute cache)
    r = subprocess.run([tool(), "rm", "--cache", cache(env), img2["name"]],
                       capture_output=True, text=True)
    check(r.returncode == 0, "jobfs-image rm: %s" % r.stderr)
    check(os.listdir(env.p("images")) == [name], "after jobfs-image rm: %s"
          % os.listdir(env.p("images")))
    env.poll_until(lambda: not os.path.exists(env.p("images", img2["name"], "status")), 3,
                   "the removed image's status to go")


def errno_of(fn):
    try:
        fn()
    except OSError as e:
        return e.errno
    return 0


@case(timeout=120)
def test_rmdir_keeps_shared_layers(env):
    lay = layout(env)
    a = pull(env, "oci:%s:latest" % lay)
    b = pull(env, "oci:%s:nocmd" % lay)
    shared = set(a["layers"]) & set(b["layers"])
    check(shared, "the two tags share no layer: %s / %s" % (a["layers"], b["layers"]))
    check(errno_of(lambda: os.rmdir(env.p("images", "nosuch"))) == errno.ENOENT,
          "rmdir of a missing image")
    os.rmdir(env.p("images", a["name"]))
    check(os.listdir(env.p("images")) == [b["name"]], "after rmdir: %s"
          % os.listdir(env.p("images")))
    check(not os.path.exists(os.path.join(cache(env), "refs", a["name"] + ".json")),
          "the record is still in the cache")
    check(errno_of(lambda: os.stat(env.p("images", a["name"]))) == errno.ENOENT,
          "the removed image still stats")
    check(errno_of(lambda: os.rmdir(env.p("images", a["name"]))) == errno.ENOENT,
          "a second rmdir")
    # the other image works: its layers, its status, a pull that finds it
    for d in b["layers"]:
        check(os.path.isdir(d), "layer %s of the other image is gone" % d)
    check(os.path.exists(os.path.join(b["layers"][-1], "bin", "busybox")),
          "the other image's files are gone")
    check(env.status(os.path.join("images", b["name"]))["digest"] == b["digest"],
          "the other image's status")
    r = subprocess.run([tool(), "pull", "--cache", cache(env), "--policy", "IfNotPresent",
                        "oci:%s:nocmd" % lay], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and json.loads(r.stdout)["present"],
          "the other image is not present any more: %s %s" % (r.stdout, r.stderr))
    # rm -rf, as for a finished group: its files "go" with the directory
    r = env.sh("rm -rf images/%s" % b["name"], check=False)
    check(r.returncode == 0, "rm -rf images/%s: %s" % (b["name"], r.stderr.strip()))
    check(os.listdir(env.p("images")) == [], "after rm -rf: %s" % os.listdir(env.p("images")))
    for d in a["layers"] + b["layers"]:
        check(not os.path.exists(d), "layer %s is still there, no record names it" % d)
    left = [n for n in os.listdir(os.path.join(cache(env), "layers", "sha256")) if len(n) == 64]
    check(left == [], "layers left in the cache: %s" % left)


@case(timeout=120)
def test_refused(env):
    lay = layout(env)
    img = pull(env, "oci:%s:latest" % lay)
    d = os.path.join("images", img["name"])
    # as in /cluster and /billing: no one makes anything here (EACCES)
    check(errno_of(lambda: os.mkdir(env.p("images", "x"))) == errno.EACCES, "mkdir /images/x")
    check(errno_of(lambda: os.mkdir(env.p(d, "x"))) == errno.EACCES, "mkdir in an image")
    check(errno_of(lambda: open(env.p("images", "x"), "w")) == errno.EACCES,
          "creating /images/x")
    check(env.write(os.path.join(d, "status"), "x\n") == errno.EACCES, "writing status")
    check(env.write(os.path.join(d, "status.json"), "{}\n") == errno.EACCES,
          "writing status.json")
    check(errno_of(lambda: os.truncate(env.p(d, "status"), 0)) == errno.EACCES,
          "truncating status")
    check(errno_of(lambda: os.rename(env.p(d), env.p("images", "y"))) == errno.EACCES,
          "renaming an image")
    check(errno_of(lambda: os.rmdir(env.p("images"))) == errno.EACCES, "rmdir /images")
    check(errno_of(lambda: os.mkdir(env.p("images", "bad name"))) == errno.EACCES,
          "mkdir of a bad name")
    # nothing changed
    check(os.listdir(env.p("images")) == [img["name"]], "ls /images: %s"
          % os.listdir(env.p("images")))
    check(env.status(d)["digest"] == img["digest"], "status after the refusals")
    check(os.path.exists(os.path.join(cache(env), "refs", img["name"] + ".json")),
          "the record went")


@case(timeout=120)
def test_busy_while_a_container_uses_it(env):
    """A running node's container uses the image: used_by names the node,
    rmdir is EBUSY and removes nothing; once the node ended, rmdir works.
    (The node runs 12 s, long enough for the checks on a loaded machine,
    and ends by itself: a daemon unmounted right after `ctl stop` of a
    running container did not exit in 10 s.)"""
    if os.geteuid() != 0:
        skip_or_fail("images: containers need jobfs to run as root")
    if not jfit.have("crun"):
        skip_or_fail("images: crun is not installed")
    lay = layout(env)
    env.use_runtime("oci")
    g = env.group("image: oci:%s:latest\nimage_pull_policy: IfNotPresent\n"
                  "args: [\"sleep\", \"12\"]\n" % lay, name="uses")
    node = os.path.join(g, "tasks/0/nodes/0")
    env.wait(node, "Running", timeout=60)
    names = os.listdir(env.p("images"))
    check(len(names) == 1, "ls /images: %s" % names)
    d = os.path.join("images", names[0])
    st = env.status(d)
    check(st["used_by"] == [node], "used_by %s, want [%s]" % (st["used_by"], node))
    check(status_yaml(env.read(os.path.join(d, "status")))["used_by"] == [node],
          "status used_by:\n%s" % env.read(os.path.join(d, "status")))
    check(errno_of(lambda: os.rmdir(env.p(d))) == errno.EBUSY, "rmdir of a used image")
    check(os.listdir(env.p("images")) == names, "the used image went")
    check(os.path.exists(os.path.join(cache(env), "refs", names[0] + ".json")),
          "the used image's record went")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    check(st["state"] == "Succeeded", "the group ended %s: %s" % (st["state"], st["message"]))
    env.poll_until(lambda: env.status(d)["used_by"] == [], 10, "used_by to empty")
    os.rmdir(env.p(d))
    check(os.listdir(env.p("images")) == [], "after rmdir: %s" % os.listdir(env.p("images")))
