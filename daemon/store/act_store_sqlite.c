/*  =========================================================================
    act_store_sqlite - the store in a SQLite file, in WAL mode.

    One transaction per batch: the first write of a batch opens it and
    act_store_commit closes it, so one fsync (synchronous=FULL) serves
    every message and call the broker decided in one pass of its loop.
    Calls and messages are held (act_sqlite_batch) and written at the
    commit, or before a read, by multi-row statements; a call accepted
    and dispatched or ended in one pass is one row. A dispatch of a call
    stored before is a row of its attempts in the table dispatched (see
    version 6 in act_sqlite_schema.c); its end is a row of ends (version
    7). The calls not ended are those from a mark on with no end, and the
    rows of live below it (version 8, act_sqlite_live.c). A context's
    calls are found through the blocks of ids that hold some (version 9).
    A call's resume state (version 10) is a row of resume, written at once:
    only a call whose _id was repeated, or that waits a retry's delay, has
    one.

    The file is locked (flock) while a store has it open: two brokers on
    one file would hand out the same _seq twice.

    Schema versions live in PRAGMA user_version (act_sqlite_schema.c).
    The lifecycle of contexts (CONTEXTS, DELETE, retention, APPEND keys)
    is in act_store_sqlite_contexts.c; what both files share, in
    act_store_sqlite_int.h.

    Each context row keeps its number of messages, last _seq and the _date
    of its last message, so that CONTEXTS lists a page with one range scan
    of the primary key, and retention finds idle contexts through an index
    on that date. A batch adds to them once per context it wrote, at the
    commit (or before a read that lists contexts), not once per message.

    Space: a new file is created with auto_vacuum = INCREMENTAL, and after
    a commit that deleted contexts, incremental_vacuum hands the freed
    pages back to the file system a bounded number at a time (also after
    a start that found free pages; a schema migration gives back all it
    freed before the store opens, act_sqlite_schema.c). A file made
    by an older actd keeps auto_vacuum = NONE (changing it needs a VACUUM,
    which rewrites the whole file: too long a pause at start): its freed
    pages go on a free list that new writes reuse, so it does not grow
    again, and `sqlite3 actd.db 'PRAGMA auto_vacuum = INCREMENTAL; VACUUM'`
    on a stopped broker converts it.
    ========================================================================= */

#include <czmq.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include "act_store_sqlite_int.h"
#include "act_sqlite_schema.h"
#include "act_sqlite_vfs.h"
#include "actd/act_json.h"
#include "act_log.h"

//  Pages handed back to the file system after a commit, at most (4 MiB
//  of 4 KiB pages: a bounded pause; the rest at the next commits)
#define S_RECLAIM_PAGES 1024

//  What a batch added to a context's messages
typedef struct {
    int64_t added;                  //  Messages
    int64_t last_seq;               //  Highest _seq
    char date [40];                 //  The _date of that message, read from
                                    //  its text while it was held
    size_t date_size;               //  Its bytes; 0: not read (SQLite reads
                                    //  it from the stored message)
} s_added_t;


static void
s_destroy (void *impl)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize (self->queries [i]);
    act_sqlite_batch_destroy (&self->held);
    act_sqlite_live_destroy (&self->live);
    if (self->open_batch)
        sqlite3_exec (self->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close (self->db);
    zhashx_destroy (&self->added);
    //  Closed after SQLite: closing any descriptor of the file would drop
    //  the POSIX locks SQLite holds on it
    if (self->lock >= 0)
        close (self->lock);
    free (self->path);
    free (self);
}

static int
s_fail (act_sqlite_t *self, act_err_t *err, const char *what)
{
    //  Kept for s_cause. A doomed batch's commit fails on the error of the
    //  write that doomed it: its own step may have none
    int code = sqlite3_extended_errcode (self->db);
    if (code != SQLITE_OK) {
        self->failed = code;
        self->failed_errno = sqlite3_system_errno (self->db);
    }
    char text [256];
    act_sqlite_errmsg (self->db, text, sizeof text);
    act_log (LOG_ERR, "store %s: %s: %s", self->path, what, text);
    return act_err_set (err, ACT_E_INTERNAL, "store %s: %s: %s", self->path, what, text);
}

//  After a COMMIT that failed at the sync of its WAL (a failing disk:
//  EIO), its frames stay in the file, the page cache at least, with a
//  valid commit frame: SQLite's recovery of the WAL, the next time the
//  store is opened, would find the commit whose writes actd refused.
//  They are made unreadable to it (act_sqlite_vfs_forget). With
//  synchronous = NORMAL a commit does not sync, nor fail so.
static void
s_forget (act_sqlite_t *self)
{
    if (self->failed != SQLITE_IOERR_FSYNC)
        return;
    if (act_sqlite_vfs_forget (self->db))
        act_log (LOG_ERR, "store %s: cannot mark the frames of the failed commit unusable "
                 "in the WAL: if actd stops before its next commit, the refused writes "
                 "may be found in the store when it starts again", self->path);
    else
        act_log (LOG_NOTICE, "store %s: the failed commit's frames in the WAL are marked "
                 "unusable (its sync failed): a restart will not find them", self->path);
}

//  Why the last commit failed, in SQLite's generic words (not its message,
//  which may name tables and columns) and the system's error
static const char *
s_cause (void *impl)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    if (!self->failed)
        return NULL;
    return act_sqlite_words (sqlite3_errstr (self->failed), self->failed, self->failed_errno,
                             self->cause, sizeof self->cause);
}

//  Open the batch's transaction if it is not open yet
int
act_sqlite_begin (act_sqlite_t *self)
{
    if (!self->open_batch) {
        sqlite3_stmt *query = self->queries [Q_BEGIN];
        int rc = sqlite3_step (query);
        sqlite3_reset (query);
        if (rc != SQLITE_DONE)
            return s_fail (self, NULL, "cannot begin a transaction");
        self->open_batch = true;
    }
    return 0;
}

//  Run a statement that returns no rows; resets it
int
act_sqlite_run (act_sqlite_t *self, sqlite3_stmt *query, const char *what)
{
    int rc = sqlite3_step (query);
    sqlite3_reset (query);
    sqlite3_clear_bindings (query);
    if (rc != SQLITE_DONE)
        return s_fail (self, NULL, what);
    return 0;
}

static int
s_put_context (void *impl, const char *context)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    if (act_sqlite_begin (self))
        return -1;
    char date [32];
    act_date_now (date);
    sqlite3_stmt *query = self->queries [Q_PUT_CONTEXT];
    sqlite3_bind_text (query, 1, context, -1, SQLITE_STATIC);
    sqlite3_bind_text (query, 2, date, -1, SQLITE_STATIC);
    if (act_sqlite_run (self, query, "cannot store a context"))
        return -1;
    return sqlite3_changes (self->db);
}

//  1 when the context is stored, 0 when not, -1 on a read error
static int
s_has_context (void *impl, const char *context)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    sqlite3_stmt *query = self->queries [Q_HAS_CONTEXT];
    sqlite3_bind_text (query, 1, context, -1, SQLITE_STATIC);
    int rc = sqlite3_step (query);
    int found = rc == SQLITE_ROW? 1: rc == SQLITE_DONE? 0: -1;
    if (found < 0)
        s_fail (self, NULL, "cannot read contexts");
    sqlite3_reset (query);
    return found;
}

static int
s_put_message (void *impl, const char *context, uint64_t seq, const char *text, size_t size)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    if (act_sqlite_begin (self) || act_sqlite_batch_message (self->held, context, seq, text, size))
        return -1;
    s_added_t *added = zhashx_lookup (self->added, context);
    if (!added) {
        added = calloc (1, sizeof *added);
        zhashx_insert (self->added, context, added);
    }
    added->added++;
    if ((int64_t) seq > added->last_seq) {
        added->last_seq = (int64_t) seq;
        added->date_size = 0;
    }
    return 0;
}

//  Bring the contexts' rows up to date with the messages of the batch
int
act_sqlite_flush_added (act_sqlite_t *self)
{
    int rc = 0;
    sqlite3_stmt *query = self->queries [Q_STATS];
    for (s_added_t *added = zhashx_first (self->added); added && rc == 0;
         added = zhashx_next (self->added)) {
        sqlite3_bind_int64 (query, 1, added->added);
        sqlite3_bind_int64 (query, 2, added->last_seq);
        sqlite3_bind_text (query, 3, (const char *) zhashx_cursor (self->added), -1,
                           SQLITE_STATIC);
        if (added->date_size)
            sqlite3_bind_text (query, 4, added->date, (int) added->date_size, SQLITE_STATIC);
        else
            sqlite3_bind_null (query, 4);
        rc = act_sqlite_run (self, query, "cannot count a context's messages");
    }
    zhashx_purge (self->added);
    return rc;
}

static int
s_put_call (void *impl, const act_call_record_t *record)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    if (act_sqlite_begin (self))
        return -1;
    return act_sqlite_batch_call (self->held, record, true);
}

static int
s_update_call (void *impl, const act_call_record_t *record)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    if (act_sqlite_begin (self))
        return -1;
    return act_sqlite_batch_call (self->held, record, false);
}

//  The _date of a message the store is given (a JSON object the broker
//  wrote and checked: it is not checked again): its top-level members are
//  walked up to the key "_date", nested values skipped by their depth,
//  strings by their quotes (the broker writes _date early, so a message's
//  data is seldom walked). Copies its value into date (room bytes) and
//  returns its length, or 0 when it is not there as a string with no
//  escape and no space around its colon (SQLite then reads it)
static size_t
s_message_date (const char *text, size_t size, char *date, size_t room)
{
    int depth = 0;
    bool key = true;            //  At depth 1, the next string is a key
    for (size_t at = 0; at < size; at++) {
        char c = text [at];
        if (c == '"') {
            size_t start = ++at;
            while (at < size && text [at] != '"')
                at += text [at] == '\\'? 2: 1;
            if (at >= size || depth != 1 || !key)
                continue;
            key = false;
            if (at - start != 5 || memcmp (text + start, "_date", 5) != 0)
                continue;
            size_t value = at + 3, end = value;
            if (value > size || text [at + 1] != ':' || text [at + 2] != '"')
                return 0;
            while (end < size && text [end] != '"' && text [end] != '\\')
                end++;
            if (end >= size || text [end] != '"' || end - value > room)
                return 0;
            memcpy (date, text + value, end - value);
            return end - value;
        }
        else
        if (c == '{' || c == '[')
            depth++;
        else
        if (c == '}' || c == ']') {
            if (--depth <= 0)
                return 0;
        }
        else
        if (c == ',' && depth == 1)
            key = true;
    }
    return 0;
}

//  Read the _date of each context's last message of the batch from its
//  text while it is held (as SQLite's json_extract would, for a string
//  written plainly; anything else is left to SQLite): the contexts'
//  UPDATE then parses no message
static void
s_read_dates (act_sqlite_t *self)
{
    for (s_added_t *added = zhashx_first (self->added); added;
         added = zhashx_next (self->added)) {
        size_t size;
        const char *context = (const char *) zhashx_cursor (self->added);
        const char *text = added->date_size? NULL
                         : act_sqlite_batch_text (self->held, context,
                                                  (uint64_t) added->last_seq, &size);
        if (text && size && text [0] == '{')
            added->date_size = s_message_date (text, size, added->date,
                                               sizeof added->date);
    }
}

//  Write the held calls and messages before a read, so that it sees them.
//  A failure dooms the batch: its commit rolls it back.
void
act_sqlite_flush_held (act_sqlite_t *self)
{
    if (act_sqlite_batch_size (self->held))
        s_read_dates (self);
    if (act_sqlite_batch_size (self->held) && act_sqlite_batch_flush (self->held)) {
        s_fail (self, NULL, "cannot write the batch's calls and messages");
        self->doomed = true;
    }
}

//  Hand free pages back to the file system, a bounded number per commit,
//  in a transaction of its own (after the batch's: replies wait for that
//  one only)
static void
s_reclaim (act_sqlite_t *self)
{
    char *sql = zsys_sprintf ("PRAGMA incremental_vacuum (%d)", S_RECLAIM_PAGES);
    if (sqlite3_exec (self->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        s_fail (self, NULL, "cannot reclaim free pages");
    zstr_free (&sql);
    sqlite3_stmt *query;
    self->reclaim = false;
    if (sqlite3_prepare_v2 (self->db, "PRAGMA freelist_count", -1, &query, NULL) == SQLITE_OK
    &&  sqlite3_step (query) == SQLITE_ROW)
        self->reclaim = sqlite3_column_int64 (query, 0) > 0;
    sqlite3_finalize (query);
}

static int
s_commit (void *impl, const int64_t *deltas, bool rollback, act_err_t *err)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    if (!self->open_batch)
        return rollback? -1: 0;
    if (!rollback)
        act_sqlite_flush_held (self);
    act_sqlite_batch_drop (self->held);
    int rc = rollback || self->doomed? -1: act_sqlite_flush_added (self);
    if (rc == 0 && act_sqlite_live_advance (self->live))
        rc = s_fail (self, err, "cannot move the mark of live calls");
    self->doomed = false;
    for (int i = 0; i < S_COUNTERS && rc == 0; i++)
        if (deltas [i]) {
            sqlite3_stmt *query = self->queries [Q_COUNTER];
            sqlite3_bind_int64 (query, 1, deltas [i]);
            sqlite3_bind_text (query, 2, act_store_counter_names [i], -1, SQLITE_STATIC);
            rc = act_sqlite_run (self, query, "cannot update counters");
        }
    if (rc == 0) {
        sqlite3_stmt *query = self->queries [Q_COMMIT];
        int step = sqlite3_step (query);
        sqlite3_reset (query);
        if (step != SQLITE_DONE) {
            rc = s_fail (self, err, "commit failed");
            s_forget (self);
        }
        else    //  Frames still held (act_sqlite_vfs.h) go before any reply
        if (act_sqlite_vfs_flush (self->db))
            rc = s_fail (self, err, "cannot write the WAL after the commit");
    }
    if (rc) {
        if (err && !err->code)
            s_fail (self, err, "commit failed");
        sqlite3_exec (self->db, "ROLLBACK", NULL, NULL, NULL);
        act_sqlite_batch_forget (self->held);
        if (act_sqlite_live_load (self->live))
            s_fail (self, NULL, "cannot read the live calls");
    }
    if (rc == 0)
        self->failed = self->failed_errno = 0;
    self->open_batch = false;
    zhashx_purge (self->added);
    self->reclaim |= rc == 0 && self->deleted && self->incremental;
    self->deleted = false;
    if (self->reclaim)
        s_reclaim (self);
    return rc;
}

//  Parse a stored JSON column; NULL when empty or unreadable
static json_t *
s_column_json (sqlite3_stmt *query, int column)
{
    const char *text = (const char *) sqlite3_column_text (query, column);
    return text? act_json_parse_stored (text, strlen (text), NULL): NULL;
}

static json_t *
s_row_message (sqlite3_stmt *query)
{
    return s_column_json (query, 0);
}

json_t *
act_sqlite_row_text (sqlite3_stmt *query)
{
    return json_string ((const char *) sqlite3_column_text (query, 0));
}

//  Bind the mark of live as ?9 (see S_ALIVE); returns query
sqlite3_stmt *
act_sqlite_mark (act_sqlite_t *self, sqlite3_stmt *query)
{
    sqlite3_bind_int64 (query, 9, (sqlite3_int64) act_sqlite_live_from (self->live));
    return query;
}

//  Call fn with each row of the (bound) query until it returns non-zero;
//  0, or -1 (logged as what) when the query failed
int
act_sqlite_each (act_sqlite_t *self, sqlite3_stmt *query, act_sqlite_row_fn *row,
                 act_store_each_fn *fn, void *arg, const char *what)
{
    int rc;
    while ((rc = sqlite3_step (query)) == SQLITE_ROW) {
        json_t *value = row (query);
        int stop = value? fn (value, arg): 0;
        json_decref (value);
        if (stop)
            break;
    }
    int failed = rc != SQLITE_ROW && rc != SQLITE_DONE? s_fail (self, NULL, what): 0;
    sqlite3_reset (query);
    return failed;
}

static int
s_messages (void *impl, const char *context, act_store_each_fn *fn, void *arg)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    act_sqlite_flush_held (self);
    sqlite3_stmt *query = self->queries [Q_MESSAGES];
    sqlite3_bind_text (query, 1, context, -1, SQLITE_STATIC);
    return act_sqlite_each (self, query, s_row_message, fn, arg, "cannot read messages");
}

//  The rows of the (bound) query as a new JSON array, or NULL (logged as
//  what) when the query failed
json_t *
act_sqlite_page (act_sqlite_t *self, sqlite3_stmt *query, act_sqlite_row_fn *row,
                 const char *what)
{
    json_t *page = json_array ();
    int rc;
    while ((rc = sqlite3_step (query)) == SQLITE_ROW) {
        json_t *value = row (query);
        if (value)
            json_array_append_new (page, value);
    }
    if (rc != SQLITE_DONE) {
        s_fail (self, NULL, what);
        json_decref (page);
        page = NULL;
    }
    sqlite3_reset (query);
    return page;
}

static int
s_history (void *impl, const char *context, uint64_t from, size_t limit, size_t max_bytes,
           act_store_text_fn *fn, void *arg)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    act_sqlite_flush_held (self);
    sqlite3_stmt *query = self->queries [Q_HISTORY];
    sqlite3_bind_text (query, 1, context, -1, SQLITE_STATIC);
    sqlite3_bind_int64 (query, 2, (sqlite3_int64) from);
    sqlite3_bind_int64 (query, 3, (sqlite3_int64) limit);
    size_t bytes = 1;           //  "[", then each message and "," or "]"
    size_t rows = 0;
    int rc;
    while ((rc = sqlite3_step (query)) == SQLITE_ROW) {
        //  Rows are read one at a time: a full page stops the read
        const char *text = (const char *) sqlite3_column_text (query, 0);
        size_t size = (size_t) sqlite3_column_bytes (query, 0);
        bytes += size + 1;
        if (max_bytes && bytes > max_bytes && rows)
            break;
        rows++;
        if (text && fn ((uint64_t) sqlite3_column_int64 (query, 1), text, size, arg))
            break;
    }
    int result = 0;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        s_fail (self, NULL, "cannot read history");
        result = -1;
    }
    sqlite3_reset (query);
    return result;
}

//  The call record in the current row (columns of S_CALL_SELECT)
static json_t *
s_call_record (sqlite3_stmt *query)
{
    json_t *record = json_object ();
    json_object_set_new (record, "call_id", json_integer (sqlite3_column_int64 (query, 0)));
    const char *names [] = { NULL, "context", "state", NULL, "call", "id", "outcome",
                             "progress", "client", "request", "resume" };
    for (int column = 1; column < 11; column++) {
        if (column == 3) {
            json_object_set_new (record, "attempts",
                                 json_integer (sqlite3_column_int64 (query, 3)));
            continue;
        }
        const char *text = (const char *) sqlite3_column_text (query, column);
        if (!text)
            continue;
        bool is_json = column == 4 || column == 6 || column == 7 || column == 10;
        json_object_set_new (record, names [column], is_json
            ? json_loads (text, JSON_DECODE_ANY, NULL): json_string (text));
    }
    return record;
}

//  1 with *record set, 0 when the call is not stored, -1 on a read error
static int
s_call (void *impl, uint64_t call_id, json_t **record)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    act_sqlite_flush_held (self);
    sqlite3_stmt *query = self->queries [Q_CALL];
    sqlite3_bind_int64 (query, 1, (sqlite3_int64) call_id);
    int rc = sqlite3_step (query);
    *record = rc == SQLITE_ROW? s_call_record (query): NULL;
    int found = rc == SQLITE_ROW? 1: rc == SQLITE_DONE? 0: -1;
    if (found < 0)
        s_fail (self, NULL, "cannot read a call");
    sqlite3_reset (query);
    return found;
}

//  The number query which finds for (context, key): 1, 0 (no row), or -1
//  on a read error (logged as what)
int
act_sqlite_number (act_sqlite_t *self, int which, const char *context, const char *key,
                   uint64_t *number, const char *what)
{
    sqlite3_stmt *query = self->queries [which];
    sqlite3_bind_text (query, 1, context, -1, SQLITE_STATIC);
    sqlite3_bind_text (query, 2, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step (query);
    *number = rc == SQLITE_ROW? (uint64_t) sqlite3_column_int64 (query, 0): 0;
    int found = rc == SQLITE_ROW? 1: rc == SQLITE_DONE? 0: -1;
    if (found < 0)
        s_fail (self, NULL, what);
    sqlite3_reset (query);
    return found;
}

static int
s_idem (void *impl, const char *context, const char *key, uint64_t *call_id)
{
    act_sqlite_flush_held ((act_sqlite_t *) impl);
    return act_sqlite_number ((act_sqlite_t *) impl, Q_IDEM, context, key, call_id,
                              "cannot read calls");
}

static int
s_pending_in (void *impl, const char *context, act_store_each_fn *fn, void *arg)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    act_sqlite_flush_held (self);
    sqlite3_stmt *query = act_sqlite_mark (self, self->queries [Q_PENDING_IN]);
    sqlite3_bind_text (query, 1, context, -1, SQLITE_TRANSIENT);
    return act_sqlite_each (self, query, s_call_record, fn, arg, "cannot read calls");
}

//  One broker owns every context: "mine" is every context with calls not
//  ended, and there are no orphans
static int
s_contexts_pending (void *impl, bool mine, act_store_each_fn *fn, void *arg)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    act_sqlite_flush_held (self);
    if (!mine)
        return 0;
    sqlite3_stmt *query = act_sqlite_mark (self, self->queries [Q_CONTEXTS_PENDING]);
    return act_sqlite_each (self, query, act_sqlite_row_text, fn, arg, "cannot read calls");
}

static int
s_pending (void *impl, act_store_each_fn *fn, void *arg)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    act_sqlite_flush_held (self);
    sqlite3_stmt *query = act_sqlite_mark (self, self->queries [Q_PENDING]);
    return act_sqlite_each (self, query, s_call_record, fn, arg, "cannot read calls");
}

//  0 with *call_id set (MAX of no rows is NULL: 0), or -1 on a read error
static int
s_last_call (void *impl, uint64_t *call_id)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    act_sqlite_flush_held (self);
    sqlite3_stmt *query = self->queries [Q_LAST_CALL];
    int rc = sqlite3_step (query);
    *call_id = rc == SQLITE_ROW? (uint64_t) sqlite3_column_int64 (query, 0): 0;
    if (rc != SQLITE_ROW)
        s_fail (self, NULL, "cannot read calls");
    sqlite3_reset (query);
    return rc == SQLITE_ROW? 0: -1;
}

static int
s_counters (void *impl, int64_t *counts)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    sqlite3_stmt *query = self->queries [Q_COUNTERS];
    memset (counts, 0, sizeof (int64_t) * S_COUNTERS);
    int rc;
    while ((rc = sqlite3_step (query)) == SQLITE_ROW)
        for (int i = 0; i < S_COUNTERS; i++)
            if (streq ((const char *) sqlite3_column_text (query, 0),
                       act_store_counter_names [i]))
                counts [i] = sqlite3_column_int64 (query, 1);
    sqlite3_reset (query);
    return rc == SQLITE_DONE? 0: s_fail (self, NULL, "cannot read counters");
}


//  A call's resume state, written at once (rare: no batching), in the
//  batch's transaction
static int
s_put_resume (void *impl, const char *context, uint64_t call_id, const char *text)
{
    (void) context;
    act_sqlite_t *self = (act_sqlite_t *) impl;
    if (act_sqlite_begin (self))
        return -1;
    sqlite3_stmt *query = self->queries [Q_PUT_RESUME];
    sqlite3_bind_int64 (query, 1, (sqlite3_int64) call_id);
    sqlite3_bind_text (query, 2, text, -1, SQLITE_STATIC);
    return act_sqlite_run (self, query, "cannot store a call's resume state");
}

//  The batch's texts are the store's journal's from now on: what is held
//  (copies) is written first, then the batch borrows
static void
s_borrow (void *impl)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    act_sqlite_flush_held (self);
    act_sqlite_batch_borrow (self->held);
}

const act_store_backend_t act_store_sqlite = {
    "sqlite", s_destroy, s_put_context, s_put_message, s_put_call, s_update_call,
    s_commit, s_has_context, s_messages, s_history, s_call, s_idem, s_pending,
    s_last_call, s_counters, NULL, NULL, NULL, NULL, NULL, s_contexts_pending, s_pending_in,
    act_sqlite_contexts, act_sqlite_delete_context, act_sqlite_append_key,
    act_sqlite_put_append_key, act_sqlite_idle_contexts, NULL, s_borrow, NULL, s_put_resume,
    NULL, s_cause
};

//  Open the store's file and take its lock: one process a store. Returns
//  0, or -1 with err set.
static int
s_lock (act_sqlite_t *self, act_err_t *err)
{
    //  A new store file is readable by actd alone, whatever the umask (it
    //  holds every context); SQLite gives its -wal and -shm files the same
    //  mode. An existing file keeps the mode its operator gave it.
    self->lock = open (self->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (self->lock >= 0)
        fchmod (self->lock, 0600);
    else
    if (errno == EEXIST)
        self->lock = open (self->path, O_RDWR | O_CLOEXEC);
    if (self->lock < 0) {
        act_err_set (err, ACT_E_INTERNAL, "cannot open store %s: %s",
                     self->path, strerror (errno));
        return -1;
    }
    if (flock (self->lock, LOCK_EX | LOCK_NB)) {
        act_err_set (err, ACT_E_INTERNAL,
                     "store %s is in use by another process (it holds the lock)",
                     self->path);
        return -1;
    }
    return 0;
}

//  Read whether the file reclaims free pages, and whether some wait
static void
s_read_vacuum (act_sqlite_t *self)
{
    sqlite3_stmt *query;
    if (sqlite3_prepare_v2 (self->db, "PRAGMA auto_vacuum", -1, &query, NULL) == SQLITE_OK
    &&  sqlite3_step (query) == SQLITE_ROW)
        self->incremental = sqlite3_column_int (query, 0) == 2;
    sqlite3_finalize (query);
    //  Free pages left by the last run (or by a start stopped while it gave
    //  back what a migration freed) go back at the next commits
    if (self->incremental) {
        if (sqlite3_prepare_v2 (self->db, "PRAGMA freelist_count", -1, &query, NULL) == SQLITE_OK
        &&  sqlite3_step (query) == SQLITE_ROW)
            self->reclaim = sqlite3_column_int64 (query, 0) > 0;
        sqlite3_finalize (query);
    }
}

void *
act_store_sqlite_open (const char *path, act_sync_t sync, act_err_t *err)
{
    act_sqlite_t *self = calloc (1, sizeof *self);
    if (!self) {
        act_err_set (err, ACT_E_INTERNAL, "store %s: out of memory", path? path: "actd.db");
        return NULL;
    }
    self->path = strdup (path? path: "actd.db");
    self->added = zhashx_new ();
    zhashx_set_destructor (self->added, (zhashx_destructor_fn *) zstr_free);
    if (s_lock (self, err))
        goto failed;
    //  A commit's WAL frames in one write (act_sqlite_vfs.h)
    const char *vfs = act_sqlite_vfs_register () == 0? ACT_SQLITE_VFS: NULL;
    if (!vfs)
        act_log (LOG_WARNING, "store %s: SQLite's own VFS (cannot register actd's)", self->path);
    if (sqlite3_open_v2 (self->path, &self->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                         vfs) != SQLITE_OK) {
        s_fail (self, err, "cannot open");
        goto failed;
    }
    sqlite3_extended_result_codes (self->db, 1);
    //  A new (empty) file: auto_vacuum takes effect only when set before
    //  anything is written to the file, the WAL mode included
    struct stat info;
    if (fstat (self->lock, &info) == 0 && info.st_size == 0
    &&  sqlite3_exec (self->db, "PRAGMA auto_vacuum = INCREMENTAL", NULL, NULL, NULL)) {
        s_fail (self, err, "cannot set auto_vacuum");
        goto failed;
    }
    //  journal_mode is the first read of the file: a file that is not a
    //  database fails here, before anything is written to it
    char *sql = zsys_sprintf ("PRAGMA journal_mode = WAL; PRAGMA synchronous = %s;",
                              sync == ACT_SYNC_FULL? "FULL": "NORMAL");
    int rc = sqlite3_exec (self->db, sql, NULL, NULL, NULL);
    zstr_free (&sql);
    if (rc != SQLITE_OK) {
        //  Not a database, or one that cannot be opened now (its -shm file
        //  cannot grow on a full disk): the log must not say the first of
        //  the second, which an operator might then delete
        int primary = sqlite3_errcode (self->db);
        s_fail (self, err, primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT?
                           "not a usable database": "cannot open it");
        goto failed;
    }
    if (act_sqlite_schema_migrate (self->db, self->path, err))
        goto failed;
    s_read_vacuum (self);
    for (int i = 0; i < Q_COUNT; i++)
        if (sqlite3_prepare_v3 (self->db, act_sqlite_queries [i], -1, SQLITE_PREPARE_PERSISTENT,
                                &self->queries [i], NULL) != SQLITE_OK) {
            s_fail (self, err, "cannot prepare statements");
            goto failed;
        }
    self->live = act_sqlite_live_new (self->db);
    if (!self->live || act_sqlite_live_load (self->live)) {
        s_fail (self, err, "cannot read the live calls");
        goto failed;
    }
    self->held = act_sqlite_batch_new (self->db, self->live);
    if (!self->held) {
        act_err_set (err, ACT_E_INTERNAL, "store %s: out of memory", self->path);
        goto failed;
    }
    return self;

failed:
    s_destroy (self);
    return NULL;
}
