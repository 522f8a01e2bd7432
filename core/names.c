/*
 * names.c - the directory name rule and "<i>-<batch>" child names.
 *
 * A valid name is 1..JF_NAME_MAX_LEN bytes of [A-Za-z0-9._-] whose first byte
 * is a letter or digit.  The check is byte-wise and locale-free: any byte
 * >= 0x80 (UTF-8) is refused like any other character outside the set.
 * Messages quote the name through jf_name_quote(), so a control character
 * or a stray byte never reaches a status file raw.
 */
#include "core/names.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUOTE_CUT 40 /* bytes of the name shown before "..." */

static bool is_alnum(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_name_char(unsigned char c)
{
	return is_alnum(c) || c == '.' || c == '_' || c == '-';
}

static bool is_shown_raw(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != '\'' && c != '\\';
}

void jf_name_quote(const char *s, char *buf, size_t n)
{
	size_t o = 0;
	size_t i;

	if (n == 0)
		return;
	buf[0] = '\0';
	if (!s)
		return;
	for (i = 0; s[i] && i < QUOTE_CUT; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[8];
		size_t tl;

		if (is_shown_raw(c)) {
			tmp[0] = (char)c;
			tl = 1;
		} else {
			tl = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		}
		if (o + tl >= n)
			break;
		memcpy(buf + o, tmp, tl);
		o += tl;
	}
	if (s[i] && o + 3 < n) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
}

/* What is wrong with byte c, for the message: "a space", "'/'", ... */
static void describe_char(unsigned char c, char *buf, size_t n)
{
	if (c == ' ')
		snprintf(buf, n, "a space");
	else if (c < 0x20 || c == 0x7f)
		snprintf(buf, n, "a control character \\x%02x", c);
	else if (c >= 0x80)
		snprintf(buf, n, "a non-ASCII byte \\x%02x", c);
	else if (c == '\'' || c == '\\')
		snprintf(buf, n, "a '\\x%02x'", c);
	else
		snprintf(buf, n, "a '%c'", c);
}

bool jf_name_valid(const char *name, struct jf_error *err)
{
	char q[JF_NAME_QUOTE_MAX];
	size_t len, i;

	if (!name || !name[0]) {
		jf_error_set(err, JF_EINVAL, 0, "name is empty");
		return false;
	}
	len = strlen(name);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		char what[40];

		if (is_name_char(c))
			continue;
		jf_name_quote(name, q, sizeof(q));
		describe_char(c, what, sizeof(what));
		jf_error_set(err, JF_EINVAL, 0, "name '%s' has %s: names may use A-Z a-z 0-9 . _ -",
			     q, what);
		return false;
	}
	if (!is_alnum((unsigned char)name[0])) {
		jf_name_quote(name, q, sizeof(q));
		jf_error_set(err, JF_EINVAL, 0, "name '%s': name must start with a letter or digit",
			     q);
		return false;
	}
	if (len > JF_NAME_MAX_LEN) {
		jf_name_quote(name, q, sizeof(q));
		jf_error_set(err, JF_EINVAL, 0, "name '%s': name is longer than %d characters", q,
			     JF_NAME_MAX_LEN);
		return false;
	}
	return true;
}

bool jf_batch_child_name(const char *dirname, const char *batch, int64_t *index)
{
	int64_t v = 0;
	const char *p = dirname;

	if (!dirname || !batch || !batch[0])
		return false;
	if (*p < '1' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		int d = *p - '0';

		if (v > (INT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (*p != '-' || strcmp(p + 1, batch) != 0)
		return false;
	if (index)
		*index = v;
	return true;
}

static bool ends_with(const char *s, size_t len, const char *tail)
{
	size_t n = strlen(tail);
	return len >= n && memcmp(s + len - n, tail, n) == 0;
}

bool jf_name_editor_temp(const char *name)
{
	static const char *const tails[] = { "~", ".tmp", ".swp", ".swx", ".bak" };
	size_t len = name ? strlen(name) : 0;
	if (len == 0 || len > 200 || strchr(name, '/'))
		return false;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	if (name[0] == '.' || strstr(name, "spec.y") || !strncmp(name, "tmp", 3))
		return true;
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++)
		if (ends_with(name, len, tails[i]))
			return true;
	/* sed -i: "sed" and six of mkstemp's letters and digits */
	if (len == 9 && !strncmp(name, "sed", 3)) {
		size_t i = 3;
		while (i < len && isalnum((unsigned char)name[i]))
			i++;
		if (i == len)
			return true;
	}
	/* vim checks it may write a directory with 4913, then 4913 + 123k */
	char *end;
	long v = strtol(name, &end, 10);
	return !*end && isdigit((unsigned char)name[0]) && v >= 4913 && v <= 99999 &&
	       (v - 4913) % 123 == 0;
}
