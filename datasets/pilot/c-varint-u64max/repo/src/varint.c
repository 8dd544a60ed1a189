#include "varint.h"

const char *varint_strerror(int err)
{
    if (err < 0)
        err = -err;
    switch (err) {
    case VARINT_OK:        return "success";
    case VARINT_ETRUNC:    return "truncated varint";
    case VARINT_EOVERFLOW: return "varint overflows its type";
    case VARINT_ENOMEM:    return "out of memory";
    default:               return "unknown varint error";
    }
}

size_t varint_size_u64(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t varint_encode_u64(uint64_t v, uint8_t *out)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

int varint_decode_u64(const uint8_t *in, size_t len, uint64_t *out)
{
    uint64_t result = 0;
    unsigned shift = 0;
    size_t i;

    for (i = 0; i < len; i++) {
        uint8_t b = in[i];
        /* 64 bits are at most 10 groups of 7: a longer encoding, or high
         * bits in the last group, cannot be represented */
        if (shift >= 63)
            return -VARINT_EOVERFLOW;
        result |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            *out = result;
            return (int)(i + 1);
        }
        shift += 7;
    }
    return -VARINT_ETRUNC;
}

int varint_decode_u32(const uint8_t *in, size_t len, uint32_t *out)
{
    uint64_t v;
    int n = varint_decode_u64(in, len, &v);

    if (n < 0)
        return n;
    if (v > UINT32_MAX)
        return -VARINT_EOVERFLOW;
    *out = (uint32_t)v;
    return n;
}

uint64_t zigzag_encode(int64_t v)
{
    /* (v << 1) ^ (v >> 63), done on unsigned values to stay well defined */
    uint64_t u = (uint64_t)v;
    return (u << 1) ^ (v < 0 ? UINT64_MAX : 0);
}

int64_t zigzag_decode(uint64_t v)
{
    uint64_t u = (v >> 1) ^ (0 - (v & 1));
    /* convert back without relying on implementation-defined casts */
    if (u <= (uint64_t)INT64_MAX)
        return (int64_t)u;
    return -(int64_t)(UINT64_MAX - u) - 1;
}

size_t varint_encode_s64(int64_t v, uint8_t *out)
{
    return varint_encode_u64(zigzag_encode(v), out);
}

int varint_decode_s64(const uint8_t *in, size_t len, int64_t *out)
{
    uint64_t u;
    int n = varint_decode_u64(in, len, &u);

    if (n > 0)
        *out = zigzag_decode(u);
    return n;
}

size_t varint_encode_i64(int64_t v, uint8_t *out)
{
    return varint_encode_u64((uint64_t)v, out);
}

int varint_decode_i64(const uint8_t *in, size_t len, int64_t *out)
{
    uint64_t u;
    int n = varint_decode_u64(in, len, &u);

    if (n > 0) {
        if (u <= (uint64_t)INT64_MAX)
            *out = (int64_t)u;
        else
            *out = -(int64_t)(UINT64_MAX - u) - 1;
    }
    return n;
}
