/*
 * rbcat - number the lines of standard input, reading through a small
 * ring buffer (a demo and a smoke test for the library).
 *
 *   usage: rbcat [-b BUFSIZE] < file
 *
 * Lines longer than BUFSIZE - 1 bytes are reported as an error.
 */
#include "ringbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int usage(void)
{
    fprintf(stderr, "usage: rbcat [-b BUFSIZE] < file\n");
    return 2;
}

static int flush_lines(ringbuf *rb, char *line, size_t linesize, long *lineno)
{
    ssize_t n;

    while ((n = rb_readline(rb, line, linesize)) >= 0)
        printf("%6ld  %s\n", ++*lineno, line);
    if (n == RB_TOO_LONG || (n == RB_NO_LINE && rb_is_full(rb))) {
        fflush(stdout);
        fprintf(stderr, "rbcat: line %ld is too long\n", *lineno + 1);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    size_t bufsize = 64;
    ringbuf *rb;
    char *line;
    long lineno = 0;
    int status = 0;

    if (argc == 3 && strcmp(argv[1], "-b") == 0) {
        char *end;
        unsigned long v = strtoul(argv[2], &end, 10);
        if (*end != '\0' || v < 2 || v > (1UL << 24))
            return usage();
        bufsize = v;
    } else if (argc != 1) {
        return usage();
    }

    rb = rb_create(bufsize);
    line = malloc(bufsize);
    if (rb == NULL || line == NULL) {
        fprintf(stderr, "rbcat: out of memory\n");
        return 1;
    }
    for (;;) {
        size_t room;
        unsigned char *dst = rb_write_region(rb, &room);
        ssize_t got = read(STDIN_FILENO, dst, room);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            perror("rbcat: read");
            status = 1;
            break;
        }
        if (got == 0) {
            /* a last line without a newline still gets printed */
            if (!rb_is_empty(rb) && rb_write(rb, "\n", 1) == 1 &&
                flush_lines(rb, line, bufsize, &lineno) < 0)
                status = 1;
            break;
        }
        rb_commit(rb, (size_t)got);
        if (flush_lines(rb, line, bufsize, &lineno) < 0) {
            status = 1;
            break;
        }
    }
    free(line);
    rb_destroy(rb);
    return status;
}
