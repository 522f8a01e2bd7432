/*
 * test_objstore_tree.c - the parts of the object-store cache that touch a
 * real directory but no S3 endpoint: no-follow writes under a root
 * (objstore/tree.c: a planted symlink never redirects a write, a stat or a
 * removal; empty directories pruned, never the root), the sync's lock and
 * result.json, and a sync against an endpoint that is down (a closed
 * port on 127.0.0.1): it fails naming the endpoint, within its retries,
 * and leaves the cache as it was; the writer threads (objstore/writer.c):
 * chunks of many streams written in order and hashed, inline and with
 * threads, files made by the first chunk, a write error that sticks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objstore/sync.h"
#include "objstore/tree.h"
#include "objstore/writer.h"
#include "testutil.h"

static char tmp[512];

static int setup(void **state)
{
	(void)state;
	jft_mkdtemp(tmp, sizeof(tmp), jft_tmp_base(), "jf-objtree");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	jft_rmtree(tmp);
	return 0;
}

static const char *p(const char *rel)
{
	static char buf[4][1024];
	static int i;
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmp, rel);
	return buf[i];
}

static int root_fd(const char *rel)
{
	mkdir(p(rel), 0755);
	int fd = open(p(rel), O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	return fd;
}

static void test_install_and_remove(void **state)
{
	(void)state;
	int root = root_fd("data"), src = root_fd("src");
	struct jf_tree t;
	jf_tree_init(&t, root);
	jft_write_file(p("src/f1"), "one");
	jft_write_file(p("src/f2"), "two");
	jft_write_file(p("src/f3"), "three");
	assert_int_equal(jf_tree_install(&t, "a/b/c/f1", src, "f1"), 0);
	assert_int_equal(jf_tree_install(&t, "a/b/f2", src, "f2"), 0);
	assert_int_equal(jf_tree_install(&t, "top", src, "f3"), 0);
	char *s = jft_read_file(p("data/a/b/c/f1"));
	assert_string_equal(s, "one");
	free(s);
	struct stat st;
	assert_int_equal(jf_tree_stat(&t, "a/b/f2", &st), 0);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(jf_tree_stat(&t, "a/x", &st), -1);
	assert_int_equal(errno, ENOENT);
	/* a file where a directory would go, and the reverse */
	jft_write_file(p("src/f4"), "four");
	assert_int_equal(jf_tree_install(&t, "top/sub", src, "f4"), -1);
	assert_int_equal(errno, ENOTDIR);
	assert_int_equal(jf_tree_install(&t, "a/b", src, "f4"), -1);
	assert_true(errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST);
	/* remove: c/ goes with its only file; b/ stays for f2 */
	assert_int_equal(jf_tree_remove(&t, "a/b/c/f1"), 0);
	assert_false(jft_exists(p("data/a/b/c")));
	assert_true(jft_exists(p("data/a/b/f2")));
	assert_int_equal(jf_tree_remove(&t, "a/b/f2"), 0);
	assert_false(jft_exists(p("data/a")));
	assert_true(jft_exists(p("data")));
	assert_int_equal(jf_tree_remove(&t, "top"), 0);
	assert_int_equal(jf_tree_remove(&t, "never/was"), 0);
	assert_true(jft_exists(p("data")));
	/* the cache survives the pruning: installs after removals work */
	assert_int_equal(jf_tree_install(&t, "a/b/c/f4", src, "f4"), 0);
	assert_true(jft_exists(p("data/a/b/c/f4")));
	jf_tree_close(&t);
	close(root);
	close(src);
}

static void test_symlinks_not_followed(void **state)
{
	(void)state;
	int root = root_fd("data"), src = root_fd("src");
	mkdir(p("outside"), 0755);
	jft_write_file(p("outside/victim"), "precious");
	/* planted: data/evil -> ../outside, data/d/link -> ../../outside */
	assert_int_equal(symlink(p("outside"), p("data/evil")), 0);
	mkdir(p("data/d"), 0755);
	assert_int_equal(symlink("../../outside", p("data/d/link")), 0);
	assert_int_equal(symlink(p("outside/victim"), p("data/flink")), 0);
	struct jf_tree t;
	jf_tree_init(&t, root);
	jft_write_file(p("src/x"), "attack");
	assert_int_equal(jf_tree_install(&t, "evil/victim", src, "x"), -1);
	assert_true(errno == ELOOP || errno == ENOTDIR);
	assert_int_equal(jf_tree_install(&t, "d/link/new", src, "x"), -1);
	assert_true(errno == ELOOP || errno == ENOTDIR);
	assert_false(jft_exists(p("outside/new")));
	struct stat st;
	assert_int_equal(jf_tree_stat(&t, "evil/victim", &st), -1);
	/* the last component: a symlink is replaced, its target untouched */
	assert_int_equal(jf_tree_stat(&t, "flink", &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(jf_tree_install(&t, "flink", src, "x"), 0);
	/* removal through a symlinked directory does nothing: for the
	 * mirror there is no such file */
	jf_tree_remove(&t, "evil/victim");
	jf_tree_remove(&t, "d/link/victim");
	char *s = jft_read_file(p("outside/victim"));
	assert_string_equal(s, "precious");
	free(s);
	s = jft_read_file(p("data/flink"));
	assert_string_equal(s, "attack");
	free(s);
	jf_tree_close(&t);
	close(root);
	close(src);
}

static void test_lock_and_result(void **state)
{
	(void)state;
	struct jf_error e;
	int a, b;
	const char *dir = p("cache");
	assert_int_equal(jf_sync_lock(dir, &a, &e), JF_OK);
	assert_int_equal(jf_sync_lock(dir, &b, &e), JF_EBUSY);
	assert_non_null(strstr(e.msg, "another sync"));
	close(a);
	assert_int_equal(jf_sync_lock(dir, &b, &e), JF_OK);
	close(b);

	struct jf_sync_result r;
	memset(&r, 0, sizeof(r));
	r.ok = true;
	r.objects = 3;
	r.seconds = 1.25;
	r.listing_pages = 1;
	r.nskipped_keys = 1;
	snprintf(r.skipped_keys[0], sizeof(r.skipped_keys[0]), "p/../x");
	r.nwarnings = 1;
	snprintf(r.warnings[0], sizeof(r.warnings[0]), "skipped \"p/../x\": a \"..\" component");
	snprintf(r.message, sizeof(r.message), "synced");
	assert_int_equal(jf_sync_write_result(dir, &r, &e), JF_OK);
	char *s = jft_read_in(dir, "result.json");
	json_error_t je;
	json_t *j = json_loads(s, 0, &je);
	assert_non_null(j);
	assert_true(json_is_true(json_object_get(j, "ok")));
	assert_int_equal(json_integer_value(json_object_get(j, "objects")), 3);
	assert_true(json_real_value(json_object_get(j, "seconds")) == 1.25);
	assert_string_equal(
		json_string_value(json_array_get(json_object_get(j, "skipped_keys"), 0)), "p/../x");
	const char *fields[] = { "fetched",       "fetched_bytes", "removed", "skipped", "bytes",
				 "listing_pages", "message",       "kept",    "warnings" };
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		assert_non_null(json_object_get(j, fields[i]));
	json_decref(j);
	free(s);
	assert_false(jft_exists(p("cache/.result.tmp")));
}

/* a port on 127.0.0.1 that refuses connections */
static int closed_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	socklen_t l = sizeof(a);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &l), 0);
	close(s);
	return ntohs(a.sin_port);
}

static void test_sync_endpoint_down(void **state)
{
	(void)state;
	const char *dir = p("down");
	mkdir(dir, 0755);
	mkdir(p("down/data"), 0755);
	jft_write_file(p("down/data/kept"), "old");
	jft_write_file(p("down/manifest"), "old manifest\n");
	char ep[64];
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", closed_port());
	struct jf_sync_opts o = { .dir = dir, .prefix = "m", .backoff_ms = 20 };
	o.s3.endpoint = ep;
	o.s3.bucket = "b";
	struct jf_sync_result r;
	struct jf_error e;
	jf_error_clear(&e);
	int64_t t0 = jft_mono_ms();
	assert_int_equal(jf_sync_run(&o, &r, &e), JF_EIO);
	assert_true(jft_mono_ms() - t0 < 5000);
	assert_false(r.ok);
	assert_non_null(strstr(e.msg, ep));
	assert_non_null(strstr(e.msg, "not reachable"));
	assert_non_null(strstr(e.msg, "tried 4 times"));
	assert_string_equal(r.message, e.msg);
	char *s = jft_read_file(p("down/data/kept"));
	assert_string_equal(s, "old");
	free(s);
	s = jft_read_file(p("down/manifest"));
	assert_string_equal(s, "old manifest\n");
	free(s);
	assert_false(jft_exists(p("down/partial/manifest.new")));
	/* a bad endpoint never gets as far */
	o.s3.endpoint = "http://u:secret@h/";
	assert_int_equal(jf_sync_run(&o, &r, &e), JF_EINVAL);
	assert_null(strstr(r.message, "secret"));
}

static void write_streams(int nthreads)
{
	struct jf_wpool *wp;
	struct jf_error e;
	enum { NS = 5, CH = 1000 };
	assert_int_equal(jf_wpool_new(nthreads, CH, 3, &wp, &e), JF_OK);
	assert_int_equal(jf_wpool_chunk(wp), CH);
	struct jf_wstream ws[NS];
	struct jf_md5 md5[NS];
	int64_t md5_n[NS];
	int dir = root_fd("w");
	char name[32];
	for (int i = 0; i < NS; i++) {
		assert_int_equal(jf_md5_init(&md5[i]), JF_OK);
		md5_n[i] = 0;
		snprintf(name, sizeof(name), "s%d", i);
		jf_wpool_open_at(wp, &ws[i], dir, name, &md5[i], &md5_n[i]);
	}
	/* 37 chunks per stream, interleaved; byte k of stream i is (k + i) % 251 */
	for (int c = 0; c < 37; c++)
		for (int i = 0; i < NS; i++) {
			char *b = jf_wpool_buf(wp);
			size_t n = c == 36 ? 123 : CH;
			for (size_t k = 0; k < n; k++)
				b[k] = (char)((c * CH + (int)k + i) % 251);
			jf_wpool_submit(wp, &ws[i], b, n);
		}
	jf_wpool_submit(wp, &ws[0], jf_wpool_buf(wp), 0); /* a buffer given back empty */
	for (int i = 0; i < NS; i++) {
		assert_int_equal(jf_wpool_wait(wp, &ws[i]), 0);
		assert_true(ws[i].fd >= 0);
		size_t len = 36 * CH + 123;
		assert_int_equal(ws[i].off, (int64_t)len);
		assert_int_equal(md5_n[i], (int64_t)len);
		char *want = malloc(len), *have = malloc(len + 1);
		for (size_t k = 0; k < len; k++)
			want[k] = (char)((k + (size_t)i) % 251);
		assert_int_equal(pread(ws[i].fd, have, len + 1, 0), (ssize_t)len);
		assert_memory_equal(want, have, len);
		unsigned char d[16], d2[16];
		jf_md5_final(&md5[i], d);
		struct jf_md5 m;
		jf_md5_init(&m);
		jf_md5_update(&m, want, len);
		jf_md5_final(&m, d2);
		assert_memory_equal(d, d2, 16);
		jf_wpool_writeback(wp, ws[i].fd); /* on a dup: ours stays open */
		struct stat st;
		assert_int_equal(fstat(ws[i].fd, &st), 0);
		close(ws[i].fd);
		free(want);
		free(have);
	}
	/* a write error sticks, and the rest of the stream is dropped */
	int ro = open(p("w/s0"), O_RDONLY);
	struct jf_wstream bad;
	jf_wpool_open(wp, &bad, ro, 0, NULL, NULL);
	for (int c = 0; c < 4; c++)
		jf_wpool_submit(wp, &bad, jf_wpool_buf(wp), CH);
	assert_int_equal(jf_wpool_wait(wp, &bad), EBADF);
	assert_int_equal(jf_wpool_error(wp, &bad), EBADF);
	close(ro);
	/* a file that cannot be made */
	jf_wpool_open_at(wp, &bad, dir, "no/such/dir", NULL, NULL);
	jf_wpool_submit(wp, &bad, jf_wpool_buf(wp), 10);
	assert_int_equal(jf_wpool_wait(wp, &bad), ENOENT);
	jf_wpool_free(wp);
	close(dir);
}

static void test_writer_threads(void **state)
{
	(void)state;
	write_streams(3);
}

static void test_writer_inline(void **state)
{
	(void)state;
	write_streams(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_install_and_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinks_not_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_and_result, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_endpoint_down, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_inline, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
