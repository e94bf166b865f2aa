import DBus
import Foundation
import MediaDevice
import RoutingModel
import MediaRouteBusAPI
import Testing

/// `Session1.StartWithMetadata`'s `a{sv}`: what any bus client sends is decoded or refused, never trusted.
@Suite struct SessionMetadataCodecTests {
    @Test func roundTripsWhatTheClientSends() throws {
        let metadata = PlaybackMetadata(
            title: "Film", artist: "Someone", album: "Series", artworkURL: URL(string: "http://m/a.jpg"), duration: 5400, isLive: false)
        let decoded = try SessionMetadataCodec.decode(SessionMetadataCodec.encode(metadata))
        #expect(decoded == metadata)
    }

    @Test func wrongTypesAreRefusedAndUnknownKeysIgnored() {
        let wrong: [(String, DBusValue)] = [
            ("title", .int32(1)), ("duration", .string("long")), ("duration", .double(-1)), ("duration", .double(.nan)),
            ("artworkUrl", .string("not a url")), ("live", .string("yes")),
        ]
        for (key, value) in wrong {
            #expect(throws: MediaDeviceError.self) { try SessionMetadataCodec.decode(.properties([key: value])) }
        }
        #expect((try? SessionMetadataCodec.decode(.properties(["colour": .string("red")]))) == PlaybackMetadata())
    }

    /// Random values of every kind under known and unknown keys: a typed error or a value, no trap.
    @Test func randomValuesNeverTrap() {
        var generator = SystemRandomNumberGenerator()
        let keys = ["title", "artist", "album", "artworkUrl", "duration", "live", "x", ""]
        func randomValue(_ depth: Int) -> DBusValue {
            switch Int.random(in: 0..<(depth > 2 ? 8 : 11), using: &generator) {
            case 0: .byte(.random(in: 0...255))
            case 1: .bool(.random())
            case 2: .int32(.random(in: .min ... .max))
            case 3: .uint64(.random(in: 0 ... .max))
            case 4: .double([Double.nan, .infinity, -.infinity, -1, 0, 1e308, .random(in: -1e6...1e6)].randomElement()!)
            case 5: .string(String((0..<Int.random(in: 0..<40)).map { _ in Character(UnicodeScalar(UInt8.random(in: 32...126))) }))
            case 6: .string(["http://h/x", "://", "", "file:///etc/passwd", "\u{0}"].randomElement()!)
            case 7: .objectPath("/a")
            case 8: .variant(randomValue(depth + 1))
            case 9: .strings(["a", "b"])
            default: .properties(["title": randomValue(depth + 1)])
            }
        }
        for _ in 0..<5_000 {
            var entries: [String: DBusValue] = [:]
            for _ in 0..<Int.random(in: 0...6) { entries[keys.randomElement()!] = randomValue(0) }
            _ = try? SessionMetadataCodec.decode(.properties(entries))
            _ = try? SessionMetadataCodec.decode(randomValue(0))
        }
    }
}
