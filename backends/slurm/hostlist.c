/*
 * hostlist.c - Slurm hostlist expressions and job array index sets.
 *
 * DESIGN
 *
 * A hostlist is read twice.  The first pass, scan(), walks the whole
 * string once, checks every character, range and name length, and counts
 * the names it stands for (saturating, so "n[0-999999999999]" cannot
 * overflow anything) without allocating.  Only when that pass accepts the
 * list does the second pass, gen(), write names: it can then fail only for
 * memory.  jf_hostlist_first() runs the same scan and then writes only the
 * first name (the low bound of the first range of every bracket group).
 *
 * A name is literal text and bracket groups, "lit[ranges]lit[ranges]";
 * gen() recurses once per group, so the first group is outermost, as in
 * Slurm.  A group's ranges are "lo" or "lo-hi" (lo <= hi, decimal, at most
 * NUM_DIGITS_MAX digits); a low bound written with a leading zero gives the
 * width every number of that range is printed with.
 *
 * An index set is "item,item,...[%P]", an item "a", "a-b" or "a-b:s".  Its
 * parser counts first (refusing more than max indexes before allocating),
 * then fills, sorts and removes repeats.  The formatter writes runs of
 * consecutive indexes as "a-b" into a buffer sized in advance.
 *
 * A gres_detail entry's "(IDX:...)" after a "gpu" gres is an index set
 * too, read with the same parser and printed comma by comma.
 *
 * USE: the slurm backend expands a job's "nodes" into the hosts it tells
 * the engine about, and writes and reads array index sets ("--array").
 * Give max a bound that fits the caller's own limits: it is what keeps a
 * hostile "n[0-999999999]" from costing memory.
 *
 * What holds: every public function leaves its outputs empty (NULL, 0,
 * "") when it fails, and no message quotes more than QUOTE_MAX bytes of
 * the input.
 */
#include "backends/slurm/hostlist.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUM_DIGITS_MAX 18 /* decimal digits in one number: fits in uint64_t */
#define GROUPS_MAX     8  /* bracket groups in one name */
#define QUOTE_MAX      64 /* input bytes quoted in a message */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '.' ||
	       c == '_' || c == '-';
}

static size_t add_sat(size_t a, size_t b)
{
	size_t r;
	return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

static size_t mul_sat(size_t a, size_t b)
{
	size_t r;
	return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* JF_EINVAL with "<what> "<input>" at offset <off>: <why>". */
__attribute__((format(printf, 5, 6))) static enum jf_err
fail_at(struct jf_error *err, const char *what, const char *input, size_t off, const char *fmt, ...)
{
	char why[256], q[QUOTE_MAX * 4 + 8];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	jf_err_quote(input, strlen(input), QUOTE_MAX, q, sizeof(q));
	return jf_error_set(err, JF_EINVAL, 0, "%s \"%s\" at offset %zu: %s", what, q, off, why);
}

/* Read a decimal number at *pp: at least one, at most NUM_DIGITS_MAX
 * digits.  *ndigits gets how many were written.  false if none or too
 * many (then *pp is left where the trouble is). */
static bool parse_num(const char **pp, uint64_t *v, size_t *ndigits)
{
	const char *p = *pp;
	uint64_t x = 0;
	size_t k = 0;

	while (is_digit(*p)) {
		if (k == NUM_DIGITS_MAX)
			return false;
		x = x * 10 + (uint64_t)(*p - '0');
		p++;
		k++;
	}
	if (k == 0)
		return false;
	*v = x;
	*ndigits = k;
	*pp = p;
	return true;
}

static size_t digits_of(uint64_t v)
{
	size_t k = 1;
	while (v >= 10) {
		v /= 10;
		k++;
	}
	return k;
}

/* ---- hostlists ---------------------------------------------------------- */

/* One range of a bracket group, as read by range_read(). */
struct range {
	uint64_t lo, hi;
	int width; /* print width (zero-padded), 0 = as is */
};

/* Read the range at *pp (inside brackets) and step past it and the ',' or
 * ']' after it; *last tells which it was. */
static enum jf_err range_read(const char *list, const char **pp, struct range *r, bool *last,
			      struct jf_error *err)
{
	const char *p = *pp;
	size_t nd = 0, nd_hi = 0;

	if (!parse_num(&p, &r->lo, &nd)) {
		if (is_digit(*p))
			return fail_at(err, "hostlist", list, (size_t)(p - list),
				       "number longer than %d digits", NUM_DIGITS_MAX);
		return fail_at(err, "hostlist", list, (size_t)(p - list),
			       *p == ']' || *p == ',' ? "empty range"
						      : "expected a number in brackets");
	}
	r->width = (nd > 1 && (*pp)[0] == '0') ? (int)nd : 0;
	r->hi = r->lo;
	if (*p == '-') {
		p++;
		if (!parse_num(&p, &r->hi, &nd_hi))
			return fail_at(err, "hostlist", list, (size_t)(p - list),
				       is_digit(*p) ? "number too long"
						    : "range has no upper bound");
		if (r->hi < r->lo)
			return fail_at(err, "hostlist", list, (size_t)(*pp - list),
				       "descending range %" PRIu64 "-%" PRIu64, r->lo, r->hi);
	}
	if (*p == ',') {
		*last = false;
	} else if (*p == ']') {
		*last = true;
	} else if (*p == ':') {
		return fail_at(err, "hostlist", list, (size_t)(p - list),
			       "hostlist ranges have no step");
	} else if (*p == '\0') {
		return fail_at(err, "hostlist", list, (size_t)(p - list), "'[' is never closed");
	} else {
		return fail_at(err, "hostlist", list, (size_t)(p - list),
			       "unexpected character in brackets");
	}
	*pp = p + 1;
	return JF_OK;
}

/* Check the whole list; *count gets the number of names (saturated at
 * SIZE_MAX).  More than max names is an error. */
static enum jf_err scan(const char *list, size_t max, size_t *count, struct jf_error *err)
{
	const char *p = list;
	size_t total = 0;

	*count = 0;
	if (*p == '\0')
		return JF_OK;
	for (;;) {
		size_t names = 1, len = 0, groups = 0;
		bool after_group = false; /* literal text since the last ']' */
		const char *lit_start = p;

		for (;;) {
			while (is_name_char(*p)) {
				p++;
				len++;
			}
			if (*p == '[') {
				size_t in_group = 0, width = 0;
				bool last = false;
				if (++groups > GROUPS_MAX)
					return fail_at(err, "hostlist", list, (size_t)(p - list),
						       "more than %d bracket groups in one name",
						       GROUPS_MAX);
				p++;
				while (!last) {
					struct range r = { 0 };
					enum jf_err rc = range_read(list, &p, &r, &last, err);
					if (rc)
						return rc;
					in_group = add_sat(in_group,
							   add_sat((size_t)(r.hi - r.lo), 1));
					size_t w = digits_of(r.hi);
					if ((size_t)r.width > w)
						w = (size_t)r.width;
					if (w > width)
						width = w;
				}
				names = mul_sat(names, in_group);
				len += width;
				after_group = false;
				lit_start = p;
				if (is_name_char(*p))
					after_group = true;
				continue;
			}
			break;
		}
		if (*p != ',' && *p != '\0') {
			if (*p == ']')
				return fail_at(err, "hostlist", list, (size_t)(p - list),
					       "']' without '['");
			char c[8];
			if (*p > 0x20 && *p < 0x7f)
				snprintf(c, sizeof(c), "'%c'", *p);
			else
				snprintf(c, sizeof(c), "\\x%02x", (unsigned char)*p);
			return fail_at(
				err, "hostlist", list, (size_t)(p - list),
				"character %s is not allowed in a host name (A-Z a-z 0-9 . _ -)",
				c);
		}
		if (after_group)
			return fail_at(err, "hostlist", list, (size_t)(lit_start - list),
				       "text after ']' (Slurm allows none)");
		if (len == 0)
			return fail_at(err, "hostlist", list, (size_t)(p - list),
				       "empty host name");
		if (len > JF_HOSTNAME_MAX)
			return fail_at(err, "hostlist", list, (size_t)(p - list),
				       "host name longer than %d bytes", JF_HOSTNAME_MAX);
		total = add_sat(total, names);
		if (total > max)
			return jf_error_set(err, JF_EINVAL, 0, "hostlist has more than %zu names",
					    max);
		if (*p == '\0')
			break;
		p++; /* the ',' */
		if (*p == '\0')
			return fail_at(err, "hostlist", list, (size_t)(p - list),
				       "empty host name after ','");
	}
	*count = total;
	return JF_OK;
}

struct names {
	char **v;
	size_t n, cap;
};

/* Write every name of the (checked) entry at p, buf[0..len) already
 * holding the text before p; returns where the entry ends. */
static enum jf_err gen(struct names *o, char *buf, size_t len, const char *p, const char **end)
{
	while (is_name_char(*p))
		buf[len++] = *p++;
	if (*p != '[') {
		buf[len] = '\0';
		if (o->n == o->cap)
			return JF_ENOMEM; /* scan() counted wrong: cannot happen */
		if (!(o->v[o->n] = strdup(buf)))
			return JF_ENOMEM;
		o->n++;
		*end = p;
		return JF_OK;
	}
	const char *q = p + 1;
	const char *after = strchr(q, ']') + 1;
	bool last = false;
	while (!last) {
		struct range r = { 0 };
		size_t nd = 0;
		const char *s = q;
		parse_num(&q, &r.lo, &nd);
		r.width = (nd > 1 && s[0] == '0') ? (int)nd : 0;
		r.hi = r.lo;
		if (*q == '-') {
			q++;
			parse_num(&q, &r.hi, &nd);
		}
		last = (*q == ']');
		q++;
		for (uint64_t v = r.lo;; v++) {
			int k = snprintf(buf + len, JF_HOSTNAME_MAX + 1 - len, "%0*" PRIu64,
					 r.width, v);
			enum jf_err rc = gen(o, buf, len + (size_t)k, after, end);
			if (rc)
				return rc;
			if (v == r.hi)
				break;
		}
	}
	return JF_OK;
}

void jf_hostlist_free(char **names, size_t n)
{
	if (!names)
		return;
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

enum jf_err jf_hostlist_expand(const char *list, char ***names, size_t *n, size_t max,
			       struct jf_error *err)
{
	struct names o = { 0 };
	char buf[JF_HOSTNAME_MAX + 1];
	size_t count;
	enum jf_err rc;

	*names = NULL;
	*n = 0;
	if (!list)
		return jf_error_set(err, JF_EINVAL, 0, "hostlist is NULL");
	if ((rc = scan(list, max, &count, err)))
		return rc;
	if (count == 0)
		return JF_OK;
	if (!(o.v = calloc(count, sizeof(*o.v))))
		return jf_error_set(err, JF_ENOMEM, 0, "hostlist: out of memory for %zu names",
				    count);
	o.cap = count;
	const char *p = list;
	for (;;) {
		if ((rc = gen(&o, buf, 0, p, &p)))
			goto fail;
		if (*p == '\0')
			break;
		p++;
	}
	*names = o.v;
	*n = o.n;
	return JF_OK;
fail:
	jf_hostlist_free(o.v, o.n);
	return jf_error_set(err, JF_ENOMEM, 0, "hostlist: out of memory for %zu names", count);
}

enum jf_err jf_hostlist_first(const char *list, char *buf, size_t n)
{
	char name[JF_HOSTNAME_MAX + 1];
	size_t count, len = 0;
	const char *p = list;

	if (n > 0)
		buf[0] = '\0';
	if (!list)
		return JF_EINVAL;
	if (scan(list, SIZE_MAX, &count, NULL))
		return JF_EINVAL;
	if (count == 0)
		return JF_ENOENT;
	for (;;) {
		while (is_name_char(*p))
			name[len++] = *p++;
		if (*p != '[')
			break;
		uint64_t lo = 0;
		size_t nd = 0;
		const char *s = ++p;
		parse_num(&p, &lo, &nd);
		len += (size_t)snprintf(name + len, sizeof(name) - len, "%0*" PRIu64,
					(nd > 1 && s[0] == '0') ? (int)nd : 0, lo);
		p = strchr(p, ']') + 1;
	}
	name[len] = '\0';
	if (len >= n)
		return JF_EFBIG;
	memcpy(buf, name, len + 1);
	return JF_OK;
}

/* ---- index sets --------------------------------------------------------- */

/* Read one index (0 .. JF_IDX_MAX) at *pp. */
static enum jf_err idx_read(const char *s, const char **pp, int64_t *v, struct jf_error *err)
{
	uint64_t x = 0;
	size_t nd = 0;
	const char *p = *pp;

	if (!parse_num(&p, &x, &nd)) {
		if (is_digit(*p))
			return fail_at(err, "index set", s, (size_t)(*pp - s), "number too long");
		return fail_at(err, "index set", s, (size_t)(*pp - s), "expected an index");
	}
	if (x > (uint64_t)JF_IDX_MAX)
		return fail_at(err, "index set", s, (size_t)(*pp - s),
			       "index %" PRIu64 " is over %" PRId64, x, JF_IDX_MAX);
	*v = (int64_t)x;
	*pp = p;
	return JF_OK;
}

struct item {
	int64_t lo, hi, step;
};

/* Read the item at *pp and step past a following ','; *done at the end
 * (at '%' or NUL). */
static enum jf_err item_read(const char *s, const char **pp, struct item *it, bool *done,
			     struct jf_error *err)
{
	enum jf_err rc;
	const char *p = *pp;

	if ((rc = idx_read(s, &p, &it->lo, err)))
		return rc;
	it->hi = it->lo;
	it->step = 1;
	if (*p == '-') {
		p++;
		if ((rc = idx_read(s, &p, &it->hi, err)))
			return rc;
		if (it->hi < it->lo)
			return fail_at(err, "index set", s, (size_t)(*pp - s),
				       "descending range %" PRId64 "-%" PRId64, it->lo, it->hi);
		if (*p == ':') {
			const char *st = ++p;
			if ((rc = idx_read(s, &p, &it->step, err)))
				return rc;
			if (it->step == 0)
				return fail_at(err, "index set", s, (size_t)(st - s), "step is 0");
		}
	}
	if (*p == ',') {
		p++;
		*done = false;
		if (*p == '\0' || *p == '%')
			return fail_at(err, "index set", s, (size_t)(p - s), "nothing after ','");
	} else if (*p == '\0' || *p == '%') {
		*done = true;
	} else {
		return fail_at(err, "index set", s, (size_t)(p - s),
			       *p == ':' ? "a step needs a range (a-b:s)" : "unexpected character");
	}
	*pp = p;
	return JF_OK;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

enum jf_err jf_idxset_parse(const char *s, int64_t **idx, size_t *n, size_t max, int64_t *throttle,
			    struct jf_error *err)
{
	const char *p, *pct;
	size_t count = 0, k = 0;
	int64_t thr = 0, *v = NULL;
	struct item it;
	bool done = false;
	enum jf_err rc;

	*idx = NULL;
	*n = 0;
	if (throttle)
		*throttle = 0;
	if (!s)
		return jf_error_set(err, JF_EINVAL, 0, "index set is NULL");
	if (*s == '\0')
		return JF_OK;
	if ((pct = strchr(s, '%'))) {
		p = pct + 1;
		if ((rc = idx_read(s, &p, &thr, err)))
			return rc;
		if (*p != '\0')
			return fail_at(err, "index set", s, (size_t)(p - s),
				       "text after the throttle");
		if (pct == s)
			return fail_at(err, "index set", s, 0, "no indexes before '%%'");
	}
	/* pass 1: check and count */
	for (p = s, done = false; !done;) {
		if ((rc = item_read(s, &p, &it, &done, err)))
			return rc;
		count = add_sat(count, (size_t)((it.hi - it.lo) / it.step) + 1);
		if (count > max)
			return jf_error_set(err, JF_EINVAL, 0,
					    "index set has more than %zu indexes", max);
	}
	if (!(v = malloc(count * sizeof(*v))))
		return jf_error_set(err, JF_ENOMEM, 0, "index set: out of memory for %zu indexes",
				    count);
	/* pass 2: fill (cannot fail) */
	for (p = s, done = false; !done;) {
		item_read(s, &p, &it, &done, NULL);
		for (int64_t x = it.lo; x <= it.hi; x += it.step) {
			v[k++] = x;
			if (it.hi - x < it.step)
				break;
		}
	}
	qsort(v, k, sizeof(*v), cmp_i64);
	size_t d = 0;
	for (size_t i = 0; i < k; i++)
		if (d == 0 || v[d - 1] != v[i])
			v[d++] = v[i];
	*idx = v;
	*n = d;
	if (throttle)
		*throttle = thr;
	return JF_OK;
}

char *jf_idxset_format(const int64_t *idx, size_t n, int64_t throttle)
{
	/* an index takes at most 10 digits and one separator, "%P" 11 bytes */
	const size_t per = 11;
	char *buf, *w;

	if (throttle < 0 || throttle > JF_IDX_MAX) {
		errno = EINVAL;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (idx[i] < 0 || idx[i] > JF_IDX_MAX) {
			errno = EINVAL;
			return NULL;
		}
	}
	if (n > (SIZE_MAX - 16) / per) {
		errno = ENOMEM;
		return NULL;
	}
	if (!(buf = malloc(n * per + 16))) {
		errno = ENOMEM;
		return NULL;
	}
	w = buf;
	*w = '\0';
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && idx[j + 1] == idx[j] + 1)
			j++;
		if (i > 0)
			*w++ = ',';
		if (j == i)
			w += sprintf(w, "%" PRId64, idx[i]);
		else
			w += sprintf(w, "%" PRId64 "-%" PRId64, idx[i], idx[j]);
		i = j + 1;
	}
	if (throttle > 0 && n > 0)
		sprintf(w, "%%%" PRId64, throttle);
	return buf;
}

enum jf_err jf_gres_gpu_ids(const char *detail, char *buf, size_t n)
{
	if (n > 0)
		buf[0] = '\0';
	if (!detail)
		return JF_ENOENT;
	/* the "gpu" gres: at the start or after a ',' outside parentheses */
	const char *g = NULL;
	int depth = 0;
	for (const char *p = detail; *p && !g; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')')
			depth--;
		if (depth == 0 && (p == detail || p[-1] == ',') && strncmp(p, "gpu", 3) == 0 &&
		    (p[3] == ':' || p[3] == '(' || p[3] == ',' || p[3] == '\0'))
			g = p;
	}
	if (!g)
		return JF_ENOENT;
	const char *open = strchr(g, '(');
	const char *comma = strchr(g, ',');
	if (!open || (comma && comma < open))
		return JF_ENOENT; /* no index list for this gres */
	if (strncmp(open, "(IDX:", 5) != 0)
		return JF_EINVAL;
	const char *list = open + 5, *close = strchr(list, ')');
	if (!close)
		return JF_EINVAL;
	size_t len = (size_t)(close - list);
	if (len == 3 && strncmp(list, "N/A", 3) == 0)
		return JF_ENOENT;
	char set[256];
	if (len == 0 || len >= sizeof(set))
		return JF_EINVAL;
	memcpy(set, list, len);
	set[len] = '\0';
	int64_t *idx = NULL;
	size_t k = 0;
	struct jf_error err;
	if (strchr(set, '%') || jf_idxset_parse(set, &idx, &k, 1024, NULL, &err) != JF_OK)
		return JF_EINVAL;
	size_t off = 0;
	enum jf_err rc = JF_OK;
	for (size_t i = 0; i < k && rc == JF_OK; i++) {
		if (idx[i] > 1023) {
			rc = JF_EINVAL;
			break;
		}
		int w = snprintf(buf + off, n > off ? n - off : 0, "%s%" PRId64, i ? "," : "",
				 idx[i]);
		if (w < 0 || (size_t)w >= (n > off ? n - off : 0))
			rc = JF_EFBIG;
		else
			off += (size_t)w;
	}
	free(idx);
	if (rc != JF_OK && n > 0)
		buf[0] = '\0';
	return rc;
}
