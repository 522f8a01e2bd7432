/*
 * image.c - what the engine does about images (reference 8.1): a
 * container's image handed to the supervisor, its notes turned into the
 * node's events, the images a node uses recorded (for /images used_by),
 * and Kubernetes' back-off after a failed pull.
 *
 * The pull itself happens in the supervisor, before it claims the run
 * (tools/shim_ctr.c): the engine only learns of it through notes (events)
 * and, when it failed, through a start failure marked pull_failed.  Such a
 * failure is no attempt of the task: the task waits again (ending.c,
 * JF_WHY_IMAGEPULL) and its group backs off, 10 s doubling to 5 min, with
 * `reason: ImagePull` in its message and a Warning BackOff event; the
 * first node of the group that starts ends the back-off.  The back-off
 * lives in memory: a restarted daemon tries again at once.
 */
#include "engine/engine_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/imgref.h"
#include "core/quantity.h"

static const char *policy_name(const struct jf_container *c)
{
	switch (c->pull_policy) {
	case JF_PULL_ALWAYS:
		return "Always";
	case JF_PULL_IFNOTPRESENT:
		return "IfNotPresent";
	case JF_PULL_NEVER:
		return "Never";
	case JF_PULL_DEFAULT:
		break;
	}
	struct jf_imgref ref;
	if (jf_imgref_parse(c->image, &ref, NULL) == JF_OK && !jf_imgref_default_always(&ref))
		return "IfNotPresent";
	return "Always";
}

bool jf_eng_proc_image(struct jf_engine *e, const struct grt *g, const struct jf_container *c,
		       int64_t task_idx, int64_t node_idx, int64_t attempt, const char *gpu_ids,
		       const char *ckpt_dir, uid_t uid, struct jf_proc_image *im, char ***env,
		       bool *oom)
{
	*oom = false;
	if (!e->rt || !c->image)
		return false;
	*env = jf_env_build_node(e, g, c, task_idx, node_idx, attempt, gpu_ids, ckpt_dir, uid);
	if (!*env) {
		*oom = true;
		return false;
	}
	*im = (struct jf_proc_image){
		.reference = c->image,
		.pull_policy = policy_name(c),
		.command = c->ncommand ? c->command : NULL,
		.args = c->nargs ? c->args : NULL,
		.env = *env,
	};
	return true;
}

void jf_eng_node_images(struct jf_engine *e, const struct grt *g, int64_t node_id)
{
	const struct jf_spec *s = g->spec;
	bool oci = e->rt != NULL;
	char names[8192] = "";
	size_t off = 0;
	for (size_t i = 0; oci && i < s->ncontainers; i++) {
		struct jf_imgref ref;
		if (!s->containers[i].image ||
		    jf_imgref_parse(s->containers[i].image, &ref, NULL) != JF_OK)
			continue;
		char canon[JF_IMGREF_MAX];
		jf_imgref_format(&ref, canon, sizeof(canon));
		if (off + strlen(canon) + 2 < sizeof(names))
			off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s",
						off ? "," : "", canon);
	}
	jf_node_set_image(e->st, node_id, oci && off ? "oci" : "host", names, "");
	jf_node_set_reason(e->st, node_id, ""); /* a new attempt: no end yet */
	jf_node_set_endpoints(e->st, node_id, "");
}

void jf_eng_note(struct jf_engine *e, const struct jf_run_result *res)
{
	struct run *r = jf_idmap_get(&e->runs, (int64_t)res->cookie);
	struct trun *t = r ? jf_idmap_get(&e->tasks, r->task_id) : NULL;
	struct grt *g = r ? jf_eng_group(e, r->group_id) : NULL;
	if (!r || !t || !g)
		return;
	jf_eng_step_begin(e);
	if (!strcmp(res->note_reason, "ImageDigest")) {
		/* "NAME sha256:..." of the first container: the node's */
		const char *sp = strchr(res->message, ' ');
		struct jf_node_rec n;
		if (sp && jf_node_get(e->st, r->node_id, &n) == JF_OK) {
			if (!n.image_digest[0] ||
			    !strncmp(res->message, g->spec->containers[0].name,
				     (size_t)(sp - res->message)))
				jf_node_set_image(e->st, r->node_id, n.runtime, n.images, sp + 1);
			jf_node_release(&n);
		}
	} else if (!strcmp(res->note_reason, "Endpoints")) {
		jf_node_set_endpoints(e->st, r->node_id, res->message);
	} else {
		jf_eng_event(e, g, r->task_id, t->idx, r->node_id, r->node_idx, res->note_type,
			     res->note_reason, "%s", res->message);
	}
	jf_eng_step_end(e);
	jf_eng_changed(e, JF_CH_NODE, g->queue_id, g->id, r->task_id, r->node_id, false);
}

bool jf_eng_pull_waits(struct jf_engine *e, struct grt *g, int64_t now)
{
	if (!g->pull_until_ms || now >= g->pull_until_ms)
		return false;
	if (!e->pull_check_ms || g->pull_until_ms < e->pull_check_ms)
		e->pull_check_ms = g->pull_until_ms;
	return true;
}

void jf_eng_pull_backoff(struct jf_engine *e, struct grt *g, struct trun *t)
{
	int64_t now = jf_eng_now(e);
	int64_t b = g->pull_backoff_ms ? g->pull_backoff_ms * 2 : JF_PULL_BACKOFF_FIRST_MS;
	if (b > JF_PULL_BACKOFF_MAX_MS)
		b = JF_PULL_BACKOFF_MAX_MS;
	g->pull_backoff_ms = b;
	g->pull_until_ms = now + b;
	if (!e->pull_check_ms || g->pull_until_ms < e->pull_check_ms)
		e->pull_check_ms = g->pull_until_ms;
	char wait[32];
	jf_duration_format(b / 1000, wait, sizeof(wait));
	const char *img = g->pull_image[0] ? g->pull_image : g->spec->containers[0].image;
	char *msg = g->pull_msg;
	snprintf(g->pull_msg, sizeof(g->pull_msg),
		 "ImagePull: back-off pulling image \"%.120s\" (ImagePullBackOff): trying again "
		 "in %s",
		 img ? img : "", wait);
	jf_eng_event(e, g, t->task_id, t->idx, 0, 0, "Warning", "BackOff",
		     "Back-off pulling image \"%.120s\": trying again in %s; no retry used",
		     img ? img : "", wait);
	struct jf_group_rec rec;
	if (jf_group_get(e->st, g->id, &rec) == JF_OK) {
		jf_group_set_flags(e->st, g->id, rec.flags | JF_GF_IMAGEPULL, msg);
		jf_group_release(&rec);
	}
}

void jf_eng_pull_ok(struct jf_engine *e, struct grt *g)
{
	if (!g->pull_backoff_ms && !g->pull_until_ms)
		return;
	g->pull_backoff_ms = 0;
	g->pull_until_ms = 0;
	g->pull_image[0] = '\0';
	g->pull_msg[0] = '\0';
	struct jf_group_rec rec;
	if (jf_group_get(e->st, g->id, &rec) == JF_OK) {
		if (rec.flags & JF_GF_IMAGEPULL)
			jf_group_set_flags(e->st, g->id, rec.flags & ~JF_GF_IMAGEPULL, "");
		jf_group_release(&rec);
	}
}
