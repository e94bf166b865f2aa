import RoutingModel
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// A file of pins by device id (the value and the device's name), in the state directory:
/// written whole to a new file renamed over the old (mode 0600), so a crash leaves one or
/// the other. A file larger than 1 MiB or not of this form is ignored (and rewritten on the
/// next pin); at most 1 024 devices are kept (the oldest pin goes first).
///
/// `@unchecked`-free: the table lives in a `Mutex`, and the path is immutable.
public final class PinFile: Sendable {
    /// One device's pin.
    public struct Pin: Codable, Sendable, Hashable {
        public var value: String
        public var name: String
        /// The order it was pinned in (higher: later), to forget the oldest first.
        public var order: Int

        public init(value: String, name: String, order: Int) {
            self.value = value
            self.name = name
            self.order = order
        }
    }

    public static let maximumFileSize = 1 << 20
    public static let maximumEntries = 1024

    /// The file (nil: kept in memory only).
    public let path: String?
    private let pins: Mutex<[String: Pin]>

    /// Reads `path`. `legacy` reads an older form of the file (a value per device id, no names).
    public init(path: String?, legacy: Bool = false) {
        self.path = path
        var loaded: [String: Pin] = [:]
        if let path, let data = FileManager.default.contents(atPath: path), data.count <= Self.maximumFileSize {
            if let decoded = try? JSONDecoder().decode([String: Pin].self, from: data) {
                loaded = decoded
            } else if legacy, let decoded = try? JSONDecoder().decode([String: String].self, from: data) {
                loaded = decoded.mapValues { Pin(value: $0, name: "", order: 0) }
            }
        }
        pins = Mutex(loaded)
    }

    public subscript(deviceID: String) -> Pin? {
        pins.withLock { $0[deviceID] }
    }

    public var all: [String: Pin] {
        pins.withLock { $0 }
    }

    /// Pins `value` for `deviceID` and writes the file.
    public func pin(_ value: String, for deviceID: String, name: String) {
        let snapshot = pins.withLock { pins -> [String: Pin] in
            let next = (pins.values.map(\.order).max() ?? 0) + 1
            pins[deviceID] = Pin(value: value, name: name, order: next)
            while pins.count > Self.maximumEntries, let oldest = pins.min(by: { $0.value.order < $1.value.order })?.key {
                pins[oldest] = nil
            }
            return pins
        }
        write(snapshot)
    }

    /// Forgets `deviceID`'s pin. - Returns: whether there was one.
    @discardableResult
    public func forget(_ deviceID: String) -> Bool {
        let (removed, snapshot) = pins.withLock { pins in (pins.removeValue(forKey: deviceID) != nil, pins) }
        if removed { write(snapshot) }
        return removed
    }

    private func write(_ snapshot: [String: Pin]) {
        guard let path else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        guard let data = try? encoder.encode(snapshot) else { return }
        let temporary = path + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else { return }
        _ = temporary.withCString { from in path.withCString { to in rename(from, to) } }
    }
}
