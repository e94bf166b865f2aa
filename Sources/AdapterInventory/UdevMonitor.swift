import CUdev
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// libudev's device monitor for network interfaces and Bluetooth controllers,
/// on a thread of its own that sleeps in `poll` until the kernel or udev says
/// something (no timer).
///
/// With udev running it listens to udev's events (sent after the rules ran, so
/// the properties are in the database); without, to the kernel's.
final class UdevMonitor: Sendable {
    enum Source: String, Sendable {
        case udev
        case kernel
    }

    /// One event: the action and the device's kernel name.
    struct Event: Sendable {
        var action: String
        var subsystem: String
        var name: String
    }

    let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let wakeFD: Int32
    private let stopped = Atomic<Bool>(false)
    private let monitorFD: Int32
    // libudev handles are used by the monitor thread only after init; `stop()`
    // only writes the eventfd, and the thread frees them when it exits.
    private let handles: Handles

    private final class Handles: @unchecked Sendable {
        // Safe: written once in init, then read and freed by the monitor thread alone.
        let udev: OpaquePointer
        let monitor: OpaquePointer
        init(udev: OpaquePointer, monitor: OpaquePointer) {
            self.udev = udev
            self.monitor = monitor
        }
    }

    /// - Throws: ``AdapterInventoryError`` when libudev cannot set the monitor up.
    init(source: Source, logger: Logger) throws(AdapterInventoryError) {
        guard let udev = udev_new() else { throw AdapterInventoryError("udev_new failed") }
        guard let monitor = udev_monitor_new_from_netlink(udev, source.rawValue) else {
            udev_unref(udev)
            throw AdapterInventoryError("cannot listen to \(source.rawValue) events (errno \(errno))")
        }
        udev_monitor_filter_add_match_subsystem_devtype(monitor, "net", nil)
        udev_monitor_filter_add_match_subsystem_devtype(monitor, "bluetooth", nil)
        guard udev_monitor_enable_receiving(monitor) >= 0 else {
            udev_monitor_unref(monitor)
            udev_unref(udev)
            throw AdapterInventoryError("cannot receive \(source.rawValue) events (errno \(errno))")
        }
        handles = Handles(udev: udev, monitor: monitor)
        monitorFD = udev_monitor_get_fd(monitor)
        wakeFD = mr_udev_wake_fd()
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(256))
        let handles = self.handles
        let monitorFD = self.monitorFD
        let wakeFD = self.wakeFD
        let continuation = self.continuation
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        let context = Unmanaged.passRetained(MonitorThread(handles: handles, monitorFD: monitorFD, wakeFD: wakeFD, continuation: continuation))
        var thread = pthread_t()
        let created = pthread_create(&thread, &attributes, { raw in
            let thread = Unmanaged<MonitorThread>.fromOpaque(raw!).takeRetainedValue()
            thread.run()
            return nil
        }, context.toOpaque())
        guard created == 0 else {
            context.release()
            throw AdapterInventoryError("cannot start the monitor thread")
        }
        pthread_detach(thread)
        logger.debug("udev monitor started", metadata: ["source": "\(source.rawValue)"])
    }

    /// Stops the thread; the event stream finishes.
    func stop() {
        // Once only: the thread closes the eventfd when it ends, and its number may be reused.
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    deinit { stop() }

    private final class MonitorThread {
        let handles: Handles
        let monitorFD: Int32
        let wakeFD: Int32
        let continuation: AsyncStream<Event>.Continuation

        init(handles: Handles, monitorFD: Int32, wakeFD: Int32, continuation: AsyncStream<Event>.Continuation) {
            self.handles = handles
            self.monitorFD = monitorFD
            self.wakeFD = wakeFD
            self.continuation = continuation
        }

        func run() {
            var fds = [pollfd(fd: monitorFD, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            loop: while true {
                let ready = poll(&fds, 2, -1)
                if ready < 0 {
                    if errno == EINTR { continue }
                    break
                }
                if fds[1].revents != 0 { break }
                if fds[0].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { break }
                guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
                // Drain everything queued before sleeping again.
                while let device = udev_monitor_receive_device(handles.monitor) {
                    defer { udev_device_unref(device) }
                    guard let action = udev_device_get_action(device), let subsystem = udev_device_get_subsystem(device),
                        let name = udev_device_get_sysname(device)
                    else { continue }
                    continuation.yield(Event(action: String(cString: action), subsystem: String(cString: subsystem), name: String(cString: name)))
                    if Task.isCancelled { break loop }
                }
            }
            continuation.finish()
            udev_monitor_unref(handles.monitor)
            udev_unref(handles.udev)
            close(wakeFD)
        }
    }
}

/// The adapter inventory could not be set up.
public struct AdapterInventoryError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
