/*  =========================================================================
    test_ctx_view - the merged view's text (act_ctx_view_dump), which VIEW
    answers with: the same bytes as the view's JSON written by
    act_json_dump and as the text form built entry by entry from it, for
    every kind of entry; cut off exactly when it passes its bound; and
    built without copying the values it shows (counted in jansson's
    allocations, not timed).
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
#include <czmq.h>
#include "actd/act.h"
#include "json_count.h"

#define DAGGER "\xe2\x80\xa0"

//  Write value (JSON text) at the output path with method in instance
//  (NULL: global), as text when as_text (kept unparsed when it is a
//  global set or push); the context must accept it
static void
s_write (act_ctx_t *ctx, const char *path, const char *method, const char *value,
         const char *instance, bool as_text)
{
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (path, true, &err);
    assert_non_null (expr);
    act_method_t parsed;
    assert_int_equal (act_method_parse (method, &parsed), 0);
    if (as_text) {
        uint64_t first_seq;
        char **texts = act_ctx_output_text (ctx, &expr->alts [0], value, strlen (value),
                                            parsed, instance, NULL, "c1", &first_seq, &err);
        assert_non_null (texts);
        for (size_t i = 0; texts [i]; i++)
            free (texts [i]);
        free (texts);
    }
    else {
        json_t *json = json_loads (value, JSON_DECODE_ANY, NULL);
        assert_non_null (json);
        json_t *stored = act_ctx_output (ctx, &expr->alts [0], json, parsed, instance,
                                         NULL, "c1", &err);
        assert_non_null (stored);
        json_decref (stored);
        json_decref (json);
    }
    act_expr_destroy (&expr);
}

//  Append a client's data message (JSON text)
static void
s_append (act_ctx_t *ctx, const char *message)
{
    act_err_t err = { NULL, "" };
    json_t *json = json_loads (message, 0, NULL);
    assert_non_null (json);
    json_t *stored = act_ctx_append (ctx, json, &err);
    assert_non_null (stored);
    json_decref (stored);
    json_decref (json);
}

//  The text form as it was built before act_ctx_view_dump, from the
//  view's JSON: a section per entry, each joined to the text so far
static char *
s_text_reference (const json_t *view)
{
    char *text = strdup ("");
    size_t index;
    json_t *entry;
    json_array_foreach (view, index, entry) {
        const char *kind = json_string_value (json_object_get (entry, "kind"));
        const char *instance = json_string_value (json_object_get (entry, "_instance"));
        json_t *data = json_object_get (entry, "data");
        json_t *description = json_object_get (entry, "description");
        json_t *schema = json_object_get (entry, "schema");
        char *pretty = data? act_json_dumps (data, JSON_INDENT (2)): strdup ("(absent)");
        char *about = json_is_string (description)? strdup (json_string_value (description))
                    : description? act_json_dumps (description, 0): NULL;
        char *shape = schema? act_json_dumps (schema, JSON_INDENT (2)): NULL;
        char *name = instance? zsys_sprintf ("\xC2\xB6%s (instance %s)", kind, instance)
                             : zsys_sprintf ("\xC2\xB6%s", kind);
        char *joined = zsys_sprintf ("%s%s## Data: %s\n%s\n%s%s%s%s%s%s%s", text,
            index? "\n": "", name, pretty, about? about: "", about? "\n": "",
            shape? "Schema for ": "", shape? name: "", shape? ":\n": "",
            shape? shape: "", shape? "\n": "");
        free (text);
        text = joined;
        zstr_free (&name);
        free (pretty);
        free (about);
        free (shape);
    }
    return text;
}

//  A context with an entry of each sort: global and instance values,
//  values kept as text and as a rope, an absent value, descriptions as a
//  string and as JSON, schemas, names and values that need escaping
static act_ctx_t *
s_rich_context (void)
{
    act_ctx_t *ctx = act_ctx_new ("rich");
    assert_non_null (ctx);
    s_append (ctx, "{\"type\":\"data\",\"kind\":\"input\",\"data\":{\"city\":\"Paris\","
                   "\"n\":[1,2.5,null,true,{}]},\"description\":\"what came in\","
                   "\"schema\":{\"type\":\"object\"}}");
    s_write (ctx, DAGGER "state.big", "set", "{\"t\":\"caf\\u00e9\\n\\\"q\\\"\",\"l\":[]}",
             NULL, true);
    s_write (ctx, DAGGER "state.log", "push", "{\"x\":1}", NULL, true);
    char long_string [400];
    memset (long_string, 'a', sizeof long_string);
    long_string [0] = '"';
    strcpy (long_string + sizeof long_string - 2, "\"");
    s_write (ctx, DAGGER "state.rope", "set", long_string, NULL, false);
    s_write (ctx, DAGGER "state.rope", "concat", "\"tail\"", NULL, false);
    s_write (ctx, DAGGER "state.mine", "set", "[1]", "in\"st\tx\\", false);
    s_write (ctx, DAGGER "state.rope", "concat", "\"!\"", "i2", false);
    s_append (ctx, "{\"type\":\"data\",\"kind\":\"notes\",\"_instance\":\"i2\","
                   "\"data\":{\"k\":\"v\"},\"description\":{\"about\":[1,\"two\"]},"
                   "\"schema\":{\"properties\":{\"k\":{\"type\":\"string\"}}}}");
    //  An identity whose value is erased: shown absent
    s_write (ctx, DAGGER "gone", "set", "1", NULL, false);
    s_write (ctx, DAGGER "gone", "erase", "null", NULL, false);
    return ctx;
}

//  The dump is the view's JSON as act_json_dump writes it, and the text
//  form as it was built entry by entry, on every sort of entry, whether
//  the values kept as text were read before or not
static void
test_dump_is_the_view (void **state)
{
    (void) state;
    for (int read_first = 0; read_first < 2; read_first++) {
        act_ctx_t *ctx = s_rich_context ();
        if (read_first) {
            json_t *view = act_ctx_view (ctx);
            json_decref (view);
        }
        size_t size;
        char *json = act_ctx_view_dump (ctx, false, SIZE_MAX, &size);
        assert_non_null (json);
        assert_int_equal (size, strlen (json));
        json_t *view = act_ctx_view (ctx);
        char *want = act_json_dump (view);
        assert_string_equal (json, want);
        char *text = act_ctx_view_dump (ctx, true, SIZE_MAX, &size);
        char *want_text = s_text_reference (view);
        assert_string_equal (text, want_text);
        char *view_text = act_ctx_view_text (ctx);
        assert_string_equal (view_text, want_text);
        free (view_text);
        free (want_text);
        free (text);
        free (want);
        free (json);
        json_decref (view);
        act_ctx_destroy (&ctx);
    }
    //  An empty context: [] and ""
    act_ctx_t *empty = act_ctx_new ("empty");
    size_t size;
    char *json = act_ctx_view_dump (empty, false, SIZE_MAX, &size);
    assert_string_equal (json, "[]");
    char *text = act_ctx_view_dump (empty, true, SIZE_MAX, &size);
    assert_string_equal (text, "");
    assert_int_equal (size, 0);
    free (json);
    free (text);
    act_ctx_destroy (&empty);
}

//  With a bound, the dump is the whole text when it fits, else NULL with
//  a size over the bound: at every bound around the text's length and
//  below it
static void
test_dump_stops_past_its_bound (void **state)
{
    (void) state;
    act_ctx_t *ctx = s_rich_context ();
    for (int text = 0; text < 2; text++) {
        size_t length;
        char *whole = act_ctx_view_dump (ctx, text, SIZE_MAX, &length);
        assert_non_null (whole);
        for (size_t max = 0; max <= length + 2; max++) {
            size_t size;
            char *dump = act_ctx_view_dump (ctx, text, max, &size);
            if (max >= length) {
                assert_non_null (dump);
                assert_string_equal (dump, whole);
                assert_int_equal (size, length);
            }
            else {
                assert_null (dump);
                assert_true (size > max);
            }
            free (dump);
        }
        free (whole);
    }
    act_ctx_destroy (&ctx);
}

//  The dump copies no value it shows, and stops at its bound: with a
//  global list of 20,000 items and 500 instances, each with a value of
//  its own, a dump costs jansson next to nothing once the instances'
//  folds are made (act_ctx_view copied every value: the list's 40,000
//  allocations, and each instance's); a dump that passes its bound in the
//  first entry costs nothing either (the whole view was built first)
static void
test_dump_copies_nothing (void **state)
{
    (void) state;
    act_ctx_t *ctx = act_ctx_new ("many");
    json_t *list = json_array ();
    for (int i = 0; i < 20000; i++)
        json_array_append_new (list, json_pack ("{si}", "v", i));
    char *list_text = act_json_dump (list);
    json_decref (list);
    s_write (ctx, DAGGER "s.list", "set", list_text, NULL, false);
    free (list_text);
    char instance [32];
    for (int i = 0; i < 500; i++) {
        snprintf (instance, sizeof instance, "i%d", i);
        s_write (ctx, DAGGER "t.mine", "set", "{\"n\":1}", instance, false);
    }
    size_t size;
    free (act_ctx_view_dump (ctx, false, SIZE_MAX, &size));   //  The folds made
    for (int text = 0; text < 2; text++) {
        unit_json_count_start ();
        char *dump = act_ctx_view_dump (ctx, text, 4096, &size);
        size_t allocations = unit_json_count_stop ();
        assert_null (dump);
        print_message ("a dump over its bound: %zu allocations\n", allocations);
        assert_in_range (allocations, 0, 100);
        unit_json_count_start ();
        dump = act_ctx_view_dump (ctx, text, SIZE_MAX, &size);
        allocations = unit_json_count_stop ();
        assert_non_null (dump);
        print_message ("a whole dump of 500 instances: %zu allocations\n", allocations);
        assert_in_range (allocations, 0, 100);
        free (dump);
    }
    act_ctx_destroy (&ctx);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_dump_is_the_view),
        cmocka_unit_test (test_dump_stops_past_its_bound),
        cmocka_unit_test (test_dump_copies_nothing),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
