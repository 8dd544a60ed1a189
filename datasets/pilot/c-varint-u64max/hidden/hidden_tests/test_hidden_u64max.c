/* Hidden tests: values that need all ten bytes of a 64-bit varint. */
#include "varint.h"
#include "minitest.h"

static const uint8_t MAX10[] = {0xff, 0xff, 0xff, 0xff, 0xff,
                                0xff, 0xff, 0xff, 0xff, 0x01};

static void test_decode_uint64_max(void)
{
    uint64_t v = 0;

    EXPECT(varint_decode_u64(MAX10, sizeof MAX10, &v) == 10);
    EXPECT_U64(v, UINT64_MAX);
}

static void test_decode_top_bit_only(void)
{
    const uint8_t in[] = {0x80, 0x80, 0x80, 0x80, 0x80,
                          0x80, 0x80, 0x80, 0x80, 0x01, 0x7f};
    uint64_t v = 0;

    EXPECT(varint_decode_u64(in, sizeof in, &v) == 10);
    EXPECT_U64(v, (uint64_t)1 << 63);
}

static void test_round_trip_every_bit_width(void)
{
    uint8_t buf[VARINT_MAX_LEN];
    uint64_t got;
    int bits;

    for (bits = 0; bits < 64; bits++) {
        uint64_t v = (uint64_t)1 << bits;
        uint64_t vals[3];
        int k;
        vals[0] = v;
        vals[1] = v - 1;
        vals[2] = v | (v - 1);   /* all ones up to this bit */
        for (k = 0; k < 3; k++) {
            size_t n = varint_encode_u64(vals[k], buf);
            got = ~vals[k];
            EXPECT(varint_decode_u64(buf, n, &got) == (int)n);
            EXPECT_U64(got, vals[k]);
        }
    }
}

static void test_ten_byte_non_minimal_zero_tail(void)
{
    const uint8_t in[] = {0x81, 0x80, 0x80, 0x80, 0x80,
                          0x80, 0x80, 0x80, 0x80, 0x00};
    uint64_t v = 0;

    EXPECT(varint_decode_u64(in, sizeof in, &v) == 10);
    EXPECT_U64(v, 1);
}

static void test_tenth_byte_overflow_still_rejected(void)
{
    uint8_t in[11];
    uint64_t v = 5;

    memcpy(in, MAX10, 10);
    in[9] = 0x02;                 /* bit 64 would be set */
    EXPECT(varint_decode_u64(in, 10, &v) == -VARINT_EOVERFLOW);
    in[9] = 0x7f;
    EXPECT(varint_decode_u64(in, 10, &v) == -VARINT_EOVERFLOW);
    in[9] = 0x81;                 /* an eleventh byte would follow */
    in[10] = 0x00;
    EXPECT(varint_decode_u64(in, 11, &v) == -VARINT_EOVERFLOW);
    EXPECT_U64(v, 5);
    /* nine full bytes and nothing more is merely truncated */
    EXPECT(varint_decode_u64(MAX10, 9, &v) == -VARINT_ETRUNC);
}

static void test_twos_complement_negative_round_trip(void)
{
    uint8_t buf[VARINT_MAX_LEN];
    int64_t values[] = {-1, -2, -300, -2147483648LL, INT64_MIN, INT64_MIN + 1};
    size_t i, n;
    int64_t got;

    for (i = 0; i < sizeof values / sizeof values[0]; i++) {
        n = varint_encode_i64(values[i], buf);
        EXPECT_U64(n, 10);
        got = 0;
        EXPECT(varint_decode_i64(buf, n, &got) == 10);
        EXPECT_I64(got, values[i]);
    }
}

static void test_zigzag_extremes_round_trip(void)
{
    uint8_t buf[VARINT_MAX_LEN];
    int64_t values[] = {INT64_MAX, INT64_MIN, INT64_MIN + 1, INT64_MAX - 1,
                        -4611686018427387905LL, 4611686018427387904LL};
    size_t i, n;
    int64_t got;

    for (i = 0; i < sizeof values / sizeof values[0]; i++) {
        n = varint_encode_s64(values[i], buf);
        got = 0;
        EXPECT(varint_decode_s64(buf, n, &got) == (int)n);
        EXPECT_I64(got, values[i]);
    }
}

static void test_reader_negative_int64(void)
{
    vbuf b;
    vreader r;

    vbuf_init(&b);
    vbuf_put_i64(&b, -7);
    vbuf_put_u64(&b, UINT64_MAX);
    vbuf_put_s64(&b, INT64_MIN);
    vbuf_put_u64(&b, 1);
    vreader_init(&r, b.data, b.len);
    EXPECT_I64(vreader_i64(&r), -7);
    EXPECT_U64(vreader_u64(&r), UINT64_MAX);
    EXPECT_I64(vreader_s64(&r), INT64_MIN);
    EXPECT_U64(vreader_u64(&r), 1);
    EXPECT(r.err == VARINT_OK);
    EXPECT_U64(vreader_remaining(&r), 0);
    vbuf_free(&b);
}

static const struct mt_case cases[] = {
    MT_CASE(test_decode_uint64_max),
    MT_CASE(test_decode_top_bit_only),
    MT_CASE(test_round_trip_every_bit_width),
    MT_CASE(test_ten_byte_non_minimal_zero_tail),
    MT_CASE(test_tenth_byte_overflow_still_rejected),
    MT_CASE(test_twos_complement_negative_round_trip),
    MT_CASE(test_zigzag_extremes_round_trip),
    MT_CASE(test_reader_negative_int64),
};

int main(void)
{
    return mt_run(cases, sizeof cases / sizeof cases[0]);
}
