/*  =========================================================================
    act_pages - HISTORY pages built in pieces, across passes of the loop,
    each client in turn.

    A page can hold max_reply_bytes (8 MiB) of messages: read, parsed and
    serialized at once it stopped the loop for a noticeable time, and
    everyone waited (issue 16). A page is built here a bounded number of
    bytes per pass instead, and its VALUE goes to the outbox when it is
    whole; the loop serves other sockets between the pieces. The page is
    what one read would have given: the same messages (stored messages
    never change), stopped by the same rule (after one message at least,
    before its text would pass max_reply_bytes).

    Fairness: the clients with pages pending take turns, a slice of the
    pass's budget each, so a client with one small HISTORY is answered
    within a pass or two however many another client has asked for (one
    list, oldest first, made it wait for all of them). Order: a request
    that comes from a client while a page of its is pending is held here,
    and served (through the server function) when its turn comes after
    that page, so that replies to one client keep the order of its
    requests. Bounds: S_CLIENT_HISTORIES HISTORY requests pending per
    client, and S_CLIENT_HELD requests (S_CLIENT_HELD_BYTES) held behind
    them; past those a request is refused busy at once. A client that is
    gone (a send to it found no route) has its pages dropped unbuilt.
    ========================================================================= */

#ifndef ACT_PAGES_H_INCLUDED
#define ACT_PAGES_H_INCLUDED

#include <czmq.h>
#include "act_store.h"
#include "act_outbox.h"
#include "act_inbox.h"

typedef struct _act_pages_t act_pages_t;

//  Serves a client request that was held behind its client's pages, now
//  that its turn came (the caller of the function closes msg after).
typedef void (act_pages_serve_fn) (void *arg, act_msg_t *msg);

//  Pages read from store, answered through outbox (both borrowed), each at
//  most max_bytes of text. NULL when out of memory.
act_pages_t *act_pages_new (act_store_t *store, act_outbox_t *outbox, size_t max_bytes);

//  Destroy the pages (those not built are not answered, the requests held
//  not served) and null the pointer; safe on NULL.
void act_pages_destroy (act_pages_t **self_p);

//  Serve held requests through serve (without one, none is held).
void act_pages_set_server (act_pages_t *self, act_pages_serve_fn *serve, void *arg);

//  Build the page of context from _seq from, at most limit messages, for
//  client's request (copied); enveloped: the client is a REQ socket. It
//  comes after the client's pages pending.
void act_pages_start (act_pages_t *self, zframe_t *client, zframe_t *request, bool enveloped,
                      const char *context, uint64_t from, size_t limit);

//  A client request, before it is served: when its client has pages
//  pending, msg is held (its frames move here, msg is left empty) to be
//  served after them, or refused busy at once past the bounds, and true
//  is returned: the caller does nothing more with it. False (msg
//  untouched): serve it now. NULL-safe.
bool act_pages_hold (act_pages_t *self, act_msg_t *msg);

//  True when the client with routing id (size bytes) has pages pending or
//  requests held: a reply to it now would overtake theirs. NULL-safe.
bool act_pages_holds (act_pages_t *self, const void *client, size_t size);

//  The client with routing id (size bytes) is gone: its pages, and the
//  HISTORY requests held, are dropped unbuilt (its other requests held
//  are still served in their turn: they may change state). NULL-safe.
void act_pages_drop_client (act_pages_t *self, const void *client, size_t size);

//  Build about budget bytes of pages (SIZE_MAX: all of them), the clients
//  taking turns; each page done is answered VALUE (or ERROR internal when
//  the store could not be read), and the requests held after it are
//  served. Returns the clients left with something pending.
size_t act_pages_pump (act_pages_t *self, size_t budget);

//  Clients with pages pending or requests held.
size_t act_pages_size (act_pages_t *self);

//  The CONTEXTS reply with page (taken), the store's entries in order, of
//  which it may list limit: those up to the first whose text would take
//  the reply past max_bytes, one at least (PROTOCOL.md section 1: paged
//  replies stop early, as HISTORY does), with "next", the id of the last
//  one listed, when an entry comes after it.
json_t *act_pages_contexts (json_t *page, size_t limit, size_t max_bytes);

#endif
