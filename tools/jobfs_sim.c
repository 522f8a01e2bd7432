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
 *     - name: lab           # every key of a queue's spec.yaml, budgets too:
 *       spec: |             #   nothing new starts once 2.00 is spent in a
 *         budget: "2.00"    #   rolling day (reference 10)
 *         budget_period: 1d
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
 * A spec's `after:` (reference 10) names groups and batches submitted
 * earlier in the replay (each directory is made at its entry's `at`, so a
 * dependent comes after its targets: at a later `at`, or later in the file
 * at the same one); tests/sim/deps.yaml is a sample.
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
 * the ledger's total; then, when a queue has a budget, per such queue its
 * budget, the times it was exhausted and available again (its
 * BudgetExhausted and BudgetAvailable events) and what it had spent at
 * the end; then, when the workload has spot work, one line per
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
 * that never comes, for a budget with no period that stays spent, or for
 * a low-risk window through 8 simulated days in which nothing ran and
 * nothing was left to submit); 130 interrupted
 * (SIGINT, SIGTERM: the temporary state is removed first).
 *
 * THE CODE: this file holds main(), the options, the set-up and the replay
 * on the loop; tools/sim_workload.c reads the workload file and
 * tools/sim_report.c prints the reports, from the struct replay of
 * tools/sim_int.h.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/sim/sim.h"
#include "core/cluster.h"
#include "core/lifecycle.h"
#include "core/quantity.h"
#include "core/spec.h"
#include "core/timefmt.h"
#include "engine/engine.h"
#include "store/store.h"
#include "tools/sim_int.h"
#include "tools/sim_report.h"
#include "tools/sim_workload.h"

#define EXIT_USAGE       1
#define EXIT_WORKLOAD    2
#define EXIT_SETUP       3
#define EXIT_STALLED     4
#define EXIT_INTERRUPTED 130

#define CLUSTER_FILE_MAX (1024 * 1024)
#define IDLE_MAX_MS      (8LL * 86400 * 1000) /* a week of forecast hours, and a day */

static const char usage_text[] =
	"usage: jobfs-sim [--cluster FILE] [--seed N] [--until DURATION] [--events]\n"
	"                 [--spot-risk-threshold P] [--state DIR] [--eta] WORKLOAD.yaml\n"
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
	"  --eta             simulate ETAs as the daemon does (slower) and report\n"
	"                    their accuracy beside the reservation's\n"
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
	bool eta; /* --eta */
};


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
	jf_simr_rel_time(r->clk.now_ms - r->t0, when, sizeof(when));
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

/* The groups that reached a final state since the last look (a replay
 * ends "done" only when all have). */
static void mark_final(struct replay *r)
{
	for (size_t i = 0; i < r->ngroups; i++) {
		struct sgroup *g = &r->groups[i];
		if (g->final)
			continue;
		struct jf_group_rec rec;
		if (jf_group_get(r->st, g->id, &rec) != JF_OK)
			continue;
		g->final = jf_state_final(rec.state) || rec.state == JF_ST_INVALID;
		jf_group_release(&rec);
	}
}

static int popcount64(uint64_t v)
{
	int n = 0;
	for (; v; v &= v - 1)
		n++;
	return n;
}

/*
 * Reference 9.1: the time since the last instant goes to the reason each
 * group that has not started yet waited for; then each says why it waits
 * now, and the first ETA of each basis is kept (what it predicted at the
 * group's submission, against its first start in the report).
 */
static void why_sample(struct replay *r)
{
	int64_t now = r->clk.now_ms, dt = r->last_sample_ms ? now - r->last_sample_ms : 0;
	r->last_sample_ms = now;
	for (size_t i = 0; i < r->ngroups; i++) {
		struct sgroup *g = &r->groups[i];
		if (g->started || g->final)
			continue;
		if (g->reason > 0 && g->reason < JF_REASON__COUNT)
			g->wait_ms[g->reason] += dt;
		struct jf_group_rec rec;
		if (jf_group_get(r->st, g->id, &rec) != JF_OK)
			continue;
		g->started = rec.started_ms > 0;
		jf_group_release(&rec);
		struct jf_engine_why w;
		g->reason = JF_REASON_NONE;
		if (g->started || !jf_engine_why(r->e, g->id, 0, &w))
			continue;
		g->reason = jf_reason_lookup(w.reason);
		if (!g->pred_resv_ms && w.eta_resv_ms > 0)
			g->pred_resv_ms = w.eta_resv_ms;
		if (!g->pred_sim_ms && w.eta_sim_ms > 0)
			g->pred_sim_ms = w.eta_sim_ms;
	}
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
	why_sample(r);
}


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
	mark_final(r);
	/* group timers are the engine's own: its tick timer comes for them */
	int64_t sub = next_sub_at(r), end = jf_sim_next_end(r->be),
		grp = jf_engine_group_deadline(r->e);
	jf_loop_arm(l, r->sub_timer, sub);
	jf_loop_arm(l, r->end_timer, end);
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
		jf_simr_rel_time(r->clk.now_ms - r->t0, when, sizeof(when));
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


/* ---- main ---- */

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{ "cluster", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "events", no_argument, NULL, 'e' },
		{ "eta", no_argument, NULL, 'E' },
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
		case 'E':
			o->eta = true;
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
	enum jf_err prc = jf_simw_parse(text, len, &w, &err);
	if (prc) {
		fprintf(stderr, "jobfs-sim: %s: %s\n", o.workload, err.msg);
		jf_simw_release(&w);
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
	struct jf_runner *be = NULL;
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
		.runner = be,
		.clock = { .now_ms = jf_sim_now, .ctx = &r.clk },
		/* the simulation basis costs a simulation per pass: asked for */
		.eta = o.eta ? JF_ETA_INLINE : JF_ETA_OFF,
	};
	r.eta = o.eta;
	if (jf_engine_new(&cfg, &r.e, &err) != JF_OK) {
		fprintf(stderr, "jobfs-sim: %s\n", err.msg);
		goto out;
	}
	/* the engine owns them now */
	st = NULL;
	be = NULL;
	cluster = NULL;
	r.be = cfg.runner;
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

	if (o.events && jf_simr_print_events(&r) < 0) {
		fprintf(stderr, "jobfs-sim: out of memory\n");
		code = EXIT_SETUP;
		goto out;
	}
	jf_simr_print_groups(&r, now);
	jf_simr_print_cluster(&r, now, how);
	if (jf_simr_print_why(&r) < 0 || jf_simr_print_budgets(&r, now) < 0 ||
	    jf_simr_print_spot(&r, now, o.spot_risk >= 0) < 0) {
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
	jf_runner_free(be);
	jf_cluster_free(cluster);
	if (state && !o.state)
		nftw(state, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(state);
	free(r.groups);
	jf_simw_release(&w);
	free(text);
	return code;
}
