/*
 * ctl_logs.c - `jobfsctl logs PATH [-f] [--previous] [--attempt N]`
 * (reference 11).
 *
 * A task's logs are its node 0's.  Without -f it prints the node's logs
 * (the current attempt's), or attempts/<N>/logs.  With -f it follows
 * attempt after attempt from the current one (or N): each attempt's own
 * attempts/<a>/logs file, so every line comes once and in order, with a
 * line `==> attempt N (attempt N-1 STATE: MESSAGE) <==` between two, and
 * exits with the task's code (0, 2, 3) once it has ended.  It waits on
 * inotify of the node's files, with a slow timer as the fallback, and
 * after a rotation carries on from what is kept, as `tail -f` does.
 */
#include "tools/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

/* The node directory of path: a node as it is, a task's node 0. */
static int node_of(const struct ctl *c, const char *path, char *out, size_t n)
{
	char p[PATH_MAX];
	ctl_strf(p, sizeof(p), "%s/logs", path);
	if (ctl_exists(p)) {
		ctl_strf(out, n, "%s", path);
		return JC_OK;
	}
	ctl_strf(p, sizeof(p), "%s/nodes/0", path);
	if (ctl_is_dir(p)) {
		ctl_strf(out, n, "%s", p);
		return JC_OK;
	}
	if (!ctl_exists(path)) {
		fprintf(stderr, "jobfsctl: logs %s: no such object\n", ctl_rel(c, path));
		return JC_NOTFOUND;
	}
	fprintf(stderr, "jobfsctl: logs %s: not a task or a node (name one: %s/tasks/0)\n",
		ctl_rel(c, path), ctl_rel(c, path));
	return JC_REFUSED;
}

/* Copy fd from *off to its end onto stdout; bytes copied, *last the last
 * byte copied. */
static size_t copy_from(int fd, off_t *off, char *last)
{
	char buf[65536];
	size_t any = 0;
	for (;;) {
		ssize_t r = pread(fd, buf, sizeof(buf), *off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		fwrite(buf, 1, (size_t)r, stdout);
		*off += r;
		*last = buf[r - 1];
		any += (size_t)r;
	}
	fflush(stdout);
	return any;
}

/*
 * logs -f: every attempt of a node from the one it starts at, each read
 * from its own attempts/<a>/logs (which only grows) rather than the node's
 * logs (which shows another file when the attempt switches), so that no
 * line is missed or repeated.  Between two attempts a line
 *   ==> attempt A+1 (attempt A STATE: MESSAGE) <==
 * It ends when the node's task has ended for good (Succeeded, Failed,
 * Stopped: no further attempt), after the last attempt's logs, with the
 * task's exit code.  It wakes on inotify of the node's, the task's and the
 * attempt's files (the daemon touches them on a change and as logs grow)
 * and on the end of the task's `watch` stream, with a 2 s timer as the
 * fallback.
 */
struct follow {
	char node[PATH_MAX], task[PATH_MAX];
	long a;    /* the attempt being read */
	int fd;    /* its logs, or -1 */
	off_t off; /* read so far */
	char last; /* the last byte written ('\n' at the start) */
	int in;    /* inotify, or -1 */
	int awd;   /* the watch on attempts/<a>, or -1 */
	int wfd;   /* the task's watch stream; -1 once it ended */
};

static void follow_watch_attempt(struct follow *f)
{
	char dir[PATH_MAX];
	if (f->in < 0 || f->awd >= 0)
		return;
	ctl_strf(dir, sizeof(dir), "%s/attempts/%ld", f->node, f->a);
	f->awd = inotify_add_watch(f->in, dir, IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE);
}

/* attempt a ended and a+1 exists: the separator, then a+1 from its start */
static void follow_next(struct follow *f)
{
	char dir[PATH_MAX];
	struct jc_status st;
	ctl_strf(dir, sizeof(dir), "%s/attempts/%ld", f->node, f->a);
	if (f->last != '\n')
		putchar('\n');
	if (ctl_read_status(dir, &st) == 0 && st.state[0])
		printf("==> attempt %ld (attempt %ld %s%s%s) <==\n", f->a + 1, f->a, st.state,
		       st.message[0] ? ": " : "", st.message);
	else
		printf("==> attempt %ld <==\n", f->a + 1);
	fflush(stdout);
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->off = 0;
	f->last = '\n';
	if (f->awd >= 0)
		inotify_rm_watch(f->in, f->awd);
	f->awd = -1;
	f->a++;
}

/* Block until something may have changed (or 2 s passed). */
static void follow_sleep(struct follow *f)
{
	struct pollfd pfd[2];
	nfds_t n = 0;
	if (f->in >= 0)
		pfd[n++] = (struct pollfd){ .fd = f->in, .events = POLLIN };
	if (f->wfd >= 0)
		pfd[n++] = (struct pollfd){ .fd = f->wfd, .events = POLLIN };
	if (poll(pfd, n, 2000) <= 0)
		return;
	for (nfds_t i = 0; i < n; i++) {
		char buf[4096];
		if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (pfd[i].fd == f->in) {
			while (read(f->in, buf, sizeof(buf)) > 0)
				;
		} else if (read(f->wfd, buf, sizeof(buf)) <= 0) {
			/* the task finished: not reopened (it would end at once) */
			close(f->wfd);
			f->wfd = -1;
		}
	}
}

static int follow_logs(const struct ctl *c, const char *node, long from)
{
	struct follow f = { .fd = -1, .last = '\n', .in = -1, .awd = -1, .wfd = -1 };
	char p[PATH_MAX];
	struct jc_status st;
	int code;
	ctl_strf(f.node, sizeof(f.node), "%s", node);
	ctl_strf(f.task, sizeof(f.task), "%s/../..", node);
	ctl_strf(p, sizeof(p), "%s/attempts", node);
	if (!ctl_is_dir(p) || ctl_read_status(f.task, &st) != 0) {
		fprintf(stderr, "jobfsctl: logs -f %s: not a task or a node\n", ctl_rel(c, node));
		return JC_REFUSED;
	}
	f.a = from;
	if (from == 0) /* the current attempt; the first before any ran */
		f.a = ctl_read_status(node, &st) == 0 && st.attempt > 1 ? st.attempt : 1;
	f.in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (f.in >= 0) {
		inotify_add_watch(f.in, f.node, IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE);
		inotify_add_watch(f.in, f.task, IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE);
	}
	ctl_strf(p, sizeof(p), "%s/watch", f.task);
	f.wfd = open(p, O_RDONLY | O_CLOEXEC);
	for (;;) {
		struct stat sb;
		long n;
		/* the task's state before the node's attempt and the logs: once
		 * it is final, no attempt follows and the last one's output is
		 * all written */
		if (ctl_read_status(f.task, &st) != 0) {
			fprintf(stderr, "jobfsctl: logs -f %s: %s\n", ctl_rel(c, node),
				errno == ENOENT ? "no such object (removed)" : strerror(errno));
			code = errno == ENOENT ? JC_NOTFOUND : JC_ERROR;
			break;
		}
		code = jc_state_exit(st.state);
		n = ctl_read_status(node, &st) == 0 && st.attempt > 0 ? st.attempt : 0;
		if (f.a <= n) {
			if (f.fd < 0) {
				ctl_strf(p, sizeof(p), "%s/attempts/%ld/logs", node, f.a);
				f.fd = open(p, O_RDONLY | O_CLOEXEC);
			}
			follow_watch_attempt(&f);
			if (f.fd >= 0 && fstat(f.fd, &sb) == 0 && sb.st_size < f.off) {
				/* rotated at the daemon's --log-cap: what is kept
				 * begins before where this had got to (as tail -f) */
				fprintf(stderr,
					"jobfsctl: logs -f %s: attempt %ld's logs were rotated at "
					"the log cap; on from the start of what is kept\n",
					ctl_rel(c, node), f.a);
				f.off = 0;
			}
			if (f.fd >= 0)
				copy_from(f.fd, &f.off, &f.last);
			if (f.a < n) {
				/* a newer attempt exists, so this one had ended
				 * before n was read: all of it is copied (or its
				 * logs cannot be opened: on to the next) */
				follow_next(&f);
				continue;
			}
		}
		if (code >= 0) {
			if (f.a > n && from > 0) {
				fprintf(stderr,
					"jobfsctl: logs -f %s: no attempt %ld (%ld in all)\n",
					ctl_rel(c, node), f.a, n);
				code = JC_NOTFOUND;
			}
			break;
		}
		follow_sleep(&f);
	}
	if (f.in >= 0)
		close(f.in);
	if (f.wfd >= 0)
		close(f.wfd);
	if (f.fd >= 0)
		close(f.fd);
	return code;
}

int ctl_logs(struct ctl *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "follow", no_argument, NULL, 'f' },
		{ "previous", no_argument, NULL, 'p' },
		{ "attempt", required_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	char path[PATH_MAX], node[PATH_MAX], file[PATH_MAX];
	bool follow = false, previous = false;
	long attempt = 0;
	int opt, rc, fd;
	off_t off = 0;
	char last;
	while ((opt = getopt_long(argc, argv, "fp", opts, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 'f':
			follow = true;
			break;
		case 'p':
			previous = true;
			break;
		case 'a':
			errno = 0;
			attempt = strtol(optarg, &end, 10);
			if (*end || !optarg[0] || errno || attempt < 1)
				return ctl_usage("logs: --attempt takes a number from 1");
			break;
		default:
			return ctl_usage(NULL);
		}
	}
	if (argc - optind != 1)
		return ctl_usage("logs: give one PATH");
	if (previous && attempt)
		return ctl_usage("logs: --previous or --attempt, not both");
	if (previous && follow)
		return ctl_usage("logs: -f follows from the current attempt, or from --attempt N; "
				 "not with --previous");
	if ((rc = ctl_resolve(c, argv[optind], path, sizeof(path))) != JC_OK)
		return rc;
	if ((rc = node_of(c, path, node, sizeof(node))) != JC_OK)
		return rc;
	if (follow)
		return follow_logs(c, node, attempt);
	if (attempt)
		ctl_strf(file, sizeof(file), "%s/attempts/%ld/logs", node, attempt);
	else
		ctl_strf(file, sizeof(file), "%s/%s", node, previous ? "logs.prev" : "logs");
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "jobfsctl: logs %s: %s\n", ctl_rel(c, file),
			errno == ENOENT && attempt ? "no such attempt" : strerror(errno));
		return errno == ENOENT ? JC_NOTFOUND : JC_ERROR;
	}
	copy_from(fd, &off, &last);
	close(fd);
	return JC_OK;
}
