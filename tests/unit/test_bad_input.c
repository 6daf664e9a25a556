/*  =========================================================================
    test_bad_input - bad input gets a clear error, no crash, and changes
    nothing (act_err.h: "nothing in libactd asserts on input").

    JSON frames, UTF-8 and references, each at and past its limits. Calls
    are in test_bad_input_calls; appended messages, context ids and the
    shape of what the context stores and shows in test_bad_input_contexts.
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

//  A string literal and its size in bytes (it may hold NUL bytes)
#define S_BYTES(literal) literal, sizeof (literal) - 1

//  open repeated depth times, then inner, then close repeated depth times
static char *
s_nest (const char *open, const char *inner, const char *close, size_t depth)
{
    size_t size = depth * (strlen (open) + strlen (close)) + strlen (inner) + 1;
    char *text = malloc (size);
    assert_non_null (text);
    char *at = text;
    for (size_t i = 0; i < depth; i++)
        at = stpcpy (at, open);
    at = stpcpy (at, inner);
    for (size_t i = 0; i < depth; i++)
        at = stpcpy (at, close);
    return text;
}

//  Printable form of bytes for messages
static void
s_printable (const char *data, size_t size, char *buffer, size_t capacity)
{
    size_t used = 0;
    for (size_t i = 0; i < size && used + 5 < capacity; i++) {
        unsigned char byte = (unsigned char) data [i];
        if (byte >= 0x20 && byte < 0x7F)
            buffer [used++] = (char) byte;
        else
            used += (size_t) snprintf (buffer + used, capacity - used, "\\x%02X", byte);
    }
    buffer [used] = 0;
}

//  act_json_parse must refuse data with bad_json and a message
static void
s_assert_bad_json (const char *data, size_t size)
{
    char shown [256];
    s_printable (data, size > 60? 60: size, shown, sizeof shown);
    act_err_t err = { NULL, "" };
    json_t *value = act_json_parse (data, size, &err);
    if (value) {
        json_decref (value);
        fail_msg ("act_json_parse accepted \"%s\" (%zu bytes)", shown, size);
    }
    if (strcmp (s_code (&err), ACT_E_BAD_JSON) != 0)
        fail_msg ("act_json_parse \"%s\": code %s, expected bad_json", shown, s_code (&err));
    if (err.message [0] == 0)
        fail_msg ("act_json_parse \"%s\": empty message", shown);
}

//  act_json_parse must accept data and give the value of want
static void
s_assert_json (const char *data, size_t size, const char *want)
{
    act_err_t err = { NULL, "" };
    json_t *value = act_json_parse (data, size, &err);
    if (!value)
        fail_msg ("act_json_parse refused \"%.60s\": %s: %s", data, s_code (&err), err.message);
    json_t *expected = s_json (want);
    if (!json_equal (value, expected))
        fail_msg ("act_json_parse \"%.60s\" gave a different value", data);
    json_decref (expected);
    json_decref (value);
}

//  act_expr_parse must refuse text with bad_reference naming a byte offset
static void
s_assert_bad_expr (const char *text, bool output)
{
    char shown [256];
    s_printable (text, strlen (text) > 80? 80: strlen (text), shown, sizeof shown);
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (text, output, &err);
    if (expr) {
        act_expr_destroy (&expr);
        fail_msg ("act_expr_parse (\"%s\", %s) accepted it", shown,
                  output? "output": "parameter");
    }
    if (strcmp (s_code (&err), ACT_E_BAD_REFERENCE) != 0)
        fail_msg ("act_expr_parse (\"%s\", %s): code %s, expected bad_reference",
                  shown, output? "output": "parameter", s_code (&err));
    if (!strstr (err.message, "byte"))
        fail_msg ("act_expr_parse (\"%s\", %s): message \"%s\" names no byte offset",
                  shown, output? "output": "parameter", err.message);
}


//  --------------------------------------------------------------------------
//  JSON frames

//  Invalid UTF-8, inside a JSON string
static const struct {
    const char *bytes;
    size_t size;
    size_t offset;              //  First bad byte
    const char *what;
} s_bad_utf8 [] = {
    { "ab\x80", 3, 2, "lone continuation byte" },
    { "\xBF", 1, 0, "lone continuation byte BF" },
    { "\xC0\x80", 2, 0, "overlong NUL C0 80" },
    { "x\xC1\xBF", 3, 1, "overlong C1 BF" },
    { "\xE0\x80\xAF", 3, 0, "overlong three-byte E0 80 AF" },
    { "\xF0\x80\x80\xAF", 4, 0, "overlong four-byte F0 80 80 AF" },
    { "\xED\xA0\x80", 3, 0, "surrogate ED A0 80 (U+D800)" },
    { "ok\xED\xBF\xBF", 5, 2, "surrogate ED BF BF (U+DFFF)" },
    { "\xC3\xA9\xE2\x82", 4, 2, "truncated three-byte sequence at the end" },
    { "\xE2\x82" "x", 3, 0, "truncated sequence before ASCII" },
    { "\xF0\x9D\x84", 3, 0, "truncated four-byte sequence" },
    { "\xC3", 1, 0, "truncated two-byte sequence" },
    { "\xF5\x80\x80\x80", 4, 0, "F5 lead byte" },
    { "\xF4\x90\x80\x80", 4, 0, "above U+10FFFF" },
    { "a\xFE", 2, 1, "FE" },
    { "\xFF", 1, 0, "FF" },
};
#define S_BAD_UTF8 (sizeof s_bad_utf8 / sizeof s_bad_utf8 [0])

//  act_json.h: invalid UTF-8 anywhere in a frame is bad_json
static void
test_json_refuses_invalid_utf8 (void **state)
{
    for (size_t i = 0; i < S_BAD_UTF8; i++) {
        char frame [64];
        //  As a string value
        frame [0] = '"';
        memcpy (frame + 1, s_bad_utf8 [i].bytes, s_bad_utf8 [i].size);
        frame [1 + s_bad_utf8 [i].size] = '"';
        s_assert_bad_json (frame, s_bad_utf8 [i].size + 2);
        //  As an object key
        memcpy (frame, "{\"", 2);
        memcpy (frame + 2, s_bad_utf8 [i].bytes, s_bad_utf8 [i].size);
        memcpy (frame + 2 + s_bad_utf8 [i].size, "\":1}", 4);
        s_assert_bad_json (frame, s_bad_utf8 [i].size + 6);
    }
    //  Valid multibyte text is kept as it is
    s_assert_json (S_BYTES ("\"\xC3\xA9\xE2\x82\xAC\xF0\x9D\x84\x9E\""),
                   "\"\\u00e9\\u20ac\\ud834\\udd1e\"");
}

//  act_json.h: the offset of the first bad byte, and valid text accepted
static void
test_utf8_valid (void **state)
{
    for (size_t i = 0; i < S_BAD_UTF8; i++) {
        size_t offset = 12345;
        if (act_utf8_valid (s_bad_utf8 [i].bytes, s_bad_utf8 [i].size, &offset))
            fail_msg ("act_utf8_valid accepted %s", s_bad_utf8 [i].what);
        if (offset != s_bad_utf8 [i].offset)
            fail_msg ("act_utf8_valid %s: offset %zu, expected %zu",
                      s_bad_utf8 [i].what, offset, s_bad_utf8 [i].offset);
        //  The offset is optional
        assert_false (act_utf8_valid (s_bad_utf8 [i].bytes, s_bad_utf8 [i].size, NULL));
    }
    static const struct {
        const char *bytes;
        size_t size;
    } good [] = {
        { "", 0 },
        { "abc", 3 },
        { "\xC3\xA9", 2 },                  //  U+00E9
        { "\xC2\x80", 2 },                  //  U+0080, the smallest two-byte
        { "\xE2\x82\xAC", 3 },              //  U+20AC
        { "\xE0\xA0\x80", 3 },              //  U+0800, the smallest three-byte
        { "\xED\x9F\xBF", 3 },              //  U+D7FF, below the surrogates
        { "\xEE\x80\x80", 3 },              //  U+E000, above them
        { "\xEF\xBF\xBF", 3 },              //  U+FFFF
        { "\xF0\x90\x80\x80", 4 },          //  U+10000
        { "\xF0\x9D\x84\x9E", 4 },          //  U+1D11E
        { "\xF4\x8F\xBF\xBF", 4 },          //  U+10FFFF, the largest
        { "a\0b", 3 },                      //  U+0000 is well-formed UTF-8
    };
    for (size_t i = 0; i < sizeof good / sizeof good [0]; i++) {
        size_t offset = 0;
        if (!act_utf8_valid (good [i].bytes, good [i].size, &offset))
            fail_msg ("act_utf8_valid refused good text #%zu at byte %zu", i, offset);
    }
    //  Only size bytes are read: a bad byte past them does not count
    assert_true (act_utf8_valid ("ab\xFF", 2, NULL));
}

//  act_json.h: nesting deeper than ACT_MAX_JSON_DEPTH is bad_json;
//  exactly at the limit is accepted
static void
test_json_depth_limit (void **state)
{
    char *at_limit = s_nest ("[", "", "]", ACT_MAX_JSON_DEPTH);
    char *past_limit = s_nest ("[", "", "]", ACT_MAX_JSON_DEPTH + 1);
    char *objects_at_limit = s_nest ("{\"a\":", "1", "}", ACT_MAX_JSON_DEPTH);
    char *objects_past_limit = s_nest ("{\"a\":", "1", "}", ACT_MAX_JSON_DEPTH + 1);
    char *mixed_past_limit = s_nest ("[{\"a\":", "[]", "}]", ACT_MAX_JSON_DEPTH / 2);

    act_err_t err = { NULL, "" };
    json_t *value = act_json_parse (at_limit, strlen (at_limit), &err);
    if (!value)
        fail_msg ("%d nested arrays refused: %s", ACT_MAX_JSON_DEPTH, err.message);
    assert_int_equal (act_json_depth (value, ACT_MAX_JSON_DEPTH), ACT_MAX_JSON_DEPTH);
    int capped = act_json_depth (value, 10);
    json_decref (value);

    value = act_json_parse (objects_at_limit, strlen (objects_at_limit), &err);
    if (!value)
        fail_msg ("%d nested objects refused: %s", ACT_MAX_JSON_DEPTH, err.message);
    assert_int_equal (act_json_depth (value, ACT_MAX_JSON_DEPTH), ACT_MAX_JSON_DEPTH);
    json_decref (value);

    s_assert_bad_json (past_limit, strlen (past_limit));
    s_assert_bad_json (objects_past_limit, strlen (objects_past_limit));
    s_assert_bad_json (mixed_past_limit, strlen (mixed_past_limit));

    //  act_json_depth: 0 for a scalar, 1 for an empty or flat container
    static const struct {
        const char *text;
        int depth;
    } depths [] = {
        { "5", 0 }, { "null", 0 }, { "\"s\"", 0 }, { "[]", 1 }, { "{}", 1 },
        { "[1,2]", 1 }, { "{\"a\":1}", 1 }, { "[[]]", 2 }, { "{\"a\":[]}", 2 },
        { "[1,[2,[3]],{}]", 3 },
    };
    for (size_t i = 0; i < sizeof depths / sizeof depths [0]; i++) {
        json_t *json = s_json (depths [i].text);
        if (act_json_depth (json, ACT_MAX_JSON_DEPTH) != depths [i].depth)
            fail_msg ("act_json_depth (%s) is %d, expected %d", depths [i].text,
                      act_json_depth (json, ACT_MAX_JSON_DEPTH), depths [i].depth);
        json_decref (json);
    }
    //  One level past the limit counts as past it
    json_t *deeper = json_array ();
    json_t *inner = deeper;
    for (int i = 0; i < ACT_MAX_JSON_DEPTH; i++) {
        json_t *next = json_array ();
        json_array_append_new (inner, next);
        inner = next;
    }
    int past = act_json_depth (deeper, ACT_MAX_JSON_DEPTH);
    json_decref (deeper);
    free (at_limit);
    free (past_limit);
    free (objects_at_limit);
    free (objects_past_limit);
    free (mixed_past_limit);
    if (past <= ACT_MAX_JSON_DEPTH)
        fail_msg ("act_json_depth of %d levels with limit %d is %d",
                  ACT_MAX_JSON_DEPTH + 1, ACT_MAX_JSON_DEPTH, past);
    //  act_json.h: "Stops counting at limit + 1"
    if (capped != 11)
        fail_msg ("act_json_depth of %d levels with limit 10 is %d, expected 11 "
                  "(limit + 1)", ACT_MAX_JSON_DEPTH, capped);
}

//  act_json.h: a 10 000-deep document is refused, not a stack overflow
static void
test_json_very_deep_document (void **state)
{
    char *arrays = s_nest ("[", "", "]", 10000);
    char *objects = s_nest ("{\"a\":", "0", "}", 10000);
    char *unclosed = s_nest ("[", "", "", 10000);
    s_assert_bad_json (arrays, strlen (arrays));
    s_assert_bad_json (objects, strlen (objects));
    s_assert_bad_json (unclosed, strlen (unclosed));
    free (arrays);
    free (objects);
    free (unclosed);
}

//  act_json.h: integers outside 64 bits, \u0000, duplicate keys, and
//  anything but exactly one JSON text are bad_json
static void
test_json_refuses_bad_frames (void **state)
{
    static const char *bad [] = {
        "1e400",
        "[1,-1e400]",
        "\"a\\u0000b\"",
        "{\"a\\u0000\":1}",
        "[\"\\u0000\"]",
        "{\"a\":1,\"a\":2}",
        "{\"a\":1,\"a\":1}",
        "{\"x\":{\"k\":1,\"k\":null}}",
        "",
        "   \n\t ",
        "{} {}",
        "1 2",
        "\"a\"\"b\"",
        "[][]",
        "{}x",
        "[1]]",
        "{\"a\":1}}",
        "nul",
        "{\"a\":}",
        "[1,]",
        "\"a\nb\"",
        "'a'",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        s_assert_bad_json (bad [i], strlen (bad [i]));
    //  A \u0000 is refused in the scanner's words, not jansson's (which
    //  named its flag JSON_ALLOW_NUL)
    act_err_t nul = { NULL, "" };
    assert_null (act_json_parse (S_BYTES ("{\"p\":\"a\\u0000b\"}"), &nul));
    assert_string_equal (nul.message, "\\u0000 is not allowed at line 1, column 15 (byte 15)");
    //  A NUL byte is neither JSON nor white space
    s_assert_bad_json (S_BYTES ("{}\0"));
    s_assert_bad_json (S_BYTES ("\"a\0b\""));
    s_assert_bad_json (S_BYTES ("\0"));

    //  What is valid stays valid
    s_assert_json (S_BYTES ("9223372036854775807"), "9223372036854775807");
    s_assert_json (S_BYTES ("-9223372036854775808"), "-9223372036854775808");
    //  SEMANTICS 1: a number that does not fit int64 is a double
    s_assert_json (S_BYTES ("99999999999999999999999"), "1e+23");
    s_assert_json (S_BYTES ("-99999999999999999999999"), "-1e+23");
    s_assert_json (S_BYTES ("[1,99999999999999999999999]"), "[1,1e+23]");
    s_assert_json (S_BYTES ("{\"n\":99999999999999999999999}"), "{\"n\":1e+23}");
    s_assert_json (S_BYTES ("9223372036854775808"), "9.223372036854776e+18");
    s_assert_json (S_BYTES ("-9223372036854775809"), "-9.223372036854776e+18");
    s_assert_json (S_BYTES ("5"), "5");
    s_assert_json (S_BYTES (" {\"a\":[1,{\"b\":null}]} \n"), "{\"a\":[1,{\"b\":null}]}");
    s_assert_json (S_BYTES ("\"\\u00e9\""), "\"\xC3\xA9\"");
    //  Exactly size bytes are read
    s_assert_json ("[1]xyz", 3, "[1]");
}


//  --------------------------------------------------------------------------
//  References

//  Parameter references test_malformed_references must see refused
static const char *s_bad_references [] = {
    "",
    "   ",
    "state.user",
    "x " "†a",
    "†",
    "† a",
    "†1a",
    "†-a",
    "†.a",
    "†a..b",
    "†a.",
    "†a[",
    "†a[0",
    "†a[]",
    "†a[01]",
    "†a[00]",
    "†a[x]",
    "†a[-1]",
    "†a[1.5]",
    "†a[ 1]",
    "†a[\"\\u0000\"]",
    "†a.b\xC2\xA0" "c",
    "†a.\xE3\x80\x80",
    "†a[\"x]",
    "†a[\"x\"",
    "†a[\"\\q\"]",
    "†a b",
    "†a.b c",
    "†a.b\tc",
    "†a †b",
    "†a ||",
    "†a ||   ",
    "|| †a",
    "†a &&",
    "&& †a",
    "†a && && †b",
    "†a || || †b",
    "†a ||| †b",
    "†a | †b",
    "†a & †b",
    "†a &&& †b",
    "†a.-",
    "†a.b.-",
    "†a[-]",
    "†a <|> †b",
    "†a *> †b",
    "†a.b*c",
    "†a.b<c",
    "†a.b>c",
    "†a.b|c",
    "†a.b&c",
    "†a.b†c",
    "†a.b\"c",
    "†a.b]",
    "†a.b[0]x",
    "†a.\xC0\x80",
    "†a.b\xFF",
    "†a.\xED\xA0\x80",
    "†a[\"\xC3\"]",
    "†\xC3\xA9",
    "††x",
    "†††x",
};

//  Output paths test_malformed_references must see refused
static const char *s_bad_output_paths [] = {
    "",
    "†",
    "†a..b",
    "†a ||| †b",
    "†a <|",
    "†a <|>",
    "<|> †a",
    "†a *>",
    "†a <|> <|> †b",
    "†a *> *> †b",
    "†a <> †b",
    "†a.b*c",
    "†a.b<c",
    "†a.-.",
    "†a.b\xFF",
    "††x",
};

//  SEMANTICS 2 and 5: every malformed reference is bad_reference with the
//  byte offset named
static void
test_malformed_references (void **state)
{
    for (size_t i = 0; i < sizeof s_bad_references / sizeof s_bad_references [0]; i++)
        s_assert_bad_expr (s_bad_references [i], false);
    for (size_t i = 0; i < sizeof s_bad_output_paths / sizeof s_bad_output_paths [0]; i++)
        s_assert_bad_expr (s_bad_output_paths [i], true);
}

//  SEMANTICS 2: keys exclude white space, all of Unicode's White_Space;
//  the error names the code point and the byte where it starts
static void
test_white_space_in_keys (void **state)
{
    static const char *spaces [] = {
        "\xC2\x85", "\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x8A",
        "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"
    };
    static const char *codes [] = {
        "U+0085", "U+00A0", "U+1680", "U+2000", "U+200A",
        "U+2028", "U+2029", "U+202F", "U+205F", "U+3000"
    };
    for (size_t i = 0; i < sizeof spaces / sizeof spaces [0]; i++) {
        char text [64], want [96];
        for (int output = 0; output < 2; output++) {
            snprintf (text, sizeof text, "†state.ab%scd", spaces [i]);
            act_err_t err = { NULL, "" };
            act_expr_t *expr = act_expr_parse (text, output, &err);
            assert_null (expr);
            assert_string_equal (s_code (&err), ACT_E_BAD_REFERENCE);
            snprintf (want, sizeof want, "white space (%s) in a key at byte 11 of", codes [i]);
            if (strncmp (err.message, want, strlen (want)))
                fail_msg ("%s: \"%s\", expected \"%s ...\"", codes [i], err.message, want);
        }
    }
}

//  act_ref.h: ACT_MAX_SEGMENTS segments and ACT_MAX_OPERANDS references
//  are accepted; one more is bad_reference
static void
test_reference_limits (void **state)
{
    char *at_limit = s_nest ("", "†a", ".b", ACT_MAX_SEGMENTS);
    char *past_limit = s_nest ("", "†a", ".b", ACT_MAX_SEGMENTS + 1);
    act_expr_t *expr = s_expr (at_limit, false);
    assert_int_equal (expr->alts [0].refs [0].nsegs, ACT_MAX_SEGMENTS);
    act_expr_destroy (&expr);
    assert_null (expr);
    s_assert_bad_expr (past_limit, false);
    s_assert_bad_expr (past_limit, true);
    free (at_limit);
    free (past_limit);

    //  Operands joined by &&, by || and by both
    static const char *joins [] = { " && ", " || ", " *> ", " <|> " };
    for (size_t join = 0; join < 4; join++) {
        bool output = join >= 2;
        size_t size = (ACT_MAX_OPERANDS + 1) * (strlen (joins [join]) + 8) + 1;
        char *limit = malloc (size);
        char *over = malloc (size);
        assert_non_null (limit);
        assert_non_null (over);
        strcpy (limit, "†a.x");
        for (int i = 1; i < ACT_MAX_OPERANDS; i++) {
            strcat (limit, joins [join]);
            strcat (limit, "†a.x");
        }
        strcpy (over, limit);
        strcat (over, joins [join]);
        strcat (over, "†a.x");
        expr = s_expr (limit, output);
        size_t total = 0;
        for (size_t alt = 0; alt < expr->nalts; alt++)
            total += expr->alts [alt].nrefs;
        assert_int_equal (total, ACT_MAX_OPERANDS);
        act_expr_destroy (&expr);
        s_assert_bad_expr (over, output);
        free (limit);
        free (over);
    }
    //  33 alternatives of 2 operands: 66 references in one expression
    char *mixed = malloc (33 * 24 + 1);
    assert_non_null (mixed);
    strcpy (mixed, "†a && †b");
    for (int i = 1; i < 33; i++)
        strcat (mixed, " || †a && †b");
    s_assert_bad_expr (mixed, false);
    free (mixed);
}

//  SEMANTICS 2 and 5: what only output paths accept, and what a
//  reference is
static void
test_reference_forms (void **state)
{
    //  "-" and the synonyms are output-path forms
    act_expr_t *expr = s_expr ("†a.-", true);
    assert_int_equal (expr->alts [0].refs [0].nsegs, 1);
    assert_int_equal (expr->alts [0].refs [0].segs [0].type, ACT_SEG_APPEND);
    assert_true (expr->output);
    act_expr_destroy (&expr);
    expr = s_expr ("†a <|> †b", true);
    assert_int_equal (expr->nalts, 2);
    act_expr_destroy (&expr);
    expr = s_expr ("†a *> †b", true);
    assert_int_equal (expr->nalts, 1);
    assert_int_equal (expr->alts [0].nrefs, 2);
    act_expr_destroy (&expr);
    //  A quoted key may hold what a bare key may not
    expr = s_expr ("†a[\"x y*<>|&.\"]", false);
    assert_int_equal (expr->alts [0].refs [0].segs [0].type, ACT_SEG_KEY);
    assert_string_equal (expr->alts [0].refs [0].segs [0].key, "x y*<>|&.");
    assert_false (expr->output);
    act_expr_destroy (&expr);
    //  [""] names the key "" (SEMANTICS 2: any json-string)
    expr = s_expr ("†a[\"\"].b", false);
    assert_int_equal (expr->alts [0].refs [0].nsegs, 2);
    assert_int_equal (expr->alts [0].refs [0].segs [0].type, ACT_SEG_KEY);
    assert_string_equal (expr->alts [0].refs [0].segs [0].key, "");
    act_expr_destroy (&expr);

    //  Only a string that starts with one dagger is a reference; two
    //  daggers make a literal
    assert_true (act_ref_is_reference ("†a"));
    assert_true (act_ref_is_reference ("†"));
    assert_false (act_ref_is_reference ("††x"));
    assert_false (act_ref_is_reference ("††"));
    assert_false (act_ref_is_reference ("x†a"));
    assert_false (act_ref_is_reference (" †a"));
    assert_false (act_ref_is_reference (""));
    assert_true (act_ref_is_escaped ("††x"));
    assert_true (act_ref_is_escaped ("††"));
    assert_false (act_ref_is_escaped ("†x"));
    assert_false (act_ref_is_escaped ("x"));
    assert_false (act_ref_is_escaped (""));
    act_expr_destroy (&expr);   //  Safe on NULL
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_json_refuses_invalid_utf8),
        cmocka_unit_test (test_utf8_valid),
        cmocka_unit_test (test_json_depth_limit),
        cmocka_unit_test (test_json_very_deep_document),
        cmocka_unit_test (test_json_refuses_bad_frames),
        cmocka_unit_test (test_malformed_references),
        cmocka_unit_test (test_white_space_in_keys),
        cmocka_unit_test (test_reference_limits),
        cmocka_unit_test (test_reference_forms),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
