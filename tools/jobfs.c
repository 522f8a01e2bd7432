/*
 * jobfs - mount the batch-job tree (DESIGN 7).
 *
 *   jobfs [--state DIR] [--cluster FILE] [--backend local] [--log-cap SIZE]
 *         [--foreground] [--allow-other] [--debug] MOUNTPOINT
 *
 * Without --foreground the command returns once the tree is usable (a
 * script may `ls` it on the next line), leaving the daemon behind; errors
 * found before that are printed and reflected in the exit code.
 * `fusermount3 -u MOUNTPOINT` unmounts; the daemon then exits.  Node
 * processes outlive the daemon and are found again by the next one.
 *
 * Exit codes: 0 unmounted cleanly (or, without --foreground, mounted);
 * 1 bad usage; 2 could not start (state, cluster file, mount).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/local/local.h"
#include "core/cluster.h"
#include "core/quantity.h"
#include "engine/engine.h"
#include "fs/fs.h"
#include "store/store.h"

#define EXIT_USAGE 1
#define EXIT_SETUP 2
#define JF_LOG_CAP_MIN (64 * 1024)   /* a smaller cap rotates for every few lines */

static const char usage_text[] =
	"usage: jobfs [--state DIR] [--cluster FILE] [--backend local] [--log-cap SIZE]\n"
	"             [--foreground] [--allow-other] [--debug] MOUNTPOINT\n"
	"\n"
	"  --state DIR     database, logs and scratch (default $XDG_STATE_HOME/jobfs,\n"
	"                  else ~/.local/state/jobfs)\n"
	"  --cluster FILE  machines and prices (default: the built-in cluster)\n"
	"  --backend NAME  where nodes run: local (default)\n"
	"  --log-cap SIZE  most bytes kept per node log file (stdout, stderr, logs):\n"
	"                  past it the file is rotated and only the last SIZE to\n"
	"                  2 x SIZE bytes are kept; 256Mi, 1Gi, ... (default 1Gi,\n"
	"                  at least 64Ki; 0 = no cap)\n"
	"  --foreground    stay in the foreground; log to stderr\n"
	"  --allow-other   let other users see the tree (FUSE allow_other)\n"
	"  --debug         print every FUSE request\n"
	"Unmount with: fusermount3 -u MOUNTPOINT\n";

struct opts {
	const char *state;
	const char *cluster;
	const char *backend;
	const char *mountpoint;
	int64_t log_cap;            /* engine.h: 0 default, JF_LOG_CAP_NONE */
	bool foreground;
	bool allow_other;
	bool debug;
};

static int report_fd = -1;   /* to the waiting parent, when daemonised */

static void fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "jobfs: %s\n", msg);
	if (report_fd >= 0) {
		if (write(report_fd, msg, strlen(msg)) < 0) {
			/* the parent is gone: nothing more to say */
		}
		close(report_fd);
		report_fd = -1;
	}
}

static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, mode) < 0 && errno != EEXIST ? -1 : 0;
}

static char *default_state(void)
{
	const char *x = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	char buf[PATH_MAX];
	if (x && *x)
		snprintf(buf, sizeof(buf), "%s/jobfs", x);
	else
		snprintf(buf, sizeof(buf), "%s/.local/state/jobfs", home && *home ? home : "/tmp");
	return strdup(buf);
}

static char *read_file(const char *path, size_t *len, size_t cap)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(cap + 1);
	size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
	fclose(f);
	if (!buf)
		return NULL;
	if (n > cap) {
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static char *shim_path(void)
{
	const char *env = getenv("JOBFS_SHIM");
	if (env && *env)
		return strdup(env);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	char buf[PATH_MAX + 16];
	snprintf(buf, sizeof(buf), "%s/jobfs-shim", dirname(exe));
	return strdup(buf);
}

/* A mount left by a killed daemon answers ENOTCONN: detach it first. */
static void clear_stale_mount(const char *mnt)
{
	struct stat sb;
	if (stat(mnt, &sb) == 0 || errno != ENOTCONN)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "-z", "-q", mnt, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* --log-cap: a quantity of bytes, 0 for no cap. */
static int parse_log_cap(const char *arg, int64_t *cap)
{
	int64_t v;
	if (!jf_mem_parse(arg, &v)) {
		fprintf(stderr, "jobfs: --log-cap \"%s\": not a size; give bytes or a quantity "
				"such as 256Mi or 1Gi (0 = no cap)\n", arg);
		return -1;
	}
	if (v > 0 && v < JF_LOG_CAP_MIN) {
		fprintf(stderr, "jobfs: --log-cap \"%s\": below the least cap, 64Ki "
				"(0 = no cap)\n", arg);
		return -1;
	}
	if (v > INT64_MAX / 4) {
		fprintf(stderr, "jobfs: --log-cap \"%s\": too large (0 = no cap)\n", arg);
		return -1;
	}
	*cap = v == 0 ? JF_LOG_CAP_NONE : v;
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{ "state", required_argument, NULL, 's' },
		{ "cluster", required_argument, NULL, 'c' },
		{ "backend", required_argument, NULL, 'b' },
		{ "log-cap", required_argument, NULL, 'l' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "allow-other", no_argument, NULL, 'a' },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "fdh", longs, NULL)) != -1) {
		switch (c) {
		case 's': o->state = optarg; break;
		case 'c': o->cluster = optarg; break;
		case 'b': o->backend = optarg; break;
		case 'l':
			if (parse_log_cap(optarg, &o->log_cap) < 0)
				return -1;
			break;
		case 'f': o->foreground = true; break;
		case 'a': o->allow_other = true; break;
		case 'd': o->debug = true; o->foreground = true; break;
		case 'h': fputs(usage_text, stdout); exit(0);
		default: fputs(usage_text, stderr); return -1;
		}
	}
	if (optind != argc - 1) {
		fputs(usage_text, stderr);
		return -1;
	}
	o->mountpoint = argv[optind];
	if (o->backend && strcmp(o->backend, "local") != 0) {
		fprintf(stderr, "jobfs: backend \"%s\" is not available in this build; "
				"use --backend local\n", o->backend);
		return -1;
	}
	return 0;
}

/*
 * A root daemon serving other users starts their tasks as them, in
 * STATE/runs/.../work with JOB_CHECKPOINT_DIR under STATE/ckpt: they must
 * be able to pass through STATE and every directory above it.  STATE is
 * made 0711 (pass through, not list); a parent that other users cannot
 * pass is only reported (it is not ours to change).
 */
static void share_state(const char *state)
{
	struct stat sb;
	if (stat(state, &sb) == 0 && !(sb.st_mode & S_IXOTH))
		chmod(state, (sb.st_mode & 07777) | S_IXUSR | S_IXGRP | S_IXOTH);
	char path[4096];
	snprintf(path, sizeof(path), "%s", state);
	for (char *slash = strrchr(path, '/'); slash && slash > path; slash = strrchr(path, '/')) {
		*slash = '\0';
		if (stat(path, &sb) == 0 && !(sb.st_mode & S_IXOTH))
			fprintf(stderr, "jobfs: warning: other users cannot pass through %s (mode "
				"%04o), so their tasks cannot reach the state directory %s; "
				"use --state somewhere they can (e.g. /var/lib/jobfs)\n",
				path, (unsigned)(sb.st_mode & 07777), state);
	}
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	if (parse(argc, argv, &o) < 0)
		return EXIT_USAGE;

	char *state = o.state ? strdup(o.state) : default_state();
	struct jf_cluster *cluster = NULL;
	struct jf_error err = { 0 };
	if (!state || mkdir_p(state, 0700) < 0) {
		fprintf(stderr, "jobfs: state directory %s: %s\n", state ? state : "?",
			strerror(errno));
		return EXIT_SETUP;
	}
	if (geteuid() == 0 && o.allow_other)
		share_state(state);
	if (o.cluster) {
		size_t len = 0;
		char *text = read_file(o.cluster, &len, 1024 * 1024);
		if (!text) {
			fprintf(stderr, "jobfs: cluster file %s: %s\n", o.cluster, strerror(errno));
			return EXIT_SETUP;
		}
		enum jf_err rc = jf_cluster_parse(text, len, &cluster, &err);
		free(text);
		if (rc) {
			fprintf(stderr, "jobfs: cluster file %s: %s\n", o.cluster, err.msg);
			return EXIT_SETUP;
		}
	} else {
		cluster = jf_cluster_builtin();
	}
	clear_stale_mount(o.mountpoint);
	/* each running node holds a pidfd: allow as many files as we may */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	if (!o.foreground) {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0)
			return EXIT_SETUP;
		pid_t pid = fork();
		if (pid < 0)
			return EXIT_SETUP;
		if (pid > 0) {
			close(p[1]);
			char msg[1100];
			ssize_t n = read(p[0], msg, sizeof(msg) - 1);
			if (n == 2 && !memcmp(msg, "ok", 2))
				return 0;
			if (n <= 0)
				fprintf(stderr, "jobfs: the daemon exited before the tree was ready\n");
			return EXIT_SETUP;
		}
		close(p[0]);
		report_fd = p[1];
		setsid();
	}

	/* one daemon per state directory */
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/lock", state);
	int lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB) < 0) {
		fail("state directory %s is in use by another jobfs", state);
		return EXIT_SETUP;
	}
	snprintf(path, sizeof(path), "%s/jobfs.db", state);
	struct jf_store *st = NULL;
	if (jf_store_open(path, &st, &err) != JF_OK) {
		fail("%s", err.msg);
		return EXIT_SETUP;
	}
	char *shim = shim_path();
	struct jf_backend *be = shim ? jf_local_new(shim, &err) : NULL;
	free(shim);
	if (!be) {
		fail("local backend: %s", err.msg[0] ? err.msg : "cannot find jobfs-shim");
		jf_store_close(st);
		return EXIT_SETUP;
	}
	struct jf_engine_config cfg = {
		.state_dir = state, .store = st, .cluster = cluster, .backend = be,
		.log_cap_bytes = o.log_cap,
	};
	struct jf_engine *e = NULL;
	if (jf_engine_new(&cfg, &e, &err) != JF_OK) {
		fail("%s", err.msg);
		return EXIT_SETUP;
	}
	struct jf_fs_options fo = {
		.mountpoint = o.mountpoint, .allow_other = o.allow_other, .debug = o.debug,
		.attr_timeout = 1.0,
	};
	struct jf_fs *fs = NULL;
	if (jf_fs_new(e, &fo, &fs, &err) != JF_OK) {
		fail("%s", err.msg);
		return EXIT_SETUP;
	}
	if (report_fd >= 0) {
		int devnull = open("/dev/null", O_RDWR);
		snprintf(path, sizeof(path), "%s/jobfs.log", state);
		int log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			close(devnull);
		}
		if (log >= 0) {
			dup2(log, 2);
			close(log);
		}
		if (write(report_fd, "ok", 2) < 0) {
			/* parent gone */
		}
		close(report_fd);
		report_fd = -1;
	}
	int rc = jf_fs_run(fs);
	jf_fs_free(fs);
	free(state);
	close(lockfd);
	return rc == 0 ? 0 : EXIT_SETUP;
}
