/*  =========================================================================
    act_pages - reply pages: HISTORY pages built in pieces, and a CONTEXTS
    page cut to a reply's bound (see act_pages.h).
    ========================================================================= */

#include "act_pages.h"
#include "act_frame.h"
#include "act_log.h"
#include "actd/act_json.h"
#include "actd/act_text.h"
#include "actd/act_wire.h"

//  Messages read from the store per piece, at most
#define S_PIECE_MESSAGES 64

//  Bytes of pages one client's turn builds at most: a quarter of the
//  broker's budget for a pass (S_PAGE_BUDGET), so that several clients'
//  pages go forward in each pass
#define S_SLICE_BYTES (64 * 1024)

//  HISTORY requests pending per client (its pages and those held), at
//  most; past it a HISTORY is refused busy. A page may be max_reply_bytes
//  (8 MiB): 64 of them are 512 MiB, far more than max_client_bytes lets a
//  client have unread, so one that reads its replies loses nothing by the
//  bound. A constant: no setting bounds requests per client, and
//  max_client_bytes bounds what libzmq holds, not the pages to build.
#define S_CLIENT_HISTORIES 64

//  Requests held behind one client's pages, and their bytes, at most: as
//  many as the broker reads ahead for all clients while it cannot serve
//  them (S_DEFER_CLIENTS, S_DEFER_BYTES); past them a request is refused
//  busy
#define S_CLIENT_HELD 1024
#define S_CLIENT_HELD_BYTES (16 * 1024 * 1024)

//  Bytes of a routing id, at most (libzmq's bound)
#define S_ID_MAX 255

//  One page being built
typedef struct {
    zframe_t *client;           //  Whom to answer
    zframe_t *request;          //  Its request id
    bool enveloped;             //  A REQ client: the reply gets an empty frame
    char owner [ACT_OWNER_SIZE];    //  The CURVE key it asked with, or ""
    char *context;              //  The context read
    uint64_t next;              //  The next _seq to read
    size_t left;                //  Messages the page may still take
    size_t count;               //  Messages in the page
    zchunk_t *text;             //  The page's text so far: "[" and messages
} s_page_t;

//  A request held behind its client's pages
typedef struct {
    act_msg_t msg;              //  The request, as it came (frames moved here)
    bool history;               //  A HISTORY: dropped when its client is gone
} s_held_t;

//  A client with pages pending or requests held
typedef struct {
    char *key;                  //  Its routing id in hex (the table's key)
    void *turn;                 //  Its handle in the list of turns
    zlistx_t *pages;            //  s_page_t, in the order of its requests
    zlistx_t *held;             //  s_held_t, its requests since, in order
    size_t held_bytes;          //  Bytes of the requests held
    size_t histories;           //  HISTORY requests among them
} s_client_t;

struct _act_pages_t {
    act_store_t *store;         //  Where messages are read (borrowed)
    act_outbox_t *outbox;       //  Where pages go (borrowed)
    size_t max_bytes;           //  Most text in one page (max_reply_bytes)
    zhashx_t *clients;          //  s_client_t by key, each with work pending
    zlistx_t *turns;            //  The same clients (borrowed), the next to
                                //  serve first
    act_pages_serve_fn *serve;  //  Serves a held request, or NULL: none held
    void *serve_arg;            //  Its argument
};

static void
s_page_destroy (s_page_t **self_p)
{
    if (*self_p) {
        s_page_t *self = *self_p;
        zframe_destroy (&self->client);
        zframe_destroy (&self->request);
        free (self->context);
        zchunk_destroy (&self->text);
        free (self);
        *self_p = NULL;
    }
}

//  The pages' list destructor
static void
s_page_free (void **item)
{
    s_page_destroy ((s_page_t **) item);
}

//  Destroy a held request (its frames closed) and null the pointer
static void
s_held_free (void **item)
{
    if (*item) {
        act_msg_close (&((s_held_t *) *item)->msg);
        free (*item);
        *item = NULL;
    }
}

//  Destroy a client, its pages and its held requests; null the pointer
static void
s_client_free (void **item)
{
    if (*item) {
        s_client_t *client = (s_client_t *) *item;
        zlistx_destroy (&client->pages);
        zlistx_destroy (&client->held);
        free (client->key);
        free (client);
        *item = NULL;
    }
}

act_pages_t *
act_pages_new (act_store_t *store, act_outbox_t *outbox, size_t max_bytes)
{
    act_pages_t *self = (act_pages_t *) calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->outbox = outbox;
    self->max_bytes = max_bytes;
    self->clients = zhashx_new ();
    self->turns = zlistx_new ();
    if (!self->clients || !self->turns) {
        act_pages_destroy (&self);
        return NULL;
    }
    zhashx_set_destructor (self->clients, s_client_free);
    return self;
}

void
act_pages_destroy (act_pages_t **self_p)
{
    if (self_p && *self_p) {
        act_pages_t *self = *self_p;
        zlistx_destroy (&self->turns);
        zhashx_destroy (&self->clients);
        free (self);
        *self_p = NULL;
    }
}

void
act_pages_set_server (act_pages_t *self, act_pages_serve_fn *serve, void *arg)
{
    if (self) {
        self->serve = serve;
        self->serve_arg = arg;
    }
}

//  The client with routing id (size bytes), or NULL; key (room for the
//  hex of S_ID_MAX bytes) gets its key. An id past S_ID_MAX has none.
static s_client_t *
s_client_find (act_pages_t *self, const void *id, size_t size, char *key)
{
    if (size > S_ID_MAX) {
        key [0] = 0;
        return NULL;
    }
    act_hex_write (key, id, size);
    return (s_client_t *) zhashx_lookup (self->clients, key);
}

//  The client with routing id, made (with its turn last) when new; NULL
//  when out of memory
static s_client_t *
s_client_get (act_pages_t *self, const void *id, size_t size)
{
    char key [S_ID_MAX * 2 + 1];
    s_client_t *client = s_client_find (self, id, size, key);
    if (client || !key [0])
        return client;
    client = (s_client_t *) calloc (1, sizeof *client);
    if (!client)
        return NULL;
    client->key = strdup (key);
    client->pages = zlistx_new ();
    client->held = zlistx_new ();
    if (!client->key || !client->pages || !client->held) {
        s_client_free ((void **) &client);
        return NULL;
    }
    zlistx_set_destructor (client->pages, s_page_free);
    zlistx_set_destructor (client->held, s_held_free);
    zhashx_insert (self->clients, key, client);
    client->turn = zlistx_add_end (self->turns, client);
    return client;
}

//  True when client has pages pending or requests held
static bool
s_pending (s_client_t *client)
{
    return client && (zlistx_size (client->pages) || zlistx_size (client->held));
}

//  Forget client (nothing pending)
static void
s_client_remove (act_pages_t *self, s_client_t *client)
{
    zlistx_delete (self->turns, client->turn);
    zhashx_delete (self->clients, client->key);
}

void
act_pages_start (act_pages_t *self, zframe_t *client, zframe_t *request, bool enveloped,
                 const char *context, uint64_t from, size_t limit)
{
    s_client_t *owner = s_client_get (self, zframe_data (client), zframe_size (client));
    s_page_t *page = (s_page_t *) calloc (1, sizeof *page);
    if (!owner || !page) {
        free (page);
        act_err_t err = { 0 };
        act_err_set (&err, ACT_E_INTERNAL, "the page could not be kept (out of memory)");
        act_outbox_envelope (self->outbox, enveloped? client: NULL);
        act_outbox_error (self->outbox, client, request, "HISTORY", &err, NULL);
        act_outbox_envelope (self->outbox, NULL);
        return;
    }
    page->client = zframe_dup (client);
    page->request = zframe_dup (request);
    page->enveloped = enveloped;
    //  Asked while served: the page is owed to that key (act_outbox_serving)
    const char *key = act_outbox_serving_owner (self->outbox);
    if (key && strlen (key) < ACT_OWNER_SIZE)
        strcpy (page->owner, key);
    page->context = strdup (context);
    page->next = from;
    page->left = limit;
    page->text = zchunk_new ("[", 1);
    zlistx_add_end (owner->pages, page);
}

//  Answer the page: VALUE with its text, or ERROR internal, owed to the
//  key that asked for it
static void
s_answer (act_pages_t *self, s_page_t *page, bool failed)
{
    act_outbox_envelope (self->outbox, page->enveloped? page->client: NULL);
    act_outbox_serving (self->outbox, page->client, page->owner);
    if (failed) {
        act_err_t err = { 0 };
        act_err_set (&err, ACT_E_INTERNAL, "the store could not read the history");
        act_outbox_error (self->outbox, page->client, page->request, "HISTORY", &err, NULL);
    }
    else {
        zchunk_extend (page->text, "]", 1);
        act_out_t *out = act_outbox_reply (self->outbox, page->client, page->request, "VALUE",
                                           false);
        act_out_add (out, zchunk_data (page->text), zchunk_size (page->text));
    }
    act_outbox_envelope (self->outbox, NULL);
    act_outbox_serving (self->outbox, NULL, NULL);
}

//  A piece being read into a page
typedef struct {
    act_pages_t *pages;         //  The pages' owner
    s_page_t *page;             //  The page read into
    size_t added;               //  Bytes added by the piece
    size_t read;                //  Stored messages read
    bool done;                  //  The page is whole
} s_piece_t;

//  Add one stored message to the page: its stored text itself when that
//  is what writing it again would give (the usual case), else its text
//  read and written again, as HISTORY always returned it
static int
s_piece_message (uint64_t seq, const char *stored, size_t size, void *arg)
{
    s_piece_t *piece = (s_piece_t *) arg;
    s_page_t *page = piece->page;
    piece->read++;
    const char *text = stored;
    char *written = NULL;
    if (!act_json_is_dump (stored, size)) {
        written = act_json_redump (stored, size);
        if (!written) {
            page->next = seq + 1;       //  A text that does not read is left out
            return 0;
        }
        text = written;
        size = strlen (written);
    }
    //  "[" and each message with its "," or "]": the rule of one read
    if (page->count && zchunk_size (page->text) + size + 1 > piece->pages->max_bytes) {
        free (written);
        piece->done = true;
        return 1;
    }
    if (page->count)
        zchunk_extend (page->text, ",", 1);
    zchunk_extend (page->text, text, size);
    free (written);
    piece->added += size + 1;
    page->count++;
    page->next = seq + 1;
    if (--page->left == 0) {
        piece->done = true;
        return 1;
    }
    return 0;
}

//  Add a piece of about budget bytes to page. Returns the bytes added;
//  *done when the page is whole (or *failed).
static size_t
s_piece (act_pages_t *self, s_page_t *page, size_t budget, bool *done, bool *failed)
{
    size_t room = self->max_bytes - zchunk_size (page->text);
    size_t bound = budget < room? budget: room;
    s_piece_t piece = { self, page, 0, 0, false };
    *failed = act_store_history_texts (self->store, page->context, page->next,
                                       page->left < S_PIECE_MESSAGES? page->left
                                                                    : S_PIECE_MESSAGES,
                                       bound? bound: 1, s_piece_message, &piece) != 0;
    *done = *failed || piece.done || piece.read == 0;
    return piece.added;
}

//  Refuse msg busy at once, why being the message (reason: the same for
//  the log), when it can be answered: a request from client (hex key) with
//  an ACTC01 header and a request id. Returns false when it cannot (it is
//  then served as it is: refused, or dropped as too short, by the command
//  table).
static bool
s_refuse (act_pages_t *self, act_msg_t *msg, const char *key, const char *reason,
          const char *why)
{
    zmq_msg_t *delimiter = act_msg_part (msg, 1);
    bool from_req = delimiter && zmq_msg_size (delimiter) == 0;
    size_t at = from_req? 2: 1;
    zmq_msg_t *request = act_msg_part (msg, at + 2);
    if (msg->size < at + 3 || !act_part_is (act_msg_part (msg, at), ACT_CLIENT_HEADER)
    ||  !request || zmq_msg_size (request) == 0
    ||  zmq_msg_size (request) > ACT_MAX_REQUEST_ID)
        return false;
    act_log_peer (LOG_WARNING, key, reason, "client %s: a request refused busy: %s", key, why);
    zmq_msg_t *client = act_msg_part (msg, 0);
    act_outbox_envelope (self->outbox, from_req? act_msg_routing (msg): NULL);
    //  Owed to its key, as when it is served (act_outbox_serving)
    act_outbox_serving (self->outbox, act_msg_routing (msg),
                        act_part_meta (act_msg_part (msg, at), "User-Id"));
    act_out_t *out = act_outbox_reply_to (self->outbox, zmq_msg_data (client),
                                          zmq_msg_size (client), zmq_msg_data (request),
                                          zmq_msg_size (request), "ERROR", false);
    act_out_addstr (out, ACT_E_BUSY);
    act_out_addstr (out, why);
    act_outbox_envelope (self->outbox, NULL);
    act_outbox_serving (self->outbox, NULL, NULL);
    act_msg_close (msg);
    return true;
}

bool
act_pages_hold (act_pages_t *self, act_msg_t *msg)
{
    if (!self || !self->serve || zhashx_size (self->clients) == 0 || msg->held == 0)
        return false;
    char key [S_ID_MAX * 2 + 1];
    zmq_msg_t *id = act_msg_part (msg, 0);
    s_client_t *client = s_client_find (self, zmq_msg_data (id), zmq_msg_size (id), key);
    if (!s_pending (client))
        return false;
    zmq_msg_t *delimiter = act_msg_part (msg, 1);
    size_t at = delimiter && zmq_msg_size (delimiter) == 0? 2: 1;
    bool history = act_part_is (act_msg_part (msg, at + 1), "HISTORY");
    char why [160];
    if (history && client->histories + zlistx_size (client->pages) >= S_CLIENT_HISTORIES) {
        snprintf (why, sizeof why, "this client has %d HISTORY requests pending; ask again "
                  "once their replies came", S_CLIENT_HISTORIES);
        return s_refuse (self, msg, key, "too many HISTORY requests pending", why);
    }
    if (zlistx_size (client->held) >= S_CLIENT_HELD
    ||  client->held_bytes + msg->bytes > S_CLIENT_HELD_BYTES) {
        snprintf (why, sizeof why, "this client has %d requests (or %d MiB) waiting behind "
                  "its HISTORY pages; ask again once their replies came", S_CLIENT_HELD,
                  S_CLIENT_HELD_BYTES >> 20);
        return s_refuse (self, msg, key, "too many requests behind HISTORY pages", why);
    }
    s_held_t *held = (s_held_t *) calloc (1, sizeof *held);
    if (!held)
        return false;
    held->msg = *msg;
    for (size_t index = 0; index < msg->held; index++) {
        zmq_msg_init (&held->msg.part [index]);
        zmq_msg_move (&held->msg.part [index], &msg->part [index]);
        zmq_msg_close (&msg->part [index]);
    }
    msg->routing = NULL;                //  Moved with the rest
    msg->held = msg->size = msg->bytes = 0;
    held->history = history;
    zlistx_add_end (client->held, held);
    client->held_bytes += held->msg.bytes;
    client->histories += history;
    return true;
}

bool
act_pages_holds (act_pages_t *self, const void *client, size_t size)
{
    char key [S_ID_MAX * 2 + 1];
    return self && zhashx_size (self->clients)
        && s_pending (s_client_find (self, client, size, key));
}

void
act_pages_drop_client (act_pages_t *self, const void *client, size_t size)
{
    char key [S_ID_MAX * 2 + 1];
    s_client_t *gone = self? s_client_find (self, client, size, key): NULL;
    if (!gone)
        return;
    size_t dropped = zlistx_size (gone->pages) + gone->histories;
    zlistx_purge (gone->pages);
    //  The HISTORY requests held go; the others stay, in their order
    for (size_t count = zlistx_size (gone->held); count; count--) {
        s_held_t *held = (s_held_t *) zlistx_detach (gone->held, NULL);
        if (held->history) {
            gone->held_bytes -= held->msg.bytes;
            s_held_free ((void **) &held);
        }
        else
            zlistx_add_end (gone->held, held);
    }
    gone->histories = 0;
    //  The client stays listed until its turn: this may run amid a pump
    if (dropped)
        act_log (LOG_INFO, "client %s is gone: %zu HISTORY requests dropped unbuilt",
                 key, dropped);
}

//  Client's turn with a page: a piece of its first page, of slice bytes at
//  most, and its answer when whole. Returns the bytes built.
static size_t
s_build (act_pages_t *self, s_client_t *client, size_t slice)
{
    s_page_t *page = (s_page_t *) zlistx_first (client->pages);
    if (!page->count && act_outbox_client_over (self->outbox, page->client)) {
        //  Its client does not read: the page would be dropped
        zlistx_delete (client->pages, zlistx_cursor (client->pages));
        return 0;
    }
    bool done = false, failed = false;
    size_t added = page->left? s_piece (self, page, slice, &done, &failed): 0;
    if (!page->left)
        done = true;
    if (done) {
        s_answer (self, page, failed);
        zlistx_delete (client->pages, zlistx_cursor (client->pages));
    }
    return added;
}

//  Client's turn with no page: serve its requests held, in order, until
//  one starts a page, or their replies pass slice bytes. Returns those.
static size_t
s_serve (act_pages_t *self, s_client_t *client, size_t slice)
{
    size_t before = act_outbox_bytes (self->outbox), spent = 0;
    while (zlistx_size (client->held) && !zlistx_size (client->pages) && spent < slice) {
        s_held_t *held = (s_held_t *) zlistx_detach (client->held, NULL);
        client->held_bytes -= held->msg.bytes;
        client->histories -= held->history;
        self->serve (self->serve_arg, &held->msg);
        s_held_free ((void **) &held);
        size_t after = act_outbox_bytes (self->outbox);
        spent = after > before? after - before: 0;
    }
    return spent;
}

size_t
act_pages_pump (act_pages_t *self, size_t budget)
{
    while (budget && zlistx_size (self->turns)) {
        s_client_t *client = (s_client_t *) zlistx_first (self->turns);
        size_t slice = budget < S_SLICE_BYTES? budget: S_SLICE_BYTES;
        size_t spent = 0;
        if (zlistx_size (client->pages))
            spent = s_build (self, client, slice);
        else
        if (zlistx_size (client->held) && self->serve)
            spent = s_serve (self, client, slice);
        else
            zlistx_purge (client->held);    //  No server: nothing to serve them
        budget = spent >= budget? 0: budget - spent;
        //  The next client's turn; this one's again after all the others
        if (s_pending (client))
            zlistx_move_end (self->turns, client->turn);
        else
            s_client_remove (self, client);
    }
    return zlistx_size (self->turns);
}

size_t
act_pages_size (act_pages_t *self)
{
    return zlistx_size (self->turns);
}

//  See act_pages.h
json_t *
act_pages_contexts (json_t *page, size_t limit, size_t max_bytes)
{
    size_t count = json_array_size (page);
    size_t used = strlen ("{\"contexts\":[]}");
    size_t kept;
    for (kept = 0; kept < count && kept < limit; kept++) {
        json_t *entry = json_array_get (page, kept);
        char *text = act_json_dump (entry);
        char *next = kept + 1 < count
                   ? act_json_quote (json_string_value (json_object_get (entry, "context")))
                   : NULL;
        size_t bytes = (text? strlen (text): max_bytes) + (kept? 1: 0);
        size_t tail = next? strlen (",\"next\":") + strlen (next): 0;
        free (text);
        free (next);
        if (kept && used + bytes + tail > max_bytes)
            break;
        used += bytes;
    }
    json_t *reply = json_object ();
    if (kept < count)
        json_object_set (reply, "next", json_object_get (json_array_get (page, kept - 1),
                                                         "context"));
    for (size_t index = count; index > kept; index--)
        json_array_remove (page, index - 1);
    json_object_set_new (reply, "contexts", page);
    return reply;
}
