/* Traffic with known byte counts for the agent's exactness test: every socket call's own return
 * value is summed per flow and written as "proto local remote tx rx" lines, the independent
 * truth the agent's reports are compared with.
 *
 *   wla_traffic server BIND_IP TCP_PORT UDP_PORT OUT     until SIGTERM
 *   wla_traffic client SRV_IP TCP_PORT UDP_PORT N_CONN SPREAD_MS SELF_IP OUT
 *
 * The server reads every TCP connection to EOF (with MSG_PEEK calls in between), answers
 * rx % 7919 + 1 bytes and closes; it answers every UDP datagram with len / 2 + 1 bytes. The
 * client opens N_CONN connections spread over SPREAD_MS, writing with write() of mixed sizes,
 * writev() and sendfile(); then UDP unconnected (sendto, sendmsg, sendmmsg; recvfrom, recvmsg) and
 * connected (send, recv); then loopback and own-address traffic that must not be counted.
 *
 * Smaller scenarios for the ownership, loss and role tests:
 *   wla_traffic udp DST PORT BYTES LINGER_MS       one datagram, then stay alive LINGER_MS
 *   wla_traffic spawn DST PORT BYTES UID LINGER_MS a child (uid UID, comm "wla_child") sends one
 *                                                  datagram and exits at once; the parent stays
 *   wla_traffic many DST BASEPORT N                one datagram to each of N ports
 *   wla_traffic slow-client DST PORT DELAY_MS BYTES  connect, wait, then send and read reply
 *   wla_traffic v6-server ADDR PORT                 IPv6: one TCP connection on PORT (read to EOF,
 *                                                   answer 4321 bytes), one UDP datagram on PORT+1
 *   wla_traffic v6-client ADDR PORT                 IPv6: 12345 bytes over TCP, 777 over UDP */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_FLOWS 4096

struct flow {
    char proto[4];
    char local[64], remote[64];
    uint64_t tx, rx;
};

static struct flow flows[MAX_FLOWS];
static size_t nflows;
static volatile sig_atomic_t stop;
static char buf[1 << 20];

static void die(const char *what)
{
    fprintf(stderr, "wla_traffic: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void fmt_addr(const struct sockaddr_in *sa, char *out, size_t len)
{
    char a[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa->sin_addr, a, sizeof(a));
    snprintf(out, len, "%s:%u", a, ntohs(sa->sin_port));
}

static struct flow *flow_of(const char *proto, const struct sockaddr_in *l,
                            const struct sockaddr_in *r)
{
    char ls[64], rs[64];
    fmt_addr(l, ls, sizeof(ls));
    fmt_addr(r, rs, sizeof(rs));
    for (size_t i = 0; i < nflows; i++)
        if (!strcmp(flows[i].proto, proto) && !strcmp(flows[i].local, ls) &&
            !strcmp(flows[i].remote, rs))
            return &flows[i];
    if (nflows == MAX_FLOWS) {
        fprintf(stderr, "wla_traffic: too many flows\n");
        exit(1);
    }
    struct flow *f = &flows[nflows++];
    snprintf(f->proto, sizeof(f->proto), "%s", proto);
    snprintf(f->local, sizeof(f->local), "%s", ls);
    snprintf(f->remote, sizeof(f->remote), "%s", rs);
    return f;
}

static void write_flows(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        die(path);
    for (size_t i = 0; i < nflows; i++)
        fprintf(f, "%s %s %s %llu %llu\n", flows[i].proto, flows[i].local, flows[i].remote,
                (unsigned long long)flows[i].tx, (unsigned long long)flows[i].rx);
    fclose(f);
}

static struct sockaddr_in addr_of(const char *ip, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
        fprintf(stderr, "wla_traffic: bad address %s\n", ip);
        exit(2);
    }
    return sa;
}

static uint64_t rng = 0x243F6A8885A308D3ULL;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static void names(int fd, struct sockaddr_in *l, struct sockaddr_in *r)
{
    socklen_t len = sizeof(*l);
    if (getsockname(fd, (struct sockaddr *)l, &len))
        die("getsockname");
    if (r) {
        len = sizeof(*r);
        if (getpeername(fd, (struct sockaddr *)r, &len))
            die("getpeername");
    }
}

/* ---- server ---- */

static void serve_tcp(int lfd)
{
    struct sockaddr_in l, r;
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return;
    names(fd, &l, &r);
    struct flow *f = flow_of("tcp", &l, &r);
    for (unsigned i = 0;; i++) {
        if (i % 3 == 0) {
            ssize_t p = recv(fd, buf, 100, MSG_PEEK); /* must not be counted */
            if (p == 0)
                break;
        }
        ssize_t n = recv(fd, buf, 1 + rnd(sizeof(buf) - 1), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        f->rx += (uint64_t)n;
    }
    uint64_t reply = f->rx % 7919 + 1, sent = 0;
    while (sent < reply) {
        ssize_t n = send(fd, buf, reply - sent, MSG_NOSIGNAL);
        if (n <= 0)
            break;
        sent += (uint64_t)n;
        f->tx += (uint64_t)n;
    }
    close(fd);
}

static void serve_udp(int ufd, unsigned *turn)
{
    struct sockaddr_in l, r;
    socklen_t rl = sizeof(r);
    ssize_t n;
    names(ufd, &l, NULL);
    if (*turn % 4 == 3) {
        struct iovec iov = {.iov_base = buf, .iov_len = 65536};
        struct msghdr m = {
            .msg_name = &r, .msg_namelen = sizeof(r), .msg_iov = &iov, .msg_iovlen = 1};
        n = recvmsg(ufd, &m, MSG_DONTWAIT);
    } else {
        if (*turn % 5 == 1) {
            char peek[8];
            if (recvfrom(ufd, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT, NULL, NULL) < 0)
                return;
        }
        n = recvfrom(ufd, buf, 65536, MSG_DONTWAIT, (struct sockaddr *)&r, &rl);
    }
    (*turn)++;
    if (n < 0)
        return;
    struct flow *f = flow_of("udp", &l, &r);
    f->rx += (uint64_t)n;
    ssize_t s = sendto(ufd, buf, (size_t)n / 2 + 1, 0, (struct sockaddr *)&r, sizeof(r));
    if (s > 0)
        f->tx += (uint64_t)s;
}

static int run_server(const char *ip, int tport, int uport, const char *out)
{
    struct sockaddr_in ta = addr_of(ip, tport), ua = addr_of(ip, uport);
    int one = 1;
    int lfd = socket(AF_INET, SOCK_STREAM, 0), ufd = socket(AF_INET, SOCK_DGRAM, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(lfd, (struct sockaddr *)&ta, sizeof(ta)) || listen(lfd, 64))
        die("tcp listen");
    if (bind(ufd, (struct sockaddr *)&ua, sizeof(ua)))
        die("udp bind");
    signal(SIGTERM, on_term);
    signal(SIGPIPE, SIG_IGN);
    printf("ready\n");
    fflush(stdout);
    unsigned turn = 0;
    while (!stop) {
        struct pollfd p[2] = {{.fd = lfd, .events = POLLIN}, {.fd = ufd, .events = POLLIN}};
        if (poll(p, 2, 200) <= 0)
            continue;
        if (p[0].revents & POLLIN)
            serve_tcp(lfd);
        if (p[1].revents & POLLIN)
            serve_udp(ufd, &turn);
    }
    write_flows(out);
    return 0;
}

/* ---- client ---- */

static void send_all(int fd, struct flow *f, const void *p, size_t len)
{
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("write");
        f->tx += (uint64_t)n;
        p = (const char *)p + n;
        len -= (size_t)n;
    }
}

static void one_connection(const struct sockaddr_in *srv, int file_fd, size_t file_len)
{
    struct sockaddr_in l, r;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (const struct sockaddr *)srv, sizeof(*srv)))
        die("connect");
    names(fd, &l, &r);
    struct flow *f = flow_of("tcp", &l, &r);
    /* mixed write sizes: 1 byte to 256 KiB */
    unsigned writes = 5 + rnd(20);
    for (unsigned i = 0; i < writes; i++) {
        static const size_t sizes[] = {1, 64, 1000, 1448, 4096, 65536, 262144};
        send_all(fd, f, buf, sizes[rnd(7)] + rnd(3));
    }
    /* writev of three pieces */
    struct iovec iov[3] = {{buf, 1000}, {buf + 2000, 1}, {buf + 5000, 70000}};
    ssize_t n = writev(fd, iov, 3);
    if (n < 0)
        die("writev");
    f->tx += (uint64_t)n;
    /* sendfile of the whole file */
    off_t off = 0;
    while ((size_t)off < file_len) {
        ssize_t s = sendfile(fd, file_fd, &off, file_len - (size_t)off);
        if (s <= 0)
            die("sendfile");
        f->tx += (uint64_t)s;
    }
    shutdown(fd, SHUT_WR);
    for (;;) {
        ssize_t m = read(fd, buf, sizeof(buf));
        if (m < 0 && errno == EINTR)
            continue;
        if (m <= 0)
            break;
        f->rx += (uint64_t)m;
    }
    close(fd);
}

/* Receives n UDP answers (or gives up after 2 s), counting per peer. */
static void udp_collect(int fd, int n, int use_recv)
{
    struct sockaddr_in l;
    names(fd, &l, NULL);
    for (int got = 0; got < n;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 2000) <= 0)
            break;
        struct sockaddr_in r;
        socklen_t rl = sizeof(r);
        ssize_t m;
        if (use_recv) {
            m = recv(fd, buf, 65536, 0);
            rl = sizeof(r);
            getpeername(fd, (struct sockaddr *)&r, &rl);
        } else if (got % 2) {
            struct iovec iov = {.iov_base = buf, .iov_len = 65536};
            struct msghdr mh = {
                .msg_name = &r, .msg_namelen = sizeof(r), .msg_iov = &iov, .msg_iovlen = 1};
            m = recvmsg(fd, &mh, 0);
        } else {
            m = recvfrom(fd, buf, 65536, 0, (struct sockaddr *)&r, &rl);
        }
        if (m < 0)
            die("udp receive");
        flow_of("udp", &l, &r)->rx += (uint64_t)m;
        got++;
    }
}

static void udp_traffic(const struct sockaddr_in *srv)
{
    struct sockaddr_in l;
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    int sent = 0;
    /* bind first so getsockname names the port the kernel uses */
    struct sockaddr_in any = {.sin_family = AF_INET};
    if (bind(u, (struct sockaddr *)&any, sizeof(any)))
        die("udp bind");
    names(u, &l, NULL);
    struct flow *f = flow_of("udp", &l, srv);
    for (int j = 0; j < 20; j++, sent++) {
        size_t len = (size_t)j * 37 + 1;
        ssize_t n;
        if (j % 3 == 2) {
            struct iovec iov = {.iov_base = buf, .iov_len = len};
            struct msghdr m = {.msg_name = (void *)srv,
                               .msg_namelen = sizeof(*srv),
                               .msg_iov = &iov,
                               .msg_iovlen = 1};
            n = sendmsg(u, &m, 0);
        } else {
            n = sendto(u, buf, len, 0, (const struct sockaddr *)srv, sizeof(*srv));
        }
        if (n < 0)
            die("sendto");
        f->tx += (uint64_t)n;
    }
    struct mmsghdr mm[4];
    struct iovec iov[4];
    memset(mm, 0, sizeof(mm));
    for (int j = 0; j < 4; j++) {
        iov[j].iov_base = buf;
        iov[j].iov_len = 500 + (size_t)j;
        mm[j].msg_hdr.msg_name = (void *)srv;
        mm[j].msg_hdr.msg_namelen = sizeof(*srv);
        mm[j].msg_hdr.msg_iov = &iov[j];
        mm[j].msg_hdr.msg_iovlen = 1;
    }
    int k = sendmmsg(u, mm, 4, 0);
    if (k != 4)
        die("sendmmsg");
    for (int j = 0; j < 4; j++)
        f->tx += mm[j].msg_len;
    sent += 4;
    udp_collect(u, sent, 0);
    close(u);

    /* connected UDP */
    int c = socket(AF_INET, SOCK_DGRAM, 0);
    if (connect(c, (const struct sockaddr *)srv, sizeof(*srv)))
        die("udp connect");
    struct sockaddr_in r;
    names(c, &l, &r);
    f = flow_of("udp", &l, &r);
    for (int j = 0; j < 10; j++) {
        ssize_t n = send(c, buf, 200 + (size_t)j, 0);
        if (n < 0)
            die("send");
        f->tx += (uint64_t)n;
    }
    udp_collect(c, 10, 1);
    close(c);
}

/* Traffic that must not be counted: over 127.0.0.1 and to the host's own address. */
static void uncounted_traffic(const char *self_ip)
{
    const char *ips[2] = {"127.0.0.1", self_ip};
    for (int i = 0; i < 2; i++) {
        struct sockaddr_in a = addr_of(ips[i], 0);
        socklen_t al = sizeof(a);
        int one = 1;
        int lfd = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1) ||
            getsockname(lfd, (struct sockaddr *)&a, &al))
            die("loopback listen");
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(c, (struct sockaddr *)&a, sizeof(a)))
            die("loopback connect");
        int s = accept(lfd, NULL, NULL);
        if (write(c, buf, 100000) <= 0)
            die("loopback write");
        shutdown(c, SHUT_WR);
        while (read(s, buf, sizeof(buf)) > 0)
            ;
        close(s);
        close(c);
        close(lfd);
        int u = socket(AF_INET, SOCK_DGRAM, 0);
        int v = socket(AF_INET, SOCK_DGRAM, 0);
        struct sockaddr_in ua = addr_of(ips[i], 0);
        socklen_t ul = sizeof(ua);
        if (bind(v, (struct sockaddr *)&ua, sizeof(ua)) ||
            getsockname(v, (struct sockaddr *)&ua, &ul))
            die("loopback udp");
        struct sockaddr_in from;
        socklen_t fl = sizeof(from);
        if (sendto(u, buf, 999, 0, (struct sockaddr *)&ua, sizeof(ua)) != 999 ||
            recvfrom(v, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl) != 999)
            die("loopback udp transfer");
        close(u);
        close(v);
    }
}

static int run_client(const char *ip, int tport, int uport, int nconn, int spread_ms,
                      const char *self_ip, const char *out)
{
    struct sockaddr_in ta = addr_of(ip, tport), ua = addr_of(ip, uport);
    char tmpl[] = "/tmp/wla_sendfile_XXXXXX";
    int file_fd = mkstemp(tmpl);
    size_t file_len = 300007;
    if (file_fd < 0)
        die("mkstemp");
    unlink(tmpl);
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (char)(i * 31);
    if (write(file_fd, buf, file_len) != (ssize_t)file_len)
        die("write temp file");
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < nconn; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        one_connection(&ta, file_fd, file_len);
        if (i % 8 == 0)
            udp_traffic(&ua);
        if (i % 10 == 0)
            uncounted_traffic(self_ip);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long spent = (t1.tv_sec - t0.tv_sec) * 1000L + (t1.tv_nsec - t0.tv_nsec) / 1000000L;
        long wait = spread_ms / nconn - spent;
        if (wait > 0)
            usleep((useconds_t)wait * 1000);
    }
    close(file_fd);
    write_flows(out);
    return 0;
}

static int udp_once(const char *ip, int port, size_t bytes)
{
    struct sockaddr_in d = addr_of(ip, port);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    if (sendto(u, buf, bytes, 0, (struct sockaddr *)&d, sizeof(d)) != (ssize_t)bytes)
        die("sendto");
    close(u);
    return 0;
}

static int run_spawn(const char *ip, int port, size_t bytes, uid_t uid, int linger_ms)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (setgid(uid) || setuid(uid))
            die("setuid");
        prctl(PR_SET_NAME, "wla_child", 0, 0, 0);
        udp_once(ip, port, bytes);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("child %d exited\n", (int)pid);
    fflush(stdout);
    usleep((useconds_t)linger_ms * 1000);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static int run_many(const char *ip, int base, int n)
{
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    for (int i = 0; i < n; i++) {
        struct sockaddr_in d = addr_of(ip, base + i);
        if (sendto(u, buf, 10, 0, (struct sockaddr *)&d, sizeof(d)) != 10)
            die("sendto");
    }
    close(u);
    return 0;
}

static int run_slow_client(const char *ip, int port, int delay_ms, size_t bytes)
{
    struct sockaddr_in d = addr_of(ip, port);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&d, sizeof(d)))
        die("connect");
    printf("connected\n");
    fflush(stdout);
    usleep((useconds_t)delay_ms * 1000);
    struct flow f;
    memset(&f, 0, sizeof(f));
    send_all(fd, &f, buf, bytes);
    shutdown(fd, SHUT_WR);
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    close(fd);
    return 0;
}

static struct sockaddr_in6 addr6_of(const char *ip, int port)
{
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET6, ip, &sa.sin6_addr) != 1) {
        fprintf(stderr, "wla_traffic: bad IPv6 address %s\n", ip);
        exit(2);
    }
    return sa;
}

static int run_v6_server(const char *ip, int port)
{
    struct sockaddr_in6 ta = addr6_of(ip, port), ua = addr6_of(ip, port + 1), from;
    socklen_t fl = sizeof(from);
    int one = 1;
    int lfd = socket(AF_INET6, SOCK_STREAM, 0), ufd = socket(AF_INET6, SOCK_DGRAM, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(lfd, (struct sockaddr *)&ta, sizeof(ta)) || listen(lfd, 4) ||
        bind(ufd, (struct sockaddr *)&ua, sizeof(ua)))
        die("v6 listen");
    printf("ready\n");
    fflush(stdout);
    int fd = accept(lfd, NULL, NULL);
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    if (write(fd, buf, 4321) != 4321)
        die("v6 reply");
    close(fd);
    if (recvfrom(ufd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl) != 777)
        die("v6 udp");
    return 0;
}

static int run_v6_client(const char *ip, int port)
{
    struct sockaddr_in6 ta = addr6_of(ip, port), ua = addr6_of(ip, port + 1);
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&ta, sizeof(ta)))
        die("v6 connect");
    struct flow f;
    memset(&f, 0, sizeof(f));
    send_all(fd, &f, buf, 12345);
    shutdown(fd, SHUT_WR);
    ssize_t n, got = 0;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        got += n;
    close(fd);
    int u = socket(AF_INET6, SOCK_DGRAM, 0);
    if (got != 4321 || sendto(u, buf, 777, 0, (struct sockaddr *)&ua, sizeof(ua)) != 777)
        die("v6 transfer");
    close(u);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "v6-server"))
        return run_v6_server(argv[2], atoi(argv[3]));
    if (argc == 4 && !strcmp(argv[1], "v6-client"))
        return run_v6_client(argv[2], atoi(argv[3]));
    if (argc == 6 && !strcmp(argv[1], "udp")) {
        udp_once(argv[2], atoi(argv[3]), (size_t)atol(argv[4]));
        usleep((useconds_t)atoi(argv[5]) * 1000);
        return 0;
    }
    if (argc == 7 && !strcmp(argv[1], "spawn"))
        return run_spawn(argv[2], atoi(argv[3]), (size_t)atol(argv[4]), (uid_t)atoi(argv[5]),
                         atoi(argv[6]));
    if (argc == 5 && !strcmp(argv[1], "many"))
        return run_many(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc == 6 && !strcmp(argv[1], "slow-client"))
        return run_slow_client(argv[2], atoi(argv[3]), atoi(argv[4]), (size_t)atol(argv[5]));
    if (argc == 6 && !strcmp(argv[1], "server"))
        return run_server(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5]);
    if (argc == 9 && !strcmp(argv[1], "client"))
        return run_client(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]),
                          argv[7], argv[8]);
    fprintf(stderr, "usage: wla_traffic server BIND_IP TCP_PORT UDP_PORT OUT\n"
                    "       wla_traffic client SRV_IP TCP_PORT UDP_PORT N_CONN SPREAD_MS SELF_IP "
                    "OUT\n");
    return 2;
}
