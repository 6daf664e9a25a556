/*  =========================================================================
    actctl_print - what actctl prints: JSON values, failures and their exit codes.
    ========================================================================= */

#include "actctl.h"

void
actctl_print_json (const json_t *value)
{
    char *text = act_json_dumps (value, JSON_INDENT (2));
    printf ("%s\n", text);
    free (text);
}

//  One JSON value on one line, for scripts that read a line per value
void
actctl_print_line (const json_t *value)
{
    char *text = act_json_dump (value);
    printf ("%s\n", text);
    free (text);
}

//  Print a failed request; returns the exit code. No broker reached
//  (unreachable) says what the connection saw; no reply at all (a broker
//  reached once, or --connect-timeout 0) is mostly a broker that is not
//  there, or a CURVE key it refuses, so say what to check.
int
actctl_fail (const actctl_options_t *options, act_err_t *err)
{
    fprintf (stderr, "actctl: %s: %s\n", err->code, err->message);
    if (streq (err->code, ACT_CLIENT_UNREACHABLE))
        return 3;               //  The message says what the connection saw
    if (!streq (err->code, "timeout"))
        return 1;
    fprintf (stderr, "actctl: no reply: is actd running at %s?\n", options->endpoint);
    if (options->curve_server)
        fprintf (stderr, "actctl: with CURVE: is --curve-server the broker's public key, "
                         "and is this client's key allowed?\n");
    return 3;
}

//  A reply of the wrong shape is the broker's error, never printed as if
//  it held nothing: a JSON value of type, or NULL with err set (bad_json)
json_t *
actctl_expect (json_t *answer, json_type type, const char *command, act_err_t *err)
{
    if (!answer || json_typeof (answer) == type)
        return answer;
    json_decref (answer);
    act_err_set (err, ACT_E_BAD_JSON, "%s did not answer %s", command,
                 type == JSON_OBJECT? "an object": "an array");
    return NULL;
}

const char *
actctl_field (const json_t *object, const char *key)
{
    const char *text = json_string_value (json_object_get (object, key));
    return text? text: "?";
}

const char *
actctl_plural (json_int_t count)
{
    return count == 1? "": "s";
}

//  Print a JSON answer and drop it; or, when there is none, the failure
int
actctl_print_answer (const actctl_options_t *options, json_t *answer, act_err_t *err)
{
    if (!answer)
        return actctl_fail (options, err);
    actctl_print_json (answer);
    json_decref (answer);
    return 0;
}
