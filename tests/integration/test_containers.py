"""Containers (reference 8.1): images pulled from the real test registry
(Debian's docker-registry, scripts/registry.sh, holding the busybox image
tests/fixtures/mkimage.sh builds), run under crun, seen as a user sees them:
events in Kubernetes' words, node status, logs, a second run "already
present", pull failures and their back-off, oci: layouts, bad input.

Every test remounts with --runtime oci and the registry as an insecure one
(env.use_containers); without root, crun or the registry they skip, unless
$JOBFS_OCI_REQUIRED is set (the README's test command sets it).
"""
import errno
import os
import pwd
import re
import subprocess
import time

import jfit
from jfit import Skip, TestFailure, case, check


def events(env, path):
    """The REASON words of an events file, in order."""
    out = []
    for line in env.read(os.path.join(path, "events")).splitlines():
        parts = line.split(" ", 4)
        if len(parts) >= 4:
            out.append(parts[2])
    return out


def node(g, task=0, n=0):
    return os.path.join(g, "tasks/%d/nodes/%d" % (task, n))


@case(timeout=90)
def test_pull_run_and_present(env):
    reg = env.use_containers()
    image = "%s/jobfs/busybox:latest" % reg
    g = env.group("image: %s\nimage_pull_policy: IfNotPresent\n"
                  "args: [\"sh\", \"-c\", \"echo hello from $JOB_TASK_INDEX; "
                  "wc -l < /etc/passwd; ls /bin/busybox\"]\n" % image, name="first")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    check(st["state"] == "Succeeded", "ended %s: %s" % (st["state"], st["message"]))
    n = node(g)
    ev = events(env, n)
    # Kubernetes' order: Scheduled, Pulling, Pulled, Created, Started, Completed
    check(ev[:6] == ["Scheduled", "Pulling", "Pulled", "Created", "Started", "Completed"],
          "node events %s" % ev)
    text = env.read(os.path.join(n, "events"))
    check(re.search(r'Successfully pulled image "%s" in \d+\.\d{3}s\. Image size: \d+ bytes\.'
                    % re.escape(image), text), "Pulled event:\n%s" % text)
    logs = env.read(os.path.join(n, "logs"))
    check(logs.startswith("hello from 0\n"), "logs %r" % logs)
    # the image's own root: its two-line /etc/passwd, its busybox
    check(logs == "hello from 0\n2\n/bin/busybox\n", "not the image's root: %r" % logs)
    ns = env.status(n)
    check(ns["runtime"] == "oci", "runtime %r" % ns["runtime"])
    check(ns["image"] == image, "image %r" % ns["image"])
    check(re.fullmatch(r"sha256:[0-9a-f]{64}", ns["image_digest"]),
          "image_digest %r" % ns["image_digest"])
    check(ns["reason"] == "Completed", "reason %r" % ns["reason"])
    # the cache's record, under /images, says it was used
    name = re.sub(r"[^A-Za-z0-9._-]", "_", image)
    im = env.status(os.path.join("images", name))
    check(im["reference"] == image and im["digest"] == ns["image_digest"]
          and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", im["last_used"]),
          "/images status %s" % im)
    # a second group: the image is on this machine, nothing is pulled
    g2 = env.group("image: %s\nimage_pull_policy: IfNotPresent\nargs: [\"true\"]\n" % image,
                   name="second")
    st = env.wait(g2, ("Succeeded", "Failed"), timeout=60)
    check(st["state"] == "Succeeded", "second ended %s: %s" % (st["state"], st["message"]))
    text = env.read(os.path.join(node(g2), "events"))
    check('Container image "%s" already present on machine' % image in text,
          "second run's events:\n%s" % text)
    check("Pulling" not in events(env, node(g2)), "the second run pulled:\n%s" % text)
    check(env.status(node(g2))["image_digest"] == ns["image_digest"], "digests differ")
    # a failed container: exit code and reason Error
    g3 = env.group("image: %s\nimage_pull_policy: IfNotPresent\nretries: 0\n"
                   "args: [\"sh\", \"-c\", \"exit 3\"]\n" % image, name="third")
    st = env.wait(g3, ("Succeeded", "Failed"), timeout=60)
    check(st["state"] == "Failed", "third ended %s" % st["state"])
    ns = env.status(node(g3))
    check(ns["exit_code"] == 3 and ns["reason"] == "Error", "failed node: %s" % ns)


@case(timeout=90)
def test_pull_failure_backs_off(env):
    env.use_containers()
    # nothing listens on port 1: the registry is down
    g = env.group("image: 127.0.0.1:1/jobfs/none:v1\nargs: [\"true\"]\n", name="down")
    st = env.wait(g, pred=lambda s: s.get("reason") == "ImagePull", timeout=30,
                  what="reason ImagePull")
    check(st["state"] == "Waiting", "state %s" % st["state"])
    check("back-off pulling image \"127.0.0.1:1/jobfs/none:v1\"" in st["message"]
          and "trying again in 10s" in st["message"], "message %r" % st["message"])
    n = node(g)
    text = env.read(os.path.join(n, "events"))
    check('Failed to pull image "127.0.0.1:1/jobfs/none:v1": registry 127.0.0.1:1 is not '
          'reachable' in text, "node events:\n%s" % text)
    check("Error: ErrImagePull" in text, "no ErrImagePull:\n%s" % text)
    gev = env.read(os.path.join(g, "events"))
    check(re.search(r"Warning BackOff tasks/0 Back-off pulling image .*trying again in 10s; "
                    r"no retry used", gev), "group events:\n%s" % gev)
    ts = env.status(os.path.join(g, "tasks/0"))
    check(ts["state"] == "Waiting" and ts["retries_left"] == 3,
          "a pull failure used a retry: %s" % ts)
    ns = env.status(n)
    check(ns["state"] == "Waiting" and ns["reason"] == "ImagePullBackOff", "node %s" % ns)
    check("Started" not in events(env, n), "it started:\n%s" % text)
    # nothing was billed: no segment for it
    check(not any(r["group"] == "down" for r in env.ledger()), "a pull was billed")
    # a tag the registry does not have: 404 in the message
    reg = os.environ["JOBFS_REGISTRY"]
    g2 = env.group("image: %s/jobfs/busybox:nosuchtag\nargs: [\"true\"]\n" % reg, name="nf")
    env.wait(g2, pred=lambda s: s.get("reason") == "ImagePull", timeout=30,
             what="reason ImagePull")
    text = env.read(os.path.join(node(g2), "events"))
    check("has no manifest nosuchtag in jobfs/busybox" in text, "404 events:\n%s" % text)
    env.ctl(g, "stop")
    env.ctl(g2, "stop")
    st = env.wait(g, ("Stopped",), timeout=20)


@case(timeout=60)
def test_never_and_bad_references(env):
    reg = env.use_containers()
    # Never: not on this machine, never pulled
    g = env.group("image: %s/jobfs/busybox:latest\nimage_pull_policy: Never\n"
                  "args: [\"true\"]\n" % reg, name="never")
    env.wait(g, pred=lambda s: s.get("reason") == "ImagePull", timeout=30,
             what="reason ImagePull")
    text = env.read(os.path.join(node(g), "events"))
    check('ErrImageNeverPull' in text and "is not present with pull policy of Never" in text,
          "Never events:\n%s" % text)
    check("Pulling" not in events(env, node(g)), "Never pulled:\n%s" % text)
    env.ctl(g, "stop")
    # a malformed reference is refused when the spec is written
    env.queue()
    for name, ref, words in (("upper", "Busybox", "lower-case"),
                             ("digest", "h.io/a@sha256:12", "digest must be"),
                             ("space", "\"a b\"", "space")):
        d = "queues/q/groups/" + name
        env.mkdir(d)
        rc = env.write(os.path.join(d, "spec.yaml"), "image: %s\nargs: [x]\n" % ref)
        check(rc == errno.EINVAL, "%s: %s accepted (rc %s)" % (name, ref, rc))
        st = env.status(d)
        check(st["state"] == "Invalid" and words in st["message"] and "key 'image'" in
              st["message"], "%s: %s" % (name, st))
    # an image with no command, and a spec that gives none
    g = env.group("image: %s/jobfs/busybox:nocmd\nretries: 0\n" % reg, name="nocmd")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=40)
    check(st["state"] == "Failed", "nocmd ended %s" % st["state"])
    ns = env.status(node(g))
    check("has no command (no Entrypoint or Cmd) and the spec gives none" in ns["message"],
          "nocmd message %r" % ns["message"])
    # an image whose USER does not exist (the writer is root: the image's
    # user counts)
    g = env.group("image: %s/jobfs/busybox:baduser\nretries: 0\nargs: [\"true\"]\n" % reg,
                  name="baduser")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=40)
    check(st["state"] == "Failed", "baduser ended %s" % st["state"])
    ns = env.status(node(g))
    check("the image's user \"nosuchuser\" does not exist in its /etc/passwd" in ns["message"],
          "baduser message %r" % ns["message"])
    # ... and the same image with a command runs
    g = env.group("image: %s/jobfs/busybox:nocmd\nargs: [\"true\"]\n" % reg, name="withcmd")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=40)
    check(st["state"] == "Succeeded", "withcmd ended %s: %s" % (st["state"], st["message"]))


@case(timeout=60)
def test_oci_layout_and_shm(env):
    env.use_containers()
    layout = os.environ.get("JOBFS_REGISTRY_LAYOUT")
    if not layout:
        raise TestFailure("JOBFS_REGISTRY_LAYOUT is not set (scripts/registry.sh env)")
    g = env.group("image: oci:%s:latest\nshm_size: 32Mi\n"
                  "args: [\"sh\", \"-c\", \"df -k /dev/shm | tail -1; id -u; "
                  "cat /proc/self/status | grep CapEff\"]\n" % layout, name="layout")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=40)
    check(st["state"] == "Succeeded", "ended %s: %s" % (st["state"], st["message"]))
    logs = env.read(os.path.join(node(g), "logs"))
    fields = logs.splitlines()[0].split()
    check(fields[1] == "32768", "/dev/shm is %s KiB, want 32768: %r" % (fields[1], logs))
    ns = env.status(node(g))
    check(ns["image"] == "oci:%s:latest" % layout, "image %r" % ns["image"])


@case(timeout=90)
def test_runs_as_the_writer(env):
    """A non-root writer's container runs as that uid and gid, with no
    capability at all."""
    reg = env.use_containers()
    env.use_runtime("oci", "--insecure-registry", reg, "--allow-other")
    user = "jobfsct%d" % (os.getpid() % 10000)
    if subprocess.run(["useradd", "-M", "-N", "-g", "users", user],
                      capture_output=True).returncode != 0:
        raise TestFailure("useradd %s failed" % user)
    try:
        pw = pwd.getpwnam(user)
        g = "queues/theirs/groups/mine"
        spec = ("image: %s/jobfs/busybox:latest\nimage_pull_policy: IfNotPresent\n"
                "args: [\"sh\", \"-c\", \"id -u; id -g; grep CapEff /proc/self/status\"]\n"
                % reg)
        r = subprocess.run(["runuser", "-u", user, "--", "sh", "-c",
                            "mkdir %s && mkdir %s && cat > %s/spec.yaml"
                            % (env.p("queues/theirs"), env.p(g), env.p(g))],
                           input=spec, capture_output=True, text=True, timeout=20)
        check(r.returncode == 0, "the user's mkdir/write failed: %s" % r.stderr)
        st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
        check(st["state"] == "Succeeded", "ended %s: %s" % (st["state"], st["message"]))
        logs = env.read(os.path.join(node(g), "logs")).splitlines()
        check(logs[0] == str(pw.pw_uid) and logs[1] == str(pw.pw_gid),
              "ran as %s, want %d:%d" % (logs[:2], pw.pw_uid, pw.pw_gid))
        check(logs[2].split() == ["CapEff:", "0000000000000000"], "capabilities %r" % logs[2])
    finally:
        subprocess.run(["userdel", user], capture_output=True)


@case(timeout=90)
def test_limits_oom_and_cpu(env):
    """resources.limits (reference 8.2) through the container's cgroup: a
    process over its memory limit is OOM-killed (exit 137, reason
    OOMKilled, a Warning event, from the kernel's own counter), a cpu limit
    is a quota (cpu time over wall time), for containers and host runs."""
    reg = env.use_containers()
    image = "%s/jobfs/busybox:latest" % reg
    hog = "awk 'BEGIN{s=sprintf(\"%200000000s\",\"\"); print length(s)}'"
    g = env.group("image: %s\nimage_pull_policy: IfNotPresent\nretries: 0\n"
                  "resources: {limits: {memory: 64Mi}}\n"
                  "command: [\"sh\", \"-c\", \"exec %s\"]\n" % (image, hog.replace('"', '\\"')),
                  name="oom")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    check(st["state"] == "Failed", "oom group ended %s" % st["state"])
    n = node(g)
    ns = env.status(n)
    check(ns["exit_code"] == 137 and ns["reason"] == "OOMKilled",
          "OOM node: exit %s reason %s" % (ns["exit_code"], ns["reason"]))
    text = env.read(os.path.join(n, "events"))
    check(re.search(r"Warning OOMKilled tasks/0/nodes/0 main was killed: it used more memory "
                    r"than its limit", text), "events:\n%s" % text)
    # within its limit the same image runs
    g = env.group("image: %s\nimage_pull_policy: IfNotPresent\n"
                  "resources: {limits: {memory: 512Mi}}\n"
                  "command: [\"sh\", \"-c\", \"exec %s\"]\n" % (image, hog.replace('"', '\\"')),
                  name="fits")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    check(st["state"] == "Succeeded", "512Mi ended %s: %s" % (st["state"], st["message"]))
    check(env.status(node(g))["reason"] == "Completed", "reason not Completed")
    # a host run: the same limit, the same counter (the kill is not guessed
    # from 137: a process that kills itself is an Error)
    env.use_runtime("host")
    g = env.group("retries: 0\nresources: {limits: {memory: 64Mi}}\n"
                  "command: [\"python3\", \"-c\", \"b = b'x' * (300 << 20)\"]\n", name="hostoom")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    ns = env.status(node(g))
    check(ns["exit_code"] == 137 and ns["reason"] == "OOMKilled", "host OOM node: %s" % ns)
    g = env.group("retries: 0\nresources: {limits: {memory: 64Mi}}\n"
                  "command: [\"sh\", \"-c\", \"kill -9 $$\"]\n", name="selfkill")
    env.wait(g, ("Succeeded", "Failed"), timeout=60)
    ns = env.status(node(g))
    check(ns["exit_code"] == 137 and ns["reason"] == "Error", "self-killed node: %s" % ns)
    # cpu: a quota of 200m; a busy loop gets about a fifth of a core
    g = env.group("resources: {limits: {cpu: 200m}}\n"
                  "command: [\"python3\", \"-c\", \"import time,os\\n"
                  "t=time.monotonic()\\nwhile time.monotonic()-t<1.5: pass\\n"
                  "u=os.times(); print((u.user+u.system)/(time.monotonic()-t))\"]\n",
                  name="cpu")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    check(st["state"] == "Succeeded", "cpu ended %s: %s" % (st["state"], st["message"]))
    ratio = float(env.read(os.path.join(node(g), "logs")).strip())
    check(0.05 < ratio <= 0.35, "cpu time / wall time %.2f under a 200m quota" % ratio)


def fetch(url, timeout=2.0):
    import urllib.request
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


@case(timeout=120)
def test_ports_reached_with_curl(env):
    """ports (reference 8.2): the node has its own network namespace; its
    port is forwarded from a free port on 127.0.0.1, shown in endpoints,
    and reached with curl - for a container and for a host run."""
    reg = env.use_containers()
    image = "%s/jobfs/busybox:latest" % reg
    g = env.group("image: %s\nimage_pull_policy: IfNotPresent\nports: [8080]\n"
                  "args: [\"sh\", \"-c\", \"mkdir -p /tmp/www && echo served-by-$JOB_TASK_INDEX"
                  " > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www\"]\n" % image,
                  name="web")
    st = env.wait(node(g), pred=lambda s: s.get("endpoints"), timeout=60, what="endpoints")
    eps = st["endpoints"]
    check(len(eps) == 1 and re.fullmatch(r"http://127\.0\.0\.1:\d+", eps[0]), "endpoints %r" % eps)
    check(not eps[0].endswith(":8080"), "the host port should be a free one: %s" % eps[0])
    yaml = env.read(os.path.join(node(g), "status"))
    check("endpoints:" in yaml and "- \"%s\"" % eps[0] in yaml or "- %s" % eps[0] in yaml,
          "status lists no endpoints:\n%s" % yaml)
    body = env.poll_until(lambda: _try_fetch(eps[0] + "/index.html"), timeout=20,
                          what="the container's web server")
    check(body == "served-by-0\n", "served %r" % body)
    r = subprocess.run(["curl", "-sf", eps[0] + "/index.html"], capture_output=True, text=True,
                       timeout=10)
    check(r.returncode == 0 and r.stdout == "served-by-0\n", "curl: %s %r" % (r.returncode,
                                                                            r.stdout))
    # httpd is the container's pid 1: it ignores SIGTERM, the SIGKILL after
    # the grace period ends it
    env.ctl(g, "stop")
    env.wait(node(g), ("Stopped",), timeout=40)
    check(_try_fetch(eps[0] + "/index.html") is None, "still served after the stop")
    # a host run with ports: its own namespace too
    env.use_runtime("host")
    g = env.group("ports: [{container_port: 9000, name: api}]\n"
                  "command: [\"python3\", \"-m\", \"http.server\", \"9000\", \"--bind\", "
                  "\"0.0.0.0\"]\n", name="hostweb")
    st = env.wait(node(g), pred=lambda s: s.get("endpoints"), timeout=60, what="endpoints")
    body = env.poll_until(lambda: _try_fetch(st["endpoints"][0] + "/"), timeout=20,
                          what="the host run's web server")
    check("Directory listing" in body, "host run served %r" % body[:200])
    env.ctl(g, "stop")
    env.wait(node(g), ("Stopped",), timeout=40)


def _try_fetch(url):
    try:
        return fetch(url)
    except Exception:
        return None


@case(timeout=90)
def test_daemon_killed_while_container_runs(env):
    """kill -9 of the daemon while a container runs: the supervisor owns
    the container, the next daemon adopts it, it ends once and is billed
    once."""
    reg = env.use_containers()
    g = env.group("image: %s/jobfs/busybox:latest\nimage_pull_policy: IfNotPresent\n"
                  "args: [\"sh\", \"-c\", \"echo started; sleep 4; echo done\"]\n" % reg,
                  name="adopt")
    env.wait(node(g), ("Running",), timeout=40)
    env.daemon.kill9(detach=True)
    env.start()
    st = env.wait(g, ("Succeeded", "Failed"), timeout=40)
    check(st["state"] == "Succeeded", "ended %s: %s" % (st["state"], st["message"]))
    logs = env.read(os.path.join(node(g), "logs"))
    check(logs == "started\ndone\n", "logs %r" % logs)
    ev = events(env, node(g))
    check("Adopted" in ev and ev.count("Started") == 1 and ev.count("Completed") == 1,
          "events %s" % ev)
    rows = [r for r in env.ledger() if r["group"] == "adopt"]
    secs = sum(int(r["seconds"]) for r in rows)
    check(len(rows) >= 1 and 3 <= secs <= 8, "billed %d s in %d segments: %s" % (secs, len(rows),
                                                                               rows))
    check(env.status(node(g))["runtime"] == "oci", "runtime after adoption")


# in YAML, nvidia-ctk's default format (JSON ones are read too: test_cdi.c)
CDI_SPEC = """---
cdiVersion: 0.6.0
kind: nvidia.com/gpu
devices:
%s
containerEdits:
  deviceNodes:
  - path: /dev/nvidiactl
    hostPath: /dev/zero
  env:
  - NVIDIA_CDI_SPEC=jobfs-test
"""


@case(timeout=90)
def test_runc(env):
    """runc, the other OCI runtime (--oci-runtime): the same container, the
    same events and status; runc takes this host's hybrid cgroups as they
    are."""
    reg = env.container_registry()
    runc = next((p for p in ("/usr/sbin/runc", "/usr/bin/runc") if os.path.exists(p)), None)
    if not runc:
        raise TestFailure("runc is not installed (scripts/deps.sh installs it)")
    env.use_runtime("oci", "--insecure-registry", reg, "--oci-runtime", runc)
    g = env.group("image: %s/jobfs/busybox:latest\nimage_pull_policy: IfNotPresent\n"
                  "resources: {limits: {memory: 256Mi}}\n"
                  "args: [\"sh\", \"-c\", \"echo hello from runc; wc -l < /etc/passwd\"]\n"
                  % reg, name="runc")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    check(st["state"] == "Succeeded", "ended %s: %s" % (st["state"], st["message"]))
    logs = env.read(os.path.join(node(g), "logs"))
    check(logs == "hello from runc\n2\n", "logs %r" % logs)
    ns = env.status(node(g))
    check(ns["runtime"] == "oci" and ns["reason"] == "Completed", "status %s" % ns)
    check(events(env, node(g))[:5] == ["Scheduled", "Pulling", "Pulled", "Created", "Started"],
          "events %s" % events(env, node(g)))


def many_layers(base, out, n):
    """An OCI layout at out: the busybox image of the layout base with n
    more layers, layer i adding /layers/i and writing /top with i."""
    import gzip
    import hashlib
    import io
    import json
    import shutil
    import tarfile
    shutil.copytree(base, out)
    idx = json.load(open(os.path.join(out, "index.json")))
    latest = [m for m in idx["manifests"]
              if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == "latest"][0]

    def blob(data):
        d = hashlib.sha256(data).hexdigest()
        with open(os.path.join(out, "blobs", "sha256", d), "wb") as f:
            f.write(data)
        return "sha256:" + d

    def read(digest):
        with open(os.path.join(out, "blobs", "sha256", digest.split(":")[1]), "rb") as f:
            return f.read()

    man = json.loads(read(latest["digest"]))
    cfg = json.loads(read(man["config"]["digest"]))
    for i in range(n):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
            for name, text in (("layers/%d" % i, "%d\n" % i), ("top", "%d\n" % i)):
                info = tarfile.TarInfo(name)
                info.size = len(text)
                info.mode = 0o644
                t.addfile(info, io.BytesIO(text.encode()))
        tar = raw.getvalue()
        gz = gzip.compress(tar, mtime=0)
        man["layers"].append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                              "digest": blob(gz), "size": len(gz)})
        cfg["rootfs"]["diff_ids"].append("sha256:" + hashlib.sha256(tar).hexdigest())
    cj = json.dumps(cfg).encode()
    man["config"] = {"mediaType": "application/vnd.oci.image.config.v1+json",
                     "digest": blob(cj), "size": len(cj)}
    mj = json.dumps(man).encode()
    idx["manifests"] = [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                         "digest": blob(mj), "size": len(mj),
                         "annotations": {"org.opencontainers.image.ref.name": "many"}}]
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(idx, f)


@case(timeout=120)
def test_many_layers(env):
    """An image of 101 layers, more than one overlay mount's option page
    holds by the layers' own names: it runs, every layer seen, the top one
    on top."""
    env.use_containers()
    base = os.environ.get("JOBFS_REGISTRY_LAYOUT")
    if not base:
        raise TestFailure("JOBFS_REGISTRY_LAYOUT is not set (scripts/registry.sh env)")
    layout = os.path.join(env.tmp, "many")
    many_layers(base, layout, 100)
    g = env.group("image: oci:%s:many\n"
                  "args: [\"sh\", \"-c\", \"ls /layers | wc -l; cat /top; cat /layers/0 "
                  "/layers/99; ls /bin/busybox\"]\n" % layout, name="many")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=90)
    check(st["state"] == "Succeeded", "ended %s: %s" % (st["state"], st["message"]))
    logs = env.read(os.path.join(node(g), "logs"))
    check(logs == "100\n99\n0\n99\n/bin/busybox\n", "logs %r" % logs)


@case(timeout=90)
def test_gpus_as_cdi_devices(env):
    """A node's GPUs are the devices of a CDI spec where the host has one:
    here a spec (JOBFS_CDI_DIRS) whose GPUs are stand-in device nodes (the
    host's /dev/null), as a site's nvidia-ctk would write it for real ones;
    CUDA_VISIBLE_DEVICES as before."""
    cdi = os.path.join(env.tmp, "cdi")
    os.makedirs(cdi)
    devs = "\n".join('- name: "%d"\n  containerEdits:\n    deviceNodes:\n'
                     '    - {path: /dev/nvidia%d, hostPath: /dev/null}' % (i, i)
                     for i in range(8))
    with open(os.path.join(cdi, "nvidia.yaml"), "w") as f:
        f.write(CDI_SPEC % devs)
    os.environ["JOBFS_CDI_DIRS"] = cdi
    try:
        reg = env.use_containers()
    finally:
        del os.environ["JOBFS_CDI_DIRS"]
    g = env.group("image: %s/jobfs/busybox:latest\nimage_pull_policy: IfNotPresent\n"
                  "gpu: \"4090\"\ngpus: 2\n"
                  "args: [\"sh\", \"-c\", \"echo $CUDA_VISIBLE_DEVICES $NVIDIA_CDI_SPEC; "
                  "ls /dev | grep nvidia | sort | tr '\\\\n' ' '; echo; "
                  "echo x > /dev/nvidia${CUDA_VISIBLE_DEVICES%%%%,*} && echo writable\"]\n"
                  % reg, name="gpus")
    st = env.wait(g, ("Succeeded", "Failed"), timeout=60)
    logs = env.read(os.path.join(node(g), "logs")).splitlines()
    check(st["state"] == "Succeeded", "ended %s: %s %r" % (st["state"], st["message"], logs))
    ids = logs[0].split()[0].split(",")
    check(len(ids) == 2 and logs[0].split()[1] == "jobfs-test", "env line %r" % logs[0])
    want = sorted(["nvidia%s" % i for i in ids] + ["nvidiactl"])
    check(logs[1].split() == want, "devices %r, want %r" % (logs[1], want))
    check(logs[2] == "writable", "the GPU device is not usable: %r" % logs)


@case(timeout=90)
def test_unmount_while_a_container_runs(env):
    """fusermount3 -u ends the daemon at once while a container runs (the
    supervisor's mount namespace holds no copy of the tree's mount); the
    next daemon adopts the container."""
    reg = env.use_containers()
    g = env.group("image: %s/jobfs/busybox:latest\nimage_pull_policy: IfNotPresent\n"
                  "args: [\"sh\", \"-c\", \"sleep 30; echo late\"]\n" % reg, name="long")
    env.wait(node(g), ("Running",), timeout=40)
    # the unmount waits at most 10 s for the daemon (jfit): a copy of the
    # mount held by the container's namespace would keep it 30 s
    env.remount()
    ev = env.read(os.path.join(node(g), "events"))
    check(" Adopted " in ev, "not adopted:\n%s" % ev)
    env.ctl(g, "stop")
    env.wait(node(g), ("Stopped",), timeout=40)
