/*
 * sim_workload.c - jobfs-sim's workload file (tools/sim_workload.h; the
 * format is at the top of tools/jobfs_sim.c).
 *
 * One pass over the YAML tree: the top-level keys, then queues (each
 * named once), then each submit[] item, checked and expanded by
 * every/times into w->subs (one struct wentry per item).  Then the
 * submissions are sorted into replay order and check_targets() refuses a
 * name submitted twice and a ctl with nothing before it to act on.
 * Nothing here talks to the engine: a spec's own keys are the engine's
 * to check when the replay submits it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/names.h"
#include "core/quantity.h"
#include "core/yamltree.h"
#include "store/store.h"
#include "tools/sim_workload.h"

void jf_simw_release(struct workload *w)
{
	jf_ydoc_free(w->doc);
	free(w->queues);
	free(w->subs);
	free(w->entries);
	memset(w, 0, sizeof(*w));
}

static enum jf_err take_duration(const struct jf_ynode *n, const char *path, int64_t *s,
				 struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	if (!jf_duration_parse(t, s) || *s > MAX_HORIZON_S)
		return jf_yerror(err, JF_EINVAL, n, path,
				 "bad duration \"%.64s\": use e.g. 90s, 30m, 2h, 1d2h (at most "
				 "10 years)",
				 t);
	return JF_OK;
}

static enum jf_err take_name(const struct jf_ynode *n, const char *path, char *out,
			     struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	struct jf_error e = { 0 };
	if (!jf_name_valid(t, &e))
		return jf_yerror(err, JF_EINVAL, n, path, "%s", e.msg);
	snprintf(out, JF_NAME_MAX, "%s", t);
	return JF_OK;
}

static enum jf_err take_text(const struct jf_ynode *n, const char *path, const char **out,
			     size_t *len, struct jf_error *err)
{
	if (n->type != JF_Y_SCALAR)
		return jf_yerror(err, JF_EINVAL, n, path,
				 "expected the file's text as a string (use `%s: |` and indent "
				 "the text), got %s",
				 path, jf_ynode_kind(n));
	enum jf_err rc = jf_ynode_text(n, path, 0, out, err);
	if (rc == JF_OK)
		*len = n->len;
	return rc;
}

static enum jf_err parse_queues(struct workload *w, const struct jf_ynode *seq,
				struct jf_error *err)
{
	static const char *const known[] = { "name", "spec", NULL };
	enum jf_err rc = jf_ynode_expect(seq, JF_Y_SEQ, "queues", err);
	if (rc)
		return rc;
	w->queues = calloc(seq->n ? seq->n : 1, sizeof(*w->queues));
	if (!w->queues)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	for (size_t i = 0; i < seq->n; i++) {
		const struct jf_ynode *m = seq->items[i], *v;
		struct wqueue *q = &w->queues[i];
		char path[JF_YPATH_MAX], kp[JF_YPATH_MAX];
		jf_ypath_index(path, sizeof(path), "queues", i);
		if ((rc = jf_ynode_expect(m, JF_Y_MAP, path, err)) ||
		    (rc = jf_ymap_check_keys(m, path, known, err)))
			return rc;
		q->line = m->line;
		jf_ypath_key(kp, sizeof(kp), path, "name");
		if (!(v = jf_ymap_get(m, "name")))
			return jf_yerror(err, JF_EINVAL, m, kp, "missing: every queue has a name");
		if ((rc = take_name(v, kp, q->name, err)))
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(w->queues[j].name, q->name) == 0)
				return jf_yerror(err, JF_EINVAL, v, kp,
						 "queue %s is listed twice (also line %d)", q->name,
						 w->queues[j].line);
		jf_ypath_key(kp, sizeof(kp), path, "spec");
		if ((v = jf_ymap_get(m, "spec")) &&
		    (rc = take_text(v, kp, &q->spec, &q->spec_len, err)))
			return rc;
		w->nqueues++;
	}
	return JF_OK;
}

static int queue_index(const struct workload *w, const char *name)
{
	for (size_t i = 0; i < w->nqueues; i++)
		if (strcmp(w->queues[i].name, name) == 0)
			return (int)i;
	return -1;
}

static const char *ctl_verb(const char *t)
{
	static const char *const verbs[] = { "pause", "resume", "stop", "restart" };
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(t, verbs[i]) == 0)
			return verbs[i];
	return NULL;
}

/* One submit[] entry, expanded by every/times into w->subs. */
static enum jf_err parse_submit(struct workload *w, const struct jf_ynode *m, const char *path,
				size_t *cap, struct jf_error *err)
{
	static const char *const known[] = { "at",  "queue", "group", "tasks", "spec",
					     "ctl", "every", "times", NULL };
	enum jf_err rc;
	char kp[JF_YPATH_MAX];
	const struct jf_ynode *v;
	if ((rc = jf_ynode_expect(m, JF_Y_MAP, path, err)) ||
	    (rc = jf_ymap_check_keys(m, path, known, err)))
		return rc;
	struct wsub s;
	memset(&s, 0, sizeof(s));
	s.line = m->line;
	s.queue = -1;
	s.entry = w->nentries;
	int64_t at, every = 0, times = 1;
	jf_ypath_key(kp, sizeof(kp), path, "at");
	if (!(v = jf_ymap_get(m, "at")))
		return jf_yerror(err, JF_EINVAL, m, kp, "missing: when to submit, e.g. at: 30m");
	if ((rc = take_duration(v, kp, &at, err)))
		return rc;
	const struct jf_ynode *qn = jf_ymap_get(m, "queue"), *gn = jf_ymap_get(m, "group");
	const struct jf_ynode *tn = jf_ymap_get(m, "tasks");
	if (tn && (qn || gn))
		return jf_yerror(err, JF_EINVAL, tn, path,
				 "give either queue and group (a queue's group) or tasks "
				 "(independent tasks), not both");
	char qname[JF_NAME_MAX] = "";
	if (tn) {
		jf_ypath_key(kp, sizeof(kp), path, "tasks");
		if ((rc = take_name(tn, kp, s.name, err)))
			return rc;
		s.kind = W_BATCH;
	} else {
		if (!qn || !gn)
			return jf_yerror(err, JF_EINVAL, m, path,
					 "say what to submit: queue and group, or tasks");
		jf_ypath_key(kp, sizeof(kp), path, "queue");
		if ((rc = take_name(qn, kp, qname, err)))
			return rc;
		if ((s.queue = queue_index(w, qname)) < 0)
			return jf_yerror(err, JF_EINVAL, qn, kp,
					 "no queue %s: list it under queues", qname);
		jf_ypath_key(kp, sizeof(kp), path, "group");
		if ((rc = take_name(gn, kp, s.name, err)))
			return rc;
		s.kind = W_GROUP;
	}
	const struct jf_ynode *sn = jf_ymap_get(m, "spec"), *cn = jf_ymap_get(m, "ctl");
	if (!!sn == !!cn)
		return jf_yerror(err, JF_EINVAL, m, path,
				 "give exactly one of spec (submit) and ctl (a verb)");
	if (sn) {
		jf_ypath_key(kp, sizeof(kp), path, "spec");
		if ((rc = take_text(sn, kp, &s.spec, &s.spec_len, err)))
			return rc;
	} else {
		const char *t;
		jf_ypath_key(kp, sizeof(kp), path, "ctl");
		if ((rc = jf_ynode_text(cn, kp, 0, &t, err)))
			return rc;
		s.kind = W_CTL;
		if (!(s.verb = ctl_verb(t)))
			return jf_yerror(err, JF_EINVAL, cn, kp,
					 "unknown verb \"%.32s\": use pause, resume, stop or "
					 "restart",
					 t);
	}
	const struct jf_ynode *en = jf_ymap_get(m, "every"), *xn = jf_ymap_get(m, "times");
	if (xn) {
		jf_ypath_key(kp, sizeof(kp), path, "times");
		if ((rc = jf_ynode_int(xn, kp, 1, MAX_SUBMISSIONS, &times, err)))
			return rc;
	}
	if (en) {
		jf_ypath_key(kp, sizeof(kp), path, "every");
		if ((rc = take_duration(en, kp, &every, err)))
			return rc;
		if (every <= 0)
			return jf_yerror(err, JF_EINVAL, en, kp, "must be more than 0s");
	}
	if (cn && (en || xn))
		return jf_yerror(err, JF_EINVAL, en ? en : xn, path,
				 "a ctl entry happens once: no every or times");
	if (times > 1 && !en)
		return jf_yerror(err, JF_EINVAL, xn, path, "times > 1 needs every");
	if (at + every * (times - 1) > MAX_HORIZON_S)
		return jf_yerror(err, JF_EINVAL, m, path, "the last repeat is past 10 years");
	if (times > 1 && strlen(s.name) + 1 + 7 > JF_NAME_MAX_LEN)
		return jf_yerror(err, JF_EINVAL, gn ? gn : tn, path,
				 "name %s is too long to number its repeats", s.name);
	if ((size_t)times > MAX_SUBMISSIONS - w->nsubs)
		return jf_yerror(err, JF_EINVAL, m, path, "more than %d submissions in all",
				 MAX_SUBMISSIONS);
	if (w->nsubs + (size_t)times > *cap) {
		size_t ncap = *cap ? *cap : 64;
		while (ncap < w->nsubs + (size_t)times)
			ncap *= 2;
		struct wsub *p = realloc(w->subs, ncap * sizeof(*p));
		if (!p)
			return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		w->subs = p;
		*cap = ncap;
	}
	char base[JF_NAME_MAX];
	snprintf(base, sizeof(base), "%s", s.name);
	struct wentry *ent = &w->entries[w->nentries++]; /* room: one per item */
	snprintf(ent->label, sizeof(ent->label), "%s/%s", s.queue >= 0 ? qname : "tasks", base);
	for (int64_t i = 0; i < times; i++) {
		struct wsub *d = &w->subs[w->nsubs];
		*d = s;
		d->at_ms = (at + every * i) * 1000;
		d->order = w->nsubs++;
		if (times > 1) {
			/* fits: checked above (the name, '-' and at most 7 digits) */
			char num[JF_NAME_MAX + 24];
			int k = snprintf(num, sizeof(num), "%s-%lld", base, (long long)i + 1);
			memcpy(d->name, num, (size_t)k + 1);
		}
	}
	return JF_OK;
}

static int sub_cmp(const void *a, const void *b)
{
	const struct wsub *x = a, *y = b;
	if (x->at_ms != y->at_ms)
		return x->at_ms < y->at_ms ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Group identity for duplicate checks: kind, queue, name. */
static int ident_cmp(const void *a, const void *b)
{
	const struct wsub *x = *(const struct wsub *const *)a, *y = *(const struct wsub *const *)b;
	if (x->queue != y->queue)
		return x->queue < y->queue ? -1 : 1;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

static bool same_target(const struct wsub *a, const struct wsub *b)
{
	return a->queue == b->queue && strcmp(a->name, b->name) == 0;
}

/* After sorting: no name submitted twice; every ctl comes after its target. */
static enum jf_err check_targets(struct workload *w, struct jf_error *err)
{
	size_t ng = 0;
	for (size_t i = 0; i < w->nsubs; i++)
		ng += w->subs[i].kind != W_CTL;
	const struct wsub **v = malloc((ng ? ng : 1) * sizeof(*v));
	if (!v)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	size_t k = 0;
	for (size_t i = 0; i < w->nsubs; i++)
		if (w->subs[i].kind != W_CTL)
			v[k++] = &w->subs[i];
	qsort(v, ng, sizeof(*v), ident_cmp);
	enum jf_err rc = JF_OK;
	for (size_t i = 1; i < ng && !rc; i++)
		if (same_target(v[i - 1], v[i]))
			rc = jf_error_set(err, JF_EINVAL, v[i]->line,
					  "%s%s%s is submitted twice (also line %d)",
					  v[i]->queue >= 0 ? w->queues[v[i]->queue].name : "tasks",
					  "/", v[i]->name, v[i - 1]->line);
	for (size_t i = 0; i < w->nsubs && !rc; i++) {
		const struct wsub *c = &w->subs[i];
		if (c->kind != W_CTL)
			continue;
		bool found = false;
		for (size_t j = 0; j < i && !found; j++) /* subs are in replay order */
			found = w->subs[j].kind != W_CTL && same_target(&w->subs[j], c);
		if (!found)
			rc = jf_error_set(err, JF_EINVAL, c->line,
					  "ctl %s: %s/%s is not submitted before it", c->verb,
					  c->queue >= 0 ? w->queues[c->queue].name : "tasks",
					  c->name);
	}
	free(v);
	return rc;
}

enum jf_err jf_simw_parse(const char *text, size_t len, struct workload *w, struct jf_error *err)
{
	static const char *const known[] = { "cluster", "until", "queues", "submit", NULL };
	memset(w, 0, sizeof(*w));
	w->until_s = -1;
	enum jf_err rc = jf_ydoc_parse(text, len, &w->doc, err);
	if (rc)
		return rc;
	const struct jf_ynode *root = jf_ydoc_root(w->doc), *v;
	if (jf_ynode_is_null(root))
		return jf_error_set(err, JF_EINVAL, 0, "the workload is empty: it needs submit:");
	if ((rc = jf_ynode_expect(root, JF_Y_MAP, "", err)) ||
	    (rc = jf_ymap_check_keys(root, "", known, err)))
		return rc;
	if ((v = jf_ymap_get(root, "cluster")) &&
	    (rc = take_text(v, "cluster", &w->cluster, &w->cluster_len, err)))
		return rc;
	if ((v = jf_ymap_get(root, "until")) && (rc = take_duration(v, "until", &w->until_s, err)))
		return rc;
	if ((v = jf_ymap_get(root, "queues")) && (rc = parse_queues(w, v, err)))
		return rc;
	if (!(v = jf_ymap_get(root, "submit")))
		return jf_error_set(err, JF_EINVAL, 0,
				    "key 'submit': missing: list what to submit");
	if ((rc = jf_ynode_expect(v, JF_Y_SEQ, "submit", err)))
		return rc;
	if (!(w->entries = calloc(v->n ? v->n : 1, sizeof(*w->entries))))
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	size_t cap = 0;
	for (size_t i = 0; i < v->n; i++) {
		char path[JF_YPATH_MAX];
		jf_ypath_index(path, sizeof(path), "submit", i);
		if ((rc = parse_submit(w, v->items[i], path, &cap, err)))
			return rc;
	}
	if (w->nsubs)
		qsort(w->subs, w->nsubs, sizeof(*w->subs), sub_cmp);
	return check_targets(w, err);
}
