/*
 * mountrec.c - the record of a daemon's mount, and clearing a dead one
 * (mountrec.h).
 *
 * Nothing here touches the mount point's own inode while it may belong to
 * a connection nobody serves: mountinfo names the mount and its device,
 * /proc/PID/stat tells whether the recorded daemon lives, fusectl aborts
 * the connection and umount2(MNT_DETACH) (or fusermount3 -u -z, which does
 * the same without asking the filesystem anything) detaches it.  The one
 * stat() of a mount that no record explains runs in a child with a
 * deadline.
 */
#include "fs/mountrec.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FUSECTL       "/sys/fs/fuse/connections"
#define MOUNTINFO_CAP (8 * 1024 * 1024)
#define PROBE_MS      2000

/* ---- pure parts ---- */

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static void unescape(const char *in, size_t len, char *out, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 1 < n; i++) {
		if (in[i] == '\\' && i + 3 < len && in[i + 1] >= '0' && in[i + 1] <= '3' &&
		    in[i + 2] >= '0' && in[i + 2] <= '7' && in[i + 3] >= '0' && in[i + 3] <= '7') {
			out[o++] = (char)((in[i + 1] - '0') * 64 + (in[i + 2] - '0') * 8 +
					  (in[i + 3] - '0'));
			i += 3;
		} else {
			out[o++] = in[i];
		}
	}
	out[o] = '\0';
}

/* The next space-separated field of [*p, end): its start and length. */
static bool field(const char **p, const char *end, const char **f, size_t *len)
{
	const char *s = *p;
	while (s < end && *s == ' ')
		s++;
	if (s >= end)
		return false;
	const char *e = s;
	while (e < end && *e != ' ')
		e++;
	*f = s;
	*len = (size_t)(e - s);
	*p = e;
	return true;
}

static bool parse_line(const char *line, const char *end, const char *mnt, struct jf_mountinfo *out)
{
	const char *p = line, *f;
	size_t len;
	char dev[32], mp[4096];
	/* id parent major:minor root mountpoint options [optional...] - fstype source super */
	for (int i = 0; i < 5; i++) {
		if (!field(&p, end, &f, &len))
			return false;
		if (i == 2) {
			if (len >= sizeof(dev))
				return false;
			memcpy(dev, f, len);
			dev[len] = '\0';
		}
		if (i == 4)
			unescape(f, len, mp, sizeof(mp));
	}
	if (strcmp(mp, mnt) != 0)
		return false;
	for (;;) {
		if (!field(&p, end, &f, &len))
			return false;
		if (len == 1 && f[0] == '-')
			break;
	}
	char fstype[64] = "", source[64] = "";
	if (field(&p, end, &f, &len))
		unescape(f, len, fstype, sizeof(fstype));
	if (field(&p, end, &f, &len))
		unescape(f, len, source, sizeof(source));
	unsigned major, minor;
	char extra;
	if (sscanf(dev, "%u:%u%c", &major, &minor, &extra) != 2)
		return false;
	/* fusectl names a connection by the kernel's dev_t: major << 20 | minor */
	out->conn = major << 20 | minor;
	snprintf(out->fstype, sizeof(out->fstype), "%s", fstype);
	snprintf(out->source, sizeof(out->source), "%s", source);
	return true;
}

bool jf_mountinfo_find(const char *text, const char *mnt, struct jf_mountinfo *out)
{
	bool found = false;
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		const char *stop = end ? end : line + strlen(line);
		struct jf_mountinfo mi;
		/* later lines are mounted on top of earlier ones: the last wins */
		if (parse_line(line, stop, mnt, &mi)) {
			*out = mi;
			found = true;
		}
		line = end ? end + 1 : NULL;
	}
	return found;
}

bool jf_proc_stat_parse(const char *text, char *state, unsigned long long *start)
{
	/* pid (comm) state ppid ... ; comm may hold spaces and parentheses */
	const char *p = strrchr(text, ')');
	if (!p || p[1] != ' ' || !p[2])
		return false;
	*state = p[2];
	p += 3;
	/* fields 4 .. 21, then 22: starttime */
	for (int i = 4; i <= 22; i++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return false;
		if (i == 22) {
			char *e;
			errno = 0;
			*start = strtoull(p, &e, 10);
			return e != p && errno == 0 && (*e == ' ' || *e == '\n' || !*e);
		}
		while (*p && *p != ' ')
			p++;
	}
	return false;
}

bool jf_mountrec_parse(const char *text, struct jf_mountrec *out)
{
	memset(out, 0, sizeof(*out));
	int have = 0;
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[4200];
		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			char *e;
			if (!strncmp(buf, "pid ", 4)) {
				out->pid = strtol(buf + 4, &e, 10);
				have |= (*e == '\0' && out->pid > 0) << 0;
			} else if (!strncmp(buf, "start ", 6)) {
				out->start = strtoull(buf + 6, &e, 10);
				have |= (*e == '\0') << 1;
			} else if (!strncmp(buf, "connection ", 11)) {
				unsigned long c = strtoul(buf + 11, &e, 10);
				out->conn = (unsigned)c;
				have |= (*e == '\0' && c > 0 && c <= 0xffffffffUL) << 2;
			} else if (!strncmp(buf, "mountpoint ", 11) && buf[11] == '/' &&
				   len - 11 < sizeof(out->mnt)) {
				memcpy(out->mnt, buf + 11, len - 11 + 1);
				have |= 1 << 3;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return have == 0xf;
}

/* ---- the system ---- */

static char *slurp(const char *path, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t len = 0, size = 4096;
	char *buf = malloc(size);
	while (buf) {
		if (len + 1 >= size) {
			if (size >= cap)
				break;
			char *nb = realloc(buf, size * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			size *= 2;
		}
		ssize_t r = read(fd, buf + len, size - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (buf)
		buf[len] = '\0';
	return buf;
}

int jf_mount_abspath(const char *mnt, char *out, size_t n)
{
	char copy[PATH_MAX];
	size_t l = strlen(mnt);
	if (l == 0 || l >= sizeof(copy)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(copy, mnt, l + 1);
	while (l > 1 && copy[l - 1] == '/')
		copy[--l] = '\0';
	char *slash = strrchr(copy, '/');
	const char *name = slash ? slash + 1 : copy;
	char parent[PATH_MAX];
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == copy)
		snprintf(parent, sizeof(parent), "/");
	else
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - copy), copy);
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		/* "/", ".", "..": nothing to keep apart from its parent */
		if (!realpath(copy, out))
			return -1;
		return 0;
	}
	char real[PATH_MAX];
	if (!realpath(parent, real))
		return -1;
	int w = snprintf(out, n, "%s%s%s", real, strcmp(real, "/") ? "/" : "", name);
	if (w < 0 || (size_t)w >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static bool proc_start(long pid, char *state, unsigned long long *start)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	char *text = slurp(path, 4096);
	bool ok = text && jf_proc_stat_parse(text, state, start);
	free(text);
	return ok;
}

int jf_mountrec_write(const char *state, const char *mnt)
{
	char *info = slurp("/proc/self/mountinfo", MOUNTINFO_CAP);
	struct jf_mountinfo mi;
	bool found = info && jf_mountinfo_find(info, mnt, &mi);
	free(info);
	char st;
	unsigned long long start;
	if (!found || !proc_start((long)getpid(), &st, &start))
		return -1;
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	snprintf(path, sizeof(path), "%s/%s", state, JF_MOUNTREC_NAME);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -1;
	fprintf(f, "pid %ld\nstart %llu\nconnection %u\nmountpoint %s\n", (long)getpid(), start,
		mi.conn, mnt);
	bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

void jf_mountrec_remove(const char *state)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", state, JF_MOUNTREC_NAME);
	unlink(path);
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Detach the mount at mnt without asking its filesystem anything. */
static int detach(const char *mnt)
{
	if (geteuid() == 0)
		return umount2(mnt, MNT_DETACH | UMOUNT_NOFOLLOW);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp("fusermount3", "fusermount3", "-u", "-z", "-q", mnt, (char *)NULL);
		_exit(127);
	}
	int ws = 0;
	if (pid < 0 || waitpid(pid, &ws, 0) < 0)
		return -1;
	return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : -1;
}

/* fusectl's directory for conn, mounting fusectl if it is not. */
static bool fusectl_dir(unsigned conn, char *dir, size_t n)
{
	struct stat sb;
	snprintf(dir, n, "%s/%u", FUSECTL, conn);
	if (stat(dir, &sb) == 0)
		return true;
	if (geteuid() == 0 && mount("fusectl", FUSECTL, "fusectl", 0, NULL) < 0 && errno != EBUSY)
		return false;
	return stat(dir, &sb) == 0;
}

static long read_long(const char *path)
{
	char *t = slurp(path, 64);
	long v = t ? strtol(t, NULL, 10) : -1;
	free(t);
	return v;
}

/* Abort conn through fusectl: 0, or -1 with why in msg. */
static int abort_conn(unsigned conn, long *waiting, char *msg, size_t n)
{
	char dir[128], path[160];
	*waiting = -1;
	if (!fusectl_dir(conn, dir, sizeof(dir))) {
		snprintf(msg, n, "%s/%u is not there (fusectl not mounted%s)", FUSECTL, conn,
			 geteuid() ? ", and only root can mount it" : "");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/waiting", dir);
	*waiting = read_long(path);
	snprintf(path, sizeof(path), "%s/abort", dir);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1) {
		snprintf(msg, n, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static bool daemon_dead(const struct jf_mountrec *r)
{
	char st;
	unsigned long long start;
	if (r->pid == (long)getpid())
		return false;
	if (!proc_start(r->pid, &st, &start))
		return true; /* gone */
	return start != r->start || st == 'Z' || st == 'X';
}

/* stat(mnt) in a child, with a deadline: 0 answered, errno it failed with,
 * or -1 if it did not answer in time. */
static int probe(const char *mnt)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct stat sb;
		_exit(stat(mnt, &sb) == 0 ? 0 : (errno & 0xff ? errno & 0xff : 255));
	}
	if (pid < 0)
		return 0; /* cannot tell: go on as before */
	int64_t until = mono_ms() + PROBE_MS;
	for (;;) {
		int ws;
		pid_t w = waitpid(pid, &ws, WNOHANG);
		if (w == pid)
			return WIFEXITED(ws) ? WEXITSTATUS(ws) : 0;
		if (w < 0 || mono_ms() >= until)
			break;
		usleep(10 * 1000);
	}
	/* a request nobody reads ends for SIGKILL; one a stuck daemon read does not */
	kill(pid, SIGKILL);
	for (int i = 0; i < 20 && waitpid(pid, NULL, WNOHANG) == 0; i++)
		usleep(10 * 1000);
	return -1;
}

static void sayf(void (*say)(const char *), const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sayf(void (*say)(const char *), const char *fmt, ...)
{
	char line[4600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (say)
		say(line);
}

int jf_mount_clear_dead(const char *state, const char *mnt, void (*say)(const char *line),
			char *msg, size_t n)
{
	msg[0] = '\0';
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", state, JF_MOUNTREC_NAME);
	char *text = slurp(path, 16384);
	struct jf_mountrec rec;
	bool have_rec = text && jf_mountrec_parse(text, &rec);
	free(text);
	char *info = slurp("/proc/self/mountinfo", MOUNTINFO_CAP);
	struct jf_mountinfo mi;
	int done = 0;
	if (have_rec && daemon_dead(&rec) && info && jf_mountinfo_find(info, rec.mnt, &mi) &&
	    mi.conn == rec.conn && !strncmp(mi.fstype, "fuse", 4)) {
		/* ours, its daemon dead: nobody will ever answer it */
		long waiting;
		char why[512] = "";
		if (abort_conn(rec.conn, &waiting, why, sizeof(why)) < 0)
			sayf(say,
			     "mount point %s: its daemon (pid %ld) is dead; could not abort "
			     "its FUSE connection %u: %s",
			     rec.mnt, rec.pid, rec.conn, why);
		else
			sayf(say,
			     "mount point %s: its daemon (pid %ld) is dead; aborted FUSE "
			     "connection %u through %s/%u/abort (%ld requests were waiting)",
			     rec.mnt, rec.pid, rec.conn, FUSECTL, rec.conn, waiting);
		if (detach(rec.mnt) == 0)
			sayf(say, "mount point %s: detached the dead mount", rec.mnt);
		done = 1;
		free(info);
		info = slurp("/proc/self/mountinfo", MOUNTINFO_CAP);
	}
	bool at_mnt = info && jf_mountinfo_find(info, mnt, &mi) && !strncmp(mi.fstype, "fuse", 4);
	free(info);
	if (!at_mnt)
		return done;
	/* a FUSE mount no record explains: ask it, with a deadline */
	int r = probe(mnt);
	if (r == ENOTCONN || r == ECONNABORTED) {
		if (detach(mnt) == 0)
			sayf(say, "mount point %s: detached a dead mount (FUSE connection %u)", mnt,
			     mi.conn);
		return 1;
	}
	if (r == -1) {
		snprintf(msg, n,
			 "mount point %s is a FUSE mount (%s, connection %u) that does not "
			 "answer, and this state directory's record does not say its daemon is "
			 "dead; "
			 "if no daemon serves it, abort it with `echo 1 > %s/%u/abort` and detach "
			 "it "
			 "with `fusermount3 -u -z %s`",
			 mnt, mi.fstype, mi.conn, FUSECTL, mi.conn, mnt);
		return -1;
	}
	return done;
}
