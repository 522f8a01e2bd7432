/*
 * registry.c - the OCI distribution client (registry.h): manifests and
 * blobs over libcurl, with the registry's Basic or Bearer authentication.
 *
 * Hosts.  ref->host is the registry as the user wrote it and names it in
 * every message and auth.json lookup; docker.io (and index.docker.io) is
 * spoken to at registry-1.docker.io.  The scheme is https unless the host
 * is in o->insecure: an entry "host:port" matches exactly that string, an
 * entry "host" without a port matches that host on any port (as Docker's
 * and containers' insecure lists are used in practice).  Over https,
 * redirects may go to https only; over http, to http or https.
 *
 * Authentication.  A request goes out with what the client holds (nothing,
 * Basic credentials, or a Bearer token); a 401 reads WWW-Authenticate:
 * Basic takes the credentials of auth.json for ref->host; Bearer fetches a
 * token from the challenge's realm (https, or http when the registry is
 * http) with service and scope=repository:REPO:pull, sending the
 * credentials when there are some (anonymous tokens otherwise), and the
 * request is retried once.  A 401 after that is "refused the credentials"
 * (or "requires a login" when there were none).  The token is kept in the
 * struct and reused for every later request, blobs included; a 401 in
 * the middle of jf_reg_blobs re-authenticates once per call.  Credentials
 * go through libcurl's own auth (CURLOPT_USERNAME/PASSWORD, and
 * CURLOPT_XOAUTH2_BEARER), never a hand-made header, so with
 * CURLOPT_UNRESTRICTED_AUTH off libcurl sends them to the registry's own
 * scheme, host and port only, never to the storage host a blob redirects
 * to.  An auth file that does not exist is no credentials; one that does
 * not parse is an error.
 *
 * Blobs.  Up to o->parallel transfers run in one curl multi; each streams
 * into a part file made by mkostemp (dir/<hex>.part.XXXXXX, unique per
 * call whatever the process or thread) while its sha256 is updated; a
 * body longer than the descriptor's size or a write error aborts it.  When
 * the body is complete, size and digest are checked and the part is
 * renamed to dir/<hex>, so dir/<hex> is always whole and verified: it is
 * trusted, and not fetched again.  On any failure every part file of the
 * call is unlinked and the transfers still running are abandoned.
 *
 * Threads: a struct jf_reg is used by one thread at a time; several may
 * exist at once.  curl_global_init is called once, under pthread_once,
 * from jf_reg_new (that once-flag is the module's only static state).
 */
#include "image/registry.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define JF_REG_TOKEN_BODY (1024 * 1024) /* a token server's answer */
#define JF_REG_TOKEN_MAX  (64 * 1024)   /* the token itself */
#define JF_REG_HDR_MAX    2048          /* a WWW-Authenticate we keep */
#define JF_REG_URL_MAX    4096

enum reg_auth { AUTH_NONE, AUTH_BASIC, AUTH_BEARER };

struct jf_reg {
	char host[JF_IMGREF_HOST]; /* as written: messages, auth.json */
	char repo[JF_IMGREF_REPO];
	char base[JF_IMGREF_HOST + 16]; /* "https://registry-1.docker.io" */
	bool insecure;
	char *auth_file; /* NULL: none */
	char *creds;     /* "user:password" once loaded, NULL: none */
	bool creds_loaded;
	enum reg_auth auth;
	char *token;
	unsigned gen; /* counts authentications: a 401 to an older one retries */
	int parallel;
	long connect_timeout_s, low_speed_time_s;
	CURL *easy;    /* manifests and tokens */
	CURLSH *share; /* DNS and TLS sessions, for every handle of this client */
};

/* what one response leaves: its status, its challenge */
struct resp {
	long status;
	char www[JF_REG_HDR_MAX];
	bool www_bearer; /* www holds a Bearer challenge (preferred) */
};

/* a body in memory, capped */
struct membuf {
	char *p;
	size_t n, cap, limit;
	bool over;
	struct resp *rs;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init_once(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- small helpers ------------------------------------------------------- */

static bool tag_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool an = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_';
		if (!an && (i == 0 || (c != '.' && c != '-')))
			return false;
	}
	return true;
}

/* is host in the insecure list (see the top of the file) */
static bool is_insecure(const char *host, const struct jf_reg_opts *o)
{
	/* host without its port: "[::1]:5000" -> "[::1]", "a:5000" -> "a" */
	size_t hl;
	if (host[0] == '[') {
		const char *e = strchr(host, ']');
		hl = e ? (size_t)(e - host) + 1 : strlen(host);
	} else {
		hl = strcspn(host, ":");
	}
	for (size_t i = 0; o && i < o->ninsecure; i++) {
		const char *e = o->insecure[i];
		if (!e)
			continue;
		if (strcasecmp(e, host) == 0)
			return true;
		bool has_port = e[0] == '[' ? strstr(e, "]:") != NULL : strchr(e, ':') != NULL;
		if (!has_port && strlen(e) == hl && strncasecmp(e, host, hl) == 0)
			return true;
	}
	return false;
}

static size_t header_cb(char *buf, size_t size, size_t nitems, void *ud)
{
	struct resp *rs = ud;
	size_t n = size * nitems;
	if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
		/* a new response (after a redirect, or a 100): forget the last */
		const char *sp = memchr(buf, ' ', n);
		rs->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		rs->www[0] = '\0';
		rs->www_bearer = false;
		return n;
	}
	static const char name[] = "www-authenticate:";
	if (n > sizeof(name) - 1 && strncasecmp(buf, name, sizeof(name) - 1) == 0) {
		const char *v = buf + sizeof(name) - 1;
		size_t vl = n - (sizeof(name) - 1);
		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
			vl--;
		bool bearer = vl >= 6 && strncasecmp(v, "bearer", 6) == 0;
		/* keep the first challenge, or the first Bearer one */
		if ((!rs->www[0] || (bearer && !rs->www_bearer)) && vl < sizeof(rs->www)) {
			memcpy(rs->www, v, vl);
			rs->www[vl] = '\0';
			rs->www_bearer = bearer;
		}
	}
	return n;
}

static size_t mem_cb(char *p, size_t size, size_t nitems, void *ud)
{
	struct membuf *m = ud;
	size_t n = size * nitems;
	if (m->rs->status != 200)
		return n; /* an error page: not the body we want */
	if (n > m->limit - m->n) {
		m->over = true;
		return 0;
	}
	if (m->n + n + 1 > m->cap) {
		size_t nc = m->cap ? m->cap : 16384;
		while (nc < m->n + n + 1)
			nc *= 2;
		if (nc > m->limit + 1)
			nc = m->limit + 1;
		char *np = realloc(m->p, nc);
		if (!np)
			return 0;
		m->p = np, m->cap = nc;
	}
	memcpy(m->p + m->n, p, n);
	m->n += n;
	m->p[m->n] = '\0';
	return n;
}

static void membuf_reset(struct membuf *m)
{
	m->n = 0;
	m->over = false;
	if (m->p)
		m->p[0] = '\0';
}

/* Options every request of r shares. */
static enum jf_err setup_easy(struct jf_reg *r, CURL *h, const char *url, struct resp *rs,
			      char *errbuf)
{
	const char *protos = r->insecure ? "http,https" : "https";
	errbuf[0] = '\0';
	if (curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, protos) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, protos) != CURLE_OK)
		return JF_ENOMEM;
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 8L);
	curl_easy_setopt(h, CURLOPT_UNRESTRICTED_AUTH, 0L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, r->connect_timeout_s);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, r->low_speed_time_s);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "jobfs");
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, rs);
	if (r->share)
		curl_easy_setopt(h, CURLOPT_SHARE, r->share);
	rs->status = 0;
	rs->www[0] = '\0';
	rs->www_bearer = false;
	return JF_OK;
}

/* the credentials of kind a on h: libcurl's own auth (see the top) */
static void set_auth_as(CURL *h, enum reg_auth a, char *secret)
{
	curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, NULL);
	curl_easy_setopt(h, CURLOPT_USERNAME, NULL);
	curl_easy_setopt(h, CURLOPT_PASSWORD, NULL);
	curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
	if (!secret)
		return;
	if (a == AUTH_BEARER) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
		curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, secret);
	} else if (a == AUTH_BASIC) {
		/* "user:password"; auth_lookup made sure of the ':' */
		char *colon = strchr(secret, ':');
		*colon = '\0';
		curl_easy_setopt(h, CURLOPT_USERNAME, secret); /* libcurl copies */
		curl_easy_setopt(h, CURLOPT_PASSWORD, colon + 1);
		*colon = ':';
	}
}

/* what r holds, on h */
static void set_auth(struct jf_reg *r, CURL *h)
{
	set_auth_as(h, r->auth,
		    r->auth == AUTH_BEARER  ? r->token
		    : r->auth == AUTH_BASIC ? r->creds
					    : NULL);
}

/* the server could not be reached (as opposed to a transfer that broke
 * once it had answered: status is the last status line seen, 0 if none) */
static bool unreachable(CURLcode c, long status)
{
	if (c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST ||
	    c == CURLE_COULDNT_RESOLVE_PROXY || c == CURLE_SSL_CONNECT_ERROR ||
	    c == CURLE_PEER_FAILED_VERIFICATION)
		return true;
	return status == 0 && (c == CURLE_OPERATION_TIMEDOUT || c == CURLE_GOT_NOTHING ||
			       c == CURLE_SEND_ERROR || c == CURLE_RECV_ERROR);
}

/* a transfer that failed below HTTP, as a message naming what */
static enum jf_err curl_failed(struct jf_reg *r, const char *who, const char *host, CURLcode c,
			       long status, const char *errbuf, const char *what,
			       struct jf_error *err)
{
	const char *why = errbuf[0] ? errbuf : curl_easy_strerror(c);
	if (unreachable(c, status))
		return jf_error_set(err, JF_EIO, 0, "%s %s is not reachable (%s)", who, host, why);
	return jf_error_set(err, JF_EIO, 0, "%s %s: fetching %s of %s failed (%s)", who, host, what,
			    r->repo, why);
}

static void load_creds(struct jf_reg *r, struct jf_error *err, enum jf_err *rc)
{
	*rc = JF_OK;
	if (r->creds_loaded || !r->auth_file)
		return;
	struct jf_error e2;
	jf_error_clear(&e2);
	enum jf_err e = jf_reg_auth_lookup(r->auth_file, r->host, &r->creds, &e2);
	if (e == JF_ENOENT)
		e = JF_OK; /* no file: no credentials */
	if (e) {
		*rc = e;
		if (err)
			*err = e2;
		return;
	}
	r->creds_loaded = true;
}

static enum jf_err need_login(struct jf_reg *r, struct jf_error *err)
{
	if (!r->auth_file)
		return jf_error_set(err, JF_EACCES, 0,
				    "registry %s requires a login for %s: no auth file given",
				    r->host, r->repo);
	return jf_error_set(err, JF_EACCES, 0,
			    "registry %s requires a login for %s: no credentials in %s", r->host,
			    r->repo, r->auth_file);
}

static enum jf_err refused(struct jf_reg *r, struct jf_error *err)
{
	if (!r->creds)
		return need_login(r, err);
	return jf_error_set(err, JF_EACCES, 0, "registry %s refused the credentials for %s",
			    r->host, r->repo);
}

/* ---- tokens -------------------------------------------------------------- */

static enum jf_err fetch_token(struct jf_reg *r, const struct jf_challenge *ch,
			       struct jf_error *err)
{
	enum jf_err rc = JF_OK;
	char *url = NULL, *esc_scope = NULL, *esc_service = NULL;
	json_t *root = NULL;
	struct resp rs;
	struct membuf mb = { .limit = JF_REG_TOKEN_BODY, .rs = &rs };
	char errbuf[CURL_ERROR_SIZE];
	char rq[96];
	jf_err_quote(ch->realm, strlen(ch->realm), 64, rq, sizeof(rq));

	bool https = strncasecmp(ch->realm, "https://", 8) == 0;
	bool http = strncasecmp(ch->realm, "http://", 7) == 0;
	if (!https && !(http && r->insecure)) {
		rc = jf_error_set(err, JF_EINVAL, 0,
				  "registry %s sends %s to the token realm \"%s\": want an %s URL",
				  r->host, r->repo, rq, r->insecure ? "http(s)" : "https");
		goto out;
	}
	for (const char *p = ch->realm; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f || *p == '#') {
			rc = jf_error_set(err, JF_EINVAL, 0,
					  "registry %s: bad token realm \"%s\" for %s", r->host, rq,
					  r->repo);
			goto out;
		}
	char scope[JF_IMGREF_REPO + 32];
	snprintf(scope, sizeof(scope), "repository:%s:pull", r->repo);
	esc_scope = curl_easy_escape(r->easy, scope, 0);
	esc_service = curl_easy_escape(r->easy, ch->service, 0);
	url = malloc(JF_REG_URL_MAX);
	if (!esc_scope || !esc_service || !url) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "registry %s: out of memory", r->host);
		goto out;
	}
	int k = snprintf(url, JF_REG_URL_MAX, "%s%c%s%s%sscope=%s", ch->realm,
			 strchr(ch->realm, '?') ? '&' : '?', ch->service[0] ? "service=" : "",
			 esc_service, ch->service[0] ? "&" : "", esc_scope);
	if (k < 0 || k >= JF_REG_URL_MAX) {
		rc = jf_error_set(err, JF_EINVAL, 0, "registry %s: token realm too long for %s",
				  r->host, r->repo);
		goto out;
	}
	CURL *h = r->easy;
	curl_easy_reset(h);
	if (setup_easy(r, h, url, &rs, errbuf)) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "registry %s: out of memory", r->host);
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, mem_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &mb);
	set_auth_as(h, AUTH_BASIC, r->creds); /* the credentials, to the realm */
	r->auth = AUTH_NONE;
	CURLcode c = curl_easy_perform(h);
	if (c != CURLE_OK && !(c == CURLE_WRITE_ERROR && mb.over)) {
		/* name the realm's host: "token server auth.docker.io is not reachable" */
		char th[JF_IMGREF_HOST], tq[JF_IMGREF_HOST + 16];
		const char *hs = strstr(ch->realm, "://") + 3;
		snprintf(th, sizeof(th), "%.*s", (int)strcspn(hs, "/?"), hs);
		jf_err_quote(th, strlen(th), 200, tq, sizeof(tq));
		rc = curl_failed(r, "token server", tq, c, rs.status, errbuf, "a token", err);
		goto out;
	}
	if (rs.status == 401 || rs.status == 403) {
		rc = refused(r, err);
		goto out;
	}
	if (rs.status != 200) {
		rc = jf_error_set(err, JF_EIO, 0,
				  "token server of registry %s answered %ld for a token for %s",
				  r->host, rs.status, r->repo);
		goto out;
	}
	if (mb.over) {
		rc = jf_error_set(err, JF_EFBIG, 0,
				  "token server of registry %s sent more than %d bytes for %s",
				  r->host, JF_REG_TOKEN_BODY, r->repo);
		goto out;
	}
	json_error_t je;
	root = json_loadb(mb.p ? mb.p : "", mb.n, 0, &je);
	json_t *t = root ? json_object_get(root, "token") : NULL;
	if (!json_is_string(t) || json_string_length(t) == 0)
		t = root ? json_object_get(root, "access_token") : NULL;
	if (!json_is_string(t) || json_string_length(t) == 0) {
		rc = jf_error_set(err, JF_EINVAL, 0,
				  "token server of registry %s sent no token for %s", r->host,
				  r->repo);
		goto out;
	}
	const char *tv = json_string_value(t);
	size_t tl = json_string_length(t);
	bool ok = tl <= JF_REG_TOKEN_MAX;
	for (size_t i = 0; ok && i < tl; i++)
		ok = tv[i] > 0x20 && tv[i] < 0x7f;
	if (!ok) {
		rc = jf_error_set(err, JF_EINVAL, 0,
				  "token server of registry %s sent a malformed token for %s",
				  r->host, r->repo);
		goto out;
	}
	char *tok = strdup(tv);
	if (!tok) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "registry %s: out of memory", r->host);
		goto out;
	}
	if (r->token) {
		explicit_bzero(r->token, strlen(r->token));
		free(r->token);
	}
	r->token = tok;
	r->auth = AUTH_BEARER;
out:
	if (root)
		json_decref(root);
	if (mb.p) {
		explicit_bzero(mb.p, mb.cap);
		free(mb.p);
	}
	curl_free(esc_scope);
	curl_free(esc_service);
	free(url);
	return rc;
}

/* Answer the challenge of a 401 (rs): r then holds what to retry with. */
static enum jf_err authenticate(struct jf_reg *r, const struct resp *rs, struct jf_error *err)
{
	enum jf_err rc;
	if (!rs->www[0])
		return jf_error_set(err, JF_EACCES, 0,
				    "registry %s answered 401 for %s without a challenge", r->host,
				    r->repo);
	struct jf_challenge ch;
	struct jf_error e2;
	jf_error_clear(&e2);
	if (jf_reg_parse_challenge(rs->www, &ch, &e2))
		return jf_error_set(err, JF_EINVAL, 0, "registry %s for %s: %s", r->host, r->repo,
				    e2.msg);
	load_creds(r, err, &rc);
	if (rc)
		return rc;
	if (strcmp(ch.scheme, "Basic") == 0) {
		if (!r->creds)
			return need_login(r, err);
		r->auth = AUTH_BASIC;
		r->gen++;
		return JF_OK;
	}
	if (strcmp(ch.scheme, "Bearer") == 0) {
		if ((rc = fetch_token(r, &ch, err)))
			return rc;
		r->gen++;
		return JF_OK;
	}
	char q[32];
	jf_err_quote(ch.scheme, strlen(ch.scheme), 16, q, sizeof(q));
	return jf_error_set(err, JF_ENOTSUP, 0,
			    "registry %s asks for \"%s\" authentication for %s, which jobfs does "
			    "not speak",
			    r->host, q, r->repo);
}

/* ---- the client ---------------------------------------------------------- */

enum jf_err jf_reg_new(const struct jf_imgref *ref, const struct jf_reg_opts *o,
		       struct jf_reg **out, struct jf_error *err)
{
	*out = NULL;
	if (!ref || ref->oci || !ref->host[0] || !ref->repo[0])
		return jf_error_set(err, JF_EINVAL, 0, "not a registry reference");
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc != CURLE_OK)
		return jf_error_set(err, JF_EIO, 0, "registry %s: libcurl would not start (%s)",
				    ref->host, curl_easy_strerror(curl_init_rc));
	struct jf_reg *r = calloc(1, sizeof(*r));
	if (!r)
		return jf_error_set(err, JF_ENOMEM, 0, "registry %s: out of memory", ref->host);
	snprintf(r->host, sizeof(r->host), "%s", ref->host);
	snprintf(r->repo, sizeof(r->repo), "%s", ref->repo);
	r->insecure = is_insecure(ref->host, o);
	const char *api = ref->host;
	if (strcasecmp(api, "docker.io") == 0 || strcasecmp(api, "index.docker.io") == 0)
		api = "registry-1.docker.io";
	snprintf(r->base, sizeof(r->base), "%s://%s", r->insecure ? "http" : "https", api);
	r->parallel = o && o->parallel > 0 ? o->parallel : 4;
	r->connect_timeout_s = o && o->connect_timeout_s > 0 ? o->connect_timeout_s : 10;
	r->low_speed_time_s = o && o->low_speed_time_s > 0 ? o->low_speed_time_s : 30;
	if (o && o->auth_file && !(r->auth_file = strdup(o->auth_file)))
		goto nomem;
	if (!(r->easy = curl_easy_init()))
		goto nomem;
	r->share = curl_share_init();
	if (r->share) {
		curl_share_setopt(r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
		curl_share_setopt(r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	}
	*out = r;
	return JF_OK;
nomem:
	jf_reg_free(r);
	return jf_error_set(err, JF_ENOMEM, 0, "registry %s: out of memory", ref->host);
}

void jf_reg_free(struct jf_reg *r)
{
	if (!r)
		return;
	if (r->easy)
		curl_easy_cleanup(r->easy);
	if (r->share)
		curl_share_cleanup(r->share);
	if (r->creds) {
		explicit_bzero(r->creds, strlen(r->creds));
		free(r->creds);
	}
	if (r->token) {
		explicit_bzero(r->token, strlen(r->token));
		free(r->token);
	}
	free(r->auth_file);
	free(r);
}

enum jf_err jf_reg_manifest(struct jf_reg *r, const char *what, char **body, size_t *len,
			    char ctype[128], char digest[JF_DIGEST_LEN], struct jf_error *err)
{
	*body = NULL;
	*len = 0;
	ctype[0] = '\0';
	digest[0] = '\0';
	bool by_digest = strncmp(what, "sha256:", 7) == 0;
	if (by_digest ? !jf_digest_valid(what) : !tag_ok(what)) {
		char q[96];
		jf_err_quote(what, strlen(what), 72, q, sizeof(q));
		return jf_error_set(err, JF_EINVAL, 0,
				    "registry %s: \"%s\" is neither a tag nor a sha256 digest",
				    r->host, q);
	}
	enum jf_err rc = JF_OK;
	struct resp rs;
	struct membuf mb = { .limit = JF_MF_MAX_BYTES, .rs = &rs };
	struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: " JF_MT_ACCEPT);
	char url[JF_REG_URL_MAX], errbuf[CURL_ERROR_SIZE];
	snprintf(url, sizeof(url), "%s/v2/%s/manifests/%s", r->base, r->repo, what);
	if (!hdrs) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "registry %s: out of memory", r->host);
		goto out;
	}
	for (int attempt = 0;; attempt++) {
		CURL *h = r->easy;
		curl_easy_reset(h);
		membuf_reset(&mb);
		if (setup_easy(r, h, url, &rs, errbuf)) {
			rc = jf_error_set(err, JF_ENOMEM, 0, "registry %s: out of memory", r->host);
			goto out;
		}
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, mem_cb);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &mb);
		set_auth(r, h);
		CURLcode c = curl_easy_perform(h);
		if (mb.over) {
			rc = jf_error_set(
				err, JF_EFBIG, 0,
				"registry %s sent more than %d bytes for manifest %s of %s",
				r->host, JF_MF_MAX_BYTES, what, r->repo);
			goto out;
		}
		if (c != CURLE_OK) {
			rc = curl_failed(r, "registry", r->host, c, rs.status, errbuf, "a manifest",
					 err);
			goto out;
		}
		if (rs.status != 401)
			break;
		if (attempt > 0) {
			rc = refused(r, err);
			goto out;
		}
		if ((rc = authenticate(r, &rs, err)))
			goto out;
	}
	if (rs.status == 404) {
		rc = jf_error_set(err, JF_ENOENT, 0, "registry %s has no manifest %s in %s",
				  r->host, what, r->repo);
		goto out;
	}
	if (rs.status == 403) {
		rc = refused(r, err);
		goto out;
	}
	if (rs.status != 200) {
		rc = jf_error_set(err, JF_EIO, 0, "registry %s answered %ld for manifest %s of %s",
				  r->host, rs.status, what, r->repo);
		goto out;
	}
	jf_sha256_buf(mb.p ? mb.p : "", mb.n, digest);
	if (!digest[0]) {
		rc = jf_error_set(err, JF_EIO, 0, "registry %s: sha256 failed", r->host);
		goto out;
	}
	if (by_digest && strcmp(digest, what) != 0) {
		rc = jf_error_set(err, JF_EINVAL, 0,
				  "registry %s sent a manifest for %s@%s that does not match its "
				  "digest (got %s)",
				  r->host, r->repo, what, digest);
		digest[0] = '\0';
		goto out;
	}
	char *ct = NULL;
	if (curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct) {
		size_t cl = strcspn(ct, "; \t");
		if (cl < 128) {
			memcpy(ctype, ct, cl);
			ctype[cl] = '\0';
		}
	}
	if (!mb.p && !(mb.p = calloc(1, 1))) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "registry %s: out of memory", r->host);
		goto out;
	}
	*body = mb.p;
	*len = mb.n;
	mb.p = NULL;
out:
	free(mb.p);
	curl_slist_free_all(hdrs);
	return rc;
}

/* ---- blobs --------------------------------------------------------------- */

struct xfer {
	struct jf_reg *r;
	const struct jf_desc *d;
	CURL *h;
	bool in_multi;
	int fd;
	char part[PATH_MAX]; /* "" once renamed or unlinked */
	char final[PATH_MAX];
	struct jf_sha256 sha;
	int64_t got;
	int64_t *fetched;
	unsigned gen; /* r->gen when it started */
	struct resp rs;
	struct jf_error werr; /* why the write callback stopped it */
	char errbuf[CURL_ERROR_SIZE];
};

static bool write_all(int fd, const char *p, size_t n, int *e)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			*e = errno;
			return false;
		}
		p += k, n -= (size_t)k;
	}
	return true;
}

static size_t blob_cb(char *p, size_t size, size_t nitems, void *ud)
{
	struct xfer *x = ud;
	struct jf_reg *r = x->r;
	size_t n = size * nitems;
	if (x->rs.status != 200)
		return n; /* an error page or a challenge: not the blob */
	if ((int64_t)n > x->d->size - x->got) {
		jf_error_set(&x->werr, JF_EINVAL, 0,
			     "registry %s: blob %s of %s is larger than its manifest says (%lld "
			     "bytes)",
			     r->host, x->d->digest, r->repo, (long long)x->d->size);
		return 0;
	}
	int e;
	if (!write_all(x->fd, p, n, &e)) {
		if (e == ENOSPC || e == EDQUOT)
			jf_error_set(&x->werr, JF_EIO, 0,
				     "no space left on device while fetching blob %s of %s from "
				     "registry %s",
				     x->d->digest, r->repo, r->host);
		else
			jf_error_set(&x->werr, JF_EIO, 0, "cannot write %s: %s", x->part,
				     strerror(e));
		return 0;
	}
	jf_sha256_update(&x->sha, p, n);
	x->got += (int64_t)n;
	*x->fetched += (int64_t)n;
	return n;
}

/* (Re)start x's transfer from byte 0 with what r holds now. */
static enum jf_err xfer_start(struct xfer *x, CURLM *m, struct jf_error *err)
{
	struct jf_reg *r = x->r;
	char url[JF_REG_URL_MAX];
	if (x->fd < 0) {
		int k = snprintf(x->part, sizeof(x->part), "%s.part.XXXXXX", x->final);
		if (k < 0 || (size_t)k >= sizeof(x->part)) {
			x->part[0] = '\0';
			return jf_error_set(err, JF_EINVAL, 0, "blob path %s is too long",
					    x->final);
		}
		x->fd = mkostemp(x->part, O_CLOEXEC);
		if (x->fd < 0) {
			int e = errno;
			x->part[0] = '\0';
			if (e == ENOSPC || e == EDQUOT)
				return jf_error_set(err, JF_EIO, 0,
						    "no space left on device while fetching blob "
						    "%s of %s from registry %s",
						    x->d->digest, r->repo, r->host);
			return jf_error_set(err, JF_EIO, 0, "cannot create %s.part: %s", x->final,
					    strerror(e));
		}
	} else if (ftruncate(x->fd, 0) != 0 || lseek(x->fd, 0, SEEK_SET) != 0) {
		return jf_error_set(err, JF_EIO, 0, "cannot truncate %s: %s", x->part,
				    strerror(errno));
	}
	jf_sha256_release(&x->sha);
	if (jf_sha256_init(&x->sha))
		return jf_error_set(err, JF_ENOMEM, 0, "registry %s: cannot start a sha256",
				    r->host);
	x->got = 0;
	jf_error_clear(&x->werr);
	if (!x->h && !(x->h = curl_easy_init()))
		return jf_error_set(err, JF_ENOMEM, 0, "registry %s: out of memory", r->host);
	curl_easy_reset(x->h);
	snprintf(url, sizeof(url), "%s/v2/%s/blobs/%s", r->base, r->repo, x->d->digest);
	if (setup_easy(r, x->h, url, &x->rs, x->errbuf))
		return jf_error_set(err, JF_ENOMEM, 0, "registry %s: out of memory", r->host);
	curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, blob_cb);
	curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
	set_auth(r, x->h);
	x->gen = r->gen;
	if (curl_multi_add_handle(m, x->h) != CURLM_OK)
		return jf_error_set(err, JF_ENOMEM, 0, "registry %s: cannot start a transfer",
				    r->host);
	x->in_multi = true;
	return JF_OK;
}

/* x's transfer ended (not with a 401): check it, and rename it into place */
static enum jf_err xfer_finish(struct xfer *x, CURLcode c, struct jf_error *err)
{
	struct jf_reg *r = x->r;
	const char *dg = x->d->digest;
	if (c == CURLE_WRITE_ERROR && x->werr.code) {
		if (err)
			*err = x->werr;
		return x->werr.code;
	}
	if (c != CURLE_OK)
		return curl_failed(r, "registry", r->host, c, x->rs.status, x->errbuf, "a blob",
				   err);
	if (x->rs.status == 404)
		return jf_error_set(err, JF_ENOENT, 0, "registry %s has no blob %s in %s", r->host,
				    dg, r->repo);
	if (x->rs.status != 200)
		return jf_error_set(err, x->rs.status == 403 ? JF_EACCES : JF_EIO, 0,
				    "registry %s answered %ld for blob %s of %s", r->host,
				    x->rs.status, dg, r->repo);
	if (x->got != x->d->size)
		return jf_error_set(err, JF_EINVAL, 0,
				    "registry %s sent %lld bytes for blob %s of %s, its manifest "
				    "says %lld",
				    r->host, (long long)x->got, dg, r->repo, (long long)x->d->size);
	char got[JF_DIGEST_LEN];
	jf_sha256_final(&x->sha, got);
	if (strcmp(got, dg) != 0)
		return jf_error_set(err, JF_EINVAL, 0,
				    "registry %s: blob %s of %s does not match its digest (got %s)",
				    r->host, dg, r->repo, got[0] ? got : "no sha256");
	int fd = x->fd;
	x->fd = -1;
	if (close(fd) != 0)
		return jf_error_set(err, JF_EIO, 0, "cannot write %s: %s", x->part,
				    strerror(errno));
	if (rename(x->part, x->final) != 0)
		return jf_error_set(err, JF_EIO, 0, "cannot rename %s to %s: %s", x->part, x->final,
				    strerror(errno));
	x->part[0] = '\0';
	return JF_OK;
}

static void xfer_release(struct xfer *x, CURLM *m)
{
	if (x->h) {
		if (x->in_multi)
			curl_multi_remove_handle(m, x->h);
		curl_easy_cleanup(x->h);
	}
	if (x->fd >= 0)
		close(x->fd);
	if (x->part[0])
		unlink(x->part);
	jf_sha256_release(&x->sha);
}

/* A transfer answered 401: retry it with newer credentials, or get them
 * (once a call), or give up. */
static enum jf_err xfer_unauthorized(struct xfer *x, CURLM *m, bool *reauthed, struct jf_error *err)
{
	struct jf_reg *r = x->r;
	enum jf_err rc;
	if (x->gen == r->gen) {
		if (*reauthed)
			return refused(r, err);
		*reauthed = true;
		if ((rc = authenticate(r, &x->rs, err)))
			return rc;
	}
	return xfer_start(x, m, err);
}

enum jf_err jf_reg_blobs(struct jf_reg *r, const struct jf_desc *d, size_t n, const char *dir,
			 int64_t *fetched, struct jf_error *err)
{
	enum jf_err rc = JF_OK;
	struct xfer *xs = NULL;
	size_t nx = 0, next = 0, active = 0;
	bool reauthed = false;
	CURLM *m = NULL;
	*fetched = 0;
	for (size_t i = 0; i < n; i++)
		if (!jf_digest_valid(d[i].digest) || d[i].size < 0) {
			char q[96];
			jf_err_quote(d[i].digest, strnlen(d[i].digest, sizeof(d[i].digest)), 80, q,
				     sizeof(q));
			return jf_error_set(err, JF_EINVAL, 0,
					    "blob %zu of %s: bad descriptor (digest \"%s\", size "
					    "%lld)",
					    i, r->repo, q, (long long)d[i].size);
		}
	if (n && !(xs = calloc(n, sizeof(*xs))))
		return jf_error_set(err, JF_ENOMEM, 0, "registry %s: out of memory", r->host);
	/* what is not in dir yet, each digest once */
	for (size_t i = 0; i < n; i++) {
		bool dup = false;
		for (size_t j = 0; j < i && !dup; j++)
			dup = strcmp(d[j].digest, d[i].digest) == 0;
		if (dup)
			continue;
		struct xfer *x = &xs[nx];
		int k = snprintf(x->final, sizeof(x->final), "%s/%s", dir, d[i].digest + 7);
		if (k < 0 || (size_t)k >= sizeof(x->final) - 16) {
			rc = jf_error_set(err, JF_EINVAL, 0, "blob directory %s is too long", dir);
			goto out;
		}
		struct stat st;
		if (stat(x->final, &st) == 0)
			continue;
		x->r = r, x->d = &d[i], x->fd = -1, x->fetched = fetched;
		nx++;
	}
	if (nx == 0)
		goto out;
	if (!(m = curl_multi_init())) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "registry %s: out of memory", r->host);
		goto out;
	}
	for (;;) {
		while (active < (size_t)r->parallel && next < nx) {
			if ((rc = xfer_start(&xs[next++], m, err)))
				goto out;
			active++;
		}
		if (active == 0)
			break;
		int running = 0;
		CURLMcode mc = curl_multi_perform(m, &running);
		if (mc != CURLM_OK) {
			rc = jf_error_set(err, JF_EIO, 0, "registry %s: %s", r->host,
					  curl_multi_strerror(mc));
			goto out;
		}
		CURLMsg *msg;
		int q;
		while ((msg = curl_multi_info_read(m, &q))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			CURL *h = msg->easy_handle;
			CURLcode c = msg->data.result; /* msg dies with remove_handle */
			struct xfer *x = NULL;
			curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&x);
			curl_multi_remove_handle(m, h);
			x->in_multi = false;
			active--;
			if (c == CURLE_OK && x->rs.status == 401) {
				if ((rc = xfer_unauthorized(x, m, &reauthed, err)))
					goto out;
				active++;
				continue;
			}
			if ((rc = xfer_finish(x, c, err)))
				goto out;
		}
		if (active)
			curl_multi_poll(m, NULL, 0, 1000, NULL);
	}
out:
	for (size_t i = 0; i < nx; i++)
		xfer_release(&xs[i], m);
	if (m)
		curl_multi_cleanup(m);
	free(xs);
	return rc;
}
