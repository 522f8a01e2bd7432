/*
 * storage.c - volumes and object sources (reference 8.3) in the engine.
 *
 * DESIGN
 *
 * - Both are rows of the store (store.h: jf_stor_*), made by mkdir, given
 *   a spec by spec.yaml, removed by rmdir; their events are their own.
 *   Every change is written in a step before the tree hears of it.
 * - A volume is a directory, VOLUMES/<name> (STATE/volumes, or --volumes
 *   on Slurm, where the nodes share it), made with the volume: its
 *   maker's, 01777 (everyone who may use it writes, each owns what it
 *   writes, as in /tmp) or 0700 when private.  rmdir moves it to the
 *   trash.  Nodes bind it read-write (read_only: read-only).
 * - An object source is a cache, STATE/objects/<name>: data/ (the mirror,
 *   bound read-only into nodes), manifest, partial/, progress,
 *   result.json, written by tools/jobfs-sync (objstore/sync.h), a child
 *   of the daemon that reads the credentials with the spec writer's
 *   rights.  The engine never reads an object or a credential.  It starts
 *   a sync when a spec is accepted, on `resync`, and when a group that
 *   mounts the source wants to start a node and the source has not
 *   synced since the group was accepted (so each group starts on an
 *   up-to-date cache: one listing, no GET when nothing changed); a group
 *   that nothing else holds back starts that sync in the step that
 *   accepts it.  A sync is posix_spawned (jobfs-sync --parent: it dies
 *   with the daemon); the line it writes on its done pipe (--done-fd)
 *   once its result is written, else its pidfd, both in the loop's
 *   epoll, say when it ends, and its end writes state, figures and a
 *   `Synced` or Warning `Failed` event in one step with the pass that
 *   starts what waited for it.  A failed sync is tried again for waiting
 *   groups after a back-off (Kubernetes' pull back-off: 10 s doubling to
 *   5 min).
 * - A restart: a source left Syncing (its sync died with the daemon or
 *   was killed) is synced again at the first tick; jobfs-sync resumes
 *   its partial downloads, and the last manifest stays valid until the
 *   new one replaces it whole.
 * - Mounts: the step that starts a node records which volumes and
 *   sources it mounts (store_use: `used_by`, rmdir's EBUSY) with a
 *   `Mounted` event; the step that ends it lets them go (`Unmounted`).
 */
#include "engine/engine_int.h"

#include "backends/child.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/shimproto.h"
#include "core/names.h"
#include "core/quantity.h"
#include "core/spec.h"
#include "core/storage.h"


#define STOR_MAX_SYNCS     64
#define SYNC_BACKOFF_FIRST 10000
#define SYNC_BACKOFF_MAX   300000
#define SYNC_EXIT_LOCKED   3   /* jobfs-sync: another sync holds DIR/lock */
#define STOR_MAX_FOUND     256 /* volumes with a size measured per round */
#define VOLUME_CHECK_MS    30000
#define SYNC_LOCKED_RETRY  500 /* ms */

enum { OBJ_PENDING = 0, OBJ_SYNCING = 1, OBJ_READY = 2, OBJ_FAILED = 3 };

struct sync {
	int64_t id;
	pid_t pid;
	int pidfd;          /* in the stor's epoll, -1 if none */
	int donefd;         /* its --done-fd's read end, in the epoll; -1 once read */
	bool ended;         /* its done line acted on: only to be reaped now */
	int64_t started_ms; /* engine clock */
};

struct src_memo { /* per source, in memory: when its last sync began and ended */
	int64_t id;
	int64_t ok_begun_ms;          /* when the last good sync began */
	int64_t backoff_ms, retry_ms; /* after a failure */
	bool locked; /* the last try found another sync running: try again at retry_ms */
};

/* A volume measured past its size by the measuring thread, for the tick. */
struct over {
	int64_t id;
	int64_t used, size;
	bool over;
};

struct jf_stor {
	int epfd; /* the syncs' pidfds and done pipes: readable when one has ended */
	char *sync_tool;
	char *volumes_dir;
	/* the volumes' measuring thread (volumes_measure): it walks each
	 * volume with a size, off the loop, on a read-only connection of its
	 * own, and leaves what it found in found[] for the tick to say */
	pthread_t measurer;
	bool measuring, quit;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int64_t period_ms;
	char *db_path;
	struct over found[STOR_MAX_FOUND];
	size_t nfound;
	struct over said[STOR_MAX_FOUND]; /* what the events said last, per volume */
	size_t nsaid;
	struct sync syncs[STOR_MAX_SYNCS];
	size_t nsyncs;
	struct src_memo *memo;
	size_t nmemo, capmemo;
	bool restarted_checked;
};

static void stor_event(struct jf_engine *e, int64_t id, const char *kind, const char *type,
		       const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

enum jf_err jf_eng_stor_init(struct jf_engine *e, const struct jf_engine_config *cfg)
{
	struct jf_stor *s = calloc(1, sizeof(*s));
	if (!s)
		return JF_ENOMEM;
	char def[4096];
	snprintf(def, sizeof(def), "%s/volumes", e->state_dir);
	s->volumes_dir = strdup(cfg->volumes_dir ? cfg->volumes_dir : def);
	s->sync_tool = cfg->sync_tool ? strdup(cfg->sync_tool) : NULL;
	if (!s->volumes_dir || (cfg->sync_tool && !s->sync_tool)) {
		free(s->volumes_dir);
		free(s->sync_tool);
		free(s);
		return JF_ENOMEM;
	}
	e->stor = s;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->period_ms = cfg->evict_check_ms > 0 ? cfg->evict_check_ms : VOLUME_CHECK_MS;
	return JF_OK;
}

struct measure_ctx {
	struct jf_stor *s;
	struct jf_store *st;
	size_t n;
	struct over got[STOR_MAX_FOUND];
};

static int measure_one(void *ctx, int64_t id, const char *name)
{
	struct measure_ctx *m = ctx;
	struct jf_store_rec r;
	if (m->n == STOR_MAX_FOUND || jf_stor_get(m->st, id, &r) != JF_OK)
		return 0;
	struct jf_volume_spec v = { 0 };
	struct jf_error err;
	if (r.spec[0])
		jf_volume_spec_parse(r.spec, strlen(r.spec), &v, &err);
	jf_stor_release(&r);
	if (v.size <= 0)
		return 0;
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/%s", m->s->volumes_dir, name);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* bounded: counted only until past the size */
	int64_t used = jf_shim_tree_usage(fd, v.size);
	close(fd);
	m->got[m->n++] = (struct over){ id, used, v.size, used > v.size };
	return 0;
}

static void *volumes_measure(void *arg)
{
	struct jf_stor *s = arg;
	struct jf_store *st = NULL;
	struct jf_error err;
	if (jf_store_open_reader(s->db_path, &st, &err) != JF_OK) {
		fprintf(stderr, "jobfs: volumes are not measured: %s\n", err.msg);
		return NULL;
	}
	struct measure_ctx *m = calloc(1, sizeof(*m));
	pthread_mutex_lock(&s->mu);
	while (!s->quit && m) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += s->period_ms / 1000;
		until.tv_nsec += (s->period_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (!s->quit && pthread_cond_timedwait(&s->cv, &s->mu, &until) == 0)
			;
		if (s->quit)
			break;
		pthread_mutex_unlock(&s->mu);
		m->s = s;
		m->st = st;
		m->n = 0;
		jf_store_read_begin(st);
		jf_stor_list(st, JF_SK_VOLUME, 0, STOR_MAX_FOUND, measure_one, m);
		jf_store_read_end(st);
		pthread_mutex_lock(&s->mu);
		memcpy(s->found, m->got, m->n * sizeof(*m->got));
		s->nfound = m->n;
	}
	pthread_mutex_unlock(&s->mu);
	free(m);
	jf_store_close(st);
	return NULL;
}

/* The tick: a volume that went past its size (or back under) since the
 * events last said so gets an event. */
static void volumes_said(struct jf_engine *e)
{
	struct jf_stor *s = e->stor;
	struct over found[STOR_MAX_FOUND];
	size_t n;
	pthread_mutex_lock(&s->mu);
	n = s->nfound;
	memcpy(found, s->found, n * sizeof(*found));
	s->nfound = 0;
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (k < s->nsaid && s->said[k].id != found[i].id)
			k++;
		bool was = k < s->nsaid && s->said[k].over;
		if (found[i].over == was)
			continue;
		if (k == s->nsaid) {
			if (s->nsaid == STOR_MAX_FOUND)
				continue;
			s->nsaid++;
		}
		s->said[k] = found[i];
		char used[32], size[32];
		jf_mem_format(found[i].used, used, sizeof(used));
		jf_mem_format(found[i].size, size, sizeof(size));
		jf_eng_step_begin(e);
		if (found[i].over)
			stor_event(e, found[i].id, "volume", "Warning", "SizeExceeded",
				   "used is past its size %s (%s counted before the count "
				   "stopped)",
				   size, used);
		else
			stor_event(e, found[i].id, "volume", "Normal", "SizeOK",
				   "used is back under its size %s", size);
		jf_eng_step_end(e);
		jf_eng_changed(e, JF_CH_STORE, found[i].id, 0, 0, 0, false);
	}
}

void jf_eng_stor_free(struct jf_engine *e)
{
	struct jf_stor *s = e->stor;
	if (!s)
		return;
	if (s->measuring) {
		pthread_mutex_lock(&s->mu);
		s->quit = true;
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->measurer, NULL);
	}
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s->db_path);
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
	if (s->epfd >= 0)
		close(s->epfd);
	free(s->sync_tool);
	free(s->volumes_dir);
	free(s->memo);
	free(s);
	e->stor = NULL;
}

void jf_engine_store_dir(struct jf_engine *e, int kind, const char *name, char *buf, size_t n)
{
	if (kind == JF_SK_VOLUME)
		snprintf(buf, n, "%s/%s", e->stor->volumes_dir, name);
	else
		snprintf(buf, n, "%s/objects/%s", e->state_dir, name);
}

static struct src_memo *memo(struct jf_engine *e, int64_t id)
{
	struct jf_stor *s = e->stor;
	for (size_t i = 0; i < s->nmemo; i++)
		if (s->memo[i].id == id)
			return &s->memo[i];
	if (s->nmemo == s->capmemo) {
		size_t cap = s->capmemo ? s->capmemo * 2 : 16;
		void *p = realloc(s->memo, cap * sizeof(*s->memo));
		if (!p)
			return NULL;
		s->memo = p;
		s->capmemo = cap;
	}
	s->memo[s->nmemo] = (struct src_memo){ .id = id };
	return &s->memo[s->nmemo++];
}

static void forget(struct jf_engine *e, int64_t id)
{
	struct jf_stor *s = e->stor;
	for (size_t i = 0; i < s->nmemo; i++)
		if (s->memo[i].id == id) {
			s->memo[i] = s->memo[--s->nmemo];
			return;
		}
}

/* The running sync of source id: one whose end was acted on (only its
 * process is left to reap) is not. */
static struct sync *sync_of(struct jf_engine *e, int64_t id)
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

static void stor_event(struct jf_engine *e, int64_t id, const char *kind, const char *type,
		       const char *reason, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct jf_event_scope sc = { .store_id = id };
	jf_event_add(e->st, &sc, jf_eng_now(e), type, reason, kind, msg);
}

/* The store kind a volume or object entry of a spec names. */
static int entry_kind(const struct jf_storage *st)
{
	return st->type == JF_STORE_VOLUME ? JF_SK_VOLUME : JF_SK_OBJECT;
}

/* The OBJECT word of a kind's events. */
static const char *event_object(int kind)
{
	return kind == JF_SK_VOLUME ? "volume" : "source";
}

static const char *kind_word(int kind)
{
	return kind == JF_SK_VOLUME ? "volume" : "object source";
}

/* ---- mkdir, spec, rmdir, ctl ---- */

static bool admin(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* mkdir -p of dir's parent, then dir itself as uid:gid with mode. */
static int make_dir(const char *dir, uid_t uid, gid_t gid, mode_t mode)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s", dir);
	for (char *q = p + 1; *q; q++)
		if (*q == '/') {
			*q = '\0';
			if (mkdir(p, 0755) != 0 && errno != EEXIST)
				return -1;
			*q = '/';
		}
	if (mkdir(p, mode) != 0 && errno != EEXIST)
		return -1;
	if (geteuid() == 0 && chown(p, uid, gid) != 0)
		return -1;
	return chmod(p, mode);
}

static enum jf_err req_mkstore(struct jf_engine *e, int kind, const char *name, uid_t uid,
			       gid_t gid, int64_t *id, struct jf_error *err)
{
	if (!jf_name_valid(name, err))
		return JF_EINVAL;
	if (geteuid() != 0 && !admin(uid))
		return jf_error_set(err, JF_EACCES, 0,
				    "cannot make a %s for uid %u: this daemon runs as uid %u, "
				    "not root",
				    kind_word(kind), (unsigned)uid, (unsigned)geteuid());
	char dir[4096];
	jf_engine_store_dir(e, kind, name, dir, sizeof(dir));
	/* a volume whose directory is there (--volumes on Slurm, a step
	 * that did not commit) takes it over with its files */
	struct stat sb;
	bool had = kind == JF_SK_VOLUME && lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode);
	jf_eng_step_begin(e);
	enum jf_err rc = jf_stor_create(e->st, kind, name, uid, gid, jf_eng_now(e), id);
	if (rc == JF_OK)
		rc = jf_stor_set_state(e->st, *id, kind == JF_SK_VOLUME ? OBJ_READY : OBJ_PENDING,
				       kind == JF_SK_VOLUME
					       ? ""
					       : "no spec.yaml yet: write endpoint, bucket and "
						 "prefix",
				       NULL, jf_eng_now(e));
	if (rc == JF_OK)
		stor_event(e, *id, event_object(kind), "Normal", "Created", "%s %s made%s%s",
			   kind_word(kind), name,
			   kind == JF_SK_VOLUME ? (had ? ", with the files already in " : " in ")
						: "",
			   kind == JF_SK_VOLUME ? dir : "");
	if (!jf_eng_step_end(e) || rc) {
		if (rc == JF_EEXIST)
			return jf_error_set(err, rc, 0, "%s %s exists", kind_word(kind), name);
		return jf_error_set(err, rc ? rc : JF_EIO, 0, "cannot make %s %s: %s",
				    kind_word(kind), name, jf_store_last_error(e->st));
	}
	/* the directory is the volume: made once the row is */
	if (kind == JF_SK_VOLUME && make_dir(dir, uid, gid, 01777) != 0) {
		int en = errno;
		jf_stor_delete(e->st, *id);
		return jf_error_set(err, JF_EIO, en, "cannot make the volume's directory %s: %s",
				    dir, strerror(en));
	}
	jf_eng_changed(e, JF_CH_STORE, *id, 0, 0, 0, true);
	return JF_OK;
}

enum jf_err jf_engine_mkstore(struct jf_engine *e, int kind, const char *name, uid_t uid, gid_t gid,
			      int64_t *id, struct jf_error *err)
{
	jf_eng_enter(e);
	enum jf_err rc = req_mkstore(e, kind, name, uid, gid, id, err);
	jf_eng_leave(e);
	return rc;
}

static void start_sync(struct jf_engine *e, const struct jf_store_rec *r, const char *why);

/* Only spaces and comments: no spec at all. */
static bool blank(const char *t, size_t n)
{
	bool comment = false;
	for (size_t i = 0; i < n; i++) {
		if (t[i] == '\n')
			comment = false;
		else if (t[i] == '#')
			comment = true;
		else if (!comment && t[i] != ' ' && t[i] != '\t' && t[i] != '\r')
			return false;
	}
	return true;
}

static enum jf_err req_store_spec(struct jf_engine *e, int64_t id, const char *text, size_t len,
				  struct jf_error *err)
{
	struct jf_store_rec r;
	if (jf_stor_get(e->st, id, &r) != JF_OK)
		return jf_error_set(err, JF_ENOENT, 0, "no such volume or object source");
	/* a blank write over a blank spec (a shell's `>` opens, truncates
	 * and may flush before it writes) changes nothing and says nothing */
	if (blank(text, len) && blank(r.spec, strlen(r.spec))) {
		jf_stor_release(&r);
		return JF_OK;
	}
	enum jf_err rc;
	struct jf_volume_spec v = { 0 };
	struct jf_objsrc_spec o = { 0 };
	if (r.kind == JF_SK_VOLUME)
		rc = jf_volume_spec_parse(text, len, &v, err);
	else
		rc = jf_objsrc_spec_parse(text, len, &o, err);
	const char *ev = event_object(r.kind);
	if (rc) {
		char msg[JF_ERRMSG_MAX + 96];
		snprintf(msg, sizeof(msg),
			 "spec.yaml refused: %s; the %s keeps its last accepted spec", err->msg,
			 kind_word(r.kind));
		jf_eng_step_begin(e);
		jf_stor_set_state(e->st, id, r.state, msg, NULL, jf_eng_now(e));
		stor_event(e, id, ev, "Warning", "Invalid", "%s", err->msg);
		jf_eng_step_end(e);
		jf_eng_changed(e, JF_CH_STORE, id, 0, 0, 0, false);
		jf_stor_release(&r);
		return rc;
	}
	if (r.kind == JF_SK_OBJECT && sync_of(e, id))
		rc = jf_error_set(err, JF_EBUSY, 0,
				  "the object source is syncing: write its spec once the sync "
				  "has ended (or rmdir it)");
	if (rc) {
		jf_stor_release(&r);
		jf_objsrc_spec_release(&o);
		return rc;
	}
	char *copy = strndup(text, len);
	jf_eng_step_begin(e);
	jf_stor_set_spec(e->st, id, copy ? copy : "", jf_eng_now(e));
	if (r.kind == JF_SK_VOLUME) {
		char size[32] = "no size limit";
		if (v.size)
			jf_mem_format(v.size, size, sizeof(size));
		jf_stor_set_state(e->st, id, OBJ_READY, "", NULL, jf_eng_now(e));
		stor_event(e, id, ev, "Normal", "Updated", "volume spec accepted: %s%s", size,
			   v.private_ ? ", private (only its owner and root use it)" : "");
	} else {
		jf_stor_set_state(e->st, id, OBJ_PENDING, "", NULL, jf_eng_now(e));
		stor_event(e, id, ev, "Normal", "Updated",
			   "object source spec accepted: %s bucket %s prefix \"%s\" region %s%s",
			   o.endpoint, o.bucket, o.prefix, o.region,
			   o.credentials ? " with credentials" : ", anonymous");
	}
	bool ok = jf_eng_step_end(e);
	free(copy);
	if (!ok) {
		jf_stor_release(&r);
		jf_objsrc_spec_release(&o);
		return jf_error_set(err, JF_EIO, 0, "cannot store the spec");
	}
	if (r.kind == JF_SK_VOLUME) {
		char dir[4096];
		jf_engine_store_dir(e, JF_SK_VOLUME, r.name, dir, sizeof(dir));
		chmod(dir, v.private_ ? 0700 : 01777);
	} else {
		struct jf_store_rec now;
		if (jf_stor_get(e->st, id, &now) == JF_OK) {
			struct src_memo *m = memo(e, id);
			if (m)
				m->backoff_ms = m->retry_ms = 0;
			start_sync(e, &now, "its spec was accepted");
			jf_stor_release(&now);
		}
	}
	jf_eng_changed(e, JF_CH_STORE, id, 0, 0, 0, false);
	jf_stor_release(&r);
	jf_objsrc_spec_release(&o);
	return JF_OK;
}

enum jf_err jf_engine_store_spec(struct jf_engine *e, int64_t id, const char *text, size_t len,
				 struct jf_error *err)
{
	jf_eng_enter(e);
	enum jf_err rc = req_store_spec(e, id, text, len, err);
	jf_eng_leave(e);
	return rc;
}

/* Does a live group name store r?  Its name into who. */
static int collect_active(void *ctx, int64_t id)
{
	struct ids {
		int64_t *v;
		size_t n, cap;
	} *c = ctx;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		int64_t *p = realloc(c->v, cap * sizeof(*p));
		if (!p)
			return 1;
		c->v = p;
		c->cap = cap;
	}
	c->v[c->n++] = id;
	return 0;
}

/* Does a live group name store r?  Its path into who. */
static bool named_by_live(struct jf_engine *e, const struct jf_store_rec *r, char *who, size_t n)
{
	struct ids {
		int64_t *v;
		size_t n, cap;
	} c = { 0 };
	jf_group_list_active(e->st, collect_active, &c);
	bool found = false;
	for (size_t j = 0; j < c.n && !found; j++) {
		struct grt *g = jf_eng_group(e, c.v[j]);
		if (!g || !g->spec)
			continue;
		for (size_t s = 0; s < g->spec->nstorage; s++) {
			const struct jf_storage *st = &g->spec->storage[s];
			int kind = st->type == JF_STORE_VOLUME   ? JF_SK_VOLUME
				   : st->type == JF_STORE_OBJECT ? JF_SK_OBJECT
								 : 0;
			if (kind == r->kind && st->name && !strcmp(st->name, r->name)) {
				if (g->queue[0])
					snprintf(who, n, "queues/%s/groups/%s", g->queue,
						 g->dirname);
				else
					snprintf(who, n, "tasks/%s", g->dirname);
				found = true;
				break;
			}
		}
	}
	free(c.v);
	return found;
}

static int first_user(void *ctx, const char *path)
{
	snprintf(ctx, 512, "%s", path);
	return 1;
}

static enum jf_err req_rmstore(struct jf_engine *e, int64_t id, struct jf_error *err)
{
	struct jf_store_rec r;
	if (jf_stor_get(e->st, id, &r) != JF_OK)
		return jf_error_set(err, JF_ENOENT, 0, "no such volume or object source");
	char who[512] = "";
	jf_stor_users(e->st, id, first_user, who);
	if (who[0] || named_by_live(e, &r, who, sizeof(who))) {
		enum jf_err rc = jf_error_set(err, JF_EBUSY, 0, "%s %s is in use by %s",
					      kind_word(r.kind), r.name, who);
		jf_eng_step_begin(e);
		stor_event(e, id, event_object(r.kind), "Warning", "Refused",
			   "rmdir refused (EBUSY): in use by %s", who);
		jf_eng_step_end(e);
		jf_eng_changed(e, JF_CH_STORE, id, 0, 0, 0, false);
		jf_stor_release(&r);
		return rc;
	}
	struct sync *sy = sync_of(e, id);
	if (sy) {
		/* jobfs-sync ends at once on SIGTERM, keeping nothing in data/ */
		kill(sy->pid, SIGTERM);
		waitpid(sy->pid, NULL, 0);
		if (sy->pidfd >= 0) {
			epoll_ctl(e->stor->epfd, EPOLL_CTL_DEL, sy->pidfd, NULL);
			close(sy->pidfd);
		}
		done_close(e->stor, sy);
		*sy = e->stor->syncs[--e->stor->nsyncs];
	}
	char dir[4096];
	jf_engine_store_dir(e, r.kind, r.name, dir, sizeof(dir));
	jf_eng_step_begin(e);
	enum jf_err rc = jf_stor_delete(e->st, id);
	/* the files go with it, after the step: the trash removes them */
	char gone[4200];
	snprintf(gone, sizeof(gone), "%s.removed-%lld", dir, (long long)id);
	bool moved = rc == JF_OK && rename(dir, gone) == 0;
	if (moved)
		jf_eng_trash(e, JF_TRASH_TREE, gone);
	if (!jf_eng_step_end(e) || rc) {
		if (moved)
			rename(gone, dir);
		jf_stor_release(&r);
		return jf_error_set(err, rc ? rc : JF_EIO, 0, "cannot remove it: %s",
				    jf_store_last_error(e->st));
	}
	forget(e, id);
	jf_eng_changed(e, JF_CH_STORE, id, 0, 0, 0, true);
	jf_stor_release(&r);
	return JF_OK;
}

enum jf_err jf_engine_rmstore(struct jf_engine *e, int64_t id, struct jf_error *err)
{
	jf_eng_enter(e);
	enum jf_err rc = req_rmstore(e, id, err);
	jf_eng_leave(e);
	return rc;
}

static enum jf_err req_store_ctl(struct jf_engine *e, int64_t id, const char *verb,
				 struct jf_error *err)
{
	struct jf_store_rec r;
	if (jf_stor_get(e->st, id, &r) != JF_OK)
		return jf_error_set(err, JF_ENOENT, 0, "no such object source");
	enum jf_err rc = JF_OK;
	if (r.kind != JF_SK_OBJECT || strcmp(verb, "resync") != 0)
		rc = jf_error_set(err, JF_EINVAL, 0,
				  "unknown verb \"%.32s\": an object source knows resync", verb);
	else if (!r.spec[0])
		rc = jf_error_set(err, JF_EBUSY, 0,
				  "resync: no spec.yaml yet (endpoint, bucket, prefix)");
	else if (sync_of(e, id))
		rc = jf_error_set(err, JF_EBUSY, 0, "resync: a sync is running already");
	if (rc == JF_OK) {
		struct src_memo *m = memo(e, id);
		if (m)
			m->backoff_ms = m->retry_ms = 0;
		start_sync(e, &r, "resync was asked for");
	}
	jf_stor_release(&r);
	return rc;
}

enum jf_err jf_engine_store_ctl(struct jf_engine *e, int64_t id, const char *verb,
				struct jf_error *err)
{
	jf_eng_enter(e);
	enum jf_err rc = req_store_ctl(e, id, verb, err);
	jf_eng_leave(e);
	return rc;
}

/* ---- syncs ---- */

static void sync_failed_now(struct jf_engine *e, const struct jf_store_rec *r, const char *msg)
{
	jf_eng_step_begin(e);
	jf_stor_set_state(e->st, r->id, OBJ_FAILED, msg, NULL, jf_eng_now(e));
	stor_event(e, r->id, "source", "Warning", "Failed", "%s", msg);
	jf_eng_step_end(e);
	jf_eng_changed(e, JF_CH_STORE, r->id, 0, 0, 0, false);
}

static void start_sync(struct jf_engine *e, const struct jf_store_rec *r, const char *why)
{
	struct jf_stor *s = e->stor;
	if (sync_of(e, r->id) || !r->spec[0])
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
	make_dir(dir, geteuid(), getegid(), 0755);
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
	struct src_memo *m = memo(e, r->id);
	if (m)
		jf_eng_step_begin(e);
	jf_stor_set_state(e->st, r->id, OBJ_SYNCING, "", NULL, jf_eng_now(e));
	stor_event(e, r->id, "source", "Normal", "Syncing", "syncing s3 %s/%s/%s (%s): %s",
		   o.endpoint, o.bucket, o.prefix, o.credentials ? "signed" : "anonymous", why);
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
	struct src_memo *mm = memo(e, sy->id);
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
		stor_event(e, sy->id, "source", "Normal", "Synced",
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
		stor_event(e, sy->id, "source", "Warning", "Failed", "%s", m);
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
		start_sync(e, &r, "the daemon restarted during a sync: resuming");
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
		/* the daemon's loop in real time: volumes are measured */
		if (e->loop && !jf_loop_virtual(e->loop) && jf_store_path(e->st) &&
		    (s->db_path = strdup(jf_store_path(e->st))) &&
		    pthread_create(&s->measurer, NULL, volumes_measure, s) == 0)
			s->measuring = true;
	}
	volumes_said(e);
	jf_eng_stor_reap(e);
	int64_t next = -1;
	int64_t now = jf_eng_now(e);
	for (size_t i = 0; i < s->nmemo; i++) {
		struct src_memo *m = &s->memo[i];
		if (!m->locked || now < m->retry_ms || sync_of(e, m->id))
			continue;
		m->locked = false;
		m->retry_ms = 0;
		struct jf_store_rec r;
		if (jf_stor_get(e->st, m->id, &r) == JF_OK) {
			start_sync(e, &r, "another sync of it has ended");
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
		struct src_memo *m = memo(e, r.id);
		bool fresh = m && m->ok_begun_ms && m->ok_begun_ms >= g->sync_after_ms &&
			     r.state == OBJ_READY;
		if (fresh) {
			jf_stor_release(&r);
			continue;
		}
		if (!sync_of(e, r.id) && r.spec[0] && (!m || !m->retry_ms || now >= m->retry_ms))
			start_sync(e, &r, why_sync);
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

enum jf_err jf_eng_stor_check(struct jf_engine *e, const struct jf_spec *s, uid_t uid,
			      struct jf_error *err)
{
	for (size_t i = 0; i < s->nstorage; i++) {
		const struct jf_storage *st = &s->storage[i];
		if (st->type == JF_STORE_EMPTYDIR)
			continue;
		int kind = entry_kind(st);
		struct jf_store_rec r;
		if (jf_stor_find(e->st, kind, st->name, &r) != JF_OK)
			return jf_error_set(err, JF_EINVAL, s->storage_line,
					    "key 'storage[%zu].name': no %s %s: make it first with "
					    "mkdir /%s/%s",
					    i, kind_word(kind), st->name,
					    kind == JF_SK_VOLUME ? "volumes" : "objects", st->name);
		bool priv = false;
		if (kind == JF_SK_VOLUME && r.spec[0]) {
			struct jf_volume_spec v;
			struct jf_error perr;
			if (jf_volume_spec_parse(r.spec, strlen(r.spec), &v, &perr) == JF_OK)
				priv = v.private_;
		}
		uid_t owner = r.uid;
		jf_stor_release(&r);
		if (priv && uid != owner && !admin(uid))
			return jf_error_set(
				err, JF_EACCES, s->storage_line,
				"key 'storage[%zu].name': volume %s is private to uid %u", i,
				st->name, (unsigned)owner);
	}
	return JF_OK;
}

ssize_t jf_eng_stor_mounts(struct jf_engine *e, const struct jf_spec *s, struct jf_mount *out,
			   char (*bufs)[4096], size_t n, char *why, size_t whylen)
{
	size_t k = 0;
	for (size_t i = 0; i < s->nstorage && k < n; i++) {
		const struct jf_storage *st = &s->storage[i];
		struct jf_mount *m = &out[k];
		memset(m, 0, sizeof(*m));
		m->path = st->path;
		m->read_only = st->read_only;
		if (st->type == JF_STORE_EMPTYDIR) {
			m->type = JF_MOUNT_EMPTYDIR;
			m->size_bytes = st->size;
			m->memory = st->memory;
			if (st->name) {
				m->name = st->name;
			} else {
				/* the path's last component, as a name */
				const char *b = strrchr(st->path, '/');
				snprintf(bufs[k], sizeof(bufs[k]), "%.200s-%zu",
					 b && b[1] ? b + 1 : "scratch", i);
				m->name = bufs[k];
			}
			k++;
			continue;
		}
		int kind = entry_kind(st);
		struct jf_store_rec r;
		if (jf_stor_find(e->st, kind, st->name, &r) != JF_OK) {
			snprintf(why, whylen, "%s %s does not exist any more", kind_word(kind),
				 st->name);
			return -1;
		}
		jf_stor_release(&r);
		m->type = kind == JF_SK_VOLUME ? JF_MOUNT_VOLUME : JF_MOUNT_OBJECT;
		m->name = st->name;
		jf_engine_store_dir(e, kind, st->name, bufs[k], sizeof(bufs[k]));
		if (kind == JF_SK_OBJECT) {
			size_t l = strlen(bufs[k]);
			snprintf(bufs[k] + l, sizeof(bufs[k]) - l, "/data");
			mkdir(bufs[k], 0755);
			m->read_only = true;
		}
		m->source = bufs[k];
		k++;
	}
	return (ssize_t)k;
}

/* The node's path in the tree, as used_by and the events name it. */
static void node_path_of(const struct grt *g, int64_t task_idx, int64_t node_idx, char *buf,
			 size_t n)
{
	char obj[160];
	jf_eng_task_object(g, task_idx, node_idx, obj, sizeof(obj));
	if (g->queue[0])
		snprintf(buf, n, "queues/%s/groups/%s/%s", g->queue, g->dirname, obj);
	else
		snprintf(buf, n, "tasks/%s/%s", g->dirname, obj);
}

void jf_eng_stor_mounted(struct jf_engine *e, const struct grt *g, int64_t task_idx,
			 int64_t node_idx, int64_t node_id)
{
	const struct jf_spec *s = g->spec;
	char node_path[400];
	node_path_of(g, task_idx, node_idx, node_path, sizeof(node_path));
	for (size_t i = 0; i < s->nstorage; i++) {
		const struct jf_storage *st = &s->storage[i];
		if (st->type == JF_STORE_EMPTYDIR)
			continue;
		int kind = entry_kind(st);
		struct jf_store_rec r;
		if (jf_stor_find(e->st, kind, st->name, &r) != JF_OK)
			continue;
		jf_stor_use(e->st, r.id, node_id, node_path, jf_eng_now(e));
		stor_event(e, r.id, event_object(kind), "Normal", "Mounted",
			   "mounted %s at %s by %s", st->read_only ? "read-only" : "read-write",
			   st->path, node_path);
		jf_eng_changed(e, JF_CH_STORE, r.id, 0, 0, 0, false);
		jf_stor_release(&r);
	}
}

void jf_eng_stor_unmounted(struct jf_engine *e, const struct grt *g, int64_t task_idx,
			   int64_t node_idx, int64_t node_id)
{
	char node_path[400];
	node_path_of(g, task_idx, node_idx, node_path, sizeof(node_path));
	int64_t ids[32];
	size_t n = 0;
	if (jf_stor_unuse(e->st, node_id, ids, 32, &n) != JF_OK)
		return;
	for (size_t i = 0; i < n; i++) {
		struct jf_store_rec r;
		if (jf_stor_get(e->st, ids[i], &r) != JF_OK)
			continue;
		stor_event(e, r.id, event_object(r.kind), "Normal", "Unmounted", "unmounted by %s",
			   node_path);
		jf_eng_changed(e, JF_CH_STORE, r.id, 0, 0, 0, false);
		jf_stor_release(&r);
	}
}
