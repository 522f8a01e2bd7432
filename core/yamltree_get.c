/*
 * yamltree_get.c - reading a struct jf_ynode tree: lookups and typed getters.
 *
 * The tree is never changed here.  Every getter that fails fills the error
 * as "line N: key 'dotted.path': what is wrong", with the line of the node
 * and the path its caller built, so every message names both.  Scalar
 * typing is YAML 1.1-ish: plain true/false are booleans, plain decimal
 * digits are numbers, a quoted "3" still reads as an integer, a plain 4090
 * still reads as a string unless JF_YSTR_STRICT.
 */
#include "core/yamltree.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool text_is_bool(const char *s)
{
	static const char *const b[] = { "true", "True", "TRUE", "false", "False", "FALSE", NULL };
	for (const char *const *p = b; *p; p++)
		if (strcmp(s, *p) == 0)
			return true;
	return false;
}

/* YAML 1.1 booleans a Kubernetes parser would also take. */
static bool text_is_bool11(const char *s)
{
	static const char *const b[] = { "yes", "Yes", "YES", "no",  "No",  "NO", "on",
					 "On",  "ON",  "off", "Off", "OFF", NULL };
	for (const char *const *p = b; *p; p++)
		if (strcmp(s, *p) == 0)
			return true;
	return text_is_bool(s);
}

static bool text_is_int(const char *s)
{
	if (*s == '+' || *s == '-')
		s++;
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool text_is_float(const char *s)
{
	static const char *const special[] = {
		".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN", NULL
	};
	if (*s == '+' || *s == '-')
		s++;
	for (const char *const *p = special; *p; p++)
		if (strcmp(s, *p) == 0)
			return true;
	bool digits = false;
	while (*s >= '0' && *s <= '9')
		s++, digits = true;
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			digits = true;
	if (!digits)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

bool jf_ynode_is_null(const struct jf_ynode *n)
{
	if (!n)
		return true;
	if (n->type != JF_Y_SCALAR || !n->plain)
		return false;
	return n->len == 0 || strcmp(n->str, "~") == 0 || strcmp(n->str, "null") == 0 ||
	       strcmp(n->str, "Null") == 0 || strcmp(n->str, "NULL") == 0;
}

const char *jf_ynode_kind(const struct jf_ynode *n)
{
	if (!n)
		return "nothing";
	if (n->type == JF_Y_MAP)
		return "a mapping";
	if (n->type == JF_Y_SEQ)
		return "a list";
	if (jf_ynode_is_null(n))
		return "null";
	if (n->plain && text_is_bool11(n->str))
		return "a boolean";
	if (n->plain && (text_is_int(n->str) || text_is_float(n->str)))
		return "a number";
	return "a string";
}

static size_t find_pair(const struct jf_ynode *map, const char *key)
{
	if (!map || map->type != JF_Y_MAP)
		return SIZE_MAX;
	size_t klen = strlen(key);
	for (size_t i = 0; i < map->n; i++) {
		const struct jf_ynode *k = map->items[2 * i];
		if (k->len == klen && memcmp(k->str, key, klen) == 0)
			return i;
	}
	return SIZE_MAX;
}

const struct jf_ynode *jf_ymap_get(const struct jf_ynode *map, const char *key)
{
	size_t i = find_pair(map, key);
	if (i == SIZE_MAX || jf_ynode_is_null(map->items[2 * i + 1]))
		return NULL;
	return map->items[2 * i + 1];
}

const struct jf_ynode *jf_ymap_find_key(const struct jf_ynode *map, const char *key)
{
	size_t i = find_pair(map, key);
	return i == SIZE_MAX ? NULL : map->items[2 * i];
}

const struct jf_ynode *jf_ymap_key(const struct jf_ynode *map, size_t i)
{
	return map->items[2 * i];
}

const struct jf_ynode *jf_ymap_value(const struct jf_ynode *map, size_t i)
{
	return map->items[2 * i + 1];
}

void jf_ypath_key(char *buf, size_t n, const char *parent, const char *key)
{
	char tmp[JF_YPATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s%s%s", parent, *parent ? "." : "", key);
	snprintf(buf, n, "%s", tmp);
}

void jf_ypath_index(char *buf, size_t n, const char *parent, size_t i)
{
	char tmp[JF_YPATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s[%zu]", parent, i);
	snprintf(buf, n, "%s", tmp);
}

enum jf_err jf_yerror(struct jf_error *err, enum jf_err code, const struct jf_ynode *n,
		      const char *path, const char *fmt, ...)
{
	char msg[JF_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	int line = n ? n->line : 0;
	if (path && *path)
		return jf_error_set(err, code, line, "key '%s': %s", path, msg);
	return jf_error_set(err, code, line, "%s", msg);
}

enum jf_err jf_ynode_expect(const struct jf_ynode *n, enum jf_ytype t, const char *path,
			    struct jf_error *err)
{
	if (n && n->type == t)
		return JF_OK;
	static const char *const want[] = {
		[JF_Y_SCALAR] = "a value",
		[JF_Y_MAP] = "a mapping",
		[JF_Y_SEQ] = "a list",
	};
	return jf_yerror(err, JF_EINVAL, n, path, "expected %s, got %s", want[t], jf_ynode_kind(n));
}

enum jf_err jf_ymap_check_keys(const struct jf_ynode *map, const char *path,
			       const char *const *known, struct jf_error *err)
{
	for (size_t i = 0; i < map->n; i++) {
		const struct jf_ynode *k = map->items[2 * i];
		const char *const *p;
		for (p = known; *p; p++)
			if (strlen(*p) == k->len && memcmp(*p, k->str, k->len) == 0)
				break;
		if (!*p) {
			char kp[JF_YPATH_MAX];
			jf_ypath_key(kp, sizeof(kp), path, k->str);
			return jf_error_set(err, JF_EINVAL, k->line, "unknown key '%s'", kp);
		}
	}
	return JF_OK;
}

static enum jf_err range_error(const struct jf_ynode *n, const char *path, int64_t lo, int64_t hi,
			       struct jf_error *err)
{
	if (hi == INT64_MAX)
		return jf_yerror(err, JF_EINVAL, n, path,
				 "%.64s is out of range: must be at least %lld", n->str,
				 (long long)lo);
	return jf_yerror(err, JF_EINVAL, n, path, "%.64s is out of range: must be %lld to %lld",
			 n->str, (long long)lo, (long long)hi);
}

enum jf_err jf_ynode_int(const struct jf_ynode *n, const char *path, int64_t lo, int64_t hi,
			 int64_t *out, struct jf_error *err)
{
	if (!n || n->type != JF_Y_SCALAR || jf_ynode_is_null(n) ||
	    (n->plain && text_is_bool11(n->str)))
		return jf_yerror(err, JF_EINVAL, n, path, "expected an integer, got %s",
				 jf_ynode_kind(n));
	if (!text_is_int(n->str)) {
		if (text_is_float(n->str))
			return jf_yerror(err, JF_EINVAL, n, path,
					 "expected a whole number, got %.64s", n->str);
		return jf_yerror(err, JF_EINVAL, n, path, "expected an integer, got \"%.64s\"",
				 n->str);
	}
	errno = 0;
	long long v = strtoll(n->str, NULL, 10);
	if (errno == ERANGE || v < lo || v > hi)
		return range_error(n, path, lo, hi, err);
	*out = v;
	return JF_OK;
}

enum jf_err jf_ynode_bool(const struct jf_ynode *n, const char *path, bool *out,
			  struct jf_error *err)
{
	if (n && n->type == JF_Y_SCALAR && n->plain && text_is_bool(n->str)) {
		*out = n->str[0] == 't' || n->str[0] == 'T';
		return JF_OK;
	}
	if (n && n->type == JF_Y_SCALAR && !jf_ynode_is_null(n))
		return jf_yerror(err, JF_EINVAL, n, path, "expected true or false, got %s\"%.64s\"",
				 n->plain ? "" : "the string ", n->str);
	return jf_yerror(err, JF_EINVAL, n, path, "expected true or false, got %s",
			 jf_ynode_kind(n));
}

enum jf_err jf_ynode_text(const struct jf_ynode *n, const char *path, unsigned flags,
			  const char **out, struct jf_error *err)
{
	if (!n || n->type != JF_Y_SCALAR || jf_ynode_is_null(n))
		return jf_yerror(err, JF_EINVAL, n, path, "expected a string, got %s",
				 jf_ynode_kind(n));
	if ((flags & JF_YSTR_STRICT) && n->plain &&
	    (text_is_bool11(n->str) || text_is_int(n->str) || text_is_float(n->str)))
		return jf_yerror(err, JF_EINVAL, n, path,
				 "expected a string, got %s: quote it (\"%.64s\")",
				 jf_ynode_kind(n), n->str);
	if (memchr(n->str, '\0', n->len))
		return jf_yerror(err, JF_EINVAL, n, path, "a NUL character in the value");
	*out = n->str;
	return JF_OK;
}

enum jf_err jf_ynode_str(const struct jf_ynode *n, const char *path, unsigned flags, char **out,
			 struct jf_error *err)
{
	const char *s;
	enum jf_err rc = jf_ynode_text(n, path, flags, &s, err);
	if (rc)
		return rc;
	*out = strdup(s);
	if (!*out)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	return JF_OK;
}

enum jf_err jf_ynode_strlist(const struct jf_ynode *n, const char *path, unsigned flags, size_t max,
			     char ***out, size_t *nout, struct jf_error *err)
{
	*out = NULL;
	*nout = 0;
	bool one = n && n->type == JF_Y_SCALAR && (flags & JF_YLIST_SCALAR);
	if (!one && (!n || n->type != JF_Y_SEQ))
		return jf_yerror(err, JF_EINVAL, n, path, "expected a list of strings, got %s",
				 jf_ynode_kind(n));
	size_t count = one ? 1 : n->n;
	if (count > max)
		return jf_yerror(err, JF_EINVAL, n, path, "more than %zu entries", max);
	if (count == 0)
		return JF_OK;
	char **arr = calloc(count + 1, sizeof(*arr));
	if (!arr)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	enum jf_err rc = JF_OK;
	for (size_t i = 0; i < count && !rc; i++) {
		char ip[JF_YPATH_MAX];
		if (one)
			snprintf(ip, sizeof(ip), "%s", path);
		else
			jf_ypath_index(ip, sizeof(ip), path, i);
		rc = jf_ynode_str(one ? n : n->items[i], ip, flags & JF_YSTR_STRICT, &arr[i], err);
	}
	if (rc) {
		for (size_t i = 0; i < count; i++)
			free(arr[i]);
		free(arr);
		return rc;
	}
	*out = arr;
	*nout = count;
	return JF_OK;
}
