/*
 * storage_int.h - what the engine's three storage files share: the
 * storage state (struct jf_stor) and the helpers each lends the others.
 *
 * - storage.c: volumes and object sources as rows and directories
 *   (mkdir, spec.yaml, rmdir, ctl), a spec's storage checked and turned
 *   into mounts, and a node's mounts recorded.
 * - storage_sync.c: the object sources' syncs (jobfs-sync processes),
 *   their ends, their back-off, and the groups that wait for them.
 * - storage_measure.c: the thread that measures volumes with a size, and
 *   the events the tick says of what it found.
 *
 * Private to those three files; the rest of the engine uses engine_int.h.
 */
#ifndef JF_ENGINE_STORAGE_INT_H
#define JF_ENGINE_STORAGE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/engine_int.h"

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

/* storage.c */
void jf_eng_stor_event(struct jf_engine *e, int64_t id, const char *kind, const char *type,
		       const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* The source's memo, made if it has none (NULL: out of memory). */
struct src_memo *jf_eng_stor_memo(struct jf_engine *e, int64_t id);
/* mkdir -p of dir's parent, then dir itself as uid:gid with mode. */
int jf_eng_stor_make_dir(const char *dir, uid_t uid, gid_t gid, mode_t mode);

/* storage_sync.c */
/* The running sync of source id, or NULL: one whose end was acted on
 * (only its process is left to reap) is not. */
struct sync *jf_eng_stor_sync_of(struct jf_engine *e, int64_t id);
/* Starts a sync of r unless one runs or it has no spec; why: what its
 * Syncing event says. */
void jf_eng_stor_sync_start(struct jf_engine *e, const struct jf_store_rec *r, const char *why);
/* Ends sy at once (SIGTERM: jobfs-sync keeps nothing in data/) and
 * forgets it: the source is being removed. */
void jf_eng_stor_sync_kill(struct jf_engine *e, struct sync *sy);
/* Ends every sync, for the engine's end: the next start resumes them. */
void jf_eng_stor_syncs_stop(struct jf_stor *s);

/* storage_measure.c */
/* Starts the measuring thread (the daemon's loop in real time only). */
void jf_eng_stor_measure_start(struct jf_engine *e);
void jf_eng_stor_measure_stop(struct jf_stor *s);
/* The tick: events for volumes that went past their size or back under. */
void jf_eng_stor_measured(struct jf_engine *e);

#endif
