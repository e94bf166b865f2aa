public import DBus
import Logging
public import Transport

/// What BlueZ asks the person during pairing.
public enum BlueZPairingPrompt: Sendable, Hashable {
    /// Enter the six-digit passkey the device shows.
    case passkey(device: DBusObjectPath)
    /// Enter the device's PIN code (legacy pairing).
    case pinCode(device: DBusObjectPath)
    /// Show this passkey; the person types it on the device.
    case displayPasskey(device: DBusObjectPath, passkey: UInt32)
    case displayPinCode(device: DBusObjectPath, pinCode: String)
    /// Does the device show this number too? Yes or no.
    case confirmation(device: DBusObjectPath, passkey: UInt32)
    /// May this device pair (no code)?
    case authorization(device: DBusObjectPath)

    public var device: DBusObjectPath {
        switch self {
        case .passkey(let device), .pinCode(let device), .displayPasskey(let device, _), .displayPinCode(let device, _),
            .confirmation(let device, _), .authorization(let device):
            device
        }
    }

    /// The question without the bus: what the person is asked.
    public var prompt: PairingPrompt {
        switch self {
        case .passkey: .passkeyEntry
        case .pinCode: .pinCodeEntry
        case .displayPasskey(_, let passkey): .displayPasskey(passkey)
        case .displayPinCode(_, let pinCode): .displayPinCode(pinCode)
        case .confirmation(_, let passkey): .confirmation(passkey: passkey)
        case .authorization: .authorization
        }
    }
}
