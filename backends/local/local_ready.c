/*
 * local_ready.c - the local backend's pending starts: each shim's one
 * ready line, read through the inner epoll, with a deadline on the
 * timerfd (see local.c for what holds).
 */
#include "backends/local/local_int.h"
#include "backends/shimproto.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

/* ---- pending starts: the ready line ---- */

/* Arm the timerfd for the first starting run's deadline, or disarm it. */
static void timer_arm(struct local *lb)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (lb->shead) {
		int64_t at = lb->shead->ready_by;
		its.it_value.tv_sec = at / 1000;
		its.it_value.tv_nsec = (at % 1000) * 1000000L;
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1;
	}
	timerfd_settime(lb->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

void jf_local_starting_add(struct local *lb, struct run *r)
{
	r->snext = NULL;
	r->sprev = lb->stail;
	if (lb->stail)
		lb->stail->snext = r;
	else
		lb->shead = r;
	lb->stail = r;
	if (lb->shead == r)
		timer_arm(lb);
}

/* Off the starting list: no deadline any more (its pipe stays watched). */
static void starting_unlist(struct local *lb, struct run *r)
{
	bool listed = lb->shead == r || r->sprev;
	if (!listed)
		return;
	bool head = lb->shead == r;
	if (r->sprev)
		r->sprev->snext = r->snext;
	else
		lb->shead = r->snext;
	if (r->snext)
		r->snext->sprev = r->sprev;
	else
		lb->stail = r->sprev;
	r->snext = r->sprev = NULL;
	if (head)
		timer_arm(lb);
}

/* The run's start is settled one way or the other: no more pipe, off the list. */
static void starting_done(struct local *lb, struct run *r)
{
	if (r->ready_fd < 0)
		return;
	epoll_ctl(lb->epfd, EPOLL_CTL_DEL, r->ready_fd, NULL);
	close(r->ready_fd);
	r->ready_fd = -1;
	free(r->line);
	r->line = NULL;
	starting_unlist(lb, r);
}

static void set_failure(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_failure(struct run *r, const char *fmt, ...)
{
	char msg[JF_RUN_MSG_MAX];
	va_list ap;
	if (r->failure)
		return; /* the first reason is the one */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->failure = strdup(msg);
}

/* A `started` result for r, from a ready line that said so. */
static void confirm(struct run *r, int64_t start_ms, pid_t pid, struct jf_run_result *out)
{
	memset(out, 0, sizeof(*out));
	out->cookie = r->cookie;
	out->started = true;
	out->start_ms = start_ms;
	out->pid = pid;
	r->start_ms = start_ms;
	r->confirmed = true;
}

/* "note TYPE REASON MESSAGE": queued as a note result, in order.  A shim
 * that says notes is pulling: it is off the deadline from then on (it
 * bounds its pull itself; its pidfd tells if it dies). */
static bool note_line(struct local *lb, struct run *r, const char *line)
{
	struct jf_run_result res;
	memset(&res, 0, sizeof(res));
	if (!jf_shim_note_parse(line, &res))
		return false;
	res.cookie = r->cookie;
	jf_local_pending_push(lb, &res);
	r->noted = true;
	starting_unlist(lb, r);
	return true;
}

/* A result out of the ready line goes after the notes before it. */
static int deliver(struct local *lb, struct jf_run_result *out)
{
	if (!lb->phead)
		return 1;
	jf_local_pending_push(lb, out);
	return 0;
}

/*
 * Act on a complete ready line: 1 with a `started` result in *out, 0 when
 * the run will end as a start failure (the shim exits; its pidfd tells).
 */
static int ready_line(struct local *lb, struct run *r, const char *line, struct jf_run_result *out)
{
	long long start_ms;
	int first_pid = 0;
	if (sscanf(line, "started %lld %d", &start_ms, &first_pid) == 2 && start_ms > 0) {
		confirm(r, start_ms, first_pid, out);
		return deliver(lb, out);
	}
	if (sscanf(line, "failed %lld", &start_ms) == 1 && start_ms > 0) {
		/* nothing runs; the result says why, and the end follows */
		confirm(r, start_ms, 0, out);
		return deliver(lb, out);
	}
	if (strncmp(line, "pullfailed ", 11) == 0) {
		/* nothing was claimed, nothing ran: a start failure that is no
		 * attempt of the task (the engine backs off and tries again) */
		set_failure(r, "%s", line + 11);
		r->pull_failed = true;
		return 0;
	}
	if (strncmp(line, "error ", 6) == 0) {
		set_failure(r, "jobfs-shim: %s", line + 6);
		return 0;
	}
	set_failure(r, "jobfs-shim: unexpected ready line '%.80s'", line);
	if (r->pidfd >= 0)
		sys_pidfd_send_signal(r->pidfd, SIGKILL);
	return 0;
}

/*
 * Read what the ready pipe has (it never blocks).  Returns 1 with a
 * `started` result in *out, 0 otherwise; the run's start is settled (the
 * pipe closed) once a line, EOF or an error came.
 */
int jf_local_ready_read(struct local *lb, struct run *r, struct jf_run_result *out)
{
	if (r->ready_fd < 0)
		return 0;
	for (;;) {
		char *nl = memchr(r->line, '\n', r->linelen);
		if (nl || r->linelen == LOCAL_LINE_MAX - 1) {
			/* a line, or LOCAL_LINE_MAX bytes without one: take what came */
			if (nl)
				*nl = '\0';
			else
				r->line[r->linelen] = '\0';
			if (note_line(lb, r, r->line)) {
				/* more may follow: keep what came after it */
				size_t used = nl ? (size_t)(nl - r->line) + 1 : r->linelen;
				memmove(r->line, r->line + used, r->linelen - used);
				r->linelen -= used;
				continue;
			}
			int got = ready_line(lb, r, r->line, out);
			starting_done(lb, r);
			return got;
		}
		ssize_t n =
			read(r->ready_fd, r->line + r->linelen, LOCAL_LINE_MAX - 1 - r->linelen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0; /* more to come */
		if (n <= 0) {
			int got = 0;
			if (n == 0 && r->linelen > 0) {
				/* a last line without its newline */
				r->line[r->linelen] = '\0';
				got = note_line(lb, r, r->line) ? 0
								: ready_line(lb, r, r->line, out);
			} else if (n < 0) {
				set_failure(r, "jobfs-shim: ready pipe: %s", strerror(errno));
			}
			/* EOF without a line: the shim ended; how, its pidfd tells */
			starting_done(lb, r);
			return got;
		}
		r->linelen += (size_t)n;
	}
}

/*
 * The shim of a starting run has exited: whatever it wrote to the pipe is
 * still there.  Without a line, RUN_DIR/started is the record of a start
 * the pipe lost.  Returns 1 with a `started` result in *out.
 */
int jf_local_ready_last(struct local *lb, struct run *r, struct jf_run_result *out)
{
	int got = jf_local_ready_read(lb, r, out);
	starting_done(lb, r);
	if (got || r->confirmed || r->failure)
		return got;
	char path[PATH_MAX], *text = NULL;
	long long ms = 0;
	int first_pid = 0;
	if (run_path(path, sizeof(path), r->run_dir, "started") == 0 &&
	    jf_shim_read(path, JF_SHIM_FILE_MAX, &text, NULL) == 0) {
		if (sscanf(text, "started %lld %d", &ms, &first_pid) == 2 && ms > 0)
			got = 1;
		else if (sscanf(text, "failed %lld", &ms) == 1 && ms > 0)
			got = 1, first_pid = 0;
		free(text);
	}
	if (got)
		confirm(r, ms, first_pid, out);
	return got;
}

/* Does the run directory's claim say "cancelled" (nothing will start)? */
static bool claim_cancelled(const char *run_dir)
{
	char path[PATH_MAX], *text = NULL;
	if (run_path(path, sizeof(path), run_dir, "claim") < 0 ||
	    jf_shim_read(path, JF_SHIM_FILE_MAX, &text, NULL) < 0)
		return true; /* no claim file: nothing can start without one */
	bool c = strncmp(text, "cancelled", 9) == 0;
	free(text);
	return c;
}

/*
 * The timerfd fired: kill the shims that said nothing in time.  What a
 * shim said counts from when it said it, not from when the caller got to
 * reap(): a line already in its pipe (a caller busy for longer than the
 * deadline) confirms the start instead, as a `started` result in out.
 * Returns how many results it put there, at most max.
 */
size_t jf_local_ready_timeouts(struct local *lb, struct jf_run_result *out, size_t max)
{
	uint64_t ticks;
	size_t n = 0;
	(void)!read(lb->tfd, &ticks, sizeof(ticks));
	int64_t now = jf_be_mono_ms();
	while (lb->shead && lb->shead->ready_by <= now && n < max) {
		struct run *r = lb->shead;
		if (jf_local_ready_read(lb, r, &out[n])) {
			n++;
			continue;
		}
		if (r->ready_fd < 0)
			continue; /* settled by what it said (an error line, EOF) */
		/* nothing said: give the start up only if nothing can have
		 * started - a shim that claimed the run directory first has
		 * started (or is starting) its processes, and giving that up
		 * would run the task twice: its start counts from its claim */
		char handle[JF_HANDLE_MAX];
		int64_t claimed_ms = 0;
		struct jf_error cerr = { 0 };
		enum jf_err crc =
			jf_local_claim(r->run_dir, handle, sizeof(handle), &claimed_ms, &cerr);
		if (crc == JF_ENOENT && !claim_cancelled(r->run_dir)) {
			/* claimed, its handle not written yet: starting now */
			crc = JF_OK;
			claimed_ms = jf_be_wall_ms();
		}
		if (crc == JF_OK) {
			confirm(r, claimed_ms, 0, &out[n++]);
			starting_done(lb, r);
			continue;
		}
		set_failure(r, "jobfs-shim said nothing in %.1f s%s%s",
			    (double)lb->ready_timeout_ms / 1000.0, crc == JF_ENOENT ? "" : ": ",
			    crc == JF_ENOENT ? "" : cerr.msg);
		/* its processes die with it (PR_SET_PDEATHSIG); its pidfd tells */
		if (r->pidfd >= 0)
			sys_pidfd_send_signal(r->pidfd, SIGKILL);
		starting_done(lb, r);
	}
	timer_arm(lb);
	return n;
}
