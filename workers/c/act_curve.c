/*  =========================================================================
    act_curve - the CURVE keys of a C client or worker (private to libactd).
    ========================================================================= */

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "act_curve_int.h"

//  A key file is a few hundred bytes: a bigger one is not one
#define S_KEY_FILE_MAX 65536
#define S_TEXT(number) S_TEXT_OF (number)
#define S_TEXT_OF(number) #number

char *
act_curve_file_text (const char *file, struct stat *info, const char **why,
                     bool *unreadable)
{
    *unreadable = false;
    int fd = open (file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *why = strerror (errno);
        *unreadable = true;
        return NULL;
    }
    char *text = NULL;
    ssize_t size = -1;
    if (fstat (fd, info) || !S_ISREG (info->st_mode))
        *why = "not a regular file";
    else
    if (info->st_size > S_KEY_FILE_MAX)
        *why = "larger than " S_TEXT (S_KEY_FILE_MAX) " bytes: not a key file";
    else
    if (!(text = malloc ((size_t) info->st_size + 1)))
        *why = "too large to hold (out of memory)";
    else
    if ((size = read (fd, text, (size_t) info->st_size)) < 0) {
        *why = strerror (errno);
        *unreadable = true;
    }
    close (fd);
    if (size < 0) {
        free (text);
        return NULL;
    }
    text [size] = 0;
    return text;
}

bool
act_curve_key_decode (const char *given, uint8_t binary [32])
{
    static const uint8_t s_zeros [32] = { 0 };
    char again [41];
    return given && strlen (given) == 40 && zmq_z85_decode (binary, given)
        && memcmp (binary, s_zeros, 32) != 0
        && zmq_z85_encode (again, binary, 32) && streq (again, given);
}

zcert_t *
act_curve_cert_load (const char *file, const char *what, struct stat *info,
                     bool *from_secret, act_err_t *err)
{
    char *secret = zsys_sprintf ("%s_secret", file);
    const char *from = secret, *why;
    bool unreadable;
    int error = 0;
    char *text = act_curve_file_text (secret, info, &why, &unreadable);
    if (!text && unreadable) {
        from = file;
        text = act_curve_file_text (file, info, &why, &unreadable);
        error = errno;
    }
    zconfig_t *config = text? zconfig_str_load (text): NULL;
    uint8_t public [32], private [32] = { 0 };
    zcert_t *cert = NULL;
    if (!text)
        act_err_set (err, ACT_E_BAD_ARGUMENT, "cannot read %s %s: %s", what, from, why);
    else
    if (!config || !act_curve_key_decode (zconfig_get (config, "curve/public-key", NULL),
                                          public))
        act_err_set (err, ACT_E_BAD_ARGUMENT, "cannot read %s %s: not a key file", what, from);
    else
    //  zcert_load would take the public half alone, with a secret key of
    //  zeros: every handshake would then fail, unexplained
    if (!act_curve_key_decode (zconfig_get (config, "curve/secret-key", NULL), private))
        act_err_set (err, ACT_E_BAD_ARGUMENT, "%s %s has no secret half: %s is missing or "
                     "this user cannot read it", what, file, secret);
    else
        cert = zcert_new_from (public, private);
    *from_secret = from == secret;
    error = !text && unreadable? error: EINVAL;
    zconfig_destroy (&config);
    free (text);
    zstr_free (&secret);
    if (!cert)
        errno = error;
    return cert;
}

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
    struct stat info;
    bool from_secret;
    zcert_t *cert = act_curve_cert_load (certificate_file, "the certificate", &info,
                                         &from_secret, NULL);
    if (!cert)
        return -1;              //  errno set
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
