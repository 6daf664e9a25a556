/*  =========================================================================
    act_wire - the constants of ACT/1 on the wire (PROTOCOL.md sections 1
    and 2) and the two small parsers every side needs: one for decimal
    arguments, one for the keys that name a thing inside a context.

    The broker, the C client and the C worker all use these, so a header
    string or a limit is spelled once.

    PROTOCOL.md and SEMANTICS.md are the ACT/1 specification; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_WIRE_H_INCLUDED
#define ACT_WIRE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

//  Protocol headers: the first frame of every message
#define ACT_CLIENT_HEADER       "ACTC01"    //  Client sub-protocol
#define ACT_WORKER_HEADER       "ACTW01"    //  Worker sub-protocol
#define ACT_MDPW01              "MDPW01"    //  Majordomo 7/MDP worker
#define ACT_MDPW02              "MDPW02"    //  Majordomo 18/MDP worker

//  Limits of PROTOCOL.md section 1
#define ACT_MAX_REQUEST_ID      255         //  Bytes of a request id
#define ACT_HISTORY_LIMIT       1000        //  Messages in one HISTORY reply

//  Majordomo command bytes (7/MDP and 18/MDP differ after READY)
#define ACT_MDP_READY           0x01
#define ACT_MDP_REQUEST         0x02        //  Both versions
#define ACT_MDP1_REPLY          0x03
#define ACT_MDP1_HEARTBEAT      0x04
#define ACT_MDP1_DISCONNECT     0x05
#define ACT_MDP2_PARTIAL        0x03
#define ACT_MDP2_FINAL          0x04
#define ACT_MDP2_HEARTBEAT      0x05
#define ACT_MDP2_DISCONNECT     0x06

//  Separates a context id from a key inside it ("context<US>_id"): the
//  byte cannot occur in a context id, so the pair is unambiguous
#define ACT_KEY_SEPARATOR       '\x1f'

//  Parse size bytes of text as a decimal number: digits only, no sign, no
//  leading zero but for "0" itself, at most limit. Returns true and sets
//  *value, or false (and leaves *value alone) for anything else.
bool act_decimal_parse (const char *text, size_t size, uint64_t limit, uint64_t *value);

//  Write number in decimal (a '-' first when negative) at out, which has
//  room for ACT_DECIMAL_MAX bytes; no terminating NUL. Returns the bytes
//  written. By hand: on the hot path snprintf costs more than what it
//  formats.
#define ACT_DECIMAL_MAX         20
size_t act_decimal_write (char *out, long long number);

//  The key of key inside context, "context<US>key", as a new string the
//  caller frees.
char *act_key_new (const char *context, const char *key);

#ifdef __cplusplus
}
#endif

#endif
