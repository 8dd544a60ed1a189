/*
 * varint - encode integers as LEB128 hex, or decode a hex stream.
 *
 *   varint [-s|-i] encode NUMBER...   one hex string per number
 *   varint [-s|-i] decode HEX         one number per line
 *
 * -s: signed, zigzag (protobuf sint64); -i: signed, two's complement
 * (protobuf int64); default: unsigned.
 */
#include "varint.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum mode { UNSIGNED, ZIGZAG, TWOS };

static int usage(void)
{
    fprintf(stderr, "usage: varint [-s|-i] encode NUMBER...\n"
                    "       varint [-s|-i] decode HEX\n");
    return 2;
}

static int encode_one(enum mode mode, const char *arg)
{
    uint8_t buf[VARINT_MAX_LEN];
    size_t n, i;
    char *end;

    errno = 0;
    if (mode == UNSIGNED) {
        uint64_t v;
        if (arg[0] == '-')
            goto bad;
        v = strtoull(arg, &end, 0);
        if (errno || end == arg || *end)
            goto bad;
        n = varint_encode_u64(v, buf);
    } else {
        int64_t v = strtoll(arg, &end, 0);
        if (errno || end == arg || *end)
            goto bad;
        n = mode == ZIGZAG ? varint_encode_s64(v, buf) : varint_encode_i64(v, buf);
    }
    for (i = 0; i < n; i++)
        printf("%02x", buf[i]);
    putchar('\n');
    return 0;
bad:
    fflush(stdout);
    fprintf(stderr, "varint: not a valid number: %s\n", arg);
    return 1;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int decode_all(enum mode mode, const char *hex)
{
    size_t hexlen = strlen(hex), len = 0, i;
    uint8_t *bytes;
    vreader r;
    int status = 0;

    if (hexlen % 2) {
        fprintf(stderr, "varint: odd number of hex digits\n");
        return 1;
    }
    bytes = malloc(hexlen / 2 + 1);
    if (bytes == NULL)
        return 1;
    for (i = 0; i < hexlen; i += 2) {
        int hi = hexval(hex[i]), lo = hexval(hex[i + 1]);
        if (hi < 0 || lo < 0) {
            fprintf(stderr, "varint: bad hex digit\n");
            free(bytes);
            return 1;
        }
        bytes[len++] = (uint8_t)(hi << 4 | lo);
    }
    vreader_init(&r, bytes, len);
    while (vreader_remaining(&r) > 0) {
        size_t offset = len - vreader_remaining(&r);
        if (mode == UNSIGNED) {
            uint64_t v = vreader_u64(&r);
            if (!r.err)
                printf("%" PRIu64 "\n", v);
        } else {
            int64_t v = mode == ZIGZAG ? vreader_s64(&r) : vreader_i64(&r);
            if (!r.err)
                printf("%" PRId64 "\n", v);
        }
        if (r.err) {
            fflush(stdout);
            fprintf(stderr, "varint: at byte %zu: %s\n", offset, varint_strerror(r.err));
            status = 1;
            break;
        }
    }
    free(bytes);
    return status;
}

int main(int argc, char **argv)
{
    enum mode mode = UNSIGNED;
    int i, status = 0;

    if (argc > 1 && strcmp(argv[1], "-s") == 0) {
        mode = ZIGZAG;
        argv++, argc--;
    } else if (argc > 1 && strcmp(argv[1], "-i") == 0) {
        mode = TWOS;
        argv++, argc--;
    }
    if (argc >= 3 && strcmp(argv[1], "encode") == 0) {
        for (i = 2; i < argc; i++)
            status |= encode_one(mode, argv[i]);
        return status;
    }
    if (argc == 3 && strcmp(argv[1], "decode") == 0)
        return decode_all(mode, argv[2]);
    return usage();
}
