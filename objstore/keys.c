/*
 * keys.c - object keys as mirror paths (keys.h).
 *
 * DESIGN.  The check walks the remainder once, component by component, and
 * refuses at the first fault, so the reason names the first thing wrong.
 * Nothing is copied: the path is a pointer into the key, which is what
 * every caller stores anyway.
 */
#include "objstore/keys.h"

#include <string.h>

enum jf_err jf_key_prefix_norm(const char *prefix, char *out, size_t n, struct jf_error *err)
{
	size_t len = prefix ? strlen(prefix) : 0;
	if (n == 0)
		return jf_error_set(err, JF_EINVAL, 0, "prefix: no room");
	out[0] = '\0';
	if (len == 0)
		return JF_OK;
	if (prefix[0] == '/')
		return jf_error_set(err, JF_EINVAL, 0,
				    "prefix must not start with '/' (S3 keys are relative)");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)prefix[i];
		if (c < 0x20 || c == 0x7f)
			return jf_error_set(err, JF_EINVAL, 0,
					    "prefix holds a control character at byte %zu", i);
	}
	bool slash = prefix[len - 1] == '/';
	size_t want = len + (slash ? 0 : 1);
	if (want > JF_KEY_PREFIX_MAX || want + 1 > n)
		return jf_error_set(err, JF_EFBIG, 0, "prefix is longer than %d bytes",
				    JF_KEY_PREFIX_MAX);
	memcpy(out, prefix, len);
	if (!slash)
		out[len++] = '/';
	out[len] = '\0';
	return JF_OK;
}

/* the first fault of component c (n bytes), or NULL */
static const char *component_fault(const char *c, size_t n)
{
	if (n == 0)
		return "an empty path component";
	if (n == 1 && c[0] == '.')
		return "a \".\" component";
	if (n == 2 && c[0] == '.' && c[1] == '.')
		return "a \"..\" component";
	if (n > JF_KEY_COMPONENT)
		return "a path component longer than 255 bytes";
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)c[i];
		if (ch == 0)
			return "a NUL byte";
		if (ch < 0x20 || ch == 0x7f)
			return "a control character";
	}
	return NULL;
}

enum jf_key_kind jf_key_classify(const char *prefix, const char *key, size_t len, const char **rel,
				 size_t *rel_len, const char **why)
{
	size_t pl = strlen(prefix);
	*rel = NULL;
	*rel_len = 0;
	*why = NULL;
	if (len < pl || memcmp(key, prefix, pl) != 0) {
		*why = "not under the prefix";
		return JF_KEY_UNSAFE;
	}
	const char *r = key + pl;
	size_t rl = len - pl;
	if (rl == 0 || r[rl - 1] == '/') {
		/* the prefix's own marker, or a directory marker below it; a
		 * marker with a bad path is still only a marker: nothing of it
		 * is ever written */
		return JF_KEY_DIRMARK;
	}
	if (r[0] == '/') {
		*why = "an absolute path";
		return JF_KEY_UNSAFE;
	}
	if (rl > JF_KEY_MAX) {
		*why = "a path longer than 1024 bytes";
		return JF_KEY_UNSAFE;
	}
	size_t start = 0;
	for (size_t i = 0; i <= rl; i++) {
		if (i < rl && r[i] != '/')
			continue;
		const char *f = component_fault(r + start, i - start);
		if (f) {
			*why = f;
			return JF_KEY_UNSAFE;
		}
		start = i + 1;
	}
	*rel = r;
	*rel_len = rl;
	return JF_KEY_FILE;
}

bool jf_key_is_parent(const char *a, size_t alen, const char *b, size_t blen)
{
	return blen > alen + 1 && memcmp(a, b, alen) == 0 && b[alen] == '/';
}

int jf_key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;
	if (c)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}
