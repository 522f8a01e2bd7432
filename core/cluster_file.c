/*
 * cluster_file.c - jf_cluster_parse(): the YAML cluster file (format in the
 * README).
 *
 * The text becomes a yamltree document (core/yamltree.h) under the cluster
 * file's own limits: at most 1 MiB, and no aliases (a cluster file has no
 * use for them and they are the usual way to blow up a YAML document).
 * The reader then walks the tree in document order.  Each mapping's keys
 * come from a table indexed by a named enum and a handler reads each value
 * where it stands, so every error names the key path and the line of the
 * node it is about:
 *     line 7: key 'models[0].price.spot': bad price "abc": ...
 * A value is read as the text written, whatever YAML would type it as: a
 * plain 4090 is the name "4090", and the value's own rule (a name, a price,
 * a quantity) decides what is fine.
 *
 * Machines may name a model defined later in the file, so what spans
 * entries is checked once the walk is done, while the document is still
 * open for the lines: every machine's model exists (its cores and memory
 * follow from it), no two machines share a name, slurm_untyped_gpu names a
 * model and no Slurm GPU type belongs to two models.  Then the name and
 * currency get their defaults.  The result holds what the top of cluster.c
 * promises.
 */
#include "core/cluster.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/billing.h"
#include "core/cluster_int.h"
#include "core/names.h"
#include "core/quantity.h"
#include "core/yamltree.h"

#define CLUSTER_MAX_BYTES (1024 * 1024)
/* A valid cluster file has fewer YAML nodes than half its bytes (every key
 * is a word of 4 letters or more and its ':', every other scalar at least a
 * character and a separator), so this refuses no file the format allows;
 * it bounds the memory a file that is not can take. */
#define CLUSTER_MAX_NODES (CLUSTER_MAX_BYTES / 2)

struct entry {                       /* one machines[] entry of the file */
	const struct jf_ynode *name; /* the value nodes; count NULL: not given */
	const struct jf_ynode *model, *count;
	int gpus;
	size_t ncopies; /* the machines it stands for: name, or name-0 .. */
	size_t first;   /* the first of them in c->machines */
	int mi;         /* its model's index, once resolved */
};

struct reader {
	struct jf_cluster *c;
	struct jf_error *err;
	const struct jf_ynode *models[JF_CLUSTER_MAX_MODELS]; /* models[i]'s mapping */
	const struct jf_ynode *untyped;                       /* slurm_untyped_gpu, or NULL */
	struct entry *entries;                                /* machines[], in file order */
	size_t nentries;
	size_t nmachines; /* what the entries stand for, in all */
};

static enum jf_err nomem(struct reader *r)
{
	return jf_error_set(r->err, JF_ENOMEM, 0, "out of memory");
}

/* ---- values ---- */

/* The text of scalar v, which must hold no NUL.  A plain null or number is
 * text like any other: the caller's rule judges it ("null" is a fine name,
 * "~" is not). */
static enum jf_err scalar_text(struct reader *r, const struct jf_ynode *v, const char *path,
			       const char *what, const char **out)
{
	if (v->type != JF_Y_SCALAR)
		return jf_yerror(r->err, JF_EINVAL, v, path, "expected %s, got %s", what,
				 jf_ynode_kind(v));
	if (memchr(v->str, '\0', v->len))
		return jf_yerror(r->err, JF_EINVAL, v, path, "a NUL character in the value");
	*out = v->str;
	return JF_OK;
}

/* JF_EINVAL for scalar v: "<what> "<its text, quoted>"<why>". */
static enum jf_err bad_value(struct reader *r, const struct jf_ynode *v, const char *path,
			     const char *what, const char *why)
{
	char q[JF_NAME_QUOTE_MAX];

	jf_name_quote(v->str, q, sizeof(q));
	return jf_yerror(r->err, JF_EINVAL, v, path, "%s%s\"%s\"%s", what, *what ? " " : "", q,
			 why);
}

/* A name under the directory-name rule, borrowed from the document. */
static enum jf_err name_of(struct reader *r, const struct jf_ynode *v, const char *path,
			   const char **out)
{
	struct jf_error nerr;
	enum jf_err rc = scalar_text(r, v, path, "a name", out);

	if (rc)
		return rc;
	if (!jf_name_valid(*out, &nerr))
		return jf_yerror(r->err, JF_EINVAL, v, path, "%s", nerr.msg);
	return JF_OK;
}

/* The same, copied into *out (which it replaces). */
static enum jf_err take_name(struct reader *r, const struct jf_ynode *v, const char *path,
			     char **out)
{
	const char *s;
	enum jf_err rc = name_of(r, v, path, &s);

	if (rc)
		return rc;
	free(*out);
	*out = strdup(s);
	return *out ? JF_OK : nomem(r);
}

/* An integer in [lo, hi], written as digits without a sign. */
static enum jf_err take_int(struct reader *r, const struct jf_ynode *v, const char *path,
			    int64_t lo, int64_t hi, int64_t *out)
{
	if (v->type == JF_Y_SCALAR && v->str[0] == '+')
		return jf_yerror(r->err, JF_EINVAL, v, path,
				 "expected an integer, got \"%.64s\": write it without the '+'",
				 v->str);
	return jf_ynode_int(v, path, lo, hi, out, r->err);
}

/* A positive quantity small enough that JF_MACHINE_MAX_GPUS of it fit. */
static enum jf_err take_quantity(struct reader *r, const struct jf_ynode *v, const char *path,
				 bool cpu, int64_t *out)
{
	const char *s;
	enum jf_err rc = scalar_text(r, v, path, "a quantity", &s);

	if (rc)
		return rc;
	if (!(cpu ? jf_cpu_parse(s, out) : jf_mem_parse(s, out)))
		return bad_value(r, v, path, cpu ? "bad CPU quantity" : "bad memory quantity",
				 cpu ? " (e.g. 20, 20000m, 1.5)" : " (e.g. 24Gi, 101G, 51200Mi)");
	if (*out <= 0)
		return jf_yerror(r->err, JF_EINVAL, v, path, "must be more than 0");
	if (*out > JF_CLUSTER_MAX_PER_GPU)
		return bad_value(r, v, path, "", " is too large");
	return JF_OK;
}

static enum jf_err take_currency(struct reader *r, const struct jf_ynode *v, const char *path,
				 char **out)
{
	const char *s;
	enum jf_err rc = scalar_text(r, v, path, "a currency code", &s);

	if (rc)
		return rc;
	if (!jf_cluster_currency_ok(s))
		return bad_value(r, v, path, "bad currency", ": want 3 uppercase letters like CNY");
	free(*out);
	*out = strdup(s);
	return *out ? JF_OK : nomem(r);
}

static enum jf_err take_grace(struct reader *r, const struct jf_ynode *v, const char *path,
			      int64_t *out)
{
	const char *s;
	enum jf_err rc = scalar_text(r, v, path, "a duration", &s);

	if (rc)
		return rc;
	if (!jf_duration_parse(s, out) || *out > JF_CLUSTER_MAX_GRACE_S)
		return bad_value(r, v, path, "bad duration",
				 ": want e.g. 30s, 2m, 1h (at most 24h)");
	return JF_OK;
}

/* A probability: 0.2, 0.05, 1, or a percentage 20%.  1 turns the
 * forecast off (every window is low-risk enough); 0 starts a spot task
 * with a unit_runtime only when no on-demand demand is foreseen at all. */
static enum jf_err take_risk(struct reader *r, const struct jf_ynode *v, const char *path,
			     double *out)
{
	const char *s;
	enum jf_err rc = scalar_text(r, v, path, "a probability", &s);

	if (rc)
		return rc;
	char *end = NULL;
	errno = 0;
	double p = strtod(s, &end);
	bool pct = end && end != s && *end == '%';
	if (pct) {
		end++;
		p /= 100.0;
	}
	if (!isdigit((unsigned char)s[0]) || !end || end == s || *end || errno ||
	    !(p >= 0.0 && p <= 1.0))
		return bad_value(r, v, path, "bad probability",
				 ": want a number from 0 to 1 (e.g. 0.2) or a percentage (20%)");
	*out = p;
	return JF_OK;
}

/* ---- mappings and lists ---- */

/* The value under key, null or not; NULL when the key is absent. */
static const struct jf_ynode *value_of(const struct jf_ynode *map, const char *key)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i < map->n; i++) {
		const struct jf_ynode *k = jf_ymap_key(map, i);

		if (k->len == klen && memcmp(k->str, key, klen) == 0)
			return jf_ymap_value(map, i);
	}
	return NULL;
}

struct keydef {
	const char *name;
	bool required;
};

typedef enum jf_err (*value_fn)(struct reader *r, int key, const struct jf_ynode *v,
				const char *path, void *ctx);

/* v must be a mapping whose keys come from keys[]; fn reads each value in
 * document order (path is the value's), then each required key must be
 * there.  The document has refused repeated keys already. */
static enum jf_err read_map(struct reader *r, const struct jf_ynode *v, const char *path,
			    const struct keydef *keys, int nkeys, value_fn fn, void *ctx)
{
	char kp[JF_YPATH_MAX];
	enum jf_err rc = jf_ynode_expect(v, JF_Y_MAP, path, r->err);

	if (rc)
		return rc;
	for (size_t i = 0; i < v->n; i++) {
		const struct jf_ynode *k = jf_ymap_key(v, i);
		int key;

		for (key = 0; key < nkeys; key++)
			if (strlen(keys[key].name) == k->len &&
			    memcmp(keys[key].name, k->str, k->len) == 0)
				break;
		if (key == nkeys) {
			char q[JF_NAME_QUOTE_MAX], known[256];
			size_t o = 0;

			known[0] = '\0';
			for (int j = 0; j < nkeys && o < sizeof(known); j++)
				o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s",
						      j ? ", " : "", keys[j].name);
			jf_name_quote(k->str, q, sizeof(q));
			jf_ypath_key(kp, sizeof(kp), path, q);
			if (memchr(k->str, '\0', k->len))
				return jf_yerror(r->err, JF_EINVAL, k, kp,
						 "a NUL character in the key");
			return jf_yerror(r->err, JF_EINVAL, k, kp, "unknown key (known: %s)",
					 known);
		}
		jf_ypath_key(kp, sizeof(kp), path, keys[key].name);
		if ((rc = fn(r, key, jf_ymap_value(v, i), kp, ctx)))
			return rc;
	}
	for (int key = 0; key < nkeys; key++) {
		if (!keys[key].required || value_of(v, keys[key].name))
			continue;
		jf_ypath_key(kp, sizeof(kp), path, keys[key].name);
		return jf_yerror(r->err, JF_EINVAL, v, kp, "missing (required)");
	}
	return JF_OK;
}

/* ---- price maps: {on-demand: "3.60", spot: "1.08"} ---- */

enum { PRICE_ONDEMAND, PRICE_SPOT, PRICE_NKEYS };

static const struct keydef price_keys[PRICE_NKEYS] = {
	[PRICE_ONDEMAND] = { "on-demand", true },
	[PRICE_SPOT] = { "spot", true },
};

struct price {
	int64_t v[PRICE_NKEYS];
	const struct jf_ynode *node[PRICE_NKEYS];
};

static enum jf_err price_value(struct reader *r, int key, const struct jf_ynode *v,
			       const char *path, void *ctx)
{
	struct price *p = ctx;
	const char *s;
	enum jf_err rc = scalar_text(r, v, path, "a price", &s);

	if (rc)
		return rc;
	p->node[key] = v;
	if (jf_money_parse(s, &p->v[key]))
		return JF_OK;
	if (s[0] == '-')
		return bad_value(r, v, path, "bad price", ": must not be negative");
	return bad_value(r, v, path, "bad price",
			 ": want an amount like \"3.60\" with at most 6 decimals");
}

static enum jf_err read_price(struct reader *r, const struct jf_ynode *v, const char *path,
			      int64_t *ondemand, int64_t *spot)
{
	struct price p = { { 0 }, { NULL } };
	enum jf_err rc = read_map(r, v, path, price_keys, PRICE_NKEYS, price_value, &p);

	if (rc)
		return rc;
	if (p.v[PRICE_SPOT] > p.v[PRICE_ONDEMAND]) {
		char a[32], b[32], sp[JF_YPATH_MAX];

		jf_money_format(p.v[PRICE_SPOT], NULL, a, sizeof(a));
		jf_money_format(p.v[PRICE_ONDEMAND], NULL, b, sizeof(b));
		jf_ypath_key(sp, sizeof(sp), path, "spot");
		return jf_yerror(r->err, JF_EINVAL, p.node[PRICE_SPOT], sp,
				 "spot price %s is above the on-demand price %s", a, b);
	}
	*ondemand = p.v[PRICE_ONDEMAND];
	*spot = p.v[PRICE_SPOT];
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
static enum jf_err read_slurm_names(struct reader *r, const struct jf_ynode *v, const char *path,
				    struct jf_gpu_model *m)
{
	enum jf_err rc = jf_ynode_expect(v, JF_Y_SEQ, path, r->err);

	if (rc || v->n == 0)
		return rc;
	m->slurm_names = calloc(v->n < JF_SLURM_NAMES_MAX ? v->n : JF_SLURM_NAMES_MAX,
				sizeof(*m->slurm_names));
	if (!m->slurm_names)
		return nomem(r);
	for (size_t i = 0; i < v->n; i++) {
		char ip[JF_YPATH_MAX];

		jf_ypath_index(ip, sizeof(ip), path, i);
		if (i >= JF_SLURM_NAMES_MAX)
			return jf_yerror(r->err, JF_EINVAL, v->items[i], ip,
					 "more than %d Slurm names", JF_SLURM_NAMES_MAX);
		m->nslurm_names = i + 1;
		if ((rc = take_name(r, v->items[i], ip, &m->slurm_names[i])))
			return rc;
	}
	return JF_OK;
}

static enum jf_err model_value(struct reader *r, int key, const struct jf_ynode *v,
			       const char *path, void *ctx)
{
	struct jf_gpu_model *m = ctx;

	switch (key) {
	case MODEL_NAME:
		return take_name(r, v, path, &m->name);
	case MODEL_VRAM:
		return take_quantity(r, v, path, false, &m->vram_bytes);
	case MODEL_CPU:
		return take_quantity(r, v, path, true, &m->cpu_milli_per_gpu);
	case MODEL_MEM:
		return take_quantity(r, v, path, false, &m->mem_bytes_per_gpu);
	case MODEL_PRICE:
		return read_price(r, v, path, &m->price_ondemand, &m->price_spot);
	case MODEL_SLURM:
		return read_slurm_names(r, v, path, m);
	}
	return JF_OK;
}

static enum jf_err read_models(struct reader *r, const struct jf_ynode *v, const char *path)
{
	struct jf_cluster *c = r->c;
	char ip[JF_YPATH_MAX], np[JF_YPATH_MAX];
	enum jf_err rc = jf_ynode_expect(v, JF_Y_SEQ, path, r->err);

	if (rc || v->n == 0)
		return rc;
	if (v->n > JF_CLUSTER_MAX_MODELS) {
		jf_ypath_index(ip, sizeof(ip), path, JF_CLUSTER_MAX_MODELS);
		return jf_yerror(r->err, JF_EINVAL, v->items[JF_CLUSTER_MAX_MODELS], ip,
				 "more than %d models", JF_CLUSTER_MAX_MODELS);
	}
	c->models = calloc(v->n, sizeof(*c->models));
	if (!c->models)
		return nomem(r);
	for (size_t i = 0; i < v->n; i++) {
		const struct jf_ynode *item = v->items[i];
		struct jf_gpu_model *m = &c->models[i];

		jf_ypath_index(ip, sizeof(ip), path, i);
		c->nmodels = i + 1;
		r->models[i] = item;
		if ((rc = read_map(r, item, ip, model_keys, MODEL_NKEYS, model_value, m)))
			return rc;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(c->models[j].name, m->name) != 0)
				continue;
			jf_ypath_key(np, sizeof(np), ip, "name");
			return jf_yerror(r->err, JF_EINVAL, value_of(item, "name"), np,
					 "duplicate model name '%s' (first at line %d)", m->name,
					 value_of(r->models[j], "name")->line);
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

static enum jf_err mach_value(struct reader *r, int key, const struct jf_ynode *v, const char *path,
			      void *ctx)
{
	struct entry *e = ctx;
	const char *s;
	int64_t n;
	enum jf_err rc;

	switch (key) {
	case MACH_NAME:
		e->name = v;
		return name_of(r, v, path, &s);
	case MACH_MODEL:
		e->model = v;
		return scalar_text(r, v, path, "a model name", &s);
	case MACH_GPUS:
		if ((rc = take_int(r, v, path, 1, JF_MACHINE_MAX_GPUS, &n)))
			return rc;
		e->gpus = (int)n;
		return JF_OK;
	case MACH_COUNT:
		if ((rc = take_int(r, v, path, 1, JF_CLUSTER_MAX_MACHINES, &n)))
			return rc;
		e->count = v;
		e->ncopies = (size_t)n;
		return JF_OK;
	}
	return JF_OK;
}

/* Entry e (machines[i], at path) and the machines it stands for: name, or
 * name-0 .. name-(count-1), which must stay names and within the limit. */
static enum jf_err read_machine(struct reader *r, const struct jf_ynode *v, const char *path,
				struct entry *e)
{
	char kp[JF_YPATH_MAX];
	enum jf_err rc;

	e->ncopies = 1;
	if ((rc = read_map(r, v, path, mach_keys, MACH_NKEYS, mach_value, e)))
		return rc;
	if (e->count) {
		char last[32];
		size_t len =
			e->name->len + (size_t)snprintf(last, sizeof(last), "-%zu", e->ncopies - 1);

		if (len > JF_NAME_MAX_LEN) {
			jf_ypath_key(kp, sizeof(kp), path, "name");
			return jf_yerror(r->err, JF_EINVAL, e->name, kp,
					 "'%s-%zu' would be longer than %d characters",
					 e->name->str, e->ncopies - 1, JF_NAME_MAX_LEN);
		}
	}
	if (e->ncopies > JF_CLUSTER_MAX_MACHINES - r->nmachines) {
		jf_ypath_key(kp, sizeof(kp), path, e->count ? "count" : "name");
		return jf_yerror(r->err, JF_EINVAL, e->count ? e->count : e->name, kp,
				 "more than %d machines in all", JF_CLUSTER_MAX_MACHINES);
	}
	e->first = r->nmachines;
	r->nmachines += e->ncopies;
	return JF_OK;
}

static enum jf_err read_machines(struct reader *r, const struct jf_ynode *v, const char *path)
{
	enum jf_err rc = jf_ynode_expect(v, JF_Y_SEQ, path, r->err);

	if (rc)
		return rc;
	if (v->n == 0)
		return jf_yerror(r->err, JF_EINVAL, v, path, "no machines: list at least one");
	/* each entry is one machine or more, so read_machine() refuses an
	 * entry past the limit of machines before it would need a slot */
	r->entries = calloc(v->n < JF_CLUSTER_MAX_MACHINES ? v->n : JF_CLUSTER_MAX_MACHINES,
			    sizeof(*r->entries));
	if (!r->entries)
		return nomem(r);
	for (size_t i = 0; i < v->n; i++) {
		char ip[JF_YPATH_MAX];
		struct entry e = { 0 };

		jf_ypath_index(ip, sizeof(ip), path, i);
		if ((rc = read_machine(r, v->items[i], ip, &e)))
			return rc;
		r->entries[r->nentries++] = e;
	}
	return JF_OK;
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

static enum jf_err top_value(struct reader *r, int key, const struct jf_ynode *v, const char *path,
			     void *ctx)
{
	(void)ctx;
	struct jf_cluster *c = r->c;
	const char *s;

	switch (key) {
	case TOP_NAME:
		return take_name(r, v, path, &c->name);
	case TOP_CURRENCY:
		return take_currency(r, v, path, &c->currency);
	case TOP_CPU_PRICE:
		return read_price(r, v, path, &c->cpu_price_ondemand, &c->cpu_price_spot);
	case TOP_GRACE:
		return take_grace(r, v, path, &c->preempt_grace_s);
	case TOP_RISK:
		return take_risk(r, v, path, &c->spot_risk_max);
	case TOP_MODELS:
		return read_models(r, v, path);
	case TOP_MACHINES:
		return read_machines(r, v, path);
	case TOP_UNTYPED:
		r->untyped = v;
		return name_of(r, v, path, &s);
	}
	return JF_OK;
}

/* ---- what spans entries ---- */

/* Every machine's model exists. */
static enum jf_err resolve_models(struct reader *r)
{
	struct jf_cluster *c = r->c;

	for (size_t i = 0; i < r->nentries; i++) {
		struct entry *e = &r->entries[i];
		char q[JF_NAME_QUOTE_MAX], known[256], path[JF_YPATH_MAX];
		size_t o = 0;

		e->mi = jf_cluster_model_index(c, e->model->str);
		if (e->mi >= 0)
			continue;
		known[0] = '\0';
		for (size_t k = 0; k < c->nmodels && o < sizeof(known); k++)
			o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s", k ? ", " : "",
					      c->models[k].name);
		jf_name_quote(e->model->str, q, sizeof(q));
		snprintf(path, sizeof(path), "machines[%zu].model", i);
		return jf_yerror(r->err, JF_EINVAL, e->model, path,
				 "unknown model '%s' (models: %s)", q, c->nmodels ? known : "none");
	}
	return JF_OK;
}

/* The machines the entries stand for, sized by their models. */
static enum jf_err make_machines(struct reader *r)
{
	struct jf_cluster *c = r->c;

	c->machines = calloc(r->nmachines, sizeof(*c->machines));
	if (!c->machines)
		return nomem(r);
	for (size_t i = 0; i < r->nentries; i++) {
		const struct entry *e = &r->entries[i];

		for (size_t k = 0; k < e->ncopies; k++) {
			struct jf_machine *m = &c->machines[c->nmachines++];
			char name[JF_NAME_MAX_LEN + 1];

			if (e->count) {
				snprintf(name, sizeof(name), "%s-%zu", e->name->str, k);
				m->name = strdup(name);
			} else {
				m->name = strdup(e->name->str);
			}
			if (!m->name)
				return nomem(r);
			m->model = (size_t)e->mi;
			m->gpus = e->gpus;
			jf_machine_size(m, &c->models[e->mi]);
		}
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

/* The index of the entry machine m came from (entries are in machine
 * order). */
static size_t entry_of(const struct reader *r, size_t m)
{
	size_t lo = 0, hi = r->nentries;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->entries[mid].first <= m)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* No two machines share a name; report the earliest repeat in the file. */
static enum jf_err check_unique_machines(struct reader *r)
{
	struct jf_cluster *c = r->c;
	size_t dup = SIZE_MAX, first = 0, e, e0;
	char path[JF_YPATH_MAX];
	struct name_ix *v;

	if (c->nmachines < 2)
		return JF_OK;
	v = malloc(c->nmachines * sizeof(*v));
	if (!v)
		return nomem(r);
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
	e = entry_of(r, dup);
	e0 = entry_of(r, first);
	snprintf(path, sizeof(path), "machines[%zu].name", e);
	return jf_yerror(r->err, JF_EINVAL, r->entries[e].name, path,
			 "duplicate machine name '%s' (also machines[%zu], line %d)",
			 c->machines[dup].name, e0, r->entries[e0].name->line);
}

/* slurm_untyped_gpu names a model; no Slurm name belongs to two models. */
static enum jf_err resolve_slurm_names(struct reader *r)
{
	struct jf_cluster *c = r->c;

	if (r->untyped) {
		c->untyped_model = jf_cluster_model_index(c, r->untyped->str);
		if (c->untyped_model < 0)
			return jf_yerror(r->err, JF_EINVAL, r->untyped, "slurm_untyped_gpu",
					 "unknown model '%s'", r->untyped->str);
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
				char path[JF_YPATH_MAX];
				snprintf(path, sizeof(path), "models[%zu].slurm_names[%zu]", i, k);
				return jf_yerror(r->err, JF_EINVAL,
						 value_of(r->models[i], "slurm_names")->items[k],
						 path,
						 "Slurm name '%s' is also model '%s' or one of its "
						 "Slurm names: each Slurm GPU type is one model",
						 nm, c->models[j].name);
			}
		}
	}
	return JF_OK;
}

static enum jf_err set_defaults(struct reader *r)
{
	struct jf_cluster *c = r->c;

	if (!c->name && !(c->name = strdup("cluster")))
		return nomem(r);
	if (!c->currency && !(c->currency = strdup(JF_CLUSTER_DEFAULT_CURR)))
		return nomem(r);
	return JF_OK;
}

static enum jf_err read_document(struct reader *r, const struct jf_ynode *root)
{
	enum jf_err rc;

	if (jf_ynode_is_null(root))
		return jf_error_set(r->err, JF_EINVAL, 1, "the cluster file is empty");
	if (root->type != JF_Y_MAP)
		return jf_yerror(r->err, JF_EINVAL, root, "",
				 "the cluster file must be a mapping with models and machines, "
				 "not %s",
				 jf_ynode_kind(root));
	if ((rc = read_map(r, root, "", top_keys, TOP_NKEYS, top_value, NULL)) ||
	    (rc = resolve_models(r)) || (rc = make_machines(r)) ||
	    (rc = check_unique_machines(r)) || (rc = resolve_slurm_names(r)))
		return rc;
	return set_defaults(r);
}

enum jf_err jf_cluster_parse(const char *text, size_t len, struct jf_cluster **out,
			     struct jf_error *err)
{
	static const struct jf_yopts opts = {
		.max_bytes = CLUSTER_MAX_BYTES,
		.max_nodes = CLUSTER_MAX_NODES,
		.no_aliases = true,
	};
	struct reader r = { .err = err };
	struct jf_ydoc *doc;
	enum jf_err rc;

	*out = NULL;
	if (len > CLUSTER_MAX_BYTES)
		return jf_error_set(err, JF_EFBIG, 0,
				    "the cluster file is larger than %d bytes (1 MiB)",
				    CLUSTER_MAX_BYTES);
	if (!text && len)
		return jf_error_set(err, JF_EINVAL, 0, "no text");
	if ((rc = jf_ydoc_parse_opts(text, len, &opts, &doc, err)))
		return rc;
	r.c = jf_cluster_new_defaults();
	rc = r.c ? read_document(&r, jf_ydoc_root(doc)) : nomem(&r);
	free(r.entries);
	jf_ydoc_free(doc);
	if (rc) {
		jf_cluster_free(r.c);
		return rc;
	}
	assert(jf_cluster_check(r.c));
	*out = r.c;
	return JF_OK;
}
