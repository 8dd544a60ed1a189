#include "ringbuf.h"
#include "check.h"

#include <stdlib.h>

static void test_create_and_sizes(void)
{
    ringbuf *rb = rb_create(8);
    CHECK(rb != NULL);
    CHECK_EQ(rb_size(rb), 0);
    CHECK_EQ(rb_space(rb), 8);
    CHECK(rb_is_empty(rb));
    CHECK(!rb_is_full(rb));
    CHECK(rb_create(0) == NULL);
    rb_destroy(rb);
    rb_destroy(NULL);
}

static void test_write_read(void)
{
    unsigned char store[8];
    char out[16];
    ringbuf rb;

    rb_init(&rb, store, sizeof store);
    CHECK_EQ(rb_write(&rb, "abc", 3), 3);
    CHECK_EQ(rb_size(&rb), 3);
    CHECK_EQ(rb_read(&rb, out, 2), 2);
    CHECK(memcmp(out, "ab", 2) == 0);
    CHECK_EQ(rb_read(&rb, out, 10), 1);
    CHECK_EQ(out[0], 'c');
    CHECK(rb_is_empty(&rb));
    CHECK_EQ(rb_read(&rb, out, 1), 0);
}

static void test_short_write_when_full(void)
{
    unsigned char store[4];
    char out[8];
    ringbuf rb;

    rb_init(&rb, store, sizeof store);
    CHECK_EQ(rb_write(&rb, "123456", 6), 4);
    CHECK(rb_is_full(&rb));
    CHECK_EQ(rb_write(&rb, "7", 1), 0);
    CHECK_EQ(rb_read(&rb, out, 8), 4);
    CHECK(memcmp(out, "1234", 4) == 0);
}

static void test_wraparound_copy(void)
{
    unsigned char store[5];
    char out[8];
    ringbuf rb;

    rb_init(&rb, store, sizeof store);
    rb_write(&rb, "abcd", 4);
    rb_read(&rb, out, 3);           /* "d" left at index 3 */
    CHECK_EQ(rb_write(&rb, "efgh", 4), 4); /* wraps around */
    CHECK(rb_is_full(&rb));
    CHECK_EQ(rb_peek(&rb, 0, out, 5), 5);
    CHECK(memcmp(out, "defgh", 5) == 0);
    CHECK_EQ(rb_peek(&rb, 3, out, 5), 2);
    CHECK(memcmp(out, "gh", 2) == 0);
    CHECK_EQ(rb_peek(&rb, 5, out, 1), 0);
    CHECK_EQ(rb_at(&rb, 0), 'd');
    CHECK_EQ(rb_at(&rb, 4), 'h');
    CHECK_EQ(rb_at(&rb, 5), -1);
    CHECK_EQ(rb_read(&rb, out, 5), 5);
    CHECK(memcmp(out, "defgh", 5) == 0);
}

static void test_discard(void)
{
    ringbuf *rb = rb_create(6);
    char out[6];

    rb_write(rb, "hello", 5);
    CHECK_EQ(rb_discard(rb, 2), 2);
    CHECK_EQ(rb_read(rb, out, 3), 3);
    CHECK(memcmp(out, "llo", 3) == 0);
    CHECK_EQ(rb_discard(rb, 4), 0);
    CHECK_EQ(rb_read(rb, NULL, 3), 0);
    rb_write(rb, "xyz", 3);
    CHECK_EQ(rb_read(rb, NULL, 2), 2);
    CHECK_EQ(rb_at(rb, 0), 'z');
    rb_destroy(rb);
}

static void test_overwrite(void)
{
    ringbuf *rb = rb_create(4);
    char out[4];

    CHECK_EQ(rb_write_overwrite(rb, "abc", 3), 0);
    CHECK_EQ(rb_write_overwrite(rb, "de", 2), 1);
    CHECK_EQ(rb_peek(rb, 0, out, 4), 4);
    CHECK(memcmp(out, "bcde", 4) == 0);
    CHECK_EQ(rb_write_overwrite(rb, "0123456", 7), 7);
    CHECK_EQ(rb_read(rb, out, 4), 4);
    CHECK(memcmp(out, "3456", 4) == 0);
    rb_destroy(rb);
}

static void test_find(void)
{
    ringbuf *rb = rb_create(16);

    CHECK_EQ(rb_find(rb, 'x'), -1);
    rb_write(rb, "key=value;", 10);
    CHECK_EQ(rb_find(rb, '='), 3);
    CHECK_EQ(rb_find(rb, ';'), 9);
    CHECK_EQ(rb_find(rb, 'k'), 0);
    CHECK_EQ(rb_find(rb, '!'), -1);
    rb_discard(rb, 4);
    CHECK_EQ(rb_find(rb, ';'), 5);
    CHECK_EQ(rb_find(rb, '='), -1);
    rb_destroy(rb);
}

static void test_regions(void)
{
    ringbuf *rb = rb_create(8);
    const unsigned char *rd;
    unsigned char *wr;
    size_t len;

    wr = rb_write_region(rb, &len);
    CHECK_EQ(len, 8);
    memcpy(wr, "abcdef", 6);
    rb_commit(rb, 6);
    CHECK_EQ(rb_size(rb), 6);
    rd = rb_read_region(rb, &len);
    CHECK_EQ(len, 6);
    CHECK(memcmp(rd, "abcdef", 6) == 0);
    rb_discard(rb, 4);
    wr = rb_write_region(rb, &len);
    CHECK_EQ(len, 2);             /* up to the physical end */
    memcpy(wr, "gh", 2);
    rb_commit(rb, 2);
    wr = rb_write_region(rb, &len);
    CHECK_EQ(len, 4);             /* then the wrapped part before the tail */
    rb_commit(rb, 10);            /* clamped to the free space */
    CHECK(rb_is_full(rb));
    wr = rb_write_region(rb, &len);
    CHECK_EQ(len, 0);
    (void)wr;
    rb_destroy(rb);
}

static void test_readline(void)
{
    ringbuf *rb = rb_create(32);
    char line[32];

    rb_write(rb, "first\nsecond\r\nthi", 17);
    CHECK_EQ(rb_readline(rb, line, sizeof line), 5);
    CHECK_STR(line, "first");
    CHECK_EQ(rb_readline(rb, line, sizeof line), 6);
    CHECK_STR(line, "second");
    CHECK_EQ(rb_readline(rb, line, sizeof line), RB_NO_LINE);
    rb_write(rb, "rd\n\n", 4);
    CHECK_EQ(rb_readline(rb, line, sizeof line), 5);
    CHECK_STR(line, "third");
    CHECK_EQ(rb_readline(rb, line, sizeof line), 0);
    CHECK_STR(line, "");
    CHECK(rb_is_empty(rb));
    rb_destroy(rb);
}

static void test_readline_too_long(void)
{
    ringbuf *rb = rb_create(32);
    char line[4];

    rb_write(rb, "abcd\nab\n", 8);
    CHECK_EQ(rb_readline(rb, line, sizeof line), RB_TOO_LONG);
    CHECK_EQ(rb_size(rb), 8);  /* nothing consumed */
    CHECK_EQ(rb_readline(rb, line, 0), RB_TOO_LONG);
    rb_discard(rb, 5);
    CHECK_EQ(rb_readline(rb, line, sizeof line), 2);
    CHECK_STR(line, "ab");
    rb_destroy(rb);
}

int main(void)
{
    RUN(test_create_and_sizes);
    RUN(test_write_read);
    RUN(test_short_write_when_full);
    RUN(test_wraparound_copy);
    RUN(test_discard);
    RUN(test_overwrite);
    RUN(test_find);
    RUN(test_regions);
    RUN(test_readline);
    RUN(test_readline_too_long);
    return check_summary();
}
