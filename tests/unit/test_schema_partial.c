/*  =========================================================================
    test_schema_partial - a call's parameters checked at submit while their
    references are unknown (act_schema_valid_unresolved, PROTOCOL.md
    section 2.1: "the broker checks every CALL and PLAN ... when it is
    submitted"). A call is refused only when it is invalid whatever its
    references resolve to, naming the JSON Pointer and the keyword as at
    any refusal.

    A table of (schema, call, verdict) takes each keyword's rule in turn;
    every case is also judged by partial_diff (tests/fuzz/partial_diff.c,
    fuzz_schema's check): a refusal must hold for every resolution tried,
    and a call without references gets act_schema_valid_call's verdict.
    Then random small schemas and calls, judged the same way.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <czmq.h>
#include "actd/act.h"
#include "partial_diff.h"
#include "unit_support.h"

//  A reference (\xe2\x80\xa0 is the dagger) and a "††" literal
#define REF(path)       "\"\xe2\x80\xa0" path "\""
#define LIT(text)       "\"\xe2\x80\xa0\xe2\x80\xa0" text "\""

//  One case: a schema, a call's parameters (the call is {"_tool": "t",
//  ...}) and the message expected ("" when it passes)
typedef struct {
    const char *schema;         //  JSON text
    const char *params;         //  The call's members after _tool, JSON text
    const char *message;        //  act_schema_valid_unresolved's; "": valid
} s_case_t;

static act_schema_t *
s_schema (const char *text)
{
    act_err_t err = { 0 };
    json_t *json = act_json_parse (text, strlen (text), &err);
    if (!json)
        fail_msg ("bad schema text %s: %s", text, err.message);
    act_schema_t *schema = act_schema_new (json, &err);
    json_decref (json);
    if (!schema)
        fail_msg ("schema %s refused: %s", text, err.message);
    return schema;
}

static act_call_t *
s_call (const char *params)
{
    char *text = zsys_sprintf ("{\"_tool\": \"t\"%s%s}", *params? ", ": "", params);
    act_err_t err = { 0 };
    act_call_t *call = act_call_new (NULL, text, strlen (text), &err);
    if (!call)
        fail_msg ("call %s refused: %s", text, err.message);
    zstr_free (&text);
    return call;
}

//  A table of cases: one test
typedef struct {
    const s_case_t *cases;      //  Its cases
    size_t count;               //  How many
} s_table_t;

#define S_TABLE(cases)  { cases, sizeof cases / sizeof cases [0] }

//  Each case's message, and partial_diff's judgement of it
static void
s_assert_cases (const s_table_t *table)
{
    const s_case_t *cases = table->cases;
    for (size_t index = 0; index < table->count; index++) {
        act_schema_t *schema = s_schema (cases [index].schema);
        act_call_t *call = s_call (cases [index].params);
        act_err_t err = { 0 };
        bool valid = act_schema_valid_unresolved (schema, call, &err);
        const char *message = valid? "": err.message;
        if (strcmp (message, cases [index].message))
            fail_msg ("case %zu: %s against %s: \"%s\", expected \"%s\"", index,
                      cases [index].params, cases [index].schema, message,
                      cases [index].message);
        size_t resolved;
        const char *diff = partial_diff (schema, call, &valid, &resolved);
        if (diff)
            fail_msg ("case %zu: %s", index, diff);
        act_call_destroy (&call);
        act_schema_destroy (&schema);
    }
}

#define S_CITY  "{\"properties\": {\"city\": {\"type\": \"string\"}}}"
#define S_WEATHER "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}," \
                  " \"days\": {\"type\": \"integer\", \"minimum\": 1}}," \
                  " \"required\": [\"city\"], \"additionalProperties\": false}"

//  A reference passes whatever is asked of it but false; a value beside it
//  is judged as usual, and so is what a container holds
static const s_case_t s_references_and_values [] = {
    //  The audit's case: city 5 beside an unrelated reference
    { S_CITY, "\"city\": 5, \"note\": " REF ("in.n"), "/city: type: expected string" },
    { S_CITY, "\"city\": 5", "/city: type: expected string" },
    { S_CITY, "\"city\": " REF ("in.n"), "" },
    { "{\"properties\": {\"city\": {\"type\": \"integer\"}}}",
      "\"city\": " REF ("in.n"), "" },
    //  String and number checks, its own enum and const, nested schemas
    { "{\"properties\": {\"n\": {\"type\": \"integer\", \"minimum\": 10, \"multipleOf\": 3,"
      " \"enum\": [12, 15], \"const\": 12, \"allOf\": [{\"maximum\": 20}]}}}",
      "\"n\": " REF ("in.n"), "" },
    { "{\"properties\": {\"s\": {\"minLength\": 3, \"pattern\": \"^a\","
      " \"anyOf\": [{\"type\": \"string\"}, {\"const\": 1}]}}}", "\"s\": " REF ("in.s"), "" },
    //  false refuses any value, a reference too, wherever it applies
    { "{\"properties\": {\"a\": {\"allOf\": [{\"type\": \"string\"}, false]}}}",
      "\"a\": " REF ("in.a"), "/a: false: no value is allowed here" },
    { "{\"properties\": {\"a\": {\"anyOf\": [{\"type\": \"string\"}, false]}}}",
      "\"a\": " REF ("in.a"), "" },
    { "{\"properties\": {\"a\": {\"items\": false}}}", "\"a\": [" REF ("in.a") "]",
      "/a/0: items: not allowed" },
    //  Written with an escaped dagger: a reference all the same
    { S_CITY, "\"city\": \"\\u2020in.n\"", "" },
    //  A "††" literal is a string: its value without the first dagger
    { "{\"properties\": {\"n\": {\"type\": \"integer\"}}}",
      "\"n\": " LIT ("in.n") ", \"r\": " REF ("in.r"), "/n: type: expected integer" },
    { "{\"properties\": {\"s\": {\"pattern\": \"^\xe2\x80\xa0x$\", \"maxLength\": 2},"
      " \"t\": {\"const\": \"\xe2\x80\xa0y\"}}}",
      "\"s\": " LIT ("x") ", \"t\": \"\\u2020\\u2020y\", \"r\": " REF ("in.r"), "" },
    { "{\"properties\": {\"s\": {\"pattern\": \"^\xe2\x80\xa0x$\"}}}",
      "\"s\": " LIT ("y") ", \"r\": " REF ("in.r"),
      "/s: pattern: does not match ^\xe2\x80\xa0x$" },
    { "{\"properties\": {\"a\": {\"const\": [\"\xe2\x80\xa0x\", 1]}}}",
      "\"a\": [" LIT ("x") ", 1], \"r\": " REF ("in.r"), "" },
    { "{\"properties\": {\"a\": {\"const\": [\"\xe2\x80\xa0x\", 1]}}}",
      "\"a\": [" LIT ("y") ", 1], \"r\": " REF ("in.r"), "/a: const: not the value required" },
    //  Deep inside: the item holding the reference still misses "c"
    { "{\"properties\": {\"a\": {\"items\": {\"properties\": {\"b\": {\"type\": \"string\"}},"
      " \"required\": [\"b\", \"c\"]}}}}", "\"a\": [{\"b\": " REF ("in.b") "}]",
      "/a/0: required: missing \"c\"" },
    { "{\"properties\": {\"a\": {\"items\": {\"properties\": {\"b\": {\"type\": \"string\"}},"
      " \"required\": [\"b\", \"c\"]}}}}", "\"a\": [{\"b\": " REF ("in.b") ", \"c\": 1}]", "" },
    //  The type of a container holding a reference is known
    { "{\"properties\": {\"a\": {\"type\": \"string\"}}}", "\"a\": [" REF ("in.a") "]",
      "/a: type: expected string" },
};

//  What looks at the shape, not the values: a member is there whatever its
//  value, so required, additionalProperties, properties' and
//  patternProperties' keys, minItems and maxItems judge as usual
static const s_case_t s_shape_keywords [] = {
    { S_WEATHER, "\"days\": " REF ("in.n"), "(root): required: missing \"city\"" },
    { S_WEATHER, "\"city\": " REF ("in.c") ", \"extra\": " REF ("in.n"),
      "/extra: additionalProperties: not allowed" },
    { S_WEATHER, "\"city\": \"Oslo\", \"extra\": {\"x\": " REF ("in.n") "}",
      "/extra: additionalProperties: not allowed" },
    { S_WEATHER, "\"city\": " REF ("in.c") ", \"days\": " REF ("in.d"), "" },
    { S_WEATHER, "\"city\": " REF ("in.c") ", \"days\": 0",
      "/days: minimum: expected at least 1" },
    { "{\"properties\": {\"x\": false}}", "\"x\": " REF ("in.x"),
      "/x: properties: not allowed" },
    { "{\"patternProperties\": {\"^x\": {\"type\": \"integer\"}},"
      " \"additionalProperties\": false}", "\"x1\": " REF ("in.x") ", \"x2\": 3", "" },
    { "{\"patternProperties\": {\"^x\": {\"type\": \"integer\"}},"
      " \"additionalProperties\": false}", "\"x1\": " REF ("in.x") ", \"y\": " REF ("in.y"),
      "/y: additionalProperties: not allowed" },
    { "{\"patternProperties\": {\"^x\": false}}", "\"x1\": " REF ("in.x"),
      "/x1: patternProperties: not allowed" },
    { "{\"properties\": {\"a\": {\"maxItems\": 1}}}",
      "\"a\": [" REF ("in.a") ", " REF ("in.b") "]",
      "/a: maxItems: expected at most 1 items, not 2" },
    { "{\"properties\": {\"a\": {\"minItems\": 3}}}", "\"a\": [" REF ("in.a") "]",
      "/a: minItems: expected at least 3 items, not 1" },
    { "{\"properties\": {\"a\": {\"prefixItems\": [{\"type\": \"integer\"}], \"items\": false}}}",
      "\"a\": [" REF ("in.a") ", " REF ("in.b") "]", "/a/1: items: not allowed" },
    { "{\"properties\": {\"a\": {\"prefixItems\": [{\"type\": \"integer\"}, "
      "{\"type\": \"string\"}]}}}", "\"a\": [" REF ("in.a") ", 2]",
      "/a/1: type: expected string" },
};

//  allOf, anyOf and $ref are sound as they are: each schema's verdict is
static const s_case_t s_sound_applicators [] = {
    { "{\"allOf\": [{\"required\": [\"a\"]}, {\"properties\": {\"b\": {\"type\": \"string\"}}}]}",
      "\"a\": " REF ("in.a") ", \"b\": 1", "/b: type: expected string" },
    { "{\"anyOf\": [{\"required\": [\"q\"]}, {\"properties\": {\"a\": {\"type\": \"integer\"}}}]}",
      "\"a\": " REF ("in.a"), "" },
    { "{\"anyOf\": [{\"required\": [\"q\"]}, {\"required\": [\"p\"]}]}",
      "\"a\": " REF ("in.a"), "(root): anyOf: matches none of the 2 schemas" },
    { "{\"$defs\": {\"s\": {\"type\": \"string\"}}, \"properties\": {\"a\": "
      "{\"$ref\": \"#/$defs/s\"}, \"b\": {\"$ref\": \"#/$defs/s\"}}}",
      "\"a\": " REF ("in.a") ", \"b\": 5", "/b: type: expected string" },
    { "{\"$defs\": {\"s\": {\"type\": \"string\"}}, \"properties\": {\"a\": "
      "{\"$ref\": \"#/$defs/s\"}, \"b\": {\"$ref\": \"#/$defs/s\"}}}",
      "\"a\": " REF ("in.a") ", \"b\": \"x\"", "" },
    //  A recursive schema down a tree holding references
    { "{\"properties\": {\"n\": {\"type\": \"integer\"}, \"next\": {\"$ref\": \"#\"}}}",
      "\"next\": {\"n\": " REF ("in.n") ", \"next\": {\"n\": \"x\"}}",
      "/next/next/n: type: expected integer" },
};

//  not, oneOf, if, enum, const and uniqueItems see a value whole: they do
//  not refuse one holding a reference, and judge as usual one that holds
//  none, even beside a reference
static const s_case_t s_whole_value_keywords [] = {
    { "{\"properties\": {\"a\": {\"not\": {\"type\": \"array\"}}}}",
      "\"a\": [" REF ("in.a") "]", "" },
    { "{\"not\": {\"required\": [\"b\"]}}", "\"a\": " REF ("in.a") ", \"b\": 1", "" },
    { "{\"properties\": {\"b\": {\"not\": {\"type\": \"integer\"}}}}",
      "\"a\": " REF ("in.a") ", \"b\": 5",
      "/b: not: matches the schema it must not match" },
    //  oneOf: passes when one branch may; refused when none may
    { "{\"properties\": {\"a\": {\"oneOf\": [{\"type\": \"array\"}, {\"maxItems\": 3}]}}}",
      "\"a\": [" REF ("in.a") "]", "" },
    { "{\"properties\": {\"a\": {\"oneOf\": [{\"type\": \"string\"}, {\"type\": \"integer\"}]}}}",
      "\"a\": [" REF ("in.a") "]", "/a: oneOf: matches none of the 2 schemas" },
    { "{\"properties\": {\"a\": {\"oneOf\": [{\"type\": \"array\"}, {\"maxItems\": 3}]}}}",
      "\"a\": [1], \"b\": " REF ("in.b"), "/a: oneOf: matches schemas 0 and 1, not one" },
    //  if: when it may match, then or else will do; when it cannot, else
    { "{\"if\": {\"properties\": {\"k\": {\"const\": \"x\"}}}, \"then\": {\"required\": [\"x\"]},"
      " \"else\": {\"required\": [\"y\"]}}", "\"k\": " REF ("in.k") ", \"x\": 1", "" },
    { "{\"if\": {\"properties\": {\"k\": {\"const\": \"x\"}}}, \"then\": {\"required\": [\"x\"]},"
      " \"else\": {\"required\": [\"y\"]}}", "\"k\": " REF ("in.k") ", \"y\": 1", "" },
    { "{\"if\": {\"properties\": {\"k\": {\"const\": \"x\"}}}, \"then\": {\"required\": [\"x\"]},"
      " \"else\": {\"required\": [\"y\"]}}", "\"k\": " REF ("in.k"),
      "(root): if: matches neither then nor else, whatever the references in it "
      "resolve to" },
    { "{\"if\": {\"properties\": {\"k\": {\"const\": \"x\"}}}, \"then\": {\"required\": [\"x\"]}}",
      "\"k\": " REF ("in.k"), "" },
    { "{\"if\": {\"properties\": {\"k\": {\"const\": \"x\"}}}, \"then\": {\"required\": [\"x\"]},"
      " \"else\": {\"required\": [\"y\"]}}", "\"k\": 5, \"z\": " REF ("in.z"),
      "(root): required: missing \"y\"" },
    //  enum, const, uniqueItems
    { "{\"properties\": {\"a\": {\"enum\": [[1, 2], 3]}}}",
      "\"a\": [1, " REF ("in.a") "]", "" },
    { "{\"properties\": {\"a\": {\"enum\": [[1, 2], 3]}}}",
      "\"a\": [1, 4], \"b\": " REF ("in.b"), "/a: enum: not one of the 2 values allowed" },
    { "{\"properties\": {\"a\": {\"const\": {\"k\": 1}}}}",
      "\"a\": {\"k\": " REF ("in.k") "}", "" },
    { "{\"const\": {\"a\": 1}}", "\"a\": " REF ("in.a"), "" },
    { "{\"properties\": {\"a\": {\"uniqueItems\": true}}}",
      "\"a\": [1, 1, " REF ("in.a") "]", "" },
    { "{\"properties\": {\"a\": {\"uniqueItems\": true}}}",
      "\"a\": [1, 1], \"b\": " REF ("in.b"), "/a: uniqueItems: items 0 and 1 are equal" },
    { "{\"properties\": {\"a\": {\"uniqueItems\": true}}}",
      "\"a\": [" LIT ("x") ", \"\\u2020\\u2020x\"], \"b\": " REF ("in.b"),
      "/a: uniqueItems: items 0 and 1 are equal" },
};

//  Without references: act_schema_valid_call's verdict and message; no
//  schema or no call: refused; many members (the list allocated)
static void
test_without_references_and_edges (void **state)
{
    static const s_case_t cases [] = {
        { S_WEATHER, "\"city\": 5", "/city: type: expected string" },
        { S_WEATHER, "\"city\": " LIT ("x") ", \"days\": 2", "" },
        { S_WEATHER, "", "(root): required: missing \"city\"" },
    };
    s_assert_cases (&(s_table_t) S_TABLE (cases));
    act_schema_t *schema = s_schema (S_WEATHER);
    act_call_t *call = s_call ("\"city\": " REF ("in.c"));
    act_err_t err = { 0 };
    assert_false (act_schema_valid_unresolved (NULL, call, &err));
    assert_string_equal (err.message, "(root): no schema to validate");
    assert_false (act_schema_valid_unresolved (schema, NULL, &err));
    assert_string_equal (err.message, "(root): no value to validate");
    act_call_destroy (&call);
    act_schema_destroy (&schema);
    //  40 members, each with a reference and a literal: the last is wrong
    char params [8000] = "";
    for (int index = 0; index < 40; index++)
        sprintf (params + strlen (params), "%s\"m%d\": [" REF ("in.v") ", " LIT ("l") "%s]",
                 index? ", ": "", index, index == 39? ", 3": "");
    schema = s_schema ("{\"additionalProperties\": {\"type\": \"array\", \"items\": "
                       "{\"type\": \"string\"}}}");
    call = s_call (params);
    assert_int_equal (call->nspans, 120);
    assert_false (act_schema_valid_unresolved (schema, call, &err));
    assert_string_equal (err.message, "/m39/2: type: expected string");
    act_call_destroy (&call);
    act_schema_destroy (&schema);
}


//  --------------------------------------------------------------------------
//  Random schemas and calls

//  Names of members, in schemas and calls alike
static const char *s_names [] = { "a", "b", "c", "x1" };

static json_t *s_random_value (uint64_t *rng, int depth, bool references);

//  A scalar: some of the values references are resolved to, and others
static json_t *
s_random_scalar (uint64_t *rng)
{
    switch (unit_below (rng, 9)) {
        case 0:  return json_integer (0);
        case 1:  return json_integer ((json_int_t) unit_below (rng, 4));
        case 2:  return json_real (1.5);
        case 3:  return json_string ("x");
        case 4:  return json_string ("");
        case 5:  return json_string ("\xe2\x80\xa0\xe2\x80\xa0x");  //  A literal: "†x"
        case 6:  return json_true ();
        case 7:  return json_false ();
        default: return json_null ();
    }
}

//  A value of at most depth levels of containers, references among its
//  strings when asked
static json_t *
s_random_value (uint64_t *rng, int depth, bool references)
{
    uint64_t pick = unit_below (rng, 10);
    if (references && pick < 3)
        return json_string (pick? "\xe2\x80\xa0r.v": "\xe2\x80\xa0r.w || \xe2\x80\xa0s");
    if (depth == 0 || pick < 6)
        return s_random_scalar (rng);
    json_t *value = pick < 8? json_array (): json_object ();
    size_t size = unit_below (rng, 4);
    for (size_t index = 0; index < size; index++)
        if (json_is_array (value))
            json_array_append_new (value, s_random_value (rng, depth - 1, references));
        else
            json_object_set_new (value, s_names [unit_below (rng, 4)],
                                 s_random_value (rng, depth - 1, references));
    return value;
}

//  A schema of one keyword that judges a value (no subschema)
static json_t *
s_random_leaf (uint64_t *rng)
{
    static const char *types [] = { "string", "integer", "number", "object", "array",
                                    "boolean", "null" };
    switch (unit_below (rng, 14)) {
        case 0:  return json_true ();
        case 1:  return json_false ();
        case 2:  return json_pack ("{ss}", "type", types [unit_below (rng, 7)]);
        case 3:  return json_pack ("{si}", "minimum", 1);
        case 4:  return json_pack ("{si}", "minLength", 1);
        case 5:  return json_pack ("{ss}", "pattern", "^x");
        case 6:  return json_pack ("{s[oo]}", "enum", s_random_value (rng, 1, false),
                                   s_random_value (rng, 1, false));
        case 7:  return json_pack ("{so}", "const", s_random_value (rng, 1, false));
        case 8:  return json_pack ("{si}", "multipleOf", 2);
        case 9:  return json_pack ("{si}", "maxItems", 1);
        case 10: return json_pack ("{si}", "minItems", 2);
        case 11: return json_pack ("{sb}", "uniqueItems", true);
        case 12: return json_pack ("{s[s]}", "required", s_names [unit_below (rng, 4)]);
        default: return json_object ();
    }
}

//  A schema of at most depth levels of subschemas
static json_t *
s_random_schema (uint64_t *rng, int depth)
{
    if (depth == 0 || unit_below (rng, 3) == 0)
        return s_random_leaf (rng);
    json_t *schema = json_object ();
    size_t keywords = 1 + unit_below (rng, 2);
    for (size_t count = 0; count < keywords; count++) {
        json_t *one = s_random_schema (rng, depth - 1), *two = s_random_schema (rng, depth - 1);
        switch (unit_below (rng, 13)) {
            case 0:  json_object_set_new (schema, "properties", json_pack ("{sOsO}",
                         s_names [unit_below (rng, 2)], one, s_names [2 + unit_below (rng, 2)],
                         two));
                     break;
            case 1:  json_object_set (schema, "additionalProperties", one); break;
            case 2:  json_object_set_new (schema, "patternProperties",
                                          json_pack ("{sO}", "^x", one));
                     break;
            case 3:  json_object_set (schema, "items", one); break;
            case 4:  json_object_set_new (schema, "prefixItems", json_pack ("[OO]", one, two));
                     break;
            case 5:  json_object_set_new (schema, "allOf", json_pack ("[OO]", one, two)); break;
            case 6:  json_object_set_new (schema, "anyOf", json_pack ("[OO]", one, two)); break;
            case 7:  json_object_set_new (schema, "oneOf", json_pack ("[OO]", one, two)); break;
            case 8:  json_object_set (schema, "not", one); break;
            case 9:  json_object_set (schema, "if", one);
                     json_object_set (schema, unit_below (rng, 2)? "then": "else", two);
                     break;
            case 10: json_object_set (schema, "if", one);
                     json_object_set (schema, "then", two);
                     json_object_set_new (schema, "else", s_random_leaf (rng));
                     break;
            case 11: json_object_set_new (schema, "properties", json_pack ("{s{ss}}",
                         s_names [unit_below (rng, 4)], "$ref", "#"));
                     break;
            default: if (json_is_object (one))
                         json_object_update (schema, one);
        }
        json_decref (one);
        json_decref (two);
    }
    return schema;
}

//  Random schemas, and calls whose references are resolved in turn to
//  0, "", null, true, [], {}, "x" and 1.5, alike and mixed: whenever a call
//  with references is refused, every resolution is refused by the full
//  check (a refusal holds whatever they resolve to). Calls without
//  references get act_schema_valid_call's verdict and message.
static void
test_random_refusals_hold_for_every_resolution (void **state)
{
    uint64_t rng = unit_seed ("ACTD_PARTIAL_SEED", 20260517);
    size_t refused = 0, accepted = 0, resolutions = 0, exact = 0;
    for (size_t round = 0; round < 6000; round++) {
        json_t *json = s_random_schema (&rng, 3);
        act_err_t err = { 0 };
        act_schema_t *schema = act_schema_new (json, &err);
        char *text = schema? act_json_dump (json): NULL;
        json_decref (json);
        if (!schema)
            continue;           //  A $ref into itself in place: refused at compile
        json_t *params = json_pack ("{ss}", "_tool", "t");
        size_t members = unit_below (&rng, 4);
        for (size_t index = 0; index < members; index++)
            json_object_set_new (params, s_names [unit_below (&rng, 4)],
                                 s_random_value (&rng, 2, true));
        act_call_t *call = act_call_parse (params, &err);
        json_decref (params);
        assert_non_null (call);
        bool valid;
        size_t resolved;
        const char *diff = partial_diff (schema, call, &valid, &resolved);
        if (diff)
            fail_msg ("schema %s, call %s: %s", text, call->text, diff);
        if (call->nrefs) {
            refused += !valid;
            accepted += valid;
            resolutions += resolved;
        }
        else
            exact++;
        free (text);
        act_call_destroy (&call);
        act_schema_destroy (&schema);
    }
    printf ("with references: %zu refused (%zu resolutions refused too), %zu accepted; "
            "%zu without\n", refused, resolutions, accepted, exact);
    //  Each kind of outcome came up often, and every refusal was tried
    assert_true (refused >= 300);
    assert_true (accepted >= 300);
    assert_true (exact >= 300);
    assert_int_equal (resolutions, refused * 2 * PARTIAL_VALUE_COUNT);
}

//  The table the test was given
static void
test_table (void **state)
{
    s_assert_cases ((const s_table_t *) *state);
}

//  A test of a table: named after it
#define S_TABLE_TEST(table) \
    { "test_" #table, test_table, NULL, NULL, (void *) &(s_table_t) S_TABLE (s_ ## table) }

int
main (void)
{
    const struct CMUnitTest tests [] = {
        S_TABLE_TEST (references_and_values),
        S_TABLE_TEST (shape_keywords),
        S_TABLE_TEST (sound_applicators),
        S_TABLE_TEST (whole_value_keywords),
        cmocka_unit_test (test_without_references_and_edges),
        cmocka_unit_test (test_random_refusals_hold_for_every_resolution),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
