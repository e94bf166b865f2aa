// The floor for issue 5's CPU figure: a minimal libdbus client that receives
// BlueZ's InterfacesAdded signals and walks every value in them, and nothing
// else. `mediaroute-bench bluez` runs it against the same mock in the same run,
// so the cost of libdbus itself (reading, validating, iterating) on this machine
// stands next to MediaRoute's.
//
// Usage: dbus-signal-floor COUNT   (bus: DBUS_SYSTEM_BUS_ADDRESS)
// Prints "ready" once subscribed, then "COUNT CPU_SECONDS" after COUNT signals,
// CPU measured from the first signal to the last.
#include <dbus/dbus.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static long received;

static void walk(DBusMessageIter *iter) {
    int type;
    while ((type = dbus_message_iter_get_arg_type(iter)) != DBUS_TYPE_INVALID) {
        if (dbus_type_is_container(type)) {
            DBusMessageIter inner;
            dbus_message_iter_recurse(iter, &inner);
            walk(&inner);
        } else {
            DBusBasicValue value;
            dbus_message_iter_get_basic(iter, &value);
        }
        dbus_message_iter_next(iter);
    }
}

static DBusHandlerResult on_message(DBusConnection *connection, DBusMessage *message, void *data) {
    (void)connection;
    (void)data;
    if (dbus_message_is_signal(message, "org.freedesktop.DBus.ObjectManager", "InterfacesAdded")) {
        DBusMessageIter iter;
        if (dbus_message_iter_init(message, &iter)) walk(&iter);
        received++;
        return DBUS_HANDLER_RESULT_HANDLED;
    }
    return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
    long count = argc > 1 ? atol(argv[1]) : 1000;
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *connection = dbus_bus_get(DBUS_BUS_SYSTEM, &error);
    if (!connection) {
        fprintf(stderr, "dbus-signal-floor: %s\n", error.message);
        return 1;
    }
    dbus_bus_add_match(connection,
        "type='signal',sender='org.bluez',path='/',interface='org.freedesktop.DBus.ObjectManager',member='InterfacesAdded'", &error);
    if (dbus_error_is_set(&error)) {
        fprintf(stderr, "dbus-signal-floor: %s\n", error.message);
        return 1;
    }
    dbus_connection_add_filter(connection, on_message, NULL, NULL);
    printf("ready\n");
    fflush(stdout);
    double start = 0;
    while (received < count && dbus_connection_read_write_dispatch(connection, -1)) {
        if (received == 1 && start == 0) start = cpu_seconds();
    }
    // The first signal's cost is outside the window: count the rest.
    printf("%ld %.6f\n", received - 1, cpu_seconds() - start);
    return 0;
}
