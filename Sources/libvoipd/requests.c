/* The app's requests (docs/PROTOCOL.md "App messages"): hello and the sockets it hands
 * back, registering and retrieving sockets, background tasks, the keep-alive. */
#define _GNU_SOURCE                 /* F_DUPFD_CLOEXEC */
#include "handle.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Room for the largest request body: an id, a name and their syntax. */
enum { REQUEST_BODY = VH_MAX_TASK_NAME * 6 + 64 };

/* A request being written: its id, then the fields its type needs. */
struct request {
    uint64_t id;
    struct vj_writer writer;
    char body[REQUEST_BODY];
};

static void begin_request(voipd *v, struct request *request)
{
    request->id = vh_next_id(v);
    vjw_begin(&request->writer, request->body, sizeof request->body);
    vjw_u64(&request->writer, "id", request->id);
}

/* Sends the request and waits for its reply (see vh_call). */
static int send_request(voipd *v, struct request *request, uint16_t type, const int *fds, int nfds, struct vh_reply *reply)
{
    long length = vjw_end(&request->writer);
    if (length < 0) return -EINVAL;                     /* a value that cannot be written */
    return vh_call(v, type, request->body, length, request->id, fds, nfds, reply);
}

/* A request whose reply carries no descriptor (any that come are closed). */
static int send_plain_request(voipd *v, struct request *request, uint16_t type, struct vh_reply *reply)
{
    int called = send_request(v, request, type, NULL, 0, reply);
    if (called == 0) vf_close_fds(&v->frame);
    return called;
}

int voipd_hello(voipd *v, const char *name)
{
    if (v == NULL) return -EINVAL;
    if (name == NULL) name = getenv("VOIPD_APP_NAME");
    if (!vh_valid_name(name)) return -EINVAL;
    char name_copy[VOIPD_NAME_MAX + 1];
    strcpy(name_copy, name);                            /* `name` may be v->name, cleared below */

    struct request request;
    begin_request(v, &request);
    vjw_string(&request.writer, "name", name_copy);
    struct vh_reply reply;
    int called = send_request(v, &request, VF_HELLO, NULL, 0, &reply);
    if (called < 0) return called;
    voipd_close_restored(v);                            /* of an earlier hello */

    /* result: {"app": {"state": ...}, "sockets": [names]}, one descriptor per name, in order. */
    struct vj app, state, sockets, element;
    char text[32];
    int count = 0;
    size_t cursor = 0;
    int valid = vj_get(reply.result, "app", &app) == 1 && vj_get(app, "state", &state) == 1
        && vj_string(state, text, sizeof text, NULL) == 0 && vj_get(reply.result, "sockets", &sockets) == 1
        && vj_type(sockets) == VJ_ARRAY;
    /* Absent from older voipds: 600 s, and real seconds. */
    struct vj number;
    double minimum = 600, scale = 1;
    if (valid && vj_get(app, "keepAliveMinimumSeconds", &number) == 1 && (vj_double(number, &minimum) < 0 || !(minimum > 0)))
        valid = 0;
    if (valid && vj_get(reply.result, "timeScale", &number) == 1 && (vj_double(number, &scale) < 0 || !(scale > 0 && scale < 1e9)))
        valid = 0;
    int next = 0;
    while (valid && (next = vj_next(sockets, &cursor, &element)) == 1) {
        if (count >= v->frame.nfds || vj_string(element, v->restored[count].name, sizeof v->restored[count].name, NULL) < 0
            || !vh_valid_name(v->restored[count].name)) {
            valid = 0;
            break;
        }
        count++;
    }
    if (!valid || next < 0 || count != v->frame.nfds) {
        vf_close_fds(&v->frame);
        vh_disconnect(v);
        return -EPROTO;
    }
    for (int i = 0; i < count; i++) v->restored[i].fd = v->frame.fds[i];
    v->restored_count = count;
    v->frame.nfds = 0;
    v->state = vh_state_named(text);
    v->keep_alive_minimum = minimum;
    v->time_scale = scale;
    strcpy(v->name, name_copy);
    return 0;
}

double voipd_keep_alive_minimum(const voipd *v)
{
    return v == NULL ? 600 : v->keep_alive_minimum;
}

double voipd_time_scale(const voipd *v)
{
    return v == NULL ? 1 : v->time_scale;
}

int voipd_state(const voipd *v)
{
    return v == NULL ? VOIPD_STATE_UNKNOWN : v->state;
}

int voipd_restored_count(const voipd *v)
{
    return v == NULL ? 0 : v->restored_count;
}

const char *voipd_restored_name(const voipd *v, int index)
{
    if (v == NULL || index < 0 || index >= v->restored_count) return NULL;
    return v->restored[index].name;
}

int vh_take_restored_fd(voipd *v, const char *name)
{
    for (int i = 0; i < v->restored_count; i++) {
        if (strcmp(v->restored[i].name, name) != 0) continue;
        int fd = v->restored[i].fd;
        memmove(v->restored + i, v->restored + i + 1, (size_t)(v->restored_count - i - 1) * sizeof v->restored[0]);
        v->restored_count--;
        return fd;
    }
    return -ENOENT;
}

/* Remembers `fd` (a copy is made) as registered under `name`, replacing an older copy. */
static int track(voipd *v, const char *name, int fd)
{
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (copy < 0) return -errno;
    for (int i = 0; i < v->registered_count; i++) {
        if (strcmp(v->registered[i].name, name) == 0) {
            close(v->registered[i].fd);
            v->registered[i].fd = copy;
            return 0;
        }
    }
    if (v->registered_count == VH_MAX_REGISTERED) {
        close(copy);
        return -ENOSPC;
    }
    strcpy(v->registered[v->registered_count].name, name);
    v->registered[v->registered_count++].fd = copy;
    return 0;
}

static void untrack(voipd *v, const char *name)
{
    for (int i = 0; i < v->registered_count; i++) {
        if (strcmp(v->registered[i].name, name) == 0) {
            close(v->registered[i].fd);
            v->registered[i] = v->registered[--v->registered_count];
            return;
        }
    }
}

int voipd_take_restored(voipd *v, const char *name)
{
    if (v == NULL || name == NULL) return -EINVAL;
    for (int i = 0; i < v->restored_count; i++) {
        if (strcmp(v->restored[i].name, name) != 0) continue;
        int tracked = track(v, name, v->restored[i].fd);
        if (tracked < 0 && tracked != -ENOSPC) return tracked;     /* still restored: try again */
        return vh_take_restored_fd(v, name);
    }
    return -ENOENT;
}

void voipd_close_restored(voipd *v)
{
    if (v == NULL) return;
    for (int i = 0; i < v->restored_count; i++) close(v->restored[i].fd);
    v->restored_count = 0;
}

/* A request whose body is an id and a name, answered with a reply. */
static int named_request(voipd *v, uint16_t type, const char *name, const int *fds, int nfds, struct vh_reply *reply)
{
    if (v == NULL) return -EINVAL;
    if (!vh_valid_name(name)) return -EINVAL;
    struct request request;
    begin_request(v, &request);
    vjw_string(&request.writer, "name", name);
    return send_request(v, &request, type, fds, nfds, reply);
}

int vh_register(voipd *v, const char *name, int fd)
{
    struct vh_reply reply;
    int called = named_request(v, VF_REGISTER_SOCKET, name, &fd, 1, &reply);
    if (called == 0) vf_close_fds(&v->frame);
    return called;
}

int voipd_register_socket(voipd *v, const char *name, int fd)
{
    if (v == NULL || !vh_valid_name(name)) return -EINVAL;
    if (fd < 0 || fcntl(fd, F_GETFD) < 0) return -EBADF;
    int called = vh_register(v, name, fd);
    if (called < 0) return called;
    /* Held by voipd now; without a copy it is only not registered again by voipd_reconnect(). */
    int tracked = track(v, name, fd);
    (void)tracked;
    return 0;
}

int vh_unregister(voipd *v, const char *name)
{
    struct vh_reply reply;
    int called = named_request(v, VF_UNREGISTER_SOCKET, name, NULL, 0, &reply);
    if (called == 0) vf_close_fds(&v->frame);
    return called;
}

int voipd_unregister_socket(voipd *v, const char *name)
{
    int called = vh_unregister(v, name);
    if (called == 0 || called == VOIPD_ERR_NO_SUCH_SOCKET) untrack(v, name);
    return called;
}

int voipd_retrieve_socket(voipd *v, const char *name)
{
    struct vh_reply reply;
    int called = named_request(v, VF_RETRIEVE_SOCKET, name, NULL, 0, &reply);
    if (called < 0) return called;
    if (v->frame.nfds != 1) {
        vf_close_fds(&v->frame);
        vh_disconnect(v);
        return -EPROTO;
    }
    v->frame.nfds = 0;
    return v->frame.fds[0];
}

/* Asks the current voipd for a background task: 0 and *voipd_id (0: refused), or an error. */
static int begin_task(voipd *v, const char *name, uint64_t *voipd_id)
{
    struct request request;
    begin_request(v, &request);
    vjw_string(&request.writer, "name", name);
    struct vh_reply reply;
    int called = send_plain_request(v, &request, VF_BEGIN_BACKGROUND_TASK, &reply);
    if (called < 0) return called;
    struct vj value;
    if (vj_get(reply.result, "task", &value) != 1 || vj_u64(value, voipd_id) < 0) {
        vh_disconnect(v);
        return -EPROTO;
    }
    return 0;
}

static int end_task(voipd *v, uint64_t voipd_id)
{
    struct request request;
    begin_request(v, &request);
    vjw_u64(&request.writer, "task", voipd_id);
    struct vh_reply reply;
    return send_plain_request(v, &request, VF_END_BACKGROUND_TASK, &reply);
}

int voipd_begin_background_task(voipd *v, const char *name, uint64_t *task)
{
    if (v == NULL || task == NULL) return -EINVAL;
    *task = 0;
    if (name == NULL) name = "task";
    if (!vj_valid_utf8(name, VH_MAX_TASK_NAME)) return -EINVAL;
    if (v->task_count == VH_MAX_TASKS) return -ENOSPC;
    if (v->tasks == NULL && (v->tasks = calloc(VH_MAX_TASKS, sizeof *v->tasks)) == NULL) return -ENOMEM;
    char *copy = strdup(name);
    if (copy == NULL) return -ENOMEM;
    uint64_t voipd_id = 0;
    int begun = begin_task(v, name, &voipd_id);
    if (begun < 0 || voipd_id == 0) {
        free(copy);
        return begun;
    }
    /* The number the app gets is the library's: the next voipd gives the task another. */
    struct vh_task *record = &v->tasks[v->task_count++];
    record->id = ++v->next_task;
    record->voipd_id = voipd_id;
    record->name = copy;
    *task = record->id;
    return 0;
}

int voipd_end_background_task(voipd *v, uint64_t task)
{
    if (v == NULL) return -EINVAL;
    for (int i = 0; i < v->task_count; i++) {
        struct vh_task *record = &v->tasks[i];
        if (record->id != task) continue;
        int ended = record->voipd_id == 0 ? 0 : end_task(v, record->voipd_id);
        /* Ended, or unknown to voipd (it expired): either way no longer open. */
        if (ended == 0 || ended == VOIPD_ERR_INVALID_STATE) {
            free(record->name);
            *record = v->tasks[--v->task_count];
        }
        return ended;
    }
    return vh_refusal(v, "invalidState", "no open background task of that number");
}

int vh_begin_tasks_again(voipd *v)
{
    int first_error = 0;
    for (int i = 0; i < v->task_count && v->connection >= 0; i++) {
        int begun = begin_task(v, v->tasks[i].name, &v->tasks[i].voipd_id);
        if (begun < 0) {
            v->tasks[i].voipd_id = 0;
            if (first_error == 0) first_error = begun;
        }
    }
    return first_error;
}

void vh_free_tasks(voipd *v)
{
    for (int i = 0; i < v->task_count; i++) free(v->tasks[i].name);
    free(v->tasks);
    v->tasks = NULL;
    v->task_count = 0;
}

int vh_set_keep_alive(voipd *v, double seconds, double reachable_for)
{
    struct request request;
    begin_request(v, &request);
    if (seconds > 0) {                                                      /* absent: clear it */
        vjw_seconds(&request.writer, "seconds", seconds);
        if (reachable_for > 0) vjw_seconds(&request.writer, "reachableFor", reachable_for);
    }
    struct vh_reply reply;
    return send_plain_request(v, &request, VF_SET_KEEP_ALIVE_TIMEOUT, &reply);
}

int voipd_set_keep_alive_timeout(voipd *v, double seconds)
{
    return voipd_set_keep_alive_reachable(v, seconds, 0);
}

int voipd_set_keep_alive_reachable(voipd *v, double seconds, double reachable_for)
{
    if (v == NULL || !isfinite(seconds) || seconds < 0 || !isfinite(reachable_for) || reachable_for < 0) return -EINVAL;
    int set = vh_set_keep_alive(v, seconds, reachable_for);
    if (set == 0) {
        v->keep_alive = seconds;
        v->reachable_for = seconds > 0 ? reachable_for : 0;
    }
    return set;
}

int vh_set_call_active(voipd *v, int active)
{
    struct request request;
    begin_request(v, &request);
    vjw_bool(&request.writer, "active", active);
    struct vh_reply reply;
    return send_plain_request(v, &request, VF_SET_AUDIO_SESSION_ACTIVE, &reply);
}

int voipd_set_call_active(voipd *v, int active)
{
    if (v == NULL) return -EINVAL;
    int set = vh_set_call_active(v, active != 0);
    if (set == 0) v->call_active = active != 0;
    return set;
}
