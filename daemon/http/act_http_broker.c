/*  =========================================================================
    act_http_broker - the ACT/1 side of actd-http (see act_http_broker.h).

    Threads: HTTP connection threads create jobs and pass a pointer to
    the broker thread over its actor pipe (the pipe is shared, so sending
    on it is serialized by a mutex). The broker thread alone touches the
    act_client: it waits in act_client_poll on the broker's socket and on
    the pipe at once, sends what the pipe brings, and files each reply on
    its job by request id. A job is shared by its HTTP thread and the
    broker thread: a reference count and the job's mutex guard it.

    A request that comes while actd is not connected (the client's
    connection events say so) is held, not sent: sent once the connection
    is there, or refused unreachable after S_HOLD_MS (or three quarters of
    its caller's wait, when that is shorter: a timeout would say actd may
    have had it). Before, it was
    queued on the DEALER and its HTTP request waited request_timeout_ms
    (30 s) for a broker that was down; held, it is answered within a
    second, and never reaches actd after its answer said it did not. The
    hold covers the race of an actd that just came back: libzmq connects
    again within its 100 ms reconnect interval, and the requests held
    meanwhile go out then, none refused for a state a moment old.
    ========================================================================= */

#include "act_http_broker.h"
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_MAX_ARGS      4       //  Args of a request, at most
#define S_HOLD_MS       1000    //  A request held while actd is not connected
                                //  waits this long for the connection, at most
#define S_HOLD_POLL_MS  20      //  How often the connection is looked at then

typedef enum { S_SEND, S_WATCH, S_CLOSE, S_STOP } s_op_t;

struct _act_http_job_t {
    pthread_mutex_t lock;       //  Guards everything below but the constants
    pthread_cond_t cond;        //  Signalled when something was filed
    int refs;                   //  Holders: the HTTP thread, the broker thread
    act_http_broker_t *broker;  //  Its broker (constant)
    s_op_t op;                  //  What the broker thread is asked to do
    char *command;              //  S_SEND: the command
    char *args [S_MAX_ARGS];    //  S_SEND: its args, NULL after the last
    char *final_verb;           //  S_SEND: the reply that ends it, or NULL: any
    char *context;              //  S_WATCH: the context
    uint64_t from;              //  S_WATCH: first _seq
    bool calls;                 //  S_WATCH: calls' changes too
    char request [24];          //  Its request id (broker thread)
    int hold_ms;                //  S_SEND: how long it may be held (constant)
    int64_t held_until;         //  S_SEND held: refused unreachable then, if
                                //  actd is still not connected (broker thread)
    act_watch_t *watch;         //  S_WATCH: the watch (broker thread)
    zlistx_t *items;            //  act_reply_t (send) or char * event text (watch)
    size_t queued;              //  S_WATCH: bytes of the event texts in items
    size_t max_bytes;           //  S_WATCH: most bytes queued (constant)
    size_t max_events;          //  S_WATCH: most events queued (constant)
    bool ended;                 //  No more items will come
    act_err_t error;            //  Why a watch ended
};

struct _act_http_broker_t {
    zactor_t *actor;            //  The broker thread
    pthread_mutex_t lock;       //  Serializes sends on the actor's pipe
    bool stopping;              //  act_http_broker_stop was called
    char *endpoint;             //  Broker endpoint(s)
    char *server_key;           //  CURVE: the broker's public key, or NULL
    char *certificate;          //  CURVE: this client's certificate file, or NULL
    int hold_ms;                //  A send's hold when its caller's wait is
                                //  request_timeout_ms
    act_err_t error;            //  Why the thread could not start
};

//  What the broker thread holds
typedef struct {
    act_http_broker_t *owner;   //  Its broker
    zsock_t *pipe;              //  The actor's pipe
    act_client_t *client;       //  The connection to actd
    zhashx_t *sent;             //  Request id -> act_http_job_t sent, not ended
    zlistx_t *watches;          //  act_http_job_t watching
    zlistx_t *held;             //  act_http_job_t sends that came while actd
                                //  was not connected, oldest first
    bool stopping;              //  End every job at once
    bool terminated;            //  $TERM came
} s_thread_t;

//  zlistx destructor of an event's text
static void
s_item_free (void **item)
{
    free (*item);
    *item = NULL;
}

//  zlistx destructor of a reply
static void
s_reply_free (void **item)
{
    act_reply_destroy ((act_reply_t **) item);
}

//  Drop one reference; the last frees the job
static void
s_job_unref (act_http_job_t *job)
{
    pthread_mutex_lock (&job->lock);
    int refs = --job->refs;
    pthread_mutex_unlock (&job->lock);
    if (refs > 0)
        return;
    free (job->command);
    for (size_t i = 0; i < S_MAX_ARGS; i++)
        free (job->args [i]);
    free (job->final_verb);
    free (job->context);
    zlistx_destroy (&job->items);
    pthread_cond_destroy (&job->cond);
    pthread_mutex_destroy (&job->lock);
    free (job);
}

//  A new job with one reference for the HTTP thread and one for the broker
static act_http_job_t *
s_job_new (act_http_broker_t *broker, s_op_t op)
{
    act_http_job_t *job = calloc (1, sizeof *job);
    pthread_mutex_init (&job->lock, NULL);
    //  Its waits are timed on the monotonic clock (s_job_wait): on the
    //  real-time one, a step of the wall clock back by an hour held a
    //  request (and an SSE keepalive) an hour past its timeout
    pthread_condattr_t attributes;
    pthread_condattr_init (&attributes);
    pthread_condattr_setclock (&attributes, CLOCK_MONOTONIC);
    pthread_cond_init (&job->cond, &attributes);
    pthread_condattr_destroy (&attributes);
    job->refs = 2;
    job->broker = broker;
    job->op = op;
    job->items = zlistx_new ();
    zlistx_set_destructor (job->items, op == S_WATCH? s_item_free: s_reply_free);
    return job;
}

//  Hand job (or a bare op, job NULL) to the broker thread
static void
s_post (act_http_broker_t *self, act_http_job_t *job, const char *op)
{
    pthread_mutex_lock (&self->lock);
    zsock_send (self->actor, "sp", op, (void *) job);
    pthread_mutex_unlock (&self->lock);
}

//  File item on job (NULL: nothing), ending it if end; wakes its thread
static void
s_job_file (act_http_job_t *job, void *item, bool end, const act_err_t *err)
{
    pthread_mutex_lock (&job->lock);
    if (item)
        zlistx_add_end (job->items, item);
    if (end && !job->ended) {
        job->ended = true;
        if (err)
            job->error = *err;
    }
    pthread_cond_broadcast (&job->cond);
    pthread_mutex_unlock (&job->lock);
}

//  Queue event (text, taken) on a watch job and wake its thread; false
//  when the job's queue is full: the event is dropped and the watch must
//  end (those queued still go out, then the error: each stream resumed
//  takes one event at least). One event alone always fits, so that a
//  message larger than max_bytes still goes out.
static bool
s_job_event (act_http_job_t *job, char *event)
{
    size_t length = strlen (event);
    pthread_mutex_lock (&job->lock);
    size_t count = zlistx_size (job->items);
    bool full = count > 0 && (count + 1 > job->max_events
                              || job->queued + length > job->max_bytes);
    if (full)
        free (event);
    else {
        zlistx_add_end (job->items, event);
        job->queued += length;
    }
    pthread_cond_broadcast (&job->cond);
    pthread_mutex_unlock (&job->lock);
    return !full;
}

//  --------------------------------------------------------------------------
//  The broker thread

//  Send job's request to actd
static void
s_thread_send (s_thread_t *self, act_http_job_t *job)
{
    const char **a = (const char **) job->args;
    act_client_send (self->client, job->request, job->command, a [0], a [1], a [2], a [3],
                     NULL);
    zhashx_insert (self->sent, job->request, job);
}

//  How long a send may be held for a caller that waits timeout_ms: a second
//  at most, and its answer (unreachable) well within that wait, so that a
//  request_timeout_ms under a second is not answered timeout first
static int
s_hold_ms (int timeout_ms)
{
    int hold = timeout_ms - timeout_ms / 4;
    return hold < S_HOLD_MS? hold: S_HOLD_MS;
}

//  End held job with the ERROR unreachable that says where actd was not
//  reached and why (the client's last connection events), unsent
static void
s_thread_unreachable (s_thread_t *self, act_http_job_t *job, const char *why)
{
    act_reply_t *reply = calloc (1, sizeof *reply);
    reply->verb = strdup ("ERROR");
    reply->request = strdup ("");
    reply->args = zmsg_new ();
    zmsg_addstr (reply->args, ACT_CLIENT_UNREACHABLE);
    zmsg_addstrf (reply->args, "actd is not reachable at %s (%s); the request was not sent: "
                  "retry shortly", self->owner->endpoint,
                  why? why: "no connection yet: a firewall, or a host that is down?");
    s_job_file (job, reply, true, NULL);
    s_job_unref (job);
}

//  The requests held while actd was not connected: sent, oldest first,
//  once it is; refused unreachable once their hold is over. Returns the
//  milliseconds to poll actd for before looking again.
static int
s_thread_held (s_thread_t *self)
{
    if (!zlistx_size (self->held))
        return 1000;
    const char *why = NULL;
    bool connected = act_client_connected (self->client, &why);
    int64_t now = zclock_mono ();
    act_http_job_t *job;
    //  Holds differ (a caller's wait may be shorter): every one is looked at
    job = zlistx_first (self->held);
    while (job) {
        void *handle = zlistx_cursor (self->held);
        act_http_job_t *next = zlistx_next (self->held);
        if (connected || job->held_until <= now) {
            zlistx_detach (self->held, handle);
            if (connected)
                s_thread_send (self, job);
            else
                s_thread_unreachable (self, job, why);
        }
        job = next;
    }
    return zlistx_size (self->held)? S_HOLD_POLL_MS: 1000;
}

//  Start what job asks for
static void
s_thread_start (s_thread_t *self, act_http_job_t *job)
{
    act_err_t err = { 0 };
    if (self->stopping) {
        act_err_set (&err, ACT_HTTP_E_UNAVAILABLE, ACT_HTTP_STOPPING);
        s_job_file (job, NULL, true, &err);
        s_job_unref (job);
    }
    else
    if (job->op == S_SEND && (zlistx_size (self->held)
                              || !act_client_connected (self->client, NULL))) {
        job->held_until = zclock_mono () + job->hold_ms;
        zlistx_add_end (self->held, job);
    }
    else
    if (job->op == S_SEND)
        s_thread_send (self, job);
    else {
        job->watch = act_client_watch (self->client, job->context, job->from, job->calls, &err);
        if (job->watch)
            zlistx_add_end (self->watches, job);
        else {
            s_job_file (job, NULL, true, &err);
            s_job_unref (job);
        }
    }
}

//  The HTTP thread let job go: forget it (its own reference came with it)
static void
s_thread_close (s_thread_t *self, act_http_job_t *job)
{
    void *held = job->op == S_SEND? zlistx_find (self->held, job): NULL;
    if (held) {
        zlistx_delete (self->held, held);
        s_job_unref (job);
    }
    if (job->op == S_SEND && zhashx_lookup (self->sent, job->request) == job) {
        zhashx_delete (self->sent, job->request);
        s_job_unref (job);
        if (streq (job->command, "WATCH")) {
            char request [24];
            act_client_send (self->client, request, "UNWATCH", job->request, NULL);
        }
    }
    if (job->op == S_WATCH) {
        void *handle = zlistx_find (self->watches, job);
        if (handle) {
            zlistx_delete (self->watches, handle);
            act_watch_destroy (&job->watch);
            s_job_unref (job);
        }
    }
    s_job_unref (job);
}

//  End every job now open
static void
s_thread_stop (s_thread_t *self)
{
    self->stopping = true;
    act_err_t err = { 0 };
    act_err_set (&err, ACT_HTTP_E_UNAVAILABLE, ACT_HTTP_STOPPING);
    for (act_http_job_t *job = zhashx_first (self->sent); job; job = zhashx_next (self->sent))
        s_job_file (job, NULL, true, &err);
    for (act_http_job_t *job = zlistx_first (self->watches); job;
         job = zlistx_next (self->watches))
        s_job_file (job, NULL, true, &err);
    //  Held ones are never sent now
    act_http_job_t *job;
    while ((job = zlistx_first (self->held))) {
        zlistx_detach_cur (self->held);
        s_job_file (job, NULL, true, &err);
        s_job_unref (job);
    }
}

//  Everything the pipe holds now
static void
s_thread_pipe (s_thread_t *self)
{
    while (zsock_events (self->pipe) & ZMQ_POLLIN) {
        char *op = NULL;
        void *job = NULL;
        if (zsock_recv (self->pipe, "sp", &op, &job) == -1) {
            self->terminated = true;
            return;
        }
        if (streq (op, "$TERM"))
            self->terminated = true;
        else
        if (streq (op, "START"))
            s_thread_start (self, job);
        else
        if (streq (op, "CLOSE"))
            s_thread_close (self, job);
        else
        if (streq (op, "STOP"))
            s_thread_stop (self);
        zstr_free (&op);
    }
}

//  A reply from actd: filed on its job (replies of forgotten jobs dropped)
static void
s_thread_reply (s_thread_t *self, act_reply_t *reply)
{
    act_http_job_t *job = zhashx_lookup (self->sent, reply->request);
    if (!job) {
        act_reply_destroy (&reply);
        return;
    }
    bool final = !job->final_verb || streq (reply->verb, "ERROR")
              || streq (reply->verb, job->final_verb);
    s_job_file (job, reply, final, NULL);
    if (final) {
        zhashx_delete (self->sent, job->request);
        s_job_unref (job);
    }
}

//  Move the events queued on every watch to their jobs
static void
s_thread_events (s_thread_t *self)
{
    act_http_job_t *job = zlistx_first (self->watches);
    while (job) {
        act_http_job_t *next = zlistx_next (self->watches);
        act_err_t err = { 0 };
        json_t *event;
        while ((event = act_watch_next (job->watch, 0, &err))) {
            bool queued = s_job_event (job, strdup (act_watch_text (job->watch)));
            json_decref (event);
            if (!queued) {
                act_err_set (&err, ACT_E_BUSY, "the client reads this stream slower than "
                             "its events come: more than %zu bytes or %zu events waited for "
                             "it; reconnect with Last-Event-ID to resume", job->max_bytes,
                             job->max_events);
                break;
            }
        }
        if (err.code) {
            //  Ended: deleted, refused, or its reader too slow
            s_job_file (job, NULL, true, &err);
            zlistx_delete (self->watches, zlistx_find (self->watches, job));
            act_watch_destroy (&job->watch);
            s_job_unref (job);
        }
        job = next;
    }
}

//  The broker thread: connects, signals its start (1 when the endpoint or
//  keys are bad), then serves actd and the pipe until $TERM
static void
s_thread_run (zsock_t *pipe, void *args)
{
    act_http_broker_t *owner = (act_http_broker_t *) args;
    s_thread_t self = { .owner = owner, .pipe = pipe };
    self.client = act_client_new (owner->endpoint);
    int curve = self.client && owner->server_key
              ? act_client_set_curve (self.client, owner->server_key, owner->certificate): 0;
    if (curve)
        act_client_destroy (&self.client);
    if (!self.client) {
        if (curve == -2)
            act_err_set (&owner->error, ACT_E_BAD_ARGUMENT, "server_key '%s' is not a CURVE "
                         "public key (40 characters of Z85, as actctl keygen prints it)",
                         owner->server_key);
        else
            act_err_set (&owner->error, ACT_E_BAD_ARGUMENT,
                         "cannot connect to %s (a bad endpoint, server_key or certificate)",
                         owner->endpoint);
        zsock_signal (pipe, 1);
        return;
    }
    self.sent = zhashx_new ();
    self.watches = zlistx_new ();
    self.held = zlistx_new ();
    act_client_set_wakeup (self.client, pipe);
    zsock_signal (pipe, 0);
    int poll = 1000;
    while (!self.terminated) {
        act_reply_t *reply = act_client_poll (self.client, poll);
        if (reply)
            s_thread_reply (&self, reply);
        s_thread_events (&self);
        s_thread_pipe (&self);
        //  While requests are held, the connection is looked at often: the
        //  client reads its connection events without returning
        poll = s_thread_held (&self);
    }
    //  Jobs left (there should be none): ended, the broker's reference dropped
    s_thread_stop (&self);
    for (act_http_job_t *job = zhashx_first (self.sent); job; job = zhashx_next (self.sent))
        s_job_unref (job);
    for (act_http_job_t *job = zlistx_first (self.watches); job;
         job = zlistx_next (self.watches)) {
        act_watch_destroy (&job->watch);
        s_job_unref (job);
    }
    zhashx_destroy (&self.sent);
    zlistx_destroy (&self.watches);
    zlistx_destroy (&self.held);
    act_client_destroy (&self.client);
}

//  --------------------------------------------------------------------------
//  The HTTP threads' side

//  The secret half of certificate can be read: zcert_load reads
//  FILE_secret, else FILE, and of a FILE_secret it cannot read takes
//  FILE's public half alone, with a secret key of zeros that no handshake
//  passes. Returns 0, or -1 with err naming the file that cannot be read
//  (actd-http's user may not be the one that ran actctl keygen), which
//  would otherwise be a failure to connect, or no answer ever
static int
s_certificate_readable (const char *certificate, act_err_t *err)
{
    char *secret = zsys_sprintf ("%s_secret", certificate);
    struct stat info;
    const char *file = stat (secret, &info) == 0 || errno != ENOENT? secret: certificate;
    //  Opened without blocking, as libactd reads it then: a FIFO there
    //  hung actd-http at start in a blocking fopen
    int fd = open (file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    int rc = fd < 0? act_err_set (err, ACT_E_BAD_ARGUMENT, "cannot read the certificate "
                                  "%s: %s", file, strerror (errno)): 0;
    if (fd >= 0 && (fstat (fd, &info) || !S_ISREG (info.st_mode)))
        rc = act_err_set (err, ACT_E_BAD_ARGUMENT, "cannot read the certificate %s: not a "
                          "regular file", file);
    if (fd >= 0)
        close (fd);
    zstr_free (&secret);
    return rc;
}

act_http_broker_t *
act_http_broker_new (const char *endpoint, const char *server_key, const char *certificate,
                     int request_timeout_ms, act_err_t *err)
{
    //  Without a certificate CZMQ's zcert_load would assert: actd would
    //  refuse an ephemeral key anyway, as it is in none of its key folders
    act_err_t unread = { 0 };
    if (server_key && !certificate)
        act_err_set (&unread, ACT_E_BAD_ARGUMENT, "server_key is set but no certificate: "
                     "CURVE needs this client's (certificate, or the token's)");
    if (server_key && (!certificate || s_certificate_readable (certificate, &unread))) {
        if (err)
            *err = unread;
        return NULL;
    }
    act_http_broker_t *self = calloc (1, sizeof *self);
    pthread_mutex_init (&self->lock, NULL);
    self->endpoint = strdup (endpoint);
    self->server_key = server_key? strdup (server_key): NULL;
    self->certificate = certificate? strdup (certificate): NULL;
    self->hold_ms = s_hold_ms (request_timeout_ms);
    self->actor = zactor_new (s_thread_run, self);
    if (!self->actor || self->error.code) {
        if (err)
            *err = self->error;
        act_http_broker_destroy (&self);
    }
    return self;
}

void
act_http_broker_destroy (act_http_broker_t **self_p)
{
    if (self_p && *self_p) {
        act_http_broker_t *self = *self_p;
        pthread_mutex_lock (&self->lock);
        zactor_destroy (&self->actor);
        pthread_mutex_unlock (&self->lock);
        pthread_mutex_destroy (&self->lock);
        free (self->endpoint);
        free (self->server_key);
        free (self->certificate);
        free (self);
        *self_p = NULL;
    }
}

void
act_http_broker_stop (act_http_broker_t *self)
{
    pthread_mutex_lock (&self->lock);
    self->stopping = true;
    zsock_send (self->actor, "sp", "STOP", NULL);
    pthread_mutex_unlock (&self->lock);
}

bool
act_http_broker_stopping (act_http_broker_t *self)
{
    pthread_mutex_lock (&self->lock);
    bool stopping = self->stopping;
    pthread_mutex_unlock (&self->lock);
    return stopping;
}

//  A new send job for command and args, handed to the broker thread; held
//  hold_ms at most while actd is not connected
static act_http_job_t *
s_send (act_http_broker_t *self, const char *final_verb, int hold_ms, const char *command,
        va_list args)
{
    act_http_job_t *job = s_job_new (self, S_SEND);
    job->hold_ms = hold_ms;
    job->command = strdup (command);
    job->final_verb = final_verb? strdup (final_verb): NULL;
    const char *arg;
    for (size_t i = 0; i < S_MAX_ARGS && (arg = va_arg (args, const char *)); i++)
        job->args [i] = strdup (arg);
    s_post (self, job, "START");
    return job;
}

act_http_job_t *
act_http_broker_send (act_http_broker_t *self, const char *final_verb, const char *command, ...)
{
    va_list args;
    va_start (args, command);
    act_http_job_t *job = s_send (self, final_verb, self->hold_ms, command, args);
    va_end (args);
    return job;
}

act_http_job_t *
act_http_broker_watch (act_http_broker_t *self, const char *context, uint64_t from_seq,
                       bool calls, size_t max_bytes, size_t max_events)
{
    act_http_job_t *job = s_job_new (self, S_WATCH);
    job->context = strdup (context);
    job->from = from_seq? from_seq: 1;
    job->calls = calls;
    job->max_bytes = max_bytes;
    job->max_events = max_events;
    s_post (self, job, "START");
    return job;
}

//  Wait until job has an item or has ended, or until deadline; returns
//  with the job's lock held
static void
s_job_wait (act_http_job_t *self, int64_t deadline)
{
    pthread_mutex_lock (&self->lock);
    while (zlistx_size (self->items) == 0 && !self->ended) {
        int64_t left = deadline - zclock_mono ();
        if (left <= 0)
            break;
        //  The condition's clock is the monotonic one (s_job_new), as is
        //  zclock_mono's
        struct timespec until;
        clock_gettime (CLOCK_MONOTONIC, &until);
        until.tv_sec += left / 1000;
        until.tv_nsec += (left % 1000) * 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait (&self->cond, &self->lock, &until);
    }
}

act_reply_t *
act_http_job_reply (act_http_job_t *self, int64_t deadline)
{
    s_job_wait (self, deadline);
    act_reply_t *reply = zlistx_first (self->items);
    if (reply)
        zlistx_detach_cur (self->items);
    pthread_mutex_unlock (&self->lock);
    return reply;
}

char *
act_http_job_event (act_http_job_t *self, int64_t deadline, bool *ended, act_err_t *err)
{
    s_job_wait (self, deadline);
    char *event = zlistx_first (self->items);
    if (event) {
        zlistx_detach_cur (self->items);
        self->queued -= strlen (event);
    }
    *ended = !event && self->ended;
    if (*ended && err)
        *err = self->error;
    pthread_mutex_unlock (&self->lock);
    return event;
}

void
act_http_job_destroy (act_http_job_t **self_p)
{
    if (self_p && *self_p) {
        act_http_job_t *self = *self_p;
        //  The HTTP thread's reference goes with it to the broker thread
        s_post (self->broker, self, "CLOSE");
        *self_p = NULL;
    }
}

act_reply_t *
act_http_broker_ask (act_http_broker_t *self, int timeout_ms, const char *command, ...)
{
    va_list args;
    va_start (args, command);
    act_http_job_t *job = s_send (self, NULL, s_hold_ms (timeout_ms), command, args);
    va_end (args);
    act_reply_t *reply = act_http_job_reply (job, zclock_mono () + timeout_ms);
    act_http_job_destroy (&job);
    return reply;
}
