/*
 * retain.c - the state directory does not only grow.
 *
 * What is to go is written to the store's trash in the step that decides
 * it (store.h: jf_trash_*): an ended attempt's run directory (tidied: its
 * records go, its non-empty logs and work files stay), a finished task's
 * checkpoint directory (if empty), a removed group's run and checkpoint
 * directories (whole), and the run directories of a finished group whose
 * retention passed (the daemon's --keep-logs, or its queue's keep_logs).
 * Every tick carries out up to JF_TRASH_TURN rows (trash.c does the file
 * work) and removes them in one commit, so a backlog of 30,000 rows never
 * holds a FUSE reply for long, and a daemon killed half-way finishes the
 * rest after its restart.
 */
#include "engine/engine_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quantity.h"
#include "core/spec.h"
#include "engine/trash.h"

#define JF_TRASH_TURN    256
#define JF_KEEP_CHECK_MS 60000
#define JF_KEEP_GROUPS   64

void jf_eng_run_dir(const struct jf_engine *e, int64_t node_id, int64_t attempt, char *buf,
		    size_t n)
{
	snprintf(buf, n, "%s/runs/%lld/%lld", e->state_dir, (long long)node_id, (long long)attempt);
}

void jf_eng_trash(struct jf_engine *e, enum jf_trash_kind kind, const char *path)
{
	if (jf_trash_add(e->st, kind, path) == JF_OK)
		e->trash_pending = true;
}

struct turn {
	struct jf_engine *e;
	int n, failed;
	char first_failure[512];
};

static void remove_one(void *ctx, enum jf_trash_kind kind, const char *path)
{
	struct turn *t = ctx;
	t->n++;
	int rc = jf_trash_remove(t->e->state_dir, kind, path, NULL);
	if (rc && !t->failed++)
		snprintf(t->first_failure, sizeof(t->first_failure), "%s: %s", path, strerror(rc));
}

bool jf_eng_trash_turn(struct jf_engine *e)
{
	if (!e->trash_pending)
		return false;
	struct turn t = { .e = e };
	int64_t last = 0;
	if (jf_trash_take(e->st, JF_TRASH_TURN, remove_one, &t, &last) != JF_OK)
		return false; /* the next tick tries again */
	if (!last) {
		e->trash_pending = false;
		return false;
	}
	jf_eng_step_begin(e);
	enum jf_err rc = jf_trash_done(e->st, last);
	if (rc != JF_OK)
		jf_eng_step_abort(e);
	else
		jf_eng_step_end(e); /* failed: done again, harmlessly, next turn */
	if (t.failed && !e->trash_said) {
		/* once: a tree that cannot go would say so at every turn */
		fprintf(stderr, "jobfs: state directory: %d of %d removals failed, first %s\n",
			t.failed, t.n, t.first_failure);
		e->trash_said = true;
	}
	return t.n == JF_TRASH_TURN;
}

/* ---- retention of finished groups' logs ---- */

struct keep_ctx {
	struct jf_engine *e;
	int64_t keep_ms, now;
};

static int free_logs(void *ctx, int64_t id, int64_t queue_id)
{
	struct keep_ctx *k = ctx;
	struct jf_engine *e = k->e;
	struct jf_group_rec g;
	if (jf_group_get(e->st, id, &g) != JF_OK)
		return 0;
	enum jf_group_kind kind = g.kind;
	jf_group_release(&g);
	int64_t n = 0;
	jf_eng_step_begin(e);
	enum jf_err rc = jf_trash_group_logs(e->st, id, k->now, &n);
	if (rc == JF_OK) {
		char keep[32];
		jf_duration_format(k->keep_ms / 1000, keep, sizeof(keep));
		jf_eng_group_event(e, 0, id, kind, "Normal", "LogsRemoved",
				   "the run directories of %lld attempt%s (logs, work files) "
				   "removed: kept %s after the %s ended (keep_logs); status, "
				   "events and cost stay",
				   (long long)n, n == 1 ? "" : "s", keep,
				   kind == JF_KIND_BATCH ? "batch" : "group");
		jf_eng_changed(e, JF_CH_GROUP, queue_id, id, 0, 0, false);
	}
	if (rc != JF_OK) {
		jf_eng_step_abort(e);
		return 1; /* the next check tries again */
	}
	if (!jf_eng_step_end(e))
		return 1;
	e->trash_pending = true;
	return 0;
}

/* The groups of one queue (0: the batches of /tasks) kept past keep_ms. */
static void expire(struct jf_engine *e, int64_t queue_id, int64_t keep_ms, int64_t now)
{
	if (keep_ms <= 0)
		return;
	struct keep_ctx k = { .e = e, .keep_ms = keep_ms, .now = now };
	jf_group_list_logs_kept(e->st, queue_id, now - keep_ms, JF_KEEP_GROUPS, free_logs, &k);
}

struct queues_ctx {
	int64_t ids[64];
	int n;
};

static int collect_queue(void *ctx, int64_t id, const char *name)
{
	(void)name;
	struct queues_ctx *c = ctx;
	c->ids[c->n++] = id;
	return c->n == 64;
}

/* The queue's keep_logs, else the daemon's. */
static int64_t queue_keep_ms(struct jf_engine *e, int64_t id)
{
	struct jf_queue_rec q;
	int64_t keep_ms = e->keep_logs_ms;
	if (jf_queue_get(e->st, id, &q) == JF_OK && q.spec && *q.spec) {
		struct jf_queue_spec qs = { 0 };
		struct jf_error err = { 0 };
		if (jf_queue_spec_parse(q.spec, strlen(q.spec), &qs, &err) == JF_OK) {
			if (qs.keep_logs_set)
				keep_ms = qs.keep_logs * 1000;
			jf_queue_spec_release(&qs);
		}
	}
	jf_queue_release(&q);
	return keep_ms;
}

int64_t jf_eng_keep_check(struct jf_engine *e)
{
	int64_t now = jf_eng_now(e);
	if (now < e->keep_check_ms)
		return e->keep_check_ms - now;
	e->keep_check_ms = now + JF_KEEP_CHECK_MS;
	/* queues collected a page at a time: expire runs statements of its own */
	struct queues_ctx c;
	int64_t after = 0;
	do {
		c.n = 0;
		if (jf_queue_list(e->st, after, 64, collect_queue, &c) != JF_OK)
			break;
		for (int i = 0; i < c.n; i++)
			expire(e, c.ids[i], queue_keep_ms(e, c.ids[i]), now);
		if (c.n)
			after = c.ids[c.n - 1];
	} while (c.n == 64);
	expire(e, 0, e->keep_logs_ms, now);
	return JF_KEEP_CHECK_MS;
}
