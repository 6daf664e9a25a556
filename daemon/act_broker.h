/*  =========================================================================
    act_broker - the actd broker: ACT/1 on two ROUTER sockets (PROTOCOL.md)
    and the event loop that drives everything else.

    The loop reads each socket's messages into its protocol (act_commands
    for clients, act_wproto for workers), runs due timers, commits once
    per pass and only then sends what the pass produced (group commit).
    The path of a call (receive, validate, store, wait for dependencies,
    dispatch, receive the result, append, finish) reads top to bottom in
    act_flow.c: start there.
    ========================================================================= */

#ifndef ACT_BROKER_H_INCLUDED
#define ACT_BROKER_H_INCLUDED

#include <signal.h>
#include <czmq.h>
#include "act_settings.h"
#include "act_outbox.h"

typedef struct _act_broker_t act_broker_t;

//  Set by signal handlers, or by the loop from its signalfd; the loop
//  reads them at every pass
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

//  The signals the loop takes: SIGTERM, SIGINT (a stop), SIGHUP (a reload)
void act_broker_signals (sigset_t *mask);

//  Have the loop read fd, a signalfd of SIGTERM, SIGINT (a stop) and
//  SIGHUP (a reload), blocked in every thread; -1: none. Not owned.
void act_broker_watch_signals (act_broker_t *self, int fd);

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

//  Send what passes produce through send instead of the sockets (a test
//  or a fuzzer observing the broker; without sockets and without a
//  sender, messages are discarded).
void act_broker_set_sender (act_broker_t *self, act_outbox_send_fn *send, void *arg);

//  End a pass: run due timers, commit, and send what the pass produced.
//  Returns the number of messages sent.
size_t act_broker_pass (act_broker_t *self);

//  Apply settings that may change while running (log level, per-activity
//  settings, allowed keys) from new settings; logs what changed. All or
//  nothing: when the allowed keys do not load, nothing is applied and
//  -1 is returned with err set.
int act_broker_reload (act_broker_t *self, act_settings_t *fresh, act_err_t *err);

//  One-line summary for sd_notify STATUS= (caller frees).
char *act_broker_summary (act_broker_t *self);

#endif
