/*  =========================================================================
    test_store - the store contract (include/actd/act_store.h), the same
    assertions on every backend: ":memory:", a SQLite file, and PostgreSQL
    when ACTD_TEST_PG_URL names an empty database (ctest runs this test a
    second time through tests/unit/with_postgres.py).

    Batches and commits, reopening, older SQLite schemas migrated, leases
    between brokers, failed writes and lookups; the calls themselves are in
    test_store_calls, the lifecycle of contexts in test_store_contexts.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <czmq.h>
#include <sqlite3.h>
#include "store_fixture.h"

//  Writes are seen by reads before the commit, and kept after it
static void
test_reads_see_the_batch_and_commit_keeps_it (void **state)
{
    char *context = s_context ("batch");
    act_store_t *store = s_open_owning (context);
    assert_false (act_store_has_context (store, context));
    assert_int_equal (act_store_put_context (store, context), 0);
    for (int seq = 1; seq <= 3; seq++) {
        json_t *message = json_pack ("{sssisi}", "type", "data", "_seq", seq, "n", seq);
        assert_int_equal (s_put (store, context, (uint64_t) seq, message), 0);
        json_decref (message);
    }
    assert_true (act_store_has_context (store, context));
    json_t *page = act_store_history (store, context, 2, 10, 0);
    assert_int_equal (json_array_size (page), 2);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (page, 0), "_seq")), 2);
    json_decref (page);
    act_err_t err = { 0 };
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_int_equal (act_store_batch (store), 0);
    page = act_store_history (store, context, 1, 2, 0);
    assert_int_equal (json_array_size (page), 2);
    //  A byte bound stops the page, after at least one message, where its
    //  compact text would pass it
    char *text = act_json_dump (page);
    json_decref (page);
    page = act_store_history (store, context, 1, 10, strlen (text));
    assert_int_equal (json_array_size (page), 2);
    json_decref (page);
    page = act_store_history (store, context, 1, 10, strlen (text) - 1);
    assert_int_equal (json_array_size (page), 1);
    json_decref (page);
    page = act_store_history (store, context, 1, 10, 1);
    assert_int_equal (json_array_size (page), 1);
    json_decref (page);
    free (text);
    json_t *all = json_array ();
    assert_int_equal (act_store_messages (store, context, s_count, all), 0);
    assert_int_equal (json_array_size (all), 3);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (all, 2), "n")), 3);
    json_decref (all);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  What one store holds, the next one opened on the same place reads
static void
test_a_reopened_store_has_what_was_committed (void **state)
{
    if (streq (s_location, ":memory:"))
        skip ();                //  Nothing outlives a memory store, by design
    char *context = s_context ("reopen");
    act_store_t *store = s_open_owning (context);
    act_store_put_context (store, context);
    json_t *message = json_pack ("{sssi}", "type", "text", "_seq", 1);
    s_put (store, context, 1, message);
    json_decref (message);
    act_err_t err = { 0 };
    assert_int_equal (act_store_commit (store, &err), 0);
    //  Written after the commit and never committed: gone
    message = json_pack ("{sssi}", "type", "text", "_seq", 2);
    s_put (store, context, 2, message);
    json_decref (message);
    act_store_destroy (&store);

    store = s_open_owning (context);
    json_t *page = act_store_history (store, context, 1, 10, 0);
    assert_int_equal (json_array_size (page), 1);
    json_decref (page);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  The first schema (version 1) as actd 0.1 wrote it: a fixture for the
//  upgrade test, not to be changed with the migrations
static const char *s_schema_v1 =
    "CREATE TABLE contexts (id TEXT PRIMARY KEY, created TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE messages (context TEXT NOT NULL, seq INTEGER NOT NULL,"
    "  body TEXT NOT NULL, PRIMARY KEY (context, seq)) WITHOUT ROWID;"
    "CREATE TABLE calls (id INTEGER PRIMARY KEY, context TEXT NOT NULL,"
    "  state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, call TEXT NOT NULL,"
    "  idem TEXT, outcome TEXT, progress TEXT, client TEXT, request TEXT,"
    "  ended INTEGER NOT NULL DEFAULT 0);"
    "CREATE UNIQUE INDEX calls_by_key ON calls (context, idem) WHERE idem IS NOT NULL;"
    "CREATE INDEX calls_pending ON calls (id) WHERE ended = 0;"
    "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "INSERT INTO counters VALUES ('contexts', 0), ('messages', 0), ('accepted', 0),"
    "  ('ok', 0), ('error', 0), ('timeout', 0), ('skipped', 0), ('cancelled', 0);"
    "INSERT INTO contexts VALUES ('old', '2026-01-01T00:00:00.000Z');"
    "INSERT INTO messages VALUES ('old', 1, '{\"type\":\"text\",\"_seq\":1}');"
    "INSERT INTO contexts VALUES ('other', '2026-01-01T00:00:00.000Z');"
    "INSERT INTO messages VALUES ('other', 2, '{\"type\":\"text\",\"_seq\":2}');"
    "INSERT INTO messages VALUES ('other', 1, '{\"type\":\"text\",\"_seq\":1}');"
    "INSERT INTO calls (id, context, state, attempts, call) VALUES"
    "  (7, 'old', 'running', 1, '{\"_tool\":\"t\"}');"
    "INSERT INTO calls (id, context, state, attempts, call, outcome, ended) VALUES"
    "  (8, 'old', 'ok', 1, '{\"_tool\":\"t\"}', '{}', 1);"
    "PRAGMA user_version = 1;";

//  The store at path, made by running schema (an older actd's SQL) and
//  then opened by this one: migrated
static act_store_t *
s_open_old (const char *path, const char *schema)
{
    sqlite3 *db;
    assert_int_equal (sqlite3_open (path, &db), SQLITE_OK);
    assert_int_equal (sqlite3_exec (db, schema, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close (db);
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (path, ACT_SYNC_NORMAL, &err);
    if (!store)
        fail_msg ("cannot open %s: %s", path, err.message);
    return store;
}

//  A store written by an older actd is brought to the current schema when
//  opened, with its messages and its pending calls intact
static void
test_an_old_sqlite_schema_is_migrated (void **state)
{
    if (streq (s_location, ":memory:") || strstr (s_location, "://"))
        skip ();                //  SQLite files only
    char *path = zsys_sprintf ("%s-v1", s_location);
    act_err_t err = { 0 };
    act_store_t *store = s_open_old (path, s_schema_v1);
    json_t *pending = json_array ();
    assert_int_equal (act_store_pending_in (store, "old", s_count, pending), 0);
    assert_int_equal (json_array_size (pending), 1);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (pending, 0), "call_id")), 7);
    json_decref (pending);
    json_t *page = act_store_history (store, "old", 1, 10, 0);
    assert_int_equal (json_array_size (page), 1);
    json_decref (page);
    //  A call that goes on running and then ends leaves the pending set
    act_call_record_t record = s_record (7, "old", "running", NULL);
    record.attempts = 2;
    assert_int_equal (act_store_update_call (store, &record), 0);
    record.state = "ok";
    record.outcome = "{}";
    assert_int_equal (act_store_update_call (store, &record), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    act_store_destroy (&store);

    assert_int_equal (s_sql_number (path, "PRAGMA user_version"), 10);
    assert_int_equal (s_sql_number (path, "SELECT COUNT(*) FROM sqlite_master"
                                          " WHERE name = 'calls_pending'"), 0);
    //  Version 7: the call's end is a row of ends, and it left live
    assert_int_equal (s_sql_number (path, "SELECT COUNT(*) FROM live"), 0);
    assert_int_equal (s_sql_number (path, "SELECT attempts FROM ends WHERE id = 7"), 2);
    //  Version 4: the old context's row has its counts, and it can go
    store = act_store_open (path, ACT_SYNC_NORMAL, &err);
    assert_non_null (store);
    json_t *listed = act_store_contexts (store, "ol", NULL, 10);
    assert_int_equal (json_array_size (listed), 1);
    json_t *old = json_array_get (listed, 0);
    assert_string_equal (json_string_value (json_object_get (old, "context")), "old");
    assert_int_equal (json_integer_value (json_object_get (old, "messages")), 1);
    assert_int_equal (json_integer_value (json_object_get (old, "last_seq")), 1);
    assert_int_equal (json_integer_value (json_object_get (old, "pending")), 0);
    assert_true (json_is_null (json_object_get (old, "updated")));
    json_decref (listed);
    //  Version 5: messages in a rowid table; (context, seq) still unique
    //  and read in _seq order
    page = act_store_history (store, "other", 1, 10, 0);
    assert_int_equal (json_array_size (page), 2);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (page, 0), "_seq")), 1);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (page, 1), "_seq")), 2);
    json_decref (page);
    act_store_put_message (store, "other", 2, "{}", 2);
    assert_int_equal (act_store_commit (store, &err), -1);
    memset (&err, 0, sizeof err);
    size_t messages = 0;
    assert_int_equal (act_store_delete_context (store, "old", &messages), 0);
    assert_int_equal (messages, 1);
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_false (act_store_has_context (store, "old"));
    assert_null (s_call (store, 8));
    act_store_destroy (&store);
    //  A file made before version 4 keeps auto_vacuum NONE (see act_store_sqlite.c)
    assert_int_equal (s_sql_number (path, "PRAGMA auto_vacuum"), 0);
    assert_int_equal (s_sql_number (path, "SELECT COUNT(*) FROM calls"), 0);
    s_remove_store (&path);
}

//  Schema version 6 as actd wrote it before version 7 (a call's end an
//  UPDATE of its row, pending calls by a partial index on calls.ended): a
//  fixture for the 6 -> 7 test, not to be changed with the migrations.
//  Call 1 is queued, 2 was dispatched again (its row in dispatched has
//  more attempts), 3 ended, 4 is running and has an _id.
static const char *s_schema_v6 =
    "CREATE TABLE contexts (id TEXT PRIMARY KEY, created TEXT NOT NULL,"
    "  messages INTEGER NOT NULL DEFAULT 0, last_seq INTEGER NOT NULL DEFAULT 0,"
    "  updated TEXT) WITHOUT ROWID;"
    "CREATE TABLE calls (id INTEGER PRIMARY KEY, context TEXT NOT NULL,"
    "  state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, call TEXT NOT NULL,"
    "  idem TEXT, outcome TEXT, progress TEXT, client TEXT, request TEXT,"
    "  ended INTEGER NOT NULL DEFAULT 0);"
    "CREATE UNIQUE INDEX calls_by_key ON calls (context, idem) WHERE idem IS NOT NULL;"
    "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX calls_pending_by_context ON calls (context, id) WHERE ended = 0;"
    "CREATE INDEX contexts_by_updated ON contexts (updated) WHERE updated IS NOT NULL;"
    "CREATE INDEX contexts_by_created ON contexts (created) WHERE updated IS NULL;"
    "CREATE INDEX calls_by_context ON calls (context);"
    "CREATE TABLE append_keys (context TEXT NOT NULL, key TEXT NOT NULL,"
    "  seq INTEGER NOT NULL, PRIMARY KEY (context, key)) WITHOUT ROWID;"
    "CREATE TABLE messages (id INTEGER PRIMARY KEY, context TEXT NOT NULL,"
    "  seq INTEGER NOT NULL, body TEXT NOT NULL);"
    "CREATE UNIQUE INDEX messages_by_seq ON messages (context, seq);"
    "CREATE TABLE dispatched (id INTEGER PRIMARY KEY, attempts INTEGER NOT NULL);"
    "INSERT INTO counters VALUES ('contexts', 1), ('messages', 1), ('accepted', 4),"
    "  ('ok', 1), ('error', 0), ('timeout', 0), ('skipped', 0), ('cancelled', 0),"
    "  ('deleted', 0);"
    "INSERT INTO contexts VALUES ('six', '2026-01-01T00:00:00.000Z', 1, 1,"
    "  '2026-01-01T00:00:01.000Z');"
    "INSERT INTO messages (context, seq, body) VALUES"
    "  ('six', 1, '{\"type\":\"text\",\"_seq\":1,\"_date\":\"2026-01-01T00:00:01.000Z\"}');"
    "INSERT INTO calls (id, context, state, attempts, call) VALUES"
    "  (1, 'six', 'queued', 0, '{\"_tool\":\"t\"}'),"
    "  (2, 'six', 'queued', 1, '{\"_tool\":\"t\"}');"
    "INSERT INTO dispatched VALUES (2, 2);"
    "INSERT INTO calls (id, context, state, attempts, call, outcome, ended) VALUES"
    "  (3, 'six', 'ok', 1, '{\"_tool\":\"t\"}', '{\"status\":\"ok\"}', 1);"
    "INSERT INTO calls (id, context, state, attempts, call, idem) VALUES"
    "  (4, 'six', 'running', 1, '{\"_tool\":\"t\"}', 'k4');"
    "PRAGMA user_version = 6;";

//  The store of s_schema_v6, just migrated, has its calls as they were:
//  1, 2 (with the attempts of its row in dispatched) and 4 pending, 3
//  ended ok, 4 found by its _id, the context's three pending counted
static void
s_assert_v6_as_written (act_store_t *store)
{
    char *list = s_pending_list (store, "six");
    assert_string_equal (list, "1:queued:0,2:running:2,4:running:1");
    zstr_free (&list);
    json_t *ended = s_call (store, 3);
    assert_string_equal (json_string_value (json_object_get (ended, "state")), "ok");
    assert_string_equal (json_string_value (json_object_get (json_object_get (ended, "outcome"),
                                                            "status")), "ok");
    json_decref (ended);
    assert_int_equal (s_idem (store, "six", "k4"), 4);
    json_t *listed = act_store_contexts (store, "six", NULL, 10);
    assert_int_equal (json_array_size (listed), 1);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (listed, 0),
                                                           "pending")), 3);
    json_decref (listed);
}

//  A store of schema version 6 (the last before a call's end became a row
//  of its own) opens with its pending calls, their attempts, and its ended
//  calls as they were; calls then end, and are dispatched, as recovery
//  reads them after a restart
static void
test_a_version_6_store_is_migrated (void **state)
{
    if (streq (s_location, ":memory:") || strstr (s_location, "://"))
        skip ();                //  SQLite files only
    char *path = zsys_sprintf ("%s-v6", s_location);
    act_err_t err = { 0 };
    act_store_t *store = s_open_old (path, s_schema_v6);
    s_assert_v6_as_written (store);

    //  Call 2 ends and call 1 is dispatched, in one batch; the store is
    //  opened again, as after a kill -9
    act_call_record_t record = s_record (2, "six", "error", NULL);
    record.attempts = 2;
    record.outcome = "{\"status\":\"error\"}";
    assert_int_equal (act_store_update_call (store, &record), 0);
    record = s_record (1, "six", "running", NULL);
    record.attempts = 1;
    assert_int_equal (act_store_update_call (store, &record), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    act_store_destroy (&store);
    store = act_store_open (path, ACT_SYNC_NORMAL, &err);
    assert_non_null (store);
    char *list = s_pending_list (store, "six");
    assert_string_equal (list, "1:running:1,4:running:1");
    zstr_free (&list);
    json_t *ended = s_call (store, 2);
    assert_string_equal (json_string_value (json_object_get (ended, "state")), "error");
    assert_int_equal (json_integer_value (json_object_get (ended, "attempts")), 2);
    assert_string_equal (json_string_value (json_object_get (json_object_get (ended, "outcome"),
                                                            "status")), "error");
    json_decref (ended);
    //  Not idle while calls are pending; the others end, and it is
    json_t *idle = json_array ();
    assert_int_equal (act_store_idle_contexts (store, "2099-01-01T00:00:00.000Z", 10,
                                               s_count, idle), 0);
    assert_int_equal (json_array_size (idle), 0);
    for (uint64_t id = 1; id <= 4; id += 3) {
        record = s_record (id, "six", "ok", NULL);
        record.attempts = 1;
        record.outcome = "{\"status\":\"ok\"}";
        assert_int_equal (act_store_update_call (store, &record), 0);
    }
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_int_equal (act_store_idle_contexts (store, "2099-01-01T00:00:00.000Z", 10,
                                               s_count, idle), 0);
    assert_int_equal (json_array_size (idle), 1);
    json_decref (idle);
    list = s_pending_list (store, "six");
    assert_string_equal (list, "");
    zstr_free (&list);
    //  Version 10: a call of the migrated store takes a resume state
    assert_int_equal (act_store_put_resume (store, "six", 2, "{\"retry\":{}}"), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    ended = s_call (store, 2);
    assert_non_null (json_object_get (json_object_get (ended, "resume"), "retry"));
    json_decref (ended);
    //  Deleting the context deletes its calls' rows in every table
    size_t messages = 0;
    assert_int_equal (act_store_delete_context (store, "six", &messages), 0);
    assert_int_equal (messages, 1);
    assert_int_equal (act_store_commit (store, &err), 0);
    assert_null (s_call (store, 2));
    act_store_destroy (&store);
    assert_int_equal (s_sql_number (path, "PRAGMA user_version"), 10);
    assert_int_equal (s_sql_number (path, "SELECT (SELECT COUNT(*) FROM calls)"
                                          " + (SELECT COUNT(*) FROM ends)"
                                          " + (SELECT COUNT(*) FROM live)"
                                          " + (SELECT COUNT(*) FROM dispatched)"
                                          " + (SELECT COUNT(*) FROM call_blocks)"
                                          " + (SELECT COUNT(*) FROM resume)"), 0);
    s_remove_store (&path);
}

//  Several brokers on one store: one owner per context, takeover after
//  the owner's lease, and a broker that lost a context cannot commit into
//  it (PostgreSQL only; one broker owns everything elsewhere)
static void
test_leases_take_over_and_fence (void **state)
{
    act_store_t *first = s_open ();
    if (!act_store_shared (first)) {
        char *owner = NULL;
        assert_int_equal (act_store_claim (first, "anything", &owner), 1);
        assert_null (owner);
        act_store_destroy (&first);
        return;
    }
    act_store_t *second = s_open ();
    act_err_t err = { 0 };
    assert_int_equal (act_store_join (first, "broker-a", "tcp://a:1", 300, &err), 0);
    assert_int_equal (act_store_join (second, "broker-b", "tcp://b:1", 300, &err), 0);
    char *context = s_context ("lease");
    char *owner = NULL;
    assert_int_equal (act_store_claim (first, context, &owner), 1);
    assert_int_equal (act_store_claim (second, context, &owner), 0);
    assert_string_equal (owner, "tcp://a:1");
    zstr_free (&owner);

    //  a writes into it while it owns it
    act_store_put_context (first, context);
    json_t *message = json_pack ("{sssi}", "type", "text", "_seq", 1);
    s_put (first, context, 1, message);
    assert_int_equal (act_store_commit (first, &err), 0);

    //  a stops renewing: after its lease b takes the context over
    zclock_sleep (500);
    assert_int_equal (act_store_renew (second), 0);
    assert_int_equal (act_store_claim (second, context, &owner), 1);
    assert_null (owner);

    //  a, back, cannot commit into the context it lost
    json_t *late = json_pack ("{sssi}", "type", "text", "_seq", 2);
    s_put (first, context, 2, late);
    json_decref (late);
    act_err_t lost = { 0 };
    assert_int_equal (act_store_commit (first, &lost), -1);
    assert_non_null (lost.code);
    json_t *page = act_store_history (second, context, 1, 10, 0);
    assert_int_equal (json_array_size (page), 1);
    json_decref (page);

    //  b writes the next message; a's claim now names b
    s_put (second, context, 2, message);
    assert_int_equal (act_store_commit (second, &err), 0);
    assert_int_equal (act_store_renew (first), 0);
    assert_int_equal (act_store_claim (first, context, &owner), 0);
    assert_string_equal (owner, "tcp://b:1");
    zstr_free (&owner);
    //  Call ids stay unique across brokers
    uint64_t a = act_store_next_call (first), b = act_store_next_call (second);
    assert_true (a != b);
    //  b leaves: a may take the context at once
    assert_int_equal (act_store_leave (second), 0);
    assert_int_equal (act_store_claim (first, context, &owner), 1);
    json_decref (message);
    act_store_destroy (&first);
    act_store_destroy (&second);
    zstr_free (&context);
}

//  A claim that does not take the lease leaves no lock on its row: inside
//  a batch the claim runs in a savepoint, and a row it locked (checking
//  the row, or its INSERT's ON CONFLICT, which locks the conflicting row
//  even when it updates nothing) would stay locked until that batch's
//  commit, stalling the owner's commit (its check of the leases, FOR
//  SHARE) for that long, or failing it on lock_timeout. A claim taken in
//  the batch is kept with it. PostgreSQL only
static void
test_a_refused_claim_locks_nothing (void **state)
{
    act_store_t *owner_store = s_open ();
    if (!act_store_shared (owner_store)) {
        act_store_destroy (&owner_store);
        return;
    }
    act_store_t *other = s_open ();
    act_err_t err = { 0 };
    //  A lock left behind fails the owner's commit in 1 s, not for ever
    assert_int_equal (act_store_timeout (owner_store, 1000), 0);
    assert_int_equal (act_store_timeout (other, 1000), 0);
    assert_int_equal (act_store_join (owner_store, "owner-a", "tcp://a:1", 60000, &err), 0);
    assert_int_equal (act_store_join (other, "other-b", "tcp://b:1", 60000, &err), 0);
    char *owned = s_context ("owned"), *mine = s_context ("mine"), *taken = s_context ("taken");
    char *owner = NULL;
    assert_int_equal (act_store_claim (owner_store, owned, NULL), 1);
    assert_int_equal (act_store_claim (other, mine, NULL), 1);
    json_t *message = json_pack ("{sssi}", "type", "text", "_seq", 1);

    //  b, a write pending in its batch, takes a new context, then is
    //  refused a's (a request reaching the broker that does not own it)
    act_store_put_context (other, mine);
    assert_int_equal (s_put (other, mine, 1, message), 0);
    assert_int_equal (act_store_claim (other, taken, &owner), 1);
    assert_null (owner);
    assert_int_equal (act_store_claim (other, owned, &owner), 0);
    assert_string_equal (owner, "tcp://a:1");
    zstr_free (&owner);

    //  a commits into its context while b's batch is still open
    act_store_put_context (owner_store, owned);
    assert_int_equal (s_put (owner_store, owned, 1, message), 0);
    if (act_store_commit (owner_store, &err))
        fail_msg ("the owner's commit failed: %s", err.message);

    //  b's batch keeps its write and the context it took
    if (act_store_commit (other, &err))
        fail_msg ("the other broker's commit failed: %s", err.message);
    json_t *page = act_store_history (owner_store, mine, 1, 10, 0);
    assert_int_equal (json_array_size (page), 1);
    json_decref (page);
    assert_int_equal (act_store_claim (owner_store, taken, &owner), 0);
    assert_string_equal (owner, "tcp://b:1");
    zstr_free (&owner);

    //  Outside a batch the claim is a transaction of its own: the same
    assert_int_equal (act_store_claim (other, owned, &owner), 0);
    zstr_free (&owner);
    json_t *next = json_pack ("{sssi}", "type", "text", "_seq", 2);
    assert_int_equal (s_put (owner_store, owned, 2, next), 0);
    json_decref (next);
    if (act_store_commit (owner_store, &err))
        fail_msg ("the owner's second commit failed: %s", err.message);
    json_decref (message);
    act_store_destroy (&other);
    act_store_destroy (&owner_store);
    zstr_free (&owned);
    zstr_free (&mine);
    zstr_free (&taken);
}

//  A write that fails dooms its batch: the commit fails and keeps none of
//  it (in SQLite a failed statement rolls back only itself, so a COMMIT
//  after it kept the rest; a DONE could then report a message that was
//  never stored). The failure here is real: a second message with the
//  same _seq, which every backend refuses. The memory backend applies
//  writes at once and cannot take them back; the commit still fails there,
//  and the broker then reloads its state.
static void
test_a_failed_write_fails_the_commit (void **state)
{
    char *context = s_context ("doomed");
    act_store_t *store = s_open_owning (context);
    bool transactional = !streq (act_store_backend (store), "memory");
    act_err_t err = { 0 };
    assert_int_equal (act_store_put_context (store, context), 0);
    json_t *message = json_pack ("{sssi}", "type", "data", "_seq", 1);
    assert_int_equal (s_put (store, context, 1, message), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    json_t *before = act_store_counts (store);

    act_call_record_t record = s_record (act_store_next_call (store), context, "queued", NULL);
    assert_int_equal (act_store_put_call (store, &record), 0);
    json_object_set_new (message, "_seq", json_integer (2));
    assert_int_equal (s_put (store, context, 2, message), 0);
    s_put (store, context, 2, message);        //  Refused now or at commit
    assert_int_equal (act_store_commit (store, &err), -1);
    assert_string_equal (err.code, ACT_E_INTERNAL);
    assert_int_equal (act_store_batch (store), 0);
    json_t *after = act_store_counts (store);
    assert_true (json_equal (before, after));   //  Counted: none of it
    if (transactional) {
        json_t *page = act_store_history (store, context, 1, 10, 0);
        assert_int_equal (json_array_size (page), 1);
        json_decref (page);
        json_t *call = s_call (store, record.call_id);
        assert_null (call);
    }
    //  The next batch commits as usual
    assert_int_equal (s_put (store, context, transactional? 2: 3, message), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    json_decref (before);
    json_decref (after);
    json_decref (message);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  --------------------------------------------------------------------------
//  The lifecycle of contexts (PROTOCOL.md 1.1)

//  Run sql on the SQLite store at path with the sqlite3 library, from a
//  connection of its own, while the store is open
static void
s_sql_run (const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal (sqlite3_open (path, &db), SQLITE_OK);
    sqlite3_busy_timeout (db, 5000);
    if (sqlite3_exec (db, sql, NULL, NULL, NULL) != SQLITE_OK)
        fail_msg ("%s: %s", sql, sqlite3_errmsg (db));
    sqlite3_close (db);
}

//  A lookup the store could not answer is -1, with no value, never 0 (not
//  found): its callers answer internal instead of running a call again or
//  appending a message twice. Read errors are made by renaming the tables
//  the lookups read from another connection, then naming them back.
static void
test_a_failed_lookup_is_no_answer (void **state)
{
    if (streq (s_location, ":memory:") || strstr (s_location, "://"))
        skip ();                //  SQLite files only (tests/integration: PostgreSQL)
    char *context = s_context ("unread");
    act_store_t *store = s_open_owning (context);
    act_err_t err = { 0 };
    act_store_put_context (store, context);
    uint64_t id = act_store_next_call (store);
    act_call_record_t record = s_record (id, context, "queued", "key-1");
    assert_int_equal (act_store_put_call (store, &record), 0);
    assert_int_equal (act_store_put_append_key (store, context, "append-1", 1), 0);
    assert_int_equal (act_store_commit (store, &err), 0);

    s_sql_run (s_location, "ALTER TABLE calls RENAME TO calls_away;"
                           "ALTER TABLE append_keys RENAME TO append_keys_away");
    json_t *call = (json_t *) 1;
    uint64_t number = 1;
    assert_int_equal (act_store_call (store, id, &call), -1);
    assert_null (call);
    assert_int_equal (act_store_call (store, id + 1, &call), -1);
    assert_int_equal (act_store_idem (store, context, "key-1", &number), -1);
    assert_int_equal (number, 0);
    assert_int_equal (act_store_idem (store, context, "key-2", &number), -1);
    number = 1;
    assert_int_equal (act_store_append_key (store, context, "append-1", &number), -1);
    assert_int_equal (number, 0);

    s_sql_run (s_location, "ALTER TABLE calls_away RENAME TO calls;"
                           "ALTER TABLE append_keys_away RENAME TO append_keys");
    call = s_call (store, id);
    assert_non_null (call);
    json_decref (call);
    assert_int_equal (s_idem (store, context, "key-1"), id);
    assert_int_equal (s_idem (store, context, "key-2"), 0);
    assert_int_equal (s_append_key (store, context, "append-1"), 1);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  A store's location as logged: a PostgreSQL URL without its password
static void
test_a_password_is_not_shown (void **state)
{
    (void) state;
    const char *cases [][2] = {
        { "/var/lib/actd/actd.db", "/var/lib/actd/actd.db" },
        { "postgresql://actd:s3cret@db.example:5432/actd",
          "postgresql://actd:***@db.example:5432/actd" },
        { "postgres://actd@db/actd?password=s3cret&sslmode=require",
          "postgres://actd@db/actd?password=***&sslmode=require" },
        { "postgresql://a:b@h/d?password=c", "postgresql://a:***@h/d?password=***" },
        { "postgresql://h/d?user=me", "postgresql://h/d?user=me" },
        { "postgresql://h/d?x=a@b:c", "postgresql://h/d?x=a@b:c" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *shown = act_store_location_shown (cases [i][0]);
        assert_string_equal (shown, cases [i][1]);
        free (shown);
    }
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_reads_see_the_batch_and_commit_keeps_it),
        cmocka_unit_test (test_a_reopened_store_has_what_was_committed),
        cmocka_unit_test (test_leases_take_over_and_fence),
        cmocka_unit_test (test_a_refused_claim_locks_nothing),
        cmocka_unit_test (test_an_old_sqlite_schema_is_migrated),
        cmocka_unit_test (test_a_version_6_store_is_migrated),
        cmocka_unit_test (test_a_failed_write_fails_the_commit),
        cmocka_unit_test (test_a_failed_lookup_is_no_answer),
        cmocka_unit_test (test_a_password_is_not_shown),
    };
    return s_run_on_every_store ("store", tests, sizeof tests / sizeof tests [0]);
}
