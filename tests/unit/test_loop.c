/*
 * test_loop.c - the event loop (engine/loop.h), alone.
 *
 * Real time, with pipes for sources: FIRST sources are served before the
 * others in a turn; a timer fires once per arm, earliest first and ties
 * in the order added; the deferred job waits while a FIRST source is
 * readable and runs anyway, overdue, after max_delay_ms; jf_loop_stop
 * ends the run.  Virtual time: the loop never sleeps, jumps the clock to
 * the earliest timer, asks the before-sleep hooks in order (stopping at
 * the first that made work), ends idle when nothing is armed, and reports
 * an instant that never settles.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/loop.h"

#define LOG_MAX 64

struct trace {
	char log[LOG_MAX][16];
	int n;
	int fds[2][2]; /* two pipes: [0] a FIRST source, [1] a NEXT one */
	int64_t vnow;  /* the virtual clock */
	int timer[3];
	int hook_work; /* before-sleep: how many more times the first hook makes work */
	bool pending;  /* the deferred job */
	int stop_after;
};

static void note(struct trace *t, const char *what)
{
	assert_true(t->n < LOG_MAX);
	snprintf(t->log[t->n++], sizeof(t->log[0]), "%s", what);
}

static void drain(int fd)
{
	char b[64];
	assert_true(read(fd, b, sizeof(b)) > 0);
}

static void on_first(struct jf_loop *l, void *ctx)
{
	struct trace *t = ctx;
	drain(t->fds[0][0]);
	note(t, "first");
	if (--t->stop_after == 0)
		jf_loop_stop(l);
}

static void on_next(struct jf_loop *l, void *ctx)
{
	struct trace *t = ctx;
	drain(t->fds[1][0]);
	note(t, "next");
	if (--t->stop_after == 0)
		jf_loop_stop(l);
}

static void on_timer(struct jf_loop *l, void *ctx, int k)
{
	struct trace *t = ctx;
	char b[16];
	snprintf(b, sizeof(b), "t%d@%lld", k, (long long)jf_loop_now(l));
	note(t, b);
	if (--t->stop_after == 0)
		jf_loop_stop(l);
}

static void on_t0(struct jf_loop *l, void *ctx)
{
	on_timer(l, ctx, 0);
}

static void on_t1(struct jf_loop *l, void *ctx)
{
	on_timer(l, ctx, 1);
}

static void on_t2(struct jf_loop *l, void *ctx)
{
	on_timer(l, ctx, 2);
}

static int64_t vnow(void *ctx)
{
	return ((struct trace *)ctx)->vnow;
}

static void vadvance(void *ctx, int64_t to)
{
	struct trace *t = ctx;
	assert_true(to > t->vnow);
	t->vnow = to;
	note(t, "advance");
}

static bool def_pending(void *ctx)
{
	return ((struct trace *)ctx)->pending;
}

static void def_run(void *ctx, bool overdue)
{
	struct trace *t = ctx;
	t->pending = false;
	note(t, overdue ? "pass-overdue" : "pass");
}

static bool hook_a(struct jf_loop *l, void *ctx)
{
	(void)l;
	struct trace *t = ctx;
	note(t, "hook-a");
	return t->hook_work-- > 0;
}

static bool hook_b(struct jf_loop *l, void *ctx)
{
	(void)l;
	note(ctx, "hook-b");
	return false;
}

static bool hook_forever(struct jf_loop *l, void *ctx)
{
	(void)l;
	(void)ctx;
	return true;
}

static void expect(const struct trace *t, const char *const *want, int n)
{
	for (int i = 0; i < t->n && i < n; i++)
		if (strcmp(t->log[i], want[i]) != 0)
			fail_msg("step %d: %s, expected %s", i, t->log[i], want[i]);
	assert_int_equal(t->n, n);
}

static void pipes(struct trace *t)
{
	for (int k = 0; k < 2; k++)
		assert_int_equal(pipe(t->fds[k]), 0);
}

static void unpipe(struct trace *t)
{
	for (int k = 0; k < 2; k++) {
		close(t->fds[k][0]);
		close(t->fds[k][1]);
	}
}

/* Both sources readable: the FIRST one is served first, whatever the
 * order they were added in. */
static void test_first_before_next(void **state)
{
	(void)state;
	struct trace t = { .stop_after = 2 };
	pipes(&t);
	struct jf_loop *l = jf_loop_new(NULL);
	assert_non_null(l);
	assert_int_equal(jf_loop_add_fd(l, t.fds[1][0], JF_LOOP_NEXT, on_next, &t), 0);
	assert_int_equal(jf_loop_add_fd(l, t.fds[0][0], JF_LOOP_FIRST, on_first, &t), 0);
	assert_int_equal(write(t.fds[1][1], "x", 1), 1);
	assert_int_equal(write(t.fds[0][1], "x", 1), 1);
	assert_true(jf_loop_first_waiting(l));
	assert_int_equal(jf_loop_run(l), JF_LOOP_STOPPED);
	assert_false(jf_loop_first_waiting(l));
	static const char *const want[] = { "first", "next" };
	expect(&t, want, 2);
	jf_loop_free(l);
	unpipe(&t);
}

/* A pending deferred job waits while a FIRST source is readable, runs once
 * it is not (the order of a turn does not depend on the clock: virtual). */
static void test_deferred_waits_for_first(void **state)
{
	(void)state;
	struct trace t = { .stop_after = -1, .vnow = 1000 };
	pipes(&t);
	struct jf_loop_clock c = { vnow, vadvance, &t };
	struct jf_loop *l = jf_loop_new(&c);
	assert_non_null(l);
	assert_int_equal(jf_loop_add_fd(l, t.fds[0][0], JF_LOOP_FIRST, on_first, &t), 0);
	jf_loop_set_deferred(l, def_pending, def_run, &t, 50);
	/* two requests, the pass after them */
	assert_int_equal(write(t.fds[0][1], "x", 1), 1);
	t.pending = true;
	assert_int_equal(jf_loop_run(l), JF_LOOP_IDLE);
	static const char *const want[] = { "first", "pass" };
	expect(&t, want, 2);
	/* nothing waits: the pass runs in the first turn, before any hook */
	t.n = 0;
	t.pending = true;
	assert_int_equal(jf_loop_add_before_sleep(l, hook_b, &t), 0);
	assert_int_equal(jf_loop_run(l), JF_LOOP_IDLE);
	static const char *const want2[] = { "pass", "hook-b" };
	expect(&t, want2, 2);
	jf_loop_free(l);
	unpipe(&t);
}

/* Real time: the overdue flag once the job has waited max_delay_ms behind
 * requests that keep coming. */
static void on_first_refill(struct jf_loop *l, void *ctx)
{
	struct trace *t = ctx;
	drain(t->fds[0][0]);
	note(t, "first");
	if (t->n >= LOG_MAX - 2 || !t->pending) {
		jf_loop_stop(l);
		return;
	}
	usleep(20000);
	assert_int_equal(write(t->fds[0][1], "x", 1), 1);
}

static void test_deferred_overdue(void **state)
{
	(void)state;
	struct trace t = { .stop_after = -1 };
	pipes(&t);
	struct jf_loop *l = jf_loop_new(NULL);
	assert_non_null(l);
	assert_int_equal(jf_loop_add_fd(l, t.fds[0][0], JF_LOOP_FIRST, on_first_refill, &t), 0);
	jf_loop_set_deferred(l, def_pending, def_run, &t, 50);
	t.pending = true;
	assert_int_equal(write(t.fds[0][1], "x", 1), 1);
	assert_int_equal(jf_loop_run(l), JF_LOOP_STOPPED);
	/* requests keep coming, so the pass never finds the channel empty: it
	 * ran because it was overdue, after a request at least (50 ms of 20 ms
	 * requests, fewer if a sleep overshot), and the request after it
	 * stopped the loop */
	int pass = -1;
	for (int i = 0; i < t.n; i++)
		if (strncmp(t.log[i], "pass", 4) == 0)
			pass = i;
	assert_true(pass >= 1);
	assert_string_equal(t.log[pass], "pass-overdue");
	assert_string_equal(t.log[t.n - 1], "first");
	jf_loop_free(l);
	unpipe(&t);
}

/* Virtual time: timers earliest first, ties in the order added, once per
 * arm; the clock jumps; the loop ends idle when nothing is armed. */
static void test_virtual_timers(void **state)
{
	(void)state;
	struct trace t = { .stop_after = -1, .vnow = 100 };
	struct jf_loop_clock c = { vnow, vadvance, &t };
	struct jf_loop *l = jf_loop_new(&c);
	assert_non_null(l);
	assert_true(jf_loop_virtual(l));
	t.timer[0] = jf_loop_add_timer(l, on_t0, &t);
	t.timer[1] = jf_loop_add_timer(l, on_t1, &t);
	t.timer[2] = jf_loop_add_timer(l, on_t2, &t);
	jf_loop_arm(l, t.timer[2], 300);
	jf_loop_arm(l, t.timer[1], 200);
	jf_loop_arm(l, t.timer[0], 200);
	assert_int_equal(jf_loop_next_at(l), 200);
	assert_int_equal(jf_loop_armed_at(l, t.timer[2]), 300);
	assert_int_equal(jf_loop_run(l), JF_LOOP_IDLE);
	static const char *const want[] = { "advance", "t0@200", "t1@200", "advance", "t2@300" };
	expect(&t, want, 5);
	assert_int_equal(t.vnow, 300);
	assert_int_equal(jf_loop_next_at(l), -1);
	/* a timer in the past fires at once, without moving the clock */
	t.n = 0;
	jf_loop_arm(l, t.timer[0], 10);
	assert_int_equal(jf_loop_run(l), JF_LOOP_IDLE);
	static const char *const want2[] = { "t0@300" };
	expect(&t, want2, 1);
	jf_loop_free(l);
}

/* Before-sleep hooks: only at a quiet turn, in order, stopping at the
 * first that made work; the clock moves only after every hook found
 * nothing. */
static void test_virtual_hooks(void **state)
{
	(void)state;
	struct trace t = { .stop_after = -1, .vnow = 100, .hook_work = 2 };
	struct jf_loop_clock c = { vnow, vadvance, &t };
	struct jf_loop *l = jf_loop_new(&c);
	assert_non_null(l);
	t.timer[0] = jf_loop_add_timer(l, on_t0, &t);
	assert_int_equal(jf_loop_add_before_sleep(l, hook_a, &t), 0);
	assert_int_equal(jf_loop_add_before_sleep(l, hook_b, &t), 0);
	jf_loop_arm(l, t.timer[0], 150);
	assert_int_equal(jf_loop_run(l), JF_LOOP_IDLE);
	static const char *const want[] = {
		"hook-a", "hook-a", "hook-a", "hook-b", "advance", "t0@150", "hook-a", "hook-b",
	};
	expect(&t, want, 8);
	jf_loop_free(l);
}

/* An instant that never settles ends the run, named. */
static void test_virtual_stuck(void **state)
{
	(void)state;
	struct trace t = { .vnow = 100 };
	struct jf_loop_clock c = { vnow, vadvance, &t };
	struct jf_loop *l = jf_loop_new(&c);
	assert_non_null(l);
	jf_loop_set_instant_max(l, 1000);
	assert_int_equal(jf_loop_add_before_sleep(l, hook_forever, &t), 0);
	assert_int_equal(jf_loop_run(l), JF_LOOP_STUCK);
	assert_int_equal(t.vnow, 100);
	jf_loop_free(l);
}

/* Real time: a timer armed 30 ms ahead fires, once, and the stop in its
 * callback ends the run. */
static void test_real_timer(void **state)
{
	(void)state;
	struct trace t = { .stop_after = 1 };
	struct jf_loop *l = jf_loop_new(NULL);
	assert_non_null(l);
	assert_false(jf_loop_virtual(l));
	t.timer[0] = jf_loop_add_timer(l, on_t0, &t);
	int64_t armed = jf_loop_now(l) + 30;
	jf_loop_arm(l, t.timer[0], armed);
	assert_int_equal(jf_loop_run(l), JF_LOOP_STOPPED);
	assert_int_equal(t.n, 1);
	long long at = 0;
	assert_int_equal(sscanf(t.log[0], "t0@%lld", &at), 1);
	assert_true(at >= armed);
	assert_int_equal(jf_loop_armed_at(l, t.timer[0]), -1);
	jf_loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_before_next),
		cmocka_unit_test(test_deferred_waits_for_first),
		cmocka_unit_test(test_deferred_overdue),
		cmocka_unit_test(test_virtual_timers),
		cmocka_unit_test(test_virtual_hooks),
		cmocka_unit_test(test_virtual_stuck),
		cmocka_unit_test(test_real_timer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
