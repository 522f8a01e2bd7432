/*
 * budget.h - a queue's budget (reference 10): what it spent within its
 * period, and the earliest time that can change, in integer micro-units.
 *
 * The spent amount is the queue's `cost` restricted to a window: every
 * ledger segment (closed, or open and billed up to now) counts for the
 * part of it inside [now - period, now), billed by core/billing.c's rule
 * (whole seconds between floor boundaries, seconds x rate / 3600 rounded
 * half up).  A segment wholly inside the window counts its ledger amount
 * exactly, so with no period the spent amount is the queue's cost to the
 * micro-unit.  Pure: the clock comes in as now_ms, the segments from the
 * caller (the store's jf_ledger_budget_segs).
 */
#ifndef JF_BUDGET_H
#define JF_BUDGET_H

#include <stddef.h>
#include <stdint.h>

struct jf_budget_seg {
	int64_t start_ms;
	int64_t end_ms; /* 0: open (running), billed up to now */
	int64_t rate;   /* micro-units per hour */
};

/* The cost of segs inside [now - period_s, now) (period_s 0: no lower
 * bound), plus base (what is counted outside the list: with no period,
 * the closed ledger total while segs holds the open segments).
 * Saturates at INT64_MAX as the ledger's totals do. */
int64_t jf_budget_spent(const struct jf_budget_seg *segs, size_t n, int64_t base, int64_t now_ms,
			int64_t period_s);

/*
 * When jf_budget_spent() may next cross budget, if the open segments run
 * on at their rates and nothing else changes: the start (in ms) of a whole
 * second after now_ms, never later than the first second at which the
 * crossing happens, or -1 when it never happens.  Exactly that second
 * where the amount only moves one way (reach with no period; free with
 * nothing open); else perhaps earlier, as long as the rounding of the
 * segments (half a micro-unit each) blurs it: the caller looks again then
 * (budget.c).  reach: spent >= budget (it grows while work
 * runs); free: spent < budget (old costs leave a rolling window).  Out of
 * memory, both answer the next second.
 */
int64_t jf_budget_reach_ms(const struct jf_budget_seg *segs, size_t n, int64_t base, int64_t now_ms,
			   int64_t period_s, int64_t budget);
int64_t jf_budget_free_ms(const struct jf_budget_seg *segs, size_t n, int64_t base, int64_t now_ms,
			  int64_t period_s, int64_t budget);

#endif
