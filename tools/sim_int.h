/*
 * sim_int.h - jobfs-sim's insides, shared by tools/jobfs_sim.c (set-up and
 * the replay, which fills these in) and tools/sim_report.c (the reports,
 * which only read them once the replay has ended).
 *
 * A struct replay holds the engine on the simulated clock and backend, the
 * workload it plays, one struct sgroup per group or batch submitted so far
 * (in submission order; room for every submission is made before the
 * replay starts), and the figures sample() takes at each settled instant.
 */
#ifndef JF_SIM_INT_H
#define JF_SIM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/sim/sim.h"
#include "core/cluster.h"
#include "core/why.h"
#include "engine/engine.h"
#include "tools/sim_workload.h"

struct sgroup { /* a group or batch submitted */
	int64_t id;
	char label[LABEL_MAX]; /* "batch/a", "tasks/debug" */
	int queue;             /* -1 for batches */
	size_t entry;          /* the submit[] item it came from */
	bool final;            /* seen in a final state (cleared by a ctl) */
	/* reference 9.1: its wait before its first start, split by reason,
	 * and the first ETA each basis gave while it waited */
	bool started;
	int reason; /* enum jf_reason as of the last instant */
	int64_t wait_ms[JF_REASON__COUNT];
	int64_t pred_resv_ms, pred_sim_ms;
};

struct replay {
	struct jf_sim_clock clk;
	struct jf_engine *e;
	struct jf_runner *be; /* owned by e */
	struct jf_store *st;  /* owned by e */
	const struct jf_cluster *cl;
	struct workload *w;
	int64_t t0;
	size_t next_sub;
	struct sgroup *groups;
	size_t ngroups;
	/* figures */
	int64_t total_gpus;
	int64_t gpus_now, peak_gpus;
	int64_t gpu_ms; /* integral of GPUs in use over time */
	int64_t peak_nodes, peak_batch_nodes;
	int64_t instants;
	int64_t last_sample_ms; /* the instant sample() last saw */
	bool eta;               /* --eta: the simulation basis too */
	/* the replay in the engine's loop (engine/loop.h) */
	struct jf_loop *loop;
	int sub_timer, end_timer, until_timer;
	const char *wpath;
	int64_t until_ms; /* -1: none */
	int64_t idle_since;
	bool until_hit;
	int code; /* an exit code that stopped the replay */
	int how;  /* enum ending, once stopped */
};

enum ending {
	END_DONE,    /* nothing left to happen, every group final */
	END_STALLED, /* nothing left to happen, some group not final */
	END_UNTIL,   /* stopped at --until */
};

#endif
