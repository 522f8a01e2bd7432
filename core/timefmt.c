/*
 * timefmt.c - RFC 3339 UTC times and clock-style durations.
 *
 * Conversion goes through gmtime_r() and timegm(), which use UTC and never
 * the process's time zone, so every function is a pure function of its
 * arguments.  Output always fits JF_TIME_BUF; a smaller buffer gets a cut
 * but terminated string (snprintf).
 */
#include "core/timefmt.h"

#include <stdio.h>
#include <time.h>

void jf_time_rfc3339(int64_t ms, char *buf, size_t n)
{
	struct tm tm;
	time_t t;

	if (n == 0)
		return;
	buf[0] = '\0';
	if (ms <= 0)
		return;
	t = (time_t)(ms / 1000);
	if (!gmtime_r(&t, &tm) || tm.tm_year > 9999 - 1900)
		return;
	snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* Exactly `digits` decimal digits at *p, advancing *p. */
static bool take_num(const char **p, int digits, int *out)
{
	int v = 0;

	for (int i = 0; i < digits; i++) {
		char c = (*p)[i];

		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (c - '0');
	}
	*p += digits;
	*out = v;
	return true;
}

static bool take_char(const char **p, char a, char b)
{
	if (**p != a && **p != b)
		return false;
	(*p)++;
	return true;
}

static bool is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

bool jf_time_parse_rfc3339(const char *s, int64_t *ms)
{
	int y, mo, d, h, mi, sec, frac = 0, off = 0;
	struct tm tm = { 0 };
	time_t t;

	if (!s)
		return false;
	if (!take_num(&s, 4, &y) || !take_char(&s, '-', '-') || !take_num(&s, 2, &mo) ||
	    !take_char(&s, '-', '-') || !take_num(&s, 2, &d) || !take_char(&s, 'T', 't') ||
	    !take_num(&s, 2, &h) || !take_char(&s, ':', ':') || !take_num(&s, 2, &mi) ||
	    !take_char(&s, ':', ':') || !take_num(&s, 2, &sec))
		return false;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 60)
		return false;
	if (*s == '.') {
		int scale = 100, nd = 0;

		for (s++; *s >= '0' && *s <= '9'; s++, nd++) {
			frac += (*s - '0') * scale;
			scale /= 10;
		}
		if (nd == 0)
			return false;
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		int sign = *s == '-' ? -1 : 1, oh, om;

		s++;
		if (!take_num(&s, 2, &oh) || !take_char(&s, ':', ':') || !take_num(&s, 2, &om) ||
		    oh > 23 || om > 59)
			return false;
		off = sign * (oh * 3600 + om * 60);
	} else {
		return false;
	}
	if (*s)
		return false;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (ms)
		*ms = ((int64_t)t - off) * 1000 + frac;
	return true;
}

void jf_duration_clock(int64_t seconds, char *buf, size_t n)
{
	if (n == 0)
		return;
	if (seconds < 0)
		seconds = 0;
	if (seconds >= 3600)
		snprintf(buf, n, "%lld:%02d:%02d", (long long)(seconds / 3600),
			 (int)(seconds / 60 % 60), (int)(seconds % 60));
	else
		snprintf(buf, n, "%02d:%02d", (int)(seconds / 60), (int)(seconds % 60));
}
