/*
 * fuzz_ctl.c - libFuzzer target: a write to a ctl file (reference 4).
 * The work and the invariants are in targets.c; see scripts/fuzz.sh.
 */
#include "tests/fuzz/targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return jf_fuzz_ctl(data, size);
}
