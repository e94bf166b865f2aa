import Logging
package import NIOCore
package import NIOHTTP1
import NIOPosix
import Transport

/// Gathers one response; fails it when the body outgrows the limit or the peer hangs up early.
package final class ResponseCollector: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = HTTPClientResponsePart
    package typealias OutboundOut = HTTPClientRequestPart

    private let limit: Int
    private let promise: EventLoopPromise<HTTPResponse>
    private let request: HTTPRequestHead
    private let body: [UInt8]
    private var response: HTTPResponse?

    package init(limit: Int, promise: EventLoopPromise<HTTPResponse>, request: HTTPRequestHead, body: [UInt8]) {
        self.limit = limit
        self.promise = promise
        self.request = request
        self.body = body
    }

    package func channelActive(context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(request)), promise: nil)
        if !body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            var headers: [String: String] = [:]
            for (name, value) in head.headers {
                let key = name.lowercased()
                headers[key] = headers[key].map { $0 + ", " + value } ?? value
            }
            if let length = headers["content-length"].flatMap({ Int($0) }), length > limit {
                fail(context, TransportError(.malformedMessage, "answer of \(length) bytes (limit \(limit))"))
                return
            }
            response = HTTPResponse(status: Int(head.status.code), headers: headers)
        case .body(let buffer):
            guard response != nil else { return }
            guard response!.body.count + buffer.readableBytes <= limit else {
                fail(context, TransportError(.malformedMessage, "answer longer than \(limit) bytes"))
                return
            }
            response!.body.append(contentsOf: buffer.readableBytesView)
        case .end:
            if let response { promise.succeed(response) }
            self.response = nil
            context.close(promise: nil)
        }
    }

    package func channelInactive(context: ChannelHandlerContext) {
        promise.fail(TransportError(.connectionLost, "the device closed the connection before a whole answer"))
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parserError = error as? HTTPParserError, parserError == .invalidEOFState {
            fail(context, TransportError(.connectionLost, "the device closed the connection in the middle of its answer"))
            return
        }
        fail(context, TransportError(.malformedMessage, "bad HTTP answer: \(error)"))
    }

    private func fail(_ context: ChannelHandlerContext, _ error: TransportError) {
        response = nil
        promise.fail(error)
        context.close(promise: nil)
    }
}
