

/// A failed UPnP action: a SOAP fault with its UPnP error code, or a bad answer.
public struct UPnPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The UPnP error code from the fault (e.g. 401 Invalid Action, 501 Action Failed,
    /// 701 Transition not available, 716 Resource not found); nil when the answer was not a fault.
    public var code: Int?
    public var message: String

    public init(code: Int?, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { code.map { "UPnP error \($0): \(message)" } ?? message }
}
