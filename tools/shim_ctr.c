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
#include <sys/wait.h>
#include <unistd.h>

#include "core/imgref.h"
#include "runtime/cdi.h"
#include "runtime/ocispec.h"

#define PULL_OUT_MAX (4 * 1024 * 1024) /* jobfs-image's JSON answer */
#define PULL_ERR_MAX 4096
#define PULL_TIMEOUT (30LL * 60 * 1000)
#define RUNTIME_WAIT (60LL * 1000) /* create, start, delete */
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
	if (s->ready_fd >= 0 && n > 0)
		(void)write_all(s->ready_fd, line, strlen(line));
}

/* ---- running a helper program ---- */

struct child_io {
	char *out; /* what it wrote on stdout (NUL-terminated), the caller frees */
	size_t outlen;
	char err[PULL_ERR_MAX];
	size_t errlen;
};

/*
 * Run argv (absolute path) with stdin /dev/null, stdout and stderr read
 * into io (NULL: both to fd out_fd/err_fd as given, -1 = /dev/null), extra
 * fds kept_fd (-1 none, passed as is) and progress (a pipe whose lines
 * call on_line), bounded by timeout_ms.  Returns the wait status, or -1.
 */
static int run_child(struct shim *s, char *const *argv, struct child_io *io, int out_fd, int err_fd,
		     int kept_fd, int64_t timeout_ms,
		     void (*on_line)(struct shim *s, const char *line, void *arg), void *arg)
{
	int op[2] = { -1, -1 }, ep[2] = { -1, -1 }, pp[2] = { -1, -1 };
	if (io && (pipe2(op, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0))
		goto fail;
	if (on_line && pipe2(pp, O_CLOEXEC) < 0)
		goto fail;
	pid_t pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int null = open("/dev/null", O_RDWR);
		int o = io ? op[1] : out_fd >= 0 ? out_fd : null;
		int e = io ? ep[1] : err_fd >= 0 ? err_fd : null;
		if (dup2(null, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		if (on_line && dup2(pp[1], 3) < 0)
			_exit(127);
		if (kept_fd >= 0 && kept_fd != 4 && dup2(kept_fd, 4) < 0)
			_exit(127);
		execve(argv[0], argv, environ);
		_exit(127);
	}
	int fds[3] = { io ? op[0] : -1, io ? ep[0] : -1, on_line ? pp[0] : -1 };
	close(op[1]);
	close(ep[1]);
	close(pp[1]);
	op[1] = ep[1] = pp[1] = -1;
	size_t outcap = 0;
	char pline[512];
	size_t plen = 0;
	int64_t deadline = mono_ms() + timeout_ms;
	bool killed = false;
	for (;;) {
		struct pollfd pf[3];
		nfds_t n = 0;
		int which[3];
		for (int k = 0; k < 3; k++)
			if (fds[k] >= 0) {
				pf[n].fd = fds[k];
				pf[n].events = POLLIN;
				which[n++] = k;
			}
		if (!n)
			break;
		int64_t left = deadline - mono_ms();
		if (left <= 0 && !killed) {
			kill(pid, SIGKILL);
			killed = true;
		}
		int r = poll(pf, n, left > 0 ? (int)(left < 1000 ? left : 1000) : 100);
		if (r < 0 && errno != EINTR)
			break;
		for (nfds_t k = 0; r > 0 && k < n; k++) {
			if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			int w = which[k];
			char buf[8192];
			ssize_t got = read(fds[w], buf, sizeof(buf));
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				close(fds[w]);
				fds[w] = -1;
				continue;
			}
			if (w == 0) {
				if (io->outlen + (size_t)got + 1 > PULL_OUT_MAX)
					continue; /* over the cap: the answer will not parse */
				if (io->outlen + (size_t)got + 1 > outcap) {
					size_t nc = outcap ? outcap * 2 : 16384;
					while (nc < io->outlen + (size_t)got + 1)
						nc *= 2;
					char *nb = realloc(io->out, nc);
					if (!nb)
						continue;
					io->out = nb;
					outcap = nc;
				}
				memcpy(io->out + io->outlen, buf, (size_t)got);
				io->outlen += (size_t)got;
				io->out[io->outlen] = '\0';
			} else if (w == 1) {
				size_t room = sizeof(io->err) - 1 - io->errlen;
				size_t take = (size_t)got < room ? (size_t)got : room;
				memcpy(io->err + io->errlen, buf, take);
				io->errlen += take;
				io->err[io->errlen] = '\0';
			} else {
				for (ssize_t i = 0; i < got; i++) {
					if (buf[i] == '\n' || plen == sizeof(pline) - 1) {
						pline[plen] = '\0';
						on_line(s, pline, arg);
						plen = 0;
					} else
						pline[plen++] = buf[i];
				}
			}
		}
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (killed)
		return -2;
	return status;
fail:
	for (int k = 0; k < 2; k++) {
		if (op[k] >= 0)
			close(op[k]);
		if (ep[k] >= 0)
			close(ep[k]);
		if (pp[k] >= 0)
			close(pp[k]);
	}
	return -1;
}

/* ---- pulling ---- */

struct pull_ctx {
	const char *ref;
	bool pulling; /* jobfs-image went to the registry (or layout) */
};

static void pull_line(struct shim *s, const char *line, void *arg)
{
	struct pull_ctx *pc = arg;
	if (!strcmp(line, "pulling")) {
		pc->pulling = true;
		ready_note(s, "Normal", "Pulling", "Pulling image \"%s\"", pc->ref);
	}
}

/* The spec's auth.json, opened with the writer's rights (fsuid): a user
 * cannot make the shim read a file they could not read themselves. */
static int open_as_writer(struct shim *s, const char *path)
{
	if (!s->drop)
		return open(path, O_RDONLY | O_CLOEXEC);
	setfsgid(s->l.gid);
	setfsuid(s->l.uid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int e = errno;
	setfsuid(0);
	setfsgid(0);
	errno = e;
	return fd;
}

/* jobfs-image's "jobfs-image: pulling REF: WHY" as WHY */
static void first_line(char *s, const char *ref)
{
	char *nl = strchr(s, '\n');
	if (nl)
		*nl = '\0';
	const char *p = strncmp(s, "jobfs-image: ", 13) == 0 ? s + 13 : s;
	size_t rl = strlen(ref);
	if (!strncmp(p, "pulling ", 8) && !strncmp(p + 8, ref, rl) && !strncmp(p + 8 + rl, ": ", 2))
		p += 8 + rl + 2;
	memmove(s, p, strlen(p) + 1);
}

/*
 * IfNotPresent or Never, and the cache has it: its record read here, as
 * jobfs-image would print it, without running jobfs-image (a dynamic
 * program that costs a sizeable part of a warm start).  NULL when the
 * cache cannot answer alone; jobfs-image then decides.
 */
static json_t *cached_image(struct shim *s, const char *ref_text)
{
	const struct jf_runtime_conf *rt = s->l.rt;
	struct jf_imgref ref;
	if (jf_imgref_parse(ref_text, &ref, NULL) != JF_OK)
		return NULL;
	char name[JF_IMGREF_NAMEMAX], path[PATH_MAX + 128];
	jf_imgref_dirname(&ref, name);
	snprintf(path, sizeof(path), "%s/refs/%s.json", rt->cache_dir, name);
	json_t *rec = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	json_t *layers = json_object_get(rec, "layers");
	json_t *cfg = json_object_get(rec, "config");
	if (!json_is_array(layers) || !json_is_object(cfg) ||
	    !json_is_string(json_object_get(rec, "digest"))) {
		json_decref(rec);
		return NULL;
	}
	json_t *dirs = json_array();
	size_t k;
	json_t *l;
	json_array_foreach(layers, k, l)
	{
		const char *d = json_string_value(l);
		struct stat st;
		snprintf(path, sizeof(path), "%s/layers/sha256/%s", rt->cache_dir,
			 d && strlen(d) > 7 ? d + 7 : "");
		if (!d || stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
			json_decref(dirs);
			json_decref(rec);
			return NULL; /* a layer went missing: jobfs-image pulls it again */
		}
		json_array_append_new(dirs, json_string(path));
	}
	json_t *out =
		json_pack("{s:O,s:O,s:o,s:b,s:f,s:O,s:O,s:O,s:O,s:O}", "digest",
			  json_object_get(rec, "digest"), "size_bytes",
			  json_object_get(rec, "size_bytes"), "layers", dirs, "present", 1,
			  "seconds", 0.0, "entrypoint", json_object_get(cfg, "entrypoint"), "cmd",
			  json_object_get(cfg, "cmd"), "env", json_object_get(cfg, "env"), "user",
			  json_object_get(cfg, "user"), "workdir", json_object_get(cfg, "workdir"));
	json_decref(rec);
	return out;
}

static int pull_one(struct shim *s, size_t i)
{
	const struct jf_shim_proc *lp = &s->l.procs[i];
	const struct jf_runtime_conf *rt = s->l.rt;
	const char *ref = lp->image->reference;
	if (strcmp(lp->image->pull_policy, "Always") != 0) {
		json_t *j = cached_image(s, ref);
		if (j) {
			s->ctrs[i].image = j;
			snprintf(s->procs[i].digest, sizeof(s->procs[i].digest), "%s",
				 json_string_value(json_object_get(j, "digest")));
			ready_note(s, "Normal", "ImageDigest", "%s %s", lp->name,
				   s->procs[i].digest);
			ready_note(s, "Normal", "Pulled",
				   "Container image \"%s\" already present on machine", ref);
			return 0;
		}
	}
	char *argv[16 + 2 * 64];
	size_t k = 0;
	char authpath[32];
	int authfd = -1;
	argv[k++] = (char *)rt->image_tool;
	argv[k++] = "pull";
	argv[k++] = "--cache";
	argv[k++] = (char *)rt->cache_dir;
	argv[k++] = "--policy";
	argv[k++] = (char *)lp->image->pull_policy;
	argv[k++] = "--progress-fd";
	argv[k++] = "3";
	if (s->l.registry_auth) {
		authfd = open_as_writer(s, s->l.registry_auth);
		if (authfd < 0) {
			char msg[SHIM_MSG_MAX];
			snprintf(msg, sizeof(msg), "registry_auth %s: %s", s->l.registry_auth,
				 strerror(errno));
			ready_note(s, "Warning", "Failed", "Failed to pull image \"%s\": %s", ref,
				   msg);
			char line[SHIM_MSG_MAX + 300];
			msg_clean(msg);
			snprintf(line, sizeof(line),
				 "pullfailed ErrImagePull: image \"%.200s\": %s\n", ref, msg);
			ready_say(s, line);
			return -1;
		}
		snprintf(authpath, sizeof(authpath), "/dev/fd/4");
		argv[k++] = "--auth";
		argv[k++] = authpath;
	} else if (rt->auth_file) {
		argv[k++] = "--auth";
		argv[k++] = (char *)rt->auth_file;
	}
	for (size_t j = 0; j < rt->ninsecure && j < 64; j++) {
		argv[k++] = "--insecure";
		argv[k++] = (char *)rt->insecure[j];
	}
	argv[k++] = (char *)ref;
	argv[k] = NULL;

	struct child_io io;
	memset(&io, 0, sizeof(io));
	int64_t timeout = rt->pull_timeout_ms > 0 ? rt->pull_timeout_ms : PULL_TIMEOUT;
	struct pull_ctx pc = { ref, false };
	int st = run_child(s, argv, &io, -1, -1, authfd, timeout, pull_line, &pc);
	if (authfd >= 0)
		close(authfd);
	char msg[SHIM_MSG_MAX];
	json_t *j = NULL;
	if (st == 0 && io.out)
		j = json_loadb(io.out, io.outlen, 0, NULL);
	free(io.out);
	if (st == 0 && json_is_object(j)) {
		s->ctrs[i].image = j;
		const char *dg = json_string_value(json_object_get(j, "digest"));
		snprintf(s->procs[i].digest, sizeof(s->procs[i].digest), "%s", dg ? dg : "");
		/* for the node's status (not an event) */
		ready_note(s, "Normal", "ImageDigest", "%s %s", lp->name, s->procs[i].digest);
		/* Kubernetes' words: "already present" when the registry was not
		 * asked; a pull that found every layer cached is still a pull */
		bool present = json_is_true(json_object_get(j, "present"));
		if (present && !pc.pulling)
			ready_note(s, "Normal", "Pulled",
				   "Container image \"%s\" already present on machine", ref);
		else
			ready_note(s, "Normal", "Pulled",
				   "Successfully pulled image \"%s\" in %.3fs. Image size: %" PRId64
				   " bytes.%s",
				   ref, json_real_value(json_object_get(j, "seconds")),
				   (int64_t)json_integer_value(json_object_get(j, "size_bytes")),
				   present ? " (every layer was already on this machine)" : "");
		return 0;
	}
	json_decref(j);
	first_line(io.err, ref);
	if (st == -2)
		snprintf(msg, sizeof(msg), "the pull took longer than %" PRId64 " s",
			 timeout / 1000);
	else if (st == -1)
		snprintf(msg, sizeof(msg), "cannot run %s: %s", rt->image_tool, strerror(errno));
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
		snprintf(msg, sizeof(msg), "%.200s",
			 io.err[0] ? io.err : "not present (policy Never)");
	else
		snprintf(msg, sizeof(msg), "%.200s",
			 io.err[0] ? io.err : "jobfs-image failed without a message");
	msg_clean(msg);
	bool never = WIFEXITED(st) && WEXITSTATUS(st) == 3;
	if (never)
		ready_note(s, "Warning", "ErrImageNeverPull",
			   "Container image \"%s\" is not present with pull policy of Never", ref);
	else
		ready_note(s, "Warning", "Failed", "Failed to pull image \"%s\": %s", ref, msg);
	char line[SHIM_MSG_MAX + 300];
	snprintf(line, sizeof(line), "pullfailed %s: image \"%.200s\": %s\n",
		 never ? "ErrImageNeverPull" : "ErrImagePull", ref, msg);
	ready_say(s, line);
	return -1;
}

int ctr_pull(struct shim *s)
{
	for (size_t i = 0; i < s->l.nprocs; i++) {
		if (!s->l.procs[i].image)
			continue;
		if (!s->l.rt) {
			ready_say(s, "pullfailed ErrImagePull: launch.json has no runtime\n");
			s->pull_failed = true;
			return -1;
		}
		s->procs[i].ctr = &s->ctrs[i];
		s->nctr++;
		/* the same image twice in a node: pulled once */
		bool again = false;
		for (size_t j = 0; j < i; j++)
			if (s->ctrs[j].image && s->l.procs[j].image &&
			    !strcmp(s->l.procs[j].image->reference,
				    s->l.procs[i].image->reference)) {
				s->ctrs[i].image = json_incref(s->ctrs[j].image);
				memcpy(s->procs[i].digest, s->procs[j].digest,
				       sizeof(s->procs[i].digest));
				again = true;
			}
		if (!again && pull_one(s, i) < 0) {
			s->pull_failed = true;
			return -1;
		}
	}
	return 0;
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
	size_t off = (size_t)snprintf(data, sizeof(data), "lowerdir=");
	for (size_t k = n; k-- > 0;) { /* the top layer first */
		const char *l = json_string_value(json_array_get(layers, k));
		if (!l)
			continue;
		int w = snprintf(data + off, sizeof(data) - off, "%s%s", k + 1 < n ? ":" : "",
				 base_name(l));
		if (w < 0 || off + (size_t)w >= sizeof(data)) {
			snprintf(err, errlen, "image %s has too many layers (%zu) for one overlay",
				 s->l.procs[i].image->reference, n);
			return -1;
		}
		off += (size_t)w;
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
	struct jf_oci_bind binds[3];
	size_t nb = 0;
	char resolv[PATH_MAX + 32];
	if (s->has_netns) {
		snprintf(resolv, sizeof(resolv), "%s/resolv.conf", s->run_dir);
		binds[nb++] = (struct jf_oci_bind){ resolv, "/etc/resolv.conf", true };
	}
	const char *ckpt = env_value(lp->image->env, "JOB_CHECKPOINT_DIR");
	if (ckpt && ckpt[0] == '/')
		binds[nb++] = (struct jf_oci_bind){ ckpt, ckpt, false };
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
	return run_child(s, argv, NULL, out_fd, err_fd, -1, RUNTIME_WAIT, NULL, NULL);
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
	int st = runtime(s, args, outp[1], errp[1]);
	close(outp[1]);
	close(errp[1]);
	p->out.fd = outp[0];
	p->err.fd = errp[0];
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
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

/* The image's record says when it was last used (/images last_used): its
 * lock taken without waiting (a pull of it going on: not this time), the
 * record rewritten whole by rename, as image/cache.c writes it. */
static void touch_record(struct shim *s, const char *ref_text)
{
	struct jf_imgref ref;
	if (!s->l.rt || jf_imgref_parse(ref_text, &ref, NULL) != JF_OK)
		return;
	char name[JF_IMGREF_NAMEMAX], lock[PATH_MAX + 128], path[PATH_MAX + 128],
		tmp[PATH_MAX + 160];
	jf_imgref_dirname(&ref, name);
	snprintf(lock, sizeof(lock), "%s/locks/%s", s->l.rt->cache_dir, name);
	snprintf(path, sizeof(path), "%s/refs/%s.json", s->l.rt->cache_dir, name);
	snprintf(tmp, sizeof(tmp), "%s/refs/.%s.%d.tmp", s->l.rt->cache_dir, name, (int)getpid());
	int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		json_t *rec = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
		if (json_is_object(rec) &&
		    json_object_set_new(rec, "last_used_ms", json_integer(wall_ms())) == 0 &&
		    json_dump_file(rec, tmp, JSON_INDENT(1) | JSON_SORT_KEYS) == 0 &&
		    rename(tmp, path) != 0)
			unlink(tmp);
		json_decref(rec);
	}
	close(fd);
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
	if (s->nctr) {
		char d[PATH_MAX + 16];
		snprintf(d, sizeof(d), "%s/ctr", s->run_dir);
		nftw(d, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
		snprintf(d, sizeof(d), "%s/runtime", s->run_dir);
		nftw(d, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
		rmdir(s->shm);
	}
}
