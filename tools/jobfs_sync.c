/*
 * jobfs-sync - bring the local mirror of an S3 prefix up to date
 * (reference 8.3): what the daemon runs for /objects/<name>, and what a
 * user may run by hand.
 *
 *   jobfs-sync --endpoint URL --bucket B [--prefix P] [--region R]
 *              [--credentials PATH [--profile NAME]] [--as-uid U --as-gid G]
 *              [--parallel N] [--timeout S] [--fsync-each] [--parent PID]
 *              [--done-fd N] DIR
 *
 * DIR's layout and the algorithm are objstore/sync.h's.  --credentials
 * is an AWS shared-credentials file (objstore/creds.h; profile "default"
 * unless --profile); without it requests are anonymous.  --as-uid and
 * --as-gid: when run as root, the file is opened and read by a child
 * process that has become that user (its groups too), so a user cannot
 * make the daemon read a file that user could not; the bytes come back
 * over a pipe, and the child's user and group lookups (about 1.5 ms) run
 * while this process sets up libcurl.  For uid 0 it is read here: root
 * reads any file.  The credentials then live in this process's memory
 * only: never in argv, the environment, a message or a file.  --timeout S
 * (default 30): a connection not made, or a transfer slower than 1 KiB/s,
 * for S seconds fails that request; each request is tried 4 times in all
 * (0.5 s, 1 s, 2 s apart), so an endpoint that refuses connections fails a
 * sync in about 4 s.  --parallel N: downloads at once (default 16).
 * --fsync-each: fsync every download instead of one syncfs before the
 * commit (slower; for measurements).
 *
 * On stdout, the result (DIR/result.json's line); on failure also one line
 * on stderr.  SIGTERM or SIGINT end a sync cleanly, keeping what was
 * downloaded for the next one.  --parent PID (what the daemon passes, its
 * own pid): SIGTERM when the thread that started this process ends
 * (PR_SET_PDEATHSIG), and exit 2 at once if the parent is no longer PID
 * (it ended before that was set); without it, the parent decides when
 * this process dies.  --done-fd N (the daemon's too): once the result is
 * written and the lock let go, the exit code as a line on fd N, which is
 * then closed: the daemon acts on it at once, not when this process has
 * torn itself down (libcurl's and OpenSSL's cleanup and the exit took
 * about 1.2 ms before its parent saw it end).  An early exit (bad usage,
 * the lock held, the parent gone) writes nothing there: only its status
 * says.
 *
 * Exit codes: 0 synced; 1 bad usage; 2 the sync failed (the message is on
 * stderr and in DIR/result.json); 3 another sync of DIR holds its lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "objstore/creds.h"
#include "objstore/s3.h"
#include "objstore/sync.h"

#define EXIT_USAGE  1
#define EXIT_FAILED 2
#define EXIT_LOCKED 3

static const char usage_text[] =
	"usage: jobfs-sync --endpoint URL --bucket B [--prefix P] [--region R]\n"
	"                  [--credentials PATH [--profile NAME]] [--as-uid U --as-gid G]\n"
	"                  [--parallel N] [--timeout S] [--fsync-each] [--parent PID]\n"
	"                  [--done-fd N] DIR\n";

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* read all of fd into buf (cap bytes); the count, or -1 */
static ssize_t read_all(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	while (n < cap) {
		ssize_t k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	return (ssize_t)n;
}

/* the child of read_as: become uid/gid, read path, send errno + bytes */
static void child_read(int wfd, const char *path, uid_t uid, gid_t gid)
{
	int e = 0;
	struct passwd pw, *pwp = NULL;
	char pwbuf[4096];
	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &pwp) == 0 && pwp) {
		if (initgroups(pw.pw_name, gid) != 0)
			e = errno;
	} else if (setgroups(0, NULL) != 0) {
		e = errno;
	}
	if (!e && (setgid(gid) != 0 || setuid(uid) != 0))
		e = errno;
	if (!e && (getuid() != uid || geteuid() != uid))
		e = EPERM;
	char *buf = malloc(JF_CREDS_FILE_MAX + 1);
	ssize_t n = 0;
	if (!e && !buf)
		e = ENOMEM;
	int fd = -1;
	if (!e) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		struct stat st;
		if (fd < 0)
			e = errno;
		else if (fstat(fd, &st) != 0)
			e = errno;
		else if (!S_ISREG(st.st_mode))
			e = EINVAL;
		else if ((n = read_all(fd, buf, JF_CREDS_FILE_MAX + 1)) < 0)
			e = errno;
	}
	int32_t code = e;
	bool ok = write(wfd, &code, sizeof(code)) == sizeof(code);
	if (ok && !e && n > 0)
		ok = write(wfd, buf, (size_t)n) == n;
	if (buf)
		explicit_bzero(buf, JF_CREDS_FILE_MAX + 1);
	_exit(ok ? 0 : 1);
}

/* The credentials file read with uid's and gid's rights. */
static enum jf_err read_as(const char *path, const char *profile, uid_t uid, gid_t gid,
			   struct jf_creds *out, struct jf_error *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return jf_error_set(err, JF_EIO, 0, "credentials %s: pipe: %s", path,
				    strerror(errno));
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return jf_error_set(err, JF_EIO, 0, "credentials %s: fork: %s", path,
				    strerror(errno));
	}
	if (pid == 0) {
		close(p[0]);
		child_read(p[1], path, uid, gid);
	}
	close(p[1]);
	/* while the child looks the user up (NSS) and reads */
	jf_s3_global_init();
	size_t cap = JF_CREDS_FILE_MAX + 1 + sizeof(int32_t);
	char *buf = malloc(cap);
	ssize_t n = buf ? read_all(p[0], buf, cap) : -1;
	close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	enum jf_err rc;
	int32_t code = EIO;
	if (n >= (ssize_t)sizeof(code))
		memcpy(&code, buf, sizeof(code));
	if (!buf)
		rc = jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	else if (n < (ssize_t)sizeof(code) || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		rc = jf_error_set(err, JF_EIO, 0,
				  "credentials %s: could not be read as uid %u (the reader "
				  "failed)",
				  path, (unsigned)uid);
	else if (code == EINVAL)
		rc = jf_error_set(err, JF_EINVAL, 0, "credentials %s: not a regular file", path);
	else if (code)
		rc = jf_error_set(err, code == EACCES || code == EPERM ? JF_EACCES : JF_EIO, 0,
				  "credentials %s: cannot be read as uid %u: %s", path,
				  (unsigned)uid, strerror(code));
	else
		rc = jf_creds_parse(buf + sizeof(code), (size_t)n - sizeof(code), profile, path,
				    out, err);
	if (buf) {
		explicit_bzero(buf, cap);
		free(buf);
	}
	return rc;
}

static enum jf_err read_creds(const char *path, const char *profile, bool as, uid_t uid, gid_t gid,
			      struct jf_creds *out, struct jf_error *err)
{
	/* as root for root: root's own rights (its capabilities pass over
	 * the file's mode and groups), no child to become it */
	if (as && geteuid() == 0 && uid != 0)
		return read_as(path, profile, uid, gid, out, err);
	if (as && uid != geteuid())
		return jf_error_set(err, JF_EACCES, 0,
				    "credentials %s: --as-uid %u needs root (running as uid %u)",
				    path, (unsigned)uid, (unsigned)geteuid());
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return jf_error_set(err, errno == EACCES ? JF_EACCES : JF_EIO, 0,
				    "credentials %s: %s", path, strerror(errno));
	enum jf_err rc = jf_creds_read_fd(fd, profile, path, out, err);
	close(fd);
	return rc;
}

static void catch_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/* a failure after the lock: result.json, stderr, exit 2 */
static int failed(const char *dir, struct jf_sync_result *r, const char *msg)
{
	struct jf_error e;
	r->ok = false;
	snprintf(r->message, sizeof(r->message), "%s", msg);
	if (jf_sync_write_result(dir, r, &e))
		fprintf(stderr, "jobfs-sync: %s\n", e.msg);
	char *j = jf_sync_result_json(r);
	if (j)
		printf("%s\n", j);
	free(j);
	fprintf(stderr, "jobfs-sync: %s\n", msg);
	return EXIT_FAILED;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "endpoint", required_argument, NULL, 'e' },
		{ "bucket", required_argument, NULL, 'b' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "region", required_argument, NULL, 'r' },
		{ "credentials", required_argument, NULL, 'c' },
		{ "profile", required_argument, NULL, 'P' },
		{ "as-uid", required_argument, NULL, 'u' },
		{ "as-gid", required_argument, NULL, 'g' },
		{ "parallel", required_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "fsync-each", no_argument, NULL, 'F' },
		{ "parent", required_argument, NULL, 'X' },
		{ "done-fd", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct jf_sync_opts o;
	memset(&o, 0, sizeof(o));
	const char *creds_path = NULL, *profile = NULL;
	long uid = -1, gid = -1, parallel = 16, timeout = 30, parent = 0, done_fd = -1;
	int ch;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'e':
			o.s3.endpoint = optarg;
			break;
		case 'b':
			o.s3.bucket = optarg;
			break;
		case 'p':
			o.prefix = optarg;
			break;
		case 'r':
			o.s3.region = optarg;
			break;
		case 'c':
			creds_path = optarg;
			break;
		case 'P':
			profile = optarg;
			break;
		case 'u':
			if (!parse_long(optarg, 0, 0x7fffffff, &uid)) {
				fprintf(stderr, "jobfs-sync: --as-uid needs a uid\n");
				return EXIT_USAGE;
			}
			break;
		case 'g':
			if (!parse_long(optarg, 0, 0x7fffffff, &gid)) {
				fprintf(stderr, "jobfs-sync: --as-gid needs a gid\n");
				return EXIT_USAGE;
			}
			break;
		case 'j':
			if (!parse_long(optarg, 1, 256, &parallel)) {
				fprintf(stderr, "jobfs-sync: --parallel needs 1 to 256\n");
				return EXIT_USAGE;
			}
			break;
		case 't':
			if (!parse_long(optarg, 1, 3600, &timeout)) {
				fprintf(stderr, "jobfs-sync: --timeout needs 1 to 3600 seconds\n");
				return EXIT_USAGE;
			}
			break;
		case 'F':
			o.fsync_each = true;
			break;
		case 'X':
			if (!parse_long(optarg, 1, 0x7fffffff, &parent)) {
				fprintf(stderr, "jobfs-sync: --parent needs a pid\n");
				return EXIT_USAGE;
			}
			break;
		case 'D':
			if (!parse_long(optarg, 3, 0x7fffffff, &done_fd) ||
			    fcntl((int)done_fd, F_GETFD) < 0) {
				fprintf(stderr,
					"jobfs-sync: --done-fd needs an open fd from 3 on\n");
				return EXIT_USAGE;
			}
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fputs(usage_text, stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1 || !o.s3.endpoint || !o.s3.bucket) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	if ((uid < 0) != (gid < 0)) {
		fprintf(stderr, "jobfs-sync: --as-uid and --as-gid go together\n");
		return EXIT_USAGE;
	}
	if (profile && !creds_path) {
		fprintf(stderr, "jobfs-sync: --profile needs --credentials\n");
		return EXIT_USAGE;
	}
	const char *dir = argv[optind];
	o.dir = dir;
	o.parallel = (int)parallel;
	o.s3.connect_timeout_s = timeout;
	o.s3.stall_s = timeout;
	o.stop = &stop_flag;
	umask(022);
	catch_signals();
	if (parent && (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != (pid_t)parent)) {
		fprintf(stderr, "jobfs-sync: the parent process %ld has ended\n", parent);
		return EXIT_FAILED;
	}

	struct jf_error err;
	jf_error_clear(&err);
	int lockfd;
	enum jf_err rc = jf_sync_lock(dir, &lockfd, &err);
	if (rc) {
		fprintf(stderr, "jobfs-sync: %s\n", err.msg);
		return rc == JF_EBUSY ? EXIT_LOCKED : EXIT_FAILED;
	}
	struct jf_sync_result *r = calloc(1, sizeof(*r));
	struct jf_creds *cr = calloc(1, sizeof(*cr));
	int code = 0;
	if (!r || !cr) {
		fprintf(stderr, "jobfs-sync: out of memory\n");
		code = EXIT_FAILED;
		goto out;
	}
	if (creds_path) {
		rc = read_creds(creds_path, profile, uid >= 0, (uid_t)uid, (gid_t)gid, cr, &err);
		if (rc) {
			code = failed(dir, r, err.msg);
			goto out;
		}
		o.s3.creds = cr;
	}
	rc = jf_sync_run(&o, r, &err);
	jf_creds_wipe(cr);
	if (rc) {
		code = failed(dir, r, err.msg);
		goto out;
	}
	if (jf_sync_write_result(dir, r, &err)) {
		fprintf(stderr, "jobfs-sync: %s\n", err.msg);
		code = EXIT_FAILED;
		goto out;
	}
	char *j = jf_sync_result_json(r);
	if (j)
		printf("%s\n", j);
	free(j);
out:
	if (cr) {
		jf_creds_wipe(cr);
		free(cr);
	}
	free(r);
	close(lockfd);
	if (done_fd >= 0) {
		/* the log complete first: whoever acts on the line may read it */
		fflush(stdout);
		fflush(stderr);
		char line[16];
		int n = snprintf(line, sizeof(line), "%d\n", code);
		if (write((int)done_fd, line, (size_t)n) != n)
			fprintf(stderr, "jobfs-sync: --done-fd: %s\n", strerror(errno));
		close((int)done_fd);
	}
	return code;
}
