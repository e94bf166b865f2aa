#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Why a handed descriptor is refused.
public struct HandedFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
