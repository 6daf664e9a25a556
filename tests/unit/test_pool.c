/*  =========================================================================
    test_pool - activities and workers (daemon/act_pool.c) on their own:
    which idle activities are kept (act_pool_idle), and STATS' entries
    within a number of bytes (act_pool_stats, PROTOCOL.md sections 1 and 4).
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
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

//  An activity a READY named is kept after its worker left, however many
//  others are idle
static void
test_served_activity_is_kept (void **state)
{
    act_pool_t *pool = (act_pool_t *) *state;
    zframe_t *identity = zframe_new ("w1", 2);
    json_t *names = json_pack ("[s]", "served");
    act_worker_t *worker = act_pool_join (pool, identity, "7731", ACT_PROTO_ACTW,
                                          false, names, 1, "w1", "c");
    act_pool_remove (pool, worker);
    s_call_ends (pool, "served");
    char name [16];
    for (int n = 0; n < ACT_POOL_IDLE_KEPT + 10; n++) {
        snprintf (name, sizeof name, "a%04d", n);
        s_call_ends (pool, name);
    }
    assert_true (s_listed (pool, "served"));
    json_decref (names);
    zframe_destroy (&identity);
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

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_idle_activities_are_kept_the_most_recent,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_activity_in_use_is_kept_and_idle_again_last,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_served_activity_is_kept, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_stats_entries_stay_within_the_bytes_given,
                                         s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, s_group_setup, s_group_teardown);
}
