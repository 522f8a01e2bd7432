/*
 * tree.c - no-follow file operations under a root fd (tree.h).
 *
 * DESIGN.  One cached directory fd and its path: a lookup whose directory
 * is the cached one costs nothing, another walks from the root again (a
 * few openat calls).  Removing directories (jf_tree_remove's pruning)
 * drops the cache, since the cached fd may name one of them.
 */
#include "objstore/tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void jf_tree_init(struct jf_tree *t, int rootfd)
{
	t->root = rootfd;
	t->dfd = -1;
	t->dlen = 0;
	t->dpath[0] = '\0';
	t->dir_mode = 0755;
}

void jf_tree_forget(struct jf_tree *t)
{
	if (t->dfd >= 0)
		close(t->dfd);
	t->dfd = -1;
	t->dlen = 0;
	t->dpath[0] = '\0';
}

void jf_tree_close(struct jf_tree *t)
{
	jf_tree_forget(t);
}

/* open the directory dir (len bytes, no trailing '/') from the root; mk
 * makes the missing ones */
static int walk(struct jf_tree *t, const char *dir, size_t len, bool mk)
{
	int fd = dup(t->root);
	if (fd < 0)
		return -1;
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && dir[j] != '/')
			j++;
		char name[JF_KEY_COMPONENT + 1];
		size_t nl = j - i;
		if (nl == 0 || nl > JF_KEY_COMPONENT) {
			close(fd);
			errno = EINVAL;
			return -1;
		}
		memcpy(name, dir + i, nl);
		name[nl] = '\0';
		int nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT && mk) {
			if (mkdirat(fd, name, t->dir_mode) != 0 && errno != EEXIST) {
				int e = errno;
				close(fd);
				errno = e;
				return -1;
			}
			nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		int e = errno;
		close(fd);
		if (nfd < 0) {
			errno = e;
			return -1;
		}
		fd = nfd;
		i = j + 1;
	}
	return fd;
}

int jf_tree_parent(struct jf_tree *t, const char *rel, bool mk, const char **base)
{
	const char *slash = strrchr(rel, '/');
	size_t dl = slash ? (size_t)(slash - rel) : 0;
	*base = slash ? slash + 1 : rel;
	if (dl > JF_KEY_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (t->dfd >= 0 && t->dlen == dl && memcmp(t->dpath, rel, dl) == 0)
		return t->dfd;
	int fd = walk(t, rel, dl, mk);
	if (fd < 0)
		return -1;
	jf_tree_forget(t);
	t->dfd = fd;
	memcpy(t->dpath, rel, dl);
	t->dpath[dl] = '\0';
	t->dlen = dl;
	return fd;
}

int jf_tree_stat(struct jf_tree *t, const char *rel, struct stat *st)
{
	const char *base;
	int fd = jf_tree_parent(t, rel, false, &base);
	if (fd < 0)
		return -1;
	return fstatat(fd, base, st, AT_SYMLINK_NOFOLLOW);
}

int jf_tree_install(struct jf_tree *t, const char *rel, int srcdir, const char *srcname)
{
	const char *base;
	int fd = jf_tree_parent(t, rel, true, &base);
	if (fd < 0)
		return -1;
	return renameat(srcdir, srcname, fd, base);
}

int jf_tree_remove(struct jf_tree *t, const char *rel)
{
	const char *base;
	int fd = jf_tree_parent(t, rel, false, &base);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	if (unlinkat(fd, base, 0) != 0 && errno != ENOENT)
		return -1;
	/* prune: rel's directories, deepest first, while empty */
	char dir[JF_KEY_MAX + 1];
	size_t dl = (size_t)(base - rel);
	if (dl == 0)
		return 0;
	memcpy(dir, rel, dl - 1);
	dir[dl - 1] = '\0';
	bool removed = false;
	for (;;) {
		const char *b;
		char *s = strrchr(dir, '/');
		int pfd = s ? (*s = '\0', walk(t, dir, strlen(dir), false)) : dup(t->root);
		if (pfd < 0)
			break;
		b = s ? s + 1 : dir;
		int r = unlinkat(pfd, b, AT_REMOVEDIR);
		close(pfd);
		if (r != 0)
			break;
		removed = true;
		if (!s)
			break;
	}
	if (removed)
		jf_tree_forget(t);
	return 0;
}
