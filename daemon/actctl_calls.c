/*  =========================================================================
    actctl_calls - actctl's commands about calls: call, plan, status, cancel, and
    waiting for an outcome (--wait).
    ========================================================================= */

#include "actctl.h"

//  How often --wait on a terminal asks STATUS
#define S_LIVE_INTERVAL_MS  250

//  True when a call's outcome says it ended ok
static bool
s_ok (const json_t *outcome)
{
    const char *status = json_string_value (json_object_get (outcome, "status"));
    return status && streq (status, "ok");
}

//  Print a call's outcome; returns the exit code (0 when it ended ok)
static int
s_outcome (actctl_options_t *options, const json_t *outcome)
{
    const char *status = json_string_value (json_object_get (outcome, "status"));
    if (options->json)
        actctl_print_json (outcome);
    else {
        printf ("call %s: %s", json_string_value (json_object_get (outcome, "call_id")), status);
        json_t *written = json_object_get (outcome, "written");
        if (json_object_get (outcome, "branch"))
            printf (", branch %" JSON_INTEGER_FORMAT,
                    json_integer_value (json_object_get (outcome, "branch")));
        if (json_array_size (written)) {
            char *refs = act_json_dump (written);
            char *seqs = act_json_dump (json_object_get (outcome, "seqs"));
            printf (", wrote %s at seqs %s", refs, seqs);
            free (refs);
            free (seqs);
        }
        json_int_t attempts = json_integer_value (json_object_get (outcome, "attempts"));
        printf (" (%" JSON_INTEGER_FORMAT " attempt%s)\n", attempts, actctl_plural (attempts));
        json_t *error = json_object_get (outcome, "error");
        if (error)
            printf ("error %s: %s\n", json_string_value (json_object_get (error, "code")),
                    json_string_value (json_object_get (error, "message")));
        if (json_object_get (outcome, "result"))
            actctl_print_json (json_object_get (outcome, "result"));
    }
    return s_ok (outcome)? 0: 1;
}

//  The live line of --wait on a terminal: the call's state, attempts and
//  last progress, written over the previous line. The progress is cut so
//  the line stays one line, which the carriage return can overwrite.
static void
s_live_show (const char *call_id, const json_t *status)
{
    json_int_t attempts = json_integer_value (json_object_get (status, "attempts"));
    json_t *details = json_object_get (status, "progress");
    char *progress = details? act_json_dump (details): NULL;
    if (progress && strlen (progress) > 50)
        strcpy (progress + 47, "...");
    printf ("\r\033[Kcall %s: %s, %" JSON_INTEGER_FORMAT " attempt%s%s%s", call_id,
            json_string_value (json_object_get (status, "state")), attempts,
            actctl_plural (attempts), progress? ", progress ": "", progress? progress: "");
    fflush (stdout);
    free (progress);
}

static void
s_live_clear (void)
{
    printf ("\r\033[K");
    fflush (stdout);
}

//  The live line of --wait on a terminal: ask STATUS every
//  S_LIVE_INTERVAL_MS and show it until the call has ended (its worker's
//  progress is no change of state, so no watch event says it). Returns
//  the last STATUS, or NULL with err set.
static json_t *
s_live_wait (act_client_t *client, actctl_options_t *options, const char *call_id,
             act_err_t *err)
{
    int64_t deadline = zclock_mono () + options->timeout;
    json_t *status = NULL;
    while (true) {
        json_decref (status);
        status = act_client_status (client, call_id, err);
        if (!status
        ||  act_client_state_ended (json_string_value (json_object_get (status, "state")))
        ||  zclock_mono () > deadline)
            break;
        s_live_show (call_id, status);
        zclock_sleep (S_LIVE_INTERVAL_MS);
    }
    s_live_clear ();
    return status;
}

//  Wait for a call to end: a fire-and-forget call, which has no DONE, from
//  a watch of its calls (act_client_wait_call), or any call under --wait
//  on a terminal, showing its state meanwhile. A call with an output path
//  (its own, or the one its tool prescribes) prints the outcome as DONE
//  carries it (STATUS holds the same object), else the final state.
static int
s_wait_status (act_client_t *client, actctl_options_t *options, const char *call_id)
{
    act_err_t err = { 0 };
    json_t *status = options->live? s_live_wait (client, options, call_id, &err)
                                  : act_client_wait_call (client, call_id, &err);
    if (!status && !streq (err.code, ACT_E_TIMEOUT))
        return actctl_fail (options, &err);
    const char *state = json_string_value (json_object_get (status, "state"));
    int rc;
    if (!act_client_state_ended (state)) {
        fprintf (stderr, "actctl: timeout: call %s has not ended\n", call_id);
        rc = 3;
    }
    else
    if (json_object_get (status, "output_path") && json_object_get (status, "outcome"))
        rc = s_outcome (options, json_object_get (status, "outcome"));
    else {
        if (options->json)
            actctl_print_json (status);
        else
            printf ("call %s: %s\n", call_id, state);
        rc = streq (state, "ok")? 0: 1;
    }
    json_decref (status);
    return rc;
}

int
actctl_call (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    if (nargs != 2)
        return -1;
    act_err_t err = { 0 };
    char *call_id = NULL;
    json_t *outcome = NULL;
    //  Live, actctl asks STATUS itself instead of waiting for DONE
    bool done = options->wait && !options->live;
    if (act_client_call (client, args [0], args [1], done, &call_id, &outcome, &err)) {
        free (call_id);
        return actctl_fail (options, &err);
    }
    int rc = 0;
    if (outcome)
        rc = s_outcome (options, outcome);
    else
    if (options->wait)
        rc = s_wait_status (client, options, call_id);
    else
    if (options->json)
        printf ("{\"call_id\":\"%s\"}\n", call_id);
    else
        printf ("accepted: call %s\n", call_id);
    json_decref (outcome);
    free (call_id);
    return rc;
}

int
actctl_plan (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    if (nargs != 2)
        return -1;
    act_err_t err = { 0 };
    json_t *ids = NULL, *outcomes = NULL;
    if (act_client_plan (client, args [0], args [1], options->wait, &ids,
                         options->wait? &outcomes: NULL, &err)) {
        json_decref (ids);
        json_decref (outcomes);
        return actctl_fail (options, &err);
    }
    int rc = 0;
    const char *id;
    json_t *outcome;
    if (options->json) {
        actctl_print_json (outcomes? outcomes: ids);
        //  The exit code says whether every waited call ended ok, as below
        json_object_foreach (outcomes, id, outcome)
            rc |= s_ok (outcome)? 0: 1;
    }
    else {
        char *list = act_json_dump (ids);
        printf ("accepted: calls %s\n", list);
        free (list);
        json_object_foreach (outcomes, id, outcome)
            rc |= s_outcome (options, outcome);
    }
    json_decref (ids);
    json_decref (outcomes);
    return rc;
}

int
actctl_status (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    const char *call_id = args [0];
    (void) nargs;
    act_err_t err = { 0 };
    json_t *status = act_client_status (client, call_id, &err);
    if (!status)
        return actctl_fail (options, &err);
    if (options->json)
        actctl_print_json (status);
    else {
        json_int_t attempts = json_integer_value (json_object_get (status, "attempts"));
        printf ("call %s in context %s: %s, %" JSON_INTEGER_FORMAT " attempt%s\n", call_id,
                json_string_value (json_object_get (status, "context")),
                json_string_value (json_object_get (status, "state")),
                attempts, actctl_plural (attempts));
        const char *keys [] = { "waiting_on", "progress", "outcome" };
        for (size_t i = 0; i < 3; i++)
            if (json_object_get (status, keys [i])) {
                char *text = act_json_dump (json_object_get (status, keys [i]));
                printf ("%s: %s\n", keys [i], text);
                free (text);
            }
    }
    json_decref (status);
    return 0;
}

int
actctl_cancel (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    const char *call_id = args [0];
    (void) nargs;
    act_err_t err = { 0 };
    if (act_client_cancel (client, call_id, &err))
        return actctl_fail (options, &err);
    printf (options->json? "{\"cancelled\":\"%s\"}\n"
                         : "call %s cancelled (or it had already ended)\n", call_id);
    return 0;
}
