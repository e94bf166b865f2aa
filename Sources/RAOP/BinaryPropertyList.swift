/// A binary property list (`bplist00`) written from a value, for the bodies MediaRoute sends
/// AirPlay 2 receivers (`SETUP`, `SETPEERS`).
///
/// Written here rather than through FoundationEssentials' `PropertyListEncoder` while the
/// flash budget was over (issue 39): it saved 8 KB of the binary, 4 KB of squashfs-xz — less
/// than hoped (the encoder's code was mostly linked already); the room came from BoringSSL
/// without assembly instead, so going back to the encoder is a fair choice. Reading stays with
/// FoundationEssentials' decoder: what receivers send is parsed by the kept library, only our
/// own bytes are made here, and every one of them is read back by FoundationEssentials and by
/// Python's plistlib in the tests.
public enum BinaryPropertyList {
    /// A property list value: what the session's bodies hold.
    public indirect enum Value: Sendable {
        case string(String)
        case integer(Int64)
        case bool(Bool)
        case data([UInt8])
        case array([Value])
        /// Entries in the order written.
        case dictionary([(key: String, value: Value)])
    }

    /// `root` as a binary property list.
    public static func encode(_ root: Value) -> [UInt8] {
        // Objects in pre-order, each container with the indices of what it holds.
        var objects: [Value] = []
        var references: [[Int]] = []
        func add(_ value: Value) -> Int {
            let index = objects.count
            objects.append(value)
            references.append([])
            switch value {
            case .array(let items):
                references[index] = items.map { add($0) }
            case .dictionary(let entries):
                let keys = entries.map { add(.string($0.key)) }
                references[index] = keys + entries.map { add($0.value) }
            default:
                break
            }
            return index
        }
        _ = add(root)
        let referenceSize = objects.count < 256 ? 1 : objects.count < 65_536 ? 2 : 4
        var out = Array("bplist00".utf8)
        var offsets: [Int] = []
        offsets.reserveCapacity(objects.count)
        for (index, object) in objects.enumerated() {
            offsets.append(out.count)
            switch object {
            case .bool(let value):
                out.append(value ? 0x09 : 0x08)
            case .integer(let value):
                out += integer(value)
            case .data(let bytes):
                out += marker(0x40, bytes.count) + bytes
            case .string(let text):
                if text.utf8.allSatisfy({ $0 < 0x80 }) {
                    out += marker(0x50, text.utf8.count) + Array(text.utf8)
                } else {
                    let units = Array(text.utf16)
                    out += marker(0x60, units.count)
                    for unit in units { out += [UInt8(unit >> 8), UInt8(truncatingIfNeeded: unit)] }
                }
            case .array(let items):
                out += marker(0xA0, items.count) + references[index].flatMap { bigEndian($0, referenceSize) }
            case .dictionary(let entries):
                out += marker(0xD0, entries.count) + references[index].flatMap { bigEndian($0, referenceSize) }
            }
        }
        let tableOffset = out.count
        let offsetSize = tableOffset < 256 ? 1 : tableOffset < 65_536 ? 2 : tableOffset < 1 << 32 ? 4 : 8
        for offset in offsets { out += bigEndian(offset, offsetSize) }
        // The trailer: 6 unused bytes, the two sizes, the object count, the root (0), the table's offset.
        out += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
        out += bigEndian(objects.count, 8) + bigEndian(0, 8) + bigEndian(tableOffset, 8)
        return out
    }

    /// An object's marker: its kind and, from 15 on, its count as an integer object after it.
    private static func marker(_ kind: UInt8, _ count: Int) -> [UInt8] {
        count < 15 ? [kind | UInt8(count)] : [kind | 0x0F] + integer(Int64(count))
    }

    /// An integer object: 1, 2, 4 or 8 bytes, big-endian; negative numbers take 8 (two's complement).
    private static func integer(_ value: Int64) -> [UInt8] {
        switch value {
        case 0..<256: [0x10, UInt8(value)]
        case 256..<65_536: [0x11] + bigEndian(Int(value), 2)
        case 65_536..<(1 << 32): [0x12] + bigEndian(Int(value), 4)
        default: [0x13] + bigEndian(Int(truncatingIfNeeded: value), 8)
        }
    }

    private static func bigEndian(_ value: Int, _ size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: Int64(value)) >> (8 * UInt64(size - 1 - $0))) }
    }
}
