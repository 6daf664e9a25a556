/*  =========================================================================
    act_watch - the open watches (see act_watch.h).
    ========================================================================= */

#include "act_watch.h"
#include "actd/act.h"

#define S_PAGE  256             //  Stored messages read at a time

typedef struct {
    zframe_t *client;           //  Routing id of the client socket
    zframe_t *request;          //  Request id of its WATCH: echoed in events
    char *context;              //  Context it follows
    uint64_t next;              //  _seq of the next message to send
    bool behind;                //  Stored messages may come before the
                                //  live ones: the pump reads them
    bool calls;                 //  Also the calls' changes of state
    void *handle;               //  Its handle in its context's list (or
                                //  in ended)
    char owner [ACT_OWNER_SIZE];    //  CURVE key of the client that opened
                                //  it: events go to that key's connection
                                //  only ("": no CURVE)
    uint64_t ended_in;          //  In ended: the batch whose DELETE ended it
} s_watch_t;

//  What a failed commit dropped of one watch's events (act_watches_lost)
typedef struct {
    uint64_t seq;               //  The first message event's _seq, or 0
    bool deleted;               //  Its {"deleted": true}
} s_lost_t;

struct _act_watches_t {
    act_store_t *store;         //  Backlogs come from it (borrowed)
    act_outbox_t *outbox;       //  Events go out through it (borrowed)
    zhashx_t *contexts;         //  Context id -> zlistx_t of s_watch_t
    zlistx_t *ended;            //  Watches a DELETE ended, until its
                                //  commit: open again if it fails
    zhashx_t *lost;             //  s_key -> s_lost_t, from act_watches_lost
                                //  to act_watches_rewind
    size_t size;                //  Watches open
    size_t behind;              //  Watches with a backlog left to send
    size_t max;                 //  At most this many (max_watches)
};

static void
s_watch_destroy (void **item)
{
    s_watch_t *watch = (s_watch_t *) *item;
    zframe_destroy (&watch->client);
    zframe_destroy (&watch->request);
    free (watch->context);
    free (watch);
    *item = NULL;
}

static void
s_lost_destroy (void **item)
{
    free (*item);
    *item = NULL;
}

static void
s_list_destroy (void **item)
{
    zlistx_destroy ((zlistx_t **) item);
}

act_watches_t *
act_watches_new (act_store_t *store, act_outbox_t *outbox, size_t max)
{
    act_watches_t *self = (act_watches_t *) calloc (1, sizeof (act_watches_t));
    if (!self)
        return NULL;
    self->store = store;
    self->outbox = outbox;
    self->max = max;
    self->contexts = zhashx_new ();
    zhashx_set_destructor (self->contexts, s_list_destroy);
    self->ended = zlistx_new ();
    zlistx_set_destructor (self->ended, s_watch_destroy);
    self->lost = zhashx_new ();
    zhashx_set_destructor (self->lost, s_lost_destroy);
    return self;
}

void
act_watches_destroy (act_watches_t **self_p)
{
    if (self_p && *self_p) {
        zhashx_destroy (&(*self_p)->contexts);
        zlistx_destroy (&(*self_p)->ended);
        zhashx_destroy (&(*self_p)->lost);
        free (*self_p);
        *self_p = NULL;
    }
}

//  A stored message (size bytes at text) as HISTORY gives it: the stored
//  text itself when writing it again would give the same bytes (the usual
//  case: no JSON is read), else the text read and written again, in
//  *written (the caller frees it). False for a text that does not read.
static bool
s_form (const char *text, size_t size, char **written)
{
    *written = NULL;
    if (act_json_is_dump (text, size))
        return true;
    *written = act_json_redump (text, size);
    return *written != NULL;
}

//  An EVENT with body to watch: a large body's bytes are shared by every
//  watcher's EVENT (act_out_shared), not copied into each
static void
s_event (act_watches_t *self, s_watch_t *watch, act_shared_t *body)
{
    //  Durable: it reports what a commit made durable, and a failed
    //  commit drops it
    act_out_t *out = act_outbox_reply (self->outbox, watch->client, watch->request, "EVENT",
                                       true);
    act_out_owner (out, watch->owner, watch->context);
    act_out_shared (out, body);
}

//  The body of an event, head, then size bytes at text, then tail, built
//  once for every watcher it goes to (the caller destroys it)
static act_shared_t *
s_body (const char *head, const char *text, size_t size, const char *tail)
{
    size_t before = strlen (head), after = strlen (tail);
    act_shared_t *body = act_shared_new (before + size + after);
    char *data = (char *) act_shared_data (body);
    memcpy (data, head, before);
    memcpy (data + before, text, size);
    memcpy (data + before + size, tail, after);
    return body;
}

//  The body {"seq": N, "message": <text of size bytes>} of a message event
static act_shared_t *
s_message_body (uint64_t seq, const char *text, size_t size)
{
    char head [48];
    snprintf (head, sizeof head, "{\"seq\":%" PRIu64 ",\"message\":", seq);
    return s_body (head, text, size, "}");
}

//  The message event of seq (its text, size bytes) to watch alone
static void
s_send_message (act_watches_t *self, s_watch_t *watch, uint64_t seq, const char *text,
                size_t size)
{
    act_shared_t *body = s_message_body (seq, text, size);
    s_event (self, watch, body);
    act_shared_destroy (&body);
    watch->next = seq + 1;
}

int
act_watches_open (act_watches_t *self, zframe_t *client, zframe_t *request,
                  const char *context, uint64_t next, bool backlog, bool calls,
                  act_err_t *err)
{
    if (self->size >= self->max)
        return act_err_set (err, ACT_E_BUSY, "%zu watches are open (max_watches)", self->size);
    zlistx_t *list = (zlistx_t *) zhashx_lookup (self->contexts, context);
    if (!list) {
        list = zlistx_new ();
        zlistx_set_destructor (list, s_watch_destroy);
        zhashx_insert (self->contexts, context, list);
    }
    s_watch_t *watch = calloc (1, sizeof (s_watch_t));
    watch->client = zframe_dup (client);
    watch->request = zframe_dup (request);
    watch->context = strdup (context);
    watch->next = next;
    watch->behind = backlog;
    self->behind += backlog;
    watch->calls = calls;
    const char *owner = act_outbox_serving_owner (self->outbox);
    if (owner && strlen (owner) < ACT_OWNER_SIZE)
        strcpy (watch->owner, owner);
    watch->handle = zlistx_add_end (list, watch);
    self->size++;
    return 0;
}

//  End watch (in list, of its context): forget it, and its context's
//  list when it was the last
static void
s_end (act_watches_t *self, zlistx_t *list, s_watch_t *watch)
{
    char *context = strdup (watch->context);
    self->behind -= watch->behind;
    zlistx_delete (list, watch->handle);
    self->size--;
    if (zlistx_size (list) == 0)
        zhashx_delete (self->contexts, context);
    free (context);
}

void
act_watches_close (act_watches_t *self, zframe_t *client, zframe_t *request)
{
    for (zlistx_t *list = zhashx_first (self->contexts); list;
         list = zhashx_next (self->contexts))
        for (s_watch_t *watch = zlistx_first (list); watch; watch = zlistx_next (list))
            if (zframe_eq (watch->client, client) && zframe_eq (watch->request, request)) {
                s_end (self, list, watch);
                return;             //  (The iteration ends: s_end may free list)
            }
}

void
act_watches_message (act_watches_t *self, const char *context, uint64_t seq,
                     const char *text)
{
    zlistx_t *list = (zlistx_t *) zhashx_lookup (self->contexts, context);
    char *written = NULL;
    act_shared_t *body = NULL;
    for (s_watch_t *watch = list? zlistx_first (list): NULL; watch; watch = zlistx_next (list))
        if (!watch->behind && seq >= watch->next) {
            //  The message as HISTORY gives it (the stored text holds the
            //  call as the client wrote it, white space included); a text
            //  that does not read goes as it is. Built once, for every
            //  watcher
            if (!body) {
                size_t size = strlen (text);
                if (s_form (text, size, &written) && written)
                    body = s_message_body (seq, written, strlen (written));
                else
                    body = s_message_body (seq, text, size);
            }
            s_event (self, watch, body);
            watch->next = seq + 1;
        }
    act_shared_destroy (&body);
    free (written);
}

bool
act_watches_calls (act_watches_t *self, const char *context)
{
    zlistx_t *list = (zlistx_t *) zhashx_lookup (self->contexts, context);
    for (s_watch_t *watch = list? zlistx_first (list): NULL; watch; watch = zlistx_next (list))
        if (watch->calls)
            return true;
    return false;
}

void
act_watches_tell (act_watches_t *self, zframe_t *client, zframe_t *request,
                  const char *status)
{
    act_out_t *out = act_outbox_reply (self->outbox, client, request, "EVENT", true);
    char *body = zsys_sprintf ("{\"call\":%s}", status);
    act_out_addstr (out, body);
    zstr_free (&body);
}

void
act_watches_call (act_watches_t *self, const char *context, const char *status)
{
    zlistx_t *list = (zlistx_t *) zhashx_lookup (self->contexts, context);
    if (!list)
        return;
    act_shared_t *body = NULL;
    for (s_watch_t *watch = zlistx_first (list); watch; watch = zlistx_next (list))
        if (watch->calls) {
            if (!body)
                body = s_body ("{\"call\":", status, strlen (status), "}");
            s_event (self, watch, body);
        }
    act_shared_destroy (&body);
}

void
act_watches_deleted (act_watches_t *self, const char *context)
{
    zlistx_t *list = (zlistx_t *) zhashx_lookup (self->contexts, context);
    if (!list)
        return;
    act_shared_t *body = s_body ("{\"deleted\":true}", "", 0, "");
    //  Kept aside until the DELETE's commit: a failed one deleted nothing
    uint64_t batch = self->store? act_store_generation (self->store): 0;
    s_watch_t *watch;
    while ((watch = (s_watch_t *) zlistx_detach (list, NULL))) {
        s_event (self, watch, body);
        self->behind -= watch->behind;
        self->size--;
        watch->ended_in = batch;
        watch->handle = zlistx_add_end (self->ended, watch);
    }
    act_shared_destroy (&body);
    zhashx_delete (self->contexts, context);
}

void
act_watches_drop_client (act_watches_t *self, const void *id, size_t size)
{
    zlistx_t *ended = zlistx_new ();
    for (zlistx_t *list = zhashx_first (self->contexts); list;
         list = zhashx_next (self->contexts))
        for (s_watch_t *watch = zlistx_first (list); watch; watch = zlistx_next (list))
            if (zframe_size (watch->client) == size
            &&  memcmp (zframe_data (watch->client), id, size) == 0)
                zlistx_add_end (ended, watch);
    for (s_watch_t *watch = zlistx_first (ended); watch; watch = zlistx_next (ended))
        s_end (self, zhashx_lookup (self->contexts, watch->context), watch);
    zlistx_destroy (&ended);
    //  And those a DELETE ended, which nothing could open again
    s_watch_t *watch = zlistx_first (self->ended);
    while (watch) {
        s_watch_t *next = zlistx_next (self->ended);
        if (zframe_size (watch->client) == size
        &&  memcmp (zframe_data (watch->client), id, size) == 0)
            zlistx_delete (self->ended, watch->handle);
        watch = next;
    }
}

//  A backlog being replayed to a watch
typedef struct {
    act_watches_t *watches;     //  The watches' owner
    s_watch_t *watch;           //  The watch replayed to
    size_t read;                //  Stored messages read
} s_replay_t;

//  One stored message of a backlog to its watch, from its stored text (a
//  text that does not read is left out, as HISTORY leaves it out)
static int
s_replay_message (uint64_t seq, const char *text, size_t size, void *arg)
{
    s_replay_t *replay = (s_replay_t *) arg;
    replay->read++;
    char *written;
    if (s_form (text, size, &written))
        s_send_message (replay->watches, replay->watch, seq, written? written: text,
                        written? strlen (written): size);
    else
        replay->watch->next = seq + 1;
    free (written);
    return 0;
}

//  Send one page of watch's backlog; returns the messages read
static size_t
s_pump_one (act_watches_t *self, s_watch_t *watch, size_t budget)
{
    size_t limit = budget < S_PAGE? budget: S_PAGE;
    s_replay_t replay = { self, watch, 0 };
    int rc = act_store_history_texts (self->store, watch->context, watch->next, limit, 0,
                                      s_replay_message, &replay);
    //  A short page: what follows is live (a store that could not be read
    //  gives no page: the watch tries again at the next pump)
    if (rc == 0 && replay.read < limit) {
        watch->behind = false;
        self->behind--;
    }
    return replay.read;
}

//  Forget the watches whose DELETE's commit succeeded
static void
s_prune_ended (act_watches_t *self)
{
    s_watch_t *watch = zlistx_first (self->ended);
    while (watch) {
        s_watch_t *next = zlistx_next (self->ended);
        if (!self->store || act_store_durable (self->store, watch->ended_in))
            zlistx_delete (self->ended, watch->handle);
        watch = next;
    }
}

size_t
act_watches_pump (act_watches_t *self, size_t budget)
{
    if (zlistx_size (self->ended))
        s_prune_ended (self);
    size_t sent = 0;
    for (zlistx_t *list = zhashx_first (self->contexts); list && sent < budget;
         list = zhashx_next (self->contexts))
        for (s_watch_t *watch = zlistx_first (list); watch && sent < budget;
             watch = zlistx_next (list))
            if (watch->behind)
                sent += s_pump_one (self, watch, budget - sent);
    return sent;
}

size_t
act_watches_behind (act_watches_t *self)
{
    return self->behind;
}

size_t
act_watches_size (act_watches_t *self)
{
    return self->size;
}

//  The key of the watch client's request opened, in hex (the caller frees
//  it); NULL when out of memory
static char *
s_key (const void *client, size_t client_size, const void *request, size_t request_size)
{
    char *key = (char *) malloc (2 * (client_size + request_size) + 2);
    if (!key)
        return NULL;
    act_hex_write (key, client, client_size);
    key [2 * client_size] = '/';
    act_hex_write (key + 2 * client_size + 1, request, request_size);
    return key;
}

void
act_watches_lost (void *arg, zmq_msg_t *client, zmq_msg_t *request, zmq_msg_t *body)
{
    act_watches_t *self = (act_watches_t *) arg;
    const char *text = (const char *) zmq_msg_data (body);
    size_t size = zmq_msg_size (body);
    //  {"seq":N,"message":...} or {"deleted":true} ({"call":...} is told
    //  again as the recovered call changes state)
    static const char seq_head [] = "{\"seq\":", deleted [] = "{\"deleted\":true}";
    uint64_t seq = 0;
    bool ended = size == strlen (deleted) && memcmp (text, deleted, size) == 0;
    size_t at = strlen (seq_head), digits = 0;
    if (size > at && memcmp (text, seq_head, at) == 0)
        while (at + digits < size && text [at + digits] >= '0' && text [at + digits] <= '9')
            digits++;
    if (digits && !act_decimal_parse (text + at, digits, UINT64_MAX, &seq))
        seq = 0;
    if (!seq && !ended)
        return;
    char *key = s_key (zmq_msg_data (client), zmq_msg_size (client),
                       zmq_msg_data (request), zmq_msg_size (request));
    s_lost_t *lost = key? (s_lost_t *) zhashx_lookup (self->lost, key): NULL;
    if (key && !lost) {
        lost = (s_lost_t *) calloc (1, sizeof (s_lost_t));
        if (lost)
            zhashx_insert (self->lost, key, lost);
    }
    if (!lost) {
        free (key);
        return;
    }
    if (seq && (!lost->seq || seq < lost->seq))
        lost->seq = seq;
    lost->deleted |= ended;
    free (key);
}

//  The events of watch that a failed commit dropped (NULL: none)
static s_lost_t *
s_lost_of (act_watches_t *self, s_watch_t *watch)
{
    char *key = s_key (zframe_data (watch->client), zframe_size (watch->client),
                       zframe_data (watch->request), zframe_size (watch->request));
    s_lost_t *lost = key? (s_lost_t *) zhashx_lookup (self->lost, key): NULL;
    free (key);
    return lost;
}

void
act_watches_rewind (act_watches_t *self)
{
    if (zhashx_size (self->lost) == 0)
        return;
    //  Open again the watches whose DELETE was not kept
    s_watch_t *watch = zlistx_first (self->ended);
    while (watch) {
        s_watch_t *next = zlistx_next (self->ended);
        s_lost_t *lost = s_lost_of (self, watch);
        if (lost && lost->deleted) {
            zlistx_detach (self->ended, watch->handle);
            zlistx_t *list = (zlistx_t *) zhashx_lookup (self->contexts, watch->context);
            if (!list) {
                list = zlistx_new ();
                zlistx_set_destructor (list, s_watch_destroy);
                zhashx_insert (self->contexts, watch->context, list);
            }
            watch->handle = zlistx_add_end (list, watch);
            self->size++;
            self->behind += watch->behind;
        }
        watch = next;
    }
    //  Each goes back to the first message it was not sent, and reads the
    //  store from there: what it holds under that _seq and after comes
    //  once stored (read or appended), whether the store gives that _seq
    //  again or had it already (a page of a backlog dropped)
    for (zlistx_t *list = zhashx_first (self->contexts); list;
         list = zhashx_next (self->contexts))
        for (watch = zlistx_first (list); watch; watch = zlistx_next (list)) {
            s_lost_t *lost = s_lost_of (self, watch);
            if (!lost || !lost->seq || lost->seq >= watch->next)
                continue;
            watch->next = lost->seq;
            if (!watch->behind) {
                watch->behind = true;
                self->behind++;
            }
        }
    zhashx_purge (self->lost);
}
