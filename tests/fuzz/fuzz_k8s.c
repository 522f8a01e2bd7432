/*
 * fuzz_k8s.c - libFuzzer target: a Kubernetes Job (reference 2.3) with ${VAR} substitution.
 * The work and the invariants are in targets.c; see scripts/fuzz.sh.
 */
#include "tests/fuzz/targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return jf_fuzz_k8s(data, size);
}
