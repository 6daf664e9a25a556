/*  =========================================================================
    test_bad_input_calls - a bad call gets a clear error, no crash, and
    changes nothing, as in test_bad_input: each meta-property at and past
    its limits, a bad reference at any depth of the parameters; and what a
    valid call is: its fields and defaults, and the parameters a worker
    receives (SEMANTICS.md sections 2 and 7).
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
#include "bad_input_support.h"

//  --------------------------------------------------------------------------
//  Helpers

//  act_call_parse must refuse the call with code
static void
s_assert_bad_call_value (json_t *call, const char *code)
{
    char *text = json_dumps (call, JSON_ENCODE_ANY | JSON_COMPACT);
    act_err_t err = { NULL, "" };
    act_call_t *parsed = act_call_parse (call, &err);
    if (parsed) {
        act_call_destroy (&parsed);
        fail_msg ("act_call_parse accepted %.200s", text);
    }
    if (strcmp (s_code (&err), code) != 0)
        fail_msg ("act_call_parse %.200s: code %s (%s), expected %s",
                  text, s_code (&err), err.message, code);
    if (err.message [0] == 0)
        fail_msg ("act_call_parse %.200s: empty message", text);
    free (text);
}

//  act_call_parse must refuse the JSON text with code
static void
s_assert_bad_call (const char *text, const char *code)
{
    json_t *call = s_json (text);
    s_assert_bad_call_value (call, code);
    json_decref (call);
}

//  The call the JSON text is; a refusal fails the test
static act_call_t *
s_call (const char *text)
{
    json_t *json = s_json (text);
    act_err_t err = { NULL, "" };
    act_call_t *call = act_call_parse (json, &err);
    if (!call)
        fail_msg ("act_call_parse %s refused: %s: %s", text, s_code (&err), err.message);
    //  The call holds its own reference
    json_decref (json);
    return call;
}


//  --------------------------------------------------------------------------
//  Calls

//  SEMANTICS 7: a call that breaks a rule is refused with the right code
static void
test_bad_calls (void **state)
{
    //  Not a call
    s_assert_bad_call ("[]", ACT_E_BAD_CALL);
    s_assert_bad_call ("\"echo\"", ACT_E_BAD_CALL);
    s_assert_bad_call ("null", ACT_E_BAD_CALL);
    s_assert_bad_call ("{}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"tool\":\"echo\"}", ACT_E_BAD_CALL);
    //  _tool: a string of 1 to 256 bytes
    s_assert_bad_call ("{\"_tool\":5}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":null}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":[\"echo\"]}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"\"}", ACT_E_BAD_CALL);
    char *long_tool = s_repeat ('t', ACT_MAX_TOOL + 1);
    json_t *call = json_pack ("{s:s}", "_tool", long_tool);
    s_assert_bad_call_value (call, ACT_E_BAD_CALL);
    json_decref (call);
    long_tool [ACT_MAX_TOOL] = 0;
    call = json_pack ("{s:s}", "_tool", long_tool);
    act_err_t err = { NULL, "" };
    act_call_t *parsed = act_call_parse (call, &err);
    assert_non_null (parsed);
    assert_int_equal (strlen (parsed->tool), ACT_MAX_TOOL);
    act_call_destroy (&parsed);
    assert_null (parsed);
    json_decref (call);
    free (long_tool);

    //  _outputPath: a string, and an output path
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":5}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":[\"†a.b\"]}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":\"state.out\"}", ACT_E_BAD_REFERENCE);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":\"†state..out\"}", ACT_E_BAD_REFERENCE);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":\"\"}", ACT_E_BAD_REFERENCE);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":\"†a ||| †b\"}", ACT_E_BAD_REFERENCE);
    //  _outputMethod: one of the six
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":\"†a.b\",\"_outputMethod\":\"bogus\"}",
                       ACT_E_BAD_METHOD);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":\"†a.b\",\"_outputMethod\":\"SET\"}",
                       ACT_E_BAD_METHOD);
    //  _instance: 1 to 128 bytes
    s_assert_bad_call ("{\"_tool\":\"t\",\"_instance\":\"\"}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_instance\":5}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_instance\":null}", ACT_E_BAD_CALL);
    char *long_instance = s_repeat ('i', ACT_MAX_INSTANCE + 1);
    call = json_pack ("{s:s, s:s}", "_tool", "t", "_instance", long_instance);
    s_assert_bad_call_value (call, ACT_E_BAD_CALL);
    json_decref (call);
    free (long_instance);
    //  _id: 1 to 128 bytes
    s_assert_bad_call ("{\"_tool\":\"t\",\"_id\":\"\"}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_id\":7}", ACT_E_BAD_CALL);
    char *long_id = s_repeat ('k', ACT_MAX_CALL_ID + 1);
    call = json_pack ("{s:s, s:s}", "_tool", "t", "_id", long_id);
    s_assert_bad_call_value (call, ACT_E_BAD_CALL);
    json_decref (call);
    free (long_id);
    //  _timeout: a positive integer
    s_assert_bad_call ("{\"_tool\":\"t\",\"_timeout\":-1}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_timeout\":0}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_timeout\":1.5}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_timeout\":\"100\"}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_timeout\":true}", ACT_E_BAD_CALL);
    //  _retry: an object of numbers
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":5}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":[]}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":\"3\"}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":{\"max_attempts\":\"3\"}}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":{\"initial_ms\":true}}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":{\"backoff\":\"2\"}}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":{\"max_ms\":{}}}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":{\"max_attempts\":null}}", ACT_E_BAD_CALL);
}

//  SEMANTICS 2: a bad reference at any depth of the parameters names the
//  string and the byte offset; meta-properties are not references
static void
test_bad_call_references (void **state)
{
    act_err_t err = { NULL, "" };
    act_call_t *parsed;
    static const char *bad_params [] = {
        "{\"_tool\":\"t\",\"a\":{\"b\":{\"c\":\"†bad..ref\"}}}",
        "{\"_tool\":\"t\",\"a\":[{\"b\":[\"†bad..ref\"]}]}",
        "{\"_tool\":\"t\",\"a\":\"†bad..ref\"}",
        "{\"_tool\":\"t\",\"a\":{\"b\":{\"c\":\"†bad..ref || †ok\"}}}",
    };
    for (size_t i = 0; i < sizeof bad_params / sizeof bad_params [0]; i++) {
        json_t *json = s_json (bad_params [i]);
        act_err_clear (&err);
        parsed = act_call_parse (json, &err);
        if (parsed)
            fail_msg ("act_call_parse accepted %s", bad_params [i]);
        if (strcmp (s_code (&err), ACT_E_BAD_REFERENCE) != 0)
            fail_msg ("act_call_parse %s: code %s, expected bad_reference",
                      bad_params [i], s_code (&err));
        if (!strstr (err.message, "byte") || !strstr (err.message, "†bad..ref"))
            fail_msg ("act_call_parse %s: message \"%s\" does not name the "
                      "string and the byte offset", bad_params [i], err.message);
        json_decref (json);
    }
    //  Meta-properties are never resolved, so they are never parsed as
    //  parameter references
    parsed = s_call ("{\"_tool\":\"t\",\"_id\":\"†not..a.ref\"}");
    assert_int_equal (parsed->nrefs, 0);
    act_call_destroy (&parsed);
}

//  SEMANTICS 7: a valid call's meta-properties, and its defaults
static void
test_call_fields (void **state)
{
    act_call_t *call = s_call ("{\"_tool\":\"echo\",\"text\":\"hi\"}");
    assert_string_equal (call->tool, "echo");
    assert_null (call->output);
    assert_int_equal (call->method, ACT_SET);
    assert_null (call->instance);
    assert_null (call->id);
    assert_int_equal (call->timeout_ms, -1);
    assert_int_equal (call->retry.max_attempts, -1);
    assert_int_equal (call->retry.initial_ms, -1);
    assert_true (call->retry.backoff < 0);
    assert_int_equal (call->retry.max_ms, -1);
    assert_int_equal (call->nrefs, 0);
    assert_true (json_is_object (call->json));
    assert_string_equal (json_string_value (json_object_get (call->json, "text")), "hi");
    act_call_destroy (&call);
    assert_null (call);
    act_call_destroy (&call);   //  Safe on NULL

    call = s_call ("{\"_tool\":\"crm.update\",\"_outputPath\":\"†state.a || †state.b\","
                   "\"_outputMethod\":\"push\",\"_instance\":\"employee_A\","
                   "\"_id\":\"key-1\",\"_timeout\":5000,"
                   "\"_retry\":{\"max_attempts\":3,\"initial_ms\":100,"
                   "\"backoff\":2.5,\"max_ms\":1000}}");
    assert_string_equal (call->tool, "crm.update");
    assert_non_null (call->output);
    assert_true (call->output->output);
    assert_int_equal (call->output->nalts, 2);
    assert_int_equal (call->method, ACT_PUSH);
    assert_string_equal (call->instance, "employee_A");
    assert_string_equal (call->id, "key-1");
    assert_int_equal (call->timeout_ms, 5000);
    assert_int_equal (call->retry.max_attempts, 3);
    assert_int_equal (call->retry.initial_ms, 100);
    assert_true (call->retry.backoff == 2.5);
    assert_int_equal (call->retry.max_ms, 1000);
    act_call_destroy (&call);

    //  Fields of _retry not given are -1; the output path takes synonyms
    call = s_call ("{\"_tool\":\"t\",\"_outputPath\":\"†s.a *> †s.b\","
                   "\"_retry\":{\"max_attempts\":2}}");
    assert_int_equal (call->output->nalts, 1);
    assert_int_equal (call->output->alts [0].nrefs, 2);
    assert_int_equal (call->method, ACT_SET);
    assert_int_equal (call->retry.max_attempts, 2);
    assert_int_equal (call->retry.initial_ms, -1);
    assert_true (call->retry.backoff < 0);
    assert_int_equal (call->retry.max_ms, -1);
    act_call_destroy (&call);

    //  The limits themselves are accepted
    char *instance = s_repeat ('i', ACT_MAX_INSTANCE);
    char *id = s_repeat ('k', ACT_MAX_CALL_ID);
    json_t *json = json_pack ("{s:s, s:s, s:s, s:i}", "_tool", "t", "_instance", instance,
                              "_id", id, "_timeout", 1);
    act_err_t err = { NULL, "" };
    call = act_call_parse (json, &err);
    if (!call)
        fail_msg ("call at the limits refused: %s: %s", s_code (&err), err.message);
    assert_int_equal (strlen (call->instance), ACT_MAX_INSTANCE);
    assert_int_equal (strlen (call->id), ACT_MAX_CALL_ID);
    assert_int_equal (call->timeout_ms, 1);
    act_call_destroy (&call);
    json_decref (json);
    free (instance);
    free (id);

    //  Every reference is counted, at any depth; "††" is a literal
    call = s_call ("{\"_tool\":\"t\",\"_outputPath\":\"†state.out\","
                   "\"a\":\"†state.x\","
                   "\"b\":{\"_keep\":\"†state.y.z[1]\","
                   "\"list\":[\"†state.missing || †state.x\",\"††literal\",3,"
                   "{\"deep\":\"†state.y\"}]},"
                   "\"c\":\"plain\",\"d\":\"text with † inside\"}");
    assert_int_equal (call->nrefs, 4);
    for (size_t i = 0; i < call->nrefs; i++) {
        assert_non_null (call->refs [i]);
        assert_false (call->refs [i]->output);
    }
    act_call_destroy (&call);
}

//  SEMANTICS 2 and 7: the parameters a worker receives
static void
test_call_params (void **state)
{
    act_ctx_t *ctx = act_ctx_new ("calls");
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"state\","
                                "\"data\":{\"x\":1,\"y\":{\"z\":[1,2]}}}"));
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"state\","
                                "\"_instance\":\"i1\",\"data\":{\"x\":\"one\"}}"));
    const char *text =
        "{\"_tool\":\"t\",\"_outputPath\":\"†state.out\",\"_id\":\"k\","
        "\"a\":\"†state.x\","
        "\"b\":{\"_keep\":\"†state.y.z[1]\","
        "\"list\":[\"†state.missing || †state.x\",\"††lit\",3,"
        "{\"deep\":\"†state.y\"}]},"
        "\"c\":\"plain\",\"d\":\"††\",\"e\":\"text with † inside\","
        "\"f\":\"†state.x && †state.y.z\"}";
    act_call_t *call = s_call (text);
    act_err_t err = { NULL, "" };
    json_t *params = act_call_params (call, ctx, &err);
    if (!params)
        fail_msg ("act_call_params refused: %s: %s", s_code (&err), err.message);
    json_t *want = s_json ("{\"a\":1,\"b\":{\"_keep\":2,\"list\":[1,\"†lit\",3,"
                           "{\"deep\":{\"z\":[1,2]}}]},\"c\":\"plain\",\"d\":\"†\","
                           "\"e\":\"text with † inside\",\"f\":[1,2]}");
    if (!json_equal (params, want)) {
        char *shown = json_dumps (params, JSON_COMPACT);
        fail_msg ("act_call_params gave %s", shown);
    }
    json_decref (params);
    json_decref (want);
    //  The call itself is not changed
    assert_string_equal (json_string_value (json_object_get (call->json, "a")), "†state.x");
    act_call_destroy (&call);

    //  In the call's instance
    call = s_call ("{\"_tool\":\"t\",\"_instance\":\"i1\",\"a\":\"†state.x\","
                   "\"b\":[\"†state.y.z\"]}");
    params = act_call_params (call, ctx, &err);
    assert_non_null (params);
    want = s_json ("{\"a\":\"one\",\"b\":[[1,2]]}");
    assert_true (json_equal (params, want));
    json_decref (params);
    json_decref (want);
    act_call_destroy (&call);

    //  An absent reference is unresolved_reference, named
    call = s_call ("{\"_tool\":\"t\",\"p\":{\"q\":[\"†state.nothing\"]}}");
    act_err_clear (&err);
    params = act_call_params (call, ctx, &err);
    assert_null (params);
    assert_string_equal (s_code (&err), ACT_E_UNRESOLVED_REFERENCE);
    if (!strstr (err.message, "†state.nothing"))
        fail_msg ("message \"%s\" does not name the reference", err.message);
    act_call_destroy (&call);
    //  A gate with an absent operand is absent too
    call = s_call ("{\"_tool\":\"t\",\"p\":\"†state.x && †state.nothing\"}");
    act_err_clear (&err);
    params = act_call_params (call, ctx, &err);
    assert_null (params);
    assert_string_equal (s_code (&err), ACT_E_UNRESOLVED_REFERENCE);
    act_call_destroy (&call);
    act_ctx_destroy (&ctx);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_bad_calls),
        cmocka_unit_test (test_bad_call_references),
        cmocka_unit_test (test_call_fields),
        cmocka_unit_test (test_call_params),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
