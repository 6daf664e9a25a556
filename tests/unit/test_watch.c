/*  =========================================================================
    test_watch - what the watches send (act_watch.h), as the outbox hands
    it to libzmq: an event to many watchers is built once, and its body's
    bytes are shared by every watcher's EVENT instead of copied into each
    (an audit: 10 APPENDs of 512 KB to 1,000 watchers held 524 MB and took
    18.7 s of the loop), with the frames each watcher gets as before; each
    client's account still counts the whole body until libzmq lets go of
    its own EVENT, so max_client_bytes still bounds a watcher that does
    not read.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "act_watch.h"
#include "actd/act_wire.h"

//  Watchers of one context in these tests
#define S_WATCHERS  100
//  The most frames the holding sender keeps
#define S_HELD      (S_WATCHERS * 2 * 5)

//  A send function that holds what it is given, as libzmq holds what it
//  has not written to a connection yet
typedef struct {
    zmq_msg_t parts [S_HELD];   //  Frames held
    size_t size;                //  Frames held
    size_t messages;            //  Messages taken
} s_held_t;

static bool
s_hold (void *arg, bool to_worker, zmq_msg_t *parts, size_t nparts)
{
    (void) to_worker;
    s_held_t *held = (s_held_t *) arg;
    assert_true (held->size + nparts <= S_HELD);
    for (size_t part = 0; part < nparts; part++) {
        zmq_msg_init (&held->parts [held->size]);
        zmq_msg_move (&held->parts [held->size++], &parts [part]);
    }
    held->messages++;
    return true;
}

//  libzmq lets go of the messages held from frame from on (written, or
//  their connections gone)
static void
s_release (s_held_t *held, size_t from)
{
    for (size_t part = from; part < held->size; part++)
        zmq_msg_close (&held->parts [part]);
    held->size = from;
}

//  True when frame part of held holds size bytes of text
static bool
s_frame_is (s_held_t *held, size_t part, const char *text, size_t size)
{
    return zmq_msg_size (&held->parts [part]) == size
        && memcmp (zmq_msg_data (&held->parts [part]), text, size) == 0;
}

//  S_WATCHERS watches of context, each by its own client ("c0", "c1"...)
//  with request "w": calls says whether they want the calls' changes
static void
s_open (act_watches_t *watches, const char *context, bool calls)
{
    zframe_t *request = zframe_from ("w");
    for (int n = 0; n < S_WATCHERS; n++) {
        char name [16];
        snprintf (name, sizeof name, "c%d", n);
        zframe_t *client = zframe_from (name);
        act_err_t err = { 0 };
        assert_int_equal (act_watches_open (watches, client, request, context, 1, false,
                                            calls, &err), 0);
        zframe_destroy (&client);
    }
    zframe_destroy (&request);
}

//  Each of the S_WATCHERS EVENTs held from frame 0 is
//  [cN][ACTC01][EVENT][w][body], body size bytes; returns how many
//  distinct copies of the body they hold
static size_t
s_check_events (s_held_t *held, const char *body, size_t size)
{
    assert_int_equal (held->messages, S_WATCHERS);
    assert_int_equal (held->size, S_WATCHERS * 5);
    const void *copies [S_WATCHERS];
    size_t distinct = 0;
    for (int n = 0; n < S_WATCHERS; n++) {
        size_t first = (size_t) n * 5;
        char name [16];
        snprintf (name, sizeof name, "c%d", n);
        assert_true (s_frame_is (held, first, name, strlen (name)));
        assert_true (s_frame_is (held, first + 1, ACT_CLIENT_HEADER,
                                 strlen (ACT_CLIENT_HEADER)));
        assert_true (s_frame_is (held, first + 2, "EVENT", 5));
        assert_true (s_frame_is (held, first + 3, "w", 1));
        assert_true (s_frame_is (held, first + 4, body, size));
        const void *data = zmq_msg_data (&held->parts [first + 4]);
        size_t seen = 0;
        while (seen < distinct && copies [seen] != data)
            seen++;
        if (seen == distinct)
            copies [distinct++] = data;
    }
    return distinct;
}

//  A stored message of about size bytes, as act_json_dump writes it
static char *
s_message (size_t size)
{
    char *text = malloc (size + 64);
    int length = snprintf (text, 64, "{\"_seq\":7,\"data\":\"");
    memset (text + length, 'x', size);
    strcpy (text + length + size, "\",\"kind\":\"k\",\"type\":\"data\"}");
    return text;
}


//  --------------------------------------------------------------------------
//  One body for all

//  A message appended to a context with 100 watchers: every watcher gets
//  its EVENT with the frames as before, and the 100 bodies are one copy
//  of the bytes (before: 100 copies, each made twice). Each client's
//  account counts the whole body, until libzmq lets go of its EVENT.
static void
test_a_message_to_many_watchers_is_one_copy (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    act_watches_t *watches = act_watches_new (NULL, outbox, 1000);
    s_open (watches, "ctx", false);
    char *text = s_message (100000);
    act_watches_message (watches, "ctx", 7, text);
    char *body = zsys_sprintf ("{\"seq\":7,\"message\":%s}", text);
    size_t size = strlen (body);
    s_held_t *held = calloc (1, sizeof (s_held_t));
    assert_int_equal (act_outbox_flush (outbox, s_hold, held), S_WATCHERS);
    assert_int_equal (s_check_events (held, body, size), 1);
    assert_int_equal (act_outbox_client_bytes (outbox), S_WATCHERS * size);
    //  Half the watchers read theirs: the others' accounts still count it
    s_release (held, S_WATCHERS / 2 * 5);
    assert_int_equal (act_outbox_client_bytes (outbox), S_WATCHERS / 2 * size);
    s_release (held, 0);
    assert_int_equal (act_outbox_client_bytes (outbox), 0);
    //  A message seq before a watch's next is not sent again
    act_watches_message (watches, "ctx", 6, text);
    assert_int_equal (act_outbox_size (outbox), 0);
    zstr_free (&body);
    free (text);
    free (held);
    act_watches_destroy (&watches);
    act_outbox_destroy (&outbox);
}

//  A call's change of state is one copy for all the watchers that want
//  calls; a small event (a context deleted) is as before, one each
static void
test_a_calls_change_to_many_watchers_is_one_copy (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    act_watches_t *watches = act_watches_new (NULL, outbox, 1000);
    s_open (watches, "ctx", true);
    char *status = s_message (5000);
    act_watches_call (watches, "ctx", status);
    char *body = zsys_sprintf ("{\"call\":%s}", status);
    s_held_t *held = calloc (1, sizeof (s_held_t));
    assert_int_equal (act_outbox_flush (outbox, s_hold, held), S_WATCHERS);
    assert_int_equal (s_check_events (held, body, strlen (body)), 1);
    s_release (held, 0);
    held->messages = 0;
    act_watches_deleted (watches, "ctx");
    assert_int_equal (act_watches_size (watches), 0);
    assert_int_equal (act_outbox_flush (outbox, s_hold, held), S_WATCHERS);
    const char *deleted = "{\"deleted\":true}";
    assert_int_equal (s_check_events (held, deleted, strlen (deleted)), S_WATCHERS);
    s_release (held, 0);
    zstr_free (&body);
    free (status);
    free (held);
    act_watches_destroy (&watches);
    act_outbox_destroy (&outbox);
}

//  Watchers that do not read stay bounded by max_client_bytes, each by
//  its own account: with an event held for each, the next would pass the
//  bound, so it is dropped and every one of them is listed to be cut;
//  once libzmq lets go, they start clean. A failed commit drops the
//  events, shared body and all (the sanitizers see a leak)
static void
test_watchers_that_do_not_read_are_still_bounded (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    act_outbox_set_max_client_bytes (outbox, 150000);
    act_watches_t *watches = act_watches_new (NULL, outbox, 1000);
    s_open (watches, "ctx", false);
    char *text = s_message (100000);
    s_held_t *held = calloc (1, sizeof (s_held_t));
    act_watches_message (watches, "ctx", 1, text);
    assert_int_equal (act_outbox_flush (outbox, s_hold, held), S_WATCHERS);
    act_watches_message (watches, "ctx", 2, text);
    assert_int_equal (act_outbox_flush (outbox, s_hold, held), 0);
    assert_int_equal (act_outbox_cuts (outbox), S_WATCHERS);
    zframe_t *cut;
    size_t cuts = 0;
    while ((cut = act_outbox_next_cut (outbox))) {
        assert_true (act_outbox_client_over (outbox, cut));
        zframe_destroy (&cut);
        cuts++;
    }
    assert_int_equal (cuts, S_WATCHERS);
    s_release (held, 0);
    assert_int_equal (act_outbox_client_bytes (outbox), 0);
    held->messages = 0;
    act_watches_message (watches, "ctx", 3, text);
    assert_int_equal (act_outbox_flush (outbox, s_hold, held), S_WATCHERS);
    s_release (held, 0);
    act_watches_message (watches, "ctx", 4, text);
    assert_int_equal (act_outbox_refuse (outbox, NULL, NULL, NULL), S_WATCHERS);
    assert_int_equal (act_outbox_size (outbox), 0);
    free (text);
    free (held);
    act_watches_destroy (&watches);
    act_outbox_destroy (&outbox);
}


//  --------------------------------------------------------------------------
//  A failed commit drops events: the watches go back

//  The bodies of the EVENTs held from frame 0, each [client][ACTC01]
//  [EVENT][request][body], joined with spaces
static char *
s_bodies (s_held_t *held)
{
    char *joined = strdup ("");
    for (size_t first = 0; first + 5 <= held->size; first += 5) {
        zmq_msg_t *body = &held->parts [first + 4];
        char *more = zsys_sprintf ("%s%s%.*s", joined, *joined? " ": "",
                                   (int) zmq_msg_size (body), (char *) zmq_msg_data (body));
        free (joined);
        joined = more;
    }
    return joined;
}

//  Store message seq of ctx ({"_seq":seq,"n":n}) in the batch
static void
s_put (act_store_t *store, uint64_t seq, int n)
{
    char text [64];
    snprintf (text, sizeof text, "{\"_seq\":%d,\"n\":%d}", (int) seq, n);
    assert_int_equal (act_store_put_message (store, "ctx", seq, text, strlen (text)), 0);
}

//  A watch's backlog and a live message, dropped by a failed commit: the
//  watch reads the store again from the first one it was not sent, and
//  the message that takes the lost one's _seq is sent (before, the watch
//  had moved past it: it never came)
static void
test_a_failed_commit_takes_a_watch_back (void **state)
{
    (void) state;
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (":memory:", ACT_SYNC_NORMAL, &err);
    act_outbox_t *outbox = act_outbox_new ();
    act_watches_t *watches = act_watches_new (store, outbox, 10);
    assert_true (act_store_put_context (store, "ctx") >= 0);
    s_put (store, 1, 1);
    s_put (store, 2, 1);
    assert_int_equal (act_store_commit (store, &err), 0);
    zframe_t *client = zframe_from ("c0"), *request = zframe_from ("w");
    assert_int_equal (act_watches_open (watches, client, request, "ctx", 1, true, false, &err), 0);
    assert_int_equal (act_watches_pump (watches, 100), 2);
    //  (The memory store's rollback keeps the messages of the batch: this
    //  one is not stored, only told)
    act_watches_message (watches, "ctx", 3, "{\"_seq\":3,\"n\":1}");
    assert_int_equal (act_outbox_size (outbox), 3);

    //  The commit fails: the three events are dropped
    assert_int_equal (act_outbox_refuse (outbox, NULL, act_watches_lost, watches), 3);
    act_store_abort (store);
    act_watches_rewind (watches);
    assert_int_equal (act_watches_behind (watches), 1);
    assert_int_equal (act_watches_pump (watches, 100), 2);
    s_put (store, 3, 2);            //  The _seq given again
    assert_int_equal (act_store_commit (store, &err), 0);
    act_watches_message (watches, "ctx", 3, "{\"_seq\":3,\"n\":2}");
    s_held_t *held = calloc (1, sizeof (s_held_t));
    assert_int_equal (act_outbox_flush (outbox, s_hold, held), 3);
    char *bodies = s_bodies (held);
    assert_string_equal (bodies, "{\"seq\":1,\"message\":{\"_seq\":1,\"n\":1}} "
                                 "{\"seq\":2,\"message\":{\"_seq\":2,\"n\":1}} "
                                 "{\"seq\":3,\"message\":{\"_seq\":3,\"n\":2}}");
    free (bodies);
    s_release (held, 0);
    free (held);
    zframe_destroy (&client);
    zframe_destroy (&request);
    act_watches_destroy (&watches);
    act_outbox_destroy (&outbox);
    act_store_destroy (&store);
}

//  A DELETE whose commit failed deleted nothing: its watches are open
//  again, and see the next message; one whose commit succeeded is gone
static void
test_a_delete_not_kept_keeps_its_watches (void **state)
{
    (void) state;
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (":memory:", ACT_SYNC_NORMAL, &err);
    act_outbox_t *outbox = act_outbox_new ();
    act_watches_t *watches = act_watches_new (store, outbox, 1000);
    s_open (watches, "ctx", false);
    act_watches_deleted (watches, "ctx");
    assert_int_equal (act_watches_size (watches), 0);
    assert_int_equal (act_outbox_refuse (outbox, NULL, act_watches_lost, watches), S_WATCHERS);
    act_watches_rewind (watches);
    assert_int_equal (act_watches_size (watches), S_WATCHERS);
    act_watches_message (watches, "ctx", 1, "{\"_seq\":1}");
    s_held_t *held = calloc (1, sizeof (s_held_t));
    assert_int_equal (act_outbox_flush (outbox, s_hold, held), S_WATCHERS);
    s_release (held, 0);

    //  Deleted again, and kept: they end
    act_watches_deleted (watches, "ctx");
    assert_true (act_store_put_context (store, "other") >= 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_int_equal (act_outbox_flush (outbox, s_hold, held), S_WATCHERS);
    s_release (held, 0);
    act_watches_pump (watches, 100);
    act_watches_rewind (watches);
    assert_int_equal (act_watches_size (watches), 0);
    free (held);
    act_watches_destroy (&watches);
    act_outbox_destroy (&outbox);
    act_store_destroy (&store);
}


int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_a_message_to_many_watchers_is_one_copy),
        cmocka_unit_test (test_a_calls_change_to_many_watchers_is_one_copy),
        cmocka_unit_test (test_watchers_that_do_not_read_are_still_bounded),
        cmocka_unit_test (test_a_failed_commit_takes_a_watch_back),
        cmocka_unit_test (test_a_delete_not_kept_keeps_its_watches),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
