/*
 * idmap.h - a small open-addressing hash map from int64 ids (> 0) to
 * pointers, for the engine's runtime tables.  The map owns nothing.
 */
#ifndef JF_IDMAP_H
#define JF_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jf_idmap {
	int64_t *keys; /* 0 = empty, -1 = deleted */
	void **vals;
	size_t cap;  /* power of two */
	size_t used; /* live + deleted */
	size_t live;
};

void jf_idmap_init(struct jf_idmap *m);
void jf_idmap_release(struct jf_idmap *m);
void *jf_idmap_get(const struct jf_idmap *m, int64_t key);
/* false only on ENOMEM; replaces an existing value. */
bool jf_idmap_put(struct jf_idmap *m, int64_t key, void *val);
void *jf_idmap_del(struct jf_idmap *m, int64_t key);
/* Iterate: i starts at 0; returns false at the end. */
bool jf_idmap_next(const struct jf_idmap *m, size_t *i, int64_t *key, void **val);

#endif
