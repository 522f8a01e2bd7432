/*
 * lifecycle.h - states of groups, tasks and nodes, and the legal moves.
 *
 * One enum of states serves all three levels (reference 3 lists what `status`
 * shows).  Moves are driven by named events through tables in lifecycle.c;
 * jf_task_next()/jf_node_next()/jf_group_next() return the next state or -1
 * when the event does not apply (the caller turns that into EBUSY).
 *
 * The decisions around a finished attempt (retry in place, new attempt,
 * fail the index, fail the whole group, succeed the group early) are pure
 * functions of the spec and counters: jf_judge_exit() and jf_judge_group().
 */
#ifndef JF_LIFECYCLE_H
#define JF_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/spec.h"

enum jf_state {
	JF_ST_DRAFT = 0, /* directory made, no spec accepted yet */
	JF_ST_INVALID,   /* last spec written was refused */
	JF_ST_WAITING,
	JF_ST_INITIALIZING, /* placed; processes being started */
	JF_ST_RUNNING,
	JF_ST_SUCCEEDED,
	JF_ST_FAILED,
	JF_ST_STOPPED,
	JF_ST_PAUSED,
	JF_ST_PREEMPTED, /* node only: then it waits again */
	JF_ST__COUNT
};

enum jf_event {
	JF_EV_SUBMIT = 0, /* group: spec accepted */
	JF_EV_REJECT,     /* group: spec refused */
	JF_EV_PLACE,      /* task/node: resources given */
	JF_EV_START,      /* task/node: processes started */
	JF_EV_SUCCEED,
	JF_EV_FAIL,  /* final failure */
	JF_EV_RETRY, /* failed attempt, will run again */
	JF_EV_PAUSE,
	JF_EV_RESUME,
	JF_EV_STOP,
	JF_EV_RESTART,
	JF_EV_PREEMPT,
	JF_EV_IDLE,  /* group: nothing running any more, tasks wait */
	JF_EV_CLEAR, /* group: its draft emptied, a draft again */
	JF_EV__COUNT
};

const char *jf_state_name(enum jf_state s);
/* Parse a state name as jf_state_name prints it; -1 if unknown. */
int jf_state_parse(const char *name);
const char *jf_event_name(enum jf_event e);
bool jf_state_final(enum jf_state s); /* Succeeded, Failed, Stopped */

/*
 * The state one attempt of a node shows (reference 9.2): while it runs
 * (end_ms 0) Initializing until its start is recorded, then Running; once
 * ended the state recorded for its end (end_state, store.h), or for an
 * attempt with none recorded (-1: an older database) what its exit code
 * says, Succeeded or Failed.
 */
enum jf_state jf_attempt_state(int64_t start_ms, int64_t end_ms, int end_state, int exit_code);

int jf_group_next(enum jf_state s, enum jf_event e);
int jf_task_next(enum jf_state s, enum jf_event e);
int jf_node_next(enum jf_state s, enum jf_event e);

/* What to do after a node's attempt ended with a failure. */
enum jf_verdict {
	JF_V_RETRY_IN_PLACE, /* OnFailure: same node, same placement, counts a failure */
	JF_V_RETRY_NEW,      /* Never: task waits again for a new attempt */
	JF_V_RETRY_FREE,     /* podFailurePolicy Ignore / preemption: again, no failure counted */
	JF_V_FAIL_TASK,      /* retries used up or FailIndex: the task (index) fails */
	JF_V_FAIL_GROUP,     /* FailJob, or the group's failure budget is gone */
};

struct jf_exit_facts {
	int exit_code;
	const char *container;  /* container whose code this is, NULL = unknown */
	bool disruption;        /* preempted / evicted: a DisruptionTarget */
	int64_t task_failures;  /* failed attempts of this task so far, this one excluded */
	int64_t group_failures; /* failed attempts of the group so far, this one excluded */
};

/* Decide the fate of a failed attempt; *reason gets a static string
 * naming the rule ("BackoffLimitExceeded", "PodFailurePolicy", ...). */
enum jf_verdict jf_judge_exit(const struct jf_spec *spec, const struct jf_exit_facts *f,
			      const char **reason);

/* Counters of a group (or batch) for jf_judge_group. */
struct jf_group_counts {
	int64_t completions;
	int64_t succeeded;
	int64_t failed;  /* tasks (indexes) that failed for good */
	int64_t running; /* tasks running or being placed */
	int64_t waiting;
	int64_t stopped;
};

enum jf_group_verdict {
	JF_GV_CONTINUE,
	JF_GV_SUCCEEDED, /* every task succeeded, or the success policy is met */
	JF_GV_FAILED,    /* failed indexes over the limit, or all done with failures */
	JF_GV_STOPPED,   /* all done, none failed, some stopped by a user */
};

/* succeeded_idx: test whether index i has succeeded (for successPolicy). */
enum jf_group_verdict jf_judge_group(const struct jf_spec *spec, const struct jf_group_counts *c,
				     bool (*succeeded_idx)(void *ctx, int64_t i), void *ctx,
				     const char **reason);

#endif
