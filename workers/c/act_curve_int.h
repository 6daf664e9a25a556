/*  =========================================================================
    act_curve_int - the CURVE keys of a C client or worker, and the DEALER
    sockets opened with them (private to libactd: act_client and
    act_worker share it).
    ========================================================================= */

#ifndef ACT_CURVE_INT_H_INCLUDED
#define ACT_CURVE_INT_H_INCLUDED

#include <sys/stat.h>
#include <czmq.h>
#include "actd/act_err.h"

typedef struct {
    char *server_key;           //  The broker's public key, or NULL
    zcert_t *cert;              //  This side's certificate, or NULL
} act_curve_t;

//  The text of key file (NUL-terminated; the caller frees it), and its
//  status in *info. Only a regular file of at most 64 KiB is read, opened
//  without blocking: CZMQ's zcert_load opens it with a blocking fopen, and
//  a FIFO there hung its caller for good (actd's one thread, or a client).
//  NULL when it is not read, with *why saying why: strerror when it could
//  not be opened or read (*unreadable true, errno set), else what it is
//  instead.
char *act_curve_file_text (const char *file, struct stat *info, const char **why,
                           bool *unreadable);

//  True when given is a key in Z85 (40 characters that decode, written
//  back the same) and not all zeros, decoded into binary (zcert_load takes
//  a key that does not decode for zeros).
bool act_curve_key_decode (const char *given, uint8_t binary [32]);

//  A certificate (a keypair) as zcert_load reads it, FILE_secret, else
//  FILE itself when FILE_secret cannot be opened, but each file read by
//  act_curve_file_text, and both keys valid (act_curve_key_decode):
//  zcert_load takes a public half alone with a secret key of zeros, that
//  no handshake passes. what names the file in messages ("the server
//  key"). *info is the status of the file read, *from_secret true when it
//  was FILE_secret. NULL when it does not load, with err set (when not
//  NULL) naming the file and why, and errno: the open's or read's error
//  when neither file could be read, else EINVAL.
zcert_t *act_curve_cert_load (const char *file, const char *what, struct stat *info,
                              bool *from_secret, act_err_t *err);

//  True when key is a CURVE public key as text: 40 characters of Z85 that
//  decode (what libzmq takes for ZMQ_CURVE_SERVERKEY). False for NULL.
bool act_curve_key_valid (const char *key);

//  Load certificate_file and keep it with server_public, in place of the
//  keys held before. Returns 0; -2 (keys unchanged, nothing loaded) if
//  server_public is not a CURVE public key (act_curve_key_valid); -1 (keys
//  unchanged, errno set) if the file does not load (act_curve_cert_load).
int act_curve_set (act_curve_t *self, const char *server_public,
                   const char *certificate_file);

//  The keys of the environment, as actctl reads them: $ACTD_SERVER_KEY
//  (the broker's public key) and $ACTD_CERT (this side's certificate
//  file). Returns 0 when both are set and the file loads, or when neither
//  is set (no CURVE); -2 when $ACTD_SERVER_KEY is not a CURVE public key;
//  -1 when only one is set (half of CURVE would talk in plain text) or
//  the file does not load.
int act_curve_from_env (act_curve_t *self);

//  Free the keys (the struct itself belongs to the caller).
void act_curve_reset (act_curve_t *self);

//  A new DEALER socket for endpoint, linger 0, no send high-water mark,
//  with the keys applied when there are any, and IPv6 on for an IPv6
//  address ("tcp://[::1]:5555": libzmq connects to none without it); not
//  connected yet (CURVE must be set before connecting).
zsock_t *act_curve_dealer (act_curve_t *self, const char *endpoint);

//  Send *msg_p on dealer without waiting, and destroy it. A DEALER whose
//  broker refused it at the CURVE handshake has no pipe to send on, and a
//  waiting send would block forever (a worker could not even stop on
//  SIGTERM). Returns 0 when the message was queued, -1 when it could not
//  be (EAGAIN, only when there is no pipe: it is lost, as on the way; the
//  callers' heartbeats and timeouts already deal with lost messages).
int act_curve_send (zsock_t *dealer, zmsg_t **msg_p);

#endif
