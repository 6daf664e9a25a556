/*  =========================================================================
    act_sqlite_batch - the calls and messages a SQLite store's batch
    writes, held in memory and written together by a few multi-row
    statements (private to the SQLite store).

    A call written twice in one batch (accepted, then dispatched or ended
    in the same pass) is one row: its last state. What is held is written
    at the commit, in the batch's transaction, or earlier when the store
    reads (so that reads see the batch's writes).
    ========================================================================= */

#ifndef ACT_SQLITE_BATCH_H_INCLUDED
#define ACT_SQLITE_BATCH_H_INCLUDED

#include <sqlite3.h>
#include "act_store.h"
#include "act_sqlite_live.h"

//  Call ids a row of call_blocks stands for (schema 9): the block of a
//  call is its id / ACT_SQLITE_BLOCK_IDS (the 4096 in act_sqlite_queries.c
//  and in the migration to version 9 must be the same)
#define ACT_SQLITE_BLOCK_IDS 4096

typedef struct _act_sqlite_batch_t act_sqlite_batch_t;

//  A batch writing into db, telling live which calls it admits and ends
//  (both borrowed: they must outlive the batch). Returns NULL when out of
//  memory.
act_sqlite_batch_t *act_sqlite_batch_new (sqlite3 *db, act_sqlite_live_t *live);

//  Destroy the batch (what it holds is dropped) and null the pointer.
void act_sqlite_batch_destroy (act_sqlite_batch_t **self_p);

//  From now on, keep pointers to the texts given instead of copies: they
//  outlive the batch (until it is flushed or dropped). Call it on an empty
//  batch.
void act_sqlite_batch_borrow (act_sqlite_batch_t *self);

//  Hold a call's row: a new call (insert) or a change of a stored one.
//  Its texts are copied (unless borrowed). Returns 0, or -1 (out of memory, or a new call
//  already held: the write fails as a second INSERT of its id would).
int act_sqlite_batch_call (act_sqlite_batch_t *self, const act_call_record_t *record,
                           bool insert);

//  Hold a new message (size bytes of text, copied unless borrowed).
//  Returns 0 or -1.
int act_sqlite_batch_message (act_sqlite_batch_t *self, const char *context, uint64_t seq,
                              const char *text, size_t size);

//  The text of the message of context with _seq seq, if it is held (valid
//  until the batch is flushed or dropped; *size set), else NULL.
const char *act_sqlite_batch_text (act_sqlite_batch_t *self, const char *context,
                                   uint64_t seq, size_t *size);

//  Rows held.
size_t act_sqlite_batch_size (act_sqlite_batch_t *self);

//  Write what is held (in the caller's open transaction) and forget it.
//  Returns 0, or -1 when a statement failed (sqlite3_errmsg tells why):
//  some rows may then be written, and the transaction must roll back.
int act_sqlite_batch_flush (act_sqlite_batch_t *self);

//  Forget what is held, unwritten.
void act_sqlite_batch_drop (act_sqlite_batch_t *self);

//  Forget which blocks of call ids each context is known to have a row
//  of call_blocks for (after a rollback, or a context deleted): the next
//  new call of each writes its block's row again (INSERT OR IGNORE).
void act_sqlite_batch_forget (act_sqlite_batch_t *self);

#endif
