/*
 * rest.c - the slurmrestd client (openapi/v0.0.38, Slurm 22.05).
 *
 * DESIGN
 *
 * A call is three steps.  fetch() sends one HTTP request on the handle's
 * easy handle (reset before each request, so no option leaks from one to
 * the next, while its connection cache survives and keeps the connection
 * open) and reads the answer into the handle's buffer, which refuses to
 * grow past JF_SLURM_BODY_MAX; the body is parsed once, into a jansson
 * tree.  verdict() turns status and tree into JF_OK or an error
 * (check_answer() in rest_parse.c; the JWT ambiguity below).  Only then
 * are records read out of the tree.  Nothing is retried here: the caller
 * decides when to ask again.
 *
 * How an answer is read (check_answer(): the error numbers decide, not
 * the HTTP status), which number means what, and how the job and node
 * records are read out of the tree: at the top of rest_parse.c, which
 * holds that code.
 *
 * The JWT ambiguity.  With slurmctld stopped, slurmrestd answers (after
 * ~9 s of connect retries) -1 for the loads (ping, jobs, job, nodes), 1800
 * for submit and cancel, 1000 for update.  A token slurmctld refuses (bad
 * signature, expired) makes it drop the connection, and slurmrestd answers
 * at once with -1, 1000, or 5005 ("Zero Bytes were transmitted or
 * received").  So over http an EIO verdict resting on -1, 1000 or 5005 is
 * settled by one more request: a signal to job 0, which never exists.
 * 2017 means slurmctld heard us (the first answer stands: EIO), 5005 means
 * it hung up on the token (EACCES), anything else stands as EIO.  The
 * probe waits PROBE_TIMEOUT_MS at most: a rejection comes in milliseconds,
 * and slurmctld down would cost another 9 s.  A token whose "exp" has
 * passed is refused before sending.
 *
 * Job updates.  POST /job/<id> {"array": "N"} sets an array's throttle
 * when sent to the master id, answering the number-less entry above; sent
 * to an element ("810_2") or to a plain job it answers the same (or
 * nothing) and changes nothing; and it takes "abc" for 0.  So the value is
 * checked before sending and the job is read back afterwards: every array
 * record must show array_max_tasks = N.
 *
 * Submissions.  A job Slurm queues although it can never start under the
 * partition's limits (EnforcePartLimits=NO; 99 nodes on a 4-node
 * partition) comes back with its job_id and error_code 2015; one it queues
 * held with 2042.  2015 is taken as a refusal (the job is cancelled), any
 * other number that comes with a job_id as success: the job exists.
 *
 * USE
 *
 * main() calls jf_slurm_rest_global_init() before it starts threads; the
 * slurm backend's own thread makes a handle and does all its HTTP with it.
 * A call blocks for at most timeout_ms per request: one request, two for a
 * job update with "array" (the read-back) and for a submission Slurm
 * answers 2015 (the cancel), plus PROBE_TIMEOUT_MS for an ambiguous
 * answer over JWT.  JF_EIO is "try again later"; the other codes are
 * final for that request.
 *
 * What holds: a handle's buffer is empty or holds the last answer; it is
 * given back when it grew past BUF_KEEP.  Outputs are set only on JF_OK
 * (except submit's documented queued-but-not-cancelled case).  The only
 * global is libcurl's own, set up once under pthread_once().
 */
#include "backends/slurm/rest.h"
#include "backends/slurm/rest_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF_KEEP         ((size_t)4 << 20) /* a bigger answer buffer is freed after use */
#define TOKEN_MAX        16384             /* bytes of a JWT */
#define USER_MAX         256               /* bytes of a user name */
#define URL_MAX          1024
#define SUN_PATH_MAX     107  /* sockaddr_un.sun_path, less the NUL */
#define PROBE_TIMEOUT_MS 2000 /* the JWT probe's own limit */

struct buf {
	char *p;
	size_t len, cap;
	bool over; /* the answer went past JF_SLURM_BODY_MAX */
	bool nomem;
};

struct jf_slurm_rest {
	CURL *curl;
	char *base;        /* "http://localhost" on a unix socket, else the URL */
	char *unix_path;   /* NULL over TCP */
	char *where;       /* for messages: the socket path or host:port */
	char *token;       /* NULL on a unix socket */
	char *user;        /* opts.user, NULL */
	char *token_user;  /* the JWT's "sun" claim, NULL */
	int64_t token_exp; /* the JWT's "exp", 0 if unknown */
	long timeout_ms;
	const atomic_bool *quit; /* set: the request in progress is given up */
	struct buf ans;
	char errbuf[CURL_ERROR_SIZE];
};

/* ---- set-up ------------------------------------------------------------- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init_once(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

enum jf_err jf_slurm_rest_global_init(void)
{
	pthread_once(&global_once, global_init_once);
	return global_rc == CURLE_OK ? JF_OK : JF_EIO;
}

/* Visible ASCII only, 1 .. max bytes: safe as an HTTP header value. */
static bool header_safe(const char *s, size_t max)
{
	size_t n = 0;
	for (; s[n]; n++)
		if ((unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e || n >= max)
			return false;
	return n > 0;
}

static int b64url_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-' || c == '+')
		return 62;
	if (c == '_' || c == '/')
		return 63;
	return -1;
}

/* The "exp" and "sun" claims of a JWT, when it decodes; else left alone.
 * Only a hint: slurmctld checks the token. */
static enum jf_err jwt_claims(const char *tok, int64_t *exp, char **sun)
{
	const char *a = strchr(tok, '.'), *b = a ? strchr(a + 1, '.') : NULL;
	if (!b || b == a + 1)
		return JF_OK;
	size_t n = (size_t)(b - a - 1), k = 0;
	unsigned char *out = malloc(n);
	if (!out)
		return JF_ENOMEM;
	uint32_t acc = 0;
	int bits = 0;
	for (const char *p = a + 1; p < b && *p != '='; p++) {
		int v = b64url_value(*p);
		if (v < 0) {
			free(out);
			return JF_OK;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (unsigned char)(acc >> bits);
		}
	}
	json_t *claims = json_loadb((const char *)out, k, 0, NULL);
	free(out);
	if (!claims)
		return JF_OK;
	json_t *e = json_object_get(claims, "exp");
	json_t *s = json_object_get(claims, "sun");
	enum jf_err rc = JF_OK;
	if (json_is_integer(e))
		*exp = json_integer_value(e);
	if (json_is_string(s) && header_safe(json_string_value(s), USER_MAX) &&
	    !(*sun = strdup(json_string_value(s))))
		rc = JF_ENOMEM;
	json_decref(claims);
	return rc;
}

void jf_slurm_rest_free(struct jf_slurm_rest *r)
{
	if (!r)
		return;
	if (r->curl)
		curl_easy_cleanup(r->curl);
	free(r->base);
	free(r->unix_path);
	free(r->where);
	free(r->token);
	free(r->user);
	free(r->token_user);
	free(r->ans.p);
	free(r);
}

enum jf_err jf_slurm_rest_new(const struct jf_slurm_rest_opts *o, struct jf_slurm_rest **out,
			      struct jf_error *err)
{
	struct jf_slurm_rest *r = NULL;
	enum jf_err rc;

	*out = NULL;
	if (!o || !o->url)
		return jf_error_set(err, JF_EINVAL, 0, "slurmrestd: no URL");
	if (jf_slurm_rest_global_init() != JF_OK)
		return jf_error_set(err, JF_EIO, 0, "slurmrestd: curl_global_init failed");
	if (!(r = calloc(1, sizeof(*r))))
		goto nomem;
	r->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : JF_SLURM_TIMEOUT_MS_DEFAULT;

	const char *url = o->url;
	char q[128];
	jf_err_quote(url, strlen(url), 80, q, sizeof(q));
	if (!strncmp(url, "unix:", 5)) {
		const char *path = url + 5;
		if (path[0] != '/') {
			rc = jf_error_set(err, JF_EINVAL, 0,
					  "slurmrestd URL \"%s\": the socket path must be absolute",
					  q);
			goto fail;
		}
		if (strlen(path) > SUN_PATH_MAX) {
			rc = jf_error_set(err, JF_EINVAL, 0,
					  "slurmrestd URL \"%s\": socket path longer than %d bytes",
					  q, SUN_PATH_MAX);
			goto fail;
		}
		if (!(r->unix_path = strdup(path)) || !(r->where = strdup(path)) ||
		    !(r->base = strdup("http://localhost")))
			goto nomem;
	} else if (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8)) {
		const char *host = strstr(url, "://") + 3;
		size_t len = strlen(url);
		while (len > 0 && url[len - 1] == '/')
			len--;
		if (!header_safe(url, URL_MAX - 200) || *host == '\0' || *host == '/') {
			rc = jf_error_set(err, JF_EINVAL, 0, "slurmrestd URL \"%s\" is not usable",
					  q);
			goto fail;
		}
		if (!o->token) {
			rc = jf_error_set(err, JF_EINVAL, 0,
					  "slurmrestd URL \"%s\": http needs a JWT (SLURM_JWT)", q);
			goto fail;
		}
		if (!(r->base = strndup(url, len)) ||
		    !(r->where = strndup(host, strcspn(host, "/"))))
			goto nomem;
	} else {
		rc = jf_error_set(err, JF_EINVAL, 0,
				  "slurmrestd URL \"%s\": not unix:/path or http://host:port", q);
		goto fail;
	}
	if (o->token && r->unix_path == NULL) {
		const char *tok = o->token;
		if (!strncmp(tok, "SLURM_JWT=", 10))
			tok += 10; /* as `scontrol token` prints it */
		if (!header_safe(tok, TOKEN_MAX)) {
			rc = jf_error_set(
				err, JF_EINVAL, 0,
				"slurmrestd: the JWT is empty, longer than %d bytes or has "
				"characters a header cannot carry",
				TOKEN_MAX);
			goto fail;
		}
		if (!(r->token = strdup(tok)))
			goto nomem;
		if (jwt_claims(r->token, &r->token_exp, &r->token_user) != JF_OK)
			goto nomem;
	}
	if (o->user) {
		if (!header_safe(o->user, USER_MAX)) {
			rc = jf_error_set(err, JF_EINVAL, 0,
					  "slurmrestd: user name is empty or not a header value");
			goto fail;
		}
		if (!(r->user = strdup(o->user)))
			goto nomem;
	}
	if (!(r->curl = curl_easy_init())) {
		rc = jf_error_set(err, JF_EIO, 0, "slurmrestd: curl_easy_init failed");
		goto fail;
	}
	*out = r;
	return JF_OK;
nomem:
	rc = jf_error_set(err, JF_ENOMEM, 0, "slurmrestd: out of memory");
fail:
	jf_slurm_rest_free(r);
	return rc;
}

/* ---- one request -------------------------------------------------------- */

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t n = size * nmemb;

	if (n > JF_SLURM_BODY_MAX - b->len) {
		b->over = true;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 16384;
		while (cap < b->len + n + 1)
			cap *= 2;
		if (cap > JF_SLURM_BODY_MAX + 1)
			cap = JF_SLURM_BODY_MAX + 1;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->nomem = true;
			return 0;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return n;
}

static enum jf_err curl_failure(struct jf_slurm_rest *r, CURLcode cc, const char *method,
				const char *path, struct jf_error *err)
{
	long os = 0;
	const char *detail = r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc);

	curl_easy_getinfo(r->curl, CURLINFO_OS_ERRNO, &os);
	switch (cc) {
	case CURLE_WRITE_ERROR:
	case CURLE_FILESIZE_EXCEEDED:
		if (r->ans.nomem)
			return jf_error_set(err, JF_ENOMEM, 0,
					    "slurmrestd: out of memory for an answer");
		if (r->ans.over || cc == CURLE_FILESIZE_EXCEEDED)
			return jf_error_set(err, JF_EIO, 0,
					    "slurmrestd answer to %s %s is larger than %zu MiB",
					    method, path, JF_SLURM_BODY_MAX >> 20);
		break;
	case CURLE_OUT_OF_MEMORY:
		return jf_error_set(err, JF_ENOMEM, 0, "slurmrestd: out of memory (curl)");
	case CURLE_COULDNT_CONNECT:
		if (os)
			return jf_error_set(err, JF_EIO, 0,
					    "slurmrestd unreachable: connect to %s: %s", r->where,
					    strerror((int)os));
		return jf_error_set(err, JF_EIO, 0, "slurmrestd unreachable: connect to %s: %s",
				    r->where, detail);
	case CURLE_COULDNT_RESOLVE_HOST:
		return jf_error_set(err, JF_EIO, 0, "slurmrestd unreachable: %s", detail);
	case CURLE_OPERATION_TIMEDOUT:
		return jf_error_set(err, JF_EIO, 0,
				    "slurmrestd at %s did not answer %s %s within %ld ms", r->where,
				    method, path, r->timeout_ms);
	default:
		break;
	}
	return jf_error_set(err, JF_EIO, 0, "slurmrestd at %s: %s %s failed: %s", r->where, method,
			    path, detail);
}

/* Append "name: value" (or name alone when value is NULL) to *h. */
static bool add_header(struct curl_slist **h, const char *name, const char *value)
{
	char *line = NULL;
	if (value && asprintf(&line, "%s: %s", name, value) < 0)
		return false;
	struct curl_slist *t = curl_slist_append(*h, line ? line : name);
	free(line);
	if (!t)
		return false;
	*h = t;
	return true;
}

#define SETOPT(opt, val)                                                                           \
	do {                                                                                       \
		if ((cc = curl_easy_setopt(r->curl, opt, val)) != CURLE_OK)                        \
			goto curl_failed;                                                          \
	} while (0)

/* Send method path (below /slurm/<API>) with payload (POST, NULL
 * otherwise) and read the answer into *rep.  JF_OK means an HTTP answer
 * came, whatever it says. */
/* libcurl calls it during a transfer: non-zero gives the transfer up. */
static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	const struct jf_slurm_rest *r = ctx;
	return r->quit && atomic_load(r->quit) ? 1 : 0;
}

void jf_slurm_rest_quit_on(struct jf_slurm_rest *r, const atomic_bool *quit)
{
	r->quit = quit;
}

static enum jf_err fetch(struct jf_slurm_rest *r, const char *method, const char *path,
			 const char *user, const char *payload, struct reply *rep,
			 struct jf_error *err)
{
	struct curl_slist *h = NULL;
	char url[URL_MAX];
	CURLcode cc = CURLE_OK;
	enum jf_err rc = JF_OK;

	memset(rep, 0, sizeof(*rep));
	if (r->token) {
		if (r->token_exp > 0 && (int64_t)time(NULL) >= r->token_exp) {
			char when[32];
			time_t t = (time_t)r->token_exp;
			struct tm tm;
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
			return jf_error_set(err, JF_EACCES, 0,
					    "slurmrestd: the JWT expired at %s; get a new one "
					    "(scontrol token)",
					    when);
		}
		if (!user)
			user = r->user ? r->user : r->token_user;
		if (!user)
			return jf_error_set(err, JF_EINVAL, 0,
					    "slurmrestd: no user name for X-SLURM-USER-NAME (the "
					    "JWT names none)");
		if (!header_safe(user, USER_MAX))
			return jf_error_set(err, JF_EINVAL, 0,
					    "slurmrestd: user name is empty or not a header value");
	}
	if ((size_t)snprintf(url, sizeof(url), "%s/slurm/" JF_SLURM_API "%s", r->base, path) >=
	    sizeof(url))
		return jf_error_set(err, JF_EINVAL, 0, "slurmrestd: URL too long");

	if (r->ans.cap > BUF_KEEP) {
		free(r->ans.p);
		r->ans.p = NULL;
		r->ans.cap = 0;
	}
	r->ans.len = 0;
	r->ans.over = r->ans.nomem = false;
	r->errbuf[0] = '\0';

	if (!add_header(&h, "Accept", "application/json") ||
	    (payload && (!add_header(&h, "Content-Type", "application/json") ||
			 /* no "Expect: 100-continue" round trip before a big body */
			 !add_header(&h, "Expect:", NULL))) ||
	    (r->token && (!add_header(&h, "X-SLURM-USER-NAME", user) ||
			  !add_header(&h, "X-SLURM-USER-TOKEN", r->token)))) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "slurmrestd: out of memory for headers");
		goto out;
	}

	curl_easy_reset(r->curl);
	SETOPT(CURLOPT_URL, url);
	if (r->quit) {
		SETOPT(CURLOPT_NOPROGRESS, 0L);
		SETOPT(CURLOPT_XFERINFOFUNCTION, on_progress);
		SETOPT(CURLOPT_XFERINFODATA, r);
	}
	if (r->unix_path)
		SETOPT(CURLOPT_UNIX_SOCKET_PATH, r->unix_path);
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_TIMEOUT_MS, r->timeout_ms);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS, r->timeout_ms);
	SETOPT(CURLOPT_PROXY, ""); /* no http_proxy from the environment */
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SETOPT(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)JF_SLURM_BODY_MAX);
	SETOPT(CURLOPT_WRITEFUNCTION, on_data);
	SETOPT(CURLOPT_WRITEDATA, &r->ans);
	SETOPT(CURLOPT_ERRORBUFFER, r->errbuf);
	SETOPT(CURLOPT_HTTPHEADER, h);
	if (payload) {
		SETOPT(CURLOPT_POST, 1L);
		SETOPT(CURLOPT_POSTFIELDS, payload);
		SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(payload));
	} else if (strcmp(method, "GET") != 0) {
		SETOPT(CURLOPT_CUSTOMREQUEST, method);
	}
	/* A submission goes on a connection of its own: slurmrestd may have
	 * dropped an idle kept-alive one, and a submission that fails that way
	 * cannot be sent again blindly (it may have been taken).  Anything
	 * else is safe to send again once, fresh, when a reused connection
	 * turns out dead. */
	bool submit = payload && strcmp(path, "/job/submit") == 0;
	if (submit)
		SETOPT(CURLOPT_FRESH_CONNECT, 1L);
	cc = curl_easy_perform(r->curl);
	long fresh = 1;
	if (!submit &&
	    (cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR || cc == CURLE_GOT_NOTHING) &&
	    curl_easy_getinfo(r->curl, CURLINFO_NUM_CONNECTS, &fresh) == CURLE_OK && fresh == 0) {
		r->ans.len = 0;
		r->ans.over = false;
		r->errbuf[0] = '\0';
		SETOPT(CURLOPT_FRESH_CONNECT, 1L);
		cc = curl_easy_perform(r->curl);
	}
	if (cc != CURLE_OK)
		goto curl_failed;
	curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &rep->status);
	rep->body = r->ans.p ? r->ans.p : "";
	rep->len = r->ans.len;
	if (rep->len > 0)
		rep->root = json_loadb(rep->body, rep->len, 0, &rep->jerr);
	goto out;
curl_failed:
	rc = curl_failure(r, cc, method, path, err);
out:
	/* the header list must outlive the transfer, not the handle */
	curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(h);
	return rc;
}

void reply_release(struct reply *rep)
{
	json_decref(rep->root);
	rep->root = NULL;
}

/* The verdict, and over http the JWT ambiguity settled (see the top). */
static enum jf_err verdict(struct jf_slurm_rest *r, const char *user, const struct reply *rep,
			   const char *what, int *slurm_errno, struct jf_error *err)
{
	int num, pnum = 0;
	enum jf_err rc = check_answer(rep, what, &num, err);

	if (slurm_errno)
		*slurm_errno = num;
	if (rc != JF_EIO || !r->token ||
	    (num != SE_UNSPECIFIED && num != SE_UNEXPECTED_MSG && num != SE_ZERO_BYTES))
		return rc;

	char first[JF_ERRMSG_MAX] = "";
	struct reply probe;
	struct jf_error perr;
	if (err)
		snprintf(first, sizeof(first), "%s", err->msg);
	jf_error_clear(&perr);
	/* a rejection comes at once; slurmctld down takes ~9 s: no need to wait */
	long timeout_ms = r->timeout_ms;
	if (r->timeout_ms > PROBE_TIMEOUT_MS)
		r->timeout_ms = PROBE_TIMEOUT_MS;
	if (fetch(r, "DELETE", "/job/0?signal=CONT", user, NULL, &probe, &perr) == JF_OK) {
		check_answer(&probe, "probe", &pnum, &perr);
		reply_release(&probe);
	}
	r->timeout_ms = timeout_ms;
	if (pnum == SE_ZERO_BYTES)
		return jf_error_set(err, JF_EACCES, 0,
				    "slurmctld rejected the JWT (it hangs up on the token; first "
				    "answer: %s)",
				    first);
	return JF_EIO;
}

/* ---- the calls ---------------------------------------------------------- */

/* "123" or "123_4", each number 1 to 10 digits */
static enum jf_err check_id(const char *id, struct jf_error *err)
{
	size_t a = id ? strspn(id, "0123456789") : 0, b = 0;

	if (id && a >= 1 && a <= 10 && id[a] == '_')
		b = strspn(id + a + 1, "0123456789");
	if (id && a >= 1 && a <= 10 &&
	    (id[a] == '\0' || (id[a] == '_' && b >= 1 && b <= 10 && id[a + 1 + b] == '\0')))
		return JF_OK;
	char q[64] = "(null)";
	if (id)
		jf_err_quote(id, strlen(id), 24, q, sizeof(q));
	return jf_error_set(err, JF_EINVAL, 0, "Slurm job id \"%s\" is not N or N_I", q);
}

/* fetch + verdict; on JF_OK *rep holds the answer (release it) */
static enum jf_err call(struct jf_slurm_rest *r, const char *method, const char *path,
			const char *user, const char *payload, const char *what, struct reply *rep,
			struct jf_error *err)
{
	enum jf_err rc = fetch(r, method, path, user, payload, rep, err);
	if (rc)
		return rc;
	if ((rc = verdict(r, user, rep, what, NULL, err)))
		reply_release(rep);
	return rc;
}

enum jf_err jf_slurm_ping(struct jf_slurm_rest *r, struct jf_error *err)
{
	struct reply rep;
	enum jf_err rc = call(r, "GET", "/ping", NULL, NULL, "ping", &rep, err);
	if (rc)
		return rc;
	json_t *pings = json_object_get(rep.root, "pings"), *p;
	const char *seen = NULL;
	size_t i;
	json_array_foreach(pings, i, p)
	{
		const char *s = json_string_value(json_object_get(p, "ping"));
		if (s && !strcmp(s, "UP")) {
			reply_release(&rep);
			return JF_OK;
		}
		if (s)
			seen = s;
	}
	char q[64] = "";
	if (seen)
		jf_err_quote(seen, strlen(seen), 24, q, sizeof(q));
	rc = jf_error_set(err, JF_EIO, 0, "slurmctld unreachable: ping answers %s%s%s",
			  seen ? "\"" : "no controller", q, seen ? "\"" : "");
	reply_release(&rep);
	return rc;
}

enum jf_err jf_slurm_submit(struct jf_slurm_rest *r, const char *user, json_t *body,
			    int64_t *job_id, struct jf_error *err)
{
	struct reply rep;
	enum jf_err rc;
	char *payload;

	*job_id = 0;
	if (!json_is_object(body))
		return jf_error_set(err, JF_EINVAL, 0,
				    "Slurm job submission: body is not an object");
	if (!(payload = json_dumps(body, JSON_COMPACT)))
		return jf_error_set(err, JF_ENOMEM, 0, "Slurm job submission: out of memory");
	rc = fetch(r, "POST", "/job/submit", user, payload, &rep, err);
	free(payload);
	if (rc)
		return rc;

	json_t *jid = json_object_get(rep.root, "job_id");
	if (rep.status >= 200 && rep.status < 300 && json_is_integer(jid) &&
	    json_integer_value(jid) > 0) {
		/* queued: any error number is a remark, but 2015 (see the top) */
		int64_t id = json_integer_value(jid);
		json_t *errors = json_object_get(rep.root, "errors"), *e;
		char text[TEXT_MAX + 1], path[64], what[64];
		size_t i;
		bool refused = false;
		json_array_foreach(errors, i, e) if (entry_number(e) == SE_PART_CONFIG_UNAVAILABLE)
			refused = true;
		if (!refused) {
			reply_release(&rep);
			*job_id = id;
			return JF_OK;
		}
		errors_text(errors, text, sizeof(text));
		reply_release(&rep);
		snprintf(path, sizeof(path), "/job/%" PRId64, id);
		snprintf(what, sizeof(what), "cancel of job %" PRId64, id);
		struct jf_error cerr;
		jf_error_clear(&cerr);
		rc = call(r, "DELETE", path, user, NULL, what, &rep, &cerr);
		if (rc == JF_OK || rc == JF_ENOENT) {
			if (rc == JF_OK)
				reply_release(&rep);
			return jf_error_set(
				err, JF_EINVAL, 0,
				"Slurm refused the job: %s (error %d); it had queued it "
				"as job %" PRId64 ", now cancelled",
				text, SE_PART_CONFIG_UNAVAILABLE, id);
		}
		*job_id = id;
		return jf_error_set(err, rc, 0,
				    "Slurm queued job %" PRId64 " that can never start (%s, error "
				    "%d) and cancelling it failed: %s",
				    id, text, SE_PART_CONFIG_UNAVAILABLE, cerr.msg);
	}
	rc = verdict(r, user, &rep, "job", NULL, err);
	reply_release(&rep);
	if (rc == JF_OK)
		rc = jf_error_set(err, JF_EIO, 0,
				  "slurmrestd answered the submission without a job_id");
	return rc;
}

static enum jf_err get_jobs(struct jf_slurm_rest *r, const char *user, const char *path,
			    const char *what, struct jf_slurm_job **jobs, size_t *n,
			    bool *unchanged, struct jf_error *err)
{
	struct reply rep;
	enum jf_err rc;

	*jobs = NULL;
	*n = 0;
	if (unchanged)
		*unchanged = false;
	if ((rc = call(r, "GET", path, user, NULL, what, &rep, err)))
		return rc;
	if (rep.status == 304 && unchanged) {
		*unchanged = true;
		reply_release(&rep);
		return JF_OK;
	}
	if (!rep.root)
		rc = jf_error_set(err, JF_EIO, 0, "slurmrestd answered HTTP %ld without a body",
				  rep.status);
	else
		rc = jobs_from(rep.root, jobs, n, err);
	reply_release(&rep);
	return rc;
}

enum jf_err jf_slurm_job_get(struct jf_slurm_rest *r, const char *user, const char *id,
			     struct jf_slurm_job **jobs, size_t *n, struct jf_error *err)
{
	char path[64], what[64];
	enum jf_err rc;

	*jobs = NULL;
	*n = 0;
	if ((rc = check_id(id, err)))
		return rc;
	snprintf(path, sizeof(path), "/job/%s", id);
	snprintf(what, sizeof(what), "request for job %s", id);
	if ((rc = get_jobs(r, user, path, what, jobs, n, NULL, err)))
		return rc;
	if (*n == 0)
		return jf_error_set(err, JF_ENOENT, 0, "Slurm has no record of job %s", id);
	return JF_OK;
}

enum jf_err jf_slurm_jobs_all(struct jf_slurm_rest *r, const char *user, int64_t update_time,
			      struct jf_slurm_job **jobs, size_t *n, bool *unchanged,
			      struct jf_error *err)
{
	char path[64];
	bool dummy;

	if (update_time > 0)
		snprintf(path, sizeof(path), "/jobs?update_time=%" PRId64, update_time);
	else
		snprintf(path, sizeof(path), "/jobs");
	return get_jobs(r, user, path, "job list request", jobs, n, unchanged ? unchanged : &dummy,
			err);
}

/* The throttle in props: -1 if none, -2 if it is not a whole number. */
static int64_t wanted_throttle(json_t *props)
{
	json_t *v = json_object_get(props, "array");
	if (!v)
		return -1;
	if (json_is_integer(v))
		return json_integer_value(v) >= 0 && json_integer_value(v) <= INT32_MAX
			       ? json_integer_value(v)
			       : -2;
	const char *s = json_string_value(v);
	size_t k = s ? strspn(s, "0123456789") : 0;
	if (!s || k == 0 || k > 9 || s[k] != '\0')
		return -2;
	return strtoll(s, NULL, 10);
}

enum jf_err jf_slurm_job_update(struct jf_slurm_rest *r, const char *user, const char *id,
				json_t *props, struct jf_error *err)
{
	char path[64], what[64];
	struct reply rep;
	enum jf_err rc;

	if ((rc = check_id(id, err)))
		return rc;
	if (!json_is_object(props))
		return jf_error_set(err, JF_EINVAL, 0, "update of job %s: not a JSON object", id);
	int64_t want = wanted_throttle(props);
	if (want == -2)
		return jf_error_set(err, JF_EINVAL, 0,
				    "update of job %s: \"array\" (the throttle) must be a whole "
				    "number >= 0",
				    id);
	char *payload = json_dumps(props, JSON_COMPACT);
	if (!payload)
		return jf_error_set(err, JF_ENOMEM, 0, "update of job %s: out of memory", id);
	snprintf(path, sizeof(path), "/job/%s", id);
	snprintf(what, sizeof(what), "update of job %s", id);
	rc = call(r, "POST", path, user, payload, what, &rep, err);
	free(payload);
	if (rc)
		return rc;
	reply_release(&rep);
	if (want < 0)
		return JF_OK;

	/* the throttle is read back: Slurm can ignore it without a word */
	struct jf_slurm_job *jobs = NULL;
	size_t n = 0, arrays = 0;
	int64_t seen = -1;
	if ((rc = jf_slurm_job_get(r, user, id, &jobs, &n, err)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].array_job_id <= 0)
			continue;
		arrays++;
		if (jobs[i].array_max_tasks != want)
			seen = jobs[i].array_max_tasks;
	}
	jf_slurm_jobs_free(jobs, n);
	if (arrays == 0)
		return jf_error_set(err, JF_EINVAL, 0,
				    "Slurm ignored the throttle for job %s: it is not a job array",
				    id);
	if (seen >= 0)
		return jf_error_set(err, JF_EINVAL, 0,
				    "Slurm did not apply the throttle %" PRId64 " to job %s (it "
				    "is %" PRId64 "); give the array's master job id",
				    want, id, seen);
	return JF_OK;
}

enum jf_err jf_slurm_job_signal(struct jf_slurm_rest *r, const char *user, const char *id, int sig,
				struct jf_error *err)
{
	char path[64], what[64];
	struct reply rep;
	enum jf_err rc;

	if ((rc = check_id(id, err)))
		return rc;
	if (sig < 0 || sig > 63)
		return jf_error_set(err, JF_EINVAL, 0,
				    "signal %d to job %s: not a signal Slurm sends", sig, id);
	if (sig == 0) {
		snprintf(path, sizeof(path), "/job/%s", id);
		snprintf(what, sizeof(what), "cancel of job %s", id);
	} else {
		snprintf(path, sizeof(path), "/job/%s?signal=%d", id, sig);
		snprintf(what, sizeof(what), "signal %d to job %s", sig, id);
	}
	if ((rc = call(r, "DELETE", path, user, NULL, what, &rep, err)))
		return rc;
	reply_release(&rep);
	return JF_OK;
}

enum jf_err jf_slurm_nodes(struct jf_slurm_rest *r, const char *user, struct jf_slurm_node **nodes,
			   size_t *n, struct jf_error *err)
{
	struct reply rep;
	enum jf_err rc;

	*nodes = NULL;
	*n = 0;
	if ((rc = call(r, "GET", "/nodes", user, NULL, "node list request", &rep, err)))
		return rc;
	if (!rep.root)
		rc = jf_error_set(err, JF_EIO, 0, "slurmrestd answered HTTP %ld without a body",
				  rep.status);
	else
		rc = nodes_from(rep.root, nodes, n, err);
	reply_release(&rep);
	return rc;
}
