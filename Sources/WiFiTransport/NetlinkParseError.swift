

/// Why netlink bytes could not be parsed. Every parser here is total: malformed
/// input gives one of these, never a crash or a read past the buffer.
public struct NetlinkParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Fewer bytes than a header needs.
        case truncated
        /// A length field points past the end of its container.
        case lengthOverflow
        /// A length field is smaller than its own header.
        case lengthTooSmall
        /// Attributes nested deeper than allowed.
        case nestedTooDeep
        /// A value has the wrong size for its type.
        case badValue
    }

    public var code: Code
    public var detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code.rawValue): \(detail)" }
}
