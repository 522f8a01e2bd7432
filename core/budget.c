/*
 * budget.c - what a queue spent within its budget period, and when that
 * may next cross its budget (core/budget.h).
 *
 * In whole seconds (t = floor(ms / 1000), the billing rule's boundaries),
 * a segment [S, E) with rate r counts, at second t, the seconds
 *     secs(t) = max(0, min(E, t) - max(S, t - P))
 * of the window [t - P, t) (P: the period; none, then no lower bound).
 * That is a sum of ramps, ramp(x) = max(0, x):
 *     secs(t) = ramp(t - S) - ramp(t - E) - ramp(t - S - P) + ramp(t - E - P)
 * so g(t) = sum r x secs(t), the spent amount times 3600 before rounding,
 * is piecewise linear in t, its slope changing by +r at S, -r at E, -r at
 * S + P and +r at E + P (an open segment has no E).  The crossing times
 * come from one sweep over those kinks in time order: O(n log n).
 *
 * Rounding: the spent amount rounds each segment half up, so it differs
 * from g / 3600 + base by at most n / 2 micro-units (n segments), in
 * either direction.  A crossing is therefore looked for with that slack
 * on the early side: the answer is never late.  Where the amount only
 * moves one way from there on (no period: it only grows; nothing running
 * in a window: it only shrinks), the exact second follows from that bound
 * by a doubling and halving search over the real amount.  Where it does
 * not (work runs in a window while old costs leave it), the bound is the
 * answer: at that time the caller computes the real amount and, if it has
 * not crossed yet, asks again (the answer is always a later second than
 * now); that may take a look a second for as long as n / 2 micro-units
 * take at the net rate.
 *
 * Products are taken in __int128: a rate and a number of seconds that
 * each fit in int64 multiply without overflow, and so do sums of a few
 * million of them.
 */
#include "core/budget.h"

#include <stdbool.h>
#include <stdlib.h>

#include "core/billing.h"

typedef __int128 i128;

static int64_t floor_s(int64_t ms)
{
	int64_t q = ms / 1000;
	if (ms % 1000 != 0 && ms < 0)
		q--;
	return q;
}

int64_t jf_budget_spent(const struct jf_budget_seg *segs, size_t n, int64_t base, int64_t now_ms,
			int64_t period_s)
{
	int64_t total = base;
	int64_t from = period_s > 0 ? now_ms - period_s * 1000 : INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		const struct jf_budget_seg *s = &segs[i];
		int64_t lo = s->start_ms > from ? s->start_ms : from;
		int64_t hi = s->end_ms > 0 && s->end_ms < now_ms ? s->end_ms : now_ms;
		if (hi <= lo)
			continue;
		total = jf_bill_add(total, jf_bill_amount(jf_bill_seconds(lo, hi), s->rate));
	}
	return total;
}

struct kink {
	int64_t t;
	int64_t delta; /* the slope's change there: +rate or -rate */
};

static int kink_cmp(const void *a, const void *b)
{
	int64_t x = ((const struct kink *)a)->t, y = ((const struct kink *)b)->t;
	return x < y ? -1 : x > y;
}

/* The sweep's start: g(t0), the slope just after t0, and the kinks after
 * t0 in time order (*out, the caller frees; NULL when none).  False when
 * out of memory. */
static bool sweep_start(const struct jf_budget_seg *segs, size_t n, int64_t t0, int64_t period_s,
			i128 *g0, i128 *slope, struct kink **out, size_t *nk)
{
	struct kink *k = n ? malloc(4 * n * sizeof(*k)) : NULL;
	if (n && !k)
		return false;
	size_t m = 0;
	*g0 = 0;
	*slope = 0;
	for (size_t i = 0; i < n; i++) {
		const struct jf_budget_seg *s = &segs[i];
		if (s->rate <= 0)
			continue;
		bool open = s->end_ms <= 0;
		int64_t S = floor_s(s->start_ms);
		int64_t E = open ? 0 : floor_s(s->end_ms);
		if (!open && E < S)
			E = S;
		/* ramps: (where, sign); P and E absent as they are */
		struct kink r[4];
		size_t nr = 0;
		r[nr++] = (struct kink){ S, s->rate };
		if (!open)
			r[nr++] = (struct kink){ E, -s->rate };
		if (period_s > 0) {
			r[nr++] = (struct kink){ S + period_s, -s->rate };
			if (!open)
				r[nr++] = (struct kink){ E + period_s, s->rate };
		}
		for (size_t j = 0; j < nr; j++) {
			if (r[j].t <= t0) {
				/* a ramp already rising at t0: its value and its slope */
				*g0 += (i128)r[j].delta * (t0 - r[j].t);
				*slope += r[j].delta;
			} else {
				k[m++] = r[j];
			}
		}
	}
	if (m > 1)
		qsort(k, m, sizeof(*k), kink_cmp);
	*out = k;
	*nk = m;
	return true;
}

static i128 ceil_div(i128 a, i128 b) /* a >= 0, b > 0 */
{
	return (a + b - 1) / b;
}

static int64_t to_ms(i128 t)
{
	if (t > (i128)(INT64_MAX / 1000))
		return -1; /* past any time that can be written: never */
	return (int64_t)t * 1000;
}

/* The first second t > t0 where g(t) >= target (up) or g(t) < target
 * (down), as ms; -1 never. */
static int64_t sweep(const struct jf_budget_seg *segs, size_t n, int64_t now_ms, int64_t period_s,
		     i128 target, bool up)
{
	int64_t t0 = floor_s(now_ms);
	i128 g, s;
	struct kink *k = NULL;
	size_t nk = 0;
	if (!sweep_start(segs, n, t0, period_s, &g, &s, &k, &nk))
		return (t0 + 1) * 1000;
	int64_t answer = -1;
	if (up ? g >= target : g < target) {
		answer = (t0 + 1) * 1000;
		goto out;
	}
	i128 a = t0;
	for (size_t i = 0;;) {
		bool last = i >= nk;
		i128 b = last ? 0 : k[i].t;
		/* on [a, b] g is g + s (t - a) */
		if (up && s > 0 && (last || g + s * (b - a) >= target)) {
			i128 t = a + ceil_div(target - g, s);
			answer = to_ms(t > t0 ? t : t0 + 1);
			goto out;
		}
		if (!up && s < 0 && (last || g + s * (b - a) < target)) {
			i128 t = a + (g - target) / (-s) + 1;
			answer = to_ms(t > t0 ? t : t0 + 1);
			goto out;
		}
		if (last)
			break;
		g += s * (b - a);
		a = b;
		for (; i < nk && k[i].t == b; i++)
			s += k[i].delta;
	}
out:
	free(k);
	return answer;
}

/* The spent amount crosses budget at the first second >= lo where it is
 * >= budget (up) or < budget (down); for an amount that only grows (up)
 * or only shrinks (down) from lo on, found exactly by doubling then
 * halving; -1 when it has not crossed by the second cap. */
struct crossing {
	const struct jf_budget_seg *segs;
	size_t n;
	int64_t base, period_s, budget;
	bool up;
};

static bool crossed(const struct crossing *c, int64_t t)
{
	int64_t v = jf_budget_spent(c->segs, c->n, c->base, t * 1000, c->period_s);
	return c->up ? v >= c->budget : v < c->budget;
}

static int64_t refine(const struct jf_budget_seg *segs, size_t n, int64_t base, int64_t period_s,
		      int64_t budget, bool up, int64_t lo, int64_t cap)
{
	const struct crossing c = { segs, n, base, period_s, budget, up };
	if (crossed(&c, lo))
		return lo * 1000;
	int64_t step = 1, hi = lo;
	for (;;) {
		if (hi >= cap)
			return -1;
		lo = hi; /* not crossed at lo */
		hi = cap - lo > step ? lo + step : cap;
		step *= 2;
		if (crossed(&c, hi))
			break;
	}
	while (hi - lo > 1) { /* not at lo, at hi */
		int64_t mid = lo + (hi - lo) / 2;
		if (crossed(&c, mid))
			hi = mid;
		else
			lo = mid;
	}
	return hi * 1000;
}

int64_t jf_budget_reach_ms(const struct jf_budget_seg *segs, size_t n, int64_t base, int64_t now_ms,
			   int64_t period_s, int64_t budget)
{
	/* each segment's rounded amount is at most its exact one plus 1/2:
	 * spent >= budget needs g / 3600 + base + n / 2 >= budget */
	i128 target = ((i128)budget - base) * 3600 - (i128)n * 1800;
	int64_t at = sweep(segs, n, now_ms, period_s, target, true);
	if (at < 0 || period_s > 0)
		return at;
	/* with no period nothing leaves: the amount only grows, and from the
	 * bound on the exact second is a search away.  By when it has surely
	 * crossed (spent > g / 3600 + base - n / 2): the same sweep */
	i128 sure = ((i128)budget - base) * 3600 + (i128)n * 1800;
	int64_t cap = sweep(segs, n, now_ms, 0, sure, true);
	if (cap < 0)
		return at;
	return refine(segs, n, base, 0, budget, true, at / 1000, cap / 1000);
}

int64_t jf_budget_free_ms(const struct jf_budget_seg *segs, size_t n, int64_t base, int64_t now_ms,
			  int64_t period_s, int64_t budget)
{
	/* each segment's rounded amount is more than its exact one less 1/2,
	 * so spent > g / 3600 + base - n / 2; spent < budget, spent a whole
	 * number, needs g / 3600 + base - n / 2 < budget - 1 */
	i128 target = ((i128)budget - 1 - base) * 3600 + (i128)n * 1800;
	int64_t at = sweep(segs, n, now_ms, period_s, target, false);
	if (at < 0 || period_s <= 0)
		return at;
	/* with nothing running the amount only shrinks: the exact second is
	 * a search away, before the last segment has left the window */
	int64_t last = 0;
	for (size_t i = 0; i < n; i++) {
		if (segs[i].end_ms <= 0)
			return at;
		int64_t gone = floor_s(segs[i].end_ms) + period_s;
		if (gone > last)
			last = gone;
	}
	if (last < at / 1000)
		last = at / 1000;
	return refine(segs, n, base, period_s, budget, false, at / 1000, last);
}
