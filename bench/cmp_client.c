/*  =========================================================================
    cmp_client - the load generator of bench/compare.sh, for actd (raw
    ACT/1 client frames, PROTOCOL.md section 1) and for null_relay, with
    the same payload (a JSON call of about --size bytes) and the same
    pipelining through both.

    Modes:
      durable   pipelined calls, at most --window outstanding (sent, reply
                not yet received). actd: each call has an _outputPath (a
                distinct path †state.<tag>.k<i>) and is done at its DONE;
                null: done at its reply.
      forget    actd only: pipelined fire-and-forget calls (no
                _outputPath, answered ACCEPTED only); a call is done when
                a worker has answered its task (the workers' counter file,
                --counter); at most --window calls sent and not done. The
                run ends when STATS calls.ok has counted them all.
      latency   one call at a time (durable for actd): p50 and p99 of the
                round trip.

    First it waits for --workers workers (actd: STATS, null: the relay's
    "?"), then runs --warmup calls of the same mode (not measured), then
    the measured run. It prints one line of key=value figures:

      RESULT mode=.. calls=N seconds=S rate=CALLS_PER_S p50_ms=.. p99_ms=..
             errors=E cpu_us=BROKER_CPU_US_PER_CALL

    (p50/p99: send -> done; for forget, send -> ACCEPTED.) With --pid, the
    broker's CPU time (user + system) over the measured run, per call.

    cmp_client --proto actd|null --endpoint EP --mode durable|forget|latency
               [--calls N] [--window W] [--size BYTES] [--contexts K]
               [--workers K] [--warmup N] [--tag T] [--counter FILE] [--pid PID]
    ========================================================================= */

#include <errno.h>
#include <jansson.h>
#include <zmq.h>
#include "cmp_common.h"

typedef struct {
    bool actd;
    const char *mode;
    size_t calls, window, size, contexts, workers, warmup;
    const char *tag;
    const char *counter_path;
    int pid;
} s_options_t;

typedef struct {
    double seconds, rate, p50, p99, cpu_us;
    size_t errors, failed;
} s_result_t;

static void *s_socket;
static uint64_t s_request = 0;         //  The last request id used
static _Atomic uint64_t *s_counter = NULL;

//  Receive one message (flags: 0 or ZMQ_DONTWAIT) into frames; returns
//  the frame count (at most max kept), or -1 when none is there.
static int
s_recv (zmq_msg_t *frames, int max, int flags)
{
    int count = 0, more = 1;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init (&part);
        if (zmq_msg_recv (&part, s_socket, count? 0: flags) < 0) {
            zmq_msg_close (&part);
            return count? count: -1;
        }
        more = zmq_msg_more (&part);
        if (count < max) {
            zmq_msg_init (&frames [count]);
            zmq_msg_move (&frames [count++], &part);
        }
        zmq_msg_close (&part);
    }
    return count;
}

static void
s_close (zmq_msg_t *frames, int count)
{
    for (int i = 0; i < count; i++)
        zmq_msg_close (&frames [i]);
}

static bool
s_is (zmq_msg_t *frame, const char *text)
{
    size_t size = strlen (text);
    return zmq_msg_size (frame) == size && !memcmp (zmq_msg_data (frame), text, size);
}

static uint64_t
s_number (zmq_msg_t *frame)
{
    char text [32];
    size_t size = zmq_msg_size (frame);
    if (size == 0 || size > 30)
        return 0;
    memcpy (text, zmq_msg_data (frame), size);
    text [size] = 0;
    return strtoull (text, NULL, 10);
}

//  Send a request: actd [ACTC01][command][id][args...], null [id][payload]
static uint64_t
s_send (const char *command, const char *arg1, const char *payload, size_t size)
{
    char id [32];
    int length = snprintf (id, sizeof id, "%llu", (unsigned long long) ++s_request);
    if (command) {
        zmq_send (s_socket, "ACTC01", 6, ZMQ_SNDMORE);
        zmq_send (s_socket, command, strlen (command), ZMQ_SNDMORE);
        zmq_send (s_socket, id, (size_t) length, arg1 || payload? ZMQ_SNDMORE: 0);
        if (arg1)
            zmq_send (s_socket, arg1, strlen (arg1), payload? ZMQ_SNDMORE: 0);
    }
    else
        zmq_send (s_socket, id, (size_t) length, ZMQ_SNDMORE);
    if (payload)
        zmq_send (s_socket, payload, size, 0);
    return s_request;
}

//  A synchronous actd request with no args (STATS, PING): the JSON of
//  its VALUE (or NULL for PONG / on timeout). Other replies that arrive
//  meanwhile are dropped, so use it only between runs.
static json_t *
s_actd_request (const char *command, int timeout_ms, bool *answered)
{
    uint64_t id = s_send (command, NULL, NULL, 0);
    double deadline = cmp_now () + timeout_ms / 1000.0;
    *answered = false;
    while (cmp_now () < deadline) {
        zmq_pollitem_t item = { s_socket, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll (&item, 1, 50) <= 0)
            continue;
        zmq_msg_t frames [8];
        int count = s_recv (frames, 8, ZMQ_DONTWAIT);
        if (count < 0)
            continue;
        json_t *value = NULL;
        bool mine = count >= 3 && s_number (&frames [2]) == id;
        if (mine && count >= 4 && s_is (&frames [1], "VALUE"))
            value = json_loadb (zmq_msg_data (&frames [3]), zmq_msg_size (&frames [3]), 0, NULL);
        s_close (frames, count);
        if (mine) {
            *answered = true;
            return value;
        }
    }
    return NULL;
}

static long long
s_json_int (json_t *object, const char *a, const char *b, const char *c)
{
    json_t *value = json_object_get (object, a);
    if (b)
        value = json_object_get (value, b);
    if (c)
        value = json_object_get (value, c);
    return json_integer_value (value);
}

//  Wait until the broker answers and workers are ready
static void
s_wait_ready (const s_options_t *options)
{
    double deadline = cmp_now () + 60;
    while (cmp_now () < deadline) {
        if (options->actd) {
            bool answered;
            json_t *stats = s_actd_request ("STATS", 200, &answered);
            long long workers = s_json_int (stats, "activities", "echo", "workers");
            json_decref (stats);
            if (workers >= (long long) options->workers)
                return;
        }
        else {
            zmq_send (s_socket, "?", 1, 0);
            zmq_pollitem_t item = { s_socket, 0, ZMQ_POLLIN, 0 };
            if (zmq_poll (&item, 1, 200) > 0) {
                zmq_msg_t frames [4];
                int count = s_recv (frames, 4, ZMQ_DONTWAIT);
                size_t workers = count == 2? (size_t) s_number (&frames [1]): 0;
                if (count > 0)
                    s_close (frames, count);
                if (workers >= options->workers)
                    return;
            }
        }
        usleep (20000);
    }
    fprintf (stderr, "cmp_client: %zu workers not ready after 60 s\n", options->workers);
    exit (1);
}

//  STATS calls.ok (or -1 when STATS was not answered)
static long long
s_calls_ok (void)
{
    bool answered;
    json_t *stats = s_actd_request ("STATS", 30000, &answered);
    long long ok = answered? s_json_int (stats, "calls", "ok", NULL): -1;
    json_decref (stats);
    return ok;
}

//  The state of one run of calls (s_run), shared by its helpers
typedef struct {
    const s_options_t *options; //  The options it runs with
    size_t calls;               //  Calls in the run
    const char *tag;            //  Names its contexts and paths
    bool forget;                //  Fire-and-forget calls (mode forget)
    size_t window;              //  Most calls outstanding (1 for latency)
    double *sent_at;            //  Per call: when it was sent
    double *took;               //  The latencies measured (ms)
    bool *finished;             //  Per call: its reply is taken
    char **contexts;            //  The contexts the calls are spread over
    char *payload;              //  Room for a call's payload
    uint64_t first;             //  The request id of call 0
    size_t sent;                //  Calls sent
    size_t done;                //  Calls done
    size_t replied;             //  Calls with their ACCEPTED or ERROR (forget)
    size_t measured;            //  Values in took
    double last_progress;       //  When a call was last seen done or replied to
    s_result_t result;          //  Its errors and failures so far
} s_state_t;

//  A run's state, its per-call tables zeroed and its contexts named
static void
s_state_init (s_state_t *self, const s_options_t *options, size_t calls, const char *tag)
{
    memset (self, 0, sizeof *self);
    self->options = options;
    self->calls = calls;
    self->tag = tag;
    self->forget = !strcmp (options->mode, "forget");
    bool latency = !strcmp (options->mode, "latency");
    self->window = latency? 1: options->window;
    self->sent_at = calloc (calls, sizeof (double));
    self->took = calloc (calls, sizeof (double));
    self->finished = calloc (calls, sizeof (bool));
    self->contexts = calloc (options->contexts, sizeof (char *));
    for (size_t c = 0; c < options->contexts; c++) {
        self->contexts [c] = malloc (64);
        snprintf (self->contexts [c], 64, "cmp-%s-%zu", tag, c);
    }
    self->payload = malloc (options->size + 512);
}

//  Free what s_state_init allocated
static void
s_state_free (s_state_t *self)
{
    for (size_t c = 0; c < self->options->contexts; c++)
        free (self->contexts [c]);
    free (self->contexts);
    free (self->payload);
    free (self->sent_at);
    free (self->took);
    free (self->finished);
}

//  The call index request id number is for, or SIZE_MAX when none of
//  this run
static size_t
s_index (s_state_t *self, uint64_t number)
{
    return number >= self->first && number - self->first < self->calls
         ? (size_t) (number - self->first): SIZE_MAX;
}

//  Send calls until the window is full or every call is sent
static void
s_fill_window (s_state_t *self)
{
    const s_options_t *options = self->options;
    while (self->sent < self->calls && self->sent - self->done < self->window) {
        size_t size = cmp_payload (self->payload, options->size, self->sent, !self->forget,
                                   self->tag);
        self->sent_at [self->sent] = cmp_now ();
        if (options->actd)
            s_send ("CALL", self->contexts [self->sent % options->contexts], self->payload, size);
        else
            s_send (NULL, NULL, self->payload, size);
        self->sent++;
    }
}

//  Take an actd reply (count frames) received at now: ERROR, ACCEPTED
//  (forget) or DONE (durable) of a call not yet finished. The first
//  refusal and the first call not ended ok are shown.
static void
s_on_actd_reply (s_state_t *self, zmq_msg_t *frames, int count, double now)
{
    size_t index = s_index (self, s_number (&frames [2]));
    if (index == SIZE_MAX || self->finished [index])
        return;
    if (s_is (&frames [1], "ERROR")) {
        if (self->result.errors++ == 0 && count >= 5)
            fprintf (stderr, "cmp_client: call %zu refused: ERROR %.*s %.*s\n",
                     index, (int) zmq_msg_size (&frames [3]),
                     (char *) zmq_msg_data (&frames [3]),
                     (int) zmq_msg_size (&frames [4]),
                     (char *) zmq_msg_data (&frames [4]));
        self->finished [index] = true;
        if (!self->forget)
            self->done++;
        self->replied++;
    }
    else
    if (self->forget && s_is (&frames [1], "ACCEPTED")) {
        self->finished [index] = true;
        self->took [self->measured++] = (now - self->sent_at [index]) * 1000;
        self->replied++;
    }
    else
    if (!self->forget && s_is (&frames [1], "DONE")) {
        self->finished [index] = true;
        self->took [self->measured++] = (now - self->sent_at [index]) * 1000;
        self->done++;
        if (count < 5 || !memmem (zmq_msg_data (&frames [4]), zmq_msg_size (&frames [4]),
                                  "\"status\":\"ok\"", 13)) {
            if (self->result.failed++ == 0)
                fprintf (stderr, "cmp_client: call %zu did not end ok: %.*s\n",
                         index, count >= 5? (int) zmq_msg_size (&frames [4]): 0,
                         count >= 5? (char *) zmq_msg_data (&frames [4]): "");
        }
    }
}

//  Take the replies waiting (4096 at most)
static void
s_take_replies (s_state_t *self)
{
    for (int batch = 0; batch < 4096; batch++) {
        zmq_msg_t frames [6];
        int count = s_recv (frames, 6, ZMQ_DONTWAIT);
        if (count < 0)
            break;
        double now = cmp_now ();
        if (self->options->actd && count >= 3)
            s_on_actd_reply (self, frames, count, now);
        else
        if (!self->options->actd && count == 2) {
            size_t index = s_index (self, s_number (&frames [0]));
            if (index != SIZE_MAX && !self->finished [index]) {
                self->finished [index] = true;
                self->took [self->measured++] = (now - self->sent_at [index]) * 1000;
                self->done++;
            }
        }
        s_close (frames, count);
        self->last_progress = now;
    }
}

//  Forget, once the workers have answered every call: take every
//  ACCEPTED still to come (exits after 60 s without one), then wait (60 s
//  at most) until STATS counts every call not refused ok since ok_start.
//  Returns the time it was counted (or the wait ended).
static double
s_forget_settle (s_state_t *self, long long ok_start)
{
    size_t calls = self->calls;
    while (self->replied < calls) {
        zmq_msg_t frames [6];
        zmq_pollitem_t item = { s_socket, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll (&item, 1, 60000) <= 0) {
            fprintf (stderr, "cmp_client: %zu of %zu ACCEPTED after 60 s\n", self->replied, calls);
            exit (1);
        }
        int count = s_recv (frames, 6, ZMQ_DONTWAIT);
        if (count >= 3) {
            size_t index = s_index (self, s_number (&frames [2]));
            if (index != SIZE_MAX && !self->finished [index]) {
                self->finished [index] = true;
                if (s_is (&frames [1], "ACCEPTED"))
                    self->took [self->measured++] = (cmp_now () - self->sent_at [index]) * 1000;
                else
                    self->result.errors++;
                self->replied++;
            }
        }
        if (count > 0)
            s_close (frames, count);
    }
    double deadline = cmp_now () + 60;
    long long ok = 0;
    while ((ok = s_calls_ok ()) - ok_start < (long long) (calls - self->result.errors)
    &&     cmp_now () < deadline)
        usleep (500);
    double end = cmp_now ();
    if (ok - ok_start < (long long) (calls - self->result.errors))
        fprintf (stderr, "cmp_client: STATS counts %lld calls ok of %zu\n",
                 ok - ok_start, calls - self->result.errors);
    return end;
}

//  One run of calls; tag names its contexts and paths
static s_result_t
s_run (const s_options_t *options, size_t calls, const char *tag)
{
    s_state_t run;
    s_state_init (&run, options, calls, tag);
    bool forget = run.forget;
    long long ok_start = forget? s_calls_ok (): 0;
    uint64_t counter_start = forget? cmp_counter_sum (s_counter): 0;
    run.first = s_request + 1;
    double cpu_start = cmp_cpu_ms (options->pid);
    double start = cmp_now ();
    run.last_progress = start;
    while (run.done < calls) {
        if (forget) {
            //  Done: answered by a worker (refused calls never get there)
            uint64_t answered = cmp_counter_sum (s_counter) - counter_start;
            size_t now_done = (size_t) answered + run.result.errors;
            if (now_done > run.done) {
                run.done = now_done < calls? now_done: calls;
                run.last_progress = cmp_now ();
            }
        }
        s_fill_window (&run);
        if (run.done >= calls)
            break;
        zmq_pollitem_t item = { s_socket, 0, ZMQ_POLLIN, 0 };
        int rc = zmq_poll (&item, 1, forget? 1: 1000);
        double now = cmp_now ();
        if (rc <= 0) {
            if (now - run.last_progress > 60) {
                fprintf (stderr, "cmp_client: no progress for 60 s (%zu sent, %zu done)\n",
                         run.sent, run.done);
                exit (1);
            }
            continue;
        }
        s_take_replies (&run);
    }
    double end = cmp_now ();
    if (forget)
        //  Every ACCEPTED in, and the broker has counted every call ok
        end = s_forget_settle (&run, ok_start);
    s_result_t result = run.result;
    result.cpu_us = options->pid? (cmp_cpu_ms (options->pid) - cpu_start) * 1000 / calls: 0;
    result.seconds = end - start;
    result.rate = calls / result.seconds;
    result.p50 = cmp_percentile (run.took, run.measured, 50);
    result.p99 = cmp_percentile (run.took, run.measured, 99);
    s_state_free (&run);
    return result;
}

int
main (int argc, char *argv [])
{
    s_options_t options = { false, NULL, 20000, 1000, 200, 8, 1, SIZE_MAX, "run", NULL, 0 };
    const char *proto = NULL, *endpoint = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *name = argv [i], *value = argv [i + 1];
        if (!strcmp (name, "--proto"))
            proto = value;
        else if (!strcmp (name, "--endpoint"))
            endpoint = value;
        else if (!strcmp (name, "--mode"))
            options.mode = value;
        else if (!strcmp (name, "--calls"))
            options.calls = strtoul (value, NULL, 10);
        else if (!strcmp (name, "--window"))
            options.window = strtoul (value, NULL, 10);
        else if (!strcmp (name, "--size"))
            options.size = strtoul (value, NULL, 10);
        else if (!strcmp (name, "--contexts"))
            options.contexts = strtoul (value, NULL, 10);
        else if (!strcmp (name, "--workers"))
            options.workers = strtoul (value, NULL, 10);
        else if (!strcmp (name, "--warmup"))
            options.warmup = strtoul (value, NULL, 10);
        else if (!strcmp (name, "--tag"))
            options.tag = value;
        else if (!strcmp (name, "--counter"))
            options.counter_path = value;
        else if (!strcmp (name, "--pid"))
            options.pid = atoi (value);
        else {
            fprintf (stderr, "cmp_client: unknown option %s\n", name);
            return 2;
        }
    }
    bool modes_ok = options.mode && (!strcmp (options.mode, "durable")
                 || !strcmp (options.mode, "latency") || !strcmp (options.mode, "forget"));
    if (!proto || !endpoint || (strcmp (proto, "actd") && strcmp (proto, "null")) || !modes_ok
    ||  options.calls < 1 || options.window < 1 || options.contexts < 1) {
        fprintf (stderr, "usage: cmp_client --proto actd|null --endpoint EP --mode "
                 "durable|forget|latency [--calls N] [--window W] [--size BYTES] "
                 "[--contexts K] [--workers K] [--warmup N] [--tag T] [--counter FILE] "
                 "[--pid PID]\n");
        return 2;
    }
    options.actd = !strcmp (proto, "actd");
    if (!strcmp (options.mode, "forget")) {
        if (!options.actd || !options.counter_path) {
            fprintf (stderr, "cmp_client: forget needs --proto actd and --counter\n");
            return 2;
        }
        s_counter = cmp_counter_map (options.counter_path);
    }
    if (options.warmup == SIZE_MAX)
        options.warmup = options.calls / 10 > 0? options.calls / 10: 1;

    void *context = zmq_ctx_new ();
    s_socket = zmq_socket (context, ZMQ_DEALER);
    int hwm = 0, linger = 0;
    zmq_setsockopt (s_socket, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt (s_socket, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt (s_socket, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect (s_socket, endpoint)) {
        fprintf (stderr, "cmp_client: cannot connect to %s\n", endpoint);
        return 1;
    }
    s_wait_ready (&options);
    char tag [64];
    if (options.warmup) {
        snprintf (tag, sizeof tag, "%s-w", options.tag);
        s_options_t warm = options;
        warm.pid = 0;
        s_run (&warm, options.warmup, tag);
    }
    s_result_t r = s_run (&options, options.calls, options.tag);
    printf ("RESULT mode=%s calls=%zu seconds=%.3f rate=%.1f p50_ms=%.3f p99_ms=%.3f "
            "errors=%zu cpu_us=%.1f\n", options.mode, options.calls, r.seconds, r.rate,
            r.p50, r.p99, r.errors + r.failed, r.cpu_us);
    zmq_close (s_socket);
    zmq_ctx_term (context);
    return 0;
}
