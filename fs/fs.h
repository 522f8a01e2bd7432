/*
 * fs.h - the FUSE tree over an engine, and the daemon's event loop.
 *
 * jf_fs_new() mounts the tree at mountpoint and adds its sources to the
 * daemon's loop (engine/loop.h): the FUSE channel (served first), a
 * signalfd (SIGINT, SIGTERM, SIGHUP stop the loop), the toucher and a
 * timer for log growth.  The loop stops when the filesystem is unmounted
 * or a signal arrives; jf_fs_free() unmounts if still mounted.  The engine
 * is attached to the same loop beforehand (jf_engine_attach).
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
	double attr_timeout;    /* seconds, default 1.0 */
	int reader_nice;        /* the reader threads' nice value (serve.c) */
	bool reader_nice_given; /* asked for: say so if it cannot be had */
};
/* Readers are favoured over the tasks for the CPU by default. */
#define JF_FS_READER_NICE (-10)

/* Takes over the engine; the loop stays the caller's (free it after the fs). */
enum jf_err jf_fs_new(struct jf_engine *e, struct jf_loop *l, const struct jf_fs_options *opt,
		      struct jf_fs **out, struct jf_error *err);
void jf_fs_free(struct jf_fs *fs);

#endif
