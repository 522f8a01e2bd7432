/*
 * room.c - the throttle arithmetic of room.h.
 */
#include "core/room.h"

int64_t jf_room_held(const struct jf_room_batch *b)
{
	if (b->unfinished <= 0)
		return 0;
	return b->throttle > 0 && b->throttle < b->unfinished ? b->throttle : b->unfinished;
}

int64_t jf_room_left(const struct jf_room_batch *b, size_t n, int64_t limit)
{
	if (limit == INT64_MAX)
		return INT64_MAX;
	int64_t held = 0;
	for (size_t i = 0; i < n; i++) {
		held += jf_room_held(&b[i]);
		if (held >= limit)
			return 0;
	}
	return limit - held;
}

int64_t jf_room_grow(struct jf_room_batch *b, size_t n, int64_t cap, int64_t room)
{
	for (size_t i = 0; i < n && room > 0; i++) {
		if (b[i].throttle <= 0 || b[i].throttle >= b[i].unfinished)
			continue; /* no limit, or every task of it may run already */
		int64_t want = b[i].unfinished;
		if (cap > 0 && want > cap)
			want = cap;
		int64_t inc = want - b[i].throttle;
		if (inc > room)
			inc = room;
		if (inc <= 0)
			continue;
		b[i].throttle += inc;
		room -= inc;
	}
	return room;
}

int64_t jf_room_new_throttle(int64_t n, int64_t room)
{
	return room < n ? room : 0;
}
