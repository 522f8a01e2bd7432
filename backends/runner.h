/*
 * runner.h - a backend that runs one node at a time where the engine
 * placed it (backends/local, backends/sim).
 *
 * A runner starts a node's processes, signals them, and reports when they
 * have ended.  The engine hands it a struct jf_launch and an opaque 64-bit
 * cookie (the engine's attempt id) and later gets back a struct
 * jf_run_result carrying the same cookie.
 *
 * Every run has a handle, a short string the engine stores in SQLite, from
 * which a restarted daemon adopts the run again (jf_runner_adopt): a run's
 * processes outlive the daemon, and its end is never lost.
 *
 * The runner exposes one pollable fd; when it is readable the engine calls
 * jf_runner_reap() until it returns 0.
 *
 * A start may be confirmed later: start() then returns at once with the
 * run's handle (good for signal() from that moment) and `pending` set, and
 * reap() later hands back one result with `started` set, carrying the real
 * start time and pid, before the run's end.  A run that never got going
 * may end with no `started` result before it (then `start_failed` is set).
 * A runner whose start() knows the start time at once leaves `pending`
 * false and never reports `started`.
 *
 * backends/local: processes on this host, each node under a small
 * supervisor, tools/jobfs-shim, that records the exit status and the real
 * start and end times in the run directory (backends/shimproto.h).
 * backends/sim: runs that last what their spec says on a virtual clock.
 */
#ifndef JF_RUNNER_H
#define JF_RUNNER_H

#include "backends/backend.h"

struct jf_runner;

struct jf_runner_ops {
	const char *name;
	enum jf_err (*start)(struct jf_runner *r, const struct jf_launch *l, uint64_t cookie,
			     struct jf_run_started *out, struct jf_error *err);
	enum jf_err (*adopt)(struct jf_runner *r, const char *handle, const char *run_dir,
			     uint64_t cookie, struct jf_error *err);
	enum jf_err (*signal)(struct jf_runner *r, const char *handle, enum jf_run_signal sig);
	/* A start whose result the engine never recorded (it died inside
	 * start(), or before a pending start was confirmed): JF_OK with the
	 * run's handle and start time when the run got going (the engine
	 * adopts it), JF_ENOENT when nothing ran and, from now on, nothing
	 * will.  NULL: the runner cannot tell (JF_ENOENT). */
	enum jf_err (*recover)(struct jf_runner *r, const char *run_dir, char *handle, size_t n,
			       int64_t *start_ms, struct jf_error *err);
	int (*fd)(struct jf_runner *r);
	size_t (*reap)(struct jf_runner *r, struct jf_run_result *out, size_t max);
	void (*free)(struct jf_runner *r);
};

struct jf_runner {
	const struct jf_runner_ops *ops;
};

static inline const char *jf_runner_name(const struct jf_runner *r)
{
	return r->ops->name;
}

static inline enum jf_err jf_runner_start(struct jf_runner *r, const struct jf_launch *l,
					  uint64_t cookie, struct jf_run_started *out,
					  struct jf_error *err)
{
	return r->ops->start(r, l, cookie, out, err);
}

static inline enum jf_err jf_runner_adopt(struct jf_runner *r, const char *handle,
					  const char *run_dir, uint64_t cookie,
					  struct jf_error *err)
{
	return r->ops->adopt(r, handle, run_dir, cookie, err);
}

static inline enum jf_err jf_runner_recover(struct jf_runner *r, const char *run_dir, char *handle,
					    size_t n, int64_t *start_ms, struct jf_error *err)
{
	if (!r->ops->recover)
		return JF_ENOENT;
	return r->ops->recover(r, run_dir, handle, n, start_ms, err);
}

static inline enum jf_err jf_runner_signal(struct jf_runner *r, const char *handle,
					   enum jf_run_signal sig)
{
	return r->ops->signal(r, handle, sig);
}

static inline int jf_runner_fd(struct jf_runner *r)
{
	return r->ops->fd(r);
}

static inline size_t jf_runner_reap(struct jf_runner *r, struct jf_run_result *out, size_t max)
{
	return r->ops->reap(r, out, max);
}

static inline void jf_runner_free(struct jf_runner *r)
{
	if (r)
		r->ops->free(r);
}

#endif
