#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
@testable import HTTPServing
import Testing

/// A file a client handed over as a descriptor: served from the descriptor (the path may be
/// gone), under a path no lookup on disk ever answers, only while it is handed.
@Suite struct HandedFilesTests {
    func temporaryFile(_ bytes: [UInt8]) throws -> String {
        let path = NSTemporaryDirectory() + "handed-\(UUID().uuidString.prefix(8)).mp3"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aRemovedFileIsServedFromItsDescriptorOverHTTPInWholeAndInPart() async throws {
        let handed = HandedFiles()
        let bytes = (0..<3000).map { UInt8($0 % 251) }
        let path = try temporaryFile(bytes)
        let descriptor = open(path, O_RDONLY)
        unlink(path)
        let name = try handed.hand(owning: descriptor, name: "song.mp3")
        #expect(HandedFiles.isHandedPath(name) && name.hasSuffix("/song.mp3"))
        let open = try #require(handed.file(at: name))
        #expect(open.size == 3000)

        var file = ServedFiles.File(path: name, mimeType: "audio/mpeg", allowedHost: "127.0.0.1")
        file.handed = open
        let files = ServedFiles()
        let pool = HTTPServerPool(logger: Logger(label: "test")) { files.response(to: $0) ?? HTTPServerResponse(status: 404) }
        let offered = try await files.offer(file, named: "song.mp3", on: "127.0.0.1", via: pool)
        let port = try #require(UInt16(offered.url.split(separator: ":").last?.split(separator: "/").first ?? ""))
        let resource = ServedFiles.path(token: offered.token, name: "song.mp3")
        let whole = await offPool { exchangeBytes(port: port, "GET \(resource) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") }
        #expect(Array(whole.suffix(3000)) == bytes, "every byte, from the descriptor")
        let part = await offPool { exchangeBytes(port: port, "GET \(resource) HTTP/1.1\r\nHost: x\r\nRange: bytes=2990-\r\nConnection: close\r\n\r\n") }
        #expect(String(decoding: part.prefix(12), as: UTF8.self) == "HTTP/1.1 206")
        #expect(Array(part.suffix(10)) == Array(bytes.suffix(10)))
        handed.release(name)
        #expect(handed.file(at: name) == nil && handed.count == 0)
        // The served entry keeps its own reference until the session takes it back.
        let after = await offPool { exchangeBytes(port: port, "GET \(resource) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") }
        #expect(Array(after.suffix(3000)) == bytes)
        files.remove(offered.token)
        await pool.closeAll()
    }

    @Test func onlyReadableRegularFilesWithAPlainNameAreTakenAndNoMoreThanTheCap() throws {
        let handed = HandedFiles()
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        // At a number far above what the process uses, so no other test's open can take it meanwhile.
        let high = dup2(ends[0], 901)
        close(ends[0])
        #expect(throws: HandedFileError.self, "a pipe") { _ = try handed.hand(owning: high, name: "a.mp3") }
        #expect(fcntl(high, F_GETFD) == -1, "a refused descriptor is closed, not leaked")
        close(ends[1])
        let path = try temporaryFile([1, 2, 3])
        defer { unlink(path) }
        #expect(throws: HandedFileError.self, "write-only") { _ = try handed.hand(owning: open(path, O_WRONLY), name: "a.mp3") }
        for bad in ["", ".", "..", "a/b.mp3", String(repeating: "x", count: 256)] {
            #expect(throws: HandedFileError.self, "\(bad)") { _ = try handed.hand(owning: open(path, O_RDONLY), name: bad) }
        }
        var names: [String] = []
        for index in 0..<HandedFiles.maximumFiles { names.append(try handed.hand(owning: open(path, O_RDONLY), name: "\(index).mp3")) }
        #expect(throws: HandedFileError.self, "over the cap") { _ = try handed.hand(owning: open(path, O_RDONLY), name: "more.mp3") }
        for name in names { handed.release(name) }
        #expect(handed.count == 0)
    }

    @Test func aHandedPathIsNeverLookedUpOnDisk() throws {
        let guessed = HandedFiles.directory + ServedFiles.token() + "/film.mp4"
        #expect(!ServedFiles.isReadableFile(atPath: guessed))
        let file = ServedFiles.File(path: guessed, mimeType: "video/mp4", allowedHost: "192.0.2.7")
        #expect(file.handed == nil && file.identity == nil)
        #expect(ServedFiles.serve(file, range: nil).status == 404)
        // The right token with another name is not the handed file either.
        let path = try temporaryFile([9])
        defer { unlink(path) }
        let name = try HandedFiles.shared.hand(owning: open(path, O_RDONLY), name: "a.mp3")
        defer { HandedFiles.shared.release(name) }
        #expect(ServedFiles.isReadableFile(atPath: name))
        #expect(!ServedFiles.isReadableFile(atPath: String(name.dropLast(6)) + "/b.mp3"))
        #expect(ServedFiles.File(path: name, mimeType: "audio/mpeg", allowedHost: "192.0.2.7").handed != nil)
    }
}

/// Sends `request` to 127.0.0.1:`port` and returns every byte of the answer until the peer closes.
func exchangeBytes(port: UInt16, _ request: String) -> [UInt8] {
    let fd = loopbackConnection(port: port)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { break }
        answer += buffer.prefix(count)
    }
    return answer
}
