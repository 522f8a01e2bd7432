/*
 * test_subst.c - ${VAR} substitution on raw text: values, escapes, every
 * error with its line, and the size cap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/spec.h"

static const struct jf_subst vars = { .job_name = "demo", .queue = "q1", .group = "g1" };

static void expect_out(const char *in, const char *want)
{
	struct jf_error e = { 0 };
	char *out = jf_subst_apply(in, strlen(in), &vars, &e);
	if (!out)
		fail_msg("unexpected error for \"%s\": %s", in, e.msg);
	assert_string_equal(out, want);
	free(out);
}

static void expect_fail(const char *in, const struct jf_subst *s, enum jf_err code, int line,
			const char *want)
{
	struct jf_error e = { 0 };
	char *out = jf_subst_apply(in, strlen(in), s, &e);
	if (out)
		fail_msg("want an error for \"%s\", got \"%s\"", in, out);
	assert_int_equal(e.code, code);
	assert_int_equal(e.line, line);
	if (!strstr(e.msg, want))
		fail_msg("want '%s' in: %s", want, e.msg);
	/* a NULL error pointer is allowed */
	assert_null(jf_subst_apply(in, strlen(in), s, NULL));
}

static void substitutes(void **state)
{
	(void)state;
	expect_out("name: ${JOB_NAME}\n", "name: demo\n");
	expect_out("${QUEUE}/${GROUP}/${JOB_NAME}", "q1/g1/demo");
	expect_out("", "");
	expect_out("no variables at all\n", "no variables at all\n");
	expect_out("${JOB_NAME}${JOB_NAME}", "demodemo");
	char *out = jf_subst_apply(NULL, 0, &vars, NULL);
	assert_string_equal(out, "");
	free(out);
}

static void dollars(void **state)
{
	(void)state;
	expect_out("$$", "$");
	expect_out("$$$$", "$$");
	expect_out("$$${JOB_NAME}", "$demo");
	expect_out("$${JOB_NAME}", "${JOB_NAME}");
	expect_out("a$b $HOME $(VAR) $ {x} $", "a$b $HOME $(VAR) $ {x} $");
	expect_out("price: 5$\n", "price: 5$\n");
}

static void length_not_nul(void **state)
{
	(void)state;
	struct jf_error e = { 0 };
	const char *in = "${QUEUE}xyz${NOPE}";
	char *out = jf_subst_apply(in, 10, &vars, &e); /* "${QUEUE}xy" */
	assert_non_null(out);
	assert_string_equal(out, "q1xy");
	free(out);
	out = jf_subst_apply("${QUEUE}", 5, &vars, &e); /* "${QUE" */
	assert_null(out);
	assert_non_null(strstr(e.msg, "unterminated"));
}

static void errors(void **state)
{
	(void)state;
	expect_fail("a: 1\nb: ${FOO}\n", &vars, JF_EINVAL, 2, "unknown variable ${FOO}");
	expect_fail("a: 1\nb: ${FOO}\n", &vars, JF_EINVAL, 2, "${JOB_NAME}, ${QUEUE} and ${GROUP}");
	expect_fail("\n\n${JOB_NAME", &vars, JF_EINVAL, 3, "unterminated");
	expect_fail("${JOB\nNAME}", &vars, JF_EINVAL, 1, "unterminated");
	expect_fail("x ${}", &vars, JF_EINVAL, 1, "bad variable name '${}'");
	expect_fail("x ${1A}", &vars, JF_EINVAL, 1, "bad variable name '${1A}'");
	expect_fail("x ${A-B}", &vars, JF_EINVAL, 1, "bad variable name");
	expect_fail("x ${ JOB_NAME }", &vars, JF_EINVAL, 1, "bad variable name");
	expect_fail("x ${job_name}", &vars, JF_EINVAL, 1, "unknown variable ${job_name}");
	struct jf_subst partial = { .job_name = "x" };
	expect_fail("\n${QUEUE}", &partial, JF_EINVAL, 2, "${QUEUE} has no value here");
	expect_fail("${GROUP}", NULL, JF_EINVAL, 1, "${GROUP} has no value here");
	expect_fail("${OTHER}", NULL, JF_EINVAL, 1, "unknown variable ${OTHER}");
	struct jf_subst nl = { .job_name = "a\nb", .queue = "a\tb", .group = "a\rb" };
	expect_fail("${JOB_NAME}", &nl, JF_EINVAL, 1, "line break");
	expect_fail("${QUEUE}", &nl, JF_EINVAL, 1, "control character");
	expect_fail("${GROUP}", &nl, JF_EINVAL, 1, "line break");
}

static void size_cap(void **state)
{
	(void)state;
	char *big = malloc(1001);
	assert_non_null(big);
	memset(big, 'x', 1000);
	big[1000] = '\0';
	struct jf_subst s = { .job_name = big };
	char in[4000] = "";
	for (int i = 0; i < 300; i++)
		strcat(in, "${JOB_NAME}");
	expect_fail(in, &s, JF_EFBIG, 1, "more than 262144 bytes");
	/* the line where the text passed the cap */
	char lines[4000] = "a\nb\n";
	for (int i = 0; i < 300; i++)
		strcat(lines, i == 100 ? "\n${JOB_NAME}" : "${JOB_NAME}");
	expect_fail(lines, &s, JF_EFBIG, 4,
		    "after ${VAR} substitution the spec is more than "
		    "262144 bytes");
	/* just under the cap is fine */
	in[0] = '\0';
	for (int i = 0; i < 262; i++)
		strcat(in, "${JOB_NAME}");
	struct jf_error e = { 0 };
	char *out = jf_subst_apply(in, strlen(in), &s, &e);
	assert_non_null(out);
	assert_int_equal(strlen(out), 262000);
	free(out);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(substitutes),    cmocka_unit_test(dollars),
		cmocka_unit_test(length_not_nul), cmocka_unit_test(errors),
		cmocka_unit_test(size_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
