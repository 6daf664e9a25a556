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

//  SQLite's words for an error (sqlite3_errmsg or sqlite3_errstr), with
//  the system's error when one caused it (errno, sqlite3_system_errno, for
//  an I/O error or a file that cannot be opened: "disk I/O error (No
//  space left on device)"), written into text (size bytes); returns text.
//  SQLite says "database or disk is full" for a write that hit ENOSPC,
//  but "disk I/O error" for the rest, a -shm file that cannot grow on a
//  full disk included, which errno tells apart from EIO or EFBIG.
const char *act_sqlite_words (const char *words, int code, int errno_value, char *text,
                              size_t size);

//  act_sqlite_words for db's last error (its message, its system error)
const char *act_sqlite_errmsg (sqlite3 *db, char *text, size_t size);

#endif
