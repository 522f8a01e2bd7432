/*
 * script.c - the batch script, the job description and launch.json of a
 * batch (script.h).
 *
 * Resources per node: the spec's container limits summed (cores rounded
 * up, at least 1; memory in MB rounded up), else 1 core and 1 GiB, so a
 * job never takes a whole node's memory by Slurm's default; GPUs as gres
 * gpu:<model>:<n>.  Spot batches may be requeued (requeue true), on-demand
 * ones not (a failed machine is a failure jobfs retries by its rules).
 */
#include "backends/slurm/script.h"
#include "backends/shimproto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_MEM_MB 1024
#define PATH_SAFE_MAX  4000

/* 'x' for the shell: refuse what sh would not keep as one word. */
static bool quote(const char *s, char *buf, size_t n)
{
	size_t o = 0;
	if (o + 1 >= n)
		return false;
	buf[o++] = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\n' || *p == '\r')
			return false;
		if (*p == '\'') {
			if (o + 4 >= n)
				return false;
			memcpy(buf + o, "'\\''", 4);
			o += 4;
			continue;
		}
		if (o + 2 >= n)
			return false;
		buf[o++] = *p;
	}
	if (o + 2 > n)
		return false;
	buf[o++] = '\'';
	buf[o] = '\0';
	return true;
}

char *jf_slurm_script(const char *shim, const char *dir, int64_t nodes, bool spot,
		      struct jf_error *err)
{
	char qs[PATH_SAFE_MAX * 4 + 3], qd[PATH_SAFE_MAX * 4 + 3];
	if (strlen(shim) > PATH_SAFE_MAX || strlen(dir) > PATH_SAFE_MAX ||
	    !quote(shim, qs, sizeof(qs)) || !quote(dir, qd, sizeof(qd))) {
		jf_error_set(err, JF_EINVAL, 0, "slurm: a path holds a newline or is too long");
		return NULL;
	}
	char *out = NULL;
	if (nodes == 1 && !spot) {
		if (asprintf(&out,
			     "#!/bin/sh\n"
			     "# jobfs: the node runs the task under jobfs-shim, whose exit\n"
			     "# status is the job's (0, 1, or 143: stopped from outside)\n"
			     "exec %s --slurm %s\n",
			     qs, qd) < 0) {
			jf_error_set(err, JF_ENOMEM, 0, "out of memory");
			return NULL;
		}
		return out;
	}
	if (asprintf(&out,
		     "#!/bin/sh\n"
		     "# jobfs: every node runs the task under jobfs-shim; the job's exit\n"
		     "# status is the verdict over all of them (0, 1, or 143: stopped)\n"
		     "srun --kill-on-bad-exit=1 --nodes=%lld --ntasks=%lld --ntasks-per-node=1 "
		     "%s --slurm %s\n"
		     "exec %s --slurm-verdict %s\n",
		     (long long)nodes, (long long)nodes, qs, qd, qs, qd) < 0) {
		jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		return NULL;
	}
	return out;
}

int64_t jf_slurm_time_limit(int64_t timeout_ms)
{
	if (timeout_ms <= 0)
		return 0;
	int64_t s = (timeout_ms + 999) / 1000;
	return (s + 59) / 60 + 1;
}

static int set(json_t *o, const char *k, json_t *v, bool *bad)
{
	if (!v || json_object_set_new(o, k, v) < 0)
		*bad = true;
	return 0;
}

json_t *jf_slurm_job_json(const struct jf_batch *b, const char *script, const char *array,
			  const char *comment, struct jf_error *err)
{
	bool bad = false;
	json_t *root = json_object(), *job = json_object(), *env = json_object();
	if (!root || !job || !env) {
		json_decref(root);
		json_decref(job);
		json_decref(env);
		jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		return NULL;
	}
	char name[160], nodes[32], out[4200], gres[128];
	snprintf(name, sizeof(name), "jobfs:%s", b->name ? b->name : "batch");
	snprintf(nodes, sizeof(nodes), "%lld", (long long)b->nodes);
	snprintf(out, sizeof(out), "%s/slurm-%%a.out", b->dir);
	int64_t cores = b->cpu_milli > 0 ? (b->cpu_milli + 999) / 1000 : 1;
	int64_t mem_mb = b->mem_bytes > 0 ? (b->mem_bytes + (1 << 20) - 1) >> 20 : DEFAULT_MEM_MB;
	set(env, "PATH", json_string("/usr/local/bin:/usr/bin:/bin"), &bad);
	set(env, "JOBFS_BATCH", json_string(b->dir), &bad);
	set(job, "name", json_string(name), &bad);
	set(job, "comment", json_string(comment), &bad);
	set(job, "array", json_string(array), &bad);
	if (b->partition && b->partition[0])
		set(job, "partition", json_string(b->partition), &bad);
	set(job, "nodes", json_string(nodes), &bad);
	set(job, "tasks_per_node", json_integer(1), &bad);
	set(job, "cpus_per_task", json_integer(cores), &bad);
	set(job, "memory_per_node", json_integer(mem_mb), &bad);
	if (b->gpu_model && b->gpus > 0) {
		/* an untyped GRES ("gpu:4" on the nodes) is asked for untyped */
		if (b->gpu_model[0])
			snprintf(gres, sizeof(gres), "gpu:%s:%d", b->gpu_model, b->gpus);
		else
			snprintf(gres, sizeof(gres), "gpu:%d", b->gpus);
		set(job, "gres", json_string(gres), &bad);
	}
	int64_t limit = jf_slurm_time_limit(b->timeout_ms);
	if (limit > 0)
		set(job, "time_limit", json_integer(limit), &bad);
	set(job, "requeue", json_boolean(b->spot), &bad);
	set(job, "current_working_directory", json_string(b->dir), &bad);
	set(job, "standard_output", json_string(out), &bad);
	set(job, "standard_error", json_string(out), &bad);
	set(job, "open_mode", json_string("append"), &bad);
	set(job, "environment", env, &bad);
	set(root, "script", json_string(script), &bad);
	set(root, "job", job, &bad);
	if (bad) {
		json_decref(root);
		jf_error_set(err, JF_EINVAL, 0,
			     "slurm: a name, path or partition is not valid UTF-8");
		return NULL;
	}
	return root;
}

json_t *jf_slurm_launch_json(const struct jf_batch *b, struct jf_error *err)
{
	bool bad = false;
	/* what every run directory's launch.json says (backends/shimproto.h),
	 * then the "slurm" object only the shim's Slurm mode reads */
	struct jf_shim_launch l = {
		.uid = b->uid,
		.gid = b->gid,
		.cwd = b->cwd ? b->cwd : "",
		.log_cap = b->log_cap_bytes,
		.nprocs = b->nprocs < JF_SHIM_MAX_PROCS ? b->nprocs : JF_SHIM_MAX_PROCS,
		.rt = b->rt,
		.registry_auth = b->registry_auth,
		.shm_bytes = b->shm_bytes,
		.ports = b->ports,
		.nports = b->nports,
		.mounts = b->mounts,
		.nmounts = b->nmounts,
		.evict_check_ms = b->evict_check_ms,
	};
	for (size_t i = 0; i < l.nprocs; i++)
		l.procs[i] = (struct jf_shim_proc){ .name = b->procs[i].name,
						    .argv = b->procs[i].argv,
						    .envp = b->procs[i].envp,
						    .image = b->procs[i].image,
						    .mem_bytes = b->procs[i].mem_bytes,
						    .cpu_milli = b->procs[i].cpu_milli };
	json_t *root = jf_shim_launch_encode(&l), *sl = json_object();
	if (!root || !sl) {
		json_decref(root);
		json_decref(sl);
		jf_error_set(err, JF_EINVAL, 0,
			     "launch: a name, argument, variable or path is not valid UTF-8");
		return NULL;
	}
	json_t *slots = b->gpu_slots ? json_array() : NULL;
	for (size_t i = 0; slots && i < b->nprocs; i++) {
		json_t *s = json_array();
		for (const int *q = b->gpu_slots[i]; s && q && *q >= 0; q++)
			if (json_array_append_new(s, json_integer(*q)) < 0)
				bad = true;
		if (!s || json_array_append_new(slots, s) < 0)
			bad = true;
	}
	set(sl, "first_index", json_integer(b->nidx ? b->idx[0] : 0), &bad);
	set(sl, "tasks", json_integer(b->tasks), &bad);
	set(sl, "attempt_base", json_integer(b->attempt_base), &bad);
	set(sl, "node_index", json_boolean(b->node_index), &bad);
	set(sl, "timeout_ms", json_integer(b->timeout_ms), &bad);
	set(sl, "kill_grace_ms", json_integer(b->kill_grace_ms), &bad);
	set(sl, "ckpt_root", json_string(b->ckpt_root ? b->ckpt_root : ""), &bad);
	set(sl, "master_port_base", json_integer(29500), &bad);
	if (slots)
		set(sl, "gpu_slots", slots, &bad);
	set(root, "slurm", sl, &bad);
	if (bad) {
		json_decref(root);
		jf_error_set(err, JF_EINVAL, 0,
			     "launch: a name, argument, variable or path is not valid UTF-8");
		return NULL;
	}
	return root;
}

int jf_slurm_write_file(const char *path, const char *text, size_t len, mode_t mode)
{
	char tmp[4200];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;
			close(fd);
			unlink(tmp);
			errno = e;
			return -1;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}
