/*  =========================================================================
    act_sqlite_queries - the SQL statements of the SQLite backend (see
    act_sqlite_queries.h).
    ========================================================================= */

#include "act_sqlite_queries.h"

//  A call's record, as s_call_record reads it, from calls (c), ends (e)
//  and dispatched (d), with its resume state (r, schema 10; most calls
//  have none): a call with a row in ends ended as that row says;
//  one not ended that was dispatched since its row was last written is
//  running, with the attempts of its row in dispatched. from: the FROM
//  clause's first table(s), joined to c
#define S_CALL_ENDED "e.id IS NOT NULL"
//  Calls c not ended from the mark (bound as ?9) on (act_sqlite_live.h)
#define S_ALIVE "c.id >= ?9 AND c.ended = 0"                                   \
    " AND NOT EXISTS (SELECT 1 FROM ends AS e WHERE e.id = c.id)"
#define S_ALIVE_CALLS(where) " UNION ALL " S_CALL_SELECT ("calls AS c")        \
    " WHERE " where " c.id >= ?9 AND c.ended = 0 AND e.id IS NULL ORDER BY 1"
//  The calls c of the context ctx, through the blocks of ids that hold
//  some (call_blocks, schema 9; 4,096 ids a block, ACT_SQLITE_BLOCK_IDS):
//  from, then where
#define S_BLOCKS_FROM "call_blocks AS b JOIN calls AS c"                         \
    " ON c.id >= b.block * 4096 AND c.id < b.block * 4096 + 4096"
#define S_BLOCKS_WHERE(ctx) " b.context = " ctx " AND c.context = " ctx
#define S_CONTEXT_CALLS(ctx) "SELECT c.id FROM " S_BLOCKS_FROM " WHERE" S_BLOCKS_WHERE (ctx)
//  The calls c of the context ctx not ended from the mark (?9) on: the
//  blocks from the mark's on
#define S_ALIVE_FROM "call_blocks AS b JOIN calls AS c"                          \
    " ON c.id >= MAX (b.block * 4096, ?9) AND c.id < b.block * 4096 + 4096"
#define S_ALIVE_WHERE(ctx) S_BLOCKS_WHERE (ctx) " AND b.block >= ?9 / 4096 AND"
#define S_ALIVE_IN(what, ctx) "SELECT " what " FROM " S_ALIVE_FROM " WHERE"         \
    S_ALIVE_WHERE (ctx) " c.ended = 0 AND NOT EXISTS (SELECT 1 FROM ends AS e WHERE e.id = c.id)"
#define S_CALL_RAN "c.ended = 0 AND d.attempts > c.attempts"
#define S_CALL_SELECT(from) "SELECT c.id, c.context,"                                 \
    " CASE WHEN " S_CALL_ENDED " THEN e.state WHEN " S_CALL_RAN " THEN 'running'"     \
    " ELSE c.state END,"                                                              \
    " CASE WHEN " S_CALL_ENDED " THEN e.attempts WHEN " S_CALL_RAN " THEN d.attempts"  \
    " ELSE c.attempts END, c.call, c.idem,"                                           \
    " CASE WHEN " S_CALL_ENDED " THEN e.outcome ELSE c.outcome END,"                  \
    " CASE WHEN " S_CALL_ENDED " THEN e.progress ELSE c.progress END,"                \
    " c.client, c.request, r.body FROM " from                                         \
    " LEFT JOIN ends AS e ON e.id = c.id LEFT JOIN dispatched AS d ON d.id = c.id"    \
    " LEFT JOIN resume AS r ON r.id = c.id"

const char *act_sqlite_queries [Q_COUNT] = {
    "INSERT OR IGNORE INTO contexts (id, created) VALUES (?, ?)",
    "SELECT 1 FROM contexts WHERE id = ?",
    "UPDATE counters SET value = value + ? WHERE name = ?",
    "SELECT body FROM messages WHERE context = ? ORDER BY seq",
    "SELECT body, seq FROM messages WHERE context = ? AND seq >= ? ORDER BY seq LIMIT ?",
    S_CALL_SELECT ("calls AS c") " WHERE c.id = ?",
    "SELECT id FROM calls WHERE context = ? AND idem = ?",
    S_CALL_SELECT ("live AS l JOIN calls AS c ON c.id = l.id") S_ALIVE_CALLS (""),
    "SELECT MAX(id) FROM calls",
    "SELECT name, value FROM counters",
    S_CALL_SELECT ("live AS l JOIN calls AS c ON c.id = l.id")
        " WHERE l.context = ?1 UNION ALL " S_CALL_SELECT (S_ALIVE_FROM)
        " WHERE" S_ALIVE_WHERE ("?1") " c.id >= ?9 AND c.ended = 0 AND e.id IS NULL ORDER BY 1",
    "SELECT context FROM live UNION SELECT c.context FROM calls AS c WHERE " S_ALIVE,
    "UPDATE contexts SET messages = messages + ?1, last_seq = MAX (last_seq, ?2),"
    "  updated = COALESCE (?4, (SELECT CASE WHEN json_valid (body)"
    "    THEN json_extract (body, '$._date') END FROM messages WHERE context = ?3"
    "    AND seq = ?2), updated) WHERE id = ?3",
    "SELECT id, messages, last_seq, updated,"
    "  (SELECT COUNT(*) FROM live WHERE context = contexts.id)"
    "  + (" S_ALIVE_IN ("COUNT(*)", "contexts.id") ")"
    "  FROM contexts"
    "  WHERE id >= ?1 AND id < ?2 AND id <> ?3 ORDER BY id LIMIT ?4",
    "DELETE FROM messages WHERE context = ?",
    "DELETE FROM dispatched WHERE id IN (" S_CONTEXT_CALLS ("?1") ")",
    "DELETE FROM ends WHERE id IN (" S_CONTEXT_CALLS ("?1") ")",
    "DELETE FROM live WHERE context = ?",
    "DELETE FROM calls WHERE id IN (" S_CONTEXT_CALLS ("?1") ")",
    "DELETE FROM call_blocks WHERE context = ?",
    "DELETE FROM append_keys WHERE context = ?",
    "DELETE FROM contexts WHERE id = ?",
    "SELECT seq FROM append_keys WHERE context = ? AND key = ?",
    "INSERT OR REPLACE INTO append_keys (context, key, seq) VALUES (?, ?, ?)",
    "SELECT id FROM (SELECT id FROM contexts WHERE updated < ?1 UNION ALL"
    "  SELECT id FROM contexts WHERE updated IS NULL AND created < ?1) AS idle"
    "  WHERE NOT EXISTS (SELECT 1 FROM live WHERE live.context = idle.id) AND NOT EXISTS"
    "  (" S_ALIVE_IN ("1", "idle.id") ")"
    "  LIMIT ?2",
    "BEGIN IMMEDIATE",
    "COMMIT",
    "INSERT OR REPLACE INTO resume (id, body) VALUES (?, ?)",
    "DELETE FROM resume WHERE id IN (" S_CONTEXT_CALLS ("?1") ")"
};
