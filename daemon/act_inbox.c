/*  =========================================================================
    act_inbox - messages in, on raw libzmq messages (see act_inbox.h).
    ========================================================================= */

#include "act_inbox.h"
#include "actd/act_text.h"

struct _act_inbox_t {
    zlistx_t *queue;            //  act_msg_t read ahead, oldest first
    size_t bytes;               //  Bytes of the messages in queue
};

int
act_msg_recv (act_msg_t *msg, void *socket)
{
    msg->held = msg->size = msg->bytes = 0;
    msg->routing = NULL;
    msg->stated = false;
    zmq_msg_t scratch;
    bool more = true;
    while (more) {
        zmq_msg_t *part = msg->held < ACT_MSG_MAX? &msg->part [msg->held]: &scratch;
        zmq_msg_init (part);
        //  The first frame may be absent; the rest of a message arrive
        //  with it (ZeroMQ delivers messages whole), so they are waited
        //  for, again when a signal interrupts (the rest must not be read
        //  as the next message)
        int rc = zmq_msg_recv (part, socket, msg->size? 0: ZMQ_DONTWAIT);
        while (rc < 0 && msg->size && zmq_errno () == EINTR)
            rc = zmq_msg_recv (part, socket, 0);
        if (rc < 0) {
            zmq_msg_close (part);
            if (msg->size == 0)
                return -1;
            break;              //  The socket closed mid-message
        }
        more = zmq_msg_more (part);
        msg->size++;
        msg->bytes += zmq_msg_size (part);
        if (part == &scratch)
            zmq_msg_close (part);
        else
            msg->held++;
    }
    return 0;
}

void
act_msg_from_zmsg (act_msg_t *msg, zmsg_t *zmsg)
{
    msg->held = msg->size = msg->bytes = 0;
    msg->routing = NULL;
    msg->stated = false;
    for (zframe_t *frame = zmsg_first (zmsg); frame; frame = zmsg_next (zmsg)) {
        if (msg->held < ACT_MSG_MAX) {
            zmq_msg_init_size (&msg->part [msg->held], zframe_size (frame));
            memcpy (zmq_msg_data (&msg->part [msg->held]), zframe_data (frame),
                    zframe_size (frame));
            msg->held++;
        }
        msg->size++;
        msg->bytes += zframe_size (frame);
    }
}

void
act_msg_close (act_msg_t *msg)
{
    for (size_t index = 0; index < msg->held; index++)
        zmq_msg_close (&msg->part [index]);
    zframe_destroy (&msg->routing);
    msg->held = msg->size = msg->bytes = 0;
}

zmq_msg_t *
act_msg_part (act_msg_t *msg, size_t index)
{
    return index < msg->held? &msg->part [index]: NULL;
}

zframe_t *
act_msg_routing (act_msg_t *msg)
{
    if (!msg->routing && msg->held)
        msg->routing = act_msg_frame (msg, 0);
    return msg->routing;
}

zframe_t *
act_msg_frame (act_msg_t *msg, size_t index)
{
    zmq_msg_t *part = act_msg_part (msg, index);
    return part? zframe_new (zmq_msg_data (part), zmq_msg_size (part)): NULL;
}

char *
act_msg_strhex (zmq_msg_t *part)
{
    size_t size = zmq_msg_size (part);
    char *hex = (char *) malloc (size * 2 + 1);
    return hex? act_hex_write (hex, zmq_msg_data (part), size): NULL;
}

//  A queued message's destructor
static void
s_msg_destroy (void **item)
{
    if (*item) {
        act_msg_close ((act_msg_t *) *item);
        free (*item);
        *item = NULL;
    }
}

act_inbox_t *
act_inbox_new (void)
{
    act_inbox_t *self = (act_inbox_t *) calloc (1, sizeof (act_inbox_t));
    if (self && !(self->queue = zlistx_new ()))
        free (self), self = NULL;
    if (self)
        zlistx_set_destructor (self->queue, s_msg_destroy);
    return self;
}

void
act_inbox_destroy (act_inbox_t **self_p)
{
    if (self_p && *self_p) {
        zlistx_destroy (&(*self_p)->queue);
        free (*self_p);
        *self_p = NULL;
    }
}

act_msg_t *
act_inbox_read (act_inbox_t *self, void *socket)
{
    act_msg_t *msg = (act_msg_t *) malloc (sizeof (act_msg_t));
    if (!msg || act_msg_recv (msg, socket)) {
        free (msg);
        return NULL;
    }
    zlistx_add_end (self->queue, msg);
    self->bytes += msg->bytes;
    return msg;
}

void
act_inbox_drop_last (act_inbox_t *self)
{
    act_msg_t *msg = (act_msg_t *) zlistx_last (self->queue);
    if (msg) {
        self->bytes -= msg->bytes;
        zlistx_delete (self->queue, zlistx_cursor (self->queue));
    }
}

bool
act_inbox_pop (act_inbox_t *self, act_msg_t *msg)
{
    act_msg_t *first = (act_msg_t *) zlistx_detach (self->queue, NULL);
    if (!first)
        return false;
    self->bytes -= first->bytes;
    *msg = *first;
    for (size_t index = 0; index < first->held; index++) {
        zmq_msg_init (&msg->part [index]);
        zmq_msg_move (&msg->part [index], &first->part [index]);
        zmq_msg_close (&first->part [index]);
    }
    free (first);
    return true;
}

size_t
act_inbox_size (act_inbox_t *self)
{
    return zlistx_size (self->queue);
}

size_t
act_inbox_bytes (act_inbox_t *self)
{
    return self->bytes;
}

bool
act_inbox_holds_from (act_inbox_t *self, const void *data, size_t size, bool skip_last)
{
    act_msg_t *last = skip_last? (act_msg_t *) zlistx_last (self->queue): NULL;
    for (act_msg_t *msg = (act_msg_t *) zlistx_first (self->queue); msg;
         msg = (act_msg_t *) zlistx_next (self->queue))
        if (msg != last && msg->held && zmq_msg_size (&msg->part [0]) == size
        &&  memcmp (zmq_msg_data (&msg->part [0]), data, size) == 0)
            return true;
    return false;
}
