/*  =========================================================================
    act_held - the bytes libzmq holds for one peer (see act_held.h).

    The counts are atomic, as a ticket's free function runs on libzmq's
    I/O thread; an account lives until its holder (the outbox's table,
    or a worker) and every frame that counts in it have let it go.
    ========================================================================= */

#include <stdatomic.h>
#include "act_held.h"
#include "act_log.h"

struct _act_held_t {
    atomic_size_t bytes;        //  Bytes of its frames libzmq holds
    atomic_size_t refs;         //  The holder's reference, and one per frame
    bool cut;                   //  Over max_client_bytes: its replies are
                                //  dropped until libzmq holds nothing for
                                //  it (the loop's thread only)
};

//  Before the bytes of a frame handed to libzmq (or apart from them,
//  when they are shared): its size and account
struct _act_ticket_t {
    size_t size;                //  The frame's bytes
    act_held_t *account;        //  Whose, once charged; NULL before
    act_shared_t *shared;       //  The bytes it shares (a reference), or
                                //  NULL: its own follow it
};

//  Bytes shared by the frames of many messages; they follow it
struct _act_shared_t {
    atomic_size_t refs;         //  The maker's reference, and one per ticket
    size_t size;                //  Its bytes
};

//  Let a reference to an account go; the last frees it
static void
s_held_release (act_held_t *self)
{
    if (atomic_fetch_sub (&self->refs, 1) == 1)
        free (self);
}

act_held_t *
act_held_new (void)
{
    act_held_t *self = (act_held_t *) calloc (1, sizeof (act_held_t));
    if (self) {
        atomic_init (&self->bytes, 0);
        atomic_init (&self->refs, 1);
    }
    return self;
}

void
act_held_destroy (act_held_t **self_p)
{
    if (self_p && *self_p) {
        s_held_release (*self_p);
        *self_p = NULL;
    }
}

size_t
act_held_bytes (act_held_t *self)
{
    return self? atomic_load (&self->bytes): 0;
}

bool
act_held_cut (act_held_t *self)
{
    return self->cut;
}

void
act_held_set_cut (act_held_t *self, bool cut)
{
    self->cut = cut;
}

//  Let a reference to shared bytes go; the last frees them
static void
s_shared_release (act_shared_t *self)
{
    if (atomic_fetch_sub (&self->refs, 1) == 1)
        free (self);
}

//  A ticket for size bytes, with room for extra of them after it
static act_ticket_t *
s_ticket_new (size_t size, size_t extra)
{
    act_ticket_t *self = (act_ticket_t *) malloc (sizeof (act_ticket_t) + extra);
    if (!self) {
        act_log (LOG_ERR, "out of memory for a frame of %zu bytes", size);
        abort ();
    }
    self->size = size;
    self->account = NULL;
    self->shared = NULL;
    return self;
}

act_ticket_t *
act_ticket_new (size_t size)
{
    return s_ticket_new (size, size);
}

act_ticket_t *
act_ticket_shared (act_shared_t *shared)
{
    act_ticket_t *self = s_ticket_new (shared->size, 0);
    self->shared = shared;
    atomic_fetch_add (&shared->refs, 1);
    return self;
}

void *
act_ticket_data (act_ticket_t *self)
{
    return self->shared? act_shared_data (self->shared): (void *) (self + 1);
}

size_t
act_ticket_size (act_ticket_t *self)
{
    return self->size;
}

//  libzmq is done with a ticket's frame (sent, or dropped)
static void
s_ticket_free (void *data, void *hint)
{
    (void) data;
    act_ticket_t *ticket = (act_ticket_t *) hint;
    if (ticket->account) {
        atomic_fetch_sub (&ticket->account->bytes, ticket->size);
        s_held_release (ticket->account);
    }
    if (ticket->shared)
        s_shared_release (ticket->shared);
    free (ticket);
}

void
act_ticket_init (act_ticket_t *self, zmq_msg_t *part)
{
    if (zmq_msg_init_data (part, act_ticket_data (self), self->size, s_ticket_free, self)) {
        act_log (LOG_ERR, "out of memory for a frame of %zu bytes", self->size);
        abort ();
    }
}

void
act_ticket_charge (act_ticket_t *self, act_held_t *held)
{
    self->account = held;
    atomic_fetch_add (&held->refs, 1);
    atomic_fetch_add (&held->bytes, self->size);
}

act_shared_t *
act_shared_new (size_t size)
{
    act_shared_t *self = (act_shared_t *) malloc (sizeof (act_shared_t) + size);
    if (!self) {
        act_log (LOG_ERR, "out of memory for a frame of %zu bytes", size);
        abort ();
    }
    atomic_init (&self->refs, 1);
    self->size = size;
    return self;
}

void *
act_shared_data (act_shared_t *self)
{
    return self + 1;
}

size_t
act_shared_size (act_shared_t *self)
{
    return self->size;
}

void
act_shared_destroy (act_shared_t **self_p)
{
    if (self_p && *self_p) {
        s_shared_release (*self_p);
        *self_p = NULL;
    }
}
