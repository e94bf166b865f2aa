import BluetoothAudio
import BlueZTransport
import DBus
import MediaRouteBusAPI

/// D-Bus messages as our own wire reader takes them off the bus socket.
enum DBusHarnesses {
    static let all: [FuzzHarness] = [message, bluezSignal, bleVolume, a2dpCapabilities]

    /// A speaker's capabilities for every codec the source offers (SBC, AAC, aptX, aptX HD,
    /// LDAC; the first byte picks one) as BlueZ hands them to `SelectConfiguration`, and the
    /// configuration `SetConfiguration` or a transport's `Configuration` hands back: the choice
    /// must lie within the offer and what the source offers; a configuration from the wire,
    /// whatever its bytes, makes an encoder or a typed error, never a crash.
    static let a2dpCapabilities = FuzzHarness("a2dp-capabilities", "A2DP capabilities and configurations of every codec from a speaker", maximumLength: 64) { bytes in
        guard let selector = bytes.first else { return nil }
        let codecs = A2DPCodec.allCases
        let codec = codecs[Int(selector) % codecs.count]
        let rest = Array(bytes.dropFirst())
        let length = codec.sourceCapabilities.count
        let offered = Array(rest.prefix(length))
        if let chosen = try? codec.configuration(from: offered) {
            if !codec.accepts(chosen) { return "\(codec): chose \(chosen) outside what the source offers" }
            if A2DPCodec(codecByte: codec.codecByte, configuration: chosen) != codec { return "\(codec): \(chosen) is not recognised as \(codec)" }
            if codec.sampleRate(chosen) == nil { return "\(codec): \(chosen) has no sampling rate" }
            switch codec {
            case .sbc: if SBCCapabilities(bytes: chosen)?.isConfiguration(within: SBCCapabilities(bytes: offered)!) != true { return "SBC outside the offer" }
            case .aac: if AACCapabilities(bytes: chosen)?.isConfiguration(within: AACCapabilities(bytes: offered)!) != true { return "AAC outside the offer" }
            case .ldac: if LDACCapabilities(bytes: chosen)?.isConfiguration(within: LDACCapabilities(bytes: offered)!) != true { return "LDAC outside the offer" }
            case .aptx, .aptxHD:
                if AptXCapabilities(bytes: chosen, highDefinition: codec == .aptxHD)?.isConfiguration(within: AptXCapabilities(bytes: offered, highDefinition: codec == .aptxHD)!) != true { return "aptX outside the offer" }
            }
        }
        // A configuration straight off the wire (a transport's Codec and Configuration), any MTU.
        let configuration = Array(rest.dropFirst(length).prefix(length))
        _ = A2DPCodec(codecByte: selector, configuration: configuration)
        _ = codec.bitrate(configuration)
        let mtu = Int(rest.last ?? 0) * 8
        if codec.accepts(configuration), codec.missingLibrary() == nil,
            let encoder = try? makeBluetoothAudioEncoder(codec, configuration: configuration, mtu: mtu)
        {
            let packets = (try? encoder.packets(from: [UInt8](repeating: 0x55, count: 4_096))) ?? []
            if let large = packets.first(where: { $0.count > mtu }) { return "\(codec): a packet of \(large.count) bytes for an MTU of \(mtu)" }
        }
        return nil
    }

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
        // The bus API's decoders, as the daemon reads a call and the client reads properties and signals:
        // a decoded call must encode back to a call that decodes the same.
        let member = message.member ?? ""
        if let call = try? Device1.Call(member: member, arguments: message.body),
            (try? Device1.Call(member: call.member, arguments: call.arguments)) != call
        { return "Device1.\(member) does not round-trip" }
        if let call = try? Manager1.Call(member: member, arguments: message.body),
            (try? Manager1.Call(member: call.member, arguments: call.arguments)) != call
        { return "Manager1.\(member) does not round-trip" }
        if let call = try? Group1.Call(member: member, arguments: message.body),
            (try? Group1.Call(member: call.member, arguments: call.arguments)) != call
        { return "Group1.\(member) does not round-trip" }
        _ = try? Session1.Call(member: member, arguments: message.body)
        _ = try? Push1.Call(member: member, arguments: message.body)
        _ = try? PairingAgent1.Request(arguments: message.body)
        // The reply the client reads for `mediaroutectl trust list`.
        if let entries = try? Manager1.pinnedIdentities(fromReply: message.body),
            (try? Manager1.pinnedIdentities(fromReply: Manager1.trustReply(entries))) != entries
        { return "a ListTrust reply does not round-trip" }
        _ = Session1.Signal(member: member, body: message.body)
        _ = Push1.CommandRequested(body: message.body)
        if let properties = message.body.first?.dictionary {
            if var device = Device1.Properties(values: properties) {
                device.apply(properties)
                _ = device.systemDevice
                if Device1.Properties(values: device.values) != device { return "Device1 properties do not round-trip" }
            }
            _ = Session1.Properties(values: properties)
            _ = Manager1.Properties(values: properties)
            let group = Group1.Properties(values: properties)
            if Group1.Properties(values: group.values) != group { return "Group1 properties do not round-trip" }
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

    /// A speaker's Volume Control Service values and BlueZ's error texts: the first
    /// byte splits the input into a Volume State read, then control point operations
    /// and notifications (one byte each: an opcode, or a new state from what follows),
    /// then an error message as BlueZ could send it.
    static let bleVolume = FuzzHarness("ble-volume", "VCS Volume State, control point operations, BlueZ error texts", maximumLength: 4096) { bytes in
        guard let first = bytes.first else { return nil }
        let split = min(Int(first), bytes.count - 1)
        var control = VolumeControl()
        var rest = bytes[1...].prefix(split)
        control.received(Array(rest.prefix(3)))
        rest = rest.dropFirst(3)
        while let byte = rest.popFirst() {
            if let opcode = VolumeControl.Opcode(rawValue: byte % 8) {
                guard let before = control.state else { continue }
                let volume = rest.first
                guard let value = control.write(opcode, volume: volume) else {
                    if opcode == .setAbsolute && volume == nil { continue }
                    return "no control point value for \(opcode) with a known state"
                }
                if value[0] != opcode.rawValue || value[1] != before.changeCounter { return "write \(value) for \(opcode) at counter \(before.changeCounter)" }
                control.accepted(opcode, volume: volume)
                if control.state?.changeCounter != before.changeCounter &+ 1 { return "the counter did not move on by one" }
            } else {
                let state = Array(rest.prefix(3))
                rest = rest.dropFirst(3)
                let before = control.state
                if control.received(state) == nil, control.state != before { return "a malformed state changed the state" }
            }
        }
        let message = String(decoding: bytes.dropFirst(1 + split), as: UTF8.self)
        let error = BlueZError(DBusError(name: "org.bluez.Error.Failed", message: message))
        _ = error.attErrorCode
        if let reason = error.connectionFailureReason, message.split(separator: " ").first.map(String.init) != reason {
            return "reason \(reason) is not the message's first word"
        }
        return nil
    }
}
