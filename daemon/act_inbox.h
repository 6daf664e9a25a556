/*  =========================================================================
    act_inbox - messages as they come in from the ROUTER sockets: each is
    read into a fixed array of raw zmq_msg_t (no CZMQ frame or list per
    frame), and the messages read ahead during a commit wait in a queue.
    A message with more frames than any command takes is read to its end;
    only its first ACT_MSG_MAX frames are kept, and its true frame count
    is kept so that it is refused as a wrong frame count.
    ========================================================================= */

#ifndef ACT_INBOX_H_INCLUDED
#define ACT_INBOX_H_INCLUDED

#include <sys/stat.h>
#include <czmq.h>

//  Frames kept of one message (a client request takes at most 8)
#define ACT_MSG_MAX 10

//  One message: [routing id][frames...]
typedef struct {
    zmq_msg_t part [ACT_MSG_MAX];   //  The first frames, as received
    size_t held;                //  Frames in part
    size_t size;                //  Frames the message had (may be > held)
    size_t bytes;               //  Bytes of all its frames
    zframe_t *routing;          //  Part 0 as a frame, made once when asked
    bool stated;                //  socket holds what the message came on
    struct stat socket;         //  Read ahead: its connection's socket
                                //  then (act_security_stat)
} act_msg_t;

typedef struct _act_inbox_t act_inbox_t;

//  Read the next message of socket (a libzmq handle) without waiting.
//  Returns 0, or -1 when none is waiting (msg then holds nothing).
int act_msg_recv (act_msg_t *msg, void *socket);

//  Fill msg with copies of zmsg's frames (for tests and the fuzzer).
void act_msg_from_zmsg (act_msg_t *msg, zmsg_t *zmsg);

//  Release msg's frames (msg may then be filled again); safe twice.
void act_msg_close (act_msg_t *msg);

//  Frame index, or NULL when the message has no such frame (or more
//  frames than are kept).
zmq_msg_t *act_msg_part (act_msg_t *msg, size_t index);

//  The routing id (part 0) as a frame owned by msg, made on first use;
//  NULL when msg is empty.
zframe_t *act_msg_routing (act_msg_t *msg);

//  Frame index as a new CZMQ frame the caller destroys (NULL if absent).
zframe_t *act_msg_frame (act_msg_t *msg, size_t index);

//  A frame's bytes as upper-case hex, as zframe_strhex (caller frees).
char *act_msg_strhex (zmq_msg_t *part);

//  An empty queue of messages read ahead.
act_inbox_t *act_inbox_new (void);

//  Destroy it and its messages, null the pointer; safe on NULL.
void act_inbox_destroy (act_inbox_t **self_p);

//  Read one message of socket onto the end of the queue. Returns it (the
//  caller may take it back with act_inbox_drop_last), or NULL when none
//  is waiting.
act_msg_t *act_inbox_read (act_inbox_t *self, void *socket);

//  Forget the message last read (it was answered at once).
void act_inbox_drop_last (act_inbox_t *self);

//  Move the first message queued into msg; false when the queue is empty.
bool act_inbox_pop (act_inbox_t *self, act_msg_t *msg);

//  Messages queued, and their bytes.
size_t act_inbox_size (act_inbox_t *self);
size_t act_inbox_bytes (act_inbox_t *self);

//  True when a message queued (but the last one, with skip_last) comes
//  from routing id data/size.
bool act_inbox_holds_from (act_inbox_t *self, const void *data, size_t size, bool skip_last);

#endif
