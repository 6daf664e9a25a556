/*  =========================================================================
    act_worker_int - what act_worker.c (links to brokers, the loop) and
    act_task.c (a task and its answers) share; private to libactd.
    ========================================================================= */

#ifndef ACT_WORKER_INT_H_INCLUDED
#define ACT_WORKER_INT_H_INCLUDED

#include "actd/act_worker.h"
#include "act_curve_int.h"

//  The worker's connection to one broker
typedef struct {
    act_worker_t *worker;       //  Owner
    char *endpoint;             //  The broker's worker endpoint
    zsock_t *socket;            //  DEALER, replaced at each reconnect
    uint64_t connection;        //  Number of the current connection
    int64_t heard;              //  Last message from the broker
    int64_t sent;               //  Last message to the broker
    bool welcomed;              //  This connection got more than DISCONNECT
    int backoff_ms;             //  Wait before connecting again after a
                                //  refused READY (0: none)
    int64_t retry_at;           //  When to connect again, while the socket
                                //  is closed after a refused READY
} act_worker_link_t;

struct _act_task_t {
    act_worker_t *worker;       //  Owner
    act_worker_link_t *link;    //  Broker it came from
    uint64_t connection;        //  Connection of that link it came on
    char *id;                   //  Task id
    char *key;                  //  Its key among the worker's tasks (act_task_key)
    char *unreadable;           //  Why its params or meta do not read, or NULL
    char *activity;             //  Activity
    json_t *params;             //  Parameters
    json_t *meta;               //  Meta (context, call_id, deadline_ms, ...)
    bool cancelled;             //  The broker sent CANCEL
    act_task_cancel_fn *on_cancel;  //  Called on CANCEL
    void *cancel_arg;           //  Its argument
};

//  Send command and args (a message to consume, may be NULL) to a broker;
//  -1 while the link waits to connect again (its socket closed)
int act_worker_link_send (act_worker_link_t *link, const char *command, zmsg_t *args);

//  Forget task among the worker's unanswered tasks (the caller destroys it)
void act_worker_task_forget (act_worker_t *self, act_task_t *task);

//  A task of the TASK frames left in msg (id, activity, params, meta: at
//  least the id), received on link's current connection; unreadable says
//  why when its params or meta do not read as the protocol has them
act_task_t *act_task_new (act_worker_link_t *link, zmsg_t *msg);

//  The key of task id among the worker's tasks: the same id may come
//  again on a later connection (a broker restarted on a fresh store) or
//  from another broker while the first task's handler still runs, and an
//  answer to the one must not forget the other (the caller frees it)
char *act_task_key (act_worker_link_t *link, uint64_t connection, const char *id);

//  The largest answer the worker sends (act_worker_set_max_message_bytes)
size_t act_worker_max_message_bytes (act_worker_t *self);

//  Destroy a task; nulls the pointer
void act_task_destroy (act_task_t **self_p);

#endif
