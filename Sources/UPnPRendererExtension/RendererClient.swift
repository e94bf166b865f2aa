import LANTransport
import Logging
import MediaDevice
import Transport
import UPnP

/// SOAP calls to one renderer's services, every request on the device's own host.
struct RendererClient: Sendable {
    let transport: LANTransport
    let endpoint: Endpoint
    let description: DeviceDescription
    let limits: HTTPLimits

    /// Calls `action` on the service of `kind` (`AVTransport`, `RenderingControl`, `ConnectionManager`).
    /// - Throws: ``MediaDeviceError``: `connectionFailed`/`timedOut` when the device
    ///   cannot be reached, `sessionFailed` with the UPnP error code for a fault.
    func call(_ kind: String, _ action: String, _ arguments: [(String, String)] = []) async throws(MediaDeviceError) -> [String: String] {
        guard let service = description.service(kind) else {
            throw MediaDeviceError(.unsupported, "\(description.friendlyName) has no \(kind) service")
        }
        let body = SOAP.request(action: action, serviceType: service.serviceType, arguments: arguments)
        let response: HTTPResponse
        do {
            response = try await transport.fetch(
                "POST", service.controlURL.description, for: endpoint,
                headers: [
                    ("Content-Type", "text/xml; charset=\"utf-8\""),
                    ("SOAPACTION", SOAP.actionHeader(action: action, serviceType: service.serviceType)),
                ], body: body, limits: limits)
        } catch {
            throw Self.deviceError(error, action: action)
        }
        do {
            return try SOAP.response(status: response.status, body: response.body, action: action)
        } catch {
            throw MediaDeviceError(.sessionFailed, error.description, protocolErrorCode: error.code)
        }
    }

    /// Fetches a document from the device (its SCPDs).
    func get(_ url: HTTPURL) async throws(MediaDeviceError) -> [UInt8] {
        do {
            let response = try await transport.fetch("GET", url.description, for: endpoint, limits: limits)
            guard response.status == 200 else { throw MediaDeviceError(.connectionFailed, "HTTP \(response.status) for \(url.path)") }
            return response.body
        } catch let error as TransportError {
            throw Self.deviceError(error, action: "GET \(url.path)")
        } catch {
            throw error as! MediaDeviceError
        }
    }

    static func deviceError(_ error: TransportError, action: String) -> MediaDeviceError {
        switch error.code {
        case .timedOut: MediaDeviceError(.timedOut, "\(action): \(error.message)")
        case .malformedMessage: MediaDeviceError(.sessionFailed, "\(action): \(error.message)")
        default: MediaDeviceError(.connectionFailed, "\(action): \(error.message)")
        }
    }
}
