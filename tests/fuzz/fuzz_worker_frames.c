/*  =========================================================================
    fuzz_worker_frames - worker messages into one broker whose state
    accumulates across inputs (see fuzz_broker.h for the line format).

    A line is a worker message: "RESULT<tab>$T0<tab>{...}" becomes
    [peer0][ACTW01][RESULT][<the newest task sent to peer0>][{...}]. Before
    each input the harness submits two calls of a fixed list (activities
    t, u, echo), so READY workers get tasks to answer.
    ========================================================================= */

#include "fuzz_broker.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    fuzz_broker_input (data, size, true);
    return 0;
}
