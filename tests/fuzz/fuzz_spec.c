/*
 * fuzz_spec.c - libFuzzer target: the native spec (reference 2.1), parsed for a group and for a
 * batch. The work and the invariants are in targets.c; see scripts/fuzz.sh.
 */
#include "tests/fuzz/targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return jf_fuzz_spec(data, size);
}
