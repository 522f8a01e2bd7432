/*
 * rest.h - the slurmrestd client: the only code in jobfs that speaks HTTP.
 *
 * One struct jf_slurm_rest is one libcurl easy handle (kept open, so its
 * connection is reused) talking to one slurmrestd, either on a unix socket
 * with local auth or over TCP with a JWT.  A handle belongs to one thread
 * at a time; every call blocks for at most opts.timeout_ms per HTTP
 * request (connect and transfer together).  Call jf_slurm_rest_global_init()
 * once from main() before any thread starts.
 *
 * Every call returns one of:
 *   JF_OK
 *   JF_EIO     no usable answer: slurmrestd cannot be reached, timed out,
 *              closed the connection, answered HTTP 5xx without a Slurm
 *              error, sent something that is not JSON or is over
 *              JF_SLURM_BODY_MAX; or Slurm said it cannot reach slurmctld.
 *              Retry later.  err->msg says which ("slurmrestd unreachable:
 *              connect to /tmp/x.socket: No such file or directory",
 *              "slurmctld unreachable (Slurm error 1800: ...)").
 *   JF_ENOENT  Slurm does not know the job (any more).
 *   JF_EINVAL  Slurm refused the request, or the arguments are bad; Slurm's
 *              words are in err->msg ("Slurm refused the job: Requested
 *              node configuration is not available (error 2014)").
 *   JF_EBUSY   Slurm refused it in the job's present state (error 2020:
 *              a signal other than SIGKILL to a pending job).
 *   JF_EACCES  authentication failed: HTTP 401/403, a JWT past its "exp",
 *              a token slurmctld rejected, Slurm's access errors.
 *   JF_ENOMEM
 * and on failure leaves every output empty (NULL, 0).
 *
 * Each call that acts for a user takes const char *user: the
 * X-SLURM-USER-NAME header over http (NULL = opts.user, else the "sun"
 * claim of the JWT); it is ignored on a unix socket, where slurmrestd acts
 * as the uid of this process.
 *
 * What slurmrestd 22.05 (openapi/v0.0.38) does, as measured (see rest.c
 * for the details and tests/unit/data/slurm/README for the answers):
 *   - the HTTP status does not tell success: errors come in "errors" with
 *     HTTP 200 as well as 500, so the answer's error numbers decide;
 *   - a job update that touches a job array answers an "errors" entry
 *     with no error number ("job array update ... failed") even when it
 *     worked; it is not an error.  A throttle change ("array") can be
 *     ignored without a word (when sent to an element's id, or to a plain
 *     job), so jf_slurm_job_update() reads the job back to verify it;
 *   - a submission can be queued *and* answered with an error number: 2042
 *     (held, as asked) is success; 2015 (the request exceeds the
 *     partition's limits, so the job would wait for ever) is a refusal:
 *     the job is cancelled at once and the call fails (see submit below);
 *   - with slurmctld down, answers take ~9 s and carry error -1 or 1800
 *     (and 1000 for updates); over JWT a token slurmctld rejects gives the
 *     same -1 and 1000, but 5005 where the other gives 1800: such an
 *     ambiguous answer over http is settled with one extra request (a
 *     signal to job 0, which cannot exist; it waits 2 s at most).
 */
#ifndef JF_SLURM_REST_H
#define JF_SLURM_REST_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define JF_SLURM_API                "v0.0.38"          /* the REST API version: this one place */
#define JF_SLURM_BODY_MAX           ((size_t)64 << 20) /* bytes of one answer */
#define JF_SLURM_TIMEOUT_MS_DEFAULT 10000

struct jf_slurm_rest;

struct jf_slurm_rest_opts {
	const char *url;   /* "unix:/path/slurmrestd.socket" (local auth) or
			      "http://host:port", "https://host:port" (JWT) */
	const char *token; /* JWT for http URLs (X-SLURM-USER-TOKEN); NULL for unix */
	const char *user;  /* X-SLURM-USER-NAME default for http when a call gives none */
	long timeout_ms;   /* per request, connect + transfer (default 10000 when 0) */
};

/* One job record of GET /job/<id> or /jobs.  Strings are never NULL ("" when
 * Slurm gives none); heap strings belong to the record and are freed by
 * jf_slurm_jobs_free(); fixed arrays hold Slurm's text cut to fit.  Numbers
 * Slurm leaves out (or sends as null or NO_VAL) are 0 unless said. */
struct jf_slurm_job {
	int64_t job_id;
	int64_t array_job_id;    /* the array's master job id, 0 for a plain job */
	int64_t array_task_id;   /* -1 when not an element: a plain job or the
				    pending meta record */
	char *array_task_string; /* pending indexes of a meta record ("4-5%2"), "" */
	int64_t array_max_tasks; /* the array's throttle, 0 = none */
	char state[32];          /* "PENDING","RUNNING","COMPLETED","FAILED",
				    "TIMEOUT","CANCELLED","PREEMPTED","NODE_FAIL",
				    "REQUEUED","SUSPENDED","COMPLETING",
				    "OUT_OF_MEMORY","BOOT_FAIL","DEADLINE" as Slurm
				    spells them */
	char reason[64];         /* "None", "Resources", "JobArrayTaskLimit" ... */
	int64_t submit_time, eligible_time, start_time, end_time, preempt_time,
		suspend_time; /* seconds since the epoch, 0 if none; end_time
				 of a running job is Slurm's expected end
				 (start + time limit); of a pending one both
				 are Slurm's estimates, and end_time can be
				 absurd (start + ~2^32 s without a limit);
				 preempt_time is set from the moment
				 preemption begins (during the grace time)
				 and is 0 again once the job is requeued */
	int64_t restart_cnt;  /* requeues so far */
	int exit_code;        /* exit status of the batch script (the wait
				 status decoded), 0 if it died of a signal */
	int exit_signal;      /* the signal it died of, 0 if it exited;
				 Slurm's "ExitCode=exit_code:exit_signal" */
	char *nodes;          /* hostlist "n[1-2]" or "" */
	char **gres_detail;   /* one entry per node of `nodes`, in order:
				 "gpu:4090:2(IDX:0-1)" (jf_gres_gpu_ids) */
	size_t ngres_detail;
	char batch_host[256]; /* the node running the script, "" */
	char *name, *comment, *partition;
	char *std_out; /* standard_output as submitted (%j unexpanded) */
	int64_t user_id;
	int64_t time_limit; /* minutes, 0 = none */
	bool requeue;
};

/* One node of GET /nodes, same conventions. */
struct jf_slurm_node {
	char name[256];
	char *state; /* "idle", "mixed", "allocated", "down" ... with
			Slurm's flags, lowercase, joined by '+':
			"idle+drain" */
	int64_t cpus, alloc_cpus;
	int64_t real_memory_mb, alloc_memory_mb;
	int64_t free_memory_mb; /* what the node reports, -1 if unknown */
	char *gres;             /* "gpu:4090:8", "" */
	char *gres_used;        /* "gpu:4090:2(IDX:0-1)", "" */
	char *partitions;       /* "ondemand,spot", "" */
	char *reason;           /* why it is down or drained, "" */
};

/* curl_global_init(), once (later calls return what the first did).  Call
 * it from main() before any thread starts: libcurl's global setup (and the
 * TLS library's) is not thread-safe against other users of them.
 * jf_slurm_rest_new() calls it too, so a program that forgets still works
 * as long as nothing else in it initialises libcurl concurrently. */
enum jf_err jf_slurm_rest_global_init(void);

/* A handle for o->url.  The strings in o are copied.  JF_EINVAL when the
 * URL is neither "unix:/absolute/path" (at most 107 bytes) nor
 * "http(s)://...", an http URL has no token, or a token or user holds
 * characters a header cannot.  Nothing is sent: a slurmrestd that is not
 * there shows at the first call.  Free with jf_slurm_rest_free(). */
enum jf_err jf_slurm_rest_new(const struct jf_slurm_rest_opts *o, struct jf_slurm_rest **out,
			      struct jf_error *err);
void jf_slurm_rest_free(struct jf_slurm_rest *r); /* NULL ok */

/* From now on, a request in progress on r is given up (JF_EIO) soon
 * after *quit becomes true, instead of waiting out its timeout: for a
 * thread that must stop now.  quit is borrowed; NULL turns it off. */
void jf_slurm_rest_quit_on(struct jf_slurm_rest *r, const atomic_bool *quit);

/* slurmctld reachable through slurmrestd (GET /ping says "UP"). */
enum jf_err jf_slurm_ping(struct jf_slurm_rest *r, struct jf_error *err);

/* POST /job/submit with body (borrowed): {"script": ..., "job": {...}}.
 * JF_OK with *job_id.  When Slurm queues the job but answers error 2015
 * (it exceeds the partition's limits and would never start), the job is
 * cancelled and the call returns JF_EINVAL with *job_id = 0; if that
 * cancel fails too, the result is the cancel's error and *job_id is the
 * job still queued, for the caller to cancel later.  Otherwise *job_id is
 * 0 on failure. */
enum jf_err jf_slurm_submit(struct jf_slurm_rest *r, const char *user, json_t *body,
			    int64_t *job_id, struct jf_error *err);

/* GET /job/<id>, id "123" or "123_4".  For an array's master id Slurm
 * gives every element record it still holds plus the meta record of the
 * pending part (array_task_id -1); an element's own job id or "123_4"
 * gives that element.  No record is JF_ENOENT.  The caller frees *jobs
 * with jf_slurm_jobs_free(*jobs, *n). */
enum jf_err jf_slurm_job_get(struct jf_slurm_rest *r, const char *user, const char *id,
			     struct jf_slurm_job **jobs, size_t *n, struct jf_error *err);

/* GET /jobs?update_time=T: every job Slurm holds (update_time 0), or
 * those changed since T; nothing changed (HTTP 304) is JF_OK with
 * *unchanged = true and *n = 0. */
enum jf_err jf_slurm_jobs_all(struct jf_slurm_rest *r, const char *user, int64_t update_time,
			      struct jf_slurm_job **jobs, size_t *n, bool *unchanged,
			      struct jf_error *err);

/* POST /job/<id> with props (borrowed, an object of job properties:
 * {"hold": true}, {"array": "5"} for the array's throttle, ...).  A hold
 * made by root is an admin hold (reason JobHeldAdmin); {"hold": false}
 * releases either kind.  With "array" (a whole number >= 0, as a string
 * or an integer; anything else is JF_EINVAL before sending, as Slurm takes
 * "abc" for 0) the job is read back after the update, and a throttle Slurm
 * did not apply is JF_EINVAL: give the array's master id, not an
 * element's. */
enum jf_err jf_slurm_job_update(struct jf_slurm_rest *r, const char *user, const char *id,
				json_t *props, struct jf_error *err);

/* DELETE /job/<id>[?signal=sig].  What Slurm 22.05 does:
 *   sig 0        cancel (SIGKILL to every step, like scancel): a pending
 *                job ends CANCELLED at once, a running one after
 *                KillWait; for a master id, every element.
 *   sig 1 .. 63  that signal to the batch script and every step of a
 *                running job, which goes on running if it survives it
 *                (SIGKILL cancels); to a pending job it is JF_EBUSY
 *                ("Job can not be altered now", error 2020).  To an
 *                array's master id while part of it is pending, the
 *                running elements get the signal and the answer is still
 *                JF_EBUSY: signal elements by their own job ids.
 * A job that has already ended (and that Slurm still remembers,
 * MinJobAge) is JF_OK, so cancelling twice is fine; one Slurm has
 * forgotten is JF_ENOENT. */
enum jf_err jf_slurm_job_signal(struct jf_slurm_rest *r, const char *user, const char *id, int sig,
				struct jf_error *err);

/* GET /nodes.  The caller frees *nodes with jf_slurm_nodes_free(*nodes, *n). */
enum jf_err jf_slurm_nodes(struct jf_slurm_rest *r, const char *user, struct jf_slurm_node **nodes,
			   size_t *n, struct jf_error *err);

void jf_slurm_jobs_free(struct jf_slurm_job *jobs, size_t n);    /* NULL ok */
void jf_slurm_nodes_free(struct jf_slurm_node *nodes, size_t n); /* NULL ok */

/* The parsers the calls use, for tests and recorded answers: the "jobs"
 * (or "nodes") list of a JSON answer of len bytes (no NUL needed).  Not
 * JSON, no such list, or a record without a job id (node name) is JF_EIO
 * with the position or the record's index in err->msg. */
enum jf_err jf_slurm_jobs_parse(const char *body, size_t len, struct jf_slurm_job **jobs, size_t *n,
				struct jf_error *err);
enum jf_err jf_slurm_nodes_parse(const char *body, size_t len, struct jf_slurm_node **nodes,
				 size_t *n, struct jf_error *err);

/* What an answer means, as every call reads it: HTTP status and body ->
 * JF_OK or one of the codes above with its message; what names the
 * request in a refusal ("job", "update of job 12").  *slurm_errno (if
 * not NULL) gets the Slurm error number the verdict rests on, 0 if none.
 * This is the unix-socket reading: over http an answer of -1, 1000 or
 * 5005 is further checked (see above). */
enum jf_err jf_slurm_answer_check(long http_status, const char *body, size_t len, const char *what,
				  int *slurm_errno, struct jf_error *err);

/* GPUs in a gres string: "gpu:4090:8" -> 8, model "4090"; "gpu:4090:8(S:0)"
 * the same; "gpu:8" -> 8, model ""; "gpu" or "gpu:a100" -> 1; in a list
 * ("gpu:a:2,gpu:b:4", "craynetwork:1,gpu:2") the first gpu entry counts,
 * the others are ignored.  -1 (model "") when there is no gpu entry.
 * model (n bytes, may be NULL) is cut to fit. */
int jf_slurm_gres_gpus(const char *gres, char *model, size_t n);

#endif
