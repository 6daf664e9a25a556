/*  =========================================================================
    act_wproto - the worker socket's protocols (see act_wproto.h).
    ========================================================================= */

#include "act_wproto.h"
#include "act_frame.h"

struct _act_wproto_t {
    act_settings_t *settings;   //  Heartbeat and liveness (borrowed)
    act_pool_t *pool;           //  Workers by routing id (borrowed)
    act_flow_t *flow;           //  Where answers go (borrowed)
    act_outbox_t *outbox;       //  DISCONNECT and HEARTBEAT (borrowed)
    act_security_t *security;   //  What each key may serve (borrowed), or NULL
};

act_wproto_t *
act_wproto_new (act_settings_t *settings, act_pool_t *pool, act_flow_t *flow,
                act_outbox_t *outbox)
{
    act_wproto_t *self = (act_wproto_t *) calloc (1, sizeof (act_wproto_t));
    if (self)
        *self = (act_wproto_t) { settings, pool, flow, outbox, NULL };
    return self;
}

void
act_wproto_set_security (act_wproto_t *self, act_security_t *security)
{
    self->security = security;
}

void
act_wproto_destroy (act_wproto_t **self_p)
{
    if (self_p && *self_p) {
        free (*self_p);
        *self_p = NULL;
    }
}


//  worker is gone (why): the tools it declared give way to those of the
//  workers left, and its tasks go back
static void
s_lost (act_wproto_t *self, act_worker_t *worker, const char *why)
{
    act_tools_left (act_flow_tools (self->flow), worker);
    act_flow_worker_lost (self->flow, worker, why);
}

//  Refuse a peer: log, forget it if it was registered (its tasks go
//  back), and tell it to DISCONNECT in its own protocol. problem is a
//  static text, or err's message when err has a code (a READY refused).
static void
s_refuse (act_wproto_t *self, act_worker_t *worker, zframe_t *identity, const char *key,
          act_proto_t protocol, bool envelope, const char *problem, const act_err_t *err)
{
    //  A peer that keeps at it (HEARTBEATs without READY) is logged once
    //  in a while, with a count: per kind of problem, not per text (a
    //  READY's error names the bad value: each would be a kind of its own)
    char reason [64];
    if (err && err->code)
        snprintf (reason, sizeof reason, "READY refused: %s", err->code);
    act_log_peer (LOG_WARNING, key, err && err->code? reason: problem,
                  "worker %s: %s; disconnecting it", worker? worker->name: key, problem);
    if (worker)
        s_lost (self, worker, problem);
    act_pool_disconnect (self->outbox, identity, protocol, envelope, problem);
}

//  READY's body: {"activities": [...], "capacity"?, "name"?, "lang"?,
//  "tools"?} (tools are checked by act_tools_declare), its activities
//  no more than max_worker_activities (counted before they are read)
static int
s_ready_body (act_wproto_t *self, json_t *body, json_t **names, size_t *capacity,
              const char **name, const char **lang, act_err_t *err)
{
    *names = json_object_get (body, "activities");
    if (!json_is_object (body) || !json_is_array (*names) || json_array_size (*names) == 0)
        return act_err_set (err, ACT_E_BAD_ARGUMENT,
                            "READY needs {\"activities\": [names], \"capacity\": N}");
    if (act_pool_ready_names (self->pool, json_array_size (*names), err))
        return -1;
    size_t index;
    json_t *item;
    json_array_foreach (*names, index, item)
        if (!json_is_string (item) || json_string_length (item) == 0
        ||  json_string_length (item) > ACT_MAX_TOOL)
            return act_err_set (err, ACT_E_BAD_ARGUMENT,
                                "activity names are strings of 1 to %d bytes", ACT_MAX_TOOL);
    json_t *value = json_object_get (body, "capacity");
    *capacity = 1;
    if (value) {
        if (!json_is_integer (value) || json_integer_value (value) < 1
        ||  json_integer_value (value) > 100000)
            return act_err_set (err, ACT_E_BAD_ARGUMENT, "capacity is an integer from 1 to 100000");
        *capacity = (size_t) json_integer_value (value);
    }
    value = json_object_get (body, "name");
    *name = json_string_value (value);
    if (value && (!*name || strlen (*name) > 256))
        return act_err_set (err, ACT_E_BAD_ARGUMENT, "name is a string of up to 256 bytes");
    value = json_object_get (body, "lang");
    *lang = json_string_value (value);
    if (value && (!*lang || strlen (*lang) > 64))
        return act_err_set (err, ACT_E_BAD_ARGUMENT, "lang is a string of up to 64 bytes");
    return 0;
}

//  The problem (err's text) when the key the worker sent frame with may
//  not serve every activity of names, else NULL with *patterns, what it
//  may serve (the worker keeps them to be checked at each dispatch)
static const char *
s_may_serve (act_wproto_t *self, zmq_msg_t *frame, const json_t *names,
             const zlistx_t **patterns, act_err_t *err)
{
    bool allowed;
    *patterns = act_security_worker_patterns (self->security, act_part_meta (frame, "User-Id"),
                                              &allowed);
    if (!allowed)
        return act_err_set (err, ACT_E_UNAUTHORIZED, "its key is no longer a worker key"),
               err->message;
    size_t index;
    json_t *item;
    json_array_foreach (names, index, item)
        if (!act_security_patterns_match (*patterns, json_string_value (item))) {
            act_err_set (err, ACT_E_UNAUTHORIZED, "activity %.128s is not allowed for this "
                         "worker's key (see its group's activities)",
                         json_string_value (item));
            return err->message;
        }
    return NULL;
}

//  True when frame came with the CURVE key worker registered with (any
//  frame when it registered with none: without CURVE there are no keys)
static bool
s_same_key (act_worker_t *worker, zmq_msg_t *frame)
{
    if (!worker->user)
        return true;
    const char *user = act_part_meta (frame, "User-Id");
    return user && streq (user, worker->user);
}

//  Note the CURVE key worker sent frame with (checked again on reload)
static void
s_set_user (act_worker_t *worker, zmq_msg_t *frame)
{
    const char *user = act_part_meta (frame, "User-Id");
    worker->user = user && *user? strdup (user): NULL;
}

//  ACT/1 READY (frame its one frame, NULL when it had another count):
//  register the worker and give it calls. Returns the problem (a static
//  or err's text) when it is refused, else NULL.
static const char *
s_actw_ready (act_wproto_t *self, act_worker_t *worker, zframe_t *identity,
              const char *key, zmq_msg_t *frame, act_err_t *err)
{
    if (worker)
        return "READY from a worker already registered";
    if (!frame)
        return "READY takes one frame";
    //  As every frame (docs/protocol.md section 1): libzmq reads up to
    //  four times as much, which READY took as it came
    if (act_part_size (frame) > (size_t) self->settings->max_message_bytes)
        return act_err_set (err, ACT_E_TOO_LARGE, "READY is %zu bytes, over "
                            "max_message_bytes (%lld)", act_part_size (frame),
                            (long long) self->settings->max_message_bytes), err->message;
    json_t *body = act_json_parse (act_part_data (frame), act_part_size (frame), err);
    json_t *names = NULL;
    size_t capacity = 1;
    const char *name = NULL, *lang = NULL;
    const zlistx_t *patterns = NULL;
    if (body && s_ready_body (self, body, &names, &capacity, &name, &lang, err) == 0
    &&  !s_may_serve (self, frame, names, &patterns, err)
    &&  act_pool_room (self->pool, names, err) == 0
    &&  act_tools_declare (act_flow_tools (self->flow), names, json_object_get (body, "tools"),
                           name? name: key, err) == 0) {
        worker = act_pool_join (self->pool, identity, key, ACT_PROTO_ACTW, false, names,
                                capacity, name, lang);
        worker->patterns = patterns;
        worker->tools = json_incref (json_object_get (body, "tools"));
        s_set_user (worker, frame);
        act_flow_worker_ready (self->flow, worker);
    }
    json_decref (body);
    return err->code? err->message: NULL;
}

//  A message about task, which the worker does not hold. PROTOCOL.md
//  section 2 keeps the first RESULT or FAIL of a task and ignores later
//  ones: an answer (ACT/1 RESULT or FAIL, a Majordomo reply) for a task
//  the worker may have been given is a repeat, ignored however many
//  answers ago the first one came. Returns problem (the worker is
//  refused) for the rest, which the section answers with DISCONNECT:
//  PROGRESS (18/MDP PARTIAL), and an answer for a task id it was never
//  given.
static const char *
s_not_held (act_worker_t *worker, const char *task, bool answer, const char *problem)
{
    if (!answer || !act_worker_given (worker, task))
        return problem;
    act_log (LOG_DEBUG, "worker %s: repeated answer for task %s ignored", worker->name, task);
    return NULL;
}

//  The ACT/1 worker sub-protocol; msg holds [command][args...] from frame
//  at on. Returns the problem when the peer must be refused, else NULL.
static const char *
s_actw (act_wproto_t *self, act_worker_t *worker, act_msg_t *msg, size_t at,
        const char *key, act_err_t *err)
{
    zmq_msg_t *command = act_msg_part (msg, at);
    const char *problem = NULL;
    size_t nargs = msg->size - at - 1;
    bool result = act_part_is (command, "RESULT");
    char *task = NULL;
    if (act_part_is (command, "READY"))
        problem = s_actw_ready (self, worker, act_msg_routing (msg), key,
                                nargs == 1? act_msg_part (msg, at + 1): NULL, err);
    else
    if (!worker)
        problem = "not registered: send READY first";
    else
    if (act_part_is (command, "HEARTBEAT"))
        ;                       //  Being heard is all it does
    else
    if (act_part_is (command, "DISCONNECT"))
        s_lost (self, worker, "it disconnected");
    else
    if (!result && !act_part_is (command, "FAIL") && !act_part_is (command, "PROGRESS"))
        problem = "unknown command";
    else
    if (nargs < 2 || nargs > (result? 3u: 2u))
        problem = "wrong number of frames";
    else
    if (!(task = act_part_string (act_msg_part (msg, at + 1))))
        problem = "a task it does not hold";
    else
    if (!zhashx_lookup (worker->tasks, task))
        problem = s_not_held (worker, task, !act_part_is (command, "PROGRESS"),
                              "a task it does not hold");
    else {
        zmq_msg_t *body = act_msg_part (msg, at + 2);
        if (result)
            act_flow_result (self->flow, worker, task, body,
                             nargs == 3? act_msg_part (msg, at + 3): NULL);
        else
        if (act_part_is (command, "FAIL"))
            act_flow_fail (self->flow, worker, task, body);
        else
            act_flow_progress (self->flow, worker, task, body);
    }
    free (task);
    return problem;
}

//  A Majordomo reply, [address][empty][body] from frame at on: REPLY
//  (0.1), PARTIAL or FINAL (0.2). Returns the problem when refused, else
//  NULL.
static const char *
s_mdp_reply (act_wproto_t *self, act_worker_t *worker, act_msg_t *msg, size_t at,
             bool partial)
{
    const char *problem = NULL;
    char *task = act_part_string (act_msg_part (msg, at));
    zmq_msg_t *empty = act_msg_part (msg, at + 1);
    zmq_msg_t *body = act_msg_part (msg, at + 2);
    if (!task || !empty || zmq_msg_size (empty) || !body)
        problem = "malformed reply";
    else
    if (!zhashx_lookup (worker->tasks, task))
        problem = s_not_held (worker, task, !partial, "a reply for a task it does not hold");
    else
    if (partial)
        act_flow_progress (self->flow, worker, task, body);
    else
        act_flow_result (self->flow, worker, task, body, NULL);
    free (task);
    return problem;
}

//  Majordomo workers (7/MDP and 18/MDP); msg holds [command byte][args]
//  from frame at on. Returns the problem when refused, else NULL.
static const char *
s_mdp (act_wproto_t *self, act_worker_t *worker, act_msg_t *msg, size_t at, const char *key,
       act_proto_t protocol, bool envelope, act_err_t *err)
{
    zmq_msg_t *command = act_msg_part (msg, at);
    byte code = command && zmq_msg_size (command) == 1?
                ((const byte *) zmq_msg_data (command)) [0]: 0;
    zmq_msg_t *service_frame = act_msg_part (msg, at + 1);
    bool v1 = protocol == ACT_PROTO_MDP1;
    const char *problem = NULL;
    if (code == ACT_MDP_READY) {
        char *service = act_part_string (service_frame);
        const zlistx_t *patterns = NULL;
        json_t *names = service? json_pack ("[s]", service): NULL;
        //  names is NULL when the name is not UTF-8 (jansson refuses it):
        //  such a worker joined with no activity at all
        if (worker || !service || !*service || strlen (service) > ACT_MAX_TOOL || !names)
            problem = worker? "READY from a worker already registered": "bad service name";
        else
        if (!(problem = s_may_serve (self, service_frame, names, &patterns, err))
        &&  act_pool_room (self->pool, names, err))
            problem = err->message;
        else
        if (!problem) {
            act_err_t none = { 0 };     //  Names alone cannot be refused
            act_tools_declare (act_flow_tools (self->flow), names, NULL, service, &none);
            worker = act_pool_join (self->pool, act_msg_routing (msg), key, protocol,
                                    envelope, names, 1,
                                    NULL, v1? "mdp/0.1": "mdp/0.2");
            worker->patterns = patterns;
            s_set_user (worker, service_frame);
            act_flow_worker_ready (self->flow, worker);
        }
        json_decref (names);
        free (service);
    }
    else
    if (!worker)
        problem = "not registered: send READY first";
    else
    if (code == (v1? ACT_MDP1_HEARTBEAT: ACT_MDP2_HEARTBEAT))
        ;
    else
    if (code == (v1? ACT_MDP1_DISCONNECT: ACT_MDP2_DISCONNECT))
        s_lost (self, worker, "it disconnected");
    else
    if (code == ACT_MDP1_REPLY || (!v1 && code == ACT_MDP2_FINAL))
        problem = s_mdp_reply (self, worker, msg, at + 1, !v1 && code == ACT_MDP2_PARTIAL);
    else
        problem = "unknown command";
    return problem;
}

void
act_wproto_message (act_wproto_t *self, act_msg_t *msg)
{
    zmq_msg_t *identity = act_msg_part (msg, 0);
    if (!identity)
        return;
    //  The pool's key, on the stack: a routing id is at most 255 bytes
    char key [2 * 255 + 1];
    size_t size = zmq_msg_size (identity);
    if (size > 255)
        return;
    act_hex_write (key, zmq_msg_data (identity), size);
    act_worker_t *worker = act_pool_worker (self->pool, key);
    if (worker && !s_same_key (worker, act_msg_part (msg, 1))) {
        //  Another key took the routing id of a registered worker whose
        //  connection dropped: that worker is gone (its tasks would go to
        //  this peer), and this peer may serve only what its own READY
        //  allows, once it has sent one on a routing id of its own
        s_refuse (self, worker, act_msg_routing (msg), key, worker->protocol,
                  worker->envelope, "its routing id was registered with another key", NULL);
        return;
    }
    if (worker)
        worker->heard = act_clock_ms ();
    bool throttled = worker && worker->throttled;
    //  Majordomo workers may put an empty frame first (PROTOCOL.md section
    //  2): it is read as if absent and sent back to them
    zmq_msg_t *first = act_msg_part (msg, 1);
    bool envelope = first && zmq_msg_size (first) == 0;
    zmq_msg_t *header = envelope? act_msg_part (msg, 2): first;
    size_t rest = msg->size - 1;    //  Frames after the routing id
    act_proto_t protocol = ACT_PROTO_ACTW;
    const char *problem = NULL;
    act_err_t err = { 0 };
    if (!envelope && act_part_is (header, ACT_WORKER_HEADER) && rest > 1)
        problem = s_actw (self, worker, msg, 2, key, &err);
    else
    if ((act_part_is (header, ACT_MDPW01) || act_part_is (header, ACT_MDPW02))
    &&  rest > (envelope? 2u: 1u)) {
        protocol = act_part_is (header, ACT_MDPW02)? ACT_PROTO_MDP2: ACT_PROTO_MDP1;
        problem = s_mdp (self, worker, msg, envelope? 3: 2, key, protocol, envelope, &err);
    }
    else
    if (act_part_is (header, ACT_WORKER_HEADER))
        //  ACT/1 framed wrong: told so (PROTOCOL.md section 2: a message
        //  other than READY gets DISCONNECT), in the same framing, or the
        //  worker would wait for ever. An empty frame first is a REQ
        //  socket's, which cannot take several TASKs.
        problem = envelope? "an ACT/1 message has no empty frame first (a REQ socket: "
                            "use DEALER)": "a message with no command";
    else
    if (act_part_is (header, ACT_MDPW01) || act_part_is (header, ACT_MDPW02)) {
        protocol = act_part_is (header, ACT_MDPW02)? ACT_PROTO_MDP2: ACT_PROTO_MDP1;
        problem = "a message with no command";
    }
    else {
        act_log_peer (LOG_INFO, key, "message without a worker protocol header",
                      "message without a worker protocol header from %s dropped", key);
        protocol = (act_proto_t) -1;
    }
    if (problem)
        s_refuse (self, act_pool_worker (self->pool, key), act_msg_routing (msg), key,
                  protocol, envelope, problem, &err);
    //  A worker that stopped reading its tasks gets more once it has read
    //  them: any message of its (a heartbeat at least) looks again
    worker = throttled? act_pool_worker (self->pool, key): NULL;
    if (worker && act_worker_unthrottle (worker))
        act_flow_worker_ready (self->flow, worker);
}

//  How long worker may stay silent before it is lost. A Majordomo worker
//  cannot heartbeat while it handles a request: while it holds a task
//  whose attempt runs, it is not judged (the call's _timeout bounds the
//  task instead; once that attempt is over, a worker still silent is
//  judged again, or a hung one would hold its slot for ever); idle, it is
//  judged with the longer of the two heartbeat intervals, as its own is
//  often longer than actd's (2500 ms in the ZeroMQ guide)
static long long
s_liveness_ms (act_wproto_t *self, act_worker_t *worker)
{
    long long interval = self->settings->heartbeat_ms;
    if (worker->protocol != ACT_PROTO_ACTW) {
        if (act_flow_busy (self->flow, worker))
            return LLONG_MAX;
        if (self->settings->mdp_heartbeat_ms > interval)
            interval = self->settings->mdp_heartbeat_ms;
    }
    return interval * self->settings->liveness;
}

void
act_wproto_resume (act_wproto_t *self, long long now, long long paused)
{
    //  Short pauses (a long pass with a small heartbeat_ms) are routine
    bool long_pause = paused > self->settings->heartbeat_ms * self->settings->liveness;
    act_log (long_pause? LOG_NOTICE: LOG_DEBUG, "actd was paused for %lld ms (over "
             "heartbeat_ms %lld): %zu workers get a fresh liveness window", paused,
             self->settings->heartbeat_ms, act_pool_size (self->pool));
    for (act_worker_t *worker = act_pool_first (self->pool); worker;
         worker = act_pool_next (self->pool))
        worker->heard = now;
}

void
act_wproto_heartbeat (act_wproto_t *self, long long now, bool judge)
{
    long long interval = self->settings->heartbeat_ms;
    zlistx_t *dead = zlistx_new ();
    zlistx_t *reading = NULL;
    for (act_worker_t *worker = act_pool_first (self->pool); worker;
         worker = act_pool_next (self->pool)) {
        if (judge && now - worker->heard > s_liveness_ms (self, worker))
            zlistx_add_end (dead, worker);
        else {
            if (now - worker->sent >= interval)
                act_worker_send (self->outbox, worker, "HEARTBEAT");
            //  A worker that stopped reading its tasks and has read them
            //  since gets more now, without waiting for a message of its
            if (worker->throttled && act_worker_unthrottle (worker)) {
                reading = reading? reading: zlistx_new ();
                zlistx_add_end (reading, worker);
            }
        }
    }
    //  Dispatching walks the pool too: after the walk above
    for (act_worker_t *worker = reading? zlistx_first (reading): NULL; worker;
         worker = zlistx_next (reading))
        act_flow_worker_ready (self->flow, worker);
    zlistx_destroy (&reading);
    //  Every dead worker leaves its activities before any task goes back:
    //  a task given back must not go to a worker judged dead in the same
    //  round (it took an attempt, and the call could end worker_lost with
    //  a live worker idle)
    for (act_worker_t *worker = zlistx_first (dead); worker; worker = zlistx_next (dead))
        act_pool_detach (self->pool, worker);
    for (act_worker_t *worker = zlistx_first (dead); worker; worker = zlistx_next (dead)) {
        zframe_t *identity = zframe_dup (worker->identity);
        act_proto_t protocol = worker->protocol;
        bool envelope = worker->envelope;
        s_lost (self, worker, "silent for too long");
        //  If it is still there, it must start again
        act_pool_disconnect (self->outbox, identity, protocol, envelope, "silent for too long");
        zframe_destroy (&identity);
    }
    zlistx_destroy (&dead);
}

void
act_wproto_unreachable (act_wproto_t *self, const void *id, size_t size)
{
    char key [2 * 255 + 1];
    if (size > 255)
        return;
    act_hex_write (key, id, size);
    act_worker_t *worker = act_pool_worker (self->pool, key);
    //  No DISCONNECT: there is no route to send it by. A connection that
    //  comes back on the routing id is told to send READY first
    if (worker)
        s_lost (self, worker, "unreachable: a message to it found no connection");
}

//  After the keys were reloaded: a connected worker whose key is gone, or
//  may no longer serve one of its activities, is lost (its tasks go to
//  other workers), told to DISCONNECT and cut off; the others take their
//  keys' new patterns.
void
act_wproto_revoke (act_wproto_t *self)
{
    zlistx_t *revoked = zlistx_new ();
    for (act_worker_t *worker = act_pool_first (self->pool); worker;
         worker = act_pool_next (self->pool)) {
        bool allowed;
        const zlistx_t *patterns = act_security_worker_patterns (self->security, worker->user,
                                                                 &allowed);
        for (act_activity_t *activity = zlistx_first (worker->activities);
             activity && allowed; activity = zlistx_next (worker->activities))
            allowed = act_security_patterns_match (patterns, activity->name);
        worker->patterns = patterns;
        if (!allowed)
            zlistx_add_end (revoked, worker);
    }
    for (act_worker_t *worker = zlistx_first (revoked); worker; worker = zlistx_next (revoked)) {
        zframe_t *identity = zframe_dup (worker->identity);
        char *key = strdup (worker->key);
        act_proto_t protocol = worker->protocol;
        bool envelope = worker->envelope;
        act_log (LOG_NOTICE, "reload: worker %s (key %s) may no longer serve its "
                 "activities: disconnecting it", worker->name,
                 worker->user? worker->user: "(none)");
        s_lost (self, worker, "its key was revoked");
        act_pool_disconnect (self->outbox, identity, protocol, envelope, "key revoked");
        act_security_cut_worker (self->security, key);
        zframe_destroy (&identity);
        free (key);
    }
    zlistx_destroy (&revoked);
    act_flow_settle (self->flow);
}
