#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

package enum PushPayload {
    package static func decode<Attributes: Decodable>(_ type: Attributes.Type, from body: [UInt8]) throws(PushRejection) -> PushEnvelope<Attributes>.APS {
        do {
            let aps = try decoder.decode(PushEnvelope<Attributes>.self, from: Data(body)).aps
            guard aps.timestamp.isFinite, aps.timestamp >= 0 else {
                throw PushRejection(.malformedPayload, "timestamp must be seconds since 1970")
            }
            return aps
        } catch let rejection as PushRejection {
            throw rejection
        } catch let error as DecodingError {
            throw PushRejection(.malformedPayload, describe(error))
        } catch {
            throw PushRejection(.malformedPayload, "not JSON")
        }
    }

    /// Dates in attributes as ISO 8601 text (the seeds' payloads) or seconds since 1970.
    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            if let seconds = try? container.decode(Double.self), seconds.isFinite {
                return Date(timeIntervalSince1970: seconds)
            }
            let text = try container.decode(String.self)
            if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
            if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 date")
        }
        return decoder
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let prefix = path(context)
            return "missing \(prefix.isEmpty ? "" : prefix + ".")\(key.stringValue)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type at \(path(context))"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not JSON" : "bad value at \(path(context))"
        @unknown default:
            return "undecodable"
        }
    }
}
