/*
 * test_mountrec.c - the mount record and the dead-mount watchdog's parts
 * (fs/mountrec.h): mountinfo lines, /proc/PID/stat lines, the record's
 * text, absolute mount paths, and the watchdog on a real state directory
 * with nothing mounted (it must do nothing and touch nothing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs/mountrec.h"

static const char mountinfo[] =
	"21 26 0:20 / /proc rw,relatime - proc proc rw\n"
	"26 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n"
	"44 26 0:39 / /tmp/a/mnt rw,nosuid,nodev,relatime - fuse.jobfs jobfs rw,user_id=0\n"
	"50 26 0:45 / /tmp/with\\040space/mnt rw shared:7 master:2 - fuse.jobfs jobfs rw\n"
	"51 44 0:46 / /tmp/a/mnt rw,relatime - fuse.jobfs jobfs rw,user_id=1000\n"
	"52 26 8:3 / /srv rw - ext4 /dev/sda3 rw\n"
	"53 26 0:47 / /tmp/a/mntx rw - tmpfs tmpfs rw"; /* no final newline */

static void test_mountinfo_find(void **state)
{
	(void)state;
	struct jf_mountinfo mi;
	/* stacked: the last line at a mount point is the one on top */
	assert_true(jf_mountinfo_find(mountinfo, "/tmp/a/mnt", &mi));
	assert_int_equal(mi.conn, 46);
	assert_string_equal(mi.fstype, "fuse.jobfs");
	assert_string_equal(mi.source, "jobfs");
	/* octal escapes and optional fields before the separator */
	assert_true(jf_mountinfo_find(mountinfo, "/tmp/with space/mnt", &mi));
	assert_int_equal(mi.conn, 45);
	assert_string_equal(mi.fstype, "fuse.jobfs");
	/* a device with a major number: the kernel's dev_t, major << 20 | minor */
	assert_true(jf_mountinfo_find(mountinfo, "/srv", &mi));
	assert_int_equal(mi.conn, (8u << 20) | 3u);
	assert_string_equal(mi.fstype, "ext4");
	/* a last line without a newline; a prefix is not a match */
	assert_true(jf_mountinfo_find(mountinfo, "/tmp/a/mntx", &mi));
	assert_string_equal(mi.fstype, "tmpfs");
	assert_false(jf_mountinfo_find(mountinfo, "/tmp/a", &mi));
	assert_false(jf_mountinfo_find(mountinfo, "/tmp/with\\040space/mnt", &mi));
	assert_false(jf_mountinfo_find("", "/", &mi));
	/* malformed lines are passed over, never read past */
	assert_false(jf_mountinfo_find("44 26\n", "/tmp/a/mnt", &mi));
	assert_false(jf_mountinfo_find("44 26 0:39 / /x rw no-separator\n", "/x", &mi));
	assert_false(jf_mountinfo_find("44 26 zz / /x rw - fuse f rw\n", "/x", &mi));
	assert_true(jf_mountinfo_find("44 26 0:39 / /x rw - fuse\n", "/x", &mi));
	assert_string_equal(mi.source, "");
}

static void test_proc_stat_parse(void **state)
{
	(void)state;
	char st;
	unsigned long long start;
	const char *line = "4173 (jobfs) Z 1 4173 4173 0 -1 4227332 100 0 0 0 1 2 0 0 20 0 2 0 "
			   "66234 0 0 18446744073709551615\n";
	assert_true(jf_proc_stat_parse(line, &st, &start));
	assert_int_equal(st, 'Z');
	assert_int_equal(start, 66234);
	/* a command name with spaces and parentheses */
	const char *odd = "12 (a) b (c)) S 1 12 12 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0";
	assert_true(jf_proc_stat_parse(odd, &st, &start));
	assert_int_equal(st, 'S');
	assert_int_equal(start, 777);
	assert_false(jf_proc_stat_parse("12 (x) S 1 2 3", &st, &start));
	assert_false(jf_proc_stat_parse("no parenthesis", &st, &start));
	assert_false(jf_proc_stat_parse("1 (x)", &st, &start));
	assert_false(jf_proc_stat_parse("1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12ab 0", &st,
					&start));
}

static void test_record_parse(void **state)
{
	(void)state;
	struct jf_mountrec r;
	assert_true(jf_mountrec_parse("pid 42\nstart 99\nconnection 39\nmountpoint /m nt\n", &r));
	assert_int_equal(r.pid, 42);
	assert_int_equal(r.start, 99);
	assert_int_equal(r.conn, 39);
	assert_string_equal(r.mnt, "/m nt");
	/* any field missing or wrong: not a record */
	assert_false(jf_mountrec_parse("pid 42\nstart 99\nconnection 39\n", &r));
	assert_false(jf_mountrec_parse("pid 42\nstart 99\nmountpoint /m\n", &r));
	assert_false(jf_mountrec_parse("pid x\nstart 99\nconnection 39\nmountpoint /m\n", &r));
	assert_false(jf_mountrec_parse("pid 0\nstart 99\nconnection 39\nmountpoint /m\n", &r));
	assert_false(jf_mountrec_parse("pid 4\nstart 99\nconnection 0\nmountpoint /m\n", &r));
	assert_false(jf_mountrec_parse("pid 4\nstart 9\nconnection 3\nmountpoint rel\n", &r));
	assert_false(jf_mountrec_parse("", &r));
	/* a mount point longer than a path may be is refused, not cut */
	char big[5000];
	int n = snprintf(big, sizeof(big), "pid 1\nstart 1\nconnection 1\nmountpoint /");
	memset(big + n, 'a', sizeof(big) - (size_t)n - 2);
	big[sizeof(big) - 2] = '\n';
	big[sizeof(big) - 1] = '\0';
	assert_false(jf_mountrec_parse(big, &r));
}

static char tmpdir[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_mountrec.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_abspath(void **state)
{
	(void)state;
	char real[PATH_MAX], out[PATH_MAX], want[PATH_MAX + 8], mnt[PATH_MAX + 8];
	assert_non_null(realpath(tmpdir, real));
	/* the mount point need not exist: it is never looked at */
	snprintf(mnt, sizeof(mnt), "%s/mnt//", tmpdir);
	assert_int_equal(jf_mount_abspath(mnt, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/mnt", real);
	assert_string_equal(out, want);
	/* relative to the working directory */
	char cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(tmpdir), 0);
	assert_int_equal(jf_mount_abspath("m", out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/m", real);
	assert_string_equal(out, want);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(jf_mount_abspath("/m", out, sizeof(out)), 0);
	assert_string_equal(out, "/m");
	assert_int_equal(jf_mount_abspath("/", out, sizeof(out)), 0);
	assert_string_equal(out, "/");
	/* a parent that does not exist is an error, as is a result too long */
	assert_int_equal(jf_mount_abspath("/no/such/dir/m", out, sizeof(out)), -1);
	assert_int_equal(jf_mount_abspath("/tmp/m", out, 4), -1);
	assert_int_equal(jf_mount_abspath("", out, sizeof(out)), -1);
}

static int said;
static void count_say(const char *line)
{
	(void)line;
	said++;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_clear_dead_nothing_mounted(void **state)
{
	(void)state;
	char mnt[PATH_MAX + 8], rec[PATH_MAX + 16], msg[1024];
	snprintf(mnt, sizeof(mnt), "%s/mnt", tmpdir);
	mkdir(mnt, 0755);
	said = 0;
	/* no record, nothing mounted */
	assert_int_equal(jf_mount_clear_dead(tmpdir, mnt, count_say, msg, sizeof(msg)), 0);
	assert_int_equal(said, 0);
	assert_string_equal(msg, "");
	/* a record of a dead daemon whose mount is gone: nothing to do */
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	snprintf(rec, sizeof(rec), "%s/%s", tmpdir, JF_MOUNTREC_NAME);
	char text[PATH_MAX + 100];
	snprintf(text, sizeof(text), "pid %d\nstart 1\nconnection 39\nmountpoint %s\n", (int)pid,
		 mnt);
	write_file(rec, text);
	assert_int_equal(jf_mount_clear_dead(tmpdir, mnt, count_say, msg, sizeof(msg)), 0);
	assert_int_equal(said, 0);
	/* a record naming a mount point that is mounted, but not by FUSE (the
	 * root filesystem): never aborted, never detached */
	snprintf(text, sizeof(text), "pid %d\nstart 1\nconnection 39\nmountpoint /\n", (int)pid);
	write_file(rec, text);
	assert_int_equal(jf_mount_clear_dead(tmpdir, "/", count_say, msg, sizeof(msg)), 0);
	assert_int_equal(said, 0);
	/* garbage in the record: ignored */
	write_file(rec, "pid what\n");
	assert_int_equal(jf_mount_clear_dead(tmpdir, mnt, count_say, msg, sizeof(msg)), 0);
	assert_int_equal(said, 0);
	jf_mountrec_remove(tmpdir);
	struct stat sb;
	assert_int_equal(stat(rec, &sb), -1);
}

static void test_record_write_needs_a_mount(void **state)
{
	(void)state;
	char mnt[PATH_MAX + 16], rec[PATH_MAX + 16];
	snprintf(mnt, sizeof(mnt), "%s/not-mounted", tmpdir);
	/* nothing mounted there: no record (it would name no connection) */
	assert_int_equal(jf_mountrec_write(tmpdir, mnt), -1);
	snprintf(rec, sizeof(rec), "%s/%s", tmpdir, JF_MOUNTREC_NAME);
	struct stat sb;
	assert_int_equal(stat(rec, &sb), -1);
	/* "/" is mounted: the record names this process and reads back */
	assert_int_equal(jf_mountrec_write(tmpdir, "/"), 0);
	FILE *f = fopen(rec, "r");
	assert_non_null(f);
	char text[8192];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	struct jf_mountrec r;
	assert_true(jf_mountrec_parse(text, &r));
	assert_int_equal(r.pid, getpid());
	assert_string_equal(r.mnt, "/");
	assert_true(r.start > 0);
	/* its own record never counts as a dead daemon's */
	char msg[256];
	said = 0;
	assert_int_equal(jf_mount_clear_dead(tmpdir, "/", count_say, msg, sizeof(msg)), 0);
	assert_int_equal(said, 0);
	jf_mountrec_remove(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mountinfo_find),
		cmocka_unit_test(test_proc_stat_parse),
		cmocka_unit_test(test_record_parse),
		cmocka_unit_test_setup_teardown(test_abspath, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clear_dead_nothing_mounted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_record_write_needs_a_mount, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
