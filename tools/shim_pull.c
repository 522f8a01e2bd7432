/*
 * shim_pull.c - a node's images (reference 8.1), before the claim:
 * tools/jobfs-image run for each (or the cache's record read in place when
 * the pull policy lets the cache answer alone), its progress turned into
 * notes on fd 3, a failure into the ready line "pullfailed MSG"; and the
 * record's last use written once a container runs.  run_child() is also
 * how shim_ctr.c runs the OCI runtime.  The design is at the top of
 * shim_ctr.c.
 */
#include "tools/shim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/imgref.h"

#define PULL_OUT_MAX (4 * 1024 * 1024) /* jobfs-image's JSON answer */
#define PULL_TIMEOUT (30LL * 60 * 1000)

extern char **environ;

/* ---- running a helper program ---- */


int poll_child(struct pollfd *pf, nfds_t n, int64_t deadline, pid_t pid, bool *killed)
{
	int64_t left = deadline - mono_ms();
	if (left <= 0 && !*killed) {
		kill(pid, SIGKILL);
		*killed = true;
	}
	return poll(pf, n, left > 0 ? (int)(left < 1000 ? left : 1000) : 100);
}

void child_exec(char *const *argv, int out_fd, int err_fd, int fd3, int fd4)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int null = open("/dev/null", O_RDWR);
	if (dup2(null, 0) < 0 || dup2(out_fd >= 0 ? out_fd : null, 1) < 0 ||
	    dup2(err_fd >= 0 ? err_fd : null, 2) < 0)
		_exit(127);
	if (fd3 >= 0 && dup2(fd3, 3) < 0)
		_exit(127);
	if (fd4 >= 0 && fd4 != 4 && dup2(fd4, 4) < 0)
		_exit(127);
	execve(argv[0], argv, environ);
	/* said on its stderr: the caller's message */
	char msg[PATH_MAX + 64];
	int n = snprintf(msg, sizeof(msg), "cannot run %s: %s\n", argv[0], strerror(errno));
	if (n > 0)
		(void)!write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	_exit(127);
}

int run_child(struct shim *s, char *const *argv, struct child_io *io, int out_fd, int err_fd,
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
	if (pid == 0)
		child_exec(argv, io ? op[1] : out_fd, io ? ep[1] : err_fd, on_line ? pp[1] : -1,
			   kept_fd);
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
		int r = poll_child(pf, n, deadline, pid, &killed);
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

/* The ready line "pullfailed MSG" (local mode); MSG kept as the start
 * failure's message (slurm mode writes it into the result) */
static void say_pullfailed(struct shim *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say_pullfailed(struct shim *s, const char *fmt, ...)
{
	char msg[SHIM_MSG_MAX * 3], line[SHIM_MSG_MAX * 3 + 16];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	msg_clean(msg);
	snprintf(line, sizeof(line), "pullfailed %s\n", msg);
	ready_say(s, line);
	size_t len = strnlen(msg, sizeof(s->start_msg) - 1);
	memcpy(s->start_msg, msg, len);
	s->start_msg[len] = '\0';
	msg_clean(s->start_msg); /* cut whole: valid UTF-8 again */
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
			msg_clean(msg);
			say_pullfailed(s, "ErrImagePull: image \"%.200s\": %s", ref, msg);
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
	say_pullfailed(s, "%s: image \"%.200s\": %s", never ? "ErrImageNeverPull" : "ErrImagePull",
		       ref, msg);
	return -1;
}

int ctr_pull(struct shim *s)
{
	for (size_t i = 0; i < s->l.nprocs; i++) {
		if (!s->l.procs[i].image)
			continue;
		if (!s->l.rt) {
			say_pullfailed(s, "ErrImagePull: launch.json has no runtime");
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

/* The image's record says when it was last used (/images last_used): its
 * lock taken without waiting (a pull of it going on: not this time), the
 * record rewritten whole by rename, as image/cache.c writes it. */
void touch_record(struct shim *s, const char *ref_text)
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
