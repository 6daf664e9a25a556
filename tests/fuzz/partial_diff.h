/*  =========================================================================
    partial_diff - act_schema_valid_unresolved against what it promises,
    on one schema and call: the check fuzz_schema runs on every call it
    makes and test_schema_partial on its cases and random calls.
    ========================================================================= */

#ifndef PARTIAL_DIFF_H_INCLUDED
#define PARTIAL_DIFF_H_INCLUDED

#include <stdbool.h>
#include "actd/act_schema.h"

//  The values a reference is resolved to in turn (JSON texts)
#define PARTIAL_VALUES  "0", "\"\"", "null", "true", "[]", "{}", "\"x\"", "1.5"
#define PARTIAL_VALUE_COUNT     8

//  Judge act_schema_valid_unresolved on call against schema:
//  - a call without references gets act_schema_valid_call's verdict and
//    message;
//  - a refusal of a call with references holds for every resolution
//    tried: each reference replaced by each of PARTIAL_VALUES in turn
//    (all the same value), then mixed (the reference at index i by value
//    i + shift, for every shift), the result parsed as a call and its
//    parameters (act_call_params) refused by act_schema_valid;
//  - a refusal is bad_call, with a message.
//  Returns NULL when it holds, else a description of the first difference
//  (static storage, until the next call). Sets *valid to the verdict of
//  act_schema_valid_unresolved and *resolved to how many resolutions were
//  judged.
const char *partial_diff (act_schema_t *schema, act_call_t *call, bool *valid,
                          size_t *resolved);

#endif
