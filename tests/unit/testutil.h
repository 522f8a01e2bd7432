/*
 * testutil.h - what the unit tests share: clocks, the shim under test,
 * temporary directories, files.
 *
 * Helpers that can fail the test do so with cmocka's fail_msg(), naming
 * the path; the others return NULL or false.  Linked into every unit test
 * (tests/unit/meson.build).
 */
#ifndef JF_TESTUTIL_H
#define JF_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int64_t jft_wall_ms(void); /* CLOCK_REALTIME, ms since the epoch */
int64_t jft_mono_ms(void); /* CLOCK_MONOTONIC, ms */

/* $JOBFS_SHIM (meson test sets it), else the one in this build tree; fails
 * the test when there is none. */
const char *jft_shim_path(void);

/* /dev/shm when it is writable (the store fsyncs every commit: in memory
 * tests run faster), else $TMPDIR, else /tmp. */
const char *jft_tmp_base(void);
/* mkdtemp BASE/PREFIX-XXXXXX into buf (n bytes); fails the test if it cannot. */
void jft_mkdtemp(char *buf, size_t n, const char *base, const char *prefix);
/* rm -rf dir; nothing when it is not there. */
void jft_rmtree(const char *dir);

/* The whole file, NUL-terminated (malloc'd), or NULL when it cannot be read. */
char *jft_read_file(const char *path);
/* The same, of DIR/NAME. */
char *jft_read_in(const char *dir, const char *name);
/* Write text to path (truncating); fails the test if it cannot. */
void jft_write_file(const char *path, const char *text);
bool jft_exists(const char *path); /* lstat() finds it */
/* Wait (polling, bounded by timeout_ms) until path exists; fails the test
 * otherwise. */
void jft_wait_file(const char *path, int timeout_ms);

#endif
