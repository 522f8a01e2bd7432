/*
 * yamljson.c - a YAML document as a jansson value (see yamljson.h).
 *
 * Built from libyaml's events, not its document loader: the nesting is
 * bounded as it is read (the loader has no bound and takes minutes over a
 * few MiB of "["), and an alias is the anchored value itself, shared
 * (json_incref), counted by the values it stands for.
 */
#include "runtime/yamljson.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

struct frame {
	json_t *v;      /* the array or object being filled */
	char *key;      /* an object's key waiting for its value, or NULL */
	char *anchor;   /* the container's anchor, or NULL */
	size_t made_at; /* values made before it began */
};

struct anchor {
	char *name;
	json_t *v;
	size_t values; /* what an alias of it adds */
};

struct conv {
	struct frame stack[JF_YJ_MAX_DEPTH + 1];
	size_t depth;
	struct anchor *anchors;
	size_t nanchors, cap;
	size_t made;
	json_t *root;
	char *err;
	size_t errlen;
};

static bool fail(struct conv *c, const yaml_mark_t *m, const char *what)
{
	if (c->err && c->errlen && !c->err[0])
		snprintf(c->err, c->errlen, "line %zu: %s", m->line + 1, what);
	return false;
}

/* A plain scalar's integer: decimal with an optional sign, 0x hex, 0o octal. */
static bool int_of(const char *s, json_int_t *out)
{
	int base = 10;
	const char *p = s;
	bool neg = false;
	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	if (p == s && p[0] == '0' && (p[1] == 'x' || p[1] == 'o')) {
		base = p[1] == 'x' ? 16 : 8;
		p += 2;
	}
	if (!*p)
		return false;
	for (const char *q = p; *q; q++) {
		bool ok = base == 16 ? (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f') ||
					       (*q >= 'A' && *q <= 'F')
			  : base == 8 ? *q >= '0' && *q <= '7'
				      : *q >= '0' && *q <= '9';
		if (!ok)
			return false;
	}
	errno = 0;
	char *end;
	if (neg) {
		long long v = strtoll(s, &end, 10);
		if (errno || *end)
			return false;
		*out = (json_int_t)v;
		return true;
	}
	unsigned long long u = strtoull(p, &end, base);
	if (errno || *end || u > (unsigned long long)INT64_MAX)
		return false;
	*out = (json_int_t)u;
	return true;
}

static bool real_of(const char *s, double *out)
{
	if (!strpbrk(s, ".eE") || strspn(s, "0123456789+-.eE") != strlen(s))
		return false;
	char *end;
	errno = 0;
	double d = strtod(s, &end);
	if (errno || *end || end == s)
		return false;
	*out = d;
	return true;
}

static json_t *scalar_value(const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	if (!ev->data.scalar.plain_implicit)
		return json_stringn(s, len);
	if (!len || !strcmp(s, "~") || !strcasecmp(s, "null"))
		return json_null();
	if (!strcasecmp(s, "true"))
		return json_true();
	if (!strcasecmp(s, "false"))
		return json_false();
	json_int_t i;
	double d;
	if (int_of(s, &i))
		return json_integer(i);
	if (real_of(s, &d))
		return json_real(d);
	return json_stringn(s, len);
}

static bool anchor_set(struct conv *c, const yaml_mark_t *m, const yaml_char_t *name, json_t *v,
		       size_t values)
{
	if (!name)
		return true;
	for (size_t i = 0; i < c->nanchors; i++)
		if (!strcmp(c->anchors[i].name, (const char *)name)) {
			json_decref(c->anchors[i].v);
			c->anchors[i].v = json_incref(v);
			c->anchors[i].values = values;
			return true;
		}
	if (c->nanchors == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 16;
		struct anchor *na = realloc(c->anchors, nc * sizeof(*na));
		if (!na)
			return fail(c, m, "out of memory");
		c->anchors = na;
		c->cap = nc;
	}
	char *dup = strdup((const char *)name);
	if (!dup)
		return fail(c, m, "out of memory");
	c->anchors[c->nanchors++] = (struct anchor){ dup, json_incref(v), values };
	return true;
}

/* v (a new reference, standing for `values` values) into the container
 * on top, or as the root; a scalar in an object's key place is the key */
static bool put(struct conv *c, const yaml_mark_t *m, json_t *v, size_t values, bool is_key_ok)
{
	if (!v)
		return fail(c, m, "a scalar that is not valid UTF-8 (or out of memory)");
	c->made += values;
	if (c->made > JF_YJ_MAX_NODES) {
		json_decref(v);
		return fail(c, m, "too many values (aliases expanding?)");
	}
	if (!c->depth) {
		if (c->root) {
			json_decref(v);
			return fail(c, m, "a second value at the top");
		}
		c->root = v;
		return true;
	}
	struct frame *f = &c->stack[c->depth - 1];
	if (json_is_array(f->v)) {
		if (json_array_append_new(f->v, v) < 0)
			return fail(c, m, "out of memory");
		return true;
	}
	if (!f->key) {
		if (!is_key_ok || !json_is_string(v)) {
			json_decref(v);
			return fail(c, m, "a key that is not a scalar");
		}
		const char *k = json_string_value(v);
		if (json_object_get(f->v, k)) {
			json_decref(v);
			return fail(c, m, "a key given twice");
		}
		f->key = strdup(k);
		json_decref(v);
		if (!f->key)
			return fail(c, m, "out of memory");
		return true;
	}
	int rc = json_object_set_new(f->v, f->key, v);
	free(f->key);
	f->key = NULL;
	if (rc < 0)
		return fail(c, m, "a key that is not valid UTF-8");
	return true;
}

static bool push(struct conv *c, const yaml_event_t *ev, json_t *v, const yaml_char_t *anchor)
{
	if (!v)
		return fail(c, &ev->start_mark, "out of memory");
	struct frame *top = c->depth ? &c->stack[c->depth - 1] : NULL;
	if (top && json_is_object(top->v) && !top->key) {
		json_decref(v);
		return fail(c, &ev->start_mark, "a key that is not a scalar");
	}
	if (c->depth >= JF_YJ_MAX_DEPTH) {
		json_decref(v);
		return fail(c, &ev->start_mark, "nested too deep");
	}
	char *a = anchor ? strdup((const char *)anchor) : NULL;
	if (anchor && !a) {
		json_decref(v);
		return fail(c, &ev->start_mark, "out of memory");
	}
	c->made++;
	c->stack[c->depth++] = (struct frame){ v, NULL, a, c->made };
	return true;
}

static bool pop(struct conv *c, const yaml_event_t *ev)
{
	struct frame f = c->stack[--c->depth];
	size_t values = c->made - f.made_at + 1;
	bool ok = anchor_set(c, &ev->start_mark, (const yaml_char_t *)f.anchor, f.v, values);
	free(f.anchor);
	free(f.key);
	c->made = f.made_at - 1; /* put counts it again, whole */
	return ok && put(c, &ev->start_mark, f.v, values, false);
}

static bool event(struct conv *c, const yaml_event_t *ev, int *docs)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++*docs > 1)
			return fail(c, &ev->start_mark, "a second document (one is read)");
		return true;
	case YAML_SCALAR_EVENT: {
		if (strlen((const char *)ev->data.scalar.value) != ev->data.scalar.length)
			return fail(c, &ev->start_mark, "a scalar holds a NUL byte");
		json_t *v = scalar_value(ev);
		if (v && !anchor_set(c, &ev->start_mark, ev->data.scalar.anchor, v, 1)) {
			json_decref(v);
			return false;
		}
		return put(c, &ev->start_mark, v, 1, true);
	}
	case YAML_ALIAS_EVENT:
		for (size_t i = 0; i < c->nanchors; i++)
			if (!strcmp(c->anchors[i].name, (const char *)ev->data.alias.anchor))
				return put(c, &ev->start_mark, json_incref(c->anchors[i].v),
					   c->anchors[i].values, json_is_string(c->anchors[i].v));
		return fail(c, &ev->start_mark, "an alias of no anchor");
	case YAML_SEQUENCE_START_EVENT:
		return push(c, ev, json_array(), ev->data.sequence_start.anchor);
	case YAML_MAPPING_START_EVENT:
		return push(c, ev, json_object(), ev->data.mapping_start.anchor);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return pop(c, ev);
	default:
		return true;
	}
}

json_t *jf_yaml_to_json(const char *text, size_t len, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	struct conv c;
	memset(&c, 0, sizeof(c));
	c.err = err;
	c.errlen = errlen;
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p)) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return NULL;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	bool ok = true, done = false;
	int docs = 0;
	while (ok && !done) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			if (err && errlen)
				snprintf(err, errlen, "line %zu: %s", p.problem_mark.line + 1,
					 p.problem ? p.problem : "not YAML");
			ok = false;
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		ok = event(&c, &ev, &docs);
		yaml_event_delete(&ev);
	}
	if (ok && !c.root && err && errlen)
		snprintf(err, errlen, "an empty document");
	while (c.depth) {
		struct frame *f = &c.stack[--c.depth];
		json_decref(f->v);
		free(f->key);
		free(f->anchor);
	}
	for (size_t i = 0; i < c.nanchors; i++) {
		free(c.anchors[i].name);
		json_decref(c.anchors[i].v);
	}
	free(c.anchors);
	yaml_parser_delete(&p);
	if (!ok || !c.root) {
		json_decref(c.root);
		return NULL;
	}
	return c.root;
}
