/*
 * backend.c - what scheduler.h declares that is not a backend's own: a note's release.
 */
#include "backends/scheduler.h"

#include <stdlib.h>

void jf_note_release(struct jf_note *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nhosts; i++) {
		free(n->hosts[i]);
		if (n->gpu_ids)
			free(n->gpu_ids[i]);
	}
	free(n->hosts);
	free(n->gpu_ids);
	n->gpu_ids = NULL;
	free(n->results);
	n->hosts = NULL;
	n->results = NULL;
	n->nhosts = n->nresults = 0;
}
