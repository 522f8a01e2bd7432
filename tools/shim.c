/*
 * jobfs-shim - the supervisor of one node's processes on this host.
 *
 *   jobfs-shim RUN_DIR                      the local backend's node
 *   jobfs-shim --slurm BATCH_DIR            one node of a Slurm array element
 *   jobfs-shim --slurm-verdict BATCH_DIR    that element's exit status
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
 *   Each proc that could not start gets a line saying why in stderr and in
 *   logs, written by the shim (the child only hands its errno over):
 *       jobfs: exec nosuchcmd: No such file or directory
 *   (likewise "chdir DIR: ...", "setuid UID: ...", "fork NAME: ..."); in
 *   logs it is prefixed "[name] " like the proc's own lines.
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
 *
 * SLURM MODE AND VERDICT (jobfs-shim --slurm, --slurm-verdict): what the
 * shim does differently under Slurm, and how the element's exit status is
 * found, is described at the top of shim_slurm.c, which holds that code.
 * shim_proc.c holds the processes (start, signals, reaping, the loop),
 * shim_output.c the output files and their rotation, `started` and
 * `result`; shim_int.h what the four files share.
 *
 * Exit codes of the shim itself:
 *   local mode (jobfs-shim RUN_DIR):
 *   0    RUN_DIR/result was written
 *   100  bad usage or a bad RUN_DIR/launch.json (nothing was started)
 *   111  system error: nothing could be started, or the result could not be
 *        written (the daemon then reports the run lost)
 *   --slurm (what srun and the batch script see):
 *   0    the result was written and the node's exit code is 0
 *   1    the result was written and the node failed (on its own, or ended
 *        non-zero by an outside SIGINT or SIGHUP); never 143 for a proc's
 *        own 143: a task that exits 143 must fail, not be requeued forever
 *   143  the result was written; an outside SIGTERM reached the running
 *        procs and nothing failed on its own before it, whatever the procs
 *        then exited with (a preempted task that saves and exits 0 is not
 *        done); the cluster's RequeueExit=143 requeues the element
 *   100  bad usage, not under srun, a bad launch.json or an environment
 *        that does not fit it, or the run was claimed already: nothing was
 *        started (a result says so when the run directory could be made
 *        and claimed)
 *   111  system error, as in local mode
 *   --slurm-verdict: 0, 1 or 143 as above; 100 bad usage or environment
 */
#include "tools/shim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* ---- small helpers ---- */

static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t wall_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}
int64_t mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

int write_all(int fd, const void *buf, size_t n)
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

const char *signame(int sig, char *buf, size_t n)
{
	const char *abbrev = sigabbrev_np(sig);
	if (abbrev)
		snprintf(buf, n, "SIG%s", abbrev);
	else
		snprintf(buf, n, "signal %d", sig);
	return buf;
}

/* Messages go on one line, in valid UTF-8, whatever argv[0] held. */
void msg_clean(char *s)
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
void ready_say(struct shim *s, const char *line)
{
	if (s->ready_fd < 0)
		return;
	(void)write_all(s->ready_fd, line, strlen(line));
	close(s->ready_fd);
	s->ready_fd = -1;
}

/* A failure before anything started: stderr, and "error ..." to fd 3. */
__attribute__((format(printf, 3, 4))) int fail(struct shim *s, int code, const char *fmt, ...)
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

/* ---- launch.json ---- */

/* launch.json: shimproto.c decodes what all modes share, shim_slurm.c
 * the "slurm" object (in slurm mode cwd may be "" or absent). */
static int launch_parse(struct shim *s, const char *buf, size_t len, char *err, size_t errlen)
{
	if (jf_shim_launch_decode(&s->l, buf, len, s->slurm, err, errlen) < 0)
		return -1;
	return s->slurm ? launch_parse_slurm(&s->l, &s->sl, err, errlen) : 0;
}

/*
 * The whole of a regular file under SHIM_FILE_MAX bytes at path (relative to
 * dirfd), NUL-terminated; the caller frees it.  NULL with errno (EFBIG for
 * one too big or not regular).
 */
char *read_small(int dirfd, const char *path, size_t *lenp)
{
	char *buf = NULL;
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (!S_ISREG(st.st_mode) || st.st_size > SHIM_FILE_MAX) {
		errno = EFBIG;
		goto fail;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		goto fail;
	size_t len = 0;
	while (len < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + len, (size_t)st.st_size - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	*lenp = len;
	return buf;

fail : {
	int e = errno;
	free(buf);
	close(fd);
	errno = e;
	return NULL;
}
}

int launch_read(struct shim *s, int dirfd, char *err, size_t errlen)
{
	size_t len;
	char *buf = read_small(dirfd, "launch.json", &len);
	if (!buf) {
		if (errno == EFBIG)
			snprintf(err, errlen, "launch.json: not a regular file under %d bytes",
				 SHIM_FILE_MAX);
		else if (errno == ENOMEM)
			snprintf(err, errlen, "launch.json: out of memory");
		else
			snprintf(err, errlen, "launch.json: %s", strerror(errno));
		return -1;
	}
	int rc = launch_parse(s, buf, len, err, errlen);
	free(buf);
	return rc;
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

int prepare(struct shim *s, char *err, size_t errlen)
{
	/* as root (also setuid root: real ids a user's, effective 0), always
	 * become the task's user: never leave it the daemon's rights */
	if (geteuid() == 0 && (s->l.uid != 0 || s->l.gid != 0 || getuid() != 0 || getgid() != 0)) {
		s->drop = true;
		/*
		 * The supplementary groups come resolved in launch.json: the shim
		 * reads no user database (it is linked statically, and glibc's
		 * NSS would need the shared libraries of its own build).  Without
		 * them (a launch.json of the Slurm backend, whose jobs already run
		 * as their user) the process keeps only its primary group:
		 * child_run passes launch.json's list, empty then, to setgroups.
		 */
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
	const char *p = strrchr(buf, ')'); /* the command may hold spaces */
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
int claim(struct shim *s)
{
	char line[128];
	int n;
	if (s->slurm)
		n = snprintf(line, sizeof(line), "slurm:%" PRIu64 ":%" PRIu64 " %" PRId64 "\n",
			     s->env.job_id, s->env.node, s->start_ms);
	else
		n = snprintf(line, sizeof(line), "local:%d:%llu %" PRId64 "\n", (int)getpid(),
			     self_starttime(), wall_ms());
	int fd = openat(s->dirfd, "claim", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno == EEXIST ? 1 : -1;
	int rc = write_all(fd, line, (size_t)n) == 0 && fsync(fd) == 0 ? 0 : -1;
	if (rc == 0) {
		fsync(s->dirfd);
		s->alive_fd = fd; /* the heartbeat (run_loop) */
	} else {
		close(fd);
	}
	return rc;
}

/* ---- the commands ---- */

int signals_block(struct shim *s, const int *sigs, size_t n)
{
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < n; i++)
		sigaddset(&set, sigs[i]);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
	    (s->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
		return -1;
	return 0;
}

/* 0..2 open, on /dev/null if they were not. */
void std_fds(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0) {
			int null = open("/dev/null", O_RDWR);
			if (null >= 0 && null != fd) {
				dup2(null, fd);
				close(null);
			}
		}
	}
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
	if (s->notes_fd >= 0)
		close(s->notes_fd);
	free(s->logbuf);
	free(s->chunk);
	for (size_t i = 0; i < s->nvars; i++)
		free(s->vars[i]);
	for (size_t i = 0; i < SHIM_MAX_PROCS; i++)
		free(s->cuda[i]);
	jf_shim_launch_release(&s->l);
}

void node_start(struct shim *s)
{
	char err[SHIM_MSG_MAX];
	limits_setup(s);
	if (ctr_setup(s, err, sizeof(err)) < 0) {
		/* nothing runs: a start failure of the first container */
		for (size_t i = 0; i < s->l.nprocs && !s->start_failed; i++)
			if (s->procs[i].ctr || !s->nctr) {
				s->start_failed = true;
				s->failed_proc = i;
				s->failed_code = 127;
				msg_clean(err);
				snprintf(s->start_msg, sizeof(s->start_msg), "%s", err);
				s->procs[i].failed = true;
				proc_note(s, &s->procs[i], err);
			}
	}
	for (size_t i = 0; i < s->l.nprocs && !s->start_failed; i++) {
		if (s->procs[i].ctr)
			ctr_create(s, i);
		else
			proc_start(s, i);
	}
	if (s->nctr && !s->start_failed)
		ctr_start_all(s);
	if (s->start_failed)
		forward(s, SIGKILL);
	else
		storage_arm(s);
}

void node_tidy(struct shim *s)
{
	ctr_cleanup(s);
	limits_remove(s);
}

/* jobfs-shim RUN_DIR: the local backend's node (see the top). */
static int cmd_local(struct shim *s, int argc, char **argv)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGUSR1 };
	char err[SHIM_MSG_MAX];
	int code;

	if (fcntl(READY_FD, F_SETFD, FD_CLOEXEC) == 0)
		s->ready_fd = READY_FD;
	close_inherited();
	std_fds();

	if (argc != 2 || argv[1][0] == '\0')
		return fail(s, SHIM_EXIT_USAGE, "usage: jobfs-shim RUN_DIR");
	setsid();
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	umask(022);

	if (signals_block(s, sigs, sizeof(sigs) / sizeof(sigs[0])) < 0)
		return fail(s, SHIM_EXIT_SYSTEM, "signalfd: %s", strerror(errno));
	s->dirfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0)
		return fail(s, SHIM_EXIT_USAGE, "%s: %s", argv[1], strerror(errno));
	if (launch_read(s, s->dirfd, err, sizeof(err)) < 0)
		return fail(s, SHIM_EXIT_USAGE, "%s", err);
	if (prepare(s, err, sizeof(err)) < 0)
		return fail(s, SHIM_EXIT_SYSTEM, "%s", err);
	snprintf(s->run_dir, sizeof(s->run_dir), "%s", argv[1]);
	/* images before the claim: a pull is never part of the run */
	if (ctr_pull(s) < 0)
		return SHIM_EXIT_USAGE;

	switch (claim(s)) {
	case 0:
		break;
	case 1:
		return fail(s, SHIM_EXIT_USAGE,
			    "cancelled: the daemon gave this attempt up "
			    "before it started");
	default:
		return fail(s, SHIM_EXIT_SYSTEM, "claim: %s", strerror(errno));
	}
	node_start(s);
	report_started(s);

	if (run_loop(s) < 0) {
		fprintf(stderr, "jobfs-shim: poll: %s\n", strerror(errno));
		forward(s, SIGKILL);
		node_tidy(s);
		return SHIM_EXIT_SYSTEM;
	}
	code = write_result(s) == 0 ? SHIM_EXIT_OK : SHIM_EXIT_SYSTEM;
	node_tidy(s);
	if (s->cg[0])
		rmdir(s->cg); /* empty now: every process was reaped */
	return code;
}

/* The modes named by their first argument; anything else is the local one. */
static const struct {
	const char *name;
	int (*run)(struct shim *s, const char *batch_dir);
} commands[] = {
	{ "--slurm", cmd_slurm },
	{ "--slurm-verdict", cmd_verdict },
};

int main(int argc, char **argv)
{
	static struct shim shim;
	struct shim *s = &shim;
	int code = -1;

	s->dirfd = s->sfd = s->ready_fd = s->alive_fd = s->notes_fd = -1;
	s->fout.fd = s->ferr.fd = s->flogs.fd = -1;
	s->timeout_at = s->kill_at = s->evict_at = -1;
	for (size_t i = 0; i < SHIM_MAX_PROCS; i++)
		s->procs[i].out.fd = s->procs[i].err.fd = -1;

	for (size_t k = 0; argc >= 2 && k < sizeof(commands) / sizeof(commands[0]); k++) {
		if (strcmp(argv[1], commands[k].name) != 0)
			continue;
		if (argc != 3 || argv[2][0] == '\0') {
			std_fds();
			code = fail(s, SHIM_EXIT_USAGE, "usage: jobfs-shim %s BATCH_DIR",
				    commands[k].name);
		} else {
			code = commands[k].run(s, argv[2]);
		}
		break;
	}
	if (code < 0)
		code = cmd_local(s, argc, argv);
	shim_release(s);
	return code;
}
