/*  =========================================================================
    act_client_ignored - the requests a client forgot (a wait that timed
    out, an UNWATCH, the DONEs nobody waits for): their replies are dropped
    as they come, until the last each can get. The table is the client's
    (self->ignored, bounded by ACT_CLIENT_ROUTES_KEPT).
    ========================================================================= */

#include "act_client_int.h"

//  A request this client forgot: its replies are dropped, until the last
//  it can get has come
typedef struct {
    act_link_t *link;           //  Broker it went to, or NULL: not known
    size_t dones;               //  DONE replies still due (an accepted CALL
                                //  or PLAN with _outputPath); 0: its first
                                //  reply other than EVENT is its last
    char *closes;               //  An UNWATCH: the WATCH it closes (ignored
                                //  too, until this one ends), else NULL
} s_ignored_t;

void
act_client_ignored_destroy (void **item)
{
    s_ignored_t *ignored = (s_ignored_t *) *item;
    free (ignored->closes);
    free (ignored);
    *item = NULL;
}

void
act_client_ignored_add (act_client_t *self, const char *request, act_link_t *link,
                        size_t dones, const char *closes)
{
    s_ignored_t *ignored = calloc (1, sizeof *ignored);
    ignored->link = link;
    ignored->dones = dones;
    ignored->closes = closes? strdup (closes): NULL;
    act_table_update (self->ignored, request, ignored);
}

void
act_client_ignore_dones (act_client_t *self, const char *request, act_link_t *link,
                         size_t dones)
{
    zhashx_delete (self->awaiting, request);
    if (dones > 0)
        act_client_ignored_add (self, request, link, dones, NULL);
}

void
act_client_ignored_lost (act_client_t *self, act_link_t *link)
{
    zlistx_t *requests = act_table_keys (self->ignored);
    for (const char *request = zlistx_first (requests); request;
         request = zlistx_next (requests)) {
        s_ignored_t *ignored = act_table_lookup (self->ignored, request);
        if (ignored && ignored->link == link) {
            if (ignored->closes)
                act_table_delete (self->ignored, ignored->closes);
            act_table_delete (self->ignored, request);
        }
    }
    zlistx_destroy (&requests);
}

//  True when a reply with verb is the last an ignored request gets (a
//  DONE counted down)
static bool
s_ignored_ends (s_ignored_t *ignored, const char *verb)
{
    if (streq (verb, "EVENT"))
        return false;           //  A WATCH ends with its UNWATCH, or an ERROR
    if (streq (verb, "DONE") && ignored->dones > 0)
        ignored->dones--;
    return streq (verb, "ERROR") || ignored->dones == 0;
}

bool
act_client_ignored_take (act_client_t *self, act_reply_t **reply_p)
{
    act_reply_t *reply = *reply_p;
    s_ignored_t *ignored = act_table_lookup (self->ignored, reply->request);
    if (!ignored)
        return false;
    if (s_ignored_ends (ignored, reply->verb)) {
        //  Its last reply: once an UNWATCH is answered, the WATCH it
        //  closed sends no more either
        if (ignored->closes)
            act_table_delete (self->ignored, ignored->closes);
        act_table_delete (self->ignored, reply->request);
    }
    act_reply_destroy (reply_p);
    return true;
}
