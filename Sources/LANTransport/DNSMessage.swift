public import Transport

/// A DNS message: what mDNS queries and answers are made of.
public struct DNSMessage: Sendable, Hashable {
    public var id: UInt16 = 0
    public var isResponse: Bool
    public var questions: [DNSQuestion] = []
    public var answers: [DNSRecord] = []
    public var authorities: [DNSRecord] = []
    public var additionals: [DNSRecord] = []

    public init(isResponse: Bool, questions: [DNSQuestion] = [], answers: [DNSRecord] = [], additionals: [DNSRecord] = []) {
        self.isResponse = isResponse
        self.questions = questions
        self.answers = answers
        self.additionals = additionals
    }

    /// Every record of the answer, authority and additional sections.
    public var records: [DNSRecord] { answers + authorities + additionals }

    // MARK: Encoding

    /// The wire bytes (names uncompressed: our messages are small queries).
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        func u16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] }
        func u32(_ value: UInt32) { u16(UInt16(value >> 16)); u16(UInt16(value & 0xFFFF)) }
        func name(_ text: String) {
            for label in text.split(separator: ".") where !label.isEmpty {
                let utf8 = Array(label.utf8.prefix(63))
                bytes.append(UInt8(utf8.count))
                bytes += utf8
            }
            bytes.append(0)
        }
        u16(id)
        u16(isResponse ? 0x8400 : 0)  // response + authoritative
        u16(UInt16(clamping: questions.count)); u16(UInt16(clamping: answers.count)); u16(UInt16(clamping: authorities.count)); u16(UInt16(clamping: additionals.count))
        for question in questions {
            name(question.name)
            u16(question.type)
            u16(question.unicastResponse ? 0x8001 : 0x0001)
        }
        for record in answers + authorities + additionals {
            name(record.name)
            u16(record.type)
            u16(record.cacheFlush ? 0x8001 : 0x0001)
            u32(record.ttl)
            var data: [UInt8] = []
            switch record.data {
            case .a(let address): data = address.split(separator: ".").compactMap { UInt8($0) }
            case .aaaa(let address): data = Self.ipv6Bytes(address)
            case .ptr(let target):
                let saved = bytes
                bytes = []
                name(target)
                data = bytes
                bytes = saved
            case .srv(let priority, let weight, let port, let target):
                let saved = bytes
                bytes = []
                u16(priority); u16(weight); u16(port); name(target)
                data = bytes
                bytes = saved
            case .txt(let strings):
                for string in strings {
                    let utf8 = Array(string.utf8.prefix(255))
                    data.append(UInt8(utf8.count))
                    data += utf8
                }
                if data.isEmpty { data = [0] }
            case .other(_, let raw): data = raw
            }
            // RDATA longer than 65 535 bytes cannot be sent: it is cut rather than trapping.
            if data.count > Int(UInt16.max) { data = Array(data.prefix(Int(UInt16.max))) }
            u16(UInt16(data.count))
            bytes += data
        }
        return bytes
    }

    // MARK: Decoding

    /// Parses a datagram.
    /// - Throws: ``TransportError/Code/malformedMessage`` for truncated data, bad names
    ///   (pointer loops, forward pointers, over-long names), or counts that do not fit.
    public static func decode(_ bytes: [UInt8]) throws(TransportError) -> DNSMessage {
        var reader = Reader(bytes: bytes)
        let id = try reader.u16()
        let flags = try reader.u16()
        let counts = [try reader.u16(), try reader.u16(), try reader.u16(), try reader.u16()]
        // Each question needs ≥ 5 bytes, each record ≥ 11: refuse counts the datagram cannot hold.
        // The sum is taken in Int: three 16-bit counts summed as UInt16 trap on overflow (a remote crash).
        let recordCount = Int(counts[1]) + Int(counts[2]) + Int(counts[3])
        guard Int(counts[0]) * 5 + recordCount * 11 <= bytes.count else {
            throw TransportError(.malformedMessage, "DNS counts larger than the message")
        }
        var message = DNSMessage(isResponse: flags & 0x8000 != 0)
        message.id = id
        for _ in 0..<counts[0] {
            let name = try reader.name()
            let type = try reader.u16()
            let rawClass = try reader.u16()
            message.questions.append(DNSQuestion(name: name, type: DNSRecord.RecordType(rawValue: type) ?? .any, unicastResponse: rawClass & 0x8000 != 0))
            message.questions[message.questions.count - 1].type = type
        }
        func records(_ count: UInt16) throws(TransportError) -> [DNSRecord] {
            var list: [DNSRecord] = []
            for _ in 0..<count { list.append(try reader.record()) }
            return list
        }
        message.answers = try records(counts[1])
        message.authorities = try records(counts[2])
        message.additionals = try records(counts[3])
        return message
    }

    struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func u8() throws(TransportError) -> UInt8 {
            guard offset < bytes.count else { throw TransportError(.malformedMessage, "DNS message truncated") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func u16() throws(TransportError) -> UInt16 { UInt16(try u8()) << 8 | UInt16(try u8()) }
        mutating func u32() throws(TransportError) -> UInt32 { UInt32(try u16()) << 16 | UInt32(try u16()) }

        mutating func take(_ count: Int) throws(TransportError) -> [UInt8] {
            guard count >= 0, offset + count <= bytes.count else { throw TransportError(.malformedMessage, "DNS message truncated") }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }

        /// A name, following compression pointers only backwards, at most 255 bytes long.
        mutating func name() throws(TransportError) -> String {
            var labels: [String] = []
            var length = 0
            var position = offset
            var jumped = false
            var jumps = 0
            while true {
                guard position < bytes.count else { throw TransportError(.malformedMessage, "DNS name truncated") }
                let count = Int(bytes[position])
                if count & 0xC0 == 0xC0 {
                    guard position + 1 < bytes.count else { throw TransportError(.malformedMessage, "DNS name pointer truncated") }
                    let target = (count & 0x3F) << 8 | Int(bytes[position + 1])
                    guard target < position, jumps < 32 else { throw TransportError(.malformedMessage, "DNS name pointer loops or points forward") }
                    if !jumped { offset = position + 2 }
                    jumped = true
                    jumps += 1
                    position = target
                    continue
                }
                guard count & 0xC0 == 0 else { throw TransportError(.malformedMessage, "DNS label type \(count >> 6) unsupported") }
                if count == 0 {
                    if !jumped { offset = position + 1 }
                    break
                }
                guard position + 1 + count <= bytes.count else { throw TransportError(.malformedMessage, "DNS label truncated") }
                length += count + 1
                guard length <= 255 else { throw TransportError(.malformedMessage, "DNS name longer than 255 bytes") }
                labels.append(String(decoding: bytes[(position + 1)..<(position + 1 + count)], as: UTF8.self))
                position += 1 + count
            }
            return labels.joined(separator: ".")
        }

        mutating func record() throws(TransportError) -> DNSRecord {
            let name = try name()
            let type = try u16()
            let rawClass = try u16()
            let ttl = try u32()
            let length = Int(try u16())
            guard offset + length <= bytes.count else { throw TransportError(.malformedMessage, "DNS record data truncated") }
            let end = offset + length
            let data: DNSRecord.RecordData
            switch DNSRecord.RecordType(rawValue: type) {
            case .a:
                guard length == 4 else { throw TransportError(.malformedMessage, "A record of \(length) bytes") }
                data = .a(try take(4).map(String.init).joined(separator: "."))
            case .aaaa:
                guard length == 16 else { throw TransportError(.malformedMessage, "AAAA record of \(length) bytes") }
                data = .aaaa(DNSMessage.ipv6Text(try take(16)))
            case .ptr:
                data = .ptr(try self.name())
            case .srv:
                guard length >= 7 else { throw TransportError(.malformedMessage, "SRV record of \(length) bytes") }
                data = .srv(priority: try u16(), weight: try u16(), port: try u16(), target: try self.name())
            case .txt:
                var strings: [String] = []
                while offset < end {
                    let count = Int(try u8())
                    guard offset + count <= end else { throw TransportError(.malformedMessage, "TXT string past its record") }
                    if count > 0 { strings.append(String(decoding: try take(count), as: UTF8.self)) }
                }
                data = .txt(strings)
            default:
                data = .other(type: type, bytes: try take(length))
            }
            guard offset == end else { throw TransportError(.malformedMessage, "DNS record data of type \(type) does not match its length") }
            var record = DNSRecord(name: name, ttl: ttl, data: data, cacheFlush: rawClass & 0x8000 != 0)
            record.type = type
            return record
        }
    }

    static func ipv6Text(_ bytes: [UInt8]) -> String {
        stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
    }

    static func ipv6Bytes(_ text: String) -> [UInt8] {
        let halves = text.components(separatedByDoubleColon: ()) == text
            ? [text, nil] : [text.components(separatedByDoubleColon: ()), String(text.dropFirst(text.components(separatedByDoubleColon: ()).count + 2))]
        let head = halves[0].map { $0.split(separator: ":").compactMap { UInt16($0, radix: 16) } } ?? []
        let tail = halves[1].map { $0.split(separator: ":").compactMap { UInt16($0, radix: 16) } } ?? []
        let groups = head + Array(repeating: 0, count: max(0, 8 - head.count - tail.count)) + tail
        return groups.prefix(8).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}
