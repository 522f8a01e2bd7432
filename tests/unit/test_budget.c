/*
 * test_budget.c - core/budget.c with numbers worked out by hand: what a
 * queue spent inside a rolling window (segments cut at the window's start,
 * each billed by the ledger's rule), and when that crosses the budget:
 * reached while work runs, freed as old costs leave the window.  Then the
 * same answers against a plain second-by-second walk on random inputs:
 * never later than the truth, and asking again at each answer gets there.
 *
 * Rates are micro-units per hour: 3600 is one micro-unit a second.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "core/billing.h"
#include "core/budget.h"

#define S(x) ((int64_t)(x)*1000) /* seconds to ms */
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void spent_no_period(void **state)
{
	(void)state;
	/* the closed total (500) plus an open segment billed to now:
	 * 3.60/h is 1000 micro-units a second, 10 whole seconds */
	struct jf_budget_seg open[] = { { 10000, 0, 3600000 } };
	assert_int_equal(jf_budget_spent(open, 1, 500, 20500, 0), 10500);
	/* nothing: the base */
	assert_int_equal(jf_budget_spent(NULL, 0, 77, 20500, 0), 77);
	/* closed segments count whole, as the ledger bills them:
	 * 9 s at 1000/h is 2.5, rounded half up */
	struct jf_budget_seg closed[] = { { S(0), S(9), 1000 } };
	assert_int_equal(jf_budget_spent(closed, 1, 0, S(100), 0), 3);
	assert_int_equal(jf_budget_spent(closed, 1, 0, S(100), 0),
			 jf_bill_amount(jf_bill_seconds(S(0), S(9)), 1000));
	/* an open segment that started after now (a skewed clock) costs 0 */
	struct jf_budget_seg later[] = { { S(200), 0, 3600 } };
	assert_int_equal(jf_budget_spent(later, 1, 0, S(100), 0), 0);
}

static void spent_window(void **state)
{
	(void)state;
	/* now 1000 s, period 100 s: the window is [900 s, 1000 s) */
	struct jf_budget_seg segs[] = {
		{ S(850), S(950), 3600 },     /* 900..950: 50 s -> 50 */
		{ S(500), S(880), 3600 },     /* before the window: 0 */
		{ 920400, 930900, 7200 },     /* whole seconds 920..930: 10 s x 2 -> 20 */
		{ S(960), S(969), 1000 },     /* 9 s: 2.5 -> 3 */
		{ 990700, 0, 1800 },          /* open, from second 990: 10 s x 0.5 -> 5 */
		{ S(899), S(900), 36000000 }, /* ends where the window starts: 0 */
	};
	assert_int_equal(jf_budget_spent(segs, N(segs), 0, S(1000), 100), 78);
	/* at 1000.999 s the same whole seconds */
	assert_int_equal(jf_budget_spent(segs, N(segs), 0, S(1000) + 999, 100), 78);
	/* a second later: 901..1001: 49 + 20 + 3 + 11 x 0.5 (5.5 -> 6) */
	assert_int_equal(jf_budget_spent(segs, N(segs), 0, S(1001), 100), 78);
	/* two seconds later: 48 + 20 + 3 + 6 */
	assert_int_equal(jf_budget_spent(segs, N(segs), 0, S(1002), 100), 77);
	/* no period: every segment whole, the open one from 990 */
	assert_int_equal(jf_budget_spent(segs, N(segs), 0, S(1000), 0),
			 100 + 380 + 20 + 3 + 5 + 10000);
}

static void reach_no_period(void **state)
{
	(void)state;
	/* 1 a second from 0; spent 40 at 40 s; budget 100: at 100 s exactly
	 * (99 at 99 s) */
	struct jf_budget_seg one[] = { { 0, 0, 3600 } };
	assert_int_equal(jf_budget_spent(one, 1, 0, S(40), 0), 40);
	assert_int_equal(jf_budget_reach_ms(one, 1, 0, S(40), 0, 100), S(100));
	assert_int_equal(jf_budget_spent(one, 1, 0, S(99) + 999, 0), 99);
	/* with a closed base of 30: 70 more, at 70 s */
	assert_int_equal(jf_budget_reach_ms(one, 1, 30, S(40), 0, 100), S(70));
	/* 0.5 a second: round(t / 2) reaches 100 at 199 s (99.5 -> 100) */
	struct jf_budget_seg half[] = { { 0, 0, 1800 } };
	assert_int_equal(jf_budget_reach_ms(half, 1, 0, S(10), 0, 100), S(199));
	assert_int_equal(jf_budget_spent(half, 1, 0, S(198), 0), 99);
	assert_int_equal(jf_budget_spent(half, 1, 0, S(199), 0), 100);
	/* two running at 1 and 2 a second: 30 at 10 s, 300 at 100 s */
	struct jf_budget_seg two[] = { { 0, 0, 3600 }, { 0, 0, 7200 } };
	assert_int_equal(jf_budget_spent(two, 2, 0, S(10), 0), 30);
	assert_int_equal(jf_budget_reach_ms(two, 2, 0, S(10), 0, 300), S(100));
	assert_int_equal(jf_budget_spent(two, 2, 0, S(99), 0), 297);
	/* nothing running: never */
	assert_int_equal(jf_budget_reach_ms(NULL, 0, 10, S(10), 0, 300), -1);
	struct jf_budget_seg free_[] = { { 0, 0, 0 } };
	assert_int_equal(jf_budget_reach_ms(free_, 1, 10, S(10), 0, 300), -1);
	/* reached already (the caller asks again): the next second, never now */
	assert_int_equal(jf_budget_reach_ms(one, 1, 0, S(150) + 400, 0, 100), S(151));
	/* an hour at 3.60/h from 10:00:00.250 costs 3.60 at 11:00:00 */
	struct jf_budget_seg hour[] = { { S(36000) + 250, 0, 3600000 } };
	assert_int_equal(jf_budget_reach_ms(hour, 1, 0, S(36000) + 300, 0, 3600000), S(39600));
}

static void reach_window(void **state)
{
	(void)state;
	/* an open segment at 1 a second in a 50 s window never costs more
	 * than 50 */
	struct jf_budget_seg one[] = { { 0, 0, 3600 } };
	assert_int_equal(jf_budget_reach_ms(one, 1, 0, S(10), 50, 100), -1);
	assert_int_equal(jf_budget_reach_ms(one, 1, 0, S(10), 50, 50), S(50));
	/*
	 * Period 100 s.  Closed [0, 60) at 1/s (60), open from 60 at 2/s;
	 * at 70 s: 60 + 20 = 80.  Until 100 s the closed one stays whole and
	 * the open one grows: 140 at 100 s.  Then the closed one leaves at
	 * 1/s while the open one grows at 2/s: net 1/s, 150 at 110 s.  The
	 * answer is 109 s: the rounding of two segments (up to 1/2 each)
	 * could have made it a second earlier; at 109 s the caller finds 149
	 * and asks again, and gets 110 s.
	 */
	struct jf_budget_seg segs[] = { { S(0), S(60), 3600 }, { S(60), 0, 7200 } };
	assert_int_equal(jf_budget_spent(segs, 2, 0, S(70), 100), 80);
	assert_int_equal(jf_budget_spent(segs, 2, 0, S(100), 100), 140);
	int64_t at = jf_budget_reach_ms(segs, 2, 0, S(70), 100, 150);
	assert_int_equal(at, S(109));
	assert_int_equal(jf_budget_spent(segs, 2, 0, S(109), 100), 149);
	assert_int_equal(jf_budget_reach_ms(segs, 2, 0, S(109), 100, 150), S(110));
	assert_int_equal(jf_budget_spent(segs, 2, 0, S(110), 100), 150);
}

static void free_window(void **state)
{
	(void)state;
	/* 100 s at 1/s, period 100 s: at 100 s the window [0, 100) holds all
	 * 100; a second later [1, 101) holds 99 */
	struct jf_budget_seg c[] = { { S(0), S(100), 3600 } };
	assert_int_equal(jf_budget_spent(c, 1, 0, S(100), 100), 100);
	assert_int_equal(jf_budget_free_ms(c, 1, 0, S(100), 100, 100), S(101));
	assert_int_equal(jf_budget_spent(c, 1, 0, S(101), 100), 99);
	/* below 50 once 51 s of it left: [51, 151) holds 49 */
	assert_int_equal(jf_budget_free_ms(c, 1, 0, S(100), 100, 50), S(151));
	assert_int_equal(jf_budget_spent(c, 1, 0, S(150), 100), 50);
	assert_int_equal(jf_budget_spent(c, 1, 0, S(151), 100), 49);
	/* a day's window: a 10 s segment at 12:00 is below the budget again
	 * 24 h and 1 s later */
	struct jf_budget_seg d[] = { { S(43200), S(43210), 360000 } }; /* 100/s: 1000 */
	assert_int_equal(jf_budget_spent(d, 1, 0, S(43300), 86400), 1000);
	assert_int_equal(jf_budget_free_ms(d, 1, 0, S(43300), 86400, 1000), S(43200 + 86401));
	/* running work replacing what leaves at the same rate: never */
	struct jf_budget_seg same[] = { { S(0), S(100), 3600 }, { S(100), 0, 3600 } };
	assert_int_equal(jf_budget_free_ms(same, 2, 0, S(100), 100, 100), -1);
	/* at half the rate: the answer may be a second early (two roundings),
	 * the walk gets there: [2, 102) holds 98 + 1 */
	struct jf_budget_seg slow[] = { { S(0), S(100), 3600 }, { S(100), 0, 1800 } };
	int64_t at = jf_budget_free_ms(slow, 2, 0, S(100), 100, 100);
	assert_int_equal(at, S(101));
	assert_int_equal(jf_budget_spent(slow, 2, 0, S(101), 100), 100);
	at = jf_budget_free_ms(slow, 2, 0, at, 100, 100);
	assert_int_equal(at, S(102));
	assert_int_equal(jf_budget_spent(slow, 2, 0, S(102), 100), 99);
	/* no period: what is spent stays spent */
	assert_int_equal(jf_budget_free_ms(c, 1, 0, S(100), 0, 100), -1);
	assert_int_equal(jf_budget_free_ms(NULL, 0, 100, S(100), 0, 100), -1);
	/* below already (the caller asks again): the next second */
	assert_int_equal(jf_budget_free_ms(c, 1, 0, S(150), 100, 100), S(151));
}

/* ---- against a walk, second by second ---- */

static uint64_t rng = 88172645463325252ull;

static int64_t rnd(int64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (int64_t)(rng % (uint64_t)n);
}

/* The first second t in (t0, t0 + horizon] where the spent amount is
 * >= budget (up) or < budget (down); -1 none. */
static int64_t walk(const struct jf_budget_seg *s, size_t n, int64_t base, int64_t t0,
		    int64_t period, int64_t budget, bool up, int64_t horizon)
{
	for (int64_t t = t0 + 1; t <= t0 + horizon; t++) {
		int64_t v = jf_budget_spent(s, n, base, S(t), period);
		if (up ? v >= budget : v < budget)
			return t;
	}
	return -1;
}

static void against_walk(void **state)
{
	(void)state;
	int worst = 0;
	for (int round = 0; round < 2000; round++) {
		struct jf_budget_seg s[8];
		size_t n = (size_t)rnd(8) + 1;
		int64_t period = rnd(3) == 0 ? 0 : 50 + rnd(450);
		int64_t t0 = 500 + rnd(1000);
		for (size_t i = 0; i < n; i++) {
			int64_t a = rnd(t0) * 1000 + rnd(1000);
			bool open = rnd(3) == 0;
			int64_t b = open ? 0 : a + rnd(t0 * 1000 - a + 1);
			s[i] = (struct jf_budget_seg){ a, b, 1800 + rnd(20000) };
		}
		int64_t base = period ? 0 : rnd(100);
		int64_t now = S(t0) + rnd(1000);
		int64_t spent = jf_budget_spent(s, n, base, now, period);
		/* reach: a budget a little above; free: a little below */
		for (int up = 0; up < 2; up++) {
			int64_t budget = up ? spent + 1 + rnd(300) : spent - rnd(spent + 1);
			int64_t truth = walk(s, n, base, t0, period, budget, up, 4000);
			int64_t at = up ? jf_budget_reach_ms(s, n, base, now, period, budget)
					: jf_budget_free_ms(s, n, base, now, period, budget);
			if (truth < 0) {
				/* never within the horizon: the answer may only be
				 * "never" or a look before the horizon's end */
				if (at >= 0 && at > S(t0 + 4000))
					fail_msg("round %d: no crossing, answer %lld", round,
						 (long long)at);
				continue;
			}
			if (at < 0 || at > S(truth) || at <= now - now % 1000)
				fail_msg("round %d (%s, period %lld): truth %lld s, answer %lld ms",
					 round, up ? "reach" : "free", (long long)period,
					 (long long)truth, (long long)at);
			/* exact where the amount moves one way: no period (reach),
			 * nothing running (free) */
			bool open = false;
			for (size_t i = 0; i < n; i++)
				open = open || s[i].end_ms == 0;
			if ((up && !period) || (!up && period && !open))
				assert_int_equal(at, S(truth));
			/* asking again at each answer gets there */
			int steps = 0;
			while (at < S(truth)) {
				int64_t v = jf_budget_spent(s, n, base, at, period);
				assert_true(up ? v < budget : v >= budget);
				int64_t next =
					up ? jf_budget_reach_ms(s, n, base, at, period, budget)
					   : jf_budget_free_ms(s, n, base, at, period, budget);
				assert_true(next > at && next <= S(truth));
				at = next;
				if (++steps > worst)
					worst = steps;
			}
		}
	}
	/* the one-way cases above came out exact; the mixed ones needed
	 * more looks (how many depends on how nearly the rates cancel) */
	assert_true(worst > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spent_no_period), cmocka_unit_test(spent_window),
		cmocka_unit_test(reach_no_period), cmocka_unit_test(reach_window),
		cmocka_unit_test(free_window),     cmocka_unit_test(against_walk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
