/*
 * runrec.h - the records jobfs-shim leaves in a run directory, read back.
 *
 * RUN_DIR/result (JSON, written once, fsynced, renamed into place) and
 * RUN_DIR/started ("started START_MS PID..." or "failed START_MS ...").
 * Shared by the backends whose nodes run under the shim: local, and slurm
 * (there the run directory is on a filesystem the cluster shares).
 */
#ifndef JF_RUNREC_H
#define JF_RUNREC_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"

#define JF_RUNREC_FILE_MAX (1 << 20)

/* Read the whole file path, at most cap bytes, into *out (NUL-terminated,
 * the caller's to free).  -1 with errno set (EFBIG over the cap). */
int jf_runrec_read(const char *path, size_t cap, char **out, size_t *len);
/* RUN_DIR/result into out (its cookie untouched): exit codes, times,
 * message, per-proc codes, timed_out and signalled.  -1 with errno ENOENT
 * when there is none yet, else -1 and why. */
int jf_runrec_result(const char *run_dir, struct jf_run_result *out, char *why, size_t whylen);
/* START_MS from RUN_DIR/started, 0 if none. */
int64_t jf_runrec_started_ms(const char *run_dir);

#endif
