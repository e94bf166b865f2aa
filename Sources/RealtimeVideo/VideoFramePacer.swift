/// Turns pictures that arrive when the app writes them into one picture per frame period.
///
/// The first picture shows as it comes; after it a picture is sent at every period's slot: the
/// newest that arrived since the slot before (older ones are dropped: the app wrote faster than
/// it declared), or the last one again when none came (repeated: a screen-cast stream sends a
/// picture only when the screen changes). The slots after the first lie half a period off the
/// writer's pace (the first picture's arrival), so a picture a little late or early still falls
/// in its own period: slots in step with the writer dropped up to one picture in six with both
/// cores busy (each a little late for its slot, then overtaken by the next). A slot missed because the thread was late (the
/// encoder took longer than a period) is not made up: the pace goes on from now.
public struct VideoFramePacer: Sendable, Hashable {
    /// What to send at a slot.
    public enum Action: Sendable, Hashable {
        /// The newest picture that arrived.
        case newest
        /// The picture sent last, again.
        case repeatLast
    }

    public let period: Duration
    /// When the next picture is due; nil before the first picture.
    public private(set) var nextSlot: Duration?
    public private(set) var received: UInt64 = 0
    public private(set) var sent: UInt64 = 0
    public private(set) var dropped: UInt64 = 0
    public private(set) var repeated: UInt64 = 0
    /// Slots passed while the thread was late, none sent.
    public private(set) var missedSlots: UInt64 = 0
    private var pending = false
    private var shownAny = false
    private var phased = false

    public init(period: Duration) {
        precondition(period > .zero)
        self.period = period
    }

    /// A whole picture arrived at `now`.
    public mutating func arrived(at now: Duration) {
        received &+= 1
        if pending { dropped &+= 1 }
        pending = true
        if nextSlot == nil { nextSlot = now }
    }

    /// The picture pending is sent now, out of turn (the writer ended: no slot will come for it).
    public mutating func flushed() {
        guard pending else { return }
        pending = false
        sent &+= 1
        shownAny = true
    }

    /// What to send at `now`, if a slot is due (nil: nothing yet). Moves on to the next slot.
    public mutating func slot(at now: Duration) -> Action? {
        guard let due = nextSlot, now >= due else { return nil }
        let action: Action? = pending ? .newest : (shownAny ? .repeatLast : nil)
        pending = false
        var next = due + period
        if !phased {
            // After the first picture: half a period later, between the writer's arrivals.
            next += period / 2
            phased = true
        }
        if next <= now {
            // Late by a period or more: the slots passed are given up, the pace resumes from now.
            let behind = Int64((now - next) / period) + 1
            missedSlots &+= UInt64(behind)
            next = now + period
        }
        nextSlot = next
        switch action {
        case .newest:
            sent &+= 1
            shownAny = true
        case .repeatLast:
            sent &+= 1
            repeated &+= 1
        case nil:
            break
        }
        return action
    }
}
