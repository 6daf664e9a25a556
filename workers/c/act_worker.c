/*  =========================================================================
    act_worker - a C worker for actd.

    A zloop turns: the sockets' messages, a heartbeat timer, the caller's
    watched descriptors and timers. The worker connects to every broker in
    its endpoint list (several brokers sharing one store), each a link with
    its own socket, READY, heartbeats and reconnections; each broker sees
    the declared capacity. Each connection of a link has a number; a task
    remembers its link and connection, and an answer to a task from an
    older connection is not sent (the broker has given that task to someone
    else as a new attempt).
    ========================================================================= */

#include "actd/act_worker.h"
#include "actd/act_json.h"
#include "actd/act_ref.h"
#include "actd/act_wire.h"
#include "actd/act_schema.h"
#include "act_worker_int.h"

//  A handler for one activity
typedef struct {
    act_worker_fn *fn;          //  The handler
    void *arg;                  //  Its argument
} s_handler_t;

//  A caller's timer or watch, kept until it ends
typedef struct {
    act_worker_t *worker;       //  Owner
    act_worker_timer_fn *timer; //  For timers
    act_worker_fd_fn *watch;    //  For watches
    void *arg;                  //  The caller's argument
    int id;                     //  zloop timer id
    zmq_pollitem_t item;        //  For watches: the descriptor
    bool dead;                  //  Cancelled; freed once its pass is over
} s_hook_t;


struct _act_worker_t {
    zlistx_t *links;            //  act_worker_link_t, one per broker
    char *name;                 //  Name in READY
    char *lang;                 //  Language in READY
    zloop_t *loop;              //  The event loop
    zhashx_t *handlers;         //  Activity -> s_handler_t
    json_t *tools;              //  Activity -> tool description, for READY
    zhashx_t *tasks;            //  act_task_key -> act_task_t, not answered
    zlistx_t *hooks;            //  s_hook_t of timers and watches
    size_t capacity;            //  Tasks at once, announced in READY
    size_t max_message_bytes;   //  Largest answer sent (actd's setting)
    int heartbeat_ms;           //  Heartbeat interval
    int liveness;               //  Silent intervals before reconnecting
    bool stopped;               //  act_worker_stop was called
    int grace_ms;               //  How long running tasks may finish at a stop
    int64_t draining_until;     //  The stop's grace ends then (0: no stop yet)
    bool connected;             //  act_worker_connect connected every link
    bool refused;               //  ZeroMQ refused an endpoint: it will not run
    act_curve_t curve;          //  CURVE: the broker's key, this worker's certificate
};


static void
s_free_item (void **item)
{
    free (*item);
    *item = NULL;
}

static void
s_link_destroy (void **item)
{
    act_worker_link_t *link = (act_worker_link_t *) *item;
    zsock_destroy (&link->socket);
    free (link->endpoint);
    free (link);
    *item = NULL;
}

act_worker_t *
act_worker_new (const char *endpoint, const char *name)
{
    //  Checked as the broker checks READY (PROTOCOL.md section 2.1)
    if (name && (!*name || strlen (name) > ACT_WORKER_MAX_NAME))
        return NULL;
    act_worker_t *self = calloc (1, sizeof *self);
    self->links = zlistx_new ();
    zlistx_set_destructor (self->links, s_link_destroy);
    //  No endpoint: the environment's, as act_client_new reads it (CURVE
    //  too); programs that take an endpoint on their command line pass it
    bool from_env = !endpoint;
    if (from_env) {
        endpoint = getenv ("ACTD_WORKER_ENDPOINT");
        if (!endpoint || !*endpoint)
            endpoint = ACT_WORKER_ENDPOINT;
    }
    //  A list of brokers: "tcp://a:5556,tcp://b:5556"
    char *list = strdup (endpoint);
    for (char *item = strtok (list, ", "); item; item = strtok (NULL, ", ")) {
        act_worker_link_t *link = calloc (1, sizeof *link);
        link->worker = self;
        link->endpoint = strdup (item);
        zlistx_add_end (self->links, link);
    }
    free (list);
    self->name = strdup (name? name: "c-worker");
    self->lang = strdup ("c");
    self->loop = zloop_new ();
    self->handlers = zhashx_new ();
    zhashx_set_destructor (self->handlers, s_free_item);
    self->tools = json_object ();
    self->tasks = zhashx_new ();
    self->hooks = zlistx_new ();
    zlistx_set_destructor (self->hooks, s_free_item);
    self->capacity = 1;
    self->max_message_bytes = ACT_WORKER_MAX_MESSAGE_BYTES;
    self->heartbeat_ms = 1000;
    self->liveness = 3;
    self->grace_ms = ACT_WORKER_GRACE_MS;
    if (from_env && act_curve_from_env (&self->curve))
        act_worker_destroy (&self);
    return self;
}

void
act_worker_destroy (act_worker_t **self_p)
{
    if (self_p && *self_p) {
        act_worker_t *self = *self_p;
        for (act_task_t *task = zhashx_first (self->tasks); task;
             task = zhashx_next (self->tasks))
            act_task_destroy (&task);
        zhashx_destroy (&self->tasks);
        zhashx_destroy (&self->handlers);
        json_decref (self->tools);
        zloop_destroy (&self->loop);
        zlistx_destroy (&self->hooks);
        zlistx_destroy (&self->links);
        act_curve_reset (&self->curve);
        free (self->name);
        free (self->lang);
        free (self);
        *self_p = NULL;
    }
}

int
act_worker_serve (act_worker_t *self, const char *activity, act_worker_fn *handler,
                  void *arg)
{
    if (!activity || !*activity || strlen (activity) > ACT_MAX_TOOL || !handler)
        return -1;
    s_handler_t *entry = malloc (sizeof *entry);
    *entry = (s_handler_t) { handler, arg };
    zhashx_update (self->handlers, activity, entry);
    return 0;
}

//  The output path of a tool, checked as the broker checks it at READY:
//  output_const an output path, output_pattern a regular expression it
//  compiles (as JSON Schema's "pattern"). Returns 0, or -1 with err set.
static int
s_output_valid (const char *output_const, const char *output_pattern, act_err_t *err)
{
    if (output_const) {
        act_expr_t *expr = act_expr_parse (output_const, true, err);
        act_expr_destroy (&expr);
    }
    if (output_pattern) {
        json_t *schema = json_pack ("{ssss}", "type", "string", "pattern", output_pattern);
        act_schema_t *compiled = schema? act_schema_new (schema, err): NULL;
        if (!schema)
            act_err_set (err, ACT_E_BAD_ARGUMENT, "the pattern is not UTF-8");
        act_schema_destroy (&compiled);
        json_decref (schema);
    }
    return err->code? -1: 0;
}

int
act_worker_declare (act_worker_t *self, const char *activity, const char *description,
                    const char *params_schema, const char *output_const,
                    const char *output_pattern)
{
    act_err_t invalid = { 0 };
    if (!activity || !zhashx_lookup (self->handlers, activity) || (output_const && output_pattern)
    ||  s_output_valid (output_const, output_pattern, &invalid))
        return -1;
    json_t *tool = json_object ();
    if (description)
        json_object_set_new (tool, "description", json_string (description));
    if (params_schema) {
        //  Checked here as the broker will, so a mistake shows at once
        act_err_t err = { 0 };
        json_t *schema = act_json_parse (params_schema, strlen (params_schema), &err);
        act_schema_t *compiled = schema? act_schema_new (schema, &err): NULL;
        act_schema_destroy (&compiled);
        if (err.code) {
            json_decref (schema);
            json_decref (tool);
            return -1;
        }
        json_object_set_new (tool, "params", schema);
    }
    if (output_const || output_pattern)
        json_object_set_new (tool, "outputPath", json_pack ("{ss}", output_const? "const":
                             "pattern", output_const? output_const: output_pattern));
    json_object_set_new (self->tools, activity, tool);
    return 0;
}

int
act_worker_set_capacity (act_worker_t *self, size_t capacity)
{
    if (capacity < 1 || capacity > ACT_WORKER_MAX_CAPACITY)
        return -1;
    self->capacity = capacity;
    return 0;
}

int
act_worker_set_max_message_bytes (act_worker_t *self, size_t bytes)
{
    if (bytes < 1)
        return -1;
    self->max_message_bytes = bytes;
    return 0;
}

size_t
act_worker_max_message_bytes (act_worker_t *self)
{
    return self->max_message_bytes;
}

void
act_worker_set_heartbeat (act_worker_t *self, int heartbeat_ms, int liveness)
{
    self->heartbeat_ms = heartbeat_ms > 0? heartbeat_ms: 1000;
    self->liveness = liveness > 0? liveness: 3;
}

int
act_worker_set_lang (act_worker_t *self, const char *lang)
{
    if (!lang || !*lang || strlen (lang) > ACT_WORKER_MAX_LANG)
        return -1;
    free (self->lang);
    self->lang = strdup (lang);
    return 0;
}

int
act_worker_set_curve (act_worker_t *self, const char *server_public,
                      const char *certificate_file)
{
    return act_curve_set (&self->curve, server_public, certificate_file);
}

int
act_worker_link_send (act_worker_link_t *link, const char *command, zmsg_t *args)
{
    if (!link->socket) {
        zmsg_destroy (&args);
        return -1;
    }
    zmsg_t *msg = args? args: zmsg_new ();
    zmsg_pushstr (msg, command);
    zmsg_pushstr (msg, ACT_WORKER_HEADER);
    link->sent = zclock_mono ();
    return act_curve_send (link->socket, &msg);
}

static int s_on_message (zloop_t *loop, zsock_t *reader, void *arg);

//  Free the hooks of cancelled timers. zloop removes a cancelled timer only
//  at the end of its pass and may still call it in that pass, so a hook
//  is never freed when it is cancelled, only later, from a reader (readers
//  run after the timers of a pass)
static void
s_hooks_purge (act_worker_t *self)
{
    zlistx_t *dead = zlistx_new ();
    for (s_hook_t *hook = zlistx_first (self->hooks); hook; hook = zlistx_next (self->hooks))
        if (hook->dead)
            zlistx_add_end (dead, hook);
    for (s_hook_t *hook = zlistx_first (dead); hook; hook = zlistx_next (dead))
        zlistx_delete (self->hooks, zlistx_find (self->hooks, hook));
    zlistx_destroy (&dead);
}

//  Connect to a broker with a new socket (so a new identity), say READY.
//  Returns 0, or -1 with errno set when ZeroMQ refuses the endpoint
//  (logged; the socket is kept, unconnected and not read, and replaced at
//  the next attempt)
static int
s_connect (act_worker_link_t *link)
{
    act_worker_t *self = link->worker;
    if (link->socket) {
        zloop_reader_end (self->loop, link->socket);
        zsock_destroy (&link->socket);
    }
    link->connection++;
    link->welcomed = false;
    //  Tasks of the old connection belong to the broker's past: it gives
    //  them to someone else as new attempts. Tell their handlers (an
    //  answer to them is not sent)
    zlistx_t *ids = zhashx_keys (self->tasks);
    for (char *id = zlistx_first (ids); id; id = zlistx_next (ids)) {
        act_task_t *task = zhashx_lookup (self->tasks, id);
        if (task && task->link == link && !task->cancelled) {
            task->cancelled = true;
            if (task->on_cancel)
                task->on_cancel (task, task->cancel_arg);
        }
    }
    zlistx_destroy (&ids);
    link->socket = act_curve_dealer (&self->curve, link->endpoint);
    link->heard = zclock_mono ();
    if (zsock_connect (link->socket, "%s", link->endpoint)) {
        int error = zmq_errno ();
        zsys_error ("actd worker %s: cannot connect to '%s': %s", self->name, link->endpoint,
                    zmq_strerror (error));
        errno = error;
        return -1;
    }
    zloop_reader (self->loop, link->socket, s_on_message, link);
    json_t *activities = json_array ();
    for (void *entry = zhashx_first (self->handlers); entry; entry = zhashx_next (self->handlers))
        json_array_append_new (activities, json_string ((const char *) zhashx_cursor (self->handlers)));
    json_t *ready = json_pack ("{sosIssss}", "activities", activities,
                               "capacity", (json_int_t) self->capacity,
                               "name", self->name, "lang", self->lang);
    if (json_object_size (self->tools))
        json_object_set (ready, "tools", self->tools);
    char *text = act_json_dump (ready);
    zmsg_t *args = zmsg_new ();
    zmsg_addstr (args, text);
    act_worker_link_send (link, "READY", args);
    free (text);
    json_decref (ready);
    link->heard = zclock_mono ();
    return 0;
}

//  The grace of a stop is over (timer callback): the loop ends
static int
s_on_grace_end (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    (void) arg;
    return -1;
}

//  True when act_worker_run is to return: a stop was asked (act_worker_stop,
//  SIGINT, SIGTERM) and no task runs, or the stop's grace is over. Until
//  then the worker serves on (heartbeats, answers, the TASKs the broker
//  sends while it sees a free slot, which run within what is left of the
//  grace): a task cut short at a stop fails worker_lost and runs again
//  elsewhere, an attempt spent
static bool
s_done (act_worker_t *self)
{
    if (!self->stopped && !zsys_interrupted)
        return false;
    if (!self->draining_until) {
        self->draining_until = zclock_mono () + self->grace_ms;
        if (self->grace_ms > 0 && zhashx_size (self->tasks))
            zloop_timer (self->loop, (size_t) self->grace_ms, 1, s_on_grace_end, self);
    }
    return zhashx_size (self->tasks) == 0 || zclock_mono () >= self->draining_until;
}

//  The broker sent DISCONNECT. After a connection it had accepted, connect
//  again at once (PROTOCOL.md section 2). Right after READY it refused
//  this worker (a capacity or a tool it does not take): close the socket
//  and connect again after a wait that doubles up to S_BACKOFF_MAX_MS, so
//  that a refusal repeated for ever costs a few READYs a minute, not a
//  busy loop on both sides
#define S_BACKOFF_MIN_MS 100
#define S_BACKOFF_MAX_MS 5000
static void
s_on_disconnect (act_worker_link_t *link, const char *reason)
{
    act_worker_t *self = link->worker;
    if (link->welcomed) {
        link->backoff_ms = 0;
        s_connect (link);
        return;
    }
    link->backoff_ms = link->backoff_ms? link->backoff_ms * 2: S_BACKOFF_MIN_MS;
    if (link->backoff_ms > S_BACKOFF_MAX_MS)
        link->backoff_ms = S_BACKOFF_MAX_MS;
    zsys_warning ("actd worker %s: %s refused READY (%s); connecting again in %d ms",
                  self->name, link->endpoint, reason? reason: "no reason given",
                  link->backoff_ms);
    zloop_reader_end (self->loop, link->socket);
    zsock_destroy (&link->socket);
    link->retry_at = zclock_mono () + link->backoff_ms;
}

//  Run a TASK (its frames left in msg), or answer it at once: FAIL
//  bad_task when its frames are not a task id, an activity, params and
//  meta that read (as the Python and Node libraries answer it), so that
//  its slot at the broker is freed; FAIL unknown_activity (retryable: the
//  broker may have a worker that serves it) for an activity not served
static void
s_on_task (act_worker_link_t *link, zmsg_t *msg)
{
    act_worker_t *self = link->worker;
    size_t frames = zmsg_size (msg);
    act_task_t *task = act_task_new (link, msg);
    zhashx_update (self->tasks, task->key, task);
    s_handler_t *handler = task->activity? zhashx_lookup (self->handlers, task->activity): NULL;
    if (frames != 4) {
        char *message = zsys_sprintf ("a TASK of %zu frames, not 4 "
                                      "(task id, activity, params, meta)", frames);
        act_task_fail (task, "bad_task", message, false);
        zstr_free (&message);
    }
    else
    if (task->unreadable)
        act_task_fail (task, "bad_task", task->unreadable, false);
    else
    if (!handler)
        act_task_fail (task, "unknown_activity", "this worker has no such activity", true);
    else
        handler->fn (task, handler->arg);
}

static int
s_on_message (zloop_t *loop, zsock_t *reader, void *arg)
{
    act_worker_link_t *link = (act_worker_link_t *) arg;
    act_worker_t *self = link->worker;
    s_hooks_purge (self);
    zmsg_t *msg = zmsg_recv (reader);
    if (!msg)
        return s_done (self)? -1: 0;
    link->heard = zclock_mono ();
    char *header = zmsg_popstr (msg);
    char *command = zmsg_popstr (msg);
    if (header && command && streq (header, ACT_WORKER_HEADER)) {
        if (streq (command, "TASK") && zmsg_size (msg) >= 1)
            s_on_task (link, msg);
        else
        if (streq (command, "CANCEL") && zmsg_size (msg) == 1) {
            char *id = zmsg_popstr (msg);
            char *key = act_task_key (link, link->connection, id);
            act_task_t *task = zhashx_lookup (self->tasks, key);
            free (key);
            if (task && !task->cancelled) {
                task->cancelled = true;
                if (task->on_cancel)
                    task->on_cancel (task, task->cancel_arg);
            }
            free (id);
        }
        else
        if (streq (command, "DISCONNECT")) {
            char *reason = zmsg_popstr (msg);
            s_on_disconnect (link, reason);
            free (reason);
        }
        if (link->socket && !streq (command, "DISCONNECT")) {
            link->welcomed = true;
            link->backoff_ms = 0;
        }
    }
    free (header);
    free (command);
    zmsg_destroy (&msg);
    return s_done (self)? -1: 0;
}

//  True when the broker has not been heard for liveness intervals. A
//  message waiting on the socket counts as heard: after a callback that
//  held the loop for long (a large result), the timers run before the
//  socket is read, and the broker's heartbeats are waiting there
static bool
s_link_silent (act_worker_link_t *link, int64_t now)
{
    act_worker_t *self = link->worker;
    if (now - link->heard <= (int64_t) self->heartbeat_ms * self->liveness)
        return false;
    if (zsock_events (link->socket) & ZMQ_POLLIN) {
        link->heard = now;
        return false;
    }
    return true;
}

//  Heartbeat when nothing else was sent; reconnect when the broker is silent
static int
s_on_heartbeat (zloop_t *loop, int timer_id, void *arg)
{
    act_worker_t *self = (act_worker_t *) arg;
    if (s_done (self))
        return -1;              //  Stopped (SIGINT or SIGTERM: CZMQ's handler)
    int64_t now = zclock_mono ();
    for (act_worker_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links)) {
        if (!link->socket) {
            if (now >= link->retry_at)
                s_connect (link);
        }
        else
        if (s_link_silent (link, now))
            s_connect (link);
        else
        if (now - link->sent >= self->heartbeat_ms)
            act_worker_link_send (link, "HEARTBEAT", NULL);
    }
    return 0;
}

int
act_worker_connect (act_worker_t *self)
{
    if (self->connected)
        return 0;
    for (act_worker_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links))
        if (s_connect (link)) {
            //  Nothing sent to any: close the links connected so far
            int error = errno;
            for (link = zlistx_first (self->links); link; link = zlistx_next (self->links))
                if (link->socket) {
                    zloop_reader_end (self->loop, link->socket);
                    zsock_destroy (&link->socket);
                }
            self->refused = true;
            errno = error;
            return -1;
        }
    self->connected = true;
    return 0;
}

int
act_worker_run (act_worker_t *self)
{
    if (zhashx_size (self->handlers) == 0 || zlistx_size (self->links) == 0
    ||  self->refused || act_worker_connect (self))
        return -1;
    //  SIGINT and SIGTERM stop it (CZMQ's handler), even when a client made
    //  first gave them back (act_client_new); not when the program turned
    //  CZMQ's handling off (zsys_handler_set (NULL))
    zsys_catch_interrupts ();
    //  Other signals (a SIGCHLD the caller handles) interrupt the poll:
    //  the loop goes on (see below), and the heartbeat timer ends it on
    //  SIGINT/SIGTERM
    zloop_set_nonstop (self->loop, true);
    //  Checked twice an interval: a heartbeat is never much late
    zloop_timer (self->loop, (size_t) (self->heartbeat_ms / 2 > 0? self->heartbeat_ms / 2: 1),
                 0, s_on_heartbeat, self);
    //  zloop_start returns 0 when a signal interrupted its poll (CZMQ 4.2
    //  does so even in nonstop mode), -1 when a handler ended it: start it
    //  again unless the worker was asked to stop
    while (zloop_start (self->loop) == 0 && !s_done (self))
        ;
    //  The tasks the grace did not see to their end go to other workers
    //  as new attempts: act_task_cancelled says so to whoever holds them
    for (act_task_t *task = zhashx_first (self->tasks); task; task = zhashx_next (self->tasks))
        task->cancelled = true;
    for (act_worker_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links))
        if (link->socket)
            act_worker_link_send (link, "DISCONNECT", NULL);
    return 0;
}

void
act_worker_set_grace (act_worker_t *self, int grace_ms)
{
    self->grace_ms = grace_ms > 0? grace_ms: 0;
}

void
act_worker_stop (act_worker_t *self)
{
    self->stopped = true;
}

void
act_worker_heartbeat (act_worker_t *self)
{
    for (act_worker_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links))
        if (link->socket && self->connected)
            act_worker_link_send (link, "HEARTBEAT", NULL);
}

size_t
act_worker_brokers (act_worker_t *self)
{
    return zlistx_size (self->links);
}

static int
s_on_watch (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    s_hook_t *hook = (s_hook_t *) arg;
    act_worker_t *self = hook->worker;
    if (hook->watch (self, item->fd, hook->arg) < 0)
        act_worker_unwatch (self, item->fd);
    return s_done (self)? -1: 0;
}

int
act_worker_watch (act_worker_t *self, int fd, act_worker_fd_fn *fn, void *arg)
{
    s_hook_t *hook = calloc (1, sizeof *hook);
    *hook = (s_hook_t) { self, NULL, fn, arg, 0, { NULL, fd, ZMQ_POLLIN, 0 }, false };
    zlistx_add_end (self->hooks, hook);
    int rc = zloop_poller (self->loop, &hook->item, s_on_watch, hook);
    //  A pipe's hang-up shows as a poll error: keep watching, the callback
    //  reads the end of file
    if (rc == 0)
        zloop_poller_set_tolerant (self->loop, &hook->item);
    return rc;
}

void
act_worker_unwatch (act_worker_t *self, int fd)
{
    for (s_hook_t *hook = zlistx_first (self->hooks); hook; hook = zlistx_next (self->hooks))
        if (hook->watch && hook->item.fd == fd) {
            zloop_poller_end (self->loop, &hook->item);
            zlistx_delete (self->hooks, zlistx_cursor (self->hooks));
            return;
        }
}

static int
s_on_timer (zloop_t *loop, int timer_id, void *arg)
{
    s_hook_t *hook = (s_hook_t *) arg;
    act_worker_t *self = hook->worker;
    if (!hook->dead) {
        hook->dead = true;      //  A one-shot timer: done after this call
        hook->timer (self, hook->arg);
    }
    return s_done (self)? -1: 0;
}

int
act_worker_timer (act_worker_t *self, int delay_ms, act_worker_timer_fn *fn, void *arg)
{
    s_hook_t *hook = calloc (1, sizeof *hook);
    hook->worker = self;
    hook->timer = fn;
    hook->arg = arg;
    zlistx_add_end (self->hooks, hook);
    hook->id = zloop_timer (self->loop, (size_t) (delay_ms > 0? delay_ms: 1), 1, s_on_timer, hook);
    return hook->id;
}

void
act_worker_cancel_timer (act_worker_t *self, int timer_id)
{
    for (s_hook_t *hook = zlistx_first (self->hooks); hook; hook = zlistx_next (self->hooks))
        if (hook->timer && hook->id == timer_id && !hook->dead) {
            zloop_timer_end (self->loop, timer_id);
            hook->dead = true;
            return;
        }
}

void
act_worker_task_forget (act_worker_t *self, act_task_t *task)
{
    zhashx_delete (self->tasks, task->key);
}
