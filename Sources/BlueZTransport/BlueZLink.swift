import DBus
import Transport

/// A connected BLE device as a transport connection: its GATT characteristics,
/// its audio transport (`MediaTransport1`) and pairing, each as the capability
/// the ``Transport`` seam names, so that an extension needs no D-Bus. It ends
/// (with `connectionLost`) when the link drops or the device goes away.
final class BlueZLink: Connection {
    let endpoint: Endpoint
    let path: DBusObjectPath
    let lifetime: AsyncThrowingStream<Never, any Error>
    private let transport: BlueZTransport
    private let watcher: Task<Void, Never>

    init(endpoint: Endpoint, path: DBusObjectPath, transport: BlueZTransport) async {
        self.endpoint = endpoint
        self.path = path
        self.transport = transport
        let events = await transport.objectManager.events()
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Never.self, throwing: (any Error).self)
        lifetime = stream
        watcher = Task {
            for await event in events {
                switch event {
                case .changed(let changed, BlueZ.device, let properties) where changed == path && properties["Connected"]?.bool == false:
                    continuation.finish(throwing: TransportError(.connectionLost, "\(endpoint.id) disconnected"))
                    return
                case .removed(let removed, let interfaces) where removed == path && interfaces.contains(BlueZ.device):
                    continuation.finish(throwing: TransportError(.connectionLost, "\(endpoint.id) is gone"))
                    return
                case .vanished:
                    continuation.finish(throwing: TransportError(.connectionLost, "bluetoothd left the bus"))
                    return
                default:
                    continue
                }
            }
            continuation.finish()
        }
    }

    func close() async {
        watcher.cancel()
        await transport.disconnectDevice(path)
    }

    var gatt: (any GATTClient)? { BlueZGATTClient(device: path, transport: transport) }
    var audio: (any AudioLink)? { BlueZAudioLink(device: path, transport: transport) }
    var pairing: (any DevicePairing)? { BlueZDevicePairing(device: path, transport: transport) }
}

/// GATT through BlueZ's `GattCharacteristic1` objects below the device.
struct BlueZGATTClient: GATTClient {
    let device: DBusObjectPath
    let transport: BlueZTransport

    func characteristic(_ uuid: String, timeout: Duration) async -> GATTCharacteristic? {
        guard let path = await transport.waitForCharacteristic(uuid, of: device, timeout: timeout) else { return nil }
        return GATTCharacteristic(uuid: uuid.lowercased(), handle: path.rawValue)
    }

    func read(_ characteristic: GATTCharacteristic) async throws(GATTError) -> [UInt8] {
        let path = try Self.path(of: characteristic)
        do {
            return try await transport.readValue(path)
        } catch {
            throw Self.gattError(error)
        }
    }

    func write(_ value: [UInt8], to characteristic: GATTCharacteristic, withResponse: Bool) async throws(GATTError) {
        let path = try Self.path(of: characteristic)
        do {
            try await transport.writeValue(path, value, withResponse: withResponse)
        } catch {
            throw Self.gattError(error)
        }
    }

    func notifications(of characteristic: GATTCharacteristic) async throws(GATTError) -> AsyncStream<[UInt8]> {
        let path = try Self.path(of: characteristic)
        do {
            return try await transport.notifications(path)
        } catch {
            throw Self.gattError(error)
        }
    }

    private static func path(of characteristic: GATTCharacteristic) throws(GATTError) -> DBusObjectPath {
        guard let path = DBusObjectPath(characteristic.handle) else { throw GATTError("\(characteristic.uuid) has no BlueZ object") }
        return path
    }

    /// BlueZ's error with the ATT code it gives in its message text.
    static func gattError(_ error: BlueZError) -> GATTError {
        GATTError(attErrorCode: error.attErrorCode, error.description)
    }
}

/// The device's `MediaTransport1`, found when asked for: BlueZ creates it only once
/// the audio profile is connected, which may be after the link is.
struct BlueZAudioLink: AudioLink {
    let device: DBusObjectPath
    let transport: BlueZTransport

    func configuration() async -> AudioStreamConfiguration? {
        await transport.mediaTransport(of: device)?.streamConfiguration
    }

    func volumeChanges() async -> AsyncStream<Float> {
        guard let mediaTransport = await transport.mediaTransport(of: device) else { return AsyncStream { $0.finish() } }
        return await transport.mediaTransportVolumes(mediaTransport)
    }

    func setVolume(_ fraction: Float) async throws(TransportError) {
        let mediaTransport = try await current()
        do {
            try await transport.setVolume(fraction, on: mediaTransport)
        } catch {
            throw TransportError(.unsupported, "transport volume not set: \(error)")
        }
    }

    func acquire() async throws(TransportError) -> PacketSocket {
        let mediaTransport = try await current()
        do {
            let (descriptor, mtu) = try await transport.acquire(mediaTransport)
            let owned = descriptor.duplicate()
            guard owned >= 0 else { throw TransportError(.unavailable, "the audio socket could not be kept (errno)") }
            return PacketSocket(owning: owned, mtu: mtu)
        } catch let error as TransportError {
            throw error
        } catch let error as BlueZError where error.kind == .notAuthorized {
            // bluetoothd (transport.c) cannot resume a stream the speaker configured but has
            // not opened yet, or one that another owner holds: the speaker may open it a moment later.
            throw TransportError(.unavailable, "Acquire: the stream is not open yet (\(error))")
        } catch {
            throw TransportError(.connectionRefused, "Acquire: \(error)")
        }
    }

    func states() async -> AsyncStream<AudioStreamState> {
        guard let mediaTransport = await transport.mediaTransport(of: device) else {
            return AsyncStream {
                $0.yield(.gone)
                $0.finish()
            }
        }
        return await transport.mediaTransportStates(mediaTransport)
    }

    func release() async {
        guard let mediaTransport = await transport.mediaTransport(of: device) else { return }
        await transport.release(mediaTransport)
    }

    /// The speaker's stream endpoints BlueZ exposes (5.52 and later, once A2DP was discovered):
    /// `org.bluez.MediaEndpoint1` objects below the device with the A2DP sink UUID.
    func remoteEndpoints() async -> [RemoteAudioEndpoint] {
        var endpoints: [RemoteAudioEndpoint] = []
        for path in await transport.objectManager.paths(implementing: A2DPSourceEndpoint.interface, below: device) {
            guard let properties = await transport.objectManager.properties(of: path, A2DPSourceEndpoint.interface),
                properties["UUID"]?.string?.lowercased() == BlueZ.audioSink,
                let codec = properties["Codec"]?.integer, let capabilities = properties["Capabilities"]?.bytes
            else { continue }
            endpoints.append(RemoteAudioEndpoint(id: path.rawValue, codec: UInt8(truncatingIfNeeded: codec), capabilities: capabilities))
        }
        return endpoints.sorted { $0.id < $1.id }
    }

    /// The remote endpoint's `SetConfiguration` with our endpoint for `localCodec`: bluetoothd
    /// closes the stream open now and configures the new one (PipeWire switches codecs so).
    func configure(_ endpoint: RemoteAudioEndpoint, localCodec: String, configuration: [UInt8]) async throws(TransportError) {
        guard let path = DBusObjectPath(endpoint.id) else { throw TransportError(.unsupported, "\(endpoint.id) is no BlueZ endpoint") }
        do {
            _ = try await transport.objectManager.connection.call(
                destination: BlueZ.busName, path: path, interface: A2DPSourceEndpoint.interface, member: "SetConfiguration",
                [.objectPath(A2DPSourceEndpoint.path(of: localCodec)), .properties(["Capabilities": .bytes(configuration)])],
                timeout: .seconds(10))
        } catch {
            throw TransportError(.connectionRefused, "SetConfiguration on \(endpoint.id): \(error)")
        }
    }

    /// From BlueZ's objects below the device: a `MediaTransport1` added (the speaker configured
    /// its stream: after `ConnectProfile`, on its own, or again for another codec), removed
    /// (nil), or its `Delay` changed; the stream ends with the device or bluetoothd.
    func configurations() async -> AsyncStream<AudioStreamConfiguration?> {
        let events = await transport.objectManager.events()  // before reading: nothing is missed
        let now = await transport.mediaTransport(of: device)?.streamConfiguration
        let device = self.device
        let transport = self.transport
        return AsyncStream { continuation in
            continuation.yield(now)
            let task = Task {
                for await event in events {
                    switch event {
                    case .added(let path, let interfaces) where path.isDescendant(of: device) && interfaces[BlueZ.mediaTransport] != nil:
                        continuation.yield(await transport.mediaTransport(of: device)?.streamConfiguration)
                    case .removed(let path, let interfaces) where path == device && interfaces.contains(BlueZ.device):
                        continuation.yield(nil)
                        continuation.finish()
                        return
                    case .removed(let path, let interfaces) where path.isDescendant(of: device) && interfaces.contains(BlueZ.mediaTransport):
                        // The stream went, whatever is listed by now: a speaker that sets its stream up
                        // again at once (same codec, even the same path) has a new stream, not the old one.
                        continuation.yield(nil)
                        if let now = await transport.mediaTransport(of: device)?.streamConfiguration { continuation.yield(now) }
                    case .changed(let path, BlueZ.mediaTransport, let properties) where path.isDescendant(of: device) && properties["Delay"] != nil:
                        continuation.yield(await transport.mediaTransport(of: device)?.streamConfiguration)
                    case .vanished:
                        continuation.yield(nil)
                        continuation.finish()
                        return
                    default:
                        continue
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func current() async throws(TransportError) -> BlueZMediaTransport {
        guard let mediaTransport = await transport.mediaTransport(of: device) else {
            throw TransportError(.unsupported, "\(device) has no audio transport (MediaTransport1)")
        }
        return mediaTransport
    }
}

/// Pairing through `Device1.Pair` and MediaRoute's agent.
struct BlueZDevicePairing: DevicePairing {
    let device: DBusObjectPath
    let transport: BlueZTransport

    func isPaired() async -> Bool {
        await transport.objectManager.properties(of: device, BlueZ.device)?["Paired"]?.bool == true
    }

    func pair(answering handler: any PairingPromptHandler) async throws(TransportError) {
        try await transport.pair(device, answering: handler)
    }
}
