/*
 * A small, strict, bounded JSON reader and writer: exactly what libvoipd's protocol bodies
 * need, and nothing that trusts its input. The reader validates a whole document once
 * (RFC 8259 grammar, UTF-8, nesting depth) and then answers lookups by scanning the
 * validated text; it never allocates and never reads past the length it was given (a
 * body need not be NUL-terminated, and a NUL inside it is an error). The writer fills a
 * caller's buffer and fails instead of overflowing it. Internal to libvoipd.
 */
#ifndef VOIPD_JSON_H
#define VOIPD_JSON_H

#include <stddef.h>
#include <stdint.h>

#define VJ_HIDDEN __attribute__((visibility("hidden")))

/** Nesting deeper than this is refused (voipd's bodies nest 4 deep). */
#define VJ_MAX_DEPTH 32

/** A JSON value inside a validated document: its text, from its first to its last byte. */
struct vj {
    const char *text;
    size_t length;
};

enum vj_type { VJ_INVALID = 0, VJ_OBJECT, VJ_ARRAY, VJ_STRING, VJ_NUMBER, VJ_TRUE, VJ_FALSE, VJ_NULL };

/** Validates `text` as one JSON object (surrounding whitespace allowed). 0 and *root set, or -1. */
VJ_HIDDEN int vj_parse_object(const char *text, size_t length, struct vj *root);

/** The type of a value of a validated document. */
VJ_HIDDEN enum vj_type vj_type(struct vj value);

/**
 * Looks up `key` in an object. 1 and *value set when present and not null; 0 when absent
 * or null (the protocol's rule: null means absent); -1 when `object` is not an object or
 * has the key twice (an ambiguous body is malformed).
 */
VJ_HIDDEN int vj_get(struct vj object, const char *key, struct vj *value);

/** Walks an array: *cursor starts at 0; 1 and *element set for each element, 0 at the end,
 * -1 if `array` is not an array. */
VJ_HIDDEN int vj_next(struct vj array, size_t *cursor, struct vj *element);

/** An unsigned integer written without sign, fraction or exponent, at most UINT64_MAX. 0 or -1. */
VJ_HIDDEN int vj_u64(struct vj value, uint64_t *out);

/**
 * A number, as a double: 0 and *out set, or -1 if it is not a number. Read by hand, so
 * the locale's decimal point does not matter; exact to the last bit for up to 19
 * significant digits and a decimal exponent within 22 (every number voipd writes), close
 * otherwise; too large a number is an infinity.
 */
VJ_HIDDEN int vj_double(struct vj value, double *out);

/** true or false. 0 and *out set to 1 or 0, or -1. */
VJ_HIDDEN int vj_bool(struct vj value, int *out);

/**
 * Decodes a string into `buffer` (NUL-terminated) of `capacity` bytes. 0 and *length (may be
 * NULL) set; -1 if it is not a string, does not fit, or holds a NUL (\u0000).
 */
VJ_HIDDEN int vj_string(struct vj value, char *buffer, size_t capacity, size_t *length);

/** The decoded length of a string value (without a NUL), or -1 if it is not a string. */
VJ_HIDDEN long vj_string_length(struct vj value);

/** A JSON object being written into a caller's buffer. */
struct vj_writer {
    char *buffer;
    size_t capacity;
    size_t length;
    int members;
    int failed;     /* the buffer was too small, or a value could not be written */
};

VJ_HIDDEN void vjw_begin(struct vj_writer *w, char *buffer, size_t capacity);
VJ_HIDDEN void vjw_string(struct vj_writer *w, const char *key, const char *value);
VJ_HIDDEN void vjw_u64(struct vj_writer *w, const char *key, uint64_t value);
/** A finite, non-negative number of seconds, written with up to 6 decimals whatever the locale. */
VJ_HIDDEN void vjw_seconds(struct vj_writer *w, const char *key, double value);
VJ_HIDDEN void vjw_bool(struct vj_writer *w, const char *key, int value);
/** Closes the object: its length, or -1 if anything failed. */
VJ_HIDDEN long vjw_end(struct vj_writer *w);

/** Whether `s` is valid UTF-8 of at most `max` bytes (without the NUL). */
VJ_HIDDEN int vj_valid_utf8(const char *s, size_t max);

#endif
