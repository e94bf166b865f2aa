internal import SwiftProtobuf

/// One message on a Cast channel: who sends it, to whom, in which namespace, and its
/// payload (JSON text for every namespace MediaRoute speaks; binary only for device
/// authentication, which is not used).
public struct CastEnvelope: Sendable, Equatable {
    /// The payload as the channel carries it.
    public enum Payload: Sendable, Equatable {
        case text(String)
        case binary([UInt8])
    }

    /// `sender-0` or the sender id of a route; `receiver-0` or a running application's transport id.
    public var sourceID: String
    public var destinationID: String
    /// `urn:x-cast:…`.
    public var namespace: String
    public var payload: Payload

    public init(sourceID: String, destinationID: String, namespace: String, payload: Payload) {
        self.sourceID = sourceID
        self.destinationID = destinationID
        self.namespace = namespace
        self.payload = payload
    }

    /// A JSON message (the payload of every control namespace).
    public init(sourceID: String, destinationID: String, namespace: String, json: String) {
        self.init(sourceID: sourceID, destinationID: destinationID, namespace: namespace, payload: .text(json))
    }

    /// The payload's text, nil for a binary payload.
    public var text: String? {
        if case .text(let text) = payload { return text }
        return nil
    }

    /// The protobuf bytes of the message (no length prefix).
    func protobufBytes() throws(CastChannelError) -> [UInt8] {
        var message = Mediaroute_Cast_CastMessage()
        message.protocolVersion = .castv210
        message.sourceID = sourceID
        message.destinationID = destinationID
        message.namespace = namespace
        switch payload {
        case .text(let text):
            message.payloadType = .string
            message.payloadUtf8 = text
        case .binary(let bytes):
            message.payloadType = .binary
            message.payloadBinary = Data(bytes)
        }
        do {
            return try message.serializedBytes()
        } catch {
            throw CastChannelError(.unencodable, "\(error)")
        }
    }

    /// The message framed for the channel: its length as 4 bytes big-endian, then the protobuf.
    /// - Throws: ``CastChannelError/Code/unencodable`` when it is longer than a receiver takes.
    public func framed() throws(CastChannelError) -> [UInt8] {
        let body = try protobufBytes()
        guard body.count <= CastFrameDecoder.maximumMessageSize else {
            throw CastChannelError(.unencodable, "a message of \(body.count) bytes is over the channel's \(CastFrameDecoder.maximumMessageSize)")
        }
        let length = UInt32(body.count)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + body
    }

    /// A message from its protobuf bytes (no length prefix).
    /// - Throws: ``CastChannelError/Code/malformedMessage`` for anything that is not a whole
    ///   `CastMessage` with its required fields, or whose payload does not match its type.
    public init(protobuf bytes: [UInt8]) throws(CastChannelError) {
        let message: Mediaroute_Cast_CastMessage
        do {
            message = try Mediaroute_Cast_CastMessage(serializedBytes: bytes)
        } catch {
            throw CastChannelError(.malformedMessage, "not a CastMessage (\(bytes.count) bytes): \(error)")
        }
        let payload: Payload
        switch message.payloadType {
        case .string:
            guard message.hasPayloadUtf8 else { throw CastChannelError(.malformedMessage, "a STRING message without its text") }
            payload = .text(message.payloadUtf8)
        case .binary:
            guard message.hasPayloadBinary else { throw CastChannelError(.malformedMessage, "a BINARY message without its bytes") }
            payload = .binary([UInt8](message.payloadBinary))
        }
        self.init(sourceID: message.sourceID, destinationID: message.destinationID, namespace: message.namespace, payload: payload)
    }
}

#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif
