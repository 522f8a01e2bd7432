/*
 * ctl.c - parsing a write to a `ctl` file.
 *
 * The accepted form is [blanks] VERB [blanks] [LF], blanks being space, tab
 * and CR, VERB one of the names in verbs[] (lowercase, whole word).  Every
 * other input is refused here, before the engine sees it, so the engine
 * only ever gets one of four canonical strings.  A refusal quotes what was
 * written through jf_err_quote(): at most CTL_QUOTE bytes, escaped, so a
 * NUL, a control character or a megabyte of garbage never reaches a status
 * file or an event raw.
 */
#include "core/ctl.h"

#include <string.h>

#define CTL_QUOTE 40 /* bytes of the written text shown in a message */

static const char *const verbs[JF_CTL_NVERBS] = {
	[JF_CTL_PAUSE] = "pause",
	[JF_CTL_RESUME] = "resume",
	[JF_CTL_STOP] = "stop",
	[JF_CTL_RESTART] = "restart",
};

#define VERB_LIST "pause, resume, stop or restart"

const char *jf_ctl_verb_name(enum jf_ctl_verb verb)
{
	if ((unsigned)verb < JF_CTL_NVERBS)
		return verbs[verb];
	return "?";
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Case-insensitive ASCII comparison of n bytes with the verb v. */
static int same_letters(const char *s, size_t n, const char *v)
{
	if (strlen(v) != n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != v[i])
			return 0;
	}
	return 1;
}

enum jf_err jf_ctl_parse(const char *buf, size_t len, enum jf_ctl_verb *verb, struct jf_error *err)
{
	char q[4 * CTL_QUOTE + 8];
	if (len > JF_CTL_MAX_BYTES)
		return jf_error_set(err, JF_EFBIG, 0,
				    "ctl: %zu bytes written, more than the limit of %d: "
				    "write one verb, " VERB_LIST,
				    len, JF_CTL_MAX_BYTES);
	if (!buf)
		len = 0;
	size_t b = 0, e = len;
	if (e > 0 && buf[e - 1] == '\n')
		e--;
	while (b < e && is_blank(buf[b]))
		b++;
	while (e > b && is_blank(buf[e - 1]))
		e--;
	if (b == e)
		return jf_error_set(err, JF_EINVAL, 0,
				    "ctl: no verb written: write one of " VERB_LIST);
	const char *s = buf + b;
	size_t n = e - b;
	for (size_t i = 0; i < JF_CTL_NVERBS; i++)
		if (strlen(verbs[i]) == n && memcmp(verbs[i], s, n) == 0) {
			*verb = (enum jf_ctl_verb)i;
			return JF_OK;
		}
	jf_err_quote(s, n, CTL_QUOTE, q, sizeof(q));
	if (memchr(s, '\n', n))
		return jf_error_set(err, JF_EINVAL, 0,
				    "ctl: \"%s\" is more than one line: write one verb, " VERB_LIST,
				    q);
	for (size_t i = 0; i < JF_CTL_NVERBS; i++)
		if (same_letters(s, n, verbs[i]))
			return jf_error_set(err, JF_EINVAL, 0,
					    "ctl: unknown verb \"%s\": verbs are lowercase "
					    "(%s); write one of " VERB_LIST,
					    q, verbs[i]);
	return jf_error_set(err, JF_EINVAL, 0, "ctl: unknown verb \"%s\": write one of " VERB_LIST,
			    q);
}
