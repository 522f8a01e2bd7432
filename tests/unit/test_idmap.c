/*
 * test_idmap.c - engine/idmap.h, the id -> pointer hash map, against a
 * plain array indexed by key as the reference.
 *
 * Random put/replace/get/del over 100,000 keys (seeded, so a failure
 * repeats), with growth from empty and many tombstones; after each phase
 * every key is checked and an iteration must visit each live key exactly
 * once with its value.  Keys <= 0 are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/idmap.h"

#define NKEYS 100000

/* xorshift64*: deterministic, independent of libc's rand(). */
static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(0x2545F4914F6CDD1D);
}

/* Distinct non-NULL pointers to stand for values: &vals[k]. */
static char vals[NKEYS + 1][2];

/* Check the map against ref[1..NKEYS] (NULL = absent) completely. */
static void check_all(const struct jf_idmap *m, void *const *ref)
{
	size_t live = 0;
	for (int64_t k = 1; k <= NKEYS; k++) {
		assert_ptr_equal(jf_idmap_get(m, k), ref[k]);
		if (ref[k])
			live++;
	}
	assert_int_equal(m->live, live);

	unsigned char *seen = calloc(NKEYS + 1, 1);
	assert_non_null(seen);
	size_t i = 0, visited = 0;
	int64_t key;
	void *val;
	while (jf_idmap_next(m, &i, &key, &val)) {
		assert_true(key >= 1 && key <= NKEYS);
		assert_int_equal(seen[key], 0);
		seen[key] = 1;
		assert_non_null(ref[key]);
		assert_ptr_equal(val, ref[key]);
		visited++;
	}
	assert_int_equal(visited, live);
	free(seen);
}

static void test_empty(void **state)
{
	(void)state;
	struct jf_idmap m;
	jf_idmap_init(&m);
	assert_null(jf_idmap_get(&m, 1));
	assert_null(jf_idmap_del(&m, 1));
	size_t i = 0;
	int64_t k;
	void *v;
	assert_false(jf_idmap_next(&m, &i, &k, &v));
	/* keys must be > 0 */
	assert_false(jf_idmap_put(&m, 0, vals[0]));
	assert_false(jf_idmap_put(&m, -1, vals[0]));
	assert_null(jf_idmap_get(&m, 0));
	assert_null(jf_idmap_get(&m, -1));
	jf_idmap_release(&m);
	jf_idmap_release(&m); /* twice is harmless */
}

static void test_random(void **state)
{
	(void)state;
	void **ref = calloc(NKEYS + 1, sizeof(*ref));
	assert_non_null(ref);
	struct jf_idmap m;
	jf_idmap_init(&m);
	rng_state = UINT64_C(0x9E3779B97F4A7C15);

	/* phase 1: insert every key in a random order (grows from empty) */
	int64_t *order = malloc(NKEYS * sizeof(*order));
	assert_non_null(order);
	for (int64_t k = 0; k < NKEYS; k++)
		order[k] = k + 1;
	for (int64_t k = NKEYS - 1; k > 0; k--) {
		int64_t j = (int64_t)(rng() % (uint64_t)(k + 1));
		int64_t t = order[k];
		order[k] = order[j];
		order[j] = t;
	}
	for (int64_t n = 0; n < NKEYS; n++) {
		int64_t k = order[n];
		assert_true(jf_idmap_put(&m, k, vals[k]));
		ref[k] = vals[k];
	}
	check_all(&m, ref);

	/* phase 2: delete about half, leaving tombstones */
	for (int64_t k = 1; k <= NKEYS; k++) {
		if (rng() & 1) {
			assert_ptr_equal(jf_idmap_del(&m, k), ref[k]);
			ref[k] = NULL;
			assert_null(jf_idmap_del(&m, k));
		}
	}
	check_all(&m, ref);

	/* phase 3: a random mix; values replaced in place too */
	for (int step = 0; step < 4 * NKEYS; step++) {
		int64_t k = 1 + (int64_t)(rng() % NKEYS);
		switch (rng() % 4) {
		case 0:
		case 1: {
			void *v = vals[(int64_t)(rng() % NKEYS) + 1];
			assert_true(jf_idmap_put(&m, k, v));
			ref[k] = v;
			break;
		}
		case 2:
			assert_ptr_equal(jf_idmap_del(&m, k), ref[k]);
			ref[k] = NULL;
			break;
		default:
			assert_ptr_equal(jf_idmap_get(&m, k), ref[k]);
			break;
		}
		if (step % 50000 == 0)
			assert_true(m.used * 2 <= m.cap);
	}
	check_all(&m, ref);

	/* keys outside the range are absent */
	assert_null(jf_idmap_get(&m, NKEYS + 1));
	assert_null(jf_idmap_get(&m, INT64_MAX));

	/* phase 4: delete everything, then the map still works */
	for (int64_t k = 1; k <= NKEYS; k++) {
		assert_ptr_equal(jf_idmap_del(&m, k), ref[k]);
		ref[k] = NULL;
	}
	check_all(&m, ref);
	assert_true(jf_idmap_put(&m, 7, vals[7]));
	ref[7] = vals[7];
	check_all(&m, ref);

	jf_idmap_release(&m);
	free(order);
	free(ref);
}

/* Churn on a small working set: tombstones must not fill the table (a get
 * of a missing key would then never meet an empty slot). */
static void test_tombstone_churn(void **state)
{
	(void)state;
	struct jf_idmap m;
	jf_idmap_init(&m);
	for (int64_t k = 1; k <= 1000000; k++) {
		assert_true(jf_idmap_put(&m, k, vals[k % NKEYS]));
		if (k > 3)
			assert_ptr_equal(jf_idmap_del(&m, k - 3), vals[(k - 3) % NKEYS]);
		assert_true(m.used < m.cap);
	}
	assert_int_equal(m.live, 3);
	/* the table's size follows the live keys, not the churn */
	assert_true(m.cap <= 1024);
	assert_null(jf_idmap_get(&m, 5));
	assert_ptr_equal(jf_idmap_get(&m, 1000000), vals[1000000 % NKEYS]);
	jf_idmap_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_tombstone_churn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
