/* CityHash64 and CityHash128 v1.0.2 as ClickHouse computes them (see chhash.h). Multiplications and
 * additions wrap modulo 2^64, loads are little-endian (as on every machine ClickHouse runs on). */
#include "chhash.h"

#include <string.h>

static const uint64_t K0 = 0xc3a5c85c97cb3127ULL;
static const uint64_t K1 = 0xb492b66fbe98f273ULL;
static const uint64_t K2 = 0x9ae16a3b2f90404fULL;
static const uint64_t K3 = 0xc949d7c7509e6557ULL;

static uint64_t fetch64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint32_t fetch32(const char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t rotate(uint64_t v, int shift)
{
    return shift == 0 ? v : (v >> shift) | (v << (64 - shift));
}

static uint64_t shift_mix(uint64_t v)
{
    return v ^ (v >> 47);
}

/* Hash128to64 of (low u, high v). */
static uint64_t hash_len16(uint64_t u, uint64_t v)
{
    const uint64_t mul = 0x9ddfea08eb382d69ULL;
    uint64_t a = (u ^ v) * mul;
    a ^= a >> 47;
    uint64_t b = (v ^ a) * mul;
    b ^= b >> 47;
    return b * mul;
}

static uint64_t len0to16(const char *s, size_t len)
{
    if (len > 8) {
        uint64_t a = fetch64(s), b = fetch64(s + len - 8);
        int r = (int)(len & 63); /* RotateByAtLeast1: len is 9..16 */
        uint64_t bl = b + len;
        return hash_len16(a, (bl >> r) | (bl << (64 - r))) ^ b;
    }
    if (len >= 4) {
        uint64_t a = fetch32(s);
        return hash_len16(len + (a << 3), fetch32(s + len - 4));
    }
    if (len > 0) {
        uint8_t a = (uint8_t)s[0], b = (uint8_t)s[len >> 1], c = (uint8_t)s[len - 1];
        uint32_t y = (uint32_t)a + ((uint32_t)b << 8);
        uint32_t z = (uint32_t)len + ((uint32_t)c << 2);
        return shift_mix(y * K2 ^ z * K3) * K2;
    }
    return K2;
}

static uint64_t len17to32(const char *s, size_t len)
{
    uint64_t a = fetch64(s) * K1, b = fetch64(s + 8);
    uint64_t c = fetch64(s + len - 8) * K2, d = fetch64(s + len - 16) * K0;
    return hash_len16(rotate(a - b, 43) + rotate(c, 30) + d, a + rotate(b ^ K3, 20) - c + len);
}

struct pair {
    uint64_t first, second;
};

static struct pair weak32(const char *s, uint64_t a, uint64_t b)
{
    uint64_t w = fetch64(s), x = fetch64(s + 8), y = fetch64(s + 16), z = fetch64(s + 24);
    a += w;
    b = rotate(b + a + z, 21);
    uint64_t c = a;
    a += x;
    a += y;
    b += rotate(a, 44);
    return (struct pair){a + z, b + c};
}

/* One 64-byte step of the long-input loop, the same in CityHash64 and CityHash128 (v1.0.2). */
static void round64(const char *s, uint64_t *x, uint64_t *y, uint64_t *z, struct pair *v,
                    struct pair *w)
{
    *x = rotate(*x + *y + v->first + fetch64(s + 16), 37) * K1;
    *y = rotate(*y + v->second + fetch64(s + 48), 42) * K1;
    *x ^= w->second;
    *y ^= v->first;
    *z = rotate(*z ^ w->first, 33);
    *v = weak32(s, v->second * K1, *x + w->first);
    *w = weak32(s + 32, *z + w->second, *y);
    uint64_t t = *z;
    *z = *x;
    *x = t;
}

static uint64_t len33to64(const char *s, size_t len)
{
    uint64_t z = fetch64(s + 24);
    uint64_t a = fetch64(s) + (len + fetch64(s + len - 16)) * K0;
    uint64_t b = rotate(a + z, 52), c = rotate(a, 37);
    a += fetch64(s + 8);
    c += rotate(a, 7);
    a += fetch64(s + 16);
    uint64_t vf = a + z, vs = b + rotate(a, 31) + c;
    a = fetch64(s + 16) + fetch64(s + len - 32);
    z = fetch64(s + len - 8);
    b = rotate(a + z, 52);
    c = rotate(a, 37);
    a += fetch64(s + len - 24);
    c += rotate(a, 7);
    a += fetch64(s + len - 16);
    uint64_t wf = a + z, ws = b + rotate(a, 31) + c;
    uint64_t r = shift_mix((vf + ws) * K2 + (wf + vs) * K0);
    return shift_mix(r * K0 + vs) * K2;
}

uint64_t chhash_city64(const char *s, size_t len)
{
    if (len <= 16)
        return len0to16(s, len);
    if (len <= 32)
        return len17to32(s, len);
    if (len <= 64)
        return len33to64(s, len);
    /* over 64 bytes: the end first, then 64-byte chunks with 56 bytes of state */
    uint64_t x = fetch64(s), y = fetch64(s + len - 16) ^ K1, z = fetch64(s + len - 56) ^ K0;
    struct pair v = weak32(s + len - 64, len, y), w = weak32(s + len - 32, len * K1, K0);
    z += shift_mix(v.second) * K1;
    x = rotate(z + x, 39) * K1;
    y = rotate(y, 33) * K1;
    len = (len - 1) & ~(size_t)63;
    do {
        round64(s, &x, &y, &z, &v, &w);
        s += 64;
        len -= 64;
    } while (len != 0);
    return hash_len16(hash_len16(v.first, w.first) + shift_mix(y) * K1 + z,
                      hash_len16(v.second, w.second) + x);
}

/* ClickHouse's IntHash64Impl: intHash64 (MurmurHash3's finaliser) of x xor a fixed seed. */
static uint64_t int_hash64(uint64_t x)
{
    x ^= 0x4CF2D2BAAE6DA887ULL;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

uint64_t chhash_city64_str_u64(const char *s, size_t len, uint64_t n)
{
    return hash_len16(chhash_city64(s, len), int_hash64(n));
}

/* CityMurmur: CityHash128WithSeed below 128 bytes. */
static struct pair city_murmur(const char *s, size_t len, struct pair seed)
{
    uint64_t a = seed.first, b = seed.second, c, d;
    if (len <= 16) {
        a = shift_mix(a * K1) * K1;
        c = b * K1 + len0to16(s, len);
        d = shift_mix(a + (len >= 8 ? fetch64(s) : c));
    } else {
        c = hash_len16(fetch64(s + len - 8) + K1, a);
        d = hash_len16(b + len, c + fetch64(s + len - 16));
        a += d;
        for (size_t l = len - 16;; l -= 16) { /* as many 16-byte steps as the reference's l > 0 */
            a ^= shift_mix(fetch64(s) * K1) * K1;
            a *= K1;
            b ^= a;
            c ^= shift_mix(fetch64(s + 8) * K1) * K1;
            c *= K1;
            d ^= c;
            s += 16;
            if (l <= 16)
                break;
        }
    }
    a = hash_len16(a, c);
    b = hash_len16(d, b);
    return (struct pair){a ^ b, hash_len16(b, a)};
}

static struct pair city128_seed(const char *s, size_t len, struct pair seed)
{
    if (len < 128)
        return city_murmur(s, len, seed);
    struct pair v, w;
    uint64_t x = seed.first, y = seed.second, z = len * K1;
    v.first = rotate(y ^ K1, 49) * K1 + fetch64(s);
    v.second = rotate(v.first, 42) * K1 + fetch64(s + 8);
    w.first = rotate(y + z, 35) * K1 + x;
    w.second = rotate(x + fetch64(s + 88), 53) * K1;
    do { /* two 64-byte rounds per turn */
        for (int half = 0; half < 2; half++, s += 64)
            round64(s, &x, &y, &z, &v, &w);
        len -= 128;
    } while (len >= 128);
    y += rotate(w.first, 37) * K0 + z;
    x += rotate(v.first + z, 49) * K0;
    for (size_t done = 0; done < len;) { /* up to four 32-byte chunks from the end */
        done += 32;
        y = rotate(y - x, 42) * K0 + v.second;
        w.first += fetch64(s + len - done + 16);
        x = rotate(x, 49) * K0 + w.first;
        w.first += v.first;
        v = weak32(s + len - done, v.first, v.second);
    }
    x = hash_len16(x, v.first);
    y = hash_len16(y, w.first);
    return (struct pair){hash_len16(x + v.second, w.second) + y,
                         hash_len16(x + w.second, y + v.second)};
}

void chhash_city128(const char *s, size_t len, uint64_t out[2])
{
    struct pair h;
    if (len >= 16)
        h = city128_seed(s + 16, len - 16, (struct pair){fetch64(s) ^ K3, fetch64(s + 8)});
    else if (len >= 8)
        h = city128_seed(NULL, 0,
                         (struct pair){fetch64(s) ^ (len * K0), fetch64(s + len - 8) ^ K1});
    else
        h = city128_seed(s, len, (struct pair){K0, K1});
    out[0] = h.first;
    out[1] = h.second;
}
