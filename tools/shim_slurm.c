/*
 * shim_slurm.c - jobfs-shim's Slurm mode (--slurm) and the verdict
 * (--slurm-verdict).  The rest of the shim, which this mode runs as it
 * runs the local one, is in shim.c; its top describes the local mode this
 * one builds on and lists the exit codes of every mode.
 *
 * SLURM MODE (jobfs-shim --slurm BATCH_DIR)
 *
 * The Slurm backend (backends/slurm) makes each group of tasks one job
 * array.  Each element's batch script runs, on each of its K nodes (one
 * srun task per node), "jobfs-shim --slurm BATCH_DIR", then on the batch
 * host "exec jobfs-shim --slurm-verdict BATCH_DIR".
 *
 * - BATCH_DIR/launch.json is the local format, where cwd may be "" (then
 *   RUN_DIR/work), plus "slurm": {"first_index": task index of element 0,
 *   "tasks": JOB_TASK_COUNT, "attempt_base", "node_index": bool,
 *   "timeout_ms" (0 = none), "kill_grace_ms", "ckpt_root" (an absolute
 *   path, or "" for no JOB_CHECKPOINT_DIR), "master_port_base" (1..45536),
 *   "gpu_slots" (optional: one entry per proc, null for Slurm's GPUs as
 *   they are, or the positions in Slurm's CUDA_VISIBLE_DEVICES that proc
 *   gets, each once, [] for none)}.  All but gpu_slots are required.
 * - From Slurm's environment: idx = first_index + SLURM_ARRAY_TASK_ID
 *   (absent: 0), restart = SLURM_RESTART_COUNT (absent: 0), node =
 *   SLURM_NODEID, nodes = SLURM_JOB_NUM_NODES, else SLURM_NNODES.
 *   SLURM_JOB_ID and SLURM_NODEID must be there (else: not under srun).
 *   Every value is checked (decimal, in range: idx < tasks, node < nodes)
 *   and a bad one is refused with a message, never passed on.
 * - The run directory is BATCH_DIR/<idx>/<restart>/<node>/ (made, 0755).
 *   From there on the shim is the local mode with that RUN_DIR (claim,
 *   heartbeat, stdout/stderr/logs and rotation, started, result, the uid
 *   and gid change as root), except: the claim holds
 *   "slurm:SLURM_JOB_ID:NODE START_MS"; RUN_DIR/gpus holds the step's
 *   SLURM_STEP_GPUS (Slurm's ids of the node's GPUs, for the daemon when
 *   the job's gres_detail is gone); there is no ready pipe (fd 3 and
 *   up are left alone but close-on-exec); the shim stays in Slurm's
 *   session and process group (no setsid), so Slurm's signals reach it;
 *   the procs' cwd is RUN_DIR/work (0700, the launch user's) unless
 *   launch.json names one.
 * - Node 0, right after its claim and before starting anything, writes the
 *   hint BATCH_DIR/starts/<idx>.<restart>: "SLURM_JOB_ID START_MS\n" (the
 *   claim's time), through starts/.<idx>.<restart>.tmp renamed; not
 *   fsynced: it only tells the polling daemon early that the element began.
 * - Environment of each proc: its envp, then set over it JOB_TASK_INDEX
 *   (idx), JOB_TASK_COUNT (tasks), JOB_NODE_INDEX (node), JOB_NODE_COUNT
 *   (nodes), JOB_COMPLETION_INDEX (only with node_index: node when nodes
 *   > 1, else idx), JOB_ATTEMPT (attempt_base + restart), JOB_MASTER_ADDR
 *   (SLURM_LAUNCH_NODE_IPADDR, else 127.0.0.1 for one node run without
 *   srun, else the first host of SLURM_JOB_NODELIST:
 *   "n[1-3],m2" -> "n1", "gpu[07,09]" -> "gpu07"), JOB_MASTER_PORT
 *   (master_port_base + (J * 131 + idx) % 20000, J = SLURM_ARRAY_JOB_ID,
 *   else SLURM_JOB_ID), JOB_CHECKPOINT_DIR (ckpt_root/<idx>, made 0700 and
 *   as root given to the launch user; it outlives retries and requeues)
 *   and CUDA_VISIBLE_DEVICES (the proc's gpu_slots positions of Slurm's
 *   list: "4,5,6,7" and [1,2] -> "5,6"; else Slurm's value as it is, and
 *   unset stays unset).
 * - Timeout (timeout_ms > 0): at start + timeout_ms, SIGTERM to every
 *   running proc's process group, SIGKILL kill_grace_ms later; the result
 *   says "timed_out": true and keeps the procs' exit codes (143, 137).
 * - SIGTERM, SIGINT and SIGHUP from outside (Slurm preempting or
 *   cancelling, srun passing a signal on) are forwarded as they come; what
 *   still runs kill_grace_ms after the first is SIGKILLed, so the result is
 *   written before Slurm's own SIGKILL when Slurm waits longer.  The first
 *   that came while a proc ran is the result's "signalled": "TERM" (or
 *   "INT", "HUP").  SIGKILL cannot be caught: then there is no result and
 *   the daemon reports the node lost.
 * - The result adds "timed_out", "signalled" ("" for none) and
 *   "own_failure": the node failed on its own, by a start failure, a
 *   timeout, an eviction (an emptydir over its size, shim_ctr.c; not
 *   checked once a signal came from outside), or a proc that ended
 *   non-zero before an outside SIGTERM came
 *   (after one, any ending is its doing; an outside SIGINT or SIGHUP
 *   excuses nothing).  Slurm signals every process of the step, so a proc
 *   may die of the SIGTERM meant for all just before the shim reads its
 *   own: a proc that ends by SIGTERM or with 143 that the shim did not
 *   cause is judged when the node is done, and the shim waits up to
 *   SLURM_TERM_WAIT_MS (0.5 s) for its own SIGTERM before calling it the
 *   proc's own failure.
 * - A setup failure once the run directory is made and claimed (a bad
 *   launch.json whose first_index still gives the directory, an
 *   environment that does not fit it: a GPU position Slurm did not give, a
 *   bad node list) still writes `started` ("failed ...") and a result:
 *   start_failed, exit_code 127, the message, "procs": [].
 *
 * VERDICT (jobfs-shim --slurm-verdict BATCH_DIR, on the batch host after
 * srun returned): with idx, restart and nodes from the same environment
 * and first_index from launch.json, it reads
 * BATCH_DIR/<idx>/<restart>/<node>/result for node 0 .. nodes-1 and exits
 * 1 if a node failed on its own (own_failure, or a non-zero exit_code not
 * explained by an outside SIGTERM, or a result that cannot be read), else
 * 143 if a node was stopped by an outside SIGTERM (nodes without a result
 * then were killed with it), else 1 if a node has no result (lost), else 0.
 * When not 0 it says why in one line on stderr.
 */
#include "tools/shim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* ---- launch.json ---- */

/* slurm.first_index alone, for a launch.json that is bad elsewhere. */
static bool slurm_first_index(json_t *root, int64_t *out)
{
	json_int_t x;
	json_t *sl = json_object_get(root, "slurm");
	if (!json_is_object(sl) || !jf_shim_get_int(sl, "first_index", SLURM_MAX_COUNT, &x))
		return false;
	*out = x;
	return true;
}

int launch_parse_slurm(const struct jf_shim_launch *l, struct launch_slurm *ls, char *err,
		       size_t errlen)
{
	json_t *sl = json_object_get(l->root, "slurm");
	json_int_t x;
	if (!json_is_object(sl)) {
		snprintf(err, errlen, "launch.json: slurm: must be an object");
		return -1;
	}
	static const struct {
		const char *key;
		int64_t min, max;
		size_t off;
	} ints[] = {
		{ "first_index", 0, SLURM_MAX_COUNT, offsetof(struct launch_slurm, first_index) },
		{ "tasks", 1, SLURM_MAX_COUNT, offsetof(struct launch_slurm, tasks) },
		{ "attempt_base", 0, SLURM_MAX_COUNT, offsetof(struct launch_slurm, attempt_base) },
		{ "timeout_ms", 0, SLURM_MAX_MS, offsetof(struct launch_slurm, timeout_ms) },
		{ "kill_grace_ms", 0, SLURM_MAX_MS, offsetof(struct launch_slurm, kill_grace_ms) },
		{ "master_port_base", 1, 65535 - (SLURM_PORT_SPAN - 1),
		  offsetof(struct launch_slurm, master_port_base) },
	};
	for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]); k++) {
		if (!jf_shim_get_int(sl, ints[k].key, ints[k].max, &x) || x < ints[k].min) {
			snprintf(err, errlen,
				 "launch.json: slurm.%s: must be an integer from %" PRId64
				 " to %" PRId64,
				 ints[k].key, ints[k].min, ints[k].max);
			return -1;
		}
		*(int64_t *)((char *)ls + ints[k].off) = x;
	}
	json_t *ni = json_object_get(sl, "node_index");
	if (!json_is_boolean(ni)) {
		snprintf(err, errlen, "launch.json: slurm.node_index: must be true or false");
		return -1;
	}
	ls->node_index = json_is_true(ni);
	ls->ckpt_root = json_string_value(json_object_get(sl, "ckpt_root"));
	if (!ls->ckpt_root || (ls->ckpt_root[0] && ls->ckpt_root[0] != '/') ||
	    strlen(ls->ckpt_root) > PATH_MAX - 32) {
		snprintf(err, errlen,
			 "launch.json: slurm.ckpt_root: must be \"\" or an absolute "
			 "path under %d bytes",
			 PATH_MAX - 32);
		return -1;
	}
	json_t *slots = json_object_get(sl, "gpu_slots");
	if (!slots || json_is_null(slots))
		return 0;
	if (!json_is_array(slots) || json_array_size(slots) != l->nprocs) {
		snprintf(err, errlen,
			 "launch.json: slurm.gpu_slots: must be an array of %zu "
			 "entries, one per proc",
			 l->nprocs);
		return -1;
	}
	for (size_t i = 0; i < l->nprocs; i++) {
		json_t *a = json_array_get(slots, i);
		if (json_is_null(a))
			continue;
		size_t n = json_array_size(a);
		if (!json_is_array(a) || n > SLURM_MAX_GPUS) {
			snprintf(err, errlen,
				 "launch.json: slurm.gpu_slots[%zu]: must be null or "
				 "an array of at most %d GPU positions",
				 i, SLURM_MAX_GPUS);
			return -1;
		}
		ls->has_slots[i] = true;
		ls->nslots[i] = n;
		for (size_t k = 0; k < n; k++) {
			json_t *v = json_array_get(a, k);
			json_int_t pos = json_is_integer(v) ? json_integer_value(v) : -1;
			if (pos < 0 || pos >= SLURM_MAX_GPUS) {
				snprintf(err, errlen,
					 "launch.json: slurm.gpu_slots[%zu][%zu]: must "
					 "be a position from 0 to %d",
					 i, k, SLURM_MAX_GPUS - 1);
				return -1;
			}
			for (size_t j = 0; j < k; j++)
				if (ls->slots[i][j] == (int)pos) {
					snprintf(err, errlen,
						 "launch.json: slurm.gpu_slots[%zu]: "
						 "position %d twice",
						 i, (int)pos);
					return -1;
				}
			ls->slots[i][k] = (int)pos;
		}
	}
	return 0;
}

/* ---- setup and records ---- */

/* slurm mode: what srun left open from fd 3 up stays ours, not the procs'. */
static void cloexec_inherited(void)
{
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	long max = sysconf(_SC_OPEN_MAX);
	for (long fd = 3; fd < (max > 0 ? max : 1024); fd++)
		fcntl((int)fd, F_SETFD, FD_CLOEXEC);
}

/* slurm mode: the verdict of the node (see the top); after run_loop. */
void slurm_conclude(struct shim *s, int node_exit)
{
	if (s->start_failed || s->setup_failed || s->timed_out || s->evicted ||
	    (s->term_suspect && !s->outside_term) || (!s->outside_term && node_exit != 0))
		s->own_failure = true;
}

static int slurm_exit_code(const struct shim *s)
{
	if (s->outside_term && !s->own_failure)
		return 128 + SIGTERM;
	return s->own_failure ? 1 : 0;
}

/* ---- slurm mode: environment, directories, hint ---- */

/* A decimal number and nothing else, at most max. */
static bool parse_u64(const char *str, uint64_t max, uint64_t *out)
{
	if (!str || !str[0] || strlen(str) > 20)
		return false;
	uint64_t v = 0;
	for (const char *p = str; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		uint64_t d = (uint64_t)(*p - '0');
		if (d > max || v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

/* 1 set and read, 0 absent (*out untouched), -1 not a number up to max. */
static int env_num(const char *name, uint64_t max, uint64_t *out, char *err, size_t n)
{
	const char *v = getenv(name);
	if (!v)
		return 0;
	if (!parse_u64(v, max, out)) {
		snprintf(err, n, "%s: '%.40s' is not a number from 0 to %" PRIu64, name, v, max);
		return -1;
	}
	return 1;
}

/*
 * What names this node's run directory: SLURM_ARRAY_TASK_ID and
 * SLURM_RESTART_COUNT (absent: 0), and with node also SLURM_JOB_ID and
 * SLURM_NODEID, which only srun gives.
 */
static int slurm_env_read(struct slurm_env *e, bool node, char *err, size_t n)
{
	memset(e, 0, sizeof(*e));
	if (env_num("SLURM_ARRAY_TASK_ID", SLURM_MAX_COUNT, &e->array_task, err, n) < 0 ||
	    env_num("SLURM_RESTART_COUNT", SLURM_MAX_COUNT, &e->restart, err, n) < 0)
		return -1;
	if (!node)
		return 0;
	int r = env_num("SLURM_JOB_ID", UINT32_MAX, &e->job_id, err, n);
	if (r == 0 || (r > 0 && e->job_id == 0)) {
		snprintf(err, n, "SLURM_JOB_ID: not set: not under srun");
		return -1;
	}
	if (r < 0)
		return -1;
	r = env_num("SLURM_NODEID", SLURM_MAX_NODES - 1, &e->node, err, n);
	if (r == 0)
		snprintf(err, n, "SLURM_NODEID: not set: not under srun");
	return r > 0 ? 0 : -1;
}

/* The node count: SLURM_JOB_NUM_NODES, else SLURM_NNODES. */
static int slurm_env_nodes(struct slurm_env *e, char *err, size_t n)
{
	static const char *const names[] = { "SLURM_JOB_NUM_NODES", "SLURM_NNODES" };
	for (size_t k = 0; k < 2; k++) {
		int r = env_num(names[k], SLURM_MAX_NODES, &e->nnodes, err, n);
		if (r < 0)
			return -1;
		if (r > 0 && e->nnodes == 0) {
			snprintf(err, n, "%s: 0 nodes", names[k]);
			return -1;
		}
		if (r > 0) {
			e->nnodes_var = names[k];
			return 0;
		}
	}
	snprintf(err, n, "SLURM_JOB_NUM_NODES: not set (nor SLURM_NNODES)");
	return -1;
}

static bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_';
}

/*
 * The first host of a Slurm host list into out: "n1" -> n1, "n[1-3]" -> n1,
 * "gpu[07,09]" -> gpu07, "a1,b2" -> a1, "r[1-2]-n[3-4]" -> r1-n3.  -1 for
 * anything else.
 */
static int first_host(const char *list, char *out, size_t n)
{
	size_t o = 0;
	for (const char *p = list; *p && *p != ',';) {
		if (*p != '[') {
			if (!host_char(*p) || o + 1 >= n)
				return -1;
			out[o++] = *p++;
			continue;
		}
		p++;
		size_t digits = 0;
		for (; *p >= '0' && *p <= '9'; p++, digits++) {
			if (o + 1 >= n)
				return -1;
			out[o++] = *p;
		}
		if (digits == 0)
			return -1;
		for (; *p && *p != ']'; p++)
			if (!(*p >= '0' && *p <= '9') && *p != '-' && *p != ',')
				return -1;
		if (*p != ']')
			return -1;
		p++;
	}
	if (o == 0)
		return -1;
	out[o] = '\0';
	return 0;
}

/* An address as srun gives it: IPv4, IPv6 (with a zone) or a host name. */
static bool addr_ok(const char *a)
{
	size_t len = strlen(a);
	if (len == 0 || len > SLURM_HOST_MAX)
		return false;
	for (const char *p = a; *p; p++)
		if (!host_char(*p) && *p != ':' && *p != '%')
			return false;
	return true;
}

/* mkdir -p path (relative to dirfd unless absolute), new ones with mode. */
static int mkdirs_at(int dirfd, const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdirat(dirfd, buf, mode) < 0 && errno != EEXIST)
			return -1;
		*p = c;
		if (c == '\0')
			return 0;
		while (p[1] == '/')
			p++;
		if (p[1] == '\0')
			return 0;
	}
}

/* Make name (a directory under dirfd, mode when new) the launch user's
 * when we are root; not through a symbolic link. */
static int dir_own(int dirfd, const char *name, mode_t mode, const struct jf_shim_launch *l)
{
	if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
		return -1;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = geteuid() == 0 ? fchown(fd, l->uid, l->gid) : 0;
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

/* "NAME=value" into s->vars; false on ENOMEM. */
__attribute__((format(printf, 2, 3))) static bool var_add(struct shim *s, const char *fmt, ...)
{
	va_list ap;
	char *v = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&v, fmt, ap);
	va_end(ap);
	if (n < 0 || s->nvars >= SLURM_NVARS)
		return false;
	s->vars[s->nvars++] = v;
	return true;
}

/* Slurm's CUDA_VISIBLE_DEVICES as a list: ids[k] points into buf. */
static int cuda_split(const char *cuda, char *buf, size_t bufn, const char **ids, size_t *nids,
		      char *err, size_t n)
{
	*nids = 0;
	if (!cuda || !cuda[0])
		return 0;
	if (strlen(cuda) >= bufn) {
		snprintf(err, n, "CUDA_VISIBLE_DEVICES: longer than %zu bytes", bufn - 1);
		return -1;
	}
	strcpy(buf, cuda);
	for (char *p = buf, *q; p; p = q) {
		q = strchr(p, ',');
		if (q)
			*q++ = '\0';
		size_t len = strlen(p);
		bool ok = len > 0 && len <= SLURM_GPU_ID_MAX;
		for (const char *c = p; ok && *c; c++)
			ok = host_char(*c) || *c == ':' || *c == '/';
		if (!ok || *nids >= SLURM_MAX_GPUS) {
			snprintf(err, n,
				 "CUDA_VISIBLE_DEVICES: '%.60s' is not a list of at most %d "
				 "GPU ids",
				 cuda, SLURM_MAX_GPUS);
			return -1;
		}
		ids[(*nids)++] = p;
	}
	return 0;
}

/* CUDA_VISIBLE_DEVICES for each proc (see the top). */
static int slurm_gpus(struct shim *s, char *err, size_t n)
{
	const struct launch_slurm *ls = &s->sl;
	char buf[SLURM_ENV_MAX];
	const char *ids[SLURM_MAX_GPUS];
	size_t nids = 0;
	bool split = false;

	for (size_t i = 0; i < s->l.nprocs; i++) {
		if (!ls->has_slots[i]) {
			if (!s->env.cuda)
				continue; /* unset stays unset */
			if (strlen(s->env.cuda) >= SLURM_ENV_MAX) {
				snprintf(err, n, "CUDA_VISIBLE_DEVICES: longer than %d bytes",
					 SLURM_ENV_MAX - 1);
				return -1;
			}
			if (asprintf(&s->cuda[i], "CUDA_VISIBLE_DEVICES=%s", s->env.cuda) < 0) {
				s->cuda[i] = NULL;
				goto nomem;
			}
			continue;
		}
		if (!split) {
			if (cuda_split(s->env.cuda, buf, sizeof(buf), ids, &nids, err, n) < 0)
				return -1;
			split = true;
		}
		char val[SLURM_ENV_MAX] = "";
		size_t off = 0;
		for (size_t k = 0; k < ls->nslots[i]; k++) {
			size_t pos = (size_t)ls->slots[i][k];
			if (pos >= nids) {
				snprintf(err, n,
					 "slurm.gpu_slots[%zu] (%s): GPU position %zu, but "
					 "Slurm gave %zu GPU%s (CUDA_VISIBLE_DEVICES=%.40s)",
					 i, s->l.procs[i].name, pos, nids, nids == 1 ? "" : "s",
					 s->env.cuda ? s->env.cuda : "unset");
				return -1;
			}
			/* fits: the ids come from a string under SLURM_ENV_MAX and
			 * each appears once */
			off += (size_t)snprintf(val + off, sizeof(val) - off, "%s%s", k ? "," : "",
						ids[pos]);
		}
		if (asprintf(&s->cuda[i], "CUDA_VISIBLE_DEVICES=%s", val) < 0) {
			s->cuda[i] = NULL;
			goto nomem;
		}
	}
	return 0;
nomem:
	snprintf(err, n, "out of memory");
	return -1;
}

/* Does entry ("NAME=...") set a variable that var ("NAME=...") sets? */
static bool same_var(const char *entry, const char *var)
{
	size_t len = (size_t)(strchr(var, '=') - var) + 1;
	return strncmp(entry, var, len) == 0;
}

/* env (NULL-terminated) with proc i's JOB_* variables and
 * CUDA_VISIBLE_DEVICES over it: a new array of the same strings, or NULL */
static char **env_over(struct shim *s, size_t i, char *const *env)
{
	size_t old = 0;
	while (env && env[old])
		old++;
	char **v = calloc(old + s->nvars + 2, sizeof(*v));
	if (!v)
		return NULL;
	size_t k = 0;
	for (size_t j = 0; j < old; j++) {
		bool over = s->cuda[i] && same_var(env[j], s->cuda[i]);
		for (size_t m = 0; m < s->nvars && !over; m++)
			over = same_var(env[j], s->vars[m]);
		if (!over)
			v[k++] = env[j];
	}
	for (size_t m = 0; m < s->nvars; m++)
		v[k++] = s->vars[m];
	if (s->cuda[i])
		v[k++] = s->cuda[i];
	return v;
}

/* Each proc's envp, and its container's environment, with the JOB_*
 * variables and CUDA_VISIBLE_DEVICES over it. */
static int slurm_envp(struct shim *s, char *err, size_t n)
{
	for (size_t i = 0; i < s->l.nprocs; i++) {
		struct jf_shim_proc *lp = &s->l.procs[i];
		char **v = env_over(s, i, lp->envp);
		char **iv = lp->image ? env_over(s, i, lp->image->env) : NULL;
		if (!v || (lp->image && !iv)) {
			free(v);
			free(iv);
			snprintf(err, n, "out of memory");
			return -1;
		}
		free((void *)lp->envp); /* the strings are launch.root's, or ours */
		lp->envp = v;
		if (iv) {
			free((void *)s->l.images[i].env);
			s->l.images[i].env = iv;
		}
	}
	return 0;
}

/*
 * Once the run is claimed: what launch.json and Slurm's environment must
 * agree on, the directories the procs get, and their environment.
 * run_dir is BATCH_DIR/<idx>/<restart>/<node> as the shim was given it.
 */
static int slurm_fit(struct shim *s, const char *run_dir, char *err, size_t n)
{
	struct slurm_env *e = &s->env;
	const struct launch_slurm *ls = &s->sl;
	char addr[SLURM_HOST_MAX + 1], ckpt[PATH_MAX];

	if (slurm_env_nodes(e, err, n) < 0)
		return -1;
	if (e->node >= e->nnodes) {
		snprintf(err, n, "SLURM_NODEID %" PRIu64 ": not below %s %" PRIu64, e->node,
			 e->nnodes_var, e->nnodes);
		return -1;
	}
	if (s->idx >= ls->tasks) {
		snprintf(err, n,
			 "task index %" PRId64 " (slurm.first_index %" PRId64
			 " + SLURM_ARRAY_TASK_ID %" PRIu64 "): not below slurm.tasks %" PRId64,
			 s->idx, ls->first_index, e->array_task, ls->tasks);
		return -1;
	}
	e->port_job = e->job_id;
	if (env_num("SLURM_ARRAY_JOB_ID", UINT32_MAX, &e->port_job, err, n) < 0)
		return -1;
	e->launch_ip = getenv("SLURM_LAUNCH_NODE_IPADDR");
	if (e->launch_ip && !e->launch_ip[0])
		e->launch_ip = NULL;
	e->nodelist = getenv("SLURM_JOB_NODELIST");
	e->cuda = getenv("CUDA_VISIBLE_DEVICES");
	if (e->launch_ip) {
		if (!addr_ok(e->launch_ip)) {
			snprintf(err, n, "SLURM_LAUNCH_NODE_IPADDR: '%.60s' is not an address",
				 e->launch_ip);
			return -1;
		}
		snprintf(addr, sizeof(addr), "%s", e->launch_ip);
	} else if (!e->nodelist) {
		snprintf(err, n, "SLURM_LAUNCH_NODE_IPADDR and SLURM_JOB_NODELIST: neither is set");
		return -1;
	} else if (first_host(e->nodelist, addr, sizeof(addr)) < 0) {
		snprintf(err, n, "SLURM_JOB_NODELIST: '%.60s' is not a host list", e->nodelist);
		return -1;
	} else if (e->nnodes == 1) {
		/* one node and no srun (the batch script runs the shim
		 * itself): rank 0 is this host, whatever its name resolves to */
		snprintf(addr, sizeof(addr), "127.0.0.1");
	}
	int64_t port = ls->master_port_base +
		       (int64_t)((e->port_job * 131 + (uint64_t)s->idx) % SLURM_PORT_SPAN);
	int64_t completion = e->nnodes > 1 ? (int64_t)e->node : s->idx;

	if (!s->l.cwd) {
		if (snprintf(s->work, sizeof(s->work), "%s/work", run_dir) >=
		    (int)sizeof(s->work)) {
			snprintf(err, n, "run directory: path too long");
			return -1;
		}
		if (dir_own(s->dirfd, "work", 0700, &s->l) < 0) {
			snprintf(err, n, "%.180s: %s", s->work, strerror(errno));
			return -1;
		}
	}
	ckpt[0] = '\0';
	if (ls->ckpt_root[0]) {
		snprintf(ckpt, sizeof(ckpt), "%s/%" PRId64, ls->ckpt_root, s->idx);
		if (mkdirs_at(AT_FDCWD, ls->ckpt_root, 0755) < 0 ||
		    dir_own(AT_FDCWD, ckpt, 0700, &s->l) < 0) {
			snprintf(err, n, "checkpoint directory %.160s: %s", ckpt, strerror(errno));
			return -1;
		}
	}

	bool ok = var_add(s, "JOB_TASK_INDEX=%" PRId64, s->idx) &&
		  var_add(s, "JOB_TASK_COUNT=%" PRId64, ls->tasks) &&
		  var_add(s, "JOB_NODE_INDEX=%" PRIu64, e->node) &&
		  var_add(s, "JOB_NODE_COUNT=%" PRIu64, e->nnodes) &&
		  var_add(s, "JOB_ATTEMPT=%" PRId64, ls->attempt_base + (int64_t)e->restart) &&
		  var_add(s, "JOB_MASTER_ADDR=%s", addr) &&
		  var_add(s, "JOB_MASTER_PORT=%" PRId64, port) &&
		  (!ls->node_index || var_add(s, "JOB_COMPLETION_INDEX=%" PRId64, completion)) &&
		  (!ckpt[0] || var_add(s, "JOB_CHECKPOINT_DIR=%s", ckpt));
	if (!ok) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	if (slurm_gpus(s, err, n) < 0)
		return -1;
	return slurm_envp(s, err, n);
}

/* Node 0: BATCH_DIR/starts/<idx>.<restart> (see the top).  Advice only:
 * a failure is said on stderr and changes nothing else. */
static void hint_write(struct shim *s, int batch_fd)
{
	char name[64], tmp[72], line[64];
	if (s->env.node != 0)
		return;
	snprintf(name, sizeof(name), "%" PRId64 ".%" PRIu64, s->idx, s->env.restart);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	int n = snprintf(line, sizeof(line), "%" PRIu64 " %" PRId64 "\n", s->env.job_id,
			 s->start_ms);
	int dfd = -1, fd = -1;
	if (mkdirat(batch_fd, "starts", 0755) < 0 && errno != EEXIST)
		goto fail;
	dfd = openat(batch_fd, "starts", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		goto fail;
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, line, (size_t)n) < 0)
		goto fail;
	int rc = close(fd);
	fd = -1;
	if (rc < 0 || renameat(dfd, tmp, dfd, name) < 0)
		goto fail;
	close(dfd);
	return;
fail:
	fprintf(stderr, "jobfs-shim: starts/%s: %s\n", name, strerror(errno));
	if (fd >= 0)
		close(fd);
	if (dfd >= 0) {
		unlinkat(dfd, tmp, 0);
		close(dfd);
	}
}

/*
 * slurm mode, once the run is claimed, when nothing will start: the
 * message on stderr, `started` and the result say why.  Returns code, or
 * 111 when the result could not be written.
 */
__attribute__((format(printf, 3, 4))) static int setup_fail(struct shim *s, int code,
							    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->start_msg, sizeof(s->start_msg), fmt, ap);
	va_end(ap);
	msg_clean(s->start_msg);
	fprintf(stderr, "jobfs-shim: %s\n", s->start_msg);
	s->setup_failed = s->start_failed = true;
	report_started(s);
	return write_result(s) == 0 ? code : SHIM_EXIT_SYSTEM;
}

/*
 * The node's images (reference 8.1), once the run is claimed: Slurm's
 * allocation runs already, so the pull is part of it (the local mode pulls
 * before its claim).  The cache is the state directory's, which every node
 * shares; its lock per image makes the first node of a gang pull and the
 * others find the layers there.  The notes (Pulling, Pulled, ...) go to
 * RUN_DIR/notes, which the daemon turns into the node's events when the
 * element ends.  Containers need the job to run as root on the node.
 */
static int slurm_images(struct shim *s, const char *run_dir, char *err, size_t n)
{
	if (snprintf(s->run_dir, sizeof(s->run_dir), "%s", run_dir) >= (int)sizeof(s->run_dir)) {
		snprintf(err, n, "%.200s...: path too long for containers", run_dir);
		return -1;
	}
	size_t nimg = 0;
	for (size_t i = 0; i < s->l.nprocs; i++)
		nimg += s->l.procs[i].image != NULL;
	if (!nimg)
		return 0;
	if (geteuid() != 0) {
		snprintf(err, n,
			 "containers: the job runs as uid %u on this node, and jobfs runs "
			 "containers as root only (rootless containers are not supported); "
			 "mount jobfs with --runtime host to run the command on the node",
			 (unsigned)geteuid());
		return -1;
	}
	s->notes_fd = openat(s->dirfd, "notes", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
			     0644);
	if (s->notes_fd < 0) {
		snprintf(err, n, "RUN_DIR/notes: %s", strerror(errno));
		return -1;
	}
	if (ctr_pull(s) < 0) {
		snprintf(err, n, "%s", s->start_msg);
		return -1;
	}
	return 0;
}

/* ---- the commands ---- */

/* jobfs-shim --slurm BATCH_DIR: one node of an element (see the top). */
int cmd_slurm(struct shim *s, const char *batch)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1 };
	char err[SHIM_MSG_MAX], rel[96], run_dir[PATH_MAX];
	int batch_fd = -1, code;
	int64_t first;

	s->slurm = true;
	cloexec_inherited();
	std_fds();
	signal(SIGPIPE, SIG_IGN);
	umask(022);
	if (signals_block(s, sigs, sizeof(sigs) / sizeof(sigs[0])) < 0)
		return fail(s, SHIM_EXIT_SYSTEM, "signalfd: %s", strerror(errno));
	if (slurm_env_read(&s->env, true, err, sizeof(err)) < 0)
		return fail(s, SHIM_EXIT_USAGE, "%s", err);
	batch_fd = open(batch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (batch_fd < 0)
		return fail(s, SHIM_EXIT_USAGE, "%s: %s", batch, strerror(errno));

	/* A bad launch.json is said in the result too, if it names the run. */
	int lrc = launch_read(s, batch_fd, err, sizeof(err));
	if (lrc == 0)
		first = s->sl.first_index;
	else if (!slurm_first_index(s->l.root, &first)) {
		code = fail(s, SHIM_EXIT_USAGE, "%s", err);
		goto out;
	}
	s->idx = first + (int64_t)s->env.array_task;
	snprintf(rel, sizeof(rel), "%" PRId64 "/%" PRIu64 "/%" PRIu64, s->idx, s->env.restart,
		 s->env.node);
	if (snprintf(run_dir, sizeof(run_dir), "%s/%s", batch, rel) >= (int)sizeof(run_dir)) {
		code = fail(s, SHIM_EXIT_USAGE, "%s: path too long", batch);
		goto out;
	}
	if (mkdirs_at(batch_fd, rel, 0755) < 0 ||
	    (s->dirfd = openat(batch_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		code = fail(s, SHIM_EXIT_SYSTEM, "%s: %s", run_dir, strerror(errno));
		goto out;
	}
	s->start_ms = wall_ms();
	switch (claim(s)) {
	case 0:
		break;
	case 1:
		code = fail(s, SHIM_EXIT_USAGE,
			    "%s: claimed already: this run was started "
			    "before",
			    run_dir);
		goto out;
	default:
		code = fail(s, SHIM_EXIT_SYSTEM, "%s/claim: %s", run_dir, strerror(errno));
		goto out;
	}
	hint_write(s, batch_fd);
	if (lrc < 0) {
		code = setup_fail(s, SHIM_EXIT_USAGE, "%s", err);
		goto out;
	}
	if (slurm_fit(s, run_dir, err, sizeof(err)) < 0) {
		code = setup_fail(s, SHIM_EXIT_USAGE, "%s", err);
		goto out;
	}
	if (prepare(s, err, sizeof(err)) < 0) {
		code = setup_fail(s, SHIM_EXIT_SYSTEM, "%s", err);
		goto out;
	}
	if (slurm_images(s, run_dir, err, sizeof(err)) < 0) {
		/* the node's own failure, as a command that cannot be run */
		code = setup_fail(s, 1, "%s", err);
		goto out;
	}

	node_start(s);
	if (!s->start_failed && s->sl.timeout_ms > 0)
		s->timeout_at = mono_ms() + s->sl.timeout_ms;
	report_gpus(s);
	report_started(s);

	if (run_loop(s) < 0) {
		fprintf(stderr, "jobfs-shim: poll: %s\n", strerror(errno));
		forward(s, SIGKILL);
		node_tidy(s);
		code = SHIM_EXIT_SYSTEM;
		goto out;
	}
	code = write_result(s) == 0 ? slurm_exit_code(s) : SHIM_EXIT_SYSTEM;
	node_tidy(s);
	if (s->cg[0])
		rmdir(s->cg);
out:
	if (batch_fd >= 0)
		close(batch_fd);
	return code;
}

/* What one node's result says, for the verdict. */
enum node_verdict {
	NV_OK,
	NV_FAILED, /* on its own, or unreadable */
	NV_TERM,   /* stopped by an outside SIGTERM */
	NV_MISSING,
};

static enum node_verdict node_verdict(int batch_fd, const char *rel, char *why, size_t n)
{
	size_t len;
	json_error_t je;
	char *text = read_small(batch_fd, rel, &len);
	if (!text) {
		if (errno == ENOENT)
			return NV_MISSING;
		snprintf(why, n, "result: %s", errno == EFBIG ? "too big" : strerror(errno));
		return NV_FAILED;
	}
	json_t *r = json_loadb(text, len, 0, &je);
	free(text);
	json_t *code = json_object_get(r, "exit_code");
	if (!json_is_object(r) || !json_is_integer(code)) {
		snprintf(why, n, "result: not a result (%s)", r ? "no exit_code" : je.text);
		json_decref(r);
		return NV_FAILED;
	}
	const char *sig = json_string_value(json_object_get(r, "signalled"));
	const char *msg = json_string_value(json_object_get(r, "message"));
	bool term = sig && !strcmp(sig, "TERM");
	bool own = json_is_true(json_object_get(r, "own_failure")) ||
		   (json_integer_value(code) != 0 && !term);
	snprintf(why, n, "%s", msg && msg[0] ? msg : "no message");
	json_decref(r);
	return own ? NV_FAILED : term ? NV_TERM : NV_OK;
}

/* jobfs-shim --slurm-verdict BATCH_DIR: the element's exit status. */
int cmd_verdict(struct shim *s, const char *batch)
{
	char err[SHIM_MSG_MAX], why[SHIM_MSG_MAX] = "";
	int64_t first;
	int batch_fd, code = 0;
	uint64_t bad_node = 0;
	enum node_verdict worst = NV_OK;

	std_fds();
	s->slurm = true;
	if (slurm_env_read(&s->env, false, err, sizeof(err)) < 0 ||
	    slurm_env_nodes(&s->env, err, sizeof(err)) < 0)
		return fail(s, SHIM_EXIT_USAGE, "verdict: %s", err);
	batch_fd = open(batch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (batch_fd < 0)
		return fail(s, SHIM_EXIT_USAGE, "verdict: %s: %s", batch, strerror(errno));
	/* only first_index matters here: what else is bad, the nodes said */
	if (launch_read(s, batch_fd, err, sizeof(err)) == 0)
		first = s->sl.first_index;
	else if (!slurm_first_index(s->l.root, &first)) {
		fprintf(stderr, "jobfs-shim: verdict 1: %s\n", err);
		close(batch_fd);
		return 1;
	}
	int64_t idx = first + (int64_t)s->env.array_task;

	/* the first node of the worst kind: failed, then stopped, then missing */
	static const int rank[] = { [NV_OK] = 0, [NV_MISSING] = 1, [NV_TERM] = 2, [NV_FAILED] = 3 };
	for (uint64_t node = 0; node < s->env.nnodes; node++) {
		char rel[128], w[SHIM_MSG_MAX];
		snprintf(rel, sizeof(rel), "%" PRId64 "/%" PRIu64 "/%" PRIu64 "/result", idx,
			 s->env.restart, node);
		enum node_verdict v = node_verdict(batch_fd, rel, w, sizeof(w));
		if (rank[v] > rank[worst]) {
			worst = v;
			bad_node = node;
			snprintf(why, sizeof(why), "%s", w);
		}
	}
	close(batch_fd);
	switch (worst) {
	case NV_OK:
		return 0;
	case NV_FAILED:
		code = 1;
		fprintf(stderr,
			"jobfs-shim: verdict 1: task %" PRId64 " run %" PRIu64 " node %" PRIu64
			" failed: %s\n",
			idx, s->env.restart, bad_node, why);
		break;
	case NV_TERM: {
		static const char said[] = "stopped by SIGTERM from outside: ";
		const char *how =
			strncmp(why, said, sizeof(said) - 1) ? why : why + sizeof(said) - 1;
		code = 128 + SIGTERM;
		fprintf(stderr,
			"jobfs-shim: verdict 143: task %" PRId64 " run %" PRIu64 " node %" PRIu64
			" was stopped by SIGTERM from outside (%s)\n",
			idx, s->env.restart, bad_node, how);
		break;
	}
	case NV_MISSING:
		code = 1;
		fprintf(stderr,
			"jobfs-shim: verdict 1: task %" PRId64 " run %" PRIu64 " node %" PRIu64
			" left no result (lost)\n",
			idx, s->env.restart, bad_node);
		break;
	}
	return code;
}
