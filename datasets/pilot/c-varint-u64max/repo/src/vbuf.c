#include "varint.h"

#include <stdlib.h>
#include <string.h>

void vbuf_init(vbuf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->err = VARINT_OK;
}

void vbuf_free(vbuf *b)
{
    free(b->data);
    vbuf_init(b);
}

/* Make room for n more bytes; returns 0 on success. */
static int vbuf_reserve(vbuf *b, size_t n)
{
    size_t want;
    uint8_t *p;

    if (b->err)
        return -1;
    if (b->cap - b->len >= n)
        return 0;
    want = b->cap ? b->cap : 16;
    while (want - b->len < n) {
        if (want > SIZE_MAX / 2) {
            b->err = VARINT_ENOMEM;
            return -1;
        }
        want *= 2;
    }
    p = realloc(b->data, want);
    if (p == NULL) {
        b->err = VARINT_ENOMEM;
        return -1;
    }
    b->data = p;
    b->cap = want;
    return 0;
}

void vbuf_put_u64(vbuf *b, uint64_t v)
{
    if (vbuf_reserve(b, VARINT_MAX_LEN) == 0)
        b->len += varint_encode_u64(v, b->data + b->len);
}

void vbuf_put_s64(vbuf *b, int64_t v)
{
    vbuf_put_u64(b, zigzag_encode(v));
}

void vbuf_put_i64(vbuf *b, int64_t v)
{
    vbuf_put_u64(b, (uint64_t)v);
}

void vbuf_put_bytes(vbuf *b, const void *data, size_t n)
{
    vbuf_put_u64(b, n);
    if (n > 0 && vbuf_reserve(b, n) == 0) {
        memcpy(b->data + b->len, data, n);
        b->len += n;
    }
}

void vreader_init(vreader *r, const void *data, size_t len)
{
    r->p = data;
    r->end = r->p + len;
    r->err = VARINT_OK;
}

size_t vreader_remaining(const vreader *r)
{
    return (size_t)(r->end - r->p);
}

uint64_t vreader_u64(vreader *r)
{
    uint64_t v;
    int n;

    if (r->err)
        return 0;
    n = varint_decode_u64(r->p, vreader_remaining(r), &v);
    if (n < 0) {
        r->err = -n;
        return 0;
    }
    r->p += n;
    return v;
}

int64_t vreader_s64(vreader *r)
{
    uint64_t u = vreader_u64(r);
    return r->err ? 0 : zigzag_decode(u);
}

int64_t vreader_i64(vreader *r)
{
    int64_t v = 0;
    int n;

    if (r->err)
        return 0;
    n = varint_decode_i64(r->p, vreader_remaining(r), &v);
    if (n < 0) {
        r->err = -n;
        return 0;
    }
    r->p += n;
    return v;
}

const uint8_t *vreader_bytes(vreader *r, size_t *n)
{
    const vreader saved = *r;
    uint64_t len = vreader_u64(r);
    const uint8_t *start;

    *n = 0;
    if (r->err)
        return NULL;
    if (len > vreader_remaining(r)) {
        *r = saved;
        r->err = VARINT_ETRUNC;
        return NULL;
    }
    start = r->p;
    r->p += len;
    *n = (size_t)len;
    return start;
}
