import DBus
import Testing

/// Builds D-Bus wire bytes by hand, in either byte order, for messages libdbus would refuse to write.
struct WireBuilder {
    var bytes: [UInt8] = []
    let bigEndian: Bool

    init(bigEndian: Bool = false) { self.bigEndian = bigEndian }

    mutating func pad(_ alignment: Int) {
        while bytes.count % alignment != 0 { bytes.append(0) }
    }

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func uint32(_ value: UInt32) {
        pad(4)
        let ordered = bigEndian ? value.bigEndian : value.littleEndian
        withUnsafeBytes(of: ordered) { bytes += $0 }
    }

    mutating func string(_ text: [UInt8]) {
        uint32(UInt32(text.count))
        bytes += text
        bytes.append(0)
    }

    mutating func string(_ text: String) { string(Array(text.utf8)) }

    mutating func signature(_ text: String) {
        bytes.append(UInt8(text.utf8.count))
        bytes += Array(text.utf8)
        bytes.append(0)
    }

    /// A header field: code, then a variant of one basic type.
    mutating func field(_ code: UInt8, _ type: String, _ write: (inout WireBuilder) -> Void) {
        pad(8)
        byte(code)
        signature(type)
        write(&self)
    }

    /// A whole message: fixed header, the given fields (patched lengths), padding, body.
    static func message(
        type: UInt8 = 4, serial: UInt32 = 7, bigEndian: Bool = false,
        fields: (inout WireBuilder) -> Void, body: (inout WireBuilder) -> Void = { _ in }
    ) -> [UInt8] {
        var builder = WireBuilder(bigEndian: bigEndian)
        builder.byte(bigEndian ? UInt8(ascii: "B") : UInt8(ascii: "l"))
        builder.byte(type)
        builder.byte(0)
        builder.byte(1)
        builder.uint32(0)  // body length, patched below
        builder.uint32(serial)
        builder.uint32(0)  // fields length, patched below
        let fieldsStart = builder.bytes.count
        fields(&builder)
        let fieldsLength = builder.bytes.count - fieldsStart
        builder.pad(8)
        let bodyStart = builder.bytes.count
        // The body's alignment counts from the start of the message, which is where the builder's does.
        body(&builder)
        let bodyLength = builder.bytes.count - bodyStart
        builder.patch(4, UInt32(bodyLength))
        builder.patch(12, UInt32(fieldsLength))
        return builder.bytes
    }

    mutating func patch(_ offset: Int, _ value: UInt32) {
        let ordered = bigEndian ? value.bigEndian : value.littleEndian
        withUnsafeBytes(of: ordered) { raw in for (index, byte) in raw.enumerated() { bytes[offset + index] = byte } }
    }

    /// The fields of a signal `/a` `org.example.I.Changed` from `:1.5` with body `signature`.
    static func signalFields(_ signature: String?) -> (inout WireBuilder) -> Void {
        { builder in
            builder.field(1, "o") { $0.string("/a") }
            builder.field(2, "s") { $0.string("org.example.I") }
            builder.field(3, "s") { $0.string("Changed") }
            builder.field(7, "s") { $0.string(":1.5") }
            if let signature { builder.field(8, "g") { $0.signature(signature) } }
        }
    }
}

func decode(_ bytes: [UInt8], limit: Int = DBusWireReader.maximumMessageSize) throws -> DBusMessage? {
    try bytes.withUnsafeBytes { raw in try DBusWireReader.decode(raw, limit: limit) }
}

func messageLength(_ bytes: [UInt8], limit: Int = DBusWireReader.maximumMessageSize) throws -> Int {
    try bytes.withUnsafeBytes { raw in try DBusWireReader.messageLength(fixedHeader: raw, limit: limit) }
}

/// Values of every type, nested, as a BlueZ or MPRIS peer sends them.
let everyKindOfValue: [DBusValue] = [
    .byte(0xFE), .bool(true), .bool(false), .int16(-2), .uint16(65_000), .int32(-70_000), .uint32(4_000_000_000),
    .int64(-1 << 40), .uint64(1 << 63), .double(-0.125), .string(""), .string("Küche ♫ 🎵"), .objectPath("/"),
    .objectPath("/org/bluez/hci0/dev_AA_BB"), .signature("a{sv}(ii)"),
    .array(elementSignature: "s", []), .strings(["a", "bc"]), .bytes([1, 2, 3]),
    .array(elementSignature: "ad", [.array(elementSignature: "d", [.double(1.5)]), .array(elementSignature: "d", [])]),
    .dictionary(keySignature: "s", valueSignature: "v", [DBusDictEntry(.string("RSSI"), .variant(.int16(-50))),
                                                         DBusDictEntry(.string("UUIDs"), .variant(.strings(["0000184e"])))]),
    .dictionary(keySignature: "q", valueSignature: "v", [DBusDictEntry(.uint16(0x4C), .variant(.bytes([1, 2])))]),
    .dictionary(keySignature: "o", valueSignature: "a{sa{sv}}", [
        DBusDictEntry(.objectPath("/org/bluez/hci0"), .dictionary(keySignature: "s", valueSignature: "a{sv}", [
            DBusDictEntry(.string("org.bluez.Adapter1"), .properties(["Powered": .bool(true), "Name": .string("box")])),
        ])),
    ]),
    .structure([.int32(1), .string("x"), .structure([.byte(2), .uint64(3)])]),
    .variant(.variant(.structure([.double(2), .bool(true)]))),
    .array(elementSignature: "(yd)", [.structure([.byte(1), .double(0.5)]), .structure([.byte(2), .double(-0.5)])]),
]

struct DBusWireReaderTests {
    @Test func readsWhatLibdbusWrites() throws {
        for (index, value) in everyKindOfValue.enumerated() {
            var message = DBusMessage.signal(path: "/org/mediaroute/Test", interface: "org.mediaroute.Test1", member: "Values", body: [value, .uint32(UInt32(index))])
            message.sender = ":1.42"
            message.destination = "org.mediaroute.Listener"
            let bytes = try message.marshalled(serial: UInt32(index + 1))
            let decoded = try #require(try decode(bytes))
            #expect(decoded.kind == .signal)
            #expect(decoded.serial == UInt32(index + 1))
            #expect(decoded.path == "/org/mediaroute/Test")
            #expect(decoded.interface == "org.mediaroute.Test1")
            #expect(decoded.member == "Values")
            #expect(decoded.sender == ":1.42")
            #expect(decoded.destination == "org.mediaroute.Listener")
            #expect(decoded.body == [value, .uint32(UInt32(index))], "value \(index)")
        }
        // All of them in one body, and replies and errors with their serials.
        var call = DBusMessage.methodCall(destination: "a.b", path: "/x", interface: "a.b.C", member: "M", body: everyKindOfValue)
        call.serial = 9
        let reply = call.reply(everyKindOfValue)
        let decodedReply = try #require(try decode(try reply.marshalled(serial: 10)))
        #expect(decodedReply.kind == .methodReturn)
        #expect(decodedReply.replySerial == 9)
        #expect(decodedReply.body == everyKindOfValue)
        let error = call.errorReply(DBusError(name: "org.bluez.Error.InProgress", message: "busy"))
        let decodedError = try #require(try decode(try error.marshalled(serial: 11)))
        #expect(decodedError.kind == .error)
        #expect(decodedError.error == DBusError(name: "org.bluez.Error.InProgress", message: "busy"))
        let decodedCall = try #require(try decode(try call.marshalled(serial: 9)))
        #expect(decodedCall.kind == .methodCall)
        #expect(decodedCall.body == everyKindOfValue)
    }

    @Test func readsBigEndianMessages() throws {
        let bytes = WireBuilder.message(bigEndian: true, fields: WireBuilder.signalFields("uas(nd)")) { body in
            body.uint32(0x0102_0304)
            body.uint32(0)
            let lengthAt = body.bytes.count - 4
            body.string("ab")
            body.string("c")
            body.patch(lengthAt, UInt32(body.bytes.count - lengthAt - 4))
            body.pad(8)
            body.bytes += [0xFF, 0xFE]  // int16 -2, big-endian
            body.pad(8)
            body.bytes += [0x3F, 0xF8, 0, 0, 0, 0, 0, 0]  // 1.5
        }
        let message = try #require(try decode(bytes))
        #expect(message.body == [.uint32(0x0102_0304), .strings(["ab", "c"]), .structure([.int16(-2), .double(1.5)])])
        #expect(message.sender == ":1.5")
    }

    @Test func everyTruncationIsRefused() throws {
        var message = DBusMessage.signal(path: "/a", interface: "a.b", member: "C", body: everyKindOfValue)
        message.sender = ":1.1"
        let bytes = try message.marshalled()
        for length in 0..<bytes.count {
            #expect(throws: DBusWireError.self) { try decode(Array(bytes[..<length])) }
        }
        // And a message followed by more bytes than its header says.
        #expect(throws: DBusWireError.self) { try decode(bytes + [0]) }
    }

    @Test func mutatedMessagesAreDecodedOrRefusedNeverTrusted() throws {
        var message = DBusMessage.signal(path: "/a", interface: "a.b", member: "C", body: everyKindOfValue)
        message.sender = ":1.1"
        let original = try message.marshalled()
        var generator = SystemRandomNumberGenerator()
        var refused = 0
        for _ in 0..<20_000 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            do {
                _ = try decode(bytes)
            } catch let error as DBusWireError {
                refused += 1
                #expect(error.offset >= 0 && error.offset <= bytes.count)
            } catch {
                Issue.record("not a DBusWireError: \(error)")
            }
        }
        #expect(refused > 10_000, "most random changes break a message")
    }

    @Test(arguments: [
        ("non-zero padding", "non-zero padding", WireBuilder.message(fields: WireBuilder.signalFields("yu")) { body in
            body.byte(1)
            body.bytes += [0, 7, 0]
            body.uint32(2)
        }),
        ("boolean 2", "boolean", WireBuilder.message(fields: WireBuilder.signalFields("b")) { $0.uint32(2) }),
        ("string without its NUL", "NUL-terminated", WireBuilder.message(fields: WireBuilder.signalFields("s")) { body in
            body.uint32(2)
            body.bytes += [0x61, 0x62, 0x63]
        }),
        ("NUL inside a string", "contains NUL", WireBuilder.message(fields: WireBuilder.signalFields("s")) { $0.string([0x61, 0, 0x62]) }),
        ("string that is not UTF-8", "UTF-8", WireBuilder.message(fields: WireBuilder.signalFields("s")) { $0.string([0x61, 0xC3, 0x28]) }),
        ("overlong UTF-8", "UTF-8", WireBuilder.message(fields: WireBuilder.signalFields("s")) { $0.string([0xC0, 0xAF]) }),
        ("bad object path", "object path", WireBuilder.message(fields: WireBuilder.signalFields("o")) { $0.string("/a//b") }),
        ("object path with a trailing slash", "object path", WireBuilder.message(fields: WireBuilder.signalFields("o")) { $0.string("/a/") }),
        ("array longer than the body", "runs past", WireBuilder.message(fields: WireBuilder.signalFields("ay")) { body in
            body.uint32(100)
            body.bytes += [1, 2]
        }),
        ("array over 64 MiB", "array of", WireBuilder.message(fields: WireBuilder.signalFields("ay")) { $0.uint32(64 << 20 + 1) }),
        ("array whose last element overruns it", "truncated", WireBuilder.message(fields: WireBuilder.signalFields("au")) { body in
            body.uint32(6)
            body.uint32(1)
            body.uint32(2)
        }),
        ("unix fd without negotiation", "file descriptors", WireBuilder.message(fields: WireBuilder.signalFields("h")) { $0.uint32(0) }),
        ("dictionary key that is a container", "dictionary key", WireBuilder.message(fields: WireBuilder.signalFields("a{vs}")) { $0.uint32(0) }),
        ("empty structure", "empty or unclosed", WireBuilder.message(fields: WireBuilder.signalFields("()")) { _ in }),
        ("33 nested arrays", "deeper than 32", WireBuilder.message(fields: WireBuilder.signalFields(String(repeating: "a", count: 33) + "y")) { $0.uint32(0) }),
        ("unknown type code", "invalid type code", WireBuilder.message(fields: WireBuilder.signalFields("z")) { _ in }),
        ("variant of two types", "one complete type", WireBuilder.message(fields: WireBuilder.signalFields("v")) { body in
            body.signature("yy")
            body.bytes += [1, 2]
        }),
        ("variants nested past 64", "deeper than 64", WireBuilder.message(fields: WireBuilder.signalFields("v")) { body in
            for _ in 0..<70 { body.signature("v") }
            body.signature("y")
            body.byte(1)
        }),
        ("bytes after the body", "after the body", WireBuilder.message(fields: WireBuilder.signalFields("y")) { body in body.bytes += [1, 2] }),
        ("body without a signature", "after the body", WireBuilder.message(fields: WireBuilder.signalFields(nil)) { $0.uint32(1) }),
        ("signal without a member", "MEMBER", WireBuilder.message(fields: { builder in
            builder.field(1, "o") { $0.string("/a") }
            builder.field(2, "s") { $0.string("a.b") }
        })),
        ("reply without a reply serial", "REPLY_SERIAL", WireBuilder.message(type: 2, fields: { _ in })),
        ("path field that is a string", "not of type o", WireBuilder.message(fields: { builder in
            builder.field(1, "s") { $0.string("/a") }
            builder.field(2, "s") { $0.string("a.b") }
            builder.field(3, "s") { $0.string("C") }
        })),
        ("serial 0", "serial 0", WireBuilder.message(serial: 0, fields: WireBuilder.signalFields(nil))),
        ("message type 0", "message type 0", WireBuilder.message(type: 0, fields: WireBuilder.signalFields(nil))),
    ])
    func malformedMessagesAreRefused(_ what: String, _ reason: String, _ bytes: [UInt8]) {
        do {
            _ = try decode(bytes)
            Issue.record("\(what): accepted")
        } catch let error as DBusWireError {
            #expect(error.reason.contains(reason), "\(what): \(error)")
        } catch {
            Issue.record("\(what): \(error)")
        }
    }

    @Test func limitsAreCheckedFromTheFixedHeaderAlone() throws {
        // A header announcing 100 MiB: refused before anything else is read.
        var header = WireBuilder()
        header.bytes = [UInt8(ascii: "l"), 4, 0, 1]
        header.uint32(100 << 20)
        header.uint32(1)
        header.uint32(0)
        #expect(throws: DBusWireError.self) { try messageLength(header.bytes) }
        header.patch(4, 1000)
        #expect(try messageLength(header.bytes) == 16 + 1000)
        #expect(throws: DBusWireError.self) { try messageLength(header.bytes, limit: 512) }
        // Wrong byte order mark, wrong protocol version.
        var wrong = header.bytes
        wrong[0] = UInt8(ascii: "x")
        #expect(throws: DBusWireError.self) { try decode(wrong) }
        wrong = header.bytes
        wrong[3] = 2
        #expect(throws: DBusWireError.self) { try decode(wrong) }
    }

    @Test func unknownMessageTypesAndHeaderFieldsAreSkipped() throws {
        let unknownType = WireBuilder.message(type: 9, fields: WireBuilder.signalFields(nil))
        #expect(try decode(unknownType)?.serial == nil)
        let unknownField = WireBuilder.message(fields: { builder in
            WireBuilder.signalFields("u")(&builder)
            builder.field(42, "as") { $0.uint32(0) }
        }) { $0.uint32(5) }
        let message = try #require(try decode(unknownField))
        #expect(message.body == [.uint32(5)])
    }

    /// Regression (found by fuzzing): an unknown header field whose variant has an empty
    /// signature indexed an empty type and crashed the reader; two types in it were half read.
    @Test(arguments: ["", "uu", "a"]) func headerFieldVariantsMustBeOneCompleteType(_ signature: String) throws {
        let bytes = WireBuilder.message(fields: { builder in
            WireBuilder.signalFields(nil)(&builder)
            builder.field(42, signature) { $0.uint32(1); $0.uint32(2) }
        })
        #expect(throws: DBusWireError.self) { try decode(bytes) }
    }
}

struct DBusStringTableTests {
    @Test func recurringStringsAreSharedAndDifferentOnesStayDifferent() throws {
        let table = DBusStringTable()
        func string(_ text: String) -> String {
            Array(text.utf8).withUnsafeBytes { table.string($0) }
        }
        let uuid = "0000184e-0000-1000-8000-00805f9b34fb"
        let first = string(uuid)
        let second = string(uuid)
        #expect(first == uuid && second == uuid)
        // The same storage: the second read allocated nothing.
        let same = first.utf8.withContiguousStorageIfAvailable { a in second.utf8.withContiguousStorageIfAvailable { b in a.baseAddress == b.baseAddress } }
        #expect(same == true)
        // Many different strings (colliding in the 512 slots) each come back as themselves.
        for index in 0..<5_000 {
            let text = "org.example.Interface\(index)"
            #expect(string(text) == text)
        }
        #expect(string(uuid) == uuid)
        // Short and long strings pass through.
        #expect(string("short") == "short")
        let long = String(repeating: "x", count: 100)
        #expect(string(long) == long)
    }

    @Test func decodingWithATableGivesTheSameMessages() throws {
        let table = DBusStringTable()
        var message = DBusMessage.signal(path: "/org/bluez/hci0/dev_AA", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded", body: everyKindOfValue)
        message.sender = ":1.42"
        let bytes = try message.marshalled()
        for _ in 0..<3 {
            let decoded = try #require(try bytes.withUnsafeBytes { try DBusWireReader.decode($0, strings: table) })
            #expect(decoded.body == everyKindOfValue)
            #expect(decoded.interface == "org.freedesktop.DBus.ObjectManager")
            #expect(decoded.path == "/org/bluez/hci0/dev_AA")
        }
    }
}
