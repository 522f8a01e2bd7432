/*
 * loop.h - the daemon's one event loop: fd sources, timers, a deferred
 * job and before-sleep hooks (in the spirit of redis's ae.h).
 *
 * One thread.  A turn of the loop:
 *   1. waits for the sources (epoll), no longer than the earliest timer,
 *      and not at all while the deferred job is pending;
 *   2. serves the ready fd sources, the JF_LOOP_FIRST ones before the
 *      others (the daemon's FUSE channel: requests come first);
 *   3. runs every timer whose time has come (a timer fires once per arm:
 *      its callback arms it again if it wants to);
 *   4. runs the deferred job (the engine's scheduling pass) if it is
 *      pending and no FIRST source is ready, or if it has waited
 *      max_delay_ms under a steady stream of them;
 *   5. when nothing of 2-4 happened, calls the before-sleep hooks in the
 *      order they were added, until one reports that it made work.
 *
 * Time.  By default the loop keeps CLOCK_MONOTONIC time and sleeps in
 * epoll_wait.  With a virtual clock (jobfs-sim, tests) it never sleeps: a
 * turn polls without waiting, and when a turn found nothing to do and no
 * hook made work, the loop moves the clock to the earliest armed timer
 * (clock->advance) and turns again.  With no timer armed, the run ends.
 * An instant that never settles (more than JF_LOOP_INSTANT_MAX turns
 * without the virtual clock moving) ends the run with JF_LOOP_STUCK.
 *
 * The engine asks jf_loop_first_waiting() between small steps of its own
 * work and stops there when a request waits (engine.h: yielding).
 */
#ifndef JF_LOOP_H
#define JF_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct jf_loop;

enum jf_loop_prio {
	JF_LOOP_FIRST, /* served before every other source */
	JF_LOOP_NEXT,
};

struct jf_loop_clock {
	int64_t (*now_ms)(void *ctx);
	void (*advance)(void *ctx, int64_t to_ms); /* move now to to_ms (> now) */
	void *ctx;
};

typedef void jf_loop_fn(struct jf_loop *l, void *ctx);
/* A before-sleep hook: true when it made work for this instant. */
typedef bool jf_loop_hook_fn(struct jf_loop *l, void *ctx);

/* NULL clock: real time.  Returns NULL when out of memory or epoll fails. */
struct jf_loop *jf_loop_new(const struct jf_loop_clock *virt);
void jf_loop_free(struct jf_loop *l);
bool jf_loop_virtual(const struct jf_loop *l);
/* Milliseconds on the loop's clock (monotonic, or the virtual clock's). */
int64_t jf_loop_now(struct jf_loop *l);

/* fn(l, ctx) runs in every turn where fd is readable.  0, or -1 (errno). */
int jf_loop_add_fd(struct jf_loop *l, int fd, enum jf_loop_prio prio, jf_loop_fn *fn, void *ctx);

/* A timer, disarmed; returns its id (>= 0) or -1 (out of memory). */
int jf_loop_add_timer(struct jf_loop *l, jf_loop_fn *fn, void *ctx);
/* Fire at at_ms on the loop's clock; -1 disarms.  Timers due at the same
 * time fire in the order they were added. */
void jf_loop_arm(struct jf_loop *l, int timer, int64_t at_ms);
int64_t jf_loop_armed_at(const struct jf_loop *l, int timer); /* -1 disarmed */
/* The earliest armed timer, -1 none. */
int64_t jf_loop_next_at(const struct jf_loop *l);

/* The deferred job: pending(ctx) says whether it wants to run; run(ctx,
 * overdue) runs it (overdue: it waited max_delay_ms for requests). */
void jf_loop_set_deferred(struct jf_loop *l, bool (*pending)(void *ctx),
			  void (*run)(void *ctx, bool overdue), void *ctx, int64_t max_delay_ms);

int jf_loop_add_before_sleep(struct jf_loop *l, jf_loop_hook_fn *fn, void *ctx);

/* The longest turn so far, in microseconds of the loop's monotonic time
 * (real time only: 0 on a virtual clock): how long a request that came
 * at the start of a turn waited at most before the loop looked again. */
int64_t jf_loop_longest_turn_us(const struct jf_loop *l);

/* Is a JF_LOOP_FIRST source readable now? */
bool jf_loop_first_waiting(struct jf_loop *l);

#define JF_LOOP_INSTANT_MAX 2000000L /* the default; jf_loop_set_instant_max */
void jf_loop_set_instant_max(struct jf_loop *l, long turns);
enum { JF_LOOP_STOPPED = 0, JF_LOOP_IDLE = 1, JF_LOOP_STUCK = 2, JF_LOOP_ERROR = -1 };
/* Turn until jf_loop_stop(); with a virtual clock also until nothing is
 * armed (JF_LOOP_IDLE) or an instant does not settle (JF_LOOP_STUCK).
 * JF_LOOP_ERROR: epoll failed (errno). */
int jf_loop_run(struct jf_loop *l);
void jf_loop_stop(struct jf_loop *l);

#endif
