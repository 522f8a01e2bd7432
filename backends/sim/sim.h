/*
 * sim.h - the simulated backend: nodes that run in virtual time.
 *
 * No process is started.  A node's run lasts what its spec says and ends
 * on a virtual clock that the caller moves, so the engine's real scheduler
 * can play days of cluster time in seconds (tools/jobfs-sim, tests).
 *
 * The clock: a struct jf_sim_clock holds "now" in milliseconds since the
 * epoch.  Give the engine the same clock (jf_engine_config.clock = {
 * jf_sim_now, &clk }) and the backend a pointer to it; only the driver
 * moves it, forward, with jf_sim_advance().  Start it well after 0 (the
 * store reads 0 as "not set"): JF_SIM_EPOCH_MS is the usual start.
 *
 * What a run does, read from the environment of the node's first container
 * (the product demo's variables, reference 2.1):
 *   RUN_SECONDS   how long the node runs: "600", "0.25" (ms precision) or a
 *                 range "300-900" drawn uniformly in whole seconds from the
 *                 backend's seeded generator; default 60.
 *   EXIT_CODE     the first container's exit code, 0..255; default 0.  The
 *                 other containers end at the same time with 0.
 *   FAIL_PERCENT  0..100: the chance, drawn per run, that the first
 *                 container exits 1 instead of EXIT_CODE; default 0.
 * A value that is not one of these forms makes start() fail with
 * JF_EINVAL and a message naming the variable (the engine records the node
 * as failed to start).  Only ranges and FAIL_PERCENT draw random numbers,
 * so a workload without them does not depend on the seed.
 *
 * A run started at T ends at T + RUN_SECONDS.  signal() ends it now:
 * TERM with exit code 143 (SIGTERM), KILL with 137 (SIGKILL); a run whose
 * end has already come keeps its own end.  Results carry start_ms and
 * end_ms in virtual time, so the ledger bills virtual seconds.
 *
 * Handles are "sim:N", N the run's number (1, 2, ... in start order); the
 * started pid is N as well (there is no process; nothing may signal it).
 * adopt() is not supported (JF_ENOTSUP): a simulation does not outlive the
 * program that runs it.
 *
 * fd(): an eventfd, readable while a run's end is <= now.  The backend
 * cannot see the clock move by itself: move it with jf_sim_advance(), or
 * call jf_sim_due() after changing now_ms by hand, and the fd follows.
 * reap() returns ended runs in order of end time, then start order.
 *
 * jf_sim_new() returns a backend freed with jf_runner_free() (the engine
 * frees the one it was given); the clock is borrowed and must outlive it.
 * The helpers below take any backend and do nothing (return -1 / 0 /
 * false) when it is not a sim backend.
 */
#ifndef JF_SIM_H
#define JF_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/runner.h"

/* 2026-01-01T00:00:00Z */
#define JF_SIM_EPOCH_MS INT64_C(1767225600000)

struct jf_sim_clock {
	int64_t now_ms;
};

/* For jf_clock.now_ms: ctx is the struct jf_sim_clock. */
int64_t jf_sim_now(void *ctx);

struct jf_runner *jf_sim_new(struct jf_sim_clock *clk, struct jf_error *err);

/* Seed of the generator behind RUN_SECONDS ranges and FAIL_PERCENT
 * (default 1).  Same seed, same draws. */
void jf_sim_seed(struct jf_runner *be, uint64_t seed);

/* Move the clock to to_ms (never backwards) and make the fd readable if a
 * run is due. */
void jf_sim_advance(struct jf_runner *be, int64_t to_ms);

/* True when reap() has a run to return (end <= now); syncs the fd. */
bool jf_sim_due(struct jf_runner *be);

/* The earliest end among runs not reaped yet, or -1 if there are none
 * (it may be <= now when a run is due). */
int64_t jf_sim_next_end(struct jf_runner *be);

/* Runs started and not yet reaped. */
size_t jf_sim_running(struct jf_runner *be);

struct jf_sim_stats {
	uint64_t started;   /* runs started */
	uint64_t reaped;    /* runs returned by reap() */
	uint64_t failed;    /* of those, ended by themselves with a non-zero code */
	uint64_t signalled; /* runs ended early by signal() */
};
void jf_sim_stats(struct jf_runner *be, struct jf_sim_stats *out);

#endif
