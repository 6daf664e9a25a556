/*  =========================================================================
    act_client_route - which broker a client's request goes to: the owner
    a moved reply named, else the first of the rendezvous order that every
    actd client library computes alike (docs/protocol.md section 12); and
    whether any broker is connected now.
    ========================================================================= */

#include "act_client_int.h"

uint64_t
act_client_score (const char *endpoint, const char *key)
{
    uint64_t hash = 14695981039346656037ULL;
    for (const char *c = endpoint; *c; c++)
        hash = (hash ^ (unsigned char) *c) * 1099511628211ULL;
    hash = (hash ^ (unsigned char) '\n') * 1099511628211ULL;
    for (const char *c = key; *c; c++)
        hash = (hash ^ (unsigned char) *c) * 1099511628211ULL;
    hash ^= hash >> 33;
    hash *= 0xff51afd7ed558ccdULL;
    hash ^= hash >> 33;
    hash *= 0xc4ceb9fe1a85ec53ULL;
    hash ^= hash >> 33;
    return hash;
}

act_link_t *
act_client_route (act_client_t *self, const char *key, act_link_t *avoid)
{
    if (key) {
        act_link_t *owner = act_table_lookup (self->owners, key);
        if (owner && owner != avoid && owner->dead_until <= zclock_mono ())
            return owner;
    }
    act_link_t *best = NULL;
    uint64_t best_score = 0;
    int64_t now = zclock_mono ();
    for (int pass = 0; pass < 2 && !best; pass++)
        for (act_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links)) {
            //  First pass: live links only; second: any but avoid
            if (link == avoid || (pass == 0 && link->dead_until > now))
                continue;
            uint64_t score = key? act_client_score (link->endpoint, key): 0;
            if (!best || score > best_score
            ||  (score == best_score && strcmp (link->endpoint, best->endpoint) < 0)) {
                best = link;
                best_score = score;
            }
        }
    return best? best: zlistx_first (self->links);
}

bool
act_client_connected (act_client_t *self, const char **why)
{
    const char *failure = NULL;
    for (act_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links)) {
        if (link->up)
            return true;
        if (!failure)
            failure = link->failure;
    }
    if (why)
        *why = failure;
    return false;
}
