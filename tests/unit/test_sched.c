/*
 * test_sched.c - core/sched.h: what a spec asks of one node, gang
 * placement by best fit, release and take, GPU id lists.
 *
 * The property test drives jf_sched_place/jf_sched_release with seeded
 * random requests for 10,000 steps on two clusters and checks, after every
 * step, against a deliberately simple reference: per machine a count of
 * free GPUs and cpu/mem totals, and for a request the number of copies of
 * one node each machine could still take (nodes of a gang are identical,
 * so the gang fits exactly when those copies add up to its node count).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/sched.h"

#define GIB (INT64_C(1) << 30)

static struct jf_cluster *builtin(void)
{
	struct jf_cluster *c = jf_cluster_builtin();
	assert_non_null(c);
	return c;
}

static size_t machine_named(const struct jf_cluster *c, const char *name)
{
	for (size_t i = 0; i < c->nmachines; i++)
		if (strcmp(c->machines[i].name, name) == 0)
			return i;
	fail_msg("no machine %s", name);
	return 0;
}

/* ---- jf_sched_request ---- */

static void test_request_gpu(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_spec s;
	memset(&s, 0, sizeof(s));
	s.gpu = "4090";
	s.gpus = 2;
	s.nodes = 3;
	struct jf_sched_req r;
	struct jf_error err = { 0 };
	assert_true(jf_sched_request(c, &s, &r, &err));
	int m = jf_cluster_model_index(c, "4090");
	assert_true(m >= 0);
	assert_int_equal(r.model, m);
	assert_int_equal(r.gpus, 2);
	assert_int_equal(r.nodes, 3);
	/* g GPUs get g times the model's cores and memory: 20 cores, 101G each */
	assert_int_equal(r.cpu_milli, 2 * 20000);
	assert_int_equal(r.mem_bytes, 2 * c->models[m].mem_bytes_per_gpu);
	assert_int_equal(c->models[m].mem_bytes_per_gpu, 101 * GIB);

	s.gpu = "H800";
	s.gpus = 8;
	s.nodes = 1;
	assert_true(jf_sched_request(c, &s, &r, &err));
	assert_int_equal(r.model, jf_cluster_model_index(c, "H800"));
	assert_int_equal(r.gpus, 8);
	assert_int_equal(r.cpu_milli, 8 * c->models[r.model].cpu_milli_per_gpu);
	jf_cluster_free(c);
}

static void test_request_cpu(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_container ct[2];
	memset(ct, 0, sizeof(ct));
	ct[0].cpu_milli = 4000;
	ct[0].mem_bytes = 8 * GIB;
	ct[1].cpu_milli = 2500;
	struct jf_spec s;
	memset(&s, 0, sizeof(s));
	s.nodes = 1;
	s.containers = ct;
	s.ncontainers = 2;
	struct jf_sched_req r;
	struct jf_error err = { 0 };
	assert_true(jf_sched_request(c, &s, &r, &err));
	assert_int_equal(r.model, -1);
	assert_int_equal(r.gpus, 0);
	assert_int_equal(r.cpu_milli, 6500);
	assert_int_equal(r.mem_bytes, 8 * GIB);

	/* nothing given: one core and 1 GiB */
	memset(ct, 0, sizeof(ct));
	assert_true(jf_sched_request(c, &s, &r, &err));
	assert_int_equal(r.cpu_milli, 1000);
	assert_int_equal(r.mem_bytes, GIB);

	/* a model with gpus 0 is CPU-only too */
	s.gpu = "4090";
	s.gpus = 0;
	assert_true(jf_sched_request(c, &s, &r, &err));
	assert_int_equal(r.model, -1);
	assert_int_equal(r.gpus, 0);

	/* more cores than any machine has */
	s.gpu = NULL;
	ct[0].cpu_milli = 100000000;
	assert_false(jf_sched_request(c, &s, &r, &err));
	assert_int_equal(err.code, JF_EINVAL);
	assert_non_null(strstr(err.msg, "resources.limits"));
	jf_cluster_free(c);
}

static void test_request_errors(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_spec s;
	memset(&s, 0, sizeof(s));
	s.gpu = "V100";
	s.gpus = 1;
	s.nodes = 1;
	struct jf_sched_req r;
	struct jf_error err = { 0 };
	assert_false(jf_sched_request(c, &s, &r, &err));
	assert_int_equal(err.code, JF_EINVAL);
	assert_non_null(strstr(err.msg, "V100"));
	assert_non_null(strstr(err.msg, "gpu"));

	memset(&err, 0, sizeof(err));
	s.gpu = "A800";
	s.gpus = 16;
	assert_false(jf_sched_request(c, &s, &r, &err));
	assert_int_equal(err.code, JF_EINVAL);
	assert_non_null(strstr(err.msg, "16"));
	assert_non_null(strstr(err.msg, "gpus"));
	jf_cluster_free(c);
}

/* ---- placement on the built-in cluster ---- */

static struct jf_sched_machine *machines_of(const struct jf_cluster *c)
{
	struct jf_sched_machine *m = calloc(c->nmachines, sizeof(*m));
	assert_non_null(m);
	jf_sched_machines_init(c, m);
	return m;
}

static struct jf_sched_req gpu_req(const struct jf_cluster *c, const char *model, int gpus,
				   int64_t nodes)
{
	struct jf_sched_req r;
	memset(&r, 0, sizeof(r));
	r.model = jf_cluster_model_index(c, model);
	assert_true(r.model >= 0);
	r.gpus = gpus;
	r.cpu_milli = gpus * c->models[r.model].cpu_milli_per_gpu;
	r.mem_bytes = gpus * c->models[r.model].mem_bytes_per_gpu;
	r.nodes = nodes;
	return r;
}

static void test_init(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_sched_machine *m = machines_of(c);
	for (size_t i = 0; i < c->nmachines; i++) {
		assert_int_equal(m[i].gpus, c->machines[i].gpus);
		assert_int_equal(m[i].gpu_free, (UINT64_C(1) << c->machines[i].gpus) - 1);
		assert_int_equal(m[i].cpu_free, c->machines[i].cpu_milli);
		assert_int_equal(m[i].mem_free, c->machines[i].mem_bytes);
		assert_int_equal(m[i].model, (int)c->machines[i].model);
	}
	free(m);
	jf_cluster_free(c);
}

static void test_best_fit(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_sched_machine *m = machines_of(c);
	size_t m0 = machine_named(c, "4090-0"), m1 = machine_named(c, "4090-1");
	struct jf_sched_slot s1, s2, s3;

	struct jf_sched_req two = gpu_req(c, "4090", 2, 1);
	assert_true(jf_sched_place(m, c->nmachines, &two, &s1));
	assert_int_equal(s1.machine, m0);
	assert_int_equal(s1.gpu_mask, 0x3);
	assert_int_equal(s1.cpu_milli, 40000);
	assert_int_equal(m[m0].gpu_free, 0xfc);
	assert_int_equal(m[m0].cpu_free, c->machines[m0].cpu_milli - 40000);

	/* a whole machine does not fit on 4090-0 any more: the next one */
	struct jf_sched_req eight = gpu_req(c, "4090", 8, 1);
	assert_true(jf_sched_place(m, c->nmachines, &eight, &s2));
	assert_int_equal(s2.machine, m1);
	assert_int_equal(s2.gpu_mask, 0xff);
	assert_int_equal(m[m1].gpu_free, 0);

	/* one GPU goes where the fewest are free: 4090-0, lowest free index */
	struct jf_sched_req one = gpu_req(c, "4090", 1, 1);
	assert_true(jf_sched_place(m, c->nmachines, &one, &s3));
	assert_int_equal(s3.machine, m0);
	assert_int_equal(s3.gpu_mask, 0x4);

	/* other models are untouched */
	size_t h = machine_named(c, "h800-0");
	assert_int_equal(m[h].gpu_free, 0xff);

	/* freeing the first slot leaves a hole that the next 2-GPU node fills */
	jf_sched_release(m, &s1);
	assert_int_equal(m[m0].gpu_free, 0xfb);
	assert_true(jf_sched_place(m, c->nmachines, &two, &s1));
	assert_int_equal(s1.machine, m0);
	assert_int_equal(s1.gpu_mask, 0x3);
	free(m);
	jf_cluster_free(c);
}

static void test_gang_all_or_nothing(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_sched_machine *m = machines_of(c);
	size_t nm = c->nmachines;
	struct jf_sched_machine *before = malloc(nm * sizeof(*m));
	assert_non_null(before);
	struct jf_sched_slot slots[8];

	/* five whole 4090 machines: there are four */
	struct jf_sched_req five = gpu_req(c, "4090", 8, 5);
	memcpy(before, m, nm * sizeof(*m));
	assert_false(jf_sched_place(m, nm, &five, slots));
	assert_memory_equal(m, before, nm * sizeof(*m));

	/* four fit, on four different machines */
	struct jf_sched_req four = gpu_req(c, "4090", 8, 4);
	assert_true(jf_sched_place(m, nm, &four, slots));
	unsigned seen = 0;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(slots[i].gpu_mask, 0xff);
		assert_int_equal(c->machines[slots[i].machine].model,
				 (size_t)jf_cluster_model_index(c, "4090"));
		assert_false(seen & (1u << slots[i].machine));
		seen |= 1u << slots[i].machine;
	}
	/* now not even one GPU of that model, and nothing changes trying */
	struct jf_sched_req one = gpu_req(c, "4090", 1, 1);
	memcpy(before, m, nm * sizeof(*m));
	assert_false(jf_sched_place(m, nm, &one, slots + 4));
	assert_memory_equal(m, before, nm * sizeof(*m));
	for (int i = 3; i >= 0; i--)
		jf_sched_release(m, &slots[i]);

	/* a gang that fits partly: three 4-GPU H800 nodes on two machines of
	 * eight fit (2 + 1), five do not, and leave nothing taken */
	struct jf_sched_req h3 = gpu_req(c, "H800", 4, 3);
	struct jf_sched_req h5 = gpu_req(c, "H800", 4, 5);
	memcpy(before, m, nm * sizeof(*m));
	assert_false(jf_sched_place(m, nm, &h5, slots));
	assert_memory_equal(m, before, nm * sizeof(*m));
	assert_true(jf_sched_place(m, nm, &h3, slots));
	for (int i = 2; i >= 0; i--)
		jf_sched_release(m, &slots[i]);
	assert_memory_equal(m, before, nm * sizeof(*m));
	free(before);
	free(m);
	jf_cluster_free(c);
}

static void test_release_take(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_sched_machine *m = machines_of(c);
	size_t nm = c->nmachines;
	struct jf_sched_machine *fresh = malloc(nm * sizeof(*m));
	struct jf_sched_machine *held = malloc(nm * sizeof(*m));
	assert_non_null(fresh);
	assert_non_null(held);
	memcpy(fresh, m, nm * sizeof(*m));

	struct jf_sched_req r = gpu_req(c, "L40S", 4, 2);
	struct jf_sched_slot s[2];
	assert_true(jf_sched_place(m, nm, &r, s));
	memcpy(held, m, nm * sizeof(*m));
	/* release restores exactly */
	jf_sched_release(m, &s[1]);
	jf_sched_release(m, &s[0]);
	assert_memory_equal(m, fresh, nm * sizeof(*m));

	/* take: exactly these slots again, as adoption after a restart does */
	assert_true(jf_sched_take(m, nm, &s[0]));
	assert_true(jf_sched_take(m, nm, &s[1]));
	assert_memory_equal(m, held, nm * sizeof(*m));
	/* a busy slot cannot be taken, and trying changes nothing */
	assert_false(jf_sched_take(m, nm, &s[0]));
	struct jf_sched_slot overlap = s[1];
	overlap.gpu_mask = 0x1 | s[1].gpu_mask;
	assert_false(jf_sched_take(m, nm, &overlap));
	struct jf_sched_slot nowhere = s[0];
	nowhere.machine = nm;
	assert_false(jf_sched_take(m, nm, &nowhere));
	assert_memory_equal(m, held, nm * sizeof(*m));
	jf_sched_release(m, &s[0]);
	jf_sched_release(m, &s[1]);
	assert_memory_equal(m, fresh, nm * sizeof(*m));
	free(held);
	free(fresh);
	free(m);
	jf_cluster_free(c);
}

/* ---- the property test ---- */

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

struct ref_machine {
	int model;
	int gpus;
	int free_gpus;
	int64_t cpu, mem;
};

struct alloc {
	struct jf_sched_req req;
	struct jf_sched_slot slots[4];
};

/* How many more nodes like r machine x could take, by counts alone. */
static int64_t ref_copies(const struct ref_machine *x, const struct jf_sched_req *r)
{
	int64_t n = INT64_MAX;
	if (r->model >= 0 && r->gpus > 0) {
		if (x->model != r->model)
			return 0;
		n = x->free_gpus / r->gpus;
	}
	if (r->cpu_milli > 0 && x->cpu / r->cpu_milli < n)
		n = x->cpu / r->cpu_milli;
	if (r->mem_bytes > 0 && x->mem / r->mem_bytes < n)
		n = x->mem / r->mem_bytes;
	return n;
}

static bool ref_fits(const struct ref_machine *ref, size_t nm, const struct jf_sched_req *r)
{
	int64_t total = 0;
	for (size_t i = 0; i < nm && total < r->nodes; i++)
		total += ref_copies(&ref[i], r);
	return total >= r->nodes;
}

static void check_state(const struct jf_sched_machine *m, const struct ref_machine *ref, size_t nm,
			const struct alloc *held, size_t nheld)
{
	for (size_t i = 0; i < nm; i++) {
		uint64_t all = (UINT64_C(1) << m[i].gpus) - 1;
		assert_int_equal(m[i].gpu_free & ~all, 0);
		assert_int_equal(__builtin_popcountll(m[i].gpu_free), ref[i].free_gpus);
		assert_int_equal(m[i].cpu_free, ref[i].cpu);
		assert_int_equal(m[i].mem_free, ref[i].mem);
		assert_true(m[i].cpu_free >= 0);
		assert_true(m[i].mem_free >= 0);
		/* held masks: disjoint, disjoint from free, together all GPUs */
		uint64_t used = 0;
		for (size_t a = 0; a < nheld; a++)
			for (int64_t k = 0; k < held[a].req.nodes; k++) {
				const struct jf_sched_slot *s = &held[a].slots[k];
				if (s->machine != i)
					continue;
				assert_int_equal(used & s->gpu_mask, 0);
				used |= s->gpu_mask;
			}
		assert_int_equal(used & m[i].gpu_free, 0);
		assert_int_equal(used | m[i].gpu_free, all);
	}
}

static struct jf_sched_req random_req(const struct ref_machine *ref, size_t nm, int nmodels)
{
	static const int gpu_counts[] = { 1, 1, 1, 2, 2, 4, 8 };
	struct jf_sched_req r;
	memset(&r, 0, sizeof(r));
	r.nodes = rng() % 4 == 0 ? rnd(2, 4) : 1;
	if (rng() % 4 == 0) {
		r.model = -1;
		r.cpu_milli = rnd(500, 48000);
		r.mem_bytes = rnd(1, 96) * GIB;
		return r;
	}
	r.model = (int)rnd(0, nmodels - 1);
	r.gpus = gpu_counts[rng() % (sizeof(gpu_counts) / sizeof(gpu_counts[0]))];
	/* per GPU: the model's share, sometimes less */
	int64_t cpg = 0, mpg = 0;
	for (size_t i = 0; i < nm; i++)
		if (ref[i].model == r.model && ref[i].gpus > 0) {
			cpg = ref[i].cpu / ref[i].gpus; /* at start: cpu is the total */
			mpg = ref[i].mem / ref[i].gpus;
			break;
		}
	r.cpu_milli = r.gpus * (rng() % 2 ? cpg : rnd(1000, cpg > 1000 ? cpg : 1000));
	r.mem_bytes = r.gpus * (rng() % 2 ? mpg : rnd(GIB, mpg > GIB ? mpg : GIB));
	return r;
}

/* A slot just placed for r: the right model and GPU count, GPUs that were
 * free before, and the reference charged for it. */
static void check_slot(const struct jf_sched_req *r, const struct jf_sched_slot *s,
		       const struct jf_sched_machine *before, struct ref_machine *ref, size_t nm)
{
	assert_true(s->machine < nm);
	struct ref_machine *x = &ref[s->machine];
	if (r->model >= 0 && r->gpus > 0)
		assert_int_equal(x->model, r->model);
	assert_int_equal(__builtin_popcountll(s->gpu_mask), r->model >= 0 ? r->gpus : 0);
	assert_int_equal(s->gpu_mask & ~before[s->machine].gpu_free, 0);
	assert_int_equal(s->cpu_milli, r->cpu_milli);
	assert_int_equal(s->mem_bytes, r->mem_bytes);
	x->free_gpus -= __builtin_popcountll(s->gpu_mask);
	x->cpu -= s->cpu_milli;
	x->mem -= s->mem_bytes;
	assert_true(x->free_gpus >= 0 && x->cpu >= 0 && x->mem >= 0);
}

static void run_property(struct jf_sched_machine *m, size_t nm, int nmodels, uint64_t seed)
{
	rng_state = seed;
	struct ref_machine *ref = calloc(nm, sizeof(*ref));
	struct ref_machine *start = calloc(nm, sizeof(*start));
	struct jf_sched_machine *before = calloc(nm, sizeof(*before));
	struct jf_sched_machine *fresh = calloc(nm, sizeof(*fresh));
	assert_non_null(ref);
	assert_non_null(start);
	assert_non_null(before);
	assert_non_null(fresh);
	for (size_t i = 0; i < nm; i++) {
		ref[i].model = m[i].model;
		ref[i].gpus = m[i].gpus;
		ref[i].free_gpus = __builtin_popcountll(m[i].gpu_free);
		ref[i].cpu = m[i].cpu_free;
		ref[i].mem = m[i].mem_free;
	}
	memcpy(start, ref, nm * sizeof(*ref));
	memcpy(fresh, m, nm * sizeof(*m));

	enum { MAXHELD = 512 };
	struct alloc *held = calloc(MAXHELD, sizeof(*held));
	assert_non_null(held);
	size_t nheld = 0;
	int placed = 0, refused = 0, released = 0;

	for (int step = 0; step < 10000; step++) {
		bool do_place = nheld == 0 || (nheld < MAXHELD && rng() % 100 < 55);
		if (do_place) {
			struct alloc a;
			memset(&a, 0, sizeof(a));
			a.req = random_req(start, nm, nmodels);
			bool want = ref_fits(ref, nm, &a.req);
			memcpy(before, m, nm * sizeof(*m));
			bool got = jf_sched_place(m, nm, &a.req, a.slots);
			if (got != want)
				fail_msg("step %d: place model %d gpus %d cpu %lld mem %lld "
					 "nodes %lld: got %d, reference says %d",
					 step, a.req.model, a.req.gpus, (long long)a.req.cpu_milli,
					 (long long)a.req.mem_bytes, (long long)a.req.nodes, got,
					 want);
			if (!got) {
				/* all or nothing: unchanged, byte for byte */
				assert_memory_equal(m, before, nm * sizeof(*m));
				refused++;
			} else {
				for (int64_t k = 0; k < a.req.nodes; k++)
					check_slot(&a.req, &a.slots[k], before, ref, nm);
				held[nheld++] = a;
				placed++;
			}
		} else {
			size_t k = (size_t)(rng() % nheld);
			struct alloc *a = &held[k];
			/* a held slot with GPUs cannot be taken again */
			if (a->slots[0].gpu_mask) {
				memcpy(before, m, nm * sizeof(*m));
				assert_false(jf_sched_take(m, nm, &a->slots[0]));
				assert_memory_equal(m, before, nm * sizeof(*m));
			}
			for (int64_t n = a->req.nodes - 1; n >= 0; n--) {
				const struct jf_sched_slot *s = &a->slots[n];
				jf_sched_release(m, s);
				ref[s->machine].free_gpus += __builtin_popcountll(s->gpu_mask);
				ref[s->machine].cpu += s->cpu_milli;
				ref[s->machine].mem += s->mem_bytes;
			}
			held[k] = held[--nheld];
			released++;
		}
		check_state(m, ref, nm, held, nheld);
	}
	/* every kind of outcome happened */
	assert_true(placed > 1000);
	assert_true(refused > 100);
	assert_true(released > 1000);

	/* give everything back: exactly the fresh machines */
	while (nheld > 0) {
		struct alloc *a = &held[--nheld];
		for (int64_t n = 0; n < a->req.nodes; n++)
			jf_sched_release(m, &a->slots[n]);
	}
	assert_memory_equal(m, fresh, nm * sizeof(*m));
	free(held);
	free(fresh);
	free(before);
	free(start);
	free(ref);
}

static void test_property_builtin(void **state)
{
	(void)state;
	struct jf_cluster *c = builtin();
	struct jf_sched_machine *m = machines_of(c);
	run_property(m, c->nmachines, (int)c->nmodels, UINT64_C(0x1234567887654321));
	free(m);
	jf_cluster_free(c);
}

/* Small, uneven machines: more contention, more refusals, odd GPU counts. */
static void test_property_uneven(void **state)
{
	(void)state;
	static const struct {
		int model, gpus;
	} shape[] = {
		{ 0, 8 }, { 0, 4 }, { 0, 2 }, { 0, 1 }, { 1, 8 }, { 1, 3 }, { 2, 16 }, { 2, 6 },
	};
	static const int64_t cpg[] = { 20000, 16000, 12000 };
	static const int64_t mpg[] = { 101 * GIB, 120 * GIB, 64 * GIB };
	size_t nm = sizeof(shape) / sizeof(shape[0]);
	struct jf_sched_machine *m = calloc(nm, sizeof(*m));
	assert_non_null(m);
	for (size_t i = 0; i < nm; i++) {
		m[i].model = shape[i].model;
		m[i].gpus = shape[i].gpus;
		m[i].gpu_free = (UINT64_C(1) << shape[i].gpus) - 1;
		m[i].cpu_free = shape[i].gpus * cpg[shape[i].model];
		m[i].mem_free = shape[i].gpus * mpg[shape[i].model];
	}
	run_property(m, nm, 3, UINT64_C(42));
	free(m);
}

/* ---- GPU id lists ---- */

static void test_gpu_ids(void **state)
{
	(void)state;
	char buf[256];
	jf_gpu_ids_format(0, buf, sizeof(buf));
	assert_string_equal(buf, "");
	assert_int_equal(jf_gpu_ids_parse(""), 0);
	assert_int_equal(jf_gpu_ids_parse(NULL), 0);
	jf_gpu_ids_format(0x7, buf, sizeof(buf));
	assert_string_equal(buf, "0,1,2");
	jf_gpu_ids_format(UINT64_C(1) << 63 | 0x20, buf, sizeof(buf));
	assert_string_equal(buf, "5,63");
	assert_int_equal(jf_gpu_ids_parse("3,5"), 0x28);
	assert_int_equal(jf_gpu_ids_parse("0"), 1);
	jf_gpu_ids_format(~UINT64_C(0), buf, sizeof(buf));
	assert_int_equal(jf_gpu_ids_parse(buf), ~UINT64_C(0));

	/* round trip: random masks of up to 8 GPUs (a node's most) fit the
	 * store's JF_GPU_IDS_MAX-sized field; any mask in a large buffer */
	rng_state = 7;
	for (int i = 0; i < 10000; i++) {
		uint64_t mask = 0;
		int bits = (int)rnd(0, 8);
		for (int b = 0; b < bits; b++)
			mask |= UINT64_C(1) << rnd(0, 63);
		char small[96];
		jf_gpu_ids_format(mask, small, sizeof(small));
		assert_int_equal(jf_gpu_ids_parse(small), mask);
		uint64_t any = rng();
		jf_gpu_ids_format(any, buf, sizeof(buf));
		assert_int_equal(jf_gpu_ids_parse(buf), any);
	}
	/* a short buffer is cut, never overrun, and stays a string */
	char tiny[4];
	memset(tiny, 'x', sizeof(tiny));
	jf_gpu_ids_format(0xff, tiny, sizeof(tiny));
	assert_true(memchr(tiny, '\0', sizeof(tiny)) != NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_gpu),     cmocka_unit_test(test_request_cpu),
		cmocka_unit_test(test_request_errors),  cmocka_unit_test(test_init),
		cmocka_unit_test(test_best_fit),        cmocka_unit_test(test_gang_all_or_nothing),
		cmocka_unit_test(test_release_take),    cmocka_unit_test(test_property_builtin),
		cmocka_unit_test(test_property_uneven), cmocka_unit_test(test_gpu_ids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
