/*
 * yamltree.c - one YAML document as a tree, built from libyaml events.
 *
 * The builder keeps a stack of the collections still open.  A finished node
 * is attached to the collection on top (or becomes the root).  What holds
 * while building:
 *   - doc->expanded is the size of the document with every alias expanded:
 *     each new node adds 1 and each alias adds its anchor's weight (the
 *     expanded size of that subtree), so it never passes the node limit
 *     (JF_SPEC_MAX_NODES unless the options say otherwise);
 *     doc->text is the same for scalar bytes (a node's text: the bytes of
 *     the scalars in its expanded subtree) and never passes
 *     JF_SPEC_MAX_EXPANDED, so what a caller copies out stays bounded;
 *   - a node's height is its nesting in collections once expanded, and the
 *     open depth plus the height of what is attached stays within
 *     JF_SPEC_MAX_DEPTH;
 *   - an anchor is registered only when its node is complete, so an alias
 *     can never point into a node still being built (no cycles);
 *   - every node ever allocated is in doc->nodes, so freeing the document
 *     frees everything whatever state an error left the tree in.
 *
 * Lookups and typed getters, which only read the tree, are in
 * yamltree_get.c.
 */
#include "core/yamltree.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/spec.h"

struct anchor {
	char *name;
	struct jf_ynode *node;
};

struct jf_ydoc {
	struct jf_ynode *root;
	struct jf_ynode **nodes; /* every node, for jf_ydoc_free() */
	size_t nnodes, capnodes;
	size_t expanded;
	size_t text;            /* scalar bytes, aliases expanded */
	struct anchor *anchors; /* open addressing, capanchors is 2^k */
	size_t nanchors, capanchors;
};

struct frame {
	struct jf_ynode *node;
	char *anchor; /* registered when the node ends */
};

struct builder {
	struct jf_ydoc *doc;
	struct frame stack[JF_SPEC_MAX_DEPTH];
	size_t depth;
	int ndocs;
	size_t max_nodes;
	bool no_aliases;
	struct jf_error *err;
};

#define TAG_PREFIX "tag:yaml.org,2002:"

/* ---- document and nodes ---- */

void jf_ydoc_free(struct jf_ydoc *doc)
{
	if (!doc)
		return;
	for (size_t i = 0; i < doc->nnodes; i++) {
		free(doc->nodes[i]->str);
		free(doc->nodes[i]->items);
		free(doc->nodes[i]);
	}
	free(doc->nodes);
	for (size_t i = 0; i < doc->capanchors; i++)
		free(doc->anchors[i].name);
	free(doc->anchors);
	free(doc);
}

const struct jf_ynode *jf_ydoc_root(const struct jf_ydoc *doc)
{
	return doc ? doc->root : NULL;
}

/* The dotted path of the node about to be attached at stack depth d. */
static void stack_path(const struct builder *b, size_t d, char *buf, size_t n)
{
	buf[0] = '\0';
	for (size_t i = 0; i < d && i < b->depth; i++) {
		const struct jf_ynode *c = b->stack[i].node;
		if (c->type == JF_Y_SEQ)
			jf_ypath_index(buf, n, buf, c->nitems);
		else if (c->nitems % 2 == 1)
			jf_ypath_key(buf, n, buf, c->items[c->nitems - 1]->str);
	}
}

static enum jf_err berror(struct builder *b, enum jf_err code, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* "line N: key 'a.b': <msg>", the path taken from the stack. */
static enum jf_err berror(struct builder *b, enum jf_err code, int line, const char *fmt, ...)
{
	char path[JF_YPATH_MAX], msg[JF_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	stack_path(b, b->depth, path, sizeof(path));
	if (path[0])
		return jf_error_set(b->err, code, line, "key '%s': %s", path, msg);
	return jf_error_set(b->err, code, line, "%s", msg);
}

static enum jf_err too_big(struct builder *b, int line)
{
	return berror(b, JF_EINVAL, line,
		      "the document expands to more than %zu nodes once aliases are "
		      "resolved (an alias bomb?)",
		      b->max_nodes);
}

static enum jf_err too_much_text(struct builder *b, int line)
{
	return berror(b, JF_EINVAL, line,
		      "the document expands to more than %d bytes of text once aliases "
		      "are resolved (an alias bomb?)",
		      JF_SPEC_MAX_EXPANDED);
}

static enum jf_err new_node(struct builder *b, enum jf_ytype type, int line, struct jf_ynode **out)
{
	struct jf_ydoc *doc = b->doc;
	if (doc->expanded + 1 > b->max_nodes)
		return too_big(b, line);
	if (doc->nnodes == doc->capnodes) {
		size_t cap = doc->capnodes ? doc->capnodes * 2 : 64;
		struct jf_ynode **p = realloc(doc->nodes, cap * sizeof(*p));
		if (!p)
			return jf_error_set(b->err, JF_ENOMEM, 0, "out of memory");
		doc->nodes = p;
		doc->capnodes = cap;
	}
	struct jf_ynode *node = calloc(1, sizeof(*node));
	if (!node)
		return jf_error_set(b->err, JF_ENOMEM, 0, "out of memory");
	node->type = type;
	node->line = line;
	node->weight = 1;
	node->height = type == JF_Y_SCALAR ? 0 : 1;
	doc->nodes[doc->nnodes++] = node;
	doc->expanded++;
	*out = node;
	return JF_OK;
}

/* ---- anchors: a small open-addressing hash table ---- */

static size_t hash_str(const char *s)
{
	size_t h = 14695981039346656037ull & SIZE_MAX;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * (1099511628211ull & SIZE_MAX);
	return h;
}

static struct anchor *anchor_slot(struct anchor *tab, size_t cap, const char *name)
{
	size_t i = hash_str(name) & (cap - 1);
	while (tab[i].name && strcmp(tab[i].name, name) != 0)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static struct jf_ynode *anchor_get(const struct jf_ydoc *doc, const char *name)
{
	if (!doc->capanchors)
		return NULL;
	struct anchor *a = anchor_slot(doc->anchors, doc->capanchors, name);
	return a->name ? a->node : NULL;
}

/* Takes ownership of name, whatever happens.  A redefined anchor names the
 * newer node from here on, as YAML says. */
static enum jf_err anchor_set(struct builder *b, char *name, struct jf_ynode *node)
{
	struct jf_ydoc *doc = b->doc;
	if ((doc->nanchors + 1) * 2 > doc->capanchors) {
		size_t cap = doc->capanchors ? doc->capanchors * 2 : 16;
		struct anchor *tab = calloc(cap, sizeof(*tab));
		if (!tab) {
			free(name);
			return jf_error_set(b->err, JF_ENOMEM, 0, "out of memory");
		}
		for (size_t i = 0; i < doc->capanchors; i++)
			if (doc->anchors[i].name)
				*anchor_slot(tab, cap, doc->anchors[i].name) = doc->anchors[i];
		free(doc->anchors);
		doc->anchors = tab;
		doc->capanchors = cap;
	}
	struct anchor *a = anchor_slot(doc->anchors, doc->capanchors, name);
	if (a->name) {
		free(name);
	} else {
		a->name = name;
		doc->nanchors++;
	}
	a->node = node;
	return JF_OK;
}

/* ---- building ---- */

static enum jf_err attach(struct builder *b, struct jf_ynode *child, int line)
{
	if (b->depth == 0) {
		b->doc->root = child;
		return JF_OK;
	}
	struct jf_ynode *parent = b->stack[b->depth - 1].node;
	if (b->depth + (size_t)child->height > JF_SPEC_MAX_DEPTH)
		return berror(b, JF_EINVAL, line, "nested deeper than %d levels",
			      JF_SPEC_MAX_DEPTH);
	if (parent->type == JF_Y_MAP && parent->nitems % 2 == 0) {
		if (child->type != JF_Y_SCALAR)
			return berror(b, JF_EINVAL, line, "a key must be a plain string, not %s",
				      jf_ynode_kind(child));
		if (child->plain && strcmp(child->str, "<<") == 0)
			return berror(b, JF_EINVAL, line,
				      "merge keys ('<<') are not supported: write the keys out");
	}
	if (parent->nitems == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 8;
		struct jf_ynode **p = realloc(parent->items, cap * sizeof(*p));
		if (!p)
			return jf_error_set(b->err, JF_ENOMEM, 0, "out of memory");
		parent->items = p;
		parent->cap = cap;
	}
	parent->items[parent->nitems++] = child;
	parent->n = parent->type == JF_Y_MAP ? parent->nitems / 2 : parent->nitems;
	parent->weight += child->weight;
	parent->text += child->text;
	if (child->height + 1 > parent->height)
		parent->height = child->height + 1;
	return JF_OK;
}

/* Scalars: an explicit str tag (or "!") makes a string; the core schema
 * tags leave type resolution to the getters; anything else is refused. */
static enum jf_err check_tag(struct builder *b, const yaml_char_t *tag, int line, bool scalar,
			     bool *plain)
{
	if (!tag)
		return JF_OK;
	const char *t = (const char *)tag;
	if (scalar && (strcmp(t, "!") == 0 || strcmp(t, TAG_PREFIX "str") == 0)) {
		*plain = false;
		return JF_OK;
	}
	static const char *const scalar_tags[] = { "int", "float", "bool", "null", NULL };
	static const char *const coll_tags[] = { "map", "seq", NULL };
	const char *const *ok = scalar ? scalar_tags : coll_tags;
	if (strncmp(t, TAG_PREFIX, strlen(TAG_PREFIX)) == 0)
		for (; *ok; ok++)
			if (strcmp(t + strlen(TAG_PREFIX), *ok) == 0) {
				if (scalar)
					*plain = true;
				return JF_OK;
			}
	return berror(b, JF_EINVAL, line, "unsupported YAML tag '%.64s'", t);
}

static enum jf_err dup_anchor(struct builder *b, const yaml_char_t *a, char **out)
{
	*out = NULL;
	if (!a)
		return JF_OK;
	*out = strdup((const char *)a);
	if (!*out)
		return jf_error_set(b->err, JF_ENOMEM, 0, "out of memory");
	return JF_OK;
}

static enum jf_err on_scalar(struct builder *b, const yaml_event_t *ev)
{
	int line = (int)ev->start_mark.line + 1;
	size_t len = ev->data.scalar.length;
	if (len > JF_SPEC_MAX_STRING)
		return berror(b, JF_EINVAL, line, "a value longer than %d bytes",
			      JF_SPEC_MAX_STRING);
	bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	enum jf_err rc = check_tag(b, ev->data.scalar.tag, line, true, &plain);
	if (rc)
		return rc;
	if (b->doc->text + len > JF_SPEC_MAX_EXPANDED)
		return too_much_text(b, line);
	struct jf_ynode *n;
	if ((rc = new_node(b, JF_Y_SCALAR, line, &n)))
		return rc;
	b->doc->text += len;
	n->text = len;
	n->str = malloc(len + 1);
	if (!n->str)
		return jf_error_set(b->err, JF_ENOMEM, 0, "out of memory");
	memcpy(n->str, ev->data.scalar.value, len);
	n->str[len] = '\0';
	n->len = len;
	n->plain = plain;
	n->block = ev->data.scalar.style == YAML_LITERAL_SCALAR_STYLE ||
		   ev->data.scalar.style == YAML_FOLDED_SCALAR_STYLE;
	char *anchor;
	if ((rc = dup_anchor(b, ev->data.scalar.anchor, &anchor)))
		return rc;
	if (anchor && (rc = anchor_set(b, anchor, n)))
		return rc;
	return attach(b, n, line);
}

static enum jf_err on_start(struct builder *b, const yaml_event_t *ev, enum jf_ytype type)
{
	int line = (int)ev->start_mark.line + 1;
	const yaml_char_t *tag, *anchor;
	if (type == JF_Y_MAP) {
		tag = ev->data.mapping_start.tag;
		anchor = ev->data.mapping_start.anchor;
	} else {
		tag = ev->data.sequence_start.tag;
		anchor = ev->data.sequence_start.anchor;
	}
	if (b->depth >= JF_SPEC_MAX_DEPTH)
		return berror(b, JF_EINVAL, line, "nested deeper than %d levels",
			      JF_SPEC_MAX_DEPTH);
	if (b->depth > 0) {
		const struct jf_ynode *p = b->stack[b->depth - 1].node;
		if (p->type == JF_Y_MAP && p->nitems % 2 == 0)
			return berror(b, JF_EINVAL, line, "a key must be a plain string, not %s",
				      type == JF_Y_MAP ? "a mapping" : "a list");
	}
	bool plain = false;
	enum jf_err rc = check_tag(b, tag, line, false, &plain);
	if (rc)
		return rc;
	struct jf_ynode *n;
	if ((rc = new_node(b, type, line, &n)))
		return rc;
	char *a;
	if ((rc = dup_anchor(b, anchor, &a)))
		return rc;
	b->stack[b->depth].node = n;
	b->stack[b->depth].anchor = a;
	b->depth++;
	return JF_OK;
}

struct keyref {
	const struct jf_ynode *key;
	size_t idx;
};

static int keyref_cmp(const void *pa, const void *pb)
{
	const struct keyref *a = pa, *b = pb;
	if (a->key->len != b->key->len)
		return a->key->len < b->key->len ? -1 : 1;
	int c = memcmp(a->key->str, b->key->str, a->key->len);
	if (c)
		return c;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static bool same_key(const struct keyref *a, const struct keyref *b)
{
	return a->key->len == b->key->len && memcmp(a->key->str, b->key->str, a->key->len) == 0;
}

/* Sort the keys, then report the duplicate whose second use comes first. */
static enum jf_err check_dups(struct builder *b, const struct jf_ynode *map)
{
	if (map->n < 2)
		return JF_OK;
	struct keyref *refs = malloc(map->n * sizeof(*refs));
	if (!refs)
		return jf_error_set(b->err, JF_ENOMEM, 0, "out of memory");
	for (size_t i = 0; i < map->n; i++) {
		refs[i].key = map->items[2 * i];
		refs[i].idx = i;
	}
	qsort(refs, map->n, sizeof(*refs), keyref_cmp);
	size_t dup = SIZE_MAX, first = 0, group = 0;
	for (size_t i = 1; i < map->n; i++) {
		if (!same_key(&refs[i - 1], &refs[i])) {
			group = i;
			continue;
		}
		if (refs[i].idx < dup) {
			dup = refs[i].idx;
			first = refs[group].idx;
		}
	}
	free(refs);
	if (dup == SIZE_MAX)
		return JF_OK;
	char path[JF_YPATH_MAX];
	const struct jf_ynode *k = map->items[2 * dup];
	stack_path(b, b->depth, path, sizeof(path));
	jf_ypath_key(path, sizeof(path), path, k->str);
	return jf_error_set(b->err, JF_EINVAL, k->line, "duplicate key '%s' (first at line %d)",
			    path, map->items[2 * first]->line);
}

static enum jf_err on_end(struct builder *b, const yaml_event_t *ev)
{
	int line = (int)ev->start_mark.line + 1;
	struct frame f = b->stack[--b->depth];
	enum jf_err rc = JF_OK;
	if (f.node->type == JF_Y_MAP)
		rc = check_dups(b, f.node);
	if (rc) {
		free(f.anchor);
		return rc;
	}
	if (f.anchor && (rc = anchor_set(b, f.anchor, f.node)))
		return rc;
	return attach(b, f.node, line);
}

static enum jf_err on_alias(struct builder *b, const yaml_event_t *ev)
{
	int line = (int)ev->start_mark.line + 1;
	const char *name = (const char *)ev->data.alias.anchor;
	if (b->no_aliases)
		return berror(b, JF_EINVAL, line,
			      "YAML aliases (*name) are not allowed here: write the value out");
	struct jf_ynode *target = anchor_get(b->doc, name);
	if (!target)
		return berror(b, JF_EINVAL, line,
			      "alias '*%.64s' names no complete anchored node before it", name);
	if (b->doc->expanded + target->weight > b->max_nodes)
		return too_big(b, line);
	if (b->doc->text + target->text > JF_SPEC_MAX_EXPANDED)
		return too_much_text(b, line);
	b->doc->expanded += target->weight;
	b->doc->text += target->text;
	return attach(b, target, line);
}

static int offset_line(const char *text, size_t len, size_t off)
{
	int line = 1;
	for (size_t i = 0; i < off && i < len; i++)
		if (text[i] == '\n')
			line++;
	return line;
}

/* Does line (1-based) start with blanks that hold a tab? */
static bool indented_with_tab(const char *text, size_t len, int line)
{
	size_t i = 0;
	for (int l = 1; l < line && i < len; i++)
		if (text[i] == '\n')
			l++;
	for (; i < len && (text[i] == ' ' || text[i] == '\t'); i++)
		if (text[i] == '\t')
			return true;
	return false;
}

static enum jf_err parser_error(const yaml_parser_t *p, const char *text, size_t len, size_t skip,
				struct jf_error *err)
{
	if (p->error == YAML_MEMORY_ERROR)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory parsing YAML");
	int line = p->error == YAML_READER_ERROR ? offset_line(text, len, p->problem_offset + skip)
						 : (int)p->problem_mark.line + 1;
	const char *problem = p->problem ? p->problem : "unknown problem";
	if (p->error == YAML_SCANNER_ERROR && indented_with_tab(text, len, line))
		return jf_error_set(err, JF_EINVAL, line,
				    "YAML syntax error: a tab in the indentation; YAML "
				    "indents with spaces only");
	if (p->context)
		return jf_error_set(err, JF_EINVAL, line, "YAML syntax error: %s %s", problem,
				    p->context);
	return jf_error_set(err, JF_EINVAL, line, "YAML syntax error: %s", problem);
}

static enum jf_err on_event(struct builder *b, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++b->ndocs > 1)
			return jf_error_set(b->err, JF_EINVAL, (int)ev->start_mark.line + 1,
					    "a second YAML document: write exactly one "
					    "document (no second '---')");
		return JF_OK;
	case YAML_SCALAR_EVENT:
		return on_scalar(b, ev);
	case YAML_SEQUENCE_START_EVENT:
		return on_start(b, ev, JF_Y_SEQ);
	case YAML_MAPPING_START_EVENT:
		return on_start(b, ev, JF_Y_MAP);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return on_end(b, ev);
	case YAML_ALIAS_EVENT:
		return on_alias(b, ev);
	default:
		return JF_OK;
	}
}

enum jf_err jf_ydoc_parse(const char *text, size_t len, struct jf_ydoc **out, struct jf_error *err)
{
	return jf_ydoc_parse_opts(text, len, NULL, out, err);
}

enum jf_err jf_ydoc_parse_opts(const char *text, size_t len, const struct jf_yopts *opts,
			       struct jf_ydoc **out, struct jf_error *err)
{
	size_t max_bytes = opts && opts->max_bytes ? opts->max_bytes : JF_SPEC_MAX_BYTES;
	*out = NULL;
	if (!text)
		text = ""; /* libyaml insists on a buffer */
	if (len > max_bytes)
		return jf_error_set(err, JF_EFBIG, 0,
				    "the text is %zu bytes, more than the limit of %zu", len,
				    max_bytes);
	enum jf_err rc = jf_ytext_check(text, len, false, err);
	if (rc)
		return rc;

	struct builder b = {
		.err = err,
		.max_nodes = opts && opts->max_nodes ? opts->max_nodes : JF_SPEC_MAX_NODES,
		.no_aliases = opts && opts->no_aliases,
	};
	b.doc = calloc(1, sizeof(*b.doc));
	if (!b.doc)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p)) {
		free(b.doc);
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	/* editors on Windows start UTF-8 with a byte order mark */
	size_t skip = len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
	yaml_parser_set_input_string(&p, (const unsigned char *)text + skip, len - skip);
	yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			rc = parser_error(&p, text, len, skip, err);
			break;
		}
		bool end = ev.type == YAML_STREAM_END_EVENT;
		rc = on_event(&b, &ev);
		yaml_event_delete(&ev);
		if (rc || end)
			break;
	}
	yaml_parser_delete(&p);
	for (size_t i = 0; i < b.depth; i++)
		free(b.stack[i].anchor);
	if (rc) {
		jf_ydoc_free(b.doc);
		return rc;
	}
	*out = b.doc;
	return JF_OK;
}

/* ---- text check ---- */

enum jf_err jf_ytext_check(const char *text, size_t len, bool partial, struct jf_error *err)
{
	const unsigned char *s = (const unsigned char *)text;
	int line = 1;
	size_t i = 0;
	while (i < len) {
		unsigned c = s[i];
		if (c == '\n') {
			line++;
			i++;
			continue;
		}
		if (c < 0x80) {
			if (c == 0)
				return jf_error_set(err, JF_EINVAL, line,
						    "a NUL byte: this is not text");
			if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
				return jf_error_set(err, JF_EINVAL, line,
						    "control character 0x%02x: this is not text",
						    c);
			i++;
			continue;
		}
		size_t need;
		unsigned lo = 0x80, hi = 0xbf;
		if (c >= 0xc2 && c <= 0xdf)
			need = 1;
		else if (c == 0xe0)
			need = 2, lo = 0xa0;
		else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef)
			need = 2;
		else if (c == 0xed)
			need = 2, hi = 0x9f;
		else if (c == 0xf0)
			need = 3, lo = 0x90;
		else if (c >= 0xf1 && c <= 0xf3)
			need = 3;
		else if (c == 0xf4)
			need = 3, hi = 0x8f;
		else
			return jf_error_set(err, JF_EINVAL, line,
					    "invalid UTF-8 (byte 0x%02x): the text must be UTF-8",
					    c);
		for (size_t k = 1; k <= need; k++) {
			if (i + k >= len) {
				if (partial)
					return JF_OK;
				return jf_error_set(
					err, JF_EINVAL, line,
					"incomplete UTF-8 sequence at the end of the text");
			}
			if (s[i + k] < lo || s[i + k] > hi)
				return jf_error_set(
					err, JF_EINVAL, line,
					"invalid UTF-8 (byte 0x%02x): the text must be UTF-8",
					s[i + k]);
			lo = 0x80;
			hi = 0xbf;
		}
		i += need + 1;
	}
	return JF_OK;
}
