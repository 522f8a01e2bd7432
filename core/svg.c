/*
 * svg.c - the SVG writer of svg.h.
 *
 * The buffer doubles as it grows, up to its cap; once an append fails the
 * buffer stays failed and every later append is a no-op, so a renderer
 * checks once, at jf_svg_finish().
 */
#include "core/svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVG_MAX_DEFAULT ((size_t)64 << 20)

void jf_svg_init(struct jf_svg *s, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->max = max ? max : SVG_MAX_DEFAULT;
}

void jf_svg_release(struct jf_svg *s)
{
	free(s->buf);
	s->buf = NULL;
	s->len = s->cap = 0;
}

char *jf_svg_finish(struct jf_svg *s, size_t *len)
{
	if (s->failed || !s->buf) {
		jf_svg_release(s);
		*len = 0;
		return NULL;
	}
	char *b = s->buf;
	*len = s->len;
	s->buf = NULL;
	s->len = s->cap = 0;
	return b;
}

/* Room for n more bytes and the NUL. */
static bool reserve(struct jf_svg *s, size_t n)
{
	if (s->failed)
		return false;
	if (s->len + n + 1 <= s->cap)
		return true;
	if (s->len + n + 1 > s->max) {
		s->failed = true;
		return false;
	}
	size_t ncap = s->cap ? s->cap : 4096;
	while (ncap < s->len + n + 1)
		ncap *= 2;
	if (ncap > s->max)
		ncap = s->max;
	char *p = realloc(s->buf, ncap);
	if (!p) {
		s->failed = true;
		return false;
	}
	s->buf = p;
	s->cap = ncap;
	return true;
}

static void put(struct jf_svg *s, const char *t, size_t n)
{
	if (!reserve(s, n))
		return;
	memcpy(s->buf + s->len, t, n);
	s->len += n;
	s->buf[s->len] = '\0';
}

void jf_svg_raw(struct jf_svg *s, const char *t)
{
	put(s, t, strlen(t));
}

void jf_svg_printf(struct jf_svg *s, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		s->failed = true;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		put(s, small, (size_t)n);
		return;
	}
	if (!reserve(s, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(s->buf + s->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	s->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at p (1..4), 0 if there is none. */
static size_t utf8_len(const unsigned char *p)
{
	unsigned c = p[0];
	size_t n;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	unsigned cp = c & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe ||
	    cp == 0xffff)
		return 0;
	return n;
}

void jf_svg_text(struct jf_svg *s, const char *t)
{
	const unsigned char *p = (const unsigned char *)t;
	while (*p) {
		const char *rep = NULL;
		switch (*p) {
		case '&':
			rep = "&amp;";
			break;
		case '<':
			rep = "&lt;";
			break;
		case '>':
			rep = "&gt;";
			break;
		case '"':
			rep = "&quot;";
			break;
		case '\'':
			rep = "&apos;";
			break;
		default:
			break;
		}
		if (rep) {
			jf_svg_raw(s, rep);
			p++;
			continue;
		}
		if (*p < 0x20 && *p != '\t') {
			put(s, "?", 1);
			p++;
			continue;
		}
		size_t n = utf8_len(p);
		if (n == 0) {
			put(s, "?", 1);
			p++;
			continue;
		}
		put(s, (const char *)p, n);
		p += n;
	}
}

void jf_svg_num(struct jf_svg *s, double v)
{
	if (!isfinite(v))
		v = 0;
	if (v > 1e15)
		v = 1e15;
	if (v < -1e15)
		v = -1e15;
	long long tenths = llround(v * 10);
	bool neg = tenths < 0;
	unsigned long long a = neg ? (unsigned long long)-tenths : (unsigned long long)tenths;
	if (a % 10)
		jf_svg_printf(s, "%s%llu.%llu", neg ? "-" : "", a / 10, a % 10);
	else
		jf_svg_printf(s, "%s%llu", neg && a ? "-" : "", a / 10);
}

void jf_svg_open(struct jf_svg *s, int width, int height, const char *title)
{
	jf_svg_printf(
		s,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
		"width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
		width, height, width, height);
	jf_svg_raw(s, "<title>");
	jf_svg_text(s, title);
	jf_svg_raw(s, "</title>\n");
	jf_svg_printf(s,
		      "<rect class=\"background\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
		      width, height);
}

void jf_svg_close(struct jf_svg *s)
{
	jf_svg_raw(s, "</svg>\n");
}
