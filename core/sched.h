/*
 * sched.h - placement of a task's nodes onto machines (gang: all or none).
 *
 * The caller keeps one struct jf_sched_machine per cluster machine with
 * what is free now.  jf_sched_place() finds a machine for every node of a
 * request, or none: on success it subtracts what it gave from the machines
 * and fills one slot per node; on failure the machines are unchanged.
 * jf_sched_release() gives a slot's resources back.
 *
 * Choice: best fit (the machine with the least free GPUs, then the least
 * free CPU, that still fits), lowest GPU indices first, so that whole
 * machines stay free for big requests.  Pure: no I/O, no clock.
 */
#ifndef JF_SCHED_H
#define JF_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/spec.h"

struct jf_sched_machine {
	int model;         /* index into the cluster's models */
	int gpus;          /* total */
	uint64_t gpu_free; /* bit i set = GPU i free */
	int64_t cpu_free;  /* millicores */
	int64_t mem_free;  /* bytes */
};

struct jf_sched_req {
	int model;         /* -1 = CPU-only (any machine) */
	int gpus;          /* per node */
	int64_t cpu_milli; /* per node */
	int64_t mem_bytes; /* per node */
	int64_t nodes;
};

struct jf_sched_slot {
	size_t machine;
	uint64_t gpu_mask;
	int64_t cpu_milli;
	int64_t mem_bytes;
};

/* Free resources of every machine of c, nothing held. */
void jf_sched_machines_init(const struct jf_cluster *c, struct jf_sched_machine *m);

/* What one node of spec needs on cluster c.  model -1 for CPU-only.
 * Returns false (with *err) when the spec asks for a model the cluster
 * lacks or for more than any machine has. */
bool jf_sched_request(const struct jf_cluster *c, const struct jf_spec *spec,
		      struct jf_sched_req *req, struct jf_error *err);

bool jf_sched_place(struct jf_sched_machine *m, size_t nm, const struct jf_sched_req *req,
		    struct jf_sched_slot *slots);
void jf_sched_release(struct jf_sched_machine *m, const struct jf_sched_slot *slot);
/* Take exactly this slot (adopting a running node after a restart);
 * false if it is not free. */
bool jf_sched_take(struct jf_sched_machine *m, size_t nm, const struct jf_sched_slot *slot);

/* Bits set in x, without the library call that __builtin_popcountll
 * becomes on a baseline x86-64 build (no -mpopcnt): the planner's hot path. */
static inline int jf_popcount64(uint64_t x)
{
	x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
	x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
	x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
	return (int)((x * UINT64_C(0x0101010101010101)) >> 56);
}

/* How many nodes of r machine m can take (at most r->nodes).  Nodes of a
 * gang are alike and each takes the same from a machine, so best fit
 * places a gang exactly when these add up to r->nodes (core/plan.c, and
 * core/eta.c's test of whether a pass could start anything). */
static inline int64_t jf_sched_copies(const struct jf_sched_machine *m,
				      const struct jf_sched_req *r)
{
	int64_t n = r->nodes;
	if (r->model >= 0 && r->gpus > 0) {
		if (m->model != r->model)
			return 0;
		int64_t c = jf_popcount64(m->gpu_free) / r->gpus;
		if (c < n)
			n = c;
	}
	if (m->cpu_free < 0 || m->mem_free < 0)
		return 0;
	if (r->cpu_milli > 0 && m->cpu_free / r->cpu_milli < n)
		n = m->cpu_free / r->cpu_milli;
	if (r->mem_bytes > 0 && m->mem_free / r->mem_bytes < n)
		n = m->mem_free / r->mem_bytes;
	return n;
}

/* "0,1,2" from a mask. */
void jf_gpu_ids_format(uint64_t mask, char *buf, size_t n);
uint64_t jf_gpu_ids_parse(const char *s);

#endif
