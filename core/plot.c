/*
 * plot.c - ticks, colours and the parts every plot shares (frame, axes,
 * legend), and the two line plots: /cluster/usage.svg and
 * /billing/cost.svg.  The timeline is plot_timeline.c.
 *
 * Every plot is a fixed 1000 px wide canvas: a title line, a subtitle, the
 * plot area with a y axis on the left and a time axis below, and the
 * legend under the axis.  Values map to pixels through a struct
 * plot_frame (plot_int.h); nothing here depends on the locale (numbers go
 * through jf_svg_num and integer formatting).
 */
#include "core/plot.h"
#include "core/plot_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/billing.h"
#include "core/timefmt.h"

/* ---- numbers ---- */

void jf_plot_fixed(double v, int decimals, char *buf, size_t n)
{
	if (!isfinite(v))
		v = 0;
	long long scale = 1;
	for (int i = 0; i < decimals; i++)
		scale *= 10;
	long long q = llround(v * (double)scale);
	bool neg = q < 0;
	unsigned long long a = neg ? (unsigned long long)-q : (unsigned long long)q;
	if (decimals == 0)
		snprintf(buf, n, "%s%llu", neg ? "-" : "", a);
	else
		snprintf(buf, n, "%s%llu.%0*llu", neg ? "-" : "", a / (unsigned long long)scale,
			 decimals, a % (unsigned long long)scale);
}

/* ---- ticks ---- */

void jf_ticks_amount(double lo, double hi, int max, bool integer, struct jf_ticks *t)
{
	memset(t, 0, sizeof(*t));
	if (max < 2)
		max = 2;
	if (max > JF_TICKS_MAX)
		max = JF_TICKS_MAX;
	if (!isfinite(lo) || !isfinite(hi))
		lo = hi = 0;
	if (hi <= lo)
		hi = lo + 1;
	double range = hi - lo;
	double mag = pow(10, floor(log10(range / (max - 1))));
	double step = mag;
	static const double mult[] = { 1, 2, 5, 10 };
	for (size_t i = 0; i < 4; i++) {
		step = mult[i] * mag;
		if (range / step <= max - 1 + 1e-9)
			break;
	}
	if (integer && step < 1)
		step = 1;
	int decimals = 0;
	for (double s = step; s < 1 - 1e-9 && decimals < 6; s *= 10)
		decimals++;
	t->step = step;
	double first = ceil(lo / step - 1e-9) * step;
	for (int i = 0; i < JF_TICKS_MAX; i++) {
		double v = first + i * step;
		if (v > hi + step * 1e-9)
			break;
		t->v[t->n] = v;
		jf_plot_fixed(v, decimals, t->label[t->n], sizeof(t->label[0]));
		t->n++;
	}
}

void jf_ticks_cover(double lo, double hi, int max, bool integer, struct jf_ticks *t)
{
	jf_ticks_amount(lo, hi, max, integer, t);
	if (t->n >= 1 && t->v[t->n - 1] < hi)
		jf_ticks_amount(lo, t->v[t->n - 1] + t->step, max, integer, t);
}

static const int64_t time_steps[] = {
	100,       200,       500,        1000,       2000,     5000,     10000,
	15000,     30000,     60000,      120000,     300000,   600000,   900000,
	1800000,   3600000,   7200000,    10800000,   21600000, 43200000, 86400000,
	172800000, 604800000, 1209600000, 2592000000,
};

static void rel_label(int64_t ms, char *buf, size_t n)
{
	int64_t s = ms / 1000;
	if (ms == 0) {
		snprintf(buf, n, "+0");
		return;
	}
	if (ms % 1000) { /* a step below a second: "+0.5s", "+1.2s" */
		snprintf(buf, n, "+%lld.%llds", (long long)s, (long long)(ms % 1000 / 100));
		return;
	}
	int64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
	size_t off = (size_t)snprintf(buf, n, "+");
	if (d && off < n)
		off += (size_t)snprintf(buf + off, n - off, "%lldd", (long long)d);
	if (h && off < n)
		off += (size_t)snprintf(buf + off, n - off, "%lldh", (long long)h);
	if (m && off < n)
		off += (size_t)snprintf(buf + off, n - off, "%lldm", (long long)m);
	if (sec && off < n)
		snprintf(buf + off, n - off, "%llds", (long long)sec);
}

static void abs_label(int64_t ms, int64_t step, char *buf, size_t n)
{
	char iso[JF_TIME_BUF];
	jf_time_rfc3339(ms, iso, sizeof(iso)); /* 2026-12-05T10:30:15Z */
	if (!iso[0]) {
		snprintf(buf, n, "?");
		return;
	}
	if (step >= 86400000) {
		static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
						      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
		int mon = (iso[5] - '0') * 10 + (iso[6] - '0');
		int day = (iso[8] - '0') * 10 + (iso[9] - '0');
		snprintf(buf, n, "%s %d", mon >= 1 && mon <= 12 ? months[mon - 1] : "?", day);
	} else if (step >= 60000) {
		snprintf(buf, n, "%.5s", iso + 11);
	} else if (step >= 1000) {
		snprintf(buf, n, "%.8s", iso + 11);
	} else {
		snprintf(buf, n, "%.8s.%lld", iso + 11, (long long)(ms % 1000 / 100));
	}
}

void jf_ticks_time(int64_t t0, int64_t t1, int max, bool relative, struct jf_ticks *t)
{
	memset(t, 0, sizeof(*t));
	if (max < 2)
		max = 2;
	if (max > JF_TICKS_MAX)
		max = JF_TICKS_MAX;
	if (t1 <= t0)
		t1 = t0 + 1000;
	size_t ns = sizeof(time_steps) / sizeof(time_steps[0]);
	int64_t step = time_steps[ns - 1];
	for (size_t i = 0; i < ns; i++) {
		if ((t1 - t0) / time_steps[i] <= max - 1) {
			step = time_steps[i];
			break;
		}
	}
	t->step = (double)step;
	int64_t first;
	if (relative) {
		first = t0;
	} else {
		first = t0 / step * step;
		if (first < t0)
			first += step;
	}
	for (int64_t v = first; v <= t1 && t->n < JF_TICKS_MAX; v += step) {
		t->v[t->n] = (double)v;
		if (relative)
			rel_label(v - t0, t->label[t->n], sizeof(t->label[0]));
		else
			abs_label(v, step, t->label[t->n], sizeof(t->label[0]));
		t->n++;
	}
}

/* ---- colours ---- */

/* Okabe-Ito: black, orange, sky blue, bluish green, yellow, blue,
 * vermillion, reddish purple */
static const char *const palette[] = {
	"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442",
};

const char *jf_plot_colour(size_t i)
{
	return palette[i % (sizeof(palette) / sizeof(palette[0]))];
}

static const char *const outcome_names[JF_PO__COUNT] = {
	[JF_PO_SUCCEEDED] = "Succeeded", [JF_PO_FAILED] = "Failed",
	[JF_PO_PREEMPTED] = "Preempted", [JF_PO_STOPPED] = "Stopped",
	[JF_PO_RUNNING] = "Running",     [JF_PO_UNKNOWN] = "Ended",
};
static const char *const outcome_colours[JF_PO__COUNT] = {
	[JF_PO_SUCCEEDED] = "#009E73", /* bluish green */
	[JF_PO_FAILED] = "#D55E00",    /* vermillion */
	[JF_PO_PREEMPTED] = "#E69F00", /* orange */
	[JF_PO_STOPPED] = "#999999",   /* grey */
	[JF_PO_RUNNING] = "#0072B2",   /* blue */
	[JF_PO_UNKNOWN] = "#CC79A7",   /* reddish purple */
};

const char *jf_plot_outcome_name(enum jf_plot_outcome o)
{
	return (unsigned)o < JF_PO__COUNT ? outcome_names[o] : "?";
}

const char *jf_plot_outcome_colour(enum jf_plot_outcome o)
{
	return (unsigned)o < JF_PO__COUNT ? outcome_colours[o] : "#000000";
}

/* ---- frame, axes, legend ---- */

double jf_plot_fx(const struct plot_frame *f, double v)
{
	double span = f->vx1 - f->vx0;
	if (span <= 0)
		return f->x0;
	double x = f->x0 + (v - f->vx0) / span * (f->x1 - f->x0);
	return x < f->x0 ? f->x0 : x > f->x1 ? f->x1 : x;
}

double jf_plot_fy(const struct plot_frame *f, double v)
{
	double span = f->vy1 - f->vy0;
	if (span <= 0)
		return f->y1;
	double y = f->y1 - (v - f->vy0) / span * (f->y1 - f->y0);
	return y < f->y0 ? f->y0 : y > f->y1 ? f->y1 : y;
}

void jf_plot_head(struct jf_svg *s, int w, int h, const char *title, const char *subtitle)
{
	jf_svg_open(s, w, h, title);
	jf_svg_raw(s, "<text class=\"heading\" x=\"16\" y=\"24\" font-size=\"16\" "
		      "font-weight=\"bold\">");
	jf_svg_text(s, title);
	jf_svg_raw(s, "</text>\n");
	if (subtitle && subtitle[0]) {
		jf_svg_raw(s, "<text class=\"subtitle\" x=\"16\" y=\"42\" fill=\"#444444\">");
		jf_svg_text(s, subtitle);
		jf_svg_raw(s, "</text>\n");
	}
}

void jf_plot_xaxis(struct jf_svg *s, const struct plot_frame *f, const struct jf_ticks *t,
		   const char *label)
{
	jf_svg_raw(s, "<g class=\"axis x-axis\" stroke=\"#000000\">\n<line x1=\"");
	jf_svg_num(s, f->x0);
	jf_svg_raw(s, "\" y1=\"");
	jf_svg_num(s, f->y1);
	jf_svg_raw(s, "\" x2=\"");
	jf_svg_num(s, f->x1);
	jf_svg_raw(s, "\" y2=\"");
	jf_svg_num(s, f->y1);
	jf_svg_raw(s, "\"/>\n");
	for (int i = 0; i < t->n; i++) {
		double x = jf_plot_fx(f, t->v[i]);
		jf_svg_raw(s, "<g class=\"tick\"><line x1=\"");
		jf_svg_num(s, x);
		jf_svg_raw(s, "\" y1=\"");
		jf_svg_num(s, f->y1);
		jf_svg_raw(s, "\" x2=\"");
		jf_svg_num(s, x);
		jf_svg_raw(s, "\" y2=\"");
		jf_svg_num(s, f->y1 + 5);
		jf_svg_raw(s, "\"/><text stroke=\"none\" text-anchor=\"middle\" x=\"");
		jf_svg_num(s, x);
		jf_svg_raw(s, "\" y=\"");
		jf_svg_num(s, f->y1 + 18);
		jf_svg_raw(s, "\">");
		jf_svg_text(s, t->label[i]);
		jf_svg_raw(s, "</text></g>\n");
	}
	jf_svg_raw(s, "<text class=\"axis-label\" stroke=\"none\" text-anchor=\"middle\" x=\"");
	jf_svg_num(s, (f->x0 + f->x1) / 2);
	jf_svg_raw(s, "\" y=\"");
	jf_svg_num(s, f->y1 + 36);
	jf_svg_raw(s, "\">");
	jf_svg_text(s, label);
	jf_svg_raw(s, "</text>\n</g>\n");
}

void jf_plot_yaxis(struct jf_svg *s, const struct plot_frame *f, const struct jf_ticks *t,
		   const char *label, bool grid)
{
	jf_svg_raw(s, "<g class=\"axis y-axis\" stroke=\"#000000\">\n<line x1=\"");
	jf_svg_num(s, f->x0);
	jf_svg_raw(s, "\" y1=\"");
	jf_svg_num(s, f->y0);
	jf_svg_raw(s, "\" x2=\"");
	jf_svg_num(s, f->x0);
	jf_svg_raw(s, "\" y2=\"");
	jf_svg_num(s, f->y1);
	jf_svg_raw(s, "\"/>\n");
	for (int i = 0; i < t->n; i++) {
		double y = f->ylabel ? f->ylabel(f, t->v[i]) : jf_plot_fy(f, t->v[i]);
		jf_svg_raw(s, "<g class=\"tick\">");
		if (grid) {
			jf_svg_raw(s, "<line stroke=\"#dddddd\" x1=\"");
			jf_svg_num(s, f->x0);
			jf_svg_raw(s, "\" y1=\"");
			jf_svg_num(s, y);
			jf_svg_raw(s, "\" x2=\"");
			jf_svg_num(s, f->x1);
			jf_svg_raw(s, "\" y2=\"");
			jf_svg_num(s, y);
			jf_svg_raw(s, "\"/>");
		}
		jf_svg_raw(s, "<line x1=\"");
		jf_svg_num(s, f->x0 - 5);
		jf_svg_raw(s, "\" y1=\"");
		jf_svg_num(s, y);
		jf_svg_raw(s, "\" x2=\"");
		jf_svg_num(s, f->x0);
		jf_svg_raw(s, "\" y2=\"");
		jf_svg_num(s, y);
		jf_svg_raw(s, "\"/><text stroke=\"none\" text-anchor=\"end\" x=\"");
		jf_svg_num(s, f->x0 - 8);
		jf_svg_raw(s, "\" y=\"");
		jf_svg_num(s, y + 4);
		jf_svg_raw(s, "\">");
		jf_svg_text(s, t->label[i]);
		jf_svg_raw(s, "</text></g>\n");
	}
	/* the label above the axis, where it needs no rotation */
	jf_svg_raw(
		s,
		"<text class=\"axis-label\" stroke=\"none\" text-anchor=\"start\" x=\"16\" y=\"");
	jf_svg_num(s, f->y0 - 10);
	jf_svg_raw(s, "\">");
	jf_svg_text(s, label);
	jf_svg_raw(s, "</text>\n</g>\n");
}

void jf_plot_legend_begin(struct plot_legend *l, struct jf_svg *s, double x, double y, double right)
{
	l->s = s;
	l->x0 = l->x = x;
	l->y = y;
	l->right = right;
	jf_svg_raw(s, "<g class=\"legend\">\n");
}

void jf_plot_legend_entry(struct plot_legend *l, const char *colour, bool line, bool dashed,
			  const char *label)
{
	double w = 30 + 7.0 * (double)strlen(label);
	if (l->x > l->x0 && l->x + w > l->right) {
		l->x = l->x0;
		l->y += 18;
	}
	struct jf_svg *s = l->s;
	jf_svg_raw(s, "<g class=\"legend-entry\">");
	if (line) {
		jf_svg_raw(s, "<line stroke-width=\"2.5\" x1=\"");
		jf_svg_num(s, l->x);
		jf_svg_raw(s, "\" y1=\"");
		jf_svg_num(s, l->y - 4);
		jf_svg_raw(s, "\" x2=\"");
		jf_svg_num(s, l->x + 18);
		jf_svg_raw(s, "\" y2=\"");
		jf_svg_num(s, l->y - 4);
		jf_svg_printf(s, "\" stroke=\"%s\"%s/>", colour,
			      dashed ? " stroke-dasharray=\"6 3\"" : "");
	} else {
		jf_svg_raw(s, "<rect width=\"14\" height=\"10\" x=\"");
		jf_svg_num(s, l->x);
		jf_svg_raw(s, "\" y=\"");
		jf_svg_num(s, l->y - 9);
		jf_svg_printf(s, "\" fill=\"%s\"/>", colour);
	}
	jf_svg_raw(s, "<text x=\"");
	jf_svg_num(s, l->x + 22);
	jf_svg_raw(s, "\" y=\"");
	jf_svg_num(s, l->y);
	jf_svg_raw(s, "\">");
	jf_svg_text(s, label);
	jf_svg_raw(s, "</text></g>\n");
	l->x += w;
}

void jf_plot_legend_end(struct plot_legend *l)
{
	jf_svg_raw(l->s, "</g>\n");
}

void jf_plot_note(struct jf_svg *s, const struct plot_frame *f, const char *text)
{
	jf_svg_raw(s, "<text class=\"note\" text-anchor=\"middle\" fill=\"#444444\" x=\"");
	jf_svg_num(s, (f->x0 + f->x1) / 2);
	jf_svg_raw(s, "\" y=\"");
	jf_svg_num(s, (f->y0 + f->y1) / 2);
	jf_svg_raw(s, "\">");
	jf_svg_text(s, text);
	jf_svg_raw(s, "</text>\n");
}

/* A step line through (x of bucket i's start, y of v[i]) .. the last
 * bucket's end; consecutive equal values make one segment. */
static void step_path(struct jf_svg *s, const struct plot_frame *f, int64_t t0, int64_t bucket_ms,
		      size_t n, const double *v, const char *cls, const char *colour, bool dashed)
{
	jf_svg_printf(s, "<path class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s d=\"",
		      cls, colour, dashed ? " stroke-dasharray=\"6 3\"" : "");
	double prev = NAN;
	for (size_t i = 0; i < n; i++) {
		double x = jf_plot_fx(f, (double)(t0 + (int64_t)i * bucket_ms));
		double y = jf_plot_fy(f, v[i]);
		if (i == 0) {
			jf_svg_raw(s, "M");
		} else if (y == prev) {
			continue;
		} else {
			jf_svg_raw(s, " H");
			jf_svg_num(s, x);
			jf_svg_raw(s, " V");
			jf_svg_num(s, y);
			prev = y;
			continue;
		}
		jf_svg_num(s, x);
		jf_svg_raw(s, " ");
		jf_svg_num(s, y);
		prev = y;
	}
	jf_svg_raw(s, " H");
	jf_svg_num(s, jf_plot_fx(f, (double)(t0 + (int64_t)n * bucket_ms)));
	jf_svg_raw(s, "\"/>\n");
}

/* ---- /cluster/usage.svg ---- */

void jf_steps_init(struct jf_steps *s, int64_t from_ms, int64_t to_ms, size_t n, double *peak)
{
	if (n < 1)
		n = 1;
	if (to_ms <= from_ms)
		to_ms = from_ms + (int64_t)n;
	s->from_ms = from_ms;
	s->n = n;
	s->bucket_ms = (to_ms - from_ms + (int64_t)n - 1) / (int64_t)n;
	if (s->bucket_ms < 1)
		s->bucket_ms = 1;
	s->level = 0;
	s->last_ms = from_ms;
	s->peak = peak;
	for (size_t i = 0; i < n; i++)
		peak[i] = 0;
}

static size_t bucket_of(const struct jf_steps *s, int64_t t)
{
	if (t <= s->from_ms)
		return 0;
	int64_t b = (t - s->from_ms) / s->bucket_ms;
	return b >= (int64_t)s->n ? s->n : (size_t)b;
}

/* The level held over [last, t): a peak candidate in each bucket it touches. */
static void hold_to(struct jf_steps *s, int64_t t)
{
	if (t < s->last_ms)
		t = s->last_ms;
	size_t a = bucket_of(s, s->last_ms), b = bucket_of(s, t);
	double lv = (double)s->level;
	for (size_t i = a; i <= b && i < s->n; i++) {
		if (i == b && t == s->from_ms + (int64_t)i * s->bucket_ms && i > a)
			break; /* [last, t) ends where bucket b begins */
		if (lv > s->peak[i])
			s->peak[i] = lv;
	}
	s->last_ms = t;
}

void jf_steps_add(struct jf_steps *s, int64_t t_ms, int64_t delta)
{
	if (t_ms < s->from_ms)
		t_ms = s->from_ms;
	hold_to(s, t_ms);
	s->level += delta;
	if (s->level < 0)
		s->level = 0;
	size_t b = bucket_of(s, t_ms);
	if (b < s->n && (double)s->level > s->peak[b])
		s->peak[b] = (double)s->level;
}

void jf_steps_end(struct jf_steps *s)
{
	hold_to(s, s->from_ms + (int64_t)s->n * s->bucket_ms - 1);
}

#define PLOT_W 1000

char *jf_plot_usage(const struct jf_usage_plot *p, size_t *len)
{
	struct jf_svg s;
	jf_svg_init(&s, 0);
	int h = 520;
	struct plot_frame f = {
		.x0 = 80,
		.x1 = PLOT_W - 30,
		.y0 = 80,
		.y1 = 400,
		.vx0 = (double)(p->now_ms - p->past_ms),
		.vx1 = (double)(p->now_ms + (int64_t)JF_USAGE_FORECAST_HOURS * 3600000),
	};
	int top = 1;
	for (size_t i = 0; i < p->n; i++)
		if (p->s[i].total > top)
			top = p->s[i].total;
	struct jf_ticks yt, xt;
	jf_ticks_cover(0, top, 8, true, &yt);
	f.vy0 = 0;
	f.vy1 = yt.v[yt.n - 1];
	char now[JF_TIME_BUF], sub[160];
	jf_time_rfc3339(p->now_ms, now, sizeof(now));
	snprintf(sub, sizeof(sub),
		 "solid: most GPUs in use per 5 minutes, the 24 h to %s; dashed: on-demand "
		 "use forecast, the next 24 h",
		 now);
	jf_plot_head(&s, PLOT_W, h, p->title, sub);
	jf_ticks_time((int64_t)f.vx0, (int64_t)f.vx1, 13, false, &xt);
	jf_plot_yaxis(&s, &f, &yt, "GPUs", true);
	jf_plot_xaxis(&s, &f, &xt, "time (UTC)");
	/* now */
	double xn = jf_plot_fx(&f, (double)p->now_ms);
	jf_svg_raw(&s, "<g class=\"now\"><line stroke=\"#444444\" stroke-dasharray=\"2 2\" x1=\"");
	jf_svg_num(&s, xn);
	jf_svg_raw(&s, "\" y1=\"");
	jf_svg_num(&s, f.y0);
	jf_svg_raw(&s, "\" x2=\"");
	jf_svg_num(&s, xn);
	jf_svg_raw(&s, "\" y2=\"");
	jf_svg_num(&s, f.y1);
	jf_svg_raw(&s, "\"/><text text-anchor=\"middle\" fill=\"#444444\" x=\"");
	jf_svg_num(&s, xn);
	jf_svg_raw(&s, "\" y=\"");
	jf_svg_num(&s, f.y0 - 4);
	jf_svg_raw(&s, "\">now</text></g>\n");
	if (p->n == 0)
		jf_plot_note(&s, &f, "no GPU models in this cluster");
	int64_t bucket_ms = p->nbuckets ? p->past_ms / (int64_t)p->nbuckets : p->past_ms;
	for (size_t i = 0; i < p->n; i++) {
		const struct jf_usage_series *u = &p->s[i];
		const char *c = jf_plot_colour(i);
		jf_svg_raw(&s, "<g class=\"model\"><title>");
		jf_svg_text(&s, u->model);
		jf_svg_raw(&s, "</title>\n");
		if (u->used && p->nbuckets)
			step_path(&s, &f, p->now_ms - p->past_ms, bucket_ms, p->nbuckets, u->used,
				  "series", c, false);
		if (u->has_forecast) {
			double fv[JF_USAGE_FORECAST_HOURS];
			for (size_t k = 0; k < JF_USAGE_FORECAST_HOURS; k++)
				fv[k] = u->forecast[k];
			step_path(&s, &f, p->now_ms, 3600000, JF_USAGE_FORECAST_HOURS, fv,
				  "forecast", c, true);
		}
		jf_svg_raw(&s, "</g>\n");
	}
	struct plot_legend l;
	jf_plot_legend_begin(&l, &s, f.x0, f.y1 + 62, f.x1);
	for (size_t i = 0; i < p->n; i++) {
		char lab[JF_PLOT_LABEL];
		snprintf(lab, sizeof(lab), "%s (%d GPUs)", p->s[i].model, p->s[i].total);
		jf_plot_legend_entry(&l, jf_plot_colour(i), true, false, lab);
	}
	jf_plot_legend_entry(&l, "#444444", true, true, "forecast: on-demand use");
	jf_plot_legend_end(&l);
	jf_svg_close(&s);
	return jf_svg_finish(&s, len);
}

/* ---- /billing/cost.svg ---- */

char *jf_plot_cost(const struct jf_cost_plot *p, size_t *len)
{
	struct jf_svg s;
	jf_svg_init(&s, 0);
	int64_t t0 = p->t0_ms, t1 = p->t1_ms > p->t0_ms ? p->t1_ms : p->t0_ms + 60000;
	int64_t top = 0;
	for (size_t i = 0; i < p->n; i++)
		for (size_t b = 0; b < p->nbuckets; b++)
			if (p->s[i].cum[b] > top)
				top = p->s[i].cum[b];
	int rows = (int)(p->n + 3) / 4;
	int h = 480 + 18 * (rows > 1 ? rows - 1 : 0);
	struct plot_frame f = {
		.x0 = 90,
		.x1 = PLOT_W - 30,
		.y0 = 80,
		.y1 = 380,
		.vx0 = (double)t0,
		.vx1 = (double)t1,
		.vy0 = 0,
	};
	struct jf_ticks yt, xt;
	jf_ticks_cover(0, top > 0 ? (double)top / 1e6 : 1, 8, false, &yt);
	f.vy1 = yt.v[yt.n - 1];
	char a[JF_TIME_BUF], b[JF_TIME_BUF], sub[200];
	jf_time_rfc3339(t0, a, sizeof(a));
	jf_time_rfc3339(t1, b, sizeof(b));
	snprintf(sub, sizeof(sub), "cumulative cost per queue, %s .. %s (UTC); billed per second",
		 a[0] ? a : "-", b[0] ? b : "-");
	jf_plot_head(&s, PLOT_W, h, p->title, sub);
	jf_ticks_time(t0, t1, 10, false, &xt);
	char ylab[80];
	snprintf(ylab, sizeof(ylab), "cost (%s)", p->currency);
	jf_plot_yaxis(&s, &f, &yt, ylab, true);
	jf_plot_xaxis(&s, &f, &xt, "time (UTC)");
	if (p->n == 0)
		jf_plot_note(&s, &f, "no cost recorded yet");
	int64_t bucket_ms =
		p->nbuckets ? (t1 - t0 + (int64_t)p->nbuckets - 1) / (int64_t)p->nbuckets : t1 - t0;
	double *v = p->nbuckets ? malloc(p->nbuckets * sizeof(*v)) : NULL;
	if (p->nbuckets && !v) {
		jf_svg_release(&s);
		*len = 0;
		return NULL;
	}
	for (size_t i = 0; i < p->n; i++) {
		/* a value at the end of bucket k holds from there on: the line
		 * starts at 0 and steps at each bucket's end */
		for (size_t k = 0; k < p->nbuckets; k++)
			v[k] = (double)(k ? p->s[i].cum[k - 1] : 0) / 1e6;
		jf_svg_raw(&s, "<g class=\"queue\"><title>");
		jf_svg_text(&s, p->s[i].name);
		jf_svg_raw(&s, "</title>\n");
		if (p->nbuckets)
			step_path(&s, &f, t0, bucket_ms, p->nbuckets, v, "series",
				  jf_plot_colour(i), false);
		jf_svg_raw(&s, "</g>\n");
	}
	free(v);
	struct plot_legend l;
	jf_plot_legend_begin(&l, &s, f.x0, f.y1 + 62, f.x1);
	for (size_t i = 0; i < p->n; i++) {
		char m[64], lab[JF_PLOT_LABEL];
		int64_t total = p->nbuckets ? p->s[i].cum[p->nbuckets - 1] : 0;
		jf_money_format(total, p->currency, m, sizeof(m));
		snprintf(lab, sizeof(lab), "%s: %s", p->s[i].name, m);
		jf_plot_legend_entry(&l, jf_plot_colour(i), true, false, lab);
	}
	jf_plot_legend_end(&l);
	jf_svg_close(&s);
	return jf_svg_finish(&s, len);
}
