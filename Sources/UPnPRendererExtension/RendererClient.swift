import IPNetwork
import LANTransport
import Logging
import MediaClock
import MediaDevice
import RoutingModel
import Synchronization
import Transport
internal import UPnP

/// SOAP calls to one renderer's services, every request on the device's own host.
struct RendererClient: Sendable {
    let transport: LANTransport
    /// What the retry waits on.
    let clock: any HostClock
    let endpoint: Endpoint
    let description: DeviceDescription
    let limits: HTTPLimits
    /// Requests in flight to this device, at most two: small device web servers (libupnp's
    /// among them) close connections they have no worker for, without an answer.
    let gate = RequestGate(width: 2)

    /// One request through the gate; a connection the device closed without answering is
    /// tried once more after 50 ms (an overloaded device, not a dead one: that is refused).
    func fetch(_ method: String, _ url: String, headers: [(String, String)] = [], body: [UInt8] = []) async throws(TransportError) -> HTTPResponse {
        await gate.acquire()
        defer { gate.release() }
        do {
            return try await transport.fetch(method, url, for: endpoint, headers: headers, body: body, limits: limits)
        } catch where error.code == .connectionLost {
            try? await clock.sleep(for: .milliseconds(50))
            return try await transport.fetch(method, url, for: endpoint, headers: headers, body: body, limits: limits)
        }
    }

    /// Calls a typed action on its service (`AVTransport`, `RenderingControl`, `ConnectionManager`).
    /// - Throws: ``MediaDeviceError``: `connectionFailed`/`timedOut` when the device
    ///   cannot be reached, `sessionFailed` with the UPnP error code for a fault.
    func call<Action: RendererAction>(_ typed: Action) async throws(MediaDeviceError) -> [String: String] {
        let kind = Action.service
        let action = typed.name
        guard let service = description.service(kind) else {
            throw MediaDeviceError(.unsupported, "\(description.friendlyName) has no \(kind) service")
        }
        let body = SOAP.request(action: action, serviceType: service.serviceType, arguments: typed.arguments.map { ($0.name, $0.value) })
        let response: HTTPResponse
        do {
            response = try await fetch(
                "POST", service.controlURL.description,
                headers: [
                    ("Content-Type", "text/xml; charset=\"utf-8\""),
                    ("SOAPACTION", SOAP.actionHeader(action: action, serviceType: service.serviceType)),
                ], body: body)
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
            let response = try await fetch("GET", url.description)
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

/// An async semaphore: at most `width` holders at once, the rest wait in order.
/// The uncontended path takes a lock and no task hop (it sits on every request).
final class RequestGate: Sendable {
    private struct State {
        var holders = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let width: Int
    private let state = Mutex(State())

    init(width: Int) { self.width = width }

    func acquire() async {
        let admitted = state.withLock { state -> Bool in
            guard state.holders < width else { return false }
            state.holders += 1
            return true
        }
        if admitted { return }
        await withCheckedContinuation { continuation in
            // Re-checked under the lock: a release may have come in between.
            let admittedNow = state.withLock { state -> Bool in
                if state.holders < width {
                    state.holders += 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if admittedNow { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.holders -= 1
                return nil
            }
            return state.waiting.removeFirst()  // the slot passes straight to the next waiter
        }
        next?.resume()
    }
}
