/*  =========================================================================
    act_committer - the store's commits on their own thread.

    A commit (SQLite's fsync, PostgreSQL's round trips) can take
    milliseconds or, on a busy disk or a locked database, seconds. The
    committer runs act_store_commit_sealed on a thread of its own: the
    broker's loop seals a batch, hands it over, and goes on with the next
    one (its writes held in the store's journal) while this one is
    committed; the replies of a batch leave when its commit has ended.
    ========================================================================= */

#ifndef ACT_COMMITTER_H_INCLUDED
#define ACT_COMMITTER_H_INCLUDED

#include <czmq.h>
#include "act_store.h"

typedef struct _act_committer_t act_committer_t;

//  A committer for store (borrowed), its thread started. NULL on failure.
act_committer_t *act_committer_new (act_store_t *store);

//  Stop the thread (after the commit in flight, if any) and null the
//  pointer; safe on NULL.
void act_committer_destroy (act_committer_t **self_p);

//  Start committing the store's sealed batch (act_store_seal) on the
//  thread. The store's backend is the thread's until act_committer_finish;
//  the loop may fill the next batch meanwhile (act_store_journal).
void act_committer_start (act_committer_t *self);

//  The socket that becomes readable when the commit in flight has ended
//  (to poll beside the broker's sockets).
zsock_t *act_committer_sock (act_committer_t *self);

//  Wait for the commit in flight to end (at once when the socket was
//  readable). Returns what act_store_commit_sealed returned, with err set.
int act_committer_finish (act_committer_t *self, act_err_t *err);

//  True between act_committer_start and act_committer_finish.
bool act_committer_busy (act_committer_t *self);

#endif
