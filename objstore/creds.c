/*
 * creds.c - the AWS shared-credentials format (creds.h).
 *
 * DESIGN.  One pass over the lines; only the lines of the wanted profile
 * are kept, and they go straight into the caller's struct (fixed arrays:
 * nothing to free, one explicit_bzero to forget).  Every buffer that held
 * the file's bytes is wiped before it is released.  A secret is never
 * formatted into a message: errors say "line N: <what is wrong>" and name
 * keys only by the names this file knows.
 */
#include "objstore/creds.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* trim [*s, *s + *n) of blanks on both sides */
static void trim(const char **s, size_t *n)
{
	while (*n && blank(**s))
		(*s)++, (*n)--;
	while (*n && blank((*s)[*n - 1]))
		(*n)--;
}

static bool word_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && strncasecmp(s, w, n) == 0;
}

struct field {
	const char *name;
	char *dst;
	size_t cap;
	int line; /* where it was set, 0 = not yet */
};

/* printable ASCII without blanks: what keys and secrets are made of */
static bool token_ok(const char *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] <= 0x20 || (unsigned char)v[i] >= 0x7f)
			return false;
	return true;
}

/* the section header at [s, s + n): its profile name, or false */
static bool section_name(const char *s, size_t n, const char **name, size_t *nl)
{
	if (n < 2 || s[0] != '[' || s[n - 1] != ']')
		return false;
	s++, n -= 2;
	trim(&s, &n);
	if (n > 8 && strncasecmp(s, "profile", 7) == 0 && blank(s[7])) {
		s += 8, n -= 8;
		trim(&s, &n);
	}
	*name = s;
	*nl = n;
	return true;
}

enum jf_err jf_creds_parse(const char *text, size_t len, const char *profile, const char *name,
			   struct jf_creds *out, struct jf_error *err)
{
	const char *want = profile && *profile ? profile : "default";
	memset(out, 0, sizeof(*out));
	struct field fs[] = {
		{ "aws_access_key_id", out->access_key, sizeof(out->access_key), 0 },
		{ "aws_secret_access_key", out->secret_key, sizeof(out->secret_key), 0 },
		{ "aws_session_token", out->session_token, sizeof(out->session_token), 0 },
	};
	if (len > JF_CREDS_FILE_MAX)
		return jf_error_set(err, JF_EFBIG, 0, "credentials %s: larger than %d bytes", name,
				    JF_CREDS_FILE_MAX);
	if (memchr(text, '\0', len))
		return jf_error_set(err, JF_EINVAL, 0, "credentials %s: holds a NUL byte", name);
	enum jf_err rc = JF_OK;
	bool in_want = false, seen_want = false;
	int lineno = 0;
	size_t pos = 0;
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		pos = 3; /* a UTF-8 byte order mark */
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;
		const char *s = text + pos;
		size_t n = end - pos;
		pos = end + 1;
		lineno++;
		trim(&s, &n);
		if (n == 0 || s[0] == '#' || s[0] == ';')
			continue;
		const char *sec;
		size_t secl;
		if (s[0] == '[') {
			if (!section_name(s, n, &sec, &secl)) {
				rc = jf_error_set(err, JF_EINVAL, lineno,
						  "credentials %s: a section header must be "
						  "[profile-name]",
						  name);
				goto fail;
			}
			in_want = strlen(want) == secl && memcmp(sec, want, secl) == 0;
			if (in_want && seen_want) {
				rc = jf_error_set(err, JF_EINVAL, lineno,
						  "credentials %s: profile [%s] is given twice",
						  name, want);
				goto fail;
			}
			seen_want |= in_want;
			continue;
		}
		const char *eq = memchr(s, '=', n);
		if (!eq) {
			rc = jf_error_set(
				err, JF_EINVAL, lineno,
				"credentials %s: expected \"key = value\", a [profile] or "
				"a comment",
				name);
			goto fail;
		}
		const char *k = s, *v = eq + 1;
		size_t kl = (size_t)(eq - s), vl = n - kl - 1;
		trim(&k, &kl);
		trim(&v, &vl);
		if (kl == 0) {
			rc = jf_error_set(err, JF_EINVAL, lineno,
					  "credentials %s: a value without a key", name);
			goto fail;
		}
		if (!in_want)
			continue;
		for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++) {
			struct field *f = &fs[i];
			if (!word_is(k, kl, f->name))
				continue;
			if (f->line) {
				rc = jf_error_set(err, JF_EINVAL, lineno,
						  "credentials %s: %s is given twice in [%s] "
						  "(first on line %d)",
						  name, f->name, want, f->line);
				goto fail;
			}
			if (vl == 0) {
				rc = jf_error_set(err, JF_EINVAL, lineno,
						  "credentials %s: %s is empty", name, f->name);
				goto fail;
			}
			if (vl >= f->cap) {
				rc = jf_error_set(err, JF_EFBIG, lineno,
						  "credentials %s: %s is longer than %zu bytes",
						  name, f->name, f->cap - 1);
				goto fail;
			}
			if (!token_ok(v, vl)) {
				rc = jf_error_set(err, JF_EINVAL, lineno,
						  "credentials %s: %s holds a blank, a control "
						  "character or a non-ASCII byte",
						  name, f->name);
				goto fail;
			}
			memcpy(f->dst, v, vl);
			f->dst[vl] = '\0';
			f->line = lineno;
		}
	}
	if (!seen_want) {
		rc = jf_error_set(err, JF_ENOENT, 0, "credentials %s: no profile [%s]", name, want);
		goto fail;
	}
	for (size_t i = 0; i < 2; i++)
		if (!fs[i].line) {
			rc = jf_error_set(err, JF_EINVAL, 0, "credentials %s: [%s] has no %s", name,
					  want, fs[i].name);
			goto fail;
		}
	return JF_OK;
fail:
	jf_creds_wipe(out);
	return rc;
}

enum jf_err jf_creds_read_fd(int fd, const char *profile, const char *name, struct jf_creds *out,
			     struct jf_error *err)
{
	struct stat st;
	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st) != 0)
		return jf_error_set(err, JF_EIO, 0, "credentials %s: %s", name, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return jf_error_set(err, JF_EINVAL, 0, "credentials %s: not a regular file", name);
	if (st.st_size > JF_CREDS_FILE_MAX)
		return jf_error_set(err, JF_EFBIG, 0, "credentials %s: larger than %d bytes", name,
				    JF_CREDS_FILE_MAX);
	char *buf = malloc(JF_CREDS_FILE_MAX + 1);
	if (!buf)
		return jf_error_set(err, JF_ENOMEM, 0, "credentials %s: out of memory", name);
	size_t n = 0;
	enum jf_err rc = JF_OK;
	for (;;) {
		ssize_t k = read(fd, buf + n, JF_CREDS_FILE_MAX + 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			rc = jf_error_set(err, JF_EIO, 0, "credentials %s: %s", name,
					  strerror(errno));
			goto out;
		}
		if (k == 0)
			break;
		n += (size_t)k;
		if (n > JF_CREDS_FILE_MAX) {
			rc = jf_error_set(err, JF_EFBIG, 0, "credentials %s: larger than %d bytes",
					  name, JF_CREDS_FILE_MAX);
			goto out;
		}
	}
	rc = jf_creds_parse(buf, n, profile, name, out, err);
out:
	explicit_bzero(buf, JF_CREDS_FILE_MAX + 1);
	free(buf);
	return rc;
}

void jf_creds_wipe(struct jf_creds *c)
{
	if (c)
		explicit_bzero(c, sizeof(*c));
}
