/*
 * err.h - the project's one error enum and an explanatory message.
 *
 * core/ and store/ return enum jf_err (0 = ok) and fill a struct jf_error
 * with a message a user can act on: the key, the line, the value.  fs/ maps
 * the code to an errno in exactly one place (fs/errno.c).
 */
#ifndef JF_ERR_H
#define JF_ERR_H

#include <stddef.h>

enum jf_err {
	JF_OK = 0,
	JF_EINVAL,    /* bad input: spec, ctl verb, name */
	JF_ENOENT,    /* no such object */
	JF_EEXIST,    /* object exists */
	JF_EBUSY,     /* verb does not apply in this state */
	JF_EROFS,     /* object is read-only now (accepted spec) */
	JF_EACCES,    /* not allowed for this user */
	JF_ENOMEM,
	JF_EIO,       /* storage or system failure */
	JF_EFBIG,     /* input over a size limit */
	JF_ENOTEMPTY, /* directory still has children */
	JF_ENOTSUP,   /* understood but cannot be honoured (yet / here) */
};

#define JF_ERRMSG_MAX 512

struct jf_error {
	enum jf_err code;
	int line;                  /* 1-based line in the input, 0 if none */
	char msg[JF_ERRMSG_MAX];   /* "line 3: key 'gpus': must be 0, 1, 2, 4 or 8" */
};

/* Set *e (if not NULL) and return code. msg is printf-style. */
enum jf_err jf_error_set(struct jf_error *e, enum jf_err code, int line,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void jf_error_clear(struct jf_error *e);
const char *jf_err_name(enum jf_err code);

#endif
