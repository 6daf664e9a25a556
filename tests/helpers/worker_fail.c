/*  =========================================================================
    worker_fail - a C worker whose handler fails with a message as long as
    the call asks, for tests/integration/test_worker_fail.py.

    worker_fail ENDPOINT
        Serves c-fail as worker c-fail: its params {"text": s, "repeat": n}
        make the message, s n times over (then, with "tail": t, the bytes
        FF FE, not UTF-8, and t); it fails with code w_huge, not
        retryable, and prints "run ATTEMPT" for each task. With
        "progress": p, it first reports progress {"file": "pFFFE"} made
        by json_pack, which refuses it (NULL details: it prints "progress
        RC"), then {"pFFFE": "pFFFE"}, its key and string ending with
        bytes that are not UTF-8. Until SIGTERM.
    ========================================================================= */

#include "actd/act_worker.h"

//  Fails with the call's text repeated
static void
s_fail (act_task_t *task, void *arg)
{
    (void) arg;
    json_t *params = act_task_params (task);
    const char *text = json_string_value (json_object_get (params, "text"));
    json_int_t repeat = json_integer_value (json_object_get (params, "repeat"));
    size_t size = text? strlen (text): 0;
    if (repeat < 0 || repeat > 100000000 || size * (size_t) repeat > 100000000) {
        act_task_fail (task, "bad_params", "repeat up to 100 MB", false);
        return;
    }
    char *message = malloc (size * (size_t) repeat + 1);
    for (json_int_t index = 0; index < repeat; index++)
        memcpy (message + size * (size_t) index, text, size);
    message [size * (size_t) repeat] = 0;
    //  "tail" given: the message ends with bytes that are not UTF-8, then it
    if (json_string_value (json_object_get (params, "tail"))) {
        char *bad = zsys_sprintf ("%s\xff\xfe%s", message,
                                  json_string_value (json_object_get (params, "tail")));
        free (message);
        message = bad;
    }
    //  "progress" given: a PROGRESS whose key and string are not UTF-8
    const char *progress = json_string_value (json_object_get (params, "progress"));
    if (progress) {
        char *bad = zsys_sprintf ("%s\xff\xfe", progress);
        json_t *details = json_pack ("{ss}", "file", bad);
        printf ("progress %d\n", act_task_progress (task, details));
        json_decref (details);
        details = json_object ();
        json_object_set_new_nocheck (details, bad, json_string_nocheck (bad));
        act_task_progress (task, details);
        json_decref (details);
        zstr_free (&bad);
    }
    printf ("run %lld\n", act_task_attempt (task));
    fflush (stdout);
    act_task_fail (task, "w_huge", message, false);
    free (message);
}

int
main (int argc, char *argv [])
{
    if (argc != 2) {
        fprintf (stderr, "usage: worker_fail ENDPOINT\n");
        return 2;
    }
    act_worker_t *worker = act_worker_new (argv [1], "c-fail");
    act_worker_set_heartbeat (worker, 200, 3);
    act_worker_serve (worker, "c-fail", s_fail, NULL);
    int rc = act_worker_run (worker);
    act_worker_destroy (&worker);
    return rc;
}
