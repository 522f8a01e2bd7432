"""Every input limit, hit through the mount with real programs.

For each limit a real program (sh's printf, cp, python3) writes spec.yaml:
the write or the close fails with the documented errno, `status` says
`state: Invalid` with a message naming the limit and its value, nothing
is scheduled, and a good spec written afterwards is accepted.  The values
are the defaults of core/spec.h, core/ctl.h and core/queue_spec.c.
"""
import errno
import os
import subprocess

from jfit import case, check

GOOD = 'command: ["/bin/sh", "-c", "echo ok"]\n'


def errname(rc):
    return errno.errorcode.get(rc, str(rc))


def write_py(path, data):
    """open/write/close in this process; (errno of write or 0, errno of close or 0)."""
    data = data.encode() if isinstance(data, str) else data
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    werr = cerr = 0
    try:
        off = 0
        while off < len(data):
            off += os.write(fd, data[off:off + 65536])
    except OSError as e:
        werr = e.errno
    try:
        os.close(fd)
    except OSError as e:
        cerr = e.errno
    return werr, cerr


def cp_file(src, dst):
    """`cp SRC DST`: returns (exit status, stderr)."""
    r = subprocess.run(["cp", src, dst], capture_output=True, text=True, timeout=20)
    return r.returncode, r.stderr


def refused(env, g, words):
    """Assert the last submission to g was refused as documented."""
    st = env.status(g)
    check(st["state"] == "Invalid", "%s: state %s, want Invalid (message %r)"
          % (g, st["state"], st["message"]))
    for w in words:
        check(w in st["message"], "%s: message %r does not name %r" % (g, st["message"], w))
    check(st.get("running", 0) == 0 and st.get("succeeded", 0) == 0 and
          st.get("failed", 0) == 0, "%s: a refused spec was scheduled: %s" % (g, st))
    return st


def submit_via(env, g, spec, writer):
    """Write spec to g/spec.yaml with a real program; return the errno seen."""
    path = env.p(g, "spec.yaml")
    data = spec.encode() if isinstance(spec, str) else spec
    if writer == "python":
        werr, cerr = write_py(path, data)
        return werr or cerr
    src = os.path.join(env.work, "spec-src.yaml")
    with open(src, "wb") as f:
        f.write(data)
    if writer == "cp":
        rc, err = cp_file(src, path)
    else:  # sh: cat through a shell redirection, whose close() error sh drops
        r = env.sh('cat "%s" > "%s"' % (src, path), check=False)
        rc, err = r.returncode, r.stderr
    if rc == 0:
        return 0
    for name, code in (("File too large", errno.EFBIG), ("Invalid argument", errno.EINVAL)):
        if name in err:
            return code
    return -1


def anchored(head, n, tail):
    return head + '&a "' + "x" * n + '"' + tail


# (what, spec, errnos the write/close may give, words the message must hold, writer)
SPEC_LIMITS = [
    ("nesting depth", "command: " + "[" * 40 + "]" * 40 + "\n", (errno.EINVAL,),
     ["nested deeper than 32"], "python"),
    ("alias nodes", "a: &a [" + ",".join(['"lol"'] * 9) + "]\n" +
     "".join("%s: &%s [%s]\n" % (n, n, ",".join(["*" + p] * 9))
             for p, n in zip("abcdefgh", "bcdefghi")),
     (errno.EINVAL,), ["more than 20000 nodes", "alias"], "sh"),
    ("alias text", "a: " + anchored("", 60000, "\n") + "command: [" + ", ".join(["*a"] * 18) + "]\n",
     (errno.EINVAL,), ["more than 1048576 bytes of text", "aliases"], "cp"),
    ("string length", "command: [x]\nname: " + "a" * 70000 + "\n", (errno.EINVAL,),
     ["line 2", "longer than 65536 bytes"], "python"),
    ("containers", "containers:\n" + "".join("- {name: c%d, command: [x]}\n" % i for i in range(17)),
     (errno.EINVAL,), ["line 2", "17 containers: must be 1 to 16"], "sh"),
    ("env entries", "command: [x]\nenv:\n" + "".join("  V%d: x\n" % i for i in range(1025)),
     (errno.EINVAL,), ["more than 1024 environment variables"], "python"),
    ("env bytes", anchored("command: [x]\nenv: {A: ", 60000, ", B: *a, C: *a}\n"),
     (errno.EINVAL,), ["line 2", "180009 bytes", "limit of 131072"], "cp"),
    ("env name length", "command: [x]\nenv:\n  " + "E" * 256 + ": v\n", (errno.EINVAL,),
     ["line 3", "256 bytes, more than the limit of 255"], "python"),
    ("argv entries", "command: [" + ",".join(["a"] * 4097) + "]\n", (errno.EINVAL,),
     ["more than 4096"], "sh"),
    ("argv bytes", anchored("command: [sh, -c]\nargs: [", 60000, ", *a, *a, *a, *a]\n"),
     (errno.EINVAL,), ["line 2", "300011 bytes", "limit of 262144"], "python"),
    ("completions", GOOD + "completions: 1000001\n", (errno.EINVAL,),
     ["line 2", "completions", "must be 1 to 1000000"], "python"),
    ("parallelism", GOOD + "parallelism: 1000001\n", (errno.EINVAL,),
     ["line 2", "parallelism", "must be 1 to 1000000"], "sh"),
    ("nodes", GOOD + "nodes: 1025\n", (errno.EINVAL,), ["nodes", "must be 1 to 1024"], "python"),
    ("name length", GOOD + "name: " + "n" * 64 + "\n", (errno.EINVAL,),
     ["key 'name'", "1 to 63"], "python"),
    ("container name length", "containers:\n- {name: " + "c" * 64 + ", command: [x]}\n",
     (errno.EINVAL,), ["containers[0].name", "1 to 63"], "python"),
]


@case(timeout=120)
def test_spec_limits(env):
    env.queue()
    for i, (what, spec, errnos, words, writer) in enumerate(SPEC_LIMITS):
        g = "queues/q/groups/lim%d" % i
        env.mkdir(g)
        rc = submit_via(env, g, spec, writer)
        if writer == "sh":
            # the shell drops close()'s error: the refusal is in status and events
            check(rc in (0,) + errnos, "%s: sh saw %s" % (what, errname(rc)))
        else:
            check(rc in errnos, "%s: %s gave %s, want %s"
                  % (what, writer, errname(rc), "/".join(errname(e) for e in errnos)))
        refused(env, g, words)
        ev = env.read(os.path.join(g, "events"))
        check(" Warning " in ev, "%s: no Warning event:\n%s" % (what, ev))
        # the draft takes a good spec afterwards
        env.submit(g, GOOD)
        st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
        check(st["state"] == "Succeeded", "%s: the good spec ended %s (%s)"
              % (what, st["state"], st["message"]))


@case(timeout=60)
def test_spec_size(env):
    env.queue()
    g = "queues/q/groups/big"
    env.mkdir(g)
    src = os.path.join(env.work, "big.yaml")
    with open(src, "w") as f:
        f.write(GOOD)
        f.write(("# " + "x" * 1021 + "\n") * 300)       # 300 KiB of comments
    rc, err = cp_file(src, env.p(g, "spec.yaml"))
    check(rc != 0 and "File too large" in err, "cp of a 300 KiB spec: exit %d, %r" % (rc, err))
    refused(env, g, ["262144"])
    # exactly at the limit is fine
    body = GOOD + "#" * (256 * 1024 - len(GOOD) - 1) + "\n"
    check(len(body) == 256 * 1024, "size %d" % len(body))
    env.submit(g, body)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "the 256 KiB spec ended %s" % st["state"])


@case(timeout=60)
def test_k8s_substitution_size(env):
    env.queue()
    name = "j" + "x" * 62                       # ${JOB_NAME} becomes 63 bytes
    g = "queues/q/groups/" + name
    env.mkdir(g)
    note = "${JOB_NAME}" * 5000                 # 55,000 bytes become 315,000
    spec = ("apiVersion: batch/v1\nkind: Job\nmetadata:\n  annotations:\n"
            "    note: \"%s\"\nspec:\n  template:\n    spec:\n      containers:\n"
            "      - {name: m, command: [\"/bin/true\"]}\n" % note)
    werr, cerr = write_py(env.p(g, "spec.yaml"), spec)
    check(werr == 0, "write gave %s: the text itself is small" % errname(werr))
    check(cerr == errno.EFBIG, "close gave %s, want EFBIG" % errname(cerr))
    refused(env, g, ["after ${VAR} substitution", "262144"])
    env.submit(g, spec.replace(note, "${JOB_NAME}"))
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "the small Job ended %s" % st["state"])


@case(timeout=60)
def test_batch_count(env):
    b = "tasks/many"
    env.mkdir(b)
    rc = env.write(os.path.join(b, "spec.yaml"), GOOD + "count: 10001\n")
    check(rc == errno.EINVAL, "count 10001 gave %s" % errname(rc))
    refused(env, b, ["line 2", "count", "must be 1 to 10000"])
    env.submit(b, GOOD + "count: 2\n")
    env.wait(b, ("Succeeded",), timeout=20)


@case(timeout=60)
def test_queue_spec_limits(env):
    q = env.queue("ql")
    rc = env.write(os.path.join(q, "spec.yaml"), "capacity: 1000001\n")
    check(rc == errno.EINVAL, "capacity 1000001 gave %s" % errname(rc))
    rc = env.write(os.path.join(q, "spec.yaml"), "group_timeout: 367d\n")
    check(rc == errno.EINVAL, "group_timeout 367d gave %s" % errname(rc))
    rc = env.write(os.path.join(q, "spec.yaml"), "capacity: " + "[" * 40 + "]" * 40 + "\n")
    check(rc == errno.EINVAL, "deep queue spec gave %s" % errname(rc))
    st = env.status(q)
    check(st.get("capacity") == "unlimited", "a refused queue spec changed capacity: %s" % st)
    rc = env.write(os.path.join(q, "spec.yaml"), "capacity: 1000000\n")
    check(rc == 0, "capacity 1000000 gave %s" % errname(rc))
    check(env.status(q).get("capacity") == 1000000, "capacity not applied")


@case(timeout=60)
def test_ctl_limits(env):
    g = env.group('command: ["/bin/sh", "-c", "sleep 30"]\n')
    env.wait(g, "Running", timeout=10)
    ctl = env.p(g, "ctl")
    # more than 256 bytes: refused at write()
    werr, cerr = write_py(ctl, "stop" + " " * 300 + "\n")
    check(werr == errno.EFBIG, "a 305-byte ctl write gave %s, want EFBIG" % errname(werr))
    # garbage: EINVAL at write() when it ends a line, else at close; the
    # state unchanged, the refusal in events, escaped
    for junk, shown in (("st\x01op\n", '"st\\x01op"'), ("STOP\n", '"STOP"'),
                        ("stop\nstop\n", '"stop\\x0astop"'), ("\x00\x00", '"\\x00\\x00"'),
                        ("x" * 256, '"' + "x" * 40 + '..."')):
        werr, cerr = write_py(ctl, junk)
        want = (errno.EINVAL, 0) if junk.endswith("\n") else (0, errno.EINVAL)
        check((werr, cerr) == want, "%r gave write %s close %s"
              % (junk, errname(werr), errname(cerr)))
        ev = env.read(os.path.join(g, "events"))
        line = [l for l in ev.splitlines() if " Warning " in l and "Refused" in l]
        check(line and shown in line[-1], "%r: no escaped Warning event:\n%s" % (junk, ev))
        check(all(ord(c) >= 0x20 for c in line[-1]), "raw control bytes in %r" % line[-1])
        check(env.status(g)["state"] == "Running", "%r changed the state" % junk)
    # printf with no newline, and echo: the canonical verbs still work
    r = env.sh('printf "  stop\\r\\n" > "%s"' % ctl, check=False)
    check(r.returncode == 0, "printf stop: %s" % r.stderr)
    env.wait(g, "Stopped", timeout=10)


@case(timeout=60)
def test_hostile_message_is_escaped(env):
    """A value with control characters is quoted in `status` escaped, on one line."""
    env.queue()
    g = "queues/q/groups/esc"
    env.mkdir(g)
    rc = env.write(os.path.join(g, "spec.yaml"),
                   GOOD + 'name: "a\\tb\\x1b[31mred\\u2028x"\n')
    check(rc == errno.EINVAL, "a name with control characters gave %s" % errname(rc))
    st = env.status(g)
    msg = st["message"]
    check("\\t" in msg and "\\x1b" in msg and "\\u2028" in msg,
          "message not escaped: %r" % msg)
    check(all(ord(c) >= 0x20 and c not in "\u2028\u2029\x7f" for c in msg), "raw bytes: %r" % msg)
    text = env.read(os.path.join(g, "status"))
    check(len([l for l in text.splitlines() if l.startswith("message:")]) == 1,
          "status message is not one line:\n%s" % text)
    env.submit(g, GOOD)
