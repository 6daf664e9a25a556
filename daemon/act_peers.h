/*  =========================================================================
    act_peers - the connections behind the routing ids of the two ROUTER
    sockets: the CURVE key each peer authenticated with and the file
    descriptor libzmq reads it from, so that a revoked peer, or a client
    that does not read its replies, can be cut off.

    A ROUTER socket cannot close one peer's connection, and ZAP runs only
    at the handshake. libzmq names, in each message's metadata, the CURVE
    key ("User-Id") and the descriptor ("__fd", what ZMQ_SRCFD reads) it
    came from; shutting that descriptor down (never closing it: libzmq
    owns it) makes libzmq drop the connection as if the peer had gone. A
    descriptor number is reused once libzmq closes it, so each is kept
    with its socket's inode and is shut only while the inode still
    matches: a later connection on the same number is never touched.
    ("__fd" is libzmq's own property, what ZMQ_SRCFD reads; with a libzmq that
    does not give it, nothing is cut, and revoked peers are still refused
    and their workers disconnected.)
    ========================================================================= */

#ifndef ACT_PEERS_H_INCLUDED
#define ACT_PEERS_H_INCLUDED

#include <czmq.h>

typedef struct _act_peers_t act_peers_t;

//  A client's connection behind routing id (size bytes) ended
typedef void (act_peers_gone_fn) (void *arg, const void *id, size_t size);

//  A new, empty table.
act_peers_t *act_peers_new (void);

//  Destroy it and null the pointer; safe on NULL.
void act_peers_destroy (act_peers_t **self_p);

//  Note the peer of a message that arrived on the worker (or client)
//  socket: routing is its routing id frame, frame one the peer sent (the
//  metadata rides on those, not always on the routing id). socket is the
//  status of the descriptor it came on, taken when it was read
//  (act_peers_socket), or NULL: read just now, taken here. A message
//  handled long after it was read (read ahead during a commit) may come
//  from a connection since closed, whose descriptor number a newcomer's
//  socket has now: its key must not be taken for the newcomer's.
void act_peers_seen (act_peers_t *self, bool worker, zmq_msg_t *routing, zmq_msg_t *frame,
                     const struct stat *socket);

//  The status of the descriptor frame (one a peer sent) came on, into
//  *socket, as act_peers_seen takes it. False when libzmq does not name
//  it, or it cannot be read.
bool act_peers_socket (zmq_msg_t *frame, struct stat *socket);

//  Iterate over the client peers: the routing id of each (borrowed), and
//  its key in *user. Not safe against act_peers_seen while iterating.
zframe_t *act_peers_first_client (act_peers_t *self, const char **user);
zframe_t *act_peers_next_client (act_peers_t *self, const char **user);

//  Shut the connection of the peer with routing id key (hex) at the
//  monotonic time at (so that what was queued for it, a DISCONNECT, goes
//  first; 0: at the next tick). why (static) is logged with the cut, or
//  NULL when the caller logged it. Returns false when the peer is not
//  known.
bool act_peers_cut (act_peers_t *self, bool worker, const char *key, long long at,
                    const char *why);

//  Cut the connections due by now; forget, once a second, the peers whose
//  connection libzmq has closed.
void act_peers_tick (act_peers_t *self, long long now);

//  True when the connection now behind routing id (size bytes) on the
//  client (or worker) side is one actd has seen speak, still open, and
//  authenticated with CURVE key user (Z85). A connection that took over a
//  routing id after its first owner left, and has not spoken since, is
//  not: what is owed to the first owner must not reach it.
bool act_peers_holds (act_peers_t *self, bool worker, const void *id, size_t size,
                      const char *user);

//  The client with routing id (size bytes) opened a watch on the
//  connection it last spoke on: from now on its socket is checked at each
//  of its messages, and the end of that connection is reported.
void act_peers_watched (act_peers_t *self, const void *id, size_t size);

//  Call gone (with arg) when the connection of a watched client ends:
//  closed (seen at most a second later, by act_peers_tick), or its
//  routing id taken by a new connection (seen at that one's first
//  message, before it is handled).
void act_peers_on_gone (act_peers_t *self, act_peers_gone_fn *gone, void *arg);

//  Peers known.
size_t act_peers_size (act_peers_t *self);

#endif
