/*  =========================================================================
    act_sqlite_schema - the SQLite store's schema and its migrations (see
    act_sqlite_schema.h). s_migrations [v] takes a store from version v to
    v + 1; a change of schema is a new entry at the end, never an edit.
    ========================================================================= */

#include <czmq.h>
#include "act_sqlite_schema.h"
#include "act_log.h"

static const char *s_migrations [] = {
    //  0 -> 1: the first schema
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
    "  ('ok', 0), ('error', 0), ('timeout', 0), ('skipped', 0), ('cancelled', 0);",
    //  1 -> 2: recovery goes context by context
    "CREATE INDEX calls_pending_by_context ON calls (context, id) WHERE ended = 0;",
    //  2 -> 3: recovery no longer reads every pending call in id order, and
    //  each index costs every call an insert and a delete
    "DROP INDEX calls_pending;",
    //  3 -> 4: CONTEXTS, DELETE, retention and APPEND keys. A context's
    //  counts and last date, kept in its row; calls by context, to delete
    //  them (a plain index: calls change state without touching it)
    "ALTER TABLE contexts ADD COLUMN messages INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE contexts ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE contexts ADD COLUMN updated TEXT;"
    "UPDATE contexts SET"
    "  messages = (SELECT COUNT(*) FROM messages WHERE context = contexts.id),"
    "  last_seq = (SELECT COALESCE (MAX (seq), 0) FROM messages WHERE context = contexts.id),"
    "  updated = (SELECT CASE WHEN json_valid (body) THEN json_extract (body, '$._date') END"
    "    FROM messages WHERE context = contexts.id ORDER BY seq DESC LIMIT 1);"
    "CREATE INDEX contexts_by_updated ON contexts (updated) WHERE updated IS NOT NULL;"
    "CREATE INDEX contexts_by_created ON contexts (created) WHERE updated IS NULL;"
    "CREATE INDEX calls_by_context ON calls (context);"
    "CREATE TABLE append_keys (context TEXT NOT NULL, key TEXT NOT NULL,"
    "  seq INTEGER NOT NULL, PRIMARY KEY (context, key)) WITHOUT ROWID;"
    "INSERT INTO counters VALUES ('deleted', 0);",
    //  4 -> 5: messages in a rowid table, in the order they were stored,
    //  found by (context, seq) through an index. Clustered by context (a
    //  table WITHOUT ROWID), each message of ~500 bytes went into the
    //  middle of the tree, one of as many places as contexts were written,
    //  and split a page every second insert or so (SQLite's full
    //  rebalance of three pages, every page of it written at the commit);
    //  appended, a full page only starts the next one, and the index's
    //  small entries seldom fill theirs
    "CREATE TABLE messages_by_row (id INTEGER PRIMARY KEY, context TEXT NOT NULL,"
    "  seq INTEGER NOT NULL, body TEXT NOT NULL);"
    "INSERT INTO messages_by_row (context, seq, body)"
    "  SELECT context, seq, body FROM messages ORDER BY context, seq;"
    "DROP TABLE messages;"
    "ALTER TABLE messages_by_row RENAME TO messages;"
    "CREATE UNIQUE INDEX messages_by_seq ON messages (context, seq);",
    //  5 -> 6: a dispatch writes the call's attempts in a row of its own
    //  (small, appended) instead of rewriting the call's row; a call not
    //  ended whose row there has more attempts than its own is running
    "CREATE TABLE dispatched (id INTEGER PRIMARY KEY, attempts INTEGER NOT NULL);",
    //  6 -> 7: a call's end is a row of its own in ends (appended) instead
    //  of an UPDATE of the call's wide row and its indexes; the calls not
    //  ended are rows of live (context, id), written at accept and deleted
    //  at the end, instead of a partial index on calls.ended (which a call
    //  ended in ends no longer changes). A call's row keeps ended = 1 only
    //  when it was accepted and ended in one batch, or before version 7.
    //  No column of ends is NOT NULL (the store writes none NULL): a
    //  constraint that can abort makes SQLite keep a statement journal
    //  for each multi-row INSERT
    "CREATE TABLE ends (id INTEGER PRIMARY KEY, state TEXT, attempts INTEGER,"
    "  outcome TEXT, progress TEXT);"
    "CREATE TABLE live (context TEXT NOT NULL, id INTEGER NOT NULL,"
    "  PRIMARY KEY (context, id)) WITHOUT ROWID;"
    "INSERT INTO live (context, id) SELECT context, id FROM calls WHERE ended = 0;"
    "DROP INDEX calls_pending_by_context;",
    //  7 -> 8: only the calls not ended below a mark, live_from, are rows
    //  of live; those from the mark on are found in calls (ended = 0 and
    //  no row in ends). A row of live written at accept and deleted at
    //  the end cost a call more than its row of calls; the mark moves
    //  once per few hundred calls (see act_sqlite_live.c). Every call of
    //  a version 7 store is below the mark
    ("CREATE TABLE live_from (id INTEGER NOT NULL);"
     "INSERT INTO live_from SELECT COALESCE (MAX (id), 0) + 1 FROM calls;"),
    //  8 -> 9: a context's calls are found through the blocks of 4,096 ids
    //  that hold some (a row of call_blocks, written when a context's first
    //  call in a block is: a few per thousand calls), not through an index
    //  of calls by context, which cost every call an insert into the middle
    //  of a b-tree (one place per context written, its pages split far more
    //  often than an appended table's, each written at the commit)
    ("CREATE TABLE call_blocks (context TEXT NOT NULL, block INTEGER NOT NULL,"
     "  PRIMARY KEY (context, block)) WITHOUT ROWID;"
     "INSERT INTO call_blocks SELECT DISTINCT context, id / 4096 FROM calls;"
     "DROP INDEX calls_by_context;")
};
#define S_VERSION (int) (sizeof s_migrations / sizeof s_migrations [0])

//  Log and set err (internal) with SQLite's message; returns -1
static int
s_fail (sqlite3 *db, const char *path, act_err_t *err, const char *what)
{
    act_log (LOG_ERR, "store %s: %s: %s", path, what, sqlite3_errmsg (db));
    return act_err_set (err, ACT_E_INTERNAL, "store %s: %s: %s", path, what,
                        sqlite3_errmsg (db));
}

int
act_sqlite_schema_migrate (sqlite3 *db, const char *path, act_err_t *err)
{
    sqlite3_stmt *query;
    int version = -1;
    if (sqlite3_prepare_v2 (db, "PRAGMA user_version", -1, &query, NULL) == SQLITE_OK
    &&  sqlite3_step (query) == SQLITE_ROW)
        version = sqlite3_column_int (query, 0);
    sqlite3_finalize (query);
    if (version < 0)
        return s_fail (db, path, err, "cannot read the schema version");
    if (version > S_VERSION)
        return act_err_set (err, ACT_E_INTERNAL,
                            "store %s has schema version %d; this actd knows up to %d",
                            path, version, S_VERSION);
    for (; version < S_VERSION; version++) {
        char *sql = zsys_sprintf ("BEGIN IMMEDIATE; %s PRAGMA user_version = %d; COMMIT;",
                                  s_migrations [version], version + 1);
        int rc = sqlite3_exec (db, sql, NULL, NULL, NULL);
        zstr_free (&sql);
        if (rc != SQLITE_OK) {
            s_fail (db, path, err, "cannot migrate the schema");
            sqlite3_exec (db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
        act_log (LOG_INFO, "store %s: schema migrated to version %d", path, version + 1);
    }
    return 0;
}
