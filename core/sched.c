/*
 * sched.c - gang placement by best fit.  See sched.h.
 */
#include "core/sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CPU_MILLI 1000
#define DEFAULT_MEM_BYTES (INT64_C(1) << 30)

static uint64_t all_gpus(int n)
{
	return n >= 64 ? ~UINT64_C(0) : ((UINT64_C(1) << n) - 1);
}

void jf_sched_machines_init(const struct jf_cluster *c, struct jf_sched_machine *m)
{
	for (size_t i = 0; i < c->nmachines; i++) {
		m[i].model = (int)c->machines[i].model;
		m[i].gpus = c->machines[i].gpus;
		m[i].gpu_free = all_gpus(c->machines[i].gpus);
		m[i].cpu_free = c->machines[i].cpu_milli;
		m[i].mem_free = c->machines[i].mem_bytes;
	}
}

bool jf_sched_request(const struct jf_cluster *c, const struct jf_spec *spec,
		      struct jf_sched_req *req, struct jf_error *err)
{
	memset(req, 0, sizeof(*req));
	req->nodes = spec->nodes;
	if (spec->gpu) {
		int mi = jf_cluster_model_index(c, spec->gpu);
		if (mi < 0) {
			jf_error_set(err, JF_EINVAL, 0,
				     "key 'gpu': the cluster has no GPU model \"%s\"", spec->gpu);
			return false;
		}
		const struct jf_gpu_model *gm = &c->models[mi];
		req->model = mi;
		req->gpus = spec->gpus;
		/* a node with g GPUs gets g times the model's cores and memory */
		req->cpu_milli = spec->gpus * gm->cpu_milli_per_gpu;
		req->mem_bytes = spec->gpus * gm->mem_bytes_per_gpu;
		int most = 0;
		for (size_t i = 0; i < c->nmachines; i++)
			if ((int)c->machines[i].model == mi && c->machines[i].gpus > most)
				most = c->machines[i].gpus;
		if (most < spec->gpus) {
			jf_error_set(err, JF_EINVAL, 0,
				     "key 'gpus': no %s machine has %d GPUs (the largest has %d)",
				     spec->gpu, spec->gpus, most);
			return false;
		}
		if (spec->gpus > 0)
			return true;
	}
	req->model = -1;
	req->gpus = 0;
	int64_t cpu = 0, mem = 0;
	for (size_t i = 0; i < spec->ncontainers; i++) {
		cpu += spec->containers[i].cpu_milli;
		mem += spec->containers[i].mem_bytes;
	}
	req->cpu_milli = cpu > 0 ? cpu : DEFAULT_CPU_MILLI;
	req->mem_bytes = mem > 0 ? mem : DEFAULT_MEM_BYTES;
	int64_t most_cpu = 0, most_mem = 0;
	for (size_t i = 0; i < c->nmachines; i++) {
		if (c->machines[i].cpu_milli > most_cpu)
			most_cpu = c->machines[i].cpu_milli;
		if (c->machines[i].mem_bytes > most_mem)
			most_mem = c->machines[i].mem_bytes;
	}
	if (req->cpu_milli > most_cpu || req->mem_bytes > most_mem) {
		jf_error_set(
			err, JF_EINVAL, 0,
			"key 'resources.limits': no machine has %lld millicores and %lld bytes",
			(long long)req->cpu_milli, (long long)req->mem_bytes);
		return false;
	}
	return true;
}

static bool fits(const struct jf_sched_machine *m, const struct jf_sched_req *r)
{
	if (r->model >= 0 && r->gpus > 0) {
		if (m->model != r->model || jf_popcount64(m->gpu_free) < r->gpus)
			return false;
	}
	return m->cpu_free >= r->cpu_milli && m->mem_free >= r->mem_bytes;
}

static void take(struct jf_sched_machine *m, const struct jf_sched_req *r,
		 struct jf_sched_slot *slot, size_t idx)
{
	uint64_t mask = 0;
	for (int g = 0; g < m->gpus && jf_popcount64(mask) < r->gpus; g++)
		if (m->gpu_free & (UINT64_C(1) << g))
			mask |= UINT64_C(1) << g;
	m->gpu_free &= ~mask;
	m->cpu_free -= r->cpu_milli;
	m->mem_free -= r->mem_bytes;
	slot->machine = idx;
	slot->gpu_mask = mask;
	slot->cpu_milli = r->cpu_milli;
	slot->mem_bytes = r->mem_bytes;
}

bool jf_sched_place(struct jf_sched_machine *m, size_t nm, const struct jf_sched_req *req,
		    struct jf_sched_slot *slots)
{
	int64_t placed = 0;
	for (; placed < req->nodes; placed++) {
		size_t best = nm;
		for (size_t i = 0; i < nm; i++) {
			if (!fits(&m[i], req))
				continue;
			if (best == nm) {
				best = i;
				continue;
			}
			int fg = jf_popcount64(m[i].gpu_free), bg = jf_popcount64(m[best].gpu_free);
			if (fg < bg || (fg == bg && m[i].cpu_free < m[best].cpu_free))
				best = i;
		}
		if (best == nm)
			break;
		take(&m[best], req, &slots[placed], best);
	}
	if (placed == req->nodes)
		return true;
	while (placed-- > 0)
		jf_sched_release(m, &slots[placed]);
	return false;
}

void jf_sched_release(struct jf_sched_machine *m, const struct jf_sched_slot *slot)
{
	struct jf_sched_machine *x = &m[slot->machine];
	x->gpu_free |= slot->gpu_mask;
	x->cpu_free += slot->cpu_milli;
	x->mem_free += slot->mem_bytes;
}

bool jf_sched_take(struct jf_sched_machine *m, size_t nm, const struct jf_sched_slot *slot)
{
	if (slot->machine >= nm)
		return false;
	struct jf_sched_machine *x = &m[slot->machine];
	if ((x->gpu_free & slot->gpu_mask) != slot->gpu_mask)
		return false;
	x->gpu_free &= ~slot->gpu_mask;
	x->cpu_free -= slot->cpu_milli;
	x->mem_free -= slot->mem_bytes;
	return true;
}

void jf_gpu_ids_format(uint64_t mask, char *buf, size_t n)
{
	size_t off = 0;
	if (n)
		buf[0] = '\0';
	for (int g = 0; g < 64 && off < n; g++) {
		if (!(mask & (UINT64_C(1) << g)))
			continue;
		int w = snprintf(buf + off, n - off, "%s%d", off ? "," : "", g);
		if (w < 0)
			break;
		off += (size_t)w;
	}
}

uint64_t jf_gpu_ids_parse(const char *s)
{
	uint64_t mask = 0;
	while (s && *s) {
		char *end;
		long g = strtol(s, &end, 10);
		if (end == s)
			break;
		if (g >= 0 && g < 64)
			mask |= UINT64_C(1) << g;
		s = *end == ',' ? end + 1 : end;
	}
	return mask;
}
