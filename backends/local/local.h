/*
 * local.h - the local backend: every node runs as processes on this host,
 * under tools/jobfs-shim.
 *
 * shim_path is the jobfs-shim binary (the daemon passes the one beside
 * itself).  The returned backend is freed with jf_runner_free().
 */
#ifndef JF_LOCAL_H
#define JF_LOCAL_H

#include "backends/runner.h"

struct jf_runner *jf_local_new(const char *shim_path, struct jf_error *err);
/* How long a shim has to say it started (default 10 s; for tests). */
void jf_local_set_ready_timeout(struct jf_runner *be, int64_t ms);

#endif
