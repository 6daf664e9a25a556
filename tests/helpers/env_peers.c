/*  =========================================================================
    env_peers - a C client and a C worker made with no endpoint, so that
    libactd takes it and the CURVE keys from the environment ($ACTD_ENDPOINT,
    $ACTD_WORKER_ENDPOINT, $ACTD_SERVER_KEY, $ACTD_CERT), for
    tests/integration/test_tenants.py.

    env_peers worker NAME ACTIVITY
        Serves ACTIVITY (its result: the call's "text", upper-cased) as
        worker NAME until SIGTERM.
    env_peers client CONTEXT ACTIVITY OTHER
        Calls ACTIVITY in CONTEXT with {"text": "hello", "_outputPath":
        "†env"}, waits for it, then asks for the VIEW of context OTHER.
        Prints "ok RESULT" (or "call CODE") and "other CODE" (or "other
        allowed").

    Either prints "no peer" and exits 3 when libactd refuses to make it
    from the environment.
    ========================================================================= */

#include <ctype.h>
#include "actd/act_client.h"
#include "actd/act_worker.h"

//  The call's text, upper-cased
static void
s_upper (act_task_t *task, void *arg)
{
    const char *text = json_string_value (json_object_get (act_task_params (task), "text"));
    char *upper = strdup (text? text: "");
    for (char *c = upper; *c; c++)
        *c = (char) toupper ((unsigned char) *c);
    json_t *result = json_string (upper);
    act_task_result (task, result, 0);
    json_decref (result);
    free (upper);
}

static int
s_worker (const char *name, const char *activity)
{
    act_worker_t *worker = act_worker_new (NULL, name);
    if (!worker) {
        printf ("no peer\n");
        return 3;
    }
    act_worker_set_heartbeat (worker, 200, 3);
    act_worker_serve (worker, activity, s_upper, NULL);
    int rc = act_worker_run (worker);
    act_worker_destroy (&worker);
    return rc;
}

static int
s_client (const char *context, const char *activity, const char *other)
{
    act_client_t *client = act_client_new (NULL);
    if (!client) {
        printf ("no peer\n");
        return 3;
    }
    act_client_set_timeout (client, 20000);
    char *call = zsys_sprintf ("{\"_tool\": \"%s\", \"text\": \"hello\", "
                               "\"_outputPath\": \"\u2020env\"}", activity);
    char *call_id = NULL;
    json_t *outcome = NULL;
    act_err_t err = { 0 };
    if (act_client_call (client, context, call, true, &call_id, &outcome, &err) == 0)
        printf ("ok %s\n", json_string_value (json_object_get (outcome, "result")));
    else
        printf ("call %s\n", err.code);
    json_t *view = act_client_view (client, other, &err);
    printf ("other %s\n", view? "allowed": err.code);
    json_decref (view);
    json_decref (outcome);
    free (call_id);
    zstr_free (&call);
    act_client_destroy (&client);
    return 0;
}

int
main (int argc, char *argv [])
{
    if (argc == 4 && streq (argv [1], "worker"))
        return s_worker (argv [2], argv [3]);
    if (argc == 5 && streq (argv [1], "client"))
        return s_client (argv [2], argv [3], argv [4]);
    fprintf (stderr, "usage: env_peers worker NAME ACTIVITY | "
                     "env_peers client CONTEXT ACTIVITY OTHER\n");
    return 2;
}
