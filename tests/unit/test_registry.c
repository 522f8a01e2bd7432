/*
 * test_registry.c - the OCI distribution client (image/registry.c).
 *
 * Three parts:
 *   - pure: the WWW-Authenticate parser (many forms, and garbage) and the
 *     auth.json lookup (plain, https:// and Docker Hub keys, missing host,
 *     bad base64, bad JSON, a missing or oversized file), argument checks;
 *   - loopback without a registry: a closed port on 127.0.0.1 is "not
 *     reachable";
 *   - live: against scripts/registry.sh's registries, named by
 *     JOBFS_REGISTRY (open), JOBFS_REGISTRY_AUTH (Basic, htpasswd),
 *     JOBFS_REGISTRY_TOKEN (tests/fixtures/token_registry.py: Bearer tokens,
 *     blobs redirected to another host name, fault repositories) and
 *     JOBFS_REGISTRY_AUTHFILE (the test user's auth.json).  Without
 *     JOBFS_REGISTRY these call skip(), or fail when
 *     JOBFS_REGISTRY_REQUIRED=1.
 *
 *   d=$(mktemp -d /work/tmp-mine/reg.XXXXXX)
 *   scripts/registry.sh start $d > $d/env && export $(cat $d/env)
 *   build/tests/unit/test_registry; scripts/registry.sh stop $d
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/digest.h"
#include "image/manifest.h"
#include "image/registry.h"
#include "testutil.h"

#define REPO "jobfs/busybox"

/* ---- helpers ------------------------------------------------------------ */

static struct jf_error E;

static void challenge_ok(const char *hdr, const char *scheme, const char *realm,
			 const char *service, const char *scope)
{
	struct jf_challenge c;
	jf_error_clear(&E);
	if (jf_reg_parse_challenge(hdr, &c, &E) != JF_OK)
		fail_msg("challenge [%s]: %s", hdr, E.msg);
	assert_string_equal(c.scheme, scheme);
	assert_string_equal(c.realm, realm);
	assert_string_equal(c.service, service);
	assert_string_equal(c.scope, scope);
}

static void challenge_bad(const char *hdr, const char *why)
{
	struct jf_challenge c;
	jf_error_clear(&E);
	if (jf_reg_parse_challenge(hdr, &c, &E) != JF_EINVAL)
		fail_msg("challenge [%s] was accepted (scheme %s realm %s)", hdr, c.scheme,
			 c.realm);
	if (!strstr(E.msg, "WWW-Authenticate") || !strstr(E.msg, why))
		fail_msg("challenge [%s]: message \"%s\" lacks \"%s\"", hdr, E.msg, why);
}

static char tmpdir[512];

static int setup_tmp(void **state)
{
	(void)state;
	jft_mkdtemp(tmpdir, sizeof(tmpdir), jft_tmp_base(), "jf-registry");
	return 0;
}

static int teardown_tmp(void **state)
{
	(void)state;
	jft_rmtree(tmpdir);
	return 0;
}

static const char *auth_file(const char *name, const char *text)
{
	static char path[640];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	jft_write_file(path, text);
	return path;
}

static char *lookup(const char *path, const char *host, enum jf_err want)
{
	char *out = (char *)"unset";
	jf_error_clear(&E);
	enum jf_err rc = jf_reg_auth_lookup(path, host, &out, &E);
	if (rc != want)
		fail_msg("lookup %s in %s: %s, want %s (%s)", host, path, jf_err_name(rc),
			 jf_err_name(want), E.msg);
	if (rc != JF_OK)
		assert_null(out);
	return out;
}

/* the live tests' environment */
static const char *live(const char *var)
{
	const char *v = getenv(var);
	if (v && *v)
		return v;
	const char *req = getenv("JOBFS_REGISTRY_REQUIRED");
	if (req && strcmp(req, "1") == 0)
		fail_msg("JOBFS_REGISTRY_REQUIRED=1 but %s is not set (scripts/registry.sh env)",
			 var);
	skip();
	return NULL;
}

static struct jf_reg *reg_open(const char *host, const char *repo, const char *authf,
			       const char *insecure, int parallel)
{
	char s[512];
	struct jf_imgref ref;
	snprintf(s, sizeof(s), "%s/%s:latest", host, repo);
	jf_error_clear(&E);
	if (jf_imgref_parse(s, &ref, &E) != JF_OK)
		fail_msg("%s: %s", s, E.msg);
	const char *ins[1] = { insecure ? insecure : host };
	struct jf_reg_opts o = { .auth_file = authf,
				 .insecure = ins,
				 .ninsecure = 1,
				 .parallel = parallel,
				 .connect_timeout_s = 5,
				 .low_speed_time_s = 20 };
	struct jf_reg *r = NULL;
	if (jf_reg_new(&ref, &o, &r, &E) != JF_OK)
		fail_msg("jf_reg_new %s: %s", s, E.msg);
	return r;
}

/* the manifest of what (a tag or digest), parsed */
static char *get_manifest(struct jf_reg *r, const char *what, struct jf_manifest *m,
			  char digest[JF_DIGEST_LEN], size_t *len)
{
	char *body = NULL, ctype[128];
	jf_error_clear(&E);
	if (jf_reg_manifest(r, what, &body, len, ctype, digest, &E) != JF_OK)
		fail_msg("manifest %s: %s", what, E.msg);
	assert_non_null(body);
	assert_string_equal(ctype, JF_MT_OCI_MANIFEST);
	char d2[JF_DIGEST_LEN];
	jf_sha256_buf(body, *len, d2);
	assert_string_equal(digest, d2);
	if (m && jf_manifest_parse(body, *len, ctype, m, &E) != JF_OK)
		fail_msg("manifest %s: %s", what, E.msg);
	return body;
}

/* config + layers of m, into a new array (n) */
static struct jf_desc *all_blobs(const struct jf_manifest *m, size_t *n, int64_t *bytes)
{
	struct jf_desc *d = calloc(m->nlayers + 1, sizeof(*d));
	assert_non_null(d);
	d[0] = m->config;
	*bytes = m->config.size;
	for (size_t i = 0; i < m->nlayers; i++) {
		d[i + 1] = m->layers[i];
		*bytes += m->layers[i].size;
	}
	*n = m->nlayers + 1;
	return d;
}

static int count_parts(const char *dir)
{
	DIR *dh = opendir(dir);
	if (!dh)
		return 0;
	int k = 0;
	struct dirent *de;
	while ((de = readdir(dh)))
		if (strstr(de->d_name, ".part"))
			k++;
	closedir(dh);
	return k;
}

static int count_files(const char *dir)
{
	DIR *dh = opendir(dir);
	if (!dh)
		return 0;
	int k = 0;
	struct dirent *de;
	while ((de = readdir(dh)))
		if (de->d_name[0] != '.')
			k++;
	closedir(dh);
	return k;
}

static void new_dir(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmpdir, name);
	if (mkdir(buf, 0700) != 0 && errno != EEXIST)
		fail_msg("mkdir %s: %s", buf, strerror(errno));
}

static void blob_path(char *buf, size_t n, const char *dir, const struct jf_desc *d)
{
	snprintf(buf, n, "%s/%s", dir, d->digest + 7);
}

static void assert_msg_has(const char *what)
{
	if (!strstr(E.msg, what))
		fail_msg("message \"%s\" lacks \"%s\"", E.msg, what);
}

static void assert_no_secret(void)
{
	/* the test user's password (scripts/registry.sh) and its base64 */
	assert_null(strstr(E.msg, "jobfs-test-password"));
	assert_null(strstr(E.msg, "am9iZnM6am9iZnMtdGVzdC1wYXNzd29yZA"));
	assert_null(strstr(E.msg, "wrong-password"));
}

/* a tiny libcurl GET/POST of the token front's /_stats and /_expire */
struct sbuf {
	char b[4096];
	size_t n;
};

static size_t sbuf_cb(char *p, size_t s, size_t k, void *ud)
{
	struct sbuf *b = ud;
	size_t n = s * k;
	if (n > sizeof(b->b) - 1 - b->n)
		return 0;
	memcpy(b->b + b->n, p, n);
	b->n += n;
	b->b[b->n] = '\0';
	return n;
}

static json_t *front(const char *host, const char *path, bool post)
{
	char url[512];
	struct sbuf b = { .n = 0 };
	snprintf(url, sizeof(url), "http://%s%s", host, path);
	CURL *h = curl_easy_init();
	assert_non_null(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sbuf_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (post)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
	CURLcode c = curl_easy_perform(h);
	curl_easy_cleanup(h);
	if (c != CURLE_OK)
		fail_msg("%s: %s", url, curl_easy_strerror(c));
	json_t *j = json_loads(b.b, 0, NULL);
	assert_non_null(j);
	return j;
}

static long long front_stat(const char *host, const char *key)
{
	json_t *j = front(host, "/_stats", false);
	long long v = json_integer_value(json_object_get(j, key));
	json_decref(j);
	return v;
}

/* a 127.0.0.1 port nothing listens on */
static int closed_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	socklen_t al = sizeof(a);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &al), 0);
	close(s);
	return ntohs(a.sin_port);
}

/* ---- pure: challenges --------------------------------------------------- */

static void test_challenge_forms(void **state)
{
	(void)state;
	challenge_ok("Bearer realm=\"https://auth/token\",service=\"registry\","
		     "scope=\"repository:x:pull\"",
		     "Bearer", "https://auth/token", "registry", "repository:x:pull");
	/* any order, spaces, case-insensitive names and scheme */
	challenge_ok(
		"bearer  Scope=\"repository:a/b:pull\" , SERVICE=\"s\",\tRealm=\"http://h:1/t\"",
		"Bearer", "http://h:1/t", "s", "repository:a/b:pull");
	challenge_ok("BEARER realm=\"r\"", "Bearer", "r", "", "");
	/* unquoted tokens */
	challenge_ok("Bearer realm=https://auth.docker.io/token,service=registry.docker.io",
		     "Bearer", "https://auth.docker.io/token", "registry.docker.io", "");
	/* escapes in quoted strings */
	challenge_ok("Bearer realm=\"a\\\"b\\\\c\\d\",service=\"\"", "Bearer", "a\"b\\cd", "", "");
	/* commas and '=' inside quotes */
	challenge_ok("Bearer realm=\"https://h/t?a=1,b=2\",scope=\"repository:x:pull,push\"",
		     "Bearer", "https://h/t?a=1,b=2", "", "repository:x:pull,push");
	/* other parameters are ignored; empty list elements are allowed */
	challenge_ok("Bearer realm=\"r\",,error=\"insufficient_scope\", ,service=s", "Bearer", "r",
		     "s", "");
	challenge_ok("Basic realm=\"Registry Realm\"", "Basic", "Registry Realm", "", "");
	challenge_ok("basic realm=x, charset=\"UTF-8\"", "Basic", "x", "", "");
	challenge_ok("Basic", "Basic", "", "", "");
	challenge_ok("  Basic  ", "Basic", "", "", "");
	challenge_ok("Basic dXNlcjpwYXNz==", "Basic", "", "", "");
	/* several challenges: the first */
	challenge_ok("Basic realm=\"a\", Bearer realm=\"b\"", "Basic", "a", "", "");
	challenge_ok("Bearer realm=\"b\",service=\"s\", Basic realm=\"a\"", "Bearer", "b", "s", "");
	challenge_ok("Bearer realm=\"b\", Basic", "Bearer", "b", "", "");
	/* an unknown scheme is reported as sent */
	challenge_ok("Negotiate", "Negotiate", "", "", "");
	challenge_ok("Digest realm=\"d\", nonce=\"n\", qop=\"auth\"", "Digest", "d", "", "");
	/* the longest values that fit */
	char hdr[2048], want[1024];
	memset(want, 'r', 1023);
	want[1023] = '\0';
	snprintf(hdr, sizeof(hdr), "Bearer realm=\"%s\"", want);
	challenge_ok(hdr, "Bearer", want, "", "");
}

static void test_challenge_garbage(void **state)
{
	(void)state;
	struct jf_challenge c;
	assert_int_equal(jf_reg_parse_challenge(NULL, &c, &E), JF_EINVAL);
	challenge_bad("", "no scheme");
	challenge_bad("   ", "no scheme");
	challenge_bad("=realm", "no scheme");
	challenge_bad("\"Bearer\" realm=x", "no scheme");
	challenge_bad("Bear(er realm=x", "after the scheme");
	challenge_bad("Bearer:realm=x", "after the scheme");
	challenge_bad("Bearerrrrrrrrrrrrrrrrrrr realm=x", "too long");
	challenge_bad("Bearer realm=\"unterminated", "bad parameter value");
	challenge_bad("Bearer realm=\"a\\", "bad parameter value");
	challenge_bad("Bearer realm=", "without a realm"); /* token68 "realm=" */
	challenge_bad("Bearer realm=,service=x", "without a realm");
	challenge_bad("Bearer service=x,realm=", "bad parameter value");
	challenge_bad("Bearer realm", "without a realm");
	challenge_bad("Bearer service=\"s\"", "without a realm");
	challenge_bad("Bearer realm=\"x\" service=\"y\"", "no ','");
	challenge_bad("Bearer realm=\"x\"service=\"y\"", "no ','");
	challenge_bad("Bearer realm=\"x\",realm=\"y\"", "twice");
	challenge_bad("Bearer realm=\"x\",Realm=y", "twice");
	challenge_bad("Bearer ,=x", "without a name");
	challenge_bad("Bearer realm=\"x\",(=y", "without a name");
	challenge_bad("Bearer realm=\"a\x01b\"", "bad parameter value");
	challenge_bad("Bearer realm=\"a\nb\"", "bad parameter value");
	challenge_bad("Bearer realm=a\x01", "no ','");
	challenge_bad("Bearer realm=\"x\" junk", "no ','");
	challenge_bad("Bearer realm=\"\xc3\xa9\" \xff", "no ','");
	char hdr[2048], v[1100];
	memset(v, 'r', 1024);
	v[1024] = '\0';
	snprintf(hdr, sizeof(hdr), "Bearer realm=\"%s\"", v);
	challenge_bad(hdr, "too long");
	memset(v, 's', 600);
	v[600] = '\0';
	snprintf(hdr, sizeof(hdr), "Bearer realm=r,scope=%s", v);
	challenge_bad(hdr, "too long");
	/* the message is one line whatever the header held */
	challenge_bad("Bearer realm=\"a\nb\"", "bad");
	assert_null(strchr(E.msg, '\n'));
}

/* ---- pure: auth.json ---------------------------------------------------- */

static void test_auth_lookup(void **state)
{
	(void)state;
	/* "user:pa:ss" "u:p" "hub:pw" "d:e" "x:y" */
	const char *p =
		auth_file("auth.json", "{\"auths\": {"
				       "\"127.0.0.1:5000\": {\"auth\": \"dXNlcjpwYTpzcw==\"},"
				       "\"https://reg.example.com\": {\"auth\": \"dTpw\"},"
				       "\"https://index.docker.io/v1/\": {\"auth\": \"aHViOnB3\"},"
				       "\"quay.example/org/repo\": {\"auth\": \"ZDplYQ\"},"
				       "\"exact.example\": {\"auth\": \"eDp5\"},"
				       "\"https://exact.example/v2/\": {\"auth\": \"dTpw\"},"
				       "\"token.example\": {\"identitytoken\": \"abc\"},"
				       "\"empty.example\": {\"auth\": \"\"}"
				       "}, \"credHelpers\": {\"gcr.io\": \"gcloud\"}}");
	char *s = lookup(p, "127.0.0.1:5000", JF_OK);
	assert_string_equal(s, "user:pa:ss");
	free(s);
	s = lookup(p, "reg.example.com", JF_OK);
	assert_string_equal(s, "u:p");
	free(s);
	s = lookup(p, "REG.example.com", JF_OK);
	assert_string_equal(s, "u:p");
	free(s);
	/* Docker Hub's names are one registry */
	const char *hub[] = { "docker.io", "index.docker.io", "registry-1.docker.io" };
	for (size_t i = 0; i < 3; i++) {
		s = lookup(p, hub[i], JF_OK);
		assert_string_equal(s, "hub:pw");
		free(s);
	}
	/* a path suffix without scheme; unpadded base64 */
	s = lookup(p, "quay.example", JF_OK);
	assert_string_equal(s, "d:ea");
	free(s);
	/* the exact key beats the normalised one */
	s = lookup(p, "exact.example", JF_OK);
	assert_string_equal(s, "x:y");
	free(s);
	/* no credentials: missing host, another port, helper-only entries */
	assert_null(lookup(p, "other.example", JF_OK));
	assert_null(lookup(p, "127.0.0.1:5001", JF_OK));
	assert_null(lookup(p, "127.0.0.1", JF_OK));
	assert_null(lookup(p, "token.example", JF_OK));
	assert_null(lookup(p, "empty.example", JF_OK));
	assert_null(lookup(p, "gcr.io", JF_OK));
	/* no "auths" at all */
	assert_null(lookup(auth_file("empty.json", "{}"), "127.0.0.1:5000", JF_OK));
}

static void test_auth_lookup_bad(void **state)
{
	(void)state;
	/* bad base64: characters, length, padding, no ':' in the result */
	const char *bad[] = { "!!!!",      "dXNlcjpwYXNz=", "dXNlc", "dXNlcjpwYXNz===",
			      "dXNl cjpw", "dXNlcg==",      "OnB3",  "dXNlcjpwYXN6=x",
			      "AA==" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[256];
		snprintf(text, sizeof(text), "{\"auths\": {\"h:1\": {\"auth\": \"%s\"}}}", bad[i]);
		const char *p = auth_file("bad64.json", text);
		lookup(p, "h:1", JF_EINVAL);
		assert_msg_has(p);
		assert_msg_has("base64");
		if (strlen(bad[i]) > 4)
			assert_null(strstr(E.msg, bad[i]));
	}
	/* bad JSON, and JSON of the wrong shape: named by file */
	const char *texts[] = { "{\"auths\": {",
				"not json",
				"[1,2]",
				"{\"auths\": []}",
				"{\"auths\": {\"h:1\": \"dTpw\"}}",
				"{\"auths\": {\"h:1\": {\"auth\": 42}}}",
				"{\"auths\": {\"h:1\": {\"auth\": \"dTpw\"}, \"h:1\": {}}}" };
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		const char *p = auth_file("badjson.json", texts[i]);
		lookup(p, "h:1", JF_EINVAL);
		assert_msg_has(p);
	}
	/* a missing file */
	char path[640];
	snprintf(path, sizeof(path), "%s/no-such-auth.json", tmpdir);
	lookup(path, "h:1", JF_ENOENT);
	assert_msg_has(path);
	/* over 1 MiB */
	size_t big = 1024 * 1024 + 16;
	char *text = malloc(big + 1);
	assert_non_null(text);
	memset(text, ' ', big);
	memcpy(text, "{\"auths\": {}}", 13);
	text[big] = '\0';
	const char *p = auth_file("big.json", text);
	free(text);
	lookup(p, "h:1", JF_EFBIG);
	assert_msg_has(p);
	/* exactly 1 MiB is fine */
	text = malloc(1024 * 1024 + 1);
	assert_non_null(text);
	memset(text, ' ', 1024 * 1024);
	memcpy(text, "{\"auths\": {}}", 13);
	text[1024 * 1024] = '\0';
	p = auth_file("mib.json", text);
	free(text);
	assert_null(lookup(p, "h:1", JF_OK));
}

/* ---- pure: arguments ---------------------------------------------------- */

static void test_args(void **state)
{
	(void)state;
	struct jf_imgref ref;
	struct jf_reg *r = (struct jf_reg *)&ref;
	assert_int_equal(jf_imgref_parse("oci:/tmp/layout:latest", &ref, &E), JF_OK);
	assert_int_equal(jf_reg_new(&ref, NULL, &r, &E), JF_EINVAL);
	assert_null(r);
	jf_reg_free(NULL);

	/* a client makes no request until asked; bad names never leave it */
	assert_int_equal(jf_imgref_parse("127.0.0.1:9/jobfs/x:latest", &ref, &E), JF_OK);
	assert_int_equal(jf_reg_new(&ref, NULL, &r, &E), JF_OK);
	char *body = (char *)"x", ctype[128], dg[JF_DIGEST_LEN];
	size_t len = 1;
	const char *whats[] = {
		"",
		"../x",
		"a b",
		"-tag",
		"sha256:abc",
		"latest?x=1",
		"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789ABCDEF"
	};
	for (size_t i = 0; i < sizeof(whats) / sizeof(whats[0]); i++) {
		assert_int_equal(jf_reg_manifest(r, whats[i], &body, &len, ctype, dg, &E),
				 JF_EINVAL);
		assert_null(body);
		assert_int_equal(len, 0);
	}
	/* a bad descriptor */
	struct jf_desc d = { .size = 1 };
	snprintf(d.digest, sizeof(d.digest), "sha256:xyz");
	int64_t got = -1;
	assert_int_equal(jf_reg_blobs(r, &d, 1, tmpdir, &got, &E), JF_EINVAL);
	assert_int_equal(got, 0);
	/* nothing to fetch: no request */
	assert_int_equal(jf_reg_blobs(r, NULL, 0, tmpdir, &got, &E), JF_OK);
	assert_int_equal(got, 0);
	jf_reg_free(r);
}

/* ---- loopback: nothing listening ---------------------------------------- */

static void test_down(void **state)
{
	(void)state;
	char host[64];
	snprintf(host, sizeof(host), "127.0.0.1:%d", closed_port());
	struct jf_reg *r = reg_open(host, REPO, NULL, NULL, 0);
	char *body = NULL, ctype[128], dg[JF_DIGEST_LEN];
	size_t len;
	jf_error_clear(&E);
	assert_int_equal(jf_reg_manifest(r, "latest", &body, &len, ctype, dg, &E), JF_EIO);
	assert_msg_has("not reachable");
	assert_msg_has(host);
	assert_null(body);
	/* blobs too, and no part file is left */
	char dir[640];
	new_dir(dir, sizeof(dir), "down");
	struct jf_desc d = { .size = 10 };
	jf_sha256_buf("x", 1, d.digest);
	int64_t got = -1;
	assert_int_equal(jf_reg_blobs(r, &d, 1, dir, &got, &E), JF_EIO);
	assert_msg_has("not reachable");
	assert_int_equal(got, 0);
	assert_int_equal(count_files(dir), 0);
	jf_reg_free(r);
}

/* ---- live: the open registry -------------------------------------------- */

static void test_live_manifest(void **state)
{
	(void)state;
	const char *host = live("JOBFS_REGISTRY");
	/* "127.0.0.1" without a port is insecure on every port */
	struct jf_reg *r = reg_open(host, REPO, NULL, "127.0.0.1", 0);
	struct jf_manifest m;
	char dg[JF_DIGEST_LEN], dg2[JF_DIGEST_LEN];
	size_t len, len2;
	char *body = get_manifest(r, "latest", &m, dg, &len);
	assert_int_equal(m.kind, JF_MF_IMAGE);
	assert_true(m.nlayers >= 1);
	/* skopeo pushed the layout's manifest as is */
	const char *layout = getenv("JOBFS_REGISTRY_LAYOUT");
	if (layout && *layout) {
		char *idx = jft_read_in(layout, "index.json");
		assert_non_null(idx);
		json_t *j = json_loads(idx, 0, NULL);
		assert_non_null(j);
		size_t i;
		json_t *e;
		bool found = false;
		json_array_foreach(json_object_get(j, "manifests"), i, e)
		{
			json_t *a = json_object_get(json_object_get(e, "annotations"),
						    "org.opencontainers.image.ref.name");
			if (a && strcmp(json_string_value(a), "latest") == 0) {
				assert_string_equal(json_string_value(json_object_get(e, "digest")),
						    dg);
				found = true;
			}
		}
		assert_true(found);
		json_decref(j);
		free(idx);
	}
	/* by digest: the same body */
	char *body2 = get_manifest(r, dg, NULL, dg2, &len2);
	assert_int_equal(len, len2);
	assert_memory_equal(body, body2, len);
	assert_string_equal(dg, dg2);
	free(body2);
	/* the other tag */
	struct jf_manifest m2;
	body2 = get_manifest(r, "nocmd", &m2, dg2, &len2);
	assert_string_not_equal(dg, dg2);
	assert_string_equal(m.layers[0].digest, m2.layers[0].digest);
	jf_manifest_release(&m2);
	free(body2);
	/* no such tag, no such digest, no such repository */
	char *none = (char *)"x", ctype[128];
	jf_error_clear(&E);
	assert_int_equal(jf_reg_manifest(r, "nosuchtag", &none, &len, ctype, dg2, &E), JF_ENOENT);
	assert_null(none);
	assert_msg_has("has no manifest nosuchtag in " REPO);
	assert_msg_has(host);
	char bogus[JF_DIGEST_LEN];
	jf_sha256_buf("bogus", 5, bogus);
	assert_int_equal(jf_reg_manifest(r, bogus, &none, &len, ctype, dg2, &E), JF_ENOENT);
	jf_reg_free(r);
	/* "127.0.0.1:1" matches no other port: https to a plain http registry */
	r = reg_open(host, REPO, NULL, "127.0.0.1:1", 0);
	assert_int_equal(jf_reg_manifest(r, "latest", &none, &len, ctype, dg2, &E), JF_EIO);
	assert_msg_has("not reachable");
	jf_reg_free(r);
	r = reg_open(host, "jobfs/nosuchrepo", NULL, NULL, 0);
	assert_int_equal(jf_reg_manifest(r, "latest", &none, &len, ctype, dg2, &E), JF_ENOENT);
	assert_msg_has("jobfs/nosuchrepo");
	jf_reg_free(r);
	jf_manifest_release(&m);
	free(body);
}

static void fetch_all(const char *host, const char *repo, const char *authf, int parallel,
		      const char *dirname)
{
	struct jf_reg *r = reg_open(host, repo, authf, NULL, parallel);
	struct jf_manifest m;
	char dg[JF_DIGEST_LEN], dir[640], path[1024];
	size_t len, n;
	int64_t bytes, got = -1;
	free(get_manifest(r, "latest", &m, dg, &len));
	struct jf_desc *d = all_blobs(&m, &n, &bytes);
	new_dir(dir, sizeof(dir), dirname);
	jf_error_clear(&E);
	if (jf_reg_blobs(r, d, n, dir, &got, &E) != JF_OK)
		fail_msg("blobs of %s/%s: %s", host, repo, E.msg);
	assert_int_equal(got, bytes);
	for (size_t i = 0; i < n; i++) {
		blob_path(path, sizeof(path), dir, &d[i]);
		struct stat st;
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_size, d[i].size);
		char fd[JF_DIGEST_LEN];
		assert_int_equal(jf_sha256_file(path, fd, &E), JF_OK);
		assert_string_equal(fd, d[i].digest);
	}
	assert_int_equal(count_parts(dir), 0);
	assert_int_equal(count_files(dir), (int)n);
	/* a second call fetches nothing */
	got = -1;
	assert_int_equal(jf_reg_blobs(r, d, n, dir, &got, &E), JF_OK);
	assert_int_equal(got, 0);
	free(d);
	jf_manifest_release(&m);
	jf_reg_free(r);
}

static void test_live_blobs(void **state)
{
	(void)state;
	const char *host = live("JOBFS_REGISTRY");
	fetch_all(host, REPO, NULL, 0, "blobs");
	fetch_all(host, REPO, NULL, 1, "blobs1");
	fetch_all(host, REPO, NULL, 16, "blobs16");
	/* a descriptor twice is fetched once */
	struct jf_reg *r = reg_open(host, REPO, NULL, NULL, 0);
	struct jf_manifest m;
	char dg[JF_DIGEST_LEN], dir[640];
	size_t len;
	int64_t got;
	free(get_manifest(r, "latest", &m, dg, &len));
	struct jf_desc two[2] = { m.layers[0], m.layers[0] };
	new_dir(dir, sizeof(dir), "twice");
	assert_int_equal(jf_reg_blobs(r, two, 2, dir, &got, &E), JF_OK);
	assert_int_equal(got, two[0].size);
	assert_int_equal(count_files(dir), 1);
	jf_manifest_release(&m);
	jf_reg_free(r);
}

/* one bad descriptor: the call fails with want, leaves no file and no part */
static void bad_blob(struct jf_reg *r, const struct jf_desc *d, const char *dirname,
		     enum jf_err want, const char *msg)
{
	char dir[640];
	int64_t got = -1;
	new_dir(dir, sizeof(dir), dirname);
	jf_error_clear(&E);
	enum jf_err rc = jf_reg_blobs(r, d, 1, dir, &got, &E);
	if (rc != want)
		fail_msg("blob %s (%lld bytes): %s, want %s (%s)", d->digest, (long long)d->size,
			 jf_err_name(rc), jf_err_name(want), E.msg);
	assert_msg_has(msg);
	assert_msg_has(d->digest);
	assert_int_equal(count_files(dir), 0);
	assert_int_equal(count_parts(dir), 0);
	assert_true(got >= 0);
}

static void test_live_bad_blobs(void **state)
{
	(void)state;
	const char *host = live("JOBFS_REGISTRY");
	struct jf_reg *r = reg_open(host, REPO, NULL, NULL, 2);
	struct jf_manifest m;
	char dg[JF_DIGEST_LEN];
	size_t len;
	free(get_manifest(r, "latest", &m, dg, &len));
	struct jf_desc d = m.layers[0];
	/* a bogus digest with the right size: the registry has no such blob */
	jf_sha256_buf("bogus", 5, d.digest);
	bad_blob(r, &d, "bogus", JF_ENOENT, "has no blob");
	/* smaller than the blob: stopped once it is over */
	d = m.layers[0];
	d.size = 1000;
	bad_blob(r, &d, "smaller", JF_EINVAL, "larger than its manifest says (1000 bytes)");
	d.size = 0;
	bad_blob(r, &d, "zero", JF_EINVAL, "larger than its manifest says (0 bytes)");
	/* larger: the body ends short */
	d.size = m.layers[0].size + 1;
	bad_blob(r, &d, "larger", JF_EINVAL, "its manifest says");
	/* a bad one among good ones: the call fails, no part is left, what was
	 * renamed is whole */
	char dir[640], path[1024];
	new_dir(dir, sizeof(dir), "mixed");
	struct jf_desc mix[3] = { m.config, m.layers[0], m.layers[0] };
	mix[2].size = 10;
	jf_sha256_buf("other", 5, mix[2].digest);
	int64_t got;
	assert_int_equal(jf_reg_blobs(r, mix, 3, dir, &got, &E), JF_ENOENT);
	assert_int_equal(count_parts(dir), 0);
	for (int i = 0; i < 2; i++) {
		blob_path(path, sizeof(path), dir, &mix[i]);
		struct stat st;
		if (stat(path, &st) == 0)
			assert_int_equal(st.st_size, mix[i].size);
	}
	jf_manifest_release(&m);
	jf_reg_free(r);
}

/* a tmpfs too small for the layer: "no space left" (root only) */
static void test_live_enospc(void **state)
{
	(void)state;
	const char *host = live("JOBFS_REGISTRY");
	char dir[640];
	new_dir(dir, sizeof(dir), "small");
	if (geteuid() != 0 || mount("tmpfs", dir, "tmpfs", 0, "size=256k") != 0) {
		printf("registry: cannot mount a small tmpfs (not root?): ENOSPC case skipped\n");
		skip();
	}
	struct jf_reg *r = reg_open(host, REPO, NULL, NULL, 0);
	struct jf_manifest m;
	char dg[JF_DIGEST_LEN];
	size_t len;
	int64_t got;
	free(get_manifest(r, "latest", &m, dg, &len));
	assert_true(m.layers[0].size > 512 * 1024);
	jf_error_clear(&E);
	enum jf_err rc = jf_reg_blobs(r, m.layers, 1, dir, &got, &E);
	int parts = count_parts(dir), files = count_files(dir);
	umount2(dir, MNT_DETACH);
	assert_int_equal(rc, JF_EIO);
	assert_msg_has("no space left on device while fetching blob");
	assert_msg_has(m.layers[0].digest);
	assert_int_equal(parts, 0);
	assert_int_equal(files, 0);
	jf_manifest_release(&m);
	jf_reg_free(r);
}

/* ---- live: Basic auth --------------------------------------------------- */

static void test_live_basic(void **state)
{
	(void)state;
	live("JOBFS_REGISTRY");
	const char *host = live("JOBFS_REGISTRY_AUTH");
	const char *authf = live("JOBFS_REGISTRY_AUTHFILE");
	fetch_all(host, REPO, authf, 0, "basic");

	char *body = NULL, ctype[128], dg[JF_DIGEST_LEN];
	size_t len;
	/* no auth file */
	struct jf_reg *r = reg_open(host, REPO, NULL, NULL, 0);
	jf_error_clear(&E);
	assert_int_equal(jf_reg_manifest(r, "latest", &body, &len, ctype, dg, &E), JF_EACCES);
	assert_msg_has("requires a login for " REPO);
	assert_msg_has(host);
	jf_reg_free(r);
	/* an auth file without this host, and one that does not exist */
	const char *other = auth_file("other.json", "{\"auths\": {\"h:1\": {\"auth\": \"dTpw\"}}}");
	r = reg_open(host, REPO, other, NULL, 0);
	assert_int_equal(jf_reg_manifest(r, "latest", &body, &len, ctype, dg, &E), JF_EACCES);
	assert_msg_has("requires a login for " REPO ": no credentials in");
	assert_msg_has(other);
	jf_reg_free(r);
	char missing[640];
	snprintf(missing, sizeof(missing), "%s/missing.json", tmpdir);
	r = reg_open(host, REPO, missing, NULL, 0);
	assert_int_equal(jf_reg_manifest(r, "latest", &body, &len, ctype, dg, &E), JF_EACCES);
	assert_msg_has("requires a login");
	jf_reg_free(r);
	/* the wrong password: "jobfs:wrong-password" */
	char text[512];
	snprintf(text, sizeof(text), "{\"auths\": {\"%s\": {\"auth\": \"%s\"}}}", host,
		 "am9iZnM6d3JvbmctcGFzc3dvcmQ=");
	const char *wrong = auth_file("wrong.json", text);
	r = reg_open(host, REPO, wrong, NULL, 0);
	assert_int_equal(jf_reg_manifest(r, "latest", &body, &len, ctype, dg, &E), JF_EACCES);
	assert_msg_has("refused the credentials for " REPO);
	assert_no_secret();
	/* blobs without a manifest first: the 401 there authenticates too */
	struct jf_desc d = { .size = 1 };
	jf_sha256_buf("x", 1, d.digest);
	int64_t got;
	char dir[640];
	new_dir(dir, sizeof(dir), "basic-wrong");
	assert_int_equal(jf_reg_blobs(r, &d, 1, dir, &got, &E), JF_EACCES);
	assert_msg_has("refused the credentials");
	assert_no_secret();
	assert_int_equal(count_files(dir), 0);
	jf_reg_free(r);
	assert_null(body);
}

/* ---- live: Bearer tokens ------------------------------------------------ */

static void test_live_bearer(void **state)
{
	(void)state;
	live("JOBFS_REGISTRY");
	const char *host = live("JOBFS_REGISTRY_TOKEN");
	const char *authf = live("JOBFS_REGISTRY_AUTHFILE");
	long long t0 = front_stat(host, "tokens");
	long long leaks0 = front_stat(host, "leaks");

	/* manifest, then blobs (redirected to "localhost"): one token */
	struct jf_reg *r = reg_open(host, REPO, authf, NULL, 4);
	struct jf_manifest m;
	char dg[JF_DIGEST_LEN], dir[640];
	size_t len, n;
	int64_t bytes, got;
	free(get_manifest(r, "latest", &m, dg, &len));
	assert_int_equal(front_stat(host, "tokens"), t0 + 1);
	struct jf_desc *d = all_blobs(&m, &n, &bytes);
	new_dir(dir, sizeof(dir), "bearer");
	jf_error_clear(&E);
	if (jf_reg_blobs(r, d, n, dir, &got, &E) != JF_OK)
		fail_msg("blobs through the token front: %s", E.msg);
	assert_int_equal(got, bytes);
	assert_int_equal(count_files(dir), (int)n);
	assert_int_equal(front_stat(host, "tokens"), t0 + 1);
	/* the token never went to the storage host */
	assert_int_equal(front_stat(host, "leaks"), leaks0);

	/* the token expires: the next call authenticates again, once */
	json_decref(front(host, "/_expire", true));
	new_dir(dir, sizeof(dir), "bearer2");
	if (jf_reg_blobs(r, d, n, dir, &got, &E) != JF_OK)
		fail_msg("blobs after the token expired: %s", E.msg);
	assert_int_equal(got, bytes);
	assert_int_equal(front_stat(host, "tokens"), t0 + 2);
	json_decref(front(host, "/_expire", true));
	char dg2[JF_DIGEST_LEN];
	free(get_manifest(r, dg, NULL, dg2, &len));
	assert_string_equal(dg, dg2);
	assert_int_equal(front_stat(host, "tokens"), t0 + 3);
	jf_reg_free(r);

	/* blobs first, without a manifest: the first 401 gets the token */
	r = reg_open(host, REPO, authf, NULL, 2);
	new_dir(dir, sizeof(dir), "bearer3");
	if (jf_reg_blobs(r, d, n, dir, &got, &E) != JF_OK)
		fail_msg("blobs without a manifest first: %s", E.msg);
	assert_int_equal(got, bytes);
	assert_int_equal(front_stat(host, "leaks"), leaks0);
	jf_reg_free(r);

	/* no credentials: the token server says no */
	char *none = NULL, ctype[128];
	r = reg_open(host, REPO, NULL, NULL, 0);
	jf_error_clear(&E);
	assert_int_equal(jf_reg_manifest(r, "latest", &none, &len, ctype, dg, &E), JF_EACCES);
	assert_msg_has("requires a login for " REPO);
	assert_msg_has(host);
	new_dir(dir, sizeof(dir), "bearer-none");
	assert_int_equal(jf_reg_blobs(r, d, n, dir, &got, &E), JF_EACCES);
	assert_int_equal(count_files(dir), 0);
	jf_reg_free(r);
	/* the wrong password */
	char text[512];
	snprintf(text, sizeof(text), "{\"auths\": {\"%s\": {\"auth\": \"%s\"}}}", host,
		 "am9iZnM6d3JvbmctcGFzc3dvcmQ=");
	r = reg_open(host, REPO, auth_file("wrong-bearer.json", text), NULL, 0);
	assert_int_equal(jf_reg_manifest(r, "latest", &none, &len, ctype, dg, &E), JF_EACCES);
	assert_msg_has("refused the credentials for " REPO);
	assert_no_secret();
	jf_reg_free(r);
	assert_null(none);
	free(d);
	jf_manifest_release(&m);
}

/* the token front's fault repositories */
static void test_live_faults(void **state)
{
	(void)state;
	live("JOBFS_REGISTRY");
	const char *host = live("JOBFS_REGISTRY_TOKEN");
	const char *authf = live("JOBFS_REGISTRY_AUTHFILE");
	char *body = NULL, ctype[128], dg[JF_DIGEST_LEN];
	size_t len;

	struct jf_reg *r = reg_open(host, "jobfs/e500", authf, NULL, 0);
	jf_error_clear(&E);
	assert_int_equal(jf_reg_manifest(r, "latest", &body, &len, ctype, dg, &E), JF_EIO);
	assert_msg_has("answered 500 for manifest latest of jobfs/e500");
	jf_reg_free(r);

	r = reg_open(host, "jobfs/huge", authf, NULL, 0);
	assert_int_equal(jf_reg_manifest(r, "latest", &body, &len, ctype, dg, &E), JF_EFBIG);
	assert_msg_has("more than");
	jf_reg_free(r);

	/* a manifest asked for by digest that does not match it */
	r = reg_open(host, "jobfs/lies", authf, NULL, 0);
	char want[JF_DIGEST_LEN];
	jf_sha256_buf("some other manifest", 19, want);
	assert_int_equal(jf_reg_manifest(r, want, &body, &len, ctype, dg, &E), JF_EINVAL);
	assert_msg_has("does not match its digest");
	assert_null(body);
	/* by tag it is served (what the tag names is not checked) */
	struct jf_manifest m;
	free(get_manifest(r, "latest", &m, dg, &len));
	/* blobs of the right size with one byte changed */
	bad_blob(r, &m.layers[0], "lies", JF_EINVAL, "does not match its digest");
	bad_blob(r, &m.config, "lies-config", JF_EINVAL, "does not match its digest");
	jf_manifest_release(&m);
	jf_reg_free(r);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_challenge_forms),
		cmocka_unit_test(test_challenge_garbage),
		cmocka_unit_test(test_auth_lookup),
		cmocka_unit_test(test_auth_lookup_bad),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_down),
		cmocka_unit_test(test_live_manifest),
		cmocka_unit_test(test_live_blobs),
		cmocka_unit_test(test_live_bad_blobs),
		cmocka_unit_test(test_live_enospc),
		cmocka_unit_test(test_live_basic),
		cmocka_unit_test(test_live_bearer),
		cmocka_unit_test(test_live_faults),
	};
	if (!getenv("JOBFS_REGISTRY"))
		printf("registry: JOBFS_REGISTRY not set, live tests skipped\n");
	int rc = cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
	curl_global_cleanup();
	return rc;
}
