/*
 * test_lifecycle.c - core/lifecycle.h: the state tables of groups, tasks
 * and nodes, state names, and the judgement of failed attempts and of
 * whole groups.
 *
 * The expected tables below are written out from the diagram at the top
 * of core/lifecycle.c and reference 3-4; every cell not listed must be -1, so
 * a move added or lost in the code shows up here.  Specs are built by hand
 * (zeroed, then the fields under test set), as the engine would get them
 * from the parser.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/lifecycle.h"

struct move {
	enum jf_state from;
	enum jf_event ev;
	enum jf_state to;
};

#define M(f, e, t)                                                                                 \
	{                                                                                          \
		JF_ST_##f, JF_EV_##e, JF_ST_##t                                                    \
	}

static const struct move group_moves[] = {
	M(DRAFT, SUBMIT, WAITING),      M(DRAFT, REJECT, INVALID),
	M(INVALID, SUBMIT, WAITING),    M(INVALID, REJECT, INVALID),
	M(DRAFT, CLEAR, DRAFT),         M(INVALID, CLEAR, DRAFT),
	M(WAITING, START, RUNNING),     M(WAITING, SUCCEED, SUCCEEDED),
	M(WAITING, FAIL, FAILED),       M(WAITING, PAUSE, PAUSED),
	M(WAITING, STOP, STOPPED),      M(WAITING, RESTART, WAITING),
	M(WAITING, IDLE, WAITING),      M(RUNNING, START, RUNNING),
	M(RUNNING, SUCCEED, SUCCEEDED), M(RUNNING, FAIL, FAILED),
	M(RUNNING, PAUSE, PAUSED),      M(RUNNING, STOP, STOPPED),
	M(RUNNING, RESTART, WAITING),   M(RUNNING, IDLE, WAITING),
	M(PAUSED, RESUME, WAITING),     M(PAUSED, STOP, STOPPED),
	M(PAUSED, RESTART, WAITING),    M(PAUSED, FAIL, FAILED),
	M(SUCCEEDED, RESTART, WAITING), M(FAILED, RESTART, WAITING),
	M(STOPPED, RESTART, WAITING),
};

static const struct move task_moves[] = {
	M(WAITING, PLACE, INITIALIZING),
	M(INITIALIZING, PLACE, INITIALIZING),
	M(RUNNING, PLACE, INITIALIZING),
	M(WAITING, PAUSE, PAUSED),
	M(WAITING, STOP, STOPPED),
	M(WAITING, FAIL, FAILED),
	M(WAITING, RESTART, WAITING),
	M(INITIALIZING, START, RUNNING),
	M(INITIALIZING, SUCCEED, SUCCEEDED),
	M(INITIALIZING, FAIL, FAILED),
	M(INITIALIZING, RETRY, WAITING),
	M(INITIALIZING, PREEMPT, WAITING),
	M(INITIALIZING, PAUSE, PAUSED),
	M(INITIALIZING, STOP, STOPPED),
	M(INITIALIZING, RESTART, WAITING),
	M(RUNNING, START, RUNNING),
	M(RUNNING, SUCCEED, SUCCEEDED),
	M(RUNNING, FAIL, FAILED),
	M(RUNNING, RETRY, WAITING),
	M(RUNNING, PREEMPT, WAITING),
	M(RUNNING, PAUSE, PAUSED),
	M(RUNNING, STOP, STOPPED),
	M(RUNNING, RESTART, WAITING),
	M(PAUSED, RESUME, WAITING),
	M(PAUSED, STOP, STOPPED),
	M(PAUSED, RESTART, WAITING),
	M(PAUSED, FAIL, FAILED),
	M(SUCCEEDED, RESTART, WAITING),
	M(FAILED, RESTART, WAITING),
	M(STOPPED, RESTART, WAITING),
};

static const struct move node_moves[] = {
	M(WAITING, PLACE, INITIALIZING),
	M(WAITING, PAUSE, PAUSED),
	M(WAITING, STOP, STOPPED),
	M(WAITING, RETRY, WAITING),
	M(WAITING, RESTART, WAITING),
	M(INITIALIZING, START, RUNNING),
	M(INITIALIZING, SUCCEED, SUCCEEDED),
	M(INITIALIZING, FAIL, FAILED),
	M(INITIALIZING, RETRY, WAITING),
	M(INITIALIZING, PREEMPT, PREEMPTED),
	M(INITIALIZING, STOP, STOPPED),
	M(INITIALIZING, PAUSE, PAUSED),
	M(INITIALIZING, RESTART, WAITING),
	M(RUNNING, SUCCEED, SUCCEEDED),
	M(RUNNING, FAIL, FAILED),
	M(RUNNING, RETRY, WAITING),
	M(RUNNING, PLACE, INITIALIZING),
	M(RUNNING, PREEMPT, PREEMPTED),
	M(RUNNING, STOP, STOPPED),
	M(RUNNING, PAUSE, PAUSED),
	M(RUNNING, RESTART, WAITING),
	M(PREEMPTED, PLACE, INITIALIZING),
	M(PREEMPTED, RETRY, WAITING),
	M(PREEMPTED, STOP, STOPPED),
	M(PREEMPTED, PAUSE, PAUSED),
	M(PREEMPTED, RESTART, WAITING),
	M(PAUSED, RESUME, WAITING),
	M(PAUSED, PLACE, INITIALIZING),
	M(PAUSED, STOP, STOPPED),
	M(PAUSED, RESTART, WAITING),
	M(SUCCEEDED, RETRY, WAITING),
	M(SUCCEEDED, PLACE, INITIALIZING),
	M(SUCCEEDED, RESTART, WAITING),
	M(FAILED, RETRY, WAITING),
	M(FAILED, PLACE, INITIALIZING),
	M(FAILED, RESTART, WAITING),
	M(STOPPED, RETRY, WAITING),
	M(STOPPED, PLACE, INITIALIZING),
	M(STOPPED, RESTART, WAITING),
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void check_table(const char *what, int (*next)(enum jf_state, enum jf_event),
			const struct move *moves, size_t n)
{
	int want[JF_ST__COUNT][JF_EV__COUNT];
	for (int s = 0; s < JF_ST__COUNT; s++)
		for (int e = 0; e < JF_EV__COUNT; e++)
			want[s][e] = -1;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(want[moves[i].from][moves[i].ev], -1); /* listed once */
		want[moves[i].from][moves[i].ev] = (int)moves[i].to;
	}
	for (int s = 0; s < JF_ST__COUNT; s++)
		for (int e = 0; e < JF_EV__COUNT; e++) {
			int got = next((enum jf_state)s, (enum jf_event)e);
			if (got != want[s][e])
				fail_msg("%s: %s --%s--> %d, want %d", what,
					 jf_state_name((enum jf_state)s),
					 jf_event_name((enum jf_event)e), got, want[s][e]);
		}
	/* out of range in, -1 out */
	assert_int_equal(next(JF_ST__COUNT, JF_EV_SUBMIT), -1);
	assert_int_equal(next(JF_ST_WAITING, JF_EV__COUNT), -1);
	assert_int_equal(next((enum jf_state) - 1, JF_EV_STOP), -1);
}

static void test_group_table(void **state)
{
	(void)state;
	check_table("group", jf_group_next, group_moves, NELEM(group_moves));
	/* named samples of what must not happen */
	assert_int_equal(jf_group_next(JF_ST_SUCCEEDED, JF_EV_STOP), -1);
	assert_int_equal(jf_group_next(JF_ST_DRAFT, JF_EV_START), -1);
	assert_int_equal(jf_group_next(JF_ST_RUNNING, JF_EV_RESUME), -1);
	assert_int_equal(jf_group_next(JF_ST_PAUSED, JF_EV_PAUSE), -1);
	assert_int_equal(jf_group_next(JF_ST_STOPPED, JF_EV_RESUME), -1);
	assert_int_equal(jf_group_next(JF_ST_WAITING, JF_EV_SUBMIT), -1);
	assert_int_equal(jf_group_next(JF_ST_DRAFT, JF_EV_RESTART), -1);
	assert_int_equal(jf_group_next(JF_ST_INVALID, JF_EV_STOP), -1);
}

static void test_task_table(void **state)
{
	(void)state;
	check_table("task", jf_task_next, task_moves, NELEM(task_moves));
	assert_int_equal(jf_task_next(JF_ST_SUCCEEDED, JF_EV_STOP), -1);
	assert_int_equal(jf_task_next(JF_ST_DRAFT, JF_EV_START), -1);
	assert_int_equal(jf_task_next(JF_ST_WAITING, JF_EV_START), -1);
	assert_int_equal(jf_task_next(JF_ST_WAITING, JF_EV_RESUME), -1);
	assert_int_equal(jf_task_next(JF_ST_FAILED, JF_EV_RETRY), -1);
	assert_int_equal(jf_task_next(JF_ST_PAUSED, JF_EV_PLACE), -1);
	assert_int_equal(jf_task_next(JF_ST_PREEMPTED, JF_EV_PLACE), -1);
}

static void test_node_table(void **state)
{
	(void)state;
	check_table("node", jf_node_next, node_moves, NELEM(node_moves));
	assert_int_equal(jf_node_next(JF_ST_SUCCEEDED, JF_EV_STOP), -1);
	assert_int_equal(jf_node_next(JF_ST_DRAFT, JF_EV_START), -1);
	assert_int_equal(jf_node_next(JF_ST_WAITING, JF_EV_START), -1);
	assert_int_equal(jf_node_next(JF_ST_PREEMPTED, JF_EV_START), -1);
	/* a stopped node is placed again only when its task restarts (a new attempt) */
	assert_int_equal(jf_node_next(JF_ST_STOPPED, JF_EV_START), -1);
}

/* An attempt's own state (attempts/<a>/status): running, then its end
 * as recorded, or for an end recorded before there was a record of it,
 * its exit code's word. */
static void test_attempt_state(void **state)
{
	(void)state;
	assert_int_equal(jf_attempt_state(0, 0, -1, -1), JF_ST_INITIALIZING);
	assert_int_equal(jf_attempt_state(1000, 0, -1, -1), JF_ST_RUNNING);
	/* a state recorded while it runs (none is) does not count before its end */
	assert_int_equal(jf_attempt_state(1000, 0, JF_ST_FAILED, -1), JF_ST_RUNNING);
	assert_int_equal(jf_attempt_state(1000, 2000, JF_ST_FAILED, 1), JF_ST_FAILED);
	assert_int_equal(jf_attempt_state(1000, 2000, JF_ST_PREEMPTED, 143), JF_ST_PREEMPTED);
	assert_int_equal(jf_attempt_state(1000, 2000, JF_ST_STOPPED, 143), JF_ST_STOPPED);
	assert_int_equal(jf_attempt_state(1000, 2000, JF_ST_SUCCEEDED, 0), JF_ST_SUCCEEDED);
	/* nothing recorded (an older database): by its exit code */
	assert_int_equal(jf_attempt_state(1000, 2000, -1, 0), JF_ST_SUCCEEDED);
	assert_int_equal(jf_attempt_state(1000, 2000, -1, 3), JF_ST_FAILED);
	assert_int_equal(jf_attempt_state(0, 2000, -1, -1), JF_ST_FAILED); /* never started */
	/* a value no state has: as if none were recorded */
	assert_int_equal(jf_attempt_state(1000, 2000, JF_ST__COUNT, 0), JF_ST_SUCCEEDED);
}

static void test_names(void **state)
{
	(void)state;
	static const char *const want[JF_ST__COUNT] = {
		"Draft",     "Invalid", "Waiting", "Initializing", "Running",
		"Succeeded", "Failed",  "Stopped", "Paused",       "Preempted",
	};
	for (int s = 0; s < JF_ST__COUNT; s++) {
		const char *n = jf_state_name((enum jf_state)s);
		assert_string_equal(n, want[s]);
		assert_int_equal(jf_state_parse(n), s);
	}
	assert_int_equal(jf_state_parse("running"), -1); /* exact spelling only */
	assert_int_equal(jf_state_parse(""), -1);
	assert_int_equal(jf_state_parse("Unknown"), -1);
	assert_string_equal(jf_state_name(JF_ST__COUNT), "Unknown");
	for (int e = 0; e < JF_EV__COUNT; e++)
		assert_string_not_equal(jf_event_name((enum jf_event)e), "unknown");
	assert_string_equal(jf_event_name(JF_EV_STOP), "stop");
	assert_string_equal(jf_event_name(JF_EV__COUNT), "unknown");

	for (int s = 0; s < JF_ST__COUNT; s++)
		assert_int_equal(jf_state_final((enum jf_state)s),
				 s == JF_ST_SUCCEEDED || s == JF_ST_FAILED || s == JF_ST_STOPPED);
}

/* ---- jf_judge_exit ---- */

static struct jf_spec base_spec(int64_t retries)
{
	struct jf_spec s;
	memset(&s, 0, sizeof(s));
	s.completions = 1;
	s.parallelism = 1;
	s.nodes = 1;
	s.retries = retries;
	s.max_failures = -1;
	s.max_failed_indexes = -1;
	s.restart_policy = JF_RESTART_NEVER;
	return s;
}

static enum jf_verdict judge(const struct jf_spec *s, int code, const char *container,
			     bool disruption, int64_t tf, int64_t gf, const char **reason)
{
	struct jf_exit_facts f = {
		.exit_code = code,
		.container = container,
		.disruption = disruption,
		.task_failures = tf,
		.group_failures = gf,
	};
	return jf_judge_exit(s, &f, reason);
}

static void test_retries(void **state)
{
	(void)state;
	struct jf_spec s = base_spec(2);
	const char *why = NULL;
	assert_int_equal(judge(&s, 1, "main", false, 0, 0, &why), JF_V_RETRY_NEW);
	assert_string_equal(why, "BackOff");
	assert_int_equal(judge(&s, 1, "main", false, 1, 1, &why), JF_V_RETRY_NEW);
	assert_int_equal(judge(&s, 1, "main", false, 2, 2, &why), JF_V_FAIL_TASK);
	assert_string_equal(why, "RetriesExhausted");
	/* retries 0: the first failure ends the task */
	s = base_spec(0);
	assert_int_equal(judge(&s, 1, "main", false, 0, 0, &why), JF_V_FAIL_TASK);
	/* reason may be NULL */
	assert_int_equal(judge(&s, 1, "main", false, 0, 0, NULL), JF_V_FAIL_TASK);
}

static void test_on_failure(void **state)
{
	(void)state;
	struct jf_spec s = base_spec(3);
	s.restart_policy = JF_RESTART_ONFAILURE;
	const char *why = NULL;
	assert_int_equal(judge(&s, 7, NULL, false, 0, 0, &why), JF_V_RETRY_IN_PLACE);
	assert_string_equal(why, "BackOff");
	assert_int_equal(judge(&s, 7, NULL, false, 2, 2, &why), JF_V_RETRY_IN_PLACE);
	assert_int_equal(judge(&s, 7, NULL, false, 3, 3, &why), JF_V_FAIL_TASK);
}

static void test_max_failures(void **state)
{
	(void)state;
	struct jf_spec s = base_spec(-1);
	s.max_failures = 3; /* three failed attempts allowed, the fourth ends the group */
	const char *why = NULL;
	assert_int_equal(judge(&s, 1, NULL, false, 0, 0, &why), JF_V_RETRY_NEW);
	assert_int_equal(judge(&s, 1, NULL, false, 0, 2, &why), JF_V_RETRY_NEW);
	assert_int_equal(judge(&s, 1, NULL, false, 0, 3, &why), JF_V_FAIL_GROUP);
	assert_string_equal(why, "BackoffLimitExceeded");
	/* the group budget goes before the task's retries */
	s.retries = 0;
	assert_int_equal(judge(&s, 1, NULL, false, 0, 3, &why), JF_V_FAIL_GROUP);
	s.max_failures = 0;
	assert_int_equal(judge(&s, 1, NULL, false, 0, 0, &why), JF_V_FAIL_GROUP);
}

static void test_unlimited(void **state)
{
	(void)state;
	struct jf_spec s = base_spec(-1);
	const char *why = NULL;
	assert_int_equal(judge(&s, 1, NULL, false, 0, 0, &why), JF_V_RETRY_NEW);
	assert_int_equal(judge(&s, 1, NULL, false, 1000000, 1000000, &why), JF_V_RETRY_NEW);
	assert_int_equal(judge(&s, 1, NULL, false, INT64_MAX - 1, 0, &why), JF_V_RETRY_NEW);
}

static void test_pfp_failjob(void **state)
{
	(void)state;
	int codes[] = { 42 };
	struct jf_pfp_rule r = {
		.action = JF_PFP_FAILJOB,
		.on_exit_codes = true,
		.container = "main",
		.op_in = true,
		.values = codes,
		.nvalues = 1,
	};
	struct jf_spec s = base_spec(5);
	s.pfp = &r;
	s.npfp = 1;
	const char *why = NULL;
	assert_int_equal(judge(&s, 42, "main", false, 0, 0, &why), JF_V_FAIL_GROUP);
	assert_string_equal(why, "PodFailurePolicy");
	/* another container with the same code: the rule does not apply */
	assert_int_equal(judge(&s, 42, "sidecar", false, 0, 0, &why), JF_V_RETRY_NEW);
	assert_string_equal(why, "BackOff");
	/* another code */
	assert_int_equal(judge(&s, 41, "main", false, 0, 0, &why), JF_V_RETRY_NEW);
	/* no containerName: any container */
	r.container = NULL;
	assert_int_equal(judge(&s, 42, "sidecar", false, 0, 0, &why), JF_V_FAIL_GROUP);
	/* an exit-code rule never matches a disruption */
	assert_int_equal(judge(&s, 42, "main", true, 0, 0, &why), JF_V_RETRY_FREE);
	assert_string_equal(why, "Preempted");
}

static void test_pfp_notin(void **state)
{
	(void)state;
	int codes[] = { 1, 2 };
	struct jf_pfp_rule r = {
		.action = JF_PFP_FAILJOB,
		.on_exit_codes = true,
		.op_in = false,
		.values = codes,
		.nvalues = 2,
	};
	struct jf_spec s = base_spec(5);
	s.pfp = &r;
	s.npfp = 1;
	const char *why = NULL;
	assert_int_equal(judge(&s, 3, "main", false, 0, 0, &why), JF_V_FAIL_GROUP);
	assert_int_equal(judge(&s, 137, "main", false, 0, 0, &why), JF_V_FAIL_GROUP);
	assert_int_equal(judge(&s, 1, "main", false, 0, 0, &why), JF_V_RETRY_NEW);
	assert_int_equal(judge(&s, 2, "main", false, 0, 0, &why), JF_V_RETRY_NEW);
	/* exit 0 is never "not in" anything (Kubernetes) */
	assert_int_equal(judge(&s, 0, "main", false, 0, 0, &why), JF_V_RETRY_NEW);
	/* NotIn with 0 listed does not change that */
	int with0[] = { 0 };
	r.values = with0;
	r.nvalues = 1;
	assert_int_equal(judge(&s, 0, "main", false, 0, 0, &why), JF_V_RETRY_NEW);
	assert_int_equal(judge(&s, 5, "main", false, 0, 0, &why), JF_V_FAIL_GROUP);
}

static void test_pfp_actions(void **state)
{
	(void)state;
	int c3[] = { 3 }, c4[] = { 4 }, c5[] = { 5 };
	struct jf_pfp_rule rules[] = {
		{ .action = JF_PFP_FAILINDEX,
		  .on_exit_codes = true,
		  .op_in = true,
		  .values = c3,
		  .nvalues = 1 },
		{ .action = JF_PFP_IGNORE,
		  .on_exit_codes = true,
		  .op_in = true,
		  .values = c4,
		  .nvalues = 1 },
		{ .action = JF_PFP_COUNT,
		  .on_exit_codes = true,
		  .op_in = true,
		  .values = c5,
		  .nvalues = 1 },
		/* never reached for 5: the first matching rule decides */
		{ .action = JF_PFP_FAILJOB,
		  .on_exit_codes = true,
		  .op_in = true,
		  .values = c5,
		  .nvalues = 1 },
	};
	struct jf_spec s = base_spec(1);
	s.pfp = rules;
	s.npfp = 4;
	const char *why = NULL;
	assert_int_equal(judge(&s, 3, "main", false, 0, 0, &why), JF_V_FAIL_TASK);
	assert_string_equal(why, "FailIndex");
	/* Ignore: again, free, even with every retry and the group budget used */
	s.max_failures = 0;
	assert_int_equal(judge(&s, 4, "main", false, 1, 5, &why), JF_V_RETRY_FREE);
	assert_string_equal(why, "Ignored");
	s.max_failures = -1;
	/* Count: the ordinary rules */
	assert_int_equal(judge(&s, 5, "main", false, 0, 0, &why), JF_V_RETRY_NEW);
	assert_string_equal(why, "BackOff");
	assert_int_equal(judge(&s, 5, "main", false, 1, 1, &why), JF_V_FAIL_TASK);
	assert_string_equal(why, "RetriesExhausted");
	/* no rule matches */
	assert_int_equal(judge(&s, 9, "main", false, 0, 0, &why), JF_V_RETRY_NEW);
}

static void test_pfp_disruption(void **state)
{
	(void)state;
	struct jf_pfp_rule r = {
		.action = JF_PFP_IGNORE,
		.on_exit_codes = false,
		.on_disruption = true,
	};
	struct jf_spec s = base_spec(0);
	s.pfp = &r;
	s.npfp = 1;
	const char *why = NULL;
	assert_int_equal(judge(&s, 137, NULL, true, 0, 0, &why), JF_V_RETRY_FREE);
	assert_string_equal(why, "Ignored");
	/* the condition rule does not match an ordinary failure */
	assert_int_equal(judge(&s, 137, NULL, false, 0, 0, &why), JF_V_FAIL_TASK);
	/* a DisruptionTarget rule may also fail the job */
	r.action = JF_PFP_FAILJOB;
	assert_int_equal(judge(&s, 137, NULL, true, 0, 0, &why), JF_V_FAIL_GROUP);
	assert_string_equal(why, "PodFailurePolicy");
	/* Count on a disruption counts it */
	r.action = JF_PFP_COUNT;
	assert_int_equal(judge(&s, 137, NULL, true, 0, 0, &why), JF_V_FAIL_TASK);
}

static void test_disruption_no_rule(void **state)
{
	(void)state;
	struct jf_spec s = base_spec(0);
	s.max_failures = 0;
	const char *why = NULL;
	/* preemption never uses up a retry, nor the group's budget */
	assert_int_equal(judge(&s, 143, NULL, true, 0, 0, &why), JF_V_RETRY_FREE);
	assert_string_equal(why, "Preempted");
	assert_int_equal(judge(&s, 143, NULL, true, 100, 100, &why), JF_V_RETRY_FREE);
}

/* ---- jf_judge_group ---- */

struct idx_set {
	const int64_t *ok;
	size_t n;
	int calls;
};

static bool in_set(void *ctx, int64_t i)
{
	struct idx_set *s = ctx;
	s->calls++;
	for (size_t k = 0; k < s->n; k++)
		if (s->ok[k] == i)
			return true;
	return false;
}

static enum jf_group_verdict gjudge(const struct jf_spec *s, int64_t completions, int64_t succeeded,
				    int64_t failed, int64_t running, int64_t waiting,
				    int64_t stopped, struct idx_set *set, const char **reason)
{
	struct jf_group_counts c = {
		.completions = completions,
		.succeeded = succeeded,
		.failed = failed,
		.running = running,
		.waiting = waiting,
		.stopped = stopped,
	};
	return jf_judge_group(s, &c, set ? in_set : NULL, set, reason);
}

static void test_group_basic(void **state)
{
	(void)state;
	struct jf_spec s = base_spec(3);
	const char *why = NULL;
	assert_int_equal(gjudge(&s, 3, 3, 0, 0, 0, 0, NULL, &why), JF_GV_SUCCEEDED);
	assert_string_equal(why, "Completed");
	assert_int_equal(gjudge(&s, 3, 1, 0, 2, 0, 0, NULL, &why), JF_GV_CONTINUE);
	assert_int_equal(gjudge(&s, 3, 0, 0, 0, 3, 0, NULL, &why), JF_GV_CONTINUE);
	/* one failed index, one still running: not over yet */
	assert_int_equal(gjudge(&s, 3, 1, 1, 1, 0, 0, NULL, &why), JF_GV_CONTINUE);
	/* all done, some failed */
	assert_int_equal(gjudge(&s, 3, 2, 1, 0, 0, 0, NULL, &why), JF_GV_FAILED);
	assert_string_equal(why, "FailedIndexes");
	/* all done, some stopped */
	assert_int_equal(gjudge(&s, 3, 2, 0, 0, 0, 1, NULL, &why), JF_GV_STOPPED);
	assert_string_equal(why, "Stopped");
	assert_int_equal(gjudge(&s, 3, 2, 0, 0, 0, 1, NULL, NULL), JF_GV_STOPPED);
}

static void test_group_max_failed_indexes(void **state)
{
	(void)state;
	struct jf_spec s = base_spec(1);
	s.max_failed_indexes = 1;
	const char *why = NULL;
	assert_int_equal(gjudge(&s, 10, 0, 1, 5, 4, 0, NULL, &why), JF_GV_CONTINUE);
	assert_int_equal(gjudge(&s, 10, 0, 2, 5, 3, 0, NULL, &why), JF_GV_FAILED);
	assert_string_equal(why, "MaxFailedIndexesExceeded");
	s.max_failed_indexes = 0;
	assert_int_equal(gjudge(&s, 10, 3, 1, 5, 1, 0, NULL, &why), JF_GV_FAILED);
	/* none: failures only matter once everything is done */
	s.max_failed_indexes = -1;
	assert_int_equal(gjudge(&s, 10, 0, 9, 1, 0, 0, NULL, &why), JF_GV_CONTINUE);
}

static void test_group_success_policy(void **state)
{
	(void)state;
	struct jf_range ranges[] = { { 0, 0 }, { 2, 3 } }; /* "0,2-3" */
	struct jf_success_rule rule = { .indexes = ranges, .nindexes = 2, .count = 1 };
	struct jf_spec s = base_spec(1);
	s.success = &rule;
	s.nsuccess = 1;
	const char *why = NULL;

	static const int64_t only2[] = { 2 };
	struct idx_set set = { only2, 1, 0 };
	assert_int_equal(gjudge(&s, 5, 1, 0, 4, 0, 0, &set, &why), JF_GV_SUCCEEDED);
	assert_string_equal(why, "SuccessPolicy");
	assert_true(set.calls > 0);

	/* index 1 or 4 is outside the ranges */
	static const int64_t only1[] = { 1 };
	struct idx_set set1 = { only1, 1, 0 };
	assert_int_equal(gjudge(&s, 5, 1, 0, 4, 0, 0, &set1, &why), JF_GV_CONTINUE);
	static const int64_t only4[] = { 4 };
	struct idx_set set4 = { only4, 1, 0 };
	assert_int_equal(gjudge(&s, 5, 1, 0, 4, 0, 0, &set4, &why), JF_GV_CONTINUE);

	/* nothing succeeded yet: the callback is not even needed */
	struct idx_set none = { NULL, 0, 0 };
	assert_int_equal(gjudge(&s, 5, 0, 0, 5, 0, 0, &none, &why), JF_GV_CONTINUE);
	assert_int_equal(none.calls, 0);

	/* count 0 means every index of the ranges: 0, 2 and 3 */
	rule.count = 0;
	static const int64_t three[] = { 0, 2, 3 };
	struct idx_set all3 = { three, 3, 0 };
	assert_int_equal(gjudge(&s, 5, 3, 0, 2, 0, 0, &all3, &why), JF_GV_SUCCEEDED);
	static const int64_t two[] = { 0, 2 };
	struct idx_set some = { two, 2, 0 };
	assert_int_equal(gjudge(&s, 5, 2, 0, 3, 0, 0, &some, &why), JF_GV_CONTINUE);

	/* no indexes, succeededCount 2: any two indexes */
	rule.indexes = NULL;
	rule.nindexes = 0;
	rule.count = 2;
	assert_int_equal(gjudge(&s, 5, 2, 0, 3, 0, 0, &some, &why), JF_GV_SUCCEEDED);
	assert_int_equal(gjudge(&s, 5, 1, 0, 4, 0, 0, &set, &why), JF_GV_CONTINUE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_table),
		cmocka_unit_test(test_task_table),
		cmocka_unit_test(test_node_table),
		cmocka_unit_test(test_attempt_state),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_retries),
		cmocka_unit_test(test_on_failure),
		cmocka_unit_test(test_max_failures),
		cmocka_unit_test(test_unlimited),
		cmocka_unit_test(test_pfp_failjob),
		cmocka_unit_test(test_pfp_notin),
		cmocka_unit_test(test_pfp_actions),
		cmocka_unit_test(test_pfp_disruption),
		cmocka_unit_test(test_disruption_no_rule),
		cmocka_unit_test(test_group_basic),
		cmocka_unit_test(test_group_max_failed_indexes),
		cmocka_unit_test(test_group_success_policy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
