/*
 * test_local.c - the local backend and tools/jobfs-shim, with real
 * processes.
 *
 * Every test gets its own temporary directory and backend; the shim is the
 * one the build made ($JOBFS_SHIM).  Waiting is poll() on the backend's fd
 * with a timeout of a few seconds, never an open-ended sleep.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include <jansson.h>

#include "backends/local/local.h"

#define PATH "PATH=/usr/local/bin:/usr/bin:/bin"

struct fix {
	char dir[PATH_MAX];
	struct jf_runner *be;
	int nrun;
};

static struct jf_runner *new_backend(void)
{
	struct jf_error err = { 0 };
	const char *shim = jft_shim_path();
	assert_non_null(shim);
	struct jf_runner *be = jf_local_new(shim, &err);
	if (!be)
		fail_msg("jf_local_new: %s", err.msg);
	return be;
}

/*
 * Results reaped while waiting for something else (start_run waits for a
 * `started`, and an end of another run may come first): handed out by
 * wait_result before anything new.
 */
static struct jf_run_result stash[64];
static size_t nstash;

static void stash_put(const struct jf_run_result *res)
{
	if (nstash == sizeof(stash) / sizeof(stash[0]))
		fail_msg("too many results stashed");
	stash[nstash++] = *res;
}

static bool stash_get(struct jf_run_result *res)
{
	if (!nstash)
		return false;
	*res = stash[0];
	memmove(stash, stash + 1, --nstash * sizeof(stash[0]));
	return true;
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->be = new_backend();
	snprintf(f->dir, sizeof(f->dir), "/tmp/jf-local-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	nstash = 0;
	jf_runner_free(f->be);
	jft_rmtree(f->dir);
	free(f);
	return 0;
}

/* A fresh run directory under the test's directory. */
static const char *run_dir(struct fix *f, char *buf, size_t n)
{
	if (snprintf(buf, n, "%s/run%d", f->dir, f->nrun++) >= (int)n)
		fail_msg("path too long");
	assert_int_equal(mkdir(buf, 0755), 0);
	return buf;
}

static off_t file_size(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -1;
	return stat(path, &st) == 0 ? st.st_size : -1;
}


/*
 * Wait at most timeout_ms for the start of cookie to be confirmed (a
 * `started` result: its pid and start time into *out).  False if the run
 * ended first (its end is stashed) or nothing came.
 */
static bool wait_started(struct jf_runner *be, uint64_t cookie, int timeout_ms,
			 struct jf_run_started *out)
{
	int64_t deadline = jft_wall_ms() + timeout_ms;
	struct jf_run_result res;
	for (;;) {
		while (jf_runner_reap(be, &res, 1) == 1) {
			if (res.started && res.cookie == cookie) {
				out->pid = res.pid;
				out->start_ms = res.start_ms;
				return true;
			}
			if (res.started)
				continue; /* another run's start */
			stash_put(&res);
			if (res.cookie == cookie)
				return false;
		}
		int64_t left = deadline - jft_wall_ms();
		if (left <= 0)
			return false;
		struct pollfd p = { .fd = jf_runner_fd(be), .events = POLLIN };
		poll(&p, 1, (int)left);
	}
}

/* Start a run and wait for its start to be confirmed (pending, backend.h). */
static void start_run(struct jf_runner *be, const char *dir, const struct jf_proc *procs,
		      size_t nprocs, uint64_t cookie, struct jf_run_started *out)
{
	struct jf_launch l = {
		.run_dir = dir,
		.cwd = dir,
		.uid = getuid(),
		.gid = getgid(),
		.procs = procs,
		.nprocs = nprocs,
	};
	struct jf_error err = { 0 };
	memset(out, 0, sizeof(*out));
	enum jf_err rc = jf_runner_start(be, &l, cookie, out, &err);
	if (rc != JF_OK)
		fail_msg("start: %s", err.msg);
	assert_true(out->pending); /* the local backend never waits for the shim */
	assert_int_equal(out->start_ms, 0);
	assert_true(strncmp(out->handle, "local:", 6) == 0);
	if (!wait_started(be, cookie, 10000, out))
		fail_msg("start of run %llu not confirmed", (unsigned long long)cookie);
}

/* One sh -c SCRIPT process named main. */
static void start_sh(struct jf_runner *be, const char *dir, const char *script, uint64_t cookie,
		     struct jf_run_started *out)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };
	start_run(be, dir, &p, 1, cookie, out);
}

/* Wait at most timeout_ms for one end (`started` results are passed over). */
static bool wait_result(struct jf_runner *be, int timeout_ms, struct jf_run_result *res)
{
	int64_t deadline = jft_wall_ms() + timeout_ms;
	if (stash_get(res))
		return true;
	for (;;) {
		while (jf_runner_reap(be, res, 1) == 1)
			if (!res->started)
				return true;
		int64_t left = deadline - jft_wall_ms();
		if (left <= 0)
			return false;
		struct pollfd p = { .fd = jf_runner_fd(be), .events = POLLIN };
		poll(&p, 1, (int)left);
	}
}

static void expect_result(struct jf_runner *be, int timeout_ms, struct jf_run_result *res)
{
	if (!wait_result(be, timeout_ms, res))
		fail_msg("no result within %d ms", timeout_ms);
}

/* Wait (bounded) until the file holds needle: the process is ready. */
static void wait_for_text(const char *dir, const char *name, const char *needle)
{
	for (int i = 0; i < 500; i++) {
		char *t = jft_read_in(dir, name);
		bool found = t && strstr(t, needle);
		free(t);
		if (found)
			return;
		usleep(10000);
	}
	fail_msg("%s never contained '%s'", name, needle);
}

static pid_t handle_pid(const char *handle)
{
	int pid = 0;
	assert_int_equal(sscanf(handle, "local:%d:", &pid), 1);
	return pid;
}

/* ---- tests ---- */

static void test_success(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st = { 0 };
	struct jf_run_result res;
	int64_t before = jft_wall_ms();

	run_dir(f, dir, sizeof(dir));
	start_sh(f->be, dir, "echo hello; echo world", 42, &st);
	assert_true(strncmp(st.handle, "local:", 6) == 0);
	assert_true(st.pid > 0);
	assert_true(st.start_ms >= before - 5 && st.start_ms <= jft_wall_ms());
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.cookie, 42);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.term_signal, 0);
	assert_false(res.lost);
	assert_false(res.start_failed);
	assert_int_equal(res.start_ms, st.start_ms);
	assert_true(res.end_ms >= res.start_ms && res.end_ms <= jft_wall_ms());
	assert_int_equal(res.nprocs, 1);
	assert_string_equal(res.procs[0].name, "main");
	assert_string_equal(res.message, "exit 0");

	char *out = jft_read_in(dir, "stdout");
	assert_string_equal(out, "hello\nworld\n");
	free(out);
	char *logs = jft_read_in(dir, "logs");
	assert_string_equal(logs, "hello\nworld\n");
	free(logs);
	assert_int_equal(file_size(dir, "stderr"), 0);
	assert_true(file_size(dir, "result") > 0);
	assert_true(file_size(dir, "started") > 0);
	assert_int_equal(jf_runner_reap(f->be, &res, 1), 0);

	/* The same directory again: a fresh record, the logs appended to. */
	start_sh(f->be, dir, "echo again; exit 6", 43, &st);
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.cookie, 43);
	assert_int_equal(res.exit_code, 6);
	out = jft_read_in(dir, "stdout");
	assert_string_equal(out, "hello\nworld\nagain\n");
	free(out);
}

static void test_exit_code(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;

	run_dir(f, dir, sizeof(dir));
	start_sh(f->be, dir, "exit 3", 7, &st);
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.cookie, 7);
	assert_int_equal(res.exit_code, 3);
	assert_int_equal(res.term_signal, 0);
	assert_int_equal(res.procs[0].exit_code, 3);
	assert_string_equal(res.message, "exit 3");
	assert_false(res.start_failed);
}

/* Every line whole in logs; stdout holds only stdout. */
static void test_interleave(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;

	run_dir(f, dir, sizeof(dir));
	start_sh(f->be, dir,
		 "i=0; while [ $i -lt 1000 ]; do echo \"out line $i\"; echo \"err line $i\" >&2;"
		 " i=$((i+1)); done;"
		 " printf 'partial-'; sleep 0.2; echo 'err whole' >&2; sleep 0.2; echo 'end';"
		 " printf 'no newline'",
		 1, &st);
	expect_result(f->be, 10000, &res);
	assert_int_equal(res.exit_code, 0);

	char *logs = jft_read_in(dir, "logs");
	int seen_out[1000] = { 0 }, seen_err[1000] = { 0 };
	int other = 0;
	bool partial = false, errwhole = false, nonl = false;
	for (char *save, *line = strtok_r(logs, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		int k;
		char tail;
		if (sscanf(line, "out line %d%c", &k, &tail) == 1 && k >= 0 && k < 1000)
			seen_out[k]++;
		else if (sscanf(line, "err line %d%c", &k, &tail) == 1 && k >= 0 && k < 1000)
			seen_err[k]++;
		else if (strcmp(line, "partial-end") == 0)
			partial = true;
		else if (strcmp(line, "err whole") == 0)
			errwhole = true;
		else if (strcmp(line, "no newline") == 0)
			nonl = true;
		else
			other++;
	}
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(seen_out[i], 1);
		assert_int_equal(seen_err[i], 1);
	}
	assert_int_equal(other, 0);
	assert_true(partial);
	assert_true(errwhole);
	assert_true(nonl);
	free(logs);

	char *out = jft_read_in(dir, "stdout");
	char *p = out;
	for (int i = 0; i < 1000; i++) {
		char want[32];
		int n = snprintf(want, sizeof(want), "out line %d\n", i);
		assert_memory_equal(p, want, (size_t)n);
		p += n;
	}
	assert_string_equal(p, "partial-end\nno newline");
	free(out);
	char *err = jft_read_in(dir, "stderr");
	assert_null(strstr(err, "out line"));
	assert_non_null(strstr(err, "err line 999\nerr whole\n"));
	free(err);
}

static void test_two_procs(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	/* a fails later than b, but a comes first: the node's code is a's. */
	char *a[] = { "/bin/sh", "-c", "echo hello; echo oops >&2; sleep 0.3; exit 4", NULL };
	char *b[] = { "/bin/sh", "-c", "echo world; exit 5", NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc procs[] = {
		{ .name = "alpha", .argv = a, .envp = envp },
		{ .name = "beta", .argv = b, .envp = envp },
	};

	run_dir(f, dir, sizeof(dir));
	start_run(f->be, dir, procs, 2, 9, &st);
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.exit_code, 4);
	assert_int_equal(res.nprocs, 2);
	assert_string_equal(res.procs[0].name, "alpha");
	assert_int_equal(res.procs[0].exit_code, 4);
	assert_string_equal(res.procs[1].name, "beta");
	assert_int_equal(res.procs[1].exit_code, 5);
	assert_string_equal(res.message, "alpha: exit 4");

	char *logs = jft_read_in(dir, "logs");
	assert_non_null(strstr(logs, "[alpha] hello\n"));
	assert_non_null(strstr(logs, "[alpha] oops\n"));
	assert_non_null(strstr(logs, "[beta] world\n"));
	free(logs);
	char *out = jft_read_in(dir, "stdout");
	assert_null(strstr(out, "[alpha]")); /* prefixes only in logs */
	free(out);
}

static void test_not_found(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	char *argv[] = { "jobfs-no-such-command", "x", NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };

	run_dir(f, dir, sizeof(dir));
	start_run(f->be, dir, &p, 1, 5, &st);
	assert_int_equal(st.pid, 0);
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.cookie, 5);
	assert_true(res.start_failed);
	assert_false(res.lost);
	assert_int_equal(res.exit_code, 127);
	assert_non_null(strstr(res.message, "jobfs-no-such-command"));
	assert_non_null(strstr(res.message, "No such file"));
	/* the shim says it where the node's output goes, as one line */
	char *err = jft_read_in(dir, "stderr");
	assert_string_equal(err, "jobfs: exec jobfs-no-such-command: No such file or directory\n");
	free(err);
	char *logs = jft_read_in(dir, "logs");
	assert_string_equal(logs, "jobfs: exec jobfs-no-such-command: No such file or directory\n");
	free(logs);
	assert_int_equal(file_size(dir, "stdout"), 0);
}

/* A cwd that is not there: the other start failure users meet first. */
static void test_chdir_failure(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX], gone[PATH_MAX + 8], want[PATH_MAX + 64];
	struct jf_run_started st;
	struct jf_run_result res;
	char *argv[] = { "true", NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };

	run_dir(f, dir, sizeof(dir));
	snprintf(gone, sizeof(gone), "%s/nowhere", dir);
	struct jf_launch l = {
		.run_dir = dir,
		.cwd = gone,
		.uid = getuid(),
		.gid = getgid(),
		.procs = &p,
		.nprocs = 1,
	};
	struct jf_error e = { 0 };
	memset(&st, 0, sizeof(st));
	assert_int_equal(jf_runner_start(f->be, &l, 3, &st, &e), JF_OK);
	expect_result(f->be, 5000, &res);
	assert_true(res.start_failed);
	assert_int_equal(res.exit_code, 127);
	snprintf(want, sizeof(want), "chdir %s: No such file or directory", gone);
	assert_string_equal(res.message, want);
	snprintf(want, sizeof(want), "jobfs: chdir %s: No such file or directory\n", gone);
	char *err = jft_read_in(dir, "stderr");
	assert_string_equal(err, want);
	free(err);
	char *logs = jft_read_in(dir, "logs");
	assert_string_equal(logs, want);
	free(logs);
}

/* A file that is there but not executable: 126. */
static void test_not_executable(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX], prog[PATH_MAX + 16];
	struct jf_run_started st;
	struct jf_run_result res;

	run_dir(f, dir, sizeof(dir));
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	int fd = open(prog, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	char *argv[] = { prog, NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };
	start_run(f->be, dir, &p, 1, 5, &st);
	expect_result(f->be, 5000, &res);
	assert_true(res.start_failed);
	assert_int_equal(res.exit_code, 126);
	assert_non_null(strstr(res.message, "Permission denied"));
	char want[PATH_MAX + 64];
	snprintf(want, sizeof(want), "jobfs: exec %s: Permission denied\n", prog);
	char *logs = jft_read_in(dir, "logs");
	assert_string_equal(logs, want);
	free(logs);
}

/* One proc cannot start: the others are stopped, the node is a start failure. */
static void test_partial_start_failure(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	char *a[] = { "sleep", "100", NULL };
	char *b[] = { "jobfs-no-such-command", NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc procs[] = {
		{ .name = "server", .argv = a, .envp = envp },
		{ .name = "client", .argv = b, .envp = envp },
	};

	run_dir(f, dir, sizeof(dir));
	start_run(f->be, dir, procs, 2, 1, &st);
	expect_result(f->be, 5000, &res);
	assert_true(res.start_failed);
	assert_int_equal(res.exit_code, 127);
	assert_int_equal(res.procs[0].exit_code, 137);
	assert_int_equal(res.procs[1].exit_code, 127);
	assert_non_null(strstr(res.message, "exec jobfs-no-such-command"));
	/* logs: the line is the client's, prefixed as its own lines would be */
	char *logs = jft_read_in(dir, "logs");
	assert_string_equal(
		logs, "[client] jobfs: exec jobfs-no-such-command: No such file or directory\n");
	free(logs);
	char *err = jft_read_in(dir, "stderr");
	assert_string_equal(err, "jobfs: exec jobfs-no-such-command: No such file or directory\n");
	free(err);
}

static void test_term(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	char *argv[] = { "sleep", "100", NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };

	run_dir(f, dir, sizeof(dir));
	start_run(f->be, dir, &p, 1, 1, &st);
	assert_false(wait_result(f->be, 100, &res));
	assert_int_equal(jf_runner_signal(f->be, st.handle, JF_RUN_TERM), JF_OK);
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.exit_code, 143);
	assert_int_equal(res.term_signal, SIGTERM);
	assert_int_equal(res.procs[0].term_signal, SIGTERM);
	assert_string_equal(res.message, "killed by SIGTERM");
	/* The run has ended: signalling it again is not an error. */
	assert_int_equal(jf_runner_signal(f->be, st.handle, JF_RUN_TERM), JF_OK);
	assert_int_equal(jf_runner_signal(f->be, "nonsense", JF_RUN_TERM), JF_EINVAL);
}

static void test_term_trapped(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;

	run_dir(f, dir, sizeof(dir));
	start_sh(f->be, dir,
		 "trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done", 1, &st);
	wait_for_text(dir, "stdout", "ready");
	assert_int_equal(jf_runner_signal(f->be, st.handle, JF_RUN_TERM), JF_OK);
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.term_signal, 0);
	char *out = jft_read_in(dir, "stdout");
	assert_non_null(strstr(out, "bye\n"));
	free(out);
}

static void test_kill(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;

	run_dir(f, dir, sizeof(dir));
	start_sh(f->be, dir, "trap '' TERM; echo ready; sleep 100", 1, &st);
	wait_for_text(dir, "stdout", "ready");
	assert_int_equal(jf_runner_signal(f->be, st.handle, JF_RUN_TERM), JF_OK);
	assert_false(wait_result(f->be, 300, &res)); /* TERM is ignored */
	assert_int_equal(jf_runner_signal(f->be, st.handle, JF_RUN_KILL), JF_OK);
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.exit_code, 137);
	assert_int_equal(res.term_signal, SIGKILL);
	assert_string_equal(res.message, "killed by SIGKILL");
}

/* The daemon "crashes" (its backend is lost) while the run goes on. */
static void test_adopt_running(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	struct jf_error err = { 0 };

	run_dir(f, dir, sizeof(dir));
	/* it runs until the test has looked: a file beside its run dir */
	char go[PATH_MAX + 8], cmd[2 * PATH_MAX];
	snprintf(go, sizeof(go), "%s.go", dir);
	snprintf(cmd, sizeof(cmd), "echo ready; while [ ! -e %s ]; do sleep 0.05; done; exit 7",
		 go);
	start_sh(f->be, dir, cmd, 77, &st);
	jf_runner_free(f->be);
	f->be = new_backend();
	assert_int_equal(jf_runner_adopt(f->be, st.handle, dir, 78, &err), JF_OK);
	assert_false(wait_result(f->be, 100, &res)); /* still running */
	FILE *g = fopen(go, "w");
	assert_non_null(g);
	fclose(g);
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.cookie, 78);
	assert_int_equal(res.exit_code, 7);
	assert_false(res.lost);
	assert_int_equal(res.start_ms, st.start_ms);
	char *out = jft_read_in(dir, "stdout");
	assert_string_equal(out, "ready\n");
	free(out);
}

/* Adopted after it ended: the result is there at once. */
static void test_adopt_finished(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	struct jf_error err = { 0 };

	run_dir(f, dir, sizeof(dir));
	start_sh(f->be, dir, "exit 4", 1, &st);
	jf_runner_free(f->be);
	f->be = NULL;
	wait_for_text(dir, "result", "exit_code");
	/* The shim exits right after writing its result. */
	int pidfd = (int)syscall(SYS_pidfd_open, handle_pid(st.handle), 0);
	if (pidfd >= 0) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		assert_int_equal(poll(&p, 1, 5000), 1);
		close(pidfd);
	}
	f->be = new_backend();
	assert_int_equal(jf_runner_adopt(f->be, st.handle, dir, 2, &err), JF_OK);
	struct pollfd p = { .fd = jf_runner_fd(f->be), .events = POLLIN };
	assert_int_equal(poll(&p, 1, 0), 1);
	assert_int_equal(jf_runner_reap(f->be, &res, 1), 1);
	assert_int_equal(res.cookie, 2);
	assert_int_equal(res.exit_code, 4);
	assert_false(res.lost);
	assert_int_equal(jf_runner_reap(f->be, &res, 1), 0);
	assert_int_equal(poll(&p, 1, 0), 0);

	/* Same, with the shim long gone (reaped): queued, not watched. */
	waitpid(handle_pid(st.handle), NULL, WNOHANG);
	assert_int_equal(jf_runner_adopt(f->be, st.handle, dir, 3, &err), JF_OK);
	assert_int_equal(poll(&p, 1, 0), 1);
	assert_int_equal(jf_runner_reap(f->be, &res, 1), 1);
	assert_int_equal(res.cookie, 3);
	assert_int_equal(res.exit_code, 4);
}

static void test_adopt_bogus(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX], handle[64];
	struct jf_run_result res[4];
	struct jf_error err = { 0 };

	run_dir(f, dir, sizeof(dir));
	/* A PID nobody has, and a live PID with the wrong start time. */
	assert_int_equal(jf_runner_adopt(f->be, "local:2147483646:12345", dir, 1, &err), JF_OK);
	snprintf(handle, sizeof(handle), "local:%d:1", (int)getpid());
	assert_int_equal(jf_runner_adopt(f->be, handle, dir, 2, &err), JF_OK);
	assert_int_equal(jf_runner_adopt(f->be, "slurm:12", dir, 3, &err), JF_EINVAL);
	assert_int_equal(jf_runner_adopt(f->be, "local:12:x", dir, 3, &err), JF_EINVAL);

	struct pollfd p = { .fd = jf_runner_fd(f->be), .events = POLLIN };
	assert_int_equal(poll(&p, 1, 1000), 1);
	assert_int_equal(jf_runner_reap(f->be, res, 4), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(res[i].cookie, (uint64_t)i + 1);
		assert_true(res[i].lost);
		assert_non_null(strstr(res[i].message, "supervisor vanished without a result"));
		assert_true(res[i].end_ms > 0);
	}
	assert_int_equal(poll(&p, 1, 0), 0);
	/* Signalling a vanished run is not an error. */
	assert_int_equal(jf_runner_signal(f->be, handle, JF_RUN_KILL), JF_OK);
}

/* SIGKILL to the shim: its process dies too and the run is lost. */
static void test_shim_killed(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	char *argv[] = { "sleep", "100", NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };

	run_dir(f, dir, sizeof(dir));
	/* An earlier attempt's record in the same directory must not count. */
	char stale[PATH_MAX + 16];
	snprintf(stale, sizeof(stale), "%s/result", dir);
	FILE *fp = fopen(stale, "w");
	assert_non_null(fp);
	fputs("{\"exit_code\":0,\"signal\":0,\"start_ms\":1,\"end_ms\":2,\"message\":\"old\"}\n",
	      fp);
	fclose(fp);
	start_run(f->be, dir, &p, 1, 11, &st);
	int child = (int)syscall(SYS_pidfd_open, st.pid, 0);
	assert_true(child >= 0);
	assert_int_equal(kill(handle_pid(st.handle), SIGKILL), 0);
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.cookie, 11);
	assert_true(res.lost);
	assert_int_equal(res.start_ms, st.start_ms);
	assert_non_null(strstr(res.message, "supervisor vanished without a result"));
	assert_non_null(strstr(res.message, "SIGKILL"));
	struct pollfd pc = { .fd = child, .events = POLLIN };
	assert_int_equal(poll(&pc, 1, 3000), 1); /* PR_SET_PDEATHSIG */
	close(child);
}

/* One file's rotation record from RUN_DIR/rotation. */
static void rotation_of(const char *dir, const char *name, json_int_t *cap, json_int_t *rotations,
			json_int_t *dropped)
{
	char *text = jft_read_in(dir, "rotation");
	assert_non_null(text);
	json_error_t je;
	json_t *root = json_loads(text, 0, &je);
	if (!root)
		fail_msg("rotation is not JSON (%s): %s", je.text, text);
	assert_int_equal(json_unpack(root, "{s:I,s:{s:I,s:I}}", "cap", cap, name, "rotations",
				     rotations, "dropped", dropped),
			 0);
	json_decref(root);
	free(text);
}

/* NAME.1 followed by NAME: what the tree shows as NAME. */
static char *kept(const char *dir, const char *name)
{
	char old[64];
	snprintf(old, sizeof(old), "%s.1", name);
	char *a = jft_read_in(dir, old), *b = jft_read_in(dir, name);
	assert_non_null(a);
	assert_non_null(b);
	char *t = malloc(strlen(a) + strlen(b) + 1);
	assert_non_null(t);
	strcpy(t, a);
	strcat(t, b);
	free(a);
	free(b);
	return t;
}

/*
 * A process printing 11x the cap: stdout and logs rotate, stderr (one line)
 * does not.  What stays is at most 2 x cap per file, at least cap of the
 * latest output, the tail exactly as printed, and the record adds up.
 */
static void test_log_rotate(void **state)
{
	enum { CAP = 64 * 1024, LAST = 120000 };
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	char *argv[] = { "/bin/sh", "-c", "seq 1 120000; echo done >&2", NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };
	struct jf_launch l = {
		.run_dir = dir,
		.cwd = dir,
		.uid = getuid(),
		.gid = getgid(),
		.procs = &p,
		.nprocs = 1,
		.log_cap_bytes = CAP,
	};
	struct jf_error err = { 0 };
	json_int_t cap, rot, dropped;

	/* what seq prints */
	size_t total = 0;
	char *all = malloc(8 * LAST);
	assert_non_null(all);
	for (int i = 1; i <= LAST; i++)
		total += (size_t)sprintf(all + total, "%d\n", i);
	assert_true(total > 10 * CAP);

	run_dir(f, dir, sizeof(dir));
	assert_int_equal(jf_runner_start(f->be, &l, 1, &st, &err), JF_OK);
	expect_result(f->be, 20000, &res);
	assert_int_equal(res.exit_code, 0);

	/* stdout: cut at the cap exactly */
	assert_int_equal(file_size(dir, "stdout.1"), CAP);
	assert_true(file_size(dir, "stdout") <= CAP);
	char *out = kept(dir, "stdout");
	size_t n = strlen(out);
	assert_true(n >= CAP && n <= 2 * CAP);
	assert_memory_equal(out, all + total - n, n); /* the tail, as printed */
	rotation_of(dir, "stdout", &cap, &rot, &dropped);
	assert_int_equal(cap, CAP);
	assert_int_equal(rot, (total - 1) / CAP);
	assert_int_equal((size_t)dropped + n, total);
	free(out);

	/* logs: whole lines in each file; the numbers in order up to the last */
	assert_true(file_size(dir, "logs.1") <= CAP && file_size(dir, "logs") <= CAP);
	char *lg = kept(dir, "logs");
	n = strlen(lg);
	assert_true(n >= CAP - 16 && n <= 2 * CAP);
	rotation_of(dir, "logs", &cap, &rot, &dropped);
	assert_true(rot >= (json_int_t)((total - 1) / CAP));
	assert_int_equal((size_t)dropped + n, total + strlen("done\n"));
	/* each file ends a line, so each begins one; and the kept part begins
	 * where the dropped bytes end: the first kept line is whole */
	const char *names[] = { "logs.1", "logs" };
	for (int i = 0; i < 2; i++) {
		char *t = jft_read_in(dir, names[i]);
		assert_non_null(t);
		size_t len = strlen(t);
		assert_true(len > 0 && t[len - 1] == '\n');
		free(t);
	}
	if (strncmp(lg, "done\n", 5) != 0) {
		int first = atoi(lg);
		size_t at = 0;
		for (int i = 1; i < first; i++)
			at += (size_t)snprintf(NULL, 0, "%d\n", i);
		assert_true(at == (size_t)dropped || at + 5 == (size_t)dropped);
	}
	int done = 0, expect = -1;
	for (char *line = strtok(lg, "\n"); line; line = strtok(NULL, "\n")) {
		if (!strcmp(line, "done")) {
			done++;
			continue;
		}
		int v = atoi(line);
		if (expect >= 0)
			assert_int_equal(v, expect);
		expect = v + 1;
	}
	assert_int_equal(done, 1);
	assert_int_equal(expect, LAST + 1);
	free(lg);

	/* stderr: under the cap, never rotated */
	char *e = jft_read_in(dir, "stderr");
	assert_string_equal(e, "done\n");
	free(e);
	assert_int_equal(file_size(dir, "stderr.1"), -1);
	rotation_of(dir, "stderr", &cap, &rot, &dropped);
	assert_int_equal(rot, 0);
	assert_int_equal(dropped, 0);
	free(all);
}

/* Without a cap nothing rotates and no record is written. */
static void test_log_no_cap(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	char *argv[] = { "/bin/sh", "-c", "yes 0123456789abcdef | head -c 1000000", NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };
	struct jf_launch l = {
		.run_dir = dir,
		.cwd = dir,
		.uid = getuid(),
		.gid = getgid(),
		.procs = &p,
		.nprocs = 1,
		.log_cap_bytes = 0,
	};
	struct jf_error err = { 0 };

	run_dir(f, dir, sizeof(dir));
	assert_int_equal(jf_runner_start(f->be, &l, 1, &st, &err), JF_OK);
	expect_result(f->be, 10000, &res);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(file_size(dir, "stdout"), 1000000);
	assert_int_equal(file_size(dir, "logs"), 1000001); /* the last line ended */
	assert_int_equal(file_size(dir, "stdout.1"), -1);
	assert_int_equal(file_size(dir, "rotation"), -1);
}

/* Two processes' lines interleaved in logs stay whole across rotations,
 * and a line longer than the cap is cut rather than kept whole. */
static void test_log_rotate_lines(void **state)
{
	enum { CAP = 4096 };
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	/* b's last lines come after a is done (and its output had time to be
	 * read): they are what the kept tail must end with, however the two
	 * were scheduled */
	char *a[] = { "/bin/sh", "-c",
		      "i=0; while [ $i -lt 2000 ]; do echo a-$i; i=$((i+1)); done; "
		      "touch a-done",
		      NULL };
	char *b[] = { "/bin/sh", "-c",
		      "i=0; while [ $i -lt 2000 ]; do echo b-$i >&2; "
		      "i=$((i+1)); done; while [ ! -e a-done ]; do sleep 0.05; done; sleep 0.3; "
		      "head -c 10000 /dev/zero | tr '\\0' x; echo; echo end",
		      NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc p[2] = {
		{ .name = "a", .argv = a, .envp = envp },
		{ .name = "b", .argv = b, .envp = envp },
	};
	struct jf_launch l = {
		.run_dir = dir,
		.cwd = dir,
		.uid = getuid(),
		.gid = getgid(),
		.procs = p,
		.nprocs = 2,
		.log_cap_bytes = CAP,
	};
	struct jf_error err = { 0 };

	run_dir(f, dir, sizeof(dir));
	assert_int_equal(jf_runner_start(f->be, &l, 1, &st, &err), JF_OK);
	expect_result(f->be, 20000, &res);
	assert_int_equal(res.exit_code, 0);
	assert_true(file_size(dir, "logs") <= CAP && file_size(dir, "logs.1") <= CAP);
	char *lg = kept(dir, "logs");
	size_t n = strlen(lg);
	assert_true(n > 0 && lg[n - 1] == '\n');
	assert_non_null(strstr(lg, "[b] end\n"));
	/* every line after the first is whole: "[a] a-N", "[b] b-N", or the
	 * pieces of the long line (cut at the cap, prefixed once) */
	char *nl = strchr(lg, '\n');
	assert_non_null(nl);
	for (char *line = nl + 1; *line; line = strchr(line, '\n') + 1) {
		size_t len = (size_t)(strchr(line, '\n') - line);
		if (line[0] == 'x') {
			assert_true(strspn(line, "x") == len);
			continue;
		}
		assert_true(!strncmp(line, "[a] a-", 6) || !strncmp(line, "[b] b-", 6) ||
			    !strncmp(line, "[b] x", 5) || !strncmp(line, "[b] end", 7));
	}
	free(lg);
	char *o = kept(dir, "stdout");
	n = strlen(o);
	assert_true(n >= CAP && n <= 2 * CAP);
	assert_string_equal(o + n - 4, "end\n");
	free(o);
}

static void test_env_cwd(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX], cwd[PATH_MAX + 8], real[PATH_MAX], want[2 * PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	char bin[PATH_MAX + 8], tool[PATH_MAX + 16], path[2 * PATH_MAX];
	/* mytool is found only through the PATH in envp. */
	char *argv[] = { "mytool", NULL };
	char *envp[] = { path, "JOB_NAME=demo run", "EMPTY=", "ODD=a=b c", NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };

	run_dir(f, dir, sizeof(dir));
	snprintf(cwd, sizeof(cwd), "%s/work", dir);
	assert_int_equal(mkdir(cwd, 0755), 0);
	assert_non_null(realpath(cwd, real));
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	assert_int_equal(mkdir(bin, 0755), 0);
	snprintf(tool, sizeof(tool), "%s/mytool", bin);
	FILE *fp = fopen(tool, "w");
	assert_non_null(fp);
	fputs("#!/bin/sh\necho \"$JOB_NAME|$EMPTY|$ODD\"; pwd; echo \"$HOME\"\n"
	      "exec ls -l /proc/self/fd > ../fds\n",
	      fp);
	fclose(fp);
	assert_int_equal(chmod(tool, 0755), 0);
	snprintf(path, sizeof(path), "PATH=%s:/usr/bin:/bin", bin);
	struct jf_launch l = {
		.run_dir = dir,
		.cwd = cwd,
		.uid = getuid(),
		.gid = getgid(),
		.procs = &p,
		.nprocs = 1,
	};
	struct jf_error err = { 0 };
	assert_int_equal(jf_runner_start(f->be, &l, 1, &st, &err), JF_OK);
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.exit_code, 0);
	char *out = jft_read_in(dir, "stdout");
	/* Nothing of the test's own env. */
	snprintf(want, sizeof(want), "demo run||a=b c\n%s\n\n", real);
	assert_string_equal(out, want);
	/*
	 * No fd of the shim's or the daemon's: 0 is /dev/null, 1 is the stdout
	 * pipe (here the redirection), 2 the stderr pipe, 3 is ls's own
	 * directory, nothing else.
	 */
	char *fds = jft_read_in(dir, "fds");
	assert_non_null(fds);
	int n = 0;
	for (char *save, *tok = strtok_r(fds, "\n", &save); tok;
	     tok = strtok_r(NULL, "\n", &save)) {
		char *arrow = strstr(tok, " -> ");
		if (!arrow)
			continue; /* "total 0" */
		const char *target = arrow + 4;
		while (arrow > tok && arrow[-1] != ' ')
			arrow--;
		int fd = atoi(arrow);
		if (fd == 0)
			assert_string_equal(target, "/dev/null");
		else if (fd == 2)
			assert_true(strncmp(target, "pipe:", 5) == 0);
		else if (fd > 3)
			fail_msg("fd leaked into the process: %s", tok);
		n++;
	}
	assert_int_equal(n, 4);
	free(fds);
	free(out);
}

/* As root: a run for another user runs as that user. */
static void test_drop_privileges(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	struct passwd *pw = getpwnam("nobody");

	if (geteuid() != 0 || !pw) {
		skip();
		return;
	}
	run_dir(f, dir, sizeof(dir));
	chmod(f->dir, 0755);
	char *argv[] = { "sh", "-c", "id -u; id -g; touch x 2>/dev/null || echo denied", NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };
	struct jf_launch l = {
		.run_dir = dir,
		.cwd = dir,
		.uid = pw->pw_uid,
		.gid = pw->pw_gid,
		.procs = &p,
		.nprocs = 1,
	};
	struct jf_error err = { 0 };
	assert_int_equal(jf_runner_start(f->be, &l, 1, &st, &err), JF_OK);
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.exit_code, 0);
	char *out = jft_read_in(dir, "stdout");
	char want[64];
	snprintf(want, sizeof(want), "%u\n%u\ndenied\n", (unsigned)pw->pw_uid,
		 (unsigned)pw->pw_gid);
	assert_string_equal(out, want);
	free(out);
}

static void test_bad_launch(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_error err = { 0 };
	char *argv[] = { NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = argv };
	struct jf_launch l = { .run_dir = dir, .procs = &p, .nprocs = 1 };

	run_dir(f, dir, sizeof(dir));
	assert_int_equal(jf_runner_start(f->be, &l, 1, &st, &err), JF_EINVAL);
	l.nprocs = 0;
	assert_int_equal(jf_runner_start(f->be, &l, 1, &st, &err), JF_EINVAL);

	/* A run directory the shim cannot use: an error, no run. */
	char *ok[] = { "true", NULL };
	struct jf_proc q = { .name = "main", .argv = ok, .envp = ok };
	char gone[PATH_MAX + 8];
	snprintf(gone, sizeof(gone), "%s/missing", dir);
	struct jf_launch m = { .run_dir = gone, .procs = &q, .nprocs = 1 };
	assert_int_equal(jf_runner_start(f->be, &m, 1, &st, &err), JF_EIO);

	/* The shim cannot open its output files: its "error" line, no run -
	 * an end as a start failure, with no `started` before it. */
	char *echo[] = { "echo", "x", NULL };
	struct jf_proc e = { .name = "main", .argv = echo, .envp = ok };
	char blocked[PATH_MAX], sub[PATH_MAX + 8];
	run_dir(f, blocked, sizeof(blocked));
	snprintf(sub, sizeof(sub), "%s/stdout", blocked);
	assert_int_equal(mkdir(sub, 0755), 0);
	struct jf_launch b = { .run_dir = blocked, .procs = &e, .nprocs = 1 };
	memset(&st, 0, sizeof(st));
	assert_int_equal(jf_runner_start(f->be, &b, 9, &st, &err), JF_OK);
	assert_true(st.pending);
	assert_false(wait_started(f->be, 9, 5000, &st));
	struct jf_run_result res;
	expect_result(f->be, 100, &res);
	assert_int_equal(res.cookie, 9);
	assert_true(res.start_failed);
	assert_false(res.lost);
	assert_int_equal(res.exit_code, 127);
	assert_non_null(strstr(res.message, "jobfs-shim: "));
	assert_non_null(strstr(res.message, "stdout"));
	assert_int_equal(jf_runner_reap(f->be, &res, 1), 0);
	assert_int_equal(jf_runner_reap(f->be, NULL, 0), 0);

	struct jf_runner *be = jf_local_new("/nonexistent/jobfs-shim", &err);
	assert_null(be);
	assert_int_equal(err.code, JF_EINVAL);
}

static void test_cpus(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;
	char *argv[] = { "grep", "Cpus_allowed_list", "/proc/self/status", NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };
	/* 100000 is on no host: the logical cluster's ids this host lacks are dropped. */
	int cpus[] = { 0, 100000 };
	struct jf_launch l = {
		.run_dir = dir,
		.cwd = dir,
		.uid = getuid(),
		.gid = getgid(),
		.procs = &p,
		.nprocs = 1,
		.cpus = cpus,
		.ncpus = 2,
	};
	struct jf_error err = { 0 };

	run_dir(f, dir, sizeof(dir));
	assert_int_equal(jf_runner_start(f->be, &l, 1, &st, &err), JF_OK);
	expect_result(f->be, 5000, &res);
	assert_int_equal(res.exit_code, 0);
	char *out = jft_read_in(dir, "stdout");
	assert_string_equal(out, "Cpus_allowed_list:\t0\n");
	free(out);
}

static bool pid_gone(pid_t pid, int timeout_ms)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return errno == ESRCH;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	bool gone = poll(&p, 1, timeout_ms) == 1;
	close(fd);
	return gone;
}

static pid_t read_pid(const char *dir, const char *name)
{
	char *t = jft_read_in(dir, name);
	assert_non_null(t);
	pid_t pid = atoi(t);
	free(t);
	assert_true(pid > 0);
	return pid;
}

/* The main process ends: what is left in its process group is killed. */
static void test_group_cleanup(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;

	run_dir(f, dir, sizeof(dir));
	start_sh(f->be, dir, "sleep 30 & echo $! > bg; exit 2", 1, &st);
	expect_result(f->be, 1500, &res); /* well before the 2 s drain */
	assert_int_equal(res.exit_code, 2);
	assert_true(pid_gone(read_pid(dir, "bg"), 2000));
}

/* A grandchild that left the group holds the pipes: given up after 2 s. */
static void test_drain_timeout(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_run_started st;
	struct jf_run_result res;

	run_dir(f, dir, sizeof(dir));
	start_sh(f->be, dir,
		 "setsid sleep 30 & echo $! > bg; echo bye; sleep 0.3; "
		 "date +%s%3N > main_end; exit 0",
		 1, &st);
	expect_result(f->be, 6000, &res);
	pid_t bg = read_pid(dir, "bg");
	kill(bg, SIGKILL);
	assert_int_equal(res.exit_code, 0);
	/* the end is when main was reaped, not when the drain gave up: the
	 * result, written after the drain, is SHIM_DRAIN_MS (2 s) younger */
	char *me = jft_read_in(dir, "main_end");
	assert_non_null(me);
	int64_t main_end = strtoll(me, NULL, 10);
	free(me);
	char rp[PATH_MAX + 16];
	snprintf(rp, sizeof(rp), "%s/result", dir);
	struct stat rs;
	assert_int_equal(stat(rp, &rs), 0);
	int64_t written = (int64_t)rs.st_mtim.tv_sec * 1000 + rs.st_mtim.tv_nsec / 1000000;
	assert_true(res.end_ms >= main_end);
	assert_true(written - res.end_ms >= 1900);
	char *out = jft_read_in(dir, "stdout");
	assert_string_equal(out, "bye\n");
	free(out);
}

/* A shim behind a wrapper script (it keeps fd 3): "sleep 1; exec SHIM" or
 * one that never becomes a shim at all. */
static struct jf_runner *wrapped_backend(struct fix *f, const char *name, const char *body)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp, "#!/bin/sh\n%s\n", body);
	fclose(fp);
	assert_int_equal(chmod(path, 0755), 0);
	struct jf_error err = { 0 };
	struct jf_runner *be = jf_local_new(path, &err);
	if (!be)
		fail_msg("jf_local_new: %s", err.msg);
	return be;
}

/* Start argv (one container, PATH only) under be in a fresh run directory
 * (its path in dir): start() returns at once, the start pending. */
static void start_pending(struct fix *f, struct jf_runner *be, char *const *argv, uint64_t cookie,
			  char *dir, size_t n)
{
	char *envp[] = { PATH, NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };
	struct jf_run_started st;
	struct jf_error err = { 0 };
	run_dir(f, dir, n);
	struct jf_launch l = { .run_dir = dir, .cwd = dir, .procs = &p, .nprocs = 1 };
	memset(&st, 0, sizeof(st));
	if (jf_runner_start(be, &l, cookie, &st, &err) != JF_OK)
		fail_msg("start: %s", err.msg);
	assert_true(st.pending);
}

/*
 * start() returns at once, before the shim has started anything; the
 * `started` result carries the real start time (the shim's ready line),
 * not the time of the spawn, and the end has the same one.
 */
static void test_start_pending(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX], body[PATH_MAX + 64];
	snprintf(body, sizeof(body), "sleep 1; exec '%s' \"$@\"", jft_shim_path());
	struct jf_runner *be = wrapped_backend(f, "slow-shim", body);
	char *argv[] = { "/bin/sh", "-c", "echo hi", NULL };
	char *envp[] = { PATH, NULL };
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };
	struct jf_run_started st;
	struct jf_run_result res;
	struct jf_error err = { 0 };

	run_dir(f, dir, sizeof(dir));
	struct jf_launch l = { .run_dir = dir,
			       .cwd = dir,
			       .uid = getuid(),
			       .gid = getgid(),
			       .procs = &p,
			       .nprocs = 1 };
	memset(&st, 0, sizeof(st));
	int64_t t0 = jft_wall_ms();
	assert_int_equal(jf_runner_start(be, &l, 5, &st, &err), JF_OK);
	assert_true(st.pending); /* returned before the shim (1 s away) said anything */
	assert_int_equal(st.pid, 0);
	assert_int_equal(st.start_ms, 0);
	/* signals reach it from the start: the handle is the shim's */
	pid_t shim = handle_pid(st.handle);
	assert_true(shim > 0);
	assert_true(wait_started(be, 5, 5000, &st));
	assert_true(st.pid > 0 && st.pid != shim);
	assert_true(st.start_ms >= t0 + 900);
	expect_result(be, 5000, &res);
	assert_int_equal(res.cookie, 5);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.start_ms, st.start_ms);
	jf_runner_free(be);
}

/* A supervisor that dies without its ready line: a start failure saying how. */
static void test_start_shim_dies(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_runner *be = wrapped_backend(f, "bad-shim", "exit 3");
	char *argv[] = { "true", NULL };
	struct jf_run_started st;
	struct jf_run_result res;

	start_pending(f, be, argv, 6, dir, sizeof(dir));
	assert_false(wait_started(be, 6, 5000, &st));
	expect_result(be, 100, &res);
	assert_int_equal(res.cookie, 6);
	assert_true(res.start_failed);
	assert_int_equal(res.exit_code, 127);
	assert_non_null(strstr(res.message, "ended before starting anything"));
	assert_non_null(strstr(res.message, "exit 3"));
	jf_runner_free(be);
}

/* A supervisor that says nothing before the deadline is given up: a start
 * failure saying so, and its processes die with it. */
static void test_start_ready_timeout(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_runner *be = wrapped_backend(f, "mute-shim", "sleep 30");
	jf_local_set_ready_timeout(be, 300);
	char *argv[] = { "true", NULL };
	struct jf_run_started st;
	struct jf_run_result res;

	start_pending(f, be, argv, 8, dir, sizeof(dir));
	assert_false(wait_started(be, 8, 5000, &st));
	expect_result(be, 100, &res);
	assert_int_equal(res.cookie, 8);
	assert_true(res.start_failed);
	assert_non_null(strstr(res.message, "said nothing in 0.3 s"));
	jf_runner_free(be);
}

/* A supervisor that claimed its run directory but is slow to say so is
 * not given up at the deadline: its processes may be running, and giving
 * the start up would run the task twice.  Its start counts from its claim. */
static void test_start_claimed_slow(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	struct jf_runner *be =
		wrapped_backend(f, "slow-claim-shim",
				"printf 'local:%d:0 1700000000123\\n' $$ > \"$1/claim\"; sleep 1; "
				"echo yes > \"$1/survived\"");
	jf_local_set_ready_timeout(be, 300);
	char *argv[] = { "true", NULL };
	struct jf_run_result res;

	start_pending(f, be, argv, 12, dir, sizeof(dir));
	struct jf_run_started got;
	assert_true(wait_started(be, 12, 5000, &got));
	assert_int_equal(got.start_ms, 1700000000123);
	expect_result(be, 5000, &res);
	assert_int_equal(res.cookie, 12);
	assert_false(res.start_failed);
	char *survived = jft_read_in(dir, "survived");
	assert_non_null(survived); /* not killed at the deadline */
	free(survived);
	jf_runner_free(be);
}

/* A caller busy past the deadline (reap() not called) does not make a
 * shim that reported in time a failure.  A starts, its deadline passes
 * (the timer is due); B starts after that and reports at once; the caller
 * reaps only after B's deadline too: the timer's turn comes before B's
 * line is read, and B must not be killed for a line sitting in its pipe
 * (why test_many failed under ASan on a loaded machine: 200 starts took
 * longer than the deadline before the first reap). */
static void test_start_confirmed_late_reap(void **state)
{
	struct fix *f = *state;
	const int64_t deadline = 2000;
	jf_local_set_ready_timeout(f->be, deadline);
	char dirs[2][PATH_MAX];
	char *argv[2][4] = { { "/bin/sh", "-c", "exit 4", NULL },
			     { "/bin/sh", "-c", "exit 5", NULL } };
	for (int k = 0; k < 2; k++) {
		start_pending(f, f->be, argv[k], (uint64_t)(10 + k), dirs[k], sizeof(dirs[k]));
		usleep((useconds_t)(deadline + 200) * 1000); /* past its deadline, unread */
	}
	int ended = 0;
	bool started[2] = { false, false };
	struct jf_run_result res[8];
	for (int64_t end = jft_wall_ms() + 10000; ended < 2 && jft_wall_ms() < end;) {
		struct pollfd pf = { .fd = jf_runner_fd(f->be), .events = POLLIN };
		poll(&pf, 1, 100);
		size_t n = jf_runner_reap(f->be, res, 8);
		for (size_t i = 0; i < n; i++) {
			int k = (int)res[i].cookie - 10;
			assert_true(k == 0 || k == 1);
			if (res[i].started) {
				started[k] = true;
				continue;
			}
			if (res[i].start_failed)
				fail_msg("run %d: a start failure: %s", k, res[i].message);
			assert_true(started[k]);
			assert_int_equal(res[i].exit_code, 4 + k);
			ended++;
		}
	}
	assert_int_equal(ended, 2);
}

#define MANY 200

static void test_many(void **state)
{
	struct fix *f = *state;
	static char dirs[MANY][PATH_MAX];
	static char scripts[MANY][32];
	struct jf_run_started st;
	/* reaped JF_ENGINE_BATCH (4) at a time, as the engine does, into an
	 * array with one more: the last must never be written (a timer's
	 * turn once filled the batch and the next event wrote past it) */
	struct jf_run_result res[5];
	bool seen[MANY] = { false }, started[MANY] = { false };
	struct timespec t0, t1;
	char *envp[] = { PATH, NULL };
	struct jf_error err = { 0 };

	for (int i = 0; i < MANY; i++) {
		run_dir(f, dirs[i], sizeof(dirs[i]));
		snprintf(scripts[i], sizeof(scripts[i]), "sleep 0.2; exit %d", i % 256);
	}
	/* start() does not wait for the shims: their starts are confirmed later */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < MANY; i++) {
		char *argv[] = { "/bin/sh", "-c", scripts[i], NULL };
		struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };
		struct jf_launch l = { .run_dir = dirs[i],
				       .cwd = dirs[i],
				       .uid = getuid(),
				       .gid = getgid(),
				       .procs = &p,
				       .nprocs = 1 };
		memset(&st, 0, sizeof(st));
		assert_int_equal(jf_runner_start(f->be, &l, (uint64_t)i, &st, &err), JF_OK);
		assert_true(st.pending);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	print_message("%d starts: %.1f ms, %.3f ms per start()\n", MANY, ms, ms / MANY);

	int got = 0;
	int64_t deadline = jft_wall_ms() + 30000;
	while (got < MANY && jft_wall_ms() < deadline) {
		struct pollfd p = { .fd = jf_runner_fd(f->be), .events = POLLIN };
		poll(&p, 1, 1000);
		memset(&res[4], 0xa5, sizeof(res[4]));
		size_t n = jf_runner_reap(f->be, res, 4);
		assert_true(n <= 4);
		assert_int_equal(res[4].cookie, UINT64_C(0xa5a5a5a5a5a5a5a5));
		for (size_t i = 0; i < n; i++) {
			assert_true(res[i].cookie < MANY);
			if (res[i].started) {
				/* once, before its end, with the shim's start time */
				assert_false(started[res[i].cookie]);
				assert_false(seen[res[i].cookie]);
				assert_true(res[i].pid > 0 && res[i].start_ms > 0);
				started[res[i].cookie] = true;
				continue;
			}
			if (!started[res[i].cookie])
				fail_msg("run %d ended without a start: %s", (int)res[i].cookie,
					 res[i].message);
			assert_false(seen[res[i].cookie]);
			seen[res[i].cookie] = true;
			assert_false(res[i].lost);
			assert_int_equal(res[i].exit_code, (int)(res[i].cookie % 256));
			got++;
		}
	}
	assert_int_equal(got, MANY);
}

/* ---- containers (reference 8.1): real images, crun, jobfs-image ---- */

/* root, crun and the test registry's layout (scripts/registry.sh), else
 * skipped - or failed, where JOBFS_OCI_REQUIRED says they must run */
static bool have_containers(void)
{
	bool ok = geteuid() == 0 && access("/usr/bin/crun", X_OK) == 0 &&
		  getenv("JOBFS_REGISTRY_LAYOUT") && getenv("JOBFS_REGISTRY");
	if (!ok && getenv("JOBFS_OCI_REQUIRED"))
		fail_msg("JOBFS_OCI_REQUIRED: root, crun and JOBFS_REGISTRY(_LAYOUT) are needed");
	return ok;
}

/* Every result of cookie until its end, in order, into v (at most n). */
static size_t results_until_end(struct jf_runner *be, uint64_t cookie, struct jf_run_result *v,
				size_t n)
{
	size_t k = 0;
	int64_t deadline = jft_wall_ms() + 60000;
	while (k < n && jft_wall_ms() < deadline) {
		struct jf_run_result res;
		while (k < n && jf_runner_reap(be, &res, 1) == 1) {
			if (res.cookie != cookie)
				continue;
			v[k++] = res;
			if (!res.started && !res.note)
				return k;
		}
		struct pollfd p = { .fd = jf_runner_fd(be), .events = POLLIN };
		poll(&p, 1, 200);
	}
	fail_msg("run %llu did not end in 60 s", (unsigned long long)cookie);
	return k;
}

static void launch_image(struct fix *f, const char *dir, const char *ref, const char *cache,
			 char *const *args, uint64_t cookie)
{
	static char *const argv[] = { "unused", NULL };
	static char *const envp[] = { PATH, NULL };
	static char *const ienv[] = { "GREETING=from-the-node", NULL };
	const char *insecure[] = { getenv("JOBFS_REGISTRY"), "127.0.0.1:1" };
	struct jf_proc_image im = {
		.reference = ref, .pull_policy = "IfNotPresent", .args = args, .env = ienv
	};
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp, .image = &im };
	struct jf_runtime_conf rt = { .oci_runtime = "/usr/bin/crun",
				      .image_tool = JF_BUILD_DIR "/tools/jobfs-image",
				      .cache_dir = cache,
				      .insecure = insecure,
				      .ninsecure = 2 };
	struct jf_launch l = { .run_dir = dir,
			       .cwd = dir,
			       .uid = 1000,
			       .gid = 1000,
			       .procs = &p,
			       .nprocs = 1,
			       .rt = &rt,
			       .shm_bytes = 8 << 20 };
	struct jf_run_started st = { 0 };
	struct jf_error err = { 0 };
	if (jf_runner_start(f->be, &l, cookie, &st, &err) != JF_OK)
		fail_msg("start: %s", err.msg);
}

static void test_container(void **state)
{
	struct fix *f = *state;
	if (!have_containers())
		skip();
	char dir[PATH_MAX], cache[PATH_MAX + 16], ref[PATH_MAX + 16];
	snprintf(cache, sizeof(cache), "%s/cache", f->dir);
	snprintf(ref, sizeof(ref), "%s/jobfs/busybox:latest", getenv("JOBFS_REGISTRY"));
	static char *const args[] = { "sh", "-c",
				      "echo in-container $GREETING; id -u; "
				      "df -k /dev/shm | tail -1",
				      NULL };
	struct jf_run_result v[16];
	for (int round = 0; round < 2; round++) {
		run_dir(f, dir, sizeof(dir));
		launch_image(f, dir, ref, cache, args, 70 + round);
		size_t n = results_until_end(f->be, 70 + round, v, 16);
		/* notes, in order: (Pulling, Pulled) or Pulled alone, Created;
		 * then the start, then the end */
		size_t k = 0;
		if (round == 0) {
			assert_true(v[k].note);
			assert_string_equal(v[k].note_reason, "Pulling");
			assert_non_null(strstr(v[k++].message, "Pulling image \""));
		}
		/* the digest, for the node's status, then Kubernetes' Pulled */
		assert_true(v[k].note);
		assert_string_equal(v[k].note_reason, "ImageDigest");
		assert_true(strncmp(v[k++].message, "main sha256:", 12) == 0);
		assert_true(v[k].note);
		assert_string_equal(v[k].note_reason, "Pulled");
		assert_non_null(strstr(v[k++].message, round == 0 ? "Successfully pulled image"
								  : "already present on machine"));
		assert_true(v[k].note);
		assert_string_equal(v[k++].note_reason, "Created");
		assert_true(v[k++].started);
		assert_int_equal(n, k + 1);
		struct jf_run_result *end = &v[k];
		assert_false(end->start_failed);
		assert_int_equal(end->exit_code, 0);
		assert_true(strncmp(end->procs[0].image_digest, "sha256:", 7) == 0);
		char *out = jft_read_in(dir, "stdout");
		assert_non_null(out);
		assert_non_null(strstr(out, "in-container from-the-node\n1000\n"));
		assert_non_null(strstr(out, " 8192 ")); /* the node's /dev/shm */
		free(out);
		/* the bundle is gone; the logs stay */
		char p[PATH_MAX + 16];
		snprintf(p, sizeof(p), "%s/ctr", dir);
		assert_false(jft_exists(p));
	}
}

/* A supervisor killed with SIGKILL: the run is lost, and its container
 * (no process of the shim's group, no death signal) is killed with it */
static void test_container_shim_killed(void **state)
{
	struct fix *f = *state;
	if (!have_containers())
		skip();
	char dir[PATH_MAX], cache[PATH_MAX + 16], ref[PATH_MAX + 16];
	snprintf(cache, sizeof(cache), "%s/cache", f->dir);
	snprintf(ref, sizeof(ref), "%s/jobfs/busybox:latest", getenv("JOBFS_REGISTRY"));
	static char *const args[] = { "sleep", "60", NULL };
	run_dir(f, dir, sizeof(dir));
	launch_image(f, dir, ref, cache, args, 90);
	struct jf_run_result v[16];
	size_t k = 0;
	pid_t init = 0;
	int64_t deadline = jft_wall_ms() + 60000;
	while (!init && jft_wall_ms() < deadline) {
		while (k < 16 && jf_runner_reap(f->be, &v[k], 1) == 1)
			if (v[k++].started)
				init = v[k - 1].pid;
		struct pollfd p = { .fd = jf_runner_fd(f->be), .events = POLLIN };
		poll(&p, 1, 200);
	}
	assert_true(init > 0);
	assert_int_equal(kill(init, 0), 0);
	char *claim = jft_read_in(dir, "claim");
	assert_non_null(claim);
	int shim = 0;
	assert_int_equal(sscanf(claim, "local:%d:", &shim), 1);
	free(claim);
	assert_int_equal(kill(shim, SIGKILL), 0);
	struct jf_run_result end;
	expect_result(f->be, 20000, &end);
	assert_true(end.lost);
	for (int i = 0; i < 500 && kill(init, 0) == 0; i++)
		usleep(10000);
	assert_int_equal(kill(init, 0), -1);
	assert_int_equal(errno, ESRCH);
	/* and the cgroups it made are gone, in every hierarchy */
	DIR *d = opendir("/sys/fs/cgroup");
	assert_non_null(d);
	struct dirent *de;
	char p[PATH_MAX];
	while ((de = readdir(d))) {
		snprintf(p, sizeof(p), "/sys/fs/cgroup/%s/jobfs/shim-%d", de->d_name, shim);
		if (de->d_name[0] != '.' && access(p, F_OK) == 0)
			fail_msg("%s is left", p);
	}
	closedir(d);
	snprintf(p, sizeof(p), "/sys/fs/cgroup/jobfs/shim-%d", shim);
	assert_int_equal(access(p, F_OK), -1);
}

static void test_container_pull_failed(void **state)
{
	struct fix *f = *state;
	if (!have_containers())
		skip();
	char dir[PATH_MAX], cache[PATH_MAX + 16];
	snprintf(cache, sizeof(cache), "%s/cache", f->dir);
	static char *const args[] = { "true", NULL };
	run_dir(f, dir, sizeof(dir));
	launch_image(f, dir, "127.0.0.1:1/jobfs/none:1", cache, args, 80);
	struct jf_run_result v[8];
	size_t n = results_until_end(f->be, 80, v, 8);
	assert_int_equal(n, 3); /* Pulling, Failed, the end: never started */
	assert_true(v[0].note);
	assert_string_equal(v[0].note_reason, "Pulling");
	assert_true(v[1].note);
	assert_string_equal(v[1].note_type, "Warning");
	assert_string_equal(v[1].note_reason, "Failed");
	assert_non_null(strstr(v[1].message, "Failed to pull image \"127.0.0.1:1/jobfs/none:1\""));
	assert_true(v[2].start_failed);
	assert_true(v[2].pull_failed);
	assert_non_null(strstr(v[2].message, "ErrImagePull: "));
	assert_non_null(strstr(v[2].message, "not reachable"));
	/* nothing was claimed: a restarted daemon cancels, nothing ran */
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/claim", dir);
	assert_false(jft_exists(p));
}

/* ---- storage (reference 8.3): emptydirs, volumes, eviction ---- */

struct ctr_spec {
	const char *name;
	char *const *args; /* sh's, in the test image */
	int64_t mem_bytes;
};

/* One node of containers cs (the test image, as uid 1000) with mounts. */
static void launch_storage(struct fix *f, const char *dir, const struct ctr_spec *cs, size_t n,
			   const struct jf_mount *mounts, size_t nmounts, int64_t evict_ms,
			   uint64_t cookie)
{
	static char *const argv[] = { "unused", NULL };
	static char *const envp[] = { PATH, NULL };
	static char *const ienv[] = { PATH, NULL };
	char cache[PATH_MAX + 16], ref[PATH_MAX + 16];
	snprintf(cache, sizeof(cache), "%s/cache", f->dir);
	snprintf(ref, sizeof(ref), "%s/jobfs/busybox:latest", getenv("JOBFS_REGISTRY"));
	const char *insecure[] = { getenv("JOBFS_REGISTRY") };
	struct jf_proc_image im[4];
	struct jf_proc p[4];
	assert_true(n <= 4);
	for (size_t i = 0; i < n; i++) {
		im[i] = (struct jf_proc_image){ .reference = ref,
						.pull_policy = "IfNotPresent",
						.args = cs[i].args,
						.env = ienv };
		p[i] = (struct jf_proc){ .name = cs[i].name,
					 .argv = argv,
					 .envp = envp,
					 .image = &im[i],
					 .mem_bytes = cs[i].mem_bytes };
	}
	struct jf_runtime_conf rt = { .oci_runtime = "/usr/bin/crun",
				      .image_tool = JF_BUILD_DIR "/tools/jobfs-image",
				      .cache_dir = cache,
				      .insecure = insecure,
				      .ninsecure = 1 };
	struct jf_launch l = { .run_dir = dir,
			       .cwd = dir,
			       .uid = 1000,
			       .gid = 1000,
			       .procs = p,
			       .nprocs = n,
			       .rt = &rt,
			       .mounts = mounts,
			       .nmounts = nmounts,
			       .evict_check_ms = evict_ms };
	struct jf_run_started st = { 0 };
	struct jf_error err = { 0 };
	if (jf_runner_start(f->be, &l, cookie, &st, &err) != JF_OK)
		fail_msg("start: %s", err.msg);
}

/* The end of cookie (its notes and start passed over). */
static struct jf_run_result storage_end(struct fix *f, uint64_t cookie)
{
	struct jf_run_result v[16];
	size_t n = results_until_end(f->be, cookie, v, 16);
	return v[n - 1];
}

/* a host directory for a volume, writable by the containers' uid */
static void host_dir(struct fix *f, const char *name, char *buf, size_t n)
{
	if (snprintf(buf, n, "%s/%s", f->dir, name) >= (int)n)
		fail_msg("path too long");
	assert_int_equal(mkdir(buf, 0777), 0);
	assert_int_equal(chmod(buf, 0777), 0);
}

/* Two containers share an emptydir on disk and a Memory one (a tmpfs of
 * its size); a volume is bound read-write, another and an object source
 * read-only; the emptydirs are gone after the end. */
static void test_storage(void **state)
{
	struct fix *f = *state;
	if (!have_containers())
		skip();
	char dir[PATH_MAX], vol[PATH_MAX], ro[PATH_MAX], obj[PATH_MAX];
	host_dir(f, "vol", vol, sizeof(vol));
	host_dir(f, "ro", ro, sizeof(ro));
	host_dir(f, "obj", obj, sizeof(obj));
	char seen[PATH_MAX + 16];
	snprintf(seen, sizeof(seen), "%s/seen", ro);
	jft_write_file(seen, "from the host\n");
	const struct jf_mount mounts[] = {
		{ .type = JF_MOUNT_EMPTYDIR, .name = "scratch", .path = "/scratch" },
		{ .type = JF_MOUNT_EMPTYDIR,
		  .name = "mem",
		  .path = "/mem",
		  .memory = true,
		  .size_bytes = 16 << 20 },
		{ .type = JF_MOUNT_VOLUME, .name = "vol", .source = vol, .path = "/vol" },
		{ .type = JF_MOUNT_VOLUME,
		  .name = "ro",
		  .source = ro,
		  .path = "/vol/ro",
		  .read_only = true },
		{ .type = JF_MOUNT_OBJECT, .name = "obj", .source = obj, .path = "/obj" },
	};
	static char *const writer[] = {
		"sh", "-c",
		"echo shared > /scratch/f.tmp && mv /scratch/f.tmp /scratch/f; "
		"echo mem > /mem/m; "
		"id -u > /vol/by-writer; stat -c '%a %u' /scratch > /vol/scratch-mode; "
		"grep ' /mem ' /proc/mounts > /vol/mem-mount; "
		"cat /vol/ro/seen > /vol/ro-read; "
		"touch /vol/ro/x 2> /vol/ro-err; echo \"exit $?\" >> /vol/ro-err; "
		"touch /obj/x 2> /vol/obj-err; echo \"exit $?\" >> /vol/obj-err; "
		"echo writer-done",
		NULL
	};
	static char *const reader[] = { "sh", "-c",
					"i=0; while [ ! -s /scratch/f ] && [ $i -lt 200 ]; do "
					"sleep 0.1; i=$((i+1)); done; "
					"echo \"read $(cat /scratch/f)\"; "
					"while [ ! -s /mem/m ]; do sleep 0.1; done; "
					"echo \"mem $(cat /mem/m)\"",
					NULL };
	const struct ctr_spec cs[] = { { "writer", writer, 0 }, { "reader", reader, 0 } };
	run_dir(f, dir, sizeof(dir));
	launch_storage(f, dir, cs, 2, mounts, 5, 0, 300);
	struct jf_run_result end = storage_end(f, 300);
	char *out = jft_read_in(dir, "stdout"), *err = jft_read_in(dir, "stderr");
	if (end.exit_code != 0 || end.start_failed)
		fail_msg("exit %d: %s; stderr: %s", end.exit_code, end.message, err ? err : "");
	assert_false(end.evicted);
	assert_non_null(strstr(out, "writer-done\n"));
	assert_non_null(strstr(out, "read shared\n")); /* one container wrote, the other read */
	assert_non_null(strstr(out, "mem mem\n"));
	free(out);
	free(err);
	/* read-write: what the container wrote is on the host, the writer's */
	char *t = jft_read_in(vol, "by-writer");
	assert_non_null(t);
	assert_string_equal(t, "1000\n");
	free(t);
	struct stat st;
	snprintf(seen, sizeof(seen), "%s/by-writer", vol);
	assert_int_equal(stat(seen, &st), 0);
	assert_int_equal(st.st_uid, 1000);
	/* the emptydir: the writer's, Kubernetes' mode */
	t = jft_read_in(vol, "scratch-mode");
	assert_non_null(t);
	assert_string_equal(t, "777 1000\n");
	free(t);
	/* Memory: a tmpfs of its size */
	t = jft_read_in(vol, "mem-mount");
	assert_non_null(t);
	if (strncmp(t, "tmpfs /mem tmpfs ", 17) != 0 || !strstr(t, "size=16384k"))
		fail_msg("/mem in /proc/mounts: %s", t);
	free(t);
	/* read-only: read, never written */
	t = jft_read_in(vol, "ro-read");
	assert_non_null(t);
	assert_string_equal(t, "from the host\n");
	free(t);
	static const char *const ro_errs[] = { "ro-err", "obj-err" };
	for (int k = 0; k < 2; k++) {
		t = jft_read_in(vol, ro_errs[k]);
		assert_non_null(t);
		if (!strstr(t, "Read-only file system") || !strstr(t, "exit 1"))
			fail_msg("%s: %s", ro_errs[k], t);
		free(t);
	}
	snprintf(seen, sizeof(seen), "%s/x", ro);
	assert_false(jft_exists(seen));
	snprintf(seen, sizeof(seen), "%s/x", obj);
	assert_false(jft_exists(seen));
	/* the node's scratch went with it; the host's directories stay */
	snprintf(seen, sizeof(seen), "%s/emptydir", dir);
	assert_false(jft_exists(seen));
	assert_true(jft_exists(vol));
}

/* An emptydir on disk written past its size: evicted as the kubelet does,
 * its words in the result and the node's stderr, the container SIGTERMed
 * then SIGKILLed (sh, its init, ignores the SIGTERM); the emptydir goes. */
static void test_storage_evicted(void **state)
{
	struct fix *f = *state;
	if (!have_containers())
		skip();
	char dir[PATH_MAX], p[PATH_MAX + 16];
	const struct jf_mount mounts[] = {
		{ .type = JF_MOUNT_EMPTYDIR,
		  .name = "scratch",
		  .path = "/scratch",
		  .size_bytes = 1 << 20 },
	};
	static char *const fill[] = { "sh", "-c",
				      "dd if=/dev/zero of=/scratch/big bs=4096 count=1024 && "
				      "echo filled && sleep 60",
				      NULL };
	const struct ctr_spec cs[] = { { "main", fill, 0 } };
	run_dir(f, dir, sizeof(dir));
	int64_t t0 = jft_mono_ms();
	launch_storage(f, dir, cs, 1, mounts, 1, 200, 310);
	struct jf_run_result end = storage_end(f, 310);
	int64_t took = jft_mono_ms() - t0;
	char *out = jft_read_in(dir, "stdout"), *err = jft_read_in(dir, "stderr");
	if (!end.evicted)
		fail_msg("not evicted: exit %d, %s; stderr: %s", end.exit_code, end.message,
			 err ? err : "");
	assert_string_equal(end.message,
			    "Usage of EmptyDir volume \"scratch\" exceeds the limit \"1Mi\".");
	assert_false(end.start_failed);
	assert_int_equal(end.exit_code, 137);
	assert_int_equal(end.procs[0].term_signal, SIGKILL);
	assert_non_null(strstr(out, "filled\n"));
	assert_non_null(strstr(err, "jobfs: evicted: Usage of EmptyDir volume \"scratch\" exceeds "
				    "the limit \"1Mi\".\n"));
	/* not the 60 s of its sleep: a check or two, the 2 s grace */
	if (took > 20000)
		fail_msg("evicted after %lld ms", (long long)took);
	free(out);
	free(err);
	snprintf(p, sizeof(p), "%s/emptydir", dir);
	assert_false(jft_exists(p));
	/* under its size: never evicted, at the default period or ours */
	static char *const small[] = {
		"sh", "-c",
		"dd if=/dev/zero of=/scratch/s bs=4096 count=16 2>/dev/null; "
		"sleep 1; echo kept",
		NULL
	};
	const struct ctr_spec cs2[] = { { "main", small, 0 } };
	run_dir(f, dir, sizeof(dir));
	launch_storage(f, dir, cs2, 1, mounts, 1, 100, 311);
	end = storage_end(f, 311);
	assert_false(end.evicted);
	assert_int_equal(end.exit_code, 0);
	out = jft_read_in(dir, "stdout");
	assert_non_null(strstr(out, "kept\n"));
	free(out);
}

/* A Memory emptydir's pages are charged to the container that writes
 * them: past the container's memory limit (32 MiB, the tmpfs 256 MiB),
 * its OOM kill. */
static void test_storage_memory_charged(void **state)
{
	struct fix *f = *state;
	if (!have_containers())
		skip();
	char dir[PATH_MAX];
	const struct jf_mount mounts[] = {
		{ .type = JF_MOUNT_EMPTYDIR,
		  .name = "mem",
		  .path = "/mem",
		  .memory = true,
		  .size_bytes = 256 << 20 },
	};
	static char *const fill[] = { "sh", "-c",
				      "exec dd if=/dev/zero of=/mem/fill bs=1048576 count=128",
				      NULL };
	const struct ctr_spec cs[] = { { "main", fill, 32 << 20 } };
	run_dir(f, dir, sizeof(dir));
	launch_storage(f, dir, cs, 1, mounts, 1, 0, 320);
	struct jf_run_result end = storage_end(f, 320);
	char *err = jft_read_in(dir, "stderr"), *out = jft_read_in(dir, "stdout");
	if (err && strstr(err, "limits not enforced")) {
		const char *req = getenv("JOBFS_CGROUP_REQUIRED");
		if (req && !strcmp(req, "1"))
			fail_msg("JOBFS_CGROUP_REQUIRED=1: %s", err);
		free(err);
		free(out);
		skip();
	}
	if (!end.procs[0].oom_killed)
		fail_msg("not OOM-killed: exit %d, %s; stdout: %s; stderr: %s", end.exit_code,
			 end.message, out ? out : "", err ? err : "");
	assert_int_equal(end.exit_code, 137);
	assert_false(end.evicted);
	free(err);
	free(out);
}

/* Storage on the host: refused, a start failure that says why. */
static void test_storage_host_refused(void **state)
{
	struct fix *f = *state;
	char dir[PATH_MAX];
	char *const argv[] = { "/bin/true", NULL };
	char *const envp[] = { PATH, NULL };
	const struct jf_mount mounts[] = {
		{ .type = JF_MOUNT_EMPTYDIR, .name = "scratch", .path = "/scratch" },
	};
	struct jf_proc p = { .name = "main", .argv = argv, .envp = envp };
	struct jf_launch l = { .run_dir = run_dir(f, dir, sizeof(dir)),
			       .cwd = dir,
			       .procs = &p,
			       .nprocs = 1,
			       .mounts = mounts,
			       .nmounts = 1 };
	struct jf_run_started st = { 0 };
	struct jf_error err = { 0 };
	if (jf_runner_start(f->be, &l, 330, &st, &err) != JF_OK)
		fail_msg("start: %s", err.msg);
	struct jf_run_result v[8];
	size_t n = results_until_end(f->be, 330, v, 8);
	struct jf_run_result *end = &v[n - 1];
	assert_true(end->start_failed);
	if (!strstr(end->message, "storage mounts need containers: main has no image"))
		fail_msg("message: %s", end->message);
	char p2[PATH_MAX + 16];
	snprintf(p2, sizeof(p2), "%s/emptydir", dir);
	assert_false(jft_exists(p2));
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_success, setup, teardown),
		cmocka_unit_test_setup_teardown(test_container, setup, teardown),
		cmocka_unit_test_setup_teardown(test_container_pull_failed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_container_shim_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_storage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_storage_evicted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_storage_memory_charged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_storage_host_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_code, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interleave, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_procs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_found, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chdir_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_executable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_start_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_term, setup, teardown),
		cmocka_unit_test_setup_teardown(test_term_trapped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_adopt_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_adopt_finished, setup, teardown),
		cmocka_unit_test_setup_teardown(test_adopt_bogus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shim_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_rotate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_no_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_rotate_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_cwd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop_privileges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_cleanup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_launch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_shim_dies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_ready_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_claimed_slow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_confirmed_late_reap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
