

/// The digest challenge of a receiver that asks for a password (RFC 2617 without `qop`, as
/// AirPlay receivers send it): `WWW-Authenticate: Digest realm="raop", nonce="…"`.
public struct RTSPDigestChallenge: Sendable, Hashable {
    /// The longest `WWW-Authenticate` value read; past it the challenge is refused.
    public static let maximumHeaderBytes = 1024

    public var realm: String
    public var nonce: String

    public init(realm: String, nonce: String) {
        self.realm = realm
        self.nonce = nonce
    }

    /// The challenge in a `WWW-Authenticate` value; nil when it is not a digest challenge
    /// with a realm and a nonce, or is too long.
    public init?(header: String) {
        guard header.utf8.count <= Self.maximumHeaderBytes else { return nil }
        let text = header.trimmingWhitespace
        guard text.lowercased().hasPrefix("digest ") else { return nil }
        var fields: [String: String] = [:]
        var rest = Substring(text.dropFirst(7))
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "," || $0 == "\t" }
            guard let equals = rest.firstIndex(of: "=") else { break }
            let name = rest[..<equals].trimmingWhitespace.lowercased()
            rest = rest[rest.index(after: equals)...]
            var value: Substring
            if rest.first == "\"" {
                let body = rest.dropFirst()
                guard let close = body.firstIndex(of: "\"") else { return nil }
                value = body[..<close]
                rest = body[body.index(after: close)...]
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<end]
                rest = rest[end...]
            }
            fields[name] = String(value.trimmingWhitespace)
        }
        guard let realm = fields["realm"], let nonce = fields["nonce"], !nonce.isEmpty else { return nil }
        self.init(realm: realm, nonce: nonce)
    }

    /// The `Authorization` value for `method` on `uri` with `password`:
    /// `response = MD5(MD5(user:realm:password):nonce:MD5(method:uri))`, in lower-case hex.
    /// Quotes and line breaks in the values are dropped (they could not be sent inside quotes).
    public func authorization(username: String, password: String, method: String, uri: String) -> String {
        func quoted(_ text: String) -> String {
            String(String.UnicodeScalarView(text.unicodeScalars.filter { $0 != "\"" && $0 != "\r" && $0 != "\n" }))
        }
        let user = quoted(username), realm = quoted(self.realm), nonce = quoted(self.nonce), uri = quoted(uri)
        let credentials = MD5.hex(Array("\(user):\(realm):\(password)".utf8))
        let target = MD5.hex(Array("\(method):\(uri)".utf8))
        let response = MD5.hex(Array("\(credentials):\(nonce):\(target)".utf8))
        return "Digest username=\"\(user)\", realm=\"\(realm)\", nonce=\"\(nonce)\", uri=\"\(uri)\", response=\"\(response)\""
    }
}
