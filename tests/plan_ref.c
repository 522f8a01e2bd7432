/*
 * plan_ref.c - the reference scheduling pass: the rules at the top of
 * core/plan.c in plain loops.  See plan_ref.h.
 *
 * Groups in order.  A group starts tasks while it wants more and one
 * places (jf_sched_place, best fit) on the machines less every
 * reservation, or else less the reservations whose shadow time is before
 * its end, its queue having room beside the reservations that begin
 * before its end.  The first task that does not start gets a reservation:
 * the first known end (of a running task, a start or a reservation) at
 * which it places on the machines as they are then - every end up to that
 * time released, every reservation not ended held - with room in its
 * queue.  No end at all: it can never run.  Every candidate time is tried
 * from scratch, so nothing here depends on an order of events or on what
 * an earlier try left behind.
 *
 * Storage grows as decisions come (starts are bounded by what the
 * machines hold, not by the groups' counts); everything is freed by
 * plan_ref_release().
 */
#include "tests/plan_ref.h"

#include <stdlib.h>
#include <string.h>

void plan_ref_init(struct plan_ref *o)
{
	memset(o, 0, sizeof(*o));
}

void plan_ref_release(struct plan_ref *o)
{
	if (!o)
		return;
	free(o->st);
	free(o->rv);
	free(o->sk);
	free(o->slots);
	free(o->x);
	free(o->times);
	free(o->used);
	plan_ref_init(o);
}

int64_t plan_ref_end(int64_t now, int64_t timeout)
{
	return timeout <= 0 || now > INT64_MAX - timeout ? INT64_MAX : now + timeout;
}

void plan_ref_sub(struct jf_sched_machine *m, const struct jf_sched_slot *s, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		m[s[i].machine].gpu_free &= ~s[i].gpu_mask;
		m[s[i].machine].cpu_free -= s[i].cpu_milli;
		m[s[i].machine].mem_free -= s[i].mem_bytes;
	}
}

void plan_ref_add(struct jf_sched_machine *m, const struct jf_sched_slot *s, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		m[s[i].machine].gpu_free |= s[i].gpu_mask;
		m[s[i].machine].cpu_free += s[i].cpu_milli;
		m[s[i].machine].mem_free += s[i].mem_bytes;
	}
}

/* *arr holds at least need elements of size bytes afterwards; false if
 * memory ran out (*arr unchanged). */
static bool reserve_room(void **arr, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	void *a = realloc(*arr, n * size);
	if (!a)
		return false;
	*arr = a;
	*cap = n;
	return true;
}

static bool bad_request(const struct jf_plan_group *g)
{
	const struct jf_sched_req *r = &g->req;
	return r->nodes < 1 || r->nodes > JF_SPEC_MAX_NODES_PER_TASK || r->model < -1 ||
	       r->gpus < 0 || r->gpus > 64 || r->cpu_milli < 0 || r->mem_bytes < 0 ||
	       g->running < 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static bool skip(struct plan_ref *o, size_t gi, enum jf_plan_why why)
{
	if (!reserve_room((void **)&o->sk, &o->cap_sk, o->nsk + 1, sizeof(*o->sk)))
		return false;
	o->sk[o->nsk++] = (struct plan_ref_skip){ gi, why };
	return true;
}

/* The nodes of group gi's reservations or starts held in queue q. */
static int64_t nodes_in(const struct jf_plan_in *in, size_t gi, int q)
{
	return q >= 0 && in->groups[gi].queue == q ? in->groups[gi].req.nodes : 0;
}

/* Reserve for the head of group gi at the first known end at which it
 * fits; false if memory ran out.  *found: whether one was found. */
static bool reserve(struct plan_ref *o, const struct jf_plan_in *in,
		    const struct jf_sched_machine *m, size_t nm, size_t gi, bool *found)
{
	const struct jf_plan_group *g = &in->groups[gi];
	int64_t k = g->req.nodes;
	int q = g->queue;
	int64_t cap = q >= 0 ? in->queues[q].capacity : 0;
	size_t nt = 0;
	if (!reserve_room((void **)&o->times, &o->cap_times, in->nrunning + o->nst + o->nrv,
			  sizeof(*o->times)) ||
	    !reserve_room((void **)&o->rv, &o->cap_rv, o->nrv + 1, sizeof(*o->rv)) ||
	    !reserve_room((void **)&o->slots, &o->cap_slots, o->nslots + (size_t)k,
			  sizeof(*o->slots)))
		return false;
	for (size_t i = 0; i < in->nrunning; i++)
		o->times[nt++] =
			in->running[i].end_ms > in->now_ms ? in->running[i].end_ms : in->now_ms;
	for (size_t i = 0; i < o->nst; i++)
		o->times[nt++] = o->st[i].until;
	for (size_t i = 0; i < o->nrv; i++)
		o->times[nt++] = o->rv[i].until;
	qsort(o->times, nt, sizeof(*o->times), cmp_i64);
	*found = false;
	struct jf_sched_machine *x = o->x;
	for (size_t ti = 0; ti < nt && !*found; ti++) {
		int64_t t = o->times[ti];
		if (ti > 0 && o->times[ti - 1] == t)
			continue;
		/* the machines and the queue at t */
		int64_t left = q >= 0 ? cap - o->used[q] : 0;
		memcpy(x, m, nm * sizeof(*m));
		for (size_t i = 0; i < in->nrunning; i++) {
			const struct jf_plan_running *r = &in->running[i];
			int64_t e = r->end_ms > in->now_ms ? r->end_ms : in->now_ms;
			if (e > t)
				continue;
			plan_ref_add(x, r->slots, (int64_t)r->nslots);
			if (q >= 0 && r->queue == q)
				left += (int64_t)r->nslots;
		}
		for (size_t i = 0; i < o->nst; i++) {
			const struct plan_ref_dec *d = &o->st[i];
			if (d->until > t)
				continue;
			plan_ref_add(x, &o->slots[d->slot], in->groups[d->group].req.nodes);
			left += nodes_in(in, d->group, q);
		}
		for (size_t i = 0; i < o->nrv; i++) {
			const struct plan_ref_dec *d = &o->rv[i];
			if (d->until <= t)
				continue;
			plan_ref_sub(x, &o->slots[d->slot], in->groups[d->group].req.nodes);
			left -= nodes_in(in, d->group, q);
		}
		if (cap > 0 && left < k)
			continue;
		if (jf_sched_place(x, nm, &g->req, &o->slots[o->nslots])) {
			int64_t until = plan_ref_end(t, g->timeout_ms);
			o->rv[o->nrv++] = (struct plan_ref_dec){ gi, t, until, o->nslots };
			o->nslots += (size_t)k;
			*found = true;
		}
	}
	return true;
}

/* Start one task of group gi now if the rules allow; false if memory ran
 * out.  *started: whether it did. */
static bool try_start(struct plan_ref *o, const struct jf_plan_in *in, struct jf_sched_machine *m,
		      size_t nm, size_t gi, bool *started)
{
	const struct jf_plan_group *g = &in->groups[gi];
	int64_t k = g->req.nodes;
	int q = g->queue;
	int64_t cap = q >= 0 ? in->queues[q].capacity : 0;
	int64_t end = plan_ref_end(in->now_ms, g->timeout_ms);
	*started = false;
	if (!reserve_room((void **)&o->st, &o->cap_st, o->nst + 1, sizeof(*o->st)) ||
	    !reserve_room((void **)&o->slots, &o->cap_slots, o->nslots + (size_t)k,
			  sizeof(*o->slots)))
		return false;
	if (cap > 0) {
		int64_t need = o->used[q] + k;
		for (size_t r = 0; r < o->nrv; r++)
			if (o->rv[r].at < end)
				need += nodes_in(in, o->rv[r].group, q);
		if (need > cap)
			return true;
	}
	struct jf_sched_slot *s = &o->slots[o->nslots];
	/* beside every reservation, or beside those it ends before */
	for (int pass = 0; pass < 2 && !*started; pass++) {
		memcpy(o->x, m, nm * sizeof(*m));
		for (size_t r = 0; r < o->nrv; r++)
			if (pass == 0 || o->rv[r].at < end)
				plan_ref_sub(o->x, &o->slots[o->rv[r].slot],
					     in->groups[o->rv[r].group].req.nodes);
		*started = jf_sched_place(o->x, nm, &g->req, s);
	}
	if (!*started)
		return true;
	plan_ref_sub(m, s, k);
	if (q >= 0)
		o->used[q] += k;
	o->st[o->nst++] = (struct plan_ref_dec){ gi, in->now_ms, end, o->nslots };
	o->nslots += (size_t)k;
	return true;
}

bool plan_ref_pass(struct plan_ref *o, const struct jf_plan_in *in, struct jf_sched_machine *m,
		   size_t nm)
{
	o->nst = o->nrv = o->nsk = o->nslots = 0;
	if (!reserve_room((void **)&o->x, &o->cap_x, nm ? nm : 1, sizeof(*o->x)) ||
	    !reserve_room((void **)&o->used, &o->cap_used, in->nqueues ? in->nqueues : 1,
			  sizeof(*o->used)))
		goto nomem;
	for (size_t q = 0; q < in->nqueues; q++)
		o->used[q] = in->queues[q].held;
	for (size_t gi = 0; gi < in->ngroups; gi++) {
		const struct jf_plan_group *g = &in->groups[gi];
		int64_t k = g->req.nodes;
		int64_t want = g->parallelism - g->running;
		if (g->waiting < want)
			want = g->waiting;
		if (g->paused || want <= 0)
			continue;
		if (bad_request(g)) {
			if (!skip(o, gi, JF_PLAN_BAD_REQUEST))
				goto nomem;
			continue;
		}
		int64_t cap = g->queue >= 0 ? in->queues[g->queue].capacity : 0;
		if (cap > 0 && k > cap) {
			if (!skip(o, gi, JF_PLAN_OVER_CAPACITY))
				goto nomem;
			continue;
		}
		bool started = true, found;
		while (want > 0 && started) {
			if (!try_start(o, in, m, nm, gi, &started))
				goto nomem;
			want -= started;
		}
		if (want == 0)
			continue;
		if (!reserve(o, in, m, nm, gi, &found) ||
		    (!found && !skip(o, gi, JF_PLAN_OVER_CLUSTER)))
			goto nomem;
	}
	return true;
nomem:
	for (size_t i = 0; i < o->nst; i++)
		plan_ref_add(m, &o->slots[o->st[i].slot], in->groups[o->st[i].group].req.nodes);
	o->nst = o->nrv = o->nsk = o->nslots = 0;
	return false;
}
