/* Helpers shared by the libFuzzer targets. A broken invariant aborts, which
 * libFuzzer reports as a crash and saves the input that caused it. */
#ifndef PSCHED_FUZZ_COMMON_H
#define PSCHED_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipesched.h"

/* The libFuzzer entry point (declared here for -Wmissing-prototypes). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Print what broke, with the library's last error, and abort. */
void fuzz_fail(const char *what, psched_status status);

/* Reads little pieces of the input in order; past its end every read is 0. */
typedef struct fuzz_input {
    const uint8_t *data;
    size_t size, at;
} fuzz_input;

uint8_t fuzz_byte(fuzz_input *in);
uint32_t fuzz_u32(fuzz_input *in);
/* Eight raw bytes as a double: NaN, infinities and denormals included. */
double fuzz_double(fuzz_input *in);

/* Every read-only use of a schedule: validate, simulate (which must agree
 * with validate), every export with and without the report, the hash, the
 * op copies, a CSV round trip that must reproduce the hash, and lowering
 * whose result must validate. Returns the status of psched_validate(). */
psched_status fuzz_exercise(const psched_schedule *schedule);

#endif
