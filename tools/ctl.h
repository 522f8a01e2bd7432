/*
 * ctl.h - what jobfsctl's subcommands share: the mount point, reading the
 * tree's files, and the exit codes.
 *
 * jobfsctl works on the mounted tree through its files alone; every
 * function here is a plain read of the mount.
 */
#ifndef JF_CTL_H
#define JF_CTL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "tools/ctl_fmt.h"

/* Exit codes (jobfsctl --help and docs/jobfsctl.1 list them). */
enum {
	JC_OK = 0,       /* done; the object Succeeded */
	JC_REFUSED = 1,  /* refused or bad input: a spec's error, Invalid */
	JC_FAILED = 2,   /* the object Failed */
	JC_STOPPED = 3,  /* the object was Stopped */
	JC_NOTFOUND = 4, /* no such path, or no jobfs mount */
	JC_TIMEOUT = 5,  /* wait --timeout ran out */
	JC_USAGE = 64,   /* bad command line */
	JC_ERROR = 70,   /* anything else: I/O, memory */
};

struct ctl {
	char mnt[PATH_MAX];
};

/* snprintf into buf, truncating what does not fit (paths in the tree are
 * short; a truncated one names nothing and fails its open); -1 when cut. */
int ctl_strf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The file's content (at most cap bytes) NUL-terminated, the caller's to
 * free; NULL with errno set. */
char *ctl_read_file(const char *path, size_t cap);
/* dir/status.json parsed; 0, or -1 with errno (EINVAL: not JSON). */
int ctl_read_status(const char *dir, struct jc_status *st);
/* path relative to the mount (for display): a pointer into abs. */
const char *ctl_rel(const struct ctl *c, const char *abs);

/* why (if any) and the usage line on stderr: JC_USAGE. */
int ctl_usage(const char *why);
/* stat(2) says: a directory; anything. */
bool ctl_is_dir(const char *path);
bool ctl_exists(const char *path);
/* arg (relative to the mount, or absolute under it) as an absolute path
 * into out: JC_OK, or JC_NOTFOUND said on stderr. */
int ctl_resolve(const struct ctl *c, const char *arg, char *out, size_t n);

/* Render t to stdout and free it: JC_OK, or JC_ERROR when out of memory. */
int ctl_table_print(struct jc_table *t);

/* Subcommands in files of their own: ctl_top.c, ctl_logs.c. */
int ctl_top(struct ctl *c, int argc, char **argv);
int ctl_logs(struct ctl *c, int argc, char **argv);

#endif
