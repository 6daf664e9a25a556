/*  =========================================================================
    act_call - a tool call, validated once and parsed for the broker.
    ========================================================================= */

#include <string.h>
#include <stdlib.h>
#include <czmq.h>
#include "actd/act_call.h"

void
act_call_destroy (act_call_t **self_p)
{
    if (self_p && *self_p) {
        act_call_t *self = *self_p;
        for (size_t i = 0; i < self->nrefs; i++)
            act_expr_destroy (&self->refs [i]);
        free (self->refs);
        act_expr_destroy (&self->output);
        json_decref (self->json);
        free (self);
        *self_p = NULL;
    }
}

//  Parse every reference in a parameter value, at any depth
static int
s_collect (act_call_t *self, json_t *value, act_err_t *err)
{
    if (json_is_string (value)) {
        const char *text = json_string_value (value);
        if (!act_ref_is_reference (text))
            return 0;
        act_expr_t *expr = act_expr_parse (text, false, err);
        if (!expr)
            return -1;
        act_expr_t **refs = realloc (self->refs, (self->nrefs + 1) * sizeof *refs);
        if (!refs) {
            act_expr_destroy (&expr);
            return act_err_set (err, ACT_E_INTERNAL, "out of memory");
        }
        self->refs = refs;
        self->refs [self->nrefs++] = expr;
    }
    else
    if (json_is_object (value)) {
        const char *key;
        json_t *member;
        json_object_foreach (value, key, member)
            if (s_collect (self, member, err))
                return -1;
    }
    else
    if (json_is_array (value)) {
        size_t index;
        json_t *member;
        json_array_foreach (value, index, member)
            if (s_collect (self, member, err))
                return -1;
    }
    return 0;
}

//  A string meta-property of 1 to limit bytes
static int
s_string_meta (json_t *value, const char *name, size_t limit, const char **result,
               act_err_t *err)
{
    if (!json_is_string (value)
    ||  json_string_length (value) == 0 || json_string_length (value) > limit)
        return act_err_set (err, ACT_E_BAD_CALL,
                            "\"%s\" must be a string of 1 to %zu bytes", name, limit);
    *result = json_string_value (value);
    return 0;
}

static int
s_parse_retry (act_call_t *self, json_t *retry, act_err_t *err)
{
    if (!json_is_object (retry))
        return act_err_set (err, ACT_E_BAD_CALL, "\"_retry\" must be an object");
    const char *key;
    json_t *value;
    json_object_foreach (retry, key, value) {
        long long *field = NULL;
        long long least = 0;
        if (streq (key, "max_attempts")) {
            field = &self->retry.max_attempts;
            least = 1;
        }
        else
        if (streq (key, "initial_ms"))
            field = &self->retry.initial_ms;
        else
        if (streq (key, "max_ms"))
            field = &self->retry.max_ms;
        else
        if (streq (key, "backoff")) {
            if (!json_is_number (value) || json_number_value (value) < 1.0)
                return act_err_set (err, ACT_E_BAD_CALL,
                                    "\"_retry.backoff\" must be a number of at least 1");
            self->retry.backoff = json_number_value (value);
            continue;
        }
        else
            return act_err_set (err, ACT_E_BAD_CALL,
                                "\"_retry\" has an unknown field \"%.64s\"", key);
        if (!json_is_integer (value) || json_integer_value (value) < least)
            return act_err_set (err, ACT_E_BAD_CALL,
                                "\"_retry.%s\" must be an integer of at least %lld",
                                key, least);
        *field = json_integer_value (value);
    }
    return 0;
}

//  A lowercase hex digit
static bool
s_is_hex (char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

//  count lowercase hex digits; all zeros only when zeros_ok
static bool
s_hex_field (const char *text, size_t count, bool zeros_ok)
{
    bool nonzero = false;
    for (size_t i = 0; i < count; i++) {
        if (!s_is_hex (text [i]))
            return false;
        nonzero |= text [i] != '0';
    }
    return nonzero || zeros_ok;
}

//  A W3C traceparent of version 00: "00-<32 hex>-<16 hex>-<2 hex>", in
//  lowercase, the trace id and the parent id not all zeros
static int
s_parse_trace (act_call_t *self, json_t *value, act_err_t *err)
{
    const char *text = json_is_string (value)? json_string_value (value): NULL;
    bool valid = text && json_string_length (value) == ACT_TRACE_LEN
              && strncmp (text, "00-", 3) == 0 && s_hex_field (text + 3, 32, false)
              && text [35] == '-' && s_hex_field (text + 36, 16, false)
              && text [52] == '-' && s_hex_field (text + 53, 2, true);
    if (!valid)
        return act_err_set (err, ACT_E_BAD_CALL, "\"_trace\" must be a W3C traceparent: "
                            "\"00-<32 hex>-<16 hex>-<2 hex>\" in lowercase, ids not all zeros");
    self->trace = text;
    return 0;
}

//  Read one top-level meta-property
static int
s_parse_meta (act_call_t *self, const char *key, json_t *value, act_err_t *err)
{
    if (streq (key, "_tool"))
        return s_string_meta (value, key, ACT_MAX_TOOL, &self->tool, err);
    if (streq (key, "_instance"))
        return s_string_meta (value, key, ACT_MAX_INSTANCE, &self->instance, err);
    if (streq (key, "_id"))
        return s_string_meta (value, key, ACT_MAX_CALL_ID, &self->id, err);
    if (streq (key, "_outputPath")) {
        if (!json_is_string (value))
            return act_err_set (err, ACT_E_BAD_CALL, "\"_outputPath\" must be a string");
        self->output = act_expr_parse (json_string_value (value), true, err);
        return self->output? 0: -1;
    }
    if (streq (key, "_outputMethod")) {
        if (!json_is_string (value))
            return act_err_set (err, ACT_E_BAD_CALL, "\"_outputMethod\" must be a string");
        if (act_method_parse (json_string_value (value), &self->method))
            return act_err_set (err, ACT_E_BAD_METHOD,
                                "\"_outputMethod\" \"%.32s\" is not one of set, merge, "
                                "assign, push, concat, erase", json_string_value (value));
        return 0;
    }
    if (streq (key, "_timeout")) {
        if (!json_is_integer (value) || json_integer_value (value) <= 0)
            return act_err_set (err, ACT_E_BAD_CALL,
                                "\"_timeout\" must be a positive integer (milliseconds)");
        self->timeout_ms = json_integer_value (value);
        return 0;
    }
    if (streq (key, "_retry"))
        return s_parse_retry (self, value, err);
    if (streq (key, "_trace"))
        return s_parse_trace (self, value, err);
    return 0;                   //  Other meta-properties are the client's own
}

act_call_t *
act_call_parse (json_t *call, act_err_t *err)
{
    if (!json_is_object (call)) {
        act_err_set (err, ACT_E_BAD_CALL, "a call must be a JSON object");
        return NULL;
    }
    act_call_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->json = json_incref (call);
    self->method = ACT_SET;
    self->timeout_ms = -1;
    self->retry = (act_retry_t) { -1, -1, -1.0, -1 };
    const char *key;
    json_t *value;
    json_object_foreach (call, key, value) {
        int rc = key [0] == '_'? s_parse_meta (self, key, value, err)
                               : s_collect (self, value, err);
        if (rc) {
            act_call_destroy (&self);
            return NULL;
        }
    }
    if (!self->tool) {
        act_err_set (err, ACT_E_BAD_CALL, "a call needs \"_tool\"");
        act_call_destroy (&self);
    }
    return self;
}

json_t *
act_call_references (const act_call_t *self)
{
    if (self->nrefs == 0)
        return NULL;
    json_t *texts = json_array ();
    for (size_t i = 0; i < self->nrefs; i++) {
        const char *text = self->refs [i]->text;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = streq (self->refs [j]->text, text);
        if (!seen)
            json_array_append_new (texts, json_string (text));
    }
    return texts;
}

//  A parameter value with references replaced, in the order s_collect met
//  them. Returns a new reference, or NULL with err set.
static json_t *
s_substitute (const act_call_t *self, json_t *value, act_ctx_t *ctx,
              size_t *next, act_err_t *err)
{
    if (json_is_string (value)) {
        const char *text = json_string_value (value);
        if (act_ref_is_escaped (text))
            return json_string (text + ACT_DAGGER_LEN);
        if (!act_ref_is_reference (text))
            return json_incref (value);
        act_expr_t *expr = self->refs [(*next)++];
        json_t *resolved = ctx? act_ctx_resolve (ctx, expr, self->instance): NULL;
        if (!resolved)
            act_err_set (err, ACT_E_UNRESOLVED_REFERENCE,
                         "'%.200s' is absent", text);
        return resolved;
    }
    if (json_is_object (value)) {
        json_t *copy = json_object ();
        const char *key;
        json_t *member;
        json_object_foreach (value, key, member) {
            json_t *replaced = s_substitute (self, member, ctx, next, err);
            if (!replaced) {
                json_decref (copy);
                return NULL;
            }
            json_object_set_new (copy, key, replaced);
        }
        return copy;
    }
    if (json_is_array (value)) {
        json_t *copy = json_array ();
        size_t index;
        json_t *member;
        json_array_foreach (value, index, member) {
            json_t *replaced = s_substitute (self, member, ctx, next, err);
            if (!replaced) {
                json_decref (copy);
                return NULL;
            }
            json_array_append_new (copy, replaced);
        }
        return copy;
    }
    return json_incref (value);
}

json_t *
act_call_params (const act_call_t *self, act_ctx_t *ctx, act_err_t *err)
{
    json_t *params = json_object ();
    size_t next = 0;
    const char *key;
    json_t *value;
    json_object_foreach (self->json, key, value) {
        if (key [0] == '_')
            continue;
        json_t *replaced = s_substitute (self, value, ctx, &next, err);
        if (!replaced) {
            json_decref (params);
            return NULL;
        }
        json_object_set_new (params, key, replaced);
    }
    return params;
}
