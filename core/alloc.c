/*
 * alloc.c - one node's resources split across its containers (reference 5.3,
 * product document 004 section 4).  See alloc.h.
 *
 * THE RULES
 *
 * Weights.  cpu and memory are each split in proportion to a weight per
 * container: its limit when given.  A container with no limit (0) counts as
 * an equal share: it gets 1/n of the node and the containers with limits
 * split the rest in proportion to their limits.  (That is the same as
 * weighting it with the mean of the given limits.)  When no container has a
 * limit, all n get equal shares.  Exactly: with k containers unlimited,
 * d = n - k and S = the sum of the given limits, weight = limit x d for a
 * limited container, S for an unlimited one, and the weights add up to n x S.
 *
 * Units.  On a node with GPUs (a real machine: 4090 = 20 cores, 101Gi per
 * GPU) cpu is handed out in whole cores (1000m) and memory in whole MiB,
 * as long as the node has at least one such unit per container; the part
 * of the node below one unit (101e9 bytes is 96321 MiB and 111,104 bytes)
 * is not handed out.  On a CPU-only node (no GPU: its size is what the
 * containers asked for) or when units are too few, the units are 1m and
 * 1 byte.  A node with fewer millicores or bytes than containers is refused.
 *
 * Rounding.  Largest remainder (Hamilton): each container gets the whole
 * units of its exact share units x weight / sum; the units left over (fewer
 * than n) go one each to the largest remainders, ties to the earlier
 * container.  Then no container is left with nothing: while one has 0
 * units, it takes one from the container with the most (ties: the earlier
 * one); when units >= n that donor always has 2 or more.  So:
 *   - the shares add up to exactly units x unit <= the node's resource;
 *   - without the no-zero step, each is within one unit of its exact share;
 *   - 14000m and 9333m on 20 cores give 12 and 8 cores (exact 12.0003 and
 *     7.9997); 51200Mi and 4200Mi on 101Gi give 95583Mi and 7841Mi
 *     (93.3Gi and 7.7Gi; on 101e9 bytes 89019Mi and 7302Mi, 93.3e9 and 7.7e9);
 *     three equal containers on 20 cores 7, 7, 6; 1m and 19999m 1 and 19.
 * Arithmetic is integer only; limits are int64 and n <= 16, so weights are
 * below 2^67 and their sum below 2^71, and units x weight / sum is done in
 * two 128-bit steps (muldiv) that cannot overflow.
 *
 * GPUs.  No GPU: none.  One GPU: the first container gets it, the others
 * none.  Several: every container gets all of the node's GPU ids (they
 * share the devices; "all containers get GPU resources").  Container GPU
 * limits do not change this.  A container's GPU request equals its GPU
 * count: GPUs are not fractional.
 *
 * Requests.  cpu request = cpu / 4 and memory request = memory / 4, both
 * rounded down (12 cores -> 3; 9333m -> 2333m; 95583Mi -> 24469248Ki).
 *
 * cpu_exclusive (jf_cpu_pick).  Blocks are picked one after another.  For a
 * block of s cores: if a run of free cores at least s long exists, the
 * shortest such run (ties: the lowest ids) gives its first s cores; else the
 * longest free run (ties: the lowest ids) is taken whole and the rest of the
 * block is picked the same way.  That uses the fewest runs possible for
 * the block and leaves long runs for later blocks.
 */
#include "core/alloc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quantity.h"
#include "core/sched.h"

__extension__ typedef unsigned __int128 u128;

#define CORE_MILLI 1000
#define MIB        (INT64_C(1) << 20)

/* floor(a x b / d) with *rem = (a x b) mod d, for b <= d < 2^95: a x b
 * may need 160 bits, so b is taken in a high and a low 32-bit part. */
static uint64_t muldiv(uint64_t a, u128 b, u128 d, u128 *rem)
{
	u128 t1 = (u128)a * (uint64_t)(b >> 32);      /* < 2^128 */
	u128 q1 = t1 / d, r1 = t1 % d;                /* r1 < 2^95 */
	u128 t2 = (r1 << 32) + (u128)a * (uint32_t)b; /* < 2^127 + 2^96 */
	*rem = t2 % d;
	return (uint64_t)((q1 << 32) + t2 / d); /* <= a since b <= d */
}

/* Share `units` among n containers whose limits are lim[] (0 = none) by the
 * rules above; out[i] in units. */
static void split(uint64_t units, const int64_t *lim, size_t n, uint64_t *out)
{
	u128 num[JF_ALLOC_MAX_CONTAINERS], rem[JF_ALLOC_MAX_CONTAINERS], den;
	u128 sum = 0;
	size_t unlimited = 0;
	for (size_t i = 0; i < n; i++) {
		sum += (uint64_t)lim[i];
		unlimited += lim[i] == 0;
	}
	if (unlimited == n) {
		for (size_t i = 0; i < n; i++)
			num[i] = 1;
		den = n;
	} else {
		for (size_t i = 0; i < n; i++)
			num[i] = lim[i] ? (u128)(uint64_t)lim[i] * (n - unlimited) : sum;
		den = sum * n;
	}

	uint64_t given = 0;
	for (size_t i = 0; i < n; i++) {
		out[i] = muldiv(units, num[i], den, &rem[i]);
		given += out[i];
	}
	/* fewer than n units left: one each to the largest remainders */
	bool bumped[JF_ALLOC_MAX_CONTAINERS] = { false };
	for (uint64_t left = units - given; left > 0; left--) {
		size_t best = n;
		for (size_t i = 0; i < n; i++)
			if (!bumped[i] && (best == n || rem[i] > rem[best]))
				best = i;
		bumped[best] = true;
		out[best]++;
	}
	if (units < n)
		return;
	for (size_t i = 0; i < n; i++) {
		if (out[i] > 0)
			continue;
		size_t most = 0;
		for (size_t j = 1; j < n; j++)
			if (out[j] > out[most])
				most = j;
		out[most]--;
		out[i] = 1;
	}
}

/* Units of `unit` when the node has GPUs and one per container, else 1. */
static int64_t unit_for(int64_t total, int64_t unit, bool gpu_node, size_t n)
{
	return gpu_node && total / unit >= (int64_t)n ? unit : 1;
}

static bool name_ok(const char *s)
{
	size_t len = s ? strlen(s) : 0;
	if (len == 0 || len > JF_SPEC_MAX_NAME)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

enum jf_err jf_alloc_new(int64_t cpu_milli, int64_t mem_bytes, uint64_t gpu_mask,
			 const struct jf_container *ctr, size_t n, struct jf_alloc **out,
			 struct jf_error *err)
{
	*out = NULL;
	if (n == 0 || n > JF_ALLOC_MAX_CONTAINERS)
		return jf_error_set(err, JF_EINVAL, 0, "allocation: %zu containers (1 to %d)", n,
				    JF_ALLOC_MAX_CONTAINERS);
	int64_t cpu_lim[JF_ALLOC_MAX_CONTAINERS], mem_lim[JF_ALLOC_MAX_CONTAINERS];
	for (size_t i = 0; i < n; i++) {
		if (!name_ok(ctr[i].name))
			return jf_error_set(err, JF_EINVAL, 0,
					    "allocation: container %zu: name must be 1 to %d "
					    "letters, digits, '.', '_' or '-'",
					    i + 1, JF_SPEC_MAX_NAME);
		if (ctr[i].cpu_milli < 0 || ctr[i].mem_bytes < 0)
			return jf_error_set(err, JF_EINVAL, 0,
					    "allocation: container %s: negative limit",
					    ctr[i].name);
		cpu_lim[i] = ctr[i].cpu_milli;
		mem_lim[i] = ctr[i].mem_bytes;
	}
	if (cpu_milli < (int64_t)n || mem_bytes < (int64_t)n)
		return jf_error_set(err, JF_EINVAL, 0,
				    "allocation: node of %lldm and %lld bytes is too small for "
				    "%zu containers",
				    (long long)cpu_milli, (long long)mem_bytes, n);

	struct jf_alloc *a = calloc(1, sizeof(*a) + n * sizeof(a->c[0]));
	if (!a)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	a->n = n;

	bool gpu_node = gpu_mask != 0;
	int64_t cu = unit_for(cpu_milli, CORE_MILLI, gpu_node, n);
	int64_t mu = unit_for(mem_bytes, MIB, gpu_node, n);
	uint64_t cpu_units[JF_ALLOC_MAX_CONTAINERS], mem_units[JF_ALLOC_MAX_CONTAINERS];
	split((uint64_t)(cpu_milli / cu), cpu_lim, n, cpu_units);
	split((uint64_t)(mem_bytes / mu), mem_lim, n, mem_units);

	int ngpus = __builtin_popcountll(gpu_mask);
	for (size_t i = 0; i < n; i++) {
		struct jf_alloc_ctr *c = &a->c[i];
		memcpy(c->name, ctr[i].name, strlen(ctr[i].name) + 1);
		/* units x unit <= the node's total, an int64 */
		c->cpu_milli = (int64_t)cpu_units[i] * cu;
		c->mem_bytes = (int64_t)mem_units[i] * mu;
		c->req_cpu_milli = c->cpu_milli / 4;
		c->req_mem_bytes = c->mem_bytes / 4;
		if (ngpus > 1 || (ngpus == 1 && i == 0)) {
			c->gpu_mask = gpu_mask;
			c->gpus = ngpus;
		}
	}
	*out = a;
	return JF_OK;
}

void jf_alloc_free(struct jf_alloc *a)
{
	free(a);
}

/*
 * containers:
 * - name: pi
 *   cpu: "12"
 *   memory: "95583Mi"
 *   gpus: [0]
 *   requests: {cpu: "3", memory: "24469248Ki"}
 */
#define YAML_PER_CTR 640 /* name 63, four quantities 4 x 32, ids 192, text */

char *jf_alloc_yaml(const struct jf_alloc *a)
{
	size_t cap = 16 + a->n * YAML_PER_CTR, len = 0;
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	len += (size_t)snprintf(buf, cap, "containers:\n");
	for (size_t i = 0; i < a->n && len < cap; i++) {
		const struct jf_alloc_ctr *c = &a->c[i];
		char cpu[32], mem[32], rcpu[32], rmem[32], ids[200];
		jf_cpu_format(c->cpu_milli, cpu, sizeof(cpu));
		jf_mem_format(c->mem_bytes, mem, sizeof(mem));
		jf_cpu_format(c->req_cpu_milli, rcpu, sizeof(rcpu));
		jf_mem_format(c->req_mem_bytes, rmem, sizeof(rmem));
		jf_gpu_ids_format(c->gpu_mask, ids, sizeof(ids));
		/* the exact figure, and for people the whole GiB it rounds to */
		char about[48] = "";
		const int64_t gib = INT64_C(1) << 30;
		if (c->mem_bytes >= gib)
			snprintf(about, sizeof(about), "   # about %lldGi",
				 (long long)((c->mem_bytes + gib / 2) / gib));
		len += (size_t)snprintf(buf + len, cap - len,
					"- name: %s\n"
					"  cpu: \"%s\"\n"
					"  memory: \"%s\"%s\n"
					"  gpus: [%s]\n"
					"  requests: {cpu: \"%s\", memory: \"%s\"}\n",
					c->name, cpu, mem, about, ids, rcpu, rmem);
	}
	if (len >= cap) { /* cannot happen: YAML_PER_CTR bounds an entry */
		free(buf);
		return NULL;
	}
	return buf;
}

/* ---- cpu_exclusive ---- */

static bool bit(const uint64_t *set, int i)
{
	return (set[i / 64] >> (i % 64)) & 1;
}

static void set_bit(uint64_t *set, int i)
{
	set[i / 64] |= UINT64_C(1) << (i % 64);
}

/* Take `want` cores from the free cores of taken (0 bits below ncores). */
static void pick_block(uint64_t *taken, int ncores, int want)
{
	while (want > 0) {
		int fit = -1, fit_len = 0, big = -1, big_len = 0;
		for (int i = 0; i < ncores;) {
			if (bit(taken, i)) {
				i++;
				continue;
			}
			int start = i;
			while (i < ncores && !bit(taken, i))
				i++;
			int len = i - start;
			if (len >= want && (fit < 0 || len < fit_len)) {
				fit = start;
				fit_len = len;
			}
			if (len > big_len) {
				big = start;
				big_len = len;
			}
		}
		int start = fit >= 0 ? fit : big;
		int len = fit >= 0 ? want : big_len;
		for (int i = start; i < start + len; i++)
			set_bit(taken, i);
		want -= len;
	}
}

enum jf_err jf_cpu_pick(int ncores, const uint64_t *held, int blocks, int block_size,
			uint64_t *picked, struct jf_error *err)
{
	if (ncores < 1 || ncores > JF_CPU_MAX_CORES || blocks < 1 || block_size < 1)
		return jf_error_set(err, JF_EINVAL, 0,
				    "cpu_exclusive: %d cores, %d blocks of %d: out of range",
				    ncores, blocks, block_size);
	int64_t need = (int64_t)blocks * block_size;
	uint64_t taken[JF_CPUSET_WORDS] = { 0 };
	int nfree = 0;
	for (int i = 0; i < ncores; i++) {
		if (bit(held, i))
			set_bit(taken, i);
		else
			nfree++;
	}
	if (need > nfree)
		return jf_error_set(err, JF_EBUSY, 0,
				    "cpu_exclusive: %lld cores needed, %d of %d free",
				    (long long)need, nfree, ncores);
	for (int b = 0; b < blocks; b++)
		pick_block(taken, ncores, block_size);
	/* taken has no bits at or above ncores; held's words past them are not read */
	for (int w = 0; w < JF_CPUSET_WORDS; w++)
		picked[w] = w * 64 < ncores ? taken[w] & ~held[w] : 0;
	return JF_OK;
}

void jf_cpuset_format(const uint64_t *set, int ncores, char *buf, size_t n)
{
	size_t len = 0;
	if (n == 0)
		return;
	buf[0] = '\0';
	for (int i = 0; i < ncores && len < n;) {
		if (!bit(set, i)) {
			i++;
			continue;
		}
		int start = i;
		while (i < ncores && bit(set, i))
			i++;
		int r = i - 1 == start ? snprintf(buf + len, n - len, "%s%d", len ? "," : "", start)
				       : snprintf(buf + len, n - len, "%s%d-%d", len ? "," : "",
						  start, i - 1);
		len += (size_t)r;
	}
}
