/*  =========================================================================
    test_ctx_instance - reading and checking in an instance, by what it
    costs (counted, not timed) and by what it gives.

    SEMANTICS.md section 4: the cost of one resolution is O(depth of P +
    writes to P, its ancestors or its descendants since the last write that
    replaced P), independent of writes to unrelated paths. act_ctx_visited
    counts the instance writes the index looked at for the last read or
    write check in a scope; the cases below hold it to that with sibling
    writes added by the thousand. The other cases pin down when an assign
    above the read path applies at all (a later global write can make it
    skipped): test_property checks the same against its naive fold, at
    random.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "actd/act.h"
#include "json_count.h"

#define DAGGER "\xe2\x80\xa0"

//  Write value (JSON text) at the output path with method in instance
//  (NULL: global); the context must accept it
static void
s_write (act_ctx_t *ctx, const char *path, const char *method, const char *value,
         const char *instance)
{
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (path, true, &err);
    assert_non_null (expr);
    act_method_t parsed;
    assert_int_equal (act_method_parse (method, &parsed), 0);
    json_t *json = json_loads (value, JSON_DECODE_ANY, NULL);
    assert_non_null (json);
    json_t *stored = act_ctx_output (ctx, &expr->alts [0], json, parsed, instance,
                                     NULL, "c1", &err);
    assert_non_null (stored);
    json_decref (stored);
    json_decref (json);
    act_expr_destroy (&expr);
}

//  The value of reference in instance as compact JSON, "absent" when it
//  has none (the caller frees it)
static char *
s_read (act_ctx_t *ctx, const char *reference, const char *instance)
{
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (reference, false, &err);
    assert_non_null (expr);
    json_t *value = act_ctx_resolve (ctx, expr, instance);
    char *text = value? json_dumps (value, JSON_ENCODE_ANY | JSON_COMPACT)
                      : strdup ("absent");
    assert_non_null (text);
    json_decref (value);
    act_expr_destroy (&expr);
    return text;
}

//  reference reads want (compact JSON, or "absent") in instance
static void
s_expect (act_ctx_t *ctx, const char *reference, const char *instance, const char *want)
{
    char *got = s_read (ctx, reference, instance);
    assert_string_equal (got, want);
    free (got);
}

//  What a read and a write check in an instance cost, in instance writes
//  looked at
typedef struct {
    uint64_t read;              //  Instance writes the read looked at
    uint64_t check;             //  Instance writes the check looked at
} s_cost_t;

//  The cost of reading †k.x.v and of checking a set at †k.x.w in instance
//  I after one assign of assign_value at assign_at (an ancestor of †k.x.v)
//  and then siblings writes to sibling_format (%d: their number), paths
//  that are not on †k.x.v nor below it
static s_cost_t
s_cost (const char *assign_at, const char *assign_value, const char *sibling_format,
        int siblings)
{
    act_ctx_t *ctx = act_ctx_new ("cost");
    assert_non_null (ctx);
    s_write (ctx, DAGGER "k.g", "set", "0", NULL);
    s_write (ctx, assign_at, "assign", assign_value, "I");
    char path [64];
    for (int i = 0; i < siblings; i++) {
        snprintf (path, sizeof path, sibling_format, i);
        s_write (ctx, path, "set", "1", "I");
    }
    //  A global write of the kind: the read folds afresh, with no cached
    //  fold of the path to continue
    s_write (ctx, DAGGER "k.g", "set", "1", NULL);
    s_expect (ctx, DAGGER "k.x.v", "I", "1");
    s_cost_t cost;
    cost.read = act_ctx_visited (ctx, "k", "I");
    s_write (ctx, DAGGER "k.g", "set", "2", NULL);
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (DAGGER "k.x.w", true, &err);
    assert_non_null (expr);
    json_t *value = json_integer (2);
    assert_int_equal (act_ctx_output_check (ctx, &expr->alts [0], value, ACT_SET,
                                            "I", &err), 0);
    cost.check = act_ctx_visited (ctx, "k", "I");
    json_decref (value);
    act_expr_destroy (&expr);
    act_ctx_destroy (&ctx);
    return cost;
}

//  SEMANTICS 4: siblings are skipped, and an assign at an ancestor of P
//  either replaces P's part or leaves it alone. With one assign at the
//  instance's root and 10 or 1000 writes beside x, reading †k.x.v and
//  checking a write at †k.x.w look at the same number of instance writes
static void
test_assign_at_root_skips_siblings (void **state)
{
    (void) state;
    s_cost_t few = s_cost (DAGGER "k", "{\"x\":{\"v\":1}}", DAGGER "k.s%d", 10);
    s_cost_t many = s_cost (DAGGER "k", "{\"x\":{\"v\":1}}", DAGGER "k.s%d", 1000);
    print_message ("writes looked at: read %llu and %llu, check %llu and %llu\n",
                   (unsigned long long) few.read, (unsigned long long) many.read,
                   (unsigned long long) few.check, (unsigned long long) many.check);
    assert_int_equal (few.read, many.read);
    assert_int_equal (few.check, many.check);
    assert_true (few.read > 0);
}

//  The same with the siblings one level further down (below †k.a), and
//  with the assign at †k.x and the siblings beside †k.x.v
static void
test_assign_at_ancestor_skips_siblings (void **state)
{
    (void) state;
    s_cost_t few = s_cost (DAGGER "k", "{\"x\":{\"v\":1}}", DAGGER "k.a.s%d", 10);
    s_cost_t many = s_cost (DAGGER "k", "{\"x\":{\"v\":1}}", DAGGER "k.a.s%d", 1000);
    assert_int_equal (few.read, many.read);
    assert_int_equal (few.check, many.check);
    few = s_cost (DAGGER "k.x", "{\"v\":1}", DAGGER "k.x.s%d", 10);
    many = s_cost (DAGGER "k.x", "{\"v\":1}", DAGGER "k.x.s%d", 1000);
    assert_int_equal (few.read, many.read);
    assert_int_equal (few.check, many.check);
}

//  One step of a case: a write that must be accepted, or a read
typedef struct {
    const char *path;           //  Output path, or the reference read
    const char *method;         //  set, merge, ...; NULL: read path
    const char *value;          //  JSON text written, or read ("absent": none)
    const char *instance;       //  NULL: global
} s_step_t;

//  Run the steps on a fresh context
static void
s_run (const s_step_t *steps, size_t count)
{
    act_ctx_t *ctx = act_ctx_new ("steps");
    assert_non_null (ctx);
    for (size_t i = 0; i < count; i++)
        if (steps [i].method)
            s_write (ctx, steps [i].path, steps [i].method, steps [i].value,
                     steps [i].instance);
        else
            s_expect (ctx, steps [i].path, steps [i].instance, steps [i].value);
    act_ctx_destroy (&ctx);
}

#define S_RUN(steps) s_run (steps, sizeof steps / sizeof steps [0])

//  An assign checked against an object that a later global write turned
//  into a scalar no longer applies (SEMANTICS 3: assign needs an object or
//  absent target), unless a write below it, older than it and made after
//  the scalar, had made that level an object in the instance again
static void
test_assign_over_a_scalar (void **state)
{
    (void) state;
    const s_step_t steps [] = {
        { DAGGER "k.q", "set", "{}", NULL },
        { DAGGER "k.q", "assign", "{\"x\":{\"v\":1}}", "I" },
        { DAGGER "k.q.s", "set", "1", "I" },
        { DAGGER "k.q.x.v", NULL, "1", "I" },
        //  q becomes 5: the assign meets a scalar and is skipped; the
        //  newer write to q.s still makes q an object
        { DAGGER "k.q", "set", "5", NULL },
        { DAGGER "k.q.x.v", NULL, "absent", "I" },
        { DAGGER "k.q", NULL, "{\"s\":1}", "I" },
        //  In J a write below q came first: q is an object when the
        //  assign folds, whatever the global q is
        { DAGGER "k.q.t", "set", "2", "J" },
        { DAGGER "k.q", "assign", "{\"x\":{\"v\":3}}", "J" },
        { DAGGER "k.q.x.v", NULL, "3", "J" },
        { DAGGER "k.q", "set", "\"now a string\"", NULL },
        { DAGGER "k.q.x.v", NULL, "3", "J" },
        { DAGGER "k.q", NULL, "{\"t\":2,\"x\":{\"v\":3}}", "J" },
        //  Erasing below a scalar changes nothing, and "-" below one
        //  fails: neither makes q an object for a later assign
        { DAGGER "k.q", "set", "{\"l\":[]}", NULL },
        { DAGGER "k.q.t", "erase", "null", "K" },
        { DAGGER "k.q.l.-", "set", "1", "K" },
        { DAGGER "k.q", "assign", "{\"x\":{\"v\":4}}", "K" },
        { DAGGER "k.q.x.v", NULL, "4", "K" },
        { DAGGER "k.q", "set", "7", NULL },
        { DAGGER "k.q.x.v", NULL, "absent", "K" },
        { DAGGER "k.q", NULL, "7", "K" },
        //  An assign that does not name x leaves q.x alone, and now
        //  applies on top of the object a write below q made
        { DAGGER "k.q.x.v", "set", "5", "K" },
        { DAGGER "k.q", "assign", "{\"y\":1}", "K" },
        { DAGGER "k.q.x.v", NULL, "5", "K" },
        { DAGGER "k.q", "set", "true", NULL },
        { DAGGER "k.q.x.v", NULL, "5", "K" },
        { DAGGER "k.q", NULL, "{\"x\":{\"v\":5},\"y\":1}", "K" },
    };
    S_RUN (steps);
}

//  The example of docs/semantics.md section 4: the write of message 3,
//  beside †k.q.x, decides that the assign of message 4 applies
static void
test_semantics_example (void **state)
{
    (void) state;
    const s_step_t steps [] = {
        { DAGGER "k", "merge", "{\"q\":{}}", NULL },
        { DAGGER "k.q", "assign", "{\"x\":1}", "I" },
        { DAGGER "k.q.s", "set", "1", "I" },
        { DAGGER "k.q", "assign", "{\"x\":2}", "I" },
        { DAGGER "k", "merge", "{\"q\":5}", NULL },
        { DAGGER "k.q.x", NULL, "2", "I" },
        { DAGGER "k.q", NULL, "{\"s\":1,\"x\":2}", "I" },
    };
    S_RUN (steps);
}

//  An assign at an ancestor that does not name the next segment of P
//  leaves P's part as it was; one that names it replaces it, a null member
//  included (stored as null, so P below it is absent)
static void
test_assign_replaces_or_keeps (void **state)
{
    (void) state;
    const s_step_t steps [] = {
        { DAGGER "k", "set", "{\"x\":{\"v\":1,\"w\":2}}", NULL },
        { DAGGER "k.x.v", "set", "10", "I" },
        { DAGGER "k", "assign", "{\"y\":1}", "I" },
        { DAGGER "k.x.v", NULL, "10", "I" },
        { DAGGER "k.x.w", NULL, "2", "I" },
        { DAGGER "k", "assign", "{\"x\":{\"v\":11}}", "I" },
        { DAGGER "k.x.v", NULL, "11", "I" },
        { DAGGER "k.x.w", NULL, "absent", "I" },
        { DAGGER "k", "assign", "{\"x\":null}", "I" },
        { DAGGER "k.x", NULL, "null", "I" },
        { DAGGER "k.x.v", NULL, "absent", "I" },
        //  A write through the null x makes it an object again
        { DAGGER "k.x.v", "set", "12", "I" },
        { DAGGER "k", NULL, "{\"x\":{\"v\":12},\"y\":1}", "I" },
        //  An array at the root of the kind: the assign no longer
        //  applies, and a key below an array is absent
        { DAGGER "k", "set", "[1]", NULL },
        { DAGGER "k.x.v", NULL, "absent", "I" },
        { DAGGER "k.y", NULL, "absent", "I" },
    };
    S_RUN (steps);
}

//  A write's check in an instance reads the instance's value where it is
//  cached, not a copy of it: a copy made each push to an array of n items
//  cost O(n), n pushes O(n^2) (an audit: 10k pushes of 70 bytes, 16.7 s
//  of actd's loop). Counted in jansson's allocations, not timed
static void
test_a_write_check_does_not_copy_the_instance_value (void **state)
{
    (void) state;
    act_ctx_t *ctx = act_ctx_new ("copies");
    size_t cost [2];
    for (int round = 0; round < 2; round++) {
        uint64_t items = round? 4000: 2000;
        while (act_ctx_next_seq (ctx) <= items)
            s_write (ctx, DAGGER "s.list", "push", "{\"v\": 1}", "i");
        unit_json_count_start ();
        s_write (ctx, DAGGER "s.list", "push", "{\"v\": 1}", "i");
        cost [round] = unit_json_count_stop ();
    }
    //  The same few allocations at 4000 items as at 2000 (a copy: 4000+)
    assert_true (cost [0] < 200);
    assert_true (cost [1] < 200);
    s_expect (ctx, DAGGER "s.list.0", "i", "{\"v\":1}");
    act_ctx_destroy (&ctx);
}

//  Overlapping targets of a fan-out are tried in turn and undone: what the
//  tries can change is copied, not the whole kind's document at each
//  target (an audit: 64 targets on a document of 200,000 members, 10.7 s
//  of actd's loop and 1.5 GB). Counted in jansson's allocations
static void
test_overlapping_targets_do_not_copy_the_document (void **state)
{
    (void) state;
    act_ctx_t *ctx = act_ctx_new ("fan");
    char path [64];
    for (int member = 0; member < 2000; member++) {
        snprintf (path, sizeof path, DAGGER "s.m%d", member);
        s_write (ctx, path, "set", "{\"v\": [1, 2]}", NULL);
    }
    s_write (ctx, DAGGER "s.t", "set", "\"text\"", NULL);
    s_write (ctx, DAGGER "s.arr", "set", "[0]", NULL);
    unit_json_count_start ();
    s_write (ctx, DAGGER "s.q && " DAGGER "s.q && " DAGGER "s.q.r && " DAGGER "s.q",
             "set", "1", NULL);
    size_t allocations = unit_json_count_stop ();
    //  Four copies of 2,000 members: some 16,000
    assert_in_range (allocations, 1, 400);
    s_expect (ctx, DAGGER "s.q", NULL, "1");
    //  A fan-out refused at its last target leaves every level as it was:
    //  a member added, items pushed, a value replaced
    const char *refused [] = {
        DAGGER "s.l && " DAGGER "s.l && " DAGGER "s.t",
        DAGGER "s.arr && " DAGGER "s.arr && " DAGGER "s.t",
        DAGGER "s.m7.v && " DAGGER "s.m7 && " DAGGER "s.t",
        DAGGER "s.arr[1] && " DAGGER "s.arr[1] && " DAGGER "s.t",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused [0]; i++) {
        act_err_t err = { NULL, "" };
        act_expr_t *expr = act_expr_parse (refused [i], true, &err);
        assert_non_null (expr);
        json_t *value = json_integer (5);
        assert_null (act_ctx_output (ctx, &expr->alts [0], value, ACT_PUSH, NULL,
                                     NULL, "c1", &err));
        json_decref (value);
        act_expr_destroy (&expr);
    }
    s_expect (ctx, DAGGER "s.l", NULL, "absent");
    s_expect (ctx, DAGGER "s.arr", NULL, "[0]");
    s_expect (ctx, DAGGER "s.m7", NULL, "{\"v\":[1,2]}");
    s_expect (ctx, DAGGER "s.t", NULL, "\"text\"");
    act_ctx_destroy (&ctx);
}

//  An instance's fold of a path shares the global value there rather than
//  copying it: 200 instances, each with a write of its own, reading one
//  item of a global list of 10,000 cost jansson a few allocations each
//  (a copy each cost 10,000 and more: an audit, 500 instances reading a
//  list of 100,000 grew actd from 27 MB to 2 GB). Counted, not timed
static void
test_instances_share_the_global_value (void **state)
{
    (void) state;
    act_ctx_t *ctx = act_ctx_new ("shared");
    json_t *list = json_array ();
    for (int i = 0; i < 10000; i++)
        json_array_append_new (list, json_pack ("{si}", "v", i));
    char *text = json_dumps (list, JSON_COMPACT);
    s_write (ctx, DAGGER "s.list", "set", text, NULL);
    free (text);
    json_decref (list);
    char instance [32];
    for (int i = 0; i < 200; i++) {
        snprintf (instance, sizeof instance, "i%d", i);
        s_write (ctx, DAGGER "s.mine", "set", "1", instance);
    }
    unit_json_count_start ();
    for (int i = 0; i < 200; i++) {
        snprintf (instance, sizeof instance, "i%d", i);
        s_expect (ctx, DAGGER "s.list.7.v", instance, "7");
    }
    size_t allocations = unit_json_count_stop ();
    print_message ("200 instances read an item: %zu allocations\n", allocations);
    assert_in_range (allocations, 0, 200 * 20);
    act_ctx_destroy (&ctx);
}

//  A fold that shares a value copies it before its instance's writes
//  change it (copy on write): the global value, other instances and the
//  instance's own stored writes are as they were, for every method, at
//  the path read and below it
static void
test_instance_writes_copy_what_they_change (void **state)
{
    (void) state;
    const char *string = "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"";
    const s_step_t steps [] = {
        { DAGGER "s.list", "set", "[1,2]", NULL },
        { DAGGER "s.obj", "set", "{\"a\":{\"b\":1}}", NULL },
        { DAGGER "s.str", "set", string, NULL },
        { DAGGER "s.x", "set", "1", "I" },
        { DAGGER "s.x", "set", "1", "J" },
        //  Each path read first, so that the fold shares it, then written
        { DAGGER "s.list.0", NULL, "1", "I" },
        { DAGGER "s.list", "push", "3", "I" },
        { DAGGER "s.list", "concat", "[4]", "I" },
        { DAGGER "s.obj", NULL, "{\"a\":{\"b\":1}}", "I" },
        { DAGGER "s.obj", "merge", "{\"a\":{\"c\":2}}", "I" },
        { DAGGER "s.obj.a.d", "set", "3", "I" },
        { DAGGER "s.obj.a.b", "erase", "null", "I" },
        { DAGGER "s.obj", "assign", "{\"z\":1}", "I" },
        { DAGGER "s.str", "concat", "\"x\"", "I" },
        { DAGGER "s.list", NULL, "[1,2,3,4]", "I" },
        { DAGGER "s.obj", NULL, "{\"a\":{\"c\":2,\"d\":3},\"z\":1}", "I" },
        { DAGGER "s.list", NULL, "[1,2]", NULL },
        { DAGGER "s.obj", NULL, "{\"a\":{\"b\":1}}", NULL },
        { DAGGER "s.str", NULL, string, NULL },
        { DAGGER "s.list", NULL, "[1,2]", "J" },
        { DAGGER "s.obj", NULL, "{\"a\":{\"b\":1}}", "J" },
        //  A fold that shares part of a stored write's value: the write
        //  is replayed as it was stored when the fold starts again
        { DAGGER "s.w", "set", "{\"b\":[1],\"m\":{\"k\":1}}", "I" },
        { DAGGER "s.w.b", NULL, "[1]", "I" },
        { DAGGER "s.w.b", "push", "2", "I" },
        { DAGGER "s.w.m", NULL, "{\"k\":1}", "I" },
        { DAGGER "s.w.m", "merge", "{\"n\":2}", "I" },
        { DAGGER "s.w.b", NULL, "[1,2]", "I" },
        { DAGGER "s.g", "set", "1", NULL },         //  Every fold starts again
        { DAGGER "s.w", NULL, "{\"b\":[1,2],\"m\":{\"k\":1,\"n\":2}}", "I" },
        { DAGGER "s.w.b", NULL, "[1,2]", "I" },
        { DAGGER "s.w.m", NULL, "{\"k\":1,\"n\":2}", "I" },
        { DAGGER "s.list", NULL, "[1,2,3,4]", "I" },
        { DAGGER "s.obj", NULL, "{\"a\":{\"c\":2,\"d\":3},\"z\":1}", "I" },
        { DAGGER "s.obj", NULL, "{\"a\":{\"b\":1}}", NULL },
    };
    S_RUN (steps);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_assign_at_root_skips_siblings),
        cmocka_unit_test (test_assign_at_ancestor_skips_siblings),
        cmocka_unit_test (test_assign_over_a_scalar),
        cmocka_unit_test (test_semantics_example),
        cmocka_unit_test (test_assign_replaces_or_keeps),
        cmocka_unit_test (test_a_write_check_does_not_copy_the_instance_value),
        cmocka_unit_test (test_overlapping_targets_do_not_copy_the_document),
        cmocka_unit_test (test_instances_share_the_global_value),
        cmocka_unit_test (test_instance_writes_copy_what_they_change),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
