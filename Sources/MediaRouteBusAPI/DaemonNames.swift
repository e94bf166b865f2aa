#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
public import DBus
public import RoutingModel

/// The daemon's names on the bus, shared by `mediarouted` and its clients. Documented in Docs/dbus-api.md.
public enum DaemonNames {
    /// The well-known bus name the daemon owns.
    public static let busName = "org.mediaroute"
    /// The root object: `org.mediaroute.Manager1` and the ObjectManager of everything below.
    public static let root: DBusObjectPath = "/org/mediaroute"
    public static let manager = "org.mediaroute.Manager1"
    public static let device = "org.mediaroute.Device1"
    public static let session = "org.mediaroute.Session1"
    /// Implemented by apps that answer pairing prompts.
    public static let pairingAgent = "org.mediaroute.PairingAgent1"
    public static let errorPrefix = "org.mediaroute.Error."

    public static func devicePath(_ id: String) -> DBusObjectPath { root.appending("device").appending(id) }

    public static func sessionPath(_ session: MediaOutputSession) -> DBusObjectPath {
        root.appending("session").appending(session.id.uuidString)
    }
}

extension MediaDeviceError {
    /// The D-Bus error carrying this error: `org.mediaroute.Error.<Code>`.
    public var dbusError: DBusError {
        let code = code.rawValue.prefix(1).uppercased() + code.rawValue.dropFirst()
        return DBusError(name: DaemonNames.errorPrefix + code, message: message)
    }

    /// The device error a D-Bus error from the daemon stands for.
    public init(dbusError: DBusError) {
        if dbusError.name.hasPrefix(DaemonNames.errorPrefix) {
            let raw = String(dbusError.name.dropFirst(DaemonNames.errorPrefix.count))
            let name = raw.prefix(1).lowercased() + raw.dropFirst()
            if let code = MediaDeviceError.Code(rawValue: name) {
                self.init(code, dbusError.message)
                return
            }
        }
        if dbusError.name == DBusError.timeoutName || dbusError.name == DBusError.noReplyName {
            self.init(.timedOut, dbusError.description)
        } else {
            self.init(.connectionFailed, dbusError.description)
        }
    }
}

/// Runs `body`, turning a `MediaDeviceError` into its D-Bus error.
public func mapErrors<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as MediaDeviceError {
        throw error.dbusError
    }
}
