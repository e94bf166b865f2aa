#if canImport(Glibc)
import Glibc
#endif

/// Why a household key file was not used.
public struct HouseholdKeyFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// It could not be opened (missing, no permission, a symbolic link).
        case unreadable
        /// Not a regular file.
        case notAFile
        /// Group or others may read or write it: a secret every local user could read.
        case tooOpen(mode: UInt32)
        /// Fewer than 16 or more than 4 096 bytes.
        case wrongSize
    }

    public var code: Code
    public var description: String
}

extension HouseholdKey {
    /// The key in the file at `path`: opened without following a symbolic link, a regular file
    /// that only its owner may read (mode 0600 or 0400), 16 to 4 096 bytes (trailing line
    /// ends and spaces ignored).
    public static func load(path: String) throws(HouseholdKeyFileError) -> HouseholdKey {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            throw HouseholdKeyFileError(code: .unreadable, description: "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { Glibc.close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw HouseholdKeyFileError(code: .notAFile, description: "\(path) is not a regular file")
        }
        let mode = UInt32(status.st_mode & 0o7777)
        guard mode & 0o077 == 0 else {
            throw HouseholdKeyFileError(
                code: .tooOpen(mode: mode),
                description: "\(path) may be read by others (mode 0\(String(mode, radix: 8))): make it 0600 and owned by the daemon's user "
                    + "(install -o mediaroute -g mediaroute -m 0600 …)")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= 4096 {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer.prefix(count)
        }
        while let last = bytes.last, last == 0x0A || last == 0x0D || last == 0x20 { bytes.removeLast() }
        guard let key = HouseholdKey(bytes) else {
            throw HouseholdKeyFileError(code: .wrongSize, description: "\(path) must hold 16 to 4096 bytes")
        }
        return key
    }
}
