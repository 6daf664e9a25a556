/*  =========================================================================
    test_pool - activities and workers (daemon/act_pool.c) on their own:
    which idle activities are kept (act_pool_idle), those of workers that
    left among them, the bound on unserved activities with calls
    (act_pool_admit), the bounds on the activities READYs name
    (act_pool_ready_names, act_pool_room), STATS' entries within a
    number of bytes (act_pool_stats, PROTOCOL.md sections 1 and 4), and
    the tasks workers keep through a failed commit.
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
#include "act_pool.h"

//  The defaults every pool takes its activities' settings from
static act_settings_t *s_settings;

static int
s_group_setup (void **state)
{
    (void) state;
    act_log_threshold = LOG_ERR;
    act_log_stream = NULL;
    s_settings = act_settings_new ();
    s_settings->log_syslog = false;
    return 0;
}

static int
s_group_teardown (void **state)
{
    (void) state;
    act_settings_destroy (&s_settings);
    return 0;
}

//  Each test has a new pool as its state
static int
s_setup (void **state)
{
    *state = act_pool_new (s_settings);
    return 0;
}

static int
s_teardown (void **state)
{
    act_pool_t *pool = (act_pool_t *) *state;
    act_pool_destroy (&pool);
    return 0;
}

//  A call of activity name, made if new, ends, as act_flow's s_call_finish
//  counts it (the activity may be forgotten by then)
static void
s_call_ends (act_pool_t *pool, const char *name)
{
    act_activity_t *activity = act_pool_activity (pool, name);
    activity->done++;
    act_pool_idle (pool, activity);
}

//  STATS' activities, every one (no bound), as a new object
static json_t *
s_activities (act_pool_t *pool)
{
    json_t *stats = json_object ();
    act_pool_stats (pool, stats, SIZE_MAX);
    assert_null (json_object_get (stats, "activities_left_out"));
    json_t *activities = json_incref (json_object_get (stats, "activities"));
    json_decref (stats);
    return activities;
}

//  True when STATS lists activity name
static bool
s_listed (act_pool_t *pool, const char *name)
{
    json_t *activities = s_activities (pool);
    bool listed = json_object_get (activities, name) != NULL;
    json_decref (activities);
    return listed;
}

//  The activities no worker served are kept, once idle, the 1024 that
//  became so last: the oldest are forgotten
static void
test_idle_activities_are_kept_the_most_recent (void **state)
{
    act_pool_t *pool = (act_pool_t *) *state;
    char name [16];
    for (int n = 0; n < ACT_POOL_IDLE_KEPT + 10; n++) {
        snprintf (name, sizeof name, "a%04d", n);
        s_call_ends (pool, name);
    }
    json_t *activities = s_activities (pool);
    assert_int_equal (json_object_size (activities), ACT_POOL_IDLE_KEPT);
    assert_null (json_object_get (activities, "a0009"));
    assert_non_null (json_object_get (activities, "a0010"));
    assert_int_equal (json_integer_value (json_object_get (json_object_get (activities,
                                                                            "a1033"), "done")),
                      1);
    json_decref (activities);
}

//  One named again is in use: it is not forgotten, and counts as idle
//  again, the most recent, when its call ends
static void
test_activity_in_use_is_kept_and_idle_again_last (void **state)
{
    act_pool_t *pool = (act_pool_t *) *state;
    char name [16];
    for (int n = 0; n < ACT_POOL_IDLE_KEPT; n++) {
        snprintf (name, sizeof name, "a%04d", n);
        s_call_ends (pool, name);
    }
    act_activity_t *oldest = act_pool_activity (pool, "a0000");
    oldest->backlog = 1;                        //  A call waits for it
    s_call_ends (pool, "b");
    assert_true (s_listed (pool, "a0000"));
    assert_true (s_listed (pool, "a0001"));
    oldest->backlog = 0;                        //  Its call ended
    s_call_ends (pool, "a0000");
    assert_true (s_listed (pool, "a0000"));
    assert_false (s_listed (pool, "a0001"));
    json_t *activities = s_activities (pool);
    assert_int_equal (json_object_size (activities), ACT_POOL_IDLE_KEPT);
    json_decref (activities);
}

//  The names the pool told its forget hook of, in order
static zlistx_t *s_forgotten_names;

static void
s_forgotten (void *arg, const char *activity)
{
    assert_ptr_equal (arg, &s_forgotten_names);
    zlistx_add_end (s_forgotten_names, (void *) activity);
}

//  A pool whose forget hook records the names in s_forgotten_names
static int
s_setup_hooked (void **state)
{
    s_setup (state);
    s_forgotten_names = zlistx_new ();
    zlistx_set_duplicator (s_forgotten_names, (czmq_duplicator *) strdup);
    zlistx_set_destructor (s_forgotten_names, (czmq_destructor *) zstr_free);
    act_pool_on_forget ((act_pool_t *) *state, s_forgotten, &s_forgotten_names);
    return 0;
}

static int
s_teardown_hooked (void **state)
{
    zlistx_destroy (&s_forgotten_names);
    return s_teardown (state);
}

//  A worker (key, its routing id too) joins, serving the activity name
static act_worker_t *
s_join (act_pool_t *pool, const char *key, const char *name)
{
    zframe_t *identity = zframe_new (key, strlen (key));
    json_t *names = json_pack ("[s]", name);
    act_worker_t *worker = act_pool_join (pool, identity, key, ACT_PROTO_ACTW, false,
                                          names, 1, key, "c");
    json_decref (names);
    zframe_destroy (&identity);
    return worker;
}

//  True when the forget hook was told of name
static bool
s_told (const char *name)
{
    for (const char *told = zlistx_first (s_forgotten_names); told;
         told = zlistx_next (s_forgotten_names))
        if (streq (told, name))
            return true;
    return false;
}

//  An activity a READY named is idle once its last worker left and it has
//  no call: the one idle the longest is forgotten, the hook told. One
//  with a worker, or a call queued or running, is kept however many others
//  are idle; one whose running call ends is idle then
static void
test_activity_whose_workers_left_is_idle (void **state)
{
    act_pool_t *pool = (act_pool_t *) *state;
    act_worker_t *gone = s_join (pool, "w1", "served");
    s_join (pool, "w2", "live");
    act_worker_t *leaving = s_join (pool, "w3", "queued");
    act_worker_t *running = s_join (pool, "w4", "busy");
    act_worker_t *second = s_join (pool, "w5", "served");     //  Two serve it
    act_pool_activity (pool, "busy")->running = 1;
    act_pool_remove (pool, gone);
    act_pool_remove (pool, running);
    act_pool_activity (pool, "queued")->backlog = 1;
    act_pool_remove (pool, leaving);
    char name [16];
    for (int n = 0; n < ACT_POOL_IDLE_KEPT; n++) {
        snprintf (name, sizeof name, "a%04d", n);
        s_call_ends (pool, name);
    }
    assert_true (s_listed (pool, "served"));    //  w5 still serves it
    act_pool_remove (pool, second);
    for (int n = ACT_POOL_IDLE_KEPT; n < ACT_POOL_IDLE_KEPT + 10; n++) {
        snprintf (name, sizeof name, "a%04d", n);
        s_call_ends (pool, name);
    }
    //  a0000 to a0009 went first: "served" was idle later than they
    assert_true (s_listed (pool, "served"));
    assert_true (s_told ("a0009"));
    assert_false (s_told ("served"));
    for (int n = ACT_POOL_IDLE_KEPT + 10; n < 2 * ACT_POOL_IDLE_KEPT; n++) {
        snprintf (name, sizeof name, "a%04d", n);
        s_call_ends (pool, name);
    }
    assert_false (s_listed (pool, "served"));
    assert_true (s_told ("served"));
    assert_true (s_listed (pool, "live"));
    assert_true (s_listed (pool, "queued"));
    assert_true (s_listed (pool, "busy"));
    json_t *activities = s_activities (pool);
    assert_int_equal (json_object_size (activities), ACT_POOL_IDLE_KEPT + 3);
    json_decref (activities);
    //  Its task ended: idle, the most recent
    act_activity_t *busy = act_pool_activity (pool, "busy");
    busy->running = 0;
    s_call_ends (pool, "busy");
    activities = s_activities (pool);
    assert_int_equal (json_object_size (activities), ACT_POOL_IDLE_KEPT + 2);
    assert_non_null (json_object_get (activities, "busy"));
    json_decref (activities);
    //  2048 names and "served" were idle, "busy" then: 1024 are kept
    assert_int_equal (zlistx_size (s_forgotten_names), ACT_POOL_IDLE_KEPT + 2);
}

//  Workers that come and go, each naming a new activity, leave at most
//  ACT_POOL_IDLE_KEPT activities behind; one that comes back has fresh
//  counts
static void
test_workers_that_come_and_go_leave_a_bounded_number (void **state)
{
    act_pool_t *pool = (act_pool_t *) *state;
    char name [16];
    for (int n = 0; n < 3 * ACT_POOL_IDLE_KEPT; n++) {
        snprintf (name, sizeof name, "w%04d", n);
        act_worker_t *worker = s_join (pool, name, name);
        if (n == 0)
            s_call_ends (pool, name);           //  It has a count
        act_pool_remove (pool, worker);
    }
    assert_int_equal (act_pool_size (pool), 0);
    json_t *activities = s_activities (pool);
    assert_int_equal (json_object_size (activities), ACT_POOL_IDLE_KEPT);
    assert_null (json_object_get (activities, "w0000"));
    assert_non_null (json_object_get (activities, "w3071"));
    json_decref (activities);
    assert_int_equal (zlistx_size (s_forgotten_names), 2 * ACT_POOL_IDLE_KEPT);
    assert_string_equal (zlistx_first (s_forgotten_names), "w0000");
    act_pool_prune (pool);                      //  Leaves the idle ones
    activities = s_activities (pool);
    assert_int_equal (json_object_size (activities), ACT_POOL_IDLE_KEPT);
    json_decref (activities);
    s_join (pool, "back", "w0000");
    assert_int_equal (act_pool_activity (pool, "w0000")->done, 0);
}

//  Workers detached together (dead at one heartbeat round), then removed
//  one by one: an activity forgotten as one leaves is one the others no
//  longer refer to
static void
test_workers_detached_together_then_removed (void **state)
{
    act_pool_t *pool = (act_pool_t *) *state;
    act_worker_t *first = s_join (pool, "w1", "one");
    act_worker_t *second = s_join (pool, "w2", "two");
    act_pool_detach (pool, second);
    act_pool_detach (pool, first);
    char name [16];
    for (int n = 0; n < ACT_POOL_IDLE_KEPT - 1; n++) {
        snprintf (name, sizeof name, "a%04d", n);
        s_call_ends (pool, name);
    }
    assert_true (s_told ("two"));
    assert_false (s_told ("one"));
    act_pool_remove (pool, first);
    act_pool_remove (pool, second);
    assert_int_equal (act_pool_size (pool), 0);
    assert_true (s_listed (pool, "one"));
}

//  STATS lists what fits in the bytes given, the activities in use
//  first, and counts the others; with room for all, no count
static void
test_stats_entries_stay_within_the_bytes_given (void **state)
{
    act_pool_t *pool = (act_pool_t *) *state;
    char name [16];
    for (int n = 0; n < 50; n++) {
        snprintf (name, sizeof name, "x%02d", n);
        s_call_ends (pool, name);
    }
    act_pool_activity (pool, "busy")->backlog = 1;
    json_t *stats = json_pack ("{si}", "uptime_ms", 1);
    act_pool_stats (pool, stats, 4096);
    char *text = act_json_dump (stats);
    assert_true (strlen (text) <= 4096);
    json_t *activities = json_object_get (stats, "activities");
    json_int_t left_out = json_integer_value (json_object_get (stats, "activities_left_out"));
    assert_true (left_out > 0);
    assert_int_equal (json_object_size (activities) + (size_t) left_out, 51);
    assert_non_null (json_object_get (activities, "busy"));
    assert_int_equal (json_array_size (json_object_get (stats, "workers")), 0);
    assert_null (json_object_get (stats, "workers_left_out"));
    free (text);
    json_decref (stats);
    activities = s_activities (pool);
    assert_int_equal (json_object_size (activities), 51);
    json_decref (activities);
}

//  A call of activity name is submitted, as act_tools_admit asks: true
//  when admitted, then its place in the backlog taken
static bool
s_admit (act_pool_t *pool, const char *name)
{
    act_activity_t *activity = act_pool_activity (pool, name);
    if (!act_pool_admit (pool, activity, true))
        return false;
    activity->backlog++;
    return true;
}

//  STATS' member name ("unserved", "served"), as a new reference
static json_t *
s_stats_member (act_pool_t *pool, const char *name)
{
    json_t *stats = json_object ();
    act_pool_stats (pool, stats, SIZE_MAX);
    json_t *member = json_incref (json_object_get (stats, name));
    json_decref (stats);
    return member;
}

//  Of the activities no READY named, with calls, at most
//  max_unserved_activities at once: a call naming one more is refused
//  (counted), one naming one counted is not. One leaves the count when a
//  READY names it, when its last call ends, or when a refused request's
//  calls are gone (act_pool_prune); a recovered call is not refused
static void
test_unserved_activities_with_calls_are_bounded (void **state)
{
    act_pool_t *pool = (act_pool_t *) *state;
    s_settings->max_unserved_activities = 2;
    assert_true (s_admit (pool, "a"));
    assert_true (s_admit (pool, "b"));
    assert_false (s_admit (pool, "c"));
    assert_true (s_admit (pool, "a"));          //  Counted already
    json_t *unserved = s_stats_member (pool, "unserved");
    json_t *expected = json_pack ("{sisisi}", "activities", 2, "max", 2, "refused", 1);
    assert_true (json_equal (unserved, expected));
    json_decref (unserved);
    json_decref (expected);
    //  Served now: room for one; served ones take any number
    s_join (pool, "w1", "b");
    assert_true (s_admit (pool, "b"));
    assert_true (s_admit (pool, "c"));
    assert_false (s_admit (pool, "d"));
    //  a's calls end: room for one
    act_activity_t *a = act_pool_activity (pool, "a");
    a->backlog = 0;
    a->done = 2;
    act_pool_idle (pool, a);
    assert_true (s_admit (pool, "d"));
    //  A refused request's call of d is gone: room for one, and d forgotten
    act_pool_activity (pool, "d")->backlog = 0;
    act_pool_prune (pool);
    assert_false (s_listed (pool, "d"));
    //  Recovered: admitted past the bound
    assert_true (s_admit (pool, "e"));
    assert_true (act_pool_admit (pool, act_pool_activity (pool, "f"), false));
    unserved = s_stats_member (pool, "unserved");
    assert_int_equal (json_integer_value (json_object_get (unserved, "activities")), 3);
    assert_int_equal (json_integer_value (json_object_get (unserved, "refused")), 2);
    json_decref (unserved);
    s_settings->max_unserved_activities = 1024;
}

//  Whether a READY naming the activities of text (a JSON array) has room
static bool
s_room (act_pool_t *pool, const char *text)
{
    json_t *names = json_loads (text, 0, NULL);
    act_err_t err = { 0 };
    int rc = act_pool_room (pool, names, &err);
    json_decref (names);
    if (rc)
        assert_string_equal (err.code, ACT_E_BUSY);
    return rc == 0;
}

//  A READY names at most max_worker_activities (its entries counted); of
//  the activities connected workers serve, at most max_served_activities:
//  a READY is refused when those none serves among its names, each
//  counted once, would pass it. An activity leaves the count when its last
//  worker leaves; each refusal is counted in STATS
static void
test_the_activities_readys_name_are_bounded (void **state)
{
    act_pool_t *pool = (act_pool_t *) *state;
    s_settings->max_worker_activities = 2;
    s_settings->max_served_activities = 3;
    act_err_t err = { 0 };
    assert_int_equal (act_pool_ready_names (pool, 2, &err), 0);
    assert_int_equal (act_pool_ready_names (pool, 3, &err), -1);
    assert_string_equal (err.code, ACT_E_BAD_ARGUMENT);
    assert_string_equal (err.message, "READY names 3 activities, more than "
                                      "max_worker_activities (2)");
    assert_true (s_room (pool, "[\"a\", \"b\", \"c\"]"));
    act_worker_t *first = s_join (pool, "w1", "a");
    s_join (pool, "w2", "b");
    s_join (pool, "w3", "b");                   //  Served already
    assert_true (s_room (pool, "[\"a\", \"c\", \"c\"]"));
    assert_false (s_room (pool, "[\"c\", \"d\"]"));
    s_join (pool, "w4", "c");
    assert_false (s_room (pool, "[\"d\"]"));
    assert_true (s_room (pool, "[\"a\", \"b\"]"));
    //  a's worker leaves: room for one
    act_pool_detach (pool, first);
    assert_true (s_room (pool, "[\"d\"]"));
    json_t *served = s_stats_member (pool, "served");
    json_t *expected = json_pack ("{sisisisisi}", "activities", 2, "max", 3, "refused", 2,
                                  "max_per_worker", 2, "refused_per_worker", 1);
    assert_true (json_equal (served, expected));
    json_decref (served);
    json_decref (expected);
    act_pool_remove (pool, first);
    s_settings->max_worker_activities = 1024;
    s_settings->max_served_activities = 4096;
}

//  A worker of protocol whose routing id is id and whose key is its hex
//  (as the broker keys them), serving "a"
static act_worker_t *
s_join_proto (act_pool_t *pool, const char *id, const char *key, act_proto_t protocol,
              bool envelope)
{
    zframe_t *identity = zframe_new (id, strlen (id));
    json_t *names = json_pack ("[s]", "a");
    act_worker_t *worker = act_pool_join (pool, identity, key, protocol, envelope, names, 4,
                                          id, "c");
    json_decref (names);
    zframe_destroy (&identity);
    return worker;
}

//  A failed commit keeps workers and their tasks (act_broker_reset): a
//  task is found by the call that takes it back (act_pool_holder) until
//  it is marked an orphan (cancelled: its slot stays taken until the
//  worker answers), and a TASK the failed commit dropped unsent frees its
//  slot (act_pool_unsent, in ACT/1 and Majordomo framing); nothing else
//  the outbox drops does
static void
test_tasks_kept_through_a_failed_commit (void **state)
{
    act_pool_t *pool = (act_pool_t *) *state;
    act_worker_t *actw = s_join_proto (pool, "w1", "7731", ACT_PROTO_ACTW, false);
    act_worker_t *mdp = s_join_proto (pool, "m1", "6D31", ACT_PROTO_MDP1, true);
    act_worker_hold (actw, "5.1", 5, 1);
    act_worker_hold (actw, "6.2", 6, 2);
    assert_ptr_equal (act_pool_holder (pool, "5.1"), actw);
    assert_null (act_pool_holder (pool, "6.1"));
    assert_true (act_worker_orphan (actw, "6.2"));
    assert_false (act_worker_orphan (actw, "6.2"));     //  Once
    assert_false (act_worker_orphan (actw, "9.1"));     //  Not held
    assert_null (act_pool_holder (pool, "6.2"));
    assert_int_equal (zhashx_size (actw->tasks), 2);
    //  Tasks dispatched in the pass whose commit fails, and other messages
    act_outbox_t *outbox = act_outbox_new ();
    act_outbox_on_unsent (outbox, act_pool_unsent, pool);
    act_worker_hold (actw, "7.1", 7, 1);
    act_worker_task (outbox, actw, "7.1", "a", "{}", "{}");
    act_worker_hold (mdp, "8.1", 8, 1);
    act_worker_task (outbox, mdp, "8.1", "a", "{}", "{}");
    act_worker_send (outbox, actw, "HEARTBEAT");
    act_out_addstr (act_worker_send (outbox, actw, "CANCEL"), "5.1");
    assert_int_equal (act_outbox_refuse (outbox, NULL, NULL, NULL), 4);
    assert_int_equal (zhashx_size (actw->tasks), 2);
    assert_ptr_equal (act_pool_holder (pool, "5.1"), actw);
    assert_null (act_pool_holder (pool, "7.1"));
    assert_int_equal (zhashx_size (mdp->tasks), 0);
    act_outbox_destroy (&outbox);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_idle_activities_are_kept_the_most_recent,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_activity_in_use_is_kept_and_idle_again_last,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_activity_whose_workers_left_is_idle,
                                         s_setup_hooked, s_teardown_hooked),
        cmocka_unit_test_setup_teardown (test_workers_that_come_and_go_leave_a_bounded_number,
                                         s_setup_hooked, s_teardown_hooked),
        cmocka_unit_test_setup_teardown (test_workers_detached_together_then_removed,
                                         s_setup_hooked, s_teardown_hooked),
        cmocka_unit_test_setup_teardown (test_stats_entries_stay_within_the_bytes_given,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_unserved_activities_with_calls_are_bounded,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_the_activities_readys_name_are_bounded,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_tasks_kept_through_a_failed_commit,
                                         s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, s_group_setup, s_group_teardown);
}
