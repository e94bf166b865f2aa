public import RoutingModel
public import SessionPlayback

// The values an extension shares with apps are defined once, in RoutingModel (the vocabulary
// at the bottom of the layers), and named here too, so that an extension imports
// MediaDevice alone, as the seeds' MediaDevice framework is used. These are names for the
// same types, not copies: a `MediaOutputSession` is one type wherever it is seen.

/// One activation of a device (``RoutingModel/MediaOutputSession``).
public typealias MediaOutputSession = RoutingModel.MediaOutputSession
/// A protocol's identity (``RoutingModel/MediaSharingProtocol``).
public typealias MediaSharingProtocol = RoutingModel.MediaSharingProtocol
/// An error with a code apps switch on (``RoutingModel/MediaDeviceError``).
public typealias MediaDeviceError = RoutingModel.MediaDeviceError
/// The playback state of a session (``RoutingModel/PlaybackSnapshot``).
public typealias PlaybackSnapshot = RoutingModel.PlaybackSnapshot
/// What is playing (``RoutingModel/PlaybackMetadata``).
public typealias PlaybackMetadata = RoutingModel.PlaybackMetadata
/// An audio track or subtitle (``RoutingModel/MediaSelectionOption``).
public typealias MediaSelectionOption = RoutingModel.MediaSelectionOption
/// A command for the device (``RoutingModel/PlaybackCommand``).
public typealias PlaybackCommand = RoutingModel.PlaybackCommand
/// Media samples on their way to a device (``RoutingModel/SampleBuffer``).
public typealias SampleBuffer = RoutingModel.SampleBuffer
/// What an app's real-time audio is (``RoutingModel/RealtimeNowPlaying``).
public typealias RealtimeNowPlaying = RoutingModel.RealtimeNowPlaying
/// An identity a protocol pinned (``RoutingModel/PinnedIdentity``).
public typealias PinnedIdentity = RoutingModel.PinnedIdentity
/// The live playback of one session, as the extension drives it (``SessionPlayback/PlaybackControl``).
public typealias PlaybackControl = SessionPlayback.PlaybackControl
/// How a route plays (``RoutingModel/RouteStatus``).
public typealias RouteStatus = RoutingModel.RouteStatus
