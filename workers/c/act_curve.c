/*  =========================================================================
    act_curve - the CURVE keys of a C client or worker (private to libactd).
    ========================================================================= */

#include "act_curve_int.h"

bool
act_curve_key_valid (const char *key)
{
    //  What libzmq takes for ZMQ_CURVE_SERVERKEY as text: 40 characters
    //  that decode as Z85 (it refuses others with EINVAL, on which CZMQ's
    //  setter asserts). zmq_z85_decode checks each character and each
    //  group's value; the length is checked first, as it reads to the end
    uint8_t decoded [32];
    return key && strlen (key) == 40 && zmq_z85_decode (decoded, key) != NULL;
}

int
act_curve_set (act_curve_t *self, const char *server_public,
               const char *certificate_file)
{
    //  Checked here, where it is kept: it is applied to each socket later,
    //  far from whoever gave it (the command line, $ACTD_SERVER_KEY, a
    //  configuration file), and a bad one aborted the program there
    if (!act_curve_key_valid (server_public))
        return -2;
    zcert_t *cert = zcert_load (certificate_file);
    if (!cert)
        return -1;
    zcert_destroy (&self->cert);
    self->cert = cert;
    free (self->server_key);
    self->server_key = strdup (server_public);
    return 0;
}

int
act_curve_from_env (act_curve_t *self)
{
    const char *server = getenv ("ACTD_SERVER_KEY");
    const char *cert = getenv ("ACTD_CERT");
    if (server && !*server)
        server = NULL;
    if (cert && !*cert)
        cert = NULL;
    if (!server && !cert)
        return 0;
    if (!server || !cert)
        return -1;
    return act_curve_set (self, server, cert);
}

void
act_curve_reset (act_curve_t *self)
{
    zcert_destroy (&self->cert);
    free (self->server_key);
    self->server_key = NULL;
}

zsock_t *
act_curve_dealer (act_curve_t *self, const char *endpoint)
{
    zsock_t *dealer = zsock_new (ZMQ_DEALER);
    zsock_set_linger (dealer, 0);
    //  Only for a bracketed address: with IPv6 on, a host name such as
    //  localhost may resolve to ::1 where the broker listens on 127.0.0.1
    if (strncmp (endpoint, "tcp://[", 7) == 0)
        zsock_set_ipv6 (dealer, 1);
    //  Sends never wait (act_curve_send): with libzmq's default high-water
    //  mark of 1000 messages, a burst to a broker that reads slowly (paused,
    //  loaded, under valgrind) had every request past the 1000th dropped
    //  with EAGAIN, its caller left waiting for a reply that could not come.
    //  The caller holds each request until it is answered anyway, so the
    //  queue costs at most as much again, and it drains in order
    zsock_set_sndhwm (dealer, 0);
    if (self->cert) {
        zcert_apply (self->cert, dealer);
        zsock_set_curve_serverkey (dealer, self->server_key);
    }
    return dealer;
}

int
act_curve_send (zsock_t *dealer, zmsg_t **msg_p)
{
    zmsg_t *msg = *msg_p;
    int rc = 0;
    size_t count = zmsg_size (msg);
    for (size_t i = 0; i < count && rc == 0; i++) {
        zframe_t *frame = zmsg_pop (msg);
        rc = zframe_send (&frame, dealer, ZFRAME_DONTWAIT | (i + 1 < count? ZFRAME_MORE: 0));
        zframe_destroy (&frame);
    }
    zmsg_destroy (msg_p);
    return rc;
}
