/*  =========================================================================
    test_schema - act_schema against the official JSON-Schema-Test-Suite
    (Debian's json-schema-test-suite, draft 7 files of the keywords whose
    meaning did not change in 2020-12) and against our own cases in the
    suite's format (tests/schema/2020-12/: prefixItems, items, $defs and
    $ref, code points, integers, messages); then compile errors, message
    pointers and equality one by one.

    A suite group whose schema compiles is run, and every case of it must
    agree. Every case runs through both readers of the validator: the tree
    (act_schema_valid) and the text (act_schema_valid_text on the case's
    data written compact and indented, scanned by act_scan; and, for an
    object, act_schema_valid_call on a call made of its members): the
    verdicts and the messages must be the same. A group whose schema does not compile must have been refused
    for a keyword or form act_schema does not implement (the message says
    "not supported"): it is counted "not applicable", per keyword. A test
    case may carry "error": the exact message act_schema_valid must give.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <cmocka.h>
#include <jansson.h>
#include "actd/act.h"
#include "schema_support.h"
#include "json_count.h"

#define S_SUITE_DIR     "/usr/share/json-schema-test-suite/tests/draft7"
#define S_OWN_DIR       ACTD_SOURCE_DIR "/tests/schema/2020-12"

//  The draft 7 files run: every supported keyword's (definitions.json,
//  additionalItems.json and the unsupported keywords' files are left out;
//  array-form items and definitions inside these are refused group by group)
static const char *s_suite_files [] = {
    "additionalProperties", "allOf", "anyOf", "boolean_schema", "const", "default",
    "enum", "exclusiveMaximum", "exclusiveMinimum", "if-then-else", "items",
    "maxItems", "maxLength", "maximum", "minItems", "minLength", "minimum",
    "multipleOf", "not", "oneOf", "pattern", "patternProperties", "properties",
    "ref", "required", "type", "uniqueItems",
    //  Of the optional files, the one about what is implemented (not bignum:
    //  jansson refuses integers beyond 64 bits, and so does the broker; not
    //  ecmascript-regex and format/: they test format, an annotation here)
    "optional/zeroTerminatedFloats"
};

//  What a run of files counted
typedef struct {
    int groups_run;             //  Groups whose schema compiled
    int cases_run;              //  Their cases
    int cases_passed;           //  Cases that agreed with the file
    int groups_skipped;         //  Groups refused for an unsupported keyword
    json_t *reasons;            //  keyword -> number of groups refused for it
} s_counts_t;

//  The keyword an unsupported-keyword message names: the last token of
//  the pointer before ": not supported"
static char *
s_reason (const char *message)
{
    const char *end = strstr (message, ": not supported");
    if (!end)
        return NULL;
    const char *start = end;
    while (start > message && start [-1] != '/')
        start--;
    char *reason = strndup (start, (size_t) (end - start));
    //  Unescape ~1 and ~0 (RFC 6901), in that order
    char *out = reason;
    for (const char *in = reason; *in; in++) {
        if (*in == '~' && (in [1] == '0' || in [1] == '1'))
            *out++ = *++in == '0'? '~': '/';
        else
            *out++ = *in;
    }
    *out = 0;
    return reason;
}

//  The message ("" when valid) of instance, when read as text: written by
//  act_json_dumps with flags, scanned, then validated in place; NULL when
//  the text is one the broker refuses (a \u0000), as act_json_parse does
static char *
s_text_message (act_schema_t *schema, const json_t *instance, size_t flags)
{
    char *text = act_json_dumps (instance, flags | JSON_ENCODE_ANY);
    assert_non_null (text);
    act_scan_t *scan = act_scan_new ();
    act_err_t err = { 0 };
    int scanned = act_scan (scan, text, strlen (text), &err);
    act_scan_destroy (&scan);
    if (scanned) {
        assert_non_null (strstr (err.message, "\\u0000 is not allowed"));
        json_t *parsed = act_json_parse (text, strlen (text), &err);
        assert_null (parsed);
        free (text);
        return NULL;
    }
    bool valid = act_schema_valid_text (schema, text, strlen (text), &err);
    assert_true (valid || (err.code && !strcmp (err.code, ACT_E_BAD_CALL)));
    free (text);
    return strdup (valid? "": err.message);
}

//  The message ("" when valid) of the object instance as a call's
//  parameters (its members after a "_tool"), validated in place; NULL when
//  it cannot be a call's (a member is a meta-property, or a reference)
static char *
s_call_message (act_schema_t *schema, const json_t *instance)
{
    char *members = act_json_dumps (instance, JSON_COMPACT);
    assert_non_null (members);
    size_t size = strlen (members) + 32;
    char *text = malloc (size);
    assert_non_null (text);
    snprintf (text, size, "{\"_tool\": \"t\"%s%s", members [1] == '}'? "": ", ", members + 1);
    free (members);
    char *message = schema_call_message (schema, text);
    free (text);
    return message;
}

//  Cases compared on each reader: compact text, indented text, call
static int s_compared [3];

//  Both readers of the validator give message (empty: valid) for instance
static bool
s_readers_agree (act_schema_t *schema, const json_t *instance, const char *message,
                 const char *where)
{
    char *found [3] = {
        s_text_message (schema, instance, JSON_COMPACT),
        s_text_message (schema, instance, JSON_INDENT (2)),
        json_is_object (instance)? s_call_message (schema, instance): NULL
    };
    bool agree = true;
    for (size_t index = 0; index < 3; index++) {
        s_compared [index] += found [index] != NULL;
        if (found [index] && strcmp (found [index], message)) {
            print_message ("READERS DIFFER %s: tree \"%s\", text %zu \"%s\"\n", where,
                           message, index, found [index]);
            agree = false;
        }
        free (found [index]);
    }
    return agree;
}

//  Run one case through both readers; print it when it disagrees
static void
s_run_case (act_schema_t *schema, const json_t *test, const char *where, s_counts_t *counts)
{
    const json_t *data = json_object_get (test, "data");
    bool expected = json_is_true (json_object_get (test, "valid"));
    const char *error = json_string_value (json_object_get (test, "error"));
    act_err_t err = { 0 };
    bool valid = act_schema_valid (schema, data, &err);
    counts->cases_run++;
    bool agrees = valid == expected;
    if (agrees && !valid) {
        agrees = !strcmp (err.code, ACT_E_BAD_CALL) && (!error || !strcmp (err.message, error));
        assert_true (err.code && *err.message);
    }
    assert_true (s_readers_agree (schema, data, valid? "": err.message, where));
    if (agrees)
        counts->cases_passed++;
    else
        print_message ("DISAGREES %s / %s: expected %s%s%s, got %s (%s)\n", where,
                       json_string_value (json_object_get (test, "description")),
                       expected? "valid": "invalid", error? " with ": "", error? error: "",
                       valid? "valid": "invalid", valid? "": err.message);
}

//  Run the groups of one file. own: every group must compile.
static void
s_run_file (const char *path, bool own, s_counts_t *counts)
{
    json_error_t error;
    json_t *groups = json_load_file (path, JSON_ALLOW_NUL, &error);
    if (!groups)
        print_message ("cannot load %s: %s (line %d)\n", path, error.text, error.line);
    assert_non_null (groups);
    assert_true (json_is_array (groups) && json_array_size (groups) > 0);
    size_t index;
    json_t *group;
    json_array_foreach (groups, index, group) {
        const char *description = json_string_value (json_object_get (group, "description"));
        char where [512];
        snprintf (where, sizeof where, "%s: %s", strrchr (path, '/') + 1, description);
        act_err_t err = { 0 };
        act_schema_t *schema = act_schema_new (json_object_get (group, "schema"), &err);
        if (!schema) {
            char *reason = s_reason (err.message);
            if (!reason || own)
                print_message ("DOES NOT COMPILE %s: %s\n", where, err.message);
            assert_non_null (reason);
            assert_false (own);
            assert_string_equal (err.code, ACT_E_BAD_ARGUMENT);
            json_t *tally = json_object_get (counts->reasons, reason);
            json_object_set_new (counts->reasons, reason,
                                 json_integer (json_integer_value (tally) + 1));
            free (reason);
            counts->groups_skipped++;
            continue;
        }
        counts->groups_run++;
        size_t test_index;
        json_t *test;
        json_array_foreach (json_object_get (group, "tests"), test_index, test)
            s_run_case (schema, test, where, counts);
        act_schema_destroy (&schema);
        assert_null (schema);
    }
    json_decref (groups);
}

static void
s_print_counts (const char *title, s_counts_t *counts)
{
    print_message ("%s: %d groups run, %d cases run, %d passed; %d groups not applicable",
                   title, counts->groups_run, counts->cases_run, counts->cases_passed,
                   counts->groups_skipped);
    const char *key;
    json_t *value;
    const char *separator = " (";
    json_object_foreach (counts->reasons, key, value) {
        print_message ("%s%s: %lld", separator, key, (long long) json_integer_value (value));
        separator = ", ";
    }
    print_message ("%s\n", counts->groups_skipped? ")": "");
}

//  The official suite: every group that compiles agrees on every case
static void
test_official_suite_draft7 (void **state)
{
    s_counts_t counts = { .reasons = json_object () };
    for (size_t index = 0; index < sizeof s_suite_files / sizeof s_suite_files [0]; index++) {
        char path [512];
        snprintf (path, sizeof path, "%s/%s.json", S_SUITE_DIR, s_suite_files [index]);
        s_run_file (path, false, &counts);
    }
    s_print_counts ("draft7 suite", &counts);
    assert_int_equal (counts.cases_passed, counts.cases_run);
    //  Every case was read as text too, and the objects as calls
    print_message ("read as text: %d compact, %d indented, %d as calls\n",
                   s_compared [0], s_compared [1], s_compared [2]);
    assert_int_equal (s_compared [0], counts.cases_run);
    assert_true (s_compared [2] > counts.cases_run / 4);
    //  Most of the suite applies: a refusal of everything would not pass
    assert_true (counts.groups_run > 3 * counts.groups_skipped);
    //  Only what act_schema does not implement makes a group not
    //  applicable: array-form items, definitions, $ref beyond #/$defs, and
    //  a keyword of no vocabulary (the "tilda~field" that ref.json points
    //  into). A supported keyword refused would hide its groups otherwise.
    const char *reason;
    json_t *tally;
    json_object_foreach (counts.reasons, reason, tally) {
        bool unsupported = !strcmp (reason, "items") || !strcmp (reason, "definitions")
                        || !strcmp (reason, "$ref") || !strcmp (reason, "tilda~field");
        if (!unsupported)
            print_message ("a group was refused for %s, which act_schema supports\n", reason);
        assert_true (unsupported);
    }
    json_decref (counts.reasons);
}

//  Our own 2020-12 cases: every file, every group compiles and agrees
static void
test_own_cases_2020_12 (void **state)
{
    s_counts_t counts = { .reasons = json_object () };
    struct dirent **entries;
    int count = scandir (S_OWN_DIR, &entries, NULL, alphasort);
    assert_true (count > 0);
    int files = 0;
    for (int index = 0; index < count; index++) {
        const char *name = entries [index]->d_name;
        size_t length = strlen (name);
        if (length > 5 && !strcmp (name + length - 5, ".json")) {
            char path [512];
            snprintf (path, sizeof path, "%s/%s", S_OWN_DIR, name);
            s_run_file (path, true, &counts);
            files++;
        }
    }
    for (int index = 0; index < count; index++)
        free (entries [index]);
    free (entries);
    s_print_counts ("2020-12 cases", &counts);
    assert_true (files >= 3);
    assert_int_equal (counts.cases_passed, counts.cases_run);
    json_decref (counts.reasons);
}

//  Compile text, expecting a refusal with exactly message
static void
s_assert_refused (const char *text, const char *message)
{
    json_t *json = json_loads (text, JSON_DECODE_ANY, NULL);
    assert_non_null (json);
    act_err_t err = { 0 };
    act_schema_t *schema = act_schema_new (json, &err);
    if (schema || strcmp (err.message, message))
        print_message ("schema %s: expected \"%s\", got \"%s\"\n", text, message,
                       schema? "(compiled)": err.message);
    assert_null (schema);
    assert_string_equal (err.code, ACT_E_BAD_ARGUMENT);
    assert_string_equal (err.message, message);
    json_decref (json);
}

//  Any keyword outside the list is refused and named, never ignored
static void
test_refusals_name_the_place_and_why (void **state)
{
    s_assert_refused ("{\"minProperties\": 1}", "/minProperties: not supported");
    s_assert_refused ("{\"properties\": {\"a/b\": {\"contains\": {}}}}",
                      "/properties/a~1b/contains: not supported");
    s_assert_refused ("{\"items\": [{}]}",
                      "/items: not supported: the array form of items is draft 7's "
                      "(draft 2020-12 uses prefixItems)");
    s_assert_refused ("{\"$defs\": {\"a\": {\"$id\": \"x\"}}}",
                      "/$defs/a/$id: not supported: $id below the root (it changes "
                      "what $ref points to)");
    s_assert_refused ("{\"$ref\": \"other.json#/a\"}",
                      "/$ref: not supported: only references within the schema "
                      "(\"#\" and \"#/...\") are resolved");
    s_assert_refused ("{\"type\": \"strin\"}",
                      "/type: expected a type name (null, boolean, object, array, "
                      "number, string, integer) or an array of them");
    s_assert_refused ("{\"type\": [\"string\", \"string\"]}", "/type: a type is named twice");
    s_assert_refused ("{\"minLength\": -1}", "/minLength: expected a non-negative integer");
    s_assert_refused ("{\"minLength\": 1.5}", "/minLength: expected a non-negative integer");
    //  A negative real below LLONG_MIN (found by fuzz_schema: its
    //  conversion was undefined)
    s_assert_refused ("{\"minLength\": -3555555555555555555555.0}",
                      "/minLength: expected a non-negative integer");
    s_assert_refused ("{\"maxItems\": -1e300}", "/maxItems: expected a non-negative integer");
    s_assert_refused ("{\"multipleOf\": 0}", "/multipleOf: expected a number above 0");
    s_assert_refused ("{\"required\": [\"a\", \"a\"]}", "/required: a name is listed twice");
    s_assert_refused ("{\"allOf\": []}", "/allOf: expected a non-empty array of schemas");
    s_assert_refused ("{\"anyOf\": [{}, 3]}",
                      "/anyOf/1: expected a schema (an object or a boolean)");
    s_assert_refused ("42", "(root): expected a schema (an object or a boolean)");
    s_assert_refused ("{\"pattern\": \"a(b\"}",
                      "/pattern: bad pattern at offset 3: missing closing parenthesis");
    s_assert_refused ("{\"pattern\": \"^a\\\\Z\"}",
                      "/pattern: not supported: \\Z is not an ECMA-262 escape");
    s_assert_refused ("{\"patternProperties\": {\"\\\\Aa\": {}}}",
                      "/patternProperties/\\Aa: not supported: \\A is not an ECMA-262 escape");
    s_assert_refused ("{\"patternProperties\": {\"[\": {}}}",
                      "/patternProperties/[: bad pattern at offset 1: missing terminating ] "
                      "for character class");
    s_assert_refused ("{\"properties\": {\"a\": {\"$ref\": \"#/$defs/b\"}}}",
                      "/properties/a/$ref: \"#/$defs/b\" does not name a subschema of "
                      "this schema");
    s_assert_refused ("{\"$ref\": \"#/$defs/a\", \"$defs\": {\"a\": {\"allOf\": "
                      "[{\"$ref\": \"#\"}]}}}",
                      "(root): $ref: the schema refers to itself without going into the "
                      "value (it would never end)");
    s_assert_refused ("{\"title\": 3}", "/title: expected a string");
    s_assert_refused ("{\"deprecated\": \"yes\"}", "/deprecated: expected a boolean");
    act_err_t err = { 0 };
    assert_null (act_schema_new (NULL, &err));
    assert_string_equal (err.message, "(root): no schema");
}

//  Validate text against schema text; returns the message ("" when valid)
static const char *
s_message (const char *schema_text, const char *text)
{
    static act_err_t err;
    json_t *json = json_loads (schema_text, 0, NULL);
    json_t *instance = json_loads (text, JSON_DECODE_ANY, NULL);
    assert_non_null (json);
    assert_non_null (instance);
    act_schema_t *schema = act_schema_new (json, &err);
    json_decref (json);         //  The schema keeps its own copy
    assert_non_null (schema);
    act_err_clear (&err);
    if (act_schema_valid (schema, instance, &err))
        err.message [0] = 0;
    else
        assert_string_equal (err.code, ACT_E_BAD_CALL);
    assert_true (s_readers_agree (schema, instance, err.message, text));
    act_schema_destroy (&schema);
    act_schema_destroy (&schema);
    json_decref (instance);
    return err.message;
}

//  The cases of test_messages_name_pointer_and_keyword: schema, instance,
//  the message ("": valid)
#define S_TOOL "{\"type\": \"object\", \"required\": [\"city\"], "                \
               "\"properties\": {\"city\": {\"type\": \"string\"}, "                \
               "\"days\": {\"type\": \"array\", \"items\": {\"type\": \"integer\"}}}, " \
               "\"additionalProperties\": false}"
static const char *s_message_cases [][3] = {
    { S_TOOL, "{\"city\": 3}", "/city: type: expected string" },
    { S_TOOL, "{}", "(root): required: missing \"city\"" },
    { S_TOOL, "[]", "(root): type: expected object" },
    { S_TOOL, "{\"city\": \"x\", \"days\": [1, 2.5]}", "/days/1: type: expected integer" },
    { S_TOOL, "{\"city\": \"x\", \"days\": [1, 2.0]}", "" },
    { S_TOOL, "{\"city\": \"x\", \"a~/b\": 1}", "/a~0~1b: additionalProperties: not allowed" },
    { "{\"type\": [\"string\", \"null\"]}", "1", "(root): type: expected null or string" },
    { "{\"anyOf\": [{\"type\": \"string\"}, {\"minimum\": 2}]}", "1",
      "(root): anyOf: matches none of the 2 schemas" },
    { "{\"oneOf\": [{\"minimum\": 0}, {\"maximum\": 2}]}", "1",
      "(root): oneOf: matches schemas 0 and 1, not one" },
    { "{\"maxLength\": 2}", "\"\xc3\xa9\xc3\xa9\xc3\xa9\"",
      "(root): maxLength: expected at most 2 characters, not 3" },
    { "{\"multipleOf\": 0.01}", "19.99", "" },
    { "{\"multipleOf\": 0.01}", "19.991", "(root): multipleOf: expected a multiple of 0.01" },
    { "{\"exclusiveMaximum\": 9007199254740993}", "9007199254740992.0", "" },
    { "{\"maximum\": 9007199254740992}", "9007199254740993",
      "(root): maximum: expected at most 9007199254740992" },
    { "{\"minimum\": -9223372036854775808}", "-9.3e18",
      "(root): minimum: expected at least -9223372036854775808" },
    { "{\"maximum\": 9223372036854775807}", "9.3e18",
      "(root): maximum: expected at most 9223372036854775807" },
    { "{\"pattern\": \"^[a-z]+$\"}", "\"abc\\n\"", "(root): pattern: does not match ^[a-z]+$" },
    { "{\"pattern\": \"\\\\u00e9\"}", "\"caf\xc3\xa9\"", "" },
    { "{\"pattern\": \"^(a+)+$\"}", "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\"",
      "(root): pattern: the pattern could not be matched: match limit exceeded" },
    { "{\"uniqueItems\": true}", "[1, {\"a\": 1}, {\"a\": 1.0}]",
      "(root): uniqueItems: items 1 and 2 are equal" },
    //  A limit hit gives the whole validation up: anyOf and not took
    //  it as a branch's answer and went on, each hit some 15 ms, for
    //  every string and branch of a call
    { "{\"anyOf\": [{\"pattern\": \"^(a+)+$\"}, {\"type\": \"string\"}]}",
      "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\"",
      "(root): pattern: the pattern could not be matched: match limit exceeded" },
    { "{\"items\": {\"not\": {\"pattern\": \"^(a+)+$\"}}}",
      "[\"ab\", \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\", \"c\"]",
      "/1: pattern: the pattern could not be matched: match limit exceeded" },
};

//  PROTOCOL 2.1: the message names the JSON Pointer of the first offending
//  value and the keyword
static void
test_messages_name_pointer_and_keyword (void **state)
{
    for (size_t index = 0; index < sizeof s_message_cases / sizeof s_message_cases [0]; index++)
        assert_string_equal (s_message (s_message_cases [index][0], s_message_cases [index][1]),
                             s_message_cases [index][2]);
    //  Arrays longer than the 64 items the text reader keeps: items, maxItems
    //  and uniqueItems read past them
    char long_array [512] = "[";
    for (int index = 0; index < 70; index++)
        snprintf (long_array + strlen (long_array), sizeof long_array - strlen (long_array),
                  "%s%d", index? ", ": "", index == 66? -1: index == 68? 65: index);
    strcat (long_array, "]");
    assert_string_equal (s_message ("{\"items\": {\"minimum\": 0}}", long_array),
                         "/66: minimum: expected at least 0");
    assert_string_equal (s_message ("{\"maxItems\": 69}", long_array),
                         "(root): maxItems: expected at most 69 items, not 70");
    assert_string_equal (s_message ("{\"uniqueItems\": true}", long_array),
                         "(root): uniqueItems: items 65 and 68 are equal");
    assert_string_equal (s_message ("{\"prefixItems\": [{}, {\"maximum\": 0}]}", long_array),
                         "/1: maximum: expected at most 0");
    //  A value nested deeper than the validator follows is refused, not crashed on
    json_t *deep = json_integer (1);
    for (int level = 0; level < 300; level++) {
        json_t *outer = json_array ();
        json_array_append_new (outer, deep);
        deep = outer;
    }
    json_t *json = json_loads ("{\"$defs\": {\"a\": {\"items\": {\"$ref\": \"#/$defs/a\"}}}, "
                               "\"$ref\": \"#/$defs/a\"}", 0, NULL);
    act_err_t err = { 0 };
    act_schema_t *schema = act_schema_new (json, &err);
    assert_non_null (schema);
    assert_false (act_schema_valid (schema, deep, &err));
    assert_non_null (strstr (err.message, "nested deeper than 256 levels"));
    assert_false (act_schema_valid (schema, NULL, &err));
    assert_false (act_schema_valid (NULL, deep, &err));
    act_schema_destroy (&schema);
    json_decref (json);
    json_decref (deep);
}

//  Equality as JSON Schema means it (enum, const, uniqueItems)
static void
test_equality_by_value (void **state)
{
    static const char *equal [][2] = {
        { "1", "1.0" }, { "0", "-0.0" }, { "{\"a\": 1, \"b\": [2]}", "{\"b\": [2.0], \"a\": 1}" },
        { "\"a\\u0000b\"", "\"a\\u0000b\"" }, { "null", "null" }, { "[]", "[]" }
    };
    static const char *different [][2] = {
        { "1", "true" }, { "0", "false" }, { "\"1\"", "1" }, { "[1]", "[1, 1]" },
        { "{\"a\": 1}", "{\"a\": 1, \"b\": 1}" }, { "9007199254740993", "9007199254740992.0" },
        { "\"a\\u0000b\"", "\"a\\u0000c\"" }, { "1.5", "1" }, { "{}", "[]" }
    };
    for (size_t index = 0; index < sizeof equal / sizeof equal [0]; index++) {
        json_t *a = json_loads (equal [index][0], JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        json_t *b = json_loads (equal [index][1], JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        assert_true (act_schema_equal (a, b) && act_schema_equal (b, a));
        json_decref (a);
        json_decref (b);
    }
    for (size_t index = 0; index < sizeof different / sizeof different [0]; index++) {
        json_t *a = json_loads (different [index][0], JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        json_t *b = json_loads (different [index][1], JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        assert_false (act_schema_equal (a, b) || act_schema_equal (b, a));
        json_decref (a);
        json_decref (b);
    }
}

//  The cases of test_calls_read_in_place: call texts (after the "_tool"
//  member) checked against S_CALL_SCHEMA, and the message ("" when valid)
#define S_CALL_SCHEMA                                                           \
    "{\"type\": \"object\", \"required\": [\"i\", \"kind\"], "                  \
    "\"properties\": {\"i\": {\"type\": \"integer\", \"minimum\": 0}, "         \
    "\"n\": {\"type\": \"number\", \"exclusiveMaximum\": 2.5}, "                \
    "\"kind\": {\"enum\": [\"alpha\", \"beta\", [1, {\"a\": 2}]]}, "            \
    "\"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, "       \
    "\"maxItems\": 2, \"uniqueItems\": true}, "                                 \
    "\"lang\": {\"type\": \"string\", \"pattern\": \"^[a-z]{2}$\", \"minLength\": 2}, " \
    "\"opts\": {\"type\": \"object\", \"properties\": {\"deep\": {\"const\": false}}, " \
    "\"additionalProperties\": false}, \"a/~b\": {\"type\": \"null\"}, "        \
    "\"m\": {\"multipleOf\": 0.5}}, "                                           \
    "\"patternProperties\": {\"^x-\": {\"type\": \"string\", \"maxLength\": 3}}, " \
    "\"additionalProperties\": false}"
static const char *s_call_cases [][2] = {
    { "\"i\": 1, \"kind\": \"alpha\"", "" },
    { "\"i\" :\t1 ,\n \"kind\" : \"beta\" ", "" },
    { "\"\\u0069\": 1, \"k\\u0069nd\": \"alpha\"", "" },
    { "\"i\": 1, \"kind\": \"al\\u0070ha\"", "" },
    { "\"i\": 1, \"kind\": [1, {\"a\": 2.0}]", "" },
    { "\"i\": 1, \"kind\": [1, {\"a\": 3}]", "/kind: enum: not one of the 3 values allowed" },
    { "\"kind\": \"alpha\"", "(root): required: missing \"i\"" },
    { "\"i\": 1", "(root): required: missing \"kind\"" },
    { "\"i\": -1, \"kind\": \"alpha\"", "/i: minimum: expected at least 0" },
    { "\"i\": 1.0, \"kind\": \"alpha\"", "" },
    { "\"i\": 1.5, \"kind\": \"alpha\"", "/i: type: expected integer" },
    { "\"i\": 1e2, \"kind\": \"alpha\"", "" },
    { "\"i\": 99999999999999999999, \"kind\": \"alpha\"", "" },
    { "\"i\": -99999999999999999999, \"kind\": \"alpha\"", "/i: minimum: expected at least 0" },
    { "\"i\": -9223372036854775808, \"kind\": \"alpha\"", "/i: minimum: expected at least 0" },
    { "\"i\": 1, \"kind\": \"alpha\", \"n\": 2.5", "/n: exclusiveMaximum: expected less than 2.5" },
    { "\"i\": 1, \"kind\": \"alpha\", \"n\": \"2\"", "/n: type: expected number" },
    { "\"i\": 1, \"kind\": \"gamma\"", "/kind: enum: not one of the 3 values allowed" },
    { "\"i\": 1, \"kind\": \"alpha\", \"tags\": [\"x\", \"y\", \"z\"]",
      "/tags: maxItems: expected at most 2 items, not 3" },
    { "\"i\": 1, \"kind\": \"alpha\", \"tags\": [\"x\", 2]", "/tags/1: type: expected string" },
    { "\"i\": 1, \"kind\": \"alpha\", \"tags\": [\"x\", \"\\u0078\"]",
      "/tags: uniqueItems: items 0 and 1 are equal" },
    { "\"i\": 1, \"kind\": \"alpha\", \"tags\": [ ]", "" },
    { "\"i\": 1, \"kind\": \"alpha\", \"lang\": \"EN\"", "/lang: pattern: does not match ^[a-z]{2}$" },
    { "\"i\": 1, \"kind\": \"alpha\", \"lang\": \"e\"",
      "/lang: minLength: expected at least 2 characters, not 1" },
    { "\"i\": 1, \"kind\": \"alpha\", \"lang\": \"\\u0065n\"", "" },
    { "\"i\": 1, \"kind\": \"alpha\", \"opts\": {\"deep\": true}", "/opts/deep: const: not the value required" },
    { "\"i\": 1, \"kind\": \"alpha\", \"opts\": {\"deep\": false, \"x\": {}}",
      "/opts/x: additionalProperties: not allowed" },
    { "\"i\": 1, \"kind\": \"alpha\", \"a/~b\": 0", "/a~1~0b: type: expected null" },
    { "\"i\": 1, \"kind\": \"alpha\", \"a\\/~b\": null", "" },
    { "\"i\": 1, \"kind\": \"alpha\", \"m\": 1.5", "" },
    { "\"i\": 1, \"kind\": \"alpha\", \"m\": 1.25", "/m: multipleOf: expected a multiple of 0.5" },
    { "\"i\": 1, \"kind\": \"alpha\", \"x-a\": \"abcd\"",
      "/x-a: maxLength: expected at most 3 characters, not 4" },
    { "\"i\": 1, \"kind\": \"alpha\", \"x-\\u00e9\": \"\\u00e9\\u00e9\\u00e9\"", "" },
    { "\"i\": 1, \"kind\": \"alpha\", \"y\": 1", "/y: additionalProperties: not allowed" },
    { ("\"i\": 1, \"kind\": \"alpha\", \"lang\": \"\xe2\x80\xa0\xe2\x80\xa0" "xy\""),
      "/lang: pattern: does not match ^[a-z]{2}$" },
    { ("\"i\": 1, \"kind\": \"alpha\", \"x-\\u0041\": \"\xe2\x80\xa0\xe2\x80\xa0" "abcd\""),
      "/x-A: maxLength: expected at most 3 characters, not 5" },
};

//  A call's params checked in place (act_schema_valid_call, as at submit)
//  give the message of the tree path (act_call_params, act_schema_valid)
static void
test_calls_read_in_place (void **state)
{
    json_t *json = json_loads (S_CALL_SCHEMA, 0, NULL);
    assert_non_null (json);
    act_err_t err = { 0 };
    act_schema_t *schema = act_schema_new (json, &err);
    assert_non_null (schema);
    json_decref (json);
    for (size_t index = 0; index < sizeof s_call_cases / sizeof s_call_cases [0]; index++) {
        const char *want = s_call_cases [index][1];
        char text [1024];
        snprintf (text, sizeof text, "{\"_tool\": \"t\", \"_id\": \"x\", %s}",
                  s_call_cases [index][0]);
        act_call_t *call = act_call_new (NULL, text, strlen (text), &err);
        if (!call)
            print_message ("%s: %s\n", text, err.message);
        assert_non_null (call);
        json_t *params = act_call_params (call, NULL, &err);
        assert_non_null (params);
        act_err_t tree = { 0 }, in_place = { 0 };
        bool tree_valid = act_schema_valid (schema, params, &tree);
        bool valid = act_schema_valid_call (schema, call, &in_place);
        if (strcmp (tree.message, want) || strcmp (in_place.message, want))
            print_message ("%s: tree \"%s\", in place \"%s\"\n", text, tree.message,
                           in_place.message);
        assert_true (tree_valid == !*want && valid == tree_valid);
        assert_string_equal (tree.message, want);
        assert_string_equal (in_place.message, want);
        json_decref (params);
        act_call_destroy (&call);
    }
    //  A string longer than the decoding buffer, with an escape, and a key too
    char *text = malloc (4096);
    assert_non_null (text);
    int used = snprintf (text, 4096, "{\"_tool\": \"t\", \"i\": 1, \"kind\": \"alpha\", \"x-");
    for (int index = 0; index < 300; index++)
        used += snprintf (text + used, 4096 - (size_t) used, "\\u00e9");
    used += snprintf (text + used, 4096 - (size_t) used, "\": \"\\u0041");
    for (int index = 0; index < 300; index++)
        used += snprintf (text + used, 4096 - (size_t) used, "\\n");
    snprintf (text + used, 4096 - (size_t) used, "\"}");
    act_call_t *call = act_call_new (NULL, text, strlen (text), &err);
    assert_non_null (call);
    act_err_t in_place = { 0 };
    assert_false (act_schema_valid_call (schema, call, &in_place));
    assert_non_null (strstr (in_place.message, ": maxLength: expected at most 3 characters, not 301"));
    act_call_destroy (&call);
    free (text);
    act_schema_destroy (&schema);
}

//  An enum against an object of a call's text builds the object's tree
//  once, not once for each of its values (an audit: 1,000 {} against an
//  object of 10,000 members, 5 s of actd's loop). Counted in jansson's
//  allocations, not timed
static void
test_enum_builds_the_instance_once (void **state)
{
    act_err_t err = { 0 };
    json_t *values = json_array ();
    for (int index = 0; index < 200; index++)
        json_array_append_new (values, json_object ());
    json_array_append_new (values, json_pack ("{s:i}", "k0", 0));
    json_t *json = json_pack ("{s:s, s:{s:{s:o}}}", "type", "object", "properties",
                              "x", "enum", values);
    act_schema_t *schema = act_schema_new (json, &err);
    assert_non_null (schema);
    char text [4096] = "{\"_tool\": \"t\", \"x\": {\"k0\": 0";
    for (int index = 1; index < 100; index++)
        snprintf (text + strlen (text), sizeof text - strlen (text), ", \"k%d\": %d",
                  index, index);
    strcat (text, "}}");
    unit_json_count_start ();
    char *message = schema_call_message (schema, text);
    size_t allocations = unit_json_count_stop ();
    assert_non_null (message);
    assert_non_null (strstr (message, "enum"));
    free (message);
    //  A tree of 100 members is some 200 allocations; 201 of them, 40,000
    assert_in_range (allocations, 1, 2000);
    //  And an equal one is still found
    text [strlen (text) - 1] = '\0';
    strcpy (strstr (text, "\"x\": ") + 5, "{\"k0\": 0.0}}");
    message = schema_call_message (schema, text);
    assert_string_equal (message, "");
    free (message);
    act_schema_destroy (&schema);
    json_decref (json);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_official_suite_draft7),
        cmocka_unit_test (test_own_cases_2020_12),
        cmocka_unit_test (test_refusals_name_the_place_and_why),
        cmocka_unit_test (test_messages_name_pointer_and_keyword),
        cmocka_unit_test (test_equality_by_value),
        cmocka_unit_test (test_calls_read_in_place),
        cmocka_unit_test (test_enum_builds_the_instance_once),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
