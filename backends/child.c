/*
 * child.c - posix_spawn with the child's fds and a clean signal state
 * (child.h).
 */
#include "backends/child.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>

extern char **environ;

int jf_spawn(const char *path, char *const argv[], const int *fds, int nfds, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int rc;
	sigemptyset(&none);
	sigfillset(&all);
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0)
		return rc;
	if ((rc = posix_spawnattr_init(&at)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return rc;
	}
	for (int i = 0; i < nfds && !rc; i++) {
		if (fds[i] == JF_SPAWN_NULL)
			rc = posix_spawn_file_actions_addopen(&fa, i, "/dev/null",
							      i == 0 ? O_RDONLY : O_WRONLY, 0);
		else if (fds[i] >= 0)
			rc = posix_spawn_file_actions_adddup2(&fa, fds[i], i);
	}
	if (!rc && !(rc = posix_spawnattr_setsigmask(&at, &none)) &&
	    !(rc = posix_spawnattr_setsigdefault(&at, &all)) &&
	    !(rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)))
		rc = posix_spawn(pid, path, &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}
