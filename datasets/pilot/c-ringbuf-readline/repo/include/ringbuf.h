/*
 * ringbuf - a fixed-capacity byte ring buffer for stream parsers.
 *
 * The buffer never allocates after creation. Writers append bytes at the
 * head, readers consume them from the tail; all counts are in bytes.
 */
#ifndef RINGBUF_H
#define RINGBUF_H

#include <stddef.h>
#include <sys/types.h>

typedef struct ringbuf {
    unsigned char *buf;   /* storage, cap bytes */
    size_t cap;           /* capacity in bytes */
    size_t tail;          /* index of the oldest byte */
    size_t count;         /* bytes currently stored */
    int owns_storage;     /* free buf in rb_destroy */
} ringbuf;

/* Result codes of rb_readline. */
#define RB_NO_LINE   (-1)  /* no complete line buffered yet */
#define RB_TOO_LONG  (-2)  /* the next line does not fit the output buffer */

/* Use caller-provided storage of cap bytes (cap > 0). */
void rb_init(ringbuf *rb, void *storage, size_t cap);
/* Allocate a buffer of cap bytes; NULL on failure or cap == 0. */
ringbuf *rb_create(size_t cap);
void rb_destroy(ringbuf *rb);

void rb_clear(ringbuf *rb);
size_t rb_size(const ringbuf *rb);      /* bytes stored */
size_t rb_space(const ringbuf *rb);     /* bytes free */
int rb_is_empty(const ringbuf *rb);
int rb_is_full(const ringbuf *rb);

/* Append up to n bytes; returns how many were stored (short when full). */
size_t rb_write(ringbuf *rb, const void *data, size_t n);
/* Append n bytes, dropping the oldest data if needed. If n > cap only the
 * last cap bytes of data are kept. Returns the number of bytes dropped. */
size_t rb_write_overwrite(ringbuf *rb, const void *data, size_t n);
/* Copy up to n bytes starting offset bytes after the tail, without
 * consuming them; returns the number copied. */
size_t rb_peek(const ringbuf *rb, size_t offset, void *out, size_t n);
/* Consume up to n bytes into out (out may be NULL to just drop them). */
size_t rb_read(ringbuf *rb, void *out, size_t n);
size_t rb_discard(ringbuf *rb, size_t n);
/* Byte at logical offset i (0 = oldest); -1 when i >= size. */
int rb_at(const ringbuf *rb, size_t i);

/* Logical offset of the first occurrence of byte c, or -1. */
ssize_t rb_find(const ringbuf *rb, unsigned char c);

/* Zero-copy access: pointer to the longest contiguous run of readable
 * bytes (its length in *len), and of writable space. */
const unsigned char *rb_read_region(const ringbuf *rb, size_t *len);
unsigned char *rb_write_region(ringbuf *rb, size_t *len);
/* Account for n bytes written into the region from rb_write_region. */
void rb_commit(ringbuf *rb, size_t n);

/*
 * Consume one '\n'-terminated line into out as a NUL-terminated string
 * without the newline (a "\r\n" ending loses its '\r' too). Returns the
 * string length, RB_NO_LINE if no newline is buffered, or RB_TOO_LONG if
 * the line plus NUL does not fit in outsize bytes (nothing is consumed).
 */
ssize_t rb_readline(ringbuf *rb, char *out, size_t outsize);

#endif
