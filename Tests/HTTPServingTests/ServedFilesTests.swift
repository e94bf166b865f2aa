import Foundation
import Logging
@testable import HTTPServing
import Testing

@Suite struct ServedFilesTests {
    @Test func rangesAsDevicesSendThem() {
        #expect(ByteRange.parse("bytes=0-", total: 100) == 0...99)
        #expect(ByteRange.parse("bytes=10-19", total: 100) == 10...19)
        #expect(ByteRange.parse("bytes=90-500", total: 100) == 90...99)
        #expect(ByteRange.parse("bytes=-10", total: 100) == 90...99)
        #expect(ByteRange.parse("Bytes=5-", total: 100) == 5...99)
        #expect(ByteRange.parse(" bytes=5-\r\n", total: 100) == 5...99)
        for bad in ["bytes=100-", "bytes=20-10", "bytes=0-1,5-6", "items=0-", "bytes=-0", "bytes=x-", "bytes=-"] {
            #expect(ByteRange.parse(bad, total: 100) == nil, "\(bad)")
        }
        #expect(ByteRange.parse("bytes=0-", total: 0) == nil)
    }

    @Test func onlyTheDeviceGetsOnlyTheHandedFile() throws {
        let path = NSTemporaryDirectory() + "served-\(UUID().uuidString).mp3"
        try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let files = ServedFiles()
        let token = files.add(ServedFiles.File(path: path, mimeType: "audio/mpeg", allowedHost: "198.51.100.2", extraHeaders: [("X-Extra", "1")]))
        #expect(token.count == 32 && token.allSatisfy(\.isHexDigit))
        #expect(files.count == 1)
        func get(_ path: String, from host: String = "198.51.100.2", range: String? = nil, method: String = "GET") -> HTTPServerResponse? {
            var headers: [String: String] = [:]
            if let range { headers["range"] = range }
            return files.response(to: HTTPServerRequest(method: method, path: path, headers: headers, body: [], remoteHost: host))
        }
        let whole = try #require(get("/media/\(token)/a.mp3"))
        #expect(whole.status == 200)
        #expect(whole.headers.contains { $0 == ("Content-Type", "audio/mpeg") } && whole.headers.contains { $0 == ("Accept-Ranges", "bytes") })
        #expect(whole.headers.contains { $0 == ("X-Extra", "1") }, "the device's own headers")
        let part = try #require(get("/media/\(token)/a.mp3", range: "bytes=500-"))
        #expect(part.status == 206 && part.headers.contains { $0 == ("Content-Range", "bytes 500-999/1000") })
        #expect(get("/media/\(token)/a.mp3", range: "bytes=2000-")?.status == 416)
        #expect(get("/media/\(token)/a.mp3", method: "HEAD")?.status == 200)
        #expect(get("/media/\(token)/a.mp3", method: "PUT")?.status == 405)
        #expect(get("/media/\(token)/a.mp3", from: "198.51.100.9")?.status == 403, "another host")
        #expect(get("/media/\(token)/a.mp3", from: "")?.status == 403, "no host")
        #expect(get("/media/\(ServedFiles.token())/a.mp3")?.status == 404, "a guessed token")
        #expect(get("/media/../../etc/passwd")?.status == 404)
        #expect(get("/etc/passwd") == nil, "another path is another handler's")
        files.remove(token)
        #expect(get("/media/\(token)/a.mp3")?.status == 404, "not after it was taken back")
        #expect(files.count == 0)
    }

    @Test func theNameIsPercentEncodedInThePath() {
        #expect(ServedFiles.path(token: "t", name: "Film (2024) é.mp4") == "/media/t/Film%20%282024%29%20%C3%A9.mp4")
        #expect(ServedFiles.path(token: "t", name: "../x") == "/media/t/..%2Fx")
    }

    @Test func aPoolServesEachAddressOnceAndAgainAfterClosing() async throws {
        let files = ServedFiles()
        let pool = HTTPServerPool(logger: Logger(label: "test")) { request in
            files.response(to: request) ?? HTTPServerResponse(status: 404)
        }
        let first = try await pool.base(on: "127.0.0.1")
        #expect(first.hasPrefix("http://127.0.0.1:"))
        #expect(try await pool.base(on: "127.0.0.1") == first, "one server per address")
        let path = NSTemporaryDirectory() + "pooled-\(UUID().uuidString).txt"
        try Data("hello".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(ServedFiles.isReadableFile(atPath: path))
        #expect(!ServedFiles.isReadableFile(atPath: NSTemporaryDirectory()), "a directory is not a file")
        #expect(!ServedFiles.isReadableFile(atPath: path + ".missing"))
        let offered = try await files.offer(ServedFiles.File(path: path, mimeType: "text/plain", allowedHost: "127.0.0.1"), named: "a.txt", on: "127.0.0.1", via: pool)
        #expect(offered.url == first + ServedFiles.path(token: offered.token, name: "a.txt"))
        let port = try #require(UInt16(first.split(separator: ":").last ?? ""))
        let request = "GET \(ServedFiles.path(token: offered.token, name: "a.txt")) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        let answer = await offPool { exchange(port: port, request) }
        #expect(answer.hasPrefix("HTTP/1.1 200"))
        #expect(answer.hasSuffix("hello"))
        await expectThrows { _ = try await pool.base(on: "198.51.100.77") }
        let before = files.count
        await expectThrows {
            _ = try await files.offer(ServedFiles.File(path: path, mimeType: "text/plain", allowedHost: "198.51.100.2"), named: "a.txt", on: "198.51.100.77", via: pool)
        }
        #expect(files.count == before, "nothing is served when no server can listen")
        await pool.closeAll()
    }

    private func expectThrows(_ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected an error")
        } catch {}
    }
}
