/*
 * ctl_fmt.h - the pure helpers of jobfsctl: status parsing, times, the
 * progress bar, tables, the mount point and paths.
 *
 * Nothing here does I/O or reads a clock: text comes in, text goes out,
 * so tests/unit/test_jobfsctl.c checks each on fixed inputs.  Every
 * function writing into a caller's buffer (buf, n) NUL-terminates it and
 * truncates what does not fit.
 */
#ifndef JF_CTL_FMT_H
#define JF_CTL_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What jobfsctl shows of an object's status.json.  Strings are empty when
 * the key is absent; counts are -1 when the object has none. */
struct jc_status {
	char state[24];
	char name[160];
	char message[512];
	char reason[32];
	char eta[40];
	char eta_finish[40];
	char created[40];
	char started[40];
	char finished[40];
	char cost[48];
	char cost_rate[48];
	char cost_estimate[48];
	char progress[40];
	long long cost_micro;
	long long done;  /* progress "done/total", or -1 */
	long long total; /* or -1 */
	long long running, waiting, failed;
	long long attempt, exit_code;
	long long nodes; /* nodes per task (a group, batch, task), or -1 */
	char machine[64];
};

/* Parse status.json text into st; 0, or -1 when it is not a JSON object. */
int jc_status_parse(struct jc_status *st, const char *json_text);

/* Exit code of a finished state: Succeeded 0, Failed 2, Stopped 3,
 * Invalid 1; -1 while it is not finished (nor Invalid). */
int jc_state_exit(const char *state);

/* "[#####.....]" of done/total in width columns (brackets included); with
 * total <= 0 an empty bar. */
void jc_bar(char *buf, size_t n, long long done, long long total, int width);

/* RFC 3339 UTC ("2026-12-05T00:56:23Z") to seconds since the epoch; -1
 * when empty or malformed. */
int64_t jc_parse_time(const char *s);

/* A duration as kubectl shows ages: 45s, 3m12s, 2h05m, 3d04h; "-" for a
 * negative one. */
void jc_duration(char *buf, size_t n, int64_t secs);

/* Age of an RFC 3339 time at now (epoch seconds); "-" when there is none. */
void jc_age(char *buf, size_t n, const char *when, int64_t now);

/* Time left until an ETA (epoch seconds) at now, as jc_duration; "now"
 * once it has passed (the prediction is late, not negative). */
void jc_eta(char *buf, size_t n, int64_t eta, int64_t now);

/* The ETA cell of a status: jc_eta of its eta (else eta_finish) at now,
 * "-" when it has neither or is finished. */
void jc_status_eta(char *buf, size_t n, const struct jc_status *st, int64_t now);

/* "the only jobfs mount" in the text of /proc/self/mounts (fstype
 * fuse.jobfs, or source jobfs); octal escapes (\040) undone.  Returns the
 * number of jobfs mounts; out holds the first, and all (when not NULL)
 * every one in order, ", " between them (for a message naming them). */
int jc_mount_find(const char *mounts_text, char *out, size_t n, char *all, size_t alln);

/* Is dir (absolute, as realpath gives it) the mount point of a jobfs mount
 * in the text of /proc/self/mounts? */
bool jc_mount_is(const char *mounts_text, const char *dir);

/* PATH as the user gave it (relative to the mount, or absolute under it)
 * to the absolute path under mnt; "" and "." are the mount itself.
 * 0, or -1 when an absolute path is not under mnt or it does not fit. */
int jc_path_resolve(const char *mnt, const char *arg, char *out, size_t n);

/* A text table: columns sized to their widest cell, two spaces apart, the
 * last column not padded. */
struct jc_table;
struct jc_table *jc_table_new(int ncols, const char *const *headers);
/* Copies the ncols cells (NULL is ""); 0 or -1 out of memory. */
int jc_table_add(struct jc_table *t, const char *const *cells);
/* The table as text, one line per row, header first; the caller frees it. */
char *jc_table_render(const struct jc_table *t);
void jc_table_free(struct jc_table *t);

#endif
