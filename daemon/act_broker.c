/*  =========================================================================
    act_broker - the actd broker: one thread, one loop.

    A pass of the loop reads what the sockets have (fairly, a bounded
    number from each), hands each message to its protocol (the client
    command table, the worker protocol), runs due timers, commits
    everything the pass decided in one store transaction, and only then
    sends the replies and tasks the pass produced. So no reply ever
    promises more than the store holds, and one fsync serves the whole
    pass (and, while a commit is in flight, every pass until it ends). The
    commits are act_broker_commit.c; what happens to a call is in
    act_flow.c, top to bottom.

    Nobody stalls it (issue 16): the commit runs on its own thread
    (act_committer; the memory store commits inline), and the loop does
    not wait for it: the pass's batch is sealed and handed over, and the
    next passes fill the next batch (its writes held in the store's
    journal) while the replies of the sealed one wait for its commit;
    only a read of the store waits for the commit in flight (reading its
    sockets ahead and answering PING meanwhile); a pass reads worker messages
    first and client requests within a time and a byte budget; HISTORY
    pages are built a bounded piece per pass (act_pages); a client that
    does not read its replies loses its connection once libzmq holds
    max_client_bytes for it (the outbox says who, security cuts it); and
    the workers' heartbeats go out during a commit too.

    Layers, each using only those below it: this loop; the protocols
    (act_commands, act_wproto); the call flow (act_flow); its parts (the
    dependency index act_deps, the context cache act_cache, activities and
    workers act_pool, the outbox, the timers); the store and libactd.

    One kind of message does not wait for its commit: the first attempt
    of a call accepted in this run, whose parameters read nothing that is
    not committed (act_flow's s_task_early), leaves for its worker at the
    end of the pass that made it, so that the worker runs while the store
    commits. Such a TASK reveals nothing the store must hold first: the
    client is told ACCEPTED only after the commit, and a crash before it
    either loses a call nobody acknowledged or leaves a stored call that
    runs again (at least once, PROTOCOL.md section 1).
    ========================================================================= */

#include <sys/signalfd.h>
#include "act_broker_int.h"
#include "act_fds.h"
#include "act_notify.h"
#include "actd/act_wire.h"

volatile sig_atomic_t act_broker_stop_requested = 0;
volatile sig_atomic_t act_broker_reload_requested = 0;

//  --------------------------------------------------------------------------
//  Messages in, messages out

//  Handle one message of the client socket (the caller closes it); one
//  from a client with HISTORY pages pending waits for them (act_pages)
static void
s_client_message (act_broker_t *self, act_msg_t *msg)
{
    act_security_seen (self->security, false, msg);
    if (act_pages_hold (self->pages, msg))
        return;
    act_commands_message (self->commands, msg);
    act_flow_settle (self->flow);
}

//  Serve a client request that waited for its client's HISTORY pages
static void
s_held_message (void *arg, act_msg_t *msg)
{
    act_broker_t *self = (act_broker_t *) arg;
    zmq_msg_t *serving = self->serving;
    self->serving = act_msg_part (msg, 0);
    act_commands_message (self->commands, msg);
    act_flow_settle (self->flow);
    self->serving = serving;
}

//  Handle one message of the worker socket (the caller closes it)
static void
s_worker_message (act_broker_t *self, act_msg_t *msg)
{
    act_security_seen (self->security, true, msg);
    act_wproto_message (self->wproto, msg);
    act_flow_settle (self->flow);
}

void
act_broker_client_message (act_broker_t *self, zmsg_t **msg_p)
{
    act_msg_t msg;
    act_msg_from_zmsg (&msg, *msg_p);
    zmsg_destroy (msg_p);
    s_client_message (self, &msg);
    act_msg_close (&msg);
}

void
act_broker_worker_message (act_broker_t *self, zmsg_t **msg_p)
{
    act_msg_t msg;
    act_msg_from_zmsg (&msg, *msg_p);
    zmsg_destroy (msg_p);
    s_worker_message (self, &msg);
    act_msg_close (&msg);
}

void
act_broker_set_sender (act_broker_t *self, act_outbox_send_fn *send, void *arg)
{
    self->send = send;
    self->send_arg = arg;
}


//  --------------------------------------------------------------------------
//  Commit, then send

//  Retention: delete one context the store found idle past retain_ms
static int
s_retain_one (const json_t *context, void *arg)
{
    act_broker_t *self = (act_broker_t *) arg;
    act_err_t err = { 0 };
    json_t *counts = act_flow_delete (self->flow, json_string_value (context), &err);
    if (!counts && !(err.code && streq (err.code, ACT_E_MOVED)))
        act_log (LOG_WARNING, "retention: context %s not deleted: %s",
                 json_string_value (context), err.message);
    json_decref (counts);
    return 0;
}

//  Milliseconds on clock
static long long
s_clock_ms (clockid_t clock)
{
    struct timespec now;
    clock_gettime (clock, &now);
    return (long long) now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

//  Delete, a batch at a time, the contexts with no call left to end and
//  no message newer than retain_ms (PROTOCOL.md 1.1, store/retain_ms).
//  Messages carry wall-clock dates, so the cutoff is one too; but it
//  never moves ahead faster than time really passes (CLOCK_BOOTTIME,
//  which counts a suspend, as the wall clock does): a wall clock stepped
//  forward (an NTP step, an admin's typo) made every context look old
//  at once, and deleted contexts written a second before, for good. So
//  a step forward keeps contexts longer (by the step, until a restart),
//  never shorter; a step back keeps those written before it longer
static void
s_retain (act_broker_t *self, long long now)
{
    if (self->settings->retain_ms <= 0 || now < self->retain_at || self->stopping)
        return;
    long long wall = s_clock_ms (CLOCK_REALTIME), looked = s_clock_ms (CLOCK_BOOTTIME);
    long long cutoff = wall - self->settings->retain_ms;
    if (self->retain_cutoff && cutoff > self->retain_cutoff + (looked - self->retain_looked))
        cutoff = self->retain_cutoff + (looked - self->retain_looked);
    self->retain_cutoff = cutoff;
    self->retain_looked = looked;
    char before [32];
    act_date_ago (wall - cutoff, before);
    act_store_idle_contexts (self->store, before, 64, s_retain_one, self);
    self->retain_at = now + 1000;
}

//  The work of a pass before its commit: leases, recovery, timers,
//  watches, liveness, eviction and retention
static void
s_pass_work (act_broker_t *self)
{
    act_broker_lose_unreachable (self);
    long long now = act_clock_ms ();
    if (act_store_shared (self->store))
        act_broker_leases (self, now);
    if (self->recovering && !act_broker_backing_off (self)) {
        self->recovering = act_cache_adopt (self->cache, S_ADOPT_BATCH) > 0;
        act_flow_settle (self->flow);
        if (!self->recovering) {
            act_log (LOG_NOTICE, "recovery done: %zu calls running, %zu queued, %zu waiting",
                     act_flow_running (self->flow), act_flow_queued (self->flow),
                     act_flow_waiting (self->flow));
            act_broker_cancel_orphans (self);
        }
    }
    if (!act_broker_backing_off (self)) {
        act_flow_kept_retake (self->flow);
        //  While commits fail and nothing else is to be written, answers
        //  kept wait for a commit that may never come: a probe is written
        if (self->failures && !act_store_batch (self->store)
        &&  (!self->committer || !act_committer_busy (self->committer)))
            act_flow_kept_probe (self->flow);
    }
    act_flow_timers (self->flow, now);
    self->pumped = act_watches_pump (self->watches, S_PUMP_BUDGET);
    act_broker_liveness (self, now);
    if (now >= self->evict_at) {
        act_cache_evict (self->cache, now);
        act_log_peer_flush ();
        act_outbox_sweep (self->outbox);
        self->evict_at = now + 1000;
    }
    s_retain (self, now);
}

//  The end of a pass, once what it sends has gone (or waits for its
//  commit): cut the connections due
static void
s_pass_end (act_broker_t *self)
{
    act_broker_cut_clients (self);
    self->passed = act_clock_ms ();
    act_security_tick (self->security, self->passed);
    act_fds_check (self->passed);
}

size_t
act_broker_pass (act_broker_t *self)
{
    act_pages_pump (self->pages, SIZE_MAX);
    s_pass_work (self);
    act_broker_stop_if_lapsed (self, act_clock_ms ());
    act_broker_settle (self);
    act_broker_land (self);
    act_broker_commit (self);
    size_t sent = act_outbox_flush (self->outbox, self->send, self->send_arg);
    s_pass_end (self);
    return sent;
}


//  True while the batch is to wait before its commit: its replies are all
//  patient (ACCEPTEDs whose clients wait for DONE) and its early tasks
//  are out, so that a fast worker's result shares the commit that stores
//  the call (one commit, one fsync a call, not two), for store/hold_us at
//  most. Any other reply, a full batch, a stop or failed commits (early
//  tasks then wait for their commit) end the wait.
static bool
s_hold (act_broker_t *self)
{
    if (!self->settings->hold_us || self->stopping || self->failures
    ||  act_store_batch (self->store) >= S_NEXT_WRITES
    ||  !act_outbox_awaits_early (self->outbox)) {
        self->hold_until = 0;
        return false;
    }
    //  The clock only for a batch that may wait (this runs every pass)
    long long now = act_hist_clock_us ();
    if (!self->hold_until) {
        self->hold_until = now + self->settings->hold_us;
        self->held++;
    }
    if (now < self->hold_until)
        return true;
    self->hold_until = 0;
    self->held_expired++;
    return false;
}

//  A pass of the running loop, as act_broker_pass, but with the commit on
//  the committer's thread: the batch is sealed and handed over, and the
//  loop goes on with the next one; its replies leave when it has ended
//  (s_land). With a commit still in flight, the batch grows until it ends.
static void
s_pass_async (act_broker_t *self)
{
    act_pages_pump (self->pages, S_PAGE_BUDGET);
    act_broker_land (self);             //  The pages waited for a commit
    s_pass_work (self);
    act_broker_stop_if_lapsed (self, act_clock_ms ());
    act_broker_land (self);
    if (!self->committer) {
        act_broker_commit (self);
        act_outbox_flush (self->outbox, self->send, self->send_arg);
    }
    else {
        if (!act_committer_busy (self->committer) && !s_hold (self)) {
            size_t writes = act_store_batch (self->store);
            //  After failed commits, a batch waits for the next try
            if (writes && !act_broker_backing_off (self)) {
                act_outbox_seal (self->outbox);
                act_flow_kept_sealed (self->flow);
                self->sealed_writes = act_store_seal (self->store);
                self->sealed_at = act_hist_clock_us ();
                act_committer_start (self->committer);
            }
            else
            if (!writes)
                act_outbox_flush (self->outbox, self->send, self->send_arg);
        }
        //  The tasks that promise nothing stored go now, while their
        //  commit runs (act_flow's s_task_early): the worker's time and
        //  the commit's overlap. Not once a commit failed, until one
        //  succeeds: the next is likely to fail too (a full disk), and
        //  every call refused meanwhile would have run all the same
        if (!self->failures)
            act_outbox_flush_early (self->outbox, self->send, self->send_arg);
    }
    s_pass_end (self);
}


//  --------------------------------------------------------------------------
//  The broker

//  The outbox's guard: whether the connection behind a routing id is the
//  one of the client a reply is owed to, and (DONE, EVENT) that client may
//  still reach the context it is about (act_out_owner). The sockets do not
//  set ZMQ_ROUTER_HANDOVER, so libzmq gives no one a routing id while its
//  connection lives; but once the client left, any peer may take the id,
//  with another key, while a reply to the client still waits in the
//  outbox for its commit (or a HISTORY page is built): with CURVE every
//  reply is tied to its requester's key (act_outbox_serving)
static bool
s_owner_holds (void *security, const void *id, size_t size, const char *owner,
               const char *context)
{
    return act_security_client_holds ((act_security_t *) security, id, size, owner,
                                      context);
}

//  Bind both sockets behind security. Returns 0, or -1 with err.
static int
s_bind_all (act_broker_t *self, act_err_t *err)
{
    act_settings_t *settings = self->settings;
    self->security = act_security_new (settings, err);
    if (!self->security)
        return -1;
    self->clients = act_security_bind (self->security, settings, settings->client_endpoint,
                                      ACT_ZAP_CLIENTS, err);
    self->workers = self->clients
                  ? act_security_bind (self->security, settings,
                                        settings->worker_endpoint, ACT_ZAP_WORKERS, err): NULL;
    if (!self->workers)
        return -1;
    act_broker_set_sender (self, act_broker_send_sockets, self);
    act_wproto_set_security (self->wproto, self->security);
    act_outbox_set_guard (self->outbox, s_owner_holds, self->security);
    return 0;
}

//  Join the shared store (PostgreSQL) as this broker. Returns 0 or -1.
static int
s_join (act_broker_t *self, act_err_t *err)
{
    act_settings_t *settings = self->settings;
    char *host = zsys_hostname ();
    if (!settings->advertise)
        settings->advertise = strdup (settings->client_endpoint);
    if (!settings->broker_id)
        settings->broker_id = zsys_sprintf ("%s/%s", host, settings->advertise);
    free (host);
    if (act_store_timeout (self->store, settings->store_timeout_ms)
    ||  act_store_join (self->store, settings->broker_id, settings->advertise,
                        settings->lease_ms, err)) {
        if (!err->code)
            act_err_set (err, ACT_E_INTERNAL, "cannot set the store's timeouts");
        return -1;
    }
    self->renewed = act_clock_ms ();
    //  A read on the loop may wait seconds for a silent server: the
    //  workers' heartbeats go out meanwhile
    act_store_on_wait (self->store, act_broker_store_waits, self);
    act_log (LOG_NOTICE, "joined the shared store as broker %s (clients are sent to %s; "
             "leases last %lld ms)", settings->broker_id, settings->advertise,
             settings->lease_ms);
    return 0;
}

act_broker_t *
act_broker_new (act_settings_t *settings, bool bind, act_err_t *err)
{
    act_broker_t *self = calloc (1, sizeof *self);
    if (!self) {
        act_err_set (err, ACT_E_INTERNAL, "out of memory");
        return NULL;
    }
    self->signals = -1;
    self->settings = settings;
    self->started = act_clock_ms ();
    self->workers_drained = self->started;
    self->store = act_store_open (settings->store, settings->sync, err);
    if (!self->store) {
        free (self);
        return NULL;
    }
    self->outbox = act_outbox_new ();
    self->beats = act_outbox_new ();
    act_outbox_set_max_client_bytes (self->outbox, (size_t) settings->max_client_bytes);
    self->inbox [0] = act_inbox_new ();
    self->inbox [1] = act_inbox_new ();
    self->watches = act_watches_new (self->store, self->outbox, (size_t) settings->max_watches);
    self->unreachable = zlistx_new ();
    zlistx_set_destructor (self->unreachable, (zlistx_destructor_fn *) zframe_destroy);
    self->cache = act_cache_new (settings, self->store);
    self->pool = act_pool_new (settings);
    self->flow = act_flow_new (settings, self->store, self->cache, self->pool, self->outbox,
                               self->watches);
    self->wproto = act_wproto_new (settings, self->pool, self->flow, self->outbox);
    if ((bind && s_bind_all (self, err))
    ||  (act_store_shared (self->store) && s_join (self, err))) {
        act_broker_destroy (&self);
        return NULL;
    }
    //  The memory store commits in memory: nothing to wait for
    if (bind && !streq (act_store_backend (self->store), "memory")) {
        self->committer = act_committer_new (self->store);
        if (self->committer)
            act_store_journal (self->store, act_broker_settle, self);
    }
    self->pages = act_pages_new (self->store, self->outbox, (size_t) settings->max_reply_bytes);
    act_pages_set_server (self->pages, s_held_message, self);
    self->commands = act_commands_new (settings, self->store, self->cache, self->flow,
                                       self->outbox, self->watches, self->security, act_broker_stats,
                                       self);
    act_commands_set_pages (self->commands, self->pages);
    act_security_on_client_gone (self->security, act_broker_client_gone, self);
    self->recovering = act_cache_recover (self->cache) > 0;
    act_broker_commit (self);
    act_outbox_flush (self->outbox, self->send, self->send_arg);
    return self;
}

void
act_broker_destroy (act_broker_t **self_p)
{
    if (self_p && *self_p) {
        act_broker_t *self = *self_p;
        act_committer_destroy (&self->committer);
        act_inbox_destroy (&self->inbox [0]);
        act_inbox_destroy (&self->inbox [1]);
        zsock_destroy (&self->clients);
        zsock_destroy (&self->workers);
        act_security_destroy (&self->security);
        act_commands_destroy (&self->commands);
        act_pages_destroy (&self->pages);
        act_wproto_destroy (&self->wproto);
        //  Calls before their contexts: a call unregisters from its
        //  context's dependency index
        act_flow_destroy (&self->flow);
        act_pool_destroy (&self->pool);
        act_cache_destroy (&self->cache);
        act_watches_destroy (&self->watches);
        zlistx_destroy (&self->unreachable);
        act_outbox_destroy (&self->outbox);
        act_outbox_destroy (&self->beats);
        act_store_destroy (&self->store);
        free (self);
        *self_p = NULL;
    }
}

//  Start a shutdown: no new calls, no new dispatch; running tasks get the
//  grace period; what has not ended is recovered at the next start
static void
s_begin_stop (act_broker_t *self)
{
    self->stopping = true;
    act_flow_stop (self->flow);
    self->stop_deadline = act_clock_ms () + self->settings->shutdown_grace_ms;
    act_log (LOG_NOTICE, "stopping: %zu tasks running, waiting up to %lld ms",
             act_flow_running (self->flow), self->settings->shutdown_grace_ms);
    act_notify_stopping ("stopping: letting running tasks finish");
}

static char *
s_summary (void *self)
{
    return act_broker_summary ((act_broker_t *) self);
}

//  How long the loop may sleep in poll: until the next heartbeat round or
//  timer, at most 250 ms (signals are read between polls)
static long long
s_wait (act_broker_t *self)
{
    long long now = act_clock_ms ();
    long long wait = self->heartbeat_at - now;
    long long timer = act_flow_next_timer (self->flow);
    if (timer >= 0 && timer - now < wait)
        wait = timer - now;
    if (self->retry_at && self->retry_at - now < wait)
        wait = self->retry_at - now;
    if (self->hold_until) {
        //  zmq_poll counts in ms: the end of a hold rounded up
        long long hold = (self->hold_until - act_hist_clock_us () + 999) / 1000;
        if (hold < wait)
            wait = hold;
    }
    return wait > 250? 250: wait < 0? 0: wait;
}

//  The next message of socket which (0 clients, 1 workers) into msg:
//  those read ahead during a commit first, in order. False when none.
static bool
s_next (act_broker_t *self, int which, act_msg_t *msg)
{
    return act_inbox_pop (self->inbox [which], msg)
        || act_msg_recv (msg, zsock_resolve (which? self->workers: self->clients)) == 0;
}

//  False while a commit is in flight and the next batch is already big:
//  client requests then wait in the socket (TCP pushes back on their
//  senders) instead of growing the batch without bound, as during a
//  commit stalled on a locked database
static bool
s_more_clients (act_broker_t *self)
{
    return act_store_batch (self->store) < S_NEXT_WRITES
        || ((!self->committer || !act_committer_busy (self->committer))
            && !act_broker_backing_off (self));
}

//  Read fairly, within budgets: worker messages first in each round, up
//  to a batch or for S_READ_MS (a worker flooding megabyte PROGRESSes held
//  a pass, and PING, for seconds), never stopped by client traffic; client
//  requests up to
//  a batch, for S_READ_MS at most, and until the replies of the pass hold
//  S_READ_BYTES (a HISTORY page can be megabytes): the rest waits in the
//  socket for the next pass, after the commit has sent these. Notes
//  whether worker messages may be left, so that no worker is judged
//  unread.
static void
s_read (act_broker_t *self)
{
    long long started = act_clock_ms ();
    bool workers = true, clients = s_more_clients (self), timed_out = false;
    //  Requests that must wait are read ahead all the same, so that a PING
    //  among them is answered
    if (!clients && act_broker_room (self, 0))
        act_broker_read_ahead (self, 0);
    for (int round = 0; round < S_READ_BATCH && (workers || clients); round++) {
        act_msg_t msg;
        //  The clock is read every 16 rounds: a read costs ~23 ns here
        if (workers && (round & 15) == 15 && act_clock_ms () - started >= S_READ_MS)
            workers = false, timed_out = true;
        workers = workers && s_next (self, 1, &msg);
        if (workers) {
            s_worker_message (self, &msg);
            act_msg_close (&msg);
        }
        bool got = clients && s_next (self, 0, &msg);
        bool handle = clients = got;
        if (handle && ((self->committer && act_committer_busy (self->committer))
                   || act_broker_backing_off (self)))
            handle = !act_broker_ping_now (self, &msg, false);
        if (handle && msg.held && act_outbox_client_over (self->outbox, act_msg_routing (&msg))) {
            //  Its connection is being cut: not worth building a reply
            char *peer = act_msg_strhex (act_msg_part (&msg, 0));
            act_log_peer (LOG_WARNING, peer, "client not reading its replies",
                          "client %s does not read its replies: a request dropped unread "
                          "while its connection is cut (server/max_client_bytes)", peer);
            free (peer);
            handle = false;
        }
        if (handle) {
            self->serving = act_msg_part (&msg, 0);
            s_client_message (self, &msg);
            self->serving = NULL;
            clients = act_clock_ms () - started < S_READ_MS
                   && act_outbox_bytes (self->outbox) < S_READ_BYTES && s_more_clients (self);
        }
        if (got)
            act_msg_close (&msg);
        //  A commit that a read of the store waited for: its replies go
        //  now, between two messages, not at the end of the pass
        act_broker_land (self);
    }
    self->workers_waiting = workers || timed_out;
    if (!self->workers_waiting)
        self->workers_drained = act_clock_ms ();
}

//  Requests still unread at the stop (read ahead, or in the socket) are
//  answered busy, after the last commit's replies: their clients learn at
//  once that nothing was done and may send them again, here after the
//  restart or to another broker, instead of waiting out their timeouts.
//  While requests come, until none came for S_DRAIN_QUIET_MS (the I/O
//  thread may still be decoding what the kernel holds; an idle stop does
//  not wait), for S_DRAIN_MS at most, so that a flooding client cannot
//  hold the stop.
static void
s_refuse_unread (act_broker_t *self)
{
    act_commands_close (self->commands);
    long long until = act_clock_ms () + S_DRAIN_MS;
    size_t refused = 0;
    act_msg_t msg;
    while (act_clock_ms () < until) {
        if (!s_next (self, 0, &msg)) {
            zmq_pollitem_t item = { zsock_resolve (self->clients), 0, ZMQ_POLLIN, 0 };
            if (refused && zmq_poll (&item, 1, S_DRAIN_QUIET_MS) > 0)
                continue;
            break;
        }
        act_security_seen (self->security, false, &msg);
        act_commands_message (self->commands, &msg);
        act_msg_close (&msg);
        if (++refused % S_READ_BATCH == 0)
            act_outbox_flush (self->outbox, self->send, self->send_arg);
    }
    act_outbox_flush (self->outbox, self->send, self->send_arg);
    if (refused)
        act_log (LOG_NOTICE, "stopping: %zu requests still unread answered (busy)", refused);
}

void
act_broker_signals (sigset_t *mask)
{
    sigemptyset (mask);
    sigaddset (mask, SIGTERM);
    sigaddset (mask, SIGINT);
    sigaddset (mask, SIGHUP);
}

void
act_broker_watch_signals (act_broker_t *self, int fd)
{
    self->signals = fd;
}

//  Take the signals that came, as the handlers would have
static void
s_take_signals (act_broker_t *self)
{
    struct signalfd_siginfo info;
    while (read (self->signals, &info, sizeof info) == (ssize_t) sizeof info) {
        if (info.ssi_signo == SIGHUP)
            act_broker_reload_requested = 1;
        else
            act_broker_stop_requested = 1;
    }
}

int
act_broker_run (act_broker_t *self, act_broker_reload_fn *reload, act_settings_t *settings)
{
    zsock_t *zap = act_security_zap (self->security);
    //  The sockets, the ZAP socket when there is one, the signalfd when
    //  there is one, and the committer's while a commit is in flight (its
    //  end sends the batch's replies)
    zmq_pollitem_t items [5] = {
        { zsock_resolve (self->clients), 0, ZMQ_POLLIN, 0 },
        { zsock_resolve (self->workers), 0, ZMQ_POLLIN, 0 }
    };
    int count = 2;
    int zap_at = zap? count++: -1;
    int signals_at = self->signals >= 0? count++: -1;
    int commit_at = count;
    if (zap)
        items [zap_at] = (zmq_pollitem_t) { zsock_resolve (zap), 0, ZMQ_POLLIN, 0 };
    if (signals_at >= 0)
        items [signals_at] = (zmq_pollitem_t) { NULL, self->signals, ZMQ_POLLIN, 0 };
    if (self->committer)
        items [commit_at] = (zmq_pollitem_t) {
            zsock_resolve (act_committer_sock (self->committer)), 0, ZMQ_POLLIN, 0 };
    char *shown = act_store_location_shown (self->settings->store);
    act_log (LOG_NOTICE, "actd %s ready: clients %s, workers %s, store %s (%s)",
             ACTD_VERSION, self->settings->client_endpoint, self->settings->worker_endpoint,
             shown, act_store_backend (self->store));
    free (shown);
    while (true) {
        if (act_broker_stop_requested && !self->stopping)
            s_begin_stop (self);
        if (act_broker_reload_requested && reload)
            reload (self, settings);
        act_notify_tick (s_summary, self);
        if (self->stopping && (act_flow_running (self->flow) == 0
                           ||  act_clock_ms () >= self->stop_deadline))
            break;
        bool more_clients = s_more_clients (self);
        //  Requests read ahead that must still wait do not keep it awake
        bool ahead = (more_clients && act_inbox_size (self->inbox [0]))
                  || act_inbox_size (self->inbox [1])
                  || act_pages_size (self->pages)
                  || (self->pumped && act_watches_behind (self->watches))
                  || zlistx_size (self->unreachable);
        bool busy = self->committer && act_committer_busy (self->committer);
        //  zmq_poll leaves revents as they were when a signal interrupts it
        for (int item = 0; item < 5; item++)
            items [item].revents = 0;
        //  While client requests are to wait (a commit in flight and the
        //  next batch full), they are read ahead as far as there is room;
        //  past that, their arrival must not wake the loop: it would spin
        //  until the commit ends
        items [0].events = more_clients || act_broker_room (self, 0)? ZMQ_POLLIN: 0;
        if (zmq_poll (items, busy? commit_at + 1: commit_at, ahead? 0: s_wait (self)) < 0
        &&  zmq_errno () != EINTR)
            break;
        if (zap && (items [zap_at].revents & ZMQ_POLLIN))
            act_security_handle (self->security);
        if (signals_at >= 0 && (items [signals_at].revents & ZMQ_POLLIN))
            s_take_signals (self);
        if (busy && (items [commit_at].revents & ZMQ_POLLIN)) {
            act_broker_settle_ended (self);
            act_broker_land (self);
        }
        s_read (self);
        s_pass_async (self);
    }
    //  The commit in flight first (a failure there reloads the calls),
    //  then the calls still running are stored as interrupted, not crashed
    act_broker_settle (self);
    act_broker_land (self);
    act_flow_park (self->flow);
    act_broker_pass (self);
    s_refuse_unread (self);
    if (act_store_shared (self->store))
        act_store_leave (self->store);
    act_log (LOG_NOTICE, "stopped: %zu calls left to recover at the next start "
             "(%zu running, %zu queued, %zu waiting)", act_flow_live (self->flow),
             act_flow_running (self->flow), act_flow_queued (self->flow),
             act_flow_waiting (self->flow));
    return 0;
}


//  --------------------------------------------------------------------------
//  Reload (SIGHUP)

//  After the keys were reloaded: revoked workers are disconnected (by the
//  worker protocol); revoked clients lose their watches (their connections
//  are cut by security).
static void
s_revoke (act_broker_t *self)
{
    act_wproto_revoke (self->wproto);
    zframe_t *client;
    while ((client = act_security_revoked_client (self->security))) {
        act_watches_drop_client (self->watches, zframe_data (client), zframe_size (client));
        zframe_destroy (&client);
    }
}

int
act_broker_reload (act_broker_t *self, act_settings_t *fresh, act_err_t *err)
{
    act_settings_t *now = self->settings;
    //  The keys first, as the only part that can still be refused (they
    //  are read from their directories): a file whose keys do not load
    //  changes nothing, as one that does not parse
    if (self->security && act_security_reload (self->security, fresh, err))
        return -1;
    //  Log every change, while the old log level holds, then apply
    act_settings_log_changes (now, fresh);
    //  Per-activity settings: swap the tables, then point activities at
    //  their new entries
    now->defaults = fresh->defaults;
    zhashx_t *swap = now->activities;
    now->activities = fresh->activities;
    fresh->activities = swap;
    act_pool_resettle (self->pool);
    if (self->security)
        s_revoke (self);
    //  The new log level last, so that the lines above are not lost
    now->log_level = fresh->log_level;
    act_log_threshold = fresh->log_level;
    return 0;
}

char *
act_broker_summary (act_broker_t *self)
{
    return zsys_sprintf ("%zu workers, %zu running, %zu queued, %zu waiting, %zu contexts loaded",
                         act_pool_size (self->pool), act_flow_running (self->flow),
                         act_flow_queued (self->flow), act_flow_waiting (self->flow),
                         act_cache_size (self->cache));
}
