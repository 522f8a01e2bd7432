/*
 * idmap.c - linear probing, rehashed at 50% load including tombstones:
 * doubled when a quarter or more is live, else kept at its size.
 */
#include "engine/idmap.h"

#include <stdlib.h>

#define EMPTY   0
#define DELETED (-1)

void jf_idmap_init(struct jf_idmap *m)
{
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->used = m->live = 0;
}

void jf_idmap_release(struct jf_idmap *m)
{
	free(m->keys);
	free(m->vals);
	jf_idmap_init(m);
}

static size_t slot_of(int64_t key, size_t cap)
{
	uint64_t h = (uint64_t)key * UINT64_C(0x9E3779B97F4A7C15);
	return (size_t)(h >> 17) & (cap - 1);
}

void *jf_idmap_get(const struct jf_idmap *m, int64_t key)
{
	if (!m->cap || key <= 0)
		return NULL;
	for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == EMPTY)
			return NULL;
		if (m->keys[i] == key)
			return m->vals[i];
	}
}

static bool grow(struct jf_idmap *m)
{
	/* mostly tombstones: rehash at the same size, so that churn on a
	 * small live set does not double the table again and again */
	size_t ncap = m->cap ? m->cap : 64;
	if (m->live * 4 >= ncap)
		ncap *= 2;
	while ((m->live + 1) * 2 > ncap)
		ncap *= 2;
	int64_t *keys = calloc(ncap, sizeof(*keys));
	void **vals = calloc(ncap, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return false;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (m->keys[i] <= 0)
			continue;
		size_t j = slot_of(m->keys[i], ncap);
		while (keys[j] != EMPTY)
			j = (j + 1) & (ncap - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = ncap;
	m->used = m->live;
	return true;
}

bool jf_idmap_put(struct jf_idmap *m, int64_t key, void *val)
{
	if (key <= 0)
		return false;
	if ((m->used + 1) * 2 > m->cap && !grow(m))
		return false;
	size_t tomb = m->cap;
	for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return true;
		}
		if (m->keys[i] == DELETED && tomb == m->cap)
			tomb = i;
		if (m->keys[i] == EMPTY) {
			if (tomb != m->cap)
				i = tomb;
			else
				m->used++;
			m->keys[i] = key;
			m->vals[i] = val;
			m->live++;
			return true;
		}
	}
}

void *jf_idmap_del(struct jf_idmap *m, int64_t key)
{
	if (!m->cap || key <= 0)
		return NULL;
	for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == EMPTY)
			return NULL;
		if (m->keys[i] == key) {
			void *v = m->vals[i];
			m->keys[i] = DELETED;
			m->vals[i] = NULL;
			m->live--;
			return v;
		}
	}
}

bool jf_idmap_next(const struct jf_idmap *m, size_t *i, int64_t *key, void **val)
{
	for (; *i < m->cap; (*i)++) {
		if (m->keys[*i] > 0) {
			*key = m->keys[*i];
			*val = m->vals[*i];
			(*i)++;
			return true;
		}
	}
	return false;
}
