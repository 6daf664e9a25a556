/*  =========================================================================
    partial_diff - act_schema_valid_unresolved against what it promises
    (partial_diff.h says what is checked).

    A resolution is made in the call's text: each reference's string token
    (its span) replaced by a value's text, then parsed as a new call, which
    holds no reference: its parameters are then what act_call_params
    gives, "††" literals unescaped by the library as at dispatch.
    ========================================================================= */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "actd/act.h"
#include "partial_diff.h"

static const char *s_values [PARTIAL_VALUE_COUNT] = { PARTIAL_VALUES };

//  The call with the reference at index i replaced by the value at
//  (i * step + offset) modulo PARTIAL_VALUE_COUNT; NULL when its text is
//  no call (never: each value is a JSON value)
static act_call_t *
s_resolve (const act_call_t *call, size_t step, size_t offset)
{
    char *text = malloc (call->size + call->nrefs * 8 + 1);
    if (!text)
        return NULL;
    size_t used = 0, from = 0;
    for (size_t index = 0; index < call->nspans; index++) {
        const act_call_span_t *span = &call->spans [index];
        if (span->ref < 0)
            continue;
        memcpy (text + used, call->text + from, span->offset - from);
        used += span->offset - from;
        const char *value = s_values [((size_t) span->ref * step + offset)
                                      % PARTIAL_VALUE_COUNT];
        memcpy (text + used, value, strlen (value));
        used += strlen (value);
        from = span->offset + span->size;
    }
    memcpy (text + used, call->text + from, call->size - from);
    used += call->size - from;
    act_err_t err = { 0 };
    act_call_t *resolved = act_call_new (NULL, text, used, &err);
    free (text);
    return resolved;
}

//  The verdict of act_schema_valid on the parameters of a call without
//  references; -1 when they cannot be made
static int
s_full (act_schema_t *schema, act_call_t *call)
{
    act_err_t err = { 0 };
    json_t *params = act_call_params (call, NULL, &err);
    if (!params)
        return -1;
    int valid = act_schema_valid (schema, params, &err);
    json_decref (params);
    return valid;
}

//  Every resolution tried refused by the full check: NULL, or what is not
static const char *
s_sound (act_schema_t *schema, act_call_t *call, const char *refusal, size_t *resolved)
{
    static char out [1200];
    for (size_t round = 0; round < 2 * PARTIAL_VALUE_COUNT; round++) {
        act_call_t *resolution = s_resolve (call, round / PARTIAL_VALUE_COUNT,
                                            round % PARTIAL_VALUE_COUNT);
        int valid = resolution? s_full (schema, resolution): -1;
        if (valid) {
            snprintf (out, sizeof out, "refused \"%s\" but %s: %.600s", refusal,
                      valid < 0? "a resolution is no call": "valid resolved",
                      resolution? resolution->text: call->text);
            act_call_destroy (&resolution);
            return out;
        }
        act_call_destroy (&resolution);
        (*resolved)++;
    }
    return NULL;
}

const char *
partial_diff (act_schema_t *schema, act_call_t *call, bool *valid, size_t *resolved)
{
    static char out [1200];
    act_err_t err = { 0 };
    *valid = act_schema_valid_unresolved (schema, call, &err);
    *resolved = 0;
    if (!*valid && (!err.code || strcmp (err.code, ACT_E_BAD_CALL) || !*err.message)) {
        snprintf (out, sizeof out, "refused with %s \"%s\", not bad_call",
                  err.code? err.code: "no code", err.message);
        return out;
    }
    if (call->nrefs == 0) {
        act_err_t exact = { 0 };
        bool expected = act_schema_valid_call (schema, call, &exact);
        if (expected == *valid && (expected || !strcmp (exact.message, err.message)))
            return NULL;
        snprintf (out, sizeof out, "without references: \"%s\", act_schema_valid_call \"%s\"",
                  *valid? "": err.message, expected? "": exact.message);
        return out;
    }
    return *valid? NULL: s_sound (schema, call, err.message, resolved);
}
