/*
 * cluster.c - the cluster: the built-in one, its lifetime and lookups.
 *
 * What holds for every cluster this module returns (jf_cluster_builtin()
 * here, jf_cluster_parse() in cluster_file.c): a name that follows the
 * directory-name rule (core/names.h) and a currency of 3 uppercase letters;
 * 1 to JF_CLUSTER_MAX_MACHINES machines and at most JF_CLUSTER_MAX_MODELS
 * models; every machine's model indexes models[]; model and machine names
 * follow the directory-name rule and are unique; a model has at most
 * JF_SLURM_NAMES_MAX Slurm names, names too, each of which
 * jf_cluster_model_for_gres() maps back to that model; 1 <= gpus <=
 * JF_MACHINE_MAX_GPUS;
 * per-GPU vram, cores and memory are > 0 and within JF_CLUSTER_MAX_PER_GPU,
 * so a machine's cpu_milli and mem_bytes, gpus x its model's per-GPU
 * figures, never overflow; prices are >= 0 and spot <= on-demand;
 * preempt_grace is 0 to 24 h, spot_risk_threshold 0 to 1, and the untyped
 * model is -1 or a model.  jf_cluster_check() checks all of it but the
 * uniqueness of machine names, and both constructors assert it.
 *
 * A cluster is read-only once returned; lookups only read it.
 */
#include "core/cluster.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/cluster_int.h"
#include "core/names.h"

#define GIB (INT64_C(1) << 30)

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

void jf_machine_size(struct jf_machine *m, const struct jf_gpu_model *gm)
{
	m->cpu_milli = (int64_t)m->gpus * gm->cpu_milli_per_gpu;
	m->mem_bytes = (int64_t)m->gpus * gm->mem_bytes_per_gpu;
}

struct jf_cluster *jf_cluster_new_defaults(void)
{
	struct jf_cluster *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cpu_price_ondemand = 50000; /* 0.05 a core-hour */
	c->cpu_price_spot = 15000;
	c->preempt_grace_s = 30;
	c->spot_risk_max = JF_SPOT_RISK_DEFAULT;
	c->untyped_model = -1;
	return c;
}

struct jf_cluster *jf_cluster_builtin(void)
{
	struct jf_cluster *c = jf_cluster_new_defaults();
	size_t total = 0;

	if (!c)
		return NULL;
	for (size_t g = 0; g < NELEM(builtin_groups); g++)
		total += (size_t)builtin_groups[g].n;
	c->name = strdup("builtin");
	c->currency = strdup(JF_CLUSTER_DEFAULT_CURR);
	c->models = calloc(NELEM(builtin_models), sizeof(*c->models));
	c->machines = calloc(total, sizeof(*c->machines));
	if (!c->name || !c->currency || !c->models || !c->machines)
		goto fail;
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
			jf_machine_size(m, &c->models[m->model]);
		}
	}
	assert(jf_cluster_check(c));
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

/* ---- what holds for every cluster ---- */

static bool prices_ok(int64_t ondemand, int64_t spot)
{
	return spot >= 0 && spot <= ondemand;
}

static bool per_gpu_ok(int64_t v)
{
	return v > 0 && v <= JF_CLUSTER_MAX_PER_GPU;
}

static bool model_ok(const struct jf_cluster *c, size_t i)
{
	const struct jf_gpu_model *m = &c->models[i];

	if (!m->name || !jf_name_valid(m->name, NULL) || !per_gpu_ok(m->vram_bytes) ||
	    !per_gpu_ok(m->cpu_milli_per_gpu) || !per_gpu_ok(m->mem_bytes_per_gpu) ||
	    !prices_ok(m->price_ondemand, m->price_spot) || m->nslurm_names > JF_SLURM_NAMES_MAX ||
	    (m->nslurm_names && !m->slurm_names))
		return false;
	for (size_t k = 0; k < m->nslurm_names; k++)
		if (!m->slurm_names[k] || !jf_name_valid(m->slurm_names[k], NULL) ||
		    jf_cluster_model_for_gres(c, m->slurm_names[k]) != (int)i)
			return false;
	for (size_t j = 0; j < i; j++)
		if (strcmp(c->models[j].name, m->name) == 0)
			return false;
	return true;
}

static bool machine_ok(const struct jf_cluster *c, const struct jf_machine *m)
{
	if (!m->name || !jf_name_valid(m->name, NULL) || m->model >= c->nmodels || m->gpus < 1 ||
	    m->gpus > JF_MACHINE_MAX_GPUS || m->slurm_gpu)
		return false;
	const struct jf_gpu_model *gm = &c->models[m->model];
	return m->cpu_milli == m->gpus * gm->cpu_milli_per_gpu &&
	       m->mem_bytes == m->gpus * gm->mem_bytes_per_gpu;
}

bool jf_cluster_currency_ok(const char *s)
{
	return strlen(s) == 3 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z' &&
	       s[2] >= 'A' && s[2] <= 'Z';
}

bool jf_cluster_check(const struct jf_cluster *c)
{
	if (!c || !c->name || !jf_name_valid(c->name, NULL) || !c->currency ||
	    !jf_cluster_currency_ok(c->currency))
		return false;
	if (!prices_ok(c->cpu_price_ondemand, c->cpu_price_spot) || c->preempt_grace_s < 0 ||
	    c->preempt_grace_s > JF_CLUSTER_MAX_GRACE_S ||
	    !(c->spot_risk_max >= 0.0 && c->spot_risk_max <= 1.0))
		return false;
	if (c->nmodels > JF_CLUSTER_MAX_MODELS || c->untyped_model < -1 ||
	    c->untyped_model >= (int)c->nmodels || c->nmachines < 1 ||
	    c->nmachines > JF_CLUSTER_MAX_MACHINES || !c->models || !c->machines)
		return false;
	for (size_t i = 0; i < c->nmodels; i++)
		if (!model_ok(c, i))
			return false;
	for (size_t i = 0; i < c->nmachines; i++)
		if (!machine_ok(c, &c->machines[i]))
			return false;
	return true;
}
