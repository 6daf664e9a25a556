/*  =========================================================================
    act_outbox - what a pass sends, after its commit (see act_outbox.h).

    Frames are libzmq messages built in place in one array of messages: a
    CZMQ message costs a frame and a list node per frame, which were a
    tenth of the broker's instructions per call.
    ========================================================================= */

#include "act_outbox.h"
#include "actd/act_err.h"
#include "actd/act_wire.h"
#include "act_log.h"

//  The most frames a message of the broker has (a Majordomo 0.1 TASK: 7)
#define S_PARTS 8

struct _act_out_t {
    zmq_msg_t parts [S_PARTS];  //  The frames, routing id first
    size_t nparts;              //  Frames built
    bool to_worker;             //  Which socket
    bool durable;               //  A reply that promises stored state
    size_t head;                //  Index of a reply's ACTC01 frame (1, or 2
                                //  after a REQ client's empty frame)
};

struct _act_outbox_t {
    act_out_t *messages;        //  In the order they leave
    size_t size;                //  Messages held
    size_t room;                //  Slots allocated
    zframe_t *envelope;         //  Client whose replies get an empty frame
                                //  now (borrowed), or NULL
};

act_outbox_t *
act_outbox_new (void)
{
    return (act_outbox_t *) calloc (1, sizeof (act_outbox_t));
}

//  Free out's frames (sent ones are empty already)
static void
s_close (act_out_t *out)
{
    for (size_t i = 0; i < out->nparts; i++)
        zmq_msg_close (&out->parts [i]);
    out->nparts = 0;
}

void
act_outbox_destroy (act_outbox_t **self_p)
{
    if (self_p && *self_p) {
        act_outbox_t *self = *self_p;
        for (size_t i = 0; i < self->size; i++)
            s_close (&self->messages [i]);
        free (self->messages);
        free (self);
        *self_p = NULL;
    }
}

act_out_t *
act_outbox_add (act_outbox_t *self, bool to_worker, bool durable)
{
    if (self->size == self->room) {
        //  libzmq messages may be moved as plain memory (zmq_msg_move does)
        self->room = self->room? self->room * 2: 256;
        self->messages = realloc (self->messages, self->room * sizeof (act_out_t));
        if (!self->messages) {
            zsys_error ("out of memory for %zu outgoing messages", self->room);
            abort ();                           //  As CZMQ's allocations do
        }
    }
    act_out_t *out = &self->messages [self->size++];
    out->nparts = 0;
    out->to_worker = to_worker;
    out->durable = durable;
    out->head = 1;
    return out;
}

void
act_out_add (act_out_t *out, const void *data, size_t size)
{
    if (!out)
        return;
    assert (out->nparts < S_PARTS);             //  The broker's own messages
    zmq_msg_t *part = &out->parts [out->nparts++];
    if (zmq_msg_init_size (part, size)) {
        zsys_error ("out of memory for a frame of %zu bytes", size);
        abort ();
    }
    if (size)
        memcpy (zmq_msg_data (part), data, size);
}

void
act_out_addstr (act_out_t *out, const char *string)
{
    act_out_add (out, string, strlen (string));
}

void
act_out_frame (act_out_t *out, zframe_t *frame)
{
    act_out_add (out, zframe_data (frame), zframe_size (frame));
}

act_out_t *
act_outbox_reply (act_outbox_t *self, zframe_t *client, zframe_t *request,
                  const char *verb, bool durable)
{
    act_out_t *out = act_outbox_add (self, false, durable);
    act_out_frame (out, client);
    if (act_outbox_enveloped (self, client)) {
        act_out_add (out, "", 0);
        out->head = 2;
    }
    act_out_addstr (out, ACT_CLIENT_HEADER);
    act_out_addstr (out, verb);
    act_out_frame (out, request);
    return out;
}

void
act_outbox_envelope (act_outbox_t *self, zframe_t *client)
{
    self->envelope = client;
}

bool
act_outbox_enveloped (act_outbox_t *self, zframe_t *client)
{
    return self->envelope && client && zframe_eq (self->envelope, client);
}

void
act_outbox_error (act_outbox_t *self, zframe_t *client, zframe_t *request,
                  const char *command, const act_err_t *err)
{
    act_log (LOG_INFO, "client request %s refused: %s: %s", command, err->code, err->message);
    act_out_t *out = act_outbox_reply (self, client, request, "ERROR", false);
    act_out_addstr (out, err->code);
    act_out_addstr (out, err->message);
}

size_t
act_outbox_size (act_outbox_t *self)
{
    return self->size;
}

bool
act_outbox_holds (act_outbox_t *self, const void *client, size_t size)
{
    for (size_t i = 0; i < self->size; i++) {
        act_out_t *out = &self->messages [i];
        if (!out->to_worker && out->nparts && zmq_msg_size (&out->parts [0]) == size
        &&  memcmp (zmq_msg_data (&out->parts [0]), client, size) == 0)
            return true;
    }
    return false;
}

//  True when frame part of out holds text
static bool
s_part_is (act_out_t *out, size_t part, const char *text)
{
    return part < out->nparts && zmq_msg_size (&out->parts [part]) == strlen (text)
        && memcmp (zmq_msg_data (&out->parts [part]), text, strlen (text)) == 0;
}

size_t
act_outbox_refuse (act_outbox_t *self)
{
    size_t refused = 0, kept = 0;
    for (size_t i = 0; i < self->size; i++) {
        act_out_t *out = &self->messages [i];
        if (!out->to_worker && !out->durable) {
            self->messages [kept++] = *out;     //  Moves the frames
            continue;
        }
        refused++;
        //  [client][ACTC01][verb][request] (an empty frame after the client
        //  for a REQ socket): ERROR to the same request, but for DONE, whose
        //  call is recovered and ends again later, and EVENT, which reports
        //  what was not kept (a watcher sees no gap: the _seq is given again)
        size_t head = out->head;
        if (!out->to_worker && !s_part_is (out, head + 1, "DONE")
        &&  !s_part_is (out, head + 1, "EVENT")) {
            act_out_t error = { .to_worker = false, .durable = false, .head = head };
            for (size_t part = 0; part < head; part++)
                act_out_add (&error, zmq_msg_data (&out->parts [part]),
                             zmq_msg_size (&out->parts [part]));
            act_out_addstr (&error, ACT_CLIENT_HEADER);
            act_out_addstr (&error, "ERROR");
            act_out_add (&error, zmq_msg_data (&out->parts [head + 2]),
                         zmq_msg_size (&out->parts [head + 2]));
            act_out_addstr (&error, ACT_E_INTERNAL);
            act_out_addstr (&error, "the store could not commit; nothing was kept");
            s_close (out);
            self->messages [kept++] = error;
        }
        else
            s_close (out);
    }
    self->size = kept;
    return refused;
}

size_t
act_outbox_flush (act_outbox_t *self, act_outbox_send_fn *send, void *arg)
{
    size_t sent = 0;
    for (size_t i = 0; i < self->size; i++) {
        act_out_t *out = &self->messages [i];
        if (send && send (arg, out->to_worker, out->parts, out->nparts))
            sent++;
        s_close (out);
    }
    self->size = 0;
    return sent;
}
