/*
 * loop.c - the event loop (loop.h).
 *
 * Few sources and timers (the daemon has five fds and three timers), so
 * both live in small arrays and the earliest timer is found by a scan.
 */
#include "engine/loop.h"

#include "core/grow.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define LOOP_EVENTS 16

struct src {
	int fd;
	enum jf_loop_prio prio;
	jf_loop_fn *fn;
	void *ctx;
};

struct timer {
	int64_t at; /* -1 disarmed */
	jf_loop_fn *fn;
	void *ctx;
};

struct hook {
	jf_loop_hook_fn *fn;
	void *ctx;
};

struct jf_loop {
	int epfd;
	bool stop;
	bool virt;
	struct jf_loop_clock clock;
	struct src *srcs;
	size_t nsrcs, capsrcs;
	struct timer *timers;
	size_t ntimers, captimers;
	struct hook *hooks;
	size_t nhooks, caphooks;
	bool (*def_pending)(void *ctx);
	void (*def_run)(void *ctx, bool overdue);
	void *def_ctx;
	int64_t def_max;
	int64_t def_asked; /* when the pending job was first seen, -1 none */
	long instant_max;
	int64_t longest_us; /* the longest turn (real time) */
};

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct jf_loop *jf_loop_new(const struct jf_loop_clock *virt)
{
	struct jf_loop *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		free(l);
		return NULL;
	}
	if (virt) {
		l->virt = true;
		l->clock = *virt;
	}
	l->def_asked = -1;
	l->instant_max = JF_LOOP_INSTANT_MAX;
	return l;
}

void jf_loop_free(struct jf_loop *l)
{
	if (!l)
		return;
	close(l->epfd);
	free(l->srcs);
	free(l->timers);
	free(l->hooks);
	free(l);
}

void jf_loop_set_instant_max(struct jf_loop *l, long turns)
{
	l->instant_max = turns > 0 ? turns : JF_LOOP_INSTANT_MAX;
}

bool jf_loop_virtual(const struct jf_loop *l)
{
	return l->virt;
}

int64_t jf_loop_now(struct jf_loop *l)
{
	return l->virt ? l->clock.now_ms(l->clock.ctx) : mono_ms();
}

int jf_loop_add_fd(struct jf_loop *l, int fd, enum jf_loop_prio prio, jf_loop_fn *fn, void *ctx)
{
	if (!jf_grow(&l->srcs, &l->capsrcs, l->nsrcs + 1, sizeof(*l->srcs))) {
		errno = ENOMEM;
		return -1;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)l->nsrcs };
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -1;
	l->srcs[l->nsrcs++] = (struct src){ fd, prio, fn, ctx };
	return 0;
}

int jf_loop_add_timer(struct jf_loop *l, jf_loop_fn *fn, void *ctx)
{
	if (!jf_grow(&l->timers, &l->captimers, l->ntimers + 1, sizeof(*l->timers))) {
		errno = ENOMEM;
		return -1;
	}
	l->timers[l->ntimers] = (struct timer){ -1, fn, ctx };
	return (int)l->ntimers++;
}

void jf_loop_arm(struct jf_loop *l, int timer, int64_t at_ms)
{
	if (timer >= 0 && (size_t)timer < l->ntimers)
		l->timers[timer].at = at_ms < 0 ? -1 : at_ms;
}

int64_t jf_loop_armed_at(const struct jf_loop *l, int timer)
{
	return timer >= 0 && (size_t)timer < l->ntimers ? l->timers[timer].at : -1;
}

void jf_loop_set_deferred(struct jf_loop *l, bool (*pending)(void *ctx),
			  void (*run)(void *ctx, bool overdue), void *ctx, int64_t max_delay_ms)
{
	l->def_pending = pending;
	l->def_run = run;
	l->def_ctx = ctx;
	l->def_max = max_delay_ms;
	l->def_asked = -1;
}

int jf_loop_add_before_sleep(struct jf_loop *l, jf_loop_hook_fn *fn, void *ctx)
{
	if (!jf_grow(&l->hooks, &l->caphooks, l->nhooks + 1, sizeof(*l->hooks))) {
		errno = ENOMEM;
		return -1;
	}
	l->hooks[l->nhooks++] = (struct hook){ fn, ctx };
	return 0;
}

int64_t jf_loop_longest_turn_us(const struct jf_loop *l)
{
	return l->longest_us;
}

bool jf_loop_first_waiting(struct jf_loop *l)
{
	for (size_t i = 0; i < l->nsrcs; i++) {
		if (l->srcs[i].prio != JF_LOOP_FIRST)
			continue;
		struct pollfd p = { .fd = l->srcs[i].fd, .events = POLLIN };
		if (poll(&p, 1, 0) == 1)
			return true;
	}
	return false;
}

void jf_loop_stop(struct jf_loop *l)
{
	l->stop = true;
}

int64_t jf_loop_next_at(const struct jf_loop *l)
{
	int64_t at = -1;
	for (size_t i = 0; i < l->ntimers; i++)
		if (l->timers[i].at >= 0 && (at < 0 || l->timers[i].at < at))
			at = l->timers[i].at;
	return at;
}

/* Fire the timers due now, earliest first; true when one fired. */
static bool fire_timers(struct jf_loop *l)
{
	bool fired = false;
	int64_t now = jf_loop_now(l);
	for (;;) {
		size_t best = l->ntimers;
		for (size_t i = 0; i < l->ntimers; i++)
			if (l->timers[i].at >= 0 && l->timers[i].at <= now &&
			    (best == l->ntimers || l->timers[i].at < l->timers[best].at))
				best = i;
		if (best == l->ntimers || l->stop)
			return fired;
		/* once per arm: a callback that arms it at <= now fires next turn */
		int64_t was = l->timers[best].at;
		l->timers[best].at = -1;
		l->timers[best].fn(l, l->timers[best].ctx);
		fired = true;
		if (l->timers[best].at >= 0 && l->timers[best].at <= was)
			return fired;
	}
}

int jf_loop_run(struct jf_loop *l)
{
	long turns_here = 0; /* virtual: turns since the clock last moved */
	l->stop = false;
	while (!l->stop) {
		bool pending = l->def_pending && l->def_pending(l->def_ctx);
		if (pending && l->def_asked < 0)
			l->def_asked = jf_loop_now(l);
		int timeout = 0;
		if (!l->virt && !pending) {
			int64_t at = jf_loop_next_at(l), now = mono_ms();
			if (at < 0)
				timeout = -1;
			else if (at > now)
				timeout = (int)(at - now > 60000 ? 60000 : at - now);
		}
		struct epoll_event evs[LOOP_EVENTS];
		int n = epoll_wait(l->epfd, evs, LOOP_EVENTS, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return JF_LOOP_ERROR;
		}
		int64_t turn0 = l->virt ? 0 : mono_us();
		for (int pass = 0; pass < 2; pass++)
			for (int i = 0; i < n && !l->stop; i++) {
				struct src *s = &l->srcs[evs[i].data.u32];
				if ((s->prio == JF_LOOP_FIRST) == (pass == 0))
					s->fn(l, s->ctx);
			}
		bool worked = n > 0;
		if (!l->stop && fire_timers(l))
			worked = true;
		if (pending && !l->stop) {
			bool overdue = jf_loop_now(l) - l->def_asked >= l->def_max;
			if (n == 0 || overdue || !jf_loop_first_waiting(l)) {
				l->def_asked = -1;
				l->def_run(l->def_ctx, overdue);
				worked = true;
			}
		}
		if (!l->virt) {
			int64_t took = mono_us() - turn0;
			if (took > l->longest_us)
				l->longest_us = took;
		}
		if (l->stop)
			break;
		if (l->virt && worked) {
			if (++turns_here > l->instant_max)
				return JF_LOOP_STUCK;
			continue;
		}
		bool made = false;
		for (size_t i = 0; i < l->nhooks && !made && !l->stop; i++)
			made = l->hooks[i].fn(l, l->hooks[i].ctx);
		if (!l->virt || l->stop)
			continue;
		if (made) {
			if (++turns_here > l->instant_max)
				return JF_LOOP_STUCK;
			continue;
		}
		int64_t at = jf_loop_next_at(l), now = jf_loop_now(l);
		if (at < 0)
			return JF_LOOP_IDLE;
		if (at > now) {
			l->clock.advance(l->clock.ctx, at);
			turns_here = 0;
		}
	}
	return JF_LOOP_STOPPED;
}
