/*
 * ctl_top.c - `jobfsctl top`: a live full-screen view of the tree (ncurses).
 *
 * Three views: the main one (every queue, its groups, and /tasks batches,
 * each with its state, a progress bar, cost rate, cost, ETA and pending
 * reason), a group's tasks and nodes (enter on a group), and a node's logs
 * (`l` on a task).  Arrow keys, PgUp/PgDn, Home/End move; left, Esc or
 * Backspace go back; q quits.
 *
 * It must not load the daemon it watches.  What it reads per refresh: the
 * status.json of each group and batch (the summary rows; a queue's, which
 * costs the daemon more, at most every REFRESH_SLOW_MS), and in a
 * group's view only the tasks on screen (their index range follows from the
 * group's progress total, so no listing of 1,000 task directories).  It
 * refreshes when inotify reports a change of a file it shows (the daemon
 * touches changed status and logs files through the mount), at most four
 * times a second, and every REFRESH_SLOW_MS otherwise (durations and costs
 * move with time alone).  Keys redraw from what was read last.
 *
 * When stdout is not a terminal it prints the main view once as plain
 * lines and exits.
 */
#include "tools/ctl.h"

#include <curses.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REFRESH_MIN_MS  250  /* at most four redraws a second */
#define REFRESH_SLOW_MS 2000 /* the fallback timer */
#define LOG_TAIL        65536

enum view { VIEW_MAIN, VIEW_GROUP, VIEW_LOGS };
enum kind { K_QUEUE, K_GROUP, K_BATCH, K_TASK };

struct wpath {
	char path[PATH_MAX];
	uint32_t mask;
};

struct qcache {
	char path[PATH_MAX];
	struct jc_status st;
};

struct row {
	enum kind kind;
	char path[PATH_MAX]; /* absolute */
	char label[96];
	struct jc_status st;
	struct jc_status node; /* a task row: its node's status */
	bool have_node;
};

struct top {
	struct ctl *c;
	enum view view;
	struct row *rows;
	size_t nrows, cap;
	size_t sel, scroll;       /* the main view's */
	size_t gsel, gscroll;     /* the group view's */
	struct row group;         /* the opened group */
	long long ntasks, nnodes; /* its tasks, and nodes per task */
	char logpath[PATH_MAX];   /* the logs view's file */
	char *logtext;
	int ino;
	struct wpath *wl; /* the watches of the view being loaded */
	size_t wn, wcap;
	uint64_t whash, wset; /* their hash; that of the set in ino */
	struct qcache *qc;    /* the queues' status as last read, and when */
	size_t nqc;
	int64_t qread_ms;
	bool qreread; /* this load reads every queue again */
	bool color;
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A row for the object at path, its status read now, or copied from st
 * when that is given. */
static int add_row_st(struct top *t, enum kind k, const char *path, const char *label,
		      const struct jc_status *st)
{
	struct row *r;
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct row *nr = realloc(t->rows, cap * sizeof(*nr));
		if (!nr)
			return -1;
		t->rows = nr;
		t->cap = cap;
	}
	r = &t->rows[t->nrows];
	memset(r, 0, sizeof(*r));
	r->kind = k;
	ctl_strf(r->path, sizeof(r->path), "%s", path);
	ctl_strf(r->label, sizeof(r->label), "%s", label);
	if (st)
		r->st = *st;
	else if (ctl_read_status(path, &r->st) != 0)
		return 0; /* gone: not a row */
	t->nrows++;
	return 0;
}

static int add_row(struct top *t, enum kind k, const char *path, const char *label)
{
	return add_row_st(t, k, path, label, NULL);
}

/*
 * A queue's status sums its groups and costs the daemon more to render
 * than a group's (bench_top.py: under churn, reading it four times a
 * second took a quarter of a core).  Its row is read again at most every
 * REFRESH_SLOW_MS; the groups below it, which change what a user watches,
 * on every refresh.
 */
static const struct jc_status *queue_cached(struct top *t, const char *path)
{
	if (t->qreread)
		return NULL;
	for (size_t i = 0; i < t->nqc; i++)
		if (strcmp(t->qc[i].path, path) == 0)
			return &t->qc[i].st;
	return NULL;
}

static void queue_cache_save(struct top *t)
{
	size_t n = 0;
	struct qcache *qc;
	for (size_t i = 0; i < t->nrows; i++)
		n += t->rows[i].kind == K_QUEUE;
	qc = n ? calloc(n, sizeof(*qc)) : NULL;
	if (n && !qc)
		return;
	n = 0;
	for (size_t i = 0; i < t->nrows; i++)
		if (t->rows[i].kind == K_QUEUE) {
			memcpy(qc[n].path, t->rows[i].path, sizeof(qc[n].path));
			qc[n++].st = t->rows[i].st;
		}
	free(t->qc);
	t->qc = qc;
	t->nqc = n;
}

static int cmp_name(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* The names of dir's entries, sorted; *n of them; the caller frees. */
static char **names(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	size_t cap = 0;
	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (*n == cap) {
			char **nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		if (!(v[*n] = strdup(e->d_name)))
			break;
		(*n)++;
	}
	closedir(d);
	if (*n > 1)
		qsort(v, *n, sizeof(*v), cmp_name);
	return v;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Watches are collected while a view loads (watch_begin, watch) and set
 * up by watch_commit only when they differ from the last set (a hash of
 * the paths): a refresh that shows the same files adds no watch. */
static void watch_begin(struct top *t)
{
	t->wn = 0;
	t->whash = 1469598103934665603ULL;
}

static void watch(struct top *t, const char *path, uint32_t mask)
{
	for (const char *p = path; *p; p++)
		t->whash = (t->whash ^ (unsigned char)*p) * 1099511628211ULL;
	t->whash = (t->whash ^ mask) * 1099511628211ULL;
	if (t->wn == t->wcap) {
		size_t cap = t->wcap ? t->wcap * 2 : 64;
		struct wpath *nw = realloc(t->wl, cap * sizeof(*nw));
		if (!nw)
			return;
		t->wl = nw;
		t->wcap = cap;
	}
	ctl_strf(t->wl[t->wn].path, sizeof(t->wl[t->wn].path), "%s", path);
	t->wl[t->wn++].mask = mask;
}

static void watch_commit(struct top *t)
{
	if (t->ino >= 0 && t->whash == t->wset)
		return;
	if (t->ino >= 0)
		close(t->ino);
	t->ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	for (size_t i = 0; t->ino >= 0 && i < t->wn; i++)
		inotify_add_watch(t->ino, t->wl[i].path, t->wl[i].mask);
	t->wset = t->whash;
}

#define W_FILE (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE)
#define W_DIR  (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)

/* The main view's rows: queues and their groups, then batches. */
static void load_main(struct top *t)
{
	char p[PATH_MAX], g[PATH_MAX], s[PATH_MAX];
	size_t nq, ng;
	char **qs;
	t->qreread = mono_ms() - t->qread_ms >= REFRESH_SLOW_MS;
	if (t->qreread)
		t->qread_ms = mono_ms();
	t->nrows = 0;
	watch_begin(t);
	ctl_strf(p, sizeof(p), "%s/queues", t->c->mnt);
	watch(t, p, W_DIR);
	qs = names(p, &nq);
	for (size_t i = 0; i < nq; i++) {
		char **gs;
		ctl_strf(p, sizeof(p), "%s/queues/%s", t->c->mnt, qs[i]);
		add_row_st(t, K_QUEUE, p, qs[i], queue_cached(t, p));
		ctl_strf(s, sizeof(s), "%s/status.json", p);
		watch(t, s, W_FILE);
		ctl_strf(g, sizeof(g), "%s/groups", p);
		watch(t, g, W_DIR);
		gs = names(g, &ng);
		for (size_t j = 0; j < ng; j++) {
			char label[96];
			ctl_strf(p, sizeof(p), "%s/%s", g, gs[j]);
			ctl_strf(label, sizeof(label), "  %s", gs[j]);
			add_row(t, K_GROUP, p, label);
			ctl_strf(s, sizeof(s), "%s/status.json", p);
			watch(t, s, W_FILE);
		}
		free_names(gs, ng);
	}
	free_names(qs, nq);
	ctl_strf(p, sizeof(p), "%s/tasks", t->c->mnt);
	watch(t, p, W_DIR);
	qs = names(p, &nq);
	for (size_t i = 0; i < nq; i++) {
		char label[96];
		ctl_strf(g, sizeof(g), "%s/%s", p, qs[i]);
		ctl_strf(label, sizeof(label), "tasks/%s", qs[i]);
		add_row(t, K_BATCH, g, label);
		ctl_strf(s, sizeof(s), "%s/status.json", g);
		watch(t, s, W_FILE);
	}
	free_names(qs, nq);
	queue_cache_save(t);
	if (t->sel >= t->nrows)
		t->sel = t->nrows ? t->nrows - 1 : 0;
}

/* Task i of the opened group (a batch's are 1-<name> .. count-<name>). */
static void task_path(const struct top *t, long long i, char *out, size_t n)
{
	if (t->group.kind == K_BATCH) {
		const char *name = strrchr(t->group.path, '/');
		ctl_strf(out, n, "%s/%lld-%s", t->group.path, i + 1, name ? name + 1 : "");
	} else {
		ctl_strf(out, n, "%s/tasks/%lld", t->group.path, i);
	}
}

/* The group view's rows: the opened group's tasks x nodes on screen. */
static void load_group(struct top *t, int height)
{
	char s[PATH_MAX], tp[PATH_MAX], label[96];
	long long total;
	watch_begin(t);
	if (ctl_read_status(t->group.path, &t->group.st) != 0) {
		t->view = VIEW_MAIN;
		return;
	}
	ctl_strf(s, sizeof(s), "%s/status.json", t->group.path);
	watch(t, s, W_FILE);
	t->nnodes = t->group.st.nodes > 0 ? t->group.st.nodes : 1;
	t->ntasks = t->group.st.total > 0 ? t->group.st.total : 0;
	total = t->ntasks * t->nnodes;
	if (t->gsel >= (size_t)total)
		t->gsel = total ? (size_t)total - 1 : 0;
	if (t->gsel < t->gscroll)
		t->gscroll = t->gsel;
	if (height > 0 && t->gsel >= t->gscroll + (size_t)height)
		t->gscroll = t->gsel - (size_t)height + 1;
	t->nrows = 0;
	for (long long r = (long long)t->gscroll; r < total && r < (long long)t->gscroll + height;
	     r++) {
		long long ti = r / t->nnodes, ni = r % t->nnodes;
		struct row *row;
		task_path(t, ti, tp, sizeof(tp));
		if (t->nnodes > 1)
			ctl_strf(label, sizeof(label), "%s/nodes/%lld", strrchr(tp, '/') + 1, ni);
		else
			ctl_strf(label, sizeof(label), "%s", strrchr(tp, '/') + 1);
		if (add_row(t, K_TASK, tp, label) != 0)
			break;
		if (t->nrows == 0 || strcmp(t->rows[t->nrows - 1].path, tp) != 0) {
			/* not readable yet: a placeholder row */
			add_row(t, K_TASK, t->group.path, label);
			if (t->nrows)
				ctl_strf(t->rows[t->nrows - 1].st.state,
					 sizeof(t->rows[t->nrows - 1].st.state), "-");
		}
		row = &t->rows[t->nrows - 1];
		ctl_strf(s, sizeof(s), "%s/status.json", tp);
		watch(t, s, W_FILE);
		ctl_strf(s, sizeof(s), "%s/nodes/%lld", tp, ni);
		row->have_node = ctl_read_status(s, &row->node) == 0;
		ctl_strf(row->path, sizeof(row->path), "%s", s); /* the node, for `l` */
	}
}

static void load_logs(struct top *t)
{
	int fd;
	struct stat sb;
	watch_begin(t);
	watch(t, t->logpath, W_FILE);
	free(t->logtext);
	t->logtext = NULL;
	fd = open(t->logpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &sb) == 0) {
		off_t from = sb.st_size > LOG_TAIL ? sb.st_size - LOG_TAIL : 0;
		size_t len = 0;
		char *buf = malloc(LOG_TAIL + 1);
		ssize_t r;
		while (buf && (r = pread(fd, buf + len, LOG_TAIL - len, from + (off_t)len)) > 0)
			len += (size_t)r;
		if (buf)
			buf[len] = '\0';
		t->logtext = buf;
	}
	close(fd);
}

/* ---------------------------------------------------------------- drawing */

enum { C_RUN = 1, C_WAIT, C_OK, C_FAIL, C_STOP, C_HEAD, C_BAR };

static int state_color(const char *s)
{
	if (!strcmp(s, "Running") || !strcmp(s, "Initializing"))
		return C_RUN;
	if (!strcmp(s, "Waiting") || !strcmp(s, "Draft") || !strcmp(s, "Idle"))
		return C_WAIT;
	if (!strcmp(s, "Succeeded"))
		return C_OK;
	if (!strcmp(s, "Failed") || !strcmp(s, "Invalid") || !strcmp(s, "Preempted"))
		return C_FAIL;
	return C_STOP;
}

static void put(struct top *t, int y, int x, int color, attr_t attr, const char *s, int width)
{
	if (t->color && color)
		attron(COLOR_PAIR(color));
	attron(attr);
	mvprintw(y, x, "%-*.*s", width, width, s);
	attroff(attr);
	if (t->color && color)
		attroff(COLOR_PAIR(color));
}

struct cols {
	int name, state, bar, prog, rate, cost, eta, reason; /* x of each */
	int barw;
};

static void layout(struct cols *k, int w)
{
	bool wide = w >= 160;
	k->barw = wide ? 42 : 22;
	k->name = 0;
	k->state = wide ? 34 : 20;
	k->bar = k->state + 12;
	k->prog = k->bar + k->barw + 1;
	k->rate = k->prog + (wide ? 12 : 10);
	k->cost = k->rate + 13;
	k->eta = k->cost + (wide ? 18 : 0);
	k->reason = k->eta + 9;
}

static void draw_status_row(struct top *t, int y, const struct row *r, bool selected, int w)
{
	struct cols k;
	char bar[64], prog[48], eta[32], reason[600];
	int64_t now = time(NULL);
	layout(&k, w);
	attr_t a = selected ? A_REVERSE : A_NORMAL;
	if (selected)
		mvhline(y, 0, ' ', w), mvchgat(y, 0, w, A_REVERSE, 0, NULL);
	put(t, y, k.name, 0, a | (r->kind == K_QUEUE ? A_BOLD : 0), r->label, k.state - 1);
	put(t, y, k.state, state_color(r->st.state), a | A_BOLD, r->st.state, 11);
	jc_bar(bar, sizeof(bar), r->st.done, r->st.total, k.barw);
	put(t, y, k.bar, C_BAR, a, r->st.total >= 0 ? bar : "", k.barw);
	if (r->st.total >= 0)
		ctl_strf(prog, sizeof(prog), "%lld/%lld", r->st.done, r->st.total);
	else
		prog[0] = '\0';
	put(t, y, k.prog, 0, a, prog, k.rate - k.prog - 1);
	put(t, y, k.rate, 0, a, r->st.cost_rate, 12);
	if (w >= 160)
		put(t, y, k.cost, 0, a, r->st.cost, 17);
	jc_status_eta(eta, sizeof(eta), &r->st, now);
	put(t, y, k.eta, 0, a, eta, 8);
	if (w >= 160 && r->st.message[0])
		ctl_strf(reason, sizeof(reason), "%s%s%s", r->st.reason, r->st.reason[0] ? " " : "",
			 r->st.message);
	else
		ctl_strf(reason, sizeof(reason), "%s", r->st.reason);
	if (w > k.reason)
		put(t, y, k.reason, 0, a, reason, w - k.reason);
}

static void draw_header(struct top *t, const char *title, const char *keys, int w)
{
	char clock[16];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(clock, sizeof(clock), "%H:%M:%SZ", &tm);
	put(t, 0, 0, C_HEAD, A_BOLD, "", w);
	put(t, 0, 0, C_HEAD, A_BOLD, title, w);
	put(t, 0, w - 10 > 0 ? w - 10 : 0, C_HEAD, A_BOLD, clock, 10);
	put(t, LINES - 1, 0, 0, A_DIM, keys, w);
}

static void draw_main(struct top *t)
{
	int w = COLS, h = LINES - 4;
	struct cols k;
	long long running = 0, waiting = 0, rate = 0;
	char title[PATH_MAX + 64], sum[256];
	layout(&k, w);
	ctl_strf(title, sizeof(title), " jobfsctl top  %s", t->c->mnt);
	draw_header(t, title, " up/down move  enter open  q quit", w);
	for (size_t i = 0; i < t->nrows; i++)
		if (t->rows[i].kind != K_GROUP) {
			running += t->rows[i].st.running > 0 ? t->rows[i].st.running : 0;
			waiting += t->rows[i].st.waiting > 0 ? t->rows[i].st.waiting : 0;
			rate += strtod(t->rows[i].st.cost_rate, NULL) * 100;
		}
	ctl_strf(sum, sizeof(sum),
		 " %zu objects   running %lld   waiting %lld   rate %lld.%02lld/h", t->nrows,
		 running, waiting, rate / 100, rate % 100);
	put(t, 1, 0, 0, A_NORMAL, sum, w);
	put(t, 2, 0, 0, A_BOLD | A_UNDERLINE, "", w);
	put(t, 2, k.name, 0, A_BOLD | A_UNDERLINE, "NAME", k.state);
	put(t, 2, k.state, 0, A_BOLD | A_UNDERLINE, "STATE", 12);
	put(t, 2, k.bar, 0, A_BOLD | A_UNDERLINE, "PROGRESS", k.barw + 1);
	put(t, 2, k.prog, 0, A_BOLD | A_UNDERLINE, "DONE", k.rate - k.prog);
	put(t, 2, k.rate, 0, A_BOLD | A_UNDERLINE, "RATE", 13);
	if (w >= 160)
		put(t, 2, k.cost, 0, A_BOLD | A_UNDERLINE, "COST", 18);
	put(t, 2, k.eta, 0, A_BOLD | A_UNDERLINE, "ETA", 9);
	if (w > k.reason)
		put(t, 2, k.reason, 0, A_BOLD | A_UNDERLINE,
		    w >= 160 ? "REASON / MESSAGE" : "REASON", w - k.reason);
	if (t->sel < t->scroll)
		t->scroll = t->sel;
	if (h > 0 && t->sel >= t->scroll + (size_t)h)
		t->scroll = t->sel - (size_t)h + 1;
	for (int y = 0; y < h && t->scroll + (size_t)y < t->nrows; y++)
		draw_status_row(t, 3 + y, &t->rows[t->scroll + (size_t)y],
				t->scroll + (size_t)y == t->sel, w);
	if (t->nrows == 0)
		put(t, 3, 0, 0, A_DIM, " no queues, groups or tasks yet", w);
}

static void draw_group(struct top *t)
{
	int w = COLS;
	char title[PATH_MAX + 64], bar[64];
	int64_t now = time(NULL);
	ctl_strf(title, sizeof(title), " %s  %s %s", ctl_rel(t->c, t->group.path),
		 t->group.st.state, t->group.st.progress);
	draw_header(t, title, " up/down move  l logs  left/esc back  q quit", w);
	jc_bar(bar, sizeof(bar), t->group.st.done, t->group.st.total, w >= 160 ? 62 : 42);
	put(t, 1, 1, C_BAR, A_NORMAL, bar, w - 1);
	{
		char s[256];
		ctl_strf(s, sizeof(s), "  %s  running %lld  failed %lld  %s", t->group.st.cost,
			 t->group.st.running, t->group.st.failed, t->group.st.cost_rate);
		if ((int)strlen(bar) + 2 < w)
			put(t, 1, (int)strlen(bar) + 1, 0, A_NORMAL, s, w - (int)strlen(bar) - 1);
	}
	static const struct {
		const char *name;
		int x;
	} hd[] = { { "TASK", 0 },      { "STATE", 14 }, { "ATTEMPT", 26 }, { "MACHINE", 35 },
		   { "DURATION", 52 }, { "COST", 62 },  { "MESSAGE", 80 } };
	put(t, 2, 0, 0, A_BOLD | A_UNDERLINE, "", w);
	for (size_t i = 0; i < sizeof(hd) / sizeof(hd[0]); i++)
		if (hd[i].x < w)
			put(t, 2, hd[i].x, 0, A_BOLD | A_UNDERLINE, hd[i].name,
			    i + 1 < sizeof(hd) / sizeof(hd[0]) ? hd[i + 1].x - hd[i].x
							       : w - hd[i].x);
	for (size_t i = 0; i < t->nrows; i++) {
		const struct row *r = &t->rows[i];
		const struct jc_status *s = r->have_node ? &r->node : &r->st;
		bool sel = t->gscroll + i == t->gsel;
		attr_t a = sel ? A_REVERSE : A_NORMAL;
		char att[16], dur[32];
		int64_t st = jc_parse_time(s->started);
		int64_t fin = jc_parse_time(s->finished);
		int y = 3 + (int)i;
		if (sel)
			mvhline(y, 0, ' ', w), mvchgat(y, 0, w, A_REVERSE, 0, NULL);
		ctl_strf(att, sizeof(att), "%lld", r->st.attempt > 0 ? r->st.attempt : 0);
		jc_duration(dur, sizeof(dur), st < 0 ? -1 : (fin >= 0 ? fin : now) - st);
		put(t, y, 0, 0, a, r->label, 13);
		put(t, y, 14, state_color(s->state), a | A_BOLD, s->state, 11);
		put(t, y, 26, 0, a, att, 8);
		put(t, y, 35, 0, a, r->have_node ? r->node.machine : "", 16);
		put(t, y, 52, 0, a, dur, 9);
		put(t, y, 62, 0, a, r->st.cost, 17);
		if (w > 80)
			put(t, y, 80, 0, a, r->st.message[0] ? r->st.message : s->message, w - 80);
	}
}

static void draw_logs(struct top *t)
{
	int w = COLS, h = LINES - 2;
	char title[PATH_MAX + 16];
	const char *p, *text = t->logtext ? t->logtext : "";
	int n = 0;
	ctl_strf(title, sizeof(title), " logs  %s", ctl_rel(t->c, t->logpath));
	draw_header(t, title, " left/esc back  q quit", w);
	/* the last h lines */
	p = text + strlen(text);
	if (p > text && p[-1] == '\n')
		p--;
	while (p > text && n < h) {
		p--;
		if (*p == '\n')
			n++;
	}
	if (*p == '\n')
		p++;
	for (int y = 1; y <= h && *p; y++) {
		const char *e = strchr(p, '\n');
		int len = e ? (int)(e - p) : (int)strlen(p);
		mvprintw(y, 0, "%.*s", len < w ? len : w, p);
		p += len + (e ? 1 : 0);
	}
	if (!text[0])
		put(t, 1, 0, 0, A_DIM, " (no output yet)", w);
}

static void draw(struct top *t)
{
	erase();
	if (t->view == VIEW_MAIN)
		draw_main(t);
	else if (t->view == VIEW_GROUP)
		draw_group(t);
	else
		draw_logs(t);
	refresh();
}

static void load(struct top *t)
{
	if (t->view == VIEW_MAIN)
		load_main(t);
	else if (t->view == VIEW_GROUP)
		load_group(t, LINES - 4);
	else
		load_logs(t);
	watch_commit(t);
}

/* ---------------------------------------------------------------- keys */

/* 1 to reload, 0 to redraw, -1 to quit. */
static int key(struct top *t, int ch)
{
	size_t *sel = t->view == VIEW_GROUP ? &t->gsel : &t->sel;
	size_t n = t->view == VIEW_GROUP ? (size_t)(t->ntasks * t->nnodes) : t->nrows;
	size_t page = LINES > 5 ? (size_t)LINES - 5 : 1;
	switch (ch) {
	case 'q':
	case 'Q':
		return -1;
	case KEY_UP:
	case 'k':
		if (*sel > 0)
			(*sel)--;
		return t->view == VIEW_GROUP;
	case KEY_DOWN:
	case 'j':
		if (*sel + 1 < n)
			(*sel)++;
		return t->view == VIEW_GROUP;
	case KEY_PPAGE:
		*sel = *sel > page ? *sel - page : 0;
		return t->view == VIEW_GROUP;
	case KEY_NPAGE:
		*sel = n && *sel + page >= n ? n - 1 : *sel + page;
		return t->view == VIEW_GROUP;
	case KEY_HOME:
		*sel = 0;
		return t->view == VIEW_GROUP;
	case KEY_END:
		*sel = n ? n - 1 : 0;
		return t->view == VIEW_GROUP;
	case '\n':
	case '\r':
	case KEY_ENTER:
	case KEY_RIGHT:
		if (t->view == VIEW_MAIN && t->sel < t->nrows && t->rows[t->sel].kind != K_QUEUE) {
			t->group = t->rows[t->sel];
			t->gsel = t->gscroll = 0;
			t->view = VIEW_GROUP;
			return 1;
		}
		if (t->view != VIEW_GROUP)
			return 0;
		/* enter on a task opens its logs */
		/* fall through */
	case 'l':
		if (t->view == VIEW_GROUP && t->gsel >= t->gscroll &&
		    t->gsel - t->gscroll < t->nrows) {
			ctl_strf(t->logpath, sizeof(t->logpath), "%s/logs",
				 t->rows[t->gsel - t->gscroll].path);
			t->view = VIEW_LOGS;
			return 1;
		}
		return 0;
	case KEY_LEFT:
	case KEY_BACKSPACE:
	case 127:
	case 27:
	case 'h':
		if (t->view == VIEW_LOGS)
			t->view = VIEW_GROUP;
		else
			t->view = VIEW_MAIN;
		return 1;
	case KEY_RESIZE:
		return 1;
	default:
		return 0;
	}
}

/* ---------------------------------------------------------------- plain */

static int plain(struct top *t)
{
	static const char *const hdr[] = { "NAME", "STATE", "PROGRESS", "DONE",
					   "RATE", "COST",  "ETA",      "REASON" };
	struct jc_table *tb = jc_table_new(8, hdr);
	int64_t now = time(NULL);
	if (!tb)
		return JC_ERROR;
	load_main(t);
	for (size_t i = 0; i < t->nrows; i++) {
		const struct row *r = &t->rows[i];
		char bar[64] = "", prog[48] = "", eta[32];
		if (r->st.total >= 0) {
			jc_bar(bar, sizeof(bar), r->st.done, r->st.total, 22);
			ctl_strf(prog, sizeof(prog), "%lld/%lld", r->st.done, r->st.total);
		}
		jc_status_eta(eta, sizeof(eta), &r->st, now);
		const char *row[] = { ctl_rel(t->c, r->path), r->st.state, bar, prog,
				      r->st.cost_rate,        r->st.cost,  eta, r->st.reason };
		if (jc_table_add(tb, row) != 0) {
			jc_table_free(tb);
			return JC_ERROR;
		}
	}
	return ctl_table_print(tb);
}

/* ---------------------------------------------------------------- main loop */

int ctl_top(struct ctl *c, int argc, char **argv)
{
	struct top t = { .c = c, .ino = -1 };
	int64_t last = 0;
	bool dirty = true;
	int rc = JC_OK;
	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "jobfsctl: top takes no arguments but the mount point\n");
		return JC_USAGE;
	}
	if (!isatty(1)) {
		rc = plain(&t);
		goto out;
	}
	setlocale(LC_ALL, "");
	if (!initscr()) {
		rc = JC_ERROR;
		goto out;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	set_escdelay(50);
	if (has_colors()) {
		start_color();
		use_default_colors();
		init_pair(C_RUN, COLOR_GREEN, -1);
		init_pair(C_WAIT, COLOR_YELLOW, -1);
		init_pair(C_OK, COLOR_CYAN, -1);
		init_pair(C_FAIL, COLOR_RED, -1);
		init_pair(C_STOP, COLOR_MAGENTA, -1);
		init_pair(C_HEAD, COLOR_WHITE, COLOR_BLUE);
		init_pair(C_BAR, COLOR_GREEN, -1);
		t.color = true;
	}
	for (;;) {
		struct pollfd pfd[2] = { { .fd = 0, .events = POLLIN },
					 { .fd = t.ino, .events = POLLIN } };
		int64_t now = mono_ms();
		int timeout = REFRESH_SLOW_MS, ch, k = 0;
		if (dirty && now - last >= REFRESH_MIN_MS) {
			load(&t);
			draw(&t);
			last = now;
			dirty = false;
		}
		if (dirty)
			timeout = (int)(REFRESH_MIN_MS - (now - last));
		if (poll(pfd, t.ino >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR)
			break;
		if (mono_ms() - last >= REFRESH_SLOW_MS)
			dirty = true;
		if (t.ino >= 0 && (pfd[1].revents & POLLIN)) {
			char buf[8192];
			while (read(t.ino, buf, sizeof(buf)) > 0)
				;
			dirty = true;
		}
		while ((ch = getch()) != ERR) {
			int r = key(&t, ch);
			if (r < 0)
				goto done;
			k |= r ? 2 : 1;
		}
		if (k & 2) { /* another view, or a group's other tasks: read now */
			load(&t);
			draw(&t);
			last = mono_ms();
			dirty = false;
		} else if (k & 1) {
			draw(&t);
		}
	}
done:
	endwin();
out:
	if (t.ino >= 0)
		close(t.ino);
	free(t.rows);
	free(t.qc);
	free(t.wl);
	free(t.logtext);
	return rc;
}
