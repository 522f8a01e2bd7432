/*
 * test_slurm_rest.c - the slurmrestd client (backends/slurm/rest.c).
 *
 * Three parts:
 *   - recorded answers: tests/unit/data/slurm/ holds real answers of
 *     slurmrestd 22.05.8 (see its README); the parsers and the verdict on
 *     each are checked against them;
 *   - a fake slurmrestd: a thread in this program serving canned answers on
 *     a unix socket or loopback TCP, for what a real one will not do on
 *     demand: time out, hang up, send 70 MiB or garbage, refuse a JWT;
 *     it also records each request, so the headers and the JWT probe are
 *     checked;
 *   - live: against the slurmrestd named by JOBFS_SLURM_URL ("unix:/path")
 *     and, when JOBFS_SLURM_JWT_URL and SLURM_JWT are set, the JWT one.
 *     Without JOBFS_SLURM_URL these call skip().  Every job they submit is
 *     cancelled at the end (the group teardown).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "backends/slurm/rest.h"

#define DATA      JF_SOURCE_DIR "/tests/unit/data/slurm/"
#define TOKEN_BUF 20000

/* ---- helpers ------------------------------------------------------------ */

static char *slurp(const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof(path), DATA "%s", name);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return s;
}

static void parse_file(const char *name, struct jf_slurm_job **jobs, size_t *n)
{
	size_t len;
	char *body = slurp(name, &len);
	struct jf_error err;
	jf_error_clear(&err);
	if (jf_slurm_jobs_parse(body, len, jobs, n, &err) != JF_OK)
		fail_msg("%s: %s", name, err.msg);
	free(body);
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- recorded answers: records ------------------------------------------ */

static void test_parse_array_pending(void **state)
{
	struct jf_slurm_job *j;
	size_t n;

	(void)state;
	parse_file("job_array_pending.json", &j, &n);
	assert_int_equal(n, 3);
	/* the meta record of the pending part */
	assert_int_equal(j[0].job_id, 6);
	assert_int_equal(j[0].array_job_id, 6);
	assert_int_equal(j[0].array_task_id, -1);
	assert_string_equal(j[0].array_task_string, "2-5%2");
	assert_int_equal(j[0].array_max_tasks, 2);
	assert_string_equal(j[0].state, "PENDING");
	assert_string_equal(j[0].reason, "JobArrayTaskLimit");
	assert_int_equal(j[0].start_time, 0);
	assert_string_equal(j[0].nodes, "");
	assert_string_equal(j[0].batch_host, "");
	assert_int_equal(j[0].time_limit, 0); /* null: none */
	/* two running elements, the newest first */
	assert_int_equal(j[1].job_id, 8);
	assert_int_equal(j[1].array_task_id, 1);
	assert_string_equal(j[1].array_task_string, "");
	assert_string_equal(j[1].state, "RUNNING");
	assert_string_equal(j[1].nodes, "n3");
	assert_string_equal(j[1].batch_host, "n3");
	assert_int_equal(j[1].start_time, 1796147649);
	assert_int_equal(j[1].end_time, 1827683649); /* expected: start + time limit */
	assert_int_equal(j[1].time_limit, 525600);
	assert_int_equal(j[2].array_task_id, 0);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(j[i].name, "fx-array");
		assert_string_equal(j[i].partition, "ondemand");
		assert_string_equal(j[i].std_out, "/dev/null");
		assert_string_equal(j[i].comment, "");
		assert_int_equal(j[i].user_id, 0);
		assert_true(j[i].requeue);
		assert_int_equal(j[i].submit_time, 1796147649);
	}
	jf_slurm_jobs_free(j, n);

	parse_file("job_array_element_running.json", &j, &n);
	assert_int_equal(n, 1);
	assert_int_equal(j[0].job_id, 7);
	assert_int_equal(j[0].array_job_id, 6);
	assert_int_equal(j[0].array_task_id, 0);
	assert_string_equal(j[0].state, "RUNNING");
	jf_slurm_jobs_free(j, n);

	/* GPUs: one gres_detail entry per node, in the order of `nodes` */
	parse_file("job_gpu_gang_running.json", &j, &n);
	assert_int_equal(n, 1);
	assert_string_equal(j[0].nodes, "n[1-2]");
	assert_int_equal(j[0].ngres_detail, 2);
	assert_string_equal(j[0].gres_detail[0], "gpu:4090:2(IDX:0-1)");
	assert_string_equal(j[0].gres_detail[1], "gpu:4090:2(IDX:0-1)");
	jf_slurm_jobs_free(j, n);
	parse_file("job_gpu_running.json", &j, &n);
	assert_int_equal(n, 1);
	assert_string_equal(j[0].nodes, "n1");
	assert_int_equal(j[0].ngres_detail, 1);
	assert_string_equal(j[0].gres_detail[0], "gpu:4090:2(IDX:3-4)");
	jf_slurm_jobs_free(j, n);
	/* none for a job without GPUs, or one still pending */
	parse_file("job_array_pending.json", &j, &n);
	assert_int_equal(j[0].ngres_detail, 0);
	assert_null(j[0].gres_detail);
	jf_slurm_jobs_free(j, n);
}

static void test_parse_ended(void **state)
{
	static const struct {
		const char *file;
		int64_t id;
		const char *state, *reason;
		int exit_code, exit_signal;
		const char *comment;
	} c[] = {
		{ "job_completed.json", 1, "COMPLETED", "None", 0, 0, "" },
		{ "job_failed.json", 2, "FAILED", "NonZeroExitCode", 3, 0, "" },    /* 768 */
		{ "job_signaled.json", 3, "FAILED", "JobLaunchFailure", 0, 9, "" }, /* kill -9 $$ */
		{ "job_cancelled.json", 5, "CANCELLED", "None", 0, 15, "" },
		{ "job_timeout.json", 4, "TIMEOUT", "TimeLimit", 0, 15, "hello" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct jf_slurm_job *j;
		size_t n;
		parse_file(c[i].file, &j, &n);
		assert_int_equal(n, 1);
		assert_int_equal(j[0].job_id, c[i].id);
		assert_int_equal(j[0].array_job_id, 0);
		assert_int_equal(j[0].array_task_id, -1);
		assert_string_equal(j[0].state, c[i].state);
		assert_string_equal(j[0].reason, c[i].reason);
		assert_int_equal(j[0].exit_code, c[i].exit_code);
		assert_int_equal(j[0].exit_signal, c[i].exit_signal);
		assert_string_equal(j[0].comment, c[i].comment);
		assert_true(j[0].start_time > 0);
		assert_true(j[0].end_time >= j[0].start_time);
		jf_slurm_jobs_free(j, n);
	}
	struct jf_slurm_job *j;
	size_t n;
	parse_file("job_timeout.json", &j, &n);
	assert_int_equal(j[0].time_limit, 1);
	assert_int_equal(j[0].end_time - j[0].start_time, 76);
	jf_slurm_jobs_free(j, n);
}

static void test_parse_preempted(void **state)
{
	struct jf_slurm_job *j;
	size_t n;

	(void)state;
	/* spot job during its grace time: still RUNNING, preempt_time set */
	parse_file("job_preempted_grace.json", &j, &n);
	assert_string_equal(j[0].state, "RUNNING");
	assert_int_equal(j[0].preempt_time, 1796147748);
	assert_int_equal(j[0].restart_cnt, 0);
	assert_string_equal(j[0].nodes, "n[1-4]");
	assert_string_equal(j[0].batch_host, "n1");
	assert_string_equal(j[0].partition, "spot");
	jf_slurm_jobs_free(j, n);
	/* requeued: PENDING again, one restart, the preemption forgotten; the
	 * start is Slurm's estimate and the end nonsense (infinite limit) */
	parse_file("job_requeued_pending.json", &j, &n);
	assert_int_equal(j[0].job_id, 11);
	assert_string_equal(j[0].state, "PENDING");
	assert_string_equal(j[0].reason, "BeginTime");
	assert_int_equal(j[0].restart_cnt, 1);
	assert_int_equal(j[0].preempt_time, 0);
	assert_int_equal(j[0].exit_code, 0);
	assert_string_equal(j[0].nodes, "");
	assert_int_equal(j[0].time_limit, 0);
	jf_slurm_jobs_free(j, n);
}

static void test_parse_array_cancelled_and_all(void **state)
{
	struct jf_slurm_job *j;
	size_t n;

	(void)state;
	parse_file("job_array_cancelled.json", &j, &n);
	assert_int_equal(n, 5);
	/* the meta record ends CANCELLED, still naming what never ran */
	assert_int_equal(j[0].array_task_id, -1);
	assert_string_equal(j[0].state, "CANCELLED");
	assert_string_equal(j[0].array_task_string, "4-5%3");
	assert_int_equal(j[0].array_max_tasks, 3);
	assert_string_equal(j[0].comment, "c1");
	/* a pending element held and split off by an update, then cancelled */
	assert_int_equal(j[1].array_task_id, 3);
	assert_string_equal(j[1].reason, "JobHeldAdmin");
	assert_int_equal(j[1].exit_signal, 0);
	assert_int_equal(j[2].exit_signal, 15);
	jf_slurm_jobs_free(j, n);

	parse_file("jobs_all.json", &j, &n);
	assert_int_equal(n, 14);
	size_t running = 0, elements = 0;
	for (size_t i = 0; i < n; i++) {
		running += !strcmp(j[i].state, "RUNNING");
		elements += j[i].array_task_id >= 0;
	}
	assert_int_equal(running, 2);
	assert_int_equal(elements, 4);
	jf_slurm_jobs_free(j, n);
}

static void test_parse_nodes(void **state)
{
	struct jf_slurm_node *d;
	size_t n, len;
	struct jf_error err;
	char *body = slurp("nodes_gpu_drain.json", &len);

	(void)state;
	assert_int_equal(jf_slurm_nodes_parse(body, len, &d, &n, &err), JF_OK);
	free(body);
	assert_int_equal(n, 4);
	assert_string_equal(d[0].name, "n1");
	assert_string_equal(d[0].state, "mixed");
	assert_int_equal(d[0].cpus, 8);
	assert_int_equal(d[0].alloc_cpus, 1);
	assert_int_equal(d[0].real_memory_mb, 16000);
	assert_int_equal(d[0].alloc_memory_mb, 1000);
	assert_int_equal(d[0].free_memory_mb, 21139);
	assert_string_equal(d[0].gres, "gpu:4090:8");
	assert_string_equal(d[0].gres_used, "gpu:4090:2(IDX:0-1)");
	assert_string_equal(d[0].partitions, "ondemand,spot");
	assert_string_equal(d[0].reason, "");
	assert_string_equal(d[1].state, "idle");
	assert_string_equal(d[3].state, "idle+drain");
	assert_string_equal(d[3].reason, "fx test drain");
	char model[16];
	assert_int_equal(jf_slurm_gres_gpus(d[0].gres_used, model, sizeof(model)), 2);
	assert_string_equal(model, "4090");
	jf_slurm_nodes_free(d, n);

	body = slurp("nodes.json", &len);
	assert_int_equal(jf_slurm_nodes_parse(body, len, &d, &n, &err), JF_OK);
	free(body);
	assert_int_equal(n, 4);
	assert_string_equal(d[3].state, "idle");
	assert_int_equal(d[0].alloc_memory_mb, 16000); /* no mem asked: the whole node */
	jf_slurm_nodes_free(d, n);
	jf_slurm_nodes_free(NULL, 0);
	jf_slurm_jobs_free(NULL, 0);
}

static void test_parse_defaults_and_caps(void **state)
{
	struct jf_slurm_job *j;
	size_t n;
	struct jf_error err;
	const char *s;

	(void)state;
	s = "{\"jobs\":[{\"job_id\":5}]}";
	assert_int_equal(jf_slurm_jobs_parse(s, strlen(s), &j, &n, &err), JF_OK);
	assert_int_equal(n, 1);
	assert_int_equal(j[0].array_task_id, -1);
	assert_string_equal(j[0].state, "");
	assert_string_equal(j[0].nodes, "");
	assert_string_equal(j[0].name, "");
	assert_string_equal(j[0].std_out, "");
	assert_false(j[0].requeue);
	jf_slurm_jobs_free(j, n);

	/* NO_VAL and INFINITE are "none"; a wrong type is "missing" */
	s = "{\"jobs\":[{\"job_id\":5,\"exit_code\":4294967294,\"time_limit\":4294967295,"
	    "\"array_job_id\":5,\"array_task_id\":4294967294,\"nodes\":7,"
	    "\"job_state\":\"A_STATE_NAME_FAR_LONGER_THAN_THIRTY_ONE\","
	    "\"state_reason\":\""
	    "01234567890123456789012345678901234567890123456789012345678901"
	    "\xc3\xa9\"}]}";
	assert_int_equal(jf_slurm_jobs_parse(s, strlen(s), &j, &n, &err), JF_OK);
	assert_int_equal(j[0].exit_code, 0);
	assert_int_equal(j[0].time_limit, 0);
	assert_int_equal(j[0].array_task_id, -1);
	assert_string_equal(j[0].nodes, "");
	assert_int_equal(strlen(j[0].state), 31);
	/* 62 ASCII bytes and a 2-byte character that does not fit whole */
	assert_int_equal(strlen(j[0].reason), 62);
	assert_string_equal(j[0].reason + 60, "01");
	jf_slurm_jobs_free(j, n);

	/* refusals */
	static const struct {
		const char *body, *msg;
	} bad[] = {
		{ "{\"jobs\":[{\"job_id\":5},{\"name\":\"x\"}]}", "job record 1 has no job_id" },
		{ "{\"jobs\":[{\"job_id\":0}]}", "job record 0 has no job_id" },
		{ "{\"jobs\":[7]}", "job record 0 has no job_id" },
		{ "{\"jobz\":[]}", "no \"jobs\" list" },
		{ "[]", "no \"jobs\" list" },
		{ "{\"jobs\":[", "not JSON: line 1 column 9" },
		{ "", "empty" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = (struct jf_slurm_job *)1;
		n = 9;
		jf_error_clear(&err);
		assert_int_equal(
			jf_slurm_jobs_parse(bad[i].body, strlen(bad[i].body), &j, &n, &err),
			JF_EIO);
		assert_null(j);
		assert_int_equal(n, 0);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("'%s': '%s' lacks '%s'", bad[i].body, err.msg, bad[i].msg);
	}
	char host[400];
	snprintf(host, sizeof(host), "{\"jobs\":[{\"job_id\":1,\"batch_host\":\"%0256d\"}]}", 0);
	assert_int_equal(jf_slurm_jobs_parse(host, strlen(host), &j, &n, &err), JF_EIO);
	assert_non_null(strstr(err.msg, "batch_host longer than 255"));

	struct jf_slurm_node *d;
	s = "{\"nodes\":[{\"name\":\"a\"}]}";
	assert_int_equal(jf_slurm_nodes_parse(s, strlen(s), &d, &n, &err), JF_OK);
	assert_string_equal(d[0].state, "");
	assert_string_equal(d[0].partitions, "");
	assert_int_equal(d[0].free_memory_mb, -1);
	jf_slurm_nodes_free(d, n);
	s = "{\"nodes\":[{\"name\":\"a\",\"state\":\"DOWN\",\"state_flags\":[\"NOT_RESPONDING\","
	    "3,\"DRAIN\"],\"partitions\":\"p\",\"free_memory\":4294967294}]}";
	assert_int_equal(jf_slurm_nodes_parse(s, strlen(s), &d, &n, &err), JF_OK);
	assert_string_equal(d[0].state, "down+not_responding+drain");
	assert_string_equal(d[0].partitions, "p");
	assert_int_equal(d[0].free_memory_mb, -1);
	jf_slurm_nodes_free(d, n);
	s = "{\"nodes\":[{\"state\":\"idle\"}]}";
	assert_int_equal(jf_slurm_nodes_parse(s, strlen(s), &d, &n, &err), JF_EIO);
	assert_non_null(strstr(err.msg, "node record 0 has no name"));
	assert_null(d);
}

static void test_gres(void **state)
{
	static const struct {
		const char *gres;
		int n;
		const char *model;
	} c[] = {
		{ "gpu:4090:8", 8, "4090" },
		{ "gpu:4090:8(S:0)", 8, "4090" },
		{ "gpu:4090:8(S:0-1)", 8, "4090" },
		{ "gpu:8", 8, "" },
		{ "gpu", 1, "" },
		{ "gpu:a100", 1, "a100" },
		{ "gpu:a:2,gpu:b:4", 2, "a" },
		{ "craynetwork:1,gpu:2", 2, "" },
		{ "gpu:4090:2(IDX:0,2),gpu:h100:1", 2, "4090" },
		{ "gpu:4090:0(IDX:N/A)", 0, "4090" },
		{ "mps:100,gpu:tesla:3", 3, "tesla" },
		{ "", -1, "" },
		{ "(null)", -1, "" },
		{ "mps:100", -1, "" },
		{ "gpux:2", -1, "" },
		{ "gpu:4090:x", -1, "" },
		{ "gpu:a:b:c", -1, "" },
	};
	char model[16];

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		strcpy(model, "junk");
		int n = jf_slurm_gres_gpus(c[i].gres, model, sizeof(model));
		if (n != c[i].n || strcmp(model, c[i].model) != 0)
			fail_msg("'%s': %d '%s', want %d '%s'", c[i].gres, n, model, c[i].n,
				 c[i].model);
	}
	assert_int_equal(jf_slurm_gres_gpus(NULL, model, sizeof(model)), -1);
	assert_int_equal(jf_slurm_gres_gpus("gpu:4", NULL, 0), 4);
	char small[3];
	assert_int_equal(jf_slurm_gres_gpus("gpu:a100:2", small, sizeof(small)), 2);
	assert_string_equal(small, "a1");
}

/* ---- recorded answers: verdicts ----------------------------------------- */

static void test_verdicts(void **state)
{
	static const struct {
		const char *file;
		long status;
		enum jf_err code;
		int num;
		const char *msg; /* a fragment, or the whole message when it starts with '=' */
	} c[] = {
		{ "ping_ok.json", 200, JF_OK, 0, "" },
		{ "cancel_done.json", 200, JF_OK, 0, "" },
		{ "update_array_quirk.json", 200, JF_OK, 0, "" }, /* not an error */
		{ "jobs_304.http", 304, JF_OK, 0, "" },
		{ "submit_held.json", 200, JF_EINVAL, 2042, "held state" }, /* submit: OK */
		{ "err_job_not_found.json", 500, JF_ENOENT, 2017,
		  "=Slurm has no job for the request: Unable to find JobId=999999: Invalid job id "
		  "specified (error 2017)" },
		{ "err_job_elem_not_found.json", 400, JF_ENOENT, 9002,
		  "Unable to find JobId=6_77" },
		{ "err_job_bad_id.json", 400, JF_ENOENT, 9002, "JobId=abc" },
		{ "err_cancel_not_found.json", 500, JF_ENOENT, 2017,
		  "unable to kill JobId=999999" },
		{ "err_update_not_found.json", 500, JF_ENOENT, 2017, "Invalid job id" },
		{ "err_submit_node_config.json", 500, JF_EINVAL, 2014,
		  "=Slurm refused the request: Requested node configuration is not available "
		  "(error 2014)" },
		{ "err_submit_bad_partition.json", 500, JF_EINVAL, 2000, "Invalid partition name" },
		{ "err_submit_no_env.json", 400, JF_EINVAL, 2127,
		  "environment must be set; Failure during parsing (error 2127)" },
		{ "err_submit_unknown_key.json", 400, JF_EINVAL, 9001,
		  "=Slurm refused the request: Unknown key \"bogus\"; Failure during parsing "
		  "(error 9001)" },
		{ "err_update_time_limit.json", 200, JF_EINVAL, 9001,
		  "Invalid time specification; Unable to process key" },
		{ "err_update_time_bad.json", 400, JF_EINVAL, 0,
		  "=slurmrestd refused the request (HTTP 400)" },
		{ "err_signal_bad_name.json", 400, JF_EINVAL, 9000, "invalid signal: 0" },
		{ "err_signal_pending.json", 500, JF_EBUSY, 2020, "Job can not be altered now" },
		{ "err_submit_not_json.txt", 400, JF_EINVAL, 0,
		  "=slurmrestd refused the request (HTTP 400: \"Unable to parse query.\")" },
		{ "err_unknown_path.txt", 404, JF_EINVAL, 0, "Unable find requested URL" },
		{ "jwt_missing.txt", 401, JF_EACCES, 0,
		  "=slurmrestd refused the credentials (HTTP 401: \"Authentication failure\")" },
		/* the unix-socket reading of what a rejected JWT brings (over http
		 * rest.c asks once more; see test_fake_jwt_probe) */
		{ "jwt_bad_ping.json", 500, JF_EIO, -1, "slurmctld config is unable to load" },
		{ "jwt_bad_jobs.json", 500, JF_EIO, -1, "Failed while looking for jobs" },
		{ "jwt_bad_job.json", 500, JF_EIO, -1, "Unspecified error" },
		{ "jwt_bad_nodes.json", 500, JF_EIO, -1, "Unspecified error" },
		{ "jwt_bad_submit.json", 500, JF_EIO, 5005, "Zero Bytes" },
		{ "jwt_bad_cancel.json", 500, JF_EIO, 5005, "Zero Bytes" },
		{ "jwt_bad_update.json", 500, JF_EIO, 1000, "Unexpected message received" },
		{ "jwt_expired_ping.json", 500, JF_EIO, -1, "" },
		{ "jwt_otherkey_ping.json", 500, JF_EIO, -1, "" },
		/* slurmctld stopped */
		{ "ctld_down_ping.json", 500, JF_EIO, -1,
		  "=slurmctld unreachable (Slurm error -1: slurmctld config is unable to load: "
		  "Unspecified error)" },
		{ "ctld_down_jobs.json", 500, JF_EIO, -1, "Failed while looking for jobs" },
		{ "ctld_down_job.json", 500, JF_EIO, -1, "Unable to find JobId=1" },
		{ "ctld_down_nodes.json", 500, JF_EIO, -1, "" },
		{ "ctld_down_submit.json", 500, JF_EIO, 1800,
		  "=slurmctld unreachable (Slurm error 1800: Unable to contact slurm controller "
		  "(connect failure))" },
		{ "ctld_down_cancel.json", 500, JF_EIO, 1800, "connect failure" },
		{ "ctld_down_update.json", 500, JF_EIO, 1000, "Unexpected message" },
		{ "jwt_down_ping.json", 500, JF_EIO, -1, "" },
		/* the probe's three answers */
		{ "probe_ok.json", 500, JF_ENOENT, 2017, "JobId=0" },
		{ "probe_bad_jwt.json", 500, JF_EIO, 5005, "" },
		{ "probe_down.json", 500, JF_EIO, 1800, "" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		size_t len;
		char *body = slurp(c[i].file, &len);
		if (!strcmp(c[i].file, "jobs_304.http"))
			len = 0; /* headers only: curl hands over no body */
		struct jf_error err;
		int num = 77;
		jf_error_clear(&err);
		enum jf_err rc = jf_slurm_answer_check(c[i].status, body, len, NULL, &num, &err);
		free(body);
		if (rc != c[i].code || num != c[i].num)
			fail_msg("%s: %s (%d) errno %d, want %s (%d): %s", c[i].file,
				 jf_err_name(rc), rc, num, jf_err_name(c[i].code), c[i].num,
				 err.msg);
		if (c[i].msg[0] == '=' ? strcmp(err.msg, c[i].msg + 1) != 0
				       : !strstr(err.msg, c[i].msg))
			fail_msg("%s: message '%s', want '%s'", c[i].file, err.msg, c[i].msg);
	}

	/* what names the request */
	struct jf_error err;
	const char *refused = "{\"errors\":[{\"error_code\":2014,\"error\":\"Requested node "
			      "configuration is not available\"}]}";
	assert_int_equal(jf_slurm_answer_check(500, refused, strlen(refused), "job", NULL, &err),
			 JF_EINVAL);
	assert_string_equal(err.msg, "Slurm refused the job: Requested node configuration is not "
				     "available (error 2014)");
	/* no JSON, 5xx or not */
	assert_int_equal(
		jf_slurm_answer_check(502, "<html>bad gateway</html>", 24, NULL, NULL, &err),
		JF_EIO);
	assert_string_equal(err.msg, "slurmrestd answered HTTP 502: \"<html>bad gateway</html>\"");
	assert_int_equal(jf_slurm_answer_check(200, "{\"jobs\": [", 10, NULL, NULL, &err), JF_EIO);
	assert_non_null(strstr(err.msg, "not JSON: line 1 column 10"));
	assert_int_equal(jf_slurm_answer_check(200, "[1]", 3, NULL, NULL, &err), JF_EIO);
	assert_int_equal(jf_slurm_answer_check(200, "", 0, NULL, NULL, &err), JF_EIO);
	assert_int_equal(jf_slurm_answer_check(503, "{\"errors\":[]}", 13, NULL, NULL, &err),
			 JF_EIO);
	assert_int_equal(jf_slurm_answer_check(403, "no", 2, NULL, NULL, &err), JF_EACCES);
	/* access errors among others win */
	const char *mix = "{\"errors\":[{\"error_number\":-1},{\"error_number\":2002,"
			  "\"error\":\"Access/permission denied\"}]}";
	assert_int_equal(jf_slurm_answer_check(500, mix, strlen(mix), NULL, NULL, &err), JF_EACCES);
	/* a control character from outside never reaches the message raw */
	const char *nl = "{\"errors\":[{\"error_number\":2000,\"error\":\"a\\nb\"}]}";
	assert_int_equal(jf_slurm_answer_check(500, nl, strlen(nl), NULL, NULL, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "a\\nb"));
}

/* ---- a fake slurmrestd -------------------------------------------------- */

enum fake_mode {
	FK_ANSWER,      /* status + body, then close */
	FK_SILENT,      /* read the request, never answer */
	FK_HANGUP,      /* read the request, close */
	FK_HUGE_LEN,    /* announce 70 MiB */
	FK_HUGE_STREAM, /* send 64 MiB + 1 without a length */
};

#define FAKE_MAX 4

struct fake {
	int lfd, stop[2];
	bool unix_socket;
	char url[160], path[108];
	struct {
		enum fake_mode mode;
		long status;
		char *body; /* heap */
		size_t len;
	} resp[FAKE_MAX];
	size_t nresp;
	char *req[FAKE_MAX]; /* what came: head and body */
	size_t nreq;
	pthread_t th;
};

static void fake_add(struct fake *f, enum fake_mode mode, long status, const char *file)
{
	assert_true(f->nresp < FAKE_MAX);
	f->resp[f->nresp].mode = mode;
	f->resp[f->nresp].status = status;
	f->resp[f->nresp].body = file ? slurp(file, &f->resp[f->nresp].len) : strdup("");
	f->nresp++;
}

static void fake_add_text(struct fake *f, long status, const char *body)
{
	assert_true(f->nresp < FAKE_MAX);
	f->resp[f->nresp].mode = FK_ANSWER;
	f->resp[f->nresp].status = status;
	f->resp[f->nresp].body = strdup(body);
	f->resp[f->nresp].len = strlen(body);
	f->nresp++;
}

/* wait for fd readable, false when told to stop */
static bool fake_wait(struct fake *f, int fd)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
			       { .fd = f->stop[0], .events = POLLIN } };
	while (poll(p, 2, -1) < 0)
		if (errno != EINTR)
			return false;
	return !(p[1].revents & POLLIN);
}

static void send_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

static char *fake_read_request(struct fake *f, int fd)
{
	size_t cap = 1 << 20, len = 0, want = 0;
	char *buf = malloc(cap + 1);
	if (!buf)
		return NULL;
	for (;;) {
		if (!fake_wait(f, fd))
			break;
		ssize_t k = recv(fd, buf + len, cap - len, 0);
		if (k <= 0)
			break;
		len += (size_t)k;
		buf[len] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		if (!want) {
			char *cl = strcasestr(buf, "\r\nContent-Length:");
			want = (size_t)(end + 4 - buf) +
			       (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
		}
		if (len >= want || len == cap)
			break;
	}
	buf[len] = '\0';
	return buf;
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	for (size_t i = 0; i < f->nresp; i++) {
		if (!fake_wait(f, f->lfd))
			break;
		int fd = accept(f->lfd, NULL, NULL);
		if (fd < 0)
			break;
		f->req[f->nreq++] = fake_read_request(f, fd);
		char head[256];
		int hl;
		switch (f->resp[i].mode) {
		case FK_ANSWER:
			if (f->resp[i].status == 304)
				hl = snprintf(
					head, sizeof(head),
					"HTTP/1.1 304 NOT MODIFIED\r\nConnection: close\r\n\r\n");
			else
				hl = snprintf(head, sizeof(head),
					      "HTTP/1.1 %ld X\r\nContent-Type: application/json\r\n"
					      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
					      f->resp[i].status, f->resp[i].len);
			send_all(fd, head, (size_t)hl);
			send_all(fd, f->resp[i].body, f->resp[i].len);
			break;
		case FK_SILENT: {
			char c;
			while (fake_wait(f, fd) && recv(fd, &c, 1, 0) > 0)
				;
			break;
		}
		case FK_HANGUP:
			break;
		case FK_HUGE_LEN:
			hl = snprintf(head, sizeof(head),
				      "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: "
				      "close\r\n\r\n{",
				      70 << 20);
			send_all(fd, head, (size_t)hl);
			break;
		case FK_HUGE_STREAM: {
			static char chunk[1 << 16];
			memset(chunk, ' ', sizeof(chunk));
			hl = snprintf(head, sizeof(head),
				      "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
			send_all(fd, head, (size_t)hl);
			for (size_t sent = 0; sent <= JF_SLURM_BODY_MAX; sent += sizeof(chunk)) {
				ssize_t k = send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL);
				if (k <= 0)
					break;
			}
			break;
		}
		}
		close(fd);
	}
	return NULL;
}

static void fake_start(struct fake *f, bool unix_socket)
{
	assert_int_equal(pipe(f->stop), 0);
	f->unix_socket = unix_socket;
	if (unix_socket) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		snprintf(f->path, sizeof(f->path), "/tmp/jf-test-rest-%d.sock", (int)getpid());
		unlink(f->path);
		strcpy(a.sun_path, f->path);
		f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(f->lfd >= 0);
		assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
		snprintf(f->url, sizeof(f->url), "unix:%s", f->path);
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t al = sizeof(a);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(f->lfd >= 0);
		assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&a, &al), 0);
		snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d/", ntohs(a.sin_port));
	}
	assert_int_equal(listen(f->lfd, 8), 0);
	assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

/* a JWT that decodes (the signature is junk: only the fake accepts it) */
static void make_jwt(char *buf, size_t n, const char *claims)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t len = strlen(claims), k = 0;
	char enc[256];
	assert_true(len < 180);
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)claims[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)(unsigned char)claims[i + 1] << 8;
		if (i + 2 < len)
			v |= (unsigned char)claims[i + 2];
		enc[k++] = tbl[(v >> 18) & 63];
		enc[k++] = tbl[(v >> 12) & 63];
		if (i + 1 < len)
			enc[k++] = tbl[(v >> 6) & 63];
		if (i + 2 < len)
			enc[k++] = tbl[v & 63];
	}
	enc[k] = '\0';
	/* {"alg":"HS256","typ":"JWT"} */
	snprintf(buf, n, "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.%s.c2ln", enc);
}

static struct jf_slurm_rest *fake_client(struct fake *f, const char *token, const char *user,
					 long timeout_ms)
{
	struct jf_slurm_rest_opts o = {
		.url = f->url, .token = token, .user = user, .timeout_ms = timeout_ms
	};
	struct jf_slurm_rest *r = NULL;
	struct jf_error err;
	jf_error_clear(&err);
	if (jf_slurm_rest_new(&o, &r, &err) != JF_OK)
		fail_msg("rest_new %s: %s", f->url, err.msg);
	return r;
}


/* join the fake's thread (its records are then safe to read) */
static void fake_join(struct fake *f)
{
	assert_int_equal(write(f->stop[1], "x", 1), 1);
	pthread_join(f->th, NULL);
}

static void fake_free(struct fake *f)
{
	close(f->lfd);
	close(f->stop[0]);
	close(f->stop[1]);
	if (f->unix_socket)
		unlink(f->path);
	for (size_t i = 0; i < f->nresp; i++)
		free(f->resp[i].body);
	for (size_t i = 0; i < f->nreq; i++)
		free(f->req[i]);
	memset(f, 0, sizeof(*f));
}

static void assert_req(struct fake *f, size_t i, const char *fragment, bool present)
{
	if (i >= f->nreq)
		fail_msg("request %zu never came (%zu did)", i, f->nreq);
	if ((strstr(f->req[i], fragment) != NULL) != present)
		fail_msg("request %zu %s '%s':\n%s", i, present ? "lacks" : "has", fragment,
			 f->req[i]);
}

static void test_fake_unix_requests(void **state)
{
	struct fake f = { 0 };
	struct jf_error err;
	struct jf_slurm_job *jobs;
	size_t n;
	bool unchanged = false;
	int64_t id = 0;

	(void)state;
	fake_add(&f, FK_ANSWER, 200, "job_array_pending.json");
	fake_add(&f, FK_ANSWER, 304, NULL);
	fake_add(&f, FK_ANSWER, 200, "submit_held.json");
	fake_add(&f, FK_ANSWER, 200, "cancel_done.json");
	fake_start(&f, true);
	struct jf_slurm_rest *r = fake_client(&f, NULL, "ignored", 5000);
	json_t *body =
		json_pack("{s:s, s:{s:s, s:b, s:{s:s}}}", "script", "#!/bin/sh\ntrue\n", "job",
			  "partition", "ondemand", "hold", 1, "environment", "A", "1");

	jf_error_clear(&err);
	assert_int_equal(jf_slurm_job_get(r, "bob", "6", &jobs, &n, &err), JF_OK);
	assert_int_equal(n, 3);
	jf_slurm_jobs_free(jobs, n);
	assert_int_equal(jf_slurm_jobs_all(r, NULL, 1796147700, &jobs, &n, &unchanged, &err),
			 JF_OK);
	assert_true(unchanged);
	assert_int_equal(n, 0);
	assert_null(jobs);
	/* queued held: error 2042 comes with the job id, and is no error */
	assert_int_equal(jf_slurm_submit(r, NULL, body, &id, &err), JF_OK);
	assert_int_equal(id, 824);
	assert_int_equal(jf_slurm_job_signal(r, NULL, "824", 15, &err), JF_OK);
	fake_join(&f);

	assert_req(&f, 0, "GET /slurm/v0.0.38/job/6 HTTP/1.1\r\n", true);
	assert_req(&f, 0, "Accept: application/json\r\n", true);
	assert_req(&f, 0, "X-SLURM-USER", false); /* local auth: no headers */
	assert_req(&f, 1, "GET /slurm/v0.0.38/jobs?update_time=1796147700 HTTP/1.1", true);
	assert_req(&f, 2, "POST /slurm/v0.0.38/job/submit HTTP/1.1", true);
	assert_req(&f, 2, "Content-Type: application/json\r\n", true);
	assert_req(&f, 2, "Expect:", false);
	assert_req(&f, 2, "\"script\":\"#!/bin/sh\\ntrue\\n\"", true);
	assert_req(&f, 3, "DELETE /slurm/v0.0.38/job/824?signal=15 HTTP/1.1", true);
	json_decref(body);
	jf_slurm_rest_free(r);
	fake_free(&f);
}

static void test_fake_submit_2015(void **state)
{
	struct fake f = { 0 };
	struct jf_error err;
	int64_t id = -1;

	(void)state;
	json_t *body =
		json_pack("{s:s, s:{s:s}}", "script", "#!/bin/sh\ntrue\n", "job", "nodes", "99");
	/* queued with 2015: cancelled, a refusal */
	fake_add(&f, FK_ANSWER, 200, "submit_part_config_queued.json");
	fake_add(&f, FK_ANSWER, 200, "cancel_done.json");
	fake_start(&f, true);
	struct jf_slurm_rest *r = fake_client(&f, NULL, NULL, 5000);
	jf_error_clear(&err);
	assert_int_equal(jf_slurm_submit(r, NULL, body, &id, &err), JF_EINVAL);
	assert_int_equal(id, 0);
	assert_string_equal(err.msg, "Slurm refused the job: Requested partition configuration not "
				     "available now (error 2015); it had queued it as job 15, now "
				     "cancelled");
	fake_join(&f);
	assert_req(&f, 1, "DELETE /slurm/v0.0.38/job/15 HTTP/1.1", true);
	jf_slurm_rest_free(r);
	fake_free(&f);

	/* and the cancel fails: the job is the caller's to cancel later */
	fake_add(&f, FK_ANSWER, 200, "submit_part_config_queued.json");
	fake_add(&f, FK_ANSWER, 500, "ctld_down_cancel.json");
	fake_start(&f, true);
	r = fake_client(&f, NULL, NULL, 5000);
	assert_int_equal(jf_slurm_submit(r, NULL, body, &id, &err), JF_EIO);
	assert_int_equal(id, 15);
	assert_non_null(strstr(err.msg, "Slurm queued job 15 that can never start"));
	assert_non_null(strstr(err.msg, "cancelling it failed: slurmctld unreachable"));
	fake_join(&f);
	jf_slurm_rest_free(r);
	fake_free(&f);

	/* refused outright */
	fake_add(&f, FK_ANSWER, 500, "err_submit_node_config.json");
	fake_start(&f, true);
	r = fake_client(&f, NULL, NULL, 5000);
	assert_int_equal(jf_slurm_submit(r, NULL, body, &id, &err), JF_EINVAL);
	assert_int_equal(id, 0);
	assert_string_equal(err.msg,
			    "Slurm refused the job: Requested node configuration is not available "
			    "(error 2014)");
	fake_join(&f);
	jf_slurm_rest_free(r);
	fake_free(&f);
	json_decref(body);
}

static void test_fake_update_throttle(void **state)
{
	struct fake f = { 0 };
	struct jf_error err;
	struct jf_slurm_rest *r;
	json_t *p;

	(void)state;
	/* the quirk's answer, then the read-back shows the throttle */
	fake_add(&f, FK_ANSWER, 200, "update_array_quirk.json");
	fake_add(&f, FK_ANSWER, 200, "job_array_pending.json");
	fake_start(&f, true);
	r = fake_client(&f, NULL, NULL, 5000);
	p = json_pack("{s:s}", "array", "2");
	jf_error_clear(&err);
	if (jf_slurm_job_update(r, NULL, "6", p, &err) != JF_OK)
		fail_msg("%s", err.msg);
	json_decref(p);
	fake_join(&f);
	assert_req(&f, 0, "POST /slurm/v0.0.38/job/6 HTTP/1.1", true);
	assert_req(&f, 0, "{\"array\":\"2\"}", true);
	assert_req(&f, 1, "GET /slurm/v0.0.38/job/6 HTTP/1.1", true);
	jf_slurm_rest_free(r);
	fake_free(&f);

	/* the same answer, but Slurm did not apply it */
	fake_add(&f, FK_ANSWER, 200, "update_array_quirk.json");
	fake_add(&f, FK_ANSWER, 200, "job_array_pending.json");
	fake_start(&f, true);
	r = fake_client(&f, NULL, NULL, 5000);
	p = json_pack("{s:i}", "array", 3);
	assert_int_equal(jf_slurm_job_update(r, NULL, "6", p, &err), JF_EINVAL);
	assert_string_equal(err.msg, "Slurm did not apply the throttle 3 to job 6 (it is 2); give "
				     "the array's master job id");
	json_decref(p);
	fake_join(&f);
	jf_slurm_rest_free(r);
	fake_free(&f);

	/* a plain job takes the throttle silently */
	fake_add(&f, FK_ANSWER, 200, "cancel_done.json");
	fake_add(&f, FK_ANSWER, 200, "job_completed.json");
	fake_start(&f, true);
	r = fake_client(&f, NULL, NULL, 5000);
	p = json_pack("{s:s}", "array", "4");
	assert_int_equal(jf_slurm_job_update(r, NULL, "1", p, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "it is not a job array"));
	json_decref(p);
	fake_join(&f);
	jf_slurm_rest_free(r);
	fake_free(&f);

	/* other updates: the quirk is success, a parse failure (HTTP 200) not */
	fake_add(&f, FK_ANSWER, 200, "update_array_quirk.json");
	fake_add(&f, FK_ANSWER, 200, "err_update_time_limit.json");
	fake_add(&f, FK_ANSWER, 500, "err_update_not_found.json");
	fake_start(&f, true);
	r = fake_client(&f, NULL, NULL, 5000);
	p = json_pack("{s:b}", "hold", 1);
	assert_int_equal(jf_slurm_job_update(r, NULL, "6", p, &err), JF_OK);
	json_decref(p);
	p = json_pack("{s:s}", "time_limit", "abc");
	assert_int_equal(jf_slurm_job_update(r, NULL, "6", p, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "Slurm refused the update of job 6: Invalid time"));
	json_decref(p);
	p = json_pack("{s:b}", "hold", 1);
	assert_int_equal(jf_slurm_job_update(r, NULL, "999999", p, &err), JF_ENOENT);
	json_decref(p);
	fake_join(&f);
	assert_int_equal(f.nreq, 3); /* no read-back without "array" */
	jf_slurm_rest_free(r);
	fake_free(&f);
}

static void test_fake_jwt_headers(void **state)
{
	struct fake f = { 0 };
	struct jf_error err;
	struct jf_slurm_job *jobs;
	size_t n;
	char tok[512], hdr[600];

	(void)state;
	make_jwt(tok, sizeof(tok), "{\"exp\":4102444800,\"iat\":1,\"sun\":\"alice\"}");
	fake_add(&f, FK_ANSWER, 200, "ping_ok.json");
	fake_add(&f, FK_ANSWER, 200, "ping_ok.json");
	fake_add(&f, FK_ANSWER, 200, "job_array_element_running.json");
	fake_start(&f, false);
	/* user: the JWT's "sun", then opts.user, then the call's */
	struct jf_slurm_rest *r = fake_client(&f, tok, NULL, 5000);
	jf_error_clear(&err);
	assert_int_equal(jf_slurm_ping(r, &err), JF_OK);
	jf_slurm_rest_free(r);
	r = fake_client(&f, tok, "bob", 5000);
	assert_int_equal(jf_slurm_ping(r, &err), JF_OK);
	assert_int_equal(jf_slurm_job_get(r, "carol", "6_0", &jobs, &n, &err), JF_OK);
	assert_int_equal(n, 1);
	jf_slurm_jobs_free(jobs, n);
	fake_join(&f);
	snprintf(hdr, sizeof(hdr), "X-SLURM-USER-TOKEN: %s\r\n", tok);
	assert_req(&f, 0, "GET /slurm/v0.0.38/ping HTTP/1.1", true);
	assert_req(&f, 0, "X-SLURM-USER-NAME: alice\r\n", true);
	assert_req(&f, 0, hdr, true);
	assert_req(&f, 1, "X-SLURM-USER-NAME: bob\r\n", true);
	assert_req(&f, 2, "GET /slurm/v0.0.38/job/6_0 HTTP/1.1", true);
	assert_req(&f, 2, "X-SLURM-USER-NAME: carol\r\n", true);
	jf_slurm_rest_free(r);
	fake_free(&f);

	/* a token past its "exp" is refused without asking */
	make_jwt(tok, sizeof(tok), "{\"exp\":1000,\"sun\":\"alice\"}");
	fake_start(&f, false);
	r = fake_client(&f, tok, NULL, 5000);
	assert_int_equal(jf_slurm_ping(r, &err), JF_EACCES);
	assert_string_equal(err.msg,
			    "slurmrestd: the JWT expired at 1970-01-01T00:16:40Z; get a new "
			    "one (scontrol token)");
	fake_join(&f);
	assert_int_equal(f.nreq, 0);
	jf_slurm_rest_free(r);
	fake_free(&f);

	/* no user anywhere */
	fake_start(&f, false);
	r = fake_client(&f, "not-a-jwt", NULL, 5000);
	assert_int_equal(jf_slurm_ping(r, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "no user name for X-SLURM-USER-NAME"));
	assert_int_equal(jf_slurm_ping(r, &err), JF_EINVAL);
	fake_join(&f);
	jf_slurm_rest_free(r);
	fake_free(&f);
}

/* one exchange over JWT: answer, then (maybe) the probe's answer */
static enum jf_err jwt_exchange(const char *first, long st1, const char *probe, int call,
				size_t *nreq, struct jf_error *err)
{
	struct fake f = { 0 };
	char tok[512];
	enum jf_err rc = JF_OK;

	make_jwt(tok, sizeof(tok), "{\"exp\":4102444800,\"sun\":\"root\"}");
	fake_add(&f, FK_ANSWER, st1, first);
	if (probe)
		fake_add(&f, FK_ANSWER, 500, probe);
	fake_start(&f, false);
	struct jf_slurm_rest *r = fake_client(&f, tok, NULL, 5000);
	jf_error_clear(err);
	json_t *body = json_pack("{s:s, s:{}}", "script", "x", "job");
	json_t *props = json_pack("{s:b}", "hold", 1);
	int64_t id;
	struct jf_slurm_job *jobs = NULL;
	size_t n = 0;
	switch (call) {
	case 0:
		rc = jf_slurm_ping(r, err);
		break;
	case 1:
		rc = jf_slurm_submit(r, NULL, body, &id, err);
		break;
	case 2:
		rc = jf_slurm_job_update(r, NULL, "1", props, err);
		break;
	case 3:
		rc = jf_slurm_job_get(r, NULL, "1", &jobs, &n, err);
		break;
	}
	jf_slurm_jobs_free(jobs, n);
	json_decref(body);
	json_decref(props);
	fake_join(&f);
	*nreq = f.nreq;
	if (probe && f.nreq == 2 && !strstr(f.req[1], "DELETE /slurm/v0.0.38/job/0?signal=CONT "))
		fail_msg("not the probe: %s", f.req[1]);
	jf_slurm_rest_free(r);
	fake_free(&f);
	return rc;
}

static void test_fake_jwt_probe(void **state)
{
	struct jf_error err;
	size_t nreq;

	(void)state;
	/* slurmctld hangs up on the token: the probe gets 5005 */
	assert_int_equal(
		jwt_exchange("jwt_bad_ping.json", 500, "probe_bad_jwt.json", 0, &nreq, &err),
		JF_EACCES);
	assert_int_equal(nreq, 2);
	assert_string_equal(err.msg,
			    "slurmctld rejected the JWT (it hangs up on the token; first "
			    "answer: slurmctld unreachable (Slurm error -1: slurmctld config "
			    "is unable to load: Unspecified error))");
	assert_int_equal(
		jwt_exchange("jwt_bad_submit.json", 500, "probe_bad_jwt.json", 1, &nreq, &err),
		JF_EACCES);
	assert_int_equal(
		jwt_exchange("jwt_bad_update.json", 500, "probe_bad_jwt.json", 2, &nreq, &err),
		JF_EACCES);
	assert_int_equal(
		jwt_exchange("jwt_bad_job.json", 500, "probe_bad_jwt.json", 3, &nreq, &err),
		JF_EACCES);
	/* slurmctld down: the probe gets 1800, the first answer stands */
	assert_int_equal(
		jwt_exchange("ctld_down_ping.json", 500, "probe_down.json", 0, &nreq, &err),
		JF_EIO);
	assert_int_equal(nreq, 2);
	assert_string_equal(err.msg, "slurmctld unreachable (Slurm error -1: slurmctld config is "
				     "unable to load: Unspecified error)");
	/* slurmctld heard the probe (2017): not the token either */
	assert_int_equal(jwt_exchange("jwt_bad_ping.json", 500, "probe_ok.json", 0, &nreq, &err),
			 JF_EIO);
	/* 1800 is not ambiguous: no probe */
	assert_int_equal(jwt_exchange("ctld_down_submit.json", 500, NULL, 1, &nreq, &err), JF_EIO);
	assert_int_equal(nreq, 1);
	assert_non_null(strstr(err.msg, "Slurm error 1800"));
	/* the probe itself unanswered: EIO */
	assert_int_equal(jwt_exchange("ctld_down_ping.json", 500, NULL, 0, &nreq, &err), JF_EIO);
	assert_int_equal(nreq, 1);
	/* slurmrestd's own 401 */
	assert_int_equal(jwt_exchange("jwt_missing.txt", 401, NULL, 0, &nreq, &err), JF_EACCES);
}

static void test_fake_transport(void **state)
{
	struct fake f = { 0 };
	struct jf_error err;
	struct jf_slurm_rest *r;
	struct jf_slurm_job *jobs;
	size_t n;
	char url[160];

	(void)state;
	/* no socket there: EIO at once */
	snprintf(url, sizeof(url), "unix:/tmp/jf-test-rest-none-%d.sock", (int)getpid());
	struct jf_slurm_rest_opts o = { .url = url };
	assert_int_equal(jf_slurm_rest_new(&o, &r, &err), JF_OK);
	assert_int_equal(jf_slurm_ping(r, &err), JF_EIO);
	char want[256];
	snprintf(want, sizeof(want),
		 "slurmrestd unreachable: connect to /tmp/jf-test-rest-none-%d.sock: No such file "
		 "or directory",
		 (int)getpid());
	assert_string_equal(err.msg, want);
	jf_slurm_rest_free(r);

	/* nothing listening on a TCP port */
	fake_start(&f, false);
	snprintf(url, sizeof(url), "%s", f.url);
	fake_join(&f);
	fake_free(&f); /* closes the port */
	char tok[512];
	make_jwt(tok, sizeof(tok), "{\"sun\":\"root\"}");
	o.url = url;
	o.token = tok;
	assert_int_equal(jf_slurm_rest_new(&o, &r, &err), JF_OK);
	assert_int_equal(jf_slurm_ping(r, &err), JF_EIO);
	assert_non_null(strstr(err.msg, "slurmrestd unreachable: connect to 127.0.0.1:"));
	assert_non_null(strstr(err.msg, "Connection refused"));
	jf_slurm_rest_free(r);

	/* the misbehaviours, one connection each, then a good answer on the
	 * same handle */
	fake_add(&f, FK_SILENT, 0, NULL);
	fake_add(&f, FK_HANGUP, 0, NULL);
	fake_add(&f, FK_HUGE_LEN, 0, NULL);
	fake_add(&f, FK_HUGE_STREAM, 0, NULL);
	fake_start(&f, true);
	r = fake_client(&f, NULL, NULL, 300);
	assert_int_equal(jf_slurm_ping(r, &err), JF_EIO);
	snprintf(want, sizeof(want), "slurmrestd at %s did not answer GET /ping within 300 ms",
		 f.path);
	assert_string_equal(err.msg, want);
	assert_int_equal(jf_slurm_ping(r, &err), JF_EIO);
	assert_non_null(strstr(err.msg, "GET /ping failed: "));
	jf_slurm_rest_free(r);
	r = fake_client(&f, NULL, NULL, 10000);
	assert_int_equal(jf_slurm_jobs_all(r, NULL, 0, &jobs, &n, NULL, &err), JF_EIO);
	assert_string_equal(err.msg, "slurmrestd answer to GET /jobs is larger than 64 MiB");
	assert_int_equal(jf_slurm_jobs_all(r, NULL, 0, &jobs, &n, NULL, &err), JF_EIO);
	assert_string_equal(err.msg, "slurmrestd answer to GET /jobs is larger than 64 MiB");
	assert_null(jobs);
	fake_join(&f);
	fake_free(&f);

	fake_add_text(&f, 502, "<html>bad gateway</html>");
	fake_add_text(&f, 200, "{\"jobs\": [{\"job_id\": 1}, ");
	fake_add_text(&f, 200, "{\"jobs\": [{\"job_id\": 1}, {\"job_state\": \"RUNNING\"}]}");
	fake_add_text(&f, 200, "{\"pings\": [{\"ping\": \"DOWN\"}]}");
	fake_start(&f, true);
	jf_slurm_rest_free(r);
	r = fake_client(&f, NULL, NULL, 5000);
	assert_int_equal(jf_slurm_ping(r, &err), JF_EIO);
	assert_string_equal(err.msg, "slurmrestd answered HTTP 502: \"<html>bad gateway</html>\"");
	assert_int_equal(jf_slurm_jobs_all(r, NULL, 0, &jobs, &n, NULL, &err), JF_EIO);
	assert_non_null(strstr(err.msg, "not JSON: line 1 column"));
	assert_int_equal(jf_slurm_jobs_all(r, NULL, 0, &jobs, &n, NULL, &err), JF_EIO);
	assert_string_equal(err.msg, "slurmrestd answer: job record 1 has no job_id");
	assert_null(jobs);
	assert_int_equal(n, 0);
	assert_int_equal(jf_slurm_ping(r, &err), JF_EIO);
	assert_string_equal(err.msg, "slurmctld unreachable: ping answers \"DOWN\"");
	fake_join(&f);
	fake_free(&f);

	fake_add(&f, FK_ANSWER, 200, "jobs_all.json");
	fake_add(&f, FK_ANSWER, 200, "nodes.json");
	fake_start(&f, true);
	jf_slurm_rest_free(r);
	r = fake_client(&f, NULL, NULL, 5000);
	bool unchanged = true;
	assert_int_equal(jf_slurm_jobs_all(r, NULL, 0, &jobs, &n, &unchanged, &err), JF_OK);
	assert_false(unchanged);
	assert_int_equal(n, 14);
	jf_slurm_jobs_free(jobs, n);
	struct jf_slurm_node *nodes;
	assert_int_equal(jf_slurm_nodes(r, NULL, &nodes, &n, &err), JF_OK);
	assert_int_equal(n, 4);
	jf_slurm_nodes_free(nodes, n);
	fake_join(&f);
	assert_req(&f, 0, "GET /slurm/v0.0.38/jobs HTTP/1.1", true);
	assert_req(&f, 1, "GET /slurm/v0.0.38/nodes HTTP/1.1", true);
	jf_slurm_rest_free(r);
	fake_free(&f);
}

static void test_arguments(void **state)
{
	struct fake f = { 0 };
	struct jf_error err;
	struct jf_slurm_rest *r = (struct jf_slurm_rest *)1;
	char longpath[200];

	(void)state;
	assert_int_equal(jf_slurm_rest_global_init(), JF_OK);
	assert_int_equal(jf_slurm_rest_global_init(), JF_OK);
	memset(longpath, 'a', sizeof(longpath));
	memcpy(longpath, "unix:/", 6);
	longpath[sizeof(longpath) - 1] = '\0';
	static const struct {
		const char *url, *token, *user, *msg;
	} bad[] = {
		{ NULL, NULL, NULL, "no URL" },
		{ "ftp://x", NULL, NULL, "not unix:/path or http://host:port" },
		{ "unix:relative.sock", NULL, NULL, "must be absolute" },
		{ "http://h:1", NULL, NULL, "http needs a JWT" },
		{ "http://", "t", NULL, "is not usable" },
		{ "http://h :1", "t", NULL, "is not usable" },
		{ "http://h:1", "a b", NULL, "characters a header cannot carry" },
		{ "http://h:1", "a\r\nX-Evil: 1", NULL, "characters a header cannot carry" },
		{ "http://h:1", "", NULL, "the JWT is empty" },
		{ "http://h:1", "t", "bob\r\nX: 1", "user name is empty or not a header value" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct jf_slurm_rest_opts o = { .url = bad[i].url,
						.token = bad[i].token,
						.user = bad[i].user };
		jf_error_clear(&err);
		assert_int_equal(jf_slurm_rest_new(&o, &r, &err), JF_EINVAL);
		assert_null(r);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("%s: '%s' lacks '%s'", bad[i].url ? bad[i].url : "NULL", err.msg,
				 bad[i].msg);
	}
	struct jf_slurm_rest_opts lo = { .url = longpath };
	assert_int_equal(jf_slurm_rest_new(&lo, &r, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "socket path longer than 107 bytes"));
	assert_int_equal(jf_slurm_rest_new(NULL, &r, &err), JF_EINVAL);
	jf_slurm_rest_free(NULL);

	/* bad arguments never reach slurmrestd: the fake takes no request */
	fake_start(&f, true);
	r = fake_client(&f, NULL, NULL, 5000);
	static const char *const ids[] = { "",      "12a",  "1_",         "_1", "12345678901",
					   "1_2_3", "../x", "1?signal=9", "1 ", "1_12345678901" };
	struct jf_slurm_job *jobs;
	size_t n;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		assert_int_equal(jf_slurm_job_get(r, NULL, ids[i], &jobs, &n, &err), JF_EINVAL);
		assert_non_null(strstr(err.msg, "is not N or N_I"));
		assert_int_equal(jf_slurm_job_signal(r, NULL, ids[i], 0, &err), JF_EINVAL);
	}
	assert_int_equal(jf_slurm_job_get(r, NULL, NULL, &jobs, &n, &err), JF_EINVAL);
	assert_int_equal(jf_slurm_job_signal(r, NULL, "1", -1, &err), JF_EINVAL);
	assert_int_equal(jf_slurm_job_signal(r, NULL, "1", 64, &err), JF_EINVAL);
	static const char *const throttles[] = { "{\"array\":\"abc\"}",       "{\"array\":-1}",
						 "{\"array\":\"5%\"}",        "{\"array\":2.5}",
						 "{\"array\":\"\"}",          "{\"array\":null}",
						 "{\"array\":\"1234567890\"}" };
	for (size_t i = 0; i < sizeof(throttles) / sizeof(throttles[0]); i++) {
		json_t *p = json_loads(throttles[i], 0, NULL);
		assert_non_null(p);
		assert_int_equal(jf_slurm_job_update(r, NULL, "1", p, &err), JF_EINVAL);
		assert_non_null(strstr(err.msg, "must be a whole number"));
		json_decref(p);
	}
	json_t *arr = json_array();
	int64_t id = 5;
	assert_int_equal(jf_slurm_job_update(r, NULL, "1", arr, &err), JF_EINVAL);
	assert_int_equal(jf_slurm_submit(r, NULL, arr, &id, &err), JF_EINVAL);
	assert_int_equal(id, 0);
	json_decref(arr);
	fake_join(&f);
	assert_int_equal(f.nreq, 0);
	jf_slurm_rest_free(r);
	fake_free(&f);
}

/* ---- live --------------------------------------------------------------- */

#define LIVE_JOBS_MAX 64
static int64_t live_jobs[LIVE_JOBS_MAX];
static size_t nlive_jobs;

static struct jf_slurm_rest *live_rest(void)
{
	const char *url = getenv("JOBFS_SLURM_URL");
	if (!url || !*url)
		skip();
	struct jf_slurm_rest_opts o = { .url = url, .timeout_ms = 20000 };
	struct jf_slurm_rest *r = NULL;
	struct jf_error err;
	if (jf_slurm_rest_new(&o, &r, &err) != JF_OK)
		fail_msg("JOBFS_SLURM_URL=%s: %s", url, err.msg);
	return r;
}

/* {"script": script, "job": {the usual, then extra's members}} */
static json_t *live_body(const char *script, const char *name, const char *extra)
{
	json_t *b =
		json_pack("{s:s, s:{s:s, s:s, s:s, s:s, s:{s:s}}}", "script", script, "job", "name",
			  name, "partition", "ondemand", "current_working_directory", "/tmp",
			  "standard_output", "/dev/null", "environment", "PATH", "/bin:/usr/bin");
	assert_non_null(b);
	if (extra) {
		json_t *x = json_loads(extra, 0, NULL);
		assert_non_null(x);
		assert_int_equal(json_object_update(json_object_get(b, "job"), x), 0);
		json_decref(x);
	}
	return b;
}

static int64_t live_submit(struct jf_slurm_rest *r, const char *script, const char *name,
			   const char *extra)
{
	json_t *b = live_body(script, name, extra);
	struct jf_error err;
	int64_t id = 0;
	jf_error_clear(&err);
	enum jf_err rc = jf_slurm_submit(r, NULL, b, &id, &err);
	json_decref(b);
	if (rc != JF_OK)
		fail_msg("submit %s: %s", name, err.msg);
	assert_true(id > 0);
	if (nlive_jobs < LIVE_JOBS_MAX)
		live_jobs[nlive_jobs++] = id;
	return id;
}

static void live_get(struct jf_slurm_rest *r, const char *id, struct jf_slurm_job **jobs, size_t *n)
{
	struct jf_error err;
	jf_error_clear(&err);
	if (jf_slurm_job_get(r, NULL, id, jobs, n, &err) != JF_OK)
		fail_msg("get %s: %s", id, err.msg);
}

/* wait (at most secs) until job id's first record is in state st */
/* Until Slurm has written the job's completion record (jobcomp/filetxt, in
 * the test cluster's log/jobcomp.txt beside $SLURM_CONF): written once the
 * job's end, state and exit code are all set, so what is read after it is
 * final.  The state alone shows FAILED before the exit code is filled in. */
static void live_wait_completed(int64_t jid, int secs)
{
	const char *conf = getenv("SLURM_CONF");
	if (!conf || !*conf)
		fail_msg("SLURM_CONF is not set: cannot read Slurm's completion records");
	char path[4200], want[64];
	snprintf(path, sizeof(path), "%s", conf);
	char *slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof(path) - (size_t)(slash ? slash + 1 - path : 0),
		 "log/jobcomp.txt");
	snprintf(want, sizeof(want), "JobId=%" PRId64 " ", jid);
	int64_t until = mono_ms() + secs * 1000;
	while (mono_ms() < until) {
		FILE *f = fopen(path, "r");
		char line[4096];
		bool seen = false;
		while (f && !seen && fgets(line, sizeof(line), f))
			seen = strncmp(line, want, strlen(want)) == 0;
		if (f)
			fclose(f);
		if (seen)
			return;
		usleep(200 * 1000);
	}
	fail_msg("job %" PRId64 ": no completion record in %s after %d s", jid, path, secs);
}

static void live_wait_state(struct jf_slurm_rest *r, int64_t jid, const char *st, int secs)
{
	char id[32];
	snprintf(id, sizeof(id), "%" PRId64, jid);
	int64_t until = mono_ms() + secs * 1000;
	char last[32] = "";
	while (mono_ms() < until) {
		struct jf_slurm_job *j;
		size_t n;
		live_get(r, id, &j, &n);
		snprintf(last, sizeof(last), "%s", j[0].state);
		jf_slurm_jobs_free(j, n);
		if (!strcmp(last, st))
			return;
		usleep(200 * 1000);
	}
	fail_msg("job %s: still %s after %d s, want %s", id, last, secs, st);
}

static int live_teardown(void **state)
{
	(void)state;
	const char *url = getenv("JOBFS_SLURM_URL");
	if (!url || !*url || nlive_jobs == 0)
		return 0;
	struct jf_slurm_rest_opts o = { .url = url };
	struct jf_slurm_rest *r;
	struct jf_error err;
	if (jf_slurm_rest_new(&o, &r, &err) != JF_OK)
		return 0;
	for (size_t i = 0; i < nlive_jobs; i++) {
		char id[32];
		snprintf(id, sizeof(id), "%" PRId64, live_jobs[i]);
		enum jf_err rc = jf_slurm_job_signal(r, NULL, id, 0, &err);
		if (rc != JF_OK && rc != JF_ENOENT)
			fprintf(stderr, "slurm: cancel of job %s: %s\n", id, err.msg);
	}
	jf_slurm_rest_free(r);
	nlive_jobs = 0;
	return 0;
}

static void test_live_ping_nodes_jobs(void **state)
{
	struct jf_slurm_rest *r = live_rest();
	struct jf_error err;
	struct jf_slurm_node *nodes;
	struct jf_slurm_job *jobs;
	size_t n;
	bool unchanged = true;

	(void)state;
	jf_error_clear(&err);
	if (jf_slurm_ping(r, &err) != JF_OK)
		fail_msg("ping: %s", err.msg);
	assert_int_equal(jf_slurm_nodes(r, NULL, &nodes, &n, &err), JF_OK);
	assert_true(n >= 1);
	for (size_t i = 0; i < n; i++) {
		assert_true(nodes[i].name[0] != '\0');
		assert_true(nodes[i].state[0] != '\0');
		assert_true(nodes[i].cpus > 0);
	}
	jf_slurm_nodes_free(nodes, n);

	int64_t id = live_submit(r, "#!/bin/sh\ntrue\n", "jf-test-list", "{\"hold\": true}");
	assert_int_equal(jf_slurm_jobs_all(r, NULL, 0, &jobs, &n, &unchanged, &err), JF_OK);
	assert_false(unchanged);
	bool found = false;
	for (size_t i = 0; i < n; i++)
		found |= jobs[i].job_id == id;
	assert_true(found);
	jf_slurm_jobs_free(jobs, n);
	/* nothing changed since an hour from now */
	assert_int_equal(
		jf_slurm_jobs_all(r, NULL, (int64_t)time(NULL) + 3600, &jobs, &n, &unchanged, &err),
		JF_OK);
	assert_true(unchanged);
	assert_int_equal(n, 0);
	jf_slurm_rest_free(r);
}

static void test_live_array(void **state)
{
	struct jf_slurm_rest *r = live_rest();
	struct jf_error err;
	struct jf_slurm_job *j;
	size_t n;
	char id[32], el[48];
	json_t *p;

	(void)state;
	int64_t jid = live_submit(r, "#!/bin/sh\ntrue\n", "jf-test-array",
				  "{\"array\": \"0-5%2\", \"hold\": true}");
	snprintf(id, sizeof(id), "%" PRId64, jid);
	live_get(r, id, &j, &n);
	assert_int_equal(n, 1); /* all pending: the meta record alone */
	assert_int_equal(j[0].job_id, jid);
	assert_int_equal(j[0].array_job_id, jid);
	assert_int_equal(j[0].array_task_id, -1);
	assert_string_equal(j[0].array_task_string, "0-5%2");
	assert_int_equal(j[0].array_max_tasks, 2);
	assert_string_equal(j[0].state, "PENDING");
	assert_true(!strncmp(j[0].reason, "JobHeld", 7));
	jf_slurm_jobs_free(j, n);

	/* the throttle, read back */
	p = json_pack("{s:s}", "array", "3");
	jf_error_clear(&err);
	if (jf_slurm_job_update(r, NULL, id, p, &err) != JF_OK)
		fail_msg("throttle: %s", err.msg);
	json_decref(p);
	live_get(r, id, &j, &n);
	assert_string_equal(j[0].array_task_string, "0-5%3");
	assert_int_equal(j[0].array_max_tasks, 3);
	jf_slurm_jobs_free(j, n);
	/* sent to an element, Slurm ignores it (and answers as if it worked) */
	snprintf(el, sizeof(el), "%s_5", id);
	p = json_pack("{s:i}", "array", 4);
	assert_int_equal(jf_slurm_job_update(r, NULL, el, p, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "did not apply the throttle 4"));
	json_decref(p);

	/* a signal to a pending job; hold again; release */
	assert_int_equal(jf_slurm_job_signal(r, NULL, id, 15, &err), JF_EBUSY);
	assert_non_null(strstr(err.msg, "Job can not be altered now"));
	p = json_pack("{s:b}", "hold", 1);
	assert_int_equal(jf_slurm_job_update(r, NULL, id, p, &err), JF_OK);
	json_decref(p);
	p = json_pack("{s:b}", "hold", 0);
	if (jf_slurm_job_update(r, NULL, id, p, &err) != JF_OK)
		fail_msg("release: %s", err.msg);
	json_decref(p);

	/* every element runs `true` and completes */
	int64_t until = mono_ms() + 90 * 1000;
	size_t done = 0;
	int64_t el0 = 0;
	while (mono_ms() < until) {
		live_get(r, id, &j, &n);
		done = 0;
		for (size_t i = 0; i < n; i++) {
			if (j[i].array_task_id >= 0 && !strcmp(j[i].state, "COMPLETED")) {
				done++;
				assert_int_equal(j[i].exit_code, 0);
				assert_int_equal(j[i].array_job_id, jid);
				assert_true(j[i].start_time > 0);
				assert_true(j[i].array_max_tasks == 3 || j[i].array_task_id == 5);
				if (j[i].array_task_id == 0)
					el0 = j[i].job_id;
			}
		}
		jf_slurm_jobs_free(j, n);
		if (done == 6)
			break;
		usleep(300 * 1000);
	}
	assert_int_equal(done, 6);
	/* an element by its own job id and by master_index */
	snprintf(el, sizeof(el), "%" PRId64, el0);
	live_get(r, el, &j, &n);
	assert_int_equal(n, 1);
	assert_int_equal(j[0].array_task_id, 0);
	jf_slurm_jobs_free(j, n);
	snprintf(el, sizeof(el), "%s_0", id);
	live_get(r, el, &j, &n);
	assert_int_equal(n, 1);
	assert_int_equal(j[0].job_id, el0);
	jf_slurm_jobs_free(j, n);
	snprintf(el, sizeof(el), "%s_77", id);
	assert_int_equal(jf_slurm_job_get(r, NULL, el, &j, &n, &err), JF_ENOENT);
	/* cancelling what has ended is fine */
	assert_int_equal(jf_slurm_job_signal(r, NULL, id, 0, &err), JF_OK);
	jf_slurm_rest_free(r);
}

static void test_live_signal_cancel(void **state)
{
	struct jf_slurm_rest *r = live_rest();
	struct jf_error err;
	struct jf_slurm_job *j;
	size_t n;
	char id[32];

	(void)state;
	/* SIGTERM without cancelling: the script catches it, goes on for 2 s
	 * and exits 7 */
	int64_t jid =
		live_submit(r,
			    "#!/bin/sh\ntrap 'got=1' TERM\n: > /tmp/jf-test-signal.$SLURM_JOB_ID\n"
			    "while [ -z \"$got\" ]; do sleep 1; done\nsleep 2\nexit 7\n",
			    "jf-test-signal", NULL);
	snprintf(id, sizeof(id), "%" PRId64, jid);
	live_wait_state(r, jid, "RUNNING", 60);
	/* RUNNING in Slurm comes before the script runs, and a signal sent
	 * before it does is lost: wait for the script's own word that its trap
	 * is set */
	char ready[64];
	snprintf(ready, sizeof(ready), "/tmp/jf-test-signal.%" PRId64, jid);
	int64_t until = mono_ms() + 60 * 1000;
	while (access(ready, F_OK) != 0 && mono_ms() < until)
		usleep(100 * 1000);
	if (access(ready, F_OK) != 0)
		fail_msg("job %s: its script never started (no %s after 60 s)", id, ready);
	unlink(ready);
	jf_error_clear(&err);
	if (jf_slurm_job_signal(r, NULL, id, SIGTERM, &err) != JF_OK)
		fail_msg("SIGTERM: %s", err.msg);
	live_get(r, id, &j, &n);
	assert_string_equal(j[0].state, "RUNNING");
	jf_slurm_jobs_free(j, n);
	live_wait_state(r, jid, "FAILED", 60);
	live_wait_completed(jid, 60);
	live_get(r, id, &j, &n);
	assert_string_equal(j[0].state, "FAILED");
	assert_int_equal(j[0].exit_code, 7);
	assert_int_equal(j[0].exit_signal, 0);
	jf_slurm_jobs_free(j, n);
	/* to an ended job: fine, both ways */
	assert_int_equal(jf_slurm_job_signal(r, NULL, id, SIGTERM, &err), JF_OK);
	assert_int_equal(jf_slurm_job_signal(r, NULL, id, 0, &err), JF_OK);

	/* cancel a pending job, twice */
	jid = live_submit(r, "#!/bin/sh\ntrue\n", "jf-test-cancel", "{\"hold\": true}");
	snprintf(id, sizeof(id), "%" PRId64, jid);
	assert_int_equal(jf_slurm_job_signal(r, NULL, id, 0, &err), JF_OK);
	live_wait_state(r, jid, "CANCELLED", 30);
	assert_int_equal(jf_slurm_job_signal(r, NULL, id, 0, &err), JF_OK);
	jf_slurm_rest_free(r);
}

static void test_live_refusals(void **state)
{
	struct jf_slurm_rest *r = live_rest();
	struct jf_error err;
	struct jf_slurm_job *j;
	size_t n;
	int64_t id = -1;
	json_t *b, *p;

	(void)state;
	assert_int_equal(jf_slurm_job_get(r, NULL, "99999999", &j, &n, &err), JF_ENOENT);
	assert_int_equal(jf_slurm_job_signal(r, NULL, "99999999", 0, &err), JF_ENOENT);
	p = json_pack("{s:b}", "hold", 1);
	assert_int_equal(jf_slurm_job_update(r, NULL, "99999999", p, &err), JF_ENOENT);
	json_decref(p);

	/* 99 nodes: Slurm queues it (error 2015), rest.c cancels it */
	b = live_body("#!/bin/sh\ntrue\n", "jf-test-99", "{\"nodes\": \"99\"}");
	jf_error_clear(&err);
	assert_int_equal(jf_slurm_submit(r, NULL, b, &id, &err), JF_EINVAL);
	json_decref(b);
	assert_int_equal(id, 0);
	const char *q = strstr(err.msg, "as job ");
	if (!strstr(err.msg, "Slurm refused the job: Requested partition configuration not "
			     "available now (error 2015)") ||
	    !q)
		fail_msg("%s", err.msg);
	int64_t queued = strtoll(q + 7, NULL, 10);
	assert_true(queued > 0);
	if (nlive_jobs < LIVE_JOBS_MAX)
		live_jobs[nlive_jobs++] = queued;
	live_wait_state(r, queued, "CANCELLED", 30);

	/* refused outright */
	b = live_body("#!/bin/sh\ntrue\n", "jf-test-mem", "{\"memory_per_node\": 999999}");
	assert_int_equal(jf_slurm_submit(r, NULL, b, &id, &err), JF_EINVAL);
	assert_string_equal(err.msg, "Slurm refused the job: Requested node configuration is not "
				     "available (error 2014)");
	json_decref(b);
	b = live_body("#!/bin/sh\ntrue\n", "jf-test-key", "{\"bogus\": 1}");
	assert_int_equal(jf_slurm_submit(r, NULL, b, &id, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "Unknown key \"bogus\""));
	json_decref(b);
	b = json_pack("{s:s, s:{s:s}}", "script", "#!/bin/sh\ntrue\n", "job",
		      "current_working_directory", "/tmp");
	assert_int_equal(jf_slurm_submit(r, NULL, b, &id, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "environment must be set"));
	json_decref(b);
	jf_slurm_rest_free(r);
}

static void test_live_jwt(void **state)
{
	const char *url = getenv("JOBFS_SLURM_JWT_URL"), *tok = getenv("SLURM_JWT");
	struct jf_error err;
	struct jf_slurm_rest *r;
	struct jf_slurm_job *j;
	size_t n;

	(void)state;
	if (!getenv("JOBFS_SLURM_URL") || !url || !*url || !tok || !*tok)
		skip();
	struct jf_slurm_rest_opts o = { .url = url, .token = tok, .timeout_ms = 20000 };
	assert_int_equal(jf_slurm_rest_new(&o, &r, &err), JF_OK);
	jf_error_clear(&err);
	if (jf_slurm_ping(r, &err) != JF_OK)
		fail_msg("JWT ping: %s", err.msg);
	assert_int_equal(jf_slurm_job_get(r, NULL, "99999999", &j, &n, &err), JF_ENOENT);
	int64_t jid = live_submit(r, "#!/bin/sh\ntrue\n", "jf-test-jwt", "{\"hold\": true}");
	char id[32];
	snprintf(id, sizeof(id), "%" PRId64, jid);
	assert_int_equal(jf_slurm_job_signal(r, NULL, id, 0, &err), JF_OK);
	jf_slurm_rest_free(r);

	/* the same token with its signature changed: slurmctld hangs up */
	char bad[TOKEN_BUF];
	snprintf(bad, sizeof(bad), "%s", tok);
	size_t len = strlen(bad);
	bad[len - 2] = bad[len - 2] == 'A' ? 'B' : 'A';
	bad[len - 3] = bad[len - 3] == 'A' ? 'B' : 'A';
	o.token = bad;
	assert_int_equal(jf_slurm_rest_new(&o, &r, &err), JF_OK);
	assert_int_equal(jf_slurm_ping(r, &err), JF_EACCES);
	assert_non_null(strstr(err.msg, "slurmctld rejected the JWT"));
	jf_slurm_job_get(r, NULL, "1", &j, &n, &err);
	assert_int_equal(err.code, JF_EACCES);
	jf_slurm_rest_free(r);
	/* garbage */
	o.token = "garbage";
	o.user = "root";
	assert_int_equal(jf_slurm_rest_new(&o, &r, &err), JF_OK);
	assert_int_equal(jf_slurm_nodes(r, NULL, &(struct jf_slurm_node *){ NULL }, &n, &err),
			 JF_EACCES);
	jf_slurm_rest_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_array_pending),
		cmocka_unit_test(test_parse_ended),
		cmocka_unit_test(test_parse_preempted),
		cmocka_unit_test(test_parse_array_cancelled_and_all),
		cmocka_unit_test(test_parse_nodes),
		cmocka_unit_test(test_parse_defaults_and_caps),
		cmocka_unit_test(test_gres),
		cmocka_unit_test(test_verdicts),
		cmocka_unit_test(test_fake_unix_requests),
		cmocka_unit_test(test_fake_submit_2015),
		cmocka_unit_test(test_fake_update_throttle),
		cmocka_unit_test(test_fake_jwt_headers),
		cmocka_unit_test(test_fake_jwt_probe),
		cmocka_unit_test(test_fake_transport),
		cmocka_unit_test(test_arguments),
		cmocka_unit_test(test_live_ping_nodes_jobs),
		cmocka_unit_test(test_live_array),
		cmocka_unit_test(test_live_signal_cancel),
		cmocka_unit_test(test_live_refusals),
		cmocka_unit_test(test_live_jwt),
	};
	if (jf_slurm_rest_global_init() != JF_OK) {
		fprintf(stderr, "curl_global_init failed\n");
		return 1;
	}
	const char *url = getenv("JOBFS_SLURM_URL");
	if (!url || !*url)
		printf("slurm: JOBFS_SLURM_URL not set, live tests skipped\n");
	int rc = cmocka_run_group_tests(tests, NULL, live_teardown);
	return rc;
}
