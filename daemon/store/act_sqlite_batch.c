/*  =========================================================================
    act_sqlite_batch - a SQLite store's batch of calls and messages, held
    and written by multi-row statements (see act_sqlite_batch.h).

    Each statement costs SQLite a fixed part (its program's start, the
    cursors it opens on the table and each index, its end) besides the
    rows it writes: new rows go in INSERTs of 64, 16, 4 and 1 rows (the
    largest that fit first), each prepared once. A call that ends is a new
    row of ends (see version 7 in act_sqlite_schema.c). Other changes of a
    call, and a call's row deleted from live (only a call below the mark
    of act_sqlite_live.h has one), are one statement each: an
    UPDATE ... FROM (VALUES ...) of many rows costs more (SQLite
    materializes the join and the new rows in two temporary b-trees before
    it writes one), and so does a DELETE of many (context, id) IN (VALUES
    ...) (measured: 7.5k instructions a row against 5.4k).

    The INSERTs are OR FAIL, not the default ABORT: a statement that may
    abort after writing some rows makes SQLite keep a statement journal (a
    copy of each page it touches) to undo them, and a failed write fails
    the whole batch anyway (its commit rolls it back).

    A borrowing batch (act_sqlite_batch_borrow) keeps pointers to the
    texts it is given, which outlive it (the store's journal holds them),
    instead of copies.
    ========================================================================= */

#include <czmq.h>
#include "act_sqlite_batch.h"

//  The kinds of rows, each its own statements, in the order written
enum { K_INSERT, K_ADMIT, K_LIVE, K_ENDED, K_RELEASE, K_DISPATCH, K_MESSAGE, K_KINDS };

//  Rows per statement, largest first
static const size_t s_sizes [] = { 64, 16, 4, 1 };
#define S_SIZES (sizeof s_sizes / sizeof s_sizes [0])

//  Bound values per row, by kind
static const int s_columns [K_KINDS] = { 11, 2, 4, 5, 2, 2, 3 };

//  Each kind's statement, before and after its rows of "(?,...)"; one
//  with no tail (UPDATE, DELETE) writes one row
static const char *s_heads [K_KINDS] = {
    ("INSERT OR FAIL INTO calls (id, context, state, attempts, call, idem, outcome, progress,"
     " client, request, ended) VALUES "),
    "INSERT OR FAIL INTO live (id, context) VALUES ",
    "UPDATE calls SET state = ?2, attempts = ?3, progress = ?4 WHERE id = ?1",
    "INSERT OR FAIL INTO ends (id, state, attempts, outcome, progress) VALUES ",
    "DELETE FROM live WHERE context = ?2 AND id = ?1",
    "INSERT OR REPLACE INTO dispatched (id, attempts) VALUES ",
    "INSERT OR FAIL INTO messages (context, seq, body) VALUES "
};
static const char *s_tails [K_KINDS] = {
    "", "", NULL, (" ON CONFLICT (id) DO UPDATE SET state = excluded.state,"
                   " attempts = excluded.attempts, outcome = excluded.outcome,"
                   " progress = excluded.progress"), NULL, "", ""
};

//  A call's row, as last written in the batch
typedef struct {
    uint64_t id;                //  Call id
    bool insert;                //  A new call (INSERT), else a change (UPDATE)
    long long attempts;         //  Dispatches so far
    char *fixed;                //  One block holding the texts below that
                                //  only a new call writes (NUL-separated),
                                //  or NULL when they are borrowed
    const char *context;        //  Its context
    const char *call;           //  The call as submitted (new call)
    const char *idem;           //  Its _id, or NULL (new call)
    const char *client;         //  Submitter's routing id, or NULL (new call)
    const char *request;        //  Submitter's request id, or NULL (new call)
    const char *state;          //  Its state
    const char *outcome;        //  Its outcome, or NULL
    const char *progress;       //  Its latest progress, or NULL
    bool owned;                 //  state, outcome and progress are copies
    bool ended;                 //  Its state is an outcome
    bool below;                 //  Its id is below the mark of live (set
                                //  at the flush; see act_sqlite_live.h)
} s_call_t;

//  A new message
typedef struct {
    uint64_t seq;               //  Its _seq
    size_t size;                //  Bytes of text
    const char *text;           //  The text (borrowed, or in data)
    const char *context;        //  Its context (borrowed, or in data)
    char data [];               //  A copy: the text, NUL, the context, NUL
} s_message_t;

//  A growing array of pointers
typedef struct {
    void **items;               //  The pointers
    size_t count;               //  Used
    size_t room;                //  Allocated
} s_array_t;

struct _act_sqlite_batch_t {
    sqlite3 *db;                                //  Where rows go (borrowed)
    act_sqlite_live_t *live;                    //  Which calls are alive
                                                //  (borrowed)
    sqlite3_stmt *queries [K_KINDS][S_SIZES];   //  Statements, prepared on
                                                //  first use
    s_array_t calls;                            //  s_call_t, in order held
    s_call_t **slots;                           //  The held calls by id (open
                                                //  addressing; NULL: empty)
    size_t nslots;                              //  Slots, a power of two
    s_array_t messages;                         //  s_message_t, in order
    s_array_t rows;                             //  Scratch: one kind's rows
    bool borrow;                                //  Texts are borrowed, not
                                                //  copied
    zhashx_t *blocks;                           //  Context -> 1 + the block
                                                //  of its last new call
                                                //  whose call_blocks row is
                                                //  written (as a pointer)
    sqlite3_stmt *block_query;                  //  Writes a call_blocks row
};

static int
s_push (s_array_t *array, void *item)
{
    if (array->count == array->room) {
        size_t room = array->room? array->room * 2: 64;
        void **items = realloc (array->items, room * sizeof *items);
        if (!items)
            return -1;
        array->items = items;
        array->room = room;
    }
    array->items [array->count++] = item;
    return 0;
}

//  The slot of the held call with id, or the empty slot where it would
//  go (self->nslots > 0)
static s_call_t **
s_slot (act_sqlite_batch_t *self, uint64_t id)
{
    size_t mask = self->nslots - 1;
    size_t at = (size_t) (id * 0x9E3779B97F4A7C15ull >> 17) & mask;
    while (self->slots [at] && self->slots [at]->id != id)
        at = (at + 1) & mask;
    return &self->slots [at];
}

//  The held call with id, or NULL
static s_call_t *
s_lookup (act_sqlite_batch_t *self, uint64_t id)
{
    return self->nslots? *s_slot (self, id): NULL;
}

//  Forget the index of the call with id (and keep every other one
//  findable: the run of slots after it is placed again)
static void
s_unindex (act_sqlite_batch_t *self, uint64_t id)
{
    s_call_t **slot = s_slot (self, id);
    *slot = NULL;
    size_t mask = self->nslots - 1;
    for (size_t at = ((size_t) (slot - self->slots) + 1) & mask; self->slots [at];
         at = (at + 1) & mask) {
        s_call_t *moved = self->slots [at];
        self->slots [at] = NULL;
        *s_slot (self, moved->id) = moved;
    }
}

//  Index a new call by its id (the calls held so far are in self->calls);
//  the slots stay at most half full. 0, or -1 when out of memory
static int
s_index (act_sqlite_batch_t *self, s_call_t *call)
{
    if ((self->calls.count + 1) * 2 > self->nslots) {
        size_t nslots = self->nslots? self->nslots * 2: 256;
        s_call_t **slots = calloc (nslots, sizeof *slots);
        if (!slots)
            return -1;
        free (self->slots);
        self->slots = slots;
        self->nslots = nslots;
        for (size_t i = 0; i < self->calls.count; i++) {
            s_call_t *held = (s_call_t *) self->calls.items [i];
            *s_slot (self, held->id) = held;
        }
    }
    *s_slot (self, call->id) = call;
    return 0;
}

act_sqlite_batch_t *
act_sqlite_batch_new (sqlite3 *db, act_sqlite_live_t *live)
{
    act_sqlite_batch_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->db = db;
    self->live = live;
    self->blocks = zhashx_new ();
    if (!self->blocks) {
        free (self);
        return NULL;
    }
    return self;
}

//  Free the copies of a call's state, outcome and progress, if it has
static void
s_call_unown (s_call_t *call)
{
    if (call->owned) {
        free ((char *) call->state);
        free ((char *) call->outcome);
        free ((char *) call->progress);
        call->owned = false;
    }
}

static void
s_call_free (s_call_t *call)
{
    free (call->fixed);
    s_call_unown (call);
    free (call);
}

//  Empty the index of the held calls. Few in many slots: each call's slot
//  is emptied, the newest first (a call's probe only passes slots taken
//  by calls held before it, which are still there when it goes), instead
//  of clearing every slot (the table keeps the size of the largest batch)
static void
s_unindex_all (act_sqlite_batch_t *self)
{
    if (self->calls.count * 4 < self->nslots)
        for (size_t i = self->calls.count; i > 0; i--)
            *s_slot (self, ((s_call_t *) self->calls.items [i - 1])->id) = NULL;
    else
    if (self->nslots)
        memset (self->slots, 0, self->nslots * sizeof self->slots [0]);
}

void
act_sqlite_batch_drop (act_sqlite_batch_t *self)
{
    s_unindex_all (self);
    for (size_t i = 0; i < self->calls.count; i++)
        s_call_free ((s_call_t *) self->calls.items [i]);
    for (size_t i = 0; i < self->messages.count; i++)
        free (self->messages.items [i]);
    self->calls.count = 0;
    self->messages.count = 0;
}

void
act_sqlite_batch_destroy (act_sqlite_batch_t **self_p)
{
    if (self_p && *self_p) {
        act_sqlite_batch_t *self = *self_p;
        act_sqlite_batch_drop (self);
        for (int kind = 0; kind < K_KINDS; kind++)
            for (size_t s = 0; s < S_SIZES; s++)
                sqlite3_finalize (self->queries [kind][s]);
        sqlite3_finalize (self->block_query);
        zhashx_destroy (&self->blocks);
        free (self->slots);
        free (self->calls.items);
        free (self->messages.items);
        free (self->rows.items);
        free (self);
        *self_p = NULL;
    }
}

//  Copy text into a new string (NULL stays NULL); *failed set when out of
//  memory
static char *
s_copy (const char *text, bool *failed)
{
    char *copy = text? strdup (text): NULL;
    *failed |= text && !copy;
    return copy;
}

//  Copy a call's fixed texts into one block, when it is first held (point
//  to them when the batch borrows)
static int
s_fix (act_sqlite_batch_t *self, s_call_t *call, const act_call_record_t *record)
{
    const char *texts [5] = { record->context, record->call, record->id, record->client,
                              record->request };
    if (self->borrow) {
        call->context = texts [0];
        call->call = texts [1];
        call->idem = texts [2];
        call->client = texts [3];
        call->request = texts [4];
        return 0;
    }
    size_t sizes [5], total = 0;
    for (int i = 0; i < 5; i++) {
        sizes [i] = texts [i]? strlen (texts [i]) + 1: 0;
        total += sizes [i];
    }
    call->fixed = malloc (total? total: 1);
    if (!call->fixed)
        return -1;
    const char **fields [5] = { &call->context, &call->call, &call->idem, &call->client,
                                &call->request };
    char *at = call->fixed;
    for (int i = 0; i < 5; i++) {
        *fields [i] = texts [i]? at: NULL;
        if (texts [i])
            memcpy (at, texts [i], sizes [i]);
        at += sizes [i];
    }
    return 0;
}

void
act_sqlite_batch_borrow (act_sqlite_batch_t *self)
{
    self->borrow = true;
}

int
act_sqlite_batch_call (act_sqlite_batch_t *self, const act_call_record_t *record,
                       bool insert)
{
    s_call_t *call = s_lookup (self, record->call_id);
    if (call && insert)
        return -1;
    bool failed = false;
    const char *state = record->state, *outcome = record->outcome;
    const char *progress = record->progress;
    if (!self->borrow) {
        state = s_copy (record->state, &failed);
        outcome = s_copy (record->outcome, &failed);
        progress = s_copy (record->progress, &failed);
    }
    bool fresh = !call;
    if (fresh && !failed) {
        call = calloc (1, sizeof *call);
        if (call)
            call->id = record->call_id;
        failed = !call || s_fix (self, call, record) || s_index (self, call)
              || s_push (&self->calls, call);
        if (failed && call) {
            if (self->nslots && *s_slot (self, call->id) == call)
                s_unindex (self, call->id);
            s_call_free (call);
        }
    }
    if (failed) {
        if (!self->borrow) {
            free ((char *) state);
            free ((char *) outcome);
            free ((char *) progress);
        }
        return -1;
    }
    if (fresh) {
        call->id = record->call_id;
        call->insert = insert;
    }
    s_call_unown (call);
    call->state = state;
    call->outcome = outcome;
    call->progress = progress;
    call->owned = !self->borrow;
    call->ended = act_state_ended (state);
    call->attempts = record->attempts;
    return 0;
}

int
act_sqlite_batch_message (act_sqlite_batch_t *self, const char *context, uint64_t seq,
                          const char *text, size_t size)
{
    size_t context_size = self->borrow? 0: strlen (context) + 1;
    s_message_t *message = malloc (sizeof *message + (self->borrow? 0: size + 1 + context_size));
    if (!message)
        return -1;
    message->seq = seq;
    message->size = size;
    message->text = text;
    message->context = context;
    if (!self->borrow) {
        memcpy (message->data, text, size);
        message->data [size] = 0;
        memcpy (message->data + size + 1, context, context_size);
        message->text = message->data;
        message->context = message->data + size + 1;
    }
    if (s_push (&self->messages, message)) {
        free (message);
        return -1;
    }
    return 0;
}

const char *
act_sqlite_batch_text (act_sqlite_batch_t *self, const char *context, uint64_t seq,
                       size_t *size)
{
    //  From the last: a context's last message is the one asked for
    for (size_t i = self->messages.count; i > 0; i--) {
        const s_message_t *message = (const s_message_t *) self->messages.items [i - 1];
        if (message->seq == seq && streq (message->context, context)) {
            *size = message->size;
            return message->text;
        }
    }
    return NULL;
}

size_t
act_sqlite_batch_size (act_sqlite_batch_t *self)
{
    return self->calls.count + self->messages.count;
}

//  The statement writing s_sizes [size] rows of kind, prepared on first use
static sqlite3_stmt *
s_query (act_sqlite_batch_t *self, int kind, size_t size)
{
    if (!self->queries [kind][size] && !s_tails [kind])
        sqlite3_prepare_v3 (self->db, s_heads [kind], -1, SQLITE_PREPARE_PERSISTENT,
                            &self->queries [kind][size], NULL);
    if (!self->queries [kind][size]) {
        size_t rows = s_sizes [size];
        size_t row_bytes = 2 + 2 * (size_t) s_columns [kind];
        size_t bytes = strlen (s_heads [kind]) + rows * row_bytes + strlen (s_tails [kind]) + 1;
        char *sql = malloc (bytes);
        if (!sql)
            return NULL;
        char *at = sql + sprintf (sql, "%s", s_heads [kind]);
        for (size_t row = 0; row < rows; row++) {
            *at++ = row? ',': '(';
            if (row)
                *at++ = '(';
            for (int column = 0; column < s_columns [kind]; column++) {
                *at++ = '?';
                *at++ = column + 1 < s_columns [kind]? ',': ')';
            }
        }
        strcpy (at, s_tails [kind]);
        sqlite3_prepare_v3 (self->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                            &self->queries [kind][size], NULL);
        free (sql);
    }
    return self->queries [kind][size];
}

//  Bind a text, or NULL (the statement runs before the text is freed).
//  Its length is given: told -1, SQLite counts the bytes one at a time
static void
s_text (sqlite3_stmt *query, int column, const char *text)
{
    if (text)
        sqlite3_bind_text (query, column, text, (int) strlen (text), SQLITE_STATIC);
    else
        sqlite3_bind_null (query, column);
}

//  Bind one row of kind from its first column on
static void
s_bind (sqlite3_stmt *query, int kind, int column, const void *item)
{
    if (kind == K_MESSAGE) {
        const s_message_t *message = (const s_message_t *) item;
        s_text (query, column, message->context);
        sqlite3_bind_int64 (query, column + 1, (sqlite3_int64) message->seq);
        sqlite3_bind_text (query, column + 2, message->text, (int) message->size,
                           SQLITE_STATIC);
        return;
    }
    const s_call_t *call = (const s_call_t *) item;
    sqlite3_bind_int64 (query, column++, (sqlite3_int64) call->id);
    if (kind == K_DISPATCH) {
        sqlite3_bind_int64 (query, column, call->attempts);
        return;
    }
    if (kind == K_ADMIT || kind == K_RELEASE) {
        s_text (query, column, call->context);
        return;
    }
    if (kind == K_INSERT)
        s_text (query, column++, call->context);
    s_text (query, column++, call->state);
    sqlite3_bind_int64 (query, column++, call->attempts);
    if (kind == K_INSERT) {
        s_text (query, column++, call->call);
        s_text (query, column++, call->idem);
    }
    if (kind != K_LIVE)
        s_text (query, column++, call->outcome);
    s_text (query, column++, call->progress);
    if (kind == K_INSERT) {
        s_text (query, column++, call->client);
        s_text (query, column++, call->request);
        sqlite3_bind_int (query, column, call->ended);
    }
}

//  Write the rows, all of kind, by statements of the largest sizes that
//  fit; 0 or -1
static int
s_write (act_sqlite_batch_t *self, int kind, s_array_t *rows)
{
    size_t done = 0, count = rows->count;
    for (size_t size = s_tails [kind]? 0: S_SIZES - 1; size < S_SIZES && done < count; ) {
        if (count - done < s_sizes [size]) {
            size++;
            continue;
        }
        sqlite3_stmt *query = s_query (self, kind, size);
        if (!query)
            return -1;
        for (size_t row = 0; row < s_sizes [size]; row++)
            s_bind (query, kind, 1 + (int) row * s_columns [kind],
                    rows->items [done + row]);
        int rc = sqlite3_step (query);
        sqlite3_reset (query);
        if (rc != SQLITE_DONE)
            return -1;
        done += s_sizes [size];
    }
    return 0;
}

//  Whether a held call writes a row of kind (see versions 7 and 8 in
//  act_sqlite_schema.c). A new call is a row of calls (and of live, were
//  it below the mark and not ended); a stored call that ends is a row of
//  ends (appended, where an UPDATE would rewrite the call's whole row and
//  its indexes), and leaves live if it is below the mark. A call dispatched
//  (running, with no progress to keep) is a small row of the table
//  dispatched, its attempts, for the same reason; its reads take the
//  greater attempts (see act_store_sqlite.c)
static bool
s_writes (const s_call_t *call, int kind)
{
    if (call->insert)
        return kind == K_INSERT || (kind == K_ADMIT && !call->ended && call->below);
    if (call->ended)
        return kind == K_ENDED || (kind == K_RELEASE && call->below);
    if (call->state && streq (call->state, "running") && !call->progress)
        return kind == K_DISPATCH;
    return kind == K_LIVE;
}

//  Gather the held calls that write a row of kind into self->rows and
//  write them
static int
s_write_calls (act_sqlite_batch_t *self, int kind)
{
    self->rows.count = 0;
    for (size_t i = 0; i < self->calls.count; i++) {
        s_call_t *call = (s_call_t *) self->calls.items [i];
        if (s_writes (call, kind) && s_push (&self->rows, call))
            return -1;
    }
    return s_write (self, kind, &self->rows);
}

//  Tell the tracker of live calls which calls the batch admits and ends,
//  and mark those below its mark; 0 or -1
static int
s_track (act_sqlite_batch_t *self)
{
    for (size_t i = 0; i < self->calls.count; i++) {
        s_call_t *call = (s_call_t *) self->calls.items [i];
        int below = 0;
        if (call->insert)
            below = act_sqlite_live_admit (self->live, call->id, call->ended);
        else
        if (call->ended)
            below = act_sqlite_live_end (self->live, call->id);
        if (below < 0)
            return -1;
        call->below = below == 1;
    }
    return 0;
}

void
act_sqlite_batch_forget (act_sqlite_batch_t *self)
{
    zhashx_purge (self->blocks);
}

//  Write the row of call_blocks of each new call's context and block of
//  ids (ACT_SQLITE_BLOCK_IDS) unless it is known to be written: a few per
//  thousand calls. 0 or -1
static int
s_write_blocks (act_sqlite_batch_t *self)
{
    for (size_t i = 0; i < self->calls.count; i++) {
        s_call_t *call = (s_call_t *) self->calls.items [i];
        if (!call->insert)
            continue;
        uintptr_t block = (uintptr_t) (call->id / ACT_SQLITE_BLOCK_IDS) + 1;
        if ((uintptr_t) zhashx_lookup (self->blocks, call->context) == block)
            continue;
        if (!self->block_query
        &&  sqlite3_prepare_v3 (self->db, ("INSERT OR IGNORE INTO call_blocks (context, block)"
                                           " VALUES (?, ?)"), -1, SQLITE_PREPARE_PERSISTENT,
                                &self->block_query, NULL) != SQLITE_OK)
            return -1;
        s_text (self->block_query, 1, call->context);
        sqlite3_bind_int64 (self->block_query, 2, (sqlite3_int64) (block - 1));
        int rc = sqlite3_step (self->block_query);
        sqlite3_reset (self->block_query);
        if (rc != SQLITE_DONE)
            return -1;
        zhashx_update (self->blocks, call->context, (void *) block);
    }
    return 0;
}

int
act_sqlite_batch_flush (act_sqlite_batch_t *self)
{
    int rc = s_track (self);
    if (rc == 0)
        rc = s_write_blocks (self);
    for (int kind = K_INSERT; kind <= K_DISPATCH && rc == 0; kind++)
        rc = s_write_calls (self, kind);
    if (rc == 0)
        rc = s_write (self, K_MESSAGE, &self->messages);
    act_sqlite_batch_drop (self);
    return rc;
}
