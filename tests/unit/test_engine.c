/*
 * test_engine.c - engine/engine.h driven the way the daemon drives it, with
 * everything real: a SQLite store in a temporary state directory, the
 * built-in cluster, the local backend running tools/jobfs-shim ($JOBFS_SHIM)
 * and real processes.  Only the clock is injected: the real clock plus an
 * offset a test may advance, so deadlines can pass at once while kill
 * grace and process ends still happen in real time.
 *
 * Covers: a group that succeeds (tasks, ledger rows), retries then failure
 * (BackOff events), parallelism never exceeded, the per-attempt timeout
 * (DeadlineExceeded, killed), ctl stop and a ctl verb that does not apply
 * (EBUSY), a refused spec (Invalid with its message), and a restart of the
 * engine while a task runs (adopted, finished once, billed once).
 *
 * Waiting is poll() on the backend's fd with short timeouts until a
 * condition holds or a deadline passes; nothing sleeps a fixed time.
 */
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "testutil.h"
#include <sqlite3.h>

#include "backends/local/local.h"
#include "core/lifecycle.h"
#include "engine/engine.h"
#include "engine/engine_int.h" /* jf_eng_move: the one way states change */

struct fix {
	char dir[256];
	char db[512];
	struct jf_engine *e;
	struct jf_runner *be; /* owned by e; kept to kill leftovers */
	int64_t offset_ms;    /* the injected clock: real time + this */
	int changes;          /* notifications seen */
	int64_t queue;
	int64_t grace_s; /* the cluster's preempt_grace for the next start; 0 = 30 */
	int64_t first;   /* test_group_cache_trim: its first group's id */
};

static int64_t test_now(void *ctx)
{
	const struct fix *f = ctx;
	return jft_wall_ms() + f->offset_ms;
}

static void on_change(void *ctx, const struct jf_change *ch)
{
	(void)ch;
	((struct fix *)ctx)->changes++;
}

/* A new engine on the fixture's state directory (reopening its store). */
static void engine_start(struct fix *f)
{
	struct jf_error err = { 0 };
	struct jf_store *st = NULL;
	if (jf_store_open(f->db, &st, &err) != JF_OK)
		fail_msg("jf_store_open: %s", err.msg);
	struct jf_cluster *c = jf_cluster_builtin();
	assert_non_null(c);
	if (f->grace_s)
		c->preempt_grace_s = f->grace_s;
	assert_non_null(jft_shim_path());
	struct jf_runner *be = jf_local_new(jft_shim_path(), &err);
	if (!be)
		fail_msg("jf_local_new: %s", err.msg);
	struct jf_engine_config cfg = {
		.state_dir = f->dir,
		.store = st,
		.cluster = c,
		.runner = be,
		.clock = { .now_ms = test_now, .ctx = f },
		.kill_grace_ms = 200,
	};
	if (jf_engine_new(&cfg, &f->e, &err) != JF_OK)
		fail_msg("jf_engine_new: %s", err.msg);
	f->be = be;
	jf_engine_set_notify(f->e, on_change, f);
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/jf-engine-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/jobfs.db", f->dir);
	engine_start(f);
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_mkqueue(f->e, "q", getuid(), getgid(), &f->queue, &err), JF_OK);
	*state = f;
	return 0;
}

/* ---- driving the loop ---- */

/* One turn of the daemon's loop: timers, then wait on the backend. */
static void turn(struct fix *f, int max_wait_ms)
{
	int64_t next = jf_engine_tick(f->e);
	int wait = max_wait_ms;
	if (next >= 0 && next < wait)
		wait = (int)next;
	struct pollfd p = { .fd = jf_engine_backend_fd(f->e), .events = POLLIN };
	int n = poll(&p, 1, wait);
	assert_true(n >= 0);
	if (n > 0 && (p.revents & POLLIN))
		jf_engine_on_backend(f->e);
}

static int count_open(void *ctx, const struct jf_attempt_rec *a)
{
	(void)a;
	(*(int *)ctx)++;
	return 0;
}

static int open_attempts(struct fix *f)
{
	int n = 0;
	assert_int_equal(jf_attempt_list_open(jf_engine_store(f->e), count_open, &n), JF_OK);
	return n;
}

static int group_state(struct fix *f, int64_t g)
{
	struct jf_group_rec r;
	assert_int_equal(jf_group_get(jf_engine_store(f->e), g, &r), JF_OK);
	int s = r.state;
	jf_group_release(&r);
	return s;
}

static int task_state(struct fix *f, int64_t g, int64_t idx)
{
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(jf_engine_store(f->e), g, idx, &t), JF_OK);
	int s = t.state;
	jf_task_release(&t);
	return s;
}

/* Loop until pred holds (checked before every turn) or timeout_ms pass;
 * each (if set) runs every turn to check an invariant. */
static bool run_until(struct fix *f, bool (*pred)(struct fix *, int64_t), int64_t g, int timeout_ms,
		      void (*each)(struct fix *, int64_t, void *), void *ctx)
{
	int64_t end = jft_mono_ms() + timeout_ms;
	for (;;) {
		if (each)
			each(f, g, ctx);
		if (pred(f, g))
			return true;
		if (jft_mono_ms() >= end)
			return false;
		turn(f, 50);
	}
}

/* The group is over and no process of it is left. */
static bool settled(struct fix *f, int64_t g)
{
	return jf_state_final(group_state(f, g)) && open_attempts(f) == 0;
}

static bool task0_running(struct fix *f, int64_t g)
{
	return task_state(f, g, 0) == JF_ST_RUNNING;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	if (f->e) {
		/* a failed test may leave processes: kill them and reap them */
		sqlite3 *db;
		if (sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
			sqlite3_stmt *s;
			if (sqlite3_prepare_v2(db, "SELECT handle FROM attempts WHERE end_ms = 0",
					       -1, &s, NULL) == SQLITE_OK) {
				while (sqlite3_step(s) == SQLITE_ROW) {
					const char *h = (const char *)sqlite3_column_text(s, 0);
					if (h && *h)
						jf_runner_signal(f->be, h, JF_RUN_KILL);
				}
				sqlite3_finalize(s);
			}
			sqlite3_close(db);
		}
		int64_t end = jft_mono_ms() + 5000;
		for (;;) {
			int n = 0;
			if (jf_attempt_list_open(jf_engine_store(f->e), count_open, &n) != JF_OK ||
			    n == 0 || jft_mono_ms() >= end)
				break;
			turn(f, 50);
		}
		jf_engine_free(f->e);
	}
	jft_rmtree(f->dir);
	free(f);
	return 0;
}

/* ---- helpers ---- */

static int64_t submit(struct fix *f, const char *dirname, const char *spec)
{
	struct jf_error err = { 0 };
	int64_t g = 0;
	assert_int_equal(jf_engine_mkgroup(f->e, f->queue, JF_KIND_GROUP, dirname, getuid(),
					   getgid(), &g, &err),
			 JF_OK);
	if (jf_engine_submit(f->e, g, spec, strlen(spec), getuid(), getgid(), &err) != JF_OK)
		fail_msg("submit: %s", err.msg);
	return g;
}

/* The whole events text of a scope (caller frees). */
static char *events(struct fix *f, enum jf_scope sc, int64_t id)
{
	struct jf_store *st = jf_engine_store(f->e);
	int64_t size = 0;
	assert_int_equal(jf_event_size(st, sc, id, &size), JF_OK);
	char *buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	size_t got = 0;
	assert_int_equal(jf_event_read(st, sc, id, 0, buf, (size_t)size, &got), JF_OK);
	assert_int_equal(got, (size_t)size);
	buf[got] = '\0';
	return buf;
}

static int64_t sql_count(struct fix *f, const char *sql, int64_t arg)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_int64(s, 1, arg);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

struct ledger_count {
	int64_t group_id;
	int n;
	int64_t attempt_ids[16];
};

static int count_ledger(void *ctx, const struct jf_ledger_rec *r)
{
	struct ledger_count *c = ctx;
	if (r->group_id == c->group_id) {
		assert_true(r->end_ms >= r->start_ms);
		if (c->n < 16)
			c->attempt_ids[c->n] = r->attempt_id;
		c->n++;
	}
	return 0;
}

static int closed_ledger_rows(struct fix *f, int64_t g)
{
	struct ledger_count c = { .group_id = g };
	assert_int_equal(jf_ledger_list(jf_engine_store(f->e), 0, 1000, count_ledger, &c), JF_OK);
	return c.n;
}

/* ---- tests ---- */

static void test_group_succeeds(void **state)
{
	struct fix *f = *state;
	uint64_t parses = jf_spec_parse_count();
	int64_t g = submit(f, "ok3",
			   "completions: 3\n"
			   "command: [\"/bin/sh\", \"-c\", \"exit 0\"]\n");
	assert_true(run_until(f, settled, g, 15000, NULL, NULL));
	assert_int_equal(group_state(f, g), JF_ST_SUCCEEDED);
	/* the spec was parsed once, at the submission: the engine kept that parse */
	assert_int_equal(jf_spec_parse_count() - parses, 1);
	for (int64_t i = 0; i < 3; i++)
		assert_int_equal(task_state(f, g, i), JF_ST_SUCCEEDED);
	assert_int_equal(closed_ledger_rows(f, g), 3);
	assert_int_equal(sql_count(f, "SELECT count(*) FROM ledger WHERE group_id = ?1", g), 3);
	assert_int_equal(sql_count(f, "SELECT count(*) FROM ledger WHERE end_ms = 0", 0), 0);
	struct jf_group_rec r;
	assert_int_equal(jf_group_get(jf_engine_store(f->e), g, &r), JF_OK);
	assert_true(r.started_ms > 0);
	assert_true(r.finished_ms >= r.started_ms);
	jf_group_release(&r);
	/* every node ran once, exit code 0 */
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(jf_engine_store(f->e), g, 2, &t), JF_OK);
	struct jf_node_rec n;
	assert_int_equal(jf_node_find(jf_engine_store(f->e), t.id, 0, &n), JF_OK);
	assert_int_equal(n.state, JF_ST_SUCCEEDED);
	assert_int_equal(n.exit_code, 0);
	assert_int_equal(n.attempt, 1);
	assert_true(n.machine[0] != '\0');
	jf_node_release(&n);
	jf_task_release(&t);
	char *ev = events(f, JF_SCOPE_GROUP, g);
	assert_non_null(strstr(ev, " Accepted "));
	assert_non_null(strstr(ev, " Started "));
	assert_non_null(strstr(ev, " Completed "));
	free(ev);
	assert_true(f->changes > 0);
	/* the machines are free again */
	for (size_t m = 0; m < jf_engine_cluster(f->e)->nmachines; m++) {
		struct jf_machine_use u;
		jf_engine_machine_use(f->e, m, &u);
		assert_int_equal(u.gpu_mask, 0);
		assert_int_equal(u.cpu_milli, 0);
		assert_int_equal(u.nodes, 0);
	}
}

static bool exists_at(const char *dir, const char *name)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return jft_exists(p);
}

/* The run directory of task idx's node 0, attempt 1. */
static void run_dir_of(struct fix *f, int64_t g, int64_t idx, char *buf, size_t n)
{
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(jf_engine_store(f->e), g, idx, &t), JF_OK);
	struct jf_node_rec nr;
	assert_int_equal(jf_node_find(jf_engine_store(f->e), t.id, 0, &nr), JF_OK);
	snprintf(buf, n, "%s/runs/%lld/1", f->dir, (long long)nr.id);
	jf_node_release(&nr);
	jf_task_release(&t);
}

/*
 * The state directory does not only grow: an ended attempt keeps only its
 * output (its records go, a trivial task leaves no directory), a finished
 * task's empty checkpoint directory goes, the daemon's keep_logs removes a
 * finished group's run directories once the injected clock passes it (a
 * LogsRemoved event), a queue's keep_logs: forever overrides it, and
 * rmdir frees what is left while the ledger rows stay.
 */
static void test_state_dir_freed(void **state)
{
	struct fix *f = *state;
	f->e->keep_logs_ms = 3600 * 1000;
	int64_t quiet = submit(f, "quiet", "completions: 2\ncommand: [\"true\"]\n");
	int64_t loud =
		submit(f, "loud", "command: [\"/bin/sh\", \"-c\", \"echo hi; echo x > out\"]\n");
	struct jf_error err = { 0 };
	int64_t q2 = 0, kept = 0;
	assert_int_equal(jf_engine_mkqueue(f->e, "kept", getuid(), getgid(), &q2, &err), JF_OK);
	const char *qs = "keep_logs: forever\n";
	assert_int_equal(jf_engine_queue_spec(f->e, q2, qs, strlen(qs), &err), JF_OK);
	assert_int_equal(
		jf_engine_mkgroup(f->e, q2, JF_KIND_GROUP, "k", getuid(), getgid(), &kept, &err),
		JF_OK);
	const char *ks = "command: [\"/bin/sh\", \"-c\", \"echo kept\"]\n";
	assert_int_equal(jf_engine_submit(f->e, kept, ks, strlen(ks), getuid(), getgid(), &err),
			 JF_OK);
	assert_true(run_until(f, settled, quiet, 15000, NULL, NULL));
	assert_true(run_until(f, settled, loud, 15000, NULL, NULL));
	assert_true(run_until(f, settled, kept, 15000, NULL, NULL));
	turn(f, 0); /* the tick carries out the trash */
	char dq[1024], dl[1024], dk[1024], ck[1024];
	run_dir_of(f, quiet, 0, dq, sizeof(dq));
	run_dir_of(f, loud, 0, dl, sizeof(dl));
	run_dir_of(f, kept, 0, dk, sizeof(dk));
	assert_false(jft_exists(dq));
	assert_true(exists_at(dl, "stdout"));
	assert_true(exists_at(dl, "logs"));
	assert_true(exists_at(dl, "work/out"));
	assert_false(exists_at(dl, "result"));
	assert_false(exists_at(dl, "launch.json"));
	assert_false(exists_at(dl, "stderr")); /* empty */
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(jf_engine_store(f->e), loud, 0, &t), JF_OK);
	snprintf(ck, sizeof(ck), "%s/ckpt/%lld", f->dir, (long long)t.id);
	jf_task_release(&t);
	assert_false(jft_exists(ck));
	assert_int_equal(sql_count(f, "SELECT count(*) FROM trash", 0), 0);

	/* an hour and a minute later: the daemon's keep_logs passed */
	char *ev = events(f, JF_SCOPE_GROUP, loud);
	assert_null(strstr(ev, "LogsRemoved"));
	free(ev);
	f->offset_ms += 3660 * 1000;
	turn(f, 0);
	assert_false(jft_exists(dl));
	assert_true(exists_at(dk, "stdout")); /* its queue keeps logs forever */
	ev = events(f, JF_SCOPE_GROUP, loud);
	assert_non_null(strstr(ev, " Normal LogsRemoved "));
	assert_non_null(strstr(ev, "kept 1h after the group ended"));
	free(ev);
	assert_true(sql_count(f, "SELECT logs_freed_ms FROM groups WHERE id = ?1", loud) > 0);
	assert_int_equal(group_state(f, loud), JF_ST_SUCCEEDED);

	/* rmdir: the kept group's directory goes too, its ledger rows stay */
	int rows = closed_ledger_rows(f, kept);
	assert_int_equal(jf_engine_rmgroup(f->e, kept, &err), JF_OK);
	turn(f, 0);
	assert_false(jft_exists(dk));
	assert_int_equal(closed_ledger_rows(f, kept), rows);
	assert_int_equal(sql_count(f, "SELECT count(*) FROM trash", 0), 0);
}

static bool all_settled(struct fix *f, int64_t n)
{
	for (int64_t g = 1; g <= n; g++)
		if (!jf_state_final(group_state(f, f->first + g - 1)))
			return false;
	return true;
}

/*
 * Finished groups leave the engine's cache of parsed specs but the last
 * 64: after 100 groups ran, it holds at most that many, and a finished
 * group's spec is still there on demand (parsed again).
 */
static void test_group_cache_trim(void **state)
{
	struct fix *f = *state;
	enum { N = 100 };
	char name[32];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		int64_t g = submit(f, name, "command: [\"/bin/sh\", \"-c\", \"exit 0\"]\n");
		if (i == 0)
			f->first = g;
	}
	assert_true(run_until(f, all_settled, N, 30000, NULL, NULL));
	for (int64_t g = f->first; g < f->first + N; g++)
		assert_int_equal(group_state(f, g), JF_ST_SUCCEEDED);
	turn(f, 10); /* an entry point's end: the cache trims */
	assert_true(jf_engine_cached_groups(f->e) <= 64);
	const struct jf_spec *s = jf_engine_spec(f->e, f->first);
	assert_non_null(s);
	assert_int_equal(s->completions, 1);
	turn(f, 10);
	assert_true(jf_engine_cached_groups(f->e) <= 64);
}

static void test_retry_then_fail(void **state)
{
	struct fix *f = *state;
	int64_t g = submit(f, "fails",
			   "retries: 1\n"
			   "command: [\"/bin/sh\", \"-c\", \"exit 1\"]\n");
	assert_true(run_until(f, settled, g, 15000, NULL, NULL));
	assert_int_equal(group_state(f, g), JF_ST_FAILED);
	struct jf_store *st = jf_engine_store(f->e);
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(st, g, 0, &t), JF_OK);
	assert_int_equal(t.state, JF_ST_FAILED);
	assert_int_equal(t.attempt, 2);
	struct jf_node_rec n;
	assert_int_equal(jf_node_find(st, t.id, 0, &n), JF_OK);
	assert_int_equal(n.attempt, 2);
	assert_int_equal(n.exit_code, 1);
	struct jf_attempt_rec a;
	for (int64_t i = 1; i <= 2; i++) {
		assert_int_equal(jf_attempt_find(st, n.id, i, &a), JF_OK);
		assert_int_equal(a.exit_code, 1);
		assert_true(a.end_ms > 0);
		/* each keeps how it ended (attempts/<a>/status) and when it was made */
		assert_int_equal(a.end_state, JF_ST_FAILED);
		assert_string_equal(a.end_reason, "Error");
		assert_string_equal(a.runtime, "host");
		assert_true(a.created_ms > 0 && a.created_ms <= a.start_ms);
		jf_attempt_release(&a);
	}
	assert_int_equal(jf_attempt_find(st, n.id, 3, &a), JF_ENOENT);
	jf_node_release(&n);
	jf_task_release(&t);
	assert_int_equal(closed_ledger_rows(f, g), 2);
	char *ev = events(f, JF_SCOPE_GROUP, g);
	assert_non_null(strstr(ev, " Warning BackOff "));
	assert_non_null(strstr(ev, " Warning Failed "));
	free(ev);
	/* a plain exit: the messages say the code, nothing more */
	assert_int_equal(jf_task_find(st, g, 0, &t), JF_OK);
	assert_string_equal(t.message, "RetriesExhausted: attempt 2 failed with exit code 1");
	jf_task_release(&t);
	struct jf_group_rec gr;
	assert_int_equal(jf_group_get(st, g, &gr), JF_OK);
	assert_string_equal(gr.message, "FailedIndexes: 1 of 1 tasks failed; task 0: exit code 1");
	jf_group_release(&gr);
}

/* A command that cannot start: its words reach the task's and the group's
 * message, cut short when long ("..."), the prefixes as they were. */
static void test_start_failure_words(void **state)
{
	struct fix *f = *state;
	char name[200], spec[400], want[300];
	memset(name, 'x', sizeof(name));
	memcpy(name, "jobfs-no-such-", 14);
	name[sizeof(name) - 1] = '\0';
	snprintf(spec, sizeof(spec), "completions: 2\nretries: 0\ncommand: [\"%s\"]\n", name);
	int64_t g = submit(f, "nosuch", spec);
	assert_true(run_until(f, settled, g, 15000, NULL, NULL));
	assert_int_equal(group_state(f, g), JF_ST_FAILED);
	struct jf_store *st = jf_engine_store(f->e);
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(st, g, 1, &t), JF_OK);
	assert_int_equal(t.state, JF_ST_FAILED);
	/* 127 bytes of words at most: "exec " and the name, cut, and "..." */
	int keep = 127 - 3 - 5;
	snprintf(want, sizeof(want),
		 "RetriesExhausted: attempt 1 failed with exit code 127: exec %.*s...", keep, name);
	assert_string_equal(t.message, want);
	jf_task_release(&t);
	struct jf_group_rec gr;
	assert_int_equal(jf_group_get(st, g, &gr), JF_OK);
	snprintf(want, sizeof(want),
		 "FailedIndexes: 2 of 2 tasks failed; task 0: exec %.*s... (exit 127)", keep, name);
	assert_string_equal(gr.message, want);
	jf_group_release(&gr);
	char *ev = events(f, JF_SCOPE_GROUP, g);
	assert_non_null(strstr(ev, "failed with exit code 127: exec jobfs-no-such-x"));
	free(ev);
}

struct par {
	int64_t max_seen;
	int turns;
};

static void check_parallelism(struct fix *f, int64_t g, void *ctx)
{
	struct par *p = ctx;
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(jf_engine_store(f->e), g, c), JF_OK);
	int64_t live = c[JF_ST_INITIALIZING] + c[JF_ST_RUNNING];
	if (live > 2)
		fail_msg("%lld tasks running or initializing, parallelism is 2", (long long)live);
	if (live > p->max_seen)
		p->max_seen = live;
	p->turns++;
}

/* The view (engine.h): what other threads read of the engine's memory is
 * a copy made when a step committed, and the step hooks go round each
 * outermost step of an entry point, once. */
struct hooks {
	int leaves, enters;
	unsigned held;
};

static unsigned hook_leave(void *ctx)
{
	struct hooks *h = ctx;
	assert_int_equal(h->leaves, h->enters); /* never nested */
	h->leaves++;
	return 7;
}

static void hook_enter(void *ctx, unsigned held)
{
	struct hooks *h = ctx;
	h->enters++;
	h->held = held;
	assert_int_equal(h->leaves, h->enters);
}

/* The machine the view says runs a node, or -1. */
static int view_machine(struct fix *f)
{
	for (size_t m = 0; m < jf_engine_cluster(f->e)->nmachines; m++) {
		struct jf_view_machine vm;
		jf_engine_view_use(f->e, m, &vm);
		if (vm.u.nodes == 1)
			return (int)m;
	}
	return -1;
}

static bool node_running(struct fix *f, int64_t g)
{
	(void)g;
	return view_machine(f) >= 0;
}

static void test_view(void **state)
{
	struct fix *f = *state;
	struct hooks h = { 0 };
	jf_engine_share_view(f->e);
	jf_engine_set_step_hooks(f->e, hook_leave, hook_enter, &h);
	struct jf_view_machine vm;
	jf_engine_view_use(f->e, 0, &vm);
	assert_int_equal(vm.u.nodes, 0);
	assert_int_equal(vm.u.cpu_milli, 0);
	char trouble[64] = "x";
	assert_false(jf_engine_view_trouble(f->e, trouble, sizeof(trouble)));
	assert_string_equal(trouble, "");
	/* past the end: zeros, not a read out of bounds */
	jf_engine_view_use(f->e, 1000000, &vm);
	assert_int_equal(vm.u.nodes, 0);
	assert_null(vm.u.state);

	int64_t g = submit(f, "viewed",
			   "completions: 1\n"
			   "resources: {requests: {cpu: \"1500m\"}}\n"
			   "command: [\"/bin/sh\", \"-c\", \"sleep 0.5\"]\n");
	/* two entry points (mkgroup, submit), each one step: paired, and the
	 * value leave gave is what enter gets */
	assert_true(h.leaves >= 2);
	assert_int_equal(h.leaves, h.enters);
	assert_int_equal(h.held, 7);
	assert_true(run_until(f, node_running, g, 10000, NULL, NULL));
	/* the copy agrees with the engine's own figures */
	int m = view_machine(f);
	struct jf_machine_use live;
	jf_engine_machine_use(f->e, (size_t)m, &live);
	jf_engine_view_use(f->e, (size_t)m, &vm);
	assert_int_equal(vm.u.cpu_milli, live.cpu_milli);
	assert_true(vm.u.cpu_milli > 0);
	assert_int_equal(vm.u.mem_bytes, live.mem_bytes);
	assert_true(run_until(f, settled, g, 10000, NULL, NULL));
	jf_engine_view_use(f->e, (size_t)m, &vm);
	assert_int_equal(vm.u.nodes, 0);
	assert_int_equal(vm.u.cpu_milli, 0);
	assert_int_equal(h.leaves, h.enters);
	jf_engine_set_step_hooks(f->e, NULL, NULL, NULL);
}

static void test_parallelism(void **state)
{
	struct fix *f = *state;
	int64_t g = submit(f, "par",
			   "completions: 6\n"
			   "parallelism: 2\n"
			   "command: [\"/bin/sh\", \"-c\", \"sleep 0.3\"]\n");
	struct par p = { 0, 0 };
	assert_true(run_until(f, settled, g, 15000, check_parallelism, &p));
	assert_int_equal(group_state(f, g), JF_ST_SUCCEEDED);
	assert_int_equal(p.max_seen, 2);
	assert_true(p.turns > 3);
	assert_int_equal(closed_ledger_rows(f, g), 6);
}

static void test_timeout(void **state)
{
	struct fix *f = *state;
	int64_t g = submit(f, "slow",
			   "timeout: 5s\n"
			   "retries: 0\n"
			   "command: [\"/bin/sh\", \"-c\", \"sleep 100\"]\n");
	assert_true(run_until(f, task0_running, g, 10000, NULL, NULL));
	/* not yet */
	jf_engine_tick(f->e);
	assert_int_equal(task_state(f, g, 0), JF_ST_RUNNING);
	f->offset_ms += 6000;
	jf_engine_tick(f->e);
	assert_true(run_until(f, settled, g, 5000, NULL, NULL));
	assert_int_equal(task_state(f, g, 0), JF_ST_FAILED);
	assert_int_equal(group_state(f, g), JF_ST_FAILED);
	char *ev = events(f, JF_SCOPE_GROUP, g);
	assert_non_null(strstr(ev, " Warning DeadlineExceeded "));
	free(ev);
	assert_int_equal(closed_ledger_rows(f, g), 1);
}

static void test_stop(void **state)
{
	struct fix *f = *state;
	int64_t g = submit(f, "tostop",
			   "completions: 3\n"
			   "parallelism: 2\n"
			   "command: [\"/bin/sh\", \"-c\", \"sleep 100\"]\n");
	assert_true(run_until(f, task0_running, g, 10000, NULL, NULL));
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "stop", &err), JF_OK);
	assert_true(run_until(f, settled, g, 5000, NULL, NULL));
	assert_int_equal(group_state(f, g), JF_ST_STOPPED);
	for (int64_t i = 0; i < 3; i++)
		assert_int_equal(task_state(f, g, i), JF_ST_STOPPED);
	/* the attempts that ran are billed, and closed; each says it was stopped */
	assert_true(closed_ledger_rows(f, g) >= 1);
	assert_int_equal(
		sql_count(f,
			  "SELECT count(*) FROM attempts a JOIN nodes n ON a.node_id = n.id "
			  "JOIN tasks t ON n.task_id = t.id WHERE t.group_id = ?1 "
			  "AND (a.end_state != 7 OR a.end_reason != '')",
			  g),
		0);
	assert_true(sql_count(f,
			      "SELECT count(*) FROM attempts a JOIN nodes n ON a.node_id = n.id "
			      "JOIN tasks t ON n.task_id = t.id WHERE t.group_id = ?1",
			      g) >= 1);
	assert_int_equal(sql_count(f, "SELECT count(*) FROM ledger WHERE end_ms = 0", 0), 0);
	/* stop again: it does not apply any more */
	memset(&err, 0, sizeof(err));
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "stop", &err), JF_EBUSY);
	assert_non_null(strstr(err.msg, "Stopped"));
}

static bool second_attempt_running(struct fix *f, int64_t g)
{
	return sql_count(f,
			 "SELECT count(*) FROM nodes n JOIN tasks t ON t.id = n.task_id "
			 "WHERE t.group_id = ?1 AND n.attempt = 2 AND n.state = 4",
			 g) == 1;
}

/* A restart ends the running attempt and begins a new one: the node
 * waits again, but the attempt it ran is kept as stopped (reference 9.2),
 * beside the new one. */
static void test_restart_keeps_attempt(void **state)
{
	struct fix *f = *state;
	int64_t g = submit(f, "again", "command: [\"/bin/sh\", \"-c\", \"sleep 100\"]\n");
	assert_true(run_until(f, task0_running, g, 10000, NULL, NULL));
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "restart", &err), JF_OK);
	assert_true(run_until(f, second_attempt_running, g, 10000, NULL, NULL));
	struct jf_store *st = jf_engine_store(f->e);
	struct jf_task_rec t;
	struct jf_node_rec n;
	struct jf_attempt_rec a;
	assert_int_equal(jf_task_find(st, g, 0, &t), JF_OK);
	assert_int_equal(jf_node_find(st, t.id, 0, &n), JF_OK);
	assert_int_equal(jf_attempt_find(st, n.id, 1, &a), JF_OK);
	assert_true(a.end_ms > 0);
	assert_int_equal(a.end_state, JF_ST_STOPPED);
	assert_string_equal(a.end_reason, "");
	jf_attempt_release(&a);
	assert_int_equal(jf_attempt_find(st, n.id, 2, &a), JF_OK);
	assert_int_equal(a.end_ms, 0);
	assert_int_equal(a.end_state, -1);
	assert_int_equal(n.attempt_id, a.id);
	jf_attempt_release(&a);
	jf_node_release(&n);
	jf_task_release(&t);
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "stop", &err), JF_OK);
	assert_true(run_until(f, settled, g, 5000, NULL, NULL));
}

static void test_resume_running(void **state)
{
	struct fix *f = *state;
	int64_t g = submit(f, "busy", "command: [\"/bin/sh\", \"-c\", \"sleep 100\"]\n");
	assert_true(run_until(f, task0_running, g, 10000, NULL, NULL));
	assert_int_equal(group_state(f, g), JF_ST_RUNNING);
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "resume", &err), JF_EBUSY);
	assert_int_equal(err.code, JF_EBUSY);
	assert_non_null(strstr(err.msg, "resume"));
	assert_non_null(strstr(err.msg, "Running"));
	/* nothing changed */
	assert_int_equal(group_state(f, g), JF_ST_RUNNING);
	assert_int_equal(task_state(f, g, 0), JF_ST_RUNNING);
	/* an unknown verb */
	memset(&err, 0, sizeof(err));
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "explode", &err), JF_EINVAL);
	assert_true(err.msg[0] != '\0');
	/* finish it off */
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "stop", &err), JF_OK);
	assert_true(run_until(f, settled, g, 5000, NULL, NULL));
}

static void test_refused_spec(void **state)
{
	struct fix *f = *state;
	struct jf_error err = { 0 };
	int64_t g = 0;
	assert_int_equal(jf_engine_mkgroup(f->e, f->queue, JF_KIND_GROUP, "bad", getuid(), getgid(),
					   &g, &err),
			 JF_OK);
	static const char bad[] = "completions: 2\nfrobnicate: yes\n";
	assert_int_equal(jf_engine_submit(f->e, g, bad, strlen(bad), getuid(), getgid(), &err),
			 JF_EINVAL);
	assert_non_null(strstr(err.msg, "frobnicate"));
	struct jf_group_rec r;
	assert_int_equal(jf_group_get(jf_engine_store(f->e), g, &r), JF_OK);
	assert_int_equal(r.state, JF_ST_INVALID);
	assert_string_equal(r.message, err.msg);
	assert_string_equal(r.draft, bad);
	assert_null(r.spec);
	jf_group_release(&r);
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(jf_engine_store(f->e), g, 0, &t), JF_ENOENT);
	char *ev = events(f, JF_SCOPE_GROUP, g);
	assert_non_null(strstr(ev, " Warning Invalid "));
	free(ev);

	/* a model the cluster lacks is refused too, with the reason */
	memset(&err, 0, sizeof(err));
	static const char nogpu[] = "gpu: V100\ncommand: [\"/bin/true\"]\n";
	assert_int_equal(jf_engine_submit(f->e, g, nogpu, strlen(nogpu), getuid(), getgid(), &err),
			 JF_EINVAL);
	assert_non_null(strstr(err.msg, "V100"));
	assert_int_equal(jf_group_get(jf_engine_store(f->e), g, &r), JF_OK);
	assert_int_equal(r.state, JF_ST_INVALID);
	assert_string_equal(r.message, err.msg);
	jf_group_release(&r);

	/* the draft can be written again, and then it runs */
	static const char good[] = "command: [\"/bin/sh\", \"-c\", \"exit 0\"]\n";
	assert_int_equal(jf_engine_submit(f->e, g, good, strlen(good), getuid(), getgid(), &err),
			 JF_OK);
	assert_true(run_until(f, settled, g, 10000, NULL, NULL));
	assert_int_equal(group_state(f, g), JF_ST_SUCCEEDED);
	/* and now the spec is read-only */
	assert_int_equal(jf_engine_submit(f->e, g, good, strlen(good), getuid(), getgid(), &err),
			 JF_EROFS);
}

static void test_restart_adopts(void **state)
{
	struct fix *f = *state;
	int64_t g = submit(f, "survivor", "command: [\"/bin/sh\", \"-c\", \"sleep 2; exit 0\"]\n");
	assert_true(run_until(f, task0_running, g, 10000, NULL, NULL));
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(jf_engine_store(f->e), g, 0, &t), JF_OK);
	struct jf_node_rec n;
	assert_int_equal(jf_node_find(jf_engine_store(f->e), t.id, 0, &n), JF_OK);
	int64_t attempt_id = n.attempt_id;
	pid_t pid = (pid_t)n.pid;
	assert_true(attempt_id > 0);
	assert_true(pid > 0);
	jf_node_release(&n);
	jf_task_release(&t);
	assert_int_equal(sql_count(f,
				   "SELECT count(*) FROM ledger WHERE attempt_id = ?1 AND "
				   "end_ms = 0",
				   attempt_id),
			 1);

	/* the daemon goes away; the process does not */
	jf_engine_free(f->e);
	f->e = NULL;
	f->be = NULL;
	assert_int_equal(kill(pid, 0), 0);
	engine_start(f);

	assert_true(run_until(f, settled, g, 10000, NULL, NULL));
	assert_int_equal(group_state(f, g), JF_ST_SUCCEEDED);
	assert_int_equal(task_state(f, g, 0), JF_ST_SUCCEEDED);
	/* one attempt, one ledger row, closed */
	assert_int_equal(
		sql_count(f, "SELECT count(*) FROM ledger WHERE attempt_id = ?1", attempt_id), 1);
	assert_int_equal(sql_count(f, "SELECT count(*) FROM ledger WHERE group_id = ?1", g), 1);
	assert_int_equal(sql_count(f,
				   "SELECT count(*) FROM ledger WHERE attempt_id = ?1 AND "
				   "end_ms != 0 AND seconds >= 1",
				   attempt_id),
			 1);
	assert_int_equal(closed_ledger_rows(f, g), 1);
	assert_int_equal(sql_count(f,
				   "SELECT count(*) FROM attempts WHERE id = ?1 AND "
				   "exit_code = 0",
				   attempt_id),
			 1);
	assert_int_equal(sql_count(f,
				   "SELECT count(*) FROM attempts a JOIN nodes n ON "
				   "n.id = a.node_id JOIN tasks t ON t.id = n.task_id WHERE "
				   "t.group_id = ?1",
				   g),
			 1);
}

/*
 * A spec stored by an earlier version that this one refuses (written here
 * straight into the store: parallelism 2,000,000, over today's limit of
 * 1,000,000) while its group runs: after a restart the group is not lost
 * but ended Failed, its message naming the key and the limit; its waiting
 * tasks are Stopped, its running node is stopped and its end and bill
 * recorded; nothing crashes and other groups go on.
 */
static void test_spec_over_limit_after_restart(void **state)
{
	struct fix *f = *state;
	int64_t g = submit(f, "old",
			   "completions: 3\nparallelism: 1\n"
			   "command: [\"/bin/sh\", \"-c\", \"sleep 30\"]\n");
	assert_true(run_until(f, task0_running, g, 10000, NULL, NULL));
	jf_engine_free(f->e);
	f->e = NULL;
	f->be = NULL;
	sqlite3 *db;
	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	char sql[256];
	snprintf(sql, sizeof(sql),
		 "UPDATE groups SET spec = 'completions: 3\nparallelism: 2000000\n"
		 "command: [\"/bin/sh\", \"-c\", \"sleep 30\"]\n' WHERE id = %lld",
		 (long long)g);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	engine_start(f);
	assert_int_equal(group_state(f, g), JF_ST_FAILED);
	struct jf_group_rec r;
	assert_int_equal(jf_group_get(jf_engine_store(f->e), g, &r), JF_OK);
	assert_non_null(strstr(r.message, "parallelism"));
	assert_non_null(strstr(r.message, "1000000"));
	assert_non_null(strstr(r.message, "earlier version"));
	jf_group_release(&r);
	char *ev = events(f, JF_SCOPE_GROUP, g);
	assert_non_null(strstr(ev, "Warning Invalid"));
	free(ev);
	for (int64_t i = 0; i < 3; i++)
		assert_int_equal(task_state(f, g, i), JF_ST_STOPPED);
	assert_null(jf_engine_spec(f->e, g));
	/* the node that ran is stopped and reaped, its segment closed */
	assert_true(run_until(f, settled, g, 10000, NULL, NULL));
	assert_int_equal(sql_count(f,
				   "SELECT count(*) FROM ledger WHERE group_id = ?1 AND "
				   "end_ms = 0",
				   g),
			 0);
	assert_int_equal(sql_count(f, "SELECT count(*) FROM ledger WHERE group_id = ?1", g), 1);
	/* and the engine goes on */
	int64_t g2 = submit(f, "new", "command: [\"/bin/sh\", \"-c\", \"exit 0\"]\n");
	assert_true(run_until(f, settled, g2, 10000, NULL, NULL));
	assert_int_equal(group_state(f, g2), JF_ST_SUCCEEDED);
}

/* The queue's group_timeout stops a group that never started a task, with
 * the injected clock; the group holding the queue keeps running. */
static void test_group_timeout(void **state)
{
	struct fix *f = *state;
	struct jf_error err = { 0 };
	const char *q = "capacity: 1\ngroup_timeout: 60s\n";
	assert_int_equal(jf_engine_queue_spec(f->e, f->queue, q, strlen(q), &err), JF_OK);
	int64_t a = submit(f, "holder", "command: [\"/bin/sh\", \"-c\", \"sleep 100\"]\n");
	assert_true(run_until(f, task0_running, a, 10000, NULL, NULL));
	int64_t b = submit(f, "starved", "command: [\"/bin/sh\", \"-c\", \"exit 0\"]\n");
	jf_engine_tick(f->e);
	assert_int_equal(group_state(f, b), JF_ST_WAITING);
	f->offset_ms += 61000;
	jf_engine_tick(f->e);
	assert_int_equal(group_state(f, b), JF_ST_STOPPED);
	char *ev = events(f, JF_SCOPE_GROUP, b);
	assert_non_null(strstr(ev, " GroupTimeout "));
	free(ev);
	/* the holder started at once: no timeout for it, whatever the clock says */
	assert_int_equal(group_state(f, a), JF_ST_RUNNING);
	assert_int_equal(jf_engine_ctl(f->e, a, 0, "stop", &err), JF_OK);
	assert_true(run_until(f, settled, a, 10000, NULL, NULL));
	assert_int_equal(group_state(f, a), JF_ST_STOPPED);
}

/* Kubernetes activeDeadlineSeconds fails the whole group, with the
 * injected clock. */
static void test_active_deadline(void **state)
{
	struct fix *f = *state;
	int64_t g = submit(f, "deadline",
			   "apiVersion: batch/v1\n"
			   "kind: Job\n"
			   "metadata: {name: deadline}\n"
			   "spec:\n"
			   "  activeDeadlineSeconds: 30\n"
			   "  template:\n"
			   "    spec:\n"
			   "      restartPolicy: Never\n"
			   "      containers:\n"
			   "      - name: main\n"
			   "        command: [\"/bin/sh\", \"-c\", \"sleep 100\"]\n");
	assert_true(run_until(f, task0_running, g, 10000, NULL, NULL));
	/* the deadline counts from the submission: to 1 s before it, however
	 * long the real start took */
	struct jf_group_rec rec;
	assert_int_equal(jf_group_get(jf_engine_store(f->e), g, &rec), JF_OK);
	int64_t submitted = rec.submitted_ms;
	jf_group_release(&rec);
	assert_true(submitted > 0 && test_now(f) - submitted < 29000);
	f->offset_ms += submitted + 29000 - test_now(f);
	jf_engine_tick(f->e);
	assert_int_equal(group_state(f, g), JF_ST_RUNNING);
	f->offset_ms += 2000;
	jf_engine_tick(f->e);
	assert_int_equal(group_state(f, g), JF_ST_FAILED);
	assert_true(run_until(f, settled, g, 10000, NULL, NULL));
	char *ev = events(f, JF_SCOPE_GROUP, g);
	assert_non_null(strstr(ev, " DeadlineExceeded "));
	free(ev);
	assert_int_equal(open_attempts(f), 0);
}

/* unit_runtime places spot GPU work; anywhere else it is refused, never
 * ignored.  A key that cannot be honoured yet is refused too. */
static void test_unit_runtime_refused(void **state)
{
	struct fix *f = *state;
	struct jf_error err = { 0 };
	static const struct {
		const char *spec, *why;
	} bad[] = {
		{ "billing: spot\nunit_runtime: 30m\ncommand: [\"true\"]\n", "needs 'gpu'" },
		{ "gpu: A800\nunit_runtime: 30m\ncommand: [\"true\"]\n", "only spot tasks" },
	};
	for (size_t i = 0; i < 2; i++) {
		int64_t g = 0;
		char name[16];
		snprintf(name, sizeof(name), "bad%zu", i);
		assert_int_equal(jf_engine_mkgroup(f->e, f->queue, JF_KIND_GROUP, name, getuid(),
						   getgid(), &g, &err),
				 JF_OK);
		assert_int_equal(jf_engine_submit(f->e, g, bad[i].spec, strlen(bad[i].spec),
						  getuid(), getgid(), &err),
				 JF_EINVAL);
		assert_non_null(strstr(err.msg, "unit_runtime"));
		assert_non_null(strstr(err.msg, bad[i].why));
		assert_int_equal(group_state(f, g), JF_ST_INVALID);
	}
	int64_t ok = submit(f, "good",
			    "billing: spot\ngpu: A800\nunit_runtime: 10m\n"
			    "command: [\"true\"]\n");
	assert_true(run_until(f, settled, ok, 10000, NULL, NULL));
	assert_int_equal(group_state(f, ok), JF_ST_SUCCEEDED);
	const char *q = "partition: gpu\n";
	assert_int_equal(jf_engine_queue_spec(f->e, f->queue, q, strlen(q), &err), JF_ENOTSUP);
	assert_non_null(strstr(err.msg, "partition"));
}

static bool all_running(struct fix *f, int64_t g)
{
	struct jf_group_rec r;
	assert_int_equal(jf_group_get(jf_engine_store(f->e), g, &r), JF_OK);
	jf_group_release(&r);
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(jf_engine_store(f->e), g, c), JF_OK);
	return c[JF_ST_RUNNING] == 8;
}

static bool succeeded(struct fix *f, int64_t g)
{
	return group_state(f, g) == JF_ST_SUCCEEDED;
}

/* How many times needle is in hay. */
static int occurrences(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* The engine again, with a preempt_grace of secs. */
static void restart_with_grace(struct fix *f, int64_t secs)
{
	jf_engine_free(f->e);
	f->grace_s = secs;
	engine_start(f);
}

/* The A800 machine (8 GPUs) full of 1-GPU spot tasks; an on-demand task of
 * 4 GPUs preempts exactly 4 of them: SIGTERM (the task sees it), billed to
 * its end, node Preempted, task waiting again with no retry used; then the
 * on-demand task runs and every spot task ends Succeeded. */
static void test_preempt_spot(void **state)
{
	struct fix *f = *state;
	restart_with_grace(f, 2);
	int64_t spot = submit(f, "spot",
			      "billing: spot\ngpu: A800\ncompletions: 8\nretries: 0\n"
			      "command: [\"/bin/sh\", \"-c\", \"trap 'echo term >> "
			      "$JOB_CHECKPOINT_DIR/t; exit 143' TERM; "
			      "if [ -e $JOB_CHECKPOINT_DIR/t ]; then exit 0; fi; "
			      "sleep 5 & wait\"]\n");
	assert_true(run_until(f, all_running, spot, 10000, NULL, NULL));
	int64_t od = submit(f, "od",
			    "gpu: A800\ngpus: 4\ncommand: [\"/bin/sh\", \"-c\", "
			    "\"exit 0\"]\n");
	assert_true(run_until(f, succeeded, od, 10000, NULL, NULL));
	/* the victims trapped SIGTERM and exited themselves (143, their own
	 * code), none was killed at the end of the grace (137) */
	assert_int_equal(
		sql_count(f,
			  "SELECT count(*) FROM attempts a JOIN nodes n ON a.node_id = n.id "
			  "JOIN tasks t ON n.task_id = t.id WHERE t.group_id = ?1 "
			  "AND a.attempt = 1 AND a.exit_code = 143",
			  spot),
		4);
	assert_int_equal(sql_count(f,
				   "SELECT count(*) FROM nodes n JOIN tasks t ON "
				   "t.id = n.task_id WHERE t.group_id = ?1 AND n.attempt = 2",
				   spot),
			 4);
	/* the first attempts of those four keep their end: Preempted (9), in
	 * Kubernetes' word too */
	assert_int_equal(
		sql_count(f,
			  "SELECT count(*) FROM attempts a JOIN nodes n ON a.node_id = n.id "
			  "JOIN tasks t ON n.task_id = t.id WHERE t.group_id = ?1 "
			  "AND a.attempt = 1 AND a.end_state = 9 AND a.end_reason = 'Preempted'",
			  spot),
		4);
	assert_true(run_until(f, settled, spot, 15000, NULL, NULL));
	assert_int_equal(group_state(f, spot), JF_ST_SUCCEEDED);
	/* no retry used: every task failure count is 0 */
	assert_int_equal(sql_count(f,
				   "SELECT ifnull(sum(failures), 0) FROM tasks WHERE "
				   "group_id = ?1",
				   spot),
			 0);
	char *ev = events(f, JF_SCOPE_GROUP, spot);
	int preempted = occurrences(ev, " Preempted tasks/");
	int preempting = occurrences(ev, " Preempting tasks/");
	free(ev);
	assert_int_equal(preempting, 4);
	assert_int_equal(preempted, 8); /* the node's and the task's */
	ev = events(f, JF_SCOPE_GROUP, od);
	assert_non_null(strstr(ev, " Preempting group "));
	free(ev);
	/* billed: 12 segments (8 + 4 second attempts), all closed; the spot rate
	 * is the spot price */
	assert_int_equal(sql_count(f,
				   "SELECT count(*) FROM ledger WHERE group_id = ?1 AND "
				   "end_ms != 0",
				   spot),
			 12);
	assert_int_equal(sql_count(f,
				   "SELECT count(DISTINCT rate) FROM ledger WHERE "
				   "group_id = ?1",
				   spot),
			 1);
	assert_true(sql_count(f, "SELECT min(rate) FROM ledger WHERE group_id = ?1", spot) * 4 <
		    sql_count(f, "SELECT min(rate) FROM ledger WHERE group_id = ?1", od));
}

static bool four_deadlines(struct fix *f, int64_t g)
{
	(void)g;
	return sql_count(f, "SELECT count(*) FROM attempts WHERE kill_at_ms != 0", 0) == 4;
}

/* A daemon that dies during a preemption's grace keeps its deadline: the
 * victims ignore SIGTERM, the grace is 30 s, and the restarted engine's
 * clock is 29 s on; they are SIGKILLed about a second later, not after a
 * fresh 30 s, and the on-demand task runs then. */
static void test_preempt_deadline_kept(void **state)
{
	struct fix *f = *state;
	restart_with_grace(f, 30);
	int64_t spot = submit(f, "spot",
			      "billing: spot\ngpu: A800\ncompletions: 8\nretries: 0\n"
			      "command: [\"/bin/sh\", \"-c\", \"trap '' TERM; "
			      "if [ -e $JOB_CHECKPOINT_DIR/t ]; then exit 0; fi; "
			      "touch $JOB_CHECKPOINT_DIR/t; sleep 60\"]\n");
	assert_true(run_until(f, all_running, spot, 10000, NULL, NULL));
	int64_t od = submit(f, "od", "gpu: A800\ngpus: 4\ncommand: [\"true\"]\n");
	assert_true(run_until(f, four_deadlines, 0, 10000, NULL, NULL));
	int64_t at = sql_count(f, "SELECT min(kill_at_ms) FROM attempts WHERE kill_at_ms != 0", 0);
	assert_int_equal(sql_count(f, "SELECT max(kill_at_ms) FROM attempts", 0) - at < 1000, 1);
	int64_t now = test_now(f);
	assert_true(at > now + 25000 && at <= now + 30000);

	/* the daemon goes away during the grace; the victims do not */
	jf_engine_free(f->e);
	f->e = NULL;
	f->be = NULL;
	f->offset_ms += at - now - 1000; /* one second of the grace left */
	engine_start(f);
	assert_true(run_until(f, succeeded, od, 10000, NULL, NULL));
	/* the deadline was kept, not renewed */
	assert_int_equal(sql_count(f,
				   "SELECT count(*) FROM attempts WHERE kill_at_ms != 0 AND "
				   "abs(kill_at_ms - ?1) > 1000",
				   at),
			 0);
	char *ev = events(f, JF_SCOPE_GROUP, spot);
	int preempted = occurrences(ev, " Preempted tasks/");
	free(ev);
	assert_int_equal(preempted, 8); /* 4 nodes and 4 tasks */
	assert_int_equal(sql_count(f,
				   "SELECT ifnull(sum(failures), 0) FROM tasks WHERE "
				   "group_id = ?1",
				   spot),
			 0);
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_ctl(f->e, spot, 0, "stop", &err), JF_OK);
	assert_true(run_until(f, settled, spot, 10000, NULL, NULL));
}

static int64_t day_ms(int64_t t)
{
	return t - t % 86400000;
}

/* A spot task with a unit_runtime waits while the forecast (three weeks of
 * on-demand peaks 09:00-18:00 UTC on the A800s) says a preemption within
 * it is likely, and starts when a quiet window comes: the injected clock
 * moves from 08:00 (12 h ahead: the peak) to 19:00 (12 h of quiet). */
static void test_window(void **state)
{
	struct fix *f = *state;
	struct jf_store *st = jf_engine_store(f->e);
	int64_t today = day_ms(jft_wall_ms());
	for (int64_t d = 21; d >= 1; d--) {
		int64_t day = today - d * 86400000;
		assert_int_equal(jf_demand_add(st, "A800", day + 9 * 3600000, 8), JF_OK);
		assert_int_equal(jf_demand_add(st, "A800", day + 18 * 3600000, 0), JF_OK);
	}
	jf_engine_free(f->e);
	engine_start(f);
	f->offset_ms = today + 8 * 3600000 - jft_wall_ms();
	int64_t g = submit(f, "long",
			   "billing: spot\ngpu: A800\nunit_runtime: 12h\n"
			   "command: [\"/bin/sh\", \"-c\", \"exit 0\"]\n");
	jf_engine_tick(f->e);
	struct jf_group_rec r;
	assert_int_equal(jf_group_get(jf_engine_store(f->e), g, &r), JF_OK);
	assert_int_equal(r.state, JF_ST_WAITING);
	assert_string_equal(r.message, "waiting for a low-risk window");
	jf_group_release(&r);
	char *ev = events(f, JF_SCOPE_GROUP, g);
	assert_non_null(strstr(ev, " WaitingForWindow "));
	free(ev);
	/* a short window at the same moment: 10 minutes before the peak is quiet */
	int64_t s = submit(f, "short",
			   "billing: spot\ngpu: A800\nunit_runtime: 10m\n"
			   "command: [\"/bin/sh\", \"-c\", \"exit 0\"]\n");
	assert_true(run_until(f, settled, s, 10000, NULL, NULL));
	assert_int_equal(group_state(f, s), JF_ST_SUCCEEDED);
	assert_int_equal(group_state(f, g), JF_ST_WAITING);
	/* evening: the next 12 hours are quiet; the minute's re-check starts it */
	f->offset_ms = today + 19 * 3600000 - jft_wall_ms();
	assert_true(run_until(f, settled, g, 10000, NULL, NULL));
	assert_int_equal(group_state(f, g), JF_ST_SUCCEEDED);
	ev = events(f, JF_SCOPE_GROUP, g);
	assert_non_null(strstr(ev, " LowRiskWindow "));
	free(ev);
}

/* ---- the step: the store first (engine/step.c) ---- */

/* Run SQL on the fixture's database through a connection of its own: a
 * trigger made this way is a real failure inside the engine's transaction. */
static void sql_run(struct fix *f, const char *sql)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg ? msg : "?");
	sqlite3_close(db);
}

static int64_t node0_pid(struct fix *f, int64_t g)
{
	return sql_count(f,
			 "SELECT a.pid FROM attempts a JOIN nodes n ON a.node_id = n.id "
			 "JOIN tasks t ON n.task_id = t.id WHERE t.group_id = ?1 AND t.idx = 0 "
			 "AND a.end_ms = 0",
			 g);
}

/* A ctl stop whose commit fails: EIO, nothing signalled, nothing changed;
 * once the store works again the same stop does it all. */
static void test_failed_commit_signals_nothing(void **state)
{
	struct fix *f = *state;
	int64_t g = submit(f, "nostop",
			   "completions: 1\n"
			   "command: [\"/bin/sh\", \"-c\", \"sleep 100\"]\n");
	assert_true(run_until(f, task0_running, g, 10000, NULL, NULL));
	int64_t pid = node0_pid(f, g);
	assert_true(pid > 0);
	char trig[256];
	snprintf(trig, sizeof(trig),
		 "CREATE TRIGGER jf_test_fail BEFORE UPDATE OF state ON groups "
		 "WHEN NEW.state = %d BEGIN SELECT RAISE(ABORT, 'injected by the test'); END",
		 JF_ST_STOPPED);
	sql_run(f, trig);
	int64_t events_before = sql_count(f, "SELECT count(*) FROM events", 0);
	int changes_before = f->changes;
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "stop", &err), JF_EIO);
	assert_non_null(strstr(err.msg, "injected by the test"));
	assert_int_equal(jf_engine_store_failures(f->e), 1);
	/* nothing done: no signal (the process lives on through several
	 * turns of the loop), no state, no event, no notification */
	for (int i = 0; i < 10; i++)
		turn(f, 20);
	assert_int_equal(kill((pid_t)pid, 0), 0);
	assert_int_equal(task_state(f, g, 0), JF_ST_RUNNING);
	assert_int_equal(group_state(f, g), JF_ST_RUNNING);
	assert_int_equal(sql_count(f, "SELECT count(*) FROM events", 0), events_before);
	assert_int_equal(f->changes, changes_before);
	assert_int_equal(node0_pid(f, g), pid); /* taken up again, the same run */
	/* the store works again: the stop stops it */
	sql_run(f, "DROP TRIGGER jf_test_fail");
	memset(&err, 0, sizeof(err));
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "stop", &err), JF_OK);
	assert_true(run_until(f, settled, g, 10000, NULL, NULL));
	assert_int_equal(group_state(f, g), JF_ST_STOPPED);
	assert_int_equal(sql_count(f, "SELECT count(*) FROM ledger WHERE end_ms = 0", 0), 0);
	assert_int_equal(closed_ledger_rows(f, g), 1);
	assert_int_equal(jf_store_autocommits(jf_engine_store(f->e)), 0);
}

/* Files named name under dir. */
static int count_files(const char *dir, const char *name)
{
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "find '%s' -name '%s' 2>/dev/null | wc -l", dir, name);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	int n = -1;
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

/* A submission whose starts cannot be recorded: the spec write fails with
 * EIO and nothing starts; written again once the store works, it runs. */
static void test_failed_commit_starts_nothing(void **state)
{
	struct fix *f = *state;
	const char *spec = "completions: 2\n"
			   "command: [\"/bin/sh\", \"-c\", \"exit 0\"]\n";
	struct jf_error err = { 0 };
	int64_t g = 0;
	assert_int_equal(jf_engine_mkgroup(f->e, f->queue, JF_KIND_GROUP, "nostart", getuid(),
					   getgid(), &g, &err),
			 JF_OK);
	sql_run(f, "CREATE TRIGGER jf_test_fail BEFORE INSERT ON attempts "
		   "BEGIN SELECT RAISE(ABORT, 'injected by the test'); END");
	assert_int_equal(jf_engine_submit(f->e, g, spec, strlen(spec), getuid(), getgid(), &err),
			 JF_EIO);
	for (int i = 0; i < 10; i++)
		turn(f, 20);
	assert_int_equal(group_state(f, g), JF_ST_DRAFT);
	assert_int_equal(sql_count(f, "SELECT count(*) FROM attempts", 0), 0);
	assert_int_equal(sql_count(f, "SELECT count(*) FROM tasks WHERE group_id = ?1", g), 0);
	char runs[600];
	snprintf(runs, sizeof(runs), "%s/runs", f->dir);
	/* no supervisor ran: none claimed a run directory */
	assert_int_equal(count_files(runs, "claim"), 0);
	sql_run(f, "DROP TRIGGER jf_test_fail");
	memset(&err, 0, sizeof(err));
	assert_int_equal(jf_engine_submit(f->e, g, spec, strlen(spec), getuid(), getgid(), &err),
			 JF_OK);
	assert_true(run_until(f, settled, g, 10000, NULL, NULL));
	assert_int_equal(group_state(f, g), JF_ST_SUCCEEDED);
	assert_int_equal(closed_ledger_rows(f, g), 2);
	assert_int_equal(jf_store_autocommits(jf_engine_store(f->e)), 0);
}

/* An illegal state move is refused: nothing written, counted, and (in a
 * build with assertions, as the tests are) the engine aborts. */
static void test_illegal_move_refused(void **state)
{
	struct fix *f = *state;
	int64_t g = submit(f, "moves",
			   "completions: 1\n"
			   "command: [\"/bin/sh\", \"-c\", \"exit 0\"]\n");
	assert_true(run_until(f, settled, g, 10000, NULL, NULL));
	assert_int_equal(group_state(f, g), JF_ST_SUCCEEDED);
	struct jf_engine *e = f->e;
	struct jf_obj o = { f->queue, g, 0, 0 };
	/* Succeeded --start-->: no such move */
	e->illegal_soft = true;
	int64_t before = e->illegal_moves;
	jf_eng_step_begin(e);
	assert_int_equal(jf_eng_move(e, &o, JF_EV_START, "no"), -1);
	assert_int_equal(jf_eng_move_tasks(e, &o, 1u << JF_ST_SUCCEEDED, JF_EV_PAUSE, "no"), -1);
	assert_true(jf_eng_step_end(e));
	assert_int_equal(e->illegal_moves, before + 2);
	assert_int_equal(group_state(f, g), JF_ST_SUCCEEDED);
	assert_int_equal(task_state(f, g, 0), JF_ST_SUCCEEDED);
	e->illegal_soft = false;
#ifndef NDEBUG
	/* loud: a child that makes the move dies of SIGABRT */
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		freopen("/dev/null", "w", stderr);
		jf_eng_move(e, &o, JF_EV_START, "no");
		_exit(0);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
#endif
	assert_int_equal(group_state(f, g), JF_ST_SUCCEEDED);
}

/* Without a loop (tests like these, that call the entry points and the
 * tick themselves) the tick makes every task row a big submission left,
 * and they run: here with chunks of 8 rows. */
static void test_big_submission_tick(void **state)
{
	struct fix *f = *state;
	struct jf_store *st = jf_engine_store(f->e);
	jf_store_set_tasks_chunk(st, 8);
	int64_t g = submit(f, "big",
			   "completions: 29\n"
			   "parallelism: 2\n"
			   "command: [\"/bin/sh\", \"-c\", \"sleep 30\"]\n");
	const char *rows = "SELECT count(*) FROM tasks WHERE group_id = ?1";
	assert_int_equal(sql_count(f, rows, g), 8);
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(st, g, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING] + c[JF_ST_INITIALIZING] + c[JF_ST_RUNNING], 29);
	jf_engine_tick(f->e);
	assert_int_equal(sql_count(f, rows, g), 29);
	assert_int_equal(sql_count(f,
				   "SELECT count(DISTINCT idx) FROM tasks WHERE group_id = ?1 "
				   "AND idx BETWEEN 0 AND 28",
				   g),
			 29);
	assert_int_equal(sql_count(f, "SELECT unmade FROM groups WHERE id = ?1", g), 0);
	assert_true(run_until(f, task0_running, g, 10000, NULL, NULL));
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "stop", &err), JF_OK);
	assert_true(run_until(f, settled, g, 15000, NULL, NULL));
	assert_int_equal(group_state(f, g), JF_ST_STOPPED);
	assert_int_equal(
		sql_count(f, "SELECT count(*) FROM tasks WHERE group_id = ?1 AND state = 7", g),
		29);
	assert_int_equal(jf_store_autocommits(st), 0);
}

int main(void)
{
	if (!jft_shim_path()) {
		fprintf(stderr, "JOBFS_SHIM is not set\n");
		return 1;
	}
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_group_succeeds),
		T(test_state_dir_freed),
		T(test_group_cache_trim),
		T(test_retry_then_fail),
		T(test_start_failure_words),
		T(test_parallelism),
		T(test_view),
		T(test_timeout),
		T(test_stop),
		T(test_restart_keeps_attempt),
		T(test_resume_running),
		T(test_refused_spec),
		T(test_restart_adopts),
		T(test_spec_over_limit_after_restart),
		T(test_group_timeout),
		T(test_active_deadline),
		T(test_unit_runtime_refused),
		T(test_preempt_spot),
		T(test_preempt_deadline_kept),
		T(test_window),
		T(test_failed_commit_signals_nothing),
		T(test_failed_commit_starts_nothing),
		T(test_illegal_move_refused),
		T(test_big_submission_tick),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
