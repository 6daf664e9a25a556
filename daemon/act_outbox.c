/*  =========================================================================
    act_outbox - what a pass sends, after its commit (see act_outbox.h).

    Frames are libzmq messages built in place in one array of messages: a
    CZMQ message costs a frame and a list node per frame, which were a
    tenth of the broker's instructions per call.

    Bytes queued to one client. The client socket's high-water mark
    counts messages (100 000 per peer), not bytes: a client that sends
    HISTORY requests and never reads would have libzmq hold 100 000
    replies of up to max_reply_bytes each. So every frame of S_TRACKED
    bytes or more is handed to libzmq with a free function (zero copy),
    which libzmq calls once it has written the frame to the connection
    or dropped it: each client's account knows the bytes libzmq holds for
    it. A client that a reply would take past max_client_bytes does not
    read: that reply and every later one are dropped, and the broker cuts
    its connection (act_outbox_next_cut), so that libzmq frees what it
    held for it; logged once. One reply always goes when nothing is held,
    and once libzmq holds nothing more for it (its connection gone) the
    client starts clean.

    A worker's large frames count too, in an account of its own (act_held.h,
    kept by the pool: act_out_charge), charged as the TASK is built: a
    worker that stops reading its tasks but still heartbeats is given no
    more once libzmq holds server/max_worker_bytes for it (act_worker_free),
    instead of having every queued call's params copied to it.

    A frame built once for many messages (act_out_shared: an EVENT's body,
    to every watcher of a context) is the same bytes in each, each with a
    ticket of its own: each account counts all of it, as if it were its
    own, and knows when libzmq lets go of its message.
    ========================================================================= */

#include "act_outbox.h"
#include "act_frame.h"
#include "actd/act_err.h"
#include "actd/act_wire.h"
#include "actd/act_text.h"
#include "act_log.h"

//  The most frames a message of the broker has (a Majordomo 0.1 TASK: 7)
#define S_PARTS 8
//  Workers with held messages act_outbox_flush_early tells apart between
//  two flushes; past them, no more messages leave early (rare: a recovery)
#define S_HELD_WORKERS 16

//  Frames this large or larger count in their client's account
#define S_TRACKED 512

struct _act_out_t {
    zmq_msg_t parts [S_PARTS];  //  The frames, routing id first
    size_t nparts;              //  Frames built
    size_t bytes;               //  Bytes of the frames built
    bool to_worker;             //  Which socket
    bool durable;               //  A reply that promises stored state
    bool early;                 //  To a worker, may leave before its commit
    bool patient;               //  Nobody waits for it (act_out_patient)
    bool gone;                  //  Left early: an empty slot until the
                                //  messages before it leave
    unsigned tracked;           //  Bit n: part n is a tracked frame
    act_ticket_t *tickets [S_PARTS];    //  The tickets of the tracked
                                //  frames (their parts' once added)
    size_t head;                //  Index of a reply's ACTC01 frame (1, or 2
                                //  after a REQ client's empty frame)
    char owner [ACT_OWNER_SIZE];    //  CURVE key of the client it is owed
                                //  to, or "": whoever holds the routing id
    char *reach;                //  Context the owner's grant must reach
                                //  when it is sent (owned), or NULL
    act_held_t *charge;         //  The worker's account its large frames
                                //  are charged to, or NULL
};

struct _act_outbox_t {
    act_out_t *messages;        //  In the order they leave
    size_t size;                //  Messages held
    size_t room;                //  Slots allocated
    zframe_t *envelope;         //  Client whose replies get an empty frame
                                //  now (borrowed), or NULL
    size_t sealed;              //  The first messages, whose commit is in
                                //  flight (act_outbox_seal)
    size_t counted;             //  Messages whose bytes are in bytes
    size_t bytes;               //  Bytes of the first counted messages
    zhashx_t *accounts;         //  Client routing id (hex) -> act_held_t
    size_t max_client_bytes;    //  Bytes libzmq may hold for one client
                                //  (0: no bound)
    const char *serving;        //  Key of the client served now, or NULL
    zframe_t *serving_client;   //  Its routing id (borrowed), or NULL when
                                //  its replies get no owner
    act_outbox_guard_fn *guard; //  Judges messages with an owner, or NULL
    void *guard_arg;            //  Its argument
    act_outbox_unsent_fn *unsent;   //  Told of worker messages refused
    void *unsent_arg;           //  Its argument
    uint64_t unowned;           //  Messages the guard dropped
    zlistx_t *cuts;             //  Routing ids (zframe_t) of clients that
                                //  went over, for act_outbox_next_cut
    uint64_t cut;               //  Clients that went over, since the start
    size_t gone;                //  Slots of messages that left early
    size_t scanned;             //  Messages act_outbox_flush_early has
                                //  judged (the later ones are new)
    size_t held [S_HELD_WORKERS];   //  Indexes of the messages to workers
                                //  among those, held for their commit
    size_t nheld;               //  Entries in held
    bool crowded;               //  Too many held to tell apart: nothing
                                //  more leaves early before a flush
};

static void
s_account_destroy (void **item)
{
    act_held_destroy ((act_held_t **) item);
}

void
act_out_charge (act_out_t *out, act_held_t *held)
{
    if (out)
        out->charge = held;
}

act_outbox_t *
act_outbox_new (void)
{
    act_outbox_t *self = (act_outbox_t *) calloc (1, sizeof (act_outbox_t));
    if (self) {
        self->accounts = zhashx_new ();
        zhashx_set_destructor (self->accounts, s_account_destroy);
        self->cuts = zlistx_new ();
        zlistx_set_destructor (self->cuts, (czmq_destructor *) zframe_destroy);
    }
    return self;
}

void
act_outbox_set_max_client_bytes (act_outbox_t *self, size_t bytes)
{
    self->max_client_bytes = bytes;
}

size_t
act_outbox_client_bytes (act_outbox_t *self)
{
    size_t total = 0;
    for (act_held_t *account = (act_held_t *) zhashx_first (self->accounts); account;
         account = (act_held_t *) zhashx_next (self->accounts))
        total += act_held_bytes (account);
    return total;
}

void
act_outbox_sweep (act_outbox_t *self)
{
    zlistx_t *idle = zlistx_new ();
    for (act_held_t *account = (act_held_t *) zhashx_first (self->accounts); account;
         account = (act_held_t *) zhashx_next (self->accounts))
        if (act_held_bytes (account) == 0)
            zlistx_add_end (idle, (void *) zhashx_cursor (self->accounts));
    for (const char *key = (const char *) zlistx_first (idle); key;
         key = (const char *) zlistx_next (idle))
        zhashx_delete (self->accounts, key);
    zlistx_destroy (&idle);
}

//  Free out's frames (sent ones are empty already)
static void
s_close (act_out_t *out)
{
    for (size_t i = 0; i < out->nparts; i++)
        zmq_msg_close (&out->parts [i]);
    out->nparts = 0;
    free (out->reach);
    out->reach = NULL;
}

void
act_outbox_destroy (act_outbox_t **self_p)
{
    if (self_p && *self_p) {
        act_outbox_t *self = *self_p;
        for (size_t i = 0; i < self->size; i++)
            s_close (&self->messages [i]);
        free (self->messages);
        zhashx_destroy (&self->accounts);
        zlistx_destroy (&self->cuts);
        free (self);
        *self_p = NULL;
    }
}

act_out_t *
act_outbox_add (act_outbox_t *self, bool to_worker, bool durable)
{
    if (self->size == self->room) {
        //  libzmq messages may be moved as plain memory (zmq_msg_move does)
        self->room = self->room? self->room * 2: 256;
        self->messages = realloc (self->messages, self->room * sizeof (act_out_t));
        if (!self->messages) {
            act_log (LOG_ERR, "out of memory for %zu outgoing messages", self->room);
            abort ();                           //  As CZMQ's allocations do
        }
    }
    act_out_t *out = &self->messages [self->size++];
    out->nparts = 0;
    out->bytes = 0;
    out->to_worker = to_worker;
    out->durable = durable;
    out->early = false;
    out->patient = false;
    out->gone = false;
    out->tracked = 0;
    out->head = 1;
    out->owner [0] = 0;
    out->reach = NULL;
    out->charge = NULL;
    return out;
}

//  Add ticket's frame to out, handed to libzmq as it is (let go by
//  libzmq): a worker's account is charged now, a client's when out is
//  admitted (s_admit)
static void
s_add_ticket (act_out_t *out, act_ticket_t *ticket)
{
    size_t index = out->nparts++;
    out->bytes += act_ticket_size (ticket);
    act_ticket_init (ticket, &out->parts [index]);
    out->tickets [index] = ticket;
    if (out->charge)
        act_ticket_charge (ticket, out->charge);
    else
    if (!out->to_worker)
        out->tracked |= 1u << index;
}

void
act_out_add (act_out_t *out, const void *data, size_t size)
{
    if (!out)
        return;
    assert (out->nparts < S_PARTS);             //  The broker's own messages
    if (size >= S_TRACKED && (!out->to_worker || out->charge)) {
        //  The frame's bytes after its ticket
        act_ticket_t *ticket = act_ticket_new (size);
        memcpy (act_ticket_data (ticket), data, size);
        s_add_ticket (out, ticket);
        return;
    }
    zmq_msg_t *part = &out->parts [out->nparts++];
    out->bytes += size;
    if (zmq_msg_init_size (part, size)) {
        act_log (LOG_ERR, "out of memory for a frame of %zu bytes", size);
        abort ();
    }
    if (size)
        memcpy (zmq_msg_data (part), data, size);
}

void
act_out_literal (act_out_t *out, const char *literal)
{
    if (!out)
        return;
    assert (out->nparts < S_PARTS);
    size_t size = strlen (literal);
    out->bytes += size;
    //  No free function: libzmq takes it as constant data
    zmq_msg_init_data (&out->parts [out->nparts++], (void *) literal, size, NULL, NULL);
}

void
act_out_shared (act_out_t *out, act_shared_t *shared)
{
    if (!out || !shared)
        return;
    assert (out->nparts < S_PARTS);
    if (act_shared_size (shared) < S_TRACKED)
        act_out_add (out, act_shared_data (shared), act_shared_size (shared));
    else
        s_add_ticket (out, act_ticket_shared (shared));
}

void
act_out_addstr (act_out_t *out, const char *string)
{
    act_out_add (out, string, strlen (string));
}

void
act_out_frame (act_out_t *out, zframe_t *frame)
{
    act_out_add (out, zframe_data (frame), zframe_size (frame));
}

act_out_t *
act_outbox_reply (act_outbox_t *self, zframe_t *client, zframe_t *request,
                  const char *verb, bool durable)
{
    return act_outbox_reply_to (self, zframe_data (client), zframe_size (client),
                                zframe_data (request), zframe_size (request), verb, durable);
}

act_out_t *
act_outbox_reply_to (act_outbox_t *self, const void *client, size_t client_size,
                     const void *request, size_t request_size, const char *verb,
                     bool durable)
{
    act_out_t *out = act_outbox_add (self, false, durable);
    act_out_add (out, client, client_size);
    if (self->envelope && zframe_size (self->envelope) == client_size
    &&  memcmp (zframe_data (self->envelope), client, client_size) == 0) {
        act_out_add (out, "", 0);
        out->head = 2;
    }
    //  A reply to the client served now is owed to its key (nothing to
    //  compare without CURVE: the hot path stays as it was)
    zframe_t *served = self->serving_client;
    if (served && zframe_size (served) == client_size
    &&  memcmp (zframe_data (served), client, client_size) == 0)
        strcpy (out->owner, self->serving);
    act_out_literal (out, ACT_CLIENT_HEADER);
    act_out_literal (out, verb);
    act_out_add (out, request, request_size);
    return out;
}

void
act_out_early (act_out_t *out)
{
    if (out && out->to_worker)
        out->early = true;
}

void
act_out_patient (act_out_t *out)
{
    if (out)
        out->patient = true;
}

void
act_out_owner (act_out_t *out, const char *owner, const char *context)
{
    if (out && owner && *owner && strlen (owner) < ACT_OWNER_SIZE) {
        strcpy (out->owner, owner);
        free (out->reach);
        out->reach = context? strdup (context): NULL;
    }
}

void
act_outbox_serving (act_outbox_t *self, zframe_t *client, const char *owner)
{
    self->serving = owner && *owner? owner: NULL;
    self->serving_client = self->serving && strlen (owner) < ACT_OWNER_SIZE? client: NULL;
}

const char *
act_outbox_serving_owner (act_outbox_t *self)
{
    return self? self->serving: NULL;
}

void
act_outbox_set_guard (act_outbox_t *self, act_outbox_guard_fn *guard, void *arg)
{
    self->guard = guard;
    self->guard_arg = arg;
}

void
act_outbox_on_unsent (act_outbox_t *self, act_outbox_unsent_fn *unsent, void *arg)
{
    self->unsent = unsent;
    self->unsent_arg = arg;
}

uint64_t
act_outbox_unowned (act_outbox_t *self)
{
    return self? self->unowned: 0;
}

void
act_outbox_envelope (act_outbox_t *self, zframe_t *client)
{
    self->envelope = client;
}

bool
act_outbox_enveloped (act_outbox_t *self, zframe_t *client)
{
    return self->envelope && client && zframe_eq (self->envelope, client);
}

void
act_outbox_error (act_outbox_t *self, zframe_t *client, zframe_t *request,
                  const char *command, const act_err_t *err, const char *limit)
{
    //  Refusals of a key are logged by act_log_peer where they are decided;
    //  the others here, per client and error code (or limit): a flood of
    //  refused requests costs a few lines either way
    int level = limit? LOG_NOTICE: LOG_INFO;
    if (!streq (err->code, ACT_E_UNAUTHORIZED) && level <= act_log_threshold) {
        char *peer = client? zframe_strhex (client): NULL;
        //  The key of the client served now (none without CURVE)
        bool served = self->serving_client && client
                   && zframe_eq (self->serving_client, client);
        const char *key = served? self->serving: "(none)";
        if (limit)
            act_log_peer (level, peer? peer: "?", limit, "client %s (key %s): request %s "
                          "refused: %s: %s reached: %s", peer? peer: "?", key, command,
                          err->code, limit, err->message);
        else
            act_log_peer (level, peer? peer: "?", err->code, "client %s (key %s): request %s "
                          "refused: %s: %s", peer? peer: "?", key, command, err->code,
                          err->message);
        free (peer);
    }
    act_out_t *out = act_outbox_reply (self, client, request, "ERROR", false);
    act_out_addstr (out, err->code);
    act_out_addstr (out, err->message);
}

size_t
act_outbox_size (act_outbox_t *self)
{
    return self->size - self->gone;
}

size_t
act_outbox_bytes (act_outbox_t *self)
{
    for (; self->counted < self->size; self->counted++)
        self->bytes += self->messages [self->counted].bytes;
    return self->bytes;
}

bool
act_outbox_holds (act_outbox_t *self, const void *client, size_t size)
{
    for (size_t i = 0; i < self->size; i++) {
        act_out_t *out = &self->messages [i];
        if (!out->to_worker && out->nparts && zmq_msg_size (&out->parts [0]) == size
        &&  memcmp (zmq_msg_data (&out->parts [0]), client, size) == 0)
            return true;
    }
    return false;
}

//  True when frame part of out holds text
static bool
s_part_is (act_out_t *out, size_t part, const char *text)
{
    return part < out->nparts && zmq_msg_size (&out->parts [part]) == strlen (text)
        && memcmp (zmq_msg_data (&out->parts [part]), text, strlen (text)) == 0;
}

//  The messages move: act_outbox_flush_early judges them all again
static void
s_rescan (act_outbox_t *self)
{
    self->scanned = self->nheld = 0;
    self->crowded = false;
}

size_t
act_outbox_refuse (act_outbox_t *self, const char *cause, act_outbox_lost_fn *lost, void *arg)
{
    //  The cause, for the clients to know what to do (wait for room, call
    //  their operator): SQLite's words, no path nor detail of the server
    char text [160];
    if (cause)
        snprintf (text, sizeof text, "the store could not commit (%s); nothing was kept", cause);
    else
        snprintf (text, sizeof text, "the store could not commit; nothing was kept");
    size_t refused = 0, kept = 0;
    for (size_t i = 0; i < self->size; i++) {
        act_out_t *out = &self->messages [i];
        if (out->gone)
            continue;                           //  It left: nothing to undo
        //  [client][ACTC01][verb][request] (an empty frame after the client
        //  for a REQ socket). A VALUE was read from memory, which may hold
        //  what the commit lost (a RESOLVE in the pass of an APPEND): it is
        //  refused too
        size_t head = out->head;
        if (!out->to_worker && !out->durable && !s_part_is (out, head + 1, "VALUE")) {
            self->messages [kept++] = *out;     //  Moves the frames
            continue;
        }
        refused++;
        //  ERROR to the same request, but for DONE, whose call is recovered
        //  and ends again later, and EVENT, which reports what was not kept
        //  (a watcher sees no gap: the _seq is given again)
        if (!out->to_worker && !s_part_is (out, head + 1, "DONE")
        &&  !s_part_is (out, head + 1, "EVENT")) {
            act_out_t error = { .to_worker = false, .durable = false, .head = head };
            for (size_t part = 0; part < head; part++)
                act_out_add (&error, zmq_msg_data (&out->parts [part]),
                             zmq_msg_size (&out->parts [part]));
            act_out_addstr (&error, ACT_CLIENT_HEADER);
            act_out_addstr (&error, "ERROR");
            act_out_add (&error, zmq_msg_data (&out->parts [head + 2]),
                         zmq_msg_size (&out->parts [head + 2]));
            act_out_addstr (&error, ACT_E_INTERNAL);
            act_out_addstr (&error, text);
            s_close (out);
            self->messages [kept++] = error;
        }
        else {
            if (lost && !out->to_worker && out->nparts > head + 3
            &&  s_part_is (out, head + 1, "EVENT"))
                lost (arg, &out->parts [0], &out->parts [head + 2], &out->parts [head + 3]);
            if (out->to_worker && self->unsent)
                self->unsent (self->unsent_arg, out->parts, out->nparts);
            s_close (out);
        }
    }
    self->size = kept;
    self->sealed = 0;
    self->counted = self->bytes = 0;
    self->gone = 0;
    s_rescan (self);
    return refused;
}

//  A routing id in hex, as the log names peers (the caller frees it)
static char *
s_hex (const void *id, size_t size)
{
    char *hex = (char *) malloc (size * 2 + 1);
    return hex? act_hex_write (hex, id, size): NULL;
}

bool
act_outbox_client_over (act_outbox_t *self, zframe_t *client)
{
    if (self->max_client_bytes == 0 || zhashx_size (self->accounts) == 0)
        return false;
    //  A routing id has at most 255 bytes
    char hex [2 * 255 + 1];
    if (zframe_size (client) > 255)
        return false;
    act_hex_write (hex, zframe_data (client), zframe_size (client));
    act_held_t *account = (act_held_t *) zhashx_lookup (self->accounts, hex);
    return account && act_held_cut (account) && act_held_bytes (account) > 0;
}

zframe_t *
act_outbox_next_cut (act_outbox_t *self)
{
    return (zframe_t *) zlistx_detach (self->cuts, NULL);
}

uint64_t
act_outbox_cuts (act_outbox_t *self)
{
    return self->cut;
}

//  The account of the client out goes to, made when it has none
static act_held_t *
s_account (act_outbox_t *self, const char *client)
{
    act_held_t *account = (act_held_t *) zhashx_lookup (self->accounts, client);
    if (!account) {
        account = act_held_new ();
        if (!account) {
            act_log (LOG_ERR, "out of memory for the account of client %s", client);
            abort ();                           //  As CZMQ's allocations do
        }
        zhashx_insert (self->accounts, client, account);
    }
    return account;
}

//  A reply of bytes would take the client of out past max_client_bytes
//  (held already): it does not read. Its connection is to be cut, once.
static void
s_over (act_outbox_t *self, act_out_t *out, const char *client, size_t held, size_t bytes)
{
    self->cut++;
    zlistx_add_end (self->cuts, zframe_new (zmq_msg_data (&out->parts [0]),
                                             zmq_msg_size (&out->parts [0])));
    act_log_peer (LOG_WARNING, client, "client not reading its replies",
                  "client %s does not read its replies: %zu bytes queued to it, a reply "
                  "of %zu more would pass server/max_client_bytes (%zu): its replies are "
                  "dropped and its connection cut", client, held, bytes,
                  self->max_client_bytes);
}

//  True when out may go to its client: what libzmq holds for the client
//  stays within max_client_bytes (or nothing is held). Its tracked frames
//  are then charged to the client's account. A client past it is cut, and
//  gets nothing until libzmq holds nothing for it.
static bool
s_admit (act_outbox_t *self, act_out_t *out)
{
    if (!out->tracked || out->nparts == 0)
        return true;
    size_t bytes = 0;
    for (size_t part = 0; part < out->nparts; part++)
        if (out->tracked & (1u << part))
            bytes += zmq_msg_size (&out->parts [part]);
    char *client = s_hex (zmq_msg_data (&out->parts [0]), zmq_msg_size (&out->parts [0]));
    act_held_t *account = s_account (self, client);
    size_t held = act_held_bytes (account);
    if (held == 0)
        act_held_set_cut (account, false);  //  Its connection is gone, or it read
    bool admitted = !act_held_cut (account)
                 && (self->max_client_bytes == 0 || held == 0
                 ||  held + bytes <= self->max_client_bytes);
    for (size_t part = 0; admitted && part < out->nparts; part++)
        if (out->tracked & (1u << part))
            act_ticket_charge (out->tickets [part], account);
    if (!admitted && !act_held_cut (account)) {
        act_held_set_cut (account, true);
        s_over (self, out, client, held, bytes);
    }
    free (client);
    return admitted;
}

//  True when out has no owner, or the guard says its owner holds its
//  routing id now and may still reach its context; counts and logs the
//  others
static bool
s_owned (act_outbox_t *self, act_out_t *out)
{
    if (!out->owner [0] || !self->guard || out->nparts == 0
    ||  self->guard (self->guard_arg, zmq_msg_data (&out->parts [0]),
                     zmq_msg_size (&out->parts [0]), out->owner, out->reach))
        return true;
    self->unowned++;
    char *client = s_hex (zmq_msg_data (&out->parts [0]), zmq_msg_size (&out->parts [0]));
    if (out->reach)
        act_log_peer (LOG_INFO, client, "reply owed to another key",
                      "reply owed to key %s not sent to routing id %s: its connection is "
                      "not that key's (it left, or has not spoken since it connected), or "
                      "the key was revoked, or its tenant no longer reaches context %s",
                      out->owner, client, out->reach);
    else
        act_log_peer (LOG_INFO, client, "reply owed to another key",
                      "reply owed to key %s not sent to routing id %s: its connection is "
                      "not that key's (it left, or has not spoken since it connected)",
                      out->owner, client);
    free (client);
    return false;
}

//  Send the first count messages and close them; the others move up
static size_t
s_flush (act_outbox_t *self, size_t count, act_outbox_send_fn *send, void *arg)
{
    size_t sent = 0;
    for (size_t i = 0; i < count; i++) {
        act_out_t *out = &self->messages [i];
        if (out->gone) {
            self->gone--;
            continue;
        }
        if (send && s_owned (self, out) && s_admit (self, out) && send (arg, out->to_worker, out->parts, out->nparts))
            sent++;
        s_close (out);
    }
    if (count < self->size)
        memmove (self->messages, self->messages + count,
                 (self->size - count) * sizeof (act_out_t));
    self->size -= count;
    self->sealed = 0;
    self->counted = self->bytes = 0;
    s_rescan (self);
    return sent;
}

size_t
act_outbox_flush (act_outbox_t *self, act_outbox_send_fn *send, void *arg)
{
    return s_flush (self, self->size, send, arg);
}

void
act_outbox_seal (act_outbox_t *self)
{
    self->sealed = self->size;
}

size_t
act_outbox_flush_sealed (act_outbox_t *self, act_outbox_send_fn *send, void *arg)
{
    return s_flush (self, self->sealed, send, arg);
}

bool
act_outbox_awaits_early (act_outbox_t *self)
{
    bool early = false;
    for (size_t i = self->sealed; i < self->size; i++) {
        act_out_t *out = &self->messages [i];
        if (out->gone || out->early)
            early = true;
        else
        if (!out->patient)
            return false;
    }
    return early;
}

//  True when out goes to the same worker as a message held before it
static bool
s_held_before (act_outbox_t *self, act_out_t *out)
{
    zmq_msg_t *id = &out->parts [0];
    for (size_t i = 0; i < self->nheld; i++) {
        if (act_part_same (&self->messages [self->held [i]].parts [0], id))
            return true;
    }
    return false;
}

//  Each message is judged once between two flushes: what left becomes an
//  empty slot (nothing moves), what is held to a worker is remembered for
//  the messages after it
size_t
act_outbox_flush_early (act_outbox_t *self, act_outbox_send_fn *send, void *arg)
{
    size_t sent = 0;
    for (; self->scanned < self->size && !self->crowded; self->scanned++) {
        size_t index = self->scanned;
        act_out_t *out = &self->messages [index];
        if (!out->to_worker || out->gone)
            continue;
        if (out->early && out->nparts && !s_held_before (self, out)) {
            if (send && send (arg, true, out->parts, out->nparts))
                sent++;
            s_close (out);
            if (index < self->counted)
                self->bytes -= out->bytes;
            out->bytes = 0;
            out->gone = true;
            self->gone++;
        }
        else
        if (self->nheld < S_HELD_WORKERS)
            self->held [self->nheld++] = index;
        else
            self->crowded = true;
    }
    return sent;
}
