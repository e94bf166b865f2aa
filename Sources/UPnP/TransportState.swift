

/// The transport states of AVTransport.
public enum TransportState: String, Sendable, Hashable {
    case stopped = "STOPPED"
    case playing = "PLAYING"
    case paused = "PAUSED_PLAYBACK"
    case transitioning = "TRANSITIONING"
    case noMediaPresent = "NO_MEDIA_PRESENT"
    case recording = "RECORDING"
    case pausedRecording = "PAUSED_RECORDING"
}
