/*
 * test_deps.c - core/deps.c: `after:` entries as a user writes them
 * (through jf_spec_parse, native and the K8s annotation jobfs/after),
 * every bad shape of an entry refused with its key and line, the verdict
 * of every `when` on every state, and the cycle check on small graphs
 * (none, a self-dependency, cycles of 2 and 3, a diamond, a graph with a
 * cycle that does not reach the new node, one that is large) against a
 * plain reachability reference.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/deps.h"
#include "core/lifecycle.h"
#include "core/spec.h"

static struct jf_spec *parse_ok(const char *text, enum jf_spec_place place)
{
	struct jf_spec *s = NULL;
	struct jf_error e = { 0 };
	struct jf_subst sub = { "job", "q", "g" };
	if (jf_spec_parse(text, strlen(text), place, &sub, &s, &e) != JF_OK)
		fail_msg("refused: %s\n--- spec:\n%s", e.msg, text);
	return s;
}

/* Refused with EINVAL, "line N: " first, and s1, s2 in the message. */
static void bad(const char *text, int line, const char *s1, const char *s2)
{
	struct jf_spec *s = NULL;
	struct jf_error e = { 0 };
	struct jf_subst sub = { "job", "q", "g" };
	enum jf_err rc = jf_spec_parse(text, strlen(text), JF_PLACE_GROUP, &sub, &s, &e);
	if (rc != JF_EINVAL)
		fail_msg("want EINVAL, got %s: %s\n--- spec:\n%s", jf_err_name(rc), e.msg, text);
	assert_null(s);
	char want[32];
	snprintf(want, sizeof(want), "line %d: ", line);
	if (strncmp(e.msg, want, strlen(want)) != 0)
		fail_msg("want '%s' first in: %s\n--- spec:\n%s", want, e.msg, text);
	assert_int_equal(e.line, line);
	if (s1 && !strstr(e.msg, s1))
		fail_msg("want '%s' in: %s", s1, e.msg);
	if (s2 && !strstr(e.msg, s2))
		fail_msg("want '%s' in: %s", s2, e.msg);
}

/* ---- entries as written ---- */

static void test_native_entries(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok("command: [x]\n"
				     "after:\n"
				     "  - prep\n"
				     "  - {group: queues/etl/groups/load, when: failed}\n"
				     "  - group: tasks/nightly\n"
				     "    when: finished\n"
				     "    each: true\n"
				     "  - /queues/q/groups/abs\n"
				     "  - {group: other, each: false, when: succeeded}\n",
				     JF_PLACE_GROUP);
	assert_int_equal(s->nafter, 5);
	assert_string_equal(s->after_key, "after");
	const struct jf_dep *d = s->after;
	assert_int_equal(d[0].ref, JF_DEP_REF_NAME);
	assert_string_equal(d[0].name, "prep");
	assert_int_equal(d[0].when, JF_DEP_SUCCEEDED);
	assert_false(d[0].each);
	assert_int_equal(d[0].line, 3);
	assert_int_equal(d[1].ref, JF_DEP_REF_QUEUE);
	assert_string_equal(d[1].queue, "etl");
	assert_string_equal(d[1].name, "load");
	assert_int_equal(d[1].when, JF_DEP_FAILED);
	assert_int_equal(d[1].line, 4);
	assert_int_equal(d[2].ref, JF_DEP_REF_TASKS);
	assert_string_equal(d[2].name, "nightly");
	assert_int_equal(d[2].when, JF_DEP_FINISHED);
	assert_true(d[2].each);
	assert_int_equal(d[2].line, 5);
	assert_int_equal(d[3].ref, JF_DEP_REF_QUEUE); /* the tree's own spelling */
	assert_string_equal(d[3].name, "abs");
	assert_int_equal(d[4].ref, JF_DEP_REF_NAME);
	char buf[160];
	jf_dep_target(&d[1], buf, sizeof(buf));
	assert_string_equal(buf, "queues/etl/groups/load");
	jf_dep_target(&d[2], buf, sizeof(buf));
	assert_string_equal(buf, "tasks/nightly");
	jf_dep_target(&d[0], buf, sizeof(buf));
	assert_string_equal(buf, "prep");
	jf_spec_free(s);

	/* one entry alone, an empty list, null: what they say */
	s = parse_ok("command: [x]\nafter: prep\n", JF_PLACE_GROUP);
	assert_int_equal(s->nafter, 1);
	jf_spec_free(s);
	s = parse_ok("command: [x]\nafter: []\n", JF_PLACE_GROUP);
	assert_int_equal(s->nafter, 0);
	assert_null(s->after);
	jf_spec_free(s);
	s = parse_ok("command: [x]\nafter:\n", JF_PLACE_GROUP);
	assert_int_equal(s->nafter, 0);
	jf_spec_free(s);
	/* a batch names batches the same way */
	s = parse_ok("command: [x]\ncount: 3\nafter: [{group: x, each: true}]\n", JF_PLACE_BATCH);
	assert_int_equal(s->nafter, 1);
	assert_true(s->after[0].each);
	jf_spec_free(s);
	/* a number is a name too (directory names may be digits) */
	s = parse_ok("command: [x]\nafter: [2024]\n", JF_PLACE_GROUP);
	assert_string_equal(s->after[0].name, "2024");
	jf_spec_free(s);
}

static void test_native_errors(void **state)
{
	(void)state;
	/* the value */
	bad("command: [x]\nafter: {group: a}\n", 2, "key 'after'", "put it in [ ]");
	/* an entry of the wrong kind */
	bad("command: [x]\nafter:\n  - [a, b]\n", 3, "key 'after[0]'", "got a list");
	/* names and paths */
	bad("command: [x]\nafter: [a, 'b c']\n", 2, "key 'after[1]'", "bad group name");
	bad("command: [x]\nafter: [.hidden]\n", 2, "key 'after[0]'", "bad group name");
	bad("command: [x]\nafter: [queues/q]\n", 2, "key 'after[0]'", "names no group");
	bad("command: [x]\nafter: [queues/q/groups]\n", 2, "key 'after[0]'", "names no group");
	bad("command: [x]\nafter: [queues/q/tasks/a]\n", 2, "key 'after[0]'", "names no group");
	bad("command: [x]\nafter: [queues/q/groups/a/tasks/0]\n", 2, "names no group", NULL);
	bad("command: [x]\nafter: [tasks/a/1-a]\n", 2, "names no group", NULL);
	bad("command: [x]\nafter: [volumes/v]\n", 2, "names no group",
	    "queues/<q>/groups/<g> or tasks/<name>");
	bad("command: [x]\nafter: [queues/b@d/groups/a]\n", 2, "bad queue name", NULL);
	bad("command: [x]\nafter: [tasks/]\n", 2, "bad batch name", NULL);
	bad("command: [x]\nafter: [\"\"]\n", 2, "bad group name", NULL);
	bad("command: [x]\nafter: [~]\n", 2, "key 'after[0]'", "expected a string");
	char longname[200];
	snprintf(longname, sizeof(longname), "command: [x]\nafter: [%0100d]\n", 7);
	bad(longname, 2, "bad group name", NULL);
	/* the mapping */
	bad("command: [x]\nafter:\n  - {when: failed}\n", 3, "key 'after[0].group'", "needs group");
	bad("command: [x]\nafter:\n  - {group: a, colour: red}\n", 3,
	    "unknown key 'after[0].colour'", NULL);
	bad("command: [x]\nafter:\n  - group: a\n    when: done\n", 4, "key 'after[0].when'",
	    "succeeded, failed or finished");
	bad("command: [x]\nafter:\n  - {group: a, when: [failed]}\n", 3, "key 'after[0].when'",
	    NULL);
	bad("command: [x]\nafter:\n  - {group: a, each: yes please}\n", 3, "key 'after[0].each'",
	    "true or false");
	bad("command: [x]\nafter:\n  - {group: a, each: \"true\"}\n", 3, "key 'after[0].each'",
	    NULL);
	bad("command: [x]\nafter:\n  - {group: [a]}\n", 3, "key 'after[0].group'",
	    "expected a string");
	/* the same group twice, as written */
	bad("command: [x]\nafter:\n  - a\n  - b\n  - {group: a, when: failed}\n", 5,
	    "key 'after[2]'", "named twice (also at line 3)");
	bad("command: [x]\nafter: [tasks/a, tasks/a]\n", 2, "key 'after[1]'", "named twice");
	/* a group named a and a batch named a are two targets */
	struct jf_spec *s = parse_ok("command: [x]\nafter: [a, tasks/a]\n", JF_PLACE_GROUP);
	jf_spec_free(s);
	/* too many */
	char big[2048] = "command: [x]\nafter: [";
	for (int i = 0; i <= JF_SPEC_MAX_AFTER; i++) {
		char one[16];
		snprintf(one, sizeof(one), "%sg%d", i ? ", " : "", i);
		strcat(big, one);
	}
	strcat(big, "]\n");
	bad(big, 2, "key 'after'", "more than the limit of 64");
	/* an unknown key next to it is still named */
	bad("command: [x]\nafterwards: [a]\n", 2, "unknown key 'afterwards'", NULL);
}

static const char k8s_head[] = "apiVersion: batch/v1\n"
			       "kind: Job\n"
			       "metadata:\n"
			       "  name: j\n"
			       "  annotations:\n";
static const char k8s_tail[] = "spec:\n"
			       "  template:\n"
			       "    spec:\n"
			       "      restartPolicy: Never\n"
			       "      containers:\n"
			       "      - {name: c, image: busybox, command: [x]}\n";

static char *k8s(const char *annotations)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "%s%s%s", k8s_head, annotations, k8s_tail);
	return buf;
}

static void test_k8s_annotation(void **state)
{
	(void)state;
	struct jf_spec *s =
		parse_ok(k8s("    jobfs/after: \"[prep, {group: tasks/x, when: failed}]\"\n"),
			 JF_PLACE_GROUP);
	assert_int_equal(s->nafter, 2);
	assert_string_equal(s->after_key, "metadata.annotations.jobfs/after");
	assert_string_equal(s->after[0].name, "prep");
	assert_int_equal(s->after[0].line, 6);
	assert_int_equal(s->after[1].ref, JF_DEP_REF_TASKS);
	assert_int_equal(s->after[1].when, JF_DEP_FAILED);
	assert_int_equal(s->after[1].line, 6);
	/* nothing of it is listed under ignored: */
	for (size_t i = 0; i < s->nignored; i++)
		assert_null(strstr(s->ignored[i], "after"));
	jf_spec_free(s);
	/* one name alone; a block scalar, its lines counted */
	s = parse_ok(k8s("    jobfs/after: prep\n"), JF_PLACE_GROUP);
	assert_int_equal(s->nafter, 1);
	jf_spec_free(s);
	s = parse_ok(k8s("    jobfs/after: |\n"
			 "      - prep\n"
			 "      - {group: tasks/x, each: true}\n"),
		     JF_PLACE_GROUP);
	assert_int_equal(s->nafter, 2);
	assert_int_equal(s->after[1].line, 8);
	jf_spec_free(s);
	/* errors carry the spec's line and the annotation's path */
	struct jf_spec *out = NULL;
	struct jf_error e = { 0 };
	const char *t = k8s("    other: x\n    jobfs/after: \"[prep, {group: a, when: later}]\"\n");
	assert_int_equal(jf_spec_parse(t, strlen(t), JF_PLACE_GROUP, NULL, &out, &e), JF_EINVAL);
	assert_int_equal(e.line, 7);
	assert_non_null(strstr(e.msg, "key 'metadata.annotations.jobfs/after[1].when'"));
	t = k8s("    jobfs/after: \"[prep, {group: a\"\n");
	assert_int_equal(jf_spec_parse(t, strlen(t), JF_PLACE_GROUP, NULL, &out, &e), JF_EINVAL);
	assert_int_equal(e.line, 6);
	assert_non_null(strstr(e.msg, "not a YAML list of entries"));
	t = k8s("    jobfs/after: \"[a, a]\"\n");
	assert_int_equal(jf_spec_parse(t, strlen(t), JF_PLACE_GROUP, NULL, &out, &e), JF_EINVAL);
	assert_non_null(strstr(e.msg, "named twice"));
	t = k8s("    jobfs/after: \"*x\"\n");
	assert_int_equal(jf_spec_parse(t, strlen(t), JF_PLACE_GROUP, NULL, &out, &e), JF_EINVAL);
	t = k8s("    jobfs/after: [a, b]\n");
	assert_int_equal(jf_spec_parse(t, strlen(t), JF_PLACE_GROUP, NULL, &out, &e), JF_EINVAL);
	assert_non_null(strstr(e.msg, "expected a string"));
	/* unknown annotations list it */
	t = k8s("    jobfs/before: a\n");
	assert_int_equal(jf_spec_parse(t, strlen(t), JF_PLACE_GROUP, NULL, &out, &e), JF_EINVAL);
	assert_non_null(strstr(e.msg, "jobfs/after"));
	/* the Job itself has no field for it: a spec.after is only ignored */
	s = parse_ok("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  after: [a]\n"
		     "  template:\n    spec:\n      restartPolicy: Never\n"
		     "      containers: [{name: c, image: busybox, command: [x]}]\n",
		     JF_PLACE_GROUP);
	assert_int_equal(s->nafter, 0);
	bool listed = false;
	for (size_t i = 0; i < s->nignored; i++)
		listed = listed || strcmp(s->ignored[i], "spec.after") == 0;
	assert_true(listed);
	jf_spec_free(s);
}

/* ---- the verdict ---- */

static void test_eval(void **state)
{
	(void)state;
	/* every when on every final state, and on the states that may still end */
	static const struct {
		enum jf_dep_when w;
		int state;
		enum jf_dep_verdict v;
	} cases[] = {
		{ JF_DEP_SUCCEEDED, JF_ST_SUCCEEDED, JF_DEP_HOLDS },
		{ JF_DEP_SUCCEEDED, JF_ST_FAILED, JF_DEP_NEVER },
		{ JF_DEP_SUCCEEDED, JF_ST_STOPPED, JF_DEP_NEVER },
		{ JF_DEP_FAILED, JF_ST_SUCCEEDED, JF_DEP_NEVER },
		{ JF_DEP_FAILED, JF_ST_FAILED, JF_DEP_HOLDS },
		{ JF_DEP_FAILED, JF_ST_STOPPED, JF_DEP_NEVER },
		{ JF_DEP_FINISHED, JF_ST_SUCCEEDED, JF_DEP_HOLDS },
		{ JF_DEP_FINISHED, JF_ST_FAILED, JF_DEP_HOLDS },
		{ JF_DEP_FINISHED, JF_ST_STOPPED, JF_DEP_HOLDS },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (jf_dep_eval(cases[i].w, cases[i].state) != cases[i].v)
			fail_msg("%s on %s: want %s", jf_dep_when_name(cases[i].w),
				 jf_state_name((enum jf_state)cases[i].state),
				 jf_dep_verdict_name(cases[i].v));
	static const int live[] = { JF_ST_DRAFT,        JF_ST_INVALID, JF_ST_WAITING,
				    JF_ST_INITIALIZING, JF_ST_RUNNING, JF_ST_PAUSED };
	for (int w = JF_DEP_SUCCEEDED; w <= JF_DEP_FINISHED; w++) {
		for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++)
			assert_int_equal(jf_dep_eval((enum jf_dep_when)w, live[i]), JF_DEP_WAITS);
		/* gone: it will never end now */
		assert_int_equal(jf_dep_eval((enum jf_dep_when)w, -1), JF_DEP_NEVER);
		assert_int_equal(jf_dep_eval((enum jf_dep_when)w, JF_ST__COUNT), JF_DEP_NEVER);
		/* the mask says exactly what holds */
		for (int st = 0; st < JF_ST__COUNT; st++)
			assert_int_equal((jf_dep_ok_mask((enum jf_dep_when)w) >> st) & 1u,
					 jf_dep_eval((enum jf_dep_when)w, st) == JF_DEP_HOLDS);
	}
	assert_string_equal(jf_dep_when_name(JF_DEP_FAILED), "failed");
	assert_string_equal(jf_dep_verdict_name(JF_DEP_NEVER), "never");
	assert_string_equal(jf_dep_verdict_name(JF_DEP_HOLDS), "holds");
	assert_string_equal(jf_dep_verdict_name(JF_DEP_WAITS), "waits");
}

/* ---- the cycle check ---- */

#define NODES 64

struct graph {
	int64_t edge[NODES][NODES]; /* edge[a][k]: a's k-th target */
	size_t n[NODES];
	int asked;
};

static size_t edges(void *ctx, int64_t id, int64_t *out, size_t max)
{
	struct graph *g = ctx;
	g->asked++;
	if (id < 0 || id >= NODES)
		return 0;
	for (size_t k = 0; k < g->n[id] && k < max; k++)
		out[k] = g->edge[id][k];
	return g->n[id];
}

static void add_edge(struct graph *g, int64_t a, int64_t b)
{
	g->edge[a][g->n[a]++] = b;
}

/* The reference: is self reachable from one of targets (plain DFS)? */
static bool reaches(const struct graph *g, int64_t from, int64_t self, bool *seen)
{
	if (from == self)
		return true;
	if (seen[from])
		return false;
	seen[from] = true;
	for (size_t k = 0; k < g->n[from]; k++)
		if (reaches(g, g->edge[from][k], self, seen))
			return true;
	return false;
}

static bool ref_cycle(const struct graph *g, int64_t self, const int64_t *t, size_t n)
{
	bool seen[NODES] = { false };
	for (size_t i = 0; i < n; i++)
		if (reaches(g, t[i], self, seen))
			return true;
	return false;
}

/* The path the check gives is a real cycle: self, then edges, to self. */
static void check_path(const struct graph *g, int64_t self, const int64_t *t, size_t nt,
		       const int64_t *path, size_t np)
{
	assert_true(np >= 2);
	assert_int_equal(path[0], self);
	assert_int_equal(path[np - 1], self);
	bool first = false;
	for (size_t i = 0; i < nt; i++)
		first = first || t[i] == path[1];
	assert_true(first);
	for (size_t i = 1; i + 1 < np; i++) {
		bool edge = false;
		for (size_t k = 0; k < g->n[path[i]]; k++)
			edge = edge || g->edge[path[i]][k] == path[i + 1];
		assert_true(edge);
	}
}

static void test_cycles(void **state)
{
	(void)state;
	static struct graph g;
	int64_t path[16];
	size_t np = 99;
	memset(&g, 0, sizeof(g));
	/* nothing stored: only self among the targets is a cycle */
	int64_t t1[] = { 1 };
	assert_int_equal(jf_deps_cycle(9, t1, 1, edges, &g, path, 16, &np), JF_OK);
	assert_int_equal(np, 0);
	int64_t self[] = { 1, 9 };
	assert_int_equal(jf_deps_cycle(9, self, 2, edges, &g, path, 16, &np), JF_EINVAL);
	assert_int_equal(np, 2);
	assert_int_equal(path[0], 9);
	assert_int_equal(path[1], 9);
	/* a cycle of 2: 1 after 2 stored, 2 now after 1 */
	add_edge(&g, 1, 2);
	int64_t t2[] = { 1 };
	assert_int_equal(jf_deps_cycle(2, t2, 1, edges, &g, path, 16, &np), JF_EINVAL);
	assert_int_equal(np, 3);
	assert_int_equal(path[0], 2);
	assert_int_equal(path[1], 1);
	assert_int_equal(path[2], 2);
	/* a cycle of 3: 3 after 4, 4 after 5; 5 now after 3 */
	add_edge(&g, 3, 4);
	add_edge(&g, 4, 5);
	int64_t t3[] = { 7, 3 };
	assert_int_equal(jf_deps_cycle(5, t3, 2, edges, &g, path, 16, &np), JF_EINVAL);
	assert_int_equal(np, 4);
	assert_int_equal(path[1], 3);
	assert_int_equal(path[2], 4);
	assert_int_equal(path[3], 5);
	/* truncated to the room given, self first */
	assert_int_equal(jf_deps_cycle(5, t3, 2, edges, &g, path, 2, &np), JF_EINVAL);
	assert_int_equal(np, 2);
	assert_int_equal(path[0], 5);
	assert_int_equal(path[1], 3);
	/* a diamond is no cycle: 10 after 11 and 12, both after 13 */
	add_edge(&g, 10, 11);
	add_edge(&g, 10, 12);
	add_edge(&g, 11, 13);
	add_edge(&g, 12, 13);
	int64_t t4[] = { 10 };
	assert_int_equal(jf_deps_cycle(14, t4, 1, edges, &g, path, 16, &np), JF_OK);
	/* each node is asked once: 10, 11, 12, 13 */
	g.asked = 0;
	assert_int_equal(jf_deps_cycle(14, t4, 1, edges, &g, path, 16, &np), JF_OK);
	assert_int_equal(g.asked, 4);
	/* a cycle stored already (an old database) that does not reach the
	 * new node: the walk still ends */
	add_edge(&g, 20, 21);
	add_edge(&g, 21, 20);
	int64_t t5[] = { 20 };
	assert_int_equal(jf_deps_cycle(22, t5, 1, edges, &g, path, 16, &np), JF_OK);
	/* the shortest way back is the one shown: 30 -> 31 -> 32 (long) and
	 * 30 -> 32 (short); 32 after 33 (new) */
	add_edge(&g, 30, 31);
	add_edge(&g, 31, 34);
	add_edge(&g, 34, 33);
	add_edge(&g, 30, 33);
	int64_t t6[] = { 30 };
	assert_int_equal(jf_deps_cycle(33, t6, 1, edges, &g, path, 16, &np), JF_EINVAL);
	assert_int_equal(np, 3);
	check_path(&g, 33, t6, 1, path, np);
	/* more targets than the first answer has room for: asked again */
	for (int64_t k = 40; k < 60; k++)
		add_edge(&g, 39, k);
	add_edge(&g, 59, 61);
	int64_t t7[] = { 39 };
	assert_int_equal(jf_deps_cycle(61, t7, 1, edges, &g, path, 16, &np), JF_EINVAL);
	check_path(&g, 61, t7, 1, path, np);
}

/* Random graphs against the reference. */
static void test_cycles_random(void **state)
{
	(void)state;
	static struct graph g;
	unsigned seed = 12345;
	for (int round = 0; round < 300; round++) {
		memset(&g, 0, sizeof(g));
		int nodes = 4 + (int)(seed % 20);
		for (int a = 0; a < nodes; a++) {
			seed = seed * 1103515245u + 12345u;
			int ne = (int)((seed >> 16) % 3);
			for (int k = 0; k < ne; k++) {
				seed = seed * 1103515245u + 12345u;
				add_edge(&g, a, (int64_t)((seed >> 16) % (unsigned)nodes));
			}
		}
		seed = seed * 1103515245u + 12345u;
		int64_t self = (int64_t)((seed >> 16) % (unsigned)nodes);
		int64_t t[3];
		size_t nt = 1 + (seed >> 8) % 3;
		for (size_t i = 0; i < nt; i++) {
			seed = seed * 1103515245u + 12345u;
			t[i] = (int64_t)((seed >> 16) % (unsigned)nodes);
		}
		int64_t path[NODES + 2];
		size_t np = 0;
		enum jf_err rc = jf_deps_cycle(self, t, nt, edges, &g, path, NODES + 2, &np);
		assert_int_equal(rc == JF_EINVAL, ref_cycle(&g, self, t, nt));
		if (rc == JF_EINVAL)
			check_path(&g, self, t, nt, path, np);
		else
			assert_int_equal(rc, JF_OK);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_native_entries), cmocka_unit_test(test_native_errors),
		cmocka_unit_test(test_k8s_annotation), cmocka_unit_test(test_eval),
		cmocka_unit_test(test_cycles),         cmocka_unit_test(test_cycles_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
