/// An active route: a device activated through one protocol, in one session.
public struct ActiveRoute: Sendable, Hashable, Identifiable {
    public let session: MediaOutputSession
    public let protocolType: MediaSharingProtocol
    public let device: OutputDeviceDescription

    public init(session: MediaOutputSession, protocolType: MediaSharingProtocol, device: OutputDeviceDescription) {
        self.session = session
        self.protocolType = protocolType
        self.device = device
    }

    public var id: MediaOutputSession.ID { session.id }
    public var key: DeviceKey { DeviceKey(protocolID: protocolType.identifier, deviceID: device.id) }
}
