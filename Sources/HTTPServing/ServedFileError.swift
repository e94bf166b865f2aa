#if canImport(Glibc)
import Glibc
#endif

/// Why a local file was not handed out.
public struct ServedFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
}
