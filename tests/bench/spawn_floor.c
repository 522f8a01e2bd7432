/*
 * spawn_floor.c - the floor of the throughput benchmark: run a command N
 * times, at most P at a time (posix_spawn, then waitpid for any), and print
 * the seconds it took.  Nothing a batch system could do runs N processes
 * at P at a time faster on this machine.
 *
 *   spawn_floor N P COMMAND [ARG...]
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: spawn_floor N P COMMAND [ARG...]\n");
		return 2;
	}
	long n = strtol(argv[1], NULL, 10), p = strtol(argv[2], NULL, 10);
	if (n < 1 || p < 1) {
		fprintf(stderr, "spawn_floor: N and P must be at least 1\n");
		return 2;
	}
	double t0 = now_s();
	long started = 0, running = 0, failed = 0;
	while (started < n || running > 0) {
		while (started < n && running < p) {
			pid_t pid;
			int rc = posix_spawn(&pid, argv[3], NULL, NULL, &argv[3], environ);
			if (rc != 0) {
				fprintf(stderr, "spawn_floor: %s: %s\n", argv[3], strerror(rc));
				return 1;
			}
			started++;
			running++;
		}
		int st;
		pid_t w = waitpid(-1, &st, 0);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			perror("spawn_floor: waitpid");
			return 1;
		}
		running--;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	printf("%.3f\n", now_s() - t0);
	return failed ? 1 : 0;
}
