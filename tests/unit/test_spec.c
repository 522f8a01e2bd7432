/*
 * test_spec.c - the native spec (reference 2.1) and the YAML tree under it.
 *
 * Happy paths cover every key of 2.1; every error path checks the code and
 * that the message names the key and starts with the right "line N: ".
 * YAML-level attacks (alias bomb, deep nesting, huge input, binary garbage,
 * duplicate keys, several documents) go through jf_spec_parse() as a user
 * would send them.  A mutation loop at the end feeds thousands of damaged
 * specs through the parser, for the sanitizers to watch.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/spec.h"
#include "core/yamltree.h"

static struct jf_spec *parse_ok_at(const char *text, enum jf_spec_place place)
{
	struct jf_spec *s = NULL;
	struct jf_error e = { 0 };
	enum jf_err rc = jf_spec_parse(text, strlen(text), place, NULL, &s, &e);
	if (rc != JF_OK)
		fail_msg("unexpected %s: %s\n--- spec:\n%s", jf_err_name(rc), e.msg, text);
	assert_non_null(s);
	return s;
}

static struct jf_spec *parse_ok(const char *text)
{
	return parse_ok_at(text, JF_PLACE_GROUP);
}

/* The parse fails with code; the message starts with "line N: " (none when
 * line is 0) and holds s1 and s2 when given. */
static void expect_err_len(const char *text, size_t len, enum jf_spec_place place, enum jf_err code,
			   int line, const char *s1, const char *s2)
{
	struct jf_spec *s = (struct jf_spec *)1;
	struct jf_error e = { 0 };
	enum jf_err rc = jf_spec_parse(text, len, place, NULL, &s, &e);
	if (rc != code)
		fail_msg("want %s, got %s: %s\n--- spec:\n%.300s", jf_err_name(code),
			 jf_err_name(rc), e.msg, text);
	assert_null(s);
	assert_int_equal(e.code, code);
	char want[32];
	snprintf(want, sizeof(want), "line %d: ", line);
	if (line > 0 && strncmp(e.msg, want, strlen(want)) != 0)
		fail_msg("want '%s' at the start of: %s", want, e.msg);
	if (line == 0 && strncmp(e.msg, "line ", 5) == 0)
		fail_msg("want no line in: %s", e.msg);
	assert_int_equal(e.line, line);
	if (s1 && !strstr(e.msg, s1))
		fail_msg("want '%s' in: %s", s1, e.msg);
	if (s2 && !strstr(e.msg, s2))
		fail_msg("want '%s' in: %s", s2, e.msg);
}

static void expect_err_at(const char *text, enum jf_spec_place place, enum jf_err code, int line,
			  const char *s1, const char *s2)
{
	expect_err_len(text, strlen(text), place, code, line, s1, s2);
}

#define ERR(text, line, s1, s2) expect_err_at(text, JF_PLACE_GROUP, JF_EINVAL, line, s1, s2)

/* ---- happy paths ---- */

static void minimal_defaults(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok("command: [\"/bin/true\"]\n");
	assert_int_equal(s->form, JF_FORM_NATIVE);
	assert_null(s->name);
	assert_int_equal(s->billing, JF_BILL_ONDEMAND);
	assert_null(s->gpu);
	assert_int_equal(s->gpus, 0);
	assert_int_equal(s->completions, 1);
	assert_int_equal(s->parallelism, 1);
	assert_int_equal(s->count, 1);
	assert_false(s->has_count);
	assert_int_equal(s->nodes, 1);
	assert_true(s->node_index);
	assert_int_equal(s->unit_runtime, 0);
	assert_int_equal(s->timeout, 86400);
	assert_int_equal(s->restart_policy, JF_RESTART_NEVER);
	assert_int_equal(s->retries, 3);
	assert_int_equal(s->max_failures, -1);
	assert_int_equal(s->max_failed_indexes, -1);
	assert_int_equal(s->active_deadline, 0);
	assert_int_equal(s->shm_size, 0);
	assert_false(s->cpu_exclusive);
	assert_int_equal(s->ncontainers, 1);
	const struct jf_container *c = &s->containers[0];
	assert_string_equal(c->name, "main");
	assert_null(c->image);
	assert_int_equal(c->ncommand, 1);
	assert_string_equal(c->command[0], "/bin/true");
	assert_null(c->command[1]);
	assert_int_equal(c->nargs, 0);
	assert_null(c->args);
	assert_int_equal(c->nenv, 0);
	assert_int_equal(c->gpus, -1);
	assert_int_equal(c->cpu_milli, 0);
	assert_int_equal(c->mem_bytes, 0);
	assert_int_equal(s->nstorage, 0);
	assert_int_equal(s->npfp, 0);
	assert_int_equal(s->nsuccess, 0);
	assert_int_equal(s->nignored, 0);
	jf_spec_free(s);
	jf_spec_free(NULL);
}

/* reference 2.1's example, shorthand form, every key a local run accepts. */
static const char design_example[] = "name: best-practice-batch-demo   # display name\n"
				     "billing: spot\n"
				     "gpu: \"4090\"\n"
				     "gpus: 1\n"
				     "completions: 100\n"
				     "parallelism: 10\n"
				     "nodes: 1\n"
				     "node_index: true\n"
				     "unit_runtime: 30m\n"
				     "timeout: 1440m\n"
				     "restart_policy: Never\n"
				     "retries: 3\n"
				     "max_failures: 20\n"
				     "cpu_exclusive: false\n"
				     "image: registry.example/team/job:v1\n"
				     "command: [\"/bin/sh\", \"-c\"]\n"
				     "args: [\"sleep $RUN_SECONDS; exit $EXIT_CODE\"]\n"
				     "env:\n"
				     "  RUN_SECONDS: \"60\"\n"
				     "  EXIT_CODE: \"0\"\n"
				     "resources:\n"
				     "  limits: {cpu: \"4\", memory: 8Gi}\n";

static void design_example_parses(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok(design_example);
	assert_string_equal(s->name, "best-practice-batch-demo");
	assert_int_equal(s->billing, JF_BILL_SPOT);
	assert_string_equal(s->gpu, "4090");
	assert_int_equal(s->gpus, 1);
	assert_int_equal(s->completions, 100);
	assert_int_equal(s->parallelism, 10);
	assert_int_equal(s->nodes, 1);
	assert_true(s->node_index);
	assert_int_equal(s->unit_runtime, 1800);
	assert_int_equal(s->timeout, 86400);
	assert_int_equal(s->restart_policy, JF_RESTART_NEVER);
	assert_int_equal(s->retries, 3);
	assert_int_equal(s->max_failures, 20);
	assert_false(s->cpu_exclusive);
	assert_int_equal(s->ncontainers, 1);
	const struct jf_container *c = &s->containers[0];
	assert_string_equal(c->name, "main");
	assert_string_equal(c->image, "registry.example/team/job:v1");
	assert_int_equal(c->ncommand, 2);
	assert_string_equal(c->command[1], "-c");
	assert_int_equal(c->nargs, 1);
	assert_string_equal(c->args[0], "sleep $RUN_SECONDS; exit $EXIT_CODE");
	assert_int_equal(c->nenv, 2);
	assert_string_equal(c->env[0].key, "RUN_SECONDS");
	assert_string_equal(c->env[0].value, "60");
	assert_string_equal(c->env[1].key, "EXIT_CODE");
	assert_string_equal(c->env[1].value, "0");
	assert_int_equal(c->cpu_milli, 4000);
	assert_int_equal(c->mem_bytes, 8LL << 30);
	assert_int_equal(c->gpus, -1);
	jf_spec_free(s);
}

static void containers_form(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok(
		"gpu: 4090\n"
		"gpus: 2\n"
		"restart_policy: OnFailure\n"
		"node_index: false\n"
		"nodes: 8\n"
		"containers:\n"
		"  - name: main\n"
		"    image: harbor.example/jupyter:v3\n"
		"    command: python3 train.py\n"
		"    args: --epochs=3\n"
		"    env: {A: 1, B: true, C: 1.5, D: , E: \"x y\"}\n"
		"    resources:\n"
		"      limits: {cpu: 14000m, memory: 51200Mi, nvidia.com/gpu: 1}\n"
		"      requests: {cpu: 1166m, memory: 2133Mi, nvidia.com/gpu: 1}\n"
		"  - name: side-car2\n"
		"    resources: {limits: {cpu: 9333m, memory: 4200Mi, nvidia.com/gpu: 2}}\n");
	assert_string_equal(s->gpu, "4090");
	assert_int_equal(s->gpus, 2);
	assert_int_equal(s->restart_policy, JF_RESTART_ONFAILURE);
	assert_false(s->node_index);
	assert_int_equal(s->nodes, 8);
	assert_int_equal(s->ncontainers, 2);
	const struct jf_container *c = &s->containers[0];
	assert_string_equal(c->name, "main");
	assert_int_equal(c->ncommand, 1);
	assert_string_equal(c->command[0], "python3 train.py");
	assert_int_equal(c->nargs, 1);
	assert_string_equal(c->args[0], "--epochs=3");
	assert_int_equal(c->nenv, 5);
	assert_string_equal(c->env[0].value, "1");
	assert_string_equal(c->env[1].value, "true");
	assert_string_equal(c->env[2].value, "1.5");
	assert_string_equal(c->env[3].key, "D");
	assert_string_equal(c->env[3].value, "");
	assert_string_equal(c->env[4].value, "x y");
	assert_int_equal(c->cpu_milli, 14000);
	assert_int_equal(c->mem_bytes, 51200LL << 20);
	assert_int_equal(c->gpus, 1);
	assert_int_equal(c->req_cpu_milli, 1166);
	assert_int_equal(c->req_mem_bytes, 2133LL << 20);
	c = &s->containers[1];
	assert_string_equal(c->name, "side-car2");
	assert_int_equal(c->gpus, 2);
	assert_int_equal(c->cpu_milli, 9333);
	assert_int_equal(c->ncommand, 0);
	jf_spec_free(s);
}

static void gpu_defaults(void **state)
{
	(void)state;
	/* an unquoted 4090 is the string "4090"; gpu implies gpus 1 */
	struct jf_spec *s = parse_ok("gpu: 4090\ncommand: [x]\n");
	assert_string_equal(s->gpu, "4090");
	assert_int_equal(s->gpus, 1);
	jf_spec_free(s);
	/* gpus from the containers' limits when not written */
	s = parse_ok("gpu: H800\ncommand: [x]\nresources: {limits: {nvidia.com/gpu: 8}}\n");
	assert_int_equal(s->gpus, 8);
	jf_spec_free(s);
	/* explicit 0 with a model: a CPU-only task on that machine type */
	s = parse_ok("gpu: L40S\ngpus: 0\ncommand: [x]\n");
	assert_int_equal(s->gpus, 0);
	jf_spec_free(s);
	s = parse_ok("gpus: 0\ncommand: [x]\n");
	assert_int_equal(s->gpus, 0);
	jf_spec_free(s);

	ERR("command: [x]\ngpus: 1\n", 2, "key 'gpus'", "no GPU model");
	ERR("command: [x]\ngpu: \"4090\"\ngpus: 3\n", 3, "key 'gpus'", "0, 1, 2, 4 or 8");
	ERR("command: [x]\ngpu: \"4090\"\ngpus: 16\n", 3, "key 'gpus'", "out of range");
	ERR("command: [x]\ngpu: \"4090\"\ngpus: -1\n", 3, "key 'gpus'", "out of range");
	ERR("command: [x]\ngpu: \"40 90\"\n", 2, "key 'gpu'", "bad GPU model");
	ERR("command: [x]\ngpu: [a]\n", 2, "key 'gpu'", "expected a string");
	ERR("command: [x]\nresources:\n  limits:\n    nvidia.com/gpu: 1\n", 4,
	    "key 'resources.limits.nvidia.com/gpu'", "no GPU model");
	ERR("gpu: \"4090\"\ngpus: 1\ncommand: [x]\nresources:\n  limits:\n    nvidia.com/gpu: 2\n",
	    6, "key 'resources.limits.nvidia.com/gpu'", "more than the node's");
	ERR("gpu: \"4090\"\ncontainers:\n- name: a\n  command: [x]\n"
	    "  resources: {limits: {nvidia.com/gpu: 3}}\n",
	    5, "key 'containers[0].resources.limits.nvidia.com/gpu'", "0, 1, 2, 4 or 8");
}

static void completions_parallelism(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok("completions: 5\ncommand: [x]\n");
	assert_int_equal(s->parallelism, 5); /* default: completions */
	jf_spec_free(s);
	s = parse_ok("completions: 5\nparallelism: 50\ncommand: [x]\n");
	assert_int_equal(s->parallelism, 5); /* clamped */
	jf_spec_free(s);
	s = parse_ok("completions: \"1000000\"\nparallelism: 3\ncommand: [x]\n");
	assert_int_equal(s->completions, 1000000); /* quoted numbers are fine */
	assert_int_equal(s->parallelism, 3);
	jf_spec_free(s);

	ERR("command: [x]\ncompletions: 0\n", 2, "key 'completions'", "out of range");
	ERR("command: [x]\ncompletions: 1000001\n", 2, "key 'completions'", "1 to 1000000");
	ERR("command: [x]\ncompletions: 9999999999999999999999\n", 2, "key 'completions'",
	    "9999999999999999999999 is out of range");
	ERR("command: [x]\ncompletions: -1\n", 2, "key 'completions'", "out of range");
	ERR("command: [x]\ncompletions: 1.5\n", 2, "key 'completions'", "whole number");
	ERR("command: [x]\ncompletions: 1e3\n", 2, "key 'completions'", "whole number");
	ERR("command: [x]\ncompletions: abc\n", 2, "key 'completions'", "expected an integer");
	ERR("command: [x]\ncompletions: \"abc\"\n", 2, "key 'completions'", "expected an integer");
	ERR("command: [x]\ncompletions: true\n", 2, "key 'completions'", "a boolean");
	ERR("command: [x]\ncompletions: [1]\n", 2, "key 'completions'", "a list");
	ERR("command: [x]\ncompletions: 0x10\n", 2, "key 'completions'", "expected an integer");
	ERR("command: [x]\nparallelism: 0\n", 2, "key 'parallelism'", "out of range");
	ERR("command: [x]\nparallelism: 9999999999\n", 2, "key 'parallelism'", "out of range");
}

static void batch_place(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok_at("count: 3\ncommand: [x]\n", JF_PLACE_BATCH);
	assert_true(s->has_count);
	assert_int_equal(s->count, 3);
	assert_int_equal(s->completions, 1);
	assert_int_equal(s->parallelism, 1);
	jf_spec_free(s);
	s = parse_ok_at("command: [x]\n", JF_PLACE_BATCH);
	assert_false(s->has_count);
	assert_int_equal(s->count, 1);
	jf_spec_free(s);

	ERR("command: [x]\ncount: 3\n", 2, "key 'count'", "/tasks");
	expect_err_at("command: [x]\ncompletions: 3\n", JF_PLACE_BATCH, JF_EINVAL, 2,
		      "key 'completions'", "count");
	expect_err_at("command: [x]\nparallelism: 3\n", JF_PLACE_BATCH, JF_EINVAL, 2,
		      "key 'parallelism'", "count");
	expect_err_at("command: [x]\ncount: 0\n", JF_PLACE_BATCH, JF_EINVAL, 2, "key 'count'",
		      "out of range");
	expect_err_at("command: [x]\ncount: 10001\n", JF_PLACE_BATCH, JF_EINVAL, 2, "key 'count'",
		      "1 to 10000");
}

static void scalar_keys(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok("command: [x]\ntimeout: 90\nunit_runtime: 1h30m\n"
				     "retries: 0\nmax_failures: 0\nbilling: on-demand\n");
	assert_int_equal(s->timeout, 90);
	assert_int_equal(s->unit_runtime, 5400);
	assert_int_equal(s->retries, 0);
	assert_int_equal(s->max_failures, 0);
	assert_int_equal(s->billing, JF_BILL_ONDEMAND);
	jf_spec_free(s);

	ERR("command: [x]\ntimeout: 10x\n", 2, "key 'timeout'", "bad duration \"10x\"");
	ERR("command: [x]\ntimeout: \"\"\n", 2, "key 'timeout'", "bad duration");
	ERR("command: [x]\ntimeout: 1m1h\n", 2, "key 'timeout'", "bad duration");
	ERR("command: [x]\ntimeout: 0\n", 2, "key 'timeout'", "out of range");
	ERR("command: [x]\ntimeout: 367d\n", 2, "key 'timeout'", "out of range");
	ERR("command: [x]\ntimeout: 9999999999999999999999\n", 2, "key 'timeout'", "bad duration");
	ERR("command: [x]\ntimeout: {a: 1}\n", 2, "key 'timeout'", "expected a string");
	ERR("command: [x]\nunit_runtime: -5m\n", 2, "key 'unit_runtime'", "bad duration");
	ERR("command: [x]\nretries: -1\n", 2, "key 'retries'", "must be 0 to");
	ERR("command: [x]\nmax_failures: -1\n", 2, "key 'max_failures'", "must be 0 to");
	ERR("command: [x]\nnodes: 0\n", 2, "key 'nodes'", "out of range");
	ERR("command: [x]\nnodes: 1025\n", 2, "key 'nodes'", "1 to 1024");
	ERR("command: [x]\nbilling: cheap\n", 2, "key 'billing'", "spot or on-demand");
	ERR("command: [x]\nrestart_policy: Always\n", 2, "key 'restart_policy'",
	    "Never or OnFailure");
	ERR("command: [x]\nrestart_policy: never\n", 2, "key 'restart_policy'",
	    "Never or OnFailure");
	ERR("command: [x]\nnode_index: yes\n", 2, "key 'node_index'", "true or false");
	ERR("command: [x]\nnode_index: \"true\"\n", 2, "key 'node_index'", "the string");
	ERR("command: [x]\nnode_index: 1\n", 2, "key 'node_index'", "true or false");
	ERR("command: [x]\ncpu_exclusive: [true]\n", 2, "key 'cpu_exclusive'", "true or false");
	ERR("command: [x]\nshm_size: 8GG\n", 2, "key 'shm_size'", "bad memory quantity \"8GG\"");
}

static void names(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok("name: 训练任务 demo #1\ncommand: [x]\n");
	assert_string_equal(s->name, "训练任务 demo"); /* '#' after a space is a comment */
	jf_spec_free(s);
	char text[512];
	/* 63 characters (multi-byte) is fine, 64 is not */
	char name[256] = "";
	for (int i = 0; i < 63; i++)
		strcat(name, "é");
	snprintf(text, sizeof(text), "command: [x]\nname: %s\n", name);
	s = parse_ok(text);
	jf_spec_free(s);
	strcat(name, "e");
	snprintf(text, sizeof(text), "command: [x]\nname: %s\n", name);
	ERR(text, 2, "key 'name'", "1 to 63");
	ERR("command: [x]\nname: \"\"\n", 2, "key 'name'", "1 to 63");
	ERR("command: [x]\nname: a/b\n", 2, "key 'name'", "without '/'");
	ERR("command: [x]\nname: \"a\\tb\"\n", 2, "key 'name'", "printable");
	ERR("command: [x]\nname: \"a\\0b\"\n", 2, "key 'name'", "NUL");
	ERR("command: [x]\nname: [a]\n", 2, "key 'name'", "expected a string, got a list");
}

static void command_args(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok("args: [\"--n\", 5, true]\n");
	assert_int_equal(s->containers[0].nargs, 3);
	assert_string_equal(s->containers[0].args[1], "5");
	assert_string_equal(s->containers[0].args[2], "true");
	assert_null(s->containers[0].args[3]);
	jf_spec_free(s);
	/* anchors and aliases work */
	s = parse_ok("command: &c [\"/bin/echo\", hi]\nargs: *c\n");
	assert_int_equal(s->containers[0].nargs, 2);
	assert_string_equal(s->containers[0].args[1], "hi");
	jf_spec_free(s);

	ERR("command: {a: b}\n", 1, "key 'command'", "expected a list of strings");
	ERR("command: [a, [b]]\n", 1, "key 'command[1]'", "expected a string");
	ERR("command: [a, ~]\n", 1, "key 'command[1]'", "got null");
	ERR("command: [a, {b: c}]\n", 1, "key 'command[1]'", "a mapping");
	/* argv limit */
	size_t n = 4200 * 3 + 64;
	char *big = malloc(n);
	assert_non_null(big);
	strcpy(big, "command: [a");
	for (int i = 1; i < 4097; i++)
		strcat(big, ",a");
	strcat(big, "]\n");
	ERR(big, 1, "key 'command'", "more than 4096");
	strcpy(big, "command: [");
	for (int i = 0; i < 3000; i++)
		strcat(big, i ? ",a" : "a");
	strcat(big, "]\nargs: [");
	for (int i = 0; i < 3000; i++)
		strcat(big, i ? ",a" : "a");
	strcat(big, "]\n");
	ERR(big, 2, "key 'args'", "together");
	free(big);
}

static void env_forms(void **state)
{
	(void)state;
	/* a list of KEY=value, later duplicates win in place */
	struct jf_spec *s = parse_ok("command: [x]\nenv: [\"A=1\", \"B=x=y\", \"C=\", \"A=2\"]\n");
	const struct jf_container *c = &s->containers[0];
	assert_int_equal(c->nenv, 3);
	assert_string_equal(c->env[0].key, "A");
	assert_string_equal(c->env[0].value, "2");
	assert_string_equal(c->env[1].value, "x=y");
	assert_string_equal(c->env[2].value, "");
	jf_spec_free(s);
	/* a JSON object in a string */
	s = parse_ok("command: [x]\nenv: '{\"A\": \"1\", \"B\": 2, \"C\": 1.5, \"D\": false}'\n");
	c = &s->containers[0];
	assert_int_equal(c->nenv, 4);
	assert_string_equal(c->env[0].value, "1");
	assert_string_equal(c->env[1].value, "2");
	assert_string_equal(c->env[2].value, "1.5");
	assert_string_equal(c->env[3].value, "false");
	jf_spec_free(s);
	/* KEY=value lines, with comments and blank lines */
	s = parse_ok("command: [x]\nenv: |\n  # settings\n  RUN_SECONDS=60\n\n  EXIT_CODE=0\n");
	c = &s->containers[0];
	assert_int_equal(c->nenv, 2);
	assert_string_equal(c->env[0].key, "RUN_SECONDS");
	assert_string_equal(c->env[1].value, "0");
	jf_spec_free(s);
	/* CRLF lines and indentation in a quoted string */
	s = parse_ok("command: [x]\nenv: \"A=1\\r\\n  B=2\\r\\n\"\n");
	assert_int_equal(s->containers[0].nenv, 2);
	assert_string_equal(s->containers[0].env[0].value, "1");
	assert_string_equal(s->containers[0].env[1].key, "B");
	jf_spec_free(s);
	s = parse_ok("command: [x]\nenv: \"\\n  {\\\"A\\\": 1}\"\n");
	assert_string_equal(s->containers[0].env[0].value, "1");
	jf_spec_free(s);
	/* a JSON object in a block scalar */
	s = parse_ok("command: [x]\nenv: |\n  {\"A\": \"a b\"}\n");
	assert_string_equal(s->containers[0].env[0].value, "a b");
	jf_spec_free(s);

	ERR("command: [x]\nenv:\n  1A: x\n", 3, "key 'env.1A'", "bad environment variable name");
	ERR("command: [x]\nenv:\n  A-B: x\n", 3, "key 'env.A-B'", "bad environment variable name");
	ERR("command: [x]\nenv:\n  A: [1]\n", 3, "key 'env.A'", "expected a string");
	ERR("command: [x]\nenv:\n  - A=1\n  - B\n", 4, "key 'env[1]'", "expected KEY=value");
	ERR("command: [x]\nenv:\n  - =1\n", 3, "key 'env[0]'", "bad environment variable name");
	ERR("command: [x]\nenv: |\n  A=1\n  oops\n", 4, "key 'env'", "expected KEY=value");
	ERR("command: [x]\nenv: '{\"A\": 1, \"A\": 2}'\n", 2, "key 'env'", "bad JSON");
	ERR("command: [x]\nenv: '{\"A\": '\n", 2, "key 'env'", "bad JSON");
	ERR("command: [x]\nenv: '{\"A\": {\"b\": 1}}'\n", 2, "key 'env'",
	    "string, number or boolean");
	ERR("command: [x]\nenv: '{\"A\": null}'\n", 2, "key 'env'", "string, number or boolean");
	ERR("command: [x]\nenv: '{\"A\": \"a\\u0000b\"}'\n", 2, "key 'env'", "NUL");
	ERR("command: [x]\nenv: '{\"1\": \"x\"}'\n", 2, "key 'env'",
	    "bad environment variable name");
	ERR("command: [x]\nenv: 5\n", 2, "key 'env'", "expected KEY=value");

	/* at most JF_SPEC_MAX_ENV entries */
	size_t n = 1100 * 16 + 64;
	char *big = malloc(n);
	assert_non_null(big);
	strcpy(big, "command: [x]\nenv:\n");
	for (int i = 0; i < 1025; i++)
		snprintf(big + strlen(big), n - strlen(big), "  V%d: x\n", i);
	ERR(big, 1027, "key 'env.V1024'", "more than 1024");
	strcpy(big, "command: [x]\nenv:\n");
	for (int i = 0; i < 1025; i++)
		snprintf(big + strlen(big), n - strlen(big), "  - V%d=x\n", i);
	ERR(big, 3, "key 'env'", "more than 1024");
	free(big);
}

/* reference 8.1: references checked when the spec is written */
static void image_keys(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok("image: 127.0.0.1:5000/jobfs/busybox:1.0\n"
				     "image_pull_policy: Never\n"
				     "registry_auth: /home/u/auth.json\n"
				     "command: [sh]\n");
	assert_string_equal(s->containers[0].image, "127.0.0.1:5000/jobfs/busybox:1.0");
	assert_int_equal(s->containers[0].pull_policy, JF_PULL_NEVER);
	assert_string_equal(s->registry_auth, "/home/u/auth.json");
	jf_spec_free(s);
	s = parse_ok("containers:\n- name: a\n  image: busybox\n  image_pull_policy: Always\n"
		     "  command: [sh]\n- name: b\n  image: oci:/srv/bb:v1\n  command: [sh]\n");
	assert_int_equal(s->containers[0].pull_policy, JF_PULL_ALWAYS);
	assert_int_equal(s->containers[1].pull_policy, JF_PULL_DEFAULT);
	jf_spec_free(s);
	ERR("image: Busybox\ncommand: [sh]\n", 1, "key 'image'", "lower-case");
	ERR("command: [sh]\nimage: \"h.io/a b\"\n", 2, "key 'image'", "space");
	ERR("containers:\n- name: a\n  image: h.io/a@sha256:12\n  command: [x]\n", 3,
	    "key 'containers[0].image'", "digest must be");
	ERR("image: busybox\nimage_pull_policy: sometimes\ncommand: [sh]\n", 2,
	    "key 'image_pull_policy'", "Always, IfNotPresent or Never");
	ERR("image: busybox\nregistry_auth: auth.json\ncommand: [sh]\n", 2, "key 'registry_auth'",
	    "absolute path");
	ERR("image: oci:relative\ncommand: [sh]\n", 1, "key 'image'", "absolute path");
}

/* reference 8.2: ports forwarded from host ports */
static void ports_keys(void **state)
{
	(void)state;
	struct jf_spec *s =
		parse_ok("command: [x]\nports: [8080, {container_port: 9000, name: api}]\n");
	assert_int_equal(s->nports, 2);
	assert_int_equal(s->ports[0].port, 8080);
	assert_null(s->ports[0].name);
	assert_int_equal(s->ports[1].port, 9000);
	assert_string_equal(s->ports[1].name, "api");
	jf_spec_free(s);
	ERR("command: [x]\nports: 8080\n", 2, "key 'ports'", "expected a list");
	ERR("command: [x]\nports: [0]\n", 2, "key 'ports[0]'", NULL);
	ERR("command: [x]\nports: [65536]\n", 2, "key 'ports[0]'", NULL);
	ERR("command: [x]\nports: [80, 80]\n", 2, "key 'ports[1]'", "listed twice");
	ERR("command: [x]\nports: [{name: api}]\n", 2, "key 'ports[0].container_port'",
	    "needs container_port");
	ERR("command: [x]\nports: [{container_port: 1, proto: udp}]\n", 2, "proto", NULL);
}

static void containers_errors(void **state)
{
	(void)state;
	ERR("image: x\ncontainers:\n- name: a\n  command: [x]\n", 1, "key 'image'", "shorthand");
	ERR("containers:\n- name: a\n  command: [x]\nenv: {A: b}\n", 4, "key 'env'", "line 1");
	ERR("containers: []\n", 1, "key 'containers'", "must be 1 to 16");
	ERR("containers: x\n", 1, "key 'containers'", "expected a list");
	ERR("containers:\n- x\n", 2, "key 'containers[0]'", "expected a mapping");
	ERR("containers:\n- command: [x]\n", 2, "key 'containers[0].name'", "needs a name");
	ERR("containers:\n- name: Main\n  command: [x]\n", 2, "key 'containers[0].name'",
	    "lowercase");
	ERR("containers:\n- name: a-\n  command: [x]\n", 2, "key 'containers[0].name'",
	    "lowercase");
	ERR("containers:\n- name: a\n  command: [x]\n  ports: [80]\n", 4,
	    "unknown key 'containers[0].ports'", NULL);
	ERR("containers:\n- name: a\n  command: [x]\n- name: a\n", 4, "key 'containers[1].name'",
	    "used twice");
	char big[2048] = "containers:\n";
	for (int i = 0; i < 17; i++)
		snprintf(big + strlen(big), sizeof(big) - strlen(big), "- name: c%d\n", i);
	ERR(big, 2, "key 'containers'", "must be 1 to 16");
}

static void resources_errors(void **state)
{
	(void)state;
	ERR("command: [x]\nresources:\n  limits:\n    cpu: abc\n", 4,
	    "key 'resources.limits.cpu': bad CPU quantity \"abc\"", NULL);
	ERR("command: [x]\nresources:\n  limits:\n    cpu: 0\n", 4, "key 'resources.limits.cpu'",
	    "more than 0");
	ERR("command: [x]\nresources:\n  limits:\n    cpu: -1\n", 4, "key 'resources.limits.cpu'",
	    "bad CPU quantity");
	ERR("command: [x]\nresources:\n  limits:\n    memory: 1.5\n", 4,
	    "key 'resources.limits.memory'", "bad memory quantity \"1.5\"");
	ERR("command: [x]\nresources:\n  requests:\n    memory: 8GG\n", 4,
	    "key 'resources.requests.memory'", "bad memory quantity");
	ERR("command: [x]\nresources:\n  limits:\n    ephemeral-storage: 1Gi\n", 4,
	    "unknown key 'resources.limits.ephemeral-storage'", NULL);
	ERR("command: [x]\nresources:\n  limit:\n    cpu: 1\n", 3, "unknown key 'resources.limit'",
	    NULL);
	ERR("command: [x]\nresources: [cpu]\n", 2, "key 'resources'", "expected a mapping");
	ERR("command: [x]\nresources: {limits: 4}\n", 2, "key 'resources.limits'",
	    "expected a mapping");
	ERR("gpu: a\ncommand: [x]\nresources:\n  requests: {nvidia.com/gpu: 1}\n", 4,
	    "key 'resources.requests.nvidia.com/gpu'", "in limits");
	ERR("gpu: a\ncommand: [x]\nresources:\n  limits: {nvidia.com/gpu: 2}\n"
	    "  requests: {nvidia.com/gpu: 1}\n",
	    5, "key 'resources.requests.nvidia.com/gpu'", "must equal");
	ERR("gpu: a\ncommand: [x]\nresources:\n  limits: {nvidia.com/gpu: 0.5}\n", 4,
	    "key 'resources.limits.nvidia.com/gpu'", "whole number");
	/* empty limits are no limits */
	struct jf_spec *s = parse_ok("command: [x]\nresources:\n  limits:\n  requests: {cpu: 1}\n");
	assert_int_equal(s->containers[0].cpu_milli, 0);
	assert_int_equal(s->containers[0].req_cpu_milli, 1000);
	jf_spec_free(s);
}

static void not_supported(void **state)
{
	(void)state;
	/* storage is parsed; it needs containers, which the submission checks */
	{
		struct jf_error e4;
		struct jf_spec *st =
			parse_ok("image: busybox\n"
				 "storage:\n"
				 "  - {type: emptydir, path: /scratch, size: 10Gi}\n"
				 "  - {type: emptydir, path: /fast, medium: Memory, name: f}\n"
				 "  - {type: volume, name: shared-ckpt, path: /ckpt}\n"
				 "  - {type: volume, name: code, path: /code, read_only: true}\n"
				 "  - {type: object, name: models, path: /models}\n");
		assert_int_equal(st->nstorage, 5);
		assert_int_equal(st->storage[0].type, JF_STORE_EMPTYDIR);
		assert_int_equal(st->storage[0].size, 10LL << 30);
		assert_false(st->storage[0].memory);
		assert_null(st->storage[0].name);
		assert_true(st->storage[1].memory);
		assert_string_equal(st->storage[1].name, "f");
		assert_int_equal(st->storage[2].type, JF_STORE_VOLUME);
		assert_string_equal(st->storage[2].name, "shared-ckpt");
		assert_false(st->storage[2].read_only);
		assert_true(st->storage[3].read_only);
		assert_int_equal(st->storage[4].type, JF_STORE_OBJECT);
		assert_string_equal(st->storage[4].name, "models");
		assert_true(st->storage[4].read_only);
		assert_string_equal(st->storage[4].path, "/models");
		assert_int_equal(jf_spec_check_runtime(st, true, &e4), JF_OK);
		assert_int_equal(jf_spec_check_runtime(st, false, &e4), JF_ENOTSUP);
		assert_int_equal(e4.line, 2);
		assert_non_null(strstr(e4.msg, "runtime host"));
		jf_spec_free(st);
		/* a container without an image would run on the host: no mounts */
		st = parse_ok("containers:\n- {name: a, image: x}\n- {name: b, command: [y]}\n"
			      "storage:\n- {type: emptydir, path: /s}\n");
		assert_int_equal(jf_spec_check_runtime(st, true, &e4), JF_ENOTSUP);
		assert_int_equal(e4.line, 4);
		assert_non_null(strstr(e4.msg, "container 'b' has none"));
		jf_spec_free(st);
	}
	/* shm_size is honoured (reference 8.2) */
	{
		struct jf_spec *ok = parse_ok("command: [x]\nshm_size: 8Gi\n");
		assert_int_equal(ok->shm_size, 8LL << 30);
		jf_spec_free(ok);
	}
	/* cpu_exclusive is honoured now: cores are pinned per GPU */
	{
		struct jf_spec *ok = NULL;
		struct jf_error e2 = { 0 };
		const char *t = "command: [x]\ngpu: \"4090\"\ncpu_exclusive: true\n";
		assert_int_equal(jf_spec_parse(t, strlen(t), JF_PLACE_GROUP, NULL, &ok, &e2),
				 JF_OK);
		assert_true(ok->cpu_exclusive);
		jf_spec_free(ok);
	}
	/* an EINVAL problem is reported before ENOTSUP ones */
	ERR("command: [x]\nshm_size: 8Gi\ngpus: 3\n", 3, "key 'gpus'", NULL);
	/* no command anywhere: the runtime decides, at submission */
	struct jf_error e3;
	struct jf_spec *s = parse_ok("image: python\n");
	assert_true(s->no_command);
	assert_int_equal(jf_spec_check_runtime(s, false, &e3), JF_ENOTSUP);
	assert_int_equal(e3.line, 1);
	assert_non_null(strstr(e3.msg, "does not pull images"));
	assert_non_null(strstr(e3.msg, "'command' or 'args'"));
	assert_int_equal(jf_spec_check_runtime(s, true, &e3), JF_OK); /* the image's */
	jf_spec_free(s);
	s = parse_ok("containers:\n- name: a\n  image: x\n- name: b\n");
	assert_int_equal(jf_spec_check_runtime(s, false, &e3), JF_ENOTSUP);
	assert_int_equal(e3.line, 2);
	assert_int_equal(jf_spec_check_runtime(s, true, &e3), JF_EINVAL);
	assert_non_null(strstr(e3.msg, "container 'b' has neither an image nor a command"));
	jf_spec_free(s);
	/* with storage too, nothing to run is the problem named (found by fuzz_spec) */
	s = parse_ok("containers:\n- name: a\n  image: x\n- name: b\n"
		     "storage:\n- {type: emptydir, path: /s}\n");
	assert_int_equal(jf_spec_check_runtime(s, true, &e3), JF_EINVAL);
	assert_non_null(strstr(e3.msg, "container 'b' has neither an image nor a command"));
	assert_int_equal(jf_spec_check_runtime(s, false, &e3), JF_ENOTSUP);
	assert_true(e3.line > 0);
	jf_spec_free(s);
	/* one container with a command is enough on the host */
	s = parse_ok("containers:\n- name: a\n- name: b\n  args: [x]\n");
	assert_int_equal(s->ncontainers, 2);
	assert_false(s->no_command);
	assert_int_equal(jf_spec_check_runtime(s, false, &e3), JF_OK);
	jf_spec_free(s);
}

static void storage_errors(void **state)
{
	(void)state;
	ERR("command: [x]\nstorage: {type: emptydir}\n", 2, "key 'storage'", "expected a list");
	ERR("command: [x]\nstorage:\n- {path: /a}\n", 3, "key 'storage[0].type'", "needs a type");
	ERR("command: [x]\nstorage:\n- {type: nfs, path: /a}\n", 3, "key 'storage[0].type'",
	    "emptydir, volume or object");
	ERR("command: [x]\nstorage:\n- {type: emptydir, path: scratch}\n", 3,
	    "key 'storage[0].path'", "absolute");
	ERR("command: [x]\nstorage:\n- {type: emptydir, path: /a/../etc}\n", 3,
	    "key 'storage[0].path'", "absolute");
	ERR("command: [x]\nstorage:\n- {type: emptydir}\n", 3, "key 'storage[0].path'",
	    "needs a path");
	ERR("command: [x]\nstorage:\n- {type: emptydir, path: /a, size: 10GB}\n", 3,
	    "key 'storage[0].size'", "bad memory quantity");
	ERR("command: [x]\nstorage:\n- type: volume\n  path: /a\n  size: 1Gi\n", 5,
	    "unknown key 'storage[0].size'", NULL);
	ERR("command: [x]\nstorage:\n- {type: volume, path: /a}\n", 3, "key 'storage[0].name'",
	    "needs a name");
	ERR("command: [x]\nstorage:\n- {type: volume, path: /a, name: \"a b\"}\n", 3,
	    "key 'storage[0].name'", "bad volume name");
	expect_err_at("command: [x]\nstorage:\n- {type: object, path: /a, name: m, source: "
		      "https://h/b}\n",
		      JF_PLACE_GROUP, JF_ENOTSUP, 3, "key 'storage[0].source'", "not named by URL");
	ERR("command: [x]\nstorage:\n- {type: object, path: /a}\n", 3, "key 'storage[0].name'",
	    "a directory of /objects");
	ERR("command: [x]\nstorage:\n- {type: emptydir, path: /a, medium: Disk}\n", 3,
	    "key 'storage[0].medium'", "must be Memory");
	ERR("command: [x]\nstorage:\n- {type: emptydir, path: /dev/shm}\n", 3,
	    "key 'storage[0].path'", "runtime's own mount");
	ERR("command: [x]\nstorage:\n- {type: volume, path: /proc/x, name: v}\n", 3,
	    "key 'storage[0].path'", "runtime's own mount");
	ERR("command: [x]\nstorage:\n- {type: volume, path: /a, name: v, read_only: maybe}\n", 3,
	    "key 'storage[0].read_only'", NULL);
	ERR("command: [x]\nstorage:\n- {type: object, path: /a, name: ../x}\n", 3,
	    "key 'storage[0].name'", "bad object source name");
	ERR("command: [x]\nstorage:\n- {type: emptydir, path: /a}\n- {type: emptydir, path: /a}\n",
	    4, "key 'storage[1].path'", "twice");
	ERR("command: [x]\nstorage:\n- x\n", 3, "key 'storage[0]'", "expected a mapping");
	char big[2048] = "command: [x]\nstorage:\n";
	for (int i = 0; i < 17; i++)
		snprintf(big + strlen(big), sizeof(big) - strlen(big),
			 "- {type: emptydir, path: /s%d}\n", i);
	ERR(big, 3, "key 'storage'", "more than 16");
	/* an empty list is no storage at all */
	struct jf_spec *s = parse_ok("command: [x]\nstorage: []\n");
	assert_int_equal(s->nstorage, 0);
	jf_spec_free(s);
}

static void unknown_and_types(void **state)
{
	(void)state;
	ERR("command: [x]\nfoo: 1\n", 2, "unknown key 'foo'", NULL);
	ERR("command: [x]\nCompletions: 1\n", 2, "unknown key 'Completions'", NULL);
	ERR("command: [x]\nstatus: {}\n", 2, "unknown key 'status'", NULL);
}

/* ---- YAML level ---- */

static void yaml_documents(void **state)
{
	(void)state;
	expect_err_at("", JF_PLACE_GROUP, JF_EINVAL, 0, "empty", NULL);
	expect_err_len(NULL, 0, JF_PLACE_GROUP, JF_EINVAL, 0, "empty", NULL);
	expect_err_at("# only a comment\n\n", JF_PLACE_GROUP, JF_EINVAL, 0, "empty", NULL);
	ERR("~\n", 1, "empty", NULL);
	ERR("---\n", 2, "empty", NULL);
	ERR("hello\n", 1, "must be a mapping", "a string");
	ERR("- a\n- b\n", 1, "must be a mapping", "a list");
	ERR("command: [x]\n---\ncommand: [y]\n", 2, "second YAML document", NULL);
	ERR("command: [x]\ncommand: [y]\n", 2, "duplicate key 'command'", "first at line 1");
	ERR("command: [x]\nresources:\n  limits:\n    cpu: 1\n    memory: 1Gi\n    cpu: 2\n", 6,
	    "duplicate key 'resources.limits.cpu'", "first at line 4");
	ERR("command: [x]\nenv:\n  A: 1\n  \"A\": 2\n", 4, "duplicate key 'env.A'", NULL);
	ERR("command: [x\n", 2, "YAML syntax error", NULL);
	ERR("command: [x]\n  bad: indent\n", 2, "YAML syntax error", NULL);
	ERR("command: [x]\nargs: !!binary aGVsbG8=\n", 2, "key 'args'", "unsupported YAML tag");
	ERR("base: &b {a: 1}\ncommand: [x]\n<<: *b\n", 3, "merge keys", NULL);
	ERR("command: [x]\nargs: *nothing\n", 2, "key 'args'", "alias '*nothing'");
	ERR("command: &a [x, *a]\n", 1, "alias '*a'", NULL);
	ERR("command: [x]\n[a]: 1\n", 2, "a key must be a plain string", NULL);
	ERR("command: [x]\n? {a: 1}\n: 1\n", 2, "a key must be a plain string", NULL);
	/* many anchors, redefined anchors (the later one counts), core tags */
	char text[4096] = "";
	for (int i = 0; i < 40; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "x%d: &a%d v%d\n", i,
			 i % 30, i);
	strcat(text, "name: *a3\n");
	ERR(text, 1, "unknown key 'x0'", NULL); /* the tree itself was fine */
	struct jf_ydoc *doc;
	struct jf_error e = { 0 };
	assert_int_equal(jf_ydoc_parse(text, strlen(text), &doc, &e), JF_OK);
	const struct jf_ynode *name = jf_ymap_get(jf_ydoc_root(doc), "name");
	assert_string_equal(name->str, "v33");
	jf_ydoc_free(doc);
	struct jf_spec *t = parse_ok("command: [x]\ncompletions: !!int \"3\"\nnodes: +2\n");
	assert_int_equal(t->completions, 3);
	assert_int_equal(t->nodes, 2);
	jf_spec_free(t);
	ERR("command: [x]\nx: &m {a: 1}\n", 2, "unknown key 'x'", NULL);
	ERR("command: [x]\nname: !custom x\n", 2, "key 'name'", "unsupported YAML tag '!custom'");
	ERR("command: [x]\nresources: !!set {a: 1}\n", 2, "key 'resources'",
	    "unsupported YAML tag");
	/* a UTF-8 byte order mark and CRLF line ends, as Windows editors write */
	t = parse_ok("\xef\xbb\xbf"
		     "command: [x]\r\nname: \"a\"\r\n");
	assert_string_equal(t->name, "a");
	jf_spec_free(t);
	ERR("command: [x]\n\tname: a\n", 2, "YAML syntax error", "tab"); /* tab indent */
	/* tags that only say "string" are fine and make a string */
	struct jf_spec *s = parse_ok("command: [x]\nname: !!str 123\n");
	assert_string_equal(s->name, "123");
	jf_spec_free(s);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void alias_bomb(void **state)
{
	(void)state;
	const char *bomb =
		"a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
		"b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
		"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
		"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
		"f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
		"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
		"h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
		"i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
	double t0 = now_s();
	ERR(bomb, 5, "key 'e[", "more than 20000 nodes");
	double dt = now_s() - t0;
	assert_true(dt < 0.1);
	/* the same through the queue spec parser */
	struct jf_queue_spec q = { 0 };
	struct jf_error e = { 0 };
	assert_int_equal(jf_queue_spec_parse(bomb, strlen(bomb), &q, &e), JF_EINVAL);
	assert_non_null(strstr(e.msg, "alias bomb"));
	/* a bomb hidden in keys is caught too */
	ERR("a: &a {x: [1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0]}\n"
	    "b: &b {k1: *a, k2: *a, k3: *a, k4: *a, k5: *a, k6: *a, k7: *a, k8: *a}\n"
	    "c: &c {k1: *b, k2: *b, k3: *b, k4: *b, k5: *b, k6: *b, k7: *b, k8: *b}\n"
	    "d: &d {k1: *c, k2: *c, k3: *c, k4: *c, k5: *c, k6: *c, k7: *c, k8: *c}\n"
	    "e: &e {k1: *d, k2: *d, k3: *d, k4: *d, k5: *d, k6: *d, k7: *d, k8: *d}\n",
	    5, "more than 20000 nodes", NULL);
}

static void deep_nesting(void **state)
{
	(void)state;
	char text[512] = "command: ";
	for (int i = 0; i < 100; i++)
		strcat(text, "[");
	for (int i = 0; i < 100; i++)
		strcat(text, "]");
	strcat(text, "\n");
	ERR(text, 1, "key 'command[0][0]", "nested deeper than 32");
	/* 32 levels are fine for YAML (the spec then refuses the type) */
	strcpy(text, "command: ");
	for (int i = 0; i < 31; i++)
		strcat(text, "[");
	for (int i = 0; i < 31; i++)
		strcat(text, "]");
	strcat(text, "\n");
	ERR(text, 1, "key 'command[0]'", "expected a string");
	/* an alias cannot smuggle depth past the limit */
	char deep[512] = "x: &d ";
	for (int i = 0; i < 30; i++)
		strcat(deep, "[");
	for (int i = 0; i < 30; i++)
		strcat(deep, "]");
	strcat(deep, "\ny: [[*d]]\n");
	ERR(deep, 2, "key 'y[0][0]'", "nested deeper than 32");
	/* and deep mappings */
	char maps[4096] = "";
	for (int i = 0; i < 40; i++) {
		for (int j = 0; j < i; j++)
			strcat(maps, " ");
		strcat(maps, "a:\n");
	}
	ERR(maps, 33, "key 'a.a.a.a", "nested deeper than 32");
}

static void huge_inputs(void **state)
{
	(void)state;
	size_t n = 300 * 1024;
	char *big = malloc(n + 1);
	assert_non_null(big);
	memset(big, '#', n);
	big[n] = '\0';
	expect_err_len(big, n, JF_PLACE_GROUP, JF_EFBIG, 0, "more than the limit", NULL);
	/* one scalar over JF_SPEC_MAX_STRING */
	size_t m = 70 * 1024;
	strcpy(big, "command: [x]\nname: ");
	size_t off = strlen(big);
	memset(big + off, 'a', m);
	strcpy(big + off + m, "\n");
	ERR(big, 2, "key 'name'", "longer than 65536");
	/* 20000+ real nodes */
	strcpy(big, "command: [x]\nargs: [");
	char *p = big + strlen(big);
	for (int i = 0; i < 21000; i++, p += 2)
		memcpy(p, "a,", 2);
	strcpy(p, "a]\n");
	ERR(big, 2, "key 'args[", "more than 20000 nodes");
	free(big);
}

static void binary_garbage(void **state)
{
	(void)state;
	static const char nul[] = "command: [x]\nname: a\0b\n";
	expect_err_len(nul, sizeof(nul) - 1, JF_PLACE_GROUP, JF_EINVAL, 2, "NUL", NULL);
	ERR("command: [x]\nname: \xff\xfe\n", 2, "UTF-8", NULL);
	ERR("command: [x]\nname: \xc3\n", 2, "UTF-8", NULL);
	ERR("command: [x]\nname: \xed\xa0\x80\n", 2, "UTF-8", NULL); /* a surrogate */
	ERR("command: [x]\nname: \xc0\xaf\n", 2, "UTF-8", NULL);     /* overlong */
	ERR("command: [x]\nname: a\x01\n", 2, "control character 0x01", NULL);
	ERR("command: [x]\nname: a\x7f\n", 2, "control character 0x7f", NULL);
	ERR("\x1b[31mred\n", 1, "control character", NULL);
	ERR("command: [x]\nname: \xc3", 2, "incomplete UTF-8", NULL);
	ERR("command: [x]\n\nname: a\xc2\x80"
	    "b\n",
	    3, "YAML syntax error", NULL); /* C1 */
	/* random bytes: never a crash, always an error with a message */
	uint64_t x = 0x1234567;
	char buf[4096];
	for (int round = 0; round < 200; round++) {
		size_t len = 1 + (size_t)(round * 37) % sizeof(buf);
		for (size_t i = 0; i < len; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[i] = (char)x;
		}
		struct jf_spec *s = NULL;
		struct jf_error e = { 0 };
		enum jf_err rc = jf_spec_parse(buf, len, JF_PLACE_GROUP, NULL, &s, &e);
		assert_int_not_equal(rc, JF_OK);
		assert_null(s);
		assert_true(e.msg[0] != '\0');
	}
}

/* head, then `&a "<len x's>"`, then tail. */
static char *anchored(const char *head, size_t len, const char *tail)
{
	size_t n = strlen(head) + len + strlen(tail) + 8;
	char *t = malloc(n);
	assert_non_null(t);
	snprintf(t, n, "%s&a \"", head);
	size_t o = strlen(t);
	memset(t + o, 'x', len);
	snprintf(t + o + len, n - o - len, "\"%s", tail);
	return t;
}

static char *with_anchor(size_t len, const char *tail)
{
	char *t = anchored("a: ", len, "\n");
	char *u = malloc(strlen(t) + strlen(tail) + 1);
	assert_non_null(u);
	strcpy(u, t);
	strcat(u, tail);
	free(t);
	return u;
}

/* Every limit of spec.h, each with its key, line and value in the message;
 * the largest value that fits is accepted. */
static void limits(void **state)
{
	(void)state;
	/* text after aliases: 18 copies of 60000 bytes pass 1 MiB */
	char *t = with_anchor(60000, "command: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a,"
				     " *a, *a, *a, *a, *a]\n");
	ERR(t, 2, "key 'command[16]'", "more than 1048576 bytes of text once aliases");
	free(t);
	t = with_anchor(60000, "env: {A: *a, B: {x: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a, "
			       "*a, *a, *a, *a, *a, *a, *a]}}\n");
	ERR(t, 2, "key 'env.B.x[15]'", "more than 1048576 bytes of text");
	free(t);
	/* argv bytes */
	t = anchored("command: [sh, -c]\nargs: [", 60000, ", *a, *a, *a, *a]\n");
	ERR(t, 2, "key 'args'",
	    "command and args of container 'main' are 300011 bytes "
	    "together, more than the limit of 262144");
	free(t);
	t = anchored("command: [", 60000, ", *a, *a, *a]\n");
	struct jf_spec *s = parse_ok(t); /* 240004 bytes fit */
	assert_int_equal(s->containers[0].ncommand, 4);
	jf_spec_free(s);
	free(t);
	t = anchored("containers:\n- name: a\n  command: [x]\n- name: b\n  command: [", 60000,
		     ", *a, *a, *a, *a]\n");
	ERR(t, 5, "key 'containers[1].command'", "container 'b' are 300005 bytes");
	free(t);
	/* env bytes: KEY=value\0 summed per container */
	t = anchored("command: [x]\nenv: {A: ", 60000, ", B: *a, C: *a}\n");
	ERR(t, 2, "key 'env'",
	    "the environment of container 'main' is 180009 bytes "
	    "(KEY=value of each variable, summed), more than the limit of 131072");
	free(t);
	t = anchored("command: [x]\nenv: {A: ", 60000, ", B: *a}\n");
	s = parse_ok(t);
	assert_int_equal(s->containers[0].nenv, 2);
	jf_spec_free(s);
	free(t);
	/* an env name of 255 bytes is fine, 256 is not */
	char text[1024];
	char name[300];
	memset(name, 'N', 256);
	name[256] = '\0';
	snprintf(text, sizeof(text), "command: [x]\nenv:\n  %s: v\n", name);
	ERR(text, 3, "key 'env.NNNN", "is 256 bytes, more than the limit of 255");
	snprintf(text, sizeof(text), "command: [x]\nenv: [\"%s=v\"]\n", name);
	ERR(text, 2, "key 'env[0]'", "is 256 bytes, more than the limit of 255");
	name[255] = '\0';
	snprintf(text, sizeof(text), "command: [x]\nenv:\n  %s: v\n", name);
	s = parse_ok(text);
	assert_int_equal(strlen(s->containers[0].env[0].key), 255);
	jf_spec_free(s);
	/* counts */
	ERR("command: [x]\nparallelism: 1000001\n", 2, "key 'parallelism'",
	    "1000001 is out of range: must be 1 to 1000000");
	ERR("command: [x]\ncompletions: 1000001\n", 2, "key 'completions'", "must be 1 to 1000000");
	ERR("command: [x]\nnodes: 1025\n", 2, "key 'nodes'", "must be 1 to 1024");
	expect_err_at("command: [x]\ncount: 10001\n", JF_PLACE_BATCH, JF_EINVAL, 2, "key 'count'",
		      "must be 1 to 10000");
	s = parse_ok("command: [x]\ncompletions: 1000000\nparallelism: 1000000\nnodes: 1024\n");
	assert_int_equal(s->parallelism, 1000000);
	jf_spec_free(s);
	/* containers */
	char many[2048] = "containers:\n";
	for (int i = 0; i < 17; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many),
			 "- {name: c%d, command: [x]}\n", i);
	ERR(many, 2, "key 'containers'", "17 containers: must be 1 to 16");
	/* name lengths */
	memset(name, 'n', 64);
	name[64] = '\0';
	snprintf(text, sizeof(text), "command: [x]\nname: %s\n", name);
	ERR(text, 2, "key 'name'", "1 to 63 printable characters");
	snprintf(text, sizeof(text), "containers:\n- {name: %s, command: [x]}\n", name);
	ERR(text, 2, "key 'containers[0].name'", "1 to 63 lowercase letters");
}

/* Damage a valid spec a byte at a time; the parser must stay sane. */
static void mutations(void **state)
{
	(void)state;
	const char *base =
		"name: demo\nbilling: spot\ngpu: \"4090\"\ngpus: 1\ncompletions: 10\n"
		"parallelism: 3\nnodes: 2\nunit_runtime: 30m\ntimeout: 2h\nretries: 1\n"
		"containers:\n- name: main\n  command: [\"/bin/sh\", \"-c\", \"exit 0\"]\n"
		"  env: {A: \"1\", B: x}\n  resources: {limits: {cpu: 2, memory: 1Gi}}\n"
		"- name: b\n  env: [\"K=v\"]\n  args: &x [a, b]\n  command: *x\n";
	static const char pool[] = " :-[]{}&*!|>'\"#\n\t,?%@`0a";
	size_t len = strlen(base);
	char *buf = malloc(len + 1);
	assert_non_null(buf);
	uint64_t x = 99;
	int ok = 0;
	for (int round = 0; round < 3000; round++) {
		memcpy(buf, base, len + 1);
		for (int k = 0; k < 1 + round % 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[x % len] = pool[(x >> 20) % (sizeof(pool) - 1)];
		}
		struct jf_spec *s = NULL;
		struct jf_error e = { 0 };
		enum jf_err rc = jf_spec_parse(buf, len, JF_PLACE_GROUP, NULL, &s, &e);
		if (rc == JF_OK) {
			assert_non_null(s);
			assert_true(s->ncontainers >= 1);
			ok++;
		} else {
			assert_null(s);
			assert_true(e.msg[0] != '\0');
		}
		jf_spec_free(s);
	}
	assert_true(ok > 0);
	free(buf);
}

static void text_plausible(void **state)
{
	(void)state;
	struct jf_error e = { 0 };
	assert_true(jf_spec_text_plausible("name: x\n", 8, &e));
	assert_true(jf_spec_text_plausible("name: \xe8\xae", 8, &e)); /* cut mid-sequence */
	assert_true(jf_spec_text_plausible("", 0, &e));
	assert_false(jf_spec_text_plausible("name: \xe8\x41", 8, &e));
	assert_int_equal(e.code, JF_EINVAL);
	assert_false(jf_spec_text_plausible("a\nb\0c", 5, &e));
	assert_int_equal(e.line, 2);
	assert_false(jf_spec_text_plausible("a\x02", 2, &e));
	assert_false(jf_spec_text_plausible("\xff", 1, &e));
	assert_true(jf_spec_text_plausible("\t\r\n", 3, &e));
	char *big = calloc(1, JF_SPEC_MAX_BYTES + 1);
	assert_non_null(big);
	memset(big, 'a', JF_SPEC_MAX_BYTES + 1);
	assert_true(jf_spec_text_plausible(big, JF_SPEC_MAX_BYTES, &e));
	assert_false(jf_spec_text_plausible(big, JF_SPEC_MAX_BYTES + 1, &e));
	assert_int_equal(e.code, JF_EFBIG);
	assert_false(jf_spec_text_plausible(big, JF_SPEC_MAX_BYTES + 1, NULL));
	free(big);
}

static void yamltree_getters(void **state)
{
	(void)state;
	struct jf_ydoc *doc;
	struct jf_error e = { 0 };
	const char *t = "a: 4090\nb: \"3\"\nc: 3\nd: yes\ne: [x, 2]\nf: ~\n";
	assert_int_equal(jf_ydoc_parse(t, strlen(t), &doc, &e), JF_OK);
	const struct jf_ynode *root = jf_ydoc_root(doc);
	const char *s;
	int64_t v;
	assert_int_equal(jf_ynode_text(jf_ymap_get(root, "a"), "a", 0, &s, &e), JF_OK);
	assert_string_equal(s, "4090");
	assert_int_equal(jf_ynode_text(jf_ymap_get(root, "a"), "a", JF_YSTR_STRICT, &s, &e),
			 JF_EINVAL);
	assert_non_null(strstr(e.msg, "line 1: key 'a': expected a string, got a number"));
	assert_int_equal(jf_ynode_int(jf_ymap_get(root, "b"), "b", 0, 10, &v, &e), JF_OK);
	assert_int_equal(v, 3);
	assert_int_equal(jf_ynode_int(jf_ymap_get(root, "c"), "c", 4, 10, &v, &e), JF_EINVAL);
	assert_non_null(strstr(e.msg, "line 3: key 'c': 3 is out of range: must be 4 to 10"));
	assert_int_equal(jf_ynode_text(jf_ymap_get(root, "d"), "d", JF_YSTR_STRICT, &s, &e),
			 JF_EINVAL);
	assert_null(jf_ymap_get(root, "f"));
	assert_non_null(jf_ymap_find_key(root, "f"));
	assert_null(jf_ymap_get(root, "zz"));
	char **list;
	size_t n;
	assert_int_equal(jf_ynode_strlist(jf_ymap_get(root, "e"), "e", 0, 10, &list, &n, &e),
			 JF_OK);
	assert_int_equal(n, 2);
	assert_string_equal(list[1], "2");
	free(list[0]);
	free(list[1]);
	free(list);
	assert_int_equal(
		jf_ynode_strlist(jf_ymap_get(root, "e"), "e", JF_YSTR_STRICT, 10, &list, &n, &e),
		JF_EINVAL);
	assert_non_null(strstr(e.msg, "key 'e[1]'"));
	assert_null(list);
	assert_int_equal(jf_ynode_strlist(jf_ymap_get(root, "e"), "e", 0, 1, &list, &n, &e),
			 JF_EINVAL);
	assert_int_equal(
		jf_ynode_strlist(jf_ymap_get(root, "a"), "a", JF_YLIST_SCALAR, 1, &list, &n, &e),
		JF_OK);
	assert_int_equal(n, 1);
	free(list[0]);
	free(list);
	jf_ydoc_free(doc);

	/* an empty stream has no root */
	assert_int_equal(jf_ydoc_parse("", 0, &doc, &e), JF_OK);
	assert_null(jf_ydoc_root(doc));
	jf_ydoc_free(doc);
	jf_ydoc_free(NULL);
	char path[JF_YPATH_MAX];
	jf_ypath_key(path, sizeof(path), "", "a");
	jf_ypath_index(path, sizeof(path), path, 3);
	jf_ypath_key(path, sizeof(path), path, "b");
	assert_string_equal(path, "a[3].b");
}

/*
 * Out-of-memory: fail the Nth allocation for N = 0, 1, 2 ... until a run
 * sees no failure.  Each run must end in JF_OK or JF_ENOMEM, and once the
 * spec is freed every allocation made meanwhile must be freed too.  The
 * allocator is replaced through glibc's malloc interposition, which also
 * reaches libyaml and jansson; under ASan (which owns malloc) it is skipped.
 */
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static struct {
	bool armed, failed;
	long countdown, live;
} fi;

static bool fi_fail(void)
{
	if (!fi.armed || fi.countdown-- != 0)
		return false;
	fi.failed = true;
	return true;
}

void *malloc(size_t n)
{
	if (fi_fail())
		return NULL;
	void *p = __libc_malloc(n);
	if (p && fi.armed)
		fi.live++;
	return p;
}

void *calloc(size_t n, size_t m)
{
	if (fi_fail())
		return NULL;
	void *p = __libc_calloc(n, m);
	if (p && fi.armed)
		fi.live++;
	return p;
}

void *realloc(void *old, size_t n)
{
	if (old && n == 0) {
		free(old);
		return NULL;
	}
	if (fi_fail())
		return NULL;
	void *p = __libc_realloc(old, n);
	if (p && !old && fi.armed)
		fi.live++;
	return p;
}

void free(void *p)
{
	if (p && fi.armed)
		fi.live--;
	__libc_free(p);
}

static void oom_loop(const char *text, bool queue)
{
	static const struct jf_subst sub = { .job_name = "j", .queue = "q", .group = "g" };
	for (long n = 0;; n++) {
		struct jf_spec *s = NULL;
		struct jf_queue_spec q = { 0 };
		struct jf_error e = { 0 };
		enum jf_err rc;
		fi.live = 0;
		fi.failed = false;
		fi.countdown = n;
		fi.armed = true;
		if (queue)
			rc = jf_queue_spec_parse(text, strlen(text), &q, &e);
		else
			rc = jf_spec_parse(text, strlen(text), JF_PLACE_GROUP, &sub, &s, &e);
		fi.countdown = -1;
		jf_spec_free(s);
		jf_queue_spec_release(&q);
		fi.armed = false;
		/* jansson reports an allocation failure inside a string as a
		 * syntax error: the one place a failure may read as EINVAL */
		bool json = rc == JF_EINVAL && fi.failed && strstr(e.msg, "bad JSON object");
		if (rc != JF_OK && rc != JF_ENOMEM && !json)
			fail_msg("allocation %ld failed: got %s: %s", n, jf_err_name(rc), e.msg);
		if (fi.live != 0)
			fail_msg("allocation %ld failed: %ld blocks leaked", n, fi.live);
		if (!fi.failed) {
			assert_int_equal(rc, JF_OK);
			break;
		}
	}
}

static void out_of_memory(void **state)
{
	(void)state;
	oom_loop(design_example, false);
	oom_loop("gpu: \"4090\"\ncontainers:\n- name: a\n  command: [x, y]\n"
		 "  env: '{\"A\": 1, \"B\": \"x\", \"C\": 1.5}'\n"
		 "  resources: {limits: {nvidia.com/gpu: 1}, requests: {cpu: 1}}\n"
		 "- name: b\n  args: &a [p, q]\n  command: *a\n  env: [\"X=1\", \"X=2\"]\n"
		 "- name: c\n  env: |\n    K=v\n    L=w\n",
		 false);
	oom_loop("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: ${JOB_NAME}\n"
		 "  labels: {a: b}\n  annotations: {jobfs/gpu: H800, foo: bar}\n"
		 "spec:\n  completions: 4\n  completionMode: Indexed\n"
		 "  backoffLimitPerIndex: 1\n"
		 "  successPolicy: {rules: [{succeededIndexes: \"0,2-3\", succeededCount: 1}]}\n"
		 "  podFailurePolicy:\n    rules:\n"
		 "    - {action: FailIndex, onExitCodes: {containerName: m, operator: In, values: "
		 "[42]}}\n"
		 "    - {action: Ignore, onPodConditions: [{type: DisruptionTarget}]}\n"
		 "  template:\n    spec:\n      restartPolicy: Never\n      containers:\n"
		 "      - name: m\n        command: [x]\n        ports: [1]\n"
		 "        env: [{name: A, value: b}]\n"
		 "        resources: {limits: {nvidia.com/gpu: 2, cpu: 1}}\nstatus: {}\n",
		 false);
	oom_loop("capacity: 3\npartition: p\ngroup_timeout: 1m\nprivate: true\n", true);
}
#else
static void out_of_memory(void **state)
{
	(void)state;
	print_message("skipped: allocation failures are injected only without ASan\n");
	skip();
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(minimal_defaults),
		cmocka_unit_test(design_example_parses),
		cmocka_unit_test(containers_form),
		cmocka_unit_test(gpu_defaults),
		cmocka_unit_test(completions_parallelism),
		cmocka_unit_test(batch_place),
		cmocka_unit_test(scalar_keys),
		cmocka_unit_test(names),
		cmocka_unit_test(command_args),
		cmocka_unit_test(env_forms),
		cmocka_unit_test(image_keys),
		cmocka_unit_test(ports_keys),
		cmocka_unit_test(containers_errors),
		cmocka_unit_test(resources_errors),
		cmocka_unit_test(not_supported),
		cmocka_unit_test(storage_errors),
		cmocka_unit_test(unknown_and_types),
		cmocka_unit_test(yaml_documents),
		cmocka_unit_test(alias_bomb),
		cmocka_unit_test(deep_nesting),
		cmocka_unit_test(huge_inputs),
		cmocka_unit_test(binary_garbage),
		cmocka_unit_test(limits),
		cmocka_unit_test(mutations),
		cmocka_unit_test(text_plausible),
		cmocka_unit_test(yamltree_getters),
		cmocka_unit_test(out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
