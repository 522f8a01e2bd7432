/*
 * local.h - the local backend: every node runs as processes on this host,
 * under tools/jobfs-shim.
 *
 * shim_path is the jobfs-shim binary (the daemon passes the one beside
 * itself).  The returned backend is freed with jf_backend_free().
 */
#ifndef JF_LOCAL_H
#define JF_LOCAL_H

#include "backends/backend.h"

struct jf_backend *jf_local_new(const char *shim_path, struct jf_error *err);
/* How long a shim has to say it started (default 10 s; for tests). */
void jf_local_set_ready_timeout(struct jf_backend *be, int64_t ms);

#endif
