/*
 * cluster.c - the built-in cluster and the YAML cluster file.
 *
 * What holds for every cluster this module returns: at least one machine;
 * every machine's model indexes models[]; model and machine names follow
 * the directory-name rule (core/names.h) and are unique; 1 <= gpus <=
 * JF_MACHINE_MAX_GPUS; cpu_milli and mem_bytes are gpus x the model's
 * per-GPU figures (never overflowing); prices are >= 0 and spot <= on-demand.
 *
 * The file is read with libyaml's event API by recursive descent: each
 * mapping has a key table indexed by a named enum, and a handler consumes
 * the value of each key, so the parser never holds more than one event and
 * never builds a tree.  The key path ("models[0].price.spot") is kept in
 * the parser state and every error names it and the line.  Aliases are
 * refused (a cluster file has no use for them and they are the usual way
 * to blow up a YAML document); input is capped at 1 MiB and nesting at 16.
 *
 * Machines may name a model defined later in the file, so model references
 * and duplicate machine names are checked once the whole file is read.
 */
#include "core/cluster.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "core/billing.h"
#include "core/names.h"
#include "core/quantity.h"

#define CLUSTER_MAX_BYTES (1024 * 1024)
#define CLUSTER_MAX_DEPTH 16
#define PATH_LEN          160
#define GIB               (INT64_C(1) << 30)

/* ---- the built-in cluster (reference 7) ---- */

static const struct builtin_model {
	const char *name;
	int64_t vram_gi, cores, mem_gi;
	int64_t ondemand, spot; /* micro-units per GPU-hour */
} builtin_models[] = {
	{ "4090", 24, 20, 101, 3600000, 1080000 },
	{ "L40S", 48, 16, 120, 4800000, 1440000 },
	{ "H800", 80, 20, 200, 16000000, 4800000 },
	{ "A800", 80, 16, 120, 12000000, 3600000 },
};

static const struct builtin_group {
	const char *prefix; /* machines prefix-0 .. prefix-(n-1) */
	int model;          /* index into builtin_models */
	int n;
	int gpus;
} builtin_groups[] = {
	{ "4090", 0, 4, 8 },
	{ "h800", 2, 2, 8 },
	{ "l40s", 1, 1, 8 },
	{ "a800", 3, 1, 8 },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

void jf_cluster_free(struct jf_cluster *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nmodels; i++) {
		free(c->models[i].name);
		for (size_t k = 0; k < c->models[i].nslurm_names; k++)
			free(c->models[i].slurm_names[k]);
		free(c->models[i].slurm_names);
	}
	for (size_t i = 0; i < c->nmachines; i++) {
		free(c->machines[i].name);
		free(c->machines[i].slurm_gpu);
	}
	free(c->models);
	free(c->machines);
	free(c->name);
	free(c->currency);
	free(c);
}

static void machine_size(struct jf_machine *m, const struct jf_gpu_model *gm)
{
	/* bounded at parse time: per-GPU figures <= INT64_MAX / MAX_GPUS */
	m->cpu_milli = (int64_t)m->gpus * gm->cpu_milli_per_gpu;
	m->mem_bytes = (int64_t)m->gpus * gm->mem_bytes_per_gpu;
}

struct jf_cluster *jf_cluster_builtin(void)
{
	struct jf_cluster *c = calloc(1, sizeof(*c));
	size_t total = 0;

	if (!c)
		return NULL;
	for (size_t g = 0; g < NELEM(builtin_groups); g++)
		total += (size_t)builtin_groups[g].n;
	c->name = strdup("builtin");
	c->currency = strdup("CNY");
	c->models = calloc(NELEM(builtin_models), sizeof(*c->models));
	c->machines = calloc(total, sizeof(*c->machines));
	if (!c->name || !c->currency || !c->models || !c->machines)
		goto fail;
	c->cpu_price_ondemand = 50000;
	c->cpu_price_spot = 15000;
	c->preempt_grace_s = 30;
	c->spot_risk_max = JF_SPOT_RISK_DEFAULT;
	c->untyped_model = -1;
	for (size_t i = 0; i < NELEM(builtin_models); i++) {
		const struct builtin_model *b = &builtin_models[i];
		struct jf_gpu_model *m = &c->models[i];

		m->name = strdup(b->name);
		if (!m->name)
			goto fail;
		c->nmodels++;
		m->vram_bytes = b->vram_gi * GIB;
		m->cpu_milli_per_gpu = b->cores * 1000;
		m->mem_bytes_per_gpu = b->mem_gi * GIB;
		m->price_ondemand = b->ondemand;
		m->price_spot = b->spot;
	}
	for (size_t g = 0; g < NELEM(builtin_groups); g++) {
		const struct builtin_group *b = &builtin_groups[g];

		for (int i = 0; i < b->n; i++) {
			struct jf_machine *m = &c->machines[c->nmachines];
			char name[JF_NAME_MAX_LEN + 1];

			snprintf(name, sizeof(name), "%s-%d", b->prefix, i);
			m->name = strdup(name);
			if (!m->name)
				goto fail;
			c->nmachines++;
			m->model = (size_t)b->model;
			m->gpus = b->gpus;
			machine_size(m, &c->models[m->model]);
		}
	}
	return c;
fail:
	jf_cluster_free(c);
	return NULL;
}

int jf_cluster_model_index(const struct jf_cluster *c, const char *name)
{
	if (!c || !name)
		return -1;
	for (size_t i = 0; i < c->nmodels; i++)
		if (strcmp(c->models[i].name, name) == 0)
			return (int)i;
	return -1;
}

int jf_cluster_model_for_gres(const struct jf_cluster *c, const char *type)
{
	if (!c || !type)
		return -1;
	if (!type[0])
		return c->untyped_model;
	for (size_t i = 0; i < c->nmodels; i++)
		if (strcasecmp(c->models[i].name, type) == 0)
			return (int)i;
	for (size_t i = 0; i < c->nmodels; i++)
		for (size_t k = 0; k < c->models[i].nslurm_names; k++)
			if (strcasecmp(c->models[i].slurm_names[k], type) == 0)
				return (int)i;
	return -1;
}

/* ---- integers ---- */

/* Decimal digits only, no sign, no overflow. */
static bool parse_uint(const char *s, int64_t *v)
{
	int64_t r = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (r > (INT64_MAX - (*s - '0')) / 10)
			return false;
		r = r * 10 + (*s - '0');
	}
	*v = r;
	return true;
}

/* ---- the parser ---- */

struct mref {        /* one machines[] entry of the file */
	char *model; /* model name as written */
	int model_line;
	int name_line;
	size_t src;      /* index in machines[] of the file */
	size_t first, n; /* the machines it expanded into */
};

struct cparse {
	yaml_parser_t yp;
	yaml_event_t ev;
	bool have_ev;
	int depth;
	char path[PATH_LEN];
	size_t plen;
	struct jf_error *err;
	struct jf_cluster *c;
	size_t cap_models, cap_machines;
	int model_line[JF_CLUSTER_MAX_MODELS];
	struct mref *refs;
	size_t nrefs, cap_refs;
	char *untyped; /* slurm_untyped_gpu as written */
	int untyped_line;
};

static int ev_line(const struct cparse *p)
{
	return (int)p->ev.start_mark.line + 1;
}

static const char *ev_kind(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	case YAML_SEQUENCE_START_EVENT:
		return "a list";
	case YAML_SCALAR_EVENT:
		return "a scalar";
	default:
		return "something else";
	}
}

/* JF_EINVAL naming the current key path and line. */
static enum jf_err perr(struct cparse *p, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum jf_err perr(struct cparse *p, int line, const char *fmt, ...)
{
	char msg[JF_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->plen == 0)
		return jf_error_set(p->err, JF_EINVAL, line, "%s", msg);
	return jf_error_set(p->err, JF_EINVAL, line, "key '%s': %s", p->path, msg);
}

static enum jf_err nomem(struct cparse *p)
{
	return jf_error_set(p->err, JF_ENOMEM, 0, "out of memory");
}

static size_t path_push(struct cparse *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static size_t path_push(struct cparse *p, const char *fmt, ...)
{
	size_t old = p->plen;
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(p->path + old, sizeof(p->path) - old, fmt, ap);
	va_end(ap);
	if (w < 0)
		w = 0;
	p->plen = old + (size_t)w;
	if (p->plen >= sizeof(p->path))
		p->plen = sizeof(p->path) - 1;
	return old;
}

static void path_pop(struct cparse *p, size_t old)
{
	p->plen = old;
	p->path[old] = '\0';
}

/* Move to the next event; the current one is freed. */
static enum jf_err next(struct cparse *p)
{
	if (p->have_ev) {
		yaml_event_delete(&p->ev);
		p->have_ev = false;
	}
	if (!yaml_parser_parse(&p->yp, &p->ev)) {
		if (p->yp.error == YAML_MEMORY_ERROR)
			return nomem(p);
		return jf_error_set(p->err, JF_EINVAL, (int)p->yp.problem_mark.line + 1,
				    "bad YAML: %s%s%s",
				    p->yp.problem ? p->yp.problem : "syntax error",
				    p->yp.context ? " " : "", p->yp.context ? p->yp.context : "");
	}
	p->have_ev = true;
	switch (p->ev.type) {
	case YAML_ALIAS_EVENT:
		return perr(p, ev_line(p), "YAML aliases (*name) are not allowed in cluster files");
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT:
		if (++p->depth > CLUSTER_MAX_DEPTH)
			return perr(p, ev_line(p), "nested deeper than %d levels",
				    CLUSTER_MAX_DEPTH);
		break;
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		p->depth--;
		break;
	default:
		break;
	}
	return JF_OK;
}

/* The current event as a string, or an error saying what was expected. */
static enum jf_err want_scalar(struct cparse *p, const char *what, const char **out)
{
	if (p->ev.type != YAML_SCALAR_EVENT)
		return perr(p, ev_line(p), "must be %s, not %s", what, ev_kind(&p->ev));
	*out = (const char *)p->ev.data.scalar.value;
	if (strlen(*out) != p->ev.data.scalar.length)
		return perr(p, ev_line(p), "contains a NUL character");
	return JF_OK;
}

static enum jf_err grow(struct cparse *p, void **arr, size_t *cap, size_t need, size_t elsize)
{
	size_t ncap = *cap ? *cap : 8;
	void *n;

	if (need <= *cap)
		return JF_OK;
	while (ncap < need)
		ncap *= 2;
	if (ncap > SIZE_MAX / elsize)
		return nomem(p);
	n = realloc(*arr, ncap * elsize);
	if (!n)
		return nomem(p);
	*arr = n;
	*cap = ncap;
	return JF_OK;
}

struct keydef {
	const char *name;
	bool required;
};

typedef enum jf_err (*value_fn)(struct cparse *p, int key, void *ctx);

/* The current event starts a mapping whose keys come from keys[]; fn
 * consumes each value.  Unknown, repeated and missing keys are errors. */
static enum jf_err parse_map(struct cparse *p, const struct keydef *keys, int nkeys, value_fn fn,
			     void *ctx)
{
	char q[JF_NAME_QUOTE_MAX];
	int map_line = ev_line(p);
	uint32_t seen = 0;
	enum jf_err rc;
	const char *key;
	size_t old;
	int k;

	if (p->ev.type != YAML_MAPPING_START_EVENT)
		return perr(p, ev_line(p), "must be a mapping, not %s", ev_kind(&p->ev));
	for (;;) {
		if ((rc = next(p)))
			return rc;
		if (p->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (p->ev.type != YAML_SCALAR_EVENT)
			return perr(p, ev_line(p), "keys must be strings, not %s", ev_kind(&p->ev));
		key = (const char *)p->ev.data.scalar.value;
		for (k = 0; k < nkeys; k++)
			if (strcmp(key, keys[k].name) == 0)
				break;
		if (k == nkeys) {
			char expected[256];
			size_t o = 0;

			expected[0] = '\0';
			for (int i = 0; i < nkeys && o < sizeof(expected); i++)
				o += (size_t)snprintf(expected + o, sizeof(expected) - o, "%s%s",
						      i ? ", " : "", keys[i].name);
			jf_name_quote(key, q, sizeof(q));
			path_push(p, p->plen ? ".%s" : "%s", q);
			return perr(p, ev_line(p), "unknown key (known: %s)", expected);
		}
		old = path_push(p, p->plen ? ".%s" : "%s", keys[k].name);
		if (seen & (UINT32_C(1) << k))
			return perr(p, ev_line(p), "given twice");
		seen |= UINT32_C(1) << k;
		if ((rc = next(p)) || (rc = fn(p, k, ctx)))
			return rc;
		path_pop(p, old);
	}
	for (k = 0; k < nkeys; k++) {
		if (!keys[k].required || (seen & (UINT32_C(1) << k)))
			continue;
		path_push(p, p->plen ? ".%s" : "%s", keys[k].name);
		return perr(p, map_line, "missing (required)");
	}
	return JF_OK;
}

typedef enum jf_err (*item_fn)(struct cparse *p, size_t i, void *ctx);

/* The current event starts a list; fn consumes each item.  *n gets the
 * number of items. */
static enum jf_err parse_seq(struct cparse *p, item_fn fn, void *ctx, size_t *n)
{
	enum jf_err rc;
	size_t i, old;

	if (p->ev.type != YAML_SEQUENCE_START_EVENT)
		return perr(p, ev_line(p), "must be a list, not %s", ev_kind(&p->ev));
	for (i = 0;; i++) {
		old = path_push(p, "[%zu]", i);
		if ((rc = next(p)))
			return rc;
		if (p->ev.type == YAML_SEQUENCE_END_EVENT) {
			path_pop(p, old);
			break;
		}
		if ((rc = fn(p, i, ctx)))
			return rc;
		path_pop(p, old);
	}
	*n = i;
	return JF_OK;
}

/* A name under the directory-name rule, copied. */
static enum jf_err take_name(struct cparse *p, char **out)
{
	struct jf_error nerr;
	const char *s;
	enum jf_err rc;

	if ((rc = want_scalar(p, "a name", &s)))
		return rc;
	if (!jf_name_valid(s, &nerr))
		return perr(p, ev_line(p), "%s", nerr.msg);
	free(*out);
	*out = strdup(s);
	return *out ? JF_OK : nomem(p);
}

/* ---- price maps: {on-demand: "3.60", spot: "1.08"} ---- */

enum { PRICE_ONDEMAND, PRICE_SPOT, PRICE_NKEYS };

static const struct keydef price_keys[PRICE_NKEYS] = {
	[PRICE_ONDEMAND] = { "on-demand", true },
	[PRICE_SPOT] = { "spot", true },
};

struct price_ctx {
	int64_t v[PRICE_NKEYS];
	int line[PRICE_NKEYS];
};

static enum jf_err price_value(struct cparse *p, int key, void *ctx)
{
	struct price_ctx *pc = ctx;
	char q[JF_NAME_QUOTE_MAX];
	const char *s;
	enum jf_err rc;

	if ((rc = want_scalar(p, "a price", &s)))
		return rc;
	pc->line[key] = ev_line(p);
	if (jf_money_parse(s, &pc->v[key]))
		return JF_OK;
	jf_name_quote(s, q, sizeof(q));
	if (s[0] == '-')
		return perr(p, ev_line(p), "bad price \"%s\": must not be negative", q);
	return perr(p, ev_line(p),
		    "bad price \"%s\": want an amount like \"3.60\" with at most 6 decimals", q);
}

static enum jf_err parse_price(struct cparse *p, int64_t *ondemand, int64_t *spot)
{
	struct price_ctx pc = { { 0 }, { 0 } };
	enum jf_err rc;

	if ((rc = parse_map(p, price_keys, PRICE_NKEYS, price_value, &pc)))
		return rc;
	if (pc.v[PRICE_SPOT] > pc.v[PRICE_ONDEMAND]) {
		char a[32], b[32];

		jf_money_format(pc.v[PRICE_SPOT], NULL, a, sizeof(a));
		jf_money_format(pc.v[PRICE_ONDEMAND], NULL, b, sizeof(b));
		path_push(p, ".spot");
		return perr(p, pc.line[PRICE_SPOT], "spot price %s is above the on-demand price %s",
			    a, b);
	}
	*ondemand = pc.v[PRICE_ONDEMAND];
	*spot = pc.v[PRICE_SPOT];
	return JF_OK;
}

/* ---- models[i] ---- */

enum { MODEL_NAME, MODEL_VRAM, MODEL_CPU, MODEL_MEM, MODEL_PRICE, MODEL_SLURM, MODEL_NKEYS };

static const struct keydef model_keys[MODEL_NKEYS] = {
	[MODEL_NAME] = { "name", true },       [MODEL_VRAM] = { "vram", true },
	[MODEL_CPU] = { "cpu_per_gpu", true }, [MODEL_MEM] = { "memory_per_gpu", true },
	[MODEL_PRICE] = { "price", true },     [MODEL_SLURM] = { "slurm_names", false },
};

/* slurm_names: [a100, nvidia_a100]: Slurm GRES types, each a name. */
static enum jf_err slurm_name_item(struct cparse *p, size_t i, void *ctx)
{
	struct jf_gpu_model *m = ctx;
	if (i >= JF_SLURM_NAMES_MAX)
		return perr(p, ev_line(p), "more than %d Slurm names", JF_SLURM_NAMES_MAX);
	char **names = realloc(m->slurm_names, (i + 1) * sizeof(*names));
	if (!names)
		return nomem(p);
	m->slurm_names = names;
	names[i] = NULL;
	m->nslurm_names = i + 1;
	return take_name(p, &names[i]);
}

/* A positive quantity small enough that JF_MACHINE_MAX_GPUS of it fit. */
static enum jf_err take_quantity(struct cparse *p, bool cpu, int64_t *out)
{
	char q[JF_NAME_QUOTE_MAX];
	const char *s;
	enum jf_err rc;
	bool ok;

	if ((rc = want_scalar(p, "a quantity", &s)))
		return rc;
	ok = cpu ? jf_cpu_parse(s, out) : jf_mem_parse(s, out);
	jf_name_quote(s, q, sizeof(q));
	if (!ok)
		return perr(p, ev_line(p), "bad %s quantity \"%s\" (e.g. %s)",
			    cpu ? "CPU" : "memory", q,
			    cpu ? "20, 20000m, 1.5" : "24Gi, 101G, 51200Mi");
	if (*out <= 0)
		return perr(p, ev_line(p), "must be more than 0");
	if (*out > INT64_MAX / JF_MACHINE_MAX_GPUS)
		return perr(p, ev_line(p), "\"%s\" is too large", q);
	return JF_OK;
}

static enum jf_err model_value(struct cparse *p, int key, void *ctx)
{
	struct jf_gpu_model *m = ctx;

	switch (key) {
	case MODEL_NAME:
		return take_name(p, &m->name);
	case MODEL_VRAM:
		return take_quantity(p, false, &m->vram_bytes);
	case MODEL_CPU:
		return take_quantity(p, true, &m->cpu_milli_per_gpu);
	case MODEL_MEM:
		return take_quantity(p, false, &m->mem_bytes_per_gpu);
	case MODEL_PRICE:
		return parse_price(p, &m->price_ondemand, &m->price_spot);
	case MODEL_SLURM: {
		size_t n;
		return parse_seq(p, slurm_name_item, m, &n);
	}
	}
	return JF_OK;
}

static enum jf_err model_item(struct cparse *p, size_t i, void *ctx)
{
	(void)ctx;
	struct jf_cluster *c = p->c;
	struct jf_gpu_model *m;
	int line = ev_line(p);
	enum jf_err rc;

	if (i >= JF_CLUSTER_MAX_MODELS)
		return perr(p, line, "more than %d models", JF_CLUSTER_MAX_MODELS);
	rc = grow(p, (void **)&c->models, &p->cap_models, c->nmodels + 1, sizeof(*c->models));
	if (rc)
		return rc;
	m = &c->models[c->nmodels++];
	memset(m, 0, sizeof(*m));
	p->model_line[i] = line;
	if ((rc = parse_map(p, model_keys, MODEL_NKEYS, model_value, m)))
		return rc;
	for (size_t j = 0; j < i; j++) {
		if (strcmp(c->models[j].name, m->name) == 0) {
			path_push(p, ".name");
			return perr(p, line, "duplicate model name '%s' (first at line %d)",
				    m->name, p->model_line[j]);
		}
	}
	return JF_OK;
}

/* ---- machines[i] ---- */

enum { MACH_NAME, MACH_MODEL, MACH_GPUS, MACH_COUNT, MACH_NKEYS };

static const struct keydef mach_keys[MACH_NKEYS] = {
	[MACH_NAME] = { "name", true },
	[MACH_MODEL] = { "model", true },
	[MACH_GPUS] = { "gpus", true },
	[MACH_COUNT] = { "count", false },
};

struct mach_ctx {
	char *name;
	char *model;
	int64_t gpus;
	int64_t count; /* 0: not given */
	int name_line, model_line, count_line;
};

static enum jf_err take_int(struct cparse *p, int64_t lo, int64_t hi, int64_t *out)
{
	char q[JF_NAME_QUOTE_MAX];
	const char *s;
	enum jf_err rc;

	if ((rc = want_scalar(p, "an integer", &s)))
		return rc;
	if (!parse_uint(s, out) || *out < lo || *out > hi) {
		jf_name_quote(s, q, sizeof(q));
		return perr(p, ev_line(p), "must be an integer from %lld to %lld, not \"%s\"",
			    (long long)lo, (long long)hi, q);
	}
	return JF_OK;
}

static enum jf_err mach_value(struct cparse *p, int key, void *ctx)
{
	struct mach_ctx *mc = ctx;
	const char *s;
	enum jf_err rc;

	switch (key) {
	case MACH_NAME:
		mc->name_line = ev_line(p);
		return take_name(p, &mc->name);
	case MACH_MODEL:
		mc->model_line = ev_line(p);
		if ((rc = want_scalar(p, "a model name", &s)))
			return rc;
		mc->model = strdup(s);
		return mc->model ? JF_OK : nomem(p);
	case MACH_GPUS:
		return take_int(p, 1, JF_MACHINE_MAX_GPUS, &mc->gpus);
	case MACH_COUNT:
		mc->count_line = ev_line(p);
		return take_int(p, 1, JF_CLUSTER_MAX_MACHINES, &mc->count);
	}
	return JF_OK;
}

/* Append the machines one entry stands for: name, or name-0 .. name-(n-1). */
static enum jf_err mach_expand(struct cparse *p, struct mach_ctx *mc, size_t src)
{
	struct jf_cluster *c = p->c;
	size_t n = mc->count ? (size_t)mc->count : 1;
	struct mref *r;
	enum jf_err rc;

	if (mc->count) {
		char last[32];
		size_t len = strlen(mc->name) + (size_t)snprintf(last, sizeof(last), "-%zu", n - 1);

		if (len > JF_NAME_MAX_LEN) {
			path_push(p, ".name");
			return perr(p, mc->name_line, "'%s-%zu' would be longer than %d characters",
				    mc->name, n - 1, JF_NAME_MAX_LEN);
		}
	}
	if (n > JF_CLUSTER_MAX_MACHINES - c->nmachines) {
		path_push(p, mc->count ? ".count" : ".name");
		return perr(p, mc->count ? mc->count_line : mc->name_line,
			    "more than %d machines in all", JF_CLUSTER_MAX_MACHINES);
	}
	rc = grow(p, (void **)&p->refs, &p->cap_refs, p->nrefs + 1, sizeof(*p->refs));
	if (rc)
		return rc;
	rc = grow(p, (void **)&c->machines, &p->cap_machines, c->nmachines + n,
		  sizeof(*c->machines));
	if (rc)
		return rc;
	r = &p->refs[p->nrefs++];
	r->model = mc->model;
	mc->model = NULL;
	r->model_line = mc->model_line;
	r->name_line = mc->name_line;
	r->src = src;
	r->first = c->nmachines;
	r->n = 0;
	for (size_t i = 0; i < n; i++) {
		struct jf_machine *m = &c->machines[c->nmachines];
		char name[JF_NAME_MAX_LEN + 1];

		memset(m, 0, sizeof(*m));
		if (mc->count) {
			snprintf(name, sizeof(name), "%s-%zu", mc->name, i);
			m->name = strdup(name);
		} else {
			m->name = strdup(mc->name);
		}
		if (!m->name)
			return nomem(p);
		m->gpus = (int)mc->gpus;
		c->nmachines++;
		r->n++;
	}
	return JF_OK;
}

static enum jf_err mach_item(struct cparse *p, size_t i, void *ctx)
{
	(void)ctx;
	struct mach_ctx mc = { 0 };
	enum jf_err rc;

	rc = parse_map(p, mach_keys, MACH_NKEYS, mach_value, &mc);
	if (!rc)
		rc = mach_expand(p, &mc, i);
	free(mc.name);
	free(mc.model);
	return rc;
}

/* ---- the top level ---- */

enum {
	TOP_NAME,
	TOP_CURRENCY,
	TOP_CPU_PRICE,
	TOP_GRACE,
	TOP_RISK,
	TOP_MODELS,
	TOP_MACHINES,
	TOP_UNTYPED,
	TOP_NKEYS
};

static const struct keydef top_keys[TOP_NKEYS] = {
	[TOP_NAME] = { "name", false },
	[TOP_CURRENCY] = { "currency", false },
	[TOP_CPU_PRICE] = { "cpu_price", false },
	[TOP_GRACE] = { "preempt_grace", false },
	[TOP_RISK] = { "spot_risk_threshold", false },
	[TOP_MODELS] = { "models", true },
	[TOP_MACHINES] = { "machines", true },
	[TOP_UNTYPED] = { "slurm_untyped_gpu", false },
};

static enum jf_err take_currency(struct cparse *p, char **out)
{
	char q[JF_NAME_QUOTE_MAX];
	const char *s;
	enum jf_err rc;

	if ((rc = want_scalar(p, "a currency code", &s)))
		return rc;
	if (strlen(s) != 3 || s[0] < 'A' || s[0] > 'Z' || s[1] < 'A' || s[1] > 'Z' || s[2] < 'A' ||
	    s[2] > 'Z') {
		jf_name_quote(s, q, sizeof(q));
		return perr(p, ev_line(p), "bad currency \"%s\": want 3 uppercase letters like CNY",
			    q);
	}
	free(*out);
	*out = strdup(s);
	return *out ? JF_OK : nomem(p);
}

static enum jf_err take_grace(struct cparse *p, int64_t *out)
{
	char q[JF_NAME_QUOTE_MAX];
	const char *s;
	enum jf_err rc;

	if ((rc = want_scalar(p, "a duration", &s)))
		return rc;
	if (!jf_duration_parse(s, out) || *out > 86400) {
		jf_name_quote(s, q, sizeof(q));
		return perr(p, ev_line(p),
			    "bad duration \"%s\": want e.g. 30s, 2m, 1h (at most 24h)", q);
	}
	return JF_OK;
}

/* A probability: 0.2, 0.05, 1, or a percentage 20%.  1 turns the
 * forecast off (every window is low-risk enough); 0 starts a spot task
 * with a unit_runtime only when no on-demand demand is foreseen at all. */
static enum jf_err take_risk(struct cparse *p, double *out)
{
	char q[JF_NAME_QUOTE_MAX];
	const char *s;
	enum jf_err rc;

	if ((rc = want_scalar(p, "a probability", &s)))
		return rc;
	char *end = NULL;
	errno = 0;
	double v = strtod(s, &end);
	bool pct = end && end != s && *end == '%';
	if (pct) {
		end++;
		v /= 100.0;
	}
	if (!isdigit((unsigned char)s[0]) || !end || end == s || *end || errno ||
	    !(v >= 0.0 && v <= 1.0)) {
		jf_name_quote(s, q, sizeof(q));
		return perr(p, ev_line(p),
			    "bad probability \"%s\": want a number from 0 to 1 (e.g. 0.2) "
			    "or a percentage (20%%)",
			    q);
	}
	*out = v;
	return JF_OK;
}

static enum jf_err top_value(struct cparse *p, int key, void *ctx)
{
	(void)ctx;
	struct jf_cluster *c = p->c;
	int line = ev_line(p);
	enum jf_err rc;
	size_t n;

	switch (key) {
	case TOP_NAME:
		return take_name(p, &c->name);
	case TOP_CURRENCY:
		return take_currency(p, &c->currency);
	case TOP_CPU_PRICE:
		return parse_price(p, &c->cpu_price_ondemand, &c->cpu_price_spot);
	case TOP_GRACE:
		return take_grace(p, &c->preempt_grace_s);
	case TOP_RISK:
		return take_risk(p, &c->spot_risk_max);
	case TOP_MODELS:
		return parse_seq(p, model_item, NULL, &n);
	case TOP_MACHINES:
		if ((rc = parse_seq(p, mach_item, NULL, &n)))
			return rc;
		if (n == 0)
			return perr(p, line, "no machines: list at least one");
		return JF_OK;
	case TOP_UNTYPED:
		p->untyped_line = line;
		return take_name(p, &p->untyped);
	}
	return JF_OK;
}

/* slurm_untyped_gpu names a model; no Slurm name belongs to two models. */
static enum jf_err resolve_slurm_names(struct cparse *p)
{
	struct jf_cluster *c = p->c;
	if (p->untyped) {
		c->untyped_model = jf_cluster_model_index(c, p->untyped);
		if (c->untyped_model < 0) {
			path_pop(p, 0);
			path_push(p, "slurm_untyped_gpu");
			return perr(p, p->untyped_line, "unknown model '%s'", p->untyped);
		}
	}
	for (size_t i = 0; i < c->nmodels; i++) {
		for (size_t k = 0; k < c->models[i].nslurm_names; k++) {
			const char *nm = c->models[i].slurm_names[k];
			for (size_t j = 0; j < c->nmodels; j++) {
				bool clash = j != i && strcasecmp(c->models[j].name, nm) == 0;
				/* a repeat is reported where it repeats */
				for (size_t l = 0; !clash && l < c->models[j].nslurm_names; l++)
					clash = (j < i || (j == i && l < k)) &&
						strcasecmp(c->models[j].slurm_names[l], nm) == 0;
				if (!clash)
					continue;
				path_pop(p, 0);
				path_push(p, "models[%zu].slurm_names[%zu]", i, k);
				return perr(p, p->model_line[i],
					    "Slurm name '%s' is also model '%s' or one of its "
					    "Slurm names: each Slurm GPU type is one model",
					    nm, c->models[j].name);
			}
		}
	}
	return JF_OK;
}

/* Every machine's model exists; machine cores and memory follow from it. */
static enum jf_err resolve_models(struct cparse *p)
{
	struct jf_cluster *c = p->c;

	for (size_t r = 0; r < p->nrefs; r++) {
		struct mref *ref = &p->refs[r];
		char q[JF_NAME_QUOTE_MAX], known[256];
		int mi = jf_cluster_model_index(c, ref->model);
		size_t o = 0;

		if (mi >= 0) {
			for (size_t i = ref->first; i < ref->first + ref->n; i++) {
				c->machines[i].model = (size_t)mi;
				machine_size(&c->machines[i], &c->models[mi]);
			}
			continue;
		}
		known[0] = '\0';
		for (size_t i = 0; i < c->nmodels && o < sizeof(known); i++)
			o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s", i ? ", " : "",
					      c->models[i].name);
		jf_name_quote(ref->model, q, sizeof(q));
		path_pop(p, 0);
		path_push(p, "machines[%zu].model", ref->src);
		return perr(p, ref->model_line, "unknown model '%s' (models: %s)", q,
			    c->nmodels ? known : "none");
	}
	return JF_OK;
}

struct name_ix {
	const char *name;
	size_t ix;
};

static int name_ix_cmp(const void *a, const void *b)
{
	const struct name_ix *x = a, *y = b;
	int d = strcmp(x->name, y->name);

	if (d)
		return d;
	return x->ix < y->ix ? -1 : x->ix > y->ix;
}

/* The file entry a machine came from (refs are in machine order). */
static const struct mref *ref_of(const struct cparse *p, size_t machine)
{
	size_t lo = 0, hi = p->nrefs;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->refs[mid].first <= machine)
			lo = mid;
		else
			hi = mid;
	}
	return &p->refs[lo];
}

/* No two machines share a name; report the earliest repeat in the file. */
static enum jf_err check_unique_machines(struct cparse *p)
{
	struct jf_cluster *c = p->c;
	struct name_ix *v;
	size_t dup = SIZE_MAX, first = 0;
	const struct mref *r, *r0;

	if (c->nmachines < 2)
		return JF_OK;
	v = malloc(c->nmachines * sizeof(*v));
	if (!v)
		return nomem(p);
	for (size_t i = 0; i < c->nmachines; i++) {
		v[i].name = c->machines[i].name;
		v[i].ix = i;
	}
	qsort(v, c->nmachines, sizeof(*v), name_ix_cmp);
	for (size_t i = 1; i < c->nmachines; i++) {
		if (strcmp(v[i - 1].name, v[i].name) == 0 && v[i].ix < dup) {
			dup = v[i].ix;
			first = v[i - 1].ix;
		}
	}
	free(v);
	if (dup == SIZE_MAX)
		return JF_OK;
	/* the smallest repeat is the second of its run, so v[i-1] above
	 * was the first copy of that name */
	r = ref_of(p, dup);
	r0 = ref_of(p, first);
	path_pop(p, 0);
	path_push(p, "machines[%zu].name", r->src);
	return perr(p, r->name_line, "duplicate machine name '%s' (also machines[%zu], line %d)",
		    c->machines[dup].name, r0->src, r0->name_line);
}

static enum jf_err set_defaults(struct cparse *p)
{
	struct jf_cluster *c = p->c;

	if (!c->name && !(c->name = strdup("cluster")))
		return nomem(p);
	if (!c->currency && !(c->currency = strdup("CNY")))
		return nomem(p);
	return JF_OK;
}

static enum jf_err parse_document(struct cparse *p)
{
	enum jf_err rc;

	if ((rc = next(p))) /* STREAM-START */
		return rc;
	if ((rc = next(p)))
		return rc;
	if (p->ev.type == YAML_STREAM_END_EVENT)
		return perr(p, 1, "the cluster file is empty");
	if ((rc = next(p))) /* the root node */
		return rc;
	if (p->ev.type == YAML_SCALAR_EVENT && p->ev.data.scalar.length == 0 &&
	    p->ev.data.scalar.plain_implicit) /* "---" and nothing else */
		return perr(p, 1, "the cluster file is empty");
	if (p->ev.type != YAML_MAPPING_START_EVENT)
		return perr(p, ev_line(p),
			    "the cluster file must be a mapping with models and machines, not %s",
			    ev_kind(&p->ev));
	if ((rc = parse_map(p, top_keys, TOP_NKEYS, top_value, NULL)))
		return rc;
	if ((rc = next(p))) /* DOCUMENT-END */
		return rc;
	if ((rc = next(p)))
		return rc;
	if (p->ev.type != YAML_STREAM_END_EVENT)
		return perr(p, ev_line(p), "only one YAML document is allowed in a cluster file");
	if ((rc = resolve_models(p)) || (rc = check_unique_machines(p)) ||
	    (rc = resolve_slurm_names(p)))
		return rc;
	return set_defaults(p);
}

enum jf_err jf_cluster_parse(const char *text, size_t len, struct jf_cluster **out,
			     struct jf_error *err)
{
	struct cparse *p;
	enum jf_err rc;

	*out = NULL;
	if (len > CLUSTER_MAX_BYTES)
		return jf_error_set(err, JF_EFBIG, 0,
				    "the cluster file is larger than %d bytes (1 MiB)",
				    CLUSTER_MAX_BYTES);
	if (!text && len)
		return jf_error_set(err, JF_EINVAL, 0, "no text");
	p = calloc(1, sizeof(*p));
	if (!p)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	p->err = err;
	p->c = calloc(1, sizeof(*p->c));
	if (!p->c) {
		rc = nomem(p);
		goto out;
	}
	p->c->cpu_price_ondemand = 50000;
	p->c->cpu_price_spot = 15000;
	p->c->preempt_grace_s = 30;
	p->c->spot_risk_max = JF_SPOT_RISK_DEFAULT;
	p->c->untyped_model = -1;
	if (!yaml_parser_initialize(&p->yp)) {
		rc = nomem(p);
		goto out_cluster;
	}
	yaml_parser_set_input_string(&p->yp, (const unsigned char *)(text ? text : ""), len);
	rc = parse_document(p);
	if (p->have_ev)
		yaml_event_delete(&p->ev);
	yaml_parser_delete(&p->yp);
out_cluster:
	for (size_t i = 0; i < p->nrefs; i++)
		free(p->refs[i].model);
	free(p->refs);
	free(p->untyped);
	if (rc)
		jf_cluster_free(p->c);
	else
		*out = p->c;
out:
	free(p);
	return rc;
}
