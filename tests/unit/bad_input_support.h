/*  =========================================================================
    bad_input_support - what the bad input tests share (test_bad_input.c,
    test_bad_input_calls.c, test_bad_input_contexts.c): error codes shown,
    long strings, JSON texts and references parsed from C strings, and
    messages appended to a context, failing the test when the library
    refuses what it should take.

    Include after <cmocka.h>.
    ========================================================================= */

#ifndef BAD_INPUT_SUPPORT_H_INCLUDED
#define BAD_INPUT_SUPPORT_H_INCLUDED

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "actd/act.h"

//  The code of err, or (no code) when it has none
static inline const char *
s_code (const act_err_t *err)
{
    return err->code? err->code: "(no code)";
}

//  A string of size bytes of fill, the caller frees
static inline char *
s_repeat (char fill, size_t size)
{
    char *text = malloc (size + 1);
    assert_non_null (text);
    memset (text, fill, size);
    text [size] = 0;
    return text;
}

//  A JSON text for tests written in C strings; fails the test if invalid
static inline json_t *
s_json (const char *text)
{
    json_error_t error;
    json_t *value = json_loads (text, JSON_DECODE_ANY, &error);
    if (!value)
        fail_msg ("bad test JSON %s: %s", text, error.text);
    return value;
}

//  The expression text (an output path when output); a refusal fails the test
static inline act_expr_t *
s_expr (const char *text, bool output)
{
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (text, output, &err);
    if (!expr)
        fail_msg ("act_expr_parse (\"%s\", %s) refused: %s: %s", text,
                  output? "output": "parameter", s_code (&err), err.message);
    return expr;
}

//  Append the JSON text to ctx; the stored message (the caller drops it)
static inline json_t *
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

#endif
