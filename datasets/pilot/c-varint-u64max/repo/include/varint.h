/*
 * varint - LEB128 variable-length integers, as used by Protocol Buffers,
 * WebAssembly and many log formats.
 *
 * Unsigned values are written 7 bits at a time, least significant group
 * first, with the high bit of each byte set when more bytes follow. A
 * uint64_t takes 1 to 10 bytes. Signed values are either zigzag-mapped
 * first (small magnitudes stay short) or written as their two's complement
 * bit pattern (negative numbers then always take 10 bytes).
 */
#ifndef VARINT_H
#define VARINT_H

#include <stddef.h>
#include <stdint.h>

#define VARINT_MAX_LEN 10

/* Error codes returned (negated) by the decoders. */
enum {
    VARINT_OK = 0,
    VARINT_ETRUNC = 1,     /* input ended in the middle of a value */
    VARINT_EOVERFLOW = 2,  /* value does not fit the requested type */
    VARINT_ENOMEM = 3      /* (vbuf) allocation failed */
};

const char *varint_strerror(int err);

/* Bytes needed to encode v. */
size_t varint_size_u64(uint64_t v);
/* Write v to out (at least VARINT_MAX_LEN bytes); returns bytes written. */
size_t varint_encode_u64(uint64_t v, uint8_t *out);
/* Read one value from in[0..len). Returns bytes consumed (> 0), or
 * -VARINT_ETRUNC / -VARINT_EOVERFLOW. *out is untouched on error. */
int varint_decode_u64(const uint8_t *in, size_t len, uint64_t *out);
int varint_decode_u32(const uint8_t *in, size_t len, uint32_t *out);

/* Zigzag mapping: 0, -1, 1, -2, 2 ... -> 0, 1, 2, 3, 4 ... */
uint64_t zigzag_encode(int64_t v);
int64_t zigzag_decode(uint64_t v);

size_t varint_encode_s64(int64_t v, uint8_t *out);       /* zigzag */
int varint_decode_s64(const uint8_t *in, size_t len, int64_t *out);
size_t varint_encode_i64(int64_t v, uint8_t *out);       /* two's complement */
int varint_decode_i64(const uint8_t *in, size_t len, int64_t *out);

/* A growable output buffer. */
typedef struct vbuf {
    uint8_t *data;
    size_t len, cap;
    int err;               /* first error (VARINT_ENOMEM), sticky */
} vbuf;

void vbuf_init(vbuf *b);
void vbuf_free(vbuf *b);
void vbuf_put_u64(vbuf *b, uint64_t v);
void vbuf_put_s64(vbuf *b, int64_t v);
void vbuf_put_i64(vbuf *b, int64_t v);
/* Length-prefixed byte string. */
void vbuf_put_bytes(vbuf *b, const void *data, size_t n);

/* A reader over a byte range; errors are sticky and reads after an error
 * return 0 without consuming input. */
typedef struct vreader {
    const uint8_t *p, *end;
    int err;
} vreader;

void vreader_init(vreader *r, const void *data, size_t len);
uint64_t vreader_u64(vreader *r);
int64_t vreader_s64(vreader *r);
int64_t vreader_i64(vreader *r);
/* Returns a pointer into the input and stores the length in *n. */
const uint8_t *vreader_bytes(vreader *r, size_t *n);
size_t vreader_remaining(const vreader *r);

#endif
