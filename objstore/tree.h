/*
 * tree.h - files of a mirror by relative path, from the mirror's root fd,
 * never through a symlink.
 *
 * Every directory of a path is opened from the root, one component at a
 * time, with openat(O_NOFOLLOW | O_DIRECTORY), and every last component
 * is used with the *at() calls on its directory's fd (renameat, unlinkat,
 * fstatat with AT_SYMLINK_NOFOLLOW): a symlink planted anywhere in the
 * tree makes the operation fail (ELOOP or ENOTDIR), it is never followed.
 * Paths are safe ones (keys.h) and so never hold "." or ".." either.
 *
 * The directory last opened is kept open: keys come in order, and
 * neighbours share their directory.
 */
#ifndef JF_OBJSTORE_TREE_H
#define JF_OBJSTORE_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "objstore/keys.h"

struct jf_tree {
	int root; /* not owned */
	int dfd;  /* the cached directory, -1 when none */
	char dpath[JF_KEY_MAX + 1];
	size_t dlen;
	mode_t dir_mode; /* of the directories it makes (0755) */
};

void jf_tree_init(struct jf_tree *t, int rootfd);
void jf_tree_close(struct jf_tree *t);
/* forget the cached directory (after something removed directories) */
void jf_tree_forget(struct jf_tree *t);

/* The directory that holds rel (a safe path, NUL-terminated) as an fd the
 * tree owns, and the last component in *base; mk makes what is missing.
 * -1 with errno on failure. */
int jf_tree_parent(struct jf_tree *t, const char *rel, bool mk, const char **base);

/* lstat of rel; -1 with errno. */
int jf_tree_stat(struct jf_tree *t, const char *rel, struct stat *st);

/* Move srcdir/srcname to rel (its directories made), replacing a file
 * there; -1 with errno (EISDIR: a directory is in the way). */
int jf_tree_install(struct jf_tree *t, const char *rel, int srcdir, const char *srcname);

/* Remove the file rel, then each of its directories that is left empty,
 * deepest first (never the root).  0 when it is gone (also when it was not
 * there); -1 with errno. */
int jf_tree_remove(struct jf_tree *t, const char *rel);

#endif
