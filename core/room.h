/*
 * room.h - how much of a group a scheduling backend may run at once, when
 * the group's tasks are spread over several batches (Slurm job arrays)
 * that each carry a throttle (most elements running at once).
 *
 * A batch can run at most min(throttle, unfinished) tasks (throttle 0: no
 * limit, all its unfinished tasks).  The invariant the engine keeps:
 *
 *     sum over the group's batches of min(throttle, unfinished) <= room
 *
 * where room is the group's parallelism, less what the queue's capacity
 * does not leave it.  Unfinished counts only fall (tasks end or leave a
 * batch), so the sum can only fall by itself; throttles are only raised,
 * into room that opened, and a new batch gets at most what is left.  Pure:
 * no I/O, no allocation.
 */
#ifndef JF_ROOM_H
#define JF_ROOM_H

#include <stddef.h>
#include <stdint.h>

struct jf_room_batch {
	int64_t throttle;   /* 0 = no limit */
	int64_t unfinished; /* its tasks waiting or running */
};

/* What batch b can run at most. */
int64_t jf_room_held(const struct jf_room_batch *b);
/* The room left in limit (parallelism, or a queue's share; INT64_MAX for
 * none) once the batches hold what they hold; never below 0. */
int64_t jf_room_left(const struct jf_room_batch *b, size_t n, int64_t limit);
/* Raise throttles into room, batch by batch in order, each at most to
 * min(cap, unfinished) (cap: the parallelism, 0 = none); returns the room
 * left.  b[i].throttle is changed in place; a throttle never falls. */
int64_t jf_room_grow(struct jf_room_batch *b, size_t n, int64_t cap, int64_t room);
/* The throttle for a new batch of n tasks with room (> 0) left: 0 (no
 * limit) when all n fit, else room. */
int64_t jf_room_new_throttle(int64_t n, int64_t room);

#endif
