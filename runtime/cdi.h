/*
 * cdi.h - the devices of a node's GPUs from Container Device Interface
 * specs (the CNCF CDI format, JSON or YAML files in /etc/cdi and
 * /var/run/cdi).
 *
 * jf_cdi_gpus reads every .json, .yaml and .yml spec (at most 1 MiB; YAML
 * through runtime/yamljson.h) of kind "nvidia.com/gpu" in the
 * directories given and, for each GPU id of the node ("0", "1", ... as in
 * CUDA_VISIBLE_DEVICES), the device of that name: its containerEdits'
 * deviceNodes, plus those of the spec's own containerEdits once, and their
 * env.  A device node's type, major and minor come from the spec or, when
 * it leaves them out, from stat(2) of its hostPath (default: its path).
 */
#ifndef JF_CDI_H
#define JF_CDI_H

#include <stddef.h>
#include <stdint.h>

#define JF_CDI_MAX_DEVICES 64
#define JF_CDI_MAX_ENV     64
#define JF_CDI_PATH        256

struct jf_cdi_device {
	char path[JF_CDI_PATH];      /* in the container */
	char host_path[JF_CDI_PATH]; /* on the host */
	char type;                   /* 'c' or 'b' */
	int64_t major, minor;
	uint32_t mode; /* 0 = 0666 */
};

struct jf_cdi {
	struct jf_cdi_device devices[JF_CDI_MAX_DEVICES];
	size_t ndevices;
	char env[JF_CDI_MAX_ENV][256]; /* "K=V" */
	size_t nenv;
	size_t nfound; /* GPU ids found */
};

/* dirs: ':'-separated directories; ids: "0,1" (CUDA_VISIBLE_DEVICES).
 * Returns 0 (out filled; out->nfound says how many ids had a device) or
 * -1 with a message (a spec that does not parse, a device node that is
 * missing on the host, more devices than the caps). */
int jf_cdi_gpus(const char *dirs, const char *ids, struct jf_cdi *out, char *err, size_t errlen);

#endif
