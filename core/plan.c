/*
 * plan.c - one scheduling pass: FIFO over groups with backfill behind
 * reservations (reference 5.1-5.3).  See plan.h.
 *
 * THE RULES
 *
 * Order.  Groups are taken once each, in submission order (in->groups).  A
 * paused group, or one with nothing waiting or already at its parallelism,
 * starts nothing and reserves nothing.  A group may start up to
 * min(waiting, parallelism - running) tasks; its tasks are all alike (one
 * request, one timeout), so its next waiting task, its head, stands for
 * all of them.
 *
 * Gang.  A task of k nodes starts only when all k are placed at once
 * (jf_sched_place: best fit, all or nothing).  Nothing is held for a task
 * that waits, so no gang ever holds part of what another needs while it
 * waits for the rest: two gangs cannot deadlock, one waits for the other's
 * end, and the reservations below bound that wait.
 *
 * Capacity.  A queue never holds more than `capacity` nodes (its held
 * nodes plus this pass's starts; 0 = unlimited).  An independent batch
 * (queue -1) bypasses every queue's capacity, not machines or reservations.
 *
 * Start now.  A task whose end bound is E = now + timeout starts now when
 *   - its queue has room: held + k <= capacity - the nodes of the queue's
 *     reservations whose shadow time T < E, and
 *   - it fits on the free machines minus every reservation (placed there it
 *     touches no reserved resource), or else on the free machines minus the
 *     reservations with T < E (it touches only reservations it ends before:
 *     it ends by the earliest shadow time whose resources it uses).
 * "Minus a reservation": its GPUs are out and its cpu and memory subtracted
 * (below zero, nothing fits on that machine).
 *
 * Reservation.  The first task of a group that cannot start (by machines
 * or by capacity) blocks its group for this pass and gets a reservation:
 * walk forward in time over the known ends - a running task at max(its end
 * bound, now), a task started in this pass at now + timeout, an earlier
 * reservation at T + timeout - releasing their resources and queue nodes
 * into a copy of the free machines, with every earlier reservation held
 * from now until its end.  The first time at which the head fits (every end
 * at that time released) is its shadow time T; its best-fit placement then
 * is its reserved resources, and it holds k nodes of its queue's capacity.
 * Every blocked group gets one, in order, so no big gang starves; a later
 * reservation never takes an earlier one's resources before that one ends.
 *
 * Never.  A gang larger than its queue's capacity, or one that does not
 * fit even when all known work has ended (more than the whole cluster has,
 * or resources held by something missing from `running`), is skipped and
 * listed in out->skips with the reason: it reserves and blocks nothing.
 * So is a request no spec can make (nodes outside 1..1024, gpus outside
 * 0..64, a negative amount or count).
 * The walk has one step per known end, so a pass always finishes.
 *
 * What holds.  A task started behind a blocked head (later in order)
 * leaves the head's reservation whole: it stays off the reserved resources
 * and capacity, or it ends by T.  So at every moment the running tasks and
 * the reservations begun fit the machines and the queues together.  When
 * tasks end by their bounds and a pass runs at every end, the first blocked
 * head starts by its shadow time, and that time never moves later, unless
 * a group ahead of it gains work meanwhile (a parallelism slot frees, a
 * task is retried): that group comes first by rule.
 * Deliberately conservative, for simplicity: a reservation is held from now
 * rather than from T, and its cpu and memory are subtracted from what is
 * free now even where they will come from a task that ends before T.
 * Timeouts <= 0 mean no bound (end = INT64_MAX); sums saturate.
 *
 * HOW
 *
 * real is what is free now (less this pass's starts); eff is real less
 * every reservation; both only shrink.  A start is placed on eff, or else
 * on real less the reservations it does not end before.  Placement is
 * jf_sched_place() (best fit) on just the machines that can take a node,
 * in index order, which picks what it would pick on all of them.
 *
 * A walk copies the head's candidate machines (its GPU model's, or all for
 * CPU-only work) from eff and replays the ends in time order: running
 * tasks' nodes (sorted once per pass, by model), this pass's starts and
 * reservations (kept sorted as they come), and the queue's running nodes.
 * A machine's GPUs are raw (free or freed) less those of reservations not
 * yet ended; per-GPU counts handle GPUs that several reservations hold at
 * different times.  The nodes of a gang are alike, so it fits exactly when
 * the nodes each machine can take add up to k; that sum is kept as the
 * walk goes, and only rises.  Because it only rises, the walk first looks
 * at the moment the last running task has ended (kept per pass in `last`)
 * and replays the running ends only if the head fits by then: most heads
 * behind many reservations do not.
 *
 * Cost: O(R log R) to sort R running nodes; per group O(M) to test a fit;
 * per blocked head O(M + ends replayed).  1,000 machines, 10,000 running
 * tasks and 1,000 groups (912 of them reserving): about 45 ms per pass
 * (tests/unit/test_plan.c, test_timing).
 */
#include "core/plan.h"

#include <stdlib.h>
#include <string.h>

#define NMODELS JF_CLUSTER_MAX_MODELS

enum ev_kind { EV_START, EV_RESV };

struct ev { /* the end of a start or a reservation */
	int64_t t;
	enum ev_kind kind;
	size_t idx;
};

struct rel { /* one node of a running task, freed at t */
	int64_t t;
	size_t machine;
	uint64_t mask;
	int64_t cpu, mem;
	int model;
};

struct qrel { /* a running task's nodes leave its queue at t */
	int64_t t;
	int queue;
	int64_t nodes;
};

struct wm {                        /* a machine during a walk */
	struct jf_sched_machine x; /* free then: raw less rmask's GPUs */
	uint64_t raw;              /* GPUs free or freed, reserved or not */
	uint64_t rmask;            /* GPUs of the reservations not ended */
	int64_t copies;            /* nodes of the head it takes */
};

struct pass {
	const struct jf_plan_in *in;
	struct jf_plan *out;
	size_t nm;
	struct jf_sched_machine *real; /* free now (with this pass's starts taken) */
	struct jf_sched_machine *eff;  /* real minus every reservation */
	struct jf_sched_machine *work; /* scratch: real minus some reservations */
	struct jf_sched_machine *pm;   /* scratch: the machines a placement may use ... */
	size_t *pidx;                  /* ... and their indices */
	struct wm *wm;                 /* a walk's machines */
	uint64_t *rall;                /* GPUs of every reservation, per machine */
	uint64_t *rmulti;              /* GPUs in two or more reservations */
	uint32_t *rcount;              /* [m * 64 + g]: reservations holding GPU g of m */
	uint32_t *wcount;              /* a walk's copy, made on first use ... */
	size_t *wstamp;                /* ... in walk number wstamp[m] */
	size_t nwalk;
	int64_t *used;                   /* per queue: nodes held, with this pass's starts */
	int64_t *reserved;               /* per queue: nodes held by its reservations */
	size_t *by_model;                /* machine indices by model */
	size_t machines_at[NMODELS + 1]; /* by_model[machines_at[x] .. [x + 1]) */
	struct rel *rel_all;             /* running nodes by end */
	struct rel *rel_model;           /* the same by machine model, then end */
	size_t nrel, model_at[NMODELS + 1];
	struct qrel *qrel;             /* running tasks by queue, then end */
	size_t *queue_at;              /* qrel[queue_at[q] .. queue_at[q + 1]) */
	int64_t *queue_freed;          /* per queue: the nodes of all its running tasks */
	struct jf_sched_machine *last; /* eff once every running task has ended */
	uint64_t *last_raw;            /* GPUs then, reservations kept */
	struct ev *extra;              /* ends of starts and reservations ... */
	struct ev *tmp;
	size_t nextra, sorted, cap_extra; /* ... [0, sorted) in time order */
	int64_t max_at;                   /* latest shadow time so far */
	struct shape {                    /* request shapes known not to fit, this pass */
		int model, gpus;
		int64_t cpu, mem;
		int64_t eff_nodes;            /* this many nodes did not fit on eff */
		int64_t work_nodes, work_end; /* nor on work for an end this late */
		int64_t real_nodes;           /* nor on real, reservations or not */
	} shapes[64];
	size_t nshapes;
	bool fit_by_last[NMODELS + 1]; /* the last head of this model fit once all work ended */
	enum jf_plan_block block;      /* why the last try_start started nothing */
};

static int64_t add_sat(int64_t a, int64_t b)
{
	return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int64_t bound(const struct jf_plan_group *g)
{
	return g->timeout_ms > 0 ? g->timeout_ms : INT64_MAX;
}

static int64_t capacity(const struct pass *p, int q)
{
	return q < 0 ? 0 : p->in->queues[q].capacity;
}

static int ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int rel_cmp_t(const void *a, const void *b)
{
	const struct rel *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->machine < y->machine ? -1 : x->machine > y->machine;
}

static int rel_cmp_model(const void *a, const void *b)
{
	const struct rel *x = a, *y = b;
	if (x->model != y->model)
		return x->model < y->model ? -1 : 1;
	return rel_cmp_t(a, b);
}

static int qrel_cmp(const void *a, const void *b)
{
	const struct qrel *x = a, *y = b;
	if (x->queue != y->queue)
		return x->queue < y->queue ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

static bool grow(void **arr, size_t *cap, size_t need, size_t size)
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

/* ---- machines ---- */

static void take_slot(struct jf_sched_machine *m, const struct jf_sched_slot *s)
{
	m[s->machine].gpu_free &= ~s->gpu_mask;
	m[s->machine].cpu_free -= s->cpu_milli;
	m[s->machine].mem_free -= s->mem_bytes;
}

/* jf_sched_copies() after machine m gained something, counted up from what it had
 * before (c: a walk only ever gives back), without dividing. */
static int64_t copies_up(const struct jf_sched_machine *m, const struct jf_sched_req *r, int64_t c)
{
	bool gpu = r->model >= 0 && r->gpus > 0;
	if ((gpu && m->model != r->model) || m->cpu_free < 0 || m->mem_free < 0)
		return 0;
	int64_t g = gpu ? jf_popcount64(m->gpu_free) : 0;
	for (int64_t n = c + 1; n <= r->nodes; n++) {
		if ((gpu && n * r->gpus > g) || n * r->cpu_milli > m->cpu_free ||
		    n * r->mem_bytes > m->mem_free)
			break;
		c = n;
	}
	return c;
}

/* The machines r can use: those of its model, or all (idx NULL). */
static const size_t *candidates(const struct pass *p, const struct jf_sched_req *r, size_t *n)
{
	if (r->model < 0 || r->gpus == 0) {
		*n = p->nm;
		return NULL;
	}
	if (r->model >= NMODELS) {
		*n = 0;
		return p->by_model;
	}
	*n = p->machines_at[r->model + 1] - p->machines_at[r->model];
	return p->by_model + p->machines_at[r->model];
}

/* Would jf_sched_place() place r on m?  Without trying it. */
static bool fits(const struct pass *p, const struct jf_sched_machine *m,
		 const struct jf_sched_req *r)
{
	size_t n;
	const size_t *idx = candidates(p, r, &n);
	int64_t total = 0;
	for (size_t i = 0; i < n && total < r->nodes; i++)
		total += jf_sched_copies(&m[idx ? idx[i] : i], r);
	return total >= r->nodes;
}

/* jf_sched_place() of r on pm[0 .. n-1], the machines that can take a
 * node, with their indices in pidx, in index order: best fit picks the
 * same as on all machines (the others never fit).  Fills s with real
 * indices. */
static void place_listed(struct pass *p, size_t n, const struct jf_sched_req *r,
			 struct jf_sched_slot *s)
{
	jf_sched_place(p->pm, n, r, s); /* the callers know it fits */
	for (int64_t i = 0; i < r->nodes; i++)
		s[i].machine = p->pidx[s[i].machine];
}

/* ---- output ---- */

/* Room for n more slots and one more end event. */
static bool make_room(struct pass *p, int64_t n)
{
	struct jf_plan *o = p->out;
	size_t cap = p->cap_extra;
	if (!grow((void **)&o->slots, &o->cap_slots, o->nslots + (size_t)n, sizeof(*o->slots)) ||
	    !grow((void **)&p->extra, &p->cap_extra, p->nextra + 1, sizeof(*p->extra)))
		return false;
	if (cap != p->cap_extra || !p->tmp) {
		void *tmp = realloc(p->tmp, p->cap_extra * sizeof(*p->tmp));
		if (!tmp)
			return false;
		p->tmp = tmp;
	}
	return true;
}

/* Sort what was added to extra since the last walk and merge it in. */
static void merge_extra(struct pass *p)
{
	if (p->sorted == p->nextra)
		return;
	qsort(p->extra + p->sorted, p->nextra - p->sorted, sizeof(*p->extra), ev_cmp);
	size_t i = 0, j = p->sorted, k = 0;
	while (i < p->sorted || j < p->nextra) {
		if (j == p->nextra || (i < p->sorted && ev_cmp(&p->extra[i], &p->extra[j]) <= 0))
			p->tmp[k++] = p->extra[i++];
		else
			p->tmp[k++] = p->extra[j++];
	}
	memcpy(p->extra, p->tmp, p->nextra * sizeof(*p->extra));
	p->sorted = p->nextra;
}

static bool skip(struct pass *p, size_t gi, enum jf_plan_why why)
{
	struct jf_plan *o = p->out;
	if (!grow((void **)&o->skips, &o->cap_skips, o->nskips + 1, sizeof(*o->skips)))
		return false;
	o->skips[o->nskips++] = (struct jf_plan_skip){ p->in->groups[gi].id, gi, why };
	return true;
}

/* ---- start now ---- */

static bool room(const struct pass *p, int q, int64_t k, int64_t end)
{
	int64_t cap = capacity(p, q);
	if (cap <= 0)
		return true;
	int64_t held = p->used[q] + k;
	if (held > cap)
		return false;
	if (p->reserved[q] == 0)
		return true;
	const struct jf_plan *o = p->out;
	for (size_t r = 0; r < o->nresv; r++)
		if (p->in->groups[o->resv[r].group].queue == q && o->resv[r].at_ms < end)
			held += p->in->groups[o->resv[r].group].req.nodes;
	return held <= cap;
}

/* Start one task of group gi now if the rules allow: 1 started, 0 not,
 * -1 out of memory. */
static struct shape *shape_of(struct pass *p, const struct jf_sched_req *r)
{
	int model = r->gpus > 0 ? r->model : -1;
	for (size_t i = 0; i < p->nshapes; i++) {
		struct shape *x = &p->shapes[i];
		if (x->model == model && x->gpus == r->gpus && x->cpu == r->cpu_milli &&
		    x->mem == r->mem_bytes)
			return x;
	}
	if (p->nshapes == 64)
		return NULL;
	struct shape *x = &p->shapes[p->nshapes++];
	*x = (struct shape){ model,     r->gpus,   r->cpu_milli, r->mem_bytes,
			     INT64_MAX, INT64_MAX, INT64_MAX,    INT64_MAX };
	return x;
}

static int try_start(struct pass *p, size_t gi)
{
	const struct jf_plan_in *in = p->in;
	const struct jf_plan_group *g = &in->groups[gi];
	struct jf_plan *o = p->out;
	int64_t k = g->req.nodes, end = add_sat(in->now_ms, bound(g));
	if (!room(p, g->queue, k, end)) {
		p->block = p->used[g->queue] + k > capacity(p, g->queue)
				   ? JF_PLAN_BLOCK_CAPACITY
				   : JF_PLAN_BLOCK_RESERVATION;
		return 0;
	}
	p->block = JF_PLAN_BLOCK_RESOURCES;
	struct jf_sched_machine *on = p->eff;
	struct shape *sh = shape_of(p, &g->req);
	bool eff_no = sh && k >= sh->eff_nodes;
	if (eff_no || !fits(p, p->eff, &g->req)) {
		if (sh && k < sh->eff_nodes)
			sh->eff_nodes = k;
		/* it is held back by reservations when what is free, all of
		 * it, could take it (real only shrinks within a pass) */
		if (o->nresv > 0 && !(sh && k >= sh->real_nodes)) {
			if (fits(p, p->real, &g->req))
				p->block = JF_PLAN_BLOCK_RESERVATION;
			else if (sh)
				sh->real_nodes = k;
		}
		/* may it use the reservations it ends before? */
		if (o->nresv == 0 || p->max_at < end)
			return 0;
		if (sh && k >= sh->work_nodes && end >= sh->work_end)
			return 0;
		on = p->work;
		memcpy(on, p->real, p->nm * sizeof(*on));
		for (size_t r = 0; r < o->nresv; r++) {
			if (o->resv[r].at_ms >= end)
				continue;
			int64_t n = in->groups[o->resv[r].group].req.nodes;
			for (int64_t i = 0; i < n; i++)
				take_slot(on, &o->slots[o->resv[r].slot + (size_t)i]);
		}
		if (!fits(p, on, &g->req)) {
			if (sh && (k <= sh->work_nodes && end <= sh->work_end)) {
				sh->work_nodes = k;
				sh->work_end = end;
			}
			return 0;
		}
	}
	if (!make_room(p, k) ||
	    !grow((void **)&o->starts, &o->cap_starts, o->nstarts + 1, sizeof(*o->starts)))
		return -1;
	struct jf_sched_slot *s = o->slots + o->nslots;
	size_t nc, n = 0;
	const size_t *idx = candidates(p, &g->req, &nc);
	for (size_t i = 0; i < nc; i++) {
		size_t m = idx ? idx[i] : i;
		if (jf_sched_copies(&on[m], &g->req) > 0) {
			p->pm[n] = on[m];
			p->pidx[n++] = m;
		}
	}
	place_listed(p, n, &g->req, s);
	for (int64_t i = 0; i < k; i++) {
		take_slot(p->real, &s[i]);
		take_slot(p->eff, &s[i]);
		take_slot(p->last, &s[i]);
		p->last_raw[s[i].machine] &= ~s[i].gpu_mask;
	}
	p->extra[p->nextra++] = (struct ev){ end, EV_START, o->nstarts };
	o->starts[o->nstarts++] = (struct jf_plan_start){ g->id, gi, o->nslots };
	o->nslots += (size_t)k;
	if (g->queue >= 0)
		p->used[g->queue] += k;
	return 1;
}

/* ---- reservation ---- */

struct walk {
	const struct jf_sched_req *r;
	int queue;
	int64_t total; /* nodes of r the machines take */
	int64_t room;  /* nodes the queue takes */
};

/* Machine m gets back what a node held (the GPUs in mask, unless a
 * reservation not ended holds them). */
static void walk_free(struct pass *p, struct walk *w, size_t m, uint64_t mask, int64_t cpu,
		      int64_t mem)
{
	struct wm *y = &p->wm[m];
	y->raw |= mask;
	y->x.cpu_free += cpu;
	y->x.mem_free += mem;
	if (y->x.gpus > 0)
		y->x.gpu_free = y->raw & ~y->rmask;
	int64_t c = copies_up(&y->x, w->r, y->copies);
	w->total += c - y->copies;
	y->copies = c;
}

/* A reservation's hold on GPUs mask of machine m ends. */
static void walk_unreserve(struct pass *p, size_t m, uint64_t mask)
{
	struct wm *y = &p->wm[m];
	if (!(p->rmulti[m] & mask)) {
		y->rmask &= ~mask;
		return;
	}
	uint32_t *cnt = p->wcount + m * 64;
	if (p->wstamp[m] != p->nwalk) {
		memcpy(cnt, p->rcount + m * 64, 64 * sizeof(*cnt));
		p->wstamp[m] = p->nwalk;
	}
	for (; mask; mask &= mask - 1) {
		int g = __builtin_ctzll(mask);
		if (--cnt[g] == 0)
			y->rmask &= ~(UINT64_C(1) << g);
	}
}

static void walk_end(struct pass *p, struct walk *w, const struct ev *e)
{
	const struct jf_plan *o = p->out;
	bool resv = e->kind == EV_RESV;
	size_t gi = resv ? o->resv[e->idx].group : o->starts[e->idx].group;
	const struct jf_plan_group *g = &p->in->groups[gi];
	const struct jf_sched_slot *s =
		o->slots + (resv ? o->resv[e->idx].slot : o->starts[e->idx].slot);
	if (w->queue >= 0 && g->queue == w->queue)
		w->room += g->req.nodes;
	bool any = w->r->model < 0 || w->r->gpus == 0;
	if (!any && g->req.model >= 0 && g->req.gpus > 0 && g->req.model != w->r->model)
		return; /* machines of another model: of no use to the head */
	for (int64_t i = 0; i < g->req.nodes; i++) {
		size_t m = s[i].machine;
		if (!any && p->real[m].model != w->r->model)
			continue; /* left stale */
		if (resv) {
			/* its GPUs are in raw already: free now, or freed by its
			 * shadow time */
			walk_unreserve(p, m, s[i].gpu_mask);
			walk_free(p, w, m, 0, s[i].cpu_milli, s[i].mem_bytes);
		} else {
			walk_free(p, w, m, s[i].gpu_mask, s[i].cpu_milli, s[i].mem_bytes);
		}
	}
}

/* A new walk over the candidate machines, from from[] (eff: now; last:
 * once every running task has ended) with its GPUs raw[] (NULL: real). */
static void walk_init(struct pass *p, struct walk *w, const size_t *idx, size_t nc,
		      const struct jf_sched_machine *from, const uint64_t *raw)
{
	p->nwalk++;
	w->total = 0;
	for (size_t i = 0; i < nc; i++) {
		size_t m = idx ? idx[i] : i;
		struct wm *y = &p->wm[m];
		y->x = from[m];
		y->raw = raw ? raw[m] : p->real[m].gpu_free;
		y->rmask = p->rall[m];
		y->x.gpu_free = y->raw & ~y->rmask;
		y->copies = jf_sched_copies(&y->x, w->r);
		w->total += y->copies;
	}
}

/* Reserve for the head of group gi.  1 reserved, 0 never fits, -1 out of
 * memory. */
static int reserve(struct pass *p, size_t gi)
{
	const struct jf_plan_in *in = p->in;
	struct jf_plan *o = p->out;
	const struct jf_plan_group *g = &in->groups[gi];
	const struct jf_sched_req *r = &g->req;
	int64_t k = r->nodes;
	int q = g->queue;

	merge_extra(p);
	/* the running nodes that matter: on machines of its model, or all */
	const struct rel *rel = p->rel_all;
	size_t nrel = p->nrel;
	if (r->model >= 0 && r->gpus > 0) {
		nrel = 0;
		if (r->model < NMODELS) {
			rel = p->rel_model + p->model_at[r->model];
			nrel = p->model_at[r->model + 1] - p->model_at[r->model];
		}
	}
	const struct qrel *qr = NULL;
	size_t nqr = 0;
	struct walk w = { r, -1, 0, INT64_MAX / 2 };
	if (capacity(p, q) > 0) {
		w.queue = q;
		qr = p->qrel + p->queue_at[q];
		nqr = p->queue_at[q + 1] - p->queue_at[q];
	}
	size_t nc;
	const size_t *idx = candidates(p, r, &nc);

	/* Fitting is monotone in time.  Most heads behind many reservations
	 * fit only after the last running task has ended: look there first,
	 * and walk from now only when the head fits by then. */
	size_t a = 0, b = 0, c = 0;
	int64_t last = INT64_MIN;
	if (nrel > 0)
		last = rel[nrel - 1].t;
	if (nqr > 0 && qr[nqr - 1].t > last)
		last = qr[nqr - 1].t;
	int mk = r->model >= 0 && r->gpus > 0 && r->model < NMODELS ? r->model : NMODELS;
	bool pre = last != INT64_MIN && !p->fit_by_last[mk];
	if (pre) {
		walk_init(p, &w, idx, nc, p->last, p->last_raw);
		if (w.queue >= 0)
			w.room = capacity(p, q) - p->used[q] - p->reserved[q] + p->queue_freed[q];
		for (; b < p->nextra && p->extra[b].t <= last; b++)
			walk_end(p, &w, &p->extra[b]);
		if (w.total < k || w.room < k) {
			a = nrel;
			c = nqr;
		} else {
			b = 0;
		}
	}
	if (a == 0 && c == 0) {
		walk_init(p, &w, idx, nc, p->eff, NULL);
		if (w.queue >= 0)
			w.room = capacity(p, q) - p->used[q] - p->reserved[q];
	}

	int64_t at = 0;
	bool found = false;
	while (!found && (a < nrel || b < p->nextra || c < nqr)) {
		at = INT64_MAX;
		if (a < nrel && rel[a].t < at)
			at = rel[a].t;
		if (b < p->nextra && p->extra[b].t < at)
			at = p->extra[b].t;
		if (c < nqr && qr[c].t < at)
			at = qr[c].t;
		for (; a < nrel && rel[a].t == at; a++)
			walk_free(p, &w, rel[a].machine, rel[a].mask, rel[a].cpu, rel[a].mem);
		for (; b < p->nextra && p->extra[b].t == at; b++)
			walk_end(p, &w, &p->extra[b]);
		for (; c < nqr && qr[c].t == at; c++)
			w.room += qr[c].nodes;
		found = w.total >= k && w.room >= k;
	}
	p->fit_by_last[mk] = found && at <= last;
	if (!found)
		return 0;
	if (!make_room(p, k) ||
	    !grow((void **)&o->resv, &o->cap_resv, o->nresv + 1, sizeof(*o->resv)))
		return -1;
	/* best fit at the shadow time */
	size_t n = 0;
	for (size_t i = 0; i < nc; i++) {
		size_t m = idx ? idx[i] : i;
		if (p->wm[m].copies > 0) {
			p->pm[n] = p->wm[m].x;
			p->pidx[n++] = m;
		}
	}
	struct jf_sched_slot *s = o->slots + o->nslots;
	place_listed(p, n, r, s); /* the copies add up to k */
	size_t ri = o->nresv++;
	o->resv[ri] =
		(struct jf_plan_resv){ g->id, gi, at, add_sat(at, bound(g)), o->nslots, p->block };
	for (int64_t i = 0; i < k; i++) {
		size_t m = s[i].machine;
		take_slot(p->eff, &s[i]);
		take_slot(p->last, &s[i]);
		p->rmulti[m] |= p->rall[m] & s[i].gpu_mask;
		p->rall[m] |= s[i].gpu_mask;
		for (uint64_t x = s[i].gpu_mask; x; x &= x - 1)
			p->rcount[m * 64 + (size_t)__builtin_ctzll(x)]++;
	}
	o->nslots += (size_t)k;
	if (q >= 0)
		p->reserved[q] += k;
	if (at > p->max_at)
		p->max_at = at;
	p->extra[p->nextra++] = (struct ev){ o->resv[ri].until_ms, EV_RESV, ri };
	return 1;
}

/* ---- the pass ---- */

static enum jf_err check_in(const struct jf_plan_in *in, const struct jf_sched_machine *m,
			    size_t nm, struct jf_error *err)
{
	for (size_t i = 0; i < nm; i++)
		if (m[i].model < 0 || m[i].model >= NMODELS || m[i].gpus < 0 || m[i].gpus > 64)
			return jf_error_set(err, JF_EINVAL, 0,
					    "plan: machine %zu: model %d, %d GPUs", i, m[i].model,
					    m[i].gpus);
	for (size_t i = 0; i < in->nrunning; i++) {
		const struct jf_plan_running *r = &in->running[i];
		if (r->queue < -1 || (r->queue >= 0 && (size_t)r->queue >= in->nqueues) ||
		    (r->nslots && !r->slots))
			return jf_error_set(err, JF_EINVAL, 0,
					    "plan: running %zu: bad queue or slots", i);
		for (size_t s = 0; s < r->nslots; s++)
			if (r->slots[s].machine >= nm)
				return jf_error_set(err, JF_EINVAL, 0,
						    "plan: running %zu: machine %zu of %zu", i,
						    r->slots[s].machine, nm);
	}
	for (size_t i = 0; i < in->ngroups; i++) {
		int q = in->groups[i].queue;
		if (q < -1 || (q >= 0 && (size_t)q >= in->nqueues))
			return jf_error_set(err, JF_EINVAL, 0, "plan: group %lld: queue %d of %zu",
					    (long long)in->groups[i].id, q, in->nqueues);
	}
	return JF_OK;
}

static bool bad_request(const struct jf_plan_group *g)
{
	const struct jf_sched_req *r = &g->req;
	const int64_t most = INT64_MAX / 2 / JF_SPEC_MAX_NODES_PER_TASK; /* k x amount fits */
	return r->nodes < 1 || r->nodes > JF_SPEC_MAX_NODES_PER_TASK || r->model < -1 ||
	       r->gpus < 0 || r->gpus > JF_MACHINE_MAX_GPUS || r->cpu_milli < 0 ||
	       r->cpu_milli > most || r->mem_bytes < 0 || r->mem_bytes > most || g->running < 0;
}

static void pass_free(struct pass *p)
{
	free(p->real);
	free(p->eff);
	free(p->work);
	free(p->pm);
	free(p->pidx);
	free(p->wm);
	free(p->rall);
	free(p->rmulti);
	free(p->rcount);
	free(p->wcount);
	free(p->wstamp);
	free(p->used);
	free(p->reserved);
	free(p->by_model);
	free(p->rel_all);
	free(p->rel_model);
	free(p->qrel);
	free(p->queue_at);
	free(p->queue_freed);
	free(p->last);
	free(p->last_raw);
	free(p->extra);
	free(p->tmp);
}

/* The running tasks' ends, sorted three ways. */
static bool index_running(struct pass *p, const struct jf_sched_machine *m)
{
	const struct jf_plan_in *in = p->in;
	size_t nrel = 0, nq = 0;
	for (size_t i = 0; i < in->nrunning; i++) {
		nrel += in->running[i].nslots;
		nq += in->running[i].queue >= 0;
	}
	p->rel_all = malloc((nrel ? nrel : 1) * sizeof(*p->rel_all));
	p->rel_model = malloc((nrel ? nrel : 1) * sizeof(*p->rel_model));
	p->qrel = malloc((nq ? nq : 1) * sizeof(*p->qrel));
	p->queue_at = calloc(in->nqueues + 1, sizeof(*p->queue_at));
	p->queue_freed = calloc(in->nqueues + 1, sizeof(*p->queue_freed));
	if (!p->rel_all || !p->rel_model || !p->qrel || !p->queue_at || !p->queue_freed)
		return false;
	nq = 0;
	for (size_t i = 0; i < in->nrunning; i++) {
		const struct jf_plan_running *r = &in->running[i];
		int64_t t = r->end_ms > in->now_ms ? r->end_ms : in->now_ms;
		for (size_t s = 0; s < r->nslots; s++) {
			const struct jf_sched_slot *x = &r->slots[s];
			p->rel_all[p->nrel++] = (struct rel){ t,
							      x->machine,
							      x->gpu_mask,
							      x->cpu_milli,
							      x->mem_bytes,
							      m[x->machine].model };
		}
		if (r->queue >= 0) {
			p->qrel[nq++] = (struct qrel){ t, r->queue, (int64_t)r->nslots };
			p->queue_freed[r->queue] += (int64_t)r->nslots;
		}
	}
	memcpy(p->rel_model, p->rel_all, p->nrel * sizeof(*p->rel_all));
	qsort(p->rel_all, p->nrel, sizeof(*p->rel_all), rel_cmp_t);
	qsort(p->rel_model, p->nrel, sizeof(*p->rel_model), rel_cmp_model);
	qsort(p->qrel, nq, sizeof(*p->qrel), qrel_cmp);
	for (int x = 0, i = 0; x <= NMODELS; x++) {
		while ((size_t)i < p->nrel && p->rel_model[i].model < x)
			i++;
		p->model_at[x] = (size_t)i;
	}
	for (size_t q = 0, i = 0; q <= in->nqueues; q++) {
		while (i < nq && (size_t)p->qrel[i].queue < q)
			i++;
		p->queue_at[q] = i;
	}
	return true;
}

static bool pass_init(struct pass *p, struct jf_sched_machine *m, size_t nm)
{
	const struct jf_plan_in *in = p->in;
	size_t nm1 = nm ? nm : 1, nq = in->nqueues ? in->nqueues : 1;
	p->nm = nm;
	p->real = malloc(nm1 * sizeof(*p->real));
	p->eff = malloc(nm1 * sizeof(*p->eff));
	p->work = malloc(nm1 * sizeof(*p->work));
	p->pm = malloc(nm1 * sizeof(*p->pm));
	p->pidx = malloc(nm1 * sizeof(*p->pidx));
	p->wm = malloc(nm1 * sizeof(*p->wm));
	p->rall = calloc(nm1, sizeof(*p->rall));
	p->rmulti = calloc(nm1, sizeof(*p->rmulti));
	p->rcount = calloc(nm1 * 64, sizeof(*p->rcount));
	p->wcount = malloc(nm1 * 64 * sizeof(*p->wcount));
	p->wstamp = calloc(nm1, sizeof(*p->wstamp));
	p->by_model = malloc(nm1 * sizeof(*p->by_model));
	p->last = malloc(nm1 * sizeof(*p->last));
	p->last_raw = malloc(nm1 * sizeof(*p->last_raw));
	p->used = calloc(nq, sizeof(*p->used));
	p->reserved = calloc(nq, sizeof(*p->reserved));
	if (!p->real || !p->eff || !p->work || !p->pm || !p->pidx || !p->wm || !p->rall ||
	    !p->rmulti || !p->rcount || !p->wcount || !p->wstamp || !p->by_model || !p->last ||
	    !p->last_raw || !p->used || !p->reserved || !index_running(p, m))
		return false;
	size_t count[NMODELS + 1] = { 0 };
	for (size_t i = 0; i < nm; i++)
		count[m[i].model + 1]++;
	for (int x = 0; x < NMODELS; x++)
		count[x + 1] += count[x];
	memcpy(p->machines_at, count, sizeof(count));
	for (size_t i = 0; i < nm; i++)
		p->by_model[count[m[i].model]++] = i;
	if (nm) {
		memcpy(p->real, m, nm * sizeof(*m));
		memcpy(p->eff, m, nm * sizeof(*m));
		memcpy(p->last, m, nm * sizeof(*m));
	}
	for (size_t i = 0; i < nm; i++)
		p->last_raw[i] = m[i].gpu_free;
	for (size_t i = 0; i < p->nrel; i++) {
		const struct rel *x = &p->rel_all[i];
		p->last_raw[x->machine] |= x->mask;
		p->last[x->machine].cpu_free += x->cpu;
		p->last[x->machine].mem_free += x->mem;
	}
	for (size_t q = 0; q < in->nqueues; q++)
		p->used[q] = in->queues[q].held;
	p->max_at = INT64_MIN;
	p->nshapes = 0;
	return true;
}

void jf_plan_init(struct jf_plan *p)
{
	memset(p, 0, sizeof(*p));
}

void jf_plan_release(struct jf_plan *p)
{
	if (!p)
		return;
	free(p->starts);
	free(p->resv);
	free(p->skips);
	free(p->slots);
	jf_plan_init(p);
}

enum jf_err jf_plan_pass(struct jf_plan *out, struct jf_sched_machine *m, size_t nm,
			 const struct jf_plan_in *in, struct jf_error *err)
{
	out->nstarts = out->nresv = out->nskips = out->nslots = 0;
	enum jf_err rc = check_in(in, m, nm, err);
	if (rc != JF_OK)
		return rc;
	struct pass p = { .in = in, .out = out };
	if (!pass_init(&p, m, nm))
		goto nomem;
	for (size_t gi = 0; gi < in->ngroups; gi++) {
		const struct jf_plan_group *g = &in->groups[gi];
		int64_t want = g->parallelism - g->running;
		if (g->waiting < want)
			want = g->waiting;
		if (g->paused || want <= 0)
			continue;
		if (bad_request(g)) {
			if (!skip(&p, gi, JF_PLAN_BAD_REQUEST))
				goto nomem;
			continue;
		}
		int64_t cap = capacity(&p, g->queue);
		if (cap > 0 && g->req.nodes > cap) {
			if (!skip(&p, gi, JF_PLAN_OVER_CAPACITY))
				goto nomem;
			continue;
		}
		int r = 1;
		while (want > 0 && (r = try_start(&p, gi)) == 1)
			want--;
		if (r < 0)
			goto nomem;
		if (want == 0)
			continue;
		r = reserve(&p, gi);
		if (r < 0 || (r == 0 && !skip(&p, gi, JF_PLAN_OVER_CLUSTER)))
			goto nomem;
	}
	if (nm)
		memcpy(m, p.real, nm * sizeof(*m));
	pass_free(&p);
	return JF_OK;
nomem:
	pass_free(&p);
	out->nstarts = out->nresv = out->nskips = out->nslots = 0;
	return jf_error_set(err, JF_ENOMEM, 0, "plan: out of memory");
}
