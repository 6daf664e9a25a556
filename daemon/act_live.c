/*  =========================================================================
    act_live - one live call (see act_live.h).
    ========================================================================= */

#include "act_live.h"
#include "actd/act_wire.h"
#include "act_log.h"

static const char *s_state_names [] = {
    "none", "new", "waiting", "queued", "running", "ended"
};

act_live_t *
act_live_new (act_pool_t *pool, act_context_t *context, act_call_t *parsed)
{
    act_live_t *self = (act_live_t *) calloc (1, sizeof (act_live_t));
    self->call = parsed;
    self->text = parsed->text;
    self->context = context;
    self->activity = act_pool_activity (pool, parsed->tool);
    //  The call's own _timeout and _retry fields over its activity's
    const act_activity_settings_t *defaults = self->activity->settings;
    self->retry = defaults->retry;
    if (parsed->retry.max_attempts > 0)
        self->retry.max_attempts = parsed->retry.max_attempts;
    if (parsed->retry.initial_ms >= 0)
        self->retry.initial_ms = parsed->retry.initial_ms;
    if (parsed->retry.backoff >= 1.0)
        self->retry.backoff = parsed->retry.backoff;
    if (parsed->retry.max_ms >= 0)
        self->retry.max_ms = parsed->retry.max_ms;
    self->timeout_ms = parsed->timeout_ms > 0? parsed->timeout_ms: defaults->timeout_ms;
    //  The waiters list is made when the first one comes: most calls
    //  have none
    return self;
}

void
act_live_destroy (act_live_t **self_p)
{
    act_live_t *self = *self_p;
    if (!self)
        return;
    act_deps_unregister (self->context->deps, &self->producer);
    act_call_destroy (&self->call);
    json_decref (self->progress);
    zlistx_destroy (&self->waiters);
    free (self->awaited);
    for (size_t i = 0; i < self->nrecipients; i++)
        if (self->recipients [i].client != self->first_bytes)
            free (self->recipients [i].client);
    if (self->recipients != &self->first)
        free (self->recipients);
    free (self);
    *self_p = NULL;
}

void
act_live_number (act_live_t *self, uint64_t number)
{
    self->number = number;
    //  By hand: snprintf costs more than the rest of numbering a call
    self->id [act_decimal_write (self->id, (long long) number)] = 0;
}

void
act_live_task_id (act_live_t *self)
{
    //  By hand, as the id: this is on every dispatch
    size_t id_size = strlen (self->id);
    memcpy (self->task, self->id, id_size);
    self->task [id_size] = '.';
    self->task [id_size + 1 + act_decimal_write (self->task + id_size + 1, self->attempts)] = 0;
}

void
act_live_enter (act_live_t *self, act_live_state_t state, size_t *counts)
{
    act_activity_t *activity = self->activity;
    self->timer++;
    switch (self->state) {
        case ACT_LIVE_NEW:
        case ACT_LIVE_WAITING:
            activity->backlog--;
            break;
        case ACT_LIVE_QUEUED:
            activity->queued--;
            activity->backlog--;
            if (self->queue_handle)
                zlistx_delete (activity->queue, self->queue_handle);
            self->queue_handle = NULL;
            self->backoff = false;
            break;
        case ACT_LIVE_RUNNING:
            activity->running--;
            self->worker = NULL;
            break;
        default:
            break;
    }
    //  Only the states of a live call are counted: NONE, NEW and ENDED
    //  are before and after its life. Latencies are measured here, where
    //  every change of state passes: the queue's wait when an attempt
    //  starts, the attempt's time when it ends, the call's when it ends.
    //  The clock is read only for a change that is timed (entering NEW, or
    //  WAITING again, is not): a read costs ~23 ns in this VM, and the
    //  flow takes its stamps from here (queued_at, started_at)
    bool timed = state == ACT_LIVE_QUEUED || state == ACT_LIVE_RUNNING
              || self->state == ACT_LIVE_RUNNING || state == ACT_LIVE_ENDED
              || (state == ACT_LIVE_WAITING && !self->accepted_at);
    long long now_us = timed? act_hist_clock_us (): 0, now = now_us / 1000;
    if (self->state == ACT_LIVE_QUEUED && state == ACT_LIVE_RUNNING)
        act_hist_add (&activity->queue_ms, now - self->queued_at);
    if (self->state == ACT_LIVE_RUNNING) {
        //  To the microsecond: whether a commit may wait for the tool's
        //  result (store/hold_us, act_submit.c) is judged against it
        long long run_us = now_us - self->started_at + 1;
        act_hist_add (&activity->run_ms, run_us / 1000);
        activity->run_us = activity->run_us? (3 * activity->run_us + run_us) / 4: run_us;
    }
    if (state == ACT_LIVE_ENDED && self->accepted_at)
        act_hist_add (&activity->total_ms, now - self->accepted_at);
    if (state == ACT_LIVE_QUEUED)
        self->queued_at = now;
    if (state == ACT_LIVE_RUNNING)
        self->started_at = now_us;
    //  A call starts waiting or queued, as its references stand
    if ((state == ACT_LIVE_WAITING || state == ACT_LIVE_QUEUED) && !self->accepted_at)
        self->accepted_at = now;
    if (self->state >= ACT_LIVE_WAITING && self->state <= ACT_LIVE_RUNNING)
        counts [self->state]--;
    self->state = state;
    if (state >= ACT_LIVE_WAITING && state <= ACT_LIVE_RUNNING)
        counts [state]++;
    if (state == ACT_LIVE_NEW || state == ACT_LIVE_WAITING || state == ACT_LIVE_QUEUED)
        activity->backlog++;
    if (state == ACT_LIVE_QUEUED)
        activity->queued++;
    if (state == ACT_LIVE_RUNNING)
        activity->running++;
}

const char *
act_live_state_name (act_live_state_t state)
{
    return state < ACT_LIVE_STATES? s_state_names [state]: "?";
}

void
act_live_recipient_add (act_live_t *self, zframe_t *client, zframe_t *request,
                        const char *owner)
{
    if (!client)
        return;
    size_t client_size = zframe_size (client), request_size = zframe_size (request);
    const byte *client_data = zframe_data (client), *request_data = zframe_data (request);
    for (size_t i = 0; i < self->nrecipients; i++) {
        act_live_recipient_t *known = &self->recipients [i];
        if (known->client_size == client_size && known->request_size == request_size
        &&  memcmp (known->client, client_data, client_size) == 0
        &&  memcmp (known->request, request_data, request_size) == 0)
            return;
    }
    //  The first one, and its ids when they fit, in the call itself
    act_live_recipient_t *grown = &self->first;
    if (self->nrecipients == 1) {
        grown = malloc (2 * sizeof *grown);
        if (grown)
            grown [0] = self->first;
    }
    else
    if (self->nrecipients > 1)
        grown = realloc (self->recipients, (self->nrecipients + 1) * sizeof *grown);
    byte *bytes = self->nrecipients == 0 && client_size + request_size <= ACT_LIVE_FIRST_BYTES
                ? self->first_bytes: malloc (client_size + request_size + 1);
    if (!grown || !bytes) {
        act_log (LOG_ERR, "out of memory for a recipient");
        abort ();                               //  As CZMQ's allocations do
    }
    self->recipients = grown;
    memcpy (bytes, client_data, client_size);
    memcpy (bytes + client_size, request_data, request_size);
    act_live_recipient_t *added = &grown [self->nrecipients++];
    *added = (act_live_recipient_t) {
        bytes, client_size, bytes + client_size, request_size, ""
    };
    if (owner && strlen (owner) < ACT_OWNER_SIZE)
        strcpy (added->owner, owner);
}

void
act_live_recipient_hex (act_live_t *self, const char *client, const char *request)
{
    const char *owner = strchr (client, ' ');
    size_t client_hex = owner? (size_t) (owner - client): strlen (client);
    zframe_t *frames [2] = { zframe_new (NULL, client_hex / 2),
                             zframe_new (NULL, strlen (request) / 2) };
    const char *hex [2] = { client, request };
    for (int f = 0; f < 2; f++)
        for (size_t i = 0; i < zframe_size (frames [f]); i++)
            sscanf (hex [f] + 2 * i, "%2hhx", zframe_data (frames [f]) + i);
    act_live_recipient_add (self, frames [0], frames [1], owner? owner + 1: NULL);
    zframe_destroy (&frames [0]);
    zframe_destroy (&frames [1]);
}

act_call_record_t
act_live_record (act_live_t *self, const char *state, const char *outcome, char **progress)
{
    *progress = self->progress? act_json_dump (self->progress): NULL;
    return (act_call_record_t) {
        self->number, self->context->id, state, self->attempts, self->text,
        self->call->id, outcome, *progress, NULL, NULL
    };
}

void
act_live_save (act_live_t *self, act_store_t *store)
{
    char *progress;
    act_call_record_t record = act_live_record (self, s_state_names [self->state], NULL,
                                                &progress);
    act_store_update_call (store, &record);
    free (progress);
}

//  Room on the stack for the hex of an id of up to 32 bytes (a routing id
//  has 5 by default); a longer one is allocated
#define S_HEX_ROOM (2 * 32 + 1)

//  frame in hex: into buffer (S_HEX_ROOM bytes) when it fits, else into a
//  new string put in *heap for the caller to free
static const char *
s_frame_hex (zframe_t *frame, char *buffer, char **heap)
{
    size_t size = zframe_size (frame);
    if (2 * size + 1 > S_HEX_ROOM)
        buffer = *heap = (char *) malloc (2 * size + 1);
    return buffer? act_hex_write (buffer, zframe_data (frame), size): NULL;
}

void
act_live_put (act_live_t *self, act_store_t *store, const char *state, zframe_t *client,
              zframe_t *request, const char *owner)
{
    char *progress;
    act_call_record_t record = act_live_record (self, state, NULL, &progress);
    char client_hex [S_HEX_ROOM], request_hex [S_HEX_ROOM];
    char *client_heap = NULL, *request_heap = NULL;
    if (client) {
        record.client = s_frame_hex (client, client_hex, &client_heap);
        if (owner && record.client) {
            //  The owner's key rides after the routing id, for recovery
            char *owned = zsys_sprintf ("%s %s", record.client, owner);
            free (client_heap);
            record.client = client_heap = owned;
        }
        record.request = s_frame_hex (request, request_hex, &request_heap);
    }
    act_store_put_call (store, &record);
    free (client_heap);
    free (request_heap);
    free (progress);
}

void
act_live_retry_wait (act_live_t *self, long long delay)
{
    long long now = zclock_time ();
    self->retry_until = delay > LLONG_MAX - now? LLONG_MAX: now + delay;
    self->retry_delay = delay;
}

void
act_live_put_resume (act_live_t *self, act_store_t *store)
{
    json_t *resume = json_object ();
    json_t *recipients = self->repeated? json_array (): NULL;
    for (size_t i = 0; recipients && i < self->nrecipients; i++) {
        //  As act_live_put writes its client: the routing id in hex, then
        //  the owner's key after a space when there is one
        const act_live_recipient_t *recipient = &self->recipients [i];
        char *client = malloc (2 * recipient->client_size + 2 + ACT_OWNER_SIZE);
        char *request = malloc (2 * recipient->request_size + 1);
        if (client && request) {
            act_hex_write (client, recipient->client, recipient->client_size);
            if (*recipient->owner)
                strcat (strcat (client, " "), recipient->owner);
            act_hex_write (request, recipient->request, recipient->request_size);
            json_array_append_new (recipients, json_pack ("[ss]", client, request));
        }
        free (client);
        free (request);
    }
    if (recipients)
        json_object_set_new (resume, "recipients", recipients);
    if (self->backoff)
        json_object_set_new (resume, "retry", json_pack ("{sIsIsI}",
            "attempts", (json_int_t) self->attempts, "until", (json_int_t) self->retry_until,
            "delay", (json_int_t) self->retry_delay));
    char *text = act_json_dump (resume);
    act_store_put_resume (store, self->context->id, self->number, text);
    free (text);
    json_decref (resume);
}

long long
act_live_resume (act_live_t *self, const json_t *resume, const char *state, long long now_ms)
{
    size_t index;
    json_t *recipient;
    json_array_foreach (json_object_get (resume, "recipients"), index, recipient) {
        const char *client = json_string_value (json_array_get (recipient, 0));
        const char *request = json_string_value (json_array_get (recipient, 1));
        if (client && request) {
            act_live_recipient_hex (self, client, request);
            self->repeated = true;
        }
    }
    //  A delay for an earlier attempt is over: the call was dispatched
    //  since (its attempts grew), or stopped running (act_flow_park)
    json_t *retry = json_object_get (resume, "retry");
    if (!retry || !state || !streq (state, "queued")
    ||  json_integer_value (json_object_get (retry, "attempts")) != self->attempts)
        return 0;
    long long until = json_integer_value (json_object_get (retry, "until"));
    long long delay = json_integer_value (json_object_get (retry, "delay"));
    if (until <= now_ms)
        return 0;
    //  The wall clock is past 1970 (now_ms > 0): no overflow
    return until - now_ms > delay? delay: until - now_ms;
}


//  --------------------------------------------------------------------------
//  Dependencies. Each reference expression in the parameters is present,
//  pending (an earlier live call could write it), or impossible. A
//  fallback (||) waits while an earlier alternative is pending; a gate
//  (&&) needs every operand.

typedef enum { X_PRESENT, X_PENDING, X_IMPOSSIBLE } s_presence_t;

//  Widen bounds with those of one alternative
static void
s_widen (act_deps_bounds_t *bounds, const act_deps_bounds_t *with)
{
    if (with->newest && (!bounds->newest || with->newest_number > bounds->newest_number)) {
        bounds->newest = with->newest;
        bounds->newest_number = with->newest_number;
    }
    if (with->oldest && (!bounds->oldest || with->oldest_number < bounds->oldest_number)) {
        bounds->oldest = with->oldest;
        bounds->oldest_number = with->oldest_number;
    }
}

//  References in the call's expressions: the most it can await
static size_t
s_references (act_live_t *self)
{
    size_t count = 0;
    for (size_t i = 0; i < self->call->nrefs; i++)
        for (size_t a = 0; a < self->call->refs [i]->nalts; a++)
            count += self->call->refs [i]->alts [a].nrefs;
    return count;
}

//  How expr stands for the call; the newest and the oldest pending
//  producers it waits for widen bounds, and with record the references
//  they may write are added to the call's awaited (STATUS only looks)
static s_presence_t
s_expression (act_live_t *self, act_expr_t *expr, act_deps_bounds_t *bounds, bool record)
{
    act_ctx_t *ctx = self->context->ctx;
    for (size_t a = 0; a < expr->nalts; a++) {
        s_presence_t presence = X_PRESENT;
        act_deps_bounds_t producers = { 0 };
        size_t awaited = self->nawaited;
        for (size_t r = 0; r < expr->alts [a].nrefs && presence != X_IMPOSSIBLE; r++) {
            act_ref_t *ref = &expr->alts [a].refs [r];
            if (act_ctx_has (ctx, ref, self->call->instance))
                continue;
            if (act_deps_bound (self->context->deps, ref, self->call->instance,
                                self->number, &producers)) {
                presence = X_PENDING;
                if (record && !self->awaited)
                    self->awaited = malloc (s_references (self) * sizeof (act_ref_t *));
                if (record)
                    self->awaited [self->nawaited++] = ref;
            }
            else
                presence = X_IMPOSSIBLE;
        }
        if (presence == X_PENDING)
            s_widen (bounds, &producers);
        else
            self->nawaited = awaited;
        if (presence != X_IMPOSSIBLE)
            return presence;
    }
    return X_IMPOSSIBLE;
}

//  Register the call as a waiter of producer, in its current round
static void
s_wait_for (act_live_t *self, act_live_t *producer)
{
    act_live_waiter_t *waiter = malloc (sizeof (act_live_waiter_t));
    *waiter = (act_live_waiter_t) { self->number, self->round };
    if (!producer->waiters) {
        producer->waiters = zlistx_new ();
        zlistx_set_destructor (producer->waiters, (zlistx_destructor_fn *) zstr_free);
    }
    zlistx_add_end (producer->waiters, waiter);
    self->waiting_on++;
}

//  Wait for the newest and the oldest producer of bounds alone, to be
//  evaluated again when both have ended: a waiter on each producer made
//  n^2/2 of them in a PLAN whose every call read what all the earlier
//  ones wrote (8,000 calls: 1.5 GB, 6 s of the loop; an audit). Those
//  that end oldest first (each waiting for those before it) end with the
//  newest, those that end newest first with the oldest: one wait each,
//  where waiting for the newest alone made one evaluation per producer
static void
s_wait (act_live_t *self, const act_deps_bounds_t *bounds)
{
    self->waiting_on = 0;
    s_wait_for (self, bounds->newest);
    if (bounds->oldest != bounds->newest)
        s_wait_for (self, bounds->oldest);
}

//  Evaluations so far (act_live_evaluations)
static size_t s_evaluations;

act_live_eval_t
act_live_evaluate (act_live_t *self, act_err_t *err)
{
    s_evaluations++;
    self->round++;
    //  Most calls have no reference: ready at once, nothing to list
    if (self->call->nrefs == 0)
        return ACT_LIVE_READY;
    act_deps_bounds_t bounds = { 0 };
    //  It waited: while a call that may write what it awaits is pending,
    //  whatever is written meanwhile, it waits on (SEMANTICS.md 7: it is
    //  resolved again when they have all finished)
    for (size_t i = 0; i < self->nawaited; i++)
        act_deps_bound (self->context->deps, self->awaited [i], self->call->instance,
                        self->number, &bounds);
    if (bounds.newest) {
        s_wait (self, &bounds);
        return ACT_LIVE_WAIT;
    }
    //  Resolved again: what it awaits now is worked out anew
    self->nawaited = 0;
    act_live_eval_t result = ACT_LIVE_READY;
    for (size_t i = 0; i < self->call->nrefs; i++) {
        act_expr_t *expr = self->call->refs [i];
        if (s_expression (self, expr, &bounds, true) == X_IMPOSSIBLE) {
            act_err_set (err, ACT_E_UNRESOLVED_REFERENCE,
                         "'%.200s' is absent and no pending call of context %s can write it",
                         expr->text, self->context->id);
            result = ACT_LIVE_UNRESOLVED;
            break;
        }
    }
    if (result == ACT_LIVE_READY && bounds.newest) {
        s_wait (self, &bounds);
        result = ACT_LIVE_WAIT;
    }
    else {
        free (self->awaited);
        self->awaited = NULL;
        self->nawaited = 0;
    }
    return result;
}

size_t
act_live_evaluations (void)
{
    return s_evaluations;
}

//  Append text to *at, moving it past; returns the new end
static char *
s_put (char *at, const char *text)
{
    size_t size = strlen (text);
    memcpy (at, text, size);
    return at + size;
}

//  Append number in decimal to *at (snprintf costs more than the rest of
//  the meta); returns the new end
static char *
s_put_number (char *at, long long number)
{
    return at + act_decimal_write (at, number);
}

//  string as a JSON string, as act_json_dump writes it: NULL when it is
//  NULL or needs no escaping (only '"', '\\' and bytes below 0x20 do), to
//  be written between quotes as it is; else a fresh quoted copy
static char *
s_quote (const char *string)
{
    for (const unsigned char *at = (const unsigned char *) string; at && *at; at++)
        if (*at < 0x20 || *at == '"' || *at == '\\')
            return act_json_quote (string);
    return NULL;
}

//  Append string as a JSON string: quoted (from s_quote) or plain between
//  quotes; returns the new end
static char *
s_put_quoted (char *at, const char *string, const char *quoted)
{
    if (quoted)
        return s_put (at, quoted);
    *at++ = '"';
    at = s_put (at, string);
    *at++ = '"';
    return at;
}

char *
act_live_meta (act_live_t *self, char *local, size_t room)
{
    //  Its strings written by the JSON writer (the instance is any 1-128
    //  bytes of UTF-8, control characters included), the rest as numbers,
    //  without a DOM: this is built once per dispatch
    act_expr_t *output = self->call->output;
    const char *instance_text = self->call->instance;
    char *context = s_quote (self->context->id);
    char *instance = s_quote (instance_text);
    //  Room for the quoted strings, the names and the numbers (digits of
    //  the call id and three 64-bit numbers: under 200 bytes), and the
    //  trace, which the call's parser checked is 55 bytes of hex and '-'
    const char *trace = self->call->trace;
    size_t size = strlen (context? context: self->context->id)
                + (instance? strlen (instance): instance_text? strlen (instance_text): 0)
                + (trace? ACT_TRACE_LEN + 16: 0) + 200;
    char *meta = size <= room? local: malloc (size);
    char *at = s_put (meta, "{\"context\":");
    at = s_put_quoted (at, self->context->id, context);
    at = s_put (at, ",\"call_id\":\"");
    at = s_put (at, self->id);
    at = s_put (at, "\",\"attempt\":");
    at = s_put_number (at, self->attempts);
    at = s_put (at, ",\"deadline_ms\":");
    at = s_put_number (at, self->timeout_ms);
    at = s_put (at, ",\"branches\":");
    at = s_put_number (at, output? (long long) output->nalts: 0);
    at = s_put (at, output? ",\"discard\":false": ",\"discard\":true");
    if (instance_text) {
        at = s_put (at, ",\"instance\":");
        at = s_put_quoted (at, instance_text, instance);
    }
    if (trace) {
        at = s_put (at, ",\"trace\":\"");
        at = s_put (at, trace);
        at = s_put (at, "\"");
    }
    at = s_put (at, "}");
    *at = 0;
    if (context)                //  Rare: most need no escape
        free (context);
    if (instance)
        free (instance);
    return meta;
}

json_t *
act_live_status (act_live_t *self)
{
    json_t *status = json_pack ("{sssssssI}", "call_id", self->id,
        "context", self->context->id, "state", s_state_names [self->state],
        "attempts", (json_int_t) self->attempts);
    //  Additive, for a client drawing a plan: the activity, and the output
    //  path as submitted (absent for a fire-and-forget call)
    json_object_set_new (status, "tool", json_string (self->call->tool));
    if (self->call->output)
        json_object_set_new (status, "output_path", json_string (self->call->output->text));
    json_t *references = act_call_references (self->call);
    if (references)
        json_object_set_new (status, "references", references);
    if (self->progress)
        json_object_set (status, "progress", self->progress);
    //  waiting_on is worked out now: the expressions that still wait for a
    //  producer (one met since the call started waiting is not listed)
    if (self->state == ACT_LIVE_WAITING) {
        json_t *unmet = json_array ();
        act_deps_bounds_t bounds = { 0 };
        for (size_t i = 0; i < self->call->nrefs; i++)
            if (s_expression (self, self->call->refs [i], &bounds, false) == X_PENDING)
                json_array_append_new (unmet, json_string (self->call->refs [i]->text));
        json_object_set_new (status, "waiting_on", unmet);
    }
    return status;
}
