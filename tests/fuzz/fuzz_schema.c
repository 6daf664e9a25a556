/*  =========================================================================
    fuzz_schema - the differential fuzzer of act_schema's two readers.

    The input is a schema and an instance: the first line (up to the first
    '\n') is the schema's JSON text, the rest the instance's. When the
    schema compiles and act_scan accepts the instance, the verdict and the
    message of act_schema_valid on act_json_parse of the instance (the
    tree) must be those of act_schema_valid_text on the instance's text in
    place, and, when the instance is an object that makes a call with a
    "_tool" member in front, of act_schema_valid_call on that call (as at
    submit). That call is also checked with its references unknown
    (act_schema_valid_unresolved, as at submit): without references it
    must say what act_schema_valid_call says; with references, a refusal
    must hold for every resolution partial_diff tries (each reference
    replaced by 0, "", null, true, [], {}, "x" or 1.5, alike and mixed).
    A difference aborts with the input named by libFuzzer.
    ========================================================================= */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "actd/act.h"
#include "partial_diff.h"

static act_scan_t *s_scan;

static void
s_exit (void)
{
    act_scan_destroy (&s_scan);
}

//  Abort when the two outcomes differ
static void
s_same (const char *reader, bool valid, const act_err_t *err, bool expected,
        const act_err_t *tree)
{
    if (valid == expected && (valid || !strcmp (err->message, tree->message)))
        return;
    fprintf (stderr, "fuzz_schema: tree %s \"%s\", %s %s \"%s\"\n",
             expected? "valid": "invalid", expected? "": tree->message, reader,
             valid? "valid": "invalid", valid? "": err->message);
    abort ();
}

//  The object of size bytes at text (its '{' first) as a call's
//  parameters, with a "_tool" member in front: checked in place as at
//  submit, and on the call's parameters as a tree (a member whose key
//  starts with '_' is not a parameter); and with its references unknown
static void
s_check_call (act_schema_t *schema, const char *text, size_t size)
{
    char *call_text = malloc (size + 16);
    if (!call_text)
        return;
    memcpy (call_text, "{\"_tool\":\"t\",", 13);
    memcpy (call_text + 13, text + 1, size - 1);
    act_err_t err = { 0 };
    act_call_t *call = act_call_new (NULL, call_text, size + 12, &err);
    free (call_text);
    json_t *params = call? act_call_params (call, NULL, &err): NULL;
    if (params) {
        act_err_t expected = { 0 }, found = { 0 };
        bool valid = act_schema_valid (schema, params, &expected);
        s_same ("call", act_schema_valid_call (schema, call, &found), &found, valid, &expected);
    }
    json_decref (params);
    bool valid;
    size_t resolved;
    const char *diff = call? partial_diff (schema, call, &valid, &resolved): NULL;
    if (diff) {
        fprintf (stderr, "fuzz_schema: act_schema_valid_unresolved: %s\n", diff);
        abort ();
    }
    act_call_destroy (&call);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (!s_scan) {
        s_scan = act_scan_new ();
        atexit (s_exit);
    }
    const char *text = (const char *) data;
    const char *newline = memchr (text, '\n', size);
    if (!newline)
        return 0;
    act_err_t err = { 0 };
    json_t *json = act_json_parse (text, (size_t) (newline - text), &err);
    act_schema_t *schema = json? act_schema_new (json, &err): NULL;
    json_decref (json);
    const char *instance = newline + 1;
    size_t length = size - (size_t) (instance - text);
    json_t *tree = schema? act_json_parse (instance, length, &err): NULL;
    if (tree) {
        if (act_scan (s_scan, instance, length, &err)) {
            fprintf (stderr, "fuzz_schema: act_scan refuses what act_json_parse accepts\n");
            abort ();
        }
        act_err_t expected = { 0 }, found = { 0 };
        bool valid = act_schema_valid (schema, tree, &expected);
        s_same ("text", act_schema_valid_text (schema, instance, length, &found), &found,
                valid, &expected);
        size_t start = 0;
        while (start < length && instance [start] != '{')
            start++;
        if (json_is_object (tree) && json_object_size (tree))
            s_check_call (schema, instance + start, length - start);
    }
    json_decref (tree);
    act_schema_destroy (&schema);
    return 0;
}
