#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import BoxConfiguration
public import Logging
import EventBroadcast

/// The adapters MediaRoute may use, from udev (or sysfs when udev is not
/// running), followed while the daemon runs: an adapter plugged in is reported
/// at once, one removed is reported removed.
public actor AdapterInventory {
    /// A change in the inventory.
    public enum Event: Sendable, Equatable {
        case added(AdapterSettings)
        case changed(AdapterSettings)
        case removed(AdapterSettings)
        /// An adapter whose MediaRoute properties are invalid; it is left unused.
        case invalid(AdapterPropertyError)
    }

    private let configuration: DaemonConfiguration
    private let reader: SysfsAdapterReader
    private let logger: Logger
    private let monitorSource: String?
    private var current: [String: AdapterSettings] = [:]
    private var monitor: UdevMonitor?
    private var follower: Task<Void, Never>?
    private let observers = EventBroadcaster<Event>(bufferingPolicy: .bufferingNewest(256))

    /// - Parameter monitorSource: `udev`, `kernel`, or nil to choose (udev when udevd runs).
    public init(
        configuration: DaemonConfiguration = DaemonConfiguration(), reader: SysfsAdapterReader = SysfsAdapterReader(),
        monitorSource: String? = nil, logger: Logger = Logger(label: "mediaroute.adapters")
    ) {
        self.configuration = configuration
        self.reader = reader
        self.monitorSource = monitorSource
        self.logger = logger
    }

    /// Reads the adapters present and starts following hot-plug events.
    /// A monitor that cannot start is logged; the inventory then stays as read.
    public func start() {
        let useUdev = monitorSource.map { $0 == "udev" } ?? SysfsAdapterReader.udevIsRunning
        if !useUdev {
            logger.notice("udev is not running: reading adapters from sysfs, following kernel events",
                          metadata: ["sysfs": "\(reader.sysfsRoot)"])
        }
        refresh()
        do {
            let monitor = try UdevMonitor(source: useUdev ? .udev : .kernel, logger: logger)
            self.monitor = monitor
            follower = Task { [weak self] in
                for await event in monitor.events {
                    await self?.hotplug(event)
                }
            }
        } catch {
            logger.error("adapters are not followed: \(error)")
        }
    }

    public func stop() {
        monitor?.stop()
        monitor = nil
        follower?.cancel()
        follower = nil
        observers.finish()
    }

    /// Every usable or known adapter, by name.
    public var adapters: [AdapterSettings] { current.values.sorted { $0.name < $1.name } }

    /// Changes from now on.
    public func events() -> AsyncStream<Event> {
        observers.subscribe()
    }

    private func hotplug(_ event: UdevMonitor.Event) {
        logger.debug("adapter event", metadata: ["action": "\(event.action)", "device": "\(event.subsystem)/\(event.name)"])
        refresh()
    }

    /// Reads everything again and reports the differences (renames come as remove + add).
    public func refresh() {
        var seen: [String: AdapterSettings] = [:]
        var invalid: Set<String> = []
        for record in reader.records() {
            switch AdapterSettings.resolve(record, configuration: configuration) {
            case .success(let settings):
                guard settings.transport != .none else { continue }
                seen[settings.name] = settings
            case .failure(let problem):
                invalid.insert(record.name)
                if !reportedInvalid.contains(record.name) {
                    logger.error("\(problem)")
                    publish(.invalid(problem))
                }
            }
        }
        for (name, old) in current where seen[name] == nil {
            logger.info("adapter removed", metadata: ["adapter": "\(name)", "transport": "\(old.transport.rawValue)"])
            publish(.removed(old))
        }
        for (name, new) in seen.sorted(by: { $0.key < $1.key }) {
            if let old = current[name] {
                if old != new { publish(.changed(new)) }
            } else {
                logger.info("adapter added", metadata: [
                    "adapter": "\(name)", "transport": "\(new.transport.rawValue)", "enabled": "\(new.enabled)", "role": "\(new.role.rawValue)",
                ])
                publish(.added(new))
            }
        }
        reportedInvalid = invalid
        current = seen
    }

    private var reportedInvalid: Set<String> = []

    private func publish(_ event: Event) {
        observers.yield(event)
    }
}
