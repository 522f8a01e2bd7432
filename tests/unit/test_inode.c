/*
 * test_inode.c - inode numbers that encode what they name (fs/inode.c):
 * every kind of object and file round-trips through a number, ids use
 * their 48 bits and no more, the fixed files of a node's attempt, and the
 * names attempts/ answers to.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fuse_lowlevel.h>
#include <string.h>

#include "fs/inode.h"

#define ID_MAX ((INT64_C(1) << 48) - 1)

static void round_trip(enum jf_obj obj, int64_t id, enum jf_file file)
{
	struct jf_ino i;
	uint64_t ino = jf_ino_make(obj, id, file);
	assert_true(jf_ino_split(ino, &i));
	assert_int_equal(i.obj, obj);
	assert_int_equal(i.id, id);
	assert_int_equal(i.file, file);
}

static void test_round_trip(void **state)
{
	(void)state;
	static const int64_t ids[] = { 0, 1, 2, 1023, 1024, INT64_C(1) << 38, ID_MAX };
	for (int o = JF_O_ROOT + 1; o < JF_O__COUNT; o++)
		for (int f = 0; f < JF_F__COUNT; f++)
			for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]); k++)
				round_trip((enum jf_obj)o, ids[k], (enum jf_file)f);
	/* root's directory is FUSE's own number */
	assert_int_equal(jf_ino_make(JF_O_ROOT, 0, JF_F_DIR), FUSE_ROOT_ID);
	struct jf_ino i;
	assert_true(jf_ino_split(FUSE_ROOT_ID, &i));
	assert_int_equal(i.obj, JF_O_ROOT);
	/* a node's attempts/ has its node's id, an attempt its row's */
	int64_t node = (INT64_C(77) << JF_NODE_BITS) | 3;
	round_trip(JF_O_ATTEMPTS, node, JF_F_DIR);
	round_trip(JF_O_ATTEMPT, 123456789, JF_F_LOGS);
	assert_int_not_equal(jf_ino_make(JF_O_ATTEMPTS, node, JF_F_DIR),
			     jf_ino_make(JF_O_NODE, node, JF_F_DIR));
	assert_int_not_equal(jf_ino_make(JF_O_ATTEMPT, 5, JF_F_STATUS),
			     jf_ino_make(JF_O_ATTEMPT, 6, JF_F_STATUS));
	/* an id past 48 bits is cut, never spills into the kind */
	assert_true(jf_ino_split(jf_ino_make(JF_O_ATTEMPT, ID_MAX + 1, JF_F_DIR), &i));
	assert_int_equal(i.obj, JF_O_ATTEMPT);
	assert_int_equal(i.id, 0);
}

static void test_bad_numbers(void **state)
{
	(void)state;
	struct jf_ino i;
	assert_false(jf_ino_split((uint64_t)JF_O__COUNT << 56, &i));
	assert_false(jf_ino_split(((uint64_t)JF_O_ATTEMPT << 56) | JF_F__COUNT, &i));
	assert_false(jf_ino_split(0, &i)); /* JF_O_NONE */
}

static void test_attempt_files(void **state)
{
	(void)state;
	static const char *const names[] = { "status", "status.json", "logs", "stdout", "stderr" };
	static const enum jf_file files[] = { JF_F_STATUS, JF_F_STATUS_JSON, JF_F_LOGS, JF_F_STDOUT,
					      JF_F_STDERR };
	const enum jf_file *f = jf_obj_files(JF_O_ATTEMPT);
	for (size_t k = 0; k < 5; k++) {
		assert_int_equal(f[k], files[k]);
		assert_int_equal(jf_file_lookup(JF_O_ATTEMPT, names[k]), files[k]);
		assert_true(jf_file_listed(files[k]));
	}
	assert_int_equal(f[5], JF_F_DIR);
	/* what an attempt has not: a node's other files */
	assert_int_equal(jf_file_lookup(JF_O_ATTEMPT, "logs.prev"), JF_F_DIR);
	assert_int_equal(jf_file_lookup(JF_O_ATTEMPT, "events"), JF_F_DIR);
	assert_int_equal(jf_file_lookup(JF_O_ATTEMPT, "watch"), JF_F_DIR);
	assert_int_equal(jf_file_lookup(JF_O_ATTEMPT, "allocation"), JF_F_DIR);
	/* attempts/ has no files of its own, only attempts */
	assert_int_equal(jf_obj_files(JF_O_ATTEMPTS)[0], JF_F_DIR);
	assert_int_equal(jf_file_lookup(JF_O_ATTEMPTS, "status"), JF_F_DIR);
}

static void test_attempt_name(void **state)
{
	(void)state;
	assert_int_equal(jf_attempt_name("1"), 1);
	assert_int_equal(jf_attempt_name("2"), 2);
	assert_int_equal(jf_attempt_name("10"), 10);
	assert_int_equal(jf_attempt_name("999999999999999"), INT64_C(999999999999999));
	/* what names no attempt: 0 (attempts count from 1), signs, leading
	 * zeros, spaces, other characters, the empty name, too many digits */
	static const char *const bad[] = {
		"0",
		"00",
		"01",
		"-1",
		"+1",
		" 1",
		"1 ",
		"1a",
		"a",
		"",
		"1.0",
		"0x1",
		"1000000000000000",
		"..",
		".",
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		if (jf_attempt_name(bad[k]) != 0)
			fail_msg("\"%s\" named attempt %lld", bad[k],
				 (long long)jf_attempt_name(bad[k]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_bad_numbers),
		cmocka_unit_test(test_attempt_files),
		cmocka_unit_test(test_attempt_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
