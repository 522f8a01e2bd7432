/*
 * err.c - error messages for enum jf_err.
 *
 * The message is prefixed with "line N: " when a line is known, so every
 * caller shows the same form.  What holds for every message once
 * jf_error_set() returns: it is NUL-terminated within JF_ERRMSG_MAX, valid
 * UTF-8, and free of C0 and C1 control characters, DEL and the Unicode line
 * and paragraph separators, so it is one line in a status file, an event
 * and a terminal.  Each offending byte or character is written as an
 * escape instead; a message cut by the buffer ends before an escape or a
 * character that would not fit whole.
 */
#include "core/err.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid or
 * cut short; *cp gets the code point. */
static size_t utf8_seq(const unsigned char *s, size_t n, unsigned *cp)
{
	unsigned c = s[0], lo = 0x80, hi = 0xbf;
	size_t need;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		need = 1, c &= 0x1f;
	else if (c == 0xe0)
		need = 2, lo = 0xa0, c &= 0x0f;
	else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef)
		need = 2, c &= 0x0f;
	else if (c == 0xed)
		need = 2, hi = 0x9f, c &= 0x0f;
	else if (c == 0xf0)
		need = 3, lo = 0x90, c &= 0x07;
	else if (c >= 0xf1 && c <= 0xf3)
		need = 3, c &= 0x07;
	else if (c == 0xf4)
		need = 3, hi = 0x8f, c &= 0x07;
	else
		return 0;
	if (need >= n)
		return 0;
	for (size_t k = 1; k <= need; k++) {
		if (s[k] < lo || s[k] > hi)
			return 0;
		c = (c << 6) | (s[k] & 0x3f);
		lo = 0x80;
		hi = 0xbf;
	}
	*cp = c;
	return need + 1;
}

/* The escape for the character at s, or 0 when it is shown as is. */
static size_t escape_of(const unsigned char *s, size_t n, size_t *used, char *esc, size_t cap)
{
	unsigned cp;
	size_t k = utf8_seq(s, n, &cp);
	if (k == 0) {
		*used = 1;
		return (size_t)snprintf(esc, cap, "\\x%02x", s[0]);
	}
	*used = k;
	if (cp == '\t')
		return (size_t)snprintf(esc, cap, "\\t");
	if (cp == '\n')
		return (size_t)snprintf(esc, cap, "\\n");
	if (cp == '\r')
		return (size_t)snprintf(esc, cap, "\\r");
	if (cp < 0x20 || cp == 0x7f)
		return (size_t)snprintf(esc, cap, "\\x%02x", cp);
	if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029)
		return (size_t)snprintf(esc, cap, "\\u%04x", cp);
	return 0;
}

/* Rewrite msg (a NUL-terminated string in a buffer of n bytes) so that the
 * invariant in the file comment holds. */
static void sanitize(char *msg, size_t n)
{
	char in[JF_ERRMSG_MAX];
	size_t len = strlen(msg); /* vsnprintf() ended it within n */
	size_t i = 0, o = 0;
	bool clean = true, full = len == n - 1;
	for (size_t j = 0; j < len && clean; j++) {
		unsigned char c = (unsigned char)msg[j];
		clean = c >= 0x20 && c < 0x7f;
	}
	if (clean)
		return;
	if (len >= sizeof(in))
		len = sizeof(in) - 1;
	memcpy(in, msg, len);
	while (i < len) {
		char esc[16];
		size_t used;
		unsigned cp;
		if (full && len - i < 4 && (unsigned char)in[i] >= 0xc2 &&
		    !utf8_seq((const unsigned char *)in + i, len - i, &cp))
			break; /* a character cut by the buffer: drop its start */
		size_t el =
			escape_of((const unsigned char *)in + i, len - i, &used, esc, sizeof(esc));
		const char *tok = el ? esc : in + i;
		size_t tl = el ? el : used;
		if (o + tl > n - 1)
			break;
		memcpy(msg + o, tok, tl);
		o += tl;
		i += used;
	}
	msg[o] = '\0';
}

enum jf_err jf_error_set(struct jf_error *e, enum jf_err code, int line, const char *fmt, ...)
{
	if (!e)
		return code;
	e->code = code;
	e->line = line;
	size_t off = 0;
	if (line > 0)
		off = (size_t)snprintf(e->msg, sizeof(e->msg), "line %d: ", line);
	if (off >= sizeof(e->msg))
		off = sizeof(e->msg) - 1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg + off, sizeof(e->msg) - off, fmt, ap);
	va_end(ap);
	sanitize(e->msg, sizeof(e->msg));
	return code;
}

void jf_error_clear(struct jf_error *e)
{
	if (e)
		memset(e, 0, sizeof(*e));
}

void jf_err_quote(const char *s, size_t len, size_t max, char *buf, size_t n)
{
	size_t o = 0, i;
	if (n == 0)
		return;
	for (i = 0; s && i < len && i < max; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[8];
		size_t tl;
		if (c == '"' || c == '\\')
			tl = (size_t)snprintf(tmp, sizeof(tmp), "\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			tmp[0] = (char)c, tl = 1;
		else
			tl = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		if (o + tl >= n)
			break;
		memcpy(buf + o, tmp, tl);
		o += tl;
	}
	if (s && i < len && o + 3 < n) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
}

const char *jf_err_name(enum jf_err code)
{
	static const char *const names[] = {
		[JF_OK] = "ok",
		[JF_EINVAL] = "invalid",
		[JF_ENOENT] = "not found",
		[JF_EEXIST] = "exists",
		[JF_EBUSY] = "busy",
		[JF_EROFS] = "read-only",
		[JF_EACCES] = "permission denied",
		[JF_ENOMEM] = "out of memory",
		[JF_EIO] = "i/o error",
		[JF_EFBIG] = "too large",
		[JF_ENOTEMPTY] = "not empty",
		[JF_ENOTSUP] = "not supported",
	};
	if ((size_t)code < sizeof(names) / sizeof(names[0]) && names[code])
		return names[code];
	return "unknown error";
}
