/*
 * local_int.h - the local backend's insides, shared by local.c (the ops,
 * the run table) and local_ready.c (pending starts: the shim's ready
 * line).  What holds is described at the top of local.c.
 */
#ifndef JF_LOCAL_INT_H
#define JF_LOCAL_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/runner.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define LOCAL_READY_FD         3
#define LOCAL_READY_TIMEOUT_MS 10000
#define LOCAL_LINE_MAX         1024 /* the shim's ready line is at most ~512 bytes */
#define LOCAL_HASH_MIN         256

struct run;

/* What an event of the inner epoll is about (its data.ptr; NULL: the eventfd). */
struct watch {
	enum { W_PID, W_READY, W_TIMER } kind;
	struct run *r;
};

struct run {
	uint64_t cookie;
	pid_t pid;                    /* the shim */
	unsigned long long starttime; /* /proc/PID/stat field 22 */
	int pidfd;                    /* -1 if the shim was already gone */
	int64_t start_ms;             /* 0 = unknown, read RUN_DIR/started */
	char *run_dir;
	struct run *hnext; /* PID hash chain, while watched */
	struct run *qnext; /* ready list, while queued */
	struct watch wpid, wready;
	/* while starting (start() until the ready line): */
	int ready_fd; /* the pipe's read end, -1 when done */
	char *line;   /* what came of the line so far (LOCAL_LINE_MAX) */
	size_t linelen;
	int64_t ready_by;          /* monotonic ms: killed if no line by then */
	struct run *snext, *sprev; /* starting list */
	bool confirmed;            /* a `started` result went out (adopted: true) */
	char *failure;             /* why it never got going, NULL: say how it ended */
	bool pull_failed;          /* it said "pullfailed": failure says why */
	bool noted;                /* it said a note: off the starting list (pulling) */
};

/* A result waiting its turn: the notes a shim wrote before its ready line,
 * and the `started` result that follows them, in the order they came. */
struct pending {
	struct pending *next;
	struct jf_run_result res;
};

struct local {
	struct jf_runner be; /* first: the engine holds &be */
	char *shim_path;
	int epfd;
	int evfd;
	int tfd; /* timerfd: the first starting run's deadline */
	struct watch wtimer;
	struct run **buckets; /* PID hash of watched runs */
	size_t nbuckets;      /* a power of two */
	size_t nwatched;
	struct run *qhead, *qtail;     /* ready list */
	struct pending *phead, *ptail; /* results before the ready list's */
	struct run *shead, *stail;     /* starting list, oldest first */
	int64_t ready_timeout_ms;      /* LOCAL_READY_TIMEOUT_MS (tests set less) */
};

static inline int sys_pidfd_send_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

static inline int run_path(char *buf, size_t n, const char *dir, const char *name)
{
	int k = snprintf(buf, n, "%s/%s", dir, name);
	return k < 0 || (size_t)k >= n ? -1 : 0;
}

/* local.c: settle who owns a run directory's start (see "The claim"):
 * JF_OK - the shim claimed it first, its handle and start time out;
 * JF_ENOENT - nothing started, and now nothing will (cancelled); else an
 * error with nothing settled. */
enum jf_err jf_local_claim(const char *run_dir, char *handle, size_t n, int64_t *start_ms,
			   struct jf_error *err);
/* local.c: how the shim ended, from waitid (empty if it has not). */
void jf_local_describe_wait(const siginfo_t *si, char *buf, size_t n);

/* local_ready.c: r was just spawned, its pipe in the inner epoll: wait for
 * its ready line until LOCAL_READY_TIMEOUT_MS from now. */
void jf_local_starting_add(struct local *lb, struct run *r);
/* Its pipe is readable: 1 and out a `started` result when the line is
 * complete, 0 when nothing to report yet (or it failed: r->failure). */
int jf_local_ready_read(struct local *lb, struct run *r, struct jf_run_result *out);
/* The shim has exited: take what is left of its line (1: out is a
 * `started` result to report before its end). */
int jf_local_ready_last(struct local *lb, struct run *r, struct jf_run_result *out);
/* local.c: queue a copy of res before everything else reap() returns;
 * false when memory ran out (then it is dropped). */
bool jf_local_pending_push(struct local *lb, const struct jf_run_result *res);
/* The timerfd fired: kill the runs whose line is overdue. */
size_t jf_local_ready_timeouts(struct local *lb, struct jf_run_result *out, size_t max);

#endif
