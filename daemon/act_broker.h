/*  =========================================================================
    act_broker - the actd broker: ACT/1 on two ROUTER sockets (PROTOCOL.md),
    calls through their life (SEMANTICS.md section 7), and the store.

    The path of a call, in the order of the code: receive, validate, store,
    wait for dependencies, dispatch, receive the result, append, commit,
    reply. The event loop only hands socket events and timers to those
    steps, and commits once per pass before anything leaves (group commit).
    ========================================================================= */

#ifndef ACT_BROKER_H_INCLUDED
#define ACT_BROKER_H_INCLUDED

#include <signal.h>
#include <czmq.h>
#include "act_settings.h"

typedef struct _act_broker_t act_broker_t;

//  Set by signal handlers; the loop reads them at every pass
extern volatile sig_atomic_t act_broker_stop_requested;
extern volatile sig_atomic_t act_broker_reload_requested;

//  Create a broker on settings (which it keeps a reference to; the caller
//  keeps ownership): open the store, bind both sockets, recover the calls
//  that had not ended. With bind false, no sockets are made and messages
//  are fed by act_broker_client_message / act_broker_worker_message (the
//  fuzzers). Returns NULL with err saying why it cannot start.
act_broker_t *act_broker_new (act_settings_t *settings, bool bind, act_err_t *err);

//  Destroy the broker and null the pointer; safe on NULL.
void act_broker_destroy (act_broker_t **self_p);

//  Called by the loop when SIGHUP came (act_broker_reload_requested)
typedef void (act_broker_reload_fn) (act_broker_t *self, act_settings_t *settings);

//  Run the event loop until a stop is requested and running tasks have
//  finished or the grace period is over. Returns 0 after a clean stop.
int act_broker_run (act_broker_t *self, act_broker_reload_fn *reload,
                    act_settings_t *settings);

//  Handle one message as if it came from the client (worker) socket. The
//  first frame is the peer's routing id. Destroys the message.
void act_broker_client_message (act_broker_t *self, zmsg_t **msg_p);
void act_broker_worker_message (act_broker_t *self, zmsg_t **msg_p);

//  End a pass: run due timers, commit, and send (or, without sockets,
//  discard) what the pass produced. Returns the number of messages sent.
size_t act_broker_pass (act_broker_t *self);

//  Apply settings that may change while running (log level, per-activity
//  settings, allowed keys) from new settings; logs what changed.
void act_broker_reload (act_broker_t *self, act_settings_t *fresh);

//  One-line summary for sd_notify STATUS= (caller frees).
char *act_broker_summary (act_broker_t *self);

#endif
