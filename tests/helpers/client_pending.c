/*  =========================================================================
    client_pending - requests left pending on a C client's connection, for
    tests/integration/test_client_drop.py.

    client_pending ENDPOINT COUNT WAIT_MS

    Connects (a PING answered: the connection is up), prints "connected",
    waits for a line on stdin, then sends COUNT PINGs at once and reads
    replies until each request got one or WAIT_MS passed. Prints a line
    per distinct reply ("reply VERB [CODE]" with a count) and "answered N
    of COUNT"; exits 0 when every request got a reply, 1 otherwise.
    ========================================================================= */

#include "actd/act_client.h"

int
main (int argc, char *argv [])
{
    if (argc != 4) {
        fprintf (stderr, "usage: client_pending ENDPOINT COUNT WAIT_MS\n");
        return 2;
    }
    size_t count = (size_t) atol (argv [2]);
    int64_t wait_ms = atol (argv [3]);
    act_client_t *client = act_client_new (argv [1]);
    act_err_t err;
    if (!client || act_client_ping (client, &err)) {
        fprintf (stderr, "client_pending: no PONG from %s\n", argv [1]);
        return 2;
    }
    printf ("connected\n");
    fflush (stdout);
    char line [64];
    if (!fgets (line, sizeof line, stdin))
        return 2;
    zhashx_t *requests = zhashx_new ();         //  Request id -> unanswered
    for (size_t n = 0; n < count; n++) {
        char request [24];
        act_client_send (client, request, "PING", NULL);
        zhashx_insert (requests, request, client);
    }
    zhashx_t *verbs = zhashx_new ();            //  "VERB CODE" -> count
    zhashx_set_destructor (verbs, (zhashx_destructor_fn *) zstr_free);
    int64_t deadline = zclock_mono () + wait_ms;
    size_t answered = 0;
    while (answered < count && zclock_mono () < deadline) {
        act_reply_t *reply = act_client_recv (client, (int) (deadline - zclock_mono ()));
        if (!reply)
            continue;
        if (zhashx_lookup (requests, reply->request)) {
            zhashx_delete (requests, reply->request);
            answered++;
            char *code = streq (reply->verb, "ERROR")? act_reply_arg (reply, 0): NULL;
            char *key = zsys_sprintf ("%s%s%s", reply->verb, code? " ": "", code? code: "");
            char *seen = zhashx_lookup (verbs, key);
            char *now = zsys_sprintf ("%ld", seen? atol (seen) + 1: 1L);
            zhashx_update (verbs, key, now);
            zstr_free (&key);
            free (code);
        }
        act_reply_destroy (&reply);
    }
    for (char *seen = zhashx_first (verbs); seen; seen = zhashx_next (verbs))
        printf ("reply %s: %s\n", (const char *) zhashx_cursor (verbs), seen);
    printf ("answered %zu of %zu\n", answered, count);
    fflush (stdout);
    zhashx_destroy (&verbs);
    zhashx_destroy (&requests);
    act_client_destroy (&client);
    return answered == count? 0: 1;
}
