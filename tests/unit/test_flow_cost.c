/*  =========================================================================
    test_flow_cost - what a worker's turn costs, counted through a real
    broker without sockets (commands_fixture.h): the activities
    act_flow_worker_ready looks at (act_flow_ready_steps), never time.

    A worker serving many activities gets its calls in turn, one activity
    after another from where its last call came from (round robin), and
    each turn, at each of its results, looks at each activity once: it
    walked from the first activity to each in turn, 524,800 steps a turn
    for a worker of 1,024 activities (an audit of what one request can
    cost).
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "commands_fixture.h"
#include "act_flow.h"

#define S_WORKER    "worker-1"      //  The worker's routing id
#define S_NAMES     1024            //  Activities it serves (the default bound)

//  Feed msg, from the worker socket, to the broker and end the pass
static void
s_feed_worker (s_world_t *world, zmsg_t *msg)
{
    act_broker_worker_message (world->broker, &msg);
    assert_null (msg);
    act_broker_pass (world->broker);
}

//  The worker joins, serving a0000 to a1023, one task at a time
static void
s_join (s_world_t *world)
{
    json_t *names = json_array ();
    for (int i = 0; i < S_NAMES; i++)
        json_array_append_new (names, json_sprintf ("a%04d", i));
    json_t *body = json_pack ("{sosi}", "activities", names, "capacity", 1);
    char *text = json_dumps (body, JSON_COMPACT);
    s_feed_worker (world, s_frames (S_WORKER, "ACTW01", "READY", text, NULL));
    free (text);
    json_decref (body);
}

//  Call activity, without an output path
static void
s_call (s_world_t *world, const char *activity)
{
    char params [64];
    snprintf (params, sizeof params, "{\"_tool\":\"%s\"}", activity);
    s_request (world, "CALL", activity, "ctx", params, NULL);
}

//  The activity of the one TASK among the messages sent since the last
//  look (a static buffer), and answer it; "" when none was sent
static const char *
s_answer_task (s_world_t *world)
{
    static char activity [32];
    *activity = 0;
    char *id = NULL;
    for (size_t i = 0; i < world->sent.size; i++) {
        zmsg_t *msg = world->sent.messages [i];
        if (!world->sent.to_worker [i])
            continue;
        zframe_t *frame = zmsg_first (msg);     //  Routing id
        frame = zmsg_next (msg);                //  ACTW01
        frame = zmsg_next (msg);
        if (!zframe_streq (frame, "TASK"))
            continue;
        assert_null (id);                       //  Capacity 1: one at a time
        id = zframe_strdup (zmsg_next (msg));
        char *name = zframe_strdup (zmsg_next (msg));
        snprintf (activity, sizeof activity, "%s", name);
        free (name);
    }
    unit_sent_clear (&world->sent);
    if (id) {
        s_feed_worker (world, s_frames (S_WORKER, "ACTW01", "RESULT", id, "1", NULL));
        free (id);
    }
    return activity;
}

//  Its calls come one activity after another, from where the last of its
//  turns left off, whatever order they were made in; each turn looks at
//  each activity at most once (it looked at n^2/2)
static void
test_a_turn_looks_at_each_activity_once (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_join (world);
    s_call (world, "a0005");                    //  Sent at once: the worker is free
    s_call (world, "a1000");                    //  Queued behind it
    s_call (world, "a0002");
    s_call (world, "a0700");
    //  a0005 was dispatched as it came: the worker's own turns start at
    //  its first activity, then go on from each one served
    const char *expected [] = { "a0005", "a0002", "a0700", "a1000", "" };
    size_t most = 0;
    for (size_t i = 0; i < sizeof expected / sizeof expected [0]; i++) {
        size_t before = act_flow_ready_steps ();
        //  Answering the task sent makes the worker free: its turn
        assert_string_equal (s_answer_task (world), expected [i]);
        size_t steps = act_flow_ready_steps () - before;
        most = steps > most? steps: most;
    }
    print_message ("a worker of %d activities: at most %zu steps a turn\n", S_NAMES, most);
    assert_true (most >= S_NAMES);              //  It did look at them all
    assert_true (most <= 2 * S_NAMES);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_a_turn_looks_at_each_activity_once,
                                         s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
