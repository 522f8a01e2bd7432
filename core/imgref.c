/*
 * imgref.c - parse, print and name image references (imgref.h).
 *
 * The grammar is the distribution spec's (reference.go in
 * distribution/reference), checked part by part: the host is a DNS name
 * or IPv4 address with an optional port (bracketed IPv6 too), the repo a
 * '/'-joined list of lower-case components, the tag and digest as in
 * imgref.h.  Nothing here touches the network or the disk.
 */
#include "core/imgref.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

bool jf_digest_valid(const char *d)
{
	if (strncmp(d, "sha256:", 7) != 0)
		return false;
	d += 7;
	size_t n = 0;
	for (; d[n]; n++)
		if (!((d[n] >= '0' && d[n] <= '9') || (d[n] >= 'a' && d[n] <= 'f')))
			return false;
	return n == 64;
}

/* one repo component: [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)* */
static bool component_ok(const char *s, size_t n)
{
	if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 1; i < n; i++) {
		char c = s[i];
		if (is_lower_alnum(c))
			continue;
		if (c == '.' || c == '_') {
			/* '.' alone, '_' or '__' */
			size_t j = i;
			while (j < n && s[j] == c)
				j++;
			if (j - i > (c == '_' ? 2u : 1u) || !is_lower_alnum(s[j]))
				return false;
			i = j - 1;
		} else if (c == '-') {
			while (i < n && s[i] == '-')
				i++;
			if (i >= n || !is_lower_alnum(s[i]))
				return false;
		} else
			return false;
	}
	return true;
}

static bool repo_ok(const char *s)
{
	const char *p = s;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (!component_ok(p, n))
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

static bool tag_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 128)
		return false;
	if (!(is_alnum(s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(is_alnum(s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

/* host: DNS labels or an IPv4 address, or [IPv6]; then an optional :port */
static bool host_ok(const char *s)
{
	const char *port = NULL;
	const char *end;
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (!rb || rb == s + 1)
			return false;
		for (const char *p = s + 1; p < rb; p++)
			if (!(is_alnum(*p) || *p == ':' || *p == '.'))
				return false;
		end = rb + 1;
		if (*end == ':')
			port = end + 1;
		else if (*end)
			return false;
	} else {
		const char *colon = strchr(s, ':');
		end = colon ? colon : s + strlen(s);
		if (colon)
			port = colon + 1;
		const char *p = s;
		while (p < end) {
			const char *dot = memchr(p, '.', (size_t)(end - p));
			const char *le = dot ? dot : end;
			if (le == p || !is_alnum(p[0]) || !is_alnum(le[-1]))
				return false;
			for (const char *q = p; q < le; q++)
				if (!(is_alnum(*q) || *q == '-'))
					return false;
			p = dot ? dot + 1 : end;
			if (dot && p == end)
				return false;
		}
		if (end == s)
			return false;
	}
	if (port) {
		size_t n = strlen(port);
		if (n == 0 || n > 5)
			return false;
		long v = 0;
		for (size_t i = 0; i < n; i++) {
			if (port[i] < '0' || port[i] > '9')
				return false;
			v = v * 10 + (port[i] - '0');
		}
		if (v < 1 || v > 65535)
			return false;
	}
	return true;
}

static enum jf_err bad(struct jf_error *err, const char *s, const char *why)
{
	char q[160];
	jf_err_quote(s, strlen(s), 96, q, sizeof(q));
	return jf_error_set(err, JF_EINVAL, 0, "image \"%s\": %s", q, why);
}

static enum jf_err parse_oci(const char *s, struct jf_imgref *r, struct jf_error *err)
{
	const char *p = s + 4;
	if (p[0] != '/')
		return bad(err, s, "an oci: layout needs an absolute path (oci:/path[:tag])");
	const char *colon = strrchr(p, ':');
	if (colon && colon < strrchr(p, '/'))
		colon = NULL; /* a ':' inside the path, no tag */
	size_t plen = colon ? (size_t)(colon - p) : strlen(p);
	if (colon && !tag_ok(colon + 1))
		return bad(err, s, "the tag after the layout's path is not a valid tag");
	if (plen >= sizeof(r->path))
		return bad(err, s, "the layout's path is too long");
	memcpy(r->path, p, plen);
	r->path[plen] = '\0';
	/* no "..": a layout path names one directory, plainly */
	for (const char *c = r->path; (c = strstr(c, "..")); c += 2)
		if ((c == r->path || c[-1] == '/') && (c[2] == '/' || c[2] == '\0'))
			return bad(err, s, "the layout's path may not contain \"..\"");
	while (plen > 1 && r->path[plen - 1] == '/')
		r->path[--plen] = '\0';
	r->oci = true;
	snprintf(r->tag, sizeof(r->tag), "%s", colon ? colon + 1 : "latest");
	return JF_OK;
}

enum jf_err jf_imgref_parse(const char *s, struct jf_imgref *r, struct jf_error *err)
{
	memset(r, 0, sizeof(*r));
	size_t len = strlen(s);
	if (len == 0)
		return jf_error_set(err, JF_EINVAL, 0, "image: the reference is empty");
	if (len >= JF_IMGREF_MAX)
		return bad(err, s, "longer than 1023 bytes");
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return bad(err, s, "contains a space or a control or non-ASCII byte");
	if (strncmp(s, "oci:", 4) == 0)
		return parse_oci(s, r, err);

	char buf[JF_IMGREF_MAX];
	memcpy(buf, s, len + 1);
	char *at = strchr(buf, '@');
	if (at) {
		*at = '\0';
		if (!jf_digest_valid(at + 1))
			return bad(err, s,
				   "the digest must be sha256: and 64 lower-case hex digits");
		snprintf(r->digest, sizeof(r->digest), "%s", at + 1);
	}
	/* the host is the part before the first '/', if it looks like one */
	char *name = buf;
	char *slash = strchr(buf, '/');
	if (slash &&
	    (memchr(buf, '.', (size_t)(slash - buf)) || memchr(buf, ':', (size_t)(slash - buf)) ||
	     buf[0] == '[' || (slash - buf == 9 && strncmp(buf, "localhost", 9) == 0))) {
		*slash = '\0';
		if (!host_ok(buf))
			return bad(err, s,
				   "the registry host is not a host name or address with "
				   "an optional port");
		if (strlen(buf) >= sizeof(r->host))
			return bad(err, s, "the registry host is too long");
		snprintf(r->host, sizeof(r->host), "%s", buf);
		name = slash + 1;
	} else
		snprintf(r->host, sizeof(r->host), "docker.io");
	/* a tag: after the last ':' of the name part (the host is gone) */
	char *colon = strrchr(name, ':');
	if (colon) {
		*colon = '\0';
		if (!tag_ok(colon + 1))
			return bad(err, s, "the tag must be [A-Za-z0-9_][A-Za-z0-9._-]{0,127}");
		snprintf(r->tag, sizeof(r->tag), "%s", colon + 1);
	}
	if (!repo_ok(name))
		return bad(err, s,
			   "the repository must be lower-case components of letters and "
			   "digits, separated by '.', '_', '__' or '-' and joined by '/'");
	size_t need = strlen(name) + 1;
	bool library = strcmp(r->host, "docker.io") == 0 && !strchr(name, '/');
	if (need + (library ? 8 : 0) > sizeof(r->repo))
		return bad(err, s, "the repository is longer than 255 bytes");
	snprintf(r->repo, sizeof(r->repo), "%s%.*s", library ? "library/" : "",
		 (int)(sizeof(r->repo) - 9), name);
	if (!r->tag[0] && !r->digest[0])
		snprintf(r->tag, sizeof(r->tag), "latest");
	return JF_OK;
}

size_t jf_imgref_format(const struct jf_imgref *r, char *buf, size_t n)
{
	int k;
	if (r->oci)
		k = snprintf(buf, n, "oci:%s:%s", r->path, r->tag);
	else
		k = snprintf(buf, n, "%s/%s%s%s%s%s", r->host, r->repo, r->tag[0] ? ":" : "",
			     r->tag, r->digest[0] ? "@" : "", r->digest);
	return k < 0 ? 0 : (size_t)k;
}

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

void jf_imgref_dirname(const struct jf_imgref *r, char buf[JF_IMGREF_NAMEMAX])
{
	char text[JF_IMGREF_MAX + JF_IMGREF_PATH + 16];
	jf_imgref_format(r, text, sizeof(text));
	/* drop a long digest to its first 12 hex digits: names stay readable */
	char *at = strstr(text, "@sha256:");
	if (at && strlen(at) > 8 + 12)
		at[8 + 12] = '\0';
	char name[sizeof(text)];
	size_t n = 0;
	for (const char *p = text; *p && n < sizeof(name) - 1; p++) {
		char c = *p;
		name[n++] = (is_alnum(c) || c == '.' || c == '_' || c == '-') ? c : '_';
	}
	name[n] = '\0';
	if (!is_alnum(name[0]))
		name[0] = 'x';
	if (n > JF_IMGREF_NAMEMAX - 1) {
		char full[JF_IMGREF_MAX + JF_IMGREF_PATH + 16];
		jf_imgref_format(r, full, sizeof(full));
		snprintf(buf, JF_IMGREF_NAMEMAX, "%.54s-%08x", name, (unsigned)fnv1a(full));
		return;
	}
	memcpy(buf, name, n + 1);
}

bool jf_imgref_default_always(const struct jf_imgref *r)
{
	if (r->digest[0])
		return false;
	return !r->tag[0] || strcmp(r->tag, "latest") == 0;
}
