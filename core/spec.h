/*
 * spec.h - the task spec model and its three parsers.
 *
 * One model, struct jf_spec, comes from either form a user writes into a
 * group's or batch's spec.yaml: the native form (reference 2.1) or a
 * Kubernetes batch/v1 Job (reference 2.3, after ${VAR} substitution).  The
 * queue spec (reference 2.2) has its own small struct.
 *
 * Parsing is strict: unknown keys, wrong types, out-of-range values and bad
 * quantities fail with JF_EINVAL and a message naming the key and the line.
 * Keys jobfs understands but cannot honour fail with JF_ENOTSUP and say so.
 * K8s fields jobfs does not model are kept, by dotted path, in `ignored`.
 *
 * Limits (JF_SPEC_*) bound every input: size, depth, nodes and text bytes
 * after alias expansion, containers, env entries and bytes, argv entries
 * and bytes, counts, string and name lengths.  Each is refused with a
 * message that names the key, the line and the limit.
 *
 * Ownership: jf_spec_parse() returns a heap spec the caller frees with
 * jf_spec_free(); every string inside belongs to the spec.
 */
#ifndef JF_SPEC_H
#define JF_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define JF_SPEC_MAX_BYTES          (256 * 1024)  /* larger specs: JF_EFBIG */
#define JF_SPEC_MAX_DEPTH          32            /* nesting of maps/lists */
#define JF_SPEC_MAX_NODES          20000         /* YAML nodes after alias expansion */
#define JF_SPEC_MAX_EXPANDED       (1024 * 1024) /* scalar bytes after alias expansion */
#define JF_SPEC_MAX_CONTAINERS     16
#define JF_SPEC_MAX_ENV            1024         /* entries per container */
#define JF_SPEC_MAX_ENV_BYTES      (128 * 1024) /* per container: KEY=value\0 summed */
#define JF_SPEC_MAX_ENV_NAME       255          /* bytes of one variable name */
#define JF_SPEC_MAX_STRING         (64 * 1024)  /* one scalar */
#define JF_SPEC_MAX_NAME           63           /* name, container name */
#define JF_SPEC_MAX_COMPLETIONS    1000000      /* also the most parallelism */
#define JF_SPEC_MAX_COUNT          10000
#define JF_SPEC_MAX_NODES_PER_TASK 1024
#define JF_SPEC_MAX_ARGV           4096         /* command + args entries */
#define JF_SPEC_MAX_ARGV_BYTES     (256 * 1024) /* per container: command + args, NULs counted */
#define JF_SPEC_MAX_IGNORED        1000         /* K8s fields listed under ignored: */

struct jf_dep; /* core/deps.h: one entry of `after:` */

enum jf_billing { JF_BILL_ONDEMAND = 0, JF_BILL_SPOT = 1 };
enum jf_restart { JF_RESTART_NEVER = 0, JF_RESTART_ONFAILURE = 1 };
enum jf_spec_form { JF_FORM_NATIVE = 0, JF_FORM_K8S = 1 };

struct jf_kv {
	char *key;
	char *value;
};

/* image_pull_policy (Kubernetes' imagePullPolicy) */
enum jf_pull_policy {
	JF_PULL_DEFAULT = 0, /* Always for :latest or no tag, else IfNotPresent */
	JF_PULL_ALWAYS,
	JF_PULL_IFNOTPRESENT,
	JF_PULL_NEVER,
};

struct jf_container {
	char *name;  /* native single-container form: "main" */
	char *image; /* a valid reference (core/imgref.h), or NULL: the host */
	enum jf_pull_policy pull_policy;
	char **command; /* NULL-terminated, ncommand entries */
	size_t ncommand;
	char **args; /* NULL-terminated, nargs entries */
	size_t nargs;
	struct jf_kv *env; /* in the order written; later duplicates win */
	size_t nenv;
	int64_t cpu_milli;     /* limits.cpu, 0 = not given */
	int64_t mem_bytes;     /* limits.memory, 0 = not given */
	int gpus;              /* limits["nvidia.com/gpu"], -1 = not given */
	int64_t req_cpu_milli; /* requests as written (K8s), 0 = not given */
	int64_t req_mem_bytes;
};

enum jf_storage_type { JF_STORE_EMPTYDIR, JF_STORE_VOLUME, JF_STORE_OBJECT };

#define JF_SPEC_MAX_PORTS   32
#define JF_SPEC_MAX_STORAGE 16

/* ports: (reference 8.2): a container port forwarded from a host port */
struct jf_port {
	int port;   /* 1..65535 */
	char *name; /* NULL = none */
};

/* storage: (reference 8.3): one mount of every container of a node */
struct jf_storage {
	enum jf_storage_type type;
	char *name;     /* volume, object: a directory of /volumes, /objects; emptydir: optional */
	char *path;     /* mount path, absolute */
	int64_t size;   /* emptydir, bytes; 0 = not given */
	bool memory;    /* emptydir: medium Memory (a tmpfs) */
	bool read_only; /* volume: read_only; object: always */
};

/* Kubernetes podFailurePolicy */
enum jf_pfp_action { JF_PFP_FAILJOB, JF_PFP_FAILINDEX, JF_PFP_IGNORE, JF_PFP_COUNT };

struct jf_pfp_rule {
	enum jf_pfp_action action;
	bool on_exit_codes; /* else onPodConditions */
	char *container;    /* onExitCodes.containerName, NULL = any */
	bool op_in;         /* In (true) or NotIn (false) */
	int *values;        /* exit codes */
	size_t nvalues;
	bool on_disruption; /* onPodConditions DisruptionTarget status True */
};

/* Kubernetes successPolicy rule: indexes as closed ranges */
struct jf_range {
	int64_t lo, hi;
};

struct jf_success_rule {
	struct jf_range *indexes; /* NULL = any index */
	size_t nindexes;
	int64_t count; /* succeededCount, 0 = all of indexes */
};

struct jf_spec {
	enum jf_spec_form form;
	char *name; /* display name, NULL = the directory name */
	enum jf_billing billing;
	char *gpu;            /* model name, NULL = CPU-only */
	int gpus;             /* per node: 0,1,2,4,8 */
	int64_t completions;  /* default 1 */
	int64_t parallelism;  /* default completions */
	int64_t count;        /* /tasks only, default 1 */
	int64_t nodes;        /* default 1 */
	bool node_index;      /* default true */
	int64_t unit_runtime; /* seconds, 0 = not set */
	int64_t timeout;      /* seconds per attempt, default 1440m */
	enum jf_restart restart_policy;
	int64_t retries;      /* failed attempts allowed after the first; -1 = no per-task limit */
	int64_t max_failures; /* group failed-attempt limit, -1 = none */
	int64_t max_failed_indexes; /* K8s maxFailedIndexes, -1 = none */
	int64_t active_deadline;    /* K8s activeDeadlineSeconds, 0 = none */
	int64_t shm_size;           /* bytes, 0 = not set */
	char *registry_auth;        /* auth.json path (read as the writer), NULL = none */
	bool no_command;            /* no container gives command or args */
	int no_command_line;        /* where the first container is written */
	int storage_line;           /* where storage: is written, 0 = none */
	const char *command_hint;   /* where a command goes, in the spec's form */
	bool cpu_exclusive;
	struct jf_container *containers;
	size_t ncontainers; /* >= 1 */
	struct jf_storage *storage;
	size_t nstorage;
	struct jf_port *ports;
	size_t nports;
	struct jf_pfp_rule *pfp;
	size_t npfp;
	struct jf_success_rule *success;
	size_t nsuccess;
	struct jf_dep *after; /* `after:` (K8s: the annotation jobfs/after), in order */
	size_t nafter;
	const char *after_key; /* where it is written: "after", or the annotation's path */
	char **ignored;        /* K8s paths not modelled, e.g. "spec.template.metadata.labels" */
	size_t nignored;
	bool indexed; /* K8s completionMode: Indexed (jobfs exports
		       * JOB_COMPLETION_INDEX either way) */
	/* which keys were written, so a renderer can tell defaults apart */
	bool has_count;
};

/* What ${VAR} may name in a K8s spec.  NULL members are unknown variables. */
struct jf_subst {
	const char *job_name; /* ${JOB_NAME} */
	const char *queue;    /* ${QUEUE} */
	const char *group;    /* ${GROUP} */
};

/* Where the spec is being written: changes which keys are allowed. */
enum jf_spec_place {
	JF_PLACE_GROUP, /* /queues/<q>/groups/<g>: no `count` */
	JF_PLACE_BATCH, /* /tasks/<name>: `count` allowed; completions/parallelism refused */
};

/* Parse text (len bytes, need not be NUL-terminated).  Chooses the K8s
 * importer when the top level has apiVersion batch/v1 and kind Job.
 * On error returns the code, fills *err and leaves *out NULL. */
enum jf_err jf_spec_parse(const char *text, size_t len, enum jf_spec_place place,
			  const struct jf_subst *subst, struct jf_spec **out, struct jf_error *err);
void jf_spec_free(struct jf_spec *spec);

/* What the runtime that will run it allows, checked when a spec is
 * submitted (not when an accepted one is read again).  containers: nodes
 * run as OCI containers (reference 8.1), where an image may give the
 * command; else on the host, where each node needs a command and an image
 * is only named.  JF_ENOTSUP with a message naming the line. */
enum jf_err jf_spec_check_runtime(const struct jf_spec *s, bool containers, struct jf_error *err);

/* ${VAR} substitution alone; returns a malloc'd string the caller frees,
 * or NULL with *err set (unknown variable, unterminated ${).  "$$" is a
 * literal "$"; a "$" not followed by "{" is kept as is. */
char *jf_subst_apply(const char *text, size_t len, const struct jf_subst *subst,
		     struct jf_error *err);

/* True when the quick check says text (at most len bytes) could still become
 * a valid spec with more bytes appended: it is valid UTF-8 so far (an
 * incomplete trailing sequence is fine), has no NUL and no control characters
 * other than tab, CR, LF, and is within JF_SPEC_MAX_BYTES.  Used at write()
 * time to refuse what no later write could fix. */
bool jf_spec_text_plausible(const char *text, size_t len, struct jf_error *err);

struct jf_queue_spec {
	int64_t capacity;      /* nodes; 0 = unlimited (default) */
	int64_t group_timeout; /* seconds, 0 = off (default) */
	char *partition;       /* slurm partition, NULL = command-line default */
	char *spot_partition;  /* the same for spot work */
	bool private_;         /* `private: true` */
	bool keep_logs_set;    /* keep_logs given: it overrides the daemon's --keep-logs */
	int64_t keep_logs;     /* seconds a finished group's logs are kept; 0 = forever */
	/* reference 10: once the queue's cost within budget_period reaches
	 * budget, nothing new starts in it */
	bool budget_set;       /* budget given */
	int64_t budget;        /* micro-units of the cluster's currency */
	int64_t budget_period; /* seconds of the rolling window; 0 = the queue's whole life */
	bool budget_stop;      /* budget_action: stop (running work is stopped); else hold */
};

#define JF_BUDGET_MAX_UNITS  INT64_C(1000000000000) /* 10^12 currency units */
#define JF_BUDGET_PERIOD_MIN 60
#define JF_BUDGET_PERIOD_MAX (366 * 86400)

/* How many times jf_spec_parse ran in this process (the tests check that
 * a submission parses its spec once). */
uint64_t jf_spec_parse_count(void);
enum jf_err jf_queue_spec_parse(const char *text, size_t len, struct jf_queue_spec *out,
				struct jf_error *err);
void jf_queue_spec_release(struct jf_queue_spec *q);

#endif
