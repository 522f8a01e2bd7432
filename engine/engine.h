/*
 * engine.h - the glue between the tree, the core, the store and a backend.
 *
 * The engine owns the runtime picture: which machine resources are held,
 * which attempts are running, which are being killed and why.  Everything
 * it decides is written to the store first (one transaction per change),
 * then carried out on the backend, then announced to the tree through the
 * change callback so that fs/ can invalidate caches and wake watchers.
 *
 * It is driven from one thread: requests from fs/ (mkdir, spec writes, ctl
 * verbs), the backend's fd (runs that ended) and a timer (deadlines, kill
 * grace).  The clock is injected (struct jf_clock) so tests can move time.
 */
#ifndef JF_ENGINE_H
#define JF_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backends/runner.h"
#include "backends/scheduler.h"
#include "core/cluster.h"
#include "core/err.h"
#include "engine/loop.h"
#include "store/store.h"

struct jf_engine;

struct jf_clock {
	int64_t (*now_ms)(void *ctx); /* wall clock, ms since the epoch */
	void *ctx;
	/* optional: how far now_ms runs ahead of the real wall clock, in
	 * which backends report when a node started and ended (their times
	 * are moved by it as they come in, so that billing follows now_ms);
	 * NULL: not at all */
	int64_t (*skew_ms)(void *ctx);
	/* optional: look at the clock's source again (the engine's tick
	 * does); true when now_ms jumped.  NULL: it never jumps */
	bool (*refresh)(void *ctx);
};

/* Which object changed, for the tree. */
enum jf_change_kind {
	JF_CH_QUEUE,
	JF_CH_GROUP,
	JF_CH_TASK,
	JF_CH_NODE,
	JF_CH_BILLING,
	JF_CH_STORE, /* a volume or object source: its id in queue_id */
};

struct jf_change {
	enum jf_change_kind kind;
	int64_t queue_id, group_id, task_id, node_id;
	int64_t task_idx, node_idx;
	bool structure; /* children appeared or went (directory listing changed) */
};

typedef void (*jf_change_fn)(void *ctx, const struct jf_change *ch);

/* Where the ETA simulation runs (reference 9.1, engine/why.c). */
enum jf_eta_mode {
	JF_ETA_AUTO = 0, /* on a thread of its own once the view is shared (the
			  * daemon); not at all otherwise */
	JF_ETA_INLINE,   /* in the engine's pass (jobfs-sim, tests: deterministic) */
	JF_ETA_OFF,      /* reservation-based ETAs only */
};

struct jf_engine_config {
	const char *state_dir;                 /* runs/ and ckpt/ live here */
	struct jf_store *store;                /* taken over */
	struct jf_cluster *cluster;            /* taken over */
	struct jf_runner *runner;              /* where nodes run, or: */
	struct jf_scheduler *scheduler;        /* who runs them (exactly one; taken over) */
	struct jf_clock clock;                 /* .now_ms NULL = the real clock */
	int64_t kill_grace_ms;                 /* TERM -> KILL for stop/timeout, default 10 s */
	const char *partition_ondemand;        /* a scheduling backend's partitions (slurm): */
	const char *partition_spot;            /*   where work goes unless its queue says */
	int64_t array_max;                     /* most indexes one batch spans (Slurm's
						* MaxArraySize - 1); 0 = 1000 */
	int64_t log_cap_bytes;                 /* per log file of a node (stdout, stderr, logs):
						* past it the file is rotated and only the latest
						* cap..2 x cap bytes are kept; 0 = the default,
						* JF_LOG_CAP_DEFAULT; JF_LOG_CAP_NONE = no cap */
	const struct jf_runtime_conf *runtime; /* run containers with it (reference
						* 8.1; kept, not copied); NULL: every
						* node on the host */
	const char *sync_tool;                 /* tools/jobfs-sync (object sources); NULL:
						* an object source cannot sync (its status
						* says why) */
	int64_t evict_check_ms;                /* how often a node's on-disk emptydirs are
						* measured against their size; 0 = the
						* supervisor's default (10 s) */
	const char *volumes_dir;               /* where volumes live; NULL = STATE/volumes
						* (Slurm: --volumes, shared by the nodes) */
	enum jf_eta_mode eta;                  /* where the ETA simulation runs */
	int64_t keep_logs_ms;                  /* a finished group's run directories (logs,
						* work files) go this long after its end,
						* unless its queue's keep_logs says; 0 =
						* kept while the group exists */
};

#define JF_LOG_CAP_DEFAULT (INT64_C(1) << 30) /* 1Gi */
#define JF_LOG_CAP_NONE    (-1)

enum jf_err jf_engine_new(const struct jf_engine_config *cfg, struct jf_engine **out,
			  struct jf_error *err);
/* Frees the engine; running processes keep running (they are adopted by the
 * next daemon).  Open ledger segments stay open. */
void jf_engine_free(struct jf_engine *e);
/* A clean stop: close every open ledger segment now.  The processes run on;
 * the next daemon opens new segments for them from this instant when it
 * adopts them (reference 5.5: a segment closes when the daemon stops). */
void jf_engine_stop_billing(struct jf_engine *e);

void jf_engine_set_notify(struct jf_engine *e, jf_change_fn fn, void *ctx);
struct jf_store *jf_engine_store(struct jf_engine *e);
const struct jf_cluster *jf_engine_cluster(struct jf_engine *e);
int64_t jf_engine_now(struct jf_engine *e);
const char *jf_engine_state_dir(struct jf_engine *e);

/* Event sources for the daemon's loop. */
int jf_engine_backend_fd(struct jf_engine *e);
/* Take the ended (and started) runs the backend has, then schedule.
 * Yielding (below): a few at a time, until the loop has a request waiting;
 * the backend's fd stays readable while there are more. */
void jf_engine_on_backend(struct jf_engine *e);
#define JF_ENGINE_BATCH 4

/*
 * The daemon's loop (engine/loop.h): the engine adds the backend's fd
 * (JF_LOOP_NEXT: after requests), a timer for jf_engine_tick (every
 * JF_ENGINE_TICK_MS in real time; at the engine's next deadline on a
 * virtual clock) and, yielding, its scheduling pass as the loop's deferred
 * job.
 *
 * Yielding: the daemon's loop serves requests first.  A change that needs
 * a pass (a submission, an ended run, a ctl verb) only asks for one, and
 * the loop runs it when no request waits or once it has waited
 * JF_ENGINE_PASS_DELAY_MS, so one pass covers a burst of submissions and
 * ends.  Between small steps (JF_ENGINE_BATCH ended runs, a few starts)
 * the engine asks the loop whether a request waits, and if so stops
 * there: the rest comes in the next turn.  The task rows of a big
 * submission past its first chunk (store.h: JF_TASKS_CHUNK) are made by
 * the same job, one chunk a run (not yielding: one a tick; with no loop
 * at all, every one at the next tick).  Not yielding (jobfs-sim, and
 * tests that call the entry points themselves): every change schedules
 * before its call returns, and on_backend takes every run there is.
 */
#define JF_ENGINE_TICK_MS       250
#define JF_ENGINE_PASS_DELAY_MS 50
enum jf_err jf_engine_attach(struct jf_engine *e, struct jf_loop *l, bool yielding,
			     struct jf_error *err);
/* Deadlines and kill grace; returns ms until it wants to run again (-1 none). */
int64_t jf_engine_tick(struct jf_engine *e);
/* The earliest group timer (activeDeadlineSeconds, a queue's group_timeout)
 * the last tick saw ahead, in ms on the engine's clock, or -1: what a
 * replay needs to tell "waiting for a deadline" from "stalled". */
int64_t jf_engine_group_deadline(const struct jf_engine *e);

/* Requests from the tree.  uid/gid are the caller's (FUSE request). */
enum jf_err jf_engine_mkqueue(struct jf_engine *e, const char *name, uid_t uid, gid_t gid,
			      int64_t *id, struct jf_error *err);
enum jf_err jf_engine_rmqueue(struct jf_engine *e, int64_t id, struct jf_error *err);
enum jf_err jf_engine_queue_spec(struct jf_engine *e, int64_t id, const char *text, size_t len,
				 struct jf_error *err);
/* Storage (reference 8.3): /volumes/<v> and /objects/<o> (store.h's
 * JF_SK_*).  mkdir, spec.yaml, rmdir (EBUSY while a live group names it,
 * the message says which), ctl (objects: resync). */
enum jf_err jf_engine_mkstore(struct jf_engine *e, int kind, const char *name, uid_t uid, gid_t gid,
			      int64_t *id, struct jf_error *err);
enum jf_err jf_engine_store_spec(struct jf_engine *e, int64_t id, const char *text, size_t len,
				 struct jf_error *err);
enum jf_err jf_engine_rmstore(struct jf_engine *e, int64_t id, struct jf_error *err);
enum jf_err jf_engine_store_ctl(struct jf_engine *e, int64_t id, const char *verb,
				struct jf_error *err);
/* The host directory of a volume (its data) or of an object source's cache
 * (DIR/data is the mirror, DIR/progress the running sync's figures). */
void jf_engine_store_dir(struct jf_engine *e, int kind, const char *name, char *buf, size_t n);

enum jf_err jf_engine_mkgroup(struct jf_engine *e, int64_t queue_id, enum jf_group_kind kind,
			      const char *dirname, uid_t uid, gid_t gid, int64_t *id,
			      struct jf_error *err);
/* Parse, validate and accept (or refuse, recording why) a group's spec. */
enum jf_err jf_engine_submit(struct jf_engine *e, int64_t group_id, const char *text, size_t len,
			     uid_t uid, gid_t gid, struct jf_error *err);
/* Record a refusal found before the text was complete (at write time). */
void jf_engine_refuse(struct jf_engine *e, int64_t group_id, const char *text, size_t len,
		      const struct jf_error *why);
/* A ctl verb on a group/batch (task_id 0) or one task. */
enum jf_err jf_engine_ctl(struct jf_engine *e, int64_t group_id, int64_t task_id, const char *verb,
			  struct jf_error *err);
enum jf_err jf_engine_rename_group(struct jf_engine *e, int64_t group_id, const char *dirname,
				   struct jf_error *err);
/* A task directory's new name (its display name); its default name (the
 * index, or <i>-<batch>) clears the rename. */
enum jf_err jf_engine_rename_task(struct jf_engine *e, int64_t task_id, const char *name,
				  struct jf_error *err);
enum jf_err jf_engine_rmgroup(struct jf_engine *e, int64_t group_id, struct jf_error *err);
/* A Warning event in a group's events (group_id != 0) or else a queue's,
 * for what the tree refused where an errno alone would say too little (a
 * shell prints "Operation not permitted" and nothing more). */
void jf_engine_warn(struct jf_engine *e, int64_t queue_id, int64_t group_id, const char *reason,
		    const char *msg);

/* The backend's name ("local", "slurm"), and NULL while it can be reached,
 * else what is wrong: "slurm cannot be reached since 2026-12-01T18:00:03Z:
 * slurmrestd unreachable: ..." (valid until the next event). */
const char *jf_engine_backend_name(struct jf_engine *e);
const char *jf_engine_backend_trouble(struct jf_engine *e);
/* Steps whose commit failed since start (engine/step.c): nothing of each
 * was done. */
int64_t jf_engine_store_failures(struct jf_engine *e);

/* Resource use of machine m, for /cluster. */
struct jf_machine_use {
	uint64_t gpu_mask; /* GPUs held */
	int64_t cpu_milli;
	int64_t mem_bytes;
	int nodes;         /* nodes running there */
	const char *state; /* a scheduling backend's word for it ("idle", "mixed"),
			      borrowed; NULL for the local backend */
	const char *partitions;
};
void jf_engine_machine_use(struct jf_engine *e, size_t m, struct jf_machine_use *u);

/*
 * The view: what readers on threads other than the engine's may read of
 * its memory (fs/serve.c).  Once shared, the engine publishes a copy of
 * every machine's use and of its backend's trouble when a step has
 * committed (delegated: at most once a tick, JF_ENGINE_TICK_MS), and
 * changes the cluster's machine list (delegated) and the forecasts only
 * while it holds the view lock.  A reader holds the lock (recursive)
 * while it reads the cluster's machines or a forecast; the two below take
 * it themselves and copy.  The engine's own thread reads without it.  The
 * engine holds it only to swap a pointer or add a sample, and takes
 * nothing while it holds it, so a reader may hold it with locks of its own.
 */
void jf_engine_share_view(struct jf_engine *e);
struct jf_view_machine {
	struct jf_machine_use u; /* u.state, u.partitions point into the two below */
	char state[32];
	char partitions[128];
};
/*
 * Around each outermost step an entry point runs: leave(ctx) before it
 * (returning what enter needs), enter(ctx, that) after it, once what the
 * step queued (notifications included) is done.  The tree lets its own
 * lock go meanwhile, so its readers do not wait for the step.
 */
void jf_engine_set_step_hooks(struct jf_engine *e, unsigned (*leave)(void *ctx),
			      void (*enter)(void *ctx, unsigned held), void *ctx);
void jf_engine_view_lock(struct jf_engine *e);
void jf_engine_view_unlock(struct jf_engine *e);
/* Machine m's use as last published (zeros past the end). */
void jf_engine_view_use(struct jf_engine *e, size_t m, struct jf_view_machine *out);
/* The backend's trouble as last published (jf_engine_backend_trouble)
 * into buf; false (buf "") when it can be reached. */
bool jf_engine_view_trouble(struct jf_engine *e, char *buf, size_t n);

/*
 * Why group_id waits and when it will start (reference 9.1), as of the
 * last scheduling pass and the last simulation; never waits for either.
 * rank: 0 for the group (its next task), r for its waiting task with r
 * waiting tasks before it (the simulation keeps JF_ETA_KEEP of them).
 * false when the engine has nothing to say of it (not active, or no pass
 * has seen it yet).  Times in ms since the epoch, 0 = none; a basis is
 * "reservation", "simulation" or "".
 */
#define JF_ETA_KEEP 16
struct jf_engine_why {
	char reason[24]; /* "" when nothing of it waits */
	char message[256];
	int64_t position;
	int64_t eta_ms;
	const char *eta_basis;
	int64_t finish_ms; /* when its last task ends */
	const char *finish_basis;
	int64_t eta_resv_ms, eta_sim_ms, finish_resv_ms, finish_sim_ms; /* both bases */
};
bool jf_engine_why(struct jf_engine *e, int64_t group_id, int64_t rank, struct jf_engine_why *out);
/* What the last reason computation and simulation cost (benchmarks). */
struct jf_eta_figures {
	int64_t why_ns, sim_ns; /* the last of each */
	size_t sim_passes;      /* planning passes of the last simulation */
	int64_t whys, sims;     /* how many so far */
};
void jf_engine_eta_figures(struct jf_engine *e, struct jf_eta_figures *out);

struct jf_forecast;
/* The spot forecast of GPU model m (borrowed), NULL if out of range. */
const struct jf_forecast *jf_engine_forecast(struct jf_engine *e, size_t m);

/* The parsed spec of an accepted group (borrowed, valid until the next
 * call into the engine), or NULL.  Parses and caches on first use; the
 * cache keeps active groups and the last 64 ended ones. */
const struct jf_spec *jf_engine_spec(struct jf_engine *e, int64_t group_id);
/* How many groups' parsed specs the engine holds now (tests, figures). */
size_t jf_engine_cached_groups(struct jf_engine *e);

#endif
