import CUdev
import IOReactor
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// libudev's device monitor for network interfaces and Bluetooth controllers,
/// watched by the process's ``IOReactor`` (no thread of its own, no timer).
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
    private let stopped = Atomic<Bool>(false)
    private let watch: IOWatch
    private let handles: Handles

    private final class Handles: @unchecked Sendable {
        // Safe: written once in init; afterwards only the reactor thread uses them (the
        // watch's handler, then the cancellation that frees them), one call at a time.
        let udev: OpaquePointer
        let monitor: OpaquePointer
        init(udev: OpaquePointer, monitor: OpaquePointer) {
            self.udev = udev
            self.monitor = monitor
        }
    }

    /// - Throws: ``AdapterInventoryError`` when libudev cannot set the monitor up.
    init(source: Source, reactor: IOReactor = .shared, logger: Logger) throws(AdapterInventoryError) {
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
        let handles = Handles(udev: udev, monitor: monitor)
        self.handles = handles
        let (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(256))
        self.events = events
        self.continuation = continuation
        // libudev's monitor socket is non-blocking: the handler drains what is queued and returns.
        do {
            watch = try reactor.watch(udev_monitor_get_fd(monitor), for: .readable) { ready in
                while let device = udev_monitor_receive_device(handles.monitor) {
                    defer { udev_device_unref(device) }
                    guard let action = udev_device_get_action(device), let subsystem = udev_device_get_subsystem(device),
                        let name = udev_device_get_sysname(device)
                    else { continue }
                    continuation.yield(Event(action: String(cString: action), subsystem: String(cString: subsystem), name: String(cString: name)))
                }
                if ready.contains(.error) || ready.contains(.hangup) { continuation.finish() }
            }
        } catch {
            udev_monitor_unref(monitor)
            udev_unref(udev)
            throw AdapterInventoryError("cannot watch the monitor: \(error)")
        }
        logger.debug("udev monitor started", metadata: ["source": "\(source.rawValue)"])
    }

    /// Stops watching; the event stream finishes.
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let handles = handles, continuation = continuation
        watch.cancel {
            continuation.finish()
            udev_monitor_unref(handles.monitor)
            udev_unref(handles.udev)
        }
    }

    deinit { stop() }
}

/// The adapter inventory could not be set up.
public struct AdapterInventoryError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
