/*
 * subst.c - ${VAR} substitution on the raw text of a Kubernetes Job spec.
 *
 * Text substitution, as the product does it, before any YAML parsing:
 * "${NAME}" becomes the variable's value, "$$" a literal "$", any other "$"
 * stays.  A name is [A-Za-z_][A-Za-z0-9_]* and must close on its line.
 * Unknown variables, and known ones not available here (NULL member), are
 * errors naming the variable and its line.  A value with a line break or a
 * control character is refused: it would change the YAML's structure and
 * shift every line number after it.  The result is capped at
 * JF_SPEC_MAX_BYTES, like any spec; the error names the line where the
 * substituted text passed it.
 */
#include "core/spec.h"

#include <stdlib.h>
#include <string.h>

struct sbuf {
	char *p;
	size_t len, cap;
};

/* false when the result would pass the size limit or memory runs out;
 * *code says which */
static bool sbuf_add(struct sbuf *b, const char *s, size_t n, enum jf_err *code)
{
	if (b->len + n > JF_SPEC_MAX_BYTES) {
		*code = JF_EFBIG;
		return false;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			*code = JF_ENOMEM;
			return false;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return true;
}

static bool var_name_ok(const char *s, size_t n)
{
	if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* The value of a known variable; *known tells an unknown name apart from a
 * known one that has no value here. */
static const char *lookup(const struct jf_subst *subst, const char *name, size_t n, bool *known)
{
	static const char *const names[] = { "JOB_NAME", "QUEUE", "GROUP" };
	for (size_t i = 0; i < 3; i++) {
		if (strlen(names[i]) != n || memcmp(names[i], name, n) != 0)
			continue;
		*known = true;
		if (!subst)
			return NULL;
		return i == 0 ? subst->job_name : i == 1 ? subst->queue : subst->group;
	}
	*known = false;
	return NULL;
}

static bool value_ok(const char *v)
{
	for (; *v; v++)
		if ((unsigned char)*v < 0x20 || *v == 0x7f)
			return false;
	return true;
}

char *jf_subst_apply(const char *text, size_t len, const struct jf_subst *subst,
		     struct jf_error *err)
{
	struct sbuf b = { 0 };
	enum jf_err code = JF_OK;
	int line = 1;
	size_t i = 0, lit = 0; /* text[lit, i) is literal and not yet copied */

	if (!text)
		text = "";
	if (!sbuf_add(&b, "", 0, &code))
		goto fail;
	while (i < len) {
		if (text[i] == '\n') {
			line++;
			i++;
			continue;
		}
		if (text[i] != '$' || i + 1 >= len || (text[i + 1] != '$' && text[i + 1] != '{')) {
			i++;
			continue;
		}
		if (!sbuf_add(&b, text + lit, i - lit, &code))
			goto fail;
		if (text[i + 1] == '$') {
			if (!sbuf_add(&b, "$", 1, &code))
				goto fail;
			i += 2;
			lit = i;
			continue;
		}
		const char *name = text + i + 2;
		size_t n = 0;
		while (i + 2 + n < len && name[n] != '}' && name[n] != '\n')
			n++;
		if (i + 2 + n >= len || name[n] != '}') {
			jf_error_set(err, JF_EINVAL, line,
				     "unterminated '${': write ${NAME}, or $$ for a literal '$'");
			free(b.p);
			return NULL;
		}
		if (!var_name_ok(name, n)) {
			jf_error_set(err, JF_EINVAL, line, "bad variable name '${%.*s}'",
				     (int)(n > 64 ? 64 : n), name);
			free(b.p);
			return NULL;
		}
		bool known;
		const char *v = lookup(subst, name, n, &known);
		if (!v) {
			if (known)
				jf_error_set(err, JF_EINVAL, line,
					     "variable ${%.*s} has no value here", (int)n, name);
			else
				jf_error_set(err, JF_EINVAL, line,
					     "unknown variable ${%.*s}: the variables are "
					     "${JOB_NAME}, ${QUEUE} and ${GROUP}",
					     (int)(n > 64 ? 64 : n), name);
			free(b.p);
			return NULL;
		}
		if (!value_ok(v)) {
			jf_error_set(err, JF_EINVAL, line,
				     "variable ${%.*s} holds a line break or a control character",
				     (int)n, name);
			free(b.p);
			return NULL;
		}
		if (!sbuf_add(&b, v, strlen(v), &code))
			goto fail;
		i += 2 + n + 1;
		lit = i;
	}
	if (!sbuf_add(&b, text + lit, len - lit, &code))
		goto fail;
	return b.p;

fail:
	free(b.p);
	if (code == JF_EFBIG)
		jf_error_set(err, JF_EFBIG, line,
			     "after ${VAR} substitution the spec is more than %d bytes",
			     JF_SPEC_MAX_BYTES);
	else
		jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	return NULL;
}
