#ifndef MEDIAROUTE_CUDEV_SHIM_H
#define MEDIAROUTE_CUDEV_SHIM_H

#include <libudev.h>
#include <sys/eventfd.h>

/// A non-blocking, close-on-exec eventfd that wakes the monitor thread to stop.
static inline int mr_udev_wake_fd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

#endif
