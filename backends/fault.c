/*
 * fault.c - JOBFS_FAULT=POINT:N, read once (fault.h).
 */
#include "backends/fault.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;
static bool fault_read;
static char fault_name[32];
static long fault_left;

bool jf_fault_hit(const char *point)
{
	bool hit = false;
	pthread_mutex_lock(&fault_mu);
	if (!fault_read) {
		const char *v = getenv("JOBFS_FAULT");
		const char *colon = v ? strchr(v, ':') : NULL;
		fault_read = true;
		if (colon && (size_t)(colon - v) < sizeof(fault_name)) {
			memcpy(fault_name, v, (size_t)(colon - v));
			fault_name[colon - v] = '\0';
			fault_left = strtol(colon + 1, NULL, 10);
		}
	}
	if (fault_left > 0 && strcmp(fault_name, point) == 0 && --fault_left == 0)
		hit = true;
	pthread_mutex_unlock(&fault_mu);
	return hit;
}
