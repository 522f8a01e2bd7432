/*
 * preempt.c - which spot tasks to preempt.  See preempt.h for the rules.
 *
 * COUNTING FITS
 *   The nodes of a gang are identical, and jf_sched_place() puts each on a
 *   machine where one node fits and takes exactly one node's worth there.
 *   So with copies(i) = how many nodes of req machine i could take on its
 *   own (free GPUs / gpus, cpu / cpu_milli, memory / mem_bytes, the least;
 *   0 on a machine of another model for a GPU request), req fits exactly
 *   when the copies add up to req->nodes or more.  Each search keeps one
 *   scratch copy of the machines with its victims given back, the copies
 *   per machine and their total: giving back or taking back a task costs
 *   O(its slots) and "does it fit" is one comparison.  Nothing copies the
 *   machines or calls jf_sched_place() per try.  (The unit test checks
 *   every result with jf_sched_place() itself.)  Copies are counted up to
 *   `cap` (req->nodes, or less if nm x nodes would overflow).
 *
 * THE SEARCH
 *   0. If req fits: nothing.  Give every candidate back: cpmax(i) is the
 *      most copies machine i can reach; their total short of req->nodes
 *      is JF_ENOENT.  A candidate helps only if it holds a slot on a
 *      machine with cpmax > copies now (another model never qualifies for
 *      a GPU request); the others take no part in anything below.
 *   1. Three greedy searches, each from m with nothing preempted:
 *      (a) cover.  For every machine, the cheapest set of the tasks on it
 *          (cost: their nodes, a gang counting whole) that gains g more
 *          copies there, for g = 1 .. GMAX, found by trying every subset
 *          of its tasks (at most KMAX of them: those freeing most per
 *          node).  Beside those, every gang alone, with what it gains on
 *          all its machines.  Each round preempts the pick with the least
 *          cost per copy still needed (ties: the larger gain, the younger,
 *          the lower machine); only machines a round touched are tried
 *          again.  This is the search that finds "one 4-GPU task, not
 *          four 1-GPU tasks".
 *      (b) fewest nodes first, then youngest: add helping candidates
 *          until req fits.
 *      (c) youngest first, the same way.  (b) and (c) always end fitting,
 *          since all helping candidates together do; (a) may give up when
 *          a machine has more than KMAX tasks.
 *   2. Prune each result: try to take back every victim, the most nodes
 *      first, then the oldest; it stays out when req still fits.  Fit only
 *      grows with what is free, so a victim found needed stays needed as
 *      others are taken back: one pass leaves the set irreducible.
 *   3. Keep the best of the three by rule 3 (fewest nodes, spare the
 *      oldest, fewer tasks, lowest indexes).
 *   Against the brute-force optimum on 60,000 random small clusters (the
 *   unit test's generator, 26,098 of them needing victims): (b) and (c)
 *   alone are optimal in 93.9 %, (a) alone in 99.85 %, all three in
 *   99.96 % (11 cases one node over).  A cover search failing is a task
 *   split over machines in a way no one machine's view sees.
 *
 * COST
 *   With S the candidates' slots and v the victims a search adds: O(nm +
 *   S) to set up; for (b) and (c) a heap, O(nc + v log nc); O(S) for each
 *   search's adding and pruning plus O(v log v) to sort the victims; for
 *   (a) O(2^k) per machine tried (k its tasks, 8 on a machine of eight
 *   1-GPU tasks), plus O(nm x GMAX + gang slots) per round.  About a
 *   millisecond on 1,000 machines and 8,000 tasks (tests/bench/bench_spot).
 */
#include "core/preempt.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define KMAX 10 /* tasks per machine whose every subset (a) tries */
#define GMAX 8  /* gains (a) tells apart per machine; larger count as GMAX */

struct item { /* a candidate's part on one machine */
	size_t cand;
	uint64_t mask;
	int64_t cpu, mem, cost, start;
	double worth; /* copies it frees, per node preempted */
};

struct sub { /* a machine with a subset of its items given back */
	uint64_t mask;
	int64_t cpu, mem, cost, oldest;
};

struct level { /* the cheapest subset gaining >= g copies on a machine */
	int64_t cost, oldest, gain;
	uint32_t sel; /* bit j = item j of machine_items() */
};

struct key { /* to sort candidates */
	int64_t nodes, start;
	size_t idx;
};

struct run {                        /* one search */
	struct jf_sched_machine *m; /* m with the victims given back */
	int64_t *cp;                /* copies per machine in m */
	int64_t total;
	unsigned char *in; /* per candidate: a victim now */
	size_t *v;         /* the victims */
	size_t nv;
	int64_t nodes; /* their nslots, added up */
};

struct ctx {
	const struct jf_sched_machine *m0;
	size_t nm;
	const struct jf_sched_req *req;
	const struct jf_preempt_cand *cand;
	size_t nc;
	int64_t need, cap;
	int64_t *cp0, *cpmax, total0;
	unsigned char *helps;
	size_t *off, *len, *ent; /* per machine, the helping candidates on it */
	size_t maxlen;
	struct key *keys;
	struct item *items;
	struct sub *subs;
	struct level *lev;    /* GMAX per machine */
	unsigned char *dirty; /* per machine: lev is stale */
	bool probing;         /* giving back only to measure: lev stays */
	int64_t *tmp_a, *tmp_b;
	struct run run[2];
};

/* ---- counting copies ---- */

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static int64_t per_dim(int64_t avail, int64_t need, int64_t cap)
{
	if (need <= 0)
		return avail >= need ? cap : 0;
	return avail < need ? 0 : min64(avail / need, cap);
}

/* As jf_sched_place()'s fit test, counted: nodes of r machine x can take. */
static int64_t copies(const struct jf_sched_machine *x, const struct jf_sched_req *r, int64_t cap)
{
	int64_t n = cap;

	if (r->model >= 0 && r->gpus > 0) {
		if (x->model != r->model)
			return 0;
		n = min64(n, jf_popcount64(x->gpu_free) / r->gpus);
	}
	n = min64(n, per_dim(x->cpu_free, r->cpu_milli, cap));
	return min64(n, per_dim(x->mem_free, r->mem_bytes, cap));
}

/* ---- a search's scratch machines ---- */

static void run_reset(struct ctx *x, struct run *r)
{
	memcpy(r->m, x->m0, x->nm * sizeof(*r->m));
	memcpy(r->cp, x->cp0, x->nm * sizeof(*r->cp));
	memset(r->in, 0, x->nc);
	r->total = x->total0;
	r->nv = 0;
	r->nodes = 0;
}

static bool run_fits(const struct ctx *x, const struct run *r)
{
	return r->total >= x->need;
}

static void recount(struct ctx *x, struct run *r, size_t i)
{
	int64_t c = copies(&r->m[i], x->req, x->cap);

	r->total += c - r->cp[i];
	r->cp[i] = c;
	if (!x->probing)
		x->dirty[i] = 1;
}

static void give_slots(struct ctx *x, struct run *r, size_t k)
{
	const struct jf_preempt_cand *c = &x->cand[k];

	for (size_t s = 0; s < c->nslots; s++) {
		if (c->slots[s].machine >= x->nm)
			continue;
		jf_sched_release(r->m, &c->slots[s]);
		recount(x, r, c->slots[s].machine);
	}
}

/* The inverse of give_slots() (the slots were held, so not free in m). */
static void take_slots(struct ctx *x, struct run *r, size_t k)
{
	const struct jf_preempt_cand *c = &x->cand[k];

	for (size_t s = 0; s < c->nslots; s++) {
		const struct jf_sched_slot *sl = &c->slots[s];
		struct jf_sched_machine *y;

		if (sl->machine >= x->nm)
			continue;
		y = &r->m[sl->machine];
		y->gpu_free &= ~sl->gpu_mask;
		y->cpu_free -= sl->cpu_milli;
		y->mem_free -= sl->mem_bytes;
		recount(x, r, sl->machine);
	}
}

static void add_victim(struct ctx *x, struct run *r, size_t k)
{
	give_slots(x, r, k);
	r->in[k] = 1;
	r->v[r->nv++] = k;
	r->nodes += (int64_t)x->cand[k].nslots;
}

/* ---- orders ---- */

static int cmp_fewest(const void *a, const void *b) /* fewest nodes, youngest */
{
	const struct key *p = a, *q = b;

	if (p->nodes != q->nodes)
		return p->nodes < q->nodes ? -1 : 1;
	if (p->start != q->start)
		return p->start > q->start ? -1 : 1;
	return p->idx < q->idx ? -1 : p->idx > q->idx;
}

static int cmp_youngest(const void *a, const void *b) /* youngest, fewest nodes */
{
	const struct key *p = a, *q = b;

	if (p->start != q->start)
		return p->start > q->start ? -1 : 1;
	if (p->nodes != q->nodes)
		return p->nodes < q->nodes ? -1 : 1;
	return p->idx < q->idx ? -1 : p->idx > q->idx;
}

/* Pruning tries to spare the dearest first, then the oldest, then the
 * highest index: what stays preempted is cheap, young, low. */
static int cmp_prune(const void *a, const void *b)
{
	const struct key *p = a, *q = b;

	if (p->nodes != q->nodes)
		return p->nodes > q->nodes ? -1 : 1;
	if (p->start != q->start)
		return p->start < q->start ? -1 : 1;
	return p->idx > q->idx ? -1 : p->idx < q->idx;
}

static int cmp_size(const void *a, const void *b)
{
	size_t p = *(const size_t *)a, q = *(const size_t *)b;

	return p < q ? -1 : p > q;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t p = *(const int64_t *)a, q = *(const int64_t *)b;

	return p < q ? -1 : p > q;
}

static struct key key_of(const struct ctx *x, size_t k)
{
	return (struct key){ (int64_t)x->cand[k].nslots, x->cand[k].start_ms, k };
}

/* ---- (b) and (c): add in one order until it fits ---- */

static void sift_down(struct key *h, size_t n, size_t i, int (*cmp)(const void *, const void *))
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct key t;

		if (l < n && cmp(&h[l], &h[m]) < 0)
			m = l;
		if (l + 1 < n && cmp(&h[l + 1], &h[m]) < 0)
			m = l + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* The helping candidates in a heap, taken in cmp's order while req does
 * not fit: O(nc) plus O(log nc) per victim, where sorting them all would
 * cost O(nc log nc) for the few that are usually needed. */
static bool search_order(struct ctx *x, struct run *r, int (*cmp)(const void *, const void *))
{
	size_t n = 0;

	for (size_t k = 0; k < x->nc; k++)
		if (x->helps[k])
			x->keys[n++] = key_of(x, k);
	for (size_t i = n / 2; i-- > 0;)
		sift_down(x->keys, n, i, cmp);
	run_reset(x, r);
	while (n > 0 && !run_fits(x, r)) {
		size_t k = x->keys[0].idx;

		x->keys[0] = x->keys[--n];
		sift_down(x->keys, n, 0, cmp);
		add_victim(x, r, k);
	}
	return run_fits(x, r);
}

/* ---- (a): machine cover ---- */

/* What req's node count a task's part frees, per node of the task. */
static double item_worth(const struct ctx *x, const struct item *it)
{
	const struct jf_sched_req *r = x->req;
	double w = 1e300;

	if (r->model >= 0 && r->gpus > 0)
		w = (double)jf_popcount64(it->mask) / r->gpus;
	if (r->cpu_milli > 0 && (double)it->cpu / (double)r->cpu_milli < w)
		w = (double)it->cpu / (double)r->cpu_milli;
	if (r->mem_bytes > 0 && (double)it->mem / (double)r->mem_bytes < w)
		w = (double)it->mem / (double)r->mem_bytes;
	return w / (double)it->cost;
}

static int cmp_worth(const void *a, const void *b)
{
	const struct item *p = a, *q = b;

	if (p->worth != q->worth)
		return p->worth > q->worth ? -1 : 1;
	if (p->start != q->start)
		return p->start > q->start ? -1 : 1;
	return p->cand < q->cand ? -1 : p->cand > q->cand;
}

/* The tasks on machine i not preempted in r, into x->items: at most KMAX,
 * the ones freeing most per node.  The same state gives the same list. */
static size_t machine_items(struct ctx *x, const struct run *r, size_t i)
{
	size_t k = 0;

	for (size_t e = x->off[i]; e < x->off[i] + x->len[i]; e++) {
		const struct jf_preempt_cand *c = &x->cand[x->ent[e]];
		struct item *it = &x->items[k];

		if (r->in[x->ent[e]])
			continue;
		*it = (struct item){ .cand = x->ent[e],
				     .cost = (int64_t)c->nslots,
				     .start = c->start_ms };
		for (size_t s = 0; s < c->nslots; s++) {
			if (c->slots[s].machine != i)
				continue;
			it->mask |= c->slots[s].gpu_mask;
			it->cpu += c->slots[s].cpu_milli;
			it->mem += c->slots[s].mem_bytes;
		}
		it->worth = item_worth(x, it);
		k++;
	}
	if (k > KMAX) {
		qsort(x->items, k, sizeof(*x->items), cmp_worth);
		k = KMAX;
	}
	return k;
}

static bool level_better(const struct level *a, const struct level *b)
{
	if (a->cost != b->cost)
		return a->cost < b->cost;
	if (a->oldest != b->oldest)
		return a->oldest > b->oldest;
	return a->gain > b->gain;
}

/* Every subset of machine i's items, each built from a smaller one: the
 * cheapest per gain, then per "gain at least g". */
static void machine_levels(struct ctx *x, const struct run *r, size_t i)
{
	size_t k = machine_items(x, r, i);
	struct level *lev = &x->lev[i * GMAX];
	struct jf_sched_machine t = r->m[i];
	struct sub *s = x->subs;

	for (int g = 0; g < GMAX; g++)
		lev[g] = (struct level){ INT64_MAX, INT64_MIN, 0, 0 };
	s[0] = (struct sub){ t.gpu_free, t.cpu_free, t.mem_free, 0, INT64_MAX };
	for (uint32_t set = 1; set < (UINT32_C(1) << k); set++) {
		const struct item *it = &x->items[__builtin_ctz(set)];
		const struct sub *p = &s[set & (set - 1)];
		struct sub *q = &s[set];
		struct level l;
		int64_t gain;

		*q = (struct sub){ p->mask | it->mask, p->cpu + it->cpu, p->mem + it->mem,
				   p->cost + it->cost, min64(p->oldest, it->start) };
		t.gpu_free = q->mask;
		t.cpu_free = q->cpu;
		t.mem_free = q->mem;
		gain = copies(&t, x->req, x->cap) - r->cp[i];
		if (gain <= 0)
			continue;
		l = (struct level){ q->cost, q->oldest, gain, set };
		if (level_better(&l, &lev[min64(gain, GMAX) - 1]))
			lev[min64(gain, GMAX) - 1] = l;
	}
	for (int g = GMAX - 1; g > 0; g--)
		if (level_better(&lev[g], &lev[g - 1]))
			lev[g - 1] = lev[g];
	x->dirty[i] = 0;
}

/* One round's choice: a set of tasks on one machine, or one gang. */
struct pick {
	size_t machine; /* nm for a gang */
	size_t gang;    /* SIZE_MAX for a machine's set */
	uint32_t sel;   /* the machine's set */
	int64_t cost, oldest;
	int64_t geff; /* copies it gains that are still needed */
};

static bool pick_better(const struct pick *a, const struct pick *b)
{
	/* cost per needed copy; products in double: exact below 2^53 nodes */
	double pa, pb;

	if (b->cost == 0)
		return true; /* b is no pick yet */
	pa = (double)a->cost * (double)b->geff;
	pb = (double)b->cost * (double)a->geff;
	if (pa != pb)
		return pa < pb;
	if (a->geff != b->geff)
		return a->geff > b->geff;
	if (a->oldest != b->oldest)
		return a->oldest > b->oldest;
	if (a->machine != b->machine)
		return a->machine < b->machine;
	return a->gang < b->gang;
}

/* The best set of tasks on one machine, over all machines, into *best. */
static void pick_machine(struct ctx *x, struct run *r, int64_t still, struct pick *best)
{
	for (size_t i = 0; i < x->nm; i++) {
		if (r->cp[i] >= x->cpmax[i])
			continue;
		if (x->dirty[i])
			machine_levels(x, r, i);
		for (int g = 0; g < GMAX && x->lev[i * GMAX + g].cost != INT64_MAX; g++) {
			const struct level *l = &x->lev[i * GMAX + g];
			struct pick p = { i,       SIZE_MAX,  l->sel,
					  l->cost, l->oldest, min64(l->gain, still) };

			if (pick_better(&p, best))
				*best = p;
			if (l->gain >= still)
				break;
		}
	}
}

/* A gang's nodes on other machines count too, which a machine's sets do
 * not see: each gang alone, its gain over all machines, if better. */
static void pick_gang(struct ctx *x, struct run *r, int64_t still, struct pick *best)
{
	for (size_t k = 0; k < x->nc; k++) {
		int64_t before = r->total, gain;
		struct pick p;

		if (!x->helps[k] || r->in[k] || x->cand[k].nslots < 2)
			continue;
		x->probing = true;
		give_slots(x, r, k);
		gain = r->total - before;
		take_slots(x, r, k);
		x->probing = false;
		p = (struct pick){ x->nm,
				   k,
				   0,
				   (int64_t)x->cand[k].nslots,
				   x->cand[k].start_ms,
				   min64(gain, still) };
		if (gain > 0 && pick_better(&p, best))
			*best = p;
	}
}

/* One round: the best pick, preempted.  false: nothing gains a copy
 * (more than KMAX tasks on the machines where it matters). */
static bool cover_round(struct ctx *x, struct run *r)
{
	int64_t still = x->need - r->total;
	struct pick best = { 0 };

	pick_machine(x, r, still, &best);
	pick_gang(x, r, still, &best);
	if (best.cost == 0)
		return false;
	if (best.gang != SIZE_MAX) {
		add_victim(x, r, best.gang);
		return true;
	}
	/* the machine is clean, so its items are the ones its levels were built on */
	machine_items(x, r, best.machine);
	for (size_t j = 0; best.sel; j++, best.sel >>= 1)
		if (best.sel & 1)
			add_victim(x, r, x->items[j].cand);
	return true;
}

static bool search_cover(struct ctx *x, struct run *r)
{
	run_reset(x, r);
	memset(x->dirty, 1, x->nm);
	while (!run_fits(x, r))
		if (!cover_round(x, r))
			return false;
	return true;
}

/* ---- pruning and comparing ---- */

static void prune(struct ctx *x, struct run *r)
{
	size_t n = 0;

	for (size_t j = 0; j < r->nv; j++)
		x->keys[j] = key_of(x, r->v[j]);
	qsort(x->keys, r->nv, sizeof(*x->keys), cmp_prune);
	for (size_t j = 0; j < r->nv; j++) {
		size_t k = x->keys[j].idx;

		take_slots(x, r, k);
		if (run_fits(x, r)) {
			r->in[k] = 0;
			r->nodes -= (int64_t)x->cand[k].nslots;
		} else {
			give_slots(x, r, k);
		}
	}
	for (size_t j = 0; j < r->nv; j++)
		if (r->in[r->v[j]])
			r->v[n++] = r->v[j];
	r->nv = n;
	qsort(r->v, n, sizeof(*r->v), cmp_size);
}

/* a better than b by rule 3; both pruned (victims in index order). */
static bool result_better(struct ctx *x, const struct run *a, const struct run *b)
{
	size_t n = a->nv < b->nv ? a->nv : b->nv;

	if (a->nodes != b->nodes)
		return a->nodes < b->nodes;
	for (size_t j = 0; j < a->nv; j++)
		x->tmp_a[j] = x->cand[a->v[j]].start_ms;
	for (size_t j = 0; j < b->nv; j++)
		x->tmp_b[j] = x->cand[b->v[j]].start_ms;
	qsort(x->tmp_a, a->nv, sizeof(*x->tmp_a), cmp_i64);
	qsort(x->tmp_b, b->nv, sizeof(*x->tmp_b), cmp_i64);
	for (size_t j = 0; j < n; j++)
		if (x->tmp_a[j] != x->tmp_b[j])
			return x->tmp_a[j] > x->tmp_b[j];
	if (a->nv != b->nv)
		return a->nv < b->nv;
	for (size_t j = 0; j < n; j++)
		if (a->v[j] != b->v[j])
			return a->v[j] < b->v[j];
	return false;
}

/* ---- setting up ---- */

static void ctx_release(struct ctx *x)
{
	for (int i = 0; i < 2; i++) {
		free(x->run[i].m);
		free(x->run[i].cp);
		free(x->run[i].in);
		free(x->run[i].v);
	}
	free(x->cp0);
	free(x->cpmax);
	free(x->helps);
	free(x->off);
	free(x->len);
	free(x->ent);
	free(x->keys);
	free(x->items);
	free(x->subs);
	free(x->lev);
	free(x->dirty);
	free(x->tmp_a);
	free(x->tmp_b);
}

static bool ctx_alloc(struct ctx *x)
{
	size_t nm = x->nm, nc = x->nc;

	for (int i = 0; i < 2; i++) {
		x->run[i].m = malloc(nm * sizeof(*x->run[i].m));
		x->run[i].cp = malloc(nm * sizeof(*x->run[i].cp));
		x->run[i].in = malloc(nc);
		x->run[i].v = malloc(nc * sizeof(*x->run[i].v));
		if (!x->run[i].m || !x->run[i].cp || !x->run[i].in || !x->run[i].v)
			return false;
	}
	x->cp0 = malloc(nm * sizeof(*x->cp0));
	x->cpmax = malloc(nm * sizeof(*x->cpmax));
	x->helps = calloc(nc, 1);
	x->off = calloc(nm + 1, sizeof(*x->off));
	x->len = calloc(nm, sizeof(*x->len));
	x->keys = malloc(nc * sizeof(*x->keys));
	x->subs = malloc(((size_t)1 << KMAX) * sizeof(*x->subs));
	x->lev = malloc(nm * GMAX * sizeof(*x->lev));
	x->dirty = malloc(nm);
	x->tmp_a = malloc(nc * sizeof(*x->tmp_a));
	x->tmp_b = malloc(nc * sizeof(*x->tmp_b));
	return x->cp0 && x->cpmax && x->helps && x->off && x->len && x->keys && x->subs && x->lev &&
	       x->dirty && x->tmp_a && x->tmp_b;
}

static bool useful(const struct ctx *x, size_t i)
{
	return i < x->nm && x->cpmax[i] > x->cp0[i];
}

/* helps[], and per machine the helping candidates with a slot on it, each
 * once, in index order.  false: out of memory. */
static bool index_machines(struct ctx *x)
{
	size_t total = 0;

	for (size_t k = 0; k < x->nc; k++)
		for (size_t s = 0; s < x->cand[k].nslots; s++)
			if (useful(x, x->cand[k].slots[s].machine)) {
				x->helps[k] = 1;
				x->off[x->cand[k].slots[s].machine + 1]++;
				total++;
			}
	for (size_t i = 0; i < x->nm; i++)
		x->off[i + 1] += x->off[i];
	x->ent = malloc((total ? total : 1) * sizeof(*x->ent));
	if (!x->ent)
		return false;
	for (size_t k = 0; k < x->nc; k++)
		for (size_t s = 0; s < x->cand[k].nslots; s++) {
			size_t i = x->cand[k].slots[s].machine;

			if (!useful(x, i) || (x->len[i] && x->ent[x->off[i] + x->len[i] - 1] == k))
				continue;
			x->ent[x->off[i] + x->len[i]++] = k;
		}
	for (size_t i = 0; i < x->nm; i++)
		if (x->len[i] > x->maxlen)
			x->maxlen = x->len[i];
	x->items = malloc((x->maxlen ? x->maxlen : 1) * sizeof(*x->items));
	return x->items != NULL;
}

/* cp0, cpmax, total0.  false: even every candidate preempted leaves req
 * not fitting. */
static bool measure(struct ctx *x)
{
	struct run *r = &x->run[0];

	x->total0 = 0;
	for (size_t i = 0; i < x->nm; i++) {
		x->cp0[i] = copies(&x->m0[i], x->req, x->cap);
		x->total0 += x->cp0[i];
	}
	run_reset(x, r);
	for (size_t k = 0; k < x->nc; k++)
		give_slots(x, r, k);
	memcpy(x->cpmax, r->cp, x->nm * sizeof(*x->cpmax));
	return run_fits(x, r);
}

/* The three searches, pruned; the best into victims.  false: none ended
 * fitting (cannot happen: (b) and (c) add every helping candidate). */
static bool choose(struct ctx *x, size_t *victims, size_t *nv)
{
	struct run *best = &x->run[0], *cur = &x->run[1], *t;
	bool have = false;

	for (int s = 0; s < 3; s++) {
		bool ok = s == 0 ? search_cover(x, cur)
				 : search_order(x, cur, s == 1 ? cmp_fewest : cmp_youngest);

		if (!ok)
			continue;
		prune(x, cur);
		if (!have || result_better(x, cur, best)) {
			t = best;
			best = cur;
			cur = t;
			have = true;
		}
	}
	if (!have)
		return false;
	memcpy(victims, best->v, best->nv * sizeof(*victims));
	*nv = best->nv;
	return true;
}

enum jf_err jf_preempt_choose(const struct jf_sched_machine *m, size_t nm,
			      const struct jf_sched_req *req, const struct jf_preempt_cand *cand,
			      size_t nc, size_t *victims, size_t *nv)
{
	struct ctx x = {
		.m0 = m, .nm = nm, .req = req, .cand = cand, .nc = nc, .need = req->nodes
	};
	int64_t total = 0;
	enum jf_err rc = JF_OK;

	*nv = 0;
	if (req->nodes <= 0)
		return JF_OK;
	x.cap = min64(req->nodes, INT64_MAX / (int64_t)(nm + 1));
	for (size_t i = 0; i < nm && total < x.need; i++)
		total += copies(&m[i], req, x.cap);
	if (total >= x.need)
		return JF_OK;
	if (nc == 0 || nm == 0)
		return JF_ENOENT;
	if (!ctx_alloc(&x))
		rc = JF_ENOMEM;
	else if (!measure(&x))
		rc = JF_ENOENT;
	else if (!index_machines(&x))
		rc = JF_ENOMEM;
	else if (!choose(&x, victims, nv))
		rc = JF_ENOENT;
	ctx_release(&x);
	return rc;
}
