/*  =========================================================================
    test_numbers - SEMANTICS 1: "an integer that fits a signed 64-bit
    integer stays an integer; any other number is an IEEE 754 double,
    written back in the shortest form that reads back as the same double".

    For every double of numbers_sample.h (edge cases, every power of two,
    100 000 random bit patterns): what act_json_dump writes reads back
    (strtod and act_json_parse) as the same double, as a real, and has no
    more significant digits than the shortest decimal that reads back as it,
    found here by search with glibc's correctly rounded printf. Python's
    repr judges the same texts in test_dtoa_repr.py. Then the parse side:
    integer literals outside int64 are doubles, positions in errors stay
    right, and the merged view's text shows 0.1 as 0.1.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "actd/act.h"
#include "numbers_sample.h"

//  True when text reads back (strtod) as exactly value, sign of zero too
static bool
s_reads_back (const char *text, double value)
{
    double back = strtod (text, NULL);
    return memcmp (&back, &value, sizeof value) == 0;
}

//  The fewest significant digits of a decimal that reads back as value
//  (finite, not zero). For each length p, the nearest p-digit decimal
//  (printf rounds correctly) and its two neighbours are tried: when the
//  rounding interval is asymmetric (a power of two), the nearest may fall
//  outside the narrow side while the next one up is inside the wide side.
static int
s_shortest_digits (double value)
{
    for (int p = 1; p <= 17; p++) {
        char text [64];
        snprintf (text, sizeof text, "%.*e", p - 1, value);
        char *e = strchr (text, 'e');
        long long digits = 0;
        for (char *c = text; c < e; c++)
            if (*c >= '0' && *c <= '9')
                digits = digits * 10 + (*c - '0');
        int exponent = atoi (e + 1) - (p - 1);
        for (int step = -1; step <= 1; step++) {
            char candidate [64];
            snprintf (candidate, sizeof candidate, "%s%llde%d",
                      value < 0? "-": "", digits + step, exponent);
            if (s_reads_back (candidate, value))
                return p;
        }
    }
    fail_msg ("no decimal of 17 digits reads back as %a", value);
    return 0;
}

//  Significant digits in text: "0.000120" and "1.2e-4" have 2, "100.0" 1
static int
s_digits_in (const char *text)
{
    char digits [64];
    size_t count = 0;
    for (const char *c = text; *c && *c != 'e'; c++)
        if (*c >= '0' && *c <= '9' && (count || *c != '0'))
            digits [count++] = *c;
    while (count > 1 && digits [count - 1] == '0')
        count--;
    return (int) count;
}

static void
test_shortest_round_trip (void **state)
{
    (void) state;
    uint64_t rng = 0;
    for (size_t i = 0; i < S_SAMPLE_COUNT; i++) {
        double value = s_sample (i, &rng);
        json_t *real = json_real (value);
        char *text = act_json_dump (real);
        assert_non_null (text);
        if (!s_reads_back (text, value))
            fail_msg ("sample %zu: %a written as %s, which reads back otherwise", i, value, text);
        act_err_t err = { NULL, "" };
        json_t *parsed = act_json_parse (text, strlen (text), &err);
        if (!json_is_real (parsed) || !json_equal (parsed, real)
        ||  signbit (json_real_value (parsed)) != signbit (value))
            fail_msg ("sample %zu: %s does not parse back as the real %a", i, text, value);
        if (value != 0 && s_digits_in (text) > s_shortest_digits (value))
            fail_msg ("sample %zu: %s has %d digits, %a needs only %d",
                      i, text, s_digits_in (text), value, s_shortest_digits (value));
        json_decref (parsed);
        json_decref (real);
        free (text);
    }
}

//  Known texts, as Python's repr writes them
static void
test_known_texts (void **state)
{
    (void) state;
    static const struct { double value; const char *text; } cases [] = {
        { 0.1, "0.1" }, { 3.14, "3.14" }, { 1e300, "1e+300" }, { -0.0, "-0.0" },
        { 0.0, "0.0" }, { 100.0, "100.0" }, { 1e16, "1e+16" },
        { 1e15, "1000000000000000.0" }, { 0.0001, "0.0001" }, { 0.00001, "1e-05" },
        { 5e-324, "5e-324" }, { DBL_MAX, "1.7976931348623157e+308" },
        { DBL_MIN, "2.2250738585072014e-308" }, { 1e23, "1e+23" },
        { 9007199254740993.0, "9007199254740992.0" }, { 0.1 + 0.2, "0.30000000000000004" },
        { 123456789012345678.0, "1.2345678901234568e+17" }, { -1.5, "-1.5" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char text [ACT_DTOA_SIZE];
        size_t length = act_dtoa (cases [i].value, text);
        if (strcmp (text, cases [i].text) || length != strlen (text))
            fail_msg ("%a: wrote %s (%zu bytes), want %s", cases [i].value, text, length,
                      cases [i].text);
    }
}

//  Parse text (JSON) or fail the test
static json_t *
s_parse (const char *text)
{
    act_err_t err = { NULL, "" };
    json_t *value = act_json_parse (text, strlen (text), &err);
    if (!value)
        fail_msg ("%s refused: %s", text, err.message);
    return value;
}

//  SEMANTICS 1: a number that does not fit int64 is a double
static void
test_integers_beyond_int64 (void **state)
{
    (void) state;
    json_t *value = s_parse ("18446744073709551616");
    assert_true (json_is_real (value));
    assert_true (json_real_value (value) == 18446744073709551616.0);
    char *text = act_json_dump (value);
    assert_string_equal (text, "1.8446744073709552e+19");
    free (text);
    json_decref (value);

    value = s_parse ("[9223372036854775807, -9223372036854775808, 9223372036854775808,"
                     " -9223372036854775809, {\"a\": 123456789012345678901234567890},"
                     " \"99999999999999999999\", \"\\\"\", -0, 1e2]");
    text = act_json_dump (value);
    assert_string_equal (text, "[9223372036854775807,-9223372036854775808,"
                               "9.223372036854776e+18,-9.223372036854776e+18,"
                               "{\"a\":1.2345678901234568e+29},"
                               "\"99999999999999999999\",\"\\\"\",0,100.0]");
    assert_true (json_is_integer (json_array_get (value, 0)));
    assert_true (json_is_integer (json_array_get (value, 1)));
    assert_true (json_is_real (json_array_get (value, 2)));
    free (text);
    json_decref (value);

    //  Many in one text: one more parse, not one per number
    char *many = malloc (21 * 10000 + 2), *end = many;
    *end++ = '[';
    for (int i = 0; i < 10000; i++)
        end += sprintf (end, "%s99999999999999999999", i? ",": "");
    strcpy (end, "]");
    value = s_parse (many);
    assert_int_equal (json_array_size (value), 10000);
    assert_true (json_real_value (json_array_get (value, 9999)) == 1e20);
    json_decref (value);
    free (many);
}

//  Errors after a rewritten number name the same place; numbers beyond a
//  double and malformed ones are still refused
static void
test_errors_keep_their_place (void **state)
{
    (void) state;
    act_err_t wide = { NULL, "" }, real = { NULL, "" };
    const char *text = "[18446744073709551616, x]";
    assert_null (act_json_parse (text, strlen (text), &wide));
    text = "[184467440737095516.6, x]";       //  As long: same place
    assert_null (act_json_parse (text, strlen (text), &real));
    assert_string_equal (wide.code, ACT_E_BAD_JSON);
    assert_string_equal (wide.message, real.message);
    static const char *refused [] = {
        "1e400", "-1e400", "[01]", "-", "[-01234567890123456789012]",
        "1000000000000000000000000000000000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000000000000000000000000000000"
        "00000000000000000000000000000000000000000000000000000000000000000000000000000000",
        "{\"a\": 18446744073709551616, \"a\": 1}"
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused [0]; i++) {
        act_err_t err = { NULL, "" };
        json_t *value = act_json_parse (refused [i], strlen (refused [i]), &err);
        if (value)
            fail_msg ("%s was accepted", refused [i]);
        assert_string_equal (err.code, ACT_E_BAD_JSON);
    }
}

//  SEMANTICS 6: the text view writes 0.1 as 0.1 too (pretty-printed)
static void
test_view_text (void **state)
{
    (void) state;
    act_ctx_t *ctx = act_ctx_new ("t");
    json_t *message = s_parse ("{\"type\":\"data\",\"kind\":\"state\","
                               "\"data\":{\"a\":0.1,\"b\":[3.14,1e300]},\"description\":0.5}");
    act_err_t err = { NULL, "" };
    json_t *stored = act_ctx_append (ctx, message, &err);
    assert_non_null (stored);
    char *text = act_ctx_view_text (ctx);
    assert_string_equal (text, "## Data: \xC2\xB6state\n{\n  \"a\": 0.1,\n  \"b\": [\n"
                               "    3.14,\n    1e+300\n  ]\n}\n0.5\n");
    free (text);
    json_decref (stored);
    json_decref (message);
    act_ctx_destroy (&ctx);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_known_texts),
        cmocka_unit_test (test_shortest_round_trip),
        cmocka_unit_test (test_integers_beyond_int64),
        cmocka_unit_test (test_errors_keep_their_place),
        cmocka_unit_test (test_view_text),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
