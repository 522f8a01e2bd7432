/*
 * hellofs - the baseline for jobfs's file benchmarks: a trivial FUSE
 * low-level filesystem served with the same options jobfs uses (1 s
 * attribute and entry timeouts, direct_io, no FLUSH for reading handles,
 * readdirplus for every listing), from the single-threaded loop.
 *
 *   /status                 one small file
 *   /tasks/<i>/status       (-n N) N directories of one file each, SIZE
 *                           bytes (-s SIZE), "state: Succeeded" in them:
 *                           the shape of a group's tasks/ for `grep -l`
 *
 * Run: hellofs [-n N] [-s SIZE] [-t] MOUNTPOINT (foreground); -t serves
 * from libfuse's thread pool instead (jobfs answers reads on two reader
 * threads).  Nothing is looked up from anything: each answer is computed
 * from the inode number.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>

static const char content[] = "state: Running\nname: hello\nmessage: \"\"\n";

#define INO_TASKS 3
#define INO_DIR0  1000         /* /tasks/<i>: INO_DIR0 + i */
#define INO_FILE0 (1ULL << 40) /* /tasks/<i>/status: INO_FILE0 + i */

static long ntasks;
static int threads;
static size_t fsize = 295;
static char *task_content; /* fsize bytes */

static int hello_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == 1 || ino == INO_TASKS ||
	    (ino >= INO_DIR0 && ino < INO_DIR0 + (fuse_ino_t)ntasks)) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else if (ino == 2) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = sizeof(content) - 1;
	} else if (ino >= INO_FILE0 && ino < INO_FILE0 + (fuse_ino_t)ntasks) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)fsize;
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

/* The inode of name in parent, 0 if none. */
static fuse_ino_t child(fuse_ino_t parent, const char *name)
{
	if (parent == 1 && !strcmp(name, "status"))
		return 2;
	if (parent == 1 && !strcmp(name, "tasks") && ntasks)
		return INO_TASKS;
	if (parent == INO_TASKS) {
		char *end;
		long i = strtol(name, &end, 10);
		if (*name && !*end && i >= 0 && i < ntasks)
			return INO_DIR0 + (fuse_ino_t)i;
	}
	if (parent >= INO_DIR0 && parent < INO_DIR0 + (fuse_ino_t)ntasks && !strcmp(name, "status"))
		return INO_FILE0 + (parent - INO_DIR0);
	return 0;
}

static void entry(fuse_ino_t ino, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->attr_timeout = 1.0;
	e->entry_timeout = 1.0;
	hello_stat(ino, &e->attr);
}

static void hello_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_ino_t ino = child(parent, name);
	if (!ino) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	struct fuse_entry_param e;
	entry(ino, &e);
	fuse_reply_entry(req, &e);
}

static void hello_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != 2 && ino < INO_FILE0) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void hello_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	const char *data = ino == 2 ? content : task_content;
	size_t len = ino == 2 ? sizeof(content) - 1 : fsize;
	if ((size_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, data + off,
			       size < len - (size_t)off ? size : len - (size_t)off);
}

/* Entries of a directory: ".", "..", then its children, offset k + 1 after entry k. */
static void hello_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			      struct fuse_file_info *fi)
{
	(void)fi;
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t used = 0;
	long n = ino == 1 ? (ntasks ? 2 : 1) : ino == INO_TASKS ? ntasks : 1;
	for (long k = off; k < n + 2; k++) {
		char name[32];
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		if (k < 2) {
			snprintf(name, sizeof(name), k ? ".." : ".");
			e.attr.st_ino = ino;
			e.attr.st_mode = S_IFDIR;
		} else {
			if (ino == 1)
				snprintf(name, sizeof(name), k == 2 ? "status" : "tasks");
			else if (ino == INO_TASKS)
				snprintf(name, sizeof(name), "%ld", k - 2);
			else
				snprintf(name, sizeof(name), "status");
			entry(child(ino, name), &e);
		}
		size_t need = fuse_add_direntry_plus(req, NULL, 0, name, NULL, 0);
		if (used + need > size)
			break;
		fuse_add_direntry_plus(req, buf + used, size - used, name, &e, k + 1);
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void hello_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
}

static const struct fuse_lowlevel_ops ops = {
	.init = hello_init,
	.lookup = hello_lookup,
	.getattr = hello_getattr,
	.open = hello_open,
	.read = hello_read,
	.readdirplus = hello_readdirplus,
};

int main(int argc, char *argv[])
{
	/* our own options first, then libfuse's */
	while (argc > 2 && !strcmp(argv[1], "-t")) {
		threads = 1;
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	while (argc > 2 && (!strcmp(argv[1], "-n") || !strcmp(argv[1], "-s"))) {
		if (!strcmp(argv[1], "-n"))
			ntasks = atol(argv[2]);
		else
			fsize = (size_t)atol(argv[2]);
		argv[2] = argv[0];
		argv += 2;
		argc -= 2;
	}
	if (ntasks < 0 || fsize < 17 || fsize > 65536) {
		fprintf(stderr, "hellofs: -n N (>= 0), -s SIZE (17 to 65536)\n");
		return 1;
	}
	task_content = malloc(fsize);
	if (!task_content)
		return 1;
	memset(task_content, ' ', fsize);
	memcpy(task_content, "state: Succeeded", 16);
	task_content[fsize - 1] = '\n';
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	if (fuse_parse_cmdline(&args, &opts) != 0 || !opts.mountpoint) {
		fprintf(stderr, "usage: hellofs [-n N] [-s SIZE] MOUNTPOINT\n");
		return 1;
	}
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_session_mount(se, opts.mountpoint) != 0)
		return 1;
	fuse_set_signal_handlers(se);
	struct fuse_loop_config cfg = { .clone_fd = 0, .max_idle_threads = 10 };
	int rc = threads ? fuse_session_loop_mt(se, &cfg) : fuse_session_loop(se);
	fuse_remove_signal_handlers(se);
	fuse_session_unmount(se);
	fuse_session_destroy(se);
	free(task_content);
	return rc ? 1 : 0;
}
