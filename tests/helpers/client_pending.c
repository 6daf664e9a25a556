/*  =========================================================================
    client_pending - requests left pending on a C client's connection, for
    tests/integration/test_client_drop.py.

    client_pending ENDPOINT PINGS CALLS WAIT_MS [PAD]

    Connects (a PING answered: the connection is up), sends CALLS calls
    with an _outputPath to an activity no worker serves and waits for
    their ACCEPTED, prints "connected", waits for a line on stdin, then
    sends PINGS PINGs at once (with PAD: as many RESOLVEs of a PAD-byte
    path in a context that does not exist, each answered ERROR not_found,
    so that the burst outgrows the socket buffers) and reads replies until each PING got a
    reply and each call its DONE or an ERROR, or WAIT_MS passed. Prints a
    line per distinct final reply ("reply VERB [CODE]: count") and
    "answered N of PINGS+CALLS"; exits 0 when every request got one, 1
    otherwise.
    ========================================================================= */

#include "actd/act_client.h"

int
main (int argc, char *argv [])
{
    if (argc != 5 && argc != 6) {
        fprintf (stderr, "usage: client_pending ENDPOINT PINGS CALLS WAIT_MS [PAD]\n");
        return 2;
    }
    size_t pad = argc == 6? (size_t) atol (argv [5]): 0;
    char *path = NULL;
    if (pad) {
        path = (char *) malloc (pad + 1);
        memcpy (path, "\u2020x.", 5);
        memset (path + 5, 'p', pad > 5? pad - 5: 0);
        path [pad > 5? pad: 5] = 0;
    }
    size_t pings = (size_t) atol (argv [2]);
    size_t calls = (size_t) atol (argv [3]);
    size_t count = pings + calls;
    int64_t wait_ms = atol (argv [4]);
    act_client_t *client = act_client_new (argv [1]);
    act_err_t err;
    if (!client || act_client_ping (client, &err)) {
        fprintf (stderr, "client_pending: no PONG from %s\n", argv [1]);
        return 2;
    }
    zhashx_t *requests = zhashx_new ();         //  Request id -> unanswered
    for (size_t n = 0; n < calls; n++) {
        char request [24];
        char *call = zsys_sprintf ("{\"_tool\":\"nobody\",\"_outputPath\":\"\u2020state.r%zu\"}", n);
        act_client_send (client, request, "CALL", "pending", call, NULL);
        zstr_free (&call);
        act_reply_t *reply = act_client_wait (client, request, NULL);
        if (!reply || !streq (reply->verb, "ACCEPTED")) {
            fprintf (stderr, "client_pending: call %zu not accepted\n", n);
            return 2;
        }
        act_reply_destroy (&reply);
        zhashx_insert (requests, request, client);
    }
    printf ("connected\n");
    fflush (stdout);
    char line [64];
    if (!fgets (line, sizeof line, stdin))
        return 2;
    for (size_t n = 0; n < pings; n++) {
        char request [24];
        if (path)
            act_client_send (client, request, "RESOLVE", "burst-nowhere", path, NULL);
        else
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
    free (path);
    return answered == count? 0: 1;
}
