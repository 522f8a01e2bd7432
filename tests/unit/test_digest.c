/*
 * test_digest.c - sha256 in the OCI form: known vectors, chunked updates,
 * files, and the missing-file error.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/digest.h"
#include "testutil.h"

#define EMPTY "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define ABC   "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

static void test_vectors(void **state)
{
	char d[JF_DIGEST_LEN];
	(void)state;
	jf_sha256_buf("", 0, d);
	assert_string_equal(d, EMPTY);
	jf_sha256_buf("abc", 3, d);
	assert_string_equal(d, ABC);
	/* one byte at a time gives the same */
	struct jf_sha256 h;
	assert_int_equal(jf_sha256_init(&h), JF_OK);
	jf_sha256_update(&h, "a", 1);
	jf_sha256_update(&h, "b", 1);
	jf_sha256_update(&h, "", 0);
	jf_sha256_update(&h, "c", 1);
	jf_sha256_final(&h, d);
	assert_string_equal(d, ABC);
	/* final and release twice are harmless */
	jf_sha256_final(&h, d);
	assert_string_equal(d, "");
	jf_sha256_release(&h);
}

static void test_file(void **state)
{
	char dir[512], path[600], d[JF_DIGEST_LEN], e[JF_DIGEST_LEN];
	struct jf_error err;
	(void)state;
	jft_mkdtemp(dir, sizeof(dir), jft_tmp_base(), "digest");
	snprintf(path, sizeof(path), "%s/f", dir);
	/* larger than one read buffer */
	size_t n = 200000;
	char *buf = malloc(n + 1);
	assert_non_null(buf);
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)('a' + i % 26);
	buf[n] = '\0';
	jft_write_file(path, buf);
	jf_sha256_buf(buf, n, e);
	assert_int_equal(jf_sha256_file(path, d, &err), JF_OK);
	assert_string_equal(d, e);
	free(buf);
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(jf_sha256_file(path, d, &err), JF_ENOENT);
	assert_non_null(strstr(err.msg, "missing"));
	jft_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
