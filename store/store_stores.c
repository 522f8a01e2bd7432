/*
 * store_stores.c - storage objects (reference 8.3): the rows of shared
 * volumes and object-store sources, which running node mounts which, and
 * their events (store_events.c writes those; a store's events are in no
 * other scope).
 */
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>


enum jf_err jf_stor_create(struct jf_store *st, int kind, const char *name, uint32_t uid,
			   uint32_t gid, int64_t now_ms, int64_t *id)
{
	sqlite3_stmt *s = jf_q(st, Q_STOR_CREATE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int(s, 1, kind);
	jf_q_text(s, 2, name);
	sqlite3_bind_int64(s, 3, uid);
	sqlite3_bind_int64(s, 4, gid);
	sqlite3_bind_int64(s, 5, now_ms);
	enum jf_err rc = jf_q_exec(st, s);
	return rc ? rc : jf_q_last_id(st, id);
}

static enum jf_err row(sqlite3_stmt *s, struct jf_store_rec *r)
{
	memset(r, 0, sizeof(*r));
	if (!JF_STEP_ROW(s)) {
		sqlite3_reset(s);
		return JF_ENOENT;
	}
	r->id = sqlite3_column_int64(s, 0);
	r->kind = sqlite3_column_int(s, 1);
	jf_q_copy(s, 2, r->name, sizeof(r->name));
	r->spec = jf_q_dup(s, 3);
	r->uid = (uint32_t)sqlite3_column_int64(s, 4);
	r->gid = (uint32_t)sqlite3_column_int64(s, 5);
	r->created_ms = sqlite3_column_int64(s, 6);
	r->changed_ms = sqlite3_column_int64(s, 7);
	r->state = sqlite3_column_int(s, 8);
	r->message = jf_q_dup(s, 9);
	r->info = jf_q_dup(s, 10);
	r->events_bytes = sqlite3_column_int64(s, 11);
	sqlite3_reset(s);
	if (!r->spec || !r->message || !r->info) {
		jf_stor_release(r);
		return JF_ENOMEM;
	}
	return JF_OK;
}

enum jf_err jf_stor_get(struct jf_store *st, int64_t id, struct jf_store_rec *r)
{
	sqlite3_stmt *s = jf_q(st, Q_STOR_GET);
	if (!s) {
		memset(r, 0, sizeof(*r));
		return JF_EIO;
	}
	sqlite3_bind_int64(s, 1, id);
	return row(s, r);
}

enum jf_err jf_stor_find(struct jf_store *st, int kind, const char *name, struct jf_store_rec *r)
{
	sqlite3_stmt *s = jf_q(st, Q_STOR_FIND);
	if (!s) {
		memset(r, 0, sizeof(*r));
		return JF_EIO;
	}
	sqlite3_bind_int(s, 1, kind);
	jf_q_text(s, 2, name);
	return row(s, r);
}

void jf_stor_release(struct jf_store_rec *r)
{
	if (!r)
		return;
	free(r->spec);
	free(r->message);
	free(r->info);
	r->spec = r->message = r->info = NULL;
}

enum jf_err jf_stor_set_spec(struct jf_store *st, int64_t id, const char *spec, int64_t now_ms)
{
	sqlite3_stmt *s = jf_q(st, Q_STOR_SET_SPEC);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, spec ? spec : "");
	sqlite3_bind_int64(s, 3, now_ms);
	return jf_q_exec(st, s);
}

enum jf_err jf_stor_set_state(struct jf_store *st, int64_t id, int state, const char *message,
			      const char *info, int64_t now_ms)
{
	sqlite3_stmt *s = jf_q(st, Q_STOR_SET_STATE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int(s, 2, state);
	jf_q_text(s, 3, message);
	jf_q_text(s, 4, info);
	sqlite3_bind_int64(s, 5, now_ms);
	return jf_q_exec(st, s);
}

enum jf_err jf_stor_delete(struct jf_store *st, int64_t id)
{
	enum jf_err rc = jf_store_begin(st);
	if (rc)
		return rc;
	if ((rc = jf_q_exec_id(st, Q_EVENT_DELETE_STORE, id)) ||
	    (rc = jf_q_exec_id(st, Q_STOR_DELETE, id))) {
		jf_store_rollback(st);
		return rc;
	}
	return jf_store_commit(st);
}

enum jf_err jf_stor_list(struct jf_store *st, int kind, int64_t after, int limit,
			 int (*fn)(void *ctx, int64_t id, const char *name), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_STOR_LIST);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int(s, 1, kind);
	sqlite3_bind_int64(s, 2, after);
	sqlite3_bind_int(s, 3, limit);
	while (JF_STEP_ROW(s)) {
		char name[JF_NAME_MAX];
		jf_q_copy(s, 1, name, sizeof(name));
		if (fn(ctx, sqlite3_column_int64(s, 0), name))
			break;
	}
	sqlite3_reset(s);
	return JF_OK;
}

enum jf_err jf_stor_use(struct jf_store *st, int64_t id, int64_t node_id, const char *path,
			int64_t now_ms)
{
	sqlite3_stmt *s = jf_q(st, Q_STOR_USE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, node_id);
	jf_q_text(s, 3, path);
	sqlite3_bind_int64(s, 4, now_ms);
	return jf_q_exec(st, s);
}

enum jf_err jf_stor_unuse(struct jf_store *st, int64_t node_id, int64_t *ids, size_t n, size_t *got)
{
	*got = 0;
	sqlite3_stmt *s = jf_q(st, Q_STOR_USED_BY_NODE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, node_id);
	while (JF_STEP_ROW(s))
		if (*got < n)
			ids[(*got)++] = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	if (!*got)
		return JF_OK;
	return jf_q_exec_id(st, Q_STOR_UNUSE, node_id);
}

enum jf_err jf_stor_users(struct jf_store *st, int64_t id, int (*fn)(void *ctx, const char *path),
			  void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_STOR_USERS);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	while (JF_STEP_ROW(s)) {
		const char *p = (const char *)sqlite3_column_text(s, 0);
		if (fn(ctx, p ? p : ""))
			break;
	}
	sqlite3_reset(s);
	return JF_OK;
}
