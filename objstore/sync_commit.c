/*
 * sync_commit.c - the commit phase of a sync (sync.h), and the cache
 * directory's other files: the lock, result.json, partial/'s cleaning,
 * the message for a full disk.
 *
 * DESIGN.  The commit streams three sorted files and holds none of them:
 * the old manifest against the new one (removals: what the new one lacks),
 * then fetch.list (installs: each partial/<hash>.part renamed to its path;
 * the fetch phase ended well, so each is whole and checked).
 * Removals come first so that an object that turned from a file into a
 * directory ("a" removed, "a/b" added) or back finds its place free.
 * Neither pass can fail for want of space but for a new directory; a sync
 * cut in the middle leaves the old manifest, which the next sync treats
 * with suspicion only where it has to: it keeps a file only when the file
 * itself has the listed size and mtime.
 */
#include "objstore/sync_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

void jf_sync_warn(struct jf_sync *s, const char *fmt, ...)
{
	struct jf_sync_result *r = s->r;
	if (r->nwarnings >= JF_SYNC_WARN_MAX)
		return;
	char buf[JF_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	struct jf_error e;
	jf_error_set(&e, JF_OK, 0, "%s", buf); /* one line of valid UTF-8 */
	snprintf(r->warnings[r->nwarnings++], sizeof(r->warnings[0]), "%s", e.msg);
}

/* the mount that holds path: "tmpfs on /x" into out */
static void mount_of(const char *path, char *out, size_t n)
{
	char real[PATH_MAX], best[PATH_MAX] = "", type[64] = "";
	snprintf(out, n, "?");
	if (!realpath(path, real))
		return;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	size_t bl = 0;
	while (getline(&line, &cap, f) > 0) {
		char mp[PATH_MAX], fst[64];
		/* id parent maj:min root mountpoint opts [optional...] - fstype src opts */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		const char *dash = strstr(line, " - ");
		if (!dash || sscanf(dash + 3, "%63s", fst) != 1)
			continue;
		/* unescape \040 and the like */
		char *w = mp;
		for (const char *r = mp; *r; r++) {
			if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] && r[3]) {
				*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
				r += 3;
			} else {
				*w++ = *r;
			}
		}
		*w = '\0';
		size_t ml = strlen(mp);
		bool under = strcmp(mp, "/") == 0 ||
			     (strncmp(real, mp, ml) == 0 && (real[ml] == '/' || real[ml] == '\0'));
		if (under && ml >= bl) {
			bl = ml;
			snprintf(best, sizeof(best), "%s", mp);
			snprintf(type, sizeof(type), "%s", fst);
		}
	}
	free(line);
	fclose(f);
	if (best[0])
		snprintf(out, n, "%s mounted on %s", type, best);
}

enum jf_err jf_sync_disk_full(struct jf_sync *s, int e, const char *what, bool touched,
			      struct jf_error *err)
{
	char mnt[PATH_MAX + 80], freeb[64] = "";
	struct statvfs sv;
	s->full = true;
	mount_of(s->dir, mnt, sizeof(mnt));
	if (statvfs(s->dir, &sv) == 0)
		snprintf(freeb, sizeof(freeb), ", %llu KiB free",
			 (unsigned long long)sv.f_bavail * sv.f_frsize / 1024);
	return jf_error_set(err, JF_EIO, 0, "%s on the disk of %s (%s%s) while %s: %s",
			    e == EDQUOT ? "disk quota exceeded" : "no space left", s->dir, mnt,
			    freeb, what,
			    touched ? "part of the mirror is new, the old manifest stands and the "
				      "next sync completes it"
				    : "the mirror and its manifest are as they were");
}

void jf_sync_clean_partial(struct jf_sync *s, bool all)
{
	if (!all) {
		unlinkat(s->partfd, NEW_MF, 0);
		unlinkat(s->partfd, FETCHLIST, 0);
		return;
	}
	int fd = dup(s->partfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(s->partfd, de->d_name, 0);
	closedir(d);
}

/* ---- the commit ---------------------------------------------------------- */

struct gone_ctx {
	struct jf_sync *s;
	const char *prefix; /* the old manifest's */
};

static void gone(void *ud, const struct jf_mf_entry *e)
{
	struct gone_ctx *g = ud;
	struct jf_sync *s = g->s;
	const char *rel, *why;
	size_t rl;
	if (jf_key_classify(g->prefix, e->key, e->keylen, &rel, &rl, &why) != JF_KEY_FILE)
		return; /* not one we would have written */
	s->r->removed++;
	if (jf_tree_remove(&s->tree, rel) != 0) {
		char q[160];
		jf_err_quote(e->key, e->keylen, 120, q, sizeof(q));
		jf_sync_warn(s, "could not remove \"%s\" from the mirror: %s", q, strerror(errno));
	}
}

static enum jf_err removals(struct jf_sync *s, struct jf_error *err)
{
	char path[PATH_MAX + 32];
	struct jf_mf_reader *old = NULL, *nw = NULL;
	enum jf_err rc;
	snprintf(path, sizeof(path), "%s/manifest", s->dir);
	if ((rc = jf_mf_open(path, &old, err)))
		return rc;
	struct gone_ctx g = { .s = s, .prefix = jf_mf_prefix(old) };
	if (s->merge_old) {
		snprintf(path, sizeof(path), "%s/partial/%s", s->dir, NEW_MF);
		if ((rc = jf_mf_open(path, &nw, err))) {
			jf_mf_close(old);
			return rc;
		}
		const struct jf_mf_entry *e;
		for (; (e = jf_mf_peek(nw)); jf_mf_next(nw))
			jf_mf_merge(old, e->key, e->keylen, e->size, e->etag, e->mtime, gone, &g);
		if (jf_mf_damaged(nw)) {
			jf_mf_close(old);
			jf_mf_close(nw);
			return jf_error_set(err, JF_EIO, 0, "%s/partial/%s: damaged at line %d",
					    s->dir, NEW_MF, jf_mf_damaged(nw));
		}
		jf_mf_close(nw);
	}
	/* the rest (all of it when the prefix changed: none of it is ours now) */
	jf_mf_merge_rest(old, gone, &g);
	jf_mf_close(old);
	return JF_OK;
}

static void unplaced(struct jf_sync *s, const struct jf_mf_entry *e, const char *why)
{
	struct jf_sync_result *r = s->r;
	char q[160];
	jf_err_quote(e->key, e->keylen, 120, q, sizeof(q));
	r->fetched--;
	r->objects--;
	r->bytes -= e->size;
	r->skipped++;
	if (r->nskipped_keys < JF_SYNC_WARN_MAX)
		snprintf(r->skipped_keys[r->nskipped_keys++], sizeof(r->skipped_keys[0]), "%s", q);
	jf_sync_warn(s, "skipped \"%s\": %s", q, why);
}

static enum jf_err installs(struct jf_sync *s, struct jf_error *err)
{
	char path[PATH_MAX + 32];
	struct jf_mf_reader *fl = NULL;
	enum jf_err rc;
	snprintf(path, sizeof(path), "%s/partial/%s", s->dir, FETCHLIST);
	if ((rc = jf_mf_open(path, &fl, err)))
		return rc;
	const struct jf_mf_entry *e;
	for (; (e = jf_mf_peek(fl)); jf_mf_next(fl)) {
		const char *rel, *why;
		size_t rl;
		char hash[HASH_HEX], part[HASH_HEX + 8];
		if (jf_key_classify(s->prefix, e->key, e->keylen, &rel, &rl, &why) != JF_KEY_FILE)
			continue; /* never written there */
		jf_sync_obj_hash(e->key, e->keylen, e->size, e->etag, e->mtime, hash);
		snprintf(part, sizeof(part), "%s.part", hash);
		if (jf_tree_install(&s->tree, rel, s->partfd, part) != 0) {
			int en = errno;
			if (en == ENOSPC || en == EDQUOT) {
				jf_mf_close(fl);
				char what[200], q[160];
				jf_err_quote(e->key, e->keylen, 120, q, sizeof(q));
				snprintf(what, sizeof(what), "placing \"%s\"", q);
				return jf_sync_disk_full(s, en, what, true, err);
			}
			if (en == ENOENT) {
				unplaced(s, e, "its download is missing from partial/");
				continue;
			}
			if (en == EISDIR || en == ENOTDIR || en == ELOOP || en == EEXIST ||
			    en == ENOTEMPTY) {
				unplaced(s, e,
					 "a directory or a symlink of the cache is in the way");
				unlinkat(s->partfd, part, 0);
				continue;
			}
			jf_mf_close(fl);
			char q[160];
			jf_err_quote(e->key, e->keylen, 120, q, sizeof(q));
			return jf_error_set(err, JF_EIO, 0, "cannot place \"%s\" in %s/data: %s", q,
					    s->dir, strerror(en));
		}
	}
	int bad = jf_mf_damaged(fl);
	jf_mf_close(fl);
	if (bad)
		return jf_error_set(err, JF_EIO, 0, "%s/partial/%s: damaged at line %d", s->dir,
				    FETCHLIST, bad);
	return JF_OK;
}

enum jf_err jf_sync_commit(struct jf_sync *s, struct jf_error *err)
{
	enum jf_err rc;
	/* the downloads are on the disk before anything points at them */
	if (!s->o->fsync_each && syncfs(s->partfd) != 0)
		return jf_error_set(err, JF_EIO, 0, "syncfs of %s: %s", s->dir, strerror(errno));
	if ((rc = removals(s, err)) || (rc = installs(s, err)))
		return rc;
	jf_tree_forget(&s->tree);
	/* and data/ as it is now, before the manifest says so */
	if (syncfs(s->datafd) != 0)
		return jf_error_set(err, JF_EIO, 0, "syncfs of %s: %s", s->dir, strerror(errno));
	if (renameat(s->partfd, NEW_MF, s->dirfd, "manifest") != 0)
		return jf_error_set(err, JF_EIO, 0,
				    "cannot rename %s/partial/%s to %s/manifest: %s", s->dir,
				    NEW_MF, s->dir, strerror(errno));
	fsync(s->dirfd);
	jf_sync_clean_partial(s, true);
	return JF_OK;
}

/* ---- the lock and the result --------------------------------------------- */

enum jf_err jf_sync_lock(const char *dir, int *fd, struct jf_error *err)
{
	char path[PATH_MAX];
	*fd = -1;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return jf_error_set(err, JF_EIO, 0, "cannot make %s: %s", dir, strerror(errno));
	if (snprintf(path, sizeof(path), "%s/lock", dir) >= (int)sizeof(path))
		return jf_error_set(err, JF_EINVAL, 0, "cache directory path too long");
	int l = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (l < 0)
		return jf_error_set(err, JF_EIO, 0, "cannot open %s: %s", path, strerror(errno));
	if (flock(l, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		close(l);
		if (e == EWOULDBLOCK)
			return jf_error_set(err, JF_EBUSY, 0, "another sync of %s is running", dir);
		return jf_error_set(err, JF_EIO, 0, "cannot lock %s: %s", path, strerror(e));
	}
	*fd = l;
	return JF_OK;
}

static json_t *str(const char *s)
{
	json_t *j = json_string(s);
	return j ? j : json_string("?");
}

char *jf_sync_result_json(const struct jf_sync_result *r)
{
	json_t *keys = json_array(), *warns = json_array();
	for (size_t i = 0; i < r->nskipped_keys; i++)
		json_array_append_new(keys, str(r->skipped_keys[i]));
	for (size_t i = 0; i < r->nwarnings; i++)
		json_array_append_new(warns, str(r->warnings[i]));
	json_t *j = json_pack(
		"{s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:f,s:I,s:o,s:o}", "ok", r->ok, "objects",
		(json_int_t)r->objects, "bytes", (json_int_t)r->bytes, "fetched",
		(json_int_t)r->fetched, "fetched_bytes", (json_int_t)r->fetched_bytes, "kept",
		(json_int_t)r->kept, "removed", (json_int_t)r->removed, "skipped",
		(json_int_t)r->skipped, "skipped_keys", keys, "resumed", (json_int_t)r->resumed,
		"seconds", r->seconds, "listing_pages", (json_int_t)r->listing_pages, "warnings",
		warns, "message", str(r->message));
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
	json_decref(j);
	return s;
}

enum jf_err jf_sync_write_result(const char *dir, const struct jf_sync_result *r,
				 struct jf_error *err)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	char *s = jf_sync_result_json(r);
	if (!s)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	snprintf(tmp, sizeof(tmp), "%s/.result.tmp", dir);
	snprintf(path, sizeof(path), "%s/result.json", dir);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	size_t n = strlen(s);
	bool ok = fd >= 0 && write(fd, s, n) == (ssize_t)n && write(fd, "\n", 1) == 1 &&
		  fsync(fd) == 0;
	int e = errno;
	if (fd >= 0 && close(fd) != 0 && ok)
		ok = false, e = errno;
	free(s);
	if (!ok || rename(tmp, path) != 0) {
		e = ok ? errno : e;
		unlink(tmp);
		return jf_error_set(err, JF_EIO, 0, "cannot write %s: %s", path, strerror(e));
	}
	return JF_OK;
}
