/*
 * test_layer.c - image/layer.h on tars built here with libarchive's
 * writer (pax, some gzipped) in a temporary directory: a normal layer kept
 * whole (owners, modes, mtimes, xattrs, links, fifos), every way out of
 * the layer directory refused with nothing written outside it and the
 * directory removed, whiteouts and opaque markers in overlayfs' form,
 * device nodes skipped, the limits, broken archives, a full disk, and
 * several layers at once.  Runs as root (owners, trusted.* xattrs).
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "image/layer.h"
#include "testutil.h"

#define MTIME 1234567890

static char root[PATH_MAX];    /* the test's temporary directory */
static char blob[PATH_MAX];    /* root/blob.tar */
static char dest[PATH_MAX];    /* root/out, the layer directory */
static char outside[PATH_MAX]; /* root/outside, which must stay empty */

struct ent {
	const char *name;
	char type;        /* d f l(symlink) h(hard link) p(fifo) c b(devices) */
	unsigned mode;    /* permission bits; 0: 0644 */
	const char *data; /* file text, symlink or hard link target */
	int64_t uid;      /* and gid */
	const char *xname, *xval, *xname2, *xval2; /* xattrs */
	size_t big;                                /* f: this many noise bytes */
};

static void noise(unsigned char *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (unsigned char)(seed >> 16);
	}
}

static void add_entry(struct archive *a, const struct ent *x)
{
	struct archive_entry *e = archive_entry_new();
	const char *data = x->data ? x->data : "";
	unsigned char *big = NULL;
	size_t len = 0;
	assert_non_null(e);
	archive_entry_set_pathname(e, x->name);
	archive_entry_set_uid(e, x->uid);
	archive_entry_set_gid(e, x->uid);
	archive_entry_set_mtime(e, MTIME, 0);
	archive_entry_set_perm(e, x->mode ? x->mode : 0644);
	switch (x->type) {
	case 'd':
		archive_entry_set_filetype(e, AE_IFDIR);
		break;
	case 'f':
		archive_entry_set_filetype(e, AE_IFREG);
		len = x->big ? x->big : strlen(data);
		if (x->big) {
			big = malloc(x->big);
			assert_non_null(big);
			noise(big, x->big, 7);
		}
		archive_entry_set_size(e, (la_int64_t)len);
		break;
	case 'l':
		archive_entry_set_filetype(e, AE_IFLNK);
		archive_entry_set_symlink(e, data);
		break;
	case 'h':
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_hardlink(e, data);
		archive_entry_set_size(e, 0);
		break;
	case 'p':
		archive_entry_set_filetype(e, AE_IFIFO);
		break;
	case 'c':
	case 'b':
		archive_entry_set_filetype(e, x->type == 'c' ? AE_IFCHR : AE_IFBLK);
		archive_entry_set_rdev(e, makedev(1, 3));
		break;
	default:
		fail_msg("bad type %c", x->type);
	}
	if (x->xname)
		archive_entry_xattr_add_entry(e, x->xname, x->xval, strlen(x->xval));
	if (x->xname2)
		archive_entry_xattr_add_entry(e, x->xname2, x->xval2, strlen(x->xval2));
	assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
	if (len)
		assert_int_equal(archive_write_data(a, big ? (const void *)big : data, len),
				 (la_ssize_t)len);
	free(big);
	archive_entry_free(e);
}

static void make_tar(const char *path, bool gz, const struct ent *v, size_t n)
{
	struct archive *a = archive_write_new();
	assert_non_null(a);
	assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	if (gz)
		assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++)
		add_entry(a, &v[i]);
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	assert_int_equal(archive_write_free(a), ARCHIVE_OK);
}

#define TAR(gz, ...)                                                                               \
	do {                                                                                       \
		const struct ent v_[] = { __VA_ARGS__ };                                           \
		make_tar(blob, gz, v_, sizeof(v_) / sizeof(v_[0]));                                \
	} while (0)

/* snprintf into a PATH_MAX buffer, failing the test when it does not fit */
static void pathf(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pathf(char *buf, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, PATH_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PATH_MAX)
		fail_msg("path too long: %s", fmt);
}

static enum jf_err unpack(int64_t max, struct jf_layer_stats *st, struct jf_error *err)
{
	jf_error_clear(err);
	return jf_layer_unpack(blob, dest, max, st, err);
}

/* dest/rel (a few at once) */
static const char *in(const char *rel)
{
	static char buf[4][PATH_MAX];
	static int k;
	k = (k + 1) % 4;
	pathf(buf[k], "%s/%s", dest, rel);
	return buf[k];
}

/* The names in dir, sorted, one a line (malloc'd). */
static char *listing(const char *dir)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	assert_true(n >= 0);
	char *out = calloc(1, 1);
	size_t len = 0;
	assert_non_null(out);
	for (int i = 0; i < n; i++) {
		const char *s = names[i]->d_name;
		if (strcmp(s, ".") != 0 && strcmp(s, "..") != 0) {
			out = realloc(out, len + strlen(s) + 2);
			assert_non_null(out);
			len += (size_t)sprintf(out + len, "%s\n", s);
		}
		free(names[i]);
	}
	free(names);
	return out;
}

static void assert_listing(const char *dir, const char *want)
{
	char *got = listing(dir);
	assert_string_equal(got, want);
	free(got);
}

static void assert_text(const char *path, const char *want)
{
	char *got = jft_read_file(path);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void assert_msg(const struct jf_error *err, const char *part)
{
	if (!strstr(err->msg, part))
		fail_msg("message \"%s\" lacks \"%s\"", err->msg, part);
	assert_null(strchr(err->msg, '\n'));
}

/* The layer is refused with code, a message holding part, and nothing of
 * it is left: dest gone, root as before, outside empty. */
static void assert_refused(enum jf_err code, const char *part)
{
	struct jf_layer_stats st;
	struct jf_error err;
	char *before = listing(root);
	assert_int_equal(unpack(0, &st, &err), code);
	assert_int_equal(err.code, code);
	assert_msg(&err, part);
	assert_false(jft_exists(dest));
	assert_listing(root, before);
	assert_listing(outside, "");
	free(before);
}

static int setup(void **state)
{
	(void)state;
	const char *t = getenv("TMPDIR");
	jft_mkdtemp(root, sizeof(root), t && *t ? t : "/tmp", "jf-layer");
	pathf(blob, "%s/blob.tar", root);
	pathf(dest, "%s/out", root);
	pathf(outside, "%s/outside", root);
	assert_int_equal(mkdir(outside, 0755), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	jft_rmtree(root);
	return 0;
}

static void normal_layer(bool gz)
{
	struct jf_layer_stats st;
	struct jf_error err;
	struct stat sb, sb2;
	char buf[64];
	TAR(gz, { .name = "./", .type = 'd', .mode = 0751 },
	    { .name = "etc", .type = 'd', .mode = 0755 },
	    { .name = "etc/hosts",
	      .type = 'f',
	      .mode = 0640,
	      .data = "127.0.0.1 localhost\n",
	      .uid = 1000,
	      .xname = "user.x",
	      .xval = "kept" },
	    { .name = "usr/bin/", .type = 'd', .mode = 0711 },
	    { .name = "usr/bin/tool", .type = 'f', .mode = 04755, .data = "#!/bin/sh\n" },
	    { .name = "usr/bin/again", .type = 'h', .data = "./usr/bin/tool" },
	    { .name = "usr/lib", .type = 'l', .mode = 0777, .data = "/lib", .uid = 1000 },
	    { .name = "run/fifo", .type = 'p', .mode = 0600 },
	    { .name = "./home/./u//f", .type = 'f', .mode = 0600, .data = "x" });
	assert_int_equal(unpack(0, &st, &err), JF_OK);
	assert_int_equal(st.entries, 9);
	assert_int_equal(st.bytes, 20 + 10 + 1);
	assert_int_equal(st.whiteouts, 0);
	assert_int_equal(st.skipped, 0);

	assert_int_equal(lstat(dest, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0751);
	assert_int_equal(lstat(in("etc/hosts"), &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0640);
	assert_int_equal(sb.st_uid, 1000);
	assert_int_equal(sb.st_gid, 1000);
	assert_int_equal(sb.st_mtime, MTIME);
	assert_text(in("etc/hosts"), "127.0.0.1 localhost\n");
	assert_int_equal(lgetxattr(in("etc/hosts"), "user.x", buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "kept", 4);

	assert_int_equal(lstat(in("usr"), &sb), 0); /* implicit: 0755 */
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0755);
	assert_int_equal(lstat(in("usr/bin"), &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0711);
	assert_int_equal(sb.st_mtime, MTIME); /* set after its entries were written */
	assert_int_equal(lstat(in("usr/bin/tool"), &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 04755);
	assert_int_equal(lstat(in("usr/bin/again"), &sb2), 0);
	assert_int_equal(sb.st_ino, sb2.st_ino);
	assert_int_equal(sb.st_nlink, 2);

	assert_int_equal(lstat(in("usr/lib"), &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	assert_int_equal(sb.st_uid, 1000);
	ssize_t n = readlink(in("usr/lib"), buf, sizeof(buf));
	assert_int_equal(n, 4);
	assert_memory_equal(buf, "/lib", 4);
	assert_int_equal(lstat(in("run/fifo"), &sb), 0);
	assert_true(S_ISFIFO(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_text(in("home/u/f"), "x");
}

static void test_normal_plain(void **state)
{
	(void)state;
	normal_layer(false);
}

static void test_normal_gzip(void **state)
{
	(void)state;
	normal_layer(true);
}

static void test_dotdot(void **state)
{
	(void)state;
	TAR(false, { .name = "a", .type = 'f', .data = "a" },
	    { .name = "../escape", .type = 'f', .data = "x" });
	assert_refused(JF_EINVAL, "entry \"../escape\" has a \"..\" component");
	assert_false(jft_exists(in("../escape")));
	TAR(false, { .name = "a/../../b", .type = 'd' });
	assert_refused(JF_EINVAL, "\"..\"");
}

static void test_absolute(void **state)
{
	(void)state;
	TAR(true, { .name = "ok", .type = 'f', .data = "a" },
	    { .name = "/etc/x", .type = 'f', .data = "x" });
	assert_refused(JF_EINVAL, "entry \"/etc/x\" has an absolute path");
}

static void test_hostile_name_quoted(void **state)
{
	(void)state;
	TAR(false, { .name = "a\nb/../x", .type = 'f', .data = "x" });
	assert_refused(JF_EINVAL, "a\\x0ab/../x");
}

static void test_hardlinks_refused(void **state)
{
	(void)state;
	char x[PATH_MAX];
	pathf(x, "%s/x", root);
	jft_write_file(x, "mine");
	TAR(false, { .name = "f", .type = 'f', .data = "a" },
	    { .name = "l", .type = 'h', .data = "/etc/passwd" });
	assert_refused(JF_EINVAL, "hard link target \"/etc/passwd\" has an absolute path");
	TAR(false, { .name = "f", .type = 'f', .data = "a" },
	    { .name = "l", .type = 'h', .data = "../x" });
	assert_refused(JF_EINVAL, "hard link target \"../x\" has a \"..\" component");
	TAR(false, { .name = "f", .type = 'f', .data = "a" },
	    { .name = "l", .type = 'h', .data = "nothere" });
	assert_refused(JF_EINVAL, "\"nothere\" is not an earlier entry of the layer");
	TAR(false, { .name = "l", .type = 'h', .data = "f" },
	    { .name = "f", .type = 'f', .data = "a" }); /* later is not earlier */
	assert_refused(JF_EINVAL, "is not an earlier entry");
	TAR(false, { .name = "d", .type = 'd' }, { .name = "l", .type = 'h', .data = "d" });
	assert_refused(JF_EINVAL, "is a directory");
	TAR(false, { .name = "s", .type = 'l', .data = outside },
	    { .name = "l", .type = 'h', .data = "s/f" });
	assert_refused(JF_EINVAL, "passes through a symbolic link");
	struct stat sb;
	assert_int_equal(stat(x, &sb), 0);
	assert_int_equal(sb.st_nlink, 1);
	assert_text(x, "mine");
}

static void test_symlink_escape(void **state)
{
	(void)state;
	TAR(false, { .name = "evil", .type = 'l', .mode = 0777, .data = outside },
	    { .name = "evil/owned", .type = 'f', .data = "x" });
	assert_refused(JF_EINVAL, "entry \"evil/owned\" passes through a symbolic link");
	TAR(false, { .name = "evil", .type = 'l', .mode = 0777, .data = outside },
	    { .name = "evil/sub/", .type = 'd' });
	assert_refused(JF_EINVAL, "passes through a symbolic link");
	TAR(false, { .name = "evil", .type = 'l', .mode = 0777, .data = outside },
	    { .name = "evil/.wh.x", .type = 'f' });
	assert_refused(JF_EINVAL, "passes through a symbolic link");
	TAR(false, { .name = "evil", .type = 'l', .mode = 0777, .data = outside },
	    { .name = "evil/.wh..wh..opq", .type = 'f' });
	assert_refused(JF_EINVAL, "passes through a symbolic link");

	/* dest/evil -> ../../ is root's parent */
	char name[PATH_MAX], up[PATH_MAX];
	const char *tag = strrchr(root, '/') + 1;
	pathf(name, "evil/%s-escaped", tag);
	pathf(up, "%s/../%s-escaped", root, tag);
	TAR(true, { .name = "evil", .type = 'l', .mode = 0777, .data = "../../" },
	    { .name = name, .type = 'f', .data = "x" });
	assert_refused(JF_EINVAL, "passes through a symbolic link");
	assert_false(jft_exists(up));
	TAR(false, { .name = "f", .type = 'f', .data = "x" },
	    { .name = "f/g", .type = 'f', .data = "x" });
	assert_refused(JF_EINVAL, "passes through a non-directory");
}

static void test_replace_symlink(void **state)
{
	(void)state;
	struct jf_layer_stats st;
	struct jf_error err;
	struct stat before, after;
	char target[PATH_MAX];
	pathf(target, "%s/target", outside);
	jft_write_file(target, "orig");
	assert_int_equal(chmod(outside, 0751), 0);
	assert_int_equal(lstat(outside, &before), 0);
	TAR(false, { .name = "l", .type = 'l', .mode = 0777, .data = target },
	    { .name = "l", .type = 'f', .mode = 0600, .data = "new" },
	    { .name = "ld", .type = 'l', .mode = 0777, .data = outside },
	    { .name = "ld", .type = 'd', .mode = 0700, .uid = 1000 },
	    { .name = "ld/f", .type = 'f', .data = "x" });
	assert_int_equal(unpack(0, &st, &err), JF_OK);
	assert_int_equal(st.entries, 5);
	assert_text(target, "orig");
	assert_listing(outside, "target\n");
	assert_int_equal(lstat(outside, &after), 0);
	assert_int_equal(after.st_mode, before.st_mode);
	assert_int_equal(after.st_uid, before.st_uid);
	assert_int_equal(after.st_mtime, before.st_mtime);
	assert_int_equal(lstat(in("l"), &after), 0);
	assert_true(S_ISREG(after.st_mode));
	assert_text(in("l"), "new");
	assert_int_equal(lstat(in("ld"), &after), 0);
	assert_true(S_ISDIR(after.st_mode));
	assert_int_equal(after.st_mode & 07777, 0700);
	assert_int_equal(after.st_uid, 1000);
	assert_text(in("ld/f"), "x");
}

static void test_whiteouts(void **state)
{
	(void)state;
	struct jf_layer_stats st;
	struct jf_error err;
	struct stat sb;
	TAR(true, { .name = ".wh.gone", .type = 'f', .uid = 1000 },
	    { .name = "a/b/.wh.x", .type = 'f' }, { .name = "kept", .type = 'f', .data = "mine" },
	    { .name = ".wh.kept", .type = 'f' }, { .name = ".wh..wh.plnk/123.4", .type = 'f' },
	    { .name = "a/.wh..wh.aufs", .type = 'f' });
	assert_int_equal(unpack(0, &st, &err), JF_OK);
	assert_int_equal(st.whiteouts, 3);
	assert_int_equal(st.entries, 1);
	assert_int_equal(lstat(in("gone"), &sb), 0);
	assert_true(S_ISCHR(sb.st_mode));
	assert_int_equal(sb.st_rdev, makedev(0, 0));
	assert_int_equal(sb.st_uid, 1000);
	assert_int_equal(lstat(in("a/b/x"), &sb), 0);
	assert_true(S_ISCHR(sb.st_mode));
	assert_int_equal(sb.st_rdev, makedev(0, 0));
	assert_text(in("kept"), "mine"); /* this layer's own file stays */
	assert_listing(dest, "a\ngone\nkept\n");
	assert_listing(in("a"), "b\n");
	assert_listing(in("a/b"), "x\n");
	jft_rmtree(dest);

	TAR(false, { .name = "d/.wh.", .type = 'f' });
	assert_refused(JF_EINVAL, "is a whiteout of no name");
	TAR(false, { .name = "d/.wh..", .type = 'f' });
	assert_refused(JF_EINVAL, "is a whiteout of no name");
	TAR(false, { .name = "d/.wh...", .type = 'f' });
	assert_refused(JF_EINVAL, "is a whiteout of no name");
}

static void opaque(bool marker_first)
{
	struct jf_layer_stats st;
	struct jf_error err;
	struct stat sb;
	char buf[8];
	if (marker_first)
		TAR(false, { .name = "d/.wh..wh..opq", .type = 'f' },
		    { .name = "d", .type = 'd', .mode = 0750, .uid = 1000 },
		    { .name = "d/f", .type = 'f', .data = "x" });
	else
		TAR(false, { .name = "d", .type = 'd', .mode = 0750, .uid = 1000 },
		    { .name = "d/f", .type = 'f', .data = "x" },
		    { .name = "d/.wh..wh..opq", .type = 'f' });
	assert_int_equal(unpack(0, &st, &err), JF_OK);
	assert_int_equal(st.whiteouts, 1);
	assert_int_equal(st.entries, 2);
	assert_int_equal(lgetxattr(in("d"), "trusted.overlay.opaque", buf, sizeof(buf)), 1);
	assert_int_equal(buf[0], 'y');
	assert_int_equal(lstat(in("d"), &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0750);
	assert_int_equal(sb.st_uid, 1000);
	assert_listing(in("d"), "f\n");
}

static void test_opaque_marker_first(void **state)
{
	(void)state;
	opaque(true);
}

static void test_opaque_marker_last(void **state)
{
	(void)state;
	opaque(false);
}

/* overlayfs' own xattrs come from whiteouts only, never from a header */
static void test_overlay_xattrs_dropped(void **state)
{
	(void)state;
	struct jf_layer_stats st;
	struct jf_error err;
	char buf[8];
	TAR(false,
	    { .name = "s",
	      .type = 'd',
	      .xname = "trusted.overlay.redirect",
	      .xval = "/etc",
	      .xname2 = "user.k",
	      .xval2 = "v" },
	    { .name = "t",
	      .type = 'f',
	      .xname = "user.k",
	      .xval = "w",
	      .xname2 = "user.overlay.metacopy",
	      .xval2 = "1" });
	assert_int_equal(unpack(0, &st, &err), JF_OK);
	assert_int_equal(lgetxattr(in("s"), "trusted.overlay.redirect", buf, sizeof(buf)), -1);
	assert_int_equal(errno, ENODATA);
	assert_int_equal(lgetxattr(in("s"), "user.k", buf, sizeof(buf)), 1);
	assert_int_equal(buf[0], 'v');
	assert_int_equal(lgetxattr(in("t"), "user.overlay.metacopy", buf, sizeof(buf)), -1);
	assert_int_equal(errno, ENODATA);
	assert_int_equal(lgetxattr(in("t"), "user.k", buf, sizeof(buf)), 1);
	assert_int_equal(buf[0], 'w');
}

static void test_devices_skipped(void **state)
{
	(void)state;
	struct jf_layer_stats st;
	struct jf_error err;
	TAR(false, { .name = "dev/null", .type = 'c' }, { .name = "dev/loop0", .type = 'b' },
	    { .name = "dev/ok", .type = 'f', .data = "x" });
	assert_int_equal(unpack(0, &st, &err), JF_OK);
	assert_int_equal(st.skipped, 2);
	assert_int_equal(st.entries, 1);
	assert_listing(in("dev"), "ok\n");
}

static void test_max_bytes(void **state)
{
	(void)state;
	struct jf_layer_stats st;
	struct jf_error err;
	TAR(true, { .name = "a", .type = 'f', .big = 100 },
	    { .name = "b", .type = 'f', .big = 100 });
	assert_int_equal(unpack(150, &st, &err), JF_EFBIG);
	assert_msg(&err, "limit of 150 bytes at entry \"b\"");
	assert_false(jft_exists(dest));
	assert_int_equal(unpack(200, &st, &err), JF_OK);
	assert_int_equal(st.bytes, 200);
}

static void test_truncated(void **state)
{
	(void)state;
	TAR(true, { .name = "a", .type = 'f', .big = 256 * 1024 });
	struct stat sb;
	assert_int_equal(stat(blob, &sb), 0);
	assert_true(sb.st_size > 64 * 1024);
	assert_int_equal(truncate(blob, sb.st_size / 2), 0);
	assert_refused(JF_EINVAL, "is not a valid tar: ");
}

static void test_not_a_tar(void **state)
{
	(void)state;
	unsigned char junk[4096];
	noise(junk, sizeof(junk), 99);
	FILE *fp = fopen(blob, "w");
	assert_non_null(fp);
	assert_int_equal(fwrite(junk, 1, sizeof(junk), fp), sizeof(junk));
	assert_int_equal(fclose(fp), 0);
	assert_refused(JF_EINVAL, "blob.tar\" is not a valid tar: ");
}

static void test_dest_exists(void **state)
{
	(void)state;
	struct jf_error err;
	char keep[PATH_MAX];
	TAR(false, { .name = "a", .type = 'f', .data = "a" });
	assert_int_equal(mkdir(dest, 0700), 0);
	pathf(keep, "%s/keep", dest);
	jft_write_file(keep, "k");
	assert_int_equal(unpack(0, NULL, &err), JF_EEXIST);
	assert_msg(&err, "out\": File exists");
	assert_listing(dest, "keep\n");
	assert_text(keep, "k");
}

static void test_missing_blob(void **state)
{
	(void)state;
	assert_refused(JF_ENOENT, "blob.tar\": No such file or directory");
}

static void test_root_not_a_dir(void **state)
{
	(void)state;
	TAR(false, { .name = ".", .type = 'f', .data = "x" });
	assert_refused(JF_EINVAL, "is the layer's root but not a directory");
}

static void test_long_path(void **state)
{
	(void)state;
	char name[PATH_MAX + 200], cwd[PATH_MAX], cwd2[PATH_MAX];
	size_t n = 0;
	while (n < PATH_MAX)
		n += (size_t)sprintf(name + n, "%s", "abcdefghijklmnopqrstuvwxyz/");
	strcpy(name + n, "f");
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	TAR(false, { .name = name, .type = 'f', .data = "x" });
	assert_refused(JF_EINVAL, "has a path too long");
	assert_non_null(getcwd(cwd2, sizeof(cwd2)));
	assert_string_equal(cwd, cwd2);
}

/* A pax name in UTF-8 (no hdrcharset), read in the C locale: libarchive
 * warns that it cannot convert it and gives the bytes, which are kept. */
static void test_utf8_name(void **state)
{
	(void)state;
	struct jf_layer_stats st;
	struct jf_error err;
	if (!setlocale(LC_CTYPE, "C.UTF-8"))
		skip();
	TAR(false, { .name = "caf\xc3\xa9", .type = 'f', .data = "x" });
	assert_non_null(setlocale(LC_CTYPE, "C"));
	assert_int_equal(unpack(0, &st, &err), JF_OK);
	assert_text(in("caf\xc3\xa9"), "x");
}

static void test_dest_via_symlink(void **state)
{
	(void)state;
	struct jf_layer_stats st;
	struct jf_error err;
	char real[PATH_MAX], link[PATH_MAX];
	pathf(real, "%s/real", root);
	pathf(link, "%s/link", root);
	assert_int_equal(mkdir(real, 0755), 0);
	assert_int_equal(symlink(real, link), 0);
	TAR(false, { .name = "d/f", .type = 'f', .data = "x" });
	pathf(dest, "%s/out", link);
	assert_int_equal(unpack(0, &st, &err), JF_OK);
	assert_text(in("d/f"), "x");
	assert_true(jft_exists(link)); /* not removed on the way */
	pathf(dest, "%s/out", root);
}

static void test_no_space(void **state)
{
	(void)state;
	struct jf_layer_stats st;
	struct jf_error err;
	char small[PATH_MAX];
	pathf(small, "%s/small", root);
	assert_int_equal(mkdir(small, 0755), 0);
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("tmpfs", small, "tmpfs", 0, "size=64k") != 0)
		skip();
	TAR(true, { .name = "big", .type = 'f', .big = 1024 * 1024 });
	pathf(dest, "%s/out", small);
	enum jf_err rc = unpack(0, &st, &err);
	bool left = jft_exists(dest);
	assert_int_equal(umount(small), 0);
	pathf(dest, "%s/out", root);
	assert_int_equal(rc, JF_EIO);
	assert_msg(&err, "entry \"big\": no space left on device");
	assert_false(left);
}

struct job {
	char dest[PATH_MAX];
	enum jf_err rc;
	struct jf_layer_stats st;
};

static void *unpack_job(void *arg)
{
	struct job *j = arg;
	struct jf_error err;
	j->rc = jf_layer_unpack(blob, j->dest, 0, &j->st, &err);
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	struct job jobs[4];
	pthread_t t[4];
	TAR(true, { .name = "a/b/c", .type = 'f', .mode = 0600, .data = "x" },
	    { .name = "a/l", .type = 'h', .data = "a/b/c" },
	    { .name = "s", .type = 'l', .data = "/x" }, { .name = "a/.wh.w", .type = 'f' });
	for (int i = 0; i < 4; i++) {
		pathf(jobs[i].dest, "%s/out%d", root, i);
		assert_int_equal(pthread_create(&t[i], NULL, unpack_job, &jobs[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(jobs[i].rc, JF_OK);
		assert_int_equal(jobs[i].st.entries, 3);
		assert_int_equal(jobs[i].st.whiteouts, 1);
	}
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_normal_plain),
		T(test_normal_gzip),
		T(test_dotdot),
		T(test_absolute),
		T(test_hostile_name_quoted),
		T(test_hardlinks_refused),
		T(test_symlink_escape),
		T(test_replace_symlink),
		T(test_whiteouts),
		T(test_opaque_marker_first),
		T(test_opaque_marker_last),
		T(test_overlay_xattrs_dropped),
		T(test_devices_skipped),
		T(test_max_bytes),
		T(test_truncated),
		T(test_not_a_tar),
		T(test_dest_exists),
		T(test_missing_blob),
		T(test_root_not_a_dir),
		T(test_long_path),
		T(test_utf8_name),
		T(test_dest_via_symlink),
		T(test_threads),
		T(test_no_space), /* last: it leaves the process in its own mount namespace */
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
