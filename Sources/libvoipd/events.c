/* Lifecycle events: queued as they arrive (also while a request waits for its reply),
 * delivered to the app's handler by voipd_dispatch(), acknowledged. */
#define _GNU_SOURCE
#include "handle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const kind_names[] = {
    [VOIPD_EVENT_WILL_RESIGN_ACTIVE] = "willResignActive",
    [VOIPD_EVENT_DID_ENTER_BACKGROUND] = "didEnterBackground",
    [VOIPD_EVENT_WILL_ENTER_FOREGROUND] = "willEnterForeground",
    [VOIPD_EVENT_DID_BECOME_ACTIVE] = "didBecomeActive",
    [VOIPD_EVENT_WILL_TERMINATE] = "willTerminate",
    [VOIPD_EVENT_VOIP_SOCKET_READABLE] = "voipSocketReadable",
    [VOIPD_EVENT_KEEP_ALIVE] = "keepAlive",
    [VOIPD_EVENT_BACKGROUND_TASK_WILL_EXPIRE] = "backgroundTaskWillExpire",
};

static int kind_named(const char *name)
{
    for (int kind = 1; kind < (int)(sizeof kind_names / sizeof kind_names[0]); kind++)
        if (strcmp(kind_names[kind], name) == 0) return kind;
    return VOIPD_EVENT_UNKNOWN;
}

void vh_update_pending(voipd *v)
{
    int wanted = v->queued > 0 || v->lost;
    uint64_t value = 1;
    if (wanted && !v->signaled) v->signaled = write(v->pending, &value, sizeof value) == sizeof value;
    else if (!wanted && v->signaled) v->signaled = read(v->pending, &value, sizeof value) != sizeof value;
}

/* Copies string `value` (NULL if absent) into *at, advancing it; the string's place or NULL. */
static const char *copy_string(struct vj value, int present, char **at, const char *end)
{
    if (!present) return NULL;
    char *start = *at;
    size_t length;
    if (vj_string(value, start, (size_t)(end - start), &length) < 0) return NULL;
    *at += length + 1;
    return start;
}

int vh_queue_event(voipd *v)
{
    struct vj root, number, kind, state, reason, socket, value;
    if (vj_parse_object(v->frame.body, v->frame.length, &root) < 0) return -EPROTO;
    if (vj_get(root, "event", &number) != 1 || vj_get(root, "kind", &kind) != 1 || vj_get(root, "state", &state) != 1)
        return -EPROTO;
    int has_reason = vj_get(root, "reason", &reason) == 1;
    int has_socket = vj_get(root, "socket", &socket) == 1;
    long kind_length = vj_string_length(kind), state_length = vj_string_length(state);
    long reason_length = has_reason ? vj_string_length(reason) : 0;
    long socket_length = has_socket ? vj_string_length(socket) : 0;
    if (kind_length < 0 || state_length < 0 || reason_length < 0 || socket_length < 0) return -EPROTO;
    if (v->queued >= VH_MAX_QUEUED_EVENTS) return -EPROTO;

    /* Bounded by the frame: each length is at most the body's. */
    size_t size = (size_t)kind_length + (size_t)state_length + (size_t)reason_length + (size_t)socket_length + 4;
    struct vh_queued *queued = calloc(1, sizeof *queued + size);
    if (queued == NULL) return -ENOMEM;
    struct voipd_event *event = &queued->event;
    char *at = queued->strings, *end = queued->strings + size;
    char *state_name = at;
    int error = vj_u64(number, &event->number) < 0;
    if (copy_string(state, 1, &at, end) == NULL) error = 1;
    event->kind_name = copy_string(kind, 1, &at, end);
    event->reason = has_reason ? copy_string(reason, 1, &at, end) : (*at = '\0', at++);
    event->socket = copy_string(socket, has_socket, &at, end);
    if (event->kind_name == NULL || event->reason == NULL || (has_socket && event->socket == NULL)) error = 1;
    if (vj_get(root, "bytesAvailable", &value) == 1 && vj_u64(value, &event->bytes_available) < 0) error = 1;
    if (vj_get(root, "peerClosed", &value) == 1 && vj_bool(value, &event->peer_closed) < 0) error = 1;
    uint64_t waiting;
    event->connections_waiting = -1;
    if (vj_get(root, "connectionsWaiting", &value) == 1) {
        if (vj_u64(value, &waiting) < 0 || waiting > INT64_MAX) error = 1;
        else event->connections_waiting = (int64_t)waiting;
    }
    if (error) {
        free(queued);
        return -EPROTO;
    }
    event->kind = kind_named(event->kind_name);
    event->state = vh_state_named(state_name);
    if (v->queue_tail != NULL) v->queue_tail->next = queued;
    else v->queue_head = queued;
    v->queue_tail = queued;
    v->queued++;
    vh_update_pending(v);
    return 0;
}

int vh_take_frame(voipd *v)
{
    /* voipd sends descriptors only with the replies that carry them. */
    vf_close_fds(&v->frame);
    if (v->frame.type == VF_EVENT) return vh_queue_event(v);
    if (v->frame.type == VF_REPLY) {
        /* A late reply (its request timed out), or an error voipd could not tie to a
         * request: remember the error; voipd closes the connection after the fatal ones. */
        struct vj root, value, error, code, message;
        char code_text[64], message_text[512] = "";
        if (vj_parse_object(v->frame.body, v->frame.length, &root) < 0) return -EPROTO;
        if (vj_get(root, "error", &error) == 1 && vj_get(error, "code", &code) == 1
            && vj_string(code, code_text, sizeof code_text, NULL) == 0 && vj_get(root, "id", &value) == 1) {
            if (vj_get(error, "message", &message) == 1) vj_string(message, message_text, sizeof message_text, NULL);
            vh_refusal(v, code_text, message_text);
        }
        return 0;
    }
    return 0;                                           /* transitions, and types added later */
}

void vh_drop_events(voipd *v)
{
    while (v->queue_head != NULL) {
        struct vh_queued *next = v->queue_head->next;
        free(v->queue_head);
        v->queue_head = next;
    }
    v->queue_tail = NULL;
    v->queued = 0;
    vh_update_pending(v);
}

void voipd_set_event_handler(voipd *v, voipd_event_handler handler, void *context)
{
    if (v == NULL) return;
    v->handler = handler;
    v->context = context;
}

static int send_acknowledgement(voipd *v, uint64_t number)
{
    char body[64];
    struct vj_writer w;
    vjw_begin(&w, body, sizeof body);
    vjw_u64(&w, "event", number);
    return vh_send(v, VF_ACKNOWLEDGE, body, vjw_end(&w), NULL, 0, vh_deadline(v));
}

int voipd_acknowledge(voipd *v, uint64_t number)
{
    if (v == NULL) return -EINVAL;
    if (v->connection < 0) return -ENOTCONN;
    for (int i = 0; i < v->unacknowledged_count; i++) {
        if (v->unacknowledged[i] != number) continue;
        v->unacknowledged[i] = v->unacknowledged[--v->unacknowledged_count];
        return send_acknowledgement(v, number);
    }
    /* Not an event of this connection awaiting it: acknowledged already, or sent by a voipd
     * that died (numbers start again on each voipd: it would acknowledge another event). */
    return 0;
}

int voipd_dispatch(voipd *v)
{
    if (v == NULL) return -EINVAL;
    int status = 0;
    v->dispatching++;
    for (int read = 0; read < VH_DISPATCH_BATCH && v->connection >= 0; read++) {
        int received = vf_receive(v->connection, &v->buffer, &v->frame, 1);
        if (received == -EAGAIN) break;
        int taken = received > 0 ? vh_take_frame(v) : received == 0 ? -ECONNRESET : received;
        if (taken < 0) {
            vh_disconnect(v);
            status = taken;
        }
    }
    if (v->lost) {
        /* Said once: here, or by the request that found it. */
        v->lost = 0;
        vh_update_pending(v);
        if (v->automatic) {
            status = 0;
            v->unavailable_told = 1;
            vh_tell(v, VOIPD_EVENT_SUPERVISOR_UNAVAILABLE, "supervisorUnavailable", NULL, "the connection to voipd is lost");
            vh_reconnect_automatically(v);
        } else if (status == 0) {
            status = -ECONNRESET;
        }
    } else if (v->connection < 0) {
        if (v->automatic) vh_reconnect_automatically(v);
        else status = -ENOTCONN;
    }

    int handled = 0;
    while (v->queue_head != NULL && !v->close_requested) {
        struct vh_queued *queued = v->queue_head;
        v->queue_head = queued->next;
        if (v->queue_head == NULL) v->queue_tail = NULL;
        v->queued--;
        vh_update_pending(v);
        v->state = queued->event.state;
        int acknowledgement = v->handler != NULL ? v->handler(v, &queued->event, v->context) : VOIPD_ACK_NOW;
        if (acknowledgement == VOIPD_ACK_LATER) {
            /* Bounded like the queue: voipd sends no event while one is unacknowledged. */
            if (v->unacknowledged_count < VH_MAX_QUEUED_EVENTS) v->unacknowledged[v->unacknowledged_count++] = queued->event.number;
        } else if (!v->close_requested && v->connection >= 0) {
            int acknowledged = send_acknowledgement(v, queued->event.number);
            if (acknowledged < 0 && status == 0 && !v->automatic) status = acknowledged;
        }
        free(queued);
        handled++;
    }
    if (--v->dispatching == 0 && v->close_requested) {
        vh_destroy(v);
        return handled;
    }
    return status < 0 ? status : handled;
}
