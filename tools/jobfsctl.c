/*
 * jobfsctl - a command line for a mounted jobfs tree (reference 11).
 *
 * It works on the tree through its files alone (mkdir, spec.yaml, status.json,
 * watch, logs), so whatever it shows a script could read too.  Subcommands
 * come from one table; each returns one of the exit codes of ctl.h, which
 * `jobfsctl --help` and docs/jobfsctl.1 document.  The mount point is
 * --mount MNT, else $JOBFS_MOUNT, else the only jobfs mount in
 * /proc/self/mounts; a PATH is relative to it or absolute under it.
 *
 * Waiting (`wait`, `submit --wait`, `logs -f`) blocks on the object's
 * `watch` stream or on inotify, with a slow timer as the fallback: it never
 * polls the daemon hard.
 */
#include "tools/ctl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SPEC_CAP   (16u << 20)
#define STATUS_CAP (1u << 20)

static const char usage_text[] =
	"usage: jobfsctl [--mount MNT] COMMAND [ARGS]\n"
	"\n"
	"  top [MNT]                          live view (q quits); one snapshot when\n"
	"                                     stdout is not a terminal\n"
	"  submit PATH SPEC [--wait]          mkdir PATH, write SPEC (a file, - for stdin)\n"
	"                                     as its spec.yaml; --wait: until it ends\n"
	"  get [PATH] [-o json|yaml]          a table of objects (STATE PROGRESS AGE COST)\n"
	"  describe PATH [-o json|yaml]       an object's status, children and events\n"
	"  logs PATH [-f] [--previous] [--attempt N]\n"
	"                                     a node's logs (a task: its node 0); -f follows\n"
	"                                     every attempt from the current one (or N) until\n"
	"                                     the task ends, \"==> attempt N ...\" between two\n"
	"  wait PATH [--timeout SECONDS]      block until the object ends\n"
	"  cost [PATH]                        cost, rate and estimate per object\n"
	"\n"
	"PATH is relative to the mount point (queues/q/groups/g) or absolute under it.\n"
	"The mount point: --mount MNT, else $JOBFS_MOUNT, else the only jobfs mount.\n"
	"\n"
	"exit codes:\n"
	"  0   done; the object Succeeded\n"
	"  1   refused or bad input (the spec's error on stderr; Invalid)\n"
	"  2   the object Failed\n"
	"  3   the object was Stopped\n"
	"  4   no such path or attempt, or no (single) jobfs mount\n"
	"  5   wait --timeout ran out\n"
	"  64  usage\n"
	"  70  other errors (I/O, memory)\n";

int ctl_usage(const char *why)
{
	if (why)
		fprintf(stderr, "jobfsctl: %s\n", why);
	fputs("usage: jobfsctl [--mount MNT] COMMAND [ARGS]; jobfsctl --help lists them\n", stderr);
	return JC_USAGE;
}

/* ---------------------------------------------------------------- files */

int ctl_strf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	int w;
	va_start(ap, fmt);
	w = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	return w < 0 || (size_t)w >= n ? -1 : 0;
}

char *ctl_read_file(const char *path, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, size = 4096;
	char *buf;
	if (fd < 0)
		return NULL;
	buf = malloc(size);
	while (buf) {
		ssize_t r;
		if (len + 1 >= size) {
			char *nb = size < cap + 1 ? realloc(buf, size * 2) : NULL;
			if (!nb) {
				free(buf);
				buf = NULL;
				errno = EFBIG;
				break;
			}
			buf = nb;
			size *= 2;
		}
		r = read(fd, buf + len, size - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			buf = NULL;
			errno = e;
			break;
		}
		if (r == 0) {
			buf[len] = '\0';
			break;
		}
		len += (size_t)r;
	}
	close(fd);
	return buf;
}

int ctl_read_status(const char *dir, struct jc_status *st)
{
	char path[PATH_MAX];
	char *text;
	int rc;
	ctl_strf(path, sizeof(path), "%s/status.json", dir);
	text = ctl_read_file(path, STATUS_CAP);
	if (!text)
		return -1;
	rc = jc_status_parse(st, text);
	free(text);
	if (rc != 0)
		errno = EINVAL;
	return rc;
}

const char *ctl_rel(const struct ctl *c, const char *abs)
{
	size_t ml = strlen(c->mnt);
	if (strncmp(abs, c->mnt, ml) == 0 && (abs[ml] == '/' || abs[ml] == '\0'))
		return abs[ml] ? abs + ml + 1 : ".";
	return abs;
}

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

bool ctl_is_dir(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

bool ctl_exists(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0;
}

int ctl_resolve(const struct ctl *c, const char *arg, char *out, size_t n)
{
	if (jc_path_resolve(c->mnt, arg, out, n) != 0) {
		fprintf(stderr, "jobfsctl: %s: not a path under the mount %s\n", arg, c->mnt);
		return JC_NOTFOUND;
	}
	return JC_OK;
}

/* ---------------------------------------------------------------- object lists */

struct objlist {
	char **v;
	size_t n, cap;
};

static int objlist_add(struct objlist *l, const char *path)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		char **v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	if (!(l->v[l->n] = strdup(path)))
		return -1;
	l->n++;
	return 0;
}

static void objlist_release(struct objlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int cmp_ver(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* The object directories (those with status.json) directly in dir, sorted
 * the way ls -v sorts. */
static int list_objects(const char *dir, struct objlist *l)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t first = l->n;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char p[PATH_MAX], s[PATH_MAX];
		if (e->d_name[0] == '.')
			continue;
		ctl_strf(p, sizeof(p), "%s/%s", dir, e->d_name);
		ctl_strf(s, sizeof(s), "%s/status.json", p);
		if (ctl_exists(s) && objlist_add(l, p) != 0) {
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	if (l->n - first > 1)
		qsort(l->v + first, l->n - first, sizeof(*l->v), cmp_ver);
	return 0;
}

/* An object's children: a queue's groups, a group's tasks, a task's nodes,
 * a batch's tasks. */
static int list_children(const char *obj, struct objlist *l)
{
	static const char *const sub[] = { "groups", "tasks", "nodes" };
	char p[PATH_MAX];
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		ctl_strf(p, sizeof(p), "%s/%s", obj, sub[i]);
		if (ctl_is_dir(p))
			return list_objects(p, l);
	}
	return list_objects(obj, l);
}

/* Everything at the top: queues, their groups, and /tasks batches. */
static int list_all(const struct ctl *c, struct objlist *l)
{
	struct objlist qs = { 0 };
	char p[PATH_MAX];
	int rc = 0;
	ctl_strf(p, sizeof(p), "%s/queues", c->mnt);
	if (list_objects(p, &qs) != 0)
		return -1;
	for (size_t i = 0; i < qs.n && rc == 0; i++) {
		rc = objlist_add(l, qs.v[i]);
		ctl_strf(p, sizeof(p), "%s/groups", qs.v[i]);
		if (rc == 0)
			rc = list_objects(p, l);
	}
	objlist_release(&qs);
	ctl_strf(p, sizeof(p), "%s/tasks", c->mnt);
	if (rc == 0)
		rc = list_objects(p, l);
	return rc;
}

/* ---------------------------------------------------------------- output */

static void cell_progress(char *buf, size_t n, const struct jc_status *st)
{
	if (st->total >= 0)
		ctl_strf(buf, n, "%lld/%lld", st->done, st->total);
	else
		ctl_strf(buf, n, "-");
}

static const char *orblank(const char *s)
{
	return s && s[0] ? s : "-";
}

static int print_table(const struct ctl *c, const struct objlist *l)
{
	static const char *const hdr[] = { "NAME", "STATE", "PROGRESS", "AGE",
					   "COST", "RATE",  "ETA",      "REASON" };
	struct jc_table *t = jc_table_new(8, hdr);
	int64_t now = now_s();
	if (!t)
		return JC_ERROR;
	for (size_t i = 0; i < l->n; i++) {
		struct jc_status st;
		char prog[48], age[32], eta[32];
		if (ctl_read_status(l->v[i], &st) != 0)
			continue; /* gone between the listing and the read */
		cell_progress(prog, sizeof(prog), &st);
		jc_age(age, sizeof(age), st.created, now);
		jc_status_eta(eta, sizeof(eta), &st, now);
		const char *row[] = { ctl_rel(c, l->v[i]),
				      st.state,
				      prog,
				      age,
				      orblank(st.cost),
				      orblank(st.cost_rate),
				      eta,
				      orblank(st.reason) };
		if (jc_table_add(t, row) != 0) {
			jc_table_free(t);
			return JC_ERROR;
		}
	}
	return ctl_table_print(t);
}

int ctl_table_print(struct jc_table *t)
{
	char *text = jc_table_render(t);
	jc_table_free(t);
	if (!text)
		return JC_ERROR;
	fputs(text, stdout);
	free(text);
	return JC_OK;
}

/* YAML of a JSON value: block style, scalars as JSON writes them (a JSON
 * string is a YAML double-quoted scalar). */
static void yaml_emit(FILE *f, json_t *v, int indent, bool inline_first);

static void yaml_scalar(FILE *f, json_t *v)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY);
	fprintf(f, "%s\n", s ? s : "null");
	free(s);
}

static void yaml_emit(FILE *f, json_t *v, int indent, bool inline_first)
{
	bool first = true;
	if (json_is_object(v) && json_object_size(v) > 0) {
		const char *k;
		json_t *x;
		json_object_foreach(v, k, x)
		{
			json_t *kj = json_string(k);
			char *ks = json_dumps(kj, JSON_ENCODE_ANY);
			int pad = first && inline_first ? 0 : indent;
			fprintf(f, "%*s%s:", pad, "", ks ? ks : k);
			free(ks);
			json_decref(kj);
			first = false;
			if ((json_is_object(x) && json_object_size(x)) ||
			    (json_is_array(x) && json_array_size(x))) {
				fputc('\n', f);
				yaml_emit(f, x, indent + 2, false);
			} else {
				fputc(' ', f);
				yaml_emit(f, x, 0, true);
			}
		}
	} else if (json_is_array(v) && json_array_size(v) > 0) {
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x)
		{
			int pad = first && inline_first ? 0 : indent;
			fprintf(f, "%*s- ", pad, "");
			first = false;
			yaml_emit(f, x, indent + 2, true);
		}
	} else if (json_is_object(v)) {
		fputs("{}\n", f);
	} else if (json_is_array(v)) {
		fputs("[]\n", f);
	} else {
		yaml_scalar(f, v);
	}
}

/* json_t of dir/status.json with "path" added; NULL when unreadable. */
static json_t *status_json(const struct ctl *c, const char *dir)
{
	char p[PATH_MAX];
	char *text;
	json_t *o;
	ctl_strf(p, sizeof(p), "%s/status.json", dir);
	text = ctl_read_file(p, STATUS_CAP);
	if (!text)
		return NULL;
	o = json_loads(text, 0, NULL);
	free(text);
	if (!json_is_object(o)) {
		json_decref(o);
		return NULL;
	}
	json_object_set_new(o, "path", json_string(ctl_rel(c, dir)));
	return o;
}

static int print_json(json_t *v, const char *fmt)
{
	if (strcmp(fmt, "json") == 0) {
		if (json_dumpf(v, stdout, JSON_INDENT(2)) != 0)
			return JC_ERROR;
		putchar('\n');
	} else {
		yaml_emit(stdout, v, 0, false);
	}
	return JC_OK;
}

static int check_format(const char *fmt)
{
	if (fmt && strcmp(fmt, "json") != 0 && strcmp(fmt, "yaml") != 0) {
		fprintf(stderr, "jobfsctl: -o %s: the formats are json and yaml\n", fmt);
		return JC_USAGE;
	}
	return JC_OK;
}

/* ---------------------------------------------------------------- get, describe */

static const struct option out_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ NULL, 0, NULL, 0 },
};

static int cmd_get(struct ctl *c, int argc, char **argv)
{
	const char *fmt = NULL;
	char path[PATH_MAX], sp[PATH_MAX];
	struct objlist l = { 0 };
	int opt, rc;
	while ((opt = getopt_long(argc, argv, "o:", out_opts, NULL)) != -1) {
		if (opt != 'o')
			return ctl_usage(NULL);
		fmt = optarg;
	}
	if ((rc = check_format(fmt)) != JC_OK)
		return rc;
	if (argc - optind > 1)
		return ctl_usage("get: one PATH at most");
	if ((rc = ctl_resolve(c, optind < argc ? argv[optind] : "", path, sizeof(path))) != JC_OK)
		return rc;
	ctl_strf(sp, sizeof(sp), "%s/status.json", path);
	if (strcmp(path, c->mnt) == 0)
		rc = list_all(c, &l);
	else if (ctl_exists(sp))
		rc = objlist_add(&l, path);
	else if (ctl_is_dir(path))
		rc = list_objects(path, &l);
	else {
		fprintf(stderr, "jobfsctl: get %s: %s\n", ctl_rel(c, path), strerror(ENOENT));
		return JC_NOTFOUND;
	}
	if (rc != 0) {
		fprintf(stderr, "jobfsctl: get %s: %s\n", ctl_rel(c, path), strerror(errno));
		objlist_release(&l);
		return JC_ERROR;
	}
	if (fmt) {
		json_t *a = json_array();
		for (size_t i = 0; i < l.n; i++) {
			json_t *o = status_json(c, l.v[i]);
			if (o)
				json_array_append_new(a, o);
		}
		rc = print_json(a, fmt);
		json_decref(a);
	} else {
		rc = print_table(c, &l);
	}
	objlist_release(&l);
	return rc;
}

/* The last max lines of text, as a JSON array or printed indented. */
static json_t *last_lines(const char *text, size_t max)
{
	json_t *a = json_array();
	size_t nl = 0;
	const char *p = text + strlen(text);
	while (p > text && nl <= max) {
		p--;
		if (*p == '\n' && p[1] != '\0' && ++nl == max + 1) {
			p++;
			break;
		}
	}
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		json_array_append_new(a, json_stringn(p, len));
		p += len + (e ? 1 : 0);
	}
	return a;
}

static int cmd_describe(struct ctl *c, int argc, char **argv)
{
	const char *fmt = NULL;
	char path[PATH_MAX], p[PATH_MAX];
	struct objlist kids = { 0 };
	char *status, *events;
	json_t *ev;
	int opt, rc;
	while ((opt = getopt_long(argc, argv, "o:", out_opts, NULL)) != -1) {
		if (opt != 'o')
			return ctl_usage(NULL);
		fmt = optarg;
	}
	if ((rc = check_format(fmt)) != JC_OK)
		return rc;
	if (argc - optind != 1)
		return ctl_usage("describe: give one PATH");
	if ((rc = ctl_resolve(c, argv[optind], path, sizeof(path))) != JC_OK)
		return rc;
	ctl_strf(p, sizeof(p), "%s/status", path);
	if (!(status = ctl_read_file(p, STATUS_CAP))) {
		fprintf(stderr, "jobfsctl: describe %s: %s\n", argv[optind],
			errno == ENOENT ? "no such object" : strerror(errno));
		return errno == ENOENT ? JC_NOTFOUND : JC_ERROR;
	}
	ctl_strf(p, sizeof(p), "%s/events", path);
	events = ctl_read_file(p, 64u << 20);
	ev = last_lines(events ? events : "", 20);
	free(events);
	if (fmt) {
		json_t *o = status_json(c, path);
		if (!o) {
			free(status);
			json_decref(ev);
			return JC_ERROR;
		}
		json_object_set(o, "events", ev);
		rc = print_json(o, fmt);
		json_decref(o);
	} else {
		size_t i;
		json_t *x;
		printf("Path: %s\n", ctl_rel(c, path));
		fputs(status, stdout);
		if (list_children(path, &kids) == 0 && kids.n > 0) {
			printf("\nChildren:\n");
			fflush(stdout);
			rc = print_table(c, &kids);
		}
		printf("\nEvents:\n");
		if (json_array_size(ev) == 0)
			printf("  <none>\n");
		json_array_foreach(ev, i, x) printf("  %s\n", json_string_value(x));
	}
	objlist_release(&kids);
	json_decref(ev);
	free(status);
	return rc;
}

/* ---------------------------------------------------------------- wait */

struct bar {
	bool tty;      /* redraw one line on stderr */
	bool on;       /* draw at all */
	size_t last;   /* length of the line drawn */
	char prev[96]; /* what a plain (not tty) line said last */
};

static void bar_draw(struct bar *b, const char *name, const struct jc_status *st, bool end)
{
	char bar[64], line[256], dur[32];
	int64_t start = jc_parse_time(st->started[0] ? st->started : st->created);
	size_t len;
	if (!b->on)
		return;
	jc_bar(bar, sizeof(bar), st->done, st->total, 32);
	jc_duration(dur, sizeof(dur), start < 0 ? 0 : now_s() - start);
	if (st->total >= 0)
		ctl_strf(line, sizeof(line), "%s %s %lld/%lld %s %s", name, bar, st->done,
			 st->total, st->state, dur);
	else
		ctl_strf(line, sizeof(line), "%s %s %s", name, st->state, dur);
	if (!b->tty) {
		char key[96];
		ctl_strf(key, sizeof(key), "%s %s", st->state, st->progress);
		if (strcmp(key, b->prev) != 0 || end)
			fprintf(stderr, "%s\n", line);
		ctl_strf(b->prev, sizeof(b->prev), "%s", key);
		return;
	}
	len = strlen(line);
	fprintf(stderr, "\r%s%*s", line, b->last > len ? (int)(b->last - len) : 0, "");
	b->last = len;
	if (end)
		fputc('\n', stderr);
	fflush(stderr);
}

/* Block until the object at path ends; its exit code.  Wakes on its
 * `watch` stream, and every 2 s in any case (a stream that ended while
 * the status still said otherwise, a status that moves with time). */
static int wait_object(const struct ctl *c, const char *path, struct bar *b, double timeout)
{
	char wp[PATH_MAX];
	int wfd = -1, code;
	struct jc_status st;
	double waited = 0;
	ctl_strf(wp, sizeof(wp), "%s/watch", path);
	for (;;) {
		struct pollfd pfd;
		int tick = 2000, r;
		if (ctl_read_status(path, &st) != 0) {
			fprintf(stderr, "jobfsctl: %s: %s\n", ctl_rel(c, path),
				errno == ENOENT ? "no such object" : strerror(errno));
			code = errno == ENOENT ? JC_NOTFOUND : JC_ERROR;
			break;
		}
		code = jc_state_exit(st.state);
		if (code < 0 && strcmp(st.state, "Draft") == 0)
			code = JC_REFUSED;
		if (code >= 0) {
			bar_draw(b, ctl_rel(c, path), &st, true);
			if (code == JC_REFUSED)
				fprintf(stderr, "jobfsctl: %s: %s%s%s\n", ctl_rel(c, path),
					st.state, st.message[0] ? ": " : "", st.message);
			break;
		}
		bar_draw(b, ctl_rel(c, path), &st, false);
		if (timeout > 0 && waited >= timeout) {
			if (b->on && b->tty)
				fputc('\n', stderr);
			fprintf(stderr, "jobfsctl: %s: still %s after %.0f s\n", ctl_rel(c, path),
				st.state, timeout);
			code = JC_TIMEOUT;
			break;
		}
		if (wfd < 0)
			wfd = open(wp, O_RDONLY | O_CLOEXEC);
		pfd.fd = wfd;
		pfd.events = POLLIN;
		if (timeout > 0 && (timeout - waited) * 1000 < tick)
			tick = (int)((timeout - waited) * 1000) + 1;
		r = poll(&pfd, wfd >= 0 ? 1 : 0, tick);
		if (r == 0) {
			waited += tick / 1000.0;
		} else if (r > 0) {
			char buf[4096];
			ssize_t n = read(wfd, buf, sizeof(buf));
			if (n <= 0) { /* the stream ended: the object is done */
				close(wfd);
				wfd = -1;
				r = poll(NULL, 0, 200);
				waited += 0.2;
			}
		}
	}
	if (wfd >= 0)
		close(wfd);
	return code;
}

static int cmd_wait(struct ctl *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	char path[PATH_MAX];
	double timeout = 0;
	struct bar b = { .on = false };
	int opt, rc;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end;
		if (opt != 't')
			return ctl_usage(NULL);
		timeout = strtod(optarg, &end);
		if (*end || timeout <= 0)
			return ctl_usage("wait: --timeout takes a number of seconds");
	}
	if (argc - optind != 1)
		return ctl_usage("wait: give one PATH");
	if ((rc = ctl_resolve(c, argv[optind], path, sizeof(path))) != JC_OK)
		return rc;
	return wait_object(c, path, &b, timeout);
}

/* ---------------------------------------------------------------- submit */

static int cmd_submit(struct ctl *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "wait", no_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	char path[PATH_MAX], sp[PATH_MAX];
	bool wait = false;
	char *spec;
	int opt, rc, fd, err = 0;
	size_t len, off = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt != 'w')
			return ctl_usage(NULL);
		wait = true;
	}
	if (argc - optind != 2)
		return ctl_usage("submit: give PATH and SPEC");
	if ((rc = ctl_resolve(c, argv[optind], path, sizeof(path))) != JC_OK)
		return rc;
	spec = strcmp(argv[optind + 1], "-") == 0 ? ctl_read_file("/dev/stdin", SPEC_CAP)
						  : ctl_read_file(argv[optind + 1], SPEC_CAP);
	if (!spec) {
		fprintf(stderr, "jobfsctl: submit: %s: %s\n", argv[optind + 1], strerror(errno));
		return errno == ENOENT ? JC_NOTFOUND : JC_ERROR;
	}
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		int e = errno;
		fprintf(stderr, "jobfsctl: submit: mkdir %s: %s\n", ctl_rel(c, path), strerror(e));
		free(spec);
		return e == ENOENT ? JC_NOTFOUND : e == EINVAL ? JC_REFUSED : JC_ERROR;
	}
	ctl_strf(sp, sizeof(sp), "%s/spec.yaml", path);
	len = strlen(spec);
	fd = open(sp, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		err = errno;
	while (fd >= 0 && !err && off < len) {
		ssize_t w = write(fd, spec + off, len - off);
		if (w < 0 && errno != EINTR)
			err = errno;
		else if (w > 0)
			off += (size_t)w;
	}
	if (fd >= 0 && close(fd) != 0 && !err)
		err = errno;
	free(spec);
	if (err) {
		struct jc_status st;
		const char *msg = "";
		if (ctl_read_status(path, &st) == 0 && st.message[0])
			msg = st.message;
		fprintf(stderr, "jobfsctl: submit %s: refused (%s)%s%s\n", ctl_rel(c, path),
			strerror(err), msg[0] ? ": " : "", msg);
		if (err == ENOENT)
			return JC_NOTFOUND;
		/* EROFS: accepted already; EACCES, EPERM: not the caller's */
		if (err == EINVAL || err == EROFS || err == EACCES || err == EPERM)
			return JC_REFUSED;
		return JC_ERROR;
	}
	printf("%s submitted\n", ctl_rel(c, path));
	fflush(stdout);
	if (wait) {
		struct bar b = { .on = true, .tty = isatty(2) };
		return wait_object(c, path, &b, 0);
	}
	return JC_OK;
}

/* ---------------------------------------------------------------- cost */

static int cmd_cost(struct ctl *c, int argc, char **argv)
{
	static const char *const hdr[] = { "NAME", "STATE", "COST", "RATE", "ESTIMATE" };
	char path[PATH_MAX], sp[PATH_MAX], total[64];
	struct objlist l = { 0 };
	struct jc_table *t;
	long long sum = 0;
	char currency[16] = "";
	char *text;
	int rc;
	if (argc > 2)
		return ctl_usage("cost: one PATH at most");
	if ((rc = ctl_resolve(c, argc == 2 ? argv[1] : "", path, sizeof(path))) != JC_OK)
		return rc;
	ctl_strf(sp, sizeof(sp), "%s/status.json", path);
	if (strcmp(path, c->mnt) == 0) {
		char q[PATH_MAX];
		ctl_strf(q, sizeof(q), "%s/queues", c->mnt);
		rc = list_objects(q, &l);
		ctl_strf(q, sizeof(q), "%s/tasks", c->mnt);
		if (rc == 0)
			rc = list_objects(q, &l);
	} else if (ctl_exists(sp)) {
		rc = objlist_add(&l, path);
		if (rc == 0)
			rc = list_children(path, &l);
	} else {
		fprintf(stderr, "jobfsctl: cost %s: no such object\n", ctl_rel(c, path));
		return JC_NOTFOUND;
	}
	if (rc != 0 || !(t = jc_table_new(5, hdr))) {
		objlist_release(&l);
		return JC_ERROR;
	}
	for (size_t i = 0; i < l.n; i++) {
		struct jc_status st;
		if (ctl_read_status(l.v[i], &st) != 0)
			continue;
		const char *row[] = { ctl_rel(c, l.v[i]), st.state, orblank(st.cost),
				      orblank(st.cost_rate), orblank(st.cost_estimate) };
		jc_table_add(t, row);
		/* the total: the top-level rows (a PATH's own row) */
		if ((strcmp(path, c->mnt) == 0 || i == 0) && st.cost_micro >= 0) {
			const char *sp2 = strchr(st.cost, ' ');
			sum += st.cost_micro;
			if (sp2)
				ctl_strf(currency, sizeof(currency), "%s", sp2 + 1);
		}
	}
	ctl_strf(total, sizeof(total), "%lld.%06lld %s", sum / 1000000, sum % 1000000, currency);
	{
		const char *row[] = { "TOTAL", "", total, "", "" };
		jc_table_add(t, row);
	}
	text = jc_table_render(t);
	if (text)
		fputs(text, stdout);
	free(text);
	jc_table_free(t);
	objlist_release(&l);
	return text ? JC_OK : JC_ERROR;
}

/* ---------------------------------------------------------------- main */

static const struct cmd {
	const char *name;
	int (*fn)(struct ctl *c, int argc, char **argv);
	bool takes_mount; /* `top [MNT]`: the positional is the mount point */
} cmds[] = {
	{ "top", ctl_top, true },    { "submit", cmd_submit, false },
	{ "get", cmd_get, false },   { "describe", cmd_describe, false },
	{ "logs", ctl_logs, false }, { "wait", cmd_wait, false },
	{ "cost", cmd_cost, false },
};

/*
 * The mount point: --mount, else $JOBFS_MOUNT, else the only jobfs mount in
 * /proc/self/mounts.  A named one must be a jobfs mount point itself (a
 * plain directory, or one inside the tree, would give empty listings and
 * "no such path" for everything, which says nothing of the real mistake).
 */
static int find_mount(struct ctl *c, const char *opt)
{
	const char *env = getenv("JOBFS_MOUNT");
	const char *named = opt ? opt : env && env[0] ? env : NULL;
	const char *from = opt ? "--mount" : "$JOBFS_MOUNT";
	char all[2048];
	char *mounts;
	int n;
	if (named && !realpath(named, c->mnt)) {
		fprintf(stderr, "jobfsctl: %s %s: %s\n", from, named, strerror(errno));
		return JC_NOTFOUND;
	}
	mounts = ctl_read_file("/proc/self/mounts", 64u << 20);
	if (!mounts) {
		fprintf(stderr, "jobfsctl: /proc/self/mounts: %s\n", strerror(errno));
		return JC_NOTFOUND;
	}
	if (named) {
		bool ok = jc_mount_is(mounts, c->mnt);
		char first[PATH_MAX];
		if (!ok) {
			n = jc_mount_find(mounts, first, sizeof(first), all, sizeof(all));
			fprintf(stderr, "jobfsctl: %s %s: not a jobfs mount point (%s%s)\n", from,
				named, n ? "jobfs is mounted at " : "no jobfs mount here",
				n ? all : "");
		}
		free(mounts);
		return ok ? JC_OK : JC_NOTFOUND;
	}
	n = jc_mount_find(mounts, c->mnt, sizeof(c->mnt), all, sizeof(all));
	free(mounts);
	if (n == 1)
		return JC_OK;
	if (n == 0)
		fprintf(stderr, "jobfsctl: no jobfs mount; mount one, or name its mount point "
				"with --mount MNT or $JOBFS_MOUNT\n");
	else
		fprintf(stderr,
			"jobfsctl: %d jobfs mounts (%s); name one with --mount MNT "
			"or $JOBFS_MOUNT\n",
			n, all);
	return JC_NOTFOUND;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mount", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl c = { .mnt = "" };
	const char *mount = NULL;
	int opt;
	while ((opt = getopt_long(argc, argv, "+m:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			mount = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return JC_OK;
		case 'V':
			printf("jobfsctl %s\n", JF_VERSION);
			return JC_OK;
		default:
			return ctl_usage(NULL);
		}
	}
	if (optind >= argc)
		return ctl_usage("give a command");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		int rc;
		char **sub = argv + optind;
		int subc = argc - optind;
		if (strcmp(sub[0], cmds[i].name) != 0)
			continue;
		if (cmds[i].takes_mount && subc == 2 && !mount && sub[1][0] != '-') {
			mount = sub[1];
			subc = 1;
		}
		if ((rc = find_mount(&c, mount)) != JC_OK)
			return rc;
		optind = 0; /* the subcommand parses its own options (0: getopt starts afresh) */
		return cmds[i].fn(&c, subc, sub);
	}
	fprintf(stderr, "jobfsctl: %s: no such command\n", argv[optind]);
	return ctl_usage(NULL);
}
