/*  =========================================================================
    test_store_journal - a store that holds its batch in a journal
    (act_store_journal), as actd's does with a commit thread: a sealed
    batch is committed while the next one fills, reads and new contexts
    settle the commit in flight first and see every write of the batch,
    and a failed write dooms its batch only; batches are numbered and
    known durable in commit order. On a SQLite file.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <czmq.h>
#include "actd/act.h"
#include "act_store.h"
#include "act_store_int.h"

//  The settle function's record: how often it ran, and the sealed batch
//  it ends (a commit "in flight" until then), as the broker's does
typedef struct {
    act_store_t *store;         //  The store
    int calls;                  //  Times settle ran
    bool in_flight;             //  A sealed batch waits for its commit
    int rc;                     //  Its result, once ended
} s_settle_t;

static void
s_settle (void *arg)
{
    s_settle_t *settle = (s_settle_t *) arg;
    settle->calls++;
    if (settle->in_flight) {
        act_err_t err = { 0 };
        settle->rc = act_store_commit_sealed (settle->store, &err);
        act_store_sealed_end (settle->store, settle->rc);
        settle->in_flight = false;
    }
}

static int
s_each (const json_t *item, void *arg)
{
    json_array_append ((json_t *) arg, (json_t *) item);
    return 0;
}

//  A fresh store file in a new directory; *dir set (the caller removes it)
static act_store_t *
s_open (char **dir, s_settle_t *settle)
{
    char template [] = "/tmp/test_store_journal-XXXXXX";
    assert_non_null (mkdtemp (template));
    *dir = strdup (template);
    char *path = zsys_sprintf ("%s/actd.db", template);
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (path, ACT_SYNC_NORMAL, &err);
    zstr_free (&path);
    assert_non_null (store);
    *settle = (s_settle_t) { store, 0, false, 0 };
    act_store_journal (store, s_settle, settle);
    return store;
}

static void
s_close (act_store_t **store, char *dir)
{
    act_store_destroy (store);
    char *command = zsys_sprintf ("rm -rf '%s'", dir);
    assert_int_equal (system (command), 0);
    zstr_free (&command);
    free (dir);
}

static act_call_record_t
s_record (uint64_t id, const char *state)
{
    return (act_call_record_t) { id, "c", state, 0, "{\"_tool\":\"t\"}", NULL,
                                 NULL, NULL, NULL, NULL };
}

//  The number of messages of context c in the store
static size_t
s_messages (act_store_t *store)
{
    json_t *all = json_array ();
    assert_int_equal (act_store_messages (store, "c", s_each, all), 0);
    size_t count = json_array_size (all);
    json_decref (all);
    return count;
}

//  A batch is sealed and committed "on the thread" while the next one
//  fills; a read settles the commit in flight first and sees both
static void
test_sealed_batch_commits_while_the_next_fills (void **state)
{
    (void) state;
    char *dir;
    s_settle_t settle;
    act_store_t *store = s_open (&dir, &settle);
    assert_int_equal (act_store_put_context (store, "c"), 0);
    assert_int_equal (act_store_put_message (store, "c", 1, "{\"type\":\"data\"}", 15), 0);
    act_call_record_t call = s_record (1, "queued");
    assert_int_equal (act_store_put_call (store, &call), 0);
    size_t writes = act_store_seal (store);
    assert_int_equal (writes, 3);
    settle.in_flight = true;
    assert_int_equal (act_store_batch (store), 0);
    //  The next batch fills without touching the backend: no settle
    int calls = settle.calls;
    assert_int_equal (act_store_put_message (store, "c", 2, "{\"type\":\"text\"}", 15), 0);
    call = s_record (1, "ok");
    assert_int_equal (act_store_update_call (store, &call), 0);
    assert_int_equal (settle.calls, calls);
    assert_int_equal (act_store_batch (store), 2);
    //  A read: the commit in flight ends first, then the batch is seen
    assert_int_equal (s_messages (store), 2);
    assert_true (settle.calls > calls);
    assert_false (settle.in_flight);
    assert_int_equal (settle.rc, 0);
    json_t *record = NULL;
    assert_int_equal (act_store_call (store, 1, &record), 1);
    assert_string_equal (json_string_value (json_object_get (record, "state")), "ok");
    json_decref (record);
    //  The committed totals took the sealed batch; the current one counts
    //  as pending in act_store_counts
    json_t *counts = act_store_counts (store);
    assert_int_equal (json_integer_value (json_object_get (counts, "messages")), 2);
    json_decref (counts);
    act_err_t err = { 0 };
    assert_int_equal (act_store_commit (store, &err), 0);
    s_close (&store, dir);
}

//  Abort forgets the batch held in the journal; the sealed one committed
static void
test_abort_drops_the_journal_only (void **state)
{
    (void) state;
    char *dir;
    s_settle_t settle;
    act_store_t *store = s_open (&dir, &settle);
    assert_int_equal (act_store_put_context (store, "c"), 0);
    assert_int_equal (act_store_put_message (store, "c", 1, "{\"type\":\"data\"}", 15), 0);
    act_store_seal (store);
    settle.in_flight = true;
    assert_int_equal (act_store_put_message (store, "c", 2, "{\"type\":\"data\"}", 15), 0);
    act_store_abort (store);
    assert_false (settle.in_flight);
    assert_int_equal (act_store_batch (store), 0);
    assert_int_equal (s_messages (store), 1);
    s_close (&store, dir);
}

//  A write the backend refuses (a message _seq written twice) dooms the
//  sealed batch whole: its commit fails and keeps none of it
static void
test_a_failed_write_dooms_the_sealed_batch (void **state)
{
    (void) state;
    char *dir;
    s_settle_t settle;
    act_store_t *store = s_open (&dir, &settle);
    assert_int_equal (act_store_put_context (store, "c"), 0);
    assert_int_equal (act_store_put_message (store, "c", 1, "{\"type\":\"data\"}", 15), 0);
    act_err_t err = { 0 };
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_int_equal (act_store_put_message (store, "c", 2, "{\"type\":\"data\"}", 15), 0);
    //  Held, so accepted now; refused by the backend at the commit
    assert_int_equal (act_store_put_message (store, "c", 1, "{\"type\":\"text\"}", 15), 0);
    act_store_seal (store);
    memset (&err, 0, sizeof err);
    int rc = act_store_commit_sealed (store, &err);
    act_store_sealed_end (store, rc);
    assert_int_equal (rc, -1);
    assert_string_equal (err.code, ACT_E_INTERNAL);
    assert_int_equal (s_messages (store), 1);
    s_close (&store, dir);
}

//  Batches are numbered in commit order: a write made in batch g is
//  durable once every batch up to g has committed, by an inline commit
//  or a sealed one; a failed commit makes nothing durable
static void
test_batches_are_durable_in_order_once_committed (void **state)
{
    (void) state;
    char *dir;
    s_settle_t settle;
    act_store_t *store = s_open (&dir, &settle);
    assert_true (act_store_durable (store, 0));
    uint64_t first = act_store_generation (store);
    assert_false (act_store_durable (store, first));
    assert_int_equal (act_store_put_context (store, "c"), 0);
    assert_int_equal (act_store_put_message (store, "c", 1, "{\"type\":\"data\"}", 15), 0);
    act_err_t err = { 0 };
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_true (act_store_durable (store, first));
    //  Sealed: the next batch fills while it commits
    uint64_t second = act_store_generation (store);
    assert_true (second > first);
    assert_int_equal (act_store_put_message (store, "c", 2, "{\"type\":\"data\"}", 15), 0);
    act_store_seal (store);
    uint64_t third = act_store_generation (store);
    assert_true (third > second);
    assert_int_equal (act_store_put_message (store, "c", 3, "{\"type\":\"data\"}", 15), 0);
    assert_false (act_store_durable (store, second));
    assert_int_equal (act_store_commit_sealed (store, &err), 0);
    act_store_sealed_end (store, 0);
    assert_true (act_store_durable (store, second));
    assert_false (act_store_durable (store, third));
    //  The third fails (a _seq written twice): still not durable
    assert_int_equal (act_store_put_message (store, "c", 1, "{\"type\":\"text\"}", 15), 0);
    act_store_seal (store);
    int rc = act_store_commit_sealed (store, &err);
    act_store_sealed_end (store, rc);
    assert_int_equal (rc, -1);
    assert_false (act_store_durable (store, third));
    s_close (&store, dir);
}

//  Write a call record whose texts are in buffers the caller reuses at
//  once (overwritten after the write)
static void
s_write_call (act_store_t *store, bool put, uint64_t id, const char *state,
              long long attempts, const char *outcome)
{
    char state_text [16], call_text [32], outcome_text [32];
    snprintf (state_text, sizeof state_text, "%s", state);
    snprintf (call_text, sizeof call_text, "{\"_tool\":\"t%d\"}", (int) id);
    snprintf (outcome_text, sizeof outcome_text, "%s", outcome? outcome: "");
    act_call_record_t call = { id, "c", state_text, attempts, call_text, NULL,
                               outcome? outcome_text: NULL, NULL, NULL, NULL };
    assert_int_equal (put? act_store_put_call (store, &call)
                         : act_store_update_call (store, &call), 0);
    memset (state_text, 'x', sizeof state_text);
    memset (call_text, 'x', sizeof call_text);
    memset (outcome_text, 'x', sizeof outcome_text);
}

//  The SQLite backend keeps pointers to the journal's copies of what is
//  written, not copies of its own: the caller's buffers are reused at
//  once, a read gives the first writes of a batch to the backend before
//  the next ones are written, and what the file keeps, opened again (as
//  recovery reads it), is what was written
static void
test_the_backend_borrows_the_journals_copies (void **state)
{
    (void) state;
    char *dir;
    s_settle_t settle;
    act_store_t *store = s_open (&dir, &settle);
    assert_int_equal (act_store_put_context (store, "c"), 0);
    for (uint64_t id = 1; id <= 3; id++)
        s_write_call (store, true, id, "queued", 0, NULL);
    act_store_seal (store);
    settle.in_flight = true;
    //  The next batch: call 1 ends, a read, call 2 ends, call 3 runs
    s_write_call (store, false, 1, "ok", 1, "{\"status\":\"ok\"}");
    json_t *record = NULL;
    assert_int_equal (act_store_call (store, 1, &record), 1);
    assert_string_equal (json_string_value (json_object_get (record, "state")), "ok");
    json_decref (record);
    s_write_call (store, false, 2, "error", 1, "{\"status\":\"error\"}");
    s_write_call (store, false, 3, "running", 1, NULL);
    char text [32];
    snprintf (text, sizeof text, "{\"type\":\"data\"}");
    assert_int_equal (act_store_put_message (store, "c", 1, text, strlen (text)), 0);
    memset (text, 'x', sizeof text);
    act_store_seal (store);
    settle.in_flight = true;
    s_settle (&settle);
    assert_int_equal (settle.rc, 0);
    char *path = zsys_sprintf ("%s/actd.db", dir);
    act_store_destroy (&store);
    act_err_t err = { 0 };
    store = act_store_open (path, ACT_SYNC_NORMAL, &err);
    assert_non_null (store);
    const char *states [] = { NULL, "ok", "error", "running" };
    const char *tools [] = { NULL, "t1", "t2", "t3" };
    for (uint64_t id = 1; id <= 3; id++) {
        assert_int_equal (act_store_call (store, id, &record), 1);
        assert_string_equal (json_string_value (json_object_get (record, "state")), states [id]);
        assert_string_equal (json_string_value (json_object_get (json_object_get (record, "call"),
                                                                "_tool")), tools [id]);
        if (id < 3)
            assert_string_equal (json_string_value (json_object_get (json_object_get (
                record, "outcome"), "status")), states [id]);
        json_decref (record);
    }
    json_t *pending = json_array ();
    assert_int_equal (act_store_pending_in (store, "c", s_each, pending), 0);
    assert_int_equal (json_array_size (pending), 1);
    json_decref (pending);
    json_t *page = act_store_history (store, "c", 1, 10, 0);
    assert_string_equal (json_string_value (json_object_get (json_array_get (page, 0), "type")),
                         "data");
    json_decref (page);
    zstr_free (&path);
    s_close (&store, dir);
}

//  What a recording backend was given, in order: "m<seq>", "p<id>", or
//  "u<id>:<progress>" for an update
typedef struct {
    zlistx_t *writes;           //  The writes, as texts
} s_recorder_t;

static int
s_record_message (void *impl, const char *context, uint64_t seq, const char *text, size_t size)
{
    (void) context; (void) text; (void) size;
    zlistx_add_end (((s_recorder_t *) impl)->writes, zsys_sprintf ("m%d", (int) seq));
    return 0;
}

static int
s_record_put (void *impl, const act_call_record_t *record)
{
    zlistx_add_end (((s_recorder_t *) impl)->writes, zsys_sprintf ("p%d", (int) record->call_id));
    return 0;
}

static int
s_record_update (void *impl, const act_call_record_t *record)
{
    //  The first 8 bytes of the progress tell which one it was
    zlistx_add_end (((s_recorder_t *) impl)->writes,
                    zsys_sprintf ("u%d:%.8s", (int) record->call_id,
                                  record->progress? record->progress: "none"));
    return 0;
}

//  A progress text of size bytes that starts with tag (8 characters)
static char *
s_progress (const char *tag, size_t size)
{
    char *text = (char *) malloc (size + 1);
    memset (text, 'x', size);
    memcpy (text, tag, 8);
    text [size] = 0;
    return text;
}

static void
s_update (act_journal_t *journal, uint64_t id, const char *state, const char *progress)
{
    act_call_record_t record = s_record (id, state);
    record.progress = progress;
    assert_int_equal (act_journal_call (journal, false, &record), 0);
}

//  A batch holds one copy of a call's latest progress: a worker that sends
//  PROGRESS as fast as it can (here 200 of 16 KiB each for one call, 200
//  for another, interleaved) does not make the batch hold every one. The
//  backend is given the writes in order, with the last progress of each
//  call, and an update already given to the backend is never taken back
static void
test_a_later_progress_replaces_an_earlier_one_in_the_batch (void **state)
{
    (void) state;
    s_recorder_t recorder = { zlistx_new () };
    zlistx_set_destructor (recorder.writes, (zlistx_destructor_fn *) zstr_free);
    act_store_backend_t backend = { 0 };
    backend.put_message = s_record_message;
    backend.put_call = s_record_put;
    backend.update_call = s_record_update;
    act_journal_t *journal = act_journal_new ();
    assert_non_null (journal);
    act_call_record_t call = s_record (1, "queued");
    assert_int_equal (act_journal_call (journal, true, &call), 0);
    call = s_record (2, "queued");
    assert_int_equal (act_journal_call (journal, true, &call), 0);
    s_update (journal, 1, "running", NULL);
    const size_t size = 16 * 1024;
    for (int i = 0; i < 200; i++) {
        char tag [9];
        snprintf (tag, sizeof tag, "a%07d", i);
        char *progress = s_progress (tag, size);
        s_update (journal, 1, "running", progress);
        tag [0] = 'b';
        memcpy (progress, tag, 8);
        s_update (journal, 2, "running", progress);
        free (progress);
        if (i == 100)
            assert_int_equal (act_journal_message (journal, "c", 1, "{}", 2), 0);
    }
    //  Two progress texts held, not 400 (6.4 MB)
    assert_true (act_journal_bytes (journal) < 3 * size);
    assert_null (act_journal_apply (journal, &backend, &recorder));
    const char *expected [] = {
        "p1", "p2", "u1:none", "m1", "u1:a0000199", "u2:b0000199"
    };
    size_t count = sizeof expected / sizeof expected [0];
    assert_int_equal (zlistx_size (recorder.writes), count);
    const char *write = (const char *) zlistx_first (recorder.writes);
    for (size_t i = 0; i < count; i++, write = (const char *) zlistx_next (recorder.writes))
        assert_string_equal (write, expected [i]);

    //  Given to the backend, an update stays: the next one is added
    zlistx_purge (recorder.writes);
    char *progress = s_progress ("c0000000", 64);
    s_update (journal, 1, "ok", progress);
    free (progress);
    assert_null (act_journal_apply (journal, &backend, &recorder));
    assert_int_equal (zlistx_size (recorder.writes), 1);
    assert_string_equal ((const char *) zlistx_first (recorder.writes), "u1:c0000000");
    act_journal_clear (journal);
    assert_int_equal (act_journal_bytes (journal), 0);
    act_journal_destroy (&journal);
    act_journal_destroy (&journal);
    zlistx_destroy (&recorder.writes);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_sealed_batch_commits_while_the_next_fills),
        cmocka_unit_test (test_abort_drops_the_journal_only),
        cmocka_unit_test (test_a_failed_write_dooms_the_sealed_batch),
        cmocka_unit_test (test_the_backend_borrows_the_journals_copies),
        cmocka_unit_test (test_batches_are_durable_in_order_once_committed),
        cmocka_unit_test (test_a_later_progress_replaces_an_earlier_one_in_the_batch),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
