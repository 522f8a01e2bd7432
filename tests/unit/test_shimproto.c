/*
 * test_shimproto.c - launch.json as the daemon writes it and the shim reads
 * it (backends/shimproto.c): a round trip, the supplementary groups the
 * daemon resolves for the shim, and the refusals that name their key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/shimproto.h"

static char *argv_main[] = { "/bin/true", NULL };
static char *env_main[] = { "PATH=/bin", NULL };

/* l's launch.json text (the caller frees it). */
static char *encode(const struct jf_shim_launch *l)
{
	json_t *root = jf_shim_launch_encode(l);
	assert_non_null(root);
	char *text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	assert_non_null(text);
	return text;
}

static void test_round_trip_groups(void **state)
{
	(void)state;
	static const gid_t groups[] = { 1000, 27, 100 };
	struct jf_shim_launch l = {
		.uid = 1000,
		.gid = 1000,
		.groups = groups,
		.ngroups = 3,
		.has_groups = true,
		.cwd = "/tmp",
		.nprocs = 1,
	};
	l.procs[0] = (struct jf_shim_proc){ "main", argv_main, env_main };
	char *text = encode(&l);
	assert_non_null(strstr(text, "\"groups\":[1000,27,100]"));
	struct jf_shim_launch d = { 0 };
	char err[256] = "";
	assert_int_equal(jf_shim_launch_decode(&d, text, strlen(text), false, err, sizeof(err)), 0);
	assert_true(d.has_groups);
	assert_int_equal(d.ngroups, 3);
	assert_int_equal(d.groups[0], 1000);
	assert_int_equal(d.groups[1], 27);
	assert_int_equal(d.groups[2], 100);
	assert_int_equal(d.uid, 1000);
	assert_string_equal(d.procs[0].argv[0], "/bin/true");
	jf_shim_launch_release(&d);
	free(text);
}

/* Without groups (the Slurm backend's launch.json) nothing says any. */
static void test_no_groups(void **state)
{
	(void)state;
	struct jf_shim_launch l = { .uid = 0, .gid = 0, .cwd = "/tmp", .nprocs = 1 };
	l.procs[0] = (struct jf_shim_proc){ "main", argv_main, env_main };
	char *text = encode(&l);
	assert_null(strstr(text, "groups"));
	struct jf_shim_launch d = { 0 };
	char err[256] = "";
	assert_int_equal(jf_shim_launch_decode(&d, text, strlen(text), false, err, sizeof(err)), 0);
	assert_false(d.has_groups);
	assert_int_equal(d.ngroups, 0);
	jf_shim_launch_release(&d);
	free(text);
	/* an empty list is a user with no supplementary groups */
	const char *empty = "{\"uid\":5,\"gid\":5,\"groups\":[],\"cwd\":\"/\","
			    "\"procs\":[{\"name\":\"main\",\"argv\":[\"true\"]}]}";
	memset(&d, 0, sizeof(d));
	assert_int_equal(jf_shim_launch_decode(&d, empty, strlen(empty), false, err, sizeof(err)),
			 0);
	assert_true(d.has_groups);
	assert_int_equal(d.ngroups, 0);
	jf_shim_launch_release(&d);
}

static void refused(const char *groups, const char *want)
{
	char text[512];
	snprintf(text, sizeof(text),
		 "{\"uid\":5,\"gid\":5,\"groups\":%s,\"cwd\":\"/\","
		 "\"procs\":[{\"name\":\"main\",\"argv\":[\"true\"]}]}",
		 groups);
	struct jf_shim_launch d = { 0 };
	char err[256] = "";
	assert_int_equal(jf_shim_launch_decode(&d, text, strlen(text), false, err, sizeof(err)),
			 -1);
	if (!strstr(err, want))
		fail_msg("groups %s: message %s, want %s", groups, err, want);
	jf_shim_launch_release(&d);
}

static void test_bad_groups(void **state)
{
	(void)state;
	refused("7", "launch.json: groups: must be an array");
	refused("\"wheel\"", "launch.json: groups: must be an array");
	refused("[1, \"wheel\"]", "launch.json: groups[1]: must be a group id");
	refused("[-1]", "launch.json: groups[0]: must be a group id");
	refused("[4294967295]", "launch.json: groups[0]: must be a group id");
	refused("[1.5]", "launch.json: groups[0]: must be a group id");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_groups),
		cmocka_unit_test(test_no_groups),
		cmocka_unit_test(test_bad_groups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
