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
	l.procs[0] = (struct jf_shim_proc){ .name = "main", .argv = argv_main, .envp = env_main };
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
	l.procs[0] = (struct jf_shim_proc){ .name = "main", .argv = argv_main, .envp = env_main };
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

/* a container's image, its limits and the runtime: both ways */
static void test_round_trip_image(void **state)
{
	(void)state;
	static char *const cmd[] = { "sh", "-c", NULL };
	static char *const args[] = { "echo hi", NULL };
	static char *const ienv[] = { "A=1", NULL };
	static const char *const insecure[] = { "127.0.0.1:5000", NULL };
	struct jf_proc_image im = { .reference = "127.0.0.1:5000/a:1",
				    .pull_policy = "IfNotPresent",
				    .command = cmd,
				    .args = args,
				    .env = ienv };
	struct jf_runtime_conf rt = { .oci_runtime = "/usr/bin/crun",
				      .image_tool = "/x/jobfs-image",
				      .cache_dir = "/s/images",
				      .insecure = insecure,
				      .ninsecure = 1,
				      .pull_timeout_ms = 5000 };
	struct jf_shim_launch l = { .uid = 1,
				    .gid = 1,
				    .cwd = "/tmp",
				    .nprocs = 2,
				    .rt = &rt,
				    .registry_auth = "/home/u/auth.json",
				    .shm_bytes = 1 << 20 };
	l.procs[0] = (struct jf_shim_proc){ .name = "main",
					    .argv = argv_main,
					    .envp = env_main,
					    .image = &im,
					    .mem_bytes = 64 << 20,
					    .cpu_milli = 500 };
	l.procs[1] = (struct jf_shim_proc){ .name = "side", .argv = argv_main, .envp = env_main };
	char *text = encode(&l);
	struct jf_shim_launch d = { 0 };
	char err[256] = "";
	if (jf_shim_launch_decode(&d, text, strlen(text), false, err, sizeof(err)))
		fail_msg("%s", err);
	assert_non_null(d.procs[0].image);
	assert_null(d.procs[1].image);
	assert_string_equal(d.procs[0].image->reference, "127.0.0.1:5000/a:1");
	assert_string_equal(d.procs[0].image->pull_policy, "IfNotPresent");
	assert_string_equal(d.procs[0].image->command[1], "-c");
	assert_null(d.procs[0].image->command[2]);
	assert_string_equal(d.procs[0].image->args[0], "echo hi");
	assert_string_equal(d.procs[0].image->env[0], "A=1");
	assert_int_equal(d.procs[0].mem_bytes, 64 << 20);
	assert_int_equal(d.procs[0].cpu_milli, 500);
	assert_int_equal(d.procs[1].mem_bytes, 0);
	assert_non_null(d.rt);
	assert_string_equal(d.rt->oci_runtime, "/usr/bin/crun");
	assert_string_equal(d.rt->cache_dir, "/s/images");
	assert_int_equal(d.rt->ninsecure, 1);
	assert_string_equal(d.rt->insecure[0], "127.0.0.1:5000");
	assert_int_equal(d.rt->pull_timeout_ms, 5000);
	assert_string_equal(d.registry_auth, "/home/u/auth.json");
	assert_int_equal(d.shm_bytes, 1 << 20);
	jf_shim_launch_release(&d);
	free(text);
	/* no command given stays "not given", not empty */
	im.command = NULL;
	im.args = NULL;
	text = encode(&l);
	memset(&d, 0, sizeof(d));
	assert_int_equal(jf_shim_launch_decode(&d, text, strlen(text), false, err, sizeof(err)), 0);
	assert_null(d.procs[0].image->command);
	assert_null(d.procs[0].image->args);
	jf_shim_launch_release(&d);
	free(text);
	/* refused: an image without a reference, a runtime without paths */
	const char *bad1 = "{\"uid\":5,\"gid\":5,\"cwd\":\"/\",\"procs\":[{\"name\":\"m\","
			   "\"argv\":[\"x\"],\"image\":{\"pull_policy\":\"Always\"}}]}";
	memset(&d, 0, sizeof(d));
	assert_int_equal(jf_shim_launch_decode(&d, bad1, strlen(bad1), false, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "needs a reference"));
	jf_shim_launch_release(&d);
	const char *bad2 = "{\"uid\":5,\"gid\":5,\"cwd\":\"/\",\"procs\":[{\"name\":\"m\","
			   "\"argv\":[\"x\"]}],\"runtime\":{\"oci\":\"/c\"}}";
	memset(&d, 0, sizeof(d));
	assert_int_equal(jf_shim_launch_decode(&d, bad2, strlen(bad2), false, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "runtime"));
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

/* The supervisor's note lines (ready pipe, RUN_DIR/notes under Slurm) */
static void test_note_parse(void **state)
{
	(void)state;
	struct jf_run_result r;
	memset(&r, 0, sizeof(r));
	r.cookie = 7;
	assert_true(jf_shim_note_parse("note Normal Pulled Container image \"a/b:1\" already "
				       "present on machine\n",
				       &r));
	assert_true(r.note);
	assert_int_equal(r.cookie, 7); /* untouched */
	assert_string_equal(r.note_type, "Normal");
	assert_string_equal(r.note_reason, "Pulled");
	assert_string_equal(r.message, "Container image \"a/b:1\" already present on machine");
	memset(&r, 0, sizeof(r));
	assert_true(jf_shim_note_parse("note Warning Failed Failed to pull image x", &r));
	assert_string_equal(r.note_type, "Warning");
	assert_string_equal(r.message, "Failed to pull image x");
	/* a type that is not Warning is Normal; a reason too long is cut */
	memset(&r, 0, sizeof(r));
	assert_true(jf_shim_note_parse("note Bogus Created Created container main", &r));
	assert_string_equal(r.note_type, "Normal");
	/* not notes */
	const char *bad[] = {
		"", "note", "note Normal", "started 1 2", "error bad", "notes a b c"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&r, 0, sizeof(r));
		assert_false(jf_shim_note_parse(bad[i], &r));
		assert_false(r.note);
	}
	/* a message longer than a result holds is cut, not overrun */
	char line[JF_RUN_MSG_MAX * 2 + 32];
	int n = snprintf(line, sizeof(line), "note Normal Pulled ");
	memset(line + n, 'x', sizeof(line) - (size_t)n - 1);
	line[sizeof(line) - 1] = '\0';
	memset(&r, 0, sizeof(r));
	assert_true(jf_shim_note_parse(line, &r));
	assert_int_equal(strlen(r.message), JF_RUN_MSG_MAX - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_groups), cmocka_unit_test(test_no_groups),
		cmocka_unit_test(test_round_trip_image),  cmocka_unit_test(test_note_parse),
		cmocka_unit_test(test_bad_groups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
