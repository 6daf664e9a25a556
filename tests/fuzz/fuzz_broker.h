/*  =========================================================================
    fuzz_broker - the harness of the two broker targets (fuzz_client_frames
    and fuzz_worker_frames): one broker without sockets, fed whole multipart
    messages, with act_broker_pass after each.

    A line of the input (see fuzz_common.h for fields and escapes) is one
    message. It may start with prefixes:

        @<c>  the peer's routing id: peer0..peer5, or "auto" (the client
              target's own worker), chosen by (c - '0') mod 7; default peer0
        >     send it to the other socket than the target's (client target:
              the worker socket; worker target: the client socket)
        !     raw: the fields are all the frames after the routing id (else
              the protocol header, ACTC01 or ACTW01, comes first)

    State accumulates across inputs: one broker (store ":memory:") lives for
    FUZZ_RESET inputs, then a fresh one starts. Every message the harness
    feeds (the fuzzer's and its own) is kept in a history since the last
    reset; when a sanitizer stops the process, the history is written to
    $FUZZ_HISTORY (if set). That file is itself an input: run the target on
    it with FUZZ_REPLAY=1 (a fresh broker per input, no traffic of the
    harness's own) to reproduce and minimize a crash that needed the state.
    ========================================================================= */

#ifndef FUZZ_BROKER_H_INCLUDED
#define FUZZ_BROKER_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Run one fuzz input; to_worker says which socket lines go to by default
void fuzz_broker_input (const uint8_t *data, size_t size, bool to_worker);

#endif
