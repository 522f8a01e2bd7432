/*
 * shimproto.h - what the daemon and jobfs-shim say to each other through a
 * run directory, in one place: launch.json (what to run, written by the
 * backends, read by the shim) and the records the shim leaves there, read
 * back by the backends and the engine.  Linked by backends/ and by
 * tools/jobfs-shim; the containers of a later backend go through it too.
 *
 *   launch.json  {"uid":U,"gid":G,"groups":[G...],"cwd":PATH,"log_cap":BYTES,
 *                 "cpus":[N...],
 *                 "procs":[{"name":S,"argv":[S...],"envp":["K=V"...],
 *                           "mem_bytes":N,"cpu_milli":N,
 *                           "image":{"reference":S,"pull_policy":S,
 *                                    "command":[S...],"args":[S...],
 *                                    "env":["K=V"...]}}...],
 *                 "runtime":{"oci":PATH,"image_tool":PATH,"cache":DIR,
 *                            "insecure":[S...],"auth_file":PATH,
 *                            "pull_timeout_ms":N,"expose_address":S},
 *                 "registry_auth":PATH,"shm_bytes":N,"ports":[N...],
 *                 "mounts":[{"type":"emptydir"|"volume"|"object","name":S,
 *                            "source":PATH,"path":PATH,"size":N,
 *                            "memory":B,"read_only":B}...],
 *                 "evict_check_ms":N}
 *                 (image, command, args, runtime, registry_auth, the
 *                 limits, mounts and evict_check_ms only when there is
 *                 something to say)
 *                 (mounts: at most JF_SHIM_MAX_MOUNTS, each path
 *                 absolute, without a ".." component, ":", "," or a
 *                 control character, no two at one path; source for a
 *                 volume or an object only; size and memory for an
 *                 emptydir only, whose name is a file name, unique; an
 *                 object is read-only whatever it says)
 *                 (groups: the user's supplementary groups, resolved by the
 *                 daemon, so that the shim needs no user database and can
 *                 be linked statically; absent under Slurm, where the job
 *                 already runs as its user)
 *                 (the slurm backend adds its "slurm" object and may leave
 *                 cwd "": RUN_DIR/work, see tools/shim_slurm.c)
 *   claim        "local:PID:STARTTIME START_MS\n", created O_EXCL by the
 *                shim before it starts anything, fsynced; "cancelled\n"
 *                when a daemon gave the start up first (backends/local)
 *   started      "started START_MS PID...\n" or "failed START_MS MSG\n",
 *                replaced whole, not fsynced (the claim is the durable one)
 *   result       JSON: exit_code, signal, start_ms, end_ms, message,
 *                start_failed, pull_failed, evicted, procs[{name,
 *                exit_code, signal, oom_killed, image_digest}]; fsynced,
 *                renamed into place, its directory fsynced
 *   emptydir/    the node's emptydirs, one directory each by its name
 *                (a tmpfs mounted there for a Memory one, in the shim's
 *                mount namespace); removed when the node ends
 *   notes        slurm mode: "note TYPE REASON MESSAGE\n" lines (Pulling,
 *                Pulled, Created, ...), the events the local mode says on
 *                its ready pipe; read by the daemon when the element ends
 *   rotation     {"cap":N,"stdout":{"rotations":R,"dropped":B},"stderr":..,
 *                 "logs":..}, replaced whole after each log rotation
 *
 * Every file is read whole under JF_SHIM_FILE_MAX; a record that does not
 * parse is unreadable, never half-used.
 */
#ifndef JF_SHIMPROTO_H
#define JF_SHIMPROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backends/backend.h"

#define JF_SHIM_FILE_MAX   (1 << 20)
#define JF_SHIM_MAX_PROCS  16
#define JF_SHIM_NAME_MAX   63
#define JF_SHIM_LOG_FILES  3     /* stdout, stderr, logs */
#define JF_SHIM_MAX_GROUPS 65536 /* NGROUPS_MAX on Linux */
#define JF_SHIM_MAX_MOUNTS 16
#define JF_SHIM_PATH_MAX   1024 /* a mount's path or source */

extern const char *const jf_shim_log_names[JF_SHIM_LOG_FILES];

/* ---- launch.json ---- */

struct jf_shim_proc {
	const char *name;
	char *const *argv; /* NULL-terminated */
	char *const *envp;
	const struct jf_proc_image *image; /* NULL: a host process */
	int64_t mem_bytes, cpu_milli;      /* 0 = no limit */
};

struct jf_shim_launch {
	json_t *root; /* decoded: owns every string below */
	uid_t uid;
	gid_t gid;
	const gid_t *groups; /* supplementary groups, ngroups of them, when */
	size_t ngroups;      /*   has_groups (decoded: owned, freed by release) */
	bool has_groups;
	const char *cwd; /* decoded with cwd_optional: NULL = RUN_DIR/work */
	int64_t log_cap; /* bytes per log file, 0 = no cap */
	const int *cpus; /* cores to pin to, ncpus of them */
	size_t ncpus;
	struct jf_shim_proc procs[JF_SHIM_MAX_PROCS];
	size_t nprocs;
	const struct jf_runtime_conf *rt; /* NULL: no "runtime" */
	const char *registry_auth;        /* NULL = none */
	int64_t shm_bytes;                /* 0 = the default */
	const int *ports;                 /* decoded: owned (release frees) */
	size_t nports;
	const struct jf_mount *mounts; /* storage (reference 8.3) */
	size_t nmounts;
	int64_t evict_check_ms; /* 0 = the default */
	/* decoded: where procs[i].image and rt point */
	struct jf_proc_image images[JF_SHIM_MAX_PROCS];
	struct jf_runtime_conf rt_store;
	struct jf_mount mount_store[JF_SHIM_MAX_MOUNTS]; /* decoded: where mounts points */
};

/* launch.json's object for l (root unused; the strings are copied); NULL
 * when a string is not valid UTF-8 or memory runs out.  The caller may add
 * keys before writing it. */
json_t *jf_shim_launch_encode(const struct jf_shim_launch *l);
/* Decode buf into l (the caller releases it, also after a failure); -1 with
 * a message naming the key in err.  cwd_optional: "" or absent is NULL. */
int jf_shim_launch_decode(struct jf_shim_launch *l, const char *buf, size_t len, bool cwd_optional,
			  char *err, size_t errlen);
void jf_shim_launch_release(struct jf_shim_launch *l);
/* A non-negative integer at key no larger than max. */
bool jf_shim_get_int(json_t *o, const char *key, json_int_t max, json_int_t *out);

/* ---- storage (reference 8.3) ---- */

/* launch.json's word for a mount type, NULL for none. */
const char *jf_shim_mount_type_name(enum jf_mount_type t);
/*
 * The bytes the tree at dirfd takes on disk (st_blocks of every entry,
 * directories included, as du counts), not following symbolic links nor
 * crossing into other filesystems, and counted only until they pass limit
 * (limit > 0; then some number over it): the work of one check is bounded
 * by what the limit allows.  Directories deeper than JF_SHIM_DU_DEPTH below
 * dirfd are not entered.  dirfd stays open and where it was.
 */
#define JF_SHIM_DU_DEPTH 128
int64_t jf_shim_tree_usage(int dirfd, int64_t limit);
/* bytes as Kubernetes prints a quantity: in the largest exact binary unit
 * ("10Gi") or decimal one ("500M"), the shorter (binary when alike), else
 * the bytes */
void jf_shim_quantity(int64_t bytes, char *buf, size_t n);
/* The kubelet's words for an emptydir over its limit. */
void jf_shim_evict_message(const char *name, int64_t limit, char *buf, size_t n);

/* ---- the records ---- */

/* Read the whole file path, at most cap bytes, into *out (NUL-terminated,
 * the caller's to free).  -1 with errno set (EFBIG over the cap). */
int jf_shim_read(const char *path, size_t cap, char **out, size_t *len);
/* RUN_DIR/result into out (its cookie untouched): exit codes, times,
 * message, per-proc codes, timed_out, signalled and evicted.  -1 with errno ENOENT
 * when there is none yet, else -1 and why. */
int jf_shim_result(const char *run_dir, struct jf_run_result *out, char *why, size_t whylen);
/* One "note TYPE REASON MESSAGE" line (the ready pipe's, or a line of
 * RUN_DIR/notes under Slurm) into res as a note (cookie untouched); false
 * when it is not one. */
bool jf_shim_note_parse(const char *line, struct jf_run_result *res);
/* START_MS from RUN_DIR/started, 0 if none. */
int64_t jf_shim_started_ms(const char *run_dir);
/* Is text a list of GPU ids as Slurm numbers a node's GPUs ("0", "3,4"):
 * decimal ids joined by single commas, shorter than JF_SHIM_GPUS_MAX? */
#define JF_SHIM_GPUS_MAX 256
bool jf_shim_gpus_valid(const char *text);
/* RUN_DIR/gpus into buf: the GPUs Slurm gave the node (its step's
 * SLURM_STEP_GPUS), which jobfs-shim --slurm writes when it starts; ""
 * when there is none or it is not such a list. */
void jf_shim_gpus(const char *run_dir, char *buf, size_t n);

struct jf_shim_rotation {
	int64_t cap;
	int64_t rotations[JF_SHIM_LOG_FILES], dropped[JF_SHIM_LOG_FILES];
};
/* RUN_DIR/rotation's text; false when it does not parse. */
bool jf_shim_rotation_parse(const char *text, size_t len, struct jf_shim_rotation *out);

#endif
