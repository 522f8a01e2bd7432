/*
 * test_imgcache.c - the image cache (image/cache.c, cache_pull.c): pulls
 * from OCI layouts this test writes (layers made with libarchive), reuse
 * of shared layers, records whole or absent, digest mismatches refused,
 * list / touch / remove with shared layers kept, a removal that never
 * waits for a pull (EBUSY), leftovers of a dead pull swept; and, when JOBFS_REGISTRY names the test
 * registry (scripts/registry.sh), a real pull of jobfs/busybox and a second pull that fetches
 * nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/cache.h"
#include "image/digest.h"
#include "testutil.h"

struct blob {
	char digest[JF_DIGEST_LEN];
	long size;
};

/* write data as a blob of the layout at dir; its descriptor into *b */
static void put_blob(const char *dir, const void *data, size_t n, struct blob *b)
{
	char p[1024];
	jf_sha256_buf(data, n, b->digest);
	b->size = (long)n;
	snprintf(p, sizeof(p), "%s/blobs/sha256/%s", dir, b->digest + 7);
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	fclose(f);
}

/* a gzip'd tar of files "name=content" (a name ending in '/' is a dir) */
static void put_layer(const char *dir, const char *const *files, struct blob *b)
{
	size_t cap = 1 << 20, used = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_add_filter_gzip(a);
	assert_int_equal(archive_write_open_memory(a, buf, cap, &used), ARCHIVE_OK);
	for (const char *const *f = files; *f; f++) {
		const char *eq = strchr(*f, '=');
		char name[256];
		size_t nl = eq ? (size_t)(eq - *f) : strlen(*f);
		memcpy(name, *f, nl);
		name[nl] = '\0';
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, name);
		if (name[nl - 1] == '/') {
			archive_entry_set_filetype(e, AE_IFDIR);
			archive_entry_set_perm(e, 0755);
		} else {
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, 0644);
			archive_entry_set_size(e, eq ? (la_int64_t)strlen(eq + 1) : 0);
		}
		assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
		if (eq)
			archive_write_data(a, eq + 1, strlen(eq + 1));
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	put_blob(dir, buf, used, b);
	free(buf);
}

/* an OCI layout at dir with one image tagged tag: the given layers
 * (each a NULL-terminated file list), config with that cmd */
static void make_layout(const char *dir, const char *tag, const char *const *const *layers,
			size_t nlayers, const char *cmd)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/blobs/sha256", dir);
	char cmdline[1200];
	snprintf(cmdline, sizeof(cmdline), "mkdir -p '%s'", p);
	assert_int_equal(system(cmdline), 0);
	struct blob lb[8], cb, mb;
	char diff[1024] = "", ldesc[2048] = "";
	for (size_t i = 0; i < nlayers; i++) {
		put_layer(dir, layers[i], &lb[i]);
		size_t dl = strlen(diff), ll = strlen(ldesc);
		/* the diff_id is not checked by the cache; any valid digest */
		snprintf(diff + dl, sizeof(diff) - dl, "%s\"%.71s\"", i ? "," : "", lb[i].digest);
		snprintf(ldesc + ll, sizeof(ldesc) - ll,
			 "%s{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\","
			 "\"digest\":\"%s\",\"size\":%ld}",
			 i ? "," : "", lb[i].digest, lb[i].size);
	}
	char cfg[4096];
	snprintf(cfg, sizeof(cfg),
		 "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Cmd\":[\"%s\"],"
		 "\"Env\":[\"PATH=/bin\"],\"User\":\"\"},\"rootfs\":{\"type\":\"layers\","
		 "\"diff_ids\":[%s]}}",
		 cmd, diff);
	put_blob(dir, cfg, strlen(cfg), &cb);
	char mf[8192];
	snprintf(
		mf, sizeof(mf),
		"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
		"\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\","
		"\"digest\":\"%s\",\"size\":%ld},\"layers\":[%s]}",
		cb.digest, cb.size, ldesc);
	put_blob(dir, mf, strlen(mf), &mb);
	char idx[1024];
	snprintf(idx, sizeof(idx),
		 "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
		 "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"%s\",\"size\":%ld,"
		 "\"annotations\":{\"org.opencontainers.image.ref.name\":\"%s\"}}]}",
		 mb.digest, mb.size, tag);
	snprintf(p, sizeof(p), "%s/index.json", dir);
	jft_write_file(p, idx);
	snprintf(p, sizeof(p), "%s/oci-layout", dir);
	jft_write_file(p, "{\"imageLayoutVersion\":\"1.0.0\"}");
}

static const char *const base_layer[] = { "bin/", "bin/hello=hi\n", "etc/", "etc/os=jobfs\n",
					  NULL };
static const char *const app_a[] = { "app/", "app/a=A\n", NULL };
static const char *const app_b[] = { "app/", "app/b=B\n", NULL };

static struct jf_imgcache *open_cache(const char *dir)
{
	struct jf_imgcache *c;
	struct jf_error err;
	if (jf_imgcache_open(dir, &c, &err))
		fail_msg("open %s: %s", dir, err.msg);
	return c;
}

static struct jf_image *pull(struct jf_imgcache *c, const char *ref, struct jf_pull_stats *st,
			     int64_t now)
{
	struct jf_imgref r;
	struct jf_error err;
	struct jf_image *img;
	assert_int_equal(jf_imgref_parse(ref, &r, &err), JF_OK);
	struct jf_reg_opts o = { 0 };
	if (jf_imgcache_pull(c, &r, &o, now, st, &img, &err))
		fail_msg("pull %s: %s", ref, err.msg);
	return img;
}

static void test_oci_pull_and_share(void **state)
{
	char root[512], cdir[600], la[600], lb[600], ref[700], p[1200];
	(void)state;
	jft_mkdtemp(root, sizeof(root), jft_tmp_base(), "imgcache");
	snprintf(cdir, sizeof(cdir), "%s/cache", root);
	snprintf(la, sizeof(la), "%s/a", root);
	snprintf(lb, sizeof(lb), "%s/b", root);
	const char *const *la_layers[] = { base_layer, app_a };
	const char *const *lb_layers[] = { base_layer, app_b };
	make_layout(la, "v1", la_layers, 2, "/bin/a");
	make_layout(lb, "v1", lb_layers, 2, "/bin/b");
	struct jf_imgcache *c = open_cache(cdir);
	struct jf_pull_stats st;

	snprintf(ref, sizeof(ref), "oci:%s:v1", la);
	struct jf_image *a = pull(c, ref, &st, 1000);
	assert_int_equal(st.layers_unpacked, 2);
	assert_int_equal(a->nlayers, 2);
	assert_int_equal(a->pulled_ms, 1000);
	assert_string_equal(a->config.cmd[0], "/bin/a");
	assert_true(a->size_bytes > 0);
	jf_imgcache_layer_dir(c, a->layers[0], p, sizeof(p));
	char *txt = jft_read_in(p, "bin/hello");
	assert_non_null(txt);
	assert_string_equal(txt, "hi\n");
	free(txt);
	/* nothing is copied from an oci: layout into blobs/ */
	snprintf(p, sizeof(p), "%s/blobs/sha256/%s", cdir, a->layers[0] + 7);
	assert_false(jft_exists(p));

	/* a second image sharing the base layer unpacks only its own */
	snprintf(ref, sizeof(ref), "oci:%s:v1", lb);
	struct jf_image *b = pull(c, ref, &st, 2000);
	assert_int_equal(st.layers_unpacked, 1);
	assert_string_equal(a->layers[0], b->layers[0]);
	/* pulling again unpacks nothing */
	jf_image_free(pull(c, ref, &st, 3000));
	assert_int_equal(st.layers_unpacked, 0);

	/* lookup, list, touch */
	struct jf_imgref r;
	struct jf_error err;
	struct jf_image *got;
	assert_int_equal(jf_imgref_parse(ref, &r, &err), JF_OK);
	assert_int_equal(jf_imgcache_lookup(c, &r, &got, &err), JF_OK);
	assert_string_equal(got->digest, b->digest);
	assert_int_equal(got->pulled_ms, 3000);
	assert_int_equal(jf_imgcache_touch(c, got->name, 4000, &err), JF_OK);
	jf_image_free(got);
	struct jf_image **v;
	size_t n;
	assert_int_equal(jf_imgcache_list(c, &v, &n, &err), JF_OK);
	assert_int_equal(n, 2);
	assert_true(strcmp(v[0]->name, v[1]->name) < 0);
	struct jf_image *vb = strcmp(v[0]->name, b->name) == 0 ? v[0] : v[1];
	assert_int_equal(vb->last_used_ms, 4000);
	jf_image_list_free(v, n);
	/* a re-pull keeps the last use */
	jf_image_free(pull(c, ref, &st, 5000));
	assert_int_equal(jf_imgcache_lookup(c, &r, &got, &err), JF_OK);
	assert_int_equal(got->last_used_ms, 4000);
	assert_int_equal(got->pulled_ms, 5000);
	jf_image_free(got);

	/* removing a: its own layer goes, the shared base stays */
	assert_int_equal(jf_imgcache_remove(c, a->name, &err), JF_OK);
	jf_imgcache_layer_dir(c, a->layers[1], p, sizeof(p));
	assert_false(jft_exists(p));
	jf_imgcache_layer_dir(c, a->layers[0], p, sizeof(p));
	assert_true(jft_exists(p));
	assert_int_equal(jf_imgcache_remove(c, a->name, &err), JF_ENOENT);
	assert_int_equal(jf_imgcache_lookup(c, &r, &got, &err), JF_OK);
	jf_image_free(got);
	/* and removing b empties the layers */
	assert_int_equal(jf_imgcache_remove(c, b->name, &err), JF_OK);
	assert_false(jft_exists(p));
	assert_int_equal(jf_imgcache_lookup(c, &r, &got, &err), JF_ENOENT);

	jf_image_free(a);
	jf_image_free(b);
	jf_imgcache_free(c);
	jft_rmtree(root);
}

static void test_oci_refused(void **state)
{
	char root[512], cdir[600], la[600], ref[700], p[1200];
	struct jf_error err;
	(void)state;
	jft_mkdtemp(root, sizeof(root), jft_tmp_base(), "imgcache");
	snprintf(cdir, sizeof(cdir), "%s/cache", root);
	snprintf(la, sizeof(la), "%s/a", root);
	const char *const *layers[] = { base_layer };
	make_layout(la, "v1", layers, 1, "/bin/a");
	struct jf_imgcache *c = open_cache(cdir);
	struct jf_imgref r;
	struct jf_image *img;
	struct jf_pull_stats st;
	struct jf_reg_opts o = { 0 };

	/* no such tag, no such layout */
	snprintf(ref, sizeof(ref), "oci:%s:v2", la);
	assert_int_equal(jf_imgref_parse(ref, &r, &err), JF_OK);
	assert_int_equal(jf_imgcache_pull(c, &r, &o, 1, &st, &img, &err), JF_ENOENT);
	assert_non_null(strstr(err.msg, "has no image tagged v2"));
	snprintf(ref, sizeof(ref), "oci:%s/nothing", root);
	assert_int_equal(jf_imgref_parse(ref, &r, &err), JF_OK);
	assert_int_equal(jf_imgcache_pull(c, &r, &o, 1, &st, &img, &err), JF_ENOENT);
	assert_non_null(strstr(err.msg, "not an OCI image layout"));

	/* a layer blob changed after the manifest was written: refused,
	 * nothing unpacked, no record */
	struct jf_image *good = pull(c, (snprintf(ref, sizeof(ref), "oci:%s:v1", la), ref), &st, 1);
	char layer[JF_DIGEST_LEN];
	memcpy(layer, good->layers[0], sizeof(layer));
	assert_int_equal(jf_imgcache_remove(c, good->name, &err), JF_OK);
	jf_image_free(good);
	snprintf(p, sizeof(p), "%s/blobs/sha256/%s", la, layer + 7);
	FILE *f = fopen(p, "r+b");
	assert_non_null(f);
	fseek(f, 20, SEEK_SET);
	fputc('X', f);
	fclose(f);
	assert_int_equal(jf_imgref_parse(ref, &r, &err), JF_OK);
	assert_int_equal(jf_imgcache_pull(c, &r, &o, 1, &st, &img, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "does not match its digest"));
	assert_int_equal(jf_imgcache_lookup(c, &r, &img, &err), JF_ENOENT);
	jf_imgcache_layer_dir(c, layer, p, sizeof(p));
	assert_false(jft_exists(p));

	jf_imgcache_free(c);
	jft_rmtree(root);
}

static void test_sweep_leftovers(void **state)
{
	char root[512], p[1000], host[64], mine[800], other[800], live[800];
	(void)state;
	jft_mkdtemp(root, sizeof(root), jft_tmp_base(), "imgcache");
	struct jf_imgcache *c = open_cache(root);
	jf_imgcache_free(c);
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	for (char *h = host; *h; h++)
		if (*h == '-' || *h == '/')
			*h = '_';
	/* pid 2^22+1 is above pid_max's default ceiling: never alive */
	snprintf(mine, sizeof(mine), "%s/layers/sha256/tmp-%s-4194305-abc", root, host);
	snprintf(other, sizeof(other), "%s/layers/sha256/tmp-otherhost-4194305-abc", root);
	snprintf(live, sizeof(live), "%s/layers/sha256/tmp-%s-%ld-abc", root, host, (long)getpid());
	assert_int_equal(mkdir(mine, 0755), 0);
	assert_int_equal(mkdir(other, 0755), 0);
	assert_int_equal(mkdir(live, 0755), 0);
	snprintf(p, sizeof(p), "%s/f", mine);
	jft_write_file(p, "x");
	c = open_cache(root);
	assert_false(jft_exists(mine));
	assert_true(jft_exists(other)); /* another host's pull may be going on */
	assert_true(jft_exists(live));  /* so may a live process's */
	jf_imgcache_free(c);
	jft_rmtree(root);
}

/* flock() locks/<name> of the cache at dir as another process would (its
 * own open file); the fd */
static int hold_lock(const char *dir, const char *name, int how)
{
	char p[1200];
	snprintf(p, sizeof(p), "%s/locks/%s", dir, name);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, how | LOCK_NB), 0);
	return fd;
}

/* get by name; a removal that never waits: EBUSY, nothing removed, while
 * a pull holds the image or writes into the cache */
static void test_get_and_remove_nowait(void **state)
{
	char root[512], cdir[600], la[600], ref[700], rec[1200];
	(void)state;
	jft_mkdtemp(root, sizeof(root), jft_tmp_base(), "imgcache");
	snprintf(cdir, sizeof(cdir), "%s/cache", root);
	snprintf(la, sizeof(la), "%s/a", root);
	const char *const *layers[] = { base_layer, app_a };
	make_layout(la, "v1", layers, 2, "/bin/a");
	struct jf_imgcache *c = open_cache(cdir);
	struct jf_pull_stats st;
	snprintf(ref, sizeof(ref), "oci:%s:v1", la);
	struct jf_image *a = pull(c, ref, &st, 1000);
	struct jf_error err;
	struct jf_image *got;
	assert_int_equal(jf_imgcache_get(c, a->name, &got, &err), JF_OK);
	assert_string_equal(got->reference, a->reference);
	assert_string_equal(got->digest, a->digest);
	assert_int_equal(got->nlayers, 2);
	jf_image_free(got);
	assert_int_equal(jf_imgcache_get(c, "nosuch", &got, &err), JF_ENOENT);
	assert_null(got);
	assert_int_equal(jf_imgcache_get(c, "../refs/x", &got, &err), JF_ENOENT);
	assert_int_equal(jf_imgcache_get(c, "", &got, &err), JF_ENOENT);

	snprintf(rec, sizeof(rec), "%s/refs/%s.json", cdir, a->name);
	int fd = hold_lock(cdir, a->name, LOCK_EX); /* a pull of a */
	assert_int_equal(jf_imgcache_remove_nowait(c, a->name, &err), JF_EBUSY);
	assert_non_null(strstr(err.msg, a->name));
	assert_true(jft_exists(rec));
	close(fd);
	fd = hold_lock(cdir, ".gc", LOCK_SH); /* any pull writing blobs */
	assert_int_equal(jf_imgcache_remove_nowait(c, a->name, &err), JF_EBUSY);
	assert_true(jft_exists(rec));
	close(fd);
	assert_int_equal(jf_imgcache_remove_nowait(c, a->name, &err), JF_OK);
	assert_false(jft_exists(rec));
	char p[1200];
	jf_imgcache_layer_dir(c, a->layers[0], p, sizeof(p));
	assert_false(jft_exists(p));
	assert_int_equal(jf_imgcache_remove_nowait(c, a->name, &err), JF_ENOENT);
	jf_image_free(a);
	jf_imgcache_free(c);
	jft_rmtree(root);
}

/* the real registry of scripts/registry.sh */
static void test_registry_pull(void **state)
{
	const char *reg = getenv("JOBFS_REGISTRY");
	(void)state;
	if (!reg || !*reg) {
		if (getenv("JOBFS_REGISTRY_REQUIRED"))
			fail_msg("JOBFS_REGISTRY_REQUIRED is set but JOBFS_REGISTRY is not");
		skip();
	}
	char root[512], ref[300];
	jft_mkdtemp(root, sizeof(root), jft_tmp_base(), "imgcache");
	struct jf_imgcache *c = open_cache(root);
	snprintf(ref, sizeof(ref), "%s/jobfs/busybox:latest", reg);
	struct jf_imgref r;
	struct jf_error err;
	assert_int_equal(jf_imgref_parse(ref, &r, &err), JF_OK);
	const char *insecure[] = { reg };
	struct jf_reg_opts o = { .insecure = insecure, .ninsecure = 1 };
	struct jf_pull_stats st;
	struct jf_image *img;
	if (jf_imgcache_pull(c, &r, &o, 10, &st, &img, &err))
		fail_msg("pull %s: %s", ref, err.msg);
	assert_true(st.fetched_bytes > 500000); /* busybox is about 1 MiB */
	assert_true(img->nlayers >= 1);
	assert_true(img->config.ncmd + img->config.nentrypoint > 0);
	char p[1200];
	jf_imgcache_layer_dir(c, img->layers[img->nlayers - 1], p, sizeof(p));
	strcat(p, "/bin/busybox");
	struct stat sb;
	assert_int_equal(stat(p, &sb), 0);
	assert_true(sb.st_mode & S_IXUSR);
	jf_image_free(img);
	/* again: the manifest is asked for, no blob is fetched */
	if (jf_imgcache_pull(c, &r, &o, 20, &st, &img, &err))
		fail_msg("pull %s again: %s", ref, err.msg);
	assert_int_equal(st.fetched_bytes, 0);
	assert_int_equal(st.layers_unpacked, 0);
	assert_int_equal(st.blobs_present, (int64_t)img->nlayers + 1);
	jf_image_free(img);
	/* a tag the registry does not have */
	snprintf(ref, sizeof(ref), "%s/jobfs/busybox:nosuchtag", reg);
	assert_int_equal(jf_imgref_parse(ref, &r, &err), JF_OK);
	assert_int_equal(jf_imgcache_pull(c, &r, &o, 30, &st, &img, &err), JF_ENOENT);
	jf_imgcache_free(c);
	jft_rmtree(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oci_pull_and_share),
		cmocka_unit_test(test_oci_refused),
		cmocka_unit_test(test_sweep_leftovers),
		cmocka_unit_test(test_get_and_remove_nowait),
		cmocka_unit_test(test_registry_pull),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
