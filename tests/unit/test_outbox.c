/*  =========================================================================
    test_outbox - what one pass sends, held until its commit (act_outbox.h):
    messages leave in order through the send function with their frames
    as built; after a failed commit nothing durable is promised (ACCEPTED
    and OK become ERROR internal to the same request, DONE and messages to
    workers are dropped, the rest stays in order); tasks marked early
    leave before their commit, sealed or not, but never ahead of a message
    held for its commit to the same worker; a send that fails counts as
    not sent; a batch awaits its early tasks' results among patient
    messages only; a client past max_client_bytes is listed once to be cut,
    gets nothing more while libzmq holds its replies, then starts clean;
    replies to the CURVE client served are owed to its key.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "act_outbox.h"
#include "actd/act_wire.h"
#include "unit_support.h"

//  The message act_outbox_refuse puts in place of a durable reply, without
//  a cause and with one
#define S_REFUSED       "the store could not commit; nothing was kept"
#define S_REFUSED_FULL  "the store could not commit (database or disk is full); nothing was kept"


//  A reply [client][ACTC01][verb][request][body] added to outbox
static void
s_reply (act_outbox_t *outbox, const char *client, const char *request, const char *verb,
         const char *body, bool durable)
{
    zframe_t *client_frame = zframe_from (client);
    zframe_t *request_frame = zframe_from (request);
    act_out_t *out = act_outbox_reply (outbox, client_frame, request_frame, verb, durable);
    assert_non_null (out);
    if (body)
        act_out_addstr (out, body);
    zframe_destroy (&client_frame);
    zframe_destroy (&request_frame);
}

//  A task [worker][ACTW01][TASK][task id][body] added to outbox
static act_out_t *
s_task (act_outbox_t *outbox, const char *worker, const char *task, bool durable)
{
    act_out_t *out = act_outbox_add (outbox, true, durable);
    assert_non_null (out);
    act_out_addstr (out, worker);
    act_out_addstr (out, ACT_WORKER_HEADER);
    act_out_addstr (out, "TASK");
    act_out_addstr (out, task);
    act_out_addstr (out, "{}");
    return out;
}


//  --------------------------------------------------------------------------
//  Sending

//  Messages leave in the order they were added, each to its socket, with
//  the frames as built (binary and empty frames included).
static void
test_messages_leave_in_order_with_their_frames (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    assert_non_null (outbox);
    s_reply (outbox, "client-1", "r1", "PONG", NULL, false);
    s_task (outbox, "worker-1", "17", false);
    //  A message of raw frames: bytes with NUL inside, and an empty frame
    act_out_t *out = act_outbox_add (outbox, false, false);
    act_out_add (out, "c\0d", 3);
    act_out_add (out, "", 0);
    zframe_t *frame = zframe_new ("\x01\x00\xff", 3);
    act_out_frame (out, frame);
    zframe_destroy (&frame);
    s_reply (outbox, "client-2", "r2", "VALUE", "[1,2]", false);
    assert_int_equal (act_outbox_size (outbox), 4);

    unit_sent_t sent = { .size = 0 };
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 4);
    assert_int_equal (sent.size, 4);
    unit_assert_sent (&sent, 0, false, "client-1", "ACTC01", "PONG", "r1", NULL);
    unit_assert_sent (&sent, 1, true, "worker-1", "ACTW01", "TASK", "17", "{}", NULL);
    zmsg_t *raw = sent.messages [2];
    assert_false (sent.to_worker [2]);
    assert_int_equal (zmsg_size (raw), 3);
    assert_int_equal (zframe_size (zmsg_first (raw)), 3);
    assert_memory_equal (zframe_data (zmsg_first (raw)), "c\0d", 3);
    assert_int_equal (zframe_size (zmsg_next (raw)), 0);
    frame = zmsg_next (raw);
    assert_int_equal (zframe_size (frame), 3);
    assert_memory_equal (zframe_data (frame), "\x01\x00\xff", 3);
    unit_assert_sent (&sent, 3, false, "client-2", "ACTC01", "VALUE", "r2", "[1,2]", NULL);
    unit_sent_release (&sent);
    act_outbox_destroy (&outbox);
    assert_null (outbox);
}

//  ERROR carries the request it answers, its code and its message.
static void
test_error_reply_echoes_the_request (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    zframe_t *client = zframe_from ("client-1");
    zframe_t *request = zframe_from ("req-9");
    act_err_t err = { 0 };
    act_err_set (&err, ACT_E_NOT_FOUND, "no call 12");
    act_outbox_error (outbox, client, request, "STATUS", &err, NULL);
    zframe_destroy (&client);
    zframe_destroy (&request);

    unit_sent_t sent = { .size = 0 };
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 1);
    unit_assert_sent (&sent, 0, false, "client-1", "ACTC01", "ERROR", "req-9", "not_found",
                      "no call 12", NULL);
    unit_sent_release (&sent);
    act_outbox_destroy (&outbox);
}

//  flush empties the outbox: a second flush sends nothing.
static void
test_flush_empties_it (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    s_reply (outbox, "c", "1", "PONG", NULL, false);
    s_reply (outbox, "c", "2", "OK", "{\"seq\":1}", true);
    unit_sent_t sent = { .size = 0 };
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 2);
    assert_int_equal (act_outbox_size (outbox), 0);
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 0);
    assert_int_equal (sent.size, 2);

    //  It is used again after, from the start
    s_reply (outbox, "c", "3", "PONG", NULL, false);
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 1);
    unit_assert_sent (&sent, 2, false, "c", "ACTC01", "PONG", "3", NULL);
    unit_sent_release (&sent);
    act_outbox_destroy (&outbox);
}

//  Sealed batches leave in order while the next ones are built behind
//  them, past the room first allocated and back: a flush sends the sealed
//  messages and leaves the others where they are, the slots sent are
//  taken back when the room runs out (act_outbox_add).
static void
test_sealed_batches_leave_in_order_as_the_room_is_reused (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    unit_sent_t sent = { .size = 0 };
    char request [16];
    int added = 0, batch [] = { 3, 250, 40, 600, 1, 255, 256, 90, 1000, 7, 0, 300 };
    size_t expected = 0;
    for (size_t round = 0; round < sizeof batch / sizeof batch [0]; round++) {
        //  The batch sealed last round is in flight while this one grows
        for (int i = 0; i < batch [round]; i++) {
            snprintf (request, sizeof request, "%d", added++);
            s_reply (outbox, "c", request, "OK", "{\"seq\":1}", true);
        }
        size_t before = act_outbox_size (outbox);
        size_t flushed = act_outbox_flush_sealed (outbox, unit_sent_capture, &sent);
        expected += flushed;
        assert_int_equal (act_outbox_size (outbox), before - flushed);
        act_outbox_seal (outbox);
    }
    expected += act_outbox_flush (outbox, unit_sent_capture, &sent);
    assert_int_equal (expected, added);
    assert_int_equal (sent.size, added);
    for (int i = 0; i < added; i++) {
        snprintf (request, sizeof request, "%d", i);
        unit_assert_sent (&sent, i, false, "c", "ACTC01", "OK", request, "{\"seq\":1}", NULL);
    }
    unit_sent_release (&sent);
    act_outbox_destroy (&outbox);
}

//  A message the send function could not send counts as not sent, and is
//  not kept for later: the outbox is empty after the flush.
static void
test_a_failed_send_counts_as_not_sent (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    s_reply (outbox, "c", "1", "PONG", NULL, false);
    s_task (outbox, "w", "5", false);
    s_reply (outbox, "c", "2", "PONG", NULL, false);
    s_task (outbox, "w", "6", false);
    unit_sent_t sent = { .refuse_workers = true };
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 2);
    assert_int_equal (sent.size, 4);                //  All were offered
    assert_int_equal (act_outbox_size (outbox), 0);
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 0);
    assert_int_equal (sent.size, 4);
    unit_sent_release (&sent);

    //  Without a send function (no sockets, no observer) nothing is sent
    //  and the messages are discarded
    s_reply (outbox, "c", "3", "PONG", NULL, false);
    assert_int_equal (act_outbox_flush (outbox, NULL, NULL), 0);
    assert_int_equal (act_outbox_size (outbox), 0);
    act_outbox_destroy (&outbox);
}

//  The adders do nothing on a NULL message ("no such message" is cheap).
static void
test_adders_are_null_safe (void **state)
{
    (void) state;
    zframe_t *frame = zframe_from ("x");
    act_out_add (NULL, "x", 1);
    act_out_addstr (NULL, "x");
    act_out_frame (NULL, frame);
    zframe_destroy (&frame);
    act_outbox_destroy (NULL);
    act_outbox_t *outbox = NULL;
    act_outbox_destroy (&outbox);
    assert_null (outbox);
}


//  --------------------------------------------------------------------------
//  Tasks that leave before their commit

//  Early tasks leave at once, from the sealed part and after it, in
//  order; what is held keeps its order and its commit: the sealed ones
//  still leave at that commit's end, the later ones at the next.
static void
test_early_tasks_leave_before_their_commit (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    s_reply (outbox, "client-1", "r1", "ACCEPTED", "7", true);
    act_out_early (s_task (outbox, "worker-1", "7.1", false));
    s_reply (outbox, "client-2", "r2", "VALUE", "1", false);
    act_outbox_seal (outbox);                   //  The commit starts
    s_reply (outbox, "client-1", "r3", "ACCEPTED", "8", true);
    act_out_early (s_task (outbox, "worker-2", "8.1", false));
    s_task (outbox, "worker-3", "9.2", false);  //  Held: a retry
    //  A reply is never early
    act_out_t *reply = act_outbox_reply_to (outbox, "client-3", 8, "r4", 2, "PONG", false);
    act_out_early (reply);
    act_out_early (NULL);
    assert_int_equal (act_outbox_size (outbox), 7);

    unit_sent_t sent = { .size = 0 };
    assert_int_equal (act_outbox_flush_early (outbox, unit_sent_capture, &sent), 2);
    unit_assert_sent (&sent, 0, true, "worker-1", "ACTW01", "TASK", "7.1", "{}", NULL);
    unit_assert_sent (&sent, 1, true, "worker-2", "ACTW01", "TASK", "8.1", "{}", NULL);
    unit_sent_release (&sent);
    assert_int_equal (act_outbox_size (outbox), 5);
    //  Nothing more is early
    assert_int_equal (act_outbox_flush_early (outbox, unit_sent_capture, &sent), 0);
    assert_int_equal (sent.size, 0);

    //  The commit ends: the two sealed replies, in order, and only them
    assert_int_equal (act_outbox_flush_sealed (outbox, unit_sent_capture, &sent), 2);
    unit_assert_sent (&sent, 0, false, "client-1", "ACTC01", "ACCEPTED", "r1", "7", NULL);
    unit_assert_sent (&sent, 1, false, "client-2", "ACTC01", "VALUE", "r2", "1", NULL);
    unit_sent_release (&sent);
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 3);
    unit_assert_sent (&sent, 0, false, "client-1", "ACTC01", "ACCEPTED", "r3", "8", NULL);
    unit_assert_sent (&sent, 1, true, "worker-3", "ACTW01", "TASK", "9.2", "{}", NULL);
    unit_assert_sent (&sent, 2, false, "client-3", "ACTC01", "PONG", "r4", NULL);
    unit_sent_release (&sent);
    act_outbox_destroy (&outbox);
}

//  A batch awaits its early tasks' results (act_outbox_awaits_early) while
//  the messages not sealed are early tasks (out, or to leave) and patient
//  ones only: another reply or a held task ends the wait, and a sealed
//  batch's messages do not count.
static void
test_a_batch_awaits_early_tasks_among_patient_messages_only (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    s_reply (outbox, "client-0", "r0", "OK", NULL, true);
    act_outbox_seal (outbox);                   //  Its commit is in flight
    assert_false (act_outbox_awaits_early (outbox));
    act_out_patient (act_outbox_reply_to (outbox, "client-1", 8, "r1", 2, "ACCEPTED", true));
    assert_false (act_outbox_awaits_early (outbox));    //  No early task
    act_out_early (s_task (outbox, "worker-1", "7.1", false));
    assert_true (act_outbox_awaits_early (outbox));     //  To leave
    unit_sent_t sent = { .size = 0 };
    assert_int_equal (act_outbox_flush_early (outbox, unit_sent_capture, &sent), 1);
    unit_sent_release (&sent);
    assert_true (act_outbox_awaits_early (outbox));     //  Out
    act_out_patient (s_task (outbox, "worker-2", "HEARTBEAT", false));
    act_out_patient (NULL);
    assert_true (act_outbox_awaits_early (outbox));
    s_task (outbox, "worker-3", "9.2", false);          //  Held: a retry
    assert_false (act_outbox_awaits_early (outbox));
    act_outbox_flush (outbox, NULL, NULL);
    act_out_patient (act_outbox_reply_to (outbox, "client-1", 8, "r2", 2, "ACCEPTED", true));
    act_out_early (s_task (outbox, "worker-1", "8.1", false));
    assert_true (act_outbox_awaits_early (outbox));
    s_reply (outbox, "client-2", "r3", "DONE", "8", true);
    assert_false (act_outbox_awaits_early (outbox));
    act_outbox_destroy (&outbox);
}

//  An early task waits behind a message held for its commit to the same
//  worker (a DISCONNECT, a recovered call's TASK), and so does every later
//  early one to that worker; other workers' early tasks still go. A
//  failed commit drops what waited, and what had left stays sent.
static void
test_early_tasks_keep_their_order_per_worker (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    s_task (outbox, "worker-1", "1.3", false);                  //  Held
    act_out_early (s_task (outbox, "worker-1", "2.1", false));  //  Behind it
    act_out_early (s_task (outbox, "worker-2", "3.1", false));
    act_out_early (s_task (outbox, "worker-1", "4.1", false));  //  Behind it
    s_reply (outbox, "client-1", "r1", "ACCEPTED", "3", true);
    act_outbox_seal (outbox);

    unit_sent_t sent = { .size = 0 };
    assert_int_equal (act_outbox_flush_early (outbox, unit_sent_capture, &sent), 1);
    unit_assert_sent (&sent, 0, true, "worker-2", "ACTW01", "TASK", "3.1", "{}", NULL);
    unit_sent_release (&sent);
    assert_int_equal (act_outbox_size (outbox), 4);

    //  The commit fails: the tasks that waited are dropped with it
    assert_int_equal (act_outbox_refuse (outbox, NULL, NULL, NULL), 4);
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 1);
    unit_assert_sent (&sent, 0, false, "client-1", "ACTC01", "ERROR", "r1", "internal",
                      S_REFUSED, NULL);
    unit_sent_release (&sent);
    act_outbox_destroy (&outbox);
}

//  Once the held message to a worker has left with its commit, that
//  worker's next early tasks leave at once again; a task judged once is
//  not sent twice, and the slots of those that left are not sent either
static void
test_early_tasks_go_again_after_the_held_ones_left (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    unit_sent_t sent = { .size = 0 };
    s_task (outbox, "worker-1", "1.2", false);                  //  Held
    act_out_early (s_task (outbox, "worker-2", "2.1", false));
    act_outbox_seal (outbox);
    assert_int_equal (act_outbox_flush_early (outbox, unit_sent_capture, &sent), 1);
    act_out_early (s_task (outbox, "worker-1", "3.1", false));  //  Behind 1.2
    act_out_early (s_task (outbox, "worker-2", "4.1", false));
    assert_int_equal (act_outbox_flush_early (outbox, unit_sent_capture, &sent), 1);
    assert_int_equal (act_outbox_flush_early (outbox, unit_sent_capture, &sent), 0);
    unit_assert_sent (&sent, 0, true, "worker-2", "ACTW01", "TASK", "2.1", "{}", NULL);
    unit_assert_sent (&sent, 1, true, "worker-2", "ACTW01", "TASK", "4.1", "{}", NULL);
    unit_sent_release (&sent);
    //  The commit ends: the held one goes, and what waited behind it stays
    //  for the next commit, in order
    assert_int_equal (act_outbox_flush_sealed (outbox, unit_sent_capture, &sent), 1);
    unit_assert_sent (&sent, 0, true, "worker-1", "ACTW01", "TASK", "1.2", "{}", NULL);
    unit_sent_release (&sent);
    assert_int_equal (act_outbox_size (outbox), 1);
    act_out_early (s_task (outbox, "worker-1", "5.1", false));
    assert_int_equal (act_outbox_flush_early (outbox, unit_sent_capture, &sent), 2);
    unit_assert_sent (&sent, 0, true, "worker-1", "ACTW01", "TASK", "3.1", "{}", NULL);
    unit_assert_sent (&sent, 1, true, "worker-1", "ACTW01", "TASK", "5.1", "{}", NULL);
    unit_sent_release (&sent);
    assert_int_equal (act_outbox_size (outbox), 0);
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 0);
    assert_int_equal (sent.size, 0);
    act_outbox_destroy (&outbox);
}

//  Past 16 workers with held messages, the rest of the outbox waits for
//  its commit (a bound on the work of a pass, in a recovery), in order.
static void
test_early_tasks_wait_past_many_held_workers (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    char worker [32];
    for (int n = 0; n < 17; n++) {
        snprintf (worker, sizeof worker, "held-%d", n);
        s_task (outbox, worker, "1.2", false);
    }
    act_out_early (s_task (outbox, "other", "5.1", false));
    unit_sent_t sent = { .size = 0 };
    assert_int_equal (act_outbox_flush_early (outbox, unit_sent_capture, &sent), 0);
    assert_int_equal (act_outbox_size (outbox), 18);
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 18);
    unit_assert_sent (&sent, 17, true, "other", "ACTW01", "TASK", "5.1", "{}", NULL);
    unit_sent_release (&sent);
    act_outbox_destroy (&outbox);
}


//  --------------------------------------------------------------------------
//  After a failed commit

//  A durable reply (ACCEPTED, OK) becomes ERROR internal to the same
//  client and request id, and so does a VALUE (read from memory, which
//  may hold what the commit lost); DONE is dropped; messages to workers
//  are dropped; other replies (PONG, ERROR) stay; all keep their order.
static void
test_refuse_after_a_failed_commit (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    s_reply (outbox, "client-1", "r1", "ACCEPTED", "7", true);
    s_reply (outbox, "client-2", "r2", "VALUE", "{\"a\":1}", false);
    s_task (outbox, "worker-1", "7", false);
    s_reply (outbox, "client-1", "r3", "OK", "{\"seq\":4}", true);
    s_reply (outbox, "client-3", "r4", "DONE", "{\"call_id\":\"7\"}", true);
    s_task (outbox, "worker-2", "8", true);
    s_reply (outbox, "client-3", "r5", "PONG", NULL, false);
    zframe_t *client = zframe_from ("client-2");
    zframe_t *request = zframe_from ("r6");
    act_err_t err = { 0 };
    act_err_set (&err, ACT_E_BAD_JSON, "not JSON");
    act_outbox_error (outbox, client, request, "CALL", &err, NULL);
    zframe_destroy (&client);
    zframe_destroy (&request);
    assert_int_equal (act_outbox_size (outbox), 8);

    //  Refused or dropped: ACCEPTED, VALUE, the two tasks, OK, DONE; the
    //  refusals name the store's cause
    assert_int_equal (act_outbox_refuse (outbox, "database or disk is full", NULL, NULL), 6);
    assert_int_equal (act_outbox_size (outbox), 5);

    unit_sent_t sent = { .size = 0 };
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 5);
    unit_assert_sent (&sent, 0, false, "client-1", "ACTC01", "ERROR", "r1", "internal",
                      S_REFUSED_FULL, NULL);
    unit_assert_sent (&sent, 1, false, "client-2", "ACTC01", "ERROR", "r2", "internal",
                      S_REFUSED_FULL, NULL);
    unit_assert_sent (&sent, 2, false, "client-1", "ACTC01", "ERROR", "r3", "internal",
                      S_REFUSED_FULL, NULL);
    unit_assert_sent (&sent, 3, false, "client-3", "ACTC01", "PONG", "r5", NULL);
    unit_assert_sent (&sent, 4, false, "client-2", "ACTC01", "ERROR", "r6", "bad_json",
                      "not JSON", NULL);
    unit_sent_release (&sent);
    act_outbox_destroy (&outbox);
}

//  What refuse turned into errors is not refused again: a second refuse
//  (another failed commit before the flush) changes nothing.
static void
test_refuse_twice_changes_nothing_more (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    s_reply (outbox, "c", "r1", "ACCEPTED", "[\"1\",\"2\"]", true);
    s_reply (outbox, "c", "r2", "PONG", NULL, false);
    assert_int_equal (act_outbox_refuse (outbox, NULL, NULL, NULL), 1);
    assert_int_equal (act_outbox_refuse (outbox, NULL, NULL, NULL), 0);
    assert_int_equal (act_outbox_size (outbox), 2);
    unit_sent_t sent = { .size = 0 };
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 2);
    unit_assert_sent (&sent, 0, false, "c", "ACTC01", "ERROR", "r1", "internal", S_REFUSED, NULL);
    unit_assert_sent (&sent, 1, false, "c", "ACTC01", "PONG", "r2", NULL);
    unit_sent_release (&sent);
    act_outbox_destroy (&outbox);
}

//  Many messages (past the first allocation) keep their order and frames
//  through a refuse: the kept ones move, the refused ones are rebuilt.
static void
test_refuse_keeps_order_across_many_messages (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    char request [16];
    for (int i = 0; i < 600; i++) {
        snprintf (request, sizeof request, "%d", i);
        if (i % 3 == 0)
            s_reply (outbox, "c", request, "OK", "{\"seq\":1}", true);
        else
        if (i % 3 == 1)
            s_reply (outbox, "c", request, "PONG", NULL, false);
        else
            s_task (outbox, "w", request, false);
    }
    assert_int_equal (act_outbox_refuse (outbox, NULL, NULL, NULL), 400);
    assert_int_equal (act_outbox_size (outbox), 400);

    unit_sent_t sent = { .size = 0 };
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 400);
    size_t index = 0;
    for (int i = 0; i < 600; i++) {
        snprintf (request, sizeof request, "%d", i);
        if (i % 3 == 0)
            unit_assert_sent (&sent, index++, false, "c", "ACTC01", "ERROR", request,
                              "internal", S_REFUSED, NULL);
        else
        if (i % 3 == 1)
            unit_assert_sent (&sent, index++, false, "c", "ACTC01", "PONG", request, NULL);
    }
    assert_int_equal (index, sent.size);
    unit_sent_release (&sent);
    act_outbox_destroy (&outbox);
}

//  A send function that holds what it is given, as libzmq holds what it
//  has not written to a connection yet
typedef struct {
    zmq_msg_t parts [64];       //  Frames held
    size_t size;                //  Frames held
    size_t messages;            //  Messages taken
    size_t to [2];              //  Messages taken per client ("slow", "fast")
} s_held_t;

static bool
s_hold (void *arg, bool to_worker, zmq_msg_t *parts, size_t nparts)
{
    (void) to_worker;
    s_held_t *held = (s_held_t *) arg;
    held->to [*(char *) zmq_msg_data (&parts [0]) == 'f']++;
    for (size_t part = 0; part < nparts && held->size < 64; part++) {
        zmq_msg_init (&held->parts [held->size]);
        zmq_msg_move (&held->parts [held->size++], &parts [part]);
    }
    held->messages++;
    return true;
}

//  libzmq lets go of everything it held (written, or the connection gone)
static void
s_release (s_held_t *held)
{
    for (size_t part = 0; part < held->size; part++)
        zmq_msg_close (&held->parts [part]);
    held->size = 0;
}

static void
test_a_client_past_max_client_bytes_is_cut_once (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    act_outbox_set_max_client_bytes (outbox, 65536);
    char *body = malloc (40001);
    memset (body, 'x', 40000);
    body [40000] = 0;
    zframe_t *slow = zframe_from ("slow");
    s_held_t held = { .size = 0 };
    //  The first reply goes (nothing held); the second would pass the bound
    s_reply (outbox, "slow", "r1", "VALUE", body, false);
    s_reply (outbox, "slow", "r2", "VALUE", body, false);
    s_reply (outbox, "fast", "r3", "VALUE", body, false);
    assert_int_equal (act_outbox_flush (outbox, s_hold, &held), 2);
    assert_int_equal (held.to [0], 1);
    assert_int_equal (held.to [1], 1);
    assert_true (act_outbox_client_over (outbox, slow));
    assert_int_equal (act_outbox_cuts (outbox), 1);
    zframe_t *cut = act_outbox_next_cut (outbox);
    assert_non_null (cut);
    assert_true (zframe_eq (cut, slow));
    zframe_destroy (&cut);
    assert_null (act_outbox_next_cut (outbox));
    //  While libzmq holds its replies it gets none, even small ones, and
    //  is not listed again
    s_reply (outbox, "slow", "r4", "VALUE", body, false);
    assert_int_equal (act_outbox_flush (outbox, s_hold, &held), 0);
    assert_null (act_outbox_next_cut (outbox));
    assert_int_equal (act_outbox_cuts (outbox), 1);
    //  Its connection gone, libzmq frees what it held: it starts clean
    s_release (&held);
    assert_int_equal (act_outbox_client_bytes (outbox), 0);
    assert_false (act_outbox_client_over (outbox, slow));
    s_reply (outbox, "slow", "r5", "VALUE", body, false);
    assert_int_equal (act_outbox_flush (outbox, s_hold, &held), 1);
    assert_int_equal (held.to [0], 2);
    assert_int_equal (act_outbox_cuts (outbox), 1);
    s_release (&held);
    zframe_destroy (&slow);
    free (body);
    act_outbox_destroy (&outbox);
}

//  A worker's account counts the large frames of messages charged to it
//  from when they are built until libzmq lets them go, whether they were
//  sent or refused; small frames and other workers' are not counted, and
//  the account outlives its holder while frames hold it
static void
test_a_workers_large_frames_count_until_libzmq_lets_them_go (void **state)
{
    (void) state;
    act_outbox_t *outbox = act_outbox_new ();
    act_held_t *account = act_held_new ();
    assert_non_null (account);
    char *params = malloc (1000);
    memset (params, 'p', 1000);
    s_held_t held = { .size = 0 };
    for (int i = 0; i < 3; i++) {
        act_out_t *task = act_outbox_add (outbox, true, false);
        act_out_charge (task, account);
        act_out_addstr (task, "w1");
        act_out_addstr (task, "TASK");
        act_out_add (task, params, 1000);
        act_out_add (task, params, 100);    //  Too small to count
    }
    act_out_t *other = act_outbox_add (outbox, true, false);
    act_out_addstr (other, "w2");
    act_out_add (other, params, 1000);
    assert_int_equal (act_held_bytes (account), 3000);
    //  Sent: libzmq holds them until it has written them
    assert_int_equal (act_outbox_flush (outbox, s_hold, &held), 4);
    assert_int_equal (act_held_bytes (account), 3000);
    s_release (&held);
    assert_int_equal (act_held_bytes (account), 0);
    //  Refused after a failed commit: dropped, so no longer held
    act_out_t *task = act_outbox_add (outbox, true, false);
    act_out_charge (task, account);
    act_out_addstr (task, "w1");
    act_out_add (task, params, 1000);
    assert_int_equal (act_held_bytes (account), 1000);
    act_outbox_refuse (outbox, NULL, NULL, NULL);
    assert_int_equal (act_held_bytes (account), 0);
    //  The holder lets go first; a frame still held keeps the account
    task = act_outbox_add (outbox, true, false);
    act_out_charge (task, account);
    act_out_addstr (task, "w1");
    act_out_add (task, params, 1000);
    act_held_destroy (&account);
    act_held_destroy (&account);
    assert_null (account);
    assert_int_equal (act_outbox_flush (outbox, s_hold, &held), 1);
    s_release (&held);
    assert_int_equal (act_held_bytes (NULL), 0);
    free (params);
    act_outbox_destroy (&outbox);
}



//  --------------------------------------------------------------------------
//  Owners

//  What a guard was asked
typedef struct {
    size_t calls;               //  Times it was asked
    char owner [ACT_OWNER_SIZE];    //  The last key asked about
    bool context;               //  The last question named a context
} s_asked_t;

//  A guard for which every routing id is now another key's connection
static bool
s_other_key (void *arg, const void *id, size_t size, const char *owner, const char *context)
{
    (void) id;
    (void) size;
    s_asked_t *asked = (s_asked_t *) arg;
    asked->calls++;
    snprintf (asked->owner, sizeof asked->owner, "%s", owner);
    asked->context = context != NULL;
    return false;
}

//  While a request of a CURVE client is served, the replies to its routing
//  id (not those to others, not those built after) are owed to its key,
//  with no context: one that another key's connection took is withheld.
//  Without a key (CURVE off) the guard is never asked.
static void
test_replies_to_the_client_served_are_owed_to_its_key (void **state)
{
    (void) state;
    const char *key = "rq:z6Mf7/w+0G)d{1.!uL<9gRCTVBf6<yrB.Gz>G";
    act_outbox_t *outbox = act_outbox_new ();
    s_asked_t asked = { 0 };
    act_outbox_set_guard (outbox, s_other_key, &asked);
    zframe_t *client = zframe_from ("client-1");
    act_outbox_serving (outbox, client, key);
    s_reply (outbox, "client-1", "r1", "ACCEPTED", "12", true);
    s_reply (outbox, "client-2", "w1", "EVENT", "{}", true);     //  Another's watch
    act_outbox_serving (outbox, NULL, NULL);
    s_reply (outbox, "client-1", "r2", "PONG", NULL, false);
    unit_sent_t sent = { .size = 0 };
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 2);
    unit_assert_sent (&sent, 0, false, "client-2", "ACTC01", "EVENT", "w1", "{}", NULL);
    unit_assert_sent (&sent, 1, false, "client-1", "ACTC01", "PONG", "r2", NULL);
    unit_sent_release (&sent);
    assert_int_equal (asked.calls, 1);
    assert_string_equal (asked.owner, key);
    assert_false (asked.context);
    assert_int_equal (act_outbox_unowned (outbox), 1);
    //  CURVE off: no key, no owner, nothing asked
    act_outbox_serving (outbox, client, NULL);
    s_reply (outbox, "client-1", "r3", "PONG", NULL, false);
    act_outbox_serving (outbox, NULL, NULL);
    sent.size = 0;
    assert_int_equal (act_outbox_flush (outbox, unit_sent_capture, &sent), 1);
    unit_sent_release (&sent);
    assert_int_equal (asked.calls, 1);
    zframe_destroy (&client);
    act_outbox_destroy (&outbox);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_messages_leave_in_order_with_their_frames),
        cmocka_unit_test (test_error_reply_echoes_the_request),
        cmocka_unit_test (test_flush_empties_it),
        cmocka_unit_test (test_sealed_batches_leave_in_order_as_the_room_is_reused),
        cmocka_unit_test (test_a_failed_send_counts_as_not_sent),
        cmocka_unit_test (test_adders_are_null_safe),
        cmocka_unit_test (test_refuse_after_a_failed_commit),
        cmocka_unit_test (test_refuse_twice_changes_nothing_more),
        cmocka_unit_test (test_refuse_keeps_order_across_many_messages),
        cmocka_unit_test (test_a_client_past_max_client_bytes_is_cut_once),
        cmocka_unit_test (test_a_workers_large_frames_count_until_libzmq_lets_them_go),
        cmocka_unit_test (test_early_tasks_leave_before_their_commit),
        cmocka_unit_test (test_early_tasks_keep_their_order_per_worker),
        cmocka_unit_test (test_early_tasks_go_again_after_the_held_ones_left),
        cmocka_unit_test (test_early_tasks_wait_past_many_held_workers),
        cmocka_unit_test (test_a_batch_awaits_early_tasks_among_patient_messages_only),
        cmocka_unit_test (test_replies_to_the_client_served_are_owed_to_its_key),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
