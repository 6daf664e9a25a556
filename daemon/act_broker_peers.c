/*  =========================================================================
    act_broker_peers - the broker and its peers' connections: sending to
    them, and what follows when one is gone (a client's watches and pages
    end, a worker is lost), and when a worker is judged silent.
    ========================================================================= */

#include "act_broker_int.h"

//  The sockets' sender: a message that cannot go at once (a client gone,
//  a full pipe: the sockets never block) is dropped
bool
act_broker_send_sockets (void *arg, bool to_worker, zmq_msg_t *parts, size_t nparts)
{
    act_broker_t *self = (act_broker_t *) arg;
    void *socket = zsock_resolve (to_worker? self->workers: self->clients);
    for (size_t part = 0; part < nparts; part++) {
        int flags = part + 1 < nparts? ZMQ_SNDMORE: 0;
        int rc = zmq_msg_send (&parts [part], socket, flags);
        while (rc < 0 && zmq_errno () == EINTR)
            rc = zmq_msg_send (&parts [part], socket, flags);
        //  A client the socket cannot route to is gone: its watches end
        //  (the routing id is the first frame, untouched when it failed)
        //  and its HISTORY pages are not built
        int error = rc < 0? zmq_errno (): 0;
        //  A worker the socket cannot route to is lost at the next pass
        //  (not here: losing it queues tasks, in the middle of a flush)
        if (error == EHOSTUNREACH && part == 0 && to_worker)
            zlistx_add_end (self->unreachable, zframe_new (zmq_msg_data (&parts [0]),
                                                           zmq_msg_size (&parts [0])));
        if (error == EHOSTUNREACH && part == 0 && !to_worker) {
            act_watches_drop_client (self->watches, zmq_msg_data (&parts [0]),
                                     zmq_msg_size (&parts [0]));
            act_pages_drop_client (self->pages, zmq_msg_data (&parts [0]),
                                   zmq_msg_size (&parts [0]));
        }
        if (rc < 0) {
            act_log (LOG_DEBUG, "a message to a %s was not sent: %s",
                     to_worker? "worker": "client", zmq_strerror (error));
            return false;
        }
    }
    return true;
}

//  After a flush: cut the connections of the clients that went past
//  max_client_bytes (libzmq then frees what it held for them); their
//  watches end, their HISTORY pages are not built
void
act_broker_cut_clients (act_broker_t *self)
{
    zframe_t *client;
    while ((client = act_outbox_next_cut (self->outbox))) {
        char *key = zframe_strhex (client);
        if (!act_security_cut_client (self->security, key))
            act_log (LOG_DEBUG, "client %s: connection not known, not cut", key);
        act_watches_drop_client (self->watches, zframe_data (client), zframe_size (client));
        act_pages_drop_client (self->pages, zframe_data (client), zframe_size (client));
        zstr_free (&key);
        zframe_destroy (&client);
    }
}

//  A watched client's connection ended (closed, or its routing id taken
//  by a new one): its watches end and its HISTORY pages are not built,
//  as when the socket cannot route to it
void
act_broker_client_gone (void *arg, const void *id, size_t size)
{
    act_broker_t *self = (act_broker_t *) arg;
    act_watches_drop_client (self->watches, id, size);
    act_pages_drop_client (self->pages, id, size);
}

//  The workers a message found no route to since the last pass are lost
void
act_broker_lose_unreachable (act_broker_t *self)
{
    zframe_t *worker;
    while ((worker = (zframe_t *) zlistx_detach (self->unreachable, NULL))) {
        act_wproto_unreachable (self->wproto, zframe_data (worker), zframe_size (worker));
        zframe_destroy (&worker);
    }
}

//  Workers' liveness: a pass that comes far later than the loop allows
//  (actd stopped, or a pass that ran long) means no worker could be
//  heard, so each gets a fresh window. A worker is judged when the worker
//  socket was read empty (what it sent may be waiting there), or when the
//  socket has not been empty for a whole liveness window: then one worker
//  sends faster than the loop reads (a PROGRESS flood), and the socket's
//  fair queueing has read every other worker's messages meanwhile; judged
//  only on an empty socket, no silent worker was ever found lost while
//  the flood lasted. The heartbeats go out either way, so workers do not
//  judge actd lost.
void
act_broker_liveness (act_broker_t *self, long long now)
{
    bool judge = !self->workers_waiting
              || now - self->workers_drained > self->settings->heartbeat_ms
                                               * self->settings->liveness;
    if (self->passed && now - self->passed > self->settings->heartbeat_ms)
        act_wproto_resume (self->wproto, now, now - self->passed);
    if (now >= self->heartbeat_at) {
        //  While a commit is in flight the outbox waits for it: heartbeats
        //  go at once (they promise no stored state)
        if (self->committer && act_committer_busy (self->committer)) {
            act_pool_heartbeat (self->pool, self->beats, now, self->settings->heartbeat_ms);
            act_outbox_flush (self->beats, self->send, self->send_arg);
        }
        act_wproto_heartbeat (self->wproto, now, judge);
        act_flow_settle (self->flow);
        self->heartbeat_at = now + (self->settings->heartbeat_ms + 3) / 4;
    }
}
