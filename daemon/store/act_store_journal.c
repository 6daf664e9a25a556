/*  =========================================================================
    act_store_journal - a batch's writes held in memory, given to the
    backend later (see act_store_int.h).

    With a commit thread, the loop goes on with the next batch while the
    last one is committed; the backend's connection is the thread's then.
    So the loop's writes are kept here, as copies, and handed to the
    backend in their order: by the thread, just before it commits them, or
    by the loop itself, once no commit is in flight, when it must read the
    store (reads see every write of the batch, as without a journal).

    The writes stay here after they are given to the backend, until the
    batch is committed or rolled back: a backend that borrows (see
    act_store_int.h) keeps pointers to their texts, not copies.

    An update of a call carries its whole state, progress included, so a
    later one makes an earlier one not yet given to the backend useless.
    A worker may send PROGRESS as fast as it likes, each with details of
    up to max_message_bytes: an earlier update of the same call that
    carried progress is dropped when a new one comes, so that a batch
    holds one copy of a call's progress, not one per PROGRESS (a worker
    flooding 1 MB PROGRESS messages had a batch hold a gigabyte). Updates
    without progress (most of them) are not looked up.
    ========================================================================= */

#include <czmq.h>
#include "act_store_int.h"

typedef enum {
    S_MESSAGE,                  //  put_message
    S_PUT_CALL,                 //  put_call
    S_UPDATE_CALL,              //  update_call
    S_APPEND_KEY,               //  put_append_key
    S_RESUME,                   //  put_resume
    S_SUPERSEDED                //  An update a later one replaced: nothing
} s_kind_t;

//  One write, with copies of what it writes
typedef struct {
    s_kind_t kind;              //  Which write
    char *context;              //  Context (message, append key, resume)
    uint64_t seq;               //  _seq of the message or of the APPEND,
                                //  or the call id (resume)
    char *text;                 //  The message's text, the APPEND key, or
                                //  the resume state
    size_t size;                //  Bytes of the message's text
    act_call_record_t record;   //  The call (put_call, update_call); its
                                //  strings point into strings
    char *strings;              //  The record's strings, one allocation
    size_t extra;               //  Bytes held besides the text's size
} s_op_t;

struct _act_journal_t {
    s_op_t *ops;                //  The writes, in order
    size_t size;                //  Writes held
    size_t room;                //  Slots allocated
    size_t applied;             //  Writes given to the backend already
    size_t bytes;               //  Bytes of the texts held
    zhashx_t *progressed;       //  Call id -> 1 + index of its last update
                                //  with progress not given to the backend
};

//  Call ids are the progressed table's keys, as pointer-sized integers
static size_t
s_id_hash (const void *key)
{
    return (size_t) (uintptr_t) key;
}

static int
s_id_compare (const void *a, const void *b)
{
    return (uintptr_t) a < (uintptr_t) b? -1: (uintptr_t) a > (uintptr_t) b;
}

act_journal_t *
act_journal_new (void)
{
    act_journal_t *self = (act_journal_t *) calloc (1, sizeof (act_journal_t));
    if (self)
        self->progressed = zhashx_new ();
    if (self && !self->progressed) {
        free (self);
        return NULL;
    }
    if (self) {
        zhashx_set_key_hasher (self->progressed, s_id_hash);
        zhashx_set_key_comparator (self->progressed, s_id_compare);
        zhashx_set_key_duplicator (self->progressed, NULL);
        zhashx_set_key_destructor (self->progressed, NULL);
    }
    return self;
}

void
act_journal_destroy (act_journal_t **self_p)
{
    if (self_p && *self_p) {
        act_journal_clear (*self_p);
        zhashx_destroy (&(*self_p)->progressed);
        free ((*self_p)->ops);
        free (*self_p);
        *self_p = NULL;
    }
}

size_t
act_journal_size (act_journal_t *self)
{
    return self->size;
}

size_t
act_journal_bytes (act_journal_t *self)
{
    return self->bytes;
}

//  Free what one write holds
static void
s_op_free (act_journal_t *self, s_op_t *op)
{
    self->bytes -= op->size + op->extra;
    free (op->context);
    free (op->text);
    free (op->strings);
    op->context = op->text = op->strings = NULL;
    op->size = op->extra = 0;
}

void
act_journal_clear (act_journal_t *self)
{
    for (size_t i = 0; i < self->size; i++)
        s_op_free (self, &self->ops [i]);
    self->size = 0;
    self->applied = 0;
    if (zhashx_size (self->progressed))
        zhashx_purge (self->progressed);
}

//  A new, zeroed slot at the end; NULL when out of memory
static s_op_t *
s_add (act_journal_t *self, s_kind_t kind)
{
    if (self->size == self->room) {
        size_t room = self->room? self->room * 2: 256;
        s_op_t *ops = (s_op_t *) realloc (self->ops, room * sizeof (s_op_t));
        if (!ops)
            return NULL;
        self->ops = ops;
        self->room = room;
    }
    s_op_t *op = &self->ops [self->size++];
    memset (op, 0, sizeof *op);
    op->kind = kind;
    return op;
}

//  The last write could not be copied whole (out of memory): forget it.
//  Returns -1, for the caller to return
static int
s_drop_last (act_journal_t *self)
{
    s_op_free (self, &self->ops [--self->size]);
    return -1;
}

int
act_journal_message (act_journal_t *self, const char *context, uint64_t seq,
                     const char *text, size_t size)
{
    s_op_t *op = s_add (self, S_MESSAGE);
    if (!op)
        return -1;
    op->context = strdup (context);
    op->seq = seq;
    op->size = size;
    op->text = (char *) malloc (size + 1);
    if (op->text) {
        memcpy (op->text, text, size);
        op->text [size] = 0;
    }
    self->bytes += size;
    return op->context && op->text? 0: s_drop_last (self);
}

int
act_journal_append_key (act_journal_t *self, const char *context, const char *key,
                        uint64_t seq)
{
    s_op_t *op = s_add (self, S_APPEND_KEY);
    if (!op)
        return -1;
    op->context = strdup (context);
    op->text = strdup (key);
    op->seq = seq;
    return op->context && op->text? 0: s_drop_last (self);
}

int
act_journal_resume (act_journal_t *self, const char *context, uint64_t call_id,
                    const char *text)
{
    //  Held as an APPEND key is (a context, a text, a number), under its
    //  own kind. Rare (a repeated _id, a retry's delay): none is merged
    if (act_journal_append_key (self, context, text, call_id))
        return -1;
    s_op_t *op = &self->ops [self->size - 1];
    op->kind = S_RESUME;
    op->extra = strlen (text);          //  Up to ACT_LIVE_MAX_RECIPIENTS ids
    self->bytes += op->extra;
    return 0;
}

//  The last write, an update of call id with progress, replaces the
//  call's earlier such update not given to the backend yet, if any
static void
s_supersede (act_journal_t *self, uint64_t id)
{
    void *key = (void *) (uintptr_t) id;
    size_t last = self->size;       //  1 + the new update's index
    size_t earlier = (size_t) (uintptr_t) zhashx_lookup (self->progressed, key);
    if (earlier > self->applied && earlier < last
    &&  self->ops [earlier - 1].kind == S_UPDATE_CALL) {
        s_op_free (self, &self->ops [earlier - 1]);
        self->ops [earlier - 1].kind = S_SUPERSEDED;
    }
    //  Out of memory here only means the next update is not merged
    zhashx_update (self->progressed, key, (void *) (uintptr_t) last);
}

int
act_journal_call (act_journal_t *self, bool put, const act_call_record_t *record)
{
    s_op_t *op = s_add (self, put? S_PUT_CALL: S_UPDATE_CALL);
    if (!op)
        return -1;
    op->record = *record;
    //  An update replaces the state, attempts, outcome and progress alone
    //  (act_store_update_call): the call's other texts are not copied
    if (!put) {
        op->record.call = NULL;
        op->record.id = NULL;
        op->record.client = NULL;
        op->record.request = NULL;
    }
    //  The record's strings, copied into one allocation
    const char **fields [] = {
        &op->record.context, &op->record.state, &op->record.call, &op->record.id,
        &op->record.outcome, &op->record.progress, &op->record.client, &op->record.request
    };
    size_t nfields = sizeof fields / sizeof fields [0];
    size_t lengths [sizeof fields / sizeof fields [0]];
    size_t total = 0;
    for (size_t i = 0; i < nfields; i++)
        total += lengths [i] = *fields [i]? strlen (*fields [i]) + 1: 0;
    op->strings = (char *) malloc (total? total: 1);
    if (!op->strings)
        return s_drop_last (self);
    op->extra = total;
    self->bytes += total;
    char *at = op->strings;
    for (size_t i = 0; i < nfields; i++)
        if (*fields [i]) {
            size_t length = lengths [i];    //  Measured once, above
            memcpy (at, *fields [i], length);
            *fields [i] = at;
            at += length;
        }
    if (!put && record->progress && record->call_id)
        s_supersede (self, record->call_id);
    return 0;
}

const char *
act_journal_apply (act_journal_t *self, const act_store_backend_t *backend, void *impl)
{
    static const char *whats [] = {
        "a message", "a new call", "a call's state", "an APPEND key",
        "a call's resume state"
    };
    const char *failed = NULL;
    for (size_t i = self->applied; i < self->size; i++) {
        s_op_t *op = &self->ops [i];
        int rc = -1;
        if (op->kind == S_MESSAGE)
            rc = backend->put_message (impl, op->context, op->seq, op->text, op->size);
        else
        if (op->kind == S_PUT_CALL)
            rc = backend->put_call (impl, &op->record);
        else
        if (op->kind == S_UPDATE_CALL)
            rc = backend->update_call (impl, &op->record);
        else
        if (op->kind == S_APPEND_KEY)
            rc = backend->put_append_key (impl, op->context, op->text, op->seq);
        else
        if (op->kind == S_RESUME)
            rc = backend->put_resume (impl, op->context, op->seq, op->text);
        else
            rc = 0;                 //  Superseded: nothing to write
        if (rc < 0 && !failed)
            failed = whats [op->kind];
    }
    self->applied = self->size;
    if (zhashx_size (self->progressed))
        zhashx_purge (self->progressed);
    return failed;
}
