/*
 * view.c - what threads other than the engine's read of its memory.
 *
 * The tree's readers (fs/serve.c) answer from their own connections to
 * the store, which show what the engine last committed.  The few figures
 * that live only in the engine's memory (each machine's use, whether the
 * backend can be reached) are copied here as soon as a step has
 * committed, before what it queued (starts, signals) is done: a reader
 * sees them as of a commit, never half-way through a step, and never
 * older than a commit its snapshot of the store shows.  What the engine changes in place that
 * readers also read (the delegated cluster's machine list, the forecasts) it changes under the same
 * lock.
 */
#include "engine/engine_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jf_engine_share_view(struct jf_engine *e)
{
	if (e->view.shared)
		return;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&e->view.mu, &ma);
	pthread_mutexattr_destroy(&ma);
	e->view.shared = true;
	jf_eng_view_publish(e, true);
}

void jf_engine_view_lock(struct jf_engine *e)
{
	if (e->view.shared)
		pthread_mutex_lock(&e->view.mu);
}

void jf_engine_view_unlock(struct jf_engine *e)
{
	if (e->view.shared)
		pthread_mutex_unlock(&e->view.mu);
}

void jf_eng_view_publish(struct jf_engine *e, bool force)
{
	struct jf_view *v = &e->view;
	if (!v->shared)
		return;
	int64_t now = jf_eng_now(e);
	if (e->delegated && !force && now >= v->published_ms &&
	    now - v->published_ms < JF_ENGINE_TICK_MS)
		return;
	size_t n = e->cluster->nmachines;
	/* built aside, swapped in under the lock: readers wait only for the copy */
	struct jf_view_machine *use = calloc(n ? n : 1, sizeof(*use));
	if (!use)
		return; /* readers keep the last view */
	for (size_t m = 0; m < n; m++) {
		jf_engine_machine_use(e, m, &use[m].u);
		if (use[m].u.state)
			snprintf(use[m].state, sizeof(use[m].state), "%s", use[m].u.state);
		if (use[m].u.partitions)
			snprintf(use[m].partitions, sizeof(use[m].partitions), "%s",
				 use[m].u.partitions);
	}
	const char *t = jf_engine_backend_trouble(e);
	pthread_mutex_lock(&v->mu);
	struct jf_view_machine *old = v->use;
	v->use = use;
	v->nuse = n;
	v->down = t != NULL;
	snprintf(v->trouble, sizeof(v->trouble), "%s", t ? t : "");
	v->published_ms = now;
	pthread_mutex_unlock(&v->mu);
	free(old);
}

void jf_engine_view_use(struct jf_engine *e, size_t m, struct jf_view_machine *out)
{
	memset(out, 0, sizeof(*out));
	if (!e->view.shared) {
		struct jf_machine_use u;
		jf_engine_machine_use(e, m, &u);
		out->u = u;
		if (u.state)
			snprintf(out->state, sizeof(out->state), "%s", u.state);
		if (u.partitions)
			snprintf(out->partitions, sizeof(out->partitions), "%s", u.partitions);
	} else {
		pthread_mutex_lock(&e->view.mu);
		if (m < e->view.nuse)
			*out = e->view.use[m];
		pthread_mutex_unlock(&e->view.mu);
	}
	out->u.state = out->u.state ? out->state : NULL;
	out->u.partitions = out->u.partitions ? out->partitions : NULL;
}

bool jf_engine_view_trouble(struct jf_engine *e, char *buf, size_t n)
{
	if (!e->view.shared) {
		const char *t = jf_engine_backend_trouble(e);
		snprintf(buf, n, "%s", t ? t : "");
		return t != NULL;
	}
	pthread_mutex_lock(&e->view.mu);
	bool down = e->view.down;
	snprintf(buf, n, "%s", down ? e->view.trouble : "");
	pthread_mutex_unlock(&e->view.mu);
	return down;
}

void jf_eng_view_free(struct jf_engine *e)
{
	if (!e->view.shared)
		return;
	free(e->view.use);
	e->view.use = NULL;
	pthread_mutex_destroy(&e->view.mu);
	e->view.shared = false;
}
