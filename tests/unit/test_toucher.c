/*
 * test_toucher.c - the toucher (fs/toucher.h) against a plain directory
 * standing in for the mount: its helper is a separate process that holds
 * nothing of ours but its pipe, it touches exactly the queued paths (one
 * byte each, deduplicated by inode, coalesced until the timer fires), it
 * is replaced when it dies, and it is reaped when given up.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs/toucher.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_toucher.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	for (int i = 0; i < 3; i++) {
		char p[PATH_MAX + 16];
		snprintf(p, sizeof(p), "%s/f%d", dir, i);
		int fd = open(p, O_CREAT | O_WRONLY, 0644);
		if (fd < 0)
			return -1;
		close(fd);
	}
	char sub[PATH_MAX + 8];
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	mkdir(sub, 0755);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static off_t size_of(const char *name)
{
	char p[PATH_MAX + 64];
	struct stat sb;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &sb) == 0 ? sb.st_size : -1;
}

/* Wait (bounded) for the timer, then flush. */
static void flush(struct jf_toucher *t)
{
	struct pollfd p = { .fd = jf_toucher_fd(t), .events = POLLIN };
	assert_int_equal(poll(&p, 1, 5000), 1);
	jf_toucher_flush(t, NULL);
}

static bool wait_size(const char *name, off_t want)
{
	for (int i = 0; i < 500; i++) {
		if (size_of(name) == want)
			return true;
		usleep(10 * 1000);
	}
	return false;
}

/* What the touches are for: inotify's IN_MODIFY.  Counts per file name of
 * the events that arrive within ms. */
struct seen {
	int n[8]; /* f0, f1, f2, sub, other */
};

static void collect(int ifd, struct seen *s, int ms)
{
	struct pollfd p = { .fd = ifd, .events = POLLIN };
	while (poll(&p, 1, ms) == 1) {
		char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
		ssize_t len = read(ifd, buf, sizeof(buf));
		for (char *q = buf; len > 0 && q < buf + len;) {
			struct inotify_event *ev = (struct inotify_event *)q;
			if (ev->mask & IN_MODIFY) {
				int k = 4;
				if (!strcmp(ev->name, "f0"))
					k = 0;
				else if (!strcmp(ev->name, "f1"))
					k = 1;
				else if (!strcmp(ev->name, "f2"))
					k = 2;
				else if (!strcmp(ev->name, "sub"))
					k = 3;
				s->n[k]++;
			}
			q += sizeof(*ev) + ev->len;
		}
		ms = 300; /* after the first: until quiet */
	}
}

static void test_touches_what_is_queued(void **state)
{
	(void)state;
	int ifd = inotify_init1(IN_CLOEXEC);
	assert_true(ifd >= 0);
	assert_true(inotify_add_watch(ifd, dir, IN_MODIFY) >= 0);
	struct jf_toucher *t = jf_toucher_new(dir);
	assert_non_null(t);
	pid_t helper = jf_toucher_pid(t);
	assert_true(helper > 0 && helper != getpid());
	/* nothing queued: the timer is not armed */
	struct pollfd p = { .fd = jf_toucher_fd(t), .events = POLLIN };
	assert_int_equal(poll(&p, 1, 200), 0);
	/* the same inode twice is one touch; inode 0 and a missing file are nothing */
	jf_toucher_queue(t, 1, "f0");
	jf_toucher_queue(t, 1, "f0");
	jf_toucher_queue(t, 2, "f1");
	jf_toucher_queue(t, 0, "f2");
	jf_toucher_queue(t, 3, "no-such-file");
	jf_toucher_queue(t, 4, NULL); /* invalidation only */
	flush(t);
	struct seen s = { { 0 } };
	collect(ifd, &s, 5000);
	assert_int_equal(s.n[0], 1);
	assert_int_equal(s.n[1], 1);
	assert_int_equal(s.n[2], 0);
	assert_int_equal(s.n[4], 0);
	/* one byte written, and the helper opens without O_CREAT */
	assert_int_equal(size_of("f0"), 1);
	assert_int_equal(size_of("no-such-file"), -1);
	/* after a flush the same inode is queued anew; a directory cannot be
	 * opened for writing, and what follows it is still touched */
	jf_toucher_queue(t, 1, "f0");
	jf_toucher_queue(t, 5, "sub");
	jf_toucher_queue(t, 6, "f2");
	flush(t);
	memset(&s, 0, sizeof(s));
	collect(ifd, &s, 5000);
	assert_int_equal(s.n[0], 1);
	assert_int_equal(s.n[1], 0);
	assert_int_equal(s.n[2], 1);
	assert_int_equal(s.n[3], 0);
	jf_toucher_stop(t);
	for (int i = 0; i < 500 && !jf_toucher_gone(t); i++)
		usleep(10 * 1000);
	assert_true(jf_toucher_gone(t));
	/* a stopped toucher takes nothing more */
	jf_toucher_queue(t, 7, "f1");
	assert_int_equal(poll(&p, 1, 200), 0);
	jf_toucher_free(t);
	assert_int_equal(kill(helper, 0), -1);
	close(ifd);
}

/* A create is a mkdir by the helper, after the round's touches: on a plain
 * directory it makes the directory (on the mount the daemon answers it with
 * the one that is there), and the watch sees IN_CREATE | IN_ISDIR. */
static void test_creates_are_mkdirs(void **state)
{
	(void)state;
	int ifd = inotify_init1(IN_CLOEXEC);
	assert_true(ifd >= 0);
	assert_true(inotify_add_watch(ifd, dir, IN_CREATE) >= 0);
	struct jf_toucher *t = jf_toucher_new(dir);
	assert_non_null(t);
	assert_true(jf_toucher_create(t, "d0"));
	assert_true(jf_toucher_create(t, "d1"));
	assert_false(jf_toucher_create(t, ""));
	assert_false(jf_toucher_create(t, NULL));
	flush(t);
	int made = 0;
	struct pollfd p = { .fd = ifd, .events = POLLIN };
	for (int ms = 5000; made < 2 && poll(&p, 1, ms) == 1; ms = 1000) {
		char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
		ssize_t len = read(ifd, buf, sizeof(buf));
		for (char *q = buf; len > 0 && q < buf + len;) {
			struct inotify_event *ev = (struct inotify_event *)q;
			if ((ev->mask & IN_CREATE) && (ev->mask & IN_ISDIR) && ev->name[0] == 'd')
				made++;
			q += sizeof(*ev) + ev->len;
		}
	}
	assert_int_equal(made, 2);
	char p0[PATH_MAX + 8];
	snprintf(p0, sizeof(p0), "%s/d0", dir);
	struct stat sb;
	assert_int_equal(stat(p0, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	rmdir(p0);
	snprintf(p0, sizeof(p0), "%s/d1", dir);
	rmdir(p0);
	/* at most JF_TOUCH_CREATES a round */
	int n = 0;
	while (jf_toucher_create(t, "x") && n <= JF_TOUCH_CREATES)
		n++;
	assert_int_equal(n, JF_TOUCH_CREATES);
	jf_toucher_free(t);
	snprintf(p0, sizeof(p0), "%s/x", dir);
	rmdir(p0);
	close(ifd);
}

/* The helper's descriptors: exactly 0, 1, 2 (/dev/null) and 3 (its socket). */
static void test_helper_holds_nothing_of_ours(void **state)
{
	(void)state;
	/* descriptors of ours that the helper must not have */
	int mine = open(dir, O_RDONLY | O_DIRECTORY);
	int leaky = open("/dev/zero", O_RDONLY); /* not even without O_CLOEXEC */
	assert_true(mine >= 0 && leaky >= 0);
	struct jf_toucher *t = jf_toucher_new(dir);
	assert_non_null(t);
	char fddir[64], link[PATH_MAX];
	snprintf(fddir, sizeof(fddir), "/proc/%d/fd", (int)jf_toucher_pid(t));
	/* the helper closes them first thing: give it a moment */
	int n = 0;
	for (int tries = 0; tries < 200; tries++) {
		n = 0;
		DIR *d = opendir(fddir);
		assert_non_null(d);
		struct dirent *e;
		bool extra = false;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			int fd = atoi(e->d_name);
			n++;
			extra = extra || fd > 3;
		}
		closedir(d);
		if (n == 4 && !extra)
			break;
		usleep(10 * 1000);
	}
	assert_int_equal(n, 4);
	for (int fd = 0; fd <= 3; fd++) {
		char p[96];
		snprintf(p, sizeof(p), "%s/%d", fddir, fd);
		ssize_t l = readlink(p, link, sizeof(link) - 1);
		assert_true(l > 0);
		link[l] = '\0';
		if (fd < 3)
			assert_string_equal(link, "/dev/null");
		else
			assert_memory_equal(link, "socket:", 7);
	}
	/* and it works in "/", not in our directory */
	char cwd[96];
	snprintf(cwd, sizeof(cwd), "/proc/%d/cwd", (int)jf_toucher_pid(t));
	ssize_t l = readlink(cwd, link, sizeof(link) - 1);
	assert_true(l > 0);
	link[l] = '\0';
	assert_string_equal(link, "/");
	jf_toucher_free(t);
	close(mine);
	close(leaky);
}

static void test_a_dead_helper_is_replaced(void **state)
{
	(void)state;
	struct jf_toucher *t = jf_toucher_new(dir);
	assert_non_null(t);
	pid_t first = jf_toucher_pid(t);
	assert_int_equal(kill(first, SIGKILL), 0);
	usleep(100 * 1000);
	/* the first flush finds the helper gone (no SIGPIPE: this process does
	 * not ignore it); a later one starts another helper (at most one a
	 * second), which gets the touch that was kept */
	jf_toucher_queue(t, 1, "f0");
	for (int i = 0; i < 40 && size_of("f0") < 1; i++) {
		flush(t);
		usleep(100 * 1000);
	}
	assert_true(wait_size("f0", 1));
	usleep(200 * 1000);
	assert_int_equal(size_of("f0"), 1);
	assert_true(jf_toucher_pid(t) > 0 && jf_toucher_pid(t) != first);
	jf_toucher_free(t);
	/* the first one was reaped, not left a zombie */
	assert_int_equal(waitpid(first, NULL, WNOHANG), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_touches_what_is_queued, setup, teardown),
		cmocka_unit_test_setup_teardown(test_creates_are_mkdirs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_helper_holds_nothing_of_ours, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_dead_helper_is_replaced, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
