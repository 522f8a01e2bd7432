/*
 * billing.c - ledger arithmetic in integer micro-units.
 *
 * The rule: a segment covers the whole UTC seconds from floor(start) to
 * floor(end), so when one segment ends at the millisecond the next starts,
 * their seconds add up to the seconds of the whole run exactly.  Its amount
 * is seconds x rate / 3600 rounded half up to the micro-unit.  Products are
 * taken in unsigned __int128 (any two int64 values multiply without
 * overflow there) and saturate at INT64_MAX on the way back; negative
 * inputs bill nothing.  Totals add with jf_bill_add, which saturates in
 * both directions, so a sum past INT64_MAX shows as INT64_MAX and never
 * wraps.  No floating point anywhere.
 */
#include "core/billing.h"

#include <stdio.h>
#include <string.h>

#define MICRO 1000000

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static int64_t saturate(unsigned __int128 v)
{
	return v > (unsigned __int128)INT64_MAX ? INT64_MAX : (int64_t)v;
}

int64_t jf_bill_seconds(int64_t start_ms, int64_t end_ms)
{
	int64_t s = floor_div(start_ms, 1000);
	int64_t e = floor_div(end_ms, 1000);

	/* |s|, |e| < 2^54, so the difference cannot overflow. */
	return e > s ? e - s : 0;
}

int64_t jf_bill_rate(const struct jf_cluster *c, int model, int gpus, int64_t cpu_milli,
		     enum jf_billing mode)
{
	unsigned __int128 v;
	int64_t price;

	if (!c)
		return 0;
	if (model >= 0) {
		const struct jf_gpu_model *m;

		if ((size_t)model >= c->nmodels || gpus <= 0)
			return 0;
		m = &c->models[model];
		price = mode == JF_BILL_SPOT ? m->price_spot : m->price_ondemand;
		if (price <= 0)
			return 0;
		v = (unsigned __int128)gpus * (uint64_t)price;
		return saturate(v);
	}
	price = mode == JF_BILL_SPOT ? c->cpu_price_spot : c->cpu_price_ondemand;
	if (cpu_milli <= 0 || price <= 0)
		return 0;
	v = (unsigned __int128)(uint64_t)cpu_milli * (uint64_t)price + 500;
	return saturate(v / 1000);
}

int64_t jf_bill_amount(int64_t seconds, int64_t rate_per_hour)
{
	unsigned __int128 v;

	if (seconds <= 0 || rate_per_hour <= 0)
		return 0;
	/* < 2^126 + 1800: no overflow */
	v = (unsigned __int128)(uint64_t)seconds * (uint64_t)rate_per_hour;
	return saturate((v + 1800) / 3600);
}

int64_t jf_bill_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

void jf_money_format(int64_t micro, const char *currency, char *buf, size_t n)
{
	uint64_t mag;
	char frac[8];
	int nd = 6;

	if (n == 0)
		return;
	/* 0 - (uint64_t) keeps INT64_MIN exact */
	mag = micro < 0 ? 0 - (uint64_t)micro : (uint64_t)micro;
	snprintf(frac, sizeof(frac), "%06u", (unsigned)(mag % MICRO));
	while (nd > 2 && frac[nd - 1] == '0')
		nd--;
	frac[nd] = '\0';
	snprintf(buf, n, "%s%llu.%s%s%s", micro < 0 ? "-" : "", (unsigned long long)(mag / MICRO),
		 frac, currency && currency[0] ? " " : "", currency ? currency : "");
}

bool jf_money_parse(const char *s, int64_t *micro)
{
	int64_t whole = 0, frac = 0;
	int nd = 0;

	if (!s || *s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		int d = *s - '0';

		if (whole > (INT64_MAX / MICRO - d) / 10)
			return false;
		whole = whole * 10 + d;
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++) {
			if (++nd > 6)
				return false;
			frac = frac * 10 + (*s - '0');
		}
		if (nd == 0)
			return false;
	}
	if (*s)
		return false;
	for (int i = nd; i < 6; i++)
		frac *= 10;
	if (whole > (INT64_MAX - frac) / MICRO)
		return false;
	if (micro)
		*micro = whole * MICRO + frac;
	return true;
}
