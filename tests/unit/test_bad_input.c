/*  =========================================================================
    test_bad_input - bad input gets a clear error, no crash, and changes
    nothing (act_err.h: "nothing in libactd asserts on input").

    JSON frames, UTF-8, references, calls, appended messages and context
    ids, each at and past its limits; and the shape of what the context
    stores and shows (SEMANTICS.md sections 1, 4 and 6).
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <cmocka.h>
#include <jansson.h>
#include "actd/act.h"

//  --------------------------------------------------------------------------
//  Helpers

//  A string literal and its size in bytes (it may hold NUL bytes)
#define S_BYTES(literal) literal, sizeof (literal) - 1

static const char *
s_code (const act_err_t *err)
{
    return err->code? err->code: "(no code)";
}

//  A string of size bytes of fill, the caller frees
static char *
s_repeat (char fill, size_t size)
{
    char *text = malloc (size + 1);
    assert_non_null (text);
    memset (text, fill, size);
    text [size] = 0;
    return text;
}

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

//  A JSON text for tests written in C strings; fails the test if invalid
static json_t *
s_json (const char *text)
{
    json_error_t error;
    json_t *value = json_loads (text, JSON_DECODE_ANY, &error);
    if (!value)
        fail_msg ("bad test JSON %s: %s", text, error.text);
    return value;
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

static act_expr_t *
s_expr (const char *text, bool output)
{
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (text, output, &err);
    if (!expr)
        fail_msg ("act_expr_parse (\"%s\", %s) refused: %s: %s", text,
                  output? "output": "parameter", s_code (&err), err.message);
    return expr;
}

//  act_call_parse must refuse the call with code
static void
s_assert_bad_call_value (json_t *call, const char *code)
{
    char *text = json_dumps (call, JSON_ENCODE_ANY | JSON_COMPACT);
    act_err_t err = { NULL, "" };
    act_call_t *parsed = act_call_parse (call, &err);
    if (parsed) {
        act_call_destroy (&parsed);
        fail_msg ("act_call_parse accepted %.200s", text);
    }
    if (strcmp (s_code (&err), code) != 0)
        fail_msg ("act_call_parse %.200s: code %s (%s), expected %s",
                  text, s_code (&err), err.message, code);
    if (err.message [0] == 0)
        fail_msg ("act_call_parse %.200s: empty message", text);
    free (text);
}

static void
s_assert_bad_call (const char *text, const char *code)
{
    json_t *call = s_json (text);
    s_assert_bad_call_value (call, code);
    json_decref (call);
}

static act_call_t *
s_call (const char *text)
{
    json_t *json = s_json (text);
    act_err_t err = { NULL, "" };
    act_call_t *call = act_call_parse (json, &err);
    if (!call)
        fail_msg ("act_call_parse %s refused: %s: %s", text, s_code (&err), err.message);
    //  The call holds its own reference
    json_decref (json);
    return call;
}

static json_t *
s_append (act_ctx_t *ctx, const char *text)
{
    json_t *message = s_json (text);
    act_err_t err = { NULL, "" };
    json_t *stored = act_ctx_append (ctx, message, &err);
    if (!stored)
        fail_msg ("act_ctx_append %s refused: %s: %s", text, s_code (&err), err.message);
    json_decref (message);
    return stored;
}

//  The output of a call: value (JSON text) at path with method
static json_t *
s_output (act_ctx_t *ctx, const char *path, const char *value, act_method_t method,
          const char *instance, json_t *call, act_err_t *err)
{
    act_expr_t *expr = s_expr (path, true);
    json_t *json = s_json (value);
    json_t *stored = act_ctx_output (ctx, &expr->alts [0], json, method, instance,
                                     call, "call-1", err);
    json_decref (json);
    act_expr_destroy (&expr);
    return stored;
}

static void
s_assert_resolves (act_ctx_t *ctx, const char *text, const char *instance,
                   const char *want)
{
    act_expr_t *expr = s_expr (text, false);
    json_t *got = act_ctx_resolve (ctx, expr, instance);
    act_expr_destroy (&expr);
    if (!want) {
        if (got) {
            char *shown = json_dumps (got, JSON_ENCODE_ANY | JSON_COMPACT);
            fail_msg ("%s resolved to %s, expected absent", text, shown);
        }
        return;
    }
    json_t *expected = s_json (want);
    if (!got)
        fail_msg ("%s is absent, expected %s", text, want);
    if (!json_equal (got, expected)) {
        char *shown = json_dumps (got, JSON_ENCODE_ANY | JSON_COMPACT);
        fail_msg ("%s resolved to %s, expected %s", text, shown, want);
    }
    json_decref (expected);
    json_decref (got);
}

//  RFC 3339 UTC with milliseconds: ^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$
static bool
s_is_date (const char *text)
{
    const char *shape = "dddd-dd-ddTdd:dd:dd.dddZ";
    if (!text || strlen (text) != strlen (shape))
        return false;
    for (size_t i = 0; shape [i]; i++)
        if (shape [i] == 'd'? !isdigit ((unsigned char) text [i]): text [i] != shape [i])
            return false;
    return true;
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

//  SEMANTICS 2 and 5: every malformed reference is bad_reference with the
//  byte offset named
static void
test_malformed_references (void **state)
{
    static const char *bad [] = {
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
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        s_assert_bad_expr (bad [i], false);

    static const char *bad_output [] = {
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
    for (size_t i = 0; i < sizeof bad_output / sizeof bad_output [0]; i++)
        s_assert_bad_expr (bad_output [i], true);
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


//  --------------------------------------------------------------------------
//  Calls

//  SEMANTICS 7: a call that breaks a rule is refused with the right code
static void
test_bad_calls (void **state)
{
    //  Not a call
    s_assert_bad_call ("[]", ACT_E_BAD_CALL);
    s_assert_bad_call ("\"echo\"", ACT_E_BAD_CALL);
    s_assert_bad_call ("null", ACT_E_BAD_CALL);
    s_assert_bad_call ("{}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"tool\":\"echo\"}", ACT_E_BAD_CALL);
    //  _tool: a string of 1 to 256 bytes
    s_assert_bad_call ("{\"_tool\":5}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":null}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":[\"echo\"]}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"\"}", ACT_E_BAD_CALL);
    char *long_tool = s_repeat ('t', ACT_MAX_TOOL + 1);
    json_t *call = json_pack ("{s:s}", "_tool", long_tool);
    s_assert_bad_call_value (call, ACT_E_BAD_CALL);
    json_decref (call);
    long_tool [ACT_MAX_TOOL] = 0;
    call = json_pack ("{s:s}", "_tool", long_tool);
    act_err_t err = { NULL, "" };
    act_call_t *parsed = act_call_parse (call, &err);
    assert_non_null (parsed);
    assert_int_equal (strlen (parsed->tool), ACT_MAX_TOOL);
    act_call_destroy (&parsed);
    assert_null (parsed);
    json_decref (call);
    free (long_tool);

    //  _outputPath: a string, and an output path
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":5}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":[\"†a.b\"]}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":\"state.out\"}", ACT_E_BAD_REFERENCE);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":\"†state..out\"}", ACT_E_BAD_REFERENCE);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":\"\"}", ACT_E_BAD_REFERENCE);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":\"†a ||| †b\"}", ACT_E_BAD_REFERENCE);
    //  _outputMethod: one of the six
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":\"†a.b\",\"_outputMethod\":\"bogus\"}",
                       ACT_E_BAD_METHOD);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_outputPath\":\"†a.b\",\"_outputMethod\":\"SET\"}",
                       ACT_E_BAD_METHOD);
    //  _instance: 1 to 128 bytes
    s_assert_bad_call ("{\"_tool\":\"t\",\"_instance\":\"\"}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_instance\":5}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_instance\":null}", ACT_E_BAD_CALL);
    char *long_instance = s_repeat ('i', ACT_MAX_INSTANCE + 1);
    call = json_pack ("{s:s, s:s}", "_tool", "t", "_instance", long_instance);
    s_assert_bad_call_value (call, ACT_E_BAD_CALL);
    json_decref (call);
    free (long_instance);
    //  _id: 1 to 128 bytes
    s_assert_bad_call ("{\"_tool\":\"t\",\"_id\":\"\"}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_id\":7}", ACT_E_BAD_CALL);
    char *long_id = s_repeat ('k', ACT_MAX_CALL_ID + 1);
    call = json_pack ("{s:s, s:s}", "_tool", "t", "_id", long_id);
    s_assert_bad_call_value (call, ACT_E_BAD_CALL);
    json_decref (call);
    free (long_id);
    //  _timeout: a positive integer
    s_assert_bad_call ("{\"_tool\":\"t\",\"_timeout\":-1}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_timeout\":0}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_timeout\":1.5}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_timeout\":\"100\"}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_timeout\":true}", ACT_E_BAD_CALL);
    //  _retry: an object of numbers
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":5}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":[]}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":\"3\"}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":{\"max_attempts\":\"3\"}}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":{\"initial_ms\":true}}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":{\"backoff\":\"2\"}}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":{\"max_ms\":{}}}", ACT_E_BAD_CALL);
    s_assert_bad_call ("{\"_tool\":\"t\",\"_retry\":{\"max_attempts\":null}}", ACT_E_BAD_CALL);

    //  SEMANTICS 2: a bad reference at any depth of the parameters names
    //  the string and the byte offset
    static const char *bad_params [] = {
        "{\"_tool\":\"t\",\"a\":{\"b\":{\"c\":\"†bad..ref\"}}}",
        "{\"_tool\":\"t\",\"a\":[{\"b\":[\"†bad..ref\"]}]}",
        "{\"_tool\":\"t\",\"a\":\"†bad..ref\"}",
        "{\"_tool\":\"t\",\"a\":{\"b\":{\"c\":\"†bad..ref || †ok\"}}}",
    };
    for (size_t i = 0; i < sizeof bad_params / sizeof bad_params [0]; i++) {
        json_t *json = s_json (bad_params [i]);
        act_err_clear (&err);
        parsed = act_call_parse (json, &err);
        if (parsed)
            fail_msg ("act_call_parse accepted %s", bad_params [i]);
        if (strcmp (s_code (&err), ACT_E_BAD_REFERENCE) != 0)
            fail_msg ("act_call_parse %s: code %s, expected bad_reference",
                      bad_params [i], s_code (&err));
        if (!strstr (err.message, "byte") || !strstr (err.message, "†bad..ref"))
            fail_msg ("act_call_parse %s: message \"%s\" does not name the "
                      "string and the byte offset", bad_params [i], err.message);
        json_decref (json);
    }
    //  Meta-properties are never resolved, so they are never parsed as
    //  parameter references
    parsed = s_call ("{\"_tool\":\"t\",\"_id\":\"†not..a.ref\"}");
    assert_int_equal (parsed->nrefs, 0);
    act_call_destroy (&parsed);
}

//  SEMANTICS 7: a valid call's meta-properties, and its defaults
static void
test_call_fields (void **state)
{
    act_call_t *call = s_call ("{\"_tool\":\"echo\",\"text\":\"hi\"}");
    assert_string_equal (call->tool, "echo");
    assert_null (call->output);
    assert_int_equal (call->method, ACT_SET);
    assert_null (call->instance);
    assert_null (call->id);
    assert_int_equal (call->timeout_ms, -1);
    assert_int_equal (call->retry.max_attempts, -1);
    assert_int_equal (call->retry.initial_ms, -1);
    assert_true (call->retry.backoff < 0);
    assert_int_equal (call->retry.max_ms, -1);
    assert_int_equal (call->nrefs, 0);
    assert_true (json_is_object (call->json));
    assert_string_equal (json_string_value (json_object_get (call->json, "text")), "hi");
    act_call_destroy (&call);
    assert_null (call);
    act_call_destroy (&call);   //  Safe on NULL

    call = s_call ("{\"_tool\":\"crm.update\",\"_outputPath\":\"†state.a || †state.b\","
                   "\"_outputMethod\":\"push\",\"_instance\":\"employee_A\","
                   "\"_id\":\"key-1\",\"_timeout\":5000,"
                   "\"_retry\":{\"max_attempts\":3,\"initial_ms\":100,"
                   "\"backoff\":2.5,\"max_ms\":1000}}");
    assert_string_equal (call->tool, "crm.update");
    assert_non_null (call->output);
    assert_true (call->output->output);
    assert_int_equal (call->output->nalts, 2);
    assert_int_equal (call->method, ACT_PUSH);
    assert_string_equal (call->instance, "employee_A");
    assert_string_equal (call->id, "key-1");
    assert_int_equal (call->timeout_ms, 5000);
    assert_int_equal (call->retry.max_attempts, 3);
    assert_int_equal (call->retry.initial_ms, 100);
    assert_true (call->retry.backoff == 2.5);
    assert_int_equal (call->retry.max_ms, 1000);
    act_call_destroy (&call);

    //  Fields of _retry not given are -1; the output path takes synonyms
    call = s_call ("{\"_tool\":\"t\",\"_outputPath\":\"†s.a *> †s.b\","
                   "\"_retry\":{\"max_attempts\":2}}");
    assert_int_equal (call->output->nalts, 1);
    assert_int_equal (call->output->alts [0].nrefs, 2);
    assert_int_equal (call->method, ACT_SET);
    assert_int_equal (call->retry.max_attempts, 2);
    assert_int_equal (call->retry.initial_ms, -1);
    assert_true (call->retry.backoff < 0);
    assert_int_equal (call->retry.max_ms, -1);
    act_call_destroy (&call);

    //  The limits themselves are accepted
    char *instance = s_repeat ('i', ACT_MAX_INSTANCE);
    char *id = s_repeat ('k', ACT_MAX_CALL_ID);
    json_t *json = json_pack ("{s:s, s:s, s:s, s:i}", "_tool", "t", "_instance", instance,
                              "_id", id, "_timeout", 1);
    act_err_t err = { NULL, "" };
    call = act_call_parse (json, &err);
    if (!call)
        fail_msg ("call at the limits refused: %s: %s", s_code (&err), err.message);
    assert_int_equal (strlen (call->instance), ACT_MAX_INSTANCE);
    assert_int_equal (strlen (call->id), ACT_MAX_CALL_ID);
    assert_int_equal (call->timeout_ms, 1);
    act_call_destroy (&call);
    json_decref (json);
    free (instance);
    free (id);

    //  Every reference is counted, at any depth; "††" is a literal
    call = s_call ("{\"_tool\":\"t\",\"_outputPath\":\"†state.out\","
                   "\"a\":\"†state.x\","
                   "\"b\":{\"_keep\":\"†state.y.z[1]\","
                   "\"list\":[\"†state.missing || †state.x\",\"††literal\",3,"
                   "{\"deep\":\"†state.y\"}]},"
                   "\"c\":\"plain\",\"d\":\"text with † inside\"}");
    assert_int_equal (call->nrefs, 4);
    for (size_t i = 0; i < call->nrefs; i++) {
        assert_non_null (call->refs [i]);
        assert_false (call->refs [i]->output);
    }
    act_call_destroy (&call);
}

//  SEMANTICS 2 and 7: the parameters a worker receives
static void
test_call_params (void **state)
{
    act_ctx_t *ctx = act_ctx_new ("calls");
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"state\","
                                "\"data\":{\"x\":1,\"y\":{\"z\":[1,2]}}}"));
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"state\","
                                "\"_instance\":\"i1\",\"data\":{\"x\":\"one\"}}"));
    const char *text =
        "{\"_tool\":\"t\",\"_outputPath\":\"†state.out\",\"_id\":\"k\","
        "\"a\":\"†state.x\","
        "\"b\":{\"_keep\":\"†state.y.z[1]\","
        "\"list\":[\"†state.missing || †state.x\",\"††lit\",3,"
        "{\"deep\":\"†state.y\"}]},"
        "\"c\":\"plain\",\"d\":\"††\",\"e\":\"text with † inside\","
        "\"f\":\"†state.x && †state.y.z\"}";
    act_call_t *call = s_call (text);
    act_err_t err = { NULL, "" };
    json_t *params = act_call_params (call, ctx, &err);
    if (!params)
        fail_msg ("act_call_params refused: %s: %s", s_code (&err), err.message);
    json_t *want = s_json ("{\"a\":1,\"b\":{\"_keep\":2,\"list\":[1,\"†lit\",3,"
                           "{\"deep\":{\"z\":[1,2]}}]},\"c\":\"plain\",\"d\":\"†\","
                           "\"e\":\"text with † inside\",\"f\":[1,2]}");
    if (!json_equal (params, want)) {
        char *shown = json_dumps (params, JSON_COMPACT);
        fail_msg ("act_call_params gave %s", shown);
    }
    json_decref (params);
    json_decref (want);
    //  The call itself is not changed
    assert_string_equal (json_string_value (json_object_get (call->json, "a")), "†state.x");
    act_call_destroy (&call);

    //  In the call's instance
    call = s_call ("{\"_tool\":\"t\",\"_instance\":\"i1\",\"a\":\"†state.x\","
                   "\"b\":[\"†state.y.z\"]}");
    params = act_call_params (call, ctx, &err);
    assert_non_null (params);
    want = s_json ("{\"a\":\"one\",\"b\":[[1,2]]}");
    assert_true (json_equal (params, want));
    json_decref (params);
    json_decref (want);
    act_call_destroy (&call);

    //  An absent reference is unresolved_reference, named
    call = s_call ("{\"_tool\":\"t\",\"p\":{\"q\":[\"†state.nothing\"]}}");
    act_err_clear (&err);
    params = act_call_params (call, ctx, &err);
    assert_null (params);
    assert_string_equal (s_code (&err), ACT_E_UNRESOLVED_REFERENCE);
    if (!strstr (err.message, "†state.nothing"))
        fail_msg ("message \"%s\" does not name the reference", err.message);
    act_call_destroy (&call);
    //  A gate with an absent operand is absent too
    call = s_call ("{\"_tool\":\"t\",\"p\":\"†state.x && †state.nothing\"}");
    act_err_clear (&err);
    params = act_call_params (call, ctx, &err);
    assert_null (params);
    assert_string_equal (s_code (&err), ACT_E_UNRESOLVED_REFERENCE);
    act_call_destroy (&call);
    act_ctx_destroy (&ctx);
}


//  --------------------------------------------------------------------------
//  Contexts

//  act_ctx.h: a refused append changes nothing, and says why
static void
test_bad_appends (void **state)
{
    act_ctx_t *ctx = act_ctx_new ("appends");
    json_decref (s_append (ctx, "{\"type\":\"data\",\"data\":{\"user\":{\"name\":\"Alex\"}}}"));
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"state\","
                                "\"_instance\":\"i1\",\"data\":{\"n\":1}}"));
    json_decref (s_append (ctx, "{\"type\":\"text\",\"text\":\"hello\"}"));

    char *long_instance = s_repeat ('i', ACT_MAX_INSTANCE + 1);
    char long_message [512];
    snprintf (long_message, sizeof long_message,
              "{\"type\":\"data\",\"_instance\":\"%s\",\"data\":{}}", long_instance);
    free (long_instance);

    const struct {
        const char *message;
        const char *code;
    } bad [] = {
        { "[]", ACT_E_BAD_ARGUMENT },
        { "\"data\"", ACT_E_BAD_ARGUMENT },
        { "null", ACT_E_BAD_ARGUMENT },
        { "{}", ACT_E_BAD_ARGUMENT },
        { "{\"data\":{\"a\":1}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":5,\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":null,\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"kind\":\"1x\",\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"kind\":\"\",\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"kind\":\"a.b\",\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"kind\":5,\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"_instance\":\"\",\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"_instance\":5,\"data\":{}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\"}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"kind\":\"state\"}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"data\":{},\"_outputMethod\":\"nope\"}", ACT_E_BAD_METHOD },
        { "{\"type\":\"data\",\"data\":{},\"_seq\":7}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"data\":{},\"_date\":\"2026-11-22T08:00:00.123Z\"}",
          ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"data\":{},\"_outputPath\":\"†data.x\"}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"data\":{},\"_call\":{\"_tool\":\"t\"}}", ACT_E_BAD_ARGUMENT },
        { "{\"type\":\"data\",\"data\":{},\"_callId\":\"c1\"}", ACT_E_BAD_ARGUMENT },
        //  The kind's root is an object: push, concat and a non-object
        //  assign do not apply to it
        { "{\"type\":\"data\",\"data\":5,\"_outputMethod\":\"push\"}", ACT_E_TYPE_MISMATCH },
        { "{\"type\":\"data\",\"data\":[5],\"_outputMethod\":\"concat\"}", ACT_E_TYPE_MISMATCH },
        { "{\"type\":\"data\",\"data\":5,\"_outputMethod\":\"assign\"}", ACT_E_TYPE_MISMATCH },
        { "{\"type\":\"data\",\"kind\":\"state\",\"_instance\":\"i1\",\"data\":\"s\","
          "\"_outputMethod\":\"concat\"}", ACT_E_TYPE_MISMATCH },
        { long_message, ACT_E_BAD_ARGUMENT },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        json_t *view_before = act_ctx_view (ctx);
        uint64_t seq_before = act_ctx_next_seq (ctx);
        json_t *message = s_json (bad [i].message);
        act_err_t err = { NULL, "" };
        json_t *stored = act_ctx_append (ctx, message, &err);
        if (stored)
            fail_msg ("act_ctx_append accepted %.200s", bad [i].message);
        if (strcmp (s_code (&err), bad [i].code) != 0)
            fail_msg ("act_ctx_append %.200s: code %s (%s), expected %s",
                      bad [i].message, s_code (&err), err.message, bad [i].code);
        if (err.message [0] == 0)
            fail_msg ("act_ctx_append %.200s: empty message", bad [i].message);
        if (act_ctx_next_seq (ctx) != seq_before)
            fail_msg ("act_ctx_append %.200s moved next_seq", bad [i].message);
        json_t *view_after = act_ctx_view (ctx);
        if (!json_equal (view_before, view_after))
            fail_msg ("act_ctx_append %.200s changed the view", bad [i].message);
        json_decref (view_before);
        json_decref (view_after);
        json_decref (message);
    }
    assert_int_equal (act_ctx_next_seq (ctx), 4);
    s_assert_resolves (ctx, "†data", NULL, "{\"user\":{\"name\":\"Alex\"}}");
    s_assert_resolves (ctx, "†state", "i1", "{\"n\":1}");
    act_ctx_destroy (&ctx);
}

//  SEMANTICS 1: context ids are 1 to 128 bytes of [A-Za-z0-9._:@/-];
//  kinds are [A-Za-z_][A-Za-z0-9_-]*
static void
test_context_ids_and_kinds (void **state)
{
    char *longest = s_repeat ('a', ACT_MAX_CONTEXT_ID);
    char *too_long = s_repeat ('a', ACT_MAX_CONTEXT_ID + 1);
    const char *bad [] = { "", too_long, "a b", "a†", "†", "a\tb", "a#b", "a?b", "é" };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        act_ctx_t *ctx = act_ctx_new (bad [i]);
        if (ctx) {
            act_ctx_destroy (&ctx);
            fail_msg ("act_ctx_new accepted \"%.40s\"", bad [i]);
        }
        assert_false (act_ctx_id_valid (bad [i]));
    }
    const char *good [] = { "a", longest, "Az09._:@/-", "conv/2026-11-22@host:1" };
    for (size_t i = 0; i < sizeof good / sizeof good [0]; i++) {
        act_ctx_t *ctx = act_ctx_new (good [i]);
        if (!ctx)
            fail_msg ("act_ctx_new refused \"%.40s\"", good [i]);
        assert_true (act_ctx_id_valid (good [i]));
        assert_string_equal (act_ctx_id (ctx), good [i]);
        assert_int_equal (act_ctx_next_seq (ctx), 1);
        act_ctx_destroy (&ctx);
        assert_null (ctx);
    }
    act_ctx_t *none = NULL;
    act_ctx_destroy (&none);    //  Safe on NULL
    free (longest);
    free (too_long);

    const char *kinds [] = { "data", "_x", "a-b", "A9", "user_profile", "x" };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds [0]; i++)
        if (!act_kind_valid (kinds [i]))
            fail_msg ("act_kind_valid refused \"%s\"", kinds [i]);
    const char *not_kinds [] = { "", "1x", "-a", "a.b", "a b", "†", "a†", "é" };
    for (size_t i = 0; i < sizeof not_kinds / sizeof not_kinds [0]; i++)
        if (act_kind_valid (not_kinds [i]))
            fail_msg ("act_kind_valid accepted \"%s\"", not_kinds [i]);
}

//  SEMANTICS 1 and 4: the stored message of an output, in display form,
//  with its metadata
static void
test_stored_output_message (void **state)
{
    act_ctx_t *ctx = act_ctx_new ("shape");
    json_t *first = s_append (ctx, "{\"type\":\"data\",\"data\":{\"user\":"
                                   "{\"name\":\"Alex\",\"status\":\"active\"}}}");
    assert_int_equal (json_integer_value (json_object_get (first, "_seq")), 1);
    assert_true (s_is_date (json_string_value (json_object_get (first, "_date"))));
    assert_string_equal (json_string_value (json_object_get (first, "type")), "data");
    json_decref (first);

    json_t *call = s_json ("{\"_tool\":\"crm.update\",\"_outputPath\":\"†data.user.status\","
                           "\"id\":\"†data.user.name\"}");
    act_err_t err = { NULL, "" };
    json_t *stored = s_output (ctx, "†data.user.status", "\"inactive\"", ACT_SET,
                               NULL, call, &err);
    if (!stored)
        fail_msg ("output refused: %s: %s", s_code (&err), err.message);
    assert_true (json_is_array (stored));
    assert_int_equal (json_array_size (stored), 1);
    json_t *message = json_array_get (stored, 0);
    assert_string_equal (json_string_value (json_object_get (message, "type")), "data");
    assert_string_equal (json_string_value (json_object_get (message, "kind")), "data");
    json_t *display = s_json ("{\"user\":{\"status\":\"inactive\"}}");
    assert_true (json_equal (json_object_get (message, "data"), display));
    json_decref (display);
    assert_string_equal (json_string_value (json_object_get (message, "_outputPath")),
                         "†data.user.status");
    assert_string_equal (json_string_value (json_object_get (message, "_outputMethod")), "set");
    assert_true (json_equal (json_object_get (message, "_call"), call));
    assert_string_equal (json_string_value (json_object_get (message, "_callId")), "call-1");
    assert_int_equal (json_integer_value (json_object_get (message, "_seq")), 2);
    const char *date = json_string_value (json_object_get (message, "_date"));
    if (!s_is_date (date))
        fail_msg ("_date \"%s\" is not RFC 3339 UTC with milliseconds", date? date: "(none)");
    assert_null (json_object_get (message, "_instance"));
    json_decref (stored);
    s_assert_resolves (ctx, "†data.user", NULL, "{\"name\":\"Alex\",\"status\":\"inactive\"}");

    //  In an instance, with an index and the append position in the path
    stored = s_output (ctx, "†data.list", "[\"a\"]", ACT_SET, "i1", call, &err);
    assert_non_null (stored);
    json_decref (stored);
    stored = s_output (ctx, "†data.list[1]", "\"b\"", ACT_SET, "i1", call, &err);
    assert_non_null (stored);
    message = json_array_get (stored, 0);
    display = s_json ("{\"list\":{\"1\":\"b\"}}");
    assert_true (json_equal (json_object_get (message, "data"), display));
    json_decref (display);
    assert_string_equal (json_string_value (json_object_get (message, "_instance")), "i1");
    assert_int_equal (json_integer_value (json_object_get (message, "_seq")), 4);
    json_decref (stored);
    stored = s_output (ctx, "†data.list.-", "\"c\"", ACT_SET, "i1", call, &err);
    assert_non_null (stored);
    message = json_array_get (stored, 0);
    display = s_json ("{\"list\":{\"-\":\"c\"}}");
    assert_true (json_equal (json_object_get (message, "data"), display));
    json_decref (display);
    json_decref (stored);
    s_assert_resolves (ctx, "†data.list", "i1", "[\"a\",\"b\",\"c\"]");
    s_assert_resolves (ctx, "†data.list", NULL, NULL);
    json_decref (call);
    act_ctx_destroy (&ctx);
}

//  act_ctx_output_bare: the messages of act_ctx_output without "data", the
//  same _seq and index (global and instance scope); a refusal is the same
static void
test_output_bare (void **state)
{
    (void) state;
    act_ctx_t *full = act_ctx_new ("bare");
    act_ctx_t *bare = act_ctx_new ("bare");
    json_t *value = s_json ("{\"v\":[1,2],\"s\":\"x\"}");
    const char *instances [] = { NULL, "i1" };
    for (int i = 0; i < 2; i++) {
        act_expr_t *expr = s_expr ("†data.a.b && †data.c", true);
        act_err_t err = { NULL, "" };
        json_t *with = act_ctx_output (full, &expr->alts [0], value, ACT_SET, instances [i],
                                       NULL, "call-1", &err);
        json_t *without = act_ctx_output_bare (bare, &expr->alts [0], value, ACT_SET,
                                               instances [i], NULL, "call-1", &err);
        assert_non_null (with);
        assert_non_null (without);
        assert_int_equal (json_array_size (without), 2);
        for (size_t m = 0; m < 2; m++) {
            json_t *message = json_deep_copy (json_array_get (with, m));
            assert_non_null (json_object_get (message, "data"));
            assert_null (json_object_get (json_array_get (without, m), "data"));
            json_object_del (message, "data");
            //  Same members, same order, same _seq; only _date may differ
            json_object_del (message, "_date");
            json_t *other = json_deep_copy (json_array_get (without, m));
            json_object_del (other, "_date");
            char *a = act_json_dump (message), *b = act_json_dump (other);
            assert_string_equal (a, b);
            free (a);
            free (b);
            json_decref (message);
            json_decref (other);
        }
        json_decref (with);
        json_decref (without);
        s_assert_resolves (bare, "†data.a.b.v", instances [i], "[1,2]");
        s_assert_resolves (bare, "†data.c.s", instances [i], "\"x\"");
        json_t *view_full = act_ctx_view (full), *view_bare = act_ctx_view (bare);
        assert_true (json_equal (view_full, view_bare));
        json_decref (view_full);
        json_decref (view_bare);
        act_expr_destroy (&expr);
    }
    //  A refused write appends nothing, with the same code
    act_expr_t *expr = s_expr ("†data.a.b.v.k", true);
    act_err_t err = { NULL, "" };
    assert_null (act_ctx_output_bare (bare, &expr->alts [0], value, ACT_SET, NULL, NULL,
                                      "call-2", &err));
    assert_string_equal (s_code (&err), ACT_E_BAD_PATH);
    assert_int_equal (act_ctx_next_seq (bare), act_ctx_next_seq (full));
    act_expr_destroy (&expr);
    json_decref (value);

    //  The index may keep the value itself: the caller drops it, and later
    //  writes below it (in place) and fan-outs that write under their own
    //  target read back as with a copy
    const char *paths [] = { "†data.p", "†data.p.q && †data.p", "†data.r && †data.r.q" };
    for (int p = 0; p < 3; p++) {
        expr = s_expr (paths [p], true);
        json_t *shared = s_json ("{\"k\":[1,{\"m\":2}]}");
        json_t *copied = json_deep_copy (shared);
        json_decref (act_ctx_output (full, &expr->alts [0], copied, ACT_SET, NULL, NULL,
                                     "call-3", &err));
        json_decref (act_ctx_output_bare (bare, &expr->alts [0], shared, ACT_SET, NULL, NULL,
                                          "call-3", &err));
        json_decref (shared);
        json_decref (copied);
        act_expr_destroy (&expr);
    }
    json_t *five = json_integer (5);
    const char *below [] = { "†data.p.k.1.m", "†data.r.q.k.-", "†data.r.k.0" };
    for (int b = 0; b < 3; b++) {
        expr = s_expr (below [b], true);
        json_decref (act_ctx_output (full, &expr->alts [0], five, ACT_SET, NULL, NULL,
                                     "call-4", &err));
        json_decref (act_ctx_output (bare, &expr->alts [0], five, ACT_SET, NULL, NULL,
                                     "call-4", &err));
        act_expr_destroy (&expr);
    }
    json_decref (five);
    s_assert_resolves (bare, "†data.p", NULL, "{\"k\":[1,{\"m\":5}]}");
    s_assert_resolves (bare, "†data.r", NULL,
                       "{\"k\":[5,{\"m\":2}],\"q\":{\"k\":[1,{\"m\":2},5]}}");
    json_t *view_full = act_ctx_view (full), *view_bare = act_ctx_view (bare);
    assert_true (json_equal (view_full, view_bare));
    json_decref (view_full);
    json_decref (view_bare);
    act_ctx_destroy (&full);
    act_ctx_destroy (&bare);
}

//  SEMANTICS 3: a fan-out writes one message per target, in order, and is
//  all or nothing
static void
test_fan_out (void **state)
{
    act_ctx_t *ctx = act_ctx_new ("fan");
    json_decref (s_append (ctx, "{\"type\":\"data\",\"data\":{\"n\":5}}"));
    json_t *call = s_json ("{\"_tool\":\"t\",\"_outputPath\":\"†data.a && †data.b\"}");
    act_err_t err = { NULL, "" };
    json_t *stored = s_output (ctx, "†data.a && †data.b", "{\"v\":1}", ACT_SET,
                               NULL, call, &err);
    if (!stored)
        fail_msg ("fan-out refused: %s: %s", s_code (&err), err.message);
    assert_int_equal (json_array_size (stored), 2);
    json_t *first = json_array_get (stored, 0);
    json_t *second = json_array_get (stored, 1);
    assert_int_equal (json_integer_value (json_object_get (first, "_seq")), 2);
    assert_int_equal (json_integer_value (json_object_get (second, "_seq")), 3);
    assert_string_equal (json_string_value (json_object_get (first, "_outputPath")), "†data.a");
    assert_string_equal (json_string_value (json_object_get (second, "_outputPath")), "†data.b");
    json_t *display = s_json ("{\"b\":{\"v\":1}}");
    assert_true (json_equal (json_object_get (second, "data"), display));
    json_decref (display);
    json_decref (stored);
    json_decref (call);
    assert_int_equal (act_ctx_next_seq (ctx), 4);
    s_assert_resolves (ctx, "†data.a.v", NULL, "1");
    s_assert_resolves (ctx, "†data.b", NULL, "{\"v\":1}");

    //  The second target is a number: nothing is appended, not even the first
    call = s_json ("{\"_tool\":\"t\",\"_outputPath\":\"†data.list && †data.n\","
                   "\"_outputMethod\":\"push\"}");
    act_expr_t *expr = s_expr ("†data.list && †data.n", true);
    json_t *value = json_string ("x");
    json_t *view_before = act_ctx_view (ctx);
    act_err_clear (&err);
    assert_int_equal (act_ctx_output_check (ctx, &expr->alts [0], value, ACT_PUSH,
                                            NULL, &err), -1);
    assert_string_equal (s_code (&err), ACT_E_TYPE_MISMATCH);
    act_err_clear (&err);
    stored = act_ctx_output (ctx, &expr->alts [0], value, ACT_PUSH, NULL, call,
                             "call-2", &err);
    assert_null (stored);
    assert_string_equal (s_code (&err), ACT_E_TYPE_MISMATCH);
    assert_int_equal (act_ctx_next_seq (ctx), 4);
    json_t *view_after = act_ctx_view (ctx);
    assert_true (json_equal (view_before, view_after));
    json_decref (view_before);
    json_decref (view_after);
    s_assert_resolves (ctx, "†data.list", NULL, NULL);
    s_assert_resolves (ctx, "†data.n", NULL, "5");

    //  The check alone appends nothing, even when the write applies
    act_expr_destroy (&expr);
    expr = s_expr ("†data.list && †data.other", true);
    act_err_clear (&err);
    assert_int_equal (act_ctx_output_check (ctx, &expr->alts [0], value, ACT_PUSH,
                                            NULL, &err), 0);
    assert_int_equal (act_ctx_next_seq (ctx), 4);
    s_assert_resolves (ctx, "†data.list", NULL, NULL);
    act_expr_destroy (&expr);
    json_decref (value);
    json_decref (call);
    act_ctx_destroy (&ctx);
}

//  SEMANTICS 6: the merged view, one entry per identity in order of first
//  appearance, without metadata, and its text rendering
static void
test_merged_view (void **state)
{
    act_ctx_t *ctx = act_ctx_new ("view");
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"user\","
                                "\"data\":{\"name\":\"John Doe\"}}"));
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"state\","
                                "\"data\":{\"step\":1}}"));
    json_decref (s_append (ctx, "{\"type\":\"text\",\"text\":\"not data\"}"));
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"user\",\"data\":{\"age\":30},"
                                "\"description\":\"The user we talk to\","
                                "\"schema\":{\"type\":\"object\"}}"));
    json_decref (s_append (ctx, "{\"type\":\"data\",\"kind\":\"user\",\"_instance\":\"i1\","
                                "\"data\":{\"age\":31}}"));

    json_t *view = act_ctx_view (ctx);
    json_t *entry;
    assert_true (json_is_array (view));
    assert_int_equal (json_array_size (view), 3);
    json_t *want = s_json ("{\"type\":\"data\",\"kind\":\"user\","
                           "\"data\":{\"name\":\"John Doe\",\"age\":30},"
                           "\"description\":\"The user we talk to\","
                           "\"schema\":{\"type\":\"object\"}}");
    if (!json_equal (json_array_get (view, 0), want)) {
        char *shown = json_dumps (json_array_get (view, 0), JSON_COMPACT);
        fail_msg ("view entry 0 is %s", shown);
    }
    json_decref (want);
    //  state has no description nor schema: they are absent or null
    entry = json_array_get (view, 1);
    want = s_json ("{\"type\":\"data\",\"kind\":\"state\",\"data\":{\"step\":1}}");
    json_t *trimmed = json_deep_copy (entry);
    if (json_is_null (json_object_get (trimmed, "description")))
        json_object_del (trimmed, "description");
    if (json_is_null (json_object_get (trimmed, "schema")))
        json_object_del (trimmed, "schema");
    if (!json_equal (trimmed, want)) {
        char *shown = json_dumps (entry, JSON_COMPACT);
        fail_msg ("view entry 1 is %s", shown);
    }
    json_decref (trimmed);
    json_decref (want);
    entry = json_array_get (view, 2);
    assert_string_equal (json_string_value (json_object_get (entry, "kind")), "user");
    assert_string_equal (json_string_value (json_object_get (entry, "_instance")), "i1");
    want = s_json ("{\"name\":\"John Doe\",\"age\":31}");
    assert_true (json_equal (json_object_get (entry, "data"), want));
    json_decref (want);
    json_decref (view);

    //  An output's metadata stays out of the view
    json_t *call = s_json ("{\"_tool\":\"t\",\"_outputPath\":\"†user.email\"}");
    act_err_t err = { NULL, "" };
    json_t *stored = s_output (ctx, "†user.email", "\"j@d.example\"", ACT_SET, NULL,
                               call, &err);
    assert_non_null (stored);
    json_decref (stored);
    json_decref (call);
    view = act_ctx_view (ctx);
    entry = json_array_get (view, 0);
    const char *key;
    json_t *member;
    json_object_foreach (entry, key, member)
        if (key [0] == '_')
            fail_msg ("global view entry shows metadata %s", key);
    assert_string_equal (json_string_value (json_object_get (
        json_object_get (entry, "data"), "email")), "j@d.example");
    json_decref (view);

    char *text = act_ctx_view_text (ctx);
    assert_non_null (text);
    const char *heading = strstr (text, "## Data: ¶user");
    const char *name = strstr (text, "\"name\": \"John Doe\"");
    const char *age = strstr (text, "\"age\": 30");
    const char *description = strstr (text, "The user we talk to");
    const char *schema = strstr (text, "Schema for ¶user:");
    if (!heading || !name || !age || !description || !schema || !strstr (text, "## Data: ¶state"))
        fail_msg ("view text lacks a part:\n%s", text);
    //  In the order of SEMANTICS 6: heading, pretty JSON, description, schema
    assert_true (heading < name);
    assert_true (name < description);
    assert_true (description < schema);
    assert_non_null (strstr (schema, "\"type\": \"object\""));
    //  The JSON is pretty-printed: the heading's line ends before it
    assert_non_null (memchr (heading, '\n', (size_t) (name - heading)));
    //  No description nor schema was given for state
    assert_null (strstr (text, "Schema for ¶state"));
    free (text);
    act_ctx_destroy (&ctx);
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
        cmocka_unit_test (test_bad_calls),
        cmocka_unit_test (test_call_fields),
        cmocka_unit_test (test_call_params),
        cmocka_unit_test (test_bad_appends),
        cmocka_unit_test (test_context_ids_and_kinds),
        cmocka_unit_test (test_stored_output_message),
        cmocka_unit_test (test_fan_out),
        cmocka_unit_test (test_output_bare),
        cmocka_unit_test (test_merged_view),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
