/*  =========================================================================
    client_unread - a C client that stops reading its replies, for the
    max_client_bytes test in tests/integration/test_stall.py.

    client_unread ENDPOINT CONTEXT COUNT WAIT_MS

    Connects (a PING answered), prints "connected", waits for a line on
    stdin, sends COUNT HISTORY requests for CONTEXT, and once the last one
    is answered (with COUNT well past the 64 HISTORY requests actd lets a
    client have pending, it is refused busy at once: actd has read every
    request, one connection being read in order) prints "sent" and waits for
    another line on stdin (the test stops the process meanwhile, so that
    nothing is read). Then reads until each request got a reply or WAIT_MS
    passed. Prints a line per distinct reply ("reply VERB [CODE]: count")
    and "answered N of COUNT"; exits 0 when every request got one, 1
    otherwise.
    ========================================================================= */

#include "actd/act_client.h"

//  Count reply under its verb (and code) in verbs
static void
s_tally (zhashx_t *verbs, act_reply_t *reply)
{
    char *code = streq (reply->verb, "ERROR")? act_reply_arg (reply, 0): NULL;
    char *key = zsys_sprintf ("%s%s%s", reply->verb, code? " ": "", code? code: "");
    char *seen = zhashx_lookup (verbs, key);
    zhashx_update (verbs, key, zsys_sprintf ("%ld", seen? atol (seen) + 1: 1L));
    zstr_free (&key);
    free (code);
}

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
    char last [24] = "";
    for (size_t n = 0; n < count; n++) {
        act_client_send (client, last, "HISTORY", argv [2], "1", "1000", NULL);
        zhashx_insert (requests, last, client);
    }
    act_client_set_timeout (client, 60000);
    act_reply_t *mark = act_client_wait (client, last, NULL);
    if (!mark) {
        fprintf (stderr, "client_unread: no reply to the last request\n");
        return 2;
    }
    zhashx_t *verbs = zhashx_new ();            //  "VERB CODE" -> count
    zhashx_set_destructor (verbs, (zhashx_destructor_fn *) zstr_free);
    s_tally (verbs, mark);
    zhashx_delete (requests, last);
    act_reply_destroy (&mark);
    size_t answered = 1;
    printf ("sent\n");
    fflush (stdout);
    if (!fgets (line, sizeof line, stdin))
        return 2;
    int64_t deadline = zclock_mono () + wait_ms;
    while (answered < count && zclock_mono () < deadline) {
        act_reply_t *reply = act_client_recv (client, (int) (deadline - zclock_mono ()));
        if (reply && zhashx_lookup (requests, reply->request)) {
            zhashx_delete (requests, reply->request);
            answered++;
            s_tally (verbs, reply);
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
