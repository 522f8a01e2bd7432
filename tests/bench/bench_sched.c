/*
 * bench_sched.c - the scheduler in simulated time: core/plan.c beside the
 * reference of tests/plan_ref.c, on one workload.
 *
 * THE WORKLOAD (all from --seed)
 *   A cluster of --machines machines with 8 GPUs each, of three models
 *   (50/30/20 %), a node getting per GPU its model's share of cores and
 *   memory.  --tasks tasks in 1,000 groups submitted at once, in 4 queues
 *   (40/25/15/10 % of the groups; capacity unlimited, 4x, 2x and 1x the
 *   machines, in nodes) or independent (10 %); gangs of 1/2/4/8 nodes
 *   (70/15/10/5 %), 1/2/4/8 GPUs per node (50/25/15/10 %), 5 % CPU-only
 *   groups; parallelism 10..509; a timeout of 5..60 minutes (any second)
 *   per group.  Each group's share of the tasks is random (1..1000 parts).
 *
 * A STEP
 *   Release the tasks that have ended, run one pass, start what it
 *   decided.  A task runs a random whole number of 5-minute steps, at most
 *   its timeout (its end bound), so ends come in batches and the next step
 *   is the next time anything ends: one pass per step, the way the engine
 *   runs one per batch of events.
 *
 * THE FIGURES
 *   simulation: every step until no work is left; a placement is one node
 *   placed (a task of k nodes is k placements); per second of wall time
 *   of the whole loop (the pass and the bookkeeping around it).
 *   one step at a backlog: the simulation's state after a few steps (the
 *   cluster full), the same groups with their waiting counts scaled to
 *   10k, 100k and 1M tasks; the pass time (median of 5 for the planner,
 *   one pass for the reference).  Groups carry counts, so this should not
 *   grow with the backlog.
 *   The reference is slow by design: its simulation stops after
 *   --ref-seconds of wall time (default 10; 0: no reference at all), its
 *   figures are over those first steps, and the planner's over the same
 *   steps are printed beside them.  Its one step costs about a second
 *   whatever the backlog, so it is measured at all three.  Both take the
 *   same decisions (the unit test checks it); a hash of the starts over
 *   the common steps, and the counts at each backlog, check it here too.
 *   Each measurement runs in a child process of its own (fork), so its
 *   peak RSS (ru_maxrss) is its own and a reference pass that runs past
 *   its limit can be cut off (alarm) without losing the rest.
 *
 * Usage: bench_sched [--tasks N] [--machines M] [--seed S] [--ref-seconds T]
 * Exit: 0 the figures were printed (whether or not the targets were met);
 * 1 a run failed (a pass returned an error, out of memory); 2 bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/plan.h"
#include "tests/plan_ref.h"

#define GIB                     (INT64_C(1) << 30)
#define MINUTE_MS               INT64_C(60000)
#define STEP_MS                 (5 * MINUTE_MS)
#define NMODELS                 3
#define NGROUPS                 1000
#define NQUEUES                 4
#define MAXK                    8  /* the largest gang */
#define SNAP_STEPS              10 /* steps before the backlog snapshot */
#define REPEAT                  5  /* planner passes per backlog figure */
#define TARGET_PLACEMENTS_PER_S 100000.0

static const int64_t CPG[NMODELS] = { 20000, 16000, 24000 };            /* cpu per GPU */
static const int64_t MPG[NMODELS] = { 101 * GIB, 64 * GIB, 128 * GIB }; /* memory per GPU */
static const int64_t BACKLOGS[] = { 10000, 100000, 1000000 };
#define NBACKLOGS (sizeof(BACKLOGS) / sizeof(BACKLOGS[0]))

struct opts {
	int64_t tasks;
	size_t machines;
	uint64_t seed;
	double ref_seconds;
};

/* ---- randomness ---- */

struct rng {
	uint64_t s;
};

static uint64_t rnext(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * UINT64_C(2685821657736338717);
}

static int64_t rnd(struct rng *r, int64_t n)
{
	return (int64_t)(rnext(r) % (uint64_t)n);
}

/* One of the n values v by their weights w in percent (adding up to 100). */
static int64_t pick(struct rng *r, const int64_t *v, const int *w, int n)
{
	int64_t x = rnd(r, 100);
	for (int i = 0; i < n - 1; i++) {
		if (x < w[i])
			return v[i];
		x -= w[i];
	}
	return v[n - 1];
}

static double secs_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- the two schedulers behind one face ---- */

enum which { PLANNER, REFERENCE };

struct sched {
	enum which which;
	struct jf_plan plan;
	struct plan_ref ref;
};

static void sched_init(struct sched *s, enum which which)
{
	s->which = which;
	jf_plan_init(&s->plan);
	plan_ref_init(&s->ref);
}

static void sched_release(struct sched *s)
{
	jf_plan_release(&s->plan);
	plan_ref_release(&s->ref);
}

static bool sched_pass(struct sched *s, struct jf_sched_machine *m, size_t nm,
		       const struct jf_plan_in *in)
{
	struct jf_error err = { 0 };
	if (s->which == REFERENCE)
		return plan_ref_pass(&s->ref, in, m, nm);
	if (jf_plan_pass(&s->plan, m, nm, in, &err) == JF_OK)
		return true;
	fprintf(stderr, "bench_sched: %s\n", err.msg);
	return false;
}

static size_t sched_nstarts(const struct sched *s)
{
	return s->which == REFERENCE ? s->ref.nst : s->plan.nstarts;
}

static size_t sched_nresv(const struct sched *s)
{
	return s->which == REFERENCE ? s->ref.nrv : s->plan.nresv;
}

/* Start i: its group, and its slots. */
static size_t sched_start(const struct sched *s, size_t i, const struct jf_sched_slot **slots)
{
	if (s->which == REFERENCE) {
		*slots = &s->ref.slots[s->ref.st[i].slot];
		return s->ref.st[i].group;
	}
	*slots = &s->plan.slots[s->plan.starts[i].slot];
	return s->plan.starts[i].group;
}

/* ---- the simulated cluster ---- */

struct task {               /* a running task */
	int64_t end, bound; /* when it ends; its end bound */
	size_t group;
	struct jf_sched_slot slots[MAXK];
};

struct sim {
	size_t nm;
	struct jf_sched_machine *m; /* free now */
	struct jf_plan_queue q[NQUEUES];
	struct jf_plan_group *g; /* in submission order */
	size_t ng;
	struct task *run;
	struct jf_plan_running *in_run;
	size_t nrun, caprun;
	int64_t now, waiting;
	struct rng r; /* durations */
	uint64_t steps, tasks, placements, hash;
	double pass_s;
};

static struct jf_sched_req gpu_req(int model, int64_t gpus, int64_t nodes)
{
	struct jf_sched_req r = { model, (int)gpus, gpus * CPG[model], gpus * MPG[model], nodes };
	return r;
}

static void sim_free(struct sim *s)
{
	if (!s)
		return;
	free(s->m);
	free(s->g);
	free(s->run);
	free(s->in_run);
	free(s);
}

static struct sim *sim_new(const struct opts *o)
{
	static const int64_t K[4] = { 1, 2, 4, 8 }, GPUS[4] = { 1, 2, 4, 8 };
	static const int64_t Q[5] = { 0, 1, 2, 3, -1 };
	static const int KW[4] = { 70, 15, 10, 5 }, GW[4] = { 50, 25, 15, 10 };
	static const int QW[5] = { 40, 25, 15, 10, 10 };
	struct sim *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	struct rng r = { o->seed * UINT64_C(0x9E3779B97F4A7C15) | 1 };
	s->r.s = o->seed * UINT64_C(0xD1B54A32D192ED03) | 1;
	s->nm = o->machines;
	s->ng = o->tasks < NGROUPS ? (size_t)o->tasks : NGROUPS;
	s->m = malloc(s->nm * sizeof(*s->m));
	s->g = calloc(s->ng ? s->ng : 1, sizeof(*s->g));
	if (!s->m || !s->g) {
		sim_free(s);
		return NULL;
	}
	for (size_t i = 0; i < s->nm; i++) {
		int model = i % 10 < 5 ? 0 : i % 10 < 8 ? 1 : 2;
		s->m[i] =
			(struct jf_sched_machine){ model, 8, 0xff, 8 * CPG[model], 8 * MPG[model] };
	}
	int64_t nm = (int64_t)s->nm;
	s->q[0] = (struct jf_plan_queue){ 0, 0 };
	s->q[1] = (struct jf_plan_queue){ 4 * nm, 0 };
	s->q[2] = (struct jf_plan_queue){ 2 * nm, 0 };
	s->q[3] = (struct jf_plan_queue){ nm > MAXK ? nm : MAXK, 0 };
	int64_t parts[NGROUPS], total = 0;
	for (size_t i = 0; i < s->ng; i++) {
		struct jf_plan_group *g = &s->g[i];
		int64_t k = pick(&r, K, KW, 4);
		if (rnd(&r, 20) == 0) {
			g->req = (struct jf_sched_req){ -1, 0, (1 + rnd(&r, 8)) * 1000,
							(4 + rnd(&r, 28)) * GIB, k };
		} else {
			int64_t x = rnd(&r, 10);
			g->req = gpu_req(x < 5 ? 0 : x < 8 ? 1 : 2, pick(&r, GPUS, GW, 4), k);
		}
		g->id = (int64_t)i + 1;
		g->queue = (int)pick(&r, Q, QW, 5);
		g->parallelism = 10 + rnd(&r, 500);
		g->timeout_ms = STEP_MS + rnd(&r, 11 * STEP_MS / 1000 + 1) * 1000;
		parts[i] = 1 + rnd(&r, 1000);
		total += parts[i];
	}
	/* the tasks, shared out by parts; what rounding leaves, one each */
	int64_t given = 0;
	for (size_t i = 0; i < s->ng; i++) {
		s->g[i].waiting =
			o->tasks / total * parts[i] + (o->tasks % total) * parts[i] / total;
		given += s->g[i].waiting;
	}
	for (size_t i = 0; given < o->tasks; i = (i + 1) % s->ng, given++)
		s->g[i].waiting++;
	s->waiting = o->tasks;
	return s;
}

/* Room for one more running task; false if memory ran out. */
static bool sim_grow(struct sim *s)
{
	if (s->nrun < s->caprun)
		return true;
	size_t cap = s->caprun ? 2 * s->caprun : 1024;
	struct task *run = realloc(s->run, cap * sizeof(*run));
	if (!run)
		return false;
	s->run = run;
	struct jf_plan_running *in_run = realloc(s->in_run, cap * sizeof(*in_run));
	if (!in_run)
		return false;
	s->in_run = in_run;
	s->caprun = cap;
	return true;
}

static void sim_end(struct sim *s, size_t i)
{
	struct task *t = &s->run[i];
	struct jf_plan_group *g = &s->g[t->group];
	for (int64_t n = 0; n < g->req.nodes; n++)
		jf_sched_release(s->m, &t->slots[n]);
	g->running--;
	if (g->queue >= 0)
		s->q[g->queue].held -= g->req.nodes;
	s->run[i] = s->run[--s->nrun];
}

static struct jf_plan_in sim_in(struct sim *s)
{
	for (size_t i = 0; i < s->nrun; i++) {
		const struct task *t = &s->run[i];
		const struct jf_plan_group *g = &s->g[t->group];
		s->in_run[i] = (struct jf_plan_running){ t->slots, (size_t)g->req.nodes, g->queue,
							 t->bound };
	}
	return (struct jf_plan_in){ s->now, s->in_run, s->nrun, s->q, NQUEUES, s->g, s->ng };
}

static uint64_t hash_mix(uint64_t h, uint64_t x)
{
	return (h ^ x) * UINT64_C(0x100000001B3);
}

/* One step at s->now: ends, one pass, its starts.  false: the pass
 * failed. */
static bool sim_step(struct sim *s, struct sched *sc)
{
	for (size_t i = s->nrun; i-- > 0;)
		if (s->run[i].end <= s->now)
			sim_end(s, i);
	struct jf_plan_in in = sim_in(s);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!sched_pass(sc, s->m, s->nm, &in))
		return false;
	s->pass_s += secs_since(&t0);
	s->steps++;
	for (size_t i = 0; i < sched_nstarts(sc); i++) {
		const struct jf_sched_slot *slots;
		size_t gi = sched_start(sc, i, &slots);
		struct jf_plan_group *g = &s->g[gi];
		if (!sim_grow(s))
			return false;
		struct task *t = &s->run[s->nrun++];
		t->group = gi;
		t->bound = s->now + g->timeout_ms;
		t->end = s->now + STEP_MS * (1 + rnd(&s->r, g->timeout_ms / STEP_MS));
		memcpy(t->slots, slots, (size_t)g->req.nodes * sizeof(*slots));
		g->waiting--;
		g->running++;
		if (g->queue >= 0)
			s->q[g->queue].held += g->req.nodes;
		s->waiting--;
		s->tasks++;
		s->placements += (uint64_t)g->req.nodes;
		s->hash = hash_mix(s->hash, gi);
		for (int64_t n = 0; n < g->req.nodes; n++)
			s->hash = hash_mix(s->hash, slots[n].machine * 64 + slots[n].gpu_mask);
	}
	return true;
}

/* To the next end; false if nothing runs (what still waits never can). */
static bool sim_advance(struct sim *s)
{
	int64_t next = INT64_MAX;
	for (size_t i = 0; i < s->nrun; i++)
		if (s->run[i].end < next)
			next = s->run[i].end;
	if (next == INT64_MAX)
		return false;
	s->now = next;
	return true;
}

/* ---- the measurements, each in a child ---- */

struct result {
	bool ok, cut; /* finished; stopped at its time limit */
	uint64_t steps, tasks, placements, hash;
	int64_t left; /* tasks still waiting at the end */
	double wall_s, pass_s;
	/* the planner's figures after the first `at_steps` steps (the reference's
	 * number, to compare like with like) */
	uint64_t at_steps, at_placements, at_tasks, at_hash;
	double at_wall_s, at_pass_s;
	/* one step at each backlog */
	double step_ms[NBACKLOGS];
	int64_t step_waiting[NBACKLOGS];
	size_t step_resv[NBACKLOGS], step_starts[NBACKLOGS], step_groups;
	double busy; /* share of GPUs busy at the snapshot */
	long rss_kib;
};

static long peak_rss_kib(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* The whole simulation (or, for the reference, until limit_s of wall
 * time); at_steps > 0: note the figures after that many steps. */
static void run_sim(const struct opts *o, enum which which, double limit_s, uint64_t at_steps,
		    struct result *res)
{
	struct sim *s = sim_new(o);
	struct sched sc;
	sched_init(&sc, which);
	if (!s)
		goto out;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bool ok;
	while ((ok = sim_step(s, &sc))) {
		if (s->steps == at_steps) {
			res->at_steps = s->steps;
			res->at_placements = s->placements;
			res->at_tasks = s->tasks;
			res->at_hash = s->hash;
			res->at_wall_s = secs_since(&t0);
			res->at_pass_s = s->pass_s;
		}
		if (limit_s > 0 && secs_since(&t0) > limit_s) {
			res->cut = true;
			break;
		}
		if (!sim_advance(s))
			break;
	}
	res->wall_s = secs_since(&t0);
	if (!ok)
		goto out;
	res->ok = true;
	res->steps = s->steps;
	res->tasks = s->tasks;
	res->placements = s->placements;
	res->hash = s->hash;
	res->pass_s = s->pass_s;
	res->left = s->waiting;
out:
	sched_release(&sc);
	sim_free(s);
}

/* Scale the waiting counts of the groups that wait to add up to total. */
static int64_t scale_backlog(struct jf_plan_group *g, const int64_t *orig, size_t ng, int64_t total)
{
	int64_t sum = 0, given = 0;
	for (size_t i = 0; i < ng; i++)
		sum += orig[i];
	if (sum == 0)
		return 0;
	for (size_t i = 0; i < ng; i++) {
		g[i].waiting = (int64_t)((double)orig[i] * (double)total / (double)sum);
		given += g[i].waiting;
	}
	for (size_t i = 0; given < total; i = (i + 1) % ng)
		if (orig[i] > 0) {
			g[i].waiting++;
			given++;
		}
	return given;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The cost of one step at backlog BACKLOGS[from .. to): the planner takes
 * SNAP_STEPS steps (the same decisions as the reference would), then
 * `which` passes again at the time of the last one, on copies of the
 * machines: what fits has started, the cluster is full. */
static void run_steps(const struct opts *o, enum which which, size_t from, size_t to,
		      struct result *res)
{
	struct sim *s = sim_new(o);
	struct sched sc, warm;
	sched_init(&sc, which);
	sched_init(&warm, PLANNER);
	int64_t *orig = NULL;
	struct jf_sched_machine *m = NULL;
	if (!s)
		goto out;
	for (int i = 0; i < SNAP_STEPS; i++) {
		if (!sim_step(s, &warm))
			goto out;
		if (i + 1 < SNAP_STEPS && !sim_advance(s))
			break; /* a small workload: all done already */
	}
	int64_t busy = 0;
	for (size_t i = 0; i < s->nm; i++)
		busy += 8 - __builtin_popcountll(s->m[i].gpu_free);
	res->busy = (double)busy / (double)(8 * s->nm);
	orig = malloc(s->ng * sizeof(*orig));
	m = malloc(s->nm * sizeof(*m));
	if (!orig || !m)
		goto out;
	for (size_t i = 0; i < s->ng; i++) {
		orig[i] = s->g[i].waiting;
		res->step_groups += orig[i] > 0;
	}
	struct jf_plan_in in = sim_in(s);
	for (size_t b = from; b < to; b++) {
		res->step_waiting[b] = scale_backlog(s->g, orig, s->ng, BACKLOGS[b]);
		double ms[REPEAT];
		int n = which == PLANNER ? REPEAT : 1;
		for (int i = 0; i < n; i++) {
			memcpy(m, s->m, s->nm * sizeof(*m));
			struct timespec t0;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			if (!sched_pass(&sc, m, s->nm, &in))
				goto out;
			ms[i] = secs_since(&t0) * 1e3;
		}
		qsort(ms, (size_t)n, sizeof(*ms), cmp_double);
		res->step_ms[b] = ms[n / 2];
		res->step_resv[b] = sched_nresv(&sc);
		res->step_starts[b] = sched_nstarts(&sc);
	}
	res->ok = true;
out:
	free(m);
	free(orig);
	sched_release(&warm);
	sched_release(&sc);
	sim_free(s);
}

enum job { JOB_SIM, JOB_STEPS };

/* Run one measurement in a child and read its result; a child that runs
 * past alarm_s seconds is killed (res->cut, !res->ok). */
static void in_child(const struct opts *o, enum job job, enum which which, double limit_s,
		     uint64_t at_steps, size_t from, size_t to, unsigned alarm_s,
		     struct result *res)
{
	memset(res, 0, sizeof(*res));
	int fd[2];
	if (pipe(fd) != 0) {
		perror("bench_sched: pipe");
		return;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("bench_sched: fork");
		close(fd[0]);
		close(fd[1]);
		return;
	}
	if (pid == 0) {
		close(fd[0]);
		if (alarm_s)
			alarm(alarm_s);
		struct result r = { 0 };
		if (job == JOB_SIM)
			run_sim(o, which, limit_s, at_steps, &r);
		else
			run_steps(o, which, from, to, &r);
		r.rss_kib = peak_rss_kib();
		ssize_t w = write(fd[1], &r, sizeof(r));
		_exit(w == (ssize_t)sizeof(r) ? 0 : 1);
	}
	close(fd[1]);
	size_t got = 0;
	while (got < sizeof(*res)) {
		ssize_t n = read(fd[0], (char *)res + got, sizeof(*res) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got != sizeof(*res)) {
		memset(res, 0, sizeof(*res));
		res->cut = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
	}
}

/* ---- output ---- */

/* 1234567 as "1,234,567" into buf. */
static const char *commas(char *buf, size_t n, double v)
{
	char d[32];
	snprintf(d, sizeof(d), "%.0f", v);
	size_t len = strlen(d), j = 0, lead = d[0] == '-';
	for (size_t i = 0; i < len && j + 2 < n; i++) {
		if (i > lead && (len - i) % 3 == 0)
			buf[j++] = ',';
		buf[j++] = d[i];
	}
	buf[j] = '\0';
	return buf;
}

static void row(const char *what, const char *a, const char *b)
{
	printf("  %-44s %16s  %16s\n", what, a, b);
}

static const char *num(char *buf, size_t n, double v)
{
	return commas(buf, n, v);
}

static const char *msec(char *buf, size_t n, double ms)
{
	if (ms >= 100)
		snprintf(buf, n, "%.0f ms", ms);
	else
		snprintf(buf, n, "%.2f ms", ms);
	return buf;
}

static const char *mib(char *buf, size_t n, long kib)
{
	snprintf(buf, n, "%.1f MiB", (double)kib / 1024.0);
	return buf;
}

static const char *rate(char *buf, size_t n, double count, double s)
{
	if (s <= 0)
		return "-";
	return commas(buf, n, count / s);
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_sched [--tasks N] [--machines M] [--seed S] "
			"[--ref-seconds T]\n");
	return 2;
}

static bool parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!v || *v < '0' || *v > '9')
		return false;
	unsigned long long x = strtoull(v, &end, 10);
	if (*end || errno || x < lo || x > hi)
		return false;
	*out = x;
	return true;
}

int main(int argc, char **argv)
{
	struct opts o = { 1000000, 1000, 1, 10.0 };
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t x;
		if (!strcmp(a, "--tasks") && parse_u64(v, 1, INT64_C(1) << 40, &x))
			o.tasks = (int64_t)x;
		else if (!strcmp(a, "--machines") && parse_u64(v, 1, 1000000, &x))
			o.machines = (size_t)x;
		else if (!strcmp(a, "--seed") && parse_u64(v, 0, UINT64_MAX, &x))
			o.seed = x;
		else if (!strcmp(a, "--ref-seconds") && parse_u64(v, 0, 3600, &x))
			o.ref_seconds = (double)x;
		else
			return usage();
	}
	char n1[64], n2[64], n3[64];
	printf("bench_sched: %s machines (8 GPUs each, %d models), %s tasks in %s groups "
	       "(4 queues + independent; gangs of 1-8 nodes, 1-8 GPUs a node), seed %" PRIu64 "\n",
	       num(n1, sizeof(n1), (double)o.machines), NMODELS,
	       num(n2, sizeof(n2), (double)o.tasks),
	       num(n3, sizeof(n3), (double)(o.tasks < NGROUPS ? o.tasks : NGROUPS)), o.seed);
	printf("  a step: release the tasks that ended, one pass, start what it decided; "
	       "tasks end on 5-minute steps\n");
	printf("  a placement: one node placed (a task of k nodes is k placements)\n");

	/* the reference first: its step count caps the planner's comparison */
	struct result rs = { 0 }, ps, pst, rst[NBACKLOGS] = { { 0 } };
	bool ref = o.ref_seconds > 0;
	unsigned alarm_s = (unsigned)(4 * o.ref_seconds + 60);
	if (ref)
		in_child(&o, JOB_SIM, REFERENCE, o.ref_seconds, 0, 0, 0, alarm_s, &rs);
	in_child(&o, JOB_SIM, PLANNER, 0, rs.ok ? rs.steps : 0, 0, 0, 0, &ps);
	in_child(&o, JOB_STEPS, PLANNER, 0, 0, 0, NBACKLOGS, 0, &pst);
	for (size_t k = 0; k < NBACKLOGS && ref; k++)
		in_child(&o, JOB_STEPS, REFERENCE, 0, 0, k, k + 1, alarm_s, &rst[k]);
	if (!ps.ok || !pst.ok) {
		fprintf(stderr, "bench_sched: the planner's run failed\n");
		return 1;
	}

	char a[64], b[64], t[96];
	bool rok = rs.ok && rs.steps > 0;
	printf("\n  %-44s %16s  %16s\n", "", "planner", "reference");
	if (rok)
		snprintf(t, sizeof(t), "first %" PRIu64 " steps%s", rs.steps, rs.cut ? " *" : "");
	else
		snprintf(t, sizeof(t), "%s", ref ? (rs.cut ? "cut off" : "failed") : "not run");
	row("simulation", "all steps", t);
	row("steps", num(a, sizeof(a), (double)ps.steps),
	    rok ? num(b, sizeof(b), (double)rs.steps) : "-");
	row("tasks started", num(a, sizeof(a), (double)ps.tasks),
	    rok ? num(b, sizeof(b), (double)rs.tasks) : "-");
	row("placements (nodes placed)", num(a, sizeof(a), (double)ps.placements),
	    rok ? num(b, sizeof(b), (double)rs.placements) : "-");
	snprintf(a, sizeof(a), "%.1f s", ps.wall_s);
	snprintf(b, sizeof(b), "%.1f s", rs.wall_s);
	row("wall time", a, rok ? b : "-");
	row("placements / s (wall)", rate(a, sizeof(a), (double)ps.placements, ps.wall_s),
	    rok ? rate(b, sizeof(b), (double)rs.placements, rs.wall_s) : "-");
	row("tasks started / s (wall)", rate(a, sizeof(a), (double)ps.tasks, ps.wall_s),
	    rok ? rate(b, sizeof(b), (double)rs.tasks, rs.wall_s) : "-");
	row("placements / step (mean)", rate(a, sizeof(a), (double)ps.placements, (double)ps.steps),
	    rok ? rate(b, sizeof(b), (double)rs.placements, (double)rs.steps) : "-");
	row("pass (mean)", msec(a, sizeof(a), ps.pass_s * 1e3 / (double)ps.steps),
	    rok ? msec(b, sizeof(b), rs.pass_s * 1e3 / (double)rs.steps) : "-");
	row("peak RSS", mib(a, sizeof(a), ps.rss_kib), rok ? mib(b, sizeof(b), rs.rss_kib) : "-");
	if (rok && ps.at_steps == rs.steps) {
		snprintf(t, sizeof(t), "the same first %" PRIu64 " steps: placements / s",
			 rs.steps);
		row(t, rate(a, sizeof(a), (double)ps.at_placements, ps.at_wall_s),
		    rate(b, sizeof(b), (double)rs.placements, rs.wall_s));
		row("  pass (mean)", msec(a, sizeof(a), ps.at_pass_s * 1e3 / (double)rs.steps),
		    msec(b, sizeof(b), rs.pass_s * 1e3 / (double)rs.steps));
		row("  the same starts (hash of groups, slots)",
		    ps.at_hash == rs.hash && ps.at_placements == rs.placements ? "yes" : "NO", "");
	}
	printf("  one step, cluster full (%.0f %% of GPUs busy, %zu groups waiting):\n",
	       pst.busy * 100, pst.step_groups);
	bool same = true;
	for (size_t k = 0; k < NBACKLOGS; k++) {
		snprintf(t, sizeof(t), "  %s waiting: pass (%zu reservations)",
			 num(n3, sizeof(n3), (double)pst.step_waiting[k]), pst.step_resv[k]);
		const char *r = "not run";
		if (ref)
			r = rst[k].ok    ? msec(b, sizeof(b), rst[k].step_ms[k])
			    : rst[k].cut ? "cut off"
					 : "failed";
		row(t, msec(a, sizeof(a), pst.step_ms[k]), r);
		if (ref && rst[k].ok)
			same &= rst[k].step_resv[k] == pst.step_resv[k] &&
				rst[k].step_starts[k] == pst.step_starts[k];
	}
	row("  peak RSS", mib(a, sizeof(a), pst.rss_kib),
	    ref && rst[NBACKLOGS - 1].ok ? mib(b, sizeof(b), rst[NBACKLOGS - 1].rss_kib) : "-");
	if (ref && !same)
		printf("  the reference decided differently at a backlog: a bug in one of them\n");
	if (rs.cut)
		printf("  * the reference's simulation stopped after --ref-seconds %.0f of wall "
		       "time; the planner's figures over the same steps are beside it\n",
		       o.ref_seconds);
	if (ps.left > 0)
		printf("  %" PRId64 " tasks never ran (they do not fit the cluster)\n", ps.left);

	double pps = (double)ps.placements / ps.wall_s;
	double lo = pst.step_ms[0], hi = pst.step_ms[0];
	for (size_t k = 1; k < NBACKLOGS; k++) {
		lo = pst.step_ms[k] < lo ? pst.step_ms[k] : lo;
		hi = pst.step_ms[k] > hi ? pst.step_ms[k] : hi;
	}
	printf("\ntarget >= %s placements/s: %s (%s); step cost flat from 10k to 1M waiting: "
	       "%s (max/min %.2f)\n",
	       num(a, sizeof(a), TARGET_PLACEMENTS_PER_S),
	       pps >= TARGET_PLACEMENTS_PER_S ? "met" : "MISSED", num(b, sizeof(b), pps),
	       hi <= 1.25 * lo ? "yes" : "NO", hi / lo);
	return 0;
}
