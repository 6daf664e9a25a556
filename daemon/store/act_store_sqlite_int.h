/*  =========================================================================
    act_store_sqlite_int - what the files of the SQLite backend share: its
    state, and the helpers its reads and writes run through. Private to
    act_store_sqlite.c (the store and its calls and messages) and
    act_store_sqlite_contexts.c (the lifecycle of contexts).
    ========================================================================= */

#ifndef ACT_STORE_SQLITE_INT_H_INCLUDED
#define ACT_STORE_SQLITE_INT_H_INCLUDED

#include <czmq.h>
#include <sqlite3.h>
#include "act_store_int.h"
#include "act_sqlite_batch.h"
#include "act_sqlite_queries.h"

//  The backend's state (the impl of its act_store_backend_t members)
typedef struct {
    sqlite3 *db;                    //  The connection
    sqlite3_stmt *queries [Q_COUNT];//  Prepared statements
    int lock;                       //  File descriptor holding the flock
    bool open_batch;                //  A transaction is open
    char *path;                     //  The file, for messages
    zhashx_t *added;                //  Context -> s_added_t, this batch
    act_sqlite_batch_t *held;       //  Calls and messages not written yet
    act_sqlite_live_t *live;        //  Which calls are alive
    bool doomed;                    //  Writing what was held failed: the
                                    //  commit rolls the batch back
    bool deleted;                   //  This batch deleted a context
    bool incremental;               //  auto_vacuum is INCREMENTAL
    bool reclaim;                   //  Free pages are left to hand back
    int failed;                     //  SQLite's code of the last failure
                                    //  since a commit succeeded, or 0
    int failed_errno;               //  The system's error with it, or 0
    char cause [128];               //  Room for s_cause's words
} act_sqlite_t;

//  Turns the current row of a query into JSON (NULL: skip the row)
typedef json_t *(act_sqlite_row_fn) (sqlite3_stmt *query);

//  Open the batch's transaction if it is not open yet; 0 or -1 (logged)
int act_sqlite_begin (act_sqlite_t *self);

//  Run a statement that returns no rows and reset it; 0, or -1 (logged
//  as what)
int act_sqlite_run (act_sqlite_t *self, sqlite3_stmt *query, const char *what);

//  Bring the contexts' rows up to date with the messages of the batch
int act_sqlite_flush_added (act_sqlite_t *self);

//  Write the held calls and messages before a read, so that it sees
//  them; a failure dooms the batch (its commit rolls it back)
void act_sqlite_flush_held (act_sqlite_t *self);

//  Bind the mark of the live calls as ?9; returns query
sqlite3_stmt *act_sqlite_mark (act_sqlite_t *self, sqlite3_stmt *query);

//  Call fn with each row of the (bound) query, as row makes it, until fn
//  returns non-zero; 0, or -1 (logged as what) when the query failed
int act_sqlite_each (act_sqlite_t *self, sqlite3_stmt *query, act_sqlite_row_fn *row,
                     act_store_each_fn *fn, void *arg, const char *what);

//  The rows of the (bound) query as a new JSON array, or NULL (logged as
//  what) when the query failed
json_t *act_sqlite_page (act_sqlite_t *self, sqlite3_stmt *query, act_sqlite_row_fn *row,
                         const char *what);

//  The first column of the current row as a JSON string
json_t *act_sqlite_row_text (sqlite3_stmt *query);

//  The number query which finds for (context, key): 1 with *number set,
//  0 when it finds none, -1 on a read error (logged as what); *number is
//  0 unless 1
int act_sqlite_number (act_sqlite_t *self, int which, const char *context,
                       const char *key, uint64_t *number, const char *what);

//  The lifecycle of contexts (act_store_sqlite_contexts.c), as the
//  backend's members of the same names (act_store_int.h)
json_t *act_sqlite_contexts (void *impl, const char *from, const char *end,
                             const char *after, size_t limit);
int act_sqlite_delete_context (void *impl, const char *context, size_t *messages);
int act_sqlite_append_key (void *impl, const char *context, const char *key, uint64_t *seq);
int act_sqlite_put_append_key (void *impl, const char *context, const char *key,
                               uint64_t seq);
int act_sqlite_idle_contexts (void *impl, const char *before, size_t limit,
                              act_store_each_fn *fn, void *arg);

#endif
