/*
 * jobfs-image - the host's image cache from the command line (reference
 * 8.1): what jobfs-shim runs to pull a node's image before its container
 * starts, and what a user runs to pull ahead of time or look.
 *
 *   jobfs-image pull [--cache DIR] [--policy Always|IfNotPresent|Never]
 *                    [--auth FILE] [--insecure HOST[:PORT]]...
 *                    [--progress-fd N] REF
 *   jobfs-image list [--cache DIR]
 *   jobfs-image rm [--cache DIR] NAME
 *
 * --cache defaults to $JOBFS_STATE/images, else the daemon's default state
 * directory's.  `pull` prints one JSON object on stdout: reference, name,
 * digest, size_bytes, layers (the layer directories, lowest first),
 * present (true when the cache had it and nothing was fetched), seconds,
 * fetched_bytes, and the image's entrypoint, cmd, env, user and workdir;
 * with the policy IfNotPresent (the default for a tag other than latest)
 * an image in the cache is not asked for again.  --progress-fd N: the
 * line "pulling" is written to fd N when the registry (or layout) is about
 * to be read, i.e. when the cache could not answer alone (jobfs-shim turns
 * it into the node's Pulling event).  Errors are one line on stderr that
 * names the image and what failed.
 *
 * Exit codes: 0 done; 1 bad usage; 2 the pull failed (registry, digest,
 * disk, layer); 3 Never and the image is not in the cache; 4 rm of an
 * image not in the cache.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "image/cache.h"

#define EXIT_USAGE   1
#define EXIT_FAILED  2
#define EXIT_ABSENT  3
#define EXIT_NOENT   4
#define MAX_INSECURE 64

static const char usage_text[] =
	"usage: jobfs-image pull [--cache DIR] [--policy Always|IfNotPresent|Never]\n"
	"                        [--auth FILE] [--insecure HOST[:PORT]]... [--progress-fd N]\n"
	"                        REFERENCE\n"
	"       jobfs-image list [--cache DIR]\n"
	"       jobfs-image rm [--cache DIR] NAME\n";

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void default_cache(char *buf, size_t n)
{
	const char *st = getenv("JOBFS_STATE");
	const char *xdg = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	if (st && *st)
		snprintf(buf, n, "%s/images", st);
	else if (xdg && *xdg)
		snprintf(buf, n, "%s/jobfs/images", xdg);
	else
		snprintf(buf, n, "%s/.local/state/jobfs/images", home ? home : "");
}

static json_t *strv(char **v)
{
	json_t *a = json_array();
	for (; v && *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

static void print_image(const struct jf_imgcache *c, const struct jf_image *img, bool present,
			double secs, int64_t fetched)
{
	json_t *layers = json_array();
	for (size_t i = 0; i < img->nlayers; i++) {
		char d[4096];
		jf_imgcache_layer_dir(c, img->layers[i], d, sizeof(d));
		json_array_append_new(layers, json_string(d));
	}
	json_t *j = json_pack(
		"{s:s,s:s,s:s,s:I,s:o,s:b,s:f,s:I,s:o,s:o,s:o,s:s,s:s,s:I,s:I}", "reference",
		img->reference, "name", img->name, "digest", img->digest, "size_bytes",
		(json_int_t)img->size_bytes, "layers", layers, "present", present, "seconds", secs,
		"fetched_bytes", (json_int_t)fetched, "entrypoint", strv(img->config.entrypoint),
		"cmd", strv(img->config.cmd), "env", strv(img->config.env), "user",
		img->config.user, "workdir", img->config.workdir, "pulled_ms",
		(json_int_t)img->pulled_ms, "last_used_ms", (json_int_t)img->last_used_ms);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (s)
		printf("%s\n", s);
	free(s);
	json_decref(j);
}

static int cmd_pull(struct jf_imgcache *c, const char *policy, const char *auth,
		    const char *const *insecure, size_t ninsecure, int progress_fd,
		    const char *refs)
{
	struct jf_imgref ref;
	struct jf_error err;
	jf_error_clear(&err);
	if (jf_imgref_parse(refs, &ref, &err)) {
		fprintf(stderr, "jobfs-image: %s\n", err.msg);
		return EXIT_USAGE;
	}
	bool always = policy ? strcmp(policy, "Always") == 0 : jf_imgref_default_always(&ref);
	bool never = policy && strcmp(policy, "Never") == 0;
	struct jf_image *img = NULL;
	double t0 = mono_s();
	/* an oci: layout is read in place: "pulling" it is cheap, but it is
	 * checked again only when asked to (Always) */
	if (!always && jf_imgcache_lookup(c, &ref, &img, &err) == JF_OK) {
		print_image(c, img, true, mono_s() - t0, 0);
		jf_image_free(img);
		return 0;
	}
	if (never) {
		fprintf(stderr,
			"jobfs-image: image %s is not present on this machine and the pull policy "
			"is Never\n",
			refs);
		return EXIT_ABSENT;
	}
	if (progress_fd >= 0) {
		static const char line[] = "pulling\n";
		(void)!write(progress_fd, line, sizeof(line) - 1);
	}
	struct jf_reg_opts o = { .auth_file = auth, .insecure = insecure, .ninsecure = ninsecure };
	struct jf_pull_stats st;
	jf_error_clear(&err);
	if (jf_imgcache_pull(c, &ref, &o, wall_ms(), &st, &img, &err)) {
		fprintf(stderr, "jobfs-image: pulling %s: %s\n", refs, err.msg);
		return EXIT_FAILED;
	}
	print_image(c, img, st.fetched_bytes == 0 && st.layers_unpacked == 0, mono_s() - t0,
		    st.fetched_bytes);
	jf_image_free(img);
	return 0;
}

static int cmd_list(struct jf_imgcache *c)
{
	struct jf_image **v;
	size_t n;
	struct jf_error err;
	if (jf_imgcache_list(c, &v, &n, &err)) {
		fprintf(stderr, "jobfs-image: %s\n", err.msg);
		return EXIT_FAILED;
	}
	for (size_t i = 0; i < n; i++)
		printf("%s\t%s\t%s\t%lld\n", v[i]->name, v[i]->reference, v[i]->digest,
		       (long long)v[i]->size_bytes);
	jf_image_list_free(v, n);
	return 0;
}

static int cmd_rm(struct jf_imgcache *c, const char *name)
{
	struct jf_error err;
	enum jf_err rc = jf_imgcache_remove(c, name, &err);
	if (rc) {
		fprintf(stderr, "jobfs-image: %s\n", err.msg);
		return rc == JF_ENOENT ? EXIT_NOENT : EXIT_FAILED;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cache", required_argument, NULL, 'c' },
		{ "policy", required_argument, NULL, 'p' },
		{ "auth", required_argument, NULL, 'a' },
		{ "insecure", required_argument, NULL, 'i' },
		{ "progress-fd", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char cache[4096] = "";
	const char *policy = NULL, *auth = NULL;
	const char *insecure[MAX_INSECURE];
	size_t ninsecure = 0;
	int progress_fd = -1;
	if (argc < 2) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	optind = 2;
	int ch;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			snprintf(cache, sizeof(cache), "%s", optarg);
			break;
		case 'p':
			if (strcmp(optarg, "Always") && strcmp(optarg, "IfNotPresent") &&
			    strcmp(optarg, "Never")) {
				fprintf(stderr,
					"jobfs-image: --policy must be Always, IfNotPresent "
					"or Never\n");
				return EXIT_USAGE;
			}
			policy = optarg;
			break;
		case 'a':
			auth = optarg;
			break;
		case 'i':
			if (ninsecure == MAX_INSECURE) {
				fprintf(stderr, "jobfs-image: more than %d --insecure\n",
					MAX_INSECURE);
				return EXIT_USAGE;
			}
			insecure[ninsecure++] = optarg;
			break;
		case 'f': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v > 1024) {
				fprintf(stderr, "jobfs-image: --progress-fd needs a descriptor\n");
				return EXIT_USAGE;
			}
			progress_fd = (int)v;
			break;
		}
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fputs(usage_text, stderr);
			return EXIT_USAGE;
		}
	}
	if (!cache[0])
		default_cache(cache, sizeof(cache));
	int want = strcmp(cmd, "list") == 0 ? 0 : 1;
	if ((strcmp(cmd, "pull") && strcmp(cmd, "list") && strcmp(cmd, "rm")) ||
	    argc - optind != want) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	struct jf_imgcache *c;
	struct jf_error err;
	if (jf_imgcache_open(cache, &c, &err)) {
		fprintf(stderr, "jobfs-image: %s\n", err.msg);
		return EXIT_FAILED;
	}
	int rc = !strcmp(cmd, "pull")
			 ? cmd_pull(c, policy, auth, insecure, ninsecure, progress_fd, argv[optind])
		 : !strcmp(cmd, "list") ? cmd_list(c)
					: cmd_rm(c, argv[optind]);
	jf_imgcache_free(c);
	return rc;
}
