"""Submitting specs: refusal at close and at write, editors, bad input."""
import errno
import os
import time

from jfit import TestFailure, case, check

GOOD = """\
completions: 2
command: ["/bin/sh", "-c"]
args: ["echo ran $JOB_TASK_INDEX"]
"""


def draft(env, name="g"):
    env.queue()
    g = "queues/q/groups/" + name
    env.mkdir(g)
    return g


def write_then_close(path, data):
    """Return (errno of write or 0, errno of close or 0)."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    werr = cerr = 0
    try:
        os.write(fd, data.encode())
    except OSError as e:
        werr = e.errno
    try:
        os.close(fd)
    except OSError as e:
        cerr = e.errno
    return werr, cerr


def readme_ok(env, after):
    try:
        text = env.read("README")
    except OSError as e:
        raise TestFailure("README unreadable after %s: %s" % (after, e))
    check("jobfs" in text, "README after %s: %r" % (after, text[:100]))


def assert_invalid(env, g, *words):
    st = env.status(g)
    check(st["state"] == "Invalid", "state %s, want Invalid (message %r)" % (st["state"], st["message"]))
    for w in words:
        check(w in st["message"], "message %r does not mention %r" % (st["message"], w))
    return st


@case(timeout=60)
def test_unknown_key_einval_at_close(env):
    g = draft(env)
    spec = GOOD + "colour: blue\n"
    werr, cerr = write_then_close(env.p(g, "spec.yaml"), spec)
    check(werr == 0, "write failed with %s; an unknown key is refused at close"
          % errno.errorcode.get(werr))
    check(cerr == errno.EINVAL, "close gave %s, want EINVAL" % errno.errorcode.get(cerr, cerr))
    st = assert_invalid(env, g, "colour", "line 4")
    ev = env.read(os.path.join(g, "events"))
    check(" Warning " in ev and "colour" in ev, "no Warning event naming the key:\n%s" % ev)
    # nothing was scheduled
    check(st["completions"] in (0, 2) and st["running"] == 0 and st["succeeded"] == 0,
          "an Invalid spec was scheduled: %s" % st)
    # the draft can be written again; the good spec runs
    env.submit(g, GOOD)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "good spec ended %s" % st["state"])
    check(env.read(os.path.join(g, "tasks/1/nodes/0/logs")) == "ran 1\n", "logs of task 1")
    # accepted: the spec is read-only now
    rc = env.write(os.path.join(g, "spec.yaml"), GOOD)
    check(rc in (errno.EROFS, errno.EACCES, errno.EPERM),
          "rewriting an accepted spec gave %s, want EROFS" % errno.errorcode.get(rc, rc))
    check(env.read(os.path.join(g, "spec.yaml")) == GOOD, "spec.yaml does not read back")


@case(timeout=60)
def test_shell_echo_bad(env):
    g = draft(env)
    r = env.sh("echo bad > %s/spec.yaml" % g, check=False)
    # shells drop close()'s error; the refusal must be in status and events
    assert_invalid(env, g)
    ev = env.read(os.path.join(g, "events"))
    check("Warning" in ev, "no Warning event after `echo bad`:\n%s" % ev)
    readme_ok(env, "echo bad")
    # `printf` a good spec from the shell runs
    env.sh("printf '%%s\\n' 'command: [\"/bin/true\"]' > %s/spec.yaml" % g)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "shell-written spec ended %s" % st["state"])


@case(timeout=60)
def test_editor_rename_onto_spec(env):
    g = draft(env, "ed")
    # an editor writes a temp file beside spec.yaml and renames it over
    env.sh("cat > %s/.spec.yaml.swp <<'EOF'\n%sEOF\n" % (g, GOOD))
    listing = os.listdir(env.p(g))
    check(".spec.yaml.swp" in listing, "temp file not listed: %r" % listing)
    env.sh("mv %s/.spec.yaml.swp %s/spec.yaml" % (g, g))
    # read back at once: the kernel must not keep the temp file under the new name
    check(env.read(os.path.join(g, "spec.yaml")) == GOOD, "spec.yaml right after mv: %r"
          % env.read(os.path.join(g, "spec.yaml")))
    mode = os.stat(env.p(g, "spec.yaml")).st_mode
    check(mode & 0o222 == 0, "accepted spec.yaml is writable: %o" % mode)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded", "renamed spec ended %s: %s" % (st["state"], st["message"]))
    check(".spec.yaml.swp" not in os.listdir(env.p(g)), "temp file still listed")
    check(env.read(os.path.join(g, "spec.yaml")) == GOOD, "spec.yaml after mv")


@case(timeout=60)
def test_editor_rename_bad_spec(env):
    g = draft(env, "edbad")
    env.sh("printf 'completions: many\\n' > %s/tmp.yaml" % g)
    r = env.sh("mv %s/tmp.yaml %s/spec.yaml" % (g, g), check=False)
    check(r.returncode != 0, "mv of a bad spec onto spec.yaml succeeded")
    assert_invalid(env, g, "completions")


@case(timeout=60)
def test_sed_in_place(env):
    g = draft(env, "sed")
    bad = GOOD.replace("completions: 2", "completions: two")
    rc = env.write(os.path.join(g, "spec.yaml"), bad)
    check(rc == errno.EINVAL, "bad spec gave %s" % rc)
    assert_invalid(env, g, "completions", "line 1")
    check(env.read(os.path.join(g, "spec.yaml")) == bad, "the refused draft does not read back")
    env.sh("sed -i 's/completions: two/completions: 3/' %s/spec.yaml" % g)
    got = env.read(os.path.join(g, "spec.yaml"))
    check(got == GOOD.replace("completions: 2", "completions: 3"),
          "spec.yaml right after sed -i: %r" % got)
    st = env.wait(g, ("Succeeded", "Failed"), timeout=20)
    check(st["state"] == "Succeeded" and st["completions"] == 3,
          "sed -i spec: %s %s" % (st["state"], st["completions"]))
    leftovers = [n for n in os.listdir(env.p(g)) if n.startswith("sed")]
    check(not leftovers, "sed temp files left: %r" % leftovers)


BAD_SPECS = [
    ("wrong type", "completions: \"abc\"\ncommand: [\"/bin/true\"]\n", ["completions", "line 1"]),
    ("negative", "parallelism: -1\ncommand: [\"/bin/true\"]\n", ["parallelism", "line 1"]),
    ("huge", "command: [\"/bin/true\"]\ncompletions: 99999999999999999999\n", ["completions", "line 2"]),
    ("bad duration", "timeout: 5 fortnights\ncommand: [\"/bin/true\"]\n", ["timeout"]),
    ("bad quantity", "command: [\"/bin/true\"]\nresources:\n  limits: {cpu: lots}\n", ["cpu"]),
    ("bad billing", "billing: free\ncommand: [\"/bin/true\"]\n", ["billing"]),
    ("unknown gpu", "gpu: \"9999\"\ncommand: [\"/bin/true\"]\n", ["gpu"]),
    ("not a mapping", "- a\n- b\n", []),
    ("tab indent", "env:\n\tA: b\n", []),
    ("unclosed", "command: [\"/bin/true\"\n", []),
]


@case(timeout=60)
def test_bad_values(env):
    g = draft(env, "bad")
    for what, spec, words in BAD_SPECS:
        rc = env.write(os.path.join(g, "spec.yaml"), spec)
        check(rc == errno.EINVAL, "%s: got %s, want EINVAL" % (what, errno.errorcode.get(rc, rc)))
        st = env.status(g)
        check(st["state"] == "Invalid", "%s: state %s" % (what, st["state"]))
        check(st["message"], "%s: empty message" % what)
        for w in words:
            check(w in st["message"], "%s: message %r lacks %r" % (what, st["message"], w))
        readme_ok(env, what)
    # still a usable draft
    env.submit(g, GOOD)
    env.wait(g, "Succeeded", timeout=20)


@case(timeout=60)
def test_huge_spec_refused_at_write(env):
    g = draft(env, "big")
    path = env.p(g, "spec.yaml")
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    chunk = ("# " + "x" * 1021 + "\n").encode()      # 1 KiB lines
    written = 0
    werr = 0
    try:
        while written < 10 * 1024 * 1024:
            written += os.write(fd, chunk * 64)
    except OSError as e:
        werr = e.errno
    cerr = 0
    try:
        os.close(fd)
    except OSError as e:
        cerr = e.errno
    check(werr in (errno.EFBIG, errno.EINVAL),
          "a 10 MB spec was not refused at write() (wrote %d bytes, write errno %s)"
          % (written, errno.errorcode.get(werr, werr)))
    check(written < 10 * 1024 * 1024, "all 10 MB were accepted by write()")
    check(cerr in (0, errno.EFBIG, errno.EINVAL), "close gave %s" % errno.errorcode.get(cerr, cerr))
    st = assert_invalid(env, g)
    check(st["message"], "no message for the big spec")
    readme_ok(env, "10 MB spec")
    env.submit(g, GOOD)
    env.wait(g, "Succeeded", timeout=20)


@case(timeout=60)
def test_alias_bomb(env):
    g = draft(env, "bomb")
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append("%s: &%s [%s]" % (name, name, ",".join(["*" + prev] * 9)))
        prev = name
    bomb = "\n".join(lines) + "\n"
    rc = env.write(os.path.join(g, "spec.yaml"), bomb)
    check(rc == errno.EINVAL, "billion laughs gave %s" % errno.errorcode.get(rc, rc))
    # refused by counting, not by expanding 9^9 nodes first
    st = assert_invalid(env, g)
    check("alias bomb" in st["message"], "billion laughs: %r" % st["message"])
    readme_ok(env, "alias bomb")
    # deep nesting too
    deep = "x: " + "[" * 100000 + "]" * 100000 + "\n"
    rc = env.write(os.path.join(g, "spec.yaml"), deep)
    check(rc in (errno.EINVAL, errno.EFBIG), "deep nesting gave %s" % errno.errorcode.get(rc, rc))
    st = env.status(g)
    check(rc == errno.EFBIG or "nested deeper than" in st["message"],
          "deep nesting: %r" % st["message"])
    readme_ok(env, "deep nesting")


@case(timeout=60)
def test_binary_garbage(env):
    g = draft(env, "bin")
    for i in range(5):
        data = os.urandom(4096) + b"\0\0\0" + os.urandom(100)
        rc = env.write(os.path.join(g, "spec.yaml"), data)
        check(rc == errno.EINVAL, "binary garbage #%d gave %s" % (i, errno.errorcode.get(rc, rc)))
        assert_invalid(env, g)
        readme_ok(env, "binary garbage")
    # a NUL inside otherwise fine YAML
    rc = env.write(os.path.join(g, "spec.yaml"), b"command: [\"/bin/true\"]\n\0\n")
    check(rc == errno.EINVAL, "NUL byte gave %s" % errno.errorcode.get(rc, rc))
    readme_ok(env, "NUL byte")


@case(timeout=60)
def test_bad_directory_names(env):
    env.queue()
    bad = ["a b", "tab\tname", "nl\nname", "ctl\x01", "...", ".hidden", "-dash", "x" * 200,
           "x" * 64, "caf\u00e9", "semi;colon", "star*", "q?"]
    for parent in ("tasks", "queues", "queues/q/groups"):
        before = sorted(os.listdir(env.p(parent)))
        for n in bad:
            try:
                os.mkdir(env.p(parent, n))
            except OSError as e:
                check(e.errno == errno.EINVAL, "mkdir %s/%r gave %s, want EINVAL"
                      % (parent, n, errno.errorcode.get(e.errno)))
            else:
                raise TestFailure("mkdir %s/%r succeeded" % (parent, n))
        # ".." is answered by the kernel itself (EEXIST); it must create nothing either
        try:
            os.mkdir(env.p(parent, ".."))
        except OSError as e:
            check(e.errno in (errno.EEXIST, errno.EINVAL), "mkdir .. gave %s" % e.errno)
        # too long for any filesystem: the kernel's ENAMETOOLONG
        try:
            os.mkdir(env.p(parent, "y" * 300))
        except OSError as e:
            check(e.errno in (errno.ENAMETOOLONG, errno.EINVAL), "300-byte name: %s" % e.errno)
        else:
            raise TestFailure("mkdir of a 300-byte name succeeded")
        after = sorted(os.listdir(env.p(parent)))
        check(before == after, "%s changed: %r -> %r" % (parent, before, after))
        readme_ok(env, "bad names in " + parent)
    # the longest good name works, and the same name twice is EEXIST
    good = "a" + "b" * 62
    os.mkdir(env.p("tasks", good))
    try:
        os.mkdir(env.p("tasks", good))
    except OSError as e:
        check(e.errno == errno.EEXIST, "second mkdir gave %s" % e.errno)
    else:
        raise TestFailure("mkdir of an existing name succeeded")
    check(os.listdir(env.p("tasks")) == [good], "tasks: %r" % os.listdir(env.p("tasks")))
    # mkdir where nothing can be made
    for where in ("cluster/x", "billing/x", "tasks/%s/x" % good, "x"):
        try:
            os.mkdir(env.p(where))
        except OSError as e:
            check(e.errno in (errno.EACCES, errno.EPERM, errno.EROFS),
                  "mkdir %s gave %s" % (where, errno.errorcode.get(e.errno)))
        else:
            raise TestFailure("mkdir %s succeeded" % where)


@case(timeout=60)
def test_queue_spec(env):
    q = env.queue("qs")
    rc = env.write(os.path.join(q, "spec.yaml"), "capacity: 2\ngroup_timeout: 60m\n")
    check(rc == 0, "queue spec refused: %s" % rc)
    st = env.status(q)
    check(st.get("capacity") == 2, "capacity %r" % st.get("capacity"))
    rc = env.write(os.path.join(q, "spec.yaml"), "capacity: lots\n")
    check(rc == errno.EINVAL, "bad queue spec gave %s" % rc)
    rc = env.write(os.path.join(q, "spec.yaml"), "capacity: 2\nflavour: x\n")
    check(rc == errno.EINVAL, "unknown queue key gave %s" % rc)
    # capacity holds: 5 one-node tasks, never more than 2 at once
    g = env.group("completions: 5\ncommand: [\"/bin/sh\", \"-c\", \"sleep 0.3\"]\n",
                  name="capg", queue="qs")

    def watch(s):
        qs = env.status(q)
        check(qs.get("nodes_held", 0) <= 2, "queue holds %s nodes > capacity 2" % qs.get("nodes_held"))
        check(s["running"] <= 2, "group runs %d > capacity 2" % s["running"])
        return s["state"] in ("Succeeded", "Failed")

    st = env.wait(g, pred=watch, timeout=30)
    check(st["state"] == "Succeeded", "group ended %s" % st["state"])
