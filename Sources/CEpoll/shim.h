// epoll and eventfd for Swift: Glibc's Swift module does not export <sys/epoll.h>, and
// `struct epoll_event` is packed on x86-64, which Swift does not lay out; these helpers
// take and give its two fields as plain values.
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <spawn.h>
#include <unistd.h>

static inline int mr_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static inline int mr_epoll_control(int epoll, int operation, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event = { .events = events, .data = { .u64 = token } };
    return epoll_ctl(epoll, operation, fd, &event);
}

// Waits like epoll_wait; up to `capacity` (at most 64) ready descriptors go to the two arrays.
static inline int mr_epoll_wait(int epoll, uint32_t *events, uint64_t *tokens, int capacity, int timeout) {
    struct epoll_event ready[64];
    if (capacity > 64) capacity = 64;
    int count = epoll_wait(epoll, ready, capacity, timeout);
    for (int index = 0; index < count; index++) {
        events[index] = ready[index].events;
        tokens[index] = ready[index].data.u64;
    }
    return count;
}

static inline int mr_event_fd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

// A descriptor that becomes readable when process `pid` exits (Linux 5.3); -1 where there is none.
static inline int mr_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

// A spawned child closes every descriptor from `lowest` up (glibc 2.34): libraries such as
// swift-nio open theirs without O_CLOEXEC, and a child must not keep the parent's sockets.
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
static inline int mr_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

static inline void mr_name_reactor_thread(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

static const uint32_t mr_epoll_in = EPOLLIN;
static const uint32_t mr_epoll_out = EPOLLOUT;
static const uint32_t mr_epoll_err = EPOLLERR;
static const uint32_t mr_epoll_hup = EPOLLHUP;
static const uint32_t mr_epoll_rdhup = EPOLLRDHUP;
static const int mr_epoll_add = EPOLL_CTL_ADD;
static const int mr_epoll_modify = EPOLL_CTL_MOD;
static const int mr_epoll_delete = EPOLL_CTL_DEL;
