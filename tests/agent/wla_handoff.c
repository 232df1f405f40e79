/* One TCP connection whose owner changes while it stays open, for the agent's ownership test of
 * the socket's cached flow slot (test_agent_handoff): every phase writes many times on the same
 * socket, so the kernel's cached slot is in use when the owner changes. Each phase's own write()
 * returns are summed and printed as "PID COMM UID CGROUP BYTES" lines (CGROUP: "-" before the move,
 * "moved" after), the truth the reports are compared with.
 *
 *   wla_handoff server BIND_IP PORT            accept one connection, read it to EOF, print the
 *                                              byte count, exit
 *   wla_handoff client DST PORT ALIAS CGFD     the phases below; ALIAS: a link to this program
 *                                              under another name (the comm after exec); CGFD:
 *                                              an open fd of another cgroup v2 directory's
 *                                              cgroup.procs (`ip netns exec` remounts /sys)
 *
 * Phases: (a) the parent; (b) a child forked before the connection existed, given the socket
 * with SCM_RIGHTS; (c) the parent again; (d) the parent after prctl(PR_SET_NAME, "wla-renamed");
 * (e) the parent after exec'ing ALIAS (same pid, new comm); (f) after moving itself into CGFD's;
 * (g) after setresuid(65534). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define WRITES 300

static void die(const char *what)
{
    fprintf(stderr, "wla_handoff: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* WRITES writes of len bytes each; prints this phase's truth line. */
static void phase(int fd, size_t len, const char *cg)
{
    static char buf[256];
    unsigned long long sum = 0;
    char comm[17] = "";
    memset(buf, 'h', sizeof(buf));
    for (int i = 0; i < WRITES; i++) {
        ssize_t n = write(fd, buf, len);
        if (n < 0)
            die("write");
        sum += (unsigned long long)n;
    }
    prctl(PR_GET_NAME, comm);
    printf("%d %s %u %s %llu\n", (int)getpid(), comm, (unsigned)getuid(), cg, sum);
    fflush(stdout);
}

static int run_server(const char *ip, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0 || inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
        die("server socket");
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1))
        die("bind/listen");
    printf("listening\n");
    fflush(stdout);
    int c = accept(ls, NULL, NULL);
    if (c < 0)
        die("accept");
    static char buf[65536];
    unsigned long long total = 0;
    for (;;) {
        ssize_t n = read(c, buf, sizeof(buf));
        if (n < 0)
            die("read");
        if (n == 0)
            break;
        total += (unsigned long long)n;
    }
    printf("received %llu\n", total);
    return 0;
}

static int send_fd(int chan, int fd)
{
    char byte = 'f';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(chan, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int chan)
{
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } u;
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
    if (recvmsg(chan, &m, 0) != 1)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_type != SCM_RIGHTS)
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

/* (e)-(g), after the exec: same pid, the socket inherited as fd. */
static int run_after_exec(int fd, int cgfd)
{
    phase(fd, 113, "-");
    if (dprintf(cgfd, "%d\n", (int)getpid()) < 0)
        die("moving into the cgroup");
    close(cgfd);
    phase(fd, 127, "moved");
    if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
        die("setresuid");
    phase(fd, 131, "moved");
    return close(fd) == 0 ? 0 : 1;
}

static int run_client(const char *dst, int port, const char *alias, const char *cgfd)
{
    int chan[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, chan))
        die("socketpair");
    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        close(chan[0]);
        int fd = recv_fd(chan[1]);
        if (fd < 0)
            die("recv_fd");
        phase(fd, 103, "-");
        close(fd);
        char done = 'd';
        if (write(chan[1], &done, 1) != 1)
            die("ack");
        _exit(0);
    }
    close(chan[1]);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || inet_pton(AF_INET, dst, &sa.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
        die("connect");
    phase(fd, 101, "-");
    char ack;
    if (send_fd(chan[0], fd) || read(chan[0], &ack, 1) != 1)
        die("handing the socket over");
    int st;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("child");
    phase(fd, 107, "-");
    if (prctl(PR_SET_NAME, "wla-renamed"))
        die("prctl");
    phase(fd, 109, "-");
    char fds[16];
    snprintf(fds, sizeof(fds), "%d", fd);
    execl(alias, alias, "after-exec", fds, cgfd, (char *)NULL);
    die("exec");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "server"))
        return run_server(argv[2], atoi(argv[3]));
    if (argc == 6 && !strcmp(argv[1], "client"))
        return run_client(argv[2], atoi(argv[3]), argv[4], argv[5]);
    if (argc == 4 && !strcmp(argv[1], "after-exec"))
        return run_after_exec(atoi(argv[2]), atoi(argv[3]));
    fprintf(stderr, "usage: wla_handoff server BIND_IP PORT | client DST PORT ALIAS CGFD\n");
    return 2;
}
