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
 * SLURM MODE (jobfs-shim --slurm BATCH_DIR)
 *
 * The Slurm backend (backends/slurm) makes each group of tasks one job
 * array.  Each element's batch script runs, on each of its K nodes (one
 * srun task per node), "jobfs-shim --slurm BATCH_DIR", then on the batch
 * host "exec jobfs-shim --slurm-verdict BATCH_DIR".
 *
 * - BATCH_DIR/launch.json is the local format, where cwd may be "" (then
 *   RUN_DIR/work), plus "slurm": {"first_index": task index of element 0,
 *   "tasks": JOB_TASK_COUNT, "attempt_base", "node_index": bool,
 *   "timeout_ms" (0 = none), "kill_grace_ms", "ckpt_root" (an absolute
 *   path, or "" for no JOB_CHECKPOINT_DIR), "master_port_base" (1..45536),
 *   "gpu_slots" (optional: one entry per proc, null for Slurm's GPUs as
 *   they are, or the positions in Slurm's CUDA_VISIBLE_DEVICES that proc
 *   gets, each once, [] for none)}.  All but gpu_slots are required.
 * - From Slurm's environment: idx = first_index + SLURM_ARRAY_TASK_ID
 *   (absent: 0), restart = SLURM_RESTART_COUNT (absent: 0), node =
 *   SLURM_NODEID, nodes = SLURM_JOB_NUM_NODES, else SLURM_NNODES.
 *   SLURM_JOB_ID and SLURM_NODEID must be there (else: not under srun).
 *   Every value is checked (decimal, in range: idx < tasks, node < nodes)
 *   and a bad one is refused with a message, never passed on.
 * - The run directory is BATCH_DIR/<idx>/<restart>/<node>/ (made, 0755).
 *   From there on the shim is the local mode with that RUN_DIR (claim,
 *   heartbeat, stdout/stderr/logs and rotation, started, result, the uid
 *   and gid change as root), except: the claim holds
 *   "slurm:SLURM_JOB_ID:NODE START_MS"; there is no ready pipe (fd 3 and
 *   up are left alone but close-on-exec); the shim stays in Slurm's
 *   session and process group (no setsid), so Slurm's signals reach it;
 *   the procs' cwd is RUN_DIR/work (0700, the launch user's) unless
 *   launch.json names one.
 * - Node 0, right after its claim and before starting anything, writes the
 *   hint BATCH_DIR/starts/<idx>.<restart>: "SLURM_JOB_ID START_MS\n" (the
 *   claim's time), through starts/.<idx>.<restart>.tmp renamed; not
 *   fsynced: it only tells the polling daemon early that the element began.
 * - Environment of each proc: its envp, then set over it JOB_TASK_INDEX
 *   (idx), JOB_TASK_COUNT (tasks), JOB_NODE_INDEX (node), JOB_NODE_COUNT
 *   (nodes), JOB_COMPLETION_INDEX (only with node_index: node when nodes
 *   > 1, else idx), JOB_ATTEMPT (attempt_base + restart), JOB_MASTER_ADDR
 *   (SLURM_LAUNCH_NODE_IPADDR, else the first host of SLURM_JOB_NODELIST:
 *   "n[1-3],m2" -> "n1", "gpu[07,09]" -> "gpu07"), JOB_MASTER_PORT
 *   (master_port_base + (J * 131 + idx) % 20000, J = SLURM_ARRAY_JOB_ID,
 *   else SLURM_JOB_ID), JOB_CHECKPOINT_DIR (ckpt_root/<idx>, made 0700 and
 *   as root given to the launch user; it outlives retries and requeues)
 *   and CUDA_VISIBLE_DEVICES (the proc's gpu_slots positions of Slurm's
 *   list: "4,5,6,7" and [1,2] -> "5,6"; else Slurm's value as it is, and
 *   unset stays unset).
 * - Timeout (timeout_ms > 0): at start + timeout_ms, SIGTERM to every
 *   running proc's process group, SIGKILL kill_grace_ms later; the result
 *   says "timed_out": true and keeps the procs' exit codes (143, 137).
 * - SIGTERM, SIGINT and SIGHUP from outside (Slurm preempting or
 *   cancelling, srun passing a signal on) are forwarded as they come; what
 *   still runs kill_grace_ms after the first is SIGKILLed, so the result is
 *   written before Slurm's own SIGKILL when Slurm waits longer.  The first
 *   that came while a proc ran is the result's "signalled": "TERM" (or
 *   "INT", "HUP").  SIGKILL cannot be caught: then there is no result and
 *   the daemon reports the node lost.
 * - The result adds "timed_out", "signalled" ("" for none) and
 *   "own_failure": the node failed on its own, by a start failure, a
 *   timeout, or a proc that ended non-zero before an outside SIGTERM came
 *   (after one, any ending is its doing; an outside SIGINT or SIGHUP
 *   excuses nothing).  Slurm signals every process of the step, so a proc
 *   may die of the SIGTERM meant for all just before the shim reads its
 *   own: a proc that ends by SIGTERM or with 143 that the shim did not
 *   cause is judged when the node is done, and the shim waits up to
 *   SLURM_TERM_WAIT_MS (0.5 s) for its own SIGTERM before calling it the
 *   proc's own failure.
 * - A setup failure once the run directory is made and claimed (a bad
 *   launch.json whose first_index still gives the directory, an
 *   environment that does not fit it: a GPU position Slurm did not give, a
 *   bad node list) still writes `started` ("failed ...") and a result:
 *   start_failed, exit_code 127, the message, "procs": [].
 *
 * VERDICT (jobfs-shim --slurm-verdict BATCH_DIR, on the batch host after
 * srun returned): with idx, restart and nodes from the same environment
 * and first_index from launch.json, it reads
 * BATCH_DIR/<idx>/<restart>/<node>/result for node 0 .. nodes-1 and exits
 * 1 if a node failed on its own (own_failure, or a non-zero exit_code not
 * explained by an outside SIGTERM, or a result that cannot be read), else
 * 143 if a node was stopped by an outside SIGTERM (nodes without a result
 * then were killed with it), else 1 if a node has no result (lost), else 0.
 * When not 0 it says why in one line on stderr.
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
#include <stddef.h>
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

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

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

/* slurm mode */
#define SLURM_MAX_GPUS 64          /* gpu_slots positions per proc, Slurm's list */
#define SLURM_GPU_ID_MAX 64        /* one entry of CUDA_VISIBLE_DEVICES */
#define SLURM_HOST_MAX 255
#define SLURM_MAX_NODES 100000
#define SLURM_MAX_COUNT ((int64_t)INT32_MAX)    /* tasks, indices, attempts */
#define SLURM_MAX_MS ((int64_t)1 << 42)        /* about 139 years */
#define SLURM_PORT_SPAN 20000
#define SLURM_ENV_MAX 4096         /* a Slurm variable we pass on or parse */
#define SLURM_NVARS 10             /* JOB_* variables (CUDA_VISIBLE_DEVICES is per proc) */
#define SLURM_TERM_WAIT_MS 500     /* for the shim's SIGTERM after a proc's (run_loop) */

/* ---- launch.json ---- */

struct launch_proc {
	const char *name;
	char **argv;               /* NULL-terminated; strings owned by launch.root */
	char **envp;
};

/* launch.json's "slurm" object (slurm mode only; see the top). */
struct launch_slurm {
	int64_t first_index;
	int64_t tasks;
	int64_t attempt_base;
	bool node_index;
	int64_t timeout_ms;        /* 0 = none */
	int64_t kill_grace_ms;
	const char *ckpt_root;     /* "" = no checkpoint directory */
	int64_t master_port_base;
	bool has_slots[SHIM_MAX_PROCS];    /* gpu_slots names that proc's GPUs */
	size_t nslots[SHIM_MAX_PROCS];
	int slots[SHIM_MAX_PROCS][SLURM_MAX_GPUS];
};

struct launch {
	json_t *root;
	uid_t uid;
	gid_t gid;
	const char *cwd;           /* slurm mode: NULL = RUN_DIR/work */
	int64_t log_cap;
	int *cpus;
	size_t ncpus;
	struct launch_proc procs[SHIM_MAX_PROCS];
	size_t nprocs;
	struct launch_slurm slurm;
};

/* What Slurm's environment says about this node (slurm_env_read). */
struct slurm_env {
	uint64_t array_task;       /* SLURM_ARRAY_TASK_ID, 0 when absent */
	uint64_t restart;          /* SLURM_RESTART_COUNT, 0 when absent */
	uint64_t node;             /* SLURM_NODEID */
	uint64_t nnodes;           /* SLURM_JOB_NUM_NODES or SLURM_NNODES; 0 = absent */
	uint64_t job_id;           /* SLURM_JOB_ID */
	uint64_t port_job;         /* SLURM_ARRAY_JOB_ID, else SLURM_JOB_ID */
	const char *nodelist;      /* SLURM_JOB_NODELIST or NULL */
	const char *launch_ip;     /* SLURM_LAUNCH_NODE_IPADDR, NULL when unset or empty */
	const char *cuda;          /* CUDA_VISIBLE_DEVICES or NULL */
	const char *nnodes_var;    /* the name nnodes came from, for messages */
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

	/* slurm mode (all inert in local mode: the timers stay -1) */
	bool slurm;
	bool setup_failed;         /* nothing started: the result says start_msg, 127 */
	struct slurm_env env;
	int64_t idx;               /* task index */
	int64_t timeout_at;        /* mono ms: SIGTERM the procs (timeout); -1 none */
	int64_t kill_at;           /* mono ms: SIGKILL what still runs; -1 none */
	bool timed_out;
	int outside_sig;           /* first SIGTERM/SIGINT/SIGHUP from outside while a proc ran */
	bool outside_term;         /* a SIGTERM from outside came while a proc ran */
	bool own_failure;          /* see the top: the node failed on its own */
	bool term_suspect;         /* a proc ended by a SIGTERM the shim did not send */
	char *vars[SLURM_NVARS];   /* "JOB_...=..." for every proc */
	size_t nvars;
	char *cuda[SHIM_MAX_PROCS]; /* "CUDA_VISIBLE_DEVICES=..." per proc, or NULL */
	char work[PATH_MAX];       /* the procs' cwd when launch.json names none */
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

static int launch_parse_slurm(struct launch *l, char *err, size_t errlen);

/* slurm: the "slurm" object is read too, and cwd may be "" or absent. */
static int launch_parse(struct launch *l, const char *buf, size_t len, bool slurm,
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
	json_t *cwd = json_object_get(root, "cwd");
	l->cwd = json_string_value(cwd);
	if (slurm && (!cwd || (l->cwd && !l->cwd[0]))) {
		l->cwd = NULL;           /* RUN_DIR/work */
	} else if (!l->cwd || !l->cwd[0]) {
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
	return slurm ? launch_parse_slurm(l, err, errlen) : 0;
}

/* slurm.first_index alone, for a launch.json that is bad elsewhere. */
static bool slurm_first_index(json_t *root, int64_t *out)
{
	json_int_t x;
	json_t *sl = json_object_get(root, "slurm");
	if (!json_is_object(sl) || !get_int(sl, "first_index", SLURM_MAX_COUNT, &x))
		return false;
	*out = x;
	return true;
}

static int launch_parse_slurm(struct launch *l, char *err, size_t errlen)
{
	struct launch_slurm *ls = &l->slurm;
	json_t *sl = json_object_get(l->root, "slurm");
	json_int_t x;
	if (!json_is_object(sl)) {
		snprintf(err, errlen, "launch.json: slurm: must be an object");
		return -1;
	}
	static const struct {
		const char *key;
		int64_t min, max;
		size_t off;
	} ints[] = {
		{ "first_index", 0, SLURM_MAX_COUNT, offsetof(struct launch_slurm, first_index) },
		{ "tasks", 1, SLURM_MAX_COUNT, offsetof(struct launch_slurm, tasks) },
		{ "attempt_base", 0, SLURM_MAX_COUNT, offsetof(struct launch_slurm, attempt_base) },
		{ "timeout_ms", 0, SLURM_MAX_MS, offsetof(struct launch_slurm, timeout_ms) },
		{ "kill_grace_ms", 0, SLURM_MAX_MS, offsetof(struct launch_slurm, kill_grace_ms) },
		{ "master_port_base", 1, 65535 - (SLURM_PORT_SPAN - 1),
		  offsetof(struct launch_slurm, master_port_base) },
	};
	for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]); k++) {
		if (!get_int(sl, ints[k].key, ints[k].max, &x) || x < ints[k].min) {
			snprintf(err, errlen, "launch.json: slurm.%s: must be an integer from %" PRId64
				 " to %" PRId64, ints[k].key, ints[k].min, ints[k].max);
			return -1;
		}
		*(int64_t *)((char *)ls + ints[k].off) = x;
	}
	json_t *ni = json_object_get(sl, "node_index");
	if (!json_is_boolean(ni)) {
		snprintf(err, errlen, "launch.json: slurm.node_index: must be true or false");
		return -1;
	}
	ls->node_index = json_is_true(ni);
	ls->ckpt_root = json_string_value(json_object_get(sl, "ckpt_root"));
	if (!ls->ckpt_root || (ls->ckpt_root[0] && ls->ckpt_root[0] != '/') ||
	    strlen(ls->ckpt_root) > PATH_MAX - 32) {
		snprintf(err, errlen, "launch.json: slurm.ckpt_root: must be \"\" or an absolute "
			 "path under %d bytes", PATH_MAX - 32);
		return -1;
	}
	json_t *slots = json_object_get(sl, "gpu_slots");
	if (!slots || json_is_null(slots))
		return 0;
	if (!json_is_array(slots) || json_array_size(slots) != l->nprocs) {
		snprintf(err, errlen, "launch.json: slurm.gpu_slots: must be an array of %zu "
			 "entries, one per proc", l->nprocs);
		return -1;
	}
	for (size_t i = 0; i < l->nprocs; i++) {
		json_t *a = json_array_get(slots, i);
		if (json_is_null(a))
			continue;
		size_t n = json_array_size(a);
		if (!json_is_array(a) || n > SLURM_MAX_GPUS) {
			snprintf(err, errlen, "launch.json: slurm.gpu_slots[%zu]: must be null or "
				 "an array of at most %d GPU positions", i, SLURM_MAX_GPUS);
			return -1;
		}
		ls->has_slots[i] = true;
		ls->nslots[i] = n;
		for (size_t k = 0; k < n; k++) {
			json_t *v = json_array_get(a, k);
			json_int_t pos = json_is_integer(v) ? json_integer_value(v) : -1;
			if (pos < 0 || pos >= SLURM_MAX_GPUS) {
				snprintf(err, errlen, "launch.json: slurm.gpu_slots[%zu][%zu]: must "
					 "be a position from 0 to %d", i, k, SLURM_MAX_GPUS - 1);
				return -1;
			}
			for (size_t j = 0; j < k; j++)
				if (ls->slots[i][j] == (int)pos) {
					snprintf(err, errlen, "launch.json: slurm.gpu_slots[%zu]: "
						 "position %d twice", i, (int)pos);
					return -1;
				}
			ls->slots[i][k] = (int)pos;
		}
	}
	return 0;
}

/*
 * The whole of a regular file under SHIM_FILE_MAX bytes at path (relative to
 * dirfd), NUL-terminated; the caller frees it.  NULL with errno (EFBIG for
 * one too big or not regular).
 */
static char *read_small(int dirfd, const char *path, size_t *lenp)
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

fail: {
	int e = errno;
	free(buf);
	close(fd);
	errno = e;
	return NULL;
}
}

static int launch_read(struct shim *s, int dirfd, char *err, size_t errlen)
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
	int rc = launch_parse(&s->l, buf, len, s->slurm, err, errlen);
	free(buf);
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
	if (chdir(s->l.cwd ? s->l.cwd : s->work) < 0)
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
		proc_start_failed(s, i, code, "chdir %s: %s", s->l.cwd ? s->l.cwd : s->work,
				  strerror(ce->err));
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
		/*
		 * Before any outside SIGTERM, a failure is the node's own.  But
		 * Slurm signals every process of the step, the procs too, so a
		 * proc may end by a SIGTERM meant for all of us just before the
		 * shim reads its own: such an ending (SIGTERM or 143 that the
		 * shim did not cause) waits for the verdict (run_loop).
		 */
		if (p->exit_code != 0 && !s->outside_term) {
			if (s->slurm && !s->timed_out &&
			    (p->term_signal == SIGTERM || p->exit_code == 128 + SIGTERM))
				s->term_suspect = true;
			else
				s->own_failure = true;
		}
		p->running = false;
		if (--s->nrunning == 0)
			s->end_ms = wall_ms();
	}
}

/*
 * slurm mode: SIGTERM, SIGINT or SIGHUP from outside.  It is passed on as
 * it came; the first one arms the SIGKILL kill_grace_ms later, unless a
 * timeout armed it already.  Only what comes while a proc runs counts.
 */
static void outside_stop(struct shim *s, int sig)
{
	if (s->nrunning == 0 && !s->term_suspect)
		return;
	if (!s->outside_sig)
		s->outside_sig = sig;
	if (sig == SIGTERM)
		s->outside_term = true;
	if (s->nrunning == 0)
		return;
	forward(s, sig);
	if (s->kill_at < 0)
		s->kill_at = mono_ms() + s->l.slurm.kill_grace_ms;
}

/* slurm mode: the timeout and the SIGKILL after the grace, when due. */
static void timers_fire(struct shim *s, int64_t now)
{
	if (s->nrunning == 0)
		return;
	if (s->timeout_at >= 0 && now >= s->timeout_at) {
		s->timeout_at = -1;
		if (!s->outside_sig) {   /* not already on its way out */
			s->timed_out = true;
			forward(s, SIGTERM);
			if (s->kill_at < 0)
				s->kill_at = now + s->l.slurm.kill_grace_ms;
		}
	}
	if (s->kill_at >= 0 && now >= s->kill_at) {
		s->kill_at = -1;
		forward(s, SIGKILL);
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
		case SIGINT:   /* in the set in slurm mode only */
		case SIGHUP:
			if (s->slurm)
				outside_stop(s, (int)si.ssi_signo);
			else
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
	int64_t deadline = -1, beat = mono_ms() + SHIM_BEAT_MS, suspect_wait = -1;

	for (;;) {
		/* a sign of life: if we are killed while no daemon watches, the
		 * next one bills up to the claim's mtime (local.c: run_finish) */
		if (s->alive_fd >= 0 && mono_ms() >= beat) {
			futimens(s->alive_fd, NULL);
			beat = mono_ms() + SHIM_BEAT_MS;
		}
		if (s->nrunning == 0) {
			if (!streams_open(s)) {
				/* slurm mode: the outside SIGTERM that may explain an
				 * ending (reap_children) gets a moment to arrive */
				if (!s->term_suspect || s->outside_term)
					break;
				if (suspect_wait < 0)
					suspect_wait = mono_ms() + SLURM_TERM_WAIT_MS;
				else if (mono_ms() >= suspect_wait)
					break;
			}
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
		int64_t now = mono_ms();
		timers_fire(s, now);
		int64_t timers[] = { s->nrunning > 0 ? s->timeout_at : -1,
				     s->nrunning > 0 ? s->kill_at : -1, suspect_wait };
		for (int k = 0; k < 3; k++)
			if (timers[k] >= 0 && timers[k] - now < timeout)
				timeout = timers[k] - now > 0 ? (int)(timers[k] - now) : 0;
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

/* slurm mode: what srun left open from fd 3 up stays ours, not the procs'. */
static void cloexec_inherited(void)
{
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	long max = sysconf(_SC_OPEN_MAX);
	for (long fd = 3; fd < (max > 0 ? max : 1024); fd++)
		fcntl((int)fd, F_SETFD, FD_CLOEXEC);
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

/* slurm mode: the verdict of the node (see the top); after run_loop. */
static void slurm_conclude(struct shim *s, int node_exit)
{
	if (s->start_failed || s->setup_failed || s->timed_out ||
	    (s->term_suspect && !s->outside_term) || (!s->outside_term && node_exit != 0))
		s->own_failure = true;
}

static int slurm_exit_code(const struct shim *s)
{
	if (s->outside_term && !s->own_failure)
		return 128 + SIGTERM;
	return s->own_failure ? 1 : 0;
}

static int write_result(struct shim *s)
{
	char msg[SHIM_MSG_MAX], sbuf[32];
	int rc = -1;
	json_t *root = NULL, *procs = json_array();
	const struct proc *node = NULL;
	int exit_code = 0, term_signal = 0;

	if (s->end_ms == 0)
		s->end_ms = wall_ms();
	if (s->setup_failed) {
		exit_code = 127;   /* nothing was started: "procs" is [] */
		snprintf(msg, sizeof(msg), "%s", s->start_msg);
	} else if (s->start_failed) {
		/* Whatever signal reached it on its way to _exit, it never ran. */
		s->procs[s->failed_proc].exit_code = s->failed_code;
		s->procs[s->failed_proc].term_signal = 0;
		node = &s->procs[s->failed_proc];
		snprintf(msg, sizeof(msg), "%s", s->start_msg);
	} else {
		for (size_t i = 0; i < s->l.nprocs && !node; i++)
			if (s->procs[i].exit_code != 0)
				node = &s->procs[i];
		char what[64], why[64] = "";
		if (!node)
			snprintf(what, sizeof(what), "exit 0");
		else if (node->term_signal)
			snprintf(what, sizeof(what), "killed by %s",
				 signame(node->term_signal, sbuf, sizeof(sbuf)));
		else
			snprintf(what, sizeof(what), "exit %d", node->exit_code);
		if (s->timed_out)
			snprintf(why, sizeof(why), "timed out after %" PRId64 " ms: ",
				 s->l.slurm.timeout_ms);
		else if (s->outside_sig)
			snprintf(why, sizeof(why), "stopped by %s from outside: ",
				 signame(s->outside_sig, sbuf, sizeof(sbuf)));
		if (node && s->l.nprocs > 1)
			snprintf(msg, sizeof(msg), "%s%s: %s", why, node->spec->name, what);
		else
			snprintf(msg, sizeof(msg), "%s%s", why, what);
	}
	if (node) {
		exit_code = node->exit_code;
		term_signal = node->term_signal;
	}
	if (s->slurm)
		slurm_conclude(s, exit_code);
	msg_clean(msg);
	if (!procs)
		goto out;
	for (size_t i = 0; i < s->l.nprocs && !s->setup_failed; i++) {
		const struct proc *p = &s->procs[i];
		json_t *o = json_pack("{s:s,s:i,s:i}", "name", p->spec->name,
				      "exit_code", p->exit_code, "signal", p->term_signal);
		if (!o || json_array_append_new(procs, o) < 0)
			goto out;
	}
	root = json_pack("{s:i,s:i,s:I,s:I,s:s,s:b,s:O}",
			 "exit_code", exit_code,
			 "signal", term_signal,
			 "start_ms", (json_int_t)s->start_ms,
			 "end_ms", (json_int_t)s->end_ms,
			 "message", msg,
			 "start_failed", s->start_failed || s->setup_failed,
			 "procs", procs);
	if (!root)
		goto out;
	if (s->slurm) {
		const char *sig = s->outside_sig ? sigabbrev_np(s->outside_sig) : "";
		if (json_object_set_new(root, "timed_out", json_boolean(s->timed_out)) < 0 ||
		    json_object_set_new(root, "signalled", json_string(sig ? sig : "")) < 0 ||
		    json_object_set_new(root, "own_failure", json_boolean(s->own_failure)) < 0)
			goto out;
	}
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

/* ---- slurm mode: environment, directories, hint ---- */

/* A decimal number and nothing else, at most max. */
static bool parse_u64(const char *str, uint64_t max, uint64_t *out)
{
	if (!str || !str[0] || strlen(str) > 20)
		return false;
	uint64_t v = 0;
	for (const char *p = str; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		uint64_t d = (uint64_t)(*p - '0');
		if (d > max || v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

/* 1 set and read, 0 absent (*out untouched), -1 not a number up to max. */
static int env_num(const char *name, uint64_t max, uint64_t *out, char *err, size_t n)
{
	const char *v = getenv(name);
	if (!v)
		return 0;
	if (!parse_u64(v, max, out)) {
		snprintf(err, n, "%s: '%.40s' is not a number from 0 to %" PRIu64, name, v, max);
		return -1;
	}
	return 1;
}

/*
 * What names this node's run directory: SLURM_ARRAY_TASK_ID and
 * SLURM_RESTART_COUNT (absent: 0), and with node also SLURM_JOB_ID and
 * SLURM_NODEID, which only srun gives.
 */
static int slurm_env_read(struct slurm_env *e, bool node, char *err, size_t n)
{
	memset(e, 0, sizeof(*e));
	if (env_num("SLURM_ARRAY_TASK_ID", SLURM_MAX_COUNT, &e->array_task, err, n) < 0 ||
	    env_num("SLURM_RESTART_COUNT", SLURM_MAX_COUNT, &e->restart, err, n) < 0)
		return -1;
	if (!node)
		return 0;
	int r = env_num("SLURM_JOB_ID", UINT32_MAX, &e->job_id, err, n);
	if (r == 0 || (r > 0 && e->job_id == 0)) {
		snprintf(err, n, "SLURM_JOB_ID: not set: not under srun");
		return -1;
	}
	if (r < 0)
		return -1;
	r = env_num("SLURM_NODEID", SLURM_MAX_NODES - 1, &e->node, err, n);
	if (r == 0)
		snprintf(err, n, "SLURM_NODEID: not set: not under srun");
	return r > 0 ? 0 : -1;
}

/* The node count: SLURM_JOB_NUM_NODES, else SLURM_NNODES. */
static int slurm_env_nodes(struct slurm_env *e, char *err, size_t n)
{
	static const char *const names[] = { "SLURM_JOB_NUM_NODES", "SLURM_NNODES" };
	for (size_t k = 0; k < 2; k++) {
		int r = env_num(names[k], SLURM_MAX_NODES, &e->nnodes, err, n);
		if (r < 0)
			return -1;
		if (r > 0 && e->nnodes == 0) {
			snprintf(err, n, "%s: 0 nodes", names[k]);
			return -1;
		}
		if (r > 0) {
			e->nnodes_var = names[k];
			return 0;
		}
	}
	snprintf(err, n, "SLURM_JOB_NUM_NODES: not set (nor SLURM_NNODES)");
	return -1;
}

static bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_';
}

/*
 * The first host of a Slurm host list into out: "n1" -> n1, "n[1-3]" -> n1,
 * "gpu[07,09]" -> gpu07, "a1,b2" -> a1, "r[1-2]-n[3-4]" -> r1-n3.  -1 for
 * anything else.
 */
static int first_host(const char *list, char *out, size_t n)
{
	size_t o = 0;
	for (const char *p = list; *p && *p != ','; ) {
		if (*p != '[') {
			if (!host_char(*p) || o + 1 >= n)
				return -1;
			out[o++] = *p++;
			continue;
		}
		p++;
		size_t digits = 0;
		for (; *p >= '0' && *p <= '9'; p++, digits++) {
			if (o + 1 >= n)
				return -1;
			out[o++] = *p;
		}
		if (digits == 0)
			return -1;
		for (; *p && *p != ']'; p++)
			if (!(*p >= '0' && *p <= '9') && *p != '-' && *p != ',')
				return -1;
		if (*p != ']')
			return -1;
		p++;
	}
	if (o == 0)
		return -1;
	out[o] = '\0';
	return 0;
}

/* An address as srun gives it: IPv4, IPv6 (with a zone) or a host name. */
static bool addr_ok(const char *a)
{
	size_t len = strlen(a);
	if (len == 0 || len > SLURM_HOST_MAX)
		return false;
	for (const char *p = a; *p; p++)
		if (!host_char(*p) && *p != ':' && *p != '%')
			return false;
	return true;
}

/* mkdir -p path (relative to dirfd unless absolute), new ones with mode. */
static int mkdirs_at(int dirfd, const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdirat(dirfd, buf, mode) < 0 && errno != EEXIST)
			return -1;
		*p = c;
		if (c == '\0')
			return 0;
		while (p[1] == '/')
			p++;
		if (p[1] == '\0')
			return 0;
	}
}

/* Make name (a directory under dirfd, mode when new) the launch user's
 * when we are root; not through a symbolic link. */
static int dir_own(int dirfd, const char *name, mode_t mode, const struct launch *l)
{
	if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
		return -1;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = geteuid() == 0 ? fchown(fd, l->uid, l->gid) : 0;
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

/* "NAME=value" into s->vars; false on ENOMEM. */
__attribute__((format(printf, 2, 3)))
static bool var_add(struct shim *s, const char *fmt, ...)
{
	va_list ap;
	char *v = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&v, fmt, ap);
	va_end(ap);
	if (n < 0 || s->nvars >= SLURM_NVARS)
		return false;
	s->vars[s->nvars++] = v;
	return true;
}

/* Slurm's CUDA_VISIBLE_DEVICES as a list: ids[k] points into buf. */
static int cuda_split(const char *cuda, char *buf, size_t bufn, const char **ids, size_t *nids,
		      char *err, size_t n)
{
	*nids = 0;
	if (!cuda || !cuda[0])
		return 0;
	if (strlen(cuda) >= bufn) {
		snprintf(err, n, "CUDA_VISIBLE_DEVICES: longer than %zu bytes", bufn - 1);
		return -1;
	}
	strcpy(buf, cuda);
	for (char *p = buf, *q; p; p = q) {
		q = strchr(p, ',');
		if (q)
			*q++ = '\0';
		size_t len = strlen(p);
		bool ok = len > 0 && len <= SLURM_GPU_ID_MAX;
		for (const char *c = p; ok && *c; c++)
			ok = host_char(*c) || *c == ':' || *c == '/';
		if (!ok || *nids >= SLURM_MAX_GPUS) {
			snprintf(err, n, "CUDA_VISIBLE_DEVICES: '%.60s' is not a list of at most %d "
				 "GPU ids", cuda, SLURM_MAX_GPUS);
			return -1;
		}
		ids[(*nids)++] = p;
	}
	return 0;
}

/* CUDA_VISIBLE_DEVICES for each proc (see the top). */
static int slurm_gpus(struct shim *s, char *err, size_t n)
{
	const struct launch_slurm *ls = &s->l.slurm;
	char buf[SLURM_ENV_MAX];
	const char *ids[SLURM_MAX_GPUS];
	size_t nids = 0;
	bool split = false;

	for (size_t i = 0; i < s->l.nprocs; i++) {
		if (!ls->has_slots[i]) {
			if (!s->env.cuda)
				continue;   /* unset stays unset */
			if (strlen(s->env.cuda) >= SLURM_ENV_MAX) {
				snprintf(err, n, "CUDA_VISIBLE_DEVICES: longer than %d bytes",
					 SLURM_ENV_MAX - 1);
				return -1;
			}
			if (asprintf(&s->cuda[i], "CUDA_VISIBLE_DEVICES=%s", s->env.cuda) < 0) {
				s->cuda[i] = NULL;
				goto nomem;
			}
			continue;
		}
		if (!split) {
			if (cuda_split(s->env.cuda, buf, sizeof(buf), ids, &nids, err, n) < 0)
				return -1;
			split = true;
		}
		char val[SLURM_ENV_MAX] = "";
		size_t off = 0;
		for (size_t k = 0; k < ls->nslots[i]; k++) {
			size_t pos = (size_t)ls->slots[i][k];
			if (pos >= nids) {
				snprintf(err, n, "slurm.gpu_slots[%zu] (%s): GPU position %zu, but "
					 "Slurm gave %zu GPU%s (CUDA_VISIBLE_DEVICES=%.40s)", i,
					 s->l.procs[i].name, pos, nids, nids == 1 ? "" : "s",
					 s->env.cuda ? s->env.cuda : "unset");
				return -1;
			}
			/* fits: the ids come from a string under SLURM_ENV_MAX and
			 * each appears once */
			off += (size_t)snprintf(val + off, sizeof(val) - off, "%s%s",
						k ? "," : "", ids[pos]);
		}
		if (asprintf(&s->cuda[i], "CUDA_VISIBLE_DEVICES=%s", val) < 0) {
			s->cuda[i] = NULL;
			goto nomem;
		}
	}
	return 0;
nomem:
	snprintf(err, n, "out of memory");
	return -1;
}

/* Does entry ("NAME=...") set a variable that var ("NAME=...") sets? */
static bool same_var(const char *entry, const char *var)
{
	size_t len = (size_t)(strchr(var, '=') - var) + 1;
	return strncmp(entry, var, len) == 0;
}

/* Each proc's envp with the JOB_* variables and CUDA_VISIBLE_DEVICES over it. */
static int slurm_envp(struct shim *s, char *err, size_t n)
{
	for (size_t i = 0; i < s->l.nprocs; i++) {
		struct launch_proc *lp = &s->l.procs[i];
		size_t old = 0;
		while (lp->envp[old])
			old++;
		char **v = calloc(old + s->nvars + 2, sizeof(*v));
		if (!v) {
			snprintf(err, n, "out of memory");
			return -1;
		}
		size_t k = 0;
		for (size_t j = 0; j < old; j++) {
			bool over = s->cuda[i] && same_var(lp->envp[j], s->cuda[i]);
			for (size_t m = 0; m < s->nvars && !over; m++)
				over = same_var(lp->envp[j], s->vars[m]);
			if (!over)
				v[k++] = lp->envp[j];
		}
		for (size_t m = 0; m < s->nvars; m++)
			v[k++] = s->vars[m];
		if (s->cuda[i])
			v[k++] = s->cuda[i];
		free(lp->envp);   /* the strings are launch.root's, or ours */
		lp->envp = v;
	}
	return 0;
}

/*
 * Once the run is claimed: what launch.json and Slurm's environment must
 * agree on, the directories the procs get, and their environment.
 * run_dir is BATCH_DIR/<idx>/<restart>/<node> as the shim was given it.
 */
static int slurm_fit(struct shim *s, const char *run_dir, char *err, size_t n)
{
	struct slurm_env *e = &s->env;
	const struct launch_slurm *ls = &s->l.slurm;
	char addr[SLURM_HOST_MAX + 1], ckpt[PATH_MAX];

	if (slurm_env_nodes(e, err, n) < 0)
		return -1;
	if (e->node >= e->nnodes) {
		snprintf(err, n, "SLURM_NODEID %" PRIu64 ": not below %s %" PRIu64, e->node,
			 e->nnodes_var, e->nnodes);
		return -1;
	}
	if (s->idx >= ls->tasks) {
		snprintf(err, n, "task index %" PRId64 " (slurm.first_index %" PRId64
			 " + SLURM_ARRAY_TASK_ID %" PRIu64 "): not below slurm.tasks %" PRId64,
			 s->idx, ls->first_index, e->array_task, ls->tasks);
		return -1;
	}
	e->port_job = e->job_id;
	if (env_num("SLURM_ARRAY_JOB_ID", UINT32_MAX, &e->port_job, err, n) < 0)
		return -1;
	e->launch_ip = getenv("SLURM_LAUNCH_NODE_IPADDR");
	if (e->launch_ip && !e->launch_ip[0])
		e->launch_ip = NULL;
	e->nodelist = getenv("SLURM_JOB_NODELIST");
	e->cuda = getenv("CUDA_VISIBLE_DEVICES");
	if (e->launch_ip) {
		if (!addr_ok(e->launch_ip)) {
			snprintf(err, n, "SLURM_LAUNCH_NODE_IPADDR: '%.60s' is not an address",
				 e->launch_ip);
			return -1;
		}
		snprintf(addr, sizeof(addr), "%s", e->launch_ip);
	} else if (!e->nodelist) {
		snprintf(err, n, "SLURM_LAUNCH_NODE_IPADDR and SLURM_JOB_NODELIST: neither is set");
		return -1;
	} else if (first_host(e->nodelist, addr, sizeof(addr)) < 0) {
		snprintf(err, n, "SLURM_JOB_NODELIST: '%.60s' is not a host list", e->nodelist);
		return -1;
	}
	int64_t port = ls->master_port_base +
		       (int64_t)((e->port_job * 131 + (uint64_t)s->idx) % SLURM_PORT_SPAN);
	int64_t completion = e->nnodes > 1 ? (int64_t)e->node : s->idx;

	if (!s->l.cwd) {
		if (snprintf(s->work, sizeof(s->work), "%s/work", run_dir) >= (int)sizeof(s->work)) {
			snprintf(err, n, "run directory: path too long");
			return -1;
		}
		if (dir_own(s->dirfd, "work", 0700, &s->l) < 0) {
			snprintf(err, n, "%.180s: %s", s->work, strerror(errno));
			return -1;
		}
	}
	ckpt[0] = '\0';
	if (ls->ckpt_root[0]) {
		snprintf(ckpt, sizeof(ckpt), "%s/%" PRId64, ls->ckpt_root, s->idx);
		if (mkdirs_at(AT_FDCWD, ls->ckpt_root, 0755) < 0 ||
		    dir_own(AT_FDCWD, ckpt, 0700, &s->l) < 0) {
			snprintf(err, n, "checkpoint directory %.160s: %s", ckpt, strerror(errno));
			return -1;
		}
	}

	bool ok = var_add(s, "JOB_TASK_INDEX=%" PRId64, s->idx) &&
		  var_add(s, "JOB_TASK_COUNT=%" PRId64, ls->tasks) &&
		  var_add(s, "JOB_NODE_INDEX=%" PRIu64, e->node) &&
		  var_add(s, "JOB_NODE_COUNT=%" PRIu64, e->nnodes) &&
		  var_add(s, "JOB_ATTEMPT=%" PRId64, ls->attempt_base + (int64_t)e->restart) &&
		  var_add(s, "JOB_MASTER_ADDR=%s", addr) &&
		  var_add(s, "JOB_MASTER_PORT=%" PRId64, port) &&
		  (!ls->node_index || var_add(s, "JOB_COMPLETION_INDEX=%" PRId64, completion)) &&
		  (!ckpt[0] || var_add(s, "JOB_CHECKPOINT_DIR=%s", ckpt));
	if (!ok) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	if (slurm_gpus(s, err, n) < 0)
		return -1;
	return slurm_envp(s, err, n);
}

/* Node 0: BATCH_DIR/starts/<idx>.<restart> (see the top).  Advice only:
 * a failure is said on stderr and changes nothing else. */
static void hint_write(struct shim *s, int batch_fd)
{
	char name[64], tmp[72], line[64];
	if (s->env.node != 0)
		return;
	snprintf(name, sizeof(name), "%" PRId64 ".%" PRIu64, s->idx, s->env.restart);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	int n = snprintf(line, sizeof(line), "%" PRIu64 " %" PRId64 "\n", s->env.job_id,
			 s->start_ms);
	int dfd = -1, fd = -1;
	if (mkdirat(batch_fd, "starts", 0755) < 0 && errno != EEXIST)
		goto fail;
	dfd = openat(batch_fd, "starts", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		goto fail;
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, line, (size_t)n) < 0)
		goto fail;
	int rc = close(fd);
	fd = -1;
	if (rc < 0 || renameat(dfd, tmp, dfd, name) < 0)
		goto fail;
	close(dfd);
	return;
fail:
	fprintf(stderr, "jobfs-shim: starts/%s: %s\n", name, strerror(errno));
	if (fd >= 0)
		close(fd);
	if (dfd >= 0) {
		unlinkat(dfd, tmp, 0);
		close(dfd);
	}
}

/*
 * slurm mode, once the run is claimed, when nothing will start: the
 * message on stderr, `started` and the result say why.  Returns code, or
 * 111 when the result could not be written.
 */
__attribute__((format(printf, 3, 4)))
static int setup_fail(struct shim *s, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->start_msg, sizeof(s->start_msg), fmt, ap);
	va_end(ap);
	msg_clean(s->start_msg);
	fprintf(stderr, "jobfs-shim: %s\n", s->start_msg);
	s->setup_failed = s->start_failed = true;
	report_started(s);
	return write_result(s) == 0 ? code : SHIM_EXIT_SYSTEM;
}

/* ---- the commands ---- */

static int signals_block(struct shim *s, const int *sigs, size_t n)
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
static void std_fds(void)
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

/* jobfs-shim --slurm BATCH_DIR: one node of an element (see the top). */
static int cmd_slurm(struct shim *s, const char *batch)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1 };
	char err[SHIM_MSG_MAX], rel[96], run_dir[PATH_MAX];
	int batch_fd = -1, code;
	int64_t first;

	s->slurm = true;
	cloexec_inherited();
	std_fds();
	signal(SIGPIPE, SIG_IGN);
	umask(022);
	if (signals_block(s, sigs, sizeof(sigs) / sizeof(sigs[0])) < 0)
		return fail(s, SHIM_EXIT_SYSTEM, "signalfd: %s", strerror(errno));
	if (slurm_env_read(&s->env, true, err, sizeof(err)) < 0)
		return fail(s, SHIM_EXIT_USAGE, "%s", err);
	batch_fd = open(batch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (batch_fd < 0)
		return fail(s, SHIM_EXIT_USAGE, "%s: %s", batch, strerror(errno));

	/* A bad launch.json is said in the result too, if it names the run. */
	int lrc = launch_read(s, batch_fd, err, sizeof(err));
	if (lrc == 0)
		first = s->l.slurm.first_index;
	else if (!slurm_first_index(s->l.root, &first)) {
		code = fail(s, SHIM_EXIT_USAGE, "%s", err);
		goto out;
	}
	s->idx = first + (int64_t)s->env.array_task;
	snprintf(rel, sizeof(rel), "%" PRId64 "/%" PRIu64 "/%" PRIu64, s->idx, s->env.restart,
		 s->env.node);
	if (snprintf(run_dir, sizeof(run_dir), "%s/%s", batch, rel) >= (int)sizeof(run_dir)) {
		code = fail(s, SHIM_EXIT_USAGE, "%s: path too long", batch);
		goto out;
	}
	if (mkdirs_at(batch_fd, rel, 0755) < 0 ||
	    (s->dirfd = openat(batch_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		code = fail(s, SHIM_EXIT_SYSTEM, "%s: %s", run_dir, strerror(errno));
		goto out;
	}
	s->start_ms = wall_ms();
	switch (claim(s)) {
	case 0:
		break;
	case 1:
		code = fail(s, SHIM_EXIT_USAGE, "%s: claimed already: this run was started "
			    "before", run_dir);
		goto out;
	default:
		code = fail(s, SHIM_EXIT_SYSTEM, "%s/claim: %s", run_dir, strerror(errno));
		goto out;
	}
	hint_write(s, batch_fd);
	if (lrc < 0) {
		code = setup_fail(s, SHIM_EXIT_USAGE, "%s", err);
		goto out;
	}
	if (slurm_fit(s, run_dir, err, sizeof(err)) < 0) {
		code = setup_fail(s, SHIM_EXIT_USAGE, "%s", err);
		goto out;
	}
	if (prepare(s, err, sizeof(err)) < 0) {
		code = setup_fail(s, SHIM_EXIT_SYSTEM, "%s", err);
		goto out;
	}

	for (size_t i = 0; i < s->l.nprocs; i++)
		proc_start(s, i);
	if (s->start_failed)
		forward(s, SIGKILL);
	else if (s->l.slurm.timeout_ms > 0)
		s->timeout_at = mono_ms() + s->l.slurm.timeout_ms;
	report_started(s);

	if (run_loop(s) < 0) {
		fprintf(stderr, "jobfs-shim: poll: %s\n", strerror(errno));
		forward(s, SIGKILL);
		code = SHIM_EXIT_SYSTEM;
		goto out;
	}
	code = write_result(s) == 0 ? slurm_exit_code(s) : SHIM_EXIT_SYSTEM;
	if (s->cg[0])
		rmdir(s->cg);
out:
	if (batch_fd >= 0)
		close(batch_fd);
	return code;
}

/* What one node's result says, for the verdict. */
enum node_verdict {
	NV_OK,
	NV_FAILED,                 /* on its own, or unreadable */
	NV_TERM,                   /* stopped by an outside SIGTERM */
	NV_MISSING,
};

static enum node_verdict node_verdict(int batch_fd, const char *rel, char *why, size_t n)
{
	size_t len;
	json_error_t je;
	char *text = read_small(batch_fd, rel, &len);
	if (!text) {
		if (errno == ENOENT)
			return NV_MISSING;
		snprintf(why, n, "result: %s", errno == EFBIG ? "too big" : strerror(errno));
		return NV_FAILED;
	}
	json_t *r = json_loadb(text, len, 0, &je);
	free(text);
	json_t *code = json_object_get(r, "exit_code");
	if (!json_is_object(r) || !json_is_integer(code)) {
		snprintf(why, n, "result: not a result (%s)", r ? "no exit_code" : je.text);
		json_decref(r);
		return NV_FAILED;
	}
	const char *sig = json_string_value(json_object_get(r, "signalled"));
	const char *msg = json_string_value(json_object_get(r, "message"));
	bool term = sig && !strcmp(sig, "TERM");
	bool own = json_is_true(json_object_get(r, "own_failure")) ||
		   (json_integer_value(code) != 0 && !term);
	snprintf(why, n, "%s", msg && msg[0] ? msg : "no message");
	json_decref(r);
	return own ? NV_FAILED : term ? NV_TERM : NV_OK;
}

/* jobfs-shim --slurm-verdict BATCH_DIR: the element's exit status. */
static int cmd_verdict(struct shim *s, const char *batch)
{
	char err[SHIM_MSG_MAX], why[SHIM_MSG_MAX] = "";
	int64_t first;
	int batch_fd, code = 0;
	uint64_t bad_node = 0;
	enum node_verdict worst = NV_OK;

	std_fds();
	s->slurm = true;
	if (slurm_env_read(&s->env, false, err, sizeof(err)) < 0 ||
	    slurm_env_nodes(&s->env, err, sizeof(err)) < 0)
		return fail(s, SHIM_EXIT_USAGE, "verdict: %s", err);
	batch_fd = open(batch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (batch_fd < 0)
		return fail(s, SHIM_EXIT_USAGE, "verdict: %s: %s", batch, strerror(errno));
	/* only first_index matters here: what else is bad, the nodes said */
	if (launch_read(s, batch_fd, err, sizeof(err)) == 0)
		first = s->l.slurm.first_index;
	else if (!slurm_first_index(s->l.root, &first)) {
		fprintf(stderr, "jobfs-shim: verdict 1: %s\n", err);
		close(batch_fd);
		return 1;
	}
	int64_t idx = first + (int64_t)s->env.array_task;

	/* the first node of the worst kind: failed, then stopped, then missing */
	static const int rank[] = { [NV_OK] = 0, [NV_MISSING] = 1, [NV_TERM] = 2,
				    [NV_FAILED] = 3 };
	for (uint64_t node = 0; node < s->env.nnodes; node++) {
		char rel[128], w[SHIM_MSG_MAX];
		snprintf(rel, sizeof(rel), "%" PRId64 "/%" PRIu64 "/%" PRIu64 "/result", idx,
			 s->env.restart, node);
		enum node_verdict v = node_verdict(batch_fd, rel, w, sizeof(w));
		if (rank[v] > rank[worst]) {
			worst = v;
			bad_node = node;
			snprintf(why, sizeof(why), "%s", w);
		}
	}
	close(batch_fd);
	switch (worst) {
	case NV_OK:
		return 0;
	case NV_FAILED:
		code = 1;
		fprintf(stderr, "jobfs-shim: verdict 1: task %" PRId64 " run %" PRIu64 " node %"
			PRIu64 " failed: %s\n", idx, s->env.restart, bad_node, why);
		break;
	case NV_TERM: {
		static const char said[] = "stopped by SIGTERM from outside: ";
		const char *how = strncmp(why, said, sizeof(said) - 1) ? why : why + sizeof(said) - 1;
		code = 128 + SIGTERM;
		fprintf(stderr, "jobfs-shim: verdict 143: task %" PRId64 " run %" PRIu64 " node %"
			PRIu64 " was stopped by SIGTERM from outside (%s)\n", idx, s->env.restart,
			bad_node, how);
		break;
	}
	case NV_MISSING:
		code = 1;
		fprintf(stderr, "jobfs-shim: verdict 1: task %" PRId64 " run %" PRIu64 " node %"
			PRIu64 " left no result (lost)\n", idx, s->env.restart, bad_node);
		break;
	}
	return code;
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
	for (size_t i = 0; i < s->nvars; i++)
		free(s->vars[i]);
	for (size_t i = 0; i < SHIM_MAX_PROCS; i++)
		free(s->cuda[i]);
	launch_release(&s->l);
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

	switch (claim(s)) {
	case 0:
		break;
	case 1:
		return fail(s, SHIM_EXIT_USAGE, "cancelled: the daemon gave this attempt up "
			    "before it started");
	default:
		return fail(s, SHIM_EXIT_SYSTEM, "claim: %s", strerror(errno));
	}
	for (size_t i = 0; i < s->l.nprocs; i++)
		proc_start(s, i);
	if (s->start_failed)
		forward(s, SIGKILL);
	report_started(s);

	if (run_loop(s) < 0) {
		fprintf(stderr, "jobfs-shim: poll: %s\n", strerror(errno));
		forward(s, SIGKILL);
		return SHIM_EXIT_SYSTEM;
	}
	code = write_result(s) == 0 ? SHIM_EXIT_OK : SHIM_EXIT_SYSTEM;
	if (s->cg[0])
		rmdir(s->cg);    /* empty now: every process was reaped */
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

	s->dirfd = s->sfd = s->ready_fd = s->alive_fd = -1;
	s->fout.fd = s->ferr.fd = s->flogs.fd = -1;
	s->timeout_at = s->kill_at = -1;
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
