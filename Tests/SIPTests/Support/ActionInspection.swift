import SIP

extension Array {
    /// The messages among these actions, in order.
    func sentMessages<Timer, Event>() -> [SIPMessage] where Element == SIPAction<Timer, Event> {
        compactMap { if case .send(let message) = $0 { message } else { nil } }
    }

    /// The timers started, with their delays.
    func startedTimers<Timer, Event>() -> [Timer: Duration] where Element == SIPAction<Timer, Event> {
        var timers: [Timer: Duration] = [:]
        for case .startTimer(let timer, let delay) in self { timers[timer] = delay }
        return timers
    }

    func cancelledTimers<Timer, Event>() -> [Timer] where Element == SIPAction<Timer, Event> {
        compactMap { if case .cancelTimer(let timer) = $0 { timer } else { nil } }
    }

    func reportedEvents<Timer, Event>() -> [Event] where Element == SIPAction<Timer, Event> {
        compactMap { if case .report(let event) = $0 { event } else { nil } }
    }
}

extension SIPMessage {
    /// A response the way a peer would send it, for feeding state machines.
    func answered(_ statusCode: Int, toTag: String? = "peer", adding headers: [(String, String)] = []) -> SIPMessage {
        var response = SIPMessage.response(to: self, statusCode: statusCode, toTag: toTag)
        for (name, value) in headers { response.headers.add(name, value) }
        return response
    }
}
