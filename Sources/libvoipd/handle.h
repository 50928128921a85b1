/* The handle behind `voipd *` and what the library's files share about it. Internal. */
#ifndef VOIPD_HANDLE_H
#define VOIPD_HANDLE_H

#include "voipd.h"
#include "frame.h"
#include "json.h"

#define VH_HIDDEN __attribute__((visibility("hidden")))

enum {
    VH_DEFAULT_TIMEOUT_MS = 10000,
    /* voipd sends one event at a time and waits for its acknowledgement: more than this
     * many unacknowledged events is a peer that does not follow the protocol. */
    VH_MAX_QUEUED_EVENTS = 64,
    /* voipd's largest socket quota. */
    VH_MAX_REGISTERED = 253,
    /* Frames read by one voipd_dispatch() call; the descriptor stays readable for the rest. */
    VH_DISPATCH_BATCH = 64,
    /* Background tasks open at once through one handle. */
    VH_MAX_TASKS = 256,
    /* Automatic reconnection: the first delay after a failed attempt, and the longest. */
    VH_RECONNECT_FIRST_MS = 100,
    VH_RECONNECT_MAX_MS = 5000,
    /* The longest background-task name sent. */
    VH_MAX_TASK_NAME = 1024
};

/* A socket hello handed back, not taken yet. */
struct vh_restored {
    char name[VOIPD_NAME_MAX + 1];
    int fd;
};

/* A socket registered through this handle, with the library's own copy of its descriptor
 * (for voipd_reconnect()). */
struct vh_registered {
    char name[VOIPD_NAME_MAX + 1];
    int fd;
};

/* An open background task: the number the app knows, the current voipd's, its name (to
 * begin it again on the next voipd). */
struct vh_task {
    uint64_t id;
    uint64_t voipd_id;          /* 0: the current voipd refused it */
    char *name;
};

/* An event waiting for voipd_dispatch(): the event and, after it, its strings. */
struct vh_queued {
    struct vh_queued *next;
    struct voipd_event event;
    char strings[];
};

struct voipd {
    int connection;             /* the control connection; -1 when there is none */
    int poll_fd;                /* epoll: the connection and `pending`; what voipd_get_fd() gives */
    int pending;                /* eventfd: readable while voipd_dispatch() has something to say */
    int timeout_ms;
    char *path;                 /* where voipd_open() connected; NULL for voipd_open_fd() */
    char name[VOIPD_NAME_MAX + 1];  /* the app's name after a hello; "" before */
    int state;
    double keep_alive_minimum;  /* seconds, as the last hello's reply said */
    double time_scale;          /* real seconds per second of the app's, as it said */
    uint64_t next_id;

    struct vh_queued *queue_head, *queue_tail;
    int queued;
    int lost;                   /* the connection was lost; voipd_dispatch() has not said so yet */
    int signaled;               /* `pending` is readable */

    struct vh_restored restored[VF_MAX_RECEIVED_FDS];
    int restored_count;
    struct vh_registered registered[VH_MAX_REGISTERED];
    int registered_count;

    /* Events delivered with VOIPD_ACK_LATER and not acknowledged yet, of this connection:
     * an acknowledgement of another number (one of a voipd that died) is not sent. */
    uint64_t unacknowledged[VH_MAX_QUEUED_EVENTS];
    int unacknowledged_count;

    /* What the app asked for, to ask the next voipd again. */
    double keep_alive;          /* seconds; 0: none */
    double reachable_for;       /* seconds said with it; 0: not said */
    int call_active;            /* the audio session is active: in a call */
    struct vh_task *tasks;
    int task_count;
    uint64_t next_task;

    /* Automatic reconnection (voipd_set_reconnect()): a timerfd in poll_fd's set. */
    int automatic;
    int timer;
    int backoff_ms;
    int unavailable_told;       /* the handler heard supervisorUnavailable, not Available yet */
    uint64_t random;

    voipd_event_handler handler;
    void *context;
    int dispatching;            /* nesting depth of voipd_dispatch() */
    int close_requested;        /* voipd_close() from a handler: done when dispatch returns */

    char error_code[64];
    char error_message[512];

    struct vf_frame frame;
    struct vf_buffer buffer;
};

/* A received reply to one request: the result object, and the frame's descriptors (in
 * v->frame until the next receive). */
struct vh_reply {
    struct vj result;
};

/* Sends the request in `body` (which holds `id`) and waits for its reply. 0 and *reply
 * set when voipd accepted it (the caller closes any descriptors it does not keep); a
 * voipd_refusal (descriptors already closed); or a negated errno, the connection then
 * closed for a lost or malformed connection. */
VH_HIDDEN int vh_call(voipd *v, uint16_t type, const char *body, long length, uint64_t id,
                      const int *fds, int nfds, struct vh_reply *reply);

/* Sends one frame, waiting for room in the socket until `deadline` (vh_deadline(); -1:
 * forever). 0, -ETIMEDOUT, -ECONNRESET (the connection then closed), or a negated errno. */
VH_HIDDEN int vh_send(voipd *v, uint16_t type, const char *body, long length, const int *fds, int nfds, long long deadline);

/* When a request started now must have its answer (monotonic milliseconds), or -1. */
VH_HIDDEN long long vh_deadline(const voipd *v);

/* The next request id. */
VH_HIDDEN uint64_t vh_next_id(voipd *v);

/* A connected control socket to `path`, or a negated errno. */
VH_HIDDEN int vh_connect_to(const char *path);

/* Makes `connection` the handle's, watched by poll_fd. 0 or a negated errno. */
VH_HIDDEN int vh_attach(voipd *v, int connection);

/* Closes the connection (if open) and drops the queued events. */
VH_HIDDEN void vh_disconnect(voipd *v);

/* Handles a frame received outside the wait for a reply: queues an event, closes stray
 * descriptors, ignores the rest. 0, or a negated errno for a malformed event. */
VH_HIDDEN int vh_take_frame(voipd *v);

/* Queues the event in v->frame's body. 0, or -EPROTO. */
VH_HIDDEN int vh_queue_event(voipd *v);

/* Frees every queued event. */
VH_HIDDEN void vh_drop_events(voipd *v);

/* Makes `pending` readable exactly while events wait or a lost connection is unreported. */
VH_HIDDEN void vh_update_pending(voipd *v);

/* Whether `name` is a valid app or socket name. */
VH_HIDDEN int vh_valid_name(const char *name);

/* The state named `name` (a protocol string). */
VH_HIDDEN int vh_state_named(const char *name);

/* The refusal of error code `code`, remembered with its message in the handle. */
VH_HIDDEN int vh_refusal(voipd *v, const char *code, const char *message);

/* Sends registerSocket for `fd` as `name` (not tracked): 0 or an error as vh_call's. */
VH_HIDDEN int vh_register(voipd *v, const char *name, int fd);

/* Calls the handler with an event of the library's own (number 0, not acknowledged). */
VH_HIDDEN void vh_tell(voipd *v, int kind, const char *kind_name, const char *socket, const char *reason);

/* Connects again and restores what the app had (voipd_reconnect()); with `tell`, each
 * socket the new voipd refuses is told to the handler. */
VH_HIDDEN int vh_reconnect(voipd *v, int tell);

/* Automatic reconnection, from voipd_dispatch(): after a loss, and when the timer fires. */
VH_HIDDEN void vh_reconnect_automatically(voipd *v);

/* Sends setKeepAliveTimeout (0 clears it). 0 or an error as vh_call's. */
VH_HIDDEN int vh_set_keep_alive(voipd *v, double seconds, double reachable_for);

/* Sends setAudioSessionActive. 0 or an error as vh_call's. */
VH_HIDDEN int vh_set_call_active(voipd *v, int active);

/* Begins the open background tasks again on a new connection. 0 or the first error. */
VH_HIDDEN int vh_begin_tasks_again(voipd *v);

/* Frees the background tasks' records. */
VH_HIDDEN void vh_free_tasks(voipd *v);

/* Sends unregisterSocket for `name` (tracking unchanged): 0 or an error as vh_call's. */
VH_HIDDEN int vh_unregister(voipd *v, const char *name);

/* Removes the restored socket `name` from the list: its descriptor, or -ENOENT. */
VH_HIDDEN int vh_take_restored_fd(voipd *v, const char *name);

/* Frees the handle and closes everything it holds. */
VH_HIDDEN void vh_destroy(voipd *v);

#endif
