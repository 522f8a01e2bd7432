/*
 * storage_sync.c - the object sources' syncs (reference 8.3) in the engine.
 *
 * - A sync is a jobfs-sync process (objstore/sync.h), posix_spawned with
 *   --parent (it dies with the daemon) and --done-fd 3: the line it writes
 *   there once its result.json is written, else its pidfd, both in the
 *   storage's epoll (jf_eng_stor_fd), say when it ends.  Its end writes
 *   the source's state, figures and a `Synced` or Warning `Failed` event
 *   in one step, then schedules, so what waited for it starts in the same
 *   pass.
 * - At most one sync per source runs (jf_eng_stor_sync_of).  A sync that
 *   finds another holding the cache's lock (one a killed daemon started)
 *   exits 3 and is tried again 500 ms later, the source still Syncing.  A
 *   failed one is tried again for waiting groups after a back-off of 10 s
 *   doubling to 5 min (Kubernetes' pull back-off); `resync` and a new spec
 *   clear it.
 * - Each group starts on a cache synced since it was accepted: a group
 *   that mounts a source waits (reason: Syncing, the message saying for
 *   what) until a sync that began after its acceptance has succeeded;
 *   when nothing else holds the group back, that sync starts in the step
 *   that accepts it.
 * - The first tick after a start resumes every source left Syncing.
 */
#include "engine/storage_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/child.h"
#include "core/quantity.h"
#include "core/spec.h"
#include "core/storage.h"

struct sync *jf_eng_stor_sync_of(struct jf_engine *e, int64_t id)
{
	for (size_t i = 0; i < e->stor->nsyncs; i++)
		if (e->stor->syncs[i].id == id && !e->stor->syncs[i].ended)
			return &e->stor->syncs[i];
	return NULL;
}

/* Out of the epoll and closed: a sync's done pipe. */
static void done_close(struct jf_stor *s, struct sync *sy)
{
	if (sy->donefd < 0)
		return;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, sy->donefd, NULL);
	close(sy->donefd);
	sy->donefd = -1;
}

void jf_eng_stor_sync_kill(struct jf_engine *e, struct sync *sy)
{
	struct jf_stor *s = e->stor;
	kill(sy->pid, SIGTERM);
	waitpid(sy->pid, NULL, 0);
	if (sy->pidfd >= 0) {
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, sy->pidfd, NULL);
		close(sy->pidfd);
	}
	done_close(s, sy);
	*sy = s->syncs[--s->nsyncs];
}

void jf_eng_stor_syncs_stop(struct jf_stor *s)
{
	/* a sync outlives nothing: it resumes at the next start */
	for (size_t i = 0; i < s->nsyncs; i++) {
		kill(s->syncs[i].pid, SIGTERM);
		waitpid(s->syncs[i].pid, NULL, 0);
	}
	for (size_t i = 0; i < s->nsyncs; i++) {
		if (s->syncs[i].pidfd >= 0)
			close(s->syncs[i].pidfd);
		if (s->syncs[i].donefd >= 0)
			close(s->syncs[i].donefd);
	}
	s->nsyncs = 0;
}

static void sync_failed_now(struct jf_engine *e, const struct jf_store_rec *r, const char *msg)
{
	jf_eng_step_begin(e);
	jf_stor_set_state(e->st, r->id, OBJ_FAILED, msg, NULL, jf_eng_now(e));
	jf_eng_stor_event(e, r->id, "source", "Warning", "Failed", "%s", msg);
	jf_eng_step_end(e);
	jf_eng_changed(e, JF_CH_STORE, r->id, 0, 0, 0, false);
}

void jf_eng_stor_sync_start(struct jf_engine *e, const struct jf_store_rec *r, const char *why)
{
	struct jf_stor *s = e->stor;
	if (jf_eng_stor_sync_of(e, r->id) || !r->spec[0])
		return;
	struct jf_objsrc_spec o;
	struct jf_error perr;
	jf_error_clear(&perr);
	if (jf_objsrc_spec_parse(r->spec, strlen(r->spec), &o, &perr) != JF_OK) {
		sync_failed_now(e, r, perr.msg);
		return;
	}
	if (!s->sync_tool || s->nsyncs == STOR_MAX_SYNCS) {
		sync_failed_now(e, r,
				!s->sync_tool ? "cannot sync: jobfs-sync was not found beside jobfs"
					      : "cannot sync: too many syncs at once");
		jf_objsrc_spec_release(&o);
		return;
	}
	char dir[4096], log[4200], uid[24], gid[24];
	jf_engine_store_dir(e, JF_SK_OBJECT, r->name, dir, sizeof(dir));
	jf_eng_stor_make_dir(dir, geteuid(), getegid(), 0755);
	snprintf(log, sizeof(log), "%s/sync.log", dir);
	snprintf(uid, sizeof(uid), "%u", (unsigned)r->uid);
	snprintf(gid, sizeof(gid), "%u", (unsigned)r->gid);
	const char *argv[24];
	size_t a = 0;
	argv[a++] = s->sync_tool;
	argv[a++] = "--endpoint";
	argv[a++] = o.endpoint;
	argv[a++] = "--bucket";
	argv[a++] = o.bucket;
	argv[a++] = "--prefix";
	argv[a++] = o.prefix;
	argv[a++] = "--region";
	argv[a++] = o.region;
	if (o.credentials) {
		argv[a++] = "--credentials";
		argv[a++] = o.credentials;
		if (o.profile) {
			argv[a++] = "--profile";
			argv[a++] = o.profile;
		}
		if (geteuid() == 0) {
			argv[a++] = "--as-uid";
			argv[a++] = uid;
			argv[a++] = "--as-gid";
			argv[a++] = gid;
		}
	}
	/* it ends with the daemon that started it (SIGTERM: it keeps its
	 * partial downloads), so the next daemon resumes it rather than
	 * racing an orphan for the lock: jobfs-sync sets PR_SET_PDEATHSIG
	 * itself, as the child of a posix_spawn cannot before its exec */
	char parent[24];
	snprintf(parent, sizeof(parent), "%ld", (long)getpid());
	argv[a++] = "--parent";
	argv[a++] = parent;
	/* its exit code on fd 3 once the result is written: acted on before
	 * the process has torn itself down (about 1.2 ms sooner) */
	argv[a++] = "--done-fd";
	argv[a++] = "3";
	argv[a++] = dir;
	argv[a] = NULL;
	/* its own log, opened here: the child only dups and execs.  Spawned,
	 * not forked: a fork copies the daemon's page tables (0.5 ms) and
	 * makes every page the daemon writes until the exec a copy (the
	 * step that starts the sync committed in 3 to 5 ms instead of 0.3),
	 * all of it on the way to a waiting node's start */
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int done[2] = { -1, -1 };
	int rc = 0;
	pid_t pid = -1;
	if (in < 0 || out < 0 || pipe2(done, O_CLOEXEC | O_NONBLOCK) != 0)
		rc = errno;
	else
		rc = jf_spawn(s->sync_tool, (char *const *)argv,
			      (const int[]){ in, out, out, done[1] }, 4, &pid);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (done[1] >= 0)
		close(done[1]);
	if (rc != 0 && done[0] >= 0)
		close(done[0]);
	if (rc != 0) {
		char msg[512];
		snprintf(msg, sizeof(msg), "cannot start %s: %s", s->sync_tool, strerror(rc));
		sync_failed_now(e, r, msg);
		jf_objsrc_spec_release(&o);
		return;
	}
	struct sync *sy = &s->syncs[s->nsyncs++];
	*sy = (struct sync){
		.id = r->id, .pid = pid, .pidfd = -1, .donefd = -1, .started_ms = jf_eng_now(e)
	};
	/* its done line and its end wake the loop (jf_eng_stor_fd); without
	 * the epoll, the tick */
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = pfd };
	if (pfd >= 0 && s->epfd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, pfd, &ev) == 0)
		sy->pidfd = pfd;
	else if (pfd >= 0)
		close(pfd);
	ev.data.fd = done[0];
	if (s->epfd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, done[0], &ev) == 0)
		sy->donefd = done[0];
	else
		close(done[0]);
	struct src_memo *m = jf_eng_stor_memo(e, r->id);
	if (m)
		jf_eng_step_begin(e);
	jf_stor_set_state(e->st, r->id, OBJ_SYNCING, "", NULL, jf_eng_now(e));
	jf_eng_stor_event(e, r->id, "source", "Normal", "Syncing", "syncing s3 %s/%s/%s (%s): %s",
			  o.endpoint, o.bucket, o.prefix, o.credentials ? "signed" : "anonymous",
			  why);
	jf_eng_step_end(e);
	jf_eng_changed(e, JF_CH_STORE, r->id, 0, 0, 0, false);
	jf_objsrc_spec_release(&o);
}

/* The figures of result.json as the store's info (objects, bytes, ...). */
static char *result_info(const char *dir, json_t **res)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/result.json", dir);
	json_error_t je;
	*res = json_load_file(p, 0, &je);
	if (!*res || !json_is_object(*res))
		return NULL;
	return json_dumps(*res, JSON_COMPACT);
}

static void sync_ended(struct jf_engine *e, struct sync *sy, int ws)
{
	struct jf_store_rec r;
	if (jf_stor_get(e->st, sy->id, &r) != JF_OK)
		return;
	char dir[4096];
	jf_engine_store_dir(e, JF_SK_OBJECT, r.name, dir, sizeof(dir));
	json_t *res = NULL;
	char *info = result_info(dir, &res);
	bool ok = WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && res &&
		  json_is_true(json_object_get(res, "ok"));
	const char *m = res ? json_string_value(json_object_get(res, "message")) : NULL;
	char msg[1024];
	if (!ok && !(m && m[0])) {
		if (WIFSIGNALED(ws))
			snprintf(msg, sizeof(msg), "the sync was killed by signal %d",
				 WTERMSIG(ws));
		else
			snprintf(msg, sizeof(msg), "the sync failed (exit %d; %.900s/sync.log)",
				 WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, dir);
		m = msg;
	}
	struct src_memo *mm = jf_eng_stor_memo(e, sy->id);
	int64_t now = jf_eng_now(e);
	if (WIFEXITED(ws) && WEXITSTATUS(ws) == SYNC_EXIT_LOCKED) {
		/* another sync of it still holds its lock (one a killed daemon
		 * started, on its way out): still Syncing, tried again soon */
		if (mm) {
			mm->retry_ms = now + SYNC_LOCKED_RETRY;
			mm->locked = true;
		}
		free(info);
		json_decref(res);
		jf_stor_release(&r);
		return;
	}
	jf_eng_step_begin(e);
	if (ok) {
		json_int_t objects = json_integer_value(json_object_get(res, "objects"));
		json_int_t bytes = json_integer_value(json_object_get(res, "bytes"));
		json_int_t fetched = json_integer_value(json_object_get(res, "fetched"));
		json_int_t fbytes = json_integer_value(json_object_get(res, "fetched_bytes"));
		json_int_t removed = json_integer_value(json_object_get(res, "removed"));
		json_int_t skipped = json_integer_value(json_object_get(res, "skipped"));
		double secs = json_number_value(json_object_get(res, "seconds"));
		if (res) {
			json_object_set_new(res, "synced_ms", json_integer(now));
			free(info);
			info = json_dumps(res, JSON_COMPACT);
		}
		jf_stor_set_state(e->st, sy->id, OBJ_READY, m ? m : "", info, now);
		jf_eng_stor_event(
			e, sy->id, "source", "Normal", "Synced",
			"%lld objects, %lld bytes in %.3fs: %lld fetched (%lld bytes), %lld "
			"removed%s%.0lld%s",
			(long long)objects, (long long)bytes, secs, (long long)fetched,
			(long long)fbytes, (long long)removed, skipped ? ", " : "",
			(long long)skipped, skipped ? " unsafe keys skipped" : "");
		if (mm) {
			mm->ok_begun_ms = sy->started_ms;
			mm->backoff_ms = mm->retry_ms = 0;
		}
	} else {
		jf_stor_set_state(e->st, sy->id, OBJ_FAILED, m, NULL, now);
		jf_eng_stor_event(e, sy->id, "source", "Warning", "Failed", "%s", m);
		if (mm) {
			int64_t b = mm->backoff_ms ? mm->backoff_ms * 2 : SYNC_BACKOFF_FIRST;
			mm->backoff_ms = b > SYNC_BACKOFF_MAX ? SYNC_BACKOFF_MAX : b;
			mm->retry_ms = now + mm->backoff_ms;
		}
	}
	jf_eng_step_end(e);
	free(info);
	json_decref(res);
	jf_eng_changed(e, JF_CH_STORE, sy->id, 0, 0, 0, false);
	jf_stor_release(&r);
	jf_eng_schedule(e);
}

static int resume_one(void *ctx, int64_t id, const char *name)
{
	(void)name;
	struct jf_engine *e = ctx;
	struct jf_store_rec r;
	if (jf_stor_get(e->st, id, &r) != JF_OK)
		return 0;
	if (r.state == OBJ_SYNCING)
		jf_eng_stor_sync_start(e, &r, "the daemon restarted during a sync: resuming");
	jf_stor_release(&r);
	return 0;
}

int jf_eng_stor_fd(struct jf_engine *e)
{
	return e->stor ? e->stor->epfd : -1;
}

bool jf_eng_stor_reap(struct jf_engine *e)
{
	struct jf_stor *s = e->stor;
	bool ended = false;
	for (size_t i = 0; s && i < s->nsyncs;) {
		/* its done line: the sync is over (result written, lock let go)
		 * though its process may still be exiting */
		struct sync *sy = &s->syncs[i];
		if (!sy->ended && sy->donefd >= 0) {
			char line[16];
			ssize_t n = read(sy->donefd, line, sizeof(line) - 1);
			if (n >= 0 || errno != EAGAIN)
				done_close(s, sy);
			int code = -1;
			if (n > 0) {
				line[n] = 0;
				char *end;
				long v = strtol(line, &end, 10);
				if (end != line && *end == '\n' && v >= 0 && v < 256)
					code = (int)v;
			}
			if (code >= 0) {
				sy->ended = true;
				struct sync copy = *sy;
				sync_ended(e, &copy, code << 8); /* as WIFEXITED, code */
				ended = true;
				sy = &s->syncs[i]; /* the array did not move: syncs[] is fixed */
			}
		}
		int ws;
		pid_t w = waitpid(sy->pid, &ws, WNOHANG);
		if (w == sy->pid || (w < 0 && errno == ECHILD)) {
			struct sync done = *sy;
			s->syncs[i] = s->syncs[--s->nsyncs];
			if (done.pidfd >= 0) {
				epoll_ctl(s->epfd, EPOLL_CTL_DEL, done.pidfd, NULL);
				close(done.pidfd);
			}
			done_close(s, &done);
			/* ended without a done line (killed, or an early exit) */
			if (!done.ended) {
				sync_ended(e, &done, w < 0 ? (1 << 8) : ws);
				ended = true;
			}
			continue;
		}
		i++;
	}
	return ended;
}

int64_t jf_eng_stor_tick(struct jf_engine *e)
{
	struct jf_stor *s = e->stor;
	if (!s)
		return -1;
	if (!s->restarted_checked) {
		s->restarted_checked = true;
		jf_stor_list(e->st, JF_SK_OBJECT, 0, 1 << 30, resume_one, e);
		jf_eng_stor_measure_start(e);
	}
	jf_eng_stor_measured(e);
	jf_eng_stor_reap(e);
	int64_t next = -1;
	int64_t now = jf_eng_now(e);
	for (size_t i = 0; i < s->nmemo; i++) {
		struct src_memo *m = &s->memo[i];
		if (!m->locked || now < m->retry_ms || jf_eng_stor_sync_of(e, m->id))
			continue;
		m->locked = false;
		m->retry_ms = 0;
		struct jf_store_rec r;
		if (jf_stor_get(e->st, m->id, &r) == JF_OK) {
			jf_eng_stor_sync_start(e, &r, "another sync of it has ended");
			jf_stor_release(&r);
		}
	}
	for (size_t i = 0; i < s->nmemo; i++)
		if (s->memo[i].retry_ms > now && (next < 0 || s->memo[i].retry_ms - now < next))
			next = s->memo[i].retry_ms - now;
	if (s->nsyncs && (next < 0 || next > JF_ENGINE_TICK_MS))
		next = JF_ENGINE_TICK_MS;
	return next;
}

/* ---- groups ---- */

/* The group waits for a sync: flagged (reason: Syncing) with msg. */
static void waits_said(struct jf_engine *e, struct grt *g, const char *msg)
{
	struct jf_group_rec rec;
	if (jf_group_get(e->st, g->id, &rec) != JF_OK)
		return;
	if (strcmp(rec.message, msg) != 0 || !(rec.flags & JF_GF_SYNCING)) {
		jf_group_set_flags(e->st, g->id, rec.flags | JF_GF_SYNCING, msg);
		jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
	}
	jf_group_release(&rec);
	g->syncing_said = true;
}

static bool waits(struct jf_engine *e, struct grt *g, const char *why_sync);

bool jf_eng_stor_waits(struct jf_engine *e, struct grt *g)
{
	return waits(e, g, "a group that mounts it is about to start");
}

/* jf_eng_stor_waits; why_sync: what the Syncing event of a sync it starts says */
static bool waits(struct jf_engine *e, struct grt *g, const char *why_sync)
{
	if (!g->spec || !e->stor)
		return false;
	int64_t now = jf_eng_now(e);
	for (size_t i = 0; i < g->spec->nstorage; i++) {
		const struct jf_storage *st = &g->spec->storage[i];
		if (st->type != JF_STORE_OBJECT)
			continue;
		struct jf_store_rec r;
		char msg[900];
		if (jf_stor_find(e->st, JF_SK_OBJECT, st->name, &r) != JF_OK) {
			snprintf(msg, sizeof(msg),
				 "Syncing: object source %s does not exist any more: make "
				 "/objects/%s again",
				 st->name, st->name);
			waits_said(e, g, msg);
			return true;
		}
		struct src_memo *m = jf_eng_stor_memo(e, r.id);
		bool fresh = m && m->ok_begun_ms && m->ok_begun_ms >= g->sync_after_ms &&
			     r.state == OBJ_READY;
		if (fresh) {
			jf_stor_release(&r);
			continue;
		}
		if (!jf_eng_stor_sync_of(e, r.id) && r.spec[0] &&
		    (!m || !m->retry_ms || now >= m->retry_ms))
			jf_eng_stor_sync_start(e, &r, why_sync);
		struct jf_store_rec cur;
		const char *state = "syncing";
		const char *why = "";
		if (jf_stor_get(e->st, r.id, &cur) == JF_OK) {
			if (cur.state == OBJ_FAILED) {
				state = "failed to sync";
				why = cur.message;
			} else if (cur.state == OBJ_PENDING) {
				state = "has no spec.yaml yet";
			}
		}
		if (m && m->retry_ms > now && cur.state == OBJ_FAILED) {
			char wait[32];
			jf_duration_format((m->retry_ms - now + 999) / 1000, wait, sizeof(wait));
			snprintf(msg, sizeof(msg),
				 "Syncing: object source %s %s (%.600s); trying again in %s",
				 r.name, state, why, wait);
		} else {
			snprintf(msg, sizeof(msg),
				 "Syncing: waiting for object source %s (%s%s%.600s)", r.name,
				 state, why[0] ? ": " : "", why);
		}
		jf_stor_release(&cur);
		jf_stor_release(&r);
		waits_said(e, g, msg);
		return true;
	}
	if (g->syncing_said) {
		g->syncing_said = false;
		struct jf_group_rec rec;
		if (jf_group_get(e->st, g->id, &rec) == JF_OK) {
			if (rec.flags & JF_GF_SYNCING) {
				jf_group_set_flags(e->st, g->id, rec.flags & ~JF_GF_SYNCING, "");
				jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
			}
			jf_group_release(&rec);
		}
	}
	return false;
}

void jf_eng_stor_accepted(struct jf_engine *e, struct grt *g)
{
	bool objects = false;
	for (size_t i = 0; g->spec && i < g->spec->nstorage; i++)
		objects = objects || g->spec->storage[i].type == JF_STORE_OBJECT;
	/* the gates the pass asks before jf_eng_stor_waits (schedule.c:
	 * add_group); a pull back-off cannot be a new group's */
	if (!objects || g->dep_any || g->spec->unit_runtime > 0 || jf_eng_budget_waits(e, g))
		return;
	waits(e, g, "a group that mounts it was accepted");
}
