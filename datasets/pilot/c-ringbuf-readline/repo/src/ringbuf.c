#include "ringbuf.h"

#include <stdlib.h>
#include <string.h>

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* Physical index of the byte `offset` bytes after the tail. */
static size_t phys(const ringbuf *rb, size_t offset)
{
    size_t i = rb->tail + offset;
    return i >= rb->cap ? i - rb->cap : i;
}

void rb_init(ringbuf *rb, void *storage, size_t cap)
{
    rb->buf = storage;
    rb->cap = cap;
    rb->tail = 0;
    rb->count = 0;
    rb->owns_storage = 0;
}

ringbuf *rb_create(size_t cap)
{
    ringbuf *rb;
    void *storage;

    if (cap == 0)
        return NULL;
    rb = malloc(sizeof *rb);
    storage = malloc(cap);
    if (rb == NULL || storage == NULL) {
        free(rb);
        free(storage);
        return NULL;
    }
    rb_init(rb, storage, cap);
    rb->owns_storage = 1;
    return rb;
}

void rb_destroy(ringbuf *rb)
{
    if (rb == NULL)
        return;
    if (rb->owns_storage) {
        free(rb->buf);
        free(rb);
    }
}

void rb_clear(ringbuf *rb)
{
    rb->tail = 0;
    rb->count = 0;
}

size_t rb_size(const ringbuf *rb) { return rb->count; }
size_t rb_space(const ringbuf *rb) { return rb->cap - rb->count; }
int rb_is_empty(const ringbuf *rb) { return rb->count == 0; }
int rb_is_full(const ringbuf *rb) { return rb->count == rb->cap; }

size_t rb_write(ringbuf *rb, const void *data, size_t n)
{
    const unsigned char *src = data;
    size_t head, first;

    n = min_size(n, rb_space(rb));
    if (n == 0)
        return 0;
    head = phys(rb, rb->count);
    first = min_size(n, rb->cap - head);
    memcpy(rb->buf + head, src, first);
    memcpy(rb->buf, src + first, n - first);
    rb->count += n;
    return n;
}

size_t rb_write_overwrite(ringbuf *rb, const void *data, size_t n)
{
    const unsigned char *src = data;
    size_t dropped = 0;

    if (n > rb->cap) {
        dropped = rb->count + (n - rb->cap);
        src += n - rb->cap;
        n = rb->cap;
        rb_clear(rb);
    }
    if (n > rb_space(rb)) {
        size_t excess = n - rb_space(rb);
        rb_discard(rb, excess);
        dropped += excess;
    }
    rb_write(rb, src, n);
    return dropped;
}

size_t rb_peek(const ringbuf *rb, size_t offset, void *out, size_t n)
{
    unsigned char *dst = out;
    size_t start, first;

    if (offset >= rb->count)
        return 0;
    n = min_size(n, rb->count - offset);
    start = phys(rb, offset);
    first = min_size(n, rb->cap - start);
    memcpy(dst, rb->buf + start, first);
    memcpy(dst + first, rb->buf, n - first);
    return n;
}

size_t rb_discard(ringbuf *rb, size_t n)
{
    n = min_size(n, rb->count);
    rb->tail = phys(rb, n);
    rb->count -= n;
    if (rb->count == 0)
        rb->tail = 0; /* keep the data contiguous for as long as possible */
    return n;
}

size_t rb_read(ringbuf *rb, void *out, size_t n)
{
    if (out != NULL)
        n = rb_peek(rb, 0, out, n);
    return rb_discard(rb, n);
}

int rb_at(const ringbuf *rb, size_t i)
{
    if (i >= rb->count)
        return -1;
    return rb->buf[phys(rb, i)];
}

ssize_t rb_find(const ringbuf *rb, unsigned char c)
{
    const unsigned char *hit;
    size_t first;

    if (rb->count == 0)
        return -1;
    /* the stored bytes are [tail, tail + first) and then [0, count - first) */
    first = min_size(rb->count, rb->cap - rb->tail);
    hit = memchr(rb->buf + rb->tail, c, first);
    if (hit != NULL)
        return hit - (rb->buf + rb->tail);
    if (rb->count > first) {
        hit = memchr(rb->buf, c, rb->count - first);
        if (hit != NULL)
            return hit - rb->buf;
    }
    return -1;
}

const unsigned char *rb_read_region(const ringbuf *rb, size_t *len)
{
    *len = min_size(rb->count, rb->cap - rb->tail);
    return rb->buf + rb->tail;
}

unsigned char *rb_write_region(ringbuf *rb, size_t *len)
{
    size_t head = phys(rb, rb->count);

    if (rb_is_full(rb))
        *len = 0;
    else if (head >= rb->tail)
        *len = rb->cap - head;
    else
        *len = rb->tail - head;
    return rb->buf + head;
}

void rb_commit(ringbuf *rb, size_t n)
{
    rb->count += min_size(n, rb_space(rb));
}

ssize_t rb_readline(ringbuf *rb, char *out, size_t outsize)
{
    ssize_t nl = rb_find(rb, '\n');
    size_t len;

    if (nl < 0)
        return RB_NO_LINE;
    len = (size_t)nl;
    if (len > 0 && rb_at(rb, len - 1) == '\r')
        len--;
    if (outsize == 0 || len + 1 > outsize)
        return RB_TOO_LONG;
    rb_peek(rb, 0, out, len);
    out[len] = '\0';
    rb_discard(rb, (size_t)nl + 1);
    return (ssize_t)len;
}
