/*
 * mountrec.h - a daemon's record of its mount, and the watchdog that clears
 * the mount a dead daemon left behind (README: Reliability).
 *
 * A running daemon keeps STATE/mount: its pid and start time, its FUSE
 * connection and its mount point.  When the daemon dies the kernel aborts
 * its connection (the daemon is the only holder of /dev/fuse: toucher.h)
 * and the mount answers ENOTCONN until it is detached.  Should some other
 * process still hold the device, the kernel cannot abort it, and every
 * process that touches the mount waits for ever.  Before a new daemon
 * mounts, jf_mount_clear_dead() finds either case from the record,
 * /proc/self/mountinfo and /proc/PID/stat alone - never by touching the
 * mount, which could itself hang - aborts the connection through fusectl
 * (mounting fusectl if need be), detaches the mount and says so.
 */
#ifndef JF_MOUNTREC_H
#define JF_MOUNTREC_H

#include <stdbool.h>
#include <stddef.h>

/* The daemon's record, in the state directory. */
#define JF_MOUNTREC_NAME "mount"

/* mnt made absolute without touching mnt itself (realpath of its parent
 * directory, then its name): 0, or -1 with errno. */
int jf_mount_abspath(const char *mnt, char *out, size_t n);

/* After mounting at mnt (absolute): record this process in STATE/mount. */
int jf_mountrec_write(const char *state, const char *mnt);
/* After a clean unmount. */
void jf_mountrec_remove(const char *state);

/*
 * Before mounting at mnt (absolute): a mount of this state directory's
 * dead daemon (pid gone, reused or a zombie) whose connection is still
 * there is aborted and detached; a FUSE mount at mnt that answers ENOTCONN
 * is detached.  say() gets one line for each thing done.  1 if it cleared
 * something, 0 if there was nothing to clear.  A FUSE mount at mnt that
 * does not answer and that no record explains is an error: -1, with the
 * reason and what to do about it in msg.
 */
int jf_mount_clear_dead(const char *state, const char *mnt, void (*say)(const char *line),
			char *msg, size_t n);

/* ---- the pure parts (unit-tested) ---- */

struct jf_mountinfo {
	unsigned conn;   /* the FUSE connection: fusectl's name for it */
	char fstype[64]; /* "fuse.jobfs" */
	char source[64]; /* "jobfs" */
};

/* The topmost mount at mnt in a /proc/self/mountinfo text (octal escapes
 * undone): true and *out, or false if nothing is mounted there. */
bool jf_mountinfo_find(const char *text, const char *mnt, struct jf_mountinfo *out);

/* A /proc/PID/stat line: the state letter and the start time (clock ticks
 * after boot); false if it does not parse. */
bool jf_proc_stat_parse(const char *text, char *state, unsigned long long *start);

struct jf_mountrec {
	long pid;
	unsigned long long start;
	unsigned conn;
	char mnt[4096];
};

/* STATE/mount's text: true if every field is there. */
bool jf_mountrec_parse(const char *text, struct jf_mountrec *out);

#endif
