/*
 * timefmt.h - times and durations as the tree shows them.
 *
 * Times are milliseconds since the Unix epoch, always rendered in UTC as
 * RFC 3339 with whole seconds ("2026-11-29T18:00:03Z").  Pure functions:
 * nothing here reads the clock or the time zone.
 */
#ifndef JF_TIMEFMT_H
#define JF_TIMEFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JF_TIME_BUF 32 /* fits any output of this module */

/* "2026-11-29T18:00:03Z", seconds floored; ms <= 0 (not set) gives "",
 * and so does a year past 9999. */
void jf_time_rfc3339(int64_t ms, char *buf, size_t n);

/* Parse "2026-11-29T18:00:03Z", "...03.250Z" or "...03+08:00" (T or t,
 * Z or z) to milliseconds; fractions finer than 1 ms are truncated. */
bool jf_time_parse_rfc3339(const char *s, int64_t *ms);

/* Wall time as a clock: 87 -> "01:27", 3723 -> "1:02:03" (h:mm:ss from
 * one hour on).  Negative seconds show as "00:00". */
void jf_duration_clock(int64_t seconds, char *buf, size_t n);

#endif
