/*  =========================================================================
    fuzz_client_frames - client messages into one broker whose state
    accumulates across inputs (see fuzz_broker.h for the line format).

    A line is a client message: "CALL<tab>r1<tab>ctx<tab>{...}" becomes
    [peer0][ACTC01][CALL][r1][ctx][{...}]. The harness's own worker "auto"
    answers the tasks, so calls end and write their outputs.
    ========================================================================= */

#include "fuzz_broker.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    fuzz_broker_input (data, size, false);
    return 0;
}
