/*
 * fuzz_queue_spec.c - libFuzzer target: the queue spec (reference 2.2).
 * The work and the invariants are in targets.c; see scripts/fuzz.sh.
 */
#include "tests/fuzz/targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return jf_fuzz_queue_spec(data, size);
}
