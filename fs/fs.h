/*
 * fs.h - the FUSE tree over an engine, and the daemon's event loop.
 *
 * jf_fs_new() mounts the tree at mountpoint; jf_fs_run() runs the one
 * epoll loop over the FUSE channel, the engine's backend fd, a timerfd and
 * a signalfd (SIGINT, SIGTERM, SIGHUP end it) until the filesystem is
 * unmounted or a signal arrives; jf_fs_free() unmounts if still mounted.
 */
#ifndef JF_FS_H
#define JF_FS_H

#include <stdbool.h>

#include "core/err.h"
#include "engine/engine.h"

struct jf_fs;

struct jf_fs_options {
	const char *mountpoint;
	bool allow_other;
	bool debug;
	double attr_timeout; /* seconds, default 1.0 */
};

/* Takes over the engine. */
enum jf_err jf_fs_new(struct jf_engine *e, const struct jf_fs_options *opt, struct jf_fs **out,
		      struct jf_error *err);
int jf_fs_run(struct jf_fs *fs);
void jf_fs_free(struct jf_fs *fs);

#endif
