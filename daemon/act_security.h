/*  =========================================================================
    act_security - who may connect and what each peer may do: CURVE with
    the broker's certificate, client keys in tenants (a context prefix and
    rights) or with every right, worker keys in groups (the activities
    they may serve) or serving anything, the ZAP handler that admits them,
    revocation on reload, and the connections behind routing ids (with
    CURVE or without), to cut one off.

    CZMQ's zauth checks every socket against one key directory, and a
    client key must not open the worker socket, so actd answers ZAP itself
    (RFC 27), with one key table per socket. Without a server key,
    sockets are plain, every peer has every right, and only this machine
    may reach them unless the configuration accepts the risk.
    ========================================================================= */

#ifndef ACT_SECURITY_H_INCLUDED
#define ACT_SECURITY_H_INCLUDED

#include "act_settings.h"
#include "act_peers.h"
#include "act_inbox.h"

typedef struct _act_security_t act_security_t;

//  ZAP domains of the two sockets
#define ACT_ZAP_CLIENTS "actd-clients"
#define ACT_ZAP_WORKERS "actd-workers"

//  What a client may do
typedef struct {
    int rights;                 //  ACT_RIGHT_* bits (ACT_RIGHT_NONE always)
    const char *prefix;         //  Contexts it reaches start with it (all
                                //  with ACT_RIGHT_ADMIN); borrowed
    const char *tenant;         //  Its tenant's name, or NULL
} act_grant_t;

//  Security as settings (borrowed) say: load the certificate and the
//  allowed keys and start the ZAP handler, or (without a server key) check
//  that the endpoints are local. Returns NULL with err saying why not.
act_security_t *act_security_new (act_settings_t *settings, act_err_t *err);

//  Destroy it and null the pointer; safe on NULL.
void act_security_destroy (act_security_t **self_p);

//  Make socket, before it binds, a CURVE server in ZAP domain (nothing
//  without CURVE).
void act_security_apply (act_security_t *self, zsock_t *socket, const char *domain);

//  The ZAP handler's socket to poll, or NULL without CURVE.
zsock_t *act_security_zap (act_security_t *self);

//  Answer one ZAP request waiting on the handler's socket.
void act_security_handle (act_security_t *self);

//  What the client that sent frame may do, in *grant: every right
//  without CURVE (or without security); with it, its tenant's, or every
//  right for a key of security/client_keys. False (nothing) when its key
//  is not allowed.
bool act_security_client_grant (act_security_t *self, zmq_msg_t *frame, act_grant_t *grant);

//  True when grant reaches context (its prefix, or admin).
bool act_grant_reaches (const act_grant_t *grant, const char *context);

//  The activity patterns worker key user may serve (borrowed, valid until
//  the next reload): NULL for any. *allowed is false when the key is no
//  worker key. Without CURVE: NULL, allowed.
const zlistx_t *act_security_worker_patterns (act_security_t *self, const char *user,
                                              bool *allowed);

//  True when activity matches one of patterns (fnmatch), or patterns is
//  NULL.
bool act_security_patterns_match (const zlistx_t *patterns, const char *activity);

//  Note the peer behind a message (msg: its routing id, then frames the
//  peer sent), for revocation.
void act_security_seen (act_security_t *self, bool worker, act_msg_t *msg);

//  A message read ahead, to be handled later (after a commit): keep in it
//  the socket it came on, which act_security_seen then takes for it
//  rather than what its descriptor number names by then (a newcomer's
//  socket, maybe, on the same routing id).
void act_security_stat (act_security_t *self, act_msg_t *msg);

//  Cut the connection of the worker with routing id key (hex) shortly,
//  once what was queued for it (its DISCONNECT) has gone.
void act_security_cut_worker (act_security_t *self, const char *key);

//  Cut the connection of the client with routing id key (hex) at the
//  next tick (the caller logged why). False when its connection is not
//  known (a libzmq that does not name descriptors).
bool act_security_cut_client (act_security_t *self, const char *key);

//  True when a reply owed to the client that authenticated with key (Z85)
//  may go to routing id (size bytes): the connection behind it now is one
//  that spoke with that key and is still open (act_peers_holds). Every
//  reply to a CURVE client is sent only then, so a peer that took a left
//  client's routing id gets nothing of its requests, calls or watches;
//  and (context not NULL: a DONE or EVENT) a key revoked since (a
//  reload), or whose grant no longer reaches context (moved to another
//  tenant, or its tenant's prefix narrowed), gets nothing more of it,
//  even on its own connection.
bool act_security_client_holds (act_security_t *self, const void *id, size_t size,
                                const char *key, const char *context);

//  Cut the connections due; call it every pass.
void act_security_tick (act_security_t *self, long long now);

//  The client with routing id client opened a watch (act_peers_watched).
void act_security_watched (act_security_t *self, zframe_t *client);

//  Call gone (with arg) when a watched client's connection ends
//  (act_peers_on_gone).
void act_security_on_client_gone (act_security_t *self, act_peers_gone_fn *gone, void *arg);

//  Read the allowed keys, tenants and groups again from fresh (SIGHUP;
//  fresh gets the old ones). Connected clients whose rights shrank are
//  listed for act_security_revoked_client and their connections cut; the
//  caller checks workers (act_security_worker_patterns). Returns 0, or
//  -1 with err set when the keys do not load: then nothing changed.
//  Without CURVE nothing is read: tenants or groups in fresh are said, at
//  warning, to be ignored.
int act_security_reload (act_security_t *self, act_settings_t *fresh, act_err_t *err);

//  The routing id of the next client revoked by the last reload (the
//  caller ends its watches and destroys it), or NULL.
zframe_t *act_security_revoked_client (act_security_t *self);

//  A ROUTER bound to endpoint behind security (CURVE with ZAP domain when
//  on), with the broker's socket options, and an ipc:// socket file given
//  server/ipc_mode. NULL with err when it cannot bind.
zsock_t *act_security_bind (act_security_t *self, act_settings_t *settings, const char *endpoint,
                            const char *domain, act_err_t *err);

//  Combine a CONTEXTS prefix (*prefix, NULL: none) with grant's: the
//  longer of the two when one starts with the other (replacing *prefix).
//  False when they differ, so that no context of the tenant can match.
bool act_security_prefix (const act_grant_t *grant, char **prefix);

#endif
