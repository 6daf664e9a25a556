/*  =========================================================================
    null_relay - the null broker: a minimal ROUTER-ROUTER relay, the
    practical upper bound a broker on this machine can reach.

    It does what any work broker must do and nothing more: it takes
    requests from clients, queues them first in, first out, hands each to
    a worker that has a free slot (workers announce their capacity), and
    relays the reply to the client that asked. No parsing, no storage, no
    copies (frames are moved from socket to queue to socket).

    Frames (the ROUTER identity frame not shown):
      client -> relay    [request-id][payload]
      relay  -> client   [request-id][payload]
      client -> relay    ["?"]                    how many workers are ready
      relay  -> client   ["?"][N]
      worker -> relay    ["R"][capacity]          ready
      relay  -> worker   [client-identity][request-id][payload]
      worker -> relay    ["D"][client-identity][request-id][payload]

    null_relay --frontend EP --backend EP
    Runs until SIGINT or SIGTERM.
    ========================================================================= */

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define MAX_WORKERS 256

//  One queued request: client identity, request id, payload
typedef struct {
    zmq_msg_t frame [3];
} s_request_t;

typedef struct {
    zmq_msg_t identity;
    size_t credit;              //  Free slots
} s_worker_t;

static volatile sig_atomic_t s_interrupted = 0;

static void
s_on_signal (int signal)
{
    s_interrupted = 1;
}

//  A ring of queued requests that grows as needed
typedef struct {
    s_request_t *items;
    size_t size, head, count;
} s_queue_t;

static s_request_t *
s_queue_push (s_queue_t *queue)
{
    if (queue->count == queue->size) {
        size_t size = queue->size? queue->size * 2: 1024;
        s_request_t *items = malloc (size * sizeof *items);
        for (size_t i = 0; i < queue->count; i++)
            memcpy (&items [i], &queue->items [(queue->head + i) % queue->size], sizeof *items);
        free (queue->items);
        queue->items = items;
        queue->size = size;
        queue->head = 0;
    }
    return &queue->items [(queue->head + queue->count++) % queue->size];
}

static s_request_t *
s_queue_pop (s_queue_t *queue)
{
    if (!queue->count)
        return NULL;
    s_request_t *item = &queue->items [queue->head];
    queue->head = (queue->head + 1) % queue->size;
    queue->count--;
    return item;
}

//  Receive the rest of a multipart message into frames (at most max);
//  returns the number of frames, extra frames are dropped.
static int
s_recv_parts (void *socket, zmq_msg_t *frames, int max, int flags)
{
    int count = 0;
    while (true) {
        zmq_msg_t part;
        zmq_msg_init (&part);
        if (zmq_msg_recv (&part, socket, flags) < 0) {
            zmq_msg_close (&part);
            return count? count: -1;
        }
        flags = 0;
        int more = zmq_msg_more (&part);
        if (count < max) {
            zmq_msg_init (&frames [count]);
            zmq_msg_move (&frames [count], &part);
            count++;
        }
        zmq_msg_close (&part);
        if (!more)
            return count;
    }
}

static void
s_close (zmq_msg_t *frames, int count)
{
    for (int i = 0; i < count; i++)
        zmq_msg_close (&frames [i]);
}

//  Send frames (consumed)
static void
s_send_parts (void *socket, zmq_msg_t *frames, int count)
{
    for (int i = 0; i < count; i++)
        if (zmq_msg_send (&frames [i], socket, i < count - 1? ZMQ_SNDMORE: 0) < 0)
            zmq_msg_close (&frames [i]);
}

//  Send request to worker: [worker][client][request-id][payload]
static void
s_dispatch (void *backend, s_worker_t *worker, s_request_t *request)
{
    zmq_msg_t identity;
    zmq_msg_init (&identity);
    zmq_msg_copy (&identity, &worker->identity);
    zmq_msg_send (&identity, backend, ZMQ_SNDMORE);
    s_send_parts (backend, request->frame, 3);
    worker->credit--;
}

//  The relay: its sockets, the workers it knows and the requests queued
typedef struct {
    void *frontend;             //  ROUTER the clients connect to
    void *backend;              //  ROUTER the workers connect to
    s_worker_t workers [MAX_WORKERS];   //  Workers that said ready
    size_t nworkers;            //  How many
    size_t next;                //  Where the round robin looks first
    s_queue_t queue;            //  Requests waiting for a free slot
} s_relay_t;

//  Open the relay's sockets bound on frontend_ep and backend_ep; returns
//  -1 (after a message) when one cannot be bound
static int
s_relay_bind (s_relay_t *self, void *context, const char *frontend_ep, const char *backend_ep)
{
    self->frontend = zmq_socket (context, ZMQ_ROUTER);
    self->backend = zmq_socket (context, ZMQ_ROUTER);
    int hwm = 0, linger = 0;
    zmq_setsockopt (self->frontend, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt (self->frontend, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt (self->backend, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt (self->backend, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt (self->frontend, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt (self->backend, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind (self->frontend, frontend_ep) || zmq_bind (self->backend, backend_ep)) {
        fprintf (stderr, "null_relay: cannot bind: %s\n", zmq_strerror (errno));
        return -1;
    }
    return 0;
}

//  The known worker of identity, or NULL
static s_worker_t *
s_relay_worker (s_relay_t *self, zmq_msg_t *identity)
{
    for (size_t w = 0; w < self->nworkers; w++)
        if (zmq_msg_size (&self->workers [w].identity) == zmq_msg_size (identity)
        &&  !memcmp (zmq_msg_data (&self->workers [w].identity), zmq_msg_data (identity),
                     zmq_msg_size (identity)))
            return &self->workers [w];
    return NULL;
}

//  Take what the workers sent (256 messages at most): a ready worker is
//  known from then on; a reply frees a slot and goes to its client
static void
s_relay_from_workers (s_relay_t *self)
{
    for (int batch = 0; batch < 256; batch++) {
        zmq_msg_t frames [6];
        int count = s_recv_parts (self->backend, frames, 6, ZMQ_DONTWAIT);
        if (count < 0)
            break;
        s_worker_t *worker = s_relay_worker (self, &frames [0]);
        const char *command = count >= 2 && zmq_msg_size (&frames [1]) == 1
                            ? (const char *) zmq_msg_data (&frames [1]): "";
        if (count == 3 && *command == 'R' && !worker && self->nworkers < MAX_WORKERS) {
            worker = &self->workers [self->nworkers++];
            zmq_msg_init (&worker->identity);
            zmq_msg_copy (&worker->identity, &frames [0]);
            char text [32] = "";
            size_t size = zmq_msg_size (&frames [2]);
            memcpy (text, zmq_msg_data (&frames [2]), size < 31? size: 31);
            worker->credit = (size_t) strtoul (text, NULL, 10);
            s_close (frames, count);
        }
        else
        if (count == 5 && *command == 'D' && worker) {
            worker->credit++;
            //  [client][request-id][payload] to the frontend
            s_send_parts (self->frontend, frames + 2, 3);
            zmq_msg_close (&frames [0]);
            zmq_msg_close (&frames [1]);
        }
        else
            s_close (frames, count);
    }
}

//  Take what the clients sent (256 messages at most): queue every
//  request, answer "?" with the number of workers
static void
s_relay_from_clients (s_relay_t *self)
{
    for (int batch = 0; batch < 256; batch++) {
        zmq_msg_t frames [4];
        int count = s_recv_parts (self->frontend, frames, 4, ZMQ_DONTWAIT);
        if (count < 0)
            break;
        if (count == 2 && zmq_msg_size (&frames [1]) == 1
        &&  *(const char *) zmq_msg_data (&frames [1]) == '?') {
            char text [32];
            int size = snprintf (text, sizeof text, "%zu", self->nworkers);
            zmq_msg_send (&frames [0], self->frontend, ZMQ_SNDMORE);
            zmq_msg_send (&frames [1], self->frontend, ZMQ_SNDMORE);
            zmq_send (self->frontend, text, (size_t) size, 0);
        }
        else
        if (count == 3) {
            s_request_t *request = s_queue_push (&self->queue);
            for (int f = 0; f < 3; f++) {
                zmq_msg_init (&request->frame [f]);
                zmq_msg_move (&request->frame [f], &frames [f]);
                zmq_msg_close (&frames [f]);
            }
        }
        else
            s_close (frames, count);
    }
}

//  Hand queued requests to workers with a free slot, round robin, until
//  the queue is empty or no worker has a free slot
static void
s_relay_dispatch (s_relay_t *self)
{
    while (self->queue.count && self->nworkers) {
        s_worker_t *worker = NULL;
        for (size_t w = 0; w < self->nworkers; w++) {
            s_worker_t *candidate = &self->workers [(self->next + w) % self->nworkers];
            if (candidate->credit) {
                worker = candidate;
                self->next = (self->next + w + 1) % self->nworkers;
                break;
            }
        }
        if (!worker)
            break;
        s_dispatch (self->backend, worker, s_queue_pop (&self->queue));
    }
}

int
main (int argc, char *argv [])
{
    const char *frontend_ep = NULL, *backend_ep = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp (argv [i], "--frontend"))
            frontend_ep = argv [i + 1];
        else
        if (!strcmp (argv [i], "--backend"))
            backend_ep = argv [i + 1];
    }
    if (!frontend_ep || !backend_ep) {
        fprintf (stderr, "usage: null_relay --frontend EP --backend EP\n");
        return 2;
    }
    struct sigaction action = { .sa_handler = s_on_signal };
    sigaction (SIGINT, &action, NULL);
    sigaction (SIGTERM, &action, NULL);

    void *context = zmq_ctx_new ();
    s_relay_t relay = { 0 };
    if (s_relay_bind (&relay, context, frontend_ep, backend_ep))
        return 1;
    zmq_pollitem_t items [] = {
        { relay.backend, 0, ZMQ_POLLIN, 0 }, { relay.frontend, 0, ZMQ_POLLIN, 0 }
    };
    while (!s_interrupted) {
        if (zmq_poll (items, 2, 500) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        //  Workers first: replies free slots. Drain what is there.
        if (items [0].revents & ZMQ_POLLIN)
            s_relay_from_workers (&relay);
        //  Clients: queue every request
        if (items [1].revents & ZMQ_POLLIN)
            s_relay_from_clients (&relay);
        //  Dispatch: round robin over workers with a free slot
        s_relay_dispatch (&relay);
    }
    s_request_t *request;
    while ((request = s_queue_pop (&relay.queue)))
        s_close (request->frame, 3);
    free (relay.queue.items);
    for (size_t w = 0; w < relay.nworkers; w++)
        zmq_msg_close (&relay.workers [w].identity);
    zmq_close (relay.frontend);
    zmq_close (relay.backend);
    zmq_ctx_term (context);
    return 0;
}
