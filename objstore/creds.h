/*
 * creds.h - AWS shared-credentials files (~/.aws/credentials), parsed (pure).
 *
 *   # comment          ; comment too
 *   [default]
 *   aws_access_key_id = AKIA...
 *   aws_secret_access_key = ...
 *   aws_session_token = ...        (optional: temporary credentials)
 *
 * Sections are profiles ("[name]"; "[profile name]", the form of
 * ~/.aws/config, is read as "name" too).  Keys are matched without regard
 * to case, values are trimmed of blanks; other keys (region, ...) are
 * ignored.  As botocore reads it, a '#' or ';' starts a comment only at the
 * start of a line: a value keeps it.  A line that is neither blank, a
 * comment, a section nor "key = value" is an error, and so is a key given
 * twice in one profile or a profile given twice.
 *
 * Messages name the file (as the caller calls it) and the line, never the
 * text of a line of the file: a malformed line may be a secret pasted
 * alone.  Files over JF_CREDS_FILE_MAX bytes are refused before parsing.
 */
#ifndef JF_OBJSTORE_CREDS_H
#define JF_OBJSTORE_CREDS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

#define JF_CREDS_FILE_MAX  (64 * 1024)
#define JF_CREDS_KEY_MAX   128  /* aws_access_key_id */
#define JF_CREDS_SECRET    256  /* aws_secret_access_key */
#define JF_CREDS_TOKEN_MAX 4096 /* aws_session_token */
#define JF_CREDS_PROFILE   128

struct jf_creds {
	char access_key[JF_CREDS_KEY_MAX];
	char secret_key[JF_CREDS_SECRET];
	char session_token[JF_CREDS_TOKEN_MAX]; /* "" when none */
};

/* Profile `profile` (NULL = "default") of the file text (len bytes; NULs
 * are an error) into *out.  `name` names the file in messages. */
enum jf_err jf_creds_parse(const char *text, size_t len, const char *profile, const char *name,
			   struct jf_creds *out, struct jf_error *err);

/* Read all of fd (a regular file, at most JF_CREDS_FILE_MAX bytes) into buf
 * (JF_CREDS_FILE_MAX + 1 bytes) and parse it as above. */
enum jf_err jf_creds_read_fd(int fd, const char *profile, const char *name, struct jf_creds *out,
			     struct jf_error *err);

/* Zero *c (explicit_bzero). */
void jf_creds_wipe(struct jf_creds *c);

#endif
