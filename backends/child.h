/*
 * child.h - start a helper program with the fds it is given and a clean
 * signal state: what the local backend does for each node's jobfs-shim
 * and the engine for each object source's jobfs-sync.
 *
 * posix_spawn, not fork: a fork copies the daemon's page tables and makes
 * each page the daemon writes until the exec a copy.  The child's signal
 * mask is empty and every signal is at its default (the daemon blocks and
 * catches some), so a helper is killed and stopped as a program run from a
 * shell is.
 */
#ifndef JF_CHILD_H
#define JF_CHILD_H

#include <sys/types.h>

/* What jf_spawn makes of the child's fd i: another of the parent's fds
 * (dup2, its close-on-exec cleared), /dev/null (read-only for fd 0, else
 * write-only), or the parent's own fd i as it is. */
enum { JF_SPAWN_NULL = -1, JF_SPAWN_KEEP = -2 };

/* Spawn path with argv (argv[0] included, NULL-terminated) and the
 * parent's environment; fds[i] (i < nfds) says what the child's fd i is.
 * *pid gets the child's.  0, or an errno. */
int jf_spawn(const char *path, char *const argv[], const int *fds, int nfds, pid_t *pid);

#endif
