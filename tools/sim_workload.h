/*
 * sim_workload.h - jobfs-sim's workload file: parsed, checked, expanded.
 *
 * jf_simw_parse() reads the YAML of a workload (the format is at the top
 * of tools/jobfs_sim.c, THE WORKLOAD FILE) into a struct workload: the
 * queues in file order, and the submissions with every `every`/`times`
 * entry expanded into one struct wsub per repeat (names numbered -1 ..
 * -N), sorted into replay order (by `at`, then file order).  Every key is
 * checked; on an error the message names the line and the key.
 *
 * What holds after a successful parse: no group or batch is submitted
 * twice, every ctl entry comes after the submission it acts on, every
 * wsub.queue indexes queues (-1 for batches), every wsub.entry indexes
 * entries (one per submit[] item, for the spot report's series).
 *
 * The workload owns its arrays and the YAML document; the spec texts and
 * the cluster text point into that document, so they live until
 * jf_simw_release().  The text given to jf_simw_parse() is not kept.
 * The replay fills in wqueue.id, group_timeout_s and peak_nodes.
 */
#ifndef JF_SIM_WORKLOAD_H
#define JF_SIM_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h" /* JF_NAME_MAX */

struct jf_ydoc;

#define MAX_SUBMISSIONS 1000000
#define MAX_HORIZON_S   (10LL * 366 * 86400) /* ten years of simulated time */
#define LABEL_MAX       (2 * JF_NAME_MAX + 8)

struct wqueue {
	char name[JF_NAME_MAX];
	const char *spec; /* borrowed from the document, NULL = none */
	size_t spec_len;
	int line;
	int64_t id; /* once made */
	int64_t group_timeout_s;
	int64_t peak_nodes;
};

enum wkind { W_GROUP, W_BATCH, W_CTL };

struct wsub {
	int64_t at_ms; /* from the start */
	size_t order;  /* in the expanded file order */
	enum wkind kind;
	int queue; /* index into queues; -1 for batches */
	char name[JF_NAME_MAX];
	const char *spec; /* borrowed; W_GROUP and W_BATCH */
	size_t spec_len;
	const char *verb; /* W_CTL; static */
	int line;
	size_t entry; /* index into entries: the submit[] item it came from */
};

struct wentry {                /* one submit[] item, before every/times */
	char label[LABEL_MAX]; /* "batch/nightly", "tasks/debug" (no repeat number) */
};

struct workload {
	struct jf_ydoc *doc; /* owns the strings the entries borrow */
	const char *cluster; /* inline cluster text, NULL = none */
	size_t cluster_len;
	int64_t until_s; /* -1 = none */
	struct wqueue *queues;
	size_t nqueues;
	struct wsub *subs;
	size_t nsubs;
	struct wentry *entries; /* one per submit[] item, in file order */
	size_t nentries;
};

/* Parse len bytes of text into *w (which need not be initialised).  On an
 * error *w may hold part of the workload: release it either way. */
enum jf_err jf_simw_parse(const char *text, size_t len, struct workload *w, struct jf_error *err);
/* Free what *w holds and zero it; a zeroed workload is fine. */
void jf_simw_release(struct workload *w);

#endif
