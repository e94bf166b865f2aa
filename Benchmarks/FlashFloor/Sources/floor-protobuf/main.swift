internal import SwiftProtobuf

var message = Mediaroute_Cast_CastMessage()
message.sourceID = "sender-0"
message.destinationID = "receiver-0"
message.namespace = "urn:x-cast:com.google.cast.tp.heartbeat"
message.payloadUtf8 = #"{"type":"PING"}"#
let bytes: [UInt8] = try message.serializedBytes()
let decoded = try Mediaroute_Cast_CastMessage(serializedBytes: bytes)
print(decoded.namespace, bytes.count)
