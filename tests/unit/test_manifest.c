/*
 * test_manifest.c - OCI and Docker manifests, indexes (the linux/amd64
 * pick), image configs, and what is refused: bad digests and sizes,
 * foreign layers, schema 1, other platforms, oversized documents.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/manifest.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"

static enum jf_err parse(const char *s, const char *ct, struct jf_manifest *m, struct jf_error *err)
{
	return jf_manifest_parse(s, strlen(s), ct, m, err);
}

static void test_oci_manifest(void **state)
{
	const char *s =
		"{\"schemaVersion\":2,\"mediaType\":\"" JF_MT_OCI_MANIFEST "\","
		"\"config\":{\"mediaType\":\"" JF_MT_OCI_CONFIG "\",\"digest\":\"" D1
		"\",\"size\":500},"
		"\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\","
		"\"digest\":\"" D2 "\",\"size\":1000},"
		"{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"" D3
		"\",\"size\":30,\"annotations\":{\"x\":\"y\"}}],\"extra\":1}";
	struct jf_manifest m;
	struct jf_error err;
	(void)state;
	assert_int_equal(parse(s, NULL, &m, &err), JF_OK);
	assert_int_equal(m.kind, JF_MF_IMAGE);
	assert_string_equal(m.config.digest, D1);
	assert_int_equal(m.config.size, 500);
	assert_int_equal(m.nlayers, 2);
	assert_string_equal(m.layers[0].digest, D2);
	assert_int_equal(m.layers[0].comp, JF_COMP_GZIP);
	assert_int_equal(m.layers[1].comp, JF_COMP_NONE);
	assert_int_equal(m.layers_bytes, 1030);
	jf_manifest_release(&m);
}

static void test_docker_manifest_by_content_type(void **state)
{
	/* no mediaType in the body: the Content-Type decides */
	const char *s = "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1 "\",\"size\":5},"
			"\"layers\":[{\"mediaType\":"
			"\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"digest\":\"" D2
			"\",\"size\":7}]}";
	struct jf_manifest m;
	struct jf_error err;
	(void)state;
	assert_int_equal(parse(s, JF_MT_DOCKER_MANIFEST, &m, &err), JF_OK);
	assert_int_equal(m.kind, JF_MF_IMAGE);
	assert_int_equal(m.layers[0].comp, JF_COMP_GZIP);
	jf_manifest_release(&m);
}

static void test_index_pick(void **state)
{
	const char *s = "{\"schemaVersion\":2,\"mediaType\":\"" JF_MT_DOCKER_LIST "\","
			"\"manifests\":["
			"{\"digest\":\"" D1 "\",\"size\":10,\"platform\":{\"os\":\"linux\","
			"\"architecture\":\"arm64\",\"variant\":\"v8\"}},"
			"{\"digest\":\"" D2 "\",\"size\":20,\"mediaType\":\"" JF_MT_DOCKER_MANIFEST
			"\",\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";
	struct jf_manifest m;
	struct jf_error err;
	(void)state;
	assert_int_equal(parse(s, NULL, &m, &err), JF_OK);
	assert_int_equal(m.kind, JF_MF_INDEX);
	assert_string_equal(m.pick.digest, D2);
	assert_int_equal(m.pick.size, 20);
	jf_manifest_release(&m);
	/* an OCI index without a mediaType, by its shape; only arm64 */
	const char *t = "{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"" D1 "\",\"size\":1,"
			"\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\"}},"
			"{\"digest\":\"" D3 "\",\"size\":1,"
			"\"platform\":{\"os\":\"windows\",\"architecture\":\"amd64\"}}]}";
	assert_int_equal(parse(t, NULL, &m, &err), JF_ENOTSUP);
	assert_non_null(strstr(err.msg, "no linux/amd64"));
	assert_non_null(strstr(err.msg, "linux/arm64, windows/amd64"));
}

static void test_refused(void **state)
{
	static const struct {
		const char *body, *msg;
		enum jf_err code;
	} v[] = {
		{ "not json", "not valid JSON", JF_EINVAL },
		{ "[1]", "not a JSON object", JF_EINVAL },
		{ "{\"schemaVersion\":1,\"fsLayers\":[]}", "schema 1", JF_EINVAL },
		{ "{\"schemaVersion\":2,\"mediaType\":\"text/html\"}", "text/html", JF_ENOTSUP },
		{ "{\"schemaVersion\":2,\"layers\":[]}", "no \"config\"", JF_EINVAL },
		{ "{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:12\",\"size\":1},"
		  "\"layers\":[]}",
		  "digest", JF_EINVAL },
		{ "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1
		  "\",\"size\":-1},\"layers\":[]}",
		  "size", JF_EINVAL },
		{ "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1 "\",\"size\":1}}",
		  "no \"layers\"", JF_EINVAL },
		{ "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1 "\",\"size\":1},\"layers\":[{"
		  "\"mediaType\":\"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip\","
		  "\"digest\":\"" D2 "\",\"size\":1}]}",
		  "layer 1 has media type", JF_ENOTSUP },
		{ "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1
		  "\",\"size\":1},\"config\":{}}",
		  "not valid JSON", JF_EINVAL },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct jf_manifest m;
		struct jf_error err;
		jf_error_clear(&err);
		enum jf_err rc = parse(v[i].body, NULL, &m, &err);
		if (rc != v[i].code || !strstr(err.msg, v[i].msg))
			fail_msg("case %zu: rc %d, message \"%s\", wanted \"%s\"", i, rc, err.msg,
				 v[i].msg);
	}
	/* over the size cap */
	size_t n = JF_MF_MAX_BYTES + 1;
	char *big = malloc(n);
	assert_non_null(big);
	memset(big, ' ', n);
	struct jf_manifest m;
	struct jf_error err;
	assert_int_equal(jf_manifest_parse(big, n, NULL, &m, &err), JF_EFBIG);
	free(big);
}

static void test_config(void **state)
{
	const char *s =
		"{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"User\":\"1000:1000\","
		"\"Env\":[\"PATH=/bin\",\"A=b\"],\"Entrypoint\":[\"/bin/sh\",\"-c\"],"
		"\"Cmd\":[\"echo hi\"],\"WorkingDir\":\"/work\"},"
		"\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1 "\"]},\"history\":[]}";
	struct jf_imgconfig c;
	struct jf_error err;
	(void)state;
	assert_int_equal(jf_imgconfig_parse(s, strlen(s), &c, &err), JF_OK);
	assert_int_equal(c.nentrypoint, 2);
	assert_string_equal(c.entrypoint[1], "-c");
	assert_null(c.entrypoint[2]);
	assert_int_equal(c.ncmd, 1);
	assert_string_equal(c.cmd[0], "echo hi");
	assert_int_equal(c.nenv, 2);
	assert_string_equal(c.env[1], "A=b");
	assert_string_equal(c.user, "1000:1000");
	assert_string_equal(c.workdir, "/work");
	assert_int_equal(c.ndiff_ids, 1);
	assert_string_equal(c.arch, "amd64");
	jf_imgconfig_release(&c);
	/* no command at all, null lists: parsed, empty */
	const char *t = "{\"os\":\"linux\",\"config\":{\"Cmd\":null}}";
	assert_int_equal(jf_imgconfig_parse(t, strlen(t), &c, &err), JF_OK);
	assert_null(c.cmd);
	assert_null(c.entrypoint);
	assert_string_equal(c.user, "");
	jf_imgconfig_release(&c);
	const char *u = "{\"config\":{\"Cmd\":[\"a\",3]}}";
	assert_int_equal(jf_imgconfig_parse(u, strlen(u), &c, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "Cmd[1]"));
	const char *w = "{\"os\":\"windows\"}";
	assert_int_equal(jf_imgconfig_parse(w, strlen(w), &c, &err), JF_ENOTSUP);
	assert_non_null(strstr(err.msg, "windows"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oci_manifest),
		cmocka_unit_test(test_docker_manifest_by_content_type),
		cmocka_unit_test(test_index_pick),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
