/*
 * test_objstore.c - the pure parts of the object-store cache (objstore/):
 * the AWS credentials parser (profiles, comments, errors, size, and that no
 * message ever holds a secret), object keys as mirror paths (every
 * refusal, the prefix), the ListObjectsV2 parser on recorded documents
 * (radosgw's url-encoded keys, AWS's entities, truncated pages, error
 * documents, malformed ones, one byte at a time), S3's error messages,
 * URLs in SigV4's canonical form, ETags and MD5, dates, and the merge of
 * an old manifest with a listing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "objstore/creds.h"
#include "objstore/keys.h"
#include "objstore/manifest.h"
#include "objstore/s3.h"
#include "testutil.h"

static struct jf_error E;

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"

/* ---- credentials --------------------------------------------------------- */

static enum jf_err creds(const char *text, const char *profile, struct jf_creds *c)
{
	jf_error_clear(&E);
	enum jf_err rc = jf_creds_parse(text, strlen(text), profile, "creds.ini", c, &E);
	/* whatever happened, the message holds no secret */
	if (strstr(E.msg, SECRET) || strstr(E.msg, "wJalr") || strstr(E.msg, "EXAMPLEKEY"))
		fail_msg("a secret in the message: %s", E.msg);
	return rc;
}

static void test_creds_default(void **state)
{
	(void)state;
	struct jf_creds c;
	const char *t = "[default]\n"
			"aws_access_key_id = AKIAEXAMPLE\n"
			"aws_secret_access_key = " SECRET "\n";
	assert_int_equal(creds(t, NULL, &c), JF_OK);
	assert_string_equal(c.access_key, "AKIAEXAMPLE");
	assert_string_equal(c.secret_key, SECRET);
	assert_string_equal(c.session_token, "");
}

static void test_creds_profiles_comments(void **state)
{
	(void)state;
	struct jf_creds c;
	const char *t = "\xef\xbb\xbf# a comment\r\n"
			"; another\r\n"
			"\r\n"
			"[default]\r\n"
			"aws_access_key_id=AKIADEFAULT\r\n"
			"aws_secret_access_key=defaultsecret\r\n"
			"region = eu-west-1\r\n"
			"[ profile  other ]\r\n"
			"   AWS_Access_Key_Id   =    AKIAOTHER   \r\n"
			"\taws_secret_access_key\t=\t" SECRET "#kept\r\n"
			"aws_session_token = FQoGZXIvYXdzEtoken//+=\r\n"
			"[third]\n"
			"aws_access_key_id = X\n";
	assert_int_equal(creds(t, "other", &c), JF_OK);
	assert_string_equal(c.access_key, "AKIAOTHER");
	assert_string_equal(c.secret_key, SECRET "#kept"); /* as botocore: no inline comments */
	assert_string_equal(c.session_token, "FQoGZXIvYXdzEtoken//+=");
	assert_int_equal(creds(t, "default", &c), JF_OK);
	assert_string_equal(c.access_key, "AKIADEFAULT");
	assert_string_equal(c.session_token, "");
	/* third lacks its secret */
	assert_int_equal(creds(t, "third", &c), JF_EINVAL);
	assert_non_null(strstr(E.msg, "[third] has no aws_secret_access_key"));
	assert_string_equal(c.access_key, ""); /* wiped on failure */
}

static void test_creds_errors(void **state)
{
	(void)state;
	struct jf_creds c;
	assert_int_equal(creds("[default]\naws_access_key_id = A\naws_secret_access_key = " SECRET
			       "\n",
			       "nope", &c),
			 JF_ENOENT);
	assert_non_null(strstr(E.msg, "no profile [nope]"));
	assert_int_equal(creds("", NULL, &c), JF_ENOENT);
	/* a secret pasted alone on a line: named by its line, not quoted */
	assert_int_equal(creds("[default]\naws_access_key_id = A\n" SECRET "\n", NULL, &c),
			 JF_EINVAL);
	assert_int_equal(E.line, 3);
	assert_non_null(strstr(E.msg, "line 3"));
	assert_non_null(strstr(E.msg, "key = value"));
	/* a blank inside the secret */
	assert_int_equal(creds("[default]\naws_access_key_id = A\naws_secret_access_key = wJalr "
			       "XUtn\n",
			       NULL, &c),
			 JF_EINVAL);
	assert_int_equal(E.line, 3);
	/* twice */
	assert_int_equal(
		creds("[default]\naws_access_key_id = A\naws_access_key_id = B\n", NULL, &c),
		JF_EINVAL);
	assert_non_null(strstr(E.msg, "given twice"));
	assert_int_equal(creds("[default]\naws_access_key_id = A\naws_secret_access_key = "
			       "s\n[default]\n",
			       NULL, &c),
			 JF_EINVAL);
	assert_non_null(strstr(E.msg, "profile [default] is given twice"));
	/* empty value, bad header, value without key, NUL */
	assert_int_equal(creds("[default]\naws_access_key_id =\n", NULL, &c), JF_EINVAL);
	assert_non_null(strstr(E.msg, "aws_access_key_id is empty"));
	assert_int_equal(creds("[default\naws_access_key_id = A\n", NULL, &c), JF_EINVAL);
	assert_int_equal(E.line, 1);
	assert_int_equal(creds("[default]\n = " SECRET "\n", NULL, &c), JF_EINVAL);
	assert_int_equal(E.line, 2);
	jf_error_clear(&E);
	assert_int_equal(jf_creds_parse("[default]\0x", 11, NULL, "f", &c, &E), JF_EINVAL);
	assert_non_null(strstr(E.msg, "NUL"));
	/* no key at all */
	assert_int_equal(creds("[default]\naws_secret_access_key = " SECRET "\n", NULL, &c),
			 JF_EINVAL);
	assert_non_null(strstr(E.msg, "has no aws_access_key_id"));
	/* a secret too long */
	char big[600];
	snprintf(big, sizeof(big),
		 "[default]\naws_access_key_id = A\naws_secret_access_key = %0*d\n", 300, 7);
	assert_int_equal(creds(big, NULL, &c), JF_EFBIG);
}

static void test_creds_huge(void **state)
{
	(void)state;
	struct jf_creds c;
	size_t n = JF_CREDS_FILE_MAX + 1;
	char *t = malloc(n + 1);
	assert_non_null(t);
	memset(t, '#', n);
	{
		const char *h = "[default]\naws_access_key_id = A\naws_secret_access_key = B\n";
		memcpy(t, h, strlen(h));
	}
	t[n] = '\0';
	jf_error_clear(&E);
	assert_int_equal(jf_creds_parse(t, n, NULL, "big", &c, &E), JF_EFBIG);
	/* through a file descriptor too */
	char dir[512], path[600];
	jft_mkdtemp(dir, sizeof(dir), jft_tmp_base(), "jf-creds");
	snprintf(path, sizeof(path), "%s/big", dir);
	t[n - 1] = '\n';
	jft_write_file(path, t);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	jf_error_clear(&E);
	assert_int_equal(jf_creds_read_fd(fileno(f), NULL, path, &c, &E), JF_EFBIG);
	fclose(f);
	/* and a good one */
	jft_write_file(path,
		       "[default]\naws_access_key_id = A\naws_secret_access_key = " SECRET "\n");
	f = fopen(path, "r");
	assert_int_equal(jf_creds_read_fd(fileno(f), NULL, path, &c, &E), JF_OK);
	assert_string_equal(c.secret_key, SECRET);
	fclose(f);
	jf_creds_wipe(&c);
	assert_string_equal(c.secret_key, "");
	jft_rmtree(dir);
	free(t);
}

/* ---- keys ---------------------------------------------------------------- */

static void prefix_is(const char *in, const char *want)
{
	char out[JF_KEY_PREFIX_MAX + 1];
	jf_error_clear(&E);
	if (jf_key_prefix_norm(in, out, sizeof(out), &E) != JF_OK)
		fail_msg("prefix [%s]: %s", in, E.msg);
	assert_string_equal(out, want);
}

static void test_keys_prefix(void **state)
{
	(void)state;
	prefix_is("", "");
	prefix_is(NULL, "");
	prefix_is("models", "models/");
	prefix_is("models/", "models/");
	prefix_is("a/b c/é", "a/b c/é/");
	char out[JF_KEY_PREFIX_MAX + 1];
	assert_int_equal(jf_key_prefix_norm("/abs", out, sizeof(out), &E), JF_EINVAL);
	assert_int_equal(jf_key_prefix_norm("a\x01", out, sizeof(out), &E), JF_EINVAL);
	char big[JF_KEY_PREFIX_MAX + 2];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(jf_key_prefix_norm(big, out, sizeof(out), &E), JF_EFBIG);
	big[JF_KEY_PREFIX_MAX - 1] = '\0'; /* 1023 + '/' */
	assert_int_equal(jf_key_prefix_norm(big, out, sizeof(out), &E), JF_OK);
}

static void file_key(const char *prefix, const char *key, size_t len, const char *rel_want)
{
	const char *rel, *why;
	size_t rl;
	enum jf_key_kind k = jf_key_classify(prefix, key, len, &rel, &rl, &why);
	if (k != JF_KEY_FILE)
		fail_msg("[%s] refused: %s", key, why ? why : "a marker");
	assert_int_equal(rl, strlen(rel_want));
	assert_memory_equal(rel, rel_want, rl);
}

static void unsafe_key(const char *prefix, const char *key, size_t len, const char *why_want)
{
	const char *rel, *why;
	size_t rl;
	enum jf_key_kind k = jf_key_classify(prefix, key, len, &rel, &rl, &why);
	if (k != JF_KEY_UNSAFE)
		fail_msg("[%s] accepted (%d)", key, (int)k);
	if (!strstr(why, why_want))
		fail_msg("[%s]: \"%s\" lacks \"%s\"", key, why, why_want);
	assert_null(rel);
}

#define FK(p, k, r)   file_key(p, k, sizeof(k) - 1, r)
#define UK(p, k, why) unsafe_key(p, k, sizeof(k) - 1, why)

static void test_keys_classify(void **state)
{
	(void)state;
	const char *rel, *why;
	size_t rl;
	FK("models/", "models/a.bin", "a.bin");
	FK("models/", "models/d/e/f.bin", "d/e/f.bin");
	FK("models/", "models/..a", "..a");
	FK("models/", "models/a..", "a..");
	FK("models/", "models/...", "...");
	FK("models/", "models/.hidden", ".hidden");
	FK("models/", "models/caf\xc3\xa9/\xe2\x82\xac.bin", "caf\xc3\xa9/\xe2\x82\xac.bin");
	FK("models/", "models/a b+c=d", "a b+c=d");
	FK("", "top.txt", "top.txt");
	/* markers */
	assert_int_equal(jf_key_classify("models/", "models/", 7, &rel, &rl, &why), JF_KEY_DIRMARK);
	assert_int_equal(jf_key_classify("models/", "models/d/", 9, &rel, &rl, &why),
			 JF_KEY_DIRMARK);
	assert_int_equal(jf_key_classify("", "d/", 2, &rel, &rl, &why), JF_KEY_DIRMARK);
	/* refusals */
	UK("models/", "modelsX/a", "not under the prefix");
	UK("models/", "models", "not under the prefix");
	UK("models/", "models/../x", "\"..\"");
	UK("models/", "models/a/../../x", "\"..\"");
	UK("models/", "models/..", "\"..\"");
	UK("models/", "models/a/./b", "\".\"");
	UK("models/", "models/.", "\".\"");
	UK("models/", "models/a//b", "empty path component");
	UK("models/", "models//etc/passwd", "absolute");
	UK("", "/etc/passwd", "absolute");
	UK("", "../../etc/passwd", "\"..\"");
	UK("models/",
	   "models/a\x01"
	   "b",
	   "control");
	UK("models/", "models/a\nb", "control");
	UK("models/", "models/a\tb", "control");
	UK("models/", "models/a\x7f", "control");
	UK("models/", "models/a\0b", "NUL");
	/* lengths: a component of 255 is fine, 256 is not; the whole 1024 */
	char k[2048];
	memcpy(k, "p/", 2);
	memset(k + 2, 'x', 255);
	k[257] = '\0';
	file_key("p/", k, 257, k + 2);
	memset(k + 2, 'x', 256);
	k[258] = '\0';
	unsafe_key("p/", k, 258, "longer than 255");
	size_t n = 2;
	while (n + 101 <= 2 + 1024) {
		memset(k + n, 'y', 100);
		k[n + 100] = '/';
		n += 101;
	}
	memset(k + n, 'z', 2 + 1024 - n);
	k[2 + 1024] = '\0';
	file_key("p/", k, 2 + 1024, k + 2);
	k[2 + 1024] = 'z';
	k[2 + 1025] = '\0';
	unsafe_key("p/", k, 2 + 1025, "longer than 1024");
}

static void test_keys_order(void **state)
{
	(void)state;
	assert_true(jf_key_is_parent("a", 1, "a/b", 3));
	assert_false(jf_key_is_parent("a", 1, "ab/c", 4));
	assert_false(jf_key_is_parent("a", 1, "a/", 2));
	assert_false(jf_key_is_parent("a/b", 3, "a", 1));
	assert_true(jf_key_cmp("a", 1, "a/b", 3) < 0);
	assert_true(jf_key_cmp("a-", 2, "a/", 2) < 0); /* '-' 0x2d before '/' 0x2f */
	assert_true(jf_key_cmp("a/", 2, "a0", 2) < 0);
	assert_true(jf_key_cmp("\xc3\xa9", 2, "z", 1) > 0); /* bytes, not code points */
	assert_int_equal(jf_key_cmp("ab", 2, "ab", 2), 0);
	assert_true(jf_key_cmp("", 0, "a", 1) < 0);
}

/* ---- listings ------------------------------------------------------------ */

/* radosgw 16's answer, as recorded (encoding-type=url) */
static const char RGW_PAGE[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult "
	"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><EncodingType>url</EncodingType>"
	"<Name>jobfs-test</Name><Prefix>probe/</Prefix><MaxKeys>2</MaxKeys>"
	"<IsTruncated>true</IsTruncated><Contents><Key>probe%2F%01ctl</Key>"
	"<LastModified>2026-12-04T21:07:32.805Z</LastModified>"
	"<ETag>&quot;5d41402abc4b2a76b9719d911017c592&quot;</ETag><Size>5</Size>"
	"<StorageClass>STANDARD</StorageClass><Type>Normal</Type></Contents><Contents>"
	"<Key>probe%2F..%2Fevil</Key><LastModified>2026-12-04T21:07:32.803Z</LastModified>"
	"<ETag>&quot;5d41402abc4b2a76b9719d911017c592&quot;</ETag><Size>5</Size>"
	"<StorageClass>STANDARD</StorageClass><Type>Normal</Type></Contents>"
	"<NextContinuationToken>probe/../evil+=/x</NextContinuationToken><KeyCount>2</KeyCount>"
	"</ListBucketResult>";

/* AWS's form: no encoding asked, entities in keys, the last page */
static const char AWS_PAGE[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
	"  <Name>b</Name><Prefix>m/</Prefix><KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys>\n"
	"  <IsTruncated>false</IsTruncated>\n"
	"  <Contents><Key>m/a&amp;b &quot;c&quot; &lt;d&gt;</Key>"
	"<LastModified>2009-10-12T17:50:30.000Z</LastModified>"
	"<ETag>\"fba9dede5f27731c9771645a39863328\"</ETag><Size>434234</Size>"
	"<StorageClass>STANDARD</StorageClass></Contents>\n"
	"  <Contents><Key>m/big.bin</Key><LastModified>2009-10-12T17:50:31Z</LastModified>"
	"<ETag>&quot;3858f62230ac3c915f300c664312c11f-9&quot;</ETag><Size>150000000</Size>"
	"</Contents>\n"
	"  <Contents><Key>m/caf\xc3\xa9 &#x20AC;</Key><Size>0</Size></Contents>\n"
	"</ListBucketResult>\n";

static void test_list_rgw(void **state)
{
	(void)state;
	struct jf_s3_page pg;
	jf_error_clear(&E);
	if (jf_s3_parse_list(RGW_PAGE, sizeof(RGW_PAGE) - 1, &pg, &E))
		fail_msg("%s", E.msg);
	assert_int_equal(pg.n, 2);
	assert_true(pg.truncated);
	assert_string_equal(pg.next_token, "probe/../evil+=/x"); /* tokens are not encoded */
	assert_int_equal(pg.v[0].keylen, 10);
	assert_memory_equal(pg.v[0].key,
			    "probe/\x01"
			    "ctl",
			    10);
	assert_string_equal(pg.v[1].key, "probe/../evil");
	assert_string_equal(pg.v[0].etag, "5d41402abc4b2a76b9719d911017c592");
	assert_int_equal(pg.v[0].size, 5);
	assert_int_equal(pg.v[0].mtime, 1796418452);
	jf_s3_page_free(&pg);
}

static void test_list_aws(void **state)
{
	(void)state;
	struct jf_s3_page pg;
	jf_error_clear(&E);
	if (jf_s3_parse_list(AWS_PAGE, sizeof(AWS_PAGE) - 1, &pg, &E))
		fail_msg("%s", E.msg);
	assert_int_equal(pg.n, 3);
	assert_false(pg.truncated);
	assert_null(pg.next_token);
	assert_string_equal(pg.v[0].key, "m/a&b \"c\" <d>");
	assert_int_equal(pg.v[0].size, 434234);
	assert_int_equal(pg.v[0].mtime, 1255369830);
	assert_string_equal(pg.v[1].etag, "3858f62230ac3c915f300c664312c11f-9");
	assert_int_equal(pg.v[1].size, 150000000);
	assert_string_equal(pg.v[2].key, "m/caf\xc3\xa9 \xe2\x82\xac");
	assert_string_equal(pg.v[2].etag, "");
	assert_int_equal(pg.v[2].mtime, 0);
	jf_s3_page_free(&pg);
}

static void test_list_bytewise(void **state)
{
	(void)state;
	/* fed one byte at a time, the same page */
	struct jf_s3_listparse *p;
	struct jf_s3_page pg;
	assert_int_equal(jf_s3_listparse_new(&p, &E), JF_OK);
	for (size_t i = 0; i < sizeof(RGW_PAGE) - 1; i++)
		if (jf_s3_listparse_feed(p, RGW_PAGE + i, 1, &E))
			fail_msg("byte %zu: %s", i, E.msg);
	assert_int_equal(jf_s3_listparse_end(p, &pg, &E), JF_OK);
	jf_s3_listparse_free(p);
	assert_int_equal(pg.n, 2);
	assert_string_equal(pg.v[1].key, "probe/../evil");
	jf_s3_page_free(&pg);
	/* '+' is a space when the keys are url-encoded */
	const char *t = "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false"
			"</IsTruncated><Contents><Key>a+b%2Bc%zz</Key><Size>1</Size></Contents>"
			"</ListBucketResult>";
	assert_int_equal(jf_s3_parse_list(t, strlen(t), &pg, &E), JF_OK);
	assert_string_equal(pg.v[0].key, "a b+c%zz");
	jf_s3_page_free(&pg);
	/* an empty page */
	t = "<ListBucketResult><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated>"
	    "</ListBucketResult>";
	assert_int_equal(jf_s3_parse_list(t, strlen(t), &pg, &E), JF_OK);
	assert_int_equal(pg.n, 0);
	jf_s3_page_free(&pg);
}

static void list_bad(const char *t, enum jf_err want, const char *why)
{
	struct jf_s3_page pg;
	jf_error_clear(&E);
	enum jf_err rc = jf_s3_parse_list(t, strlen(t), &pg, &E);
	if (rc != want)
		fail_msg("[%s]: %s, want %s (%s)", t, jf_err_name(rc), jf_err_name(want), E.msg);
	if (!strstr(E.msg, why))
		fail_msg("[%s]: \"%s\" lacks \"%s\"", t, E.msg, why);
	assert_int_equal(pg.n, 0);
	assert_null(pg.v);
}

static void test_list_bad(void **state)
{
	(void)state;
	list_bad("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", JF_EINVAL,
		 "no NextContinuationToken");
	list_bad("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
		 JF_EINVAL, "without a Key");
	list_bad("<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>",
		 JF_EINVAL, "without a Size");
	list_bad("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents>"
		 "</ListBucketResult>",
		 JF_EINVAL, "not a number");
	list_bad("<ListBucketResult><Contents><Key>k</Key><Size>1</Size><LastModified>yesterday"
		 "</LastModified></Contents></ListBucketResult>",
		 JF_EINVAL, "not a date");
	list_bad("<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>", JF_EINVAL,
		 "neither true nor false");
	list_bad("<ListBucketResult><Contents><Key>k</Key>", JF_EINVAL, "not XML");
	list_bad("not xml at all", JF_EINVAL, "not XML");
	list_bad("", JF_EINVAL, "not XML");
	list_bad("<Other/>", JF_EINVAL, "not a ListBucketResult");
	list_bad("<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY a \"aaaa\">]>"
		 "<ListBucketResult><Contents><Key>&a;</Key><Size>1</Size></Contents>"
		 "</ListBucketResult>",
		 JF_EINVAL, "DOCTYPE");
	list_bad("<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not "
		 "exist</Message><BucketName>x</BucketName></Error>",
		 JF_EIO, "NoSuchBucket: The specified bucket does not exist");
	list_bad("<ListBucketResult><Contents><Key>a</Key><Key>b</Key><Size>1</Size></Contents>"
		 "</ListBucketResult>",
		 JF_EINVAL, "two Keys");
	/* a key over 64 KiB */
	size_t n = 70000;
	char *t = malloc(n + 100);
	strcpy(t, "<ListBucketResult><Contents><Key>");
	memset(t + strlen(t), 'k', n);
	strcpy(t + 33 + n, "</Key><Size>1</Size></Contents></ListBucketResult>");
	list_bad(t, JF_EINVAL, "longer than 64 KiB");
	free(t);
}

static void test_error_messages(void **state)
{
	(void)state;
	char m[JF_S3_MSG];
	/* radosgw sends a bare code */
	const char *rgw = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>"
			  "SignatureDoesNotMatch</Code><RequestId>tx0</RequestId><HostId>h"
			  "</HostId></Error>";
	jf_s3_error_message(403, rgw, strlen(rgw), "b", m, sizeof(m));
	assert_string_equal(m, "403 SignatureDoesNotMatch: The request signature we calculated "
			       "does not match the signature you provided. Check your key and "
			       "signing method.");
	const char *nsb = "<Error><Code>NoSuchBucket</Code><BucketName>x</BucketName></Error>";
	jf_s3_error_message(404, nsb, strlen(nsb), "x", m, sizeof(m));
	assert_string_equal(m, "404 NoSuchBucket: bucket \"x\" does not exist");
	const char *own = "<Error><Code>SlowDown</Code><Message>Reduce your rate &amp; "
			  "retry</Message></Error>";
	jf_s3_error_message(503, own, strlen(own), "x", m, sizeof(m));
	assert_string_equal(m, "503 SlowDown: Reduce your rate & retry");
	const char *odd = "<Error><Code>Weird</Code></Error>";
	jf_s3_error_message(400, odd, strlen(odd), "x", m, sizeof(m));
	assert_string_equal(m, "400 Weird");
	jf_s3_error_message(502, "<html>bad gateway</html>", 24, "x", m, sizeof(m));
	assert_string_equal(m, "502 (no S3 error document)");
	jf_s3_error_message(404, "", 0, "x", m, sizeof(m));
	assert_string_equal(m, "404 (not found, and no S3 error document)");
	jf_s3_error_message(403, NULL, 0, NULL, m, sizeof(m));
	assert_string_equal(m, "403 (forbidden, and no S3 error document)");
}

/* ---- URLs, retries, ETags, dates ------------------------------------------ */

static void test_encode_urls(void **state)
{
	(void)state;
	char out[256] = "";
	assert_true(jf_s3_encode("a b+c=/d~_.-\xc3\xa9", 14, true, out, sizeof(out)));
	assert_string_equal(out, "a%20b%2Bc%3D/d~_.-%C3%A9");
	out[0] = '\0';
	assert_true(jf_s3_encode("a/b", 3, false, out, sizeof(out)));
	assert_string_equal(out, "a%2Fb");
	char small[5] = "";
	assert_false(jf_s3_encode("a b", 3, false, small, sizeof(small)));

	struct jf_creds c = { .access_key = "AK", .secret_key = SECRET };
	struct jf_s3_opts o = { .endpoint = "http://127.0.0.1:17480/",
				.bucket = "bkt",
				.creds = &c };
	struct jf_s3 *s;
	assert_int_equal(jf_s3_new(&o, &s, &E), JF_OK);
	assert_string_equal(jf_s3_endpoint(s), "http://127.0.0.1:17480");
	char *url;
	assert_int_equal(jf_s3_list_url(s, "m o/", NULL, &url, &E), JF_OK);
	assert_string_equal(url, "http://127.0.0.1:17480/bkt?encoding-type=url&list-type=2&"
				 "max-keys=1000&prefix=m%20o%2F");
	free(url);
	/* a token with '=', '+' and '/' goes first (sorted) and encoded */
	assert_int_equal(jf_s3_list_url(s, "", "a/b+c=", &url, &E), JF_OK);
	assert_string_equal(url, "http://127.0.0.1:17480/bkt?continuation-token=a%2Fb%2Bc%3D&"
				 "encoding-type=url&list-type=2&max-keys=1000");
	assert_null(strstr(url, SECRET));
	free(url);
	assert_int_equal(jf_s3_object_url(s, "m/a b+c", 7, &url, &E), JF_OK);
	assert_string_equal(url, "http://127.0.0.1:17480/bkt/m/a%20b%2Bc");
	free(url);
	jf_s3_free(s);

	/* what jf_s3_new refuses */
	const char *bad_ep[] = { "ftp://h",     "127.0.0.1:80", "http://user:pw@h/",
				 "http://h/?q", "http://",      "http://h/a b" };
	for (size_t i = 0; i < sizeof(bad_ep) / sizeof(bad_ep[0]); i++) {
		struct jf_s3_opts b = { .endpoint = bad_ep[i], .bucket = "b" };
		jf_error_clear(&E);
		if (jf_s3_new(&b, &s, &E) != JF_EINVAL)
			fail_msg("endpoint %s accepted", bad_ep[i]);
		assert_null(strstr(E.msg, "pw@"));
	}
	struct jf_s3_opts b = { .endpoint = "http://h", .bucket = "a/b" };
	assert_int_equal(jf_s3_new(&b, &s, &E), JF_EINVAL);
	b.bucket = "ok";
	b.region = "us east";
	assert_int_equal(jf_s3_new(&b, &s, &E), JF_EINVAL);
}

static void test_retry_policy(void **state)
{
	(void)state;
	assert_true(jf_s3_retryable(CURLE_COULDNT_CONNECT, 0));
	assert_true(jf_s3_retryable(CURLE_OPERATION_TIMEDOUT, 0));
	assert_true(jf_s3_retryable(CURLE_RECV_ERROR, 200));
	assert_true(jf_s3_retryable(CURLE_PARTIAL_FILE, 200));
	assert_true(jf_s3_retryable(CURLE_OK, 500));
	assert_true(jf_s3_retryable(CURLE_OK, 503));
	assert_true(jf_s3_retryable(CURLE_OK, 429));
	assert_false(jf_s3_retryable(CURLE_OK, 200));
	assert_false(jf_s3_retryable(CURLE_OK, 400));
	assert_false(jf_s3_retryable(CURLE_OK, 403));
	assert_false(jf_s3_retryable(CURLE_OK, 404));
	assert_false(jf_s3_retryable(CURLE_WRITE_ERROR, 200));
	assert_false(jf_s3_retryable(CURLE_URL_MALFORMAT, 0));
	assert_int_equal(jf_s3_backoff_ms(1, 500), 500);
	assert_int_equal(jf_s3_backoff_ms(2, 500), 1000);
	assert_int_equal(jf_s3_backoff_ms(3, 500), 2000);
	assert_int_equal(jf_s3_backoff_ms(40, 500), 60000);
}

static void test_etag_md5(void **state)
{
	(void)state;
	char e[JF_S3_ETAG_MAX];
	jf_s3_etag_norm(" \"5d41402abc4b2a76b9719d911017c592\"\r\n", 37, e);
	assert_string_equal(e, "5d41402abc4b2a76b9719d911017c592");
	jf_s3_etag_norm("\"a b\x01\"", 6, e);
	assert_string_equal(e, "a?b?");
	assert_true(jf_s3_etag_is_md5("5d41402abc4b2a76b9719d911017c592"));
	assert_true(jf_s3_etag_is_md5("5D41402ABC4B2A76B9719D911017C592"));
	assert_false(jf_s3_etag_is_md5("3858f62230ac3c915f300c664312c11f-9"));
	assert_false(jf_s3_etag_is_md5("5d41402abc4b2a76b9719d911017c59"));
	assert_false(jf_s3_etag_is_md5("5d41402abc4b2a76b9719d911017c59g"));
	assert_false(jf_s3_etag_is_md5(""));
	struct jf_md5 m;
	unsigned char d[16];
	assert_int_equal(jf_md5_init(&m), JF_OK);
	jf_md5_update(&m, "hel", 3);
	jf_md5_update(&m, "lo", 2);
	jf_md5_final(&m, d);
	assert_true(jf_s3_etag_matches("5d41402abc4b2a76b9719d911017c592", d));
	assert_true(jf_s3_etag_matches("5D41402ABC4B2A76B9719D911017C592", d));
	assert_false(jf_s3_etag_matches("5d41402abc4b2a76b9719d911017c593", d));
	assert_false(jf_s3_etag_matches("3858f62230ac3c915f300c664312c11f-9", d));
	/* the empty body */
	assert_int_equal(jf_md5_init(&m), JF_OK);
	jf_md5_final(&m, d);
	assert_true(jf_s3_etag_matches("d41d8cd98f00b204e9800998ecf8427e", d));
	jf_md5_release(&m); /* after final: harmless */
}

static void test_dates(void **state)
{
	(void)state;
	int64_t t;
	assert_true(jf_s3_parse_time("1970-01-01T00:00:00Z", &t));
	assert_int_equal(t, 0);
	assert_true(jf_s3_parse_time("2009-10-12T17:50:30.000Z", &t));
	assert_int_equal(t, 1255369830);
	assert_true(jf_s3_parse_time("2026-12-04T21:07:32.805Z", &t));
	assert_int_equal(t, 1796418452);
	const char *bad[] = { "",
			      "2009-10-12",
			      "2009-10-12T17:50:30",
			      "2009-10-12T17:50:30+01:00",
			      "2009-13-12T17:50:30Z",
			      "2009-10-12T25:50:30Z",
			      "2009-10-12T17:50:30.Z",
			      "20x9-10-12T17:50:30Z" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (jf_s3_parse_time(bad[i], &t))
			fail_msg("date [%s] accepted", bad[i]);
}

/* ---- manifests and the merge --------------------------------------------- */

#define HDR JF_MF_MAGIC "\thttp://h\tb\tp/\n"

struct gone_log {
	char keys[16][64];
	int n;
};

static void log_gone(void *ud, const struct jf_mf_entry *e)
{
	struct gone_log *g = ud;
	snprintf(g->keys[g->n++], sizeof(g->keys[0]), "%s", e->key);
}

static void test_merge(void **state)
{
	(void)state;
	const char *old = HDR "p/a\t1\te1\t100\n"
			      "p/b\t2\te2\t100\n"
			      "p/c\t3\te3\t100\n"
			      "p/e\t5\te5\t100\n"
			      "p/g\t7\t-\t100\n";
	struct jf_mf_reader *r;
	assert_int_equal(jf_mf_open_mem(old, strlen(old), &r, &E), JF_OK);
	assert_true(jf_mf_has_header(r));
	assert_string_equal(jf_mf_prefix(r), "p/");
	assert_string_equal(jf_mf_bucket(r), "b");
	assert_string_equal(jf_mf_endpoint(r), "http://h");
	struct gone_log g = { .n = 0 };
	/* a same; b bigger; c gone; d new; e other ETag; f new; g same (no ETag) */
	assert_int_equal(jf_mf_merge(r, "p/a", 3, 1, "e1", 100, log_gone, &g), JF_MF_SAME);
	assert_int_equal(jf_mf_merge(r, "p/b", 3, 3, "e2", 100, log_gone, &g), JF_MF_CHANGED);
	assert_int_equal(jf_mf_merge(r, "p/d", 3, 4, "e4", 100, log_gone, &g), JF_MF_NEW);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.keys[0], "p/c");
	assert_int_equal(jf_mf_merge(r, "p/e", 3, 5, "eX", 100, log_gone, &g), JF_MF_CHANGED);
	assert_int_equal(jf_mf_merge(r, "p/f", 3, 6, "e6", 100, log_gone, &g), JF_MF_NEW);
	assert_int_equal(jf_mf_merge(r, "p/g", 3, 7, "", 100, log_gone, &g), JF_MF_SAME);
	jf_mf_merge_rest(r, log_gone, &g);
	assert_int_equal(g.n, 1);
	assert_int_equal(jf_mf_damaged(r), 0);
	jf_mf_close(r);

	/* a new mtime alone is a change; everything after the listing is gone */
	assert_int_equal(jf_mf_open_mem(old, strlen(old), &r, &E), JF_OK);
	g.n = 0;
	assert_int_equal(jf_mf_merge(r, "p/a", 3, 1, "e1", 101, log_gone, &g), JF_MF_CHANGED);
	jf_mf_merge_rest(r, log_gone, &g);
	assert_int_equal(g.n, 4);
	assert_string_equal(g.keys[3], "p/g");
	jf_mf_close(r);

	/* a key before everything; an empty old manifest; no header */
	assert_int_equal(jf_mf_open_mem(old, strlen(old), &r, &E), JF_OK);
	g.n = 0;
	assert_int_equal(jf_mf_merge(r, "p/0", 3, 1, "e", 1, log_gone, &g), JF_MF_NEW);
	assert_int_equal(g.n, 0);
	jf_mf_close(r);
	assert_int_equal(jf_mf_open_mem("", 0, &r, &E), JF_OK);
	assert_false(jf_mf_has_header(r));
	assert_null(jf_mf_peek(r));
	assert_int_equal(jf_mf_merge(r, "p/a", 3, 1, "e", 1, NULL, NULL), JF_MF_NEW);
	jf_mf_close(r);
}

static void test_manifest_damaged(void **state)
{
	(void)state;
	struct jf_mf_reader *r;
	/* out of order at line 4: the reader stops there */
	const char *t = HDR "p/a\t1\te\t1\np/c\t1\te\t1\np/b\t1\te\t1\np/d\t1\te\t1\n";
	assert_int_equal(jf_mf_open_mem(t, strlen(t), &r, &E), JF_OK);
	int n = 0;
	for (; jf_mf_peek(r); jf_mf_next(r))
		n++;
	assert_int_equal(n, 2);
	assert_int_equal(jf_mf_damaged(r), 4);
	jf_mf_close(r);
	const char *bad[] = { HDR "p/a\tx\te\t1\n",        HDR "p/a\t1\te\n",
			      HDR "p/a\t1\te\t1\textra\n", HDR "\t1\te\t1\n",
			      HDR "p/a\t-5\te\t1\n",       "garbage header\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(jf_mf_open_mem(bad[i], strlen(bad[i]), &r, &E), JF_OK);
		assert_null(jf_mf_peek(r));
		assert_true(jf_mf_damaged(r) > 0);
		jf_mf_close(r);
	}
}

static void test_manifest_roundtrip(void **state)
{
	(void)state;
	char dir[512], path[600];
	jft_mkdtemp(dir, sizeof(dir), jft_tmp_base(), "jf-mf");
	snprintf(path, sizeof(path), "%s/m", dir);
	struct jf_mf_writer *w;
	assert_int_equal(jf_mf_create(path, "http://h:1", "bkt", "", &w, &E), JF_OK);
	assert_int_equal(jf_mf_write(w, "a b", 3, 0, "", 5, &E), JF_OK);
	assert_int_equal(jf_mf_write(w, "caf\xc3\xa9", 5, 1LL << 40, "abc-2", -1, &E), JF_OK);
	assert_int_equal(jf_mf_errno(w), 0);
	assert_int_equal(jf_mf_finish(w, true, NULL, &E), JF_OK);
	struct jf_mf_reader *r;
	assert_int_equal(jf_mf_open(path, &r, &E), JF_OK);
	assert_string_equal(jf_mf_prefix(r), "");
	const struct jf_mf_entry *e = jf_mf_peek(r);
	assert_string_equal(e->key, "a b");
	assert_string_equal(e->etag, "");
	assert_int_equal(e->mtime, 5);
	jf_mf_next(r);
	e = jf_mf_peek(r);
	assert_string_equal(e->key, "caf\xc3\xa9");
	assert_int_equal(e->size, 1LL << 40);
	assert_string_equal(e->etag, "abc-2");
	assert_int_equal(e->mtime, -1);
	jf_mf_next(r);
	assert_null(jf_mf_peek(r));
	jf_mf_close(r);
	/* a missing file is an empty manifest */
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(jf_mf_open(path, &r, &E), JF_OK);
	assert_null(jf_mf_peek(r));
	jf_mf_close(r);
	jft_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_creds_default),
		cmocka_unit_test(test_creds_profiles_comments),
		cmocka_unit_test(test_creds_errors),
		cmocka_unit_test(test_creds_huge),
		cmocka_unit_test(test_keys_prefix),
		cmocka_unit_test(test_keys_classify),
		cmocka_unit_test(test_keys_order),
		cmocka_unit_test(test_list_rgw),
		cmocka_unit_test(test_list_aws),
		cmocka_unit_test(test_list_bytewise),
		cmocka_unit_test(test_list_bad),
		cmocka_unit_test(test_error_messages),
		cmocka_unit_test(test_encode_urls),
		cmocka_unit_test(test_retry_policy),
		cmocka_unit_test(test_etag_md5),
		cmocka_unit_test(test_dates),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_manifest_damaged),
		cmocka_unit_test(test_manifest_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
