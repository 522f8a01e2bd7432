/*
 * env.c - the environment of a node's processes (reference 3).
 *
 * Order, later entries winning: a base (PATH, HOME, USER, LOGNAME, LANG
 * from the user's account and the daemon's PATH), the container's env as
 * the spec writes it, then jobfs's JOB_* variables and CUDA_VISIBLE_DEVICES,
 * which describe the platform and cannot be overridden.  A container's
 * environment (jf_env_build_node) has no base: the image's Env takes its
 * place, under the spec's and jobfs's (tools/shim_ctr.c).
 */
#include "engine/engine_int.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct envb {
	char **v;
	size_t n, cap;
	bool oom;
};

static void env_set(struct envb *b, const char *key, const char *val)
{
	if (b->oom)
		return;
	size_t klen = strlen(key);
	char *kv = malloc(klen + strlen(val) + 2);
	if (!kv) {
		b->oom = true;
		return;
	}
	sprintf(kv, "%s=%s", key, val);
	for (size_t i = 0; i < b->n; i++) {
		if (strncmp(b->v[i], key, klen) == 0 && b->v[i][klen] == '=') {
			free(b->v[i]);
			b->v[i] = kv;
			return;
		}
	}
	if (b->n + 2 > b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 64;
		char **p = realloc(b->v, ncap * sizeof(*p));
		if (!p) {
			free(kv);
			b->oom = true;
			return;
		}
		b->v = p;
		b->cap = ncap;
	}
	b->v[b->n++] = kv;
	b->v[b->n] = NULL;
}

static void env_num(struct envb *b, const char *key, int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	env_set(b, key, buf);
}

static char **env_build(struct jf_engine *e, const struct grt *g, const struct jf_container *c,
			int64_t task_idx, int64_t node_idx, int64_t attempt, const char *gpu_ids,
			const char *ckpt_dir, uid_t uid, bool host)
{
	struct envb b = { NULL, 0, 0, false };
	if (!host)
		goto spec;
	const char *path = getenv("PATH");
	env_set(&b, "PATH", path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	/* the user's entry, looked up at most every JF_PW_TTL_MS per user (a
	 * lookup reads /etc/passwd: once per start was a tenth of a start) */
	struct jf_pw_cache *pc = &e->pw;
	int64_t now = jf_eng_now(e);
	if (!pc->valid || pc->uid != uid || now - pc->at_ms > JF_PW_TTL_MS || now < pc->at_ms) {
		struct passwd pw, *res = NULL;
		char pwbuf[4096];
		pc->valid = true;
		pc->uid = uid;
		pc->at_ms = now;
		pc->found = getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res;
		snprintf(pc->home, sizeof(pc->home), "%s", pc->found ? pw.pw_dir : "/");
		snprintf(pc->name, sizeof(pc->name), "%s", pc->found ? pw.pw_name : "");
	}
	env_set(&b, "HOME", pc->home);
	if (pc->found) {
		env_set(&b, "USER", pc->name);
		env_set(&b, "LOGNAME", pc->name);
	}
	env_set(&b, "LANG", "C.UTF-8");

spec:
	for (size_t i = 0; i < c->nenv; i++)
		env_set(&b, c->env[i].key, c->env[i].value);

	const struct jf_spec *s = g->spec;
	int64_t tasks = g->kind == JF_KIND_BATCH ? s->count : s->completions;
	env_set(&b, "JOB_NAME", g->display);
	env_set(&b, "JOB_QUEUE", g->queue);
	env_set(&b, "JOB_GROUP", g->dirname);
	env_num(&b, "JOB_TASK_INDEX", task_idx);
	env_num(&b, "JOB_TASK_COUNT", tasks);
	env_num(&b, "JOB_NODE_INDEX", node_idx);
	env_num(&b, "JOB_NODE_COUNT", s->nodes);
	if (s->node_index)
		env_num(&b, "JOB_COMPLETION_INDEX", s->nodes > 1 ? node_idx : task_idx);
	env_set(&b, "JOB_MASTER_ADDR", "127.0.0.1");
	/* one port per task, stable across attempts, in the unprivileged range */
	env_num(&b, "JOB_MASTER_PORT", 29500 + (g->id * 131 + task_idx) % 20000);
	env_num(&b, "JOB_ATTEMPT", attempt);
	env_set(&b, "JOB_CHECKPOINT_DIR", ckpt_dir);
	if (gpu_ids) /* NULL: the backend gives the node its GPUs (slurm) */
		env_set(&b, "CUDA_VISIBLE_DEVICES", gpu_ids);
	if (b.oom) {
		jf_env_free(b.v);
		return NULL;
	}
	return b.v;
}

char **jf_env_build(struct jf_engine *e, const struct grt *g, const struct jf_container *c,
		    int64_t task_idx, int64_t node_idx, int64_t attempt, const char *gpu_ids,
		    const char *ckpt_dir, uid_t uid)
{
	return env_build(e, g, c, task_idx, node_idx, attempt, gpu_ids, ckpt_dir, uid, true);
}

char **jf_env_build_node(struct jf_engine *e, const struct grt *g, const struct jf_container *c,
			 int64_t task_idx, int64_t node_idx, int64_t attempt, const char *gpu_ids,
			 const char *ckpt_dir, uid_t uid)
{
	return env_build(e, g, c, task_idx, node_idx, attempt, gpu_ids, ckpt_dir, uid, false);
}

void jf_env_free(char **env)
{
	if (!env)
		return;
	for (char **p = env; *p; p++)
		free(*p);
	free(env);
}

bool jf_env_proc(struct jf_engine *e, const struct grt *g, const struct jf_container *c,
		 int64_t task_idx, int64_t node_idx, int64_t attempt, const char *gpu_ids,
		 const char *ckpt_dir, uid_t uid, struct jf_proc *p, char ***argv, char ***env)
{
	*env = jf_env_build(e, g, c, task_idx, node_idx, attempt, gpu_ids, ckpt_dir, uid);
	*argv = calloc(c->ncommand + c->nargs + 1, sizeof(char *));
	if (!*env || !*argv)
		return false;
	size_t k = 0;
	for (size_t j = 0; j < c->ncommand; j++)
		(*argv)[k++] = c->command[j];
	for (size_t j = 0; j < c->nargs; j++)
		(*argv)[k++] = c->args[j];
	p->name = c->name;
	p->argv = *argv;
	p->envp = *env;
	return true;
}
