/*  =========================================================================
    act_broker - the actd broker.

    One thread, one loop. A pass of the loop reads what the sockets have
    (fairly, a bounded number from each), hands each message to its
    handler, runs due timers, commits everything the pass decided in one
    store transaction, and only then sends the replies and tasks the pass
    produced. So no reply ever promises more than the store holds, and one
    fsync serves the whole pass.

    Reading guide: types; the outbox; timers; contexts; the producer index
    (dependencies between calls); activities and workers; a call's life
    (new, evaluate, queue, dispatch, result, failure, finish); the client
    commands; the worker protocol (ACT/1 and Majordomo); recovery; the
    loop.
    ========================================================================= */

#include <syslog.h>
#include "act_broker.h"
#include "act_notify.h"
#include "act_store.h"

volatile sig_atomic_t act_broker_stop_requested = 0;
volatile sig_atomic_t act_broker_reload_requested = 0;

#define S_CLIENT_HEADER     "ACTC01"
#define S_WORKER_HEADER     "ACTW01"
#define S_MDPW01            "MDPW01"
#define S_MDPW02            "MDPW02"
#define S_MAX_REQUEST_ID    255
#define S_READ_BATCH        512     //  Messages read per socket per pass
#define S_HISTORY_LIMIT     1000

typedef struct _s_call_t s_call_t;
typedef struct _s_worker_t s_worker_t;
typedef struct _s_context_t s_context_t;
typedef struct _s_activity_t s_activity_t;
typedef struct _s_pnode_t s_pnode_t;

typedef enum { S_WAITING, S_QUEUED, S_RUNNING, S_ENDED } s_state_t;
static const char *s_state_names [] = { "waiting", "queued", "running", "ended" };

typedef enum { S_ACTW, S_MDP1, S_MDP2 } s_protocol_t;

//  One output reference of a live call, registered in the producer index
typedef struct {
    s_call_t *call;             //  The call that may write there
    s_pnode_t *node;            //  Node it is registered at
    void *handle;               //  Its handle in node->targets
} s_target_t;

//  A node of a context's producer index: one path of one kind
struct _s_pnode_t {
    s_pnode_t *parent;          //  NULL for a kind's root
    char *key;                  //  Key in the parent (NULL: root or "-")
    zhashx_t *children;         //  Segment text -> s_pnode_t, NULL if none
    s_pnode_t *append;          //  The "-" child, NULL if none
    zlistx_t *targets;          //  s_target_t * registered at this path
    size_t count;               //  Targets at this node and below
};

//  A later call waiting for a producer, in one evaluation round
typedef struct {
    uint64_t number;            //  The waiting call
    uint32_t round;             //  Its round when it started waiting
} s_waiter_t;

//  Where a DONE goes
typedef struct {
    zframe_t *client;           //  Routing id of the client socket
    zframe_t *request;          //  Request id to echo
} s_recipient_t;

struct _s_call_t {
    uint64_t number;            //  Call id as a number; also its order
    char id [24];               //  Call id as text
    s_context_t *context;       //  Context it belongs to
    act_call_t *call;           //  The parsed call, holding its JSON
    char *text;                 //  The call as submitted (JSON text)
    s_activity_t *activity;     //  Activity (its _tool)
    s_state_t state;            //  Where it is in its life
    bool backoff;               //  Queued, but waiting its retry delay
    long long attempts;         //  Dispatches to a worker so far
    act_retry_t retry;          //  Retry policy, every field set
    long long timeout_ms;       //  Start-to-close limit of one attempt
    s_worker_t *worker;         //  Worker running the current attempt
    char task [48];             //  Current task id: "<call>.<attempt>"
    void *queue_handle;         //  Handle in activity->queue when queued
    uint32_t timer;             //  Generation: timers of older ones are void
    uint32_t round;             //  Evaluation round (dependencies)
    size_t waiting_on;          //  Producers not ended in this round
    zlistx_t *waiters;          //  s_waiter_t * of calls waiting for it
    s_target_t *targets;        //  Its registrations as a producer
    size_t ntargets;            //  Number of targets
    zlistx_t *recipients;       //  s_recipient_t * that get its DONE
    json_t *progress;           //  Latest PROGRESS details, or NULL
    uint64_t stamp;             //  Marks it found in one producer lookup
};

struct _s_context_t {
    char *id;                   //  Context id
    act_ctx_t *ctx;             //  Messages' index (always loaded here)
    bool stored;                //  The store knows the context
    zhashx_t *producers;        //  Kind -> s_pnode_t: live output targets
    size_t live;                //  Calls of this context not ended
    long long used;             //  Last use, for eviction
};

struct _s_activity_t {
    char *name;                 //  Activity (tool) name
    zlistx_t *queue;            //  s_call_t ready for a worker, FIFO
    zlistx_t *workers;          //  s_worker_t serving it
    size_t backlog;             //  Calls waiting or queued, for max_queue
    size_t queued;              //  Calls queued (STATS)
    size_t running;             //  Calls running
    uint64_t done;              //  Calls ended since start
    const act_activity_settings_t *settings;  //  Its limits
};

struct _s_worker_t {
    char *key;                  //  Routing id in hex (key in workers)
    zframe_t *identity;         //  Routing id
    s_protocol_t protocol;      //  ACT/1 or Majordomo 0.1 / 0.2
    char *name;                 //  Name it gave, or its routing id
    char *lang;                 //  Language it gave, or ""
    size_t capacity;            //  Tasks it may hold at once
    zhashx_t *tasks;            //  Task ids it holds (answered or not)
    zlistx_t *activities;       //  s_activity_t it serves
    size_t cursor;              //  Round robin over its activities
    long long heard;            //  Last message from it
    long long sent;             //  Last message to it
    long long used;             //  Last dispatch to it
};

//  A timer: a deadline, a schedule timeout or a retry delay of one call
typedef enum { T_DEADLINE, T_SCHEDULE, T_RETRY } s_timer_type_t;
typedef struct {
    long long at;               //  When it fires (monotonic ms)
    uint64_t number;            //  Call it belongs to
    uint32_t generation;        //  Void unless equal to the call's timer
    s_timer_type_t type;        //  What it means
} s_timer_t;

//  The most frames a message of the broker has (a Majordomo 0.1 TASK: 7)
#define S_OUT_PARTS 8

//  A message waiting for the end of the pass. Its frames are libzmq
//  messages built in place: a CZMQ message costs a frame and a list node
//  per frame, which were a tenth of the broker's instructions per call.
typedef struct {
    zmq_msg_t parts [S_OUT_PARTS];  //  The frames, routing id first
    size_t nparts;              //  Frames built
    bool to_worker;             //  Which socket
    bool durable;               //  A reply that promises stored state
} s_out_t;

struct _act_broker_t {
    act_settings_t *settings;   //  What it runs with (not owned)
    act_store_t *store;         //  Durable state
    zsock_t *clients;           //  ROUTER for clients, NULL in-process
    zsock_t *workers_socket;    //  ROUTER for workers, NULL in-process
    zhashx_t *contexts;         //  Context id -> s_context_t (loaded)
    zhashx_t *calls;            //  Call id -> s_call_t, calls not ended
    zhashx_t *keys;             //  context "\x1f" _id -> s_call_t
    zhashx_t *activities;       //  Name -> s_activity_t
    zhashx_t *workers;          //  Routing id hex -> s_worker_t
    s_timer_t *timers;          //  Min-heap by at
    size_t ntimers;             //  Timers in the heap
    size_t timers_size;         //  Slots allocated
    s_out_t *outbox;            //  Messages sent after the commit, in order
    size_t noutbox;             //  Messages in outbox
    size_t outbox_size;         //  Room in outbox
    uint64_t *todo;             //  Calls to evaluate again (numbers)
    size_t ntodo;               //  Entries in todo
    size_t todo_size;           //  Slots allocated
    uint64_t stamp;             //  Current producer lookup
    long long started;          //  Start time (monotonic ms)
    long long heartbeat_at;     //  Next heartbeat round
    long long evict_at;         //  Next eviction round
    long long renew_at;         //  Shared store: next lease renewal
    long long renewed;          //  Shared store: last successful renewal
    long long orphans_at;       //  Shared store: next look for orphans
    zlistx_t *adopt;            //  Contexts with calls to recover, not loaded yet
    size_t waiting;             //  Live calls waiting
    size_t queued;              //  Live calls queued
    size_t running;             //  Live calls running
    bool stopping;              //  Shutting down: no new calls, no dispatch
    long long stop_deadline;    //  End of the shutdown grace period
    uint64_t commits;           //  Commits done
    uint64_t committed;         //  Writes committed, for batch sizes
    zcert_t *server_cert;       //  CURVE: the broker's keypair, or NULL
    zsock_t *zap;               //  CURVE: the ZAP handler (REP)
    zcertstore_t *client_keys;  //  CURVE: public keys allowed as clients
    zcertstore_t *worker_keys;  //  CURVE: public keys allowed as workers
};

static void s_call_finish (act_broker_t *self, s_call_t *call, const char *status,
                           json_t *error, const json_t *result, long long branch);
static void s_call_finish_text (act_broker_t *self, s_call_t *call, const char *status,
                                json_t *error, const json_t *result,
                                const char *result_text, long long branch);
static void s_dispatch_activity (act_broker_t *self, s_activity_t *activity);
static void s_dispatch_worker (act_broker_t *self, s_worker_t *worker);
static void s_worker_dead (act_broker_t *self, s_worker_t *worker, const char *why);
static bool s_client_allowed (act_broker_t *self, zframe_t *frame);


//  --------------------------------------------------------------------------
//  Small helpers

static bool
s_frame_is (zframe_t *frame, const char *text)
{
    return frame && zframe_size (frame) == strlen (text)
        && memcmp (zframe_data (frame), text, zframe_size (frame)) == 0;
}

//  The same for a libzmq message
static bool
s_msg_is (zmq_msg_t *msg, const char *text)
{
    return zmq_msg_size (msg) == strlen (text)
        && memcmp (zmq_msg_data (msg), text, zmq_msg_size (msg)) == 0;
}

//  The frame as a C string (the caller frees); NULL when it holds a NUL
static char *
s_frame_string (zframe_t *frame)
{
    if (!frame || memchr (zframe_data (frame), 0, zframe_size (frame)))
        return NULL;
    return strndup ((const char *) zframe_data (frame), zframe_size (frame));
}

static json_t *
s_error_json (const char *code, const char *message)
{
    return json_pack ("{ssss}", "code", code, "message", message);
}

//  Look a live call up by number
static s_call_t *
s_call_lookup (act_broker_t *self, uint64_t number)
{
    char id [24];
    snprintf (id, sizeof id, "%" PRIu64, number);
    return (s_call_t *) zhashx_lookup (self->calls, id);
}

//  Parse a decimal call id; 0 when it is not one
static uint64_t
s_parse_number (const char *text)
{
    if (!text || !*text || strlen (text) > 19 || (text [0] == '0'))
        return 0;
    for (const char *c = text; *c; c++)
        if (*c < '0' || *c > '9')
            return 0;
    return strtoull (text, NULL, 10);
}


//  --------------------------------------------------------------------------
//  The outbox: everything a pass sends leaves after its commit

//  A new message at the end of the outbox. The caller adds its frames at
//  once: the next s_out_new may move it (libzmq messages may be moved as
//  plain memory, which is what zmq_msg_move does)
static s_out_t *
s_out_new (act_broker_t *self, bool to_worker, bool durable)
{
    if (self->noutbox == self->outbox_size) {
        self->outbox_size = self->outbox_size? self->outbox_size * 2: 256;
        self->outbox = realloc (self->outbox, self->outbox_size * sizeof (s_out_t));
        assert (self->outbox);
    }
    s_out_t *out = &self->outbox [self->noutbox++];
    out->nparts = 0;
    out->to_worker = to_worker;
    out->durable = durable;
    return out;
}

//  Add a frame of size bytes to out; nothing when out is NULL
static void
s_out_add (s_out_t *out, const void *data, size_t size)
{
    if (!out)
        return;
    assert (out->nparts < S_OUT_PARTS);         //  The broker's own messages
    zmq_msg_t *part = &out->parts [out->nparts++];
    if (zmq_msg_init_size (part, size)) {
        zsys_error ("out of memory for a frame of %zu bytes", size);
        abort ();                               //  As CZMQ's zframe_new would
    }
    if (size)
        memcpy (zmq_msg_data (part), data, size);
}

static void
s_out_addstr (s_out_t *out, const char *string)
{
    s_out_add (out, string, strlen (string));
}

static void
s_out_frame (s_out_t *out, zframe_t *frame)
{
    s_out_add (out, zframe_data (frame), zframe_size (frame));
}

//  Free out's frames (sent ones are empty already)
static void
s_out_close (s_out_t *out)
{
    for (size_t i = 0; i < out->nparts; i++)
        zmq_msg_close (&out->parts [i]);
    out->nparts = 0;
}

//  A reply to a client, [client][ACTC01][verb][request], in the outbox:
//  the caller adds its body frames
static s_out_t *
s_reply_new (act_broker_t *self, zframe_t *client, zframe_t *request, const char *verb,
             bool durable)
{
    s_out_t *out = s_out_new (self, false, durable);
    s_out_frame (out, client);
    s_out_addstr (out, S_CLIENT_HEADER);
    s_out_addstr (out, verb);
    s_out_frame (out, request);
    return out;
}

static void
s_reply_json (act_broker_t *self, zframe_t *client, zframe_t *request,
              const char *verb, const json_t *body, bool durable)
{
    s_out_t *out = s_reply_new (self, client, request, verb, durable);
    char *text = act_json_dump (body);
    s_out_addstr (out, text);
    free (text);
}

static void
s_reply_error (act_broker_t *self, zframe_t *client, zframe_t *request,
               const char *command, act_err_t *err)
{
    act_log (LOG_INFO, "client request %s refused: %s: %s", command, err->code, err->message);
    s_out_t *out = s_reply_new (self, client, request, "ERROR", false);
    s_out_addstr (out, err->code);
    s_out_addstr (out, err->message);
}

//  A message to a worker in its own protocol, in the outbox: the caller
//  adds its argument frames. NULL (adding to it does nothing) for a
//  command the worker's protocol does not have.
static s_out_t *
s_send_worker (act_broker_t *self, s_worker_t *worker, const char *command)
{
    s_out_t *out = NULL;
    if (worker->protocol == S_ACTW) {
        out = s_out_new (self, true, false);
        s_out_frame (out, worker->identity);
        s_out_addstr (out, S_WORKER_HEADER);
        s_out_addstr (out, command);
    }
    else {
        //  Majordomo: commands are one byte; 0.1 puts an empty frame first
        byte code = 0;
        bool v1 = worker->protocol == S_MDP1;
        if (streq (command, "TASK"))
            code = 0x02;
        else
        if (streq (command, "HEARTBEAT"))
            code = v1? 0x04: 0x05;
        else
        if (streq (command, "DISCONNECT"))
            code = v1? 0x05: 0x06;
        else
            return NULL;            //  Majordomo has no CANCEL
        out = s_out_new (self, true, false);
        s_out_frame (out, worker->identity);
        if (v1)
            s_out_add (out, "", 0);
        s_out_addstr (out, v1? S_MDPW01: S_MDPW02);
        s_out_add (out, &code, 1);
    }
    worker->sent = act_clock_ms ();
    return out;
}

static void
s_disconnect_peer (act_broker_t *self, zframe_t *identity, s_protocol_t protocol,
                   const char *reason)
{
    s_worker_t stranger = { .identity = identity, .protocol = protocol };
    s_out_t *out = s_send_worker (self, &stranger, "DISCONNECT");
    if (protocol == S_ACTW)
        s_out_addstr (out, reason);
}


//  --------------------------------------------------------------------------
//  Timers: a binary heap; a call's older timers are voided by its counter

static void
s_timer_set (act_broker_t *self, s_call_t *call, s_timer_type_t type, long long at)
{
    if (self->ntimers == self->timers_size) {
        self->timers_size = self->timers_size? self->timers_size * 2: 256;
        self->timers = realloc (self->timers, self->timers_size * sizeof (s_timer_t));
    }
    size_t index = self->ntimers++;
    s_timer_t timer = { at, call->number, ++call->timer, type };
    while (index > 0 && self->timers [(index - 1) / 2].at > at) {
        self->timers [index] = self->timers [(index - 1) / 2];
        index = (index - 1) / 2;
    }
    self->timers [index] = timer;
}

static s_timer_t
s_timer_pop (act_broker_t *self)
{
    s_timer_t top = self->timers [0];
    s_timer_t last = self->timers [--self->ntimers];
    size_t index = 0;
    while (true) {
        size_t child = index * 2 + 1;
        if (child >= self->ntimers)
            break;
        if (child + 1 < self->ntimers && self->timers [child + 1].at < self->timers [child].at)
            child++;
        if (self->timers [child].at >= last.at)
            break;
        self->timers [index] = self->timers [child];
        index = child;
    }
    if (self->ntimers)
        self->timers [index] = last;
    return top;
}


//  --------------------------------------------------------------------------
//  Contexts: loaded on first use from the store, evicted when idle

static int
s_replay (const json_t *message, void *arg)
{
    act_err_t err = { 0 };
    if (act_ctx_replay ((act_ctx_t *) arg, message, &err))
        act_log (LOG_ERR, "context %s: stored message skipped: %s",
                 act_ctx_id ((act_ctx_t *) arg), err.message);
    return 0;
}

static void
s_pnode_destroy (s_pnode_t **self_p)
{
    s_pnode_t *self = *self_p;
    if (!self)
        return;
    if (self->children) {
        for (s_pnode_t *child = zhashx_first (self->children); child;
             child = zhashx_next (self->children))
            s_pnode_destroy (&child);
        zhashx_destroy (&self->children);
    }
    s_pnode_destroy (&self->append);
    zlistx_destroy (&self->targets);
    free (self->key);
    free (self);
    *self_p = NULL;
}

static void
s_context_destroy (void **item)
{
    s_context_t *context = (s_context_t *) *item;
    if (!context)
        return;
    for (s_pnode_t *root = zhashx_first (context->producers); root;
         root = zhashx_next (context->producers))
        s_pnode_destroy (&root);
    zhashx_destroy (&context->producers);
    act_ctx_destroy (&context->ctx);
    free (context->id);
    free (context);
    *item = NULL;
}

static int s_recover_one (const json_t *record, void *arg);

//  The context named id, loaded, when this broker may serve it: from the
//  store if it is there; else, with create, a new one the store learns of
//  when something is accepted. On a shared store the broker first claims
//  the context (taking it over when its owner is dead) and then recovers
//  the calls of it that had not ended. Returns NULL with err set: not_found
//  (no such context and create off), moved (another live broker owns it;
//  the message is that broker's client endpoint), internal (store error).
static s_context_t *
s_context (act_broker_t *self, const char *id, bool create, act_err_t *err)
{
    s_context_t *context = (s_context_t *) zhashx_lookup (self->contexts, id);
    if (context) {
        context->used = act_clock_ms ();
        return context;
    }
    bool stored = act_store_has_context (self->store, id);
    if (!stored && !create) {
        act_err_set (err, ACT_E_NOT_FOUND, "no context %s", id);
        return NULL;
    }
    bool shared = act_store_shared (self->store);
    if (shared) {
        char *owner = NULL;
        int rc = act_store_claim (self->store, id, &owner);
        if (rc == 0)
            act_err_set (err, ACT_E_MOVED, "%s", owner? owner: "");
        else
        if (rc < 0)
            act_err_set (err, ACT_E_INTERNAL, "the store could not tell who owns context %s", id);
        free (owner);
        if (rc <= 0)
            return NULL;
    }
    context = calloc (1, sizeof *context);
    context->id = strdup (id);
    context->ctx = act_ctx_new (id);
    context->stored = stored;
    context->producers = zhashx_new ();
    context->used = act_clock_ms ();
    if (stored)
        act_store_messages (self->store, id, s_replay, context->ctx);
    zhashx_insert (self->contexts, id, context);
    //  Its calls that had not ended come back with it (after a restart, or
    //  a takeover from a dead broker)
    if (stored)
        act_store_pending_in (self->store, id, s_recover_one, self);
    return context;
}

//  Forget a context made for a request that was refused
static void
s_context_release (act_broker_t *self, s_context_t *context)
{
    if (context && !context->stored && context->live == 0)
        zhashx_delete (self->contexts, context->id);
}

//  Make sure the store knows the context (on the first accepted write)
static void
s_context_store (act_broker_t *self, s_context_t *context)
{
    if (!context->stored) {
        act_store_put_context (self->store, context->id);
        context->stored = true;
    }
}

//  Contexts with no live call leave memory when idle for context_idle_ms,
//  and the least recently used leave when more than max_contexts are
//  loaded; they come back from the store on their next use
static int
s_compare_used (const void *a, const void *b)
{
    long long left = (*(s_context_t * const *) a)->used;
    long long right = (*(s_context_t * const *) b)->used;
    return left < right? -1: left > right;
}

static void
s_contexts_evict (act_broker_t *self, long long now)
{
    size_t loaded = zhashx_size (self->contexts);
    s_context_t **idle = malloc ((loaded + 1) * sizeof (s_context_t *));
    size_t count = 0;
    for (s_context_t *context = zhashx_first (self->contexts); context;
         context = zhashx_next (self->contexts))
        if (context->live == 0 && context->stored)
            idle [count++] = context;
    qsort (idle, count, sizeof (s_context_t *), s_compare_used);
    size_t excess = loaded > (size_t) self->settings->max_contexts
                  ? loaded - (size_t) self->settings->max_contexts: 0;
    size_t evicted = 0;
    for (size_t i = 0; i < count; i++)
        if (i < excess || now - idle [i]->used > self->settings->context_idle_ms) {
            zhashx_delete (self->contexts, idle [i]->id);
            evicted++;
        }
    if (evicted)
        act_log (LOG_DEBUG, "%zu contexts left memory (%zu loaded)", evicted,
                 zhashx_size (self->contexts));
    free (idle);
}


//  --------------------------------------------------------------------------
//  The producer index. Each live call with an output path registers every
//  target of every alternative. A reference that is absent is waited for
//  only if an earlier live call has a target on the same kind whose path
//  equals it, is an ancestor of it or a descendant of it, and that target
//  is global or in the reader's instance (SEMANTICS.md section 7).

static s_pnode_t *
s_pnode_child (s_pnode_t *node, const act_seg_t *seg, bool create)
{
    if (seg->type == ACT_SEG_APPEND) {
        if (!node->append && create) {
            node->append = calloc (1, sizeof (s_pnode_t));
            node->append->parent = node;
        }
        return node->append;
    }
    s_pnode_t *child = node->children? zhashx_lookup (node->children, seg->key): NULL;
    if (!child && create) {
        if (!node->children)
            node->children = zhashx_new ();
        child = calloc (1, sizeof (s_pnode_t));
        child->parent = node;
        child->key = strdup (seg->key);
        zhashx_insert (node->children, seg->key, child);
    }
    return child;
}

static void
s_producer_register (s_context_t *context, s_call_t *call)
{
    act_expr_t *output = call->call->output;
    if (!output)
        return;
    size_t total = 0;
    for (size_t a = 0; a < output->nalts; a++)
        total += output->alts [a].nrefs;
    call->targets = calloc (total, sizeof (s_target_t));
    for (size_t a = 0; a < output->nalts; a++)
        for (size_t r = 0; r < output->alts [a].nrefs; r++) {
            act_ref_t *ref = &output->alts [a].refs [r];
            s_pnode_t *node = zhashx_lookup (context->producers, ref->kind);
            if (!node) {
                node = calloc (1, sizeof (s_pnode_t));
                zhashx_insert (context->producers, ref->kind, node);
            }
            node->count++;
            for (size_t s = 0; s < ref->nsegs; s++) {
                node = s_pnode_child (node, &ref->segs [s], true);
                node->count++;
            }
            if (!node->targets)
                node->targets = zlistx_new ();
            s_target_t *target = &call->targets [call->ntargets++];
            target->call = call;
            target->node = node;
            target->handle = zlistx_add_end (node->targets, target);
        }
}

static void
s_producer_unregister (s_context_t *context, s_call_t *call)
{
    for (size_t i = 0; i < call->ntargets; i++) {
        s_pnode_t *node = call->targets [i].node;
        zlistx_delete (node->targets, call->targets [i].handle);
        //  Walk up, dropping nodes nothing is registered under any more
        while (node) {
            s_pnode_t *parent = node->parent;
            if (--node->count == 0 && parent) {
                if (node == parent->append)
                    parent->append = NULL;
                else
                    zhashx_delete (parent->children, node->key);
                s_pnode_destroy (&node);
            }
            else
            if (node->count == 0 && !parent) {
                //  A kind's root: keep it; it is small and reused
            }
            node = parent;
        }
    }
    free (call->targets);
    call->targets = NULL;
    call->ntargets = 0;
}

//  Add to found the calls registered at node that can feed reader (once
//  each per lookup stamp). Returns how many can, found before or not.
static size_t
s_producers_at (act_broker_t *self, s_pnode_t *node, s_call_t *reader, zlistx_t *found)
{
    size_t matched = 0;
    for (s_target_t *target = node->targets? zlistx_first (node->targets): NULL; target;
         target = zlistx_next (node->targets)) {
        s_call_t *producer = target->call;
        const char *instance = producer->call->instance;
        if (producer->number >= reader->number)
            continue;           //  Only earlier calls produce for a call
        if (instance && !(reader->call->instance && streq (instance, reader->call->instance)))
            continue;           //  Instance targets feed only their instance
        matched++;
        if (producer->stamp != self->stamp) {
            producer->stamp = self->stamp;
            zlistx_add_end (found, producer);
        }
    }
    return matched;
}

static size_t
s_producers_below (act_broker_t *self, s_pnode_t *node, s_call_t *reader, zlistx_t *found)
{
    size_t added = 0;
    if (node->children)
        for (s_pnode_t *child = zhashx_first (node->children); child;
             child = zhashx_next (node->children)) {
            added += s_producers_at (self, child, reader, found)
                   + s_producers_below (self, child, reader, found);
        }
    if (node->append)
        added += s_producers_at (self, node->append, reader, found)
               + s_producers_below (self, node->append, reader, found);
    return added;
}

//  Find the calls that could still write ref for reader; "-" targets match
//  any segment
static size_t
s_producers_walk (act_broker_t *self, s_pnode_t *node, const act_ref_t *ref,
                  size_t depth, s_call_t *reader, zlistx_t *found)
{
    size_t added = s_producers_at (self, node, reader, found);
    if (depth == ref->nsegs)
        return added + s_producers_below (self, node, reader, found);
    s_pnode_t *child = s_pnode_child (node, &ref->segs [depth], false);
    if (child)
        added += s_producers_walk (self, child, ref, depth + 1, reader, found);
    if (node->append)
        added += s_producers_walk (self, node->append, ref, depth + 1, reader, found);
    return added;
}


//  --------------------------------------------------------------------------
//  Activities and workers

static void
s_activity_destroy (void **item)
{
    s_activity_t *activity = (s_activity_t *) *item;
    zlistx_destroy (&activity->queue);
    zlistx_destroy (&activity->workers);
    free (activity->name);
    free (activity);
    *item = NULL;
}

static s_activity_t *
s_activity (act_broker_t *self, const char *name)
{
    s_activity_t *activity = (s_activity_t *) zhashx_lookup (self->activities, name);
    if (!activity) {
        activity = calloc (1, sizeof *activity);
        activity->name = strdup (name);
        activity->queue = zlistx_new ();
        activity->workers = zlistx_new ();
        activity->settings = act_settings_activity (self->settings, name);
        zhashx_insert (self->activities, name, activity);
    }
    return activity;
}

static void
s_worker_destroy (void **item)
{
    s_worker_t *worker = (s_worker_t *) *item;
    zframe_destroy (&worker->identity);
    zhashx_destroy (&worker->tasks);
    zlistx_destroy (&worker->activities);
    free (worker->key);
    free (worker->name);
    free (worker->lang);
    free (worker);
    *item = NULL;
}

static bool
s_worker_free (s_worker_t *worker)
{
    return zhashx_size (worker->tasks) < worker->capacity;
}

//  The worker to give the activity's next call: free capacity, least
//  loaded for its capacity, then least recently used. NULL when none.
static s_worker_t *
s_worker_pick (s_activity_t *activity)
{
    s_worker_t *best = NULL;
    for (s_worker_t *worker = zlistx_first (activity->workers); worker;
         worker = zlistx_next (activity->workers)) {
        if (!s_worker_free (worker))
            continue;
        if (!best) {
            best = worker;
            continue;
        }
        size_t load = zhashx_size (worker->tasks) * best->capacity;
        size_t best_load = zhashx_size (best->tasks) * worker->capacity;
        if (load < best_load || (load == best_load && worker->used < best->used))
            best = worker;
    }
    return best;
}


//  --------------------------------------------------------------------------
//  A call's life: its record in the store

//  The call's record in the store, state given (texts borrowed)
static act_call_record_t
s_record (s_call_t *call, const char *state, const char *outcome, char **progress)
{
    *progress = call->progress? act_json_dump (call->progress): NULL;
    return (act_call_record_t) {
        call->number, call->context->id, state, call->attempts, call->text,
        call->call->id, outcome, *progress, NULL, NULL
    };
}

//  Store the call's current state (in the pass's batch)
static void
s_call_save (act_broker_t *self, s_call_t *call)
{
    char *progress;
    act_call_record_t record = s_record (call, s_state_names [call->state], NULL, &progress);
    act_store_update_call (self->store, &record);
    free (progress);
}

//  Append to the JSON object text in object (its closing brace still
//  there) the member "name": value, value being JSON text already; object
//  must have room (the caller sizes it)
static void
s_splice (char *object, size_t *used, const char *name, const char *value)
{
    size_t at = *used - 1;                      //  Over the closing brace
    if (at > 1)
        object [at++] = ',';
    object [at++] = '"';
    size_t length = strlen (name);
    memcpy (object + at, name, length);
    at += length;
    object [at++] = '"';
    object [at++] = ':';
    length = strlen (value);
    memcpy (object + at, value, length);
    at += length;
    object [at++] = '}';
    object [at] = 0;
    *used = at;
}

//  The stored text of a message of call: the message, then "data" (when
//  data_text is given: the display form as text, made without serializing
//  the value again), then "_call" with the call's own text (as submitted)
static char *
s_message_text (json_t *message, const char *data_text, const char *call_text,
                size_t *size)
{
    if (data_text)
        json_object_del (message, "data");
    char *text = act_json_dump (message);
    *size = strlen (text);
    char *joined = malloc (*size + (data_text? strlen (data_text): 0)
                           + strlen (call_text) + 32);
    memcpy (joined, text, *size + 1);
    free (text);
    if (data_text)
        s_splice (joined, size, "data", data_text);
    s_splice (joined, size, "_call", call_text);
    return joined;
}

//  The display form of a value written at ref, from the value's JSON text:
//  one object level per segment around it
static char *
s_nest_text (const act_ref_t *ref, const char *value_text)
{
    size_t size = strlen (value_text) + 1;
    char **keys = calloc (ref->nsegs + 1, sizeof (char *));
    for (size_t i = 0; i < ref->nsegs; i++) {
        json_t *key = json_string (ref->segs [i].key);
        keys [i] = act_json_dump (key);
        json_decref (key);
        size += strlen (keys [i]) + 3;
    }
    char *text = malloc (size);
    size_t used = 0;
    for (size_t i = 0; i < ref->nsegs; i++) {
        size_t length = strlen (keys [i]);
        text [used++] = '{';
        memcpy (text + used, keys [i], length);
        used += length;
        text [used++] = ':';
    }
    size_t length = strlen (value_text);
    memcpy (text + used, value_text, length);
    used += length;
    for (size_t i = 0; i < ref->nsegs; i++) {
        text [used++] = '}';
        free (keys [i]);
    }
    text [used] = 0;
    free (keys);
    return text;
}

static void
s_recipient_destroy (void **item)
{
    s_recipient_t *recipient = (s_recipient_t *) *item;
    zframe_destroy (&recipient->client);
    zframe_destroy (&recipient->request);
    free (recipient);
    *item = NULL;
}

static void
s_recipient_add (s_call_t *call, zframe_t *client, zframe_t *request)
{
    if (!client)
        return;
    for (s_recipient_t *known = zlistx_first (call->recipients); known;
         known = zlistx_next (call->recipients))
        if (zframe_eq (known->client, client) && zframe_eq (known->request, request))
            return;             //  One DONE per request
    s_recipient_t *recipient = malloc (sizeof *recipient);
    recipient->client = zframe_dup (client);
    recipient->request = zframe_dup (request);
    zlistx_add_end (call->recipients, recipient);
}

static void
s_call_destroy (s_call_t **call_p)
{
    s_call_t *call = *call_p;
    if (!call)
        return;
    act_call_destroy (&call->call);
    free (call->text);
    json_decref (call->progress);
    zlistx_destroy (&call->waiters);
    zlistx_destroy (&call->recipients);
    free (call->targets);
    free (call);
    *call_p = NULL;
}

static void
s_call_destructor (void **item)
{
    s_call_destroy ((s_call_t **) item);
}

//  A call for context from its JSON, and its text as submitted (NULL: made
//  from the JSON), not yet numbered or accepted. NULL with err set when it
//  is not a valid call.
static s_call_t *
s_call_new (act_broker_t *self, s_context_t *context, json_t *json, const char *text,
            act_err_t *err)
{
    act_call_t *parsed = act_call_parse (json, err);
    if (!parsed)
        return NULL;
    s_call_t *call = calloc (1, sizeof *call);
    call->call = parsed;
    call->text = text? strdup (text): act_json_dump (json);
    call->context = context;
    call->activity = s_activity (self, parsed->tool);
    const act_activity_settings_t *defaults = call->activity->settings;
    call->retry = defaults->retry;
    if (parsed->retry.max_attempts > 0)
        call->retry.max_attempts = parsed->retry.max_attempts;
    if (parsed->retry.initial_ms >= 0)
        call->retry.initial_ms = parsed->retry.initial_ms;
    if (parsed->retry.backoff >= 1.0)
        call->retry.backoff = parsed->retry.backoff;
    if (parsed->retry.max_ms >= 0)
        call->retry.max_ms = parsed->retry.max_ms;
    call->timeout_ms = parsed->timeout_ms > 0? parsed->timeout_ms: defaults->timeout_ms;
    call->waiters = zlistx_new ();
    zlistx_set_destructor (call->waiters, (zlistx_destructor_fn *) zstr_free);
    call->recipients = zlistx_new ();
    zlistx_set_destructor (call->recipients, s_recipient_destroy);
    return call;
}


//  --------------------------------------------------------------------------
//  A call's life: dependencies. Evaluate each reference expression in the
//  parameters: present, pending (an earlier live call could write it), or
//  impossible. Fallbacks (||) wait while an earlier alternative is
//  pending; a gate (&&) needs every operand.

typedef enum { E_READY, E_WAIT, E_UNRESOLVED } s_eval_t;
typedef enum { X_PRESENT, X_PENDING, X_IMPOSSIBLE } s_presence_t;

static s_presence_t
s_expression (act_broker_t *self, s_call_t *call, act_expr_t *expr, zlistx_t *found)
{
    act_ctx_t *ctx = call->context->ctx;
    for (size_t a = 0; a < expr->nalts; a++) {
        s_presence_t presence = X_PRESENT;
        zlistx_t *producers = zlistx_new ();
        self->stamp++;
        for (size_t r = 0; r < expr->alts [a].nrefs && presence != X_IMPOSSIBLE; r++) {
            act_ref_t *ref = &expr->alts [a].refs [r];
            if (act_ctx_has (ctx, ref, call->call->instance))
                continue;
            s_pnode_t *root = zhashx_lookup (call->context->producers, ref->kind);
            if (root && s_producers_walk (self, root, ref, 0, call, producers))
                presence = X_PENDING;
            else
                presence = X_IMPOSSIBLE;
        }
        if (presence == X_PENDING)
            for (s_call_t *p = zlistx_first (producers); p; p = zlistx_next (producers))
                zlistx_add_end (found, p);
        zlistx_destroy (&producers);
        if (presence != X_IMPOSSIBLE)
            return presence;
    }
    return X_IMPOSSIBLE;
}

static s_eval_t
s_evaluate (act_broker_t *self, s_call_t *call, act_err_t *err)
{
    call->round++;
    zlistx_t *found = zlistx_new ();
    s_eval_t result = E_READY;
    for (size_t i = 0; i < call->call->nrefs; i++) {
        act_expr_t *expr = call->call->refs [i];
        s_presence_t presence = s_expression (self, call, expr, found);
        if (presence == X_IMPOSSIBLE) {
            act_err_set (err, ACT_E_UNRESOLVED_REFERENCE,
                         "'%.200s' is absent and no pending call of context %s can write it",
                         expr->text, call->context->id);
            result = E_UNRESOLVED;
            break;
        }
    }
    if (result == E_READY && zlistx_size (found)) {
        //  Wait for each producer once, however many references it feeds
        uint64_t stamp = ++self->stamp;
        call->waiting_on = 0;
        for (s_call_t *producer = zlistx_first (found); producer;
             producer = zlistx_next (found)) {
            if (producer->stamp == stamp)
                continue;
            producer->stamp = stamp;
            char *waiter = malloc (sizeof (s_waiter_t));
            *(s_waiter_t *) waiter = (s_waiter_t) { call->number, call->round };
            zlistx_add_end (producer->waiters, waiter);
            call->waiting_on++;
        }
        result = E_WAIT;
    }
    zlistx_destroy (&found);
    return result;
}

//  Calls whose producers all ended are evaluated again at the end of the
//  handler that ended them: a worklist, not recursion, so a chain of
//  10 000 skipped calls costs no stack
static void
s_todo_add (act_broker_t *self, uint64_t number)
{
    if (self->ntodo == self->todo_size) {
        self->todo_size = self->todo_size? self->todo_size * 2: 64;
        self->todo = realloc (self->todo, self->todo_size * sizeof (uint64_t));
    }
    self->todo [self->ntodo++] = number;
}


//  --------------------------------------------------------------------------
//  A call's life: states

//  Leave the current state: undo what it counted and held
static void
s_call_leave (act_broker_t *self, s_call_t *call)
{
    call->timer++;                  //  Its pending timer, if any, is void
    switch (call->state) {
        case S_WAITING:
            self->waiting--;
            call->activity->backlog--;
            break;
        case S_QUEUED:
            self->queued--;
            call->activity->queued--;
            call->activity->backlog--;
            if (call->queue_handle) {
                zlistx_delete (call->activity->queue, call->queue_handle);
                call->queue_handle = NULL;
            }
            call->backoff = false;
            break;
        case S_RUNNING:
            self->running--;
            call->activity->running--;
            call->worker = NULL;
            break;
        case S_ENDED:
            break;
    }
}

//  Queue the call for a worker (at the front for a retry), then dispatch
static void
s_call_queue (act_broker_t *self, s_call_t *call, bool front)
{
    s_call_leave (self, call);
    call->state = S_QUEUED;
    self->queued++;
    call->activity->queued++;
    call->activity->backlog++;
    call->queue_handle = front? zlistx_add_start (call->activity->queue, call)
                              : zlistx_add_end (call->activity->queue, call);
    s_timer_set (self, call, T_SCHEDULE,
                 act_clock_ms () + call->activity->settings->schedule_timeout_ms);
    s_dispatch_activity (self, call->activity);
}

//  Queue the call after its retry delay
static void
s_call_backoff (act_broker_t *self, s_call_t *call, long long delay)
{
    s_call_leave (self, call);
    call->state = S_QUEUED;
    call->backoff = true;
    self->queued++;
    call->activity->queued++;
    call->activity->backlog++;
    s_timer_set (self, call, T_RETRY, act_clock_ms () + delay);
}

//  Send the call's next attempt to worker
static void
s_call_dispatch (act_broker_t *self, s_call_t *call, s_worker_t *worker)
{
    act_err_t err = { 0 };
    json_t *params = act_call_params (call->call, call->context->ctx, &err);
    if (!params) {
        //  A value present when the call became ready was erased since:
        //  wait again if a pending call can write it, else skip
        s_call_leave (self, call);
        call->state = S_WAITING;
        self->waiting++;
        call->activity->backlog++;
        s_eval_t eval = s_evaluate (self, call, &err);
        if (eval == E_WAIT)
            return;
        if (eval == E_READY)
            act_err_set (&err, ACT_E_UNRESOLVED_REFERENCE, "%s", "a reference became absent");
        s_call_finish (self, call, "skipped", s_error_json (err.code, err.message), NULL, 0);
        return;
    }
    s_call_leave (self, call);
    call->state = S_RUNNING;
    call->attempts++;
    call->worker = worker;
    self->running++;
    call->activity->running++;
    snprintf (call->task, sizeof call->task, "%s.%lld", call->id, call->attempts);
    zhashx_insert (worker->tasks, call->task, (void *) call->task);
    worker->used = act_clock_ms ();
    act_expr_t *output = call->call->output;
    s_out_t *out = s_send_worker (self, worker, "TASK");
    char *params_text = act_json_dump (params);
    if (worker->protocol == S_ACTW) {
        //  The meta's fields need no escaping (a context id's bytes, digits)
        //  but the instance, which jansson writes
        char *instance = call->call->instance
                       ? act_json_dump (json_object_get (call->call->json, "_instance")): NULL;
        char meta [512];
        snprintf (meta, sizeof meta, "{\"context\":\"%s\",\"call_id\":\"%s\",\"attempt\":%lld,"
                  "\"deadline_ms\":%lld,\"branches\":%zu,\"discard\":%s%s%s}",
                  call->context->id, call->id, call->attempts, call->timeout_ms,
                  output? output->nalts: 0, output? "false": "true",
                  instance? ",\"instance\":": "", instance? instance: "");
        free (instance);
        s_out_addstr (out, call->task);
        s_out_addstr (out, call->activity->name);
        s_out_addstr (out, params_text);
        s_out_addstr (out, meta);
    }
    else {
        //  Majordomo REQUEST: [client address][empty][body]; the task id is
        //  the client address, which the worker echoes in its reply
        s_out_addstr (out, call->task);
        s_out_add (out, "", 0);
        s_out_addstr (out, params_text);
    }
    free (params_text);
    json_decref (params);
    s_timer_set (self, call, T_DEADLINE, act_clock_ms () + call->timeout_ms);
    s_call_save (self, call);
    act_log (LOG_DEBUG, "call %s (%s) attempt %lld sent to worker %s",
             call->id, call->activity->name, call->attempts, worker->name);
}

static void
s_dispatch_activity (act_broker_t *self, s_activity_t *activity)
{
    while (!self->stopping && zlistx_size (activity->queue)) {
        s_worker_t *worker = s_worker_pick (activity);
        if (!worker)
            break;
        s_call_dispatch (self, (s_call_t *) zlistx_first (activity->queue), worker);
    }
}

//  A worker has room: serve its activities in turn, one call at a time,
//  so a flooded activity cannot starve the others
static void
s_dispatch_worker (act_broker_t *self, s_worker_t *worker)
{
    size_t count = zlistx_size (worker->activities);
    bool progress = true;
    while (progress && !self->stopping && s_worker_free (worker)) {
        progress = false;
        for (size_t k = 0; k < count && !progress; k++) {
            size_t index = (worker->cursor + k) % count;
            s_activity_t *activity = zlistx_first (worker->activities);
            for (size_t i = 0; i < index; i++)
                activity = zlistx_next (worker->activities);
            if (!zlistx_size (activity->queue))
                continue;
            s_worker_t *chosen = s_worker_pick (activity);
            if (!chosen)
                continue;
            s_call_dispatch (self, (s_call_t *) zlistx_first (activity->queue), chosen);
            worker->cursor = index + 1;
            progress = true;
        }
    }
}

//  One attempt failed: retry when the policy allows, else end the call
static void
s_call_attempt_failed (act_broker_t *self, s_call_t *call, json_t *error,
                       bool retryable, bool delay)
{
    const char *code = json_string_value (json_object_get (error, "code"));
    //  While stopping, a retry is queued like any other but not dispatched:
    //  the call is recovered and runs at the next start
    if (retryable && call->attempts < call->retry.max_attempts) {
        long long wait = 0;
        if (delay) {
            double factor = call->retry.initial_ms;
            for (long long i = 1; i < call->attempts && factor < call->retry.max_ms; i++)
                factor *= call->retry.backoff;
            wait = factor < call->retry.max_ms? (long long) factor: call->retry.max_ms;
        }
        act_log (LOG_INFO, "call %s (%s) attempt %lld failed (%s: %s); retry in %lld ms",
                 call->id, call->activity->name, call->attempts, code,
                 json_string_value (json_object_get (error, "message")), wait);
        json_decref (error);
        if (wait > 0)
            s_call_backoff (self, call, wait);
        else
            s_call_queue (self, call, true);
        s_call_save (self, call);
        return;
    }
    if (retryable && call->attempts >= call->retry.max_attempts)
        act_log (LOG_WARNING, "call %s (%s) failed after %lld attempts: %s: %s",
                 call->id, call->activity->name, call->attempts, code,
                 json_string_value (json_object_get (error, "message")));
    bool timed_out = code && (streq (code, ACT_E_TIMEOUT) || streq (code, ACT_E_NO_WORKER));
    s_call_finish (self, call, timed_out? "timeout": "error", error, NULL, 0);
}

//  Write the call's outcome into its context, as SEMANTICS.md section 7
//  says: the chosen alternative on success; on failure the error object on
//  the last alternative when there are two or more, else (or when that
//  write is refused) an error message. Fills outcome's branch, written and
//  seqs; may turn an ok into an error (type_mismatch, bad_path).
static void
s_call_write (act_broker_t *self, s_call_t *call, const char **status,
              json_t **error, const json_t *result, const char *result_text,
              long long branch, json_t *outcome)
{
    act_expr_t *output = call->call->output;
    act_ctx_t *ctx = call->context->ctx;
    json_t *messages = NULL;
    act_err_t err = { 0 };
    if (streq (*status, "ok")) {
        if (branch < 0 || (size_t) branch >= output->nalts) {
            char message [128];
            snprintf (message, sizeof message,
                      "the worker chose branch %lld; the output path has %zu",
                      branch, output->nalts);
            *error = s_error_json (ACT_E_ACTIVITY_FAILED, message);
            *status = "error";
        }
        else {
            messages = act_ctx_output (ctx, &output->alts [branch], result,
                                       call->call->method, call->call->instance,
                                       NULL, call->id, &err);
            if (!messages) {
                *error = s_error_json (err.code, err.message);
                *status = "error";
            }
        }
    }
    if (!streq (*status, "ok") && output->nalts >= 2) {
        branch = (long long) output->nalts - 1;
        json_t *value = json_pack ("{sO}", "error", *error);
        messages = act_ctx_output (ctx, &output->alts [branch], value,
                                   call->call->method, call->call->instance,
                                   NULL, call->id, &err);
        json_decref (value);
    }
    json_t *written = json_array ();
    json_t *seqs = json_array ();
    if (messages) {
        json_object_set_new (outcome, "branch", json_integer (branch));
        for (size_t i = 0; i < output->alts [branch].nrefs; i++)
            json_array_append_new (written, json_string (output->alts [branch].refs [i].text));
    }
    else {
        messages = json_array ();
        json_array_append_new (messages, act_ctx_error (ctx, *error, NULL, call->id));
    }
    //  The worker's result text is the written value: nest it as it is
    bool spliced = result_text && streq (*status, "ok");
    size_t index;
    json_t *message;
    json_array_foreach (messages, index, message) {
        json_int_t seq = json_integer_value (json_object_get (message, "_seq"));
        size_t size;
        char *data = spliced? s_nest_text (&output->alts [branch].refs [index], result_text)
                            : NULL;
        char *text = s_message_text (message, data, call->text, &size);
        free (data);
        act_store_put_message (self->store, call->context->id, (uint64_t) seq, text, size);
        free (text);
        json_array_append_new (seqs, json_integer (seq));
    }
    json_decref (messages);
    json_object_set_new (outcome, "written", written);
    json_object_set_new (outcome, "seqs", seqs);
}

//  End the call with status: write its output, store the outcome, send
//  DONE, and wake the calls that waited for it. Takes ownership of error.
static void
s_call_finish (act_broker_t *self, s_call_t *call, const char *status,
               json_t *error, const json_t *result, long long branch)
{
    s_call_finish_text (self, call, status, error, result, NULL, branch);
}

//  The same, given also the result as the worker sent it (JSON text): it
//  goes into the stored messages and the outcome as it is
static void
s_call_finish_text (act_broker_t *self, s_call_t *call, const char *status,
                    json_t *error, const json_t *result, const char *result_text,
                    long long branch)
{
    s_call_leave (self, call);
    call->state = S_ENDED;
    json_t *outcome = json_pack ("{ss}", "call_id", call->id);
    bool has_output = call->call->output != NULL;
    if (has_output && !streq (status, "cancelled"))
        s_call_write (self, call, &status, &error, result, result_text, branch, outcome);
    else
    if (has_output) {
        json_object_set_new (outcome, "written", json_array ());
        json_object_set_new (outcome, "seqs", json_array ());
    }
    json_object_set_new (outcome, "status", json_string (status));
    bool with_result = streq (status, "ok") && has_output;
    if (with_result && !result_text)
        json_object_set (outcome, "result", (json_t *) result);
    if (error)
        json_object_set (outcome, "error", error);
    json_object_set_new (outcome, "attempts", json_integer (call->attempts));

    //  Serialized once, for the store and for every DONE; the worker's
    //  result text goes in as it is
    char *outcome_text = act_json_dump (outcome);
    if (with_result && result_text) {
        size_t used = strlen (outcome_text);
        char *joined = malloc (used + strlen (result_text) + 16);
        memcpy (joined, outcome_text, used + 1);
        s_splice (joined, &used, "result", result_text);
        free (outcome_text);
        outcome_text = joined;
    }
    char *progress;
    act_call_record_t record = s_record (call, status, outcome_text, &progress);
    act_store_update_call (self->store, &record);
    free (progress);
    if (has_output)
        for (s_recipient_t *to = zlistx_first (call->recipients); to;
             to = zlistx_next (call->recipients)) {
            s_out_t *out = s_reply_new (self, to->client, to->request, "DONE", true);
            s_out_addstr (out, call->id);
            s_out_addstr (out, outcome_text);
        }
    free (outcome_text);
    if (!streq (status, "ok"))
        act_log (LOG_INFO, "call %s (%s) ended %s: %s", call->id, call->activity->name,
                 status, json_string_value (json_object_get (error, "message")));
    json_decref (outcome);
    json_decref (error);

    //  Wake the calls that waited for this one in their current round
    for (s_waiter_t *waiter = zlistx_first (call->waiters); waiter;
         waiter = zlistx_next (call->waiters)) {
        s_call_t *other = s_call_lookup (self, waiter->number);
        if (other && other->state == S_WAITING && other->round == waiter->round
        &&  --other->waiting_on == 0)
            s_todo_add (self, other->number);
    }
    s_producer_unregister (call->context, call);
    if (call->call->id) {
        char *key = zsys_sprintf ("%s\x1f%s", call->context->id, call->call->id);
        zhashx_delete (self->keys, key);
        zstr_free (&key);
    }
    call->context->live--;
    call->context->used = act_clock_ms ();
    call->activity->done++;
    zhashx_delete (self->calls, call->id);  //  Destroys the call
}

//  Evaluate again the calls whose producers have all ended
static void
s_todo_run (act_broker_t *self)
{
    //  First in, first out: calls that become ready together are queued
    //  in the order they were accepted; entries added meanwhile run too
    for (size_t next = 0; next < self->ntodo; next++) {
        s_call_t *call = s_call_lookup (self, self->todo [next]);
        if (!call || call->state != S_WAITING || call->waiting_on)
            continue;
        act_err_t err = { 0 };
        s_eval_t eval = s_evaluate (self, call, &err);
        if (eval == E_READY) {
            s_call_queue (self, call, false);
            if (call->state == S_QUEUED)
                s_call_save (self, call);
        }
        else
        if (eval == E_UNRESOLVED)
            s_call_finish (self, call, "skipped",
                           s_error_json (err.code, err.message), NULL, 0);
    }
    self->ntodo = 0;
}

//  Cancel a live call (CANCEL): a running task gets CANCEL at its worker,
//  whose slot stays taken until it answers
static void
s_call_cancel (act_broker_t *self, s_call_t *call)
{
    if (call->state == S_RUNNING)
        s_out_addstr (s_send_worker (self, call->worker, "CANCEL"), call->task);
    s_call_finish (self, call, "cancelled",
                   s_error_json (ACT_E_CANCELLED, "cancelled by a client"), NULL, 0);
}


//  --------------------------------------------------------------------------
//  Accepting calls (CALL and PLAN)

//  The call already accepted in context under client key key: a live one,
//  or the record of one that ended (*record set). NULL when none.
static s_call_t *
s_call_by_key (act_broker_t *self, const char *context, const char *key, json_t **record)
{
    *record = NULL;
    char *full = zsys_sprintf ("%s\x1f%s", context, key);
    s_call_t *call = (s_call_t *) zhashx_lookup (self->keys, full);
    zstr_free (&full);
    if (!call) {
        uint64_t number = act_store_idem (self->store, context, key);
        if (number)
            *record = act_store_call (self->store, number);
    }
    return call;
}

//  Make an accepted call live: store it, index it, and start it
static void
s_call_accept (act_broker_t *self, s_call_t *call, s_eval_t eval,
               zframe_t *client, zframe_t *request)
{
    s_context_store (self, call->context);
    zhashx_insert (self->calls, call->id, call);
    call->context->live++;
    if (call->call->id) {
        char *key = zsys_sprintf ("%s\x1f%s", call->context->id, call->call->id);
        zhashx_insert (self->keys, key, call);
        zstr_free (&key);
    }
    if (call->call->output)
        s_recipient_add (call, client, request);
    char *progress;
    act_call_record_t record = s_record (call, eval == E_WAIT? "waiting": "queued", NULL,
                                         &progress);
    char *client_hex = client? zframe_strhex (client): NULL;
    char *request_hex = client? zframe_strhex (request): NULL;
    record.client = client_hex;
    record.request = request_hex;
    act_store_put_call (self->store, &record);
    free (client_hex);
    free (request_hex);
    free (progress);
    //  Counted as waiting (its backlog was counted when prepared) until it
    //  leaves that state
    call->state = S_WAITING;
    self->waiting++;
    if (eval == E_READY)
        s_call_queue (self, call, false);
}

//  Send the outcome of a call that had already ended (an _id repeated)
static void
s_done_from_record (act_broker_t *self, json_t *record, zframe_t *client,
                    zframe_t *request)
{
    json_t *call = json_object_get (record, "call");
    if (!json_object_get (call, "_outputPath"))
        return;
    s_out_t *out = s_reply_new (self, client, request, "DONE", true);
    json_t *outcome = json_object_get (record, "outcome");
    s_out_addstr (out, json_string_value (json_object_get (outcome, "call_id")));
    char *text = act_json_dump (outcome);
    s_out_addstr (out, text);
    free (text);
}

//  Prepare the calls of a CALL (one) or PLAN (several) for context, all or
//  none: validated, numbered, evaluated against the context and earlier
//  calls, counted in their activity's backlog. Returns 0 and fills, per
//  entry: calls [i] (a new call, or NULL when the entry repeats an _id),
//  ids [i], and records [i] (null for a new call, the id of a live call,
//  or the record of an ended one). Or returns -1 with err naming the entry,
//  keeping nothing. Numbers of refused calls are not reused: a wait they
//  registered on a live call must never match a later call.
static int
s_calls_prepare (act_broker_t *self, s_context_t *context, json_t *entries,
                 const char *call_text, s_call_t **calls, s_eval_t *evals, json_t *ids,
                 json_t *records, bool plan, act_err_t *err)
{
    size_t count = json_array_size (entries);
    size_t index;
    json_t *entry;
    json_array_foreach (entries, index, entry) {
        calls [index] = s_call_new (self, context, entry, plan? NULL: call_text, err);
        if (!calls [index])
            goto refused;
        s_call_t *call = calls [index];
        if (call->call->id) {
            json_t *record;
            s_call_t *earlier = s_call_by_key (self, context->id, call->call->id, &record);
            for (size_t i = 0; !earlier && !record && i < index; i++)
                if (calls [i] && calls [i]->call->id && streq (calls [i]->call->id, call->call->id))
                    earlier = calls [i];        //  Repeated within this plan
            if (earlier) {
                json_array_append_new (ids, json_string (earlier->id));
                json_array_append_new (records, json_string (earlier->id));
                s_call_destroy (&calls [index]);
                continue;
            }
            if (record) {
                char id [24];
                snprintf (id, sizeof id, "%" JSON_INTEGER_FORMAT,
                          json_integer_value (json_object_get (record, "call_id")));
                json_array_append_new (ids, json_string (id));
                json_array_append_new (records, record);
                s_call_destroy (&calls [index]);
                continue;
            }
        }
        s_activity_t *activity = call->activity;
        if (activity->backlog >= (size_t) activity->settings->max_queue) {
            act_err_set (err, ACT_E_BUSY, "activity %s has %zu calls waiting (max_queue %lld)",
                         activity->name, activity->backlog, activity->settings->max_queue);
            s_call_destroy (&calls [index]);
            goto refused;
        }
        call->number = act_store_next_call (self->store);
        if (call->number == 0) {
            act_err_set (err, ACT_E_INTERNAL, "the store could not give out a call id");
            s_call_destroy (&calls [index]);
            goto refused;
        }
        snprintf (call->id, sizeof call->id, "%" PRIu64, call->number);
        evals [index] = s_evaluate (self, call, err);
        if (evals [index] == E_UNRESOLVED) {
            s_call_destroy (&calls [index]);
            goto refused;
        }
        activity->backlog++;
        s_producer_register (context, call);
        json_array_append_new (ids, json_string (call->id));
        json_array_append_new (records, json_null ());
    }
    return 0;

refused:
    if (plan && count > 1) {
        char *message = strdup (err->message);
        act_err_set (err, err->code, "call %zu: %s", index, message);
        free (message);
    }
    for (size_t i = 0; i < index; i++)
        if (calls [i]) {
            calls [i]->activity->backlog--;
            s_producer_unregister (context, calls [i]);
            s_call_destroy (&calls [i]);
        }
    return -1;
}

//  Forget activities nothing refers to: a refused call may have named one
//  that had never been seen, and a refused request changes nothing
static void
s_activities_prune (act_broker_t *self)
{
    zlistx_t *unused = zlistx_new ();
    for (s_activity_t *activity = zhashx_first (self->activities); activity;
         activity = zhashx_next (self->activities))
        if (zlistx_size (activity->workers) == 0 && activity->backlog == 0
        &&  activity->running == 0 && activity->done == 0)
            zlistx_add_end (unused, activity->name);
    for (char *name = zlistx_first (unused); name; name = zlistx_next (unused))
        zhashx_delete (self->activities, name);
    zlistx_destroy (&unused);
}

//  CALL and PLAN: entries is the array of calls
static void
s_submit (act_broker_t *self, zframe_t *client, zframe_t *request,
          const char *command, const char *context_id, json_t *entries,
          const char *call_text, bool plan)
{
    act_err_t err = { 0 };
    if (self->stopping) {
        act_err_set (&err, ACT_E_BUSY, "actd is shutting down");
        s_reply_error (self, client, request, command, &err);
        return;
    }
    s_context_t *context = s_context (self, context_id, true, &err);
    if (!context) {
        s_reply_error (self, client, request, command, &err);
        return;
    }
    size_t count = json_array_size (entries);
    s_call_t **calls = calloc (count, sizeof (s_call_t *));
    s_eval_t *evals = calloc (count, sizeof (s_eval_t));
    json_t *ids = json_array ();
    json_t *records = json_array ();
    if (s_calls_prepare (self, context, entries, call_text, calls, evals, ids, records,
                         plan, &err)) {
        s_reply_error (self, client, request, command, &err);
        s_context_release (self, context);
        s_activities_prune (self);
    }
    else {
        for (size_t i = 0; i < count; i++)
            if (calls [i])
                s_call_accept (self, calls [i], evals [i], client, request);
        if (plan)
            s_reply_json (self, client, request, "ACCEPTED", ids, true);
        else {
            s_out_t *out = s_reply_new (self, client, request, "ACCEPTED", true);
            s_out_addstr (out, json_string_value (json_array_get (ids, 0)));
        }
        //  Repeated _id: DONE now if it ended, else when it ends
        size_t index;
        json_t *record;
        json_array_foreach (records, index, record) {
            if (json_is_object (record))
                s_done_from_record (self, record, client, request);
            else
            if (json_is_string (record)) {
                s_call_t *earlier = (s_call_t *) zhashx_lookup (self->calls,
                                                                json_string_value (record));
                if (earlier && earlier->call->output)
                    s_recipient_add (earlier, client, request);
            }
        }
    }
    json_decref (ids);
    json_decref (records);
    free (calls);
    free (evals);
}


//  --------------------------------------------------------------------------
//  Client commands

//  Parse a JSON frame; NULL with err (too_large checked before)
static json_t *
s_frame_json (zframe_t *frame, act_err_t *err)
{
    return act_json_parse ((const char *) zframe_data (frame), zframe_size (frame), err);
}

static char *
s_context_id (zframe_t *frame, act_err_t *err)
{
    char *id = s_frame_string (frame);
    if (!id || !act_ctx_id_valid (id)) {
        free (id);
        act_err_set (err, ACT_E_BAD_CONTEXT,
                     "a context id is 1 to %d bytes of [A-Za-z0-9._:@/-]",
                     ACT_MAX_CONTEXT_ID);
        return NULL;
    }
    return id;
}

//  An optional instance frame: 1 to 128 bytes of UTF-8 without NUL
static int
s_instance_arg (zframe_t *frame, char **instance, act_err_t *err)
{
    *instance = NULL;
    if (!frame)
        return 0;
    *instance = s_frame_string (frame);
    if (!*instance || !**instance || strlen (*instance) > ACT_MAX_INSTANCE
    ||  !act_utf8_valid (*instance, strlen (*instance), NULL)) {
        zstr_free (instance);
        return act_err_set (err, ACT_E_BAD_ARGUMENT,
                            "an instance is 1 to %d bytes of UTF-8", ACT_MAX_INSTANCE);
    }
    return 0;
}

//  A decimal argument no larger than limit
static int
s_decimal_arg (zframe_t *frame, const char *name, uint64_t limit, uint64_t *value,
               act_err_t *err)
{
    char *text = s_frame_string (frame);
    bool good = text && *text && strlen (text) <= 19;
    for (const char *c = text; good && *c; c++)
        good = *c >= '0' && *c <= '9';
    if (good) {
        *value = strtoull (text, NULL, 10);
        good = *value <= limit;
    }
    free (text);
    if (!good)
        return act_err_set (err, ACT_E_BAD_ARGUMENT,
                            "%s must be a decimal number up to %" PRIu64, name, limit);
    return 0;
}

static void
s_cmd_append (act_broker_t *self, zframe_t *client, zframe_t *request,
              const char *context_id, zframe_t *body)
{
    act_err_t err = { 0 };
    if (self->stopping) {
        act_err_set (&err, ACT_E_BUSY, "actd is shutting down");
        s_reply_error (self, client, request, "APPEND", &err);
        return;
    }
    json_t *message = s_frame_json (body, &err);
    if (!message) {
        s_reply_error (self, client, request, "APPEND", &err);
        return;
    }
    s_context_t *context = s_context (self, context_id, true, &err);
    json_t *stored = context? act_ctx_append (context->ctx, message, &err): NULL;
    json_decref (message);
    if (!stored) {
        s_reply_error (self, client, request, "APPEND", &err);
        s_context_release (self, context);
        return;
    }
    s_context_store (self, context);
    json_int_t seq = json_integer_value (json_object_get (stored, "_seq"));
    char *text = act_json_dump (stored);
    act_store_put_message (self->store, context_id, (uint64_t) seq, text, strlen (text));
    free (text);
    json_decref (stored);
    json_t *reply = json_pack ("{sI}", "seq", seq);
    s_reply_json (self, client, request, "OK", reply, true);
    json_decref (reply);
}

static void
s_cmd_resolve (act_broker_t *self, zframe_t *client, zframe_t *request,
               const char *context_id, zframe_t *expression, zframe_t *instance_frame)
{
    act_err_t err = { 0 };
    char *instance = NULL;
    char *text = s_frame_string (expression);
    act_expr_t *expr = NULL;
    if (!text || !act_utf8_valid (text, strlen (text), NULL) || !act_ref_is_reference (text))
        act_err_set (&err, ACT_E_BAD_REFERENCE,
                     "RESOLVE takes a reference expression (starting with a dagger), at byte 0");
    else
        expr = act_expr_parse (text, false, &err);
    if (expr && s_instance_arg (instance_frame, &instance, &err) == 0) {
        s_context_t *context = s_context (self, context_id, false, &err);
        json_t *value = context? act_ctx_resolve (context->ctx, expr, instance): NULL;
        if (value) {
            s_reply_json (self, client, request, "VALUE", value, false);
            json_decref (value);
        }
        else
        if (context)
            act_err_set (&err, ACT_E_NOT_FOUND, "'%.200s' is absent", text);
    }
    if (err.code)
        s_reply_error (self, client, request, "RESOLVE", &err);
    act_expr_destroy (&expr);
    free (instance);
    free (text);
}

static void
s_cmd_view (act_broker_t *self, zframe_t *client, zframe_t *request,
            const char *context_id, zframe_t *format)
{
    act_err_t err = { 0 };
    bool text = format && s_frame_is (format, "text");
    if (format && !text && !s_frame_is (format, "json"))
        act_err_set (&err, ACT_E_BAD_ARGUMENT, "VIEW format is json or text");
    else {
        s_context_t *context = s_context (self, context_id, false, &err);
        if (!context)
            ;
        else
        if (text) {
            char *rendering = act_ctx_view_text (context->ctx);
            s_out_addstr (s_reply_new (self, client, request, "VALUE", false), rendering);
            free (rendering);
        }
        else {
            json_t *view = act_ctx_view (context->ctx);
            s_reply_json (self, client, request, "VALUE", view, false);
            json_decref (view);
        }
    }
    if (err.code)
        s_reply_error (self, client, request, "VIEW", &err);
}

static void
s_cmd_history (act_broker_t *self, zframe_t *client, zframe_t *request,
               const char *context_id, zframe_t *from_frame, zframe_t *limit_frame)
{
    act_err_t err = { 0 };
    uint64_t from, limit;
    if (s_decimal_arg (from_frame, "from-seq", UINT64_MAX / 2, &from, &err) == 0
    &&  s_decimal_arg (limit_frame, "limit", S_HISTORY_LIMIT, &limit, &err) == 0) {
        json_t *page = NULL;
        if (!s_context (self, context_id, false, &err))
            ;
        else
        if (!(page = act_store_history (self->store, context_id, from, limit)))
            act_err_set (&err, ACT_E_INTERNAL, "the store could not read the history");
        if (page) {
            s_reply_json (self, client, request, "VALUE", page, false);
            json_decref (page);
        }
    }
    if (err.code)
        s_reply_error (self, client, request, "HISTORY", &err);
}

//  STATUS of a live call. waiting_on is worked out now: the expressions
//  that still wait for a producer (one met since the call started waiting
//  is not listed any more)
static json_t *
s_status_live (act_broker_t *self, s_call_t *call)
{
    json_t *status = json_pack ("{sssssssI}", "call_id", call->id,
        "context", call->context->id, "state", s_state_names [call->state],
        "attempts", (json_int_t) call->attempts);
    if (call->progress)
        json_object_set (status, "progress", call->progress);
    if (call->state == S_WAITING) {
        json_t *unmet = json_array ();
        zlistx_t *found = zlistx_new ();
        for (size_t i = 0; i < call->call->nrefs; i++)
            if (s_expression (self, call, call->call->refs [i], found) == X_PENDING)
                json_array_append_new (unmet, json_string (call->call->refs [i]->text));
        zlistx_destroy (&found);
        json_object_set_new (status, "waiting_on", unmet);
    }
    return status;
}

static void
s_cmd_status (act_broker_t *self, zframe_t *client, zframe_t *request,
              zframe_t *id_frame, bool cancel)
{
    act_err_t err = { 0 };
    char *id = s_frame_string (id_frame);
    uint64_t number = s_parse_number (id);
    s_call_t *call = number? s_call_lookup (self, number): NULL;
    json_t *record = (number && !call)? act_store_call (self->store, number): NULL;
    if (record && (act_store_shared (self->store)
               ||  !act_state_ended (json_string_value (json_object_get (record, "state"))))) {
        //  Its context's owner answers for it (shared store); loading the
        //  context recovers the call if it had not ended
        const char *context = json_string_value (json_object_get (record, "context"));
        if (!s_context (self, context, false, &err)) {
            json_decref (record);
            record = NULL;
        }
        else
        if ((call = s_call_lookup (self, number))) {
            json_decref (record);
            record = NULL;
        }
    }
    if (err.code)
        ;
    else
    if (!call && !record)
        act_err_set (&err, ACT_E_NOT_FOUND, "no call %.64s", id? id: "(binary)");
    else
    if (cancel) {
        if (call)
            s_call_cancel (self, call);
        s_reply_new (self, client, request, "OK", call != NULL);
    }
    else
    if (call) {
        json_t *status = s_status_live (self, call);
        s_reply_json (self, client, request, "VALUE", status, false);
        json_decref (status);
    }
    else {
        const char *state = json_string_value (json_object_get (record, "state"));
        json_t *status = json_pack ("{sssOsssO}", "call_id", id,
            "context", json_object_get (record, "context"),
            "state", state, "attempts", json_object_get (record, "attempts"));
        if (json_object_get (record, "outcome"))
            json_object_set (status, "outcome", json_object_get (record, "outcome"));
        if (json_object_get (record, "progress"))
            json_object_set (status, "progress", json_object_get (record, "progress"));
        s_reply_json (self, client, request, "VALUE", status, false);
        json_decref (status);
    }
    if (err.code)
        s_reply_error (self, client, request, cancel? "CANCEL": "STATUS", &err);
    json_decref (record);
    free (id);
}

static json_t *
s_stats (act_broker_t *self)
{
    json_t *stats = act_store_counts (self->store);
    json_object_set_new (stats, "uptime_ms", json_integer (act_clock_ms () - self->started));
    json_t *calls = json_object_get (stats, "calls");
    json_object_set_new (calls, "running", json_integer ((json_int_t) self->running));
    json_object_set_new (calls, "queued", json_integer ((json_int_t) self->queued));
    json_object_set_new (calls, "waiting", json_integer ((json_int_t) self->waiting));
    json_t *activities = json_object ();
    for (s_activity_t *activity = zhashx_first (self->activities); activity;
         activity = zhashx_next (self->activities))
        json_object_set_new (activities, activity->name, json_pack ("{sIsIsIsI}",
            "workers", (json_int_t) zlistx_size (activity->workers),
            "queued", (json_int_t) activity->queued,
            "running", (json_int_t) activity->running,
            "done", (json_int_t) activity->done));
    json_object_set_new (stats, "activities", activities);
    json_t *workers = json_array ();
    for (s_worker_t *worker = zhashx_first (self->workers); worker;
         worker = zhashx_next (self->workers)) {
        json_t *names = json_array ();
        for (s_activity_t *activity = zlistx_first (worker->activities); activity;
             activity = zlistx_next (worker->activities))
            json_array_append_new (names, json_string (activity->name));
        json_array_append_new (workers, json_pack ("{sssosIsIss}",
            "name", worker->name, "activities", names,
            "capacity", (json_int_t) worker->capacity,
            "running", (json_int_t) zhashx_size (worker->tasks),
            "lang", worker->lang));
    }
    json_object_set_new (stats, "workers", workers);
    //  Beyond PROTOCOL.md section 4: how the group commit batches writes
    json_object_set_new (stats, "store", json_pack ("{sssssIsI}",
        "backend", act_store_backend (self->store),
        "sync", self->settings->sync == ACT_SYNC_FULL? "full": "normal",
        "commits", (json_int_t) self->commits,
        "writes", (json_int_t) self->committed));
    return stats;
}

//  Commands: name, and how many argument frames they take
static const struct {
    const char *name;           //  Command
    size_t least;               //  Fewest argument frames
    size_t most;                //  Most argument frames
} s_commands [] = {
    { "CALL", 2, 2 }, { "PLAN", 2, 2 }, { "APPEND", 2, 2 }, { "RESOLVE", 2, 3 },
    { "VIEW", 1, 2 }, { "HISTORY", 3, 3 }, { "STATUS", 1, 1 }, { "CANCEL", 1, 1 },
    { "STATS", 0, 0 }, { "PING", 0, 0 }
};

void
act_broker_client_message (act_broker_t *self, zmsg_t **msg_p)
{
    zmsg_t *msg = *msg_p;
    *msg_p = NULL;
    zframe_t *client = zmsg_pop (msg);
    if (!client || zmsg_size (msg) < 3 || !s_frame_is (zmsg_first (msg), S_CLIENT_HEADER)) {
        act_log (LOG_INFO, "client message without a request id or ACTC01 header dropped");
        zframe_destroy (&client);
        zmsg_destroy (&msg);
        return;
    }
    zframe_t *header = zmsg_pop (msg);
    zframe_t *command = zmsg_pop (msg);
    zframe_t *request = zmsg_pop (msg);
    //  Metadata rides on the frames the peer sent, not on the routing id
    if (!s_client_allowed (self, header)) {
        const char *user = zframe_meta (header, "User-Id");
        act_log (LOG_WARNING, "CURVE: client refused: key %s is not in %s",
                 user? user: "(none)", self->settings->client_keys);
        act_err_t err = { 0 };
        act_err_set (&err, ACT_E_UNAUTHORIZED, "this client's CURVE key is not allowed");
        s_reply_error (self, client, request, "(any)", &err);
        zframe_destroy (&client);
        zframe_destroy (&header);
        zframe_destroy (&command);
        zframe_destroy (&request);
        zmsg_destroy (&msg);
        return;
    }
    size_t nargs = zmsg_size (msg);
    zframe_t *args [3] = { NULL, NULL, NULL };
    for (size_t i = 0; i < nargs && i < 3; i++)
        args [i] = i? zmsg_next (msg): zmsg_first (msg);
    act_err_t err = { 0 };
    char name [16] = "?";
    size_t which = sizeof s_commands / sizeof s_commands [0];
    for (size_t i = 0; i < sizeof s_commands / sizeof s_commands [0]; i++)
        if (s_frame_is (command, s_commands [i].name)) {
            which = i;
            snprintf (name, sizeof name, "%s", s_commands [i].name);
        }
    if (zframe_size (request) == 0 || zframe_size (request) > S_MAX_REQUEST_ID)
        act_err_set (&err, ACT_E_BAD_FRAME, "a request id is 1 to %d bytes", S_MAX_REQUEST_ID);
    else
    if (which == sizeof s_commands / sizeof s_commands [0])
        act_err_set (&err, ACT_E_UNKNOWN_COMMAND, "unknown command");
    else
    if (nargs < s_commands [which].least || nargs > s_commands [which].most)
        act_err_set (&err, ACT_E_BAD_FRAME, "%s takes %zu to %zu argument frames, not %zu",
                     name, s_commands [which].least, s_commands [which].most, nargs);
    for (zframe_t *frame = zmsg_first (msg); frame && !err.code; frame = zmsg_next (msg))
        if (zframe_size (frame) > (size_t) self->settings->max_message_bytes)
            act_err_set (&err, ACT_E_TOO_LARGE, "a frame of %zu bytes is over max_message_bytes (%lld)",
                         zframe_size (frame), self->settings->max_message_bytes);
    char *context_id = NULL;
    bool takes_context = !err.code && which < 6;
    if (takes_context)
        context_id = s_context_id (args [0], &err);
    if (err.code)
        s_reply_error (self, client, request, name, &err);
    else
    if (streq (name, "CALL") || streq (name, "PLAN")) {
        json_t *body = s_frame_json (args [1], &err);
        bool plan = streq (name, "PLAN");
        if (body && plan && (!json_is_array (body) || json_array_size (body) == 0))
            act_err_set (&err, ACT_E_BAD_CALL, "a plan is a non-empty JSON array of calls");
        if (err.code)
            s_reply_error (self, client, request, name, &err);
        else {
            json_t *entries = plan? json_incref (body): json_pack ("[O]", body);
            //  A CALL's own bytes are the call's text (a JSON frame is not
            //  NUL-terminated: copy it)
            char *call_text = plan? NULL: strndup ((const char *) zframe_data (args [1]),
                                                   zframe_size (args [1]));
            s_submit (self, client, request, name, context_id, entries, call_text, plan);
            free (call_text);
            json_decref (entries);
        }
        json_decref (body);
    }
    else
    if (streq (name, "APPEND"))
        s_cmd_append (self, client, request, context_id, args [1]);
    else
    if (streq (name, "RESOLVE"))
        s_cmd_resolve (self, client, request, context_id, args [1], args [2]);
    else
    if (streq (name, "VIEW"))
        s_cmd_view (self, client, request, context_id, args [1]);
    else
    if (streq (name, "HISTORY"))
        s_cmd_history (self, client, request, context_id, args [1], args [2]);
    else
    if (streq (name, "STATUS") || streq (name, "CANCEL"))
        s_cmd_status (self, client, request, args [0], streq (name, "CANCEL"));
    else
    if (streq (name, "STATS")) {
        json_t *stats = s_stats (self);
        s_reply_json (self, client, request, "VALUE", stats, false);
        json_decref (stats);
    }
    else
        s_reply_new (self, client, request, "PONG", false);
    s_todo_run (self);
    free (context_id);
    zframe_destroy (&client);
    zframe_destroy (&header);
    zframe_destroy (&command);
    zframe_destroy (&request);
    zmsg_destroy (&msg);
}


//  --------------------------------------------------------------------------
//  Workers

//  The live call of task task held by worker, when the task is still the
//  call's current attempt; NULL when it timed out, was cancelled or was
//  dispatched again
static s_call_t *
s_task_call (act_broker_t *self, s_worker_t *worker, const char *task)
{
    char number [24] = "";
    const char *dot = strchr (task, '.');
    if (!dot || (size_t) (dot - task) >= sizeof number)
        return NULL;
    memcpy (number, task, (size_t) (dot - task));
    number [dot - task] = 0;
    s_call_t *call = (s_call_t *) zhashx_lookup (self->calls, number);
    if (call && call->state == S_RUNNING && call->worker == worker && streq (call->task, task))
        return call;
    return NULL;
}

//  The worker is gone (silent, disconnected, or misbehaving): its tasks go
//  back to the front of their queues as new attempts, or end worker_lost
static void
s_worker_dead (act_broker_t *self, s_worker_t *worker, const char *why)
{
    act_log (LOG_NOTICE, "worker %s lost (%s): %zu tasks held", worker->name, why,
             zhashx_size (worker->tasks));
    //  Out of its activities first: the tasks it held go back to their
    //  queues and must never be dispatched to it again
    for (s_activity_t *activity = zlistx_first (worker->activities); activity;
         activity = zlistx_next (worker->activities)) {
        void *handle = zlistx_find (activity->workers, worker);
        if (handle)
            zlistx_delete (activity->workers, handle);
    }
    zlistx_t *tasks = zhashx_keys (worker->tasks);
    for (char *task = zlistx_first (tasks); task; task = zlistx_next (tasks)) {
        s_call_t *call = s_task_call (self, worker, task);
        if (call) {
            char message [160];
            snprintf (message, sizeof message, "worker %s was lost (%s) during attempt %lld",
                      worker->name, why, call->attempts);
            s_call_attempt_failed (self, call, s_error_json (ACT_E_WORKER_LOST, message),
                                   true, false);
        }
    }
    zlistx_destroy (&tasks);
    zhashx_delete (self->workers, worker->key);
    s_todo_run (self);
}

//  Register a worker; activities and capacity come from READY
static s_worker_t *
s_worker_new (act_broker_t *self, zframe_t *identity, const char *key,
              s_protocol_t protocol, json_t *names, size_t capacity,
              const char *name, const char *lang)
{
    s_worker_t *worker = calloc (1, sizeof *worker);
    worker->key = strdup (key);
    worker->identity = zframe_dup (identity);
    worker->protocol = protocol;
    worker->name = strdup (name? name: key);
    worker->lang = strdup (lang? lang: "");
    worker->capacity = capacity;
    worker->tasks = zhashx_new ();
    worker->activities = zlistx_new ();
    worker->heard = worker->sent = act_clock_ms ();
    size_t index;
    json_t *activity_name;
    json_array_foreach (names, index, activity_name) {
        s_activity_t *activity = s_activity (self, json_string_value (activity_name));
        if (!zlistx_find (worker->activities, activity)) {
            zlistx_add_end (worker->activities, activity);
            zlistx_add_end (activity->workers, worker);
        }
    }
    zhashx_insert (self->workers, key, worker);
    char *list = act_json_dump (names);
    act_log (LOG_INFO, "worker %s joined (%s%s%s): activities %s, capacity %zu",
             worker->name, protocol == S_ACTW? "ACT/1": protocol == S_MDP1? "MDP/0.1": "MDP/0.2",
             *worker->lang? ", ": "", worker->lang, list, capacity);
    free (list);
    s_dispatch_worker (self, worker);
    return worker;
}

//  READY's body: {"activities": [...], "capacity"?, "name"?, "lang"?}
static int
s_ready_body (json_t *body, json_t **names, size_t *capacity, const char **name,
              const char **lang, act_err_t *err)
{
    *names = json_object_get (body, "activities");
    if (!json_is_object (body) || !json_is_array (*names) || json_array_size (*names) == 0)
        return act_err_set (err, ACT_E_BAD_ARGUMENT,
                            "READY needs {\"activities\": [names], \"capacity\": N}");
    size_t index;
    json_t *item;
    json_array_foreach (*names, index, item)
        if (!json_is_string (item) || json_string_length (item) == 0
        ||  json_string_length (item) > ACT_MAX_TOOL)
            return act_err_set (err, ACT_E_BAD_ARGUMENT,
                                "activity names are strings of 1 to %d bytes", ACT_MAX_TOOL);
    json_t *value = json_object_get (body, "capacity");
    *capacity = 1;
    if (value) {
        if (!json_is_integer (value) || json_integer_value (value) < 1
        ||  json_integer_value (value) > 100000)
            return act_err_set (err, ACT_E_BAD_ARGUMENT, "capacity is an integer from 1 to 100000");
        *capacity = (size_t) json_integer_value (value);
    }
    value = json_object_get (body, "name");
    *name = json_string_value (value);
    if (value && (!*name || strlen (*name) > 256))
        return act_err_set (err, ACT_E_BAD_ARGUMENT, "name is a string of up to 256 bytes");
    value = json_object_get (body, "lang");
    *lang = json_string_value (value);
    if (value && (!*lang || strlen (*lang) > 64))
        return act_err_set (err, ACT_E_BAD_ARGUMENT, "lang is a string of up to 64 bytes");
    return 0;
}

//  A RESULT (or Majordomo reply) for task from worker
static void
s_worker_result (act_broker_t *self, s_worker_t *worker, const char *task,
                 zframe_t *body, zframe_t *branch_frame)
{
    s_call_t *call = s_task_call (self, worker, task);
    zhashx_delete (worker->tasks, task);    //  Its slot is free again
    if (!call)
        act_log (LOG_DEBUG, "late or repeated result for task %s from %s dropped",
                 task, worker->name);
    else
    if (!call->call->output) {
        //  Fire-and-forget: the result is thrown away, so any body will do
        //  (PROTOCOL.md section 2) and it is not even parsed
        s_call_finish (self, call, "ok", NULL, NULL, 0);
    }
    else {
        act_err_t err = { 0 };
        json_t *result = NULL;
        long long branch = 0;
        if (zframe_size (body) > (size_t) self->settings->max_message_bytes)
            act_err_set (&err, ACT_E_TOO_LARGE, "the result is over max_message_bytes");
        else
            result = s_frame_json (body, &err);
        if (result && branch_frame) {
            uint64_t value;
            if (s_decimal_arg (branch_frame, "branch", 1000000, &value, &err) == 0)
                branch = (long long) value;
            else {
                json_decref (result);
                result = NULL;
            }
        }
        if (result) {
            char *text = strndup ((const char *) zframe_data (body), zframe_size (body));
            s_call_finish_text (self, call, "ok", NULL, result, text, branch);
            free (text);
            json_decref (result);
        }
        else {
            char message [320];
            snprintf (message, sizeof message, "worker %s sent a bad result: %s",
                      worker->name, err.message);
            s_call_attempt_failed (self, call, s_error_json (ACT_E_ACTIVITY_FAILED, message),
                                   false, false);
        }
    }
    s_dispatch_worker (self, worker);
}

//  A FAIL for task from worker
static void
s_worker_fail (act_broker_t *self, s_worker_t *worker, const char *task, zframe_t *body)
{
    s_call_t *call = s_task_call (self, worker, task);
    zhashx_delete (worker->tasks, task);
    if (!call)
        act_log (LOG_DEBUG, "late or repeated failure for task %s from %s dropped",
                 task, worker->name);
    else {
        act_err_t err = { 0 };
        json_t *body_json = zframe_size (body) <= (size_t) self->settings->max_message_bytes
                          ? s_frame_json (body, &err): NULL;
        const char *code = json_string_value (json_object_get (body_json, "code"));
        const char *message = json_string_value (json_object_get (body_json, "message"));
        json_t *retryable = json_object_get (body_json, "retryable");
        json_t *error = s_error_json (code && *code? code: ACT_E_ACTIVITY_FAILED,
                                      message? message: "the activity failed");
        //  Extra fields of the worker's error object are kept
        const char *key;
        json_t *value;
        json_object_foreach (body_json, key, value)
            if (!streq (key, "code") && !streq (key, "message") && !streq (key, "retryable"))
                json_object_set (error, key, value);
        s_call_attempt_failed (self, call, error, !json_is_false (retryable), true);
        json_decref (body_json);
    }
    s_dispatch_worker (self, worker);
}

static void
s_worker_progress (act_broker_t *self, s_worker_t *worker, const char *task, zframe_t *body)
{
    s_call_t *call = s_task_call (self, worker, task);
    act_err_t err = { 0 };
    json_t *details = call && zframe_size (body) <= (size_t) self->settings->max_message_bytes
                    ? s_frame_json (body, &err): NULL;
    if (details) {
        json_decref (call->progress);
        call->progress = details;
        s_call_save (self, call);
    }
}

//  The ACT/1 worker sub-protocol. frames: [command][args...]
static void
s_worker_actw (act_broker_t *self, s_worker_t *worker, zframe_t *identity,
               const char *key, zmsg_t *msg)
{
    zframe_t *command = zmsg_pop (msg);
    size_t nargs = zmsg_size (msg);
    zframe_t *first = zmsg_first (msg);
    zframe_t *second = zmsg_next (msg);
    zframe_t *third = zmsg_next (msg);
    char *task = NULL;
    const char *problem = NULL;
    if (s_frame_is (command, "READY")) {
        act_err_t err = { 0 };
        json_t *body = nargs == 1? s_frame_json (first, &err): NULL;
        json_t *names = NULL;
        size_t capacity = 1;
        const char *name = NULL, *lang = NULL;
        if (worker)
            problem = "READY from a worker already registered";
        else
        if (!body)
            problem = nargs == 1? err.message: "READY takes one frame";
        else
        if (s_ready_body (body, &names, &capacity, &name, &lang, &err))
            problem = err.message;
        else
            s_worker_new (self, identity, key, S_ACTW, names, capacity, name, lang);
        if (problem) {
            act_log (LOG_WARNING, "worker %s refused: %s", key, problem);
            if (worker)
                s_worker_dead (self, worker, problem);
            s_disconnect_peer (self, identity, S_ACTW, problem);
        }
        json_decref (body);
        zframe_destroy (&command);
        return;
    }
    if (!worker)
        problem = "not registered: send READY first";
    else
    if (s_frame_is (command, "HEARTBEAT"))
        ;                       //  Being heard is all it does
    else
    if (s_frame_is (command, "DISCONNECT")) {
        s_worker_dead (self, worker, "it disconnected");
        worker = NULL;
    }
    else
    if (s_frame_is (command, "RESULT") || s_frame_is (command, "FAIL")
    ||  s_frame_is (command, "PROGRESS")) {
        bool result = s_frame_is (command, "RESULT");
        if (nargs < 2 || nargs > (result? 3u: 2u))
            problem = "wrong number of frames";
        else
        if (!(task = s_frame_string (first)) || !zhashx_lookup (worker->tasks, task))
            problem = "a task it does not hold";
        else
        if (result)
            s_worker_result (self, worker, task, second, third);
        else
        if (s_frame_is (command, "FAIL"))
            s_worker_fail (self, worker, task, second);
        else
            s_worker_progress (self, worker, task, second);
    }
    else
        problem = "unknown command";
    if (problem) {
        act_log (LOG_WARNING, "worker %s: %s; disconnecting it", worker? worker->name: key,
                 problem);
        if (worker)
            s_worker_dead (self, worker, problem);
        s_disconnect_peer (self, identity, S_ACTW, problem);
    }
    free (task);
    zframe_destroy (&command);
}

//  Majordomo workers (7/MDP and 18/MDP): frames after the header:
//  [command byte][args...]
static void
s_worker_mdp (act_broker_t *self, s_worker_t *worker, zframe_t *identity,
              const char *key, s_protocol_t protocol, zmsg_t *msg)
{
    zframe_t *command = zmsg_pop (msg);
    byte code = command && zframe_size (command) == 1? zframe_data (command) [0]: 0;
    bool v1 = protocol == S_MDP1;
    const char *problem = NULL;
    if (code == 0x01) {
        char *service = s_frame_string (zmsg_first (msg));
        if (worker || !service || !*service || strlen (service) > ACT_MAX_TOOL)
            problem = worker? "READY from a worker already registered": "bad service name";
        else {
            json_t *names = json_pack ("[s]", service);
            s_worker_new (self, identity, key, protocol, names, 1, NULL,
                          v1? "mdp/0.1": "mdp/0.2");
            json_decref (names);
        }
        free (service);
    }
    else
    if (!worker)
        problem = "not registered: send READY first";
    else
    if (code == (v1? 0x04: 0x05))
        ;                       //  HEARTBEAT
    else
    if (code == (v1? 0x05: 0x06)) {
        s_worker_dead (self, worker, "it disconnected");
        worker = NULL;
    }
    else
    if (code == 0x03 || (!v1 && code == 0x04)) {
        //  REPLY (0.1), PARTIAL or FINAL (0.2): [address][empty][body...]
        char *task = s_frame_string (zmsg_first (msg));
        zframe_t *empty = zmsg_next (msg);
        zframe_t *body = zmsg_next (msg);
        if (!task || !empty || zframe_size (empty) || !body)
            problem = "malformed reply";
        else
        if (!zhashx_lookup (worker->tasks, task))
            problem = "a reply for a task it does not hold";
        else
        if (!v1 && code == 0x03)
            s_worker_progress (self, worker, task, body);
        else
            s_worker_result (self, worker, task, body, NULL);
        free (task);
    }
    else
        problem = "unknown command";
    if (problem) {
        act_log (LOG_WARNING, "worker %s: %s; disconnecting it", worker? worker->name: key,
                 problem);
        if (worker)
            s_worker_dead (self, worker, problem);
        s_disconnect_peer (self, identity, protocol, problem);
    }
    zframe_destroy (&command);
}

void
act_broker_worker_message (act_broker_t *self, zmsg_t **msg_p)
{
    zmsg_t *msg = *msg_p;
    *msg_p = NULL;
    zframe_t *identity = zmsg_pop (msg);
    if (!identity) {
        zmsg_destroy (&msg);
        return;
    }
    char *key = zframe_strhex (identity);
    s_worker_t *worker = (s_worker_t *) zhashx_lookup (self->workers, key);
    if (worker)
        worker->heard = act_clock_ms ();
    zframe_t *first = zmsg_first (msg);
    zframe_t *second = zmsg_next (msg);
    if (s_frame_is (first, S_WORKER_HEADER) && second) {
        zframe_t *header = zmsg_pop (msg);
        zframe_destroy (&header);
        s_worker_actw (self, worker, identity, key, msg);
    }
    else
    if (s_frame_is (first, S_MDPW02) && second) {
        zframe_t *header = zmsg_pop (msg);
        zframe_destroy (&header);
        s_worker_mdp (self, worker, identity, key, S_MDP2, msg);
    }
    else
    if (first && zframe_size (first) == 0 && s_frame_is (second, S_MDPW01)) {
        zframe_t *empty = zmsg_pop (msg);
        zframe_t *header = zmsg_pop (msg);
        zframe_destroy (&empty);
        zframe_destroy (&header);
        s_worker_mdp (self, worker, identity, key, S_MDP1, msg);
    }
    else
        act_log (LOG_INFO, "message without a worker protocol header from %s dropped", key);
    s_todo_run (self);
    free (key);
    zframe_destroy (&identity);
    zmsg_destroy (&msg);
}


//  --------------------------------------------------------------------------
//  Timers and heartbeats

static void
s_timers_run (act_broker_t *self, long long now)
{
    while (self->ntimers && self->timers [0].at <= now) {
        s_timer_t timer = s_timer_pop (self);
        s_call_t *call = s_call_lookup (self, timer.number);
        if (!call || call->timer != timer.generation)
            continue;           //  Void: the call moved on
        if (timer.type == T_DEADLINE && call->state == S_RUNNING) {
            s_out_addstr (s_send_worker (self, call->worker, "CANCEL"), call->task);
            char message [128];
            snprintf (message, sizeof message, "attempt %lld ran over its timeout of %lld ms",
                      call->attempts, call->timeout_ms);
            s_call_attempt_failed (self, call, s_error_json (ACT_E_TIMEOUT, message), true, true);
        }
        else
        if (timer.type == T_SCHEDULE && call->state == S_QUEUED && !call->backoff) {
            char message [128];
            snprintf (message, sizeof message, "no worker took it within %lld ms",
                      call->activity->settings->schedule_timeout_ms);
            s_call_finish (self, call, "timeout", s_error_json (ACT_E_NO_WORKER, message),
                           NULL, 0);
        }
        else
        if (timer.type == T_RETRY && call->state == S_QUEUED && call->backoff) {
            s_call_queue (self, call, true);
            s_call_save (self, call);
        }
        s_todo_run (self);
    }
}

static void
s_heartbeat (act_broker_t *self, long long now)
{
    long long interval = self->settings->heartbeat_ms;
    zlistx_t *dead = zlistx_new ();
    for (s_worker_t *worker = zhashx_first (self->workers); worker;
         worker = zhashx_next (self->workers)) {
        if (now - worker->heard > interval * self->settings->liveness)
            zlistx_add_end (dead, worker);
        else
        if (now - worker->sent >= interval)
            s_send_worker (self, worker, "HEARTBEAT");
    }
    for (s_worker_t *worker = zlistx_first (dead); worker; worker = zlistx_next (dead)) {
        zframe_t *identity = zframe_dup (worker->identity);
        s_protocol_t protocol = worker->protocol;
        s_worker_dead (self, worker, "silent for too long");
        //  If it is still there, it must start again
        s_disconnect_peer (self, identity, protocol, "silent for too long");
        zframe_destroy (&identity);
    }
    zlistx_destroy (&dead);
}


//  --------------------------------------------------------------------------
//  Recovery: the calls that had not ended run again

static int
s_recover_one (const json_t *record, void *arg)
{
    act_broker_t *self = (act_broker_t *) arg;
    uint64_t number = (uint64_t) json_integer_value (json_object_get (record, "call_id"));
    if (s_call_lookup (self, number))
        return 0;               //  Live already
    const char *context_id = json_string_value (json_object_get (record, "context"));
    act_err_t err = { 0 };
    s_context_t *context = context_id? s_context (self, context_id, false, &err): NULL;
    s_call_t *call = context? s_call_new (self, context, json_object_get (record, "call"),
                                          NULL, &err): NULL;
    if (!call) {
        act_log (LOG_ERR, "stored call %" PRIu64 " cannot be recovered: %s", number,
                 err.code? err.message: "its context is missing");
        return 0;
    }
    call->number = number;
    snprintf (call->id, sizeof call->id, "%" PRIu64, number);
    call->attempts = json_integer_value (json_object_get (record, "attempts"));
    json_t *progress = json_object_get (record, "progress");
    call->progress = progress? json_incref (progress): NULL;
    const char *client = json_string_value (json_object_get (record, "client"));
    const char *request = json_string_value (json_object_get (record, "request"));
    if (client && request && call->call->output) {
        zframe_t *client_frame = zframe_new (NULL, strlen (client) / 2);
        zframe_t *request_frame = zframe_new (NULL, strlen (request) / 2);
        for (size_t i = 0; i < zframe_size (client_frame); i++)
            sscanf (client + 2 * i, "%2hhx", zframe_data (client_frame) + i);
        for (size_t i = 0; i < zframe_size (request_frame); i++)
            sscanf (request + 2 * i, "%2hhx", zframe_data (request_frame) + i);
        s_recipient_add (call, client_frame, request_frame);
        zframe_destroy (&client_frame);
        zframe_destroy (&request_frame);
    }
    zhashx_insert (self->calls, call->id, call);
    context->live++;
    if (call->call->id) {
        char *key = zsys_sprintf ("%s\x1f%s", context->id, call->call->id);
        zhashx_insert (self->keys, key, call);
        zstr_free (&key);
    }
    s_producer_register (context, call);
    call->state = S_WAITING;
    self->waiting++;
    call->activity->backlog++;
    s_todo_add (self, number);
    return 0;
}

static int
s_adopt_later (const json_t *context, void *arg)
{
    zlistx_add_end (((act_broker_t *) arg)->adopt, strdup (json_string_value (context)));
    return 0;
}

//  Recovery of the calls that had not ended goes context by context: a
//  context comes back with its calls when it is loaded (an older call may
//  produce for a newer one, and both are in the same context). At the
//  start, list the contexts with such calls; the loop loads a batch of
//  them per pass (s_adopt_some), so the broker answers from the first
//  pass however much there is to recover, and a request for a context
//  not recovered yet simply loads it first.
static void
s_recover (act_broker_t *self)
{
    zlistx_purge (self->adopt);
    act_store_contexts_pending (self->store, true, s_adopt_later, self);
    if (zlistx_size (self->adopt))
        act_log (LOG_NOTICE, "recovering the calls that had not ended in %zu contexts",
                 zlistx_size (self->adopt));
}

//  Load some contexts that have calls to recover
static void
s_adopt_some (act_broker_t *self)
{
    for (int count = 0; count < 64 && zlistx_size (self->adopt); count++) {
        char *id = zlistx_detach (self->adopt, NULL);
        act_err_t err = { 0 };
        if (!zhashx_lookup (self->contexts, id) && !s_context (self, id, false, &err))
            act_log (LOG_WARNING, "context %s not recovered: %s", id, err.message);
        free (id);
    }
    s_todo_run (self);
    if (zlistx_size (self->adopt) == 0)
        act_log (LOG_NOTICE, "recovery done: %zu calls running, %zu queued, %zu waiting",
                 self->running, self->queued, self->waiting);
}

//  Drop all state and take it again from the store: after a failed
//  commit, memory may hold what the store does not
static void
s_reset (act_broker_t *self)
{
    for (s_worker_t *worker = zhashx_first (self->workers); worker;
         worker = zhashx_next (self->workers))
        s_disconnect_peer (self, worker->identity, worker->protocol, "broker restarting its state");
    zhashx_purge (self->workers);
    zhashx_purge (self->calls);
    zhashx_purge (self->keys);
    zhashx_purge (self->contexts);
    zhashx_purge (self->activities);
    self->ntimers = self->ntodo = 0;
    self->waiting = self->queued = self->running = 0;
    s_recover (self);
}


//  --------------------------------------------------------------------------
//  Commit, then send

//  Called once per pass. Everything decided in the pass (accepted calls,
//  appended messages, finished calls) goes to disk in one transaction
//  before any reply leaves: replies never promise more than the store
//  holds, and one fsync serves the whole batch.
static void
s_commit (act_broker_t *self)
{
    size_t writes = act_store_batch (self->store);
    act_err_t err = { 0 };
    if (writes && act_store_commit (self->store, &err)) {
        act_log (LOG_ERR, "store commit failed (%s): %zu writes lost; refusing what "
                 "they acknowledged and reloading state from the store", err.message, writes);
        //  Nothing durable may be promised: durable replies become errors
        //  (DONE is dropped: the call runs again), and tasks are not sent
        s_out_t *old = self->outbox;
        size_t nold = self->noutbox;
        self->outbox = NULL;
        self->noutbox = self->outbox_size = 0;
        //  The reset's own messages (DISCONNECT) go first
        s_reset (self);
        for (size_t i = 0; i < nold; i++) {
            s_out_t *out = &old [i];
            if (!out->to_worker && !out->durable) {
                s_out_t *same = s_out_new (self, false, false);
                *same = *out;           //  Moves the frames
                out->nparts = 0;
            }
            else
            if (!out->to_worker && !s_msg_is (&out->parts [2], "DONE")) {
                //  [client][ACTC01][verb][request]: ERROR to the same
                s_out_t *error = s_out_new (self, false, false);
                s_out_add (error, zmq_msg_data (&out->parts [0]), zmq_msg_size (&out->parts [0]));
                s_out_addstr (error, S_CLIENT_HEADER);
                s_out_addstr (error, "ERROR");
                s_out_add (error, zmq_msg_data (&out->parts [3]), zmq_msg_size (&out->parts [3]));
                s_out_addstr (error, ACT_E_INTERNAL);
                s_out_addstr (error, "the store could not commit; nothing was kept");
            }
            s_out_close (out);
        }
        free (old);
        return;
    }
    if (writes) {
        self->commits++;
        self->committed += writes;
    }
}

static size_t
s_flush (act_broker_t *self)
{
    size_t sent = 0;
    void *clients = self->clients? zsock_resolve (self->clients): NULL;
    void *workers = self->workers_socket? zsock_resolve (self->workers_socket): NULL;
    for (size_t i = 0; i < self->noutbox; i++) {
        s_out_t *out = &self->outbox [i];
        void *socket = out->to_worker? workers: clients;
        size_t part = 0;
        while (socket && part < out->nparts) {
            int flags = part + 1 < out->nparts? ZMQ_SNDMORE: 0;
            int rc = zmq_msg_send (&out->parts [part], socket, flags);
            while (rc < 0 && zmq_errno () == EINTR)
                rc = zmq_msg_send (&out->parts [part], socket, flags);
            if (rc < 0)
                break;
            part++;
        }
        if (socket && part == out->nparts)
            sent++;
        else
        if (socket)
            act_log (LOG_DEBUG, "a message to a %s was not sent: %s",
                     out->to_worker? "worker": "client", zmq_strerror (zmq_errno ()));
        s_out_close (out);
    }
    self->noutbox = 0;
    return sent;
}

//  A context another broker left behind (its lease ran out) with calls not
//  ended: take it over, which recovers them
static int
s_adopt (const json_t *context, void *arg)
{
    act_broker_t *self = (act_broker_t *) arg;
    act_err_t err = { 0 };
    const char *id = json_string_value (context);
    if (!zhashx_lookup (self->contexts, id) && s_context (self, id, false, &err))
        act_log (LOG_NOTICE, "took over context %s from a broker whose lease ran out", id);
    return 0;
}

//  Forget every context and call, without recovering them: this broker can
//  no longer prove it owns them (it lost the store longer than its lease
//  allows), and others may have taken them over. Contexts come back, claimed
//  again, with the next requests.
static void
s_forget_all (act_broker_t *self)
{
    act_log (LOG_ERR, "lost the store for too long: its leases may have run out; "
             "dropping %zu contexts and %zu calls from memory",
             zhashx_size (self->contexts), zhashx_size (self->calls));
    zhashx_purge (self->calls);
    zhashx_purge (self->keys);
    zhashx_purge (self->contexts);
    for (s_activity_t *activity = zhashx_first (self->activities); activity;
         activity = zhashx_next (self->activities)) {
        zlistx_purge (activity->queue);
        activity->backlog = activity->queued = activity->running = 0;
    }
    self->ntimers = self->ntodo = 0;
    self->waiting = self->queued = self->running = 0;
}

//  Shared store: renew the lease, and adopt what dead brokers left
static void
s_leases (act_broker_t *self, long long now)
{
    long long lease = self->settings->lease_ms;
    if (now >= self->renew_at) {
        if (act_store_renew (self->store) == 0)
            self->renewed = now;
        else
        if (now - self->renewed > lease * 2 / 3 && zhashx_size (self->contexts))
            s_forget_all (self);
        self->renew_at = now + lease / 3;
    }
    if (now >= self->orphans_at && now - self->renewed < lease / 2) {
        act_store_contexts_pending (self->store, false, s_adopt, self);
        s_todo_run (self);
        self->orphans_at = now + lease / 2;
    }
}

size_t
act_broker_pass (act_broker_t *self)
{
    long long now = act_clock_ms ();
    if (act_store_shared (self->store))
        s_leases (self, now);
    if (zlistx_size (self->adopt))
        s_adopt_some (self);
    s_timers_run (self, now);
    if (now >= self->heartbeat_at) {
        s_heartbeat (self, now);
        self->heartbeat_at = now + (self->settings->heartbeat_ms + 3) / 4;
    }
    if (now >= self->evict_at) {
        s_contexts_evict (self, now);
        self->evict_at = now + 1000;
    }
    s_commit (self);
    return s_flush (self);
}


//  --------------------------------------------------------------------------
//  Security: CURVE with separate allowed keys for clients and workers.
//  CZMQ's zauth checks every socket against one key directory, and a
//  client key must not open the worker socket, so actd answers ZAP itself
//  (RFC 27), with one zcertstore per socket.

#define S_ZAP_CLIENTS "actd-clients"
#define S_ZAP_WORKERS "actd-workers"

//  Count the certificates (*.key) in a directory
static size_t
s_key_count (const char *directory)
{
    size_t count = 0;
    zdir_t *dir = zdir_new (directory, NULL);
    zlist_t *files = dir? zdir_list (dir): NULL;
    for (zfile_t *file = files? zlist_first (files): NULL; file; file = zlist_next (files)) {
        const char *name = zfile_filename (file, NULL);
        size_t length = strlen (name);
        if (length > 4 && streq (name + length - 4, ".key"))
            count++;
    }
    zlist_destroy (&files);
    zdir_destroy (&dir);
    return count;
}

//  (Re)load the allowed keys from their directories
static int
s_keys_load (act_broker_t *self, act_err_t *err)
{
    const char *dirs [] = { self->settings->client_keys, self->settings->worker_keys };
    for (int i = 0; i < 2; i++)
        if (!dirs [i] || !zsys_file_exists (dirs [i]))
            return act_err_set (err, ACT_E_INTERNAL,
                                "security/%s_keys must name a directory of public keys (%s)",
                                i? "worker": "client", dirs [i]? dirs [i]: "not set");
    zcertstore_destroy (&self->client_keys);
    zcertstore_destroy (&self->worker_keys);
    self->client_keys = zcertstore_new (dirs [0]);
    self->worker_keys = zcertstore_new (dirs [1]);
    act_log (LOG_NOTICE, "CURVE: %zu client keys from %s, %zu worker keys from %s",
             s_key_count (dirs [0]), dirs [0], s_key_count (dirs [1]), dirs [1]);
    return 0;
}

//  True for endpoints only this machine can reach
static bool
s_endpoint_local (const char *endpoint)
{
    const char *local [] = { "ipc://", "inproc://", "tcp://127.", "tcp://localhost:",
                             "tcp://[::1]:" };
    for (size_t i = 0; i < sizeof local / sizeof local [0]; i++)
        if (strncmp (endpoint, local [i], strlen (local [i])) == 0)
            return true;
    return false;
}

//  Before binding: load the keys and start the ZAP handler, or (without
//  keys) make sure nothing but this machine can reach plain sockets
static int
s_security_setup (act_broker_t *self, act_err_t *err)
{
    act_settings_t *settings = self->settings;
    if (!settings->server_key) {
        const char *endpoints [] = { settings->client_endpoint, settings->worker_endpoint };
        for (int i = 0; i < 2; i++)
            if (!s_endpoint_local (endpoints [i])) {
                if (!settings->allow_plain_tcp)
                    return act_err_set (err, ACT_E_INTERNAL,
                        "refusing plain TCP on %s without CURVE keys: anyone who reaches it "
                        "could submit calls (set security/server_key, or security/"
                        "allow_plain_tcp = 1 to accept the risk)", endpoints [i]);
                act_log (LOG_WARNING, "plain TCP without CURVE on %s, as the config allows: "
                         "anyone who reaches it can submit calls", endpoints [i]);
            }
        act_log (LOG_NOTICE, "no CURVE keys: clients and workers are not authenticated");
        return 0;
    }
    self->server_cert = zcert_load (settings->server_key);
    if (!self->server_cert)
        return act_err_set (err, ACT_E_INTERNAL, "cannot read the server key %s "
                            "(make one with: actctl keygen server)", settings->server_key);
    if (s_keys_load (self, err))
        return -1;
    self->zap = zsock_new_rep ("inproc://zeromq.zap.01");
    if (!self->zap)
        return act_err_set (err, ACT_E_INTERNAL, "cannot start the ZAP handler");
    act_log (LOG_NOTICE, "CURVE on: server public key %s", zcert_public_txt (self->server_cert));
    return 0;
}

//  Answer one ZAP request. The worker socket admits only keys in
//  worker_keys. The client socket admits any CURVE peer and names it by
//  its key (User-Id), so that a client with an unknown key gets a clear
//  ERROR unauthorized for each request rather than a silent failed
//  handshake.
static void
s_zap (act_broker_t *self)
{
    zmsg_t *request = zmsg_recv (self->zap);
    if (!request)
        return;
    char *version = zmsg_popstr (request);
    zframe_t *sequence = zmsg_pop (request);
    char *domain = zmsg_popstr (request);
    char *address = zmsg_popstr (request);
    char *identity = zmsg_popstr (request);
    char *mechanism = zmsg_popstr (request);
    zframe_t *key = zmsg_pop (request);
    const char *status = "400", *text = "CURVE required";
    char user [41] = "";
    if (mechanism && streq (mechanism, "CURVE") && key && zframe_size (key) == 32) {
        zmq_z85_encode (user, zframe_data (key), 32);
        if (domain && streq (domain, S_ZAP_WORKERS)) {
            if (zcertstore_lookup (self->worker_keys, user)) {
                status = "200";
                text = "OK";
            }
            else {
                text = "key not allowed on the worker socket";
                act_log (LOG_WARNING, "CURVE: worker refused from %s: key %s is not in %s",
                         address? address: "?", user, self->settings->worker_keys);
            }
        }
        else {
            status = "200";
            text = "OK";
        }
    }
    zmsg_t *reply = zmsg_new ();
    zmsg_addstr (reply, "1.0");
    zmsg_append (reply, &sequence);
    zmsg_addstr (reply, status);
    zmsg_addstr (reply, text);
    zmsg_addstr (reply, streq (status, "200")? user: "");
    zmsg_addmem (reply, "", 0);
    zmsg_send (&reply, self->zap);
    zframe_destroy (&key);
    zframe_destroy (&sequence);
    free (version);
    free (domain);
    free (address);
    free (identity);
    free (mechanism);
    zmsg_destroy (&request);
}

//  With CURVE, a client's key (the User-Id of a frame it sent) must be an
//  allowed client key
static bool
s_client_allowed (act_broker_t *self, zframe_t *frame)
{
    if (!self->client_keys)
        return true;
    const char *user = zframe_meta (frame, "User-Id");
    return user && zcertstore_lookup (self->client_keys, user) != NULL;
}


//  --------------------------------------------------------------------------
//  The broker

static zsock_t *
s_bind (act_broker_t *self, const char *endpoint, const char *domain, act_err_t *err)
{
    act_settings_t *settings = self->settings;
    zsock_t *socket = zsock_new (ZMQ_ROUTER);
    if (!socket) {
        act_err_set (err, ACT_E_INTERNAL, "cannot create a socket");
        return NULL;
    }
    zsock_set_router_mandatory (socket, 1);
    zsock_set_sndhwm (socket, 100000);
    zsock_set_rcvhwm (socket, 100000);
    zsock_set_sndtimeo (socket, 0);
    zsock_set_linger (socket, 1000);
    //  Past max_message_bytes a frame is answered too_large; far past it
    //  the peer is cut off before the broker holds the whole thing
    long long hard = settings->max_message_bytes * 4 + 65536;
    zsock_set_maxmsgsize (socket, hard > INT_MAX? INT_MAX: (int) hard);
    if (self->server_cert) {
        zsock_set_zap_domain (socket, domain);
        zsock_set_curve_server (socket, 1);
        zcert_apply (self->server_cert, socket);
    }
    if (zsock_bind (socket, "%s", endpoint) < 0) {
        act_err_set (err, ACT_E_INTERNAL, "cannot bind %s: %s", endpoint,
                     zmq_strerror (zmq_errno ()));
        zsock_destroy (&socket);
    }
    return socket;
}

act_broker_t *
act_broker_new (act_settings_t *settings, bool bind, act_err_t *err)
{
    act_broker_t *self = calloc (1, sizeof *self);
    self->settings = settings;
    self->started = act_clock_ms ();
    self->store = act_store_open (settings->store, settings->sync, err);
    if (!self->store) {
        free (self);
        return NULL;
    }
    self->contexts = zhashx_new ();
    zhashx_set_destructor (self->contexts, s_context_destroy);
    self->calls = zhashx_new ();
    zhashx_set_destructor (self->calls, s_call_destructor);
    self->keys = zhashx_new ();
    self->activities = zhashx_new ();
    zhashx_set_destructor (self->activities, s_activity_destroy);
    self->workers = zhashx_new ();
    zhashx_set_destructor (self->workers, s_worker_destroy);
    self->adopt = zlistx_new ();
    zlistx_set_destructor (self->adopt, (zlistx_destructor_fn *) zstr_free);
    if (bind) {
        if (s_security_setup (self, err)) {
            act_broker_destroy (&self);
            return NULL;
        }
        self->clients = s_bind (self, settings->client_endpoint, S_ZAP_CLIENTS, err);
        self->workers_socket = self->clients
                             ? s_bind (self, settings->worker_endpoint, S_ZAP_WORKERS, err): NULL;
        if (!self->workers_socket) {
            act_broker_destroy (&self);
            return NULL;
        }
    }
    if (act_store_shared (self->store)) {
        char *host = zsys_hostname ();
        if (!settings->advertise)
            settings->advertise = strdup (settings->client_endpoint);
        if (!settings->broker_id)
            settings->broker_id = zsys_sprintf ("%s/%s", host, settings->advertise);
        free (host);
        if (act_store_join (self->store, settings->broker_id, settings->advertise,
                            settings->lease_ms, err)) {
            act_broker_destroy (&self);
            return NULL;
        }
        self->renewed = act_clock_ms ();
        act_log (LOG_NOTICE, "joined the shared store as broker %s (clients are sent to %s; "
                 "leases last %lld ms)", settings->broker_id, settings->advertise,
                 settings->lease_ms);
    }
    s_recover (self);
    s_commit (self);
    s_flush (self);
    return self;
}

void
act_broker_destroy (act_broker_t **self_p)
{
    if (self_p && *self_p) {
        act_broker_t *self = *self_p;
        zsock_destroy (&self->clients);
        zsock_destroy (&self->workers_socket);
        zsock_destroy (&self->zap);
        zcertstore_destroy (&self->client_keys);
        zcertstore_destroy (&self->worker_keys);
        zcert_destroy (&self->server_cert);
        zhashx_destroy (&self->keys);
        zhashx_destroy (&self->calls);
        zhashx_destroy (&self->workers);
        zhashx_destroy (&self->contexts);
        zhashx_destroy (&self->activities);
        for (size_t i = 0; i < self->noutbox; i++)
            s_out_close (&self->outbox [i]);
        free (self->outbox);
        zlistx_destroy (&self->adopt);
        act_store_destroy (&self->store);
        free (self->timers);
        free (self->todo);
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
    self->stop_deadline = act_clock_ms () + self->settings->shutdown_grace_ms;
    act_log (LOG_NOTICE, "stopping: %zu tasks running, waiting up to %lld ms",
             self->running, self->settings->shutdown_grace_ms);
    act_notify_stopping ("stopping: letting running tasks finish");
}

static char *
s_summary (void *self)
{
    return act_broker_summary ((act_broker_t *) self);
}

int
act_broker_run (act_broker_t *self, act_broker_reload_fn *reload, act_settings_t *settings)
{
    zmq_pollitem_t items [] = {
        { zsock_resolve (self->clients), 0, ZMQ_POLLIN, 0 },
        { zsock_resolve (self->workers_socket), 0, ZMQ_POLLIN, 0 },
        { self->zap? zsock_resolve (self->zap): NULL, 0, ZMQ_POLLIN, 0 }
    };
    act_log (LOG_NOTICE, "actd %s ready: clients %s, workers %s, store %s (%s)",
             ACTD_VERSION, self->settings->client_endpoint, self->settings->worker_endpoint,
             self->settings->store, act_store_backend (self->store));
    while (true) {
        if (act_broker_stop_requested && !self->stopping)
            s_begin_stop (self);
        if (act_broker_reload_requested && reload)
            reload (self, settings);
        act_notify_tick (s_summary, self);
        if (self->stopping
        &&  (self->running == 0 || act_clock_ms () >= self->stop_deadline))
            break;
        long long now = act_clock_ms ();
        long long wait = self->heartbeat_at - now;
        if (self->ntimers && self->timers [0].at - now < wait)
            wait = self->timers [0].at - now;
        if (wait > 250)
            wait = 250;
        if (wait < 0)
            wait = 0;
        if (zmq_poll (items, self->zap? 3: 2, wait) < 0 && zmq_errno () != EINTR)
            break;
        if (self->zap && (items [2].revents & ZMQ_POLLIN))
            s_zap (self);
        //  Read fairly: up to a batch from each socket, alternating
        for (int round = 0; round < S_READ_BATCH; round++) {
            bool any = false;
            zmsg_t *msg = zmsg_recv_nowait (self->workers_socket);
            if (msg) {
                act_broker_worker_message (self, &msg);
                any = true;
            }
            msg = zmsg_recv_nowait (self->clients);
            if (msg) {
                act_broker_client_message (self, &msg);
                any = true;
            }
            if (!any)
                break;
        }
        act_broker_pass (self);
    }
    act_broker_pass (self);
    if (act_store_shared (self->store))
        act_store_leave (self->store);
    act_log (LOG_NOTICE, "stopped: %zu calls left to recover at the next start "
             "(%zu running, %zu queued, %zu waiting)",
             zhashx_size (self->calls), self->running, self->queued, self->waiting);
    return 0;
}

//  Log, at notice, each per-activity setting that differs
static void
s_reload_log_activity (const char *prefix, const act_activity_settings_t *old,
                       const act_activity_settings_t *new)
{
    struct { const char *name; long long old, new; } fields [] = {
        { "timeout_ms", old->timeout_ms, new->timeout_ms },
        { "max_queue", old->max_queue, new->max_queue },
        { "schedule_timeout_ms", old->schedule_timeout_ms, new->schedule_timeout_ms },
        { "retry/max_attempts", old->retry.max_attempts, new->retry.max_attempts },
        { "retry/initial_ms", old->retry.initial_ms, new->retry.initial_ms },
        { "retry/max_ms", old->retry.max_ms, new->retry.max_ms }
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields [0]; i++)
        if (fields [i].old != fields [i].new)
            act_log (LOG_NOTICE, "reload: %s/%s %lld -> %lld", prefix, fields [i].name,
                     fields [i].old, fields [i].new);
    if (old->retry.backoff != new->retry.backoff)
        act_log (LOG_NOTICE, "reload: %s/retry/backoff %g -> %g", prefix,
                 old->retry.backoff, new->retry.backoff);
}

void
act_broker_reload (act_broker_t *self, act_settings_t *fresh)
{
    static const char *levels [] = {
        "emergency", "alert", "critical", "error", "warning", "notice", "info", "debug"
    };
    act_settings_t *now = self->settings;
    //  Log every change first, while the old log level holds, then apply
    if (fresh->log_level != now->log_level)
        act_log (LOG_NOTICE, "reload: log/level %s -> %s", levels [now->log_level & 7],
                 levels [fresh->log_level & 7]);
    s_reload_log_activity ("defaults", &now->defaults, &fresh->defaults);
    for (act_activity_settings_t *own = zhashx_first (fresh->activities); own;
         own = zhashx_next (fresh->activities)) {
        const char *name = zhashx_cursor (fresh->activities);
        char *prefix = zsys_sprintf ("activities/%s", name);
        if (!zhashx_lookup (now->activities, name))
            act_log (LOG_NOTICE, "reload: %s added", prefix);
        s_reload_log_activity (prefix, act_settings_activity (now, name), own);
        zstr_free (&prefix);
    }
    for (act_activity_settings_t *own = zhashx_first (now->activities); own;
         own = zhashx_next (now->activities)) {
        const char *name = zhashx_cursor (now->activities);
        if (zhashx_lookup (fresh->activities, name))
            continue;
        char *prefix = zsys_sprintf ("activities/%s", name);
        act_log (LOG_NOTICE, "reload: %s removed: it takes defaults", prefix);
        s_reload_log_activity (prefix, own, &fresh->defaults);
        zstr_free (&prefix);
    }
    //  Per-activity settings: swap the tables, then point activities at
    //  their new entries
    now->defaults = fresh->defaults;
    zhashx_t *swap = now->activities;
    now->activities = fresh->activities;
    fresh->activities = swap;
    for (s_activity_t *activity = zhashx_first (self->activities); activity;
         activity = zhashx_next (self->activities))
        activity->settings = act_settings_activity (now, activity->name);
    //  Allowed keys: the directories named now, read again
    if (self->server_cert && fresh->client_keys && fresh->worker_keys) {
        free (self->settings->client_keys);
        free (self->settings->worker_keys);
        self->settings->client_keys = strdup (fresh->client_keys);
        self->settings->worker_keys = strdup (fresh->worker_keys);
        act_err_t err = { 0 };
        if (s_keys_load (self, &err))
            act_log (LOG_ERR, "reload: allowed keys not reloaded: %s", err.message);
        else
            act_log (LOG_NOTICE, "reload: allowed keys reloaded");
    }
    //  The new log level last, so that the lines above are not lost
    now->log_level = fresh->log_level;
    act_log_threshold = fresh->log_level;
}

char *
act_broker_summary (act_broker_t *self)
{
    return zsys_sprintf ("%zu workers, %zu running, %zu queued, %zu waiting, %zu contexts loaded",
                         zhashx_size (self->workers), self->running, self->queued,
                         self->waiting, zhashx_size (self->contexts));
}
