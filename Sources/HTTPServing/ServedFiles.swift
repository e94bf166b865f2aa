#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Local files handed to devices that fetch media themselves (UPnP renderers, Cast
/// receivers), each at `/media/TOKEN/NAME` for the one host it was handed to.
///
/// A token is 128 random bits; a request for any other path, from any other host, or
/// after the file was taken back is refused, so the server never reads a path a request
/// names.
public final class ServedFiles: Sendable {
    /// A file handed to one device.
    public struct File: Sendable {
        public var path: String
        public var mimeType: String
        /// Only this host may fetch it (the device that was told its URL).
        public var allowedHost: String
        /// Headers some devices want beside the file (DLNA's transfer mode, say).
        public var extraHeaders: [(String, String)]
        /// The file's device and inode when it was handed out: a request finds that very file
        /// or nothing (the path replaced by a link, or by another file, is not followed).
        public var identity: FileIdentity?
        /// The descriptor a client handed over, when `path` names a handed file (``HandedFiles``):
        /// served from it, held as long as this entry is.
        public var handed: OpenFile?

        public init(path: String, mimeType: String, allowedHost: String, extraHeaders: [(String, String)] = []) {
            self.path = path
            self.mimeType = mimeType
            self.allowedHost = allowedHost
            self.extraHeaders = extraHeaders
            if HandedFiles.isHandedPath(path) {
                handed = HandedFiles.shared.file(at: path)
                return
            }
            var info = stat()
            if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG { identity = FileIdentity(info) }
        }
    }

    /// A stream produced while it is served (a route's live audio), for one host.
    public struct Live: Sendable {
        /// Only this host may fetch it.
        public var allowedHost: String
        /// Answers each request (a new reader of the stream each time).
        public var respond: @Sendable (HTTPServerRequest) -> HTTPServerResponse

        public init(allowedHost: String, respond: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResponse) {
            self.allowedHost = allowedHost
            self.respond = respond
        }
    }

    private enum Entry {
        case file(File)
        case live(Live)

        var allowedHost: String {
            switch self {
            case .file(let file): file.allowedHost
            case .live(let live): live.allowedHost
            }
        }
    }

    private let files = Mutex<[String: Entry]>([:])

    public init() {}

    /// 128 random bits in hex.
    public static func token() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let value = generator.next() as UInt64
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// Serves `file` until ``remove(_:)``; returns its token.
    public func add(_ file: File) -> String {
        let token = Self.token()
        files.withLock { $0[token] = .file(file) }
        return token
    }

    /// Serves `live` until ``remove(_:)``; returns its token.
    public func add(_ live: Live) -> String {
        let token = Self.token()
        files.withLock { $0[token] = .live(live) }
        return token
    }

    public func remove(_ token: String) { files.withLock { _ = $0.removeValue(forKey: token) } }

    /// How many files are served now.
    public var count: Int { files.withLock { $0.count } }

    /// The path a device fetches `token`'s file at; `name` (what the device may show) is
    /// percent-encoded.
    public static func path(token: String, name: String) -> String {
        let encoded = name.utf8.map { byte -> String in
            let safe = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || "-._~".utf8.contains(byte)
            return safe ? String(UnicodeScalar(byte)) : "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
        }.joined()
        return "/media/\(token)/\(encoded)"
    }

    /// Whether `path` is a regular file this process can read (what may be handed to a device).
    public static func isReadableFile(atPath path: String) -> Bool {
        if HandedFiles.isHandedPath(path) { return HandedFiles.shared.file(at: path)?.size != nil }
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(path, R_OK) == 0
    }

    /// Hands `file` to its device: starts (or reuses) `pool`'s server on `address`, the local
    /// address facing the device, and returns the URL the device fetches and the token to
    /// ``remove(_:)`` when it no longer may.
    /// - Throws: ``HTTPServerError`` when no server can listen on `address` (nothing is served).
    public func offer(_ file: File, named name: String, on address: String, via pool: HTTPServerPool) async throws(HTTPServerError) -> (url: String, token: String) {
        let base = try await pool.base(on: address)
        let token = add(file)
        return (base + Self.path(token: token, name: name), token)
    }

    /// Serves a live stream to its device the way ``offer(_:named:on:via:)`` serves a file.
    public func offer(_ live: Live, named name: String, on address: String, via pool: HTTPServerPool) async throws(HTTPServerError) -> (url: String, token: String) {
        let base = try await pool.base(on: address)
        let token = add(live)
        return (base + Self.path(token: token, name: name), token)
    }

    /// The answer to a request under `/media/`; nil for any other path (another handler's).
    public func response(to request: HTTPServerRequest) -> HTTPServerResponse? {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.first == "media" else { return nil }
        guard request.method == "GET" || request.method == "HEAD" else { return HTTPServerResponse(status: 405) }
        guard parts.count == 3, let entry = files.withLock({ $0[String(parts[1])] }) else { return HTTPServerResponse(status: 404) }
        guard request.remoteHost == entry.allowedHost else { return HTTPServerResponse(status: 403) }
        switch entry {
        case .file(let file):
            return Self.serve(file, range: request[header: "range"])
        case .live(let live):
            return live.respond(request)
        }
    }

    static func serve(_ file: File, range: String?) -> HTTPServerResponse {
        let total: Int
        if HandedFiles.isHandedPath(file.path) {
            // A handed path is never looked up on disk: the descriptor or nothing.
            guard let handed = file.handed, let size = handed.size else { return HTTPServerResponse(status: 404) }
            total = size
        } else {
            var info = stat()
            guard lstat(file.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, file.identity.map({ $0 == FileIdentity(info) }) ?? true else {
                return HTTPServerResponse(status: 404)
            }
            total = Int(info.st_size)
        }
        func body(_ span: ClosedRange<Int>?) -> HTTPServerResponse.Body {
            if let handed = file.handed { return .descriptor(handed, range: span, total: total) }
            return .file(path: file.path, range: span, total: total, identity: file.identity)
        }
        var headers: [(String, String)] = [("Content-Type", file.mimeType), ("Accept-Ranges", "bytes")] + file.extraHeaders
        guard let range else { return HTTPServerResponse(status: 200, headers: headers, body: body(nil)) }
        guard let span = ByteRange.parse(range, total: total) else {
            headers.append(("Content-Range", "bytes */\(total)"))
            return HTTPServerResponse(status: 416, headers: headers)
        }
        headers.append(("Content-Range", "bytes \(span.lowerBound)-\(span.upperBound)/\(total)"))
        return HTTPServerResponse(status: 206, headers: headers, body: body(span))
    }
}
