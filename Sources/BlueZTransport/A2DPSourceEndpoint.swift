public import DBus
public import Logging

/// `/org/mediaroute/bluez/a2dp_source_<codec>`: `org.bluez.MediaEndpoint1`, MediaRoute's A2DP
/// source for one codec, registered with each adapter's `org.bluez.Media1` (with
/// `DelayReporting`, so speakers that report their delay have it on the transport).
///
/// One endpoint per codec, registered most preferred first: bluetoothd (5.52 and later) tries
/// the local endpoints in registration order against the speaker's (its last used pair first)
/// and moves to the next when `SelectConfiguration` refuses.
///
/// On real BlueZ a speaker's `MediaTransport1` exists only once a source endpoint is
/// registered: when the A2DP profile connects, bluetoothd asks this object to pick a
/// configuration from the speaker's capabilities (`SelectConfiguration`), then tells it the
/// transport made with it (`SetConfiguration`) and, when the stream goes,
/// `ClearConfiguration`. A box runs one A2DP source: PipeWire and bluez-alsa register
/// their own, so with `[bluetooth] a2dp-source = auto` these are not registered where one
/// of them did first (``BlueZTransport/Configuration/a2dpSourceStepsAside``), and `no` turns
/// them off.
public actor A2DPSourceEndpoint {
    /// The SBC endpoint's path.
    public static let path: DBusObjectPath = "/org/mediaroute/bluez/a2dp_source_sbc"
    /// The path of a codec's endpoint.
    public static func path(of codec: String) -> DBusObjectPath {
        DBusObjectPath("/org/mediaroute/bluez/a2dp_source_" + String(codec.map { $0.isLetter || $0.isNumber ? $0 : "_" })) ?? path
    }
    public static let sourceUUID = BlueZ.audioSource
    public static let media = "org.bluez.Media1"
    public static let interface = "org.bluez.MediaEndpoint1"

    private let connection: DBusConnection
    public nonisolated let codec: A2DPSourceCodec
    public nonisolated let path: DBusObjectPath
    private let logger: Logger
    private var exported = false
    /// The configuration of each transport BlueZ made with this endpoint.
    private(set) var configurations: [DBusObjectPath: [UInt8]] = [:]

    public init(connection: DBusConnection, codec: A2DPSourceCodec, logger: Logger = Logger(label: "mediaroute.bluez.a2dp")) {
        self.connection = connection
        self.codec = codec
        path = Self.path(of: codec.name)
        self.logger = logger
    }

    /// Registers the endpoint with `adapter`'s `Media1` (exported first, once). BlueZ answers
    /// `AlreadyExists` when it is registered: that is success.
    public func register(on adapter: DBusObjectPath) async throws(DBusError) {
        if !exported {
            await connection.export(object, at: path)
            exported = true
        }
        do {
            _ = try await connection.call(
                destination: BlueZ.busName, path: adapter, interface: Self.media, member: "RegisterEndpoint",
                [.objectPath(path), .properties([
                    "UUID": .string(Self.sourceUUID), "Codec": .byte(codec.codec), "Capabilities": .bytes(codec.capabilities),
                    "DelayReporting": .bool(true),
                ])])
            logger.info("A2DP source endpoint registered", metadata: ["adapter": "\(adapter)", "codec": "\(codec.name)"])
        } catch where error.name == "org.bluez.Error.AlreadyExists" {
            return
        }
    }

    /// The configuration BlueZ set for `transport`; nil when it was not made with this endpoint.
    public func configuration(of transport: DBusObjectPath) -> [UInt8]? {
        configurations[transport]
    }

    private static func invalid(_ message: String) -> DBusError {
        DBusError(name: "org.bluez.Error.InvalidArguments", message: message)
    }

    private func select(_ capabilities: [UInt8]) throws -> [UInt8] {
        do {
            let chosen = try codec.select(capabilities)
            logger.info("A2DP configuration chosen", metadata: ["offered": "\(capabilities)", "chosen": "\(chosen)"])
            return chosen
        } catch {
            logger.warning("no A2DP configuration fits the speaker", metadata: ["offered": "\(capabilities)", "reason": "\(error)"])
            throw Self.invalid("\(error)")
        }
    }

    private func set(_ transport: DBusObjectPath, _ properties: [String: DBusValue]) throws {
        guard let bytes = properties["Configuration"]?.bytes, codec.accepts(bytes) else {
            throw Self.invalid("not a configuration this source offered")
        }
        configurations[transport] = bytes
        logger.info("A2DP transport configured", metadata: ["transport": "\(transport)", "configuration": "\(bytes)"])
    }

    private func clear(_ transport: DBusObjectPath) {
        configurations[transport] = nil
    }

    private func released() {
        configurations.removeAll()
        logger.notice("BlueZ released the A2DP source endpoint")
    }

    private nonisolated var object: DBusObject {
        DBusObject(interfaces: [DBusInterface(Self.interface, methods: [
            DBusMethod("SelectConfiguration", inputs: [DBusArgument("capabilities", "ay")], outputs: [DBusArgument("configuration", "ay")]) { call in
                guard call.arguments.count == 1, let bytes = call.arguments[0].bytes else { throw Self.invalid("SelectConfiguration takes ay") }
                return [.bytes(try await self.select(bytes))]
            },
            DBusMethod("SetConfiguration", inputs: [DBusArgument("transport", "o"), DBusArgument("properties", "a{sv}")]) { call in
                guard call.arguments.count == 2, let transport = call.arguments[0].objectPath, let properties = call.arguments[1].dictionary else {
                    throw Self.invalid("SetConfiguration takes (o, a{sv})")
                }
                try await self.set(transport, properties)
                return []
            },
            DBusMethod("ClearConfiguration", inputs: [DBusArgument("transport", "o")]) { call in
                guard let transport = call.arguments.first?.objectPath else { throw Self.invalid("ClearConfiguration takes o") }
                await self.clear(transport)
                return []
            },
            DBusMethod("Release") { _ in
                await self.released()
                return []
            },
        ])])
    }
}
