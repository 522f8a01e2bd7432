/*
 * forecast.h - spot preemption risk from the cluster's own on-demand demand
 * (reference 5.4, /cluster/forecast).
 *
 * One struct jf_forecast per GPU model.  The engine feeds it samples of the
 * model's on-demand GPU use, in time order, at every change and/or every
 * minute; the forecast keeps an hour-of-week profile (168 buckets, UTC,
 * bucket 0 = Monday 00:00) of hourly peaks with recent weeks weighted most.
 * Memory is O(168) whatever the length of the history; adding a sample is
 * O(1) amortised, a risk query O(window hours).  The model is described at
 * the top of forecast.c.
 *
 * Pure: times are milliseconds since the epoch, passed in; nothing here
 * reads the clock or does I/O.
 */
#ifndef JF_FORECAST_H
#define JF_FORECAST_H

#include <stddef.h>
#include <stdint.h>

struct jf_forecast;

/* A forecast for a model of total_gpus GPUs (clamped to >= 0), with an
 * empty history.  NULL if out of memory.  Free with jf_forecast_free(). */
struct jf_forecast *jf_forecast_new(int total_gpus);
void jf_forecast_free(struct jf_forecast *f);

/* Record that from t_ms on, gpus_on_demand GPUs of the model are used by
 * on-demand work (a step function: the previous value holds from the
 * previous sample until t_ms).  Samples older than the last one are
 * treated as arriving at the last sample's time; values are clamped to
 * 0 .. total_gpus. */
void jf_forecast_add(struct jf_forecast *f, int64_t t_ms, int gpus_on_demand);

/* Estimated probability (0..1) that a spot task of spot_gpus_needed GPUs,
 * placed at now_ms, is preempted within [now_ms, now_ms + window_s), given
 * gpus_free_now GPUs of the model free right now.
 *
 * With D0 the last recorded on-demand use (or, with no samples at all,
 * total - gpus_free_now: every busy GPU counted as on-demand), the spot
 * GPUs already running are S = total - gpus_free_now - D0 (>= 0), and the
 * task is at risk as soon as on-demand demand exceeds
 *     T = total - S - spot_gpus_needed
 * (the newest spot task assumed to be preempted first).  The result is
 * 1 when spot_gpus_needed > gpus_free_now, 0 when T >= total, and else
 * P(peak on-demand demand over the window > T).  Non-decreasing in
 * window_s for a fixed now_ms. */
double jf_forecast_risk(const struct jf_forecast *f, int64_t now_ms, int64_t window_s,
			int spot_gpus_needed, int gpus_free_now);

/* Predicted GPUs left free by on-demand work during the hour holding
 * at_ms: total - (expected hourly peak + one standard deviation),
 * rounded, in 0 .. total. */
int jf_forecast_predicted_free(const struct jf_forecast *f, int64_t at_ms);

/* The text of /cluster/forecast: a header line, then for each of the n
 * models (f[i] named models[i], both borrowed, f[i] non-NULL) and each of
 * the 24 hours starting after now_ms, one line with fixed columns: model,
 * hour (UTC), predicted free GPUs, and the risk for a 1-GPU spot task
 * with no other spot running over windows of 10m, 1h, 6h and 12h.
 * Returns a string the caller frees, or NULL if out of memory. */
char *jf_forecast_render(const struct jf_forecast *const *f, const char *const *models, size_t n,
			 int64_t now_ms);

#endif
