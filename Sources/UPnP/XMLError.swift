import CExpat
#if canImport(Glibc)
import Glibc
#endif

/// Why a document was refused.
public struct XMLError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// More bytes than the limit.
        case tooLarge
        /// A DOCTYPE: UPnP documents never need one, and DTDs carry entity attacks.
        case doctypeForbidden
        /// Not well-formed XML (truncated, bad syntax, bad encoding).
        case malformed
        /// Deeper, or with more elements, than the limits.
        case tooComplex
        /// Well-formed, but not the document expected (root, namespace, required element).
        case unexpectedContent
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
