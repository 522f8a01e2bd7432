/*
 * jobfs-shim - the supervisor of one node's processes on this host.
 *
 *   jobfs-shim RUN_DIR
 *
 * The local backend (backends/local/local.c) writes RUN_DIR/launch.json and
 * spawns one shim per node.  The shim starts the node's processes, tees
 * their output into RUN_DIR, forwards the backend's signals, and when every
 * process has ended writes RUN_DIR/result.  It outlives the daemon: it sits
 * in its own session, ignores SIGHUP and SIGPIPE, and never needs the daemon
 * again once it has reported readiness.  Nothing it learns is kept only in
 * memory past the point where the daemon could ask for it: the exit status
 * reaches RUN_DIR/result (fsynced, renamed, directory fsynced) before the
 * shim exits, so a restarted daemon finds it there.
 *
 * DESIGN
 *
 * - One process per proc ("container"), each its own process-group leader
 *   with PR_SET_PDEATHSIG(SIGKILL): if the shim is killed its children die
 *   with it instead of running unsupervised.  When a proc's leader exits,
 *   whatever is left in its process group is SIGKILLed while the zombie
 *   still holds the group id (so the id cannot have been reused): a
 *   container ends when its main process does, as in Kubernetes.
 * - Readiness goes to fd 3 (a pipe from the daemon), one line, then fd 3 is
 *   closed:
 *       started START_MS PID1 PID2 ...
 *       failed START_MS MESSAGE          (a command could not be executed)
 *       error MESSAGE                    (the shim itself could not start;
 *                                         it then exits 100 or 111)
 *   The same started/failed line goes to RUN_DIR/started.
 * - Before starting anything the shim claims the run: RUN_DIR/claim,
 *   created with O_EXCL, "local:PID:STARTTIME START_MS".  If the file is
 *   there already (a restarted daemon gave the attempt up: "cancelled"),
 *   it starts nothing and exits 100 (backends/local/local.c: recover).
 * - If one proc cannot be executed, the others are SIGKILLed: the node is a
 *   start failure (exit 127, or 126 for EACCES) with that proc's message.
 * - Output: each proc's stdout and stderr are pipes read with poll().  Bytes
 *   are appended as they come to RUN_DIR/stdout and RUN_DIR/stderr, and by
 *   whole lines to RUN_DIR/logs (a partial line waits in a 64 KiB buffer per
 *   pipe; a longer line is written in 64 KiB pieces; a last line without a
 *   newline gets one in logs at EOF).  With several procs each logs line is
 *   prefixed "[name] ".
 * - Rotation (launch.json log_cap > 0): a file that a write would take past
 *   log_cap bytes is renamed to NAME.1 (replacing the NAME.1 before it,
 *   whose bytes are then gone for good) and NAME is opened anew and empty;
 *   the write goes on there.  stdout and stderr are cut at the cap exactly,
 *   logs after its last whole line that fits (a line longer than the cap is
 *   cut).  So each file holds at most about 2 x log_cap on disk, NAME.1
 *   followed by NAME is always the latest output, at least log_cap bytes of
 *   it once the first rotation happened (less a line for logs), and the
 *   pipes are always drained: no process ever blocks on its output.  After
 *   each rotation RUN_DIR/rotation is replaced (written to a temporary file
 *   and renamed, not fsynced: it is advice for the daemon, not a record):
 *       {"cap":N,"stdout":{"rotations":R,"dropped":B},"stderr":{...},
 *        "logs":{...}}
 *   with, per file, the rotations so far and the bytes dropped (gone).  If
 *   NAME cannot be renamed it is emptied in place instead; a write that
 *   fails (a full disk) loses its bytes and rotates nothing.
 * - Signals arrive through a signalfd and are handled in the loop:
 *   SIGTERM -> SIGTERM to every running proc's process group, SIGUSR1 ->
 *   SIGKILL to them, SIGCHLD -> reap.
 * - The node is done when every proc has been reaped and its pipes reached
 *   EOF, or 2 s after the last one was reaped (a grandchild outside the
 *   process group may hold a pipe open; it is not waited for).
 * - Exit status rules (RUN_DIR/result): a proc killed by signal s has
 *   exit_code 128+s and signal s; the node's exit_code and signal are those
 *   of the first proc, in launch order, with a non-zero exit_code, else 0;
 *   on a start failure they are those of the proc that could not start.
 *   end_ms is the wall clock when the last proc was reaped.
 *
 * Exit codes of the shim itself:
 *   0    RUN_DIR/result was written
 *   100  bad usage or a bad RUN_DIR/launch.json (nothing was started)
 *   111  system error: nothing could be started, or the result could not be
 *        written (the daemon then reports the run lost)
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SHIM_BEAT_MS 1000          /* heartbeat: the claim's mtime */

enum {
	SHIM_EXIT_OK = 0,
	SHIM_EXIT_USAGE = 100,
	SHIM_EXIT_SYSTEM = 111,
};

#define READY_FD 3
#define SHIM_MAX_PROCS 16
#define SHIM_NAME_MAX 63
#define SHIM_FILE_MAX (1 << 20)
#define SHIM_LINE_CAP (64 * 1024)
#define SHIM_CHUNK (64 * 1024)
#define SHIM_LOGBUF (128 * 1024)
#define SHIM_DRAIN_MS 2000
#define SHIM_MSG_MAX 256

/* ---- launch.json ---- */

struct launch_proc {
	const char *name;
	char **argv;               /* NULL-terminated; strings owned by launch.root */
	char **envp;
};

struct launch {
	json_t *root;
	uid_t uid;
	gid_t gid;
	const char *cwd;
	int64_t log_cap;
	int *cpus;
	size_t ncpus;
	struct launch_proc procs[SHIM_MAX_PROCS];
	size_t nprocs;
};

/* ---- output files ---- */

struct outfile {
	int fd;                    /* -1 after a rotation that could not reopen NAME */
	const char *name;          /* "stdout", "stderr" or "logs" in RUN_DIR */
	bool lines;                /* rotate after a whole line (logs) */
	int64_t size;              /* bytes in NAME */
	int64_t cap;               /* 0 = no cap */
	int64_t size1;             /* bytes in NAME.1, the part rotated out last */
	int64_t rotations;
	int64_t dropped;           /* bytes gone for good */
};

/* One pipe: a proc's stdout or stderr. */
struct stream {
	int fd;                    /* read end; -1 after EOF */
	struct outfile *file;      /* RUN_DIR/stdout or RUN_DIR/stderr */
	char *line;                /* partial line for logs, SHIM_LINE_CAP */
	size_t len;
	bool mid_line;             /* logs: this stream's last piece did not end a line */
};

struct proc {
	const struct launch_proc *spec;
	pid_t pid;                 /* 0 if never forked */
	bool running;              /* forked and not yet reaped */
	bool failed;               /* could not be started */
	int exit_code;
	int term_signal;
	struct stream out;
	struct stream err;
};

struct shim {
	int dirfd;
	int sfd;                   /* signalfd: SIGCHLD, SIGTERM, SIGUSR1 */
	int ready_fd;              /* -1 once the ready line is written */
	int alive_fd;              /* RUN_DIR/claim: its mtime is touched every second */
	struct launch l;
	struct proc procs[SHIM_MAX_PROCS];
	size_t nrunning;
	struct outfile fout, ferr, flogs;
	char *logbuf;              /* pending whole lines for logs */
	size_t loglen;
	char *chunk;               /* read buffer */
	bool drop;                 /* change user in the children */
	gid_t *groups;
	int ngroups;
	bool pin;
	cpu_set_t cpus;
	char cg[256];                /* cpuset cgroup of the node, "" if none */
	const char *cg_procs;        /* "tasks" (v1) or "cgroup.procs" (v2) */
	int64_t start_ms;
	int64_t end_ms;
	bool start_failed;
	size_t failed_proc;        /* first proc that could not start */
	int failed_code;           /* its exit code: 127, or 126 for EACCES */
	char start_msg[SHIM_MSG_MAX];
};

/* What a child reports through its CLOEXEC error pipe before _exit. */
enum child_stage {
	ST_SETPGID,
	ST_AFFINITY,
	ST_SETGROUPS,
	ST_SETGID,
	ST_SETUID,
	ST_CHDIR,
	ST_STDIO,
	ST_EXEC,
};

static const char *const stage_names[] = {
	[ST_SETPGID] = "setpgid",
	[ST_AFFINITY] = "sched_setaffinity",
	[ST_SETGROUPS] = "setgroups",
	[ST_SETGID] = "setgid",
	[ST_SETUID] = "setuid",
	[ST_CHDIR] = "chdir",
	[ST_STDIO] = "stdio",
	[ST_EXEC] = "exec",
};

struct child_err {
	int stage;
	int err;
};

/* ---- small helpers ---- */

static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void) { return clock_ms(CLOCK_REALTIME); }
static int64_t mono_ms(void) { return clock_ms(CLOCK_MONOTONIC); }

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static const char *signame(int sig, char *buf, size_t n)
{
	const char *abbrev = sigabbrev_np(sig);
	if (abbrev)
		snprintf(buf, n, "SIG%s", abbrev);
	else
		snprintf(buf, n, "signal %d", sig);
	return buf;
}

/* Messages go on one line, in valid UTF-8, whatever argv[0] held. */
static void msg_clean(char *s)
{
	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	size_t n = strlen(s), i = n;
	while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
		i--;
	if (i == 0)
		return;
	unsigned char c = (unsigned char)s[i - 1];
	size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
	if (n - (i - 1) < need)
		s[i - 1] = '\0';
}

/* The ready line, once; later calls do nothing. */
static void ready_say(struct shim *s, const char *line)
{
	if (s->ready_fd < 0)
		return;
	(void)write_all(s->ready_fd, line, strlen(line));
	close(s->ready_fd);
	s->ready_fd = -1;
}

/* A failure before anything started: stderr, and "error ..." to fd 3. */
__attribute__((format(printf, 3, 4)))
static int fail(struct shim *s, int code, const char *fmt, ...)
{
	char msg[SHIM_MSG_MAX], line[SHIM_MSG_MAX + 16];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	msg_clean(msg);
	fprintf(stderr, "jobfs-shim: %s\n", msg);
	snprintf(line, sizeof(line), "error %s\n", msg);
	ready_say(s, line);
	return code;
}

/* name.tmp, fsync, rename onto name; fsync the directory if asked. */
static int write_atomic(int dirfd, const char *name, const char *data, size_t n,
			bool sync_dir)
{
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write_all(fd, data, n) < 0 || fsync(fd) < 0)
		goto fail_fd;
	if (close(fd) < 0) {
		fd = -1;
		goto fail_fd;
	}
	if (renameat(dirfd, tmp, dirfd, name) < 0)
		goto fail_tmp;
	if (sync_dir && fsync(dirfd) < 0)
		return -1;
	return 0;

fail_fd:
	if (fd >= 0) {
		int e = errno;
		close(fd);
		errno = e;
	}
fail_tmp: {
	int e = errno;
	unlinkat(dirfd, tmp, 0);
	errno = e;
	return -1;
}
}

/* ---- launch.json ---- */

static char **str_array(json_t *a, bool nonempty)
{
	if (!json_is_array(a) || (nonempty && json_array_size(a) == 0))
		return NULL;
	size_t n = json_array_size(a);
	char **v = calloc(n + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *str = json_string_value(json_array_get(a, i));
		if (!str) {
			free(v);
			return NULL;
		}
		v[i] = (char *)str;
	}
	return v;
}

static bool get_int(json_t *o, const char *key, json_int_t max, json_int_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		return false;
	json_int_t x = json_integer_value(v);
	if (x < 0 || x > max)
		return false;
	*out = x;
	return true;
}

static void launch_release(struct launch *l)
{
	for (size_t i = 0; i < l->nprocs; i++) {
		free(l->procs[i].argv);
		free(l->procs[i].envp);
	}
	free(l->cpus);
	json_decref(l->root);
	memset(l, 0, sizeof(*l));
}

static int launch_parse(struct launch *l, const char *buf, size_t len,
			char *err, size_t errlen)
{
	json_error_t je;
	json_int_t x;

	l->root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!l->root) {
		snprintf(err, errlen, "launch.json: line %d: %s", je.line, je.text);
		return -1;
	}
	json_t *root = l->root;
	if (!json_is_object(root)) {
		snprintf(err, errlen, "launch.json: not an object");
		return -1;
	}
	if (!get_int(root, "uid", (json_int_t)UINT32_MAX - 1, &x)) {
		snprintf(err, errlen, "launch.json: uid: must be a user id");
		return -1;
	}
	l->uid = (uid_t)x;
	if (!get_int(root, "gid", (json_int_t)UINT32_MAX - 1, &x)) {
		snprintf(err, errlen, "launch.json: gid: must be a group id");
		return -1;
	}
	l->gid = (gid_t)x;
	l->cwd = json_string_value(json_object_get(root, "cwd"));
	if (!l->cwd || !l->cwd[0]) {
		snprintf(err, errlen, "launch.json: cwd: must be a path");
		return -1;
	}
	if (json_object_get(root, "log_cap")) {
		if (!get_int(root, "log_cap", INT64_MAX / 2, &x)) {
			snprintf(err, errlen, "launch.json: log_cap: must be a byte count");
			return -1;
		}
		l->log_cap = x;
	}
	json_t *cpus = json_object_get(root, "cpus");
	if (cpus && !json_is_null(cpus)) {
		if (!json_is_array(cpus)) {
			snprintf(err, errlen, "launch.json: cpus: must be an array");
			return -1;
		}
		l->ncpus = json_array_size(cpus);
		l->cpus = calloc(l->ncpus + 1, sizeof(int));
		if (!l->cpus) {
			snprintf(err, errlen, "launch.json: out of memory");
			return -1;
		}
		for (size_t i = 0; i < l->ncpus; i++) {
			json_t *c = json_array_get(cpus, i);
			if (!json_is_integer(c) || json_integer_value(c) < 0 ||
			    json_integer_value(c) > INT_MAX) {
				snprintf(err, errlen, "launch.json: cpus[%zu]: must be a CPU id", i);
				return -1;
			}
			l->cpus[i] = (int)json_integer_value(c);
		}
	}
	json_t *procs = json_object_get(root, "procs");
	size_t n = json_array_size(procs);
	if (!json_is_array(procs) || n < 1 || n > SHIM_MAX_PROCS) {
		snprintf(err, errlen, "launch.json: procs: must be 1 to %d processes",
			 SHIM_MAX_PROCS);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *p = json_array_get(procs, i);
		struct launch_proc *lp = &l->procs[i];
		lp->name = json_string_value(json_object_get(p, "name"));
		if (!lp->name || !lp->name[0] || strlen(lp->name) > SHIM_NAME_MAX ||
		    strpbrk(lp->name, "\n\r")) {
			snprintf(err, errlen, "launch.json: procs[%zu].name: must be 1 to %d characters",
				 i, SHIM_NAME_MAX);
			return -1;
		}
		lp->argv = str_array(json_object_get(p, "argv"), true);
		l->nprocs = i + 1;   /* from here launch_release frees this entry */
		if (!lp->argv || !lp->argv[0][0]) {
			snprintf(err, errlen, "launch.json: procs[%zu].argv: must be a non-empty array of strings", i);
			return -1;
		}
		json_t *envp = json_object_get(p, "envp");
		lp->envp = envp ? str_array(envp, false) : calloc(1, sizeof(char *));
		if (!lp->envp) {
			snprintf(err, errlen, "launch.json: procs[%zu].envp: must be an array of strings", i);
			return -1;
		}
	}
	return 0;
}

static int launch_read(struct shim *s, char *err, size_t errlen)
{
	int rc = -1;
	char *buf = NULL;
	int fd = openat(s->dirfd, "launch.json", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "launch.json: %s", strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > SHIM_FILE_MAX) {
		snprintf(err, errlen, "launch.json: not a regular file under %d bytes",
			 SHIM_FILE_MAX);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		snprintf(err, errlen, "launch.json: out of memory");
		goto out;
	}
	size_t len = 0;
	while (len < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + len, (size_t)st.st_size - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "launch.json: %s", strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	rc = launch_parse(&s->l, buf, len, err, errlen);
out:
	free(buf);
	close(fd);
	return rc;
}

/* ---- output ---- */

static int outfile_open(struct shim *s, struct outfile *f, const char *name)
{
	char old[16];
	struct stat st;
	f->name = name;
	f->cap = s->l.log_cap;
	f->fd = openat(s->dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (f->fd < 0 || fstat(f->fd, &st) < 0)
		return -1;
	f->size = st.st_size;
	snprintf(old, sizeof(old), "%s.1", name);
	if (fstatat(s->dirfd, old, &st, 0) == 0)
		f->size1 = st.st_size;
	return 0;
}

/* RUN_DIR/rotation, replaced whole (see the top of the file). */
static void rotation_record(struct shim *s)
{
	const struct outfile *files[] = { &s->fout, &s->ferr, &s->flogs };
	char buf[512];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "{\"cap\":%" PRId64, s->l.log_cap);
	for (int k = 0; k < 3; k++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				      ",\"%s\":{\"rotations\":%" PRId64 ",\"dropped\":%" PRId64 "}",
				      files[k]->name, files[k]->rotations, files[k]->dropped);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "}\n");
	int fd = openat(s->dirfd, "rotation.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	bool ok = write_all(fd, buf, n) == 0;
	if (close(fd) < 0)
		ok = false;
	if (!ok || renameat(s->dirfd, "rotation.tmp", s->dirfd, "rotation") < 0)
		unlinkat(s->dirfd, "rotation.tmp", 0);
}

/* NAME becomes NAME.1 and a new NAME is opened; false if neither that nor
 * emptying NAME in place worked (the cap cannot hold: write nothing). */
static bool outfile_rotate(struct shim *s, struct outfile *f)
{
	char old[16];
	snprintf(old, sizeof(old), "%s.1", f->name);
	if (renameat(s->dirfd, f->name, s->dirfd, old) == 0) {
		f->dropped += f->size1;
		f->size1 = f->size;
		if (f->fd >= 0)
			close(f->fd);
		f->fd = openat(s->dirfd, f->name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	} else if (f->fd >= 0 && ftruncate(f->fd, 0) == 0) {
		f->dropped += f->size;
	} else {
		return false;
	}
	f->size = 0;
	f->rotations++;
	rotation_record(s);
	return true;
}

/* false if the bytes could not be written (they are lost). */
static bool outfile_raw(struct outfile *f, const char *p, size_t n)
{
	if (n == 0)
		return true;
	/* On a full disk the bytes are lost; the pipe keeps draining. */
	if (write_all(f->fd, p, n) < 0)
		return false;
	f->size += (int64_t)n;
	return true;
}

/* Append, rotating first whenever the next piece would pass the cap. */
static void outfile_write(struct shim *s, struct outfile *f, const char *p, size_t n)
{
	if (f->fd < 0 && f->name)   /* a rotation could not reopen it: try again */
		f->fd = openat(s->dirfd, f->name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (f->fd < 0)
		return;
	while (n > 0) {
		if (f->cap <= 0 || f->size + (int64_t)n <= f->cap) {
			outfile_raw(f, p, n);
			return;
		}
		size_t take = f->size < f->cap ? (size_t)(f->cap - f->size) : 0;
		if (f->lines) {
			const char *nl = take ? memrchr(p, '\n', take) : NULL;
			size_t whole = nl ? (size_t)(nl - p) + 1 : 0;
			/* nothing whole fits: rotate first, unless NAME is empty
			 * already (a line longer than the cap is cut) */
			if (whole > 0 || f->size > 0)
				take = whole;
		}
		if (!outfile_raw(f, p, take) || !outfile_rotate(s, f))
			return;
		p += take;
		n -= take;
	}
}

static void logs_flush(struct shim *s)
{
	outfile_write(s, &s->flogs, s->logbuf, s->loglen);
	s->loglen = 0;
}

static void logs_put(struct shim *s, const char *p, size_t n)
{
	if (s->loglen + n > SHIM_LOGBUF)
		logs_flush(s);
	if (n > SHIM_LOGBUF) {
		outfile_write(s, &s->flogs, p, n);
		return;
	}
	memcpy(s->logbuf + s->loglen, p, n);
	s->loglen += n;
}

/* One piece of a line for logs: a whole line, or a forced 64 KiB piece. */
static void logs_line(struct shim *s, struct proc *p, struct stream *st,
		      const char *line, size_t n, bool add_nl)
{
	if (s->l.nprocs > 1 && !st->mid_line) {
		char prefix[SHIM_NAME_MAX + 4];
		int k = snprintf(prefix, sizeof(prefix), "[%s] ", p->spec->name);
		logs_put(s, prefix, (size_t)k);
	}
	logs_put(s, line, n);
	if (add_nl)
		logs_put(s, "\n", 1);
	st->mid_line = !add_nl && line[n - 1] != '\n';
}

static void stream_feed(struct shim *s, struct proc *p, struct stream *st,
			const char *data, size_t n)
{
	outfile_write(s, st->file, data, n);
	while (n > 0) {
		size_t take = SHIM_LINE_CAP - st->len;
		if (take > n)
			take = n;
		memcpy(st->line + st->len, data, take);
		st->len += take;
		data += take;
		n -= take;

		size_t start = 0;
		const char *nl;
		while ((nl = memchr(st->line + start, '\n', st->len - start))) {
			size_t end = (size_t)(nl - st->line) + 1;
			logs_line(s, p, st, st->line + start, end - start, false);
			start = end;
		}
		memmove(st->line, st->line + start, st->len - start);
		st->len -= start;
		if (st->len == SHIM_LINE_CAP) {
			logs_line(s, p, st, st->line, st->len, false);
			st->len = 0;
		}
	}
	logs_flush(s);
}

static void stream_close(struct shim *s, struct proc *p, struct stream *st)
{
	if (st->fd < 0)
		return;
	if (st->len > 0) {
		logs_line(s, p, st, st->line, st->len, true);
		st->len = 0;
		logs_flush(s);
	}
	close(st->fd);
	st->fd = -1;
}

static void stream_read(struct shim *s, struct proc *p, struct stream *st)
{
	ssize_t r = read(st->fd, s->chunk, SHIM_CHUNK);
	if (r > 0)
		stream_feed(s, p, st, s->chunk, (size_t)r);
	else if (r == 0 || (errno != EAGAIN && errno != EINTR))
		stream_close(s, p, st);
}

/* ---- processes ---- */

__attribute__((noreturn))
static void child_fail(int errfd, enum child_stage stage, int err)
{
	struct child_err ce = { .stage = stage, .err = err };
	(void)!write(errfd, &ce, sizeof(ce));
	_exit(stage == ST_EXEC && err == EACCES ? 126 : 127);
}


/* ---- a cpuset cgroup for pinned nodes, where the machine allows ---- */

static bool put_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text);
}

static bool get_file(const char *dir, const char *name, char *buf, size_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t r = read(fd, buf, n - 1);
	close(fd);
	if (r < 0)
		return false;
	buf[r] = '\0';
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' '))
		buf[--r] = '\0';
	return true;
}

/* Best effort: a cgroup v1 cpuset hierarchy, or v2 with the cpuset
 * controller, holding exactly the pinned cores; nothing when neither can
 * be written (an unprivileged shim, a container without delegation). */
static void cgroup_setup(struct shim *s)
{
	char cpus[1024] = "", mems[256] = "", top[200];
	size_t off = 0;
	for (int c = 0; c < CPU_SETSIZE && off + 8 < sizeof(cpus); c++)
		if (CPU_ISSET(c, &s->cpus))
			off += (size_t)snprintf(cpus + off, sizeof(cpus) - off, "%s%d",
						off ? "," : "", c);
	const char *root = "/sys/fs/cgroup/cpuset";
	char probe[64];
	s->cg_procs = "tasks";
	if (!get_file(root, "cpuset.cpus", probe, sizeof(probe))) {
		root = "/sys/fs/cgroup";
		s->cg_procs = "cgroup.procs";
		if (!get_file(root, "cgroup.controllers", probe, sizeof(probe)) ||
		    !strstr(probe, "cpuset"))
			return;
		put_file(root, "cgroup.subtree_control", "+cpuset");
	}
	snprintf(top, sizeof(top), "%s/jobfs", root);
	if (mkdir(top, 0755) < 0 && errno != EEXIST)
		return;
	if (!strcmp(s->cg_procs, "tasks")) {
		/* v1: a cpuset needs cpus and mems before it takes tasks */
		char pc[1024];
		if (get_file(root, "cpuset.cpus", pc, sizeof(pc)) &&
		    get_file(root, "cpuset.mems", mems, sizeof(mems))) {
			char cur[8];
			if (!get_file(top, "cpuset.cpus", cur, sizeof(cur)) || !cur[0])
				put_file(top, "cpuset.cpus", pc);
			if (!get_file(top, "cpuset.mems", cur, sizeof(cur)) || !cur[0])
				put_file(top, "cpuset.mems", mems);
		}
	} else {
		put_file(top, "cgroup.subtree_control", "+cpuset");
	}
	snprintf(s->cg, sizeof(s->cg), "%s/node-%d", top, (int)getpid());
	if (mkdir(s->cg, 0755) < 0 && errno != EEXIST) {
		s->cg[0] = '\0';
		return;
	}
	if (!put_file(s->cg, "cpuset.cpus", cpus) ||
	    (mems[0] && !put_file(s->cg, "cpuset.mems", mems))) {
		rmdir(s->cg);
		s->cg[0] = '\0';
	}
}

static void cgroup_join(const struct shim *s)
{
	if (!s->cg[0])
		return;
	char pid[32];
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	put_file(s->cg, s->cg_procs, pid);
}

/*
 * In the child after fork.  The shim is single-threaded, so the libc calls
 * here are safe; nothing returns.
 */
__attribute__((noreturn))
static void child_run(struct shim *s, struct proc *p, pid_t shim_pid,
		      int out_w, int err_w, int errfd)
{
	sigset_t none;
	sigemptyset(&none);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);

	if (setpgid(0, 0) < 0)
		child_fail(errfd, ST_SETPGID, errno);
	if (s->pin && sched_setaffinity(0, sizeof(s->cpus), &s->cpus) < 0)
		child_fail(errfd, ST_AFFINITY, errno);
	cgroup_join(s);
	if (s->drop) {
		if (setgroups((size_t)s->ngroups, s->groups) < 0)
			child_fail(errfd, ST_SETGROUPS, errno);
		if (setgid(s->l.gid) < 0)
			child_fail(errfd, ST_SETGID, errno);
		if (setuid(s->l.uid) < 0)
			child_fail(errfd, ST_SETUID, errno);
	}
	/* After the credential change, which would clear it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != shim_pid)
		_exit(127);   /* the shim died before we got here */
	if (chdir(s->l.cwd) < 0)
		child_fail(errfd, ST_CHDIR, errno);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		child_fail(errfd, ST_STDIO, errno);
	/*
	 * 0..2 were taken before any pipe was made, so each dup2 above made a
	 * copy without FD_CLOEXEC and every original closes at exec: the
	 * process gets exactly 0, 1 and 2.  glibc's execvpe searches the PATH
	 * of environ, not of envp.
	 */
	environ = p->spec->envp;
	execvpe(p->spec->argv[0], p->spec->argv, p->spec->envp);
	child_fail(errfd, ST_EXEC, errno);
}

static void proc_start_failed(struct shim *s, size_t i, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void proc_start_failed(struct shim *s, size_t i, int code, const char *fmt, ...)
{
	s->procs[i].failed = true;
	if (s->start_failed)
		return;   /* the first failure is the node's */
	s->failed_code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->start_msg, sizeof(s->start_msg), fmt, ap);
	va_end(ap);
	msg_clean(s->start_msg);
	s->start_failed = true;
	s->failed_proc = i;
}

static void child_err_message(struct shim *s, size_t i, const struct child_err *ce)
{
	const struct launch_proc *lp = &s->l.procs[i];
	const char *stage = ce->stage >= 0 && ce->stage <= ST_EXEC ? stage_names[ce->stage] : "start";
	int code = ce->stage == ST_EXEC && ce->err == EACCES ? 126 : 127;
	switch (ce->stage) {
	case ST_EXEC:
		proc_start_failed(s, i, code, "exec %s: %s", lp->argv[0], strerror(ce->err));
		break;
	case ST_CHDIR:
		proc_start_failed(s, i, code, "chdir %s: %s", s->l.cwd, strerror(ce->err));
		break;
	case ST_SETUID:
		proc_start_failed(s, i, code, "setuid %u: %s", (unsigned)s->l.uid, strerror(ce->err));
		break;
	case ST_SETGID:
		proc_start_failed(s, i, code, "setgid %u: %s", (unsigned)s->l.gid, strerror(ce->err));
		break;
	default:
		proc_start_failed(s, i, code, "%s: %s", stage, strerror(ce->err));
		break;
	}
}

/*
 * Fork proc i.  A failure to create pipes or to fork makes the proc a start
 * failure with exit code 127 that never ran; it is not fatal to the shim.
 */
static void proc_start(struct shim *s, size_t i)
{
	struct proc *p = &s->procs[i];
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, ep[2] = { -1, -1 };
	const char *what = "pipe";

	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(ep, O_CLOEXEC) < 0)
		goto fail;
	if (s->start_ms == 0)
		s->start_ms = wall_ms();
	pid_t shim_pid = getpid();
	what = "fork";
	pid_t pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0)
		child_run(s, p, shim_pid, outp[1], errp[1], ep[1]);

	setpgid(pid, pid);   /* also here, so a signal sent at once reaches the group */
	p->pid = pid;
	p->running = true;
	s->nrunning++;
	close(outp[1]);
	close(errp[1]);
	close(ep[1]);
	p->out.fd = outp[0];
	p->err.fd = errp[0];
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);

	struct child_err ce;
	ssize_t r;
	do
		r = read(ep[0], &ce, sizeof(ce));
	while (r < 0 && errno == EINTR);
	close(ep[0]);
	if (r == (ssize_t)sizeof(ce))
		child_err_message(s, i, &ce);
	return;

fail: {
	int e = errno;
	int fds[] = { outp[0], outp[1], errp[0], errp[1], ep[0], ep[1] };
	for (size_t k = 0; k < sizeof(fds) / sizeof(fds[0]); k++)
		if (fds[k] >= 0)
			close(fds[k]);
	p->exit_code = 127;
	proc_start_failed(s, i, 127, "%s %s: %s", what, p->spec->name, strerror(e));
}
}

static struct proc *proc_by_pid(struct shim *s, pid_t pid)
{
	for (size_t i = 0; i < s->l.nprocs; i++)
		if (s->procs[i].running && s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

/* sig to the process group of every proc still running. */
static void forward(struct shim *s, int sig)
{
	for (size_t i = 0; i < s->l.nprocs; i++) {
		struct proc *p = &s->procs[i];
		if (p->running && !p->failed && kill(-p->pid, sig) < 0 && errno == ESRCH)
			kill(p->pid, sig);
	}
}

static void reap_children(struct shim *s)
{
	for (;;) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
			return;
		struct proc *p = proc_by_pid(s, si.si_pid);
		/* The zombie still holds the group id: no other group can have it. */
		if (p)
			kill(-p->pid, SIGKILL);
		int status;
		pid_t r;
		do
			r = waitpid(si.si_pid, &status, 0);
		while (r < 0 && errno == EINTR);
		if (r < 0 || !p)
			continue;
		if (WIFSIGNALED(status)) {
			p->term_signal = WTERMSIG(status);
			p->exit_code = 128 + p->term_signal;
		} else {
			p->exit_code = WEXITSTATUS(status);
		}
		p->running = false;
		if (--s->nrunning == 0)
			s->end_ms = wall_ms();
	}
}

static void handle_signals(struct shim *s)
{
	struct signalfd_siginfo si;
	bool chld = false;
	while (read(s->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			chld = true;
			break;
		case SIGTERM:
			forward(s, SIGTERM);
			break;
		case SIGUSR1:
			forward(s, SIGKILL);
			break;
		}
	}
	if (chld)
		reap_children(s);
}

static bool streams_open(struct shim *s)
{
	for (size_t i = 0; i < s->l.nprocs; i++)
		if (s->procs[i].out.fd >= 0 || s->procs[i].err.fd >= 0)
			return true;
	return false;
}

static int run_loop(struct shim *s)
{
	struct pollfd pfd[1 + 2 * SHIM_MAX_PROCS];
	struct stream *who[1 + 2 * SHIM_MAX_PROCS];
	struct proc *whose[1 + 2 * SHIM_MAX_PROCS];
	int64_t deadline = -1, beat = mono_ms() + SHIM_BEAT_MS;

	for (;;) {
		/* a sign of life: if we are killed while no daemon watches, the
		 * next one bills up to the claim's mtime (local.c: run_finish) */
		if (s->alive_fd >= 0 && mono_ms() >= beat) {
			futimens(s->alive_fd, NULL);
			beat = mono_ms() + SHIM_BEAT_MS;
		}
		if (s->nrunning == 0) {
			if (!streams_open(s))
				break;
			if (deadline < 0)
				deadline = mono_ms() + SHIM_DRAIN_MS;
		}
		nfds_t n = 0;
		pfd[n++] = (struct pollfd){ .fd = s->sfd, .events = POLLIN };
		for (size_t i = 0; i < s->l.nprocs; i++) {
			struct stream *sts[2] = { &s->procs[i].out, &s->procs[i].err };
			for (int k = 0; k < 2; k++) {
				if (sts[k]->fd < 0)
					continue;
				who[n] = sts[k];
				whose[n] = &s->procs[i];
				pfd[n++] = (struct pollfd){ .fd = sts[k]->fd, .events = POLLIN };
			}
		}
		int timeout = SHIM_BEAT_MS;
		if (deadline >= 0) {
			int64_t left = deadline - mono_ms();
			if (left <= 0)
				break;
			if (left < timeout)
				timeout = (int)left;
		}
		int r = poll(pfd, n, timeout);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (pfd[0].revents)
			handle_signals(s);
		for (nfds_t i = 1; i < n; i++)
			if (pfd[i].revents && who[i]->fd >= 0)
				stream_read(s, whose[i], who[i]);
	}
	for (size_t i = 0; i < s->l.nprocs; i++) {
		stream_close(s, &s->procs[i], &s->procs[i].out);
		stream_close(s, &s->procs[i], &s->procs[i].err);
	}
	return 0;
}

/* ---- setup and records ---- */

static void close_inherited(void)
{
	if (syscall(SYS_close_range, READY_FD + 1, ~0U, 0) == 0)
		return;
	long max = sysconf(_SC_OPEN_MAX);
	for (long fd = READY_FD + 1; fd < (max > 0 ? max : 1024); fd++)
		close((int)fd);
}

static int prepare(struct shim *s, char *err, size_t errlen)
{
	/* as root (also setuid root: real ids a user's, effective 0), always
	 * become the task's user: never leave it the daemon's rights */
	if (geteuid() == 0 && (s->l.uid != 0 || s->l.gid != 0 || getuid() != 0 ||
			       getgid() != 0)) {
		s->drop = true;
		long bufsz = sysconf(_SC_GETPW_R_SIZE_MAX);
		size_t n = bufsz > 0 ? (size_t)bufsz : 16384;
		char *buf = malloc(n);
		struct passwd pw, *res = NULL;
		if (!buf) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if (getpwuid_r(s->l.uid, &pw, buf, n, &res) != 0)
			res = NULL;
		if (res) {
			int ng = 64;
			for (;;) {
				gid_t *g = realloc(s->groups, (size_t)ng * sizeof(gid_t));
				if (!g) {
					free(buf);
					snprintf(err, errlen, "out of memory");
					return -1;
				}
				s->groups = g;
				int want = ng;
				if (getgrouplist(pw.pw_name, s->l.gid, s->groups, &want) >= 0) {
					s->ngroups = want;
					break;
				}
				if (want <= ng || want > 65536) {   /* no progress: keep the first ng */
					s->ngroups = ng;
					break;
				}
				ng = want;
			}
		}
		free(buf);
	}
	if (s->l.ncpus > 0) {
		cpu_set_t allowed;
		CPU_ZERO(&s->cpus);
		if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
			/* The cluster is logical: pin to the ids this host has. */
			for (size_t i = 0; i < s->l.ncpus; i++)
				if (s->l.cpus[i] < CPU_SETSIZE && CPU_ISSET(s->l.cpus[i], &allowed))
					CPU_SET(s->l.cpus[i], &s->cpus);
			s->pin = CPU_COUNT(&s->cpus) > 0;
		}
		if (s->pin)
			cgroup_setup(s);
	}
	s->logbuf = malloc(SHIM_LOGBUF);
	s->chunk = malloc(SHIM_CHUNK);
	if (!s->logbuf || !s->chunk) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < s->l.nprocs; i++) {
		struct proc *p = &s->procs[i];
		p->spec = &s->l.procs[i];
		p->out.file = &s->fout;
		p->err.file = &s->ferr;
		p->out.line = malloc(SHIM_LINE_CAP);
		p->err.line = malloc(SHIM_LINE_CAP);
		if (!p->out.line || !p->err.line) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	static const char *const names[] = { "stdout", "stderr", "logs" };
	struct outfile *files[] = { &s->fout, &s->ferr, &s->flogs };
	for (int k = 0; k < 3; k++) {
		files[k]->lines = files[k] == &s->flogs;
		if (outfile_open(s, files[k], names[k]) < 0) {
			snprintf(err, errlen, "%s: %s", names[k], strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Field 22 of /proc/self/stat: what tells this process from a later one
 * with the same pid (the daemon's handle is local:PID:STARTTIME). */
static unsigned long long self_starttime(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');   /* the command may hold spaces */
	unsigned long long v = 0;
	for (int field = 2; p && *p; p++)
		if (*p == ' ' && ++field == 22) {
			v = strtoull(p + 1, NULL, 10);
			break;
		}
	return v;
}

/*
 * Claim the run before starting anything: RUN_DIR/claim, created with
 * O_EXCL, holds our handle and the time.  A daemon that died inside its
 * start() and came back creates the same file saying "cancelled" when we
 * were not first; then we start nothing (local.c: recover).  0 claimed,
 * 1 cancelled, -1 error.
 */
static int claim(struct shim *s)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "local:%d:%llu %" PRId64 "\n", (int)getpid(),
			 self_starttime(), wall_ms());
	int fd = openat(s->dirfd, "claim", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno == EEXIST ? 1 : -1;
	int rc = write_all(fd, line, (size_t)n) == 0 && fsync(fd) == 0 ? 0 : -1;
	if (rc == 0) {
		fsync(s->dirfd);
		s->alive_fd = fd;   /* the heartbeat (run_loop) */
	} else {
		close(fd);
	}
	return rc;
}

static void report_started(struct shim *s)
{
	char line[SHIM_MSG_MAX + 64 + SHIM_MAX_PROCS * 12];
	size_t off;
	if (s->start_ms == 0)
		s->start_ms = wall_ms();
	if (s->start_failed) {
		off = (size_t)snprintf(line, sizeof(line), "failed %" PRId64 " %s\n",
				       s->start_ms, s->start_msg);
	} else {
		off = (size_t)snprintf(line, sizeof(line), "started %" PRId64, s->start_ms);
		for (size_t i = 0; i < s->l.nprocs; i++)
			off += (size_t)snprintf(line + off, sizeof(line) - off, " %d",
						(int)s->procs[i].pid);
		off += (size_t)snprintf(line + off, sizeof(line) - off, "\n");
	}
	/* The daemon waits on the pipe; the file is for a restarted daemon. */
	ready_say(s, line);
	if (write_atomic(s->dirfd, "started", line, off, false) < 0)
		fprintf(stderr, "jobfs-shim: started: %s\n", strerror(errno));
}

static int write_result(struct shim *s)
{
	char msg[SHIM_MSG_MAX], sbuf[32];
	int rc = -1;
	json_t *root = NULL, *procs = json_array();
	const struct proc *node = NULL;

	if (s->end_ms == 0)
		s->end_ms = wall_ms();
	if (s->start_failed) {
		/* Whatever signal reached it on its way to _exit, it never ran. */
		s->procs[s->failed_proc].exit_code = s->failed_code;
		s->procs[s->failed_proc].term_signal = 0;
		node = &s->procs[s->failed_proc];
		snprintf(msg, sizeof(msg), "%s", s->start_msg);
	} else {
		for (size_t i = 0; i < s->l.nprocs && !node; i++)
			if (s->procs[i].exit_code != 0)
				node = &s->procs[i];
		char what[64];
		if (!node)
			snprintf(what, sizeof(what), "exit 0");
		else if (node->term_signal)
			snprintf(what, sizeof(what), "killed by %s",
				 signame(node->term_signal, sbuf, sizeof(sbuf)));
		else
			snprintf(what, sizeof(what), "exit %d", node->exit_code);
		if (node && s->l.nprocs > 1)
			snprintf(msg, sizeof(msg), "%s: %s", node->spec->name, what);
		else
			snprintf(msg, sizeof(msg), "%s", what);
	}
	msg_clean(msg);
	if (!procs)
		goto out;
	for (size_t i = 0; i < s->l.nprocs; i++) {
		const struct proc *p = &s->procs[i];
		json_t *o = json_pack("{s:s,s:i,s:i}", "name", p->spec->name,
				      "exit_code", p->exit_code, "signal", p->term_signal);
		if (!o || json_array_append_new(procs, o) < 0)
			goto out;
	}
	root = json_pack("{s:i,s:i,s:I,s:I,s:s,s:b,s:O}",
			 "exit_code", node ? node->exit_code : 0,
			 "signal", node ? node->term_signal : 0,
			 "start_ms", (json_int_t)s->start_ms,
			 "end_ms", (json_int_t)s->end_ms,
			 "message", msg,
			 "start_failed", s->start_failed,
			 "procs", procs);
	if (!root)
		goto out;
	char *text = json_dumps(root, JSON_COMPACT);
	if (!text)
		goto out;
	size_t len = strlen(text);
	char *line = realloc(text, len + 2);
	if (!line) {
		free(text);
		goto out;
	}
	line[len] = '\n';
	line[len + 1] = '\0';
	rc = write_atomic(s->dirfd, "result", line, len + 1, true);
	if (rc < 0)
		fprintf(stderr, "jobfs-shim: result: %s\n", strerror(errno));
	free(line);
out:
	json_decref(root);
	json_decref(procs);
	return rc;
}

static void shim_release(struct shim *s)
{
	if (s->alive_fd >= 0)
		close(s->alive_fd);
	for (size_t i = 0; i < SHIM_MAX_PROCS; i++) {
		struct proc *p = &s->procs[i];
		if (p->out.fd >= 0)
			close(p->out.fd);
		if (p->err.fd >= 0)
			close(p->err.fd);
		free(p->out.line);
		free(p->err.line);
	}
	struct outfile *files[] = { &s->fout, &s->ferr, &s->flogs };
	for (int k = 0; k < 3; k++)
		if (files[k]->fd >= 0)
			close(files[k]->fd);
	if (s->sfd >= 0)
		close(s->sfd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	if (s->ready_fd >= 0)
		close(s->ready_fd);
	free(s->logbuf);
	free(s->chunk);
	free(s->groups);
	launch_release(&s->l);
}

int main(int argc, char **argv)
{
	static struct shim shim;
	struct shim *s = &shim;
	char err[SHIM_MSG_MAX];
	int code;

	s->dirfd = s->sfd = s->ready_fd = s->alive_fd = -1;
	s->fout.fd = s->ferr.fd = s->flogs.fd = -1;
	for (size_t i = 0; i < SHIM_MAX_PROCS; i++)
		s->procs[i].out.fd = s->procs[i].err.fd = -1;

	if (fcntl(READY_FD, F_SETFD, FD_CLOEXEC) == 0)
		s->ready_fd = READY_FD;
	close_inherited();
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0) {
			int null = open("/dev/null", O_RDWR);
			if (null >= 0 && null != fd) {
				dup2(null, fd);
				close(null);
			}
		}
	}

	if (argc != 2 || argv[1][0] == '\0') {
		code = fail(s, SHIM_EXIT_USAGE, "usage: jobfs-shim RUN_DIR");
		goto out;
	}
	setsid();
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	umask(022);

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
	    (s->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		code = fail(s, SHIM_EXIT_SYSTEM, "signalfd: %s", strerror(errno));
		goto out;
	}
	s->dirfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		code = fail(s, SHIM_EXIT_USAGE, "%s: %s", argv[1], strerror(errno));
		goto out;
	}
	if (launch_read(s, err, sizeof(err)) < 0) {
		code = fail(s, SHIM_EXIT_USAGE, "%s", err);
		goto out;
	}
	if (prepare(s, err, sizeof(err)) < 0) {
		code = fail(s, SHIM_EXIT_SYSTEM, "%s", err);
		goto out;
	}

	switch (claim(s)) {
	case 0:
		break;
	case 1:
		code = fail(s, SHIM_EXIT_USAGE, "cancelled: the daemon gave this attempt up "
				"before it started");
		goto out;
	default:
		code = fail(s, SHIM_EXIT_SYSTEM, "claim: %s", strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < s->l.nprocs; i++)
		proc_start(s, i);
	if (s->start_failed)
		forward(s, SIGKILL);
	report_started(s);

	if (run_loop(s) < 0) {
		fprintf(stderr, "jobfs-shim: poll: %s\n", strerror(errno));
		forward(s, SIGKILL);
		code = SHIM_EXIT_SYSTEM;
		goto out;
	}
	code = write_result(s) == 0 ? SHIM_EXIT_OK : SHIM_EXIT_SYSTEM;
	if (s->cg[0])
		rmdir(s->cg);    /* empty now: every process was reaped */
out:
	shim_release(s);
	return code;
}
