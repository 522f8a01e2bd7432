/*
 * slurm.h - the slurm backend: a group's tasks run as one Slurm job array
 * on a real cluster, through slurmrestd (backends/slurm/rest.c).
 *
 * A scheduling backend (backend.h): the engine hands it batches and hears
 * back notes.  All HTTP happens on the backend's own thread, so a slow or
 * absent slurmrestd never blocks the daemon's loop; the loop talks to the
 * thread through a request list and reads notes when the backend's fd (an
 * eventfd) is readable.
 *
 * What the thread does, every poll interval (config.poll_ms):
 *   - sends what waits to be sent (new batches; one that may have gone out
 *     before an answer was lost is first looked for by its comment, so it
 *     is never submitted twice), throttle changes, holds and cancels;
 *   - looks at each followed batch: the hint directory DIR/starts, where
 *     the first node of a started element leaves "<job id> <start ms>"
 *     (jobfs-shim), tells it which element jobs to ask about at once; each
 *     element seen running is asked about by its own job id (cheap); the
 *     whole array (every record Slurm still keeps) is read less often, at
 *     most every 10 x what the last such read cost, at least every
 *     poll interval — that read finds what the cheap ones cannot (ends of
 *     elements never seen running, the pending part, the end of the batch);
 *   - reads the node list every 10 s (NODES when it changed).
 * An answer that does not come (slurmrestd or slurmctld down) makes it
 * UNREACHABLE until a ping succeeds (tried after 1, 2, 4 .. 10 s); requests
 * wait meanwhile and go out when it is REACHABLE again.
 *
 * Times are Slurm's (whole seconds): a run starts at its start_time and
 * ends at its end_time.  A run that Slurm requeued (preemption) keeps no
 * end in Slurm's record once it waits again; then the end is the one
 * Slurm's jobcomp/filetxt record of that run gives (config.jobcomp: one
 * line per run segment, times in the controller's local time), else the
 * latest end its nodes' supervisors recorded (RUN_DIR/result), to the
 * second below, else when the requeue was seen.
 */
#ifndef JF_SLURM_H
#define JF_SLURM_H

#include <stdint.h>

#include "backends/scheduler.h"

struct jf_slurm_config {
	const char *url;     /* "unix:/path/slurmrestd.socket" or "http://host:port" */
	const char *token;   /* JWT for http (X-SLURM-USER-TOKEN), usually $SLURM_JWT */
	const char *shim;    /* jobfs-shim as the cluster's nodes see it */
	const char *uuid;    /* this state directory's id, in every job's comment */
	int64_t poll_ms;     /* 0 = 1000 */
	int64_t timeout_ms;  /* per HTTP request, 0 = 10000 */
	const char *jobcomp; /* Slurm's jobcomp/filetxt file (JobCompLoc), readable
				here, or NULL: where the end of a requeued run is
				read (see above) */
};

/* Starts the backend's thread; reads the node list once (at most a few
 * seconds) so that the machines are known before the tree is.  NULL on
 * failure with err set.  Free with jf_scheduler_free(). */
struct jf_scheduler *jf_slurm_new(const struct jf_slurm_config *c, struct jf_error *err);

#endif
