/// An error about a device, an activation or a session, with a code apps can switch on.
public struct MediaDeviceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, Hashable, Codable {
        /// The device could not be reached or refused the connection.
        case connectionFailed
        /// Pairing failed: wrong code, cancelled prompt, rejected by the device.
        case authorizationFailed
        /// A playback session could not start or failed while running.
        case sessionFailed
        /// The device, or the person, did not answer in time.
        case timedOut
        /// Discovery failed.
        case discoveryFailed
        /// No such device is known.
        case deviceNotFound
        /// The device vanished.
        case deviceLost
        /// The device is not active (activate it first).
        case deviceNotActive
        /// The device is already active.
        case deviceAlreadyActive
        /// An activation of this device is already under way.
        case activationInProgress
        /// The extension handles one session at a time and one is active.
        case simultaneousSessionsUnsupported
        /// The device does not support this kind of volume control.
        case volumeControlUnsupported
        /// The device does not have this capability.
        case unsupported
        /// An extension's protocol id is malformed or already loaded.
        case invalidProtocolType
        /// An argument is out of range or malformed.
        case invalidArgument
        /// The operation was cancelled.
        case cancelled
    }

    public var code: Code
    /// A human-readable detail.
    public var message: String
    /// The device protocol's own error code, when the device gave one (a UPnP
    /// error code from a SOAP fault, a BlueZ error number).
    public var protocolErrorCode: Int?

    public init(_ code: Code, _ message: String = "", protocolErrorCode: Int? = nil) {
        self.code = code
        self.message = message
        self.protocolErrorCode = protocolErrorCode
    }

    public var description: String {
        message.isEmpty ? code.rawValue : "\(code.rawValue): \(message)"
    }
}
