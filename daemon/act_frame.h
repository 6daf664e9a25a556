/*  =========================================================================
    act_frame - reading CZMQ frames that came from a peer: both protocol
    modules (act_commands, act_wproto) check headers and read text
    arguments the same way.
    ========================================================================= */

#ifndef ACT_FRAME_H_INCLUDED
#define ACT_FRAME_H_INCLUDED

#include <czmq.h>

//  True when frame (NULL allowed) holds exactly text. (zframe_streq
//  asserts on NULL, and a missing frame is input, not a bug.)
static inline bool
act_frame_is (zframe_t *frame, const char *text)
{
    return frame && zframe_size (frame) == strlen (text)
        && memcmp (zframe_data (frame), text, zframe_size (frame)) == 0;
}

//  The frame as a C string the caller frees; NULL when frame is NULL or
//  holds a NUL byte (a text argument never does)
static inline char *
act_frame_string (zframe_t *frame)
{
    if (!frame || memchr (zframe_data (frame), 0, zframe_size (frame)))
        return NULL;
    return strndup ((const char *) zframe_data (frame), zframe_size (frame));
}

//  True when part (a raw libzmq frame, NULL allowed) holds exactly text
static inline bool
act_part_is (zmq_msg_t *part, const char *text)
{
    return part && zmq_msg_size (part) == strlen (text)
        && memcmp (zmq_msg_data (part), text, zmq_msg_size (part)) == 0;
}

//  True when parts a and b (raw libzmq frames) hold the same bytes
static inline bool
act_part_same (zmq_msg_t *a, zmq_msg_t *b)
{
    return zmq_msg_size (a) == zmq_msg_size (b)
        && memcmp (zmq_msg_data (a), zmq_msg_data (b), zmq_msg_size (a)) == 0;
}

//  The part as a C string the caller frees; NULL when part is NULL or
//  holds a NUL byte
static inline char *
act_part_string (zmq_msg_t *part)
{
    if (!part || memchr (zmq_msg_data (part), 0, zmq_msg_size (part)))
        return NULL;
    return strndup ((const char *) zmq_msg_data (part), zmq_msg_size (part));
}

//  The part's bytes and size (NULL allowed: no bytes)
static inline const char *
act_part_data (zmq_msg_t *part)
{
    return part? (const char *) zmq_msg_data (part): NULL;
}

static inline size_t
act_part_size (zmq_msg_t *part)
{
    return part? zmq_msg_size (part): 0;
}

//  Metadata property of part ("User-Id", "__fd"), NULL when none
static inline const char *
act_part_meta (zmq_msg_t *part, const char *property)
{
    return part? zmq_msg_gets (part, property): NULL;
}

#endif
