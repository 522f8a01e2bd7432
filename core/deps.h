/*
 * deps.h - a group's or batch's `after:` entries (reference 10): what they
 * say as written, what one says given its target's state, and whether a
 * graph of them has a cycle.
 *
 * An entry names a target and a condition:
 *     after: [prep, {group: queues/etl/groups/load, when: failed, each: true}]
 * A bare name is a group of the same queue (for a batch: a batch of
 * /tasks); a path is queues/<q>/groups/<g> or tasks/<name>.  `when` is
 * succeeded (Slurm's afterok, the default), failed (afternotok: the target
 * ended Failed) or finished (afterany: it ended in any final state).  With
 * `each: true` task i waits for task i of the target only (aftercorr).
 *
 * Everything here is pure: the parser reads a YAML node, the verdict is a
 * function of a state, and the cycle check asks its caller for edges.
 * Names are resolved to groups by the engine (engine/deps.c), which knows
 * the tree.
 */
#ifndef JF_DEPS_H
#define JF_DEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/yamltree.h"

#define JF_SPEC_MAX_AFTER 64 /* entries of one `after:` */
#define JF_DEP_NAME_MAX   63 /* a queue's or a group's name, bytes */

enum jf_dep_when { JF_DEP_SUCCEEDED = 0, JF_DEP_FAILED = 1, JF_DEP_FINISHED = 2 };

/* How the target was written. */
enum jf_dep_ref {
	JF_DEP_REF_NAME,  /* "prep": of the same queue, or of /tasks for a batch */
	JF_DEP_REF_QUEUE, /* "queues/<q>/groups/<g>" */
	JF_DEP_REF_TASKS, /* "tasks/<name>" */
};

/* What an entry says now. */
enum jf_dep_verdict { JF_DEP_WAITS = 0, JF_DEP_HOLDS = 1, JF_DEP_NEVER = 2 };

struct jf_dep {
	enum jf_dep_ref ref;
	char queue[JF_DEP_NAME_MAX + 1]; /* JF_DEP_REF_QUEUE, else "" */
	char name[JF_DEP_NAME_MAX + 1];  /* the group's or batch's directory */
	enum jf_dep_when when;
	bool each;
	int line; /* where the entry is written */
};

/*
 * Parse the value of `after:` (n, at key path path, e.g. "after" or
 * "metadata.annotations.jobfs/after"): a list of entries, or one entry
 * alone.  *out (the caller's to free; NULL when there is none) gets *nout
 * entries.  Errors name the entry's path and line: a name that is not a
 * directory name, a path of another shape, a mapping without group, an
 * unknown key, a bad when or each, the same target twice, more than
 * JF_SPEC_MAX_AFTER entries.  On error nothing is left allocated.
 */
enum jf_err jf_deps_parse(const struct jf_ynode *n, const char *path, struct jf_dep **out,
			  size_t *nout, struct jf_error *err);

/* The target as written: "prep", "queues/q/groups/g", "tasks/x". */
void jf_dep_target(const struct jf_dep *d, char *buf, size_t n);
/* "succeeded", "failed", "finished" */
const char *jf_dep_when_name(enum jf_dep_when w);
/* "waits", "holds", "never" */
const char *jf_dep_verdict_name(enum jf_dep_verdict v);
/* 1 << state of every state that satisfies when (enum jf_state). */
unsigned jf_dep_ok_mask(enum jf_dep_when w);
/*
 * The verdict of when on a target (a group, or for each: the target's
 * task) in state (enum jf_state), or -1 when it is gone: holds in a final
 * state of when's mask, never in another final state or gone, else waits
 * (a draft, waiting, running, paused target may still end either way).
 */
enum jf_dep_verdict jf_dep_eval(enum jf_dep_when w, int state);

/*
 * Would a new node self, with edges to targets[0..n), close a cycle in
 * the graph whose edges edges() gives?  edges(ctx, id, out, max) writes
 * at most max of id's targets to out and returns how many it has (it is
 * asked again with room for all when that is more).  A cycle is self
 * reachable from one of targets (self among them included).  JF_OK: no
 * cycle; JF_EINVAL: one, written to path as ids self, t, ..., self (at
 * most maxpath of them; *npath the count written); JF_ENOMEM.  Every node
 * is visited once, so any graph, cyclic or not, ends.
 */
typedef size_t (*jf_dep_edges_fn)(void *ctx, int64_t id, int64_t *out, size_t max);
enum jf_err jf_deps_cycle(int64_t self, const int64_t *targets, size_t n, jf_dep_edges_fn edges,
			  void *ctx, int64_t *path, size_t maxpath, size_t *npath);

#endif
