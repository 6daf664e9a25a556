/*  =========================================================================
    test_tools - the registry of tools (daemon/act_tools.c, PROTOCOL.md
    section 2.1) on its own: declarations checked all or none, the latest
    one winning, prescribed and pattern output paths, params checked at
    submit (with references as unknown values) and, when they held
    references or the tool changed since, at dispatch, strict activities,
    TOOLS' body, and an activity the pool forgets taking its tool along.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "act_tools.h"

typedef struct {
    act_settings_t *settings;   //  Defaults
    act_pool_t *pool;           //  No workers
    act_tools_t *tools;         //  Under test
    uint64_t checked;           //  The last admit's version checked
} s_world_t;

static int
s_setup (void **state)
{
    act_log_threshold = LOG_ERR;
    act_log_stream = NULL;
    s_world_t *world = calloc (1, sizeof (s_world_t));
    world->settings = act_settings_new ();
    world->settings->log_syslog = false;
    world->pool = act_pool_new (world->settings);
    world->tools = act_tools_new (world->settings, world->pool);
    *state = world;
    return 0;
}

static int
s_teardown (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    act_tools_destroy (&world->tools);
    act_tools_destroy (&world->tools);     //  Idempotent
    act_pool_destroy (&world->pool);
    act_settings_destroy (&world->settings);
    free (world);
    return 0;
}

//  Declare tools (JSON text) for names (JSON text); returns the rc, err kept
static int
s_declare (s_world_t *world, const char *names, const char *tools, act_err_t *err)
{
    json_t *n = json_loads (names, 0, NULL);
    json_t *t = tools? json_loads (tools, 0, NULL): NULL;
    assert_non_null (n);
    int rc = act_tools_declare (world->tools, n, t, "w1", err);
    json_decref (n);
    json_decref (t);
    return rc;
}

//  Admit the call (JSON text) after prescribe; returns the rc, err kept;
//  *changed says whether prescribe changed it
static int
s_admit (s_world_t *world, const char *text, act_err_t *err, bool *changed)
{
    act_err_t parse = { 0 };
    act_call_t *call = act_call_new (NULL, text, strlen (text), &parse);
    assert_non_null (call);
    int was = act_tools_prescribe (world->tools, &call, &parse);
    assert_true (was >= 0);
    assert_non_null (call);
    if (changed)
        *changed = was == 1;
    uint64_t checked;
    int rc = act_tools_admit (world->tools, call, act_pool_activity (world->pool, call->tool),
                              &checked, err);
    world->checked = checked;
    act_call_destroy (&call);
    return rc;
}

static void
s_assert_json (json_t *actual, const char *expected)
{
    json_t *want = json_loads (expected, 0, NULL);
    assert_non_null (want);
    if (!json_equal (actual, want)) {
        char *text = json_dumps (actual, JSON_SORT_KEYS);
        fail_msg ("got %s, expected %s", text, expected);
    }
    json_decref (want);
    json_decref (actual);
}

//  A READY is taken all or none: one bad tool and nothing is recorded
static void
test_declare_all_or_none (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    act_err_t err = { 0 };
    assert_int_equal (s_declare (world, "[\"a\", \"b\"]",
                                 "{\"a\": {\"description\": \"A\"},"
                                 " \"b\": {\"params\": {\"contains\": {}}}}", &err), -1);
    assert_string_equal (err.code, ACT_E_BAD_ARGUMENT);
    assert_non_null (strstr (err.message, "tool b: params: "));
    assert_non_null (strstr (err.message, "not supported"));
    assert_false (act_tools_named (world->tools, "a"));
    s_assert_json (act_tools_json (world->tools, NULL), "{}");
    //  Each kind of bad declaration names what is wrong
    const char *cases [][2] = {
        { "[\"a\"]", "tools is an object" },
        { "{\"x\": {}}", "not one of its activities" },
        { "{\"a\": 1}", "is an object" },
        { "{\"a\": {\"description\": 2}}", "description is a string" },
        { "{\"a\": {\"name\": \"a\"}}", "unknown field \"name\"" },
        { "{\"a\": {\"outputPath\": {}}}", "outputPath must be" },
        { "{\"a\": {\"outputPath\": {\"const\": 1}}}", "outputPath must be" },
        { "{\"a\": {\"outputPath\": {\"const\": \"nope\"}}}", "not an output path" },
        { "{\"a\": {\"outputPath\": {\"pattern\": \"[\"}}}", "outputPath.pattern" },
        { "{\"a\": {\"outputPath\": {\"pattern\": \"\\\\Z\"}}}", "outputPath.pattern" },
        { "{\"a\": {\"params\": {\"type\": \"objet\"}}}", "/type" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        act_err_t why = { 0 };
        assert_int_equal (s_declare (world, "[\"a\"]", cases [i][0], &why), -1);
        if (!strstr (why.message, cases [i][1]))
            fail_msg ("%s: got '%s', expected '%s'", cases [i][0], why.message, cases [i][1]);
    }
    s_assert_json (act_tools_json (world->tools, NULL), "{}");
    //  Names alone are recorded, with no tool
    assert_int_equal (s_declare (world, "[\"a\", \"b\"]", NULL, &err), 0);
    s_assert_json (act_tools_json (world->tools, NULL),
                   "{\"a\": {\"workers\": 0}, \"b\": {\"workers\": 0}}");
    s_assert_json (act_tools_json (world->tools, "b"), "{\"b\": {\"workers\": 0}}");
    s_assert_json (act_tools_json (world->tools, "zz"), "{}");
}

//  The latest declaration wins; one without a tool keeps the declared one
static void
test_latest_wins (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    act_err_t err = { 0 };
    assert_int_equal (s_declare (world, "[\"t\"]", "{\"t\": {\"description\": \"one\"}}",
                                 &err), 0);
    assert_int_equal (s_declare (world, "[\"t\"]", "{\"t\": {\"description\": \"two\"}}",
                                 &err), 0);
    assert_int_equal (s_declare (world, "[\"t\"]", NULL, &err), 0);
    assert_int_equal (s_declare (world, "[\"t\"]", "{}", &err), 0);
    s_assert_json (act_tools_json (world->tools, "t"),
                   "{\"t\": {\"description\": \"two\", \"workers\": 0}}");
}

//  A prescribed output path is given to a call without one; another is
//  refused, the same one is fine
static void
test_prescribed_output (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    act_err_t err = { 0 };
    assert_int_equal (s_declare (world, "[\"s\"]", "{\"s\": {\"outputPath\": "
                                 "{\"const\": \"\xe2\x80\xa0state.sum\"}}}", &err), 0);
    bool changed = false;
    assert_int_equal (s_admit (world, "{\"_tool\": \"s\"}", &err, &changed), 0);
    assert_true (changed);
    assert_int_equal (s_admit (world, "{\"_tool\": \"s\", \"_outputPath\": "
                               "\"\xe2\x80\xa0state.sum\"}", &err, &changed), 0);
    assert_false (changed);
    assert_int_equal (s_admit (world, "{\"_tool\": \"s\", \"_outputPath\": "
                               "\"\xe2\x80\xa0other\"}", &err, NULL), -1);
    assert_string_equal (err.code, ACT_E_BAD_CALL);
    assert_non_null (strstr (err.message, "prescribes"));
    //  Other activities are untouched
    assert_int_equal (s_admit (world, "{\"_tool\": \"free\"}", &err, &changed), 0);
    assert_false (changed);
}

//  A pattern must match the whole _outputPath (PROTOCOL.md 2.1), anchored
//  or not: JSON Schema's "pattern" would search
static void
test_pattern_output (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    act_err_t err = { 0 };
    assert_int_equal (s_declare (world, "[\"p\"]", "{\"p\": {\"outputPath\": "
                                 "{\"pattern\": \"^(\xe2\x80\xa0n\\\\.[a-z]+|\xe2\x80\xa0m)$\"}}}",
                                 &err), 0);
    assert_int_equal (s_admit (world, "{\"_tool\": \"p\", \"_outputPath\": "
                               "\"\xe2\x80\xa0n.abc\"}", &err, NULL), 0);
    assert_int_equal (s_admit (world, "{\"_tool\": \"p\", \"_outputPath\": "
                               "\"\xe2\x80\xa0m\"}", &err, NULL), 0);
    const char *refused [] = {
        "{\"_tool\": \"p\", \"_outputPath\": \"\xe2\x80\xa0n.abc.d\"}",
        "{\"_tool\": \"p\", \"_outputPath\": \"\xe2\x80\xa0mm\"}",
        "{\"_tool\": \"p\"}",
    };
    for (size_t i = 0; i < 3; i++) {
        act_err_clear (&err);
        assert_int_equal (s_admit (world, refused [i], &err, NULL), -1);
        assert_string_equal (err.code, ACT_E_BAD_CALL);
    }
    //  Unanchored, it still takes only a whole match: no alternative or
    //  longer path around one
    assert_int_equal (s_declare (world, "[\"u\"]", "{\"u\": {\"outputPath\": "
                                 "{\"pattern\": \"\xe2\x80\xa0n\\\\.[a-z]+\"}}}", &err), 0);
    assert_int_equal (s_admit (world, "{\"_tool\": \"u\", \"_outputPath\": "
                               "\"\xe2\x80\xa0n.abc\"}", &err, NULL), 0);
    const char *unanchored [] = {
        "{\"_tool\": \"u\", \"_outputPath\": \"\xe2\x80\xa0s.x || \xe2\x80\xa0n.abc\"}",
        "{\"_tool\": \"u\", \"_outputPath\": \"\xe2\x80\xa0n.ab || \xe2\x80\xa0s.x\"}",
        "{\"_tool\": \"u\", \"_outputPath\": \"\xe2\x80\xa0n.abc.d\"}",
    };
    for (size_t i = 0; i < 3; i++) {
        act_err_clear (&err);
        assert_int_equal (s_admit (world, unanchored [i], &err, NULL), -1);
        assert_string_equal (err.code, ACT_E_BAD_CALL);
        assert_non_null (strstr (err.message, "as a whole"));
    }
    //  The seeds' "^†" takes no output path; "^†.*" any
    assert_int_equal (s_declare (world, "[\"f\", \"g\"]", "{\"f\": {\"outputPath\": "
                                 "{\"pattern\": \"^\xe2\x80\xa0\"}}, \"g\": {\"outputPath\": "
                                 "{\"pattern\": \"^\xe2\x80\xa0.*\"}}}", &err), 0);
    act_err_clear (&err);
    assert_int_equal (s_admit (world, "{\"_tool\": \"f\", \"_outputPath\": "
                               "\"\xe2\x80\xa0x.y || \xe2\x80\xa0z\"}", &err, NULL), -1);
    assert_string_equal (err.code, ACT_E_BAD_CALL);
    assert_int_equal (s_admit (world, "{\"_tool\": \"g\", \"_outputPath\": "
                               "\"\xe2\x80\xa0x.y || \xe2\x80\xa0z\"}", &err, NULL), 0);
    act_err_clear (&err);
    assert_int_equal (s_admit (world, "{\"_tool\": \"g\"}", &err, NULL), -1);
    assert_string_equal (err.code, ACT_E_BAD_CALL);
}

//  Params: at submit, a reference as an unknown value; at dispatch again
//  when they held one
static void
test_params (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    act_err_t err = { 0 };
    assert_int_equal (s_declare (world, "[\"w\"]", "{\"w\": {\"params\": {\"type\": \"object\","
                                 " \"properties\": {\"n\": {\"type\": \"integer\"},"
                                 " \"s\": {\"type\": \"string\", \"pattern\": \"^\xe2\x80\xa0\"}},"
                                 " \"additionalProperties\": false}}}", &err), 0);
    assert_int_equal (s_admit (world, "{\"_tool\": \"w\", \"n\": 1, \"_mine\": 2}", &err, NULL),
                      0);
    assert_int_equal (s_admit (world, "{\"_tool\": \"w\", \"n\": \"x\"}", &err, NULL), -1);
    assert_string_equal (err.code, ACT_E_BAD_CALL);
    assert_string_equal (err.message, "params of w: /n: type: expected integer");
    //  "††x" is the literal string "†x"
    assert_int_equal (s_admit (world, "{\"_tool\": \"w\", \"s\": \"\xe2\x80\xa0\xe2\x80\xa0x\"}",
                               &err, NULL), 0);
    //  With a reference: refused at submit for what no value of it mends
    assert_int_equal (s_admit (world, "{\"_tool\": \"w\", \"n\": \"\xe2\x80\xa0input.n\","
                               " \"extra\": 1}", &err, NULL), -1);
    assert_string_equal (err.code, ACT_E_BAD_CALL);
    assert_string_equal (err.message, "params of w: /extra: additionalProperties: not allowed");
    assert_int_equal (s_admit (world, "{\"_tool\": \"w\", \"n\": \"\xe2\x80\xa0input.s\","
                               " \"s\": 5}", &err, NULL), -1);
    assert_string_equal (err.message, "params of w: /s: type: expected string");
    //  Accepted when its value may do, and checked resolved at dispatch
    act_err_clear (&err);
    assert_int_equal (s_admit (world, "{\"_tool\": \"w\", \"n\": \"\xe2\x80\xa0input.n\"}",
                               &err, NULL), 0);
    json_t *params = json_pack ("{ss}", "n", "5");
    assert_int_equal (world->checked, 0);
    assert_int_equal (act_tools_check_params (world->tools, "w", params, 0, &err), -1);
    assert_string_equal (err.code, ACT_E_BAD_PARAMS);
    assert_string_equal (err.message, "params of w: /n: type: expected integer");
    json_decref (params);
    params = json_pack ("{si}", "n", 5);
    assert_int_equal (act_tools_check_params (world->tools, "w", params, 0, &err), 0);
    assert_int_equal (act_tools_check_params (world->tools, "other", params, 0, &err), 0);
    json_decref (params);
    //  Checked at submit against this version: not again at dispatch;
    //  against an older one (the tool changed since): again
    assert_int_equal (s_admit (world, "{\"_tool\": \"w\", \"n\": 1}", &err, NULL), 0);
    uint64_t version = world->checked;
    assert_true (version > 0);
    params = json_pack ("{ss}", "n", "5");
    assert_int_equal (act_tools_check_params (world->tools, "w", params, version, &err), 0);
    assert_int_equal (s_declare (world, "[\"w\"]", "{\"w\": {\"params\": {\"properties\":"
                                 " {\"n\": {\"type\": \"integer\"}}}}}", &err), 0);
    assert_int_equal (act_tools_check_params (world->tools, "w", params, version, &err), -1);
    json_decref (params);
}

//  Strict activities: unknown_activity unless named by a READY or the config
static void
test_strict (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    act_err_t err = { 0 };
    assert_int_equal (s_admit (world, "{\"_tool\": \"nobody\"}", &err, NULL), 0);
    world->settings->strict_activities = true;
    assert_int_equal (s_admit (world, "{\"_tool\": \"nobody\"}", &err, NULL), -1);
    assert_string_equal (err.code, ACT_E_UNKNOWN_ACTIVITY);
    act_activity_settings_t *own = malloc (sizeof *own);
    *own = world->settings->defaults;
    zhashx_insert (world->settings->activities, "configured", own);
    act_err_clear (&err);
    assert_int_equal (s_admit (world, "{\"_tool\": \"configured\"}", &err, NULL), 0);
    assert_int_equal (s_declare (world, "[\"named\"]", NULL, &err), 0);
    assert_int_equal (s_admit (world, "{\"_tool\": \"named\"}", &err, NULL), 0);
}

//  A worker (key) joins the pool serving names (JSON text) and declaring
//  tools (JSON text), as a READY does
static act_worker_t *
s_ready (s_world_t *world, const char *key, const char *names, const char *tools)
{
    act_err_t err = { 0 };
    assert_int_equal (s_declare (world, names, tools, &err), 0);
    json_t *n = json_loads (names, 0, NULL);
    zframe_t *identity = zframe_new (key, strlen (key));
    act_worker_t *worker = act_pool_join (world->pool, identity, key, ACT_PROTO_ACTW, false,
                                          n, 1, key, "c");
    worker->tools = json_loads (tools, 0, NULL);
    zframe_destroy (&identity);
    json_decref (n);
    return worker;
}

//  An activity the pool forgets (its workers left, and more than
//  ACT_POOL_IDLE_KEPT others were idle since) takes its name and tool out
//  of the registry: TOOLS lists it no more, and strict activities refuse
//  it. One a connected worker serves keeps both.
static void
test_forgotten_activity_takes_its_tool (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    act_worker_t *gone = s_ready (world, "w1", "[\"gone\"]",
                                  "{\"gone\": {\"description\": \"g\"}}");
    s_ready (world, "w2", "[\"kept\"]", "{\"kept\": {\"description\": \"k\"}}");
    act_tools_left (world->tools, gone);
    act_pool_remove (world->pool, gone);
    s_assert_json (act_tools_json (world->tools, "gone"),
                   "{\"gone\": {\"description\": \"g\", \"workers\": 0}}");
    char name [16];
    for (int n = 0; n < ACT_POOL_IDLE_KEPT; n++) {
        snprintf (name, sizeof name, "a%04d", n);
        act_activity_t *activity = act_pool_activity (world->pool, name);
        activity->done++;
        act_pool_idle (world->pool, activity);
    }
    assert_false (act_tools_named (world->tools, "gone"));
    s_assert_json (act_tools_json (world->tools, NULL),
                   "{\"kept\": {\"description\": \"k\", \"workers\": 1}}");
    world->settings->strict_activities = true;
    act_err_t err = { 0 };
    assert_int_equal (s_admit (world, "{\"_tool\": \"gone\"}", &err, NULL), -1);
    assert_string_equal (err.code, ACT_E_UNKNOWN_ACTIVITY);
    //  It comes back with a READY, without its old tool
    s_ready (world, "w3", "[\"gone\"]", "{}");
    s_assert_json (act_tools_json (world->tools, "gone"), "{\"gone\": {\"workers\": 1}}");
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_declare_all_or_none, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_latest_wins, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_prescribed_output, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_pattern_output, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_params, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_strict, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_forgotten_activity_takes_its_tool, s_setup,
                                         s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
