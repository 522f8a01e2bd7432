/*
 * test_fuzz_corpus.c - every fuzz input ever kept, replayed in the ordinary
 * builds.
 *
 * For each target of tests/fuzz/targets.c, every file under
 * tests/fuzz/corpus/<target>/ (the seeds) and tests/fuzz/crashes/<target>/
 * (inputs that once crashed or broke an invariant, named after what they
 * found) goes through the same entry point the libFuzzer target uses.  So a
 * crash found once stays a test in the plain and the ASan build, where a
 * broken invariant abort()s and the sanitizers watch the rest.  A target
 * with no seeds fails: the corpus is checked in.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/targets.h"

#define REPLAY_MAX_INPUT (4 * 1024 * 1024)

/* Read path whole; NULL when it is not a regular file. */
static uint8_t *slurp(const char *path, size_t *len)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return NULL;
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	uint8_t *buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	size_t n = fread(buf, 1, (size_t)st.st_size, f);
	assert_int_equal(n, (size_t)st.st_size);
	assert_true(n <= REPLAY_MAX_INPUT);
	fclose(f);
	*len = n;
	return buf;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Replay every file in dir through t; returns how many ran. */
static size_t replay_dir(const struct jf_fuzz_target *t, const char *dir)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, by_name);
	size_t ran = 0;
	if (n < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		size_t len;
		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		uint8_t *data = ents[i]->d_name[0] == '.' ? NULL : slurp(path, &len);
		if (data) {
			/* a broken invariant aborts: say which input first */
			print_message("  %s %s\n", t->name, path + strlen(JF_SOURCE_DIR) + 1);
			t->run(data, len);
			free(data);
			ran++;
		}
		free(ents[i]);
	}
	free(ents);
	return ran;
}

static void replay(void **state)
{
	const struct jf_fuzz_target *t = *state;
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", JF_SOURCE_DIR, t->name);
	size_t seeds = replay_dir(t, dir);
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/crashes/%s", JF_SOURCE_DIR, t->name);
	size_t crashes = replay_dir(t, dir);
	print_message("%s: %zu seeds, %zu regressions\n", t->name, seeds, crashes);
	if (seeds == 0)
		fail_msg("no seed corpus in tests/fuzz/corpus/%s", t->name);
}

/* Empty input, and a few hostile ones no file holds. */
static void edge_inputs(void **state)
{
	(void)state;
	static const uint8_t nul[] = { 0 };
	static const uint8_t text[] = "command: [x]\n";
	size_t big = 2 * 1024 * 1024;
	uint8_t *junk = malloc(big);
	assert_non_null(junk);
	memset(junk, '[', big);
	for (const struct jf_fuzz_target *t = jf_fuzz_targets; t->name; t++) {
		t->run(nul, 0);
		t->run(nul, sizeof(nul));
		t->run(text, sizeof(text) - 1);
		t->run(junk, big);
	}
	free(junk);
}

int main(void)
{
	struct CMUnitTest tests[16];
	size_t n = 0;
	for (const struct jf_fuzz_target *t = jf_fuzz_targets; t->name && n < 15; t++) {
		struct CMUnitTest c = { t->name, replay, NULL, NULL, (void *)t };
		tests[n++] = c;
	}
	struct CMUnitTest e = cmocka_unit_test(edge_inputs);
	tests[n++] = e;
	return _cmocka_run_group_tests("fuzz_corpus", tests, n, NULL, NULL);
}
