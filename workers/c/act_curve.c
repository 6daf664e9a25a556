/*  =========================================================================
    act_curve - the CURVE keys of a C client or worker (private to libactd).
    ========================================================================= */

#include "act_curve_int.h"

int
act_curve_set (act_curve_t *self, const char *server_public,
               const char *certificate_file)
{
    zcert_t *cert = zcert_load (certificate_file);
    if (!cert)
        return -1;
    zcert_destroy (&self->cert);
    self->cert = cert;
    free (self->server_key);
    self->server_key = strdup (server_public);
    return 0;
}

void
act_curve_reset (act_curve_t *self)
{
    zcert_destroy (&self->cert);
    free (self->server_key);
    self->server_key = NULL;
}

zsock_t *
act_curve_dealer (act_curve_t *self)
{
    zsock_t *dealer = zsock_new (ZMQ_DEALER);
    zsock_set_linger (dealer, 0);
    if (self->cert) {
        zcert_apply (self->cert, dealer);
        zsock_set_curve_serverkey (dealer, self->server_key);
    }
    return dealer;
}
