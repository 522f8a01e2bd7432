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
 *
 * This file: the rows and directories (mkdir, spec.yaml, rmdir, ctl), a
 * spec's storage checked and made mounts, a node's mounts recorded.  The
 * syncs are storage_sync.c's, the volumes' measuring storage_measure.c's;
 * what the three share is in storage_int.h.
 */
#include "engine/storage_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "core/names.h"
#include "core/quantity.h"
#include "core/spec.h"
#include "core/storage.h"


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

void jf_eng_stor_free(struct jf_engine *e)
{
	struct jf_stor *s = e->stor;
	if (!s)
		return;
	jf_eng_stor_measure_stop(s);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s->db_path);
	jf_eng_stor_syncs_stop(s);
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

struct src_memo *jf_eng_stor_memo(struct jf_engine *e, int64_t id)
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

void jf_eng_stor_event(struct jf_engine *e, int64_t id, const char *kind, const char *type,
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

int jf_eng_stor_make_dir(const char *dir, uid_t uid, gid_t gid, mode_t mode)
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
		jf_eng_stor_event(
			e, *id, event_object(kind), "Normal", "Created", "%s %s made%s%s",
			kind_word(kind), name,
			kind == JF_SK_VOLUME ? (had ? ", with the files already in " : " in ") : "",
			kind == JF_SK_VOLUME ? dir : "");
	if (!jf_eng_step_end(e) || rc) {
		if (rc == JF_EEXIST)
			return jf_error_set(err, rc, 0, "%s %s exists", kind_word(kind), name);
		return jf_error_set(err, rc ? rc : JF_EIO, 0, "cannot make %s %s: %s",
				    kind_word(kind), name, jf_store_last_error(e->st));
	}
	/* the directory is the volume: made once the row is */
	if (kind == JF_SK_VOLUME && jf_eng_stor_make_dir(dir, uid, gid, 01777) != 0) {
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
		jf_eng_stor_event(e, id, ev, "Warning", "Invalid", "%s", err->msg);
		jf_eng_step_end(e);
		jf_eng_changed(e, JF_CH_STORE, id, 0, 0, 0, false);
		jf_stor_release(&r);
		return rc;
	}
	if (r.kind == JF_SK_OBJECT && jf_eng_stor_sync_of(e, id))
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
		jf_eng_stor_event(e, id, ev, "Normal", "Updated", "volume spec accepted: %s%s",
				  size,
				  v.private_ ? ", private (only its owner and root use it)" : "");
	} else {
		jf_stor_set_state(e->st, id, OBJ_PENDING, "", NULL, jf_eng_now(e));
		jf_eng_stor_event(
			e, id, ev, "Normal", "Updated",
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
			struct src_memo *m = jf_eng_stor_memo(e, id);
			if (m)
				m->backoff_ms = m->retry_ms = 0;
			jf_eng_stor_sync_start(e, &now, "its spec was accepted");
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
		jf_eng_stor_event(e, id, event_object(r.kind), "Warning", "Refused",
				  "rmdir refused (EBUSY): in use by %s", who);
		jf_eng_step_end(e);
		jf_eng_changed(e, JF_CH_STORE, id, 0, 0, 0, false);
		jf_stor_release(&r);
		return rc;
	}
	struct sync *sy = jf_eng_stor_sync_of(e, id);
	if (sy)
		jf_eng_stor_sync_kill(e, sy);
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
	else if (jf_eng_stor_sync_of(e, id))
		rc = jf_error_set(err, JF_EBUSY, 0, "resync: a sync is running already");
	if (rc == JF_OK) {
		struct src_memo *m = jf_eng_stor_memo(e, id);
		if (m)
			m->backoff_ms = m->retry_ms = 0;
		jf_eng_stor_sync_start(e, &r, "resync was asked for");
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

/* ---- a spec's storage, a node's mounts ---- */

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
		jf_eng_stor_event(e, r.id, event_object(kind), "Normal", "Mounted",
				  "mounted %s at %s by %s",
				  st->read_only ? "read-only" : "read-write", st->path, node_path);
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
		jf_eng_stor_event(e, r.id, event_object(r.kind), "Normal", "Unmounted",
				  "unmounted by %s", node_path);
		jf_eng_changed(e, JF_CH_STORE, r.id, 0, 0, 0, false);
		jf_stor_release(&r);
	}
}
