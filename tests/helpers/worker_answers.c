/*  =========================================================================
    worker_answers - a C worker whose answers are as large as the call
    asks, for tests/integration/test_worker_answers.py.

    worker_answers ENDPOINT [MAX_MESSAGE_BYTES [GRACE_MS]]
        Serves, as worker c-answers with capacity 4 (heartbeat 200 ms,
        liveness 3), with act_worker_set_max_message_bytes and
        act_worker_set_grace when given (MAX_MESSAGE_BYTES 0: the default):
        - big {"n": N}: its result is a string of N 'x' (N + 2 bytes);
        - bigprogress {"n": N}: reports progress, a string of N 'p', prints
          "progress RC" (act_task_progress's), then its result is "done";
        - sleep {"ms": M}: its result, M ms later, is {"cancelled": bool};
          prints "cancel ID" when the broker cancels it;
        - stopme: stops the worker (act_worker_stop), then answers "stopped";
        - fail {"n": N}: fails with code w_long, a message of N 'f'.
        Until SIGTERM; prints "stopped" when act_worker_run returns.
    ========================================================================= */

#include "actd/act_worker.h"

//  A text of n times c (the caller frees it)
static char *
s_text (json_int_t n, char c)
{
    char *text = malloc ((size_t) n + 1);
    memset (text, c, (size_t) n);
    text [n] = 0;
    return text;
}

//  A JSON string of n times c
static json_t *
s_string (json_int_t n, char c)
{
    char *text = s_text (n, c);
    json_t *string = json_string (text);
    free (text);
    return string;
}

//  The size the call asks for, 0 to 100 MB
static json_int_t
s_size (act_task_t *task)
{
    json_int_t n = json_integer_value (json_object_get (act_task_params (task), "n"));
    return n < 0 || n > 100000000? 0: n;
}

static void
s_big (act_task_t *task, void *arg)
{
    (void) arg;
    json_t *result = s_string (s_size (task), 'x');
    act_task_result (task, result, 0);
    json_decref (result);
}

static void
s_bigprogress (act_task_t *task, void *arg)
{
    (void) arg;
    json_t *details = s_string (s_size (task), 'p');
    printf ("progress %d\n", act_task_progress (task, details));
    fflush (stdout);
    json_decref (details);
    json_t *result = json_string ("done");
    act_task_result (task, result, 0);
    json_decref (result);
}

static void
s_cancelled (act_task_t *task, void *arg)
{
    (void) arg;
    printf ("cancel %s\n", act_task_id (task));
    fflush (stdout);
}

static void
s_woke (act_worker_t *worker, void *arg)
{
    (void) worker;
    act_task_t *task = (act_task_t *) arg;
    json_t *result = json_pack ("{sb}", "cancelled", act_task_cancelled (task));
    act_task_result (task, result, 0);
    json_decref (result);
}

static void
s_sleep (act_task_t *task, void *arg)
{
    (void) arg;
    act_task_on_cancel (task, s_cancelled, NULL);
    json_int_t ms = json_integer_value (json_object_get (act_task_params (task), "ms"));
    act_worker_timer (act_task_worker (task), ms > 0 && ms < 600000? (int) ms: 1, s_woke, task);
}

static void
s_fail (act_task_t *task, void *arg)
{
    (void) arg;
    char *message = s_text (s_size (task), 'f');
    act_task_fail (task, "w_long", message, false);
    free (message);
}

static void
s_stopme (act_task_t *task, void *arg)
{
    (void) arg;
    act_worker_stop (act_task_worker (task));
    json_t *result = json_string ("stopped");
    act_task_result (task, result, 0);
    json_decref (result);
}

int
main (int argc, char *argv [])
{
    if (argc < 2 || argc > 4) {
        fprintf (stderr, "usage: worker_answers ENDPOINT [MAX_MESSAGE_BYTES [GRACE_MS]]\n");
        return 2;
    }
    act_worker_t *worker = act_worker_new (argv [1], "c-answers");
    act_worker_set_heartbeat (worker, 200, 3);
    act_worker_set_capacity (worker, 4);
    size_t most = argc > 2? strtoul (argv [2], NULL, 10): 0;
    if (most)
        act_worker_set_max_message_bytes (worker, most);
    if (argc > 3)
        act_worker_set_grace (worker, atoi (argv [3]));
    act_worker_serve (worker, "big", s_big, NULL);
    act_worker_serve (worker, "bigprogress", s_bigprogress, NULL);
    act_worker_serve (worker, "sleep", s_sleep, NULL);
    act_worker_serve (worker, "stopme", s_stopme, NULL);
    act_worker_serve (worker, "fail", s_fail, NULL);
    int rc = act_worker_run (worker);
    printf ("stopped\n");
    fflush (stdout);
    act_worker_destroy (&worker);
    return rc;
}
