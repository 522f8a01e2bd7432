/*
 * test_ctl.c - parsing a ctl write (core/ctl.c) and the escaping of
 * hostile bytes in messages (core/err.c).
 *
 * Every accepted form (blanks, CR, one newline) gives the canonical verb;
 * every refusal is JF_EINVAL (JF_EFBIG past JF_CTL_MAX_BYTES), leaves the
 * verb untouched and quotes what was written, escaped and cut short.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/ctl.h"

static void ok(const char *text, size_t len, enum jf_ctl_verb want)
{
	enum jf_ctl_verb v = JF_CTL_NVERBS;
	struct jf_error e;
	jf_error_clear(&e);
	enum jf_err rc = jf_ctl_parse(text, len, &v, &e);
	if (rc != JF_OK)
		fail_msg("%.*s refused: %s", (int)len, text, e.msg);
	assert_int_equal(v, want);
}

#define OK(text, want) ok(text, sizeof(text) - 1, want)

/* Refused with code; the message holds s1 and s2 and only printable ASCII. */
static void bad(const char *text, size_t len, enum jf_err code, const char *s1, const char *s2)
{
	enum jf_ctl_verb v = JF_CTL_NVERBS;
	struct jf_error e;
	jf_error_clear(&e);
	enum jf_err rc = jf_ctl_parse(text, len, &v, &e);
	if (rc != code)
		fail_msg("%.*s: want %s, got %s (%s)", (int)len, text, jf_err_name(code),
			 jf_err_name(rc), e.msg);
	assert_int_equal(e.code, code);
	assert_int_equal(v, JF_CTL_NVERBS);
	assert_int_equal(e.line, 0);
	for (const char *p = e.msg; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			fail_msg("byte 0x%02x in: %s", (unsigned char)*p, e.msg);
	if (s1 && !strstr(e.msg, s1))
		fail_msg("want '%s' in: %s", s1, e.msg);
	if (s2 && !strstr(e.msg, s2))
		fail_msg("want '%s' in: %s", s2, e.msg);
	assert_true(strlen(e.msg) < 300);
}

#define BAD(text, s1, s2) bad(text, sizeof(text) - 1, JF_EINVAL, s1, s2)

static void verbs(void **state)
{
	(void)state;
	OK("pause", JF_CTL_PAUSE);
	OK("resume\n", JF_CTL_RESUME);
	OK("stop\n", JF_CTL_STOP);
	OK("restart\n", JF_CTL_RESTART);
	OK("stop\r\n", JF_CTL_STOP);
	OK("  \tstop \t\n", JF_CTL_STOP);
	OK(" pause ", JF_CTL_PAUSE);
	ok("stopXYZ", 4, JF_CTL_STOP); /* len, not NUL, ends the buffer */
	assert_string_equal(jf_ctl_verb_name(JF_CTL_PAUSE), "pause");
	assert_string_equal(jf_ctl_verb_name(JF_CTL_RESUME), "resume");
	assert_string_equal(jf_ctl_verb_name(JF_CTL_STOP), "stop");
	assert_string_equal(jf_ctl_verb_name(JF_CTL_RESTART), "restart");
	assert_string_equal(jf_ctl_verb_name(JF_CTL_NVERBS), "?");
	assert_string_equal(jf_ctl_verb_name((enum jf_ctl_verb) - 1), "?");
}

static void refused(void **state)
{
	(void)state;
	BAD("explode\n", "unknown verb \"explode\"", "pause, resume, stop or restart");
	BAD("STOP\n", "verbs are lowercase (stop)", NULL);
	BAD("Restart", "lowercase (restart)", NULL);
	BAD("stop now\n", "unknown verb \"stop now\"", NULL);
	BAD("stop\nstop\n", "\"stop\\x0astop\" is more than one line", NULL);
	BAD("stop\n\n", "more than one line", NULL);
	BAD("\nstop", "more than one line", NULL);
	BAD("", "no verb written", NULL);
	BAD("\n", "no verb written", NULL);
	BAD(" \t\r\n", "no verb written", NULL);
	BAD("st\0op\n", "\"st\\x00op\"", NULL);
	BAD("st\xc3\xb6p\n", "\"st\\xc3\\xb6p\"", NULL);
	BAD("\x1b[31mstop\n", "\"\\x1b[31mstop\"", NULL);
	BAD("say \"hi\" \\\n", "\"say \\\"hi\\\" \\\\\"", NULL);
	BAD("pause;stop", "unknown verb", NULL);
	bad(NULL, 0, JF_EINVAL, "no verb written", NULL);
	/* long garbage is cut after 40 bytes */
	char junk[JF_CTL_MAX_BYTES];
	memset(junk, 'x', sizeof(junk));
	bad(junk, sizeof(junk), JF_EINVAL, "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...\"", NULL);
	/* every byte value alone: refused, message clean */
	for (int c = 0; c < 256; c++) {
		char one = (char)c;
		bad(&one, 1, JF_EINVAL, NULL, NULL);
	}
}

static void size_limit(void **state)
{
	(void)state;
	char buf[JF_CTL_MAX_BYTES + 2];
	memset(buf, ' ', sizeof(buf));
	memcpy(buf, "stop", 4);
	ok(buf, JF_CTL_MAX_BYTES, JF_CTL_STOP); /* the limit itself is fine */
	bad(buf, JF_CTL_MAX_BYTES + 1, JF_EFBIG, "257 bytes written, more than the limit of 256",
	    "write one verb");
	bad(buf, sizeof(buf), JF_EFBIG, "258 bytes", NULL);
}

/* jf_error_set() escapes what a value quoted into a message may hold. */
static void message_escaping(void **state)
{
	(void)state;
	struct jf_error e;
	jf_error_set(&e, JF_EINVAL, 3, "got \"%s\"", "a\tb\nc\rd\x01\x7f");
	assert_string_equal(e.msg, "line 3: got \"a\\tb\\nc\\rd\\x01\\x7f\"");
	/* C1 controls and the Unicode line separators */
	jf_error_set(&e, JF_EINVAL, 0, "%s", "x\xc2\x85y\xe2\x80\xa8z\xe2\x80\xa9");
	assert_string_equal(e.msg, "x\\u0085y\\u2028z\\u2029");
	/* valid UTF-8 stays as it is */
	jf_error_set(&e, JF_EINVAL, 0, "%s", "\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80");
	assert_string_equal(e.msg, "\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80");
	/* a sequence cut by "%.2s", invalid and overlong bytes */
	jf_error_set(&e, JF_EINVAL, 0, "\"%.2s\" \xff \xc0\xaf", "a\xe8\xae\x9e");
	assert_string_equal(e.msg, "\"a\\xe8\" \\xff \\xc0\\xaf");
	/* a message cut by the buffer: never half an escape or a character */
	char big[JF_ERRMSG_MAX * 2];
	memset(big, '\x01', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	jf_error_set(&e, JF_EINVAL, 0, "%s", big);
	size_t n = strlen(e.msg);
	assert_true(n < JF_ERRMSG_MAX && n % 4 == 0);
	for (size_t i = 0; i < n; i += 4)
		assert_memory_equal(e.msg + i, "\\x01", 4);
	memset(big, 0, sizeof(big));
	for (size_t i = 0; i + 2 < sizeof(big); i += 2)
		memcpy(big + i, "\xc3\xa9", 2);
	jf_error_set(&e, JF_EINVAL, 0, "%s", big);
	n = strlen(e.msg);
	assert_true(n == JF_ERRMSG_MAX - 2); /* 255 whole characters, not 255.5 */
	assert_memory_equal(e.msg + n - 2, "\xc3\xa9", 2);
	/* sanitizing twice changes nothing */
	struct jf_error f;
	jf_error_set(&e, JF_EINVAL, 0, "%s", "a\x01\xc2\x85");
	jf_error_set(&f, JF_EINVAL, 0, "%s", e.msg);
	assert_string_equal(e.msg, f.msg);
}

static void quoting(void **state)
{
	(void)state;
	char q[64];
	jf_err_quote("a\"b\\c\0d\xff", 8, 40, q, sizeof(q));
	assert_string_equal(q, "a\\\"b\\\\c\\x00d\\xff");
	jf_err_quote("abcdef", 6, 3, q, sizeof(q));
	assert_string_equal(q, "abc...");
	jf_err_quote(NULL, 5, 40, q, sizeof(q));
	assert_string_equal(q, "");
	char small[6];
	jf_err_quote("\x01\x02\x03", 3, 40, small, sizeof(small));
	assert_string_equal(small, "\\x01"); /* whole escapes only */
	jf_err_quote("abc", 3, 40, q, 0);    /* n = 0 writes nothing */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(verbs),      cmocka_unit_test(refused),
		cmocka_unit_test(size_limit), cmocka_unit_test(message_escaping),
		cmocka_unit_test(quoting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
