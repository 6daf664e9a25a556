/*  =========================================================================
    cmp_worker - the echo worker of bench/compare.sh: answers each task
    with its own params, as fast as a worker can (raw libzmq, frames
    moved, no JSON parsed), holding up to capacity tasks at once.

    --proto actd   an ACT/1 worker (PROTOCOL.md section 2) serving "echo":
                   READY, then RESULT [task-id][params] for each TASK;
                   HEARTBEAT when it has sent nothing for a second; a new
                   socket and READY again after DISCONNECT.
    --proto null   a worker of null_relay: ["R"][capacity], then
                   ["D"][client][request-id][payload] for each request.

    With --counter FILE --slot N it stores the number of tasks it has
    answered in slot N of the counter file (see cmp_common.h).

    cmp_worker --proto actd|null --endpoint EP [--capacity 64]
               [--counter FILE --slot N]
    Runs until SIGINT or SIGTERM.
    ========================================================================= */

#include <errno.h>
#include <signal.h>
#include <zmq.h>
#include "cmp_common.h"

static volatile sig_atomic_t s_interrupted = 0;

static void
s_on_signal (int signal)
{
    s_interrupted = 1;
}

static void *
s_connect (void *context, const char *endpoint, bool actd, size_t capacity)
{
    void *socket = zmq_socket (context, ZMQ_DEALER);
    int hwm = 0, linger = 0;
    zmq_setsockopt (socket, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt (socket, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt (socket, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect (socket, endpoint)) {
        fprintf (stderr, "cmp_worker: cannot connect to %s: %s\n", endpoint,
                 zmq_strerror (errno));
        exit (1);
    }
    char text [160];
    if (actd) {
        int size = snprintf (text, sizeof text, "{\"activities\":[\"echo\"],\"capacity\":%zu,"
                             "\"name\":\"cmp-echo\",\"lang\":\"c\"}", capacity);
        zmq_send (socket, "ACTW01", 6, ZMQ_SNDMORE);
        zmq_send (socket, "READY", 5, ZMQ_SNDMORE);
        zmq_send (socket, text, (size_t) size, 0);
    }
    else {
        int size = snprintf (text, sizeof text, "%zu", capacity);
        zmq_send (socket, "R", 1, ZMQ_SNDMORE);
        zmq_send (socket, text, (size_t) size, 0);
    }
    return socket;
}

static bool
s_is (zmq_msg_t *frame, const char *text)
{
    size_t size = strlen (text);
    return zmq_msg_size (frame) == size && !memcmp (zmq_msg_data (frame), text, size);
}

//  What the command line asks for
typedef struct {
    const char *proto;          //  "actd" or "null"
    const char *endpoint;       //  The broker's worker endpoint
    const char *counter_path;   //  The counter file, or NULL
    size_t capacity;            //  Tasks at once
    size_t slot;                //  This worker's slot in the counter file
} s_options_t;

//  Parse the command line into options. Returns -1 to go on, else the
//  exit code (2, after a message, on bad arguments).
static int
s_parse (int argc, char *argv [], s_options_t *options)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp (argv [i], "--proto"))
            options->proto = argv [i + 1];
        else
        if (!strcmp (argv [i], "--endpoint"))
            options->endpoint = argv [i + 1];
        else
        if (!strcmp (argv [i], "--capacity"))
            options->capacity = strtoul (argv [i + 1], NULL, 10);
        else
        if (!strcmp (argv [i], "--counter"))
            options->counter_path = argv [i + 1];
        else
        if (!strcmp (argv [i], "--slot"))
            options->slot = strtoul (argv [i + 1], NULL, 10);
        else {
            fprintf (stderr, "cmp_worker: unknown option %s\n", argv [i]);
            return 2;
        }
    }
    if (!options->proto || !options->endpoint
    ||  (strcmp (options->proto, "actd") && strcmp (options->proto, "null"))
    ||  options->capacity < 1 || options->slot >= CMP_SLOTS) {
        fprintf (stderr, "usage: cmp_worker --proto actd|null --endpoint EP [--capacity N]"
                 " [--counter FILE --slot N]\n");
        return 2;
    }
    return -1;
}

//  Receive the next message waiting on socket into frames (at most 8
//  kept); returns the frame count, 0 when none is waiting
static int
s_recv (void *socket, zmq_msg_t *frames)
{
    int count = 0, more = 1;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init (&part);
        if (zmq_msg_recv (&part, socket, count? 0: ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&part);
            break;
        }
        more = zmq_msg_more (&part);
        if (count < 8) {
            zmq_msg_init (&frames [count]);
            zmq_msg_move (&frames [count++], &part);
        }
        zmq_msg_close (&part);
    }
    return count;
}

//  Answer the tasks waiting on socket (1024 messages at most), counting
//  them in answered; last_sent: when the last message went to an actd.
//  Returns true when actd said DISCONNECT.
static bool
s_serve (void *socket, bool actd, uint64_t *answered, double *last_sent)
{
    bool reconnect = false;
    for (int batch = 0; batch < 1024; batch++) {
        zmq_msg_t frames [8];
        int count = s_recv (socket, frames);
        if (count == 0)
            break;
        if (actd) {
            //  [ACTW01][TASK][task-id][activity][params][meta]
            if (count == 6 && s_is (&frames [1], "TASK")) {
                zmq_msg_send (&frames [0], socket, ZMQ_SNDMORE);
                zmq_send (socket, "RESULT", 6, ZMQ_SNDMORE);
                zmq_msg_send (&frames [2], socket, ZMQ_SNDMORE);
                zmq_msg_send (&frames [4], socket, 0);
                (*answered)++;
                *last_sent = cmp_now ();
            }
            else
            if (count >= 2 && s_is (&frames [1], "DISCONNECT"))
                reconnect = true;
        }
        else
        if (count == 3) {
            //  [client][request-id][payload]
            zmq_send (socket, "D", 1, ZMQ_SNDMORE);
            zmq_msg_send (&frames [0], socket, ZMQ_SNDMORE);
            zmq_msg_send (&frames [1], socket, ZMQ_SNDMORE);
            zmq_msg_send (&frames [2], socket, 0);
            (*answered)++;
        }
        for (int f = 0; f < count; f++)
            zmq_msg_close (&frames [f]);
    }
    return reconnect;
}

int
main (int argc, char *argv [])
{
    s_options_t options = { NULL, NULL, NULL, 64, 0 };
    int code = s_parse (argc, argv, &options);
    if (code >= 0)
        return code;
    bool actd = !strcmp (options.proto, "actd");
    _Atomic uint64_t *counter = options.counter_path? cmp_counter_map (options.counter_path)
                                                    : NULL;
    uint64_t answered = 0;
    struct sigaction action = { .sa_handler = s_on_signal };
    sigaction (SIGINT, &action, NULL);
    sigaction (SIGTERM, &action, NULL);

    void *context = zmq_ctx_new ();
    void *socket = s_connect (context, options.endpoint, actd, options.capacity);
    double last_sent = cmp_now ();
    while (!s_interrupted) {
        zmq_pollitem_t item = { socket, 0, ZMQ_POLLIN, 0 };
        int rc = zmq_poll (&item, 1, 250);
        if (rc < 0 && errno != EINTR)
            break;
        bool reconnect = rc > 0 && s_serve (socket, actd, &answered, &last_sent);
        if (counter)
            atomic_store_explicit (&counter [options.slot], answered, memory_order_relaxed);
        if (reconnect) {
            fprintf (stderr, "cmp_worker: DISCONNECT from the broker; connecting anew\n");
            zmq_close (socket);
            socket = s_connect (context, options.endpoint, actd, options.capacity);
            last_sent = cmp_now ();
        }
        if (actd && cmp_now () - last_sent > 1.0) {
            zmq_send (socket, "ACTW01", 6, ZMQ_SNDMORE);
            zmq_send (socket, "HEARTBEAT", 9, 0);
            last_sent = cmp_now ();
        }
    }
    zmq_close (socket);
    zmq_ctx_term (context);
    return 0;
}
