/*
 * realtime-floor SECONDS [PERIOD_MS]: the kernel's share of one real-time Bluetooth stream, and
 * nothing else — the floor under `mediaroute-bench realtime` (Docs/benchmarks.md, issue 42).
 * Per period: epoll_wait with a timeout to the next tick, recv of a period of 44.1 kHz stereo S16
 * from a Unix stream socket a writer thread keeps full, one 895-byte send per 20 ms on a
 * SEQPACKET socket a reader thread drains (BlueZ's side), one TIOCOUTQ. CPU is this thread's.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int pcm[2], transport[2];
static volatile int stopping;

static double thread_cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_THREAD, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

/* The app: writes 10 ms pieces as fast as the socket takes them. */
static void *writer(void *unused) {
    char piece[441 * 4];
    memset(piece, 0, sizeof piece);
    while (!stopping && send(pcm[1], piece, sizeof piece, MSG_NOSIGNAL) >= 0) {}
    return unused;
}

/* BlueZ's side of the transport: reads and drops each packet. */
static void *reader(void *unused) {
    char packet[2048];
    while (!stopping && recv(transport[1], packet, sizeof packet, 0) > 0) {}
    return unused;
}

static long milliseconds_since(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: realtime-floor SECONDS [PERIOD_MS]\n");
        return 2;
    }
    int seconds = atoi(argv[1]);
    int period = argc > 2 ? atoi(argv[2]) : 20;
    if (seconds <= 0 || period < 20 || period % 20) {
        fprintf(stderr, "realtime-floor: SECONDS > 0, PERIOD_MS a multiple of 20\n");
        return 2;
    }
    socketpair(AF_UNIX, SOCK_STREAM, 0, pcm);
    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, transport);
    int smallest = 8192;
    setsockopt(pcm[1], SOL_SOCKET, SO_SNDBUF, &smallest, sizeof smallest);
    pthread_t writer_thread, reader_thread;
    pthread_create(&writer_thread, NULL, writer, NULL);
    pthread_create(&reader_thread, NULL, reader, NULL);

    int epoll = epoll_create1(0);
    struct epoll_event events[8];
    char samples[16384], packet[895];
    memset(packet, 1, sizeof packet);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    double cpu_before = thread_cpu_seconds();
    long next_tick = 0;
    for (int tick = 0; tick < seconds * 1000 / period; tick++) {
        next_tick += period;
        long wait = next_tick - milliseconds_since(&start);
        epoll_wait(epoll, events, 8, wait > 0 ? (int)wait : 0);
        int wanted = period * 44100 / 1000 * 4, received = 0;
        while (received < wanted) {
            ssize_t count = recv(pcm[0], samples, (size_t)(wanted - received), MSG_DONTWAIT);
            if (count <= 0) break;
            received += (int)count;
        }
        for (int sent = 0; sent < period / 20; sent++) send(transport[0], packet, sizeof packet, 0);
        int queued;
        ioctl(transport[0], TIOCOUTQ, &queued);
    }
    double cpu = thread_cpu_seconds() - cpu_before;
    stopping = 1;
    shutdown(pcm[0], SHUT_RDWR);
    shutdown(transport[0], SHUT_RDWR);
    pthread_join(writer_thread, NULL);
    pthread_join(reader_thread, NULL);
    printf("realtime-floor: period %d ms: %.3f s of CPU in %d s = %.3f %% of one core\n", period, cpu, seconds, 100 * cpu / seconds);
    return 0;
}
