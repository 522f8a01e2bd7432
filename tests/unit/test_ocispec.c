/*
 * test_ocispec.c - config.json (runtime/ocispec.c): the keys a container
 * needs, what is refused, and, as root with crun installed, a real
 * container run from the config on a busybox root (in a private mount
 * namespace without the cgroup2 mount of a hybrid host, as jobfs-shim
 * runs it): the uid, the environment, /dev/shm's size, no capabilities.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/ocispec.h"
#include "testutil.h"

static const char *const argv_id[] = { "/bin/sh", "-c", "id", NULL };
static const char *const env1[] = { "PATH=/bin", "A=1", NULL };

static json_t *get(json_t *o, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok(buf, "."); k && o; k = strtok(NULL, "."))
		o = json_is_array(o) ? json_array_get(o, (size_t)atoi(k)) : json_object_get(o, k);
	return o;
}

static json_t *find_mount(json_t *c, const char *dest)
{
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(c, "mounts"), i,
			   m) if (!strcmp(json_string_value(json_object_get(m, "destination")),
					  dest)) return m;
	return NULL;
}

static bool has_opt(json_t *m, const char *opt)
{
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(m, "options"), i,
			   s) if (!strcmp(json_string_value(s), opt)) return true;
	return false;
}

static void test_keys(void **state)
{
	char err[256] = "";
	gid_t groups[] = { 27, 100 };
	struct jf_oci_bind binds[] = { { "/srv/ckpt", "/ckpt", false },
				       { "/srv/data", "/data", true } };
	struct jf_oci_device devs[] = { { "/dev/nvidia0", 'c', 195, 0, 0 } };
	struct jf_oci o = {
		.argv = argv_id,
		.env = env1,
		.cwd = "/work",
		.uid = 1000,
		.gid = 1000,
		.groups = groups,
		.ngroups = 2,
		.rootfs = "rootfs",
		.hostname = "n0",
		.mem_bytes = 256 << 20,
		.cpu_milli = 1500,
		.cpuset = "0-1",
		.shm_bytes = 1 << 30,
		.cgroups_path = "/jobfs/a1",
		.binds = binds,
		.nbinds = 2,
		.devices = devs,
		.ndevices = 1,
	};
	(void)state;
	json_t *c = jf_oci_config(&o, err, sizeof(err));
	assert_non_null(c);
	assert_string_equal(json_string_value(get(c, "ociVersion")), "1.0.2");
	assert_int_equal(json_integer_value(get(c, "process.user.uid")), 1000);
	assert_int_equal(json_integer_value(get(c, "process.user.additionalGids.1")), 100);
	assert_string_equal(json_string_value(get(c, "process.args.2")), "id");
	assert_string_equal(json_string_value(get(c, "process.env.1")), "A=1");
	assert_string_equal(json_string_value(get(c, "process.cwd")), "/work");
	assert_true(json_is_true(get(c, "process.noNewPrivileges")));
	assert_int_equal(json_array_size(get(c, "process.capabilities.ambient")), 0);
	assert_string_equal(json_string_value(get(c, "root.path")), "rootfs");
	assert_string_equal(json_string_value(get(c, "hostname")), "n0");
	assert_int_equal(json_integer_value(get(c, "linux.resources.memory.limit")), 256 << 20);
	assert_int_equal(json_integer_value(get(c, "linux.resources.cpu.quota")), 150000);
	assert_int_equal(json_integer_value(get(c, "linux.resources.cpu.period")), 100000);
	assert_string_equal(json_string_value(get(c, "linux.resources.cpu.cpus")), "0-1");
	assert_string_equal(json_string_value(get(c, "linux.cgroupsPath")), "/jobfs/a1");
	/* devices: deny all, then allow the named one */
	assert_false(json_is_true(get(c, "linux.resources.devices.0.allow")));
	assert_true(json_is_true(get(c, "linux.resources.devices.1.allow")));
	assert_int_equal(json_integer_value(get(c, "linux.resources.devices.1.major")), 195);
	assert_string_equal(json_string_value(get(c, "linux.devices.0.path")), "/dev/nvidia0");
	/* host network: no network namespace, the host's resolv.conf */
	size_t i;
	json_t *n;
	json_array_foreach(get(c, "linux.namespaces"), i, n)
		assert_string_not_equal(json_string_value(json_object_get(n, "type")), "network");
	assert_non_null(find_mount(c, "/etc/resolv.conf"));
	json_t *shm = find_mount(c, "/dev/shm");
	assert_non_null(shm);
	assert_true(has_opt(shm, "size=1073741824"));
	json_t *ro = find_mount(c, "/data");
	assert_true(has_opt(ro, "ro"));
	assert_false(has_opt(ro, "rw"));
	assert_string_equal(json_string_value(json_object_get(ro, "source")), "/srv/data");
	assert_string_equal(json_string_value(json_object_get(ro, "type")), "bind");
	json_t *rw = find_mount(c, "/ckpt");
	assert_true(has_opt(rw, "rw"));
	assert_false(has_opt(rw, "ro"));
	assert_true(has_opt(rw, "rbind"));
	json_decref(c);

	/* a new network namespace, no capabilities, the node's shm bound */
	o.new_netns = true;
	o.caps_min = true;
	o.shm_source = "/run/jobfs/shm";
	c = jf_oci_config(&o, err, sizeof(err));
	assert_non_null(c);
	bool netns = false;
	json_array_foreach(get(c, "linux.namespaces"), i, n) netns |=
		!strcmp(json_string_value(json_object_get(n, "type")), "network");
	assert_true(netns);
	assert_null(find_mount(c, "/etc/resolv.conf"));
	assert_int_equal(json_array_size(get(c, "process.capabilities.bounding")), 0);
	assert_string_equal(json_string_value(json_object_get(find_mount(c, "/dev/shm"), "source")),
			    "/run/jobfs/shm");
	json_decref(c);
}

static void test_refused(void **state)
{
	char err[256];
	static const char *const empty[] = { NULL };
	static const char *const blank[] = { "", NULL };
	struct jf_oci_bind root_bind[] = { { "/srv", "/", false } };
	struct jf_oci_bind rel_bind[] = { { "srv", "/x", false } };
	struct jf_oci_bind up_bind[] = { { "/srv", "/data/../../etc", false } };
	struct jf_oci_bind dots_bind[] = { { "/srv", "/data/..x/a..", false } };
	(void)state;
	struct jf_oci o = { .argv = empty, .rootfs = "rootfs" };
	assert_null(jf_oci_config(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "no command"));
	o.argv = blank;
	assert_null(jf_oci_config(&o, err, sizeof(err)));
	o.argv = argv_id;
	o.rootfs = NULL;
	assert_null(jf_oci_config(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "root filesystem"));
	o.rootfs = "rootfs";
	o.cwd = "work";
	assert_null(jf_oci_config(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "not absolute"));
	o.cwd = NULL;
	o.binds = root_bind;
	o.nbinds = 1;
	assert_null(jf_oci_config(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "not the container's root"));
	o.binds = rel_bind;
	assert_null(jf_oci_config(&o, err, sizeof(err)));
	o.binds = up_bind; /* a ".." component: outside the root */
	assert_null(jf_oci_config(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "outside it"));
	o.binds = dots_bind; /* dots in names are names */
	json_t *c = jf_oci_config(&o, err, sizeof(err));
	assert_non_null(c);
	json_decref(c);
	o.binds = rel_bind;
	o.nbinds = JF_OCI_MAX_BINDS + 1;
	assert_null(jf_oci_config(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "more than"));
	static const char *const bad_utf8[] = { "/bin/sh", "\xff", NULL };
	struct jf_oci u = { .argv = bad_utf8, .rootfs = "rootfs" };
	assert_null(jf_oci_config(&u, err, sizeof(err)));
	assert_non_null(strstr(err, "UTF-8"));
}

/* a real run under crun: as root, crun installed (JOBFS_OCI_REQUIRED=1
 * makes its absence a failure, as in CI) */
static void test_crun_run(void **state)
{
	(void)state;
	bool have = access("/usr/bin/crun", X_OK) == 0 && access("/bin/busybox", X_OK) == 0;
	if (!have || geteuid() != 0) {
		if (getenv("JOBFS_OCI_REQUIRED"))
			fail_msg("JOBFS_OCI_REQUIRED: crun and busybox-static are needed, as root");
		skip();
	}
	char dir[512], cmd[4096], path[700];
	jft_mkdtemp(dir, sizeof(dir), "/tmp", "ocispec");
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd %s; mkdir -p rootfs/bin; cp /bin/busybox rootfs/bin/; "
		 "for c in sh id cat df grep awk; do ln -s busybox rootfs/bin/$c; done",
		 dir);
	assert_int_equal(system(cmd), 0);
	static const char *const argv[] = {
		"/bin/sh", "-c",
		"id -u; id -g; echo \"$A\"; df -k /dev/shm | awk 'NR==2{print $2}'; "
		"grep CapEff /proc/self/status",
		NULL
	};
	struct jf_oci o = {
		.argv = argv,
		.env = env1,
		.uid = 1000,
		.gid = 1001,
		.rootfs = "rootfs",
		.shm_bytes = 8 << 20,
		.mem_bytes = 64 << 20,
		.caps_min = false,
	};
	char err[256];
	json_t *c = jf_oci_config(&o, err, sizeof(err));
	assert_non_null(c);
	snprintf(path, sizeof(path), "%s/config.json", dir);
	assert_int_equal(json_dump_file(c, path, 0), 0);
	json_decref(c);
	/* crun refuses a hybrid host's cgroup2 mount: hide it, as the shim does */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; "
		 "crun run ocispec-test-%ld' > out 2> errout",
		 dir, (long)getpid());
	int rc = system(cmd);
	char *out = jft_read_in(dir, "out");
	char *eo = jft_read_in(dir, "errout");
	if (rc != 0)
		fail_msg("crun run: %d: %s %s", rc, out ? out : "", eo ? eo : "");
	assert_non_null(out);
	assert_string_equal(out, "1000\n1001\n1\n8192\nCapEff:\t0000000000000000\n");
	free(out);
	free(eo);
	jft_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_crun_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
