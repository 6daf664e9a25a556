/*  =========================================================================
    test_deps_cost - what waiting for dependencies costs, counted through
    a real broker without sockets (commands_fixture.h): the steps of the
    dependency index's lookups (act_deps_visits) and the evaluations of
    calls (act_live_evaluations), never time.

    A PLAN of n calls each reading what all the earlier ones write, and a
    call reading what n earlier ones write while they end newest first,
    must cost steps in proportion to n: at 4,000 calls no more than about
    twice what 2,000 cost (they cost n^2/2 steps: an audit of what one
    request can cost). A reader whose producers end in either order is
    evaluated a few times, not once per producer; it waits until the last
    of them has ended (SEMANTICS.md section 7).
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
#include "act_deps.h"
#include "act_live.h"

#define S_SMALL     2000        //  Calls of the smaller run
#define S_LARGE     4000        //  And of the larger: twice as many
#define S_READERS   4           //  Readers of the producers that end

//  What one run cost
typedef struct {
    size_t visits;              //  Steps of dependency lookups
    size_t evaluations;         //  Evaluations of calls
} s_cost_t;

//  Cost since start was taken
static s_cost_t
s_cost_since (s_cost_t start)
{
    return (s_cost_t) { act_deps_visits () - start.visits,
                        act_live_evaluations () - start.evaluations };
}

//  PLAN the calls made by entry (its text for index i of count, in buf)
//  in context; returns their ids (a JSON array the caller frees)
static json_t *
s_plan (s_world_t *world, const char *context, size_t count,
        void (*entry) (char *buf, size_t size, size_t i, size_t count))
{
    size_t size = 64 * count + 16;
    char *plan = malloc (size);
    size_t at = 0;
    plan [at++] = '[';
    for (size_t i = 0; i < count; i++) {
        char one [128];
        entry (one, sizeof one, i, count);
        at += (size_t) snprintf (plan + at, size - at, "%s%s", i? ",": "", one);
    }
    plan [at++] = ']';
    plan [at] = 0;
    s_request (world, "PLAN", "plan", context, plan, NULL);
    free (plan);
    zmsg_t *reply = s_reply (world, "plan", "ACCEPTED");
    char *body = s_body (reply, 0);
    json_t *ids = json_loads (body, 0, NULL);
    free (body);
    unit_sent_clear (&world->sent);
    assert_int_equal (json_array_size (ids), count);
    return ids;
}

//  The state of call id
static char *
s_state (s_world_t *world, const char *id)
{
    s_request (world, "STATUS", "s", id, NULL);
    zmsg_t *reply = s_reply (world, "s", "VALUE");
    char *body = s_body (reply, 0);
    json_t *status = json_loads (body, 0, NULL);
    char *state = strdup (json_string_value (json_object_get (status, "state")));
    json_decref (status);
    free (body);
    unit_sent_clear (&world->sent);
    return state;
}

//  Assert call id is in state expected
static void
s_assert_state (s_world_t *world, const char *id, const char *expected)
{
    char *state = s_state (world, id);
    if (strcmp (state, expected) != 0)
        fail_msg ("call %s is %s, not %s", id, state, expected);
    free (state);
}

//  Cancel call id (its DONE and the OK are let go)
static void
s_cancel (s_world_t *world, const char *id)
{
    s_request (world, "CANCEL", "x", id, NULL);
    unit_sent_clear (&world->sent);
}


//  --------------------------------------------------------------------------
//  A dense fan-in: every call reads what all the earlier ones write

//  Call i writes †s and, but the first, reads it (the audit's PLAN)
static void
s_chain_entry (char *buf, size_t size, size_t i, size_t count)
{
    (void) count;
    snprintf (buf, size, "{\"_tool\":\"t\",\"_outputPath\":\"†s\"%s}",
              i? ",\"x\":\"†s\"": "");
}

//  Call i writes †w.k<i> and, but the first, reads †w (each an own path)
static void
s_wide_entry (char *buf, size_t size, size_t i, size_t count)
{
    (void) count;
    snprintf (buf, size, "{\"_tool\":\"t\",\"_outputPath\":\"†w.k%zu\"%s}", i,
              i? ",\"x\":\"†w\"": "");
}

//  What a PLAN of count calls made by entry costs to accept, in a
//  context of its own
static s_cost_t
s_accept_cost (s_world_t *world, const char *context, size_t count,
               void (*entry) (char *buf, size_t size, size_t i, size_t count))
{
    s_cost_t start = s_cost_since ((s_cost_t) { 0 });
    json_t *ids = s_plan (world, context, count, entry);
    s_cost_t cost = s_cost_since (start);
    //  The first is queued, every other waits for those before it
    s_assert_state (world, json_string_value (json_array_get (ids, 0)), "queued");
    s_assert_state (world, json_string_value (json_array_get (ids, count - 1)), "waiting");
    json_decref (ids);
    return cost;
}

//  Twice the calls cost at most about twice the steps (n^2/2 grows four
//  times), and each call is evaluated once
static void
s_assert_linear (const char *what, s_cost_t small, s_cost_t large)
{
    printf ("%s: %zu calls, %zu steps, %zu evaluations; %zu calls, %zu steps, "
            "%zu evaluations\n", what, (size_t) S_SMALL, small.visits, small.evaluations,
            (size_t) S_LARGE, large.visits, large.evaluations);
    if (large.visits > 2 * small.visits + small.visits / 4)
        fail_msg ("%s: %zu steps for %d calls, %zu for %d: not linear", what,
                  small.visits, S_SMALL, large.visits, S_LARGE);
    if (large.evaluations > 2 * small.evaluations + small.evaluations / 4)
        fail_msg ("%s: %zu evaluations for %d calls, %zu for %d: not linear", what,
                  small.evaluations, S_SMALL, large.evaluations, S_LARGE);
}

//  A PLAN whose every call reads what all the earlier ones write, at one
//  path or at a path each, costs steps in proportion to its calls.
static void
test_a_dense_fan_in_costs_linear_steps (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_cost_t small = s_accept_cost (world, "chain-small", S_SMALL, s_chain_entry);
    s_cost_t large = s_accept_cost (world, "chain-large", S_LARGE, s_chain_entry);
    s_assert_linear ("one path", small, large);
    small = s_accept_cost (world, "wide-small", S_SMALL, s_wide_entry);
    large = s_accept_cost (world, "wide-large", S_LARGE, s_wide_entry);
    s_assert_linear ("a path each", small, large);
}


//  --------------------------------------------------------------------------
//  Producers that end newest first, or oldest first

//  count - S_READERS producers, each of †r.k<i>, then S_READERS readers
//  of †r: each reads what every producer writes
static void
s_ends_entry (char *buf, size_t size, size_t i, size_t count)
{
    if (i < count - S_READERS)
        snprintf (buf, size, "{\"_tool\":\"t\",\"_outputPath\":\"†r.k%zu\"}", i);
    else
        snprintf (buf, size, "{\"_tool\":\"u\",\"x\":\"†r\"}");
}

//  What ending the producers costs, newest first or oldest first; the
//  readers wait until the last one ends, then are skipped (cancelled
//  producers write nothing)
static s_cost_t
s_ends_cost (s_world_t *world, const char *context, size_t count, bool newest_first)
{
    json_t *ids = s_plan (world, context, count, s_ends_entry);
    size_t producers = count - S_READERS;
    const char *reader = json_string_value (json_array_get (ids, count - 1));
    s_cost_t start = s_cost_since ((s_cost_t) { 0 });
    for (size_t i = 0; i < producers - 1; i++)
        s_cancel (world, json_string_value (json_array_get (ids,
                                            newest_first? producers - 1 - i: i)));
    s_cost_t cost = s_cost_since (start);
    s_assert_state (world, reader, "waiting");
    start = s_cost_since ((s_cost_t) { 0 });
    s_cancel (world, json_string_value (json_array_get (ids, newest_first? 0: producers - 1)));
    s_cost_t last = s_cost_since (start);
    cost.visits += last.visits;
    cost.evaluations += last.evaluations;
    for (size_t i = producers; i < count; i++)
        s_assert_state (world, json_string_value (json_array_get (ids, i)), "skipped");
    json_decref (ids);
    return cost;
}

//  Readers of what many producers write are evaluated a few times each
//  while the producers end, newest first or oldest first, and the steps
//  grow with the producers, not with their square.
static void
test_producers_ending_in_any_order_cost_linear_steps (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    for (int newest_first = 1; newest_first >= 0; newest_first--) {
        const char *what = newest_first? "newest first": "oldest first";
        s_cost_t small = s_ends_cost (world, newest_first? "new-small": "old-small",
                                      S_SMALL, newest_first);
        s_cost_t large = s_ends_cost (world, newest_first? "new-large": "old-large",
                                      S_LARGE, newest_first);
        s_assert_linear (what, small, large);
        //  Each reader is evaluated again when the last producer ends, and
        //  at most once more before
        if (large.evaluations > 2 * S_READERS)
            fail_msg ("%s: %zu evaluations of %d readers while %d producers ended", what,
                      large.evaluations, S_READERS, S_LARGE - S_READERS);
    }
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_a_dense_fan_in_costs_linear_steps,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_producers_ending_in_any_order_cost_linear_steps,
                                         s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
