/*
 * layer.c - unpack one image layer (layer.h) with libarchive.
 *
 * An untrusted tar, plain or compressed, becomes a new directory in
 * overlayfs' form.  How it is kept inside that directory, in layers:
 *
 *  - Each entry name and hard link target is made canonical here ("./",
 *    "." and empty components dropped; "" is the layer's root), refused
 *    when absolute, with a ".." component, or so long that root/name would
 *    reach PATH_MAX, and prefixed with the directory's real path: nothing
 *    is relative to the cwd, and nothing here changes it.
 *  - The entry's parent directories are opened one by one from a
 *    descriptor of the layer directory with O_NOFOLLOW (and made, 0755
 *    whatever the umask, when missing): a path through a symbolic link or
 *    a non-directory is refused before libarchive sees the entry.
 *    Whiteouts and opaque markers are made relative to that descriptor.
 *  - A hard link's target must be on disk under the layer directory, which
 *    was empty, so written by this layer; not a directory, not a whiteout.
 *  - archive_write_disk then writes the entry with SECURE_SYMLINKS and
 *    SECURE_NODOTDOT: a symbolic link where the entry itself goes is
 *    removed, never followed, so a later entry replaces an earlier one.
 *
 * Overlay form: ".wh.NAME" is a 0/0 character device (none when this
 * layer has NAME itself: a whiteout hides lower layers only), an opaque
 * marker sets the xattr at once (a later entry for the directory merges
 * into it and keeps it), aufs' ".wh..wh.*" metadata is skipped, and an
 * entry's own overlayfs xattrs (trusted.overlay.*, user.overlay.*) are
 * dropped.  Write errors, warnings included (an xattr, an ACL, a time
 * that cannot be set), fail the layer; a read warning (a name not in the
 * locale's charset, kept as bytes) does not.
 *
 * libarchive 3.6 facts this relies on, and flags left out on purpose:
 *  - no ARCHIVE_EXTRACT_UNLINK: with it SECURE_SYMLINKS *removes* a
 *    symbolic link met inside a path instead of refusing the entry, and
 *    since it walks the whole absolute path it would remove a symlinked
 *    ancestor of dest as readily.  Without it an existing non-directory
 *    is still unlinked and created again, so replacing works.
 *  - no SECURE_NOABSOLUTEPATHS: every path given is absolute on purpose
 *    (checked here instead); no FFLAGS: an immutable flag would make the
 *    layer unremovable; NO_AUTODIR: parents are made here; no user/group
 *    lookup: owners are the tar's numeric ids, never host names.
 *  - filters gzip, bzip2, xz and zstd only: support_filter_all would also
 *    run external programs (lrzip, lzop, grzip) on untrusted input.
 *  - a path of PATH_MAX or more would make archive_write_disk chdir()
 *    into the tree (process-wide); such names are refused here.
 *  - archive_write_disk_new and each header call umask(umask(0)): a
 *    process-wide instant of umask 0 that no caller can avoid.
 *
 * What stays true: when jf_layer_unpack returns, dest holds the whole
 * layer (JF_OK), or is absent (it is removed with nftw, FTW_PHYS), or
 * existed before and is untouched (JF_EEXIST).  No state outside a call:
 * layers may be unpacked in several threads at once, into different
 * directories.
 */
#include "image/layer.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define WH_PREFIX    ".wh."
#define WH_META      ".wh..wh." /* aufs' metadata, skipped */
#define WH_OPAQUE    ".wh..wh..opq"
#define OPAQUE_XATTR "trusted.overlay.opaque"
/* overlayfs' own xattrs (userxattr mounts use user.*): never taken from a tar */
static bool ovl_xattr(const char *name)
{
	return name && (strncmp(name, "trusted.overlay.", 16) == 0 ||
			strncmp(name, "user.overlay.", 13) == 0);
}

#define DISK_FLAGS                                                                                 \
	(ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_OWNER |                     \
	 ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_ACL | ARCHIVE_EXTRACT_SECURE_SYMLINKS |           \
	 ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_NO_AUTODIR)

#define QMAX 100 /* bytes of a name quoted in a message */
#define QBUF (4 * QMAX + 8)

struct unpack {
	struct jf_layer_stats *st;
	struct jf_error *err;
	struct archive *in, *out;
	int64_t max_bytes;
	int64_t headers; /* entries read, whatever became of them */
	int rootfd;      /* the layer directory */
	size_t rootlen;
	char qblob[QBUF];      /* the blob's path, quoted */
	char root[PATH_MAX];   /* the layer directory's real path */
	char name[PATH_MAX];   /* the entry, canonical, relative to root */
	char target[PATH_MAX]; /* its hard link target, the same */
	char full[PATH_MAX];   /* root/name, then root/target */
};

static const char *quote(const char *s, char *buf)
{
	jf_err_quote(s, strlen(s), QMAX, buf, QBUF);
	return buf;
}

static enum jf_err refuse(struct unpack *u, const char *name, const char *why)
{
	char q[QBUF];
	return jf_error_set(u->err, JF_EINVAL, 0, "layer \"%s\": entry \"%s\" %s", u->qblob,
			    quote(name, q), why);
}

static enum jf_err refuse_link(struct unpack *u, const char *target, const char *why)
{
	char q[QBUF], t[QBUF];
	return jf_error_set(u->err, JF_EINVAL, 0,
			    "layer \"%s\": entry \"%s\": hard link target \"%s\" %s", u->qblob,
			    quote(u->name, q), quote(target, t), why);
}

/* A system call on the entry failed with errno e while doing what. */
static enum jf_err fs_fail(struct unpack *u, int e, const char *what)
{
	char q[QBUF], buf[128];
	if (e == ELOOP)
		return refuse(u, u->name, "passes through a symbolic link");
	if (e == ENOTDIR)
		return refuse(u, u->name, "passes through a non-directory");
	if (e == ENOSPC || e == EDQUOT)
		return jf_error_set(u->err, JF_EIO, 0,
				    "layer \"%s\": entry \"%s\": no space left on device", u->qblob,
				    quote(u->name, q));
	return jf_error_set(u->err, e == ENOMEM ? JF_ENOMEM : JF_EIO, 0,
			    "layer \"%s\": entry \"%s\": %s: %s", u->qblob, quote(u->name, q), what,
			    strerror_r(e, buf, sizeof(buf)));
}

/* archive_write_disk failed on the entry, or when closing (the deferred
 * directory modes and times).  An errno of 0 or less is one of its own
 * refusals. */
static enum jf_err disk_fail(struct unpack *u, bool closing)
{
	int e = archive_errno(u->out);
	const char *msg = archive_error_string(u->out);
	enum jf_err code = e == ENOMEM ? JF_ENOMEM : e <= 0 ? JF_EINVAL : JF_EIO;
	char q[QBUF];
	if (e == ENOSPC || e == EDQUOT || !msg)
		msg = e == ENOSPC || e == EDQUOT ? "no space left on device" : "unknown error";
	if (closing)
		return jf_error_set(u->err, code, 0, "layer \"%s\": %s", u->qblob, msg);
	return jf_error_set(u->err, code, 0, "layer \"%s\": entry \"%s\": %s", u->qblob,
			    quote(u->name, q), msg);
}

static enum jf_err bad_tar(struct unpack *u)
{
	const char *msg = archive_error_string(u->in);
	if (archive_errno(u->in) == ENOMEM)
		return jf_error_set(u->err, JF_ENOMEM, 0, "layer \"%s\": out of memory", u->qblob);
	return jf_error_set(u->err, JF_EINVAL, 0, "layer \"%s\" is not a valid tar: %s", u->qblob,
			    msg ? msg : "unknown error");
}

/* The canonical form of the name s into out (n bytes), or false with *why
 * the reason to refuse it. */
static bool canon(const char *s, char *out, size_t n, const char **why)
{
	size_t len = 0;
	*why = "has an empty name";
	if (!s || !*s)
		return false;
	*why = "has an absolute path";
	if (*s == '/')
		return false;
	while (*s) {
		const char *end = strchrnul(s, '/');
		size_t k = (size_t)(end - s);
		*why = "has a \"..\" component";
		if (k == 2 && s[0] == '.' && s[1] == '.')
			return false;
		*why = "has a path too long";
		if (k > NAME_MAX || len + 1 + k >= n)
			return false;
		if (k > 0 && !(k == 1 && s[0] == '.')) {
			if (len > 0)
				out[len++] = '/';
			memcpy(out + len, s, k);
			len += k;
		}
		s = *end ? end + 1 : end;
	}
	out[len] = '\0';
	return true;
}

/* *fd gets the directory rel[0..len) under the root, opened component by
 * component without following a symbolic link; missing ones are made
 * (0755 whatever the umask) when make is set.  0 or an errno: ELOOP for a
 * symbolic link on the way, ENOTDIR for another non-directory. */
static int open_dir(const struct unpack *u, const char *rel, size_t len, bool make, int *fd)
{
	const int fl = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	char comp[NAME_MAX + 1];
	struct stat sb;
	int cur = fcntl(u->rootfd, F_DUPFD_CLOEXEC, 0), e = 0;
	*fd = -1;
	if (cur < 0)
		return errno;
	for (size_t i = 0, k; i < len; i += k + 1) {
		for (k = 0; i + k < len && rel[i + k] != '/'; k++)
			;
		memcpy(comp, rel + i, k); /* k <= NAME_MAX: canon() */
		comp[k] = '\0';
		int next = openat(cur, comp, fl);
		if (next < 0 && errno == ENOENT && make && mkdirat(cur, comp, 0755) == 0) {
			next = openat(cur, comp, fl);
			if (next >= 0 && fchmod(next, 0755) != 0) {
				e = errno;
				close(next);
				next = -1;
				errno = e;
			}
		}
		if (next < 0) {
			e = errno;
			/* O_DIRECTORY|O_NOFOLLOW on a symbolic link: ENOTDIR */
			if ((e == ENOTDIR || e == ELOOP) &&
			    fstatat(cur, comp, &sb, AT_SYMLINK_NOFOLLOW) == 0)
				e = S_ISLNK(sb.st_mode) ? ELOOP : ENOTDIR;
			close(cur);
			return e;
		}
		close(cur);
		cur = next;
	}
	*fd = cur;
	return 0;
}

/* Length of the directory part of the canonical name (0 at the root). */
static size_t dir_len(const char *name)
{
	const char *slash = strrchr(name, '/');
	return slash ? (size_t)(slash - name) : 0;
}

static const char *base_of(const char *name)
{
	const char *slash = strrchr(name, '/');
	return slash ? slash + 1 : name;
}

/* u->full = root/rel, or root when rel is "" (canon() keeps it short). */
static const char *full_path(struct unpack *u, const char *rel)
{
	size_t k = strlen(rel);
	memcpy(u->full, u->root, u->rootlen);
	u->full[u->rootlen] = '/';
	memcpy(u->full + u->rootlen + (k > 0), rel, k + 1);
	return u->full;
}

/* ".wh.NAME": a 0/0 character device NAME, unless this layer has one. */
static enum jf_err whiteout(struct unpack *u, struct archive_entry *e)
{
	const char *hidden = base_of(u->name) + strlen(WH_PREFIX);
	int dfd, r;
	if (!*hidden || strcmp(hidden, ".") == 0 || strcmp(hidden, "..") == 0)
		return refuse(u, u->name, "is a whiteout of no name");
	r = open_dir(u, u->name, dir_len(u->name), true, &dfd);
	if (r)
		return fs_fail(u, r, "opening its directory");
	if (mknodat(dfd, hidden, S_IFCHR, makedev(0, 0)) == 0) {
		if (fchownat(dfd, hidden, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e),
			     AT_SYMLINK_NOFOLLOW) != 0)
			r = errno;
	} else if (errno != EEXIST) {
		r = errno;
	}
	close(dfd);
	if (r)
		return fs_fail(u, r, "making the whiteout");
	u->st->whiteouts++;
	return JF_OK;
}

/* "DIR/.wh..wh..opq": trusted.overlay.opaque=y on DIR, made if it is not
 * there yet (a later entry for DIR keeps the xattr: libarchive merges a
 * directory into an existing one). */
static enum jf_err opaque(struct unpack *u)
{
	int dfd, r = open_dir(u, u->name, dir_len(u->name), true, &dfd);
	if (r)
		return fs_fail(u, r, "opening its directory");
	if (fsetxattr(dfd, OPAQUE_XATTR, "y", 1, 0) != 0)
		r = errno;
	close(dfd);
	if (r)
		return fs_fail(u, r, "setting " OPAQUE_XATTR);
	u->st->whiteouts++;
	return JF_OK;
}

/* Check the hard link target and point the entry at root/target.  *self:
 * the link names the entry itself, already there: nothing to write. */
static enum jf_err check_link(struct unpack *u, struct archive_entry *e, const char *hl, bool *self)
{
	const char *why;
	struct stat sb;
	int dfd, r;
	*self = false;
	if (!canon(hl, u->target, sizeof(u->target) - u->rootlen - 1, &why))
		return refuse_link(u, hl, why);
	if (!u->target[0])
		return refuse_link(u, hl, "is the layer's root");
	r = open_dir(u, u->target, dir_len(u->target), false, &dfd);
	if (r == 0) {
		if (fstatat(dfd, base_of(u->target), &sb, AT_SYMLINK_NOFOLLOW) != 0)
			r = errno;
		close(dfd);
	}
	if (r == ENOENT || (r == 0 && S_ISCHR(sb.st_mode)))
		return refuse_link(u, hl, "is not an earlier entry of the layer");
	if (r == ELOOP)
		return refuse_link(u, hl, "passes through a symbolic link");
	if (r == ENOTDIR)
		return refuse_link(u, hl, "passes through a non-directory");
	if (r)
		return fs_fail(u, r, "looking up its hard link target");
	if (S_ISDIR(sb.st_mode))
		return refuse_link(u, hl, "is a directory");
	*self = strcmp(u->target, u->name) == 0;
	archive_entry_set_hardlink(e, full_path(u, u->target));
	return JF_OK;
}

/* Drop the entry's overlayfs xattrs: overlayfs' metadata (opaque,
 * redirect, metacopy, origin) comes from whiteouts only. */
static enum jf_err drop_ovl_xattrs(struct unpack *u, struct archive_entry *e)
{
	const char *name;
	const void *val;
	size_t size;
	int n = archive_entry_xattr_reset(e), drop = 0;
	for (int i = 0; i < n; i++) {
		archive_entry_xattr_next(e, &name, &val, &size);
		drop += ovl_xattr(name);
	}
	if (!drop)
		return JF_OK;
	struct archive_entry *keep = archive_entry_new();
	if (!keep)
		return fs_fail(u, ENOMEM, "copying its xattrs");
	n = archive_entry_xattr_reset(e);
	for (int i = 0; i < n; i++) {
		archive_entry_xattr_next(e, &name, &val, &size);
		if (name && !ovl_xattr(name))
			archive_entry_xattr_add_entry(keep, name, val, size);
	}
	archive_entry_xattr_clear(e);
	n = archive_entry_xattr_reset(keep);
	for (int i = 0; i < n; i++) {
		archive_entry_xattr_next(keep, &name, &val, &size);
		archive_entry_xattr_add_entry(e, name, val, size);
	}
	archive_entry_free(keep);
	return JF_OK;
}

/* Write the (checked) entry at root/name, its data with it. */
static enum jf_err write_entry(struct unpack *u, struct archive_entry *e, int64_t size)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;
	archive_entry_set_pathname(e, full_path(u, u->name));
	if (archive_write_header(u->out, e) != ARCHIVE_OK)
		return disk_fail(u, false);
	while (size > 0 && (r = archive_read_data_block(u->in, &buf, &len, &off)) != ARCHIVE_EOF) {
		if (r != ARCHIVE_OK)
			return bad_tar(u);
		if (archive_write_data_block(u->out, buf, len, off) != ARCHIVE_OK)
			return disk_fail(u, false);
	}
	if (archive_write_finish_entry(u->out) != ARCHIVE_OK)
		return disk_fail(u, false);
	u->st->entries++;
	u->st->bytes += size;
	return JF_OK;
}

static enum jf_err one_entry(struct unpack *u, struct archive_entry *e)
{
	const char *raw = archive_entry_pathname(e), *base, *why;
	const char *hl = archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e);
	enum jf_err rc;
	bool self = false;
	int dfd, r;

	if (!canon(raw, u->name, sizeof(u->name) - u->rootlen - 1, &why))
		return refuse(u, raw ? raw : "", why);
	base = base_of(u->name);
	if (strcmp(base, WH_OPAQUE) == 0)
		return opaque(u);
	if (strncmp(base, WH_META, strlen(WH_META)) == 0 ||
	    strncmp(u->name, WH_META, strlen(WH_META)) == 0)
		return JF_OK;
	if (strncmp(base, WH_PREFIX, strlen(WH_PREFIX)) == 0)
		return whiteout(u, e);
	if (!hl && (type == AE_IFCHR || type == AE_IFBLK || type == AE_IFSOCK)) {
		u->st->skipped++;
		return JF_OK;
	}
	if (!u->name[0] && (hl || type != AE_IFDIR))
		return refuse(u, raw, "is the layer's root but not a directory");
	if (hl && ((rc = check_link(u, e, hl, &self)) != JF_OK || self))
		return rc;

	int64_t size = 0;
	if ((type == AE_IFREG || hl) && archive_entry_size_is_set(e) && archive_entry_size(e) > 0)
		size = archive_entry_size(e);
	if (u->max_bytes > 0 && size > u->max_bytes - u->st->bytes) {
		char q[QBUF];
		return jf_error_set(
			u->err, JF_EFBIG, 0,
			"layer \"%s\": file data passes the limit of %lld bytes at entry "
			"\"%s\"",
			u->qblob, (long long)u->max_bytes, quote(u->name, q));
	}
	if (u->name[0]) {
		r = open_dir(u, u->name, dir_len(u->name), true, &dfd);
		if (r)
			return fs_fail(u, r, "opening its directory");
		close(dfd);
	}
	if ((rc = drop_ovl_xattrs(u, e)) != JF_OK)
		return rc;
	return write_entry(u, e, size);
}

static enum jf_err dest_fail(struct unpack *u, const char *dest, int e)
{
	char q[QBUF], buf[128];
	enum jf_err code = e == EEXIST                        ? JF_EEXIST
			   : e == ENOENT                      ? JF_ENOENT
			   : e == EINVAL || e == ENAMETOOLONG ? JF_EINVAL
							      : JF_EIO;
	return jf_error_set(u->err, code, 0, "layer \"%s\": destination \"%s\": %s", u->qblob,
			    quote(dest, q), strerror_r(e, buf, sizeof(buf)));
}

/* Make the layer directory (not there before) and open it: u->root is
 * its real path, so that no symbolic link is on the way to it. */
static enum jf_err make_root(struct unpack *u, const char *dest, bool *made)
{
	char path[PATH_MAX], real[PATH_MAX];
	size_t n = strlen(dest);
	while (n > 1 && dest[n - 1] == '/')
		n--;
	if (n >= sizeof(path))
		return dest_fail(u, dest, ENAMETOOLONG);
	memcpy(path, dest, n);
	path[n] = '\0';
	char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path, *parent = slash == path ? "/" : path;
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return dest_fail(u, dest, EINVAL);
	if (!slash)
		parent = ".";
	else
		*slash = '\0';
	if (!realpath(parent, real))
		return dest_fail(u, dest, errno);
	if ((size_t)snprintf(u->root, sizeof(u->root), "%s/%s", strcmp(real, "/") ? real : "",
			     base) >= sizeof(u->root) - 2)
		return dest_fail(u, dest, ENAMETOOLONG);
	u->rootlen = strlen(u->root);
	if (mkdir(u->root, 0755) != 0)
		return dest_fail(u, dest, errno);
	*made = true;
	u->rootfd = open(u->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (u->rootfd < 0 || fchmod(u->rootfd, 0755) != 0)
		return dest_fail(u, dest, errno);
	return JF_OK;
}

static enum jf_err unpack(struct unpack *u, int fd)
{
	struct archive_entry *e;
	enum jf_err rc;
	int r;
	u->in = archive_read_new();
	u->out = archive_write_disk_new();
	if (!u->in || !u->out)
		return jf_error_set(u->err, JF_ENOMEM, 0, "layer \"%s\": out of memory", u->qblob);
	if (archive_read_support_format_tar(u->in) < ARCHIVE_WARN ||
	    archive_read_support_filter_gzip(u->in) < ARCHIVE_WARN ||
	    archive_read_support_filter_bzip2(u->in) < ARCHIVE_WARN ||
	    archive_read_support_filter_xz(u->in) < ARCHIVE_WARN ||
	    archive_read_support_filter_zstd(u->in) < ARCHIVE_WARN ||
	    archive_write_disk_set_options(u->out, DISK_FLAGS) != ARCHIVE_OK)
		return jf_error_set(u->err, JF_EIO, 0, "layer \"%s\": libarchive: %s", u->qblob,
				    archive_error_string(u->in) ? archive_error_string(u->in)
								: "cannot set up");
	if (archive_read_open_fd(u->in, fd, 64 * 1024) != ARCHIVE_OK)
		return bad_tar(u);
	/* ARCHIVE_WARN: a name not in this locale's charset, kept as bytes */
	while ((r = archive_read_next_header(u->in, &e)) != ARCHIVE_EOF) {
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return bad_tar(u);
		if (++u->headers > JF_LAYER_MAX_ENTRIES)
			return jf_error_set(u->err, JF_EFBIG, 0,
					    "layer \"%s\" has more than %d entries", u->qblob,
					    JF_LAYER_MAX_ENTRIES);
		if ((rc = one_entry(u, e)) != JF_OK)
			return rc;
	}
	/* directories' modes and times are set here, deepest first */
	if (archive_write_close(u->out) != ARCHIVE_OK)
		return disk_fail(u, true);
	return JF_OK;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP)
		(void)rmdir(path);
	else
		(void)unlink(path);
	return 0;
}

enum jf_err jf_layer_unpack(const char *blob, const char *dest, int64_t max_bytes,
			    struct jf_layer_stats *st, struct jf_error *err)
{
	struct jf_layer_stats scratch;
	struct unpack *u;
	enum jf_err rc;
	bool made = false;
	char buf[128];
	int fd;

	if (!st)
		st = &scratch;
	memset(st, 0, sizeof(*st));
	if (!blob || !*blob || !dest || !*dest || max_bytes < 0)
		return jf_error_set(err, JF_EINVAL, 0,
				    "layer: no blob, no destination or a bad limit");
	u = calloc(1, sizeof(*u));
	if (!u)
		return jf_error_set(err, JF_ENOMEM, 0, "layer: out of memory");
	u->st = st;
	u->err = err;
	u->max_bytes = max_bytes;
	u->rootfd = -1;
	quote(blob, u->qblob);
	fd = open(blob, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		rc = jf_error_set(err, e == ENOENT ? JF_ENOENT : JF_EIO, 0, "layer \"%s\": %s",
				  u->qblob, strerror_r(e, buf, sizeof(buf)));
		goto out;
	}
	rc = make_root(u, dest, &made);
	if (rc == JF_OK)
		rc = unpack(u, fd);
	archive_read_free(u->in);
	archive_write_free(u->out); /* closes (fixups) when unpack did not */
	if (u->rootfd >= 0)
		close(u->rootfd);
	if (rc != JF_OK && made)
		nftw(u->root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	close(fd);
out:
	free(u);
	return rc;
}
