/*
 * err.c - error messages for enum jf_err.
 *
 * The message is prefixed with "line N: " when a line is known, so every
 * caller shows the same form.
 */
#include "core/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum jf_err jf_error_set(struct jf_error *e, enum jf_err code, int line,
			 const char *fmt, ...)
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
	return code;
}

void jf_error_clear(struct jf_error *e)
{
	if (e)
		memset(e, 0, sizeof(*e));
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
