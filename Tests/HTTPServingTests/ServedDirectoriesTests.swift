#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import HTTPServing
import Testing

/// The daemon hands a device only files that lie, links resolved, in the directories it serves
/// from, never a link given as the file, and only the very file it was handed (a path swapped
/// for a link or another file afterwards is not followed).
@Suite struct ServedDirectoriesTests {
    let root = NSTemporaryDirectory() + "served-\(UUID().uuidString.prefix(8))"

    func layout() throws -> (served: String, outside: String) {
        let served = root + "/media", outside = root + "/private"
        for directory in [served, outside] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        _ = FileManager.default.createFile(atPath: served + "/film.mp4", contents: Data("film".utf8))
        _ = FileManager.default.createFile(atPath: outside + "/household.key", contents: Data("secret".utf8))
        symlink(outside + "/household.key", served + "/innocent.mp4")
        symlink(outside, served + "/escape")
        return (served, outside)
    }

    @Test func onlyFilesInsideTheServedDirectoriesAndNeverThroughALink() throws {
        let (served, outside) = try layout()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directories = ServedDirectories([served])
        #expect(try directories.admit(served + "/film.mp4").hasSuffix("/media/film.mp4"))
        func refusal(_ path: String) -> String? {
            do {
                _ = try directories.admit(path)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(refusal(outside + "/household.key")?.contains("serve-from") == true)
        #expect(refusal(served + "/innocent.mp4")?.contains("symbolic link") == true)
        #expect(refusal(served + "/escape/household.key")?.contains("serve-from") == true)
        #expect(refusal(served + "/../private/household.key")?.contains("serve-from") == true)
        #expect(refusal(served + "/missing.mp4")?.contains("does not exist") == true)
        try FileManager.default.createDirectory(atPath: served + "/folder", withIntermediateDirectories: true)
        #expect(refusal(served + "/folder")?.contains("not a readable file") == true)
    }

    @Test func aPathReplacedAfterItWasHandedOutIsNotFollowed() throws {
        let (served, outside) = try layout()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = served + "/film.mp4"
        let file = ServedFiles.File(path: path, mimeType: "video/mp4", allowedHost: "192.0.2.7")
        #expect(ServedFiles.serve(file, range: nil).status == 200)
        // Swapped for a link to the secret: not served. (The original is moved aside, not removed,
        // so that its inode cannot be reused by what replaces it.)
        rename(path, path + ".old")
        symlink(outside + "/household.key", path)
        #expect(ServedFiles.serve(file, range: nil).status == 404)
        // Swapped for another file at the same path: not served either.
        unlink(path)
        _ = FileManager.default.createFile(atPath: path, contents: Data("other".utf8))
        #expect(ServedFiles.serve(file, range: nil).status == 404)
    }
}
