"""The tree's plots (reference 11): a group's and a batch's timeline.svg,
/cluster/usage.svg and /billing/cost.svg on a real mount.

Each SVG is read with a real `cat`, its `stat` size checked against the
bytes read, parsed with xml.etree (the SVG namespace, version 1.1, a
title, an x and a y axis with labelled ticks, a legend) and its bars
counted against the attempts the tree lists; then rendered by headless
Chromium (Debian's `chromium`) to a PNG, decoded here, that must not be
blank.  With JOBFS_SCREENSHOTS=DIR the PNGs are copied there (the
README's screenshots in docs/img/ are made so: scripts/screenshots.sh).

A 10,000-task group's timeline is read too: it must come as bands, not
10,000 rows, and stay small; how long the read took is printed as a
figure (not asserted: this VM's speed varies too much).
"""
import os
import shutil
import stat
import struct
import subprocess
import time
import xml.etree.ElementTree as ET
import zlib

from jfit import Skip, case, check, sanitized

SVG = "{http://www.w3.org/2000/svg}"

# two A800 GPUs for spot work and the on-demand group that preempts it;
# CPU for the rest; a short grace so the preemption is quick
CLUSTER = """\
name: plots
currency: CNY
preempt_grace: 1s
models:
  - {name: A800, vram: 80Gi, cpu_per_gpu: 2, memory_per_gpu: 8Gi,
     price: {on-demand: "9.60", spot: "2.88"}}
  - {name: L40S, vram: 48Gi, cpu_per_gpu: 2, memory_per_gpu: 8Gi,
     price: {on-demand: "4.80", spot: "1.44"}}
machines:
  - {name: a800-0, model: A800, gpus: 2}
  - {name: l40s-0, model: L40S, gpus: 2}
"""

# spot: counts to 20 in steps of 0.1 s, keeps its place across a preemption
SPOT = r"""
billing: spot
gpu: A800
completions: 2
parallelism: 2
command: ["/bin/sh", "-c"]
args:
  - |
    ck=$JOB_CHECKPOINT_DIR/step; i=0
    [ -f $ck ] && i=$(cat $ck)
    trap 'echo $i > $ck; exit 143' TERM
    while [ $i -lt 20 ] || [ ! -e @GO@ ]; do sleep 0.1 & wait $!; i=$((i+1)); done
"""

OD = 'gpu: A800\ngpus: 2\ncommand: ["/bin/sh", "-c", "sleep 1"]\n'

# task 1's first attempt fails, its retry succeeds
RETRY = r"""
gpu: L40S
completions: 3
parallelism: 3
retries: 2
command: ["/bin/sh", "-c"]
args: ['sleep 0.5; [ "$JOB_TASK_INDEX" != 1 ] || [ "$JOB_ATTEMPT" -gt 1 ] || exit 3']
"""

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking"]


def read_svg(env, path):
    """`cat` it; stat's size must be what cat read."""
    full = env.p(path)
    data = subprocess.run(["cat", full], capture_output=True, check=True).stdout
    st = os.stat(full)
    check(st.st_size == len(data), "%s: stat says %d bytes, cat read %d"
          % (path, st.st_size, len(data)))
    check(stat.S_IMODE(st.st_mode) == 0o444, "%s: mode %o" % (path, st.st_mode))
    try:
        with open(full, "w") as f:
            f.write("x")
        raise AssertionError("%s could be written" % path)
    except PermissionError:
        pass
    return data


def parse(path, data):
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        raise AssertionError("%s is not XML: %s\n%s" % (path, e, data[:400]))
    check(root.tag == SVG + "svg", "%s: root %s" % (path, root.tag))
    check(root.get("version") == "1.1", "%s: version %s" % (path, root.get("version")))
    for a in ("width", "height", "viewBox"):
        check(root.get(a), "%s: no %s" % (path, a))
    title = root.find(SVG + "title")
    check(title is not None and title.text, "%s: no title" % path)
    for axis in ("x-axis", "y-axis"):
        g = [e for e in root.iter(SVG + "g") if axis in (e.get("class") or "").split()]
        check(len(g) == 1, "%s: %d %s groups" % (path, len(g), axis))
        ticks = [t for t in g[0].iter(SVG + "g") if t.get("class") == "tick"]
        labels = [t.find(SVG + "text").text for t in ticks]
        check(len(ticks) >= 2 and all(labels), "%s: %s ticks %s" % (path, axis, labels))
    legend = [e for e in root.iter(SVG + "g") if e.get("class") == "legend"]
    check(len(legend) == 1, "%s: %d legends" % (path, len(legend)))
    entries = [e for e in legend[0] if e.get("class") == "legend-entry"]
    check(entries, "%s: an empty legend" % path)
    return root, [e.find(SVG + "text").text for e in entries]


def of_class(root, tag, cls):
    return [e for e in root.iter(SVG + tag) if cls in (e.get("class") or "").split()]


def attempts_listed(env, group):
    """Every attempts/<a> directory under the group's nodes."""
    n = 0
    tasks = env.p(group, "tasks")
    for t in os.listdir(tasks):
        nodes = os.path.join(tasks, t, "nodes")
        for nd in os.listdir(nodes):
            n += len(os.listdir(os.path.join(nodes, nd, "attempts")))
    return n


# ---- PNG: decoded with zlib alone ----

def png_pixels(data):
    """(width, height, rows of pixel tuples) of an 8-bit RGB(A) PNG."""
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
            check(depth == 8 and colour in (2, 6), "PNG depth %d colour %d" % (depth, colour))
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pr) & 255
        rows.append([bytes(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return w, h, rows


def chromium():
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    if os.environ.get("JOBFS_CHROMIUM_REQUIRED"):
        raise AssertionError("chromium is not installed (scripts/deps.sh)")
    raise Skip("chromium is not installed (scripts/deps.sh installs it)")


def render_png(env, name, data, width, height):
    """Chromium headless: the SVG to a PNG; checked not blank; copied to
    $JOBFS_SCREENSHOTS when set."""
    svg = os.path.join(env.work, name + ".svg")
    png = os.path.join(env.work, name + ".png")
    with open(svg, "wb") as f:
        f.write(data)
    home = os.path.join(env.work, "chromium-home")
    os.makedirs(home, exist_ok=True)
    cmd = [chromium()] + CHROMIUM_FLAGS + [
        "--user-data-dir=" + os.path.join(home, "profile"), "--hide-scrollbars",
        "--screenshot=" + png, "--window-size=%d,%d" % (width, height), "file://" + svg]
    r = subprocess.run(cmd, capture_output=True, timeout=90,
                       env=dict(os.environ, HOME=home))
    check(os.path.exists(png), "chromium made no PNG (rc %d): %s" % (r.returncode, r.stderr[-800:]))
    with open(png, "rb") as f:
        pdata = f.read()
    w, h, rows = png_pixels(pdata)
    check((w, h) == (width, height), "PNG %dx%d, want %dx%d" % (w, h, width, height))
    seen, ink = set(), 0
    for row in rows:
        for px in row:
            seen.add(px)
            if px != b"\xff\xff\xff":
                ink += 1
    check(len(seen) > 8, "%s.png: %d distinct colours: blank" % (name, len(seen)))
    check(ink > w * h // 200, "%s.png: %d pixels not white of %d" % (name, ink, w * h))
    out = os.environ.get("JOBFS_SCREENSHOTS")
    if out:
        os.makedirs(out, exist_ok=True)
        shutil.copyfile(png, os.path.join(out, name + ".png"))
    return len(seen)


def size_of(root):
    return int(root.get("width")), int(root.get("height"))


@case(timeout=180)
def test_plots(env):
    """Spot and on-demand work, a preemption, a failed-then-retried task and
    a batch; every plot parses, counts right, and renders in Chromium."""
    env.use_cluster(CLUSTER)
    # the spot tasks run on until od has preempted them and ended
    go = os.path.join(env.tmp, "spot-go")
    spot = env.group(SPOT.replace("@GO@", go), name="spot", queue="train")
    env.wait(spot, pred=lambda s: s["running"] == 2, timeout=20, what="2 spot tasks running")
    time.sleep(0.5)
    od = env.group(OD, name="od", queue="serve")
    retry = env.group(RETRY, name="retry", queue="serve")
    env.mkdir("tasks/sweep")
    env.submit("tasks/sweep", 'count: 3\ncommand: ["/bin/sh", "-c", "sleep 0.3"]\n')
    for g in (od, retry, "tasks/sweep"):
        env.wait(g, "Succeeded", timeout=60)
    open(go, "w").close()
    env.wait(spot, "Succeeded", timeout=60)
    st = env.status(retry)
    check(st["succeeded"] == 3, "retry: %s" % st)

    # the timelines: a bar per attempt and node, as the tree lists them
    outcomes = {}
    for name, g in (("spot", spot), ("retry", retry), ("od", od)):
        path = os.path.join(g, "timeline.svg")
        check("timeline.svg" in os.listdir(env.p(g)), "%s lists no timeline.svg" % g)
        data = read_svg(env, path)
        root, legend = parse(path, data)
        bars = of_class(root, "rect", "bar")
        want = attempts_listed(env, g)
        check(len(bars) == want, "%s: %d bars, %d attempts listed" % (path, len(bars), want))
        check(not of_class(root, "path", "band"), "%s: bands for a small group" % path)
        check(any(x.startswith("Succeeded") for x in legend), "%s legend %s" % (path, legend))
        outcomes[name] = [b.find(SVG + "title").text for b in bars]
        if name in ("spot", "retry"):
            render_png(env, "timeline-" + name, data, *size_of(root))
    check(any("Preempted" in t for t in outcomes["spot"]),
          "spot timeline shows no preemption: %s" % outcomes["spot"])
    check(any("task 1 node 0 attempt 1: Failed" in t for t in outcomes["retry"]) and
          any("task 1 node 0 attempt 2: Succeeded" in t for t in outcomes["retry"]),
          "retry timeline: %s" % outcomes["retry"])
    batch = read_svg(env, "tasks/sweep/timeline.svg")
    root, _ = parse("tasks/sweep/timeline.svg", batch)
    check(len(of_class(root, "rect", "bar")) == 3, "batch bars: %d"
          % len(of_class(root, "rect", "bar")))

    # usage: a line per model and its forecast
    data = read_svg(env, "cluster/usage.svg")
    check("usage.svg" in os.listdir(env.p("cluster")), "cluster lists no usage.svg")
    root, legend = parse("cluster/usage.svg", data)
    check(len(of_class(root, "path", "series")) == 2, "usage: series %d"
          % len(of_class(root, "path", "series")))
    check(any(x.startswith("A800 (2 GPUs)") for x in legend), "usage legend %s" % legend)
    check(len(of_class(root, "path", "forecast")) == 2, "usage: forecasts")
    render_png(env, "usage", data, *size_of(root))

    # cost: a line per queue with ledger rows, ending at its cost
    data = read_svg(env, "billing/cost.svg")
    check("cost.svg" in os.listdir(env.p("billing")), "billing lists no cost.svg")
    root, legend = parse("billing/cost.svg", data)
    names = sorted(x.split(":")[0] for x in legend)
    check(names == ["(independent)", "serve", "train"], "cost legend %s" % legend)
    train_cost = env.read("queues/train/cost").split()[0]
    check(any(x == "train: %s CNY" % train_cost for x in legend),
          "cost legend %s, queues/train/cost %s" % (legend, train_cost))
    render_png(env, "cost", data, *size_of(root))


@case(timeout=400)
def test_timeline_10000(env):
    """A 10,000-task group: its timeline comes as bands of tasks and stays
    small; the read's time is printed (a figure, not a pass condition)."""
    env.use_cluster("""\
name: cpu
models:
  - {name: C, vram: 1Gi, cpu_per_gpu: 16, memory_per_gpu: 16Gi,
     price: {on-demand: "1.00", spot: "0.30"}}
machines:
  - {name: c0, model: C, gpus: 8}
""")
    # under the sanitizers (a daemon 2-3x slower) 2,000 tasks: bands all
    # the same, and the test command stays within its time
    n = 2000 if sanitized() else 10000
    g = env.group('completions: %d\nparallelism: 64\ncommand: ["true"]\n' % n,
                  name="big", queue="q")
    env.wait(g, "Succeeded", timeout=360)
    path = os.path.join(g, "timeline.svg")
    t = time.monotonic()
    data = read_svg(env, path)
    took = time.monotonic() - t
    root, legend = parse(path, data)
    check(not of_class(root, "rect", "bar"), "10,000 rows of bars")
    bands = of_class(root, "g", "band-row")
    check(len(bands) == 100, "%d bands" % len(bands))
    check(len(data) < 1000000, "%d bytes" % len(data))
    check("Succeeded (%d)" % n in legend, "legend %s" % legend)
    print("timeline.svg of %d tasks: %d bytes, first read (stat + cat) %.1f ms"
          % (n, len(data), took * 1000))
    render_png(env, "timeline-10000", data, *size_of(root))


@case(timeout=60)
def test_timeline_before_any_attempt(env):
    """A draft's and a waiting group's timeline.svg are the same file a
    day later (an empty axis at their submission, not at now); a running
    group's grows with the clock. The daemon's clock is moved with
    --test-clock, so this does not depend on how fast the machine is."""
    clock = os.path.join(env.tmp, "clock")
    with open(clock, "w") as f:
        f.write("0\n")
    env.stop()
    env.daemon_args = list(env.daemon_args) + ["--test-clock", clock]
    env.start()
    env.mkdir("queues/q")
    env.mkdir("queues/q/groups/draft")
    run = env.group('gpu: "4090"\ncommand: ["/bin/sh", "-c", "sleep 30"]\n', name="run")
    env.wait(run, "Running", timeout=20)
    # a group that waits: for the running one to succeed
    env.mkdir("queues/q/groups/held")
    env.submit("queues/q/groups/held", 'gpu: "4090"\nafter: [run]\ncommand: ["/bin/true"]\n')
    paths = ["queues/q/groups/draft/timeline.svg", "queues/q/groups/held/timeline.svg",
             run + "/timeline.svg"]
    before = [env.read(p) for p in paths]
    for p, b in zip(paths, before):
        check(len(b) == os.stat(env.p(p)).st_size, "%s: stat size differs from a read" % p)
        ET.fromstring(b)
    tmp = clock + ".new"
    with open(tmp, "w") as f:
        f.write("%d\n" % 86400)
    os.rename(tmp, clock)
    env.poll_until(lambda: env.read(paths[2]) != before[2], 10,
                   "the running group's timeline to move with the clock")
    for p, b in zip(paths[:2], before[:2]):
        check(env.read(p) == b, "%s changed with the clock and nothing else" % p)
    st = env.status("queues/q/groups/held")
    check(st["state"] != "Running" and st["reason"] == "Dependency", "held: %s" % st)
    env.ctl(run, "stop")
