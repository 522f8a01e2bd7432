/*
 * deps.c - `after:` entries (reference 10): the parser, the verdict of an
 * entry on its target's state, and the cycle check.
 *
 * The parser takes a list (or one entry alone) of scalars and mappings.
 * A scalar is the target; a mapping has `group` (the target, required),
 * `when` and `each`.  A target is a directory name, queues/<q>/groups/<g>
 * or tasks/<name> (a leading '/' is allowed: the tree's own spelling).
 * The same target written twice is refused here; a bare name and a path
 * that come to the same group are the engine's to find.
 *
 * The cycle check is a breadth-first walk from the new node's targets over
 * edges its caller looks up: the first path back to the new node is the
 * shortest, which is what a message should show.  Nodes are visited once
 * (an open-addressing set of ids), so it ends on any graph.
 */
#include "core/deps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "core/lifecycle.h"
#include "core/names.h"

static enum jf_err oom(struct jf_error *err)
{
	return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
}

const char *jf_dep_when_name(enum jf_dep_when w)
{
	switch (w) {
	case JF_DEP_SUCCEEDED:
		return "succeeded";
	case JF_DEP_FAILED:
		return "failed";
	case JF_DEP_FINISHED:
		return "finished";
	}
	return "?";
}

const char *jf_dep_verdict_name(enum jf_dep_verdict v)
{
	switch (v) {
	case JF_DEP_WAITS:
		return "waits";
	case JF_DEP_HOLDS:
		return "holds";
	case JF_DEP_NEVER:
		return "never";
	}
	return "?";
}

unsigned jf_dep_ok_mask(enum jf_dep_when w)
{
	switch (w) {
	case JF_DEP_SUCCEEDED:
		return 1u << JF_ST_SUCCEEDED;
	case JF_DEP_FAILED:
		return 1u << JF_ST_FAILED;
	case JF_DEP_FINISHED:
		return (1u << JF_ST_SUCCEEDED) | (1u << JF_ST_FAILED) | (1u << JF_ST_STOPPED);
	}
	return 0;
}

enum jf_dep_verdict jf_dep_eval(enum jf_dep_when w, int state)
{
	if (state < 0 || state >= JF_ST__COUNT)
		return JF_DEP_NEVER; /* gone: it will never end now */
	if (jf_dep_ok_mask(w) & (1u << state))
		return JF_DEP_HOLDS;
	return jf_state_final((enum jf_state)state) ? JF_DEP_NEVER : JF_DEP_WAITS;
}

void jf_dep_target(const struct jf_dep *d, char *buf, size_t n)
{
	switch (d->ref) {
	case JF_DEP_REF_QUEUE:
		snprintf(buf, n, "queues/%s/groups/%s", d->queue, d->name);
		break;
	case JF_DEP_REF_TASKS:
		snprintf(buf, n, "tasks/%s", d->name);
		break;
	case JF_DEP_REF_NAME:
		snprintf(buf, n, "%s", d->name);
		break;
	}
}

/* ---- the parser ---- */

static const char shapes[] = "a group of this queue (prep), queues/<q>/groups/<g> or tasks/<name>";

/* One path component of t (len bytes) as a name into out. */
static enum jf_err take_name(const struct jf_ynode *n, const char *path, const char *what,
			     const char *t, size_t len, char *out, struct jf_error *err)
{
	char name[JF_DEP_NAME_MAX + 2];
	struct jf_error e = { 0 };
	if (len > JF_DEP_NAME_MAX || memchr(t, '\0', len)) {
		snprintf(name, sizeof(name), "%.*s", JF_DEP_NAME_MAX + 1, t);
		jf_name_valid(name, &e); /* too long: its message says so */
		return jf_yerror(err, JF_EINVAL, n, path, "bad %s name: %s", what, e.msg);
	}
	memcpy(name, t, len);
	name[len] = '\0';
	if (!jf_name_valid(name, &e))
		return jf_yerror(err, JF_EINVAL, n, path, "bad %s name: %s", what, e.msg);
	memcpy(out, name, len + 1);
	return JF_OK;
}

/* The target t (the text of node n) into d. */
static enum jf_err parse_target(const struct jf_ynode *n, const char *path, const char *t,
				struct jf_dep *d, struct jf_error *err)
{
	const char *p = t[0] == '/' ? t + 1 : t;
	const char *slash = strchr(p, '/');
	if (!slash) {
		d->ref = JF_DEP_REF_NAME;
		return take_name(n, path, "group", p, strlen(p), d->name, err);
	}
	size_t head = (size_t)(slash - p);
	const char *rest = slash + 1;
	if (head == 5 && memcmp(p, "tasks", 5) == 0 && !strchr(rest, '/')) {
		d->ref = JF_DEP_REF_TASKS;
		return take_name(n, path, "batch", rest, strlen(rest), d->name, err);
	}
	if (head == 6 && memcmp(p, "queues", 6) == 0) {
		const char *s2 = strchr(rest, '/');
		if (s2 && strncmp(s2 + 1, "groups/", 7) == 0 && !strchr(s2 + 8, '/')) {
			d->ref = JF_DEP_REF_QUEUE;
			enum jf_err rc = take_name(n, path, "queue", rest, (size_t)(s2 - rest),
						   d->queue, err);
			if (rc)
				return rc;
			return take_name(n, path, "group", s2 + 8, strlen(s2 + 8), d->name, err);
		}
	}
	return jf_yerror(err, JF_EINVAL, n, path, "\"%.80s\" names no group: write %s", t, shapes);
}

static enum jf_err parse_when(const struct jf_ynode *n, const char *path, enum jf_dep_when *w,
			      struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	if (strcmp(t, "succeeded") == 0)
		*w = JF_DEP_SUCCEEDED;
	else if (strcmp(t, "failed") == 0)
		*w = JF_DEP_FAILED;
	else if (strcmp(t, "finished") == 0)
		*w = JF_DEP_FINISHED;
	else
		return jf_yerror(err, JF_EINVAL, n, path,
				 "must be succeeded, failed or finished, got \"%.64s\"", t);
	return JF_OK;
}

static enum jf_err parse_entry(const struct jf_ynode *e, const char *path, struct jf_dep *d,
			       struct jf_error *err)
{
	static const char *const keys[] = { "group", "when", "each", NULL };
	char kp[JF_YPATH_MAX];
	const char *t;
	enum jf_err rc;
	memset(d, 0, sizeof(*d));
	d->when = JF_DEP_SUCCEEDED;
	d->line = e->line;
	if (e->type == JF_Y_SCALAR) {
		if ((rc = jf_ynode_text(e, path, 0, &t, err)))
			return rc;
		return parse_target(e, path, t, d, err);
	}
	if (e->type != JF_Y_MAP)
		return jf_yerror(err, JF_EINVAL, e, path,
				 "an entry is a group's name or a mapping {group: ..., when: "
				 "succeeded|failed|finished, each: false}, got %s",
				 jf_ynode_kind(e));
	if ((rc = jf_ymap_check_keys(e, path, keys, err)))
		return rc;
	const struct jf_ynode *n = jf_ymap_get(e, "group");
	jf_ypath_key(kp, sizeof(kp), path, "group");
	if (!n)
		return jf_yerror(err, JF_EINVAL, e, kp, "an entry needs group: %s", shapes);
	if ((rc = jf_ynode_text(n, kp, 0, &t, err)) || (rc = parse_target(n, kp, t, d, err)))
		return rc;
	if ((n = jf_ymap_get(e, "when"))) {
		jf_ypath_key(kp, sizeof(kp), path, "when");
		if ((rc = parse_when(n, kp, &d->when, err)))
			return rc;
	}
	if ((n = jf_ymap_get(e, "each"))) {
		jf_ypath_key(kp, sizeof(kp), path, "each");
		if ((rc = jf_ynode_bool(n, kp, &d->each, err)))
			return rc;
	}
	return JF_OK;
}

enum jf_err jf_deps_parse(const struct jf_ynode *n, const char *path, struct jf_dep **out,
			  size_t *nout, struct jf_error *err)
{
	*out = NULL;
	*nout = 0;
	if (jf_ynode_is_null(n))
		return JF_OK;
	const struct jf_ynode *const *items = (const struct jf_ynode *const *)&n;
	size_t cnt = 1;
	if (n->type == JF_Y_SEQ) {
		items = (const struct jf_ynode *const *)n->items;
		cnt = n->n;
	} else if (n->type == JF_Y_MAP) {
		return jf_yerror(err, JF_EINVAL, n, path,
				 "expected a list of entries, e.g. [prep] or [{group: prep, "
				 "when: failed}], got a mapping: put it in [ ]");
	}
	if (cnt == 0)
		return JF_OK;
	if (cnt > JF_SPEC_MAX_AFTER)
		return jf_yerror(err, JF_EINVAL, n, path, "%zu entries, more than the limit of %d",
				 cnt, JF_SPEC_MAX_AFTER);
	struct jf_dep *v = calloc(cnt, sizeof(*v));
	if (!v)
		return oom(err);
	for (size_t i = 0; i < cnt; i++) {
		char ip[JF_YPATH_MAX];
		if (n->type == JF_Y_SEQ)
			jf_ypath_index(ip, sizeof(ip), path, i);
		else
			snprintf(ip, sizeof(ip), "%s", path);
		enum jf_err rc = parse_entry(items[i], ip, &v[i], err);
		for (size_t j = 0; rc == JF_OK && j < i; j++) {
			if (v[j].ref != v[i].ref || strcmp(v[j].queue, v[i].queue) != 0 ||
			    strcmp(v[j].name, v[i].name) != 0)
				continue;
			char t[160];
			jf_dep_target(&v[i], t, sizeof(t));
			rc = jf_yerror(err, JF_EINVAL, items[i], ip,
				       "%s is named twice (also at line %d): one entry per "
				       "group",
				       t, v[j].line);
		}
		if (rc) {
			free(v);
			return rc;
		}
	}
	*out = v;
	*nout = cnt;
	return JF_OK;
}

/* ---- the cycle check ---- */

struct idset {
	int64_t *slot; /* open addressing; used[i] says whether slot[i] holds one */
	bool *used;
	size_t cap, n;
};

static size_t hash_id(int64_t id, size_t cap)
{
	uint64_t x = (uint64_t)id * UINT64_C(0x9E3779B97F4A7C15);
	return (size_t)(x >> 17) & (cap - 1);
}

/* Add id; false when it was there already.  *oom on failure. */
static bool idset_add(struct idset *s, int64_t id, bool *nomem)
{
	if (2 * (s->n + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		int64_t *slot = calloc(cap, sizeof(*slot));
		bool *used = calloc(cap, sizeof(*used));
		if (!slot || !used) {
			free(slot);
			free(used);
			*nomem = true;
			return false;
		}
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->used[i])
				continue;
			size_t h = hash_id(s->slot[i], cap);
			while (used[h])
				h = (h + 1) & (cap - 1);
			used[h] = true;
			slot[h] = s->slot[i];
		}
		free(s->slot);
		free(s->used);
		s->slot = slot;
		s->used = used;
		s->cap = cap;
	}
	size_t h = hash_id(id, s->cap);
	while (s->used[h]) {
		if (s->slot[h] == id)
			return false;
		h = (h + 1) & (s->cap - 1);
	}
	s->used[h] = true;
	s->slot[h] = id;
	s->n++;
	return true;
}

struct visit {
	int64_t id;
	ptrdiff_t parent; /* index in the walk, -1: a target of self */
};

enum jf_err jf_deps_cycle(int64_t self, const int64_t *targets, size_t n, jf_dep_edges_fn edges,
			  void *ctx, int64_t *path, size_t maxpath, size_t *npath)
{
	struct visit *walk = NULL;
	size_t nwalk = 0, cap = 0, head = 0;
	struct idset seen = { 0 };
	int64_t *buf = NULL;
	size_t bufcap = 0;
	enum jf_err rc = JF_OK;
	bool nomem = false;
	*npath = 0;

	/* room for a spec's entries: most nodes are answered at the first ask */
	if (!jf_grow(&buf, &bufcap, JF_SPEC_MAX_AFTER, sizeof(*buf)))
		return JF_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!jf_grow(&walk, &cap, nwalk + 1, sizeof(*walk))) {
			rc = JF_ENOMEM;
			goto out;
		}
		walk[nwalk++] = (struct visit){ targets[i], -1 };
	}
	while (head < nwalk) {
		size_t at = head++;
		int64_t id = walk[at].id;
		if (id == self) {
			/* self, then the chain from a target down to here (self) */
			size_t len = 0;
			for (ptrdiff_t k = (ptrdiff_t)at; k >= 0; k = walk[k].parent)
				len++;
			size_t w = len + 1 < maxpath ? len + 1 : maxpath;
			if (w > 0)
				path[0] = self;
			size_t pos = len; /* the chain's nodes go to path[len] .. path[1] */
			for (ptrdiff_t k = (ptrdiff_t)at; k >= 0; k = walk[k].parent, pos--)
				if (pos < w)
					path[pos] = walk[k].id;
			*npath = w;
			rc = JF_EINVAL;
			goto out;
		}
		if (!idset_add(&seen, id, &nomem)) {
			if (nomem) {
				rc = JF_ENOMEM;
				goto out;
			}
			continue;
		}
		size_t got = edges(ctx, id, buf, bufcap);
		if (got > bufcap) {
			size_t want = got;
			if (!jf_grow(&buf, &bufcap, want, sizeof(*buf))) {
				rc = JF_ENOMEM;
				goto out;
			}
			got = edges(ctx, id, buf, bufcap);
			if (got > bufcap)
				got = bufcap;
		}
		if (!jf_grow(&walk, &cap, nwalk + got, sizeof(*walk))) {
			rc = JF_ENOMEM;
			goto out;
		}
		for (size_t j = 0; j < got; j++)
			walk[nwalk++] = (struct visit){ buf[j], (ptrdiff_t)at };
	}
out:
	free(walk);
	free(seen.slot);
	free(seen.used);
	free(buf);
	return rc;
}
