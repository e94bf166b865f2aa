#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Reads adapters from sysfs (`/sys/class/{net,bluetooth}/*/uevent`) and, when
/// udev runs, their properties from its database (`/run/udev/data`: `n<ifindex>`
/// for interfaces, `+bluetooth:<name>` for controllers). DEVTYPE lives only in
/// the uevent file; MediaRoute's properties only in the database.
public struct SysfsAdapterReader: Sendable {
    public var sysfsRoot: String
    public var udevDataRoot: String

    public init(sysfsRoot: String = "/sys", udevDataRoot: String = "/run/udev/data") {
        self.sysfsRoot = sysfsRoot
        self.udevDataRoot = udevDataRoot
    }

    public static let subsystems = ["net", "bluetooth"]

    /// Whether udev's database is there (udevd runs or ran on this boot).
    public var hasUdevDatabase: Bool { FileManager.default.fileExists(atPath: udevDataRoot) }

    /// Whether udevd is running: its control socket exists (what libudev itself checks).
    public static var udevIsRunning: Bool { FileManager.default.fileExists(atPath: "/run/udev/control") }

    /// Every adapter of the subsystems MediaRoute uses, sorted by subsystem and name.
    public func records() -> [AdapterRecord] {
        Self.subsystems.flatMap { subsystem -> [AdapterRecord] in
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "\(sysfsRoot)/class/\(subsystem)")) ?? []
            return names.sorted().compactMap { record(subsystem: subsystem, name: $0) }
        }
    }

    /// One adapter, nil when sysfs does not have it (removed).
    public func record(subsystem: String, name: String) -> AdapterRecord? {
        guard !name.contains("/"), !name.hasPrefix(".") else { return nil }
        guard let uevent = Self.readSmall("\(sysfsRoot)/class/\(subsystem)/\(name)/uevent") else { return nil }
        let kernel = Self.parseUevent(uevent)
        // Bluetooth controllers' uevent lacks DEVTYPE=host on some kernels when not "hciN"; their class dir says it.
        var devtype = kernel["DEVTYPE"] ?? ""
        if subsystem == "bluetooth" && devtype.isEmpty && name.hasPrefix("hci") && !name.contains(":") { devtype = "host" }
        let ifindex = kernel["IFINDEX"].flatMap(Int.init)
        let databaseName = subsystem == "net" ? ifindex.map { "n\($0)" } : "+\(subsystem):\(name)"
        var properties = kernel
        if let databaseName, let database = Self.readSmall("\(udevDataRoot)/\(databaseName)") {
            properties.merge(Self.parseDatabase(database)) { _, udev in udev }
        }
        return AdapterRecord(subsystem: subsystem, name: kernel["INTERFACE"] ?? name, devtype: devtype, ifindex: ifindex, properties: properties)
    }

    /// `KEY=VALUE` lines.
    public static func parseUevent(_ text: String) -> [String: String] {
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return values
    }

    /// The `E:KEY=VALUE` lines of a udev database file (other records are ignored).
    public static func parseDatabase(_ text: String) -> [String: String] {
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("E:") {
            let entry = line.dropFirst(2)
            guard let equals = entry.firstIndex(of: "=") else { continue }
            values[String(entry[..<equals])] = String(entry[entry.index(after: equals)...])
        }
        return values
    }

    /// A file of at most 64 KiB (sysfs and udev files are tiny; anything bigger is not one).
    static func readSmall(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 64 * 1024)
        var count = 0
        while count < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            count += n
        }
        // Cut off a line the limit broke, rather than return half a value.
        if count == bytes.count, let lastNewline = bytes[0..<count].lastIndex(of: 10) { count = lastNewline + 1 }
        return String(decoding: bytes[0..<count], as: UTF8.self)
    }
}
