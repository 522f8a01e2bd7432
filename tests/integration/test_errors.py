"""Errors show where users look, with the tools they use (issue 19, point 4).

On a real mount, with chmod, chown, truncate, the shell's `: >`, mv, ln,
mknod, touch, rm -rf and a queue's spec.yaml:
- chmod to another mode, chown to another owner: EPERM (the same mode or
  owner, as cp -p and rsync -a give it: accepted);
- `: > spec.yaml` and `truncate -s 0` on an Invalid draft empty it: the
  group is a Draft again, spec.yaml is 0 bytes; `truncate -s N` keeps the
  first N bytes and judges them;
- an accepted spec.yaml written or truncated: EACCES ("Permission denied",
  not "Read-only file system"), a Warning ReadOnly in the group's events;
- mv of a group into another queue: refused whole (EPERM), nothing made in
  the target, also after a remount, a Warning Refused in the group's events;
- ln -s, ln, mknod: EPERM;
- touch notes, echo > notes.txt in a group: EPERM and a Warning Refused
  (the file would vanish at the next mount); editors' temporary names work;
- rm -rf of a finished group and of an idle queue: exit 0, gone; of a live
  group: EBUSY, nothing removed;
- a bad queue spec: the queue's status says why, an accepted one clears it;
- a bad directory name: EINVAL and a Warning InvalidName naming the rule.
"""
import errno
import os

from jfit import case, check

SLEEP = 'command: ["sleep", "30"]\n'


def events(env, path):
    return env.read(os.path.join(path, "events"))


@case(timeout=60)
def test_chmod_chown(env):
    env.mkdir("tasks/d")
    spec = env.p("tasks/d/spec.yaml")
    before = os.stat(spec)
    r = env.sh("chmod 777 tasks/d/spec.yaml", check=False)
    check(r.returncode != 0 and "not permitted" in r.stderr,
          "chmod 777 of a spec: rc %d %r" % (r.returncode, r.stderr))
    check(os.stat(spec).st_mode == before.st_mode, "chmod changed the mode")
    # the mode it has: accepted (cp -p, rsync -a do this)
    env.sh("chmod %o tasks/d/spec.yaml" % (before.st_mode & 0o7777))
    env.sh("chown %d:%d tasks/d/spec.yaml" % (before.st_uid, before.st_gid))
    r = env.sh("chown 4242 tasks/d/spec.yaml", check=False)
    check(r.returncode != 0 and "not permitted" in r.stderr,
          "chown 4242: rc %d %r" % (r.returncode, r.stderr))
    r = env.sh("chmod 700 tasks/d", check=False)
    check(r.returncode != 0, "chmod 700 of a group directory succeeded")
    check(os.stat(spec).st_uid == before.st_uid, "chown changed the owner")


@case(timeout=60)
def test_empty_and_truncate_a_draft(env):
    env.mkdir("tasks/d")
    check(env.write("tasks/d/spec.yaml", "bogus: 1\n") == errno.EINVAL, "a bad spec accepted")
    check(env.status("tasks/d")["state"] == "Invalid", "not Invalid")
    env.sh(": > tasks/d/spec.yaml")
    st = env.status("tasks/d")
    check(st["state"] == "Draft", "after `: >`: %s %r" % (st["state"], st.get("message")))
    check(env.read("tasks/d/spec.yaml") == "", "spec.yaml not empty after `: >`")
    check(os.stat(env.p("tasks/d/spec.yaml")).st_size == 0, "stat size not 0")
    check("Cleared" in events(env, "tasks/d"), "no Cleared event")

    check(env.write("tasks/d/spec.yaml", "bogus: 12\n") == errno.EINVAL, "bad spec 2")
    env.sh("truncate -s 0 tasks/d/spec.yaml")
    check(env.status("tasks/d")["state"] == "Draft", "after truncate -s 0")
    check(os.stat(env.p("tasks/d/spec.yaml")).st_size == 0, "size after truncate -s 0")
    check(env.read("tasks/d/spec.yaml") == "", "bytes after truncate -s 0")

    # truncate -s N keeps the first N bytes, and they are judged
    check(env.write("tasks/d/spec.yaml", 'command: ["true"]\nbogus: 1\n') == errno.EINVAL,
          "bad spec 3")
    env.sh("truncate -s 18 tasks/d/spec.yaml")
    env.wait("tasks/d", "Succeeded", timeout=20)
    check(env.read("tasks/d/spec.yaml") == 'command: ["true"]\n', "truncated spec text")
    # growing a spec with NUL bytes: refused
    env.mkdir("tasks/e")
    r = env.sh("truncate -s 100 tasks/e/spec.yaml", check=False)
    check(r.returncode != 0, "truncate -s 100 of an empty draft succeeded")


@case(timeout=60)
def test_accepted_spec_is_eacces(env):
    g = env.group(SLEEP, name="g")
    env.wait(g, "Running", timeout=20)
    spec = os.path.join(g, "spec.yaml")
    text = env.read(spec)
    for cmd in ("echo 'completions: 2' > %s", "truncate -s 0 %s", "echo x >> %s"):
        r = env.sh(cmd % spec, check=False)
        check(r.returncode != 0, "%r succeeded" % cmd)
        check("Permission denied" in r.stderr and "Read-only" not in r.stderr,
              "%r said %r" % (cmd, r.stderr))
    check(env.write(spec, "x: 1\n") == errno.EACCES, "write not EACCES")
    check(env.read(spec) == text, "the accepted spec changed")
    ev = events(env, g)
    check(" Warning ReadOnly " in ev and "read-only once accepted" in ev,
          "no ReadOnly warning:\n%s" % ev)
    check(env.ctl(g, "stop") == 0, "stop")


@case(timeout=90)
def test_mv_across_queues_refused_whole(env):
    g = env.group('command: ["true"]\n', name="p", queue="w")
    env.wait(g, "Succeeded", timeout=20)
    env.queue("q2")
    r = env.sh("mv queues/w/groups/p queues/q2/groups/p", check=False)
    check(r.returncode != 0, "mv across queues succeeded")
    check(os.listdir(env.p("queues/q2/groups")) == [],
          "mv left %r in the target" % os.listdir(env.p("queues/q2/groups")))
    check(env.status(g)["state"] == "Succeeded", "the group changed")
    ev = events(env, g)
    check(" Warning Refused " in ev and "mv of group" in ev, "no Refused warning:\n%s" % ev)
    # a task out of its group: the same
    r = env.sh("mv %s/tasks/0 tasks/0" % g, check=False)
    check(r.returncode != 0 and not os.path.exists(env.p("tasks/0")), "mv of a task out")
    env.remount()
    check(os.listdir(env.p("queues/q2/groups")) == [], "a stray group after remount")
    check(env.status(g)["state"] == "Succeeded", "after remount")
    # within its queue, a rename still works
    env.sh("mv queues/w/groups/p queues/w/groups/p2")
    check(os.listdir(env.p("queues/w/groups")) == ["p2"], "rename within the queue")


@case(timeout=60)
def test_links_and_nodes_eperm(env):
    env.mkdir("tasks/d")
    for cmd in ("ln -s /etc/passwd tasks/d/link", "ln tasks/d/spec.yaml tasks/d/hard",
                "mknod tasks/d/fifo p", "ln -s x queues/y"):
        r = env.sh(cmd, check=False)
        check(r.returncode != 0 and "not permitted" in r.stderr, "%r: rc %d %r"
              % (cmd, r.returncode, r.stderr))
    names = os.listdir(env.p("tasks/d"))
    check(not {"link", "hard", "fifo"} & set(names), "listing: %r" % names)
    check("y" not in os.listdir(env.p("queues")), "a symlink in queues/")


@case(timeout=60)
def test_files_that_would_vanish_are_refused(env):
    env.mkdir("tasks/d")
    env.queue("Q")
    for cmd in ("touch tasks/d/notes", "echo x > tasks/d/notes.txt", "touch queues/Q/notes"):
        r = env.sh(cmd, check=False)
        check(r.returncode != 0, "%r succeeded" % cmd)
        check("not permitted" in r.stderr, "%r said %r" % (cmd, r.stderr))
    r = env.sh("touch queues/notes", check=False)
    check(r.returncode != 0 and "notes" not in os.listdir(env.p("queues")), "queues/notes")
    check(" Warning Refused queue file notes not made" in events(env, "queues/Q"),
          "no warning in the queue's events:\n%s" % events(env, "queues/Q"))
    check("notes" not in os.listdir(env.p("tasks/d")), "notes listed")
    ev = events(env, "tasks/d")
    check(" Warning Refused batch file notes not made" in ev and "outside the mount" in ev,
          "no Refused warning naming the file:\n%s" % ev)
    # an editor's temporary file: made, renamed onto spec.yaml
    env.sh("printf 'command: [\"true\"]\\n' > tasks/d/.spec.yaml.tmp && "
           "mv tasks/d/.spec.yaml.tmp tasks/d/spec.yaml")
    env.wait("tasks/d", "Succeeded", timeout=20)
    # and a temp file may not be renamed to a name that would vanish
    env.mkdir("tasks/e")
    env.sh("echo x > tasks/e/spec.yaml~")
    r = env.sh("mv tasks/e/spec.yaml~ tasks/e/keep", check=False)
    check(r.returncode != 0, "rename of a temp to 'keep' succeeded")


@case(timeout=90)
def test_rm_rf(env):
    done = env.group('command: ["true"]\n', name="done")
    env.wait(done, "Succeeded", timeout=20)
    live = env.group(SLEEP, name="live")
    env.wait(live, "Running", timeout=20)
    r = env.sh("rm -rf %s" % live, check=False)
    check(r.returncode != 0 and "busy" in r.stderr, "rm -rf of a running group: rc %d %r"
          % (r.returncode, r.stderr[:300]))
    check(env.status(live)["state"] == "Running", "rm -rf disturbed a running group")
    check(os.path.exists(env.p(live, "spec.yaml")), "a live group's file went")
    rows = [x for x in env.ledger() if x["group"] == "done"]
    env.sh("rm -rf %s" % done)
    check(not os.path.exists(env.p(done)), "rm -rf left the finished group")
    check([x for x in env.ledger() if x["group"] == "done"] == rows, "ledger changed")
    # a draft, and a plain rm of one file of a finished group
    env.mkdir("tasks/d")
    env.sh("rm -rf tasks/d")
    check(not os.path.exists(env.p("tasks/d")), "rm -rf of a draft")
    check(env.ctl(live, "stop") == 0, "stop")
    env.wait(live, "Stopped", timeout=20)
    env.poll_until(lambda: env.sh("rm -rf queues/q", check=False).returncode == 0, 20,
                   "rm -rf of the queue")
    check(os.listdir(env.p("queues")) == [], "queues after rm -rf: %r"
          % os.listdir(env.p("queues")))
    r = env.sh("rm -f README", check=False)
    check(r.returncode != 0 and os.path.exists(env.p("README")), "rm README")


@case(timeout=60)
def test_queue_spec_refusal_in_status(env):
    q = env.queue("Q")
    # the shell drops close()'s EINVAL: the status is where it shows
    env.sh("echo 'capacty: 5' > %s/spec.yaml" % q, check=False)
    st = env.status_yaml(q)
    check("capacty" in st.get("message", "") and "refused" in st.get("message", ""),
          "queue status message %r" % st.get("message"))
    check(env.write(os.path.join(q, "spec.yaml"), "capacity: 5\n") == 0, "good queue spec")
    check(env.status_yaml(q).get("message", "") == "", "message kept after a good spec: %r"
          % env.status_yaml(q).get("message"))
    env.remount()
    check(env.status_yaml(q).get("message", "") == "", "message after remount")


@case(timeout=60)
def test_bad_name_says_the_rule(env):
    q = env.queue("Q")
    r = env.sh("mkdir '%s/groups/bad name'" % q, check=False)
    check(r.returncode != 0, "mkdir of a bad name succeeded")
    ev = events(env, q)
    check(" Warning InvalidName " in ev and "bad name" in ev, "no InvalidName:\n%s" % ev)
    g = env.group('command: ["true"]\n', name="ok", queue="Q")
    r = env.sh("mv %s '%s/groups/no/pe'" % (g, q), check=False)
    check(r.returncode != 0, "rename to a path succeeded")
    r = env.sh("mv %s '%s/groups/x y'" % (g, q), check=False)
    check(r.returncode != 0, "rename to a bad name succeeded")
    check(" Warning InvalidName " in events(env, g), "no InvalidName in the group")
