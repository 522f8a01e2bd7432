/*
 * test_jobfsctl.c - jobfsctl's pure helpers (tools/ctl_fmt.c): status.json
 * parsing, state exit codes, the progress bar, times and ages, tables, the
 * mount point from /proc/self/mounts, and PATH resolution.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ctl_fmt.h"

static void test_status_parse(void **state)
{
	struct jc_status st;
	(void)state;
	assert_int_equal(
		jc_status_parse(&st, "{\"state\": \"Running\", \"name\": \"g\","
				     " \"progress\": \"37/100\", \"running\": 10,"
				     " \"cost\": \"0.07 CNY\", \"cost_micro\": 70000,"
				     " \"cost_rate\": \"4.00 CNY/h\", \"reason\": \"Parallelism\","
				     " \"exit_code\": \"\", \"attempt\": 2, \"nodes\": 4}"),
		0);
	assert_string_equal(st.state, "Running");
	assert_string_equal(st.name, "g");
	assert_int_equal(st.done, 37);
	assert_int_equal(st.total, 100);
	assert_int_equal(st.running, 10);
	assert_int_equal(st.waiting, -1);
	assert_string_equal(st.cost, "0.07 CNY");
	assert_int_equal(st.cost_micro, 70000);
	assert_string_equal(st.cost_rate, "4.00 CNY/h");
	assert_string_equal(st.reason, "Parallelism");
	assert_int_equal(st.exit_code, -1); /* "" while it runs */
	assert_int_equal(st.attempt, 2);
	assert_int_equal(st.nodes, 4);
	assert_string_equal(st.eta, "");

	/* a task: no progress */
	assert_int_equal(jc_status_parse(&st, "{\"state\": \"Failed\", \"exit_code\": 3}"), 0);
	assert_int_equal(st.done, -1);
	assert_int_equal(st.total, -1);
	assert_int_equal(st.exit_code, 3);

	/* a long message is cut, not overrun */
	{
		char big[2048];
		char *json = malloc(4096);
		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		snprintf(json, 4096, "{\"message\": \"%s\"}", big);
		assert_int_equal(jc_status_parse(&st, json), 0);
		assert_int_equal(strlen(st.message), sizeof(st.message) - 1);
		free(json);
	}

	assert_int_equal(jc_status_parse(&st, "not json"), -1);
	assert_int_equal(jc_status_parse(&st, "[1, 2]"), -1);
	assert_int_equal(jc_status_parse(&st, ""), -1);
	assert_int_equal(jc_status_parse(&st, NULL), -1);
}

static void test_state_exit(void **state)
{
	(void)state;
	assert_int_equal(jc_state_exit("Succeeded"), 0);
	assert_int_equal(jc_state_exit("Invalid"), 1);
	assert_int_equal(jc_state_exit("Failed"), 2);
	assert_int_equal(jc_state_exit("Stopped"), 3);
	assert_int_equal(jc_state_exit("Running"), -1);
	assert_int_equal(jc_state_exit("Waiting"), -1);
	assert_int_equal(jc_state_exit("Paused"), -1);
	assert_int_equal(jc_state_exit(""), -1);
	assert_int_equal(jc_state_exit(NULL), -1);
}

static void test_bar(void **state)
{
	char b[64];
	(void)state;
	jc_bar(b, sizeof(b), 0, 10, 12);
	assert_string_equal(b, "[..........]");
	jc_bar(b, sizeof(b), 5, 10, 12);
	assert_string_equal(b, "[#####.....]");
	jc_bar(b, sizeof(b), 10, 10, 12);
	assert_string_equal(b, "[##########]");
	jc_bar(b, sizeof(b), 1, 3, 12); /* rounds down: full only when done */
	assert_string_equal(b, "[###.......]");
	jc_bar(b, sizeof(b), 999, 1000, 12);
	assert_string_equal(b, "[#########.]");
	jc_bar(b, sizeof(b), 12, 10, 12); /* more than total: full */
	assert_string_equal(b, "[##########]");
	jc_bar(b, sizeof(b), 3, 0, 6); /* no total: empty */
	assert_string_equal(b, "[....]");
	jc_bar(b, sizeof(b), 3, -1, 6);
	assert_string_equal(b, "[....]");
	jc_bar(b, 8, 1, 2, 12); /* does not fit: nothing */
	assert_string_equal(b, "");
	jc_bar(b, sizeof(b), 1, 2, 2); /* no room inside */
	assert_string_equal(b, "");
}

static void test_time(void **state)
{
	char b[32];
	(void)state;
	assert_int_equal(jc_parse_time("1970-01-01T00:00:00Z"), 0);
	assert_int_equal(jc_parse_time("2026-12-05T00:56:23Z"), 1796432183);
	assert_int_equal(jc_parse_time(""), -1);
	assert_int_equal(jc_parse_time(NULL), -1);
	assert_int_equal(jc_parse_time("2026-12-05 00:56:23"), -1);
	assert_int_equal(jc_parse_time("2026-12-05T00:56:23+01:00"), -1);

	jc_duration(b, sizeof(b), 0);
	assert_string_equal(b, "0s");
	jc_duration(b, sizeof(b), 59);
	assert_string_equal(b, "59s");
	jc_duration(b, sizeof(b), 192);
	assert_string_equal(b, "3m12s");
	jc_duration(b, sizeof(b), 2 * 3600 + 5 * 60 + 9);
	assert_string_equal(b, "2h05m");
	jc_duration(b, sizeof(b), 3 * 86400 + 4 * 3600 + 59);
	assert_string_equal(b, "3d04h");
	jc_duration(b, sizeof(b), -1);
	assert_string_equal(b, "-");
	jc_duration(b, 3, 3600); /* cut to fit */
	assert_string_equal(b, "1h");

	jc_age(b, sizeof(b), "2026-12-05T00:56:23Z", 1796432183 + 75);
	assert_string_equal(b, "1m15s");
	jc_age(b, sizeof(b), "2026-12-05T00:56:23Z", 1796432183 - 5); /* a clock behind */
	assert_string_equal(b, "0s");
	jc_age(b, sizeof(b), "", 1796432183);
	assert_string_equal(b, "-");

	jc_eta(b, sizeof(b), 1000 + 3700, 1000);
	assert_string_equal(b, "1h01m");
	jc_eta(b, sizeof(b), 1000, 1000);
	assert_string_equal(b, "now");
	jc_eta(b, sizeof(b), 900, 1000);
	assert_string_equal(b, "now");

	/* a status's ETA cell: its eta, else eta_finish; "-" when finished
	 * or when it has neither */
	struct jc_status st;
	memset(&st, 0, sizeof(st));
	int64_t t0 = jc_parse_time("2026-12-05T00:00:00Z");
	snprintf(st.state, sizeof(st.state), "Waiting");
	jc_status_eta(b, sizeof(b), &st, t0);
	assert_string_equal(b, "-");
	snprintf(st.eta_finish, sizeof(st.eta_finish), "2026-12-05T00:02:05Z");
	jc_status_eta(b, sizeof(b), &st, t0);
	assert_string_equal(b, "2m05s");
	snprintf(st.eta, sizeof(st.eta), "2026-12-05T01:01:00Z");
	jc_status_eta(b, sizeof(b), &st, t0);
	assert_string_equal(b, "1h01m");
	snprintf(st.state, sizeof(st.state), "Succeeded");
	jc_status_eta(b, sizeof(b), &st, t0);
	assert_string_equal(b, "-");
}

static void test_mount_find(void **state)
{
	char m[256], all[256];
	(void)state;
	assert_int_equal(jc_mount_find("proc /proc proc rw 0 0\n"
				       "jobfs /mnt/jobs fuse.jobfs rw,nosuid 0 0\n"
				       "tmpfs /tmp tmpfs rw 0 0\n",
				       m, sizeof(m), all, sizeof(all)),
			 1);
	assert_string_equal(m, "/mnt/jobs");
	assert_string_equal(all, "/mnt/jobs");
	/* two: the count says so, the first is given, and both named */
	assert_int_equal(jc_mount_find("jobfs /a fuse.jobfs rw 0 0\n"
				       "tmpfs /tmp tmpfs rw 0 0\n"
				       "jobfs /b fuse.jobfs rw 0 0",
				       m, sizeof(m), all, sizeof(all)),
			 2);
	assert_string_equal(m, "/a");
	assert_string_equal(all, "/a, /b");
	/* too many for the buffer: cut, still terminated */
	assert_int_equal(jc_mount_find("jobfs /aaaa fuse.jobfs rw 0 0\n"
				       "jobfs /bbbb fuse.jobfs rw 0 0\n",
				       m, sizeof(m), all, 8),
			 2);
	assert_string_equal(all, "/aaaa, ");
	/* a space in the mount point, escaped by the kernel */
	assert_int_equal(
		jc_mount_find("jobfs /my\\040jobs fuse.jobfs rw 0 0\n", m, sizeof(m), NULL, 0), 1);
	assert_string_equal(m, "/my jobs");
	/* the source name alone (another subtype), and other FUSE mounts */
	assert_int_equal(jc_mount_find("jobfs /x fuse rw 0 0\n"
				       "sshfs#h: /y fuse.sshfs rw 0 0\n",
				       m, sizeof(m), NULL, 0),
			 1);
	assert_string_equal(m, "/x");
	assert_int_equal(jc_mount_find("tmpfs /tmp tmpfs rw 0 0\n", m, sizeof(m), all, sizeof(all)),
			 0);
	assert_string_equal(m, "");
	assert_string_equal(all, "");
	assert_int_equal(jc_mount_find("", m, sizeof(m), NULL, 0), 0);
	assert_int_equal(jc_mount_find("garbage\n\n", m, sizeof(m), NULL, 0), 0);
}

static void test_mount_is(void **state)
{
	static const char mounts[] = "proc /proc proc rw 0 0\n"
				     "jobfs /mnt/jobs fuse.jobfs rw,nosuid 0 0\n"
				     "jobfs /my\\040jobs fuse.jobfs rw 0 0\n"
				     "sshfs#h: /y fuse.sshfs rw 0 0\n";
	(void)state;
	assert_true(jc_mount_is(mounts, "/mnt/jobs"));
	assert_true(jc_mount_is(mounts, "/my jobs"));
	/* not a mount point: inside one, a prefix of one, another file system */
	assert_false(jc_mount_is(mounts, "/mnt/jobs/queues"));
	assert_false(jc_mount_is(mounts, "/mnt"));
	assert_false(jc_mount_is(mounts, "/mnt/job"));
	assert_false(jc_mount_is(mounts, "/y"));
	assert_false(jc_mount_is(mounts, "/proc"));
	assert_false(jc_mount_is("", "/mnt/jobs"));
}

static void test_path_resolve(void **state)
{
	char p[64];
	(void)state;
	assert_int_equal(jc_path_resolve("/mnt", "queues/q/groups/g", p, sizeof(p)), 0);
	assert_string_equal(p, "/mnt/queues/q/groups/g");
	assert_int_equal(jc_path_resolve("/mnt", "/mnt/queues/q/", p, sizeof(p)), 0);
	assert_string_equal(p, "/mnt/queues/q");
	assert_int_equal(jc_path_resolve("/mnt/", "./queues", p, sizeof(p)), 0);
	assert_string_equal(p, "/mnt/queues");
	assert_int_equal(jc_path_resolve("/mnt", "", p, sizeof(p)), 0);
	assert_string_equal(p, "/mnt");
	assert_int_equal(jc_path_resolve("/mnt", ".", p, sizeof(p)), 0);
	assert_string_equal(p, "/mnt");
	assert_int_equal(jc_path_resolve("/mnt", "/mnt", p, sizeof(p)), 0);
	assert_string_equal(p, "/mnt");
	/* not under the mount: /mntx is another directory */
	assert_int_equal(jc_path_resolve("/mnt", "/mntx/queues", p, sizeof(p)), -1);
	assert_int_equal(jc_path_resolve("/mnt", "/etc/passwd", p, sizeof(p)), -1);
	/* too long for the buffer */
	assert_int_equal(
		jc_path_resolve("/mnt",
				"queues/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", p,
				sizeof(p)),
		-1);
}

static void test_table(void **state)
{
	static const char *const hdr[] = { "NAME", "STATE", "COST" };
	static const char *const r1[] = { "queues/q/groups/long-name", "Running", "0.07 CNY" };
	static const char *const r2[] = { "q", NULL, "" };
	struct jc_table *t = jc_table_new(3, hdr);
	char *text;
	(void)state;
	assert_non_null(t);
	assert_int_equal(jc_table_add(t, r1), 0);
	assert_int_equal(jc_table_add(t, r2), 0);
	text = jc_table_render(t);
	assert_string_equal(text, "NAME                       STATE    COST\n"
				  "queues/q/groups/long-name  Running  0.07 CNY\n"
				  "q\n");
	free(text);
	jc_table_free(t);
	jc_table_free(NULL);

	/* many rows: the table grows */
	t = jc_table_new(3, hdr);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(jc_table_add(t, r1), 0);
	text = jc_table_render(t);
	assert_int_equal(strlen(text),
			 strlen("NAME                       STATE    COST\n") +
				 1000 * strlen("queues/q/groups/long-name  Running  0.07 CNY\n"));
	free(text);
	jc_table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_parse), cmocka_unit_test(test_state_exit),
		cmocka_unit_test(test_bar),          cmocka_unit_test(test_time),
		cmocka_unit_test(test_mount_find),   cmocka_unit_test(test_mount_is),
		cmocka_unit_test(test_path_resolve), cmocka_unit_test(test_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
