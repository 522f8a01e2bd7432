/*
 * grow.h - room in a growable array.
 *
 *     if (!jf_grow(&v, &cap, n + 1, sizeof(*v)))
 *             return JF_ENOMEM;
 *     v[n++] = x;
 *
 * jf_grow() makes *cap at least need, doubling it (from JF_GROW_MIN), and
 * reallocates the array *arr points at to hold *cap items of size bytes.
 * It returns false, and changes neither, when memory runs out or the size
 * would overflow.  arr is the address of the array's pointer, of any type.
 */
#ifndef JF_GROW_H
#define JF_GROW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define JF_GROW_MIN 16

static inline bool jf_grow(void *arr, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap : JF_GROW_MIN;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return false;
		n *= 2;
	}
	if (size && n > SIZE_MAX / size)
		return false;
	void *old;
	memcpy(&old, arr, sizeof(old)); /* the caller's pointer, whatever its type */
	void *p = realloc(old, n * size);
	if (!p)
		return false;
	memcpy(arr, &p, sizeof(p));
	*cap = n;
	return true;
}

#endif
