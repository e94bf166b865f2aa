public import DBus
public import Logging
import Transport

/// `org.bluez.Agent1`, registered with capability KeyboardDisplay and made the
/// default agent; registered again whenever BlueZ restarts.
public actor BlueZAgent {
    public static let path: DBusObjectPath = "/org/mediaroute/bluez/agent"
    public static let capability = "KeyboardDisplay"

    private let connection: DBusConnection
    private let handler: any BlueZPairingHandler
    private let logger: Logger
    private var pending: Task<PairingAnswer, Never>?
    private var watcher: Task<Void, Never>?

    public init(connection: DBusConnection, handler: any BlueZPairingHandler, logger: Logger = Logger(label: "mediaroute.bluez.agent")) {
        self.connection = connection
        self.handler = handler
        self.logger = logger
    }

    /// Exports the agent, registers it, and re-registers it when BlueZ comes back.
    public func register() async throws(DBusError) {
        await connection.export(object, at: Self.path)
        let owners = try await connection.nameOwnerChanges(of: BlueZ.busName)
        watcher = Task { [weak self] in
            for await change in owners where change.newOwner != nil {
                do {
                    try await self?.registerWithBlueZ()
                } catch {
                    self?.logger.error("agent not registered with the restarted bluetoothd: \(error)")
                }
            }
        }
        try await registerWithBlueZ()
    }

    public func unregister() async {
        watcher?.cancel()
        _ = try? await connection.call(destination: BlueZ.busName, path: BlueZ.root, interface: BlueZ.agentManager, member: "UnregisterAgent", [.objectPath(Self.path)])
        connection.unexport(Self.path)
    }

    private func registerWithBlueZ() async throws(DBusError) {
        _ = try await connection.call(
            destination: BlueZ.busName, path: BlueZ.root, interface: BlueZ.agentManager, member: "RegisterAgent",
            [.objectPath(Self.path), .string(Self.capability)])
        _ = try await connection.call(
            destination: BlueZ.busName, path: BlueZ.root, interface: BlueZ.agentManager, member: "RequestDefaultAgent", [.objectPath(Self.path)])
        logger.info("pairing agent registered")
    }

    static let rejected = DBusError(name: "org.bluez.Error.Rejected", message: "rejected by the user")
    static let canceled = DBusError(name: "org.bluez.Error.Canceled", message: "canceled by the user")

    /// Asks the handler; BlueZ's `Cancel` ends the question with `.cancel`.
    private func ask(_ prompt: BlueZPairingPrompt) async -> PairingAnswer {
        pending?.cancel()
        let handler = self.handler
        let task = Task { await handler.answer(prompt) }
        pending = task
        let answer = await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
        return Task.isCancelled || task.isCancelled ? .cancel : answer
    }

    private func cancelPending() {
        pending?.cancel()
        pending = nil
    }

    private func code(_ prompt: BlueZPairingPrompt) async throws -> String {
        switch await ask(prompt) {
        case .code(let code): return code
        case .accept: throw Self.rejected
        case .reject: throw Self.rejected
        case .cancel: throw Self.canceled
        }
    }

    private func confirm(_ prompt: BlueZPairingPrompt) async throws {
        switch await ask(prompt) {
        case .accept, .code: return
        case .reject: throw Self.rejected
        case .cancel: throw Self.canceled
        }
    }

    private nonisolated var object: DBusObject {
        @Sendable func device(_ call: DBusMethodCall) throws -> DBusObjectPath {
            guard let path = call.arguments.first?.objectPath else { throw DBusError(name: "org.bluez.Error.InvalidArguments", message: "no device") }
            return path
        }
        return DBusObject(interfaces: [DBusInterface(BlueZ.agent, methods: [
            DBusMethod("Release") { _ in [] },
            DBusMethod("RequestPinCode", inputs: [DBusArgument("device", "o")], outputs: [DBusArgument("pincode", "s")]) { call in
                [.string(try await self.code(.pinCode(device: try device(call))))]
            },
            DBusMethod("DisplayPinCode", inputs: [DBusArgument("device", "o"), DBusArgument("pincode", "s")]) { call in
                try await self.confirm(.displayPinCode(device: try device(call), pinCode: call.arguments[1].string ?? ""))
                return []
            },
            DBusMethod("RequestPasskey", inputs: [DBusArgument("device", "o")], outputs: [DBusArgument("passkey", "u")]) { call in
                let text = try await self.code(.passkey(device: try device(call)))
                guard let passkey = UInt32(text), passkey <= 999_999 else { throw Self.rejected }
                return [.uint32(passkey)]
            },
            DBusMethod("DisplayPasskey", inputs: [DBusArgument("device", "o"), DBusArgument("passkey", "u"), DBusArgument("entered", "q")]) { call in
                try await self.confirm(.displayPasskey(device: try device(call), passkey: UInt32(call.arguments[1].integer ?? 0)))
                return []
            },
            DBusMethod("RequestConfirmation", inputs: [DBusArgument("device", "o"), DBusArgument("passkey", "u")]) { call in
                try await self.confirm(.confirmation(device: try device(call), passkey: UInt32(call.arguments[1].integer ?? 0)))
                return []
            },
            DBusMethod("RequestAuthorization", inputs: [DBusArgument("device", "o")]) { call in
                try await self.confirm(.authorization(device: try device(call)))
                return []
            },
            DBusMethod("AuthorizeService", inputs: [DBusArgument("device", "o"), DBusArgument("uuid", "s")]) { call in
                // Only the profiles MediaRoute uses: a once-paired "speaker" opening HID, PAN or OBEX is refused.
                let uuid = call.arguments.count > 1 ? call.arguments[1].string ?? "" : ""
                guard ServiceAuthorization.isAllowed(uuid) else {
                    self.logger.notice("service refused to a paired device", metadata: [
                        "device": "\(call.arguments.first?.objectPath?.rawValue ?? "?")", "uuid": "\(uuid.prefix(40))"])
                    throw Self.rejected
                }
                return []
            },
            DBusMethod("Cancel") { _ in
                await self.cancelPending()
                return []
            },
        ])])
    }
}
