/*  =========================================================================
    test_json - act_json_dump writes exactly the bytes jansson's json_dumps
    (JSON_COMPACT | JSON_ENCODE_ANY) writes, for random values of every
    kind and for every value in the spec's vectors; and refuses a cycle.

    act_json_dump is the broker's own serializer (jansson's costs a
    snprintf and a hash table entry per container): stored messages and
    replies must not change because of it.
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

static uint64_t
s_next (uint64_t *rng)
{
    //  xorshift64*: fixed seeds make every failure reproducible
    *rng ^= *rng >> 12;
    *rng ^= *rng << 25;
    *rng ^= *rng >> 27;
    return *rng * 2685821657736338717ULL;
}

static int
s_below (uint64_t *rng, int bound)
{
    return (int) (s_next (rng) % (uint64_t) bound);
}

//  A random string: ASCII, every control character, quotes, backslashes,
//  two- to four-byte UTF-8, and (rarely) an embedded NUL
static json_t *
s_random_string (uint64_t *rng)
{
    static const char *pieces [] = {
        "a", "Z", " ", "\"", "\\", "/", "\x7f", "\xc3\xa9", "\xe2\x80\xa0",
        "\xe2\x80\xa8", "\xf0\x9f\x98\x80", "\xef\xbf\xbf", "state.x", "0"
    };
    char buffer [256];
    size_t used = 0;
    int count = s_below (rng, 12);
    for (int i = 0; i < count; i++) {
        int pick = s_below (rng, 20);
        if (pick < 14) {
            size_t length = strlen (pieces [pick]);
            memcpy (buffer + used, pieces [pick], length);
            used += length;
        }
        else
            buffer [used++] = (char) s_below (rng, 0x20);   //  Controls, NUL too
    }
    return json_stringn (buffer, used);
}

static json_t *
s_random_value (uint64_t *rng, int depth)
{
    static const double reals [] = {
        0.0, -0.0, 1.0, 0.1, -2.5, 1e300, 1e-300, 123456789.125, 3.141592653589793, 1e21
    };
    static const json_int_t integers [] = {
        0, 1, -1, 42, 9007199254740993LL, INT64_MAX, INT64_MIN
    };
    int kind = s_below (rng, depth < 5? 9: 7);
    switch (kind) {
        case 0: return json_null ();
        case 1: return json_true ();
        case 2: return json_false ();
        case 3: return json_integer (s_below (rng, 2)
                                     ? integers [s_below (rng, 7)]
                                     : (json_int_t) s_next (rng));
        case 4: return json_real (s_below (rng, 2)
                                  ? reals [s_below (rng, 10)]
                                  : (double) (int64_t) s_next (rng) / 1e6);
        case 5:
        case 6: return s_random_string (rng);
        case 7: {
            json_t *array = json_array ();
            int count = s_below (rng, 5);
            for (int i = 0; i < count; i++)
                json_array_append_new (array, s_random_value (rng, depth + 1));
            return array;
        }
        default: {
            json_t *object = json_object ();
            int count = s_below (rng, 5);
            for (int i = 0; i < count; i++) {
                json_t *key = s_random_string (rng);
                json_object_setn_new (object, json_string_value (key),
                                      json_string_length (key),
                                      s_random_value (rng, depth + 1));
                json_decref (key);
            }
            return object;
        }
    }
}

//  Fail the test unless both serializers write the same bytes for value
static void
s_assert_same (const json_t *value)
{
    char *expected = json_dumps (value, JSON_COMPACT | JSON_ENCODE_ANY);
    char *actual = act_json_dump (value);
    assert_non_null (expected);
    assert_non_null (actual);
    if (strcmp (expected, actual))
        fail_msg ("json_dumps wrote %s, act_json_dump %s", expected, actual);
    free (expected);
    free (actual);
}

static void
test_random_values (void **state)
{
    (void) state;
    for (uint64_t seed = 1; seed <= 20000; seed++) {
        uint64_t rng = seed * 0x9E3779B97F4A7C15ULL;
        json_t *value = s_random_value (&rng, 0);
        s_assert_same (value);
        json_decref (value);
    }
}

//  Every value of every vector file, and each of its parts
static void
s_walk (const json_t *value, size_t *count)
{
    s_assert_same (value);
    (*count)++;
    const char *key;
    json_t *member;
    size_t index;
    if (json_is_object (value))
        json_object_foreach ((json_t *) value, key, member)
            s_walk (member, count);
    else
    if (json_is_array (value))
        json_array_foreach (value, index, member)
            s_walk (member, count);
}

static void
test_vector_values (void **state)
{
    (void) state;
    const char *files [] = { "references.json", "resolve.json" };
    size_t count = 0;
    for (size_t i = 0; i < 2; i++) {
        char path [512];
        snprintf (path, sizeof path, "%s/%s", S_VECTORS_DIR, files [i]);
        json_error_t error;
        json_t *vectors = json_load_file (path, 0, &error);
        if (!vectors)
            fail_msg ("%s: %s", path, error.text);
        s_walk (vectors, &count);
        json_decref (vectors);
    }
    assert_true (count > 100);
}

static void
test_absent_and_cycle (void **state)
{
    (void) state;
    assert_null (act_json_dump (NULL));
    json_t *array = json_array ();
    json_array_append (array, array);       //  jansson refuses to do this...
    json_t *outer = json_array ();
    json_t *inner = json_array ();
    json_array_append (outer, inner);
    json_array_append (inner, outer);       //  ...but not this: a cycle
    assert_null (act_json_dump (outer));
    json_array_clear (inner);               //  Break it, so both can be freed
    json_decref (inner);
    json_decref (outer);
    json_decref (array);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_random_values),
        cmocka_unit_test (test_vector_values),
        cmocka_unit_test (test_absent_and_cycle),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
