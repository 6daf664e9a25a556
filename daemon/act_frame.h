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

#endif
