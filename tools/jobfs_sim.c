/*
 * jobfs-sim - replay a workload on jobfs's own scheduler in simulated time.
 *
 *   jobfs-sim [--cluster FILE] [--seed N] [--until DURATION] [--events]
 *             [--spot-risk-threshold P] [--state DIR] WORKLOAD.yaml
 *
 * The engine is the daemon's (engine/engine.h: same store, same scheduler,
 * same rules for retries, parallelism, capacity, gangs, timeouts and the
 * ledger); only the clock and the backend are simulated (backends/sim): a
 * node runs for its spec's RUN_SECONDS and exits with EXIT_CODE (see
 * backends/sim/sim.h for FAIL_PERCENT and ranges such as "300-900", drawn
 * from --seed).  Time jumps from one event to the next, so days of cluster
 * time take seconds.
 *
 * THE LOOP: at each instant, deliver ended runs (jf_engine_on_backend),
 * then timers (jf_engine_tick), then the submissions due, until the engine
 * is quiet; take the figures; then move the clock to the earliest of the
 * next submission, the next run end (jf_sim_next_end), the engine's next
 * timer and the next group timer (activeDeadlineSeconds, group_timeout),
 * which jf_engine_tick() acts on but does not announce.
 *
 * THE WORKLOAD FILE (YAML, at most 256 KiB)
 *
 *   cluster: |              # optional: a cluster file's text (README "The
 *     models: ...           #   cluster and its file"); --cluster FILE wins;
 *     machines: ...         #   default the built-in cluster
 *   until: 7d               # optional: stop at this simulated time (--until wins)
 *   queues:                 # made at time 0, in this order
 *     - name: batch
 *       spec: "capacity: 20\ngroup_timeout: 60m"   # optional queue spec.yaml text
 *   submit:                 # in any order; replayed by `at`, then file order
 *     - at: 0s              # a duration from the start: 90s, 30m, 2h, 1d2h
 *       queue: batch        # a group of queue `batch` ...
 *       group: a            # ... named `a`
 *       spec: |             # its spec.yaml text (native or Kubernetes Job)
 *         completions: 100
 *         parallelism: 10
 *         gpu: "4090"
 *         env: {RUN_SECONDS: "600"}
 *         command: ["sim"]
 *     - at: 1h
 *       tasks: debug        # or: independent tasks /tasks/debug (spec has count)
 *       spec: "count: 5\ncommand: [sim]\nenv: {RUN_SECONDS: '300'}"
 *     - at: 2h
 *       every: 1d           # repeat: at 2h, 1d2h, 2d2h, ... `times` in all;
 *       times: 7            #   names get -1 .. -7 (nightly-1 .. nightly-7)
 *       queue: batch
 *       group: nightly
 *       spec: ...
 *     - at: 3h              # a ctl verb (pause, resume, stop, restart) on a
 *       queue: batch        #   group or batch submitted earlier in the replay
 *       group: a
 *       ctl: stop
 *
 * Every key is checked (unknown keys, bad names, durations, duplicates, a
 * queue not listed, a ctl before its target are errors naming the line).  A
 * spec or queue spec the engine refuses stops the replay with its message:
 * a sample workload should not silently turn into a different one.
 *
 * OUTPUT
 *
 * stdout, the same for the same input and seed: with --events, first every
 * event of every group in time order ("TIME GROUP TYPE REASON OBJECT
 * MESSAGE", TIME relative to the start; the store keeps whole seconds, so
 * within one second groups come in submission order); then one line per
 * group or batch, in submission order
 * (submitted, first start, finished, final state, tasks succeeded/failed,
 * wait from submission to first start, node-seconds and cost from the
 * ledger); then the cluster: simulated span, peak GPUs and nodes in use
 * (per queue and for /tasks), mean GPU utilisation over the span, runs and
 * the ledger's total; then, when the workload has spot work, one line per
 * submit entry whose groups are spot (all repeats of an `every` entry
 * together; see SPOT REPORT).  stderr: wall time against simulated time.
 *
 * SPOT REPORT: the cluster's spot_risk_threshold (--spot-risk-threshold
 * overrides it; 1 turns the forecast off), then per entry: its
 * unit_runtime, tasks, tasks that ever started, time to start (from the
 * group's submission to the task's first attempt: mean, median and p90 by
 * nearest rank, over the tasks that started), median time to done (to the
 * task's success), preemptions (task-level Preempted events: attempts cut
 * short for on-demand work), preemptions per task and per hour of useful
 * run (the succeeded attempts' run time, node 0), and wasted GPU-hours
 * (GPUs x run time of every ended attempt that did not complete its task).
 * Whitespace-separated columns, no blank inside one: a script can cut it.
 *
 * The state (SQLite store, empty run directories) goes to a temporary
 * directory under $TMPDIR, else /dev/shm, else /tmp, removed at exit; or to
 * --state DIR, kept.  The store commits with fsync, so a directory on a
 * disk is much slower than one in memory.
 *
 * Exit codes: 0 the replay ran to its end (every group final) or to
 * --until; 1 bad usage; 2 bad workload (unreadable, not YAML, a bad key or
 * value, a spec the engine refused); 3 could not set up or run (cluster
 * file, state directory, store, engine, a simulation that does not
 * settle, a report that cannot be written); 4 stalled: nothing more could
 * happen, yet some groups never reached a final state (they wait for room
 * that never comes, or for a low-risk window through 8 simulated days in
 * which nothing ran and nothing was left to submit); 130 interrupted
 * (SIGINT, SIGTERM: the temporary state is removed first).
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/sim/sim.h"
#include "core/billing.h"
#include "core/cluster.h"
#include "core/lifecycle.h"
#include "core/names.h"
#include "core/quantity.h"
#include "core/spec.h"
#include "core/timefmt.h"
#include "core/yamltree.h"
#include "engine/engine.h"
#include "store/store.h"

#define EXIT_USAGE       1
#define EXIT_WORKLOAD    2
#define EXIT_SETUP       3
#define EXIT_STALLED     4
#define EXIT_INTERRUPTED 130

#define CLUSTER_FILE_MAX (1024 * 1024)
#define MAX_SUBMISSIONS  1000000
#define MAX_HORIZON_S    (10LL * 366 * 86400) /* ten years of simulated time */
#define IDLE_MAX_MS      (8LL * 86400 * 1000) /* a week of forecast hours, and a day */
#define LABEL_MAX        (2 * JF_NAME_MAX + 8)
#define EVBUF            8192 /* > the store's 2 KiB event line */

static const char usage_text[] =
	"usage: jobfs-sim [--cluster FILE] [--seed N] [--until DURATION] [--events]\n"
	"                 [--spot-risk-threshold P] [--state DIR] WORKLOAD.yaml\n"
	"\n"
	"  --cluster FILE    machines and prices (default: the workload's cluster:,\n"
	"                    else the built-in cluster)\n"
	"  --seed N          seed for RUN_SECONDS ranges and FAIL_PERCENT (default 1)\n"
	"  --until DURATION  stop at this simulated time (90m, 7d)\n"
	"  --events          print every event of every group, in time order\n"
	"  --spot-risk-threshold P\n"
	"                    start a spot task with a unit_runtime only while its\n"
	"                    forecast risk is at most P (0..1; 1 = forecast off;\n"
	"                    default: the cluster file's spot_risk_threshold)\n"
	"  --state DIR       keep the store in DIR (default: a temporary directory)\n"
	"Exit codes: 0 ok, 1 usage, 2 bad workload, 3 setup or simulation error,\n"
	"4 stalled (groups left waiting for room or a low-risk window that never\n"
	"comes), 130 interrupted.\n";

/* Set by SIGINT/SIGTERM; the replay loop stops at the next instant. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct opts {
	const char *cluster;
	const char *state;
	const char *workload;
	uint64_t seed;
	int64_t until_s;  /* -1 = not given */
	double spot_risk; /* < 0 = the cluster's */
	bool events;
};

/* ---- the workload ---- */

struct wqueue {
	char name[JF_NAME_MAX];
	const char *spec; /* borrowed from the document, NULL = none */
	size_t spec_len;
	int line;
	int64_t id; /* once made */
	int64_t group_timeout_s;
	int64_t peak_nodes;
};

enum wkind { W_GROUP, W_BATCH, W_CTL };

struct wsub {
	int64_t at_ms; /* from the start */
	size_t order;  /* in the expanded file order */
	enum wkind kind;
	int queue; /* index into queues; -1 for batches */
	char name[JF_NAME_MAX];
	const char *spec; /* borrowed; W_GROUP and W_BATCH */
	size_t spec_len;
	const char *verb; /* W_CTL; static */
	int line;
	size_t entry; /* index into entries: the submit[] item it came from */
};

struct wentry {                /* one submit[] item, before every/times */
	char label[LABEL_MAX]; /* "batch/nightly", "tasks/debug" (no repeat number) */
};

struct workload {
	struct jf_ydoc *doc; /* owns the strings the entries borrow */
	const char *cluster; /* inline cluster text, NULL = none */
	size_t cluster_len;
	int64_t until_s; /* -1 = none */
	struct wqueue *queues;
	size_t nqueues;
	struct wsub *subs;
	size_t nsubs;
	struct wentry *entries; /* one per submit[] item, in file order */
	size_t nentries;
};

static void workload_release(struct workload *w)
{
	jf_ydoc_free(w->doc);
	free(w->queues);
	free(w->subs);
	free(w->entries);
	memset(w, 0, sizeof(*w));
}

static enum jf_err take_duration(const struct jf_ynode *n, const char *path, int64_t *s,
				 struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	if (!jf_duration_parse(t, s) || *s > MAX_HORIZON_S)
		return jf_yerror(err, JF_EINVAL, n, path,
				 "bad duration \"%.64s\": use e.g. 90s, 30m, 2h, 1d2h (at most "
				 "10 years)",
				 t);
	return JF_OK;
}

static enum jf_err take_name(const struct jf_ynode *n, const char *path, char *out,
			     struct jf_error *err)
{
	const char *t;
	enum jf_err rc = jf_ynode_text(n, path, 0, &t, err);
	if (rc)
		return rc;
	struct jf_error e = { 0 };
	if (!jf_name_valid(t, &e))
		return jf_yerror(err, JF_EINVAL, n, path, "%s", e.msg);
	snprintf(out, JF_NAME_MAX, "%s", t);
	return JF_OK;
}

static enum jf_err take_text(const struct jf_ynode *n, const char *path, const char **out,
			     size_t *len, struct jf_error *err)
{
	if (n->type != JF_Y_SCALAR)
		return jf_yerror(err, JF_EINVAL, n, path,
				 "expected the file's text as a string (use `%s: |` and indent "
				 "the text), got %s",
				 path, jf_ynode_kind(n));
	enum jf_err rc = jf_ynode_text(n, path, 0, out, err);
	if (rc == JF_OK)
		*len = n->len;
	return rc;
}

static enum jf_err parse_queues(struct workload *w, const struct jf_ynode *seq,
				struct jf_error *err)
{
	static const char *const known[] = { "name", "spec", NULL };
	enum jf_err rc = jf_ynode_expect(seq, JF_Y_SEQ, "queues", err);
	if (rc)
		return rc;
	w->queues = calloc(seq->n ? seq->n : 1, sizeof(*w->queues));
	if (!w->queues)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	for (size_t i = 0; i < seq->n; i++) {
		const struct jf_ynode *m = seq->items[i], *v;
		struct wqueue *q = &w->queues[i];
		char path[JF_YPATH_MAX], kp[JF_YPATH_MAX];
		jf_ypath_index(path, sizeof(path), "queues", i);
		if ((rc = jf_ynode_expect(m, JF_Y_MAP, path, err)) ||
		    (rc = jf_ymap_check_keys(m, path, known, err)))
			return rc;
		q->line = m->line;
		jf_ypath_key(kp, sizeof(kp), path, "name");
		if (!(v = jf_ymap_get(m, "name")))
			return jf_yerror(err, JF_EINVAL, m, kp, "missing: every queue has a name");
		if ((rc = take_name(v, kp, q->name, err)))
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(w->queues[j].name, q->name) == 0)
				return jf_yerror(err, JF_EINVAL, v, kp,
						 "queue %s is listed twice (also line %d)", q->name,
						 w->queues[j].line);
		jf_ypath_key(kp, sizeof(kp), path, "spec");
		if ((v = jf_ymap_get(m, "spec")) &&
		    (rc = take_text(v, kp, &q->spec, &q->spec_len, err)))
			return rc;
		w->nqueues++;
	}
	return JF_OK;
}

static int queue_index(const struct workload *w, const char *name)
{
	for (size_t i = 0; i < w->nqueues; i++)
		if (strcmp(w->queues[i].name, name) == 0)
			return (int)i;
	return -1;
}

static const char *ctl_verb(const char *t)
{
	static const char *const verbs[] = { "pause", "resume", "stop", "restart" };
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(t, verbs[i]) == 0)
			return verbs[i];
	return NULL;
}

/* One submit[] entry, expanded by every/times into w->subs. */
static enum jf_err parse_submit(struct workload *w, const struct jf_ynode *m, const char *path,
				size_t *cap, struct jf_error *err)
{
	static const char *const known[] = { "at",  "queue", "group", "tasks", "spec",
					     "ctl", "every", "times", NULL };
	enum jf_err rc;
	char kp[JF_YPATH_MAX];
	const struct jf_ynode *v;
	if ((rc = jf_ynode_expect(m, JF_Y_MAP, path, err)) ||
	    (rc = jf_ymap_check_keys(m, path, known, err)))
		return rc;
	struct wsub s;
	memset(&s, 0, sizeof(s));
	s.line = m->line;
	s.queue = -1;
	s.entry = w->nentries;
	int64_t at, every = 0, times = 1;
	jf_ypath_key(kp, sizeof(kp), path, "at");
	if (!(v = jf_ymap_get(m, "at")))
		return jf_yerror(err, JF_EINVAL, m, kp, "missing: when to submit, e.g. at: 30m");
	if ((rc = take_duration(v, kp, &at, err)))
		return rc;
	const struct jf_ynode *qn = jf_ymap_get(m, "queue"), *gn = jf_ymap_get(m, "group");
	const struct jf_ynode *tn = jf_ymap_get(m, "tasks");
	if (tn && (qn || gn))
		return jf_yerror(err, JF_EINVAL, tn, path,
				 "give either queue and group (a queue's group) or tasks "
				 "(independent tasks), not both");
	char qname[JF_NAME_MAX] = "";
	if (tn) {
		jf_ypath_key(kp, sizeof(kp), path, "tasks");
		if ((rc = take_name(tn, kp, s.name, err)))
			return rc;
		s.kind = W_BATCH;
	} else {
		if (!qn || !gn)
			return jf_yerror(err, JF_EINVAL, m, path,
					 "say what to submit: queue and group, or tasks");
		jf_ypath_key(kp, sizeof(kp), path, "queue");
		if ((rc = take_name(qn, kp, qname, err)))
			return rc;
		if ((s.queue = queue_index(w, qname)) < 0)
			return jf_yerror(err, JF_EINVAL, qn, kp,
					 "no queue %s: list it under queues", qname);
		jf_ypath_key(kp, sizeof(kp), path, "group");
		if ((rc = take_name(gn, kp, s.name, err)))
			return rc;
		s.kind = W_GROUP;
	}
	const struct jf_ynode *sn = jf_ymap_get(m, "spec"), *cn = jf_ymap_get(m, "ctl");
	if (!!sn == !!cn)
		return jf_yerror(err, JF_EINVAL, m, path,
				 "give exactly one of spec (submit) and ctl (a verb)");
	if (sn) {
		jf_ypath_key(kp, sizeof(kp), path, "spec");
		if ((rc = take_text(sn, kp, &s.spec, &s.spec_len, err)))
			return rc;
	} else {
		const char *t;
		jf_ypath_key(kp, sizeof(kp), path, "ctl");
		if ((rc = jf_ynode_text(cn, kp, 0, &t, err)))
			return rc;
		s.kind = W_CTL;
		if (!(s.verb = ctl_verb(t)))
			return jf_yerror(err, JF_EINVAL, cn, kp,
					 "unknown verb \"%.32s\": use pause, resume, stop or "
					 "restart",
					 t);
	}
	const struct jf_ynode *en = jf_ymap_get(m, "every"), *xn = jf_ymap_get(m, "times");
	if (xn) {
		jf_ypath_key(kp, sizeof(kp), path, "times");
		if ((rc = jf_ynode_int(xn, kp, 1, MAX_SUBMISSIONS, &times, err)))
			return rc;
	}
	if (en) {
		jf_ypath_key(kp, sizeof(kp), path, "every");
		if ((rc = take_duration(en, kp, &every, err)))
			return rc;
		if (every <= 0)
			return jf_yerror(err, JF_EINVAL, en, kp, "must be more than 0s");
	}
	if (cn && (en || xn))
		return jf_yerror(err, JF_EINVAL, en ? en : xn, path,
				 "a ctl entry happens once: no every or times");
	if (times > 1 && !en)
		return jf_yerror(err, JF_EINVAL, xn, path, "times > 1 needs every");
	if (at + every * (times - 1) > MAX_HORIZON_S)
		return jf_yerror(err, JF_EINVAL, m, path, "the last repeat is past 10 years");
	if (times > 1 && strlen(s.name) + 1 + 7 > JF_NAME_MAX_LEN)
		return jf_yerror(err, JF_EINVAL, gn ? gn : tn, path,
				 "name %s is too long to number its repeats", s.name);
	if ((size_t)times > MAX_SUBMISSIONS - w->nsubs)
		return jf_yerror(err, JF_EINVAL, m, path, "more than %d submissions in all",
				 MAX_SUBMISSIONS);
	if (w->nsubs + (size_t)times > *cap) {
		size_t ncap = *cap ? *cap : 64;
		while (ncap < w->nsubs + (size_t)times)
			ncap *= 2;
		struct wsub *p = realloc(w->subs, ncap * sizeof(*p));
		if (!p)
			return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		w->subs = p;
		*cap = ncap;
	}
	char base[JF_NAME_MAX];
	snprintf(base, sizeof(base), "%s", s.name);
	struct wentry *ent = &w->entries[w->nentries++]; /* room: one per item */
	snprintf(ent->label, sizeof(ent->label), "%s/%s", s.queue >= 0 ? qname : "tasks", base);
	for (int64_t i = 0; i < times; i++) {
		struct wsub *d = &w->subs[w->nsubs];
		*d = s;
		d->at_ms = (at + every * i) * 1000;
		d->order = w->nsubs++;
		if (times > 1) {
			/* fits: checked above (the name, '-' and at most 7 digits) */
			char num[JF_NAME_MAX + 24];
			int k = snprintf(num, sizeof(num), "%s-%lld", base, (long long)i + 1);
			memcpy(d->name, num, (size_t)k + 1);
		}
	}
	return JF_OK;
}

static int sub_cmp(const void *a, const void *b)
{
	const struct wsub *x = a, *y = b;
	if (x->at_ms != y->at_ms)
		return x->at_ms < y->at_ms ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Group identity for duplicate checks: kind, queue, name. */
static int ident_cmp(const void *a, const void *b)
{
	const struct wsub *x = *(const struct wsub *const *)a, *y = *(const struct wsub *const *)b;
	if (x->queue != y->queue)
		return x->queue < y->queue ? -1 : 1;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

static bool same_target(const struct wsub *a, const struct wsub *b)
{
	return a->queue == b->queue && strcmp(a->name, b->name) == 0;
}

/* After sorting: no name submitted twice; every ctl comes after its target. */
static enum jf_err check_targets(struct workload *w, struct jf_error *err)
{
	size_t ng = 0;
	for (size_t i = 0; i < w->nsubs; i++)
		ng += w->subs[i].kind != W_CTL;
	const struct wsub **v = malloc((ng ? ng : 1) * sizeof(*v));
	if (!v)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	size_t k = 0;
	for (size_t i = 0; i < w->nsubs; i++)
		if (w->subs[i].kind != W_CTL)
			v[k++] = &w->subs[i];
	qsort(v, ng, sizeof(*v), ident_cmp);
	enum jf_err rc = JF_OK;
	for (size_t i = 1; i < ng && !rc; i++)
		if (same_target(v[i - 1], v[i]))
			rc = jf_error_set(err, JF_EINVAL, v[i]->line,
					  "%s%s%s is submitted twice (also line %d)",
					  v[i]->queue >= 0 ? w->queues[v[i]->queue].name : "tasks",
					  "/", v[i]->name, v[i - 1]->line);
	for (size_t i = 0; i < w->nsubs && !rc; i++) {
		const struct wsub *c = &w->subs[i];
		if (c->kind != W_CTL)
			continue;
		bool found = false;
		for (size_t j = 0; j < i && !found; j++) /* subs are in replay order */
			found = w->subs[j].kind != W_CTL && same_target(&w->subs[j], c);
		if (!found)
			rc = jf_error_set(err, JF_EINVAL, c->line,
					  "ctl %s: %s/%s is not submitted before it", c->verb,
					  c->queue >= 0 ? w->queues[c->queue].name : "tasks",
					  c->name);
	}
	free(v);
	return rc;
}

static enum jf_err workload_parse(const char *text, size_t len, struct workload *w,
				  struct jf_error *err)
{
	static const char *const known[] = { "cluster", "until", "queues", "submit", NULL };
	memset(w, 0, sizeof(*w));
	w->until_s = -1;
	enum jf_err rc = jf_ydoc_parse(text, len, &w->doc, err);
	if (rc)
		return rc;
	const struct jf_ynode *root = jf_ydoc_root(w->doc), *v;
	if (jf_ynode_is_null(root))
		return jf_error_set(err, JF_EINVAL, 0, "the workload is empty: it needs submit:");
	if ((rc = jf_ynode_expect(root, JF_Y_MAP, "", err)) ||
	    (rc = jf_ymap_check_keys(root, "", known, err)))
		return rc;
	if ((v = jf_ymap_get(root, "cluster")) &&
	    (rc = take_text(v, "cluster", &w->cluster, &w->cluster_len, err)))
		return rc;
	if ((v = jf_ymap_get(root, "until")) && (rc = take_duration(v, "until", &w->until_s, err)))
		return rc;
	if ((v = jf_ymap_get(root, "queues")) && (rc = parse_queues(w, v, err)))
		return rc;
	if (!(v = jf_ymap_get(root, "submit")))
		return jf_error_set(err, JF_EINVAL, 0,
				    "key 'submit': missing: list what to submit");
	if ((rc = jf_ynode_expect(v, JF_Y_SEQ, "submit", err)))
		return rc;
	if (!(w->entries = calloc(v->n ? v->n : 1, sizeof(*w->entries))))
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	size_t cap = 0;
	for (size_t i = 0; i < v->n; i++) {
		char path[JF_YPATH_MAX];
		jf_ypath_index(path, sizeof(path), "submit", i);
		if ((rc = parse_submit(w, v->items[i], path, &cap, err)))
			return rc;
	}
	if (w->nsubs)
		qsort(w->subs, w->nsubs, sizeof(*w->subs), sub_cmp);
	return check_targets(w, err);
}

/* ---- files and directories ---- */

static char *read_file(const char *path, size_t cap, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(cap + 1);
	size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
	int ferr = ferror(f);
	fclose(f);
	if (!buf) {
		errno = ENOMEM;
		return NULL;
	}
	if (ferr || n > cap) {
		free(buf);
		errno = ferr ? EIO : EFBIG;
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* A fresh temporary directory, in memory when /dev/shm is there. */
static char *make_temp_dir(void)
{
	const char *base = getenv("TMPDIR");
	struct stat sb;
	if (!base || !*base)
		base = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) &&
				       access("/dev/shm", W_OK) == 0
			       ? "/dev/shm"
			       : "/tmp";
	size_t n = strlen(base) + 32;
	char *dir = malloc(n);
	if (!dir)
		return NULL;
	snprintf(dir, n, "%s/jobfs-sim-XXXXXX", base);
	if (!mkdtemp(dir)) {
		free(dir);
		return NULL;
	}
	return dir;
}

/* ---- the replay ---- */

struct sgroup { /* a group or batch submitted */
	int64_t id;
	char label[LABEL_MAX]; /* "batch/a", "tasks/debug" */
	int queue;             /* -1 for batches */
	size_t entry;          /* the submit[] item it came from */
	bool final;            /* seen in a final state (cleared by a ctl) */
};

struct replay {
	struct jf_sim_clock clk;
	struct jf_engine *e;
	struct jf_backend *be; /* owned by e */
	struct jf_store *st;   /* owned by e */
	const struct jf_cluster *cl;
	struct workload *w;
	int64_t t0;
	size_t next_sub;
	struct sgroup *groups;
	size_t ngroups;
	/* figures */
	int64_t total_gpus;
	int64_t gpus_now, peak_gpus;
	int64_t gpu_ms; /* integral of GPUs in use over time */
	int64_t peak_nodes, peak_batch_nodes;
	int64_t instants;
	/* the replay in the engine's loop (engine/loop.h) */
	struct jf_loop *loop;
	int sub_timer, end_timer, group_timer, until_timer;
	const char *wpath;
	int64_t until_ms; /* -1: none */
	int64_t idle_since;
	bool until_hit;
	int code; /* an exit code that stopped the replay */
	int how;  /* enum ending, once stopped */
};

static void rel_time(int64_t ms, char *buf, size_t n)
{
	if (ms < 0) {
		snprintf(buf, n, "-");
		return;
	}
	long long s = ms / 1000, f = ms % 1000;
	long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
	int w = d ? snprintf(buf, n, "%lldd%02lld:%02lld:%02lld", d, h, m, sec)
		  : snprintf(buf, n, "%02lld:%02lld:%02lld", h, m, sec);
	if (f && w > 0 && (size_t)w < n)
		snprintf(buf + w, n - (size_t)w, ".%03lld", f);
}

static struct sgroup *find_group(struct replay *r, const struct wsub *s)
{
	char label[LABEL_MAX];
	snprintf(label, sizeof(label), "%s/%s",
		 s->queue >= 0 ? r->w->queues[s->queue].name : "tasks", s->name);
	for (size_t i = 0; i < r->ngroups; i++)
		if (strcmp(r->groups[i].label, label) == 0)
			return &r->groups[i];
	return NULL;
}

/* Submit one entry at the current time.  Returns 0 or an exit code. */
static int deliver(struct replay *r, const struct wsub *s, const char *wpath)
{
	struct jf_error err = { 0 };
	char when[32];
	rel_time(r->clk.now_ms - r->t0, when, sizeof(when));
	if (s->kind == W_CTL) {
		struct sgroup *g = find_group(r, s);
		if (!g) {
			fprintf(stderr, "jobfs-sim: %s: line %d: ctl %s: nothing submitted as %s\n",
				wpath, s->line, s->verb, s->name);
			return EXIT_WORKLOAD;
		}
		if (jf_engine_ctl(r->e, g->id, 0, s->verb, &err) != JF_OK)
			fprintf(stderr, "jobfs-sim: at %s: ctl %s %s: %s\n", when, s->verb,
				g->label, err.msg);
		g->final = false;
		return 0;
	}
	struct sgroup *g = &r->groups[r->ngroups];
	memset(g, 0, sizeof(*g));
	g->queue = s->queue;
	g->entry = s->entry;
	snprintf(g->label, sizeof(g->label), "%s/%s",
		 s->queue >= 0 ? r->w->queues[s->queue].name : "tasks", s->name);
	int64_t qid = s->queue >= 0 ? r->w->queues[s->queue].id : 0;
	enum jf_group_kind kind = s->kind == W_BATCH ? JF_KIND_BATCH : JF_KIND_GROUP;
	if (jf_engine_mkgroup(r->e, qid, kind, s->name, getuid(), getgid(), &g->id, &err) !=
	    JF_OK) {
		fprintf(stderr, "jobfs-sim: %s: line %d: %s: %s\n", wpath, s->line, g->label,
			err.msg);
		return EXIT_WORKLOAD;
	}
	r->ngroups++;
	if (jf_engine_submit(r->e, g->id, s->spec, s->spec_len, getuid(), getgid(), &err) !=
	    JF_OK) {
		fprintf(stderr, "jobfs-sim: %s: line %d: %s: spec refused: %s\n", wpath, s->line,
			g->label, err.msg);
		return EXIT_WORKLOAD;
	}
	return 0;
}

/* The next submission's time (-1: none left). */
static int64_t next_sub_at(const struct replay *r)
{
	return r->next_sub < r->w->nsubs ? r->t0 + r->w->subs[r->next_sub].at_ms : -1;
}

/* A submission's time: deliver it (one a turn; the loop takes ended runs
 * and the engine's deadlines in between, at the same instant). */
static void on_submission(struct jf_loop *l, void *ctx)
{
	struct replay *r = ctx;
	int rc = deliver(r, &r->w->subs[r->next_sub++], r->wpath);
	if (rc) {
		r->code = rc;
		jf_loop_stop(l);
		return;
	}
	jf_loop_arm(l, r->sub_timer, next_sub_at(r));
}

/* A run's end, a group timer: the clock is there, the loop does the rest
 * (the backend's fd, the engine's tick at the quiet instant). */
static void on_instant(struct jf_loop *l, void *ctx)
{
	(void)l;
	(void)ctx;
}

static void on_until(struct jf_loop *l, void *ctx)
{
	(void)l;
	struct replay *r = ctx;
	r->until_hit = true;
}

static int64_t replay_now(void *ctx)
{
	return ((struct replay *)ctx)->clk.now_ms;
}

/* The loop moves the clock: GPUs in use over the time between. */
static void advance(void *ctx, int64_t to_ms)
{
	struct replay *r = ctx;
	r->gpu_ms += r->gpus_now * (to_ms - r->clk.now_ms);
	jf_sim_advance(r->be, to_ms);
}

/* The earliest group timer after now (activeDeadlineSeconds, the queue's
 * group_timeout), or -1: jf_engine_tick() acts on them but its answer
 * covers only per-attempt deadlines and kill grace. */
static int64_t next_group_timer(struct replay *r)
{
	int64_t now = r->clk.now_ms, next = -1;
	for (size_t i = 0; i < r->ngroups; i++) {
		struct sgroup *g = &r->groups[i];
		if (g->final)
			continue;
		struct jf_group_rec rec;
		if (jf_group_get(r->st, g->id, &rec) != JF_OK)
			continue;
		int state = rec.state;
		int64_t submitted = rec.submitted_ms, started = rec.started_ms;
		jf_group_release(&rec);
		if (jf_state_final(state) || state == JF_ST_INVALID) {
			g->final = true;
			continue;
		}
		if (state != JF_ST_WAITING && state != JF_ST_RUNNING)
			continue;
		const struct jf_spec *sp = jf_engine_spec(r->e, g->id);
		int64_t t[2] = { -1, -1 };
		if (sp && sp->active_deadline > 0)
			t[0] = submitted + sp->active_deadline * 1000;
		if (g->queue >= 0 && started == 0 && r->w->queues[g->queue].group_timeout_s > 0)
			t[1] = submitted + r->w->queues[g->queue].group_timeout_s * 1000;
		for (int k = 0; k < 2; k++)
			if (t[k] > now && (next < 0 || t[k] < next))
				next = t[k];
	}
	return next;
}

static int popcount64(uint64_t v)
{
	int n = 0;
	for (; v; v &= v - 1)
		n++;
	return n;
}

/* Figures at the current instant, once it has settled. */
static void sample(struct replay *r)
{
	int64_t gpus = 0;
	for (size_t m = 0; m < r->cl->nmachines; m++) {
		struct jf_machine_use u;
		jf_engine_machine_use(r->e, m, &u);
		gpus += popcount64(u.gpu_mask);
	}
	r->gpus_now = gpus;
	if (gpus > r->peak_gpus)
		r->peak_gpus = gpus;
	int64_t all = (int64_t)jf_sim_running(r->be), inq = 0;
	for (size_t i = 0; i < r->w->nqueues; i++) {
		int64_t n = 0;
		jf_queue_running_nodes(r->st, r->w->queues[i].id, &n);
		inq += n;
		if (n > r->w->queues[i].peak_nodes)
			r->w->queues[i].peak_nodes = n;
	}
	if (all > r->peak_nodes)
		r->peak_nodes = all;
	if (all - inq > r->peak_batch_nodes)
		r->peak_batch_nodes = all - inq;
	r->instants++;
}

enum ending {
	END_DONE,    /* nothing left to happen, every group final */
	END_STALLED, /* nothing left to happen, some group not final */
	END_UNTIL,   /* stopped at --until */
};

/*
 * The instant has settled (the engine's tick, added before, found nothing
 * due): take the figures, then arm what comes next, or stop.
 */
static bool on_quiet(struct jf_loop *l, void *ctx)
{
	struct replay *r = ctx;
	if (interrupted) {
		fprintf(stderr, "jobfs-sim: interrupted\n");
		r->code = EXIT_INTERRUPTED;
		jf_loop_stop(l);
		return false;
	}
	sample(r);
	if (r->until_hit) {
		r->how = END_UNTIL;
		jf_loop_stop(l);
		return false;
	}
	int64_t now = r->clk.now_ms;
	int64_t sub = next_sub_at(r), end = jf_sim_next_end(r->be), grp = next_group_timer(r);
	jf_loop_arm(l, r->sub_timer, sub);
	jf_loop_arm(l, r->end_timer, end);
	jf_loop_arm(l, r->group_timer, grp);
	int64_t next = jf_loop_next_at(l); /* with the engine's own deadline */
	if (next < 0) {
		r->how = END_DONE;
		for (size_t i = 0; i < r->ngroups; i++)
			if (!r->groups[i].final)
				r->how = END_STALLED;
		jf_loop_stop(l);
		return false;
	}
	/* Only the engine's timer is left: spot groups look for a low-risk
	 * window every minute.  With nothing running or to come, no
	 * on-demand demand changes, so the forecast changes only with the
	 * hour of the week: a window not found in IDLE_MAX_MS never comes. */
	if (sub >= 0 || end >= 0 || grp >= 0) {
		r->idle_since = -1;
	} else if (r->idle_since < 0) {
		r->idle_since = now;
	} else if (now - r->idle_since > IDLE_MAX_MS) {
		r->how = END_STALLED;
		jf_loop_stop(l);
		return false;
	}
	if (r->until_ms >= 0 && next > r->until_ms) {
		if (r->until_ms <= now) {
			r->how = END_UNTIL;
			jf_loop_stop(l);
			return false;
		}
		jf_loop_arm(l, r->until_timer, r->until_ms); /* the earliest now */
	}
	return false;
}

/* Play the workload to its end in the engine's loop on the virtual clock;
 * returns 0 or an exit code. */
static int replay_run(struct replay *r, int64_t until_s, const char *wpath, enum ending *how)
{
	struct jf_error err = { 0 };
	r->wpath = wpath;
	r->until_ms = until_s >= 0 ? r->t0 + until_s * 1000 : -1;
	r->idle_since = -1;
	r->how = END_DONE;
	struct jf_loop_clock clock = { replay_now, advance, r };
	r->loop = jf_loop_new(&clock);
	if (!r->loop || jf_engine_attach(r->e, r->loop, false, &err) != JF_OK ||
	    (r->sub_timer = jf_loop_add_timer(r->loop, on_submission, r)) < 0 ||
	    (r->end_timer = jf_loop_add_timer(r->loop, on_instant, r)) < 0 ||
	    (r->group_timer = jf_loop_add_timer(r->loop, on_instant, r)) < 0 ||
	    (r->until_timer = jf_loop_add_timer(r->loop, on_until, r)) < 0 ||
	    jf_loop_add_before_sleep(r->loop, on_quiet, r) < 0) {
		fprintf(stderr, "jobfs-sim: event loop: %s\n",
			err.msg[0] ? err.msg : strerror(errno));
		return EXIT_SETUP;
	}
	jf_loop_arm(r->loop, r->sub_timer, next_sub_at(r));
	int rc = jf_loop_run(r->loop);
	if (rc == JF_LOOP_STUCK) {
		char when[32];
		rel_time(r->clk.now_ms - r->t0, when, sizeof(when));
		fprintf(stderr,
			"jobfs-sim: the engine does not settle at %s (runs that "
			"end at once and retry for ever?)\n",
			when);
		return EXIT_SETUP;
	}
	if (rc == JF_LOOP_ERROR) {
		fprintf(stderr, "jobfs-sim: event loop: %s\n", strerror(errno));
		return EXIT_SETUP;
	}
	*how = (enum ending)r->how;
	return r->code;
}

/* ---- events, merged across groups ---- */

struct ecur { /* a reader over one group's events text */
	int64_t id;
	int64_t off; /* next byte to read from the store */
	char *buf;   /* EVBUF bytes */
	size_t pos, len;
	bool eof;
	const char *line; /* current line (without '\n'), NULL at the end */
	size_t linelen;
	int64_t t; /* its time, ms */
};

static void ecur_next(struct jf_store *st, struct ecur *c)
{
	c->line = NULL;
	for (;;) {
		char *nl = memchr(c->buf + c->pos, '\n', c->len - c->pos);
		if (nl) {
			c->line = c->buf + c->pos;
			c->linelen = (size_t)(nl - c->line);
			c->pos = (size_t)(nl - c->buf) + 1;
			break;
		}
		if (c->eof)
			return;
		memmove(c->buf, c->buf + c->pos, c->len - c->pos);
		c->len -= c->pos;
		c->pos = 0;
		size_t got = 0;
		if (c->len == EVBUF ||
		    jf_event_read(st, JF_SCOPE_GROUP, c->id, c->off, c->buf + c->len,
				  EVBUF - c->len, &got) != JF_OK ||
		    got == 0) {
			c->eof = true;
			c->len = 0; /* an unterminated tail is not an event */
			return;
		}
		c->off += (int64_t)got;
		c->len += got;
	}
	char ts[JF_TIME_BUF];
	const char *sp = memchr(c->line, ' ', c->linelen);
	size_t tl = sp ? (size_t)(sp - c->line) : 0;
	c->t = 0;
	if (tl > 0 && tl < sizeof(ts)) {
		memcpy(ts, c->line, tl);
		ts[tl] = '\0';
		jf_time_parse_rfc3339(ts, &c->t);
	}
}

static int print_events(struct replay *r)
{
	struct ecur *c = calloc(r->ngroups ? r->ngroups : 1, sizeof(*c));
	if (!c)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < r->ngroups; i++) {
		c[i].id = r->groups[i].id;
		if (!(c[i].buf = malloc(EVBUF))) {
			rc = -1;
			goto out;
		}
		ecur_next(r->st, &c[i]);
	}
	printf("events:\n");
	for (;;) {
		size_t best = r->ngroups;
		for (size_t i = 0; i < r->ngroups; i++)
			if (c[i].line && (best == r->ngroups || c[i].t < c[best].t))
				best = i;
		if (best == r->ngroups)
			break;
		struct ecur *b = &c[best];
		const char *sp = memchr(b->line, ' ', b->linelen);
		size_t skip = sp ? (size_t)(sp - b->line) + 1 : 0;
		char when[32];
		rel_time(b->t - r->t0, when, sizeof(when));
		printf("  %s %s %.*s\n", when, r->groups[best].label, (int)(b->linelen - skip),
		       b->line + skip);
		ecur_next(r->st, b);
	}
	printf("\n");
out:
	for (size_t i = 0; i < r->ngroups; i++)
		free(c[i].buf);
	free(c);
	return rc;
}

/* ---- the report ---- */

static void print_groups(struct replay *r, int64_t now)
{
	const char *cur = r->cl->currency;
	int lw = 5;
	for (size_t i = 0; i < r->ngroups; i++) {
		int l = (int)strlen(r->groups[i].label);
		if (l > lw)
			lw = l;
	}
	printf("%-*s  %-10s  %-10s  %-10s  %-12s  %9s  %-10s  %12s  %s\n", lw, "group", "submitted",
	       "started", "finished", "state", "ok/failed", "wait", "node-seconds", "cost");
	for (size_t i = 0; i < r->ngroups; i++) {
		struct jf_group_rec g;
		if (jf_group_get(r->st, r->groups[i].id, &g) != JF_OK)
			continue;
		int64_t counts[JF_ST__COUNT] = { 0 };
		jf_group_count_tasks(r->st, g.id, counts);
		int64_t amount = 0, secs = 0;
		jf_ledger_sum(r->st, JF_SCOPE_GROUP, g.id, now, &amount, &secs);
		char sub[32], st[32], fin[32], wait[32], money[48], okf[48];
		rel_time(g.submitted_ms ? g.submitted_ms - r->t0 : -1, sub, sizeof(sub));
		rel_time(g.started_ms ? g.started_ms - r->t0 : -1, st, sizeof(st));
		rel_time(g.finished_ms ? g.finished_ms - r->t0 : -1, fin, sizeof(fin));
		rel_time(g.started_ms && g.submitted_ms ? g.started_ms - g.submitted_ms : -1, wait,
			 sizeof(wait));
		jf_money_format(amount, cur, money, sizeof(money));
		snprintf(okf, sizeof(okf), "%lld/%lld", (long long)counts[JF_ST_SUCCEEDED],
			 (long long)counts[JF_ST_FAILED]);
		printf("%-*s  %-10s  %-10s  %-10s  %-12s  %9s  %-10s  %12lld  %s\n", lw,
		       r->groups[i].label, sub, st, fin, jf_state_name(g.state), okf, wait,
		       (long long)secs, money);
		jf_group_release(&g);
	}
}

static void print_cluster(struct replay *r, int64_t now, enum ending how)
{
	int64_t span_ms = now - r->t0;
	char span[32], dur[48];
	rel_time(span_ms, span, sizeof(span));
	jf_duration_format(span_ms / 1000, dur, sizeof(dur));
	int64_t amount = 0, secs = 0;
	jf_ledger_sum(r->st, JF_SCOPE_ALL, 0, now, &amount, &secs);
	char money[48];
	jf_money_format(amount, r->cl->currency, money, sizeof(money));
	struct jf_sim_stats ss;
	jf_sim_stats(r->be, &ss);
	int64_t states[JF_ST__COUNT] = { 0 };
	for (size_t i = 0; i < r->ngroups; i++) {
		struct jf_group_rec g;
		if (jf_group_get(r->st, r->groups[i].id, &g) == JF_OK) {
			if (g.state >= 0 && g.state < JF_ST__COUNT)
				states[g.state]++;
			jf_group_release(&g);
		}
	}
	/* basis points, in integers: the same on every machine */
	int64_t util_bp = span_ms > 0 && r->total_gpus > 0
				  ? r->gpu_ms * 10000 / (r->total_gpus * span_ms)
				  : 0;
	int64_t peak_bp = r->total_gpus > 0 ? r->peak_gpus * 10000 / r->total_gpus : 0;

	printf("\ncluster %s: %zu machines, %lld GPUs\n", r->cl->name, r->cl->nmachines,
	       (long long)r->total_gpus);
	printf("  simulated span     %s (%s)%s\n", span, dur,
	       how == END_UNTIL ? ", stopped by --until" : "");
	printf("  groups             %zu:", r->ngroups);
	bool first = true;
	for (int s = 0; s < JF_ST__COUNT; s++)
		if (states[s]) {
			printf("%s %lld %s", first ? "" : ",", (long long)states[s],
			       jf_state_name(s));
			first = false;
		}
	printf("%s\n", how == END_STALLED ? " (stalled: nothing left can start them)" : "");
	printf("  peak GPUs in use   %lld of %lld (%lld.%02lld%%)\n", (long long)r->peak_gpus,
	       (long long)r->total_gpus, (long long)(peak_bp / 100), (long long)(peak_bp % 100));
	printf("  mean GPU use       %lld.%02lld%%\n", (long long)(util_bp / 100),
	       (long long)(util_bp % 100));
	printf("  peak nodes         %lld in all;", (long long)r->peak_nodes);
	for (size_t i = 0; i < r->w->nqueues; i++)
		printf(" queue %s %lld,", r->w->queues[i].name,
		       (long long)r->w->queues[i].peak_nodes);
	printf(" tasks %lld\n", (long long)r->peak_batch_nodes);
	printf("  runs               %" PRIu64 " started, %" PRIu64 " failed, %" PRIu64
	       " cut short, %zu still running\n",
	       ss.started, ss.failed, ss.signalled, jf_sim_running(r->be));
	printf("  ledger             %lld node-seconds, %s\n", (long long)secs, money);
}

/* ---- the spot report ---- */

struct i64s { /* a growing list of numbers */
	int64_t *v;
	size_t n, cap;
};

static bool i64s_push(struct i64s *a, int64_t x)
{
	if (a->n == a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 256;
		int64_t *p = realloc(a->v, ncap * sizeof(*p));
		if (!p)
			return false;
		a->v = p;
		a->cap = ncap;
	}
	a->v[a->n++] = x;
	return true;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The p-th percentile by nearest rank of a sorted list (n > 0). */
static int64_t nearest_rank(const struct i64s *a, int p)
{
	size_t k = (size_t)(((uint64_t)a->n * (uint64_t)p + 99) / 100);
	return a->v[k ? k - 1 : 0];
}

#define SPOT_COLUMNS "%-*s  %-12s  %6s  %6s  %7s  %-10s  %-10s  %-10s  %-10s  %9s  %8s  %9s  %12s\n"

/* One submit[] item's spot groups, added up. */
struct spot_acc {
	int64_t unit_runtime; /* seconds; 0 none; -1 when its groups differ */
	int64_t groups, tasks, preempted;
	int64_t run_ms;           /* succeeded attempts, node 0 */
	int64_t wasted_gpu_ms;    /* ended attempts that did not complete their task */
	struct i64s waits, dones; /* ms from submission, per task */
	struct i64s ids;          /* scratch: a group's task ids */
};

struct task_page {
	struct i64s *ids;
	int64_t last_idx;
	bool oom;
};

static int collect_task(void *ctx, int64_t id, int64_t idx)
{
	struct task_page *p = ctx;
	p->last_idx = idx;
	if (i64s_push(p->ids, id))
		return 0;
	p->oom = true;
	return 1;
}

static int gpus_in(const char *ids)
{
	int n = *ids ? 1 : 0;
	for (; *ids; ids++)
		n += *ids == ',';
	return n;
}

/* Task-level Preempted events of a group: one per attempt cut short for
 * on-demand work (the nodes' own Preempted events name .../nodes/N). */
static int count_preempted(struct jf_store *st, int64_t gid, int64_t *n)
{
	struct ecur c = { .id = gid };
	if (!(c.buf = malloc(EVBUF)))
		return -1;
	for (ecur_next(st, &c); c.line; ecur_next(st, &c)) {
		/* TIME TYPE REASON OBJECT MESSAGE */
		const char *p = c.line, *end = c.line + c.linelen, *tok[4];
		size_t len[4];
		int k = 0;
		for (; k < 4 && p < end; k++) {
			const char *sp = memchr(p, ' ', (size_t)(end - p));
			tok[k] = p;
			len[k] = sp ? (size_t)(sp - p) : (size_t)(end - p);
			p = sp ? sp + 1 : end;
		}
		if (k == 4 && len[2] == 9 && memcmp(tok[2], "Preempted", 9) == 0 &&
		    !memmem(tok[3], len[3], "/nodes/", 7))
			(*n)++;
	}
	free(c.buf);
	return 0;
}

/* Add one spot group's tasks to a. */
static int spot_add_group(struct replay *r, int64_t gid, int64_t now, struct spot_acc *a)
{
	struct jf_group_rec g;
	if (jf_group_get(r->st, gid, &g) != JF_OK)
		return 0;
	int64_t submitted = g.submitted_ms, nodes = g.nodes > 0 ? g.nodes : 1;
	jf_group_release(&g);
	a->groups++;
	a->ids.n = 0;
	struct task_page pg = { .ids = &a->ids, .last_idx = -1 };
	for (;;) {
		size_t before = a->ids.n;
		if (jf_task_list(r->st, gid, pg.last_idx, 1024, collect_task, &pg) != JF_OK ||
		    pg.oom || a->ids.n == before)
			break;
	}
	if (pg.oom)
		return -1;
	for (size_t i = 0; i < a->ids.n; i++) {
		struct jf_task_rec t;
		if (jf_task_get(r->st, a->ids.v[i], &t) != JF_OK)
			continue;
		bool ok = t.state == JF_ST_SUCCEEDED;
		int64_t finished = t.finished_ms, tid = t.id;
		jf_task_release(&t);
		a->tasks++;
		int64_t first = 0;
		for (int64_t n = 0; n < nodes; n++) {
			struct jf_node_rec nr;
			if (jf_node_find(r->st, tid, n, &nr) != JF_OK)
				continue;
			int64_t node_id = nr.id, last = nr.attempt;
			jf_node_release(&nr);
			for (int64_t k = 1; k <= last; k++) {
				struct jf_attempt_rec ar;
				if (jf_attempt_find(r->st, node_id, k, &ar) != JF_OK)
					continue;
				int64_t s = ar.start_ms, e = ar.end_ms;
				int gpus = gpus_in(ar.gpu_ids);
				jf_attempt_release(&ar);
				if (s <= 0)
					continue; /* never started */
				if (!first || s < first)
					first = s;
				if (e <= 0 || e > now)
					continue; /* still running */
				if (ok && k == last) {
					if (n == 0)
						a->run_ms += e - s;
				} else {
					a->wasted_gpu_ms += (e - s) * gpus;
				}
			}
		}
		if (first && !i64s_push(&a->waits, first - submitted))
			return -1;
		if (ok && finished && !i64s_push(&a->dones, finished - submitted))
			return -1;
	}
	return count_preempted(r->st, gid, &a->preempted);
}

/* "12.34": hundredths of a value, rounded half up (v >= 0, d > 0). */
static void fixed2(int64_t v, int64_t d, char *buf, size_t n)
{
	int64_t h = (v * 100 + d / 2) / d;
	snprintf(buf, n, "%lld.%02lld", (long long)(h / 100), (long long)(h % 100));
}

static void spot_line(const struct wentry *ent, struct spot_acc *a, int lw)
{
	char unit[32], mean[32], med[32], p90[32], done[32], per[32], perh[32], waste[32];
	if (a->unit_runtime > 0)
		jf_duration_format(a->unit_runtime, unit, sizeof(unit));
	else
		snprintf(unit, sizeof(unit), "%s", a->unit_runtime < 0 ? "mixed" : "-");
	if (a->waits.n) {
		int64_t sum = 0;
		for (size_t i = 0; i < a->waits.n; i++)
			sum += a->waits.v[i];
		qsort(a->waits.v, a->waits.n, sizeof(int64_t), i64_cmp);
		rel_time(sum / (int64_t)a->waits.n / 1000 * 1000, mean, sizeof(mean));
		rel_time(nearest_rank(&a->waits, 50), med, sizeof(med));
		rel_time(nearest_rank(&a->waits, 90), p90, sizeof(p90));
	} else {
		rel_time(-1, mean, sizeof(mean));
		rel_time(-1, med, sizeof(med));
		rel_time(-1, p90, sizeof(p90));
	}
	if (a->dones.n) {
		qsort(a->dones.v, a->dones.n, sizeof(int64_t), i64_cmp);
		rel_time(nearest_rank(&a->dones, 50), done, sizeof(done));
	} else {
		rel_time(-1, done, sizeof(done));
	}
	if (a->tasks)
		fixed2(a->preempted, a->tasks, per, sizeof(per));
	else
		snprintf(per, sizeof(per), "-");
	if (a->run_ms)
		fixed2(a->preempted * 3600000, a->run_ms, perh, sizeof(perh));
	else
		snprintf(perh, sizeof(perh), "-");
	fixed2(a->wasted_gpu_ms, 3600000, waste, sizeof(waste));
	char groups[24], tasks[24], started[24], preempted[24];
	snprintf(groups, sizeof(groups), "%lld", (long long)a->groups);
	snprintf(tasks, sizeof(tasks), "%lld", (long long)a->tasks);
	snprintf(started, sizeof(started), "%lld", (long long)a->waits.n);
	snprintf(preempted, sizeof(preempted), "%lld", (long long)a->preempted);
	printf(SPOT_COLUMNS, lw, ent->label, unit, groups, tasks, started, mean, med, p90, done,
	       preempted, per, perh, waste);
}

/* The spot report (see the top of the file), when there is spot work.
 * Returns 0, or -1 when out of memory. */
static int print_spot(struct replay *r, int64_t now, bool overridden)
{
	int lw = 6;
	bool any = false;
	for (size_t i = 0; i < r->ngroups; i++) {
		const struct jf_spec *sp = jf_engine_spec(r->e, r->groups[i].id);
		if (!sp || sp->billing != JF_BILL_SPOT)
			continue;
		any = true;
		int l = (int)strlen(r->w->entries[r->groups[i].entry].label);
		if (l > lw)
			lw = l;
	}
	if (!any)
		return 0;
	double thr = r->cl->spot_risk_max;
	printf("\nspot: risk threshold %.2f (%s)%s\n", thr,
	       overridden ? "--spot-risk-threshold" : "cluster",
	       thr >= 1.0 ? ", forecast off" : "");
	printf(SPOT_COLUMNS, lw, "series", "unit_runtime", "groups", "tasks", "started",
	       "start-mean", "start-p50", "start-p90", "done-p50", "preempted", "per-task",
	       "per-run-h", "wasted-GPU-h");
	struct spot_acc a;
	memset(&a, 0, sizeof(a));
	int rc = 0;
	for (size_t k = 0; k < r->w->nentries && rc == 0; k++) {
		a.unit_runtime = 0;
		a.groups = a.tasks = a.preempted = a.run_ms = a.wasted_gpu_ms = 0;
		a.waits.n = a.dones.n = 0;
		for (size_t i = 0; i < r->ngroups && rc == 0; i++) {
			if (r->groups[i].entry != k)
				continue;
			const struct jf_spec *sp = jf_engine_spec(r->e, r->groups[i].id);
			if (!sp || sp->billing != JF_BILL_SPOT)
				continue;
			if (a.groups == 0)
				a.unit_runtime = sp->unit_runtime;
			else if (a.unit_runtime != sp->unit_runtime)
				a.unit_runtime = -1;
			rc = spot_add_group(r, r->groups[i].id, now, &a);
		}
		if (rc == 0 && a.groups)
			spot_line(&r->w->entries[k], &a, lw);
	}
	free(a.waits.v);
	free(a.dones.v);
	free(a.ids.v);
	return rc;
}

/* ---- main ---- */

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{ "cluster", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "events", no_argument, NULL, 'e' },
		{ "state", required_argument, NULL, 'S' },
		{ "spot-risk-threshold", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	o->seed = 1;
	o->until_s = -1;
	o->spot_risk = -1;
	int c;
	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->cluster = optarg;
			break;
		case 'S':
			o->state = optarg;
			break;
		case 'e':
			o->events = true;
			break;
		case 's': {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-') {
				fprintf(stderr, "jobfs-sim: --seed %s: want a number\n", optarg);
				return -1;
			}
			o->seed = v;
			break;
		}
		case 'u':
			if (!jf_duration_parse(optarg, &o->until_s) || o->until_s > MAX_HORIZON_S) {
				fprintf(stderr,
					"jobfs-sim: --until %s: want a duration like "
					"90m or 7d\n",
					optarg);
				return -1;
			}
			break;
		case 'r': {
			char *end;
			errno = 0;
			double v = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(v >= 0.0 && v <= 1.0)) {
				fprintf(stderr,
					"jobfs-sim: --spot-risk-threshold %s: want a "
					"number from 0 to 1 (1 turns the forecast off)\n",
					optarg);
				return -1;
			}
			o->spot_risk = v;
			break;
		}
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		default:
			fputs(usage_text, stderr);
			return -1;
		}
	}
	if (optind != argc - 1) {
		fputs(usage_text, stderr);
		return -1;
	}
	o->workload = argv[optind];
	return 0;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct jf_cluster *load_cluster(const struct opts *o, const struct workload *w)
{
	struct jf_error err = { 0 };
	struct jf_cluster *c = NULL;
	if (o->cluster) {
		size_t len = 0;
		char *text = read_file(o->cluster, CLUSTER_FILE_MAX, &len);
		if (!text) {
			fprintf(stderr, "jobfs-sim: cluster file %s: %s\n", o->cluster,
				strerror(errno));
			return NULL;
		}
		enum jf_err rc = jf_cluster_parse(text, len, &c, &err);
		free(text);
		if (rc)
			fprintf(stderr, "jobfs-sim: cluster file %s: %s\n", o->cluster, err.msg);
		return rc ? NULL : c;
	}
	if (w->cluster) {
		if (jf_cluster_parse(w->cluster, w->cluster_len, &c, &err) != JF_OK) {
			fprintf(stderr, "jobfs-sim: %s: key 'cluster': %s\n", o->workload, err.msg);
			return NULL;
		}
		return c;
	}
	c = jf_cluster_builtin();
	if (!c)
		fprintf(stderr, "jobfs-sim: out of memory\n");
	return c;
}

/* Queues at time 0: made, given their spec.  Returns 0 or an exit code. */
static int make_queues(struct replay *r, const char *wpath)
{
	for (size_t i = 0; i < r->w->nqueues; i++) {
		struct wqueue *q = &r->w->queues[i];
		struct jf_error err = { 0 };
		if (jf_engine_mkqueue(r->e, q->name, getuid(), getgid(), &q->id, &err) != JF_OK) {
			fprintf(stderr, "jobfs-sim: %s: line %d: queue %s: %s\n", wpath, q->line,
				q->name, err.msg);
			return EXIT_SETUP;
		}
		if (!q->spec)
			continue;
		if (jf_engine_queue_spec(r->e, q->id, q->spec, q->spec_len, &err) != JF_OK) {
			fprintf(stderr, "jobfs-sim: %s: line %d: queue %s: spec refused: %s\n",
				wpath, q->line, q->name, err.msg);
			return EXIT_WORKLOAD;
		}
		struct jf_queue_rec qr;
		if (jf_queue_get(r->st, q->id, &qr) == JF_OK) {
			q->group_timeout_s = qr.group_timeout;
			jf_queue_release(&qr);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	if (parse_opts(argc, argv, &o) < 0)
		return EXIT_USAGE;

	/* the workload */
	struct workload w;
	struct jf_error err = { 0 };
	size_t len = 0;
	char *text = read_file(o.workload, JF_SPEC_MAX_BYTES, &len);
	if (!text) {
		fprintf(stderr, "jobfs-sim: %s: %s\n", o.workload,
			errno == EFBIG ? "larger than 256 KiB" : strerror(errno));
		return EXIT_WORKLOAD;
	}
	enum jf_err prc = workload_parse(text, len, &w, &err);
	if (prc) {
		fprintf(stderr, "jobfs-sim: %s: %s\n", o.workload, err.msg);
		workload_release(&w);
		free(text);
		return EXIT_WORKLOAD;
	}
	int64_t until_s = o.until_s >= 0 ? o.until_s : w.until_s;

	/* the engine on a simulated clock and backend */
	int code = EXIT_SETUP;
	struct replay r;
	memset(&r, 0, sizeof(r));
	r.w = &w;
	r.clk.now_ms = r.t0 = JF_SIM_EPOCH_MS;
	char *state = NULL;
	struct jf_cluster *cluster = load_cluster(&o, &w);
	struct jf_store *st = NULL;
	struct jf_backend *be = NULL;
	if (!cluster)
		goto out;
	if (o.spot_risk >= 0)
		cluster->spot_risk_max = o.spot_risk;
	if (o.state) {
		if (mkdir(o.state, 0700) < 0 && errno != EEXIST) {
			fprintf(stderr, "jobfs-sim: --state %s: %s\n", o.state, strerror(errno));
			goto out;
		}
		state = strdup(o.state);
	} else {
		state = make_temp_dir();
	}
	if (!state) {
		fprintf(stderr, "jobfs-sim: cannot make a state directory: %s\n", strerror(errno));
		goto out;
	}
	size_t dblen = strlen(state) + 16;
	char *db = malloc(dblen);
	if (!db)
		goto out;
	snprintf(db, dblen, "%s/jobfs.db", state);
	if (o.state && access(db, F_OK) == 0) {
		fprintf(stderr,
			"jobfs-sim: --state %s already holds a jobfs.db: use an empty "
			"directory\n",
			o.state);
		free(db);
		goto out;
	}
	enum jf_err src = jf_store_open(db, &st, &err);
	free(db);
	if (src) {
		fprintf(stderr, "jobfs-sim: %s\n", err.msg);
		goto out;
	}
	if (!(be = jf_sim_new(&r.clk, &err))) {
		fprintf(stderr, "jobfs-sim: %s\n", err.msg);
		goto out;
	}
	jf_sim_seed(be, o.seed);
	for (size_t m = 0; m < cluster->nmachines; m++)
		r.total_gpus += cluster->machines[m].gpus;
	size_t ngroups_max = 0;
	for (size_t i = 0; i < w.nsubs; i++)
		ngroups_max += w.subs[i].kind != W_CTL;
	r.groups = calloc(ngroups_max ? ngroups_max : 1, sizeof(*r.groups));
	if (!r.groups) {
		fprintf(stderr, "jobfs-sim: out of memory\n");
		goto out;
	}
	struct jf_engine_config cfg = {
		.state_dir = state,
		.store = st,
		.cluster = cluster,
		.backend = be,
		.clock = { .now_ms = jf_sim_now, .ctx = &r.clk },
	};
	if (jf_engine_new(&cfg, &r.e, &err) != JF_OK) {
		fprintf(stderr, "jobfs-sim: %s\n", err.msg);
		goto out;
	}
	/* the engine owns them now */
	st = NULL;
	be = NULL;
	cluster = NULL;
	r.be = cfg.backend;
	r.st = jf_engine_store(r.e);
	r.cl = jf_engine_cluster(r.e);

	size_t nctl = w.nsubs - ngroups_max;
	printf("workload %s: %zu queue%s, %zu submission%s, %zu ctl; seed %" PRIu64 "\n",
	       o.workload, w.nqueues, w.nqueues == 1 ? "" : "s", ngroups_max,
	       ngroups_max == 1 ? "" : "s", nctl, o.seed);
	char t0s[JF_TIME_BUF];
	jf_time_rfc3339(r.t0, t0s, sizeof(t0s));
	printf("time 00:00:00 is %s\n\n", t0s);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* `| head` must not skip the clean-up */
	int64_t wall0 = mono_ns();
	enum ending how = END_DONE;
	if ((code = make_queues(&r, o.workload)) ||
	    (code = replay_run(&r, until_s, o.workload, &how)))
		goto out;
	int64_t wall_ns = mono_ns() - wall0;
	int64_t now = r.clk.now_ms;

	if (o.events && print_events(&r) < 0) {
		fprintf(stderr, "jobfs-sim: out of memory\n");
		code = EXIT_SETUP;
		goto out;
	}
	print_groups(&r, now);
	print_cluster(&r, now, how);
	if (print_spot(&r, now, o.spot_risk >= 0) < 0) {
		fprintf(stderr, "jobfs-sim: out of memory\n");
		code = EXIT_SETUP;
		goto out;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "jobfs-sim: writing the report: %s\n", strerror(errno));
		code = EXIT_SETUP;
		goto out;
	}

	char dur[48];
	jf_duration_format((now - r.t0) / 1000, dur, sizeof(dur));
	double wall_s = (double)wall_ns / 1e9;
	double speed = wall_s > 0 ? (double)(now - r.t0) / 1000.0 / wall_s : 0;
	fprintf(stderr,
		"jobfs-sim: %s of simulated time (%lld s) in %.3f s of wall time, "
		"%.0f times faster; %lld instants\n",
		dur, (long long)((now - r.t0) / 1000), wall_s, speed, (long long)r.instants);
	code = how == END_STALLED ? EXIT_STALLED : 0;
out:
	jf_engine_free(r.e);
	jf_loop_free(r.loop);
	jf_store_close(st);
	jf_backend_free(be);
	jf_cluster_free(cluster);
	if (state && !o.state)
		nftw(state, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(state);
	free(r.groups);
	workload_release(&w);
	free(text);
	return code;
}
