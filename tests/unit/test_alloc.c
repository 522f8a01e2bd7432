/*
 * test_alloc.c - core/alloc.h: the product document's worked example to the
 * byte, a table of edge cases (one container, no limits, rounding, huge
 * values, 16 containers), GPU ids for 0/1/2/4/8 GPUs, the allocation YAML,
 * argument checks, and cpu_exclusive core picking.
 *
 * Expected figures in the tables were worked out independently, with
 * exact rational arithmetic outside C, from the rules at the top of
 * alloc.c.  Two property tests compare with deliberately simple
 * references on seeded random inputs: the split against a sort-based
 * largest-remainder version on small numbers (plain __int128, no tricks),
 * and core picking against the fewest-runs bound from sorted free runs.
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

#include "core/alloc.h"

#define KI   (INT64_C(1) << 10)
#define MI   (INT64_C(1) << 20)
#define GI   (INT64_C(1) << 30)
#define BIG  INT64_MAX
#define MAXC JF_ALLOC_MAX_CONTAINERS

static const char *const names[MAXC] = {
	"c1", "c2",  "c3",  "c4",  "c5",  "c6",  "c7",  "c8",
	"c9", "c10", "c11", "c12", "c13", "c14", "c15", "c16",
};

/* n containers named c1..cn with these limits (0 = none) */
static void containers(struct jf_container *c, size_t n, const int64_t *cpu, const int64_t *mem)
{
	memset(c, 0, n * sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		c[i].name = (char *)names[i];
		c[i].cpu_milli = cpu[i];
		c[i].mem_bytes = mem[i];
		c[i].gpus = -1;
	}
}

static struct jf_alloc *must_alloc(int64_t cpu, int64_t mem, uint64_t mask,
				   const struct jf_container *c, size_t n)
{
	struct jf_alloc *a = NULL;
	struct jf_error err = { 0 };
	enum jf_err rc = jf_alloc_new(cpu, mem, mask, c, n, &a, &err);
	if (rc != JF_OK)
		fail_msg("jf_alloc_new: %s: %s", jf_err_name(rc), err.msg);
	assert_non_null(a);
	assert_int_equal(a->n, n);
	return a;
}

/* What holds for every allocation: sums within the node, requests = /4. */
static void check_invariants(const struct jf_alloc *a, int64_t cpu, int64_t mem)
{
	__extension__ __int128 sc = 0, sm = 0;
	for (size_t i = 0; i < a->n; i++) {
		assert_true(a->c[i].cpu_milli >= 0);
		assert_true(a->c[i].mem_bytes >= 0);
		sc += a->c[i].cpu_milli;
		sm += a->c[i].mem_bytes;
		assert_int_equal(a->c[i].req_cpu_milli, a->c[i].cpu_milli / 4);
		assert_int_equal(a->c[i].req_mem_bytes, a->c[i].mem_bytes / 4);
		assert_int_equal(a->c[i].gpus, __builtin_popcountll(a->c[i].gpu_mask));
	}
	assert_true(sc <= cpu);
	assert_true(sm <= mem);
}

/* ---- the product document's example (004 section 4) ---- */

static void example(struct jf_container *c)
{
	static const int64_t cpu[] = { 14000, 9333 };
	static const int64_t mem[] = { 51200 * MI, 4200 * MI };
	containers(c, 2, cpu, mem);
	c[0].name = "pi";
	c[1].name = "pi2";
	c[0].gpus = c[1].gpus = 1;
}

static void test_example_101gi(void **state)
{
	(void)state;
	struct jf_container c[2];
	example(c);
	/* a 4090 node with one GPU (id 0): 20 cores, 101Gi */
	struct jf_alloc *a = must_alloc(20000, 101 * GI, 0x1, c, 2);
	check_invariants(a, 20000, 101 * GI);
	assert_string_equal(a->c[0].name, "pi");
	assert_string_equal(a->c[1].name, "pi2");
	/* 20 x 14000/23333 = 12.0003, 20 x 9333/23333 = 7.9997 */
	assert_int_equal(a->c[0].cpu_milli, 12000);
	assert_int_equal(a->c[1].cpu_milli, 8000);
	/* 103424Mi x 51200/55400 = 95583.19Mi, x 4200/55400 = 7840.81Mi: the
	 * one MiB left over goes to the larger remainder, pi2's */
	assert_int_equal(a->c[0].mem_bytes, INT64_C(100226039808)); /* 95583Mi, 93.34Gi */
	assert_int_equal(a->c[1].mem_bytes, INT64_C(8221884416));   /* 7841Mi, 7.66Gi */
	assert_int_equal(a->c[0].mem_bytes + a->c[1].mem_bytes, 101 * GI);
	/* requests are limit / 4 */
	assert_int_equal(a->c[0].req_cpu_milli, 3000);
	assert_int_equal(a->c[1].req_cpu_milli, 2000);
	assert_int_equal(a->c[0].req_mem_bytes, INT64_C(25056509952));
	assert_int_equal(a->c[1].req_mem_bytes, INT64_C(2055471104));
	/* one GPU: the first container gets it */
	assert_int_equal(a->c[0].gpu_mask, 0x1);
	assert_int_equal(a->c[0].gpus, 1);
	assert_int_equal(a->c[1].gpu_mask, 0);
	assert_int_equal(a->c[1].gpus, 0);
	jf_alloc_free(a);
}

static void test_example_101e9(void **state)
{
	(void)state;
	struct jf_container c[2];
	example(c);
	int64_t mem = INT64_C(101000000000); /* 96321Mi + 111104 bytes */
	struct jf_alloc *a = must_alloc(20000, mem, 0x1, c, 2);
	check_invariants(a, 20000, mem);
	assert_int_equal(a->c[0].cpu_milli, 12000);
	assert_int_equal(a->c[1].cpu_milli, 8000);
	assert_int_equal(a->c[0].mem_bytes, INT64_C(93343186944)); /* 89019Mi, 93.3e9 */
	assert_int_equal(a->c[1].mem_bytes, INT64_C(7656701952));  /* 7302Mi, 7.7e9 */
	assert_int_equal(a->c[0].mem_bytes + a->c[1].mem_bytes, mem - 111104);
	assert_int_equal(a->c[0].req_mem_bytes, INT64_C(93343186944) / 4);
	assert_int_equal(a->c[1].req_mem_bytes, INT64_C(7656701952) / 4);
	jf_alloc_free(a);
}

static void test_example_yaml(void **state)
{
	(void)state;
	struct jf_container c[2];
	example(c);
	struct jf_alloc *a = must_alloc(20000, 101 * GI, 0x1, c, 2);
	char *y = jf_alloc_yaml(a);
	assert_non_null(y);
	assert_string_equal(y, "containers:\n"
			       "- name: pi\n"
			       "  cpu: \"12\"\n"
			       "  memory: \"95583Mi\"   # about 93Gi\n"
			       "  gpus: [0]\n"
			       "  requests: {cpu: \"3\", memory: \"24469248Ki\"}\n"
			       "- name: pi2\n"
			       "  cpu: \"8\"\n"
			       "  memory: \"7841Mi\"   # about 8Gi\n"
			       "  gpus: []\n"
			       "  requests: {cpu: \"2\", memory: \"2007296Ki\"}\n");
	free(y);
	jf_alloc_free(a);

	/* millicores and several GPUs: a CPU-only-sized share on a 2-GPU node */
	static const int64_t cpu[] = { 9333, 0 };
	static const int64_t mem[] = { GI, 0 };
	containers(c, 2, cpu, mem);
	a = must_alloc(1000, 2 * GI, 0x30, c, 2); /* 1 core < 1 per container: 1m units */
	y = jf_alloc_yaml(a);
	assert_non_null(y);
	assert_string_equal(y, "containers:\n"
			       "- name: c1\n"
			       "  cpu: \"500m\"\n"
			       "  memory: \"1Gi\"   # about 1Gi\n"
			       "  gpus: [4,5]\n"
			       "  requests: {cpu: \"125m\", memory: \"256Mi\"}\n"
			       "- name: c2\n"
			       "  cpu: \"500m\"\n"
			       "  memory: \"1Gi\"   # about 1Gi\n"
			       "  gpus: [4,5]\n"
			       "  requests: {cpu: \"125m\", memory: \"256Mi\"}\n");
	free(y);
	jf_alloc_free(a);
}

/* ---- edge cases ---- */

struct split_case {
	const char *what;
	int64_t cpu, mem;
	uint64_t mask;
	size_t n;
	int64_t cpu_lim[MAXC], mem_lim[MAXC];
	int64_t cpu_want[MAXC], mem_want[MAXC];
};

static const struct split_case cases[] = {
	{ "one container gets everything",
	  20000,
	  101 * GI,
	  0x1,
	  1,
	  { 14000 },
	  { 51200 * MI },
	  { 20000 },
	  { 101 * GI } },
	{ "one container without limits",
	  160000,
	  808 * GI,
	  0xff,
	  1,
	  { 0 },
	  { 0 },
	  { 160000 },
	  { 808 * GI } },
	{ "one container on 101e9 bytes: whole MiB",
	  20000,
	  INT64_C(101000000000),
	  0x1,
	  1,
	  { 0 },
	  { 0 },
	  { 20000 },
	  { 96321 * MI } },
	{ "CPU-only node: 1m and byte units, exact limits",
	  2500,
	  INT64_C(1500000001),
	  0,
	  2,
	  { 2000, 500 },
	  { INT64_C(1000000000), 500000001 },
	  { 2000, 500 },
	  { INT64_C(1000000000), 500000001 } },
	{ "an unlimited container counts as an equal share",
	  20000,
	  101 * GI,
	  0x1,
	  2,
	  { 14000, 0 },
	  { 0, GI },
	  { 10000, 10000 },
	  { 103424 / 2 * MI, 103424 / 2 * MI } },
	{ "unlimited gets 1/n, the limited split the rest",
	  20000,
	  101 * GI,
	  0x1,
	  3,
	  { 1000, 3000, 0 },
	  { 0, GI, 3 * GI },
	  { 3000, 10000, 7000 },
	  { INT64_C(36149657600), INT64_C(18074304512), INT64_C(54223962112) } },
	{ "all containers without limits",
	  20000,
	  101 * GI,
	  0x1,
	  3,
	  { 0, 0, 0 },
	  { 0, 0, 0 },
	  { 7000, 7000, 6000 },
	  { INT64_C(36149657600), INT64_C(36149657600), INT64_C(36148609024) } },
	{ "three equal limits on 20 cores: 7, 7, 6",
	  20000,
	  3 * GI,
	  0x1,
	  3,
	  { 5000, 5000, 5000 },
	  { GI, GI, GI },
	  { 7000, 7000, 6000 },
	  { GI, GI, GI } },
	{ "1m vs 19999m: nobody gets nothing",
	  20000,
	  101 * GI,
	  0x1,
	  2,
	  { 1, 19999 },
	  { 1, 101 * GI },
	  { 1000, 19000 },
	  { MI, 101 * GI - MI } },
	{ "fewer cores than containers: millicores",
	  2000,
	  3 * GI,
	  0x1,
	  3,
	  { 0, 0, 0 },
	  { 0, 0, 0 },
	  { 667, 667, 666 },
	  { GI, GI, GI } },
	{ "node exactly n millicores and bytes",
	  3,
	  3,
	  0,
	  3,
	  { 1, 1000, 0 },
	  { 0, 0, 5 },
	  { 1, 1, 1 },
	  { 1, 1, 1 } },
	{ "huge equal limits",
	  BIG,
	  BIG,
	  0,
	  2,
	  { BIG, BIG },
	  { BIG, BIG },
	  { INT64_C(4611686018427387904), INT64_C(4611686018427387903) },
	  { INT64_C(4611686018427387904), INT64_C(4611686018427387903) } },
	{ "huge against 1",
	  BIG,
	  BIG,
	  0,
	  2,
	  { BIG, 1 },
	  { 1, BIG },
	  { BIG - 1, 1 },
	  { 1, BIG - 1 } },
	{ "huge on a GPU node, with an unlimited container",
	  BIG,
	  BIG,
	  0xff,
	  3,
	  { BIG, 0, 1 },
	  { BIG, BIG - 1, 0 },
	  { INT64_C(6148914691236516000), INT64_C(3074457345618258000), 1000 },
	  { INT64_C(3074457345618608128), INT64_C(3074457345617559552),
	    INT64_C(3074457345617559552) } },
	{ "16 huge containers, half unlimited",
	  BIG,
	  BIG,
	  0,
	  16,
	  { BIG, BIG, BIG, BIG, BIG, BIG, BIG, BIG },
	  { 0, 0, 0, 0, 0, 0, 0, 0, BIG, BIG - 1, BIG - 2, BIG - 3, BIG - 4, BIG - 5, BIG - 6,
	    BIG - 7 },
	  { INT64_C(576460752303423488), INT64_C(576460752303423488), INT64_C(576460752303423488),
	    INT64_C(576460752303423488), INT64_C(576460752303423488), INT64_C(576460752303423488),
	    INT64_C(576460752303423488), INT64_C(576460752303423488), INT64_C(576460752303423488),
	    INT64_C(576460752303423488), INT64_C(576460752303423488), INT64_C(576460752303423488),
	    INT64_C(576460752303423488), INT64_C(576460752303423488), INT64_C(576460752303423488),
	    INT64_C(576460752303423487) },
	  { INT64_C(576460752303423488), INT64_C(576460752303423488), INT64_C(576460752303423488),
	    INT64_C(576460752303423488), INT64_C(576460752303423488), INT64_C(576460752303423488),
	    INT64_C(576460752303423488), INT64_C(576460752303423488), INT64_C(576460752303423488),
	    INT64_C(576460752303423488), INT64_C(576460752303423488), INT64_C(576460752303423488),
	    INT64_C(576460752303423488), INT64_C(576460752303423488), INT64_C(576460752303423488),
	    INT64_C(576460752303423487) } },
	{ "16 containers on an 8-GPU 4090 node",
	  160000,
	  808 * GI,
	  0xff,
	  16,
	  { 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 11000, 12000, 13000, 14000,
	    15000, 16000 },
	  { 1 * GI, 2 * GI, 3 * GI, 4 * GI, 5 * GI, 6 * GI, 7 * GI, 8 * GI, 9 * GI, 10 * GI,
	    11 * GI, 12 * GI, 13 * GI, 14 * GI, 15 * GI, 16 * GI },
	  { 1000, 2000, 4000, 5000, 6000, 7000, 8000, 9000, 11000, 12000, 13000, 14000, 15000,
	    16000, 18000, 19000 },
	  { INT64_C(6379536384), INT64_C(12759072768), INT64_C(19137560576), INT64_C(25517096960),
	    INT64_C(31896633344), INT64_C(38276169728), INT64_C(44654657536), INT64_C(51034193920),
	    INT64_C(57413730304), INT64_C(63793266688), INT64_C(70171754496), INT64_C(76551290880),
	    INT64_C(82930827264), INT64_C(89310363648), INT64_C(95688851456),
	    INT64_C(102068387840) } },
};

static void test_split_table(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct split_case *t = &cases[k];
		struct jf_container c[MAXC];
		containers(c, t->n, t->cpu_lim, t->mem_lim);
		struct jf_alloc *a = must_alloc(t->cpu, t->mem, t->mask, c, t->n);
		check_invariants(a, t->cpu, t->mem);
		for (size_t i = 0; i < t->n; i++) {
			if (a->c[i].cpu_milli != t->cpu_want[i] ||
			    a->c[i].mem_bytes != t->mem_want[i])
				fail_msg("%s: container %zu: got %lldm %lld bytes, want %lldm %lld "
					 "bytes",
					 t->what, i + 1, (long long)a->c[i].cpu_milli,
					 (long long)a->c[i].mem_bytes, (long long)t->cpu_want[i],
					 (long long)t->mem_want[i]);
			assert_string_equal(a->c[i].name, names[i]);
		}
		jf_alloc_free(a);
	}
}

/* ---- GPUs ---- */

static void test_gpus(void **state)
{
	(void)state;
	static const int64_t zero[MAXC] = { 0 };
	struct jf_container c[3];
	containers(c, 3, zero, zero);
	static const struct {
		uint64_t mask;
		uint64_t want[3];
	} t[] = {
		{ 0, { 0, 0, 0 } },         /* CPU-only */
		{ 0x1, { 0x1, 0, 0 } },     /* one GPU: the first container */
		{ 0x80, { 0x80, 0, 0 } },   /* one GPU, id 7 */
		{ 0x3, { 0x3, 0x3, 0x3 } }, /* several: all to every container */
		{ 0x30, { 0x30, 0x30, 0x30 } },
		{ 0xf, { 0xf, 0xf, 0xf } },
		{ 0xf0, { 0xf0, 0xf0, 0xf0 } },
		{ 0xff, { 0xff, 0xff, 0xff } },
		{ ~UINT64_C(0), { ~UINT64_C(0), ~UINT64_C(0), ~UINT64_C(0) } },
	};
	for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		int g = __builtin_popcountll(t[k].mask);
		struct jf_alloc *a =
			must_alloc(20000 * (g ? g : 1), 101 * GI * (g ? g : 1), t[k].mask, c, 3);
		for (size_t i = 0; i < 3; i++) {
			assert_int_equal(a->c[i].gpu_mask, t[k].want[i]);
			assert_int_equal(a->c[i].gpus, __builtin_popcountll(t[k].want[i]));
		}
		jf_alloc_free(a);
	}
	/* container GPU limits do not change the rule */
	c[0].gpus = 0;
	c[1].gpus = 8;
	struct jf_alloc *a = must_alloc(20000, 101 * GI, 0x1, c, 3);
	assert_int_equal(a->c[0].gpu_mask, 0x1);
	assert_int_equal(a->c[1].gpu_mask, 0);
	jf_alloc_free(a);
}

/* ---- arguments ---- */

static void test_refusals(void **state)
{
	(void)state;
	static const int64_t one[MAXC] = { 1000, 1000 };
	struct jf_container c[MAXC + 1];
	containers(c, MAXC, one, one);
	c[MAXC] = c[0];
	struct jf_alloc *a = (struct jf_alloc *)&a;
	struct jf_error err = { 0 };

	assert_int_equal(jf_alloc_new(20000, GI, 1, c, 0, &a, &err), JF_EINVAL);
	assert_null(a);
	assert_int_equal(jf_alloc_new(20000, GI, 1, c, MAXC + 1, &a, &err), JF_EINVAL);
	assert_int_equal(jf_alloc_new(1, GI, 1, c, 2, &a, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "too small"));
	assert_int_equal(jf_alloc_new(20000, 1, 1, c, 2, &a, &err), JF_EINVAL);
	assert_int_equal(jf_alloc_new(20000, -1, 1, c, 1, &a, &err), JF_EINVAL);
	c[1].cpu_milli = -5;
	assert_int_equal(jf_alloc_new(20000, GI, 1, c, 2, &a, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "negative"));
	c[1].cpu_milli = 1000;
	c[1].name = "a b";
	assert_int_equal(jf_alloc_new(20000, GI, 1, c, 2, &a, &err), JF_EINVAL);
	c[1].name = NULL;
	assert_int_equal(jf_alloc_new(20000, GI, 1, c, 2, &a, &err), JF_EINVAL);
	c[1].name = "";
	assert_int_equal(jf_alloc_new(20000, GI, 1, c, 2, &a, &err), JF_EINVAL);
	char longname[JF_SPEC_MAX_NAME + 2];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	c[1].name = longname;
	assert_int_equal(jf_alloc_new(20000, GI, 1, c, 2, &a, &err), JF_EINVAL);
	assert_null(a);
	longname[JF_SPEC_MAX_NAME] = '\0'; /* 63 bytes: fine, and copied */
	assert_int_equal(jf_alloc_new(20000, GI, 1, c, 2, &a, &err), JF_OK);
	longname[0] = 'y';
	assert_int_equal(strlen(a->c[1].name), JF_SPEC_MAX_NAME);
	assert_int_equal(a->c[1].name[0], 'x');
	jf_alloc_free(a);
	jf_alloc_free(NULL);
	/* 16 containers on one 4090 GPU: whole cores, at least one each */
	containers(c, MAXC, one, one);
	a = NULL;
	assert_int_equal(jf_alloc_new(20000, 101 * GI, 1, c, MAXC, &a, &err), JF_OK);
	for (size_t i = 0; i < MAXC; i++)
		assert_int_equal(a->c[i].cpu_milli, i < 4 ? 2000 : 1000);
	check_invariants(a, 20000, 101 * GI);
	jf_alloc_free(a);
}

/* ---- property: the split against a simple reference ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
	uint64_t x = rng_state; /* xorshift64 */
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Plain largest remainder on small numbers: shares as fractions with one
 * denominator, indices sorted by remainder (stable, so ties keep order),
 * then nobody at zero. */
static void ref_split(int64_t units, const int64_t *lim, size_t n, int64_t *out)
{
	__extension__ typedef __int128 i128;
	i128 w[MAXC], sum = 0, den = 0;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		sum += lim[i];
		k += lim[i] == 0;
	}
	for (size_t i = 0; i < n; i++) {
		w[i] = k == n ? 1 : lim[i] ? lim[i] * (i128)(n - k) : sum;
		den += w[i];
	}
	i128 rem[MAXC];
	size_t order[MAXC];
	int64_t given = 0;
	for (size_t i = 0; i < n; i++) {
		out[i] = (int64_t)(units * w[i] / den);
		rem[i] = units * w[i] % den;
		given += out[i];
		size_t j = i; /* insertion sort, remainder descending, stable */
		while (j > 0 && rem[order[j - 1]] < rem[i]) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (int64_t l = 0; l < units - given; l++)
		out[order[l]]++;
	if (units < (int64_t)n)
		return;
	for (size_t i = 0; i < n; i++) {
		if (out[i])
			continue;
		size_t most = 0;
		for (size_t j = 0; j < n; j++)
			if (out[j] > out[most])
				most = j;
		out[most]--;
		out[i] = 1;
	}
}

static void test_property_split(void **state)
{
	(void)state;
	for (int iter = 0; iter < 20000; iter++) {
		size_t n = 1 + rnd() % MAXC;
		int64_t cl[MAXC], ml[MAXC];
		for (size_t i = 0; i < n; i++) {
			/* a third without limit; sizes from 1 to about 2^30 */
			cl[i] = rnd() % 3 == 0
					? 0
					: 1 + (int64_t)(rnd() % (UINT64_C(1) << (rnd() % 31)));
			ml[i] = rnd() % 3 == 0
					? 0
					: 1 + (int64_t)(rnd() % (UINT64_C(1) << (rnd() % 31)));
		}
		int g = (int)(rnd() % 9);
		uint64_t mask = g ? (UINT64_C(1) << g) - 1 : 0;
		int64_t cpu = rnd() % 4 == 0 ? (int64_t)n + (int64_t)(rnd() % 40000)
					     : 20000 * (g ? g : 1);
		int64_t mem = (int64_t)n + (int64_t)(rnd() % (UINT64_C(1) << (rnd() % 41)));
		struct jf_container c[MAXC];
		containers(c, n, cl, ml);
		struct jf_alloc *a = must_alloc(cpu, mem, mask, c, n);
		check_invariants(a, cpu, mem);

		int64_t cu = g && cpu / 1000 >= (int64_t)n ? 1000 : 1;
		int64_t mu = g && mem / MI >= (int64_t)n ? MI : 1;
		int64_t want_c[MAXC], want_m[MAXC];
		ref_split(cpu / cu, cl, n, want_c);
		ref_split(mem / mu, ml, n, want_m);
		int64_t sc = 0, sm = 0;
		for (size_t i = 0; i < n; i++) {
			if (a->c[i].cpu_milli != want_c[i] * cu ||
			    a->c[i].mem_bytes != want_m[i] * mu)
				fail_msg("iteration %d container %zu: got %lldm %lld, reference "
					 "%lldm %lld",
					 iter, i, (long long)a->c[i].cpu_milli,
					 (long long)a->c[i].mem_bytes, (long long)(want_c[i] * cu),
					 (long long)(want_m[i] * mu));
			assert_true(a->c[i].cpu_milli >= cu); /* nobody at zero */
			assert_true(a->c[i].mem_bytes >= mu);
			sc += a->c[i].cpu_milli;
			sm += a->c[i].mem_bytes;
		}
		/* everything below one unit is handed out */
		assert_int_equal(sc, cpu - cpu % cu);
		assert_int_equal(sm, mem - mem % mu);
		jf_alloc_free(a);
	}
}

/* ---- cpu_exclusive ---- */

static void set_range(uint64_t *s, int lo, int hi)
{
	for (int i = lo; i <= hi; i++)
		s[i / 64] |= UINT64_C(1) << (i % 64);
}

static void or_into(uint64_t *dst, const uint64_t *src)
{
	for (int w = 0; w < JF_CPUSET_WORDS; w++)
		dst[w] |= src[w];
}

static int popcount_set(const uint64_t *s)
{
	int n = 0;
	for (int w = 0; w < JF_CPUSET_WORDS; w++)
		n += __builtin_popcountll(s[w]);
	return n;
}

static void expect_set(const uint64_t *s, int ncores, const char *want)
{
	char buf[512];
	jf_cpuset_format(s, ncores, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static void test_cpu_pick_fill(void **state)
{
	(void)state;
	/* an 8-GPU 4090 machine: 160 cores; nodes of one GPU take 20 each */
	uint64_t held[JF_CPUSET_WORDS] = { 0 }, p[JF_CPUSET_WORDS], seen[JF_CPUSET_WORDS] = { 0 };
	struct jf_error err = { 0 };
	static const char *const want[] = { "0-19",  "20-39",   "40-59",   "60-79",
					    "80-99", "100-119", "120-139", "140-159" };
	for (int k = 0; k < 8; k++) {
		assert_int_equal(jf_cpu_pick(160, held, 1, 20, p, &err), JF_OK);
		expect_set(p, 160, want[k]);
		for (int w = 0; w < JF_CPUSET_WORDS; w++)
			assert_int_equal(p[w] & seen[w], 0); /* disjoint */
		or_into(seen, p);
		or_into(held, p);
	}
	/* full: JF_EBUSY, picked untouched */
	memset(p, 0xab, sizeof(p));
	assert_int_equal(jf_cpu_pick(160, held, 1, 1, p, &err), JF_EBUSY);
	assert_int_equal(err.code, JF_EBUSY);
	assert_non_null(strstr(err.msg, "0 of 160 free"));
	for (int w = 0; w < JF_CPUSET_WORDS; w++)
		assert_int_equal(p[w], UINT64_C(0xabababababababab));

	/* a 2-GPU node on an empty machine: one run of 40 */
	uint64_t none[JF_CPUSET_WORDS] = { 0 };
	assert_int_equal(jf_cpu_pick(160, none, 2, 20, p, &err), JF_OK);
	expect_set(p, 160, "0-39");
	/* more than is free */
	uint64_t some[JF_CPUSET_WORDS] = { 0 };
	set_range(some, 0, 149);
	assert_int_equal(jf_cpu_pick(160, some, 1, 11, p, &err), JF_EBUSY);
	assert_int_equal(jf_cpu_pick(160, some, 1, 10, p, &err), JF_OK);
	expect_set(p, 160, "150-159");
	/* bad arguments */
	assert_int_equal(jf_cpu_pick(0, none, 1, 1, p, &err), JF_EINVAL);
	assert_int_equal(jf_cpu_pick(JF_CPU_MAX_CORES + 1, none, 1, 1, p, &err), JF_EINVAL);
	assert_int_equal(jf_cpu_pick(16, none, 0, 1, p, &err), JF_EINVAL);
	assert_int_equal(jf_cpu_pick(16, none, 1, 0, p, &err), JF_EINVAL);
	assert_int_equal(jf_cpu_pick(16, none, 1 << 30, 1 << 30, p, &err), JF_EBUSY);
	/* the largest machine */
	assert_int_equal(jf_cpu_pick(JF_CPU_MAX_CORES, none, 64, 64, p, &err), JF_OK);
	assert_int_equal(popcount_set(p), JF_CPU_MAX_CORES);
}

static void test_cpu_pick_fragmented(void **state)
{
	(void)state;
	struct jf_error err = { 0 };
	uint64_t held[JF_CPUSET_WORDS] = { 0 }, p[JF_CPUSET_WORDS];
	/* free runs: 0-3 (4), 10-29 (20), 40-44 (5), 50-63 (14); held above 64 */
	set_range(held, 4, 9);
	set_range(held, 30, 39);
	set_range(held, 45, 49);
	set_range(held, 64, 127);
	/* best fit: the shortest run that holds the block */
	assert_int_equal(jf_cpu_pick(128, held, 1, 5, p, &err), JF_OK);
	expect_set(p, 128, "40-44");
	assert_int_equal(jf_cpu_pick(128, held, 1, 4, p, &err), JF_OK);
	expect_set(p, 128, "0-3");
	assert_int_equal(jf_cpu_pick(128, held, 1, 14, p, &err), JF_OK);
	expect_set(p, 128, "50-63");
	assert_int_equal(jf_cpu_pick(128, held, 1, 15, p, &err), JF_OK);
	expect_set(p, 128, "10-24");
	/* no run holds 22: the longest whole, then the best fit for 2 */
	assert_int_equal(jf_cpu_pick(128, held, 1, 22, p, &err), JF_OK);
	expect_set(p, 128, "0-1,10-29");
	/* two blocks of 12: each block in one run where one exists */
	assert_int_equal(jf_cpu_pick(128, held, 2, 12, p, &err), JF_OK);
	expect_set(p, 128, "10-21,50-61");
	/* all 43 free cores */
	assert_int_equal(jf_cpu_pick(128, held, 1, 43, p, &err), JF_OK);
	expect_set(p, 128, "0-3,10-29,40-44,50-63");
	assert_int_equal(jf_cpu_pick(128, held, 1, 44, p, &err), JF_EBUSY);
	/* ties go to the lowest ids: two free runs of 5, 0-4 and 10-14 */
	uint64_t two[JF_CPUSET_WORDS] = { 0 };
	set_range(two, 5, 9);
	assert_int_equal(jf_cpu_pick(15, two, 1, 3, p, &err), JF_OK);
	expect_set(p, 15, "0-2");
	assert_int_equal(jf_cpu_pick(15, two, 1, 7, p, &err), JF_OK);
	expect_set(p, 15, "0-4,10-11");
	/* bits of held past ncores are ignored */
	uint64_t odd[JF_CPUSET_WORDS];
	memset(odd, 0xff, sizeof(odd));
	odd[0] = 0;
	assert_int_equal(jf_cpu_pick(10, odd, 1, 10, p, &err), JF_OK);
	expect_set(p, 10, "0-9");
	assert_int_equal(p[1], 0);
}

static void test_cpuset_format(void **state)
{
	(void)state;
	uint64_t s[JF_CPUSET_WORDS] = { 0 };
	expect_set(s, 64, "");
	set_range(s, 0, 0);
	set_range(s, 2, 3);
	set_range(s, 63, 65);
	set_range(s, 4095, 4095);
	expect_set(s, JF_CPU_MAX_CORES, "0,2-3,63-65,4095");
	expect_set(s, 64, "0,2-3,63");
	char small[6];
	jf_cpuset_format(s, JF_CPU_MAX_CORES, small, sizeof(small));
	assert_string_equal(small, "0,2-3");
	jf_cpuset_format(s, JF_CPU_MAX_CORES, small, 0); /* writes nothing */
}

/* Reference for one block: the fewest runs that can hold `want` cores is
 * the fewest of the longest free runs whose lengths add up to it. */
static int min_runs(const uint64_t *taken, int ncores, int want)
{
	int len[JF_CPU_MAX_CORES], nr = 0;
	for (int i = 0; i < ncores;) {
		if ((taken[i / 64] >> (i % 64)) & 1) {
			i++;
			continue;
		}
		int s = i;
		while (i < ncores && !((taken[i / 64] >> (i % 64)) & 1))
			i++;
		len[nr++] = i - s;
	}
	for (int a = 0; a < nr; a++) /* descending */
		for (int b = a + 1; b < nr; b++)
			if (len[b] > len[a]) {
				int t = len[a];
				len[a] = len[b];
				len[b] = t;
			}
	int k = 0;
	for (int got = 0; got < want; k++)
		got += len[k];
	return k;
}

static int runs_in(const uint64_t *s, int ncores)
{
	int r = 0;
	for (int i = 0; i < ncores; i++) {
		bool on = (s[i / 64] >> (i % 64)) & 1;
		bool before = i > 0 && ((s[(i - 1) / 64] >> ((i - 1) % 64)) & 1);
		r += on && !before;
	}
	return r;
}

static void test_property_cpu_pick(void **state)
{
	(void)state;
	struct jf_error err = { 0 };
	for (int iter = 0; iter < 3000; iter++) {
		int ncores = 1 + (int)(rnd() % 300);
		uint64_t held[JF_CPUSET_WORDS] = { 0 }, p[JF_CPUSET_WORDS];
		int density = (int)(rnd() % 100);
		for (int i = 0; i < ncores; i++)
			if ((int)(rnd() % 100) < density)
				set_range(held, i, i);
		int nfree = ncores - popcount_set(held);
		int want = 1 + (int)(rnd() % (unsigned)(ncores + 5));
		enum jf_err rc = jf_cpu_pick(ncores, held, 1, want, p, &err);
		if (want > nfree) {
			assert_int_equal(rc, JF_EBUSY);
			continue;
		}
		assert_int_equal(rc, JF_OK);
		assert_int_equal(popcount_set(p), want);
		for (int w = 0; w < JF_CPUSET_WORDS; w++)
			assert_int_equal(p[w] & held[w], 0);
		for (int i = ncores; i < JF_CPU_MAX_CORES; i++)
			assert_false((p[i / 64] >> (i % 64)) & 1);
		/* runs of p may merge across a picked run's end only if free cores
		 * touch, which they cannot (runs are maximal): count is exact */
		assert_int_equal(runs_in(p, ncores), min_runs(held, ncores, want));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_101gi),
		cmocka_unit_test(test_example_101e9),
		cmocka_unit_test(test_example_yaml),
		cmocka_unit_test(test_split_table),
		cmocka_unit_test(test_gpus),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_property_split),
		cmocka_unit_test(test_cpu_pick_fill),
		cmocka_unit_test(test_cpu_pick_fragmented),
		cmocka_unit_test(test_cpuset_format),
		cmocka_unit_test(test_property_cpu_pick),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
