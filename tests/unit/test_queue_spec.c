/*
 * test_queue_spec.c - the queue spec (reference 2.2): defaults, every key,
 * and every error with its key and line; a refused spec leaves *out alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/spec.h"

static struct jf_queue_spec parse_ok(const char *text)
{
	struct jf_queue_spec q;
	memset(&q, 0xa5, sizeof(q));
	struct jf_error e = { 0 };
	enum jf_err rc = jf_queue_spec_parse(text, strlen(text), &q, &e);
	if (rc != JF_OK)
		fail_msg("unexpected %s: %s\n--- spec:\n%s", jf_err_name(rc), e.msg, text);
	return q;
}

static void expect_err_len(const char *text, size_t len, enum jf_err code, int line, const char *s1,
			   const char *s2)
{
	struct jf_queue_spec q = { .capacity = 77, .partition = NULL };
	struct jf_error e = { 0 };
	enum jf_err rc = jf_queue_spec_parse(text, len, &q, &e);
	if (rc != code)
		fail_msg("want %s, got %s: %s\n--- spec:\n%.200s", jf_err_name(code),
			 jf_err_name(rc), e.msg, text);
	assert_int_equal(q.capacity, 77); /* unchanged */
	assert_null(q.partition);
	assert_int_equal(e.line, line);
	char want[32];
	snprintf(want, sizeof(want), "line %d: ", line);
	if (line > 0 && strncmp(e.msg, want, strlen(want)) != 0)
		fail_msg("want '%s' at the start of: %s", want, e.msg);
	if (s1 && !strstr(e.msg, s1))
		fail_msg("want '%s' in: %s", s1, e.msg);
	if (s2 && !strstr(e.msg, s2))
		fail_msg("want '%s' in: %s", s2, e.msg);
}

#define ERR(text, line, s1, s2) expect_err_len(text, strlen(text), JF_EINVAL, line, s1, s2)

static void defaults(void **state)
{
	(void)state;
	static const char *const empties[] = { "", "# nothing\n", "~\n", "---\n", "\n\n" };
	for (size_t i = 0; i < sizeof(empties) / sizeof(empties[0]); i++) {
		struct jf_queue_spec q = parse_ok(empties[i]);
		assert_int_equal(q.capacity, 0);
		assert_int_equal(q.group_timeout, 0);
		assert_null(q.partition);
		assert_false(q.private_);
		jf_queue_spec_release(&q);
	}
	struct jf_queue_spec q = { .capacity = 5 };
	struct jf_error e = { 0 };
	assert_int_equal(jf_queue_spec_parse(NULL, 0, &q, &e), JF_OK);
	assert_int_equal(q.capacity, 0);
	q = parse_ok("{}\n");
	assert_int_equal(q.capacity, 0);
	jf_queue_spec_release(&q);
	jf_queue_spec_release(NULL);
}

static void every_key(void **state)
{
	(void)state;
	struct jf_queue_spec q = parse_ok("capacity: 20          # nodes\n"
					  "group_timeout: 60m\n"
					  "partition: gpu-a100.spot\n"
					  "private: true\n");
	assert_int_equal(q.capacity, 20);
	assert_int_equal(q.group_timeout, 3600);
	assert_string_equal(q.partition, "gpu-a100.spot");
	assert_true(q.private_);
	jf_queue_spec_release(&q);
	assert_null(q.partition);
	jf_queue_spec_release(&q); /* twice is harmless */

	q = parse_ok("capacity: \"0\"\ngroup_timeout: 0\nprivate: false\npartition: 42\n");
	assert_int_equal(q.capacity, 0);
	assert_int_equal(q.group_timeout, 0);
	assert_false(q.private_);
	assert_string_equal(q.partition, "42");
	jf_queue_spec_release(&q);
	q = parse_ok("group_timeout: 90\n");
	assert_int_equal(q.group_timeout, 90);
	jf_queue_spec_release(&q);
	q = parse_ok("keep_logs: 7d\n");
	assert_true(q.keep_logs_set);
	assert_int_equal(q.keep_logs, 7 * 86400);
	jf_queue_spec_release(&q);
	q = parse_ok("keep_logs: forever\n");
	assert_true(q.keep_logs_set);
	assert_int_equal(q.keep_logs, 0);
	jf_queue_spec_release(&q);
	q = parse_ok("capacity: 2\n");
	assert_false(q.keep_logs_set); /* absent: the daemon's --keep-logs */
	jf_queue_spec_release(&q);
	q = parse_ok("group_timeout: 1h30m\ncapacity: 1000000\n");
	assert_int_equal(q.group_timeout, 5400);
	assert_int_equal(q.capacity, 1000000);
	jf_queue_spec_release(&q);
}

/* budget (reference 10): an amount of the cluster's currency parsed
 * exactly into micro-units, its period and its action. */
static void budget(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int64_t micro;
	} good[] = {
		{ "budget: \"100.00\"\n", 100000000 },
		{ "budget: 100\n", 100000000 },
		{ "budget: 100.5\n", 100500000 },
		{ "budget: '0.000001'\n", 1 },
		{ "budget: \"0\"\n", 0 },
		{ "budget: 0.10\n", 100000 },
		{ "budget: \"999999999999.999999\"\n", INT64_C(999999999999999999) },
		{ "budget: \"0012.300\"\n", 12300000 },
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct jf_queue_spec q = parse_ok(good[i].text);
		assert_true(q.budget_set);
		assert_int_equal(q.budget, good[i].micro);
		assert_int_equal(q.budget_period, 0); /* the queue's whole life */
		assert_false(q.budget_stop);          /* hold */
		jf_queue_spec_release(&q);
	}
	struct jf_queue_spec q = parse_ok("capacity: 2\n");
	assert_false(q.budget_set);
	jf_queue_spec_release(&q);
	q = parse_ok("budget: \"5.00\"\nbudget_period: 1d\nbudget_action: stop\n");
	assert_int_equal(q.budget, 5000000);
	assert_int_equal(q.budget_period, 86400);
	assert_true(q.budget_stop);
	jf_queue_spec_release(&q);
	q = parse_ok("budget_action: hold\nbudget_period: 30d\nbudget: 1\n"); /* any order */
	assert_int_equal(q.budget_period, 30 * 86400);
	assert_false(q.budget_stop);
	jf_queue_spec_release(&q);
	q = parse_ok("budget: 1\nbudget_period: 7d\n");
	assert_int_equal(q.budget_period, 7 * 86400);
	jf_queue_spec_release(&q);
}

static void budget_errors(void **state)
{
	(void)state;
	/* negative */
	ERR("budget: \"-5\"\n", 1, "key 'budget'", "-5 is negative");
	ERR("budget: -0.01\n", 1, "key 'budget'", "negative");
	/* too many decimals */
	ERR("budget: \"1.1234567\"\n", 1, "key 'budget'", "has 7 decimals: at most 6");
	ERR("capacity: 1\nbudget: 0.0000001\n", 2, "key 'budget'", "one micro-unit");
	/* not a number */
	ERR("budget: abc\n", 1, "key 'budget'", "\"abc\" is not an amount");
	ERR("budget: \"100 CNY\"\n", 1, "key 'budget'", "not an amount");
	ERR("budget: 1e3\n", 1, "key 'budget'", "not an amount");
	ERR("budget: \"\"\n", 1, "key 'budget'", "not an amount");
	ERR("budget: \"1.\"\n", 1, "key 'budget'", "not an amount");
	ERR("budget: .5\n", 1, "key 'budget'", "not an amount");
	ERR("budget: \"+5\"\n", 1, "key 'budget'", "not an amount");
	ERR("budget: \"1,000\"\n", 1, "key 'budget'", "not an amount");
	ERR("budget: true\n", 1, "key 'budget'", "not an amount");
	ERR("budget: [1]\n", 1, "key 'budget'", "a list");
	/* huge */
	ERR("budget: \"1000000000000\"\n", 1, "key 'budget'", "out of range");
	ERR("budget: 99999999999999999999999\n", 1, "key 'budget'", "out of range");
	ERR("budget: \"9223372036854.775807\"\n", 1, "key 'budget'", "out of range");
	/* the period and the action */
	ERR("budget: 1\nbudget_period: 1x\n", 2, "key 'budget_period'", "bad duration \"1x\"");
	ERR("budget: 1\nbudget_period: 30s\n", 2, "key 'budget_period'", "out of range");
	ERR("budget: 1\nbudget_period: 367d\n", 2, "key 'budget_period'", "out of range");
	ERR("budget: 1\nbudget_action: kill\n", 2, "key 'budget_action'", "use hold");
	ERR("budget_period: 1d\n", 1, "key 'budget_period'", "needs a budget");
	ERR("budget_action: stop\n", 1, "key 'budget_action'", "needs a budget");
	ERR("budget: 1\nbudget: 2\n", 2, "duplicate key 'budget'", NULL);
}

static void errors(void **state)
{
	(void)state;
	ERR("capacity: 1\nfoo: 2\n", 2, "unknown key 'foo'", NULL);
	ERR("capacity: -1\n", 1, "key 'capacity'", "out of range");
	ERR("capacity: 1000001\n", 1, "key 'capacity'", "out of range");
	ERR("capacity: 9999999999999999999999\n", 1, "key 'capacity'", "out of range");
	ERR("capacity: 1.5\n", 1, "key 'capacity'", "whole number");
	ERR("capacity: abc\n", 1, "key 'capacity'", "expected an integer");
	ERR("capacity: true\n", 1, "key 'capacity'", "a boolean");
	ERR("capacity: [1]\n", 1, "key 'capacity'", "a list");
	ERR("\ngroup_timeout: 10x\n", 2, "key 'group_timeout'", "bad duration \"10x\"");
	ERR("group_timeout: 1m1h\n", 1, "key 'group_timeout'", "bad duration");
	ERR("group_timeout: \"\"\n", 1, "key 'group_timeout'", "bad duration");
	ERR("group_timeout: -5m\n", 1, "key 'group_timeout'", "bad duration");
	ERR("group_timeout: 367d\n", 1, "key 'group_timeout'", "out of range");
	ERR("keep_logs: 0\n", 1, "key 'keep_logs'", "or forever");
	ERR("keep_logs: soon\n", 1, "key 'keep_logs'", "bad duration \"soon\"");
	ERR("keep_logs: 3661d\n", 1, "key 'keep_logs'", "out of range");
	ERR("partition: \"a b\"\n", 1, "key 'partition'", "bad partition name");
	ERR("partition: \"\"\n", 1, "key 'partition'", "bad partition name");
	ERR("partition: [x]\n", 1, "key 'partition'", "expected a string");
	ERR("private: yes\n", 1, "key 'private'", "true or false");
	ERR("private: \"true\"\n", 1, "key 'private'", "true or false");
	ERR("- capacity: 1\n", 1, "must be a mapping", "a list");
	ERR("capacity\n", 1, "must be a mapping", "a string");
	ERR("capacity: 1\ncapacity: 2\n", 2, "duplicate key 'capacity'", "first at line 1");
	ERR("capacity: 1\n---\ncapacity: 2\n", 2, "second YAML document", NULL);
	ERR("capacity: [1\n", 2, "YAML syntax error", NULL);
	ERR("capacity: 1\nprivate: \xff\n", 2, "UTF-8", NULL);
	static const char nul[] = "capacity: 1\0\n";
	expect_err_len(nul, sizeof(nul) - 1, JF_EINVAL, 1, "NUL", NULL);
	/* a refused partition is not leaked and out stays unchanged */
	ERR("partition: good\ncapacity: -1\n", 2, "key 'capacity'", NULL);
	ERR("partition: good\nprivate: 3\n", 2, "key 'private'", NULL);

	size_t n = 300 * 1024;
	char *big = malloc(n);
	assert_non_null(big);
	memset(big, '#', n);
	expect_err_len(big, n, JF_EFBIG, 0, "more than the limit", NULL);
	free(big);
}

/* The YAML limits hold here too, and values are escaped in messages. */
static void limits_and_messages(void **state)
{
	(void)state;
	char text[4096] = "capacity: ";
	for (int i = 0; i < 40; i++)
		strcat(text, "[");
	for (int i = 0; i < 40; i++)
		strcat(text, "]");
	strcat(text, "\n");
	ERR(text, 1, "key 'capacity[0][0]", "nested deeper than 32");
	/* 1000 bytes, 32 times, 33 times: past 1 MiB of text */
	strcpy(text, "a: &a \"");
	memset(text + strlen(text), 'x', 1000);
	strcpy(text + 7 + 1000, "\"\nb: &b [");
	for (int i = 0; i < 32; i++)
		strcat(text, i ? ", *a" : "*a");
	strcat(text, "]\nc: [");
	for (int i = 0; i < 33; i++)
		strcat(text, i ? ", *b" : "*b");
	strcat(text, "]\n");
	ERR(text, 3, "key 'c[31]'", "more than 1048576 bytes of text once aliases are resolved");
	/* control characters and a cut UTF-8 sequence come out escaped */
	ERR("partition: \"a\\tb\\x1b[1m\\u2028\"\n", 1,
	    "bad partition name \"a\\tb\\x1b[1m\\u2028\"", NULL);
	char cut[256] = "group_timeout: \"x";
	for (int i = 0; i < 40; i++)
		strcat(cut, "\xc3\xa9");
	strcat(cut, "\"\n");
	ERR(cut, 1, "bad duration \"x\xc3\xa9", "\xc3\xa9\\xc3\""); /* 31.5 characters */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),      cmocka_unit_test(every_key),
		cmocka_unit_test(errors),        cmocka_unit_test(budget),
		cmocka_unit_test(budget_errors), cmocka_unit_test(limits_and_messages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
