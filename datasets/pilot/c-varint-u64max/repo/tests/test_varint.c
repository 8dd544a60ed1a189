#include "varint.h"
#include "minitest.h"

#include <stdlib.h>

static void test_encode_known_values(void)
{
    uint8_t buf[VARINT_MAX_LEN];

    EXPECT_U64(varint_encode_u64(0, buf), 1);
    EXPECT(buf[0] == 0x00);
    EXPECT_U64(varint_encode_u64(1, buf), 1);
    EXPECT(buf[0] == 0x01);
    EXPECT_U64(varint_encode_u64(127, buf), 1);
    EXPECT(buf[0] == 0x7f);
    EXPECT_U64(varint_encode_u64(128, buf), 2);
    EXPECT_BYTES(buf, "\x80\x01", 2);
    EXPECT_U64(varint_encode_u64(300, buf), 2);
    EXPECT_BYTES(buf, "\xac\x02", 2);
    EXPECT_U64(varint_encode_u64(16384, buf), 3);
    EXPECT_BYTES(buf, "\x80\x80\x01", 3);
    EXPECT_U64(varint_encode_u64(UINT64_MAX, buf), 10);
    EXPECT_BYTES(buf, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
}

static void test_size_matches_encoding(void)
{
    uint8_t buf[VARINT_MAX_LEN];
    int bits;

    for (bits = 0; bits < 64; bits++) {
        uint64_t v = (uint64_t)1 << bits;
        EXPECT_U64(varint_size_u64(v), varint_encode_u64(v, buf));
        EXPECT_U64(varint_size_u64(v - 1), varint_encode_u64(v - 1, buf));
    }
    EXPECT_U64(varint_size_u64(UINT64_MAX), 10);
}

static void test_decode_known_values(void)
{
    uint64_t v = 0;

    EXPECT(varint_decode_u64((const uint8_t *)"\x00", 1, &v) == 1);
    EXPECT_U64(v, 0);
    EXPECT(varint_decode_u64((const uint8_t *)"\xac\x02", 2, &v) == 2);
    EXPECT_U64(v, 300);
    /* trailing bytes are left alone */
    EXPECT(varint_decode_u64((const uint8_t *)"\x96\x01\x05", 3, &v) == 2);
    EXPECT_U64(v, 150);
    /* non-minimal encodings are accepted */
    EXPECT(varint_decode_u64((const uint8_t *)"\x81\x80\x00", 3, &v) == 3);
    EXPECT_U64(v, 1);
}

static void test_round_trip_up_to_62_bits(void)
{
    uint8_t buf[VARINT_MAX_LEN];
    uint64_t v, got;
    int bits;

    for (bits = 0; bits < 63; bits++) {
        v = ((uint64_t)1 << bits) | (bits > 3 ? 5 : 0);
        size_t n = varint_encode_u64(v, buf);
        EXPECT(varint_decode_u64(buf, n, &got) == (int)n);
        EXPECT_U64(got, v);
    }
}

static void test_truncated(void)
{
    uint64_t v = 77;

    EXPECT(varint_decode_u64((const uint8_t *)"", 0, &v) == -VARINT_ETRUNC);
    EXPECT(varint_decode_u64((const uint8_t *)"\x80", 1, &v) == -VARINT_ETRUNC);
    EXPECT(varint_decode_u64((const uint8_t *)"\xff\xff\xff", 3, &v) == -VARINT_ETRUNC);
    EXPECT_U64(v, 77);
}

static void test_overlong_is_overflow(void)
{
    const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                              0x80, 0x80, 0x80, 0x80, 0x00};
    uint64_t v = 77;

    EXPECT(varint_decode_u64(eleven, sizeof eleven, &v) == -VARINT_EOVERFLOW);
    EXPECT_U64(v, 77);
}

static void test_u32(void)
{
    uint8_t buf[VARINT_MAX_LEN];
    uint32_t v = 0;
    size_t n;

    n = varint_encode_u64(UINT32_MAX, buf);
    EXPECT_U64(n, 5);
    EXPECT(varint_decode_u32(buf, n, &v) == 5);
    EXPECT_U64(v, UINT32_MAX);
    n = varint_encode_u64((uint64_t)UINT32_MAX + 1, buf);
    EXPECT(varint_decode_u32(buf, n, &v) == -VARINT_EOVERFLOW);
}

static void test_zigzag(void)
{
    EXPECT_U64(zigzag_encode(0), 0);
    EXPECT_U64(zigzag_encode(-1), 1);
    EXPECT_U64(zigzag_encode(1), 2);
    EXPECT_U64(zigzag_encode(-2), 3);
    EXPECT_U64(zigzag_encode(2147483647), 4294967294u);
    EXPECT_U64(zigzag_encode(-2147483647 - 1), 4294967295u);
    EXPECT_I64(zigzag_decode(0), 0);
    EXPECT_I64(zigzag_decode(1), -1);
    EXPECT_I64(zigzag_decode(4), 2);
    EXPECT_I64(zigzag_decode(4294967295u), -2147483647 - 1);
}

static void test_signed_small_values(void)
{
    uint8_t buf[VARINT_MAX_LEN];
    int64_t values[] = {0, 1, -1, 63, -64, 64, -65, 1000000, -1000000};
    int64_t got;
    size_t i, n;

    for (i = 0; i < sizeof values / sizeof values[0]; i++) {
        n = varint_encode_s64(values[i], buf);
        EXPECT(varint_decode_s64(buf, n, &got) == (int)n);
        EXPECT_I64(got, values[i]);
        n = varint_encode_i64(values[i] < 0 ? -values[i] : values[i], buf);
        EXPECT(varint_decode_i64(buf, n, &got) == (int)n);
        EXPECT_I64(got, values[i] < 0 ? -values[i] : values[i]);
    }
    EXPECT_U64(varint_encode_s64(-64, buf), 1);
    EXPECT_U64(varint_encode_s64(-65, buf), 2);
}

static void test_twos_complement_negative_is_ten_bytes(void)
{
    uint8_t buf[VARINT_MAX_LEN];

    EXPECT_U64(varint_encode_i64(-1, buf), 10);
    EXPECT_BYTES(buf, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
}

static void test_vbuf_and_reader(void)
{
    vbuf b;
    vreader r;
    const uint8_t *s;
    size_t n;

    vbuf_init(&b);
    vbuf_put_u64(&b, 300);
    vbuf_put_s64(&b, -3);
    vbuf_put_bytes(&b, "hello", 5);
    vbuf_put_i64(&b, 42);
    vbuf_put_bytes(&b, "", 0);
    EXPECT(b.err == VARINT_OK);
    EXPECT_U64(b.len, 2 + 1 + 6 + 1 + 1);

    vreader_init(&r, b.data, b.len);
    EXPECT_U64(vreader_u64(&r), 300);
    EXPECT_I64(vreader_s64(&r), -3);
    s = vreader_bytes(&r, &n);
    EXPECT_U64(n, 5);
    EXPECT(s != NULL && memcmp(s, "hello", 5) == 0);
    EXPECT_I64(vreader_i64(&r), 42);
    s = vreader_bytes(&r, &n);
    EXPECT(s != NULL && n == 0);
    EXPECT_U64(vreader_remaining(&r), 0);
    EXPECT(r.err == VARINT_OK);
    EXPECT_U64(vreader_u64(&r), 0);
    EXPECT(r.err == VARINT_ETRUNC);
    vbuf_free(&b);
}

static void test_reader_errors_are_sticky(void)
{
    vreader r;
    size_t n = 9;

    vreader_init(&r, "\x05" "abc", 4);   /* claims 5 bytes, has 3 */
    EXPECT(vreader_bytes(&r, &n) == NULL);
    EXPECT_U64(n, 0);
    EXPECT(r.err == VARINT_ETRUNC);
    EXPECT_U64(vreader_remaining(&r), 4);
    EXPECT_U64(vreader_u64(&r), 0);
    EXPECT_U64(vreader_remaining(&r), 4);
}

static void test_vbuf_grows(void)
{
    vbuf b;
    vreader r;
    uint64_t i;
    int ok = 1;

    vbuf_init(&b);
    for (i = 0; i < 5000; i++)
        vbuf_put_u64(&b, i * 7919);
    EXPECT(b.err == VARINT_OK);
    vreader_init(&r, b.data, b.len);
    for (i = 0; i < 5000; i++)
        ok &= vreader_u64(&r) == i * 7919;
    EXPECT(ok);
    EXPECT(r.err == VARINT_OK && vreader_remaining(&r) == 0);
    vbuf_free(&b);
    EXPECT(b.data == NULL && b.len == 0);
}

static void test_strerror(void)
{
    EXPECT(strcmp(varint_strerror(-VARINT_ETRUNC), "truncated varint") == 0);
    EXPECT(strcmp(varint_strerror(VARINT_EOVERFLOW), "varint overflows its type") == 0);
    EXPECT(strcmp(varint_strerror(99), "unknown varint error") == 0);
}

static const struct mt_case cases[] = {
    MT_CASE(test_encode_known_values),
    MT_CASE(test_size_matches_encoding),
    MT_CASE(test_decode_known_values),
    MT_CASE(test_round_trip_up_to_62_bits),
    MT_CASE(test_truncated),
    MT_CASE(test_overlong_is_overflow),
    MT_CASE(test_u32),
    MT_CASE(test_zigzag),
    MT_CASE(test_signed_small_values),
    MT_CASE(test_twos_complement_negative_is_ten_bytes),
    MT_CASE(test_vbuf_and_reader),
    MT_CASE(test_reader_errors_are_sticky),
    MT_CASE(test_vbuf_grows),
    MT_CASE(test_strerror),
};

int main(void)
{
    return mt_run(cases, sizeof cases / sizeof cases[0]);
}
