/// A pairing prompt for the person, surfaced to the app side.
public struct PairingRequest: Sendable, Hashable {
    public let device: OutputDeviceDescription
    public let protocolType: MediaSharingProtocol
    public let session: MediaOutputSession
    /// What to tell the person, from the extension ("Enter the code shown on your TV.").
    public let reason: String
    public let authorizationMethod: OutputDeviceDescription.AuthorizationMethod

    public init(
        device: OutputDeviceDescription, protocolType: MediaSharingProtocol, session: MediaOutputSession, reason: String,
        authorizationMethod: OutputDeviceDescription.AuthorizationMethod
    ) {
        self.device = device
        self.protocolType = protocolType
        self.session = session
        self.reason = reason
        self.authorizationMethod = authorizationMethod
    }
}
