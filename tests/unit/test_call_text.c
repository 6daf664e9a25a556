/*  =========================================================================
    test_call_text - a call made from its text (act_call_new) and the
    parameters written from it (act_call_params_text) against the tree
    path (act_call_params, then act_json_dump): for many calls, built by
    hand, from the vectors and at random, both paths give equal JSON, the
    same bytes when the call's text is in act_json_dump's form, and the
    same errors.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "actd/act.h"

#define S_VECTORS_DIR   ACTD_SOURCE_DIR "/tests/vectors"

static const char *
s_code (const act_err_t *err)
{
    return err->code? err->code: "(no code)";
}

//  A context with values at the paths the calls below refer to
static act_ctx_t *
s_context (void)
{
    act_ctx_t *ctx = act_ctx_new ("calltext");
    const char *messages [] = {
        "{\"type\":\"data\",\"kind\":\"state\",\"data\":{\"x\":1,\"r\":0.1,\"big\":1e300,"
        "\"s\":\"caf\\u00e9 \\\"q\\\" / \\u2020\",\"y\":{\"z\":[1,2.5,-3]},\"n\":null}}",
        "{\"type\":\"data\",\"kind\":\"state\",\"_instance\":\"i1\",\"data\":{\"x\":\"one\"}}",
        "{\"type\":\"data\",\"kind\":\"user\",\"data\":{\"name\":\"Alex\",\"age\":30}}"
    };
    for (size_t i = 0; i < sizeof messages / sizeof messages [0]; i++) {
        act_err_t err = { 0 };
        json_t *message = act_json_parse (messages [i], strlen (messages [i]), &err);
        assert_non_null (message);
        json_t *stored = act_ctx_append (ctx, message, &err);
        if (!stored)
            fail_msg ("append refused: %s", err.message);
        json_decref (stored);
        json_decref (message);
    }
    return ctx;
}

//  Both paths on the call text: equal results or equal errors. Returns 1
//  when the call was accepted, 0 when refused (the same way by both).
static int
s_compare (act_ctx_t *ctx, const char *text)
{
    act_err_t made_err = { 0 }, tree_err = { 0 };
    act_call_t *made = act_call_new (NULL, text, strlen (text), &made_err);
    //  The tree path: jansson reads the text, act_call_parse the tree
    json_t *json = act_json_parse (text, strlen (text), &tree_err);
    act_call_t *parsed = json? act_call_parse (json, &tree_err): NULL;
    json_decref (json);
    if (!made || !parsed) {
        if (made || parsed)
            fail_msg ("%s: made %s, parsed %s (%s)", text, made? "yes": made_err.message,
                      parsed? "yes": tree_err.message, parsed? "": s_code (&tree_err));
        if (strcmp (s_code (&made_err), s_code (&tree_err))
        ||  strcmp (made_err.message, tree_err.message))
            fail_msg ("%s: refused as %s \"%s\", and %s \"%s\"", text, s_code (&made_err),
                      made_err.message, s_code (&tree_err), tree_err.message);
        return 0;
    }
    assert_int_equal (made->nrefs, parsed->nrefs);
    for (size_t i = 0; i < made->nrefs; i++)
        assert_string_equal (made->refs [i]->text, parsed->refs [i]->text);
    assert_string_equal (made->tool, parsed->tool);
    assert_int_equal (made->timeout_ms, parsed->timeout_ms);
    assert_int_equal (!made->instance, !parsed->instance);
    assert_int_equal (!made->output, !parsed->output);
    //  Parameters: from the text, and from the tree
    act_err_t text_err = { 0 };
    char *params_text = act_call_params_text (made, ctx, &text_err);
    tree_err = (act_err_t) { 0 };
    json_t *params = act_call_params (parsed, ctx, &tree_err);
    char *params_dump = params? act_json_dump (params): NULL;
    if (!params_text || !params_dump) {
        if (params_text || params_dump)
            fail_msg ("%s: params %s and %s", text, params_text? params_text: text_err.message,
                      params_dump? params_dump: tree_err.message);
        assert_string_equal (s_code (&text_err), s_code (&tree_err));
        assert_string_equal (text_err.message, tree_err.message);
    }
    else {
        act_err_t err = { 0 };
        json_t *read = act_json_parse (params_text, strlen (params_text), &err);
        if (!read || !json_equal (read, params))
            fail_msg ("%s: params %s, the tree's %s", text, params_text, params_dump);
        json_decref (read);
        //  A worker gets numbers as act_json_dump writes them, always
        if (!act_call_numbers_dumped (params_text, strlen (params_text)))
            fail_msg ("%s: params %s hold a number not in dump form", text, params_text);
        if (act_json_is_dump (text, strlen (text)) && strcmp (params_text, params_dump))
            fail_msg ("%s (dump form): params %s, the tree's %s", text, params_text,
                      params_dump);
    }
    free (params_text);
    free (params_dump);
    json_decref (params);
    act_call_destroy (&made);
    act_call_destroy (&parsed);
    return 1;
}

//  Calls written by hand: meta-properties, references, literals, numbers
static void
test_hand_calls (void **state)
{
    (void) state;
    act_ctx_t *ctx = s_context ();
    const char *calls [] = {
        "{\"_tool\":\"t\"}",
        "{\"_tool\":\"t\",\"a\":\"\xe2\x80\xa0state.x\"}",
        "{\"a\":\"\xe2\x80\xa0state.s\",\"_tool\":\"t\",\"b\":[\"\xe2\x80\xa0state.y\",{\"c\":"
        "\"\xe2\x80\xa0state.r\"}]}",
        "{\"_tool\":\"t\",\"_instance\":\"i1\",\"a\":\"\xe2\x80\xa0state.x\"}",
        "{\"_tool\":\"t\",\"a\":\"\xe2\x80\xa0\xe2\x80\xa0lit\",\"b\":\"\\u2020\\u2020x\\n\"}",
        "{\"_tool\":\"t\",\"a\":\"\\u2020state.y.z[1]\",\"b\":\"\xe2\x80\xa0\xe2\x80\xa0\"}",
        "{\"_tool\":\"t\",\"b\":{\"_keep\":\"\xe2\x80\xa0state.y.z[1]\",\"list\":["
        "\"\xe2\x80\xa0state.missing || \xe2\x80\xa0state.x\",\"\xe2\x80\xa0\xe2\x80\xa0lit\","
        "3,{\"deep\":\"\xe2\x80\xa0state.y\"}]},\"c\":\"plain\",\"d\":\"text with \xe2\x80\xa0\"}",
        "{\"_tool\":\"t\",\"_outputPath\":\"\xe2\x80\xa0state.out\",\"_meta\":\"\xe2\x80\xa0" "bad!\","
        "\"_id\":\"k\",\"_timeout\":5000,\"_retry\":{\"max_attempts\":3,\"backoff\":1.5},"
        "\"a\":\"\xe2\x80\xa0state.x && \xe2\x80\xa0user.name\"}",
        "  {  \"_tool\" : \"t\" ,\n \"a\" : [ 1 , 2.5 , -0.25 , 1e3 ] ,\t\"b\" : { } }  ",
        "{\"_tool\":\"t\",\"n\":[0,-1,9223372036854775807,-9223372036854775808,0.5,1e+300]}",
        "{\"_tool\":\"t\",\"n\":1.0}",
        "{\"_tool\":\"t\",\"n\":-0}",
        "{\"_tool\":\"t\",\"n\":1.50,\"a\":\"\xe2\x80\xa0state.x\"}",
        "{\"_tool\":\"t\",\"n\":12345678901234567890}",
        "{\"_tool\":\"t\",\"n\":-9223372036854775808,\"m\":9223372036854775808,"
        "\"\\u0061\\\"b\":\"caf\\u00e9 \\ud83d\\ude00\",\"\":null,\"t\":[true,{\"x\":-0}],"
        "\"e\":-1.5e-323,\"z\":0.0}",
        "{\"_tool\":\"t\",\"n\":1E5,\"m\":0.1e1,\"k\":100000000000000000000000.0}",
        "{\"\\u005ftool\":\"t\",\"\\u0061\":\"\xe2\x80\xa0state.x\",\"\\u005fkeep\":1}",
        "{\"_tool\":\"caf\\u00e9\",\"_instance\":\"\\u0069\\u0031\",\"a\":\"\xe2\x80\xa0state.x\"}",
        "{\"_tool\":\"t\",\"a\":\"\xe2\x80\xa0state.nothing\"}",
        "{\"_tool\":\"t\",\"p\":{\"q\":[\"\xe2\x80\xa0state.x && \xe2\x80\xa0state.nothing\"]}}",
        "{\"_tool\":\"t\",\"a\":\"\xe2\x80\xa0state\",\"b\":\"\xe2\x80\xa0user\"}",
        "{\"_tool\":\"t\",\"\":\"\",\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0001\\ud83d\\ude00\"}",
        //  Refused, the same way
        "[]", "\"x\"", "{}", "{\"_tool\":\"\"}", "{\"_tool\":1}",
        "{\"_tool\":\"t\",\"_timeout\":0}", "{\"_tool\":\"t\",\"_timeout\":1.5}",
        "{\"_tool\":\"t\",\"_timeout\":-5}", "{\"_tool\":\"t\",\"_timeout\":\"5\"}",
        "{\"_tool\":\"t\",\"_timeout\":99999999999999999999}",
        "{\"_tool\":\"t\",\"\\u005ftimeout\":0}",
        "{\"_tool\":\"t\",\"_retry\":{\"max_attempts\":0}}", "{\"_tool\":\"t\",\"_retry\":[]}",
        "{\"_tool\":\"t\",\"_retry\":{\"nope\":1}}",
        "{\"_tool\":\"t\",\"_outputPath\":3}", "{\"_tool\":\"t\",\"_outputPath\":\"state\"}",
        "{\"_tool\":\"t\",\"_outputMethod\":\"add\"}", "{\"_tool\":\"t\",\"_outputMethod\":1}",
        "{\"_tool\":\"t\",\"_trace\":\"00-zz\"}", "{\"_tool\":\"t\",\"a\":\"\xe2\x80\xa0\"}",
        "{\"_tool\":\"t\",\"a\":[\"\xe2\x80\xa0state..x\"]}",
        "{\"_tool\":\"t\",\"a\":1,\"a\":2}", "{\"_tool\":\"t\",", "{\"_tool\":\"t\"} x",
        "{\"_tool\":\"t\",\"a\":\"\\u0000\"}", "{\"_tool\":\"t\",\"a\":\"\xff\"}",
        "{\"_tool\":\"t\",\"a\":1e400}", "{\"_tool\":\"t\",\"a\":01}",
    };
    size_t accepted = 0;
    for (size_t i = 0; i < sizeof calls / sizeof calls [0]; i++)
        accepted += s_compare (ctx, calls [i]);
    assert_int_equal (accepted, 22);
    act_ctx_destroy (&ctx);
}

//  Numbers: which are written as act_json_dump writes them
static void
test_numbers_dumped (void **state)
{
    (void) state;
    const char *dumped [] = { "0", "-1", "9223372036854775807", "0.1", "1e+300", "2.5",
                              "[1,\"1.50\",{\"a\":-3}]", "\"-0 1.50\"", "true", "1.0" };
    const char *not_dumped [] = { "-0", "1.00", "1.50", "1E5", "12345678901234567890",
                                  "0.1e1", "[1,2.50]", "{\"a\\\"\":1.00}" };
    for (size_t i = 0; i < sizeof dumped / sizeof dumped [0]; i++)
        if (!act_call_numbers_dumped (dumped [i], strlen (dumped [i])))
            fail_msg ("%s is written so", dumped [i]);
    for (size_t i = 0; i < sizeof not_dumped / sizeof not_dumped [0]; i++)
        if (act_call_numbers_dumped (not_dumped [i], strlen (not_dumped [i])))
            fail_msg ("%s is not written so", not_dumped [i]);
}

//  Each parameter expression of the vectors, and each value they write,
//  in calls in act_json_dump's form and spread out
static void
test_vector_calls (void **state)
{
    (void) state;
    act_ctx_t *ctx = s_context ();
    const char *files [] = { S_VECTORS_DIR "/references.json", S_VECTORS_DIR "/resolve.json",
                             S_VECTORS_DIR "/local/references.json",
                             S_VECTORS_DIR "/local/resolve.json" };
    size_t calls = 0;
    for (size_t f = 0; f < sizeof files / sizeof files [0]; f++) {
        json_error_t error;
        json_t *cases = json_load_file (files [f], 0, &error);
        assert_non_null (cases);
        size_t index;
        json_t *item;
        json_array_foreach (cases, index, item) {
            json_t *params = json_array ();
            if (json_is_string (json_object_get (item, "expr"))
            &&  !json_is_true (json_object_get (item, "output")))
                json_array_append (params, json_object_get (item, "expr"));
            size_t op;
            json_t *step;
            json_array_foreach (json_object_get (item, "ops"), op, step) {
                if (json_object_get (step, "value"))
                    json_array_append (params, json_object_get (step, "value"));
                if (json_is_string (json_object_get (step, "resolve")))
                    json_array_append (params, json_object_get (step, "resolve"));
            }
            size_t p;
            json_t *param;
            json_array_foreach (params, p, param) {
                json_t *call = json_pack ("{s:s, s:O, s:[O, s]}", "_tool", "t", "p", param,
                                          "q", param, "\xe2\x80\xa0\xe2\x80\xa0" "x");
                char *text = act_json_dump (call);
                s_compare (ctx, text);
                free (text);
                text = json_dumps (call, JSON_INDENT (1));
                s_compare (ctx, text);
                free (text);
                json_decref (call);
                calls += 2;
            }
            json_decref (params);
        }
        json_decref (cases);
    }
    assert_true (calls > 200);
    act_ctx_destroy (&ctx);
}

//  A random value of depth at most depth, written into out (with random
//  white space when spaced)
static void
s_random_value (char *out, size_t room, int depth, bool spaced)
{
    static const char *scalars [] = {
        "1", "-7", "0", "2.5", "0.1", "1e+300", "true", "false", "null", "\"plain\"",
        "\"\xe2\x80\xa0state.x\"", "\"\xe2\x80\xa0state.y.z\"", "\"\xe2\x80\xa0user.name\"",
        "\"\xe2\x80\xa0\xe2\x80\xa0lit\"", "\"\\u2020state.r\"", "\"\xe2\x80\xa0state.s\"",
        "\"\xe2\x80\xa0state.nothing || \xe2\x80\xa0state.big\"", "\"caf\xc3\xa9\"",
        "\"a\\\"b\"", "\"\\u00e9\"", "\"\xe2\x80\xa0\xe2\x80\xa0\""
    };
    const char *space = spaced && rand () % 2? " ": "";
    int pick = depth > 0? rand () % 4: 3;
    size_t at = 0;
    if (pick == 3) {
        snprintf (out, room, "%s", scalars [rand () % (sizeof scalars / sizeof scalars [0])]);
        return;
    }
    bool object = pick == 0;
    at += snprintf (out + at, room - at, "%c%s", object? '{': '[', space);
    int count = rand () % 4;
    for (int i = 0; i < count && at < room - 512; i++) {
        if (i)
            at += snprintf (out + at, room - at, ",%s", space);
        if (object)
            at += snprintf (out + at, room - at, "\"%s%d\"%s:%s", rand () % 3? "k": "_k", i,
                            space, space);
        s_random_value (out + at, room - at, depth - 1, spaced);
        at += strlen (out + at);
    }
    snprintf (out + at, room - at, "%s%c", space, object? '}': ']');
}

//  Random calls, compact and spread out
static void
test_random_calls (void **state)
{
    (void) state;
    act_ctx_t *ctx = s_context ();
    srand (21);
    static char text [16384];
    for (int i = 0; i < 2000; i++) {
        bool spaced = i % 2;
        size_t at = (size_t) snprintf (text, sizeof text, "{\"_tool\":\"t\"");
        int members = rand () % 5;
        for (int m = 0; m < members; m++) {
            at += (size_t) snprintf (text + at, sizeof text - at, ",%s\"%s%d\":",
                                     spaced? " ": "", m == 2? "_m": "p", m);
            s_random_value (text + at, sizeof text - at - 2, 3, spaced);
            at += strlen (text + at);
        }
        snprintf (text + at, sizeof text - at, "}");
        s_compare (ctx, text);
    }
    act_ctx_destroy (&ctx);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_hand_calls),
        cmocka_unit_test (test_numbers_dumped),
        cmocka_unit_test (test_vector_calls),
        cmocka_unit_test (test_random_calls),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
