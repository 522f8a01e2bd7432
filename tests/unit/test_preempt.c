/*
 * test_preempt.c - core/preempt.h: which spot tasks to preempt.
 *
 * Hand-built cases on the built-in cluster pin the product's rules (none
 * when it fits, the youngest, gangs whole, fewest nodes, other models
 * never, CPU-only requests).  The property test draws 2,000 small random
 * clusters and checks every answer with jf_sched_place() itself: the
 * victims make req fit, dropping any one of them does not, ENOENT only
 * when nothing does; and it compares the nodes preempted with the optimum
 * found by trying every subset of the candidates, printing how often the
 * greedy choice is worse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/preempt.h"

#define GIB (INT64_C(1) << 30)

/* ---- helpers ---- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(0x2545F4914F6CDD1D);
}

static int64_t rnd(int64_t lo, int64_t hi) /* inclusive */
{
	return lo + (int64_t)(rng() % (uint64_t)(hi - lo + 1));
}

/* Does req fit on m once the victims (but `skip`, SIZE_MAX: none) are
 * given back?  jf_sched_place() on a copy decides. */
static bool fits_after(const struct jf_sched_machine *m, size_t nm, const struct jf_sched_req *req,
		       const struct jf_preempt_cand *cand, const size_t *v, size_t nv, size_t skip)
{
	struct jf_sched_machine *t = malloc((nm ? nm : 1) * sizeof(*t));
	struct jf_sched_slot *slots =
		malloc((size_t)(req->nodes > 0 ? req->nodes : 1) * sizeof(*slots));
	assert_non_null(t);
	assert_non_null(slots);
	memcpy(t, m, nm * sizeof(*t));
	for (size_t j = 0; j < nv; j++) {
		if (j == skip)
			continue;
		for (size_t s = 0; s < cand[v[j]].nslots; s++)
			jf_sched_release(t, &cand[v[j]].slots[s]);
	}
	bool ok = jf_sched_place(t, nm, req, slots);
	free(slots);
	free(t);
	return ok;
}

static int64_t nodes_of(const struct jf_preempt_cand *cand, const size_t *v, size_t nv)
{
	int64_t n = 0;
	for (size_t j = 0; j < nv; j++)
		n += (int64_t)cand[v[j]].nslots;
	return n;
}

/* The rules every JF_OK answer with victims must keep: in range, no
 * duplicates, in index order, fits, irreducible. */
static void check_answer(const struct jf_sched_machine *m, size_t nm,
			 const struct jf_sched_req *req, const struct jf_preempt_cand *cand,
			 size_t nc, const size_t *v, size_t nv)
{
	for (size_t j = 0; j < nv; j++) {
		assert_true(v[j] < nc);
		if (j > 0)
			assert_true(v[j - 1] < v[j]);
	}
	assert_true(fits_after(m, nm, req, cand, v, nv, SIZE_MAX));
	for (size_t j = 0; j < nv; j++)
		assert_false(fits_after(m, nm, req, cand, v, nv, j));
}

static struct jf_cluster *builtin(void)
{
	struct jf_cluster *c = jf_cluster_builtin();
	assert_non_null(c);
	return c;
}

static struct jf_sched_machine *machines_of(const struct jf_cluster *c)
{
	struct jf_sched_machine *m = calloc(c->nmachines, sizeof(*m));
	assert_non_null(m);
	jf_sched_machines_init(c, m);
	return m;
}

static size_t machine_named(const struct jf_cluster *c, const char *name)
{
	for (size_t i = 0; i < c->nmachines; i++)
		if (strcmp(c->machines[i].name, name) == 0)
			return i;
	fail_msg("no machine %s", name);
	return 0;
}

static struct jf_sched_req gpu_req(const struct jf_cluster *c, const char *model, int gpus,
				   int64_t nodes)
{
	int mi = jf_cluster_model_index(c, model);
	assert_true(mi >= 0);
	return (struct jf_sched_req){ mi, gpus, gpus * c->models[mi].cpu_milli_per_gpu,
				      gpus * c->models[mi].mem_bytes_per_gpu, nodes };
}

/* Hold GPUs `mask` of machine `name` (with their share of cores and
 * memory) into *slot. */
static void hold(const struct jf_cluster *c, struct jf_sched_machine *m, const char *name,
		 uint64_t mask, struct jf_sched_slot *slot)
{
	size_t i = machine_named(c, name);
	const struct jf_gpu_model *gm = &c->models[c->machines[i].model];
	int g = jf_popcount64(mask);
	*slot = (struct jf_sched_slot){ i, mask, g * gm->cpu_milli_per_gpu,
					g * gm->mem_bytes_per_gpu };
	assert_true(jf_sched_take(m, c->nmachines, slot));
}

static enum jf_err choose(const struct jf_sched_machine *m, size_t nm,
			  const struct jf_sched_req *req, const struct jf_preempt_cand *cand,
			  size_t nc, size_t *v, size_t *nv)
{
	enum jf_err rc = jf_preempt_choose(m, nm, req, cand, nc, v, nv);
	if (rc == JF_OK && *nv > 0)
		check_answer(m, nm, req, cand, nc, v, *nv);
	return rc;
}

/* ---- the rules on hand-built cases ---- */

static void test_fits_already(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_sched_machine *m = machines_of(c);
	size_t nm = c->nmachines, v[4], nv = 99;
	struct jf_sched_slot s[2];

	/* an empty cluster: nothing to preempt, with or without candidates */
	struct jf_sched_req one = gpu_req(c, "4090", 1, 1);
	assert_int_equal(jf_preempt_choose(m, nm, &one, NULL, 0, v, &nv), JF_OK);
	assert_int_equal(nv, 0);
	hold(c, m, "4090-0", 0xff, &s[0]);
	struct jf_preempt_cand cand[1] = { { 7, &s[0], 1, 1000 } };
	nv = 99;
	assert_int_equal(jf_preempt_choose(m, nm, &one, cand, 1, v, &nv), JF_OK);
	assert_int_equal(nv, 0);

	/* the only A800 full of on-demand work and no candidates: ENOENT */
	hold(c, m, "a800-0", 0xff, &s[1]);
	struct jf_sched_req a = gpu_req(c, "A800", 1, 1);
	nv = 99;
	assert_int_equal(jf_preempt_choose(m, nm, &a, NULL, 0, v, &nv), JF_ENOENT);
	assert_int_equal(nv, 0);
	/* a candidate that does not help (a 4090 task) changes nothing */
	nv = 99;
	assert_int_equal(jf_preempt_choose(m, nm, &a, cand, 1, v, &nv), JF_ENOENT);
	assert_int_equal(nv, 0);
	/* five whole 4090 machines: there are four, whatever is preempted */
	struct jf_sched_req five = gpu_req(c, "4090", 8, 5);
	assert_int_equal(jf_preempt_choose(m, nm, &five, cand, 1, v, &nv), JF_ENOENT);
	/* nodes 0 always fits */
	struct jf_sched_req none = gpu_req(c, "A800", 1, 0);
	assert_int_equal(jf_preempt_choose(m, nm, &none, cand, 1, v, &nv), JF_OK);
	assert_int_equal(nv, 0);
	free(m);
	jf_cluster_free(c);
}

static void test_youngest_four(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_sched_machine *m = machines_of(c);
	size_t nm = c->nmachines, v[8], nv;
	struct jf_sched_slot s[8];
	struct jf_preempt_cand cand[8];
	/* started at 100 .. 800 in a shuffled order */
	static const int64_t start[8] = { 300, 800, 100, 600, 200, 700, 500, 400 };

	for (int i = 0; i < 8; i++) {
		hold(c, m, "a800-0", UINT64_C(1) << i, &s[i]);
		cand[i] = (struct jf_preempt_cand){ 100 + i, &s[i], 1, start[i] };
	}
	struct jf_sched_req four = gpu_req(c, "A800", 4, 1);
	assert_int_equal(choose(m, nm, &four, cand, 8, v, &nv), JF_OK);
	assert_int_equal(nv, 4);
	for (size_t j = 0; j < nv; j++)
		assert_true(cand[v[j]].start_ms >= 500);
	/* one GPU: the single youngest */
	struct jf_sched_req one = gpu_req(c, "A800", 1, 1);
	assert_int_equal(choose(m, nm, &one, cand, 8, v, &nv), JF_OK);
	assert_int_equal(nv, 1);
	assert_int_equal(cand[v[0]].start_ms, 800);
	free(m);
	jf_cluster_free(c);
}

/* A 2-node spot gang G (GPUs 0-3 of 4090-0 and 4090-1, the youngest). */
static void hold_gang(const struct jf_cluster *c, struct jf_sched_machine *m,
		      struct jf_sched_slot *g, struct jf_preempt_cand *cand)
{
	hold(c, m, "4090-0", 0x0f, &g[0]);
	hold(c, m, "4090-1", 0x0f, &g[1]);
	*cand = (struct jf_preempt_cand){ 1, g, 2, 900 };
}

static void test_fewer_nodes_than_gang(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_sched_machine *m = machines_of(c);
	size_t nm = c->nmachines, v[2], nv;
	struct jf_sched_slot g[2], big, od[3];
	struct jf_preempt_cand cand[2];

	hold_gang(c, m, g, &cand[0]);
	hold(c, m, "4090-2", 0xff, &big); /* an old 8-GPU spot task */
	cand[1] = (struct jf_preempt_cand){ 2, &big, 1, 100 };
	hold(c, m, "4090-0", 0xf0, &od[0]); /* the rest: on-demand */
	hold(c, m, "4090-1", 0xf0, &od[1]);
	hold(c, m, "4090-3", 0xff, &od[2]);

	/* 2 x 4 GPUs: the gang (2 nodes) or the 8-GPU task (1 node) would do */
	struct jf_sched_req two4 = gpu_req(c, "4090", 4, 2);
	assert_int_equal(choose(m, nm, &two4, cand, 2, v, &nv), JF_OK);
	assert_int_equal(nv, 1);
	assert_int_equal(v[0], 1);
	struct jf_sched_req one4 = gpu_req(c, "4090", 4, 1);
	assert_int_equal(choose(m, nm, &one4, cand, 2, v, &nv), JF_OK);
	assert_int_equal(nv, 1);
	assert_int_equal(v[0], 1);
	/* 3 x 4: both, the gang whole */
	struct jf_sched_req three4 = gpu_req(c, "4090", 4, 3);
	assert_int_equal(choose(m, nm, &three4, cand, 2, v, &nv), JF_OK);
	assert_int_equal(nv, 2);
	free(m);
	jf_cluster_free(c);
}

static void test_gang_whole(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_sched_machine *m = machines_of(c);
	size_t nm = c->nmachines, v[19], nv;
	struct jf_sched_slot g[2], t[2], small[16];
	struct jf_preempt_cand cand[19];

	hold_gang(c, m, g, &cand[0]);
	hold(c, m, "4090-0", 0xf0, &t[0]);
	hold(c, m, "4090-1", 0xf0, &t[1]);
	cand[1] = (struct jf_preempt_cand){ 2, &t[0], 1, 200 };
	cand[2] = (struct jf_preempt_cand){ 3, &t[1], 1, 300 };
	for (int i = 0; i < 16; i++) { /* 1-GPU tasks, young */
		hold(c, m, i < 8 ? "4090-2" : "4090-3", UINT64_C(1) << (i % 8), &small[i]);
		cand[3 + i] = (struct jf_preempt_cand){ 10 + i, &small[i], 1, 1000 + i };
	}
	/* two whole machines: gang + both halves' neighbours (4 nodes), not 16 */
	struct jf_sched_req two8 = gpu_req(c, "4090", 8, 2);
	assert_int_equal(choose(m, nm, &two8, cand, 19, v, &nv), JF_OK);
	assert_int_equal(nv, 3);
	assert_int_equal(v[0], 0);
	assert_int_equal(v[1], 1);
	assert_int_equal(v[2], 2);
	/* one whole machine: the gang and one neighbour (3 nodes, not 8);
	 * of the two, spare the older neighbour (started 200) */
	struct jf_sched_req one8 = gpu_req(c, "4090", 8, 1);
	assert_int_equal(choose(m, nm, &one8, cand, 19, v, &nv), JF_OK);
	assert_int_equal(nv, 2);
	assert_int_equal(v[0], 0);
	assert_int_equal(v[1], 2);
	/* four GPUs: one 4-GPU neighbour, the younger; never half the gang */
	struct jf_sched_req one4 = gpu_req(c, "4090", 4, 1);
	assert_int_equal(choose(m, nm, &one4, cand, 19, v, &nv), JF_OK);
	assert_int_equal(nv, 1);
	assert_int_equal(v[0], 2);
	free(m);
	jf_cluster_free(c);
}

static void test_other_model(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_sched_machine *m = machines_of(c);
	size_t nm = c->nmachines, v[8], nv;
	struct jf_sched_slot od[4], h[2], a[2];
	struct jf_preempt_cand cand[4];
	static const char *const n4090[4] = { "4090-0", "4090-1", "4090-2", "4090-3" };

	for (int i = 0; i < 4; i++)
		hold(c, m, n4090[i], i == 0 ? 0x7f : 0xff, &od[i]); /* on-demand */
	hold(c, m, "h800-0", 0xff, &h[0]);
	hold(c, m, "h800-1", 0xff, &h[1]);
	hold(c, m, "a800-0", 0xff, &a[0]);
	hold(c, m, "4090-0", 0x80, &a[1]);
	for (int i = 0; i < 2; i++)
		cand[i] = (struct jf_preempt_cand){ i, &h[i], 1, 5000 + i };
	cand[2] = (struct jf_preempt_cand){ 2, &a[0], 1, 6000 };
	cand[3] = (struct jf_preempt_cand){ 3, &a[1], 1, 10 };
	/* 4090 work: the young H800 and A800 tasks never help */
	struct jf_sched_req r = gpu_req(c, "4090", 1, 1);
	assert_int_equal(choose(m, nm, &r, cand, 3, v, &nv), JF_ENOENT);
	assert_int_equal(nv, 0);
	/* with one old 4090 spot task: that one */
	assert_int_equal(choose(m, nm, &r, cand, 4, v, &nv), JF_OK);
	assert_int_equal(nv, 1);
	assert_int_equal(v[0], 3);

	/* CPU-only (model -1): any machine, the youngest task that frees
	 * enough (every machine is full; l40s-0 holds nothing of ours) */
	struct jf_sched_slot l;
	hold(c, m, "l40s-0", 0xff, &l);
	struct jf_sched_req cpu = { -1, 0, 10000, 10 * GIB, 1 };
	assert_int_equal(choose(m, nm, &cpu, cand, 4, v, &nv), JF_OK);
	assert_int_equal(nv, 1);
	assert_int_equal(v[0], 2);
	/* two CPU-only nodes fit on the A800 it frees (128 cores): still one */
	cpu.nodes = 2;
	assert_int_equal(choose(m, nm, &cpu, cand, 4, v, &nv), JF_OK);
	assert_int_equal(nv, 1);
	assert_int_equal(v[0], 2);
	/* nodes bigger than a machine's 4090 slot (20 cores): not the 4090 task */
	cpu = (struct jf_sched_req){ -1, 0, 100000, 10 * GIB, 3 };
	assert_int_equal(choose(m, nm, &cpu, cand, 4, v, &nv), JF_OK);
	assert_int_equal(nv, 3);
	assert_int_equal(v[0], 0);
	assert_int_equal(v[1], 1);
	assert_int_equal(v[2], 2);
	free(m);
	jf_cluster_free(c);
}

/* More small tasks on one machine than the cover search tries at once. */
static void test_many_small(void **state)
{
	(void)state;
	struct jf_sched_machine m[1] = { { 0, 0, 0, 64000, 256 * GIB } };
	struct jf_sched_slot s[32];
	struct jf_preempt_cand cand[32];
	size_t v[32], nv;

	for (int i = 0; i < 32; i++) {
		s[i] = (struct jf_sched_slot){ 0, 0, 2000, 8 * GIB };
		m[0].cpu_free -= 2000;
		m[0].mem_free -= 8 * GIB;
		cand[i] = (struct jf_preempt_cand){ i, &s[i], 1, (i * 7) % 32 };
	}
	for (int64_t cores = 20; cores <= 30; cores += 10) {
		struct jf_sched_req r = { -1, 0, cores * 1000, 16 * GIB, 1 };
		assert_int_equal(choose(m, 1, &r, cand, 32, v, &nv), JF_OK);
		assert_int_equal(nv, (size_t)cores / 2);
		for (size_t j = 0; j < nv; j++)
			assert_true(cand[v[j]].start_ms >= 32 - (int64_t)nv);
	}
	struct jf_sched_req too_big = { -1, 0, 65000, GIB, 1 };
	assert_int_equal(choose(m, 1, &too_big, cand, 32, v, &nv), JF_ENOENT);
}

/* ---- random small clusters against the brute-force optimum ---- */

#define PM 6  /* machines, at most */
#define PC 10 /* candidates, at most */
#define PK 3  /* nodes of a spot task, at most */

static const int64_t CPG[3] = { 20000, 16000, 24000 };
static const int64_t MPG[3] = { 101 * GIB, 64 * GIB, 128 * GIB };

struct world {
	struct jf_sched_machine m[PM];
	size_t nm;
	struct jf_sched_slot slots[PC][PK];
	struct jf_preempt_cand cand[PC];
	size_t nc;
	struct jf_sched_req req;
};

static struct jf_sched_req random_shape(int64_t max_nodes)
{
	static const int gpus[] = { 1, 1, 2, 2, 4, 8 };
	struct jf_sched_req r = { .nodes = rng() % 3 == 0 ? rnd(2, max_nodes) : 1 };
	if (rng() % 7 == 0) {
		r.model = -1;
		r.cpu_milli = rnd(1, 32) * 1000;
		r.mem_bytes = rnd(1, 128) * GIB;
		return r;
	}
	r.model = (int)rnd(0, 2);
	r.gpus = gpus[rng() % 6];
	r.cpu_milli = r.gpus * (rng() % 4 ? CPG[r.model] : CPG[r.model] / 2);
	r.mem_bytes = r.gpus * (rng() % 4 ? MPG[r.model] : MPG[r.model] / 4);
	return r;
}

static void world_random(struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->nm = (size_t)rnd(2, PM);
	for (size_t i = 0; i < w->nm; i++) {
		int model = (int)rnd(0, 2), g = rng() % 3 ? 8 : 4;
		w->m[i] = (struct jf_sched_machine){ model, g, (UINT64_C(1) << g) - 1,
						     g * CPG[model], g * MPG[model] };
	}
	/* some on-demand work that is not ours to preempt */
	struct jf_sched_slot od[PK];
	for (int64_t j = rnd(0, 2); j > 0; j--) {
		struct jf_sched_req r = random_shape(2);
		jf_sched_place(w->m, w->nm, &r, od);
	}
	size_t want = (size_t)rnd(3, PC);
	for (int tries = 0; tries < 100 && w->nc < want; tries++) {
		struct jf_sched_req r = random_shape(PK);
		if (!jf_sched_place(w->m, w->nm, &r, w->slots[w->nc]))
			continue;
		w->cand[w->nc] = (struct jf_preempt_cand){ 1000 + (int64_t)w->nc, w->slots[w->nc],
							   (size_t)r.nodes, rnd(0, 50) };
		w->nc++;
	}
	/* half the time, on-demand work fills up what is left */
	for (int miss = 0; rng() % 2 && miss < 4;) {
		struct jf_sched_req r = random_shape(2);
		if (!jf_sched_place(w->m, w->nm, &r, od))
			miss++;
	}
	/* a request for a model the cluster has, no larger than its machine */
	w->req = random_shape(3);
	if (w->req.model >= 0) {
		const struct jf_sched_machine *x = &w->m[rng() % w->nm];
		int g = w->req.gpus < x->gpus ? w->req.gpus : x->gpus;
		w->req = (struct jf_sched_req){ x->model, g, g * CPG[x->model], g * MPG[x->model],
						w->req.nodes };
	}
}

/* Fewest nodes of any subset that makes req fit; -1 if none does. */
static int64_t brute_force(const struct world *w)
{
	int64_t best = -1;
	size_t v[PC];
	for (uint32_t set = 0; set < (UINT32_C(1) << w->nc); set++) {
		size_t nv = 0;
		for (size_t k = 0; k < w->nc; k++)
			if (set & (UINT32_C(1) << k))
				v[nv++] = k;
		int64_t n = nodes_of(w->cand, v, nv);
		if ((best < 0 || n < best) &&
		    fits_after(w->m, w->nm, &w->req, w->cand, v, nv, SIZE_MAX))
			best = n;
	}
	return best;
}

struct tally {
	int cases, fit, enoent, contested, worse, worst;
};

static void one_world(const struct world *w, struct tally *t)
{
	size_t v[PC], v2[PC], nv = 99, nv2 = 99;
	enum jf_err rc = jf_preempt_choose(w->m, w->nm, &w->req, w->cand, w->nc, v, &nv);
	enum jf_err rc2 = jf_preempt_choose(w->m, w->nm, &w->req, w->cand, w->nc, v2, &nv2);
	int64_t best = brute_force(w);

	assert_int_equal(rc, rc2); /* deterministic */
	assert_int_equal(nv, nv2);
	assert_memory_equal(v, v2, nv * sizeof(*v));
	t->cases++;
	if (best < 0) {
		assert_int_equal(rc, JF_ENOENT);
		assert_int_equal(nv, 0);
		t->enoent++;
		return;
	}
	assert_int_equal(rc, JF_OK);
	if (best == 0) {
		assert_int_equal(nv, 0);
		t->fit++;
		return;
	}
	assert_true(nv > 0);
	check_answer(w->m, w->nm, &w->req, w->cand, w->nc, v, nv);
	int64_t n = nodes_of(w->cand, v, nv);
	assert_true(n >= best);
	t->contested++;
	if (n > best) {
		t->worse++;
		if (n - best > t->worst)
			t->worst = (int)(n - best);
	}
}

static void test_property_optimum(void **state)
{
	(void)state;
	struct tally t = { 0 };
	struct world w;

	rng_state = UINT64_C(0x9E3779B97F4A7C15);
	for (int i = 0; i < 2000; i++) {
		world_random(&w);
		one_world(&w, &t);
	}
	printf("preempt: %d random clusters: %d fit already, %d ENOENT, %d needed victims; "
	       "greedy optimal in %d of %d (%.2f%%), worse in %d (by at most %d node%s)\n",
	       t.cases, t.fit, t.enoent, t.contested, t.contested - t.worse, t.contested,
	       t.contested ? 100.0 * (t.contested - t.worse) / t.contested : 100.0, t.worse,
	       t.worst, t.worst == 1 ? "" : "s");
	/* the cases must exercise the choice, and it must be good */
	assert_true(t.contested >= 300);
	assert_true(t.worse * 50 <= t.contested);
}

/* ---- a larger cluster: determinism and validity ---- */

static void test_determinism_large(void **state)
{
	(void)state;
	enum { NM = 200, NC = 2000 };
	struct jf_sched_machine *m = calloc(NM, sizeof(*m));
	struct jf_sched_slot *slots = calloc(NC * PK, sizeof(*slots));
	struct jf_preempt_cand *cand = calloc(NC, sizeof(*cand));
	size_t *v = calloc(NC, sizeof(*v)), *v2 = calloc(NC, sizeof(*v2)), nc = 0;
	assert_true(m && slots && cand && v && v2);

	rng_state = 42;
	for (size_t i = 0; i < NM; i++) {
		int model = (int)(i % 3);
		m[i] = (struct jf_sched_machine){ model, 8, 0xff, 8 * CPG[model], 8 * MPG[model] };
	}
	for (int tries = 0; tries < 20000 && nc < NC; tries++) {
		struct jf_sched_req r = random_shape(PK);
		if (!jf_sched_place(m, NM, &r, &slots[nc * PK]))
			continue;
		cand[nc] = (struct jf_preempt_cand){ (int64_t)nc, &slots[nc * PK], (size_t)r.nodes,
						     rnd(0, 100000) };
		nc++;
	}
	for (int q = 0; q < 30; q++) {
		struct jf_sched_req r = random_shape(4);
		size_t nv, nv2;
		enum jf_err rc = jf_preempt_choose(m, NM, &r, cand, nc, v, &nv);
		enum jf_err rc2 = jf_preempt_choose(m, NM, &r, cand, nc, v2, &nv2);
		assert_int_equal(rc, rc2);
		assert_int_equal(nv, nv2);
		assert_memory_equal(v, v2, nv * sizeof(*v));
		if (rc == JF_OK && nv > 0)
			check_answer(m, NM, &r, cand, nc, v, nv);
		else if (rc == JF_ENOENT)
			assert_false(fits_after(m, NM, &r, cand, NULL, 0, SIZE_MAX));
	}
	free(v2);
	free(v);
	free(cand);
	free(slots);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fits_already),
		cmocka_unit_test(test_youngest_four),
		cmocka_unit_test(test_fewer_nodes_than_gang),
		cmocka_unit_test(test_gang_whole),
		cmocka_unit_test(test_other_model),
		cmocka_unit_test(test_many_small),
		cmocka_unit_test(test_property_optimum),
		cmocka_unit_test(test_determinism_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
