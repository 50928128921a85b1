/* Error codes, states and names: the tables of the protocol's strings. */
#include "handle.h"

#include <string.h>

static const struct {
    int value;
    const char *code;
    const char *description;
} refusals[] = {
    { VOIPD_ERR_TRUNCATED_FRAME, "truncatedFrame", "voipd: truncated frame" },
    { VOIPD_ERR_FRAME_TOO_LARGE, "frameTooLarge", "voipd: frame too large" },
    { VOIPD_ERR_UNKNOWN_TYPE, "unknownType", "voipd: unknown message type" },
    { VOIPD_ERR_UNSUPPORTED_VERSION, "unsupportedVersion", "voipd: unsupported protocol version" },
    { VOIPD_ERR_TOO_MANY_DESCRIPTORS, "tooManyDescriptors", "voipd: too many descriptors" },
    { VOIPD_ERR_DESCRIPTOR_MISMATCH, "descriptorMismatch", "voipd: descriptor count mismatch" },
    { VOIPD_ERR_BAD_REQUEST, "badRequest", "voipd: bad request" },
    { VOIPD_ERR_NOT_IDENTIFIED, "notIdentified", "voipd: say hello first" },
    { VOIPD_ERR_ALREADY_IDENTIFIED, "alreadyIdentified", "voipd: this connection already said hello" },
    { VOIPD_ERR_NAME_IN_USE, "nameInUse", "voipd: the app is connected or running elsewhere" },
    { VOIPD_ERR_INVALID_NAME, "invalidName", "voipd: invalid name" },
    { VOIPD_ERR_NOT_A_SOCKET, "notASocket", "voipd: not a socket" },
    { VOIPD_ERR_LISTENING_SOCKET, "listeningSocket", "voipd: a listening socket" },
    { VOIPD_ERR_NOT_CONNECTED, "notConnected", "voipd: the socket is not connected" },
    { VOIPD_ERR_DUPLICATE_NAME, "duplicateName", "voipd: a socket of that name is registered already" },
    { VOIPD_ERR_QUOTA_EXCEEDED, "quotaExceeded", "voipd: socket quota exceeded" },
    { VOIPD_ERR_NO_SUCH_APP, "noSuchApp", "voipd: no such app" },
    { VOIPD_ERR_NO_SUCH_SOCKET, "noSuchSocket", "voipd: no such socket" },
    { VOIPD_ERR_PERMISSION_DENIED, "permissionDenied", "voipd: permission denied" },
    { VOIPD_ERR_INVALID_STATE, "invalidState", "voipd: not in this state" },
    { VOIPD_ERR_LAUNCH_FAILED, "launchFailed", "voipd: launch failed" },
    { VOIPD_ERR_INTERNAL_ERROR, "internalError", "voipd: internal error" },
    { VOIPD_ERR_USER_QUOTA_EXCEEDED, "userQuotaExceeded", "voipd: this user is at one of its limits" },
    { VOIPD_ERR_OUT_OF_RESOURCES, "outOfResources", "voipd: out of descriptors or memory; try again later" },
};

static const char *const state_names[] = {
    [VOIPD_STATE_UNKNOWN] = "unknown",
    [VOIPD_STATE_NOT_RUNNING] = "notRunning",
    [VOIPD_STATE_ACTIVE] = "active",
    [VOIPD_STATE_INACTIVE] = "inactive",
    [VOIPD_STATE_BACKGROUND] = "background",
    [VOIPD_STATE_SUSPENDED] = "suspended",
    [VOIPD_STATE_TERMINATED] = "terminated",
};

int voipd_api_version(void)
{
    return VOIPD_API_VERSION;
}

const char *voipd_strerror(int error)
{
    if (error >= 0) return "success";
    if (error == VOIPD_ERR_UNKNOWN) return "voipd: refused (an error code this library does not know)";
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
        if (refusals[i].value == error) return refusals[i].description;
    if (error > -4096) return strerror(-error);
    return "unknown error";
}

const char *voipd_error_code(const voipd *v)
{
    return v == NULL ? "" : v->error_code;
}

const char *voipd_error_message(const voipd *v)
{
    return v == NULL ? "" : v->error_message;
}

int vh_refusal(voipd *v, const char *code, const char *message)
{
    size_t code_length = strlen(code), message_length = strlen(message);
    if (code_length >= sizeof v->error_code) code_length = sizeof v->error_code - 1;
    if (message_length >= sizeof v->error_message) message_length = sizeof v->error_message - 1;
    memcpy(v->error_code, code, code_length);
    v->error_code[code_length] = '\0';
    memcpy(v->error_message, message, message_length);
    v->error_message[message_length] = '\0';
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
        if (strcmp(refusals[i].code, code) == 0) return refusals[i].value;
    return VOIPD_ERR_UNKNOWN;
}

const char *voipd_state_name(int state)
{
    if (state < 0 || state >= (int)(sizeof state_names / sizeof state_names[0])) return "unknown";
    return state_names[state];
}

int vh_state_named(const char *name)
{
    for (int state = VOIPD_STATE_NOT_RUNNING; state < (int)(sizeof state_names / sizeof state_names[0]); state++)
        if (strcmp(state_names[state], name) == 0) return state;
    return VOIPD_STATE_UNKNOWN;
}

int vh_valid_name(const char *name)
{
    if (name == NULL) return 0;
    size_t length = 0;
    for (; name[length] != '\0'; length++) {
        char c = name[length];
        if (length >= VOIPD_NAME_MAX) return 0;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
              || c == '.' || c == '_' || c == '-' || c == '@')) return 0;
    }
    return length > 0 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}
