public import HTTPServing

/// How an extension sends routes' real-time audio as live streams to the devices that fetch
/// them, by default and per device (by the name it shows): the box's `[audio] live-…` keys.
public struct LiveStreamSettings: Sendable {
    /// Encodings in the order tried against what the device lists.
    public var preference: [LiveAudioEncoding]
    /// Per device: the encoding to use whatever it lists.
    public var forcedEncodings: [String: LiveAudioEncoding]
    /// How a response's length is framed, by default and per device: renderers differ.
    public var framing: HTTPLiveFraming
    public var framings: [String: HTTPLiveFraming]
    /// Audio a device gets at once when it connects (``LiveAudioStream/Configuration/prime``):
    /// what it waits for before it plays, by default and per device name or model (`[audio]
    /// live-prime`); part of the device's latency (``latency(name:model:)`` is at least this).
    public var prime: Duration
    public var primes: [String: Duration]
    /// How long a device told to play may take to fetch before the route fails.
    public var fetchTimeout: Duration
    /// The delay from delivery to the device's output, where the device reports no precise
    /// position: a calibrated constant per device kind, by default and per device name or model,
    /// measured at delivery's default period (a longer one adds to it in the route system).
    public var latency: Duration
    public var latencies: [String: Duration]
    /// How often the route's audio is handed to the stream (`RealtimeAudioSupport.deliveryPeriod`):
    /// 100 ms, a fifth of the wake-ups of delivery's 20 ms (3.4 % of a core per LPCM stream
    /// then, 1.2 % at 60 ms: Docs/benchmarks.md), inside any renderer's buffer.
    public var deliveryPeriod: Duration = .milliseconds(100)
    /// How long a device started when the app acquired the route's audio waits for the first
    /// samples: then it is stopped (a renderer's HTTP source gives up by itself after 15 s or
    /// so, silently) and started again when they come, as if it had not been started before.
    public var preparedWait: Duration = .seconds(5)
    /// How a device's clock drift is estimated from its positions and corrected (nil: never).
    public var drift: PlayoutRateEstimator.Configuration? = PlayoutRateEstimator.Configuration()
    /// How old a device's whole-second position may be when it answers, per device name or model
    /// (``PlayoutRateEstimator/Configuration/positionAge``; the drift configuration's otherwise).
    public var positionAges: [String: Duration]
    /// How often a device that reports positions only when asked (Cast) is asked while it plays
    /// a live stream. UPnP renderers are polled at their session's poll interval.
    public var positionInterval: Duration = .seconds(5)
    /// How far off its timeline a device may play, once its drift is corrected, before the route
    /// says so (an event and a warning): a group member beyond it is out of step with the others.
    public var timelinePrecision: Duration = .milliseconds(50)

    public init(
        preference: [LiveAudioEncoding] = LiveAudioEncoding.latencyOrder, forcedEncodings: [String: LiveAudioEncoding] = [:],
        framing: HTTPLiveFraming = .closeDelimited, framings: [String: HTTPLiveFraming] = [:], prime: Duration = .milliseconds(500),
        primes: [String: Duration] = [:], fetchTimeout: Duration = .seconds(5), latency: Duration = .milliseconds(1000), latencies: [String: Duration] = [:],
        positionAges: [String: Duration] = [:]
    ) {
        self.positionAges = positionAges
        self.preference = preference
        self.forcedEncodings = forcedEncodings
        self.framing = framing
        self.framings = framings
        self.prime = prime
        self.primes = primes
        self.fetchTimeout = fetchTimeout
        self.latency = latency
        self.latencies = latencies
    }

    /// The latency of a device: by its name, else by its model, else the default — and at
    /// least its prime, which it holds before it plays.
    public func latency(name: String, model: String? = nil) -> Duration {
        max(latencies[name] ?? model.flatMap { latencies[$0] } ?? latency, prime(name: name, model: model))
    }

    /// The prime of a device: by its name, else by its model, else the default.
    public func prime(name: String, model: String? = nil) -> Duration {
        primes[name] ?? model.flatMap { primes[$0] } ?? prime
    }

    /// The framing of a device's responses.
    public func framing(name: String) -> HTTPLiveFraming { framings[name] ?? framing }

    /// The stream's timings for a device.
    public func streamConfiguration(name: String, model: String? = nil) -> LiveAudioStream.Configuration {
        var drift = self.drift
        if let age = positionAges[name] ?? model.flatMap({ positionAges[$0] }) { drift?.positionAge = age }
        return LiveAudioStream.Configuration(prime: prime(name: name, model: model), framing: framing(name: name), drift: drift)
    }

    /// How long a device that was sent the end of a stream may take to play it out: the audio
    /// kept, and its latency. It is told to stop after that.
    public func drainTime(name: String, model: String? = nil) -> Duration {
        LiveAudioStream.Configuration().kept + latency(name: name, model: model)
    }
}
