/*  =========================================================================
    test_store_contexts - the store contract's lifecycle of contexts
    (include/actd/act_store.h: CONTEXTS, DELETE, retention, APPEND keys),
    the same assertions on every backend, as test_store.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <czmq.h>
#include <sqlite3.h>
#include "store_fixture.h"

//  A message of context with _seq seq and _date date (NULL: none)
static void
s_put_dated (act_store_t *store, const char *context, uint64_t seq, const char *date)
{
    json_t *message = json_pack ("{sssI}", "type", "text", "_seq", (json_int_t) seq);
    if (date)
        json_object_set_new (message, "_date", json_string (date));
    assert_int_equal (s_put (store, context, seq, message), 0);
    json_decref (message);
}

static int64_t
s_count_of (act_store_t *store, const char *name)
{
    json_t *counts = act_store_counts (store);
    int64_t value = json_integer_value (json_object_get (counts, name));
    json_decref (counts);
    return value;
}

//  Page through the 2,500 contexts under prefix, 100 at a time, each
//  page after the last id of the one before; ids [n] is the n-th
static void
s_page_through (act_store_t *store, const char *prefix, char **ids)
{
    char *after = NULL;
    size_t seen = 0;
    int64_t took = 0;
    while (true) {
        int64_t start = zclock_usecs ();
        json_t *page = act_store_contexts (store, prefix, after, 100);
        took += zclock_usecs () - start;
        assert_non_null (page);
        if (json_array_size (page) == 0) {
            json_decref (page);
            break;
        }
        assert_int_equal (json_array_size (page), 100);
        size_t index;
        json_t *item;
        json_array_foreach (page, index, item) {
            int n = (int) seen++;
            assert_string_equal (json_string_value (json_object_get (item, "context")), ids [n]);
            assert_int_equal (json_integer_value (json_object_get (item, "messages")), n % 3);
            assert_int_equal (json_integer_value (json_object_get (item, "last_seq")), n % 3);
            assert_int_equal (json_integer_value (json_object_get (item, "pending")),
                              n % 7 == 0);
            json_t *updated = json_object_get (item, "updated");
            if (n % 3 == 2)
                assert_string_equal (json_string_value (updated), "2026-05-01T10:00:00.000Z");
            else
                assert_true (json_is_null (updated));
        }
        zstr_free (&after);
        after = strdup (json_string_value (json_object_get (json_array_get (page, 99),
                                                            "context")));
        json_decref (page);
    }
    assert_int_equal (seen, 2500);
    printf ("contexts: a page of 100 of 2,500 in %.2f ms on average\n",
            took / 1000.0 / 26);
    zstr_free (&after);
}

//  CONTEXTS: 2,500 contexts under one prefix come in pages of 100, in byte
//  order, each once, the next page after the last id of the one before,
//  with their counts and pending calls
static void
test_contexts_are_listed_in_pages (void **state)
{
    char *prefix = s_context ("page");
    char *other = zsys_sprintf ("%s", prefix);
    other [strlen (other) - 1]++;              //  Just past the prefix
    act_store_t *store = s_open_owning (other);
    act_err_t err = { 0 };
    act_store_put_context (store, other);
    char *ids [2500];
    for (int i = 0; i < 2500; i++) {
        //  Created out of order: the store orders them
        int n = (i * 7919) % 2500;
        ids [n] = zsys_sprintf ("%s-%04d", prefix, n);
        assert_int_equal (act_store_claim (store, ids [n], NULL), 1);
        act_store_put_context (store, ids [n]);
        for (int seq = 1; seq <= n % 3; seq++)
            s_put_dated (store, ids [n], seq, seq == 2? "2026-05-01T10:00:00.000Z": NULL);
        if (n % 7 == 0) {
            act_call_record_t record = s_record (act_store_next_call (store), ids [n],
                                                 "queued", NULL);
            assert_int_equal (act_store_put_call (store, &record), 0);
        }
        if (i % 500 == 499)
            assert_int_equal (act_store_commit (store, &err), 0);
    }
    s_page_through (store, prefix, ids);
    //  After an id that is not stored, and without a prefix: the next ids
    char *between = zsys_sprintf ("%s-1234x", prefix);
    json_t *page = act_store_contexts (store, NULL, between, 2);
    assert_int_equal (json_array_size (page), 2);
    assert_string_equal (json_string_value (json_object_get (json_array_get (page, 0),
                                                             "context")), ids [1235]);
    json_decref (page);
    //  The prefix bounds the range: the last page ends before other
    page = act_store_contexts (store, prefix, ids [2497], 100);
    assert_int_equal (json_array_size (page), 2);
    json_decref (page);
    page = act_store_contexts (store, NULL, ids [2499], 1);
    assert_string_equal (json_string_value (json_object_get (json_array_get (page, 0),
                                                             "context")), other);
    json_decref (page);
    page = act_store_contexts (store, "bad prefix\x01", NULL, 10);
    assert_int_equal (json_array_size (page), 0);
    json_decref (page);
    zstr_free (&between);
    for (int i = 0; i < 2500; i++)
        zstr_free (&ids [i]);
    act_store_destroy (&store);
    zstr_free (&other);
    zstr_free (&prefix);
}

//  CONTEXTS gives the top-level _date of a context's last message, not a
//  "_date" in its data (nested, or in a string), written before it
static void
test_contexts_read_the_top_level_date (void **state)
{
    char *context = s_context ("topdate");
    act_store_t *store = s_open_owning (context);
    act_store_put_context (store, context);
    const char *texts [] = {
        ("{\"type\":\"data\",\"data\":{\"_date\":\"1999-01-01T00:00:00.000Z\","
         "\"s\":\"x\\\",\\\"_date\\\":\\\"bad\",\"a\":[{\"_date\":\"no\"}]},"
         "\"_seq\":1,\"_date\":\"2026-05-04T10:00:00.000Z\"}"),
        //  Not plainly written: SQLite reads it
        "{\"type\":\"data\",\"_seq\":2,\"_date\" : \"2026-05-05T10:00:00.000Z\"}",
        "{\"type\":\"data\",\"_seq\":3,\"_date\":\"2026-05-06T10:00:00\\u002e000Z\"}"
    };
    const char *dates [] = {
        "2026-05-04T10:00:00.000Z", "2026-05-05T10:00:00.000Z", "2026-05-06T10:00:00.000Z"
    };
    for (int i = 0; i < 3; i++) {
        assert_int_equal (act_store_put_message (store, context, (uint64_t) i + 1, texts [i],
                                                 strlen (texts [i])), 0);
        act_err_t err = { 0 };
        assert_int_equal (act_store_commit (store, &err), 0);
        json_t *page = act_store_contexts (store, context, NULL, 1);
        assert_int_equal (json_array_size (page), 1);
        json_t *item = json_array_get (page, 0);
        assert_int_equal (json_integer_value (json_object_get (item, "messages")), i + 1);
        assert_string_equal (json_string_value (json_object_get (item, "updated")), dates [i]);
        json_decref (page);
    }
    act_store_destroy (&store);
    zstr_free (&context);
}

//  A message's _date is read for CONTEXTS even when the message holds a
//  \u0000 (which PostgreSQL's json type refuses to convert)
static void
test_contexts_read_the_date_of_a_message_with_a_nul (void **state)
{
    char *context = s_context ("nul");
    act_store_t *store = s_open_owning (context);
    act_store_put_context (store, context);
    json_t *message = json_pack ("{sssisoss}", "type", "data", "_seq", 1,
                                 "data", json_stringn ("a\0b", 3),
                                 "_date", "2026-05-03T10:00:00.000Z");
    assert_int_equal (s_put (store, context, 1, message), 0);
    json_decref (message);
    act_err_t err = { 0 };
    assert_int_equal (act_store_commit (store, &err), 0);
    json_t *page = act_store_contexts (store, context, NULL, 1);
    assert_int_equal (json_array_size (page), 1);
    json_t *item = json_array_get (page, 0);
    assert_int_equal (json_integer_value (json_object_get (item, "messages")), 1);
    assert_string_equal (json_string_value (json_object_get (item, "updated")),
                         "2026-05-03T10:00:00.000Z");
    json_decref (page);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  What a deleted context's reads give: nothing
static void
s_assert_gone (act_store_t *store, const char *context, uint64_t call_id)
{
    assert_false (act_store_has_context (store, context));
    json_t *page = act_store_history (store, context, 1, 10, 0);
    assert_int_equal (json_array_size (page), 0);
    json_decref (page);
    assert_null (s_call (store, call_id));
    assert_int_equal (s_idem (store, context, "key-1"), 0);
    assert_int_equal (s_append_key (store, context, "append-1"), 0);
    json_t *pending = json_array ();
    assert_int_equal (act_store_pending_in (store, context, s_count, pending), 0);
    assert_int_equal (json_array_size (pending), 0);
    json_decref (pending);
    page = act_store_contexts (store, context, NULL, 10);
    assert_int_equal (json_array_size (page), 0);
    json_decref (page);
}

//  DELETE removes the context, its messages, calls and keys; the counts
//  drop by what it held; the same id then starts again from _seq 1
static void
test_a_deleted_context_is_gone_and_its_id_starts_again (void **state)
{
    char *context = s_context ("delete");
    act_store_t *store = s_open_owning (context);
    act_err_t err = { 0 };
    act_store_put_context (store, context);
    for (uint64_t seq = 1; seq <= 3; seq++)
        s_put_dated (store, context, seq, "2026-05-01T10:00:00.000Z");
    uint64_t call_id = act_store_next_call (store);
    act_call_record_t record = s_record (call_id, context, "queued", "key-1");
    assert_int_equal (act_store_put_call (store, &record), 0);
    assert_int_equal (act_store_put_append_key (store, context, "append-1", 3), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    json_t *before = act_store_counts (store);

    size_t messages = 0;
    assert_int_equal (act_store_delete_context (store, context, &messages), 0);
    assert_int_equal (messages, 3);
    s_assert_gone (store, context, call_id);            //  In the batch
    assert_int_equal (act_store_commit (store, &err), 0);
    s_assert_gone (store, context, call_id);            //  After the commit
    json_t *after = act_store_counts (store);
    assert_int_equal (json_integer_value (json_object_get (after, "contexts"))
                    - json_integer_value (json_object_get (before, "contexts")), -1);
    assert_int_equal (json_integer_value (json_object_get (after, "messages"))
                    - json_integer_value (json_object_get (before, "messages")), -3);
    assert_int_equal (json_integer_value (json_object_get (after, "deleted"))
                    - json_integer_value (json_object_get (before, "deleted")), 1);
    //  A context that is not there: no error, nothing counted
    assert_int_equal (act_store_delete_context (store, context, &messages), 0);
    assert_int_equal (messages, 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_int_equal (s_count_of (store, "deleted"),
                      json_integer_value (json_object_get (after, "deleted")));

    //  The id again: a new, empty context (a broker claims it again first)
    assert_int_equal (act_store_claim (store, context, NULL), 1);
    assert_int_equal (act_store_put_context (store, context), 0);
    s_put_dated (store, context, 1, "2026-05-02T10:00:00.000Z");
    assert_int_equal (act_store_commit (store, &err), 0);
    json_t *page = act_store_contexts (store, context, NULL, 10);
    assert_int_equal (json_array_size (page), 1);
    json_t *item = json_array_get (page, 0);
    assert_int_equal (json_integer_value (json_object_get (item, "messages")), 1);
    assert_int_equal (json_integer_value (json_object_get (item, "last_seq")), 1);
    assert_int_equal (json_integer_value (json_object_get (item, "pending")), 0);
    assert_string_equal (json_string_value (json_object_get (item, "updated")),
                         "2026-05-02T10:00:00.000Z");
    json_decref (page);
    assert_int_equal (s_idem (store, context, "key-1"), 0);
    json_decref (before);
    json_decref (after);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  A store owning two new contexts, context and other
static act_store_t *
s_open_two (const char *context, const char *other)
{
    act_store_t *store = s_open_owning (context);
    assert_int_equal (act_store_claim (store, other, NULL), 1);
    assert_int_equal (act_store_put_context (store, context), 0);
    assert_int_equal (act_store_put_context (store, other), 0);
    return store;
}

//  A delete in a batch that fails is rolled back: the context is whole
static void
test_a_delete_in_a_failed_batch_keeps_the_context (void **state)
{
    char *context = s_context ("keep");
    char *other = s_context ("keep-other");
    act_store_t *store = s_open_two (context, other);
    act_err_t err = { 0 };
    s_put_dated (store, context, 1, NULL);
    s_put_dated (store, context, 2, "2026-05-01T10:00:00.000Z");
    s_put_dated (store, other, 1, NULL);
    uint64_t call_id = act_store_next_call (store);
    act_call_record_t record = s_record (call_id, context, "queued", "key-1");
    assert_int_equal (act_store_put_call (store, &record), 0);
    assert_int_equal (act_store_put_append_key (store, context, "append-1", 2), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    json_t *before = act_store_counts (store);
    json_t *listed = act_store_contexts (store, context, NULL, 10);

    size_t messages = 0;
    assert_int_equal (act_store_delete_context (store, context, &messages), 0);
    json_t *again = json_pack ("{sssi}", "type", "text", "_seq", 1);
    s_put (store, other, 1, again);             //  A second _seq 1: refused now
    json_decref (again);                        //  or at the commit
    assert_int_equal (act_store_commit (store, &err), -1);

    assert_true (act_store_has_context (store, context));
    json_t *page = act_store_history (store, context, 1, 10, 0);
    assert_int_equal (json_array_size (page), 2);
    json_decref (page);
    json_t *call = s_call (store, call_id);
    assert_non_null (call);
    json_decref (call);
    assert_int_equal (s_idem (store, context, "key-1"), call_id);
    assert_int_equal (s_append_key (store, context, "append-1"), 2);
    json_t *pending = json_array ();
    act_store_pending_in (store, context, s_count, pending);
    assert_int_equal (json_array_size (pending), 1);
    json_decref (pending);
    page = act_store_contexts (store, context, NULL, 10);
    assert_true (json_equal (page, listed));
    json_decref (page);
    json_t *after = act_store_counts (store);
    assert_true (json_equal (before, after));
    json_decref (before);
    json_decref (after);
    json_decref (listed);
    act_store_destroy (&store);
    zstr_free (&other);
    zstr_free (&context);
}

//  APPEND's idempotency key: per context, 1-128 bytes, gone with its context
static void
test_append_keys_are_per_context (void **state)
{
    char *context = s_context ("akey");
    char *other = s_context ("akey-other");
    act_store_t *store = s_open_two (context, other);
    act_err_t err = { 0 };
    assert_int_equal (s_append_key (store, context, "k"), 0);
    assert_int_equal (act_store_put_append_key (store, context, "k", 5), 0);
    assert_int_equal (s_append_key (store, context, "k"), 5);     //  In the batch
    assert_int_equal (s_append_key (store, other, "k"), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_int_equal (s_append_key (store, context, "k"), 5);
    assert_int_equal (act_store_put_append_key (store, other, "k", 9), 0);
    //  The store keeps keys of up to ACT_STORE_KEY_MAX bytes (a binary key
    //  frame of 128 bytes as \x01 and its hex)
    char long_key [ACT_STORE_KEY_MAX + 2];
    memset (long_key, 'x', ACT_STORE_KEY_MAX + 1);
    long_key [ACT_STORE_KEY_MAX + 1] = 0;
    size_t batch = act_store_batch (store);
    assert_int_equal (act_store_put_append_key (store, other, long_key, 1), -1);
    assert_int_equal (act_store_put_append_key (store, other, "", 1), -1);
    assert_int_equal (act_store_batch (store), batch);   //  Refused, not written
    long_key [ACT_STORE_KEY_MAX] = 0;
    assert_int_equal (act_store_put_append_key (store, other, long_key, 10), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_int_equal (s_append_key (store, other, "k"), 9);
    assert_int_equal (s_append_key (store, other, long_key), 10);
    assert_int_equal (s_append_key (store, context, "k"), 5);

    size_t messages;
    assert_int_equal (act_store_delete_context (store, context, &messages), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_int_equal (s_append_key (store, context, "k"), 0);
    assert_int_equal (s_append_key (store, other, "k"), 9);
    act_store_destroy (&store);
    zstr_free (&other);
    zstr_free (&context);
}

static int
s_collect_mine (const json_t *item, void *arg)
{
    //  Only this test's contexts: a shared database holds others'
    json_t *list = (json_t *) arg;
    const char *tag = json_string_value (json_array_get (list, 0));
    if (strstr (json_string_value (item), tag))
        json_array_append (list, (json_t *) item);
    return 0;
}

//  The idle contexts among those this test made, before date
static json_t *
s_idle (act_store_t *store, const char *tag, const char *before)
{
    json_t *list = json_pack ("[s]", tag);
    assert_int_equal (act_store_idle_contexts (store, before, 100000, s_collect_mine, list), 0);
    json_array_remove (list, 0);
    return list;
}

static bool
s_lists (json_t *list, const char *context)
{
    size_t index;
    json_t *item;
    json_array_foreach (list, index, item)
        if (streq (json_string_value (item), context))
            return true;
    return false;
}

//  Retention: a context is idle when its last message (or its creation,
//  without messages) is before the date and no call of it is left to end
static void
test_idle_contexts_have_old_messages_and_no_pending_call (void **state)
{
    char *tag = s_context ("idle");
    char *old = zsys_sprintf ("%s-old", tag), *busy = zsys_sprintf ("%s-busy", tag);
    char *fresh = zsys_sprintf ("%s-fresh", tag), *empty = zsys_sprintf ("%s-empty", tag);
    act_store_t *store = s_open_owning (old);
    const char *contexts [] = { busy, fresh, empty };
    for (int i = 0; i < 3; i++)
        assert_int_equal (act_store_claim (store, contexts [i], NULL), 1);
    act_err_t err = { 0 };
    act_store_put_context (store, old);
    s_put_dated (store, old, 1, "2019-06-01T00:00:00.000Z");
    s_put_dated (store, old, 2, "2020-01-01T00:00:00.000Z");
    act_store_put_context (store, busy);
    s_put_dated (store, busy, 1, "2020-01-01T00:00:00.000Z");
    uint64_t call_id = act_store_next_call (store);
    act_call_record_t record = s_record (call_id, busy, "running", NULL);
    assert_int_equal (act_store_put_call (store, &record), 0);
    act_store_put_context (store, fresh);
    s_put_dated (store, fresh, 1, "2999-01-01T00:00:00.000Z");
    act_store_put_context (store, empty);
    assert_int_equal (act_store_commit (store, &err), 0);

    //  The last message counts, and the comparison is strict
    json_t *idle = s_idle (store, tag, "2020-01-01T00:00:00.000Z");
    assert_int_equal (json_array_size (idle), 0);
    json_decref (idle);
    idle = s_idle (store, tag, "2020-01-01T00:00:00.001Z");
    assert_int_equal (json_array_size (idle), 1);
    assert_true (s_lists (idle, old));
    json_decref (idle);
    //  Without messages: when it was created (now)
    idle = s_idle (store, tag, "2999-06-01T00:00:00.000Z");
    assert_int_equal (json_array_size (idle), 3);
    assert_true (s_lists (idle, old) && s_lists (idle, fresh) && s_lists (idle, empty));
    json_decref (idle);
    //  A limit of one walks one
    json_t *one = json_array ();
    assert_int_equal (act_store_idle_contexts (store, "2999-06-01T00:00:00.000Z", 1,
                                               s_count, one), 0);
    assert_int_equal (json_array_size (one), 1);
    json_decref (one);
    //  Once its call ends, the busy one is idle too
    record.state = "ok";
    record.outcome = "{}";
    assert_int_equal (act_store_update_call (store, &record), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    idle = s_idle (store, tag, "2020-01-01T00:00:00.001Z");
    assert_int_equal (json_array_size (idle), 2);
    assert_true (s_lists (idle, busy));
    json_decref (idle);
    act_store_destroy (&store);
    zstr_free (&old);
    zstr_free (&busy);
    zstr_free (&fresh);
    zstr_free (&empty);
    zstr_free (&tag);
}

//  The size of a SQLite store's file, closed (its WAL checkpointed)
static long
s_file_size (const char *path)
{
    struct stat info;
    return stat (path, &info) == 0? (long) info.st_size: -1;
}

//  Write megabytes of messages into 100 contexts (named by round)
static void
s_fill (const char *path, int round, int megabytes)
{
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (path, ACT_SYNC_NORMAL, &err);
    assert_non_null (store);
    char *text = malloc (10001);
    memset (text, 'x', 10000);
    text [10000] = 0;
    int per_context = megabytes * 1000 * 1000 / 10000 / 100;
    for (int i = 0; i < 100; i++) {
        char context [32];
        snprintf (context, sizeof context, "fill-%d-%03d", round, i);
        act_store_put_context (store, context);
        for (int seq = 1; seq <= per_context; seq++) {
            json_t *message = json_pack ("{sssiss}", "type", "text", "_seq", seq,
                                         "text", text);
            assert_int_equal (s_put (store, context, (uint64_t) seq, message), 0);
            json_decref (message);
        }
        assert_int_equal (act_store_commit (store, &err), 0);
    }
    free (text);
    act_store_destroy (&store);
}

static void
s_empty (const char *path, int round)
{
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (path, ACT_SYNC_NORMAL, &err);
    assert_non_null (store);
    for (int i = 0; i < 100; i++) {
        char context [32];
        snprintf (context, sizeof context, "fill-%d-%03d", round, i);
        size_t messages;
        assert_int_equal (act_store_delete_context (store, context, &messages), 0);
        assert_int_equal (act_store_commit (store, &err), 0);
    }
    act_store_destroy (&store);
}

//  Deleting gives the space back: a new file hands free pages back to the
//  file system (auto_vacuum = INCREMENTAL), and writing as much again
//  after a delete does not grow the file (ACTD_TEST_FILL_MB: how much)
static void
test_deleting_gives_the_space_back (void **state)
{
    if (streq (s_location, ":memory:") || strstr (s_location, "://"))
        skip ();                //  SQLite files only
    const char *megabytes = getenv ("ACTD_TEST_FILL_MB");
    int size = megabytes? atoi (megabytes): 4;
    char *path = zsys_sprintf ("%s-fill", s_location);
    s_fill (path, 1, size);
    long written = s_file_size (path);
    s_empty (path, 1);
    long deleted = s_file_size (path);
    s_fill (path, 2, size);
    long again = s_file_size (path);
    printf ("store file: %ld bytes after writing %d MB into 100 contexts, %ld after "
            "deleting them, %ld after writing as much again\n", written, size, deleted, again);
    assert_int_equal (s_sql_number (path, "PRAGMA auto_vacuum"), 2);
    assert_true (again <= written);
    assert_true (deleted < written / 2);
    s_remove_store (&path);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_contexts_are_listed_in_pages),
        cmocka_unit_test (test_contexts_read_the_top_level_date),
        cmocka_unit_test (test_contexts_read_the_date_of_a_message_with_a_nul),
        cmocka_unit_test (test_a_deleted_context_is_gone_and_its_id_starts_again),
        cmocka_unit_test (test_a_delete_in_a_failed_batch_keeps_the_context),
        cmocka_unit_test (test_append_keys_are_per_context),
        cmocka_unit_test (test_idle_contexts_have_old_messages_and_no_pending_call),
        cmocka_unit_test (test_deleting_gives_the_space_back),
    };
    return s_run_on_every_store ("store contexts", tests, sizeof tests / sizeof tests [0]);
}
