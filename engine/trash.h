/*
 * trash.h - removing what the store's trash names (store.h: jf_trash_*),
 * never outside the state directory.
 *
 * Pure file work, no engine: a path is acted on only when it is a path
 * strictly below state_dir without "." or ".." components; nothing is
 * followed (a symlink in a task's work directory is removed, never its
 * target) and nothing on another filesystem is entered.  Each removal is
 * idempotent: what is gone already is not an error.
 */
#ifndef JF_TRASH_H
#define JF_TRASH_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

/* Whether path lies strictly below state_dir, without . or .. parts. */
bool jf_trash_path_ok(const char *state_dir, const char *path);

/* Carry out one trash row. *freed (may be NULL) grows by the bytes of the
 * files removed. 0, or an errno when path was refused or could not be
 * removed whole (the caller says so once; the row is done either way: a
 * tree that cannot go now would block every row behind it). */
int jf_trash_remove(const char *state_dir, enum jf_trash_kind kind, const char *path,
		    int64_t *freed);

#endif
