/* The rig guest's byte pump between a console port and a Unix socket: it joins the host's
 * bumble A2DP sink (whose HCI arrives on a virtio console) to a controller of BlueZ's
 * emulator (`btvirt -s` listens on /tmp/bt-server-bredrle). H4 is a byte stream both ways,
 * so the pump copies bytes and knows nothing of HCI. Test code, built by Tests/HIL/run.sh. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

static int copy(int from, int to) {
    char buffer[4096];
    ssize_t n = read(from, buffer, sizeof buffer);
    if (n <= 0) return n == 0 || (errno != EINTR && errno != EAGAIN) ? -1 : 0;
    for (ssize_t done = 0; done < n;) {
        ssize_t w = write(to, buffer + done, (size_t)(n - done));
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return -1;
        }
        done += w;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: h4_bridge TTY SOCKET\n");
        return 2;
    }
    int tty = open(argv[1], O_RDWR | O_NOCTTY);
    if (tty < 0) {
        perror(argv[1]);
        return 1;
    }
    struct termios raw;
    if (tcgetattr(tty, &raw) == 0) {
        cfmakeraw(&raw);
        tcsetattr(tty, TCSANOW, &raw);
    }
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, argv[2], sizeof address.sun_path - 1);
    if (sock < 0 || connect(sock, (struct sockaddr *)&address, sizeof address) < 0) {
        perror(argv[2]);
        return 1;
    }
    /* Only now may the host's sink speak: bytes that reached the console before it was raw
     * would have been echoed and line-edited by the tty. */
    printf("h4_bridge: joined %s and %s\n", argv[1], argv[2]);
    fflush(stdout);
    struct pollfd fds[2] = {{.fd = tty, .events = POLLIN}, {.fd = sock, .events = POLLIN}};
    for (;;) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return 1;
        }
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR) && copy(tty, sock) < 0) return 0;
        if (fds[1].revents & (POLLIN | POLLHUP | POLLERR) && copy(sock, tty) < 0) return 0;
    }
}
