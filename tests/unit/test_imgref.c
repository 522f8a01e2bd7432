/*
 * test_imgref.c - image references: the forms of reference 8.1, Docker's
 * host rule and short names, bad references refused with a message, the
 * canonical text, the /images directory name, the default pull policy.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/imgref.h"
#include "core/names.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_good(void **state)
{
	static const struct {
		const char *in, *host, *repo, *tag, *digest, *canon;
	} v[] = {
		{ "127.0.0.1:5000/jobfs/busybox:1.0", "127.0.0.1:5000", "jobfs/busybox", "1.0", "",
		  "127.0.0.1:5000/jobfs/busybox:1.0" },
		{ "127.0.0.1:5000/busybox", "127.0.0.1:5000", "busybox", "latest", "",
		  "127.0.0.1:5000/busybox:latest" },
		{ "busybox", "docker.io", "library/busybox", "latest", "",
		  "docker.io/library/busybox:latest" },
		{ "pytorch/pytorch:2.1", "docker.io", "pytorch/pytorch", "2.1", "",
		  "docker.io/pytorch/pytorch:2.1" },
		{ "localhost/a/b", "localhost", "a/b", "latest", "", "localhost/a/b:latest" },
		{ "localhost:5000/a", "localhost:5000", "a", "latest", "",
		  "localhost:5000/a:latest" },
		{ "nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io", "nvidia/pytorch", "24.01-py3", "",
		  "nvcr.io/nvidia/pytorch:24.01-py3" },
		{ "r.example.com/a/b@sha256:" D64, "r.example.com", "a/b", "", "sha256:" D64,
		  "r.example.com/a/b@sha256:" D64 },
		{ "r.example.com/a/b:v2@sha256:" D64, "r.example.com", "a/b", "v2", "sha256:" D64,
		  "r.example.com/a/b:v2@sha256:" D64 },
		{ "[::1]:5000/x", "[::1]:5000", "x", "latest", "", "[::1]:5000/x:latest" },
		{ "h.io/a__b/c-d--e/f.g", "h.io", "a__b/c-d--e/f.g", "latest", "",
		  "h.io/a__b/c-d--e/f.g:latest" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct jf_imgref r;
		struct jf_error err;
		jf_error_clear(&err);
		if (jf_imgref_parse(v[i].in, &r, &err))
			fail_msg("%s refused: %s", v[i].in, err.msg);
		assert_false(r.oci);
		assert_string_equal(r.host, v[i].host);
		assert_string_equal(r.repo, v[i].repo);
		assert_string_equal(r.tag, v[i].tag);
		assert_string_equal(r.digest, v[i].digest);
		char buf[JF_IMGREF_MAX];
		jf_imgref_format(&r, buf, sizeof(buf));
		assert_string_equal(buf, v[i].canon);
		/* the canonical text parses to the same reference */
		struct jf_imgref r2;
		assert_int_equal(jf_imgref_parse(buf, &r2, &err), JF_OK);
		assert_memory_equal(&r, &r2, sizeof(r));
	}
}

static void test_oci(void **state)
{
	struct jf_imgref r;
	struct jf_error err;
	(void)state;
	assert_int_equal(jf_imgref_parse("oci:/srv/images/bb:v1", &r, &err), JF_OK);
	assert_true(r.oci);
	assert_string_equal(r.path, "/srv/images/bb");
	assert_string_equal(r.tag, "v1");
	assert_int_equal(jf_imgref_parse("oci:/srv/images/bb/", &r, &err), JF_OK);
	assert_string_equal(r.path, "/srv/images/bb");
	assert_string_equal(r.tag, "latest");
	/* a ':' inside the path is not a tag */
	assert_int_equal(jf_imgref_parse("oci:/srv/a:b/c", &r, &err), JF_OK);
	assert_string_equal(r.path, "/srv/a:b/c");
	assert_string_equal(r.tag, "latest");
	char buf[JF_IMGREF_MAX];
	jf_imgref_format(&r, buf, sizeof(buf));
	assert_string_equal(buf, "oci:/srv/a:b/c:latest");
	assert_int_equal(jf_imgref_parse("oci:relative/x", &r, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "absolute path"));
	assert_int_equal(jf_imgref_parse("oci:/a/../etc", &r, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, ".."));
	assert_int_equal(jf_imgref_parse("oci:/a/b:bad tag", &r, &err), JF_EINVAL);
}

static void test_bad(void **state)
{
	static const struct {
		const char *in, *msg;
	} v[] = {
		{ "", "empty" },
		{ "Busybox", "lower-case" },
		{ "h.io/UPPER/x", "lower-case" },
		{ "h.io/a//b", "lower-case" },
		{ "h.io/a/", "lower-case" },
		{ "h.io/-a", "lower-case" },
		{ "h.io/a___b", "lower-case" },
		{ "h.io/a..b", "lower-case" },
		{ "h.io/a:", "tag must be" },
		{ "h.io/a:-x", "tag must be" },
		{ "h.io/a:has/slash", "tag must be" },
		{ "h.io/a@sha256:abc", "digest must be" },
		{ "h.io/a@md5:" D64, "digest must be" },
		{ "h.io:99999/a", "registry host" },
		{ "h.io:/a", "registry host" },
		{ "-h.io/a", "registry host" },
		{ "h..io/a", "registry host" },
		{ "h.io/a b", "space" },
		{ "h.io/a\tb", "space" },
		{ "h.io/caf\xc3\xa9", "non-ASCII" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct jf_imgref r;
		struct jf_error err;
		jf_error_clear(&err);
		if (jf_imgref_parse(v[i].in, &r, &err) != JF_EINVAL)
			fail_msg("\"%s\" accepted", v[i].in);
		if (!strstr(err.msg, v[i].msg))
			fail_msg("\"%s\": message \"%s\" lacks \"%s\"", v[i].in, err.msg, v[i].msg);
		assert_non_null(strstr(err.msg, "image"));
	}
	/* longer than the limit */
	char big[JF_IMGREF_MAX + 10];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	struct jf_imgref r;
	struct jf_error err;
	assert_int_equal(jf_imgref_parse(big, &r, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "longer than"));
}

static void test_dirname(void **state)
{
	struct jf_imgref r;
	struct jf_error err;
	char name[JF_IMGREF_NAMEMAX];
	(void)state;
	assert_int_equal(jf_imgref_parse("127.0.0.1:5000/jobfs/busybox:1.0", &r, &err), JF_OK);
	jf_imgref_dirname(&r, name);
	assert_string_equal(name, "127.0.0.1_5000_jobfs_busybox_1.0");
	assert_true(jf_name_valid(name, &err));
	assert_int_equal(jf_imgref_parse("h.io/a@sha256:" D64, &r, &err), JF_OK);
	jf_imgref_dirname(&r, name);
	assert_string_equal(name, "h.io_a_sha256_0123456789ab");
	assert_int_equal(jf_imgref_parse("oci:/srv/bb:v1", &r, &err), JF_OK);
	jf_imgref_dirname(&r, name);
	assert_string_equal(name, "oci__srv_bb_v1");
	/* long references: cut, with a hash of the whole, still distinct */
	char a[300], b[300], na[JF_IMGREF_NAMEMAX], nb[JF_IMGREF_NAMEMAX];
	snprintf(a, sizeof(a), "h.io/%s/x1",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	snprintf(b, sizeof(b), "h.io/%s/x2",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	assert_int_equal(jf_imgref_parse(a, &r, &err), JF_OK);
	jf_imgref_dirname(&r, na);
	assert_int_equal(jf_imgref_parse(b, &r, &err), JF_OK);
	jf_imgref_dirname(&r, nb);
	assert_int_equal(strlen(na), 63);
	assert_string_not_equal(na, nb);
	assert_true(jf_name_valid(na, &err));
	assert_true(jf_name_valid(nb, &err));
}

static void test_policy(void **state)
{
	struct jf_imgref r;
	struct jf_error err;
	(void)state;
	assert_int_equal(jf_imgref_parse("h.io/a", &r, &err), JF_OK);
	assert_true(jf_imgref_default_always(&r));
	assert_int_equal(jf_imgref_parse("h.io/a:latest", &r, &err), JF_OK);
	assert_true(jf_imgref_default_always(&r));
	assert_int_equal(jf_imgref_parse("h.io/a:1.0", &r, &err), JF_OK);
	assert_false(jf_imgref_default_always(&r));
	assert_int_equal(jf_imgref_parse("h.io/a@sha256:" D64, &r, &err), JF_OK);
	assert_false(jf_imgref_default_always(&r));
	assert_true(jf_digest_valid("sha256:" D64));
	assert_false(jf_digest_valid("sha256:" D64 "0"));
	assert_false(jf_digest_valid(
		"sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),   cmocka_unit_test(test_oci),
		cmocka_unit_test(test_bad),    cmocka_unit_test(test_dirname),
		cmocka_unit_test(test_policy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
