/*
 * plot.h - the tree's plots as SVG text (reference 11): a group's
 * timeline.svg, /cluster/usage.svg and /billing/cost.svg.
 *
 * Each renderer takes plain data (fs/ fetches it from the store) and
 * returns SVG 1.1 text the caller frees, with a <title>, axes with
 * labelled ticks, a legend, and the Okabe-Ito colours, which stay apart
 * for the colour-blind.  The parts are marked with classes that tests
 * and stylesheets can find: "axis", "tick", "legend", "bar", "band",
 * "series", "forecast".
 *
 * The timeline is built in a stream: jf_timeline_new() with the group's
 * size and time span, jf_timeline_add() once per attempt, then
 * jf_timeline_svg().  Up to JF_TIMELINE_ROWS tasks it keeps each attempt
 * (one row per task, a bar per attempt and node); above, it keeps only a
 * fixed grid (bands of tasks x time columns x outcome) and draws each band
 * as stacked areas of how many of its tasks ran at each time, so memory
 * and output are bounded whatever the group's size.
 *
 * Pure: times are milliseconds since the epoch, passed in; no I/O, no clock.
 */
#ifndef JF_PLOT_H
#define JF_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- ticks ---- */

#define JF_TICKS_MAX 16

struct jf_ticks {
	int n;
	double v[JF_TICKS_MAX]; /* values: amounts, or ms since the epoch */
	char label[JF_TICKS_MAX][24];
	double step;
};

/* Ticks for amounts in [lo, hi]: a step of 1, 2 or 5 times a power of ten
 * giving at most max ticks (2 .. JF_TICKS_MAX), from the first multiple
 * at or above lo; labels with as many decimals as the step needs.
 * integer: steps below 1 are not used (GPU counts). */
void jf_ticks_amount(double lo, double hi, int max, bool integer, struct jf_ticks *t);
/* As jf_ticks_amount, the last tick at or above hi (an axis that holds
 * every value up to hi; at least one tick). */
void jf_ticks_cover(double lo, double hi, int max, bool integer, struct jf_ticks *t);

/* Ticks for times [t0, t1] (ms): a step from 0.1 s to 30 days that gives
 * at most max ticks, at round times (UTC).  Labels: relative to t0 ("+0",
 * "+0.5s", "+30s", "+5m", "+1h30m", "+2d") when relative, else clock
 * times ("10:30", "10:30:15" below a minute's step, "10:30:15.5" below a
 * second's) or dates ("Dec 5") from a day's step on. */
void jf_ticks_time(int64_t t0, int64_t t1, int max, bool relative, struct jf_ticks *t);

/* ---- colours (Okabe & Ito, "Color Universal Design") ---- */

enum jf_plot_outcome {
	JF_PO_SUCCEEDED = 0,
	JF_PO_FAILED,
	JF_PO_PREEMPTED,
	JF_PO_STOPPED,
	JF_PO_RUNNING,
	JF_PO_UNKNOWN, /* ended, how not recorded (an older database) */
	JF_PO__COUNT
};

const char *jf_plot_outcome_name(enum jf_plot_outcome o);
const char *jf_plot_outcome_colour(enum jf_plot_outcome o);
/* The i-th colour of the series palette (cycles). */
const char *jf_plot_colour(size_t i);

/* ---- the timeline of a group ---- */

#define JF_TIMELINE_ROWS  200   /* above this many tasks, bands */
#define JF_TIMELINE_BANDS 100   /* at most this many bands */
#define JF_TIMELINE_BARS  20000 /* attempts drawn at most (the rest counted) */

struct jf_timeline_opts {
	const char *title;    /* borrowed */
	int64_t tasks;        /* the group's task count (rows) */
	int64_t nodes;        /* nodes per task (>= 1) */
	int64_t t0_ms, t1_ms; /* the span shown: first start .. last end or now */
};

struct jf_plot_attempt {
	int64_t task;             /* index 0 .. tasks-1 */
	int64_t node;             /* index 0 .. nodes-1 */
	int64_t attempt;          /* 1, 2, ... */
	int64_t start_ms, end_ms; /* end: the end, or now while it runs */
	enum jf_plot_outcome outcome;
};

struct jf_timeline;

struct jf_timeline *jf_timeline_new(const struct jf_timeline_opts *o);
/* Adds one attempt; false only when out of memory. */
bool jf_timeline_add(struct jf_timeline *t, const struct jf_plot_attempt *a);
/* Whether the rows are bands of tasks. */
bool jf_timeline_aggregated(const struct jf_timeline *t);
/* The SVG, the caller's to free; NULL if out of memory. */
char *jf_timeline_svg(struct jf_timeline *t, size_t *len);
void jf_timeline_free(struct jf_timeline *t);

/* ---- /cluster/usage.svg ---- */

#define JF_USAGE_FORECAST_HOURS 24

struct jf_usage_series {
	const char *model;  /* borrowed */
	int total;          /* GPUs of the model */
	const double *used; /* nbuckets values: the most GPUs in use in each bucket */
	/* in use by on-demand work in each of the next 24 hours, predicted */
	int forecast[JF_USAGE_FORECAST_HOURS];
	bool has_forecast;
};

struct jf_usage_plot {
	const char *title;
	int64_t now_ms;
	int64_t past_ms; /* the past shown: now - past_ms .. now */
	size_t nbuckets;
	const struct jf_usage_series *s;
	size_t n;
};

char *jf_plot_usage(const struct jf_usage_plot *p, size_t *len);

/* The peaks of a step function per bucket, from its changes in time order. */
struct jf_steps {
	int64_t from_ms, bucket_ms;
	size_t n;
	int64_t level, last_ms;
	double *peak; /* n values, borrowed */
};
/* Buckets of [from, to) in n (>= 1) parts; peak[] is zeroed. */
void jf_steps_init(struct jf_steps *s, int64_t from_ms, int64_t to_ms, size_t n, double *peak);
/* The level changes by delta at t (t ascending; earlier t count at from). */
void jf_steps_add(struct jf_steps *s, int64_t t_ms, int64_t delta);
/* The level holds to the end of the last bucket. */
void jf_steps_end(struct jf_steps *s);

/* ---- /billing/cost.svg ---- */

struct jf_cost_series {
	const char *name;   /* borrowed */
	const int64_t *cum; /* nbuckets values: the cost (micro-units) up to each bucket's end */
};

struct jf_cost_plot {
	const char *title;
	const char *currency;
	int64_t t0_ms, t1_ms;
	size_t nbuckets;
	const struct jf_cost_series *s;
	size_t n;
};

char *jf_plot_cost(const struct jf_cost_plot *p, size_t *len);

#endif
