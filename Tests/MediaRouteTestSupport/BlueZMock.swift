import BlueZTransport
import DBus
import Foundation

/// python-dbusmock with MediaRoute's BlueZ template on a private bus, driven
/// through its `org.mediaroute.BlueZMock` control interface.
public final class BlueZMock: Sendable {
    public static let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("BlueZTransportTests/Mock/mediaroute_bluez.py").path
    public static let control = "org.mediaroute.BlueZMock"
    public static let vcs = BlueZ.volumeControlService

    public static var available: Bool {
        guard PrivateBus.isAvailable else { return false }
        let (status, _) = (try? ChildProcess.run(["/usr/bin/python3", "-c", "import dbusmock"])) ?? (1, "")
        if status != 0 { print("skipping: python3-dbusmock is not installed (apt-get install python3-dbusmock)") }
        return status == 0
    }

    public let bus: PrivateBus
    public let connection: DBusConnection
    private let process = Locked<ChildProcess?>(nil)

    public init() async throws {
        bus = try PrivateBus()
        connection = try await DBusConnection.connect(to: .address(bus.address))
        try await start()
    }

    /// Starts (or restarts) bluetoothd's stand-in and waits for its name.
    public func start() async throws {
        let child = try ChildProcess(
            ["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", Self.template, "-l", bus.directory + "/mock.log"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        process.withLock { $0 = child }
        let connection = self.connection
        guard await eventually(timeout: .seconds(15), { (try? await connection.nameOwner(of: BlueZ.busName)) ?? nil != nil }) else {
            throw PrivateBusError(message: "dbusmock did not take org.bluez")
        }
    }

    /// Kills it (like bluetoothd crashing) and waits until its name is gone.
    public func kill() async {
        let child = process.withLock { current -> ChildProcess? in
            defer { current = nil }
            return current
        }
        child?.kill(SIGKILL)
        child?.wait()
        let connection = self.connection
        _ = await eventually { (try? await connection.nameOwner(of: BlueZ.busName)) ?? nil == nil }
    }

    public func stop() async {
        await kill()
        connection.close()
        bus.stop()
    }

    @discardableResult
    public func call(_ member: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await connection.call(destination: BlueZ.busName, path: "/", interface: Self.control, member: member, arguments)
    }

    @discardableResult
    public func addAdapter(_ name: String = "hci0", address: String = "00:11:22:33:44:55") async throws -> DBusObjectPath {
        try require(try await call("AddAdapter", [.string(name), .string(address)]).first?.string.flatMap(DBusObjectPath.init))
    }

    @discardableResult
    public func addDevice(_ address: String, name: String, uuids: [String] = [BlueZMock.vcs], rssi: Int16 = -50, adapter: String = "hci0") async throws -> DBusObjectPath {
        try require(try await call("AddDevice", [.string(adapter), .string(address), .string(name), .strings(uuids), .int16(rssi)]).first?.string.flatMap(DBusObjectPath.init))
    }
}

/// `#require` without Testing's macro (usable outside tests).
public func require<T>(_ value: T?, _ what: String = "value") throws -> T {
    guard let value else { throw PrivateBusError(message: "missing \(what)") }
    return value
}
