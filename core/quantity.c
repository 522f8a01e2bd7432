/*
 * quantity.c - durations and Kubernetes quantities, parsed and printed.
 *
 * Everything is exact integer arithmetic.  A quantity is read as a decimal
 * mantissa m, a power of ten e10 and a power of two e2 (value = m * 10^e10 *
 * 2^e2) and only then converted to the target unit, which must come out a
 * whole number that fits in int64_t; nothing is rounded.  Durations are a
 * sum of d/h/m/s terms in decreasing order.
 *
 * Pure functions: no allocation, no state, no locale.
 */
#include "core/quantity.h"

#include <stdio.h>
#include <string.h>

#define QTY_MAX_LEN 100 /* no sensible quantity is longer */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

bool jf_duration_parse(const char *s, int64_t *seconds)
{
	static const struct {
		char unit;
		int64_t mult;
	} units[] = { { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };
	const size_t nunits = sizeof(units) / sizeof(units[0]);

	if (!s || !*s)
		return false;
	int64_t total = 0;
	size_t next = 0; /* first unit still allowed */
	bool any_unit = false;
	const char *p = s;
	while (*p) {
		if (!is_digit(*p))
			return false;
		int64_t v = 0;
		while (is_digit(*p)) {
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, *p - '0', &v))
				return false;
			p++;
		}
		if (!*p) {
			/* a bare integer is seconds, but only on its own */
			if (any_unit)
				return false;
			total = v;
			break;
		}
		size_t u = next;
		while (u < nunits && units[u].unit != *p)
			u++;
		if (u == nunits)
			return false; /* garbage, repeated or out-of-order unit */
		if (__builtin_mul_overflow(v, units[u].mult, &v) ||
		    __builtin_add_overflow(total, v, &total))
			return false;
		next = u + 1;
		any_unit = true;
		p++;
	}
	*seconds = total;
	return true;
}

void jf_duration_format(int64_t seconds, char *buf, size_t n)
{
	static const struct {
		char unit;
		uint64_t mult;
	} units[] = { { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };

	if (!buf || n == 0)
		return;
	buf[0] = '\0';
	if (seconds == 0) {
		snprintf(buf, n, "0s");
		return;
	}
	uint64_t u = seconds < 0 ? -(uint64_t)seconds : (uint64_t)seconds;
	size_t off = 0;
	if (seconds < 0)
		off += (size_t)snprintf(buf, n, "-");
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		uint64_t q = u / units[i].mult;
		u %= units[i].mult;
		if (q == 0 || off >= n)
			continue;
		off += (size_t)snprintf(buf + off, n - off, "%llu%c", (unsigned long long)q,
					units[i].unit);
	}
}

/*
 * Split a Kubernetes quantity into m * 10^e10 * 2^e2.  Trailing zeros of
 * the digits move into e10, so m holds only significant digits.
 */
static bool qty_split(const char *s, uint64_t *m_out, int *e10_out, int *e2_out)
{
	static const struct {
		const char *sfx;
		int e10, e2;
	} sfx[] = {
		{ "n", -9, 0 },  { "u", -6, 0 },  { "m", -3, 0 },  { "", 0, 0 },
		{ "k", 3, 0 },   { "M", 6, 0 },   { "G", 9, 0 },   { "T", 12, 0 },
		{ "P", 15, 0 },  { "E", 18, 0 },  { "Ki", 0, 10 }, { "Mi", 0, 20 },
		{ "Gi", 0, 30 }, { "Ti", 0, 40 }, { "Pi", 0, 50 }, { "Ei", 0, 60 },
	};

	if (!s || !*s || strlen(s) > QTY_MAX_LEN)
		return false;
	const char *p = s;
	uint64_t m = 0;
	int e10 = 0, e2 = 0, zeros = 0;
	bool any = false, dot = false;
	for (;; p++) {
		if (*p == '.') {
			if (dot)
				return false;
			dot = true;
			continue;
		}
		if (!is_digit(*p))
			break;
		any = true;
		if (dot)
			e10--;
		if (*p == '0') {
			zeros++;
			continue;
		}
		for (; zeros > 0; zeros--)
			if (__builtin_mul_overflow(m, 10, &m))
				return false;
		if (__builtin_mul_overflow(m, 10, &m) ||
		    __builtin_add_overflow(m, (uint64_t)(*p - '0'), &m))
			return false;
	}
	if (!any)
		return false;
	e10 += zeros;

	if ((*p == 'e' || *p == 'E') &&
	    (is_digit(p[1]) || ((p[1] == '+' || p[1] == '-') && is_digit(p[2])))) {
		p++;
		int sign = 1;
		if (*p == '+' || *p == '-')
			sign = *p++ == '-' ? -1 : 1;
		int x = 0;
		while (is_digit(*p)) {
			x = x * 10 + (*p++ - '0');
			if (x > 1000)
				return false;
		}
		if (*p)
			return false;
		e10 += sign * x;
	} else {
		size_t i;
		for (i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
			if (strcmp(p, sfx[i].sfx) == 0)
				break;
		if (i == sizeof(sfx) / sizeof(sfx[0]))
			return false;
		e10 += sfx[i].e10;
		e2 = sfx[i].e2;
	}
	*m_out = m;
	*e10_out = e10;
	*e2_out = e2;
	return true;
}

/* m * 10^e10 * 2^e2 as an int64_t, only when exact and in range. */
static bool qty_exact(uint64_t m, int e10, int e2, int64_t *out)
{
	if (m == 0) {
		*out = 0;
		return true;
	}
	if (e10 < 0) {
		/* 10^k = 2^k * 5^k; cancel the twos against e2 first */
		int k = -e10;
		int c = k < e2 ? k : e2;
		int k2 = k - c;
		e2 -= c;
		for (int i = 0; i < k; i++) {
			if (m % 5)
				return false;
			m /= 5;
		}
		for (int i = 0; i < k2; i++) {
			if (m % 2)
				return false;
			m /= 2;
		}
		e10 = 0;
	}
	for (int i = 0; i < e10; i++)
		if (__builtin_mul_overflow(m, 10, &m))
			return false;
	for (int i = 0; i < e2; i++)
		if (__builtin_mul_overflow(m, 2, &m))
			return false;
	if (m > (uint64_t)INT64_MAX)
		return false;
	*out = (int64_t)m;
	return true;
}

bool jf_cpu_parse(const char *s, int64_t *millicores)
{
	uint64_t m;
	int e10, e2;
	if (!qty_split(s, &m, &e10, &e2))
		return false;
	return qty_exact(m, e10 + 3, e2, millicores);
}

bool jf_mem_parse(const char *s, int64_t *bytes)
{
	uint64_t m;
	int e10, e2;
	if (!qty_split(s, &m, &e10, &e2))
		return false;
	return qty_exact(m, e10, e2, bytes);
}

void jf_mem_format(int64_t bytes, char *buf, size_t n)
{
	static const char *const units[] = { "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };

	if (!buf || n == 0)
		return;
	if (bytes > 0) {
		for (int i = 5; i >= 0; i--) {
			int64_t unit = (int64_t)1 << (10 * (i + 1));
			if (bytes % unit == 0) {
				snprintf(buf, n, "%lld%s", (long long)(bytes / unit), units[i]);
				return;
			}
		}
	}
	snprintf(buf, n, "%lld", (long long)bytes);
}

void jf_cpu_format(int64_t millicores, char *buf, size_t n)
{
	if (!buf || n == 0)
		return;
	if (millicores % 1000 == 0)
		snprintf(buf, n, "%lld", (long long)(millicores / 1000));
	else
		snprintf(buf, n, "%lldm", (long long)millicores);
}
