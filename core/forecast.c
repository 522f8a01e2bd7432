/*
 * forecast.c - the spot preemption forecast: an hour-of-week profile of
 * on-demand demand, weighted towards recent weeks.
 *
 * THE MODEL (README-ready)
 *
 * - Unit of observation: the PEAK on-demand use of the model within one
 *   clock hour (UTC).  Preemption happens when demand spikes, so the peak,
 *   not the mean, is what a spot task has to survive.  Samples form a step
 *   function (a value holds until the next sample); when the step function
 *   crosses an hour boundary the finished hour's peak is committed with a
 *   weight equal to the fraction of the hour the history covered.
 * - Profile: 168 buckets, one per hour of the week (bucket 0 = Monday
 *   00:00 UTC), each holding the weighted sums W, sum(w*peak), sum(w*peak^2)
 *   of the hours that fell in it, so a weighted mean and standard deviation
 *   of the hourly peak.  Weekly and daily cycles both show in it; a weekday
 *   office-hours peak does not leak into the weekend.
 * - Recency: an observation's weight halves every week (168 hours) of age,
 *   so last week's hour weighs as much as all earlier weeks together: a
 *   pattern that changed last week dominates the old one, and a profile
 *   adapts within two or three weeks.  Decay is applied lazily per bucket.
 * - Little history: each bucket has a confidence c = min(1, 2 * W') where
 *   W' is its weight decayed to the latest committed hour (one full week of
 *   history gives c = 1; a bucket last seen three weeks ago c = 0.25).  The
 *   profile is blended with the RECENT LEVEL by c: mean = c * mean_bucket +
 *   (1 - c) * mean_recent, var likewise.  The recent level is an
 *   exponentially weighted mean and variance of hourly peaks with a 3-hour
 *   half-life (the last few hours); before any hour is complete it is the
 *   last sample, and with no sample at all the current use (total - free
 *   now).  The recent level's deviation is at least max(0.5, total / 10)
 *   GPUs, since a short history says little about how demand moves.
 * - Current hour: when now is within an hour of the last sample, the peak
 *   expected in now's hour is at least the last sampled value.
 * - Risk over a window: the hourly peak is taken as normal with the blended
 *   mean and deviation (deviation at least 0.5 GPU: a flat history still
 *   admits a step); p_h = P(peak_h > T) with a half-GPU continuity
 *   correction.  A window covering a fraction f of hour h counts p_h * f;
 *   hours are combined as independent: risk = 1 - prod(1 - f_h * p_h).
 *   Every factor is in [0, 1], so a longer window never lowers the risk.
 *   Independence overstates risk across correlated hours; for placing spot
 *   work that errs on the safe side.
 * - Cost: memory is 168 buckets per model, whatever the history; a sample
 *   is O(1) amortised (a gap longer than 8 weeks commits only its last 8
 *   weeks, older hours would weigh < 1/256); a risk query is O(window
 *   hours), capped at two weeks of hours.
 * - Times are UTC; an engine wanting local office hours passes times
 *   shifted by its UTC offset.
 */
#include "core/forecast.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timefmt.h"

#define HOUR_MS          3600000LL
#define WEEK_HOURS       168
#define MONDAY_SHIFT     72 /* 1970-01-01 was a Thursday */
#define MAX_GAP_HOURS    (8 * WEEK_HOURS)
#define MAX_QUERY_HOURS  (2 * WEEK_HOURS)
#define RECENT_HALF_LIFE 3.0 /* hours */
#define MIN_SD           0.5 /* GPUs */
#define SQRT2            1.41421356237309504880

struct bucket {
	double w, s1, s2; /* decayed to hour `ref` */
	int64_t ref;      /* hour index of the last observation */
};

struct jf_forecast {
	int total;
	struct bucket b[WEEK_HOURS];
	/* the step function */
	bool have_sample;
	int64_t last_t;    /* ms of the last sample */
	int last_v;        /* its value, holding since last_t */
	int64_t cur_hour;  /* the open (not yet committed) hour */
	int cur_peak;      /* peak of the open hour so far */
	int64_t cur_cover; /* ms of the open hour covered so far */
	/* committed hours */
	bool have_hour;
	int64_t last_hour;    /* latest committed hour index */
	double r_mean, r_var; /* recent level of hourly peaks */
};

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static int64_t hour_of(int64_t t_ms)
{
	return floor_div(t_ms, HOUR_MS);
}

static int bucket_of(int64_t hour)
{
	int64_t m = (hour + MONDAY_SHIFT) % WEEK_HOURS;

	return (int)(m < 0 ? m + WEEK_HOURS : m);
}

struct jf_forecast *jf_forecast_new(int total_gpus)
{
	struct jf_forecast *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->total = total_gpus > 0 ? total_gpus : 0;
	return f;
}

void jf_forecast_free(struct jf_forecast *f)
{
	free(f);
}

static void commit_hour(struct jf_forecast *f, int64_t hour, int peak, int64_t cover_ms)
{
	double w = (double)cover_ms / (double)HOUR_MS;
	struct bucket *b = &f->b[bucket_of(hour)];
	double x = peak, a, d;

	if (w <= 0)
		return;
	if (b->w > 0) {
		double s = exp2(-(double)(hour - b->ref) / WEEK_HOURS);

		b->w *= s;
		b->s1 *= s;
		b->s2 *= s;
	}
	b->ref = hour;
	b->w += w;
	b->s1 += w * x;
	b->s2 += w * x * x;

	if (!f->have_hour) {
		f->r_mean = x;
		f->r_var = 0;
	} else {
		a = 1.0 - exp2(-w / RECENT_HALF_LIFE);
		d = x - f->r_mean;
		f->r_mean += a * d;
		f->r_var = (1.0 - a) * (f->r_var + a * d * d);
	}
	f->have_hour = true;
	f->last_hour = hour;
}

void jf_forecast_add(struct jf_forecast *f, int64_t t_ms, int gpus_on_demand)
{
	int v = gpus_on_demand < 0 ? 0 : gpus_on_demand > f->total ? f->total : gpus_on_demand;
	int64_t h;

	if (!f->have_sample) {
		f->have_sample = true;
		f->last_t = t_ms;
		f->last_v = v;
		f->cur_hour = hour_of(t_ms);
		f->cur_peak = v;
		f->cur_cover = 0;
		return;
	}
	if (t_ms < f->last_t)
		t_ms = f->last_t;
	h = hour_of(t_ms);
	if (h > f->cur_hour) {
		/* close the open hour, then the hours held wholly at last_v */
		commit_hour(f, f->cur_hour, f->cur_peak,
			    f->cur_cover + (f->cur_hour + 1) * HOUR_MS - f->last_t);
		f->cur_hour++;
		if (h - f->cur_hour > MAX_GAP_HOURS)
			f->cur_hour = h - MAX_GAP_HOURS;
		for (; f->cur_hour < h; f->cur_hour++)
			commit_hour(f, f->cur_hour, f->last_v, HOUR_MS);
		/* last_v reaches into hour h only if t_ms is past its start */
		f->cur_cover = t_ms - h * HOUR_MS;
		f->cur_peak = f->cur_cover > 0 ? f->last_v : v;
	} else {
		f->cur_cover += t_ms - f->last_t;
	}
	if (v > f->cur_peak)
		f->cur_peak = v;
	f->last_t = t_ms;
	f->last_v = v;
}

/* Blended mean and deviation of the peak in absolute hour `hour`. */
static void hour_stats(const struct jf_forecast *f, int64_t hour, double fallback_level,
		       double *mean, double *sd)
{
	const struct bucket *b = &f->b[bucket_of(hour)];
	double rm, rv, rsd_min, c = 0, bm = 0, bv = 0;

	rsd_min = f->total / 10.0;
	if (rsd_min < MIN_SD)
		rsd_min = MIN_SD;
	if (f->have_hour) {
		rm = f->r_mean;
		rv = f->r_var;
	} else {
		rm = fallback_level;
		rv = 0;
	}
	if (rv < rsd_min * rsd_min)
		rv = rsd_min * rsd_min;

	if (f->have_hour && b->w > 0) {
		double age = (double)(f->last_hour - b->ref);
		double weff = b->w * exp2(-(age > 0 ? age : 0) / WEEK_HOURS);

		c = 2.0 * weff;
		if (c > 1)
			c = 1;
		bm = b->s1 / b->w;
		bv = b->s2 / b->w - bm * bm;
		if (bv < 0)
			bv = 0;
	}
	*mean = c * bm + (1 - c) * rm;
	*sd = sqrt(c * bv + (1 - c) * rv);
}

/* The last on-demand use known, or `otherwise` with no sample. */
static double current_level(const struct jf_forecast *f, double otherwise)
{
	return f->have_sample ? f->last_v : otherwise;
}

/* P(peak over [now, now + window) > threshold), threshold in GPUs. */
static double risk_over(const struct jf_forecast *f, int64_t now_ms, int64_t window_s,
			double threshold, double level)
{
	int64_t end, t = now_ms, h = hour_of(now_ms);
	double keep = 1.0;
	int n = 0;

	if (window_s <= 0)
		return 0;
	if (window_s > (int64_t)MAX_QUERY_HOURS * 3600)
		window_s = (int64_t)MAX_QUERY_HOURS * 3600;
	end = now_ms + window_s * 1000;
	for (; t < end && n <= MAX_QUERY_HOURS; h++, n++) {
		int64_t hend = (h + 1) * HOUR_MS;
		int64_t stop = hend < end ? hend : end;
		double frac = (double)(stop - t) / (double)HOUR_MS;
		double mean, sd, p;

		hour_stats(f, h, level, &mean, &sd);
		if (f->have_sample && h == hour_of(now_ms) && now_ms - f->last_t < HOUR_MS &&
		    mean < f->last_v)
			mean = f->last_v;
		if (sd < MIN_SD)
			sd = MIN_SD;
		/* peaks are whole GPUs: "> T" is ">= T + 1", cut at T + 0.5 */
		p = 0.5 * erfc((threshold + 0.5 - mean) / (sd * SQRT2));
		keep *= 1.0 - frac * p;
		t = stop;
		if (keep < 1e-12)
			break;
	}
	return 1.0 - keep;
}

double jf_forecast_risk(const struct jf_forecast *f, int64_t now_ms, int64_t window_s,
			int spot_gpus_needed, int gpus_free_now)
{
	int total = f->total;
	int free_now = gpus_free_now < 0 ? 0 : gpus_free_now > total ? total : gpus_free_now;
	double d0 = current_level(f, (double)(total - free_now));
	double spot, threshold;

	if (spot_gpus_needed > free_now)
		return 1.0;
	if (d0 > total - free_now)
		d0 = total - free_now;
	spot = total - free_now - d0;
	threshold = total - spot - (spot_gpus_needed > 0 ? spot_gpus_needed : 0);
	if (threshold >= total)
		return 0.0;
	return risk_over(f, now_ms, window_s, threshold, d0);
}

int jf_forecast_predicted_free(const struct jf_forecast *f, int64_t at_ms)
{
	double mean, sd, v;

	hour_stats(f, hour_of(at_ms), current_level(f, 0), &mean, &sd);
	if (!f->have_hour && !f->have_sample)
		sd = 0; /* nothing known: show the model as free */
	v = floor(f->total - mean - sd + 0.5);
	if (v < 0)
		v = 0;
	if (v > f->total)
		v = f->total;
	return (int)v;
}

#define RENDER_LINE 128

static const int64_t render_windows[] = { 600, 3600, 6 * 3600, 12 * 3600 };

char *jf_forecast_render(const struct jf_forecast *const *f, const char *const *models, size_t n,
			 int64_t now_ms)
{
	size_t cap, len;
	char *out;
	int w;

	if (n > (SIZE_MAX / RENDER_LINE - 2) / 24)
		return NULL;
	cap = (n * 24 + 2) * RENDER_LINE;
	out = malloc(cap);
	if (!out)
		return NULL;
	w = snprintf(out, cap, "%-16s %-20s %5s %8s %8s %8s %8s\n", "MODEL", "HOUR", "FREE",
		     "RISK10M", "RISK1H", "RISK6H", "RISK12H");
	len = (size_t)w;
	for (size_t i = 0; i < n; i++) {
		int64_t h0 = hour_of(now_ms) + 1;

		for (int k = 0; k < 24; k++) {
			int64_t at = (h0 + k) * HOUR_MS;
			int total = f[i]->total;
			double level = current_level(f[i], 0);
			char tbuf[JF_TIME_BUF];

			jf_time_rfc3339(at, tbuf, sizeof(tbuf));
			w = snprintf(out + len, cap - len, "%-16.16s %-20.20s %5d", models[i], tbuf,
				     jf_forecast_predicted_free(f[i], at));
			len += (size_t)w;
			for (size_t j = 0; j < 4; j++) {
				/* a 1-GPU spot task, no other spot running */
				double r = total < 1 ? 1.0
						     : risk_over(f[i], at, render_windows[j],
								 total - 1, level);

				w = snprintf(out + len, cap - len, " %8.3f", r);
				len += (size_t)w;
			}
			out[len++] = '\n';
			out[len] = '\0';
		}
	}
	return out;
}
