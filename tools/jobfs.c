/*
 * jobfs - mount the batch-job tree (reference 7).
 *
 *   jobfs [--state DIR] [--cluster FILE] [--backend local|slurm] [--log-cap SIZE]
 *         [--slurm URL] [--slurm-ondemand PARTITION] [--slurm-spot PARTITION]
 *         [--slurm-poll MS] [--slurm-array-max N] [--slurm-jobcomp FILE]
 *         [--runtime auto|oci|host] [--oci-runtime PATH] [--insecure-registry HOST]...
 *         [--registry-auth FILE]
 *         [--reader-nice N] [--test-clock FILE] [--foreground] [--allow-other]
 *         [--debug] MOUNTPOINT
 *
 * Without --foreground the command returns once the tree is usable (a
 * script may `ls` it on the next line), leaving the daemon behind; errors
 * found before that are printed and reflected in the exit code.
 * `fusermount3 -u MOUNTPOINT` unmounts; the daemon then exits.  Node
 * processes outlive the daemon and are found again by the next one.
 *
 * Exit codes: 0 unmounted cleanly (or, without --foreground, mounted);
 * 1 bad usage; 2 could not start (state, cluster file, mount).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/local/local.h"
#include "backends/slurm/rest.h"
#include "backends/slurm/slurm.h"
#include "core/cluster.h"
#include "core/quantity.h"
#include "engine/engine.h"
#include "engine/testclock.h"
#include "fs/fs.h"
#include "fs/mountrec.h"
#include "store/store.h"

#define EXIT_USAGE     1
#define EXIT_SETUP     2
#define JF_LOG_CAP_MIN (64 * 1024) /* a smaller cap rotates for every few lines */

static const char usage_text[] =
	"usage: jobfs [--state DIR] [--cluster FILE] [--backend local|slurm] [--log-cap SIZE]\n"
	"             [--keep-logs DURATION]\n"
	"             [--slurm URL] [--slurm-ondemand PARTITION] [--slurm-spot PARTITION]\n"
	"             [--slurm-poll MS] [--slurm-array-max N] [--slurm-jobcomp FILE]\n"
	"             [--runtime auto|oci|host] [--oci-runtime PATH]\n"
	"             [--insecure-registry HOST[:PORT]]... [--registry-auth FILE]\n"
	"             [--reader-nice N] [--test-clock FILE] [--foreground] [--allow-other]\n"
	"             [--debug] MOUNTPOINT\n"
	"       jobfs --version | --help\n"
	"\n"
	"  --state DIR     database, logs and scratch (default $XDG_STATE_HOME/jobfs,\n"
	"                  else ~/.local/state/jobfs)\n"
	"  --cluster FILE  machines and prices (default: the built-in cluster); with\n"
	"                  --backend slurm the machines are Slurm's, the models and\n"
	"                  prices this file's\n"
	"  --backend NAME  where nodes run: local (default) or slurm\n"
	"  --log-cap SIZE  most bytes kept per node log file (stdout, stderr, logs):\n"
	"                  past it the file is rotated and only the last SIZE to\n"
	"                  2 x SIZE bytes are kept; 256Mi, 1Gi, ... (default 1Gi,\n"
	"                  at least 64Ki; 0 = no cap)\n"
	"  --keep-logs DURATION  a finished group's run directories (logs, work\n"
	"                  files) are removed this long after it ended: 12h, 7d, ...\n"
	"                  (default forever: until the group is removed); a queue's\n"
	"                  keep_logs overrides it\n"
	"  --slurm URL     slurmrestd: unix:/path/slurmrestd.socket (local auth) or\n"
	"                  http://host:port (JWT from $SLURM_JWT)\n"
	"  --slurm-ondemand PARTITION, --slurm-spot PARTITION\n"
	"                  where on-demand and spot work goes unless its queue's spec\n"
	"                  says (partition, spot_partition); default: Slurm's default\n"
	"                  partition and \"spot\"\n"
	"  --slurm-poll MS how often Slurm is asked (default 1000)\n"
	"  --slurm-array-max N  most indexes one job array spans (Slurm's\n"
	"                  MaxArraySize - 1; default 1000)\n"
	"  --slurm-jobcomp FILE  Slurm's jobcomp/filetxt file (JobCompLoc), if\n"
	"                  readable here: exact ends of preempted runs\n"
	"  --runtime WHICH where a spec's containers run: oci (its image, under the\n"
	"                  OCI runtime), host (its command on this host, the image\n"
	"                  only named) or auto (default: oci when jobfs runs as root\n"
	"                  with the local backend and an OCI runtime is installed;\n"
	"                  with --backend slurm host, and oci runs root's jobs in\n"
	"                  containers on the nodes)\n"
	"  --oci-runtime PATH  the OCI runtime (default crun, else runc)\n"
	"  --insecure-registry HOST[:PORT]  speak to this registry over plain http\n"
	"                  (repeatable)\n"
	"  --volumes DIR   where /volumes keep their files (default STATE/volumes;\n"
	"                  on Slurm a directory every node sees)\n"
	"  --registry-auth FILE  credentials for every pull (containers' auth.json\n"
	"                  format; a spec's registry_auth comes first)\n"
	"  --reader-nice N the nice value of the threads that answer reads, -20 to\n"
	"                  19 (default -10: `cat status` does not queue behind the\n"
	"                  tasks for the CPU; needs CAP_SYS_NICE, else they stay at\n"
	"                  the daemon's own)\n"
	"  --test-clock FILE  for tests: the daemon's clock is the real one plus the\n"
	"                  seconds FILE holds (\"86400\": a day ahead), read again\n"
	"                  when FILE changes; it only ever moves ahead\n"
	"  --foreground    stay in the foreground; log to stderr\n"
	"  --allow-other   let other users see the tree (FUSE allow_other)\n"
	"  --debug         print every FUSE request\n"
	"Unmount with: fusermount3 -u MOUNTPOINT\n";

struct opts {
	const char *state;
	const char *cluster;
	const char *backend;
	const char *mountpoint;
	const char *slurm_url;
	const char *slurm_ondemand;
	const char *slurm_spot;
	const char *slurm_jobcomp;
	int64_t slurm_poll_ms;
	int64_t slurm_array_max;
	int64_t log_cap;      /* engine.h: 0 default, JF_LOG_CAP_NONE */
	int64_t keep_logs_ms; /* 0 = forever */
	int reader_nice;
	bool reader_nice_given;
	const char *runtime;     /* auto, oci, host */
	const char *oci_runtime; /* NULL = crun, else runc */
	const char *insecure[64];
	size_t ninsecure;
	const char *registry_auth;
	const char *volumes;    /* --volumes DIR, NULL = STATE/volumes */
	int64_t evict_check_ms; /* --evict-check-ms (tests), 0 = the shim's default */
	const char *test_clock; /* --test-clock FILE (tests), NULL = the real clock */
	bool foreground;
	bool allow_other;
	bool debug;
};

static int report_fd = -1; /* to the waiting parent, when daemonised */

static void fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "jobfs: %s\n", msg);
	if (report_fd >= 0) {
		if (write(report_fd, msg, strlen(msg)) < 0) {
			/* the parent is gone: nothing more to say */
		}
		close(report_fd);
		report_fd = -1;
	}
}

static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, mode) < 0 && errno != EEXIST ? -1 : 0;
}

static char *default_state(void)
{
	const char *x = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	char buf[PATH_MAX];
	if (x && *x)
		snprintf(buf, sizeof(buf), "%s/jobfs", x);
	else
		snprintf(buf, sizeof(buf), "%s/.local/state/jobfs", home && *home ? home : "/tmp");
	return strdup(buf);
}

static char *read_file(const char *path, size_t *len, size_t cap)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(cap + 1);
	size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
	fclose(f);
	if (!buf)
		return NULL;
	if (n > cap) {
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}


/* The tool next to this binary (or $ENV): jobfs-shim, jobfs-image */
static char *tool_path(const char *env_name, const char *name)
{
	const char *env = getenv(env_name);
	if (env && *env)
		return strdup(env);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	char buf[PATH_MAX + 32];
	snprintf(buf, sizeof(buf), "%s/%s", dirname(exe), name);
	return strdup(buf);
}

static const char *find_oci_runtime(const char *given)
{
	static const char *const known[] = { "/usr/bin/crun",  "/usr/local/bin/crun",
					     "/usr/bin/runc",  "/usr/local/bin/runc",
					     "/usr/sbin/runc", NULL };
	if (given)
		return given;
	for (const char *const *p = known; *p; p++)
		if (access(*p, X_OK) == 0)
			return *p;
	return NULL;
}

/* --runtime: the containers' runtime into rt (paths into the buffers), or
 * none (host).  -1 with a message when oci was asked for and cannot be. */
static int runtime_setup(const struct opts *o, const char *state, bool slurm,
			 struct jf_runtime_conf *rt, char *tool, size_t tooln, char *cache,
			 size_t cachen, bool *oci)
{
	const char *want = o->runtime ? o->runtime : "auto";
	*oci = false;
	/* the slurm backend's nodes run containers when asked (--runtime oci):
	 * as root jobs only, with crun on every node; auto keeps them on the
	 * host, where a cluster's users' jobs run today */
	if (!strcmp(want, "host") || (slurm && strcmp(want, "oci") != 0))
		return 0;
	const char *why = NULL;
	const char *oci_rt = find_oci_runtime(o->oci_runtime);
	char *img = tool_path("JOBFS_IMAGE_TOOL", "jobfs-image");
	if (geteuid() != 0)
		why = "containers need jobfs to run as root (rootless containers are not "
		      "supported yet)";
	else if (!oci_rt)
		why = "no OCI runtime found (install crun or runc, or give --oci-runtime)";
	else if (!img || access(img, X_OK) != 0)
		why = "jobfs-image is not next to jobfs (or at $JOBFS_IMAGE_TOOL)";
	if (why) {
		free(img);
		if (!strcmp(want, "oci")) {
			fail("--runtime oci: %s", why);
			return -1;
		}
		return 0;
	}
	snprintf(tool, tooln, "%s", img);
	free(img);
	snprintf(cache, cachen, "%s/images", state);
	*rt = (struct jf_runtime_conf){
		.oci_runtime = oci_rt,
		.image_tool = tool,
		.cache_dir = cache,
		.insecure = o->insecure,
		.ninsecure = o->ninsecure,
		.auth_file = o->registry_auth,
	};
	*oci = true;
	return 0;
}

/* This state directory's id (made once, kept in the database): Slurm jobs
 * carry it, so that two jobfs on one cluster never take each other's. */
static int state_uuid(struct jf_store *st, char *buf, size_t n)
{
	if (jf_meta_get(st, "uuid", buf, n) == JF_OK && buf[0])
		return 0;
	unsigned char r[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? read(fd, r, sizeof(r)) : -1;
	if (fd >= 0)
		close(fd);
	if (got != (ssize_t)sizeof(r) || n < 33)
		return -1;
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(buf + 2 * i, n - 2 * i, "%02x", r[i]);
	return jf_meta_set(st, "uuid", buf) == JF_OK ? 0 : -1;
}

/* path made absolute against the working directory (the daemon works in
 * "/"); the caller frees it.  NULL in, NULL out. */
static char *absolute(const char *path)
{
	if (!path)
		return NULL;
	char cwd[PATH_MAX], buf[2 * PATH_MAX];
	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return strdup(path);
	snprintf(buf, sizeof(buf), "%s/%s", cwd, path);
	return strdup(buf);
}

/* What main() made before the daemon took it over (the cluster goes to the
 * engine), for the ways out before that. */
static void free_setup(char *state, char *jobcomp, char *slurm_url, struct jf_cluster *cluster)
{
	free(state);
	free(jobcomp);
	free(slurm_url);
	jf_cluster_free(cluster);
}

/* What the watchdog did (fs/mountrec.h): on stderr, and in the log file
 * when the daemon runs in the background. */
static const char *say_log;

static void say(const char *line)
{
	fprintf(stderr, "jobfs: %s\n", line);
	if (!say_log)
		return;
	FILE *f = fopen(say_log, "ae");
	if (f) {
		fprintf(f, "jobfs: %s\n", line);
		fclose(f);
	}
}

/* One daemon per state directory.  The lock may be kept by what is left of
 * a dead daemon stuck in its own dead mount: clear that, then try again. */
static int take_lock(const char *state, const char *mnt, int *lockfd, char *msg, size_t n)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/lock", state);
	*lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (*lockfd < 0) {
		snprintf(msg, n, "state directory %s: %s", state, strerror(errno));
		return -1;
	}
	if (flock(*lockfd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	int cleared = jf_mount_clear_dead(state, mnt, say, msg, n);
	if (cleared < 0)
		return -1;
	/* a connection just aborted: its stuck waiters end and let go */
	for (int i = 0; cleared && i < 50; i++) {
		if (flock(*lockfd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		usleep(100 * 1000);
	}
	snprintf(msg, n, "state directory %s is in use by another jobfs", state);
	return -1;
}

/* --log-cap: a quantity of bytes, 0 for no cap. */
static int parse_log_cap(const char *arg, int64_t *cap)
{
	int64_t v;
	if (!jf_mem_parse(arg, &v)) {
		fprintf(stderr,
			"jobfs: --log-cap \"%s\": not a size; give bytes or a quantity "
			"such as 256Mi or 1Gi (0 = no cap)\n",
			arg);
		return -1;
	}
	if (v > 0 && v < JF_LOG_CAP_MIN) {
		fprintf(stderr,
			"jobfs: --log-cap \"%s\": below the least cap, 64Ki "
			"(0 = no cap)\n",
			arg);
		return -1;
	}
	if (v > INT64_MAX / 4) {
		fprintf(stderr, "jobfs: --log-cap \"%s\": too large (0 = no cap)\n", arg);
		return -1;
	}
	*cap = v == 0 ? JF_LOG_CAP_NONE : v;
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{ "state", required_argument, NULL, 's' },
		{ "cluster", required_argument, NULL, 'c' },
		{ "backend", required_argument, NULL, 'b' },
		{ "log-cap", required_argument, NULL, 'l' },
		{ "keep-logs", required_argument, NULL, 'K' },
		{ "slurm", required_argument, NULL, 'S' },
		{ "slurm-ondemand", required_argument, NULL, 'O' },
		{ "slurm-spot", required_argument, NULL, 'P' },
		{ "slurm-poll", required_argument, NULL, 'Q' },
		{ "slurm-array-max", required_argument, NULL, 'A' },
		{ "slurm-jobcomp", required_argument, NULL, 'J' },
		{ "reader-nice", required_argument, NULL, 'N' },
		{ "runtime", required_argument, NULL, 'R' },
		{ "oci-runtime", required_argument, NULL, 'C' },
		{ "insecure-registry", required_argument, NULL, 'I' },
		{ "registry-auth", required_argument, NULL, 'U' },
		{ "volumes", required_argument, NULL, 'W' },
		{ "evict-check-ms", required_argument, NULL, 'E' },
		{ "test-clock", required_argument, NULL, 'T' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "allow-other", no_argument, NULL, 'a' },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "fdh", longs, NULL)) != -1) {
		switch (c) {
		case 's':
			o->state = optarg;
			break;
		case 'c':
			o->cluster = optarg;
			break;
		case 'W':
			if (optarg[0] != '/') {
				fprintf(stderr,
					"jobfs: --volumes \"%s\": give an absolute path (a "
					"directory every node sees)\n",
					optarg);
				return -1;
			}
			o->volumes = optarg;
			break;
		case 'E': {
			char *end;
			long long v = strtoll(optarg, &end, 10);
			if (!*optarg || *end || v < 100 || v > 3600000) {
				fprintf(stderr,
					"jobfs: --evict-check-ms \"%s\": give 100 to 3600000 "
					"(ms)\n",
					optarg);
				return -1;
			}
			o->evict_check_ms = v;
			break;
		}
		case 'T':
			o->test_clock = optarg;
			break;
		case 'b':
			o->backend = optarg;
			break;
		case 'l':
			if (parse_log_cap(optarg, &o->log_cap) < 0)
				return -1;
			break;
		case 'K': {
			int64_t sec = 0;
			if (!strcmp(optarg, "forever")) {
				o->keep_logs_ms = 0;
				break;
			}
			if (!jf_duration_parse(optarg, &sec) || sec <= 0 ||
			    sec > INT64_C(3660) * 86400) {
				fprintf(stderr,
					"jobfs: --keep-logs \"%s\": not a duration; give e.g. "
					"12h, 7d or 30d (at most 3660d), or forever\n",
					optarg);
				return -1;
			}
			o->keep_logs_ms = sec * 1000;
			break;
		}
		case 'S':
			o->slurm_url = optarg;
			break;
		case 'O':
			o->slurm_ondemand = optarg;
			break;
		case 'P':
			o->slurm_spot = optarg;
			break;
		case 'J':
			o->slurm_jobcomp = optarg;
			break;
		case 'Q':
		case 'A': {
			char *end;
			long long v = strtoll(optarg, &end, 10);
			if (*end || v < 1 || v > 100000000) {
				fprintf(stderr, "jobfs: --%s \"%s\": give a whole number from 1\n",
					c == 'Q' ? "slurm-poll" : "slurm-array-max", optarg);
				return -1;
			}
			if (c == 'Q')
				o->slurm_poll_ms = v;
			else
				o->slurm_array_max = v;
			break;
		}
		case 'N': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < -20 || v > 19) {
				fprintf(stderr,
					"jobfs: --reader-nice \"%s\": give a nice value from -20 "
					"to 19\n",
					optarg);
				return -1;
			}
			o->reader_nice = (int)v;
			o->reader_nice_given = true;
			break;
		}
		case 'R':
			if (strcmp(optarg, "auto") && strcmp(optarg, "oci") &&
			    strcmp(optarg, "host")) {
				fprintf(stderr, "jobfs: --runtime \"%s\": give auto, oci or host\n",
					optarg);
				return -1;
			}
			o->runtime = optarg;
			break;
		case 'C':
			if (optarg[0] != '/' || access(optarg, X_OK) != 0) {
				fprintf(stderr,
					"jobfs: --oci-runtime \"%s\": give the absolute path of an "
					"executable (crun or runc)\n",
					optarg);
				return -1;
			}
			o->oci_runtime = optarg;
			break;
		case 'I':
			if (o->ninsecure == sizeof(o->insecure) / sizeof(o->insecure[0]) ||
			    !optarg[0] || strpbrk(optarg, "/ \t")) {
				fprintf(stderr,
					"jobfs: --insecure-registry \"%s\": give HOST or HOST:PORT "
					"(at most 64)\n",
					optarg);
				return -1;
			}
			o->insecure[o->ninsecure++] = optarg;
			break;
		case 'U':
			if (optarg[0] != '/' || access(optarg, R_OK) != 0) {
				fprintf(stderr,
					"jobfs: --registry-auth \"%s\": give the absolute path of "
					"a "
					"readable auth.json\n",
					optarg);
				return -1;
			}
			o->registry_auth = optarg;
			break;
		case 'f':
			o->foreground = true;
			break;
		case 'a':
			o->allow_other = true;
			break;
		case 'd':
			o->debug = true;
			o->foreground = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		case 'V':
			printf("jobfs %s\n", JF_VERSION);
			exit(0);
		default:
			fputs(usage_text, stderr);
			return -1;
		}
	}
	if (optind != argc - 1) {
		fputs(usage_text, stderr);
		return -1;
	}
	o->mountpoint = argv[optind];
	if (o->backend && strcmp(o->backend, "local") != 0 && strcmp(o->backend, "slurm") != 0) {
		fprintf(stderr, "jobfs: backend \"%s\" is not one of local, slurm\n", o->backend);
		return -1;
	}
	bool slurm = o->backend && strcmp(o->backend, "slurm") == 0;
	if (slurm && !o->slurm_url) {
		fprintf(stderr, "jobfs: --backend slurm needs --slurm URL (unix:/path/to/"
				"slurmrestd.socket or http://host:port)\n");
		return -1;
	}
	if (!slurm && (o->slurm_url || o->slurm_ondemand || o->slurm_spot || o->slurm_poll_ms ||
		       o->slurm_array_max || o->slurm_jobcomp)) {
		fprintf(stderr, "jobfs: --slurm options need --backend slurm\n");
		return -1;
	}
	if (slurm && strncmp(o->slurm_url, "unix:", 5) != 0 &&
	    strncmp(o->slurm_url, "http://", 7) != 0 && strncmp(o->slurm_url, "https://", 8) != 0) {
		fprintf(stderr,
			"jobfs: --slurm \"%s\": give unix:/path/to/slurmrestd.socket or "
			"http://host:port\n",
			o->slurm_url);
		return -1;
	}
	return 0;
}

/*
 * A root daemon serving other users starts their tasks as them, in
 * STATE/runs/.../work with JOB_CHECKPOINT_DIR under STATE/ckpt: they must
 * be able to pass through STATE and every directory above it.  STATE is
 * made 0711 (pass through, not list); a parent that other users cannot
 * pass is only reported (it is not ours to change).
 */
static void share_state(const char *state)
{
	struct stat sb;
	if (stat(state, &sb) == 0 && !(sb.st_mode & S_IXOTH))
		chmod(state, (sb.st_mode & 07777) | S_IXUSR | S_IXGRP | S_IXOTH);
	char path[4096];
	snprintf(path, sizeof(path), "%s", state);
	for (char *slash = strrchr(path, '/'); slash && slash > path; slash = strrchr(path, '/')) {
		*slash = '\0';
		if (stat(path, &sb) == 0 && !(sb.st_mode & S_IXOTH))
			fprintf(stderr,
				"jobfs: warning: other users cannot pass through %s (mode "
				"%04o), so their tasks cannot reach the state directory %s; "
				"use --state somewhere they can (e.g. /var/lib/jobfs)\n",
				path, (unsigned)(sb.st_mode & 07777), state);
	}
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	if (parse(argc, argv, &o) < 0)
		return EXIT_USAGE;

	char *state = o.state ? strdup(o.state) : default_state();
	struct jf_cluster *cluster = NULL;
	struct jf_error err = { 0 };
	/* the mount point as an absolute path, without touching it: a dead
	 * mount there may hang whoever does (fs/mountrec.h) */
	char mnt[PATH_MAX];
	if (jf_mount_abspath(o.mountpoint, mnt, sizeof(mnt)) < 0) {
		fprintf(stderr, "jobfs: mount point %s: %s\n", o.mountpoint, strerror(errno));
		free(state);
		return EXIT_SETUP;
	}
	char *state_abs = absolute(state);
	size_t ml = strlen(mnt);
	if (state_abs && !strncmp(state_abs, mnt, ml) &&
	    (state_abs[ml] == '\0' || state_abs[ml] == '/' || !strcmp(mnt, "/"))) {
		fprintf(stderr,
			"jobfs: state directory %s is inside the mount point %s: the "
			"daemon would read its own database through itself; put it "
			"elsewhere\n",
			state, mnt);
		free(state_abs);
		free(state);
		return EXIT_SETUP;
	}
	free(state_abs);
	if (!state || mkdir_p(state, 0700) < 0) {
		fprintf(stderr, "jobfs: state directory %s: %s\n", state ? state : "?",
			strerror(errno));
		free(state);
		return EXIT_SETUP;
	}
	char *abs_state = realpath(state, NULL);
	if (!abs_state) {
		fprintf(stderr, "jobfs: state directory %s: %s\n", state, strerror(errno));
		free(state);
		return EXIT_SETUP;
	}
	free(state);
	state = abs_state;
	/* what is read after the chdir("/") below */
	char *jobcomp = absolute(o.slurm_jobcomp);
	static char test_clock[PATH_MAX];
	if (o.test_clock) {
		char *abs_clock = absolute(o.test_clock);
		snprintf(test_clock, sizeof(test_clock), "%s",
			 abs_clock ? abs_clock : o.test_clock);
		free(abs_clock);
		o.test_clock = test_clock;
	}
	char *slurm_url = NULL;
	if (o.slurm_url && !strncmp(o.slurm_url, "unix:", 5)) {
		char *sock = absolute(o.slurm_url + 5);
		if (sock && asprintf(&slurm_url, "unix:%s", sock) < 0)
			slurm_url = NULL;
		free(sock);
	} else if (o.slurm_url) {
		slurm_url = strdup(o.slurm_url);
	}
	o.slurm_jobcomp = jobcomp;
	o.slurm_url = slurm_url;
	if (geteuid() == 0 && o.allow_other)
		share_state(state);
	if (o.cluster) {
		size_t len = 0;
		char *text = read_file(o.cluster, &len, 1024 * 1024);
		if (!text) {
			fprintf(stderr, "jobfs: cluster file %s: %s\n", o.cluster, strerror(errno));
			free_setup(state, jobcomp, slurm_url, NULL);
			return EXIT_SETUP;
		}
		enum jf_err rc = jf_cluster_parse(text, len, &cluster, &err);
		free(text);
		if (rc) {
			fprintf(stderr, "jobfs: cluster file %s: %s\n", o.cluster, err.msg);
			free_setup(state, jobcomp, slurm_url, NULL);
			return EXIT_SETUP;
		}
	} else {
		cluster = jf_cluster_builtin();
	}
	/* each running node holds a pidfd: allow as many files as we may */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	if (!o.foreground) {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0)
			return EXIT_SETUP;
		pid_t pid = fork();
		if (pid < 0)
			return EXIT_SETUP;
		if (pid > 0) {
			close(p[1]);
			char msg[1100];
			ssize_t n = read(p[0], msg, sizeof(msg) - 1);
			free_setup(state, jobcomp, slurm_url, cluster);
			if (n == 2 && !memcmp(msg, "ok", 2))
				return 0;
			if (n <= 0)
				fprintf(stderr,
					"jobfs: the daemon exited before the tree was ready\n");
			return EXIT_SETUP;
		}
		close(p[0]);
		report_fd = p[1];
		setsid();
	}

	char path[PATH_MAX];
	char msg[4600];
	if (!o.foreground) {
		snprintf(path, sizeof(path), "%s/jobfs.log", state);
		say_log = strdup(path);
	}
	int lockfd = -1;
	if (take_lock(state, mnt, &lockfd, msg, sizeof(msg)) < 0 ||
	    jf_mount_clear_dead(state, mnt, say, msg, sizeof(msg)) < 0) {
		fail("%s", msg);
		free_setup(state, jobcomp, slurm_url, cluster);
		free((char *)say_log);
		if (lockfd >= 0)
			close(lockfd);
		return EXIT_SETUP;
	}
	/* nothing the daemon or what it spawns does works in a directory that
	 * could be on a mount (its own included): every path is absolute now */
	if (chdir("/") < 0) {
		fail("chdir /: %s", strerror(errno));
		return EXIT_SETUP;
	}
	snprintf(path, sizeof(path), "%s/jobfs.db", state);
	struct jf_store *st = NULL;
	if (jf_store_open(path, &st, &err) != JF_OK) {
		fail("%s", err.msg);
		return EXIT_SETUP;
	}
	char *shim = tool_path("JOBFS_SHIM", "jobfs-shim");
	/* object sources (reference 8.3) sync with jobfs-sync, beside jobfs */
	static char sync_tool[PATH_MAX + 32];
	char *sync_found = tool_path("JOBFS_SYNC_TOOL", "jobfs-sync");
	snprintf(sync_tool, sizeof(sync_tool), "%s", sync_found ? sync_found : "");
	free(sync_found);
	struct jf_runner *runner = NULL;
	struct jf_scheduler *scheduler = NULL;
	bool slurm = o.backend && strcmp(o.backend, "slurm") == 0;
	if (slurm) {
		char uuid[64];
		if (state_uuid(st, uuid, sizeof(uuid)) < 0) {
			fail("state directory %s: cannot record its id", state);
			jf_store_close(st);
			return EXIT_SETUP;
		}
		struct jf_slurm_config sc = {
			.url = o.slurm_url,
			.token = getenv("SLURM_JWT"),
			.shim = shim,
			.uuid = uuid,
			.poll_ms = o.slurm_poll_ms,
			.jobcomp = o.slurm_jobcomp,
		};
		if (jf_slurm_rest_global_init() == JF_OK)
			scheduler = jf_slurm_new(&sc, &err);
		else
			jf_error_set(&err, JF_EIO, 0, "cannot initialise libcurl");
	} else if (shim) {
		runner = jf_local_new(shim, &err);
	}
	free(shim);
	if (!runner && !scheduler) {
		fail("%s backend: %s", slurm ? "slurm" : "local",
		     err.msg[0] ? err.msg : "cannot find jobfs-shim");
		jf_store_close(st);
		return EXIT_SETUP;
	}
	/* --test-clock: the engine's clock, ahead of the real one by FILE */
	struct jf_testclock *tclock = NULL;
	if (o.test_clock && jf_testclock_new(o.test_clock, &tclock, &err) != JF_OK) {
		fail("%s", err.msg);
		jf_store_close(st);
		return EXIT_SETUP;
	}
	struct jf_runtime_conf rt;
	static char img_tool[PATH_MAX + 32], img_cache[PATH_MAX + 16];
	bool oci = false;
	if (runtime_setup(&o, state, slurm, &rt, img_tool, sizeof(img_tool), img_cache,
			  sizeof(img_cache), &oci) < 0) {
		jf_store_close(st);
		return EXIT_SETUP;
	}
	struct jf_engine_config cfg = {
		.runtime = oci ? &rt : NULL,
		.state_dir = state,
		.store = st,
		.cluster = cluster,
		.runner = runner,
		.scheduler = scheduler,
		.log_cap_bytes = o.log_cap,
		.keep_logs_ms = o.keep_logs_ms,
		.partition_ondemand = o.slurm_ondemand,
		.partition_spot = o.slurm_spot ? o.slurm_spot : (slurm ? "spot" : NULL),
		.array_max = o.slurm_array_max,
		.sync_tool = sync_tool[0] ? sync_tool : NULL,
		.volumes_dir = o.volumes,
		.evict_check_ms = o.evict_check_ms,
	};
	if (tclock)
		cfg.clock = jf_testclock_clock(tclock);
	struct jf_engine *e = NULL;
	if (jf_engine_new(&cfg, &e, &err) != JF_OK) {
		fail("%s", err.msg);
		return EXIT_SETUP;
	}
	struct jf_fs_options fo = {
		.mountpoint = mnt,
		.allow_other = o.allow_other,
		.debug = o.debug,
		.attr_timeout = 1.0,
		.reader_nice = o.reader_nice_given ? o.reader_nice : JF_FS_READER_NICE,
		.reader_nice_given = o.reader_nice_given,
	};
	struct jf_loop *loop = jf_loop_new(NULL);
	if (!loop) {
		fail("event loop: %s", strerror(errno));
		jf_engine_free(e);
		return EXIT_SETUP;
	}
	if (jf_engine_attach(e, loop, true, &err) != JF_OK) {
		fail("%s", err.msg);
		jf_engine_free(e);
		jf_loop_free(loop);
		return EXIT_SETUP;
	}
	struct jf_fs *fs = NULL;
	if (jf_fs_new(e, loop, &fo, &fs, &err) != JF_OK) {
		jf_loop_free(loop);
		fail("%s", err.msg);
		return EXIT_SETUP;
	}
	if (jf_mountrec_write(state, mnt) < 0)
		fprintf(stderr,
			"jobfs: warning: cannot record the mount in %s/%s (%s): a mount "
			"left by this daemon's death will not be cleared by the next one\n",
			state, JF_MOUNTREC_NAME, strerror(errno));
	if (report_fd >= 0) {
		int devnull = open("/dev/null", O_RDWR);
		snprintf(path, sizeof(path), "%s/jobfs.log", state);
		int log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			close(devnull);
		}
		if (log >= 0) {
			dup2(log, 2);
			close(log);
		}
		if (write(report_fd, "ok", 2) < 0) {
			/* parent gone */
		}
		close(report_fd);
		report_fd = -1;
	}
	int rc = jf_loop_run(loop) == JF_LOOP_ERROR ? -1 : 0;
	jf_fs_free(fs);
	jf_loop_free(loop);
	jf_mountrec_remove(state);
	jf_testclock_free(tclock);
	free(state);
	free(jobcomp);
	free(slurm_url);
	free((char *)say_log);
	close(lockfd);
	return rc == 0 ? 0 : EXIT_SETUP;
}
