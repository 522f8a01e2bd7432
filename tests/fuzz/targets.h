/*
 * targets.h - the entry points the libFuzzer targets and the corpus replay
 * test (tests/unit/test_fuzz_corpus.c) share.
 *
 * Each takes one input, runs it through a parser the way the daemon does,
 * and checks invariants that must hold whatever the input: on success the
 * result is within the documented limits; on failure the error code is
 * set, the message is non-empty, one line of valid UTF-8 without control
 * characters.  A broken invariant prints what broke and calls abort(), so
 * libFuzzer keeps the input and a cmocka run fails.  They always return 0.
 */
#ifndef JF_FUZZ_TARGETS_H
#define JF_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

int jf_fuzz_spec(const uint8_t *data, size_t size);       /* native spec, group and batch */
int jf_fuzz_k8s(const uint8_t *data, size_t size);        /* a Job with ${VAR} substitution */
int jf_fuzz_queue_spec(const uint8_t *data, size_t size); /* the queue spec */
int jf_fuzz_ctl(const uint8_t *data, size_t size);        /* a ctl write */
int jf_fuzz_cluster(const uint8_t *data, size_t size);    /* the cluster file */
int jf_fuzz_yamljson(const uint8_t *data, size_t size);   /* YAML as JSON (CDI specs) */

struct jf_fuzz_target {
	const char *name; /* "spec": tests/fuzz/corpus/spec, fuzz_spec */
	int (*run)(const uint8_t *data, size_t size);
};

/* Every target, ended by { NULL, NULL }. */
extern const struct jf_fuzz_target jf_fuzz_targets[];

#endif
