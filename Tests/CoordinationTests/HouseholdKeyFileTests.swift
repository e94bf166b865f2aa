import Coordination
import Foundation
import Testing

/// The household key is a secret: a file others may read is refused with one clear line, and
/// a symbolic link is not followed.
@Suite struct HouseholdKeyFileTests {
    static func file(_ bytes: [UInt8], mode: Int) throws -> String {
        let path = NSTemporaryDirectory() + "household-\(UUID().uuidString).key"
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        chmod(path, mode_t(mode))
        return path
    }

    @Test func aKeyOnlyItsOwnerMayReadIsLoaded() throws {
        let bytes = [UInt8](repeating: 7, count: 32)
        let path = try Self.file(bytes + [0x0A], mode: 0o600)
        defer { unlink(path) }
        #expect(try HouseholdKey.load(path: path) == HouseholdKey(bytes))
    }

    @Test func aKeyOthersMayReadIsRefused() throws {
        for mode in [0o640, 0o604, 0o644, 0o660] {
            let path = try Self.file([UInt8](repeating: 7, count: 32), mode: mode)
            defer { unlink(path) }
            #expect(throws: HouseholdKeyFileError.self) { try HouseholdKey.load(path: path) }
            do {
                _ = try HouseholdKey.load(path: path)
            } catch {
                #expect(error.code == .tooOpen(mode: UInt32(mode)))
                #expect(error.description.contains("0600"))
            }
        }
    }

    @Test func linksDirectoriesAndShortKeysAreRefused() throws {
        let target = try Self.file([UInt8](repeating: 7, count: 32), mode: 0o600)
        defer { unlink(target) }
        let link = target + ".link"
        symlink(target, link)
        defer { unlink(link) }
        let short = try Self.file([1, 2, 3], mode: 0o600)
        defer { unlink(short) }
        func code(_ path: String) -> HouseholdKeyFileError.Code? {
            do {
                _ = try HouseholdKey.load(path: path)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code(link) == .unreadable)
        #expect(code(NSTemporaryDirectory()) == .notAFile)
        #expect(code(short) == .wrongSize)
        #expect(code("/nonexistent/key") == .unreadable)
    }
}
