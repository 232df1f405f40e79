/* The tree's one writer of PostgreSQL's binary COPY format (the "Binary Format" section of the
 * COPY page of the PostgreSQL manual): the 19-byte header, the trailer, and big-endian field
 * words. A tuple is a 16-bit field count, then per field a 32-bit length (-1 = NULL) and that many
 * bytes in the type's send format: int4/int8 big-endian, timestamptz an int8 of microseconds since
 * 2000-01-01 UTC, text its bytes (the server checks the encoding as for text COPY), inet the
 * family (2 IPv4, 3 IPv6), the prefix bits, is_cidr 0, the address length and the address.
 * Header-only: the ingest path writes ~30 fields per flow record. Users: reconciler/flow_row_bin.c
 * (flow_records) and reconciler/recon_db_write.c (attribution_rollup). */
#ifndef WL_COPYBIN_H
#define WL_COPYBIN_H

#include <stddef.h>
#include <stdint.h>

/* signature "PGCOPY\n\377\r\n\0", flags 0, header extension length 0 */
#define COPYBIN_HEADER     "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0"
#define COPYBIN_HEADER_LEN 19
/* the file trailer: a field count of -1 */
#define COPYBIN_TRAILER     "\377\377"
#define COPYBIN_TRAILER_LEN 2
/* Microseconds from the Unix epoch to PostgreSQL's (2000-01-01T00:00:00Z). */
#define COPYBIN_PG_EPOCH_US (INT64_C(946684800) * INT64_C(1000000))
/* PostgreSQL's inet families in the send format (utils/inet.h PGSQL_AF_INET/PGSQL_AF_INET6) */
#define COPYBIN_AF_INET  2
#define COPYBIN_AF_INET6 3

/* Writes v as n big-endian bytes (n = 2, 4 or 8) at w; returns w + n. */
static inline unsigned char *copybin_be(unsigned char *w, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        w[i] = (unsigned char)v;
        v >>= 8;
    }
    return w + n;
}

#endif
