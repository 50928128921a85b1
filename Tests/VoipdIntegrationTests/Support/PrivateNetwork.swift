import Foundation
import Glibc
import Testing
import VoipdTestSupport

extension PrivateNetwork {
    /// Writes the manifest of an app that runs `command` inside the namespace through
    /// `/bin/sh -c 'exec "$@" REDIRECTIONS'` (a manifest has no descriptors to give it: its
    /// output goes to a file), with `keys` besides, into the apps directory it returns.
    func writeManifest(app: String, command: [String], redirections: String, keys: [String: Any]) throws -> String {
        let apps = directory + "/apps.d"
        mkdir(apps, 0o755)
        var manifest = keys
        manifest["command"] = "/bin/sh"
        manifest["arguments"] = ["-c", "exec \"$@\" \(redirections)", "sh"] + entering(command)
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: apps + "/\(app).json"))
        return apps
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs where Kamailio and baresip (and, with `linphonec`, linphonec) can run in a private
    /// network, and always under CI=true, where their absence fails the test.
    static func softphonesInPrivateNetwork(linphonec: Bool = false) -> Self {
        let binaries = [KamailioServer.binary, Baresip.binary] + (linphonec ? [Linphonec.binary] : [])
        let packages = "kamailio, baresip-core" + (linphonec ? ", linphone-cli" : "")
        return .enabled(if: (PrivateNetwork.isAvailable && binaries.allSatisfy(toolExists)) || runningUnderCI,
                        Comment(rawValue: "needs \(packages); \(PrivateNetwork.skipReason)"))
    }
}
