/*
 * storage_measure.c - volumes measured against their size (reference 8.3).
 *
 * - A thread of its own walks each volume that has a size, every
 *   evict_check_ms (30 s by default), off the loop and on a read-only
 *   connection of its own; a walk stops counting once past the size, so
 *   a huge volume costs no more than its limit.
 * - It leaves what it found in the storage's found[] under its mutex; the
 *   tick (jf_eng_stor_measured) takes it and gives a volume that went
 *   past its size a Warning `SizeExceeded` event, and one back under a
 *   `SizeOK`, once per change (said[] remembers what was said).
 * - Only the daemon's loop in real time measures: a virtual clock (the
 *   engine's tests, the simulation) has no thread.
 */
#include "engine/storage_int.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/shimproto.h"
#include "core/quantity.h"
#include "core/storage.h"

struct measure_ctx {
	struct jf_stor *s;
	struct jf_store *st;
	size_t n;
	struct over got[STOR_MAX_FOUND];
};

static int measure_one(void *ctx, int64_t id, const char *name)
{
	struct measure_ctx *m = ctx;
	struct jf_store_rec r;
	if (m->n == STOR_MAX_FOUND || jf_stor_get(m->st, id, &r) != JF_OK)
		return 0;
	struct jf_volume_spec v = { 0 };
	struct jf_error err;
	if (r.spec[0])
		jf_volume_spec_parse(r.spec, strlen(r.spec), &v, &err);
	jf_stor_release(&r);
	if (v.size <= 0)
		return 0;
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/%s", m->s->volumes_dir, name);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* bounded: counted only until past the size */
	int64_t used = jf_shim_tree_usage(fd, v.size);
	close(fd);
	m->got[m->n++] = (struct over){ id, used, v.size, used > v.size };
	return 0;
}

static void *volumes_measure(void *arg)
{
	struct jf_stor *s = arg;
	struct jf_store *st = NULL;
	struct jf_error err;
	if (jf_store_open_reader(s->db_path, &st, &err) != JF_OK) {
		fprintf(stderr, "jobfs: volumes are not measured: %s\n", err.msg);
		return NULL;
	}
	struct measure_ctx *m = calloc(1, sizeof(*m));
	pthread_mutex_lock(&s->mu);
	while (!s->quit && m) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += s->period_ms / 1000;
		until.tv_nsec += (s->period_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (!s->quit && pthread_cond_timedwait(&s->cv, &s->mu, &until) == 0)
			;
		if (s->quit)
			break;
		pthread_mutex_unlock(&s->mu);
		m->s = s;
		m->st = st;
		m->n = 0;
		jf_store_read_begin(st);
		jf_stor_list(st, JF_SK_VOLUME, 0, STOR_MAX_FOUND, measure_one, m);
		jf_store_read_end(st);
		pthread_mutex_lock(&s->mu);
		memcpy(s->found, m->got, m->n * sizeof(*m->got));
		s->nfound = m->n;
	}
	pthread_mutex_unlock(&s->mu);
	free(m);
	jf_store_close(st);
	return NULL;
}

void jf_eng_stor_measure_start(struct jf_engine *e)
{
	struct jf_stor *s = e->stor;
	if (s->measuring || !e->loop || jf_loop_virtual(e->loop) || !jf_store_path(e->st))
		return;
	free(s->db_path);
	s->db_path = strdup(jf_store_path(e->st));
	if (s->db_path && pthread_create(&s->measurer, NULL, volumes_measure, s) == 0)
		s->measuring = true;
}

void jf_eng_stor_measure_stop(struct jf_stor *s)
{
	if (!s->measuring)
		return;
	pthread_mutex_lock(&s->mu);
	s->quit = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->measurer, NULL);
	s->measuring = false;
}

void jf_eng_stor_measured(struct jf_engine *e)
{
	struct jf_stor *s = e->stor;
	struct over found[STOR_MAX_FOUND];
	size_t n;
	pthread_mutex_lock(&s->mu);
	n = s->nfound;
	memcpy(found, s->found, n * sizeof(*found));
	s->nfound = 0;
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (k < s->nsaid && s->said[k].id != found[i].id)
			k++;
		bool was = k < s->nsaid && s->said[k].over;
		if (found[i].over == was)
			continue;
		if (k == s->nsaid) {
			if (s->nsaid == STOR_MAX_FOUND)
				continue;
			s->nsaid++;
		}
		s->said[k] = found[i];
		char used[32], size[32];
		jf_mem_format(found[i].used, used, sizeof(used));
		jf_mem_format(found[i].size, size, sizeof(size));
		jf_eng_step_begin(e);
		if (found[i].over)
			jf_eng_stor_event(e, found[i].id, "volume", "Warning", "SizeExceeded",
					  "used is past its size %s (%s counted before the count "
					  "stopped)",
					  size, used);
		else
			jf_eng_stor_event(e, found[i].id, "volume", "Normal", "SizeOK",
					  "used is back under its size %s", size);
		jf_eng_step_end(e);
		jf_eng_changed(e, JF_CH_STORE, found[i].id, 0, 0, 0, false);
	}
}
