/*  =========================================================================
    act_security - CURVE, allowed keys, tenants, worker groups and ZAP
    (see act_security.h).
    ========================================================================= */

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <fnmatch.h>
#include <limits.h>
#include <sys/stat.h>
#include "act_security.h"
#include "act_curve_int.h"

struct _act_security_t {
    act_settings_t *settings;   //  Key files, tenants, groups (borrowed; its
                                //  tenants and groups are swapped on reload)
    zcert_t *server_cert;       //  The broker's keypair, or NULL: no CURVE
    zsock_t *zap;               //  The ZAP handler (REP), or NULL
    zhashx_t *clients;          //  Client key -> act_tenant_settings_t
    zhashx_t *workers;          //  Worker key -> act_group_settings_t
    act_peers_t *peers;         //  Connections by routing id, to cut
    zlistx_t *revoked;          //  Client routing ids (zframe_t) revoked by
                                //  the last reload, for the caller
    zhashx_t *checked;          //  Directories above the keys whose modes
                                //  this start (reload) checked: each is
                                //  warned of once, not once per key path
};

//  s_keys_read reads a tenant's or a group's name through a pointer to it
_Static_assert (offsetof (act_tenant_settings_t, name) == 0, "a tenant begins with its name");
_Static_assert (offsetof (act_group_settings_t, name) == 0, "a group begins with its name");

//  The "tenant" of the keys in security/client_keys: every right, every
//  context (as before tenants existed)
static act_tenant_settings_t s_everything = { "(client_keys)", "", ACT_RIGHTS_ALL, NULL };

//  The "group" of the keys in security/worker_keys: every activity
static act_group_settings_t s_anything = { "(worker_keys)", NULL, NULL };

//  Warn (the keys still load) when path, status info, could be changed by
//  others than its owner, or (secret: the server's secret key) read by
//  every user: whoever may write a key directory or key file chooses who
//  is let in, and whoever reads the secret key may pose as the broker.
//  OpenSSH's StrictModes refuses such files; refusing here would stop
//  brokers that run today with a key of mode 0644 (what some installs
//  copy), so it is said at each start and reload instead. CZMQ's zauth
//  and zcertstore do not look at modes at all.
static void
s_mode_check (const char *path, const struct stat *info, bool secret)
{
    const char *what = secret? "the server's secret key"
                     : S_ISDIR (info->st_mode)? "key directory": "key file";
    unsigned mode = (unsigned) info->st_mode & 07777;
    if (mode & (S_IWGRP | S_IWOTH))
        act_log (LOG_WARNING, "CURVE: %s %s is writable by %s (mode %04o): whoever can "
                 "write it can %s; chmod go-w", what, path,
                 mode & S_IWOTH? "every user": "its group", mode,
                 secret? "replace the broker's key"
                 : S_ISDIR (info->st_mode)? "add a key of their own": "change its key");
    if (secret && (mode & S_IROTH))
        act_log (LOG_WARNING, "CURVE: %s %s is readable by every user (mode %04o): any of "
                 "them can pose as this broker; chmod o-r (0640, group actd)", what, path,
                 mode);
    if (info->st_uid != 0 && info->st_uid != geteuid ())
        act_log (LOG_WARNING, "CURVE: %s %s is owned by uid %u, neither root nor actd's "
                 "user: that user can change it", what, path, (unsigned) info->st_uid);
}

//  Warn, as s_mode_check does, of each directory above path (a key
//  directory or key file, the server's secret key) up to /, as OpenSSH's
//  StrictModes walks them (safe_path in its misc.c): whoever may write one
//  can rename what is in it and put a directory of keys of their own in
//  its place. One difference: a sticky directory (/tmp, mode 1777) is not
//  warned of for its write bits, as others cannot rename or remove what
//  they do not own in it (its owner is checked, and the entry below it).
//  Each directory once per start or reload (checked).
static void
s_parents_check (const char *path, zhashx_t *checked)
{
    char *real = realpath (path, NULL);
    char *at = real? strrchr (real, '/'): NULL;
    while (at) {
        //  The directory that holds what real names now: "/" for "/etc"
        *(at == real? at + 1: at) = 0;
        struct stat info;
        if (!zhashx_lookup (checked, real) && stat (real, &info) == 0) {
            zhashx_insert (checked, real, "checked");
            unsigned mode = (unsigned) info.st_mode & 07777;
            if ((mode & (S_IWGRP | S_IWOTH)) && !(mode & S_ISVTX))
                act_log (LOG_WARNING, "CURVE: directory %s, above the keys in %s, is "
                         "writable by %s (mode %04o): whoever can write it can put keys "
                         "of their own in their place; chmod go-w", real, path,
                         mode & S_IWOTH? "every user": "its group", mode);
            if (info.st_uid != 0 && info.st_uid != geteuid ())
                act_log (LOG_WARNING, "CURVE: directory %s, above the keys in %s, is owned "
                         "by uid %u, neither root nor actd's user: that user can put keys "
                         "of their own in their place", real, path, (unsigned) info.st_uid);
        }
        at = streq (real, "/")? NULL: strrchr (real, '/');
    }
    free (real);
}

//  Read the public key of key file (a zcert public file: curve/public-key)
//  into key (Z85, 40 characters and a NUL), as act_curve_file_text reads
//  files (a regular file of at most 64 KiB, opened without blocking); its
//  key must be valid (act_curve_key_decode). Returns true, or false
//  with the reason logged: the file is ignored.
static bool
s_key_file_read (const char *file, char key [41])
{
    struct stat info;
    const char *why;
    bool unreadable;
    char *text = act_curve_file_text (file, &info, &why, &unreadable);
    if (!text) {
        if (unreadable)
            act_log (LOG_WARNING, "CURVE: cannot read %s: %s; ignored", file, why);
        else
            act_log (LOG_WARNING, "CURVE: %s is %s; ignored", file, why);
        return false;
    }
    zconfig_t *config = zconfig_str_load (text);
    const char *given = config? zconfig_get (config, "curve/public-key", NULL): NULL;
    byte binary [32];
    bool valid = act_curve_key_decode (given, binary);
    if (valid) {
        strcpy (key, given);
        s_mode_check (file, &info, false);
    }
    else
        act_log (LOG_WARNING, "CURVE: %s is not a key file; ignored", file);
    zconfig_destroy (&config);
    free (text);
    return valid;
}

//  Read the public keys at path (a directory of *.key files, or one key
//  file) into keys, each mapped to value (a key already there keeps its
//  first value). kind is "tenants" or "workers" when value is a tenant or a
//  group (a struct whose first field is its name), else NULL: a key
//  already in another tenant (group) is logged, as only the first applies.
//  Returns how many, or -1 (errno set) when path cannot be read: zdir
//  lists nothing of a directory it may not read, which would pass for a
//  directory with no key.
static int
s_keys_read (const char *path, zhashx_t *keys, void *value, const char *kind,
             zhashx_t *checked)
{
    struct stat info;
    if (!path || stat (path, &info)
    ||  access (path, S_ISDIR (info.st_mode)? R_OK | X_OK: R_OK))
        return -1;
    if (S_ISDIR (info.st_mode))
        s_mode_check (path, &info, false);
    s_parents_check (path, checked);
    zlistx_t *files = zlistx_new ();
    zlistx_set_destructor (files, (czmq_destructor *) zstr_free);
    if (S_ISDIR (info.st_mode)) {
        zdir_t *dir = zdir_new (path, NULL);
        zlist_t *list = dir? zdir_list (dir): NULL;
        for (zfile_t *file = list? zlist_first (list): NULL; file; file = zlist_next (list)) {
            const char *name = zfile_filename (file, NULL);
            size_t length = strlen (name);
            if (length > 4 && streq (name + length - 4, ".key"))
                zlistx_add_end (files, strdup (name));
        }
        zlist_destroy (&list);
        zdir_destroy (&dir);
    }
    else
        zlistx_add_end (files, strdup (path));
    int count = 0;
    char key [41];
    for (const char *file = zlistx_first (files); file; file = zlistx_next (files))
        if (s_key_file_read (file, key)) {
            const char *const *first = zhashx_lookup (keys, key);
            if (first && kind && first != value)
                act_log (LOG_WARNING, "CURVE: key %s (%s) is in %s/%s and in %s/%s: only "
                         "%s/%s applies", key, file, kind, *first, kind,
                         *(const char *const *) value, kind, *first);
            zhashx_insert (keys, key, value);
            count++;
        }
    zlistx_destroy (&files);
    return count;
}

//  (Re)load the allowed keys: the tenants' and groups' first (a key in a
//  tenant belongs to it), then security/client_keys and worker_keys. At a
//  reload, keys that cannot be read any more are revoked, not kept: a
//  tenant's (group's) directory removed leaves it no key (logged), where at
//  start it stops actd.
static int
s_keys_load (act_security_t *self, bool reload, act_err_t *err)
{
    act_settings_t *settings = self->settings;
    if (reload)
        zhashx_purge (self->checked);   //  Each directory warned of again
    zhashx_t *clients = zhashx_new (), *workers = zhashx_new ();
    int rc = 0, tenanted = 0, grouped = 0;
    for (act_tenant_settings_t *tenant = zlistx_first (settings->tenants); tenant && !rc;
         tenant = zlistx_next (settings->tenants))
        if ((rc = s_keys_read (tenant->keys, clients, tenant, "tenants",
                                    self->checked)) >= 0)
            tenanted += rc, rc = 0;
        else
        if (reload) {
            act_log (LOG_ERR, "reload: tenants/%s/keys: cannot read %s: the tenant has no "
                     "key now", tenant->name, tenant->keys);
            rc = 0;
        }
        else
            act_err_set (err, ACT_E_INTERNAL, "tenants/%s/keys: cannot read %s: %s",
                         tenant->name, tenant->keys, strerror (errno));
    for (act_group_settings_t *group = zlistx_first (settings->worker_groups); group && !rc;
         group = zlistx_next (settings->worker_groups))
        if ((rc = s_keys_read (group->keys, workers, group, "workers",
                                    self->checked)) >= 0)
            grouped += rc, rc = 0;
        else
        if (reload) {
            act_log (LOG_ERR, "reload: workers/%s/keys: cannot read %s: the group has no "
                     "key now", group->name, group->keys);
            rc = 0;
        }
        else
            act_err_set (err, ACT_E_INTERNAL, "workers/%s/keys: cannot read %s: %s",
                         group->name, group->keys, strerror (errno));
    //  The plain directories: required unless tenants (groups) are set
    const char *dirs [] = { settings->client_keys, settings->worker_keys };
    size_t sets [] = { zlistx_size (settings->tenants), zlistx_size (settings->worker_groups) };
    int plain [2] = { 0, 0 };
    for (int i = 0; i < 2 && !rc; i++)
        if ((dirs [i] || !sets [i])
        &&  (plain [i] = s_keys_read (dirs [i], i? workers: clients,
                                      i? (void *) &s_anything: (void *) &s_everything,
                                      NULL, self->checked)) < 0) {
            if (reload && dirs [i]) {
                act_log (LOG_ERR, "reload: security/%s_keys: cannot read %s: none of its "
                         "keys is allowed now", i? "worker": "client", dirs [i]);
                plain [i] = 0;
            }
            else
            if (dirs [i])
                rc = act_err_set (err, ACT_E_INTERNAL, "security/%s_keys: cannot read %s: %s",
                                  i? "worker": "client", dirs [i], strerror (errno));
            else
                rc = act_err_set (err, ACT_E_INTERNAL,
                                  "security/%s_keys must name a directory of public keys "
                                  "(not set)", i? "worker": "client");
        }
    if (rc) {
        zhashx_destroy (&clients);
        zhashx_destroy (&workers);
        return -1;
    }
    zhashx_destroy (&self->clients);
    zhashx_destroy (&self->workers);
    self->clients = clients;
    self->workers = workers;
    act_log (LOG_NOTICE, "CURVE: %zu client keys (%d in %zu tenants, %d with every right), "
             "%zu worker keys (%d in %zu groups, %d serving anything)",
             zhashx_size (clients), tenanted, sets [0], plain [0], zhashx_size (workers),
             grouped, sets [1], plain [1]);
    return 0;
}

//  How long after a revocation the peer's connection is cut: time for the
//  DISCONNECT (or a last reply) queued before it to leave. libzmq's I/O
//  thread runs under SCHED_BATCH (server/io_batch), and on a busy machine
//  it may take tens of milliseconds to get a core
#define S_CUT_AFTER_MS 1000

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

//  The broker's certificate, read by act_curve_cert_load (the library's
//  reader of certificates: no FIFO, nothing over 64 KiB, both halves), its
//  mode checked. NULL with err set: actd does not start.
static zcert_t *
s_server_cert_load (const char *file, zhashx_t *checked, act_err_t *err)
{
    struct stat info;
    bool from_secret;
    act_err_t why = { 0 };
    zcert_t *cert = act_curve_cert_load (file, "the server key", &info, &from_secret, &why);
    if (!cert) {
        act_err_set (err, ACT_E_INTERNAL, "%s (make one with: actctl keygen server)",
                     why.message);
        return NULL;
    }
    char *from = zsys_sprintf ("%s%s", file, from_secret? "_secret": "");
    s_mode_check (from, &info, true);
    s_parents_check (from, checked);
    zstr_free (&from);
    return cert;
}

//  Before binding: load the keys and start the ZAP handler, or (without
//  keys) make sure nothing but this machine can reach plain sockets
static int
s_setup (act_security_t *self, act_err_t *err)
{
    act_settings_t *settings = self->settings;
    //  With CURVE or without: a client that does not read is cut off too
    self->peers = act_peers_new ();
    //  An endpoint without its transport ("127.0.0.1:5555") would be
    //  refused below as plain TCP, a misleading reason
    const char *given [] = { settings->client_endpoint, settings->worker_endpoint };
    for (int i = 0; i < 2; i++)
        if (given [i] && !strstr (given [i], "://"))
            return act_err_set (err, ACT_E_INTERNAL, "endpoint '%s' names no transport: "
                                "give tcp://HOST:PORT or ipc:///PATH", given [i]);
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
            else
            if (strncmp (endpoints [i], "ipc://@", 7) == 0)
                //  No file, so no mode: as open as loopback TCP
                act_log (LOG_WARNING, "%s is an abstract socket: every user of this machine "
                         "can connect to it (server/ipc_mode cannot apply); give a path, or "
                         "CURVE keys", endpoints [i]);
        if (zlistx_size (settings->tenants) || zlistx_size (settings->worker_groups))
            act_log (LOG_WARNING, "tenants and worker groups are configured but CURVE is "
                     "off (no security/server_key): they are ignored, every peer has every "
                     "right");
        act_log (LOG_NOTICE, "no CURVE keys: clients and workers are not authenticated");
        return 0;
    }
    self->server_cert = s_server_cert_load (settings->server_key, self->checked, err);
    if (!self->server_cert)
        return -1;
    if (s_keys_load (self, false, err))
        return -1;
    self->zap = zsock_new_rep ("inproc://zeromq.zap.01");
    if (!self->zap)
        return act_err_set (err, ACT_E_INTERNAL, "cannot start the ZAP handler");
    act_log (LOG_NOTICE, "CURVE on: server public key %s", zcert_public_txt (self->server_cert));
    return 0;
}

//  Answer one ZAP request. The worker socket admits only worker keys. The
//  client socket admits any CURVE peer and names it by its key (User-Id),
//  so that a client with an unknown key gets a clear ERROR unauthorized
//  for each request rather than a silent failed handshake.
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
            if (zhashx_lookup (self->workers, user)) {
                status = "200";
                text = "OK";
            }
            else {
                text = "key not allowed on the worker socket";
                act_log_peer (LOG_WARNING, user, "CURVE worker refused",
                              "CURVE: worker refused from %s: key %s is not in %s nor in "
                              "a worker group", address? address: "?", user,
                              self->settings->worker_keys? self->settings->worker_keys
                                                         : "security/worker_keys (not set)");
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


//  --------------------------------------------------------------------------
//  Clients: tenants and rights

//  The grant of client key user in clients (NULL: not allowed)
static bool
s_grant (zhashx_t *clients, const char *user, act_grant_t *grant)
{
    act_tenant_settings_t *tenant = user? zhashx_lookup (clients, user): NULL;
    if (tenant)
        *grant = (act_grant_t) { tenant->rights | ACT_RIGHT_NONE, tenant->prefix,
                                 tenant == &s_everything? NULL: tenant->name };
    return tenant != NULL;
}

bool
act_security_client_grant (act_security_t *self, zmq_msg_t *frame, act_grant_t *grant)
{
    *grant = (act_grant_t) { ACT_RIGHTS_ALL | ACT_RIGHT_NONE, "", NULL };
    if (!self || !self->server_cert)
        return true;
    return s_grant (self->clients, frame? zmq_msg_gets (frame, "User-Id"): NULL, grant);
}

bool
act_grant_reaches (const act_grant_t *grant, const char *context)
{
    return (grant->rights & ACT_RIGHT_ADMIN)
        || strncmp (context, grant->prefix, strlen (grant->prefix)) == 0;
}

//  True when grant fresh allows less than grant old (or nothing)
static bool
s_shrank (const act_grant_t *old, bool allowed, const act_grant_t *fresh)
{
    if (!allowed || (old->rights & ~fresh->rights))
        return true;
    if (fresh->rights & ACT_RIGHT_ADMIN)
        return false;
    //  Its reach shrank unless the new prefix is a prefix of the old one
    return (old->rights & ACT_RIGHT_ADMIN)
        || strncmp (old->prefix, fresh->prefix, strlen (fresh->prefix)) != 0;
}

//  After a reload (old: the client keys before it): note each connected
//  client whose grant shrank in revoked, and cut its connection
static void
s_revoke_clients (act_security_t *self, zhashx_t *old)
{
    long long at = act_clock_ms () + S_CUT_AFTER_MS;
    zlistx_t *keys = zlistx_new ();
    zlistx_set_destructor (keys, (czmq_destructor *) zstr_free);
    const char *user;
    for (zframe_t *routing = act_peers_first_client (self->peers, &user); routing;
         routing = act_peers_next_client (self->peers, &user)) {
        act_grant_t before, after;
        if (!s_grant (old, user, &before))
            continue;           //  Refused already
        bool allowed = s_grant (self->clients, user, &after);
        if (s_shrank (&before, allowed, &after)) {
            act_log (LOG_NOTICE, "reload: client key %s %s: its watches end and its "
                     "connection is cut", user, allowed? "lost rights": "revoked");
            zlistx_add_end (self->revoked, zframe_dup (routing));
            zlistx_add_end (keys, zframe_strhex (routing));
        }
    }
    for (const char *key = zlistx_first (keys); key; key = zlistx_next (keys))
        act_peers_cut (self->peers, false, key, at, "revoked");
    zlistx_destroy (&keys);
}

zframe_t *
act_security_revoked_client (act_security_t *self)
{
    return self && self->revoked? (zframe_t *) zlistx_detach (self->revoked, NULL): NULL;
}


//  --------------------------------------------------------------------------
//  Workers: groups and activities

const zlistx_t *
act_security_worker_patterns (act_security_t *self, const char *user, bool *allowed)
{
    *allowed = true;
    if (!self || !self->server_cert)
        return NULL;
    act_group_settings_t *group = user? zhashx_lookup (self->workers, user): NULL;
    *allowed = group != NULL;
    return group? group->patterns: NULL;
}

bool
act_security_patterns_match (const zlistx_t *patterns, const char *activity)
{
    if (!patterns)
        return true;
    for (const char *pattern = zlistx_first ((zlistx_t *) patterns); pattern;
         pattern = zlistx_next ((zlistx_t *) patterns))
        if (fnmatch (pattern, activity, 0) == 0)
            return true;
    return false;
}

void
act_security_cut_worker (act_security_t *self, const char *key)
{
    if (self)
        act_peers_cut (self->peers, true, key, act_clock_ms () + S_CUT_AFTER_MS, "revoked");
}

bool
act_security_cut_client (act_security_t *self, const char *key)
{
    return self && act_peers_cut (self->peers, false, key, 0, NULL);
}

bool
act_security_client_holds (act_security_t *self, const void *id, size_t size,
                           const char *key, const char *context)
{
    //  A key revoked since (a reload) is owed nothing more about a
    //  context, even on its own connection back; nor one whose grant no
    //  longer reaches it (moved to another tenant, or its prefix narrowed).
    //  A reply to a request (no context) was judged when it was served: an
    //  ERROR unauthorized is owed to a key that is not allowed at all
    act_grant_t grant;
    if (self && self->server_cert && context
    &&  (!s_grant (self->clients, key, &grant) || !act_grant_reaches (&grant, context)))
        return false;
    return self && act_peers_holds (self->peers, false, id, size, key);
}


//  --------------------------------------------------------------------------
//  The object

act_security_t *
act_security_new (act_settings_t *settings, act_err_t *err)
{
    act_security_t *self = (act_security_t *) calloc (1, sizeof (act_security_t));
    if (!self)
        return NULL;
    self->settings = settings;
    self->revoked = zlistx_new ();
    zlistx_set_destructor (self->revoked, (czmq_destructor *) zframe_destroy);
    self->checked = zhashx_new ();
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
        zhashx_destroy (&self->clients);
        zhashx_destroy (&self->workers);
        act_peers_destroy (&self->peers);
        zlistx_destroy (&self->revoked);
        zhashx_destroy (&self->checked);
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
    return self? self->zap: NULL;
}

void
act_security_seen (act_security_t *self, bool worker, act_msg_t *msg)
{
    if (self && self->peers && msg && msg->held > 1) {
        act_peers_seen (self->peers, worker, act_msg_part (msg, 0), act_msg_part (msg, 1),
                        msg->stated? &msg->socket: NULL);
    }
}

void
act_security_stat (act_security_t *self, act_msg_t *msg)
{
    if (self && self->peers && msg && msg->held > 1)
        msg->stated = act_peers_socket (act_msg_part (msg, 1), &msg->socket);
}

void
act_security_tick (act_security_t *self, long long now)
{
    if (self)
        act_peers_tick (self->peers, now);
}

void
act_security_watched (act_security_t *self, zframe_t *client)
{
    if (self && client)
        act_peers_watched (self->peers, zframe_data (client), zframe_size (client));
}

void
act_security_on_client_gone (act_security_t *self, act_peers_gone_fn *gone, void *arg)
{
    if (self)
        act_peers_on_gone (self->peers, gone, arg);
}

//  Swap the key settings of now and fresh: directories, tenants, groups
static void
s_swap_keys (act_settings_t *now, act_settings_t *fresh)
{
    char *text = now->client_keys;
    now->client_keys = fresh->client_keys;
    fresh->client_keys = text;
    text = now->worker_keys;
    now->worker_keys = fresh->worker_keys;
    fresh->worker_keys = text;
    zlistx_t *list = now->tenants;
    now->tenants = fresh->tenants;
    fresh->tenants = list;
    list = now->worker_groups;
    now->worker_groups = fresh->worker_groups;
    fresh->worker_groups = list;
}

int
act_security_reload (act_security_t *self, act_settings_t *fresh, act_err_t *err)
{
    if (self && !self->server_cert
    &&  (zlistx_size (fresh->tenants) || zlistx_size (fresh->worker_groups)))
        act_log (LOG_WARNING, "reload: tenants and worker groups are configured but CURVE "
                 "is off (security/server_key takes effect at the next start): they are "
                 "ignored, every peer has every right");
    if (!self || !self->server_cert)
        return 0;
    //  Take fresh's key settings, keeping the old ones in fresh (the old
    //  tables point into them until the comparison is done)
    act_settings_t *now = self->settings;
    s_swap_keys (now, fresh);
    zhashx_t *old_clients = self->clients, *old_workers = self->workers;
    self->clients = self->workers = NULL;
    if (s_keys_load (self, true, err)) {
        //  Back to the old settings and tables
        s_swap_keys (now, fresh);
        self->clients = old_clients;
        self->workers = old_workers;
        return -1;
    }
    act_log (LOG_NOTICE, "reload: allowed keys reloaded");
    s_revoke_clients (self, old_clients);
    zhashx_destroy (&old_clients);
    zhashx_destroy (&old_workers);
    return 0;
}

zsock_t *
act_security_bind (act_security_t *self, act_settings_t *settings, const char *endpoint,
                   const char *domain, act_err_t *err)
{
    zsock_t *socket = zsock_new (ZMQ_ROUTER);
    if (!socket) {
        act_err_set (err, ACT_E_INTERNAL, "cannot create a socket");
        return NULL;
    }
    zsock_set_router_mandatory (socket, 1);
    zsock_set_sndhwm (socket, 100000);
    zsock_set_rcvhwm (socket, 100000);
    zsock_set_sndtimeo (socket, 0);
    zsock_set_linger (socket, 1000);
    //  Past max_message_bytes a frame is answered too_large; far past it
    //  the peer is cut off before the broker holds the whole thing
    long long hard = settings->max_message_bytes * 4 + 65536;
    zsock_set_maxmsgsize (socket, hard > INT_MAX? INT_MAX: (int) hard);
    act_security_apply (self, socket, domain);
    //  An IPv6 address ("tcp://[::1]:5555", a local endpoint as documented)
    //  binds only with IPv6 on
    if (strncmp (endpoint, "tcp://[", 7) == 0)
        zsock_set_ipv6 (socket, 1);
    //  libzmq binds interfaces, not host names: "localhost" (documented as
    //  a local endpoint, and what people write) is the loopback address
    char *bound = strncmp (endpoint, "tcp://localhost:", 16) == 0
                ? zsys_sprintf ("tcp://127.0.0.1:%s", endpoint + 16): strdup (endpoint);
    //  A signal while libzmq binds (a SIGTERM or SIGHUP as actd starts)
    //  interrupts it: bind again, and let the loop act on the signal once
    //  it runs, as it would have a moment later
    int rc, error, tries = 0;
    do {
        rc = zsock_bind (socket, "%s", bound);
        error = rc < 0? zmq_errno (): 0;
    } while (error == EINTR && ++tries < 100);
    free (bound);
    //  An ipc:// socket file: who may connect is who may write to it
    //  (server/ipc_mode; the group is actd's own, "actd" under systemd)
    if (rc >= 0 && strncmp (endpoint, "ipc://", 6) == 0 && endpoint [6] != '@'
    &&  chmod (endpoint + 6, (mode_t) settings->ipc_mode))
        act_log (LOG_ERR, "cannot set the mode of %s to %o: %s", endpoint + 6,
                 settings->ipc_mode, strerror (errno));
    if (rc < 0) {
        act_err_set (err, ACT_E_INTERNAL, "cannot bind %s: %s", endpoint, zmq_strerror (error));
        zsock_destroy (&socket);
    }
    return socket;
}

//  See act_security.h
bool
act_security_prefix (const act_grant_t *grant, char **prefix)
{
    const char *own = (grant->rights & ACT_RIGHT_ADMIN)? "": grant->prefix;
    const char *asked = *prefix? *prefix: "";
    if (strncmp (asked, own, strlen (own)) == 0)
        return true;            //  Asked within the tenant's prefix
    if (strncmp (own, asked, strlen (asked)) != 0)
        return false;
    free (*prefix);
    *prefix = strdup (own);
    return true;
}
