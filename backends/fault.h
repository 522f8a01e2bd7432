/*
 * fault.h - fault points for the crash tests.
 *
 * JOBFS_FAULT=POINT:N names one point and a count: jf_fault_hit(POINT)
 * answers true the Nth time it is called for that point, and false at
 * every other call (and always when JOBFS_FAULT is unset or names another
 * point).  What a hit does is the caller's: most points kill the daemon
 * (SIGKILL, as a crash would); "touch-hold" holds the notifier's open of
 * a file on the mount unanswered (fs/ops_file.c).
 */
#ifndef JF_FAULT_H
#define JF_FAULT_H

#include <stdbool.h>

bool jf_fault_hit(const char *point);

#endif
