/* The strict, bounded JSON reader and writer of json.h. Every read is checked against the
 * value's length; the validator runs first, so the lookups only meet well-formed text, and
 * they check their bounds all the same. */
#define _GNU_SOURCE                 /* strnlen */
#include "json.h"

#include <math.h>
#include <string.h>

/* Keys longer than this are never libvoipd's: compared as unequal without decoding. */
#define VJ_KEY_BUFFER 128

/* ---- Validation ---- */

struct cursor {
    const char *p;
    size_t n;
    size_t i;
};

static void skip_space(struct cursor *c)
{
    while (c->i < c->n && (c->p[c->i] == ' ' || c->p[c->i] == '\t' || c->p[c->i] == '\n' || c->p[c->i] == '\r'))
        c->i++;
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Four hex digits at p[i..i+3] (the caller checked they are there). -1 if not hex. */
static long hex4(const char *p)
{
    long value = 0;
    for (int k = 0; k < 4; k++) {
        int digit = hex_value(p[k]);
        if (digit < 0) return -1;
        value = value * 16 + digit;
    }
    return value;
}

/* The length of the UTF-8 sequence at p[0..available-1], or 0 if it is not a valid one
 * (overlong forms, surrogates and values above U+10FFFF are not). */
static size_t utf8_sequence(const unsigned char *p, size_t available)
{
    unsigned char b0 = p[0];
    if (b0 < 0x80) return 1;
    size_t need;
    unsigned char low = 0x80, high = 0xBF;    /* the range of the second byte */
    if (b0 >= 0xC2 && b0 <= 0xDF) need = 2;
    else if (b0 == 0xE0) { need = 3; low = 0xA0; }
    else if (b0 >= 0xE1 && b0 <= 0xEC) need = 3;
    else if (b0 == 0xED) { need = 3; high = 0x9F; }
    else if (b0 >= 0xEE && b0 <= 0xEF) need = 3;
    else if (b0 == 0xF0) { need = 4; low = 0x90; }
    else if (b0 >= 0xF1 && b0 <= 0xF3) need = 4;
    else if (b0 == 0xF4) { need = 4; high = 0x8F; }
    else return 0;
    if (available < need) return 0;
    if (p[1] < low || p[1] > high) return 0;
    for (size_t k = 2; k < need; k++)
        if (p[k] < 0x80 || p[k] > 0xBF) return 0;
    return need;
}

/* A string starting at the quote; leaves the cursor after the closing quote. */
static int check_string(struct cursor *c)
{
    c->i++;                                             /* the opening quote */
    while (c->i < c->n) {
        unsigned char ch = (unsigned char)c->p[c->i];
        if (ch == '"') { c->i++; return 0; }
        if (ch < 0x20) return -1;
        if (ch == '\\') {
            if (c->i + 1 >= c->n) return -1;
            char escape = c->p[c->i + 1];
            if (escape == 'u') {
                if (c->n - c->i < 6) return -1;
                long unit = hex4(c->p + c->i + 2);
                if (unit < 0) return -1;
                c->i += 6;
                if (unit >= 0xDC00 && unit <= 0xDFFF) return -1;        /* a lone low surrogate */
                if (unit >= 0xD800 && unit <= 0xDBFF) {                 /* needs its low half */
                    if (c->n - c->i < 6 || c->p[c->i] != '\\' || c->p[c->i + 1] != 'u') return -1;
                    long low = hex4(c->p + c->i + 2);
                    if (low < 0xDC00 || low > 0xDFFF) return -1;
                    c->i += 6;
                }
                continue;
            }
            if (!strchr("\"\\/bfnrt", escape) || escape == '\0') return -1;
            c->i += 2;
            continue;
        }
        size_t length = utf8_sequence((const unsigned char *)c->p + c->i, c->n - c->i);
        if (length == 0) return -1;
        c->i += length;
    }
    return -1;                                          /* no closing quote */
}

static int check_number(struct cursor *c)
{
    if (c->i < c->n && c->p[c->i] == '-') c->i++;
    if (c->i >= c->n) return -1;
    if (c->p[c->i] == '0') {
        c->i++;
    } else if (c->p[c->i] >= '1' && c->p[c->i] <= '9') {
        while (c->i < c->n && c->p[c->i] >= '0' && c->p[c->i] <= '9') c->i++;
    } else {
        return -1;
    }
    if (c->i < c->n && c->p[c->i] == '.') {
        c->i++;
        size_t start = c->i;
        while (c->i < c->n && c->p[c->i] >= '0' && c->p[c->i] <= '9') c->i++;
        if (c->i == start) return -1;
    }
    if (c->i < c->n && (c->p[c->i] == 'e' || c->p[c->i] == 'E')) {
        c->i++;
        if (c->i < c->n && (c->p[c->i] == '+' || c->p[c->i] == '-')) c->i++;
        size_t start = c->i;
        while (c->i < c->n && c->p[c->i] >= '0' && c->p[c->i] <= '9') c->i++;
        if (c->i == start) return -1;
    }
    return 0;
}

static int check_literal(struct cursor *c, const char *word)
{
    size_t length = strlen(word);
    if (c->n - c->i < length || memcmp(c->p + c->i, word, length) != 0) return -1;
    c->i += length;
    return 0;
}

static int check_value(struct cursor *c, int depth)
{
    if (c->i >= c->n) return -1;
    char ch = c->p[c->i];
    if (ch == '{' || ch == '[') {
        if (depth >= VJ_MAX_DEPTH) return -1;
        char close = ch == '{' ? '}' : ']';
        c->i++;
        skip_space(c);
        if (c->i < c->n && c->p[c->i] == close) { c->i++; return 0; }
        for (;;) {
            if (ch == '{') {
                if (c->i >= c->n || c->p[c->i] != '"' || check_string(c) < 0) return -1;
                skip_space(c);
                if (c->i >= c->n || c->p[c->i] != ':') return -1;
                c->i++;
                skip_space(c);
            }
            if (check_value(c, depth + 1) < 0) return -1;
            skip_space(c);
            if (c->i >= c->n) return -1;
            if (c->p[c->i] == close) { c->i++; return 0; }
            if (c->p[c->i] != ',') return -1;
            c->i++;
            skip_space(c);
        }
    }
    if (ch == '"') return check_string(c);
    if (ch == 't') return check_literal(c, "true");
    if (ch == 'f') return check_literal(c, "false");
    if (ch == 'n') return check_literal(c, "null");
    return check_number(c);
}

int vj_parse_object(const char *text, size_t length, struct vj *root)
{
    if (text == NULL) return -1;
    struct cursor c = { text, length, 0 };
    skip_space(&c);
    size_t start = c.i;
    if (c.i >= c.n || c.p[c.i] != '{' || check_value(&c, 0) < 0) return -1;
    size_t end = c.i;
    skip_space(&c);
    if (c.i != c.n) return -1;
    root->text = text + start;
    root->length = end - start;
    return 0;
}

/* ---- Lookups in validated text ---- */

enum vj_type vj_type(struct vj value)
{
    if (value.text == NULL || value.length == 0) return VJ_INVALID;
    switch (value.text[0]) {
    case '{': return VJ_OBJECT;
    case '[': return VJ_ARRAY;
    case '"': return VJ_STRING;
    case 't': return VJ_TRUE;
    case 'f': return VJ_FALSE;
    case 'n': return VJ_NULL;
    default: return VJ_NUMBER;
    }
}

/* The end of the value starting at c->i (validated text: this only skips, with bounds). */
static int skip_value(struct cursor *c)
{
    struct cursor probe = *c;
    if (check_value(&probe, 0) < 0) return -1;
    c->i = probe.i;
    return 0;
}

/* Compares the string starting at c->i (a quote) with `key`, decoding escapes; leaves the
 * cursor after it. 1 equal, 0 not, -1 malformed. */
static int string_equals(struct cursor *c, const char *key)
{
    size_t start = c->i;
    struct cursor probe = *c;
    if (c->i >= c->n || c->p[c->i] != '"' || check_string(&probe) < 0) return -1;
    struct vj string = { c->p + start, probe.i - start };
    c->i = probe.i;
    char decoded[VJ_KEY_BUFFER];
    size_t length;
    if (vj_string(string, decoded, sizeof decoded, &length) < 0) return 0;   /* too long to be ours */
    return length == strlen(key) && memcmp(decoded, key, length) == 0;
}

int vj_get(struct vj object, const char *key, struct vj *value)
{
    if (vj_type(object) != VJ_OBJECT) return -1;
    struct cursor c = { object.text, object.length, 1 };
    int found = 0;
    struct vj result = { NULL, 0 };
    skip_space(&c);
    if (c.i < c.n && c.p[c.i] == '}') return 0;
    while (c.i < c.n) {
        int equal = string_equals(&c, key);
        if (equal < 0) return -1;
        skip_space(&c);
        if (c.i >= c.n || c.p[c.i] != ':') return -1;
        c.i++;
        skip_space(&c);
        size_t start = c.i;
        if (skip_value(&c) < 0) return -1;
        if (equal) {
            if (found) return -1;
            found = 1;
            result.text = c.p + start;
            result.length = c.i - start;
        }
        skip_space(&c);
        if (c.i >= c.n) return -1;
        if (c.p[c.i] == '}') break;
        if (c.p[c.i] != ',') return -1;
        c.i++;
        skip_space(&c);
    }
    if (!found || vj_type(result) == VJ_NULL) return 0;
    *value = result;
    return 1;
}

int vj_next(struct vj array, size_t *cursor, struct vj *element)
{
    if (vj_type(array) != VJ_ARRAY) return -1;
    struct cursor c = { array.text, array.length, *cursor == 0 ? 1 : *cursor };
    skip_space(&c);
    if (c.i < c.n && c.p[c.i] == ',') {
        c.i++;
        skip_space(&c);
    }
    if (c.i >= c.n || c.p[c.i] == ']') return 0;
    size_t start = c.i;
    if (skip_value(&c) < 0) return -1;
    element->text = c.p + start;
    element->length = c.i - start;
    *cursor = c.i;
    return 1;
}

int vj_u64(struct vj value, uint64_t *out)
{
    if (value.text == NULL || value.length == 0 || value.length > 20) return -1;
    uint64_t result = 0;
    for (size_t k = 0; k < value.length; k++) {
        char ch = value.text[k];
        if (ch < '0' || ch > '9') return -1;
        unsigned digit = (unsigned)(ch - '0');
        if (result > (UINT64_MAX - digit) / 10) return -1;
        result = result * 10 + digit;
    }
    if (value.length > 1 && value.text[0] == '0') return -1;
    *out = result;
    return 0;
}

int vj_double(struct vj value, double *out)
{
    if (vj_type(value) != VJ_NUMBER) return -1;
    /* The grammar is checked already: -?digits(.digits)?([eE][+-]?digits)? */
    static const double powers[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
    const char *p = value.text, *end = value.text + value.length;
    int negative = p < end && *p == '-';
    if (negative) p++;
    uint64_t mantissa = 0;
    int digits = 0;             /* significant digits in `mantissa` */
    long exponent = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (digits < 19) {
            mantissa = mantissa * 10 + (uint64_t)(*p - '0');
            if (mantissa != 0) digits++;
        } else {
            exponent++;
        }
    }
    if (p < end && *p == '.') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++) {
            if (digits >= 19) continue;
            mantissa = mantissa * 10 + (uint64_t)(*p - '0');
            if (mantissa != 0) digits++;
            exponent--;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        int sign = p < end && *p == '-' ? -1 : 1;
        if (p < end && (*p == '+' || *p == '-')) p++;
        long written = 0;
        for (; p < end && *p >= '0' && *p <= '9'; p++)
            if (written < 100000) written = written * 10 + (*p - '0');
        exponent += sign * written;
    }
    double result = (double)mantissa;
    for (; exponent > 22 && result != 0; exponent -= 22) result *= 1e22;
    for (; exponent < -22 && result != 0; exponent += 22) result /= 1e22;
    if (result != 0) result = exponent >= 0 ? result * powers[exponent] : result / powers[-exponent];
    *out = negative ? -result : result;
    return 0;
}

int vj_bool(struct vj value, int *out)
{
    enum vj_type type = vj_type(value);
    if (type != VJ_TRUE && type != VJ_FALSE) return -1;
    *out = type == VJ_TRUE;
    return 0;
}

/* Appends the UTF-8 form of `code` to buffer at *at, within capacity (one byte kept for the NUL). */
static int put_code_point(char *buffer, size_t capacity, size_t *at, unsigned long code)
{
    unsigned char bytes[4];
    size_t count;
    if (code < 0x80) { bytes[0] = (unsigned char)code; count = 1; }
    else if (code < 0x800) { bytes[0] = (unsigned char)(0xC0 | code >> 6); bytes[1] = (unsigned char)(0x80 | (code & 0x3F)); count = 2; }
    else if (code < 0x10000) {
        bytes[0] = (unsigned char)(0xE0 | code >> 12); bytes[1] = (unsigned char)(0x80 | (code >> 6 & 0x3F));
        bytes[2] = (unsigned char)(0x80 | (code & 0x3F)); count = 3;
    } else {
        bytes[0] = (unsigned char)(0xF0 | code >> 18); bytes[1] = (unsigned char)(0x80 | (code >> 12 & 0x3F));
        bytes[2] = (unsigned char)(0x80 | (code >> 6 & 0x3F)); bytes[3] = (unsigned char)(0x80 | (code & 0x3F)); count = 4;
    }
    if (capacity == 0 || count > capacity - 1 - *at) return -1;
    memcpy(buffer + *at, bytes, count);
    *at += count;
    return 0;
}

/* Decodes the string `value` into buffer (NULL: only measures). -1 if malformed, too long or holding a NUL. */
static long decode_string(struct vj value, char *buffer, size_t capacity)
{
    if (vj_type(value) != VJ_STRING || value.length < 2 || value.text[value.length - 1] != '"') return -1;
    size_t at = 0;
    size_t measured = 0;
    const char *p = value.text;
    size_t end = value.length - 1;
    for (size_t i = 1; i < end;) {
        unsigned long code;
        size_t raw = 0;
        if (p[i] == '\\') {
            if (i + 1 >= end) return -1;
            char escape = p[i + 1];
            if (escape == 'u') {
                if (end - i < 6) return -1;
                long unit = hex4(p + i + 2);
                if (unit < 0) return -1;
                i += 6;
                code = (unsigned long)unit;
                if (unit >= 0xD800 && unit <= 0xDBFF) {
                    if (end - i < 6 || p[i] != '\\' || p[i + 1] != 'u') return -1;
                    long low = hex4(p + i + 2);
                    if (low < 0xDC00 || low > 0xDFFF) return -1;
                    i += 6;
                    code = 0x10000 + (((unsigned long)unit - 0xD800) << 10) + ((unsigned long)low - 0xDC00);
                } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
                    return -1;
                }
                if (code == 0) return -1;                   /* a C string cannot hold it */
            } else {
                switch (escape) {
                case '"': code = '"'; break;
                case '\\': code = '\\'; break;
                case '/': code = '/'; break;
                case 'b': code = '\b'; break;
                case 'f': code = '\f'; break;
                case 'n': code = '\n'; break;
                case 'r': code = '\r'; break;
                case 't': code = '\t'; break;
                default: return -1;
                }
                i += 2;
            }
        } else {
            raw = utf8_sequence((const unsigned char *)p + i, end - i);
            if (raw == 0 || (unsigned char)p[i] < 0x20) return -1;
            code = 0;
        }
        if (raw > 0) {
            if (buffer != NULL) {
                if (capacity == 0 || raw > capacity - 1 - at) return -1;
                memcpy(buffer + at, p + i, raw);
                at += raw;
            }
            measured += raw;
            i += raw;
        } else if (buffer != NULL) {
            size_t before = at;
            if (put_code_point(buffer, capacity, &at, code) < 0) return -1;
            measured += at - before;
        } else {
            measured += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
        }
    }
    if (buffer != NULL) buffer[at] = '\0';
    return (long)measured;
}

int vj_string(struct vj value, char *buffer, size_t capacity, size_t *length)
{
    if (buffer == NULL || capacity == 0) return -1;
    long decoded = decode_string(value, buffer, capacity);
    if (decoded < 0) {
        buffer[0] = '\0';
        return -1;
    }
    if (length != NULL) *length = (size_t)decoded;
    return 0;
}

long vj_string_length(struct vj value)
{
    return decode_string(value, NULL, 0);
}

/* ---- Writing ---- */

void vjw_begin(struct vj_writer *w, char *buffer, size_t capacity)
{
    w->buffer = buffer;
    w->capacity = capacity;
    w->length = 0;
    w->members = 0;
    w->failed = capacity < 2;
    if (!w->failed) w->buffer[w->length++] = '{';
}

static void put(struct vj_writer *w, const char *bytes, size_t count)
{
    if (w->failed) return;
    if (count > w->capacity - w->length) {
        w->failed = 1;
        return;
    }
    memcpy(w->buffer + w->length, bytes, count);
    w->length += count;
}

int vj_valid_utf8(const char *s, size_t max)
{
    size_t length = strnlen(s, max + 1);
    if (length > max) return 0;
    for (size_t i = 0; i < length;) {
        size_t sequence = utf8_sequence((const unsigned char *)s + i, length - i);
        if (sequence == 0) return 0;
        i += sequence;
    }
    return 1;
}

static void put_quoted(struct vj_writer *w, const char *text)
{
    static const char hex[] = "0123456789abcdef";
    put(w, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0' && !w->failed; p++) {
        if (*p == '"' || *p == '\\') {
            char escaped[2] = { '\\', (char)*p };
            put(w, escaped, 2);
        } else if (*p < 0x20) {
            char escaped[6] = { '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 0xF] };
            put(w, escaped, 6);
        } else {
            put(w, (const char *)p, 1);
        }
    }
    put(w, "\"", 1);
}

static void put_key(struct vj_writer *w, const char *key)
{
    if (w->members++ > 0) put(w, ",", 1);
    put_quoted(w, key);
    put(w, ":", 1);
}

void vjw_string(struct vj_writer *w, const char *key, const char *value)
{
    if (value == NULL || !vj_valid_utf8(value, w->capacity)) {
        w->failed = 1;
        return;
    }
    put_key(w, key);
    put_quoted(w, value);
}

static void put_u64(struct vj_writer *w, uint64_t value)
{
    char digits[20];
    size_t count = 0;
    do {
        digits[sizeof digits - 1 - count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value > 0);
    put(w, digits + sizeof digits - count, count);
}

void vjw_u64(struct vj_writer *w, const char *key, uint64_t value)
{
    put_key(w, key);
    put_u64(w, value);
}

void vjw_seconds(struct vj_writer *w, const char *key, double value)
{
    /* Written by hand: printf's %f would follow LC_NUMERIC and write "600,5" in a locale
     * with a decimal comma. Up to 2^53 s; voipd accepts at most a year. */
    if (!isfinite(value) || value < 0 || value > 9007199254740992.0) {
        w->failed = 1;
        return;
    }
    uint64_t whole = (uint64_t)value;
    uint64_t micros = (uint64_t)((value - (double)whole) * 1e6 + 0.5);    /* rounded, without libm */
    if (micros >= 1000000) {
        whole += 1;
        micros -= 1000000;
    }
    put_key(w, key);
    put_u64(w, whole);
    if (micros > 0) {
        char fraction[7] = { '.' };
        for (int k = 6; k >= 1; k--) {
            fraction[k] = (char)('0' + micros % 10);
            micros /= 10;
        }
        size_t count = 7;
        while (fraction[count - 1] == '0') count--;
        put(w, fraction, count);
    }
}

void vjw_bool(struct vj_writer *w, const char *key, int value)
{
    put_key(w, key);
    put(w, value ? "true" : "false", value ? 4 : 5);
}

long vjw_end(struct vj_writer *w)
{
    put(w, "}", 1);
    return w->failed ? -1 : (long)w->length;
}
