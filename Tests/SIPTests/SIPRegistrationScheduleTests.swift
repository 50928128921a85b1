import SIP
import Testing

/// How a phone that is suspended between wakes keeps its registration alive.
@Suite struct SIPRegistrationScheduleTests {
    private typealias Schedule = SIPRegistrationSchedule

    @Test func aLongGrantKeepsThePreferredWakeInterval() {
        let schedule = Schedule(granted: 3600, policy: .init(preferred: 600, shortest: 600))
        #expect(schedule.wakeInterval == 600 && !schedule.isWakeIntervalLowered && schedule.coversGrant)
        #expect(schedule.refreshDelay == 2970, "refresh + wake + the 30 s margin fit in the grant")
    }

    @Test func aShortGrantLowersTheWakeIntervalWhenThePolicyPermits() {
        let schedule = Schedule(granted: 20, policy: .init(preferred: 600, shortest: 5))
        #expect(schedule.isWakeIntervalLowered && schedule.coversGrant)
        #expect(schedule.wakeInterval == 9 && schedule.refreshDelay == 9)
        #expect(schedule.refreshDelay + schedule.wakeInterval <= 20 - Schedule.margin(forGranted: 20))
    }

    @Test func aTinyGrantKeepsTwoSecondsInHandForARegistrarCountingWholeSeconds() {
        // Kamailio's binding of 6 s made at 10.9 s ends at 16 s (its clock said 10): 5.1 s.
        let schedule = Schedule(granted: 6, policy: .init(preferred: 600, shortest: 2))
        #expect(Schedule.margin(forGranted: 6) == 2)
        #expect(schedule.coversGrant && schedule.wakeInterval == 2 && schedule.refreshDelay == 2)
        #expect(schedule.refreshDelay + schedule.wakeInterval <= 6 - 1 - 1, "a second lost to the registrar's clock, one for the wake and the REGISTER")
    }

    @Test func theShortestPermittedIntervalIsUsedWhenItStillFits() {
        let schedule = Schedule(granted: 1200, policy: .init(preferred: 3600, shortest: 600))
        #expect(schedule.wakeInterval == 600 && schedule.refreshDelay == 570 && schedule.coversGrant && schedule.isWakeIntervalLowered)
    }

    @Test func aGrantShorterThanTheShortestPermittedWakeSaysHowLongThePhoneMayLapse() {
        let schedule = Schedule(granted: 20, policy: .init(preferred: 600, shortest: 600))
        #expect(!schedule.coversGrant)
        #expect(schedule.wakeInterval == 600, "as often as the policy permits")
        #expect(schedule.refreshDelay == 9)
        #expect(schedule.lapse == 9 + 600 - 18)
    }

    @Test func everyGrantIsEitherCoveredOrReportsALapse() {
        for granted in [1, 2, 5, 20, 59, 60, 61, 119, 600, 630, 661, 1199, 3600, 86_400] {
            for (preferred, shortest) in [(600, 600), (600, 60), (60, 60), (3600, 600), (30, 600)] {
                let schedule = Schedule(granted: granted, policy: .init(preferred: preferred, shortest: shortest))
                let usable = max(1, granted - Schedule.margin(forGranted: granted))
                #expect(schedule.wakeInterval >= shortest && schedule.refreshDelay >= 1)
                #expect(schedule.wakeInterval <= max(preferred, shortest))
                if schedule.coversGrant {
                    #expect(schedule.refreshDelay + schedule.wakeInterval <= usable, "\(granted) \(preferred) \(shortest)")
                } else {
                    #expect(schedule.lapse == schedule.refreshDelay + schedule.wakeInterval - usable, "\(granted) \(preferred) \(shortest)")
                }
            }
        }
    }

    /// What the softphone tells voipd with its keep-alive (`reachableFor`): voipd's warning
    /// names it as the keep-alive minimum that would cover the grant, so it must.
    @Test func reachableForIsTheLongestWakeThatCoversTheGrant() {
        #expect(Schedule(granted: 6, policy: .init(preferred: 600, shortest: 2)).reachableFor == 2)
        #expect(Schedule(granted: 20, policy: .init(preferred: 600, shortest: 600)).reachableFor == 9)
        for granted in [4, 5, 6, 20, 59, 60, 61, 119, 600, 630, 661, 1199, 3600] {
            for (preferred, shortest) in [(600, 600), (600, 60), (60, 60), (3600, 600)] {
                let schedule = Schedule(granted: granted, policy: .init(preferred: preferred, shortest: shortest))
                #expect(schedule.reachableFor == schedule.wakeInterval - schedule.lapse)
                #expect(schedule.coversGrant == (schedule.reachableFor >= schedule.wakeInterval))
                let lowered = Schedule(granted: granted, policy: .init(preferred: preferred, shortest: schedule.reachableFor))
                #expect(lowered.coversGrant, "a minimum of \(schedule.reachableFor) s covers a grant of \(granted) s")
            }
        }
    }

    @Test func theExpiryAskedForCoversTheWakeInterval() {
        let policy = Schedule.WakePolicy(preferred: 600, shortest: 600)
        #expect(Schedule.requestedExpiry(configured: 3600, policy: policy) == 3600)
        let asked = Schedule.requestedExpiry(configured: 300, policy: policy)
        #expect(asked == 660)
        #expect(Schedule(granted: asked, policy: policy).coversGrant && !Schedule(granted: asked, policy: policy).isWakeIntervalLowered)
    }

    @Test func theCalleeSchedulesItsRefreshAndAsksForEnough() {
        let configuration = SIPCallee.Configuration(
            user: "alice", domain: "127.0.0.1:5070", expires: 300, wakePolicy: .init(preferred: 600, shortest: 10))
        var callee = SIPCallee(configuration: configuration)
        let register = callee.register().sentMessages()[0]
        #expect(register.expires == 660, "asked to cover the keep-alive")
        let actions = callee.receive(register.answered(200, adding: [("Contact", "<sip:alice@alice.invalid;transport=tcp>;expires=40")]))
        #expect(actions.reportedEvents() == [.registered(expires: 40)])
        #expect(callee.registrationSchedule == Schedule(granted: 40, policy: .init(preferred: 600, shortest: 10)))
        #expect(actions.startedTimers()[.registrationRefresh] == .seconds(callee.registrationSchedule?.refreshDelay ?? 0))
    }
}
