/*  =========================================================================
    act_pages - HISTORY pages built in pieces, across passes of the loop.

    A page can hold max_reply_bytes (8 MiB) of messages: read, parsed and
    serialized at once it stopped the loop for a noticeable time, and
    everyone waited (issue 16). A page is built here a bounded number of
    bytes per pass instead, oldest request first, and its VALUE goes to
    the outbox when it is whole; the loop serves other sockets between
    the pieces. The page is what one read would have given: the same
    messages (stored messages never change), stopped by the same rule
    (after one message at least, before its text would pass
    max_reply_bytes).
    ========================================================================= */

#ifndef ACT_PAGES_H_INCLUDED
#define ACT_PAGES_H_INCLUDED

#include <czmq.h>
#include "act_store.h"
#include "act_outbox.h"

typedef struct _act_pages_t act_pages_t;

//  Pages read from store, answered through outbox (both borrowed), each at
//  most max_bytes of text. NULL when out of memory.
act_pages_t *act_pages_new (act_store_t *store, act_outbox_t *outbox, size_t max_bytes);

//  Destroy the pages (those not built are not answered) and null the
//  pointer; safe on NULL.
void act_pages_destroy (act_pages_t **self_p);

//  Build the page of context from _seq from, at most limit messages, for
//  client's request (copied); enveloped: the client is a REQ socket.
void act_pages_start (act_pages_t *self, zframe_t *client, zframe_t *request, bool enveloped,
                      const char *context, uint64_t from, size_t limit);

//  Build about budget bytes of pages (SIZE_MAX: all of them); each page
//  done is answered VALUE (or ERROR internal when the store could not be
//  read). Returns the number of pages left to build.
size_t act_pages_pump (act_pages_t *self, size_t budget);

//  Pages left to build.
size_t act_pages_size (act_pages_t *self);

#endif
