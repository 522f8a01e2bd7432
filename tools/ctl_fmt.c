/*
 * ctl_fmt.c - the pure helpers of jobfsctl (see ctl_fmt.h).
 *
 * No I/O and no clock: the caller passes the text it read and the time it
 * took.  A table owns copies of its cells; everything else writes into the
 * caller's buffers.
 */
#include "tools/ctl_fmt.h"

#include "core/timefmt.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy(char *buf, size_t n, const char *s)
{
	if (n == 0)
		return;
	snprintf(buf, n, "%s", s ? s : "");
}

static void get_str(json_t *o, const char *key, char *buf, size_t n)
{
	json_t *v = json_object_get(o, key);
	if (json_is_string(v))
		copy(buf, n, json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
	else
		copy(buf, n, "");
}

static long long get_int(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

int jc_status_parse(struct jc_status *st, const char *json_text)
{
	json_error_t err;
	json_t *o = json_loads(json_text ? json_text : "", 0, &err);
	memset(st, 0, sizeof(*st));
	if (!json_is_object(o)) {
		json_decref(o);
		return -1;
	}
	get_str(o, "state", st->state, sizeof(st->state));
	get_str(o, "name", st->name, sizeof(st->name));
	get_str(o, "message", st->message, sizeof(st->message));
	get_str(o, "reason", st->reason, sizeof(st->reason));
	get_str(o, "eta", st->eta, sizeof(st->eta));
	get_str(o, "eta_finish", st->eta_finish, sizeof(st->eta_finish));
	get_str(o, "created", st->created, sizeof(st->created));
	get_str(o, "started", st->started, sizeof(st->started));
	get_str(o, "finished", st->finished, sizeof(st->finished));
	get_str(o, "cost", st->cost, sizeof(st->cost));
	get_str(o, "cost_rate", st->cost_rate, sizeof(st->cost_rate));
	get_str(o, "cost_estimate", st->cost_estimate, sizeof(st->cost_estimate));
	get_str(o, "progress", st->progress, sizeof(st->progress));
	get_str(o, "machine", st->machine, sizeof(st->machine));
	st->cost_micro = get_int(o, "cost_micro");
	st->running = get_int(o, "running");
	st->waiting = get_int(o, "waiting");
	st->failed = get_int(o, "failed");
	st->attempt = get_int(o, "attempt");
	st->exit_code = get_int(o, "exit_code");
	st->nodes = get_int(o, "nodes");
	st->done = st->total = -1;
	if (sscanf(st->progress, "%lld/%lld", &st->done, &st->total) != 2)
		st->done = st->total = -1;
	json_decref(o);
	return 0;
}

int jc_state_exit(const char *state)
{
	static const struct {
		const char *state;
		int code;
	} map[] = {
		{ "Succeeded", 0 },
		{ "Invalid", 1 },
		{ "Failed", 2 },
		{ "Stopped", 3 },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (state && strcmp(state, map[i].state) == 0)
			return map[i].code;
	return -1;
}

void jc_bar(char *buf, size_t n, long long done, long long total, int width)
{
	int inner = width - 2;
	int full = 0;
	size_t at = 0;
	if (n == 0)
		return;
	if (inner < 1 || (size_t)width >= n) {
		buf[0] = '\0';
		return;
	}
	if (total > 0 && done > 0)
		full = done >= total ? inner : (int)(done * inner / total);
	buf[at++] = '[';
	for (int i = 0; i < inner; i++)
		buf[at++] = i < full ? '#' : '.';
	buf[at++] = ']';
	buf[at] = '\0';
}

int64_t jc_parse_time(const char *s)
{
	int64_t ms;
	/* only the form the tree writes, "2026-12-05T00:56:23Z": no offset,
	 * no fraction */
	if (!s || strlen(s) != 20 || s[19] != 'Z' || !jf_time_parse_rfc3339(s, &ms))
		return -1;
	return ms / 1000;
}

void jc_duration(char *buf, size_t n, int64_t secs)
{
	if (secs < 0)
		copy(buf, n, "-");
	else if (secs < 60)
		snprintf(buf, n, "%llds", (long long)secs);
	else if (secs < 3600)
		snprintf(buf, n, "%lldm%02llds", (long long)secs / 60, (long long)secs % 60);
	else if (secs < 86400)
		snprintf(buf, n, "%lldh%02lldm", (long long)secs / 3600,
			 (long long)secs % 3600 / 60);
	else
		snprintf(buf, n, "%lldd%02lldh", (long long)secs / 86400,
			 (long long)secs % 86400 / 3600);
}

void jc_age(char *buf, size_t n, const char *when, int64_t now)
{
	int64_t t = jc_parse_time(when);
	if (t < 0) {
		copy(buf, n, "-");
		return;
	}
	jc_duration(buf, n, now >= t ? now - t : 0);
}

void jc_eta(char *buf, size_t n, int64_t eta, int64_t now)
{
	if (eta <= now)
		copy(buf, n, "now");
	else
		jc_duration(buf, n, eta - now);
}

void jc_status_eta(char *buf, size_t n, const struct jc_status *st, int64_t now)
{
	int64_t t = jc_parse_time(st->eta[0] ? st->eta : st->eta_finish);
	if (t < 0 || jc_state_exit(st->state) >= 0)
		copy(buf, n, "-");
	else
		jc_eta(buf, n, t, now);
}

/* Undo the octal escapes of /proc/self/mounts (\040 space, \011 tab, ...). */
static void unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* The mount point of a jobfs line of /proc/self/mounts into dir (unescaped);
 * false for any other line. */
static bool jobfs_line(const char *line, size_t len, char *dir, size_t dirn)
{
	char src[256], d[4096], type[64];
	char *l = strndup(line, len);
	bool yes = l && sscanf(l, "%255s %4095s %63s", src, d, type) == 3 &&
		   (strcmp(type, "fuse.jobfs") == 0 || strcmp(src, "jobfs") == 0);
	free(l);
	if (yes) {
		unescape(d);
		copy(dir, dirn, d);
	}
	return yes;
}

int jc_mount_find(const char *mounts_text, char *out, size_t n, char *all, size_t alln)
{
	int count = 0;
	const char *line = mounts_text;
	copy(out, n, "");
	if (all)
		copy(all, alln, "");
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char dir[4096];
		if (jobfs_line(line, len, dir, sizeof(dir))) {
			if (count++ == 0)
				copy(out, n, dir);
			if (all) {
				size_t used = strlen(all);
				snprintf(all + used, alln - used, "%s%s", used ? ", " : "", dir);
			}
		}
		line = end ? end + 1 : NULL;
	}
	return count;
}

bool jc_mount_is(const char *mounts_text, const char *dir)
{
	const char *line = mounts_text;
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char d[4096];
		if (jobfs_line(line, len, d, sizeof(d)) && strcmp(d, dir) == 0)
			return true;
		line = end ? end + 1 : NULL;
	}
	return false;
}

int jc_path_resolve(const char *mnt, const char *arg, char *out, size_t n)
{
	size_t ml = strlen(mnt);
	int w;
	while (ml > 1 && mnt[ml - 1] == '/')
		ml--;
	if (!arg)
		arg = "";
	if (arg[0] == '/') {
		if (strncmp(arg, mnt, ml) != 0 || (arg[ml] != '\0' && arg[ml] != '/'))
			return -1;
		arg += ml;
	}
	while (arg[0] == '/')
		arg++;
	if (strcmp(arg, ".") == 0 || strncmp(arg, "./", 2) == 0)
		arg += arg[1] ? 2 : 1;
	w = arg[0] ? snprintf(out, n, "%.*s/%s", (int)ml, mnt, arg)
		   : snprintf(out, n, "%.*s", (int)ml, mnt);
	if (w < 0 || (size_t)w >= n)
		return -1;
	/* no trailing slash: callers append "/status.json" */
	for (size_t l = strlen(out); l > 1 && out[l - 1] == '/'; l--)
		out[l - 1] = '\0';
	return 0;
}

struct jc_table {
	int ncols;
	size_t nrows, cap;
	char **cells; /* nrows * ncols, row 0 the headers */
};

struct jc_table *jc_table_new(int ncols, const char *const *headers)
{
	struct jc_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->ncols = ncols;
	if (jc_table_add(t, headers) != 0) {
		jc_table_free(t);
		return NULL;
	}
	return t;
}

int jc_table_add(struct jc_table *t, const char *const *cells)
{
	size_t nc = (size_t)t->ncols;
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char **c = realloc(t->cells, cap * nc * sizeof(*c));
		if (!c)
			return -1;
		t->cells = c;
		t->cap = cap;
	}
	for (size_t i = 0; i < nc; i++) {
		char *s = strdup(cells[i] ? cells[i] : "");
		if (!s) {
			for (size_t j = 0; j < i; j++)
				free(t->cells[t->nrows * nc + j]);
			return -1;
		}
		t->cells[t->nrows * nc + i] = s;
	}
	t->nrows++;
	return 0;
}

char *jc_table_render(const struct jc_table *t)
{
	size_t nc = (size_t)t->ncols;
	size_t *w = calloc(nc, sizeof(*w));
	size_t total = 1;
	char *out, *p;
	if (!w)
		return NULL;
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < nc; c++) {
			size_t l = strlen(t->cells[r * nc + c]);
			if (l > w[c])
				w[c] = l;
		}
	for (size_t c = 0; c < nc; c++)
		total += w[c] + 2;
	out = malloc(total * t->nrows + 1);
	if (!out) {
		free(w);
		return NULL;
	}
	p = out;
	for (size_t r = 0; r < t->nrows; r++) {
		char *line = p;
		for (size_t c = 0; c < nc; c++) {
			const char *s = t->cells[r * nc + c];
			size_t l = strlen(s);
			memcpy(p, s, l);
			p += l;
			if (c + 1 < nc) {
				memset(p, ' ', w[c] - l + 2);
				p += w[c] - l + 2;
			}
		}
		while (p > line && p[-1] == ' ')
			p--;
		*p++ = '\n';
	}
	*p = '\0';
	free(w);
	return out;
}

void jc_table_free(struct jc_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}
