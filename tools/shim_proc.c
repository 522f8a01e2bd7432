/*
 * shim_proc.c - the node's processes: each proc forked as its own
 * process-group leader (changing user, pinned to its CPUs and, where the
 * machine allows, in a cpuset cgroup), signals forwarded to the groups,
 * children reaped, and the one event loop (run_loop()) that polls the
 * signalfd and the output pipes, keeps the heartbeat and fires the Slurm
 * mode's timers.  The rules are the DESIGN at the top of shim.c (and of
 * shim_slurm.c for the timeout and the signals from outside).
 */
#include "tools/shim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* What a child reports through its CLOEXEC error pipe before _exit. */
enum child_stage {
	ST_SETPGID,
	ST_AFFINITY,
	ST_SETGROUPS,
	ST_SETGID,
	ST_SETUID,
	ST_CHDIR,
	ST_STDIO,
	ST_EXEC,
};

static const char *const stage_names[] = {
	[ST_SETPGID] = "setpgid",     [ST_AFFINITY] = "sched_setaffinity",
	[ST_SETGROUPS] = "setgroups", [ST_SETGID] = "setgid",
	[ST_SETUID] = "setuid",       [ST_CHDIR] = "chdir",
	[ST_STDIO] = "stdio",         [ST_EXEC] = "exec",
};

struct child_err {
	int stage;
	int err;
};

/* ---- processes ---- */

__attribute__((noreturn)) static void child_fail(int errfd, enum child_stage stage, int err)
{
	struct child_err ce = { .stage = stage, .err = err };
	(void)!write(errfd, &ce, sizeof(ce));
	_exit(stage == ST_EXEC && err == EACCES ? 126 : 127);
}


/* ---- a cpuset cgroup for pinned nodes, where the machine allows ---- */

static bool put_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text);
}

static bool get_file(const char *dir, const char *name, char *buf, size_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t r = read(fd, buf, n - 1);
	close(fd);
	if (r < 0)
		return false;
	buf[r] = '\0';
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' '))
		buf[--r] = '\0';
	return true;
}

/* Best effort: a cgroup v1 cpuset hierarchy, or v2 with the cpuset
 * controller, holding exactly the pinned cores; nothing when neither can
 * be written (an unprivileged shim, a container without delegation). */
void cgroup_setup(struct shim *s)
{
	char cpus[1024] = "", mems[256] = "", top[200];
	size_t off = 0;
	for (int c = 0; c < CPU_SETSIZE && off + 8 < sizeof(cpus); c++)
		if (CPU_ISSET(c, &s->cpus))
			off += (size_t)snprintf(cpus + off, sizeof(cpus) - off, "%s%d",
						off ? "," : "", c);
	const char *root = "/sys/fs/cgroup/cpuset";
	char probe[64];
	s->cg_procs = "tasks";
	if (!get_file(root, "cpuset.cpus", probe, sizeof(probe))) {
		root = "/sys/fs/cgroup";
		s->cg_procs = "cgroup.procs";
		if (!get_file(root, "cgroup.controllers", probe, sizeof(probe)) ||
		    !strstr(probe, "cpuset"))
			return;
		put_file(root, "cgroup.subtree_control", "+cpuset");
	}
	snprintf(top, sizeof(top), "%s/jobfs", root);
	if (mkdir(top, 0755) < 0 && errno != EEXIST)
		return;
	if (!strcmp(s->cg_procs, "tasks")) {
		/* v1: a cpuset needs cpus and mems before it takes tasks */
		char pc[1024];
		if (get_file(root, "cpuset.cpus", pc, sizeof(pc)) &&
		    get_file(root, "cpuset.mems", mems, sizeof(mems))) {
			char cur[8];
			if (!get_file(top, "cpuset.cpus", cur, sizeof(cur)) || !cur[0])
				put_file(top, "cpuset.cpus", pc);
			if (!get_file(top, "cpuset.mems", cur, sizeof(cur)) || !cur[0])
				put_file(top, "cpuset.mems", mems);
		}
	} else {
		put_file(top, "cgroup.subtree_control", "+cpuset");
	}
	snprintf(s->cg, sizeof(s->cg), "%s/node-%d", top, (int)getpid());
	if (mkdir(s->cg, 0755) < 0 && errno != EEXIST) {
		s->cg[0] = '\0';
		return;
	}
	if (!put_file(s->cg, "cpuset.cpus", cpus) ||
	    (mems[0] && !put_file(s->cg, "cpuset.mems", mems))) {
		rmdir(s->cg);
		s->cg[0] = '\0';
	}
}

void limits_setup(struct shim *s)
{
	if (geteuid() != 0)
		return;
	for (size_t i = 0; i < s->l.nprocs; i++) {
		struct proc *p = &s->procs[i];
		const struct jf_shim_proc *lp = &s->l.procs[i];
		/* a container always: its OOM kills are counted here */
		if (!lp->mem_bytes && !lp->cpu_milli && !p->ctr)
			continue;
		char rel[200], err[SHIM_MSG_MAX];
		snprintf(rel, sizeof(rel), "jobfs/shim-%d/%zu", (int)getpid(), i);
		if (jf_cg_create(&p->cg, rel, lp->mem_bytes, lp->cpu_milli, err, sizeof(err)) < 0) {
			memset(&p->cg, 0, sizeof(p->cg));
			char msg[SHIM_MSG_MAX + 64];
			snprintf(msg, sizeof(msg), "limits not enforced: %s", err);
			msg_clean(msg);
			proc_note(s, p, msg);
		}
	}
}

void limits_remove(struct shim *s)
{
	for (size_t i = 0; i < s->l.nprocs; i++)
		if (s->procs[i].cg.version)
			jf_cg_remove(&s->procs[i].cg);
}

static void cgroup_join(const struct shim *s)
{
	if (!s->cg[0])
		return;
	char pid[32];
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	put_file(s->cg, s->cg_procs, pid);
}

/*
 * In the child after vfork(): it shares the shim's memory until it execs,
 * while the shim waits.  So it only makes system calls through libc's thin
 * wrappers, snprintf into its own stack and execvpe (which searches the
 * PATH on the stack, as posix_spawnp's child does): no malloc, nothing
 * that takes a lock, nothing written to the shim's memory but environ,
 * which the shim puts back.  The shim is single-threaded and its signals
 * have no handlers (they come through a signalfd), so none runs here on
 * shared memory.  Nothing returns.
 */
__attribute__((noreturn)) static void child_run(struct shim *s, struct proc *p, pid_t shim_pid,
						int out_w, int err_w, int errfd)
{
	sigset_t none;
	sigemptyset(&none);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);

	if (setpgid(0, 0) < 0)
		child_fail(errfd, ST_SETPGID, errno);
	if (s->pin && sched_setaffinity(0, sizeof(s->cpus), &s->cpus) < 0)
		child_fail(errfd, ST_AFFINITY, errno);
	cgroup_join(s);
	if (p->cg.version)
		jf_cg_join(&p->cg, 0); /* after the cpuset's: on v2 a process has one */
	if (s->has_netns)
		jf_netns_enter(&s->netns); /* before setuid: setns needs the capability */
	if (s->drop) {
		if (setgroups(s->l.ngroups, s->l.groups) < 0)
			child_fail(errfd, ST_SETGROUPS, errno);
		if (setgid(s->l.gid) < 0)
			child_fail(errfd, ST_SETGID, errno);
		if (setuid(s->l.uid) < 0)
			child_fail(errfd, ST_SETUID, errno);
	}
	/* After the credential change, which would clear it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != shim_pid)
		_exit(127); /* the shim died before we got here */
	if (chdir(s->l.cwd ? s->l.cwd : s->work) < 0)
		child_fail(errfd, ST_CHDIR, errno);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		child_fail(errfd, ST_STDIO, errno);
	/*
	 * 0..2 were taken before any pipe was made, so each dup2 above made a
	 * copy without FD_CLOEXEC and every original closes at exec: the
	 * process gets exactly 0, 1 and 2.  glibc's execvpe searches the PATH
	 * of environ, not of envp.
	 */
	environ = (char **)p->spec->envp;
	execvpe(p->spec->argv[0], p->spec->argv, p->spec->envp);
	child_fail(errfd, ST_EXEC, errno);
}

/*
 * Proc i could not be started: its stderr and logs say why in a line of
 * the shim's own (proc_note), and the first such failure is the node's
 * (start_msg, failed_code).  In the shim, never in the child: the child of
 * vfork() makes system calls only, so it hands its errno over the error
 * pipe and the shim writes the words (child_err_message).
 */
static void proc_start_failed(struct shim *s, size_t i, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void proc_start_failed(struct shim *s, size_t i, int code, const char *fmt, ...)
{
	char msg[SHIM_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	msg_clean(msg);
	s->procs[i].failed = true;
	proc_note(s, &s->procs[i], msg);
	if (s->start_failed)
		return; /* the first failure is the node's */
	s->failed_code = code;
	memcpy(s->start_msg, msg, sizeof(msg));
	s->start_failed = true;
	s->failed_proc = i;
}

static void child_err_message(struct shim *s, size_t i, const struct child_err *ce)
{
	const struct jf_shim_proc *lp = &s->l.procs[i];
	const char *stage =
		ce->stage >= 0 && ce->stage <= ST_EXEC ? stage_names[ce->stage] : "start";
	int code = ce->stage == ST_EXEC && ce->err == EACCES ? 126 : 127;
	switch (ce->stage) {
	case ST_EXEC:
		proc_start_failed(s, i, code, "exec %s: %s", lp->argv[0], strerror(ce->err));
		break;
	case ST_CHDIR:
		proc_start_failed(s, i, code, "chdir %s: %s", s->l.cwd ? s->l.cwd : s->work,
				  strerror(ce->err));
		break;
	case ST_SETUID:
		proc_start_failed(s, i, code, "setuid %u: %s", (unsigned)s->l.uid,
				  strerror(ce->err));
		break;
	case ST_SETGID:
		proc_start_failed(s, i, code, "setgid %u: %s", (unsigned)s->l.gid,
				  strerror(ce->err));
		break;
	default:
		proc_start_failed(s, i, code, "%s: %s", stage, strerror(ce->err));
		break;
	}
}

/*
 * Fork proc i.  A failure to create pipes or to fork makes the proc a start
 * failure with exit code 127 that never ran; it is not fatal to the shim.
 */
void proc_start(struct shim *s, size_t i)
{
	struct proc *p = &s->procs[i];
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, ep[2] = { -1, -1 };
	const char *volatile what = "pipe"; /* live across vfork */

	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0)
		goto fail;
	if (s->start_ms == 0)
		s->start_ms = wall_ms();
	pid_t shim_pid = getpid();
	what = "fork";
	/*
	 * vfork, not fork: no copy of the shim's page tables, no copy-on-write
	 * faults in the shim afterwards, no teardown of a copied address space
	 * at exec.  On this project's reference VM a fork and its faults cost
	 * about a third of a trivial task's time in the shim.  The shim runs
	 * again once the child has exec'd or exited, so the read of ep below
	 * never waits.
	 */
	char **env = environ;
	pid_t pid = vfork();
	if (pid == 0)
		child_run(s, p, shim_pid, outp[1], errp[1], ep[1]);
	environ = env;
	if (pid < 0)
		goto fail;

	setpgid(pid, pid); /* also here, so a signal sent at once reaches the group */
	p->pid = pid;
	p->running = true;
	s->nrunning++;
	close(outp[1]);
	close(errp[1]);
	close(ep[1]);
	p->out.fd = outp[0];
	p->err.fd = errp[0];
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);

	struct child_err ce;
	ssize_t r;
	do
		r = read(ep[0], &ce, sizeof(ce));
	while (r < 0 && errno == EINTR);
	close(ep[0]);
	if (r == (ssize_t)sizeof(ce))
		child_err_message(s, i, &ce);
	return;

fail : {
	int e = errno;
	int fds[] = { outp[0], outp[1], errp[0], errp[1], ep[0], ep[1] };
	for (size_t k = 0; k < sizeof(fds) / sizeof(fds[0]); k++)
		if (fds[k] >= 0)
			close(fds[k]);
	p->exit_code = 127;
	proc_start_failed(s, i, 127, "%s %s: %s", what, p->spec->name, strerror(e));
}
}

static struct proc *proc_by_pid(struct shim *s, pid_t pid)
{
	for (size_t i = 0; i < s->l.nprocs; i++)
		if (s->procs[i].running && s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

/* sig to the process group of every proc still running. */
void forward(struct shim *s, int sig)
{
	for (size_t i = 0; i < s->l.nprocs; i++) {
		struct proc *p = &s->procs[i];
		if (p->running && !p->failed && kill(-p->pid, sig) < 0 && errno == ESRCH)
			kill(p->pid, sig);
	}
}

static void reap_children(struct shim *s)
{
	for (;;) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
			return;
		struct proc *p = proc_by_pid(s, si.si_pid);
		if (s->has_netns && si.si_pid == s->netns.helper)
			s->netns.helper = 0; /* its network went away: reaped below */
		/* The zombie still holds the group id: no other group can have it. */
		if (p)
			kill(-p->pid, SIGKILL);
		int status;
		pid_t r;
		do
			r = waitpid(si.si_pid, &status, 0);
		while (r < 0 && errno == EINTR);
		if (r < 0 || !p)
			continue;
		if (WIFSIGNALED(status)) {
			p->term_signal = WTERMSIG(status);
			p->exit_code = 128 + p->term_signal;
		} else {
			p->exit_code = WEXITSTATUS(status);
		}
		/* the kernel's own count, read before the runtime deletes its
		 * cgroup (on v1 the kill is counted where the killed process was) */
		if (p->cg.version && p->exit_code != 0 && jf_cg_oom_kills(&p->cg) > 0)
			p->oom_killed = true;
		/*
		 * Before any outside SIGTERM, a failure is the node's own.  But
		 * Slurm signals every process of the step, the procs too, so a
		 * proc may end by a SIGTERM meant for all of us just before the
		 * shim reads its own: such an ending (SIGTERM or 143 that the
		 * shim did not cause) waits for the verdict (run_loop).
		 */
		if (p->exit_code != 0 && !s->outside_term) {
			if (s->slurm && !s->timed_out && !s->evicted &&
			    (p->term_signal == SIGTERM || p->exit_code == 128 + SIGTERM))
				s->term_suspect = true;
			else
				s->own_failure = true;
		}
		p->running = false;
		if (--s->nrunning == 0)
			s->end_ms = wall_ms();
	}
}

/*
 * slurm mode: SIGTERM, SIGINT or SIGHUP from outside.  It is passed on as
 * it came; the first one arms the SIGKILL kill_grace_ms later, unless a
 * timeout armed it already.  Only what comes while a proc runs counts.
 */
static void outside_stop(struct shim *s, int sig)
{
	if (s->nrunning == 0 && !s->term_suspect)
		return;
	if (!s->outside_sig)
		s->outside_sig = sig;
	if (sig == SIGTERM)
		s->outside_term = true;
	if (s->nrunning == 0)
		return;
	forward(s, sig);
	if (s->kill_at < 0)
		s->kill_at = mono_ms() + s->sl.kill_grace_ms;
}

/* slurm mode: the timeout and the SIGKILL after the grace, when due. */
static void timers_fire(struct shim *s, int64_t now)
{
	if (s->nrunning == 0)
		return;
	if (s->timeout_at >= 0 && now >= s->timeout_at) {
		s->timeout_at = -1;
		if (!s->outside_sig && !s->evicted) { /* not already on its way out */
			s->timed_out = true;
			forward(s, SIGTERM);
			if (s->kill_at < 0)
				s->kill_at = now + s->sl.kill_grace_ms;
		}
	}
	if (s->kill_at >= 0 && now >= s->kill_at) {
		s->kill_at = -1;
		forward(s, SIGKILL);
	}
}

static void handle_signals(struct shim *s)
{
	struct signalfd_siginfo si;
	bool chld = false;
	while (read(s->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			chld = true;
			break;
		case SIGTERM:
		case SIGINT: /* in the set in slurm mode only */
		case SIGHUP:
			if (s->slurm)
				outside_stop(s, (int)si.ssi_signo);
			else
				forward(s, SIGTERM);
			break;
		case SIGUSR1:
			forward(s, SIGKILL);
			break;
		}
	}
	if (chld)
		reap_children(s);
}

static bool streams_open(struct shim *s)
{
	for (size_t i = 0; i < s->l.nprocs; i++)
		if (s->procs[i].out.fd >= 0 || s->procs[i].err.fd >= 0)
			return true;
	return false;
}

int run_loop(struct shim *s)
{
	struct pollfd pfd[1 + 2 * SHIM_MAX_PROCS];
	struct stream *who[1 + 2 * SHIM_MAX_PROCS];
	struct proc *whose[1 + 2 * SHIM_MAX_PROCS];
	int64_t deadline = -1, beat = mono_ms() + SHIM_BEAT_MS, suspect_wait = -1;

	for (;;) {
		/* a sign of life: if we are killed while no daemon watches, the
		 * next one bills up to the claim's mtime (local.c: run_finish) */
		if (s->alive_fd >= 0 && mono_ms() >= beat) {
			futimens(s->alive_fd, NULL);
			beat = mono_ms() + SHIM_BEAT_MS;
		}
		if (s->nrunning == 0) {
			if (!streams_open(s)) {
				/* slurm mode: the outside SIGTERM that may explain an
				 * ending (reap_children) gets a moment to arrive */
				if (!s->term_suspect || s->outside_term)
					break;
				if (suspect_wait < 0)
					suspect_wait = mono_ms() + SLURM_TERM_WAIT_MS;
				else if (mono_ms() >= suspect_wait)
					break;
			}
			if (deadline < 0)
				deadline = mono_ms() + SHIM_DRAIN_MS;
		}
		nfds_t n = 0;
		pfd[n++] = (struct pollfd){ .fd = s->sfd, .events = POLLIN };
		for (size_t i = 0; i < s->l.nprocs; i++) {
			struct stream *sts[2] = { &s->procs[i].out, &s->procs[i].err };
			for (int k = 0; k < 2; k++) {
				if (sts[k]->fd < 0)
					continue;
				who[n] = sts[k];
				whose[n] = &s->procs[i];
				pfd[n++] = (struct pollfd){ .fd = sts[k]->fd, .events = POLLIN };
			}
		}
		int timeout = SHIM_BEAT_MS;
		if (deadline >= 0) {
			int64_t left = deadline - mono_ms();
			if (left <= 0)
				break;
			if (left < timeout)
				timeout = (int)left;
		}
		int64_t now = mono_ms();
		storage_check(s, now);
		timers_fire(s, now);
		int64_t timers[] = { s->nrunning > 0 ? s->timeout_at : -1,
				     s->nrunning > 0 ? s->kill_at : -1, suspect_wait,
				     s->nrunning > 0 ? s->evict_at : -1 };
		for (int k = 0; k < 4; k++)
			if (timers[k] >= 0 && timers[k] - now < timeout)
				timeout = timers[k] - now > 0 ? (int)(timers[k] - now) : 0;
		int r = poll(pfd, n, timeout);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (pfd[0].revents)
			handle_signals(s);
		for (nfds_t i = 1; i < n; i++)
			if (pfd[i].revents && who[i]->fd >= 0)
				stream_read(s, whose[i], who[i]);
	}
	for (size_t i = 0; i < s->l.nprocs; i++) {
		stream_close(s, &s->procs[i], &s->procs[i].out);
		stream_close(s, &s->procs[i], &s->procs[i].err);
	}
	return 0;
}
