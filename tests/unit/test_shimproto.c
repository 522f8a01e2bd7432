/*
 * test_shimproto.c - launch.json as the daemon writes it and the shim reads
 * it (backends/shimproto.c): a round trip, the supplementary groups the
 * daemon resolves for the shim, the storage mounts, and the refusals that
 * name their key; the result's eviction and what decides it (an emptydir's
 * usage, the kubelet's words).
 */
#include <fcntl.h>
#include <ftw.h>
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

/* ---- storage (reference 8.3) ---- */

/* the storage mounts and the eviction period: both ways */
static void test_round_trip_mounts(void **state)
{
	(void)state;
	static const struct jf_mount mounts[] = {
		{ .type = JF_MOUNT_EMPTYDIR,
		  .name = "scratch",
		  .path = "/scratch",
		  .size_bytes = 10LL << 30 },
		{ .type = JF_MOUNT_EMPTYDIR, .name = "mem", .path = "/mem", .memory = true },
		{ .type = JF_MOUNT_VOLUME,
		  .name = "data",
		  .source = "/srv/v/data",
		  .path = "/data" },
		{ .type = JF_MOUNT_VOLUME,
		  .name = "ref",
		  .source = "/srv/v/ref",
		  .path = "/data/ref",
		  .read_only = true },
		/* read_only left out: an object is read-only all the same */
		{ .type = JF_MOUNT_OBJECT, .name = "s3", .source = "/srv/cache/s3", .path = "/in" },
	};
	struct jf_shim_launch l = { .uid = 1,
				    .gid = 1,
				    .cwd = "/tmp",
				    .nprocs = 1,
				    .mounts = mounts,
				    .nmounts = 5,
				    .evict_check_ms = 250 };
	l.procs[0] = (struct jf_shim_proc){ .name = "main", .argv = argv_main, .envp = env_main };
	char *text = encode(&l);
	assert_non_null(strstr(text, "\"evict_check_ms\":250"));
	assert_non_null(strstr(text, "\"type\":\"object\""));
	struct jf_shim_launch d = { 0 };
	char err[256] = "";
	if (jf_shim_launch_decode(&d, text, strlen(text), false, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(d.nmounts, 5);
	assert_int_equal(d.evict_check_ms, 250);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(d.mounts[i].type, mounts[i].type);
		assert_string_equal(d.mounts[i].name, mounts[i].name);
		assert_string_equal(d.mounts[i].path, mounts[i].path);
		if (mounts[i].source)
			assert_string_equal(d.mounts[i].source, mounts[i].source);
		else
			assert_null(d.mounts[i].source);
		assert_int_equal(d.mounts[i].size_bytes, mounts[i].size_bytes);
		assert_int_equal(d.mounts[i].memory, mounts[i].memory);
	}
	assert_false(d.mounts[2].read_only);
	assert_true(d.mounts[3].read_only);
	assert_true(d.mounts[4].read_only);
	jf_shim_launch_release(&d);
	free(text);
	/* none: no key at all */
	l.nmounts = 0;
	l.evict_check_ms = 0;
	text = encode(&l);
	assert_null(strstr(text, "mounts"));
	assert_null(strstr(text, "evict_check_ms"));
	memset(&d, 0, sizeof(d));
	assert_int_equal(jf_shim_launch_decode(&d, text, strlen(text), false, err, sizeof(err)), 0);
	assert_int_equal(d.nmounts, 0);
	assert_null(d.mounts);
	assert_int_equal(d.evict_check_ms, 0);
	jf_shim_launch_release(&d);
	free(text);
	/* an unknown type is not written */
	struct jf_mount bad = { .type = (enum jf_mount_type)7, .name = "x", .path = "/x" };
	l.mounts = &bad;
	l.nmounts = 1;
	assert_null(jf_shim_launch_encode(&l));
}

/* launch.json with rest after "procs":[...] refused with a message holding want */
static void mount_refused(const char *rest, const char *want)
{
	char text[4096];
	snprintf(text, sizeof(text),
		 "{\"uid\":5,\"gid\":5,\"cwd\":\"/\","
		 "\"procs\":[{\"name\":\"main\",\"argv\":[\"true\"]}],%s}",
		 rest);
	struct jf_shim_launch d = { 0 };
	char err[256] = "";
	assert_int_equal(jf_shim_launch_decode(&d, text, strlen(text), false, err, sizeof(err)),
			 -1);
	if (!strstr(err, want))
		fail_msg("%s: message %s, want %s", rest, err, want);
	jf_shim_launch_release(&d);
}

#define ED(path) "{\"type\":\"emptydir\",\"name\":\"e\",\"path\":\"" path "\"}"
#define VOL(name, src, path)                                                                       \
	"{\"type\":\"volume\",\"name\":\"" name "\",\"source\":\"" src "\",\"path\":\"" path "\"}"

static void test_bad_mounts(void **state)
{
	(void)state;
	mount_refused("\"mounts\":{}", "launch.json: mounts: must be at most 16 mounts");
	mount_refused("\"mounts\":[7]", "launch.json: mounts[0]: must be an object");
	/* seventeen */
	char many[2048] = "\"mounts\":[";
	for (int i = 0; i < 17; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many),
			 "%s{\"type\":\"emptydir\",\"name\":\"e%d\",\"path\":\"/e%d\"}",
			 i ? "," : "", i, i);
	strcat(many, "]");
	mount_refused(many, "launch.json: mounts: must be at most 16 mounts");
	/* the type */
	mount_refused("\"mounts\":[{\"name\":\"e\",\"path\":\"/e\"}]",
		      "launch.json: mounts[0].type: must be emptydir, volume or object");
	mount_refused("\"mounts\":[{\"type\":\"hostPath\",\"name\":\"e\",\"path\":\"/e\"}]",
		      "launch.json: mounts[0].type");
	/* the path: relative, "..", ":" or ",", the root, missing */
	static const char *const bad_paths[] = {
		ED("scratch"), ED("/a/../etc"),
		ED("/.."),     ED("/a/.."),
		ED("/a:b"),    ED("/a,b"),
		ED("/"),       ED("//"),
		ED("/a\\nb"),  "{\"type\":\"emptydir\",\"name\":\"e\"}",
	};
	for (size_t i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++) {
		char rest[512];
		snprintf(rest, sizeof(rest), "\"mounts\":[%s]", bad_paths[i]);
		mount_refused(rest, "launch.json: mounts[0].path: must be an absolute path");
	}
	/* dots that are not a ".." component are names */
	const char *ok = "{\"uid\":5,\"gid\":5,\"cwd\":\"/\",\"procs\":[{\"name\":\"m\","
			 "\"argv\":[\"x\"]}],\"mounts\":[" ED("/a/..b/c..") "]}";
	struct jf_shim_launch d = { 0 };
	char err[256] = "";
	if (jf_shim_launch_decode(&d, ok, strlen(ok), false, err, sizeof(err)))
		fail_msg("%s", err);
	jf_shim_launch_release(&d);
	/* the source: a volume's is needed, an emptydir has none */
	mount_refused("\"mounts\":[{\"type\":\"volume\",\"name\":\"v\",\"path\":\"/v\"}]",
		      "launch.json: mounts[0].source: must be the host directory");
	mount_refused("\"mounts\":[{\"type\":\"object\",\"name\":\"o\",\"path\":\"/o\"}]",
		      "launch.json: mounts[0].source");
	mount_refused("\"mounts\":[" VOL("v", "srv/v", "/v") "]", "launch.json: mounts[0].source");
	mount_refused("\"mounts\":[" VOL("v", "/srv/../v", "/v") "]",
		      "launch.json: mounts[0].source");
	mount_refused("\"mounts\":[{\"type\":\"emptydir\",\"name\":\"e\",\"source\":\"/s\","
		      "\"path\":\"/e\"}]",
		      "launch.json: mounts[0].source: an emptydir has none");
	/* the name: an emptydir's is a file name */
	mount_refused("\"mounts\":[{\"type\":\"emptydir\",\"path\":\"/e\"}]",
		      "launch.json: mounts[0].name: must be 1 to 63 characters");
	mount_refused("\"mounts\":[{\"type\":\"emptydir\",\"name\":\"a/b\",\"path\":\"/e\"}]",
		      "launch.json: mounts[0].name: must be 1 to 63 characters, a file name");
	mount_refused("\"mounts\":[{\"type\":\"emptydir\",\"name\":\"..\",\"path\":\"/e\"}]",
		      "launch.json: mounts[0].name");
	/* size, memory, read_only */
	mount_refused("\"mounts\":[{\"type\":\"emptydir\",\"name\":\"e\",\"path\":\"/e\","
		      "\"size\":-1}]",
		      "launch.json: mounts[0].size: must be a byte count");
	mount_refused("\"mounts\":[{\"type\":\"emptydir\",\"name\":\"e\",\"path\":\"/e\","
		      "\"memory\":1}]",
		      "launch.json: mounts[0].memory: must be true or false");
	mount_refused("\"mounts\":[{\"type\":\"emptydir\",\"name\":\"e\",\"path\":\"/e\","
		      "\"read_only\":true}]",
		      "launch.json: mounts[0].read_only");
	mount_refused("\"mounts\":[{\"type\":\"volume\",\"name\":\"v\",\"source\":\"/s\","
		      "\"path\":\"/v\",\"memory\":true}]",
		      "launch.json: mounts[0]: size and memory are an emptydir's");
	/* twice at one path, two emptydirs of one name */
	mount_refused("\"mounts\":[" VOL("a", "/s/a", "/v") "," VOL("b", "/s/b", "/v/") "]",
		      "launch.json: mounts[1].path: /v/ is mounts[0]'s");
	mount_refused("\"mounts\":[" ED("/a") "," ED("/b") "]",
		      "launch.json: mounts[1].name: mounts[0] is an emptydir e too");
	/* the period */
	mount_refused("\"evict_check_ms\":-5", "launch.json: evict_check_ms");
	mount_refused("\"evict_check_ms\":\"1s\"", "launch.json: evict_check_ms");
}

/* a result's eviction, read back */
static void test_result_evicted(void **state)
{
	(void)state;
	char dir[] = "/tmp/jf-shimproto-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[sizeof(dir) + 16];
	snprintf(path, sizeof(path), "%s/result", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"exit_code\":137,\"signal\":9,\"start_ms\":1,\"end_ms\":2,"
	      "\"message\":\"Usage of EmptyDir volume \\\"s\\\" exceeds the limit \\\"1Mi\\\".\","
	      "\"start_failed\":false,\"evicted\":true,\"procs\":[{\"name\":\"main\","
	      "\"exit_code\":137,\"signal\":9}]}\n",
	      f);
	fclose(f);
	struct jf_run_result r;
	memset(&r, 0, sizeof(r));
	char why[128];
	assert_int_equal(jf_shim_result(dir, &r, why, sizeof(why)), 0);
	assert_true(r.evicted);
	assert_string_equal(r.message, "Usage of EmptyDir volume \"s\" exceeds the limit \"1Mi\".");
	assert_int_equal(r.exit_code, 137);
	/* without the key: not evicted */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"exit_code\":0,\"message\":\"exit 0\",\"procs\":[]}\n", f);
	fclose(f);
	memset(&r, 0, sizeof(r));
	assert_int_equal(jf_shim_result(dir, &r, why, sizeof(why)), 0);
	assert_false(r.evicted);
	unlink(path);
	rmdir(dir);
}

/* RUN_DIR/gpus: Slurm's ids of a node's GPUs, read back; anything that is
 * not a list of ids reads as none */
static void write_gpus(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_gpus(void **state)
{
	(void)state;
	assert_true(jf_shim_gpus_valid("0"));
	assert_true(jf_shim_gpus_valid("3,4"));
	assert_true(jf_shim_gpus_valid("0,1,2,3,4,5,6,7,10"));
	static const char *const bad[] = {
		"", ",", "0,", ",0", "0,,1", "0-1", "a", "0 1", "gpu:0"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(jf_shim_gpus_valid(bad[i]));
	char big[JF_SHIM_GPUS_MAX + 2];
	memset(big, '1', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_false(jf_shim_gpus_valid(big));

	char dir[] = "/tmp/jf-shimproto-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[sizeof(dir) + 16], buf[96];
	snprintf(path, sizeof(path), "%s/gpus", dir);
	jf_shim_gpus(dir, buf, sizeof(buf)); /* none */
	assert_string_equal(buf, "");
	write_gpus(path, "3,4\n");
	jf_shim_gpus(dir, buf, sizeof(buf));
	assert_string_equal(buf, "3,4");
	write_gpus(path, "3,4");
	jf_shim_gpus(dir, buf, sizeof(buf));
	assert_string_equal(buf, "3,4");
	write_gpus(path, "../x\n");
	jf_shim_gpus(dir, buf, sizeof(buf));
	assert_string_equal(buf, "");
	write_gpus(path, "0,1,2,3\n");
	jf_shim_gpus(dir, buf, 4); /* does not fit: none, not a cut list */
	assert_string_equal(buf, "");
	unlink(path);
	rmdir(dir);
}

static void test_quantity(void **state)
{
	(void)state;
	static const struct {
		int64_t bytes;
		const char *want;
	} cases[] = {
		{ 10LL << 30, "10Gi" }, { 1 << 20, "1Mi" }, { 1536, "1536" /* 1.5Ki */ },
		{ 500000000, "500M" },  { 2000, "2k" },     { 1000, "1k" },
		{ 1023, "1023" },       { 0, "0" },         { 1LL << 60, "1Ei" },
		{ 3LL << 40, "3Ti" },   { 3072, "3Ki" },    { 1000000000000, "1T" },
	};
	char buf[32];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		jf_shim_quantity(cases[i].bytes, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].want);
	}
	char msg[256];
	jf_shim_evict_message("scratch", 10LL << 30, msg, sizeof(msg));
	assert_string_equal(msg,
			    "Usage of EmptyDir volume \"scratch\" exceeds the limit \"10Gi\".");
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void write_bytes(const char *path, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	char buf[4096];
	memset(buf, 'x', sizeof(buf));
	for (size_t off = 0; off < n; off += sizeof(buf))
		assert_true(write(fd, buf, n - off < sizeof(buf) ? n - off : sizeof(buf)) > 0);
	assert_int_equal(fsync(fd), 0); /* its blocks allocated, not delayed */
	close(fd);
}

/* du's count, bounded by the limit; links and holes as du sees them */
static void test_tree_usage(void **state)
{
	(void)state;
	char dir[] = "/tmp/jf-usage-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char p[256];
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	int64_t empty = jf_shim_tree_usage(fd, 0);
	assert_true(empty >= 0 && empty < 64 * 1024); /* the directory's own block */
	snprintf(p, sizeof(p), "%s/a", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/a/b", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/a/b/big", dir);
	write_bytes(p, 1 << 20);
	snprintf(p, sizeof(p), "%s/top", dir);
	write_bytes(p, 256 << 10);
	/* a sparse file: its holes take nothing */
	snprintf(p, sizeof(p), "%s/sparse", dir);
	int sf = open(p, O_WRONLY | O_CREAT, 0644);
	assert_true(sf >= 0);
	assert_int_equal(ftruncate(sf, 1LL << 30), 0);
	close(sf);
	/* a link to the root, not followed */
	snprintf(p, sizeof(p), "%s/root", dir);
	assert_int_equal(symlink("/", p), 0);
	int64_t all = jf_shim_tree_usage(fd, 0);
	assert_true(all >= (1 << 20) + (256 << 10));
	assert_true(all < (1 << 20) + (256 << 10) + (256 << 10));
	/* bounded: past a small limit it stops, but says over it */
	int64_t some = jf_shim_tree_usage(fd, 64 << 10);
	assert_true(some > 64 << 10);
	/* at or over what it takes: the whole of it */
	assert_int_equal(jf_shim_tree_usage(fd, all), all);
	/* fd is where it was, still usable */
	assert_int_equal(jf_shim_tree_usage(fd, all), all);
	close(fd);
	assert_int_equal(nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_groups),
		cmocka_unit_test(test_no_groups),
		cmocka_unit_test(test_round_trip_image),
		cmocka_unit_test(test_note_parse),
		cmocka_unit_test(test_bad_groups),
		cmocka_unit_test(test_round_trip_mounts),
		cmocka_unit_test(test_bad_mounts),
		cmocka_unit_test(test_result_evicted),
		cmocka_unit_test(test_quantity),
		cmocka_unit_test(test_tree_usage),
		cmocka_unit_test(test_gpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
