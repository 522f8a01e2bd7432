/*
 * trash.c - what the store's trash names, removed within the state
 * directory.
 *
 * JF_TRASH_TIDY, an ended attempt's run directory: its logs (stdout,
 * stderr, logs and their rotated .1) stay when they hold anything, work/
 * stays when the task left files in it, the supervisor's records
 * (launch.json, claim, started, result, rotation, their temporaries),
 * whose content the store holds now, go; anything else stays.  What is left
 * empty goes, and so does runs/<node>/ when it is empty then.  A trivial
 * task so leaves nothing on disk but its rows (README: The state
 * directory).
 */
#include "engine/trash.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TREE_DEPTH_MAX 128

bool jf_trash_path_ok(const char *state_dir, const char *path)
{
	size_t n = strlen(state_dir);
	while (n > 1 && state_dir[n - 1] == '/')
		n--;
	if (!path || strncmp(path, state_dir, n) != 0 || path[n] != '/' || !path[n + 1])
		return false;
	/* every component after state_dir: not empty, not . or .. */
	for (const char *p = path + n + 1; *p;) {
		const char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == 0 || (len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!end)
			break;
		p = end + 1;
		if (!*p)
			return false; /* a trailing slash */
	}
	return true;
}

static void add_freed(int64_t *freed, const struct stat *sb)
{
	if (freed && S_ISREG(sb->st_mode))
		*freed += (int64_t)sb->st_blocks * 512;
}

/* Empty the directory dfd (on device dev) and everything below it. */
static int empty_tree(int dfd, dev_t dev, int depth, int64_t *freed)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return errno;
	}
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		struct stat sb;
		if (fstatat(dirfd(d), name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				rc = rc ? rc : errno;
			continue;
		}
		if (S_ISDIR(sb.st_mode)) {
			if (sb.st_dev != dev || depth >= TREE_DEPTH_MAX) {
				rc = rc ? rc : EXDEV; /* a mount, or absurdly deep: left */
				continue;
			}
			int sub = openat(dirfd(d), name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				rc = rc ? rc : errno;
				continue;
			}
			int r = empty_tree(sub, dev, depth + 1, freed);
			if (!r && unlinkat(dirfd(d), name, AT_REMOVEDIR) < 0 && errno != ENOENT)
				r = errno;
			rc = rc ? rc : r;
		} else if (unlinkat(dirfd(d), name, 0) == 0) {
			add_freed(freed, &sb);
		} else if (errno != ENOENT) {
			rc = rc ? rc : errno;
		}
	}
	closedir(d);
	return rc;
}

static int remove_tree(const char *path, int64_t *freed)
{
	struct stat sb;
	if (lstat(path, &sb) < 0)
		return errno == ENOENT ? 0 : errno;
	if (!S_ISDIR(sb.st_mode)) {
		if (unlink(path) < 0)
			return errno == ENOENT ? 0 : errno;
		add_freed(freed, &sb);
		return 0;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : errno;
	int rc = empty_tree(fd, sb.st_dev, 0, freed);
	if (!rc && rmdir(path) < 0 && errno != ENOENT)
		rc = errno;
	return rc;
}

static bool is_log(const char *name)
{
	static const char *const logs[] = { "stdout",   "stderr",   "logs",
					    "stdout.1", "stderr.1", "logs.1" };
	for (size_t i = 0; i < sizeof(logs) / sizeof(logs[0]); i++)
		if (!strcmp(name, logs[i]))
			return true;
	return false;
}

/* The supervisor's records (tools/shim*.c, backends/local/local.c), and
 * their temporaries (name.tmp, renamed onto name). */
static bool is_record(const char *name)
{
	static const char *const recs[] = { "launch.json", "claim",    "started",
					    "result",      "rotation", "gpus" };
	for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
		size_t n = strlen(recs[i]);
		if (!strncmp(name, recs[i], n) && (!name[n] || !strcmp(name + n, ".tmp")))
			return true;
	}
	return false;
}

static int tidy(const char *path, int64_t *freed)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return errno;
	}
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		struct stat sb;
		if (!strcmp(name, ".") || !strcmp(name, "..") ||
		    fstatat(dirfd(d), name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(sb.st_mode)) {
			/* work/ and anything else a task made: only when empty */
			if (unlinkat(dirfd(d), name, AT_REMOVEDIR) < 0 && errno != ENOTEMPTY &&
			    errno != EEXIST && errno != ENOENT)
				rc = rc ? rc : errno;
			continue;
		}
		/* only what the daemon and the supervisor write; anything else
		 * (a task writing to ../) stays */
		if ((is_log(name) && sb.st_size > 0) || (!is_log(name) && !is_record(name)))
			continue;
		if (unlinkat(dirfd(d), name, 0) == 0)
			add_freed(freed, &sb);
		else if (errno != ENOENT)
			rc = rc ? rc : errno;
	}
	closedir(d);
	/* nothing kept: the directory goes too */
	if (rmdir(path) < 0 && errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
		rc = rc ? rc : errno;
	return rc;
}

/* runs/<node>/ once its last attempt's directory went. */
static void drop_parent(const char *state_dir, const char *path)
{
	char parent[PATH_MAX], runs[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (!slash)
		return;
	*slash = '\0';
	snprintf(runs, sizeof(runs), "%s/runs/", state_dir);
	size_t n = strlen(runs);
	if (strncmp(parent, runs, n) != 0 || strchr(parent + n, '/') || !parent[n])
		return;
	(void)rmdir(parent); /* not empty: another attempt is there */
}

int jf_trash_remove(const char *state_dir, enum jf_trash_kind kind, const char *path,
		    int64_t *freed)
{
	if (!jf_trash_path_ok(state_dir, path))
		return EPERM;
	int rc;
	switch (kind) {
	case JF_TRASH_TIDY:
		rc = tidy(path, freed);
		break;
	case JF_TRASH_TREE:
		rc = remove_tree(path, freed);
		break;
	case JF_TRASH_EMPTY:
		rc = rmdir(path) < 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST
			     ? errno
			     : 0;
		break;
	default:
		return EINVAL;
	}
	drop_parent(state_dir, path);
	return rc;
}
