/*  =========================================================================
    act_client_link - one broker of a client: a DEALER connected to its
    endpoint, and the monitor that reports the connection's events
    (act_client.c reads them: a drop fails the requests lost with it).
    ========================================================================= */

#include "act_client_int.h"

#define S_HEARTBEAT_MS  1000    //  ZMTP heartbeat interval
#define S_SILENT_MS     10000   //  A link silent this long drops

//  Close link's socket and monitor; what libzmq still queues for the
//  broker is dropped (act_curve_dealer gives the socket a linger of 0)
static void
s_close (act_link_t *link)
{
    if (link->monitor) {
        zmq_socket_monitor (zsock_resolve (link->socket), NULL, 0);
        zsock_destroy (&link->monitor);
    }
    zsock_destroy (&link->socket);
}

void
act_client_link_destroy (void **item)
{
    act_link_t *link = (act_link_t *) *item;
    s_close (link);
    free (link->endpoint);
    free (link);
    *item = NULL;
}

//  True unless endpoint is a tcp:// one whose port (after its last ':') is
//  not a decimal number of 1 to 65535: libzmq checks only that the port
//  starts with a digit, and a connect to "tcp://host:99999" would wait for
//  a reply that cannot come rather than fail
static bool
s_port_valid (const char *endpoint)
{
    if (strncmp (endpoint, "tcp://", 6) != 0)
        return true;
    const char *colon = strrchr (endpoint, ':');
    const char *port = colon + 1;
    size_t digits = strspn (port, "0123456789");
    return colon > endpoint + 5 && digits >= 1 && digits <= 5 && !port [digits]
        && atoi (port) >= 1 && atoi (port) <= 65535;
}

//  Open link's socket to its endpoint (with CURVE when set), with its
//  monitor, and poll both; 0, or -1 when the endpoint is not valid
static int
s_open (act_client_t *self, act_link_t *link)
{
    link->socket = act_curve_dealer (&self->curve, link->endpoint);
    //  A broker that dies without closing the connection (its machine went
    //  away) is noticed by ZMTP heartbeats: the connection drops, and the
    //  watches on it are sent again when it is back. Generous: a dropped
    //  connection loses the replies in flight on it (a new connection is a
    //  new routing id), and a broker's I/O thread on a loaded machine (or
    //  under valgrind) may answer late; a restart is seen at once anyway
    //  (the monitor's disconnect)
    zsock_set_heartbeat_ivl (link->socket, S_HEARTBEAT_MS);
    zsock_set_heartbeat_timeout (link->socket, S_SILENT_MS);
    char *monitor = zsys_sprintf ("inproc://act-client-monitor-%p-%u", (void *) link,
                                  link->opened++);
    if (zmq_socket_monitor (zsock_resolve (link->socket), monitor,
                            ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED
                            | ZMQ_EVENT_CONNECT_RETRIED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
                            | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                            | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) == 0) {
        link->monitor = zsock_new (ZMQ_PAIR);
        zsock_connect (link->monitor, "%s", monitor);
    }
    zstr_free (&monitor);
    if (zsock_connect (link->socket, "%s", link->endpoint))
        return -1;
    zpoller_add (self->poller, link->socket);
    if (link->monitor)
        zpoller_add (self->poller, link->monitor);
    return 0;
}

//  Connect a link to endpoint (with CURVE when set); NULL if it is not valid
act_link_t *
act_client_link_add (act_client_t *self, const char *endpoint)
{
    if (!s_port_valid (endpoint))
        return NULL;
    for (act_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links))
        if (streq (link->endpoint, endpoint))
            return link;
    act_link_t *link = calloc (1, sizeof *link);
    link->endpoint = strdup (endpoint);
    if (s_open (self, link)) {
        void *item = link;
        act_client_link_destroy (&item);
        return NULL;
    }
    zlistx_add_end (self->links, link);
    return link;
}

int
act_client_link_reopen (act_client_t *self, act_link_t *link)
{
    zpoller_remove (self->poller, link->socket);
    if (link->monitor)
        zpoller_remove (self->poller, link->monitor);
    s_close (link);
    link->up = false;
    return s_open (self, link);
}

//  The link with a connection event not yet taken, or NULL
act_link_t *
act_client_link_with_events (act_client_t *self)
{
    for (act_link_t *link = zlistx_first (self->links); link; link = zlistx_next (self->links))
        if (link->monitor && (zsock_events (link->monitor) & ZMQ_POLLIN))
            return link;
    return NULL;
}
