/*
 * registry_auth.c - what the registry client reads about authentication:
 * WWW-Authenticate challenges and containers' auth.json (registry.h).
 *
 * Challenge (RFC 7235): `scheme [param=value *("," param=value)]`, the
 * value a token or a quoted string with backslash escapes, parameters in
 * any order, scheme and parameter names case-insensitive ("Bearer" and
 * "Basic" are written canonically into the struct, another scheme as
 * sent).  A header with several challenges ("Basic realm=a, Bearer
 * realm=b") yields the first.  Parameters other than realm, service and
 * scope are checked for syntax and ignored; one given twice, a value too
 * long for its field, a control character, an unterminated quote or a
 * Bearer challenge without a realm is JF_EINVAL.
 *
 * auth.json: {"auths": {KEY: {"auth": base64("user:password")}}}; KEY is
 * "host[:port]", optionally with a scheme ("https://") and a path
 * ("https://index.docker.io/v1/"), which are dropped for the match; an
 * exact key beats a normalised one.  Docker Hub's names (docker.io,
 * index.docker.io, registry-1.docker.io) are one host.  Entries without
 * "auth" (an identitytoken, a credential helper) give no credentials.
 * The file is read whole, at most JF_AUTH_MAX bytes.  Pure parsing: no
 * network, and no credential ever goes into a message.
 */
#include "image/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define JF_AUTH_MAX (1024 * 1024) /* bytes of an auth.json */

/* ---- challenges ---------------------------------------------------------- */

/* RFC 7230 tchar */
static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* RFC 7235 token68, without its trailing '=' */
static bool is_t68(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("-._~+/", c) != NULL;
}

static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static enum jf_err bad_challenge(struct jf_error *err, const char *hdr, const char *why)
{
	char q[160];
	jf_err_quote(hdr, strlen(hdr), 96, q, sizeof(q));
	return jf_error_set(err, JF_EINVAL, 0, "bad WWW-Authenticate challenge \"%s\": %s", q, why);
}

/* The value at *pp (a token or a quoted string) into buf (n bytes);
 * false on bad syntax, *toolong when it does not fit. */
static bool read_value(const char **pp, char *buf, size_t n, bool *toolong)
{
	const char *p = *pp;
	size_t k = 0;
	*toolong = false;
	if (*p == '"') {
		for (p++; *p != '"'; p++) {
			unsigned char c = (unsigned char)*p;
			if (c == '\\') {
				p++;
				c = (unsigned char)*p;
			}
			if (c == '\0' || (c < 0x20 && c != '\t') || c == 0x7f)
				return false;
			if (k + 1 < n)
				buf[k++] = (char)c;
			else
				*toolong = true;
		}
		p++;
	} else {
		/* a token; token68's trailing '=' and '/' too (some servers) */
		const char *s = p;
		while (is_tchar((unsigned char)*p) || *p == '/' || *p == '=' || *p == ':')
			p++;
		if (p == s)
			return false;
		size_t len = (size_t)(p - s);
		if (len + 1 > n)
			*toolong = true;
		else
			k = len, memcpy(buf, s, len);
	}
	if (n)
		buf[k] = '\0';
	*pp = p;
	return true;
}

enum jf_err jf_reg_parse_challenge(const char *hdr, struct jf_challenge *c, struct jf_error *err)
{
	memset(c, 0, sizeof(*c));
	if (!hdr)
		return jf_error_set(err, JF_EINVAL, 0, "bad WWW-Authenticate challenge: none");
	const char *p = skip_ows(hdr);
	const char *s = p;
	while (is_tchar((unsigned char)*p))
		p++;
	size_t sl = (size_t)(p - s);
	if (sl == 0)
		return bad_challenge(err, hdr, "no scheme");
	if (sl >= sizeof(c->scheme))
		return bad_challenge(err, hdr, "the scheme is too long");
	if (sl == 6 && strncasecmp(s, "Bearer", 6) == 0)
		strcpy(c->scheme, "Bearer");
	else if (sl == 5 && strncasecmp(s, "Basic", 5) == 0)
		strcpy(c->scheme, "Basic");
	else
		memcpy(c->scheme, s, sl), c->scheme[sl] = '\0';
	if (*p != '\0' && *p != ' ' && *p != '\t' && *p != ',')
		return bad_challenge(err, hdr, "a bad character after the scheme");

	bool seen_realm = false, seen_service = false, seen_scope = false;
	p = skip_ows(p);
	/* token68 right after the scheme ("Basic dXNlcjpwYXNz"): skipped */
	const char *t = p;
	while (is_t68((unsigned char)*t))
		t++;
	if (t > p) {
		const char *e = t;
		while (*e == '=')
			e++;
		const char *f = skip_ows(e);
		if (*f == '\0' || *f == ',')
			p = f;
	}
	bool after_comma = false;
	while (*p) {
		if (*p == ',') { /* empty list elements are allowed */
			p = skip_ows(p + 1);
			after_comma = true;
			continue;
		}
		const char *name = p;
		while (is_tchar((unsigned char)*p))
			p++;
		size_t nl = (size_t)(p - name);
		if (nl == 0)
			return bad_challenge(err, hdr, "a parameter without a name");
		const char *q = skip_ows(p);
		if (*q != '=') {
			if (after_comma)
				break; /* a word after a comma: the next challenge */
			return bad_challenge(err, hdr, "a parameter without '='");
		}
		q = skip_ows(q + 1);
		char tmp[1024], *dst = tmp;
		size_t dn = sizeof(tmp);
		bool *seen = NULL;
		if (nl == 5 && strncasecmp(name, "realm", 5) == 0)
			dst = c->realm, dn = sizeof(c->realm), seen = &seen_realm;
		else if (nl == 7 && strncasecmp(name, "service", 7) == 0)
			dst = c->service, dn = sizeof(c->service), seen = &seen_service;
		else if (nl == 5 && strncasecmp(name, "scope", 5) == 0)
			dst = c->scope, dn = sizeof(c->scope), seen = &seen_scope;
		if (seen && *seen)
			return bad_challenge(err, hdr, "a parameter given twice");
		bool toolong;
		if (!read_value(&q, dst, dn, &toolong))
			return bad_challenge(err, hdr, "a bad parameter value");
		if (toolong && seen)
			return bad_challenge(err, hdr, "a parameter value too long");
		if (seen)
			*seen = true;
		p = skip_ows(q);
		if (*p && *p != ',')
			return bad_challenge(err, hdr, "no ',' between parameters");
		after_comma = false;
	}
	if (strcmp(c->scheme, "Bearer") == 0 && !c->realm[0])
		return bad_challenge(err, hdr, "a Bearer challenge without a realm");
	return JF_OK;
}

/* ---- auth.json ----------------------------------------------------------- */

static int b64_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Standard base64, padded or not; NULL on any other byte, a bad length or
 * a NUL in the result.  *out_len the decoded length. */
static char *b64_decode(const char *s, size_t *out_len)
{
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == '=' && strlen(s) - n < 2)
		n--;
	if (n % 4 == 1)
		return NULL;
	/* padding, when there is some, must complete the last quantum */
	size_t pad = strlen(s) - n;
	if (pad && (n + pad) % 4 != 0)
		return NULL;
	char *out = malloc(n / 4 * 3 + 3 + 1);
	if (!out)
		return NULL;
	size_t k = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64_val((unsigned char)s[i]);
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (char)((acc >> bits) & 0xff);
		}
	}
	/* leftover bits must be zero (canonical encoding) */
	if (bits && (acc & ((1u << bits) - 1))) {
		free(out);
		return NULL;
	}
	out[k] = '\0';
	if (memchr(out, '\0', k)) {
		free(out);
		return NULL;
	}
	*out_len = k;
	return out;
}

/* Docker Hub's three names are one registry */
static const char *hub_alias(const char *h, size_t n)
{
	static const char *const names[] = { "docker.io", "index.docker.io",
					     "registry-1.docker.io" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && strncasecmp(h, names[i], n) == 0)
			return "docker.io";
	return NULL;
}

static bool host_eq(const char *a, size_t an, const char *b)
{
	size_t bn = strlen(b);
	const char *ha = hub_alias(a, an), *hb = hub_alias(b, bn);
	if (ha && hb)
		return true;
	return an == bn && strncasecmp(a, b, an) == 0;
}

/* key without "scheme://" and "/path" */
static void key_host(const char *key, const char **h, size_t *n)
{
	const char *p = strstr(key, "://");
	p = p ? p + 3 : key;
	*h = p;
	*n = strcspn(p, "/");
}

static enum jf_err read_capped(const char *path, char **out, size_t *len, struct jf_error *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return jf_error_set(err, e == ENOENT ? JF_ENOENT : JF_EIO, 0, "auth file %s: %s",
				    path, strerror(e));
	}
	enum jf_err rc = JF_OK;
	size_t cap = JF_AUTH_MAX, n = 0, sz = 4096;
	char *buf = malloc(sz + 1);
	if (!buf) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "auth file %s: out of memory", path);
		goto out;
	}
	for (;;) {
		if (n == sz) {
			if (sz > cap) {
				rc = jf_error_set(err, JF_EFBIG, 0,
						  "auth file %s is larger than %zu bytes", path,
						  cap);
				goto out;
			}
			size_t nsz = sz * 2 > cap + 1 ? cap + 1 : sz * 2;
			char *nb = realloc(buf, nsz + 1);
			if (!nb) {
				rc = jf_error_set(err, JF_ENOMEM, 0, "auth file %s: out of memory",
						  path);
				goto out;
			}
			buf = nb, sz = nsz;
		}
		ssize_t k = read(fd, buf + n, sz - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			rc = jf_error_set(err, JF_EIO, 0, "auth file %s: %s", path,
					  strerror(errno));
			goto out;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	if (n > cap) {
		rc = jf_error_set(err, JF_EFBIG, 0, "auth file %s is larger than %zu bytes", path,
				  cap);
		goto out;
	}
	buf[n] = '\0';
	*out = buf, *len = n;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}

enum jf_err jf_reg_auth_lookup(const char *auth_json_path, const char *host, char **out,
			       struct jf_error *err)
{
	*out = NULL;
	char *text = NULL;
	size_t len = 0;
	json_t *root = NULL;
	enum jf_err rc = read_capped(auth_json_path, &text, &len, err);
	if (rc)
		return rc;
	json_error_t je;
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		rc = jf_error_set(err, JF_EINVAL, je.line > 0 ? je.line : 0,
				  "auth file %s is not valid JSON: %s", auth_json_path, je.text);
		goto out;
	}
	json_t *auths = json_object_get(root, "auths");
	if (!json_is_object(root) || (auths && !json_is_object(auths))) {
		rc = jf_error_set(err, JF_EINVAL, 0,
				  "auth file %s: want {\"auths\": {\"host\": {\"auth\": ...}}}",
				  auth_json_path);
		goto out;
	}
	if (!auths)
		goto out; /* no entries: no credentials */
	/* the exact key first, then a normalised one */
	json_t *ent = json_object_get(auths, host);
	const char *key = host;
	if (!ent) {
		const char *k;
		json_t *v;
		json_object_foreach(auths, k, v)
		{
			const char *h;
			size_t hn;
			key_host(k, &h, &hn);
			if (host_eq(h, hn, host)) {
				ent = v, key = k;
				break;
			}
		}
	}
	if (!ent)
		goto out;
	if (!json_is_object(ent)) {
		rc = jf_error_set(err, JF_EINVAL, 0,
				  "auth file %s: the entry for %s is not an object", auth_json_path,
				  host);
		goto out;
	}
	json_t *a = json_object_get(ent, "auth");
	if (!a || (json_is_string(a) && json_string_length(a) == 0))
		goto out; /* an identitytoken or a helper: nothing we can use */
	if (!json_is_string(a)) {
		rc = jf_error_set(err, JF_EINVAL, 0, "auth file %s: \"auth\" of %s is not a string",
				  auth_json_path, host);
		goto out;
	}
	size_t dl;
	char *dec = b64_decode(json_string_value(a), &dl);
	if (!dec || !strchr(dec, ':') || dec[0] == ':') {
		if (dec) {
			explicit_bzero(dec, dl);
			free(dec);
		}
		char q[96];
		jf_err_quote(key, strlen(key), 64, q, sizeof(q));
		rc = jf_error_set(err, JF_EINVAL, 0,
				  "auth file %s: \"auth\" of \"%s\" is not base64 of user:password",
				  auth_json_path, q);
		goto out;
	}
	*out = dec;
out:
	json_decref(root);
	if (text) {
		explicit_bzero(text, len);
		free(text);
	}
	return rc;
}
