/*
 * fuzz_yamljson.c - libFuzzer target: a YAML document as JSON (runtime/yamljson.h: CDI specs).
 * The work and the invariants are in targets.c; see scripts/fuzz.sh.
 */
#include "tests/fuzz/targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return jf_fuzz_yamljson(data, size);
}
