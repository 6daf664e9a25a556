/*  =========================================================================
    act_store_int - what a store backend provides (private to libactd).
    ========================================================================= */

#ifndef ACT_STORE_INT_H_INCLUDED
#define ACT_STORE_INT_H_INCLUDED

#include "act_store.h"

//  The totals a store keeps, in this order
enum {
    S_CONTEXTS, S_MESSAGES, S_ACCEPTED, S_OK, S_ERROR, S_TIMEOUT, S_SKIPPED,
    S_CANCELLED, S_DELETED, S_COUNTERS
};
extern const char *act_store_counter_names [S_COUNTERS];

typedef struct {
    const char *name;
    void (*destroy) (void *impl);
    //  Writes; put_context returns 1 when the context is new, 0 if known
    int (*put_context) (void *impl, const char *context);
    int (*put_message) (void *impl, const char *context, uint64_t seq,
                        const char *text, size_t size);
    int (*put_call) (void *impl, const act_call_record_t *record);
    int (*update_call) (void *impl, const act_call_record_t *record);
    //  Commit the batch with the counters' changes; on failure, or when
    //  rollback is set (a write of the batch failed), roll it back whole
    int (*commit) (void *impl, const int64_t *deltas, bool rollback, act_err_t *err);
    //  Reads
    //  has_context: 1 when the context exists, 0 when not, -1 on a read
    //  error (not known: no answer)
    int (*has_context) (void *impl, const char *context);
    int (*messages) (void *impl, const char *context, act_store_each_fn *fn, void *arg);
    int (*history) (void *impl, const char *context, uint64_t from, size_t limit,
                    size_t max_bytes, act_store_text_fn *fn, void *arg);
    //  call, idem and append_key: 1 with the out parameter set, 0 when
    //  nothing is stored, -1 on a read error (logged): as the act_store_
    //  functions of the same names; last_call: 0, or -1 on a read error
    int (*call) (void *impl, uint64_t call_id, json_t **record);
    int (*idem) (void *impl, const char *context, const char *key, uint64_t *call_id);
    int (*pending) (void *impl, act_store_each_fn *fn, void *arg);
    int (*last_call) (void *impl, uint64_t *call_id);
    int (*counters) (void *impl, int64_t *counts);
    //  Shared stores only (NULL otherwise)
    //  The next call id; 0 when it takes the database (a new block of
    //  ids) and reserve is false, or on an error
    uint64_t (*next_call) (void *impl, bool reserve);
    int (*join) (void *impl, const char *id, const char *endpoint, long long lease_ms,
                 act_err_t *err);
    int (*claim) (void *impl, const char *context, char **owner);
    int (*renew) (void *impl);
    int (*leave) (void *impl);
    int (*contexts_pending) (void *impl, bool mine, act_store_each_fn *fn, void *arg);
    int (*pending_in) (void *impl, const char *context, act_store_each_fn *fn, void *arg);
    //  Contexts: ids in [from, end) but after, at most limit, in order, as
    //  act_store_contexts returns them
    json_t *(*contexts) (void *impl, const char *from, const char *end, const char *after,
                         size_t limit);
    //  Delete a context in the batch: 1 and *messages set when it existed,
    //  0 when it did not, -1 on failure
    int (*delete_context) (void *impl, const char *context, size_t *messages);
    int (*append_key) (void *impl, const char *context, const char *key, uint64_t *seq);
    int (*put_append_key) (void *impl, const char *context, const char *key, uint64_t seq);
    int (*idle_contexts) (void *impl, const char *before, size_t limit,
                          act_store_each_fn *fn, void *arg);
    //  Bound each statement and each lock wait to ms (NULL: no bound)
    int (*timeout) (void *impl, long long ms);
    //  From now on the texts of put_message, put_call and update_call
    //  outlive the batch (they are the journal's, kept until its commit or
    //  rollback ends): the backend may keep pointers instead of copies
    //  (NULL: the backend copies what it keeps)
    void (*borrow) (void *impl);
    //  Call fn while a statement of the calling thread waits for the
    //  server (NULL: statements do not wait for a server)
    void (*on_wait) (void *impl, act_store_wait_fn *fn, void *arg);
    //  Keep text as call call_id's resume state (act_store_put_resume),
    //  in the batch
    int (*put_resume) (void *impl, const char *context, uint64_t call_id, const char *text);
    //  Shared stores: another live broker to send key's requests to while
    //  this one's lease has lapsed, "" when none is known, or NULL while
    //  the lease holds (act_store_elsewhere)
    const char *(*elsewhere) (void *impl, const char *key);
    //  Why the last commit failed, for clients (act_store_cause), or NULL
    //  (NULL: the backend does not say)
    const char *(*cause) (void *impl);
} act_store_backend_t;

//  A batch's writes held in memory for a backend (act_store_journal.c)
typedef struct _act_journal_t act_journal_t;

//  An empty journal; NULL when out of memory.
act_journal_t *act_journal_new (void);

//  Destroy the journal and what it holds; null the pointer; safe on NULL.
void act_journal_destroy (act_journal_t **self_p);

//  Writes held (an update replaced by a later one still counts).
size_t act_journal_size (act_journal_t *self);

//  Bytes of the texts held. An update of a call with progress replaces the
//  call's earlier update with progress not given to the backend yet, so
//  a batch holds one copy of each call's latest progress.
size_t act_journal_bytes (act_journal_t *self);

//  Forget every write held, given to the backend or not.
void act_journal_clear (act_journal_t *self);

//  Hold a write, copying what it writes. Each returns 0, or -1 when out of
//  memory (nothing held).
int act_journal_message (act_journal_t *self, const char *context, uint64_t seq,
                         const char *text, size_t size);
int act_journal_call (act_journal_t *self, bool put, const act_call_record_t *record);
int act_journal_append_key (act_journal_t *self, const char *context, const char *key,
                            uint64_t seq);
int act_journal_resume (act_journal_t *self, const char *context, uint64_t call_id,
                        const char *text);

//  Give every write held and not given yet to backend (impl), in order.
//  The writes stay held (the backend may borrow their texts) until
//  act_journal_clear, which the store calls once the backend's batch is
//  committed or rolled back. Returns NULL, or what the first failed write
//  was ("a message", ...).
const char *act_journal_apply (act_journal_t *self, const act_store_backend_t *backend,
                               void *impl);

//  Call fn with text as a JSON string; returns what fn returns
int act_store_give_text (act_store_each_fn *fn, void *arg, const char *text);

//  Open the memory backend
void *act_store_memory_open (void);
extern const act_store_backend_t act_store_memory;

//  Open the SQLite backend; NULL with err set on failure
void *act_store_sqlite_open (const char *path, act_sync_t sync, act_err_t *err);
extern const act_store_backend_t act_store_sqlite;

//  What act_store_set_lease set
long long act_store_lease (void);

//  Open the PostgreSQL backend (when built with libpq); NULL with err set
void *act_store_pg_open (const char *url, act_sync_t sync, act_err_t *err);
extern const act_store_backend_t act_store_pg;

#endif
