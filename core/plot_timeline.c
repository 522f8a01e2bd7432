/*
 * plot_timeline.c - a group's timeline.svg (plot.h).
 *
 * Two shapes, chosen by the group's size when the timeline is made:
 *
 * rows   (tasks <= JF_TIMELINE_ROWS): one row per task, one <rect
 *        class="bar"> per attempt and node (a task of k nodes splits its
 *        row in k lanes), coloured by how the attempt ended, with a
 *        <title> a browser shows on hover.  At most JF_TIMELINE_BARS
 *        attempts are kept; the rest are counted and said so.
 * bands  (more tasks): tasks i .. i+B-1 share a band, at most
 *        JF_TIMELINE_BANDS of them; the span is cut in TL_COLS columns,
 *        and each (band, column, outcome) cell sums the milliseconds its
 *        attempts ran there.  A band is drawn as stacked step areas, one
 *        <path class="band"> per outcome present: the height is the
 *        node-time run there, relative to the busiest (band, column) of
 *        the plot, so the moment most ran at once is a full bar however
 *        small the group's parallelism.  Memory: bands x columns x
 *        outcomes cells.
 */
#include "core/plot.h"
#include "core/plot_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timefmt.h"

#define TL_COLS         220
#define TL_AREA_H       600.0
#define PLOT_W_TIMELINE 1000

struct jf_timeline {
	struct jf_timeline_opts o;
	char *title;
	bool agg;
	int64_t per;  /* tasks per row */
	size_t rows;  /* rows or bands */
	double row_h; /* pixels */
	struct jf_plot_attempt *bars;
	size_t nbars, cap;
	int64_t dropped;
	int64_t counts[JF_PO__COUNT];
	int64_t *grid; /* bands: rows x TL_COLS x JF_PO__COUNT, ms */
	int64_t col_ms;
};

struct jf_timeline *jf_timeline_new(const struct jf_timeline_opts *o)
{
	struct jf_timeline *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->o = *o;
	t->title = strdup(o->title ? o->title : "timeline");
	if (!t->title) {
		free(t);
		return NULL;
	}
	t->o.title = t->title;
	if (t->o.tasks < 0)
		t->o.tasks = 0;
	if (t->o.nodes < 1)
		t->o.nodes = 1;
	if (t->o.t1_ms <= t->o.t0_ms)
		t->o.t1_ms = t->o.t0_ms + 1000;
	t->agg = t->o.tasks > JF_TIMELINE_ROWS;
	if (t->agg) {
		t->per = (t->o.tasks + JF_TIMELINE_BANDS - 1) / JF_TIMELINE_BANDS;
		t->rows = (size_t)((t->o.tasks + t->per - 1) / t->per);
		t->col_ms = (t->o.t1_ms - t->o.t0_ms + TL_COLS - 1) / TL_COLS;
		if (t->col_ms < 1)
			t->col_ms = 1;
		t->grid = calloc(t->rows * TL_COLS * JF_PO__COUNT, sizeof(*t->grid));
		if (!t->grid) {
			free(t->title);
			free(t);
			return NULL;
		}
	} else {
		t->per = 1;
		t->rows = (size_t)t->o.tasks;
	}
	double h = t->rows ? TL_AREA_H / (double)t->rows : TL_AREA_H;
	h = (double)(int)h;
	t->row_h = h < 3 ? 3 : h > 24 ? 24 : h;
	return t;
}

void jf_timeline_free(struct jf_timeline *t)
{
	if (!t)
		return;
	free(t->bars);
	free(t->grid);
	free(t->title);
	free(t);
}

bool jf_timeline_aggregated(const struct jf_timeline *t)
{
	return t->agg;
}

bool jf_timeline_add(struct jf_timeline *t, const struct jf_plot_attempt *a)
{
	if (a->task < 0 || a->task >= t->o.tasks)
		return true;
	enum jf_plot_outcome o = (unsigned)a->outcome < JF_PO__COUNT ? a->outcome : JF_PO_UNKNOWN;
	t->counts[o]++;
	int64_t s = a->start_ms < t->o.t0_ms ? t->o.t0_ms : a->start_ms;
	int64_t e = a->end_ms > t->o.t1_ms ? t->o.t1_ms : a->end_ms;
	if (!t->agg) {
		if (t->nbars == JF_TIMELINE_BARS) {
			t->dropped++;
			return true;
		}
		if (t->nbars == t->cap) {
			size_t ncap = t->cap ? t->cap * 2 : 64;
			struct jf_plot_attempt *p = realloc(t->bars, ncap * sizeof(*p));
			if (!p)
				return false;
			t->bars = p;
			t->cap = ncap;
		}
		t->bars[t->nbars] = *a;
		t->bars[t->nbars].outcome = o;
		t->nbars++;
		return true;
	}
	if (e <= s)
		return true;
	size_t band = (size_t)(a->task / t->per);
	int64_t *cells = t->grid + band * TL_COLS * JF_PO__COUNT;
	int64_t c0 = (s - t->o.t0_ms) / t->col_ms, c1 = (e - 1 - t->o.t0_ms) / t->col_ms;
	for (int64_t c = c0; c <= c1 && c < TL_COLS; c++) {
		int64_t cs = t->o.t0_ms + c * t->col_ms, ce = cs + t->col_ms;
		int64_t lo = s > cs ? s : cs, hi = e < ce ? e : ce;
		if (hi > lo)
			cells[c * JF_PO__COUNT + o] += hi - lo;
	}
	return true;
}

/* y of a task index: the middle of its row, or the top of its band */
static double row_y(const struct plot_frame *f, double v)
{
	return f->y0 + v * f->row_h + f->row_h / 2;
}

static double band_y(const struct plot_frame *f, double v)
{
	return f->y0 + v * f->row_h + 4;
}

static void draw_bars(struct jf_timeline *t, struct jf_svg *s, const struct plot_frame *f)
{
	double lane = (t->row_h - 1) / (double)t->o.nodes;
	jf_svg_raw(s, "<g class=\"bars\" stroke=\"none\">\n");
	for (size_t i = 0; i < t->nbars; i++) {
		const struct jf_plot_attempt *a = &t->bars[i];
		double x0 = jf_plot_fx(f, (double)a->start_ms),
		       x1 = jf_plot_fx(f, (double)a->end_ms);
		if (x1 - x0 < 1)
			x1 = x0 + 1;
		int64_t node = a->node < 0 ? 0 : a->node >= t->o.nodes ? t->o.nodes - 1 : a->node;
		double y = f->y0 + (double)a->task * t->row_h + (double)node * lane;
		jf_svg_raw(s, "<rect class=\"bar\" x=\"");
		jf_svg_num(s, x0);
		jf_svg_raw(s, "\" y=\"");
		jf_svg_num(s, y);
		jf_svg_raw(s, "\" width=\"");
		jf_svg_num(s, x1 - x0);
		jf_svg_raw(s, "\" height=\"");
		jf_svg_num(s, lane > 1 ? lane : 1);
		char dur[32];
		int64_t ms = a->end_ms - a->start_ms;
		jf_duration_clock(ms > 0 ? ms / 1000 : 0, dur, sizeof(dur));
		jf_svg_printf(s,
			      "\" fill=\"%s\"><title>task %lld node %lld attempt %lld: %s, %s"
			      "</title></rect>\n",
			      jf_plot_outcome_colour(a->outcome), (long long)a->task,
			      (long long)node, (long long)a->attempt,
			      jf_plot_outcome_name(a->outcome), dur);
	}
	jf_svg_raw(s, "</g>\n");
}

static double round1(double v)
{
	return (double)(long long)(v * 10 + (v >= 0 ? 0.5 : -0.5)) / 10;
}

static void draw_bands(struct jf_timeline *t, struct jf_svg *s, const struct plot_frame *f)
{
	double xs[TL_COLS + 1], lo[TL_COLS], up[TL_COLS];
	for (size_t c = 0; c <= TL_COLS; c++)
		xs[c] = jf_plot_fx(f, (double)(t->o.t0_ms + (int64_t)c * t->col_ms));
	double hmax = t->row_h - 1;
	/* heights relative to the busiest cell, so that a group that never
	 * runs a whole band at once still reads */
	double full = 1;
	for (size_t i = 0; i < t->rows * TL_COLS; i++) {
		double sum = 0;
		for (int o = 0; o < JF_PO__COUNT; o++)
			sum += (double)t->grid[i * JF_PO__COUNT + (size_t)o];
		if (sum > full)
			full = sum;
	}
	jf_svg_raw(s, "<g class=\"bands\" stroke=\"none\">\n");
	for (size_t b = 0; b < t->rows; b++) {
		int64_t first = (int64_t)b * t->per;
		int64_t n = t->o.tasks - first < t->per ? t->o.tasks - first : t->per;
		(void)n;
		double bottom = f->y0 + (double)(b + 1) * t->row_h - 0.5;
		const int64_t *cells = t->grid + b * TL_COLS * JF_PO__COUNT;
		for (size_t c = 0; c < TL_COLS; c++)
			lo[c] = bottom;
		jf_svg_printf(s, "<g class=\"band-row\"><title>tasks %lld-%lld</title>\n",
			      (long long)first, (long long)(first + n - 1));
		for (int o = 0; o < JF_PO__COUNT; o++) {
			bool any = false;
			for (size_t c = 0; c < TL_COLS; c++) {
				double share = (double)cells[c * JF_PO__COUNT + (size_t)o] / full;
				if (share > 1)
					share = 1;
				up[c] = round1(lo[c] - share * hmax);
				if (up[c] < bottom - hmax)
					up[c] = bottom - hmax;
				if (up[c] != lo[c])
					any = true;
			}
			if (!any)
				continue;
			jf_svg_printf(s, "<path class=\"band\" fill=\"%s\" d=\"M",
				      jf_plot_outcome_colour((enum jf_plot_outcome)o));
			jf_svg_num(s, xs[0]);
			jf_svg_raw(s, " ");
			jf_svg_num(s, up[0]);
			for (size_t c = 1; c < TL_COLS; c++) {
				if (up[c] == up[c - 1])
					continue;
				jf_svg_raw(s, "H");
				jf_svg_num(s, xs[c]);
				jf_svg_raw(s, "V");
				jf_svg_num(s, up[c]);
			}
			jf_svg_raw(s, "H");
			jf_svg_num(s, xs[TL_COLS]);
			jf_svg_raw(s, "V");
			jf_svg_num(s, lo[TL_COLS - 1]);
			for (size_t c = TL_COLS - 1; c > 0; c--) {
				if (lo[c - 1] == lo[c])
					continue;
				jf_svg_raw(s, "H");
				jf_svg_num(s, xs[c]);
				jf_svg_raw(s, "V");
				jf_svg_num(s, lo[c - 1]);
			}
			jf_svg_raw(s, "H");
			jf_svg_num(s, xs[0]);
			jf_svg_raw(s, "Z\"/>\n");
			memcpy(lo, up, sizeof(lo));
		}
		jf_svg_raw(s, "</g>\n");
	}
	jf_svg_raw(s, "</g>\n");
}

char *jf_timeline_svg(struct jf_timeline *t, size_t *len)
{
	struct jf_svg s;
	jf_svg_init(&s, 0);
	double area = t->rows ? t->row_h * (double)t->rows : 120;
	struct plot_frame f = {
		.x0 = 90,
		.x1 = 970,
		.y0 = 80,
		.y1 = 80 + area,
		.vx0 = (double)t->o.t0_ms,
		.vx1 = (double)t->o.t1_ms,
		.vy0 = 0,
		.vy1 = 1,
		.ylabel = t->agg ? band_y : row_y,
		.row_h = t->row_h,
	};
	int h = (int)f.y1 + 110;
	char start[JF_TIME_BUF], sub[240];
	jf_time_rfc3339(t->o.t0_ms, start, sizeof(start));
	int64_t attempts = 0;
	for (int o = 0; o < JF_PO__COUNT; o++)
		attempts += t->counts[o];
	if (t->agg)
		snprintf(sub, sizeof(sub),
			 "%lld tasks in %zu bands of %lld, %lld attempts; a band's height is how "
			 "many of its tasks ran (the busiest moment full); from %s (UTC)",
			 (long long)t->o.tasks, t->rows, (long long)t->per, (long long)attempts,
			 start[0] ? start : "-");
	else
		snprintf(sub, sizeof(sub),
			 "%lld tasks, %lld attempts, a bar per attempt and node; "
			 "from %s (UTC)",
			 (long long)t->o.tasks, (long long)attempts, start[0] ? start : "-");
	jf_plot_head(&s, PLOT_W_TIMELINE, h, t->o.title, sub);
	struct jf_ticks yt, xt;
	int maxy = (int)(area / 16);
	jf_ticks_amount(0, t->o.tasks > 1 ? (double)(t->o.tasks - 1) : 1, maxy < 2 ? 2 : maxy, true,
			&yt);
	if (t->agg) /* a band starts at a multiple of per: label those */
		for (int i = 0; i < yt.n; i++) {
			double v = (double)((int64_t)yt.v[i] / t->per);
			snprintf(yt.label[i], sizeof(yt.label[i]), "%lld",
				 (long long)((int64_t)v * t->per));
			yt.v[i] = v;
		}
	if (t->o.tasks == 0)
		yt.n = 0;
	jf_plot_yaxis(&s, &f, &yt, t->agg ? "task (bands)" : "task", false);
	jf_ticks_time(t->o.t0_ms, t->o.t1_ms, 10, true, &xt);
	jf_plot_xaxis(&s, &f, &xt, "time since the first start");
	if (attempts == 0)
		jf_plot_note(&s, &f, "no attempt has started yet");
	if (t->agg)
		draw_bands(t, &s, &f);
	else
		draw_bars(t, &s, &f);
	if (t->dropped) {
		char note[96];
		snprintf(note, sizeof(note), "%lld more attempts not drawn", (long long)t->dropped);
		jf_plot_note(&s, &f, note);
	}
	struct plot_legend l;
	jf_plot_legend_begin(&l, &s, f.x0, f.y1 + 62, f.x1);
	for (int o = 0; o < JF_PO__COUNT; o++) {
		if (o == JF_PO_UNKNOWN && !t->counts[o])
			continue;
		char lab[64];
		snprintf(lab, sizeof(lab), "%s (%lld)",
			 jf_plot_outcome_name((enum jf_plot_outcome)o), (long long)t->counts[o]);
		jf_plot_legend_entry(&l, jf_plot_outcome_colour((enum jf_plot_outcome)o), false,
				     false, lab);
	}
	jf_plot_legend_end(&l);
	jf_svg_close(&s);
	return jf_svg_finish(&s, len);
}
