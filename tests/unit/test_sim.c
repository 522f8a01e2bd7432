/*
 * test_sim.c - the simulated backend (backends/sim) alone, then the real
 * engine on it with a virtual clock, then the jobfs-sim tool.
 *
 * The backend alone: runs end in order of end time (start order on ties),
 * the fd is readable exactly while a run is due, signals end a run now
 * (143 / 137), RUN_SECONDS / EXIT_CODE / FAIL_PERCENT and their errors,
 * seeded ranges, adopt refused.
 *
 * Engine + sim, the product's scenarios (document 000) in simulated time:
 * A (queue capacity 20, 100 single-node tasks, parallelism 10, 600 s each:
 * never more than 10 running, 10 rounds = 6000 s, 60000 ledger seconds);
 * B on a cluster file of 128 machines (one 100-node task starts all its
 * nodes at one instant; a 4-node gang with parallelism 5 peaks at exactly
 * 20 nodes); a queue's group_timeout (60 simulated minutes, GroupTimeout);
 * a week of mixed work in well under 30 s of wall time, every group final,
 * capacities never exceeded.
 *
 * Spot and the preemption forecast (reference 5.4): a smaller
 * tests/sim/spot-week.yaml played with the forecast and without; the
 * product's claim in the direction the model makes it hold (see
 * test_spot_forecast).
 *
 * A submission of three chunks of task rows and five more (store.h:
 * JF_TASKS_CHUNK): one chunk at acceptance, the rest before the clock
 * moves, one chunk a turn when yielding as the daemon does; counted as
 * waiting meanwhile, every index run once; a stop while rows are still to
 * make stops them all; a daemon restarted half-way makes the rest.
 *
 * The driver here is the engine's loop (engine/loop.h) on the virtual
 * clock, as tools/jobfs-sim runs it: the loop settles the instant (ended
 * runs, the engine's tick), a before-sleep hook looks at the figures and
 * arms the next run end and group timer, and the loop jumps the clock to
 * the earliest of those and the engine's own deadline.
 *
 * The tool: the sample workloads of tests/sim run, exit 0, print what the
 * scenarios promise (deps.yaml: `after:` chains, each and a fan-in), and
 * print the same twice; bad and stalled workloads
 * give their exit codes; a queue's budget holds its work back (a burst a
 * day in tests/sim/budget-days.yaml, held for good without a period, the
 * running task stopped with budget_action: stop); the spot report counts preemptions and wasted
 * GPU time, and --spot-risk-threshold 1 turns the forecast off.
 */
#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include <sqlite3.h>

#include "backends/sim/sim.h"
#include "core/lifecycle.h"
#include "engine/engine.h"

#define T0         JF_SIM_EPOCH_MS
#define MIN_MS     INT64_C(60000)
#define HOUR_MS    INT64_C(3600000)
#define DAY_MS     (24 * HOUR_MS)
#define MAX_GROUPS 1024

/* ---- the backend alone ---- */

struct launch {
	char *env[8];
	struct jf_proc procs[2];
	struct jf_launch l;
};

/* A launch whose first container has env (NULL-terminated "K=V" list). */
static void mklaunch(struct launch *x, const char *const *env, size_t nprocs)
{
	static char *argv[] = { "sim", NULL };
	static char *noenv[] = { NULL };
	memset(x, 0, sizeof(*x));
	size_t i = 0;
	for (; env && env[i] && i < 7; i++)
		x->env[i] = (char *)env[i];
	x->env[i] = NULL;
	x->procs[0] = (struct jf_proc){ .name = "main", .argv = argv, .envp = x->env };
	x->procs[1] = (struct jf_proc){ .name = "side", .argv = argv, .envp = noenv };
	x->l = (struct jf_launch){
		.run_dir = "/nonexistent", .cwd = "/", .procs = x->procs, .nprocs = nprocs
	};
}

static struct jf_run_started start1(struct jf_runner *be, uint64_t cookie, const char *secs)
{
	char kv[64];
	snprintf(kv, sizeof(kv), "RUN_SECONDS=%s", secs);
	const char *env[] = { "PATH=/bin", kv, NULL };
	struct launch x;
	mklaunch(&x, env, 1);
	struct jf_run_started st;
	struct jf_error err = { 0 };
	if (jf_runner_start(be, &x.l, cookie, &st, &err) != JF_OK)
		fail_msg("start: %s", err.msg);
	return st;
}

static bool fd_readable(struct jf_runner *be)
{
	struct pollfd p = { .fd = jf_runner_fd(be), .events = POLLIN };
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void test_backend_order(void **state)
{
	(void)state;
	struct jf_sim_clock clk = { T0 };
	struct jf_error err = { 0 };
	struct jf_runner *be = jf_sim_new(&clk, &err);
	assert_non_null(be);
	assert_int_equal(jf_sim_next_end(be), -1);
	assert_false(jf_sim_due(be));

	struct jf_run_started a = start1(be, 101, "30");
	start1(be, 102, "10");
	struct jf_run_started c = start1(be, 103, "20.5");
	struct jf_run_started d = start1(be, 104, "10"); /* same end as b, started later */
	assert_string_equal(a.handle, "sim:1");
	assert_string_equal(d.handle, "sim:4");
	assert_int_equal(a.pid, 1);
	assert_int_equal(c.start_ms, T0);
	assert_int_equal(jf_sim_running(be), 4);
	assert_int_equal(jf_sim_next_end(be), T0 + 10000);
	assert_false(fd_readable(be));

	struct jf_run_result res[8];
	assert_int_equal(jf_runner_reap(be, res, 8), 0);
	jf_sim_advance(be, T0 + 9999);
	assert_false(fd_readable(be));
	jf_sim_advance(be, T0 + 10000);
	assert_true(fd_readable(be));
	assert_int_equal(jf_runner_reap(be, res, 1), 1); /* one at a time works too */
	assert_int_equal(res[0].cookie, 102);
	assert_true(fd_readable(be));
	assert_int_equal(jf_runner_reap(be, res, 8), 1);
	assert_int_equal(res[0].cookie, 104);
	assert_int_equal(res[0].exit_code, 0);
	assert_int_equal(res[0].term_signal, 0);
	assert_int_equal(res[0].start_ms, T0);
	assert_int_equal(res[0].end_ms, T0 + 10000);
	assert_int_equal(res[0].nprocs, 1);
	assert_string_equal(res[0].procs[0].name, "main");
	assert_false(fd_readable(be));
	assert_int_equal(jf_sim_next_end(be), T0 + 20500);

	/* the clock never goes back */
	jf_sim_advance(be, T0);
	assert_int_equal(clk.now_ms, T0 + 10000);

	jf_sim_advance(be, T0 + 60000);
	assert_int_equal(jf_runner_reap(be, res, 8), 2);
	assert_int_equal(res[0].cookie, 103);
	assert_int_equal(res[0].end_ms, T0 + 20500);
	assert_int_equal(res[1].cookie, 101);
	assert_int_equal(jf_sim_running(be), 0);
	assert_int_equal(jf_sim_next_end(be), -1);
	assert_false(fd_readable(be));

	/* moving the clock by hand: jf_sim_due() brings the fd along */
	start1(be, 105, "1");
	clk.now_ms += 1000;
	assert_true(jf_sim_due(be));
	assert_true(fd_readable(be));
	assert_int_equal(jf_runner_reap(be, res, 8), 1);

	struct jf_sim_stats ss;
	jf_sim_stats(be, &ss);
	assert_int_equal(ss.started, 5);
	assert_int_equal(ss.reaped, 5);
	assert_int_equal(ss.failed, 0);
	jf_runner_free(be);
}

static void test_backend_signal_and_env(void **state)
{
	(void)state;
	struct jf_sim_clock clk = { T0 };
	struct jf_error err = { 0 };
	struct jf_runner *be = jf_sim_new(&clk, &err);
	assert_non_null(be);
	struct jf_run_result res[8];
	struct jf_run_started st;

	/* EXIT_CODE: the first container's; the second ends with it, 0 */
	const char *env3[] = { "RUN_SECONDS=600", "EXIT_CODE=3", NULL };
	struct launch x;
	mklaunch(&x, env3, 2);
	assert_int_equal(jf_runner_start(be, &x.l, 1, &st, &err), JF_OK);
	struct jf_run_started t = start1(be, 2, "600");
	struct jf_run_started k = start1(be, 3, "600");
	struct jf_run_started dflt;
	mklaunch(&x, NULL, 1);
	assert_int_equal(jf_runner_start(be, &x.l, 4, &dflt, &err), JF_OK);
	assert_int_equal(jf_sim_next_end(be), T0 + 60000); /* default 60 s */

	jf_sim_advance(be, T0 + 100000);
	assert_int_equal(jf_runner_reap(be, res, 8), 1);
	assert_int_equal(res[0].cookie, 4);
	assert_int_equal(jf_runner_signal(be, t.handle, JF_RUN_TERM), JF_OK);
	assert_true(fd_readable(be));
	assert_int_equal(jf_runner_signal(be, k.handle, JF_RUN_KILL), JF_OK);
	/* a second signal does not move the end again */
	jf_sim_advance(be, T0 + 100500);
	assert_int_equal(jf_runner_signal(be, t.handle, JF_RUN_KILL), JF_OK);
	assert_int_equal(jf_runner_reap(be, res, 8), 2);
	assert_int_equal(res[0].cookie, 2);
	assert_int_equal(res[0].exit_code, 143);
	assert_int_equal(res[0].term_signal, SIGTERM);
	assert_int_equal(res[0].end_ms, T0 + 100000);
	assert_non_null(strstr(res[0].message, "SIGTERM"));
	assert_int_equal(res[1].cookie, 3);
	assert_int_equal(res[1].exit_code, 137);
	assert_int_equal(res[1].term_signal, SIGKILL);
	/* gone: nothing to signal; not a handle: EINVAL */
	assert_int_equal(jf_runner_signal(be, t.handle, JF_RUN_KILL), JF_OK);
	assert_int_equal(jf_runner_signal(be, "local:12:34", JF_RUN_KILL), JF_EINVAL);
	assert_int_equal(jf_runner_signal(be, "sim:x", JF_RUN_KILL), JF_EINVAL);

	jf_sim_advance(be, T0 + 600000);
	assert_int_equal(jf_runner_reap(be, res, 8), 1);
	assert_int_equal(res[0].cookie, 1);
	assert_int_equal(res[0].exit_code, 3);
	assert_int_equal(res[0].nprocs, 2);
	assert_int_equal(res[0].procs[0].exit_code, 3);
	assert_string_equal(res[0].procs[1].name, "side");
	assert_int_equal(res[0].procs[1].exit_code, 0);

	/* bad values are refused with the variable's name */
	static const char *const bad[][2] = {
		{ "RUN_SECONDS=ten", "RUN_SECONDS" },
		{ "RUN_SECONDS=-5", "RUN_SECONDS" },
		{ "RUN_SECONDS=900-300", "RUN_SECONDS" },
		{ "RUN_SECONDS=1.2345", "RUN_SECONDS" },
		{ "RUN_SECONDS=99999999999", "RUN_SECONDS" },
		{ "EXIT_CODE=256", "EXIT_CODE" },
		{ "EXIT_CODE=", "EXIT_CODE" },
		{ "FAIL_PERCENT=101", "FAIL_PERCENT" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *env[] = { bad[i][0], NULL };
		mklaunch(&x, env, 1);
		memset(&err, 0, sizeof(err));
		assert_int_equal(jf_runner_start(be, &x.l, 9, &st, &err), JF_EINVAL);
		assert_non_null(strstr(err.msg, bad[i][1]));
	}
	assert_int_equal(jf_sim_running(be), 0);

	/* adopt: not here */
	assert_int_equal(jf_runner_adopt(be, "sim:1", "/tmp", 1, &err), JF_ENOTSUP);
	jf_runner_free(be);
}

/* Ranges and FAIL_PERCENT draw from the seed: same seed, same runs. */
static void draw(uint64_t seed, int64_t *ends, int *codes, size_t n)
{
	struct jf_sim_clock clk = { T0 };
	struct jf_error err = { 0 };
	struct jf_runner *be = jf_sim_new(&clk, &err);
	assert_non_null(be);
	jf_sim_seed(be, seed);
	const char *env[] = { "RUN_SECONDS=300-900", "FAIL_PERCENT=50", NULL };
	struct launch x;
	mklaunch(&x, env, 1);
	for (size_t i = 0; i < n; i++) {
		struct jf_run_started st;
		assert_int_equal(jf_runner_start(be, &x.l, i + 1, &st, &err), JF_OK);
	}
	jf_sim_advance(be, T0 + 900000);
	struct jf_run_result res[64];
	assert_int_equal(jf_runner_reap(be, res, 64), n);
	for (size_t i = 0; i < n; i++) {
		size_t j = res[i].cookie - 1;
		ends[j] = res[i].end_ms;
		codes[j] = res[i].exit_code;
		assert_true(res[i].end_ms >= T0 + 300000 && res[i].end_ms <= T0 + 900000);
		assert_int_equal(res[i].end_ms % 1000, 0);
		assert_true(res[i].exit_code == 0 || res[i].exit_code == 1);
	}
	jf_runner_free(be);
}

static void test_backend_seeded(void **state)
{
	(void)state;
	int64_t e1[40], e2[40], e3[40];
	int c1[40], c2[40], c3[40];
	draw(7, e1, c1, 40);
	draw(7, e2, c2, 40);
	draw(8, e3, c3, 40);
	assert_memory_equal(e1, e2, sizeof(e1));
	assert_memory_equal(c1, c2, sizeof(c1));
	assert_memory_not_equal(e1, e3, sizeof(e1));
	int fails = 0, distinct = 0;
	for (int i = 0; i < 40; i++) {
		fails += c1[i];
		distinct += i == 0 || e1[i] != e1[i - 1];
	}
	assert_true(fails > 5 && fails < 35);
	assert_true(distinct > 10);
}

/* ---- engine + sim ---- */

struct fix {
	char dir[256];
	char db[512];
	struct jf_sim_clock clk;
	struct jf_engine *e;
	struct jf_runner *be;       /* owned by e */
	struct jf_store *st;        /* owned by e */
	int64_t groups[MAX_GROUPS]; /* submitted, for group timers and checks */
	size_t ngroups;
	int64_t settles; /* instants played */
	/* the engine's loop on the virtual clock, as jobfs-sim runs it */
	struct jf_loop *loop;
	int end_timer, until_timer;
	int64_t until; /* play(): stop at this instant once settled, -1 never */
	bool until_hit;
	void (*each)(struct fix *f, void *ctx);
	void *each_ctx;
};

static int64_t fix_now(void *ctx)
{
	return ((struct fix *)ctx)->clk.now_ms;
}

static void fix_advance(void *ctx, int64_t to)
{
	struct fix *f = ctx;
	jf_sim_advance(f->be, to);
}

static void on_instant(struct jf_loop *l, void *ctx)
{
	(void)l;
	(void)ctx;
}

static void on_until(struct jf_loop *l, void *ctx)
{
	(void)l;
	((struct fix *)ctx)->until_hit = true;
}

static bool on_quiet(struct jf_loop *l, void *ctx);

/* The engine and its loop on f's state directory (c NULL: the built-in
 * cluster); yielding as the daemon runs it, or not as jobfs-sim does. */
static void fix_open(struct fix *f, struct jf_cluster *c, bool yielding)
{
	struct jf_error err = { 0 };
	struct jf_store *st = NULL;
	if (jf_store_open(f->db, &st, &err) != JF_OK)
		fail_msg("jf_store_open: %s", err.msg);
	if (!c)
		c = jf_cluster_builtin();
	assert_non_null(c);
	struct jf_runner *be = jf_sim_new(&f->clk, &err);
	assert_non_null(be);
	struct jf_engine_config cfg = {
		.state_dir = f->dir,
		.store = st,
		.cluster = c,
		.runner = be,
		.clock = { .now_ms = jf_sim_now, .ctx = &f->clk },
	};
	if (jf_engine_new(&cfg, &f->e, &err) != JF_OK)
		fail_msg("jf_engine_new: %s", err.msg);
	f->be = be;
	f->st = st;
	struct jf_loop_clock clock = { fix_now, fix_advance, f };
	f->loop = jf_loop_new(&clock);
	assert_non_null(f->loop);
	if (jf_engine_attach(f->e, f->loop, yielding, &err) != JF_OK)
		fail_msg("jf_engine_attach: %s", err.msg);
	f->end_timer = jf_loop_add_timer(f->loop, on_instant, f);
	f->until_timer = jf_loop_add_timer(f->loop, on_until, f);
	assert_true(f->until_timer >= 0);
	assert_int_equal(jf_loop_add_before_sleep(f->loop, on_quiet, f), 0);
}

static struct fix *fix_new_opts(struct jf_cluster *c, bool yielding)
{
	struct fix *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "%s/jf-sim-XXXXXX", jft_tmp_base());
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/jobfs.db", f->dir);
	f->clk.now_ms = T0;
	fix_open(f, c, yielding);
	return f;
}

static struct fix *fix_new(struct jf_cluster *c)
{
	return fix_new_opts(c, false);
}

/* The daemon stops and another starts on the same state directory, at the
 * same instant (the simulated runs do not outlive it: none may run). */
static void fix_reopen(struct fix *f, bool yielding)
{
	assert_int_equal(jf_sim_running(f->be), 0);
	jf_engine_free(f->e);
	jf_loop_free(f->loop);
	fix_open(f, NULL, yielding);
}

static int teardown(void **state)
{
	struct fix *f = *state;
	if (f) {
		jf_engine_free(f->e);
		jf_loop_free(f->loop);
		jft_rmtree(f->dir);
		free(f);
	}
	*state = NULL;
	return 0;
}

static int64_t mkqueue(struct fix *f, const char *name, const char *spec)
{
	struct jf_error err = { 0 };
	int64_t q = 0;
	assert_int_equal(jf_engine_mkqueue(f->e, name, getuid(), getgid(), &q, &err), JF_OK);
	if (spec && jf_engine_queue_spec(f->e, q, spec, strlen(spec), &err) != JF_OK)
		fail_msg("queue spec: %s", err.msg);
	return q;
}

/* A group of queue q (q > 0) or a batch (q == 0), submitted now. */
static int64_t submit(struct fix *f, int64_t q, const char *name, const char *spec)
{
	struct jf_error err = { 0 };
	int64_t g = 0;
	assert_int_equal(jf_engine_mkgroup(f->e, q, q ? JF_KIND_GROUP : JF_KIND_BATCH, name,
					   getuid(), getgid(), &g, &err),
			 JF_OK);
	if (jf_engine_submit(f->e, g, spec, strlen(spec), getuid(), getgid(), &err) != JF_OK)
		fail_msg("submit %s: %s", name, err.msg);
	assert_true(f->ngroups < MAX_GROUPS);
	f->groups[f->ngroups++] = g;
	return g;
}

typedef void (*each_fn)(struct fix *f, void *ctx);

/* An instant has settled (the engine's tick, before this hook, found
 * nothing due): look at it, then arm the next run end (group timers are
 * the engine's own: its tick timer comes for them). */
static bool on_quiet(struct jf_loop *l, void *ctx)
{
	struct fix *f = ctx;
	f->settles++;
	if (f->each)
		f->each(f, f->each_ctx);
	int64_t now = f->clk.now_ms;
	if (f->until_hit || f->until == now) {
		jf_loop_stop(l);
		return false;
	}
	jf_loop_arm(l, f->end_timer, jf_sim_next_end(f->be));
	int64_t next = jf_loop_next_at(l);
	if (f->until >= 0 && (next < 0 || next > f->until))
		jf_loop_arm(l, f->until_timer, f->until);
	return false;
}

/* Play until the clock reaches until (then settle that instant), or, with
 * until < 0, until nothing is left to happen.  each runs at every instant,
 * once it has settled. */
static void play(struct fix *f, int64_t until, each_fn each, void *ctx)
{
	assert_true(until < 0 || until >= f->clk.now_ms);
	f->until = until;
	f->until_hit = false;
	f->each = each;
	f->each_ctx = ctx;
	jf_loop_arm(f->loop, f->until_timer, -1);
	int rc = jf_loop_run(f->loop);
	if (rc == JF_LOOP_STUCK)
		fail_msg("the engine does not settle");
	assert_true(rc == JF_LOOP_STOPPED || (rc == JF_LOOP_IDLE && until < 0));
}

/* Everything due now, until the engine is quiet. */
static void settle(struct fix *f)
{
	play(f, f->clk.now_ms, NULL, NULL);
}

static struct jf_group_rec group(struct fix *f, int64_t g)
{
	struct jf_group_rec r;
	assert_int_equal(jf_group_get(f->st, g, &r), JF_OK);
	return r; /* fields used: numbers only; release at once */
}

static int group_state(struct fix *f, int64_t g)
{
	struct jf_group_rec r = group(f, g);
	int s = r.state;
	jf_group_release(&r);
	return s;
}

static int64_t ledger_seconds(struct fix *f, enum jf_scope sc, int64_t id)
{
	int64_t amount = 0, secs = 0;
	assert_int_equal(jf_ledger_sum(f->st, sc, id, f->clk.now_ms, &amount, &secs), JF_OK);
	return secs;
}

static int64_t sql_int(struct fix *f, const char *sql)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

static char *events(struct fix *f, int64_t g)
{
	int64_t size = 0;
	assert_int_equal(jf_event_size(f->st, JF_SCOPE_GROUP, g, &size), JF_OK);
	char *buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	size_t got = 0;
	assert_int_equal(jf_event_read(f->st, JF_SCOPE_GROUP, g, 0, buf, (size_t)size, &got),
			 JF_OK);
	buf[got] = '\0';
	return buf;
}

struct peak {
	int64_t group;       /* 0 = none */
	int64_t max_tasks;   /* the group's tasks running or starting */
	int64_t limit_tasks; /* fail above this (0 = no check) */
	int64_t max_runs;    /* runs on the backend */
	int64_t limit_runs;
};

static void watch_peak(struct fix *f, void *ctx)
{
	struct peak *p = ctx;
	int64_t runs = (int64_t)jf_sim_running(f->be);
	if (runs > p->max_runs)
		p->max_runs = runs;
	if (p->limit_runs && runs > p->limit_runs)
		fail_msg("%lld runs at once, at most %lld allowed", (long long)runs,
			 (long long)p->limit_runs);
	if (!p->group)
		return;
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(f->st, p->group, c), JF_OK);
	int64_t live = c[JF_ST_INITIALIZING] + c[JF_ST_RUNNING];
	if (live > p->max_tasks)
		p->max_tasks = live;
	if (p->limit_tasks && live > p->limit_tasks)
		fail_msg("%lld tasks at once, parallelism is %lld", (long long)live,
			 (long long)p->limit_tasks);
}

static int setup_builtin(void **state)
{
	*state = fix_new(NULL);
	return 0;
}

/* Scenario A: capacity 20, 100 x 1 node, parallelism 10, 600 s each. */
static void test_scenario_a(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f, "batch", "capacity: 20\n");
	int64_t g = submit(f, q, "a",
			   "completions: 100\n"
			   "parallelism: 10\n"
			   "gpu: \"4090\"\n"
			   "env: {RUN_SECONDS: \"600\"}\n"
			   "command: [\"sim\"]\n");
	struct peak p = { .group = g, .limit_tasks = 10, .limit_runs = 10 };
	play(f, -1, watch_peak, &p);
	assert_int_equal(p.max_tasks, 10);
	assert_int_equal(p.max_runs, 10);
	struct jf_group_rec r = group(f, g);
	assert_int_equal(r.state, JF_ST_SUCCEEDED);
	assert_int_equal(r.submitted_ms, T0);
	assert_int_equal(r.started_ms, T0);
	assert_int_equal(r.finished_ms - r.submitted_ms, 10 * 600 * 1000); /* 10 rounds */
	jf_group_release(&r);
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(f->st, g, c), JF_OK);
	assert_int_equal(c[JF_ST_SUCCEEDED], 100);
	assert_int_equal(ledger_seconds(f, JF_SCOPE_GROUP, g), 100 * 600);
	assert_int_equal(ledger_seconds(f, JF_SCOPE_QUEUE, q), 100 * 600);
	assert_int_equal(f->clk.now_ms, T0 + 6000 * 1000);
	/* ten rounds: starts at 0, 600, ..., 5400 s, ten each */
	assert_int_equal(sql_int(f, "SELECT count(DISTINCT start_ms) FROM attempts"), 10);
	assert_int_equal(sql_int(f, "SELECT max(n) FROM (SELECT count(*) AS n FROM attempts "
				    "GROUP BY start_ms)"),
			 10);
	/* billed at the 4090's 3.60 per hour: 100 x 600 s = 60.00 */
	int64_t amount = 0, secs = 0;
	assert_int_equal(jf_ledger_sum(f->st, JF_SCOPE_ALL, 0, f->clk.now_ms, &amount, &secs),
			 JF_OK);
	assert_int_equal(amount, 60 * 1000000);
	/* no machine is held any more */
	for (size_t m = 0; m < jf_engine_cluster(f->e)->nmachines; m++) {
		struct jf_machine_use u;
		jf_engine_machine_use(f->e, m, &u);
		assert_int_equal(u.nodes, 0);
		assert_int_equal(u.gpu_mask, 0);
	}
}

static const char big_cluster[] =
	"name: big\n"
	"models:\n"
	"  - {name: \"4090\", vram: 24Gi, cpu_per_gpu: 20, memory_per_gpu: 101Gi,\n"
	"     price: {on-demand: \"3.60\", spot: \"1.08\"}}\n"
	"machines:\n"
	"  - {name: node, model: \"4090\", gpus: 8, count: 128}\n";

static int setup_big(void **state)
{
	struct jf_cluster *c = NULL;
	struct jf_error err = { 0 };
	if (jf_cluster_parse(big_cluster, strlen(big_cluster), &c, &err) != JF_OK)
		fail_msg("cluster: %s", err.msg);
	assert_int_equal(c->nmachines, 128);
	*state = fix_new(c);
	return 0;
}

/* Scenario B: one task of 100 nodes starts every node at the same instant. */
static void test_scenario_b_100_nodes(void **state)
{
	struct fix *f = *state;
	play(f, T0 + 5 * MIN_MS, NULL, NULL);
	int64_t g = submit(f, 0, "train",
			   "count: 1\n"
			   "nodes: 100\n"
			   "gpu: \"4090\"\n"
			   "gpus: 8\n"
			   "env: {RUN_SECONDS: \"7200\"}\n"
			   "command: [\"sim\"]\n");
	settle(f);
	assert_int_equal(jf_sim_running(f->be), 100);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM attempts"), 100);
	assert_int_equal(sql_int(f, "SELECT count(DISTINCT start_ms) FROM attempts"), 1);
	assert_int_equal(sql_int(f, "SELECT min(start_ms) FROM attempts"), T0 + 5 * MIN_MS);
	assert_int_equal(sql_int(f, "SELECT count(DISTINCT machine) FROM attempts"), 100);
	struct peak p = { 0 };
	play(f, -1, watch_peak, &p);
	assert_int_equal(p.max_runs, 100);
	assert_int_equal(group_state(f, g), JF_ST_SUCCEEDED);
	assert_int_equal(sql_int(f, "SELECT count(DISTINCT end_ms) FROM attempts"), 1);
	assert_int_equal(f->clk.now_ms, T0 + 5 * MIN_MS + 2 * HOUR_MS);
	assert_int_equal(ledger_seconds(f, JF_SCOPE_GROUP, g), 100 * 7200);
}

/* A gang of 4 nodes with parallelism 5: at most 4 x 5 = 20 nodes, reached. */
static void test_gang_peak(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f, "gangs", NULL);
	int64_t g = submit(f, q, "g4x5",
			   "completions: 20\n"
			   "parallelism: 5\n"
			   "nodes: 4\n"
			   "gpu: \"4090\"\n"
			   "gpus: 8\n"
			   "env: {RUN_SECONDS: \"1800\"}\n"
			   "command: [\"sim\"]\n");
	struct peak p = { .group = g, .limit_tasks = 5, .limit_runs = 20 };
	play(f, -1, watch_peak, &p);
	assert_int_equal(p.max_runs, 20);
	assert_int_equal(p.max_tasks, 5);
	assert_int_equal(group_state(f, g), JF_ST_SUCCEEDED);
	assert_int_equal(f->clk.now_ms, T0 + 4 * 1800 * 1000);
	/* every task's four nodes started and ended together */
	assert_int_equal(sql_int(f, "SELECT count(*) FROM (SELECT n.task_id FROM attempts a "
				    "JOIN nodes n ON n.id = a.node_id GROUP BY n.task_id, "
				    "a.attempt HAVING count(*) != 4 OR count(DISTINCT a.start_ms) "
				    "!= 1 OR count(DISTINCT a.end_ms) != 1)"),
			 0);
	assert_int_equal(ledger_seconds(f, JF_SCOPE_GROUP, g), 20 * 4 * 1800);
}

/* group_timeout 60m: the first group holds the queue for 2 h; the second
 * is Stopped, GroupTimeout, 60 simulated minutes after its submission. */
static void test_group_timeout(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f, "ordered", "capacity: 8\ngroup_timeout: 60m\n");
	int64_t a = submit(f, q, "hold",
			   "nodes: 8\n"
			   "gpu: \"4090\"\n"
			   "env: {RUN_SECONDS: \"7200\"}\n"
			   "command: [\"sim\"]\n");
	play(f, T0 + 10 * MIN_MS, NULL, NULL);
	int64_t b = submit(f, q, "late",
			   "gpu: \"4090\"\n"
			   "env: {RUN_SECONDS: \"60\"}\n"
			   "command: [\"sim\"]\n");
	play(f, T0 + 69 * MIN_MS, NULL, NULL);
	assert_int_equal(group_state(f, b), JF_ST_WAITING);
	play(f, -1, NULL, NULL);
	struct jf_group_rec rb = group(f, b);
	assert_int_equal(rb.state, JF_ST_STOPPED);
	assert_int_equal(rb.started_ms, 0);
	assert_int_equal(rb.finished_ms - rb.submitted_ms, 60 * MIN_MS);
	jf_group_release(&rb);
	char *ev = events(f, b);
	assert_non_null(strstr(ev, " GroupTimeout "));
	free(ev);
	struct jf_group_rec ra = group(f, a);
	assert_int_equal(ra.state, JF_ST_SUCCEEDED);
	assert_int_equal(ra.finished_ms, T0 + 2 * HOUR_MS);
	jf_group_release(&ra);
	assert_int_equal(f->clk.now_ms, T0 + 2 * HOUR_MS);
	assert_int_equal(ledger_seconds(f, JF_SCOPE_GROUP, b), 0);
}

/* A week of mixed work: hourly groups, trainings, spot batches, failures,
 * timeouts, a Kubernetes deadline; queues never over capacity. */
struct week {
	int64_t q_etl, q_train;
	int64_t max_etl, max_train;
};

static void watch_queues(struct fix *f, void *ctx)
{
	struct week *w = ctx;
	int64_t n = 0;
	assert_int_equal(jf_queue_running_nodes(f->st, w->q_etl, &n), JF_OK);
	if (n > 6)
		fail_msg("queue etl holds %lld nodes, capacity 6", (long long)n);
	if (n > w->max_etl)
		w->max_etl = n;
	assert_int_equal(jf_queue_running_nodes(f->st, w->q_train, &n), JF_OK);
	if (n > 4)
		fail_msg("queue train holds %lld nodes, capacity 4", (long long)n);
	if (n > w->max_train)
		w->max_train = n;
}

static void test_week(void **state)
{
	struct fix *f = *state;
	int64_t wall0 = jft_mono_ms();
	jf_sim_seed(f->be, 42);
	struct week w = { 0 };
	w.q_etl = mkqueue(f, "etl", "capacity: 6\ngroup_timeout: 3h\n");
	w.q_train = mkqueue(f, "train", "capacity: 4\ngroup_timeout: 12h\n");
	int64_t q_res = mkqueue(f, "research", NULL);
	int64_t deadline_group = 0, sweep = 0;
	char name[64];
	for (int h = 0; h < 7 * 24; h++) {
		play(f, T0 + h * HOUR_MS, watch_queues, &w);
		snprintf(name, sizeof(name), "etl-%d", h);
		submit(f, w.q_etl, name,
		       "completions: 30\n"
		       "parallelism: 4\n"
		       "gpu: \"4090\"\n"
		       "retries: 2\n"
		       "env: {RUN_SECONDS: \"120-900\", FAIL_PERCENT: \"3\"}\n"
		       "command: [\"etl\"]\n");
		if (h % 4 == 1) {
			snprintf(name, sizeof(name), "train-%d", h);
			submit(f, w.q_train, name,
			       "nodes: 2\n"
			       "gpu: H800\n"
			       "gpus: 8\n"
			       "env: {RUN_SECONDS: \"10800-18000\"}\n"
			       "command: [\"train\"]\n");
		}
		if (h % 6 == 3) {
			snprintf(name, sizeof(name), "debug-%d", h);
			submit(f, 0, name,
			       "count: 3\n"
			       "billing: spot\n"
			       "gpu: L40S\n"
			       "env: {RUN_SECONDS: \"600-2700\"}\n"
			       "command: [\"debug\"]\n");
		}
		if (h == 30)
			sweep = submit(f, q_res, "sweep",
				       "gpu: A800\n"
				       "completions: 3\n"
				       "timeout: 20m\n"
				       "retries: 0\n"
				       "env: {RUN_SECONDS: \"3600\"}\n"
				       "command: [\"sweep\"]\n");
		if (h == 50)
			deadline_group = submit(f, q_res, "k8s-deadline",
						"apiVersion: batch/v1\n"
						"kind: Job\n"
						"metadata:\n"
						"  name: dl\n"
						"  annotations: {jobfs/gpu: A800}\n"
						"spec:\n"
						"  completions: 4\n"
						"  parallelism: 1\n"
						"  activeDeadlineSeconds: 5000\n"
						"  template:\n"
						"    spec:\n"
						"      restartPolicy: Never\n"
						"      containers:\n"
						"      - name: main\n"
						"        command: [\"eval\"]\n"
						"        env:\n"
						"        - {name: RUN_SECONDS, value: \"3600\"}\n");
	}
	play(f, -1, watch_queues, &w);
	int64_t wall = jft_mono_ms() - wall0;
	print_message("a week of mixed work: %lld groups, %lld instants, %lld s simulated in "
		      "%lld ms\n",
		      (long long)f->ngroups, (long long)f->settles,
		      (long long)((f->clk.now_ms - T0) / 1000), (long long)wall);
	/* how long it took is a figure, not a property: printed, never asserted
	 * (a loaded machine is slower, not wrong) */
	assert_true(f->clk.now_ms >= T0 + 7 * DAY_MS - HOUR_MS);
	int64_t states[JF_ST__COUNT] = { 0 };
	for (size_t i = 0; i < f->ngroups; i++) {
		int s = group_state(f, f->groups[i]);
		if (!jf_state_final(s))
			fail_msg("group %lld is %s at the end", (long long)f->groups[i],
				 jf_state_name(s));
		states[s]++;
	}
	assert_true(states[JF_ST_SUCCEEDED] > 150);
	assert_int_equal(w.max_etl, 6);
	assert_int_equal(w.max_train, 2); /* the two H800 machines hold one training */
	/* the timeout and the deadline struck at their simulated times */
	assert_int_equal(group_state(f, sweep), JF_ST_FAILED);
	struct jf_group_rec r = group(f, deadline_group);
	assert_int_equal(r.state, JF_ST_FAILED);
	assert_int_equal(r.finished_ms - r.submitted_ms, 5000 * 1000);
	jf_group_release(&r);
	char *ev = events(f, deadline_group);
	assert_non_null(strstr(ev, " DeadlineExceeded "));
	free(ev);
	/* everything that ran is billed, every segment closed, nothing runs */
	assert_int_equal(jf_sim_running(f->be), 0);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM ledger WHERE end_ms = 0"), 0);
	struct jf_sim_stats ss;
	jf_sim_stats(f->be, &ss);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM ledger"), (int64_t)ss.started);
	assert_int_equal(sql_int(f, "SELECT sum(seconds) FROM ledger"),
			 ledger_seconds(f, JF_SCOPE_ALL, 0));
	assert_true(ss.failed > 0);
	assert_true(ss.signalled >= 3);
}

/* ---- spot work and the preemption forecast (reference 5.4, issue 4) ----
 *
 * A smaller tests/sim/spot-week.yaml (whose two replays give the README's
 * table, scripts/spot-claim.sh), played twice on the same seed: with the
 * forecast (spot_risk_threshold 0.2) and without it (1: every window
 * accepted).  A warm-up week of on-demand demand only, since the forecast
 * is an hour-of-week profile and learns a daily peak from the same hour a
 * week before; then three days of one-GPU spot tasks with unit_runtime 5m,
 * 1h and 12h (each RUN_SECONDS equal to it) while the peaks go on.
 * On-demand: 28 GPUs from 09:00 to 18:00 every day, plus one GPU every 37
 * minutes for 10 to 70 minutes, on 32 GPUs.
 */
static const char spot_cluster[] =
	"name: spot\n"
	"models:\n"
	"  - {name: \"4090\", vram: 24Gi, cpu_per_gpu: 20, memory_per_gpu: 101Gi,\n"
	"     price: {on-demand: \"3.60\", spot: \"1.08\"}}\n"
	"machines:\n"
	"  - {name: g, model: \"4090\", gpus: 8, count: 4}\n";

enum { SPOT_5M, SPOT_1H, SPOT_12H, SPOT__N };

static const struct spot_kind {
	const char *name;
	int64_t unit_s;
	int64_t every_min;
} spot_kinds[SPOT__N] = {
	[SPOT_5M] = { "s5m", 300, 25 },
	[SPOT_1H] = { "s1h", 3600, 55 },
	[SPOT_12H] = { "s12h", 43200, 115 },
};

struct spot_figs {
	int64_t tasks[SPOT__N];
	int64_t preempted[SPOT__N]; /* attempts cut short for on-demand work */
	int64_t wait_p50[SPOT__N];  /* ms from submission to the first start */
	int64_t wasted_ms[SPOT__N]; /* run time of the attempts cut short */
	int64_t windows[SPOT__N];   /* WaitingForWindow events */
};

/* One submit[] entry of the scenario: at offset + k * every, k < times. */
struct spot_entry {
	int64_t at_min, every_min, times;
	int64_t queue; /* 0: a batch of independent tasks */
	const char *name;
	char spec[256];
	int64_t done;
};

#define SPOT_WARMUP_DAYS 7
#define SPOT_DAYS        3

static void spot_play(double risk, struct spot_figs *out)
{
	struct jf_cluster *c = NULL;
	struct jf_error err = { 0 };
	if (jf_cluster_parse(spot_cluster, strlen(spot_cluster), &c, &err) != JF_OK)
		fail_msg("cluster: %s", err.msg);
	c->spot_risk_max = risk;
	struct fix *f = fix_new(c);
	jf_sim_seed(f->be, 1);
	int64_t od = mkqueue(f, "od", NULL);
	int64_t days = SPOT_WARMUP_DAYS + SPOT_DAYS + 1;
	struct spot_entry e[2 + SPOT__N] = {
		{ 9 * 60, 24 * 60, days, od, "peak", "", 0 },
		{ 7, 37, days * 24 * 60 / 37, od, "noise", "", 0 },
	};
	snprintf(e[0].spec, sizeof(e[0].spec),
		 "completions: 28\nparallelism: 28\n"
		 "gpu: \"4090\"\nenv: {RUN_SECONDS: \"32400\"}\ncommand: [train]\n");
	snprintf(e[1].spec, sizeof(e[1].spec),
		 "gpu: \"4090\"\n"
		 "env: {RUN_SECONDS: \"600-4200\"}\ncommand: [eval]\n");
	for (int k = 0; k < SPOT__N; k++) {
		const struct spot_kind *sk = &spot_kinds[k];
		e[2 + k] = (struct spot_entry){ SPOT_WARMUP_DAYS * 24 * 60,
						sk->every_min,
						SPOT_DAYS * 24 * 60 / sk->every_min,
						0,
						sk->name,
						"",
						0 };
		snprintf(e[2 + k].spec, sizeof(e[2 + k].spec),
			 "billing: spot\ngpu: \"4090\"\nunit_runtime: %llds\n"
			 "env: {RUN_SECONDS: \"%lld\"}\ncommand: [step]\n",
			 (long long)sk->unit_s, (long long)sk->unit_s);
	}
	/* submissions in time order, entry order on ties */
	for (;;) {
		int best = -1;
		int64_t at = 0;
		for (int i = 0; i < 2 + SPOT__N; i++) {
			if (e[i].done == e[i].times)
				continue;
			int64_t t = e[i].at_min + e[i].done * e[i].every_min;
			if (best < 0 || t < at) {
				best = i;
				at = t;
			}
		}
		if (best < 0)
			break;
		play(f, T0 + at * MIN_MS, NULL, NULL);
		char name[64];
		snprintf(name, sizeof(name), "%s-%lld", e[best].name, (long long)++e[best].done);
		submit(f, e[best].queue, name, e[best].spec);
	}
	play(f, -1, NULL, NULL);

	/* every task of every group succeeded: so each attempt but a task's
	 * last was cut short, and sim runs fail only when told to */
	for (size_t i = 0; i < f->ngroups; i++)
		assert_int_equal(group_state(f, f->groups[i]), JF_ST_SUCCEEDED);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM attempts WHERE exit_code != 0 AND "
				    "reason NOT LIKE '%signal 15%'"),
			 0);
	for (int k = 0; k < SPOT__N; k++) {
		char sql[1024];
		const char *kind = spot_kinds[k].name;
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM tasks t JOIN groups g ON "
			 "g.id = t.group_id WHERE g.dirname LIKE '%s-%%'",
			 kind);
		out->tasks[k] = sql_int(f, sql);
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) - %lld FROM attempts a JOIN nodes n ON "
			 "n.id = a.node_id JOIN tasks t ON t.id = n.task_id JOIN groups g ON "
			 "g.id = t.group_id WHERE g.dirname LIKE '%s-%%'",
			 (long long)out->tasks[k], kind);
		out->preempted[k] = sql_int(f, sql);
		snprintf(sql, sizeof(sql),
			 "SELECT ifnull(sum(a.end_ms - a.start_ms), 0) FROM "
			 "attempts a JOIN nodes n ON n.id = a.node_id JOIN tasks t ON "
			 "t.id = n.task_id JOIN groups g ON g.id = t.group_id WHERE "
			 "g.dirname LIKE '%s-%%' AND a.attempt < t.attempt",
			 kind);
		out->wasted_ms[k] = sql_int(f, sql);
		snprintf(sql, sizeof(sql),
			 "SELECT (SELECT min(a.start_ms) FROM nodes n JOIN "
			 "attempts a ON a.node_id = n.id WHERE n.task_id = t.id) - g.submitted_ms "
			 "AS w FROM tasks t JOIN groups g ON g.id = t.group_id WHERE g.dirname "
			 "LIKE '%s-%%' ORDER BY w LIMIT 1 OFFSET %lld",
			 kind, (long long)(out->tasks[k] - 1) / 2);
		out->wait_p50[k] = sql_int(f, sql);
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM events e JOIN groups g ON "
			 "g.id = e.group_id WHERE e.group_off IS NOT NULL AND g.dirname LIKE "
			 "'%s-%%' AND e.line LIKE '%% WaitingForWindow %%'",
			 kind);
		out->windows[k] = sql_int(f, sql);
		print_message("risk threshold %.2f: %-4s %3lld tasks, wait p50 %6llds, %3lld "
			      "preempted, %6llds wasted, %3lld window waits\n",
			      risk, kind, (long long)out->tasks[k],
			      (long long)out->wait_p50[k] / 1000, (long long)out->preempted[k],
			      (long long)out->wasted_ms[k] / 1000, (long long)out->windows[k]);
		assert_int_equal(out->tasks[k], SPOT_DAYS * 24 * 60 / spot_kinds[k].every_min);
	}
	void *st = f;
	teardown(&st);
}

/*
 * The claim's direction, as the model makes it hold whatever the seed:
 *  - the forecast gates by the risk over the whole unit_runtime, and a
 *    window's risk is at most the share of an hour it covers times 1, so a
 *    5-minute window (at most 1/12 < 0.2) is never refused: 5m tasks never
 *    wait for a window, while 12h tasks (whose window reaches the next
 *    09:00 peak from most hours of the day) do, and wait hours for the
 *    evening: their median wait is above an hour and above the 5m tasks';
 *  - without the forecast a 12h task started in the morning or in a gap of
 *    the peak is preempted, often more than once (it reruns from the start);
 *    with it, 12h tasks start when the next 12 hours are predicted quiet:
 *    their preemptions fall by more than half, and so does their wasted time;
 *  - with the forecast, the 5m tasks are the spot work that fills the gaps
 *    of the peak, which the on-demand noise then takes back: per hour of
 *    run they are preempted at least as often as the 12h tasks;
 *  - the threshold 1 turns the forecast off: no task waits for a window.
 */
static void test_spot_forecast(void **state)
{
	(void)state;
	int64_t wall0 = jft_mono_ms();
	struct spot_figs on = { 0 }, off = { 0 };
	spot_play(JF_SPOT_RISK_DEFAULT, &on);
	spot_play(1.0, &off);
	print_message("two runs of %d + %d days in %lld ms\n", SPOT_WARMUP_DAYS, SPOT_DAYS,
		      (long long)(jft_mono_ms() - wall0));

	assert_int_equal(on.windows[SPOT_5M], 0);
	assert_true(on.windows[SPOT_12H] > 0);
	assert_true(on.wait_p50[SPOT_12H] > HOUR_MS);
	assert_true(on.wait_p50[SPOT_12H] > on.wait_p50[SPOT_5M]);

	assert_true(off.preempted[SPOT_12H] > 0);
	assert_true(2 * on.preempted[SPOT_12H] < off.preempted[SPOT_12H]);
	assert_true(2 * on.wasted_ms[SPOT_12H] < off.wasted_ms[SPOT_12H]);

	/* preempted / (tasks x unit_runtime), compared without division */
	assert_true(on.preempted[SPOT_5M] * on.tasks[SPOT_12H] * spot_kinds[SPOT_12H].unit_s >=
		    on.preempted[SPOT_12H] * on.tasks[SPOT_5M] * spot_kinds[SPOT_5M].unit_s);

	for (int k = 0; k < SPOT__N; k++)
		assert_int_equal(off.windows[k], 0);
}

/* ---- the tool ---- */

#ifdef JF_BUILD_DIR
#define SIM_TOOL JF_BUILD_DIR "/tools/jobfs-sim"
#else
#define SIM_TOOL "build/tools/jobfs-sim"
#endif
#ifdef JF_SOURCE_DIR
#define SAMPLES JF_SOURCE_DIR "/tests/sim"
#else
#define SAMPLES "tests/sim"
#endif

/* Run the tool; its stdout (caller frees) and exit status. */
static char *tool(const char *args, int *status)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s %s 2>/dev/null", SIM_TOOL, args);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	size_t n;
	while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 1024) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
	}
	out[len] = '\0';
	int st = pclose(p);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

/* The report line of a group: it holds every word of want, in order. */
static void expect_line(const char *out, const char *label, const char *const *want)
{
	char key[96];
	snprintf(key, sizeof(key), "\n%s ", label);
	const char *l = strstr(out, key);
	if (!l)
		fail_msg("no line for %s in:\n%s", label, out);
	const char *end = strchr(l + 1, '\n');
	const char *p = l;
	for (; *want; want++) {
		p = strstr(p, *want);
		if (!p || (end && p > end))
			fail_msg("line of %s lacks \"%s\":\n%.*s", label, *want,
				 (int)(end ? end - l : 80), l + 1);
	}
}

static void test_tool_samples(void **state)
{
	(void)state;
	if (access(SIM_TOOL, X_OK) != 0)
		skip();
	int st;
	char *a = tool(SAMPLES "/scenario-a.yaml", &st);
	assert_int_equal(st, 0);
	expect_line(a, "batch/a",
		    (const char *const[]){ "00:00:00", "01:40:00", "Succeeded", "100/0", "60000",
					   "60.00 CNY", NULL });
	assert_non_null(strstr(a, "peak nodes         10 in all; queue batch 10"));
	assert_non_null(strstr(a, "simulated span     01:40:00"));
	free(a);

	char *b = tool("--events " SAMPLES "/scenario-b.yaml", &st);
	assert_int_equal(st, 0);
	expect_line(b, "tasks/train",
		    (const char *const[]){ "02:00:00", "Succeeded", "1/0", "720000", NULL });
	expect_line(b, "ordered/late",
		    (const char *const[]){ "00:05:00", "-", "01:05:00", "Stopped", NULL });
	assert_non_null(strstr(b, "queue gangs 20,"));
	assert_non_null(strstr(b, "01:05:00 ordered/late Warning GroupTimeout group"));
	assert_non_null(strstr(b, "00:00:00 tasks/train Normal Started 1-train/nodes/99 "));
	free(b);

	/* the same input and seed print the same; another seed differs */
	char *m1 = tool("--seed 7 " SAMPLES "/mixed-day.yaml", &st);
	assert_int_equal(st, 0);
	char *m2 = tool("--seed 7 " SAMPLES "/mixed-day.yaml", &st);
	assert_int_equal(st, 0);
	char *m3 = tool("--seed 8 " SAMPLES "/mixed-day.yaml", &st);
	assert_int_equal(st, 0);
	assert_string_equal(m1, m2);
	assert_string_not_equal(m1, m3);
	expect_line(m1, "train/llm-c", (const char *const[]){ "Stopped", NULL });
	expect_line(m1, "research/sweep", (const char *const[]){ "Failed", "0/4", NULL });
	expect_line(m1, "research/eval", (const char *const[]){ "Succeeded", "6/0", NULL });
	free(m1);
	free(m2);
	free(m3);

	/* dependencies (reference 10): a chain, each task after its pair, a
	 * fan-in across /tasks, a cleanup that never runs */
	char *d = tool("--events " SAMPLES "/deps.yaml", &st);
	assert_int_equal(st, 0);
	expect_line(d, "ml/prep",
		    (const char *const[]){ "00:00:00", "00:10:00", "Succeeded", NULL });
	expect_line(d, "ml/train",
		    (const char *const[]){ "00:10:00", "01:10:00", "Succeeded", "4/0", NULL });
	expect_line(d, "ml/eval",
		    (const char *const[]){ "01:10:00", "01:15:00", "Succeeded", "4/0", NULL });
	expect_line(d, "tasks/fetch", (const char *const[]){ "00:10:00", "00:40:00", NULL });
	expect_line(d, "ml/report",
		    (const char *const[]){ "00:10:00", "01:15:00", "01:16:00", "Succeeded", NULL });
	expect_line(d, "ml/cleanup",
		    (const char *const[]){ "00:00:00", "-", "01:10:00", "Stopped", "0/0", NULL });
	assert_non_null(strstr(d, "00:00:00 ml/train Normal WaitingForDependency group waiting "
				  "for queues/ml/groups/prep to succeed"));
	assert_non_null(strstr(d, "01:10:00 ml/cleanup Warning DependencyNeverSatisfied group"));
	free(d);

	/* --until stops the clock; the rest is still running */
	char *u = tool("--until 30m " SAMPLES "/scenario-a.yaml", &st);
	assert_int_equal(st, 0);
	expect_line(u, "batch/a", (const char *const[]){ "Running", "30/0", "18000", NULL });
	assert_non_null(strstr(u, "stopped by --until"));
	free(u);
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

/* Budgets (reference 10) in the replay: tests/sim/budget-days.yaml (its
 * numbers worked out in its comments) holds lab's work back to a burst a
 * day, beside the same work in a queue without a budget; without a period
 * the work left is held for good (stalled); budget_action: stop cuts the
 * running task short. */
static void test_tool_budget(void **state)
{
	(void)state;
	if (access(SIM_TOOL, X_OK) != 0)
		skip();
	int st;
	char *b = tool(SAMPLES "/budget-days.yaml", &st);
	assert_int_equal(st, 0);
	expect_line(b, "free/sweep",
		    (const char *const[]){ "00:00:00", "02:00:00", "Succeeded", "12/0", "7200",
					   "7.20 CNY", NULL });
	expect_line(b, "lab/sweep",
		    (const char *const[]){ "00:00:00", "2d00:53:22", "Succeeded", "12/0", "7200",
					   "7.20 CNY", NULL });
	assert_non_null(strstr(b, "  queue lab: 2.00 CNY per 1d, budget_action hold\n"));
	assert_non_null(
		strstr(b, "    exhausted        3 times: 00:33:20, 1d00:40:01, 2d00:46:42\n"));
	assert_non_null(strstr(b, "    available again  2 times: 1d00:06:41, 2d00:13:22\n"));
	assert_null(strstr(b, "queue free:"));
	/* the same twice */
	char *b2 = tool(SAMPLES "/budget-days.yaml", &st);
	assert_string_equal(b, b2);
	free(b);
	free(b2);

	char dir[256], path[300];
	snprintf(dir, sizeof(dir), "%s/jf-simb-XXXXXX", jft_tmp_base());
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/w.yaml", dir);
	/* no period: 2.00 is spent during the fourth task (00:33:20), which
	 * runs on; the other eight wait for good */
	write_file(path, "queues: [{name: q, spec: 'budget: \"2.00\"'}]\n"
			 "submit: [{at: 0s, queue: q, group: g, spec: \"completions: 12\\n"
			 "parallelism: 1\\ngpu: '4090'\\nenv: {RUN_SECONDS: '600'}\\n"
			 "command: [sim]\"}]\n");
	char *out = tool(path, &st);
	assert_int_equal(st, 4);
	expect_line(out, "q/g",
		    (const char *const[]){ "Waiting", "4/0", "2400", "2.40 CNY", NULL });
	assert_non_null(strstr(out, "exhausted        1 time: 00:33:20\n"));
	assert_non_null(strstr(out, "available again  0 times\n"));
	assert_non_null(strstr(out, "spent at the end 2.40 CNY in all"));
	free(out);
	/* stop: the fourth task is stopped at 00:33:20 */
	write_file(path, "queues: [{name: q, spec: 'budget: \"2.00\"\n\nbudget_action: stop'}]\n"
			 "submit: [{at: 0s, queue: q, group: g, spec: \"completions: 12\\n"
			 "parallelism: 1\\ngpu: '4090'\\nenv: {RUN_SECONDS: '600'}\\n"
			 "command: [sim]\"}]\n");
	out = tool(path, &st);
	assert_int_equal(st, 4);
	expect_line(out, "q/g",
		    (const char *const[]){ "Waiting", "3/0", "2000", "2.00 CNY", NULL });
	assert_non_null(strstr(out, "budget_action stop"));
	free(out);
	jft_rmtree(dir);
}

static void test_tool_exit_codes(void **state)
{
	(void)state;
	if (access(SIM_TOOL, X_OK) != 0)
		skip();
	char dir[256], path[300], args[400];
	snprintf(dir, sizeof(dir), "%s/jf-simw-XXXXXX", jft_tmp_base());
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/w.yaml", dir);
	snprintf(args, sizeof(args), "%s", path);
	int st;
	static const char *const bad[] = {
		"submit: [{at: 0s, tasks: x, spec: 'command: [a]', colour: red}]\n",
		"submit: [{at: soon, tasks: x, spec: 'command: [a]'}]\n",
		"submit: [{at: 0s, queue: nope, group: g, spec: 'command: [a]'}]\n",
		("submit: [{at: 0s, tasks: x, spec: 'command: [a]'},\n"
		 "         {at: 1h, tasks: x, spec: 'command: [a]'}]\n"),
		"submit: [{at: 0s, tasks: x, ctl: stop}]\n",
		"submit: [{at: 0s, tasks: x, spec: 'frobnicate: 1'}]\n",
		"submit: [{at: 0s, tasks: x, spec: \"gpu: V100\\ncommand: [a]\"}]\n",
		"queues: [{name: q, spec: 'capacity: -1'}]\nsubmit: []\n",
		"submit: [{at: 0s, tasks: 'a b', spec: 'command: [a]'}]\n",
		"[1, 2]\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(path, bad[i]);
		free(tool(args, &st));
		if (st != 2)
			fail_msg("workload %zu: exit %d, want 2:\n%s", i, st, bad[i]);
	}
	/* stalled: a 2-node task in a queue of capacity 1 never starts */
	write_file(path, "queues: [{name: q, spec: 'capacity: 1'}]\n"
			 "submit: [{at: 0s, queue: q, group: g,\n"
			 "          spec: \"nodes: 2\\ncommand: [a]\"}]\n");
	char *out = tool(args, &st);
	assert_int_equal(st, 4);
	assert_non_null(strstr(out, "stalled"));
	free(out);
	/* usage */
	free(tool("", &st));
	assert_int_equal(st, 1);
	free(tool("--seed x w.yaml", &st));
	assert_int_equal(st, 1);
	free(tool("/nonexistent/w.yaml", &st));
	assert_int_equal(st, 2);
	/* a missing cluster file: cannot set up */
	snprintf(args, sizeof(args), "--cluster /nonexistent/c.yaml %s/scenario-a.yaml", SAMPLES);
	free(tool(args, &st));
	assert_int_equal(st, 3);
	/* repeats are numbered, ctl reaches its target */
	snprintf(args, sizeof(args), "%s", path);
	write_file(path, "queues: [{name: q}]\n"
			 "submit:\n"
			 "  - {at: 0s, every: 1h, times: 3, queue: q, group: r,\n"
			 "     spec: \"env: {RUN_SECONDS: '600'}\\ncommand: [a]\"}\n"
			 "  - {at: 0s, queue: q, group: long,\n"
			 "     spec: \"env: {RUN_SECONDS: '9000'}\\ncommand: [a]\"}\n"
			 "  - {at: 30m, queue: q, group: long, ctl: stop}\n");
	out = tool(args, &st);
	assert_int_equal(st, 0);
	expect_line(out, "q/r-1",
		    (const char *const[]){ "00:00:00", "00:10:00", "Succeeded", NULL });
	expect_line(out, "q/r-3",
		    (const char *const[]){ "02:00:00", "02:10:00", "Succeeded", NULL });
	expect_line(out, "q/long", (const char *const[]){ "00:30:00", "Stopped", "1800", NULL });
	free(out);
	/* the spot report: two 1h spot tasks start at once on an empty machine
	 * and are both preempted at 10m by 8 on-demand GPUs (20 GPU-minutes
	 * lost), then run again from 20m to 1h20m */
	static const char one_machine[] =
		"cluster: |\n"
		"  models:\n"
		"    - {name: \"4090\", vram: 24Gi, cpu_per_gpu: 20, memory_per_gpu: 101Gi,\n"
		"       price: {on-demand: \"3.60\", spot: \"1.08\"}}\n"
		"  machines:\n"
		"    - {name: g, model: \"4090\", gpus: 8}\n"
		"queues: [{name: od}]\n"
		"submit:\n";
	char text[2048];
	snprintf(text, sizeof(text),
		 "%s"
		 "  - at: 0s\n"
		 "    tasks: s\n"
		 "    spec: |\n"
		 "      count: 2\n"
		 "      billing: spot\n"
		 "      gpu: \"4090\"\n"
		 "      unit_runtime: 1h\n"
		 "      env: {RUN_SECONDS: \"3600\"}\n"
		 "      command: [a]\n"
		 "  - at: 10m\n"
		 "    queue: od\n"
		 "    group: p\n"
		 "    spec: |\n"
		 "      completions: 8\n"
		 "      parallelism: 8\n"
		 "      gpu: \"4090\"\n"
		 "      env: {RUN_SECONDS: \"600\"}\n"
		 "      command: [a]\n",
		 one_machine);
	write_file(path, text);
	out = tool(args, &st);
	assert_int_equal(st, 0);
	const char *spot = strstr(out, "\nspot: risk threshold 0.20 (cluster)\n");
	assert_non_null(spot);
	expect_line(spot, "tasks/s",
		    (const char *const[]){ "1h", " 2 ", "00:00:00", "01:20:00", " 2 ", "1.00",
					   "1.00", "0.33", NULL });
	free(out);
	/* no spot work, no spot report */
	out = tool(SAMPLES "/scenario-a.yaml", &st);
	assert_int_equal(st, 0);
	assert_null(strstr(out, "\nspot: "));
	free(out);
	/* a 12h spot task while 7 of 8 GPUs are on-demand: the forecast makes it
	 * wait for a window (for how long is the forecast's business: stop at
	 * 2h); --spot-risk-threshold 1 turns the forecast off */
	snprintf(text, sizeof(text),
		 "%s"
		 "  - at: 0s\n"
		 "    queue: od\n"
		 "    group: busy\n"
		 "    spec: |\n"
		 "      completions: 7\n"
		 "      parallelism: 7\n"
		 "      gpu: \"4090\"\n"
		 "      env: {RUN_SECONDS: \"3600\"}\n"
		 "      command: [a]\n"
		 "  - at: 10m\n"
		 "    tasks: long\n"
		 "    spec: |\n"
		 "      billing: spot\n"
		 "      gpu: \"4090\"\n"
		 "      unit_runtime: 12h\n"
		 "      env: {RUN_SECONDS: \"60\"}\n"
		 "      command: [a]\n",
		 one_machine);
	write_file(path, text);
	snprintf(args, sizeof(args), "--events --until 2h %s", path);
	out = tool(args, &st);
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "00:10:00 tasks/long Normal WaitingForWindow batch "));
	free(out);
	snprintf(args, sizeof(args), "--events --until 2h --spot-risk-threshold 1 %s", path);
	out = tool(args, &st);
	assert_int_equal(st, 0);
	assert_null(strstr(out, "WaitingForWindow"));
	expect_line(out, "tasks/long",
		    (const char *const[]){ "00:10:00", "00:10:00", "00:11:00", "Succeeded", NULL });
	assert_non_null(strstr(out, "\nspot: risk threshold 1.00 (--spot-risk-threshold), "
				    "forecast off\n"));
	free(out);
	/* the threshold is a probability */
	static const char *const bad_risk[] = { "2", "-0.1", "x", "0.5x", "" };
	for (size_t i = 0; i < sizeof(bad_risk) / sizeof(bad_risk[0]); i++) {
		snprintf(args, sizeof(args), "--spot-risk-threshold '%s' %s", bad_risk[i], path);
		free(tool(args, &st));
		if (st != 1)
			fail_msg("--spot-risk-threshold '%s': exit %d, want 1", bad_risk[i], st);
	}
	jft_rmtree(dir);
}

/* ---- a submission bigger than a chunk of task rows ---- */

/* Three chunks and five tasks, as many running at once as the built-in
 * cluster's CPUs take (the default request: 1 core). */
struct big {
	int64_t q, g, chunk, tasks, par;
};

static struct big big_submit(struct fix *f, int64_t chunk)
{
	struct big b = { 0, 0, chunk, 3 * chunk + 5, chunk < 400 ? chunk / 4 : 400 };
	if (chunk != JF_TASKS_CHUNK)
		jf_store_set_tasks_chunk(f->st, chunk);
	b.q = mkqueue(f, "big", NULL);
	char spec[256];
	snprintf(spec, sizeof(spec),
		 "completions: %lld\nparallelism: %lld\nenv: {RUN_SECONDS: \"60\"}\n"
		 "command: [\"sim\"]\n",
		 (long long)b.tasks, (long long)b.par);
	b.g = submit(f, b.q, "g", spec);
	return b;
}

static int64_t rows_of(struct fix *f, int64_t g, const char *where)
{
	char sql[256];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM tasks WHERE group_id = %lld%s%s",
		 (long long)g, where ? " AND " : "", where ? where : "");
	return sql_int(f, sql);
}

static int64_t unmade_of(struct fix *f, int64_t g)
{
	struct jf_group_rec r = group(f, g);
	int64_t n = r.unmade;
	jf_group_release(&r);
	return n;
}

/* At every instant: every task is counted once, made or not, and no more
 * run than parallelism allows. */
static void watch_total(struct fix *f, void *ctx)
{
	const struct big *b = ctx;
	int64_t c[JF_ST__COUNT], all = 0;
	assert_int_equal(jf_group_count_tasks(f->st, b->g, c), JF_OK);
	for (int i = 0; i < JF_ST__COUNT; i++)
		all += c[i];
	assert_int_equal(all, b->tasks);
	assert_true(c[JF_ST_INITIALIZING] + c[JF_ST_RUNNING] <= b->par);
}

/* Stop the group and play until every task has ended: those that had not
 * succeeded are Stopped. */
static void expect_stopped(struct fix *f, const struct big *b)
{
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_ctl(f->e, b->g, 0, "stop", &err), JF_OK);
	play(f, -1, watch_total, (void *)b);
	assert_int_equal(group_state(f, b->g), JF_ST_STOPPED);
	assert_int_equal(rows_of(f, b->g, "state IN (5, 7)"), b->tasks);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM attempts WHERE end_ms = 0"), 0);
}

/* As jobfs-sim runs it (not yielding), on small chunks so that the group
 * runs to its end fast: the acceptance makes one chunk, the first tasks
 * start from it, the rest are made before the clock moves, counted as
 * waiting meanwhile; then every index runs exactly once. */
static void test_big_submission(void **state)
{
	struct fix *f = *state;
	struct big b = big_submit(f, 64);
	assert_int_equal(rows_of(f, b.g, NULL), b.chunk);
	assert_int_equal(unmade_of(f, b.g), b.tasks - b.chunk);
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(f->st, b.g, c), JF_OK);
	assert_int_equal(c[JF_ST_RUNNING] + c[JF_ST_INITIALIZING], b.par);
	assert_int_equal(c[JF_ST_WAITING], b.tasks - b.par);
	assert_int_equal(jf_queue_count_tasks(f->st, b.q, JF_KIND_GROUP, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], b.tasks - b.par);
	settle(f);
	assert_int_equal(f->clk.now_ms, T0);
	assert_int_equal(rows_of(f, b.g, NULL), b.tasks);
	assert_int_equal(unmade_of(f, b.g), 0);
	play(f, -1, watch_total, &b);
	assert_int_equal(group_state(f, b.g), JF_ST_SUCCEEDED);
	assert_int_equal(rows_of(f, b.g, "state = 5 AND attempt = 1"), b.tasks);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM attempts"), b.tasks);
	assert_int_equal(sql_int(f, "SELECT count(DISTINCT n.task_id) FROM attempts a JOIN nodes "
				    "n ON n.id = a.node_id"),
			 b.tasks);
	assert_int_equal(f->clk.now_ms, T0 + (b.tasks + b.par - 1) / b.par * MIN_MS);
}

/* What the daemon's loop sees every turn (a source that is ready until
 * every row is made; JF_LOOP_NEXT, so the deferred job runs in the same
 * turns): the rows made so far. */
struct turns {
	struct fix *f;
	const struct big *b;
	int fd;
	int64_t last, most, turns;
};

static void on_turn(struct jf_loop *l, void *ctx)
{
	(void)l;
	struct turns *t = ctx;
	int64_t rows = rows_of(t->f, t->b->g, NULL);
	if (rows - t->last > t->most)
		t->most = rows - t->last;
	t->last = rows;
	t->turns++;
	uint64_t v;
	if (rows == t->b->tasks && read(t->fd, &v, sizeof(v)) != sizeof(v)) /* quiet now */
		fail_msg("eventfd: %s", strerror(errno));
}

static int setup_yielding(void **state)
{
	*state = fix_new_opts(NULL, true);
	return 0;
}

/* As the daemon runs it (yielding), with the real chunk: the loop's
 * deferred job makes one chunk a turn, between the turns that serve
 * requests, and the scheduler's passes start the rows made. */
static void test_big_submission_yielding(void **state)
{
	struct fix *f = *state;
	struct big b = big_submit(f, JF_TASKS_CHUNK);
	assert_int_equal(rows_of(f, b.g, NULL), JF_TASKS_CHUNK);
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(f->st, b.g, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], b.tasks); /* the pass is still to come */
	struct turns t = { f, &b, eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK), JF_TASKS_CHUNK, 0, 0 };
	assert_true(t.fd >= 0);
	assert_int_equal(jf_loop_add_fd(f->loop, t.fd, JF_LOOP_NEXT, on_turn, &t), 0);
	settle(f);
	assert_int_equal(t.last, b.tasks);
	assert_true(t.turns >= 4);                /* three more chunks, one a turn */
	assert_int_equal(t.most, JF_TASKS_CHUNK); /* never more than one */
	assert_int_equal(f->clk.now_ms, T0);
	assert_int_equal(unmade_of(f, b.g), 0);
	assert_int_equal(jf_group_count_tasks(f->st, b.g, c), JF_OK);
	assert_int_equal(c[JF_ST_RUNNING] + c[JF_ST_INITIALIZING], b.par);
	expect_stopped(f, &b);
	close(t.fd);
}

/* A stop while rows are still to make: every task ends Stopped, those
 * made after it too, and the counts agree with the rows all along. */
static void test_big_submission_stop(void **state)
{
	struct fix *f = *state;
	struct big b = big_submit(f, JF_TASKS_CHUNK);
	assert_int_equal(rows_of(f, b.g, NULL), JF_TASKS_CHUNK);
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_ctl(f->e, b.g, 0, "stop", &err), JF_OK);
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(f->st, b.g, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], 0);
	assert_int_equal(c[JF_ST_STOPPED] + c[JF_ST_RUNNING] + c[JF_ST_INITIALIZING], b.tasks);
	play(f, -1, watch_total, &b);
	assert_int_equal(group_state(f, b.g), JF_ST_STOPPED);
	assert_int_equal(rows_of(f, b.g, NULL), b.tasks);
	assert_int_equal(rows_of(f, b.g, "state = 7"), b.tasks);
	assert_int_equal(rows_of(f, b.g,
				 "idx >= 4096 AND message = 'stopped by ctl' AND "
				 "finished_ms > 0"),
			 b.tasks - JF_TASKS_CHUNK);
	assert_int_equal(jf_group_count_tasks(f->st, b.g, c), JF_OK);
	assert_int_equal(c[JF_ST_STOPPED], b.tasks);
	assert_int_equal(sql_int(f, "SELECT count(*) FROM attempts WHERE end_ms = 0"), 0);
}

/* The daemon stops with rows still to make: the next one makes them, and
 * they run. */
static void test_big_submission_reopen(void **state)
{
	struct fix *f = *state;
	struct big b = big_submit(f, JF_TASKS_CHUNK); /* yielding: nothing started yet */
	assert_int_equal(rows_of(f, b.g, NULL), JF_TASKS_CHUNK);
	fix_reopen(f, true);
	assert_int_equal(rows_of(f, b.g, NULL), JF_TASKS_CHUNK);
	settle(f);
	assert_int_equal(rows_of(f, b.g, NULL), b.tasks);
	assert_int_equal(unmade_of(f, b.g), 0);
	play(f, T0 + 3 * MIN_MS, watch_total, &b);
	assert_int_equal(rows_of(f, b.g, "state = 5"), 3 * b.par);
	expect_stopped(f, &b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backend_order),
		cmocka_unit_test(test_backend_signal_and_env),
		cmocka_unit_test(test_backend_seeded),
		cmocka_unit_test_setup_teardown(test_scenario_a, setup_builtin, teardown),
		cmocka_unit_test_setup_teardown(test_scenario_b_100_nodes, setup_big, teardown),
		cmocka_unit_test_setup_teardown(test_gang_peak, setup_big, teardown),
		cmocka_unit_test_setup_teardown(test_group_timeout, setup_big, teardown),
		cmocka_unit_test_setup_teardown(test_week, setup_builtin, teardown),
		cmocka_unit_test_setup_teardown(test_big_submission, setup_builtin, teardown),
		cmocka_unit_test_setup_teardown(test_big_submission_yielding, setup_yielding,
						teardown),
		cmocka_unit_test_setup_teardown(test_big_submission_stop, setup_builtin, teardown),
		cmocka_unit_test_setup_teardown(test_big_submission_reopen, setup_yielding,
						teardown),
		cmocka_unit_test(test_spot_forecast),
		cmocka_unit_test(test_tool_samples),
		cmocka_unit_test(test_tool_exit_codes),
		cmocka_unit_test(test_tool_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
