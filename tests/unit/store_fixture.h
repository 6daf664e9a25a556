/*  =========================================================================
    store_fixture - what the store contract's tests share (test_store.c,
    test_store_calls.c, test_store_contexts.c): the backend under test,
    opening it, writing and reading calls and messages, and running a
    group of tests on every backend. Include after <cmocka.h>, <czmq.h>
    and <sqlite3.h>.
    ========================================================================= */

#ifndef STORE_FIXTURE_H_INCLUDED
#define STORE_FIXTURE_H_INCLUDED

#include <sys/stat.h>
#include "actd/act.h"
#include "act_store.h"
#include "unit_support.h"

//  Where the backend under test lives: set by s_run_on_every_store
static const char *s_location;

static inline act_store_t *
s_open (void)
{
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (s_location, ACT_SYNC_NORMAL, &err);
    if (!store)
        fail_msg ("cannot open %s: %s", s_location, err.message);
    return store;
}

//  A store open as the one broker writing context (on a shared store a
//  broker joins and claims a context before it writes into it, as actd
//  does)
static inline act_store_t *
s_open_owning (const char *context)
{
    act_store_t *store = s_open ();
    act_err_t err = { 0 };
    assert_int_equal (act_store_join (store, "test-broker", "tcp://test:1", 60000, &err), 0);
    assert_int_equal (act_store_claim (store, context, NULL), 1);
    return store;
}

static inline act_call_record_t
s_record (uint64_t id, const char *context, const char *state, const char *key)
{
    return (act_call_record_t) { id, context, state, 0, "{\"_tool\":\"t\"}", key,
                                 NULL, NULL, NULL, NULL };
}

//  Put message (JSON) into the store as its text
static inline int
s_put (act_store_t *store, const char *context, uint64_t seq, json_t *message)
{
    char *text = act_json_dump (message);
    int rc = act_store_put_message (store, context, seq, text, strlen (text));
    free (text);
    return rc;
}

static inline int
s_count (const json_t *item, void *arg)
{
    json_array_append ((json_t *) arg, (json_t *) item);
    return 0;
}

//  The state and attempts of each of context's pending calls, as
//  "id:state:attempts,..." (a new string)
static inline char *
s_pending_list (act_store_t *store, const char *context)
{
    json_t *pending = json_array ();
    assert_int_equal (act_store_pending_in (store, context, s_count, pending), 0);
    char *list = strdup ("");
    size_t index;
    json_t *record;
    json_array_foreach (pending, index, record) {
        char *longer = zsys_sprintf ("%s%s%" JSON_INTEGER_FORMAT ":%s:%" JSON_INTEGER_FORMAT,
            list, index? ",": "", json_integer_value (json_object_get (record, "call_id")),
            json_string_value (json_object_get (record, "state")),
            json_integer_value (json_object_get (record, "attempts")));
        free (list);
        list = longer;
    }
    json_decref (pending);
    return list;
}

//  A unique context name per test, so one database serves every test
static inline char *
s_context (const char *name)
{
    return zsys_sprintf ("%s-%08x", name, (unsigned) randof (0x7fffffff));
}

//  The lookups of a store that reads: each answers, 1 (found, with its
//  value) or 0 (not found, with none), never -1

//  The record of call call_id, or NULL when it is not stored
static inline json_t *
s_call (act_store_t *store, uint64_t call_id)
{
    json_t *record = (json_t *) 1;
    int rc = act_store_call (store, call_id, &record);
    assert_in_range (rc, 0, 1);
    assert_int_equal (rc, record != NULL);
    return record;
}

//  The call id holding key in context, or 0
static inline uint64_t
s_idem (act_store_t *store, const char *context, const char *key)
{
    uint64_t call_id = 1;
    int rc = act_store_idem (store, context, key, &call_id);
    assert_in_range (rc, 0, 1);
    assert_int_equal (rc, call_id != 0);
    return call_id;
}

//  The _seq of the APPEND with key in context, or 0
static inline uint64_t
s_append_key (act_store_t *store, const char *context, const char *key)
{
    uint64_t seq = 1;
    int rc = act_store_append_key (store, context, key, &seq);
    assert_in_range (rc, 0, 1);
    assert_int_equal (rc, seq != 0);
    return seq;
}

//  Delete a SQLite store's files (the database, its -wal and -shm) and
//  free the path, nulling it
static inline void
s_remove_store (char **path_p)
{
    unit_remove_sqlite (*path_p);
    zstr_free (path_p);
}

//  A scalar read with the sqlite3 library, outside the store
static inline long long
s_sql_number (const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *query;
    assert_int_equal (sqlite3_open (path, &db), SQLITE_OK);
    assert_int_equal (sqlite3_prepare_v2 (db, sql, -1, &query, NULL), SQLITE_OK);
    if (sqlite3_step (query) != SQLITE_ROW)
        fail_msg ("no row from %s: %s", sql, sqlite3_errmsg (db));
    long long value = sqlite3_column_int64 (query, 0);
    sqlite3_finalize (query);
    sqlite3_close (db);
    return value;
}

//  Run tests on every backend: PostgreSQL alone when ACTD_TEST_PG_URL names
//  an empty database (ctest runs each store test a second time through
//  tests/unit/with_postgres.py), else ":memory:" and a SQLite file.
//  Returns the number of failed tests
static inline int
s_run_on_every_store (const char *name, const struct CMUnitTest *tests, size_t count)
{
    zsys_init ();
    char *group = zsys_sprintf ("%s (postgres)", name);
    const char *pg = getenv ("ACTD_TEST_PG_URL");
    int failed = 0;
    if (pg) {
        s_location = pg;
        printf ("store: %s\n", pg);
        failed = _cmocka_run_group_tests (group, tests, count, NULL, NULL);
        zstr_free (&group);
        return failed;
    }
    zstr_free (&group);
    char directory [] = "/tmp/actd-store-XXXXXX";
    if (!mkdtemp (directory))
        return 1;
    char *file = zsys_sprintf ("%s/store.db", directory);
    group = zsys_sprintf ("%s (memory)", name);
    s_location = ":memory:";
    failed += _cmocka_run_group_tests (group, tests, count, NULL, NULL);
    zstr_free (&group);
    group = zsys_sprintf ("%s (sqlite)", name);
    s_location = file;
    failed += _cmocka_run_group_tests (group, tests, count, NULL, NULL);
    zstr_free (&group);
    s_remove_store (&file);
    rmdir (directory);
    return failed;
}

#endif
