/*  =========================================================================
    act_security - CURVE, allowed keys and ZAP (see act_security.h).
    ========================================================================= */

#include "act_security.h"

struct _act_security_t {
    act_settings_t *settings;   //  Key files and directories (borrowed)
    zcert_t *server_cert;       //  The broker's keypair, or NULL: no CURVE
    zsock_t *zap;               //  The ZAP handler (REP), or NULL
    zcertstore_t *client_keys;  //  Public keys allowed as clients
    zcertstore_t *worker_keys;  //  Public keys allowed as workers
};

//  Count the certificates (*.key) in a directory
static size_t
s_key_count (const char *directory)
{
    size_t count = 0;
    zdir_t *dir = zdir_new (directory, NULL);
    zlist_t *files = dir? zdir_list (dir): NULL;
    for (zfile_t *file = files? zlist_first (files): NULL; file; file = zlist_next (files)) {
        const char *name = zfile_filename (file, NULL);
        size_t length = strlen (name);
        if (length > 4 && streq (name + length - 4, ".key"))
            count++;
    }
    zlist_destroy (&files);
    zdir_destroy (&dir);
    return count;
}

//  (Re)load the allowed keys from their directories
static int
s_keys_load (act_security_t *self, act_err_t *err)
{
    const char *dirs [] = { self->settings->client_keys, self->settings->worker_keys };
    for (int i = 0; i < 2; i++)
        if (!dirs [i] || !zsys_file_exists (dirs [i]))
            return act_err_set (err, ACT_E_INTERNAL,
                                "security/%s_keys must name a directory of public keys (%s)",
                                i? "worker": "client", dirs [i]? dirs [i]: "not set");
    zcertstore_destroy (&self->client_keys);
    zcertstore_destroy (&self->worker_keys);
    self->client_keys = zcertstore_new (dirs [0]);
    self->worker_keys = zcertstore_new (dirs [1]);
    act_log (LOG_NOTICE, "CURVE: %zu client keys from %s, %zu worker keys from %s",
             s_key_count (dirs [0]), dirs [0], s_key_count (dirs [1]), dirs [1]);
    return 0;
}

//  True for endpoints only this machine can reach
static bool
s_endpoint_local (const char *endpoint)
{
    const char *local [] = { "ipc://", "inproc://", "tcp://127.", "tcp://localhost:",
                             "tcp://[::1]:" };
    for (size_t i = 0; i < sizeof local / sizeof local [0]; i++)
        if (strncmp (endpoint, local [i], strlen (local [i])) == 0)
            return true;
    return false;
}

//  Before binding: load the keys and start the ZAP handler, or (without
//  keys) make sure nothing but this machine can reach plain sockets
static int
s_setup (act_security_t *self, act_err_t *err)
{
    act_settings_t *settings = self->settings;
    if (!settings->server_key) {
        const char *endpoints [] = { settings->client_endpoint, settings->worker_endpoint };
        for (int i = 0; i < 2; i++)
            if (!s_endpoint_local (endpoints [i])) {
                if (!settings->allow_plain_tcp)
                    return act_err_set (err, ACT_E_INTERNAL,
                        "refusing plain TCP on %s without CURVE keys: anyone who reaches it "
                        "could submit calls (set security/server_key, or security/"
                        "allow_plain_tcp = 1 to accept the risk)", endpoints [i]);
                act_log (LOG_WARNING, "plain TCP without CURVE on %s, as the config allows: "
                         "anyone who reaches it can submit calls", endpoints [i]);
            }
        act_log (LOG_NOTICE, "no CURVE keys: clients and workers are not authenticated");
        return 0;
    }
    self->server_cert = zcert_load (settings->server_key);
    if (!self->server_cert)
        return act_err_set (err, ACT_E_INTERNAL, "cannot read the server key %s "
                            "(make one with: actctl keygen server)", settings->server_key);
    if (s_keys_load (self, err))
        return -1;
    self->zap = zsock_new_rep ("inproc://zeromq.zap.01");
    if (!self->zap)
        return act_err_set (err, ACT_E_INTERNAL, "cannot start the ZAP handler");
    act_log (LOG_NOTICE, "CURVE on: server public key %s", zcert_public_txt (self->server_cert));
    return 0;
}

//  Answer one ZAP request. The worker socket admits only keys in
//  worker_keys. The client socket admits any CURVE peer and names it by
//  its key (User-Id), so that a client with an unknown key gets a clear
//  ERROR unauthorized for each request rather than a silent failed
//  handshake.
void
act_security_handle (act_security_t *self)
{
    zmsg_t *request = zmsg_recv (self->zap);
    if (!request)
        return;
    char *version = zmsg_popstr (request);
    zframe_t *sequence = zmsg_pop (request);
    char *domain = zmsg_popstr (request);
    char *address = zmsg_popstr (request);
    char *identity = zmsg_popstr (request);
    char *mechanism = zmsg_popstr (request);
    zframe_t *key = zmsg_pop (request);
    const char *status = "400", *text = "CURVE required";
    char user [41] = "";
    if (mechanism && streq (mechanism, "CURVE") && key && zframe_size (key) == 32) {
        zmq_z85_encode (user, zframe_data (key), 32);
        if (domain && streq (domain, ACT_ZAP_WORKERS)) {
            if (zcertstore_lookup (self->worker_keys, user)) {
                status = "200";
                text = "OK";
            }
            else {
                text = "key not allowed on the worker socket";
                act_log_peer (LOG_WARNING, user, "CURVE worker refused",
                              "CURVE: worker refused from %s: key %s is not in %s",
                              address? address: "?", user, self->settings->worker_keys);
            }
        }
        else {
            status = "200";
            text = "OK";
        }
    }
    zmsg_t *reply = zmsg_new ();
    zmsg_addstr (reply, "1.0");
    zmsg_append (reply, &sequence);
    zmsg_addstr (reply, status);
    zmsg_addstr (reply, text);
    zmsg_addstr (reply, streq (status, "200")? user: "");
    zmsg_addmem (reply, "", 0);
    zmsg_send (&reply, self->zap);
    zframe_destroy (&key);
    zframe_destroy (&sequence);
    free (version);
    free (domain);
    free (address);
    free (identity);
    free (mechanism);
    zmsg_destroy (&request);
}

//  With CURVE, a client's key (the User-Id of a frame it sent) must be an
//  allowed client key
bool
act_security_client_allowed (act_security_t *self, zframe_t *frame)
{
    if (!self || !self->client_keys)
        return true;
    const char *user = zframe_meta (frame, "User-Id");
    return user && zcertstore_lookup (self->client_keys, user) != NULL;
}

act_security_t *
act_security_new (act_settings_t *settings, act_err_t *err)
{
    act_security_t *self = (act_security_t *) calloc (1, sizeof (act_security_t));
    if (!self)
        return NULL;
    self->settings = settings;
    if (s_setup (self, err))
        act_security_destroy (&self);
    return self;
}

void
act_security_destroy (act_security_t **self_p)
{
    if (self_p && *self_p) {
        act_security_t *self = *self_p;
        zsock_destroy (&self->zap);
        zcertstore_destroy (&self->client_keys);
        zcertstore_destroy (&self->worker_keys);
        zcert_destroy (&self->server_cert);
        free (self);
        *self_p = NULL;
    }
}

void
act_security_apply (act_security_t *self, zsock_t *socket, const char *domain)
{
    if (self->server_cert) {
        zsock_set_zap_domain (socket, domain);
        zsock_set_curve_server (socket, 1);
        zcert_apply (self->server_cert, socket);
    }
}

zsock_t *
act_security_zap (act_security_t *self)
{
    return self->zap;
}

void
act_security_reload (act_security_t *self, act_settings_t *fresh)
{
    //  Allowed keys: the directories named now, read again
    if (self->server_cert && fresh->client_keys && fresh->worker_keys) {
        free (self->settings->client_keys);
        free (self->settings->worker_keys);
        self->settings->client_keys = strdup (fresh->client_keys);
        self->settings->worker_keys = strdup (fresh->worker_keys);
        act_err_t err = { 0 };
        if (s_keys_load (self, &err))
            act_log (LOG_ERR, "reload: allowed keys not reloaded: %s", err.message);
        else
            act_log (LOG_NOTICE, "reload: allowed keys reloaded");
    }
}
