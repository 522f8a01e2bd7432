/*
 * ocispec.c - build one container's config.json (ocispec.h).
 *
 * The defaults are those of runc's `spec` and of Docker and Podman where
 * they agree: the mounts and masked paths below, the capability set of
 * Podman (Docker's less NET_RAW, MKNOD and AUDIT_WRITE), noNewPrivileges,
 * every device denied but the runtime's standard ones and those named.
 * A non-root process loses even those capabilities at exec (none is
 * ambient), so a writer's job runs with no privilege at all.
 */
#include "runtime/ocispec.h"

#include <stdio.h>
#include <string.h>

static const char *const default_caps[] = {
	"CAP_CHOWN",  "CAP_DAC_OVERRIDE", "CAP_FOWNER",  "CAP_FSETID",           "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID",       "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
	NULL,
};

static const char *const masked[] = {
	"/proc/acpi",
	"/proc/asound",
	"/proc/kcore",
	"/proc/keys",
	"/proc/latency_stats",
	"/proc/timer_list",
	"/proc/timer_stats",
	"/proc/sched_debug",
	"/proc/scsi",
	"/sys/firmware",
	"/sys/devices/virtual/powercap",
	NULL,
};

static const char *const readonly[] = {
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

/* a list of strings; *bad set when one is not UTF-8 */
static json_t *strs_chk(const char *const *v, bool *bad)
{
	json_t *a = json_array();
	for (; v && *v; v++) {
		json_t *s = json_string(*v);
		if (!s)
			*bad = true;
		json_array_append_new(a, s);
	}
	return a;
}

static json_t *strs(const char *const *v)
{
	bool bad = false;
	return strs_chk(v, &bad);
}

static json_t *mount(const char *dest, const char *type, const char *source,
		     const char *const *opts)
{
	return json_pack("{s:s,s:s,s:s,s:o}", "destination", dest, "type", type, "source", source,
			 "options", strs(opts));
}

static bool abs_path(const char *p)
{
	return p && p[0] == '/';
}

/* a ".." component: a mount's destination that would leave the root */
static bool has_dotdot(const char *p)
{
	for (const char *c = p; (c = strstr(c, "..")) != NULL; c += 2)
		if ((c == p || c[-1] == '/') && (c[2] == '/' || c[2] == '\0'))
			return true;
	return false;
}

json_t *jf_oci_config(const struct jf_oci *o, char *err, size_t errlen)
{
	if (!o->argv || !o->argv[0] || !o->argv[0][0]) {
		snprintf(err, errlen, "the container has no command");
		return NULL;
	}
	if (!o->rootfs || !o->rootfs[0]) {
		snprintf(err, errlen, "the container has no root filesystem");
		return NULL;
	}
	if (o->cwd && !abs_path(o->cwd)) {
		snprintf(err, errlen, "working directory %.200s is not absolute", o->cwd);
		return NULL;
	}
	if (o->nbinds > JF_OCI_MAX_BINDS || o->ndevices > JF_OCI_MAX_DEVICES) {
		snprintf(err, errlen, "more than %d mounts or %d devices", JF_OCI_MAX_BINDS,
			 JF_OCI_MAX_DEVICES);
		return NULL;
	}
	for (size_t i = 0; i < o->nbinds; i++)
		if (!abs_path(o->binds[i].source) || !abs_path(o->binds[i].dest) ||
		    strcmp(o->binds[i].dest, "/") == 0 || has_dotdot(o->binds[i].dest)) {
			snprintf(err, errlen,
				 "mount %.200s -> %.200s: both must be absolute, and "
				 "not the container's root nor outside it",
				 o->binds[i].source ? o->binds[i].source : "",
				 o->binds[i].dest ? o->binds[i].dest : "");
			return NULL;
		}

	json_t *caps = o->caps_min ? json_array() : strs(default_caps);
	json_t *groups = json_array();
	for (size_t i = 0; i < o->ngroups; i++)
		json_array_append_new(groups, json_integer(o->groups[i]));
	bool bad = false;
	json_t *process = json_pack("{s:b,s:{s:I,s:I,s:o},s:o,s:o,s:s,s:{s:O,s:O,s:O,s:o,s:o},s:b}",
				    "terminal", 0, "user", "uid", (json_int_t)o->uid, "gid",
				    (json_int_t)o->gid, "additionalGids", groups, "args",
				    strs_chk(o->argv, &bad), "env", strs_chk(o->env, &bad), "cwd",
				    o->cwd ? o->cwd : "/", "capabilities", "bounding", caps,
				    "effective", caps, "permitted", caps, "inheritable",
				    json_array(), "ambient", json_array(), "noNewPrivileges", 1);
	json_decref(caps);
	/* the shim's limits are inherited unless one is asked for */
	if (process && o->nofile > 0)
		json_object_set_new(process, "rlimits",
				    json_pack("[{s:s,s:I,s:I}]", "type", "RLIMIT_NOFILE", "hard",
					      (json_int_t)o->nofile, "soft",
					      (json_int_t)o->nofile));
	if (bad || !process) {
		json_decref(process);
		snprintf(err, errlen, "a command or environment string is not valid UTF-8");
		return NULL;
	}

	static const char *const proc_o[] = { "nosuid", "noexec", "nodev", NULL };
	static const char *const dev_o[] = { "nosuid", "strictatime", "mode=755", "size=65536k",
					     NULL };
	static const char *const pts_o[] = { "nosuid",        "noexec",    "newinstance",
					     "ptmxmode=0666", "mode=0620", NULL };
	static const char *const mq_o[] = { "nosuid", "noexec", "nodev", NULL };
	static const char *const sys_o[] = { "nosuid", "noexec", "nodev", "ro", NULL };
	static const char *const cg_o[] = { "nosuid", "noexec", "nodev", "relatime", "ro", NULL };
	static const char *const bind_ro[] = { "rbind", "ro", "nosuid", "nodev", NULL };
	static const char *const bind_rw[] = { "rbind", "rw", "nosuid", "nodev", NULL };
	json_t *mounts = json_array();
	json_array_append_new(mounts, mount("/proc", "proc", "proc", proc_o));
	json_array_append_new(mounts, mount("/dev", "tmpfs", "tmpfs", dev_o));
	json_array_append_new(mounts, mount("/dev/pts", "devpts", "devpts", pts_o));
	if (o->shm_source)
		json_array_append_new(mounts, mount("/dev/shm", "bind", o->shm_source, bind_rw));
	else {
		char size[64];
		snprintf(size, sizeof(size), "size=%lld",
			 (long long)(o->shm_bytes > 0 ? o->shm_bytes : 64LL << 20));
		const char *shm_o[] = { "nosuid", "noexec", "nodev", "mode=1777", size, NULL };
		json_array_append_new(mounts, mount("/dev/shm", "tmpfs", "shm", shm_o));
	}
	json_array_append_new(mounts, mount("/dev/mqueue", "mqueue", "mqueue", mq_o));
	json_array_append_new(mounts, mount("/sys", "sysfs", "sysfs", sys_o));
	json_array_append_new(mounts, mount("/sys/fs/cgroup", "cgroup", "cgroup", cg_o));
	bool host_net = !o->netns_path && !o->new_netns;
	if (host_net) {
		json_array_append_new(
			mounts, mount("/etc/resolv.conf", "bind", "/etc/resolv.conf", bind_ro));
		json_array_append_new(mounts, mount("/etc/hosts", "bind", "/etc/hosts", bind_ro));
	}
	for (size_t i = 0; i < o->nbinds; i++)
		json_array_append_new(mounts, mount(o->binds[i].dest, "bind", o->binds[i].source,
						    o->binds[i].read_only ? bind_ro : bind_rw));

	json_t *ns = json_pack("[{s:s},{s:s},{s:s},{s:s}]", "type", "pid", "type", "ipc", "type",
			       "uts", "type", "mount");
	if (o->netns_path)
		json_array_append_new(
			ns, json_pack("{s:s,s:s}", "type", "network", "path", o->netns_path));
	else if (o->new_netns)
		json_array_append_new(ns, json_pack("{s:s}", "type", "network"));

	/* devices: all denied, the runtime adds its standard ones; then the
	 * named ones, made and allowed */
	json_t *devs = json_array();
	json_t *allow = json_pack("[{s:b,s:s}]", "allow", 0, "access", "rwm");
	for (size_t i = 0; i < o->ndevices; i++) {
		const struct jf_oci_device *d = &o->devices[i];
		char type[2] = { d->type == 'b' ? 'b' : 'c', '\0' };
		json_array_append_new(devs, json_pack("{s:s,s:s,s:I,s:I,s:i}", "path", d->path,
						      "type", type, "major", (json_int_t)d->major,
						      "minor", (json_int_t)d->minor, "fileMode",
						      (int)(d->mode ? d->mode : 0666)));
		json_array_append_new(allow, json_pack("{s:b,s:s,s:I,s:I,s:s}", "allow", 1, "type",
						       type, "major", (json_int_t)d->major, "minor",
						       (json_int_t)d->minor, "access", "rwm"));
	}
	json_t *res = json_pack("{s:o}", "devices", allow);
	if (o->mem_bytes > 0)
		json_object_set_new(res, "memory",
				    json_pack("{s:I}", "limit", (json_int_t)o->mem_bytes));
	json_t *cpu = json_object();
	if (o->cpu_milli > 0) {
		json_object_set_new(cpu, "period", json_integer(100000));
		json_object_set_new(cpu, "quota", json_integer(o->cpu_milli * 100));
	}
	if (o->cpuset && o->cpuset[0])
		json_object_set_new(cpu, "cpus", json_string(o->cpuset));
	if (json_object_size(cpu))
		json_object_set_new(res, "cpu", cpu);
	else
		json_decref(cpu);

	json_t *linux_ =
		json_pack("{s:o,s:o,s:o,s:o,s:o}", "namespaces", ns, "resources", res, "devices",
			  devs, "maskedPaths", strs(masked), "readonlyPaths", strs(readonly));
	if (o->cgroups_path)
		json_object_set_new(linux_, "cgroupsPath", json_string(o->cgroups_path));

	json_t *root = json_pack("{s:s,s:o,s:{s:s,s:b},s:o,s:o}", "ociVersion", "1.0.2", "process",
				 process, "root", "path", o->rootfs, "readonly", 0, "mounts",
				 mounts, "linux", linux_);
	if (root && o->hostname)
		json_object_set_new(root, "hostname", json_string(o->hostname));
	if (!root)
		snprintf(err, errlen, "a path or name of the container's spec is not valid UTF-8");
	return root;
}
