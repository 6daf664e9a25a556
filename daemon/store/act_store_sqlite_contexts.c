/*  =========================================================================
    act_store_sqlite_contexts - the lifecycle of contexts in the SQLite
    store: listing them (CONTEXTS), deleting them (DELETE and retention),
    and the idempotency keys of APPEND.

    A listing or a look for idle contexts first writes what the batch
    holds and brings the contexts' rows up to date, so that it sees the
    batch. A delete is a write like the others, in the batch's
    transaction: a failed batch keeps the context whole.
    ========================================================================= */

#include "act_store_sqlite_int.h"

//  A context as CONTEXTS lists it, from the current row of Q_CONTEXTS
static json_t *
s_row_context (sqlite3_stmt *query)
{
    const char *updated = (const char *) sqlite3_column_text (query, 3);
    return json_pack ("{sssIsIsosI}",
        "context", (const char *) sqlite3_column_text (query, 0),
        "messages", (json_int_t) sqlite3_column_int64 (query, 1),
        "last_seq", (json_int_t) sqlite3_column_int64 (query, 2),
        "updated", updated? json_string (updated): json_null (),
        "pending", (json_int_t) sqlite3_column_int64 (query, 4));
}

json_t *
act_sqlite_contexts (void *impl, const char *from, const char *end, const char *after,
                     size_t limit)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    act_sqlite_flush_held (self);
    if (act_sqlite_flush_added (self))
        return NULL;
    sqlite3_stmt *query = self->queries [Q_CONTEXTS];
    sqlite3_bind_text (query, 1, from, -1, SQLITE_STATIC);
    sqlite3_bind_text (query, 2, end, -1, SQLITE_STATIC);
    sqlite3_bind_text (query, 3, after, -1, SQLITE_STATIC);
    sqlite3_bind_int64 (query, 4, (sqlite3_int64) limit);
    return act_sqlite_page (self, act_sqlite_mark (self, query), s_row_context,
                            "cannot list contexts");
}

//  Run one of the DELETE queries for context; the rows it removed, or -1
static int64_t
s_delete (act_sqlite_t *self, int which, const char *context)
{
    sqlite3_stmt *query = self->queries [which];
    sqlite3_bind_text (query, 1, context, -1, SQLITE_STATIC);
    if (act_sqlite_run (self, query, "cannot delete a context"))
        return -1;
    return sqlite3_changes64 (self->db);
}

int
act_sqlite_delete_context (void *impl, const char *context, size_t *messages)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    act_sqlite_flush_held (self);
    if (act_sqlite_begin (self))
        return -1;
    zhashx_delete (self->added, context);
    int64_t held = s_delete (self, Q_DELETE_MESSAGES, context);
    int64_t existed = -1;
    if (held >= 0
    &&  s_delete (self, Q_DELETE_DISPATCHED, context) >= 0
    &&  s_delete (self, Q_DELETE_ENDS, context) >= 0
    &&  s_delete (self, Q_DELETE_RESUME, context) >= 0
    &&  s_delete (self, Q_DELETE_LIVE, context) >= 0
    &&  s_delete (self, Q_DELETE_CALLS, context) >= 0
    &&  s_delete (self, Q_DELETE_BLOCKS, context) >= 0
    &&  s_delete (self, Q_DELETE_KEYS, context) >= 0)
        existed = s_delete (self, Q_DELETE_CONTEXT, context);
    act_sqlite_batch_forget (self->held);
    if (existed < 0)
        return -1;
    self->deleted = true;
    *messages = (size_t) held;
    return existed > 0;
}

int
act_sqlite_append_key (void *impl, const char *context, const char *key, uint64_t *seq)
{
    return act_sqlite_number ((act_sqlite_t *) impl, Q_APPEND_KEY, context, key, seq,
                              "cannot read APPEND keys");
}

int
act_sqlite_put_append_key (void *impl, const char *context, const char *key, uint64_t seq)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    if (act_sqlite_begin (self))
        return -1;
    sqlite3_stmt *query = self->queries [Q_PUT_APPEND_KEY];
    sqlite3_bind_text (query, 1, context, -1, SQLITE_STATIC);
    sqlite3_bind_text (query, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64 (query, 3, (sqlite3_int64) seq);
    return act_sqlite_run (self, query, "cannot store an APPEND key");
}

int
act_sqlite_idle_contexts (void *impl, const char *before, size_t limit, act_store_each_fn *fn,
                 void *arg)
{
    act_sqlite_t *self = (act_sqlite_t *) impl;
    act_sqlite_flush_held (self);
    if (act_sqlite_flush_added (self))
        return -1;
    sqlite3_stmt *query = act_sqlite_mark (self, self->queries [Q_IDLE]);
    sqlite3_bind_text (query, 1, before, -1, SQLITE_STATIC);
    sqlite3_bind_int64 (query, 2, (sqlite3_int64) limit);
    return act_sqlite_each (self, query, act_sqlite_row_text, fn, arg, "cannot read contexts");
}
