/*  =========================================================================
    client_library - the C client library against a real actd or a fake
    broker, for tests/integration/test_client_library.py.

    client_library MODE ENDPOINT [ARGS]

    deep ENDPOINT CONTEXT LEVELS
        A call to echo (actd-example-worker) whose output nests LEVELS
        arrays under a path of LEVELS segments, waited for; then STATUS,
        VIEW, HISTORY, RESOLVE and a watch from _seq 1 (messages and
        calls) of its context. Prints a line per step, "ok" or the error.
    bad-event ENDPOINT
        A watch of "ctx" from _seq 1 on a fake broker that answers WATCH
        with an EVENT that is not JSON: prints "ended CODE" when
        act_watch_next says the watch ended, "event" or "timeout" if not.
    restart ENDPOINT
        A watch of "quiet" that has had no event; prints "restart" and
        waits for a line on stdin (actd was killed and started again
        meanwhile), then act_client_recv must return nothing for 1.5 s
        (the library's own WATCH is not the caller's request), and the
        watch, sent again, must return the message appended next.
    nowait ENDPOINT COUNT
        COUNT calls to upper with an _outputPath and a PLAN of two, none
        waited for, then act_client_wait_call for each call: afterwards
        act_client_recv must return nothing (their DONEs were dropped)
        and the client must ignore no request any more.
    late ENDPOINT
        With a timeout of 500 ms: a call to sleep for 1500 ms, waited for,
        must time out, and its DONE must not be received later; then
        prints "stop" and waits for a line (actd was stopped), a PING must
        time out, prints "cont" and waits for a line (actd goes on): its
        late PONG must not be received either, and afterwards the client
        must ignore no request any more.
    wait-late ENDPOINT
        act_client_wait with a timeout of 500 ms (5 s for an ACCEPTED)
        times out on a call to sleep for 1200 ms (sent with
        act_client_send): on its DONE after
        its ACCEPTED, on its DONE while its ACCEPTED came (kept), and on
        the DONEs of a PLAN of two after its ACCEPTED; none of their
        replies may be received later. Then prints "stop" and waits for a
        line (actd was stopped): the wait for a PING must time out; prints
        "cont" and waits for a line (actd goes on): its late PONG must not
        be received either. Afterwards the client must keep, ignore, await
        and have pending nothing.
    tables ENDPOINT ROUNDS LIMIT
        The client's tables limited to LIMIT entries; ROUNDS times, a
        fire-and-forget call to echo in context grow-N, and a watch of it
        opened and destroyed. Then the replies drained: the tables of
        routes must hold LIMIT entries at most, and no request may be
        ignored or pending any more (each UNWATCH's OK ended its WATCH).
    malformed ENDPOINT
        Against a fake broker: VIEW text answered VALUE without its frame,
        CALL and PLAN answered ACCEPTED without call ids, RESOLVE of ctx
        answered moved to itself (followed S_MAX_HOPS times) and of bad
        answered moved to an endpoint that is not valid: each must fail
        with err set, leaving no request pending.

    dropped ENDPOINT
        Against a fake broker: six PINGs sent, then prints "sent" and
        waits for a line (the broker answered five and went away, its
        connection dropped): the five PONGs, unread when the connection
        dropped, must come first, in order, then one ERROR disconnected,
        for the sixth.
    idle-drop ENDPOINT
        A PING, then prints "idle" and waits for a line (the broker was
        killed and started again meanwhile, and the client read nothing):
        an APPEND to "idle" must then succeed (the drop came before it,
        so it does not fail it), and act_client_recv must return nothing
        for 1.5 s (no stray reply).
    status-gone ENDPOINT
        Against a fake broker that accepts a CALL (with an _outputPath)
        and never sends its DONE, and answers STATUS not_found: the
        waited call must fail with not_found (not wait out its timeout,
        30 s here).
    down-timeout ENDPOINT
        With a timeout of 1500 ms: a PING, then prints "kill" and waits
        for a line (the broker was killed); an APPEND to "down" must time
        out; prints "start" and waits for a line (the broker was started
        again on the same store); a PING must succeed, and "down" must
        not exist: the APPEND that timed out was not delivered later.
    strays ENDPOINT
        Against a fake broker that answers each PING with two PONGs and a
        PONG to a request never sent: two pings must succeed, and
        act_client_recv must then return nothing (the extra replies are
        dropped) and keep nothing.

    Reads the client's private tables (act_client_int.h) where a step
    says so. Exits 0 when every step went as the library promises, 1 if
    not, 2 on bad usage.
    ========================================================================= */

#include "actd/act_client.h"
#include "actd/act_json.h"
#include "act_client_int.h"

//  Steps that did not go as promised
static int s_failed;

//  Print a step's outcome: "STEP ok" when ok, else "STEP failed: WHY";
//  counts the failures
static void
s_step (const char *step, bool ok, act_err_t *err)
{
    if (ok)
        printf ("%s ok\n", step);
    else {
        printf ("%s failed: %s %s\n", step, err && err->code? err->code: "-",
                err? err->message: "");
        s_failed++;
    }
    fflush (stdout);
}

//  A JSON text of levels arrays around 1, the caller frees
static char *
s_nested (int levels)
{
    char *text = malloc (2 * (size_t) levels + 2);
    char *at = text;
    for (int i = 0; i < levels; i++)
        *at++ = '[';
    *at++ = '1';
    for (int i = 0; i < levels; i++)
        *at++ = ']';
    *at = 0;
    return text;
}

//  Mode deep: replies nested as deep as actd stores read as JSON
static void
s_deep (act_client_t *client, const char *context, int levels)
{
    char *nested = s_nested (levels);
    char *path = malloc (8 + 2 * (size_t) levels + 1);
    strcpy (path, "\xe2\x80\xa0state");
    for (int i = 0; i < levels; i++)
        strcat (path, ".a");
    char *call = zsys_sprintf ("{\"_tool\":\"echo\",\"_outputPath\":\"%s\",\"x\":%s}",
                               path, nested);
    act_err_t err = { NULL, "" };
    char *id = NULL;
    json_t *outcome = NULL;
    int rc = act_client_call (client, context, call, true, &id, &outcome, &err);
    s_step ("call", rc == 0 && streq (json_string_value (json_object_get (outcome, "status")),
                                      "ok"), &err);
    json_t *value = act_client_status (client, id? id: "1", &err);
    s_step ("status", value != NULL, &err);
    json_decref (value);
    value = act_client_view (client, context, &err);
    s_step ("view", value != NULL, &err);
    json_decref (value);
    value = act_client_history (client, context, 1, 10, &err);
    s_step ("history", json_array_size (value) == 1, &err);
    json_decref (value);
    value = act_client_resolve (client, context, "\xe2\x80\xa0state", NULL, &err);
    s_step ("resolve", value != NULL, &err);
    json_decref (value);
    act_watch_t *watch = act_client_watch (client, context, 1, true, &err);
    json_t *event = act_watch_next (watch, 5000, &err);
    s_step ("watch", json_integer_value (json_object_get (event, "seq")) == 1, &err);
    json_decref (event);
    act_watch_destroy (&watch);
    json_decref (outcome);
    free (id);
    zstr_free (&call);
    free (path);
    free (nested);
}

//  Mode bad-event: an EVENT that does not read ends the watch
static void
s_bad_event (act_client_t *client)
{
    act_err_t err = { NULL, "" };
    act_watch_t *watch = act_client_watch (client, "ctx", 1, false, &err);
    json_t *event = act_watch_next (watch, 2000, &err);
    if (event)
        printf ("event\n");
    else
        printf ("%s %s\n", err.code? "ended": "timeout", err.code? err.code: "");
    s_failed += event || !err.code || !streq (err.code, ACT_E_BAD_JSON);
    json_decref (event);
    act_watch_destroy (&watch);
}

//  Wait for a line on stdin; false at its end
static bool
s_go (void)
{
    char line [64];
    return fgets (line, sizeof line, stdin) != NULL;
}

//  Mode restart: a broker restart under a quiet watch
static void
s_restart (act_client_t *client)
{
    act_err_t err = { NULL, "" };
    act_watch_t *watch = act_client_watch (client, "quiet", 0, false, &err);
    printf ("restart\n");
    fflush (stdout);
    if (!s_go ())
        exit (2);
    act_reply_t *reply = act_client_recv (client, 1500);
    if (reply) {
        char *code = act_reply_arg (reply, 0);
        act_err_set (&err, ACT_E_INTERNAL, "%s %s for %s", reply->verb, code? code: "",
                     reply->request);
        free (code);
    }
    s_step ("nothing received", reply == NULL, &err);
    act_reply_destroy (&reply);
    uint64_t seq = 0;
    act_client_append (client, "quiet", "{\"type\":\"data\",\"kind\":\"input\",\"data\":1}",
                       &seq, &err);
    json_t *event = act_watch_next (watch, 5000, &err);
    s_step ("watch resumed", seq && json_integer_value (json_object_get (event, "seq"))
                             == (json_int_t) seq, &err);
    json_decref (event);
    act_watch_destroy (&watch);
}

//  Whether within 20 s act_client_connected says connected, and, when
//  refused is set, names a refusal as why (the connection events are read
//  meanwhile: a loaded machine may take a while to see them)
static bool
s_connected_is (act_client_t *client, bool connected, bool refused)
{
    int64_t deadline = zclock_mono () + 20000;
    for (;;) {
        const char *why = NULL;
        if (act_client_connected (client, &why) == connected
        &&  (!refused || (why && strstr (why, "refused"))))
            return true;
        if (zclock_mono () >= deadline)
            return false;
        act_reply_t *stray = act_client_recv (client, 100);
        act_reply_destroy (&stray);
    }
}

//  Mode connected: act_client_connected before anything listens (false,
//  refused once the connection events were read), then after a PONG
//  from the broker started meanwhile (true), then after it was killed
//  (false again)
static void
s_connected (act_client_t *client)
{
    act_err_t err = { NULL, "" };
    s_step ("not connected, refused", s_connected_is (client, false, true), &err);
    //  The PING waits in libzmq for the connection, and its PONG is read
    //  a second after the broker started: the connection's event and the
    //  PONG are then both there when the client reads, as a loaded
    //  machine has them (the PONG was taken first, and the client said
    //  it was not connected)
    char request [24];
    act_client_send (client, request, "PING", NULL);
    printf ("start\n");
    fflush (stdout);
    if (!s_go ())
        exit (2);
    zclock_sleep (1000);
    act_client_set_timeout (client, 10000);
    act_reply_t *pong = act_client_wait (client, request, "PONG");
    s_step ("connected after a PONG", pong && act_client_connected (client, NULL), &err);
    act_reply_destroy (&pong);
    printf ("kill\n");
    fflush (stdout);
    if (!s_go ())
        exit (2);
    s_step ("not connected after the broker went", s_connected_is (client, false, false), &err);
}

//  Mode nowait: the DONEs of calls submitted without wait are dropped
static void
s_nowait (act_client_t *client, int count)
{
    act_err_t err = { NULL, "" };
    zlistx_t *ids = zlistx_new ();
    zlistx_set_destructor (ids, (zlistx_destructor_fn *) zstr_free);
    int submitted = 0;
    for (int i = 0; i < count; i++) {
        char *id = NULL;
        submitted += act_client_call (client, "nowait", "{\"_tool\":\"upper\",\"text\":\"hi\","
                                      "\"_outputPath\":\"\xe2\x80\xa0state.up\"}", false, &id,
                                      NULL, &err) == 0 && id;
        if (id)
            zlistx_add_end (ids, id);
    }
    json_t *plan = NULL;
    submitted += act_client_plan (client, "nowait", "[{\"_tool\":\"upper\",\"text\":\"a\","
                                  "\"_outputPath\":\"\xe2\x80\xa0state.a\"},{\"_tool\":\"upper\","
                                  "\"text\":\"b\",\"_outputPath\":\"\xe2\x80\xa0state.b\"}]",
                                  false, &plan, NULL, &err) == 0;
    s_step ("submitted", submitted == count + 1, &err);
    size_t index;
    json_t *id;
    json_array_foreach (plan, index, id)
        zlistx_add_end (ids, strdup (json_string_value (id)));
    json_decref (plan);
    int ended = 0;
    for (char *id = zlistx_first (ids); id; id = zlistx_next (ids)) {
        json_t *status = act_client_wait_call (client, id, &err);
        ended += status != NULL;
        json_decref (status);
    }
    s_step ("ended", ended == count + 2, &err);
    act_reply_t *reply = act_client_recv (client, 500);
    if (reply)
        act_err_set (&err, ACT_E_INTERNAL, "%s for %s", reply->verb, reply->request);
    s_step ("nothing received", reply == NULL, &err);
    act_reply_destroy (&reply);
    act_err_set (&err, ACT_E_INTERNAL, "%zu kept, %zu ignored", zlistx_size (client->kept),
                 act_table_size (client->ignored));
    s_step ("nothing kept", zlistx_size (client->kept) == 0
                            && act_table_size (client->ignored) == 0, &err);
    zlistx_destroy (&ids);
}

//  Mode late: a synchronous request that timed out is forgotten
static void
s_late (act_client_t *client)
{
    act_client_set_timeout (client, 500);
    act_err_t err = { NULL, "" };
    json_t *outcome = NULL;
    int rc = act_client_call (client, "late", "{\"_tool\":\"sleep\",\"ms\":1500,"
                              "\"_outputPath\":\"\xe2\x80\xa0state.s\"}", true, NULL, &outcome,
                              &err);
    s_step ("call timed out", rc == -1 && err.code && streq (err.code, ACT_E_TIMEOUT), &err);
    json_decref (outcome);
    act_reply_t *reply = act_client_recv (client, 2500);
    if (reply)
        act_err_set (&err, ACT_E_INTERNAL, "%s for %s", reply->verb, reply->request);
    s_step ("no late DONE", reply == NULL, &err);
    act_reply_destroy (&reply);
    printf ("stop\n");
    fflush (stdout);
    if (!s_go ())
        exit (2);
    rc = act_client_ping (client, &err);
    s_step ("ping timed out", rc == -1 && err.code && streq (err.code, "timeout"), &err);
    printf ("cont\n");
    fflush (stdout);
    if (!s_go ())
        exit (2);
    reply = act_client_recv (client, 1500);
    if (reply)
        act_err_set (&err, ACT_E_INTERNAL, "%s for %s", reply->verb, reply->request);
    s_step ("no late PONG", reply == NULL, &err);
    act_reply_destroy (&reply);
    act_err_set (&err, ACT_E_INTERNAL, "%zu kept, %zu ignored", zlistx_size (client->kept),
                 act_table_size (client->ignored));
    s_step ("nothing kept", zlistx_size (client->kept) == 0
                            && act_table_size (client->ignored) == 0, &err);
}

//  Send request (command, a, b; none without command) and wait up to ms
//  for its reply with verb (NULL: any): true when act_client_wait
//  returned one with want (NULL: none)
static bool
s_waited (act_client_t *client, char *request, const char *command, const char *a,
          const char *b, int ms, const char *verb, const char *want)
{
    if (command)
        act_client_send (client, request, command, a, b, NULL);
    act_client_set_timeout (client, ms);
    act_reply_t *reply = act_client_wait (client, request, verb);
    bool ok = want? reply && streq (reply->verb, want): reply == NULL;
    act_reply_destroy (&reply);
    return ok;
}

//  Print whether client holds nothing for any request: no reply came
//  within ms, none is kept, ignored, awaited or pending
static void
s_nothing_left (act_client_t *client, const char *step, int ms)
{
    act_err_t err = { NULL, "" };
    act_reply_t *reply = act_client_recv (client, ms);
    if (reply)
        act_err_set (&err, ACT_E_INTERNAL, "%s for %s", reply->verb, reply->request);
    else
        act_err_set (&err, ACT_E_INTERNAL, "%zu kept, %zu ignored, %zu awaiting, %zu pending",
                     zlistx_size (client->kept), act_table_size (client->ignored),
                     zhashx_size (client->awaiting), zhashx_size (client->pending));
    s_step (step, !reply && zlistx_size (client->kept) == 0
                  && act_table_size (client->ignored) == 0
                  && zhashx_size (client->awaiting) == 0
                  && zhashx_size (client->pending) == 0, &err);
    act_reply_destroy (&reply);
}

//  Mode wait-late: a request whose act_client_wait timed out is forgotten
static void
s_wait_late (act_client_t *client)
{
    act_err_t err = { NULL, "" };
    const char *call = "{\"_tool\":\"sleep\",\"ms\":1200,\"_outputPath\":\"\xe2\x80\xa0state.s\"}";
    char *plan = zsys_sprintf ("[%s,%s]", call, call);
    char request [24];
    bool ok = s_waited (client, request, "CALL", "wait-late-a", call, 5000, NULL, "ACCEPTED")
           && s_waited (client, request, NULL, NULL, NULL, 500, "DONE", NULL);
    s_step ("call's DONE timed out", ok, &err);
    ok = s_waited (client, request, "CALL", "wait-late-b", call, 500, "DONE", NULL);
    s_step ("DONE timed out, ACCEPTED kept", ok, &err);
    ok = s_waited (client, request, "PLAN", "wait-late-c", plan, 5000, NULL, "ACCEPTED")
      && s_waited (client, request, NULL, NULL, NULL, 500, "DONE", NULL);
    s_step ("plan's DONE timed out", ok, &err);
    zstr_free (&plan);
    s_nothing_left (client, "no late DONE", 2500);
    printf ("stop\n");
    fflush (stdout);
    if (!s_go ())
        exit (2);
    s_step ("ping timed out", s_waited (client, request, "PING", NULL, NULL, 500, NULL, NULL),
            &err);
    printf ("cont\n");
    fflush (stdout);
    if (!s_go ())
        exit (2);
    s_nothing_left (client, "no late PONG", 1500);
}

//  Mode tables: the client's tables stay bounded
static void
s_tables (act_client_t *client, int rounds, size_t limit)
{
    act_table_set_limit (client->owners, limit);
    act_table_set_limit (client->accepted, limit);
    act_table_set_limit (client->ignored, limit);
    act_err_t err = { NULL, "" };
    int done = 0;
    for (int i = 0; i < rounds; i++) {
        char context [32];
        snprintf (context, sizeof context, "grow-%d", i);
        done += act_client_call (client, context, "{\"_tool\":\"echo\",\"x\":1}", false,
                                 NULL, NULL, &err) == 0;
        act_watch_t *watch = act_client_watch (client, context, 1, false, &err);
        act_watch_destroy (&watch);
    }
    s_step ("called", done == rounds, &err);
    act_reply_t *reply;
    while ((reply = act_client_recv (client, 300)))
        act_reply_destroy (&reply);
    act_err_set (&err, ACT_E_INTERNAL, "owners %zu, accepted %zu", act_table_size (client->owners),
                 act_table_size (client->accepted));
    s_step ("routes bounded", act_table_size (client->owners) <= limit
                              && act_table_size (client->accepted) <= limit, &err);
    act_err_set (&err, ACT_E_INTERNAL, "ignored %zu, pending %zu",
                 act_table_size (client->ignored), zhashx_size (client->pending));
    s_step ("nothing ignored", act_table_size (client->ignored) == 0
                               && zhashx_size (client->pending) == 0, &err);
}

//  Print a step that must have failed with err set and left nothing
//  pending
static void
s_refused (act_client_t *client, const char *step, bool failed, act_err_t *err)
{
    act_err_t why = *err;
    if (!failed || !err->code)
        act_err_set (&why, ACT_E_INTERNAL, "%s, err %s", failed? "failed": "succeeded",
                     err->code? err->code: "not set");
    else
    if (zhashx_size (client->pending))
        act_err_set (&why, ACT_E_INTERNAL, "%zu pending", zhashx_size (client->pending));
    printf ("%s: %s\n", step, err->code? err->code: "-");
    s_step (step, failed && err->code && !zhashx_size (client->pending), &why);
    act_err_clear (err);
}

//  Mode malformed: replies that break the protocol fail their request
static void
s_malformed (act_client_t *client)
{
    act_client_set_timeout (client, 2000);
    act_err_t err = { NULL, "" };
    char *text = act_client_view_text (client, "ctx", &err);
    s_refused (client, "view text", text == NULL, &err);
    free (text);
    char *id = NULL;
    int rc = act_client_call (client, "ctx", "{\"_tool\":\"x\"}", false, &id, NULL, &err);
    s_refused (client, "call", rc == -1 && id == NULL, &err);
    free (id);
    json_t *ids = NULL;
    rc = act_client_plan (client, "ctx", "[{\"_tool\":\"x\"}]", false, &ids, NULL, &err);
    s_refused (client, "plan", rc == -1 && ids == NULL, &err);
    json_decref (ids);
    json_t *value = act_client_resolve (client, "ctx", "\xe2\x80\xa0state", NULL, &err);
    s_refused (client, "moved too often", value == NULL, &err);
    json_decref (value);
    value = act_client_resolve (client, "bad", "\xe2\x80\xa0state", NULL, &err);
    s_refused (client, "moved nowhere", value == NULL, &err);
    json_decref (value);
}

//  Mode dropped: replies that came before their connection dropped
//  answer their requests; only the unanswered one gets ERROR disconnected
static void
s_dropped (act_client_t *client)
{
    act_err_t err = { NULL, "" };
    char requests [6][24];
    for (int i = 0; i < 6; i++)
        act_client_send (client, requests [i], "PING", NULL);
    printf ("sent\n");
    fflush (stdout);
    if (!s_go ())
        exit (2);
    int pongs = 0, errors = 0;
    for (act_reply_t *reply = act_client_recv (client, 5000); reply;
         reply = act_client_recv (client, pongs + errors < 6? 5000: 500)) {
        char *code = act_reply_arg (reply, 0);
        if (streq (reply->verb, "PONG") && !errors && pongs < 5
        &&  streq (reply->request, requests [pongs]))
            pongs++;
        else
        if (streq (reply->verb, "ERROR") && streq (reply->request, requests [5])
        &&  code && streq (code, ACT_CLIENT_DISCONNECTED))
            errors++;
        else {
            printf ("unexpected %s %s for %s\n", reply->verb, code? code: "", reply->request);
            errors += 10;
        }
        free (code);
        act_reply_destroy (&reply);
    }
    act_err_set (&err, ACT_E_INTERNAL, "%d PONGs, %d errors", pongs, errors);
    s_step ("the five PONGs first", pongs == 5, &err);
    s_step ("then one ERROR disconnected", errors == 1, &err);
}

//  Mode idle-drop: a drop the client read only when it sent again
static void
s_idle_drop (act_client_t *client)
{
    act_err_t err = { NULL, "" };
    s_step ("ping", act_client_ping (client, &err) == 0, &err);
    printf ("idle\n");
    fflush (stdout);
    if (!s_go ())
        exit (2);
    uint64_t seq = 0;
    int rc = act_client_append (client, "idle", "{\"type\":\"data\",\"kind\":\"x\",\"data\":1}",
                                &seq, &err);
    s_step ("append after the drop", rc == 0 && seq == 1, &err);
    act_reply_t *stray = act_client_recv (client, 1500);
    if (stray)
        act_err_set (&err, ACT_E_INTERNAL, "%s for %s", stray->verb, stray->request);
    s_step ("no stray reply", stray == NULL, &err);
    act_reply_destroy (&stray);
}

//  Mode status-gone: a call the broker no longer knows ends the wait
static void
s_status_gone (act_client_t *client)
{
    act_err_t err = { NULL, "" };
    act_client_set_timeout (client, 30000);
    char *id = NULL;
    json_t *outcome = NULL;
    int rc = act_client_call (client, "ctx", "{\"_tool\":\"t\",\"_outputPath\":\"\u2020s.x\"}",
                              true, &id, &outcome, &err);
    bool gone = rc == -1 && err.code && streq (err.code, ACT_E_NOT_FOUND);
    s_step ("call not found", gone, &err);
    free (id);
    json_decref (outcome);
}

//  Mode down-timeout: a request that timed out while the broker was down
//  is not delivered once it is back
static void
s_down_timeout (act_client_t *client)
{
    act_err_t err = { NULL, "" };
    act_client_set_timeout (client, 1500);
    s_step ("ping", act_client_ping (client, &err) == 0, &err);
    printf ("kill\n");
    fflush (stdout);
    if (!s_go ())
        exit (2);
    uint64_t seq = 0;
    int rc = act_client_append (client, "down", "{\"type\":\"data\",\"kind\":\"x\",\"data\":1}",
                                &seq, &err);
    s_step ("append timed out", rc == -1 && err.code && streq (err.code, ACT_E_TIMEOUT), &err);
    printf ("start\n");
    fflush (stdout);
    if (!s_go ())
        exit (2);
    act_client_set_timeout (client, 10000);
    s_step ("ping once back", act_client_ping (client, &err) == 0, &err);
    zclock_sleep (500);             //  What libzmq would deliver, delivered
    err = (act_err_t) { NULL, "" };
    json_t *history = act_client_history (client, "down", 1, 10, &err);
    s_step ("the append not delivered", !history && err.code
            && streq (err.code, ACT_E_NOT_FOUND), &err);
    json_decref (history);
}

//  Mode strays: replies that answer nothing are dropped, not kept
static void
s_strays (act_client_t *client)
{
    act_err_t err = { NULL, "" };
    s_step ("first ping", act_client_ping (client, &err) == 0, &err);
    s_step ("second ping", act_client_ping (client, &err) == 0, &err);
    act_reply_t *stray = act_client_recv (client, 500);
    if (stray)
        act_err_set (&err, ACT_E_INTERNAL, "%s for %s", stray->verb, stray->request);
    s_step ("no stray reply", stray == NULL, &err);
    act_reply_destroy (&stray);
    s_step ("nothing kept", zlistx_size (client->kept) == 0, &err);
}

int
main (int argc, char *argv [])
{
    if (argc < 3) {
        fprintf (stderr, "usage: client_library MODE ENDPOINT [ARGS]\n");
        return 2;
    }
    const char *mode = argv [1];
    act_client_t *client = act_client_new (argv [2]);
    if (!client)
        return 2;
    act_client_set_timeout (client, 10000);
    if (streq (mode, "deep") && argc == 5)
        s_deep (client, argv [3], atoi (argv [4]));
    else
    if (streq (mode, "bad-event"))
        s_bad_event (client);
    else
    if (streq (mode, "restart"))
        s_restart (client);
    else
    if (streq (mode, "late"))
        s_late (client);
    else
    if (streq (mode, "connected"))
        s_connected (client);
    else
    if (streq (mode, "wait-late"))
        s_wait_late (client);
    else
    if (streq (mode, "malformed"))
        s_malformed (client);
    else
    if (streq (mode, "tables") && argc == 5)
        s_tables (client, atoi (argv [3]), (size_t) atol (argv [4]));
    else
    if (streq (mode, "nowait") && argc == 4)
        s_nowait (client, atoi (argv [3]));
    else
    if (streq (mode, "dropped"))
        s_dropped (client);
    else
    if (streq (mode, "idle-drop"))
        s_idle_drop (client);
    else
    if (streq (mode, "status-gone"))
        s_status_gone (client);
    else
    if (streq (mode, "down-timeout"))
        s_down_timeout (client);
    else
    if (streq (mode, "strays"))
        s_strays (client);
    else {
        fprintf (stderr, "client_library: unknown mode or arguments\n");
        act_client_destroy (&client);
        return 2;
    }
    act_client_destroy (&client);
    return s_failed? 1: 0;
}
