/*
 * ocispec.h - the OCI runtime spec (config.json) of one container.
 *
 * jobfs writes each container's bundle itself (reference 8.1): the process
 * as the spec writer's uid, gid and groups with no new privileges and
 * Docker's default capability set less the ones a batch job has no use
 * for (struct jf_oci's caps_min: none at all); the image's environment
 * under the node's; its own pid, ipc, uts and mount namespaces, the
 * host's network unless netns is set; /proc, /dev, /dev/pts, /dev/mqueue,
 * /sys (read-only), the node's /dev/shm, the host's resolv.conf and hosts
 * (host network) and the caller's binds; cgroup limits of memory and cpu;
 * the devices of a CDI spec.  Pure: builds a jansson object, nothing else.
 */
#ifndef JF_OCISPEC_H
#define JF_OCISPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JF_OCI_MAX_BINDS   32
#define JF_OCI_MAX_DEVICES 64

struct jf_oci_bind {
	const char *source; /* host path */
	const char *dest;   /* in the container, absolute */
	bool read_only;
};

struct jf_oci_device {
	const char *path; /* in the container (CDI: containerPath, default hostPath) */
	char type;        /* 'c' or 'b' */
	int64_t major, minor;
	uint32_t mode; /* file mode bits; 0 = 0666 */
};

struct jf_oci {
	const char *const *argv; /* NULL-terminated, argv[0] non-empty */
	const char *const *env;  /* "K=V", NULL-terminated; later entries win */
	const char *cwd;         /* absolute; NULL = "/" */
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t ngroups;
	const char *rootfs;     /* the bundle's root (absolute, or relative to it) */
	const char *hostname;   /* NULL = none set */
	int64_t mem_bytes;      /* 0 = no memory limit */
	int64_t cpu_milli;      /* 0 = no cpu quota; else quota = milli * period / 1000 */
	const char *cpuset;     /* "0-3,8", NULL = any */
	const char *shm_source; /* a host directory bind-mounted at /dev/shm; NULL: a
				 * tmpfs of shm_bytes (0 = 64 MiB, Docker's default) */
	int64_t shm_bytes;
	const char *cgroups_path; /* NULL = the runtime's default */
	const char *netns_path;   /* join this network namespace; NULL: the host's */
	bool new_netns;           /* a fresh network namespace (ignored with netns_path) */
	bool caps_min;            /* no capabilities at all (default: Docker's set) */
	const struct jf_oci_bind *binds;
	size_t nbinds;
	const struct jf_oci_device *devices;
	size_t ndevices;
	int64_t nofile; /* RLIMIT_NOFILE soft and hard; 0 = the caller's (inherited) */
};

/* The config.json object for o (the caller json_decref()s it), or NULL with
 * a message in err naming what is wrong (an empty argv, a relative path, a
 * bind to "/" or to a path with a ".." component, more binds or devices
 * than the caps, a string that is not UTF-8).  A bind is read-only ("ro",
 * which the runtime remounts: EROFS to a writer) or read-write ("rw"). */
json_t *jf_oci_config(const struct jf_oci *o, char *err, size_t errlen);

#endif
