/*  =========================================================================
    client_unread - a C client that stops reading its replies, for the
    max_client_bytes test in tests/integration/test_stall.py.

    client_unread ENDPOINT CONTEXT COUNT WAIT_MS

    Connects (a PING answered), prints "connected", waits for a line on
    stdin, sends COUNT HISTORY requests for CONTEXT then a PING, and once
    the PONG came (actd has read every request: one connection is read in
    order) prints "sent" and waits for another line on stdin (the test
    stops the process meanwhile, so that nothing is read). Then reads until
    each request got a reply or WAIT_MS passed. Prints a line per distinct
    reply ("reply VERB [CODE]: count") and "answered N of COUNT"; exits 0
    when every request got one, 1 otherwise.
    ========================================================================= */

#include "actd/act_client.h"

int
main (int argc, char *argv [])
{
    if (argc != 5) {
        fprintf (stderr, "usage: client_unread ENDPOINT CONTEXT COUNT WAIT_MS\n");
        return 2;
    }
    size_t count = (size_t) atol (argv [3]);
    int64_t wait_ms = atol (argv [4]);
    act_client_t *client = act_client_new (argv [1]);
    act_err_t err;
    if (!client || act_client_ping (client, &err)) {
        fprintf (stderr, "client_unread: no PONG from %s\n", argv [1]);
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
        act_client_send (client, request, "HISTORY", argv [2], "1", "1000", NULL);
        zhashx_insert (requests, request, client);
    }
    act_client_set_timeout (client, 60000);
    char ping [24];
    act_client_send (client, ping, "PING", NULL);
    act_reply_t *pong = act_client_wait (client, ping, NULL);
    if (!pong || !streq (pong->verb, "PONG")) {
        fprintf (stderr, "client_unread: no PONG after the requests\n");
        return 2;
    }
    act_reply_destroy (&pong);
    printf ("sent\n");
    fflush (stdout);
    if (!fgets (line, sizeof line, stdin))
        return 2;
    zhashx_t *verbs = zhashx_new ();            //  "VERB CODE" -> count
    zhashx_set_destructor (verbs, (zhashx_destructor_fn *) zstr_free);
    int64_t deadline = zclock_mono () + wait_ms;
    size_t answered = 0;
    while (answered < count && zclock_mono () < deadline) {
        act_reply_t *reply = act_client_recv (client, (int) (deadline - zclock_mono ()));
        if (reply && zhashx_lookup (requests, reply->request)) {
            zhashx_delete (requests, reply->request);
            answered++;
            char *code = streq (reply->verb, "ERROR")? act_reply_arg (reply, 0): NULL;
            char *key = zsys_sprintf ("%s%s%s", reply->verb, code? " ": "", code? code: "");
            char *seen = zhashx_lookup (verbs, key);
            zhashx_update (verbs, key, zsys_sprintf ("%ld", seen? atol (seen) + 1: 1L));
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
