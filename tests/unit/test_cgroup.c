/*
 * test_cgroup.c - runtime/cgroup.c: the parsers on fixture text (the
 * "key N" files, mount tables of v1, hybrid and v2 hosts, read-only and
 * escaped ones), names refused; then, as root where cgroups can be made
 * (skipped otherwise, failed instead when JOBFS_CGROUP_REQUIRED=1), the
 * real thing: the limits written, an OOM kill counted (and none where the
 * limit is not reached), one in a "ctr" child cgroup on the parent's limit
 * counted by the parent (an OCI runtime's case), a cpu quota holding a
 * spinning child to its share, jf_cg_remove killing what is left and
 * removing the directories, jf_cg_join in a vfork child.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/cgroup.h"
#include "runtime/cgroup_parse.h"
#include "testutil.h"

/* ---- the parsers ---- */

static void test_parse_kv(void **st)
{
	(void)st;
	const char *oomc = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
	assert_int_equal(jf_cg_parse_kv(oomc, "oom_kill"), 3);
	assert_int_equal(jf_cg_parse_kv(oomc, "oom_kill_disable"), 0);
	assert_int_equal(jf_cg_parse_kv(oomc, "under_oom"), 0);
	assert_int_equal(jf_cg_parse_kv(oomc, "oom"), -1);
	/* v1 before 4.13 */
	assert_int_equal(jf_cg_parse_kv("oom_kill_disable 0\nunder_oom 0\n", "oom_kill"), -1);

	const char *events = "low 0\nhigh 0\nmax 1742\noom 2\noom_kill 1\noom_group_kill 0\n";
	assert_int_equal(jf_cg_parse_kv(events, "oom_kill"), 1);
	assert_int_equal(jf_cg_parse_kv(events, "oom"), 2);
	assert_int_equal(jf_cg_parse_kv(events, "max"), 1742);
	assert_int_equal(jf_cg_parse_kv(events, "oom_group_kill"), 0);

	const char *cpustat = "usage_usec 9876543210\nuser_usec 1\nsystem_usec 2\n"
			      "nr_periods 0\nnr_throttled 0\nthrottled_usec 0";
	assert_int_equal(jf_cg_parse_kv(cpustat, "usage_usec"), 9876543210LL);
	assert_int_equal(jf_cg_parse_kv(cpustat, "throttled_usec"), 0); /* no newline at the end */
	assert_int_equal(jf_cg_parse_kv(cpustat, "usage"), -1);

	assert_int_equal(jf_cg_parse_kv("a -1\n", "a"), -1);
	assert_int_equal(jf_cg_parse_kv("a x\n", "a"), -1);
	assert_int_equal(jf_cg_parse_kv("a 12x\n", "a"), -1);
	assert_int_equal(jf_cg_parse_kv("a 99999999999999999999\n", "a"), -1);
	assert_int_equal(jf_cg_parse_kv("xa 5\na 7\n", "a"), 7);
	assert_int_equal(jf_cg_parse_kv("", "a"), -1);
	assert_int_equal(jf_cg_parse_kv(NULL, "a"), -1);
	assert_int_equal(jf_cg_parse_kv("populated 1\nfrozen 0\n", "populated"), 1);
}

static void test_has_word(void **st)
{
	(void)st;
	assert_true(jf_cg_has_word("cpuset cpu io memory pids\n", "cpu"));
	assert_true(jf_cg_has_word("cpuset cpu io memory pids\n", "pids"));
	assert_false(jf_cg_has_word("cpuset io memory\n", "cpu"));
	assert_false(jf_cg_has_word("cpuset io\n", "memory"));
	assert_false(jf_cg_has_word("", "memory"));
	assert_false(jf_cg_has_word("\n", "memory"));
	assert_true(jf_cg_has_word("memory", "memory"));
}

/* CentOS 7: v1 only, cpu and cpuacct mounted together */
static const char mi_v1[] =
	"18 62 0:17 / /sys rw,nosuid,nodev,noexec,relatime shared:6 - sysfs sysfs rw\n"
	"24 18 0:20 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:7 - tmpfs tmpfs ro,mode=755\n"
	"25 24 0:21 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:8 - cgroup "
	"cgroup rw,xattr,release_agent=/usr/lib/systemd/systemd-cgroups-agent,name=systemd\n"
	"28 24 0:24 / /sys/fs/cgroup/cpuset rw,nosuid,nodev,noexec,relatime shared:11 - cgroup "
	"cgroup rw,cpuset\n"
	"29 24 0:25 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:12 - "
	"cgroup "
	"cgroup rw,cpu,cpuacct\n"
	"33 24 0:29 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:16 - cgroup "
	"cgroup rw,memory\n"
	"36 24 0:32 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:19 - cgroup "
	"cgroup rw,pids\n";

/* this project's test hosts: cpu and cpuacct apart, a cgroup2 mount at
 * /sys/fs/cgroup/unified with no controllers */
static const char mi_hybrid[] =
	"30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
	"33 30 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
	"34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

/* Fedora, Ubuntu 22.04 and later: the unified hierarchy alone */
static const char mi_v2[] =
	"22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
	"24 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n"
	"26 24 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
	"rw,nsdelegate,memory_recursiveprot\n"
	"27 24 0:25 / /sys/fs/pstore rw,nosuid,nodev,noexec,relatime shared:5 - pstore pstore rw\n";

/* inside a Docker container on a v2 host: read-only, another cgroup2
 * mount seen first */
static const char mi_v2_ro[] = "612 609 0:30 / /mnt/other rw,relatime - cgroup2 cgroup2 rw\n"
			       "613 609 0:30 /docker/4f2a /sys/fs/cgroup ro,nosuid,nodev,noexec,"
			       "relatime master:9 - cgroup2 cgroup ro,nsdelegate\n";

/* inside a Docker container on a v1 host: the memory hierarchy read-only */
static const char mi_v1_ro[] =
	"700 699 0:31 /docker/ab /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime "
	"master:15 - cgroup cgroup rw,memory\n"
	"701 699 0:32 /docker/ab /sys/fs/cgroup/cpu,cpuacct ro,nosuid,nodev,noexec,relatime "
	"master:16 - cgroup cgroup rw,cpu,cpuacct\n";

static void test_mountinfo(void **st)
{
	(void)st;
	struct jf_cg_roots r;

	assert_int_equal(jf_cg_parse_mountinfo(mi_v1, &r), 1);
	assert_false(r.hybrid);
	assert_string_equal(r.mem, "/sys/fs/cgroup/memory");
	assert_string_equal(r.cpu, "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(r.acct, "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(r.v2, "");
	assert_false(r.mem_ro || r.cpu_ro || r.acct_ro);

	assert_int_equal(jf_cg_parse_mountinfo(mi_hybrid, &r), 1);
	assert_true(r.hybrid);
	assert_string_equal(r.mem, "/sys/fs/cgroup/memory");
	assert_string_equal(r.cpu, "/sys/fs/cgroup/cpu");
	assert_string_equal(r.acct, "/sys/fs/cgroup/cpuacct");
	assert_string_equal(r.v2, "/sys/fs/cgroup/unified");

	assert_int_equal(jf_cg_parse_mountinfo(mi_v2, &r), 2);
	assert_false(r.hybrid);
	assert_string_equal(r.v2, "/sys/fs/cgroup");
	assert_string_equal(r.mem, "");
	assert_string_equal(r.cpu, "");
	assert_false(r.v2_ro);

	assert_int_equal(jf_cg_parse_mountinfo(mi_v2_ro, &r), 2);
	assert_string_equal(r.v2, "/sys/fs/cgroup"); /* preferred to /mnt/other */
	assert_true(r.v2_ro);

	assert_int_equal(jf_cg_parse_mountinfo(mi_v1_ro, &r), 1);
	assert_true(r.mem_ro);
	assert_true(r.cpu_ro);
	assert_string_equal(r.mem, "/sys/fs/cgroup/memory");

	/* none at all; broken lines */
	assert_int_equal(jf_cg_parse_mountinfo("22 1 259:2 / / rw - ext4 /dev/x rw\n", &r), 0);
	assert_int_equal(jf_cg_parse_mountinfo("", &r), 0);
	assert_int_equal(jf_cg_parse_mountinfo("1 2 3 / /sys/fs/cgroup rw cgroup2\n"
					       "garbage\n\n - cgroup2\n",
					       &r),
			 0);

	/* escapes in a mount point; optional fields; no newline at the end */
	assert_int_equal(jf_cg_parse_mountinfo("5 1 0:9 / /mnt/c\\040g rw shared:3 master:1 - "
					       "cgroup2 none rw",
					       &r),
			 2);
	assert_string_equal(r.v2, "/mnt/c g");

	/* memory mounted with cpu: one hierarchy for both */
	assert_int_equal(
		jf_cg_parse_mountinfo("5 1 0:9 / /cg rw - cgroup cgroup rw,cpu,memory\n", &r), 1);
	assert_string_equal(r.mem, "/cg");
	assert_string_equal(r.cpu, "/cg");
	assert_string_equal(r.acct, "");

	/* the real one parses (whatever it says) */
	char *self = jft_read_file("/proc/self/mountinfo");
	assert_non_null(self);
	int v = jf_cg_parse_mountinfo(self, &r);
	assert_true(v >= 0 && v <= 2);
	free(self);
	bool hybrid = !r.hybrid;
	int d = jf_cg_detect(&hybrid);
	assert_true(d == 0 || d == v);
	assert_int_equal(hybrid, r.hybrid);
	assert_int_equal(jf_cg_detect(NULL), d);
}

/* mountinfo read from a file a buffer at a time: lines across the reads,
 * one too long for the buffer skipped whole, none at the end */
static void test_mountinfo_fd(void **st)
{
	(void)st;
	char dir[1024], path[1100];
	jft_mkdtemp(dir, sizeof(dir), jft_tmp_base(), "jf-cgroup");
	snprintf(path, sizeof(path), "%s/mountinfo", dir);
	size_t cap = 64 * 1024, off = 0;
	char *text = malloc(cap);
	assert_non_null(text);
	/* a cgroup2 mount with a mount point of 6000 characters: skipped,
	 * never taken for its tail */
	off += (size_t)snprintf(text + off, cap - off, "1 0 0:1 / /");
	memset(text + off, 'x', 6000);
	off += 6000;
	off += (size_t)snprintf(text + off, cap - off, " rw - cgroup2 cgroup2 rw\n");
	/* padding, so that the lines below straddle reads */
	for (int i = 0; i < 97; i++)
		off += (size_t)snprintf(text + off, cap - off,
					"%d 1 0:%d / /mnt/pad%d rw,relatime - tmpfs tmpfs rw\n",
					100 + i, 50 + i, i);
	off += (size_t)snprintf(text + off, cap - off, "%s", mi_hybrid);
	text[off - 1] = '\0'; /* no newline after the last line */
	jft_write_file(path, text);

	struct jf_cg_roots a, b;
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(jf_cg_read_mountinfo(fd, &a), 1);
	close(fd);
	assert_int_equal(jf_cg_parse_mountinfo(text, &b), 1);
	assert_true(a.hybrid && b.hybrid);
	assert_string_equal(a.mem, "/sys/fs/cgroup/memory");
	assert_string_equal(a.cpu, "/sys/fs/cgroup/cpu");
	assert_string_equal(a.acct, "/sys/fs/cgroup/cpuacct");
	assert_string_equal(a.v2, "/sys/fs/cgroup/unified"); /* the last line */
	assert_memory_equal(&a, &b, sizeof(a));
	free(text);
	jft_rmtree(dir);
}

static void test_bad_names(void **st)
{
	(void)st;
	const char *bad[] = { "",         "/jobfs/a", "jobfs/../x", "jobfs//a",
			      "jobfs/a/", "./a",      "a/.",        NULL };
	char err[256];
	struct jf_cg cg;
	for (int i = 0; bad[i]; i++) {
		err[0] = '\0';
		assert_int_equal(jf_cg_create(&cg, bad[i], 0, 0, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "bad cgroup name"));
		assert_int_equal(cg.version, 0);
		jf_cg_remove(&cg); /* harmless */
	}
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(jf_cg_create(&cg, longname, 0, 0, err, sizeof(err)), -1);
	assert_int_equal(jf_cg_create(&cg, NULL, 0, 0, err, sizeof(err)), -1);
	assert_int_equal(jf_cg_create(&cg, "jobfs/x", -1, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "bad cgroup limits"));

	/* where cgroups cannot be made, the caller is told so */
	if (jf_cg_detect(NULL) == 0) {
		assert_int_equal(jf_cg_create(&cg, "jobfs/x/y", 1 << 20, 100, err, sizeof(err)),
				 -1);
		assert_string_equal(err, "cgroups are not writable here: memory and cpu limits "
					 "cannot be enforced");
		assert_int_equal(cg.version, 0);
	}

	/* a struct never made: nothing to join, read or remove */
	memset(&cg, 0, sizeof(cg));
	errno = 0;
	assert_int_equal(jf_cg_join(&cg, 0), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(jf_cg_oom_kills(&cg), -1);
	assert_int_equal(jf_cg_cpu_usec(&cg), -1);
	jf_cg_remove(&cg);
	assert_int_equal(cg.version, 0);

	snprintf(cg.rel, sizeof(cg.rel), "jobfs/r1/web");
	char p[64];
	jf_cg_runtime_path(&cg, p, sizeof(p));
	assert_string_equal(p, "/jobfs/r1/web/ctr");
	jf_cg_runtime_path(&cg, p, 8); /* too small: empty, not cut */
	assert_string_equal(p, "");
}

/* ---- as root, on the real cgroups ---- */

#define NCG  4
#define NKID 8

static struct jf_cg cgs[NCG];
static pid_t kids[NKID];
static char base[64]; /* jobfs/test-PID: this program's cgroups */

static int root_setup(void **st)
{
	(void)st;
	memset(cgs, 0, sizeof(cgs));
	memset(kids, 0, sizeof(kids));
	snprintf(base, sizeof(base), "jobfs/test-%d", (int)getpid());
	return 0;
}

/* Whatever a test left, even when it failed half-way: its children
 * killed and reaped, its cgroups removed. */
static int root_teardown(void **st)
{
	(void)st;
	for (int i = 0; i < NKID; i++)
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
			kids[i] = 0;
		}
	for (int i = 0; i < NCG; i++)
		jf_cg_remove(&cgs[i]);
	return 0;
}

/* Skip unless cgroups can be made here; fail instead where they must be */
static void need_cgroups(void)
{
	const char *req = getenv("JOBFS_CGROUP_REQUIRED");
	bool required = req && !strcmp(req, "1");
	if (geteuid() != 0 || jf_cg_detect(NULL) == 0) {
		if (required)
			fail_msg("JOBFS_CGROUP_REQUIRED=1 but cgroups cannot be made here (uid %d)",
				 (int)geteuid());
		skip();
	}
}

static struct jf_cg *make(int i, const char *name, int64_t mem, int64_t milli)
{
	char rel[128], err[512];
	snprintf(rel, sizeof(rel), "%s/%s", base, name);
	if (jf_cg_create(&cgs[i], rel, mem, milli, err, sizeof(err)) < 0)
		fail_msg("jf_cg_create %s: %s", rel, err);
	assert_int_equal(cgs[i].version, jf_cg_detect(NULL));
	return &cgs[i];
}

static void track(pid_t pid)
{
	for (int i = 0; i < NKID; i++)
		if (!kids[i]) {
			kids[i] = pid;
			return;
		}
	fail_msg("too many children");
}

static int reap(pid_t pid, struct rusage *ru)
{
	int status = 0;
	struct rusage dummy;
	assert_int_equal(wait4(pid, &status, 0, ru ? ru : &dummy), pid);
	for (int i = 0; i < NKID; i++)
		if (kids[i] == pid)
			kids[i] = 0;
	return status;
}

/* children: never back into cmocka */
static void touch_mib(int mib)
{
	size_t n = (size_t)mib << 20;
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(101);
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
}

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void spin_ms(int ms)
{
	int64_t end = mono_us() + (int64_t)ms * 1000;
	volatile uint64_t x = 0;
	while (mono_us() < end)
		for (int i = 0; i < 10000; i++)
			x = x + (uint64_t)i;
}

enum job { TOUCH, SPIN, SLEEP };

/* A child in cg (or in the file procs when given), doing job with arg;
 * when ready_fd is given it writes a byte there once it has joined. */
static pid_t spawn(const struct jf_cg *cg, const char *procs, enum job job, int arg)
{
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		if (procs) {
			int fd = open(procs, O_WRONLY);
			if (fd < 0 || write(fd, "0", 1) != 1)
				_exit(100);
			close(fd);
		} else if (jf_cg_join(cg, 0) < 0) {
			_exit(100);
		}
		if (write(pfd[1], "j", 1) != 1)
			_exit(102);
		close(pfd[1]);
		if (job == TOUCH)
			touch_mib(arg);
		else if (job == SPIN)
			spin_ms(arg);
		else
			pause();
		_exit(0);
	}
	track(pid);
	close(pfd[1]);
	char c;
	ssize_t n = read(pfd[0], &c, 1);
	close(pfd[0]);
	if (n != 1) {
		int status = reap(pid, NULL);
		fail_msg("the child could not join its cgroup (status 0x%x)", status);
	}
	return pid;
}

static char *read_in(const char *dir, const char *name)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return jft_read_file(p);
}

static void assert_file(const char *dir, const char *name, const char *want)
{
	char *t = read_in(dir, name);
	if (!t)
		fail_msg("cannot read %s/%s", dir, name);
	t[strcspn(t, "\n")] = '\0';
	if (strcmp(t, want))
		fail_msg("%s/%s: \"%s\", not \"%s\"", dir, name, t, want);
	free(t);
}

static void test_limits_written(void **st)
{
	(void)st;
	need_cgroups();
	struct jf_cg *cg = make(0, "lim", 32 << 20, 250);
	char path[JF_CG_PATH + 32];
	if (cg->version == 1) {
		assert_file(cg->mem, "memory.limit_in_bytes", "33554432");
		snprintf(path, sizeof(path), "%s/memory.memsw.limit_in_bytes", cg->mem);
		if (jft_exists(path))
			assert_file(cg->mem, "memory.memsw.limit_in_bytes", "33554432");
		assert_file(cg->cpu, "cpu.cfs_period_us", "100000");
		assert_file(cg->cpu, "cpu.cfs_quota_us", "25000");
		assert_true(cg->procs_cpu[0] != '\0');
	} else {
		assert_file(cg->mem, "memory.max", "33554432");
		snprintf(path, sizeof(path), "%s/memory.swap.max", cg->mem);
		if (jft_exists(path))
			assert_file(cg->mem, "memory.swap.max", "0");
		assert_file(cg->mem, "cpu.max", "25000 100000");
		assert_string_equal(cg->cpu, "");
	}
	assert_non_null(strstr(cg->mem, cg->rel));
	assert_int_equal(jf_cg_oom_kills(cg), 0);
	assert_int_equal(jf_cg_cpu_usec(cg) >= -1, 1);

	/* no limits: the defaults left as they are */
	struct jf_cg *none = make(1, "nolim", 0, 0);
	if (none->version == 1) {
		assert_file(none->cpu, "cpu.cfs_quota_us", "-1");
	} else {
		assert_file(none->mem, "memory.max", "max");
		assert_file(none->mem, "cpu.max", "max 100000");
	}

	/* a pid that is not there */
	errno = 0;
	assert_int_equal(jf_cg_join(cg, 0x3fffffff), -1);
	assert_true(errno == ESRCH || errno == EINVAL);
}

static void test_left_over(void **st)
{
	(void)st;
	need_cgroups();
	/* an empty one left by an earlier run is made anew (fresh counters) */
	struct jf_cg *a = make(0, "again", 0, 0);
	char sub[JF_CG_PATH + 8];
	snprintf(sub, sizeof(sub), "%s/ctr", a->mem);
	assert_int_equal(mkdir(sub, 0755), 0);
	struct jf_cg *b = make(1, "again", 16 << 20, 0);
	assert_false(jft_exists(sub));
	memset(a, 0, sizeof(*a)); /* the same directories as b */

	/* one in use is refused, and left alone */
	pid_t pid = spawn(b, NULL, SLEEP, 0);
	char err[512] = "";
	char rel[128];
	snprintf(rel, sizeof(rel), "%s/again", base);
	assert_int_equal(jf_cg_create(&cgs[2], rel, 0, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "left over"));
	assert_int_equal(cgs[2].version, 0);
	assert_int_equal(kill(pid, 0), 0); /* still alive */
	assert_true(jft_exists(b->mem));
}

static void test_oom_counted(void **st)
{
	(void)st;
	need_cgroups();
	struct jf_cg *small = make(0, "oom", 32 << 20, 0);
	pid_t pid = spawn(small, NULL, TOUCH, 128);
	int status = reap(pid, NULL);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	assert_true(jf_cg_oom_kills(small) >= 1);

	struct jf_cg *big = make(1, "fits", 256 << 20, 0);
	pid = spawn(big, NULL, TOUCH, 16);
	status = reap(pid, NULL);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(jf_cg_oom_kills(big), 0);
}

/* The OCI case: the runtime's cgroup "ctr" below ours has no limit; the
 * OOM on ours is counted by jf_cg_oom_kills of ours. */
static void test_oom_in_child_cgroup(void **st)
{
	(void)st;
	need_cgroups();
	struct jf_cg *cg = make(0, "oci", 32 << 20, 0);
	char ctr[JF_CG_PATH + 8], procs[JF_CG_PATH + 32];
	snprintf(ctr, sizeof(ctr), "%s/ctr", cg->mem);
	assert_int_equal(mkdir(ctr, 0755), 0);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", ctr);
	pid_t pid = spawn(cg, procs, TOUCH, 128);
	int status = reap(pid, NULL);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	assert_true(jf_cg_oom_kills(cg) >= 1);

	char *own = read_in(cg->mem, cg->version == 1 ? "memory.oom_control" : "memory.events");
	char *child = read_in(ctr, cg->version == 1 ? "memory.oom_control" : "memory.events");
	assert_non_null(own);
	print_message("v%d: oom_kill %lld in the cgroup with the limit, %lld in its child\n",
		      cg->version, (long long)jf_cg_parse_kv(own, "oom_kill"),
		      child ? (long long)jf_cg_parse_kv(child, "oom_kill") : -1LL);
	free(own);
	free(child);
	/* v2 counts it in every ancestor: it outlives the child cgroup */
	assert_int_equal(rmdir(ctr), 0);
	if (cg->version == 2)
		assert_true(jf_cg_oom_kills(cg) >= 1);
}

static void test_cpu_quota(void **st)
{
	(void)st;
	need_cgroups();
	struct jf_cg *cg = make(0, "cpu200", 0, 200);
	if (jf_cg_cpu_usec(cg) < 0)
		skip(); /* no cpuacct here */
	struct rusage ru;
	pid_t pid = spawn(cg, NULL, SPIN, 1500);
	int status = reap(pid, &ru);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	int64_t used = jf_cg_cpu_usec(cg);
	int64_t ru_us = (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
			ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
	double ratio = (double)used / 1.5e6;
	print_message("quota 200m: %lld us of cpu in 1.5 s (%.3f), rusage %lld us\n",
		      (long long)used, ratio, (long long)ru_us);
	assert_true(ratio <= 0.35);
	assert_true(ratio > 0.05);
	/* what the cgroup counts is what the child used */
	assert_true(used >= ru_us * 8 / 10 - 20000);
	assert_true(used <= ru_us * 12 / 10 + 20000);

	/* no quota: more than the quota would have let it (a generous bound,
	 * for a loaded machine) */
	struct jf_cg *free_cg = make(1, "cpufree", 0, 0);
	pid = spawn(free_cg, NULL, SPIN, 500);
	status = reap(pid, &ru);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	used = jf_cg_cpu_usec(free_cg);
	ratio = (double)used / 0.5e6;
	print_message("no quota: %lld us of cpu in 0.5 s (%.3f)\n", (long long)used, ratio);
	assert_true(ratio >= 0.4);
}

static bool gone(const char *dir)
{
	struct stat sb;
	return stat(dir, &sb) < 0 && errno == ENOENT;
}

static void test_remove_kills(void **st)
{
	(void)st;
	need_cgroups();
	struct jf_cg *cg = make(0, "rm", 64 << 20, 500);
	/* a second process in a "ctr" below (an OCI runtime's), in every
	 * hierarchy */
	const char *dirs[3] = { cg->mem, cg->cpu, cg->acct };
	char sub[3][JF_CG_PATH + 8], top[3][JF_CG_PATH], parent[3][JF_CG_PATH];
	for (int i = 0; i < 3; i++) {
		sub[i][0] = top[i][0] = parent[i][0] = '\0';
		if (!dirs[i][0])
			continue;
		snprintf(sub[i], sizeof(sub[i]), "%s/ctr", dirs[i]);
		if (mkdir(sub[i], 0755) < 0)
			assert_int_equal(errno, EEXIST); /* one hierarchy for two */
		size_t root = strlen(dirs[i]) - strlen(cg->rel);
		snprintf(top[i], sizeof(top[i]), "%.*sjobfs", (int)root, dirs[i]);
		snprintf(parent[i], sizeof(parent[i]), "%.*s%s", (int)root, dirs[i], base);
	}
	/* v1: what an OCI runtime leaves in the hierarchies that are not ours
	 * (it makes rel/ctr in all, removes ctr): rel, removed too */
	char other[JF_CG_PATH + 8] = "";
	const char *cand[] = { "/sys/fs/cgroup/pids", "/sys/fs/cgroup/blkio",
			       "/sys/fs/cgroup/devices", NULL };
	for (int i = 0; cg->version == 1 && cand[i] && !other[0]; i++) {
		struct statfs sf;
		if (statfs(cand[i], &sf) < 0 || sf.f_type != CGROUP_SUPER_MAGIC ||
		    !strncmp(cg->mem, cand[i], strlen(cand[i])) ||
		    !strncmp(cg->cpu, cand[i], strlen(cand[i])) ||
		    (cg->acct[0] && !strncmp(cg->acct, cand[i], strlen(cand[i]))))
			continue;
		char d[JF_CG_PATH + 8];
		snprintf(d, sizeof(d), "%s/jobfs", cand[i]);
		if (mkdir(d, 0755) < 0 && errno != EEXIST)
			continue;
		snprintf(d, sizeof(d), "%s/%s", cand[i], base);
		if (mkdir(d, 0755) < 0 && errno != EEXIST)
			continue;
		snprintf(other, sizeof(other), "%s/%s", cand[i], cg->rel);
		assert_int_equal(mkdir(other, 0755), 0);
	}
	char procs[JF_CG_PATH + 32];
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", sub[0]);
	pid_t a = spawn(cg, NULL, SLEEP, 0);
	pid_t b = spawn(cg, procs, SLEEP, 0);

	jf_cg_remove(cg);
	assert_int_equal(cg->version, 0);
	int status = reap(a, NULL);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	status = reap(b, NULL);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	for (int i = 0; i < 3; i++) {
		if (!dirs[i][0])
			continue;
		assert_true(gone(sub[i]));
		assert_true(gone(dirs[i]));
		assert_true(gone(parent[i]));    /* jobfs/test-PID: empty, removed */
		assert_true(jft_exists(top[i])); /* jobfs: kept */
	}
	if (other[0]) {
		assert_true(gone(other));
		char d[JF_CG_PATH + 8];
		snprintf(d, sizeof(d), "%.*s", (int)(strlen(other) - strlen(cg->rel)), other);
		size_t dl = strlen(d);
		snprintf(d + dl, sizeof(d) - dl, "%s", base);
		assert_true(gone(d));
	} else {
		print_message("no other v1 hierarchy to leave a directory in\n");
	}
	jf_cg_remove(cg); /* again: nothing */
}

static void test_join_vfork(void **st)
{
	(void)st;
	need_cgroups();
	struct jf_cg *cg = make(0, "vf", 64 << 20, 0);
	pid_t pid = vfork();
	if (pid == 0) {
		if (jf_cg_join(cg, 0) < 0)
			_exit(100);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	track(pid);
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
	char *text = jft_read_file(p);
	assert_non_null(text);
	/* every hierarchy we joined names the cgroup */
	char want[300];
	snprintf(want, sizeof(want), ":/%s", cg->rel);
	int n = 0;
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		size_t ll = strlen(l), wl = strlen(want);
		if (ll >= wl && !strcmp(l + ll - wl, want))
			n++;
	}
	free(text);
	int expect = 1;
	if (cg->version == 1) {
		expect += strcmp(cg->cpu, cg->mem) != 0;
		expect += cg->acct[0] && strcmp(cg->acct, cg->cpu) && strcmp(cg->acct, cg->mem);
	}
	assert_int_equal(n, expect);
	char *procs = jft_read_file(cg->procs_mem);
	assert_non_null(procs);
	char pidl[32];
	snprintf(pidl, sizeof(pidl), "%d\n", (int)pid);
	assert_non_null(strstr(procs, pidl));
	free(procs);
	kill(pid, SIGKILL);
	int status = reap(pid, NULL);
	assert_true(WIFSIGNALED(status));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_kv),
		cmocka_unit_test(test_has_word),
		cmocka_unit_test(test_mountinfo),
		cmocka_unit_test(test_mountinfo_fd),
		cmocka_unit_test(test_bad_names),
		cmocka_unit_test_setup_teardown(test_limits_written, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_left_over, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_oom_counted, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_oom_in_child_cgroup, root_setup,
						root_teardown),
		cmocka_unit_test_setup_teardown(test_cpu_quota, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_remove_kills, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_join_vfork, root_setup, root_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
