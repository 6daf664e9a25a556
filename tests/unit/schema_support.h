/*  =========================================================================
    schema_support - what the schema unit tests share: a call's text
    validated in place against a schema (act_schema_valid_call), as the
    broker validates a CALL.

    Include after <cmocka.h> and "actd/act.h".
    ========================================================================= */

#ifndef SCHEMA_SUPPORT_H_INCLUDED
#define SCHEMA_SUPPORT_H_INCLUDED

#include <stdlib.h>
#include <string.h>

//  The message ("" when valid) of the call text validated in place; NULL
//  when the text is not a call the broker would take
static inline char *
schema_call_message (act_schema_t *schema, const char *text)
{
    act_err_t err = { 0 };
    act_call_t *call = act_call_new (NULL, text, strlen (text), &err);
    if (!call)
        return NULL;
    bool valid = act_schema_valid_call (schema, call, &err);
    act_call_destroy (&call);
    return strdup (valid? "": err.message);
}

#endif
