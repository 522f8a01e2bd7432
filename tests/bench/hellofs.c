/*
 * hellofs - the baseline for jobfs's file benchmarks: a trivial FUSE
 * low-level filesystem with one small file, served with the same options
 * jobfs uses (1 s attribute and entry timeouts, direct_io), from the
 * single-threaded loop.  Run: hellofs MOUNTPOINT (foreground).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>

static const char content[] = "state: Running\nname: hello\nmessage: \"\"\n";

static int hello_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == 1) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else if (ino == 2) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = sizeof(content) - 1;
	} else {
		return -1;
	}
	return 0;
}

static void hello_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct stat st;
	if (hello_stat(ino, &st) < 0)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st, 1.0);
}

static void hello_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	if (parent != 1 || strcmp(name, "status") != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = 2;
	e.attr_timeout = 1.0;
	e.entry_timeout = 1.0;
	hello_stat(e.ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void hello_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != 2) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void hello_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	size_t len = sizeof(content) - 1;
	if ((size_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, content + off,
			       size < len - (size_t)off ? size : len - (size_t)off);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = hello_lookup,
	.getattr = hello_getattr,
	.open = hello_open,
	.read = hello_read,
};

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	if (fuse_parse_cmdline(&args, &opts) != 0 || !opts.mountpoint) {
		fprintf(stderr, "usage: hellofs MOUNTPOINT\n");
		return 1;
	}
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_session_mount(se, opts.mountpoint) != 0)
		return 1;
	fuse_set_signal_handlers(se);
	int rc = fuse_session_loop(se);
	fuse_remove_signal_handlers(se);
	fuse_session_unmount(se);
	fuse_session_destroy(se);
	return rc ? 1 : 0;
}
