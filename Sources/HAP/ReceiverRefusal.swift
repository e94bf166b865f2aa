/// A receiver's `kTLVError` code, in words for the log and the error a person sees.
public struct ReceiverRefusal: Sendable, Hashable, CustomStringConvertible {
    public var code: UInt8

    public init(_ code: UInt8) { self.code = code }

    public var description: String {
        switch code {
        case 1: "unknown error"
        case 2: "authentication failed (a wrong PIN, or it does not know us)"
        case 3: "too many attempts: it asks us to wait"
        case 4: "it has no room for another controller"
        case 5: "too many failed attempts"
        case 6: "busy pairing with another controller"
        default: "error \(code)"
        }
    }
}
