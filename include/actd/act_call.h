/*  =========================================================================
    act_call - a tool call as submitted by a client: validated once, with
    its meta-properties and every reference in its parameters parsed
    (SEMANTICS.md sections 2 and 7).

    PROTOCOL.md and SEMANTICS.md are the ACT/1 specification; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_CALL_H_INCLUDED
#define ACT_CALL_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include "act_err.h"
#include "act_ref.h"
#include "act_method.h"
#include "act_ctx.h"
#include "act_scan.h"

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

//  A piece of a call's parameters in its text: a top-level member that is
//  not a meta-property, or a string inside one that starts with a dagger
typedef struct {
    size_t offset;              //  Its first byte in the call's text
    size_t size;                //  Its bytes (a member: key to end of value)
    int ref;                    //  A reference: its index in refs; -1: a
                                //  "††" literal; -2: a member
} act_call_span_t;

typedef struct {
    char *text;                 //  The call as submitted (JSON text),
                                //  NUL-terminated, in the call's allocation
    size_t size;                //  Bytes of text
    json_t *json;               //  The call as a tree, NULL until
                                //  act_call_json builds it
    char *strings;              //  The decoded meta strings, in spans' allocation
    const char *tool;           //  _tool, in strings
    act_expr_t *output;         //  _outputPath, NULL for fire-and-forget
    act_method_t method;        //  _outputMethod, default ACT_SET
    const char *instance;       //  _instance, in strings, or NULL
    const char *id;             //  _id, in strings, or NULL
    long long timeout_ms;       //  _timeout, or -1 when not given
    act_retry_t retry;          //  _retry; fields not given are -1
    act_expr_t **refs;          //  Every reference expression in the
                                //  parameters, in the text's order
    size_t nrefs;               //  Number of refs
    const char *trace;          //  _trace (W3C traceparent), in strings, or NULL
    act_call_span_t *spans;     //  The parameters' members and dagger
                                //  strings, in the text's order (owned,
                                //  refs and strings in the same block)
    size_t nspans;              //  Number of spans
    bool dumped_numbers;        //  Every number in the parameters is written
                                //  as act_json_dump writes it
} act_call_t;

//  Validate the size bytes of JSON at text (not NUL-terminated) as a call,
//  in one pass of scan (NULL: a scanner of its own), and parse what the
//  broker needs. Returns a new call holding a copy of the text, or NULL
//  with err set (bad_json, bad_call, bad_reference, bad_method) and
//  nothing kept.
act_call_t *act_call_new (act_scan_t *scan, const char *text, size_t size, act_err_t *err);

//  The same from a tree (a PLAN's entry, a stored call): its text is
//  act_json_dump's, and the call keeps a reference to the tree.
act_call_t *act_call_parse (json_t *call, act_err_t *err);

//  Destroy the call and null the pointer; safe on NULL.
void act_call_destroy (act_call_t **self_p);

//  The call as a tree, parsed from its text once (then kept): borrowed, or
//  NULL when memory ran out.
json_t *act_call_json (act_call_t *self);

//  The expressions of the parameters that hold references, as written
//  (each once, in the order of a walk): a new array, or NULL when the
//  parameters hold none.
json_t *act_call_references (const act_call_t *self);

//  The parameters a worker receives: the top-level "_" keys removed, every
//  reference replaced by its value in ctx (in the call's instance), and
//  every "††" literal unescaped. Returns a new object, or NULL with err set
//  to unresolved_reference naming the first absent reference.
json_t *act_call_params (act_call_t *self, act_ctx_t *ctx, act_err_t *err);

//  The same parameters as JSON text, made from the call's text without a
//  tree: the members kept and the bytes between references copied as
//  they are, each reference written as act_json_dump writes its value.
//  When the call's numbers are not all as act_json_dump writes them, the
//  tree is dumped instead. Returns a new string, or NULL with err set.
char *act_call_params_text (act_call_t *self, act_ctx_t *ctx, act_err_t *err);

//  As act_call_params_text, but the text is at most max bytes: past them
//  it stops, and returns NULL with err too_large (a reference repeated
//  may turn a small call into parameters of any size).
char *act_call_params_text_within (act_call_t *self, act_ctx_t *ctx, size_t max,
                                   act_err_t *err);

//  True when every number in the size bytes of valid JSON at text is
//  written as act_json_dump writes it (an int64 integer other than "-0",
//  or a real in act_dtoa's shortest form).
bool act_call_numbers_dumped (const char *text, size_t size);

#ifdef __cplusplus
}
#endif

#endif
