#ifndef MEDIAROUTE_CDBUS_SHIM_H
#define MEDIAROUTE_CDBUS_SHIM_H

#include <dbus/dbus.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

/// A non-blocking, close-on-exec eventfd that wakes the connection's I/O thread.
static inline int mr_wake_fd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

/// Names the calling thread (shown by ps, top and perf).
static inline void mr_name_thread(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

// libdbus's type codes and flags are macros, which Swift does not import.
static const int MR_DBUS_TYPE_INVALID = DBUS_TYPE_INVALID;
static const int MR_DBUS_TYPE_BYTE = DBUS_TYPE_BYTE;
static const int MR_DBUS_TYPE_BOOLEAN = DBUS_TYPE_BOOLEAN;
static const int MR_DBUS_TYPE_INT16 = DBUS_TYPE_INT16;
static const int MR_DBUS_TYPE_UINT16 = DBUS_TYPE_UINT16;
static const int MR_DBUS_TYPE_INT32 = DBUS_TYPE_INT32;
static const int MR_DBUS_TYPE_UINT32 = DBUS_TYPE_UINT32;
static const int MR_DBUS_TYPE_INT64 = DBUS_TYPE_INT64;
static const int MR_DBUS_TYPE_UINT64 = DBUS_TYPE_UINT64;
static const int MR_DBUS_TYPE_DOUBLE = DBUS_TYPE_DOUBLE;
static const int MR_DBUS_TYPE_STRING = DBUS_TYPE_STRING;
static const int MR_DBUS_TYPE_OBJECT_PATH = DBUS_TYPE_OBJECT_PATH;
static const int MR_DBUS_TYPE_SIGNATURE = DBUS_TYPE_SIGNATURE;
static const int MR_DBUS_TYPE_UNIX_FD = DBUS_TYPE_UNIX_FD;
static const int MR_DBUS_TYPE_ARRAY = DBUS_TYPE_ARRAY;
static const int MR_DBUS_TYPE_VARIANT = DBUS_TYPE_VARIANT;
static const int MR_DBUS_TYPE_STRUCT = DBUS_TYPE_STRUCT;
static const int MR_DBUS_TYPE_DICT_ENTRY = DBUS_TYPE_DICT_ENTRY;

static const int MR_DBUS_MESSAGE_TYPE_METHOD_CALL = DBUS_MESSAGE_TYPE_METHOD_CALL;
static const int MR_DBUS_MESSAGE_TYPE_METHOD_RETURN = DBUS_MESSAGE_TYPE_METHOD_RETURN;
static const int MR_DBUS_MESSAGE_TYPE_ERROR = DBUS_MESSAGE_TYPE_ERROR;
static const int MR_DBUS_MESSAGE_TYPE_SIGNAL = DBUS_MESSAGE_TYPE_SIGNAL;

static const int MR_DBUS_TIMEOUT_INFINITE = DBUS_TIMEOUT_INFINITE;
static const unsigned int MR_DBUS_NAME_FLAG_DO_NOT_QUEUE = DBUS_NAME_FLAG_DO_NOT_QUEUE;
static const unsigned int MR_DBUS_NAME_FLAG_REPLACE_EXISTING = DBUS_NAME_FLAG_REPLACE_EXISTING;
static const unsigned int MR_DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER = DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER;
static const unsigned int MR_DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER = DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER;

static const unsigned int MR_DBUS_WATCH_READABLE = DBUS_WATCH_READABLE;
static const unsigned int MR_DBUS_WATCH_WRITABLE = DBUS_WATCH_WRITABLE;

#endif
