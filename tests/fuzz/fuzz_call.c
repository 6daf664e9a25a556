/*  =========================================================================
    fuzz_call - act_json_parse, then act_call_parse, then act_call_params
    against a small context.

    The input is one JSON text. Besides the sanitizers, it checks what the
    headers promise (act_json.h, act_call.h):
    - a refused text is bad_json; a parsed one is no deeper than
      ACT_MAX_JSON_DEPTH, and act_json_dump of it parses back equal;
    - a refused call is bad_call, bad_reference or bad_method; a parsed one
      has a _tool of 1 to ACT_MAX_TOOL bytes and an output path parsed as
      one, and every reference it collected is a reference string;
    - act_call_params gives an object without top-level "_" keys, or
      fails with unresolved_reference.
    ========================================================================= */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "actd/act.h"
#include "fuzz_ctx.h"

static act_ctx_t *s_ctx;

#define S_CHECK(cond) \
    do { if (!(cond)) { \
        fprintf (stderr, "fuzz_call: %s broken\n", #cond); \
        abort (); } } while (0)

static bool
s_is (const char *code, const char *expected)
{
    return code && strcmp (code, expected) == 0;
}

static void
s_exit (void)
{
    act_ctx_destroy (&s_ctx);
}

static void
s_context (void)
{
    s_ctx = act_ctx_new ("fuzz");
    static const char *messages [] = {
        ("{\"type\": \"data\", \"kind\": \"state\", \"data\": {\"user\": {\"name\": \"Alex\"},"
            " \"items\": [{\"title\": \"one\"}, 2, \"three\"], \"q\": \"\xE2\x80\xA0state.user\"}}"),
        "{\"type\": \"data\", \"data\": {\"x\": 1, \"list\": [1, 2]}}",
        "{\"type\": \"data\", \"kind\": \"user\", \"_instance\": \"i1\", \"data\": {\"name\": \"Ines\"}}",
        "{\"type\": \"data\", \"kind\": \"state\", \"_instance\": \"i1\", \"data\": {\"user\": null}}",
    };
    fuzz_ctx_seed (s_ctx, "fuzz_call", messages, sizeof messages / sizeof messages [0]);
    atexit (s_exit);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (!s_ctx)
        s_context ();
    act_err_t err = { 0 };
    json_t *json = act_json_parse ((const char *) data, size, &err);
    if (!json) {
        S_CHECK (s_is (err.code, ACT_E_BAD_JSON));
        return 0;
    }
    S_CHECK (act_json_depth (json, ACT_MAX_JSON_DEPTH) <= ACT_MAX_JSON_DEPTH);
    char *text = act_json_dump (json);
    S_CHECK (text != NULL);
    json_t *again = act_json_parse (text, strlen (text), &err);
    S_CHECK (again && json_equal (json, again));
    json_decref (again);
    free (text);

    act_call_t *call = act_call_parse (json, &err);
    if (!call) {
        S_CHECK (s_is (err.code, ACT_E_BAD_CALL) || s_is (err.code, ACT_E_BAD_REFERENCE)
              || s_is (err.code, ACT_E_BAD_METHOD));
        json_decref (json);
        return 0;
    }
    S_CHECK (call->tool && *call->tool && strlen (call->tool) <= ACT_MAX_TOOL);
    S_CHECK (!call->output || call->output->output);
    S_CHECK (act_method_name (call->method) != NULL);
    for (size_t i = 0; i < call->nrefs; i++)
        S_CHECK (act_ref_is_reference (call->refs [i]->text) && !call->refs [i]->output);
    json_t *params = act_call_params (call, s_ctx, &err);
    if (params) {
        S_CHECK (json_is_object (params));
        const char *key;
        json_t *value;
        json_object_foreach (params, key, value)
            S_CHECK (key [0] != '_');
        char *dump = act_json_dump (params);
        free (dump);
        json_decref (params);
    }
    else
        S_CHECK (s_is (err.code, ACT_E_UNRESOLVED_REFERENCE));
    act_call_destroy (&call);
    json_decref (json);
    return 0;
}
