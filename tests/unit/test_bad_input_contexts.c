/*  =========================================================================
    test_bad_input_contexts - bad input to a context gets a clear error, no
    crash, and changes nothing, as in test_bad_input: a refused append says
    why; context ids and kinds at and past their limits. And the shape of
    what the context stores and shows: the stored message of an output
    with its metadata, fan-outs (all or nothing), outputs without their
    value, the merged view (SEMANTICS.md sections 1, 4 and 6).
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <cmocka.h>
#include <jansson.h>
#include "actd/act.h"
#include "bad_input_support.h"

//  --------------------------------------------------------------------------
//  Helpers

//  The output of a call: value (JSON text) at path with method
static json_t *
s_output (act_ctx_t *ctx, const char *path, const char *value, act_method_t method,
          const char *instance, json_t *call, act_err_t *err)
{
    act_expr_t *expr = s_expr (path, true);
    json_t *json = s_json (value);
    json_t *stored = act_ctx_output (ctx, &expr->alts [0], json, method, instance,
                                     call, "call-1", err);
    json_decref (json);
    act_expr_destroy (&expr);
    return stored;
}

//  text, read in ctx (in instance), is the JSON want, or absent when want is NULL
static void
s_assert_resolves (act_ctx_t *ctx, const char *text, const char *instance,
                   const char *want)
{
    act_expr_t *expr = s_expr (text, false);
    json_t *got = act_ctx_resolve (ctx, expr, instance);
    act_expr_destroy (&expr);
    if (!want) {
        if (got) {
            char *shown = json_dumps (got, JSON_ENCODE_ANY | JSON_COMPACT);
            fail_msg ("%s resolved to %s, expected absent", text, shown);
        }
        return;
    }
    json_t *expected = s_json (want);
    if (!got)
        fail_msg ("%s is absent, expected %s", text, want);
    if (!json_equal (got, expected)) {
        char *shown = json_dumps (got, JSON_ENCODE_ANY | JSON_COMPACT);
        fail_msg ("%s resolved to %s, expected %s", text, shown, want);
    }
    json_decref (expected);
    json_decref (got);
}

//  RFC 3339 UTC with milliseconds: ^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$
static bool
s_is_date (const char *text)
{
    const char *shape = "dddd-dd-ddTdd:dd:dd.dddZ";
    if (!text || strlen (text) != strlen (shape))
        return false;
    for (size_t i = 0; shape [i]; i++)
        if (shape [i] == 'd'? !isdigit ((unsigned char) text [i]): text [i] != shape [i])
            return false;
    return true;
}

//  with and without, what act_ctx_output and act_ctx_output_bare returned
//  for one write to two targets: two messages each, the same but for
//  "data", which only with has
static void
s_assert_bare_messages (json_t *with, json_t *without)
{
    assert_non_null (with);
    assert_non_null (without);
    assert_int_equal (json_array_size (without), 2);
    for (size_t m = 0; m < 2; m++) {
        json_t *message = json_deep_copy (json_array_get (with, m));
        assert_non_null (json_object_get (message, "data"));
        assert_null (json_object_get (json_array_get (without, m), "data"));
        json_object_del (message, "data");
        //  Same members, same order, same _seq; only _date may differ
        json_object_del (message, "_date");
        json_t *other = json_deep_copy (json_array_get (without, m));
        json_object_del (other, "_date");
        char *a = act_json_dump (message), *b = act_json_dump (other);
        assert_string_equal (a, b);
        free (a);
        free (b);
        json_decref (message);
        json_decref (other);
    }
}

//  The merged views of full and bare are equal
static void
s_assert_same_view (act_ctx_t *full, act_ctx_t *bare)
{
    json_t *view_full = act_ctx_view (full), *view_bare = act_ctx_view (bare);
    assert_true (json_equal (view_full, view_bare));
    json_decref (view_full);
    json_decref (view_bare);
}

//  SEMANTICS 6: the text rendering of the view of test_merged_view's ctx:
//  every part, in order; no schema where none was given
static void
s_assert_view_text (act_ctx_t *ctx)
{
    char *text = act_ctx_view_text (ctx);
    assert_non_null (text);
    const char *heading = strstr (text, "## Data: ¶user");
    const char *name = strstr (text, "\"name\": \"John Doe\"");
    const char *age = strstr (text, "\"age\": 30");
    const char *description = strstr (text, "The user we talk to");
    const char *schema = strstr (text, "Schema for ¶user:");
    if (!heading || !name || !age || !description || !schema || !strstr (text, "## Data: ¶state"))
        fail_msg ("view text lacks a part:\n%s", text);
    //  In the order of SEMANTICS 6: heading, pretty JSON, description, schema
    assert_true (heading < name);
    assert_true (name < description);
    assert_true (description < schema);
    assert_non_null (strstr (schema, "\"type\": \"object\""));
    //  The JSON is pretty-printed: the heading's line ends before it
    assert_non_null (memchr (heading, '\n', (size_t) (name - heading)));
    //  No description nor schema was given for state
    assert_null (strstr (text, "Schema for ¶state"));
    free (text);
}


//  --------------------------------------------------------------------------
//  Contexts

//  act_ctx.h: a refused append changes nothing, and says why
static void
test_bad_appends (void **state)
{
    act_ctx_t *ctx = act_ctx_new ("appends");
    json_decref (s_append (ctx, "{\"type\":\"data\",\"data\":{\"user\":{\"name\":\"Alex\"}}}"));
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"state\","
                                "\"_instance\":\"i1\",\"data\":{\"n\":1}}"));
    json_decref (s_append (ctx, "{\"type\":\"text\",\"text\":\"hello\"}"));

    char *long_instance = s_repeat ('i', ACT_MAX_INSTANCE + 1);
    char long_message [512];
    snprintf (long_message, sizeof long_message,
              "{\"type\":\"data\",\"_instance\":\"%s\",\"data\":{}}", long_instance);
    free (long_instance);

    const struct {
        const char *message;
        const char *code;
    } bad [] = {
        { "[]", ACT_E_BAD_ARGUMENT },
        { "\"data\"", ACT_E_BAD_ARGUMENT },
        { "null", ACT_E_BAD_ARGUMENT },
        { "{}", ACT_E_BAD_ARGUMENT },
        { "{\"data\":{\"a\":1}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":5,\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":null,\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"kind\":\"1x\",\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"kind\":\"\",\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"kind\":\"a.b\",\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"kind\":5,\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"_instance\":\"\",\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"_instance\":5,\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\"}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"kind\":\"state\"}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"data\":{},\"_outputMethod\":\"nope\"}", ACT_E_BAD_METHOD },
        { "{\"type\":\"data\",\"data\":{},\"_seq\":7}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"data\":{},\"_date\":\"2026-11-22T08:00:00.123Z\"}",
          ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"data\":{},\"_outputPath\":\"†data.x\"}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"data\":{},\"_call\":{\"_tool\":\"t\"}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"data\":{},\"_callId\":\"c1\"}", ACT_E_BAD_ARGUMENT },
        //  The kind's root is an object: push, concat and a non-object
        //  assign do not apply to it
        { "{\"type\":\"data\",\"data\":5,\"_outputMethod\":\"push\"}", ACT_E_TYPE_MISMATCH },
        { "{\"type\":\"data\",\"data\":[5],\"_outputMethod\":\"concat\"}", ACT_E_TYPE_MISMATCH },
        { "{\"type\":\"data\",\"data\":5,\"_outputMethod\":\"assign\"}", ACT_E_TYPE_MISMATCH },
        { "{\"type\":\"data\",\"kind\":\"state\",\"_instance\":\"i1\",\"data\":\"s\","
          "\"_outputMethod\":\"concat\"}", ACT_E_TYPE_MISMATCH },
        { long_message, ACT_E_BAD_ARGUMENT },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        json_t *view_before = act_ctx_view (ctx);
        uint64_t seq_before = act_ctx_next_seq (ctx);
        json_t *message = s_json (bad [i].message);
        act_err_t err = { NULL, "" };
        json_t *stored = act_ctx_append (ctx, message, &err);
        if (stored)
            fail_msg ("act_ctx_append accepted %.200s", bad [i].message);
        if (strcmp (s_code (&err), bad [i].code) != 0)
            fail_msg ("act_ctx_append %.200s: code %s (%s), expected %s",
                      bad [i].message, s_code (&err), err.message, bad [i].code);
        if (err.message [0] == 0)
            fail_msg ("act_ctx_append %.200s: empty message", bad [i].message);
        if (act_ctx_next_seq (ctx) != seq_before)
            fail_msg ("act_ctx_append %.200s moved next_seq", bad [i].message);
        json_t *view_after = act_ctx_view (ctx);
        if (!json_equal (view_before, view_after))
            fail_msg ("act_ctx_append %.200s changed the view", bad [i].message);
        json_decref (view_before);
        json_decref (view_after);
        json_decref (message);
    }
    assert_int_equal (act_ctx_next_seq (ctx), 4);
    s_assert_resolves (ctx, "†data", NULL, "{\"user\":{\"name\":\"Alex\"}}");
    s_assert_resolves (ctx, "†state", "i1", "{\"n\":1}");
    act_ctx_destroy (&ctx);
}

//  SEMANTICS 1: context ids are 1 to 128 bytes of [A-Za-z0-9._:@/-];
//  kinds are [A-Za-z_][A-Za-z0-9_-]*
static void
test_context_ids_and_kinds (void **state)
{
    char *longest = s_repeat ('a', ACT_MAX_CONTEXT_ID);
    char *too_long = s_repeat ('a', ACT_MAX_CONTEXT_ID + 1);
    const char *bad [] = { "", too_long, "a b", "a†", "†", "a\tb", "a#b", "a?b", "é" };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        act_ctx_t *ctx = act_ctx_new (bad [i]);
        if (ctx) {
            act_ctx_destroy (&ctx);
            fail_msg ("act_ctx_new accepted \"%.40s\"", bad [i]);
        }
        assert_false (act_ctx_id_valid (bad [i]));
    }
    const char *good [] = { "a", longest, "Az09._:@/-", "conv/2026-11-22@host:1" };
    for (size_t i = 0; i < sizeof good / sizeof good [0]; i++) {
        act_ctx_t *ctx = act_ctx_new (good [i]);
        if (!ctx)
            fail_msg ("act_ctx_new refused \"%.40s\"", good [i]);
        assert_true (act_ctx_id_valid (good [i]));
        assert_string_equal (act_ctx_id (ctx), good [i]);
        assert_int_equal (act_ctx_next_seq (ctx), 1);
        act_ctx_destroy (&ctx);
        assert_null (ctx);
    }
    act_ctx_t *none = NULL;
    act_ctx_destroy (&none);    //  Safe on NULL
    free (longest);
    free (too_long);

    const char *kinds [] = { "data", "_x", "a-b", "A9", "user_profile", "x" };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds [0]; i++)
        if (!act_kind_valid (kinds [i]))
            fail_msg ("act_kind_valid refused \"%s\"", kinds [i]);
    const char *not_kinds [] = { "", "1x", "-a", "a.b", "a b", "†", "a†", "é" };
    for (size_t i = 0; i < sizeof not_kinds / sizeof not_kinds [0]; i++)
        if (act_kind_valid (not_kinds [i]))
            fail_msg ("act_kind_valid accepted \"%s\"", not_kinds [i]);
}

//  SEMANTICS 1 and 4: the stored message of an output, in display form,
//  with its metadata
static void
test_stored_output_message (void **state)
{
    act_ctx_t *ctx = act_ctx_new ("shape");
    json_t *first = s_append (ctx, "{\"type\":\"data\",\"data\":{\"user\":"
                                   "{\"name\":\"Alex\",\"status\":\"active\"}}}");
    assert_int_equal (json_integer_value (json_object_get (first, "_seq")), 1);
    assert_true (s_is_date (json_string_value (json_object_get (first, "_date"))));
    assert_string_equal (json_string_value (json_object_get (first, "type")), "data");
    json_decref (first);

    json_t *call = s_json ("{\"_tool\":\"crm.update\",\"_outputPath\":\"†data.user.status\","
                           "\"id\":\"†data.user.name\"}");
    act_err_t err = { NULL, "" };
    json_t *stored = s_output (ctx, "†data.user.status", "\"inactive\"", ACT_SET,
                               NULL, call, &err);
    if (!stored)
        fail_msg ("output refused: %s: %s", s_code (&err), err.message);
    assert_true (json_is_array (stored));
    assert_int_equal (json_array_size (stored), 1);
    json_t *message = json_array_get (stored, 0);
    assert_string_equal (json_string_value (json_object_get (message, "type")), "data");
    assert_string_equal (json_string_value (json_object_get (message, "kind")), "data");
    json_t *display = s_json ("{\"user\":{\"status\":\"inactive\"}}");
    assert_true (json_equal (json_object_get (message, "data"), display));
    json_decref (display);
    assert_string_equal (json_string_value (json_object_get (message, "_outputPath")),
                         "†data.user.status");
    assert_string_equal (json_string_value (json_object_get (message, "_outputMethod")), "set");
    assert_true (json_equal (json_object_get (message, "_call"), call));
    assert_string_equal (json_string_value (json_object_get (message, "_callId")), "call-1");
    assert_int_equal (json_integer_value (json_object_get (message, "_seq")), 2);
    const char *date = json_string_value (json_object_get (message, "_date"));
    if (!s_is_date (date))
        fail_msg ("_date \"%s\" is not RFC 3339 UTC with milliseconds", date? date: "(none)");
    assert_null (json_object_get (message, "_instance"));
    json_decref (stored);
    s_assert_resolves (ctx, "†data.user", NULL, "{\"name\":\"Alex\",\"status\":\"inactive\"}");

    //  In an instance, with an index and the append position in the path
    stored = s_output (ctx, "†data.list", "[\"a\"]", ACT_SET, "i1", call, &err);
    assert_non_null (stored);
    json_decref (stored);
    stored = s_output (ctx, "†data.list[1]", "\"b\"", ACT_SET, "i1", call, &err);
    assert_non_null (stored);
    message = json_array_get (stored, 0);
    display = s_json ("{\"list\":{\"1\":\"b\"}}");
    assert_true (json_equal (json_object_get (message, "data"), display));
    json_decref (display);
    assert_string_equal (json_string_value (json_object_get (message, "_instance")), "i1");
    assert_int_equal (json_integer_value (json_object_get (message, "_seq")), 4);
    json_decref (stored);
    stored = s_output (ctx, "†data.list.-", "\"c\"", ACT_SET, "i1", call, &err);
    assert_non_null (stored);
    message = json_array_get (stored, 0);
    display = s_json ("{\"list\":{\"-\":\"c\"}}");
    assert_true (json_equal (json_object_get (message, "data"), display));
    json_decref (display);
    json_decref (stored);
    s_assert_resolves (ctx, "†data.list", "i1", "[\"a\",\"b\",\"c\"]");
    s_assert_resolves (ctx, "†data.list", NULL, NULL);
    json_decref (call);
    act_ctx_destroy (&ctx);
}

//  act_ctx_output_bare: the messages of act_ctx_output without "data", the
//  same _seq and index (global and instance scope); a refusal is the same
static void
test_output_bare (void **state)
{
    (void) state;
    act_ctx_t *full = act_ctx_new ("bare");
    act_ctx_t *bare = act_ctx_new ("bare");
    json_t *value = s_json ("{\"v\":[1,2],\"s\":\"x\"}");
    const char *instances [] = { NULL, "i1" };
    for (int i = 0; i < 2; i++) {
        act_expr_t *expr = s_expr ("†data.a.b && †data.c", true);
        act_err_t err = { NULL, "" };
        json_t *with = act_ctx_output (full, &expr->alts [0], value, ACT_SET, instances [i],
                                       NULL, "call-1", &err);
        json_t *without = act_ctx_output_bare (bare, &expr->alts [0], value, ACT_SET,
                                               instances [i], NULL, "call-1", &err);
        s_assert_bare_messages (with, without);
        json_decref (with);
        json_decref (without);
        s_assert_resolves (bare, "†data.a.b.v", instances [i], "[1,2]");
        s_assert_resolves (bare, "†data.c.s", instances [i], "\"x\"");
        s_assert_same_view (full, bare);
        act_expr_destroy (&expr);
    }
    //  A refused write appends nothing, with the same code
    act_expr_t *expr = s_expr ("†data.a.b.v.k", true);
    act_err_t err = { NULL, "" };
    assert_null (act_ctx_output_bare (bare, &expr->alts [0], value, ACT_SET, NULL, NULL,
                                      "call-2", &err));
    assert_string_equal (s_code (&err), ACT_E_BAD_PATH);
    assert_int_equal (act_ctx_next_seq (bare), act_ctx_next_seq (full));
    act_expr_destroy (&expr);
    json_decref (value);

    //  The index may keep the value itself: the caller drops it, and later
    //  writes below it (in place) and fan-outs that write under their own
    //  target read back as with a copy
    const char *paths [] = { "†data.p", "†data.p.q && †data.p", "†data.r && †data.r.q" };
    for (int p = 0; p < 3; p++) {
        expr = s_expr (paths [p], true);
        json_t *shared = s_json ("{\"k\":[1,{\"m\":2}]}");
        json_t *copied = json_deep_copy (shared);
        json_decref (act_ctx_output (full, &expr->alts [0], copied, ACT_SET, NULL, NULL,
                                     "call-3", &err));
        json_decref (act_ctx_output_bare (bare, &expr->alts [0], shared, ACT_SET, NULL, NULL,
                                          "call-3", &err));
        json_decref (shared);
        json_decref (copied);
        act_expr_destroy (&expr);
    }
    json_t *five = json_integer (5);
    const char *below [] = { "†data.p.k.1.m", "†data.r.q.k.-", "†data.r.k.0" };
    for (int b = 0; b < 3; b++) {
        expr = s_expr (below [b], true);
        json_decref (act_ctx_output (full, &expr->alts [0], five, ACT_SET, NULL, NULL,
                                     "call-4", &err));
        json_decref (act_ctx_output (bare, &expr->alts [0], five, ACT_SET, NULL, NULL,
                                     "call-4", &err));
        act_expr_destroy (&expr);
    }
    json_decref (five);
    s_assert_resolves (bare, "†data.p", NULL, "{\"k\":[1,{\"m\":5}]}");
    s_assert_resolves (bare, "†data.r", NULL,
                       "{\"k\":[5,{\"m\":2}],\"q\":{\"k\":[1,{\"m\":2},5]}}");
    s_assert_same_view (full, bare);
    act_ctx_destroy (&full);
    act_ctx_destroy (&bare);
}

//  SEMANTICS 3: a fan-out writes one message per target, in order, and is
//  all or nothing
static void
test_fan_out (void **state)
{
    act_ctx_t *ctx = act_ctx_new ("fan");
    json_decref (s_append (ctx, "{\"type\":\"data\",\"data\":{\"n\":5}}"));
    json_t *call = s_json ("{\"_tool\":\"t\",\"_outputPath\":\"†data.a && †data.b\"}");
    act_err_t err = { NULL, "" };
    json_t *stored = s_output (ctx, "†data.a && †data.b", "{\"v\":1}", ACT_SET,
                               NULL, call, &err);
    if (!stored)
        fail_msg ("fan-out refused: %s: %s", s_code (&err), err.message);
    assert_int_equal (json_array_size (stored), 2);
    json_t *first = json_array_get (stored, 0);
    json_t *second = json_array_get (stored, 1);
    assert_int_equal (json_integer_value (json_object_get (first, "_seq")), 2);
    assert_int_equal (json_integer_value (json_object_get (second, "_seq")), 3);
    assert_string_equal (json_string_value (json_object_get (first, "_outputPath")), "†data.a");
    assert_string_equal (json_string_value (json_object_get (second, "_outputPath")), "†data.b");
    json_t *display = s_json ("{\"b\":{\"v\":1}}");
    assert_true (json_equal (json_object_get (second, "data"), display));
    json_decref (display);
    json_decref (stored);
    json_decref (call);
    assert_int_equal (act_ctx_next_seq (ctx), 4);
    s_assert_resolves (ctx, "†data.a.v", NULL, "1");
    s_assert_resolves (ctx, "†data.b", NULL, "{\"v\":1}");

    //  The second target is a number: nothing is appended, not even the first
    call = s_json ("{\"_tool\":\"t\",\"_outputPath\":\"†data.list && †data.n\","
                   "\"_outputMethod\":\"push\"}");
    act_expr_t *expr = s_expr ("†data.list && †data.n", true);
    json_t *value = json_string ("x");
    json_t *view_before = act_ctx_view (ctx);
    act_err_clear (&err);
    assert_int_equal (act_ctx_output_check (ctx, &expr->alts [0], value, ACT_PUSH,
                                            NULL, &err), -1);
    assert_string_equal (s_code (&err), ACT_E_TYPE_MISMATCH);
    act_err_clear (&err);
    stored = act_ctx_output (ctx, &expr->alts [0], value, ACT_PUSH, NULL, call,
                             "call-2", &err);
    assert_null (stored);
    assert_string_equal (s_code (&err), ACT_E_TYPE_MISMATCH);
    assert_int_equal (act_ctx_next_seq (ctx), 4);
    json_t *view_after = act_ctx_view (ctx);
    assert_true (json_equal (view_before, view_after));
    json_decref (view_before);
    json_decref (view_after);
    s_assert_resolves (ctx, "†data.list", NULL, NULL);
    s_assert_resolves (ctx, "†data.n", NULL, "5");

    //  The check alone appends nothing, even when the write applies
    act_expr_destroy (&expr);
    expr = s_expr ("†data.list && †data.other", true);
    act_err_clear (&err);
    assert_int_equal (act_ctx_output_check (ctx, &expr->alts [0], value, ACT_PUSH,
                                            NULL, &err), 0);
    assert_int_equal (act_ctx_next_seq (ctx), 4);
    s_assert_resolves (ctx, "†data.list", NULL, NULL);
    act_expr_destroy (&expr);
    json_decref (value);
    json_decref (call);
    act_ctx_destroy (&ctx);
}

//  SEMANTICS 3: a fan-out writes one target at a time, in the order
//  written, so a later target is checked against the earlier ones: an
//  index at the end of an array an earlier target made longer appends to
//  it (they were refused bad_path, checked against the array as it was)
static void
test_fan_out_appends_in_turn (void **state)
{
    const char *instances [] = { NULL, "i" };
    const char *paths [] = { "†data.q[1] && †data.q[2]",
                             "†data.r.l.1 && †data.r.l.2" };
    for (size_t i = 0; i < 2; i++) {
        act_ctx_t *ctx = act_ctx_new ("fan-append");
        json_decref (s_append (ctx, "{\"type\":\"data\",\"data\":{\"q\":[0],"
                                    "\"r\":{\"l\":[0]}}}"));
        json_t *call = s_json ("{\"_tool\":\"t\"}");
        for (size_t p = 0; p < 2; p++) {
            act_err_t err = { NULL, "" };
            json_t *stored = s_output (ctx, paths [p], "5", ACT_SET, instances [i], call, &err);
            if (!stored)
                fail_msg ("%s refused: %s: %s", paths [p], s_code (&err), err.message);
            assert_int_equal (json_array_size (stored), 2);
            json_decref (stored);
        }
        s_assert_resolves (ctx, "†data.q", instances [i], "[0,5,5]");
        s_assert_resolves (ctx, "†data.r.l", instances [i], "[0,5,5]");
        //  Past the end even after the first target: refused, nothing written
        act_err_t err = { NULL, "" };
        assert_null (s_output (ctx, "†data.q[3] && †data.q[5]", "7",
                               ACT_SET, instances [i], call, &err));
        assert_string_equal (s_code (&err), ACT_E_BAD_PATH);
        s_assert_resolves (ctx, "†data.q", instances [i], "[0,5,5]");
        json_decref (call);
        act_ctx_destroy (&ctx);
    }
}

//  SEMANTICS 6: the merged view, one entry per identity in order of first
//  appearance, without metadata, and its text rendering
static void
test_merged_view (void **state)
{
    act_ctx_t *ctx = act_ctx_new ("view");
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"user\","
                                "\"data\":{\"name\":\"John Doe\"}}"));
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"state\","
                                "\"data\":{\"step\":1}}"));
    json_decref (s_append (ctx, "{\"type\":\"text\",\"text\":\"not data\"}"));
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"user\",\"data\":{\"age\":30},"
                                "\"description\":\"The user we talk to\","
                                "\"schema\":{\"type\":\"object\"}}"));
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"user\",\"_instance\":\"i1\","
                                "\"data\":{\"age\":31}}"));

    json_t *view = act_ctx_view (ctx);
    json_t *entry;
    assert_true (json_is_array (view));
    assert_int_equal (json_array_size (view), 3);
    json_t *want = s_json ("{\"type\":\"data\",\"kind\":\"user\","
                           "\"data\":{\"name\":\"John Doe\",\"age\":30},"
                           "\"description\":\"The user we talk to\","
                           "\"schema\":{\"type\":\"object\"}}");
    if (!json_equal (json_array_get (view, 0), want)) {
        char *shown = json_dumps (json_array_get (view, 0), JSON_COMPACT);
        fail_msg ("view entry 0 is %s", shown);
    }
    json_decref (want);
    //  state has no description nor schema: they are absent or null
    entry = json_array_get (view, 1);
    want = s_json ("{\"type\":\"data\",\"kind\":\"state\",\"data\":{\"step\":1}}");
    json_t *trimmed = json_deep_copy (entry);
    if (json_is_null (json_object_get (trimmed, "description")))
        json_object_del (trimmed, "description");
    if (json_is_null (json_object_get (trimmed, "schema")))
        json_object_del (trimmed, "schema");
    if (!json_equal (trimmed, want)) {
        char *shown = json_dumps (entry, JSON_COMPACT);
        fail_msg ("view entry 1 is %s", shown);
    }
    json_decref (trimmed);
    json_decref (want);
    entry = json_array_get (view, 2);
    assert_string_equal (json_string_value (json_object_get (entry, "kind")), "user");
    assert_string_equal (json_string_value (json_object_get (entry, "_instance")), "i1");
    want = s_json ("{\"name\":\"John Doe\",\"age\":31}");
    assert_true (json_equal (json_object_get (entry, "data"), want));
    json_decref (want);
    json_decref (view);

    //  An output's metadata stays out of the view
    json_t *call = s_json ("{\"_tool\":\"t\",\"_outputPath\":\"†user.email\"}");
    act_err_t err = { NULL, "" };
    json_t *stored = s_output (ctx, "†user.email", "\"j@d.example\"", ACT_SET, NULL,
                               call, &err);
    assert_non_null (stored);
    json_decref (stored);
    json_decref (call);
    view = act_ctx_view (ctx);
    entry = json_array_get (view, 0);
    const char *key;
    json_t *member;
    json_object_foreach (entry, key, member)
        if (key [0] == '_')
            fail_msg ("global view entry shows metadata %s", key);
    assert_string_equal (json_string_value (json_object_get (
        json_object_get (entry, "data"), "email")), "j@d.example");
    json_decref (view);

    s_assert_view_text (ctx);
    act_ctx_destroy (&ctx);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_bad_appends),
        cmocka_unit_test (test_context_ids_and_kinds),
        cmocka_unit_test (test_stored_output_message),
        cmocka_unit_test (test_fan_out),
        cmocka_unit_test (test_fan_out_appends_in_turn),
        cmocka_unit_test (test_output_bare),
        cmocka_unit_test (test_merged_view),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
