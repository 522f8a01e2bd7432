/*
 * test_room.c - the throttle arithmetic a scheduling backend's batches are
 * kept within (core/room.c): the rules, then a property test that drives a
 * group through random batches, ends, retries and throttle raises and
 * checks after every step that the batches together can never run more
 * than the parallelism, that throttles never fall, and that room left
 * unused means nothing could use it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/room.h"

static void test_held_and_left(void **state)
{
	(void)state;
	struct jf_room_batch b[] = { { 3, 10 }, { 0, 4 }, { 5, 2 }, { 2, 0 } };
	assert_int_equal(jf_room_held(&b[0]), 3);
	assert_int_equal(jf_room_held(&b[1]), 4); /* no throttle: all of it */
	assert_int_equal(jf_room_held(&b[2]), 2); /* fewer left than the throttle */
	assert_int_equal(jf_room_held(&b[3]), 0);
	assert_int_equal(jf_room_left(b, 4, 10), 1);
	assert_int_equal(jf_room_left(b, 4, 9), 0);
	assert_int_equal(jf_room_left(b, 4, 5), 0); /* over: never negative */
	assert_int_equal(jf_room_left(b, 4, INT64_MAX), INT64_MAX);
	assert_int_equal(jf_room_left(NULL, 0, 7), 7);
}

static void test_grow(void **state)
{
	(void)state;
	struct jf_room_batch b[] = { { 2, 10 }, { 1, 3 }, { 0, 5 } };
	/* parallelism 4, room 3: the first batch to 4 (its cap), then 1 left */
	assert_int_equal(jf_room_grow(b, 3, 4, 3), 0);
	assert_int_equal(b[0].throttle, 4);
	assert_int_equal(b[1].throttle, 2);
	assert_int_equal(b[2].throttle, 0); /* no limit stays none */
	/* a batch whose throttle covers its unfinished needs nothing */
	struct jf_room_batch c[] = { { 5, 3 } };
	assert_int_equal(jf_room_grow(c, 1, 10, 4), 4);
	assert_int_equal(c[0].throttle, 5);
	/* without a cap it grows to its unfinished */
	struct jf_room_batch d[] = { { 1, 6 } };
	assert_int_equal(jf_room_grow(d, 1, 0, 100), 95);
	assert_int_equal(d[0].throttle, 6);
}

static void test_new_throttle(void **state)
{
	(void)state;
	assert_int_equal(jf_room_new_throttle(3, 10), 0); /* all fit: no limit */
	assert_int_equal(jf_room_new_throttle(10, 10), 0);
	assert_int_equal(jf_room_new_throttle(11, 10), 10);
	assert_int_equal(jf_room_new_throttle(1000, 1), 1);
}

/* ---- property: a group of T tasks at parallelism P ---- */

#define MAXB 64

struct model {
	struct jf_room_batch b[MAXB];
	int64_t running[MAXB]; /* of each batch's unfinished, how many run */
	size_t n;
	int64_t waiting; /* tasks in no batch */
	int64_t p;
};

static uint64_t rng = 88172645463325252ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int64_t held_sum(const struct model *m)
{
	int64_t h = 0;
	for (size_t i = 0; i < m->n; i++)
		h += jf_room_held(&m->b[i]);
	return h;
}

static int64_t running_sum(const struct model *m)
{
	int64_t r = 0;
	for (size_t i = 0; i < m->n; i++)
		r += m->running[i];
	return r;
}

/* What the engine's pass does: grow, then new batches into what is left. */
static void pass(struct model *m)
{
	int64_t was[MAXB];
	for (size_t i = 0; i < m->n; i++)
		was[i] = m->b[i].throttle;
	int64_t room = jf_room_left(m->b, m->n, m->p);
	room = jf_room_grow(m->b, m->n, m->p, room);
	for (size_t i = 0; i < m->n; i++)
		assert_true(m->b[i].throttle >= was[i]);
	while (room > 0 && m->waiting > 0 && m->n < MAXB) {
		int64_t take = m->waiting < 50 ? m->waiting : 50; /* a batch spans 50 at most */
		int64_t t = jf_room_new_throttle(take, room);
		m->b[m->n] = (struct jf_room_batch){ t, take };
		m->running[m->n] = 0;
		m->n++;
		m->waiting -= take;
		room -= t ? t : take;
	}
	assert_true(held_sum(m) <= m->p);
	/* unused room: every batch already runs all it may */
	if (jf_room_left(m->b, m->n, m->p) > 0) {
		for (size_t i = 0; i < m->n; i++) {
			int64_t want = m->b[i].unfinished < m->p ? m->b[i].unfinished : m->p;
			assert_true(jf_room_held(&m->b[i]) >= want || m->b[i].throttle == 0);
		}
		assert_true(m->waiting == 0 || m->n == MAXB);
	}
}

/* What the backend does: start what a batch's throttle allows. */
static void backend_starts(struct model *m)
{
	for (size_t i = 0; i < m->n; i++) {
		int64_t may = jf_room_held(&m->b[i]);
		while (m->running[i] < may && (next() % 3))
			m->running[i]++;
	}
	assert_true(running_sum(m) <= m->p);
}

static void one_end(struct model *m)
{
	size_t k = (size_t)(next() % (m->n ? m->n : 1));
	if (m->n == 0 || m->running[k] == 0)
		return;
	m->running[k]--;
	m->b[k].unfinished--;
	if (next() % 5 == 0)
		m->waiting++; /* it failed: a retry goes in a later batch */
}

static void test_property(void **state)
{
	(void)state;
	for (int round = 0; round < 3000; round++) {
		struct model m;
		memset(&m, 0, sizeof(m));
		m.p = 1 + (int64_t)(next() % 20);
		m.waiting = 1 + (int64_t)(next() % 300);
		for (int step = 0; step < 2000; step++) {
			switch (next() % 4) {
			case 0:
				pass(&m);
				break;
			case 1:
				backend_starts(&m);
				break;
			default:
				one_end(&m);
				break;
			}
			assert_true(running_sum(&m) <= m.p);
			assert_true(held_sum(&m) <= m.p);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_held_and_left),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_new_throttle),
		cmocka_unit_test(test_property),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
