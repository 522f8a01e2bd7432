/*
 * quantity.h - durations and Kubernetes quantities, parsed and printed.
 *
 * Pure functions; no allocation.  Every parser rejects empty strings,
 * signs, overflow past INT64_MAX and trailing garbage.
 */
#ifndef JF_QUANTITY_H
#define JF_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "90s", "30m", "2h", "1h30m", "1d", "1h30m15s"; a bare integer is seconds.
 * Units must appear in decreasing order (d, h, m, s), each at most once. */
bool jf_duration_parse(const char *s, int64_t *seconds);

/* Shortest exact form: 90 -> "1m30s", 3600 -> "1h", 0 -> "0s". */
void jf_duration_format(int64_t seconds, char *buf, size_t n);

/* CPU quantity to millicores: "2" -> 2000, "14000m" -> 14000, "0.5" -> 500,
 * "1.5" -> 1500.  Fractions finer than 1m are refused. */
bool jf_cpu_parse(const char *s, int64_t *millicores);

/* Memory/storage quantity to bytes: plain bytes, decimal suffixes
 * k M G T P E, binary Ki Mi Gi Ti Pi Ei, exponent form "1e9", decimal
 * fractions "1.5Gi" (result must be a whole number of bytes). */
bool jf_mem_parse(const char *s, int64_t *bytes);

/* Bytes as the largest exact binary unit: 8589934592 -> "8Gi", 1000 -> "1000". */
void jf_mem_format(int64_t bytes, char *buf, size_t n);

/* Millicores as "12" when whole, else "9333m". */
void jf_cpu_format(int64_t millicores, char *buf, size_t n);

#endif
