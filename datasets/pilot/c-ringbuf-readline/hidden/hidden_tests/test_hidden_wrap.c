/* Hidden tests: searching and line reading when the stored bytes wrap
 * around the physical end of the buffer. */
#include "ringbuf.h"
#include "check.h"

static void test_find_in_wrapped_part(void)
{
    ringbuf *rb = rb_create(8);

    rb_write(rb, "abcdef", 6);
    rb_discard(rb, 5);               /* "f" at index 5 */
    CHECK_EQ(rb_write(rb, "ghijk", 5), 5); /* "gh" at 6..7, "ijk" at 0..2 */
    CHECK_EQ(rb_find(rb, 'f'), 0);
    CHECK_EQ(rb_find(rb, 'h'), 2);
    CHECK_EQ(rb_find(rb, 'i'), 3);
    CHECK_EQ(rb_find(rb, 'k'), 5);
    CHECK_EQ(rb_find(rb, 'z'), -1);
    rb_destroy(rb);
}

static void test_find_agrees_with_at_for_every_offset(void)
{
    ringbuf *rb = rb_create(7);
    const char *data = "0123456";
    size_t start, len, k, i;

    for (start = 0; start < 7; start++) {
        for (len = 1; len <= 7; len++) {
            /* len distinct bytes stored from physical index start on */
            rb_clear(rb);
            rb_write(rb, data, start + 1);
            rb_discard(rb, start);
            for (k = 1; k < len; k++)
                rb_write(rb, data + (start + k) % 7, 1);
            CHECK_EQ(rb_size(rb), len);
            for (i = 0; i < len; i++) {
                ssize_t got = rb_find(rb, (unsigned char)rb_at(rb, i));
                if (got != (ssize_t)i) {
                    fprintf(stderr, "tail=%zu size=%zu: byte %zu found at %zd\n",
                            start, len, i, got);
                    CHECK_EQ(got, i);
                    break;
                }
            }
        }
    }
    rb_destroy(rb);
}

static void test_readline_across_the_end(void)
{
    ringbuf *rb = rb_create(10);
    char line[16];

    rb_write(rb, "one\ntw", 6);
    CHECK_EQ(rb_readline(rb, line, sizeof line), 3);
    CHECK_STR(line, "one");
    CHECK_EQ(rb_write(rb, "o\nthree\n", 8), 8); /* wraps */
    CHECK_EQ(rb_readline(rb, line, sizeof line), 3);
    CHECK_STR(line, "two");
    CHECK_EQ(rb_readline(rb, line, sizeof line), 5);
    CHECK_STR(line, "three");
    CHECK(rb_is_empty(rb));
    rb_destroy(rb);
}

static void test_crlf_split_by_the_end(void)
{
    ringbuf *rb = rb_create(8);
    char line[8];

    rb_write(rb, "abcdefg", 7);
    rb_discard(rb, 4);                  /* "efg" at 4..6 */
    CHECK_EQ(rb_write(rb, "\r\nxy", 4), 4); /* '\r' at 7, '\n' at 0 */
    CHECK_EQ(rb_readline(rb, line, sizeof line), 3);
    CHECK_STR(line, "efg");
    CHECK_EQ(rb_size(rb), 2);
    CHECK_EQ(rb_at(rb, 0), 'x');
    rb_destroy(rb);
}

static void test_too_long_line_after_wrap(void)
{
    ringbuf *rb = rb_create(8);
    char line[4];

    rb_write(rb, "ab\n", 3);
    rb_write(rb, "cd", 2);
    CHECK_EQ(rb_readline(rb, line, sizeof line), 2);
    CHECK_EQ(rb_write(rb, "efgh\nij", 7), 6); /* "cdefgh\ni" wraps; 'j' does not fit */
    CHECK_EQ(rb_readline(rb, line, sizeof line), RB_TOO_LONG);
    CHECK_EQ(rb_size(rb), 8);
    rb_destroy(rb);
}

int main(void)
{
    RUN(test_find_in_wrapped_part);
    RUN(test_find_agrees_with_at_for_every_offset);
    RUN(test_readline_across_the_end);
    RUN(test_crlf_split_by_the_end);
    RUN(test_too_long_line_after_wrap);
    return check_summary();
}
