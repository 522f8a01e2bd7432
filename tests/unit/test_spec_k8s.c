/*
 * test_spec_k8s.c - Kubernetes batch/v1 Job import (reference 2.3).
 *
 * The Job examples of the Kubernetes documentation are read from
 * shared/k8s-examples next to the repository (skipped with a message when
 * that folder is absent) and must come out with Kubernetes' meaning.  The
 * two Jobs of product document 004 are copied here verbatim.  Then every
 * error path: the message names the dotted path and starts with its line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/spec.h"

#define EXAMPLES JF_SOURCE_DIR "/tests/fixtures/k8s/"

static const struct jf_subst subst = { .job_name = "demo-job", .queue = "q1", .group = "g1" };

static struct jf_spec *parse_ok_at(const char *text, enum jf_spec_place place)
{
	struct jf_spec *s = NULL;
	struct jf_error e = { 0 };
	enum jf_err rc = jf_spec_parse(text, strlen(text), place, &subst, &s, &e);
	if (rc != JF_OK)
		fail_msg("unexpected %s: %s\n--- spec:\n%s", jf_err_name(rc), e.msg, text);
	assert_non_null(s);
	assert_int_equal(s->form, JF_FORM_K8S);
	return s;
}

static struct jf_spec *parse_ok(const char *text)
{
	return parse_ok_at(text, JF_PLACE_GROUP);
}

static void expect_err_at(const char *text, enum jf_spec_place place, enum jf_err code, int line,
			  const char *s1, const char *s2)
{
	struct jf_spec *s = (struct jf_spec *)1;
	struct jf_error e = { 0 };
	enum jf_err rc = jf_spec_parse(text, strlen(text), place, &subst, &s, &e);
	if (rc != code)
		fail_msg("want %s, got %s: %s\n--- spec:\n%s", jf_err_name(code), jf_err_name(rc),
			 e.msg, text);
	assert_null(s);
	char want[32];
	snprintf(want, sizeof(want), "line %d: ", line);
	if (line > 0 && strncmp(e.msg, want, strlen(want)) != 0)
		fail_msg("want '%s' at the start of: %s", want, e.msg);
	if (s1 && !strstr(e.msg, s1))
		fail_msg("want '%s' in: %s", s1, e.msg);
	if (s2 && !strstr(e.msg, s2))
		fail_msg("want '%s' in: %s", s2, e.msg);
}

#define ERR(text, line, s1, s2)    expect_err_at(text, JF_PLACE_GROUP, JF_EINVAL, line, s1, s2)
#define NOTSUP(text, line, s1, s2) expect_err_at(text, JF_PLACE_GROUP, JF_ENOTSUP, line, s1, s2)

/* text with the first `from` replaced by `to`, malloc'd */
static char *replace(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	assert_non_null(at);
	size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
	char *out = malloc(n);
	assert_non_null(out);
	snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	return out;
}

static char *read_example(const char *name)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s%s", EXAMPLES, name);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = calloc(1, JF_SPEC_MAX_BYTES + 1);
	assert_non_null(buf);
	size_t n = fread(buf, 1, JF_SPEC_MAX_BYTES, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* the repository's own fixtures: a missing one fails, never skips */
#define EXAMPLE(var, name)                                                                         \
	char *var = read_example(name);                                                            \
	if (!var)                                                                                  \
		fail_msg("fixture %s is missing", EXAMPLES name);

/* ---- the Kubernetes Job fixtures (tests/fixtures/k8s: the features of the
 * Kubernetes documentation's examples) ---- */

static void example_pi(void **state)
{
	(void)state;
	EXAMPLE(text, "job.yaml");
	struct jf_spec *s = parse_ok(text);
	assert_string_equal(s->name, "pi");
	assert_int_equal(s->completions, 1);
	assert_int_equal(s->parallelism, 1);
	assert_int_equal(s->max_failures, 4);
	assert_int_equal(s->retries, -1);
	assert_int_equal(s->max_failed_indexes, -1);
	assert_int_equal(s->restart_policy, JF_RESTART_NEVER);
	assert_false(s->indexed);
	assert_int_equal(s->gpus, 0);
	assert_null(s->gpu);
	assert_int_equal(s->timeout, 86400);
	assert_int_equal(s->ncontainers, 1);
	const struct jf_container *c = &s->containers[0];
	assert_string_equal(c->name, "pi");
	assert_string_equal(c->image, "perl");
	assert_int_equal(c->ncommand, 4);
	assert_string_equal(c->command[0], "perl");
	assert_string_equal(c->command[1], "-Mbignum=bpi");
	assert_string_equal(c->command[2], "-wle");
	assert_string_equal(c->command[3], "print bpi(1000)");
	assert_null(c->command[4]);
	assert_int_equal(c->nargs, 0);
	assert_int_equal(s->nignored, 0);
	assert_int_equal(s->npfp, 0);
	assert_int_equal(s->nsuccess, 0);
	jf_spec_free(s);
	free(text);
}

static void example_backoff_per_index(void **state)
{
	(void)state;
	EXAMPLE(text, "job-backoff-limit-per-index-example.yaml");
	struct jf_spec *s = parse_ok(text);
	assert_string_equal(s->name, "job-backoff-limit-per-index-example");
	assert_int_equal(s->completions, 10);
	assert_int_equal(s->parallelism, 3);
	assert_true(s->indexed);
	assert_int_equal(s->retries, 1);
	assert_int_equal(s->max_failed_indexes, 5);
	assert_int_equal(s->max_failures, -1); /* unlimited with a per-index limit */
	assert_int_equal(s->restart_policy, JF_RESTART_NEVER);
	const struct jf_container *c = &s->containers[0];
	assert_string_equal(c->name, "example");
	assert_string_equal(c->image, "busybox");
	assert_int_equal(c->ncommand, 3);
	assert_string_equal(c->command[0], "/bin/sh");
	assert_string_equal(c->command[1], "-c");
	assert_string_equal(c->command[2],
			    "echo \"Hello world\"\n[ $((JOB_COMPLETION_INDEX % 2)) -ne 0 ]\n");
	assert_int_equal(s->nignored, 0);
	jf_spec_free(s);
	free(text);
}

static void example_failindex(void **state)
{
	(void)state;
	EXAMPLE(text, "job-backoff-limit-per-index-failindex.yaml");
	struct jf_spec *s = parse_ok(text);
	assert_string_equal(s->name, "job-backoff-limit-per-index-failindex");
	assert_int_equal(s->completions, 4);
	assert_int_equal(s->parallelism, 2);
	assert_true(s->indexed);
	assert_int_equal(s->retries, 1);
	assert_int_equal(s->max_failures, 6);
	assert_int_equal(s->max_failed_indexes, -1);
	assert_int_equal(s->npfp, 1);
	const struct jf_pfp_rule *r = &s->pfp[0];
	assert_int_equal(r->action, JF_PFP_FAILINDEX);
	assert_true(r->on_exit_codes);
	assert_false(r->on_disruption);
	assert_string_equal(r->container, "main");
	assert_true(r->op_in);
	assert_int_equal(r->nvalues, 1);
	assert_int_equal(r->values[0], 42);
	const struct jf_container *c = &s->containers[0];
	assert_string_equal(c->image, "busybox");
	assert_int_equal(c->ncommand, 3);
	assert_non_null(strstr(c->command[2], "1) exit 42 ;;\n"));
	assert_int_equal(s->nignored, 0);
	jf_spec_free(s);
	free(text);
}

static void example_pod_failure_policy(void **state)
{
	(void)state;
	EXAMPLE(text, "job-pod-failure-policy-example.yaml");
	struct jf_spec *s = parse_ok(text);
	assert_string_equal(s->name, "job-pod-failure-policy-example");
	assert_int_equal(s->completions, 12);
	assert_int_equal(s->parallelism, 3);
	assert_false(s->indexed);
	assert_int_equal(s->max_failures, 6);
	assert_int_equal(s->retries, -1);
	const struct jf_container *c = &s->containers[0];
	assert_string_equal(c->image, "busybox");
	assert_int_equal(c->ncommand, 1);
	assert_string_equal(c->command[0], "/bin/sh");
	assert_int_equal(c->nargs, 2);
	assert_string_equal(c->args[0], "-c");
	assert_string_equal(c->args[1], "echo \"Hello world!\" && sleep 5 && exit 42");
	assert_int_equal(s->npfp, 2);
	assert_int_equal(s->pfp[0].action, JF_PFP_FAILJOB);
	assert_true(s->pfp[0].on_exit_codes);
	assert_string_equal(s->pfp[0].container, "main");
	assert_true(s->pfp[0].op_in);
	assert_int_equal(s->pfp[0].nvalues, 1);
	assert_int_equal(s->pfp[0].values[0], 42);
	assert_int_equal(s->pfp[1].action, JF_PFP_IGNORE);
	assert_false(s->pfp[1].on_exit_codes);
	assert_true(s->pfp[1].on_disruption);
	assert_null(s->pfp[1].container);
	assert_int_equal(s->nignored, 0);
	jf_spec_free(s);
	free(text);
}

static void example_success_policy(void **state)
{
	(void)state;
	EXAMPLE(text, "job-success-policy.yaml");
	struct jf_spec *s = parse_ok(text);
	assert_string_equal(s->name, "job-success");
	assert_int_equal(s->completions, 10);
	assert_int_equal(s->parallelism, 10);
	assert_true(s->indexed);
	assert_int_equal(s->max_failures, 6);
	assert_int_equal(s->restart_policy, JF_RESTART_NEVER);
	assert_int_equal(s->nsuccess, 1);
	const struct jf_success_rule *r = &s->success[0];
	assert_int_equal(r->nindexes, 2);
	assert_int_equal(r->indexes[0].lo, 0);
	assert_int_equal(r->indexes[0].hi, 0);
	assert_int_equal(r->indexes[1].lo, 2);
	assert_int_equal(r->indexes[1].hi, 3);
	assert_int_equal(r->count, 1);
	assert_non_null(
		strstr(s->containers[0].command[2], "if [ \"$JOB_COMPLETION_INDEX\" = 2 ]; then"));
	assert_int_equal(s->nignored, 0);
	jf_spec_free(s);
	free(text);
}

/* ---- product document 004 ---- */

static const char product_1[] = "apiVersion: batch/v1\n"
				"kind: Job\n"
				"metadata:\n"
				"  name: ${JOB_NAME}   # 允许变量替换\n"
				"spec:\n"
				"  backoffLimit: 4     # 重试 4 次后标记为 Failed\n"
				"  template:\n"
				"    spec:\n"
				"      containers:\n"
				"      - name: main\n"
				"        image: ${YOUR_IMAGE}\n"
				"        resources:\n"
				"          requests:\n"
				"            cpu: \"1\"    # 起步资源，<= limits\n"
				"            memory: \"2Gi\"\n"
				"            nvidia.com/gpu: \"1\"\n"
				"          limits:\n"
				"            cpu: \"4\"\n"
				"            memory: \"8Gi\"\n"
				"            nvidia.com/gpu: \"1\"\n"
				"      restartPolicy: Never\n";

static const char product_2[] =
	"apiVersion: batch/v1\n"
	"kind: Job\n"
	"metadata:\n"
	"  creationTimestamp: null\n"
	"  name: pi\n"
	"spec:\n"
	"  backoffLimit: 4\n"
	"  template:\n"
	"    metadata:\n"
	"      creationTimestamp: null\n"
	"    spec:\n"
	"      containers:\n"
	"        - image: harbor.suanleme.cn/huang5876/jupyter-tf1.15-gpu:v3.0\n"
	"          name: pi\n"
	"          resources:\n"
	"            limits:\n"
	"              cpu: 14000m\n"
	"              nvidia.com/gpu: 1\n"
	"              memory: 51200Mi\n"
	"            requests:\n"
	"              cpu: 1166m\n"
	"              nvidia.com/gpu: 1\n"
	"              memory: 2133Mi\n"
	"        - image: harbor.suanleme.cn/library/cuda:debugv4\n"
	"          name: pi2\n"
	"          resources:\n"
	"            limits:\n"
	"              cpu: 9333m\n"
	"              nvidia.com/gpu: 1\n"
	"              memory: 4200Mi\n"
	"            requests:\n"
	"              cpu: 2333m\n"
	"              nvidia.com/gpu: 1\n"
	"              memory: 10666Mi\n"
	"      restartPolicy: Never\n"
	"status: {}\n";

static void product_single(void **state)
{
	(void)state;
	/* as written: ${YOUR_IMAGE} is a placeholder, not a variable jobfs knows */
	ERR(product_1, 11, "unknown variable ${YOUR_IMAGE}", NULL);
	/* with an image: the GPU model must be named */
	char *t1 = replace(product_1, "${YOUR_IMAGE}", "python:3");
	ERR(t1, 20, "key 'spec.template.spec.containers[0].resources.limits.nvidia.com/gpu'",
	    "jobfs/gpu");
	/* with a model: on the host a command is needed, in a container the
	 * image's will do */
	char *t2 = replace(t1, "metadata:\n", "metadata:\n  annotations: {jobfs/gpu: \"4090\"}\n");
	{
		struct jf_spec *s2 = parse_ok(t2);
		struct jf_error e2;
		assert_int_equal(jf_spec_check_runtime(s2, false, &e2), JF_ENOTSUP);
		assert_non_null(strstr(e2.msg, "'command' or 'args' in a container"));
		assert_int_equal(jf_spec_check_runtime(s2, true, &e2), JF_OK);
		jf_spec_free(s2);
	}
	char *t3 = replace(t2, "image: python:3", "image: python:3\n        command: [nvidia-smi]");
	struct jf_spec *s = parse_ok(t3);
	assert_string_equal(s->name, "demo-job");
	assert_int_equal(s->max_failures, 4);
	assert_int_equal(s->retries, -1);
	assert_string_equal(s->gpu, "4090");
	assert_int_equal(s->gpus, 1);
	const struct jf_container *c = &s->containers[0];
	assert_string_equal(c->image, "python:3");
	assert_int_equal(c->cpu_milli, 4000);
	assert_int_equal(c->mem_bytes, 8LL << 30);
	assert_int_equal(c->gpus, 1);
	assert_int_equal(c->req_cpu_milli, 1000);
	assert_int_equal(c->req_mem_bytes, 2LL << 30);
	assert_int_equal(s->nignored, 0);
	jf_spec_free(s);
	free(t1);
	free(t2);
	free(t3);
}

static bool has_ignored(const struct jf_spec *s, const char *path)
{
	for (size_t i = 0; i < s->nignored; i++)
		if (strcmp(s->ignored[i], path) == 0)
			return true;
	return false;
}

static void product_multi(void **state)
{
	(void)state;
	ERR(product_2, 18, "key 'spec.template.spec.containers[0].resources.limits.nvidia.com/gpu'",
	    "add the annotation jobfs/gpu");
	char *t1 = replace(product_2, "  name: pi\n",
			   "  name: pi\n  annotations:\n    jobfs/gpu: \"4090\"\n");
	{
		struct jf_spec *s1 = parse_ok(t1);
		struct jf_error e1;
		assert_int_equal(jf_spec_check_runtime(s1, false, &e1), JF_ENOTSUP);
		assert_non_null(strstr(e1.msg, "no command"));
		assert_non_null(strstr(e1.msg, "does not pull images"));
		jf_spec_free(s1);
	}
	char *t2 = replace(t1, "name: pi2\n", "name: pi2\n          args: [sleep, \"60\"]\n");
	struct jf_spec *s = parse_ok(t2);
	assert_string_equal(s->name, "pi");
	assert_int_equal(s->max_failures, 4);
	assert_string_equal(s->gpu, "4090");
	assert_int_equal(s->gpus, 1);
	assert_int_equal(s->ncontainers, 2);
	const struct jf_container *a = &s->containers[0], *b = &s->containers[1];
	assert_string_equal(a->name, "pi");
	assert_string_equal(a->image, "harbor.suanleme.cn/huang5876/jupyter-tf1.15-gpu:v3.0");
	assert_int_equal(a->cpu_milli, 14000);
	assert_int_equal(a->mem_bytes, 51200LL << 20);
	assert_int_equal(a->gpus, 1);
	assert_int_equal(a->req_cpu_milli, 1166);
	assert_int_equal(a->req_mem_bytes, 2133LL << 20);
	assert_string_equal(b->name, "pi2");
	assert_string_equal(b->image, "harbor.suanleme.cn/library/cuda:debugv4");
	assert_int_equal(b->cpu_milli, 9333);
	assert_int_equal(b->mem_bytes, 4200LL << 20);
	assert_int_equal(b->req_cpu_milli, 2333);
	assert_int_equal(b->req_mem_bytes, 10666LL << 20);
	assert_int_equal(b->nargs, 2);
	assert_int_equal(s->nignored, 3);
	assert_true(has_ignored(s, "metadata.creationTimestamp"));
	assert_true(has_ignored(s, "spec.template.metadata"));
	assert_true(has_ignored(s, "status"));
	jf_spec_free(s);
	free(t1);
	free(t2);
}

/* ---- behaviour ---- */

#define HEAD "apiVersion: batch/v1\nkind: Job\n"
#define POD(extra)                                                                                 \
	"  template:\n    spec:\n      containers:\n      - name: main\n"                          \
	"        command: [\"true\"]\n" extra

static void ignored_paths(void **state)
{
	(void)state;
	struct jf_spec *s =
		parse_ok(HEAD "metadata:\n"
			      "  name: x\n"
			      "  namespace: default\n"
			      "  labels: {app: x}\n"
			      "  annotations:\n"
			      "    foo: bar\n"
			      "    kubectl.kubernetes.io/last-applied-configuration: \"{}\"\n"
			      "    jobfs/billing: spot\n"
			      "spec:\n"
			      "  ttlSecondsAfterFinished: 100\n"
			      "  selector: {matchLabels: {a: b}}\n"
			      "  suspend: false\n"
			      "  template:\n"
			      "    metadata: {labels: {a: b}}\n"
			      "    spec:\n"
			      "      nodeSelector: {gpu: \"yes\"}\n"
			      "      restartPolicy: OnFailure\n"
			      "      containers:\n"
			      "      - name: main\n"
			      "        command: [\"true\"]\n"
			      "        imagePullPolicy: Always\n"
			      "        ports: [{containerPort: 80}]\n"
			      "        env: [{name: A, value: \"1\", extra: 2}]\n"
			      "        resources:\n"
			      "          limits: {cpu: 1, ephemeral-storage: 1Gi}\n"
			      "          claims: []\n"
			      "status: {}\n"
			      "extraTop: 1\n");
	static const char *const want[] = {
		"metadata.namespace",
		"metadata.labels",
		"metadata.annotations.foo",
		"metadata.annotations.kubectl.kubernetes.io/last-applied-configuration",
		"spec.ttlSecondsAfterFinished",
		"spec.selector",
		"spec.suspend",
		"spec.template.metadata",
		"spec.template.spec.nodeSelector",
		"spec.template.spec.containers[0].ports",
		"spec.template.spec.containers[0].env[0].extra",
		"spec.template.spec.containers[0].resources.limits.ephemeral-storage",
		"spec.template.spec.containers[0].resources.claims",
		"status",
		"extraTop",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!has_ignored(s, want[i]))
			fail_msg("not in ignored: %s", want[i]);
	assert_int_equal(s->nignored, sizeof(want) / sizeof(want[0]));
	assert_int_equal(s->billing, JF_BILL_SPOT);
	assert_int_equal(s->restart_policy, JF_RESTART_ONFAILURE);
	assert_string_equal(s->containers[0].env[0].value, "1");
	/* imagePullPolicy is modelled (reference 8.1), not ignored */
	assert_int_equal(s->containers[0].pull_policy, JF_PULL_ALWAYS);
	jf_spec_free(s);
}

/* emptyDir volumes and their mounts become the node's emptydirs
 * (reference 8.3); other volumes and their mounts are ignored */
static void volumes(void **state)
{
	(void)state;
	const char *pod = HEAD "metadata: {name: v}\n"
			       "spec:\n"
			       "  template:\n"
			       "    spec:\n"
			       "      restartPolicy: Never\n"
			       "      volumes:\n"
			       "      - name: scratch\n"
			       "        emptyDir: {}\n"
			       "      - name: fast\n"
			       "        emptyDir: {medium: Memory, sizeLimit: 1Gi}\n"
			       "      - name: data\n"
			       "        persistentVolumeClaim: {claimName: d}\n"
			       "      - name: unused\n"
			       "        emptyDir: {}\n"
			       "      containers:\n"
			       "      - name: a\n"
			       "        image: busybox\n"
			       "        volumeMounts:\n"
			       "        - {name: scratch, mountPath: /scratch}\n"
			       "        - {name: data, mountPath: /data}\n"
			       "      - name: b\n"
			       "        image: busybox\n"
			       "        volumeMounts:\n"
			       "        - {name: scratch, mountPath: /scratch, readOnly: false}\n"
			       "        - {name: fast, mountPath: /dev/fast}\n";
	struct jf_spec *s = parse_ok(pod);
	assert_int_equal(s->nstorage, 2);
	assert_int_equal(s->storage[0].type, JF_STORE_EMPTYDIR);
	assert_string_equal(s->storage[0].name, "scratch");
	assert_string_equal(s->storage[0].path, "/scratch");
	assert_int_equal(s->storage[0].size, 0);
	assert_false(s->storage[0].memory);
	assert_string_equal(s->storage[1].name, "fast");
	assert_string_equal(s->storage[1].path, "/dev/fast");
	assert_int_equal(s->storage[1].size, 1LL << 30);
	assert_true(s->storage[1].memory);
	assert_true(has_ignored(s, "spec.template.spec.volumes[2].persistentVolumeClaim"));
	assert_true(has_ignored(s, "spec.template.spec.containers[0].volumeMounts[1]"));
	assert_true(has_ignored(s, "spec.template.spec.volumes[3]"));
	assert_int_equal(s->nignored, 3);
	struct jf_error e;
	assert_int_equal(jf_spec_check_runtime(s, true, &e), JF_OK);
	jf_spec_free(s);
	/* what would not mean the same is refused */
	const char *head = HEAD "metadata: {name: v}\n"
				"spec:\n"
				"  template:\n"
				"    spec:\n"
				"      restartPolicy: Never\n"
				"      volumes:\n"
				"      - {name: s, emptyDir: {}}\n"
				"      containers:\n"
				"      - name: a\n"
				"        image: busybox\n"
				"        volumeMounts:\n";
	char t[2048];
	snprintf(t, sizeof(t), "%s        - {name: s, mountPath: /s, subPath: x}\n", head);
	NOTSUP(t, 14, "volumeMounts[0].subPath", "subPath is not supported");
	snprintf(t, sizeof(t),
		 "%s        - {name: s, mountPath: /s}\n      - name: b\n        image: x\n"
		 "        volumeMounts: [{name: s, mountPath: /t}]\n",
		 head);
	NOTSUP(t, 17, "volumeMounts[0].mountPath", "mounted at /s and at /t");
	snprintf(t, sizeof(t), "%s        - {name: nope, mountPath: /s}\n", head);
	ERR(t, 14, "volumeMounts[0].name", "no volume named 'nope'");
	snprintf(t, sizeof(t), "%s        - {name: s, mountPath: rel}\n", head);
	ERR(t, 14, "volumeMounts[0].mountPath", "absolute path");
}

static void annotations(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok(HEAD "metadata:\n"
					  "  annotations:\n"
					  "    jobfs/billing: spot\n"
					  "    jobfs/gpu: H800\n"
					  "    jobfs/nodes: \"2\"\n"
					  "    jobfs/unit-runtime: 30m\n"
					  "    jobfs/timeout: 2h\n"
					  "    jobfs/retries: \"5\"\n"
					  "spec:\n" POD(""));
	assert_int_equal(s->billing, JF_BILL_SPOT);
	assert_string_equal(s->gpu, "H800");
	assert_int_equal(s->gpus, 1); /* a model without nvidia.com/gpu: 1 */
	assert_int_equal(s->nodes, 2);
	assert_int_equal(s->unit_runtime, 1800);
	assert_int_equal(s->timeout, 7200);
	assert_int_equal(s->retries, 5);
	assert_null(s->name);
	jf_spec_free(s);

	ERR(HEAD "metadata:\n  annotations:\n    jobfs/foo: x\nspec:\n" POD(""), 5,
	    "unknown annotation 'jobfs/foo'", "jobfs/billing");
	ERR(HEAD "metadata:\n  annotations:\n    jobfs/nodes: x\nspec:\n" POD(""), 5,
	    "key 'metadata.annotations.jobfs/nodes'", "expected an integer");
	ERR(HEAD "metadata:\n  annotations:\n    jobfs/nodes: \"0\"\nspec:\n" POD(""), 5,
	    "key 'metadata.annotations.jobfs/nodes'", "out of range");
	ERR(HEAD "metadata:\n  annotations:\n    jobfs/billing: cheap\nspec:\n" POD(""), 5,
	    "key 'metadata.annotations.jobfs/billing'", "spot or on-demand");
	ERR(HEAD "metadata:\n  annotations:\n    jobfs/unit-runtime: 10x\nspec:\n" POD(""), 5,
	    "key 'metadata.annotations.jobfs/unit-runtime'", "bad duration");
	ERR(HEAD "metadata:\n  annotations:\n    jobfs/timeout:\nspec:\n" POD(""), 5,
	    "key 'metadata.annotations.jobfs/timeout'", "no value");
	ERR(HEAD "metadata:\n  annotations:\n    jobfs/gpu: \"a b\"\nspec:\n" POD(""), 5,
	    "key 'metadata.annotations.jobfs/gpu'", "bad GPU model");
	ERR(HEAD "metadata:\n  annotations: [a]\nspec:\n" POD(""), 4, "key 'metadata.annotations'",
	    "expected a mapping");
	{
		/* honoured now (reference 8.2) */
		struct jf_spec *s5 = parse_ok(
			HEAD "metadata:\n  annotations:\n    jobfs/shm-size: 1Gi\nspec:\n" POD(""));
		assert_int_equal(s5->shm_size, 1LL << 30);
		jf_spec_free(s5);
	}
	ERR(HEAD "metadata:\n  annotations:\n    jobfs/shm-size: 1GG\nspec:\n" POD(""), 5,
	    "key 'metadata.annotations.jobfs/shm-size'", "bad memory quantity");
	ERR(HEAD
	    "metadata:\n  annotations:\n    jobfs/retries: \"1\"\n"
	    "spec:\n  completions: 2\n  completionMode: Indexed\n  backoffLimitPerIndex: 1\n" POD(
		    ""),
	    9, "key 'spec.backoffLimitPerIndex'", "jobfs/retries");
}

static void counts_and_defaults(void **state)
{
	(void)state;
	/* K8s: parallelism defaults to 1, not to completions */
	struct jf_spec *s = parse_ok(HEAD "spec:\n  completions: 5\n" POD(""));
	assert_int_equal(s->completions, 5);
	assert_int_equal(s->parallelism, 1);
	assert_int_equal(s->max_failures, 6);
	jf_spec_free(s);
	s = parse_ok(HEAD "spec:\n  parallelism: 5\n" POD(""));
	assert_int_equal(s->completions, 1);
	assert_int_equal(s->parallelism, 1); /* clamped to completions */
	jf_spec_free(s);
	s = parse_ok(HEAD
		     "spec:\n  completions: 4\n  parallelism: 9\n  activeDeadlineSeconds: 600\n"
		     "  completionMode: NonIndexed\n" POD(""));
	assert_int_equal(s->parallelism, 4);
	assert_int_equal(s->active_deadline, 600);
	assert_false(s->indexed);
	jf_spec_free(s);
	/* backoffLimit written with a per-index limit keeps its value */
	s = parse_ok(
		HEAD
		"spec:\n  completions: 4\n  completionMode: Indexed\n"
		"  backoffLimitPerIndex: 0\n  backoffLimit: 10\n  maxFailedIndexes: 4\n" POD(""));
	assert_int_equal(s->retries, 0);
	assert_int_equal(s->max_failures, 10);
	assert_int_equal(s->max_failed_indexes, 4);
	jf_spec_free(s);
	s = parse_ok(HEAD "spec:\n  backoffLimit: 0\n" POD(""));
	assert_int_equal(s->max_failures, 0);
	jf_spec_free(s);
	/* a batch: one task per clone */
	s = parse_ok_at(HEAD "spec:\n" POD(""), JF_PLACE_BATCH);
	assert_int_equal(s->completions, 1);
	assert_int_equal(s->count, 1);
	jf_spec_free(s);
	expect_err_at(HEAD "spec:\n  completions: 3\n" POD(""), JF_PLACE_BATCH, JF_EINVAL, 4,
		      "key 'spec.completions'", "/tasks");
	/* GPUs: the most any container asks for */
	s = parse_ok(HEAD
		     "metadata: {annotations: {jobfs/gpu: \"4090\"}}\nspec:\n  template:\n"
		     "    spec:\n      containers:\n"
		     "      - {name: a, command: [x], resources: {limits: {nvidia.com/gpu: 2}}}\n"
		     "      - {name: b, resources: {limits: {nvidia.com/gpu: 4}}}\n"
		     "      - {name: c}\n");
	assert_int_equal(s->gpus, 4);
	assert_int_equal(s->containers[2].gpus, -1);
	jf_spec_free(s);
}

static void substitution(void **state)
{
	(void)state;
	struct jf_spec *s =
		parse_ok(HEAD "metadata:\n  name: ${JOB_NAME}-${QUEUE}-${GROUP}\n"
			      "spec:\n  template:\n    spec:\n      containers:\n"
			      "      - name: main\n        command: [echo, \"$${HOME}\", a$b]\n");
	assert_string_equal(s->name, "demo-job-q1-g1");
	assert_string_equal(s->containers[0].command[1], "${HOME}");
	assert_string_equal(s->containers[0].command[2], "a$b");
	jf_spec_free(s);
	/* a flow mapping that is only valid YAML once substituted */
	s = parse_ok(HEAD "metadata:\n  labels: {team: ${GROUP}}\nspec:\n" POD(""));
	assert_true(has_ignored(s, "metadata.labels"));
	jf_spec_free(s);
	ERR(HEAD "metadata:\n  name: ${NOPE}\nspec:\n" POD(""), 4, "unknown variable ${NOPE}",
	    NULL);
	ERR(HEAD "metadata:\n  name: ${JOB_NAME\nspec:\n" POD(""), 4, "unterminated", NULL);
	ERR(HEAD "# ${COMMENTED}\nspec:\n" POD(""), 3, "${COMMENTED}", NULL);
	/* a native spec is never substituted */
	struct jf_spec *n = NULL;
	struct jf_error e = { 0 };
	const char *native = "name: ${JOB_NAME}\ncommand: [x]\n";
	assert_int_equal(jf_spec_parse(native, strlen(native), JF_PLACE_GROUP, &subst, &n, &e),
			 JF_OK);
	assert_string_equal(n->name, "${JOB_NAME}");
	jf_spec_free(n);
	/* without a subst table every variable is unknown here */
	const char *k = HEAD "metadata:\n  name: ${JOB_NAME}\nspec:\n" POD("");
	assert_int_equal(jf_spec_parse(k, strlen(k), JF_PLACE_GROUP, NULL, &n, &e), JF_EINVAL);
	assert_non_null(strstr(e.msg, "line 4: variable ${JOB_NAME} has no value here"));
	/* a value with a line break would change the YAML */
	struct jf_subst nl = { .job_name = "a\nkind: Pod" };
	assert_int_equal(jf_spec_parse(k, strlen(k), JF_PLACE_GROUP, &nl, &n, &e), JF_EINVAL);
	assert_non_null(strstr(e.msg, "line break"));
}

static void form_errors(void **state)
{
	(void)state;
	ERR("apiVersion: apps/v1\nkind: Deployment\n", 1, "key 'apiVersion'", "batch/v1");
	ERR("apiVersion: batch/v1\nkind: CronJob\n", 1, "'kind: Job'", "CronJob");
	ERR("kind: Job\ncommand: [x]\n", 1, "key 'kind'", "batch/v1");
	ERR("apiVersion: batch/v1\ncommand: [x]\n", 1, "key 'apiVersion'", "(no kind)");
	ERR("apiVersion: [batch/v1]\nkind: Job\n", 1, "key 'apiVersion'", NULL);
	ERR(HEAD, 1, "key 'spec'", "needs a spec");
	ERR(HEAD "spec: []\n", 3, "key 'spec'", "expected a mapping");
	ERR(HEAD "metadata: 5\nspec:\n" POD(""), 3, "key 'metadata'", "expected a mapping");
	ERR(HEAD "metadata: {name: \"a/b\"}\nspec:\n" POD(""), 3, "key 'metadata.name'", "'/'");
	ERR(HEAD "spec:\n  completions: 2\n", 4, "key 'spec.template'", "pod template");
	ERR(HEAD "spec:\n  template: {}\n", 4, "key 'spec.template.spec'", "needs a spec");
	ERR(HEAD "spec:\n  template:\n    spec: {}\n", 5, "key 'spec.template.spec.containers'",
	    "at least one container");
	ERR(HEAD "spec:\n  template:\n    spec:\n      containers: {}\n", 6,
	    "key 'spec.template.spec.containers'", "expected a list");
	ERR(HEAD "spec:\n  template:\n    spec:\n      containers: []\n", 6,
	    "key 'spec.template.spec.containers'", "must be 1 to 16");
	ERR(HEAD "spec:\n  template:\n    spec:\n      containers:\n      - image: x\n", 7,
	    "key 'spec.template.spec.containers[0].name'", "needs a name");
	ERR(HEAD "spec:\n  template:\n    spec:\n      containers:\n      - name: A_1\n", 7,
	    "key 'spec.template.spec.containers[0].name'", "lowercase");
	ERR(HEAD "spec:\n  template:\n    spec:\n      containers:\n      - name: a\n"
		 "        command: [x]\n      - name: a\n",
	    9, "key 'spec.template.spec.containers[1].name'", "twice");
	ERR(HEAD "spec:\n  template:\n    spec:\n      containers:\n      - name: a\n"
		 "        command: echo hi\n",
	    8, "key 'spec.template.spec.containers[0].command'", "expected a list");
	ERR(HEAD "spec:\n  template:\n    spec:\n      containers:\n      - name: a\n"
		 "        command: [x]\n        resources: {limits: {cpu: abc}}\n",
	    9,
	    "key 'spec.template.spec.containers[0].resources.limits.cpu': bad CPU quantity \"abc\"",
	    NULL);
	ERR(HEAD "spec:\n  template:\n    spec:\n      containers:\n      - name: a\n"
		 "        command: [x]\n        resources: {limits: {nvidia.com/gpu: 3}}\n"
		 "metadata: {annotations: {jobfs/gpu: \"4090\"}}\n",
	    9, "key 'spec.template.spec.containers[0].resources.limits.nvidia.com/gpu'",
	    "0, 1, 2, 4 or 8");
	ERR(HEAD "spec:\n" POD("      restartPolicy: Always\n"), 9,
	    "key 'spec.template.spec.restartPolicy'", "Always is not valid");
	ERR(HEAD "spec:\n  completions: abc\n" POD(""), 4, "key 'spec.completions'",
	    "expected an integer");
	ERR(HEAD "spec:\n  completions: 0\n" POD(""), 4, "key 'spec.completions'", "out of range");
	ERR(HEAD "spec:\n  parallelism: 0\n" POD(""), 4, "key 'spec.parallelism'", "out of range");
	ERR(HEAD "spec:\n  backoffLimit: -1\n" POD(""), 4, "key 'spec.backoffLimit'",
	    "out of range");
	ERR(HEAD "spec:\n  backoffLimit: 9999999999999999999999\n" POD(""), 4,
	    "key 'spec.backoffLimit'", "out of range");
	ERR(HEAD "spec:\n  activeDeadlineSeconds: 0\n" POD(""), 4,
	    "key 'spec.activeDeadlineSeconds'", "out of range");
	ERR(HEAD "spec:\n  completionMode: indexed\n" POD(""), 4, "key 'spec.completionMode'",
	    "NonIndexed or Indexed");
	ERR(HEAD "spec:\n  completions: 2\n  completions: 3\n" POD(""), 5,
	    "duplicate key 'spec.completions'", NULL);
}

static void k8s_rules(void **state)
{
	(void)state;
	ERR(HEAD "spec:\n  completionMode: Indexed\n" POD(""), 4, "key 'spec.completionMode'",
	    "needs spec.completions");
	ERR(HEAD "spec:\n  backoffLimitPerIndex: 1\n" POD(""), 4, "key 'spec.backoffLimitPerIndex'",
	    "Indexed");
	ERR(HEAD
	    "spec:\n  completions: 4\n  completionMode: Indexed\n  maxFailedIndexes: 1\n" POD(""),
	    6, "key 'spec.maxFailedIndexes'", "backoffLimitPerIndex");
	ERR(HEAD "spec:\n  completions: 4\n  completionMode: Indexed\n  backoffLimitPerIndex: 1\n"
		 "  maxFailedIndexes: 5\n" POD(""),
	    7, "key 'spec.maxFailedIndexes'", "0 to 4");
	ERR(HEAD "spec:\n  successPolicy:\n    rules: [{succeededCount: 1}]\n" POD(""), 4,
	    "key 'spec.successPolicy'", "Indexed");
	ERR(HEAD "spec:\n  podFailurePolicy:\n    rules: [{action: Ignore, onPodConditions: "
		 "[{type: DisruptionTarget}]}]\n" POD("      restartPolicy: OnFailure\n"),
	    4, "key 'spec.podFailurePolicy'", "restartPolicy: Never");
}

#define PFP(rules) HEAD "spec:\n  podFailurePolicy:\n    rules:\n" rules POD("")

static void pod_failure_policy(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok(
		PFP("    - action: Count\n      onExitCodes: {operator: NotIn, values: [0, 1, 2]}\n"
		    "    - action: Ignore\n      onPodConditions: [{type: DisruptionTarget, "
		    "status: \"True\"}, {type: DisruptionTarget}]\n"));
	assert_int_equal(s->npfp, 2);
	assert_int_equal(s->pfp[0].action, JF_PFP_COUNT);
	assert_false(s->pfp[0].op_in);
	assert_null(s->pfp[0].container);
	assert_int_equal(s->pfp[0].nvalues, 3);
	assert_int_equal(s->pfp[0].values[2], 2);
	assert_true(s->pfp[1].on_disruption);
	jf_spec_free(s);

	ERR(PFP("    - onExitCodes: {operator: In, values: [1]}\n"), 6,
	    "key 'spec.podFailurePolicy.rules[0].action'", "needs an action");
	ERR(PFP("    - action: Retry\n      onExitCodes: {operator: In, values: [1]}\n"), 6,
	    "key 'spec.podFailurePolicy.rules[0].action'", "FailJob, FailIndex, Ignore or Count");
	ERR(PFP("    - action: FailIndex\n      onExitCodes: {operator: In, values: [1]}\n"), 6,
	    "key 'spec.podFailurePolicy.rules[0].action'", "backoffLimitPerIndex");
	ERR(PFP("    - action: FailJob\n"), 6, "key 'spec.podFailurePolicy.rules[0]'",
	    "exactly one");
	ERR(PFP("    - action: FailJob\n      onExitCodes: {operator: In, values: [1]}\n"
		"      onPodConditions: [{type: DisruptionTarget}]\n"),
	    6, "key 'spec.podFailurePolicy.rules[0]'", "exactly one");
	ERR(PFP("    - action: FailJob\n      onExitCodes: {operator: Is, values: [1]}\n"), 7,
	    "key 'spec.podFailurePolicy.rules[0].onExitCodes.operator'", "In or NotIn");
	ERR(PFP("    - action: FailJob\n      onExitCodes: {values: [1]}\n"), 7,
	    "key 'spec.podFailurePolicy.rules[0].onExitCodes.operator'", "required");
	ERR(PFP("    - action: FailJob\n      onExitCodes: {operator: In}\n"), 7,
	    "key 'spec.podFailurePolicy.rules[0].onExitCodes.values'", "required");
	ERR(PFP("    - action: FailJob\n      onExitCodes: {operator: In, values: [0]}\n"), 7,
	    "key 'spec.podFailurePolicy.rules[0].onExitCodes.values[0]'", "In operator");
	ERR(PFP("    - action: FailJob\n      onExitCodes: {operator: In, values: [1, 1]}\n"), 7,
	    "key 'spec.podFailurePolicy.rules[0].onExitCodes.values[1]'", "twice");
	ERR(PFP("    - action: FailJob\n      onExitCodes: {operator: In, values: [x]}\n"), 7,
	    "key 'spec.podFailurePolicy.rules[0].onExitCodes.values[0]'", "expected an integer");
	ERR(PFP("    - action: FailJob\n      onExitCodes: {operator: In, values: []}\n"), 7,
	    "key 'spec.podFailurePolicy.rules[0].onExitCodes.values'", "1 to 255");
	ERR(PFP("    - action: FailJob\n      onExitCodes: {containerName: other, operator: In, "
		"values: [1]}\n"),
	    7, "key 'spec.podFailurePolicy.rules[0].onExitCodes.containerName'", "no container");
	NOTSUP(PFP("    - action: Ignore\n      onPodConditions: [{type: ConfigIssue}]\n"), 7,
	       "key 'spec.podFailurePolicy.rules[0].onPodConditions[0].type'", "DisruptionTarget");
	NOTSUP(PFP("    - action: Ignore\n      onPodConditions: [{type: DisruptionTarget, "
		   "status: \"False\"}]\n"),
	       7, "key 'spec.podFailurePolicy.rules[0].onPodConditions[0].status'", "True");
	ERR(PFP("    - action: Ignore\n      onPodConditions: [{status: \"True\"}]\n"), 7,
	    "key 'spec.podFailurePolicy.rules[0].onPodConditions[0].type'", "needs a type");
	ERR(HEAD "spec:\n  podFailurePolicy: {}\n" POD(""), 4, "key 'spec.podFailurePolicy.rules'",
	    "needs rules");
	ERR(PFP("    - action: Ignore\n      onPodConditions: []\n"), 7,
	    "key 'spec.podFailurePolicy.rules[0].onPodConditions'", "must be 1 to 20");
	char big[4096] = HEAD "spec:\n  podFailurePolicy:\n    rules:\n";
	for (int i = 0; i < 21; i++)
		strcat(big, "    - {action: Count, onExitCodes: {operator: In, values: [1]}}\n");
	strcat(big, POD(""));
	ERR(big, 6, "key 'spec.podFailurePolicy.rules'", "more than 20 rules");
	/* no rules: nothing to do */
	struct jf_spec *t = parse_ok(HEAD "spec:\n  podFailurePolicy: {rules: []}\n" POD(""));
	assert_int_equal(t->npfp, 0);
	jf_spec_free(t);
}

#define SP(rules)                                                                                  \
	HEAD "spec:\n  completions: 8\n  completionMode: Indexed\n"                                \
	     "  successPolicy:\n    rules:\n" rules POD("")

static void success_policy(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok(SP("    - succeededIndexes: \"1-3,5,7\"\n"
					"    - succeededCount: 5\n"));
	assert_int_equal(s->nsuccess, 2);
	assert_int_equal(s->success[0].nindexes, 3);
	assert_int_equal(s->success[0].indexes[0].lo, 1);
	assert_int_equal(s->success[0].indexes[0].hi, 3);
	assert_int_equal(s->success[0].indexes[2].lo, 7);
	assert_int_equal(s->success[0].count, 0);
	assert_null(s->success[1].indexes);
	assert_int_equal(s->success[1].count, 5);
	jf_spec_free(s);

	ERR(SP("    - succeededIndexes: \"0,,2\"\n"), 8,
	    "key 'spec.successPolicy.rules[0].succeededIndexes'", "bad index list");
	ERR(SP("    - succeededIndexes: \"3-1\"\n"), 8,
	    "key 'spec.successPolicy.rules[0].succeededIndexes'", "ascending");
	ERR(SP("    - succeededIndexes: \"2,1\"\n"), 8,
	    "key 'spec.successPolicy.rules[0].succeededIndexes'", "ascending");
	ERR(SP("    - succeededIndexes: \"0-8\"\n"), 8,
	    "key 'spec.successPolicy.rules[0].succeededIndexes'", "below completions (8)");
	ERR(SP("    - succeededIndexes: \"99999999999999999999\"\n"), 8,
	    "key 'spec.successPolicy.rules[0].succeededIndexes'", "below completions");
	ERR(SP("    - succeededIndexes: \"-1\"\n"), 8,
	    "key 'spec.successPolicy.rules[0].succeededIndexes'", "bad index list");
	ERR(SP("    - succeededIndexes: \"1,2\"\n      succeededCount: 3\n"), 9,
	    "key 'spec.successPolicy.rules[0].succeededCount'", "1 to 2");
	ERR(SP("    - succeededCount: 0\n"), 8, "key 'spec.successPolicy.rules[0].succeededCount'",
	    "out of range");
	ERR(SP("    - {}\n"), 8, "key 'spec.successPolicy.rules[0]'",
	    "succeededIndexes or succeededCount");
	ERR(SP("    - succeededIndexes: [1]\n"), 8,
	    "key 'spec.successPolicy.rules[0].succeededIndexes'", "expected a string");
	ERR(SP("    - succeededIndexes: \"1-\"\n"), 8,
	    "key 'spec.successPolicy.rules[0].succeededIndexes'", "bad index list");
	ERR(SP("    - succeededIndexes: \"1x\"\n"), 8,
	    "key 'spec.successPolicy.rules[0].succeededIndexes'", "bad index list");
	ERR(SP("    - succeededIndexes: \"1,\"\n"), 8,
	    "key 'spec.successPolicy.rules[0].succeededIndexes'", "bad index list");
	ERR(HEAD
	    "spec:\n  completions: 8\n  completionMode: Indexed\n  successPolicy: {}\n" POD(""),
	    6, "key 'spec.successPolicy.rules'", "needs rules");
	ERR(HEAD "spec:\n  completions: 8\n  completionMode: Indexed\n  successPolicy:\n"
		 "    rules: []\n" POD(""),
	    7, "key 'spec.successPolicy.rules'", "must be 1 to 20");
}

static void env(void **state)
{
	(void)state;
	struct jf_spec *s = parse_ok(HEAD "spec:\n" POD("        env:\n"
							"        - {name: A, value: \"1\"}\n"
							"        - {name: B}\n"
							"        - {name: A, value: x}\n"));
	const struct jf_container *c = &s->containers[0];
	assert_int_equal(c->nenv, 2);
	assert_string_equal(c->env[0].value, "x");
	assert_string_equal(c->env[1].value, "");
	jf_spec_free(s);
	NOTSUP(HEAD "spec:\n" POD("        env:\n        - name: A\n          valueFrom:\n"
				  "            secretKeyRef: {name: s, key: k}\n"),
	       11, "key 'spec.template.spec.containers[0].env[0].valueFrom'", "not supported");
	ERR(HEAD "spec:\n" POD("        env:\n        - {name: A, value: 1}\n"), 10,
	    "key 'spec.template.spec.containers[0].env[0].value'", "quote it");
	ERR(HEAD "spec:\n" POD("        env:\n        - {name: A, value: true}\n"), 10,
	    "key 'spec.template.spec.containers[0].env[0].value'", "quote it");
	ERR(HEAD "spec:\n" POD("        env:\n        - {value: x}\n"), 10,
	    "key 'spec.template.spec.containers[0].env[0].name'", "needs a name");
	ERR(HEAD "spec:\n" POD("        env:\n        - {name: 1A, value: x}\n"), 10,
	    "key 'spec.template.spec.containers[0].env[0]'", "bad environment variable name");
	ERR(HEAD "spec:\n" POD("        env: {A: x}\n"), 9,
	    "key 'spec.template.spec.containers[0].env'", "expected a list");
	ERR(HEAD "spec:\n" POD("        env: [\"A=x\"]\n"), 9,
	    "key 'spec.template.spec.containers[0].env[0]'", "expected a mapping");
	size_t n = 1100 * 40 + 4096;
	char *big = malloc(n);
	assert_non_null(big);
	strcpy(big, HEAD "spec:\n" POD("        env:\n"));
	for (int i = 0; i < 1025; i++)
		snprintf(big + strlen(big), n - strlen(big), "        - {name: V%d}\n", i);
	ERR(big, 10, "key 'spec.template.spec.containers[0].env'", "more than 1024");
	strcpy(big, HEAD "spec:\n" POD("        args: [a"));
	for (int i = 0; i < 4095; i++)
		strcat(big, ",a");
	strcat(big, "]\n");
	ERR(big, 9, "key 'spec.template.spec.containers[0].args'", "together");
	/* env bytes, multiplied by aliases */
	size_t o;
	free(big);
	big = malloc(70000);
	assert_non_null(big);
	strcpy(big, HEAD "spec:\n" POD("        env:\n        - {name: A, value: &a \""));
	o = strlen(big);
	memset(big + o, 'x', 60000);
	strcpy(big + o + 60000, "\"}\n        - {name: B, value: *a}\n"
				"        - {name: C, value: *a}\n");
	ERR(big, 10, "key 'spec.template.spec.containers[0].env'",
	    "the environment of container 'main' is 180009 bytes");
	/* an env name over 255 bytes */
	strcpy(big, HEAD "spec:\n" POD("        env:\n        - name: "));
	o = strlen(big);
	memset(big + o, 'E', 300);
	strcpy(big + o + 300, "\n");
	ERR(big, 10, "key 'spec.template.spec.containers[0].env[0]'",
	    "is 300 bytes, more than the limit of 255");
	free(big);
}

static void limits(void **state)
{
	(void)state;
	ERR(HEAD "spec:\n  parallelism: 1000001\n" POD(""), 4, "key 'spec.parallelism'",
	    "must be 1 to 1000000");
	ERR(HEAD "spec:\n  completions: 1000001\n" POD(""), 4, "key 'spec.completions'",
	    "must be 1 to 1000000");
	ERR(HEAD "metadata:\n  annotations: {jobfs/nodes: \"1025\"}\nspec:\n" POD(""), 4,
	    "key 'metadata.annotations.jobfs/nodes'", "must be 1 to 1024");
	struct jf_spec *s = parse_ok(HEAD "spec:\n  completions: 1000000\n"
					  "  parallelism: 1000000\n" POD(""));
	assert_int_equal(s->parallelism, 1000000);
	jf_spec_free(s);
	/* at most JF_SPEC_MAX_IGNORED fields listed under ignored: */
	char *many = malloc(1001 * 16 + 512);
	assert_non_null(many);
	strcpy(many, HEAD "spec:\n" POD(""));
	for (int i = 0; i < 1000; i++)
		sprintf(many + strlen(many), "k%d: v\n", i);
	s = parse_ok(many);
	assert_int_equal(s->nignored, 1000);
	jf_spec_free(s);
	strcat(many, "k1000: v\n");
	ERR(many, 1009, "key 'k1000'",
	    "more than 1000 Kubernetes fields that jobfs does not model");
	free(many);
	/* ${VAR} output past JF_SPEC_MAX_BYTES: 60-byte values for 11-byte names */
	static const struct jf_subst longer = {
		"a-display-name-of-sixty-characters-which-is-long-but-allowed", "q", "g"
	};
	size_t n = 60000;
	char *big = malloc(n + 512);
	assert_non_null(big);
	strcpy(big, HEAD "metadata:\n  annotations:\n    note: \"");
	size_t o = strlen(big);
	while (o + 32 < n) {
		memcpy(big + o, "${JOB_NAME}", 11);
		o += 11;
	}
	strcpy(big + o, "\"\nspec:\n" POD(""));
	struct jf_error e = { 0 };
	s = NULL;
	enum jf_err rc = jf_spec_parse(big, strlen(big), JF_PLACE_GROUP, &longer, &s, &e);
	if (rc != JF_EFBIG)
		fail_msg("want EFBIG, got %s: %s", jf_err_name(rc), e.msg);
	assert_null(s);
	assert_non_null(strstr(e.msg, "after ${VAR} substitution the spec is more than 262144"));
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(example_pi),
		cmocka_unit_test(example_backoff_per_index),
		cmocka_unit_test(example_failindex),
		cmocka_unit_test(example_pod_failure_policy),
		cmocka_unit_test(example_success_policy),
		cmocka_unit_test(product_single),
		cmocka_unit_test(product_multi),
		cmocka_unit_test(ignored_paths),
		cmocka_unit_test(volumes),
		cmocka_unit_test(annotations),
		cmocka_unit_test(counts_and_defaults),
		cmocka_unit_test(substitution),
		cmocka_unit_test(form_errors),
		cmocka_unit_test(k8s_rules),
		cmocka_unit_test(pod_failure_policy),
		cmocka_unit_test(success_policy),
		cmocka_unit_test(env),
		cmocka_unit_test(limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
