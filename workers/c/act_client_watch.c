/*  =========================================================================
    act_client_watch - the watches of a C client (PROTOCOL.md section 1.1),
    and waiting for calls to end on DONE or on a watch.

    The broker does not acknowledge a WATCH and a broker that restarted has
    forgotten it, so a watch keeps the _seq of the last message it gave
    out and sends WATCH again, from the next one, whenever it cannot trust
    the stream: after a gap in _seq, and when its connection dropped and
    came back (the link's monitor says so). With several brokers (sharing
    a store) it does not wait for one that went away: a dropped connection
    sends it to another at once, and so does a WATCH that waited a third
    of the client's timeout on a broker not connected (a dead owner that a
    moved reply named, its lease not yet out). Events of the WATCH it replaced
    are dropped by request id, and any message at or before the last _seq
    is dropped too, so the caller sees each message once, in order.
    ========================================================================= */

#include "actd/act_json.h"
#include "act_client_int.h"

//  Milliseconds between looks, with several brokers, for watches whose
//  WATCH waits on a broker that is not connected (act_watch_check)
#define S_CHECK_MS 250

struct _act_watch_t {
    act_client_t *client;       //  Its client; NULL once the client is gone
    char *context;              //  Context watched
    bool calls;                 //  Its calls' changes of state too
    uint64_t from;              //  First _seq asked for (0: only new ones)
    uint64_t last;              //  _seq of the last message event taken (0: none)
    char request [24];          //  Request id of the WATCH now open
    act_link_t *link;           //  Broker it went to, or its events came from
    int64_t sent;               //  When its WATCH went there; 0 once an event came
    bool stale;                 //  That link dropped: WATCH again once it is back
    zlistx_t *events;           //  s_event_t received, not yet returned
    char *text;                 //  Text of the event last returned
    bool ended;                 //  Deleted or refused: no more events
    act_err_t error;            //  Why it ended
    size_t resumes;             //  Times it was sent again
};

//  Send WATCH from the next _seq not yet seen, under a new request id, to
//  the context's broker (avoid: any other than that one)
static void
s_watch_send (act_watch_t *self, act_link_t *avoid)
{
    act_client_t *client = self->client;
    uint64_t next = self->last? self->last + 1: self->from;
    char from [24];
    snprintf (from, sizeof from, "%" PRIu64, next);
    act_link_t *to = avoid? act_client_route (client, self->context, avoid): NULL;
    self->link = act_client_post_on (client, to, self->request, "WATCH", self->context, from,
                                     self->calls? "all": "messages");
    self->sent = zclock_mono ();
    self->stale = false;
    zhashx_insert (client->watches, self->request, self);
}

//  Send UNWATCH for the WATCH now open (its request id in unwatch, 24
//  bytes), and drop whatever the WATCH still sends
static void
s_watch_unwatch (act_watch_t *self, char *unwatch)
{
    act_client_t *client = self->client;
    zhashx_delete (client->watches, self->request);
    act_client_ignore (client, self->request);
    //  PROTOCOL.md section 1.1: UNWATCH names a WATCH of the same socket,
    //  so it goes to the broker the WATCH went to
    act_client_post_on (client, self->link, unwatch, "UNWATCH", self->request, NULL, NULL);
}

//  Close the WATCH now open: UNWATCH it, and drop its OK as it comes
static void
s_watch_close (act_watch_t *self)
{
    char unwatch [24];
    s_watch_unwatch (self, unwatch);
    act_client_ignore (self->client, unwatch);
}

//  The stream cannot be trusted any more: watch again from the next _seq
static void
s_watch_resume (act_watch_t *self)
{
    s_watch_close (self);
    s_watch_send (self, NULL);
    self->resumes++;
}

//  Its broker is gone: watch again from the next _seq on another. A WATCH
//  still queued for it (its connection not made) is closed behind it,
//  should it come back; one on a connection that dropped is gone already
static void
s_watch_move (act_watch_t *self, bool queued)
{
    act_link_t *from = self->link;
    if (queued)
        s_watch_close (self);
    else
        zhashx_delete (self->client->watches, self->request);
    s_watch_send (self, from);
    self->resumes++;
}

//  An event as parsed, and as the broker sent it
typedef struct {
    json_t *value;
    char *text;
} s_event_t;

static void
s_event_free (void **item)
{
    s_event_t *event = (s_event_t *) *item;
    json_decref (event->value);
    free (event->text);
    free (event);
    *item = NULL;
}

//  A watch of context, sent; from is taken as it is (0: only new messages)
static act_watch_t *
s_watch_open (act_client_t *client, const char *context, uint64_t from, bool calls)
{
    act_watch_t *self = calloc (1, sizeof *self);
    self->client = client;
    self->context = strdup (context);
    self->calls = calls;
    self->from = from;
    self->events = zlistx_new ();
    zlistx_set_destructor (self->events, s_event_free);
    s_watch_send (self, NULL);
    return self;
}

//  The _seq a watch from 0 starts after: the context's last_seq as
//  CONTEXTS lists it (it lists context itself first, if it exists), so that
//  a watch sent again before its first message still misses nothing. 0
//  when the broker cannot say (one without CONTEXTS).
static uint64_t
s_last_seq (act_client_t *client, const char *context, bool *known)
{
    json_t *page = act_client_contexts (client, context, NULL, 1, NULL);
    json_t *first = json_array_get (json_object_get (page, "contexts"), 0);
    const char *id = json_string_value (json_object_get (first, "context"));
    uint64_t last = id && streq (id, context)
                  ? (uint64_t) json_integer_value (json_object_get (first, "last_seq")): 0;
    *known = page != NULL;
    json_decref (page);
    return last;
}

act_watch_t *
act_client_watch (act_client_t *self, const char *context, uint64_t from_seq, bool calls,
                  act_err_t *err)
{
    if (!context || !*context) {
        act_err_set (err, ACT_E_BAD_CONTEXT, "a watch needs a context id");
        return NULL;
    }
    if (from_seq == 0) {
        bool known;
        uint64_t last = s_last_seq (self, context, &known);
        if (known)
            from_seq = last + 1;
    }
    return s_watch_open (self, context, from_seq, calls);
}

//  A message event: taken when it is the next _seq; a duplicate (a
//  resent backlog) is dropped; after a gap the watch starts again
static bool
s_watch_message (act_watch_t *self, uint64_t seq)
{
    uint64_t expected = self->last? self->last + 1: self->from;
    if (expected && seq < expected)
        return false;
    if (expected && seq > expected) {
        s_watch_resume (self);
        return false;
    }
    self->last = seq;
    return true;
}

//  Take an EVENT's text (the caller's, taken when queued): queued on the
//  watch, or dropped as a duplicate; one that does not parse (nor is an
//  object) ends the watch with bad_json, its WATCH closed, rather than
//  being dropped and asked for again without end
static void
s_watch_event (act_watch_t *watch, char **text)
{
    act_err_t err = { NULL, "" };
    json_t *event = *text? act_json_parse_reply (*text, strlen (*text), &err): NULL;
    if (!json_is_object (event)) {
        if (!err.code)
            act_err_set (&err, ACT_E_BAD_JSON, "an EVENT without its JSON object");
        json_decref (event);
        s_watch_close (watch);
        watch->ended = true;
        act_err_set (&watch->error, err.code, "the broker sent an event that does not "
                     "read: %s", err.message);
        return;
    }
    json_t *seq = json_object_get (event, "seq");
    if (json_is_integer (seq) && !s_watch_message (watch, (uint64_t) json_integer_value (seq))) {
        json_decref (event);
        return;
    }
    s_event_t *item = calloc (1, sizeof *item);
    item->value = event;
    item->text = *text;
    *text = NULL;
    zlistx_add_end (watch->events, item);
    if (json_is_true (json_object_get (event, "deleted"))) {
        //  The watch ends with its context (the broker closed it)
        zhashx_delete (watch->client->watches, watch->request);
        watch->ended = true;
        act_err_set (&watch->error, ACT_E_NOT_FOUND, "context %s was deleted", watch->context);
    }
}

bool
act_watch_intake (act_client_t *self, act_link_t *link, act_reply_t *reply)
{
    act_watch_t *watch = zhashx_lookup (self->watches, reply->request);
    if (!watch)
        return false;
    watch->link = link;
    watch->sent = 0;
    char *text = act_reply_arg (reply, 0);
    if (streq (reply->verb, "EVENT"))
        s_watch_event (watch, &text);
    else {
        //  A refused WATCH (busy, bad_context, ...): the watch ends
        zhashx_delete (self->watches, watch->request);
        watch->ended = true;
        act_client_check (reply, "EVENT", &watch->error);
    }
    free (text);
    act_reply_destroy (&reply);
    return true;
}

void
act_watch_link_event (act_client_t *self, act_link_t *link, bool up)
{
    //  Collect first: sending again changes the table being walked
    zlistx_t *affected = zlistx_new ();
    for (act_watch_t *watch = zhashx_first (self->watches); watch;
         watch = zhashx_next (self->watches))
        if (watch->link == link)
            zlistx_add_end (affected, watch);
    for (act_watch_t *watch = zlistx_first (affected); watch; watch = zlistx_next (affected))
        if (!up && zlistx_size (self->links) > 1)
            s_watch_move (watch, false);
        else
        if (!up)
            watch->stale = true;
        else
        if (watch->stale)
            s_watch_resume (watch);
    zlistx_destroy (&affected);
}

void
act_watch_moved (act_client_t *self, const char *request, act_link_t *link)
{
    act_watch_t *watch = zhashx_lookup (self->watches, request);
    if (watch) {
        watch->link = link;
        watch->sent = zclock_mono ();
    }
}

int
act_watch_check (act_client_t *self)
{
    bool down = false;
    for (act_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links))
        down |= !link->up;
    if (!down || zlistx_size (self->links) < 2 || zhashx_size (self->watches) == 0)
        return -1;
    int64_t now = zclock_mono ();
    if (now < self->watch_check)
        return (int) (self->watch_check - now);
    self->watch_check = now + S_CHECK_MS;
    //  Collected first: moving a watch changes the table being walked
    zlistx_t *parked = zlistx_new ();
    for (act_watch_t *watch = zhashx_first (self->watches); watch;
         watch = zhashx_next (self->watches))
        if (watch->sent && !watch->link->up && now - watch->sent >= self->timeout / 3)
            zlistx_add_end (parked, watch);
    for (act_watch_t *watch = zlistx_first (parked); watch; watch = zlistx_next (parked))
        s_watch_move (watch, true);
    zlistx_destroy (&parked);
    return S_CHECK_MS;
}

void
act_watch_orphan (act_client_t *self)
{
    //  docs/protocol.md section 2.6: actd learns that a socket closed only
    //  when it sends to it, so a watch left open would hold its slot of
    //  max_watches until its context's next event. Each open watch (an
    //  ended one is no longer in the table) is sent UNWATCH, kept pending
    //  so that its OK says it arrived; collected first, as closing a watch
    //  changes the table being walked
    zlistx_t *open = zlistx_new ();
    for (act_watch_t *watch = zhashx_first (self->watches); watch;
         watch = zhashx_next (self->watches))
        zlistx_add_end (open, watch);
    zlistx_t *unwatches = zlistx_new ();
    zlistx_set_destructor (unwatches, (zlistx_destructor_fn *) zstr_free);
    for (act_watch_t *watch = zlistx_first (open); watch; watch = zlistx_next (open)) {
        char unwatch [24];
        s_watch_unwatch (watch, unwatch);
        zlistx_add_end (unwatches, strdup (unwatch));
        watch->client = NULL;
    }
    zlistx_destroy (&open);
    //  Best effort, and bounded: a broker that is gone or slow costs
    //  ACT_CLIENT_UNWATCH_MS at most. Each OK takes its request out of
    //  pending, and so does a connection that drops (an ERROR disconnected
    //  the caller will never read); other replies are dropped
    int64_t deadline = zclock_mono () + ACT_CLIENT_UNWATCH_MS;
    const char *unwatch = zlistx_first (unwatches);
    while (unwatch) {
        if (!zhashx_lookup (self->pending, unwatch)) {
            unwatch = zlistx_next (unwatches);
            continue;
        }
        int64_t left = deadline - zclock_mono ();
        if (left <= 0)
            break;
        act_reply_t *reply = act_client_read (self, (int) left);
        if (!reply && zsys_interrupted)
            break;              //  CZMQ's poller no longer waits: it would spin
        act_reply_destroy (&reply);
    }
    zlistx_destroy (&unwatches);
}

json_t *
act_watch_next (act_watch_t *self, int timeout_ms, act_err_t *err)
{
    int64_t deadline = zclock_mono () + (timeout_ms < 0? INT32_MAX: timeout_ms);
    while (zlistx_size (self->events) == 0 && !self->ended && self->client) {
        int64_t left = deadline - zclock_mono ();
        act_reply_t *reply = act_client_read (self->client, (int) (left > 0? left: 0));
        if (reply)              //  Not an event: for act_client_wait or _recv
            zlistx_add_end (self->client->kept, reply);
        else
        if (!self->client->woke)
            return NULL;        //  Timeout
    }
    s_event_t *event = zlistx_first (self->events);
    if (event) {
        zlistx_detach_cur (self->events);
        json_t *value = event->value;
        free (self->text);
        self->text = event->text;
        free (event);
        return value;
    }
    if (!self->client)
        act_err_set (err, ACT_E_INTERNAL, "the client of this watch was destroyed");
    else
    if (err)
        *err = self->error;
    return NULL;
}

const char *
act_watch_text (act_watch_t *self)
{
    return self->text;
}

uint64_t
act_watch_seq (act_watch_t *self)
{
    return self->last;
}

void
act_watch_destroy (act_watch_t **self_p)
{
    if (self_p && *self_p) {
        act_watch_t *self = *self_p;
        if (self->client && !self->ended)
            s_watch_close (self);
        zlistx_destroy (&self->events);
        free (self->text);
        free (self->context);
        free (self);
        *self_p = NULL;
    }
}


//  --------------------------------------------------------------------------
//  Waiting for calls to end

bool
act_client_state_ended (const char *state)
{
    return state && !streq (state, "waiting") && !streq (state, "queued")
        && !streq (state, "running");
}

//  Note status (a STATUS object) in ended (call id -> STATUS) if the call
//  it describes is one of ids and has ended
static void
s_note (json_t *ids, json_t *ended, json_t *status)
{
    const char *id = json_string_value (json_object_get (status, "call_id"));
    if (!id || !act_client_state_ended (json_string_value (json_object_get (status, "state"))))
        return;
    size_t index;
    json_t *value;
    json_array_foreach (ids, index, value)
        if (json_is_string (value) && streq (json_string_value (value), id)
        &&  !json_object_get (ended, id))
            json_object_set (ended, id, status);
}

//  Ask STATUS once for each call of ids not in ended yet. Returns 0, or -1
//  with err set when the broker no longer knows one (not_found: the store
//  it was in is gone, or was emptied): no end of it will come. Other
//  failures (a timeout, a store outage) leave the wait to go on
static int
s_ask (act_client_t *self, json_t *ids, json_t *ended, act_err_t *err)
{
    size_t index;
    json_t *id;
    json_array_foreach (ids, index, id)
        if (!json_object_get (ended, json_string_value (id))) {
            act_err_t asked = { NULL, "" };
            json_t *status = act_client_status (self, json_string_value (id), &asked);
            s_note (ids, ended, status);
            json_decref (status);
            if (!status && asked.code && streq (asked.code, ACT_E_NOT_FOUND)) {
                if (err)
                    *err = asked;
                return -1;
            }
        }
    return 0;
}

//  The next DONE for request (when not NULL), kept or read, waiting up to
//  deadline; NULL on timeout, or as soon as an event came to watch
static act_reply_t *
s_next_done (act_client_t *self, const char *request, act_watch_t *watch, int64_t deadline)
{
    for (act_reply_t *reply = zlistx_first (self->kept); request && reply;
         reply = zlistx_next (self->kept))
        if (streq (reply->request, request) && streq (reply->verb, "DONE")) {
            zlistx_detach_cur (self->kept);
            return reply;
        }
    while (!watch || zlistx_size (watch->events) == 0) {
        int64_t left = deadline - zclock_mono ();
        if (left <= 0)
            return NULL;
        act_reply_t *reply = act_client_read (self, (int) left);
        if (reply && request && streq (reply->request, request) && streq (reply->verb, "DONE"))
            return reply;
        if (reply)
            zlistx_add_end (self->kept, reply);
    }
    return NULL;
}

//  Note a DONE reply's outcome as an ended STATUS in ended
static void
s_note_done (json_t *ids, json_t *ended, act_reply_t *reply)
{
    char *text = act_reply_arg (reply, 1);
    json_t *outcome = text? act_json_parse_reply (text, strlen (text), NULL): NULL;
    const char *status = json_string_value (json_object_get (outcome, "status"));
    const char *id = json_string_value (json_object_get (outcome, "call_id"));
    if (status && id) {
        json_t *ended_status = json_pack ("{sssssO}", "call_id", id, "state", status,
                                          "outcome", outcome);
        s_note (ids, ended, ended_status);
        json_decref (ended_status);
    }
    json_decref (outcome);
    free (text);
}

//  Wait until every call of ids (of context) has ended, filling ended
//  (call id -> STATUS). DONE comes to the socket that submitted a call,
//  but not after the broker restarted nor when another broker took the
//  context over: when it has not come in a second, a watch of the
//  context's calls says when they end, after one STATUS each (asked after
//  WATCH, which the broker serves first, so no end falls between), and
//  again whenever the watch had to be sent again. Returns 0, or -1 with err
//  set (timeout; the watch ended: refused, or the context deleted; or
//  STATUS said not_found: the broker no longer knows a call).
static int
s_wait_ended (act_client_t *self, const char *request, const char *context, json_t *ids,
              json_t *ended, size_t *dones, act_err_t *err)
{
    int64_t deadline = zclock_mono () + self->timeout;
    int64_t watch_at = zclock_mono () + (request? 1000: 0);
    act_watch_t *watch = NULL;
    size_t resumes = 0;
    while (json_object_size (ended) < json_array_size (ids)) {
        int64_t now = zclock_mono ();
        if (now >= deadline) {
            act_watch_destroy (&watch);
            return act_err_set (err, ACT_E_TIMEOUT, "no outcome from the broker in time");
        }
        //  After asking, the loop's test comes first: STATUS may have said
        //  every call ended, and the watch has nothing more to tell then
        bool ask = false;
        if (!watch && now >= watch_at) {
            watch = s_watch_open (self, context, 0, true);
            ask = true;
        }
        else
        if (watch && watch->resumes != resumes) {
            resumes = watch->resumes;
            ask = true;
        }
        if (ask && s_ask (self, ids, ended, err)) {
            act_watch_destroy (&watch);
            return -1;
        }
        if (ask)
            continue;
        act_reply_t *reply = s_next_done (self, request, watch,
                                          watch || watch_at > deadline? deadline: watch_at);
        if (reply) {
            s_note_done (ids, ended, reply);
            (*dones)++;
        }
        act_reply_destroy (&reply);
        for (s_event_t *event = watch? zlistx_first (watch->events): NULL; event;
             event = zlistx_first (watch->events)) {
            s_note (ids, ended, json_object_get (event->value, "call"));
            zlistx_delete (watch->events, zlistx_cursor (watch->events));
        }
        if (watch && watch->ended && json_object_size (ended) < json_array_size (ids)) {
            //  Refused (busy), or the context was deleted under the calls
            if (err)
                *err = watch->error;
            act_watch_destroy (&watch);
            return -1;
        }
    }
    act_watch_destroy (&watch);
    return 0;
}

//  Of the DONEs request (a CALL or PLAN) gets for ids, taken were read:
//  those kept since are dropped, and those still due are forgotten (their
//  calls ended on the watch or STATUS first, or the wait timed out), so
//  that none is kept for act_client_recv
static void
s_dones_forget (act_client_t *self, const char *request, json_t *ids, size_t taken)
{
    act_reply_t *reply = zlistx_first (self->kept);
    while (reply)
        if (streq (reply->request, request) && streq (reply->verb, "DONE")) {
            zlistx_delete (self->kept, zlistx_cursor (self->kept));
            taken++;
            reply = zlistx_first (self->kept);
        }
        else
            reply = zlistx_next (self->kept);
    const char *first = json_string_value (json_array_get (ids, 0));
    size_t due = json_array_size (ids);
    if (taken < due)
        act_client_ignore_dones (self, request,
                                 first? act_table_lookup (self->accepted, first): NULL,
                                 due - taken);
}

int
act_client_outcomes (act_client_t *self, const char *request, const char *context,
                     json_t *ids, json_t *outcomes, act_err_t *err)
{
    json_t *ended = json_object ();
    size_t dones = 0;
    int rc = s_wait_ended (self, request, context, ids, ended, &dones, err);
    s_dones_forget (self, request, ids, dones);
    const char *id;
    json_t *status;
    json_object_foreach (ended, id, status)
        if (json_object_get (status, "outcome"))
            json_object_set (outcomes, id, json_object_get (status, "outcome"));
    json_decref (ended);
    return rc;
}

json_t *
act_client_wait_call (act_client_t *self, const char *call_id, act_err_t *err)
{
    json_t *status = act_client_status (self, call_id, err);
    const char *context = json_string_value (json_object_get (status, "context"));
    if (!status || act_client_state_ended (json_string_value (json_object_get (status, "state"))))
        return status;
    json_t *ids = json_pack ("[s]", call_id);
    json_t *ended = json_object ();
    char *owned = strdup (context? context: "");
    json_decref (status);
    status = NULL;
    size_t dones = 0;
    if (s_wait_ended (self, NULL, owned, ids, ended, &dones, err) == 0)
        status = json_incref (json_object_get (ended, call_id));
    free (owned);
    json_decref (ids);
    json_decref (ended);
    return status;
}
