/*
 * backend.h - where nodes run: what both kinds of backend share.
 *
 * The engine holds one of two strategies:
 *   - a runner (runner.h: backends/local, backends/sim) starts one node's
 *     processes at a time where the engine placed it, signals them, and
 *     reports when they started and ended;
 *   - a scheduler (scheduler.h: backends/slurm) takes whole sets of a
 *     group's tasks and decides itself when and where each runs; what it
 *     learns comes back as notes.
 * Neither knows the tree, the store or the engine's planner.  This header
 * holds the types both use: a node's containers (struct jf_proc), what a
 * run needs (struct jf_launch), how a run ended (struct jf_run_result),
 * the signals the engine sends, and the clocks backends read.
 */
#ifndef JF_BACKEND_H
#define JF_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "core/err.h"

#define JF_HANDLE_MAX    64
#define JF_RUN_MAX_PROCS 16
#define JF_RUN_MSG_MAX   256

/* One container's image (reference 8.1), for a backend that runs OCI
 * containers: the supervisor pulls it (tools/jobfs-image) and runs the
 * container under the OCI runtime.  command and args as the spec wrote
 * them (either may be absent: the image's ENTRYPOINT and CMD fill in, as
 * in Kubernetes). */
struct jf_proc_image {
	const char *reference;   /* as written; valid (core/imgref.h) */
	const char *pull_policy; /* "Always", "IfNotPresent" or "Never" */
	char *const *command;    /* NULL = not given */
	char *const *args;       /* NULL = not given */
	char *const *env;        /* the node's variables: the spec's and JOB_*, no host ones */
};

/* One container: a process (tree) started from argv with its own env. */
struct jf_proc {
	const char *name;                  /* container name, "main" */
	char *const *argv;                 /* NULL-terminated; argv[0] searched in PATH of envp */
	char *const *envp;                 /* NULL-terminated, complete environment */
	const struct jf_proc_image *image; /* NULL: on the host */
	int64_t mem_bytes;                 /* memory limit, 0 = none */
	int64_t cpu_milli;                 /* cpu quota in millicores, 0 = none */
};

/* How the supervisor runs containers and pulls images (tools/jobfs-shim). */
struct jf_runtime_conf {
	const char *oci_runtime;     /* crun or runc, absolute */
	const char *image_tool;      /* tools/jobfs-image, absolute */
	const char *cache_dir;       /* the image cache (image/cache.h) */
	const char *const *insecure; /* registries spoken to over http */
	size_t ninsecure;
	const char *auth_file;      /* daemon-wide auth.json, NULL = none */
	int64_t pull_timeout_ms;    /* a pull taking longer fails; 0 = 30 min */
	const char *expose_address; /* where ports listen, NULL = 127.0.0.1 */
};

/* One storage mount of a node (reference 8.3): an emptydir the supervisor
 * makes for the node, or a host directory (a volume's, an object source's
 * cache) bound into every container. */
enum jf_mount_type { JF_MOUNT_EMPTYDIR, JF_MOUNT_VOLUME, JF_MOUNT_OBJECT };
struct jf_mount {
	enum jf_mount_type type;
	/* emptydir: a name for messages (unique in the node); volume, object: its name */
	const char *name;
	const char *source; /* volume, object: the host directory (exists); NULL for an emptydir */
	const char *path;   /* in every container, absolute */
	int64_t size_bytes; /* emptydir: the limit, 0 = none */
	bool memory;        /* emptydir: a tmpfs */
	bool read_only;     /* always for an object */
};

struct jf_launch {
	const char *run_dir; /* exists; the backend writes stdout, stderr, logs
				and its own records here */
	const char *cwd;     /* working directory of the processes */
	uid_t uid;           /* run as this user (only when the daemon is root; */
	gid_t gid;           /*   otherwise processes run as the daemon's user) */
	const struct jf_proc *procs;
	size_t nprocs;         /* 1 .. JF_RUN_MAX_PROCS */
	int64_t log_cap_bytes; /* 0 = no cap */
	const int *cpus;       /* CPU ids to pin to, NULL = no pinning */
	size_t ncpus;
	const struct jf_runtime_conf *rt; /* needed when a proc has an image */
	const char *registry_auth;        /* the spec's auth.json, read as uid; NULL = none */
	int64_t shm_bytes;                /* the node's /dev/shm size, 0 = the default */
	const int *ports;                 /* forwarded from free host ports (reference 8.2) */
	size_t nports;
	const struct jf_mount *mounts; /* storage (reference 8.3): in every container */
	size_t nmounts;
	int64_t evict_check_ms; /* how often an emptydir's usage is checked, 0 = the default */
};

struct jf_run_started {
	char handle[JF_HANDLE_MAX];
	pid_t pid;        /* the first container's process */
	int64_t start_ms; /* wall clock, ms since the epoch, when it started */
	bool pending;     /* the start is not confirmed yet: pid and start_ms
			     are 0 and come later in a `started` result
			     (the caller zeroes the struct before start()) */
};

struct jf_proc_result {
	char name[64];
	int exit_code;         /* 0..255; 128+sig when killed by a signal */
	int term_signal;       /* 0 or the signal that killed it */
	bool oom_killed;       /* its cgroup's OOM counter says so */
	char image_digest[72]; /* the image it ran, "" on the host */
};

/* What a note says: one event of the node before its start (Pulling,
 * Pulled, Created, ...), in Kubernetes' words. */
#define JF_NOTE_REASON_MAX 32

struct jf_run_result {
	uint64_t cookie;
	int exit_code;   /* the node's: first container that failed, else 0 */
	int term_signal; /* of that container, 0 if none */
	int64_t start_ms;
	int64_t end_ms;
	bool lost;         /* supervisor vanished without a record; end_ms = when noticed */
	bool start_failed; /* a command could not be executed (exit_code 127/126) */
	char message[JF_RUN_MSG_MAX]; /* human words: "exit 1", "killed by SIGKILL", "exec foo: No
					 such file" */
	size_t nprocs;
	struct jf_proc_result procs[JF_RUN_MAX_PROCS];
	bool timed_out;   /* the supervisor ended it at its timeout (slurm) */
	bool signalled;   /* it was told to stop from outside (SIGTERM) */
	bool pull_failed; /* a start failure: an image could not be pulled
			   * (message says why); not an attempt of the task */
	bool evicted;     /* an end: the node was evicted, message says why
			   * (an emptydir over its size: reference 8.3) */
	/* Not an end: a note from the supervisor (note_type, note_reason,
	 * message); only cookie and these are set. */
	bool note;
	char note_type[8];
	char note_reason[JF_NOTE_REASON_MAX];
	/* Not an end: a pending start is confirmed (its processes run since
	 * start_ms; pid is the first container's); the end comes later.  Only
	 * cookie, start_ms, pid and this are set.  Backends zero every result. */
	bool started;
	pid_t pid;
};

/* Signals the engine sends; backends map them to what they can do. */
enum jf_run_signal {
	JF_RUN_TERM, /* polite: SIGTERM to every process */
	JF_RUN_KILL, /* SIGKILL to every process */
};

/* The clocks the backends read: wall (what results carry) and monotonic
 * (deadlines), in ms. */
static inline int64_t jf_be_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t jf_be_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
