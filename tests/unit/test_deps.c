/*  =========================================================================
    test_deps - the dependency index (act_deps.h) against SEMANTICS.md
    section 7: a call waits for an earlier call, not finished, whose output
    path could write what it reads (a target in the same kind whose path is
    the reference's path, an ancestor or a descendant; global targets feed
    instance reads, not the reverse).

    First that sentence, case by case. Then a property test: random output
    paths registered under random call numbers and instances, and random
    reads, where the index must find exactly the owners a brute force over
    every registered target finds with libactd's act_ref_may_write and the
    rule "only earlier calls produce", before and after unregistering a
    random half; and act_deps_bound must give the newest and the oldest
    of them.

    The property test prints its seed; to replay: ACTD_DEPS_SEED=<seed>.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "act_deps.h"
#include "unit_support.h"

#define S_SEED          0xDE95EEDULL    //  Default seed
#define S_ROUNDS        300             //  Indexes built
#define S_CALLS         40              //  Most calls registered per round
#define S_READS         150             //  Reads checked per round, per phase

static const char *s_instances [] = { NULL, "i1", "i2" };


//  --------------------------------------------------------------------------
//  Helpers

static act_expr_t *
s_parse (const char *text, bool output)
{
    act_err_t err = { 0 };
    act_expr_t *expr = act_expr_parse (text, output, &err);
    if (!expr)
        fail_msg ("'%s' does not parse: %s", text, err.message);
    return expr;
}

//  One registered call, for the hand-written cases
typedef struct {
    act_expr_t *output;
    act_producer_t *producer;
} s_call_t;

static void
s_register (act_deps_t *deps, s_call_t *call, const char *output, const char *instance,
            uint64_t number)
{
    call->output = s_parse (output, true);
    call->producer = act_deps_register (deps, call->output, instance, number, call);
    assert_non_null (call->producer);
}

static void
s_unregister (act_deps_t *deps, s_call_t *call)
{
    act_deps_unregister (deps, &call->producer);
    assert_null (call->producer);
    act_expr_destroy (&call->output);
}

//  Look up what reader (call number reader, in instance) reads at
//  reference; returns the owners found and sets *matched
static zlistx_t *
s_find (act_deps_t *deps, const char *reference, const char *instance, uint64_t reader,
        size_t *matched)
{
    act_expr_t *read = s_parse (reference, false);
    assert_int_equal (read->nalts, 1);
    assert_int_equal (read->alts [0].nrefs, 1);
    zlistx_t *found = zlistx_new ();
    *matched = act_deps_find (deps, &read->alts [0].refs [0], instance, reader, found);
    act_expr_destroy (&read);
    return found;
}

//  Assert that reading reference feeds from exactly the one call expected
//  (or from none when expected is NULL), through matched targets
static void
s_assert_feeds (act_deps_t *deps, const char *reference, const char *instance,
                uint64_t reader, s_call_t *expected, size_t matched)
{
    size_t got = 0;
    zlistx_t *found = s_find (deps, reference, instance, reader, &got);
    assert_int_equal (got, matched);
    if (expected) {
        assert_int_equal (zlistx_size (found), 1);
        assert_ptr_equal (zlistx_first (found), expected);
    }
    else
        assert_int_equal (zlistx_size (found), 0);
    zlistx_destroy (&found);
}


//  --------------------------------------------------------------------------
//  SEMANTICS.md section 7, case by case

//  A sibling write does not feed a read: †s.user.status does not feed
//  †s.user.name.
static void
test_sibling_write_does_not_feed_a_read (void **state)
{
    (void) state;
    act_deps_t *deps = act_deps_new ();
    s_call_t status;
    s_register (deps, &status, "†s.user.status", NULL, 1);
    s_assert_feeds (deps, "†s.user.name", NULL, 2, NULL, 0);
    s_assert_feeds (deps, "†s.user.status", NULL, 2, &status, 1);
    s_unregister (deps, &status);
    act_deps_destroy (&deps);
}

//  A target at the reference's path, an ancestor or a descendant feeds it.
static void
test_path_ancestor_and_descendant_feed_a_read (void **state)
{
    (void) state;
    act_deps_t *deps = act_deps_new ();
    s_call_t ancestor, same, descendant;
    s_register (deps, &ancestor, "†s.user", NULL, 1);
    s_register (deps, &same, "†s.user.name", NULL, 2);
    s_register (deps, &descendant, "†s.user.name.first", NULL, 3);
    size_t matched = 0;
    zlistx_t *found = s_find (deps, "†s.user.name", NULL, 10, &matched);
    assert_int_equal (matched, 3);
    assert_int_equal (zlistx_size (found), 3);
    assert_non_null (zlistx_find (found, &ancestor));
    assert_non_null (zlistx_find (found, &same));
    assert_non_null (zlistx_find (found, &descendant));
    zlistx_destroy (&found);

    //  Each one alone
    s_unregister (deps, &same);
    s_unregister (deps, &descendant);
    s_assert_feeds (deps, "†s.user.name", NULL, 10, &ancestor, 1);
    s_unregister (deps, &ancestor);
    s_register (deps, &descendant, "†s.user.name.first", NULL, 3);
    s_assert_feeds (deps, "†s.user.name", NULL, 10, &descendant, 1);
    s_assert_feeds (deps, "†s", NULL, 10, &descendant, 1);      //  The whole kind
    s_unregister (deps, &descendant);
    assert_int_equal (act_deps_size (deps), 0);
    act_deps_destroy (&deps);
}

//  Only a target of the same kind feeds a read.
static void
test_another_kind_does_not_feed_a_read (void **state)
{
    (void) state;
    act_deps_t *deps = act_deps_new ();
    s_call_t call;
    s_register (deps, &call, "†state.x", NULL, 1);
    s_assert_feeds (deps, "†data.x", NULL, 2, NULL, 0);
    s_assert_feeds (deps, "†state.x", NULL, 2, &call, 1);
    s_unregister (deps, &call);
    act_deps_destroy (&deps);
}

//  Only an earlier call produces for a call: not the call itself, nor a
//  later one.
static void
test_only_earlier_calls_produce (void **state)
{
    (void) state;
    act_deps_t *deps = act_deps_new ();
    s_call_t call;
    s_register (deps, &call, "†s.x", NULL, 5);
    s_assert_feeds (deps, "†s.x", NULL, 4, NULL, 0);
    s_assert_feeds (deps, "†s.x", NULL, 5, NULL, 0);
    s_assert_feeds (deps, "†s.x", NULL, 6, &call, 1);
    s_unregister (deps, &call);
    act_deps_destroy (&deps);
}

//  Global targets can feed instance reads, not the reverse; an instance
//  target feeds only reads of its own instance.
static void
test_global_target_feeds_an_instance_read (void **state)
{
    (void) state;
    act_deps_t *deps = act_deps_new ();
    s_call_t global;
    s_register (deps, &global, "†s.x", NULL, 1);
    s_assert_feeds (deps, "†s.x", "i1", 2, &global, 1);
    s_assert_feeds (deps, "†s.x", NULL, 2, &global, 1);
    s_unregister (deps, &global);
    act_deps_destroy (&deps);
}

static void
test_instance_target_feeds_only_its_instance (void **state)
{
    (void) state;
    act_deps_t *deps = act_deps_new ();
    s_call_t in_i1;
    s_register (deps, &in_i1, "†s.x", "i1", 1);
    s_assert_feeds (deps, "†s.x", NULL, 2, NULL, 0);            //  Not a global read
    s_assert_feeds (deps, "†s.x", "i2", 2, NULL, 0);            //  Not another instance
    s_assert_feeds (deps, "†s.x", "i1", 2, &in_i1, 1);
    s_unregister (deps, &in_i1);
    act_deps_destroy (&deps);
}

//  A "-" segment (the append position) matches any index, and any key.
static void
test_append_segment_matches_any_index (void **state)
{
    (void) state;
    act_deps_t *deps = act_deps_new ();
    s_call_t push;
    s_register (deps, &push, "†s.items.-", NULL, 1);
    s_assert_feeds (deps, "†s.items[3].title", NULL, 2, &push, 1);
    s_assert_feeds (deps, "†s.items.0", NULL, 2, &push, 1);
    s_assert_feeds (deps, "†s.items.name", NULL, 2, &push, 1);
    s_assert_feeds (deps, "†s.items", NULL, 2, &push, 1);
    s_assert_feeds (deps, "†s.other.0", NULL, 2, NULL, 0);
    s_unregister (deps, &push);

    //  Deeper: †s.-.done feeds †s.7.done, not †s.7.todo
    s_register (deps, &push, "†s.-.done", NULL, 1);
    s_assert_feeds (deps, "†s[7].done", NULL, 2, &push, 1);
    s_assert_feeds (deps, "†s[7].todo", NULL, 2, NULL, 0);
    s_unregister (deps, &push);
    act_deps_destroy (&deps);
}

//  An index and a key with the same text are one path (†s.items[0] and
//  †s.items.0 and †s.items["0"]); a quoted key is the key it spells.
static void
test_index_and_key_with_the_same_text_are_one_path (void **state)
{
    (void) state;
    act_deps_t *deps = act_deps_new ();
    s_call_t call;
    s_register (deps, &call, "†s.items[0] && †s[\"a.b\"]", NULL, 1);
    s_assert_feeds (deps, "†s.items.0", NULL, 2, &call, 1);
    s_assert_feeds (deps, "†s.items[\"0\"]", NULL, 2, &call, 1);
    s_assert_feeds (deps, "†s[\"a.b\"].c", NULL, 2, &call, 1);
    s_assert_feeds (deps, "†s.a.b", NULL, 2, NULL, 0);
    s_unregister (deps, &call);
    act_deps_destroy (&deps);
}

//  Every target of every alternative is registered (a call may take any
//  branch), and a call found through several targets is found once.
static void
test_every_alternative_and_fan_out_target_is_registered (void **state)
{
    (void) state;
    act_deps_t *deps = act_deps_new ();
    s_call_t call;
    s_register (deps, &call, "†s.a || †s.b && †s.c.d", NULL, 1);
    assert_int_equal (act_deps_size (deps), 1);
    s_assert_feeds (deps, "†s.a", NULL, 2, &call, 1);
    s_assert_feeds (deps, "†s.b", NULL, 2, &call, 1);
    s_assert_feeds (deps, "†s.c", NULL, 2, &call, 1);
    s_assert_feeds (deps, "†s", NULL, 2, &call, 3);             //  Three targets, one call
    s_assert_feeds (deps, "†s.d", NULL, 2, NULL, 0);
    s_unregister (deps, &call);
    assert_int_equal (act_deps_size (deps), 0);
    s_assert_feeds (deps, "†s", NULL, 2, NULL, 0);
    act_deps_destroy (&deps);
}

//  A call without an output path registers nothing; unregistering it is
//  a no-op.
static void
test_no_output_path_registers_nothing (void **state)
{
    (void) state;
    act_deps_t *deps = act_deps_new ();
    int owner;
    act_producer_t *producer = act_deps_register (deps, NULL, NULL, 1, &owner);
    assert_null (producer);
    assert_int_equal (act_deps_size (deps), 0);
    act_deps_unregister (deps, &producer);
    assert_int_equal (act_deps_size (deps), 0);
    act_deps_destroy (&deps);
    assert_null (deps);
}


//  --------------------------------------------------------------------------
//  The property test: the index against a brute force

//  A segment from a small alphabet, as written in an expression: keys,
//  indexes written both ways, a quoted key with a dot and a quoted "-"
//  (a key, not the append position), and "-" itself in output paths
static const char *
s_segment (uint64_t *rng, bool output)
{
    static const char *segments [] = {
        ".x", ".y", "[\"x\"]", "[\"x.y\"]", "[\"-\"]", ".0", "[0]", ".1", "[1]", "[\"1\"]",
        ".-"
    };
    size_t count = sizeof segments / sizeof segments [0];
    if (!output)
        return segments [unit_below (rng, count - 1)];
    size_t pick = unit_below (rng, count + 2);  //  "-" three times as often
    return segments [pick < count? pick: count - 1];
}

//  A reference: a kind from a/b, 0 to max segments
static void
s_reference (uint64_t *rng, bool output, size_t max, char *text, size_t size)
{
    size_t used = (size_t) snprintf (text, size, "†%s", unit_below (rng, 2)? "a": "b");
    size_t nsegs = unit_below (rng, max + 1);
    for (size_t s = 0; s < nsegs; s++)
        used += (size_t) snprintf (text + used, size - used, "%s", s_segment (rng, output));
}

//  An output path: 1 to 3 alternatives of 1 to 3 targets
static void
s_output (uint64_t *rng, char *text, size_t size)
{
    size_t used = 0;
    size_t nalts = 1 + unit_below (rng, 3);
    for (size_t a = 0; a < nalts; a++) {
        size_t nrefs = 1 + unit_below (rng, 3);
        for (size_t r = 0; r < nrefs; r++) {
            if (a || r)
                used += (size_t) snprintf (text + used, size - used, r? " && ": " || ");
            s_reference (rng, true, 3, text + used, size - used);
            used += strlen (text + used);
        }
    }
}

//  A registered call of the property test
typedef struct {
    uint64_t number;            //  Its call number
    const char *instance;       //  Where it writes, NULL: global
    act_expr_t *output;         //  Its output path
    act_producer_t *producer;   //  Its registration, NULL once unregistered
} s_model_t;

//  One random read against the index and the brute force. Returns true
//  when something could write it (for the caller's statistics).
static bool
s_check_read (act_deps_t *deps, s_model_t *calls, size_t ncalls, uint64_t *rng,
              uint64_t seed, size_t round)
{
    char text [256];
    s_reference (rng, false, 4, text, sizeof text);
    const char *instance = s_instances [unit_below (rng, 3)];
    uint64_t reader = unit_below (rng, ncalls + 2);
    act_expr_t *read = s_parse (text, false);
    const act_ref_t *ref = &read->alts [0].refs [0];

    //  The brute force: every live call numbered below the reader with a
    //  target that may write what is read; and how many such targets
    bool expected [S_CALLS] = { false };
    size_t nexpected = 0, targets = 0;
    for (size_t c = 0; c < ncalls; c++) {
        if (!calls [c].producer || calls [c].number >= reader)
            continue;
        const act_expr_t *output = calls [c].output;
        for (size_t a = 0; a < output->nalts; a++)
            for (size_t r = 0; r < output->alts [a].nrefs; r++)
                if (act_ref_may_write (&output->alts [a].refs [r], calls [c].instance, ref,
                                       instance)) {
                    targets++;
                    if (!expected [c]) {
                        expected [c] = true;
                        nexpected++;
                    }
                }
    }

    zlistx_t *found = zlistx_new ();
    size_t matched = act_deps_find (deps, ref, instance, reader, found);
    bool seen [S_CALLS] = { false };
    bool ok = (matched == 0) == (nexpected == 0) && matched == targets
           && zlistx_size (found) == nexpected;
    for (s_model_t *call = zlistx_first (found); call; call = zlistx_next (found)) {
        size_t c = (size_t) (call - calls);
        if (c >= ncalls || !expected [c] || seen [c])
            ok = false;
        else
            seen [c] = true;
    }
    //  act_deps_bound gives the newest and the oldest of them, their
    //  numbers with them
    s_model_t *newest = NULL, *oldest = NULL;
    for (size_t c = 0; c < ncalls; c++)
        if (expected [c]) {
            if (!newest || calls [c].number > newest->number)
                newest = &calls [c];
            if (!oldest || calls [c].number < oldest->number)
                oldest = &calls [c];
        }
    act_deps_bounds_t bounds = { 0 };
    if (act_deps_bound (deps, ref, instance, reader, &bounds) != (nexpected > 0)
    ||  bounds.newest != newest || bounds.oldest != oldest
    ||  (newest && (bounds.newest_number != newest->number
                ||  bounds.oldest_number != oldest->number))) {
        fprintf (stderr, "test_deps: act_deps_bound gave %llu and %llu, not %llu and %llu\n",
                 (unsigned long long) bounds.newest_number,
                 (unsigned long long) bounds.oldest_number,
                 (unsigned long long) (newest? newest->number: 0),
                 (unsigned long long) (oldest? oldest->number: 0));
        ok = false;
    }
    if (!ok) {
        fprintf (stderr, "test_deps: seed %llu round %zu: read %s in %s by call %llu: "
                 "index found %zu owners through %zu targets, brute force %zu through %zu\n",
                 (unsigned long long) seed, round, text, instance? instance: "(global)",
                 (unsigned long long) reader, zlistx_size (found), matched, nexpected,
                 targets);
        for (size_t c = 0; c < ncalls; c++)
            if (calls [c].producer)
                fprintf (stderr, "  call %llu in %s writes %s%s\n",
                         (unsigned long long) calls [c].number,
                         calls [c].instance? calls [c].instance: "(global)",
                         calls [c].output->text, expected [c]? "  <- may write it": "");
    }
    assert_true (ok);
    zlistx_destroy (&found);
    act_expr_destroy (&read);
    return nexpected > 0;
}

static void
test_index_finds_what_a_brute_force_finds (void **state)
{
    (void) state;
    uint64_t seed = unit_seed ("ACTD_DEPS_SEED", S_SEED);
    uint64_t rng = seed;
    size_t reads = 0, fed = 0;
    for (size_t round = 0; round < S_ROUNDS; round++) {
        act_deps_t *deps = act_deps_new ();
        s_model_t calls [S_CALLS];
        size_t ncalls = 1 + unit_below (&rng, S_CALLS);
        for (size_t c = 0; c < ncalls; c++) {
            char text [512];
            s_output (&rng, text, sizeof text);
            //  Call numbers from 1, in order of registration
            calls [c].number = c + 1;
            calls [c].instance = s_instances [unit_below (&rng, 3)];
            calls [c].output = s_parse (text, true);
            calls [c].producer = act_deps_register (deps, calls [c].output,
                                                    calls [c].instance, calls [c].number,
                                                    &calls [c]);
            assert_non_null (calls [c].producer);
        }
        assert_int_equal (act_deps_size (deps), ncalls);
        for (size_t r = 0; r < S_READS; r++, reads++)
            fed += s_check_read (deps, calls, ncalls, &rng, seed, round);

        //  Unregister a random half (calls that finished), then check again
        size_t live = ncalls;
        for (size_t c = 0; c < ncalls; c++)
            if (unit_below (&rng, 2)) {
                act_deps_unregister (deps, &calls [c].producer);
                assert_null (calls [c].producer);
                assert_int_equal (act_deps_size (deps), --live);
            }
        for (size_t r = 0; r < S_READS; r++, reads++)
            fed += s_check_read (deps, calls, ncalls, &rng, seed, round);

        //  Register some again under new numbers: the trie pruned by the
        //  unregistering must take them
        for (size_t c = 0; c < ncalls; c++)
            if (!calls [c].producer && unit_below (&rng, 2)) {
                calls [c].producer = act_deps_register (deps, calls [c].output,
                                                        calls [c].instance,
                                                        calls [c].number, &calls [c]);
                assert_int_equal (act_deps_size (deps), ++live);
            }
        for (size_t r = 0; r < S_READS; r++, reads++)
            fed += s_check_read (deps, calls, ncalls, &rng, seed, round);

        for (size_t c = 0; c < ncalls; c++) {
            act_deps_unregister (deps, &calls [c].producer);
            act_expr_destroy (&calls [c].output);
        }
        assert_int_equal (act_deps_size (deps), 0);
        act_deps_destroy (&deps);
    }
    //  Both outcomes were exercised, in good measure
    printf ("test_deps: %zu reads, %zu with producers\n", reads, fed);
    assert_true (fed > reads / 10);
    assert_true (reads - fed > reads / 10);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_sibling_write_does_not_feed_a_read),
        cmocka_unit_test (test_path_ancestor_and_descendant_feed_a_read),
        cmocka_unit_test (test_another_kind_does_not_feed_a_read),
        cmocka_unit_test (test_only_earlier_calls_produce),
        cmocka_unit_test (test_global_target_feeds_an_instance_read),
        cmocka_unit_test (test_instance_target_feeds_only_its_instance),
        cmocka_unit_test (test_append_segment_matches_any_index),
        cmocka_unit_test (test_index_and_key_with_the_same_text_are_one_path),
        cmocka_unit_test (test_every_alternative_and_fan_out_target_is_registered),
        cmocka_unit_test (test_no_output_path_registers_nothing),
        cmocka_unit_test (test_index_finds_what_a_brute_force_finds),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
