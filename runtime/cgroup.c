/*
 * cgroup.c - one cgroup per container, v1 or v2 (cgroup.h).
 *
 * Only system calls and fixed buffers (the shim is static and calls
 * jf_cg_join in a vfork child): files are read and written with
 * open/read/write/close, directories walked with getdents64, and
 * mountinfo is read a line at a time into a buffer on the stack.
 *
 * Where the kernel counts an OOM kill (found on this project's test hosts,
 * kernel 6.18, and in mm/memcontrol): v2's memory.events is hierarchical
 * (a kill anywhere below counts in every ancestor, at the time of the
 * kill), but v1's memory.oom_control counts only in the memcg of the
 * process killed, even when the limit hit was an ancestor's.  So on v1
 * jf_cg_oom_kills adds up the cgroup and everything below it, and a kill
 * in a child cgroup that is gone by then (an OCI runtime's, which `crun
 * run` removes as the container exits) is not seen.  cpu time (cpuacct,
 * v2's cpu.stat) is charged to every ancestor as it is used: it outlives
 * the runtime's cgroup on both.
 *
 * An OCI runtime given "/REL/ctr" on v1 makes it in every hierarchy
 * mounted (pids, devices, freezer, ...) and removes only ctr:
 * jf_cg_remove removes REL and its empty parents there too.
 */
#include "runtime/cgroup.h"
#include "runtime/cgroup_parse.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define JF_CG_TOP_MSG "cgroups are not writable here: memory and cpu limits cannot be enforced"
#define WALK_DEPTH    12 /* how deep jf_cg_remove and the v1 OOM sum go below a cgroup */

/* ---- the pure parsers (cgroup_parse.h) ---- */

int64_t jf_cg_parse_kv(const char *text, const char *key)
{
	size_t kl = strlen(key);
	if (!text || !kl)
		return -1;
	for (const char *l = text; *l;) {
		if (!strncmp(l, key, kl) && l[kl] == ' ') {
			const char *p = l + kl;
			while (*p == ' ')
				p++;
			if (*p < '0' || *p > '9')
				return -1;
			int64_t v = 0;
			for (; *p >= '0' && *p <= '9'; p++) {
				if (v > (INT64_MAX - (*p - '0')) / 10)
					return -1;
				v = v * 10 + (*p - '0');
			}
			if (*p && *p != '\n' && *p != ' ')
				return -1;
			return v;
		}
		const char *nl = strchr(l, '\n');
		if (!nl)
			break;
		l = nl + 1;
	}
	return -1;
}

bool jf_cg_has_word(const char *list, const char *word)
{
	size_t wl = strlen(word);
	if (!list || !wl)
		return false;
	for (const char *p = list; *p;) {
		while (*p == ' ' || *p == '\n' || *p == '\t')
			p++;
		const char *e = p;
		while (*e && *e != ' ' && *e != '\n' && *e != '\t')
			e++;
		if ((size_t)(e - p) == wl && !strncmp(p, word, wl))
			return true;
		p = e;
	}
	return false;
}

/* Whether the comma-separated list has word */
static bool has_opt(const char *list, const char *word)
{
	size_t wl = strlen(word);
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == wl && !strncmp(p, word, wl))
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

/* mountinfo's octal escapes (\040 a space, \011, \012, \134) undone in place */
static void unescape(char *s)
{
	char *o = s;
	for (char *p = s; *p;) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 4;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
}

static void set_root(char *dst, bool *ro, const char *mnt, bool is_ro)
{
	size_t l = strlen(mnt);
	if (dst[0] || l == 0 || l >= JF_CG_PATH)
		return;
	memcpy(dst, mnt, l + 1);
	*ro = is_ro;
}

void jf_cg_roots_init(struct jf_cg_roots *r)
{
	memset(r, 0, sizeof(*r));
}

struct mount {
	char *mnt; /* unescaped */
	const char *fstype, *super;
	bool ro;
};

/* One line of mountinfo split in place: false when it is not one */
static bool split_mount(char *line, struct mount *m)
{
	char *f[64];
	int n = 0;
	for (char *p = line; *p && n < 64;) {
		while (*p == ' ' || *p == '\n')
			*p++ = '\0';
		if (!*p)
			break;
		f[n++] = p;
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
	int sep = -1;
	for (int i = 6; i < n; i++)
		if (!strcmp(f[i], "-")) {
			sep = i;
			break;
		}
	if (sep < 0 || sep + 1 >= n)
		return false;
	m->mnt = f[4];
	m->fstype = f[sep + 1];
	m->super = sep + 3 < n ? f[sep + 3] : "";
	m->ro = has_opt(f[5], "ro") || has_opt(m->super, "ro");
	unescape(m->mnt);
	return true;
}

void jf_cg_roots_line(struct jf_cg_roots *r, char *line)
{
	struct mount m;
	if (!split_mount(line, &m))
		return;
	if (!strcmp(m.fstype, "cgroup")) {
		if (has_opt(m.super, "memory"))
			set_root(r->mem, &r->mem_ro, m.mnt, m.ro);
		if (has_opt(m.super, "cpu"))
			set_root(r->cpu, &r->cpu_ro, m.mnt, m.ro);
		if (has_opt(m.super, "cpuacct"))
			set_root(r->acct, &r->acct_ro, m.mnt, m.ro);
	} else if (!strcmp(m.fstype, "cgroup2")) {
		if (!strcmp(m.mnt, "/sys/fs/cgroup/unified"))
			r->hybrid = true;
		if (!strcmp(m.mnt, "/sys/fs/cgroup"))
			r->v2[0] = '\0'; /* preferred to any other */
		set_root(r->v2, &r->v2_ro, m.mnt, m.ro);
	}
}

int jf_cg_roots_finish(struct jf_cg_roots *r)
{
	r->version = r->mem[0] ? 1 : r->v2[0] ? 2 : 0;
	r->hybrid = r->hybrid && r->version == 1;
	return r->version;
}

int jf_cg_parse_mountinfo(const char *text, struct jf_cg_roots *r)
{
	char line[4096];
	jf_cg_roots_init(r);
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		if (len < sizeof(line)) {
			memcpy(line, l, len);
			line[len] = '\0';
			jf_cg_roots_line(r, line);
		}
		l = nl ? nl + 1 : l + len;
	}
	return jf_cg_roots_finish(r);
}

/* ---- files ---- */

/* The whole of a small file, NUL-terminated; its length or -1 (errno) */
static ssize_t read_text(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off + 1 < n) {
		ssize_t r = read(fd, buf + off, n - 1 - off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
		off += (size_t)r;
	}
	buf[off] = '\0';
	close(fd);
	return (ssize_t)off;
}

/* Write s to path in one write(2), as cgroup files want; 0 or -1 (errno).
 * Async-signal-safe. */
static int write_text(const char *path, const char *s, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w;
	do
		w = write(fd, s, len);
	while (w < 0 && errno == EINTR);
	int e = errno;
	close(fd);
	if (w < 0) {
		errno = e;
		return -1;
	}
	if ((size_t)w != len) {
		errno = EIO;
		return -1;
	}
	return 0;
}

static int put(const char *path, const char *s)
{
	return write_text(path, s, strlen(s));
}

static int join_path(char *buf, size_t n, const char *dir, const char *name)
{
	int l = snprintf(buf, n, "%s/%s", dir, name);
	if (l < 0 || (size_t)l >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* Read DIR/NAME; -1 (errno) */
static ssize_t read_in(const char *dir, const char *name, char *buf, size_t n)
{
	char p[JF_CG_PATH + 64];
	if (join_path(p, sizeof(p), dir, name) < 0)
		return -1;
	return read_text(p, buf, n);
}

static int64_t kv_in(const char *dir, const char *name, const char *key)
{
	char buf[2048];
	if (!dir[0] || read_in(dir, name, buf, sizeof(buf)) < 0)
		return -1;
	return jf_cg_parse_kv(buf, key);
}

/* Calls fn on each subdirectory of dir; stops at fn's first non-zero,
 * which it returns; -1 (errno) when dir cannot be read. */
static int each_subdir(const char *dir, int (*fn)(const char *sub, void *arg, int depth), void *arg,
		       int depth)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[2048] __attribute__((aligned(8)));
	int ret = 0;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (n <= 0) {
			if (n < 0)
				ret = -1;
			break;
		}
		for (long off = 0; off < n;) {
			/* struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name */
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			unsigned char type = (unsigned char)buf[off + 18];
			const char *name = buf + off + 19;
			off += reclen;
			if (type != DT_DIR || !strcmp(name, ".") || !strcmp(name, ".."))
				continue;
			char sub[JF_CG_PATH];
			if (join_path(sub, sizeof(sub), dir, name) < 0)
				continue;
			ret = fn(sub, arg, depth + 1);
			if (ret)
				goto out;
		}
	}
out:;
	int e = errno;
	close(fd);
	errno = e;
	return ret;
}

/* ---- detection ---- */

/* fn on each line of fd, read into a buffer of 4 KiB (longer lines are
 * skipped) */
static void read_lines(int fd, void (*fn)(char *line, void *arg), void *arg)
{
	char buf[4096];
	size_t have = 0;
	bool skipping = false; /* inside a line too long for buf */
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (have && !skipping) {
				buf[have] = '\0';
				fn(buf, arg);
			}
			break;
		}
		have += (size_t)n;
		size_t start = 0;
		for (size_t i = 0; i < have; i++) {
			if (buf[i] != '\n')
				continue;
			buf[i] = '\0';
			if (!skipping)
				fn(buf + start, arg);
			skipping = false;
			start = i + 1;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == sizeof(buf) - 1) {
			skipping = true;
			have = 0;
		}
	}
}

static void roots_line(char *line, void *arg)
{
	jf_cg_roots_line(arg, line);
}

int jf_cg_read_mountinfo(int fd, struct jf_cg_roots *r)
{
	jf_cg_roots_init(r);
	read_lines(fd, roots_line, r);
	return jf_cg_roots_finish(r);
}

static void read_mountinfo(struct jf_cg_roots *r)
{
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		jf_cg_roots_init(r);
		jf_cg_roots_finish(r);
		return;
	}
	jf_cg_read_mountinfo(fd, r);
	close(fd);
}

static bool writable(const char *dir, bool ro)
{
	return dir[0] && !ro && access(dir, W_OK) == 0;
}

/* The roots, and whether cgroups can be made there */
static int detect(struct jf_cg_roots *r)
{
	read_mountinfo(r);
	if (r->version == 1)
		return writable(r->mem, r->mem_ro) && writable(r->cpu, r->cpu_ro) ? 1 : 0;
	if (r->version == 2) {
		char ctl[512];
		if (!writable(r->v2, r->v2_ro) ||
		    read_in(r->v2, "cgroup.controllers", ctl, sizeof(ctl)) < 0 ||
		    !jf_cg_has_word(ctl, "memory"))
			return 0;
		return 2;
	}
	return 0;
}

int jf_cg_detect(bool *hybrid)
{
	struct jf_cg_roots r;
	int v = detect(&r);
	if (hybrid)
		*hybrid = r.hybrid;
	return v;
}

/* ---- making one ---- */

static int fail(char *err, size_t errlen, const char *what, const char *path, int e)
{
	if (err && errlen)
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(e));
	return -1;
}

/* rel: relative, no empty, "." or ".." component */
static bool rel_ok(const char *rel)
{
	if (!rel || !rel[0] || rel[0] == '/' || strlen(rel) >= sizeof(((struct jf_cg *)0)->rel))
		return false;
	for (const char *p = rel; *p;) {
		const char *e = strchr(p, '/');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == 0 || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!e)
			break;
		p = e + 1;
		if (!*p)
			return false;
	}
	return true;
}

/* Remove dir and the cgroups below it, deepest first, killing nothing:
 * 0, or -1 (errno) when one is still in use. */
static int rmdir_tree(const char *dir, void *arg, int depth)
{
	(void)arg;
	if (depth < WALK_DEPTH) {
		/* each pass removes the first subdirectory it meets, so that the
		 * directory is not changed under an open walk */
		for (int i = 0; i < 4096; i++) {
			int r = each_subdir(dir, rmdir_tree, NULL, depth);
			if (r != 1)
				break;
		}
	}
	if (rmdir(dir) < 0 && errno != ENOENT)
		return -1;
	return depth > 0 ? 1 : 0; /* 1: walk again (one removed) */
}

static int rmdir_below(const char *dir)
{
	int r = rmdir_tree(dir, NULL, 0);
	return r < 0 ? -1 : 0;
}

/* mkdir ROOT/REL and its parents; the leaf made anew (an empty one left
 * over is removed first).  -1 with err. */
static int make_dirs(const char *root, const char *rel, bool v1mem, char *out, size_t outn,
		     char *err, size_t errlen)
{
	if (join_path(out, outn, root, rel) < 0) {
		out[0] = '\0';
		return fail(err, errlen, "cannot make cgroup", rel, ENAMETOOLONG);
	}
	size_t rl = strlen(root);
	for (char *p = out + rl + 1;; p++) {
		bool leaf = !*p;
		if (*p != '/' && !leaf)
			continue;
		char c = *p;
		*p = '\0';
		int r = mkdir(out, 0755);
		if (r < 0 && errno == EEXIST && leaf) {
			/* left over by an earlier run: its counters must not be ours */
			if (rmdir_below(out) < 0) {
				int e = errno;
				fail(err, errlen, "cannot remove the cgroup left over at", out, e);
				out[0] = '\0'; /* in use, not ours: jf_cg_remove leaves it */
				return -1;
			}
			r = mkdir(out, 0755);
		}
		if (r < 0 && !(errno == EEXIST && !leaf)) {
			int e = errno;
			fail(err, errlen, "cannot make cgroup", out, e);
			out[0] = '\0'; /* not ours: jf_cg_remove leaves it */
			return -1;
		}
		if (r == 0 && v1mem) {
			/* hierarchical accounting, where the kernel still lets it be
			 * chosen (before 6.x); harmless where it is always on */
			char p2[JF_CG_PATH + 64];
			if (join_path(p2, sizeof(p2), out, "memory.use_hierarchy") == 0)
				(void)put(p2, "1");
		}
		*p = c;
		if (leaf)
			return 0;
	}
}

/* v2: enable the memory (and cpu) controllers for dir's children */
static int enable_v2(const char *dir, bool need_cpu, char *err, size_t errlen)
{
	char p[JF_CG_PATH + 64], cur[512];
	if (join_path(p, sizeof(p), dir, "cgroup.subtree_control") < 0)
		return fail(err, errlen, "cannot write", dir, ENAMETOOLONG);
	if (read_text(p, cur, sizeof(cur)) < 0)
		return fail(err, errlen, "cannot read", p, errno);
	if (!jf_cg_has_word(cur, "memory") && put(p, "+memory") < 0)
		return fail(err, errlen, "cannot enable the memory controller in", p, errno);
	if (!jf_cg_has_word(cur, "cpu") && put(p, "+cpu") < 0 && need_cpu)
		return fail(err, errlen, "cannot enable the cpu controller in", p, errno);
	return 0;
}

static int write_in(const char *dir, const char *name, const char *val, bool optional, char *err,
		    size_t errlen)
{
	char p[JF_CG_PATH + 64];
	if (join_path(p, sizeof(p), dir, name) < 0)
		return fail(err, errlen, "cannot write", dir, ENAMETOOLONG);
	if (put(p, val) == 0)
		return 0;
	if (optional && errno == ENOENT)
		return 0;
	int e = errno;
	char what[96];
	snprintf(what, sizeof(what), "cannot write %.40s to", val);
	return fail(err, errlen, what, p, e);
}

static int create_v1(struct jf_cg *cg, const struct jf_cg_roots *r, int64_t mem, int64_t milli,
		     char *err, size_t errlen)
{
	if (make_dirs(r->mem, cg->rel, true, cg->mem, sizeof(cg->mem), err, errlen) < 0)
		return -1;
	if (strcmp(r->cpu, r->mem) &&
	    make_dirs(r->cpu, cg->rel, false, cg->cpu, sizeof(cg->cpu), err, errlen) < 0)
		return -1;
	if (!strcmp(r->cpu, r->mem))
		memcpy(cg->cpu, cg->mem, sizeof(cg->cpu));
	if (r->acct[0] && strcmp(r->acct, r->mem) && strcmp(r->acct, r->cpu) && !r->acct_ro &&
	    access(r->acct, W_OK) == 0 &&
	    make_dirs(r->acct, cg->rel, false, cg->acct, sizeof(cg->acct), err, errlen) < 0)
		return -1;
	if (r->acct[0] && !strcmp(r->acct, r->cpu))
		memcpy(cg->acct, cg->cpu, sizeof(cg->acct));
	else if (r->acct[0] && !strcmp(r->acct, r->mem))
		memcpy(cg->acct, cg->mem, sizeof(cg->acct));
	if (join_path(cg->procs_mem, sizeof(cg->procs_mem), cg->mem, "cgroup.procs") < 0 ||
	    join_path(cg->procs_cpu, sizeof(cg->procs_cpu), cg->cpu, "cgroup.procs") < 0 ||
	    (cg->acct[0] &&
	     join_path(cg->procs_acct, sizeof(cg->procs_acct), cg->acct, "cgroup.procs") < 0))
		return fail(err, errlen, "cannot make cgroup", cg->rel, ENAMETOOLONG);

	char v[32];
	if (mem > 0) {
		snprintf(v, sizeof(v), "%lld", (long long)mem);
		/* memsw (memory + swap) after the memory limit, which it may not
		 * be under; absent where swap is not accounted */
		if (write_in(cg->mem, "memory.limit_in_bytes", v, false, err, errlen) < 0 ||
		    write_in(cg->mem, "memory.memsw.limit_in_bytes", v, true, err, errlen) < 0)
			return -1;
	}
	if (milli > 0) {
		int64_t q = milli * 100;
		if (q < 1000)
			q = 1000; /* the kernel's least quota: 1 ms */
		snprintf(v, sizeof(v), "%lld", (long long)q);
		if (write_in(cg->cpu, "cpu.cfs_period_us", "100000", false, err, errlen) < 0 ||
		    write_in(cg->cpu, "cpu.cfs_quota_us", v, false, err, errlen) < 0)
			return -1;
	}
	return 0;
}

static int create_v2(struct jf_cg *cg, const struct jf_cg_roots *r, int64_t mem, int64_t milli,
		     char *err, size_t errlen)
{
	/* "+memory +cpu" in the subtree_control of the root and of every
	 * ancestor; the leaf itself gets none (it takes processes, or an OCI
	 * runtime's "ctr" below it, which enables what it needs) */
	char dir[JF_CG_PATH];
	if (join_path(dir, sizeof(dir), r->v2, cg->rel) < 0)
		return fail(err, errlen, "cannot make cgroup", cg->rel, ENAMETOOLONG);
	size_t rl = strlen(r->v2);
	dir[rl] = '\0';
	if (enable_v2(dir, milli > 0, err, errlen) < 0)
		return -1;
	dir[rl] = '/';
	for (char *p = dir + rl + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return fail(err, errlen, "cannot make cgroup", dir, errno);
		if (enable_v2(dir, milli > 0, err, errlen) < 0)
			return -1;
		*p = '/';
	}
	if (make_dirs(r->v2, cg->rel, false, cg->mem, sizeof(cg->mem), err, errlen) < 0)
		return -1;
	if (join_path(cg->procs_mem, sizeof(cg->procs_mem), cg->mem, "cgroup.procs") < 0)
		return fail(err, errlen, "cannot make cgroup", cg->rel, ENAMETOOLONG);

	char v[48];
	if (mem > 0) {
		snprintf(v, sizeof(v), "%lld", (long long)mem);
		if (write_in(cg->mem, "memory.max", v, false, err, errlen) < 0 ||
		    write_in(cg->mem, "memory.swap.max", "0", true, err, errlen) < 0)
			return -1;
	}
	if (milli > 0) {
		int64_t q = milli * 100;
		if (q < 1000)
			q = 1000;
		snprintf(v, sizeof(v), "%lld 100000", (long long)q);
		if (write_in(cg->mem, "cpu.max", v, false, err, errlen) < 0)
			return -1;
	}
	return 0;
}

int jf_cg_create(struct jf_cg *cg, const char *rel, int64_t mem_bytes, int64_t cpu_milli, char *err,
		 size_t errlen)
{
	memset(cg, 0, sizeof(*cg));
	if (err && errlen)
		err[0] = '\0';
	if (!rel_ok(rel)) {
		if (err && errlen)
			snprintf(err, errlen, "bad cgroup name \"%.200s\"", rel ? rel : "(null)");
		return -1;
	}
	if (mem_bytes < 0 || cpu_milli < 0 || cpu_milli > INT64_MAX / 1000) {
		if (err && errlen)
			snprintf(err, errlen, "bad cgroup limits for %s", rel);
		return -1;
	}
	struct jf_cg_roots r;
	int v = detect(&r);
	if (!v) {
		if (err && errlen)
			snprintf(err, errlen, "%s", JF_CG_TOP_MSG);
		return -1;
	}
	memcpy(cg->rel, rel, strlen(rel) + 1);
	/* version set first: jf_cg_remove then undoes a half-made one */
	cg->version = v;
	int rc = v == 1 ? create_v1(cg, &r, mem_bytes, cpu_milli, err, errlen)
			: create_v2(cg, &r, mem_bytes, cpu_milli, err, errlen);
	if (rc < 0) {
		jf_cg_remove(cg);
		return -1;
	}
	return 0;
}

/* ---- joining: async-signal-safe ---- */

int jf_cg_join(const struct jf_cg *cg, pid_t pid)
{
	if (!cg || !cg->version || !cg->procs_mem[0] || pid < 0) {
		errno = EINVAL;
		return -1;
	}
	char num[24];
	int n = 0;
	char tmp[24];
	unsigned long u = pid > 0 ? (unsigned long)pid : 0;
	do
		tmp[n++] = (char)('0' + u % 10);
	while ((u /= 10) && n < (int)sizeof(tmp));
	for (int i = 0; i < n; i++)
		num[i] = tmp[n - 1 - i];
	const char *files[3] = { cg->procs_mem, cg->procs_cpu, cg->procs_acct };
	for (int i = 0; i < 3; i++) {
		if (!files[i][0])
			continue;
		bool dup = false;
		for (int j = 0; j < i; j++)
			dup = dup || !strcmp(files[i], files[j]);
		if (!dup && write_text(files[i], num, (size_t)n) < 0)
			return -1;
	}
	return 0;
}

/* ---- reading back ---- */

static int sum_oom(const char *dir, void *arg, int depth)
{
	int64_t *sum = arg;
	char buf[512];
	if (read_in(dir, "memory.oom_control", buf, sizeof(buf)) < 0) {
		if (depth > 0 && errno == ENOENT)
			return 0; /* removed since the walk saw it */
		*sum = -1;
		return -1;
	}
	int64_t v = jf_cg_parse_kv(buf, "oom_kill");
	if (v < 0) {
		*sum = -1; /* before 4.13: no counter */
		return -1;
	}
	*sum += v;
	if (depth < WALK_DEPTH)
		(void)each_subdir(dir, sum_oom, sum, depth);
	return *sum < 0 ? -1 : 0;
}

int64_t jf_cg_oom_kills(const struct jf_cg *cg)
{
	if (!cg || !cg->version)
		return -1;
	if (cg->version == 2)
		return kv_in(cg->mem, "memory.events", "oom_kill");
	/* v1: counted in the memcg of the process killed only */
	int64_t sum = 0;
	return sum_oom(cg->mem, &sum, 0) < 0 ? -1 : sum;
}

int64_t jf_cg_cpu_usec(const struct jf_cg *cg)
{
	if (!cg || !cg->version)
		return -1;
	if (cg->version == 2)
		return kv_in(cg->mem, "cpu.stat", "usage_usec");
	if (!cg->acct[0])
		return -1;
	char buf[64];
	if (read_in(cg->acct, "cpuacct.usage", buf, sizeof(buf)) < 0)
		return -1;
	int64_t ns = 0;
	const char *p = buf;
	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (ns > (INT64_MAX - 9) / 10)
			return -1;
		ns = ns * 10 + (*p - '0');
	}
	return ns / 1000;
}

void jf_cg_runtime_path(const struct jf_cg *cg, char *buf, size_t n)
{
	if (!n)
		return;
	int l = snprintf(buf, n, "/%s/ctr", cg->rel);
	if (l < 0 || (size_t)l >= n)
		buf[0] = '\0';
}

/* ---- removing ---- */

/* SIGKILL each process of DIR/cgroup.procs (not this one); 1 when there
 * was one, 0 none.  The file is read in pieces: no pid list is kept. */
static int kill_procs(const char *dir)
{
	char p[JF_CG_PATH + 64];
	if (join_path(p, sizeof(p), dir, "cgroup.procs") < 0)
		return 0;
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	pid_t self = getpid();
	int found = 0;
	char buf[512];
	long cur = -1;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				cur = (cur < 0 ? 0 : cur * 10) + (buf[i] - '0');
				continue;
			}
			if (cur > 0 && cur != self) {
				kill((pid_t)cur, SIGKILL);
				found = 1;
			}
			cur = -1;
		}
	}
	if (cur > 0 && cur != self) {
		kill((pid_t)cur, SIGKILL);
		found = 1;
	}
	close(fd);
	return found;
}

static int kill_tree(const char *dir, void *arg, int depth)
{
	int *found = arg;
	if (kill_procs(dir))
		*found = 1;
	if (depth < WALK_DEPTH)
		(void)each_subdir(dir, kill_tree, arg, depth);
	return 0;
}

/* Whether anything is left in dir (v2: cgroup.events says so for the
 * whole subtree) after one round of killing */
static bool kill_round(const struct jf_cg *cg, const char *dir)
{
	if (cg->version == 2) {
		char p[JF_CG_PATH + 64];
		if (join_path(p, sizeof(p), dir, "cgroup.kill") == 0 && put(p, "1") == 0)
			return kv_in(dir, "cgroup.events", "populated") > 0;
	}
	int found = 0;
	kill_tree(dir, &found, 0);
	return found;
}

/* rmdir the parents of dir (ROOT/REL) while they are empty, up to and
 * keeping ROOT/ and the first component of rel ("jobfs") */
static void remove_parents(const char *dir, const char *rel)
{
	char p[JF_CG_PATH];
	size_t dl = strlen(dir), rl = strlen(rel);
	if (dl >= sizeof(p) || rl > dl || strcmp(dir + dl - rl, rel))
		return;
	memcpy(p, dir, dl + 1);
	size_t root = dl - rl; /* p[root..] is rel */
	for (;;) {
		char *slash = strrchr(p + root, '/');
		if (!slash)
			break;
		*slash = '\0';
		if (!strchr(p + root, '/'))
			break; /* p is ROOT/jobfs: kept */
		if (rmdir(p) < 0)
			break;
	}
}

/* v1: ROOT/rel in a hierarchy other than ours (its mountinfo line), and
 * its parents, removed where empty */
static void other_line(char *line, void *arg)
{
	const struct jf_cg *cg = arg;
	struct mount m;
	if (!split_mount(line, &m) || (strcmp(m.fstype, "cgroup") && strcmp(m.fstype, "cgroup2")))
		return;
	char dir[JF_CG_PATH];
	if (join_path(dir, sizeof(dir), m.mnt, cg->rel) < 0 || !strcmp(dir, cg->mem) ||
	    !strcmp(dir, cg->cpu) || !strcmp(dir, cg->acct) || access(dir, F_OK) < 0)
		return;
	if (rmdir_below(dir) == 0)
		remove_parents(dir, cg->rel);
}

void jf_cg_remove(struct jf_cg *cg)
{
	if (!cg || !cg->version)
		return;
	const char *dirs[3] = { cg->mem, cg->cpu, cg->acct };
	bool skip[3];
	for (int i = 0; i < 3; i++) {
		skip[i] = !dirs[i][0];
		for (int j = 0; j < i; j++)
			skip[i] = skip[i] || !strcmp(dirs[i], dirs[j]);
	}
	/* kill, and again every 10 ms while anything is left (a process can
	 * fork between the reading of cgroup.procs and its kill): ~1 s */
	bool left = false;
	for (int round = 0; round < 100; round++) {
		left = false;
		for (int i = 0; i < 3; i++)
			if (!skip[i] && kill_round(cg, dirs[i]))
				left = true;
		if (!left)
			break;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < 3; i++) {
		if (skip[i])
			continue;
		/* rmdir fails (EBUSY) while a process dies: a few tries,
		 * unless one would not die */
		for (int t = 0; t < (left ? 1 : 10); t++) {
			if (rmdir_below(dirs[i]) == 0 || errno != EBUSY)
				break;
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		remove_parents(dirs[i], cg->rel);
	}
	if (cg->version == 1) {
		/* an OCI runtime makes "rel/ctr" in every hierarchy, and removes
		 * only ctr */
		int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			read_lines(fd, other_line, cg);
			close(fd);
		}
	}
	cg->version = 0;
}
