import NIOCore
import NIOHTTP1
import NIOPosix

final class Responses: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPClientResponsePart
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) { print(head.status.code) }
    }
}

let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).channelInitializer { channel in
    channel.eventLoop.makeCompletedFuture {
        try channel.pipeline.syncOperations.addHTTPClientHandlers()
        try channel.pipeline.syncOperations.addHandler(Responses())
    }
}.connect(host: "127.0.0.1", port: 9).get()
try await channel.writeAndFlush(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")))
try await channel.close()
