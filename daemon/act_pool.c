/*  =========================================================================
    act_pool - activities and workers (see act_pool.h).
    ========================================================================= */

#include "act_pool.h"
#include "act_security.h"

struct _act_pool_t {
    act_settings_t *settings;   //  Per-activity limits (borrowed)
    zhashx_t *activities;       //  Name -> act_activity_t
    zhashx_t *workers;          //  Routing id hex -> act_worker_t
    uint64_t joins;             //  Workers joined since the start
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
    return self;
}

void
act_pool_destroy (act_pool_t **self_p)
{
    if (self_p && *self_p) {
        act_pool_t *self = *self_p;
        zhashx_destroy (&self->workers);
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

void
act_pool_prune (act_pool_t *self)
{
    zlistx_t *unused = zlistx_new ();
    for (act_activity_t *activity = zhashx_first (self->activities); activity;
         activity = zhashx_next (self->activities))
        if (zlistx_size (activity->workers) == 0 && activity->backlog == 0
        &&  activity->running == 0 && activity->done == 0)
            zlistx_add_end (unused, activity->name);
    for (char *name = zlistx_first (unused); name; name = zlistx_next (unused))
        zhashx_delete (self->activities, name);
    zlistx_destroy (&unused);
}

void
act_pool_resettle (act_pool_t *self)
{
    for (act_activity_t *activity = zhashx_first (self->activities); activity;
         activity = zhashx_next (self->activities))
        activity->settings = act_settings_activity (self->settings, activity->name);
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
        if (!zlistx_find (worker->activities, activity)) {
            zlistx_add_end (worker->activities, activity);
            zlistx_add_end (activity->workers, worker);
        }
    }
    zhashx_insert (self->workers, key, worker);
    char *list = act_json_dump (names);
    act_log (LOG_INFO, "worker %s joined (%s%s%s): activities %s, capacity %zu", worker->name,
             protocol == ACT_PROTO_ACTW? "ACT/1": protocol == ACT_PROTO_MDP1? "MDP/0.1": "MDP/0.2",
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
        if (handle)
            zlistx_delete (activity->workers, handle);
    }
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
act_pool_clear (act_pool_t *self, act_outbox_t *outbox)
{
    for (act_worker_t *worker = zhashx_first (self->workers); worker;
         worker = zhashx_next (self->workers))
        if (outbox)
            act_pool_disconnect (outbox, worker->identity, worker->protocol,
                                 worker->envelope, "broker restarting its state");
    zhashx_purge (self->workers);
    zhashx_purge (self->activities);
}

void
act_pool_forget_calls (act_pool_t *self)
{
    for (act_activity_t *activity = zhashx_first (self->activities); activity;
         activity = zhashx_next (self->activities)) {
        zlistx_purge (activity->queue);
        activity->backlog = activity->queued = activity->running = 0;
    }
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

void
act_worker_hold (act_worker_t *worker, const char *task, uint64_t number, uint64_t attempt)
{
    zhashx_insert (worker->tasks, task, (void *) task);
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

json_t *
act_pool_activities_json (act_pool_t *self)
{
    json_t *activities = json_object ();
    for (act_activity_t *activity = zhashx_first (self->activities); activity;
         activity = zhashx_next (self->activities)) {
        json_t *outcomes = json_object ();
        for (size_t i = 0; i < ACT_POOL_OUTCOMES; i++)
            json_object_set_new (outcomes, act_pool_outcome_names [i],
                                 json_integer ((json_int_t) activity->outcomes [i]));
        json_object_set_new (activities, activity->name, json_pack ("{sIsIsIsIsos{sososo}}",
            "workers", (json_int_t) zlistx_size (activity->workers),
            "queued", (json_int_t) activity->queued,
            "running", (json_int_t) activity->running,
            "done", (json_int_t) activity->done,
            //  Beyond PROTOCOL.md section 4: the calls done per status, and
            //  latencies, since this start
            "outcomes", outcomes,
            "latency_ms", "queue", act_hist_json (&activity->queue_ms),
            "run", act_hist_json (&activity->run_ms),
            "total", act_hist_json (&activity->total_ms)));
    }
    return activities;
}

json_t *
act_pool_workers_json (act_pool_t *self)
{
    json_t *workers = json_array ();
    for (act_worker_t *worker = zhashx_first (self->workers); worker;
         worker = zhashx_next (self->workers)) {
        json_t *names = json_array ();
        for (act_activity_t *activity = zlistx_first (worker->activities); activity;
             activity = zlistx_next (worker->activities))
            json_array_append_new (names, json_string (activity->name));
        json_array_append_new (workers, json_pack ("{sssosIsIss}",
            "name", worker->name, "activities", names,
            "capacity", (json_int_t) worker->capacity,
            "running", (json_int_t) zhashx_size (worker->tasks),
            "lang", worker->lang));
    }
    return workers;
}
