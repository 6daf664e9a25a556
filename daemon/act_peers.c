/*  =========================================================================
    act_peers - connections behind routing ids (see act_peers.h).
    ========================================================================= */

#include <sys/socket.h>
#include <sys/stat.h>
#include "act_peers.h"
#include "act_log.h"
#include "actd/act.h"

typedef struct {
    zframe_t *routing;          //  Its routing id
    char *user;                 //  CURVE key (Z85), or NULL
    int fd;                     //  Descriptor libzmq reads it from, or -1
    dev_t dev;                  //  That descriptor's device and inode, to
    ino_t ino;                  //  tell it from a later one with its number
    long long cut_at;           //  When to shut the connection (0: never)
    const char *why;            //  Why, for the log (static), or NULL: the
                                //  cut was logged where it was decided
    bool watched;               //  A client that opened a watch: its socket
                                //  is checked at each message, and its end
                                //  reported (act_peers_on_gone)
} s_peer_t;

//  The peer a side last saw: its next messages skip the table
typedef struct {
    s_peer_t *peer;             //  That peer (in the table), or NULL
    size_t size;                //  Its routing id's size
    byte id [255];              //  Its routing id
} s_last_t;

struct _act_peers_t {
    zhashx_t *peers;            //  "w" or "c" + routing id hex -> s_peer_t
    size_t cuts;                //  Peers with cut_at set
    long long pruned;           //  Last look for closed connections
    s_last_t last [2];          //  Peer last seen per side (client, worker)
    act_peers_gone_fn *gone;    //  Told when a watched client's socket ends
    void *gone_arg;             //  Its argument
};

static void
s_peer_destroy (void **item)
{
    s_peer_t *peer = (s_peer_t *) *item;
    zframe_destroy (&peer->routing);
    free (peer->user);
    free (peer);
    *item = NULL;
}

act_peers_t *
act_peers_new (void)
{
    act_peers_t *self = (act_peers_t *) calloc (1, sizeof (act_peers_t));
    if (!self)
        return NULL;
    self->peers = zhashx_new ();
    zhashx_set_destructor (self->peers, s_peer_destroy);
    return self;
}

void
act_peers_destroy (act_peers_t **self_p)
{
    if (self_p && *self_p) {
        zhashx_destroy (&(*self_p)->peers);
        free (*self_p);
        *self_p = NULL;
    }
}

//  True while peer's descriptor is still the socket it was seen on
static bool
s_same_socket (s_peer_t *peer)
{
    struct stat now;
    return peer->fd >= 0 && fstat (peer->fd, &now) == 0 && S_ISSOCK (now.st_mode)
        && now.st_dev == peer->dev && now.st_ino == peer->ino;
}

//  True when a message came on peer's socket: socket, the status of its
//  descriptor when it was read, is peer's; or (socket NULL: read just
//  now) peer's descriptor is still that socket
static bool
s_came_on (s_peer_t *peer, const struct stat *socket)
{
    if (!socket)
        return s_same_socket (peer);
    return S_ISSOCK (socket->st_mode) && socket->st_dev == peer->dev
        && socket->st_ino == peer->ino;
}

//  True when peer's socket is checked at each message: with CURVE a
//  descriptor number may have been reused by a connection of another key;
//  a watched client's socket ending must be seen even when its routing id
//  comes back on the same descriptor number
static bool
s_checked (s_peer_t *peer)
{
    return peer->user || peer->watched;
}

//  Longest name: the side, a routing id (at most 255 bytes) in hex, a NUL
#define S_NAME_MAX (2 + 2 * 255)

//  A peer's name in the table: its side, then its routing id in hex
static char *
s_name (bool worker, const char *key)
{
    return zsys_sprintf ("%c%s", worker? 'w': 'c', key);
}

//  s_name of a routing id frame, into name (S_NAME_MAX bytes); the name,
//  or NULL for a routing id too long to be one
static char *
s_frame_name (bool worker, zmq_msg_t *routing, char *name)
{
    static const char digits [] = "0123456789ABCDEF";
    size_t size = zmq_msg_size (routing);
    const byte *data = (const byte *) zmq_msg_data (routing);
    if (size > 255)
        return NULL;
    name [0] = worker? 'w': 'c';
    for (size_t at = 0; at < size; at++) {
        name [1 + at * 2] = digits [data [at] >> 4];
        name [2 + at * 2] = digits [data [at] & 15];
    }
    name [1 + size * 2] = 0;
    return name;
}

//  Drop peer, about to be destroyed, from the last seen ones
static void
s_forget (act_peers_t *self, s_peer_t *peer)
{
    for (int side = 0; side < 2; side++)
        if (self->last [side].peer == peer)
            self->last [side].peer = NULL;
}

bool
act_peers_socket (zmq_msg_t *frame, struct stat *socket)
{
    const char *fd_text = frame? zmq_msg_gets (frame, "__fd"): NULL;
    return fd_text && fstat (atoi (fd_text), socket) == 0;
}

void
act_peers_seen (act_peers_t *self, bool worker, zmq_msg_t *routing, zmq_msg_t *frame,
                const struct stat *socket)
{
    const char *fd_text = self && frame? zmq_msg_gets (frame, "__fd"): NULL;
    if (!fd_text)
        return;
    int fd = atoi (fd_text);
    //  The same peer as last time on this side, on the same descriptor:
    //  nothing changed, no need to name it or look it up. With CURVE a
    //  descriptor number may have been closed and reused by a connection
    //  of another key since: act_peers_holds relies on the entry being the
    //  connection's own, so its socket is checked (CURVE costs far more
    //  per message than that fstat): the one it was read on, when given
    s_last_t *last = &self->last [worker];
    size_t size = zmq_msg_size (routing);
    const byte *data = (const byte *) zmq_msg_data (routing);
    if (last->peer && last->peer->fd == fd && last->size == size
    &&  memcmp (last->id, data, size) == 0
    &&  (!s_checked (last->peer) || s_came_on (last->peer, socket)))
        return;
    char buffer [S_NAME_MAX];
    char *name = s_frame_name (worker, routing, buffer);
    if (!name)
        return;
    s_peer_t *peer = (s_peer_t *) zhashx_lookup (self->peers, name);
    if (!peer || peer->fd != fd || (s_checked (peer) && !s_came_on (peer, socket))) {
        //  A new connection took the routing id: what the old one opened
        //  is no longer its (PROTOCOL.md 1.1: a watch ends when the
        //  broker can no longer route to the socket that opened it)
        if (peer && peer->watched && !worker && self->gone)
            self->gone (self->gone_arg, data, size);
        struct stat status;
        if (socket? (status = *socket, true): fstat (fd, &status) == 0) {
            const char *user = zmq_msg_gets (frame, "User-Id");
            s_peer_t *fresh = calloc (1, sizeof *fresh);
            *fresh = (s_peer_t) { zframe_new (data, size), user && *user? strdup (user): NULL,
                                  fd, status.st_dev, status.st_ino, 0, NULL, false };
            if (peer && peer->cut_at)
                self->cuts--;
            s_forget (self, peer);
            zhashx_update (self->peers, name, fresh);
            peer = fresh;
        }
        else
            peer = NULL;
    }
    last->peer = peer;
    if (peer) {
        last->size = size;              //  At most 255: s_frame_name said so
        memcpy (last->id, data, size);
    }
}

//  The next client peer from the table's cursor on, or NULL
static zframe_t *
s_client_from (act_peers_t *self, s_peer_t *peer, const char **user)
{
    while (peer && *(const char *) zhashx_cursor (self->peers) != 'c')
        peer = (s_peer_t *) zhashx_next (self->peers);
    *user = peer? peer->user: NULL;
    return peer? peer->routing: NULL;
}

zframe_t *
act_peers_first_client (act_peers_t *self, const char **user)
{
    return s_client_from (self, (s_peer_t *) zhashx_first (self->peers), user);
}

zframe_t *
act_peers_next_client (act_peers_t *self, const char **user)
{
    return s_client_from (self, (s_peer_t *) zhashx_next (self->peers), user);
}

bool
act_peers_cut (act_peers_t *self, bool worker, const char *key, long long at,
               const char *why)
{
    char *name = s_name (worker, key);
    s_peer_t *peer = self? (s_peer_t *) zhashx_lookup (self->peers, name): NULL;
    free (name);
    if (peer && !peer->cut_at) {
        peer->cut_at = at? at: 1;
        peer->why = why;
        self->cuts++;
    }
    return peer != NULL;
}

void
act_peers_tick (act_peers_t *self, long long now)
{
    if (!self || (self->cuts == 0 && now - self->pruned < 1000))
        return;
    bool prune = now - self->pruned >= 1000;
    if (prune)
        self->pruned = now;
    zlistx_t *gone = zlistx_new ();
    for (s_peer_t *peer = zhashx_first (self->peers); peer; peer = zhashx_next (self->peers)) {
        bool same = s_same_socket (peer);
        if (same && peer->cut_at && now >= peer->cut_at) {
            //  libzmq sees end of file and drops the connection and its pipe
            if (shutdown (peer->fd, SHUT_RDWR) == 0)
                act_log (peer->why? LOG_NOTICE: LOG_DEBUG,
                         "connection of %s peer %s cut (key %s%s%s)",
                         *(const char *) zhashx_cursor (self->peers) == 'w'? "worker": "client",
                         (const char *) zhashx_cursor (self->peers) + 1,
                         peer->user? peer->user: "(none)", peer->why? ": ": "",
                         peer->why? peer->why: "");
            same = false;
        }
        if (!same && (prune || peer->cut_at))
            zlistx_add_end (gone, (void *) zhashx_cursor (self->peers));
    }
    for (const char *name = zlistx_first (gone); name; name = zlistx_next (gone)) {
        s_peer_t *peer = (s_peer_t *) zhashx_lookup (self->peers, name);
        if (peer && peer->watched && *name == 'c' && self->gone)
            self->gone (self->gone_arg, zframe_data (peer->routing),
                        zframe_size (peer->routing));
        if (peer && peer->cut_at)
            self->cuts--;
        if (peer)
            s_forget (self, peer);
        zhashx_delete (self->peers, name);
    }
    zlistx_destroy (&gone);
}

bool
act_peers_holds (act_peers_t *self, bool worker, const void *id, size_t size,
                 const char *user)
{
    if (!self || size > 255)
        return false;
    s_peer_t *peer = self->last [worker].peer;
    if (!peer || self->last [worker].size != size || memcmp (self->last [worker].id, id, size)) {
        char name [S_NAME_MAX];
        zmq_msg_t routing;
        zmq_msg_init_data (&routing, (void *) id, size, NULL, NULL);
        peer = (s_peer_t *) zhashx_lookup (self->peers, s_frame_name (worker, &routing, name));
        zmq_msg_close (&routing);
    }
    return peer && peer->user && user && streq (peer->user, user) && s_same_socket (peer);
}

void
act_peers_watched (act_peers_t *self, const void *id, size_t size)
{
    if (!self || size > 255)
        return;
    char name [S_NAME_MAX];
    zmq_msg_t routing;
    zmq_msg_init_data (&routing, (void *) id, size, NULL, NULL);
    s_peer_t *peer = (s_peer_t *) zhashx_lookup (self->peers, s_frame_name (false, &routing, name));
    zmq_msg_close (&routing);
    if (peer)
        peer->watched = true;
}

void
act_peers_on_gone (act_peers_t *self, act_peers_gone_fn *gone, void *arg)
{
    if (self) {
        self->gone = gone;
        self->gone_arg = arg;
    }
}

size_t
act_peers_size (act_peers_t *self)
{
    return self? zhashx_size (self->peers): 0;
}
