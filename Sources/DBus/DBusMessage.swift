import CDBus
import Synchronization

/// A D-Bus message as a Swift value. Messages cross threads only in this form;
/// libdbus's own `DBusMessage` objects live and die on the reactor thread.
public struct DBusMessage: Sendable {
    public enum Kind: Sendable, Hashable {
        case methodCall
        case methodReturn
        case error
        case signal
    }

    public var kind: Kind
    public var serial: UInt32 = 0
    public var replySerial: UInt32 = 0
    public var sender: String?
    public var destination: String?
    public var path: DBusObjectPath?
    public var interface: String?
    public var member: String?
    public var errorName: String?
    public var noReplyExpected = false
    public var body: [DBusValue] = []

    public init(kind: Kind) {
        self.kind = kind
    }

    /// The signature of the body.
    public var signature: String { body.map(\.signature).joined() }

    /// A method call.
    public static func methodCall(
        destination: String?, path: DBusObjectPath, interface: String?, member: String, body: [DBusValue]
    ) -> DBusMessage {
        var message = DBusMessage(kind: .methodCall)
        message.destination = destination
        message.path = path
        message.interface = interface
        message.member = member
        message.body = body
        return message
    }

    /// A signal.
    public static func signal(path: DBusObjectPath, interface: String, member: String, body: [DBusValue]) -> DBusMessage {
        var message = DBusMessage(kind: .signal)
        message.path = path
        message.interface = interface
        message.member = member
        message.body = body
        return message
    }

    /// The reply to this call carrying `body`.
    public func reply(_ body: [DBusValue]) -> DBusMessage {
        var message = DBusMessage(kind: .methodReturn)
        message.replySerial = serial
        message.destination = sender
        message.body = body
        return message
    }

    /// The error reply to this call.
    public func errorReply(_ error: DBusError) -> DBusMessage {
        var message = DBusMessage(kind: .error)
        message.replySerial = serial
        message.destination = sender
        message.errorName = error.name
        message.body = [.string(error.message)]
        return message
    }

    /// The error this message carries, when it is an error reply.
    public var error: DBusError? {
        guard kind == .error else { return nil }
        return DBusError(name: errorName ?? DBusError.failedName, message: body.first?.string ?? "")
    }
}

// MARK: - Conversion to and from libdbus (reactor thread only)

extension DBusMessage {
    /// The message's wire bytes, little-endian, as libdbus marshals it with `serial`.
    /// - Throws: ``DBusError`` when a value cannot be marshalled.
    public func marshalled(serial: UInt32 = 1) throws(DBusError) -> [UInt8] {
        let cMessage = try makeCMessage()
        defer { dbus_message_unref(cMessage) }
        dbus_message_set_serial(cMessage, serial)
        var buffer: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(cMessage, &buffer, &length) != 0, let buffer else {
            throw DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "cannot marshal \(member ?? "message")")
        }
        defer { dbus_free(buffer) }
        return Array(UnsafeRawBufferPointer(start: buffer, count: Int(length)))
    }

    /// Builds a libdbus message; the caller owns the returned reference.
    func makeCMessage() throws(DBusError) -> OpaquePointer {
        let pointer: OpaquePointer?
        switch kind {
        case .methodCall:
            pointer = dbus_message_new(MR_DBUS_MESSAGE_TYPE_METHOD_CALL)
        case .methodReturn:
            pointer = dbus_message_new(MR_DBUS_MESSAGE_TYPE_METHOD_RETURN)
        case .error:
            pointer = dbus_message_new(MR_DBUS_MESSAGE_TYPE_ERROR)
        case .signal:
            pointer = dbus_message_new(MR_DBUS_MESSAGE_TYPE_SIGNAL)
        }
        guard let message = pointer else { throw DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "out of memory") }
        var ok = true
        if let path { ok = ok && dbus_message_set_path(message, path.rawValue) != 0 }
        if let sender { ok = ok && dbus_message_set_sender(message, sender) != 0 }
        if let interface { ok = ok && dbus_message_set_interface(message, interface) != 0 }
        if let member { ok = ok && dbus_message_set_member(message, member) != 0 }
        if let destination { ok = ok && dbus_message_set_destination(message, destination) != 0 }
        if let errorName { ok = ok && dbus_message_set_error_name(message, errorName) != 0 }
        if replySerial != 0 { ok = ok && dbus_message_set_reply_serial(message, replySerial) != 0 }
        if noReplyExpected { dbus_message_set_no_reply(message, 1) }
        guard ok else {
            dbus_message_unref(message)
            throw DBusError.invalidArgs("invalid header field in \(member ?? errorName ?? "message")")
        }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(message, &iterator)
        do {
            for value in body { try Self.append(value, to: &iterator) }
        } catch {
            dbus_message_unref(message)
            throw error
        }
        return message
    }

    private static func appendBasic<T>(_ type: Int32, _ value: T, to iterator: inout DBusMessageIter) throws(DBusError) {
        var copy = value
        guard withUnsafePointer(to: &copy, { dbus_message_iter_append_basic(&iterator, type, $0) }) != 0 else {
            throw DBusError.invalidArgs("cannot append a value of type \(Character(UnicodeScalar(UInt8(type))))")
        }
    }

    private static func appendString(_ type: Int32, _ string: String, to iterator: inout DBusMessageIter) throws(DBusError) {
        let ok = string.withCString { cString -> Bool in
            var pointer: UnsafePointer<CChar>? = cString
            return withUnsafePointer(to: &pointer) { dbus_message_iter_append_basic(&iterator, type, $0) } != 0
        }
        guard ok else { throw DBusError.invalidArgs("invalid string for type \(Character(UnicodeScalar(UInt8(type)))): \(string)") }
    }

    static func append(_ value: DBusValue, to iterator: inout DBusMessageIter) throws(DBusError) {
        switch value {
        case .byte(let v): try appendBasic(MR_DBUS_TYPE_BYTE, v, to: &iterator)
        case .bool(let v): try appendBasic(MR_DBUS_TYPE_BOOLEAN, dbus_bool_t(v ? 1 : 0), to: &iterator)
        case .int16(let v): try appendBasic(MR_DBUS_TYPE_INT16, v, to: &iterator)
        case .uint16(let v): try appendBasic(MR_DBUS_TYPE_UINT16, v, to: &iterator)
        case .int32(let v): try appendBasic(MR_DBUS_TYPE_INT32, v, to: &iterator)
        case .uint32(let v): try appendBasic(MR_DBUS_TYPE_UINT32, v, to: &iterator)
        case .int64(let v): try appendBasic(MR_DBUS_TYPE_INT64, v, to: &iterator)
        case .uint64(let v): try appendBasic(MR_DBUS_TYPE_UINT64, v, to: &iterator)
        case .double(let v): try appendBasic(MR_DBUS_TYPE_DOUBLE, v, to: &iterator)
        case .string(let v):
            guard dbus_validate_utf8(v, nil) != 0, !v.utf8.contains(0) else { throw DBusError.invalidArgs("string is not valid UTF-8") }
            try appendString(MR_DBUS_TYPE_STRING, v, to: &iterator)
        case .objectPath(let v): try appendString(MR_DBUS_TYPE_OBJECT_PATH, v.rawValue, to: &iterator)
        case .signature(let v):
            guard dbusSplitSignature(v) != nil || v.isEmpty else { throw DBusError.invalidArgs("invalid signature \(v)") }
            try appendString(MR_DBUS_TYPE_SIGNATURE, v, to: &iterator)
        case .unixFD(let fd): try appendBasic(MR_DBUS_TYPE_UNIX_FD, fd.rawValue, to: &iterator)
        case .array(let element, let values):
            guard dbusSplitSignature(element)?.count == 1 else { throw DBusError.invalidArgs("invalid array element type \(element)") }
            for item in values where item.signature != element {
                throw DBusError.invalidArgs("array of \(element) holds a \(item.signature)")
            }
            try container(MR_DBUS_TYPE_ARRAY, element, &iterator) { (sub) throws(DBusError) in
                for item in values { try append(item, to: &sub) }
            }
        case .dictionary(let key, let valueType, let entries):
            let entrySignature = "{" + key + valueType + "}"
            guard dbusSplitSignature("a" + entrySignature)?.count == 1 else {
                throw DBusError.invalidArgs("invalid dictionary type a\(entrySignature)")
            }
            try container(MR_DBUS_TYPE_ARRAY, entrySignature, &iterator) { (sub) throws(DBusError) in
                for entry in entries {
                    guard entry.key.signature == key, entry.value.signature == valueType else {
                        throw DBusError.invalidArgs("dictionary a\(entrySignature) holds {\(entry.key.signature)\(entry.value.signature)}")
                    }
                    try container(MR_DBUS_TYPE_DICT_ENTRY, nil, &sub) { (pair) throws(DBusError) in
                        try append(entry.key, to: &pair)
                        try append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusError.invalidArgs("empty structure") }
            try container(MR_DBUS_TYPE_STRUCT, nil, &iterator) { (sub) throws(DBusError) in
                for field in fields { try append(field, to: &sub) }
            }
        case .variant(let inner):
            try container(MR_DBUS_TYPE_VARIANT, inner.signature, &iterator) { (sub) throws(DBusError) in
                try append(inner, to: &sub)
            }
        }
    }

    private static func container(
        _ type: Int32, _ signature: String?, _ iterator: inout DBusMessageIter,
        _ body: (inout DBusMessageIter) throws(DBusError) -> Void
    ) throws(DBusError) {
        var sub = DBusMessageIter()
        let opened: Bool
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iterator, type, $0, &sub) } != 0
        } else {
            opened = dbus_message_iter_open_container(&iterator, type, nil, &sub) != 0
        }
        guard opened else { throw DBusError.invalidArgs("cannot open container \(signature ?? "")") }
        do {
            try body(&sub)
        } catch {
            dbus_message_iter_abandon_container(&iterator, &sub)
            throw error
        }
        guard dbus_message_iter_close_container(&iterator, &sub) != 0 else {
            throw DBusError.invalidArgs("cannot close container \(signature ?? "")")
        }
    }

    /// Reads a libdbus message into a value.
    init(cMessage message: OpaquePointer) {
        switch dbus_message_get_type(message) {
        case MR_DBUS_MESSAGE_TYPE_METHOD_CALL: kind = .methodCall
        case MR_DBUS_MESSAGE_TYPE_METHOD_RETURN: kind = .methodReturn
        case MR_DBUS_MESSAGE_TYPE_ERROR: kind = .error
        default: kind = .signal
        }
        serial = dbus_message_get_serial(message)
        replySerial = dbus_message_get_reply_serial(message)
        sender = dbus_message_get_sender(message).map { String(cString: $0) }
        destination = dbus_message_get_destination(message).map { String(cString: $0) }
        path = dbus_message_get_path(message).flatMap { DBusObjectPath(String(cString: $0)) }
        interface = dbus_message_get_interface(message).map { String(cString: $0) }
        member = dbus_message_get_member(message).map { String(cString: $0) }
        errorName = dbus_message_get_error_name(message).map { String(cString: $0) }
        noReplyExpected = dbus_message_get_no_reply(message) != 0
        var iterator = DBusMessageIter()
        var values: [DBusValue] = []
        if dbus_message_iter_init(message, &iterator) != 0 {
            repeat {
                guard let value = Self.read(&iterator) else { break }
                values.append(value)
            } while dbus_message_iter_next(&iterator) != 0
        }
        body = values
    }

    private static func readBasic<T>(_ iterator: inout DBusMessageIter, _ initial: T) -> T {
        var value = initial
        withUnsafeMutablePointer(to: &value) { dbus_message_iter_get_basic(&iterator, $0) }
        return value
    }

    private static func readString(_ iterator: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>? = nil
        withUnsafeMutablePointer(to: &pointer) { dbus_message_iter_get_basic(&iterator, $0) }
        return pointer.map { String(cString: $0) } ?? ""
    }

    private static func signature(of iterator: inout DBusMessageIter) -> String {
        guard let raw = dbus_message_iter_get_signature(&iterator) else { return "" }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }

    /// The signature of a basic type code, without asking libdbus (which allocates).
    private static func basicSignature(_ type: Int32) -> String? {
        switch type {
        case MR_DBUS_TYPE_BYTE: "y"
        case MR_DBUS_TYPE_BOOLEAN: "b"
        case MR_DBUS_TYPE_INT16: "n"
        case MR_DBUS_TYPE_UINT16: "q"
        case MR_DBUS_TYPE_INT32: "i"
        case MR_DBUS_TYPE_UINT32: "u"
        case MR_DBUS_TYPE_INT64: "x"
        case MR_DBUS_TYPE_UINT64: "t"
        case MR_DBUS_TYPE_DOUBLE: "d"
        case MR_DBUS_TYPE_STRING: "s"
        case MR_DBUS_TYPE_OBJECT_PATH: "o"
        case MR_DBUS_TYPE_SIGNATURE: "g"
        case MR_DBUS_TYPE_UNIX_FD: "h"
        case MR_DBUS_TYPE_VARIANT: "v"
        default: nil
        }
    }

    static func read(_ iterator: inout DBusMessageIter) -> DBusValue? {
        switch dbus_message_iter_get_arg_type(&iterator) {
        case MR_DBUS_TYPE_BYTE: return .byte(readBasic(&iterator, UInt8(0)))
        case MR_DBUS_TYPE_BOOLEAN: return .bool(readBasic(&iterator, dbus_bool_t(0)) != 0)
        case MR_DBUS_TYPE_INT16: return .int16(readBasic(&iterator, Int16(0)))
        case MR_DBUS_TYPE_UINT16: return .uint16(readBasic(&iterator, UInt16(0)))
        case MR_DBUS_TYPE_INT32: return .int32(readBasic(&iterator, Int32(0)))
        case MR_DBUS_TYPE_UINT32: return .uint32(readBasic(&iterator, UInt32(0)))
        case MR_DBUS_TYPE_INT64: return .int64(readBasic(&iterator, Int64(0)))
        case MR_DBUS_TYPE_UINT64: return .uint64(readBasic(&iterator, UInt64(0)))
        case MR_DBUS_TYPE_DOUBLE: return .double(readBasic(&iterator, Double(0)))
        case MR_DBUS_TYPE_STRING: return .string(readString(&iterator))
        case MR_DBUS_TYPE_OBJECT_PATH:
            // libdbus validated the message; checking the path again costs more than the rest.
            return .objectPath(DBusObjectPath(validated: readString(&iterator)))
        case MR_DBUS_TYPE_SIGNATURE: return .signature(readString(&iterator))
        case MR_DBUS_TYPE_UNIX_FD:
            // libdbus hands out a dup()ed descriptor that the reader owns.
            let fd = readBasic(&iterator, Int32(-1))
            return fd >= 0 ? .unixFD(DBusFileDescriptor(owning: fd)) : nil
        case MR_DBUS_TYPE_ARRAY:
            let elementType = dbus_message_iter_get_element_type(&iterator)
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            if elementType == MR_DBUS_TYPE_BYTE {
                // Bytes in one call instead of one per element.
                var pointer: UnsafeMutablePointer<UInt8>?
                var count: Int32 = 0
                withUnsafeMutablePointer(to: &pointer) { dbus_message_iter_get_fixed_array(&sub, $0, &count) }
                let bytes = pointer.map { Array(UnsafeBufferPointer(start: $0, count: Int(count))) } ?? []
                return .array(elementSignature: "y", bytes.map(DBusValue.byte))
            }
            if elementType == MR_DBUS_TYPE_DICT_ENTRY {
                let (keySignature, valueSignature) = dictionarySignatures(&iterator)
                var entries: [DBusDictEntry] = []
                while dbus_message_iter_get_arg_type(&sub) != MR_DBUS_TYPE_INVALID {
                    var pair = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &pair)
                    guard let key = read(&pair) else { return nil }
                    dbus_message_iter_next(&pair)
                    guard let value = read(&pair) else { return nil }
                    entries.append(DBusDictEntry(key, value))
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(keySignature: keySignature, valueSignature: valueSignature, entries)
            }
            let element = basicSignature(elementType) ?? String(signature(of: &iterator).dropFirst())
            var items: [DBusValue] = []
            while dbus_message_iter_get_arg_type(&sub) != MR_DBUS_TYPE_INVALID {
                guard let item = read(&sub) else { return nil }
                items.append(item)
                dbus_message_iter_next(&sub)
            }
            return .array(elementSignature: element, items)
        case MR_DBUS_TYPE_STRUCT, MR_DBUS_TYPE_DICT_ENTRY:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            var fields: [DBusValue] = []
            while dbus_message_iter_get_arg_type(&sub) != MR_DBUS_TYPE_INVALID {
                guard let field = read(&sub) else { return nil }
                fields.append(field)
                dbus_message_iter_next(&sub)
            }
            return .structure(fields)
        case MR_DBUS_TYPE_VARIANT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return read(&sub).map(DBusValue.variant)
        default:
            return nil
        }
    }

    /// Key and value signatures of a dictionary array, cached by the array's signature
    /// (the same few — `a{sv}`, `a{sa{sv}}` — come again and again).
    private static func dictionarySignatures(_ iterator: inout DBusMessageIter) -> (String, String) {
        guard let raw = dbus_message_iter_get_signature(&iterator) else { return ("", "") }
        defer { dbus_free(raw) }
        let full = String(cString: raw)
        if let cached = signatureCache.withLock({ $0[full] }) { return cached }
        // "a{" key value "}"
        let inner = String(full.dropFirst(2).dropLast())
        let parts = dbusSplitSignature(inner) ?? []
        let result = parts.count == 2 ? (parts[0], parts[1]) : ("", "")
        signatureCache.withLock { cache in
            if cache.count < 256 { cache[full] = result }
        }
        return result
    }

    private static let signatureCache = Mutex<[String: (String, String)]>([:])
}
