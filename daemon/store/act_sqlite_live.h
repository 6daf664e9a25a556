/*  =========================================================================
    act_sqlite_live - which calls of a SQLite store have not ended, kept
    cheap to write (private to the SQLite store).

    A mark, live_from (schema 8): every call not ended with an id below it
    is a row of the table live; a call at or above it is found by reading
    calls from the mark on (a call not ended there has ended = 0 and no
    row in ends). So a call accepted and ended while it is above the mark
    writes nothing for being alive. This tracker keeps, in memory, which
    calls from the mark on are alive, moves the mark at a commit (at most
    a few thousand ids stay above it, which is what a restart reads), and
    writes the calls it leaves behind alive (few: calls that outlived
    thousands of later ones) as rows of live.
    ========================================================================= */

#ifndef ACT_SQLITE_LIVE_H_INCLUDED
#define ACT_SQLITE_LIVE_H_INCLUDED

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct _act_sqlite_live_t act_sqlite_live_t;

//  A tracker for the store on db (schema 8 or later); NULL on failure.
//  Read the file with act_sqlite_live_load before use
act_sqlite_live_t *act_sqlite_live_new (sqlite3 *db);

//  Destroy a tracker; nulls *self_p
void act_sqlite_live_destroy (act_sqlite_live_t **self_p);

//  Read the mark and the calls alive from it on from the file (at open,
//  and after a rollback); 0 or -1
int act_sqlite_live_load (act_sqlite_live_t *self);

//  The mark: calls not ended below it are rows of live
uint64_t act_sqlite_live_from (act_sqlite_live_t *self);

//  A new call was written with id, ended or not. Returns 1 when it is
//  below the mark (it must then be a row of live if not ended), 0, or -1
//  when out of memory (the batch must roll back, then load again)
int act_sqlite_live_admit (act_sqlite_live_t *self, uint64_t id, bool ended);

//  A stored call with id ended. Returns true when it is below the mark
//  (its row of live must go)
bool act_sqlite_live_end (act_sqlite_live_t *self, uint64_t id);

//  Move the mark when it pays, in the batch's open transaction: the calls
//  left behind alive become rows of live and the new mark is written.
//  0, or -1 (the batch must roll back, then load again)
int act_sqlite_live_advance (act_sqlite_live_t *self);

#endif
