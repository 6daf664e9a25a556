/*  =========================================================================
    act_sqlite_schema - the SQLite store's schema and its migrations
    (private to the SQLite store).
    ========================================================================= */

#ifndef ACT_SQLITE_SCHEMA_H_INCLUDED
#define ACT_SQLITE_SCHEMA_H_INCLUDED

#include <sqlite3.h>
#include "actd/act_err.h"

//  Bring the store in db (the file path, for messages) to the current
//  schema, one migration per transaction, each logged. After migrating
//  an existing file, gives back the pages that freed (auto_vacuum
//  INCREMENTAL; logged either way) and empties the WAL; the hook of
//  act_store_on_progress hears how it all goes. Returns 0, or -1 with err
//  set (internal): a version newer than this actd knows, or a migration
//  that failed (rolled back: the file keeps its version).
int act_sqlite_schema_migrate (sqlite3 *db, const char *path, act_err_t *err);

#endif
