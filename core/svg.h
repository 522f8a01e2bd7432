/*
 * svg.h - a small writer of SVG 1.1 text (the tree's plots, reference 11).
 *
 * A struct jf_svg is a growing buffer with a size cap: every append either
 * fits or marks the buffer failed (out of memory, or past the cap), and
 * jf_svg_finish() then returns NULL, so callers write without checking
 * each call.  Text and attribute values go through jf_svg_text(), which
 * escapes the five XML specials and replaces what XML 1.0 cannot hold
 * (control characters, bytes that are not UTF-8) with '?'.  Numbers go
 * through jf_svg_num(), which writes a dot and at most one decimal
 * whatever the C locale says.
 *
 * Pure: no I/O, no clock.
 */
#ifndef JF_SVG_H
#define JF_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jf_svg {
	char *buf;
	size_t len, cap, max;
	bool failed;
};

/* An empty buffer that may grow to max bytes (0: 64 MiB). */
void jf_svg_init(struct jf_svg *s, size_t max);
/* Frees what the buffer holds (after a failure, or instead of finishing). */
void jf_svg_release(struct jf_svg *s);
/* The text written, NUL-terminated, now the caller's to free, its length in
 * *len; NULL (and the buffer released) if any append failed. */
char *jf_svg_finish(struct jf_svg *s, size_t *len);

/* Appends raw bytes (markup the caller wrote itself: no escaping). */
void jf_svg_raw(struct jf_svg *s, const char *t);
/* printf-style raw markup; use jf_svg_num() for non-integers and
 * jf_svg_text() for anything that came from outside. */
void jf_svg_printf(struct jf_svg *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends t escaped for text content and attribute values alike. */
void jf_svg_text(struct jf_svg *s, const char *t);
/* Appends v rounded to one decimal, "12", "12.5", "-0.5": no exponent, no
 * locale; NaN and infinities as 0. */
void jf_svg_num(struct jf_svg *s, double v);

/* The prologue: <?xml ...?>, <svg ... version="1.1" width height viewBox>,
 * a <title> (escaped) and a white background. */
void jf_svg_open(struct jf_svg *s, int width, int height, const char *title);
void jf_svg_close(struct jf_svg *s);

#endif
