/* wl-traffic: the bounded traffic generator of the demo and the end-to-end test: a server that
 * serves GET (it sends) and PUT (it receives) requests over TCP, and get/put clients. Every run
 * is bounded in bytes, connections and seconds, and prints its own byte counts as one JSON line
 * (the independent figures the test compares the reconciler's numbers with).
 *
 *   wl-traffic serve --listen ADDR:PORT --seconds T [--max-conns N]
 *                    [--log FILE --service NAME]       (an NDJSON transfer record per GET)
 *   wl-traffic get --to ADDR:PORT --bytes N [--rate BPS] [--seconds T] [--count C]
 *                  [--parallel P] [--tag KEY=VALUE]... (tags: requester, workflow, id)
 *   wl-traffic put --to ADDR:PORT --bytes N [--rate BPS] [--seconds T] [--count C]
 *                  [--parallel P]
 *
 * Request line (client to server): "GET BYTES RATE_BPS [KEY=VALUE]...\n" or "PUT BYTES\n".
 * Rates are bits per second of payload, 0 for as fast as TCP goes. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK          (64 * 1024)
#define MAX_SECONDS    3600  /* a client run */
#define MAX_SERVE_SEC  86400 /* a server outlives the loads it serves: the demo runs for hours */
#define MAX_CONNS      100000
#define MAX_PARALLEL   256
#define MAX_TAGS       8
#define REQ_MAX        512
#define IO_TIMEOUT_SEC 5

struct opts {
    const char *mode;
    struct sockaddr_in addr;
    bool have_addr;
    uint64_t bytes;
    uint64_t rate_bps;
    double seconds;
    long count;
    long parallel;
    long max_conns;
    const char *log_path;
    const char *service;
    const char *tags[MAX_TAGS];
    int n_tags;
};

static struct opts o;
static double deadline; /* monotonic seconds */
static atomic_uint_fast64_t total_tx, total_rx;
static atomic_long conns_ok, conns_failed, conns_active;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_file;
static atomic_long transfer_seq;

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void wall_rfc3339(const struct timespec *ts, char *buf, size_t len)
{
    struct tm tm;
    gmtime_r(&ts->tv_sec, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%06dZ", (int)(ts->tv_nsec / 1000 % 1000000));
}

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof host)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port <= 0 || port > 65535)
        return -1;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return -1;
    /* Suffixes k, M, G (powers of 1000) and Ki, Mi, Gi (powers of 1024). */
    double mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1e3;
    else if (*end == 'M')
        mul = 1e6;
    else if (*end == 'G')
        mul = 1e9;
    if (mul > 1 && end[1] == 'i') {
        mul = mul == 1e3 ? 1024.0 : mul == 1e6 ? 1048576.0 : 1073741824.0;
        end++;
    }
    if (mul > 1)
        end++;
    if (*end)
        return -1;
    *out = (uint64_t)(v * mul);
    return 0;
}

static void set_timeouts(int fd)
{
    struct timeval tv = {.tv_sec = IO_TIMEOUT_SEC};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* Sleeps so that `sent` bytes since `start` stay at or under rate_bps. */
static void pace(double start, uint64_t sent, uint64_t rate_bps)
{
    if (!rate_bps)
        return;
    double due = start + (double)sent * 8.0 / (double)rate_bps;
    double now = mono_now();
    if (due > deadline)
        due = deadline;
    if (due > now) {
        double d = due - now;
        struct timespec ts = {.tv_sec = (time_t)d,
                              .tv_nsec = (long)((d - (double)(time_t)d) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* Sends n bytes (zeros) paced at rate_bps until the deadline; returns what the kernel took. */
static uint64_t send_bytes(int fd, uint64_t n, uint64_t rate_bps)
{
    static const char zeros[CHUNK];
    uint64_t sent = 0;
    double start = mono_now();
    while (sent < n && mono_now() < deadline) {
        size_t want = n - sent < CHUNK ? (size_t)(n - sent) : CHUNK;
        if (rate_bps) {
            /* Keep bursts to ~10 ms of the rate so pacing stays smooth. */
            uint64_t burst = rate_bps / 8 / 100;
            if (burst < 1448)
                burst = 1448;
            if (want > burst)
                want = (size_t)burst;
        }
        ssize_t w = send(fd, zeros, want, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            break;
        }
        sent += (uint64_t)w;
        atomic_fetch_add(&total_tx, (uint64_t)w);
        pace(start, sent, rate_bps);
    }
    return sent;
}

/* Reads until EOF, n bytes (when n > 0) or the deadline; returns bytes read. */
static uint64_t recv_bytes(int fd, uint64_t n)
{
    char buf[CHUNK];
    uint64_t got = 0;
    while ((!n || got < n) && mono_now() < deadline) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            break;
        }
        if (r == 0)
            break;
        got += (uint64_t)r;
        atomic_fetch_add(&total_rx, (uint64_t)r);
    }
    return got;
}

static int read_line(int fd, char *buf, size_t len)
{
    size_t i = 0;
    while (i + 1 < len) {
        char c;
        ssize_t r = recv(fd, &c, 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        if (c == '\n') {
            buf[i] = '\0';
            return 0;
        }
        buf[i++] = c;
    }
    return -1;
}

/* JSON string body: only printable ASCII without quotes or backslashes passes; else '_'. */
static void json_safe(const char *in, char *out, size_t len)
{
    size_t i = 0;
    for (; in[i] && i + 1 < len; i++)
        out[i] = (in[i] >= 0x20 && in[i] < 0x7f && in[i] != '"' && in[i] != '\\') ? in[i] : '_';
    out[i] = '\0';
}

static void log_transfer(int fd, char *tags, uint64_t bytes, const struct timespec *t0,
                         const struct timespec *t1)
{
    char requester[64] = "", workflow[64] = "", id[96] = "";
    for (char *save, *tok = strtok_r(tags, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (!strncmp(tok, "requester=", 10))
            json_safe(tok + 10, requester, sizeof requester);
        else if (!strncmp(tok, "workflow=", 9))
            json_safe(tok + 9, workflow, sizeof workflow);
        else if (!strncmp(tok, "id=", 3))
            json_safe(tok + 3, id, sizeof id);
    }
    struct sockaddr_in local, peer;
    socklen_t sl = sizeof local, pl = sizeof peer;
    getsockname(fd, (struct sockaddr *)&local, &sl);
    getpeername(fd, (struct sockaddr *)&peer, &pl);
    char src[INET_ADDRSTRLEN], dst[INET_ADDRSTRLEN], start[48], end[48];
    inet_ntop(AF_INET, &local.sin_addr, src, sizeof src);
    inet_ntop(AF_INET, &peer.sin_addr, dst, sizeof dst);
    wall_rfc3339(t0, start, sizeof start);
    wall_rfc3339(t1, end, sizeof end);
    if (!id[0])
        snprintf(id, sizeof id, "%s-%ld-%ld-%ld", src, (long)getpid(), (long)t0->tv_sec,
                 atomic_fetch_add(&transfer_seq, 1));
    pthread_mutex_lock(&log_lock);
    fprintf(log_file,
            "{\"service\":\"%s\",\"id\":\"%s\",\"requester\":\"%s\",\"workflow\":\"%s\","
            "\"src\":\"%s\",\"dst\":\"%s\",\"bytes\":%" PRIu64
            ",\"start\":\"%s\",\"end\":\"%s\"}\n",
            o.service, id, requester, workflow, src, dst, bytes, start, end);
    fflush(log_file);
    pthread_mutex_unlock(&log_lock);
}

static void *serve_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char req[REQ_MAX];
    set_timeouts(fd);
    bool ok = false;
    if (read_line(fd, req, sizeof req) == 0) {
        char verb[8];
        uint64_t n = 0, rate = 0;
        int used = 0;
        if (sscanf(req, "%7s %" SCNu64 " %" SCNu64 " %n", verb, &n, &rate, &used) >= 2) {
            if (!strcmp(verb, "GET")) {
                struct timespec t0, t1;
                clock_gettime(CLOCK_REALTIME, &t0);
                uint64_t sent = send_bytes(fd, n, rate);
                clock_gettime(CLOCK_REALTIME, &t1);
                /* Log what was delivered: the record a service writes when a copy ends. */
                if (log_file && sent > 0)
                    log_transfer(fd, req + used, sent, &t0, &t1);
                ok = sent == n;
            } else if (!strcmp(verb, "PUT")) {
                ok = recv_bytes(fd, n) == n;
            }
        }
    }
    atomic_fetch_add(ok ? &conns_ok : &conns_failed, 1);
    close(fd);
    atomic_fetch_sub(&conns_active, 1);
    return NULL;
}

static int do_serve(void)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(ls, (struct sockaddr *)&o.addr, sizeof o.addr) < 0 || listen(ls, 256) < 0) {
        fprintf(stderr, "wl-traffic serve: bind/listen: %s\n", strerror(errno));
        return 1;
    }
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
    setsockopt(ls, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    long accepted = 0;
    while (mono_now() < deadline && accepted < o.max_conns) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0)
            continue; /* timeout tick or EINTR: re-check the deadline */
        if (atomic_load(&conns_active) >= MAX_PARALLEL) {
            close(fd);
            atomic_fetch_add(&conns_failed, 1);
            continue;
        }
        atomic_fetch_add(&conns_active, 1);
        accepted++;
        pthread_t t;
        if (pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)fd) != 0) {
            close(fd);
            atomic_fetch_sub(&conns_active, 1);
            continue;
        }
        pthread_detach(t);
    }
    close(ls);
    /* Let running transfers finish (they are bounded by the same deadline). */
    while (atomic_load(&conns_active) > 0 && mono_now() < deadline + IO_TIMEOUT_SEC + 1)
        usleep(50000);
    return 0;
}

static int client_one(bool get)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    set_timeouts(fd);
    if (connect(fd, (struct sockaddr *)&o.addr, sizeof o.addr) < 0) {
        close(fd);
        return -1;
    }
    char req[REQ_MAX];
    int len;
    if (get) {
        len = snprintf(req, sizeof req, "GET %" PRIu64 " %" PRIu64, o.bytes, o.rate_bps);
        for (int i = 0; i < o.n_tags && len < (int)sizeof req; i++)
            len += snprintf(req + len, sizeof req - (size_t)len, " %s", o.tags[i]);
    } else {
        len = snprintf(req, sizeof req, "PUT %" PRIu64 " 0", o.bytes);
    }
    if (len >= (int)sizeof req - 1) {
        close(fd);
        return -1;
    }
    req[len++] = '\n';
    bool ok = send(fd, req, (size_t)len, MSG_NOSIGNAL) == len;
    if (ok && get) {
        ok = recv_bytes(fd, o.bytes) == o.bytes;
    } else if (ok) {
        ok = send_bytes(fd, o.bytes, o.rate_bps) == o.bytes;
        shutdown(fd, SHUT_WR);
        char c;
        /* Wait for the server to close: the bytes have been read at the other end. */
        while (ok && recv(fd, &c, 1, 0) > 0)
            ;
    }
    close(fd);
    return ok ? 0 : -1;
}

static void *client_worker(void *arg)
{
    bool get = arg != NULL;
    for (long i = 0; i < o.count && mono_now() < deadline; i++) {
        if (client_one(get) == 0) {
            atomic_fetch_add(&conns_ok, 1);
        } else {
            atomic_fetch_add(&conns_failed, 1);
            usleep(100000); /* server not up yet or gone: do not spin */
        }
    }
    return NULL;
}

static int do_client(bool get)
{
    pthread_t t[MAX_PARALLEL];
    for (long i = 0; i < o.parallel; i++)
        if (pthread_create(&t[i], NULL, client_worker, get ? (void *)1 : NULL) != 0)
            return 1;
    for (long i = 0; i < o.parallel; i++)
        pthread_join(t[i], NULL);
    return atomic_load(&conns_failed) ? 1 : 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: wl-traffic serve --listen ADDR:PORT --seconds T [--max-conns N] "
                    "[--log FILE --service NAME]\n"
                    "       wl-traffic get|put --to ADDR:PORT --bytes N [--rate BPS] "
                    "[--seconds T] [--count C] [--parallel P] [--tag K=V]...\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage();
        return 2;
    }
    o.mode = argv[1];
    o.seconds = 60;
    o.count = 1;
    o.parallel = 1;
    o.max_conns = MAX_CONNS;
    static const struct option lo[] = {
        {"listen", required_argument, 0, 'l'},   {"to", required_argument, 0, 't'},
        {"bytes", required_argument, 0, 'b'},    {"rate", required_argument, 0, 'r'},
        {"seconds", required_argument, 0, 's'},  {"count", required_argument, 0, 'c'},
        {"parallel", required_argument, 0, 'p'}, {"max-conns", required_argument, 0, 'm'},
        {"log", required_argument, 0, 'L'},      {"service", required_argument, 0, 'S'},
        {"tag", required_argument, 0, 'T'},      {0, 0, 0, 0}};
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'l':
        case 't':
            if (parse_addr(optarg, &o.addr) < 0) {
                fprintf(stderr, "wl-traffic: --%s: expected IPv4:PORT, got '%s'\n",
                        c == 'l' ? "listen" : "to", optarg);
                return 2;
            }
            o.have_addr = true;
            break;
        case 'b':
        case 'r':
            if (parse_u64(optarg, c == 'b' ? &o.bytes : &o.rate_bps) < 0) {
                fprintf(stderr, "wl-traffic: --%s: expected a number, got '%s'\n",
                        c == 'b' ? "bytes" : "rate", optarg);
                return 2;
            }
            break;
        case 's':
            o.seconds = strtod(optarg, NULL);
            break;
        case 'c':
            o.count = strtol(optarg, NULL, 10);
            break;
        case 'p':
            o.parallel = strtol(optarg, NULL, 10);
            break;
        case 'm':
            o.max_conns = strtol(optarg, NULL, 10);
            break;
        case 'L':
            o.log_path = optarg;
            break;
        case 'S':
            o.service = optarg;
            break;
        case 'T':
            if (o.n_tags == MAX_TAGS || strchr(optarg, ' ') || !strchr(optarg, '=')) {
                fprintf(stderr,
                        "wl-traffic: --tag: expected KEY=VALUE without spaces (at "
                        "most %d), got '%s'\n",
                        MAX_TAGS, optarg);
                return 2;
            }
            o.tags[o.n_tags++] = optarg;
            break;
        default:
            usage();
            return 2;
        }
    }
    double max_seconds = strcmp(o.mode, "serve") ? MAX_SECONDS : MAX_SERVE_SEC;
    if (!o.have_addr || o.seconds <= 0 || o.seconds > max_seconds || o.count < 1 ||
        o.count > MAX_CONNS || o.parallel < 1 || o.parallel > MAX_PARALLEL || o.max_conns < 1 ||
        o.max_conns > MAX_CONNS) {
        fprintf(stderr,
                "wl-traffic: need an address, 0 < --seconds <= %.0f, 1 <= --count <= %d, "
                "1 <= --parallel <= %d\n",
                max_seconds, MAX_CONNS, MAX_PARALLEL);
        return 2;
    }
    if (!!o.log_path != !!o.service) {
        fprintf(stderr, "wl-traffic: --log and --service go together\n");
        return 2;
    }
    if (o.log_path && !(log_file = fopen(o.log_path, "a"))) {
        fprintf(stderr, "wl-traffic: --log %s: %s\n", o.log_path, strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    double start = mono_now();
    deadline = start + o.seconds;
    int rc;
    if (!strcmp(o.mode, "serve")) {
        rc = do_serve();
    } else if (!strcmp(o.mode, "get") || !strcmp(o.mode, "put")) {
        if (!o.bytes) {
            fprintf(stderr, "wl-traffic %s: --bytes is required\n", o.mode);
            return 2;
        }
        rc = do_client(!strcmp(o.mode, "get"));
    } else {
        usage();
        return 2;
    }
    printf("{\"mode\":\"%s\",\"tx_bytes\":%" PRIu64 ",\"rx_bytes\":%" PRIu64
           ",\"connections_ok\":%ld,\"connections_failed\":%ld,\"seconds\":%.3f}\n",
           o.mode, (uint64_t)atomic_load(&total_tx), (uint64_t)atomic_load(&total_rx),
           atomic_load(&conns_ok), atomic_load(&conns_failed), mono_now() - start);
    if (log_file)
        fclose(log_file);
    return rc;
}
