/*  =========================================================================
    act_store - where contexts and calls live: the broker's durable memory.

    Writes are buffered in a batch and made durable together by
    act_store_commit (group commit): the broker commits once per pass of
    its event loop and acknowledges nothing before that commit returns.
    Reads see the current batch's writes too.

    Backends: a SQLite file in WAL mode (the default); "postgres://..." or
    "postgresql://..." (a PostgreSQL database several brokers can share);
    and ":memory:" (all in this process, gone on exit: for tests and
    benchmarks).

    Writes take text: the broker serializes each call, outcome and message
    once (or keeps the bytes a client sent) and the store stores that
    text. Reads give JSON. A call record read back is a JSON object:
        {"call_id": N, "context": "...", "state": "queued", "attempts": N,
         "call": {...}, "id"?: "client key", "outcome"?: {...},
         "progress"?: any, "client"?: "hex", "request"?: "hex",
         "resume"?: any}
    where client and request are the submitter's routing id and request id
    (hex), so that a DONE can still reach a client after a restart, and
    resume is the text last given to act_store_put_resume for the call.
    ========================================================================= */

#ifndef ACT_STORE_H_INCLUDED
#define ACT_STORE_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "actd/act_err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _act_store_t act_store_t;

//  A call as the broker writes it (texts are JSON, borrowed)
typedef struct {
    uint64_t call_id;           //  Call id
    const char *context;        //  Its context
    const char *state;          //  waiting, queued, running, or an outcome
    long long attempts;         //  Dispatches to a worker so far
    const char *call;           //  The call as submitted (put only)
    const char *id;             //  Its _id, or NULL (put only)
    const char *outcome;        //  The outcome, or NULL
    const char *progress;       //  Latest PROGRESS details, or NULL
    const char *client;         //  Submitter's routing id in hex, or NULL (put only)
    const char *request;        //  Submitter's request id in hex, or NULL (put only)
} act_call_record_t;

typedef enum {
    ACT_SYNC_FULL,              //  fsync at every commit: survives power loss
    ACT_SYNC_NORMAL             //  fsync at checkpoints: survives a crash of
                                //  actd, may lose the last commits on power loss
} act_sync_t;

//  Called for each item a read walks; return non-zero to stop the walk
typedef int (act_store_each_fn) (const json_t *item, void *arg);

//  Called for each stored message text a read walks (size bytes, not
//  NUL-terminated, valid only during the call); non-zero stops the walk
typedef int (act_store_text_fn) (uint64_t seq, const char *text, size_t size, void *arg);

//  Open the store at location (":memory:" or a SQLite file path, created
//  if missing). Returns NULL with err set (internal) saying why, such as
//  a file that is not a database, or one another actd has open.
act_store_t *act_store_open (const char *location, act_sync_t sync, act_err_t *err);

//  Called while act_store_open works long before the store can serve (a
//  SQLite file brought to the current schema, then the space that freed
//  given back): status says what it does ("opening the store: migrating
//  to schema 5: ..."), and the store calls again, or returns, within
//  extend_ms (however long one statement of that work runs).
typedef void (act_store_progress_fn) (const char *status, long long extend_ms, void *arg);

//  Have fn (NULL: none) called at the start of such work, then at most
//  once every interval_ms while it lasts (0: at each look at the clock,
//  every thousand SQLite instructions, for tests). For the process,
//  not a store: set it before act_store_open.
void act_store_on_progress (act_store_progress_fn *fn, void *arg, long long interval_ms);

//  The longest a broker of a shared store goes without renewing its
//  heartbeat (server/lease_ms; 10000 unless set): a shared store's schema
//  is not migrated while another broker renewed its own within it, as
//  that broker may run an older actd (act_pg_migrate). For the process,
//  not a store: set it before act_store_open.
void act_store_set_lease (long long lease_ms);

//  location as a log may show it: a PostgreSQL URL with its password (as
//  user:password@ or a password= parameter) written ***. The caller
//  frees it.
char *act_store_location_shown (const char *location);

//  Close the store (what is not committed is lost) and null the pointer.
void act_store_destroy (act_store_t **self_p);

//  "sqlite" or "memory".
const char *act_store_backend (act_store_t *self);

//  Record that a context exists (idempotent).
int act_store_put_context (act_store_t *self, const char *context);

//  Add a message (JSON text of size bytes; it carries its _seq).
int act_store_put_message (act_store_t *self, const char *context, uint64_t seq,
                           const char *text, size_t size);

//  Add a call.
int act_store_put_call (act_store_t *self, const act_call_record_t *record);

//  Replace the state, attempts, outcome and progress of a stored call.
int act_store_update_call (act_store_t *self, const act_call_record_t *record);

//  Keep text (JSON, borrowed) as what call call_id of context needs to go
//  on after a restart besides its record (schema 10: the requests that
//  repeated its _id, its retry delay), replacing the text kept before.
//  Written only by the calls that have such state (none on the path of
//  a plain call): it is read back as the record's "resume".
int act_store_put_resume (act_store_t *self, const char *context, uint64_t call_id,
                          const char *text);

//  Make the batch durable in one transaction. Returns 0, or -1 with err
//  set, and then none of the batch was kept.
int act_store_commit (act_store_t *self, act_err_t *err);

//  Why the last commit failed, in a few words fit for a client (SQLite's:
//  "database or disk is full", "disk I/O error (No space left on
//  device)"; no path nor detail), or NULL when the backend does not say.
//  Valid until the next use of the store.
const char *act_store_cause (act_store_t *self);

//  Number of writes in the current batch.
size_t act_store_batch (act_store_t *self);

//  Called when the loop must use the store while a commit may be in
//  flight on another thread: it returns once no commit is in flight.
typedef void (act_store_settle_fn) (void *arg);

//  From now on, hold the batch's writes in memory (copies) instead of
//  giving them to the backend at once, so that a batch can be sealed and
//  committed on another thread (act_store_seal, act_store_commit_sealed)
//  while the loop fills the next one. Before anything else uses the
//  backend from the loop (a read, a new context, a lease), settle is
//  called and the held writes are given to it: reads see them.
void act_store_journal (act_store_t *self, act_store_settle_fn *settle, void *arg);

//  The number of the current batch: batches are numbered from 1, in the
//  order they are committed. A write made now is durable once
//  act_store_durable says so of this number.
uint64_t act_store_generation (act_store_t *self);

//  True when every batch up to generation has been committed (0: always).
bool act_store_durable (act_store_t *self, uint64_t generation);

//  The current batch becomes the sealed one, and a new, empty batch
//  begins. Returns the sealed batch's writes. Call it only when no sealed
//  batch is left (after act_store_sealed_end).
size_t act_store_seal (act_store_t *self);

//  On the commit thread: give the sealed batch to the backend and commit
//  it. Returns 0, or -1 with err set (then none of it was kept). Nothing
//  else may use the backend meanwhile; the loop uses only the batch.
int act_store_commit_sealed (act_store_t *self, act_err_t *err);

//  Back on the loop, after act_store_commit_sealed returned rc: the
//  committed totals take the sealed batch's changes when rc is 0, and the
//  sealed batch is gone.
void act_store_sealed_end (act_store_t *self, int rc);

//  1 when the context exists, 0 when it does not, -1 on a read error (the
//  store could not tell: callers answer internal, never "not found").
int act_store_has_context (act_store_t *self, const char *context);

//  Walk every message of a context in _seq order. Returns 0, or -1 on a
//  read error.
int act_store_messages (act_store_t *self, const char *context,
                        act_store_each_fn *fn, void *arg);

//  Up to limit messages of a context with _seq >= from, oldest first, as a
//  new JSON array. It stops early, after at least one message, before the
//  array's compact JSON text would pass max_bytes (0: no bound), so that a
//  page of big messages is never read whole only to be cut.
json_t *act_store_history (act_store_t *self, const char *context,
                           uint64_t from, size_t limit, size_t max_bytes);

//  The same messages as act_store_history, as their stored texts, each
//  given to fn with its _seq: no JSON is read. Returns 0, or -1 on a read
//  error.
int act_store_history_texts (act_store_t *self, const char *context, uint64_t from,
                             size_t limit, size_t max_bytes, act_store_text_fn *fn,
                             void *arg);

//  The record of call call_id: 1 with *record set (the caller's), 0 when
//  no such call is stored, -1 on a read error (logged). *record is NULL
//  unless 1: a read error is no answer, never "not found".
int act_store_call (act_store_t *self, uint64_t call_id, json_t **record);

//  The call holding client key key in context: 1 with *call_id set, 0
//  when none holds it, -1 on a read error (logged). *call_id is 0 unless
//  1: a read error is no answer, never "a new key".
int act_store_idem (act_store_t *self, const char *context, const char *key,
                    uint64_t *call_id);

//  Walk the records of calls that have not ended, oldest first.
int act_store_pending (act_store_t *self, act_store_each_fn *fn, void *arg);

//  The highest call id ever stored in *call_id (0 for an empty store).
//  Returns 0, or -1 on a read error (logged; *call_id 0).
int act_store_last_call (act_store_t *self, uint64_t *call_id);

//  Totals, as a new object: {"contexts", "messages", "deleted", "calls":
//  {"accepted", "ok", "error", "timeout", "skipped", "cancelled"}}, of the
//  whole store (deleted: contexts removed by act_store_delete_context)
//  (with this store's uncommitted batch). O(1): kept as counters updated in
//  each commit, not counted from the tables; on a shared store (several
//  brokers) they are read from the database each time.
json_t *act_store_counts (act_store_t *self);

//  --------------------------------------------------------------------------
//  The lifecycle of contexts (PROTOCOL.md 1.1: CONTEXTS, DELETE, retention,
//  APPEND's idempotency key)

//  Up to limit stored contexts whose id is > after (NULL or "": from the
//  start) and starts with prefix (NULL or "": any), in byte order of their
//  ids, as a new JSON array of {"context", "messages", "last_seq",
//  "updated", "pending"}: updated is the _date of the last message (null
//  when there is none), pending the number of calls not ended. On a shared
//  store, every broker's contexts. NULL on a store error. Costs an index
//  range scan and O(pending) per listed context.
json_t *act_store_contexts (act_store_t *self, const char *prefix, const char *after,
                            size_t limit);

//  Remove context, its messages, its calls (records and _id keys), its
//  APPEND keys and, on a shared store, its lease, in the batch; *messages
//  (if not NULL) is set to how many messages it held. A context that does
//  not exist is no error (*messages 0). Returns 0, or -1 (the batch is
//  doomed). A context created later with the same id starts empty. On a
//  shared store a broker claims the context first (a context another live
//  broker holds is not deleted: -1), and claims it again before it writes
//  into a new context of that id.
int act_store_delete_context (act_store_t *self, const char *context, size_t *messages);

//  Most bytes of an APPEND key as the store keeps it: a key frame is 1-128
//  bytes, kept as it came when UTF-8 text, else as \x01 and its hex
//  (act_commands.c, s_append_key)
#define ACT_STORE_KEY_MAX (1 + 2 * 128)

//  The _seq an earlier APPEND with idempotency key key got in context: 1
//  with *seq set, 0 when no APPEND used key (or key is not 1 to
//  ACT_STORE_KEY_MAX bytes),
//  -1 on a read error (logged). *seq is 0 unless 1: a read error is no
//  answer, never "a new key".
int act_store_append_key (act_store_t *self, const char *context, const char *key,
                          uint64_t *seq);

//  Remember that the APPEND with key key got _seq seq in context (in the
//  batch). Keys are 1 to ACT_STORE_KEY_MAX bytes: another is refused (-1)
//  and nothing is written.
int act_store_put_append_key (act_store_t *self, const char *context, const char *key,
                              uint64_t seq);

//  Walk up to limit contexts with no call left to end whose last message's
//  _date (or, without messages, the date the context was created) is
//  before before_date (RFC 3339 UTC with milliseconds, compared as text).
//  fn gets a JSON string, the context id. Returns 0, or -1 on a read error.
int act_store_idle_contexts (act_store_t *self, const char *before_date, size_t limit,
                             act_store_each_fn *fn, void *arg);

//  True when state is an outcome (the call has ended).
bool act_state_ended (const char *state);

//  The next call id to give out: unique in the store, across restarts and,
//  for a shared store, across brokers (PostgreSQL hands them out in
//  blocks). Returns 0 on a store error.
uint64_t act_store_next_call (act_store_t *self);

//  --------------------------------------------------------------------------
//  Several brokers on one store (PostgreSQL). Each context is owned by one
//  broker at a time through a lease; a broker's leases last while it
//  renews its heartbeat. With SQLite or memory there is one broker, which
//  owns everything: these calls succeed and do nothing.

//  True when several brokers may share this store.
bool act_store_shared (act_store_t *self);

//  Called while a statement waits for the database server
typedef void (act_store_wait_fn) (void *arg);

//  While a statement of the calling thread waits for the server (on
//  PostgreSQL, up to store/timeout_ms and a second), fn (arg) is called
//  every 100 ms: the loop sends the workers' heartbeats meanwhile. fn
//  must not use the store.
void act_store_on_wait (act_store_t *self, act_store_wait_fn *fn, void *arg);

//  Join the store as broker id, reachable by clients at endpoint; leases
//  expire lease_ms after the last renewal. Returns 0 or -1 with err set.
int act_store_join (act_store_t *self, const char *id, const char *endpoint,
                    long long lease_ms, act_err_t *err);

//  Own context: 1 when this broker owns it now (it was free, ours, or its
//  owner's lease ran out: then it is taken over); 0 when another live
//  broker owns it (*owner set to that broker's client endpoint, to free);
//  -2, within 50 ms, when another session holds its lease row locked or
//  has inserted it and not committed (a broker stopped in the middle of a
//  commit): to try again later; -1 on a store error.
int act_store_claim (act_store_t *self, const char *context, char **owner);

//  Renew this broker's heartbeat (and read which other brokers renewed
//  theirs within the lease: so does each act_store_claim). Returns 0, or
//  -1 when the store could not be reached.
int act_store_renew (act_store_t *self);

//  While this broker's lease has lapsed (no renewal for two thirds of
//  it), where a request it cannot serve goes (moved) rather than failing
//  until the store is back: the client endpoint of another broker that
//  was live at the last read of the brokers (a renewal or a claim), the
//  one the clients' rendezvous order ranks first among them for key (a
//  context id, or a call id); "" when it knew of none (the client tries
//  another broker it knows of). Never this broker's own endpoint. NULL
//  while the lease holds, and on a store of one broker.
const char *act_store_elsewhere (act_store_t *self, const char *key);

//  Bound every statement, and every wait for a lock another broker holds,
//  to ms (PostgreSQL's statement_timeout and lock_timeout, for the
//  session): a broker paused with a transaction open cannot block the
//  others longer. Returns 0, or -1 on a store error; a store of one
//  broker does nothing.
int act_store_timeout (act_store_t *self, long long ms);

//  Drop the batch: none of its writes is kept (as a failed commit).
void act_store_abort (act_store_t *self);

//  Leave: this broker's leases run out now, so that live brokers take its
//  contexts over at once (a clean shutdown).
int act_store_leave (act_store_t *self);

//  Walk the contexts with calls that have not ended whose owner is dead
//  (orphans, mine false) or is this broker (mine true). fn gets a JSON
//  string, the context id.
int act_store_contexts_pending (act_store_t *self, bool mine, act_store_each_fn *fn,
                                void *arg);

//  Walk the records of calls not ended in one context, oldest first.
int act_store_pending_in (act_store_t *self, const char *context,
                          act_store_each_fn *fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif
