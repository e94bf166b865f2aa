/// An `http://` URL, as UPnP devices announce them: a host, a port and a path.
///
/// Only plain HTTP is accepted (UPnP 1.x devices on a LAN do not use TLS); a
/// relative reference resolves against a base the way descriptions use them.
public struct HTTPURL: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: UInt16
    /// Path and query, starting with `/`.
    public var path: String

    public init(host: String, port: UInt16 = 80, path: String = "/") {
        self.host = host
        self.port = port
        self.path = path.hasPrefix("/") ? path : "/" + path
    }

    /// Parses an absolute `http://host[:port][/path]`; nil for anything else.
    public init?(_ text: String) {
        let text = text.trimmingURLSpace
        guard text.count <= 2048, text.lowercased().hasPrefix("http://") else { return nil }
        let rest = text.dropFirst(7)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        guard !authority.contains("@") else { return nil }  // no credentials in device URLs
        var port: UInt16 = 80
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                guard let parsed = UInt16(after.dropFirst()), parsed > 0 else { return nil }
                port = parsed
            } else if !after.isEmpty { return nil }
            authority = authority[authority.index(after: authority.startIndex)..<close]
        } else if let colon = authority.lastIndex(of: ":") {
            guard let parsed = UInt16(authority[authority.index(after: colon)...]), parsed > 0 else { return nil }
            port = parsed
            authority = authority[..<colon]
        }
        guard !authority.isEmpty, authority.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-.:_".contains($0)) }) else { return nil }
        var path = String(rest[authorityEnd...])
        if let hash = path.firstIndex(of: "#") { path = String(path[..<hash]) }
        guard path.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "\0" }) else { return nil }
        self.init(host: authority.lowercased(), port: port, path: path.isEmpty ? "/" : path)
    }

    /// `reference` resolved against this URL: absolute, host-relative (`/x`) or path-relative (`x`).
    public func resolve(_ reference: String) -> HTTPURL? {
        let reference = reference.trimmingURLSpace
        if reference.lowercased().hasPrefix("http://") { return HTTPURL(reference) }
        guard !reference.contains("://"), !reference.hasPrefix("//"),
            reference.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "\0" })
        else { return nil }
        if reference.hasPrefix("/") { return HTTPURL(host: host, port: port, path: reference) }
        let directory = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let base = directory.lastIndex(of: "/").map { directory[...$0] } ?? "/"
        return HTTPURL(host: host, port: port, path: String(base) + reference)
    }

    /// `host:port` as the `HOST` header wants it.
    public var authority: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == 80 ? name : "\(name):\(port)"
    }

    public var description: String { "http://\(authority)\(path)" }
}

extension String {
    /// Without leading and trailing spaces, tabs and line breaks (as URLs arrive in headers and XML).
    fileprivate var trimmingURLSpace: String {
        let space: Set<Character> = [" ", "\t", "\r", "\n", "\r\n"]
        guard let start = firstIndex(where: { !space.contains($0) }), let end = lastIndex(where: { !space.contains($0) }) else { return "" }
        return String(self[start...end])
    }
}
