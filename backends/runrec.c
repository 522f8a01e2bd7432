/*
 * runrec.c - reading jobfs-shim's records (see runrec.h and tools/shim.c).
 *
 * Every file is read whole under a cap; a record that does not parse is
 * reported as unreadable, never half-used.
 */
#include "backends/runrec.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int jf_runrec_read(const char *path, size_t cap, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char *buf = malloc(cap + 1);
	size_t n = 0;
	if (!buf) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		ssize_t r = read(fd, buf + n, cap + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			close(fd);
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > cap) {
			free(buf);
			close(fd);
			errno = EFBIG;
			return -1;
		}
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

static int path_in(char *buf, size_t n, const char *dir, const char *name)
{
	int w = snprintf(buf, n, "%s/%s", dir, name);
	if (w < 0 || (size_t)w >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int64_t jf_runrec_started_ms(const char *run_dir)
{
	char path[PATH_MAX], *text = NULL;
	long long ms = 0;
	if (path_in(path, sizeof(path), run_dir, "started") < 0 ||
	    jf_runrec_read(path, JF_RUNREC_FILE_MAX, &text, NULL) < 0)
		return 0;
	if (sscanf(text, "started %lld", &ms) != 1 && sscanf(text, "failed %lld", &ms) != 1)
		ms = 0;
	free(text);
	return ms;
}

static bool int_field(json_t *o, const char *key, json_int_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		return false;
	*out = json_integer_value(v);
	return true;
}

int jf_runrec_result(const char *run_dir, struct jf_run_result *out, char *why, size_t whylen)
{
	char path[PATH_MAX], *text = NULL;
	size_t len;
	json_error_t je;
	json_int_t v;
	int rc = -1;

	if (path_in(path, sizeof(path), run_dir, "result") < 0) {
		snprintf(why, whylen, "run directory path too long");
		return -1;
	}
	if (jf_runrec_read(path, JF_RUNREC_FILE_MAX, &text, &len) < 0) {
		int e = errno;
		snprintf(why, whylen, "result: %s", strerror(e));
		errno = e;
		return -1;
	}
	json_t *root = json_loadb(text, len, 0, &je);
	free(text);
	errno = EINVAL;
	if (!json_is_object(root)) {
		snprintf(why, whylen, "result: not a JSON object");
		goto out;
	}
	if (!int_field(root, "exit_code", &v)) {
		snprintf(why, whylen, "result: no exit_code");
		goto out;
	}
	out->exit_code = (int)v;
	if (int_field(root, "signal", &v))
		out->term_signal = (int)v;
	if (int_field(root, "start_ms", &v))
		out->start_ms = v;
	if (int_field(root, "end_ms", &v))
		out->end_ms = v;
	const char *msg = json_string_value(json_object_get(root, "message"));
	snprintf(out->message, sizeof(out->message), "%s", msg ? msg : "");
	out->start_failed = json_is_true(json_object_get(root, "start_failed"));
	out->timed_out = json_is_true(json_object_get(root, "timed_out"));
	out->signalled = json_string_value(json_object_get(root, "signalled")) != NULL;
	json_t *procs = json_object_get(root, "procs");
	for (size_t i = 0; i < json_array_size(procs) && i < JF_RUN_MAX_PROCS; i++) {
		json_t *p = json_array_get(procs, i);
		struct jf_proc_result *pr = &out->procs[i];
		const char *name = json_string_value(json_object_get(p, "name"));
		snprintf(pr->name, sizeof(pr->name), "%s", name ? name : "");
		if (int_field(p, "exit_code", &v))
			pr->exit_code = (int)v;
		if (int_field(p, "signal", &v))
			pr->term_signal = (int)v;
		out->nprocs = i + 1;
	}
	rc = 0;
out:
	json_decref(root);
	return rc;
}
