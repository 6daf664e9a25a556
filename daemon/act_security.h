/*  =========================================================================
    act_security - who may connect: CURVE with the broker's certificate,
    separate allowed keys for clients and workers, and the ZAP handler
    that applies them.

    CZMQ's zauth checks every socket against one key directory, and a
    client key must not open the worker socket, so actd answers ZAP itself
    (RFC 27), with one zcertstore per socket. Without a server key,
    sockets are plain and only this machine may reach them unless the
    configuration accepts the risk.
    ========================================================================= */

#ifndef ACT_SECURITY_H_INCLUDED
#define ACT_SECURITY_H_INCLUDED

#include "act_settings.h"

typedef struct _act_security_t act_security_t;

//  ZAP domains of the two sockets
#define ACT_ZAP_CLIENTS "actd-clients"
#define ACT_ZAP_WORKERS "actd-workers"

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

//  True when the client that sent frame may use the broker: always
//  without CURVE; with it, when the frame's User-Id is an allowed key.
bool act_security_client_allowed (act_security_t *self, zframe_t *frame);

//  Read the allowed keys again from the directories fresh names (SIGHUP).
void act_security_reload (act_security_t *self, act_settings_t *fresh);

#endif
