@testable import DBus
import Testing

/// `a{sv}` bodies read value by value, once decoding every variant and once
/// keeping containers as wire bytes (``DBusBodyReader/variantKeepingContainers()``).
struct DBusWireValueTests {
    /// Every property of an `a{sv}` body, as `variant()` reads it and as
    /// `variantKeepingContainers()` does (nil when that read throws).
    static func readBothWays(_ bytes: [UInt8]) -> (eager: Result<[DBusValue], DBusWireError>, kept: Result<[DBusKeptValue], DBusWireError>) {
        func read<T>(_ one: (inout DBusBodyReader) throws(DBusWireError) -> T) -> Result<[T], DBusWireError> {
            bytes.withUnsafeBytes { raw in
                do throws(DBusWireError) {
                    guard let (_, body) = try DBusWireReader.decodeHeader(raw), body.hasSignature("a{sv}") else {
                        return .failure(DBusWireError(reason: "not a{sv}", offset: 0))
                    }
                    return .success(try body.read { reader throws(DBusWireError) in
                        var values: [T] = []
                        try reader.dictionary { reader throws(DBusWireError) in
                            _ = try reader.string()
                            values.append(try one(&reader))
                        }
                        return values
                    })
                } catch {
                    return .failure(error)
                }
            }
        }
        return (read { reader throws(DBusWireError) in try reader.variant() }, read { reader throws(DBusWireError) in try reader.variantKeepingContainers() })
    }

    static func message(_ properties: [(String, DBusValue)]) throws -> [UInt8] {
        var message = DBusMessage.signal(
            path: "/org/bluez/hci0/dev_AA", interface: "org.mediaroute.Test1", member: "Properties",
            body: [.dictionary(keySignature: "s", valueSignature: "v", properties.map { DBusDictEntry(.string($0.0), .variant($0.1)) })])
        message.sender = ":1.9"
        return try message.marshalled()
    }

    @Test func keptContainersDecodeToWhatTheReaderGivesAtEveryAlignment() throws {
        for (index, value) in everyKindOfValue.enumerated() {
            for shift in 0..<8 {
                // A string of `shift` bytes first moves the value to every offset modulo eight.
                let bytes = try Self.message([("pad", .string(String(repeating: "x", count: shift))), ("value", value)])
                let (eager, kept) = Self.readBothWays(bytes)
                let eagerValues = try eager.get()
                let keptValues = try kept.get()
                #expect(keptValues.map(\.value) == eagerValues, "value \(index), shift \(shift)")
                guard case .kept(let wire) = keptValues[1] else {
                    // Basic types and arrays of strings are decoded at once.
                    let code = value.signature.first
                    #expect(!(code == "a" || code == "(" || code == "v") || value.signature == "as", "value \(index) should be kept")
                    continue
                }
                #expect(wire.signature == value.signature)
                #expect(value.signature != "as")
            }
        }
    }

    @Test func keptValuesAreCheckedExactlyAsDecodedOnes() throws {
        let original = try Self.message([
            ("ManufacturerData", .dictionary(keySignature: "q", valueSignature: "v", [DBusDictEntry(.uint16(0x4C), .variant(.bytes([1, 2, 3])))])),
            ("Name", .string("Küche")),
            ("ServiceData", .dictionary(keySignature: "s", valueSignature: "v", [DBusDictEntry(.string("0000fe2c"), .variant(.bytes([9])))])),
            ("Nested", .variant(.structure([.objectPath("/a/b"), .signature("a{sv}"), .strings(["ä", "b"]), .bool(true)]))),
            ("UUIDs", .strings(["0000184e-0000-1000-8000-00805f9b34fb"])),
            ("Table", .array(elementSignature: "(yd)", [.structure([.byte(1), .double(0.5)])])),
        ])
        var generator = SystemRandomNumberGenerator()
        var refused = 0
        for _ in 0..<20_000 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                // Most changes land in the body, where the two ways of reading differ.
                bytes[Int.random(in: (bytes.count / 3)..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            let (eager, kept) = Self.readBothWays(bytes)
            switch (eager, kept) {
            case (.success(let values), .success(let keptValues)):
                #expect(keptValues.map(\.value) == values)
            case (.failure(let eagerError), .failure(let keptError)):
                refused += 1
                #expect(eagerError == keptError)
            default:
                Issue.record("read one way and refused the other: \(eager) / \(kept)")
            }
        }
        #expect(refused > 5_000)
    }

    @Test func aMalformedValueInsideAKeptContainerIsRefused() throws {
        // "a{sv}" with one entry whose variant is "as" would be decoded; "aas" is kept: break a string inside it.
        var bytes = try Self.message([("Lists", .array(elementSignature: "as", [.strings(["ok", "bad"])]))])
        let bad = try #require(bytes.lastIndex(of: UInt8(ascii: "b")))
        bytes[bad] = 0xC3
        bytes[bad + 1] = 0x28
        let (eager, kept) = Self.readBothWays(bytes)
        #expect(throws: DBusWireError.self) { try eager.get() }
        #expect(throws: DBusWireError.self) { try kept.get() }
        #expect((try? kept.get()) == nil)
        if case .failure(let error) = kept { #expect(error.reason.contains("UTF-8")) }
    }
}
