/*
 * specs.c - the parsed specs the tree's renders show fields of.
 *
 * A status shows a few fields of its group's accepted spec (billing, gpus,
 * nodes, retries).  The renders run on reader threads that may not touch
 * the engine's own cache of parsed specs, so the tree keeps its own:
 * parsed from the text the reader's snapshot of the store holds, and kept
 * while that text is the same (an accepted spec never changes; a group
 * removed and its id used again has another text).  Under the map lock;
 * an entry that goes is retired, not freed, while readers may hold it:
 * freed when the loop next holds the tree's lock exclusively.
 */
#include "fs/fs_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/spec.h"

#define SPECS_MAX 1024 /* parsed specs kept; past it the cache starts again */

struct spec_ent {
	char *text;
	struct jf_spec *spec;
	struct spec_ent *retired_next;
};

static void ent_free(struct spec_ent *s)
{
	free(s->text);
	jf_spec_free(s->spec);
	free(s);
}

static void retire(struct jf_fs *fs, struct spec_ent *s)
{
	s->retired_next = fs->retired_specs;
	fs->retired_specs = s;
}

static void retire_all(struct jf_fs *fs)
{
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&fs->specs, &i, &k, &v))
		retire(fs, v);
	jf_idmap_release(&fs->specs);
}

void jf_fs_specs_reclaim(struct jf_fs *fs)
{
	struct spec_ent *s = fs->retired_specs;
	fs->retired_specs = NULL;
	while (s) {
		struct spec_ent *next = s->retired_next;
		ent_free(s);
		s = next;
	}
}

void jf_fs_specs_release(struct jf_fs *fs)
{
	retire_all(fs);
	jf_fs_specs_reclaim(fs);
}

const struct jf_spec *jf_fs_spec(struct jf_fs *fs, const struct jf_group_rec *g)
{
	if (!g->spec)
		return NULL;
	jf_fs_maps_lock(fs);
	struct spec_ent *s = jf_idmap_get(&fs->specs, g->id);
	jf_fs_maps_unlock(fs);
	if (s && !strcmp(s->text, g->spec))
		return s->spec;
	char queue[JF_NAME_MAX] = "";
	struct jf_queue_rec q;
	if (g->queue_id && jf_queue_get(ST(fs), g->queue_id, &q) == JF_OK) {
		snprintf(queue, sizeof(queue), "%s", q.name);
		jf_queue_release(&q);
	}
	struct jf_subst sub = { g->jobname, queue, g->dirname };
	struct jf_error err;
	jf_error_clear(&err);
	struct jf_spec *spec = NULL;
	if (jf_spec_parse(g->spec, strlen(g->spec),
			  g->kind == JF_KIND_BATCH ? JF_PLACE_BATCH : JF_PLACE_GROUP, &sub, &spec,
			  &err) != JF_OK)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (s)
		s->text = strdup(g->spec);
	if (!s || !s->text) {
		if (s)
			free(s->text);
		free(s);
		jf_spec_free(spec);
		return NULL;
	}
	s->spec = spec;
	/* parsed without the lock: another reader may have put one meanwhile */
	jf_fs_maps_lock(fs);
	struct spec_ent *old = jf_idmap_get(&fs->specs, g->id);
	if (old && !strcmp(old->text, g->spec)) {
		retire(fs, s);
		s = old;
	} else {
		if (old) {
			jf_idmap_del(&fs->specs, g->id);
			retire(fs, old);
		}
		if (fs->specs.live >= SPECS_MAX)
			retire_all(fs);
		if (!jf_idmap_put(&fs->specs, g->id, s))
			retire(fs, s); /* not kept: freed later all the same */
	}
	jf_fs_maps_unlock(fs);
	return s->spec;
}
