/*
 * shim_ctr.c - a node's OCI containers (reference 8.1): the images pulled,
 * each container's bundle made, created and started under the OCI runtime
 * (crun or runc), and deleted at the end.
 *
 * DESIGN
 *
 * - Pull before the claim (ctr_pull): tools/jobfs-image pulls each image
 *   into the host's cache, or finds it there.  While it works the shim
 *   writes notes on fd 3, before its ready line:
 *       note Normal Pulling Pulling image "REF"
 *       note Normal Pulled Successfully pulled image "REF" in 3.493s. Image size: N bytes.
 *       note Normal Pulled Container image "REF" already present on machine
 *       note Warning Failed Failed to pull image "REF": MESSAGE
 *   and a failed pull ends the shim with the ready line "pullfailed
 *   MESSAGE" and no claim: nothing ran, a restarted daemon that finds no
 *   claim gives the attempt up (cancelled) and the next start finds the
 *   image cached.  Pulling before the claim is what keeps a pull out of
 *   the node's billed time, whatever happens to the daemon meanwhile.
 * - After the claim (ctr_setup): the shim enters a mount namespace of its
 *   own (private: its mounts never leak out and all of them go when the
 *   shim ends; jobfs's own FUSE mounts are detached in it, or the daemon
 *   would not see an unmount while the node runs), hides a hybrid host's
 *   cgroup2 mount from crun (which refuses hybrid cgroups), mounts the
 *   node's /dev/shm (a tmpfs of shm_bytes at RUN_DIR/shm, bound into every
 *   container of the node, as a pod's) and each container's root: an
 *   overlay of the image's layers from the cache, shared by every
 *   container of the image (nothing copied), over an upper directory of
 *   its own in RUN_DIR/ctr/NAME.
 * - config.json (runtime/ocispec.c): the spec's command and args, or the
 *   image's ENTRYPOINT and CMD (Kubernetes' rules), the image's Env under
 *   the node's variables, the image's WorkingDir, the writer's uid, gid and
 *   groups (the image's USER only when the writer is root), no new
 *   privileges, host networking, the node's checkpoint directory bound at
 *   its own path.
 * - ctr_create runs `RUNTIME --root RUN_DIR/runtime run --detach --bundle B
 *   --pid-file B/pid ID` with the proc's pipes as its stdio, which the
 *   container inherits; the shim is a child subreaper, so the container's
 *   init becomes its child once the runtime exits, and is the proc's pid:
 *   reaped, timed and signalled as a host proc (its process group does
 *   not exist on the host, so signals go to the pid: forward()).
 *   Created and started in one exec of the runtime (`run --detach`): the
 *   "started" line follows once every container runs, the node's start.
 * - ctr_cleanup: `RUNTIME delete --force ID` for each created container,
 *   the rootfs unmounted, RUN_DIR/ctr removed (the logs stay).
 *
 * STORAGE (reference 8.3; launch.json "mounts")
 *
 * - Every mount is in every container of the node, at its path, after
 *   the image's own mounts (a shorter path first, so that one inside
 *   another is not hidden by it).  Only containers have them: a launch
 *   with mounts and a proc without an image is a start failure.
 * - A volume or an object source: its host directory (which must exist)
 *   bound, read-write, or read-only ("ro" remounted by the runtime; EROFS
 *   to a writer) with read_only and always for an object.
 * - An emptydir: RUN_DIR/emptydir/NAME, made after the claim and bound into
 *   every container, so that they share it as a pod's containers do;
 *   removed with everything in it when the node ends.  RUN_DIR/emptydir is
 *   0700 and root's: no one on the host reaches what a node keeps there
 *   (a bind does not need its source's parents to be searchable), and the
 *   shim's removal at the end meets nothing a user could have swapped.
 *   NAME itself is the writer's (launch.json uid, gid) with Kubernetes'
 *   emptyDir mode, 0777: the image's USER of a root launch, another uid
 *   than the writer's, can write there too.
 * - medium Memory: a tmpfs mounted there, in the shim's mount namespace
 *   (the host sees an empty directory), of size, or without one of the
 *   node's memory limit (the sum of its containers' when each has one),
 *   else tmpfs's own default, half of RAM.  As in Kubernetes its pages are
 *   charged to the memory cgroup of the process that writes them: the
 *   container's (limits_setup), whose limit then counts them; so its OOM
 *   kill tells a container that filled a Memory emptydir.
 * - On disk with a size: evicted as the kubelet evicts.  Every
 *   evict_check_ms (default SHIM_EVICT_CHECK_MS, the kubelet's 10 s) the
 *   shim sums st_blocks over the tree (jf_shim_tree_usage: du's count,
 *   bounded: it stops once past the size); over the size, the node is
 *   evicted: the kubelet's words, "Usage of EmptyDir volume "NAME" exceeds
 *   the limit "10Gi".", in the first running container's stderr and logs
 *   and in the result's message with "evicted": true (the engine's Warning
 *   Evicted event and reason Evicted); SIGTERM to every container and
 *   SIGKILL SHIM_EVICT_GRACE_MS (2 s) later, as the kubelet kills an
 *   evicted pod: its eviction grace of 1 s raised to its least grace,
 *   minimumGracePeriodInSeconds.  A Memory emptydir is not checked: its
 *   tmpfs cannot outgrow its size (ENOSPC to a writer).
 */
#include "tools/shim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/imgref.h"
#include "runtime/cdi.h"
#include "runtime/ocispec.h"

#define RUNTIME_WAIT (60LL * 1000) /* run, delete */
#define OVL_DATA_MAX 4000          /* mount(2) data is one page */

extern char **environ;

void ready_note(struct shim *s, const char *type, const char *reason, const char *fmt, ...)
{
	char msg[SHIM_MSG_MAX * 2], line[SHIM_MSG_MAX * 2 + 64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	msg_clean(msg);
	int n = snprintf(line, sizeof(line), "note %s %s %s\n", type, reason, msg);
	if (n <= 0)
		return;
	if (s->ready_fd >= 0)
		(void)write_all(s->ready_fd, line, strlen(line));
	else if (s->notes_fd >= 0)
		(void)write_all(s->notes_fd, line, strlen(line));
}

/* ---- the bundle ---- */

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	int rc = write_all(fd, text, strlen(text));
	if (close(fd) < 0)
		rc = -1;
	return rc;
}

static int mkdir_one(const char *p, mode_t m)
{
	return mkdir(p, m) == 0 || errno == EEXIST ? 0 : -1;
}

static bool hybrid_cgroups(void)
{
	struct stat a, b;
	return stat("/sys/fs/cgroup/unified/cgroup.controllers", &a) == 0 &&
	       stat("/sys/fs/cgroup/memory", &b) == 0;
}

static const char *base_name(const char *p)
{
	const char *sl = strrchr(p, '/');
	return sl ? sl + 1 : p;
}

/* Overlay of the image's layers on bundle/rootfs.  The layers are named
 * relative to their directory (the shim's cwd for the call) so that more
 * of them fit in the one page mount(2) takes. */
/* "lowerdir=" and the layers, the top one first, into data: their
 * directories' own names (the shim mounts from their parent), or with
 * numbered their positions (links made by mount_root).  The length, or 0
 * when they do not fit. */
static size_t lower_list(json_t *layers, size_t n, char *data, size_t cap, bool numbered)
{
	size_t off = (size_t)snprintf(data, cap, "lowerdir=");
	for (size_t k = n; k-- > 0;) {
		const char *l = json_string_value(json_array_get(layers, k));
		if (!l)
			return 0;
		int w = numbered ? snprintf(data + off, cap - off, "%s%zu", k + 1 < n ? ":" : "", k)
				 : snprintf(data + off, cap - off, "%s%s", k + 1 < n ? ":" : "",
					    base_name(l));
		if (w < 0 || off + (size_t)w >= cap)
			return 0;
		off += (size_t)w;
	}
	return off;
}

static int mount_root(struct shim *s, size_t i, char *err, size_t errlen)
{
	struct ctr *c = &s->ctrs[i];
	json_t *layers = json_object_get(c->image, "layers");
	size_t n = json_array_size(layers);
	char data[OVL_DATA_MAX + 1], root[PATH_MAX + 16], upper[PATH_MAX + 16], work[PATH_MAX + 16],
		ldir[PATH_MAX];
	snprintf(root, sizeof(root), "%s/rootfs", c->bundle);
	snprintf(upper, sizeof(upper), "%s/upper", c->bundle);
	snprintf(work, sizeof(work), "%s/work", c->bundle);
	if (mkdir_one(root, 0755) < 0 || mkdir_one(upper, 0755) < 0 || mkdir_one(work, 0755) < 0) {
		snprintf(err, errlen, "%s: %s", c->bundle, strerror(errno));
		return -1;
	}
	if (n == 0) {
		snprintf(err, errlen, "image %s has no layers", s->l.procs[i].image->reference);
		return -1;
	}
	const char *first = json_string_value(json_array_get(layers, 0));
	snprintf(ldir, sizeof(ldir), "%s", first ? first : "");
	char *sl = strrchr(ldir, '/');
	if (sl)
		*sl = '\0';
	size_t off = lower_list(layers, n, data, sizeof(data), false);
	if (!off) {
		/* the layers' names do not fit in mount(2)'s one page (about 60
		 * of them): short links to them, "0" the bottom one, in the
		 * bundle, and the list made of those (overlay takes up to 500) */
		snprintf(ldir, sizeof(ldir), "%s/l", c->bundle);
		if (mkdir_one(ldir, 0755) < 0) {
			snprintf(err, errlen, "%s: %s", ldir, strerror(errno));
			return -1;
		}
		for (size_t k = 0; k < n; k++) {
			const char *l = json_string_value(json_array_get(layers, k));
			char link[PATH_MAX + 32];
			snprintf(link, sizeof(link), "%s/%zu", ldir, k);
			if (!l || (symlink(l, link) < 0 && errno != EEXIST)) {
				snprintf(err, errlen, "%s: %s", link,
					 l ? strerror(errno) : "no layer");
				return -1;
			}
		}
		off = lower_list(layers, n, data, sizeof(data), true);
	}
	if (!off) {
		snprintf(err, errlen, "image %s has too many layers (%zu) for one overlay",
			 s->l.procs[i].image->reference, n);
		return -1;
	}
	int w = snprintf(data + off, sizeof(data) - off, ",upperdir=%s,workdir=%s", upper, work);
	if (w < 0 || off + (size_t)w >= sizeof(data)) {
		snprintf(err, errlen, "the run directory's path is too long for an overlay");
		return -1;
	}
	int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = -1;
	if (chdir(ldir) == 0)
		rc = mount("overlay", root, "overlay", MS_NOSUID | MS_NODEV, data);
	int e = errno;
	if (cwd >= 0) {
		(void)!fchdir(cwd);
		close(cwd);
	}
	if (rc < 0) {
		snprintf(err, errlen, "cannot mount the image's layers (overlay): %s", strerror(e));
		return -1;
	}
	c->mounted = true;
	return 0;
}

static char **json_strv(json_t *a)
{
	size_t n = json_array_size(a);
	char **v = calloc(n + 1, sizeof(*v));
	for (size_t k = 0; v && k < n; k++)
		v[k] = (char *)json_string_value(json_array_get(a, k));
	return v;
}

/* Kubernetes: command replaces ENTRYPOINT, args replace CMD; a command
 * without args drops CMD */
static char **ctr_argv(const struct jf_shim_proc *lp, json_t *img)
{
	char *const *ep = NULL, *const *cmd = NULL;
	char **iep = json_strv(json_object_get(img, "entrypoint"));
	char **icmd = json_strv(json_object_get(img, "cmd"));
	ep = lp->image->command ? lp->image->command : iep;
	cmd = lp->image->args ? lp->image->args : lp->image->command ? NULL : icmd;
	size_t n = 0;
	for (char *const *p = ep; p && *p; p++)
		n++;
	for (char *const *p = cmd; p && *p; p++)
		n++;
	char **v = calloc(n + 1, sizeof(*v));
	size_t k = 0;
	for (char *const *p = ep; v && p && *p; p++)
		v[k++] = *p;
	for (char *const *p = cmd; v && p && *p; p++)
		v[k++] = *p;
	free(iep);
	free(icmd);
	return v;
}

/* The image's Env, then the node's (later entries win in ocispec) */
static char **ctr_env(const struct jf_shim_proc *lp, json_t *img)
{
	json_t *ie = json_object_get(img, "env");
	size_t n = json_array_size(ie);
	for (char *const *p = lp->image->env; p && *p; p++)
		n++;
	char **v = calloc(n + 1, sizeof(*v));
	size_t k = 0;
	for (size_t j = 0; v && j < json_array_size(ie); j++) {
		const char *e = json_string_value(json_array_get(ie, j));
		if (!e)
			continue;
		/* overridden by the node's? then leave it out */
		const char *eq = strchr(e, '=');
		size_t kl = eq ? (size_t)(eq - e) : strlen(e);
		bool over = false;
		for (char *const *p = lp->image->env; p && *p && !over; p++)
			over = !strncmp(*p, e, kl) && (*p)[kl] == '=';
		if (!over)
			v[k++] = (char *)e;
	}
	for (char *const *p = lp->image->env; v && p && *p; p++)
		v[k++] = *p;
	return v;
}

/* "name" or "uid[:gid]" of the image's USER into ids, looked up in the
 * container's own /etc/passwd and /etc/group */
static int image_user(const char *root, const char *user, uid_t *uid, gid_t *gid, char *err,
		      size_t errlen)
{
	char name[256], grp[256] = "";
	snprintf(name, sizeof(name), "%s", user);
	char *colon = strchr(name, ':');
	if (colon) {
		snprintf(grp, sizeof(grp), "%s", colon + 1);
		*colon = '\0';
	}
	char *end;
	long v = strtol(name, &end, 10);
	bool numeric = *name && !*end && v >= 0;
	bool found = numeric;
	if (numeric) {
		*uid = (uid_t)v;
		*gid = (gid_t)v;
	}
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/etc/passwd", root);
	FILE *f = fopen(path, "re");
	char line[1024];
	while (f && fgets(line, sizeof(line), f)) {
		char *fields[7] = { 0 };
		char *p = line;
		for (int k = 0; k < 7 && p; k++) {
			fields[k] = p;
			p = strchr(p, ':');
			if (p)
				*p++ = '\0';
		}
		if (!fields[3])
			continue;
		bool match = numeric ? (uid_t)strtol(fields[2], NULL, 10) == *uid
				     : !strcmp(fields[0], name);
		if (match) {
			*uid = (uid_t)strtol(fields[2], NULL, 10);
			*gid = (gid_t)strtol(fields[3], NULL, 10);
			found = true;
			break;
		}
	}
	if (f)
		fclose(f);
	if (!found) {
		snprintf(err, errlen, "the image's user \"%s\" does not exist in its /etc/passwd",
			 name);
		return -1;
	}
	if (!grp[0])
		return 0;
	v = strtol(grp, &end, 10);
	if (*grp && !*end && v >= 0) {
		*gid = (gid_t)v;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/etc/group", root);
	f = fopen(path, "re");
	bool gfound = false;
	while (f && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = '\0';
		if (!strcmp(line, grp)) {
			*gid = (gid_t)strtol(c2 + 1, NULL, 10);
			gfound = true;
			break;
		}
	}
	if (f)
		fclose(f);
	if (!gfound) {
		snprintf(err, errlen, "the image's group \"%s\" does not exist in its /etc/group",
			 grp);
		return -1;
	}
	return 0;
}

static const char *env_value(char *const *env, const char *key)
{
	size_t kl = strlen(key);
	for (char *const *p = env; p && *p; p++)
		if (!strncmp(*p, key, kl) && (*p)[kl] == '=')
			return *p + kl + 1;
	return NULL;
}

static int write_config(struct shim *s, size_t i, char *err, size_t errlen)
{
	struct ctr *c = &s->ctrs[i];
	const struct jf_shim_proc *lp = &s->l.procs[i];
	char root[PATH_MAX + 16];
	snprintf(root, sizeof(root), "%s/rootfs", c->bundle);
	char **argv = ctr_argv(lp, c->image);
	char **env = ctr_env(lp, c->image);
	int rc = -1;
	if (!argv || !env) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (!argv[0]) {
		snprintf(err, errlen,
			 "image %s has no command (no Entrypoint or Cmd) and the spec gives "
			 "none: give command",
			 lp->image->reference);
		goto out;
	}
	uid_t uid = s->l.uid;
	gid_t gid = s->l.gid;
	const char *user = json_string_value(json_object_get(c->image, "user"));
	if (uid == 0 && user && user[0] && image_user(root, user, &uid, &gid, err, errlen) < 0)
		goto out;
	/* the node's GPUs: the devices of a CDI spec where the host has one
	 * (JOBFS_CDI_DIRS, default /etc/cdi:/var/run/cdi) */
	static struct jf_cdi cdi;
	struct jf_oci_device devs[JF_CDI_MAX_DEVICES];
	size_t ndev = 0;
	const char *gpus = env_value(lp->image->env, "CUDA_VISIBLE_DEVICES");
	if (gpus && gpus[0]) {
		if (jf_cdi_gpus(getenv("JOBFS_CDI_DIRS"), gpus, &cdi, err, errlen) < 0)
			goto out;
		for (size_t k = 0; k < cdi.ndevices; k++)
			devs[ndev++] =
				(struct jf_oci_device){ cdi.devices[k].path, cdi.devices[k].type,
							cdi.devices[k].major, cdi.devices[k].minor,
							cdi.devices[k].mode };
		if (cdi.nenv) {
			size_t ne = 0;
			while (env[ne])
				ne++;
			char **more = realloc(env, (ne + cdi.nenv + 1) * sizeof(*more));
			if (!more) {
				snprintf(err, errlen, "out of memory");
				goto out;
			}
			env = more;
			for (size_t k = 0; k < cdi.nenv; k++)
				env[ne++] = cdi.env[k];
			env[ne] = NULL;
		}
	}
	const char *wd = json_string_value(json_object_get(c->image, "workdir"));
	/* the limits are the proc's cgroup's (limits_setup); the runtime's is
	 * a child of it with none of its own, so an OOM is counted there */
	char cgpath[600];
	if (s->procs[i].cg.version)
		jf_cg_runtime_path(&s->procs[i].cg, cgpath, sizeof(cgpath));
	struct jf_oci_bind binds[2 + JF_SHIM_MAX_MOUNTS];
	size_t nb = 0;
	char resolv[PATH_MAX + 32];
	if (s->has_netns) {
		snprintf(resolv, sizeof(resolv), "%s/resolv.conf", s->run_dir);
		binds[nb++] = (struct jf_oci_bind){ resolv, "/etc/resolv.conf", true };
	}
	const char *ckpt = env_value(lp->image->env, "JOB_CHECKPOINT_DIR");
	if (ckpt && ckpt[0] == '/')
		binds[nb++] = (struct jf_oci_bind){ ckpt, ckpt, false };
	/* the storage mounts (see the top), a shorter path first: a mount
	 * inside another is made after it, not hidden by it */
	for (size_t k = 0, first = nb; k < s->l.nmounts; k++) {
		const struct jf_mount *m = &s->l.mounts[k];
		struct jf_oci_bind b = { m->type == JF_MOUNT_EMPTYDIR ? s->mnt_dir[k] : m->source,
					 m->path, m->read_only || m->type == JF_MOUNT_OBJECT };
		size_t j = nb++;
		for (; j > first && strlen(binds[j - 1].dest) > strlen(b.dest); j--)
			binds[j] = binds[j - 1];
		binds[j] = b;
	}
	struct jf_oci o = {
		.argv = (const char *const *)argv,
		.env = (const char *const *)env,
		.cwd = wd && wd[0] == '/' ? wd : "/",
		.uid = uid,
		.gid = gid,
		.groups = s->l.has_groups && uid == s->l.uid ? s->l.groups : NULL,
		.ngroups = s->l.has_groups && uid == s->l.uid ? s->l.ngroups : 0,
		.rootfs = root,
		.shm_source = s->shm[0] ? s->shm : NULL,
		.shm_bytes = s->l.shm_bytes,
		.cgroups_path = s->procs[i].cg.version ? cgpath : NULL,
		.netns_path = s->has_netns ? s->netns.path : NULL,
		.devices = devs,
		.ndevices = ndev,
		/* no cgroup of ours (not writable here): the runtime's, limited */
		.mem_bytes = s->procs[i].cg.version ? 0 : lp->mem_bytes,
		.cpu_milli = s->procs[i].cg.version ? 0 : lp->cpu_milli,
		.binds = binds,
		.nbinds = nb,
	};
	json_t *cfg = jf_oci_config(&o, err, errlen);
	if (!cfg)
		goto out;
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/config.json", c->bundle);
	char *text = json_dumps(cfg, JSON_COMPACT);
	json_decref(cfg);
	if (!text || write_text(path, text) < 0)
		snprintf(err, errlen, "%s: %s", path, text ? strerror(errno) : "out of memory");
	else
		rc = 0;
	free(text);
out:
	free(argv);
	free(env);
	return rc;
}

/* shm_size for host processes (reference 8.2): the node's /dev/shm, in
 * the shim's own mount namespace, is a tmpfs of that size (counted against
 * the memory limit of whoever touches its pages, as in a container) */
static int host_shm(struct shim *s, char *err, size_t errlen)
{
	bool host = false;
	for (size_t i = 0; i < s->l.nprocs; i++)
		host |= !s->procs[i].ctr;
	if (!host || s->l.shm_bytes <= 0)
		return 0;
	int rc = s->shm[0] ? mount(s->shm, "/dev/shm", NULL, MS_BIND, NULL) : -1;
	if (!s->shm[0]) {
		char opts[64];
		snprintf(opts, sizeof(opts), "mode=1777,size=%" PRId64, s->l.shm_bytes);
		rc = mount("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts);
	}
	if (rc < 0) {
		snprintf(err, errlen, "shm_size: the node's /dev/shm: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* ports (reference 8.2): the node's own network namespace, its ports
 * forwarded from free host ports (runtime/netns.c); the endpoints go to the
 * daemon as a note */
static int node_netns(struct shim *s, char *err, size_t errlen)
{
	if (!s->l.nports)
		return 0;
	const char *addr = s->l.rt && s->l.rt->expose_address ? s->l.rt->expose_address : NULL;
	if (jf_netns_open(&s->netns, s->run_dir, addr, s->l.ports, s->l.nports, err, errlen) < 0)
		return -1;
	s->has_netns = true;
	char eps[JF_NETNS_MAX_PORTS * 40] = "";
	size_t off = 0;
	for (size_t i = 0; i < s->netns.nports && off + 40 < sizeof(eps); i++)
		off += (size_t)snprintf(eps + off, sizeof(eps) - off, "%shttp://%s:%d",
					i ? " " : "", s->netns.bind_addr, s->netns.host_port[i]);
	ready_note(s, "Normal", "Endpoints", "%s", eps);
	/* the containers' resolver: slirp4netns's */
	char rc[PATH_MAX + 32];
	snprintf(rc, sizeof(rc), "%s/resolv.conf", s->run_dir);
	if (write_text(rc, "nameserver 10.0.2.3\n") < 0) {
		snprintf(err, errlen, "%s: %s", rc, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- storage (see the top) ---- */

/* The node's memory limit: its containers' together when each has one,
 * else 0 (none). */
static int64_t node_memory(const struct shim *s)
{
	int64_t sum = 0;
	for (size_t i = 0; i < s->l.nprocs; i++) {
		if (s->l.procs[i].mem_bytes <= 0)
			return 0;
		sum += s->l.procs[i].mem_bytes;
	}
	return sum;
}

/* After the claim, in the shim's mount namespace: the emptydirs made (a
 * tmpfs mounted for a Memory one), the volumes' directories checked. */
static int storage_setup(struct shim *s, char *err, size_t errlen)
{
	for (size_t k = 0; k < s->l.nmounts; k++) {
		const struct jf_mount *m = &s->l.mounts[k];
		const char *what = jf_shim_mount_type_name(m->type);
		struct stat st;
		if (m->type != JF_MOUNT_EMPTYDIR) {
			int rc = stat(m->source, &st);
			if (rc < 0 || !S_ISDIR(st.st_mode)) {
				snprintf(err, errlen, "%s %s: %s: %s", what, m->name, m->source,
					 rc < 0 ? strerror(errno) : "not a directory");
				return -1;
			}
			continue;
		}
		char top[PATH_MAX + 16];
		snprintf(top, sizeof(top), "%s/emptydir", s->run_dir);
		if (!s->emptydirs) {
			if (mkdir_one(top, 0700) < 0 || chmod(top, 0700) < 0) {
				snprintf(err, errlen, "%s: %s", top, strerror(errno));
				return -1;
			}
			s->emptydirs = true;
		}
		char *dir = s->mnt_dir[k];
		/* the name is at most JF_SHIM_NAME_MAX bytes (shimproto) */
		snprintf(dir, sizeof(s->mnt_dir[k]), "%s/emptydir/%.63s", s->run_dir, m->name);
		if (mkdir_one(dir, 0700) < 0) {
			snprintf(err, errlen, "emptydir %s: %s: %s", m->name, dir, strerror(errno));
			return -1;
		}
		if (!m->memory) {
			if (chown(dir, s->l.uid, s->l.gid) < 0 || chmod(dir, 0777) < 0) {
				snprintf(err, errlen, "emptydir %s: %s: %s", m->name, dir,
					 strerror(errno));
				return -1;
			}
			continue;
		}
		char opts[128];
		int64_t size = m->size_bytes > 0 ? m->size_bytes : node_memory(s);
		int o = snprintf(opts, sizeof(opts), "mode=0777,uid=%u,gid=%u", (unsigned)s->l.uid,
				 (unsigned)s->l.gid);
		if (size > 0)
			snprintf(opts + o, sizeof(opts) - (size_t)o, ",size=%" PRId64, size);
		if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
			snprintf(err, errlen, "emptydir %s: a tmpfs at %s: %s", m->name, dir,
				 strerror(errno));
			return -1;
		}
		s->tmpfs[k] = true;
	}
	return 0;
}

/* an emptydir on disk whose size the shim watches */
static bool watched(const struct jf_mount *m)
{
	return m->type == JF_MOUNT_EMPTYDIR && !m->memory && m->size_bytes > 0;
}

static int64_t check_period(const struct shim *s)
{
	return s->l.evict_check_ms > 0 ? s->l.evict_check_ms : SHIM_EVICT_CHECK_MS;
}

void storage_arm(struct shim *s)
{
	s->evict_at = -1;
	for (size_t k = 0; k < s->l.nmounts; k++)
		if (watched(&s->l.mounts[k]))
			s->evict_at = mono_ms() + check_period(s);
}

void storage_check(struct shim *s, int64_t now)
{
	if (s->evict_at < 0 || now < s->evict_at)
		return;
	s->evict_at = -1;
	/* (slurm mode: a node stopped from outside is on its way out already;
	 * its preemption's requeue is not made a failure) */
	if (s->nrunning == 0 || s->evicted || s->outside_sig)
		return;
	for (size_t k = 0; k < s->l.nmounts && !s->evicted; k++) {
		const struct jf_mount *m = &s->l.mounts[k];
		if (!watched(m))
			continue;
		int fd = open(s->mnt_dir[k], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		int64_t used = jf_shim_tree_usage(fd, m->size_bytes);
		close(fd);
		if (used <= m->size_bytes)
			continue;
		s->evicted = true;
		jf_shim_evict_message(m->name, m->size_bytes, s->evict_msg, sizeof(s->evict_msg));
		msg_clean(s->evict_msg);
		for (size_t i = 0; i < s->l.nprocs; i++)
			if (s->procs[i].running) {
				char line[SHIM_MSG_MAX + 16];
				snprintf(line, sizeof(line), "evicted: %s", s->evict_msg);
				proc_note(s, &s->procs[i], line);
				break;
			}
		forward(s, SIGTERM);
		if (s->kill_at < 0 || s->kill_at > now + SHIM_EVICT_GRACE_MS)
			s->kill_at = now + SHIM_EVICT_GRACE_MS;
	}
	/* from the check's end: a long walk is not followed by another at once */
	if (!s->evicted)
		s->evict_at = mono_ms() + check_period(s);
}

/*
 * The shim's mount namespace began as a copy of the host's, jobfs's own
 * FUSE mounts included; a copy keeps the FUSE connection alive, so the
 * daemon would not see `fusermount3 -u` until this node ended.  Detach
 * them here (no node uses the tree from inside its namespace).
 */
static void detach_jobfs_mounts(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192], mps[64][PATH_MAX];
	size_t n = 0;
	while (f && n < 64 && fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE ... */
		char *sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "fuse.jobfs ", 11) != 0)
			continue;
		char *p = line;
		for (int k = 0; k < 4 && p; k++) {
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		if (!p)
			continue;
		size_t o = 0;
		for (; *p && *p != ' ' && o + 1 < sizeof(mps[0]); p++) {
			if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] && p[3]) {
				mps[n][o++] =
					(char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
				p += 3;
			} else
				mps[n][o++] = *p;
		}
		mps[n++][o] = '\0';
	}
	if (f)
		fclose(f);
	for (size_t i = 0; i < n; i++)
		umount2(mps[i], MNT_DETACH);
}

int ctr_setup(struct shim *s, char *err, size_t errlen)
{
	/* storage is for containers: the engine refuses it on the host */
	for (size_t i = 0; s->l.nmounts && i < s->l.nprocs; i++)
		if (!s->procs[i].ctr) {
			snprintf(err, errlen,
				 "storage mounts need containers: %s has no image (it would run "
				 "on the host)",
				 s->l.procs[i].name);
			return -1;
		}
	if (!s->nctr && s->l.shm_bytes <= 0 && !s->l.nports)
		return 0;
	if (geteuid() != 0) {
		if (s->nctr) {
			snprintf(err, errlen, "containers need jobfs-shim to run as root");
			return -1;
		}
		if (s->l.nports) {
			snprintf(err, errlen, "ports need jobfs to run as root");
			return -1;
		}
		return 0; /* shm_size needs a mount namespace: not for a user's jobfs */
	}
	/* private: what is mounted here stays here, and mounts made on the
	 * host later (another jobfs) do not come in to be held */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		snprintf(err, errlen, "a mount namespace for the node: %s", strerror(errno));
		return -1;
	}
	detach_jobfs_mounts();
	if (node_netns(s, err, errlen) < 0)
		return -1;
	if (!s->nctr)
		return host_shm(s, err, errlen);
	/* crun refuses a hybrid host; without the cgroup2 mount it is v1 */
	if (hybrid_cgroups() && strstr(base_name(s->l.rt->oci_runtime), "crun"))
		umount2("/sys/fs/cgroup/unified", MNT_DETACH);
	char d[PATH_MAX + 16];
	snprintf(d, sizeof(d), "%s/ctr", s->run_dir);
	if (mkdir_one(d, 0711) < 0) {
		snprintf(err, errlen, "%s: %s", d, strerror(errno));
		return -1;
	}
	/* the node's /dev/shm, shared by its containers as a pod's */
	snprintf(s->shm, sizeof(s->shm), "%s/shm", s->run_dir);
	char opts[64];
	snprintf(opts, sizeof(opts), "mode=1777,size=%" PRId64,
		 s->l.shm_bytes > 0 ? s->l.shm_bytes : (int64_t)64 << 20);
	if (mkdir_one(s->shm, 0755) < 0 ||
	    mount("shm", s->shm, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0) {
		snprintf(err, errlen, "the node's /dev/shm (%s): %s", s->shm, strerror(errno));
		s->shm[0] = '\0';
		return -1;
	}
	if (storage_setup(s, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < s->l.nprocs; i++) {
		struct ctr *c = s->procs[i].ctr;
		if (!c)
			continue;
		snprintf(c->bundle, sizeof(c->bundle), "%s/ctr/%s", s->run_dir, s->l.procs[i].name);
		snprintf(c->id, sizeof(c->id), "jobfs-%d-%zu", (int)getpid(), i);
		if (mkdir_one(c->bundle, 0711) < 0) {
			snprintf(err, errlen, "%s: %s", c->bundle, strerror(errno));
			return -1;
		}
		if (mount_root(s, i, err, errlen) < 0 || write_config(s, i, err, errlen) < 0)
			return -1;
	}
	return host_shm(s, err, errlen);
}

/* ---- the runtime ---- */

/*
 * The runtime with args, its stdout and stderr on out_fd and err_fd (-1:
 * /dev/null), bounded by RUNTIME_WAIT (then killed: -2); its wait status,
 * or -1 when it could not be run.  While it runs, what the containers
 * started so far write is read into the node's files as it comes: a
 * container's first output is not held back until the runtime that
 * started it has exited (`run --detach` returns after its own tidying).
 */
static int runtime(struct shim *s, const char *const *args, int out_fd, int err_fd)
{
	char root[PATH_MAX + 16];
	snprintf(root, sizeof(root), "%s/runtime", s->run_dir);
	char *argv[16];
	size_t k = 0;
	argv[k++] = (char *)s->l.rt->oci_runtime;
	argv[k++] = "--root";
	argv[k++] = root;
	for (; *args && k < 15; args++)
		argv[k++] = (char *)*args;
	argv[k] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		child_exec(argv, out_fd, err_fd, -1, -1);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int64_t deadline = mono_ms() + RUNTIME_WAIT;
	bool killed = false;
	while (pidfd >= 0) {
		struct pollfd pf[1 + 2 * SHIM_MAX_PROCS];
		struct stream *sts[1 + 2 * SHIM_MAX_PROCS];
		struct proc *ps[1 + 2 * SHIM_MAX_PROCS];
		nfds_t n = 0;
		pf[n++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		for (size_t i = 0; i < s->l.nprocs; i++) {
			struct stream *two[2] = { &s->procs[i].out, &s->procs[i].err };
			for (int j = 0; j < 2; j++)
				if (two[j]->fd >= 0) {
					sts[n] = two[j];
					ps[n] = &s->procs[i];
					pf[n++] = (struct pollfd){ .fd = two[j]->fd,
								   .events = POLLIN };
				}
		}
		int r = poll_child(pf, n, deadline, pid, &killed);
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0 && pf[0].revents)
			break;
		for (nfds_t j = 1; r > 0 && j < n; j++)
			if (pf[j].revents & (POLLIN | POLLHUP | POLLERR))
				stream_read(s, ps[j], sts[j]);
	}
	if (pidfd >= 0)
		close(pidfd);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return killed ? -2 : status;
}

static void ctr_failed(struct shim *s, size_t i, const char *what, int st)
{
	struct proc *p = &s->procs[i];
	char msg[SHIM_MSG_MAX];
	if (st == -2)
		snprintf(msg, sizeof(msg), "%s %s: the runtime did not answer in %lld s", what,
			 p->spec->name, RUNTIME_WAIT / 1000);
	else
		snprintf(msg, sizeof(msg), "%s %s: %s exited %d (its message is in stderr)", what,
			 p->spec->name, base_name(s->l.rt->oci_runtime),
			 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	msg_clean(msg);
	p->failed = true;
	p->exit_code = 127;
	proc_note(s, p, msg);
	if (!s->start_failed) {
		s->start_failed = true;
		s->failed_proc = i;
		s->failed_code = 127;
		memcpy(s->start_msg, msg, sizeof(msg));
	}
}

void ctr_create(struct shim *s, size_t i)
{
	struct proc *p = &s->procs[i];
	struct ctr *c = p->ctr;
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		ctr_failed(s, i, "create", -1);
		return;
	}
	char pidfile[PATH_MAX + 16];
	snprintf(pidfile, sizeof(pidfile), "%s/pid", c->bundle);
	/* one exec: created and started (`run --detach`, crun and runc alike);
	 * a create and a start apart cost a second exec of the runtime */
	const char *args[] = { "run",        "--detach", "--bundle", c->bundle,
			       "--pid-file", pidfile,    c->id,      NULL };
	/* its streams from now: read while the runtime still runs */
	p->out.fd = outp[0];
	p->err.fd = errp[0];
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	int st = runtime(s, args, outp[1], errp[1]);
	close(outp[1]);
	close(errp[1]);
	char buf[32] = "";
	size_t n = 0;
	char *text = st == 0 ? read_small(AT_FDCWD, pidfile, &n) : NULL;
	if (text)
		snprintf(buf, sizeof(buf), "%s", text);
	free(text);
	long pid = strtol(buf, NULL, 10);
	if (st != 0 || pid <= 0) {
		c->created = st == 0;
		ctr_failed(s, i, "create", st);
		return;
	}
	c->created = true;
	p->pid = (pid_t)pid;
	p->running = true;
	s->nrunning++;
	ready_note(s, "Normal", "Created", "Created container %s", p->spec->name);
}

void ctr_start_all(struct shim *s)
{
	for (size_t i = 0; i < s->l.nprocs && !s->start_failed; i++)
		if (s->procs[i].ctr && s->procs[i].running)
			touch_record(s, s->l.procs[i].image->reference);
	/* each was started by ctr_create already */
	if (s->start_ms == 0)
		s->start_ms = wall_ms();
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

void ctr_cleanup(struct shim *s)
{
	for (size_t i = 0; i < s->l.nprocs; i++) {
		struct ctr *c = s->procs[i].ctr;
		if (!c)
			continue;
		if (c->created) {
			const char *args[] = { "delete", "--force", c->id, NULL };
			runtime(s, args, -1, -1);
		}
		if (c->mounted) {
			char root[PATH_MAX + 16];
			snprintf(root, sizeof(root), "%s/rootfs", c->bundle);
			umount2(root, MNT_DETACH);
		}
		json_decref(c->image);
		c->image = NULL;
	}
	if (s->has_netns) {
		jf_netns_close(&s->netns);
		s->has_netns = false;
	}
	if (s->shm[0])
		umount2(s->shm, MNT_DETACH);
	for (size_t k = 0; k < s->l.nmounts; k++)
		if (s->tmpfs[k]) {
			umount2(s->mnt_dir[k], MNT_DETACH);
			s->tmpfs[k] = false;
		}
	if (s->emptydirs) {
		/* the node's scratch goes with it (its processes are gone) */
		char d[PATH_MAX + 16];
		snprintf(d, sizeof(d), "%s/emptydir", s->run_dir);
		nftw(d, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
		s->emptydirs = false;
	}
	if (s->nctr) {
		char d[PATH_MAX + 16];
		snprintf(d, sizeof(d), "%s/ctr", s->run_dir);
		nftw(d, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
		snprintf(d, sizeof(d), "%s/runtime", s->run_dir);
		nftw(d, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
		rmdir(s->shm);
	}
}
