/*
 * testclock.h - the daemon's clock for tests (`jobfs --test-clock FILE`):
 * the real clock plus a number of seconds read from FILE, so that an
 * integration test can move the daemon a day ahead (a budget period rolls
 * over) without waiting a day.
 *
 * FILE holds seconds, whole or with up to three decimals ("86400",
 * "90.5"), surrounded by blanks or not.  The engine's tick looks at its
 * mtime (struct jf_clock's refresh) and reads it again when that changed:
 * a larger number moves the clock ahead at once, everything that reads it
 * (deadlines, billing, the tree's times) together; a smaller one, or text
 * that is not a number, is ignored with a line on stderr, so time never
 * goes backwards.  now_ms and skew_ms may be called from any thread.
 */
#ifndef JF_TESTCLOCK_H
#define JF_TESTCLOCK_H

#include "core/err.h"
#include "engine/engine.h"

struct jf_testclock;

/* Read FILE once (it must hold a number of seconds, 0 or more). */
enum jf_err jf_testclock_new(const char *path, struct jf_testclock **out, struct jf_error *err);
/* After the engine that uses it is freed. */
void jf_testclock_free(struct jf_testclock *c);
/* The engine's clock over c (engine.h: now_ms, skew_ms, refresh). */
struct jf_clock jf_testclock_clock(struct jf_testclock *c);
/* "86400", " 90.5\n" -> milliseconds; false for anything else. */
bool jf_testclock_parse(const char *text, int64_t *ms);

#endif
