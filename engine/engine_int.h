/*
 * engine_int.h - the engine's runtime tables, shared by its .c files.
 *
 * What holds:
 * - every attempt that has a process (started, not yet reaped) is in
 *   `runs`, keyed by attempt id, and holds its slot on `machines`;
 * - every task with at least one such attempt, or placed and being
 *   started, is in `tasks`, keyed by task id, with `live` counting its
 *   attempts still running;
 * - `groups` caches the parsed spec of accepted groups, keyed by group id:
 *   every group with a task in `tasks`, every active group the engine has
 *   looked at, and at most JF_DONE_KEEP ended ones besides (engine.c:
 *   jf_eng_trim).  Entries leave it only in jf_eng_trim, which the
 *   engine's entry points call last, so a grt pointer is good until the
 *   engine returns to its caller.
 * The store is the truth; these tables are rebuilt from it at start.
 */
#ifndef JF_ENGINE_INT_H
#define JF_ENGINE_INT_H

#include <pthread.h>

#include "core/lifecycle.h"
#include "core/sched.h"
#include "core/spec.h"
#include "core/why.h"
#include "backends/shimproto.h"
#include "engine/engine.h"
#include "engine/idmap.h"

/* The log files the shim rotates at the log cap: stdout, stderr, logs. */
#define JF_ROTATION_CHECK_MS 5000  /* how often running nodes' records are read */
#define JF_ROTATION_EVENT_MS 60000 /* at most one LogRotated per file this often */

/* Why the engine is killing a run. */
enum jf_why {
	JF_WHY_NONE = 0,
	JF_WHY_TIMEOUT,   /* attempt over its timeout: DeadlineExceeded */
	JF_WHY_STOP,      /* ctl stop, or the group ended (FailJob, success policy) */
	JF_WHY_PAUSE,     /* ctl pause */
	JF_WHY_RESTART,   /* ctl restart */
	JF_WHY_GANG,      /* another node of the same task failed */
	JF_WHY_DEADLINE,  /* the group's activeDeadlineSeconds passed */
	JF_WHY_PREEMPT,   /* a spot task yields to on-demand work (reference 5.4) */
	JF_WHY_IMAGEPULL, /* an image could not be pulled: waits, backs off, no retry used */
};

/* What a node being preempted (and then preempted), and a spot group
 * waiting for a window, say in their status; the flags that say so to the
 * engine are typed (attempts.preempting, JF_GF_WINDOW), never these texts. */
#define JF_PREEMPTING_MSG "preempting: on-demand work needs the GPUs"
#define JF_PREEMPTED_MSG  "preempted by on-demand work; waiting to run again"
#define JF_WINDOW_MSG     "waiting for a low-risk window"

/* Tasks one pass starts when the daemon's loop runs it (schedule.c), at
 * most; JF_PASS_STEP at a time, stopping early for a waiting request. */
#define JF_PASS_STARTS 16
#define JF_PASS_STEP   4


struct grt { /* an accepted group's runtime */
	int64_t id;
	int64_t queue_id;
	enum jf_group_kind kind;
	char queue[JF_NAME_MAX]; /* "" for batches */
	char dirname[JF_NAME_MAX];
	char *display;
	struct jf_spec *spec;
	struct jf_sched_req req;
	bool req_ok;
	bool unsendable_said; /* delegated: its message says why it cannot be sent */
	bool reason_said;     /* delegated: its message says why the backend waits */
	int64_t failed_tasks; /* indexes failed for good (counted at load) */
	bool ended;           /* in a final state (as far as the engine saw) */
	bool kept;            /* ended, idle, among the JF_DONE_KEEP kept */
	/* image pulls that failed (image.c): Kubernetes' back-off, 10 s
	 * doubling to 5 min; nothing of the group starts before pull_until_ms */
	int64_t pull_backoff_ms;
	int64_t pull_until_ms;
	char pull_image[128]; /* the image that failed last */
	char pull_msg[320];   /* the group's message while it backs off */
	/* storage.c: its object sources must have synced since this (the
	 * acceptance, or the load after a restart) before a node starts */
	int64_t sync_after_ms;
	bool syncing_said; /* its message says it waits for a sync */
	/* delegated: why the backend says it waits (a jobfs reason word) and
	 * when it expects it to start (0: it does not say) */
	char be_reason[24];
	int64_t be_eta_ms;
	/* why.c: its finished tasks' run times (loaded from the store at first use) */
	bool dur_loaded;
	int64_t dur_n, dur_sum_ms;
	/* why.c: scratch of one pass, valid where the stamp is the pass's */
	size_t why_index;
	unsigned why_stamp, hold_stamp;
	int64_t why_first_end, why_last_end, hold_amount, hold_tasks;
	bool budget_held; /* delegated: its batches are held for its queue's budget (budget.c) */
	/* deps.c: its after: entries (store: deps) */
	bool dep_any;             /* it has entries */
	bool dep_wait;            /* an entry (not each) waits: nothing of it starts */
	bool dep_each;            /* an each entry waits: a task starts once its pair has */
	bool dep_said;            /* flagged JF_GF_DEPENDENCY, its message says why: */
	char dep_msg[512];        /* this */
	bool dep_none;            /* each: the last count found no task ready ... */
	int64_t dep_seen_epoch;   /* ... at this e->dep_epoch */
	int64_t dep_seen_waiting; /* ... with this many tasks waiting */
};

/* deps.c: an entry of a spec's after: as resolved when it is written */
struct jf_dep_res {
	int64_t target_id;
	int target_state; /* enum jf_state */
	char path[160];   /* "queues/q/groups/g", "tasks/x" */
};

#define JF_PULL_BACKOFF_FIRST_MS 10000
#define JF_PULL_BACKOFF_MAX_MS   300000

/* How long env.c trusts a user's passwd entry (home, name). */
#define JF_PW_TTL_MS 10000

/* Ended groups with nothing running whose parsed spec stays cached. */
#define JF_DONE_KEEP 64

/* The most of a failure's words (a start failure's "exec foo: No such file
 * or directory") a task's or a group's message carries, NUL included. */
#define JF_FAIL_WORDS_MAX 128

struct trun { /* a task with nodes placed */
	int64_t task_id, group_id, idx;
	int64_t nodes;
	int64_t live;     /* attempts not reaped yet */
	int64_t nstarted; /* of those, whose start is recorded */
	int64_t attempt;  /* the task's attempt number */
	int64_t start_ms; /* when this attempt was started (youngest preempted first) */
	enum jf_why why;  /* set when the engine kills it */
	bool failed;      /* some node failed this attempt */
	int fail_code;
	char fail_container[64];
	char fail_words[JF_FAIL_WORDS_MAX]; /* what its end said past the code (ending.c: end_words)
					     */
	bool fail_timeout;
	struct jf_sched_slot *slots; /* one per node; held until the task leaves */
	int64_t *attempt_ids;        /* one per node: its running attempt, 0 = none */
	uint64_t *cpusets;           /* cpu_exclusive: JF_CPUSET_WORDS per node, else NULL */
	bool held;                   /* slots are taken on machines */
	/* a scheduling backend's (delegate.c): which batch runs it */
	uint64_t key;       /* its submission, 0 = none */
	int64_t run;        /* the backend's run of the element */
	bool requeued;      /* the backend queues it again itself */
	bool preempted_end; /* it ended preempted, not queued again */
	char **hosts;       /* node i ran on hosts[i] (NULL: unknown) */
};

struct run { /* one node attempt with a process */
	int64_t attempt_id, node_id, task_id, group_id;
	int64_t node_idx, attempt;
	char handle[JF_HANDLE_MAX];          /* from start() on, for signals */
	bool started;                        /* its start is recorded: Running, billed from then */
	int64_t deadline_ms;                 /* 0 = none */
	int64_t kill_at_ms;                  /* TERM sent; KILL at this time; 0 = not killing */
	bool killed;                         /* KILL sent */
	bool no_dirs;                        /* its run directory could not be made */
	struct rotation_seen {               /* RUN_DIR/rotation, as last read (engine.c) */
		int64_t mtime_ns, size, ino; /* the file's stat then; 0 = never read */
		int64_t cap;
		int64_t rotations[JF_SHIM_LOG_FILES], dropped[JF_SHIM_LOG_FILES];
		int64_t told[JF_SHIM_LOG_FILES];    /* rotations a LogRotated event covered */
		int64_t told_ms[JF_SHIM_LOG_FILES]; /* when that event was written */
	} rot;
};

/* The step's queue (step.c): an action, or (fn NULL) a notification. */
typedef void (*jf_act_fn)(struct jf_engine *e, int64_t a, int64_t b, int64_t c);
struct jf_act {
	jf_act_fn fn;
	int64_t a, b, c;
	struct jf_change ch;
};

struct jf_step {
	int depth;           /* steps open, the outermost commits */
	bool failed;         /* this step cannot commit (a statement or the queue failed) */
	bool aborted;        /* the engine chose to roll it back (jf_eng_step_abort) */
	bool poisoned;       /* a commit failed: every step fails until the tables are resynced */
	struct jf_act *acts; /* what the outermost step does once committed */
	size_t nacts, cap;
	int64_t failures; /* steps whose commit failed, since start */
};

/* view.c: the engine's figures as readers on other threads may see them */
struct jf_view {
	bool shared;        /* jf_engine_share_view: publish at each step's end */
	pthread_mutex_t mu; /* a leaf lock: nothing is taken while it is held */
	struct jf_view_machine *use;
	size_t nuse, cap;
	bool down;
	char trouble[512];
	int64_t published_ms; /* delegated: the last publication (at most one a tick) */
};

struct jf_engine {
	char *state_dir;
	struct jf_store *st;
	struct jf_cluster *cluster;
	struct jf_runner *run;    /* a runner (local, sim), or */
	struct jf_scheduler *sch; /* a scheduler (slurm): delegated */
	struct jf_clock clock;
	int64_t kill_grace_ms;
	jf_change_fn notify;
	void *notify_ctx;
	struct jf_sched_machine *machines;
	size_t nalloc; /* machines, use and excl were sized for this many */
	struct jf_machine_use *use;
	uint64_t **excl;           /* per machine: cores held exclusively (NULL: none yet) */
	struct jf_forecast **fc;   /* per GPU model: the spot risk forecast */
	int64_t *od_use;           /* per GPU model: GPUs in on-demand use now */
	struct jf_idmap groups;    /* group id -> struct grt */
	struct jf_idmap tasks;     /* task id -> struct trun */
	struct jf_idmap runs;      /* attempt id -> struct run */
	int64_t log_cap;           /* bytes per log file, 0 = no cap */
	int64_t keep_logs_ms;      /* the daemon's retention of finished groups' logs */
	int64_t keep_check_ms;     /* next look for finished groups past their retention */
	bool trash_pending;        /* the store's trash may have rows (trash.c) */
	bool trash_said;           /* a removal that failed was told on stderr */
	int64_t rotation_check_ms; /* next look at running nodes' log rotations */
	int64_t window_check_ms;   /* spot tasks wait for a low-risk window: look again then */
	int64_t pull_check_ms;     /* a group's pull back-off ends: schedule then */
	struct jf_stor *stor;      /* storage.c: volumes and object sources */
	struct jf_idmap budgets;   /* budget.c: queue id -> its budget, for queues with one */
	int64_t evict_check_ms;    /* how often a node's emptydirs are measured, 0 = default */
	const struct jf_runtime_conf *rt; /* containers (reference 8.1), NULL: on the host */
	bool scheduling;                  /* guards re-entry */
	bool again;                       /* schedule once more after this pass */
	/* a backend that schedules for itself (delegate.c) */
	bool delegated;
	uint64_t machines_sig; /* delegated: what the backend's machines were */
	bool be_down;          /* it cannot be reached */
	int64_t be_down_ms;    /* since when */
	char be_msg[256];      /* why */
	char *partition_ondemand, *partition_spot;
	int64_t array_max;    /* most indexes one batch spans */
	struct jf_loop *loop; /* jf_engine_attach, or NULL */
	int tick_timer;
	bool yielding;              /* passes wait for the loop's deferred job (engine.h) */
	bool sched_pending;         /* yielding: a pass was asked for */
	bool in_run;                /* inside the loop's pass: JF_PASS_STARTS a pass */
	bool trim;                  /* a group ended: jf_eng_trim has work */
	bool making;                /* some group may have task rows not made yet */
	int64_t group_deadline_ms;  /* the last tick's earliest group timer, -1 none */
	bool making_said;           /* ... and making them failed: said on stderr */
	int64_t chunks_made;        /* chunks of task rows made since start */
	int64_t kept[JF_DONE_KEEP]; /* ended groups kept in `groups`, oldest at kept_head */
	size_t nkept, kept_head;
	bool urgent;                /* ... and no stopping for requests before that */
	bool (*waiting)(void *ctx); /* yielding: does the loop have a request waiting? */
	void *waiting_ctx;
	struct jf_step step;
	int64_t illegal_moves; /* moves the lifecycle table refused (move.c) */
	struct jf_pw_cache {   /* env.c: the last user looked up */
		bool valid, found;
		uid_t uid;
		int64_t at_ms;
		char home[512], name[256];
	} pw;
	bool illegal_soft;   /* refuse them without aborting (the tests of it) */
	struct jf_view view; /* view.c: what other threads read of the engine */
	struct jf_whys *why; /* why.c: reasons and ETAs */
	enum jf_eta_mode eta_mode;
	bool why_waiting;                  /* the last pass left something waiting */
	bool why_dirty;                    /* ... and took no snapshot for the simulation */
	unsigned why_stamp;                /* why.c: a pass's stamp in struct grt */
	bool dep_each_live;                /* deps.c: some each entry waits (task ends matter) */
	int64_t dep_epoch;                 /* deps.c: bumped by whatever may make a task ready */
	unsigned (*hook_leave)(void *ctx); /* jf_engine_set_step_hooks */
	void (*hook_enter)(void *ctx, unsigned held);
	void *hook_ctx;
	unsigned hook_held;
};

/* move.c: the one way an object changes state (see there) */
enum jf_level { JF_LV_GROUP, JF_LV_TASK, JF_LV_NODE };
struct jf_obj { /* the object: its node, else its task, else its group */
	int64_t queue_id, group_id, task_id, node_id;
};
/* Where ev takes an object of level lv in state from; -1: nowhere. */
int jf_eng_next_state(enum jf_level lv, int from, enum jf_event ev);
/* Move o by ev (message NULL: kept): the new state, or -1 when o is gone
 * or the table refuses the move (then nothing is written). */
int jf_eng_move(struct jf_engine *e, const struct jf_obj *o, enum jf_event ev, const char *message);
/* Does ev apply to o now?  (false for an illegal move is loud, as above:
 * for the store's composite moves - accept, reject, reset - checked first) */
bool jf_eng_may_move(struct jf_engine *e, const struct jf_obj *o, enum jf_event ev);
/* Every task of group's group in one of from_mask's states (1 << state)
 * moves by ev; how many did, -1 when refused. */
int64_t jf_eng_move_tasks(struct jf_engine *e, const struct jf_obj *group, unsigned from_mask,
			  enum jf_event ev, const char *message);
#define JF_OBJ_GROUP(g)      (&(struct jf_obj){ (g)->queue_id, (g)->id, 0, 0 })
#define JF_OBJ_TASK(g, t)    (&(struct jf_obj){ (g)->queue_id, (g)->id, (t), 0 })
#define JF_OBJ_NODE(g, t, n) (&(struct jf_obj){ (g)->queue_id, (g)->id, (t), (n) })

/* why.c: reasons and ETAs (reference 9.1) */
#define JF_ETA_REFRESH_MS       2000  /* a snapshot for the simulation at most this often */
#define JF_ETA_STALE_MS         10000 /* ... and a pass to take one when older and work waits */
#define JF_ETA_MAX_PASSES       1000  /* planning passes of one simulation at most */
#define JF_ETA_HORIZON_MS       (INT64_C(30) * 86400 * 1000)
#define JF_ETA_QUANTUM_MS       1000 /* ends this close are taken together, */
#define JF_ETA_QUANTUM_PERMILLE 10   /* ... or within 1% of how far ahead they are */
#define JF_ETA_MAX_GROUPS       256  /* the first groups in the planner's order simulated */
struct jf_why_pass {                 /* what a pass hands over (schedule.c) */
	const struct jf_plan_in *in;
	const struct jf_plan *plan;
	struct jf_why_group *wg; /* every group with waiting tasks, in the pass's order */
	size_t nwg;
	const int64_t *run_gid;                /* per in->running: its group */
	const int64_t *run_start_ms;           /* per in->running: its attempt's start */
	const struct jf_sched_machine *before; /* free before the pass; NULL: no snapshot */
};
enum jf_err jf_eng_why_init(struct jf_engine *e, enum jf_eta_mode mode);
void jf_eng_why_free(struct jf_engine *e);
bool jf_eng_why_snapshot_due(struct jf_engine *e);
/* Is the last snapshot old while something waits (the tick asks for a pass)? */
bool jf_eng_why_stale(struct jf_engine *e);
void jf_eng_why_pass(struct jf_engine *e, const struct jf_why_pass *p);
/* Why the planner skipped a group, in its message's words (schedule.c). */
const char *jf_eng_skip_message(enum jf_plan_why why);
/* A scheduling backend's pass: the reasons it told and where each stands. */
void jf_eng_why_delegated(struct jf_engine *e);
/* The reason a group's flags (JF_GF_*) give, or JF_REASON_NONE. */
enum jf_reason jf_eng_flags_reason(unsigned flags);
/* One of g's tasks ran run_ms and ended by itself (ending.c). */
void jf_eng_why_task_ran(struct jf_engine *e, struct grt *g, int64_t run_ms);

/* view.c: publish the view now (after a committed step); delegated, at
 * most once a tick unless force.  What readers hold the view lock to read
 * (the delegated cluster's machines, the forecasts) the engine changes
 * under jf_engine_view_lock() (engine.h; a no-op until shared). */
void jf_eng_view_publish(struct jf_engine *e, bool force);
void jf_eng_view_free(struct jf_engine *e);

/* step.c: the store first, then the world (see there) */
void jf_eng_step_begin(struct jf_engine *e);
/* Commit the outermost step and then do what it queued; false when it
 * failed (then nothing queued is done and the engine is poisoned until
 * jf_eng_leave).  An inner end answers whether the step can still commit. */
bool jf_eng_step_end(struct jf_engine *e);
/* End the step rolling back all of the outermost step (SQLite has no
 * partial undo): the engine resyncs at the entry point's end. */
void jf_eng_step_abort(struct jf_engine *e);
/* Can the current step still commit? */
bool jf_eng_step_ok(const struct jf_engine *e);
/* fn(e, a, b, c) once the step has committed (at once outside a step). */
void jf_eng_after(struct jf_engine *e, jf_act_fn fn, int64_t a, int64_t b, int64_t c);
/* An entry point of engine.h: one step around all it does; leave commits
 * it, takes the tables up again after a failed commit, and trims the
 * group cache.  leave answers whether the entry's step committed. */
void jf_eng_enter(struct jf_engine *e);
bool jf_eng_leave(struct jf_engine *e);
void jf_eng_step_release(struct jf_engine *e);
/* engine.c: forget the tables and take them up again from the store, as
 * at start (adopt.c); outside any step, with no grt or trun pointer held. */
void jf_eng_resync(struct jf_engine *e);

/* engine.c */
int64_t jf_eng_now(struct jf_engine *e);
/* A time a backend reported on the real wall clock (a node's start or
 * end), on the engine's clock (struct jf_clock's skew_ms); 0 stays 0. */
int64_t jf_eng_from_wall(struct jf_engine *e, int64_t wall_ms);
/* Yielding and the loop has a request waiting: stop after this step. */
bool jf_eng_should_yield(struct jf_engine *e);
/* Read r's RUN_DIR/rotation if it changed and write a Warning LogRotated
 * on the node for each file rotated since the last one said so: at most
 * one per file every JF_ROTATION_EVENT_MS, unless final (the node ended:
 * whatever is left untold is told; the caller, inside its transaction,
 * announces the change). */
void jf_eng_check_rotation(struct jf_engine *e, struct run *r, bool final);
struct grt *jf_eng_group(struct jf_engine *e, int64_t group_id);
void jf_eng_group_drop(struct jf_engine *e, int64_t group_id);
/* The group's spec was just accepted: the cache takes the spec parsed for
 * it (the one parse of a submission), replacing what it held. */
struct grt *jf_eng_group_install(struct jf_engine *e, int64_t group_id, struct jf_spec *spec);
/* g reached a final state (or left one: false): the cache may let it go. */
void jf_eng_group_ended(struct jf_engine *e, struct grt *g, bool ended);
/* Let ended groups with nothing running go from the cache, but the last
 * JF_DONE_KEEP: only where no grt pointer is held (an entry point's end). */
void jf_eng_trim(struct jf_engine *e);
void jf_eng_changed(struct jf_engine *e, enum jf_change_kind kind, int64_t queue_id,
		    int64_t group_id, int64_t task_id, int64_t node_id, bool structure);
void jf_eng_event(struct jf_engine *e, const struct grt *g, int64_t task_id, int64_t task_idx,
		  int64_t node_id, int64_t node_idx, const char *type, const char *reason,
		  const char *fmt, ...) __attribute__((format(printf, 9, 10)));
void jf_eng_group_event(struct jf_engine *e, int64_t queue_id, int64_t group_id,
			enum jf_group_kind kind, const char *type, const char *reason,
			const char *fmt, ...) __attribute__((format(printf, 7, 8)));
void jf_eng_task_object(const struct grt *g, int64_t task_idx, int64_t node_idx, char *buf,
			size_t n);

/* storage.c (reference 8.3): volumes and object sources */
enum jf_err jf_eng_stor_init(struct jf_engine *e, const struct jf_engine_config *cfg);
void jf_eng_stor_free(struct jf_engine *e);
/* A tick: syncs that ended, retries due; the ms until it wants to look
 * again (-1: nothing to look at). */
int64_t jf_eng_stor_tick(struct jf_engine *e);
/* An fd readable when a sync has ended (an epoll of their pidfds), -1 if
 * none could be made (then the tick finds the ends); and what to do then. */
int jf_eng_stor_fd(struct jf_engine *e);
bool jf_eng_stor_reap(struct jf_engine *e); /* true when a sync ended */
/* Is the group's storage not ready for a start (an object source not
 * synced since g->sync_after_ms)?  Starts the syncs it needs and says so
 * in the group's message. */
bool jf_eng_stor_waits(struct jf_engine *e, struct grt *g);
/* A group just accepted that may start at once (no after:, no spot window,
 * its queue's budget not spent): its object sources' syncs start now, in
 * the step that accepts it, not in the pass after it. */
void jf_eng_stor_accepted(struct jf_engine *e, struct grt *g);
/* At submission: every volume and object source the spec names exists
 * and uid may use it; else an error naming the entry. */
enum jf_err jf_eng_stor_check(struct jf_engine *e, const struct jf_spec *s, uid_t uid,
			      struct jf_error *err);
/* The node's mounts (backend.h) for spec s, into out (at most n): paths
 * borrowed from s and from bufs, which holds n PATH_MAX entries; the
 * count, or -1 with why when a volume or source has gone. */
struct jf_mount;
ssize_t jf_eng_stor_mounts(struct jf_engine *e, const struct jf_spec *s, struct jf_mount *out,
			   char (*bufs)[4096], size_t n, char *why, size_t whylen);
/* Within the step that starts (ends) node_id: its mounts recorded (let
 * go), with the events of the volumes and sources. */
void jf_eng_stor_mounted(struct jf_engine *e, const struct grt *g, int64_t task_idx,
			 int64_t node_idx, int64_t node_id);
void jf_eng_stor_unmounted(struct jf_engine *e, const struct grt *g, int64_t task_idx,
			   int64_t node_idx, int64_t node_id);

/* budget.c (reference 10): a queue's budget, once spent, lets nothing new
 * start in it.  load: the queues' budgets from the store (start, resync);
 * spec: a queue's accepted spec (s NULL: none), evaluated at once;
 * forget: the queue is gone; touch: a ledger segment of the queue opened
 * or closed (queue_id -1: of any); tick: evaluate what is due, the ms
 * until the next deadline (-1 none); waits: the scheduling gate (the
 * group starts nothing: flagged, and on a scheduling backend held). */
struct jf_queue_spec;
void jf_eng_budget_load(struct jf_engine *e);
void jf_eng_budget_free(struct jf_engine *e);
void jf_eng_budget_spec(struct jf_engine *e, int64_t queue_id, const char *name,
			const struct jf_queue_spec *s);
void jf_eng_budget_forget(struct jf_engine *e, int64_t queue_id);
void jf_eng_budget_touch(struct jf_engine *e, int64_t queue_id);
int64_t jf_eng_budget_tick(struct jf_engine *e);
bool jf_eng_budget_waits(struct jf_engine *e, struct grt *g);
/* deps.c (reference 10): after: entries */
/* At submission: resolve spec's entries for group g and check them (the
 * target exists and may be seen, is not g, is named once; each: accepted,
 * same task count; no cycle); *out (the caller's to free) one per entry,
 * or an error naming the entry and its line. */
enum jf_err jf_eng_dep_check(struct jf_engine *e, const struct jf_group_rec *g,
			     const struct jf_spec *s, struct jf_dep_res **out,
			     struct jf_error *err);
/* In the step that accepts group_id: its rows, decided where the target
 * has ended already (an each row: by jf_eng_dep_accepted). */
void jf_eng_dep_record(struct jf_engine *e, int64_t group_id, const struct jf_spec *s,
		       const struct jf_dep_res *res);
/* After the acceptance (g installed): end it, stop tasks, flag it, say
 * it waits, as its rows say. */
void jf_eng_dep_accepted(struct jf_engine *e, struct grt *g);
/* The cache entry's fields from the store (flags: the group's). */
void jf_eng_dep_load(struct jf_engine *e, struct grt *g, unsigned flags);
/* move.c: group_id (task_id 0), a task of it (task_id > 0) or its tasks
 * together (task_id < 0) moved to state to. */
void jf_eng_dep_moved(struct jf_engine *e, int64_t group_id, int64_t task_id, int to);
/* ctl restart of g: entries that could never hold are judged again by
 * their targets as they are now; each entries pair again. */
void jf_eng_dep_restarted(struct jf_engine *e, struct grt *g);
/* When g's entries came to hold (the latest end of a target of an entry
 * that holds), 0 if it has none: a queue's group_timeout counts from
 * then, not from a submission that had to wait for them. */
int64_t jf_eng_dep_since(struct jf_engine *e, const struct grt *g);
/* group_id was renamed: the messages of the groups waiting for it. */
void jf_eng_dep_renamed(struct jf_engine *e, int64_t group_id);
/* In the step that removes t: the rows waiting on it can never hold. */
void jf_eng_dep_removing(struct jf_engine *e, const struct jf_group_rec *t);
/* At start: rows whose target ended or went without their dependents told. */
void jf_eng_dep_sweep(struct jf_engine *e);
/* The gate of a pass: nothing of g may start (flagged, with its message);
 * else *waiting (g's waiting tasks) lowered to how many may start. */
bool jf_eng_dep_waits(struct jf_engine *e, struct grt *g, int64_t *waiting);
/* The waiting tasks of g (unsubmitted: in no submission) a pass may take,
 * lowest index first: with each entries waiting, those whose pairs hold. */
enum jf_err jf_eng_dep_list(struct jf_engine *e, struct grt *g, bool unsubmitted, int limit,
			    int (*fn)(void *ctx, int64_t id, int64_t idx, int64_t attempt),
			    void *ctx);

/* requests.c: make a chunk (store.h) more task rows of the first group (in
 * submission order) that has rows not made yet, in one step, and tell the
 * tree its tasks/ changed; true while some group has more to make. */
bool jf_eng_make_tasks(struct jf_engine *e);
/* retain.c: the state directory's trash and the retention of logs. */
void jf_eng_run_dir(const struct jf_engine *e, int64_t node_id, int64_t attempt, char *buf,
		    size_t n);
/* Within a step: path to go (store.h: jf_trash_add). */
void jf_eng_trash(struct jf_engine *e, enum jf_trash_kind kind, const char *path);
/* A tick's share of the trash; true when more is left. */
bool jf_eng_trash_turn(struct jf_engine *e);
/* Finished groups past their retention: their run directories to the
 * trash, a LogsRemoved event each; ms until the next look. */
int64_t jf_eng_keep_check(struct jf_engine *e);

/* schedule.c: one planning pass (core/plan.c) and the starts it decides,
 * then the preemptions on-demand work needs (core/preempt.c) */
void jf_eng_schedule(struct jf_engine *e);

/* run.c */
/* Open the ledger segment of a node attempt that started at start_ms. */
void jf_eng_bill_start(struct jf_engine *e, const struct grt *g, int64_t task_id, int64_t task_idx,
		       int64_t node_id, int64_t node_idx, int64_t attempt_id, int64_t attempt,
		       int64_t start_ms);
/* Start node ni of t, whose attempt is recorded and registered in runs
 * (run.c prepares it; adopt.c after a crash before its supervisor ran). */
void jf_eng_launch_node(struct jf_engine *e, struct grt *g, struct trun *t, int64_t ni, uid_t uid,
			gid_t gid);
/* Start all nodes of a placed task; takes t (its slots already taken). */
void jf_eng_start_task(struct jf_engine *e, struct grt *g, struct trun *t, uid_t uid, gid_t gid);
/* The same in two steps, so that one transaction can hold the attempts of
 * many tasks: prepare records t's attempts (inside the caller's
 * transaction; false: t is gone, freed), launch starts their supervisors
 * once the step has committed (an action, step.c). */
bool jf_eng_start_prepare(struct jf_engine *e, struct grt *g, struct trun *t, uid_t uid, gid_t gid);
void jf_eng_start_launch(struct jf_engine *e, struct trun *t, uid_t uid, gid_t gid);
/* Start the supervisor of a recorded attempt once the step commits. */
void jf_eng_launch_later(struct jf_engine *e, int64_t attempt_id, uid_t uid, gid_t gid);
/* Actions (jf_eng_after): SIGTERM, SIGKILL to the run of attempt a. */
void jf_eng_act_term(struct jf_engine *e, int64_t attempt_id, int64_t b, int64_t c);
void jf_eng_act_kill(struct jf_engine *e, int64_t attempt_id, int64_t b, int64_t c);
struct trun *jf_trun_new(int64_t task_id, int64_t group_id, int64_t idx, int64_t nodes);
void jf_trun_free(struct trun *t);
/* ending.c: an attempt ended; what follows (see there). */
void jf_eng_finish(struct jf_engine *e, const struct jf_run_result *r);
/* A pending start confirmed (r->started, backend.h): record it. */
void jf_eng_started(struct jf_engine *e, const struct jf_run_result *r);
void jf_eng_kill_task(struct jf_engine *e, struct trun *t, enum jf_why why);
/* Preempt a spot task: SIGTERM now, SIGKILL after grace_ms (the cluster's
 * preempt_grace; less when a restarted daemon resumes a preemption). */
void jf_eng_preempt_task(struct jf_engine *e, struct trun *t, int64_t grace_ms);
/* Kill every running task of a group, for why; returns how many. */
int jf_eng_kill_group(struct jf_engine *e, int64_t group_id, enum jf_why why);
/* On-demand GPUs of a model went up or down by delta: record it (store,
 * forecast).  Spot work is not demand: only on-demand nodes count. */
void jf_eng_demand(struct jf_engine *e, int model, int64_t delta);
/* cpu_exclusive: take (cpuset NULL: pick) or give back a node's cores. */
bool jf_eng_take_cores(struct jf_engine *e, struct trun *t, int64_t node, const uint64_t *cpuset);
void jf_eng_give_cores(struct jf_engine *e, struct trun *t);
/* Give back t's cores and its places on the machines (once). */
void jf_eng_release_slots(struct jf_engine *e, struct trun *t);
/* A new entry of e->runs, keyed by its attempt (handle NULL: none yet);
 * NULL when out of memory (nothing added). */
struct run *jf_eng_run_add(struct jf_engine *e, int64_t attempt_id, int64_t node_id,
			   int64_t task_id, int64_t group_id, int64_t node_idx, int64_t attempt,
			   const char *handle);
/* How strong a reason to end a task is: a stronger one replaces a weaker. */
int jf_eng_why_rank(enum jf_why w);
/* After a restart: a task still Running whose every node's last attempt
 * had ended (the daemon died between recording the ends and judging the
 * task): judge it now, as it would have been.  False if some node's last
 * attempt has not ended or never existed (then the caller decides). */
bool jf_eng_resolve_ended(struct jf_engine *e, struct grt *g, int64_t task_id, int64_t task_idx);
/* adopt.c: after a restart, take over the attempts the store says are running. */
void jf_eng_adopt_all(struct jf_engine *e);
/* End groups past activeDeadlineSeconds or their queue's group_timeout. */
/* Returns ms until the next group timer, -1 if none. */
int64_t jf_eng_group_timers(struct jf_engine *e);
/* Decide a group's state from its task counts (after any change). */
void jf_eng_settle_group(struct jf_engine *e, struct grt *g);

/* image.c: containers (reference 8.1) */
/* Fill im (and *env, the caller's to free with jf_env_free) for container
 * c when the engine runs containers and c has an image; false when it
 * runs on the host (im untouched) or memory ran out (*oom). */
bool jf_eng_proc_image(struct jf_engine *e, const struct grt *g, const struct jf_container *c,
		       int64_t task_idx, int64_t node_idx, int64_t attempt, const char *gpu_ids,
		       const char *ckpt_dir, uid_t uid, struct jf_proc_image *im, char ***env,
		       bool *oom);
/* A note of a run's supervisor (Pulling, Pulled, Created, Failed): an
 * event of its node; "ImageDigest" notes set the node's image digest. */
void jf_eng_note(struct jf_engine *e, const struct jf_run_result *res);
/* What a node records at its start: runtime, images. */
void jf_eng_node_images(struct jf_engine *e, const struct grt *g, int64_t node_id);
/* A task whose image could not be pulled is back to waiting: the group
 * backs off (events, message, flag). */
void jf_eng_pull_backoff(struct jf_engine *e, struct grt *g, struct trun *t);
/* A node of g started: the pull back-off is over. */
void jf_eng_pull_ok(struct jf_engine *e, struct grt *g);
/* Is g backing off at now (then e->pull_check_ms says when to look)? */
bool jf_eng_pull_waits(struct jf_engine *e, struct grt *g, int64_t now);

/* delegate.c: the engine over a backend that schedules for itself */
/* At start: machines from the backend, runs and batches taken up again. */
void jf_eng_delegate_start(struct jf_engine *e);
/* Notes from the backend (its fd was readable). */
void jf_eng_delegate_notes(struct jf_engine *e);
/* The pass that replaces planning: hand waiting tasks to the backend in
 * batches, within parallelism and queue capacity. */
void jf_eng_submit_pass(struct jf_engine *e);
/* The group ends or pauses: what the backend still holds of it goes too. */
void jf_eng_delegate_kill_group(struct jf_engine *e, int64_t group_id, enum jf_why why);
/* A task that is not running leaves its batch (ctl on one task). */
void jf_eng_delegate_withdraw(struct jf_engine *e, int64_t task_id);
/* /cluster's view of machine m. */
void jf_eng_delegate_use(struct jf_engine *e, size_t m, struct jf_machine_use *u);
/* The cluster's machines become the backend's (those of priced GPU models). */
void jf_eng_delegate_machines(struct jf_engine *e);
/* g->req and g->req_ok from its spec and today's machines (and, on a
 * scheduling backend, whether its nodes have the GPUs at all); err says
 * why not. */
bool jf_eng_judge_request(struct jf_engine *e, struct grt *g, struct jf_error *err);
/* Can the backend's nodes take spec's GPUs at all?  err names what they have. */
bool jf_dlg_request_ok(const struct jf_engine *e, const struct jf_spec *spec, struct jf_error *err);
/* A Slurm pending reason as one of jobfs's (Resources, Parallelism, ...),
 * and what it means ("" unknown: Slurm's word is returned). */
const char *jf_dlg_slurm_reason(const char *slurm, const char **meaning);
/* The backend's name for model's GPUs ("" for untyped GRES). */
const char *jf_dlg_gpu_type(const struct jf_engine *e, int model);
/* A batch held or released, an element (-1: all) cancelled, once the step
 * has committed. */
void jf_dlg_hold(struct jf_engine *e, uint64_t key, bool hold);
void jf_dlg_cancel(struct jf_engine *e, uint64_t key, int64_t idx);
/* resume: the batches a pause held may run again. */
void jf_eng_delegate_resumed(struct jf_engine *e, int64_t group_id);
/* delegate.c, for delegate_notes.c: a batch's directory, the group of a
 * submission (with its record), a group's owner and state */
void jf_dlg_batch_dir(struct jf_engine *e, uint64_t key, char *buf, size_t n);
struct grt *jf_dlg_group_of_sub(struct jf_engine *e, int64_t sub_id, struct jf_sub_rec *sr);
void jf_dlg_owner(struct jf_engine *e, int64_t group_id, uid_t *uid, gid_t *gid, int *state);
/* adopt.c: tasks the store says run with nothing running: judged from
 * their last attempts, or waiting again. */
void jf_eng_adopt_orphans(struct jf_engine *e);

/* env.c: the environment of one node's process: NULL-terminated array of
 * "K=V" strings, caller frees with jf_env_free. */
char **jf_env_build(struct jf_engine *e, const struct grt *g, const struct jf_container *c,
		    int64_t task_idx, int64_t node_idx, int64_t attempt, const char *gpu_ids,
		    const char *ckpt_dir, uid_t uid);
/* The same without the host's base (PATH, HOME, ...): a container's. */
char **jf_env_build_node(struct jf_engine *e, const struct grt *g, const struct jf_container *c,
			 int64_t task_idx, int64_t node_idx, int64_t attempt, const char *gpu_ids,
			 const char *ckpt_dir, uid_t uid);
void jf_env_free(char **env);
/* p: container c of a node, its argv (c's command then args, borrowed) and
 * the environment above; the arrays go to *argv and *env for the caller to
 * free (free, jf_env_free) even when this fails (out of memory: false). */
bool jf_env_proc(struct jf_engine *e, const struct grt *g, const struct jf_container *c,
		 int64_t task_idx, int64_t node_idx, int64_t attempt, const char *gpu_ids,
		 const char *ckpt_dir, uid_t uid, struct jf_proc *p, char ***argv, char ***env);

#endif
