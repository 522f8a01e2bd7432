/*
 * shim_int.h - what the parts of jobfs-shim share; private to tools/.
 *
 * The shim is one program in six files: shim.c (what both modes share,
 * the local mode and main(); its top describes the shim and its exit
 * codes), shim_proc.c (the node's processes, their cgroups and the event
 * loop), shim_output.c (the files written into RUN_DIR: stdout, stderr,
 * logs and their rotation, `started` and `result`), shim_ctr.c (OCI
 * containers: the mount namespace, bundles, the runtime, their storage
 * and its eviction; its top describes them), shim_pull.c (their images,
 * before the claim) and shim_slurm.c (the Slurm mode and the verdict; its
 * top describes them).  All the state is main()'s one struct shim, passed
 * to whatever needs it.
 */
#ifndef JF_SHIM_INT_H
#define JF_SHIM_INT_H

#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backends/shimproto.h"
#include "runtime/cgroup.h"
#include "runtime/netns.h"

#define SHIM_BEAT_MS 1000 /* heartbeat: the claim's mtime */
/* storage (shim_ctr.c): the emptydirs' usage checked this often unless
 * launch.json says (the kubelet's housekeeping period), and an evicted
 * node's containers SIGKILLed this long after their SIGTERM (the kubelet's
 * least grace, minimumGracePeriodInSeconds) */
#define SHIM_EVICT_CHECK_MS 10000
#define SHIM_EVICT_GRACE_MS 2000

enum {
	SHIM_EXIT_OK = 0,
	SHIM_EXIT_USAGE = 100,
	SHIM_EXIT_SYSTEM = 111,
};

#define READY_FD       3
#define SHIM_MAX_PROCS JF_SHIM_MAX_PROCS
#define SHIM_NAME_MAX  JF_SHIM_NAME_MAX
#define SHIM_FILE_MAX  JF_SHIM_FILE_MAX
#define SHIM_LINE_CAP  (64 * 1024)
#define SHIM_CHUNK     (64 * 1024)
#define SHIM_LOGBUF    (128 * 1024)
#define SHIM_DRAIN_MS  2000
#define SHIM_MSG_MAX   256

/* slurm mode */
#define SLURM_MAX_GPUS     64 /* gpu_slots positions per proc, Slurm's list */
#define SLURM_GPU_ID_MAX   64 /* one entry of CUDA_VISIBLE_DEVICES */
#define SLURM_HOST_MAX     255
#define SLURM_MAX_NODES    100000
#define SLURM_MAX_COUNT    ((int64_t)INT32_MAX) /* tasks, indices, attempts */
#define SLURM_MAX_MS       ((int64_t)1 << 42)   /* about 139 years */
#define SLURM_PORT_SPAN    20000
#define SLURM_ENV_MAX      4096 /* a Slurm variable we pass on or parse */
#define SLURM_NVARS        10   /* JOB_* variables (CUDA_VISIBLE_DEVICES is per proc) */
#define SLURM_TERM_WAIT_MS 500  /* for the shim's SIGTERM after a proc's (run_loop) */

/* ---- launch.json ---- */

/* launch.json's "slurm" object (slurm mode only; see the top of shim_slurm.c). */
struct launch_slurm {
	int64_t first_index;
	int64_t tasks;
	int64_t attempt_base;
	bool node_index;
	int64_t timeout_ms; /* 0 = none */
	int64_t kill_grace_ms;
	const char *ckpt_root; /* "" = no checkpoint directory */
	int64_t master_port_base;
	bool has_slots[SHIM_MAX_PROCS]; /* gpu_slots names that proc's GPUs */
	size_t nslots[SHIM_MAX_PROCS];
	int slots[SHIM_MAX_PROCS][SLURM_MAX_GPUS];
};

/* What Slurm's environment says about this node (slurm_env_read). */
struct slurm_env {
	uint64_t array_task;    /* SLURM_ARRAY_TASK_ID, 0 when absent */
	uint64_t restart;       /* SLURM_RESTART_COUNT, 0 when absent */
	uint64_t node;          /* SLURM_NODEID */
	uint64_t nnodes;        /* SLURM_JOB_NUM_NODES or SLURM_NNODES; 0 = absent */
	uint64_t job_id;        /* SLURM_JOB_ID */
	uint64_t port_job;      /* SLURM_ARRAY_JOB_ID, else SLURM_JOB_ID */
	const char *nodelist;   /* SLURM_JOB_NODELIST or NULL */
	const char *launch_ip;  /* SLURM_LAUNCH_NODE_IPADDR, NULL when unset or empty */
	const char *cuda;       /* CUDA_VISIBLE_DEVICES or NULL */
	const char *nnodes_var; /* the name nnodes came from, for messages */
};

/* ---- output files ---- */

struct outfile {
	int fd;           /* -1 after a rotation that could not reopen NAME */
	const char *name; /* "stdout", "stderr" or "logs" in RUN_DIR */
	bool lines;       /* rotate after a whole line (logs) */
	int64_t size;     /* bytes in NAME */
	int64_t cap;      /* 0 = no cap */
	int64_t size1;    /* bytes in NAME.1, the part rotated out last */
	int64_t rotations;
	int64_t dropped; /* bytes gone for good */
};

/* One pipe: a proc's stdout or stderr. */
struct stream {
	int fd;               /* read end; -1 after EOF */
	struct outfile *file; /* RUN_DIR/stdout or RUN_DIR/stderr */
	char *line;           /* partial line for logs, SHIM_LINE_CAP */
	size_t len;
	bool mid_line; /* logs: this stream's last piece did not end a line */
};

/* A proc that is an OCI container (shim_ctr.c) */
struct ctr {
	json_t *image;     /* jobfs-image's answer: layers, config, digest */
	char id[64];       /* the runtime's container id */
	char bundle[3300]; /* RUN_DIR/ctr/NAME: config.json, rootfs, upper, work */
	bool mounted;      /* its rootfs overlay is mounted */
	bool created;      /* the runtime made it: delete it at the end */
};

struct proc {
	const struct jf_shim_proc *spec;
	struct ctr *ctr; /* NULL: a host process */
	struct jf_cg cg; /* its limits (runtime/cgroup.h); cg.version 0: none */
	bool oom_killed;
	char digest[72]; /* its image's, "" on the host */
	pid_t pid;       /* 0 if never forked */
	bool running;    /* forked and not yet reaped */
	bool failed;     /* could not be started */
	int exit_code;
	int term_signal;
	struct stream out;
	struct stream err;
};

struct shim {
	int dirfd;
	int sfd;                 /* signalfd: SIGCHLD, SIGTERM, SIGUSR1 */
	int ready_fd;            /* -1 once the ready line is written */
	int notes_fd;            /* slurm mode: RUN_DIR/notes, the notes' lines; -1 none */
	int alive_fd;            /* RUN_DIR/claim: its mtime is touched every second */
	struct jf_shim_launch l; /* launch.json (backends/shimproto.h) */
	struct launch_slurm sl;  /* its "slurm" object (slurm mode) */
	struct proc procs[SHIM_MAX_PROCS];
	size_t nrunning;
	struct outfile fout, ferr, flogs;
	char *logbuf; /* pending whole lines for logs */
	size_t loglen;
	char *chunk; /* read buffer */
	bool drop;   /* change user in the children */
	bool pin;
	cpu_set_t cpus;
	char cg[256];         /* cpuset cgroup of the node, "" if none */
	const char *cg_procs; /* "tasks" (v1) or "cgroup.procs" (v2) */
	int64_t start_ms;
	int64_t end_ms;
	bool start_failed;
	size_t failed_proc; /* first proc that could not start */
	int failed_code;    /* its exit code: 127, or 126 for EACCES */
	char start_msg[SHIM_MSG_MAX];

	/* slurm mode (all inert in local mode: the timers stay -1) */
	bool slurm;
	bool setup_failed; /* nothing started: the result says start_msg, 127 */
	struct slurm_env env;
	int64_t idx;        /* task index */
	int64_t timeout_at; /* mono ms: SIGTERM the procs (timeout); -1 none */
	int64_t kill_at;    /* mono ms: SIGKILL what still runs; -1 none */
	bool timed_out;
	int outside_sig;         /* first SIGTERM/SIGINT/SIGHUP from outside while a proc ran */
	bool outside_term;       /* a SIGTERM from outside came while a proc ran */
	bool own_failure;        /* see shim_slurm.c: the node failed on its own */
	bool term_suspect;       /* a proc ended by a SIGTERM the shim did not send */
	char *vars[SLURM_NVARS]; /* "JOB_...=..." for every proc */
	size_t nvars;
	char *cuda[SHIM_MAX_PROCS]; /* "CUDA_VISIBLE_DEVICES=..." per proc, or NULL */
	char work[PATH_MAX];        /* the procs' cwd when launch.json names none */

	/* containers (shim_ctr.c) */
	struct ctr ctrs[SHIM_MAX_PROCS];
	size_t nctr;           /* procs with an image */
	bool pull_failed;      /* an image could not be pulled: nothing started */
	char run_dir[3072];    /* room below it for what the containers need */
	char shm[3200];        /* the node's /dev/shm (a tmpfs), "" if none */
	struct jf_netns netns; /* ports: the node's network namespace */
	bool has_netns;

	/* storage (shim_ctr.c): launch.json's mounts, in every container */
	char mnt_dir[JF_SHIM_MAX_MOUNTS][3200]; /* an emptydir's RUN_DIR/emptydir/NAME, "" */
	bool tmpfs[JF_SHIM_MAX_MOUNTS];         /* a Memory emptydir mounted there */
	bool emptydirs;                         /* RUN_DIR/emptydir made: removed at the end */
	int64_t evict_at; /* mono ms: the next check of the emptydirs' usage; -1 none */
	bool evicted;     /* one was over its size: the containers were stopped */
	char evict_msg[SHIM_MSG_MAX];
};

/* ---- shim.c ---- */

int64_t wall_ms(void);
int64_t mono_ms(void);
int write_all(int fd, const void *buf, size_t n);
const char *signame(int sig, char *buf, size_t n);
void msg_clean(char *s);
void ready_say(struct shim *s, const char *line);
int fail(struct shim *s, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The caller frees what read_small() returns. */
char *read_small(int dirfd, const char *path, size_t *lenp);
int launch_read(struct shim *s, int dirfd, char *err, size_t errlen);
int prepare(struct shim *s, char *err, size_t errlen);
int claim(struct shim *s);
int signals_block(struct shim *s, const int *sigs, size_t n);
void std_fds(void);
/* After the claim, both modes: each proc's limits, the containers' setup,
 * then every proc started (containers created, then started together); a
 * start failure SIGKILLs what started. */
void node_start(struct shim *s);
/* After the end, both modes: the containers deleted, the limits' cgroups. */
void node_tidy(struct shim *s);

/* ---- shim_proc.c ---- */

void cgroup_setup(struct shim *s);
/* Each proc's cgroup with its memory and cpu limits (reference 8.2), as
 * root; a host that cannot is said in the proc's logs, once. */
void limits_setup(struct shim *s);
void limits_remove(struct shim *s);
void proc_start(struct shim *s, size_t i);
void forward(struct shim *s, int sig);
int run_loop(struct shim *s);

/* ---- shim_output.c ---- */

int outfile_open(struct shim *s, struct outfile *f, const char *name);
void stream_close(struct shim *s, struct proc *p, struct stream *st);
void stream_read(struct shim *s, struct proc *p, struct stream *st);
void proc_note(struct shim *s, struct proc *p, const char *text);
void report_started(struct shim *s);
/* Slurm mode: RUN_DIR/gpus, the node's SLURM_STEP_GPUS (else
 * SLURM_JOB_GPUS), when Slurm gave it GPUs (shimproto.h: jf_shim_gpus). */
void report_gpus(struct shim *s);
int write_result(struct shim *s);

/* ---- shim_pull.c ---- */

#define PULL_ERR_MAX 4096

/* What a helper program wrote: stdout whole (capped), stderr's start. */
struct child_io {
	char *out; /* what it wrote on stdout (NUL-terminated), the caller frees */
	size_t outlen;
	char err[PULL_ERR_MAX];
	size_t errlen;
};

/*
 * Run argv (absolute path) with stdin /dev/null, stdout and stderr read
 * into io (NULL: to out_fd and err_fd, -1 = /dev/null), kept_fd passed as
 * its fd 4 (-1: none), and the lines of its fd 3 handed to on_line (NULL:
 * no fd 3); bounded by timeout_ms (then killed: -2).  The wait status, or
 * -1 when it could not be run.
 */
/* poll(2) on a helper's fds for at most a second, and at deadline (mono
 * ms) SIGKILL the helper pid once (*killed) */
int poll_child(struct pollfd *pf, nfds_t n, int64_t deadline, pid_t pid, bool *killed);
/* In a forked child: the signals as they were before the shim, its
 * parent's death its own, stdin /dev/null, out_fd and err_fd (-1:
 * /dev/null) as 1 and 2, fd3 and fd4 (-1: none) as 3 and 4, then exec
 * argv; a failed exec says "cannot run PATH: WHY" on stderr, exits 127. */
__attribute__((noreturn)) void child_exec(char *const *argv, int out_fd, int err_fd, int fd3,
					  int fd4);
int run_child(struct shim *s, char *const *argv, struct child_io *io, int out_fd, int err_fd,
	      int kept_fd, int64_t timeout_ms,
	      void (*on_line)(struct shim *s, const char *line, void *arg), void *arg);
/* The image's record: used now (/images last_used); skipped while it is
 * being pulled */
void touch_record(struct shim *s, const char *ref_text);

/* ---- shim_ctr.c ---- */

/* Before the claim (local mode; slurm mode: after it): pull every image
 * the node needs (notes on fd 3, or RUN_DIR/notes).  -1: a pull failed,
 * the ready line said so ("pullfailed MSG") and s->start_msg says MSG. */
int ctr_pull(struct shim *s);
/* After the claim: the private mount namespace, the node's /dev/shm, each
 * container's root and config.json.  -1: a start failure is recorded. */
int ctr_setup(struct shim *s, char *err, size_t errlen);
/* Create container i (its init is then the proc's pid), then, once all
 * are created, start them (ctr_start_all). */
void ctr_create(struct shim *s, size_t i);
void ctr_start_all(struct shim *s);
/* After the end: delete the runtime's containers, unmount, tidy (the
 * emptydirs too). */
void ctr_cleanup(struct shim *s);
/* Once the node runs: when the emptydirs with a size are first checked
 * (s->evict_at), -1 when none is. */
void storage_arm(struct shim *s);
/* At s->evict_at: each emptydir with a size over it evicts the node (the
 * message in its logs, SIGTERM, SIGKILL SHIM_EVICT_GRACE_MS later). */
void storage_check(struct shim *s, int64_t now);
/* one "note TYPE REASON MESSAGE" line on fd 3 */
void ready_note(struct shim *s, const char *type, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- shim_slurm.c ---- */

int launch_parse_slurm(const struct jf_shim_launch *l, struct launch_slurm *ls, char *err,
		       size_t errlen);
void slurm_conclude(struct shim *s, int node_exit);
int cmd_slurm(struct shim *s, const char *batch);
int cmd_verdict(struct shim *s, const char *batch);

#endif
