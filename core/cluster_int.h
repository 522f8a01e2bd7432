/*
 * cluster_int.h - what cluster.c shares with the cluster file reader
 * (cluster_file.c); no other module includes it.
 */
#ifndef JF_CLUSTER_INT_H
#define JF_CLUSTER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"

/* A model's per-GPU cores and memory are at most this, so a machine's
 * JF_MACHINE_MAX_GPUS times it never overflows. */
#define JF_CLUSTER_MAX_PER_GPU  (INT64_MAX / JF_MACHINE_MAX_GPUS)
#define JF_CLUSTER_MAX_GRACE_S  86400 /* preempt_grace */
#define JF_CLUSTER_DEFAULT_CURR "CNY"

/* A heap cluster with no name, currency, models or machines and every
 * other setting at its default: the built-in CPU prices, a 30 s
 * preempt_grace, JF_SPOT_RISK_DEFAULT, no untyped model.  NULL when out of
 * memory.  The caller frees it with jf_cluster_free(). */
struct jf_cluster *jf_cluster_new_defaults(void);

/* m's cpu_milli and mem_bytes: m->gpus times gm's per-GPU figures, which
 * are within JF_CLUSTER_MAX_PER_GPU. */
void jf_machine_size(struct jf_machine *m, const struct jf_gpu_model *gm);

/* s is a currency code: 3 uppercase ASCII letters ("CNY"). */
bool jf_cluster_currency_ok(const char *s);

/* Whether c holds what the top of cluster.c says holds for every cluster,
 * but for the uniqueness of machine names (that takes a sort; whoever makes
 * the names checks it).  For assert(): a false is a bug here, never bad
 * input. */
bool jf_cluster_check(const struct jf_cluster *c);

#endif
