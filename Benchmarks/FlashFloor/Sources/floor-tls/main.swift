import NIOCore
import NIOPosix
import NIOSSL

var configuration = TLSConfiguration.makeClientConfiguration()
configuration.certificateVerification = .none
let context = try NIOSSLContext(configuration: configuration)
let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).channelInitializer { channel in
    channel.eventLoop.makeCompletedFuture {
        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: nil))
    }
}.connect(host: "127.0.0.1", port: 8009).get()
try await channel.writeAndFlush(ByteBuffer(string: "hello"))
try await channel.close()
