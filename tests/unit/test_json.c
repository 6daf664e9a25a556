/*  =========================================================================
    test_json - act_json_dumps lays values out exactly as jansson's
    json_dumps does (compact, spaced and indented), for random values of
    every kind and for every value in the spec's vectors, except reals,
    which it writes in their shortest form (act_dtoa, test_numbers.c checks
    the digits); and refuses a cycle.

    act_json_dump is the broker's own serializer (jansson's costs a
    snprintf and a hash table entry per container): stored messages and
    replies must not change because of it, but for shorter reals.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <jansson.h>
#include "actd/act_wire.h"
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

//  A copy of value with every real replaced by the string "@REAL<n>@"
//  (random strings never hold '@'), the reals' texts appended to reals
static json_t *
s_mark_reals (const json_t *value, json_t *reals)
{
    if (json_is_real (value)) {
        char text [ACT_DTOA_SIZE], mark [32];
        act_dtoa (json_real_value (value), text);
        snprintf (mark, sizeof mark, "@REAL%zu@", json_array_size (reals));
        json_array_append_new (reals, json_string (text));
        return json_string (mark);
    }
    json_t *copy = json_is_array (value)? json_array ()
                 : json_is_object (value)? json_object (): json_deep_copy (value);
    for (void *iter = json_is_object (value)? json_object_iter ((json_t *) value): NULL;
         iter; iter = json_object_iter_next ((json_t *) value, iter))
        json_object_setn_new (copy, json_object_iter_key (iter), json_object_iter_key_len (iter),
                              s_mark_reals (json_object_iter_value (iter), reals));
    for (size_t i = 0; json_is_array (value) && i < json_array_size (value); i++)
        json_array_append_new (copy, s_mark_reals (json_array_get (value, i), reals));
    return copy;
}

//  What json_dumps writes for value with flags, each real in act_dtoa's form
static char *
s_expected (const json_t *value, size_t flags)
{
    json_t *reals = json_array ();
    json_t *marked = s_mark_reals (value, reals);
    char *text = json_dumps (marked, flags | JSON_ENCODE_ANY);
    json_decref (marked);
    for (size_t i = 0; i < json_array_size (reals); i++) {
        char mark [32];
        snprintf (mark, sizeof mark, "\"@REAL%zu@\"", i);
        char *at = strstr (text, mark);
        assert_non_null (at);
        const char *real = json_string_value (json_array_get (reals, i));
        char *joined = malloc (strlen (text) + strlen (real) + 1);
        sprintf (joined, "%.*s%s%s", (int) (at - text), text, real, at + strlen (mark));
        free (text);
        text = joined;
    }
    json_decref (reals);
    return text;
}

//  Fail the test unless act_json_dumps writes what s_expected says, in
//  every layout the broker and actctl use
static void
s_assert_same (const json_t *value)
{
    static const size_t layouts [] = {
        JSON_COMPACT, 0, JSON_INDENT (2), JSON_INDENT (4) | JSON_COMPACT
    };
    for (size_t i = 0; i < sizeof layouts / sizeof layouts [0]; i++) {
        char *expected = s_expected (value, layouts [i]);
        char *actual = layouts [i] == JSON_COMPACT? act_json_dump (value)
                                                  : act_json_dumps (value, layouts [i]);
        assert_non_null (expected);
        assert_non_null (actual);
        if (strcmp (expected, actual))
            fail_msg ("flags %zu: expected %s, act_json_dumps wrote %s",
                      layouts [i], expected, actual);
        free (expected);
        free (actual);
    }
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
    assert_null (act_json_dumps (outer, JSON_INDENT (2)));
    json_array_clear (inner);               //  Break it, so both can be freed
    json_decref (inner);
    json_decref (outer);
    json_decref (array);
}

//  The seconds since the epoch of a date act_date_ago wrote, after checking
//  its form: YYYY-MM-DDTHH:MM:SS.mmmZ
static long long
s_date_seconds (const char *date)
{
    assert_int_equal (strlen (date), 24);
    for (int i = 0; i < 24; i++) {
        char c = date [i];
        if (i == 4 || i == 7)
            assert_int_equal (c, '-');
        else if (i == 10)
            assert_int_equal (c, 'T');
        else if (i == 13 || i == 16)
            assert_int_equal (c, ':');
        else if (i == 19)
            assert_int_equal (c, '.');
        else if (i == 23)
            assert_int_equal (c, 'Z');
        else
            assert_true (c >= '0' && c <= '9');
    }
    struct tm utc = { 0 };
    sscanf (date, "%4d-%2d-%2dT%2d:%2d:%2d", &utc.tm_year, &utc.tm_mon, &utc.tm_mday,
            &utc.tm_hour, &utc.tm_min, &utc.tm_sec);
    utc.tm_year -= 1900;
    utc.tm_mon -= 1;
    return (long long) timegm (&utc);
}

//  act_date_ago keeps the text of the last second: moving between seconds
//  (a day back, then now again) still gives each its own text
//  Decimals written by hand read back through the project's parser and
//  match printf's, at the edges of long long
static void
test_decimals (void **state)
{
    (void) state;
    const long long cases [] = { 0, 7, -7, 10, 999, 1000, -1000, 1234567890123LL,
                                 9223372036854775807LL, -9223372036854775807LL - 1 };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char written [ACT_DECIMAL_MAX + 1], expected [32];
        written [act_decimal_write (written, cases [i])] = 0;
        snprintf (expected, sizeof expected, "%lld", cases [i]);
        assert_string_equal (written, expected);
        uint64_t back;
        if (cases [i] >= 0) {
            assert_true (act_decimal_parse (written, strlen (written), UINT64_MAX, &back));
            assert_true (back == (uint64_t) cases [i]);
        }
    }
}

static void
test_dates (void **state)
{
    (void) state;
    char now [32], day_before [32], again [32], second_before [32];
    act_date_ago (0, now);
    act_date_ago (86400000, day_before);
    act_date_ago (1000, second_before);
    act_date_ago (0, again);
    long long t_now = s_date_seconds (now), t_again = s_date_seconds (again);
    long long t_day = s_date_seconds (day_before), t_second = s_date_seconds (second_before);
    //  Whole seconds apart, give or take the time the calls took
    assert_true (t_now - t_day >= 86399 && t_now - t_day <= 86401);
    assert_true (t_again - t_second >= 1 && t_again - t_second <= 2);
    assert_true (t_again >= t_now && t_again - t_now <= 1);
    //  The texts compare as the times do
    assert_true (strcmp (day_before, now) < 0);
    assert_true (strcmp (now, again) <= 0);
}

//  act_json_is_dump says true exactly when writing the text read again
//  gives the same bytes (HISTORY sends such stored texts as they are)
static void
test_is_dump (void **state)
{
    (void) state;
    const char *texts [] = {
        "{}", "{\"a\":1}", "{\"a\":1,\"b\":[1,2,{\"c\":null}],\"d\":true,\"e\":false}",
        "{\"s\":\"\xc3\xa9\xe2\x80\xa0/\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001F\\u000B\"}",
        "{\"r\":[0.1,1e+300,-0.0,1.5,1e-07,123456.789,-2.2250738585072014e-308]}",
        "{\"i\":[0,-1,9223372036854775807,-9223372036854775808]}",
        "{\"n\":{\"a\":{\"b\":{\"c\":[[],{}]}}},\"_seq\":3,\"_call\":{\"_tool\":\"x\"}}",
        //  Not as the writer writes them
        "{\"a\": 1}", " {\"a\":1}", "{\"a\":1} ", "{\"a\":1,\"a\":2}", "{\"s\":\"\\u00e9\"}",
        "{\"s\":\"\\/\"}", "{\"s\":\"\\u001f\"}", "{\"s\":\"\\u0009\"}", "{\"s\":\"\\u0000\"}",
        "{\"r\":1e300}", "{\"r\":0.10000000000000001}", "{\"r\":1E+300}", "{\"r\":1.50}",
        "{\"i\":-0}", "{\"i\":01}", "{\"i\":9223372036854775808}", "{\"r\":1e400}",
        "{\"i\":1.}", "{\"a\":tru}", "{\"a\":1,}", "{\"a\"}", "{\"a\":[1,]}", "{",
        "{\"s\":\"\xc3\"}", "{\"s\":\"a\nb\"}",
        "{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,"
        "\"k9\":9,\"ka\":0,\"kb\":1,\"kc\":2,\"kd\":3,\"ke\":4,\"kf\":5,\"kg\":6,\"k0\":7}",
        "{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,"
        "\"k9\":9,\"ka\":0,\"kb\":1,\"kc\":2,\"kd\":3,\"ke\":4,\"kf\":5,\"kg\":6,\"kh\":7}",
    };
    size_t nexts = sizeof texts / sizeof texts [0];
    size_t yes = 0;
    for (size_t i = 0; i < nexts; i++) {
        json_t *value = json_loads (texts [i], 0, NULL);
        char *again = act_json_dump (value);
        bool same = again && strcmp (again, texts [i]) == 0;
        if (act_json_is_dump (texts [i], strlen (texts [i])) != same)
            fail_msg ("act_json_is_dump (%s) is not %d", texts [i], same);
        yes += same;
        free (again);
        json_decref (value);
    }
    assert_int_equal (yes, 8);
    assert_false (act_json_is_dump ("[1]", 3));      //  Only objects
    //  Random values as the writer writes them: all but those with a
    //  \u0000 (which jansson does not read back) are as it writes them
    uint64_t rng = 42;
    int same_count = 0;
    for (int round = 0; round < 2000; round++) {
        json_t *value = json_object ();
        json_object_set_new (value, "v", s_random_value (&rng, 0));
        char *text = act_json_dump (value);
        json_t *read = json_loads (text, 0, NULL);
        char *again = act_json_dump (read);
        bool same = again && strcmp (again, text) == 0;
        if (act_json_is_dump (text, strlen (text)) != same)
            fail_msg ("act_json_is_dump (%s) is not %d", text, same);
        same_count += same;
        free (again);
        json_decref (read);
        free (text);
        json_decref (value);
    }
    assert_true (same_count > 1000);
    //  Long runs (read eight bytes at a time) with a byte of note anywhere
    for (size_t at = 0; at < 40; at++) {
        char text [128], bad [48];
        memset (bad, 'a', sizeof bad);
        bad [at] = (char) 0xff;
        size_t offset = 99;
        assert_false (act_utf8_valid (bad, sizeof bad, &offset));
        assert_int_equal (offset, at);
        const char *notes [] = { "\\n", "\\\"", "\\u0001", "\xc3\xa9", "\x01", "\"", "\\u00e9" };
        for (size_t n = 0; n < sizeof notes / sizeof notes [0]; n++) {
            snprintf (text, sizeof text, "{\"s\":\"%.*s%s%.*s\"}", (int) at,
                      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", notes [n], (int) (40 - at),
                      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
            assert_int_equal (act_json_is_dump (text, strlen (text)), n < 4);
        }
    }
}

//  act_json_number_dumped says of a number what jansson's reading and
//  act_json_dump's writing say: the same text again, or not
static void
test_number_dumped (void **state)
{
    (void) state;
    struct { const char *text; bool dumped; } cases [] = {
        { "0", true }, { "-0", false }, { "100", true }, { "-7", true }, { "01", false },
        { "1e5", false }, { "1E5", false }, { "1e+16", true }, { "1E+16", false },
        { "0.1", true }, { "0.10", false }, { "1.0", true }, { "1.", false }, { "-0.0", true },
        { "1.5e-323", true }, { "5e-324", true }, { "1e400", false }, { "-", false },
        { "9223372036854775807", true }, { "9223372036854775808", false },
        { "-9223372036854775808", true }, { "-9223372036854775809", false },
        { "1000000000000000000", true }, { "0000000000000000001", false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        const char *text = cases [i].text;
        size_t length = 99;
        if (act_json_number_dumped (text, strlen (text), &length) != cases [i].dumped)
            fail_msg ("act_json_number_dumped (%s) is not %d", text, cases [i].dumped);
        if (cases [i].dumped)
            assert_int_equal (length, strlen (text));
        //  The same answer as jansson and the writer give
        char array [64], *again = NULL;
        snprintf (array, sizeof array, "[%s]", text);
        json_t *value = json_loads (array, 0, NULL);
        if (value)
            again = act_json_dump (value);
        assert_int_equal (again && strcmp (again, array) == 0, cases [i].dumped);
        free (again);
        json_decref (value);
    }
    //  The number ends where its grammar does, what follows is not read
    size_t length = 0;
    assert_true (act_json_number_dumped ("12,3", 4, &length));
    assert_int_equal (length, 2);
    assert_true (act_json_number_dumped ("0.5]", 4, &length));
    assert_int_equal (length, 3);
    assert_true (act_json_number_dumped ("1e+16}", 6, &length));
    assert_int_equal (length, 5);
    assert_true (act_json_number_dumped ("42", 1, &length));     //  Only size bytes
    assert_int_equal (length, 1);
    assert_false (act_json_number_dumped ("", 0, &length));
}

//  act_json_quoten writes what jansson writes for the same string, with
//  each character JSON escapes at every offset of a word of eight (the
//  quoting skips eight plain bytes at a time) and in runs of plain bytes
static void
test_quote_matches_jansson (void **state)
{
    (void) state;
    const char specials [] = { '"', '\\', '\b', '\f', '\n', '\r', '\t', 1, 0x1F, 0x7F };
    char text [40];
    for (size_t s = 0; s < sizeof specials; s++)
        for (size_t at = 0; at < 24; at++)
            for (size_t length = at + 1; length <= 33; length += 8) {
                memset (text, 'a', sizeof text);
                text [at] = specials [s];
                json_t *string = json_stringn (text, length);
                assert_non_null (string);
                char *expected = json_dumps (string, JSON_ENCODE_ANY | JSON_COMPACT);
                char *quoted = act_json_quoten (text, length);
                assert_string_equal (quoted, expected);
                free (quoted);
                free (expected);
                json_decref (string);
            }
    //  UTF-8 stays as it is
    char *quoted = act_json_quote ("plain caf\xc3\xa9 words, more than eight");
    assert_string_equal (quoted, "\"plain caf\xc3\xa9 words, more than eight\"");
    free (quoted);
}

//  Each parser's depth limit: act_json_parse 64 levels, _stored
//  ACT_MAX_STORED_DEPTH, _reply a stored message in an array or object
static void
test_depth_limits (void **state)
{
    (void) state;
    struct { int levels; int parse; int stored; int reply; } cases [] = {
        { ACT_MAX_JSON_DEPTH, 1, 1, 1 },
        { ACT_MAX_JSON_DEPTH + 1, 0, 1, 1 },
        { ACT_MAX_STORED_DEPTH, 0, 1, 1 },
        { ACT_MAX_STORED_DEPTH + 1, 0, 0, 1 },
        { ACT_MAX_REPLY_DEPTH, 0, 0, 1 },
        { ACT_MAX_REPLY_DEPTH + 1, 0, 0, 0 }
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        int levels = cases [i].levels;
        char text [2 * ACT_MAX_REPLY_DEPTH + 8];
        memset (text, '[', (size_t) levels);
        memset (text + levels, ']', (size_t) levels);
        size_t size = 2 * (size_t) levels;
        act_err_t err = { NULL, "" };
        json_t *parsed = act_json_parse (text, size, &err);
        assert_int_equal (parsed != NULL, cases [i].parse);
        json_decref (parsed);
        parsed = act_json_parse_stored (text, size, &err);
        assert_int_equal (parsed != NULL, cases [i].stored);
        json_decref (parsed);
        parsed = act_json_parse_reply (text, size, &err);
        assert_int_equal (parsed != NULL, cases [i].reply);
        if (!parsed)
            assert_string_equal (err.code, ACT_E_BAD_JSON);
        json_decref (parsed);
    }
}

//  act_json_dump_within: the text when it fits, NULL past max
static void
test_dump_within (void **state)
{
    (void) state;
    json_t *value = json_pack ("{s:[s,s],s:f}", "x", "abc", "d\"e", "n", 0.1);
    char *whole = act_json_dump (value);
    size_t size = strlen (whole);
    char *fits = act_json_dump_within (value, size);
    assert_non_null (fits);
    assert_string_equal (fits, whole);
    for (size_t max = 0; max < size; max++)
        assert_null (act_json_dump_within (value, max));
    free (fits);
    free (whole);
    json_decref (value);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_random_values),
        cmocka_unit_test (test_vector_values),
        cmocka_unit_test (test_absent_and_cycle),
        cmocka_unit_test (test_dates),
        cmocka_unit_test (test_decimals),
        cmocka_unit_test (test_is_dump),
        cmocka_unit_test (test_number_dumped),
        cmocka_unit_test (test_quote_matches_jansson),
        cmocka_unit_test (test_depth_limits),
        cmocka_unit_test (test_dump_within),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
