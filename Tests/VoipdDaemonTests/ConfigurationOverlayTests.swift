import Testing
@testable import VoipdDaemon

@Suite("Command-line flags over the configuration file")
struct ConfigurationOverlayTests {
    @Test("a key the flags set replaces the file's; timings, limits and hibernation are overlaid key by key; the rest is the file's")
    func overlay() {
        var file = ConfigurationFile()
        file.socket = "/run/voipd/file.sock"
        file.logLevel = "info"
        file.timings = ["wakeBudget": 10, "stopGrace": 2]
        file.limits = ["appsPerUser": 5]
        file.hibernation = HibernationFile(dirtyLimitMB: 64, sliceMB: 4)
        file.reclaimQueuedBytes = 1024
        var flags = ConfigurationFile()
        flags.logLevel = "debug"
        flags.timeScale = 0.25
        flags.timings = ["stopGrace": 3]
        flags.limits = ["connectionsPerUser": 7]
        flags.hibernation = HibernationFile(sliceMB: 8)

        var expected = file
        expected.logLevel = "debug"
        expected.timeScale = 0.25
        expected.timings = ["wakeBudget": 10, "stopGrace": 3]
        expected.limits = ["appsPerUser": 5, "connectionsPerUser": 7]
        expected.hibernation = HibernationFile(dirtyLimitMB: 64, sliceMB: 8)
        #expect(file.overlaid(by: flags) == expected)
        #expect(file.overlaid(by: ConfigurationFile()) == file)
        #expect(ConfigurationFile().overlaid(by: flags) == flags)
    }

    @Test("a flag's NaN or infinity comes through the overlay, for resolve to refuse with the key's name")
    func nonFiniteNumbers() {
        var flags = ConfigurationFile()
        flags.timeScale = .infinity
        flags.timings = ["wakeBudget": -.infinity]
        #expect(ConfigurationFile().overlaid(by: flags) == flags)
        flags.timeScale = .nan
        #expect(ConfigurationFile().overlaid(by: flags).timeScale?.isNaN == true)
    }
}
