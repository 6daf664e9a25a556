/*  =========================================================================
    act_broker_commit - the broker's commits (see act_broker_int.h): inline
    for the memory store; else on the committer's thread, while the loop
    goes on with the next batch. When the loop must wait for one (a read
    of the store, the last pass), it reads its sockets ahead, bounded,
    answers PING and sends the workers' heartbeats meanwhile.
    ========================================================================= */

#include <inttypes.h>
#include "act_broker_int.h"

//  Every worker that holds tasks (of calls about to be forgotten: their
//  TASK may never have been sent) is told to connect again and removed,
//  so that no slot stays taken by a task nobody runs; an idle one keeps
//  its connection through a store that keeps failing.
void
act_broker_drop_busy_workers (act_broker_t *self)
{
    act_worker_t *worker = act_pool_first (self->pool);
    while (worker) {
        if (zhashx_size (worker->tasks)) {
            act_pool_disconnect (self->outbox, worker->identity, worker->protocol,
                                 worker->envelope, "broker restarting its state");
            act_pool_remove (self->pool, worker);
            worker = act_pool_first (self->pool);   //  The walk starts again
        }
        else
            worker = act_pool_next (self->pool);
    }
}

//  Drop all state and take it again from the store: after a failed
//  commit, memory may hold what the store does not. Workers keep their
//  tasks: a call stored running whose task a worker holds runs on there
//  once recovered (act_flow_attach), so that an outage of the store does
//  not throw away the work of long tasks; the tasks no call takes back
//  are cancelled once recovery is done (act_flow_cancel_orphans).
void
act_broker_reset (act_broker_t *self)
{
    act_flow_kept_reset (self->flow);
    act_flow_reset (self->flow);
    act_cache_clear (self->cache);
    self->recovering = act_cache_recover (self->cache) > 0;
    act_broker_keep_answers (self);
    if (!self->recovering)
        act_broker_cancel_orphans (self);
}

//  The tasks no recovered call took back are cancelled at once, not after
//  the next commit (which may fail again): CANCEL promises nothing
void
act_broker_cancel_orphans (act_broker_t *self)
{
    act_broker_keep_answers (self);
    size_t dropped = act_flow_kept_drop (self->flow);
    if (dropped)
        act_log (LOG_NOTICE, "%zu answers kept through failed commits dropped: their calls "
                 "were not kept, or run again", dropped);
    if (act_flow_cancel_orphans (self->flow, self->beats))
        act_outbox_flush (self->beats, self->send, self->send_arg);
}

//  Workers' answers are kept from a failed commit until one succeeds and
//  recovery is done (act_flow_kept.c)
void
act_broker_keep_answers (act_broker_t *self)
{
    act_flow_kept_on (self->flow, self->failures > 0, self->recovering);
}

bool
act_broker_backing_off (act_broker_t *self)
{
    //  The clock is read only after a failure: this is asked per message
    return self->retry_at && act_clock_ms () < self->retry_at;
}

//  Count a failed commit and set when the next may be tried. Returns
//  the wait, in ms.
static long long
s_back_off (act_broker_t *self)
{
    long long wait = S_RETRY_MIN_MS;
    for (uint64_t failure = 1; failure < self->failures && wait < S_RETRY_MAX_MS; failure++)
        wait *= 2;
    wait = wait < S_RETRY_MAX_MS? wait: S_RETRY_MAX_MS;
    self->retry_at = act_clock_ms () + wait;
    return wait;
}

//  Take a commit's outcome: on failure nothing durable may be promised,
//  so what the batch acknowledged is refused and state reloaded from the
//  store; a batch begun since (while the commit was in flight) was built
//  on it, and is dropped and refused too
static void
s_committed (act_broker_t *self, size_t writes, int rc, act_err_t *err, long long started)
{
    if (writes && rc) {
        //  One line a try: the tries are S_RETRY_MIN_MS to S_RETRY_MAX_MS apart
        self->failures++;
        long long wait = s_back_off (self);
        act_log (LOG_ERR, "store commit failed (%s): %zu writes lost, and %zu since; "
                 "refusing what they acknowledged and reloading state from the store "
                 "(failure %" PRIu64 " in a row; next try in %lld ms)", err->message, writes,
                 act_store_batch (self->store), self->failures, wait);
        act_outbox_refuse (self->outbox, act_store_cause (self->store), act_watches_lost,
                           self->watches);
        act_watches_rewind (self->watches);
        act_store_abort (self->store);
        act_broker_reset (self);
    }
    else
    if (writes) {
        if (self->failures)
            act_log (LOG_NOTICE, "store commits again, after %" PRIu64 " failed in a row",
                     self->failures);
        self->failures = 0;
        self->retry_at = 0;
        act_flow_kept_committed (self->flow);
        self->commits++;
        self->committed += writes;
        act_hist_add_us (&self->commit_ms, act_hist_clock_us () - started);
        act_hist_add (&self->batch, (long long) writes);
        act_broker_keep_answers (self);
    }
}

//  Called once per pass. Everything decided in the pass (accepted calls,
//  appended messages, finished calls) goes to disk in one transaction
//  before any reply leaves: replies never promise more than the store
//  holds, and one fsync serves the whole batch.
void
act_broker_commit (act_broker_t *self)
{
    size_t writes = act_store_batch (self->store);
    act_err_t err = { 0 };
    long long started = act_hist_clock_us ();
    if (writes)
        act_flow_kept_sealed (self->flow);
    s_committed (self, writes, writes? act_store_commit (self->store, &err): 0, &err, started);
}


bool
act_broker_room (act_broker_t *self, int which)
{
    return act_inbox_size (self->inbox [which]) < (which? S_DEFER_MAX: S_DEFER_CLIENTS)
        && act_inbox_bytes (self->inbox [which]) < S_DEFER_BYTES;
}

//  Answer msg at once when it is a well-formed, allowed PING from a client
//  owed no earlier reply (none in the outbox, no HISTORY page pending nor
//  request held behind one, none of its requests read ahead before it:
//  those up to skip are, nor the one being handled), so
//  that replies to one client keep their order. Returns true when
//  answered (the caller closes msg).
bool
act_broker_ping_now (act_broker_t *self, act_msg_t *msg, bool skip_last)
{
    zmq_msg_t *client = act_msg_part (msg, 0);
    zmq_msg_t *header = act_msg_part (msg, 1);
    bool from_req = header && zmq_msg_size (header) == 0;
    size_t at = from_req? 2: 1;
    header = act_msg_part (msg, at);
    zmq_msg_t *verb = act_msg_part (msg, at + 1);
    act_grant_t grant;              //  PING needs no right, only a known key
    zmq_msg_t *request = act_msg_part (msg, at + 2);
    if (msg->size != (from_req? 5u: 4u) || !act_part_is (header, ACT_CLIENT_HEADER)
    ||  !act_part_is (verb, "PING") || zmq_msg_size (request) == 0
    ||  zmq_msg_size (request) > ACT_MAX_REQUEST_ID
    ||  !act_security_client_grant (self->security, header, &grant)
    ||  (self->serving && act_part_same (self->serving, client))
    ||  act_outbox_holds (self->outbox, zmq_msg_data (client), zmq_msg_size (client))
    ||  act_pages_holds (self->pages, zmq_msg_data (client), zmq_msg_size (client))
    ||  act_inbox_holds_from (self->inbox [0], zmq_msg_data (client), zmq_msg_size (client),
                              skip_last))
        return false;
    zmsg_t *pong = zmsg_new ();
    zmsg_addmem (pong, zmq_msg_data (client), zmq_msg_size (client));
    if (from_req)
        zmsg_addmem (pong, "", 0);
    zmsg_addstr (pong, ACT_CLIENT_HEADER);
    zmsg_addstr (pong, "PONG");
    zmsg_addmem (pong, zmq_msg_data (request), zmq_msg_size (request));
    if (zmsg_send (&pong, self->clients))
        zmsg_destroy (&pong);
    return true;
}

void
act_broker_read_ahead (act_broker_t *self, int which)
{
    for (int count = 0; count < S_READ_BATCH && act_broker_room (self, which); count++) {
        act_msg_t *msg = act_inbox_read (self->inbox [which],
                                         zsock_resolve (which? self->workers: self->clients));
        if (!msg)
            break;
        act_security_stat (self->security, msg);
        if (which == 0 && act_broker_ping_now (self, msg, true))
            act_inbox_drop_last (self->inbox [which]);
    }
}

long long
act_broker_beat (act_broker_t *self)
{
    long long now = act_clock_ms ();
    if (now >= self->heartbeat_at) {
        act_pool_heartbeat (self->pool, self->beats, now, self->settings->heartbeat_ms);
        act_outbox_flush (self->beats, self->send, self->send_arg);
        self->heartbeat_at = now + (self->settings->heartbeat_ms + 3) / 4;
    }
    return self->heartbeat_at - now;
}

//  A wait of the store (a statement on PostgreSQL): the heartbeats due go
//  out meanwhile, and PINGs are answered (other requests wait their turn
//  in the inbox, as during a commit)
void
act_broker_store_waits (void *arg)
{
    act_broker_t *self = (act_broker_t *) arg;
    act_broker_beat (self);
    if (self->clients)
        act_broker_read_ahead (self, 0);
}

//  Wait for the commit in flight, reading ahead and heartbeating meanwhile
static void
s_await_commit (act_broker_t *self)
{
    zsock_t *zap = act_security_zap (self->security);
    zmq_pollitem_t items [] = {
        { zsock_resolve (act_committer_sock (self->committer)), 0, ZMQ_POLLIN, 0 },
        { zsock_resolve (self->clients), 0, ZMQ_POLLIN, 0 },
        { zsock_resolve (self->workers), 0, ZMQ_POLLIN, 0 },
        { zap? zsock_resolve (zap): NULL, 0, ZMQ_POLLIN, 0 }
    };
    while (true) {
        items [1].events = act_broker_room (self, 0)? ZMQ_POLLIN: 0;
        items [2].events = act_broker_room (self, 1)? ZMQ_POLLIN: 0;
        if (zmq_poll (items, zap? 4: 3, (long) act_broker_beat (self)) < 0 && zmq_errno () != EINTR)
            break;
        if (items [0].revents & ZMQ_POLLIN)
            break;
        if (zap && (items [3].revents & ZMQ_POLLIN))
            act_security_handle (self->security);
        if (items [2].revents & ZMQ_POLLIN)
            act_broker_read_ahead (self, 1);
        if (items [1].revents & ZMQ_POLLIN)
            act_broker_read_ahead (self, 0);
    }
}

//  Take the outcome of the commit in flight, which has ended or ends now
static void
s_take_commit (act_broker_t *self)
{
    memset (&self->landed_err, 0, sizeof self->landed_err);
    self->landed_rc = act_committer_finish (self->committer, &self->landed_err);
    act_store_sealed_end (self->store, self->landed_rc);
    self->landed = true;
}

//  The store's settle function: wait for the commit in flight, if any
//  (reading ahead meanwhile), and keep its outcome for act_broker_land. Its replies
//  cannot go from here: a handler may be building one in the outbox.
void
act_broker_settle (void *arg)
{
    act_broker_t *self = (act_broker_t *) arg;
    if (!self->committer || !act_committer_busy (self->committer))
        return;
    s_await_commit (self);
    s_take_commit (self);
}

//  The loop saw the committer's socket readable: the commit has ended, so
//  its outcome is taken without another poll of every socket (the one-at-a-
//  time path: one poll less per commit)
void
act_broker_settle_ended (act_broker_t *self)
{
    if (self->committer && act_committer_busy (self->committer))
        s_take_commit (self);
}

//  The commit that ended: its replies go, or on failure are refused
//  (s_committed)
void
act_broker_land (act_broker_t *self)
{
    if (!self->landed)
        return;
    self->landed = false;
    s_committed (self, self->sealed_writes, self->landed_rc, &self->landed_err,
                 self->sealed_at);
    if (self->landed_rc == 0)
        act_outbox_flush_sealed (self->outbox, self->send, self->send_arg);
}
