/*  =========================================================================
    act_call - a tool call, validated once and parsed for the broker.

    A call is made from its text in one pass of the scanner (act_scan.h):
    its meta-properties are read from their raw values, its references
    from the dagger strings of its other members. The tree is built only
    for the few that need one (act_call_json). act_call_text.c writes the
    parameters a worker receives from the text.
    ========================================================================= */

#include <string.h>
#include <stdlib.h>
#include <czmq.h>
#include "actd/act_call.h"
#include "actd/act_json.h"
#include "actd/act_wire.h"

void
act_call_destroy (act_call_t **self_p)
{
    if (self_p && *self_p) {
        act_call_t *self = *self_p;
        for (size_t i = 0; i < self->nrefs; i++)
            act_expr_destroy (&self->refs [i]);
        free (self->spans);     //  With refs and strings
        act_expr_destroy (&self->output);
        json_decref (self->json);
        free (self);            //  With text
        *self_p = NULL;
    }
}

//  A meta-property's raw value, being read
typedef struct {
    const char *raw;            //  Its first byte, in the call's text
    size_t size;                //  Its bytes
} s_raw_t;

//  Decode the string value raw into the call's strings; its length in
//  *length. NULL when raw is not a string.
static const char *
s_decode (s_raw_t raw, size_t *length, char **next)
{
    if (raw.raw [0] != '"')
        return NULL;
    char *out = *next;
    *length = act_scan_decode (raw.raw, raw.size, out);
    *next += *length + 1;
    return out;
}

//  A string meta-property of 1 to limit bytes
static int
s_string_meta (s_raw_t raw, const char *name, size_t limit,
               const char **result, char **next, act_err_t *err)
{
    size_t length = 0;
    const char *text = s_decode (raw, &length, next);
    if (!text || length == 0 || length > limit)
        return act_err_set (err, ACT_E_BAD_CALL,
                            "\"%s\" must be a string of 1 to %zu bytes", name, limit);
    *result = text;
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
s_parse_trace (act_call_t *self, s_raw_t raw, char **next, act_err_t *err)
{
    size_t length = 0;
    const char *text = s_decode (raw, &length, next);
    bool valid = text && length == ACT_TRACE_LEN
              && strncmp (text, "00-", 3) == 0 && s_hex_field (text + 3, 32, false)
              && text [35] == '-' && s_hex_field (text + 36, 16, false)
              && text [52] == '-' && s_hex_field (text + 53, 2, true);
    if (!valid)
        return act_err_set (err, ACT_E_BAD_CALL, "\"_trace\" must be a W3C traceparent: "
                            "\"00-<32 hex>-<16 hex>-<2 hex>\" in lowercase, ids not all zeros");
    self->trace = text;
    return 0;
}

//  A JSON integer above 0 (in int64): a JSON number of digits only
static bool
s_positive_integer (s_raw_t raw, long long *value)
{
    uint64_t number;
    if (!act_decimal_parse (raw.raw, raw.size, INT64_MAX, &number) || number == 0)
        return false;
    *value = (long long) number;
    return true;
}

//  _retry from its raw value (rare: parsed as a tree)
static int
s_retry_raw (act_call_t *self, s_raw_t raw, act_err_t *err)
{
    json_t *retry = act_json_parse (raw.raw, raw.size, err);
    if (!retry)
        return -1;
    int rc = s_parse_retry (self, retry, err);
    json_decref (retry);
    return rc;
}

//  Read one top-level meta-property from its raw value
static int
s_parse_meta (act_call_t *self, const char *key, s_raw_t raw, char **next, act_err_t *err)
{
    if (streq (key, "_tool"))
        return s_string_meta (raw, key, ACT_MAX_TOOL, &self->tool, next, err);
    if (streq (key, "_instance"))
        return s_string_meta (raw, key, ACT_MAX_INSTANCE, &self->instance, next, err);
    if (streq (key, "_id"))
        return s_string_meta (raw, key, ACT_MAX_CALL_ID, &self->id, next, err);
    size_t length;
    if (streq (key, "_outputPath")) {
        const char *text = s_decode (raw, &length, next);
        if (!text)
            return act_err_set (err, ACT_E_BAD_CALL, "\"_outputPath\" must be a string");
        self->output = act_expr_parse (text, true, err);
        return self->output? 0: -1;
    }
    if (streq (key, "_outputMethod")) {
        const char *text = s_decode (raw, &length, next);
        if (!text)
            return act_err_set (err, ACT_E_BAD_CALL, "\"_outputMethod\" must be a string");
        if (act_method_parse (text, &self->method))
            return act_err_set (err, ACT_E_BAD_METHOD,
                                "\"_outputMethod\" \"%.32s\" is not one of set, merge, "
                                "assign, push, concat, erase", text);
        return 0;
    }
    if (streq (key, "_timeout")) {
        if (!s_positive_integer (raw, &self->timeout_ms))
            return act_err_set (err, ACT_E_BAD_CALL,
                                "\"_timeout\" must be a positive integer (milliseconds)");
        return 0;
    }
    if (streq (key, "_retry"))
        return s_retry_raw (self, raw, err);
    if (streq (key, "_trace"))
        return s_parse_trace (self, raw, next, err);
    return 0;                   //  Other meta-properties are the client's own
}

//  The decoded key of a member into *key (a C string: in local, of room
//  bytes, or allocated in *allocated, which the caller frees)
static const char *
s_key (const char *text, const act_scan_member_t *member, char *local, size_t room,
       char **allocated)
{
    *allocated = NULL;
    char *out = member->key_size <= room? local: (*allocated = malloc (member->key_size));
    if (!out)
        return NULL;
    if (member->key_escaped)
        act_scan_decode (text + member->key, member->key_size, out);
    else {
        memcpy (out, text + member->key + 1, member->key_size - 2);
        out [member->key_size - 2] = 0;
    }
    return out;
}

//  One dagger string of a parameter: a reference (parsed, in refs) or a
//  "††" literal, recorded as a span
static int
s_dagger (act_call_t *self, const act_scan_string_t *dagger, act_err_t *err)
{
    char local [256];
    char *decoded = dagger->size <= sizeof local? local: malloc (dagger->size);
    if (!decoded)
        return act_err_set (err, ACT_E_INTERNAL, "out of memory");
    act_scan_decode (self->text + dagger->offset, dagger->size, decoded);
    int rc = 0;
    int ref = -1;
    if (act_ref_is_reference (decoded)) {
        act_expr_t *expr = act_expr_parse (decoded, false, err);
        if (!expr)
            rc = -1;
        else {
            ref = (int) self->nrefs;
            self->refs [self->nrefs++] = expr;
        }
    }
    if (rc == 0 && (ref >= 0 || act_ref_is_escaped (decoded)))
        self->spans [self->nspans++] = (act_call_span_t) { dagger->offset, dagger->size, ref };
    if (decoded != local)
        free (decoded);
    return rc;
}

//  Bytes the decoded string meta-properties need at most
static size_t
s_strings_size (const char *text, const act_scan_member_t *members, size_t count)
{
    size_t size = 0;
    for (size_t i = 0; i < count; i++)
        if ((members [i].key_escaped || text [members [i].key + 1] == '_')
        &&  text [members [i].value] == '"')
            size += members [i].value_size;
    return size;
}

//  Read the members of the call scanned: meta-properties and parameters
static int
s_members (act_call_t *self, act_scan_t *scan, act_err_t *err)
{
    size_t count, ndaggers;
    const act_scan_member_t *members = act_scan_members (scan, &count);
    const act_scan_string_t *daggers = act_scan_daggers (scan, &ndaggers);
    //  Spans, refs and strings in one allocation (spans first: it is freed)
    size_t spans = (count + ndaggers + 1) * sizeof (act_call_span_t);
    size_t refs = ndaggers * sizeof (act_expr_t *);
    char *block = malloc (spans + refs + s_strings_size (self->text, members, count));
    if (!block)
        return act_err_set (err, ACT_E_INTERNAL, "out of memory");
    self->spans = (act_call_span_t *) block;
    self->refs = (act_expr_t **) (block + spans);
    self->strings = block + spans + refs;
    char *next = self->strings;
    size_t d = 0;
    for (size_t i = 0; i < count; i++) {
        const act_scan_member_t *member = &members [i];
        char local [64], *allocated;
        const char *key = s_key (self->text, member, local, sizeof local, &allocated);
        if (!key)
            return act_err_set (err, ACT_E_INTERNAL, "out of memory");
        int rc = 0;
        bool meta = key [0] == '_';
        if (meta)
            rc = s_parse_meta (self, key, (s_raw_t) { self->text + member->value,
                                                      member->value_size }, &next, err);
        else
            self->spans [self->nspans++] = (act_call_span_t) {
                member->key, member->value + member->value_size - member->key, -2 };
        if (allocated)
            free (allocated);   //  Rare: a long key
        for (; rc == 0 && d < ndaggers && daggers [d].member == (int) i; d++)
            if (!meta)
                rc = s_dagger (self, &daggers [d], err);
        if (rc)
            return -1;
    }
    return 0;
}

act_call_t *
act_call_new (act_scan_t *scan, const char *text, size_t size, act_err_t *err)
{
    //  The call and its text in one allocation
    act_call_t *self = malloc (sizeof *self + size + 1);
    if (!self) {
        act_err_set (err, ACT_E_INTERNAL, "out of memory");
        return NULL;
    }
    *self = (act_call_t) { .text = (char *) (self + 1), .size = size };
    memcpy (self->text, text, size);
    self->text [size] = 0;
    text = self->text;
    self->method = ACT_SET;
    self->timeout_ms = -1;
    self->retry = (act_retry_t) { -1, -1, -1.0, -1 };
    act_scan_t *own = scan? NULL: act_scan_new ();
    int rc = act_scan (scan? scan: own, text, size, err);
    json_t *judged = NULL;
    if (rc && err && err->code && streq (err->code, ACT_E_BAD_JSON)
    &&  (judged = act_json_parse (text, size, err)))
        json_decref (judged);   //  Refused: jansson's message says where
    if (rc == 0 && act_scan_type (scan? scan: own) != JSON_OBJECT)
        rc = act_err_set (err, ACT_E_BAD_CALL, "a call must be a JSON object");
    if (rc == 0)
        rc = s_members (self, scan? scan: own, err);
    act_scan_destroy (&own);
    if (rc == 0 && !self->tool)
        rc = act_err_set (err, ACT_E_BAD_CALL, "a call needs \"_tool\"");
    if (rc) {
        act_call_destroy (&self);
        return NULL;
    }
    self->dumped_numbers = true;
    for (size_t i = 0; i < self->nspans && self->dumped_numbers; i++)
        if (self->spans [i].ref == -2)
            self->dumped_numbers = act_call_numbers_dumped (text + self->spans [i].offset,
                                                            self->spans [i].size);
    return self;
}

act_call_t *
act_call_parse (json_t *call, act_err_t *err)
{
    if (!json_is_object (call)) {
        act_err_set (err, ACT_E_BAD_CALL, "a call must be a JSON object");
        return NULL;
    }
    char *text = act_json_dump (call);
    act_call_t *self = text? act_call_new (NULL, text, strlen (text), err): NULL;
    free (text);
    if (self)
        self->json = json_incref (call);
    return self;
}

json_t *
act_call_json (act_call_t *self)
{
    if (!self->json) {
        act_err_t err = { 0 };
        self->json = act_json_parse (self->text, self->size, &err);
    }
    return self->json;
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

//  A parameter value with references replaced, in the order of the text
//  (jansson keeps an object's keys in the order read). Returns a new reference, or NULL with err set.
static json_t *
s_substitute (act_call_t *self, json_t *value, act_ctx_t *ctx,
              size_t *next, act_err_t *err)
{
    if (json_is_string (value)) {
        const char *text = json_string_value (value);
        if (act_ref_is_escaped (text))
            return json_string (text + ACT_DAGGER_LEN);
        if (!act_ref_is_reference (text))
            return json_incref (value);
        if (*next >= self->nrefs) {
            act_err_set (err, ACT_E_INTERNAL, "the call's references are out of step");
            return NULL;
        }
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
act_call_params (act_call_t *self, act_ctx_t *ctx, act_err_t *err)
{
    json_t *call = act_call_json (self);
    if (!call) {
        act_err_set (err, ACT_E_INTERNAL, "out of memory");
        return NULL;
    }
    json_t *params = json_object ();
    size_t next = 0;
    const char *key;
    json_t *value;
    json_object_foreach (call, key, value) {
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
