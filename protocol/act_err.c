/*  =========================================================================
    act_err - an error as a value.
    ========================================================================= */

#include <stdio.h>
#include <string.h>
#include "actd/act_err.h"
#include "actd/act_json.h"

//  Messages often quote what a client sent, and they travel inside JSON
//  outcomes: replace each byte that is not part of valid UTF-8 (including a
//  sequence cut by truncation) with '?', so every message is valid UTF-8.
static void
s_make_utf8 (char *message)
{
    size_t size = strlen (message);
    size_t offset;
    while (!act_utf8_valid (message, size, &offset))
        message [offset] = '?';
}

int
act_err_set (act_err_t *err, const char *code, const char *format, ...)
{
    if (err) {
        err->code = code;
        va_list args;
        va_start (args, format);
        vsnprintf (err->message, sizeof err->message, format, args);
        va_end (args);
        s_make_utf8 (err->message);
    }
    return -1;
}

void
act_err_clear (act_err_t *err)
{
    if (err) {
        err->code = NULL;
        err->message [0] = 0;
    }
}
