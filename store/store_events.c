/*
 * store_events.c - the append-only event log of every object.
 *
 * An event row holds its finished line and, for each scope it belongs to
 * (queue, group, task, node), the byte offset at which it starts in that
 * scope's `events` file.  Each scope row keeps its total in events_bytes,
 * updated in the same transaction, so the size of an events file is one
 * lookup and a read at any offset is one indexed range scan.
 */
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timefmt.h"

#define EVENT_LINE_MAX 2048

static void bump(struct jf_store *st, enum jf_q q, int64_t id, int64_t len)
{
	if (!id)
		return;
	sqlite3_stmt *s = jf_q(st, q);
	if (!s) {
		st->failed = true;
		return;
	}
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, len);
	jf_q_exec(st, s);
}

/* Copy src into dst replacing newlines and control characters, so one
 * event is always one line. */
static size_t clean_append(char *dst, size_t off, size_t cap, const char *src)
{
	for (; src && *src && off + 1 < cap; src++) {
		unsigned char c = (unsigned char)*src;
		dst[off++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
	}
	return off;
}

enum jf_err jf_event_add(struct jf_store *st, const struct jf_event_scope *sc, int64_t time_ms,
			 const char *type, const char *reason, const char *object,
			 const char *message)
{
	char line[EVENT_LINE_MAX];
	char ts[40];
	jf_time_rfc3339(time_ms, ts, sizeof(ts));
	size_t off = 0;
	const char *parts[] = { ts, type, reason, object && *object ? object : "." };
	for (size_t i = 0; i < 4; i++) {
		off = clean_append(line, off, sizeof(line) - 1, parts[i]);
		line[off++] = ' ';
	}
	off = clean_append(line, off, sizeof(line) - 1, message);
	line[off++] = '\n';
	line[off] = '\0';

	enum jf_err rc = jf_store_begin(st);
	if (rc)
		return rc;
	if (sc->store_id) {
		/* a volume's or object source's: in its own scope only */
		sqlite3_stmt *q = jf_q(st, Q_EVENT_SIZE_STORE);
		if (!q)
			goto fail;
		sqlite3_bind_int64(q, 1, sc->store_id);
		int64_t soff = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
		sqlite3_reset(q);
		if (!(q = jf_q(st, Q_EVENT_INSERT_STORE)))
			goto fail;
		sqlite3_bind_int64(q, 1, sc->store_id);
		sqlite3_bind_int64(q, 2, soff);
		sqlite3_bind_int64(q, 3, (int64_t)off);
		sqlite3_bind_text(q, 4, line, (int)off, SQLITE_TRANSIENT);
		if ((rc = jf_q_exec(st, q)))
			goto fail;
		bump(st, Q_EVENT_BUMP_STORE, sc->store_id, (int64_t)off);
		return jf_store_commit(st);
	}
	sqlite3_stmt *s = jf_q(st, Q_EVENT_SIZES);
	if (!s)
		goto fail;
	sqlite3_bind_int64(s, 1, sc->queue_id);
	sqlite3_bind_int64(s, 2, sc->group_id);
	sqlite3_bind_int64(s, 3, sc->task_id);
	sqlite3_bind_int64(s, 4, sc->node_id);
	int64_t offs[4] = { 0, 0, 0, 0 };
	if (sqlite3_step(s) == SQLITE_ROW)
		for (int i = 0; i < 4; i++)
			offs[i] = sqlite3_column_int64(s, i);
	sqlite3_reset(s);

	s = jf_q(st, Q_EVENT_INSERT);
	if (!s)
		goto fail;
	const int64_t ids[4] = { sc->queue_id, sc->group_id, sc->task_id, sc->node_id };
	for (int i = 0; i < 4; i++) {
		jf_q_id(s, 1 + i, ids[i]);
		if (ids[i])
			sqlite3_bind_int64(s, 5 + i, offs[i]);
		else
			sqlite3_bind_null(s, 5 + i);
	}
	sqlite3_bind_int64(s, 9, (int64_t)off);
	sqlite3_bind_text(s, 10, line, (int)off, SQLITE_TRANSIENT);
	if ((rc = jf_q_exec(st, s)))
		goto fail;
	bump(st, Q_EVENT_BUMP_QUEUE, sc->queue_id, (int64_t)off);
	bump(st, Q_EVENT_BUMP_GROUP, sc->group_id, (int64_t)off);
	bump(st, Q_EVENT_BUMP_TASK, sc->task_id, (int64_t)off);
	bump(st, Q_EVENT_BUMP_NODE, sc->node_id, (int64_t)off);
	return jf_store_commit(st);
fail:
	jf_store_rollback(st);
	return rc ? rc : JF_EIO;
}

enum jf_err jf_event_read(struct jf_store *st, enum jf_scope scope, int64_t id, int64_t off,
			  char *buf, size_t size, size_t *got)
{
	static const enum jf_q qs[] = {
		[JF_SCOPE_QUEUE] = Q_EVENT_READ_QUEUE, [JF_SCOPE_GROUP] = Q_EVENT_READ_GROUP,
		[JF_SCOPE_TASK] = Q_EVENT_READ_TASK,   [JF_SCOPE_NODE] = Q_EVENT_READ_NODE,
		[JF_SCOPE_STORE] = Q_EVENT_READ_STORE,
	};
	*got = 0;
	if (scope == JF_SCOPE_ALL || (size_t)scope >= sizeof(qs) / sizeof(qs[0]))
		return JF_EINVAL;
	while (*got < size) {
		sqlite3_stmt *s = jf_q(st, qs[scope]);
		if (!s)
			return JF_EIO;
		sqlite3_bind_int64(s, 1, id);
		sqlite3_bind_int64(s, 2, off);
		int rows = 0;
		while (*got < size && sqlite3_step(s) == SQLITE_ROW) {
			rows++;
			int64_t start = sqlite3_column_int64(s, 0);
			const char *line = (const char *)sqlite3_column_text(s, 1);
			int64_t len = sqlite3_column_bytes(s, 1);
			if (start > off) /* a hole cannot happen; stop rather than guess */
				break;
			int64_t skip = off - start;
			int64_t n = len - skip;
			if (n > (int64_t)(size - *got))
				n = (int64_t)(size - *got);
			memcpy(buf + *got, line + skip, (size_t)n);
			*got += (size_t)n;
			off += n;
		}
		sqlite3_reset(s);
		if (rows < 256)
			break;
	}
	return JF_OK;
}

enum jf_err jf_event_size(struct jf_store *st, enum jf_scope scope, int64_t id, int64_t *bytes)
{
	struct jf_event_scope sc = { 0 };
	switch (scope) {
	case JF_SCOPE_QUEUE:
		sc.queue_id = id;
		break;
	case JF_SCOPE_GROUP:
		sc.group_id = id;
		break;
	case JF_SCOPE_TASK:
		sc.task_id = id;
		break;
	case JF_SCOPE_NODE:
		sc.node_id = id;
		break;
	case JF_SCOPE_STORE: {
		sqlite3_stmt *q = jf_q(st, Q_EVENT_SIZE_STORE);
		if (!q)
			return JF_EIO;
		sqlite3_bind_int64(q, 1, id);
		*bytes = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
		sqlite3_reset(q);
		return JF_OK;
	}
	default:
		return JF_EINVAL;
	}
	sqlite3_stmt *s = jf_q(st, Q_EVENT_SIZES);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, sc.queue_id);
	sqlite3_bind_int64(s, 2, sc.group_id);
	sqlite3_bind_int64(s, 3, sc.task_id);
	sqlite3_bind_int64(s, 4, sc.node_id);
	*bytes = 0;
	if (sqlite3_step(s) == SQLITE_ROW)
		*bytes = sqlite3_column_int64(s, (int)scope - 1);
	sqlite3_reset(s);
	return JF_OK;
}
