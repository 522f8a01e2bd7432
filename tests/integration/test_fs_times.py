"""Times are real: each object's files carry that object's own last change.

With real programs on a real mount:
- a task that finished keeps its own end as the mtime of its status (not
  its group's end), also after a remount;
- an idle tree stats the same twice: README, cluster/*, queues/, a queue's
  spec.yaml and status, a group's files (but cluster/usage.svg: a picture
  of the last 24 hours, which moves with the clock every 5 minutes);
- `find -newer REF` lists nothing of an idle tree, and after a new group
  runs, that group's files but none of the old group's;
- `rsync -ai` of the tree a second time sends nothing, and after the new
  group ran, nothing of the old group.

The sleeps below only put a second boundary between two looks (mtimes are
compared in whole seconds by rsync); nothing asserts how long anything took.
"""
import calendar
import os
import time

from jfit import case, check

SPEC = 'completions: 3\nparallelism: 1\ncommand: ["sh", "-c", "sleep 1; echo done"]\n'


def rfc3339_s(t):
    return calendar.timegm(time.strptime(t, "%Y-%m-%dT%H:%M:%SZ"))


def mtimes(env):
    """path -> mtime (ns) of everything `find` lists under the mount."""
    out = env.sh("find . -printf '%T@ %p\\n'", timeout=60).stdout
    got = {}
    for line in out.splitlines():
        t, p = line.split(" ", 1)
        got[p] = t
    return got


# files of the clock, idle or not: a plot of the last 24 hours (it changes
# every 5 minutes) and the forecast of the hours from the next one on (it
# changes at each full hour)
CLOCK = ("cluster/usage.svg", "cluster/forecast")


def of_clock(p):
    """p (a path from find, or an rsync -i line) names a file of the clock."""
    return any(p == c or p == "./" + c or p.endswith(" " + c) for c in CLOCK)


def next_second():
    """Sleep past the next whole second (see the module's docstring)."""
    time.sleep(1.1 - (time.time() % 1.0) + 0.05)


@case(timeout=90)
def test_each_object_its_own_time(env):
    g = env.group(SPEC, name="old", queue="w")
    st = env.wait(g, "Succeeded", timeout=30)
    ends = []
    for i in range(3):
        t = os.path.join(g, "tasks", str(i))
        ts = env.status(t)
        m = int(os.stat(env.p(t, "status")).st_mtime)
        check(m == rfc3339_s(ts["finished"]),
              "tasks/%d/status mtime %d, its finished %s" % (i, m, ts["finished"]))
        ends.append(m)
    gm = int(os.stat(env.p(g, "status")).st_mtime)
    check(gm == rfc3339_s(st["finished"]), "group status mtime %d, finished %s"
          % (gm, st["finished"]))
    check(ends[0] < gm, "task 0 ended (%d) before its group (%d)" % (ends[0], gm))
    # an accepted spec keeps its acceptance
    sm = int(os.stat(env.p(g, "spec.yaml")).st_mtime)
    check(sm <= ends[0], "spec.yaml mtime %d after the first task's end %d" % (sm, ends[0]))
    env.remount()
    for i in range(3):
        m = int(os.stat(env.p(g, "tasks", str(i), "status")).st_mtime)
        check(m == ends[i], "after a remount tasks/%d/status mtime %d, was %d" % (i, m, ends[i]))


@case(timeout=120)
def test_idle_tree_find_newer_and_rsync(env):
    g = env.group(SPEC, name="old", queue="w")
    env.wait(g, "Succeeded", timeout=30)
    first = mtimes(env)
    for p in ("./README", "./cluster", "./queues", "./queues/w/spec.yaml", "./queues/w/status",
              "./queues/w/groups/old/status", "./queues/w/groups/old/tasks/0/status"):
        check(p in first, "find lists %s" % p)
    next_second()
    second = mtimes(env)
    moved = sorted(p for p in first if second.get(p) != first[p] and not of_clock(p))
    check(not moved, "an idle tree's mtimes moved: %s" % moved[:10])
    ref = os.path.join(env.tmp, "ref")
    with open(ref, "w"):
        pass
    next_second()
    newer = env.sh("find . -newer %s" % ref, timeout=60).stdout.split()
    newer = [p for p in newer if not of_clock(p)]
    check(newer == [], "find -newer lists an idle tree's files: %s" % newer[:10])
    # rsync: a second run sends nothing
    dst = os.path.join(env.tmp, "copy")
    env.sh("rsync -a ./ %s/" % dst, timeout=120)
    next_second()
    again = env.sh("rsync -ai ./ %s/" % dst, timeout=120).stdout.split("\n")
    again = [l for l in again if l.strip() and not of_clock(l)]
    check(again == [], "rsync -ai sent again: %s" % again[:10])
    # a new group runs: find and rsync see it, and nothing of the old group
    new = os.path.join(os.path.dirname(g), "new")
    env.mkdir(new)
    env.submit(new, 'command: ["true"]\n')
    env.wait(new, "Succeeded", timeout=30)
    newer = env.sh("find . -newer %s" % ref, timeout=60).stdout.split()
    check("./queues/w/groups/new/status" in newer, "find -newer misses the new group: %s"
          % newer[:20])
    old = [p for p in newer if p.startswith("./queues/w/groups/old")]
    check(old == [], "find -newer lists the old group's files: %s" % old[:10])
    sent = env.sh("rsync -ai ./ %s/" % dst, timeout=120).stdout.split("\n")
    check(any("queues/w/groups/new/status" in l for l in sent), "rsync did not send the new "
          "group: %s" % sent[:20])
    old = [l for l in sent if "groups/old/" in l]
    check(old == [], "rsync sent the old group again: %s" % old[:10])
