/*  =========================================================================
    act_sqlite_live - which calls of a SQLite store have not ended, kept
    cheap to write (see act_sqlite_live.h).

    Measured: a row of live written at accept and deleted at the end cost
    a call 9.3k instructions on the committer; a flag here costs nothing
    measurable, and the mark moves once per S_STEP calls or more.
    ========================================================================= */

#include <czmq.h>
#include "act_sqlite_live.h"

//  Ids kept above the mark at most when calls before them are still
//  alive (what a restart reads beyond the rows of live)
#define S_KEEP 4096
//  The mark moves by this many ids at least (one small write per move)
#define S_STEP 256

//  Statements, by what they do
enum { Q_FROM, Q_TOP, Q_ALIVE, Q_LEAVE, Q_MARK, Q_COUNT };

static const char *s_queries [Q_COUNT] = {
    "SELECT id FROM live_from",
    "SELECT MAX(id) FROM calls",
    ("SELECT c.id FROM calls AS c WHERE c.id >= ?1 AND c.ended = 0"
     "  AND NOT EXISTS (SELECT 1 FROM ends AS e WHERE e.id = c.id)"),
    "INSERT OR IGNORE INTO live (context, id) SELECT context, id FROM calls WHERE id = ?1",
    "UPDATE live_from SET id = ?1"
};

struct _act_sqlite_live_t {
    sqlite3 *db;                        //  The store's connection (borrowed)
    sqlite3_stmt *queries [Q_COUNT];    //  Prepared statements
    uint64_t from;                      //  The mark
    uint64_t top;                       //  Highest call id written, or
                                        //  from - 1
    uint8_t *alive;                     //  alive [i]: call from + i is not
                                        //  ended (1) or is (0)
    size_t room;                        //  Bytes allocated in alive
};

act_sqlite_live_t *
act_sqlite_live_new (sqlite3 *db)
{
    act_sqlite_live_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->db = db;
    for (int i = 0; i < Q_COUNT; i++)
        if (sqlite3_prepare_v3 (db, s_queries [i], -1, SQLITE_PREPARE_PERSISTENT,
                                &self->queries [i], NULL) != SQLITE_OK) {
            act_sqlite_live_destroy (&self);
            return NULL;
        }
    return self;
}

void
act_sqlite_live_destroy (act_sqlite_live_t **self_p)
{
    if (self_p && *self_p) {
        act_sqlite_live_t *self = *self_p;
        for (int i = 0; i < Q_COUNT; i++)
            sqlite3_finalize (self->queries [i]);
        free (self->alive);
        free (self);
        *self_p = NULL;
    }
}

//  Make room for the flag of call id (id >= from); 0 or -1
static int
s_reach (act_sqlite_live_t *self, uint64_t id)
{
    size_t need = (size_t) (id - self->from) + 1;
    if (need > self->room) {
        size_t room = self->room? self->room: S_KEEP * 2;
        while (room < need)
            room *= 2;
        uint8_t *alive = realloc (self->alive, room);
        if (!alive)
            return -1;
        memset (alive + self->room, 0, room - self->room);
        self->alive = alive;
        self->room = room;
    }
    return 0;
}

//  The first integer column of a statement's first row, or fallback
static int64_t
s_number (sqlite3_stmt *query, int64_t fallback, int *rc)
{
    int step = sqlite3_step (query);
    int64_t value = fallback;
    if (step == SQLITE_ROW && sqlite3_column_type (query, 0) != SQLITE_NULL)
        value = sqlite3_column_int64 (query, 0);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        *rc = -1;
    sqlite3_reset (query);
    return value;
}

int
act_sqlite_live_load (act_sqlite_live_t *self)
{
    int rc = 0;
    self->from = (uint64_t) s_number (self->queries [Q_FROM], 1, &rc);
    int64_t top = s_number (self->queries [Q_TOP], 0, &rc);
    self->top = top >= (int64_t) self->from? (uint64_t) top: self->from - 1;
    if (self->room)
        memset (self->alive, 0, self->room);
    sqlite3_stmt *query = self->queries [Q_ALIVE];
    sqlite3_bind_int64 (query, 1, (sqlite3_int64) self->from);
    int step;
    while (rc == 0 && (step = sqlite3_step (query)) == SQLITE_ROW) {
        uint64_t id = (uint64_t) sqlite3_column_int64 (query, 0);
        rc = s_reach (self, id);
        if (rc == 0)
            self->alive [id - self->from] = 1;
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -1;
    sqlite3_reset (query);
    return rc;
}

uint64_t
act_sqlite_live_from (act_sqlite_live_t *self)
{
    return self->from;
}

int
act_sqlite_live_admit (act_sqlite_live_t *self, uint64_t id, bool ended)
{
    if (id < self->from)
        return 1;
    if (!ended && s_reach (self, id))
        return -1;
    if (!ended)
        self->alive [id - self->from] = 1;
    if (id > self->top)
        self->top = id;
    return 0;
}

bool
act_sqlite_live_end (act_sqlite_live_t *self, uint64_t id)
{
    if (id < self->from)
        return true;
    if (id - self->from < self->room)
        self->alive [id - self->from] = 0;
    return false;
}

//  Run a statement binding one id; 0 or -1
static int
s_run (sqlite3_stmt *query, uint64_t id)
{
    sqlite3_bind_int64 (query, 1, (sqlite3_int64) id);
    int rc = sqlite3_step (query);
    sqlite3_reset (query);
    return rc == SQLITE_DONE? 0: -1;
}

int
act_sqlite_live_advance (act_sqlite_live_t *self)
{
    //  The mark goes up to the first call alive, or further when that
    //  leaves more than S_KEEP ids above it
    //  (flags past room are all 0)
    uint64_t span = self->top + 1 - self->from;
    const uint8_t *first = self->room
        ? memchr (self->alive, 1, span < self->room? (size_t) span: self->room): NULL;
    uint64_t to = first? self->from + (uint64_t) (first - self->alive): self->top + 1;
    if (self->top + 1 - to > S_KEEP)
        to = self->top + 1 - S_KEEP;
    if (to < self->from + S_STEP)
        return 0;
    for (uint64_t id = self->from; id < to && id - self->from < self->room; id++)
        if (self->alive [id - self->from] && s_run (self->queries [Q_LEAVE], id))
            return -1;
    if (s_run (self->queries [Q_MARK], to))
        return -1;
    //  No flags yet (every call so far ended in the batch that stored it):
    //  nothing to move, and alive is NULL, which memmove may not be given
    if (self->room) {
        size_t moved = to - self->from < self->room? (size_t) (to - self->from): self->room;
        memmove (self->alive, self->alive + moved, self->room - moved);
        memset (self->alive + self->room - moved, 0, moved);
    }
    self->from = to;
    return 0;
}
