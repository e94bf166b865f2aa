import BlueZTransport
import DBus
import MediaRouteBusAPI

/// D-Bus messages as our own wire reader takes them off the bus socket.
enum DBusHarnesses {
    static let all: [FuzzHarness] = [message, bluezSignal]

    /// Small enough that the fuzzer also meets the size limit.
    static let limit = 64 * 1024

    static let message = FuzzHarness("dbus-message", "whole D-Bus messages: header fields, bodies, signatures, nesting", maximumLength: 96 * 1024) { bytes in
        let decoded = bytes.withUnsafeBytes { buffer in (try? DBusWireReader.decode(buffer, limit: limit)) ?? nil }
        guard let message = decoded else { return nil }
        if bytes.count > limit { return "decoded a message of \(bytes.count) bytes, limit \(limit)" }
        // What the daemon does with a dictionary it is handed: Session1.StartWithMetadata.
        for value in message.body {
            if case .dictionary(keySignature: "s", valueSignature: "v", _) = value { _ = try? SessionMetadataCodec.decode(value) }
            _ = value.signature
        }
        return nil
    }

    /// BlueZ's `InterfacesAdded`, read straight into the object cache's types, every kept
    /// container then decoded, and the device turned into an endpoint, as discovery does.
    static let bluezSignal = FuzzHarness("bluez-interfaces-added", "BlueZ InterfacesAdded signals, typed read and endpoint", maximumLength: 96 * 1024) { bytes in
        bytes.withUnsafeBytes { buffer in
            guard let (_, body) = (try? DBusWireReader.decodeHeader(buffer, limit: limit)) ?? nil, body.hasSignature("oa{sa{sv}}"),
                let (path, interfaces) = try? body.read({ reader throws(DBusWireError) in try BlueZObjectManager.readInterfacesAdded(&reader) })
            else { return }
            for (_, properties) in interfaces {
                for entry in properties { _ = entry.value.signature }
                _ = BlueZTransport.endpoint(path: path, properties: properties)
            }
        }
        return nil
    }
}
