/*  =========================================================================
    act_reply - a reply of actd as the C client library hands it over:
    its verb, its request id and its argument frames (act_client.h), made
    from the frames a broker sent or by the library itself (an ERROR of
    its own, such as disconnected).
    ========================================================================= */

#include "actd/act_wire.h"
#include "act_client_int.h"

act_reply_t *
act_reply_decode (zmsg_t **msg_p)
{
    zmsg_t *msg = *msg_p;
    zframe_t *header = zmsg_pop (msg);
    zframe_t *verb = zmsg_pop (msg);
    zframe_t *request = zmsg_pop (msg);
    act_reply_t *reply = NULL;
    if (header && verb && request && zframe_streq (header, ACT_CLIENT_HEADER)) {
        reply = calloc (1, sizeof *reply);
        reply->verb = zframe_strdup (verb);
        reply->request = zframe_strdup (request);
        reply->args = msg;
        *msg_p = NULL;
    }
    zframe_destroy (&header);
    zframe_destroy (&verb);
    zframe_destroy (&request);
    zmsg_destroy (msg_p);
    return reply;
}

act_reply_t *
act_reply_error (const char *request, const char *code, const char *message)
{
    act_reply_t *reply = calloc (1, sizeof *reply);
    reply->verb = strdup ("ERROR");
    reply->request = strdup (request);
    reply->args = zmsg_new ();
    zmsg_addstr (reply->args, code);
    zmsg_addstr (reply->args, message);
    return reply;
}

void
act_reply_destroy (act_reply_t **self_p)
{
    if (self_p && *self_p) {
        act_reply_t *self = *self_p;
        free (self->verb);
        free (self->request);
        zmsg_destroy (&self->args);
        free (self);
        *self_p = NULL;
    }
}

char *
act_reply_arg (act_reply_t *self, size_t index)
{
    zframe_t *frame = zmsg_first (self->args);
    while (frame && index--)
        frame = zmsg_next (self->args);
    return frame? zframe_strdup (frame): NULL;
}
