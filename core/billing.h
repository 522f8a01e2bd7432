/*
 * billing.h - ledger arithmetic in integer micro-units.
 *
 * The rule (README "Billing"): a segment runs from floor(start) to
 * floor(end) in whole UTC seconds, so consecutive segments of a node meet
 * without gap or overlap.  A node's rate is gpus x the model's price per
 * GPU-hour (or cores x the CPU price for CPU-only nodes).  The amount is
 * seconds x rate / 3600, rounded half up to the micro-unit, computed
 * without overflow for any seconds and rate that fit in int64.
 */
#ifndef JF_BILLING_H
#define JF_BILLING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/spec.h"

/* Billed seconds between two times in milliseconds since the epoch. */
int64_t jf_bill_seconds(int64_t start_ms, int64_t end_ms);

/* Rate per hour in micro-units for one node of this shape.
 * model < 0 means CPU-only (cpu_milli cores at the CPU price). */
int64_t jf_bill_rate(const struct jf_cluster *c, int model, int gpus, int64_t cpu_milli,
		     enum jf_billing mode);

/* seconds x rate_per_hour / 3600, rounded half up; saturates at INT64_MAX. */
int64_t jf_bill_amount(int64_t seconds, int64_t rate_per_hour);

/* a + b, saturating at INT64_MAX and INT64_MIN instead of wrapping: the
 * ledger's totals (amounts, seconds) are summed with it. */
int64_t jf_bill_add(int64_t a, int64_t b);

/* "0.069 CNY": at least two decimals, trailing zeros beyond them trimmed,
 * exact to the micro-unit.  Negative amounts get a leading '-'. */
void jf_money_format(int64_t micro, const char *currency, char *buf, size_t n);

/* Parse "3.60" or "3.6" or "3" (currency units) to micro-units; more than
 * six decimals is an error. */
bool jf_money_parse(const char *s, int64_t *micro);

#endif
