/*
 * script.h - what jobfs hands Slurm for one batch: the batch script, the
 * job description slurmrestd takes, and the launch.json the nodes'
 * supervisors read.  No I/O but jf_slurm_write_file().
 *
 * The batch runs, on the first host of each element's allocation:
 *
 *     srun --kill-on-bad-exit=1 --nodes=K --ntasks=K --ntasks-per-node=1 \
 *          SHIM --slurm DIR
 *     exec SHIM --slurm-verdict DIR
 *
 * so every node runs the task's containers under jobfs-shim (its files in
 * DIR/<idx>/<run>/<node>), and the job's exit status is the verdict over
 * all nodes: 0, 1 (a node failed on its own), or 143 (stopped from
 * outside: a preempted job is requeued by Slurm's RequeueExit=143).
 *
 * A one-node element that cannot be preempted (on-demand) runs the
 * supervisor straight from the batch script instead, `exec SHIM --slurm
 * DIR`: no job step to create and launch, a fifth of a second less per
 * element, and one node's exit status is its verdict.  Spot elements keep
 * srun: at a preemption Slurm SIGTERMs a job's steps when the grace time
 * begins, but its batch script only when the grace time is over.
 */
#ifndef JF_SLURM_SCRIPT_H
#define JF_SLURM_SCRIPT_H

#include <jansson.h>
#include <sys/types.h>

#include "backends/scheduler.h"

/* The batch script (caller frees); NULL when a path cannot be quoted or
 * on ENOMEM (err says which). */
char *jf_slurm_script(const char *shim, const char *dir, int64_t nodes, bool spot,
		      struct jf_error *err);
/* {"script": ..., "job": {...}} for POST /job/submit (caller decrefs).
 * array is the index set relative to b->idx[0] with its throttle,
 * "0-99%10"; comment is the key Slurm keeps ("jobfs:<uuid>:<key>"). */
json_t *jf_slurm_job_json(const struct jf_batch *b, const char *script, const char *array,
			  const char *comment, struct jf_error *err);
/* launch.json for the supervisors (caller decrefs). */
json_t *jf_slurm_launch_json(const struct jf_batch *b, struct jf_error *err);
/* Write text to path through a temporary file, fsync and rename. -1 with errno. */
int jf_slurm_write_file(const char *path, const char *text, size_t len, mode_t mode);

/* Slurm's minutes for a jobfs timeout: the outer bound behind the
 * supervisor's own, to the second (a minute more, rounded up). */
int64_t jf_slurm_time_limit(int64_t timeout_ms);

#endif
