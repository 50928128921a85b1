/*
 * libvoipd against a hostile voipd: a fake daemon on a socket pair sends malformed,
 * oversized, mismatched and randomly mutated frames, and the library must answer each
 * with an error (never crash, never read out of bounds, never leak a descriptor or a
 * byte). Also checks the strict JSON reader on its own. Built by the tests with the
 * library's sources under AddressSanitizer and UndefinedBehaviorSanitizer:
 *   gcc -std=c11 -fsanitize=address,undefined -ISources/libvoipd -ISources/libvoipd/include \
 *       Tests/libvoipd/hostile_voipd.c Sources/libvoipd/[a-z]*.c
 * Prints "ok" and exits 0 when every check holds. Usage: hostile_voipd [ROUNDS] (fuzz rounds).
 */
#define _GNU_SOURCE
#include <voipd.h>
#include "frame.h"
#include "json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int failures;

#define CHECK(condition, ...) do { \
    if (!(condition)) { failures++; fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); } \
} while (0)

static int open_descriptors(void)
{
    int count = 0;
    DIR *directory = opendir("/proc/self/fd");
    for (struct dirent *entry; directory != NULL && (entry = readdir(directory)) != NULL;)
        if (entry->d_name[0] != '.') count++;
    if (directory != NULL) closedir(directory);
    return count - 1;                                   /* the directory's own */
}

/* Sends a raw packet (header included) with `nfds` descriptors (copies of /dev/null), by
 * the library's own sendmsg: the header says whatever the test wants. */
static void send_raw(int fd, const void *packet, size_t length, int nfds)
{
    int fds[VF_MAX_RECEIVED_FDS] = { 0 };
    for (int i = 0; i < nfds; i++) fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct iovec iov = { .iov_base = (void *)packet, .iov_len = length };
    ssize_t sent = vf_sendmsg(fd, &iov, 1, fds, nfds, MSG_NOSIGNAL);
    if (sent < 0) fprintf(stderr, "sendmsg: %s\n", strerror((int)-sent));
    for (int i = 0; i < nfds; i++) close(fds[i]);
}

static unsigned char packet[65536 + 16];

/* A frame of `type` with `body`, the header's descriptor count `declared`, and `nfds`
 * descriptors attached. */
static void send_frame(int fd, int type, const char *body, size_t length, int declared, int nfds)
{
    packet[0] = length & 0xff; packet[1] = length >> 8 & 0xff; packet[2] = length >> 16 & 0xff; packet[3] = length >> 24 & 0xff;
    packet[4] = type & 0xff; packet[5] = type >> 8 & 0xff; packet[6] = (unsigned char)declared; packet[7] = 1;
    memcpy(packet + 8, body, length);
    send_raw(fd, packet, 8 + length, nfds);
}

static void send_json(int fd, int type, const char *body, int nfds)
{
    send_frame(fd, type, body, strlen(body), nfds, nfds);
}

/* A handle on one end of a fresh socket pair; *peer is the fake voipd's end. */
static voipd *pair(int *peer)
{
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) < 0) { perror("socketpair"); exit(1); }
    voipd *v = NULL;
    int opened = voipd_open_fd(&v, ends[0]);
    CHECK(opened == 0, "voipd_open_fd: %s", voipd_strerror(opened));
    voipd_set_timeout(v, 200);
    *peer = ends[1];
    return v;
}

/* Says hello against a prepared reply (sent before the request: one thread plays both sides). */
static int hello_with(const void *raw, size_t length, int declared, int nfds, voipd **out)
{
    int peer;
    voipd *v = pair(&peer);
    if (raw != NULL) send_frame(peer, 128, raw, length, declared, nfds);
    else close(peer);                                   /* voipd is gone */
    int result = voipd_hello(v, "app");
    *out = v;
    if (raw != NULL) close(peer);
    return result;
}

static const char hello_reply[] =
    "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"name\":\"app\",\"state\":\"background\",\"voipSockets\":1},\"sockets\":[\"sip\"]}}";

static void malformed_replies(void)
{
    static const struct { const char *body; const char *why; } bodies[] = {
        { "", "empty" }, { "{", "unterminated" }, { "[]", "an array" }, { "null", "null" },
        { "{\"id\":1,\"ok\":true}", "no result" },
        { "{\"id\":1,\"ok\":true,\"result\":[]}", "result not an object" },
        { "{\"id\":1,\"ok\":1,\"result\":{}}", "ok not a bool" },
        { "{\"id\":-1,\"ok\":true,\"result\":{}}", "negative id" },
        { "{\"id\":1.5,\"ok\":true,\"result\":{}}", "fractional id" },
        { "{\"id\":18446744073709551616,\"ok\":true,\"result\":{}}", "id above 2^64" },
        { "{\"id\":1,\"id\":1,\"ok\":true,\"result\":{}}", "duplicate key" },
        { "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\"}}}", "no sockets" },
        { "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\"},\"sockets\":[\"sip\"]}}", "a name without its descriptor" },
        { "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\"},\"sockets\":[1]}}", "a number for a name" },
        { "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\"},\"sockets\":[\"a\\u0000b\"]}}", "a NUL in a name" },
        { "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\"},\"sockets\":[\"\\ud800\"]}}", "a lone surrogate" },
        { "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\"},\"sockets\":[\"\xc0\xaf\"]}}", "overlong UTF-8" },
        { "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\"},\"sockets\":[]}} x", "trailing garbage" },
        { "{\"id\":1,\"ok\":false}", "an error without its object" },
        { "{\"id\":1,\"ok\":false,\"error\":{\"message\":\"m\"}}", "an error without a code" },
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        voipd *v;
        int result = hello_with(bodies[i].body, strlen(bodies[i].body), 0, 0, &v);
        CHECK(result == -EPROTO, "%s: %d (%s)", bodies[i].why, result, voipd_strerror(result));
        CHECK(voipd_hello(v, "app") == -ENOTCONN, "%s: the connection should be closed", bodies[i].why);
        voipd_close(v);
    }
    /* The same sockets list with a descriptor too many or too few. */
    voipd *v;
    CHECK(hello_with(hello_reply, strlen(hello_reply), 2, 2, &v) == -EPROTO, "two descriptors for one name");
    voipd_close(v);
    CHECK(hello_with(hello_reply, strlen(hello_reply), 0, 0, &v) == -EPROTO, "no descriptor for one name");
    voipd_close(v);

    /* Broken headers: short, a wrong length, version 2, a descriptor count that lies. */
    int peer;
    static const unsigned char short_packet[5] = { 1, 0, 0, 0, 128 };
    v = pair(&peer);
    send_raw(peer, short_packet, sizeof short_packet, 0);
    CHECK(voipd_hello(v, "app") == -EPROTO, "a 5-byte packet");
    voipd_close(v);
    close(peer);
    static const unsigned char lying[10] = { 9, 0, 0, 0, 128, 0, 0, 1, '{', '}' };     /* says 9 bytes, has 2 */
    v = pair(&peer);
    send_raw(peer, lying, sizeof lying, 0);
    CHECK(voipd_hello(v, "app") == -EPROTO, "a body length that lies");
    voipd_close(v);
    close(peer);
    static const unsigned char version2[10] = { 2, 0, 0, 0, 128, 0, 0, 2, '{', '}' };
    v = pair(&peer);
    send_raw(peer, version2, sizeof version2, 0);
    CHECK(voipd_hello(v, "app") == -EPROTO, "version 2");
    voipd_close(v);
    close(peer);
    v = pair(&peer);
    send_frame(peer, 128, "{}", 2, 0, 3);               /* three descriptors, none declared */
    CHECK(voipd_hello(v, "app") == -EPROTO, "undeclared descriptors");
    voipd_close(v);
    close(peer);
    v = pair(&peer);
    send_frame(peer, 128, hello_reply, strlen(hello_reply), 1, 253);     /* the kernel's most */
    CHECK(voipd_hello(v, "app") == -EPROTO, "253 descriptors, 1 declared");
    voipd_close(v);
    close(peer);
}

static void good_and_odd_replies(void)
{
    voipd *v;
    int result = hello_with(hello_reply, strlen(hello_reply), 1, 1, &v);
    CHECK(result == 0, "a good hello: %s", voipd_strerror(result));
    CHECK(voipd_state(v) == VOIPD_STATE_BACKGROUND, "state %d", voipd_state(v));
    CHECK(voipd_restored_count(v) == 1 && strcmp(voipd_restored_name(v, 0), "sip") == 0, "restored sip");
    CHECK(voipd_restored_name(v, 1) == NULL && voipd_restored_name(v, -1) == NULL, "restored bounds");
    CHECK(voipd_keep_alive_minimum(v) == 600 && voipd_time_scale(v) == 1, "a voipd that does not say: 600 s, real seconds");
    int fd = voipd_take_restored(v, "sip");
    CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC), "the restored descriptor is close-on-exec");
    CHECK(voipd_take_restored(v, "sip") == -ENOENT, "taken once");
    if (fd >= 0) close(fd);
    voipd_close(v);

    /* Unknown fields, unknown states, escaped names, whitespace: all fine. */
    static const char odd[] = " {\"future\":[1,{\"x\":null}],\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"hibernating\"},"
                              "\"sockets\":[\"s\\u0069p\", \"rtp\"] , \"more\":null} } ";
    result = hello_with(odd, strlen(odd), 2, 2, &v);
    CHECK(result == 0, "an odd but valid hello: %s", voipd_strerror(result));
    CHECK(voipd_state(v) == VOIPD_STATE_UNKNOWN, "an unknown state");
    CHECK(voipd_restored_count(v) == 2 && strcmp(voipd_restored_name(v, 0), "sip") == 0, "an escaped name");
    voipd_close(v);

    /* The app's keep-alive minimum and voipd's time scale, as voipd says them. */
    static const char scaled[] = "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\",\"keepAliveMinimumSeconds\":512.5},"
                                 "\"sockets\":[],\"timeScale\":0.1}}";
    result = hello_with(scaled, strlen(scaled), 0, 0, &v);
    CHECK(result == 0 && voipd_keep_alive_minimum(v) == 512.5 && voipd_time_scale(v) == 0.1, "minimum %g, time scale %g",
          voipd_keep_alive_minimum(v), voipd_time_scale(v));
    voipd_close(v);
    static const char *const bad_numbers[] = {
        "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\",\"keepAliveMinimumSeconds\":\"600\"},\"sockets\":[]}}",
        "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\",\"keepAliveMinimumSeconds\":-1},\"sockets\":[]}}",
        "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\"},\"sockets\":[],\"timeScale\":0}}",
        "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\"},\"sockets\":[],\"timeScale\":1e400}}",
    };
    for (size_t i = 0; i < sizeof bad_numbers / sizeof bad_numbers[0]; i++) {
        result = hello_with(bad_numbers[i], strlen(bad_numbers[i]), 0, 0, &v);
        CHECK(result == -EPROTO, "a bad number in hello's reply (%zu): %s", i, voipd_strerror(result));
        voipd_close(v);
    }

    /* A refusal: its code and message; an unknown code. */
    static const char refused[] = "{\"error\":{\"code\":\"nameInUse\",\"message\":\"app is connected\"},\"id\":1,\"ok\":false}";
    result = hello_with(refused, strlen(refused), 0, 0, &v);
    CHECK(result == VOIPD_ERR_NAME_IN_USE && strcmp(voipd_error_code(v), "nameInUse") == 0
          && strcmp(voipd_error_message(v), "app is connected") == 0, "a refusal: %d", result);
    voipd_close(v);
    static const char novel[] = "{\"error\":{\"code\":\"tooManyApps\",\"message\":\"\"},\"id\":1,\"ok\":false}";
    result = hello_with(novel, strlen(novel), 0, 0, &v);
    CHECK(result == VOIPD_ERR_UNKNOWN && strcmp(voipd_error_code(v), "tooManyApps") == 0, "a new code: %d", result);
    voipd_close(v);

    /* A reply to another request is skipped; then nothing: a timeout, the handle intact. */
    static const char other[] = "{\"id\":7,\"ok\":true,\"result\":{}}";
    result = hello_with(other, strlen(other), 0, 0, &v);
    CHECK(result == -ETIMEDOUT, "a reply to another id: %s", voipd_strerror(result));
    voipd_close(v);

    /* End of file while waiting. */
    result = hello_with(NULL, 0, 0, 0, &v);
    CHECK(result == -ECONNRESET, "end of file: %s", voipd_strerror(result));
    voipd_close(v);
}

static int handled;
static int count_events(voipd *v, const struct voipd_event *event, void *context)
{
    (void)v;
    (void)context;
    handled++;
    if (event->kind == VOIPD_EVENT_VOIP_SOCKET_READABLE && strcmp(event->socket, "sip") == 0)
        CHECK(event->bytes_available == 37 && event->peer_closed == 1 && event->connections_waiting == -1, "readable fields");
    else if (event->kind == VOIPD_EVENT_VOIP_SOCKET_READABLE)
        CHECK(strcmp(event->socket, "sip-listener") == 0 && event->connections_waiting == 3, "a listener's connections waiting");
    else
        CHECK(event->connections_waiting == -1, "no connections waiting for %s", event->kind_name);
    return VOIPD_ACK_NOW;
}

static int later(voipd *v, const struct voipd_event *event, void *context)
{
    (void)v;
    (void)event;
    (void)context;
    return VOIPD_ACK_LATER;
}

static void events(void)
{
    int peer;
    voipd *v = pair(&peer);
    voipd_set_event_handler(v, count_events, NULL);
    send_json(peer, 129, "{\"event\":3,\"kind\":\"voipSocketReadable\",\"state\":\"background\",\"reason\":\"r\","
                         "\"socket\":\"sip\",\"bytesAvailable\":37,\"peerClosed\":true}", 0);
    send_json(peer, 129, "{\"event\":4,\"kind\":\"somethingNew\",\"state\":\"background\",\"reason\":\"\"}", 0);
    send_json(peer, 130, "{\"app\":\"x\"}", 0);          /* a transition: ignored */
    send_json(peer, 999, "not even json", 0);           /* a type from the future: ignored */
    int result = voipd_dispatch(v);
    CHECK(result == 2 && handled == 2, "two events dispatched: %d", result);
    /* Both acknowledged, in order. */
    char ack[128];
    ssize_t n = recv(peer, ack, sizeof ack - 1, MSG_DONTWAIT);
    CHECK(n == 8 + 11 && memcmp(ack + 8, "{\"event\":3}", 11) == 0, "acknowledgement of 3");
    n = recv(peer, ack, sizeof ack - 1, MSG_DONTWAIT);
    CHECK(n == 8 + 11 && memcmp(ack + 8, "{\"event\":4}", 11) == 0, "acknowledgement of the unknown kind");
    CHECK(voipd_dispatch(v) == 0, "nothing more");
    send_json(peer, 129, "{\"event\":7,\"kind\":\"voipSocketReadable\",\"state\":\"background\",\"reason\":\"r\","
                         "\"socket\":\"sip-listener\",\"bytesAvailable\":0,\"connectionsWaiting\":3,\"peerClosed\":false}", 0);
    CHECK(voipd_dispatch(v) == 1 && handled == 3, "a listener's event dispatched");
    n = recv(peer, ack, sizeof ack - 1, MSG_DONTWAIT);
    CHECK(n == 8 + 11 && memcmp(ack + 8, "{\"event\":7}", 11) == 0, "acknowledgement of 7");
    send_json(peer, 129, "{\"event\":8,\"kind\":\"voipSocketReadable\",\"state\":\"background\",\"reason\":\"r\","
                         "\"socket\":\"sip-listener\",\"bytesAvailable\":0,\"connectionsWaiting\":-3,\"peerClosed\":false}", 0);
    CHECK(voipd_dispatch(v) == -EPROTO, "a negative number of connections waiting is malformed");
    voipd_close(v);
    close(peer);
    v = pair(&peer);
    voipd_set_event_handler(v, count_events, NULL);

    /* An event with descriptors has them closed; a malformed event closes the connection. */
    send_frame(peer, 129, "{\"event\":5,\"kind\":\"keepAlive\",\"state\":\"background\",\"reason\":\"\"}", 62, 2, 2);
    send_json(peer, 129, "{\"event\":\"6\",\"kind\":\"keepAlive\",\"state\":\"background\"}", 0);
    result = voipd_dispatch(v);
    CHECK(result == -EPROTO, "a string event number: %d", result);
    CHECK(voipd_dispatch(v) == -ENOTCONN, "closed after it");
    voipd_close(v);
    close(peer);

    /* An event acknowledged later: once, and only an event awaiting it. */
    v = pair(&peer);
    voipd_set_event_handler(v, later, NULL);
    send_json(peer, 129, "{\"event\":9,\"kind\":\"keepAlive\",\"state\":\"background\",\"reason\":\"\"}", 0);
    CHECK(voipd_dispatch(v) == 1, "an event for later");
    CHECK(recv(peer, ack, sizeof ack, MSG_DONTWAIT) < 0, "not acknowledged yet");
    CHECK(voipd_acknowledge(v, 9) == 0, "acknowledged later");
    n = recv(peer, ack, sizeof ack - 1, MSG_DONTWAIT);
    CHECK(n == 8 + 11 && memcmp(ack + 8, "{\"event\":9}", 11) == 0, "the acknowledgement of 9");
    CHECK(voipd_acknowledge(v, 9) == 0 && voipd_acknowledge(v, 8) == 0, "again, and one never sent");
    CHECK(recv(peer, ack, sizeof ack, MSG_DONTWAIT) < 0, "neither sent");
    CHECK(voipd_end_background_task(v, 5) == VOIPD_ERR_INVALID_STATE, "no such task, said without asking voipd");
    CHECK(voipd_set_reconnect(v, 1) == -EDESTADDRREQ, "no path to reconnect to");
    voipd_close(v);
    close(peer);

    /* A request that finds the connection lost: the descriptor turns readable, and
     * dispatch says so once. */
    v = pair(&peer);
    close(peer);
    CHECK(voipd_set_keep_alive_timeout(v, 0) == -ECONNRESET, "a request on a lost connection");
    struct pollfd ready = { .fd = voipd_get_fd(v), .events = POLLIN };
    CHECK(poll(&ready, 1, 0) == 1, "the descriptor says the loss");
    CHECK(voipd_dispatch(v) == -ECONNRESET, "dispatch says it");
    CHECK(poll(&ready, 1, 0) == 0, "once");
    CHECK(voipd_dispatch(v) == -ENOTCONN, "then: not connected");
    voipd_close(v);

    /* A keep-alive with how long the app stays reachable: both sent; bad values refused here. */
    v = pair(&peer);
    send_json(peer, 128, "{\"id\":1,\"ok\":true,\"result\":{}}", 0);
    CHECK(voipd_set_keep_alive_reachable(v, 600, 270.5) == 0, "a keep-alive with reachableFor");
    char request[256] = "";
    n = recv(peer, request, sizeof request - 1, MSG_DONTWAIT);
    CHECK(n > 8 && strstr(request + 8, "\"seconds\":600") != NULL && strstr(request + 8, "\"reachableFor\":270.5") != NULL,
          "sent: %s", n > 8 ? request + 8 : "");
    CHECK(voipd_set_keep_alive_reachable(v, 600, -1) == -EINVAL && voipd_set_keep_alive_reachable(v, 600, 1.0 / 0.0) == -EINVAL,
          "a negative or infinite reachable_for");
    voipd_close(v);
    close(peer);

    /* A flood of unacknowledged events: bounded. */
    v = pair(&peer);
    for (int i = 0; i < 100; i++) send_json(peer, 129, "{\"event\":1,\"kind\":\"keepAlive\",\"state\":\"background\"}", 0);
    send_json(peer, 128, "{\"id\":1,\"ok\":true,\"result\":{\"task\":1}}", 0);
    uint64_t task;
    result = voipd_begin_background_task(v, "t", &task);
    CHECK(result == -EPROTO, "100 events queued during a request: %d", result);
    voipd_close(v);
    close(peer);

    /* A 60 KiB reason is fine. */
    v = pair(&peer);
    static char big[65000];
    int length = snprintf(big, sizeof big, "{\"event\":1,\"kind\":\"keepAlive\",\"state\":\"background\",\"reason\":\"");
    memset(big + length, 'r', 60000);
    strcpy(big + length + 60000, "\"}");
    send_json(peer, 129, big, 0);
    handled = 0;
    voipd_set_event_handler(v, count_events, NULL);
    CHECK(voipd_dispatch(v) == 1, "a long reason");
    voipd_close(v);
    close(peer);
}

static void json_reader(void)
{
    struct vj root, value;
    char text[64];
    uint64_t number;
    static const char document[] = "{\"a\":\"\\u00e9\\ud83d\\ude00\\n\",\"n\":18446744073709551615,\"z\":0,\"t\":true,\"x\":null,\"o\":{}}";
    CHECK(vj_parse_object(document, strlen(document), &root) == 0, "a valid document");
    CHECK(vj_get(root, "a", &value) == 1 && vj_string(value, text, sizeof text, NULL) == 0
          && strcmp(text, "\xc3\xa9\xf0\x9f\x98\x80\n") == 0, "escapes decoded");
    CHECK(vj_string(value, text, 5, NULL) == -1, "does not fit in 5 bytes");
    CHECK(vj_get(root, "n", &value) == 1 && vj_u64(value, &number) == 0 && number == UINT64_MAX, "UINT64_MAX");
    CHECK(vj_get(root, "z", &value) == 1 && vj_u64(value, &number) == 0 && number == 0, "zero");
    CHECK(vj_get(root, "x", &value) == 0, "null is absent");
    CHECK(vj_get(root, "missing", &value) == 0, "absent");
    CHECK(vj_get(root, "o", &value) == 1 && vj_type(value) == VJ_OBJECT, "an object");
    /* Numbers as doubles, whatever the locale's decimal point. */
    static const struct { const char *text; double value; } doubles[] = {
        { "0", 0 }, { "600", 600 }, { "0.1", 0.1 }, { "512.5", 512.5 }, { "-2.5e3", -2500 }, { "1E-7", 1e-7 },
        { "0.000", 0 }, { "31536000", 31536000 }, { "9007199254740993", 9007199254740993.0 }, { "4.9e-3", 4.9e-3 },
    };
    for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++) {
        char numeric[96];
        snprintf(numeric, sizeof numeric, "{\"d\":%s}", doubles[i].text);
        double read = -1;
        CHECK(vj_parse_object(numeric, strlen(numeric), &root) == 0 && vj_get(root, "d", &value) == 1
              && vj_double(value, &read) == 0 && read == doubles[i].value, "%s read as %.17g", doubles[i].text, read);
    }
    static const char quoted[] = "{\"d\":\"1\"}";
    double unread;
    CHECK(vj_parse_object(quoted, strlen(quoted), &root) == 0 && vj_get(root, "d", &value) == 1 && vj_double(value, &unread) == -1,
          "a string is no number");
    static const char *const invalid[] = {
        "{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":-}", "{\"a\":1e}", "{\"a\":tru}", "{\"a\":\"\t\"}",
        "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}", "{\"a\":\"\\udc00\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xf4\x90\x80\x80\"}",
        "{\"a\":1,}", "{,}", "{\"a\"}", "{\"a\":[1,]}", "{'a':1}", "{\"a\":1}}", "{\"a\":\"\xff\"}",
    };
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++)
        CHECK(vj_parse_object(invalid[i], strlen(invalid[i]), &root) == -1, "invalid: %s", invalid[i]);
    /* Nesting: 32 levels are fine, 33 are not; 100000 neither, without a stack overflow. */
    static char deep[200010];
    for (int depth = 31; depth <= 32; depth++) {
        int at = 0;
        deep[at++] = '{';
        deep[at++] = '"'; deep[at++] = 'a'; deep[at++] = '"'; deep[at++] = ':';
        for (int i = 0; i < depth; i++) deep[at++] = '[';
        for (int i = 0; i < depth; i++) deep[at++] = ']';
        deep[at++] = '}';
        CHECK(vj_parse_object(deep, (size_t)at, &root) == (depth < 32 ? 0 : -1), "depth %d", depth + 1);
    }
    memset(deep, '[', sizeof deep);
    deep[0] = '{';
    CHECK(vj_parse_object(deep, sizeof deep, &root) == -1, "100000 levels");
    /* The writer: escapes, bounds, a locale-free number. */
    char out[64];
    struct vj_writer w;
    vjw_begin(&w, out, sizeof out);
    vjw_string(&w, "name", "a\"b\\c\x01");
    vjw_seconds(&w, "s", 600.5);
    long length = vjw_end(&w);
    CHECK(length > 0 && strncmp(out, "{\"name\":\"a\\\"b\\\\c\\u0001\",\"s\":600.5}", (size_t)length) == 0, "written: %.*s", (int)length, out);
    vjw_begin(&w, out, 10);
    vjw_string(&w, "name", "too long for ten bytes");
    CHECK(vjw_end(&w) == -1, "overflow refused");
    vjw_begin(&w, out, sizeof out);
    vjw_string(&w, "name", "\xc3");
    CHECK(vjw_end(&w) == -1, "invalid UTF-8 refused");
}

/* Pseudo-random mutations of valid frames fed to hello and dispatch. */
static uint64_t seed = 0x9e3779b97f4a7c15u;
static uint64_t next_random(void)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
}

static void fuzz(int rounds)
{
    static const char *const seeds[] = {
        hello_reply,
        "{\"event\":3,\"kind\":\"voipSocketReadable\",\"state\":\"background\",\"reason\":\"data on sip\",\"socket\":\"sip\",\"bytesAvailable\":37,\"peerClosed\":false}",
        "{\"error\":{\"code\":\"nameInUse\",\"message\":\"m\"},\"id\":1,\"ok\":false}",
        "{\"id\":1,\"ok\":true,\"result\":{\"app\":{\"state\":\"active\"},\"sockets\":[]}}",
    };
    static char body[4096];
    static const char alphabet[] = "{}[]\":,\\u0123456789abcdefnulltruefalse \xc3\xa9\xed\xa0\xff";
    for (int round = 0; round < rounds; round++) {
        const char *origin = seeds[next_random() % (sizeof seeds / sizeof seeds[0])];
        size_t length = strlen(origin);
        memcpy(body, origin, length);
        int mutations = 1 + (int)(next_random() % 4);
        for (int m = 0; m < mutations; m++) {
            size_t at = length == 0 ? 0 : next_random() % length;
            switch (next_random() % 4) {
            case 0: body[at] = alphabet[next_random() % (sizeof alphabet - 1)]; break;
            case 1: body[at] ^= (char)(1 << (next_random() % 8)); break;
            case 2: length = at; break;
            default:
                if (length < sizeof body - 1) {
                    memmove(body + at + 1, body + at, length - at);
                    body[at] = alphabet[next_random() % (sizeof alphabet - 1)];
                    length++;
                }
            }
        }
        int peer;
        voipd *v = pair(&peer);
        voipd_set_timeout(v, 0);
        int nfds = (int)(next_random() % 3);
        int type = next_random() % 2 ? 128 : 129;
        send_frame(peer, type, body, length, nfds, nfds);
        int result = type == 128 ? voipd_hello(v, "app") : voipd_dispatch(v);
        CHECK(result <= 1, "round %d: %d", round, result);
        voipd_close(v);
        close(peer);
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20000;
    int before = open_descriptors();
    json_reader();
    malformed_replies();
    good_and_odd_replies();
    events();
    fuzz(rounds);
    int after = open_descriptors();
    CHECK(after == before, "descriptors open: %d before, %d after", before, after);
    if (failures > 0) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
