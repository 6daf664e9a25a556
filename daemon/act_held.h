/*  =========================================================================
    act_held - the bytes libzmq holds for one peer (an account), and the
    frames that count in it (each with a ticket), and bytes shared by the
    frames of many messages.

    A frame handed to libzmq with a ticket (act_ticket_init: zero copy) is
    let go by libzmq once it has written the frame to its connection or
    dropped it, on its I/O thread: the ticket's account is then counted
    down. The outbox keeps an account for each client it sends large
    replies to (server/max_client_bytes), the pool one for each worker
    (server/max_worker_bytes).

    Bytes built once for many messages (act_shared_t: an EVENT's body, to
    every watcher of a context) are handed to libzmq as the same bytes in
    each message's frame, each frame with a ticket of its own: each
    account still knows when libzmq lets go of its frame, and the bytes
    are freed once every frame has gone.
    ========================================================================= */

#ifndef ACT_HELD_H_INCLUDED
#define ACT_HELD_H_INCLUDED

#include <czmq.h>

typedef struct _act_held_t act_held_t;
typedef struct _act_ticket_t act_ticket_t;
typedef struct _act_shared_t act_shared_t;

//  An account of the bytes libzmq holds for one peer: nothing yet. NULL
//  when out of memory.
act_held_t *act_held_new (void);

//  Let the account go (the frames still held keep it until they go);
//  null the pointer; safe on NULL.
void act_held_destroy (act_held_t **self_p);

//  The bytes it counts now (0 for NULL).
size_t act_held_bytes (act_held_t *self);

//  True when its client went past max_client_bytes: its replies are
//  dropped until libzmq holds nothing for it. The loop's thread only.
bool act_held_cut (act_held_t *self);

//  Mark it as past max_client_bytes, or not (cut).
void act_held_set_cut (act_held_t *self, bool cut);

//  A ticket for a frame of size bytes, with room for them after it
//  (act_ticket_data). Out of memory, it aborts, as CZMQ's allocations do.
act_ticket_t *act_ticket_new (size_t size);

//  A ticket for a frame of shared's bytes, not copied: the frame holds
//  them until libzmq lets it go. Its account counts all of them, as for
//  a frame of its own: an account counts what libzmq would hold for its
//  peer alone, more than the memory the shared bytes take, never less.
act_ticket_t *act_ticket_shared (act_shared_t *shared);

//  The frame's bytes.
void *act_ticket_data (act_ticket_t *self);

//  The frame's size.
size_t act_ticket_size (act_ticket_t *self);

//  Hand the ticket's frame to libzmq as part, not copied: the ticket is
//  part's from now on, and goes when libzmq lets the frame go (sent,
//  dropped, or part closed). Out of memory, it aborts.
void act_ticket_init (act_ticket_t *self, zmq_msg_t *part);

//  Count the frame's bytes in held from now until libzmq lets it go.
//  Once per ticket.
void act_ticket_charge (act_ticket_t *self, act_held_t *held);

//  size bytes to be built once (act_shared_data) and sent in many
//  messages (act_ticket_shared). Out of memory, it aborts.
act_shared_t *act_shared_new (size_t size);

//  Its bytes.
void *act_shared_data (act_shared_t *self);

//  How many.
size_t act_shared_size (act_shared_t *self);

//  Let the maker's reference go (the frames that share the bytes keep
//  them until libzmq lets them go); null the pointer; safe on NULL.
void act_shared_destroy (act_shared_t **self_p);

#endif
