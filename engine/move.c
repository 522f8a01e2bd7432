/*
 * move.c - the one way a group, task or node changes state.
 *
 * Every state the engine writes goes through jf_eng_move() (or, for many
 * tasks of a group at once, jf_eng_move_tasks()): it reads the object's
 * state, asks core/lifecycle.c's table where the event takes it, writes
 * the new state with its message and queues the tree's notification, all
 * in the caller's step.  A move the table does not allow writes nothing:
 * it is reported on stderr and, in builds with assertions (the default,
 * and the tests), aborts, so that a wrong move is found where it is made
 * rather than read later in a status file.
 */
#include <stdio.h>
#include <stdlib.h>

#include "engine/engine_int.h"
#include "store/store.h"

static const char *level_name(enum jf_level lv)
{
	return lv == JF_LV_GROUP ? "group" : lv == JF_LV_TASK ? "task" : "node";
}

int jf_eng_next_state(enum jf_level lv, int from, enum jf_event ev)
{
	if (from < 0 || from >= JF_ST__COUNT)
		return -1;
	switch (lv) {
	case JF_LV_GROUP:
		return jf_group_next((enum jf_state)from, ev);
	case JF_LV_TASK:
		return jf_task_next((enum jf_state)from, ev);
	case JF_LV_NODE:
		return jf_node_next((enum jf_state)from, ev);
	}
	return -1;
}

static void illegal(struct jf_engine *e, enum jf_level lv, int64_t id, int from, enum jf_event ev)
{
	e->illegal_moves++;
	fprintf(stderr, "jobfs: illegal move refused: %s %lld is %s and '%s' does not apply\n",
		level_name(lv), (long long)id, from >= 0 ? jf_state_name((enum jf_state)from) : "?",
		jf_event_name(ev));
#ifndef NDEBUG
	if (!e->illegal_soft)
		abort();
#endif
}

static enum jf_err state_now(struct jf_engine *e, enum jf_level lv, int64_t id, int *s)
{
	switch (lv) {
	case JF_LV_GROUP:
		return jf_group_state(e->st, id, s);
	case JF_LV_TASK:
		return jf_task_state(e->st, id, s);
	case JF_LV_NODE:
		return jf_node_state(e->st, id, s);
	}
	return JF_EINVAL;
}

int jf_eng_move(struct jf_engine *e, const struct jf_obj *o, enum jf_event ev, const char *message)
{
	enum jf_level lv = o->node_id ? JF_LV_NODE : o->task_id ? JF_LV_TASK : JF_LV_GROUP;
	int64_t id = o->node_id ? o->node_id : o->task_id ? o->task_id : o->group_id;
	int from = -1;
	if (state_now(e, lv, id, &from) != JF_OK)
		return -1; /* gone (or the step failed): nothing to move */
	int to = jf_eng_next_state(lv, from, ev);
	if (to < 0) {
		illegal(e, lv, id, from, ev);
		return -1;
	}
	int64_t now = jf_eng_now(e);
	enum jf_err rc = lv == JF_LV_GROUP  ? jf_group_set_state(e->st, id, to, message, now)
			 : lv == JF_LV_TASK ? jf_task_set_state(e->st, id, to, message, now)
					    : jf_node_set_state(e->st, id, to, message, now);
	if (rc != JF_OK)
		return -1;
	if (lv == JF_LV_TASK && jf_state_final(to) && !e->delegated) {
		/* JOB_CHECKPOINT_DIR: nothing written there, nothing to keep */
		char ckpt[4096];
		snprintf(ckpt, sizeof(ckpt), "%s/ckpt/%lld", e->state_dir, (long long)id);
		jf_eng_trash(e, JF_TRASH_EMPTY, ckpt);
	}
	jf_eng_changed(e,
		       lv == JF_LV_GROUP  ? JF_CH_GROUP
		       : lv == JF_LV_TASK ? JF_CH_TASK
					  : JF_CH_NODE,
		       o->queue_id, o->group_id, o->task_id, o->node_id, false);
	if (lv == JF_LV_GROUP && o->queue_id)
		jf_eng_changed(e, JF_CH_QUEUE, o->queue_id, 0, 0, 0, false);
	/* a group or task that ended may decide what waits for it (deps.c) */
	if (lv != JF_LV_NODE)
		jf_eng_dep_moved(e, o->group_id, lv == JF_LV_TASK ? o->task_id : 0, to);
	return to;
}

bool jf_eng_may_move(struct jf_engine *e, const struct jf_obj *o, enum jf_event ev)
{
	enum jf_level lv = o->node_id ? JF_LV_NODE : o->task_id ? JF_LV_TASK : JF_LV_GROUP;
	int64_t id = o->node_id ? o->node_id : o->task_id ? o->task_id : o->group_id;
	int from = -1;
	if (state_now(e, lv, id, &from) != JF_OK)
		return false;
	if (jf_eng_next_state(lv, from, ev) >= 0)
		return true;
	illegal(e, lv, id, from, ev);
	return false;
}

int64_t jf_eng_move_tasks(struct jf_engine *e, const struct jf_obj *group, unsigned from_mask,
			  enum jf_event ev, const char *message)
{
	/* every state of the mask must go, by ev, to one and the same state */
	int to = -1;
	for (int s = 0; s < JF_ST__COUNT; s++) {
		if (!(from_mask & (1u << s)))
			continue;
		int n = jf_task_next((enum jf_state)s, ev);
		if (n < 0 || (to >= 0 && n != to)) {
			illegal(e, JF_LV_TASK, 0, s, ev);
			return -1;
		}
		to = n;
	}
	if (to < 0)
		return 0;
	int64_t changed = 0;
	if (jf_task_set_state_all(e->st, group->group_id, from_mask, to, message, jf_eng_now(e),
				  &changed) != JF_OK)
		return -1;
	if (changed) {
		jf_eng_changed(e, JF_CH_GROUP, group->queue_id, group->group_id, 0, 0, false);
		jf_eng_dep_moved(e, group->group_id, -1, to);
	}
	return changed;
}
