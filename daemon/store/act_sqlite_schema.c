/*  =========================================================================
    act_sqlite_schema - the SQLite store's schema and its migrations (see
    act_sqlite_schema.h). s_migrations [v] takes a store from version v to
    v + 1; a change of schema is a new entry at the end, never an edit.

    A migration that copies a table (4 -> 5) takes as long as the store is
    big, before actd is ready (a 1.2 GB store: 26-31 s, then 9-11 s to
    give the old copy's pages back; docs/operations.md, "Upgrades"): the
    hook set with act_store_on_progress hears how it goes (actd tells
    systemd, which would else kill actd at TimeoutStartSec= and start it
    again, to be killed again), from SQLite's progress handler and before
    each statement, and the log has a line every 10 s. The old copy's
    pages are then given back to the file system, and the WAL emptied.
    ========================================================================= */

#include <czmq.h>
#include <sys/stat.h>
#include "act_sqlite_schema.h"
#include "act_store.h"
#include "actd/act_json.h"
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
     "DROP INDEX calls_by_context;"),
    //  9 -> 10: what a call not ended needs to go on after a restart as
    //  it was, besides its row: the requests that repeated its _id (their
    //  DONE; the row of calls has the first submitter's only) and the end
    //  of its retry delay, as one JSON text the broker writes (see
    //  act_live_put_resume). A row of its own, written only by a call that
    //  has such state: a plain call writes what it wrote at version 9. A
    //  new, empty table: an existing store's calls have none
    "CREATE TABLE resume (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"
};
#define S_VERSION (int) (sizeof s_migrations / sizeof s_migrations [0])

//  The progress handler looks at the clock once per this many SQLite VM
//  instructions (a fraction of a millisecond of a migration's work)
#define S_STEPS 1000
//  A line in the log about long work at most this often
#define S_LOG_MS 10000
//  The slowest disk the store is assumed to be on, in bytes a ms (10 MB/s).
//  Some statements run long without coming back to the VM (a DROP TABLE
//  frees every page of the table in one instruction: up to 24 s for 1.2
//  GB; a COMMIT syncs the WAL; a checkpoint writes it into the file): the
//  hook is told to allow the time to write the store's files at this speed
#define S_SLOW_BYTES_PER_MS 10000

static act_store_progress_fn *s_progress_fn;    //  See act_store_on_progress
static void *s_progress_arg;
static long long s_progress_ms = 5000;

//  Long work at open: what it does, since when, and when it said so last
typedef struct {
    const char *path;           //  The store's file
    char doing [160];           //  What it does now
    long long started;          //  When the work began (act_clock_ms)
    long long reported;         //  When the hook was called last, or 0
    long long logged;           //  When the work was logged last
} s_work_t;

void
act_store_on_progress (act_store_progress_fn *fn, void *arg, long long interval_ms)
{
    s_progress_fn = fn;
    s_progress_arg = arg;
    s_progress_ms = interval_ms > 0? interval_ms: 0;
}

const char *
act_sqlite_words (const char *words, int code, int errno_value, char *text, size_t size)
{
    int primary = code & 0xff;
    if (errno_value && (primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN))
        snprintf (text, size, "%s (%s)", words, strerror (errno_value));
    else
        snprintf (text, size, "%s", words);
    return text;
}

const char *
act_sqlite_errmsg (sqlite3 *db, char *text, size_t size)
{
    return act_sqlite_words (sqlite3_errmsg (db), sqlite3_extended_errcode (db),
                             sqlite3_system_errno (db), text, size);
}

//  Log and set err (internal) with SQLite's message; returns -1
static int
s_fail (sqlite3 *db, const char *path, act_err_t *err, const char *what)
{
    char text [256];
    act_sqlite_errmsg (db, text, sizeof text);
    act_log (LOG_ERR, "store %s: %s: %s", path, what, text);
    return act_err_set (err, ACT_E_INTERNAL, "store %s: %s: %s", path, what, text);
}

//  How long the work may go before it calls the hook again: three
//  intervals, or the time to write the store's file and its WAL at
//  S_SLOW_BYTES_PER_MS when that is longer
static long long
s_extend_ms (const char *path)
{
    long long bytes = 0;
    struct stat info;
    if (stat (path, &info) == 0)
        bytes += (long long) info.st_size;
    char *wal = zsys_sprintf ("%s-wal", path);
    if (stat (wal, &info) == 0)
        bytes += (long long) info.st_size;
    zstr_free (&wal);
    long long extend = bytes / S_SLOW_BYTES_PER_MS;
    return extend > 3 * s_progress_ms? extend: 3 * s_progress_ms;
}

//  Tell the hook and the log what the work does, when each is due
static void
s_tick (s_work_t *work)
{
    long long now = act_clock_ms ();
    long long seconds = (now - work->started) / 1000;
    if (s_progress_fn && (!work->reported || now - work->reported >= s_progress_ms)) {
        char status [220];
        snprintf (status, sizeof status, "opening the store: %s (%lld s)", work->doing, seconds);
        s_progress_fn (status, s_extend_ms (work->path), s_progress_arg);
        work->reported = now;
    }
    if (now - work->logged >= S_LOG_MS) {
        act_log (LOG_NOTICE, "store %s: %s (%lld s so far)", work->path, work->doing, seconds);
        work->logged = now;
    }
}

//  SQLite's progress handler during the work: a tick, never a stop
static int
s_progress (void *arg)
{
    s_tick ((s_work_t *) arg);
    return 0;
}

//  Run each statement of sql to its end (rows are skipped), each named in
//  the work's doing as what and its first words, with a tick before it.
//  Returns SQLITE_OK, or the code of the statement that failed (the rest
//  are not run)
static int
s_exec (sqlite3 *db, const char *sql, s_work_t *work, const char *what)
{
    int rc = SQLITE_OK;
    while (rc == SQLITE_OK && *sql) {
        sqlite3_stmt *query = NULL;
        rc = sqlite3_prepare_v2 (db, sql, -1, &query, &sql);
        if (!query)             //  An error, or nothing but blanks left
            break;
        const char *text = sqlite3_sql (query);
        text += strspn (text, " \t\n");
        int words = (int) strcspn (text, "(;");
        while (words > 0 && text [words - 1] == ' ')
            words--;
        snprintf (work->doing, sizeof work->doing, "%s: %.*s", what,
                  words < 60? words: 60, text);
        s_tick (work);
        while ((rc = sqlite3_step (query)) == SQLITE_ROW)
            ;
        rc = rc == SQLITE_DONE? SQLITE_OK: rc;
        sqlite3_finalize (query);
    }
    return rc;
}

//  The integer the statement sql returns, or -1
static long long
s_number (sqlite3 *db, const char *sql)
{
    sqlite3_stmt *query;
    long long number = -1;
    if (sqlite3_prepare_v2 (db, sql, -1, &query, NULL) == SQLITE_OK
    &&  sqlite3_step (query) == SQLITE_ROW)
        number = sqlite3_column_int64 (query, 0);
    sqlite3_finalize (query);
    return number;
}

//  After migrations: the pages they freed (the old copy of a table) go
//  back to the file system, all of them, when the file has auto_vacuum
//  INCREMENTAL; one made before schema 4 has NONE and keeps them for new
//  writes (logged). Then the WAL, which holds the migrations' pages (as
//  big as the file), is written into the file and truncated
static void
s_give_back (sqlite3 *db, s_work_t *work)
{
    long long pages = s_number (db, "PRAGMA freelist_count");
    long long mib = pages * s_number (db, "PRAGMA page_size") / (1024 * 1024);
    bool incremental = s_number (db, "PRAGMA auto_vacuum") == 2;
    char what [96];
    snprintf (what, sizeof what, "giving back %lld free pages (%lld MiB)", pages, mib);
    long long started = act_clock_ms ();
    if (pages > 0 && !incremental)
        act_log (LOG_NOTICE, "store %s: %lld free pages (%lld MiB) stay in the file for new "
                 "writes: it has auto_vacuum NONE (made before schema 4; docs/operations.md, "
                 "section 6, says how to convert it)", work->path, pages, mib);
    else
    if (pages > 0 && s_exec (db, "PRAGMA incremental_vacuum", work, what) != SQLITE_OK)
        act_log (LOG_WARNING, "store %s: cannot give free pages back: %s (commits give "
                 "them back, a few at a time)", work->path, sqlite3_errmsg (db));
    else
    if (pages > 0) {
        long long left = s_number (db, "PRAGMA freelist_count");
        act_log (LOG_NOTICE, "store %s: %lld free pages (%lld MiB) given back to the file "
                 "system in %.1f s", work->path, pages - left, mib,
                 (double) (act_clock_ms () - started) / 1000);
    }
    if (s_exec (db, "PRAGMA wal_checkpoint (TRUNCATE)", work, "emptying the WAL") != SQLITE_OK)
        act_log (LOG_WARNING, "store %s: cannot empty the WAL: %s", work->path,
                 sqlite3_errmsg (db));
}

int
act_sqlite_schema_migrate (sqlite3 *db, const char *path, act_err_t *err)
{
    int version = (int) s_number (db, "PRAGMA user_version");
    if (version < 0)
        return s_fail (db, path, err, "cannot read the schema version");
    if (version > S_VERSION)
        return act_err_set (err, ACT_E_INTERNAL,
                            "store %s has schema version %d; this actd knows up to %d",
                            path, version, S_VERSION);
    if (version == S_VERSION)
        return 0;
    //  A new file (version 0) takes no time, and is not an upgrade
    s_work_t work = { path, "", act_clock_ms (), 0, act_clock_ms () };
    int from = version;
    if (from > 0) {
        act_log (LOG_NOTICE, "store %s: schema version %d, migrating it to version %d "
                 "before serving", path, from, S_VERSION);
        sqlite3_progress_handler (db, S_STEPS, s_progress, &work);
    }
    for (; version < S_VERSION; version++) {
        char *sql = zsys_sprintf ("BEGIN IMMEDIATE; %s PRAGMA user_version = %d; COMMIT;",
                                  s_migrations [version], version + 1);
        char what [48];
        snprintf (what, sizeof what, "migrating to schema %d", version + 1);
        int rc = from > 0? s_exec (db, sql, &work, what)
                         : sqlite3_exec (db, sql, NULL, NULL, NULL);
        zstr_free (&sql);
        if (rc != SQLITE_OK) {
            //  Which step, and the hint a full disk needs (the usual cause)
            char failed [96];
            snprintf (failed, sizeof failed, "cannot migrate the schema to version %d (the "
                      "store is left at %d; check free space)", version + 1, version);
            s_fail (db, path, err, failed);
            sqlite3_exec (db, "ROLLBACK", NULL, NULL, NULL);
            sqlite3_progress_handler (db, 0, NULL, NULL);
            return -1;
        }
        //  A new file goes through every step in no time: one line below
        if (from > 0)
            act_log (LOG_INFO, "store %s: schema migrated to version %d", path, version + 1);
    }
    if (from == 0)
        act_log (LOG_INFO, "store %s: created with schema version %d", path, S_VERSION);
    else {
        act_log (LOG_NOTICE, "store %s: schema migrated from version %d to %d in %.1f s",
                 path, from, S_VERSION, (double) (act_clock_ms () - work.started) / 1000);
        s_give_back (db, &work);
        sqlite3_progress_handler (db, 0, NULL, NULL);
    }
    return 0;
}
