/*
 * sim.c - the simulated backend (sim.h): runs that are only an end time.
 *
 * DESIGN
 *
 * A run is a struct srun: its cookie, start and end in virtual time, the
 * exit code it will report and its containers' names.  start() reads
 * RUN_SECONDS, EXIT_CODE and FAIL_PERCENT from the first container's
 * environment, and nothing else happens until the driver moves the clock
 * past the run's end.
 *
 * What holds:
 * - every run not yet reaped is in the min-heap `heap` ordered by
 *   (end_ms, seq), with heap[i]->pos == i, and in the hash `buckets` by
 *   seq (for signal(), which gets the handle "sim:SEQ");
 * - the eventfd holds a non-zero count exactly when `armed`, and sync_fd()
 *   makes `armed` equal to "the heap's first run has end_ms <= now" after
 *   every call that can change either side (start, signal, reap, advance,
 *   jf_sim_due);
 * - reap() returns each run once, earliest end first, and frees it;
 *   free() drops the runs not reaped (they never existed outside memory).
 *
 * Random draws (RUN_SECONDS ranges, FAIL_PERCENT) come from a splitmix64
 * generator seeded by jf_sim_seed(), in start order, so a given workload
 * and seed always play out the same way.
 */
#include "backends/sim/sim.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define SIM_MAX_RUN_MS (366LL * 86400 * 1000) /* a run lasts at most 366 days */
#define SIM_HASH_MIN   256
#define SIM_NAME_MAX   64

struct srun {
	uint64_t seq; /* handle "sim:SEQ" */
	uint64_t cookie;
	int64_t start_ms, end_ms;
	int exit_code;      /* first container's */
	int term_signal;    /* 0, SIGTERM or SIGKILL */
	size_t pos;         /* index in heap */
	struct srun *hnext; /* hash chain */
	size_t nprocs;
	char names[][SIM_NAME_MAX]; /* container names */
};

struct sim {
	struct jf_runner be;      /* first: the engine holds &be */
	struct jf_sim_clock *clk; /* borrowed */
	int evfd;
	bool armed; /* evfd is readable */
	uint64_t next_seq;
	uint64_t rng; /* splitmix64 state */
	struct srun **heap;
	size_t n, cap;
	struct srun **buckets; /* by seq */
	size_t nbuckets;       /* power of two */
	struct jf_sim_stats stats;
};

static const struct jf_runner_ops sim_ops;

static struct sim *as_sim(struct jf_runner *be)
{
	return be && be->ops == &sim_ops ? (struct sim *)be : NULL;
}

int64_t jf_sim_now(void *ctx)
{
	return ((const struct jf_sim_clock *)ctx)->now_ms;
}

/* ---- the generator ---- */

static uint64_t rng_next(struct sim *s)
{
	uint64_t z = (s->rng += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* ---- the heap, by (end_ms, seq) ---- */

static bool before(const struct srun *a, const struct srun *b)
{
	return a->end_ms < b->end_ms || (a->end_ms == b->end_ms && a->seq < b->seq);
}

static void heap_set(struct sim *s, size_t i, struct srun *r)
{
	s->heap[i] = r;
	r->pos = i;
}

static void sift_up(struct sim *s, size_t i)
{
	struct srun *r = s->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!before(r, s->heap[p]))
			break;
		heap_set(s, i, s->heap[p]);
		i = p;
	}
	heap_set(s, i, r);
}

static void sift_down(struct sim *s, size_t i)
{
	struct srun *r = s->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= s->n)
			break;
		if (c + 1 < s->n && before(s->heap[c + 1], s->heap[c]))
			c++;
		if (!before(s->heap[c], r))
			break;
		heap_set(s, i, s->heap[c]);
		i = c;
	}
	heap_set(s, i, r);
}

static struct srun *heap_pop(struct sim *s)
{
	struct srun *top = s->heap[0];
	s->n--;
	if (s->n > 0) {
		heap_set(s, 0, s->heap[s->n]);
		sift_down(s, 0);
	}
	return top;
}

/* ---- the hash, by seq ---- */

static size_t bucket_of(const struct sim *s, uint64_t seq)
{
	return (size_t)((seq * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (s->nbuckets - 1);
}

/* Double the buckets; on ENOMEM keep the old ones (chains just get longer). */
static void hash_grow(struct sim *s)
{
	size_t nb = s->nbuckets * 2;
	struct srun **b = calloc(nb, sizeof(*b));
	if (!b)
		return;
	struct srun **old = s->buckets;
	size_t on = s->nbuckets;
	s->buckets = b;
	s->nbuckets = nb;
	for (size_t i = 0; i < on; i++) {
		for (struct srun *r = old[i], *next; r; r = next) {
			next = r->hnext;
			size_t k = bucket_of(s, r->seq);
			r->hnext = b[k];
			b[k] = r;
		}
	}
	free(old);
}

static void hash_del(struct sim *s, struct srun *r)
{
	struct srun **p = &s->buckets[bucket_of(s, r->seq)];
	while (*p && *p != r)
		p = &(*p)->hnext;
	if (*p)
		*p = r->hnext;
}

static struct srun *hash_find(const struct sim *s, uint64_t seq)
{
	struct srun *r = s->buckets[bucket_of(s, seq)];
	while (r && r->seq != seq)
		r = r->hnext;
	return r;
}

/* ---- the fd ---- */

static void sync_fd(struct sim *s)
{
	bool due = s->n > 0 && s->heap[0]->end_ms <= s->clk->now_ms;
	if (due && !s->armed) {
		uint64_t one = 1;
		if (write(s->evfd, &one, sizeof(one)) == (ssize_t)sizeof(one))
			s->armed = true;
	} else if (!due && s->armed) {
		uint64_t count;
		(void)!read(s->evfd, &count, sizeof(count));
		s->armed = false;
	}
}

/* ---- what a run does, from its environment ---- */

static const char *env_get(char *const *envp, const char *key)
{
	size_t klen = strlen(key);
	for (; envp && *envp; envp++)
		if (strncmp(*envp, key, klen) == 0 && (*envp)[klen] == '=')
			return *envp + klen + 1;
	return NULL;
}

/* Decimal digits only into *v (at most max); *end after them. */
static bool take_uint(const char *p, const char **end, int64_t max, int64_t *v)
{
	int64_t r = 0;
	const char *q = p;
	for (; *q >= '0' && *q <= '9'; q++) {
		r = r * 10 + (*q - '0');
		if (r > max)
			return false;
	}
	if (q == p)
		return false;
	*end = q;
	*v = r;
	return true;
}

/* "600", "0.25" (up to 3 decimals) -> ms; "300-900" -> lo and hi in ms. */
static bool parse_run_seconds(const char *s, int64_t *lo_ms, int64_t *hi_ms)
{
	const int64_t max_s = SIM_MAX_RUN_MS / 1000;
	int64_t a, b, frac = 0;
	const char *p;
	if (!take_uint(s, &p, max_s, &a))
		return false;
	if (*p == '-') {
		if (!take_uint(p + 1, &p, max_s, &b) || *p || b < a)
			return false;
		*lo_ms = a * 1000;
		*hi_ms = b * 1000;
		return true;
	}
	if (*p == '.') {
		const char *f = ++p;
		int digits = 0;
		for (; *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
			frac = frac * 10 + (*p - '0');
		if (p == f || *p)
			return false;
		for (; digits < 3; digits++)
			frac *= 10;
	}
	if (*p)
		return false;
	*lo_ms = *hi_ms = a * 1000 + frac;
	return *lo_ms <= SIM_MAX_RUN_MS;
}

static bool parse_small(const char *s, int64_t max, int64_t *v)
{
	const char *end;
	return take_uint(s, &end, max, v) && *end == '\0';
}

/* What a run will do, as its environment says; the draws come later. */
struct plan {
	int64_t lo_ms, hi_ms; /* RUN_SECONDS, a range when hi > lo */
	int64_t code;         /* EXIT_CODE */
	int64_t fail_pct;     /* FAIL_PERCENT */
};

static enum jf_err plan_read(char *const *envp, struct plan *p, struct jf_error *err)
{
	*p = (struct plan){ .lo_ms = 60000, .hi_ms = 60000 };
	const char *v;
	if ((v = env_get(envp, "RUN_SECONDS")) && !parse_run_seconds(v, &p->lo_ms, &p->hi_ms))
		return jf_error_set(err, JF_EINVAL, 0,
				    "sim backend: RUN_SECONDS=\"%.32s\": want seconds (600, 0.5) "
				    "or a range (300-900), at most 366 days",
				    v);
	if ((v = env_get(envp, "EXIT_CODE")) && !parse_small(v, 255, &p->code))
		return jf_error_set(err, JF_EINVAL, 0,
				    "sim backend: EXIT_CODE=\"%.32s\": want 0 to 255", v);
	if ((v = env_get(envp, "FAIL_PERCENT")) && !parse_small(v, 100, &p->fail_pct))
		return jf_error_set(err, JF_EINVAL, 0,
				    "sim backend: FAIL_PERCENT=\"%.32s\": want 0 to 100", v);
	return JF_OK;
}

/* The run's length and exit code: draws only when asked for, in this
 * order, so a workload without ranges or FAIL_PERCENT ignores the seed. */
static void plan_draw(struct sim *s, const struct plan *p, int64_t *run_ms, int *exit_code)
{
	int64_t ms = p->lo_ms, code = p->code;
	if (p->hi_ms > p->lo_ms) {
		uint64_t span = (uint64_t)((p->hi_ms - p->lo_ms) / 1000) + 1;
		ms += (int64_t)(rng_next(s) % span) * 1000;
	}
	if (p->fail_pct > 0 && (int64_t)(rng_next(s) % 100) < p->fail_pct)
		code = 1;
	*run_ms = ms;
	*exit_code = (int)code;
}

/* ---- the ops ---- */

static enum jf_err sim_start(struct jf_runner *be, const struct jf_launch *l, uint64_t cookie,
			     struct jf_run_started *out, struct jf_error *err)
{
	struct sim *s = (struct sim *)be;
	if (!l || l->nprocs < 1 || l->nprocs > JF_RUN_MAX_PROCS || !l->procs)
		return jf_error_set(err, JF_EINVAL, 0,
				    "sim backend: a node needs 1 to %d containers",
				    JF_RUN_MAX_PROCS);
	struct plan p;
	enum jf_err rc = plan_read(l->procs[0].envp, &p, err);
	if (rc)
		return rc;
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		struct srun **h = realloc(s->heap, ncap * sizeof(*h));
		if (!h)
			return jf_error_set(err, JF_ENOMEM, 0, "sim backend: out of memory");
		s->heap = h;
		s->cap = ncap;
	}
	struct srun *r = calloc(1, sizeof(*r) + l->nprocs * SIM_NAME_MAX);
	if (!r)
		return jf_error_set(err, JF_ENOMEM, 0, "sim backend: out of memory");
	int64_t run_ms;
	plan_draw(s, &p, &run_ms, &r->exit_code);
	r->seq = ++s->next_seq;
	r->cookie = cookie;
	r->start_ms = s->clk->now_ms;
	r->end_ms = r->start_ms + run_ms;
	r->nprocs = l->nprocs;
	for (size_t i = 0; i < l->nprocs; i++)
		snprintf(r->names[i], SIM_NAME_MAX, "%s",
			 l->procs[i].name ? l->procs[i].name : "main");
	s->heap[s->n++] = r;
	sift_up(s, s->n - 1);
	if (s->n > s->nbuckets)
		hash_grow(s);
	size_t k = bucket_of(s, r->seq);
	r->hnext = s->buckets[k];
	s->buckets[k] = r;
	s->stats.started++;

	memset(out, 0, sizeof(*out));
	snprintf(out->handle, sizeof(out->handle), "sim:%" PRIu64, r->seq);
	out->pid = (pid_t)((r->seq - 1) % INT32_MAX) + 1; /* the run's number: no process */
	out->start_ms = r->start_ms;
	sync_fd(s);
	return JF_OK;
}

static enum jf_err sim_adopt(struct jf_runner *be, const char *handle, const char *run_dir,
			     uint64_t cookie, struct jf_error *err)
{
	(void)be;
	(void)run_dir;
	(void)cookie;
	return jf_error_set(err, JF_ENOTSUP, 0,
			    "sim backend: cannot adopt '%.64s': simulated runs end with the "
			    "program that simulates them",
			    handle ? handle : "");
}

static bool parse_handle(const char *handle, uint64_t *seq)
{
	if (!handle || strncmp(handle, "sim:", 4) != 0)
		return false;
	const char *p = handle + 4;
	uint64_t v = 0;
	if (*p < '1' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (*p)
		return false;
	*seq = v;
	return true;
}

static enum jf_err sim_signal(struct jf_runner *be, const char *handle, enum jf_run_signal sig)
{
	struct sim *s = (struct sim *)be;
	uint64_t seq;
	if (!parse_handle(handle, &seq) || (sig != JF_RUN_TERM && sig != JF_RUN_KILL))
		return JF_EINVAL;
	struct srun *r = hash_find(s, seq);
	if (!r || r->end_ms <= s->clk->now_ms)
		return JF_OK; /* reaped already, or its end has come: nothing to cut short */
	r->end_ms = s->clk->now_ms;
	r->term_signal = sig == JF_RUN_TERM ? SIGTERM : SIGKILL;
	r->exit_code = 128 + r->term_signal;
	s->stats.signalled++;
	sift_up(s, r->pos);
	sync_fd(s);
	return JF_OK;
}

static int sim_fd(struct jf_runner *be)
{
	return ((struct sim *)be)->evfd;
}

static void fill_result(const struct srun *r, struct jf_run_result *out)
{
	memset(out, 0, sizeof(*out));
	out->cookie = r->cookie;
	out->exit_code = r->exit_code;
	out->term_signal = r->term_signal;
	out->start_ms = r->start_ms;
	out->end_ms = r->end_ms;
	if (r->term_signal)
		snprintf(out->message, sizeof(out->message), "killed by %s",
			 r->term_signal == SIGTERM ? "SIGTERM" : "SIGKILL");
	else
		snprintf(out->message, sizeof(out->message), "exit %d", r->exit_code);
	out->nprocs = r->nprocs;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct jf_proc_result *p = &out->procs[i];
		snprintf(p->name, sizeof(p->name), "%s", r->names[i]);
		p->term_signal = r->term_signal;
		p->exit_code = r->term_signal ? r->exit_code : i == 0 ? r->exit_code : 0;
	}
}

static size_t sim_reap(struct jf_runner *be, struct jf_run_result *out, size_t max)
{
	struct sim *s = (struct sim *)be;
	size_t n = 0;
	while (n < max && s->n > 0 && s->heap[0]->end_ms <= s->clk->now_ms) {
		struct srun *r = heap_pop(s);
		hash_del(s, r);
		fill_result(r, &out[n++]);
		s->stats.reaped++;
		if (r->exit_code != 0 && !r->term_signal)
			s->stats.failed++;
		free(r);
	}
	sync_fd(s);
	return n;
}

static void sim_free(struct jf_runner *be)
{
	struct sim *s = (struct sim *)be;
	for (size_t i = 0; i < s->n; i++)
		free(s->heap[i]);
	free(s->heap);
	free(s->buckets);
	if (s->evfd >= 0)
		close(s->evfd);
	free(s);
}

static const struct jf_runner_ops sim_ops = {
	.name = "sim",
	.start = sim_start,
	.adopt = sim_adopt,
	.signal = sim_signal,
	.fd = sim_fd,
	.reap = sim_reap,
	.free = sim_free,
};

struct jf_runner *jf_sim_new(struct jf_sim_clock *clk, struct jf_error *err)
{
	if (!clk) {
		jf_error_set(err, JF_EINVAL, 0, "sim backend: no clock");
		return NULL;
	}
	struct sim *s = calloc(1, sizeof(*s));
	if (!s)
		goto nomem;
	s->be.ops = &sim_ops;
	s->clk = clk;
	s->rng = 1;
	s->nbuckets = SIM_HASH_MIN;
	s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
	s->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!s->buckets)
		goto nomem;
	if (s->evfd < 0) {
		jf_error_set(err, JF_EIO, 0, "sim backend: eventfd: %s", strerror(errno));
		sim_free(&s->be);
		return NULL;
	}
	return &s->be;
nomem:
	jf_error_set(err, JF_ENOMEM, 0, "sim backend: out of memory");
	if (s) {
		free(s->buckets);
		if (s->evfd >= 0)
			close(s->evfd);
		free(s);
	}
	return NULL;
}

/* ---- helpers for the driver ---- */

void jf_sim_seed(struct jf_runner *be, uint64_t seed)
{
	struct sim *s = as_sim(be);
	if (s)
		s->rng = seed;
}

void jf_sim_advance(struct jf_runner *be, int64_t to_ms)
{
	struct sim *s = as_sim(be);
	if (!s)
		return;
	if (to_ms > s->clk->now_ms)
		s->clk->now_ms = to_ms;
	sync_fd(s);
}

bool jf_sim_due(struct jf_runner *be)
{
	struct sim *s = as_sim(be);
	if (!s)
		return false;
	sync_fd(s);
	return s->n > 0 && s->heap[0]->end_ms <= s->clk->now_ms;
}

int64_t jf_sim_next_end(struct jf_runner *be)
{
	struct sim *s = as_sim(be);
	return s && s->n > 0 ? s->heap[0]->end_ms : -1;
}

size_t jf_sim_running(struct jf_runner *be)
{
	struct sim *s = as_sim(be);
	return s ? s->n : 0;
}

void jf_sim_stats(struct jf_runner *be, struct jf_sim_stats *out)
{
	struct sim *s = as_sim(be);
	if (s)
		*out = s->stats;
	else
		memset(out, 0, sizeof(*out));
}
