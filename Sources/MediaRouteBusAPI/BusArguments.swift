import DBus
import RoutingModel

/// Typed reads of call arguments: a missing or mistyped one is `InvalidArgs`, never a default.
struct BusArguments {
    let member: String
    let values: [DBusValue]

    init(_ member: String, _ values: [DBusValue], count: Int) throws(DBusError) {
        guard values.count == count else {
            throw DBusError.invalidArgs("\(member) takes \(count) argument\(count == 1 ? "" : "s"), not \(values.count)")
        }
        self.member = member
        self.values = values
    }

    private func refuse(_ index: Int, _ type: String) -> DBusError {
        DBusError.invalidArgs("\(member): argument \(index + 1) must be \(type)")
    }

    func string(_ index: Int) throws(DBusError) -> String {
        guard let value = values[index].string else { throw refuse(index, "a string") }
        return value
    }

    /// A string where "" means none.
    func optionalString(_ index: Int) throws(DBusError) -> String? {
        let value = try string(index)
        return value.isEmpty ? nil : value
    }

    func bool(_ index: Int) throws(DBusError) -> Bool {
        guard let value = values[index].bool else { throw refuse(index, "a boolean") }
        return value
    }

    func double(_ index: Int) throws(DBusError) -> Double {
        guard let value = values[index].double else { throw refuse(index, "a double") }
        return value
    }

    func int32(_ index: Int) throws(DBusError) -> Int32 {
        guard case .int32(let value) = values[index].unwrapped else { throw refuse(index, "an int32") }
        return value
    }

    func uint32(_ index: Int) throws(DBusError) -> UInt32 {
        guard case .uint32(let value) = values[index].unwrapped else { throw refuse(index, "a uint32") }
        return value
    }

    func objectPath(_ index: Int) throws(DBusError) -> DBusObjectPath {
        guard let value = values[index].objectPath else { throw refuse(index, "an object path") }
        return value
    }

    func fileDescriptor(_ index: Int) throws(DBusError) -> DBusFileDescriptor {
        guard case .unixFD(let value) = values[index].unwrapped else { throw refuse(index, "a file descriptor") }
        return value
    }

    func bytes(_ index: Int) throws(DBusError) -> [UInt8] {
        guard let value = values[index].bytes else { throw refuse(index, "a byte array") }
        return value
    }

    /// A PCM format from three arguments from `index` on: encoding (`s16le`/`f32le`), rate, channels.
    func pcmFormat(at index: Int) throws(DBusError) -> SampleBuffer.Format {
        let name = try string(index)
        guard let encoding = SampleBuffer.Format.Encoding(pcmName: name) else {
            throw MediaDeviceError(.invalidArgument, "encoding must be s16le or f32le, not \(name)").dbusError
        }
        let rate = try uint32(index + 1)
        let channels = try uint32(index + 2)
        guard rate > 0, rate <= 384_000, (1...8).contains(channels) else {
            throw MediaDeviceError(.invalidArgument, "\(rate) Hz with \(channels) channels is not a PCM format").dbusError
        }
        return SampleBuffer.Format(encoding: encoding, sampleRate: Int(rate), channels: Int(channels))
    }

    /// A video format from (s encoding, u width, u height, u rate numerator, u rate denominator) at `index`.
    func videoFormat(at index: Int) throws(DBusError) -> VideoFrameFormat {
        let name = try string(index)
        guard let encoding = VideoFrameFormat.Encoding(rawValue: name) else {
            throw MediaDeviceError(.invalidArgument, "encoding must be i420, nv12 or h264, not \(name.prefix(32))").dbusError
        }
        do {
            return try VideoFrameFormat(
                encoding: encoding, width: Int(try uint32(index + 1)), height: Int(try uint32(index + 2)),
                frameRateNumerator: Int(try uint32(index + 3)), frameRateDenominator: Int(try uint32(index + 4)))
        } catch let error as MediaDeviceError {
            throw error.dbusError
        } catch {
            throw DBusError.invalidArgs("\(error)")
        }
    }
}

extension DBusError {
    static func unknownMember(_ member: String, of interface: String) -> DBusError {
        DBusError(name: DBusError.unknownMethodName, message: "\(interface) has no method \(member)")
    }
}
