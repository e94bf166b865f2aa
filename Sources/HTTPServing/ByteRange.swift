#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A `Range: bytes=…` header with one range (devices seek with `bytes=N-`).
public enum ByteRange {
    /// The satisfiable span, or nil (answer 416).
    public static func parse(_ header: String, total: Int) -> ClosedRange<Int>? {
        // By scalars: "\r\n" is one Character.
        let scalars = header.unicodeScalars
        let isSpace = { (scalar: Unicode.Scalar) in scalar == " " || scalar == "\t" || scalar == "\r" || scalar == "\n" }
        guard let head = scalars.firstIndex(where: { !isSpace($0) }), let tail = scalars.lastIndex(where: { !isSpace($0) }) else { return nil }
        let trimmed = String(scalars[head...tail]).lowercased()
        guard trimmed.hasPrefix("bytes="), total > 0 else { return nil }
        let spec = trimmed.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash]
        let last = spec[spec.index(after: dash)...]
        if first.isEmpty {
            guard let suffix = Int(last), suffix > 0 else { return nil }
            return max(total - suffix, 0)...(total - 1)
        }
        guard let start = Int(first), start >= 0, start < total else { return nil }
        if last.isEmpty { return start...(total - 1) }
        guard let end = Int(last), end >= start else { return nil }
        return start...min(end, total - 1)
    }
}
