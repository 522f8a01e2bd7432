/*
 * queue_spec.c - the queue spec of reference 2.2.
 *
 * Keys: capacity (nodes, >= 0, 0 = unlimited), group_timeout (a duration,
 * 0 = off), partition and spot_partition (Slurm partitions for the
 * queue's on-demand and spot work), private (bool), keep_logs (a duration
 * or "forever": how long a finished group's logs stay), budget (an amount
 * of the cluster's currency, "100.00": parsed exactly into micro-units),
 * budget_period (a duration: the rolling window the budget covers) and
 * budget_action (hold or stop).  Unknown keys are errors; an empty text
 * (or only comments) is all defaults.  *out is written only on success,
 * so a refused spec leaves it unchanged.
 */
#include "core/spec.h"

#include <stdlib.h>
#include <string.h>

#include "core/billing.h"
#include "core/quantity.h"
#include "core/yamltree.h"

#define QUEUE_MAX_CAPACITY 1000000
#define QUEUE_MAX_TIMEOUT  (366LL * 86400)
#define QUEUE_MAX_KEEP     (3660LL * 86400)

static bool partition_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > JF_SPEC_MAX_NAME)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
			return false;
	return true;
}

/* "100.00": digits, then at most 6 decimals (the micro-unit), no sign,
 * no exponent; each way of getting it wrong has its own message. */
static enum jf_err parse_budget(const struct jf_ynode *n, const char *t, int64_t *out,
				struct jf_error *err)
{
	static const char digits[] = "0123456789";
	const char *p = t + (t[0] == '-');
	size_t whole = strspn(p, digits), frac = 0;
	const char *q = p + whole;
	bool dot = *q == '.';
	if (dot) {
		frac = strspn(q + 1, digits);
		q += 1 + frac;
	}
	if (whole == 0 || (dot && frac == 0) || *q)
		return jf_yerror(err, JF_EINVAL, n, "budget",
				 "\"%.64s\" is not an amount: write it in the cluster's currency "
				 "as a number, e.g. \"100.00\"",
				 t);
	if (t[0] == '-')
		return jf_yerror(err, JF_EINVAL, n, "budget",
				 "%.64s is negative: a budget is 0 or more (0: nothing new "
				 "starts)",
				 t);
	if (frac > 6)
		return jf_yerror(err, JF_EINVAL, n, "budget",
				 "%.64s has %zu decimals: at most 6 (the smallest amount is "
				 "0.000001, one micro-unit)",
				 t, frac);
	int64_t v = 0;
	if (!jf_money_parse(t, &v) || v / 1000000 >= JF_BUDGET_MAX_UNITS)
		return jf_yerror(err, JF_EINVAL, n, "budget",
				 "%.64s is out of range: at most %lld (less than 10^12)", t,
				 (long long)JF_BUDGET_MAX_UNITS - 1);
	*out = v;
	return JF_OK;
}

static enum jf_err parse_budget_keys(const struct jf_ynode *root, struct jf_queue_spec *q,
				     struct jf_error *err)
{
	const struct jf_ynode *n;
	const char *t;
	enum jf_err rc;
	if ((n = jf_ymap_get(root, "budget"))) {
		if ((rc = jf_ynode_text(n, "budget", 0, &t, err)) ||
		    (rc = parse_budget(n, t, &q->budget, err)))
			return rc;
		q->budget_set = true;
	}
	if ((n = jf_ymap_get(root, "budget_period"))) {
		if ((rc = jf_ynode_text(n, "budget_period", 0, &t, err)))
			return rc;
		if (!jf_duration_parse(t, &q->budget_period))
			return jf_yerror(err, JF_EINVAL, n, "budget_period",
					 "bad duration \"%.64s\": use e.g. 1d, 7d or 30d (a "
					 "rolling window; absent: the queue's whole life)",
					 t);
		if (q->budget_period < JF_BUDGET_PERIOD_MIN ||
		    q->budget_period > JF_BUDGET_PERIOD_MAX)
			return jf_yerror(err, JF_EINVAL, n, "budget_period",
					 "duration %.64s is out of range: 1m to 366d", t);
		if (!q->budget_set)
			return jf_yerror(err, JF_EINVAL, n, "budget_period",
					 "a period needs a budget (budget: \"100.00\")");
	}
	if ((n = jf_ymap_get(root, "budget_action"))) {
		if ((rc = jf_ynode_text(n, "budget_action", 0, &t, err)))
			return rc;
		if (strcmp(t, "stop") && strcmp(t, "hold"))
			return jf_yerror(err, JF_EINVAL, n, "budget_action",
					 "\"%.64s\": use hold (running work runs on, the "
					 "default) or stop (running work is stopped)",
					 t);
		q->budget_stop = strcmp(t, "stop") == 0;
		if (!q->budget_set)
			return jf_yerror(err, JF_EINVAL, n, "budget_action",
					 "an action needs a budget (budget: \"100.00\")");
	}
	return JF_OK;
}

static enum jf_err parse_root(const struct jf_ynode *root, struct jf_queue_spec *q,
			      struct jf_error *err)
{
	static const char *const known[] = {
		"capacity",  "group_timeout", "partition",     "spot_partition", "private",
		"keep_logs", "budget",        "budget_period", "budget_action",  NULL
	};
	enum jf_err rc = jf_ymap_check_keys(root, "", known, err);
	if (rc)
		return rc;
	const struct jf_ynode *n;
	if ((n = jf_ymap_get(root, "capacity")) &&
	    (rc = jf_ynode_int(n, "capacity", 0, QUEUE_MAX_CAPACITY, &q->capacity, err)))
		return rc;
	if ((n = jf_ymap_get(root, "group_timeout"))) {
		const char *t;
		if ((rc = jf_ynode_text(n, "group_timeout", 0, &t, err)))
			return rc;
		if (!jf_duration_parse(t, &q->group_timeout))
			return jf_yerror(err, JF_EINVAL, n, "group_timeout",
					 "bad duration \"%.64s\": use e.g. 90s, 30m, 2h or "
					 "1h30m (0 = off)",
					 t);
		if (q->group_timeout > QUEUE_MAX_TIMEOUT)
			return jf_yerror(err, JF_EINVAL, n, "group_timeout",
					 "duration %.64s is out of range: at most 366d", t);
	}
	if ((n = jf_ymap_get(root, "keep_logs"))) {
		const char *t;
		if ((rc = jf_ynode_text(n, "keep_logs", 0, &t, err)))
			return rc;
		if (!strcmp(t, "forever"))
			q->keep_logs = 0;
		else if (!jf_duration_parse(t, &q->keep_logs) || q->keep_logs <= 0)
			return jf_yerror(err, JF_EINVAL, n, "keep_logs",
					 "bad duration \"%.64s\": use e.g. 12h, 7d or 30d, or "
					 "forever",
					 t);
		else if (q->keep_logs > QUEUE_MAX_KEEP)
			return jf_yerror(
				err, JF_EINVAL, n, "keep_logs",
				"duration %.64s is out of range: at most 3660d (or forever)", t);
		q->keep_logs_set = true;
	}
	static const char *const pkeys[] = { "partition", "spot_partition" };
	for (int k = 0; k < 2; k++) {
		if (!(n = jf_ymap_get(root, pkeys[k])))
			continue;
		const char *t;
		if ((rc = jf_ynode_text(n, pkeys[k], 0, &t, err)))
			return rc;
		if (!partition_ok(t))
			return jf_yerror(err, JF_EINVAL, n, pkeys[k],
					 "bad partition name \"%.64s\": use 1 to %d letters, "
					 "digits, '.', '_' or '-'",
					 t, JF_SPEC_MAX_NAME);
		char **dst = k == 0 ? &q->partition : &q->spot_partition;
		*dst = strdup(t);
		if (!*dst)
			return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	if ((n = jf_ymap_get(root, "private")) &&
	    (rc = jf_ynode_bool(n, "private", &q->private_, err)))
		return rc;
	return parse_budget_keys(root, q, err);
}

enum jf_err jf_queue_spec_parse(const char *text, size_t len, struct jf_queue_spec *out,
				struct jf_error *err)
{
	struct jf_error e = { 0 };
	struct jf_queue_spec q = { 0 };
	struct jf_ydoc *doc;
	enum jf_err rc = jf_ydoc_parse(text, len, &doc, &e);
	if (rc)
		goto fail;
	const struct jf_ynode *root = jf_ydoc_root(doc);
	if (!jf_ynode_is_null(root)) {
		if (root->type != JF_Y_MAP)
			rc = jf_yerror(&e, JF_EINVAL, root, "",
				       "the queue spec must be a mapping of keys, not %s",
				       jf_ynode_kind(root));
		else
			rc = parse_root(root, &q, &e);
	}
	jf_ydoc_free(doc);
	if (rc)
		goto fail;
	*out = q;
	return JF_OK;
fail:
	free(q.partition);
	free(q.spot_partition);
	if (err)
		*err = e;
	return rc;
}

void jf_queue_spec_release(struct jf_queue_spec *q)
{
	if (!q)
		return;
	free(q->partition);
	free(q->spot_partition);
	q->partition = NULL;
	q->spot_partition = NULL;
}
