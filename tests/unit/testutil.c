/*
 * testutil.c - the unit tests' shared helpers (testutil.h).
 */
#include "testutil.h"

#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static int64_t clock_ms(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t jft_wall_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

int64_t jft_mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

const char *jft_shim_path(void)
{
	const char *shim = getenv("JOBFS_SHIM");
#ifdef JF_BUILD_DIR
	if (!shim)
		shim = JF_BUILD_DIR "/tools/jobfs-shim";
#endif
	if (!shim)
		fail_msg("no jobfs-shim: set JOBFS_SHIM");
	return shim;
}

const char *jft_tmp_base(void)
{
	struct stat sb;
	if (stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0)
		return "/dev/shm";
	const char *t = getenv("TMPDIR");
	return t && *t ? t : "/tmp";
}

void jft_mkdtemp(char *buf, size_t n, const char *base, const char *prefix)
{
	if (snprintf(buf, n, "%s/%s-XXXXXX", base, prefix) >= (int)n)
		fail_msg("%s/%s: path too long", base, prefix);
	if (!mkdtemp(buf))
		fail_msg("mkdtemp %s: %s", buf, strerror(errno));
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void jft_rmtree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *jft_read_file(const char *path)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return NULL;
	size_t cap = 4096, len = 0, r;
	char *buf = malloc(cap);
	if (!buf)
		fail_msg("out of memory");
	while ((r = fread(buf + len, 1, cap - len - 1, fp)) > 0) {
		len += r;
		if (cap - len < 2) {
			cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb)
				fail_msg("out of memory");
			buf = nb;
		}
	}
	fclose(fp);
	buf[len] = '\0';
	return buf;
}

char *jft_read_in(const char *dir, const char *name)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return NULL;
	return jft_read_file(path);
}

void jft_write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	if (!fp)
		fail_msg("%s: %s", path, strerror(errno));
	if (fputs(text, fp) < 0 || fclose(fp) != 0)
		fail_msg("%s: cannot write", path);
}

bool jft_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

void jft_wait_file(const char *path, int timeout_ms)
{
	int64_t deadline = jft_mono_ms() + timeout_ms;
	while (!jft_exists(path)) {
		if (jft_mono_ms() > deadline)
			fail_msg("%s never appeared", path);
		usleep(5000);
	}
}
