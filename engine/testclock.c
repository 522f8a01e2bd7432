/*
 * testclock.c - the daemon's clock for tests (engine/testclock.h).
 *
 * The offset only grows: refresh() takes a new value only when it is at
 * least the one in force, so now_ms() never goes backwards because of
 * the file.  The offset is one atomic word: the engine's thread writes
 * it, the tree's reader threads read it through now_ms().
 */
#include "engine/testclock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct jf_testclock {
	char *path;
	_Atomic int64_t offset_ms;
	/* the file as last read: a change of any is a new value */
	int64_t mtime_ns, size, ino;
};

#define MAX_SECONDS (INT64_C(100) * 366 * 86400) /* a century ahead */

bool jf_testclock_parse(const char *text, int64_t *ms)
{
	const char *p = text;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	int64_t secs = 0, frac = 0;
	int nd = 0, nf = 0;
	for (; *p >= '0' && *p <= '9'; p++, nd++) {
		secs = secs * 10 + (*p - '0');
		if (secs > MAX_SECONDS)
			return false;
	}
	if (nd == 0)
		return false;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, nf++) {
			if (nf == 3)
				return false;
			frac = frac * 10 + (*p - '0');
		}
		if (nf == 0)
			return false;
	}
	for (; nf < 3; nf++)
		frac *= 10;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p)
		return false;
	*ms = secs * 1000 + frac;
	return true;
}

/* FILE's text (at most 63 bytes), NUL-terminated; false when it cannot
 * be read. */
static bool read_text(const char *path, char *buf, size_t n, struct stat *sb)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t got = fstat(fd, sb) == 0 ? read(fd, buf, n - 1) : -1;
	close(fd);
	if (got < 0)
		return false;
	buf[got] = '\0';
	return true;
}

static int64_t real_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t tc_now(void *ctx)
{
	struct jf_testclock *c = ctx;
	return real_ms() + atomic_load(&c->offset_ms);
}

static int64_t tc_skew(void *ctx)
{
	struct jf_testclock *c = ctx;
	return atomic_load(&c->offset_ms);
}

static bool tc_refresh(void *ctx)
{
	struct jf_testclock *c = ctx;
	struct stat sb;
	if (stat(c->path, &sb) < 0)
		return false;
	int64_t mt = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	if (mt == c->mtime_ns && (int64_t)sb.st_size == c->size && (int64_t)sb.st_ino == c->ino)
		return false;
	char text[64];
	int64_t ms = 0;
	if (!read_text(c->path, text, sizeof(text), &sb))
		return false;
	if (sb.st_size == 0)
		return false; /* being written: look again at the next tick */
	c->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	c->size = (int64_t)sb.st_size;
	c->ino = (int64_t)sb.st_ino;
	if (!jf_testclock_parse(text, &ms)) {
		fprintf(stderr,
			"jobfs: --test-clock %s: \"%.20s\" is not a number of seconds: "
			"ignored\n",
			c->path, text);
		return false;
	}
	int64_t was = atomic_load(&c->offset_ms);
	if (ms < was) {
		fprintf(stderr,
			"jobfs: --test-clock %s: %lld.%03lld s is less than the %lld.%03lld s in "
			"force: ignored (time never goes backwards)\n",
			c->path, (long long)(ms / 1000), (long long)(ms % 1000),
			(long long)(was / 1000), (long long)(was % 1000));
		return false;
	}
	if (ms == was)
		return false;
	atomic_store(&c->offset_ms, ms);
	return true;
}

enum jf_err jf_testclock_new(const char *path, struct jf_testclock **out, struct jf_error *err)
{
	*out = NULL;
	char text[64];
	struct stat sb;
	int64_t ms = 0;
	if (!read_text(path, text, sizeof(text), &sb))
		return jf_error_set(err, JF_EINVAL, 0, "--test-clock %s: %s", path,
				    strerror(errno));
	if (!jf_testclock_parse(text, &ms))
		return jf_error_set(err, JF_EINVAL, 0,
				    "--test-clock %s: \"%.20s\" is not a number of seconds (0 or "
				    "more, at most 3 decimals)",
				    path, text);
	struct jf_testclock *c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(path))) {
		free(c);
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	atomic_init(&c->offset_ms, ms);
	c->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	c->size = (int64_t)sb.st_size;
	c->ino = (int64_t)sb.st_ino;
	*out = c;
	return JF_OK;
}

void jf_testclock_free(struct jf_testclock *c)
{
	if (!c)
		return;
	free(c->path);
	free(c);
}

struct jf_clock jf_testclock_clock(struct jf_testclock *c)
{
	return (struct jf_clock){
		.now_ms = tc_now,
		.ctx = c,
		.skew_ms = tc_skew,
		.refresh = tc_refresh,
	};
}
