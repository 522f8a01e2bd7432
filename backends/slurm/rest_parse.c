/*
 * rest_parse.c - reading slurmrestd's answers: the verdict on one answer
 * (check_answer(), and jf_slurm_answer_check() for tests), the job and
 * node records in it (jobs_from(), nodes_from(), and the _parse()
 * functions for recorded answers) and GPUs in a gres string.  No HTTP
 * here: rest.c fetches an answer into a struct reply (status, body, tree)
 * and hands it over; the rest of the client's DESIGN (the JWT ambiguity,
 * job updates, submissions) is at the top of rest.c.
 *
 * DESIGN
 *
 * How an answer is read (check_answer()).  slurmrestd 22.05 puts Slurm's
 * errors in the answer's "errors" list, under "error_number", "error_code"
 * or (GET /nodes) "errno", and sets the HTTP status loosely: job not found
 * is 500, a refused parse of an update is 200, a submission Slurm refuses
 * is 500 but one it queues with a complaint is 200.  So the numbers decide
 * and the status only breaks ties:
 *   - every entry with a number is classified (classify()); the strongest
 *     class wins, EACCES > ENOENT > EBUSY > EINVAL > EIO, so that "Failure
 *     during parsing" (9001) beats the vague -1 it comes with;
 *   - entries without a number are not errors: slurmrestd writes one
 *     ("job array update from ... failed", source "_parse_job_list") after
 *     every update of an array job, from a test of the pointer
 *     resp->error_code where the value was meant, and leaves the number
 *     out because the value is 0.  Their text still goes into the message
 *     of a real error (it is where "Unknown key "bogus"" is);
 *   - no numbered entry: HTTP 5xx is EIO, 4xx EINVAL, anything else OK;
 *     401/403 (slurmrestd's own "Authentication failure", text/plain) are
 *     EACCES; a body that is not JSON is EIO, or EINVAL with 4xx
 *     ("Unable to parse query.").
 * Error numbers: -1, 1000-1099 but 1007, 1800-1899, 5000-5099, 2027,
 * 2131, 7000 are "cannot reach slurmctld" (EIO); 1007, 2002, 2010,
 * 6000-6099, 9004, 9005, 9008 are authentication (EACCES); 2017, and 9002
 * with "Unable to find JobId", are ENOENT; 2020 is EBUSY; the rest EINVAL.
 *
 * Records.  A list is read whole or not at all: a job record without a
 * job_id or with a batch_host longer than its array, a node record
 * without a name or with one longer than its array, or no memory frees
 * what was read of the list and sets no output.  Strings are heap copies,
 * "" when Slurm gives none; the other fixed arrays hold Slurm's text cut
 * to fit, before a UTF-8 sequence that does not; numbers that are
 * missing, null, not integers, NO_VAL or INFINITE take the default rest.h
 * names (mostly 0).
 *
 * Nothing here keeps state or does I/O.
 */
#include "backends/slurm/rest.h"
#include "backends/slurm/rest_int.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_VAL32   INT64_C(4294967294) /* Slurm's NO_VAL ... */
#define INFINITE32 INT64_C(4294967295) /* ... and INFINITE, as JSON numbers */

/* ---- what an answer means ----------------------------------------------- */

int entry_number(json_t *e)
{
	static const char *const keys[] = { "error_number", "error_code", "errno" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *v = json_object_get(e, keys[i]);
		if (json_is_integer(v)) {
			json_int_t x = json_integer_value(v);
			return x < -1000000 ? -1000000 : x > 1000000 ? 1000000 : (int)x;
		}
	}
	return 0;
}

static const char *entry_str(json_t *e, const char *key)
{
	const char *s = json_string_value(json_object_get(e, key));
	return s && *s ? s : NULL;
}

static enum jf_err classify(int num, const char *desc)
{
	if (num == SE_UNSPECIFIED || (num >= 1000 && num < 1100 && num != SE_PROTOCOL_AUTH) ||
	    (num >= 1800 && num < 1900) || (num >= 5000 && num < 5100) || num == SE_IN_STANDBY ||
	    num == SE_IN_STANDBY_USE_BACKUP || num == SE_DB_CONNECTION)
		return JF_EIO;
	if (num == SE_PROTOCOL_AUTH || num == SE_ACCESS_DENIED || num == SE_USER_ID_MISSING ||
	    (num >= 6000 && num < 6100) || num == SE_REST_MISSING_UID ||
	    num == SE_REST_MISSING_GID || num == SE_REST_AUTH_FAIL)
		return JF_EACCES;
	if (num == SE_INVALID_JOB_ID || (num == SE_REST_INVALID_JOBS_DESC && desc &&
					 !strncmp(desc, "Unable to find JobId", 20)))
		return JF_ENOENT;
	if (num == SE_TRANSITION_STATE)
		return JF_EBUSY;
	return JF_EINVAL;
}

static int strength(enum jf_err code)
{
	switch (code) {
	case JF_EACCES:
		return 5;
	case JF_ENOENT:
		return 4;
	case JF_EBUSY:
		return 3;
	case JF_EINVAL:
		return 2;
	case JF_EIO:
		return 1;
	default:
		return 0;
	}
}

/* All the entries' words, "; "-joined, into buf. */
void errors_text(json_t *errors, char *buf, size_t n)
{
	size_t i, len = 0;
	json_t *e;

	buf[0] = '\0';
	json_array_foreach(errors, i, e)
	{
		const char *d = entry_str(e, "description"), *x = entry_str(e, "error");
		if (!d && !x)
			continue;
		int k;
		if (d && x && !strstr(d, x))
			k = snprintf(buf + len, n - len, "%s%s: %s", len ? "; " : "", d, x);
		else
			k = snprintf(buf + len, n - len, "%s%s", len ? "; " : "", d ? d : x);
		if (k < 0 || (size_t)k >= n - len)
			break;
		len += (size_t)k;
	}
}

/* The verdict on one answer, the unix-socket reading. */
enum jf_err check_answer(const struct reply *rep, const char *what, int *slurm_errno,
			 struct jf_error *err)
{
	char q[256], text[TEXT_MAX + 1];
	long st = rep->status;

	*slurm_errno = 0;
	if (st == 304)
		return JF_OK;
	if (st == 401 || st == 403) {
		jf_err_quote(rep->body, rep->len, 100, q, sizeof(q));
		return jf_error_set(err, JF_EACCES, 0,
				    "slurmrestd refused the credentials (HTTP %ld: \"%s\")", st, q);
	}
	if (!rep->root) {
		jf_err_quote(rep->body, rep->len, 100, q, sizeof(q));
		if (st >= 500 || st < 200)
			return jf_error_set(err, JF_EIO, 0, "slurmrestd answered HTTP %ld: \"%s\"",
					    st, q);
		if (st >= 400)
			return jf_error_set(err, JF_EINVAL, 0,
					    "slurmrestd refused the %s (HTTP %ld: \"%s\")", what,
					    st, q);
		if (rep->len == 0)
			return jf_error_set(err, JF_EIO, 0,
					    "slurmrestd sent an empty answer (HTTP %ld)", st);
		return jf_error_set(err, JF_EIO, 0,
				    "slurmrestd answer is not JSON: line %d column %d: %s",
				    rep->jerr.line, rep->jerr.column, rep->jerr.text);
	}
	if (!json_is_object(rep->root))
		return jf_error_set(err, JF_EIO, 0, "slurmrestd answer is not a JSON object");

	json_t *errors = json_object_get(rep->root, "errors"), *e;
	enum jf_err best = JF_OK;
	int num = 0;
	size_t i;
	json_array_foreach(errors, i, e)
	{
		int k = entry_number(e);
		if (k == 0)
			continue; /* the array-update note, or words for another entry */
		enum jf_err c = classify(k, entry_str(e, "description"));
		if (strength(c) > strength(best)) {
			best = c;
			num = k;
		}
	}
	errors_text(errors, text, sizeof(text));
	if (best == JF_OK) {
		if (st >= 500)
			return jf_error_set(
				err, JF_EIO, 0,
				"slurmrestd answered HTTP %ld without a Slurm error%s%s", st,
				text[0] ? ": " : "", text);
		if (st >= 400)
			return jf_error_set(err, JF_EINVAL, 0,
					    "slurmrestd refused the %s (HTTP %ld)%s%s", what, st,
					    text[0] ? ": " : "", text);
		return JF_OK;
	}
	*slurm_errno = num;
	switch (best) {
	case JF_EIO:
		return jf_error_set(err, JF_EIO, 0, "slurmctld unreachable (Slurm error %d: %s)",
				    num, text);
	case JF_EACCES:
		return jf_error_set(err, JF_EACCES, 0,
				    "Slurm refused the credentials for the %s: %s (error %d)", what,
				    text, num);
	case JF_ENOENT:
		return jf_error_set(err, JF_ENOENT, 0, "Slurm has no job for the %s: %s (error %d)",
				    what, text, num);
	case JF_EBUSY:
		return jf_error_set(
			err, JF_EBUSY, 0,
			"Slurm refused the %s in the job's present state: %s (error %d)", what,
			text, num);
	default:
		return jf_error_set(err, JF_EINVAL, 0, "Slurm refused the %s: %s (error %d)", what,
				    text, num);
	}
}

enum jf_err jf_slurm_answer_check(long http_status, const char *body, size_t len, const char *what,
				  int *slurm_errno, struct jf_error *err)
{
	struct reply rep = { .status = http_status, .body = body ? body : "", .len = len };
	int num;

	if (rep.len > 0)
		rep.root = json_loadb(rep.body, rep.len, 0, &rep.jerr);
	enum jf_err rc = check_answer(&rep, what ? what : "request", &num, err);
	if (slurm_errno)
		*slurm_errno = num;
	reply_release(&rep);
	return rc;
}

/* ---- records ------------------------------------------------------------ */

/* An integer member, dflt when missing, null, not an integer, or Slurm's
 * NO_VAL/INFINITE. */
static int64_t get_int(json_t *o, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		return dflt;
	int64_t x = json_integer_value(v);
	return (x == NO_VAL32 || x == INFINITE32) ? dflt : x;
}

/* A string member as a heap copy, "" when missing; NULL only for ENOMEM. */
static char *get_str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return strdup(s ? s : "");
}

/* A string member into buf (n bytes), cut before a UTF-8 sequence that
 * does not fit; "" when missing. */
static void get_fixed(json_t *o, const char *key, char *buf, size_t n)
{
	const char *s = json_string_value(json_object_get(o, key));
	size_t k = s ? strlen(s) : 0;
	if (k >= n) {
		k = n - 1;
		while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
			k--;
	}
	if (k)
		memcpy(buf, s, k);
	buf[k] = '\0';
}

static void job_release(struct jf_slurm_job *j)
{
	free(j->array_task_string);
	free(j->nodes);
	for (size_t i = 0; i < j->ngres_detail; i++)
		free(j->gres_detail[i]);
	free(j->gres_detail);
	free(j->name);
	free(j->comment);
	free(j->partition);
	free(j->std_out);
}

void jf_slurm_jobs_free(struct jf_slurm_job *jobs, size_t n)
{
	if (!jobs)
		return;
	for (size_t i = 0; i < n; i++)
		job_release(&jobs[i]);
	free(jobs);
}

static enum jf_err job_from(json_t *o, size_t idx, struct jf_slurm_job *j, struct jf_error *err)
{
	memset(j, 0, sizeof(*j));
	if (!json_is_object(o) || get_int(o, "job_id", 0) <= 0)
		return jf_error_set(err, JF_EIO, 0,
				    "slurmrestd answer: job record %zu has no job_id", idx);
	const char *bh = json_string_value(json_object_get(o, "batch_host"));
	if (bh && strlen(bh) >= sizeof(j->batch_host))
		return jf_error_set(err, JF_EIO, 0,
				    "slurmrestd answer: job record %zu: batch_host longer than %zu "
				    "bytes",
				    idx, sizeof(j->batch_host) - 1);

	j->job_id = get_int(o, "job_id", 0);
	j->array_job_id = get_int(o, "array_job_id", 0);
	j->array_task_id = j->array_job_id > 0 ? get_int(o, "array_task_id", -1) : -1;
	if (j->array_task_id < 0)
		j->array_task_id = -1;
	j->array_max_tasks = get_int(o, "array_max_tasks", 0);
	get_fixed(o, "job_state", j->state, sizeof(j->state));
	get_fixed(o, "state_reason", j->reason, sizeof(j->reason));
	j->submit_time = get_int(o, "submit_time", 0);
	j->eligible_time = get_int(o, "eligible_time", 0);
	j->start_time = get_int(o, "start_time", 0);
	j->end_time = get_int(o, "end_time", 0);
	j->preempt_time = get_int(o, "preempt_time", 0);
	j->suspend_time = get_int(o, "suspend_time", 0);
	j->restart_cnt = get_int(o, "restart_cnt", 0);
	int64_t w = get_int(o, "exit_code", 0); /* a wait status */
	if (w > 0 && w <= 0xffff) {
		if ((w & 0x7f) == 0)
			j->exit_code = (int)((w >> 8) & 0xff);
		else if ((w & 0x7f) != 0x7f)
			j->exit_signal = (int)(w & 0x7f);
	}
	get_fixed(o, "batch_host", j->batch_host, sizeof(j->batch_host));
	j->user_id = get_int(o, "user_id", 0);
	j->time_limit = get_int(o, "time_limit", 0);
	j->requeue = json_is_true(json_object_get(o, "requeue"));
	if (!(j->array_task_string = get_str(o, "array_task_string")) ||
	    !(j->nodes = get_str(o, "nodes")) || !(j->name = get_str(o, "name")) ||
	    !(j->comment = get_str(o, "comment")) || !(j->partition = get_str(o, "partition")) ||
	    !(j->std_out = get_str(o, "standard_output"))) {
		job_release(j);
		memset(j, 0, sizeof(*j));
		return jf_error_set(err, JF_ENOMEM, 0, "slurmrestd answer: out of memory");
	}
	json_t *gd = json_object_get(o, "gres_detail");
	size_t ng = json_array_size(gd);
	if (ng > 65536)
		ng = 0; /* more than a job's nodes can be: not used */
	if (ng && !(j->gres_detail = calloc(ng, sizeof(*j->gres_detail)))) {
		job_release(j);
		memset(j, 0, sizeof(*j));
		return jf_error_set(err, JF_ENOMEM, 0, "slurmrestd answer: out of memory");
	}
	for (size_t i = 0; i < ng; i++) {
		const char *d = json_string_value(json_array_get(gd, i));
		if (!(j->gres_detail[i] = strdup(d ? d : ""))) {
			job_release(j);
			memset(j, 0, sizeof(*j));
			return jf_error_set(err, JF_ENOMEM, 0, "slurmrestd answer: out of memory");
		}
		j->ngres_detail = i + 1;
	}
	return JF_OK;
}

enum jf_err jobs_from(json_t *root, struct jf_slurm_job **jobs, size_t *n, struct jf_error *err)
{
	json_t *list = json_object_get(root, "jobs"), *o;
	struct jf_slurm_job *v = NULL;
	size_t i, k = 0;
	enum jf_err rc;

	if (!json_is_array(list))
		return jf_error_set(err, JF_EIO, 0, "slurmrestd answer has no \"jobs\" list");
	if (json_array_size(list) > 0 && !(v = calloc(json_array_size(list), sizeof(*v))))
		return jf_error_set(err, JF_ENOMEM, 0, "slurmrestd answer: out of memory");
	json_array_foreach(list, i, o)
	{
		if ((rc = job_from(o, i, &v[k], err))) {
			jf_slurm_jobs_free(v, k);
			return rc;
		}
		k++;
	}
	*jobs = v;
	*n = k;
	return JF_OK;
}

static void node_release(struct jf_slurm_node *d)
{
	free(d->state);
	free(d->gres);
	free(d->gres_used);
	free(d->partitions);
	free(d->reason);
}

void jf_slurm_nodes_free(struct jf_slurm_node *nodes, size_t n)
{
	if (!nodes)
		return;
	for (size_t i = 0; i < n; i++)
		node_release(&nodes[i]);
	free(nodes);
}

/* "idle" and ["DRAIN"] -> "idle+drain"; NULL only for ENOMEM. */
static char *node_state(json_t *o)
{
	const char *st = json_string_value(json_object_get(o, "state"));
	json_t *flags = json_object_get(o, "state_flags"), *f;
	size_t i, len = st ? strlen(st) : 0;

	json_array_foreach(flags, i, f) if (json_is_string(f)) len +=
		1 + strlen(json_string_value(f));
	char *s = malloc(len + 1), *w = s;
	if (!s)
		return NULL;
	if (st)
		w = stpcpy(w, st);
	json_array_foreach(flags, i, f)
	{
		if (!json_is_string(f))
			continue;
		if (w != s)
			*w++ = '+';
		w = stpcpy(w, json_string_value(f));
	}
	*w = '\0';
	for (w = s; *w; w++)
		*w = (char)tolower((unsigned char)*w);
	return s;
}

/* ["ondemand","spot"] -> "ondemand,spot" (a string is taken as is). */
static char *join_list(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key), *x;
	size_t i, len = 0;

	if (json_is_string(v))
		return strdup(json_string_value(v));
	json_array_foreach(v, i, x) if (json_is_string(x)) len += strlen(json_string_value(x)) + 1;
	char *s = malloc(len + 1), *w = s;
	if (!s)
		return NULL;
	json_array_foreach(v, i, x)
	{
		if (!json_is_string(x))
			continue;
		if (w != s)
			*w++ = ',';
		w = stpcpy(w, json_string_value(x));
	}
	*w = '\0';
	return s;
}

static enum jf_err node_from(json_t *o, size_t idx, struct jf_slurm_node *d, struct jf_error *err)
{
	const char *name = json_string_value(json_object_get(o, "name"));

	memset(d, 0, sizeof(*d));
	if (!name || !*name)
		return jf_error_set(err, JF_EIO, 0,
				    "slurmrestd answer: node record %zu has no name", idx);
	if (strlen(name) >= sizeof(d->name))
		return jf_error_set(
			err, JF_EIO, 0,
			"slurmrestd answer: node record %zu: name longer than %zu bytes", idx,
			sizeof(d->name) - 1);
	strcpy(d->name, name);
	d->cpus = get_int(o, "cpus", 0);
	d->alloc_cpus = get_int(o, "alloc_cpus", 0);
	d->real_memory_mb = get_int(o, "real_memory", 0);
	d->alloc_memory_mb = get_int(o, "alloc_memory", 0);
	d->free_memory_mb = get_int(o, "free_memory", -1);
	if (!(d->state = node_state(o)) || !(d->gres = get_str(o, "gres")) ||
	    !(d->gres_used = get_str(o, "gres_used")) ||
	    !(d->partitions = join_list(o, "partitions")) || !(d->reason = get_str(o, "reason"))) {
		node_release(d);
		memset(d, 0, sizeof(*d));
		return jf_error_set(err, JF_ENOMEM, 0, "slurmrestd answer: out of memory");
	}
	return JF_OK;
}

enum jf_err nodes_from(json_t *root, struct jf_slurm_node **nodes, size_t *n, struct jf_error *err)
{
	json_t *list = json_object_get(root, "nodes"), *o;
	struct jf_slurm_node *v = NULL;
	size_t i, k = 0;
	enum jf_err rc;

	if (!json_is_array(list))
		return jf_error_set(err, JF_EIO, 0, "slurmrestd answer has no \"nodes\" list");
	if (json_array_size(list) > 0 && !(v = calloc(json_array_size(list), sizeof(*v))))
		return jf_error_set(err, JF_ENOMEM, 0, "slurmrestd answer: out of memory");
	json_array_foreach(list, i, o)
	{
		if ((rc = node_from(o, i, &v[k], err))) {
			jf_slurm_nodes_free(v, k);
			return rc;
		}
		k++;
	}
	*nodes = v;
	*n = k;
	return JF_OK;
}

/* body -> tree, JF_EIO with the position when it is not JSON */
static enum jf_err parse_body(const char *body, size_t len, json_t **root, struct jf_error *err)
{
	json_error_t je;

	if (!body || len == 0)
		return jf_error_set(err, JF_EIO, 0, "slurmrestd answer is empty");
	if (len > JF_SLURM_BODY_MAX)
		return jf_error_set(err, JF_EIO, 0, "slurmrestd answer is larger than %zu MiB",
				    JF_SLURM_BODY_MAX >> 20);
	if (!(*root = json_loadb(body, len, 0, &je)))
		return jf_error_set(err, JF_EIO, 0,
				    "slurmrestd answer is not JSON: line %d column %d: %s", je.line,
				    je.column, je.text);
	return JF_OK;
}

enum jf_err jf_slurm_jobs_parse(const char *body, size_t len, struct jf_slurm_job **jobs, size_t *n,
				struct jf_error *err)
{
	json_t *root = NULL;
	enum jf_err rc;

	*jobs = NULL;
	*n = 0;
	if ((rc = parse_body(body, len, &root, err)))
		return rc;
	rc = jobs_from(root, jobs, n, err);
	json_decref(root);
	return rc;
}

enum jf_err jf_slurm_nodes_parse(const char *body, size_t len, struct jf_slurm_node **nodes,
				 size_t *n, struct jf_error *err)
{
	json_t *root = NULL;
	enum jf_err rc;

	*nodes = NULL;
	*n = 0;
	if ((rc = parse_body(body, len, &root, err)))
		return rc;
	rc = nodes_from(root, nodes, n, err);
	json_decref(root);
	return rc;
}

/* ---- gres --------------------------------------------------------------- */

int jf_slurm_gres_gpus(const char *gres, char *model, size_t n)
{
	if (model && n)
		model[0] = '\0';
	if (!gres)
		return -1;
	for (const char *p = gres; *p;) {
		/* one entry: up to a ',' outside parentheses ("(IDX:0,2)") */
		const char *e = p, *paren = NULL;
		int depth = 0;
		for (; *e && !(*e == ',' && depth == 0); e++) {
			if (*e == '(') {
				if (!paren)
					paren = e;
				depth++;
			} else if (*e == ')' && depth > 0) {
				depth--;
			}
		}
		const char *end = paren ? paren : e;
		const char *f[4];
		size_t fl[4], nf = 0;
		for (const char *s = p; nf < 4;) {
			const char *c = memchr(s, ':', (size_t)(end - s));
			f[nf] = s;
			fl[nf++] = (size_t)((c ? c : end) - s);
			if (!c)
				break;
			s = c + 1;
		}
		bool digits = false;
		const char *cnt = NULL;
		size_t cl = 0;
		if (nf == 2) {
			cnt = f[1];
			cl = fl[1];
		} else if (nf == 3) {
			cnt = f[2];
			cl = fl[2];
		}
		if (cnt) {
			digits = cl > 0 && cl <= 9;
			for (size_t k = 0; digits && k < cl; k++)
				digits = cnt[k] >= '0' && cnt[k] <= '9';
		}
		if (fl[0] == 3 && !memcmp(f[0], "gpu", 3) && nf <= 3 && (nf != 3 || digits)) {
			int count = 1;
			const char *type = NULL;
			size_t tl = 0;
			if (nf == 2 && !digits) {
				type = f[1]; /* "gpu:a100" */
				tl = fl[1];
			} else if (nf >= 2) {
				count = (int)strtol(cnt, NULL, 10);
				if (nf == 3) {
					type = f[1];
					tl = fl[1];
				}
			}
			if (model && n && type)
				snprintf(model, n, "%.*s", (int)tl, type);
			return count;
		}
		p = *e ? e + 1 : e;
	}
	return -1;
}
