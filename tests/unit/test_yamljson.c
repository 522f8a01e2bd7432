/*
 * test_yamljson.c - YAML documents as jansson values (runtime/yamljson.c):
 * the core schema's scalars, nesting, aliases, and what is refused with
 * its line (not YAML, a key twice, a second document, an alias bomb, too
 * deep, a non-scalar key).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/yamljson.h"

static json_t *yj(const char *text, char *err, size_t n)
{
	return jf_yaml_to_json(text, strlen(text), err, n);
}

static void test_scalars(void **state)
{
	(void)state;
	char err[256];
	json_t *v = yj("a: 1\nb: -7\nc: 0x1f\nd: 0o17\ne: 1.5\nf: 2e3\ng: true\nh: FALSE\n"
		       "i: null\nj: ~\nk:\nl: \"1\"\nm: '0x1f'\nn: 0777\no: 1.2.3\np: yes\n"
		       "q: 99999999999999999999\nr: +3\n",
		       err, sizeof(err));
	assert_non_null(v);
	assert_int_equal(json_integer_value(json_object_get(v, "a")), 1);
	assert_int_equal(json_integer_value(json_object_get(v, "b")), -7);
	assert_int_equal(json_integer_value(json_object_get(v, "c")), 31);
	assert_int_equal(json_integer_value(json_object_get(v, "d")), 15);
	assert_true(json_real_value(json_object_get(v, "e")) == 1.5);
	assert_true(json_real_value(json_object_get(v, "f")) == 2000.0);
	assert_true(json_is_true(json_object_get(v, "g")));
	assert_true(json_is_false(json_object_get(v, "h")));
	assert_true(json_is_null(json_object_get(v, "i")));
	assert_true(json_is_null(json_object_get(v, "j")));
	assert_true(json_is_null(json_object_get(v, "k")));
	/* quoted: strings whatever they look like */
	assert_string_equal(json_string_value(json_object_get(v, "l")), "1");
	assert_string_equal(json_string_value(json_object_get(v, "m")), "0x1f");
	/* YAML 1.2: a leading 0 is decimal, not octal */
	assert_int_equal(json_integer_value(json_object_get(v, "n")), 777);
	/* not numbers: strings */
	assert_string_equal(json_string_value(json_object_get(v, "o")), "1.2.3");
	assert_string_equal(json_string_value(json_object_get(v, "p")), "yes");
	assert_string_equal(json_string_value(json_object_get(v, "q")), "99999999999999999999");
	assert_int_equal(json_integer_value(json_object_get(v, "r")), 3);
	json_decref(v);
}

static void test_nesting_and_aliases(void **state)
{
	(void)state;
	char err[256];
	json_t *v = yj("base: &b {x: 1, y: [a, b]}\ncopy: *b\nlist:\n- 1\n- [2, 3]\n- {z: q}\n",
		       err, sizeof(err));
	assert_non_null(v);
	json_t *c = json_object_get(v, "copy");
	assert_int_equal(json_integer_value(json_object_get(c, "x")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(c, "y"), 1)), "b");
	json_t *l = json_object_get(v, "list");
	assert_int_equal(json_array_size(l), 3);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(l, 1), 1)), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(l, 2), "z")), "q");
	json_decref(v);
	/* a scalar or a list at the top */
	v = yj("[1, two]\n", err, sizeof(err));
	assert_true(json_is_array(v));
	json_decref(v);
	v = yj("hello\n", err, sizeof(err));
	assert_string_equal(json_string_value(v), "hello");
	json_decref(v);
}

static void test_refused(void **state)
{
	(void)state;
	char err[256];
	struct {
		const char *text, *needle;
	} bad[] = {
		{ "a: [1, 2\n", "line " },
		{ "a: 1\na: 2\n", "line 2: a key given twice" },
		{ "a: 1\n---\nb: 2\n", "line 2: a second document" },
		{ "[a]: 1\n", "a key that is not a scalar" },
		{ "", "an empty document" },
		{ "a: \"x\\0y\"\n", "NUL" },
		/* a billion laughs: 10^9 values from nine anchors */
		{ "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
		  "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
		  "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
		  "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
		  "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
		  "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
		  "too many values" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		json_t *v = yj(bad[i].text, err, sizeof(err));
		if (v)
			fail_msg("case %zu accepted", i);
		if (!strstr(err, bad[i].needle))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, bad[i].needle);
	}
	/* nested deeper than the bound */
	char deep[1024] = "";
	for (int i = 0; i < JF_YJ_MAX_DEPTH + 2; i++)
		strcat(deep, "[");
	for (int i = 0; i < JF_YJ_MAX_DEPTH + 2; i++)
		strcat(deep, "]");
	assert_null(yj(deep, err, sizeof(err)));
	assert_non_null(strstr(err, "nested too deep"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_nesting_and_aliases),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
