/*
 * targets.c - one entry point per parser, shared by the libFuzzer targets
 * (tests/fuzz/fuzz_*.c) and the corpus replay (tests/unit/test_fuzz_corpus.c).
 *
 * Each function feeds one input to a parser exactly as the daemon would
 * (the native spec both as a group and as an /tasks batch; a Job with the
 * ${VAR} values a real group has, then with the longest values a name can
 * have and one variable missing) and checks, cheaply, what every result
 * must satisfy: the limits of core/spec.h, core/cluster.h and core/ctl.h
 * on success, and a well-formed message on failure (see targets.h).  A
 * violation is printed and abort()s.
 */
#include "tests/fuzz/targets.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cluster.h"
#include "core/ctl.h"
#include "core/names.h"
#include "core/spec.h"
#include "runtime/yamljson.h"

static void broken(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void broken(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fuzz invariant broken: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			broken(__VA_ARGS__);                                                       \
	} while (0)

/* Valid UTF-8 without C0/C1 controls, DEL, U+2028/2029. */
static bool one_clean_line(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		unsigned c = p[i];
		if (c < 0x20 || c == 0x7f)
			return false;
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t need = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
		if (c < 0xc2 || c > 0xf4)
			return false;
		unsigned cp = c & (need == 1 ? 0x1f : need == 2 ? 0x0f : 0x07);
		for (size_t k = 1; k <= need; k++) {
			if (i + k >= len || (p[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029)
			return false;
		i += need + 1;
	}
	return true;
}

static void check_error(const char *what, enum jf_err rc, const struct jf_error *e)
{
	CHECK(rc != JF_OK, "%s: check_error on success", what);
	CHECK(e->code == rc, "%s: err.code %d but returned %d", what, e->code, rc);
	size_t len = strnlen(e->msg, sizeof(e->msg));
	CHECK(len < sizeof(e->msg), "%s: message not NUL-terminated", what);
	CHECK(len > 0, "%s: empty message for %s", what, jf_err_name(rc));
	CHECK(one_clean_line(e->msg, len), "%s: message with control or invalid bytes: %s", what,
	      e->msg);
	CHECK(e->line >= 0, "%s: negative line %d", what, e->line);
	if (e->line > 0) {
		char want[32];
		snprintf(want, sizeof(want), "line %d: ", e->line);
		CHECK(strncmp(e->msg, want, strlen(want)) == 0, "%s: line %d but message %s", what,
		      e->line, e->msg);
	}
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static size_t strv_bytes(char *const *v, size_t n)
{
	size_t b = 0;
	for (size_t i = 0; i < n; i++) {
		CHECK(v[i] != NULL, "argv entry %zu is NULL", i);
		b += strlen(v[i]) + 1;
	}
	CHECK(n == 0 || v[n] == NULL, "argv not NULL-terminated");
	return b;
}

static bool gpus_ok(int g)
{
	return g == 0 || g == 1 || g == 2 || g == 4 || g == 8;
}

static void check_spec(const struct jf_spec *s, enum jf_spec_place place)
{
	CHECK(s != NULL, "success without a spec");
	CHECK(!s->name || (utf8_chars(s->name) >= 1 && utf8_chars(s->name) <= JF_SPEC_MAX_NAME),
	      "name of %zu characters", s->name ? utf8_chars(s->name) : 0);
	CHECK(gpus_ok(s->gpus), "gpus %d", s->gpus);
	CHECK(s->gpus == 0 || s->gpu, "%d gpus without a model", s->gpus);
	CHECK(!s->gpu || (strlen(s->gpu) >= 1 && strlen(s->gpu) <= JF_SPEC_MAX_NAME), "gpu model");
	CHECK(s->completions >= 1 && s->completions <= JF_SPEC_MAX_COMPLETIONS, "completions %lld",
	      (long long)s->completions);
	CHECK(s->parallelism >= 1 && s->parallelism <= s->completions, "parallelism %lld of %lld",
	      (long long)s->parallelism, (long long)s->completions);
	CHECK(s->count >= 1 && s->count <= JF_SPEC_MAX_COUNT, "count %lld", (long long)s->count);
	CHECK(place == JF_PLACE_BATCH || s->count == 1, "a group with count %lld",
	      (long long)s->count);
	CHECK(place == JF_PLACE_GROUP || s->completions == 1, "a batch with completions %lld",
	      (long long)s->completions);
	CHECK(s->nodes >= 1 && s->nodes <= JF_SPEC_MAX_NODES_PER_TASK, "nodes %lld",
	      (long long)s->nodes);
	CHECK(s->timeout >= 1 && s->timeout <= 366LL * 86400, "timeout %lld",
	      (long long)s->timeout);
	CHECK(s->unit_runtime >= 0 && s->unit_runtime <= 366LL * 86400, "unit_runtime");
	CHECK(s->retries >= -1 && s->retries <= INT32_MAX, "retries %lld", (long long)s->retries);
	CHECK(s->max_failures >= -1 && s->max_failures <= INT32_MAX, "max_failures");
	CHECK(s->max_failed_indexes >= -1 && s->max_failed_indexes <= s->completions,
	      "max_failed_indexes");
	CHECK(s->shm_size >= 0 && s->nstorage <= 16, "storage");
	CHECK(s->ncontainers >= 1 && s->ncontainers <= JF_SPEC_MAX_CONTAINERS, "%zu containers",
	      s->ncontainers);
	bool runs = false;
	for (size_t i = 0; i < s->ncontainers; i++) {
		const struct jf_container *c = &s->containers[i];
		CHECK(c->name && strlen(c->name) >= 1 && strlen(c->name) <= JF_SPEC_MAX_NAME,
		      "container %zu name", i);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(c->name, s->containers[j].name) != 0, "container name twice");
		CHECK(!c->image || strlen(c->image) <= JF_SPEC_MAX_STRING, "image length");
		CHECK(c->ncommand + c->nargs <= JF_SPEC_MAX_ARGV, "%zu argv entries",
		      c->ncommand + c->nargs);
		size_t ab = strv_bytes(c->command, c->ncommand) + strv_bytes(c->args, c->nargs);
		CHECK(ab <= JF_SPEC_MAX_ARGV_BYTES, "argv of %zu bytes", ab);
		runs = runs || c->ncommand || c->nargs;
		CHECK(c->nenv <= JF_SPEC_MAX_ENV, "%zu env entries", c->nenv);
		size_t eb = 0;
		for (size_t j = 0; j < c->nenv; j++) {
			const char *k = c->env[j].key;
			CHECK(k && c->env[j].value, "env entry %zu NULL", j);
			size_t kl = strlen(k);
			CHECK(kl >= 1 && kl <= JF_SPEC_MAX_ENV_NAME, "env name of %zu bytes", kl);
			CHECK(!(k[0] >= '0' && k[0] <= '9') &&
				      strspn(k,
					     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					     "0123456789_") == kl,
			      "env name %s", k);
			for (size_t m = 0; m < j; m++)
				CHECK(strcmp(k, c->env[m].key) != 0, "env %s twice", k);
			eb += kl + 1 + strlen(c->env[j].value) + 1;
		}
		CHECK(eb <= JF_SPEC_MAX_ENV_BYTES, "env of %zu bytes", eb);
		CHECK(c->gpus >= -1 && c->gpus <= s->gpus, "container gpus %d of %d", c->gpus,
		      s->gpus);
		CHECK(c->cpu_milli >= 0 && c->mem_bytes >= 0, "negative resources");
	}
	/* with no command anywhere, only an image's own entrypoint can run it:
	 * the host runtime must refuse it when it is submitted, naming the line */
	if (!runs) {
		CHECK(s->no_command, "accepted without a command, not flagged");
		struct jf_error e = { 0 };
		CHECK(jf_spec_check_runtime(s, false, &e) == JF_ENOTSUP && e.line > 0,
		      "the host runtime accepts a spec without a command");
		for (size_t i = 0; i < s->ncontainers; i++)
			if (!s->containers[i].ncommand && !s->containers[i].nargs)
				CHECK(s->containers[i].image ||
					      jf_spec_check_runtime(s, true, &e) == JF_EINVAL,
				      "container %zu runnable with neither image nor command", i);
	}
	CHECK(s->nignored <= JF_SPEC_MAX_IGNORED, "%zu ignored", s->nignored);
	CHECK(s->form == JF_FORM_K8S || s->nignored == 0, "native spec with ignored keys");
	for (size_t i = 0; i < s->npfp; i++)
		CHECK(s->pfp[i].nvalues <= 255, "pfp values");
	for (size_t i = 0; i < s->nsuccess; i++) {
		const struct jf_success_rule *r = &s->success[i];
		for (size_t j = 0; j < r->nindexes; j++)
			CHECK(r->indexes[j].lo >= 0 && r->indexes[j].lo <= r->indexes[j].hi &&
				      r->indexes[j].hi < s->completions,
			      "success index range");
	}
}

/* One parse: success or a proper error, never both or neither. */
static void spec_once(const uint8_t *data, size_t size, enum jf_spec_place place,
		      const struct jf_subst *sub)
{
	struct jf_spec *s = (struct jf_spec *)&s; /* must be overwritten */
	struct jf_error e;
	memset(&e, 0, sizeof(e));
	enum jf_err rc = jf_spec_parse((const char *)data, size, place, sub, &s, &e);
	if (rc == JF_OK) {
		check_spec(s, place);
		struct jf_error pe;
		CHECK(jf_spec_text_plausible((const char *)data, size, &pe),
		      "accepted but not plausible: %s", pe.msg);
	} else {
		CHECK(s == NULL, "failed but *out is not NULL");
		check_error("spec", rc, &e);
	}
	jf_spec_free(s == (struct jf_spec *)&s ? NULL : s);
}

int jf_fuzz_spec(const uint8_t *data, size_t size)
{
	spec_once(data, size, JF_PLACE_GROUP, NULL);
	spec_once(data, size, JF_PLACE_BATCH, NULL);
	return 0;
}

int jf_fuzz_k8s(const uint8_t *data, size_t size)
{
	static const struct jf_subst real = { "fuzz-job", "q", "fuzz-job" };
	static const char *const n63 =
		"Lorem-ipsum-dolor-sit-amet.consectetur_adipiscing-elit-sed-do-e";
	/* 63 characters of 4 bytes: the longest display name ${JOB_NAME} can be */
#define R7(x) x x x x x x x
#define R9(x) x x x x x x x x x
	static const char *const u63 = R9(R7("\xf0\x9f\x98\x80"));
#undef R7
#undef R9
	const struct jf_subst longest = { u63, n63, NULL };
	spec_once(data, size, JF_PLACE_GROUP, &real);
	spec_once(data, size, JF_PLACE_BATCH, &longest);

	/* substitution alone: bounded output, and no change without a '$' */
	struct jf_error e;
	memset(&e, 0, sizeof(e));
	char *out = jf_subst_apply((const char *)data, size, &longest, &e);
	if (out) {
		size_t n = strlen(out);
		CHECK(n <= JF_SPEC_MAX_BYTES, "substituted text of %zu bytes", n);
		if (!memchr(data, '$', size) && !memchr(data, '\0', size))
			CHECK(n == size && memcmp(out, data, size) == 0,
			      "text changed without '$'");
		free(out);
	} else {
		check_error("subst", e.code, &e);
	}
	return 0;
}

int jf_fuzz_queue_spec(const uint8_t *data, size_t size)
{
	struct jf_queue_spec q;
	struct jf_error e;
	memset(&q, 0x5a, sizeof(q));
	memset(&e, 0, sizeof(e));
	struct jf_queue_spec before = q;
	enum jf_err rc = jf_queue_spec_parse((const char *)data, size, &q, &e);
	if (rc == JF_OK) {
		CHECK(q.capacity >= 0 && q.capacity <= 1000000, "capacity %lld",
		      (long long)q.capacity);
		CHECK(q.group_timeout >= 0 && q.group_timeout <= 366LL * 86400, "group_timeout");
		CHECK(!q.partition ||
			      (strlen(q.partition) >= 1 && strlen(q.partition) <= JF_SPEC_MAX_NAME),
		      "partition");
		jf_queue_spec_release(&q);
	} else {
		CHECK(memcmp(&q, &before, sizeof(q)) == 0, "a refused queue spec changed *out");
		check_error("queue spec", rc, &e);
	}
	return 0;
}

int jf_fuzz_ctl(const uint8_t *data, size_t size)
{
	enum jf_ctl_verb v = JF_CTL_NVERBS;
	struct jf_error e;
	memset(&e, 0, sizeof(e));
	enum jf_err rc = jf_ctl_parse((const char *)data, size, &v, &e);
	if (rc == JF_OK) {
		CHECK((unsigned)v < JF_CTL_NVERBS, "verb %d", (int)v);
		const char *name = jf_ctl_verb_name(v);
		/* the input is the name, blanks around it, one newline at most */
		const char *p = memmem(data, size, name, strlen(name));
		CHECK(p != NULL, "verb %s not in the input", name);
		size_t at = (size_t)(p - (const char *)data), nl = 0;
		for (size_t i = 0; i < size; i++) {
			if (i >= at && i < at + strlen(name))
				continue;
			char c = (char)data[i];
			CHECK(c == ' ' || c == '\t' || c == '\r' || c == '\n',
			      "byte 0x%02x accepted", data[i]);
			nl += c == '\n';
		}
		CHECK(nl <= 1 && (nl == 0 || data[size - 1] == '\n'), "newlines accepted");
	} else {
		CHECK(v == JF_CTL_NVERBS, "a refused write set the verb");
		check_error("ctl", rc, &e);
		CHECK(strlen(e.msg) < 300, "ctl message of %zu bytes", strlen(e.msg));
	}
	return 0;
}

static bool name_ok(const char *s)
{
	return s && jf_name_valid(s, NULL);
}

int jf_fuzz_cluster(const uint8_t *data, size_t size)
{
	struct jf_cluster *c = (struct jf_cluster *)&c;
	struct jf_error e;
	memset(&e, 0, sizeof(e));
	enum jf_err rc = jf_cluster_parse((const char *)data, size, &c, &e);
	if (rc != JF_OK) {
		CHECK(c == NULL, "failed but *out is not NULL");
		check_error("cluster", rc, &e);
		return 0;
	}
	CHECK(c && c->name && c->currency, "cluster without name or currency");
	CHECK(name_ok(c->name), "cluster name");
	CHECK(strlen(c->currency) == 3, "currency");
	CHECK(c->nmodels >= 1 && c->nmodels <= JF_CLUSTER_MAX_MODELS, "%zu models", c->nmodels);
	CHECK(c->nmachines >= 1 && c->nmachines <= JF_CLUSTER_MAX_MACHINES, "%zu machines",
	      c->nmachines);
	CHECK(c->cpu_price_spot >= 0 && c->cpu_price_spot <= c->cpu_price_ondemand, "cpu prices");
	CHECK(c->preempt_grace_s >= 0 && c->preempt_grace_s <= 86400, "preempt_grace");
	CHECK(c->spot_risk_max >= 0.0 && c->spot_risk_max <= 1.0, "spot risk");
	for (size_t i = 0; i < c->nmodels; i++) {
		const struct jf_gpu_model *m = &c->models[i];
		CHECK(name_ok(m->name), "model %zu name", i);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(m->name, c->models[j].name) != 0, "model name twice");
		CHECK(m->vram_bytes > 0 && m->cpu_milli_per_gpu > 0 && m->mem_bytes_per_gpu > 0,
		      "model %zu sizes", i);
		CHECK(m->price_spot >= 0 && m->price_spot <= m->price_ondemand, "model prices");
	}
	for (size_t i = 0; i < c->nmachines; i++) {
		const struct jf_machine *m = &c->machines[i];
		CHECK(name_ok(m->name), "machine %zu name", i);
		CHECK(m->model < c->nmodels, "machine %zu model %zu", i, m->model);
		CHECK(m->gpus >= 1 && m->gpus <= JF_MACHINE_MAX_GPUS, "machine gpus %d", m->gpus);
		const struct jf_gpu_model *gm = &c->models[m->model];
		CHECK(m->cpu_milli == m->gpus * gm->cpu_milli_per_gpu &&
			      m->mem_bytes == m->gpus * gm->mem_bytes_per_gpu,
		      "machine %zu size", i);
	}
	jf_cluster_free(c);
	return 0;
}

/* values in v, to the bound jf_yaml_to_json keeps */
static size_t values(json_t *v, int depth)
{
	CHECK(depth <= JF_YJ_MAX_DEPTH + 1, "a value %d deep", depth);
	size_t n = 1, i;
	const char *k;
	json_t *x;
	if (json_is_array(v))
		json_array_foreach(v, i, x) n += values(x, depth + 1);
	else if (json_is_object(v))
		json_object_foreach(v, k, x) n += values(x, depth + 1);
	return n;
}

int jf_fuzz_yamljson(const uint8_t *data, size_t size)
{
	char err[256];
	memset(err, 0x55, sizeof(err));
	json_t *v = jf_yaml_to_json((const char *)data, size, err, sizeof(err));
	if (v) {
		CHECK(values(v, 0) <= JF_YJ_MAX_NODES, "more values than the bound");
		char *text = json_dumps(v, JSON_ENCODE_ANY);
		CHECK(text != NULL, "a value jansson cannot write");
		free(text);
		json_decref(v);
	} else {
		size_t len = strnlen(err, sizeof(err));
		CHECK(len > 0 && len < sizeof(err), "refused without a message");
		CHECK(one_clean_line(err, len), "message with control or invalid bytes: %s", err);
	}
	return 0;
}

const struct jf_fuzz_target jf_fuzz_targets[] = {
	{ "spec", jf_fuzz_spec },
	{ "k8s", jf_fuzz_k8s },
	{ "queue_spec", jf_fuzz_queue_spec },
	{ "ctl", jf_fuzz_ctl },
	{ "cluster", jf_fuzz_cluster },
	{ "yamljson", jf_fuzz_yamljson },
	{ NULL, NULL },
};
