/*
 * test_trash.c - engine/trash.h on a real temporary state directory:
 * paths outside it refused, an ended attempt's directory tidied (records
 * gone, non-empty logs and work files kept, an empty one removed with its
 * node directory), trees removed without following symlinks, empty
 * checkpoint directories only, and every removal idempotent.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/trash.h"
#include "testutil.h"

static char state[1024];

static int setup(void **st)
{
	(void)st;
	jft_mkdtemp(state, sizeof(state), jft_tmp_base(), "jf-trash");
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	jft_rmtree(state);
	return 0;
}

static void path(char *buf, const char *rel)
{
	snprintf(buf, PATH_MAX, "%s/%s", state, rel);
}

static void mk(const char *rel)
{
	char p[PATH_MAX];
	path(p, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX];
	path(p, rel);
	jft_write_file(p, text);
}

static bool there(const char *rel)
{
	char p[PATH_MAX];
	path(p, rel);
	return jft_exists(p);
}

static void test_path_ok(void **st)
{
	(void)st;
	assert_true(jf_trash_path_ok("/s", "/s/runs/1/1"));
	assert_true(jf_trash_path_ok("/s/", "/s/ckpt/9"));
	assert_false(jf_trash_path_ok("/s", "/s"));
	assert_false(jf_trash_path_ok("/s", "/s/"));
	assert_false(jf_trash_path_ok("/s", "/st/runs"));
	assert_false(jf_trash_path_ok("/s", "/s/runs/../../etc"));
	assert_false(jf_trash_path_ok("/s", "/s/./runs"));
	assert_false(jf_trash_path_ok("/s", "/s/runs//1"));
	assert_false(jf_trash_path_ok("/s", "/s/runs/1/"));
	assert_false(jf_trash_path_ok("/s", "/etc/passwd"));
	assert_false(jf_trash_path_ok("/s", NULL));
	assert_int_equal(jf_trash_remove("/s", JF_TRASH_TREE, "/etc", NULL), EPERM);
	assert_int_equal(jf_trash_remove("/s", JF_TRASH_TREE, "/s/../etc", NULL), EPERM);
}

static void test_tidy(void **st)
{
	(void)st;
	char p[PATH_MAX];
	mk("runs");
	/* node 1: a trivial attempt, nothing kept */
	mk("runs/1");
	mk("runs/1/1");
	mk("runs/1/1/work");
	put("runs/1/1/launch.json", "{}");
	put("runs/1/1/claim", "42 1\n");
	put("runs/1/1/started", "1\n");
	put("runs/1/1/result", "{}\n");
	put("runs/1/1/rotation.tmp", "{}");
	put("runs/1/1/stdout", "");
	put("runs/1/1/stderr", "");
	put("runs/1/1/logs", "");
	int64_t freed = 0;
	path(p, "runs/1/1");
	assert_int_equal(jf_trash_remove(state, JF_TRASH_TIDY, p, &freed), 0);
	assert_false(there("runs/1/1"));
	assert_false(there("runs/1")); /* its node directory went too */
	assert_true(freed > 0);
	/* again: gone already, not an error */
	assert_int_equal(jf_trash_remove(state, JF_TRASH_TIDY, p, NULL), 0);

	/* node 2: output, a work file, a file the task put beside */
	mk("runs/2");
	mk("runs/2/1");
	mk("runs/2/1/work");
	put("runs/2/1/result", "{}\n");
	put("runs/2/1/stdout", "hello\n");
	put("runs/2/1/stderr", "");
	put("runs/2/1/logs", "hello\n");
	put("runs/2/1/logs.1", "older\n");
	put("runs/2/1/work/out.csv", "1,2\n");
	put("runs/2/1/mine.txt", "the task's\n");
	path(p, "runs/2/1");
	assert_int_equal(jf_trash_remove(state, JF_TRASH_TIDY, p, NULL), 0);
	assert_false(there("runs/2/1/result"));
	assert_false(there("runs/2/1/stderr"));
	assert_true(there("runs/2/1/stdout"));
	assert_true(there("runs/2/1/logs"));
	assert_true(there("runs/2/1/logs.1"));
	assert_true(there("runs/2/1/work/out.csv"));
	assert_true(there("runs/2/1/mine.txt"));
}

static void test_tree_and_empty(void **st)
{
	(void)st;
	char p[PATH_MAX], target[PATH_MAX], link[PATH_MAX];
	mk("outside");
	put("outside/precious", "keep me\n");
	mk("runs");
	mk("runs/7");
	mk("runs/7/2");
	mk("runs/7/2/work");
	mk("runs/7/2/work/deep");
	put("runs/7/2/work/deep/f", "x\n");
	put("runs/7/2/logs", "log\n");
	/* a task's symlinks: removed, never followed */
	path(target, "outside");
	path(link, "runs/7/2/work/to-outside");
	assert_int_equal(symlink(target, link), 0);
	path(link, "runs/7/2/work/deep/to-etc");
	assert_int_equal(symlink("/etc", link), 0);
	path(p, "runs/7/2");
	int64_t freed = 0;
	assert_int_equal(jf_trash_remove(state, JF_TRASH_TREE, p, &freed), 0);
	assert_false(there("runs/7/2"));
	assert_false(there("runs/7"));
	assert_true(there("outside/precious"));
	assert_true(jft_exists("/etc/passwd"));
	assert_true(freed > 0);
	assert_int_equal(jf_trash_remove(state, JF_TRASH_TREE, p, NULL), 0);

	/* a checkpoint directory: only when empty */
	mk("ckpt");
	mk("ckpt/5");
	mk("ckpt/6");
	put("ckpt/6/step-100.pt", "weights\n");
	path(p, "ckpt/5");
	assert_int_equal(jf_trash_remove(state, JF_TRASH_EMPTY, p, NULL), 0);
	assert_false(there("ckpt/5"));
	path(p, "ckpt/6");
	assert_int_equal(jf_trash_remove(state, JF_TRASH_EMPTY, p, NULL), 0);
	assert_true(there("ckpt/6/step-100.pt"));
	assert_true(there("ckpt")); /* never the roots */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_ok),
		cmocka_unit_test_setup_teardown(test_tidy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tree_and_empty, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
