/*
 * yamltree.h - one YAML document as a small tree, with lines and limits.
 *
 * jf_ydoc_parse() reads exactly one document with libyaml's event API into
 * a tree of struct jf_ynode; every node knows the 1-based line it starts
 * on.  An alias points at its anchor's node (shared, not copied), but each
 * use counts the anchor's whole subtree toward JF_SPEC_MAX_NODES, and its
 * scalars' bytes toward JF_SPEC_MAX_EXPANDED, so an alias bomb, of many
 * nodes or of a few long strings, fails as soon as it would expand past
 * the limit.  Nesting
 * deeper than JF_SPEC_MAX_DEPTH, a scalar longer than JF_SPEC_MAX_STRING,
 * input over JF_SPEC_MAX_BYTES, duplicate keys, keys that are not scalars,
 * merge keys ('<<'), unknown tags and a second document are errors.  A
 * reader of some other file may set its own input and node limits, and
 * refuse aliases altogether, with jf_ydoc_parse_opts().
 *
 * The document owns every node and every string; callers read nodes and
 * never change them.  Everything lives until jf_ydoc_free().
 *
 * Getters turn a node into a C value or fail with JF_EINVAL and a message
 *     line 4: key 'resources.limits.cpu': bad CPU quantity "abc"
 * whose dotted path the caller builds with jf_ypath_key()/jf_ypath_index().
 * Scalars follow YAML 1.1 loosely: true/false (any case form YAML allows)
 * are booleans, a plain 4090 where a string is expected is the string
 * "4090", a quoted "3" where an integer is expected is 3, and a float where
 * an integer is expected is refused.
 */
#ifndef JF_YAMLTREE_H
#define JF_YAMLTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define JF_YPATH_MAX 256 /* a dotted key path, truncated beyond */

enum jf_ytype { JF_Y_SCALAR, JF_Y_MAP, JF_Y_SEQ };

struct jf_ynode {
	enum jf_ytype type;
	int line;   /* 1-based */
	bool plain; /* scalar written unquoted (type is resolved) */
	bool block; /* scalar in literal | or folded > style */
	char *str;  /* scalar text, NUL-terminated; len bytes */
	size_t len;
	struct jf_ynode **items; /* seq: n items; map: key0, value0, key1, ... */
	size_t n;                /* seq: items; map: pairs */
	/* builder state, private to yamltree.c */
	size_t nitems, cap, weight, text;
	int height;
};

struct jf_ydoc;

/* Parse text (len bytes, need not be NUL-terminated).  An empty stream or
 * one holding only comments gives a document whose root is NULL. */
enum jf_err jf_ydoc_parse(const char *text, size_t len, struct jf_ydoc **out, struct jf_error *err);

/* What one parse allows; a zero limit is the spec limit of core/spec.h,
 * and jf_ydoc_parse() is jf_ydoc_parse_opts() with opts NULL. */
struct jf_yopts {
	size_t max_bytes; /* the text; longer is JF_EFBIG */
	size_t max_nodes; /* nodes once every alias is expanded */
	bool no_aliases;  /* any alias ("*name") is an error */
};
enum jf_err jf_ydoc_parse_opts(const char *text, size_t len, const struct jf_yopts *opts,
			       struct jf_ydoc **out, struct jf_error *err);
const struct jf_ynode *jf_ydoc_root(const struct jf_ydoc *doc);
void jf_ydoc_free(struct jf_ydoc *doc);

/* Text check shared with jf_spec_text_plausible(): valid UTF-8, no NUL, no
 * control characters but tab, LF, CR.  With partial, an incomplete UTF-8
 * sequence at the very end is fine.  JF_EINVAL names the line. */
enum jf_err jf_ytext_check(const char *text, size_t len, bool partial, struct jf_error *err);

/* "a mapping", "a list", "a string", "null" ... for messages. */
const char *jf_ynode_kind(const struct jf_ynode *n);
/* NULL, or a plain scalar "", "~", "null", "Null", "NULL". */
bool jf_ynode_is_null(const struct jf_ynode *n);

/* The value under key, or NULL when the key is absent or its value null. */
const struct jf_ynode *jf_ymap_get(const struct jf_ynode *map, const char *key);
/* The key node itself (its line), or NULL when absent; null values count. */
const struct jf_ynode *jf_ymap_find_key(const struct jf_ynode *map, const char *key);
/* Pair i of a mapping, i < map->n. */
const struct jf_ynode *jf_ymap_key(const struct jf_ynode *map, size_t i);
const struct jf_ynode *jf_ymap_value(const struct jf_ynode *map, size_t i);

/* buf = parent.key or parent[i] (buf may be parent); truncates safely. */
void jf_ypath_key(char *buf, size_t n, const char *parent, const char *key);
void jf_ypath_index(char *buf, size_t n, const char *parent, size_t i);

/* Fill err with "line N: key 'path': <fmt>" (N from the node, path may be
 * empty for the top level) and return code. */
enum jf_err jf_yerror(struct jf_error *err, enum jf_err code, const struct jf_ynode *n,
		      const char *path, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* n is of type t, else "expected a mapping, got a list". */
enum jf_err jf_ynode_expect(const struct jf_ynode *n, enum jf_ytype t, const char *path,
			    struct jf_error *err);
/* Every key of map is in known (NULL-terminated), else "unknown key". */
enum jf_err jf_ymap_check_keys(const struct jf_ynode *map, const char *path,
			       const char *const *known, struct jf_error *err);

/* A decimal integer in [lo, hi], plain or quoted. */
enum jf_err jf_ynode_int(const struct jf_ynode *n, const char *path, int64_t lo, int64_t hi,
			 int64_t *out, struct jf_error *err);
/* Plain true/false. */
enum jf_err jf_ynode_bool(const struct jf_ynode *n, const char *path, bool *out,
			  struct jf_error *err);

#define JF_YSTR_STRICT  1u /* refuse plain numbers, booleans and null */
#define JF_YLIST_SCALAR 2u /* strlist: a single scalar is a list of one */

/* A scalar's text, borrowed from the document (no NUL inside). */
enum jf_err jf_ynode_text(const struct jf_ynode *n, const char *path, unsigned flags,
			  const char **out, struct jf_error *err);
/* The same as a malloc'd copy the caller frees. */
enum jf_err jf_ynode_str(const struct jf_ynode *n, const char *path, unsigned flags, char **out,
			 struct jf_error *err);
/* A list of at most max strings as a malloc'd NULL-terminated array
 * (*out NULL and *nout 0 for an empty list); the caller frees each string
 * and the array.  On error nothing is left allocated. */
enum jf_err jf_ynode_strlist(const struct jf_ynode *n, const char *path, unsigned flags, size_t max,
			     char ***out, size_t *nout, struct jf_error *err);

#endif
