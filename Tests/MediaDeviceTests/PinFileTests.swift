import Foundation
import MediaDevice
import RoutingModel
import Testing

@Suite struct PinFileTests {
    func temporaryPath() -> String {
        NSTemporaryDirectory() + "mr-pins-\(UUID().uuidString.prefix(8)).json"
    }

    @Test func pinsSurviveARestartAndForgettingRemovesThemFromTheFile() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = PinFile(path: path)
        first.pin("10.0.0.5", for: "AABBCCDDEEFF", name: "Kitchen")
        let mode = try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0, "only the daemon's user reads its pins: \(String(mode, radix: 8))")

        let second = PinFile(path: path)
        #expect(second["AABBCCDDEEFF"]?.value == "10.0.0.5")
        #expect(second["AABBCCDDEEFF"]?.name == "Kitchen")
        #expect(second.forget("AABBCCDDEEFF"))
        #expect(!second.forget("AABBCCDDEEFF"), "forgotten once")
        #expect(PinFile(path: path)["AABBCCDDEEFF"] == nil, "the file no longer holds it")
    }

    @Test func anOldFileIsReadOnlyWhenAskedAndAForeignOneIsIgnored() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try #"{"cast:abc": "00ff"}"#.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(PinFile(path: path, legacy: true)["cast:abc"]?.value == "00ff")
        #expect(PinFile(path: path)["cast:abc"] == nil)

        try "not json at all".write(toFile: path, atomically: true, encoding: .utf8)
        let foreign = PinFile(path: path)
        #expect(foreign.all.isEmpty)
        foreign.pin("v", for: "d", name: "n")
        #expect(PinFile(path: path)["d"]?.value == "v", "the next pin rewrites it")

        try Data(repeating: 0x20, count: PinFile.maximumFileSize + 1).write(to: URL(fileURLWithPath: path))
        #expect(PinFile(path: path).all.isEmpty, "a file over 1 MiB is not read")
    }

    @Test func theTableIsBoundedAndTheOldestPinGoesFirst() {
        let pins = PinFile(path: nil)
        pins.pin("first", for: "oldest", name: "")
        for index in 0..<PinFile.maximumEntries { pins.pin("v", for: "device-\(index)", name: "") }
        #expect(pins.all.count == PinFile.maximumEntries)
        #expect(pins["oldest"] == nil)
        #expect(pins["device-\(PinFile.maximumEntries - 1)"] != nil)
    }

    @Test func anEntryIsNamedByItsIdOrItsNameInAnyCase() {
        let entry = PinnedIdentity(kind: .airPlayHost, deviceID: "AABBCCDDEEFF", name: "Living Room", pinned: "10.0.0.5")
        #expect(entry.isNamed("AABBCCDDEEFF"))
        #expect(entry.isNamed("living room"))
        #expect(!entry.isNamed("Living"))
    }
}
