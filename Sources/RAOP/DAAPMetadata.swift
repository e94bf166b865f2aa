

/// DAAP (DMAP-tagged) metadata of a `SET_PARAMETER` (`application/x-dmap-tagged`): one
/// listing item (`mlit`) with the title (`minm`), artist (`asar`) and album (`asal`) given.
/// Each text is cut to ``maximumTextBytes`` of UTF-8 at a character boundary.
public enum DAAPMetadata {
    public static let maximumTextBytes = 1024

    public static func listingItem(title: String?, artist: String?, album: String?) -> [UInt8] {
        var items: [UInt8] = []
        for (tag, text) in [("minm", title), ("asar", artist), ("asal", album)] {
            guard let text else { continue }
            items += element(tag, bounded(text))
        }
        return element("mlit", items)
    }

    /// A tag, its length (32 bits, big-endian) and its bytes.
    static func element(_ tag: String, _ bytes: [UInt8]) -> [UInt8] {
        let length = UInt32(clamping: bytes.count)
        return Array(tag.utf8.prefix(4)) + [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + bytes
    }

    static func bounded(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for character in text {
            let utf8 = Array(String(character).utf8)
            guard bytes.count + utf8.count <= maximumTextBytes else { break }
            bytes += utf8
        }
        return bytes
    }
}
