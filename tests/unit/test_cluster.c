/*
 * test_cluster.c - the built-in cluster (core/cluster.c) and the cluster
 * file reader (core/cluster_file.c): contents, the happy path, every error
 * with its key path and line, limits, and out-of-memory at every
 * allocation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cluster.h"

#define GI (INT64_C(1) << 30)

/* ---- allocation failure injection (not under ASan, which owns malloc) ---- */

#if defined(__SANITIZE_ADDRESS__)
#define NO_MALLOC_HOOK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_MALLOC_HOOK 1
#endif
#endif

#ifndef NO_MALLOC_HOOK
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t k, size_t n);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

/* Test-only state: while armed, allocation number fail_at fails and live
 * counts blocks handed out minus blocks freed. */
static struct {
	bool armed;
	long fail_at, nalloc, live;
} hook;

static bool hook_fail(void)
{
	return hook.armed && hook.nalloc++ == hook.fail_at;
}

void *malloc(size_t n)
{
	void *p;

	if (hook_fail())
		return NULL;
	p = __libc_malloc(n);
	if (hook.armed && p)
		hook.live++;
	return p;
}

void *calloc(size_t k, size_t n)
{
	void *p;

	if (hook_fail())
		return NULL;
	p = __libc_calloc(k, n);
	if (hook.armed && p)
		hook.live++;
	return p;
}

void *realloc(void *old, size_t n)
{
	void *p;

	if (hook_fail())
		return NULL;
	p = __libc_realloc(old, n);
	if (hook.armed && p && !old)
		hook.live++;
	return p;
}

void free(void *p)
{
	if (hook.armed && p)
		hook.live--;
	__libc_free(p);
}
#endif

/* ---- helpers ---- */

static struct jf_cluster *parse_ok(const char *text)
{
	struct jf_cluster *c = (struct jf_cluster *)0x1;
	struct jf_error err;
	enum jf_err rc;

	jf_error_clear(&err);
	rc = jf_cluster_parse(text, strlen(text), &c, &err);
	if (rc != JF_OK)
		fail_msg("refused (%s): %s\n--- text:\n%s", jf_err_name(rc), err.msg, text);
	assert_non_null(c);
	return c;
}

/* Parse must fail with JF_EINVAL; the message must start "line N: ",
 * name key path `key` (NULL: none) and contain `frag`. */
static void parse_bad(const char *text, int line, const char *key, const char *frag)
{
	struct jf_cluster *c = (struct jf_cluster *)0x1;
	struct jf_error err;
	char want[256];
	enum jf_err rc;

	jf_error_clear(&err);
	rc = jf_cluster_parse(text, strlen(text), &c, &err);
	if (rc != JF_EINVAL)
		fail_msg("got %s (%s), want invalid\n--- text:\n%s", jf_err_name(rc), err.msg,
			 text);
	assert_null(c);
	assert_int_equal(err.code, JF_EINVAL);
	snprintf(want, sizeof(want), "line %d: ", line);
	if (strncmp(err.msg, want, strlen(want)) != 0 || err.line != line)
		fail_msg("'%s' is not at line %d\n--- text:\n%s", err.msg, line, text);
	if (key) {
		snprintf(want, sizeof(want), "key '%s': ", key);
		if (!strstr(err.msg, want))
			fail_msg("'%s' does not name key '%s'", err.msg, key);
	}
	if (frag && !strstr(err.msg, frag))
		fail_msg("'%s' lacks '%s'", err.msg, frag);
}

static const struct jf_machine *machine(const struct jf_cluster *c, const char *name)
{
	for (size_t i = 0; i < c->nmachines; i++)
		if (strcmp(c->machines[i].name, name) == 0)
			return &c->machines[i];
	return NULL;
}

/* ---- the built-in cluster ---- */

static void test_builtin(void **state)
{
	static const struct {
		const char *name;
		int64_t vram_gi, cores, mem_gi, od, spot;
		int machines;
	} want[] = {
		{ "4090", 24, 20, 101, 3600000, 1080000, 4 },
		{ "L40S", 48, 16, 120, 4800000, 1440000, 1 },
		{ "H800", 80, 20, 200, 16000000, 4800000, 2 },
		{ "A800", 80, 16, 120, 12000000, 3600000, 1 },
	};
	static const char *const names[] = {
		"4090-0", "4090-1", "4090-2", "4090-3", "h800-0", "h800-1", "l40s-0", "a800-0",
	};
	struct jf_cluster *c = jf_cluster_builtin();

	(void)state;
	assert_non_null(c);
	assert_string_equal(c->name, "builtin");
	assert_string_equal(c->currency, "CNY");
	assert_int_equal(c->cpu_price_ondemand, 50000);
	assert_int_equal(c->cpu_price_spot, 15000);
	assert_int_equal(c->preempt_grace_s, 30);
	assert_true(c->spot_risk_max == JF_SPOT_RISK_DEFAULT);
	assert_int_equal(c->nmodels, 4);
	assert_int_equal(c->nmachines, 8);
	for (size_t i = 0; i < 4; i++) {
		const struct jf_gpu_model *m = &c->models[i];
		int count = 0;

		assert_string_equal(m->name, want[i].name);
		assert_int_equal(jf_cluster_model_index(c, want[i].name), (int)i);
		assert_int_equal(m->vram_bytes, want[i].vram_gi * GI);
		assert_int_equal(m->cpu_milli_per_gpu, want[i].cores * 1000);
		assert_int_equal(m->mem_bytes_per_gpu, want[i].mem_gi * GI);
		assert_int_equal(m->price_ondemand, want[i].od);
		assert_int_equal(m->price_spot, want[i].spot);
		assert_true(m->price_spot < m->price_ondemand);
		for (size_t j = 0; j < c->nmachines; j++)
			if (c->machines[j].model == i)
				count++;
		assert_int_equal(count, want[i].machines);
	}
	for (size_t j = 0; j < c->nmachines; j++) {
		const struct jf_machine *mc = &c->machines[j];
		const struct jf_gpu_model *m = &c->models[mc->model];

		assert_string_equal(mc->name, names[j]);
		assert_int_equal(mc->gpus, 8);
		assert_int_equal(mc->cpu_milli, 8 * m->cpu_milli_per_gpu);
		assert_int_equal(mc->mem_bytes, 8 * m->mem_bytes_per_gpu);
	}
	assert_int_equal(machine(c, "4090-3")->cpu_milli, 160000);
	assert_int_equal(machine(c, "4090-3")->mem_bytes, 808 * GI);
	assert_int_equal(machine(c, "h800-1")->mem_bytes, 1600 * GI);
	assert_string_equal(c->models[machine(c, "l40s-0")->model].name, "L40S");
	assert_string_equal(c->models[machine(c, "a800-0")->model].name, "A800");
	assert_null(machine(c, "4090-4"));
	assert_int_equal(jf_cluster_model_index(c, "5090"), -1);
	assert_int_equal(jf_cluster_model_index(c, "4090 "), -1);
	assert_int_equal(jf_cluster_model_index(c, NULL), -1);
	assert_int_equal(jf_cluster_model_index(NULL, "4090"), -1);
	jf_cluster_free(c);
	jf_cluster_free(NULL);
}

/* ---- the file: happy paths ---- */

static const char full_file[] = "# a lab cluster\n"
				"name: lab\n"
				"currency: USD\n"
				"cpu_price: {on-demand: \"0.04\", spot: 0.01}\n"
				"preempt_grace: 2m\n"
				"machines:\n"
				"  - {name: 4090-0, model: 4090, gpus: 8}\n"
				"  - {name: big, model: \"4090\", gpus: 4, count: 100}\n"
				"  - name: a100.x_1\n"
				"    model: A100\n"
				"    gpus: 1\n"
				"models:\n"
				"  - name: 4090\n"
				"    vram: 24Gi\n"
				"    cpu_per_gpu: 20\n"
				"    memory_per_gpu: 101Gi\n"
				"    price: {on-demand: 3.60, spot: \"1.08\"}\n"
				"  - name: A100\n"
				"    vram: 80G\n"
				"    cpu_per_gpu: 1.5\n"
				"    memory_per_gpu: 51200Mi\n"
				"    price:\n"
				"      on-demand: \"2\"\n"
				"      spot: 0.000001\n";

static void test_file_full(void **state)
{
	struct jf_cluster *c = parse_ok(full_file);
	const struct jf_machine *m;
	char name[16];

	(void)state;
	assert_string_equal(c->name, "lab");
	assert_string_equal(c->currency, "USD");
	assert_int_equal(c->cpu_price_ondemand, 40000);
	assert_int_equal(c->cpu_price_spot, 10000);
	assert_int_equal(c->preempt_grace_s, 120);
	assert_int_equal(c->nmodels, 2);
	assert_string_equal(c->models[0].name, "4090");
	assert_int_equal(c->models[0].vram_bytes, 24 * GI);
	assert_int_equal(c->models[0].cpu_milli_per_gpu, 20000);
	assert_int_equal(c->models[0].mem_bytes_per_gpu, 101 * GI);
	assert_int_equal(c->models[0].price_ondemand, 3600000);
	assert_int_equal(c->models[0].price_spot, 1080000);
	assert_string_equal(c->models[1].name, "A100");
	assert_int_equal(c->models[1].vram_bytes, INT64_C(80000000000));
	assert_int_equal(c->models[1].cpu_milli_per_gpu, 1500);
	assert_int_equal(c->models[1].mem_bytes_per_gpu, INT64_C(51200) << 20);
	assert_int_equal(c->models[1].price_ondemand, 2000000);
	assert_int_equal(c->models[1].price_spot, 1);

	assert_int_equal(c->nmachines, 102);
	m = &c->machines[0];
	assert_string_equal(m->name, "4090-0");
	assert_int_equal(m->model, 0);
	assert_int_equal(m->gpus, 8);
	assert_int_equal(m->cpu_milli, 160000);
	assert_int_equal(m->mem_bytes, 808 * GI);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "big-%d", i);
		m = &c->machines[1 + i];
		assert_string_equal(m->name, name);
		assert_int_equal(m->model, 0);
		assert_int_equal(m->gpus, 4);
		assert_int_equal(m->cpu_milli, 80000);
		assert_int_equal(m->mem_bytes, 404 * GI);
	}
	assert_null(machine(c, "big"));
	assert_null(machine(c, "big-100"));
	m = &c->machines[101];
	assert_string_equal(m->name, "a100.x_1");
	assert_int_equal(m->model, 1);
	assert_int_equal(m->cpu_milli, 1500);
	assert_int_equal(m->mem_bytes, INT64_C(51200) << 20);
	jf_cluster_free(c);
}

static void test_file_defaults(void **state)
{
	struct jf_cluster *c =
		parse_ok("models:\n"
			 "  - {name: L4, vram: 24Gi, cpu_per_gpu: 8000m, memory_per_gpu: 32Gi,\n"
			 "     price: {on-demand: 1, spot: 1}}\n"
			 "machines:\n"
			 "  - {name: only, model: L4, gpus: 64}\n");

	(void)state;
	assert_string_equal(c->name, "cluster");
	assert_string_equal(c->currency, "CNY");
	assert_int_equal(c->cpu_price_ondemand, 50000);
	assert_int_equal(c->cpu_price_spot, 15000);
	assert_int_equal(c->preempt_grace_s, 30);
	assert_true(c->spot_risk_max == JF_SPOT_RISK_DEFAULT);
	assert_int_equal(c->nmachines, 1);
	assert_int_equal(c->machines[0].gpus, 64);
	assert_int_equal(c->machines[0].cpu_milli, 64 * 8000);
	assert_int_equal(c->models[0].price_spot, c->models[0].price_ondemand);
	jf_cluster_free(c);

	/* the built-in cluster written as a file gives the same cluster */
	c = parse_ok("name: builtin\n"
		     "preempt_grace: 30s\n"
		     "models:\n"
		     "  - {name: \"4090\", vram: 24Gi, cpu_per_gpu: 20, memory_per_gpu: 101Gi, "
		     "price: {on-demand: \"3.60\", spot: \"1.08\"}}\n"
		     "  - {name: L40S, vram: 48Gi, cpu_per_gpu: 16, memory_per_gpu: 120Gi, price: "
		     "{on-demand: \"4.80\", spot: \"1.44\"}}\n"
		     "  - {name: H800, vram: 80Gi, cpu_per_gpu: 20, memory_per_gpu: 200Gi, price: "
		     "{on-demand: \"16.00\", spot: \"4.80\"}}\n"
		     "  - {name: A800, vram: 80Gi, cpu_per_gpu: 16, memory_per_gpu: 120Gi, price: "
		     "{on-demand: \"12.00\", spot: \"3.60\"}}\n"
		     "machines:\n"
		     "  - {name: \"4090\", model: \"4090\", gpus: 8, count: 4}\n"
		     "  - {name: h800, model: H800, gpus: 8, count: 2}\n"
		     "  - {name: l40s-0, model: L40S, gpus: 8}\n"
		     "  - {name: a800-0, model: A800, gpus: 8}\n");
	{
		struct jf_cluster *b = jf_cluster_builtin();

		assert_string_equal(c->name, b->name);
		assert_int_equal(c->nmodels, b->nmodels);
		assert_int_equal(c->nmachines, b->nmachines);
		for (size_t i = 0; i < b->nmodels; i++) {
			assert_string_equal(c->models[i].name, b->models[i].name);
			assert_memory_equal(&c->models[i].vram_bytes, &b->models[i].vram_bytes,
					    sizeof(b->models[i]) -
						    offsetof(struct jf_gpu_model, vram_bytes));
		}
		for (size_t i = 0; i < b->nmachines; i++) {
			assert_string_equal(c->machines[i].name, b->machines[i].name);
			assert_int_equal(c->machines[i].model, b->machines[i].model);
			assert_int_equal(c->machines[i].cpu_milli, b->machines[i].cpu_milli);
			assert_int_equal(c->machines[i].mem_bytes, b->machines[i].mem_bytes);
		}
		jf_cluster_free(b);
	}
	jf_cluster_free(c);
}

static void test_file_quantities(void **state)
{
	static const struct {
		const char *cpu, *mem;
		int64_t milli, bytes;
	} cases[] = {
		{ "20", "101Gi", 20000, 101 * GI },
		{ "\"20000m\"", "\"4096\"", 20000, 4096 },
		{ "0.5", "1k", 500, 1000 },
		{ "1.25", "2M", 1250, 2000000 },
		{ "1m", "1Ki", 1, 1024 },
		{ "144115188075855871m", "1Ti", INT64_C(144115188075855871), INT64_C(1) << 40 },
		{ "2", "3T", 2000, INT64_C(3000000000000) },
		{ "1", "1.5Gi", 1000, 3 * (GI / 2) },
	};
	char text[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jf_cluster *c;

		snprintf(text, sizeof(text),
			 "models:\n"
			 "  - {name: m, vram: 1Gi, cpu_per_gpu: %s, memory_per_gpu: %s,\n"
			 "     price: {on-demand: \"1\", spot: \"0\"}}\n"
			 "machines:\n"
			 "  - {name: a, model: m, gpus: 64}\n",
			 cases[i].cpu, cases[i].mem);
		c = parse_ok(text);
		assert_int_equal(c->models[0].cpu_milli_per_gpu, cases[i].milli);
		assert_int_equal(c->models[0].mem_bytes_per_gpu, cases[i].bytes);
		assert_int_equal(c->machines[0].cpu_milli, 64 * cases[i].milli);
		jf_cluster_free(c);
	}
}

static void test_file_durations(void **state)
{
	static const struct {
		const char *s;
		int64_t v;
	} cases[] = {
		{ "30s", 30 },  { "0s", 0 },     { "45", 45 },     { "2m", 120 },
		{ "1h", 3600 }, { "1m30s", 90 }, { "24h", 86400 }, { "1d", 86400 },
	};
	char text[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jf_cluster *c;

		snprintf(text, sizeof(text),
			 "preempt_grace: %s\n"
			 "models: [{name: m, vram: 1Gi, cpu_per_gpu: 1, memory_per_gpu: 1Gi,"
			 " price: {on-demand: 1, spot: 0}}]\n"
			 "machines: [{name: a, model: m, gpus: 1}]\n",
			 cases[i].s);
		c = parse_ok(text);
		assert_int_equal(c->preempt_grace_s, cases[i].v);
		jf_cluster_free(c);
	}
}

/* spot_risk_threshold: a fraction or a percentage, 0 .. 1 */
static void test_file_risk(void **state)
{
	static const struct {
		const char *s;
		double v;
	} cases[] = {
		{ "0.2", 0.2 }, { "0", 0 },    { "1", 1 },  { "0.05", 0.05 },
		{ "20%", 0.2 }, { "100%", 1 }, { "0%", 0 }, { "\"0.5\"", 0.5 },
	};
	char text[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jf_cluster *c;

		snprintf(text, sizeof(text),
			 "spot_risk_threshold: %s\n"
			 "models: [{name: m, vram: 1Gi, cpu_per_gpu: 1, memory_per_gpu: 1Gi,"
			 " price: {on-demand: 1, spot: 0}}]\n"
			 "machines: [{name: a, model: m, gpus: 1}]\n",
			 cases[i].s);
		c = parse_ok(text);
		assert_true(c->spot_risk_max > cases[i].v - 1e-12 &&
			    c->spot_risk_max < cases[i].v + 1e-12);
		jf_cluster_free(c);
	}
}

/* ---- the file: errors ---- */

/* line 1-2: one valid model */
#define MODELS                                                                                     \
	"models:\n"                                                                                \
	"  - {name: \"4090\", vram: 24Gi, cpu_per_gpu: 20, memory_per_gpu: 101Gi, price: "         \
	"{on-demand: \"3.60\", spot: \"1.08\"}}\n"
/* one valid machine, 2 lines */
#define MACHINES "machines:\n  - {name: m0, model: \"4090\", gpus: 8}\n"
/* a model with a hole for one key's text: "name: ..., %s" */
#define MODEL_WITH(x) "models:\n  - {name: \"4090\", " x "}\n" MACHINES
#define MODEL_BASE    "vram: 24Gi, cpu_per_gpu: 20, memory_per_gpu: 101Gi"
#define PRICE_OK      "price: {on-demand: \"3.60\", spot: \"1.08\"}"

static void test_file_example_message(void **state)
{
	static const char text[] = "models:\n"
				   "  - name: \"4090\"\n"
				   "    vram: 24Gi\n"
				   "    cpu_per_gpu: 20\n"
				   "    memory_per_gpu: 101Gi\n"
				   "    price:\n"
				   "      spot: abc\n"
				   "      on-demand: \"3.60\"\n" MACHINES;
	struct jf_cluster *c;
	struct jf_error err;

	(void)state;
	assert_int_equal(jf_cluster_parse(text, strlen(text), &c, &err), JF_EINVAL);
	assert_null(c);
	assert_int_equal(err.line, 7);
	assert_non_null(strstr(err.msg, "line 7: key 'models[0].price.spot': bad price \"abc\""));
}

static void test_file_errors(void **state)
{
	static const struct {
		const char *text;
		int line;
		const char *key, *frag;
	} cases[] = {
		/* unknown keys, at every level */
		{ "nmae: x\n" MODELS MACHINES, 1, "nmae", "unknown key (known: name, currency" },
		{ MODELS MACHINES "extra: 1\n", 5, "extra", "unknown key" },
		{ "models:\n  - name: \"4090\"\n    vramm: 24Gi\n" MACHINES, 3, "models[0].vramm",
		  "unknown key" },
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpu: 8}\n", 4,
		  "machines[0].gpu", "unknown key (known: name, model, gpus, count)" },
		{ "cpu_price: {ondemand: 1, spot: 0}\n" MODELS MACHINES, 1, "cpu_price.ondemand",
		  "unknown key (known: on-demand, spot)" },
		{ MODEL_WITH(MODEL_BASE ", price: {on-demand: 1, spot: 0, extra: 1}"), 2,
		  "models[0].price.extra", "unknown key" },
		{ "\"we'ird\\x01\": 1\n" MODELS MACHINES, 1, "we\\x27ird\\x01", "unknown key" },
		/* wrong types */
		{ "models: 4090\n" MACHINES, 1, "models", "expected a list, got a number" },
		{ "models: {a: 1}\n" MACHINES, 1, "models", "expected a list, got a mapping" },
		{ "models:\n  - 4090\n" MACHINES, 2, "models[0]",
		  "expected a mapping, got a number" },
		{ "models:\n  - [4090]\n" MACHINES, 2, "models[0]",
		  "expected a mapping, got a list" },
		{ MODEL_WITH("vram: {a: 1}"), 2, "models[0].vram",
		  "expected a quantity, got a mapping" },
		{ MODEL_WITH(MODEL_BASE ", price: 3.60"), 2, "models[0].price",
		  "expected a mapping, got a number" },
		{ MODEL_WITH(MODEL_BASE ", price: {on-demand: [1], spot: 0}"), 2,
		  "models[0].price.on-demand", "expected a price, got a list" },
		{ "models:\n  - {name: [a]}\n" MACHINES, 2, "models[0].name",
		  "expected a name, got a list" },
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: [8]}\n", 4,
		  "machines[0].gpus", "expected an integer, got a list" },
		{ MODELS "machines:\n  - {name: m0, model: {a: b}, gpus: 8}\n", 4,
		  "machines[0].model", "expected a model name, got a mapping" },
		{ MODELS "machines: m0\n", 3, "machines", "expected a list, got a string" },
		{ MODELS "machines:\n", 3, "machines", "expected a list, got null" },
		{ "name: [a]\n" MODELS MACHINES, 1, "name", "expected a name, got a list" },
		{ "currency: {a: 1}\n" MODELS MACHINES, 1, "currency",
		  "expected a currency code, got a mapping" },
		{ "preempt_grace: [1]\n" MODELS MACHINES, 1, "preempt_grace",
		  "expected a duration, got a list" },
		{ "cpu_price: 0.05\n" MODELS MACHINES, 1, "cpu_price",
		  "expected a mapping, got a number" },
		{ "? [a]\n: 1\n" MODELS MACHINES, 1, NULL,
		  "a key must be a plain string, not a list" },
		{ MODELS "machines:\n  - {name: \"m\\0x\", model: \"4090\", gpus: 8}\n", 4,
		  "machines[0].name", "a NUL character in the value" },
		/* model references */
		{ MODELS "machines:\n  - {name: m0, model: 5090, gpus: 8}\n", 4,
		  "machines[0].model", "unknown model '5090' (models: 4090)" },
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: 8}\n"
			 "  - {name: m1, model: \"4090 \", gpus: 8}\n",
		  5, "machines[1].model", "unknown model '4090 '" },
		{ "models: []\n" MACHINES, 3, "machines[0].model",
		  "unknown model '4090' (models: none)" },
		/* duplicates */
		{ MODELS "  - {name: \"4090\", " MODEL_BASE ", " PRICE_OK "}\n" MACHINES, 3,
		  "models[1].name", "duplicate model name '4090' (first at line 2)" },
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: 8}\n"
			 "  - {name: m1, model: \"4090\", gpus: 8}\n"
			 "  - {name: m0, model: \"4090\", gpus: 8}\n",
		  6, "machines[2].name", "duplicate machine name 'm0' (also machines[0], line 4)" },
		{ MODELS "machines:\n  - {name: big, model: \"4090\", gpus: 8, count: 3}\n"
			 "  - {name: big-1, model: \"4090\", gpus: 8}\n",
		  5, "machines[1].name",
		  "duplicate machine name 'big-1' (also machines[0], line 4)" },
		{ MODELS "machines:\n  - {name: big-2, model: \"4090\", gpus: 8}\n"
			 "  - {name: big, model: \"4090\", gpus: 8, count: 3}\n",
		  5, "machines[1].name",
		  "duplicate machine name 'big-2' (also machines[0], line 4)" },
		{ MODEL_WITH(MODEL_BASE ", vram: 1Gi"), 2, NULL,
		  "duplicate key 'models[0].vram' (first at line 2)" },
		{ "name: a\nname: b\n" MODELS MACHINES, 2, NULL,
		  "duplicate key 'name' (first at line 1)" },
		/* gpus and count */
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: 0}\n", 4,
		  "machines[0].gpus", "0 is out of range: must be 1 to 64" },
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: 65}\n", 4,
		  "machines[0].gpus", "65 is out of range: must be 1 to 64" },
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: -1}\n", 4,
		  "machines[0].gpus", "-1 is out of range" },
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: +8}\n", 4,
		  "machines[0].gpus", "without the '+'" },
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: 8.0}\n", 4,
		  "machines[0].gpus", "expected a whole number, got 8.0" },
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: eight}\n", 4,
		  "machines[0].gpus", "expected an integer, got \"eight\"" },
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: 99999999999999999999}\n",
		  4, "machines[0].gpus", "must be 1 to 64" },
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: 8, count: 0}\n", 4,
		  "machines[0].count", "0 is out of range: must be 1 to 100000" },
		{ MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: 8, count: 100001}\n", 4,
		  "machines[0].count", "must be 1 to 100000" },
		/* names */
		{ MODELS "machines:\n  - {name: a b, model: \"4090\", gpus: 8}\n", 4,
		  "machines[0].name", "name 'a b' has a space" },
		{ MODELS "machines:\n  - {name: -x, model: \"4090\", gpus: 8}\n", 4,
		  "machines[0].name", "must start with a letter or digit" },
		{ MODELS "machines:\n  - {name: \"\", model: \"4090\", gpus: 8}\n", 4,
		  "machines[0].name", "name is empty" },
		{ MODELS "machines:\n  - {name: a/b, model: \"4090\", gpus: 8}\n", 4,
		  "machines[0].name", "has a '/'" },
		{ MODELS "machines:\n  - {name: "
			 "a123456789012345678901234567890123456789012345678901234567890123,"
			 " model: \"4090\", gpus: 8}\n",
		  4, "machines[0].name", "longer than 63 characters" },
		{ MODELS "machines:\n  - {name: "
			 "a123456789012345678901234567890123456789012345678901234567890,"
			 " model: \"4090\", gpus: 8, count: 100}\n",
		  4, "machines[0].name", "-99' would be longer than 63 characters" },
		{ "models:\n  - {name: RTX 4090}\n" MACHINES, 2, "models[0].name", "has a space" },
		{ "name: my lab\n" MODELS MACHINES, 1, "name", "has a space" },
		/* prices */
		{ MODEL_WITH(MODEL_BASE ", price: {on-demand: \"3.60\", spot: \"4\"}"), 2,
		  "models[0].price.spot", "spot price 4.00 is above the on-demand price 3.60" },
		{ MODEL_WITH(MODEL_BASE ", price: {on-demand: -1, spot: 0}"), 2,
		  "models[0].price.on-demand", "bad price \"-1\": must not be negative" },
		{ MODEL_WITH(MODEL_BASE ", price: {on-demand: 1, spot: \"-0.5\"}"), 2,
		  "models[0].price.spot", "must not be negative" },
		{ MODEL_WITH(MODEL_BASE ", price: {on-demand: 1e3, spot: 0}"), 2,
		  "models[0].price.on-demand", "bad price \"1e3\"" },
		{ MODEL_WITH(MODEL_BASE ", price: {on-demand: 1.1234567, spot: 0}"), 2,
		  "models[0].price.on-demand", "at most 6 decimals" },
		{ MODEL_WITH(MODEL_BASE ", price: {on-demand: \"\", spot: 0}"), 2,
		  "models[0].price.on-demand", "bad price \"\"" },
		{ MODEL_WITH(MODEL_BASE ", price: {on-demand: 1}"), 2, "models[0].price.spot",
		  "missing" },
		{ "cpu_price: {on-demand: \"0.01\", spot: \"0.015\"}\n" MODELS MACHINES, 1,
		  "cpu_price.spot", "spot price 0.015 is above the on-demand price 0.01" },
		/* quantities */
		{ MODEL_WITH("vram: 24Qi"), 2, "models[0].vram", "bad memory quantity \"24Qi\"" },
		{ MODEL_WITH("vram: 0"), 2, "models[0].vram", "must be more than 0" },
		{ MODEL_WITH("vram: -1Gi"), 2, "models[0].vram", "bad memory quantity" },
		{ MODEL_WITH("vram: 0.5"), 2, "models[0].vram", "bad memory quantity" },
		{ MODEL_WITH("vram: 8Ei"), 2, "models[0].vram", "bad memory quantity" },
		{ MODEL_WITH("memory_per_gpu: 1Ei"), 2, "models[0].memory_per_gpu",
		  "is too large" },
		{ MODEL_WITH("cpu_per_gpu: abc"), 2, "models[0].cpu_per_gpu",
		  "bad CPU quantity \"abc\"" },
		{ MODEL_WITH("cpu_per_gpu: 0m"), 2, "models[0].cpu_per_gpu",
		  "must be more than 0" },
		{ MODEL_WITH("cpu_per_gpu: 1.0005"), 2, "models[0].cpu_per_gpu",
		  "bad CPU quantity" },
		{ MODEL_WITH("cpu_per_gpu: 2x"), 2, "models[0].cpu_per_gpu", "bad CPU quantity" },
		{ MODEL_WITH("cpu_per_gpu: \"\""), 2, "models[0].cpu_per_gpu", "bad CPU quantity" },
		{ MODEL_WITH("cpu_per_gpu: 9223372036854775807m"), 2, "models[0].cpu_per_gpu",
		  "is too large" },
		{ MODEL_WITH("cpu_per_gpu: 9223372036854775808m"), 2, "models[0].cpu_per_gpu",
		  "bad CPU quantity" },
		/* other top-level values */
		{ "currency: cny\n" MODELS MACHINES, 1, "currency", "bad currency \"cny\"" },
		{ "currency: CNYY\n" MODELS MACHINES, 1, "currency", "3 uppercase letters" },
		{ "currency: \"\"\n" MODELS MACHINES, 1, "currency", "bad currency" },
		{ "preempt_grace: 30x\n" MODELS MACHINES, 1, "preempt_grace",
		  "bad duration \"30x\"" },
		{ "preempt_grace: 25h\n" MODELS MACHINES, 1, "preempt_grace", "at most 24h" },
		{ "preempt_grace: -5s\n" MODELS MACHINES, 1, "preempt_grace", "bad duration" },
		{ "preempt_grace: 30m1h\n" MODELS MACHINES, 1, "preempt_grace", "bad duration" },
		{ "preempt_grace: \"\"\n" MODELS MACHINES, 1, "preempt_grace", "bad duration" },
		{ "spot_risk_threshold: 1.5\n" MODELS MACHINES, 1, "spot_risk_threshold",
		  "bad probability \"1.5\"" },
		{ "spot_risk_threshold: -0.1\n" MODELS MACHINES, 1, "spot_risk_threshold",
		  "from 0 to 1" },
		{ "spot_risk_threshold: 120%\n" MODELS MACHINES, 1, "spot_risk_threshold",
		  "bad probability" },
		{ "spot_risk_threshold: low\n" MODELS MACHINES, 1, "spot_risk_threshold",
		  "bad probability \"low\"" },
		{ "spot_risk_threshold: 0.2x\n" MODELS MACHINES, 1, "spot_risk_threshold",
		  "bad probability" },
		{ "spot_risk_threshold: nan\n" MODELS MACHINES, 1, "spot_risk_threshold",
		  "bad probability" },
		{ "spot_risk_threshold: [0.2]\n" MODELS MACHINES, 1, "spot_risk_threshold",
		  "a probability" },
		/* missing things */
		{ MODELS "machines: []\n", 3, "machines", "no machines" },
		{ "# just models\n" MODELS, 2, "machines", "missing (required)" },
		{ MACHINES, 1, "models", "missing" },
		{ "models:\n  - {name: \"4090\", " PRICE_OK "}\n" MACHINES, 2, "models[0].vram",
		  "missing" },
		{ MODELS "machines:\n  - {name: m0, gpus: 8}\n", 4, "machines[0].model",
		  "missing" },
		/* YAML-level problems */
		{ MODELS "machines:\n  - &m {name: m0, model: \"4090\", gpus: 8}\n  - *m\n", 5,
		  "machines[1]", "YAML aliases (*name) are not allowed" },
		{ "models: [\n", 2, NULL, "YAML syntax error" },
		{ MODELS "machines:\n  - {name: m0\n", 5, NULL, "YAML syntax error" },
		{ "name: 'lab\n", 2, NULL, "YAML syntax error: found unexpected end of stream" },
		{ "\t- x\n", 1, NULL, "YAML syntax error: a tab in the indentation" },
		{ "", 1, NULL, "the cluster file is empty" },
		{ "# only a comment\n", 1, NULL, "the cluster file is empty" },
		{ "hello\n", 1, NULL, "must be a mapping with models and machines, not a string" },
		{ "---\n", 1, NULL, "the cluster file is empty" },
		{ "--- ''\n", 1, NULL, "must be a mapping" },
		{ "- a\n", 1, NULL, "not a list" },
		{ MODELS MACHINES "---\n" MODELS MACHINES, 5, NULL, "a second YAML document" },
		{ "name: !custom lab\n" MODELS MACHINES, 1, "name",
		  "unsupported YAML tag '!custom'" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		parse_bad(cases[i].text, cases[i].line, cases[i].key, cases[i].frag);
}

static void test_file_limits(void **state)
{
	size_t cap = 70 * 200 + 200;
	char *text = malloc(cap), *big;
	size_t o = 0;
	struct jf_cluster *c;
	struct jf_error err;

	(void)state;
	assert_non_null(text);
	/* 64 models are fine, 65 are not */
	for (int nm = 64; nm <= 65; nm++) {
		o = (size_t)snprintf(text, cap,
				     "machines:\n  - {name: a, model: m63, gpus: 1}\n"
				     "models:\n");
		for (int i = 0; i < nm; i++)
			o += (size_t)snprintf(
				text + o, cap - o,
				"  - {name: m%d, vram: 1Gi, cpu_per_gpu: 1, "
				"memory_per_gpu: 1Gi, price: {on-demand: 1, spot: 0}}\n",
				i);
		if (nm == 65) {
			parse_bad(text, 68, "models[64]", "more than 64 models");
			continue;
		}
		c = parse_ok(text);
		assert_int_equal(c->nmodels, 64);
		assert_int_equal(c->machines[0].model, 63);
		jf_cluster_free(c);
	}

	/* 100000 machines are fine, one more is not */
	c = parse_ok(MODELS "machines:\n  - {name: n, model: \"4090\", gpus: 1, count: 100000}\n");
	assert_int_equal(c->nmachines, 100000);
	assert_string_equal(c->machines[99999].name, "n-99999");
	jf_cluster_free(c);
	parse_bad(MODELS "machines:\n  - {name: n, model: \"4090\", gpus: 1, count: 99999}\n"
			 "  - {name: a, model: \"4090\", gpus: 1}\n"
			 "  - {name: b, model: \"4090\", gpus: 1}\n",
		  6, "machines[2].name", "more than 100000 machines in all");
	parse_bad(MODELS "machines:\n  - {name: a, model: \"4090\", gpus: 1}\n"
			 "  - {name: n, model: \"4090\", gpus: 1, count: 100000}\n",
		  5, "machines[1].count", "more than 100000 machines in all");
	/* duplicates among many machines are still found */
	parse_bad(MODELS "machines:\n  - {name: n, model: \"4090\", gpus: 1, count: 50000}\n"
			 "  - {name: n-49999, model: \"4090\", gpus: 1}\n",
		  5, "machines[1].name", "duplicate machine name 'n-49999'");

	/* nesting never recurses without bound */
	o = 0;
	o += (size_t)snprintf(text + o, cap - o, "models: ");
	for (int i = 0; i < 5000; i++)
		text[o++] = '[';
	for (int i = 0; i < 5000; i++)
		text[o++] = ']';
	text[o++] = '\n';
	text[o] = '\0';
	parse_bad(text, 1, NULL, "nested deeper than 32 levels");
	assert_int_equal(jf_cluster_parse(text, strlen(text), &c, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "key 'models[0][0]"));
	free(text);

	/* a big file written out machine by machine is read whole: far more
	 * YAML nodes and bytes than a spec may have */
	big = malloc(1 << 20);
	assert_non_null(big);
	o = (size_t)snprintf(big, 1 << 20, "%s", MODELS "machines:\n");
	for (int i = 0; i < 20000; i++)
		o += (size_t)snprintf(big + o, (1 << 20) - o,
				      "  - {name: m%05d, model: \"4090\", gpus: 1}\n", i);
	assert_true(o > 800000 && o < (1 << 20));
	c = parse_ok(big);
	assert_int_equal(c->nmachines, 20000);
	assert_string_equal(c->machines[19999].name, "m19999");
	jf_cluster_free(c);
	free(big);

	/* over 1 MiB: too large, whatever it holds */
	big = malloc((1 << 20) + 2);
	assert_non_null(big);
	memset(big, '#', (1 << 20) + 1);
	big[(1 << 20) + 1] = '\0';
	c = (struct jf_cluster *)0x1;
	assert_int_equal(jf_cluster_parse(big, (1 << 20) + 1, &c, &err), JF_EFBIG);
	assert_null(c);
	assert_non_null(strstr(err.msg, "larger than"));
	/* exactly 1 MiB is read (and is a file of comments: empty) */
	assert_int_equal(jf_cluster_parse(big, 1 << 20, &c, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "empty"));
	free(big);

	/* text need not be NUL-terminated: only len bytes are read */
	{
		static const char t[] = MODELS MACHINES "junk: [";

		c = parse_ok(MODELS MACHINES);
		jf_cluster_free(c);
		assert_int_equal(jf_cluster_parse(t, strlen(MODELS MACHINES), &c, &err), JF_OK);
		jf_cluster_free(c);
	}
	/* NULL err is allowed */
	assert_int_equal(jf_cluster_parse("x", 1, &c, NULL), JF_EINVAL);
	assert_null(c);
}

/* Every allocation of a parse and of the built-in cluster may fail: then
 * JF_ENOMEM (or, for libyaml's internal buffers, an error), and nothing
 * leaks. */
/* Slurm's GPU types: slurm_names per model, slurm_untyped_gpu, case aside. */
static void test_slurm_names(void **state)
{
	(void)state;
	struct jf_cluster *c =
		parse_ok("slurm_untyped_gpu: A100\n"
			 "models:\n"
			 "  - {name: A100, slurm_names: [a100-sxm4-80gb, nvidia_a100], " MODEL_BASE
			 ", " PRICE_OK "}\n"
			 "  - {name: \"4090\", " MODEL_BASE ", " PRICE_OK "}\n"
			 "  - {name: H800, slurm_names: [], " MODEL_BASE ", " PRICE_OK "}\n"
			 "machines:\n  - {name: m0, model: A100, gpus: 8}\n");
	assert_int_equal(c->models[0].nslurm_names, 2);
	assert_string_equal(c->models[0].slurm_names[1], "nvidia_a100");
	assert_int_equal(c->untyped_model, 0);
	/* the model's own name, case aside; its Slurm names, case aside */
	assert_int_equal(jf_cluster_model_for_gres(c, "A100"), 0);
	assert_int_equal(jf_cluster_model_for_gres(c, "a100"), 0);
	assert_int_equal(jf_cluster_model_for_gres(c, "NVIDIA_A100"), 0);
	assert_int_equal(jf_cluster_model_for_gres(c, "a100-sxm4-80gb"), 0);
	assert_int_equal(jf_cluster_model_for_gres(c, "4090"), 1);
	assert_int_equal(jf_cluster_model_for_gres(c, "h800"), 2);
	/* untyped GRES: the cluster's slurm_untyped_gpu */
	assert_int_equal(jf_cluster_model_for_gres(c, ""), 0);
	/* nothing prices these */
	assert_int_equal(jf_cluster_model_for_gres(c, "t4"), -1);
	assert_int_equal(jf_cluster_model_for_gres(c, "a10"), -1);
	assert_int_equal(jf_cluster_model_for_gres(c, NULL), -1);
	/* exact names stay exact for specs */
	assert_int_equal(jf_cluster_model_index(c, "a100"), -1);
	jf_cluster_free(c);
	/* without slurm_untyped_gpu untyped GPUs are nobody's */
	c = parse_ok(MODELS MACHINES);
	assert_int_equal(c->untyped_model, -1);
	assert_int_equal(jf_cluster_model_for_gres(c, ""), -1);
	assert_int_equal(jf_cluster_model_for_gres(c, "4090"), 0);
	jf_cluster_free(c);
	/* the built-in cluster maps typed GRES by name only */
	c = jf_cluster_builtin();
	assert_int_equal(c->untyped_model, -1);
	assert_int_equal(jf_cluster_model_for_gres(c, "l40s"), 1);
	jf_cluster_free(c);

	/* errors name the key and the line */
	parse_bad("slurm_untyped_gpu: T4\n" MODELS MACHINES, 1, "slurm_untyped_gpu",
		  "unknown model 'T4'");
	parse_bad("slurm_untyped_gpu: [a]\n" MODELS MACHINES, 1, "slurm_untyped_gpu",
		  "expected a name, got a list");
	parse_bad(MODEL_WITH(MODEL_BASE ", " PRICE_OK ", slurm_names: a100"), 2,
		  "models[0].slurm_names", "expected a list, got a string");
	parse_bad(MODEL_WITH(MODEL_BASE ", " PRICE_OK ", slurm_names: [\"a b\"]"), 2,
		  "models[0].slurm_names[0]", "");
	parse_bad(MODEL_WITH(MODEL_BASE ", " PRICE_OK ", slurm_names: [{a: 1}]"), 2,
		  "models[0].slurm_names[0]", "expected a name, got a mapping");
	parse_bad(MODEL_WITH(MODEL_BASE
			     ", " PRICE_OK
			     ", slurm_names: [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q]"),
		  2, "models[0].slurm_names[16]", "more than 16 Slurm names");
	/* one Slurm type is one model: not a second model's name or Slurm name */
	parse_bad("models:\n"
		  "  - {name: A100, slurm_names: [x100], " MODEL_BASE ", " PRICE_OK "}\n"
		  "  - {name: X100, " MODEL_BASE ", " PRICE_OK "}\n"
		  "machines:\n  - {name: m0, model: A100, gpus: 8}\n",
		  2, "models[0].slurm_names[0]", "Slurm name 'x100' is also model 'X100'");
	parse_bad("models:\n"
		  "  - {name: A100, slurm_names: [same], " MODEL_BASE ", " PRICE_OK "}\n"
		  "  - {name: B100, slurm_names: [SAME], " MODEL_BASE ", " PRICE_OK "}\n"
		  "machines:\n  - {name: m0, model: A100, gpus: 8}\n",
		  3, "models[1].slurm_names[0]", "each Slurm GPU type is one model");
	parse_bad("models:\n"
		  "  - {name: A100, slurm_names: [dup, Dup], " MODEL_BASE ", " PRICE_OK "}\n"
		  "machines:\n  - {name: m0, model: A100, gpus: 8}\n",
		  2, "models[0].slurm_names[1]", "is also model 'A100'");
}

static void test_out_of_memory(void **state)
{
	(void)state;
#ifdef NO_MALLOC_HOOK
	skip();
#else
	static const char *const texts[] = {
		full_file,
		MODELS "machines:\n  - {name: n, model: \"4090\", gpus: 1, count: 40}\n",
		MODELS "machines:\n  - {name: m0, model: \"4090\", gpus: 8}\n"
		       "  - {name: m0, model: \"4090\", gpus: 8}\n",
	};
	struct jf_error err;
	struct jf_cluster *c;

	for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
		size_t len = strlen(texts[t]);
		enum jf_err rc0;
		int nomem = 0;

		/* the undisturbed result */
		rc0 = jf_cluster_parse(texts[t], len, &c, &err);
		jf_cluster_free(c);
		for (long n = 0;; n++) {
			enum jf_err rc;

			hook.armed = true;
			hook.fail_at = n;
			hook.nalloc = 0;
			hook.live = 0;
			rc = jf_cluster_parse(texts[t], len, &c, &err);
			if (rc == JF_OK) {
				assert_non_null(c);
				jf_cluster_free(c);
			} else {
				assert_null(c);
			}
			hook.armed = false;
			if (hook.live != 0)
				fail_msg("text %zu, failing allocation %ld: %ld blocks leaked", t,
					 n, hook.live);
			if (hook.nalloc <= n) {
				assert_int_equal(rc, rc0); /* nothing failed */
				break;
			}
			/* a failed allocation is either reported or, where
			 * the library has a fallback (qsort), harmless */
			if (rc == JF_ENOMEM)
				nomem++;
			else
				assert_int_equal(rc, rc0);
		}
		assert_true(nomem > 0);
	}
	for (long n = 0;; n++) {
		hook.armed = true;
		hook.fail_at = n;
		hook.nalloc = 0;
		hook.live = 0;
		c = jf_cluster_builtin();
		jf_cluster_free(c);
		hook.armed = false;
		assert_int_equal(hook.live, 0);
		if (hook.nalloc <= n) {
			assert_non_null(c);
			break;
		}
		assert_null(c);
	}
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin),
		cmocka_unit_test(test_file_full),
		cmocka_unit_test(test_file_defaults),
		cmocka_unit_test(test_file_quantities),
		cmocka_unit_test(test_file_durations),
		cmocka_unit_test(test_file_risk),
		cmocka_unit_test(test_file_example_message),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_file_limits),
		cmocka_unit_test(test_slurm_names),
		cmocka_unit_test(test_out_of_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
