/*
 * local.c - the local backend: every node is a tools/jobfs-shim process on
 * this host, which runs the node's processes and records their end in the
 * run directory.
 *
 * DESIGN
 *
 * start() writes RUN_DIR/launch.json, spawns the shim with a pipe on its
 * fd 3 and returns at once: the start is pending (backend.h).  The pipe is
 * watched in the inner epoll beside the shim's pidfd; the shim's one ready
 * line ("started START_MS PIDS", or "failed START_MS MSG" when a command
 * could not be executed) becomes a `started` result carrying START_MS, the
 * real start time (local_ready.c).  A shim that ends without the line, says "error ...",
 * or says nothing within 10 s (then it is killed) ends as a start failure,
 * with no `started` result.  The shim owns the processes; the daemon only
 * watches it through its pidfd and, when it has exited, reads
 * RUN_DIR/result.  Nothing about a run lives
 * only in the daemon: the handle "local:PID:STARTTIME" (STARTTIME is field
 * 22 of /proc/PID/stat, which tells a reused PID apart) and the run
 * directory are enough for a restarted daemon to adopt() it.
 *
 * What holds:
 * - A run is in exactly one of two places.  Watched: its pidfd is in the
 *   inner epoll (data.ptr = its wpid) and the run is in the PID hash (for
 *   signal()).  Queued: on the ready list, its end already known (adopt()
 *   found the shim gone, or the shim exited before its start was
 *   reported); the eventfd is non-zero while the list is non-empty, so the
 *   backend's fd is readable exactly while reap() has something to return.
 * - Starting: a watched run whose ready line has not come yet has its pipe
 *   in the inner epoll too (data.ptr = its wready) and is on the starting
 *   list, oldest first; the timerfd is armed for the first one's deadline.
 *   Once the line has come (or the shim is gone, or the deadline passed)
 *   the pipe is closed and the run leaves the list; `confirmed` says
 *   whether a `started` result went out, and only a confirmed run is
 *   judged by RUN_DIR/result.
 * - reap() turns a run into a struct jf_run_result and frees it; every run
 *   is reported exactly once, with the result the shim wrote, or as lost
 *   when there is none.
 * - free() forgets the runs but leaves the shims running: they outlive the
 *   daemon by design.
 *
 * The claim.  Before it starts anything the shim creates RUN_DIR/claim
 * (O_EXCL) holding its handle and the time; a restarted daemon that never
 * recorded the start of an attempt calls recover(), which creates the same
 * file saying "cancelled" unless the shim was first.  Exactly one of them
 * wins: either the run goes on and is adopted, or nothing runs, ever - so
 * a daemon killed in the middle of start() never makes a task run twice.
 *
 * Files from outside (result, started, claim) are read with a 1 MiB cap.  start()
 * removes an old result and started record from a reused run directory;
 * stdout, stderr and logs are appended to, never truncated (rotating them
 * into logs.prev is the caller's business).
 */
#include "backends/local/local.h"
#include "backends/shimproto.h"
#include "backends/child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/local/local_int.h"

static const struct jf_runner_ops local_ops;

/* ---- small helpers ---- */

static int sys_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Field 22 of /proc/PID/stat: the start time in clock ticks since boot. */
static int proc_starttime(pid_t pid, unsigned long long *out)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* comm may hold spaces and ')' */
	if (!p || p[1] != ' ')
		return -1;
	p += 2; /* field 3 */
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (errno || end == p)
		return -1;
	*out = v;
	return 0;
}

static int parse_handle(const char *handle, pid_t *pid, unsigned long long *starttime)
{
	int p;
	unsigned long long st;
	int used = 0;
	if (!handle || sscanf(handle, "local:%d:%llu%n", &p, &st, &used) != 2 ||
	    handle[used] != '\0' || p <= 0)
		return -1;
	*pid = p;
	*starttime = st;
	return 0;
}

/* pidfd of pid if it is still the process that started at starttime. */
static int open_verified(pid_t pid, unsigned long long starttime)
{
	unsigned long long now;
	if (proc_starttime(pid, &now) < 0 || now != starttime)
		return -1;
	int pidfd = sys_pidfd_open(pid);
	if (pidfd < 0)
		return -1;
	/* Checked again: the pidfd now pins the process, the PID cannot move. */
	if (proc_starttime(pid, &now) < 0 || now != starttime) {
		close(pidfd);
		return -1;
	}
	return pidfd;
}

void jf_local_describe_wait(const siginfo_t *si, char *buf, size_t n)
{
	if (si->si_pid == 0)
		buf[0] = '\0';
	else if (si->si_code == CLD_EXITED)
		snprintf(buf, n, "jobfs-shim exit %d", si->si_status);
	else
		snprintf(buf, n, "jobfs-shim killed by SIG%s",
			 sigabbrev_np(si->si_status) ? sigabbrev_np(si->si_status) : "?");
}

/* ---- the run table ---- */

static void run_free(struct run *r)
{
	if (!r)
		return;
	if (r->pidfd >= 0)
		close(r->pidfd);
	if (r->ready_fd >= 0)
		close(r->ready_fd);
	free(r->line);
	free(r->failure);
	free(r->run_dir);
	free(r);
}

static struct run *run_new(uint64_t cookie, const char *run_dir, pid_t pid,
			   unsigned long long starttime)
{
	struct run *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->run_dir = strdup(run_dir);
	if (!r->run_dir) {
		free(r);
		return NULL;
	}
	r->cookie = cookie;
	r->pid = pid;
	r->starttime = starttime;
	r->pidfd = -1;
	r->ready_fd = -1;
	r->confirmed = true;
	r->wpid = (struct watch){ W_PID, r };
	r->wready = (struct watch){ W_READY, r };
	return r;
}

static size_t bucket_of(const struct local *lb, pid_t pid)
{
	return (size_t)(uint32_t)pid & (lb->nbuckets - 1);
}

/* Doubling keeps chains short; if it cannot, chains just get longer. */
static void hash_grow(struct local *lb)
{
	size_t n = lb->nbuckets * 2;
	struct run **b = calloc(n, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < lb->nbuckets; i++) {
		struct run *r = lb->buckets[i], *next;
		for (; r; r = next) {
			next = r->hnext;
			size_t k = (size_t)(uint32_t)r->pid & (n - 1);
			r->hnext = b[k];
			b[k] = r;
		}
	}
	free(lb->buckets);
	lb->buckets = b;
	lb->nbuckets = n;
}

static void hash_add(struct local *lb, struct run *r)
{
	if (lb->nwatched >= lb->nbuckets)
		hash_grow(lb);
	size_t k = bucket_of(lb, r->pid);
	r->hnext = lb->buckets[k];
	lb->buckets[k] = r;
	lb->nwatched++;
}

static void hash_del(struct local *lb, struct run *r)
{
	struct run **pp = &lb->buckets[bucket_of(lb, r->pid)];
	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == r) {
			*pp = r->hnext;
			r->hnext = NULL;
			lb->nwatched--;
			return;
		}
	}
}

static struct run *hash_find(struct local *lb, pid_t pid, unsigned long long starttime)
{
	struct run *r = lb->buckets[bucket_of(lb, pid)];
	for (; r; r = r->hnext)
		if (r->pid == pid && r->starttime == starttime)
			return r;
	return NULL;
}

/* Watch r's pidfd.  On failure r is unchanged and not watched. */
static int run_watch(struct local *lb, struct run *r)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &r->wpid };
	if (epoll_ctl(lb->epfd, EPOLL_CTL_ADD, r->pidfd, &ev) < 0)
		return -1;
	hash_add(lb, r);
	return 0;
}

static void run_unwatch(struct local *lb, struct run *r)
{
	epoll_ctl(lb->epfd, EPOLL_CTL_DEL, r->pidfd, NULL);
	hash_del(lb, r);
}

bool jf_local_pending_push(struct local *lb, const struct jf_run_result *res)
{
	struct pending *p = malloc(sizeof(*p));
	if (!p)
		return false;
	uint64_t one = 1;
	p->res = *res;
	p->next = NULL;
	if (lb->ptail)
		lb->ptail->next = p;
	else
		lb->phead = p;
	lb->ptail = p;
	(void)!write(lb->evfd, &one, sizeof(one));
	return true;
}

static void run_queue(struct local *lb, struct run *r)
{
	uint64_t one = 1;
	r->qnext = NULL;
	if (lb->qtail)
		lb->qtail->qnext = r;
	else
		lb->qhead = r;
	lb->qtail = r;
	(void)!write(lb->evfd, &one, sizeof(one));
}

/* ---- results ---- */

/* The run has ended (or its shim is gone): fill out, free r. */
/*
 * A shim that died without a result (SIGKILL, OOM) leaves its OCI
 * containers behind: their inits are not its process-group members and
 * have no death signal of their own.  They live in the shim's cgroups
 * (tools/shim_proc.c: jobfs/shim-PID/N, the runtime's child "ctr"): kill
 * what is there, in each hierarchy that has it.  Nothing when the shim ran
 * no container (no such directories).
 */
static void kill_left_containers(pid_t shim)
{
	static const char *const roots[] = { "/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory",
					     "/sys/fs/cgroup/cpu", "/sys/fs/cgroup", NULL };
	char top[PATH_MAX];
	for (const char *const *root = roots; *root; root++) {
		snprintf(top, sizeof(top), "%s/jobfs/shim-%d", *root, (int)shim);
		DIR *d = opendir(top);
		if (!d)
			continue;
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			static const char *const subs[] = { "ctr/cgroup.procs", "cgroup.procs" };
			for (size_t k = 0; k < 2; k++) {
				char path[PATH_MAX + 300];
				snprintf(path, sizeof(path), "%s/%s/%s", top, de->d_name, subs[k]);
				FILE *f = fopen(path, "re");
				long pid;
				while (f && fscanf(f, "%ld", &pid) == 1)
					if (pid > 1)
						kill((pid_t)pid, SIGKILL);
				if (f)
					fclose(f);
			}
		}
		closedir(d);
	}
}

/* rmdir path's subtree of cgroups, deepest first; true when it is gone */
static bool cg_rmtree(const char *path, int depth)
{
	DIR *d = depth < 4 ? opendir(path) : NULL;
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)))
			if (de->d_type == DT_DIR && de->d_name[0] != '.') {
				char sub[PATH_MAX];
				if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) <
				    (int)sizeof(sub))
					cg_rmtree(sub, depth + 1);
			}
		closedir(d);
	}
	return rmdir(path) == 0 || errno == ENOENT;
}

/* The cgroups a vanished shim made (its procs' limits, its containers',
 * under jobfs/shim-PID of every hierarchy), once what was in them has died
 * of kill_left_containers' SIGKILL: tried for up to 0.5 s (a lost shim is
 * rare; its processes die in a few ms), then left (a later jobfs-shim of
 * that pid reuses them). */
static void remove_left_cgroups(pid_t shim)
{
	char top[PATH_MAX];
	for (int tries = 0; tries < 100; tries++) {
		bool left = false;
		DIR *d = opendir("/sys/fs/cgroup");
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(top, sizeof(top), "/sys/fs/cgroup/%s/jobfs/shim-%d", de->d_name,
				 (int)shim);
			if (access(top, F_OK) == 0 && !cg_rmtree(top, 0))
				left = true;
		}
		if (d)
			closedir(d);
		/* the unified hierarchy at the root (v2) */
		snprintf(top, sizeof(top), "/sys/fs/cgroup/jobfs/shim-%d", (int)shim);
		if (access(top, F_OK) == 0 && !cg_rmtree(top, 0))
			left = true;
		if (!left)
			return;
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

static void run_finish(struct run *r, struct jf_run_result *out)
{
	siginfo_t si;
	char why[128] = "", shim[64] = "";

	memset(out, 0, sizeof(*out));
	memset(&si, 0, sizeof(si));
	out->cookie = r->cookie;
	/* Our own child: reap it.  An adopted shim is someone else's (ECHILD). */
	if (r->pidfd >= 0 && waitid(P_PIDFD, (id_t)r->pidfd, &si, WEXITED | WNOHANG) == 0)
		jf_local_describe_wait(&si, shim, sizeof(shim));
	if (!r->confirmed) {
		/* it never got going: no `started` went out, so no result counts */
		out->exit_code = 127;
		out->start_failed = true;
		out->start_ms = out->end_ms = jf_be_wall_ms();
		out->pull_failed = r->pull_failed;
		if (r->failure)
			snprintf(out->message, sizeof(out->message), "%s", r->failure);
		else
			snprintf(out->message, sizeof(out->message),
				 "jobfs-shim ended before starting anything (%s)",
				 shim[0] ? shim : "no status");
		goto done;
	}
	if (jf_shim_result(r->run_dir, out, why, sizeof(why)) == 0)
		goto done;
	int missing = errno == ENOENT;

	int64_t start = r->start_ms ? r->start_ms : jf_shim_started_ms(r->run_dir);
	memset(out, 0, sizeof(*out));
	out->cookie = r->cookie;
	out->lost = true;
	out->exit_code = -1;
	kill_left_containers(r->pid);
	remove_left_cgroups(r->pid);
	out->start_ms = start;
	out->end_ms = jf_be_wall_ms();
	if (r->pidfd < 0) {
		/* gone before we watched it (the daemon was down): bill up to its
		 * last sign of life, the claim's mtime that the shim touches every
		 * second, not up to now */
		char path[PATH_MAX];
		struct stat sb;
		if (run_path(path, sizeof(path), r->run_dir, "claim") == 0 &&
		    stat(path, &sb) == 0) {
			int64_t alive =
				(int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
			if (alive < out->end_ms)
				out->end_ms = alive > start ? alive : start;
		}
	}
	if (!missing)
		snprintf(out->message, sizeof(out->message),
			 "supervisor vanished without a result (%s)", why);
	else if (shim[0])
		snprintf(out->message, sizeof(out->message),
			 "supervisor vanished without a result (%s)", shim);
	else
		snprintf(out->message, sizeof(out->message),
			 "supervisor vanished without a result");
done:
	run_free(r);
}

/* ---- start ---- */

/*
 * The supplementary groups of uid (primary gid) for launch.json: resolved
 * here, where the user database is at hand, so that the shim reads none
 * (shimproto.h).  A user with no entry gets none; *out is the caller's to
 * free.  -1 only when memory runs out.
 */
static int user_groups(uid_t uid, gid_t gid, gid_t **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	long bufsz = sysconf(_SC_GETPW_R_SIZE_MAX);
	size_t len = bufsz > 0 ? (size_t)bufsz : 16384;
	char *buf = malloc(len);
	struct passwd pw, *res = NULL;
	if (!buf)
		return -1;
	if (getpwuid_r(uid, &pw, buf, len, &res) != 0 || !res) {
		free(buf);
		return 0;
	}
	int ng = 64;
	for (;;) {
		gid_t *g = realloc(*out, (size_t)ng * sizeof(gid_t));
		if (!g) {
			free(buf);
			free(*out);
			*out = NULL;
			return -1;
		}
		*out = g;
		int want = ng;
		if (getgrouplist(pw.pw_name, gid, g, &want) >= 0) {
			*n = (size_t)want;
			break;
		}
		if (want <= ng || want > JF_SHIM_MAX_GROUPS) { /* no progress: the first ng */
			*n = (size_t)ng;
			break;
		}
		ng = want;
	}
	free(buf);
	return 0;
}

static enum jf_err write_launch(const struct jf_launch *l, struct jf_error *err)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	enum jf_err rc = JF_ENOMEM;
	char *text = NULL;
	json_t *root = NULL;
	int fd;

	struct jf_shim_launch sl = {
		.uid = l->uid,
		.gid = l->gid,
		.cwd = l->cwd ? l->cwd : l->run_dir,
		.log_cap = l->log_cap_bytes,
		.cpus = l->cpus,
		.ncpus = l->ncpus,
		.nprocs = l->nprocs < JF_SHIM_MAX_PROCS ? l->nprocs : JF_SHIM_MAX_PROCS,
		.rt = l->rt,
		.registry_auth = l->registry_auth,
		.shm_bytes = l->shm_bytes,
		.ports = l->ports,
		.nports = l->nports,
		.mounts = l->mounts,
		.nmounts = l->nmounts,
		.evict_check_ms = l->evict_check_ms,
	};
	for (size_t i = 0; i < sl.nprocs; i++)
		sl.procs[i] = (struct jf_shim_proc){
			.name = l->procs[i].name,
			.argv = l->procs[i].argv,
			.envp = l->procs[i].envp,
			.image = l->procs[i].image,
			.mem_bytes = l->procs[i].mem_bytes,
			.cpu_milli = l->procs[i].cpu_milli,
		};
	/* a root daemon's shim becomes the task's user: with its groups */
	gid_t *groups = NULL;
	if (geteuid() == 0 && (l->uid != 0 || l->gid != 0)) {
		size_t ng = 0;
		if (user_groups(l->uid, l->gid, &groups, &ng) < 0)
			goto out;
		sl.groups = groups;
		sl.ngroups = ng;
		sl.has_groups = true;
	}
	root = jf_shim_launch_encode(&sl);
	free(groups);
	if (!root) {
		/* json_string() refuses bytes that are not UTF-8 (or memory ran out) */
		rc = jf_error_set(err, JF_EINVAL, 0,
				  "launch: a name, argument, variable or path is not valid UTF-8");
		goto out;
	}
	text = json_dumps(root, JSON_COMPACT);
	if (!text)
		goto out;
	size_t len = strlen(text);
	if (len > JF_SHIM_FILE_MAX) {
		rc = jf_error_set(err, JF_EFBIG, 0,
				  "launch: %zu bytes of arguments and environment, over %d", len,
				  JF_SHIM_FILE_MAX);
		goto out;
	}
	if (run_path(path, sizeof(path), l->run_dir, "launch.json") < 0 ||
	    run_path(tmp, sizeof(tmp), l->run_dir, "launch.json.tmp") < 0) {
		rc = jf_error_set(err, JF_EINVAL, 0, "run directory path too long");
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int wr = fd < 0 ? -1 : write_all(fd, text, len);
	int e = errno;
	/* close() is called once whatever it returns: the fd is gone either way. */
	if (fd >= 0 && close(fd) < 0 && wr == 0) {
		wr = -1;
		e = errno;
	}
	if (wr < 0) {
		unlink(tmp);
		rc = jf_error_set(err, JF_EIO, 0, "%s: %s", tmp, strerror(e));
		goto out;
	}
	if (rename(tmp, path) < 0) {
		rc = jf_error_set(err, JF_EIO, 0, "%s: %s", path, strerror(errno));
		unlink(tmp);
		goto out;
	}
	rc = JF_OK;
out:
	if (rc == JF_ENOMEM)
		jf_error_set(err, JF_ENOMEM, 0, "launch: out of memory");
	free(text);
	json_decref(root);
	return rc;
}

/* A shim that will not be a run: make sure it is gone and reaped. */
static void shim_discard(pid_t pid, int pidfd, int grace_ms, char *how, size_t n)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	if (pidfd >= 0) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		if (poll(&p, 1, grace_ms) <= 0)
			sys_pidfd_send_signal(pidfd, SIGKILL);
		while (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0 && errno == EINTR)
			;
	} else {
		kill(pid, SIGKILL);
		while (waitid(P_PID, (id_t)pid, &si, WEXITED) < 0 && errno == EINTR)
			;
	}
	jf_local_describe_wait(&si, how, n);
}

/* the shim: stdin and stdout /dev/null, stderr the daemon's, its ready
 * pipe on LOCAL_READY_FD */
static int spawn_shim(struct local *lb, const char *run_dir, int ready_w, pid_t *pid)
{
	char *argv[] = { lb->shim_path, (char *)run_dir, NULL };
	int fds[LOCAL_READY_FD + 1] = { JF_SPAWN_NULL, JF_SPAWN_NULL };
	for (int i = 2; i < LOCAL_READY_FD; i++)
		fds[i] = JF_SPAWN_KEEP;
	fds[LOCAL_READY_FD] = ready_w;
	return jf_spawn(lb->shim_path, argv, fds, LOCAL_READY_FD + 1, pid);
}

static enum jf_err local_start(struct jf_runner *be, const struct jf_launch *l, uint64_t cookie,
			       struct jf_run_started *out, struct jf_error *err)
{
	struct local *lb = (struct local *)be;
	int rp[2] = { -1, -1 }, pidfd = -1;
	pid_t pid = -1;
	struct run *r = NULL;
	unsigned long long starttime;
	char how[64] = "";
	enum jf_err rc;

	if (!l || !l->run_dir || !l->procs || l->nprocs < 1 || l->nprocs > JF_RUN_MAX_PROCS)
		return jf_error_set(err, JF_EINVAL, 0, "launch: 1 to %d processes",
				    JF_RUN_MAX_PROCS);
	for (size_t i = 0; i < l->nprocs; i++) {
		const struct jf_proc *p = &l->procs[i];
		/* a container's command may be its image's (reference 8.1) */
		if (!p->argv || (!p->image && (!p->argv[0] || !p->argv[0][0])))
			return jf_error_set(err, JF_EINVAL, 0, "launch: process %zu has no command",
					    i);
		if (p->name &&
		    (!p->name[0] || strlen(p->name) >= sizeof(((struct jf_proc_result *)0)->name)))
			return jf_error_set(err, JF_EINVAL, 0, "launch: process %zu: bad name", i);
	}
	rc = write_launch(l, err);
	if (rc != JF_OK)
		return rc;
	/* A reused run directory: an old record must not pass for this run's. */
	static const char *const stale[] = { "result", "result.tmp", "started", "started.tmp",
					     "claim" };
	for (size_t i = 0; i < sizeof(stale) / sizeof(stale[0]); i++) {
		char path[PATH_MAX];
		if (run_path(path, sizeof(path), l->run_dir, stale[i]) == 0 && unlink(path) < 0 &&
		    errno != ENOENT)
			return jf_error_set(err, JF_EIO, 0, "%s: %s", path, strerror(errno));
	}
	if (pipe2(rp, O_CLOEXEC) < 0)
		return jf_error_set(err, JF_EIO, 0, "pipe: %s", strerror(errno));
	/* our end never blocks the loop; the shim's end stays blocking */
	if (fcntl(rp[0], F_SETFL, O_NONBLOCK) < 0) {
		rc = jf_error_set(err, JF_EIO, 0, "fcntl: %s", strerror(errno));
		goto fail_pipe;
	}
	if (rp[1] == LOCAL_READY_FD) {
		/* dup2 onto itself would keep FD_CLOEXEC: move it off fd 3. */
		int fd = fcntl(rp[1], F_DUPFD_CLOEXEC, LOCAL_READY_FD + 1);
		if (fd < 0) {
			rc = jf_error_set(err, JF_EIO, 0, "fcntl: %s", strerror(errno));
			goto fail_pipe;
		}
		close(rp[1]);
		rp[1] = fd;
	}
	int e = spawn_shim(lb, l->run_dir, rp[1], &pid);
	close(rp[1]);
	rp[1] = -1;
	if (e != 0) {
		rc = jf_error_set(err, JF_EIO, 0, "cannot run %s: %s", lb->shim_path, strerror(e));
		goto fail_pipe;
	}
	pidfd = sys_pidfd_open(pid);
	if (pidfd < 0) {
		rc = jf_error_set(err, JF_EIO, 0, "pidfd_open: %s", strerror(errno));
		goto fail_shim;
	}
	/* our child, not reaped yet: its PID cannot have moved on */
	if (proc_starttime(pid, &starttime) < 0) {
		rc = jf_error_set(err, JF_EIO, 0, "/proc/%d/stat: %s", (int)pid, strerror(errno));
		goto fail_shim;
	}
	r = run_new(cookie, l->run_dir, pid, starttime);
	if (r)
		r->line = malloc(LOCAL_LINE_MAX);
	if (!r || !r->line) {
		run_free(r);
		rc = jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		goto fail_shim;
	}
	r->pidfd = pidfd;
	if (run_watch(lb, r) < 0) {
		rc = jf_error_set(err, JF_EIO, 0, "epoll_ctl: %s", strerror(errno));
		r->pidfd = -1;
		run_free(r);
		goto fail_shim;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &r->wready };
	if (epoll_ctl(lb->epfd, EPOLL_CTL_ADD, rp[0], &ev) < 0) {
		rc = jf_error_set(err, JF_EIO, 0, "epoll_ctl: %s", strerror(errno));
		run_unwatch(lb, r);
		r->pidfd = -1;
		run_free(r);
		goto fail_shim;
	}
	/* pending from here: the ready line comes through reap() */
	r->ready_fd = rp[0];
	r->confirmed = false;
	r->ready_by = jf_be_mono_ms() + lb->ready_timeout_ms;
	jf_local_starting_add(lb, r);
	snprintf(out->handle, sizeof(out->handle), "local:%d:%llu", (int)pid, starttime);
	out->pid = 0;
	out->start_ms = 0;
	out->pending = true;
	return JF_OK;

fail_shim:
	/* Its processes die with it (PR_SET_PDEATHSIG). */
	shim_discard(pid, pidfd, 0, how, sizeof(how));
	if (pidfd >= 0)
		close(pidfd);
fail_pipe:
	if (rp[0] >= 0)
		close(rp[0]);
	if (rp[1] >= 0)
		close(rp[1]);
	return rc;
}

/* ---- the rest of the ops ---- */

static enum jf_err local_adopt(struct jf_runner *be, const char *handle, const char *run_dir,
			       uint64_t cookie, struct jf_error *err)
{
	struct local *lb = (struct local *)be;
	pid_t pid;
	unsigned long long starttime;

	if (parse_handle(handle, &pid, &starttime) < 0)
		return jf_error_set(err, JF_EINVAL, 0, "not a local run handle: '%.64s'",
				    handle ? handle : "");
	if (!run_dir)
		return jf_error_set(err, JF_EINVAL, 0, "adopt: no run directory");
	/* watched already (the engine took its tables up again after a
	 * failed commit): one watch, with the engine's cookie */
	struct run *w = hash_find(lb, pid, starttime);
	if (w) {
		w->cookie = cookie;
		return JF_OK;
	}
	struct run *r = run_new(cookie, run_dir, pid, starttime);
	if (!r)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	/*
	 * A shim still there (perhaps a zombie of ours, its result already
	 * written) is watched: its pidfd is readable as soon as it has exited,
	 * and reap() collects it.  A shim that is gone is queued: reap() finds
	 * its result or reports it lost.
	 */
	r->pidfd = open_verified(pid, starttime);
	if (r->pidfd >= 0 && run_watch(lb, r) == 0)
		return JF_OK;
	run_queue(lb, r);
	return JF_OK;
}

static enum jf_err local_signal(struct jf_runner *be, const char *handle, enum jf_run_signal sig)
{
	struct local *lb = (struct local *)be;
	pid_t pid;
	unsigned long long starttime;
	int signo, pidfd, rc;

	if (parse_handle(handle, &pid, &starttime) < 0)
		return JF_EINVAL;
	switch (sig) {
	case JF_RUN_TERM:
		signo = SIGTERM;
		break;
	case JF_RUN_KILL:
		signo = SIGUSR1; /* the shim SIGKILLs every process group */
		break;
	default:
		return JF_EINVAL;
	}
	struct run *r = hash_find(lb, pid, starttime);
	if (r) {
		rc = sys_pidfd_send_signal(r->pidfd, signo);
	} else {
		pidfd = open_verified(pid, starttime);
		if (pidfd < 0)
			return JF_OK; /* vanished: nothing to signal */
		rc = sys_pidfd_send_signal(pidfd, signo);
		int e = errno;
		close(pidfd);
		errno = e;
	}
	if (rc == 0 || errno == ESRCH)
		return JF_OK;
	return errno == EPERM ? JF_EACCES : JF_EIO;
}

static enum jf_err local_recover(struct jf_runner *be, const char *run_dir, char *handle, size_t n,
				 int64_t *start_ms, struct jf_error *err)
{
	(void)be;
	return jf_local_claim(run_dir, handle, n, start_ms, err);
}

enum jf_err jf_local_claim(const char *run_dir, char *handle, size_t n, int64_t *start_ms,
			   struct jf_error *err)
{
	char path[PATH_MAX], *text = NULL;
	static const char cancelled[] = "cancelled\n";
	if (!run_dir || run_path(path, sizeof(path), run_dir, "claim") < 0)
		return jf_error_set(err, JF_EINVAL, 0, "recover: bad run directory");
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd >= 0) {
		/* first: the shim, if it ever comes, will start nothing */
		int rc = write_all(fd, cancelled, sizeof(cancelled) - 1);
		if (rc == 0)
			rc = fsync(fd);
		close(fd);
		if (rc != 0)
			return jf_error_set(err, JF_EIO, 0, "%s: %s", path, strerror(errno));
		return jf_error_set(err, JF_ENOENT, 0, "never started");
	}
	if (errno == ENOENT) /* no run directory: nothing can have started */
		return jf_error_set(err, JF_ENOENT, 0, "never started (no run directory)");
	if (errno != EEXIST)
		return jf_error_set(err, JF_EIO, 0, "%s: %s", path, strerror(errno));
	if (jf_shim_read(path, JF_SHIM_FILE_MAX, &text, NULL) < 0)
		return jf_error_set(err, JF_EIO, 0, "%s: %s", path, strerror(errno));
	int pid = 0, used = 0;
	unsigned long long st = 0;
	long long ms = 0;
	enum jf_err rc = JF_OK;
	if (sscanf(text, "local:%d:%llu %lld%n", &pid, &st, &ms, &used) != 3 || pid <= 0)
		rc = jf_error_set(err, JF_ENOENT, 0, "never started (%.40s)", text);
	else if ((size_t)snprintf(handle, n, "local:%d:%llu", pid, st) >= n)
		rc = jf_error_set(err, JF_EINVAL, 0, "recover: handle too long");
	else
		*start_ms = ms;
	free(text);
	return rc;
}

static int local_fd(struct jf_runner *be)
{
	return ((struct local *)be)->epfd;
}

/*
 * Every event yields at most one result, so a batch of max - n events
 * fits: a shim that exited before its start was reported gives its
 * `started` result now and goes on the ready list, whose entries are
 * finished first in the next round (its end follows its start).
 */
static size_t local_reap(struct jf_runner *be, struct jf_run_result *out, size_t max)
{
	struct local *lb = (struct local *)be;
	size_t n = 0;

	while (n < max) {
		if (lb->phead) {
			struct pending *p = lb->phead;
			lb->phead = p->next;
			if (!lb->phead)
				lb->ptail = NULL;
			out[n++] = p->res;
			free(p);
			continue;
		}
		if (lb->qhead) {
			struct run *r = lb->qhead;
			lb->qhead = r->qnext;
			if (!lb->qhead)
				lb->qtail = NULL;
			run_finish(r, &out[n++]);
			continue;
		}
		uint64_t count;
		(void)!read(lb->evfd, &count, sizeof(count)); /* list empty: not readable */

		struct epoll_event ev[64];
		size_t want = max - n < 64 ? max - n : 64;
		int k = epoll_wait(lb->epfd, ev, (int)want, 0);
		if (k <= 0)
			break;
		/* a timer's turn may fill out: the events left are
		 * level-triggered and come again in the next call */
		for (int i = 0; i < k && n < max; i++) {
			struct watch *w = ev[i].data.ptr;
			if (!w)
				continue; /* the eventfd */
			if (w->kind == W_TIMER) {
				n += jf_local_ready_timeouts(lb, &out[n], max - n);
				continue;
			}
			struct run *r = w->r;
			if (w->kind == W_READY) {
				/* settled already in this batch (its shim's exit, a timeout)? */
				if (r->ready_fd >= 0 && jf_local_ready_read(lb, r, &out[n]))
					n++;
				continue;
			}
			run_unwatch(lb, r);
			if (!r->confirmed) {
				if (jf_local_ready_last(lb, r, &out[n]))
					n++;
				run_queue(lb, r);
				continue;
			}
			run_finish(r, &out[n++]);
		}
	}
	return n;
}

void jf_local_set_ready_timeout(struct jf_runner *be, int64_t ms)
{
	if (ms > 0)
		((struct local *)be)->ready_timeout_ms = ms;
}

static void local_free(struct jf_runner *be)
{
	struct local *lb = (struct local *)be;
	for (size_t i = 0; i < lb->nbuckets; i++) {
		struct run *r = lb->buckets[i], *next;
		for (; r; r = next) {
			next = r->hnext;
			run_free(r); /* the shim keeps running */
		}
	}
	for (struct run *r = lb->qhead, *next; r; r = next) {
		next = r->qnext;
		run_free(r);
	}
	for (struct pending *p = lb->phead, *next; p; p = next) {
		next = p->next;
		free(p);
	}
	free(lb->buckets);
	if (lb->tfd >= 0)
		close(lb->tfd);
	if (lb->evfd >= 0)
		close(lb->evfd);
	if (lb->epfd >= 0)
		close(lb->epfd);
	free(lb->shim_path);
	free(lb);
}

static const struct jf_runner_ops local_ops = {
	.name = "local",
	.start = local_start,
	.adopt = local_adopt,
	.recover = local_recover,
	.signal = local_signal,
	.fd = local_fd,
	.reap = local_reap,
	.free = local_free,
};

struct jf_runner *jf_local_new(const char *shim_path, struct jf_error *err)
{
	struct local *lb;

	if (!shim_path || !shim_path[0]) {
		jf_error_set(err, JF_EINVAL, 0, "local backend: no jobfs-shim path");
		return NULL;
	}
	if (access(shim_path, X_OK) < 0) {
		jf_error_set(err, JF_EINVAL, 0, "local backend: %s: %s", shim_path,
			     strerror(errno));
		return NULL;
	}
	lb = calloc(1, sizeof(*lb));
	if (!lb)
		goto nomem;
	lb->be.ops = &local_ops;
	lb->epfd = lb->evfd = lb->tfd = -1;
	lb->ready_timeout_ms = LOCAL_READY_TIMEOUT_MS;
	lb->wtimer = (struct watch){ W_TIMER, NULL };
	lb->shim_path = strdup(shim_path);
	lb->nbuckets = LOCAL_HASH_MIN;
	lb->buckets = calloc(lb->nbuckets, sizeof(*lb->buckets));
	if (!lb->shim_path || !lb->buckets)
		goto nomem;
	lb->epfd = epoll_create1(EPOLL_CLOEXEC);
	lb->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	lb->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (lb->epfd < 0 || lb->evfd < 0 || lb->tfd < 0)
		goto sys;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (epoll_ctl(lb->epfd, EPOLL_CTL_ADD, lb->evfd, &ev) < 0)
		goto sys;
	ev.data.ptr = &lb->wtimer;
	if (epoll_ctl(lb->epfd, EPOLL_CTL_ADD, lb->tfd, &ev) < 0)
		goto sys;
	return &lb->be;

sys:
	jf_error_set(err, JF_EIO, 0, "local backend: %s", strerror(errno));
	local_free(&lb->be);
	return NULL;
nomem:
	jf_error_set(err, JF_ENOMEM, 0, "local backend: out of memory");
	if (lb)
		local_free(&lb->be);
	return NULL;
}
