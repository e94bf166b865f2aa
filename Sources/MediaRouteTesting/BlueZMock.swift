import BlueZTransport
public import DBus
import Foundation
import Synchronization

/// python-dbusmock with MediaRoute's BlueZ template on a private bus, driven
/// through its `org.mediaroute.BlueZMock` control interface.
public final class BlueZMock: Sendable {
    /// The python-dbusmock template: BlueZ's objects and interfaces, driven through ``control``.
    public static var template: String {
        Bundle.module.path(forResource: "mediaroute_bluez", ofType: "py") ?? "mediaroute_bluez.py"
    }
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
    private let process = Mutex<ChildProcess?>(nil)

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
        guard await Self.eventually(within: .seconds(15), { (try? await connection.nameOwner(of: BlueZ.busName)) ?? nil != nil }) else {
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
        _ = await Self.eventually(within: .seconds(5)) { (try? await connection.nameOwner(of: BlueZ.busName)) ?? nil == nil }
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
        guard let path = try await call("AddAdapter", [.string(name), .string(address)]).first?.string.flatMap(DBusObjectPath.init) else {
            throw PrivateBusError(message: "AddAdapter answered no path")
        }
        return path
    }

    @discardableResult
    public func addDevice(_ address: String, name: String, uuids: [String] = [BlueZMock.vcs], rssi: Int16 = -50, adapter: String = "hci0") async throws -> DBusObjectPath {
        guard let path = try await call("AddDevice", [.string(adapter), .string(address), .string(name), .strings(uuids), .int16(rssi)])
            .first?.string.flatMap(DBusObjectPath.init)
        else { throw PrivateBusError(message: "AddDevice answered no path") }
        return path
    }

    /// Polls `condition` until it holds or `limit` of real time passed: the mock is a process
    /// of its own, with no event to wait on.
    static func eventually(within limit: Duration, _ condition: @Sendable () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return await condition()
    }
}
