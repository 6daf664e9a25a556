/*  =========================================================================
    act_call - a tool call as submitted by a client: validated once, with
    its meta-properties and every reference in its parameters parsed
    (SEMANTICS.md sections 2 and 7).
    ========================================================================= */

#ifndef ACT_CALL_H_INCLUDED
#define ACT_CALL_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include "act_err.h"
#include "act_ref.h"
#include "act_method.h"
#include "act_ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACT_MAX_TOOL        256
#define ACT_MAX_CALL_ID     128     //  _id, the client's idempotency key
#define ACT_TRACE_LEN       55      //  _trace, a W3C traceparent (version 00)

//  A retry policy; a field below zero was not given and takes the default.
typedef struct {
    long long max_attempts;     //  Dispatches allowed, at least 1
    long long initial_ms;       //  Wait before the second attempt
    double backoff;             //  Factor applied to the wait per attempt
    long long max_ms;           //  Longest wait between attempts
} act_retry_t;

typedef struct {
    json_t *json;               //  The call as submitted, owned
    const char *tool;           //  _tool, inside json
    act_expr_t *output;         //  _outputPath, NULL for fire-and-forget
    act_method_t method;        //  _outputMethod, default ACT_SET
    const char *instance;       //  _instance, inside json, or NULL
    const char *id;             //  _id, inside json, or NULL
    long long timeout_ms;       //  _timeout, or -1 when not given
    act_retry_t retry;          //  _retry; fields not given are -1
    act_expr_t **refs;          //  Every reference expression in the
                                //  parameters, in the order of a walk
    size_t nrefs;               //  Number of refs
    const char *trace;          //  _trace (W3C traceparent), inside json, or NULL
} act_call_t;

//  Validate call and parse what the broker needs. Returns a new call that
//  holds its own reference to the JSON, or NULL with err set (bad_call,
//  bad_reference, bad_method) and nothing kept.
act_call_t *act_call_parse (json_t *call, act_err_t *err);

//  Destroy the call and null the pointer; safe on NULL.
void act_call_destroy (act_call_t **self_p);

//  The expressions of the parameters that hold references, as written
//  (each once, in the order of a walk): a new array, or NULL when the
//  parameters hold none.
json_t *act_call_references (const act_call_t *self);

//  The parameters a worker receives: the top-level "_" keys removed, every
//  reference replaced by its value in ctx (in the call's instance), and
//  every "††" literal unescaped. Returns a new object, or NULL with err set
//  to unresolved_reference naming the first absent reference.
json_t *act_call_params (const act_call_t *self, act_ctx_t *ctx, act_err_t *err);

#ifdef __cplusplus
}
#endif

#endif
