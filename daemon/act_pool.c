/*  =========================================================================
    act_pool - activities and workers (see act_pool.h).
    ========================================================================= */

#include "act_pool.h"
#include "act_security.h"

struct _act_pool_t {
    act_settings_t *settings;   //  Per-activity limits (borrowed)
    zhashx_t *activities;       //  Name -> act_activity_t
    zhashx_t *workers;          //  Routing id hex -> act_worker_t
    zlistx_t *idle;             //  act_activity_t with no worker and no
                                //  call left, the oldest idle first; one in
                                //  use again stays until it is the oldest
                                //  or idle again (borrowed: activities owns
                                //  them)
    uint64_t joins;             //  Workers joined since the start
    size_t unserved;            //  Activities counted unserved in use
                                //  (act_pool_admit)
    uint64_t unserved_refused;  //  Calls refused for their bound since the start
    size_t served;              //  Activities a connected worker serves now
    uint64_t served_refused;    //  READYs refused busy for max_served_activities
                                //  since the start
    uint64_t worker_refused;    //  READYs refused for max_worker_activities
                                //  since the start
    act_pool_forget_fn *forget; //  Told of each activity forgotten, or NULL
    void *forget_arg;           //  Its argument
};

static void
s_activity_destroy (void **item)
{
    act_activity_t *activity = (act_activity_t *) *item;
    zlistx_destroy (&activity->queue);
    zlistx_destroy (&activity->workers);
    free (activity->name);
    free (activity);
    *item = NULL;
}

static void
s_worker_destroy (void **item)
{
    act_worker_t *worker = (act_worker_t *) *item;
    zframe_destroy (&worker->identity);
    act_held_destroy (&worker->held);
    zhashx_destroy (&worker->tasks);
    zlistx_destroy (&worker->activities);
    json_decref (worker->tools);
    free (worker->key);
    free (worker->user);
    free (worker->name);
    free (worker->lang);
    free (worker);
    *item = NULL;
}

act_pool_t *
act_pool_new (act_settings_t *settings)
{
    act_pool_t *self = (act_pool_t *) calloc (1, sizeof (act_pool_t));
    if (!self)
        return NULL;
    self->settings = settings;
    self->activities = zhashx_new ();
    zhashx_set_destructor (self->activities, s_activity_destroy);
    self->workers = zhashx_new ();
    zhashx_set_destructor (self->workers, s_worker_destroy);
    self->idle = zlistx_new ();
    return self;
}

void
act_pool_destroy (act_pool_t **self_p)
{
    if (self_p && *self_p) {
        act_pool_t *self = *self_p;
        zhashx_destroy (&self->workers);
        zlistx_destroy (&self->idle);
        zhashx_destroy (&self->activities);
        free (self);
        *self_p = NULL;
    }
}

act_activity_t *
act_pool_activity (act_pool_t *self, const char *name)
{
    act_activity_t *activity = (act_activity_t *) zhashx_lookup (self->activities, name);
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

//  True when no worker serves activity and no call of it is live
static bool
s_unused (const act_activity_t *activity)
{
    return zlistx_size (activity->workers) == 0 && activity->backlog == 0
        && activity->running == 0;
}

//  True when activity counts among the unserved, once in use: no READY
//  named it since it was made, and the settings do not name it
static bool
s_unknown (act_pool_t *self, const act_activity_t *activity)
{
    return !activity->served && !zhashx_lookup (self->settings->activities, activity->name);
}

//  Take activity out of the unserved in use, if it was counted
static void
s_uncount (act_pool_t *self, act_activity_t *activity)
{
    if (activity->unserved) {
        activity->unserved = false;
        self->unserved--;
    }
}

bool
act_pool_admit (act_pool_t *self, act_activity_t *activity, bool bounded)
{
    if (activity->unserved || !s_unknown (self, activity))
        return true;
    if (bounded && self->unserved >= (size_t) self->settings->max_unserved_activities) {
        self->unserved_refused++;
        return false;
    }
    activity->unserved = true;
    self->unserved++;
    return true;
}

//  Forget activity (it is unused), and its place among the idle; the
//  forget hook is told first
static void
s_forget (act_pool_t *self, act_activity_t *activity)
{
    s_uncount (self, activity);
    if (self->forget)
        self->forget (self->forget_arg, activity->name);
    if (activity->idle)
        zlistx_delete (self->idle, activity->idle);
    zhashx_delete (self->activities, activity->name);
}

void
act_pool_prune (act_pool_t *self)
{
    zlistx_t *unused = zlistx_new ();
    for (act_activity_t *activity = zhashx_first (self->activities); activity;
         activity = zhashx_next (self->activities)) {
        if (!s_unused (activity))
            continue;
        //  Counted for a refused request's calls only, it is unserved in
        //  use no more
        s_uncount (self, activity);
        if (activity->done == 0 && !activity->served)
            zlistx_add_end (unused, activity);
    }
    for (act_activity_t *activity = zlistx_first (unused); activity;
         activity = zlistx_next (unused))
        s_forget (self, activity);
    zlistx_destroy (&unused);
}

//  Count activity among the idle (again: then as the most recent), when
//  it is unused
static void
s_idle_note (act_pool_t *self, act_activity_t *activity)
{
    if (!s_unused (activity))
        return;
    s_uncount (self, activity);
    if (activity->idle)
        zlistx_move_end (self->idle, activity->idle);
    else
        activity->idle = zlistx_add_end (self->idle, activity);
}

//  Forget the oldest idle activities past ACT_POOL_IDLE_KEPT. One that a
//  call named again since it was noted, or that a worker serves now, is
//  not idle: it only leaves the list, and comes back when it is idle.
static void
s_idle_trim (act_pool_t *self)
{
    while (zlistx_size (self->idle) > ACT_POOL_IDLE_KEPT) {
        act_activity_t *oldest = (act_activity_t *) zlistx_first (self->idle);
        zlistx_delete (self->idle, oldest->idle);
        oldest->idle = NULL;
        if (s_unused (oldest))
            s_forget (self, oldest);
    }
}

void
act_pool_idle (act_pool_t *self, act_activity_t *activity)
{
    s_idle_note (self, activity);
    s_idle_trim (self);
}

void
act_pool_on_forget (act_pool_t *self, act_pool_forget_fn *fn, void *arg)
{
    self->forget = fn;
    self->forget_arg = arg;
}

void
act_pool_resettle (act_pool_t *self)
{
    for (act_activity_t *activity = zhashx_first (self->activities); activity;
         activity = zhashx_next (self->activities)) {
        activity->settings = act_settings_activity (self->settings, activity->name);
        if (!s_unknown (self, activity))
            s_uncount (self, activity);
        else
        if (!s_unused (activity))
            act_pool_admit (self, activity, false);
    }
}

int
act_pool_ready_names (act_pool_t *self, size_t count, act_err_t *err)
{
    if (count <= (size_t) self->settings->max_worker_activities)
        return 0;
    self->worker_refused++;
    return act_err_set (err, ACT_E_BAD_ARGUMENT, "READY names %zu activities, more than "
                        "max_worker_activities (%lld)", count,
                        self->settings->max_worker_activities);
}

int
act_pool_room (act_pool_t *self, const json_t *names, act_err_t *err)
{
    //  The names no connected worker serves, each once
    zhashx_t *fresh = zhashx_new ();
    size_t index;
    json_t *item;
    json_array_foreach (names, index, item) {
        const char *name = json_string_value (item);
        act_activity_t *activity = (act_activity_t *) zhashx_lookup (self->activities, name);
        if (!activity || zlistx_size (activity->workers) == 0)
            zhashx_insert (fresh, name, (void *) name);
    }
    size_t count = zhashx_size (fresh);
    zhashx_destroy (&fresh);
    size_t max = (size_t) self->settings->max_served_activities;
    if (self->served + count <= max)
        return 0;
    self->served_refused++;
    return act_err_set (err, ACT_E_BUSY, "max_served_activities (%zu) reached: workers serve "
                        "%zu activities, and this READY names %zu more", max, self->served,
                        count);
}

act_worker_t *
act_pool_worker (act_pool_t *self, const char *key)
{
    return (act_worker_t *) zhashx_lookup (self->workers, key);
}

act_worker_t *
act_pool_join (act_pool_t *self, zframe_t *identity, const char *key, act_proto_t protocol,
               bool envelope, const json_t *names, size_t capacity, const char *name,
               const char *lang)
{
    act_worker_t *worker = calloc (1, sizeof *worker);
    worker->key = strdup (key);
    worker->identity = zframe_dup (identity);
    worker->protocol = protocol;
    worker->envelope = envelope;
    worker->name = strdup (name? name: key);
    worker->lang = strdup (lang? lang: "");
    worker->capacity = capacity;
    worker->held = act_held_new ();
    worker->max_held = (size_t) self->settings->max_worker_bytes;
    worker->tasks = zhashx_new ();
    worker->activities = zlistx_new ();
    worker->heard = worker->sent = act_clock_ms ();
    worker->joined = ++self->joins;
    worker->first_call = UINT64_MAX;    //  Given nothing yet: an empty span
    size_t index;
    json_t *activity_name;
    json_array_foreach (names, index, activity_name) {
        act_activity_t *activity = act_pool_activity (self, json_string_value (activity_name));
        activity->served = true;
        s_uncount (self, activity);
        //  A name the READY repeats: this worker is already the last of
        //  its activity's (zlistx_find in the worker's list cost n^2/2)
        if (zlistx_last (activity->workers) != worker) {
            zlistx_add_end (worker->activities, activity);
            zlistx_add_end (activity->workers, worker);
            if (zlistx_size (activity->workers) == 1)
                self->served++;
        }
    }
    zhashx_insert (self->workers, key, worker);
    char *list = act_json_dump (names);
    act_log_burst (LOG_INFO, "worker joined",
                   "worker %s joined (%s%s%s): activities %s, capacity %zu", worker->name,
                   protocol == ACT_PROTO_ACTW? "ACT/1"
                   : protocol == ACT_PROTO_MDP1? "MDP/0.1": "MDP/0.2",
                   *worker->lang? ", ": "", worker->lang, list, capacity);
    free (list);
    return worker;
}

void
act_pool_detach (act_pool_t *self, act_worker_t *worker)
{
    for (act_activity_t *activity = zlistx_first (worker->activities); activity;
         activity = zlistx_next (worker->activities)) {
        void *handle = zlistx_find (activity->workers, worker);
        if (handle) {
            zlistx_delete (activity->workers, handle);
            if (zlistx_size (activity->workers) == 0)
                self->served--;
        }
        s_idle_note (self, activity);
    }
    //  It refers to none of them any more: one may be forgotten now (by
    //  the trim below, or as another worker leaves, while this one waits
    //  for its removal)
    zlistx_purge (worker->activities);
    s_idle_trim (self);
}

void
act_pool_remove (act_pool_t *self, act_worker_t *worker)
{
    act_pool_detach (self, worker);
    zhashx_delete (self->workers, worker->key);
}

act_worker_t *
act_pool_first (act_pool_t *self)
{
    return (act_worker_t *) zhashx_first (self->workers);
}

act_worker_t *
act_pool_next (act_pool_t *self)
{
    return (act_worker_t *) zhashx_next (self->workers);
}

size_t
act_pool_size (act_pool_t *self)
{
    return zhashx_size (self->workers);
}

void
act_pool_forget_calls (act_pool_t *self)
{
    for (act_activity_t *activity = zhashx_first (self->activities); activity;
         activity = zhashx_next (self->activities)) {
        zlistx_purge (activity->queue);
        activity->backlog = activity->queued = activity->running = 0;
        s_idle_note (self, activity);
    }
    s_idle_trim (self);
}

bool
act_worker_free (act_worker_t *worker)
{
    if (zhashx_size (worker->tasks) >= worker->capacity)
        return false;
    size_t held = act_held_bytes (worker->held);
    if (held < worker->max_held)
        return true;
    //  A worker that reads slowly may pass the bound and fall below it often
    if (!worker->throttled)
        act_log_peer (LOG_WARNING, worker->key, "does not read its tasks",
                      "worker %s does not read its tasks: %zu bytes of them wait "
                      "(server/max_worker_bytes %zu); it gets no more until it reads them",
                      worker->name, held, worker->max_held);
    worker->throttled = true;
    return false;
}

bool
act_worker_unthrottle (act_worker_t *worker)
{
    if (!worker->throttled || act_held_bytes (worker->held) >= worker->max_held)
        return false;
    worker->throttled = false;
    act_log_peer (LOG_NOTICE, worker->key, "reads its tasks again",
                  "worker %s reads its tasks again", worker->name);
    return true;
}

//  What a worker's table of tasks holds for each task id (the id is the
//  key): a task given, or one cancelled because no call is its own
static char s_given, s_orphan;

void
act_worker_hold (act_worker_t *worker, const char *task, uint64_t number, uint64_t attempt)
{
    zhashx_insert (worker->tasks, task, &s_given);
    if (number < worker->first_call)
        worker->first_call = number;
    if (number > worker->last_call)
        worker->last_call = number;
    if (attempt > worker->last_attempt)
        worker->last_attempt = attempt;
}

void
act_worker_release (act_worker_t *worker, const char *task)
{
    zhashx_delete (worker->tasks, task);
}

bool
act_worker_orphan (act_worker_t *worker, const char *task)
{
    if (zhashx_lookup (worker->tasks, task) != &s_given)
        return false;
    zhashx_update (worker->tasks, task, &s_orphan);
    return true;
}

bool
act_worker_holds (act_worker_t *worker, const char *task)
{
    return zhashx_lookup (worker->tasks, task) == &s_given;
}

act_worker_t *
act_pool_holder (act_pool_t *self, const char *task)
{
    for (act_worker_t *worker = zhashx_first (self->workers); worker;
         worker = zhashx_next (self->workers))
        if (zhashx_lookup (worker->tasks, task) == &s_given)
            return worker;
    return NULL;
}

bool
act_task_parse (const char *task, uint64_t *number, uint64_t *attempt)
{
    const char *dot = strchr (task, '.');
    return dot && act_decimal_parse (task, (size_t) (dot - task), UINT64_MAX, number)
        && act_decimal_parse (dot + 1, strlen (dot + 1), UINT64_MAX, attempt) && *attempt > 0;
}

bool
act_worker_given (act_worker_t *worker, const char *task)
{
    uint64_t number, attempt;
    return act_task_parse (task, &number, &attempt)
        && number >= worker->first_call && number <= worker->last_call
        && attempt <= worker->last_attempt;
}

act_worker_t *
act_worker_pick (act_activity_t *activity)
{
    act_worker_t *best = NULL;
    for (act_worker_t *worker = zlistx_first (activity->workers); worker;
         worker = zlistx_next (activity->workers)) {
        if (!act_worker_free (worker)
        ||  !act_security_patterns_match (worker->patterns, activity->name))
            continue;
        if (!best) {
            best = worker;
            continue;
        }
        //  Load relative to capacity, compared without division
        size_t load = zhashx_size (worker->tasks) * best->capacity;
        size_t best_load = zhashx_size (best->tasks) * worker->capacity;
        if (load < best_load || (load == best_load && worker->used < best->used))
            best = worker;
    }
    return best;
}

act_out_t *
act_worker_send (act_outbox_t *outbox, act_worker_t *worker, const char *command)
{
    act_out_t *out = NULL;
    if (worker->protocol == ACT_PROTO_ACTW) {
        out = act_outbox_add (outbox, true, false);
        act_out_charge (out, worker->held);
        act_out_frame (out, worker->identity);
        //  Only a peer refused for sending one (a REQ socket) has an
        //  envelope: its DISCONNECT comes in the framing it can read
        if (worker->envelope)
            act_out_literal (out, "");
        act_out_literal (out, ACT_WORKER_HEADER);
        act_out_literal (out, command);
    }
    else {
        //  Majordomo: commands are one byte, after an empty frame for a
        //  worker that sends one (the ZeroMQ guide's 7/MDP workers, and
        //  most 18/MDP libraries)
        bool v1 = worker->protocol == ACT_PROTO_MDP1;
        byte code = 0;
        if (streq (command, "TASK"))
            code = ACT_MDP_REQUEST;
        else
        if (streq (command, "HEARTBEAT"))
            code = v1? ACT_MDP1_HEARTBEAT: ACT_MDP2_HEARTBEAT;
        else
        if (streq (command, "DISCONNECT"))
            code = v1? ACT_MDP1_DISCONNECT: ACT_MDP2_DISCONNECT;
        else
            return NULL;            //  Majordomo has no CANCEL
        out = act_outbox_add (outbox, true, false);
        act_out_charge (out, worker->held);
        act_out_frame (out, worker->identity);
        if (worker->envelope)
            act_out_add (out, "", 0);
        act_out_addstr (out, v1? ACT_MDPW01: ACT_MDPW02);
        act_out_add (out, &code, 1);
    }
    if (streq (command, "HEARTBEAT"))
        act_out_patient (out);      //  It promises nothing: it may wait
    worker->sent = act_clock_ms ();
    return out;
}

void
act_pool_unsent (void *arg, zmq_msg_t *parts, size_t nparts)
{
    act_pool_t *self = (act_pool_t *) arg;
    //  [routing id][""]?[header][verb][task]... as act_worker_send and
    //  act_worker_task build it: ACT/1's TASK, or Majordomo's REQUEST
    char key [2 * 255 + 1];
    size_t size = zmq_msg_size (&parts [0]);
    act_worker_t *worker = NULL;
    if (size <= 255) {
        act_hex_write (key, zmq_msg_data (&parts [0]), size);
        worker = act_pool_worker (self, key);
    }
    size_t at = worker && worker->envelope? 2: 1;
    if (!worker || nparts < at + 3)
        return;
    zmq_msg_t *verb = &parts [at + 1];
    bool task = worker->protocol == ACT_PROTO_ACTW
              ? zmq_msg_size (verb) == 4 && memcmp (zmq_msg_data (verb), "TASK", 4) == 0
              : zmq_msg_size (verb) == 1 && *(byte *) zmq_msg_data (verb) == ACT_MDP_REQUEST;
    size = zmq_msg_size (&parts [at + 2]);
    if (task && size < ACT_TASK_ID_SIZE) {
        char id [ACT_TASK_ID_SIZE];
        memcpy (id, zmq_msg_data (&parts [at + 2]), size);
        id [size] = 0;
        act_worker_release (worker, id);
    }
}

size_t
act_pool_heartbeat (act_pool_t *self, act_outbox_t *outbox, long long now, long long interval)
{
    size_t sent = 0;
    for (act_worker_t *worker = act_pool_first (self); worker; worker = act_pool_next (self))
        if (now - worker->sent >= interval) {
            act_worker_send (outbox, worker, "HEARTBEAT");
            sent++;
        }
    return sent;
}

act_out_t *
act_worker_task (act_outbox_t *outbox, act_worker_t *worker, const char *task,
                 const char *activity, const char *params, const char *meta)
{
    act_out_t *out = act_worker_send (outbox, worker, "TASK");
    act_out_addstr (out, task);
    if (worker->protocol == ACT_PROTO_ACTW) {
        act_out_addstr (out, activity);
        act_out_addstr (out, params);
        act_out_addstr (out, meta);
    }
    else {
        act_out_add (out, "", 0);
        act_out_addstr (out, params);
    }
    return out;
}

void
act_pool_disconnect (act_outbox_t *outbox, zframe_t *identity, act_proto_t protocol,
                     bool envelope, const char *reason)
{
    act_worker_t stranger = { .identity = identity, .protocol = protocol,
                              .envelope = envelope };
    act_out_t *out = act_worker_send (outbox, &stranger, "DISCONNECT");
    if (protocol == ACT_PROTO_ACTW)
        act_out_addstr (out, reason);
}

const char *act_pool_outcome_names [ACT_POOL_OUTCOMES] = {
    "ok", "error", "timeout", "skipped", "cancelled"
};

//  One activity's entry of STATS
static json_t *
s_activity_json (const act_activity_t *activity)
{
    json_t *outcomes = json_object ();
    for (size_t i = 0; i < ACT_POOL_OUTCOMES; i++)
        json_object_set_new (outcomes, act_pool_outcome_names [i],
                             json_integer ((json_int_t) activity->outcomes [i]));
    return json_pack ("{sIsIsIsIsos{sososo}}",
        "workers", (json_int_t) zlistx_size (activity->workers),
        "queued", (json_int_t) activity->queued,
        "running", (json_int_t) activity->running,
        "done", (json_int_t) activity->done,
        //  Beyond PROTOCOL.md section 4: the calls done per status, and
        //  latencies, since this start
        "outcomes", outcomes,
        "latency_ms", "queue", act_hist_json (&activity->queue_ms),
        "run", act_hist_json (&activity->run_ms),
        "total", act_hist_json (&activity->total_ms));
}

//  One worker's entry of STATS
static json_t *
s_worker_json (act_worker_t *worker)
{
    json_t *names = json_array ();
    for (act_activity_t *activity = zlistx_first (worker->activities); activity;
         activity = zlistx_next (worker->activities))
        json_array_append_new (names, json_string (activity->name));
    return json_pack ("{sssosIsIss}",
        "name", worker->name, "activities", names,
        "capacity", (json_int_t) worker->capacity,
        "running", (json_int_t) zhashx_size (worker->tasks),
        "lang", worker->lang);
}

//  The entries of STATS being listed within a number of bytes
typedef struct {
    size_t room;                //  Bytes the next entries may take; 0
                                //  once one did not fit
    size_t left_out;            //  Entries left out so far
} s_listing_t;

//  Add entry (taken) to container, an object (under key) or an array
//  (key NULL), when its text fits in the listing's room, and take its
//  bytes from the room: its text, its key and colon, and a comma (one too
//  many for the first: a bound, not a count). Else count it left out,
//  and leave no room for those after it: a listing is the entries up to
//  the first that does not fit, as a page is. An entry NULL (not made:
//  no room was left, or no memory) is left out.
static void
s_list (s_listing_t *listing, json_t *container, const char *key, json_t *entry)
{
    char *text = entry && listing->room? act_json_dump (entry): NULL;
    char *quoted = text && key? act_json_quote (key): NULL;
    size_t bytes = text? strlen (text) + 1 + (key? strlen (quoted) + 1: 0): SIZE_MAX;
    free (text);
    free (quoted);
    if (bytes > listing->room) {
        listing->room = 0;
        listing->left_out++;
        json_decref (entry);
    }
    else {
        listing->room -= bytes;
        if (key)
            json_object_set_new (container, key, entry);
        else
            json_array_append_new (container, entry);
    }
}

//  Workers in the order they joined (qsort)
static int
s_compare_joined (const void *a, const void *b)
{
    uint64_t left = (*(act_worker_t * const *) a)->joined;
    uint64_t right = (*(act_worker_t * const *) b)->joined;
    return left < right? -1: left > right;
}

//  The room "workers_left_out" and "activities_left_out" take at most:
//  their keys, quotes, colons, commas, and 20 digits each
#define S_LEFT_OUT_ROOM (2 * (sizeof "\"activities_left_out\":," + 20))

void
act_pool_stats (act_pool_t *self, json_t *stats, size_t max_bytes)
{
    json_object_set_new (stats, "unserved", json_pack ("{sIsIsI}",
        "activities", (json_int_t) self->unserved,
        "max", (json_int_t) self->settings->max_unserved_activities,
        "refused", (json_int_t) self->unserved_refused));
    json_object_set_new (stats, "served", json_pack ("{sIsIsIsIsI}",
        "activities", (json_int_t) self->served,
        "max", (json_int_t) self->settings->max_served_activities,
        "refused", (json_int_t) self->served_refused,
        "max_per_worker", (json_int_t) self->settings->max_worker_activities,
        "refused_per_worker", (json_int_t) self->worker_refused));
    json_t *workers = json_array ();
    json_t *activities = json_object ();
    json_object_set_new (stats, "workers", workers);
    json_object_set_new (stats, "activities", activities);
    char *text = act_json_dump (stats);
    size_t used = (text? strlen (text): max_bytes) + S_LEFT_OUT_ROOM;
    free (text);
    s_listing_t listing = { used < max_bytes? max_bytes - used: 0, 0 };
    //  Workers first: they are few (one a connection), and what an
    //  operator reads STATS for; then the activities in use, which a
    //  flood of idle names (act_pool_idle keeps 1024) must not hide. The
    //  workers in the order they joined, not the table's: the same from
    //  one STATS to the next (actd-http numbers workers of one name so)
    size_t count = 0;
    act_worker_t **joined = malloc ((zhashx_size (self->workers) + 1) * sizeof *joined);
    for (act_worker_t *worker = zhashx_first (self->workers); worker && joined;
         worker = zhashx_next (self->workers))
        joined [count++] = worker;
    if (joined)
        qsort (joined, count, sizeof *joined, s_compare_joined);
    else
        listing.left_out = zhashx_size (self->workers);     //  No memory
    for (size_t i = 0; i < count; i++)
        s_list (&listing, workers, NULL, listing.room? s_worker_json (joined [i]): NULL);
    free (joined);
    size_t workers_left_out = listing.left_out;
    listing.left_out = 0;
    for (int idle = 0; idle < 2; idle++)
        for (act_activity_t *activity = zhashx_first (self->activities); activity;
             activity = zhashx_next (self->activities))
            if (s_unused (activity) == (idle == 1))
                s_list (&listing, activities, activity->name,
                        listing.room? s_activity_json (activity): NULL);
    if (workers_left_out)
        json_object_set_new (stats, "workers_left_out", json_integer ((json_int_t)
                                                                      workers_left_out));
    if (listing.left_out)
        json_object_set_new (stats, "activities_left_out", json_integer ((json_int_t)
                                                                         listing.left_out));
}
