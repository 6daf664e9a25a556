/*  =========================================================================
    act_sqlite_queries - the SQL statements of the SQLite backend
    (act_store_sqlite.c), by what they do: read there, prepared once per
    connection. How a call's state is read from calls, ends, dispatched
    and live (schema 8), and a context's calls through call_blocks (schema
    9), with their resume state (schema 10), is written down here, in one
    place.
    ========================================================================= */

#ifndef ACT_SQLITE_QUERIES_H_INCLUDED
#define ACT_SQLITE_QUERIES_H_INCLUDED

//  Prepared statements, by what they do
enum {
    Q_PUT_CONTEXT, Q_HAS_CONTEXT, Q_COUNTER, Q_MESSAGES, Q_HISTORY, Q_CALL, Q_IDEM,
    Q_PENDING, Q_LAST_CALL, Q_COUNTERS, Q_PENDING_IN, Q_CONTEXTS_PENDING, Q_STATS,
    Q_CONTEXTS, Q_DELETE_MESSAGES, Q_DELETE_DISPATCHED, Q_DELETE_ENDS, Q_DELETE_LIVE,
    Q_DELETE_CALLS, Q_DELETE_BLOCKS, Q_DELETE_KEYS, Q_DELETE_CONTEXT, Q_APPEND_KEY, Q_PUT_APPEND_KEY,
    Q_IDLE, Q_BEGIN, Q_COMMIT, Q_PUT_RESUME, Q_DELETE_RESUME, Q_COUNT
};

//  Each statement's text, indexed by the names above
extern const char *act_sqlite_queries [Q_COUNT];

#endif
