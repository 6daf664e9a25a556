/*  =========================================================================
    act_broker_int - the broker's state, shared by its two files: the loop
    (act_broker.c) and its commits (act_broker_commit.c).
    ========================================================================= */

#ifndef ACT_BROKER_INT_H_INCLUDED
#define ACT_BROKER_INT_H_INCLUDED

#include "act_broker.h"
#include "act_hist.h"
#include "act_commands.h"
#include "act_wproto.h"
#include "act_committer.h"
#include "act_frame.h"

#define S_READ_BATCH    512     //  Messages read per socket per pass
#define S_ADOPT_BATCH   64      //  Contexts recovered per pass
#define S_PUMP_BUDGET   1024    //  Stored messages sent to watches per pass
#define S_READ_MS       50      //  Client requests are read for this long
#define S_DRAIN_MS      1000    //  At a stop, unread requests are refused busy for this long at most,
#define S_DRAIN_QUIET_MS 100    //  ...until none came for this long
                                //  per pass, at most
#define S_READ_BYTES    (32 * 1024 * 1024)  //  ...or until the pass's
                                //  replies hold this many bytes
#define S_PAGE_BUDGET   (256 * 1024)    //  Bytes of HISTORY pages built per pass
#define S_DEFER_MAX     4096    //  Worker messages read ahead during a commit
#define S_DEFER_CLIENTS 1024    //  Client requests read ahead while they
                                //  cannot be served (a PING among them is
                                //  answered: a stalled store holds no health
                                //  check); within S_DEFER_BYTES too
#define S_DEFER_BYTES   (16 * 1024 * 1024)  //  Their bytes, per socket
#define S_NEXT_WRITES   20000   //  While a commit is in flight, client
                                //  requests wait in the socket once the next
                                //  batch holds this many writes
#define S_RENEW_RETRY_MS 100    //  A failed lease renewal is tried again
                                //  this soon at the earliest
#define S_RETRY_MIN_MS  100     //  After a failed commit, the next waits this
#define S_RETRY_MAX_MS  2000    //  ...doubling at each failure in a row, to this

struct _act_broker_t {
    act_settings_t *settings;   //  What it runs with (not owned)
    act_store_t *store;         //  Durable state
    act_outbox_t *outbox;       //  What the pass sends, after its commit
    act_watches_t *watches;     //  Open WATCHes
    zlistx_t *unreachable;      //  Routing ids (zframe_t) of workers a
                                //  message could not reach: lost at the
                                //  next pass
    act_cache_t *cache;         //  Contexts in memory
    act_pool_t *pool;           //  Activities and workers
    act_flow_t *flow;           //  Calls through their life
    act_commands_t *commands;   //  The client protocol
    act_wproto_t *wproto;       //  The worker protocol
    act_security_t *security;   //  CURVE and ZAP, NULL without sockets
    act_pages_t *pages;         //  HISTORY pages built in pieces
    act_committer_t *committer; //  Commits on a thread (a file or database
                                //  store with sockets), or NULL: inline
    size_t sealed_writes;       //  Writes of the commit in flight
    long long sealed_at;        //  When it began (act_hist_clock_us)
    long long hold_until;       //  The batch waits for its early tasks'
                                //  results until then (act_hist_clock_us),
                                //  or 0
    bool landed;                //  It ended, its replies not sent yet
    int landed_rc;              //  Its result (0, or -1 with landed_err)
    act_err_t landed_err;       //  Why it failed
    act_outbox_t *beats;        //  Heartbeats to workers sent during a
                                //  commit (they promise no stored state)
    act_inbox_t *inbox [2];     //  Messages read during a commit, to handle
                                //  after it, per socket (0 clients, 1 workers)
    zmq_msg_t *serving;         //  Routing id of the client request being
                                //  handled, NULL between requests
    zsock_t *clients;           //  ROUTER for clients, NULL in-process
    zsock_t *workers;           //  ROUTER for workers, NULL in-process
    act_outbox_send_fn *send;   //  Where messages go (the sockets, or a
                                //  test's observer)
    void *send_arg;             //  Its argument
    long long started;          //  Start time (monotonic ms)
    long long heartbeat_at;     //  Next heartbeat round
    long long evict_at;         //  Next eviction round
    long long renew_at;         //  Shared store: next lease renewal
    long long renewed;          //  Shared store: last successful renewal
    long long orphans_at;       //  Shared store: next look for orphans
    long long retain_at;        //  Next look for contexts idle past retain_ms
    long long retain_cutoff;    //  The last look's cutoff (wall-clock ms; 0
                                //  before the first): see s_retain
    long long retain_looked;    //  When it was taken (CLOCK_BOOTTIME ms)
    long long passed;           //  End of the last pass, 0 before the first
    bool workers_waiting;       //  The last read left worker messages unread
    long long workers_drained;  //  When a read last left none (ms)
    size_t pumped;              //  Stored messages the last pass sent to
                                //  watches (none: a store that fails is not
                                //  retried without a pause)
    bool recovering;            //  Contexts with calls left to adopt
    bool stopping;              //  Shutting down
    int signals;                //  The signalfd the loop reads, or -1
    long long stop_deadline;    //  End of the shutdown grace period
    uint64_t commits;           //  Commits done
    uint64_t committed;         //  Writes committed, for batch sizes
    act_hist_t commit_ms;       //  Time each commit took
    act_hist_t batch;           //  Writes each commit carried
    uint64_t held;              //  Batches that waited for early results
    uint64_t held_expired;      //  Of those, the waits that ran out
    uint64_t failures;          //  Commits failed in a row
    long long retry_at;         //  After one: no commit, nor recovery,
                                //  before then (act_clock_ms), or 0
};

//  Drop all state and take it again from the store (after a failed
//  commit: nothing of what it held may be trusted).
void act_broker_reset (act_broker_t *self);

//  STATS' value (arg: the broker), for act_commands.
json_t *act_broker_stats (void *arg);

//  Keep workers' answers while commits fail or recovery runs.
void act_broker_keep_answers (act_broker_t *self);

//  Cancel at their workers, at once, the tasks that no call took back
//  after a reset (act_flow_cancel_orphans).
void act_broker_cancel_orphans (act_broker_t *self);

//  Before calls are forgotten for good (a lapsed lease: other brokers
//  may run them now): every worker that holds tasks is disconnected (told
//  to connect again) and removed, so that each forgotten task frees its
//  slot.
void act_broker_drop_busy_workers (act_broker_t *self);

//  True while commits failed in a row and the next is not due yet (a full
//  disk): the batch then waits, and so does recovery, so that a store
//  that keeps failing is tried S_RETRY_MIN_MS, doubling up to
//  S_RETRY_MAX_MS, apart instead of in a loop.
bool act_broker_backing_off (act_broker_t *self);

//  Commit the batch inline (no commit thread, or at the last pass) and
//  take its outcome; on failure what the batch acknowledged is refused
//  and state reloaded.
void act_broker_commit (act_broker_t *self);

//  The store's settle function (act_store_journal): wait for the commit in
//  flight, if any, reading the sockets ahead, answering PING and sending
//  heartbeats meanwhile, and keep its outcome for act_broker_land.
void act_broker_settle (void *arg);

//  As act_broker_settle, when the committer's socket was seen readable
//  (the commit has ended): its outcome is taken at once, without waiting.
void act_broker_settle_ended (act_broker_t *self);

//  The commit that ended, if any: its replies go, or on failure are
//  refused with those of the batch built on it, and state reloaded.
void act_broker_land (act_broker_t *self);

//  Answer msg at once when it is a well-formed, allowed PING from a
//  client owed no earlier reply. Returns true when answered (msg closed).
bool act_broker_ping_now (act_broker_t *self, act_msg_t *msg, bool skip_last);

//  Shared store: renew the lease when due (a failed renewal is tried
//  again soon), and adopt what dead brokers left (act_broker_lease.c)
void act_broker_leases (act_broker_t *self, long long now);

//  Shared store: when the lease may have run out, stop writing: the batch
//  is dropped (what it acknowledged refused) and everything forgotten
void act_broker_stop_if_lapsed (act_broker_t *self, long long now);

//  True when socket which (0 clients, 1 workers) may be read ahead more:
//  fewer than S_DEFER_CLIENTS (S_DEFER_MAX) messages held, S_DEFER_BYTES
bool act_broker_room (act_broker_t *self, int which);

//  Read socket which ahead into its inbox, as far as there is room; a
//  client's PING among them is answered at once (act_broker_ping_now)
void act_broker_read_ahead (act_broker_t *self, int which);

//  During a commit, or a statement the loop waits for: the heartbeats due
//  go to the workers at once, so that none judges actd lost during a slow
//  fsync or database server. (Workers are judged after it, on what they
//  sent meanwhile: read ahead, then read before any judgement.) Returns
//  the ms until the next round.
long long act_broker_beat (act_broker_t *self);

//  The store's wait hook (act_store_on_wait): act_broker_beat, and client
//  requests read ahead, a PING among them answered at once, so that a
//  health check is not held by a statement waiting for a slow server.
void act_broker_store_waits (void *arg);

//  act_broker_peers.c. The sockets' sender (an act_outbox_send_fn; arg
//  the broker): a message that cannot go at once (a peer gone, a full
//  pipe: the sockets never block) is dropped; a client it finds no route
//  to loses its watches and pages, a worker is noted in unreachable.
bool act_broker_send_sockets (void *arg, bool to_worker, zmq_msg_t *parts, size_t nparts);

//  After a flush: cut the connections of the clients past max_client_bytes.
void act_broker_cut_clients (act_broker_t *self);

//  A watched client's connection ended (an act_peers_gone_fn; arg the
//  broker): its watches end and its HISTORY pages are not built.
void act_broker_client_gone (void *arg, const void *id, size_t size);

//  Lose the workers that a message found no route to since the last pass.
void act_broker_lose_unreachable (act_broker_t *self);

//  Heartbeats out and, when it may, judge which workers are silent.
void act_broker_liveness (act_broker_t *self, long long now);

#endif
