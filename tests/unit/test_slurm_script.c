/*
 * test_slurm_script.c - the batch script, the job description and the
 * launch.json of a Slurm batch (backends/slurm/script.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backends/slurm/script.h"

static char *argv_main[] = { "/bin/sh", "-c", "echo hi", NULL };
static char *env_main[] = { "PATH=/bin", "JOB_NAME=demo", NULL };
static char *argv_side[] = { "sleep", "1", NULL };
static char *env_side[] = { "A=1", NULL };

static void batch(struct jf_batch *b, int64_t *idx, size_t n, struct jf_proc *procs)
{
	memset(b, 0, sizeof(*b));
	procs[0] = (struct jf_proc){ .name = "main", .argv = argv_main, .envp = env_main };
	procs[1] = (struct jf_proc){ .name = "side", .argv = argv_side, .envp = env_side };
	b->key = 7;
	b->dir = "/var/lib/jobfs/slurm/7";
	b->name = "q/g";
	b->user = "alice";
	b->uid = 1000;
	b->gid = 1000;
	b->partition = "ondemand";
	b->idx = idx;
	b->nidx = n;
	b->throttle = 10;
	b->nodes = 4;
	b->gpu_model = "4090";
	b->gpus = 2;
	b->cpu_milli = 2500;
	b->mem_bytes = (int64_t)3 << 30;
	b->timeout_ms = 90 * 1000;
	b->kill_grace_ms = 10000;
	b->attempt_base = 2;
	b->tasks = 100;
	b->node_index = true;
	b->spot = true;
	b->ckpt_root = "/var/lib/jobfs/ckpt/g3";
	b->procs = procs;
	b->nprocs = 2;
	b->log_cap_bytes = 1 << 20;
}

static void test_script(void **state)
{
	(void)state;
	struct jf_error err;
	char *s = jf_slurm_script("/usr/bin/jobfs-shim", "/var/lib/jobfs/slurm/7", 4, false, &err);
	assert_non_null(s);
	assert_non_null(strstr(s, "#!/bin/sh\n"));
	assert_non_null(strstr(s, "srun --kill-on-bad-exit=1 --nodes=4 --ntasks=4 "
				  "--ntasks-per-node=1 '/usr/bin/jobfs-shim' --slurm "
				  "'/var/lib/jobfs/slurm/7'\n"));
	assert_non_null(strstr(s, "exec '/usr/bin/jobfs-shim' --slurm-verdict "
				  "'/var/lib/jobfs/slurm/7'\n"));
	free(s);
	/* a quote in a path is kept as one word */
	s = jf_slurm_script("/opt/it's/shim", "/d", 1, true, &err);
	assert_non_null(s);
	assert_non_null(strstr(s, "'/opt/it'\\''s/shim' --slurm '/d'"));
	free(s);
	/* a newline cannot be: refused, not run as two commands */
	assert_null(jf_slurm_script("/bin/x\nrm -rf /", "/d", 1, false, &err));
	assert_int_equal(err.code, JF_EINVAL);
	/* one on-demand node: the supervisor is the batch script itself */
	s = jf_slurm_script("/usr/bin/jobfs-shim", "/d", 1, false, &err);
	assert_non_null(s);
	assert_null(strstr(s, "srun"));
	assert_null(strstr(s, "--slurm-verdict"));
	assert_non_null(strstr(s, "\nexec '/usr/bin/jobfs-shim' --slurm '/d'\n"));
	free(s);
	/* one spot node keeps srun: Slurm's SIGTERM at a preemption reaches steps */
	s = jf_slurm_script("/usr/bin/jobfs-shim", "/d", 1, true, &err);
	assert_non_null(s);
	assert_non_null(strstr(s, "srun --kill-on-bad-exit=1 --nodes=1"));
	free(s);
	assert_null(jf_slurm_script("/bin/x\nrm -rf /", "/d", 4, true, &err));
	assert_int_equal(err.code, JF_EINVAL);
}

static void test_time_limit(void **state)
{
	(void)state;
	assert_int_equal(jf_slurm_time_limit(0), 0);
	assert_int_equal(jf_slurm_time_limit(1), 2); /* 1 ms: a minute, plus one */
	assert_int_equal(jf_slurm_time_limit(60000), 2);
	assert_int_equal(jf_slurm_time_limit(60001), 3);
	assert_int_equal(jf_slurm_time_limit(1440 * 60000LL), 1441);
}

static void test_job_json(void **state)
{
	(void)state;
	int64_t idx[] = { 5, 6, 7 };
	struct jf_proc procs[2];
	struct jf_batch b;
	batch(&b, idx, 3, procs);
	struct jf_error err;
	json_t *j = jf_slurm_job_json(&b, "#!/bin/sh\ntrue\n", "0-2%10", "jobfs:u:7", &err);
	assert_non_null(j);
	json_t *job = json_object_get(j, "job");
	assert_string_equal(json_string_value(json_object_get(j, "script")), "#!/bin/sh\ntrue\n");
	assert_string_equal(json_string_value(json_object_get(job, "array")), "0-2%10");
	assert_string_equal(json_string_value(json_object_get(job, "comment")), "jobfs:u:7");
	assert_string_equal(json_string_value(json_object_get(job, "name")), "jobfs:q/g");
	assert_string_equal(json_string_value(json_object_get(job, "partition")), "ondemand");
	assert_string_equal(json_string_value(json_object_get(job, "nodes")), "4");
	assert_int_equal(json_integer_value(json_object_get(job, "tasks_per_node")), 1);
	assert_int_equal(json_integer_value(json_object_get(job, "cpus_per_task")), 3);
	assert_int_equal(json_integer_value(json_object_get(job, "memory_per_node")), 3072);
	assert_string_equal(json_string_value(json_object_get(job, "gres")), "gpu:4090:2");
	assert_int_equal(json_integer_value(json_object_get(job, "time_limit")), 3);
	assert_true(json_is_true(json_object_get(job, "requeue")));
	assert_string_equal(json_string_value(json_object_get(job, "standard_output")),
			    "/var/lib/jobfs/slurm/7/slurm-%a.out");
	json_t *env = json_object_get(job, "environment");
	assert_true(json_object_size(env) >= 1);
	assert_string_equal(json_string_value(json_object_get(env, "JOBFS_BATCH")),
			    "/var/lib/jobfs/slurm/7");
	json_decref(j);

	/* CPU-only, on-demand, no limits: 1 core, 1 GiB, no gres, no requeue */
	b.gpu_model = NULL;
	b.gpus = 0;
	b.cpu_milli = 0;
	b.mem_bytes = 0;
	b.spot = false;
	b.partition = NULL;
	b.timeout_ms = 0;
	j = jf_slurm_job_json(&b, "#!/bin/sh\n", "0", "c", &err);
	assert_non_null(j);
	job = json_object_get(j, "job");
	assert_null(json_object_get(job, "gres"));
	assert_null(json_object_get(job, "partition"));
	assert_null(json_object_get(job, "time_limit"));
	assert_int_equal(json_integer_value(json_object_get(job, "cpus_per_task")), 1);
	assert_int_equal(json_integer_value(json_object_get(job, "memory_per_node")), 1024);
	assert_true(json_is_false(json_object_get(job, "requeue")));
	json_decref(j);

	/* bytes that are not UTF-8 are refused with a message */
	b.name = "\xff\xfe";
	assert_null(jf_slurm_job_json(&b, "#!/bin/sh\n", "0", "c", &err));
	assert_int_equal(err.code, JF_EINVAL);
}

static void test_launch_json(void **state)
{
	(void)state;
	int64_t idx[] = { 40, 41 };
	struct jf_proc procs[2];
	struct jf_batch b;
	batch(&b, idx, 2, procs);
	int s0[] = { 0, -1 }, s1[] = { 1, -1 };
	const int *slots[] = { s0, s1 };
	b.gpu_slots = slots;
	struct jf_error err;
	json_t *j = jf_slurm_launch_json(&b, &err);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "uid")), 1000);
	assert_string_equal(json_string_value(json_object_get(j, "cwd")), "");
	assert_int_equal(json_integer_value(json_object_get(j, "log_cap")), 1 << 20);
	json_t *procs_j = json_object_get(j, "procs");
	assert_int_equal(json_array_size(procs_j), 2);
	json_t *p0 = json_array_get(procs_j, 0);
	assert_string_equal(json_string_value(json_object_get(p0, "name")), "main");
	assert_int_equal(json_array_size(json_object_get(p0, "argv")), 3);
	assert_string_equal(json_string_value(json_array_get(json_object_get(p0, "envp"), 1)),
			    "JOB_NAME=demo");
	json_t *sl = json_object_get(j, "slurm");
	assert_int_equal(json_integer_value(json_object_get(sl, "first_index")), 40);
	assert_int_equal(json_integer_value(json_object_get(sl, "tasks")), 100);
	assert_int_equal(json_integer_value(json_object_get(sl, "attempt_base")), 2);
	assert_true(json_is_true(json_object_get(sl, "node_index")));
	assert_int_equal(json_integer_value(json_object_get(sl, "timeout_ms")), 90000);
	assert_int_equal(json_integer_value(json_object_get(sl, "kill_grace_ms")), 10000);
	assert_string_equal(json_string_value(json_object_get(sl, "ckpt_root")),
			    "/var/lib/jobfs/ckpt/g3");
	json_t *gs = json_object_get(sl, "gpu_slots");
	assert_int_equal(json_array_size(gs), 2);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(gs, 1), 0)), 1);
	json_decref(j);
	b.gpu_slots = NULL;
	j = jf_slurm_launch_json(&b, &err);
	assert_null(json_object_get(json_object_get(j, "slurm"), "gpu_slots"));
	json_decref(j);
}

static void test_write_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/jf-script-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/launch.json", dir);
	assert_int_equal(jf_slurm_write_file(path, "{}", 2, 0600), 0);
	FILE *f = fopen(path, "r");
	char buf[8] = "";
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "{}");
	snprintf(path, sizeof(path), "%s/no/such/dir/x", dir);
	assert_int_equal(jf_slurm_write_file(path, "{}", 2, 0600), -1);
	snprintf(path, sizeof(path), "%s/launch.json", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_script),     cmocka_unit_test(test_time_limit),
		cmocka_unit_test(test_job_json),   cmocka_unit_test(test_launch_json),
		cmocka_unit_test(test_write_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
