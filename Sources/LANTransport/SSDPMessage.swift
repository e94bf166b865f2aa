public import Transport

/// One SSDP datagram: a search answer, a `NOTIFY`, or an `M-SEARCH`.
public struct SSDPMessage: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// `HTTP/1.1 200 OK`: an answer to our search.
        case searchResponse
        /// `NOTIFY * HTTP/1.1`.
        case notify
        /// `M-SEARCH * HTTP/1.1` (another control point's search).
        case search
    }

    /// The largest datagram looked at; SSDP messages are a few hundred bytes.
    public static let maximumSize = 8 * 1024

    public var kind: Kind
    /// Header fields by upper-cased name (the last one wins).
    public var headers: [String: String]

    public init(kind: Kind, headers: [String: String]) {
        self.kind = kind
        self.headers = headers
    }

    public subscript(_ name: String) -> String? { headers[name.uppercased()] }

    /// `NT` for notifications, `ST` for search answers.
    public var target: String? { kind == .notify ? self["NT"] : self["ST"] }

    /// `ssdp:alive`, `ssdp:byebye` or `ssdp:update` for notifications.
    public var notificationSubtype: String? { self["NTS"] }

    /// The device part of `USN` (`uuid:…`, before any `::`).
    public var udn: String? {
        guard let usn = self["USN"] else { return nil }
        let udn = usn.components(separatedByDoubleColon: ())
        guard udn.lowercased().hasPrefix("uuid:"), udn.count > 5, udn.count <= 128 else { return nil }
        return udn
    }

    /// `max-age` from `CACHE-CONTROL` (clamped to a day), or nil when absent or malformed.
    public var maxAge: Int? {
        guard let value = self["CACHE-CONTROL"] else { return nil }
        for directive in value.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters() }
            guard parts.count == 2, parts[0].lowercased() == "max-age", let seconds = Int(parts[1]), seconds >= 0 else { continue }
            return min(seconds, 86_400)
        }
        return nil
    }

    /// Parses a datagram.
    /// - Throws: ``TransportError/Code/malformedMessage`` saying what is wrong.
    public static func parse(_ bytes: [UInt8]) throws(TransportError) -> SSDPMessage {
        guard bytes.count <= maximumSize else { throw TransportError(.malformedMessage, "SSDP datagram of \(bytes.count) bytes") }
        guard bytes.allSatisfy({ $0 != 0 }) else { throw TransportError(.malformedMessage, "NUL byte in SSDP datagram") }
        let terminated = bytes.indices.contains { index in
            bytes[index] == 0x0A && (bytes.dropFirst(index + 1).first == 0x0A || bytes.dropFirst(index + 1).starts(with: [0x0D, 0x0A]))
        }
        guard terminated else { throw TransportError(.malformedMessage, "SSDP header block not terminated") }
        // Lines split on bytes: as Characters, "\r\n" is one grapheme and never equals "\n".
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            Substring(String(decoding: line.last == 0x0D ? line.dropLast() : line, as: UTF8.self))
        }[...]
        guard let start = lines.popFirst() else { throw TransportError(.malformedMessage, "empty SSDP datagram") }
        let kind: Kind
        switch start.uppercased() {
        case let line where line.hasPrefix("HTTP/1.1 200") || line.hasPrefix("HTTP/1.0 200"): kind = .searchResponse
        case "NOTIFY * HTTP/1.1", "NOTIFY * HTTP/1.0": kind = .notify
        case "M-SEARCH * HTTP/1.1": kind = .search
        default: throw TransportError(.malformedMessage, "SSDP start line \"\(start.prefix(40))\"")
        }
        var headers: [String: String] = [:]
        var sawEnd = false
        for line in lines {
            if line.isEmpty {
                sawEnd = true
                break
            }
            guard headers.count < 64 else { throw TransportError(.malformedMessage, "more than 64 SSDP headers") }
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw TransportError(.malformedMessage, "SSDP header line without a name: \"\(line.prefix(40))\"")
            }
            let name = line[..<colon].trimmingCharacters().uppercased()
            guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") }) else {
                throw TransportError(.malformedMessage, "SSDP header name \"\(name.prefix(40))\"")
            }
            headers[name] = line[line.index(after: colon)...].trimmingCharacters()
        }
        guard sawEnd else { throw TransportError(.malformedMessage, "SSDP header block not terminated") }
        return SSDPMessage(kind: kind, headers: headers)
    }
}

extension Substring {
    func trimmingCharacters() -> String {
        let start = firstIndex { $0 != " " && $0 != "\t" } ?? endIndex
        let end = lastIndex { $0 != " " && $0 != "\t" }.map(index(after:)) ?? start
        return String(self[start..<Swift.max(start, end)])
    }
}

extension String {
    /// The part before the first `::` (the whole string when there is none).
    func components(separatedByDoubleColon: ()) -> String {
        guard let range = range(of: "::") else { return self }
        return String(self[..<range.lowerBound])
    }

    private func range(of needle: String) -> Range<String.Index>? {
        var index = startIndex
        while index < endIndex {
            if self[index...].hasPrefix(needle) { return index..<self.index(index, offsetBy: needle.count) }
            index = self.index(after: index)
        }
        return nil
    }
}
