/*  =========================================================================
    test_schema_unique - uniqueItems on long arrays. Items are bucketed by
    a hash consistent with JSON Schema equality (act_schema_hash) and
    compared (act_schema_equal) only within a bucket: the verdict and the
    pair named must be those of comparing every pair, as before, and an
    array of 200,000 items must be checked in about linear time (every
    pair would be 2 x 10^10 comparisons: hours, not the seconds this test
    takes). The draft 7 suite's uniqueItems cases run in test_schema.

    Every case runs through the three readers: the tree (act_schema_valid),
    the text (act_schema_valid_text) and, for the array as a member of a
    call, the call read in place (act_schema_valid_call).
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
#include "schema_support.h"

//  The array checked alone, and as the member "tags" of an object
#define S_ROOT_SCHEMA   "{\"uniqueItems\": true}"
#define S_TAGS_SCHEMA   "{\"properties\": {\"tags\": {\"uniqueItems\": true}}}"

//  Items unique unless they are told otherwise
#define S_FILLERS       20

static act_schema_t *
s_schema (const char *text)
{
    json_t *json = json_loads (text, 0, NULL);
    assert_non_null (json);
    act_err_t err = { 0 };
    act_schema_t *schema = act_schema_new (json, &err);
    json_decref (json);
    assert_non_null (schema);
    return schema;
}

//  The message of the tree instance ("" when valid), as a new string
static char *
s_tree_message (act_schema_t *schema, const json_t *instance)
{
    act_err_t err = { 0 };
    bool valid = act_schema_valid (schema, instance, &err);
    return strdup (valid? "": err.message);
}

//  The message of instance written as text and read in place; NULL when
//  the broker would refuse the text (a \u0000)
static char *
s_text_message (act_schema_t *schema, const json_t *instance)
{
    char *text = act_json_dumps (instance, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null (text);
    act_err_t err = { 0 };
    json_t *parsed = act_json_parse (text, strlen (text), &err);
    char *message = NULL;
    if (parsed) {
        bool valid = act_schema_valid_text (schema, text, strlen (text), &err);
        message = strdup (valid? "": err.message);
    }
    json_decref (parsed);
    free (text);
    return message;
}

//  The message of array as the member "tags" of a call, read in place;
//  NULL when the broker would refuse the call
static char *
s_call_message (act_schema_t *schema, const json_t *array)
{
    json_t *params = json_pack ("{s:s, s:O}", "_tool", "t", "tags", array);
    char *text = act_json_dumps (params, JSON_COMPACT);
    json_decref (params);
    assert_non_null (text);
    char *message = schema_call_message (schema, text);
    free (text);
    return message;
}

//  What comparing every pair says of array, as s_check_unique did before
//  it hashed: the first item equal to one before it, and that one
static char *
s_pairwise (const json_t *array, const char *pointer)
{
    char message [256] = "";
    size_t size = json_array_size (array);
    for (size_t index = 1; index < size && !*message; index++)
        for (size_t before = 0; before < index && !*message; before++)
            if (act_schema_equal (json_array_get (array, before), json_array_get (array, index)))
                snprintf (message, sizeof message, "%s: uniqueItems: items %zu and %zu are equal",
                          pointer, before, index);
    return strdup (message);
}

//  Arrays read as text, and as calls (the others were refused as such)
static int s_read [2];

//  Each reader gives expected for array: checked alone (pointer "(root)")
//  and as a call's member ("/tags"); expected names the pair, or is ""
static void
s_assert_readers (const json_t *array, const char *pair)
{
    act_schema_t *root = s_schema (S_ROOT_SCHEMA);
    act_schema_t *tags = s_schema (S_TAGS_SCHEMA);
    char expected [256] = "", as_member [256] = "";
    if (*pair) {
        snprintf (expected, sizeof expected, "(root): uniqueItems: %s", pair);
        snprintf (as_member, sizeof as_member, "/tags: uniqueItems: %s", pair);
    }
    char *found = s_tree_message (root, array);
    assert_string_equal (found, expected);
    free (found);
    found = s_text_message (root, array);
    if (found)
        assert_string_equal (found, expected);
    s_read [0] += found != NULL;
    free (found);
    found = s_call_message (tags, array);
    if (found)
        assert_string_equal (found, as_member);
    s_read [1] += found != NULL;
    free (found);
    act_schema_destroy (&root);
    act_schema_destroy (&tags);
}

//  An array of size objects {"t": index}, but for the item at copy, which
//  is {"t": of} with of written as a real (3.0 equals 3)
static json_t *
s_objects (size_t size, size_t copy, size_t of)
{
    json_t *array = json_array ();
    for (size_t index = 0; index < size; index++)
        json_array_append_new (array, index == copy
                               ? json_pack ("{s:f}", "t", (double) of)
                               : json_pack ("{s:I}", "t", (json_int_t) index));
    return array;
}

//  Long arrays: a duplicate found however far apart the pair, none found
//  where there is none; 200,000 items checked in linear time
static void
test_long_arrays (void **state)
{
    memset (s_read, 0, sizeof s_read);
    json_t *array = s_objects (50000, SIZE_MAX, 0);
    s_assert_readers (array, "");
    json_decref (array);
    array = s_objects (50000, 49990, 3);
    s_assert_readers (array, "items 3 and 49990 are equal");
    json_decref (array);
    array = s_objects (50000, 1, 0);
    s_assert_readers (array, "items 0 and 1 are equal");
    json_decref (array);
    //  Two pairs: the one whose second item comes first is named
    array = s_objects (50000, 40000, 7);
    json_array_set_new (array, 30000, json_pack ("{s:I}", "t", (json_int_t) 29999));
    s_assert_readers (array, "items 29999 and 30000 are equal");
    json_decref (array);
    //  200,000 items of every kind: every pair would take hours
    array = json_array ();
    for (json_int_t index = 0; index < 200000; index++) {
        char name [32];
        snprintf (name, sizeof name, "n%lld", (long long) index);
        json_array_append_new (array,
            index % 4 == 0? json_integer (index):
            index % 4 == 1? json_string (name):
            index % 4 == 2? json_pack ("[I, s]", index, name):
                            json_pack ("{s:I, s:s}", "a", index, "b", name));
    }
    s_assert_readers (array, "");
    json_array_append_new (array, json_pack ("{s:s, s:f}", "b", "n199999", "a", 199999.0));
    s_assert_readers (array, "items 199999 and 200000 are equal");
    json_decref (array);
    //  Each array was read by each reader
    assert_int_equal (s_read [0], 6);
    assert_int_equal (s_read [1], 6);
}

//  Pairs of items (JSON texts) that are equal, and pairs that are not
static const char *s_equal [][2] = {
    { "1", "1.0" }, { "0", "-0.0" }, { "-0.0", "0.0" }, { "1e2", "100" },
    { "9007199254740992", "9007199254740992.0" },
    { "-9223372036854775808", "-9223372036854775808.0" },
    { "9223372036854775807", "9223372036854775807" }, { "1e300", "1e300" },
    { "0.1", "0.1" }, { "-2.5", "-2.5" },
    { "{\"a\": 1, \"b\": [2], \"c\": {\"d\": null, \"e\": true}}",
      "{\"c\": {\"e\": true, \"d\": null}, \"b\": [2.0], \"a\": 1.0}" },
    { "[[1, [2, {\"x\": [3, []]}]], \"s\"]", "[[1.0, [2, {\"x\": [3.0, []]}]], \"s\"]" },
    { "\"" "0123456789012345678901234567890123456789" "0123456789x\"",
      "\"" "0123456789012345678901234567890123456789" "0123456789x\"" },
    { "\"a\\u0000b\"", "\"a\\u0000b\"" }, { "\"\"", "\"\"" }, { "{}", "{}" }, { "[]", "[]" },
    { "null", "null" }, { "true", "true" }, { "false", "false" },
    { "{\"k\\u00e9\": \"\\u20ac\"}", "{\"k\\u00e9\": \"\\u20ac\"}" }
};
static const char *s_different [][2] = {
    { "1", "true" }, { "0", "false" }, { "\"1\"", "1" }, { "[1]", "[1, 1]" }, { "[]", "{}" },
    { "null", "false" }, { "true", "false" }, { "1.5", "1" }, { "0.1", "0.30000000000000004" },
    { "9007199254740993", "9007199254740992.0" }, { "9007199254740993", "9007199254740992" },
    { "9223372036854775807", "9223372036854775808.0" },
    { "-9223372036854775808", "-9223372036854777856.0" },
    { "[1, 2]", "[2, 1]" }, { "[[1, 2]]", "[[1], 2]" },
    { "{\"a\": 1}", "{\"a\": 1, \"b\": 1}" }, { "{\"a\": 1, \"b\": 2}", "{\"a\": 2, \"b\": 1}" },
    { "{\"a\": 1}", "{\"b\": 1}" }, { "{\"a\": [1]}", "{\"a\": 1}" }, { "{\"ab\": 1}", "{\"a\": 1}" },
    { "\"" "0123456789012345678901234567890123456789" "0123456789x\"",
      "\"" "0123456789012345678901234567890123456789" "0123456789y\"" },
    { "\"abcdefgh\"", "\"abcdefgh\\u0000\"" }, { "\"a\\u0000b\"", "\"a\\u0000c\"" },
    { "\"\"", "null" }, { "{}", "null" }, { "[]", "\"\"" }, { "[null]", "[]" }
};

//  An array of S_FILLERS unique objects, with a and b (parsed) set at
//  first and second
static json_t *
s_with_pair (const char *a, const char *b, size_t first, size_t second)
{
    json_t *array = json_array ();
    for (size_t index = 0; index < S_FILLERS; index++)
        json_array_append_new (array, json_pack ("{s:I}", "filler", (json_int_t) index));
    json_array_set_new (array, first, json_loads (a, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL));
    json_array_set_new (array, second, json_loads (b, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL));
    assert_true (json_is_array (array) && json_array_get (array, first)
                 && json_array_get (array, second));
    return array;
}

//  JSON Schema equality in long arrays: numbers by value, objects in any
//  order, arrays item by item, strings byte by byte; as comparing every
//  pair says
static void
test_equal_items (void **state)
{
    for (size_t index = 0; index < sizeof s_equal / sizeof s_equal [0]; index++)
        for (int swap = 0; swap < 2; swap++) {
            json_t *array = s_with_pair (s_equal [index][swap], s_equal [index][!swap], 4, 17);
            char *pairwise = s_pairwise (array, "(root)");
            assert_string_equal (pairwise, "(root): uniqueItems: items 4 and 17 are equal");
            s_assert_readers (array, "items 4 and 17 are equal");
            free (pairwise);
            json_decref (array);
        }
    for (size_t index = 0; index < sizeof s_different / sizeof s_different [0]; index++)
        for (int swap = 0; swap < 2; swap++) {
            json_t *array = s_with_pair (s_different [index][swap],
                                         s_different [index][!swap], 4, 17);
            char *pairwise = s_pairwise (array, "(root)");
            assert_string_equal (pairwise, "");
            s_assert_readers (array, "");
            free (pairwise);
            json_decref (array);
        }
}

//  The values random arrays are made of: some equal to others
static const char *s_pool [] = {
    "0", "-0.0", "0.0", "1", "1.0", "1.5", "2", "-1", "9007199254740992",
    "9007199254740992.0", "9007199254740993", "-9223372036854775808", "9223372036854775807",
    "9223372036854775808.0", "1e300", "\"\"", "\"a\"", "\"b\"", "\"ab\"", "\"a\\u0000b\"",
    "\"a\\u0000c\"", "\"1\"", "true", "false", "null", "[]", "[1]", "[1.0]", "[1, 2]", "[2, 1]",
    "[[1]]", "[{\"a\": 1}]", "[{\"a\": 1.0}]", "{}", "{\"a\": 1}", "{\"a\": 1.0}", "{\"a\": 2}",
    "{\"b\": 1}", "{\"a\": 1, \"b\": 2}", "{\"b\": 2, \"a\": 1}", "{\"b\": 2.0, \"a\": 1.0}",
    "{\"a\": {\"b\": [1, 2]}}", "{\"a\": {\"b\": [1, 2.0]}}", "{\"a\": {\"b\": [2, 1]}}"
};
#define S_POOL  (sizeof s_pool / sizeof s_pool [0])

//  Random arrays of 17 to 200 items, drawn from the pool and from unique
//  fillers: the same verdict and pair as comparing every pair, from each
//  reader
static void
test_same_as_every_pair (void **state)
{
    json_t *pool [S_POOL];
    for (size_t index = 0; index < S_POOL; index++) {
        pool [index] = json_loads (s_pool [index], JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        assert_non_null (pool [index]);
    }
    srand (20260501);
    int invalid = 0;
    for (int round = 0; round < 600; round++) {
        size_t size = 17 + (size_t) rand () % 184;
        //  Few pool items in most arrays, so that some have no equal pair
        int chance = rand () % 100 < 60? 2: 30;
        json_t *array = json_array ();
        for (size_t index = 0; index < size; index++)
            json_array_append_new (array, rand () % 100 < chance
                ? json_incref (pool [rand () % S_POOL])
                : json_pack ("{s:I}", "n", (json_int_t) (round * 1000 + index)));
        char *pairwise = s_pairwise (array, "(root)");
        const char *pair = *pairwise? pairwise + strlen ("(root): uniqueItems: "): "";
        invalid += *pair != 0;
        s_assert_readers (array, pair);
        free (pairwise);
        json_decref (array);
    }
    //  Both verdicts were tried, many times
    assert_true (invalid > 100 && invalid < 500);
    for (size_t index = 0; index < S_POOL; index++)
        json_decref (pool [index]);
}

//  Object keys holding a \u0000 (only a tree made by hand has them: the
//  broker refuses the text): act_schema_equal looks such a key up by its C
//  string, so {"x\u0000a": 1, "x\u0000b": 1} equals {"x": 1, "y": 2} but
//  not the other way round. Such arrays are compared pair by pair, as before.
static void
test_keys_with_nul (void **state)
{
    json_t *odd = json_object ();
    json_object_setn_new (odd, "x\0a", 3, json_integer (1));
    json_object_setn_new (odd, "x\0b", 3, json_integer (1));
    json_t *plain = json_pack ("{s:i, s:i}", "x", 1, "y", 2);
    assert_true (act_schema_equal (odd, plain));
    assert_false (act_schema_equal (plain, odd));
    for (int swap = 0; swap < 2; swap++) {
        json_t *array = json_array ();
        for (size_t index = 0; index < 1000; index++)
            json_array_append_new (array, json_pack ("{s:I}", "n", (json_int_t) index));
        json_array_set (array, 10, swap? plain: odd);
        json_array_set (array, 900, swap? odd: plain);
        char *pairwise = s_pairwise (array, "(root)");
        assert_string_equal (pairwise, swap? "": "(root): uniqueItems: items 10 and 900 are equal");
        s_assert_readers (array, swap? "": "items 10 and 900 are equal");
        free (pairwise);
        json_decref (array);
    }
    json_decref (odd);
    json_decref (plain);
}

//  Items nested deeper than values are hashed (their depths below 256 hash
//  alike): still told apart by act_schema_equal, never crashed on
static void
test_deep_items (void **state)
{
    json_t *array = json_array ();
    for (json_int_t item = 0; item < 40; item++) {
        json_t *deep = json_integer (item == 33? 5: item);
        for (int level = 0; level < 300; level++) {
            json_t *outer = json_array ();
            json_array_append_new (outer, deep);
            deep = outer;
        }
        json_array_append_new (array, deep);
    }
    json_t *first = json_incref (json_array_get (array, 33));
    json_array_set_new (array, 33, json_integer (0));
    s_assert_readers (array, "");
    json_array_set_new (array, 33, first);
    s_assert_readers (array, "items 5 and 33 are equal");
    json_decref (array);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_long_arrays),
        cmocka_unit_test (test_equal_items),
        cmocka_unit_test (test_same_as_every_pair),
        cmocka_unit_test (test_keys_with_nul),
        cmocka_unit_test (test_deep_items),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
