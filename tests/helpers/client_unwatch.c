/*  =========================================================================
    client_unwatch - a C client destroyed with its watches open, for
    tests/integration/test_client_unwatch.py.

    client_unwatch ENDPOINT CONTEXT COUNT

    Opens COUNT watches of CONTEXT from _seq 1 (the context holds a
    message), takes the first event of each (so each is open at the
    broker), prints "watching" and waits for a line on stdin (the test may
    kill actd meanwhile). Then destroys the client without destroying the
    watches first, prints "destroyed in N ms", destroys the watches (which
    only frees them now) and exits 0; 1 when a watch gave no event.
    ========================================================================= */

#include "actd/act_client.h"

int
main (int argc, char *argv [])
{
    if (argc != 4) {
        fprintf (stderr, "usage: client_unwatch ENDPOINT CONTEXT COUNT\n");
        return 2;
    }
    size_t count = (size_t) atol (argv [3]);
    act_client_t *client = act_client_new (argv [1]);
    if (!client) {
        fprintf (stderr, "client_unwatch: cannot connect to %s\n", argv [1]);
        return 2;
    }
    act_client_set_timeout (client, 30000);
    act_watch_t **watches = calloc (count, sizeof *watches);
    int rc = 0;
    for (size_t n = 0; n < count && rc == 0; n++) {
        act_err_t err = { 0 };
        watches [n] = act_client_watch (client, argv [2], 1, false, &err);
        json_t *event = watches [n]? act_watch_next (watches [n], 30000, &err): NULL;
        if (!event) {
            fprintf (stderr, "client_unwatch: watch %zu gave no event: %s\n", n, err.message);
            rc = 1;
        }
        json_decref (event);
    }
    printf ("watching\n");
    fflush (stdout);
    char line [64];
    if (!fgets (line, sizeof line, stdin))
        rc = 2;
    int64_t start = zclock_mono ();
    act_client_destroy (&client);
    printf ("destroyed in %" PRId64 " ms\n", zclock_mono () - start);
    fflush (stdout);
    for (size_t n = 0; n < count; n++)
        act_watch_destroy (&watches [n]);
    free (watches);
    return rc;
}
