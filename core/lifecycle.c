/*
 * lifecycle.c - state tables and the judgement of failed attempts.
 *
 * Group:  Draft --submit--> Waiting <--idle-- Running
 *         Draft/Invalid --reject--> Invalid --submit--> Waiting
 *         Draft/Invalid --clear--> Draft (an emptied spec.yaml)
 *         Waiting --start--> Running --succeed/fail--> Succeeded/Failed
 *         Waiting/Running --pause--> Paused --resume--> Waiting
 *         any live state --stop--> Stopped; any accepted state --restart--> Waiting
 * Task:   Waiting --place--> Initializing --start--> Running (placed
 *         again, in place, from Initializing or Running: OnFailure)
 *         Initializing/Running --succeed/fail--> Succeeded/Failed
 *         Initializing/Running --retry/preempt--> Waiting
 *         live --pause--> Paused --resume--> Waiting; live --stop--> Stopped
 *         any --restart--> Waiting
 * Node:   as a task, plus Running --preempt--> Preempted --place--> Initializing,
 *         and finished nodes go back to Waiting on retry (a new attempt).
 *
 * Every table cell not written is -1: the event does not apply.
 */
#include "core/lifecycle.h"

#include <string.h>

static const char *const state_names[JF_ST__COUNT] = {
	[JF_ST_DRAFT] = "Draft",     [JF_ST_INVALID] = "Invalid",
	[JF_ST_WAITING] = "Waiting", [JF_ST_INITIALIZING] = "Initializing",
	[JF_ST_RUNNING] = "Running", [JF_ST_SUCCEEDED] = "Succeeded",
	[JF_ST_FAILED] = "Failed",   [JF_ST_STOPPED] = "Stopped",
	[JF_ST_PAUSED] = "Paused",   [JF_ST_PREEMPTED] = "Preempted",
};

static const char *const event_names[JF_EV__COUNT] = {
	[JF_EV_SUBMIT] = "submit", [JF_EV_REJECT] = "reject",   [JF_EV_PLACE] = "place",
	[JF_EV_START] = "start",   [JF_EV_SUCCEED] = "succeed", [JF_EV_FAIL] = "fail",
	[JF_EV_RETRY] = "retry",   [JF_EV_PAUSE] = "pause",     [JF_EV_RESUME] = "resume",
	[JF_EV_STOP] = "stop",     [JF_EV_RESTART] = "restart", [JF_EV_PREEMPT] = "preempt",
	[JF_EV_IDLE] = "idle",     [JF_EV_CLEAR] = "clear",
};

/* Cells hold next_state + 1 so that the zero of an unwritten cell means "no". */
#define TO(s) ((signed char)((s) + 1))

static const signed char group_table[JF_ST__COUNT][JF_EV__COUNT] = {
	[JF_ST_DRAFT] = {
		[JF_EV_SUBMIT] = TO(JF_ST_WAITING),
		[JF_EV_REJECT] = TO(JF_ST_INVALID),
		[JF_EV_CLEAR] = TO(JF_ST_DRAFT),
	},
	[JF_ST_INVALID] = {
		[JF_EV_SUBMIT] = TO(JF_ST_WAITING),
		[JF_EV_REJECT] = TO(JF_ST_INVALID),
		[JF_EV_CLEAR] = TO(JF_ST_DRAFT),
	},
	[JF_ST_WAITING] = {
		[JF_EV_START] = TO(JF_ST_RUNNING),
		[JF_EV_SUCCEED] = TO(JF_ST_SUCCEEDED),
		[JF_EV_FAIL] = TO(JF_ST_FAILED),
		[JF_EV_PAUSE] = TO(JF_ST_PAUSED),
		[JF_EV_STOP] = TO(JF_ST_STOPPED),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
		[JF_EV_IDLE] = TO(JF_ST_WAITING),
	},
	[JF_ST_RUNNING] = {
		[JF_EV_START] = TO(JF_ST_RUNNING),
		[JF_EV_SUCCEED] = TO(JF_ST_SUCCEEDED),
		[JF_EV_FAIL] = TO(JF_ST_FAILED),
		[JF_EV_PAUSE] = TO(JF_ST_PAUSED),
		[JF_EV_STOP] = TO(JF_ST_STOPPED),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
		[JF_EV_IDLE] = TO(JF_ST_WAITING),
	},
	[JF_ST_PAUSED] = {
		[JF_EV_RESUME] = TO(JF_ST_WAITING),
		[JF_EV_STOP] = TO(JF_ST_STOPPED),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
		/* its deadline passed, its spec or its backend refuses it */
		[JF_EV_FAIL] = TO(JF_ST_FAILED),
	},
	[JF_ST_SUCCEEDED] = { [JF_EV_RESTART] = TO(JF_ST_WAITING) },
	[JF_ST_FAILED] = { [JF_EV_RESTART] = TO(JF_ST_WAITING) },
	[JF_ST_STOPPED] = { [JF_EV_RESTART] = TO(JF_ST_WAITING) },
};

static const signed char task_table[JF_ST__COUNT][JF_EV__COUNT] = {
	[JF_ST_WAITING] = {
		[JF_EV_PLACE] = TO(JF_ST_INITIALIZING),
		[JF_EV_PAUSE] = TO(JF_ST_PAUSED),
		[JF_EV_STOP] = TO(JF_ST_STOPPED),
		[JF_EV_FAIL] = TO(JF_ST_FAILED),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
	},
	[JF_ST_INITIALIZING] = {
		[JF_EV_PLACE] = TO(JF_ST_INITIALIZING), /* restart in place (OnFailure) */
		[JF_EV_START] = TO(JF_ST_RUNNING),
		[JF_EV_SUCCEED] = TO(JF_ST_SUCCEEDED),
		[JF_EV_FAIL] = TO(JF_ST_FAILED),
		[JF_EV_RETRY] = TO(JF_ST_WAITING),
		[JF_EV_PREEMPT] = TO(JF_ST_WAITING),
		[JF_EV_PAUSE] = TO(JF_ST_PAUSED),
		[JF_EV_STOP] = TO(JF_ST_STOPPED),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
	},
	[JF_ST_RUNNING] = {
		[JF_EV_PLACE] = TO(JF_ST_INITIALIZING), /* restart in place (OnFailure) */
		[JF_EV_START] = TO(JF_ST_RUNNING),
		[JF_EV_SUCCEED] = TO(JF_ST_SUCCEEDED),
		[JF_EV_FAIL] = TO(JF_ST_FAILED),
		[JF_EV_RETRY] = TO(JF_ST_WAITING),
		[JF_EV_PREEMPT] = TO(JF_ST_WAITING),
		[JF_EV_PAUSE] = TO(JF_ST_PAUSED),
		[JF_EV_STOP] = TO(JF_ST_STOPPED),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
	},
	[JF_ST_PAUSED] = {
		[JF_EV_RESUME] = TO(JF_ST_WAITING),
		[JF_EV_STOP] = TO(JF_ST_STOPPED),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
		[JF_EV_FAIL] = TO(JF_ST_FAILED), /* its group failed while it was paused */
	},
	[JF_ST_SUCCEEDED] = { [JF_EV_RESTART] = TO(JF_ST_WAITING) },
	[JF_ST_FAILED] = { [JF_EV_RESTART] = TO(JF_ST_WAITING) },
	[JF_ST_STOPPED] = { [JF_EV_RESTART] = TO(JF_ST_WAITING) },
};

static const signed char node_table[JF_ST__COUNT][JF_EV__COUNT] = {
	[JF_ST_WAITING] = {
		[JF_EV_PLACE] = TO(JF_ST_INITIALIZING),
		[JF_EV_PAUSE] = TO(JF_ST_PAUSED),
		[JF_EV_STOP] = TO(JF_ST_STOPPED),
		[JF_EV_RETRY] = TO(JF_ST_WAITING),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
	},
	[JF_ST_INITIALIZING] = {
		[JF_EV_START] = TO(JF_ST_RUNNING),
		[JF_EV_SUCCEED] = TO(JF_ST_SUCCEEDED),
		[JF_EV_FAIL] = TO(JF_ST_FAILED),
		[JF_EV_RETRY] = TO(JF_ST_WAITING),
		[JF_EV_PREEMPT] = TO(JF_ST_PREEMPTED),
		[JF_EV_STOP] = TO(JF_ST_STOPPED),
		[JF_EV_PAUSE] = TO(JF_ST_PAUSED),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
	},
	[JF_ST_RUNNING] = {
		[JF_EV_SUCCEED] = TO(JF_ST_SUCCEEDED),
		[JF_EV_FAIL] = TO(JF_ST_FAILED),
		[JF_EV_RETRY] = TO(JF_ST_WAITING),
		[JF_EV_PLACE] = TO(JF_ST_INITIALIZING),   /* restart in place */
		[JF_EV_PREEMPT] = TO(JF_ST_PREEMPTED),
		[JF_EV_STOP] = TO(JF_ST_STOPPED),
		[JF_EV_PAUSE] = TO(JF_ST_PAUSED),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
	},
	[JF_ST_PREEMPTED] = {
		[JF_EV_PLACE] = TO(JF_ST_INITIALIZING),
		[JF_EV_RETRY] = TO(JF_ST_WAITING),
		[JF_EV_STOP] = TO(JF_ST_STOPPED),
		[JF_EV_PAUSE] = TO(JF_ST_PAUSED),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
	},
	[JF_ST_PAUSED] = {
		[JF_EV_RESUME] = TO(JF_ST_WAITING),
		[JF_EV_PLACE] = TO(JF_ST_INITIALIZING),
		[JF_EV_STOP] = TO(JF_ST_STOPPED),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
	},
	[JF_ST_SUCCEEDED] = {
		[JF_EV_RETRY] = TO(JF_ST_WAITING),
		[JF_EV_PLACE] = TO(JF_ST_INITIALIZING),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
	},
	[JF_ST_FAILED] = {
		[JF_EV_RETRY] = TO(JF_ST_WAITING),
		[JF_EV_PLACE] = TO(JF_ST_INITIALIZING),
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
	},
	[JF_ST_STOPPED] = {
		[JF_EV_RETRY] = TO(JF_ST_WAITING),
		[JF_EV_PLACE] = TO(JF_ST_INITIALIZING), /* its task restarted */
		[JF_EV_RESTART] = TO(JF_ST_WAITING),
	},
};

static int lookup(const signed char table[JF_ST__COUNT][JF_EV__COUNT], enum jf_state s,
		  enum jf_event e)
{
	if ((unsigned)s >= JF_ST__COUNT || (unsigned)e >= JF_EV__COUNT)
		return -1;
	return table[s][e] - 1;
}

int jf_group_next(enum jf_state s, enum jf_event e)
{
	return lookup(group_table, s, e);
}
int jf_task_next(enum jf_state s, enum jf_event e)
{
	return lookup(task_table, s, e);
}
int jf_node_next(enum jf_state s, enum jf_event e)
{
	return lookup(node_table, s, e);
}

const char *jf_state_name(enum jf_state s)
{
	if ((unsigned)s < JF_ST__COUNT)
		return state_names[s];
	return "Unknown";
}

int jf_state_parse(const char *name)
{
	for (int i = 0; i < JF_ST__COUNT; i++)
		if (strcmp(state_names[i], name) == 0)
			return i;
	return -1;
}

const char *jf_event_name(enum jf_event e)
{
	if ((unsigned)e < JF_EV__COUNT)
		return event_names[e];
	return "unknown";
}

bool jf_state_final(enum jf_state s)
{
	return s == JF_ST_SUCCEEDED || s == JF_ST_FAILED || s == JF_ST_STOPPED;
}

enum jf_state jf_attempt_state(int64_t start_ms, int64_t end_ms, int end_state, int exit_code)
{
	if (end_ms == 0)
		return start_ms > 0 ? JF_ST_RUNNING : JF_ST_INITIALIZING;
	if (end_state >= 0 && end_state < JF_ST__COUNT)
		return (enum jf_state)end_state;
	return exit_code == 0 ? JF_ST_SUCCEEDED : JF_ST_FAILED;
}

static bool rule_matches(const struct jf_pfp_rule *r, const struct jf_exit_facts *f)
{
	if (!r->on_exit_codes)
		return r->on_disruption && f->disruption;
	if (f->disruption)
		return false;
	if (r->container && f->container && strcmp(r->container, f->container) != 0)
		return false;
	bool in = false;
	for (size_t i = 0; i < r->nvalues; i++)
		if (r->values[i] == f->exit_code)
			in = true;
	/* Kubernetes: NotIn never matches exit code 0 of a container */
	return r->op_in ? in : (!in && f->exit_code != 0);
}

enum jf_verdict jf_judge_exit(const struct jf_spec *spec, const struct jf_exit_facts *f,
			      const char **reason)
{
	const char *unused;
	if (!reason)
		reason = &unused;

	for (size_t i = 0; i < spec->npfp; i++) {
		const struct jf_pfp_rule *r = &spec->pfp[i];
		if (!rule_matches(r, f))
			continue;
		switch (r->action) {
		case JF_PFP_FAILJOB:
			*reason = "PodFailurePolicy";
			return JF_V_FAIL_GROUP;
		case JF_PFP_FAILINDEX:
			*reason = "FailIndex";
			return JF_V_FAIL_TASK;
		case JF_PFP_IGNORE:
			*reason = "Ignored";
			return JF_V_RETRY_FREE;
		case JF_PFP_COUNT:
			goto count;
		}
	}
	if (f->disruption) {
		/* a preemption never uses up a retry (reference 3) */
		*reason = "Preempted";
		return JF_V_RETRY_FREE;
	}
count:
	if (spec->max_failures >= 0 && f->group_failures + 1 > spec->max_failures) {
		*reason = "BackoffLimitExceeded";
		return JF_V_FAIL_GROUP;
	}
	if (spec->retries >= 0 && f->task_failures + 1 > spec->retries) {
		*reason = "RetriesExhausted";
		return JF_V_FAIL_TASK;
	}
	*reason = "BackOff";
	return spec->restart_policy == JF_RESTART_ONFAILURE ? JF_V_RETRY_IN_PLACE : JF_V_RETRY_NEW;
}

static bool in_ranges(const struct jf_success_rule *r, int64_t i)
{
	if (!r->indexes)
		return true;
	for (size_t k = 0; k < r->nindexes; k++)
		if (i >= r->indexes[k].lo && i <= r->indexes[k].hi)
			return true;
	return false;
}

static bool success_rule_met(const struct jf_success_rule *r, int64_t completions,
			     bool (*succeeded_idx)(void *ctx, int64_t i), void *ctx)
{
	int64_t want = r->count, have = 0, members = 0;
	for (int64_t i = 0; i < completions; i++) {
		if (!in_ranges(r, i))
			continue;
		members++;
		if (succeeded_idx(ctx, i))
			have++;
	}
	if (want == 0)
		want = members;
	return members > 0 && have >= want;
}

enum jf_group_verdict jf_judge_group(const struct jf_spec *spec, const struct jf_group_counts *c,
				     bool (*succeeded_idx)(void *ctx, int64_t i), void *ctx,
				     const char **reason)
{
	const char *unused;
	if (!reason)
		reason = &unused;

	if (c->succeeded >= c->completions) {
		*reason = "Completed";
		return JF_GV_SUCCEEDED;
	}
	if (spec->max_failed_indexes >= 0 && c->failed > spec->max_failed_indexes) {
		*reason = "MaxFailedIndexesExceeded";
		return JF_GV_FAILED;
	}
	if (succeeded_idx && c->succeeded > 0)
		for (size_t i = 0; i < spec->nsuccess; i++)
			if (success_rule_met(&spec->success[i], c->completions, succeeded_idx,
					     ctx)) {
				*reason = "SuccessPolicy";
				return JF_GV_SUCCEEDED;
			}
	if (c->succeeded + c->failed + c->stopped >= c->completions) {
		if (c->failed) {
			*reason = "FailedIndexes";
			return JF_GV_FAILED;
		}
		/* a user stopped some tasks: the group did not fail, it was stopped */
		*reason = "Stopped";
		return JF_GV_STOPPED;
	}
	return JF_GV_CONTINUE;
}
