/*
 * sim_report.h - jobfs-sim's printed reports, read from the store and the
 * figures of a replay that has ended (the layout is at the top of
 * tools/jobfs_sim.c, OUTPUT and SPOT REPORT).
 *
 * Each function prints one part to stdout, in this order: the events of
 * every group merged in time order (--events), the table of groups and
 * batches in submission order, the cluster's figures, and the spot report
 * (printed only when some group is spot).  Every figure is an integer or
 * a fixed-point string computed from integers, so the same replay prints
 * the same bytes on every machine.  stdout is not flushed here: the
 * caller checks it once at the end.
 *
 * now is the simulated time the replay stopped at; the ledger is summed
 * up to it.  Times print relative to the replay's start r->t0.
 */
#ifndef JF_SIM_REPORT_H
#define JF_SIM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/sim_int.h"

/* A time from the start as the reports print it: "03:25:00",
 * "1d02:00:00", "00:00:00.250" (milliseconds only when not 0); "-" for a
 * negative ms (not set).  The replay's messages use it too. */
void jf_simr_rel_time(int64_t ms, char *buf, size_t n);

/* "events:" and every event of every group, in time order.  0, or -1 when
 * out of memory (nothing, or part of the list, printed). */
int jf_simr_print_events(struct replay *r);
/* One line per group or batch, in submission order. */
void jf_simr_print_groups(struct replay *r, int64_t now);
/* The cluster: span, groups by state, GPU and node figures, runs, ledger. */
void jf_simr_print_cluster(struct replay *r, int64_t now, enum ending how);
/* The queues' budgets (reference 10), when some queue has one: its
 * budget, when it was exhausted and available again (its BudgetExhausted
 * and BudgetAvailable events), and what it had spent at the end.  0, or
 * -1 when out of memory. */
int jf_simr_print_budgets(struct replay *r, int64_t now);
/* The spot report, when there is spot work; overridden: the threshold
 * came from --spot-risk-threshold.  0, or -1 when out of memory. */
int jf_simr_print_spot(struct replay *r, int64_t now, bool overridden);
/* Reference 9.1: each group's wait before its first start, split by the
 * reasons it waited for, then how far the first ETA each basis gave was
 * from the first start (median, p90).  -1 when out of memory. */
int jf_simr_print_why(struct replay *r);

#endif
