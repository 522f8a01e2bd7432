/*
 * cluster.h - the machines jobfs schedules onto, and their prices.
 *
 * A cluster is a list of GPU models (vram, cores and memory per GPU, prices
 * per GPU-hour for on-demand and spot) and a list of machines (a model and
 * a GPU count).  A machine's cores and memory are gpus x the model's per-GPU
 * figures.  CPU-only work is priced per core-hour (cpu_price_*).
 *
 * Money is integer micro-units of `currency` (1 CNY = 1,000,000).
 *
 * jf_cluster_builtin() is reference 7's embedded default; jf_cluster_parse()
 * reads the YAML cluster file (format in the README).  Both return a heap
 * cluster the caller frees with jf_cluster_free().
 */
#ifndef JF_CLUSTER_H
#define JF_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define JF_CLUSTER_MAX_MODELS   64
#define JF_CLUSTER_MAX_MACHINES 100000
#define JF_MACHINE_MAX_GPUS     64

#define JF_MODEL_NONE      ((size_t)-1) /* a machine with no GPU jobfs prices */
#define JF_SLURM_NAMES_MAX 16

struct jf_gpu_model {
	char *name;         /* "4090" */
	char **slurm_names; /* Slurm GRES types that are this model ("a100") */
	size_t nslurm_names;
	int64_t vram_bytes;        /* 24Gi */
	int64_t cpu_milli_per_gpu; /* 20000 */
	int64_t mem_bytes_per_gpu; /* 101G */
	int64_t price_ondemand;    /* micro-units per GPU-hour */
	int64_t price_spot;        /* micro-units per GPU-hour */
};

struct jf_machine {
	char *name;        /* "4090-0" */
	size_t model;      /* index into models, or JF_MODEL_NONE */
	int gpus;          /* 1 .. JF_MACHINE_MAX_GPUS; 0 with JF_MODEL_NONE */
	int64_t cpu_milli; /* gpus x cpu_milli_per_gpu (a Slurm node: its own) */
	int64_t mem_bytes; /* gpus x mem_bytes_per_gpu (a Slurm node: its own) */
	/* a Slurm node only (NULL otherwise): the GPU type its GRES names
	 * ("" for untyped "gpu:4"), and how many GPUs Slurm says it has, priced
	 * by a model or not */
	char *slurm_gpu;
	int slurm_gpus;
};

struct jf_cluster {
	char *name;                 /* "builtin" or from the file */
	char *currency;             /* "CNY" */
	int64_t cpu_price_ondemand; /* micro-units per core-hour, CPU-only nodes */
	int64_t cpu_price_spot;
	int64_t preempt_grace_s; /* default 30 */
	int untyped_model;       /* slurm_untyped_gpu: the model of untyped "gpu:N"
				  * GRES, -1 none */
	double spot_risk_max;    /* spot_risk_threshold: start a spot task with a
				  * unit_runtime only while its risk is below
				  * this (0..1, default JF_SPOT_RISK_DEFAULT) */
	struct jf_gpu_model *models;
	size_t nmodels;
	struct jf_machine *machines;
	size_t nmachines;
};

#define JF_SPOT_RISK_DEFAULT 0.2

struct jf_cluster *jf_cluster_builtin(void);
enum jf_err jf_cluster_parse(const char *text, size_t len, struct jf_cluster **out,
			     struct jf_error *err);
void jf_cluster_free(struct jf_cluster *c);

/* Index of the model named name, or -1. */
int jf_cluster_model_index(const struct jf_cluster *c, const char *name);

/*
 * The model of a Slurm GPU type (the TYPE of "gpu:TYPE:N"; "" for an
 * untyped "gpu:N"): a model of that name, case aside; else one that lists
 * it under slurm_names, case aside; for "" the cluster's slurm_untyped_gpu.
 * -1 if none prices it.
 */
int jf_cluster_model_for_gres(const struct jf_cluster *c, const char *type);

#endif
