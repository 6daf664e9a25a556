/*  =========================================================================
    test_store_calls - the store contract's calls (include/actd/act_store.h):
    records and updates, the _id key, outcomes counted, a call's last
    write in a batch, dispatches and their attempts, pending sets read
    back after thousands of later calls and after a restart, calls in
    several blocks of ids, a call's resume state; the same assertions on
    every backend, as test_store.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <czmq.h>
#include <sqlite3.h>
#include "store_fixture.h"

//  Calls: records, updates, the _id key, pending walks, outcomes counted
static void
test_calls_are_recorded_updated_and_counted (void **state)
{
    char *context = s_context ("calls");
    act_store_t *store = s_open_owning (context);
    json_t *before = act_store_counts (store);
    act_store_put_context (store, context);
    uint64_t first = act_store_next_call (store);
    uint64_t second = act_store_next_call (store);
    assert_true (first > 0 && second > first);
    act_call_record_t record = s_record (first, context, "queued", "key-1");
    assert_int_equal (act_store_put_call (store, &record), 0);
    record = s_record (second, context, "waiting", NULL);
    assert_int_equal (act_store_put_call (store, &record), 0);
    act_err_t err = { 0 };
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_int_equal (s_idem (store, context, "key-1"), first);
    assert_int_equal (s_idem (store, context, "key-2"), 0);

    json_t *pending = json_array ();
    assert_int_equal (act_store_pending_in (store, context, s_count, pending), 0);
    assert_int_equal (json_array_size (pending), 2);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (pending, 0),
                                                           "call_id")), first);
    json_decref (pending);
    json_t *contexts = json_array ();
    assert_int_equal (act_store_contexts_pending (store, true, s_count, contexts), 0);
    bool listed = false;
    size_t index;
    json_t *name;
    json_array_foreach (contexts, index, name)
        listed |= streq (json_string_value (name), context);
    assert_true (listed);
    json_decref (contexts);

    //  The first ends ok with an outcome; updated twice in one batch
    record = s_record (first, context, "running", NULL);
    record.attempts = 1;
    act_store_update_call (store, &record);
    record = s_record (first, context, "ok", NULL);
    record.attempts = 1;
    record.outcome = "{\"status\":\"ok\"}";
    act_store_update_call (store, &record);
    assert_int_equal (act_store_commit (store, &err), 0);
    json_t *stored = s_call (store, first);
    assert_non_null (stored);
    assert_string_equal (json_string_value (json_object_get (stored, "state")), "ok");
    assert_int_equal (json_integer_value (json_object_get (stored, "attempts")), 1);
    assert_string_equal (json_string_value (json_object_get (json_object_get (stored, "outcome"),
                                                             "status")), "ok");
    assert_string_equal (json_string_value (json_object_get (json_object_get (stored, "call"),
                                                             "_tool")), "t");
    json_decref (stored);
    pending = json_array ();
    act_store_pending_in (store, context, s_count, pending);
    assert_int_equal (json_array_size (pending), 1);
    json_decref (pending);
    assert_null (s_call (store, second + 1000000));

    json_t *after = act_store_counts (store);
    json_t *calls_before = json_object_get (before, "calls");
    json_t *calls_after = json_object_get (after, "calls");
    assert_int_equal (json_integer_value (json_object_get (calls_after, "accepted"))
                    - json_integer_value (json_object_get (calls_before, "accepted")), 2);
    assert_int_equal (json_integer_value (json_object_get (calls_after, "ok"))
                    - json_integer_value (json_object_get (calls_before, "ok")), 1);
    assert_int_equal (json_integer_value (json_object_get (after, "contexts"))
                    - json_integer_value (json_object_get (before, "contexts")), 1);
    json_decref (before);
    json_decref (after);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  Many calls and messages in one batch, in a context with one call
//  pending already (test_a_batch_keeps_each_calls_last_write): a read in
//  the middle sees the first ones; after the commit every call reads back
//  as its last write, and every message is kept
static void
s_assert_many_in_one_batch (act_store_t *store, const char *context)
{
    act_err_t err = { 0 };
    act_call_record_t record;
    json_t *stored;
    enum { CALLS = 300 };       //  More than a batch first indexes (256 slots)
    uint64_t ids [CALLS];
    for (int i = 0; i < CALLS; i++) {
        ids [i] = act_store_next_call (store);
        record = s_record (ids [i], context, "queued", NULL);
        assert_int_equal (act_store_put_call (store, &record), 0);
        char text [64];
        snprintf (text, sizeof text, "{\"_seq\":%d,\"n\":%d}", i + 1, i);
        assert_int_equal (act_store_put_message (store, context, (uint64_t) i + 1, text,
                                                 strlen (text)), 0);
        if (i == CALLS / 2) {
            stored = s_call (store, ids [0]);
            assert_string_equal (json_string_value (json_object_get (stored, "state")),
                                 "queued");
            json_decref (stored);
        }
    }
    for (int i = 0; i < CALLS; i += 2) {
        record = s_record (ids [i], context, i % 4? "running": "ok", NULL);
        record.attempts = 1;
        record.outcome = i % 4? NULL: "{\"status\":\"ok\"}";
        assert_int_equal (act_store_update_call (store, &record), 0);
    }
    assert_int_equal (act_store_commit (store, &err), 0);
    json_t *pending = json_array ();
    assert_int_equal (act_store_pending_in (store, context, s_count, pending), 0);
    assert_int_equal (json_array_size (pending), 1 + CALLS - CALLS / 4);
    json_decref (pending);
    for (int i = 0; i < CALLS; i++) {
        stored = s_call (store, ids [i]);
        const char *expected = i % 2? "queued": i % 4? "running": "ok";
        assert_string_equal (json_string_value (json_object_get (stored, "state")), expected);
        assert_int_equal (json_is_object (json_object_get (stored, "outcome")), i % 4 == 0);
        json_decref (stored);
    }
    json_t *page = act_store_history (store, context, 1, 1000, 0);
    assert_int_equal (json_array_size (page), CALLS);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (page, CALLS - 1),
                                                           "n")), CALLS - 1);
    json_decref (page);
}

//  A call written several times in one batch (accepted, dispatched, ended)
//  reads back as its last write, before and after the commit, with what
//  only its first write had; many calls and messages in one batch are all
//  kept; an aborted batch keeps none of them
static void
test_a_batch_keeps_each_calls_last_write (void **state)
{
    char *context = s_context ("last");
    act_store_t *store = s_open_owning (context);
    act_store_put_context (store, context);
    act_err_t err = { 0 };
    uint64_t first = act_store_next_call (store);
    act_call_record_t record = s_record (first, context, "queued", NULL);
    record.client = "00ab";
    record.request = "0102";
    assert_int_equal (act_store_put_call (store, &record), 0);
    record = s_record (first, context, "running", NULL);
    record.attempts = 1;
    record.progress = "{\"done\":1}";
    assert_int_equal (act_store_update_call (store, &record), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    json_t *stored = s_call (store, first);
    assert_string_equal (json_string_value (json_object_get (stored, "state")), "running");
    assert_int_equal (json_integer_value (json_object_get (stored, "attempts")), 1);
    assert_string_equal (json_string_value (json_object_get (stored, "client")), "00ab");
    assert_string_equal (json_string_value (json_object_get (stored, "request")), "0102");
    assert_int_equal (json_integer_value (json_object_get (json_object_get (stored, "progress"),
                                                           "done")), 1);
    json_decref (stored);

    s_assert_many_in_one_batch (store, context);

    //  Aborted: nothing of the batch (the memory store keeps what it
    //  wrote, by design: see act_store_memory.c)
    if (streq (s_location, ":memory:")) {
        act_store_destroy (&store);
        zstr_free (&context);
        return;
    }
    uint64_t gone = act_store_next_call (store);
    record = s_record (gone, context, "queued", NULL);
    act_store_put_call (store, &record);
    record.state = "ok";
    record.outcome = "{}";
    act_store_update_call (store, &record);
    act_store_abort (store);
    assert_null (s_call (store, gone));
    act_store_destroy (&store);
    zstr_free (&context);
}

//  A context's calls in several blocks of 4,096 ids (schema 9: found
//  through call_blocks, not an index by context) are all counted pending,
//  read after a restart, and deleted with it; another context's call in
//  one of those blocks is not
static void
test_calls_in_several_blocks_of_ids (void **state)
{
    if (streq (s_location, ":memory:") || strstr (s_location, "://"))
        skip ();                //  SQLite files only (reopened)
    char *path = zsys_sprintf ("%s-blocks", s_location);
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (path, ACT_SYNC_NORMAL, &err);
    assert_non_null (store);
    act_store_put_context (store, "blk");
    act_store_put_context (store, "oth");
    const uint64_t ids [] = { 1, 4095, 4096, 4097, 9000 };
    for (int i = 0; i < 5; i++) {
        act_call_record_t record = s_record (ids [i], ids [i] == 4097? "oth": "blk",
                                             "queued", NULL);
        assert_int_equal (act_store_put_call (store, &record), 0);
        //  One block's row written in one batch, another in the next
        if (i == 2)
            assert_int_equal (act_store_commit (store, &err), 0);
    }
    assert_int_equal (act_store_commit (store, &err), 0);
    act_call_record_t record = s_record (4095, "blk", "ok", NULL);
    record.outcome = "{\"status\":\"ok\"}";
    assert_int_equal (act_store_update_call (store, &record), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    act_store_destroy (&store);
    assert_int_equal (s_sql_number (path, "SELECT COUNT(*) FROM call_blocks"), 4);

    store = act_store_open (path, ACT_SYNC_NORMAL, &err);
    assert_non_null (store);
    char *list = s_pending_list (store, "blk");
    assert_string_equal (list, "1:queued:0,4096:queued:0,9000:queued:0");
    zstr_free (&list);
    json_t *listed = act_store_contexts (store, "blk", NULL, 1);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (listed, 0),
                                                           "pending")), 3);
    json_decref (listed);
    size_t messages = 0;
    assert_int_equal (act_store_delete_context (store, "blk", &messages), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    for (int i = 0; i < 5; i++) {
        json_t *call = s_call (store, ids [i]);
        if (ids [i] == 4097)
            assert_non_null (call);
        else
            assert_null (call);
        json_decref (call);
    }
    //  A context made again with that name writes its block's row again
    act_store_put_context (store, "blk");
    record = s_record (9001, "blk", "queued", NULL);
    assert_int_equal (act_store_put_call (store, &record), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    list = s_pending_list (store, "blk");
    assert_string_equal (list, "9001:queued:0");
    zstr_free (&list);
    act_store_destroy (&store);
    assert_int_equal (s_sql_number (path, "SELECT COUNT(*) FROM call_blocks"), 2);
    s_remove_store (&path);
}

//  The number of context's pending calls, from its CONTEXTS row
static int64_t
s_pending_count (act_store_t *store, const char *context)
{
    json_t *page = act_store_contexts (store, context, NULL, 10);
    assert_int_equal (json_array_size (page), 1);
    int64_t pending = json_integer_value (json_object_get (json_array_get (page, 0),
                                                           "pending"));
    json_decref (page);
    return pending;
}

//  Accept count calls in context, a batch of 50 at a time, and end each
//  batch in the next; returns the first id
static uint64_t
s_churn (act_store_t *store, const char *context, int count)
{
    act_err_t err = { 0 };
    uint64_t first = act_store_next_call (store);
    for (int done = 0; done < count; done += 50) {
        act_call_record_t records [50];
        for (int i = 0; i < 50; i++) {
            records [i] = s_record (act_store_next_call (store), context, "queued", NULL);
            assert_int_equal (act_store_put_call (store, &records [i]), 0);
        }
        assert_int_equal (act_store_commit (store, &err), 0);
        for (int i = 0; i < 50; i++) {
            records [i].state = "ok";
            records [i].outcome = "{}";
            assert_int_equal (act_store_update_call (store, &records [i]), 0);
        }
        assert_int_equal (act_store_commit (store, &err), 0);
    }
    return first;
}

//  A call that stays pending while thousands of later calls come and go
//  is still pending in every read and after a restart, even when its end
//  was rolled back; once it ends, it is pending nowhere
static void
test_a_call_outliving_thousands_stays_pending (void **state)
{
    if (streq (s_location, ":memory:"))
        skip ();                //  No restart, and no rollback of an update
    char *context = s_context ("outlive");
    act_store_t *store = s_open_owning (context);
    act_err_t err = { 0 };
    act_store_put_context (store, context);
    act_call_record_t old = s_record (act_store_next_call (store), context, "queued", NULL);
    assert_int_equal (act_store_put_call (store, &old), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    //  Its end, read in the batch, then rolled back
    old.state = "ok";
    old.outcome = "{}";
    assert_int_equal (act_store_update_call (store, &old), 0);
    char *list = s_pending_list (store, context);
    assert_string_equal (list, "");
    zstr_free (&list);
    act_store_abort (store);
    s_churn (store, context, 6000);
    act_call_record_t young = s_record (act_store_next_call (store), context, "queued", NULL);
    assert_int_equal (act_store_put_call (store, &young), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    char *expected = zsys_sprintf ("%" PRIu64 ":queued:0,%" PRIu64 ":queued:0",
                                   old.call_id, young.call_id);
    if (zsys_file_exists (s_location)) {
        //  SQLite: the old call, thousands of ids back, is a row of live
        char *sql = zsys_sprintf ("SELECT COUNT(*) FROM live WHERE id = %" PRIu64,
                                  old.call_id);
        assert_int_equal (s_sql_number (s_location, sql), 1);
        zstr_free (&sql);
    }
    for (int round = 0; round < 2; round++) {
        list = s_pending_list (store, context);
        assert_string_equal (list, expected);
        zstr_free (&list);
        assert_int_equal (s_pending_count (store, context), 2);
        //  And again after a restart
        act_store_destroy (&store);
        store = s_open_owning (context);
    }
    old.state = "ok";
    old.outcome = "{}";
    assert_int_equal (act_store_update_call (store, &old), 0);
    young.state = "ok";
    young.outcome = "{}";
    assert_int_equal (act_store_update_call (store, &young), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    act_store_destroy (&store);
    store = s_open_owning (context);
    list = s_pending_list (store, context);
    assert_string_equal (list, "");
    zstr_free (&list);
    assert_int_equal (s_pending_count (store, context), 0);
    zstr_free (&expected);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  Calls that each end in the batch that stores them leave no flag of a
//  live call, and the mark still moves past them (it did so with a
//  memmove of a NULL array, which UBSan stops actd for)
static void
test_calls_ended_in_their_first_batch_move_the_mark (void **state)
{
    char *context = s_context ("brief");
    act_store_t *store = s_open_owning (context);
    act_err_t err = { 0 };
    act_store_put_context (store, context);
    for (int batch = 0; batch < 12; batch++) {
        for (int i = 0; i < 50; i++) {
            act_call_record_t record = s_record (act_store_next_call (store), context,
                                                 "queued", NULL);
            assert_int_equal (act_store_put_call (store, &record), 0);
            record.state = "ok";
            record.outcome = "{}";
            assert_int_equal (act_store_update_call (store, &record), 0);
        }
        assert_int_equal (act_store_commit (store, &err), 0);
    }
    assert_int_equal (s_pending_count (store, context), 0);
    if (zsys_file_exists (s_location))
        //  SQLite: the mark moved past them
        assert_true (s_sql_number (s_location, "SELECT id FROM live_from") > 256);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  The state and attempts of a call as its record, and its pending walk,
//  read them
static void
s_assert_call (act_store_t *store, const char *context, uint64_t id, const char *state,
               long long attempts)
{
    json_t *stored = s_call (store, id);
    assert_non_null (stored);
    assert_string_equal (json_string_value (json_object_get (stored, "state")), state);
    assert_int_equal (json_integer_value (json_object_get (stored, "attempts")), attempts);
    json_decref (stored);
    json_t *pending = json_array ();
    assert_int_equal (act_store_pending_in (store, context, s_count, pending), 0);
    if (act_state_ended (state))
        assert_int_equal (json_array_size (pending), 0);
    else {
        assert_int_equal (json_array_size (pending), 1);
        json_t *record = json_array_get (pending, 0);
        assert_string_equal (json_string_value (json_object_get (record, "state")), state);
        assert_int_equal (json_integer_value (json_object_get (record, "attempts")), attempts);
    }
    json_decref (pending);
}

//  A call dispatched, put back in the queue, dispatched again (each in a
//  batch of its own) reads back with its state and attempts, also from a
//  store opened again (what recovery reads after a kill -9)
static void
test_dispatches_are_read_back_with_their_attempts (void **state)
{
    char *context = s_context ("dispatch");
    act_store_t *store = s_open_owning (context);
    act_store_put_context (store, context);
    act_err_t err = { 0 };
    uint64_t id = act_store_next_call (store);
    act_call_record_t record = s_record (id, context, "queued", NULL);
    act_store_put_call (store, &record);
    assert_int_equal (act_store_commit (store, &err), 0);
    const char *states [] = { "running", "queued", "running" };
    long long attempts [] = { 1, 1, 2 };
    for (int step = 0; step < 3; step++) {
        record = s_record (id, context, states [step], NULL);
        record.attempts = attempts [step];
        assert_int_equal (act_store_update_call (store, &record), 0);
        s_assert_call (store, context, id, states [step], attempts [step]);
        assert_int_equal (act_store_commit (store, &err), 0);
        s_assert_call (store, context, id, states [step], attempts [step]);
    }
    if (!streq (s_location, ":memory:")) {
        act_store_destroy (&store);
        store = s_open_owning (context);
        s_assert_call (store, context, id, "running", 2);
    }
    record = s_record (id, context, "error", NULL);
    record.attempts = 2;
    record.outcome = "{\"status\":\"error\"}";
    act_store_update_call (store, &record);
    assert_int_equal (act_store_commit (store, &err), 0);
    s_assert_call (store, context, id, "error", 2);
    assert_int_equal (act_store_delete_context (store, context, NULL), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_null (s_call (store, id));
    act_store_destroy (&store);
    if (!streq (s_location, ":memory:") && !strstr (s_location, "://")) {
        char *sql = zsys_sprintf ("SELECT COUNT(*) FROM dispatched WHERE id = %" PRIu64, id);
        assert_int_equal (s_sql_number (s_location, sql), 0);
        zstr_free (&sql);
    }
    zstr_free (&context);
}

//  The text of call_id's stored resume state, as read back ("" when it
//  has none; a new string)
static char *
s_resume_of (act_store_t *store, uint64_t call_id)
{
    json_t *record = s_call (store, call_id);
    assert_non_null (record);
    json_t *resume = json_object_get (record, "resume");
    char *text = resume? act_json_dump (resume): strdup ("");
    json_decref (record);
    return text;
}

//  A call's resume state (schema 10): only the calls given one have one,
//  the last one given replaces the others (in a batch and across
//  batches), it is read back with the call (and its pending record) also
//  after a restart, and it goes with its context
static void
test_a_calls_resume_state_is_kept (void **state)
{
    char *context = s_context ("resume");
    act_store_t *store = s_open_owning (context);
    act_store_put_context (store, context);
    act_err_t err = { 0 };
    uint64_t plain = act_store_next_call (store), resumed = act_store_next_call (store);
    act_call_record_t record = s_record (plain, context, "queued", NULL);
    act_store_put_call (store, &record);
    assert_int_equal (act_store_commit (store, &err), 0);
    //  One put in the batch of its call, then replaced in that batch
    record = s_record (resumed, context, "queued", "k1");
    act_store_put_call (store, &record);
    assert_int_equal (act_store_put_resume (store, context, resumed,
                                            "{\"retry\":{\"attempts\":1}}"), 0);
    assert_int_equal (act_store_put_resume (store, context, resumed,
                                            "{\"recipients\":[[\"AB\",\"01\"]]}"), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    const char *second = "{\"recipients\":[[\"AB\",\"01\"],[\"CD\",\"02\"]]}";
    assert_int_equal (act_store_put_resume (store, context, resumed, second), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    for (int pass = 0; pass < 2; pass++) {
        char *text = s_resume_of (store, plain);
        assert_string_equal (text, "");
        zstr_free (&text);
        text = s_resume_of (store, resumed);
        assert_string_equal (text, second);
        zstr_free (&text);
        json_t *pending = json_array ();
        assert_int_equal (act_store_pending_in (store, context, s_count, pending), 0);
        assert_int_equal (json_array_size (pending), 2);
        assert_null (json_object_get (json_array_get (pending, 0), "resume"));
        assert_non_null (json_object_get (json_array_get (pending, 1), "resume"));
        json_decref (pending);
        if (streq (s_location, ":memory:"))
            break;
        act_store_destroy (&store);
        store = s_open_owning (context);
    }
    assert_int_equal (act_store_delete_context (store, context, NULL), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_null (s_call (store, resumed));
    act_store_destroy (&store);
    if (!streq (s_location, ":memory:") && !strstr (s_location, "://"))
        assert_int_equal (s_sql_number (s_location, "SELECT COUNT(*) FROM resume"), 0);
    zstr_free (&context);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_calls_are_recorded_updated_and_counted),
        cmocka_unit_test (test_a_batch_keeps_each_calls_last_write),
        cmocka_unit_test (test_dispatches_are_read_back_with_their_attempts),
        cmocka_unit_test (test_a_call_outliving_thousands_stays_pending),
        cmocka_unit_test (test_calls_in_several_blocks_of_ids),
        cmocka_unit_test (test_a_calls_resume_state_is_kept),
        cmocka_unit_test (test_calls_ended_in_their_first_batch_move_the_mark),
    };
    return s_run_on_every_store ("store calls", tests, sizeof tests / sizeof tests [0]);
}
