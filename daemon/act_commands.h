/*  =========================================================================
    act_commands - the client socket's command table (PROTOCOL.md section
    1): each command is one row with its name, the argument frames it
    takes, whether its first argument is a context id, and the handler
    that serves it. Adding a command is adding a row and a function; the
    dispatcher checks the frames, sizes and context id once for all.
    ========================================================================= */

#ifndef ACT_COMMANDS_H_INCLUDED
#define ACT_COMMANDS_H_INCLUDED

#include "act_flow.h"
#include "act_security.h"
#include "act_pages.h"
#include "act_inbox.h"

typedef struct _act_commands_t act_commands_t;

//  STATS' body (PROTOCOL.md section 4), as a new object
typedef json_t *(act_commands_stats_fn) (void *arg);

//  The client side of a broker's parts (all borrowed); stats builds the
//  body of STATS.
act_commands_t *act_commands_new (act_settings_t *settings, act_store_t *store,
                                  act_cache_t *cache, act_flow_t *flow, act_outbox_t *outbox,
                                  act_watches_t *watches, act_security_t *security,
                                  act_commands_stats_fn *stats, void *stats_arg);

//  Destroy it and null the pointer; safe on NULL.
void act_commands_destroy (act_commands_t **self_p);

//  Handle one message from the client socket, [routing id][ACTC01]
//  [command][request id][args...]: reply through the outbox (a message
//  too short to carry a request id is logged and dropped). The message
//  stays the caller's (it closes it).
void act_commands_message (act_commands_t *self, act_msg_t *msg);

//  Build HISTORY pages in pieces through pages (borrowed) instead of at
//  once (NULL: at once).
void act_commands_set_pages (act_commands_t *self, act_pages_t *pages);

//  From now on, every request that passes its checks is answered ERROR
//  busy ("actd is shutting down") and changes nothing: for the requests
//  still unread when actd stops
void act_commands_close (act_commands_t *self);

//  The table, for tests: the number of commands, and the name and the
//  fewest and most argument frames of command index.
size_t act_commands_count (void);
const char *act_commands_name (size_t index, size_t *least, size_t *most);

#endif
