/*
 * alloc.h - one node's cpu, memory and GPUs split across its containers
 * (reference 5.3, product document 004 section 4), and exclusive core picking.
 *
 * jf_alloc_new() takes the node's real resources (what the scheduler gave
 * it: millicores, bytes, a GPU id mask) and the spec's containers, and
 * gives every container a share: cpu and memory in proportion to the
 * container limits, GPUs by the product's rule, requests = limit / 4.
 * The rules, the rounding and their invariants are at the top of alloc.c.
 *
 * Pure: no I/O, no clock.  Ownership: jf_alloc_new() returns a heap
 * allocation the caller frees with jf_alloc_free(); the containers it reads
 * are borrowed and may be freed afterwards (names are copied).
 * jf_alloc_yaml() returns a malloc'd string the caller frees.
 */
#ifndef JF_ALLOC_H
#define JF_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/spec.h"

#define JF_ALLOC_MAX_CONTAINERS JF_SPEC_MAX_CONTAINERS
#define JF_CPU_MAX_CORES        4096 /* core ids 0 .. 4095 */
#define JF_CPUSET_WORDS         (JF_CPU_MAX_CORES / 64)

struct jf_alloc {
	size_t n; /* containers, 1 .. JF_ALLOC_MAX_CONTAINERS */
	struct jf_alloc_ctr {
		char name[JF_SPEC_MAX_NAME + 1];
		int64_t cpu_milli;     /* limit */
		int64_t mem_bytes;     /* limit */
		uint64_t gpu_mask;     /* bit i = GPU id i */
		int gpus;              /* GPUs in gpu_mask: limit and request */
		int64_t req_cpu_milli; /* cpu_milli / 4 */
		int64_t req_mem_bytes; /* mem_bytes / 4 */
	} c[];
};

/* Split a node with cpu_milli millicores, mem_bytes bytes and the GPUs in
 * gpu_mask across containers ctr[0 .. n-1] (their name, cpu_milli,
 * mem_bytes are read; 0 = no limit).  JF_EINVAL with *err when n is 0 or
 * over the maximum, a name is not [A-Za-z0-9._-]{1,63}, a limit is
 * negative, or the node has fewer millicores or bytes than containers;
 * JF_ENOMEM.  On error *out is NULL. */
enum jf_err jf_alloc_new(int64_t cpu_milli, int64_t mem_bytes, uint64_t gpu_mask,
			 const struct jf_container *ctr, size_t n, struct jf_alloc **out,
			 struct jf_error *err);
void jf_alloc_free(struct jf_alloc *a);

/* The `allocation` file's "containers:" section, one YAML list entry per
 * container (format in alloc.c); NULL when out of memory. */
char *jf_alloc_yaml(const struct jf_alloc *a);

/* cpu_exclusive: a machine has ncores cores (ids 0 .. ncores-1, at most
 * JF_CPU_MAX_CORES); bit i of held[i / 64] set = core i is already held
 * exclusively.  Pick `blocks` sets of block_size free cores (a node: one
 * block per GPU of block_size = the model's cores per GPU; a CPU-only node
 * one block), each in as few contiguous runs as the free cores allow, and
 * set their bits in picked[JF_CPUSET_WORDS] (cleared first).  held is not
 * changed; the caller adds picked to it.  JF_EBUSY with *err when fewer
 * cores are free than blocks x block_size (picked untouched); JF_EINVAL
 * for out-of-range arguments. */
enum jf_err jf_cpu_pick(int ncores, const uint64_t *held, int blocks, int block_size,
			uint64_t *picked, struct jf_error *err);

/* Core ids as a cpuset list, "0-11,20-23" ("" when none), cut to n bytes. */
void jf_cpuset_format(const uint64_t *set, int ncores, char *buf, size_t n);

#endif
