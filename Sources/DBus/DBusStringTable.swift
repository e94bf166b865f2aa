#if canImport(Glibc)
import Glibc
#endif

/// Strings that recur message after message — interface and property names,
/// UUIDs, a sender's name — kept once and shared, rather than allocated and
/// freed for every message. Fixed size (512 strings of 16 to 64 bytes; shorter
/// ones are stored inline by `String` anyway): a peer sending only new strings
/// just replaces entries. For one reading thread: not `Sendable`.
public final class DBusStringTable {
    private var slots = [String?](repeating: nil, count: 512)

    public init() {}

    /// `text` (valid UTF-8) as a string, the same one as last time when it recurs.
    public func string(_ text: UnsafeRawBufferPointer) -> String {
        guard text.count >= 16, text.count <= 64 else { return String(decoding: text, as: UTF8.self) }
        // The length and the first and last eight bytes pick the slot (a full compare confirms):
        // names that recur differ there, and hashing every byte cost more than it saved.
        let head = text.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
        let tail = text.loadUnaligned(fromByteOffset: text.count - 8, as: UInt64.self)
        let mixed = (head &* 0x9E37_79B9_7F4A_7C15) ^ (tail &* 0xC2B2_AE3D_27D4_EB4F) ^ UInt64(text.count)
        let slot = Int(truncatingIfNeeded: (mixed >> 32) ^ mixed) & 511
        if let known = slots[slot],
            known.utf8.withContiguousStorageIfAvailable({ $0.count == text.count && memcmp($0.baseAddress!, text.baseAddress!, text.count) == 0 }) == true
        {
            return known
        }
        let fresh = String(decoding: text, as: UTF8.self)
        slots[slot] = fresh
        return fresh
    }
}
