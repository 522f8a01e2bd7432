/*
 * err.h - the project's one error enum and an explanatory message.
 *
 * core/ and store/ return enum jf_err (0 = ok) and fill a struct jf_error
 * with a message a user can act on: the key, the line, the value.  fs/ maps
 * the code to an errno in exactly one place (fs/errno.c).
 *
 * A message is one line of valid UTF-8 text whatever went into it: values
 * quoted from hostile input may hold control characters or a UTF-8
 * sequence cut by a "%.64s", so jf_error_set() writes those as visible
 * escapes (\t, \x01, \xe8, \u0085, \u2028) and never cuts an escape.
 */
#ifndef JF_ERR_H
#define JF_ERR_H

#include <stddef.h>

enum jf_err {
	JF_OK = 0,
	JF_EINVAL, /* bad input: spec, ctl verb, name */
	JF_ENOENT, /* no such object */
	JF_EEXIST, /* object exists */
	JF_EBUSY,  /* verb does not apply in this state */
	JF_EROFS,  /* object is read-only now (accepted spec) */
	JF_EACCES, /* not allowed for this user */
	JF_ENOMEM,
	JF_EIO,       /* storage or system failure */
	JF_EFBIG,     /* input over a size limit */
	JF_ENOTEMPTY, /* directory still has children */
	JF_ENOTSUP,   /* understood but cannot be honoured (yet / here) */
};

#define JF_ERRMSG_MAX 512

struct jf_error {
	enum jf_err code;
	int line;                /* 1-based line in the input, 0 if none */
	char msg[JF_ERRMSG_MAX]; /* "line 3: key 'gpus': must be 0, 1, 2, 4 or 8" */
};

/* Set *e (if not NULL) and return code. msg is printf-style. */
enum jf_err jf_error_set(struct jf_error *e, enum jf_err code, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void jf_error_clear(struct jf_error *e);

/* Quote len bytes of s (NULs allowed) into buf (n bytes, always
 * NUL-terminated when n > 0) for a message: printable ASCII as is, '"' and
 * '\\' with a backslash, anything else as \xNN; past max input bytes the
 * rest becomes "...".  Quote marks are the caller's. */
void jf_err_quote(const char *s, size_t len, size_t max, char *buf, size_t n);
const char *jf_err_name(enum jf_err code);

#endif
