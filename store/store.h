/*
 * store.h - jobfs's state in SQLite: the only code that speaks SQL.
 *
 * Tables: queues, groups (a queue's groups and the independent batches of
 * /tasks), tasks, nodes, attempts, events and the billing ledger.  The
 * schema is versioned with PRAGMA user_version and migrated on open; the
 * database runs in WAL mode with foreign keys on.
 *
 * Every state change the engine makes is one transaction: jf_store_begin(),
 * the changes, jf_store_commit().  Readers (fs/) call the getters outside
 * any transaction and always see committed state.
 *
 * Records: the *_rec structs are filled by the getters; their heap members
 * (spec, message) belong to the record and are freed with the matching
 * *_release().  Fixed-size members are always NUL-terminated.
 *
 * Events carry a ready line "TIME TYPE REASON OBJECT MESSAGE\n" and its byte
 * offset within each enclosing scope (node, task, group, queue), so the
 * append-only `events` files can be read at any offset without rendering
 * what comes before.
 */
#ifndef JF_STORE_H
#define JF_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/lifecycle.h"

struct jf_store;

/* The schema version this build migrates every database to. */
#define JF_STORE_SCHEMA 17

#define JF_NAME_MAX    64
#define JF_GPU_IDS_MAX 96

enum jf_group_kind { JF_KIND_GROUP = 0, JF_KIND_BATCH = 1 };

struct jf_queue_rec {
	int64_t id;
	char name[JF_NAME_MAX];
	char *spec;            /* text as written, "" if none */
	int64_t capacity;      /* 0 = unlimited */
	int64_t group_timeout; /* seconds, 0 = off */
	int64_t created_ms;
	uint32_t uid, gid;
	int64_t events_bytes;
	char *message; /* why the last spec.yaml was refused, "" if it was not */
};

struct jf_group_rec {
	int64_t id;
	int64_t queue_id; /* 0 for a batch */
	enum jf_group_kind kind;
	char dirname[JF_NAME_MAX];
	char *display; /* display name (spec name or dirname) */
	enum jf_state state;
	char *message;
	char *spec;    /* accepted spec text, NULL in Draft/Invalid */
	char *draft;   /* last refused text, NULL if none */
	char *ignored; /* K8s fields ignored, one per line, "" if none */
	int64_t created_ms, submitted_ms, started_ms, finished_ms;
	uint32_t uid, gid;
	int64_t seq; /* submission order */
	int64_t completions, parallelism, nodes;
	int64_t failures; /* failed attempts, all tasks together */
	int64_t events_bytes;
	char jobname[JF_NAME_MAX]; /* ${JOB_NAME} as substituted at submission */
	unsigned flags;            /* JF_GF_* */
	int64_t unmade;            /* task rows not made yet (jf_group_make_tasks) */
};

/* groups.flags */
#define JF_GF_WINDOW     1u  /* spot: waiting for a low-risk window */
#define JF_GF_IMAGEPULL  2u  /* backing off after an image pull failed (engine/image.c) */
#define JF_GF_SYNCING    4u  /* waiting for its object sources to sync (engine/storage.c) */
#define JF_GF_DEPENDENCY 8u  /* waiting for its after: entries to hold (engine/deps.c) */
#define JF_GF_BUDGET     16u /* its queue's budget is spent: nothing new starts (engine/budget.c) */

struct jf_task_rec {
	int64_t id;
	int64_t group_id;
	int64_t idx;
	enum jf_state state;
	char *message;
	char *display;    /* NULL unless renamed */
	int64_t attempt;  /* attempts started so far */
	int64_t failures; /* failed attempts counted against retries */
	int64_t started_ms, finished_ms;
	int64_t events_bytes;
};

struct jf_node_rec {
	int64_t id;
	int64_t task_id;
	int64_t idx;
	enum jf_state state;
	char *message;
	char machine[JF_NAME_MAX];
	char gpu_ids[JF_GPU_IDS_MAX]; /* "0,1" */
	int64_t pid;
	int exit_code;      /* -1 = none yet */
	int64_t attempt;    /* current or last attempt number, 0 = never ran */
	int64_t attempt_id; /* row id of that attempt, 0 = none */
	int64_t started_ms, finished_ms;
	int64_t events_bytes;
	char runtime[8];       /* "oci", "host", "" before its first start */
	char *images;          /* its containers' image references (canonical), comma-joined */
	char image_digest[80]; /* the first container's image's, "" on the host */
	char reason[32];       /* Completed, Error, OOMKilled, ImagePullBackOff, ... */
	char *endpoints;       /* "http://127.0.0.1:PORT ..." of its ports, "" if none */
};

struct jf_attempt_rec {
	int64_t id;
	int64_t node_id;
	int64_t attempt;
	char handle[64];
	char *run_dir;
	char machine[JF_NAME_MAX];
	char gpu_ids[JF_GPU_IDS_MAX];
	int64_t cpu_milli;
	int64_t pid;
	int64_t start_ms, end_ms; /* end 0 while running */
	int exit_code;            /* -1 while running */
	char *reason;
	char cpuset[256];      /* cores pinned (cpu_exclusive), "0-19", "" if none */
	int64_t kill_at_ms;    /* a preemption's SIGKILL deadline (engine clock), 0 none */
	bool preempting;       /* it is being preempted (a restarted daemon finishes that) */
	int64_t created_ms;    /* its row was made (placed), 0 if not known */
	int end_state;         /* the state it ended in (enum jf_state), -1 while it runs
				* or when not known (an older database) */
	char end_reason[32];   /* the Kubernetes word for its end (as the node's reason) */
	char runtime[8];       /* as the node's while it was the node's attempt */
	char *images;          /* ... its containers' image references, comma-joined */
	char image_digest[80]; /* ... the first container's image's digest */
};

struct jf_ledger_rec {
	int64_t id;
	int64_t queue_id, group_id, task_id, node_id, attempt_id;
	char queue[JF_NAME_MAX]; /* names at the time, kept after rmdir */
	char group[JF_NAME_MAX];
	int64_t task_idx, node_idx, attempt;
	char billing[16];
	char gpu[JF_NAME_MAX]; /* "" for CPU-only */
	int64_t gpus;
	int64_t start_ms, end_ms; /* end 0 while open */
	int64_t seconds;
	int64_t rate;   /* micro-units per hour */
	int64_t amount; /* micro-units */
	int64_t seq;    /* place in ledger.csv (order of closing) */
};

/* Scope of a cost or events query. */
enum jf_scope {
	JF_SCOPE_ALL,
	JF_SCOPE_QUEUE,
	JF_SCOPE_GROUP,
	JF_SCOPE_TASK,
	JF_SCOPE_NODE,
	JF_SCOPE_STORE,   /* a volume or object source (events only) */
	JF_SCOPE_ATTEMPT, /* one attempt of a node (cost only: jf_ledger_sum) */
};

/* open / close / transactions */
enum jf_err jf_store_open(const char *path, struct jf_store **out, struct jf_error *err);
void jf_store_close(struct jf_store *st);
enum jf_err jf_store_begin(struct jf_store *st);
enum jf_err jf_store_commit(struct jf_store *st);
void jf_store_rollback(struct jf_store *st);
/*
 * A reader's own connection to the database at path, which another
 * connection (the engine's) has opened and migrated: read-only, so a
 * write through it fails instead of racing the engine's.  One thread uses
 * it at a time.  Between jf_store_read_begin() and _end() everything it
 * reads comes from one committed snapshot of the database (WAL), whatever
 * the engine commits meanwhile.
 */
enum jf_err jf_store_open_reader(const char *path, struct jf_store **out, struct jf_error *err);
void jf_store_read_begin(struct jf_store *st);
void jf_store_read_end(struct jf_store *st);
/* The file the store keeps (for jf_store_open_reader). */
const char *jf_store_path(const struct jf_store *st);
/* Why the last statement, begin or commit failed (for messages). */
const char *jf_store_last_error(const struct jf_store *st);
/* Writes made outside any transaction since open: the engine makes none
 * (each of its steps is a transaction); tests check it stays 0. */
int64_t jf_store_autocommits(const struct jf_store *st);
int jf_store_schema_version(struct jf_store *st);
/* PRAGMA integrity_check: JF_OK when "ok". */
enum jf_err jf_store_check(struct jf_store *st, struct jf_error *err);

/* queues */
enum jf_err jf_queue_create(struct jf_store *st, const char *name, uint32_t uid, uint32_t gid,
			    int64_t now_ms, int64_t *id);
enum jf_err jf_queue_get(struct jf_store *st, int64_t id, struct jf_queue_rec *q);
enum jf_err jf_queue_find(struct jf_store *st, const char *name, struct jf_queue_rec *q);
enum jf_err jf_queue_set_spec(struct jf_store *st, int64_t id, const char *text, int64_t capacity,
			      int64_t group_timeout);
/* Why the queue's last spec.yaml was refused; jf_queue_set_spec clears it. */
enum jf_err jf_queue_set_message(struct jf_store *st, int64_t id, const char *message);
enum jf_err jf_queue_delete(struct jf_store *st, int64_t id);
/* How many groups the queue has, and how many of them are live (not
 * final, not a draft). */
enum jf_err jf_queue_group_counts(struct jf_store *st, int64_t id, int64_t *all, int64_t *live);
/* A queue's budget state as last announced (reference 10): 1 exhausted
 * (its BudgetExhausted event written), 0 not. */
enum jf_err jf_queue_budget_state(struct jf_store *st, int64_t id, int *state);
enum jf_err jf_queue_set_budget_state(struct jf_store *st, int64_t id, int state);
/* List queues with id > after, in id order, calling fn until it returns
 * non-zero; at most limit rows. */
enum jf_err jf_queue_list(struct jf_store *st, int64_t after, int limit,
			  int (*fn)(void *ctx, int64_t id, const char *name), void *ctx);
void jf_queue_release(struct jf_queue_rec *q);

/* groups and batches */
enum jf_err jf_group_create(struct jf_store *st, int64_t queue_id, enum jf_group_kind kind,
			    const char *dirname, uint32_t uid, uint32_t gid, int64_t now_ms,
			    int64_t *id);
enum jf_err jf_group_get(struct jf_store *st, int64_t id, struct jf_group_rec *g);
enum jf_err jf_group_find(struct jf_store *st, int64_t queue_id, enum jf_group_kind kind,
			  const char *dirname, struct jf_group_rec *g);
enum jf_err jf_group_list(struct jf_store *st, int64_t queue_id, enum jf_group_kind kind,
			  int64_t after, int limit,
			  int (*fn)(void *ctx, int64_t id, const char *dirname), void *ctx);
/* Groups not in a final or draft state, in submission order. */
enum jf_err jf_group_list_active(struct jf_store *st, int (*fn)(void *ctx, int64_t id), void *ctx);
enum jf_err jf_group_reject(struct jf_store *st, int64_t id, const char *draft,
			    const char *message);
/*
 * The trash: paths under the state directory to remove, recorded in the
 * transaction that decides it (an attempt's end, a group's removal), so a
 * daemon killed before it got to them removes them after its restart.
 * JF_TRASH_TIDY: an ended attempt's run directory keeps its non-empty
 * logs and work files, loses its records and empty files, and goes when
 * nothing is left; JF_TRASH_TREE: the whole tree; JF_TRASH_EMPTY: the
 * directory if empty (a finished task's checkpoint directory).
 */
enum jf_trash_kind { JF_TRASH_TIDY = 0, JF_TRASH_TREE = 1, JF_TRASH_EMPTY = 2 };
enum jf_err jf_trash_add(struct jf_store *st, enum jf_trash_kind kind, const char *path);
/* A group's run directories (every attempt's), its tasks' checkpoint
 * directories STATE/ckpt/<task>, and on Slurm STATE/ckpt/g<group> and its
 * batches' STATE/slurm/<id>, all as JF_TRASH_TREE; *n gets how many. Call
 * before jf_group_delete, in its transaction. */
enum jf_err jf_trash_group(struct jf_store *st, int64_t group_id, const char *state_dir,
			   int64_t *n);
/* The run directories of a group's attempts as JF_TRASH_TREE, and the
 * group marked logs_freed_ms = now (the retention setting's work). */
enum jf_err jf_trash_group_logs(struct jf_store *st, int64_t group_id, int64_t now_ms, int64_t *n);
/* Up to limit rows, oldest first, to fn; *last gets the id of the last
 * given (0 if none). jf_trash_done removes the rows up to that id. */
enum jf_err jf_trash_take(struct jf_store *st, int limit,
			  void (*fn)(void *ctx, enum jf_trash_kind kind, const char *path),
			  void *ctx, int64_t *last);
enum jf_err jf_trash_done(struct jf_store *st, int64_t upto);
enum jf_err jf_trash_count(struct jf_store *st, int64_t *n);
/* Finished groups (Succeeded, Failed, Stopped) of a queue (0: the batches
 * of /tasks) that ended at or before before_ms and whose logs are still
 * kept: id and queue id to fn, oldest end first, at most limit. */
enum jf_err jf_group_list_logs_kept(struct jf_store *st, int64_t queue_id, int64_t before_ms,
				    int limit, int (*fn)(void *ctx, int64_t id, int64_t queue_id),
				    void *ctx);
/* A Draft or Invalid group back to a Draft with no text (an emptied spec). */
enum jf_err jf_group_clear_draft(struct jf_store *st, int64_t id);
/*
 * Task rows are made JF_TASKS_CHUNK at a time: a million of them in one
 * transaction held the daemon for 3-5 s on a 2-core VM, so jf_group_accept
 * makes the first chunk and the engine the rest, one chunk per turn of its
 * loop (jf_group_make_tasks: 6 ms a chunk there, 40 ms at worst).  The rows not made
 * yet are always the highest indexes; they count as tasks in the state
 * they will be made with (jf_group_count_tasks), which the whole-group
 * writes below move along with the made rows' states.  A group of at most
 * a chunk has all its rows from its acceptance on.
 */
#define JF_TASKS_CHUNK 4096
/* The chunk of this store (JF_TASKS_CHUNK); a test sets a smaller one
 * (n <= 0: back to JF_TASKS_CHUNK) to run a group of a few chunks fast. */
void jf_store_set_tasks_chunk(struct jf_store *st, int64_t n);
int64_t jf_store_tasks_chunk(const struct jf_store *st);
/* Accept a spec: stores it, moves to Waiting; of the task rows 0 ..
 * completions-1, in state Waiting, makes the first chunk. */
enum jf_err jf_group_accept(struct jf_store *st, int64_t id, const char *spec_text,
			    const char *display, const char *ignored, int64_t completions,
			    int64_t parallelism, int64_t nodes, const char *jobname,
			    int64_t now_ms);
enum jf_err jf_group_set_state(struct jf_store *st, int64_t id, enum jf_state state,
			       const char *message, int64_t now_ms);
/* Make up to max (> 0) of the group's task rows not made yet, the lowest
 * indexes of them first, in one transaction; *left gets how many are left
 * (0 also when there is no such group: ENOENT). */
enum jf_err jf_group_make_tasks(struct jf_store *st, int64_t group_id, int64_t max, int64_t *left);
/* The first group in submission order with task rows not made yet:
 * *group_id (0 when there is none) and its *queue_id (0 for a batch). */
enum jf_err jf_group_next_unmade(struct jf_store *st, int64_t *group_id, int64_t *queue_id);
/* An object's state alone (ENOENT: no such row). */
enum jf_err jf_group_state(struct jf_store *st, int64_t id, int *state);
enum jf_err jf_task_state(struct jf_store *st, int64_t id, int *state);
enum jf_err jf_node_state(struct jf_store *st, int64_t id, int *state);
/* The message alone, the state as it is. */
enum jf_err jf_group_set_message(struct jf_store *st, int64_t id, const char *message);
/* Flags (JF_GF_*) and message together. */
enum jf_err jf_group_set_flags(struct jf_store *st, int64_t id, unsigned flags,
			       const char *message);
enum jf_err jf_group_add_failure(struct jf_store *st, int64_t id);
/* For restart: failures to 0, and every task (or only task_id) back to
 * Waiting with no failures counted; the whole group's rows not made yet too. */
enum jf_err jf_group_reset(struct jf_store *st, int64_t id, int64_t task_id);
enum jf_err jf_group_rename(struct jf_store *st, int64_t id, const char *dirname);
enum jf_err jf_group_delete(struct jf_store *st, int64_t id);
/* Counts of the group's tasks per state: counts[JF_ST__COUNT]; rows not
 * made yet count in the state they will be made with. */
enum jf_err jf_group_count_tasks(struct jf_store *st, int64_t id, int64_t *counts);
/* How many of group id's tasks ended Succeeded or Failed after running,
 * and the sum of their last attempts' run times (ms): what the ETA
 * simulation predicts a task's run time from (reference 9.1). */
enum jf_err jf_group_durations(struct jf_store *st, int64_t id, int64_t *n, int64_t *sum_ms);
/* How many of group id's tasks wait with an index below idx: a waiting
 * task's rank among its group's (its ETA, reference 9.1). */
enum jf_err jf_task_waiting_before(struct jf_store *st, int64_t id, int64_t idx, int64_t *n);
/* Tasks waiting again after a preemption (a node Preempted, the task Waiting):
 * the `preempted` count of status; also counted under waiting. */
enum jf_err jf_group_count_preempted(struct jf_store *st, int64_t id, int64_t *n);
enum jf_err jf_queue_count_preempted(struct jf_store *st, int64_t queue_id, enum jf_group_kind kind,
				     int64_t *n);
/* Counts of the groups' tasks per state across a whole queue (or all
 * batches when queue_id is 0 and kind is JF_KIND_BATCH). */
enum jf_err jf_queue_count_tasks(struct jf_store *st, int64_t queue_id, enum jf_group_kind kind,
				 int64_t *counts);
/* Nodes held (Initializing or Running) by a queue's groups. */
enum jf_err jf_queue_running_nodes(struct jf_store *st, int64_t queue_id, int64_t *n);
/* When the queue's groups (those still there) first started, 0 if none
 * has, and last finished, 0 if none has. */
enum jf_err jf_queue_span(struct jf_store *st, int64_t queue_id, int64_t *first_start,
			  int64_t *last_finish);
void jf_group_release(struct jf_group_rec *g);

/* tasks */
enum jf_err jf_task_get(struct jf_store *st, int64_t id, struct jf_task_rec *t);
enum jf_err jf_task_find(struct jf_store *st, int64_t group_id, int64_t idx, struct jf_task_rec *t);
/* Tasks of a group with idx > after, in idx order. */
enum jf_err jf_task_list(struct jf_store *st, int64_t group_id, int64_t after, int limit,
			 int (*fn)(void *ctx, int64_t id, int64_t idx), void *ctx);
/* Up to limit tasks of the group in state, lowest index first. */
enum jf_err jf_task_list_state(struct jf_store *st, int64_t group_id, enum jf_state state,
			       int limit, int (*fn)(void *ctx, int64_t id, int64_t idx), void *ctx);
enum jf_err jf_task_set_state(struct jf_store *st, int64_t id, enum jf_state state,
			      const char *message, int64_t now_ms);
enum jf_err jf_task_set_counters(struct jf_store *st, int64_t id, int64_t attempt,
				 int64_t failures);
/* Every task of the group in one of from_mask's states (bit 1<<state)
 * moves to state, the rows not made yet included (they will be made in
 * it); *changed gets how many did. */
enum jf_err jf_task_set_state_all(struct jf_store *st, int64_t group_id, unsigned from_mask,
				  int state, const char *message, int64_t now_ms, int64_t *changed);
/* The task whose directory was renamed to display; ENOENT if none. */
enum jf_err jf_task_find_display(struct jf_store *st, int64_t group_id, const char *display,
				 struct jf_task_rec *t);
/* Rename a task's directory (display NULL: back to its index); EEXIST when
 * another task of the group has that name. */
enum jf_err jf_task_set_display(struct jf_store *st, int64_t id, const char *display);
/* As jf_task_list, with each task's display name (NULL when not renamed). */
enum jf_err jf_task_list_named(struct jf_store *st, int64_t group_id, int64_t after, int limit,
			       int (*fn)(void *ctx, int64_t id, int64_t idx, const char *display),
			       void *ctx);
void jf_task_release(struct jf_task_rec *t);

/* nodes: rows are made on first use (jf_node_ensure) */
enum jf_err jf_node_ensure(struct jf_store *st, int64_t task_id, int64_t idx, int64_t *id);
enum jf_err jf_node_get(struct jf_store *st, int64_t id, struct jf_node_rec *n);
/* ENOENT when the node was never made (it has not run yet). */
enum jf_err jf_node_find(struct jf_store *st, int64_t task_id, int64_t idx, struct jf_node_rec *n);
enum jf_err jf_node_set_state(struct jf_store *st, int64_t id, enum jf_state state,
			      const char *message, int64_t now_ms);
/* The message alone, the state as it is. */
enum jf_err jf_node_set_message(struct jf_store *st, int64_t id, const char *message);
/* What the node runs on and with (set at its start); its current attempt
 * (attempt_id) keeps the same, for attempts/<a>/status */
enum jf_err jf_node_set_image(struct jf_store *st, int64_t id, const char *runtime,
			      const char *images, const char *image_digest);
/* Where its ports are reached (space-joined URLs) */
enum jf_err jf_node_set_endpoints(struct jf_store *st, int64_t id, const char *endpoints);
/* Why it ended (or waits): Kubernetes' reason words */
enum jf_err jf_node_set_reason(struct jf_store *st, int64_t id, const char *reason);
/* The ids of running or starting nodes whose images include reference (a
 * canonical one, core/imgref.h): up to max into ids; the count of all */
size_t jf_node_image_users(struct jf_store *st, const char *reference, int64_t *ids, size_t max);
enum jf_err jf_node_set_run(struct jf_store *st, int64_t id, const char *machine,
			    const char *gpu_ids, int64_t pid, int exit_code, int64_t attempt,
			    int64_t attempt_id);
void jf_node_release(struct jf_node_rec *n);

/* attempts: one row per run of a node, kept for as long as its group
 * (reference 9.2: a node's attempts/) */
enum jf_err jf_attempt_create(struct jf_store *st, int64_t node_id, int64_t attempt,
			      const char *run_dir, const char *machine, const char *gpu_ids,
			      int64_t cpu_milli, int64_t now_ms, int64_t *id);
enum jf_err jf_attempt_started(struct jf_store *st, int64_t id, const char *handle, int64_t pid,
			       int64_t start_ms);
enum jf_err jf_attempt_ended(struct jf_store *st, int64_t id, int64_t end_ms, int exit_code,
			     const char *reason);
/* How it ended, for its own status: the state its node moved to (a
 * restart's Waiting is given as Stopped, a failed pull's as Failed) and
 * the Kubernetes word (Completed, Error, OOMKilled, Preempted, ...). */
enum jf_err jf_attempt_set_outcome(struct jf_store *st, int64_t id, enum jf_state state,
				   const char *reason);
enum jf_err jf_attempt_set_cpuset(struct jf_store *st, int64_t id, const char *cpuset);
/* A preemption began: its SIGKILL deadline, kept for a restarted daemon. */
enum jf_err jf_attempt_set_kill_at(struct jf_store *st, int64_t id, int64_t kill_at_ms);
/* The attempt is being preempted, its SIGKILL due at kill_at_ms (0: the
 * backend's own grace). */
enum jf_err jf_attempt_set_preempting(struct jf_store *st, int64_t id, int64_t kill_at_ms);
enum jf_err jf_attempt_get(struct jf_store *st, int64_t id, struct jf_attempt_rec *a);
/* The attempt of node_id numbered attempt; ENOENT if none. */
enum jf_err jf_attempt_find(struct jf_store *st, int64_t node_id, int64_t attempt,
			    struct jf_attempt_rec *a);
/* The attempts of node_id numbered above after, lowest first, at most
 * limit: row id and number to fn until it returns non-zero. */
enum jf_err jf_attempt_list(struct jf_store *st, int64_t node_id, int64_t after, int limit,
			    int (*fn)(void *ctx, int64_t id, int64_t attempt), void *ctx);
/* Attempts started and not ended (for adoption after a restart). */
enum jf_err jf_attempt_list_open(struct jf_store *st,
				 int (*fn)(void *ctx, const struct jf_attempt_rec *a), void *ctx);
void jf_attempt_release(struct jf_attempt_rec *a);

/* storage (reference 8.3): volumes and object sources */
enum jf_store_kind { JF_SK_VOLUME = 1, JF_SK_OBJECT = 2 };
struct jf_store_rec {
	int64_t id;
	int kind; /* enum jf_store_kind */
	char name[JF_NAME_MAX];
	char *spec; /* as written, "" if none yet */
	uint32_t uid, gid;
	int64_t created_ms, changed_ms;
	int state;     /* the kind's own (engine/storage.c) */
	char *message; /* "" when there is nothing to say */
	char *info;    /* a JSON object of the kind's figures, "" if none */
	int64_t events_bytes;
};
enum jf_err jf_stor_create(struct jf_store *st, int kind, const char *name, uint32_t uid,
			   uint32_t gid, int64_t now_ms, int64_t *id);
enum jf_err jf_stor_get(struct jf_store *st, int64_t id, struct jf_store_rec *r);
enum jf_err jf_stor_find(struct jf_store *st, int kind, const char *name, struct jf_store_rec *r);
void jf_stor_release(struct jf_store_rec *r);
enum jf_err jf_stor_set_spec(struct jf_store *st, int64_t id, const char *spec, int64_t now_ms);
/* state, message and info (NULL: each kept) */
enum jf_err jf_stor_set_state(struct jf_store *st, int64_t id, int state, const char *message,
			      const char *info, int64_t now_ms);
enum jf_err jf_stor_delete(struct jf_store *st, int64_t id);
/* Rows of kind with id > after, in id order, until fn returns nonzero. */
enum jf_err jf_stor_list(struct jf_store *st, int kind, int64_t after, int limit,
			 int (*fn)(void *ctx, int64_t id, const char *name), void *ctx);
/* A running node mounts store id (path: the node's path in the tree). */
enum jf_err jf_stor_use(struct jf_store *st, int64_t id, int64_t node_id, const char *path,
			int64_t now_ms);
/* Node node_id ended: the stores it mounted (their ids into ids, at most
 * n; *got how many), and the rows gone. */
enum jf_err jf_stor_unuse(struct jf_store *st, int64_t node_id, int64_t *ids, size_t n,
			  size_t *got);
/* The paths of the nodes mounting store id, fn once each, in node order. */
enum jf_err jf_stor_users(struct jf_store *st, int64_t id, int (*fn)(void *ctx, const char *path),
			  void *ctx);

/* events */
struct jf_event_scope {
	int64_t queue_id, group_id, task_id, node_id; /* 0 = not in that scope */
	int64_t store_id; /* a volume's or object source's event: in no other scope */
};
enum jf_err jf_event_add(struct jf_store *st, const struct jf_event_scope *sc, int64_t time_ms,
			 const char *type, const char *reason, const char *object,
			 const char *message);
/* Copy bytes [off, off+size) of a scope's events text into buf; *got is
 * the count copied (0 at the end). */
enum jf_err jf_event_read(struct jf_store *st, enum jf_scope scope, int64_t id, int64_t off,
			  char *buf, size_t size, size_t *got);
enum jf_err jf_event_size(struct jf_store *st, enum jf_scope scope, int64_t id, int64_t *bytes);

/* on-demand demand: GPUs of a model in on-demand use from t_ms on */
enum jf_err jf_demand_add(struct jf_store *st, const char *model, int64_t t_ms, int64_t gpus);
/* Every sample of a model in time order. */
enum jf_err jf_demand_list(struct jf_store *st, const char *model,
			   int (*fn)(void *ctx, int64_t t_ms, int64_t gpus), void *ctx);

/* ledger: one or more segments per attempt, at most one of them open */
/* Open a segment (r's id, end_ms, seconds, amount and seq are ignored);
 * JF_EEXIST when the attempt has an open segment already. */
enum jf_err jf_ledger_open(struct jf_store *st, const struct jf_ledger_rec *r, int64_t *id);
/* Close the open segment of attempt_id at end_ms: computes seconds and amount;
 * JF_ENOENT when it has none open. */
enum jf_err jf_ledger_close(struct jf_store *st, int64_t attempt_id, int64_t end_ms);
/* Close every open segment at end_ms (the daemon stops; its processes run
 * on), each as jf_ledger_close does, in id order, in one transaction;
 * *closed (may be NULL) gets how many (0 on failure, when none is closed). */
enum jf_err jf_ledger_close_all(struct jf_store *st, int64_t end_ms, int64_t *closed);
/* Open the next segment of an attempt that has closed ones and none open
 * (the daemon adopts a process that kept running), with every descriptive
 * column of its latest segment, from start_ms, or from where that segment
 * ended when start_ms is 0 or earlier than that end (so no second is
 * billed twice).  JF_ENOENT when the attempt has no segment, JF_EEXIST
 * when one is open (nothing is done). */
enum jf_err jf_ledger_reopen(struct jf_store *st, int64_t attempt_id, int64_t start_ms);
/* End of the attempt's latest segment; 0 and *open true while one is open.
 * JF_ENOENT when the attempt has no segment.  Either out pointer may be NULL. */
enum jf_err jf_ledger_last_end(struct jf_store *st, int64_t attempt_id, int64_t *end_ms,
			       bool *open);
/* Sum of closed amounts in a scope, plus open segments billed up to now_ms;
 * *seconds likewise.  Both saturate at INT64_MAX. */
enum jf_err jf_ledger_sum(struct jf_store *st, enum jf_scope scope, int64_t id, int64_t now_ms,
			  int64_t *amount, int64_t *seconds);
/* The spot segments of a scope (JF_SCOPE_ALL, _QUEUE or _GROUP), open
 * ones billed up to now_ms, summed per GPU model ("" CPU-only) and rate:
 * fn(ctx, gpu, rate, seconds, amount) for each (spot_savings). */
enum jf_err jf_ledger_spot(struct jf_store *st, enum jf_scope scope, int64_t id, int64_t now_ms,
			   void (*fn)(void *ctx, const char *gpu, int64_t rate, int64_t seconds,
				      int64_t amount),
			   void *ctx);
/* What a queue's budget counts at now_ms (core/budget.h): with no period
 * (period_s 0) its open segments, and in *base its closed total (so that
 * the spent amount is the queue's cost to the micro-unit, as
 * jf_ledger_sum's); with a period every segment of it open or ended after
 * now - period, and *base 0.  *segs (NULL when none) is the caller's to
 * free. */
struct jf_budget_seg;
enum jf_err jf_ledger_budget_segs(struct jf_store *st, int64_t queue_id, int64_t period_s,
				  int64_t now_ms, struct jf_budget_seg **segs, size_t *n,
				  int64_t *base);
/* jf_ledger_sum, and in the same pass the rate of the open segments
 * (micro-units per hour: cost_rate) and what they cost up to now_ms;
 * either out pointer may be NULL. */
enum jf_err jf_ledger_sum_rate(struct jf_store *st, enum jf_scope scope, int64_t id, int64_t now_ms,
			       int64_t *amount, int64_t *seconds, int64_t *rate,
			       int64_t *open_amount);
/* Closed rows with seq > after, in closing order (ledger.csv). */
enum jf_err jf_ledger_list(struct jf_store *st, int64_t after, int limit,
			   int (*fn)(void *ctx, const struct jf_ledger_rec *r), void *ctx);
/* Totals of closed rows by a column: "queue", "group", "billing", "gpu";
 * saturating at INT64_MAX. */
enum jf_err jf_ledger_totals(struct jf_store *st, const char *by,
			     int (*fn)(void *ctx, const char *key, int64_t amount, int64_t seconds),
			     void *ctx);
/* Which ledger rows a reader sees (who may see what is fs/'s business):
 * the rows of independent batches (queue 0) and of the queues listed;
 * rows of other queues, and of queues removed since, are left out. */
struct jf_ledger_view {
	const int64_t *queues; /* ascending */
	size_t nqueues;
};
bool jf_ledger_view_has(const struct jf_ledger_view *v, int64_t queue_id);
/* jf_ledger_totals of the rows of view v only (NULL: every row). */
enum jf_err
jf_ledger_totals_view(struct jf_store *st, const char *by, const struct jf_ledger_view *v,
		      int (*fn)(void *ctx, const char *key, int64_t amount, int64_t seconds),
		      void *ctx);

/*
 * submissions: the outbox of a backend that schedules for itself (slurm).
 * A submission is one batch of a group's tasks handed to the backend (a
 * Slurm job array); each task names the submission it belongs to now
 * (tasks.sub_id, 0 = none: it needs one).  States: OUTBOX (made, the
 * backend's answer not recorded yet: sent again after a restart, found by
 * its key if it had gone out), LIVE (the backend took it: job_id), DONE
 * (nothing of it left to run), REFUSED (the backend said no; message).
 */
enum jf_sub_state { JF_SUB_OUTBOX = 0, JF_SUB_LIVE = 1, JF_SUB_DONE = 2, JF_SUB_REFUSED = 3 };

struct jf_sub_rec {
	int64_t id, group_id;
	enum jf_sub_state state;
	int64_t first_idx;    /* lowest task index in it */
	int64_t count;        /* tasks in it */
	int64_t throttle;     /* most of them running at once, as last set */
	int64_t attempt_base; /* the attempt number of each task's first run in it */
	int64_t job_id;       /* the backend's id, 0 before it is known */
	int64_t tries;        /* times handed to the backend */
	int64_t created_ms;
	char message[256];
};

/* Make a submission of the tasks of group_id with these indexes (idx
 * increasing, n > 0) and mark them as belonging to it. */
enum jf_err jf_sub_create(struct jf_store *st, int64_t group_id, const int64_t *idx, size_t n,
			  int64_t throttle, int64_t attempt_base, int64_t now_ms, int64_t *id);
enum jf_err jf_sub_get(struct jf_store *st, int64_t id, struct jf_sub_rec *r);
/* Submissions of group_id (0: every group) whose state is in mask (bits
 * 1 << state), in id order; fn returns non-zero to stop. */
enum jf_err jf_sub_list(struct jf_store *st, int64_t group_id, unsigned mask,
			int (*fn)(void *ctx, int64_t id), void *ctx);
enum jf_err jf_sub_set(struct jf_store *st, int64_t id, enum jf_sub_state state, int64_t job_id,
		       int64_t throttle, int64_t tries, const char *message);
/* For each submission of the group: its tasks not finished yet (Waiting,
 * Initializing, Running). */
enum jf_err jf_sub_unfinished(struct jf_store *st, int64_t group_id,
			      int (*fn)(void *ctx, int64_t sub_id, int64_t n), void *ctx);
/* The indexes of the tasks belonging to sub id, increasing; *idx is the
 * caller's to free. */
enum jf_err jf_sub_indexes(struct jf_store *st, int64_t id, int64_t **idx, size_t *n);
/* Tasks of sub id (of every submission of group_id when id is 0 and
 * group_id is not) not running now stop belonging to it: they need a new
 * submission if they are to run. */
enum jf_err jf_sub_release(struct jf_store *st, int64_t id, int64_t group_id);
enum jf_err jf_task_set_sub(struct jf_store *st, int64_t task_id, int64_t sub_id);
enum jf_err jf_task_sub(struct jf_store *st, int64_t task_id, int64_t *sub_id);
/* Up to limit Waiting tasks of the group that belong to no submission,
 * lowest index first, with their attempts so far. */
enum jf_err jf_task_list_unsubmitted(struct jf_store *st, int64_t group_id, int limit,
				     int (*fn)(void *ctx, int64_t id, int64_t idx, int64_t attempt),
				     void *ctx);

/*
 * dependencies (reference 10): a group's `after:` entries as accepted,
 * each resolved to the group or batch it names.  A row's state is what
 * the entry says: 0 waits, 1 holds, 2 can never hold (core/deps.h's
 * enum jf_dep_verdict); once it holds or can never hold it stays so.  An
 * `each` entry waits per task: its row says 0 while its target has not
 * ended, then 1 (the tasks whose pair can never hold were stopped), or 2
 * when the target went before it ended.
 */
struct jf_dep_rec {
	int64_t id, group_id; /* the row, the group that waits */
	int pos;              /* its place in after: */
	int64_t target_id;    /* 0 once the target is removed */
	char path[160];       /* the target now ("queues/q/groups/g", "tasks/x"), or
			       * where it was when it was removed */
	int when;             /* enum jf_dep_when */
	bool each;
	unsigned ok_mask;           /* 1 << each state of the target that satisfies it */
	int state;                  /* 0 waits, 1 holds, 2 never */
	int target_state;           /* the target's state now, -1 when removed */
	int64_t target_completions; /* its completions (count for a batch), 0 in Draft */
	int64_t target_finished_ms; /* when it ended, 0 if it has not (or is removed) */
};
/* Every row of group_id goes (before its rows are written again). */
enum jf_err jf_dep_clear(struct jf_store *st, int64_t group_id);
/* A row of group_id (pos: its place; target_id > 0; path: the target's
 * path now, kept if it is removed). */
enum jf_err jf_dep_add(struct jf_store *st, int64_t group_id, int pos, int64_t target_id,
		       const char *path, int when, bool each, unsigned ok_mask, int state);
/* The rows of group_id, in their order, to fn (until it returns nonzero). */
enum jf_err jf_dep_list(struct jf_store *st, int64_t group_id,
			int (*fn)(void *ctx, const struct jf_dep_rec *r), void *ctx);
/* The rows that wait (state 0) on target_id, by group then place. */
enum jf_err jf_dep_waiting_on(struct jf_store *st, int64_t target_id,
			      int (*fn)(void *ctx, const struct jf_dep_rec *r), void *ctx);
/* The rows that wait (state 0) of groups still active (Waiting, Running,
 * Paused) whose target has ended or gone: what a daemon that stopped
 * between an end and its consequence left to do. */
enum jf_err jf_dep_stale(struct jf_store *st, int (*fn)(void *ctx, const struct jf_dep_rec *r),
			 void *ctx);
enum jf_err jf_dep_set_state(struct jf_store *st, int64_t id, int state);
/* The targets of group_id (removed ones left out), at most max into out;
 * *n the count of all. */
enum jf_err jf_dep_targets(struct jf_store *st, int64_t group_id, int64_t *out, size_t max,
			   size_t *n);
/* target_id is about to be removed: its rows keep path as where it was. */
enum jf_err jf_dep_target_gone(struct jf_store *st, int64_t target_id, const char *path);
/* Of group_id's rows: those not each that wait, those each that wait,
 * those that can never hold, all. */
struct jf_dep_summary {
	int64_t waits, each_waits, never, all;
};
enum jf_err jf_dep_summary(struct jf_store *st, int64_t group_id, struct jf_dep_summary *s);
/* How many each rows wait, of every group. */
enum jf_err jf_dep_each_waiting(struct jf_store *st, int64_t *n);
/* Up to limit Waiting tasks of group_id (unsubmitted: only those that
 * belong to no submission), lowest index first, for which every waiting
 * each row of the group holds: task i of its target is in a state of its
 * ok_mask (a row not made yet: in the state it will be made with). */
enum jf_err jf_dep_ready_tasks(struct jf_store *st, int64_t group_id, bool unsubmitted, int limit,
			       int (*fn)(void *ctx, int64_t id, int64_t idx, int64_t attempt),
			       void *ctx);
/* Up to limit Waiting or Paused tasks of group_id whose pair in target_id
 * (0: removed) has ended outside ok_mask, or is gone: tasks that can never
 * start; lowest index first. */
enum jf_err jf_dep_unready_tasks(struct jf_store *st, int64_t group_id, int64_t target_id,
				 unsigned ok_mask, int limit,
				 int (*fn)(void *ctx, int64_t id, int64_t idx), void *ctx);

/*
 * plots (reference 11): what fs/ draws timeline.svg, usage.svg and
 * cost.svg from, streamed or summed in SQL so that memory does not grow
 * with the group or the ledger.
 */
struct jf_plot_span {
	int64_t attempts;       /* attempts of the group that started */
	int64_t first_start_ms; /* 0 when none */
	int64_t last_end_ms;    /* of the ended ones, 0 when none */
	int64_t open;           /* started and not ended */
};
enum jf_err jf_plot_group_span(struct jf_store *st, int64_t group_id, struct jf_plot_span *out);
struct jf_plot_row {
	int64_t task_idx, node_idx, attempt;
	int64_t start_ms, end_ms; /* end 0 while it runs */
	int end_state;            /* as jf_attempt_rec's */
};
/* Every started attempt of the group, in no particular order, to fn until
 * it returns non-zero. */
enum jf_err jf_plot_group_attempts(struct jf_store *st, int64_t group_id,
				   int (*fn)(void *ctx, const struct jf_plot_row *r), void *ctx);
/* The GPUs in use per model over [from, to), from the ledger's segments,
 * as changes: gpus at a segment's start (from, for one begun before) and
 * -gpus at its end, ordered by model, time, then change (ends first). */
enum jf_err jf_plot_gpu_changes(struct jf_store *st, int64_t from_ms, int64_t to_ms,
				int (*fn)(void *ctx, const char *gpu, int64_t t_ms, int64_t delta),
				void *ctx);
/* The start of the first ledger segment (0 when the ledger is empty), the
 * end of the segment closed last (0 when none), and how many are open:
 * each from an index, whatever the ledger's length. */
enum jf_err jf_plot_cost_span(struct jf_store *st, int64_t *first_ms, int64_t *last_end_ms,
			      int64_t *open);
/* Closed amounts per queue (id 0 and "(independent)" for the batches of
 * /tasks) and bucket: bucket = (end - t0) / bucket_ms clamped to
 * 0 .. n - 1; saturating sums; ordered by queue id then bucket. */
enum jf_err jf_plot_cost_buckets(struct jf_store *st, int64_t t0_ms, int64_t bucket_ms, int64_t n,
				 int (*fn)(void *ctx, int64_t queue_id, const char *queue,
					   int64_t bucket, int64_t amount),
				 void *ctx);

/* meta: small facts about this state directory ("uuid") */
enum jf_err jf_meta_get(struct jf_store *st, const char *key, char *buf, size_t n);
enum jf_err jf_meta_set(struct jf_store *st, const char *key, const char *value);

#endif
