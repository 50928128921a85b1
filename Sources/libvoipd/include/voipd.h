/*
 * voipd.h: libvoipd, the client side of voipd's wire protocol for C and C++ apps.
 *
 * voipd gives Linux apps the iOS multitasking model for VoIP: it suspends an app in the
 * background (SIGSTOP), holds its VoIP sockets, resumes it when data arrives on them, and
 * hands them back after a crash or a relaunch. An app talks to voipd over one control
 * connection: it says hello, registers its VoIP sockets, and handles the lifecycle events
 * voipd sends it (willResignActive, didEnterBackground, voipSocketReadable, ...),
 * acknowledging each. This library does that in C, with no dependency beyond libc; the
 * protocol itself is docs/PROTOCOL.md, the manual is libvoipd(3).
 *
 * A minimal app:
 *
 *     voipd *v;
 *     if (voipd_open(&v, NULL) < 0 || voipd_hello(v, NULL) < 0) ...       // not under voipd
 *     int sip = voipd_take_restored(v, "sip");        // handed back after a crash?
 *     if (sip < 0) { sip = connect_to_registrar(); voipd_register_socket(v, "sip", sip); }
 *     voipd_set_event_handler(v, on_event, app);
 *     // in the app's poll loop: voipd_get_fd(v) readable -> voipd_dispatch(v)
 *
 * Versions. VOIPD_API_VERSION is the version of this API: it grows by one when functions,
 * constants or struct fields are added, and nothing is ever removed or changed within
 * the library's major version (the SONAME, libvoipd.so.1). voipd_api_version() is the
 * version of the library the app runs with, which may be newer than the header it was
 * built with. VOIPD_PROTOCOL_VERSION is the version byte of the frames it speaks.
 *
 * Errors. Functions that can fail return an int: 0 or a non-negative result on success,
 * a negative value on failure: either a negated errno value (-ENOENT: voipd is not running;
 * -ECONNRESET: voipd closed the connection; -EPROTO: voipd sent something malformed;
 * -ETIMEDOUT: no reply in time; -EINVAL: a bad argument), or one of enum voipd_refusal,
 * voipd's refusal of the request (all below -4095, so they never collide with an errno).
 * voipd_strerror() describes both; voipd_error_code() and voipd_error_message() give
 * voipd's own words for the last refusal.
 *
 * Threads. A voipd handle is not thread-safe: use each handle from one thread at a time
 * (serialize with your own lock if several threads share it). Different handles are
 * independent. The event handler runs on the thread that calls voipd_dispatch(), inside
 * that call. The library starts no threads, installs no signal handlers, never raises
 * SIGPIPE, retries EINTR itself, and keeps no global state. Its descriptors are
 * close-on-exec. After fork(), the child must not use the parent's handle (voipd knows
 * the connection by the process that opened it); voipd_close() in the child only closes
 * the child's copies.
 *
 * Blocking. Requests (hello, register, ...) send one frame and wait for voipd's reply, at
 * most the handle's timeout (voipd_set_timeout(), 10 s by default); voipd answers at
 * once. voipd_dispatch() only blocks, like voipd_acknowledge(), if voipd stops reading
 * its connection, and then at most the timeout too.
 */
#ifndef VOIPD_H
#define VOIPD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define VOIPD_EXPORT __attribute__((visibility("default")))
#else
#define VOIPD_EXPORT
#endif

/** The version of this API (see "Versions" above). */
#define VOIPD_API_VERSION 2
/** The wire protocol version this library speaks (the frames' version byte). */
#define VOIPD_PROTOCOL_VERSION 1
/** The longest app or socket name, in bytes. Names are 1 to 64 bytes of A-Z a-z 0-9 . _ - @,
 * and not "." or "..". */
#define VOIPD_NAME_MAX 64

/** A connection to voipd: opaque; made by voipd_open(), freed by voipd_close(). */
typedef struct voipd voipd;

/**
 * voipd's refusals of a request (its error codes, docs/PROTOCOL.md "Errors"), as negative
 * return values. The numbers are stable; codes voipd adds later are VOIPD_ERR_UNKNOWN
 * until this list names them (voipd_error_code() gives the code as voipd sent it).
 */
enum voipd_refusal {
    VOIPD_ERR_UNKNOWN = -4096,            /* a code this library does not know */
    VOIPD_ERR_TRUNCATED_FRAME = -4097,
    VOIPD_ERR_FRAME_TOO_LARGE = -4098,
    VOIPD_ERR_UNKNOWN_TYPE = -4099,
    VOIPD_ERR_UNSUPPORTED_VERSION = -4100,
    VOIPD_ERR_TOO_MANY_DESCRIPTORS = -4101,
    VOIPD_ERR_DESCRIPTOR_MISMATCH = -4102,
    VOIPD_ERR_BAD_REQUEST = -4103,
    VOIPD_ERR_NOT_IDENTIFIED = -4104,     /* an app request before hello */
    VOIPD_ERR_ALREADY_IDENTIFIED = -4105, /* a second hello on one connection */
    VOIPD_ERR_NAME_IN_USE = -4106,        /* the app is connected elsewhere, or runs as another process */
    VOIPD_ERR_INVALID_NAME = -4107,
    VOIPD_ERR_NOT_A_SOCKET = -4108,
    VOIPD_ERR_LISTENING_SOCKET = -4109,
    VOIPD_ERR_NOT_CONNECTED = -4110,
    VOIPD_ERR_DUPLICATE_NAME = -4111,     /* the app already has a socket of that name */
    VOIPD_ERR_QUOTA_EXCEEDED = -4112,     /* the app holds as many sockets as it may */
    VOIPD_ERR_NO_SUCH_APP = -4113,
    VOIPD_ERR_NO_SUCH_SOCKET = -4114,
    VOIPD_ERR_PERMISSION_DENIED = -4115,
    VOIPD_ERR_INVALID_STATE = -4116,      /* the lifecycle refused (an unknown background task, ...) */
    VOIPD_ERR_LAUNCH_FAILED = -4117,
    VOIPD_ERR_INTERNAL_ERROR = -4118,     /* a system call failed inside voipd */
    VOIPD_ERR_USER_QUOTA_EXCEEDED = -4119, /* this uid is at one of its limits (apps, connections, held sockets) */
    VOIPD_ERR_OUT_OF_RESOURCES = -4120    /* voipd is out of descriptors or memory: try again later */
};

/** The app's lifecycle states (docs/LIFECYCLE.md). */
enum voipd_state {
    VOIPD_STATE_UNKNOWN = 0,     /* a state this library does not know: treat it like background */
    VOIPD_STATE_NOT_RUNNING = 1,
    VOIPD_STATE_ACTIVE = 2,      /* in the foreground */
    VOIPD_STATE_INACTIVE = 3,    /* in the foreground but interrupted, or moving */
    VOIPD_STATE_BACKGROUND = 4,  /* running in the background */
    VOIPD_STATE_SUSPENDED = 5,   /* stopped (an app never sees itself in it) */
    VOIPD_STATE_TERMINATED = 6
};

/** Lifecycle events, UIKit's names (docs/PROTOCOL.md "Event kinds"). Kinds voipd adds later
 * arrive as VOIPD_EVENT_UNKNOWN, with kind_name set: acknowledge them like any other. */
enum voipd_event_kind {
    VOIPD_EVENT_UNKNOWN = 0,
    VOIPD_EVENT_WILL_RESIGN_ACTIVE = 1,
    VOIPD_EVENT_DID_ENTER_BACKGROUND = 2,   /* quiesce; 5 s to acknowledge */
    VOIPD_EVENT_WILL_ENTER_FOREGROUND = 3,
    VOIPD_EVENT_DID_BECOME_ACTIVE = 4,
    VOIPD_EVENT_WILL_TERMINATE = 5,         /* clean up before acknowledging: SIGKILL follows */
    VOIPD_EVENT_VOIP_SOCKET_READABLE = 6,   /* read `socket` yourself, then acknowledge */
    VOIPD_EVENT_KEEP_ALIVE = 7,             /* the keep-alive interval elapsed */
    VOIPD_EVENT_BACKGROUND_TASK_WILL_EXPIRE = 8, /* end your background tasks */
    /* Told by the library itself, with voipd_set_reconnect(v, 1): number 0, state the last
     * known, and the handler's return value ignored (there is nothing to acknowledge). */
    VOIPD_EVENT_SUPERVISOR_UNAVAILABLE = 100,   /* the connection to voipd is lost; reconnecting */
    VOIPD_EVENT_SUPERVISOR_AVAILABLE = 101,     /* connected again: hello said, sockets registered,
                                                   keep-alive and background tasks asked again */
    VOIPD_EVENT_REGISTRATION_FAILED = 102       /* the new voipd refused `socket` (reason: why) */
};

/**
 * One lifecycle event, as the handler sees it. The library owns it and its strings, which
 * are valid until the handler returns. Fields may be added at the end in later versions
 * (the library allocates it; never make one yourself).
 */
struct voipd_event {
    uint64_t number;              /* the event's number: what voipd_acknowledge() takes */
    int kind;                     /* enum voipd_event_kind */
    const char *kind_name;        /* the kind as voipd sent it ("didEnterBackground") */
    int state;                    /* enum voipd_state: the app's state once this event is handled */
    const char *reason;           /* why, in words (for logs; not stable) */
    const char *socket;           /* VOIP_SOCKET_READABLE: the held socket's name; else NULL */
    uint64_t bytes_available;     /* VOIP_SOCKET_READABLE: bytes waiting when voipd looked */
    int peer_closed;              /* VOIP_SOCKET_READABLE: 1 if the peer hung up */
    /* API 2: */
    int64_t connections_waiting;  /* VOIP_SOCKET_READABLE of a held listening socket: the
                                     connections waiting to be accepted when voipd looked
                                     (0 if the app accepted them before its stop); -1 for
                                     other sockets and other events */
};

/** What an event handler returns. */
enum voipd_acknowledgement {
    VOIPD_ACK_NOW = 0,    /* the work is done: the library acknowledges the event */
    VOIPD_ACK_LATER = 1   /* the app calls voipd_acknowledge(v, event->number) itself, later */
};

/**
 * Handles one event: do the work first, then return VOIPD_ACK_NOW (voipd's next step may be
 * SIGSTOP or SIGKILL, right after the acknowledgement), or VOIPD_ACK_LATER to acknowledge
 * with voipd_acknowledge() once asynchronous work is done. voipd sends the next event only
 * after this one is acknowledged. The handler may call any request function of the handle
 * (voipd_begin_background_task() in didEnterBackground, for one) and voipd_close().
 */
typedef int (*voipd_event_handler)(voipd *v, const struct voipd_event *event, void *context);

/** The API version of the library the app runs with (VOIPD_API_VERSION of its build). */
VOIPD_EXPORT int voipd_api_version(void);

/**
 * Connects to voipd. `socket_path` NULL or empty resolves the path as voipd does:
 * $VOIPD_SOCKET, else /run/voipd/voipd.sock for root, else $XDG_RUNTIME_DIR/voipd.sock.
 * On success *out is a new handle (free it with voipd_close()) and 0 is returned.
 * Errors: -ENOENT or -ECONNREFUSED (voipd is not running), -EACCES, -EDESTADDRREQ (no path:
 * none given and no variable set), -ENAMETOOLONG, -ENOMEM, -EMFILE.
 */
VOIPD_EXPORT int voipd_open(voipd **out, const char *socket_path);

/**
 * Makes a handle of a control connection that is already open: a connected AF_UNIX
 * SOCK_SEQPACKET socket, which the handle then owns (also on failure, when it is closed).
 * Errors: -EBADF, -ENOTSOCK, -EPROTOTYPE (not an AF_UNIX SOCK_SEQPACKET socket), -ENOMEM.
 * A handle made this way cannot voipd_reconnect() (it has no path): -EDESTADDRREQ.
 */
VOIPD_EXPORT int voipd_open_fd(voipd **out, int fd);

/**
 * Closes the connection and frees the handle: its descriptors (the connection, the one of
 * voipd_get_fd(), the restored sockets not taken, the library's copies of registered
 * sockets) are closed. voipd keeps holding the app's registered sockets. NULL is ignored.
 * Called from the event handler, it takes effect when voipd_dispatch() returns.
 */
VOIPD_EXPORT void voipd_close(voipd *v);

/** How long a request waits for voipd's reply, in milliseconds; -1 waits forever.
 * 10000 by default. Returns 0, or -EINVAL for a value below -1. */
VOIPD_EXPORT int voipd_set_timeout(voipd *v, int milliseconds);

/**
 * Says hello: identifies the connection as the app `name` (NULL: $VOIPD_APP_NAME, which voipd
 * sets for the apps it launches). The reply says the app's state (voipd_state()) and hands
 * back the sockets voipd held for an earlier run of the app (voipd_restored_count(),
 * voipd_take_restored()). Events voipd queued for the app (the voipSocketReadable that
 * relaunched it) follow; voipd_dispatch() delivers them.
 * Errors: -EINVAL (no name, or not a valid one), VOIPD_ERR_ALREADY_IDENTIFIED,
 * VOIPD_ERR_NAME_IN_USE, VOIPD_ERR_PERMISSION_DENIED, VOIPD_ERR_INVALID_NAME, the
 * connection errors (-ECONNRESET, -ETIMEDOUT, -EPROTO, -ENOTCONN).
 */
VOIPD_EXPORT int voipd_hello(voipd *v, const char *name);

/** The app's state: from hello's reply, then from each event dispatched (enum voipd_state). */
VOIPD_EXPORT int voipd_state(const voipd *v);

/**
 * The shortest keep-alive interval this app may ask for, in seconds (UIKit's
 * UIMinimumKeepAliveTimeout): 600 unless its manifest or voipd's configuration lowers it,
 * as the last hello's reply said (600 before a hello, or from a voipd that does not say). API 2.
 */
VOIPD_EXPORT double voipd_keep_alive_minimum(const voipd *v);

/**
 * How long one of the app's seconds lasts, in real seconds: voipd's --time-scale (1 unless a
 * test or demo runs the lifecycle faster), as the last hello's reply said (1 before). The
 * intervals the app gives voipd (keep-alive, reachable_for) are in its own seconds; what it
 * measures elsewhere (a registrar's grant) is in real ones: divide by this to compare. API 2.
 */
VOIPD_EXPORT double voipd_time_scale(const voipd *v);

/** The name of a state as the protocol writes it ("background"); "unknown" for others. */
VOIPD_EXPORT const char *voipd_state_name(int state);

/** The number of sockets hello handed back that are neither taken nor closed yet. */
VOIPD_EXPORT int voipd_restored_count(const voipd *v);

/** The name of restored socket `index` (0 <= index < voipd_restored_count()), or NULL. Valid
 * until the next call that takes or closes restored sockets. */
VOIPD_EXPORT const char *voipd_restored_name(const voipd *v, int index);

/**
 * Takes the socket named `name` that hello handed back: returns its descriptor
 * (close-on-exec), now the caller's, and still held by voipd (no need to register it
 * again). Errors: -ENOENT (hello handed back no socket of that name), -EMFILE.
 */
VOIPD_EXPORT int voipd_take_restored(voipd *v, const char *name);

/** Closes the restored sockets not taken (voipd_close() does too). */
VOIPD_EXPORT void voipd_close_restored(voipd *v);

/**
 * Registers a connected socket as the VoIP socket `name`: voipd holds it while the app
 * lives, watches it while the app is suspended or dead, and hands it back on hello. The
 * app keeps `fd` and goes on using it. The library keeps a copy of the descriptor (one
 * descriptor per registered socket) so that voipd_reconnect() can register it again.
 * Errors: -EINVAL (a bad name), -EBADF, VOIPD_ERR_NOT_IDENTIFIED, VOIPD_ERR_INVALID_NAME,
 * VOIPD_ERR_NOT_A_SOCKET, VOIPD_ERR_LISTENING_SOCKET, VOIPD_ERR_NOT_CONNECTED,
 * VOIPD_ERR_DUPLICATE_NAME, VOIPD_ERR_PERMISSION_DENIED, VOIPD_ERR_QUOTA_EXCEEDED.
 */
VOIPD_EXPORT int voipd_register_socket(voipd *v, const char *name, int fd);

/** Stops voipd holding socket `name` (your descriptor stays open).
 * Errors: -EINVAL, VOIPD_ERR_NOT_IDENTIFIED, VOIPD_ERR_NO_SUCH_SOCKET. */
VOIPD_EXPORT int voipd_unregister_socket(voipd *v, const char *name);

/** A new descriptor (close-on-exec) for held socket `name`, which stays held.
 * Errors: -EINVAL, VOIPD_ERR_NOT_IDENTIFIED, VOIPD_ERR_NO_SUCH_SOCKET, VOIPD_ERR_INTERNAL_ERROR. */
VOIPD_EXPORT int voipd_retrieve_socket(voipd *v, const char *name);

/**
 * Asks for time to finish work in the background (UIKit's beginBackgroundTask): while a
 * task is open, the app is not suspended. On success *task is the task's number, or 0 if
 * voipd refused (no background time left: UIBackgroundTaskInvalid). End every task with
 * voipd_end_background_task(); when its time runs out, voipd sends
 * VOIPD_EVENT_BACKGROUND_TASK_WILL_EXPIRE, then kills the app if tasks are still open.
 * `name` is free text for logs (NULL: "task"). The number is the library's (a reconnection
 * begins the task again on the next voipd, under the same number). Errors: -EINVAL,
 * -ENOSPC (256 tasks open already), VOIPD_ERR_NOT_IDENTIFIED.
 */
VOIPD_EXPORT int voipd_begin_background_task(voipd *v, const char *name, uint64_t *task);

/** Ends a background task. Errors: VOIPD_ERR_NOT_IDENTIFIED, VOIPD_ERR_INVALID_STATE (no such open task). */
VOIPD_EXPORT int voipd_end_background_task(voipd *v, uint64_t task);

/**
 * Asks for a VOIPD_EVENT_KEEP_ALIVE every `seconds` while the app is in the background
 * (UIKit's setKeepAliveTimeout:handler:), waking it if suspended; 0 clears it. voipd's
 * minimum is 600 s by default. Errors: -EINVAL (negative or not finite),
 * VOIPD_ERR_BAD_REQUEST (more than a year), VOIPD_ERR_INVALID_STATE (below the minimum),
 * VOIPD_ERR_PERMISSION_DENIED, VOIPD_ERR_NOT_IDENTIFIED.
 */
VOIPD_EXPORT int voipd_set_keep_alive_timeout(voipd *v, double seconds);

/**
 * voipd_set_keep_alive_timeout(), saying also how long the app stays reachable without a
 * wake, when it knows (`reachable_for` > 0; a SIP phone: what its registrar's grant leaves
 * after its last refresh): when the keep-alive cannot wake it that often, voipd says so in
 * its log and `voipctl status`. 0: not known. Said again to a voipd that restarted. Errors:
 * as voipd_set_keep_alive_timeout(), and -EINVAL for a negative or not finite
 * `reachable_for`, VOIPD_ERR_BAD_REQUEST for one of more than a year. API 2.
 */
VOIPD_EXPORT int voipd_set_keep_alive_reachable(voipd *v, double seconds, double reachable_for);

/**
 * Says a call began (1) or ended (0): the app's audio session is active (AVAudioSession's
 * setActive). While it is, the app is not suspended in the background and no background
 * budget runs out; when it ends, the background rules apply again (with no background task
 * open, the app is suspended at once, before this call returns). Said again to a voipd that
 * restarted. Errors: -EINVAL, VOIPD_ERR_PERMISSION_DENIED (the manifest says
 * "calls": false), VOIPD_ERR_INVALID_STATE, VOIPD_ERR_NOT_IDENTIFIED.
 */
VOIPD_EXPORT int voipd_set_call_active(voipd *v, int active);

/** Sets the function that handles events (NULL: events are acknowledged unseen). */
VOIPD_EXPORT void voipd_set_event_handler(voipd *v, voipd_event_handler handler, void *context);

/**
 * The descriptor to watch for POLLIN (poll, epoll, select, a GLib or libevent source):
 * readable when voipd_dispatch() has something to do (a frame from voipd, or events that
 * arrived while a request waited). It stays the same across voipd_reconnect(). Do not
 * read it or close it.
 */
VOIPD_EXPORT int voipd_get_fd(const voipd *v);

/**
 * Reads what voipd sent, without blocking, and calls the event handler for each event
 * (acknowledging it unless the handler returns VOIPD_ACK_LATER). Returns the number of
 * events handled (0 is normal: the descriptor was readable for something else).
 * Errors: -ECONNRESET (the connection is lost: voipd closed it, after a restart or a fatal
 * error, or a request found it lost; voipd_get_fd() turns readable to say so, and it is
 * said once; voipd_reconnect() may follow), -EPROTO (voipd sent a malformed frame: the
 * connection is closed), -ENOTCONN (it was lost before, and said so).
 */
VOIPD_EXPORT int voipd_dispatch(voipd *v);

/**
 * Acknowledges event `number` (when its handler returned VOIPD_ACK_LATER). No reply. A
 * number that is not awaiting its acknowledgement on this connection (acknowledged
 * already, or an event of a voipd that died: the numbers start again on each) is not sent,
 * and 0 is returned. Errors: -ENOTCONN, -ECONNRESET.
 */
VOIPD_EXPORT int voipd_acknowledge(voipd *v, uint64_t number);

/**
 * Connects again, after voipd_dispatch() (or a request) reported the connection lost, for
 * instance across a restart of voipd (docs/PROTOCOL.md "When voipd restarts"): opens a new
 * connection to the same path and says hello under the same name; then, for each socket
 * registered through this handle, keeps the one hello hands back if it is the same socket
 * (a voipd under systemd gets them back from its descriptor store), else registers the
 * library's copy (first unregistering an older socket voipd holds under the name); sets
 * the keep-alive again and begins the open background tasks again. Events of the old
 * connection are dropped, and so are acknowledgements of them; read voipd_state() afresh.
 * The descriptor of voipd_get_fd() stays the same. Returns 0 when all of it was done; the
 * error of connecting or of hello (then not connected: try again later); or, connected,
 * the first error of the rest (a socket refused is no longer tracked). -EDESTADDRREQ for a
 * handle of voipd_open_fd().
 */
VOIPD_EXPORT int voipd_reconnect(voipd *v);

/**
 * With `automatic` 1, voipd_dispatch() reconnects by itself when the connection is lost, as
 * voipd_reconnect() does: at once, then after 100 ms doubling to 5 s (each delay drawn
 * between half and all of it), from a timer inside voipd_get_fd()'s descriptor, so the
 * app's loop needs no change. The handler hears VOIPD_EVENT_SUPERVISOR_UNAVAILABLE when the
 * connection is lost, VOIPD_EVENT_REGISTRATION_FAILED for each socket the new voipd
 * refuses, and VOIPD_EVENT_SUPERVISOR_AVAILABLE once it is done; voipd_dispatch() then
 * reports no connection error. An attempt waits for the new voipd's hello reply (at most
 * the timeout) inside voipd_dispatch(). 0 (the default) turns it off. Errors:
 * -EDESTADDRREQ (a handle of voipd_open_fd()), -EMFILE.
 */
VOIPD_EXPORT int voipd_set_reconnect(voipd *v, int automatic);

/** Describes an error return (a negated errno or a voipd_refusal). Never NULL. */
VOIPD_EXPORT const char *voipd_strerror(int error);

/** voipd's code of the last refusal on this handle ("nameInUse"), or "" if none yet. */
VOIPD_EXPORT const char *voipd_error_code(const voipd *v);

/** voipd's message with the last refusal (for people; not stable), or "" if none yet. */
VOIPD_EXPORT const char *voipd_error_message(const voipd *v);

#ifdef __cplusplus
}
#endif

#endif /* VOIPD_H */
