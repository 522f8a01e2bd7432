/*
 * test_slurm_hostlist.c - Slurm hostlists and array index sets
 * (backends/slurm/hostlist.c).
 *
 * The expected expansions were taken from `scontrol show hostnames` of
 * Slurm 22.05.8; the refusals are Slurm's own, or this module's stricter
 * ones where Slurm reads something odd into the input (see hostlist.h).
 * The property test formats random sets and parses them back, and checks
 * the result against a plain bitmap of the same set.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/slurm/hostlist.h"

/* Expand list and compare with want, a space-separated list of names. */
static void check_expand(const char *list, const char *want)
{
	char **names = NULL, buf[4096] = "";
	size_t n = 0, len = 0;
	struct jf_error err;

	jf_error_clear(&err);
	enum jf_err rc = jf_hostlist_expand(list, &names, &n, 1000, &err);
	if (rc != JF_OK)
		fail_msg("'%s' refused: %s", list, err.msg);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? " " : "",
					names[i]);
	if (strcmp(buf, want) != 0)
		fail_msg("'%s' gave '%s', want '%s'", list, buf, want);

	/* the first name without expanding */
	char first[256];
	rc = jf_hostlist_first(list, first, sizeof(first));
	if (n == 0) {
		assert_int_equal(rc, JF_ENOENT);
		assert_string_equal(first, "");
	} else {
		assert_int_equal(rc, JF_OK);
		assert_string_equal(first, names[0]);
	}
	jf_hostlist_free(names, n);
}

static void test_hostlist_forms(void **state)
{
	(void)state;
	check_expand("", "");
	check_expand("n1", "n1");
	check_expand("n[1-3]", "n1 n2 n3");
	check_expand("n[1,3-4],gpu[01-02]", "n1 n3 n4 gpu01 gpu02");
	check_expand("n[01-10]", "n01 n02 n03 n04 n05 n06 n07 n08 n09 n10");
	check_expand("n[8-11]", "n8 n9 n10 n11");
	check_expand("n[098-101]", "n098 n099 n100 n101");
	check_expand("n[00-02]", "n00 n01 n02");
	check_expand("n[0-02]", "n0 n1 n2");
	check_expand("n[007]", "n007");
	check_expand("a[1-2]b[3-4]", "a1b3 a1b4 a2b3 a2b4");
	check_expand("n[1-3]suffix[4]", "n1suffix4 n2suffix4 n3suffix4");
	check_expand("[1-2]", "1 2");
	check_expand("rack1-n[1-2]", "rack1-n1 rack1-n2");
	check_expand("n,n", "n n");
	check_expand("n[1-2],n[2-3]", "n1 n2 n2 n3");
	check_expand("a.b_c-d", "a.b_c-d");
	check_expand("n[1-1]", "n1");
	check_expand("x[999999999999999998-999999999999999999]",
		     "x999999999999999998 x999999999999999999");
}

static void check_refused(const char *list, const char *fragment)
{
	char **names = (char **)1;
	size_t n = 7;
	struct jf_error err;

	jf_error_clear(&err);
	enum jf_err rc = jf_hostlist_expand(list, &names, &n, 1000, &err);
	if (rc != JF_EINVAL)
		fail_msg("'%s' not refused (rc %d)", list, rc);
	assert_null(names);
	assert_int_equal(n, 0);
	if (!strstr(err.msg, fragment))
		fail_msg("'%s': message '%s' lacks '%s'", list, err.msg, fragment);
	char first[64] = "x";
	assert_int_equal(jf_hostlist_first(list, first, sizeof(first)), JF_EINVAL);
	assert_string_equal(first, "");
}

static void test_hostlist_malformed(void **state)
{
	(void)state;
	check_refused("a[1-2]b", "text after ']'");
	check_refused("n[1-2]x,y[3]", "offset 6: text after ']'");
	check_refused("n[1-3]-x", "text after ']'");
	check_refused("n[3-1]", "descending range 3-1");
	check_refused("n[]", "empty range");
	check_refused("n[1,,2]", "empty range");
	check_refused("n[1-3,]", "empty range");
	check_refused("n[,1]", "empty range");
	check_refused("n[a-b]", "expected a number");
	check_refused("n[1--3]", "no upper bound");
	check_refused("n[-1]", "expected a number");
	check_refused("n[1-]", "no upper bound");
	check_refused("n[1-3", "never closed");
	check_refused("n[1", "never closed");
	check_refused("n[", "expected a number");
	check_refused("n1-3]", "']' without '['");
	check_refused("n[1-3]]", "']' without '['");
	check_refused("n[[1-3]", "expected a number");
	check_refused("n[1-10:2]", "no step");
	check_refused("n[1-3]%", "character '%'");
	check_refused("a b", "character \\x20");
	check_refused(" n1", "offset 0: character \\x20");
	check_refused("n\t1", "character \\x09");
	check_refused("n1,", "empty host name after ','");
	check_refused(",n1", "empty host name");
	check_refused("n[1-2],,m", "empty host name");
	check_refused("n[1234567890123456789]", "longer than 18 digits");
	check_refused("a[1]b[2]c[3]d[4]e[5]f[6]g[7]h[8]i[9]", "more than 8 bracket groups");
	check_refused("caf\xc3\xa9", "character \\xc3 is not allowed");

	char longname[300];
	memset(longname, 'a', 256);
	longname[256] = '\0';
	check_refused(longname, "longer than 255 bytes");
	memset(longname, 'a', 254);
	strcpy(longname + 254, "[1-10]"); /* n10 would be 256 bytes */
	check_refused(longname, "longer than 255 bytes");
	memset(longname, 'a', 255);
	longname[255] = '\0';
	check_expand(longname, longname); /* 255 bytes is fine */

	struct jf_error err;
	char **names;
	size_t n;
	assert_int_equal(jf_hostlist_expand(NULL, &names, &n, 10, &err), JF_EINVAL);
}

static void test_hostlist_caps(void **state)
{
	char **names = NULL;
	size_t n = 0;
	struct jf_error err;

	(void)state;
	assert_int_equal(jf_hostlist_expand("n[1-10]", &names, &n, 10, &err), JF_OK);
	assert_int_equal(n, 10);
	jf_hostlist_free(names, n);

	jf_error_clear(&err);
	assert_int_equal(jf_hostlist_expand("n[1-11]", &names, &n, 10, &err), JF_EINVAL);
	assert_string_equal(err.msg, "hostlist has more than 10 names");
	assert_int_equal(jf_hostlist_expand("n[1-5],m[1-6]", &names, &n, 10, &err), JF_EINVAL);
	/* products and huge ranges saturate instead of overflowing */
	assert_int_equal(jf_hostlist_expand("a[0-999999999]b[0-999999999]c[0-999999999]", &names,
					    &n, 1000000, &err),
			 JF_EINVAL);
	assert_non_null(strstr(err.msg, "more than 1000000 names"));
	assert_null(names);
	/* max 0 refuses anything but "" */
	assert_int_equal(jf_hostlist_expand("n1", &names, &n, 0, &err), JF_EINVAL);
	assert_int_equal(jf_hostlist_expand("", &names, &n, 0, &err), JF_OK);
	assert_int_equal(n, 0);
	assert_null(names);
	jf_hostlist_free(NULL, 0);
}

static void test_hostlist_first(void **state)
{
	char buf[8];

	(void)state;
	/* a huge list is not expanded */
	char big[32];
	assert_int_equal(jf_hostlist_first("n[000000-999999999],x", big, sizeof(big)), JF_OK);
	assert_string_equal(big, "n000000");
	assert_int_equal(jf_hostlist_first("a[3-4]b[07-9]", buf, sizeof(buf)), JF_OK);
	assert_string_equal(buf, "a3b07");
	assert_int_equal(jf_hostlist_first("abcdefg", buf, sizeof(buf)), JF_OK);
	assert_int_equal(jf_hostlist_first("abcdefgh", buf, sizeof(buf)), JF_EFBIG);
	assert_string_equal(buf, "");
	/* the whole list is checked even though only the first is written */
	assert_int_equal(jf_hostlist_first("n1,n[2-", buf, sizeof(buf)), JF_EINVAL);
	assert_int_equal(jf_hostlist_first(NULL, buf, sizeof(buf)), JF_EINVAL);
	assert_int_equal(jf_hostlist_first("", buf, sizeof(buf)), JF_ENOENT);
}

/* ---- gres_detail: a node's GPUs ---------------------------------------- */

static void test_gres_gpu_ids(void **state)
{
	static const struct {
		const char *detail;
		enum jf_err rc;
		const char *want;
	} c[] = {
		/* as slurmrestd 22.05 answers (tests/unit/data/slurm) */
		{ "gpu:4090:2(IDX:0-1)", JF_OK, "0,1" },
		{ "gpu:4090:2(IDX:3-4)", JF_OK, "3,4" },
		{ "gpu:4090:8(IDX:0-7)", JF_OK, "0,1,2,3,4,5,6,7" },
		/* other spellings Slurm uses */
		{ "gpu(IDX:3)", JF_OK, "3" },
		{ "gpu:a100:3(IDX:0,2,5)", JF_OK, "0,2,5" },
		{ "gpu:a100:4(IDX:0-1,4-5)", JF_OK, "0,1,4,5" },
		{ "mps:100(0/100),gpu:2(IDX:6-7)", JF_OK, "6,7" },
		{ "gpu:1(IDX:2),mps:50", JF_OK, "2" },
		/* no GPU index named */
		{ "", JF_ENOENT, "" },
		{ NULL, JF_ENOENT, "" },
		{ "gpu:0", JF_ENOENT, "" },
		{ "gpu:4090:2(IDX:N/A)", JF_ENOENT, "" },
		{ "mps:100(0/100)", JF_ENOENT, "" },
		{ "gpux:2(IDX:0-1)", JF_ENOENT, "" },
		{ "gpu:2,mps:1(IDX:0)", JF_ENOENT, "" },
		/* malformed */
		{ "gpu:2(IDX:0-1", JF_EINVAL, "" },
		{ "gpu:2(0-1)", JF_EINVAL, "" },
		{ "gpu:2(IDX:)", JF_EINVAL, "" },
		{ "gpu:2(IDX:1-0)", JF_EINVAL, "" },
		{ "gpu:2(IDX:a)", JF_EINVAL, "" },
		{ "gpu:2(IDX:0-1%2)", JF_EINVAL, "" },
		{ "gpu:2(IDX:1024)", JF_EINVAL, "" },
		{ "gpu:2(IDX:0-99999999999)", JF_EINVAL, "" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char buf[96] = "x";
		enum jf_err rc = jf_gres_gpu_ids(c[i].detail, buf, sizeof(buf));
		if (rc != c[i].rc || strcmp(buf, c[i].want) != 0)
			fail_msg("'%s': %d '%s', want %d '%s'",
				 c[i].detail ? c[i].detail : "(null)", rc, buf, c[i].rc, c[i].want);
	}
	/* a list that does not fit: nothing half-written */
	char small[6] = "x";
	assert_int_equal(jf_gres_gpu_ids("gpu:4(IDX:0-3)", small, sizeof(small)), JF_EFBIG);
	assert_string_equal(small, "");
	assert_int_equal(jf_gres_gpu_ids("gpu:3(IDX:0-2)", small, sizeof(small)), JF_OK);
	assert_string_equal(small, "0,1,2");
	/* 64 GPUs, "0,1,...,63", is 181 bytes: the caller's buffer decides */
	char big[256];
	assert_int_equal(jf_gres_gpu_ids("gpu:64(IDX:0-63)", big, sizeof(big)), JF_OK);
	assert_int_equal(strlen(big), 10 + 54 * 2 + 63);
	assert_int_equal(jf_gres_gpu_ids("gpu:64(IDX:0-63)", big, 96), JF_EFBIG);
}

/* ---- index sets --------------------------------------------------------- */

static void check_idx(const char *s, const char *want, int64_t want_thr)
{
	int64_t *idx = NULL, thr = -1;
	size_t n = 0;
	struct jf_error err;

	jf_error_clear(&err);
	if (jf_idxset_parse(s, &idx, &n, 1000, &thr, &err) != JF_OK)
		fail_msg("'%s' refused: %s", s, err.msg);
	assert_int_equal(thr, want_thr);
	char *f = jf_idxset_format(idx, n, thr);
	assert_non_null(f);
	if (strcmp(f, want) != 0)
		fail_msg("'%s' parsed and formatted as '%s', want '%s'", s, f, want);
	free(f);
	free(idx);
}

static void test_idxset_forms(void **state)
{
	(void)state;
	check_idx("", "", 0);
	check_idx("0", "0", 0);
	check_idx("0-3,7,9-12", "0-3,7,9-12", 0);
	check_idx("4-5%2", "4-5%2", 2);
	check_idx("2-5%3", "2-5%3", 3);
	check_idx("1-9:2", "1,3,5,7,9", 0);
	check_idx("0-10:5%1", "0,5,10%1", 1);
	check_idx("1-10:4", "1,5,9", 0);
	check_idx("1-1:3", "1", 0);
	check_idx("7,3,5,4,3,0", "0,3-5,7", 0); /* sorted, repeats gone */
	check_idx("0-3,2-6", "0-6", 0);
	check_idx("007", "7", 0);
	check_idx("3%0", "3", 0);
	check_idx("2147483647", "2147483647", 0);
	check_idx("0-4%2147483647", "0-4%2147483647", 2147483647);

	int64_t v[] = { 0, 1, 2, 3, 7, 9, 10, 11, 12 };
	char *f = jf_idxset_format(v, 9, 0);
	assert_string_equal(f, "0-3,7,9-12");
	free(f);
	f = jf_idxset_format(v, 9, 4);
	assert_string_equal(f, "0-3,7,9-12%4");
	free(f);
	f = jf_idxset_format(NULL, 0, 4);
	assert_string_equal(f, "");
	free(f);
	int64_t pair[] = { 5, 6 };
	f = jf_idxset_format(pair, 2, 0);
	assert_string_equal(f, "5-6");
	free(f);
	int64_t unsorted[] = { 9, 1, 2, 3 };
	f = jf_idxset_format(unsorted, 4, 0);
	assert_string_equal(f, "9,1-3");
	free(f);
	int64_t bad[] = { 1, -1 };
	errno = 0;
	assert_null(jf_idxset_format(bad, 2, 0));
	assert_int_equal(errno, EINVAL);
	int64_t big[] = { JF_IDX_MAX + 1 };
	assert_null(jf_idxset_format(big, 1, 0));
	assert_null(jf_idxset_format(v, 1, -1));

	/* the throttle pointer may be NULL */
	int64_t *idx;
	size_t n;
	struct jf_error err;
	assert_int_equal(jf_idxset_parse("1-3%2", &idx, &n, 10, NULL, &err), JF_OK);
	assert_int_equal(n, 3);
	free(idx);
}

static void check_idx_refused(const char *s, const char *fragment)
{
	int64_t *idx = (int64_t *)1, thr = 9;
	size_t n = 9;
	struct jf_error err;

	jf_error_clear(&err);
	if (jf_idxset_parse(s, &idx, &n, 1000, &thr, &err) != JF_EINVAL)
		fail_msg("'%s' not refused", s);
	assert_null(idx);
	assert_int_equal(n, 0);
	assert_int_equal(thr, 0);
	if (!strstr(err.msg, fragment))
		fail_msg("'%s': message '%s' lacks '%s'", s, err.msg, fragment);
}

static void test_idxset_malformed(void **state)
{
	(void)state;
	check_idx_refused("5-1", "descending range 5-1");
	check_idx_refused("1-9:0", "step is 0");
	check_idx_refused("5:2", "a step needs a range");
	check_idx_refused("1,", "nothing after ','");
	check_idx_refused(",1", "expected an index");
	check_idx_refused("1,,2", "expected an index");
	check_idx_refused("-1", "expected an index");
	check_idx_refused("1-", "expected an index");
	check_idx_refused("a", "expected an index");
	check_idx_refused("1 2", "unexpected character");
	check_idx_refused("[1-3]", "expected an index");
	check_idx_refused("1-3%", "expected an index");
	check_idx_refused("1-3%x", "expected an index");
	check_idx_refused("1-3%2%3", "text after the throttle");
	check_idx_refused("1-3%2x", "text after the throttle");
	check_idx_refused("%2", "no indexes before '%'");
	check_idx_refused("1,%2", "nothing after ','");
	check_idx_refused("2147483648", "is over 2147483647");
	check_idx_refused("1-3%2147483648", "is over");
	check_idx_refused("1234567890123456789", "number too long");
	check_idx_refused("0-1001", "more than 1000 indexes");
	check_idx_refused("0-999,1000", "more than 1000 indexes");
	/* repeats count against the cap: no set is ever built that large */
	check_idx_refused("0-600,0-600", "more than 1000 indexes");
	check_idx_refused("0-2147483647", "more than 1000 indexes");

	int64_t *idx;
	size_t n;
	struct jf_error err;
	assert_int_equal(jf_idxset_parse("0-999", &idx, &n, 1000, NULL, &err), JF_OK);
	assert_int_equal(n, 1000);
	free(idx);
	assert_int_equal(jf_idxset_parse("0-2147483647:1073741824", &idx, &n, 3, NULL, &err),
			 JF_OK);
	assert_int_equal(n, 2);
	assert_int_equal(idx[1], 1073741824);
	free(idx);
	assert_int_equal(jf_idxset_parse(NULL, &idx, &n, 3, NULL, &err), JF_EINVAL);
}

/* xorshift64*: the property test is the same on every run */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void test_idxset_roundtrip_random(void **state)
{
	enum { UNIVERSE = 300, ROUNDS = 3000 };
	unsigned char ref[UNIVERSE];
	int64_t set[UNIVERSE];

	(void)state;
	for (int round = 0; round < ROUNDS; round++) {
		/* a random density makes long runs and lone indexes both likely */
		uint64_t density = rnd() % 100;
		uint64_t base = (round % 7 == 0) ? (uint64_t)JF_IDX_MAX - UNIVERSE + 1 : 0;
		size_t n = 0;
		for (int i = 0; i < UNIVERSE; i++) {
			ref[i] = (rnd() % 100) < density;
			if (ref[i])
				set[n++] = (int64_t)base + i;
		}
		int64_t thr = (rnd() % 3 == 0) ? (int64_t)(rnd() % 50) : 0;
		char *s = jf_idxset_format(set, n, thr);
		assert_non_null(s);

		int64_t *back = NULL, thr_back = -1;
		size_t nback = 0;
		struct jf_error err;
		jf_error_clear(&err);
		if (jf_idxset_parse(s, &back, &nback, UNIVERSE, &thr_back, &err) != JF_OK)
			fail_msg("round %d: '%s' refused: %s", round, s, err.msg);
		assert_int_equal(nback, n);
		assert_int_equal(thr_back, n > 0 ? thr : 0);
		for (size_t i = 0; i < nback; i++) {
			int64_t off = back[i] - (int64_t)base;
			assert_true(off >= 0 && off < UNIVERSE);
			assert_true(ref[off]);
			if (i > 0)
				assert_true(back[i] > back[i - 1]);
		}
		/* formatting again gives the same text */
		char *again = jf_idxset_format(back, nback, thr_back);
		assert_string_equal(again, s);
		free(again);
		free(back);
		free(s);
	}
}

/* hostlists built from random index sets expand to exactly those names */
static void test_hostlist_random(void **state)
{
	(void)state;
	for (int round = 0; round < 500; round++) {
		int64_t set[40];
		size_t n = 0;
		for (int i = 0; i < 40; i++)
			if (rnd() % 2)
				set[n++] = i * 3 + (int64_t)(rnd() % 3);
		if (n == 0)
			continue;
		char *r = jf_idxset_format(set, n, 0);
		char list[512];
		snprintf(list, sizeof(list), "node[%s],x", r);
		free(r);
		char **names = NULL;
		size_t nn = 0;
		struct jf_error err;
		assert_int_equal(jf_hostlist_expand(list, &names, &nn, 100, &err), JF_OK);
		assert_int_equal(nn, n + 1);
		for (size_t i = 0; i < n; i++) {
			char want[32];
			snprintf(want, sizeof(want), "node%" PRId64, set[i]);
			assert_string_equal(names[i], want);
		}
		assert_string_equal(names[n], "x");
		jf_hostlist_free(names, nn);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostlist_forms),
		cmocka_unit_test(test_hostlist_malformed),
		cmocka_unit_test(test_hostlist_caps),
		cmocka_unit_test(test_hostlist_first),
		cmocka_unit_test(test_gres_gpu_ids),
		cmocka_unit_test(test_hostlist_random),
		cmocka_unit_test(test_idxset_forms),
		cmocka_unit_test(test_idxset_malformed),
		cmocka_unit_test(test_idxset_roundtrip_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
