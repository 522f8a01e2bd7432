/*
 * step.c - the engine's step: the store first, then the world.
 *
 * Every change the engine makes happens in a step: jf_eng_step_begin(),
 * the store's changes, jf_eng_step_end().  What must not happen unless
 * those changes are durable (signals to processes, supervisors started,
 * a scheduling backend's submissions, cancels and holds, the tree's
 * notifications) is queued during the step with jf_eng_after() (and
 * jf_eng_changed()) and done only once the commit has succeeded, in the
 * order it was queued.  What those actions write is the next step's.
 *
 * Steps nest: an inner begin/end pair is part of the outermost step, whose
 * end commits.  The entry points of engine.h each make one step (engine
 * entry/leave below), so one commit covers a whole request, a batch of
 * backend results or a scheduling pass.
 *
 * A failed commit does nothing of what the step queued, and poisons the
 * engine: every later step is rolled back too, until the entry point
 * leaves.  Then the engine forgets its tables and takes them up again from
 * the store, the way a restarted daemon does (adopt.c), so memory agrees
 * with the store again; a request whose step failed answers EIO.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "engine/engine_int.h"
#include "store/store.h"

void jf_eng_step_begin(struct jf_engine *e)
{
	if (e->step.depth++ > 0)
		return;
	if (jf_store_begin(e->st) != JF_OK)
		e->step.failed = true;
}

/* Queue one action; out of memory, the step cannot keep its promise and
 * fails as a whole: nothing of it is done. */
static void push_act(struct jf_engine *e, struct jf_act a)
{
	struct jf_step *s = &e->step;
	if (!jf_grow(&s->acts, &s->cap, s->nacts + 1, sizeof(*s->acts))) {
		s->failed = true;
		return;
	}
	s->acts[s->nacts++] = a;
}

void jf_eng_after(struct jf_engine *e, jf_act_fn fn, int64_t a, int64_t b, int64_t c)
{
	if (e->step.depth == 0) {
		fn(e, a, b, c);
		return;
	}
	push_act(e, (struct jf_act){ .fn = fn, .a = a, .b = b, .c = c });
}

void jf_eng_changed(struct jf_engine *e, enum jf_change_kind kind, int64_t queue_id,
		    int64_t group_id, int64_t task_id, int64_t node_id, bool structure)
{
	if (!e->notify)
		return;
	struct jf_change ch = {
		.kind = kind,
		.queue_id = queue_id,
		.group_id = group_id,
		.task_id = task_id,
		.node_id = node_id,
		.structure = structure,
	};
	if (e->step.depth == 0) {
		e->notify(e->notify_ctx, &ch);
		return;
	}
	/* the same change just queued says nothing new */
	for (size_t i = e->step.nacts, k = 0; i > 0 && k < 8; i--, k++) {
		const struct jf_act *a = &e->step.acts[i - 1];
		if (!a->fn && a->ch.kind == ch.kind && a->ch.queue_id == ch.queue_id &&
		    a->ch.group_id == ch.group_id && a->ch.task_id == ch.task_id &&
		    a->ch.node_id == ch.node_id && a->ch.structure == ch.structure)
			return;
	}
	push_act(e, (struct jf_act){ .fn = NULL, .ch = ch });
}

static void say_failure(struct jf_engine *e, const char *what)
{
	e->step.failures++;
	fprintf(stderr,
		"jobfs: the store could not commit %s (%s): nothing of it was done; "
		"the engine takes its state up again from the store\n",
		what, jf_store_last_error(e->st));
}

bool jf_eng_step_end(struct jf_engine *e)
{
	struct jf_step *s = &e->step;
	if (s->depth == 0)
		return false;
	if (--s->depth > 0)
		return !s->failed && !s->poisoned;
	bool ok;
	if (s->failed || s->aborted || s->poisoned) {
		jf_store_rollback(e->st);
		ok = false;
	} else {
		ok = jf_store_commit(e->st) == JF_OK;
	}
	if (!ok && !s->poisoned) {
		/* what the step changed in the tables is not in the store */
		if (!s->aborted || s->failed)
			say_failure(e, "a step");
		s->poisoned = true;
	}
	s->failed = s->aborted = false;
	/* what readers on other threads see of the engine: as of this commit,
	 * before the actions (starts take ms): a reader that sees the commit
	 * in the store never sees older figures of the engine's */
	if (ok)
		jf_eng_view_publish(e, false);
	/* take the queue: what its actions queue is the next step's */
	struct jf_act *acts = s->acts;
	size_t n = s->nacts;
	s->acts = NULL;
	s->nacts = s->cap = 0;
	if (ok && n) {
		jf_eng_step_begin(e);
		for (size_t i = 0; i < n; i++) {
			if (acts[i].fn)
				acts[i].fn(e, acts[i].a, acts[i].b, acts[i].c);
			else if (e->notify)
				e->notify(e->notify_ctx, &acts[i].ch);
		}
		jf_eng_step_end(e);
	}
	free(acts);
	return ok;
}

void jf_eng_step_abort(struct jf_engine *e)
{
	if (e->step.depth == 0)
		return;
	e->step.aborted = true;
	jf_eng_step_end(e);
}

bool jf_eng_step_ok(const struct jf_engine *e)
{
	return !e->step.failed && !e->step.poisoned;
}

int64_t jf_engine_store_failures(struct jf_engine *e)
{
	return e->step.failures;
}

/* ---- entry points ---- */

/* After a failed commit: the engine's tables from the store again. */
static void recover(struct jf_engine *e)
{
	jf_eng_resync(e);
	e->step.poisoned = false;
	jf_eng_step_begin(e);
	jf_eng_schedule(e);
	jf_eng_step_end(e); /* failing again: the next entry point tries again */
}

void jf_engine_set_step_hooks(struct jf_engine *e, unsigned (*leave)(void *ctx),
			      void (*enter)(void *ctx, unsigned held), void *ctx)
{
	e->hook_leave = leave;
	e->hook_enter = enter;
	e->hook_ctx = ctx;
}

void jf_eng_enter(struct jf_engine *e)
{
	if (e->step.depth == 0 && e->hook_leave)
		e->hook_held = e->hook_leave(e->hook_ctx);
	if (e->step.depth == 0 && e->step.poisoned)
		recover(e);
	jf_eng_step_begin(e);
}

bool jf_eng_leave(struct jf_engine *e)
{
	bool ok = jf_eng_step_end(e);
	if (e->step.depth > 0)
		return ok; /* an entry point called from inside another */
	if (e->step.poisoned)
		recover(e);
	jf_eng_trim(e);
	if (e->hook_enter) {
		unsigned held = e->hook_held;
		e->hook_held = 0;
		e->hook_enter(e->hook_ctx, held);
	}
	return ok;
}

void jf_eng_step_release(struct jf_engine *e)
{
	free(e->step.acts);
	e->step.acts = NULL;
	e->step.nacts = e->step.cap = 0;
}
