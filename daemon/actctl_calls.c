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

//  status when it is a STATUS as the commands read it, an object with a
//  string state; else NULL, status dropped, with err set (bad_json). A
//  NULL status (a request that failed, err set) stays NULL
static json_t *
s_status_checked (json_t *status, act_err_t *err)
{
    status = actctl_expect (status, JSON_OBJECT, "STATUS", err);
    if (status && !json_is_string (json_object_get (status, "state"))) {
        json_decref (status);
        act_err_set (err, ACT_E_BAD_JSON, "STATUS without a string state");
        return NULL;
    }
    return status;
}

//  Print a call's outcome; returns the exit code (0 when it ended ok)
static int
s_outcome (actctl_options_t *options, const json_t *outcome)
{
    const char *status = json_string_value (json_object_get (outcome, "status"));
    if (options->json)
        actctl_print_json (outcome);
    else {
        printf ("call %s: %s", actctl_field (outcome, "call_id"), status? status: "?");
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
            printf ("error %s: %s\n", actctl_field (error, "code"),
                    actctl_field (error, "message"));
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
            actctl_field (status, "state"), attempts,
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
        status = s_status_checked (act_client_status (client, call_id, err), err);
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

//  Print that call_id was accepted, as call does without --wait
static void
s_accepted (const actctl_options_t *options, const char *call_id)
{
    if (options->json)
        printf ("{\"call_id\":\"%s\"}\n", call_id);
    else
        printf ("accepted: call %s\n", call_id);
}

//  Say that call_id, accepted, had not ended by --timeout; returns 3. The
//  broker did answer: no hint that it might not be running
static int
s_not_ended (const char *call_id)
{
    fprintf (stderr, "actctl: timeout: call %s has not ended\n", call_id);
    return 3;
}

//  What an ended call's STATUS shows of its end: for a call with an output
//  path (its own, or the one its tool prescribes) the outcome DONE carries
//  (STATUS holds the same object), else the STATUS itself, its final state
static json_t *
s_end_of (json_t *status)
{
    json_t *outcome = json_object_get (status, "outcome");
    return json_object_get (status, "output_path") && outcome? outcome: status;
}

//  True when an ended call's STATUS says it ended ok
static bool
s_end_ok (json_t *status)
{
    json_t *end = s_end_of (status);
    const char *state = json_string_value (json_object_get (status, "state"));
    return end != status? s_ok (end): state && streq (state, "ok");
}

//  Print an ended call's end from its STATUS; returns the exit code (0
//  when it ended ok)
static int
s_end (actctl_options_t *options, const char *call_id, json_t *status)
{
    json_t *end = s_end_of (status);
    if (end != status)
        return s_outcome (options, end);
    if (options->json)
        actctl_print_json (status);
    else
        printf ("call %s: %s\n", call_id,
                actctl_field (status, "state"));
    return s_end_ok (status)? 0: 1;
}

//  Wait for a call to end: a fire-and-forget call, which has no DONE, from
//  a watch of its calls (act_client_wait_call), or any call under --wait
//  on a terminal, showing its state meanwhile. Prints its end (s_end), or
//  when it has not ended by --timeout its id, as without --wait, and that
//  it has not ended (exit 3).
static int
s_wait_status (act_client_t *client, actctl_options_t *options, const char *call_id)
{
    act_err_t err = { 0 };
    json_t *status = options->live? s_live_wait (client, options, call_id, &err)
                                  : s_status_checked (act_client_wait_call (client, call_id,
                                                                            &err), &err);
    if (!status && !streq (err.code, ACT_E_TIMEOUT))
        return actctl_fail (options, &err);
    int rc;
    if (act_client_state_ended (json_string_value (json_object_get (status, "state"))))
        rc = s_end (options, call_id, status);
    else {
        s_accepted (options, call_id);
        rc = s_not_ended (call_id);
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
        //  With a call id the broker accepted the call, and only its DONE
        //  did not come: the id is still the caller's to follow
        int rc;
        if (!call_id)
            rc = actctl_fail (options, &err);
        else {
            s_accepted (options, call_id);
            rc = streq (err.code, ACT_E_TIMEOUT)? s_not_ended (call_id)
                                                : actctl_fail (options, &err);
        }
        free (call_id);
        return rc;
    }
    int rc = 0;
    if (outcome)
        rc = s_outcome (options, outcome);
    else
    if (options->wait)
        rc = s_wait_status (client, options, call_id);
    else
        s_accepted (options, call_id);
    json_decref (outcome);
    free (call_id);
    return rc;
}

//  The STATUS of call_id of a plan once it has ended, waiting for it (from
//  a watch: a fire-and-forget call has no DONE) until deadline; past the
//  deadline, one STATUS says where it stands. NULL with err set when the
//  broker refused or did not answer STATUS.
static json_t *
s_plan_status (act_client_t *client, const actctl_options_t *options, const char *call_id,
               int64_t deadline, act_err_t *err)
{
    json_t *status = NULL;
    int64_t left = deadline - zclock_mono ();
    if (left > 0) {
        act_client_set_timeout (client, (int) (left < INT32_MAX? left: INT32_MAX));
        status = act_client_wait_call (client, call_id, err);
        act_client_set_timeout (client, options->timeout);
    }
    if (!status && (left <= 0 || (err->code && streq (err->code, ACT_E_TIMEOUT)))) {
        *err = (act_err_t) { 0 };
        status = act_client_status (client, call_id, err);
    }
    return s_status_checked (status, err);
}

//  plan --wait: the end of each accepted call, in the order of ids: its
//  DONE's outcome when it came (outcomes), else its STATUS once it has
//  ended (s_plan_status, until deadline). Prints each end as call --wait
//  does, or with --json one object, call id -> its end, or null for a call
//  that had not ended; on standard error, each call not ended. Returns 1
//  when a call ended other than ok (or its STATUS failed), else 3 when one
//  had not ended, else 0.
static int
s_plan_ends (act_client_t *client, actctl_options_t *options, json_t *ids,
             json_t *outcomes, int64_t deadline)
{
    json_t *ends = json_object ();
    bool failed = false, late = false;
    size_t index;
    json_t *entry;
    json_array_foreach (ids, index, entry) {
        const char *call_id = json_string_value (entry);
        if (!call_id)
            continue;           //  A broker's mistake: nothing to ask about
        act_err_t err = { 0 };
        json_t *outcome = json_object_get (outcomes, call_id);
        json_t *status = outcome? NULL
                                : s_plan_status (client, options, call_id, deadline, &err);
        json_object_set_new (ends, call_id, json_null ());
        //  No reply to STATUS either: it has not ended as far as we know
        bool unanswered = err.code && streq (err.code, ACT_E_TIMEOUT);
        if (!outcome && !status && !unanswered) {
            fprintf (stderr, "actctl: %s: %s\n", err.code? err.code: ACT_E_INTERNAL,
                     err.message);
            failed = true;
        }
        else
        if (!outcome && !act_client_state_ended (
                            json_string_value (json_object_get (status, "state")))) {
            s_not_ended (call_id);
            late = true;
        }
        else
        if (options->json) {
            json_object_set (ends, call_id, outcome? outcome: s_end_of (status));
            failed |= !(outcome? s_ok (outcome): s_end_ok (status));
        }
        else
            failed |= (outcome? s_outcome (options, outcome)
                              : s_end (options, call_id, status)) != 0;
        json_decref (status);
    }
    if (options->json)
        actctl_print_json (ends);
    json_decref (ends);
    return failed? 1: late? 3: 0;
}

//  plan: submit the calls; with --wait, print each one's end (s_plan_ends)
int
actctl_plan (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    if (nargs != 2)
        return -1;
    act_err_t err = { 0 };
    json_t *ids = NULL, *outcomes = NULL;
    int64_t deadline = zclock_mono () + options->timeout;
    int rc = act_client_plan (client, args [0], args [1], options->wait, &ids,
                              options->wait? &outcomes: NULL, &err);
    //  Without ids the plan was not accepted; with them, only some DONE
    //  did not come in time (or its watch ended): each STATUS tells
    if (rc && !ids) {
        json_decref (outcomes);
        return actctl_fail (options, &err);
    }
    if (!options->json) {
        char *list = act_json_dump (ids);
        printf ("accepted: calls %s\n", list);
        free (list);
    }
    else
    if (!options->wait)
        actctl_print_json (ids);
    rc = 0;
    if (options->wait) {
        if (err.code && !streq (err.code, ACT_E_TIMEOUT))
            fprintf (stderr, "actctl: %s: %s\n", err.code, err.message);
        rc = s_plan_ends (client, options, ids, outcomes,
                          err.code? zclock_mono (): deadline);
        if (err.code && !streq (err.code, ACT_E_TIMEOUT))
            rc = 1;
    }
    json_decref (ids);
    json_decref (outcomes);
    return rc;
}

//  status: the call's STATUS (an object with a string state; another
//  answer is bad_json, exit 1), as lines or as JSON
int
actctl_status (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    const char *call_id = args [0];
    (void) nargs;
    act_err_t err = { 0 };
    json_t *status = s_status_checked (act_client_status (client, call_id, &err), &err);
    if (!status)
        return actctl_fail (options, &err);
    if (options->json)
        actctl_print_json (status);
    else {
        json_int_t attempts = json_integer_value (json_object_get (status, "attempts"));
        printf ("call %s in context %s: %s, %" JSON_INTEGER_FORMAT " attempt%s\n", call_id,
                actctl_field (status, "context"),
                actctl_field (status, "state"),
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
